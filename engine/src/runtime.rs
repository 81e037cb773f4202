//! runtime: what the engine does with a durable decision's effects. `start` opens an
//! execution's slot and commits its start; `Engine::perform` routes tasks to their backend and
//! tells every backend when a task is cancelled (both through `Inner.backends`, see `backend`),
//! arms timers through the kernel and wakes close waiters; a handler's answer is kept in its
//! attempt's entry (`attempts::Attempts`) from the poll that finished the call until one thread
//! records it under the slot lock (`Commit::HandlerAnswer`, or a token answer's `Commit::After`).
//! Once a closing decision's effects are performed, the execution's attempt entries go.
//!
//! Must not: commit a decision except through `Engine::commit_decision`; hold any engine-wide
//! lock across an append.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde_json::Value;

use super::backend::AttemptKey;
use super::kernel::{Commit, Slot};
use super::versions::StartTarget;
use super::{Engine, Error, Inner, StartedExecution};
use statelog_core::asl::StateMachine;
use statelog_core::interpreter::{
    Effect, ExecutionState, ExecutionStatus, InputAsWritten, StartRequest, StartedThrough,
    TaskInvocation, Trigger,
};

/// Starts a new execution, or answers for an existing one with the same name (see
/// `Engine::start_execution`).
pub(crate) fn start(
    engine: &Engine,
    target: &StartTarget,
    definition: Arc<StateMachine>,
    execution_arn: String,
    input: Value,
    test_case: Option<&str>,
) -> Result<StartedExecution, Error> {
    let recorded = record_start(
        engine,
        target,
        definition,
        execution_arn,
        input,
        None,
        test_case,
        None,
    )?;
    debug_assert!(!recorded.awaits_log, "a synced start");
    Ok(recorded.finish(engine))
}

/// A start recorded in the log: durable, or (`awaits_log`) appended with `Commit::Notify` and
/// durable once the log calls its `on_durable`. Its effects are performed by
/// [`RecordedStart::finish`] once it is durable.
pub(crate) struct RecordedStart {
    pub(crate) started: StartedExecution,
    /// Whether the caller must wait for the log's word before `finish`.
    pub(crate) awaits_log: bool,
    /// The new execution's slot and the start's effects; `None` for a start that found the same
    /// start made already (nothing to perform).
    performs: Option<(Arc<str>, Arc<Slot>, Vec<Effect>)>,
    /// What backends hand over once the start is durable (a task claimed by a waiting poller in
    /// the start's commit): left by a `Commit::Notify` start, empty after a synced one.
    deliveries: Vec<super::backend::Delivery>,
}

impl RecordedStart {
    /// A start with nothing left to perform (an Express execution ran already).
    pub(crate) fn done(started: StartedExecution) -> Self {
        RecordedStart {
            started,
            awaits_log: false,
            performs: None,
            deliveries: Vec::new(),
        }
    }

    /// Hands over what the start's commit scheduled and performs its effects (the start is
    /// durable), and answers the start.
    pub(crate) fn finish(self, engine: &Engine) -> StartedExecution {
        for delivery in self.deliveries {
            delivery(engine);
        }
        if let Some((key, slot, effects)) = self.performs {
            engine.perform(&key, &slot, effects);
        }
        self.started
    }
}

