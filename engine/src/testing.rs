//! testing: an engine for an embedding program's tests, on a manual clock the test moves. A
//! 10-minute `Wait` or a 1-hour heartbeat takes no real time: `advance` moves the clock and
//! fires what falls due on the way, in order; `skip_ahead` jumps straight to the next due
//! timer for as long as every open execution waits on time only.
//!
//! What it owns: a [`ManualClock`], an [`Engine`] on it without the background timer thread
//! (every timer fires inside `advance`/`skip_ahead`, on the test's thread), and the log, so
//! [`TestEngine::restart`] reopens the same history the way a new process would.
//!
//! Invariants: time moves only when the test calls `advance` or `skip_ahead`; `skip_ahead`
//! never moves it while an execution waits on a task (a handler, an activity, a task token):
//! an answer might come first, and jumping past its deadline would change the history. Must
//! not: sleep, or read the wall clock.

use std::sync::Arc;
use std::time::Duration;

use statelog_core::interpreter::{pending_effects, Effect};
use statelog_store::{Log, MemoryLog};

use super::clock::{Clock, ManualClock};
use super::limits::TEST_SKIP_AHEAD_JUMPS_MAX;
use super::{Engine, EngineOptions, Error};

/// Where a [`TestEngine`]'s clock starts: 2024-01-01T00:00:00Z, in ms since the epoch.
pub const TEST_CLOCK_START_MS: u64 = 1_704_067_200_000;

/// The seed a [`TestEngine`] draws retry jitter, names and tokens from unless the options
/// give one, so a test's histories repeat from run to run.
pub const TEST_ENTROPY_SEED: u64 = 0x5eed_57a7_e109;

/// An [`Engine`] for tests, on a [`ManualClock`]. Dereferences to the engine, so every engine
/// call is a call on it.
pub struct TestEngine {
    engine: Engine,
    clock: ManualClock,
    log: Arc<dyn Log>,
    options: EngineOptions,
}

/// Why [`TestEngine::skip_ahead`] stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipStop {
    /// No execution is open.
    NoneOpen,
    /// These executions (ARNs) wait on a task, which only its answer moves on.
    WaitingOnTasks(Vec<String>),
    /// Executions are open but no timer is armed.
    NothingDue,
    /// [`TEST_SKIP_AHEAD_JUMPS_MAX`] jumps were made (a workflow that waits in a loop forever).
    JumpsMax,
}

/// What [`TestEngine::skip_ahead`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The timers and backend deadlines fired.
    pub fired: usize,
    /// Why it stopped.
    pub stop: SkipStop,
}

impl TestEngine {
    /// A test engine over a new in-memory log, with the default options.
    pub fn new() -> Result<TestEngine, Error> {
        TestEngine::with_options(EngineOptions::default())
    }

    /// A test engine over a new in-memory log. The clock and the timer thread of `options` are
    /// replaced (a manual clock at [`TEST_CLOCK_START_MS`], no background timers); without an
    /// `entropy_seed`, [`TEST_ENTROPY_SEED`].
    pub fn with_options(options: EngineOptions) -> Result<TestEngine, Error> {
        TestEngine::with_log(Arc::new(MemoryLog::new()), options)
    }

    /// A test engine over `log` (a WAL the test opened, to look at the files after).
    pub fn with_log(log: Arc<dyn Log>, options: EngineOptions) -> Result<TestEngine, Error> {
        let clock = ManualClock::new(TEST_CLOCK_START_MS);
        let options = EngineOptions {
            clock: Arc::new(clock.clone()),
            background_timers: false,
            entropy_seed: options.entropy_seed.or(Some(TEST_ENTROPY_SEED)),
            ..options
        };
        let engine = Engine::open_with_log(log.clone(), options.clone())?;
        Ok(TestEngine {
            engine,
            clock,
            log,
            options,
        })
    }

