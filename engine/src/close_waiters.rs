//! Threads blocked in `Engine::wait_until_closed`, by the execution they wait for.
//!
//! Owns a map execution ARN -> its waiters, each waiter with its own flag and condvar, so a
//! close wakes only the threads waiting for that execution (one engine-wide condvar woken with
//! `notify_all` woke every waiter at every close: issue 16).
//!
//! Invariants:
//! - The map holds an entry only while a waiter is registered under it: a waiter removes itself
//!   when it returns (by `Drop`, so an error returns clean too), and the last one out removes
//!   the ARN.
//! - No lost wake-up: a waiter registers *before* it checks the execution's status, and a close
//!   is announced here *after* the status is closed. So a close either is seen by the check or
//!   finds the waiter registered and sets its flag, which the waiter reads under its own lock
//!   before it sleeps.
//!
//! It must not decide what "closed" means: the caller re-checks the status after every wake.

use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

/// One blocked thread: `woken` is set by a close of its execution, cleared by the waiter.
#[derive(Default)]
struct Waiter {
    woken: Mutex<bool>,
    woken_changed: Condvar,
}

/// The waiters of every execution somebody waits on (see the module docs).
#[derive(Default)]
pub(crate) struct CloseWaiters {
    by_execution: Mutex<crate::ArnMap<Vec<Arc<Waiter>>>>,
}

/// A registration; dropping it unregisters the waiter.
pub(crate) struct Registration<'a> {
    waiters: &'a CloseWaiters,
    execution_arn: Arc<str>,
    waiter: Arc<Waiter>,
}

impl CloseWaiters {
    /// Registers the calling thread as a waiter on `execution_arn`. Register first, then check
    /// the status, then `wait`: a close after the registration is never lost.
    pub(crate) fn register(&self, execution_arn: &str) -> Registration<'_> {
        let waiter = Arc::new(Waiter::default());
        let execution_arn: Arc<str> = Arc::from(execution_arn);
        self.by_execution
            .lock()
            .entry(execution_arn.clone())
            .or_default()
            .push(waiter.clone());
        Registration {
            waiters: self,
            execution_arn,
            waiter,
        }
    }

    /// Wakes the waiters of `execution_arn` (none if nobody waits), and no other thread. Call
    /// after the execution's closed status is visible to `Engine::wait_until_closed`'s check.
    pub(crate) fn closed(&self, execution_arn: &str) {
        let by_execution = self.by_execution.lock();
        let Some(waiters) = by_execution.get(execution_arn) else {
            return;
        };
        assert!(!waiters.is_empty(), "an entry without waiters is removed");
        for waiter in waiters {
            *waiter.woken.lock() = true;
            waiter.woken_changed.notify_one();
        }
    }

    /// The number of executions with a registered waiter (for tests: nothing leaks).
    #[cfg(test)]
    pub(crate) fn executions_count(&self) -> usize {
        self.by_execution.lock().len()
    }
}

impl Registration<'_> {
    /// Blocks until a close of this execution since the last `wait` (or since the
    /// registration), returning at once if one happened already.
    pub(crate) fn wait(&self) {
        let mut woken = self.waiter.woken.lock();
        while !*woken {
            self.waiter.woken_changed.wait(&mut woken);
        }
        *woken = false;
    }
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        let mut by_execution = self.waiters.by_execution.lock();
        let waiters = by_execution
            .get_mut(&self.execution_arn)
            .expect("a registered waiter's execution has an entry until it leaves");
        let before_count = waiters.len();
        waiters.retain(|waiter| !Arc::ptr_eq(waiter, &self.waiter));
        assert_eq!(
            waiters.len() + 1,
            before_count,
            "the waiter was registered once"
        );
        if waiters.is_empty() {
            by_execution.remove(&self.execution_arn);
        }
    }
}

#[cfg(test)]
mod tests {
    //! The wake-up protocol alone, with a status flag standing in for the execution's status:
    //! each close wakes its own waiters, a close racing a registration is not lost, and the map
    //! is empty once every waiter has returned.
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Barrier;

    /// `Engine::wait_until_closed`'s loop, over a flag.
    fn wait_for(waiters: &CloseWaiters, arn: &str, closed: &AtomicBool) {
        let registration = waiters.register(arn);
        while !closed.load(Ordering::SeqCst) {
            registration.wait();
        }
    }