/// Records a start: synced when `on_durable` is `None`, else appended with `Commit::Notify` and
/// `on_durable` told once it is durable (`RecordedStart::awaits_log`; dropped uncalled when the
/// start was found made already, or on an error).
#[allow(clippy::too_many_arguments)]
pub(crate) fn record_start(
    engine: &Engine,
    target: &StartTarget,
    definition: Arc<StateMachine>,
    execution_arn: String,
    input: Value,
    input_text: Option<InputAsWritten>,
    test_case: Option<&str>,
    mut on_durable: Option<statelog_store::OnDurable>,
) -> Result<RecordedStart, Error> {
    let inner = &engine.inner;
    let key: Arc<str> = Arc::from(execution_arn.as_str());
    // A test case is recorded with the machine's ARN (see `mocks`).
    let recorded_machine_arn = match test_case {
        Some(case) => format!("{}#{case}", engine.state_machine_arn(&target.machine.name)),
        None => engine.state_machine_arn(&target.machine.name),
    };
    loop {
        let existing = {
            let mut open = inner.open.lock();
            match open.get(&key) {
                Some(slot) => Some(slot.clone()),
                None => {
                    if inner.store.execution(&execution_arn).is_some() {
                        return Err(Error::ExecutionAlreadyExists { execution_arn });
                    }
                    let slot = Arc::new(Slot::new(ExecutionState::new(), definition.clone()));
                    // Lock before publishing, so a racing start with the same name waits for
                    // this one to be durable (or gone).
                    let mut guard = slot.state.lock();
                    open.insert(key.clone(), slot.clone());
                    drop(open);
                    // This branch returns: the request takes what the loop holds.
                    let request = StartRequest {
                        input,
                        input_text,
                        execution_arn: execution_arn.clone(),
                        state_machine_arn: recorded_machine_arn,
                        role_arn: target.machine.role_arn.clone(),
                        through: target.version_arn.clone().map(|version_arn| {
                            Box::new(StartedThrough {
                                version_arn,
                                alias_arn: target.alias_arn.clone(),
                            })
                        }),
                        map_run_arn: target.map_run_arn.clone(),
                    };
                    let trigger = Trigger::Start(request);
                    let commit = match on_durable.take() {
                        Some(on_durable) => Commit::Notify {
                            trigger,
                            on_durable,
                        },
                        None => Commit::Trigger(trigger),
                    };
                    let result = engine.commit_decision(&key, &mut guard, commit);
                    let (effects, awaits_log, deliveries) = match result {
                        Ok(committed) => {
                            (committed.effects, committed.notified, committed.deliveries)
                        }
                        Err(error) => {
                            drop(guard);
                            let mut open = inner.open.lock();
                            if open.get(&key).is_some_and(|s| Arc::ptr_eq(s, &slot)) {
                                open.remove(&key);
                            }
                            return Err(error);
                        }
                    };
                    let start_ms = guard.execution.start_ms().unwrap_or_default();
                    drop(guard);
                    return Ok(RecordedStart {
                        started: StartedExecution {
                            execution_arn,
                            start_ms,
                        },
                        awaits_log,
                        performs: Some((key, slot, effects)),
                        deliveries,
                    });
                }
            }
        };
        let Some(slot) = existing else { continue };
        let guard = slot.state.lock();
        let status = guard.execution.status();
        if status == ExecutionStatus::NotStarted {
            // The racing start failed and is removing its slot; try again.
            drop(guard);
            std::thread::yield_now();
            continue;
        }
        // The state may hold a notified decision not durable yet (an answer that closed the
        // execution): what this call answers from it must be durable first.
        inner.store.sync_unsynced()?;
        // The same name with another input, or another test case (or none), is another start.
        if status.is_closed()
            || guard.execution.input() != Some(&input)
            || guard.execution.state_machine_arn() != Some(recorded_machine_arn.as_str())
        {
            return Err(Error::ExecutionAlreadyExists { execution_arn });
        }
        return Ok(RecordedStart {
            started: StartedExecution {
                execution_arn,
                start_ms: guard.execution.start_ms().unwrap_or_default(),
            },
            awaits_log: false,
            performs: None,
            deliveries: Vec::new(),
        });
    }
}