    /// Closes the engine and opens a new one over the same log and clock, as a restarted
    /// process would: open executions are recovered from their histories. Drop every clone of
    /// the engine the test holds first (a handler that captured one, say): a clone left alive
    /// would keep the old engine writing to the same log.
    pub fn restart(self) -> Result<TestEngine, Error> {
        let TestEngine {
            engine,
            clock,
            log,
            options,
        } = self;
        engine.wait_idle();
        drop(engine);
        let engine = Engine::open_with_log(log.clone(), options.clone())?;
        Ok(TestEngine {
            engine,
            clock,
            log,
            options,
        })
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The clock the engine runs on.
    pub fn clock(&self) -> &ManualClock {
        &self.clock
    }

    /// The clock's time, in ms since the epoch.
    pub fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// Waits until every handler call and mocked answer in flight is recorded, so the engine
    /// is quiet until the clock moves. (A handler that never returns keeps it waiting: let a
    /// test's own workers answer through activities or task tokens instead.)
    pub fn settle(&self) {
        self.engine.wait_idle();
    }

    /// Moves the clock forward by `by`, stopping at each timer that falls due on the way (in
    /// due order, so what a fired timer arms within the span fires too, at its own time), and
    /// settles after each; returns how many timers and backend deadlines fired.
    pub fn advance(&self, by: Duration) -> usize {
        let by_ms = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
        let target_ms = self.clock.now_ms().saturating_add(by_ms);
        let mut fired = 0;
        loop {
            self.settle();
            match self.engine.next_timer_due_ms() {
                Some(due_ms) if due_ms <= target_ms => {
                    self.move_to(due_ms);
                    fired += self.engine.run_due_timers();
                }
                _ => {
                    self.move_to(target_ms);
                    fired += self.engine.run_due_timers();
                    self.settle();
                    return fired;
                }
            }
        }
    }

    /// Jumps the clock to the next due timer and fires it, again and again, while every open
    /// execution waits on time only; stops when none is open, one waits on a task, or nothing
    /// is armed.
    pub fn skip_ahead(&self) -> Skipped {
        let mut fired = 0;
        for _ in 0..TEST_SKIP_AHEAD_JUMPS_MAX {
            self.settle();
            let waiting = self.waiting_on_tasks();
            let stop = if self.engine.open_execution_count() == 0 {
                Some(SkipStop::NoneOpen)
            } else if !waiting.is_empty() {
                Some(SkipStop::WaitingOnTasks(waiting))
            } else {
                None
            };
            if let Some(stop) = stop {
                return Skipped { fired, stop };
            }
            let Some(due_ms) = self.engine.next_timer_due_ms() else {
                return Skipped {
                    fired,
                    stop: SkipStop::NothingDue,
                };
            };
            self.move_to(due_ms);
            fired += self.engine.run_due_timers();
        }
        Skipped {
            fired,
            stop: SkipStop::JumpsMax,
        }
    }

    /// The open executions that wait on a task (one dispatched and not answered, or a task
    /// token), in ARN order.
    pub fn waiting_on_tasks(&self) -> Vec<String> {
        let slots: Vec<_> = self
            .engine
            .inner
            .open
            .lock()
            .iter()
            .map(|(arn, slot)| (arn.clone(), slot.clone()))
            .collect();
        let mut waiting: Vec<String> = slots
            .into_iter()
            .filter(|(_, slot)| {
                let guard = slot.state.lock();
                !guard.execution.waiting_tokens().is_empty()
                    || pending_effects(&guard.execution)
                        .iter()
                        .any(|effect| matches!(effect, Effect::InvokeTask(_)))
            })
            .map(|(arn, _)| arn.to_string())
            .collect();
        waiting.sort();
        waiting
    }

    /// Sets the clock to `ms` unless it is already past it (time never goes back here).
    fn move_to(&self, ms: u64) {
        if ms > self.clock.now_ms() {
            self.clock.set_ms(ms);
        }
    }
}

impl std::ops::Deref for TestEngine {
    type Target = Engine;

    fn deref(&self) -> &Engine {
        &self.engine
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ExecutionStatus, HistoryQuery};
    use serde_json::Value;

    fn machine(engine: &Engine, name: &str, definition: &str) {
        engine
            .create_state_machine(name, definition, None)
            .expect("machine");
    }

    fn event_types(engine: &Engine, arn: &str) -> Vec<&'static str> {
        engine
            .get_execution_history(arn, &HistoryQuery::default())
            .expect("history")
            .events
            .iter()
            .map(|e| e.details.type_name())
            .collect()
    }