    #[test]
    fn each_close_wakes_the_waiters_of_its_own_execution() {
        let waiters = CloseWaiters::default();
        let executions_count = 8;
        let closed: Vec<AtomicBool> = (0..executions_count)
            .map(|_| AtomicBool::new(false))
            .collect();
        let returned: Vec<AtomicBool> = (0..executions_count)
            .map(|_| AtomicBool::new(false))
            .collect();
        let registered = Barrier::new(executions_count * 2 + 1);
        std::thread::scope(|scope| {
            for index in 0..executions_count * 2 {
                let execution_index = index % executions_count;
                let (waiters, closed, returned, registered) =
                    (&waiters, &closed, &returned, &registered);
                scope.spawn(move || {
                    let arn = format!("arn:{execution_index}");
                    let registration = waiters.register(&arn);
                    registered.wait();
                    while !closed[execution_index].load(Ordering::SeqCst) {
                        registration.wait();
                    }
                    returned[execution_index].store(true, Ordering::SeqCst);
                });
            }
            registered.wait();
            assert_eq!(waiters.executions_count(), executions_count);
            for execution_index in 0..executions_count {
                closed[execution_index].store(true, Ordering::SeqCst);
                waiters.closed(&format!("arn:{execution_index}"));
                // Both waiters of this execution leave; those of later ones stay registered.
                while waiters
                    .by_execution
                    .lock()
                    .contains_key(format!("arn:{execution_index}").as_str())
                {
                    std::thread::yield_now();
                }
                assert!(returned[execution_index].load(Ordering::SeqCst));
                for (later_index, later_returned) in
                    returned.iter().enumerate().skip(execution_index + 1)
                {
                    assert!(
                        !later_returned.load(Ordering::SeqCst),
                        "the close of {execution_index} does not release {later_index}"
                    );
                }
                assert_eq!(
                    waiters.executions_count(),
                    executions_count - execution_index - 1
                );
            }
        });
        assert_eq!(waiters.executions_count(), 0);
    }

    #[test]
    fn a_close_racing_a_registration_is_not_lost() {
        let waiters = CloseWaiters::default();
        for round_index in 0..3_000 {
            let closed = AtomicBool::new(false);
            let arn = format!("arn:{round_index}");
            std::thread::scope(|scope| {
                scope.spawn(|| wait_for(&waiters, &arn, &closed));
                // The close lands anywhere around the waiter's registration, check or wait.
                if round_index % 2 == 0 {
                    std::thread::yield_now();
                }
                closed.store(true, Ordering::SeqCst);
                waiters.closed(&arn);
            });
            assert_eq!(waiters.executions_count(), 0, "round {round_index}");
        }
    }

    #[test]
    fn a_close_nobody_waits_for_adds_no_entry() {
        let waiters = CloseWaiters::default();
        waiters.closed("arn:nobody");
        assert_eq!(waiters.executions_count(), 0);
        let registration = waiters.register("arn:one");
        waiters.closed("arn:one");
        // The close came before the wait: the wait returns at once.
        registration.wait();
        drop(registration);
        assert_eq!(waiters.executions_count(), 0);
    }

    /// `Engine::wait_until_closed` of an execution closed already (a Pass chain ends in its
    /// start) describes it at once (without registering a waiter); one still running registers,
    /// is woken by its close, and leaves no entry behind. The description's output text is the event's
    /// rendering: the input's original text where it passed through unchanged, compact text
    /// otherwise.
    #[test]
    fn wait_until_closed_describes_a_closed_execution_and_wakes_on_a_later_close() {
        use crate::{Engine, EngineOptions, ExecutionStatus};
        let options = EngineOptions {
            background_timers: false,
            ..EngineOptions::default()
        };
        let log = Arc::new(statelog_store::MemoryLog::new());
        let engine = Engine::open_with_log(log, options).expect("opens");
        let pass = r#"{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}"#;
        engine
            .create_state_machine("pass", pass, None)
            .expect("machine");
        let input = r#"{ "b": 1,  "a": [2, 3] }"#;
        let started = engine
            .start_execution("pass", Some("through"), input)
            .expect("starts");
        let described = engine
            .wait_until_closed(&started.execution_arn)
            .expect("described");
        assert_eq!(described.status, ExecutionStatus::Succeeded);
        assert_eq!(described.output_text.as_deref(), Some(input));
        assert_eq!(engine.inner.close_waiters.executions_count(), 0);

        let result =
            r#"{"StartAt":"P","States":{"P":{"Type":"Pass","Result":{"x": [1, "y"]},"End":true}}}"#;
        engine
            .create_state_machine("result", result, None)
            .expect("machine");
        let started = engine
            .start_execution("result", Some("changed"), input)
            .expect("starts");
        let described = engine
            .wait_until_closed(&started.execution_arn)
            .expect("described");
        assert_eq!(described.output_text.as_deref(), Some(r#"{"x":[1,"y"]}"#));

        let wait = r#"{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":60,"End":true}}}"#;
        engine
            .create_state_machine("wait", wait, None)
            .expect("machine");
        let started = engine
            .start_execution("wait", Some("waiting"), "{}")
            .expect("starts");
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| engine.wait_until_closed(&started.execution_arn));
            while engine.inner.close_waiters.executions_count() == 0 {
                std::thread::yield_now();
            }
            engine
                .stop_execution(&started.execution_arn, None, None)
                .expect("stops");
            let described = waiter.join().expect("joins").expect("described");
            assert_eq!(described.status, ExecutionStatus::Aborted);
        });
        assert_eq!(engine.inner.close_waiters.executions_count(), 0);
    }
}