impl Engine {
    /// Performs the effects of a durable decision.
    pub(crate) fn perform(&self, execution_arn: &str, slot: &Arc<Slot>, effects: Vec<Effect>) {
        // Made once, when an effect keeps the ARN (a run that only closes needs none).
        let mut shared: Option<Arc<str>> = None;
        let mut key = || {
            shared
                .get_or_insert_with(|| Arc::from(execution_arn))
                .clone()
        };
        let mut closed = false;
        for effect in effects {
            match effect {
                Effect::InvokeTask(invocation) => self.dispatch(&key(), invocation),
                Effect::ArmTimer {
                    timer_id, due_ms, ..
                } => {
                    self.arm_timer(&key(), timer_id, due_ms);
                }
                // Every backend drops what waits for the attempt (see `backend`): a handler's
                // future is dropped (had it answered already, that answer is a stale trigger),
                // a heartbeat clock stops, an unclaimed task leaves its list, a `.sync` job or
                // child is asked to stop in the background.
                Effect::CancelTask { task_id } => {
                    let attempt = AttemptKey::new(key(), task_id);
                    self.inner.backends.cancel(self, &attempt);
                }
                Effect::Closed { .. } => {
                    self.inner.backends.execution_closed(self, execution_arn);
                    self.compact_timers();
                    closed = true;
                }
            }
        }
        // After every effect: a task handed over (submitted, claimed) is cancelled after the
        // close (its `CancelTask` follows `Closed`), and its backend must still find its part.
        // The slot leaves `open` last, once nothing of this run is left to clean up: until then
        // a redrive waits (it would otherwise start a run whose attempts this cleanup drops),
        // and `wait_until_closed` does not return.
        if closed {
            self.inner.attempts.execution_closed(execution_arn);
            {
                let mut open = self.inner.open.lock();
                if open
                    .get(execution_arn)
                    .is_some_and(|s| Arc::ptr_eq(s, slot))
                {
                    open.remove(execution_arn);
                }
            }
            self.inner.close_waiters.closed(execution_arn);
        }
    }
    /// Routes a task to the first backend that serves it (see `backend::Backends`).
    pub(crate) fn dispatch(&self, execution_arn: &Arc<str>, invocation: TaskInvocation) {
        let attempt = AttemptKey::new(execution_arn.clone(), invocation.task_id);
        let routed = self.inner.backends.dispatch(self, attempt, invocation);
        debug_assert!(
            routed.is_some(),
            "the last routing backend serves every task"
        );
    }

    /// Records the handler answer kept for the attempt, taken under the execution's lock (a
    /// token answer takes it under the same lock, so exactly one of the two records it); the
    /// attempt's handler call is over.
    pub(crate) fn drive_handler_answer(&self, attempt: &AttemptKey) -> Result<(), Error> {
        if let Some(recorded) = self.record_handler_answer(attempt, None)? {
            debug_assert!(!recorded.committed.notified, "a synced answer");
            self.finish_handler_answer(&attempt.execution, recorded);
        }
        Ok(())
    }

    /// [`Engine::drive_handler_answer`] on the runtime, without waiting for the log's sync:
    /// the answer is decided and appended here (`Commit::HandlerAnswer` with a callback), and
    /// a task of the runtime waits for the log's word, then performs the decision's effects
    /// and calls `done`. No hop to the blocking pool and back. `done` is called with the
    /// outcome in every case.
    pub(crate) fn drive_handler_answer_notified(
        &self,
        attempt: &AttemptKey,
        done: impl FnOnce(&Engine, Result<(), Error>) + Send + 'static,
    ) {
        let (on_durable, told) = super::kernel::log_word_channel();
        let recorded = match self.record_handler_answer(attempt, Some(on_durable)) {
            Ok(Some(recorded)) => recorded,
            Ok(None) => return done(self, Ok(())),
            Err(error) => return done(self, Err(error)),
        };
        if !recorded.committed.notified {
            self.finish_handler_answer(&attempt.execution, recorded);
            return done(self, Ok(()));
        }
        let engine = self.clone();
        let execution_arn = attempt.execution.clone();
        drop(self.inner.handle.spawn(async move {
            let result = super::kernel::log_word(told).await;
            if result.is_ok() {
                engine.finish_handler_answer(&execution_arn, recorded);
            }
            done(&engine, result);
        }));
    }