    /// A 10-minute Wait ends when the clock has moved 10 minutes, not before, and `advance`
    /// fires a timer armed by another it fired within the same span.
    #[test]
    fn advance_fires_what_falls_due_in_order() {
        let test = TestEngine::new().expect("opens");
        machine(
            &test,
            "waits",
            r#"{"StartAt":"A","States":{
                "A":{"Type":"Wait","Seconds":600,"Next":"B"},
                "B":{"Type":"Wait","Seconds":60,"End":true}}}"#,
        );
        let arn = test
            .start_execution("waits", Some("e"), "{}")
            .expect("starts")
            .execution_arn;
        assert_eq!(test.advance(Duration::from_secs(599)), 0);
        assert_eq!(
            test.describe_execution(&arn).expect("describes").status,
            ExecutionStatus::Running
        );
        // 600 s fires A; B's 60 s ends at 660 s, within the span.
        assert_eq!(test.advance(Duration::from_secs(61)), 2);
        let done = test.describe_execution(&arn).expect("describes");
        assert_eq!(done.status, ExecutionStatus::Succeeded);
        assert_eq!(
            done.stop_ms,
            Some(TEST_CLOCK_START_MS + 660_000),
            "each timer fired at its own time"
        );
    }

    /// `skip_ahead` runs a workflow of waits to its end at once, and stops without moving the
    /// clock while an execution waits on a task.
    #[test]
    fn skip_ahead_jumps_only_while_everything_waits_on_time() {
        let test = TestEngine::new().expect("opens");
        machine(
            &test,
            "day",
            r#"{"StartAt":"A","States":{"A":{"Type":"Wait","Seconds":86400,"End":true}}}"#,
        );
        let arn = test
            .start_execution("day", Some("e"), "{}")
            .expect("starts")
            .execution_arn;
        let skipped = test.skip_ahead();
        assert_eq!(skipped.fired, 1);
        assert_eq!(skipped.stop, SkipStop::NoneOpen);
        assert_eq!(test.now_ms(), TEST_CLOCK_START_MS + 86_400_000);
        assert_eq!(event_types(&test, &arn).last(), Some(&"ExecutionSucceeded"));

        // A Task with nobody answering (no handler: parked) beside a Wait.
        machine(
            &test,
            "task",
            r#"{"StartAt":"P","States":{"P":{"Type":"Parallel","End":true,"Branches":[
                {"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":60,"End":true}}},
                {"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:000000000000:function:f","End":true}}}
            ]}}}"#,
        );
        let before = test.now_ms();
        let arn = test
            .start_execution("task", Some("t"), "{}")
            .expect("starts")
            .execution_arn;
        let skipped = test.skip_ahead();
        assert_eq!(skipped.stop, SkipStop::WaitingOnTasks(vec![arn.clone()]));
        assert_eq!(skipped.fired, 0);
        assert_eq!(test.now_ms(), before, "the clock did not move");
        test.register_integration(
            "arn:aws:lambda:us-east-1:000000000000:function:f",
            |_input: Value, _context: Value| async { Ok::<_, crate::TaskError>(Value::Null) },
        );
        let skipped = test.skip_ahead();
        assert_eq!(skipped.stop, SkipStop::NoneOpen);
        assert_eq!(skipped.fired, 1);
        assert_eq!(
            test.describe_execution(&arn).expect("describes").status,
            ExecutionStatus::Succeeded
        );
    }

    /// A restart recovers the open execution on the same clock; its timer still fires.
    #[test]
    fn a_restart_keeps_the_log_and_the_clock() {
        let test = TestEngine::new().expect("opens");
        machine(
            &test,
            "w",
            r#"{"StartAt":"A","States":{"A":{"Type":"Wait","Seconds":3600,"End":true}}}"#,
        );
        let arn = test
            .start_execution("w", Some("e"), "{}")
            .expect("starts")
            .execution_arn;
        test.advance(Duration::from_secs(1800));
        let test = test.restart().expect("reopens");
        assert_eq!(test.now_ms(), TEST_CLOCK_START_MS + 1_800_000);
        assert_eq!(test.advance(Duration::from_secs(1800)), 1);
        assert_eq!(
            test.describe_execution(&arn).expect("describes").status,
            ExecutionStatus::Succeeded
        );
    }
}