    /// Runs a recorded handler answer's deliveries and performs its effects (it is durable).
    fn finish_handler_answer(&self, execution_arn: &str, recorded: HandlerAnswered) {
        for delivery in recorded.committed.deliveries {
            delivery(self);
        }
        self.perform(execution_arn, &recorded.slot, recorded.committed.effects);
    }

    /// Decides and appends the handler answer kept for the attempt: synced (or unsynced, see
    /// `Commit::HandlerAnswer`) without `on_durable`, else `on_durable` is told once durable
    /// where `Committed::notified` says so. `None` when there is nothing to record.
    fn record_handler_answer(
        &self,
        attempt: &AttemptKey,
        on_durable: Option<statelog_store::OnDurable>,
    ) -> Result<Option<HandlerAnswered>, Error> {
        let (execution_arn, task_id) = (&attempt.execution, attempt.task);
        let slot = self.inner.open.lock().get(execution_arn).cloned();
        let Some(slot) = slot else {
            self.inner.attempts.finish_call(attempt);
            return Ok(None);
        };
        let committed = {
            let mut guard = slot.state.lock();
            let finished = self.inner.attempts.finish_call(attempt);
            let deferred = finished.deferred;
            let Some(outcome) = finished.answer else {
                return Ok(None);
            };
            if guard.execution.status().is_closed() {
                return Ok(None);
            }
            let trigger = super::tokens::handler_trigger(task_id, outcome);
            match deferred {
                // A `.sync` job that ended before its start returned: the start's answer
                // (`TaskSubmitted`), then the job's outcome, in one commit (synced: rare; off
                // the runtime's worker when it runs on one).
                Some(outcome) => {
                    let request = Commit::After {
                        before: trigger,
                        trigger: outcome,
                        task_id,
                    };
                    if on_durable.is_some() {
                        off_the_reactor(|| {
                            self.commit_decision(execution_arn, &mut guard, request)
                        })?
                    } else {
                        self.commit_decision(execution_arn, &mut guard, request)?
                    }
                }
                None => {
                    let request = Commit::HandlerAnswer {
                        trigger,
                        on_durable,
                    };
                    self.commit_decision(execution_arn, &mut guard, request)?
                }
            }
        };
        Ok(Some(HandlerAnswered { slot, committed }))
    }
}

/// A handler answer appended: what is left to do once it is durable.
struct HandlerAnswered {
    slot: Arc<Slot>,
    committed: super::kernel::Committed,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.shutdown.store(true, Ordering::SeqCst);
        self.timer_signal.notify();
        if let Some(runtime) = self.runtime.lock().take() {
            runtime.shutdown_background();
        }
    }
}

/// Runs `f`, which may wait for the log's sync, without stalling a tokio runtime's worker: on
/// a multi-threaded runtime under `block_in_place` (the worker's other tasks, such as a
/// server's connections, move to another thread first); elsewhere (a current-thread runtime,
/// no runtime) inline.
pub(crate) fn off_the_reactor<T>(f: impl FnOnce() -> T) -> T {
    let multi_thread = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if multi_thread {
        tokio::task::block_in_place(f)
    } else {
        f()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::sync::mpsc;

    use parking_lot::Mutex;
    use serde_json::json;

    use super::*;
    use crate::jobs::{Job, JobFuture, JobIntegration, JobStart, JobStatus};
    use crate::test_support::types;
    use crate::EngineOptions;
    use statelog_core::asl::IntegrationPattern;

    const BASE: &str = "arn:aws:states:::batch:submitJob";

    /// What the test sees of its `Gate`: which calls of `patterns` came in, a latch per held
    /// call, and how many jobs were started.
    struct GateSide {
        entered: mpsc::Receiver<usize>,
        release: Vec<mpsc::Sender<()>>,
        starts: Arc<AtomicUsize>,
    }

    /// A `.sync` job integration whose first `HELD` calls of `patterns` each wait for their own
    /// latch, so the test holds a registration and a dispatch exactly where it wants them. Its
    /// `start` answers at once.
    struct Gate {
        calls: AtomicUsize,
        entered: Mutex<mpsc::Sender<usize>>,
        latches: Vec<Mutex<mpsc::Receiver<()>>>,
        starts: Arc<AtomicUsize>,
    }

    const HELD: usize = 2;

    fn gate() -> (Gate, GateSide) {
        let (entered_tx, entered) = mpsc::channel();
        let (release, latches): (Vec<_>, Vec<_>) = (0..HELD)
            .map(|_| {
                let (tx, rx) = mpsc::channel();
                (tx, Mutex::new(rx))
            })
            .unzip();
        let starts = Arc::new(AtomicUsize::new(0));
        let gate = Gate {
            calls: AtomicUsize::new(0),
            entered: Mutex::new(entered_tx),
            latches,
            starts: starts.clone(),
        };
        let side = GateSide {
            entered,
            release,
            starts,
        };
        (gate, side)
    }

    impl JobIntegration for Gate {
        fn patterns(&self) -> Vec<IntegrationPattern> {
            let call = self.calls.fetch_add(1, Ordering::SeqCst);
            if let Some(latch) = self.latches.get(call) {
                self.entered
                    .lock()
                    .send(call + 1)
                    .expect("the test listens");
                latch.lock().recv().expect("the test lets it go");
            }
            vec![IntegrationPattern::Sync]
        }

        fn poll_interval_ms(&self) -> u64 {
            60_000
        }

        fn start(&self, _start: JobStart) -> JobFuture<Value> {
            self.starts.fetch_add(1, Ordering::SeqCst);
            Box::pin(async { Ok(json!({"JobId": "j"})) })
        }

        fn status(&self, _job: Job) -> JobFuture<JobStatus> {
            Box::pin(async { Ok(JobStatus::Running) })
        }

        fn cancel(&self, _job: Job) -> JobFuture<()> {
            Box::pin(async { Ok(()) })
        }
    }

    /// The lost task of `tests/waiting_children_kill.rs` (cycle 62): a dispatch that found no
    /// handler for its task, and a registration of that handler that ran to its end before the
    /// dispatch parked the task. The registration found nothing parked, the task was parked
    /// after it, and no handler call ever came. Here the dispatch is held in its pattern check
    /// (between "no handler" and "park") while the handler's registration completes.
    #[test]
    fn a_task_dispatched_while_its_handler_is_registered_reaches_the_handler() {
        let log = Arc::new(statelog_store::MemoryLog::new());
        let options = EngineOptions {
            background_timers: false,
            ..EngineOptions::default()
        };
        let engine = Engine::open_with_log(log, options).expect("opens");
        let definition = format!(
            r#"{{"StartAt":"Run","States":{{"Run":{{"Type":"Task","Resource":"{BASE}.sync","End":true}}}}}}"#
        );
        engine
            .create_state_machine("m", &definition, None)
            .expect("machine");
        let (gate, side) = gate();
        let registering = {
            let engine = engine.clone();
            std::thread::spawn(move || engine.register_job_integration(BASE, gate))
        };
        // The registration has recorded the integration, not yet registered its handlers.
        assert_eq!(side.entered.recv(), Ok(1));
        let starting = {
            let engine = engine.clone();
            std::thread::spawn(move || engine.start_execution("m", Some("e"), "{}"))
        };
        // The start's dispatch found no handler and asks whether the pattern is declared.
        assert_eq!(side.entered.recv(), Ok(2));
        side.release[0].send(()).expect("held");
        registering.join().expect("the registration ends");
        // The handler is registered now; the dispatch goes on.
        side.release[1].send(()).expect("held");
        let started = starting
            .join()
            .expect("the start ends")
            .expect("the start succeeds");
        engine.wait_idle();
        assert_eq!(
            side.starts.load(Ordering::SeqCst),
            1,
            "the task reached the handler registered while it was dispatched"
        );
        let types = types(&engine, &started.execution_arn);
        assert_eq!(types.last(), Some(&"TaskSubmitted"), "{types:?}");
    }
}
