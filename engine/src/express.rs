//! express: Express executions (a state machine of `type: EXPRESS`). Each runs in memory on the
//! pure interpreter (`decide`, adopting `Decision::next_state`) with the engine's clock and
//! entropy: no event is encoded, nothing is appended, nothing is synced, the store's index
//! never hears of it. Task states call the registered handlers (request/response only: the
//! definition's check refuses `.sync`, `.waitForTaskToken` and activities); Wait states, retry
//! backoffs and timeouts are deadlines on the kernel's timer thread (`ExpressTimers`, a task
//! backend that serves no task). An execution is open for at most
//! `limits::EXPRESS_EXECUTION_MS_MAX` (AWS: 5 minutes), then it times out.
//!
//! What is kept: only the running executions (at most `limits::EXPRESS_RUNNING_MAX`) and their
//! timers. A closed one is handed to whoever waits for it ([`ExpressExecution::outcome`]) and
//! forgotten: as on AWS there is no history to read, no description, no listing. A crash or a
//! close of the engine loses the running ones (AWS's semantics: an asynchronous Express
//! execution is at-least-once, its starter starts it again; a synchronous one at-most-once).
//!
//! Invariants: an Express execution writes nothing to the log (`express_tests` checks the log's
//! records do not move); triggers of one execution are serialized by its lock, from `decide` to
//! adopting its state; every collection here is bounded by a named limit.
//! Must not: append, sync, or read wall time; keep a closed execution.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;
use statelog_core::asl::{Diagnostic, DiagnosticCode};
use statelog_core::asl::{IntegrationPattern, StateKind, StateMachine, StateMap};
use statelog_core::history::EventId;
use statelog_core::interpreter::{
    decide, decide_owned, Effect, ExecutionState, InputAsWritten, StartRequest, TaskInvocation,
    Trigger,
};
use statelog_store::{ExecutionStatus, Machine};

use super::backend::{AttemptKey, TaskBackend};
use super::handlers::{answer_of, with_attempt_id};
use super::limits::{
    EXPRESS_BILLED_DURATION_MS_STEP, EXPRESS_BILLED_MEMORY_MB, EXPRESS_RUNNING_MAX,
    TIMERS_PER_EXECUTION_TYPICAL, TIMER_HEAP_COMPACT_LEN_MIN,
};
use super::{Engine, Error};

/// How an Express execution ended, as `StartSyncExecution` answers it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpressOutcome {
    /// `arn:aws:states:<region>:<account>:express:<machine>:<name>:<id>`.
    pub execution_arn: String,
    /// Its state machine's ARN.
    pub state_machine_arn: String,
    /// Its name.
    pub name: String,
    /// `Succeeded`, `Failed` or `TimedOut`.
    pub status: ExecutionStatus,
    /// When it started, ms since the epoch.
    pub start_ms: u64,
    /// When it ended, ms since the epoch.
    pub stop_ms: u64,
    /// Its input as the caller sent it.
    pub input_text: String,
    /// Its output as compact JSON text, once succeeded.
    pub output_text: Option<String>,
    /// The error it failed or timed out with.
    pub error: Option<String>,
    /// The cause it failed or timed out with.
    pub cause: Option<String>,
    /// `billingDetails.billedDurationInMilliseconds`: its duration rounded up to the next
    /// `limits::EXPRESS_BILLED_DURATION_MS_STEP`, as AWS bills it.
    pub billed_duration_ms: u64,
    /// `billingDetails.billedMemoryUsedInMB`: AWS's smallest bill (statelog does not meter).
    pub billed_memory_mb: u64,
}

/// A started Express execution: its ARN, and its outcome once it ends.
#[derive(Debug)]
pub struct ExpressExecution {
    /// The execution's ARN.
    pub execution_arn: String,
    /// When it started, ms since the epoch.
    pub start_ms: u64,
    outcome: tokio::sync::oneshot::Receiver<ExpressOutcome>,
}

impl ExpressExecution {
    /// Waits for the execution to end (at most `limits::EXPRESS_EXECUTION_MS_MAX` of the
    /// engine's clock). `Interrupted` when the engine closed first (a closed engine loses its
    /// running Express executions).
    pub async fn outcome(self) -> Result<ExpressOutcome, Error> {
        self.outcome.await.map_err(|_| Error::Interrupted)
    }

    /// [`ExpressExecution::outcome`], blocking the calling thread. On a thread of a tokio
    /// runtime (where tokio refuses a blocking receive) it waits on a thread of its own.
    pub fn wait(self) -> Result<ExpressOutcome, Error> {
        let receiver = self.outcome;
        if tokio::runtime::Handle::try_current().is_err() {
            return receiver.blocking_recv().map_err(|_| Error::Interrupted);
        }
        std::thread::scope(|scope| {
            let waiting = scope.spawn(move || receiver.blocking_recv());
            // The receive cannot panic; a panic there would be a bug of tokio's.
            waiting.join().expect("a blocking receive does not panic")
        })
        .map_err(|_| Error::Interrupted)
    }
}

/// The running Express executions of an engine, and their timers.
#[derive(Default)]
pub(crate) struct ExpressRuns {
    running: Mutex<crate::ArnMap<Arc<Run>>>,
    timers: Mutex<BinaryHeap<Reverse<ExpressTimer>>>,
}

/// An armed timer of an Express execution, ordered by due time.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct ExpressTimer {
    due_ms: u64,
    execution_arn: Arc<str>,
    timer_id: EventId,
}

/// One running Express execution, behind the lock that serializes its triggers.
struct Run {
    arn: Arc<str>,
    state: Mutex<RunState>,
}

struct RunState {
    execution: ExecutionState,
    definition: Arc<StateMachine>,
    input_text: String,
    name: String,
    /// The handler calls in flight, by task, to abort when the task no longer matters.
    calls: HashMap<EventId, tokio::task::AbortHandle>,
    /// Told the outcome once it ends; `None` for an asynchronous start nobody waits for.
    waiter: Option<tokio::sync::oneshot::Sender<ExpressOutcome>>,
}

/// The Express rules AWS checks on a definition: no `.sync` or `.waitForTaskToken`
/// integration and no activity, anywhere (branches and item processors included). Each
/// problem is a diagnostic at the offending `Resource`, with AWS's words.
pub(crate) fn check_definition(definition: &StateMachine) -> Result<(), Error> {
    let diagnostics = diagnostics(definition);
    if diagnostics.is_empty() {
        Ok(())
    } else {
        Err(Error::InvalidDefinition { diagnostics })
    }
}

/// What [`check_definition`] refuses, as diagnostics (empty: an EXPRESS machine may run it).
pub(crate) fn diagnostics(definition: &StateMachine) -> Vec<Diagnostic> {
    let mut diagnostics = Vec::new();
    check_states(&definition.states, "", &mut diagnostics);
    diagnostics
}

/// The Express rules on the item processors of Distributed Maps with EXPRESS children, in a
/// machine of either type (AWS's validation): each problem at the offending `Resource`.
pub(crate) fn check_express_children(definition: &StateMachine) -> Result<(), Error> {
    let mut diagnostics = Vec::new();
    express_children(&definition.states, "", &mut diagnostics);
    if diagnostics.is_empty() {
        Ok(())
    } else {
        Err(Error::InvalidDefinition { diagnostics })
    }
}

fn express_children(states: &StateMap, pointer: &str, found: &mut Vec<Diagnostic>) {
    for state in states {
        let here = format!("{pointer}/States/{}", state.name);
        match &state.kind {
            StateKind::Parallel(parallel) => {
                for (index, branch) in parallel.branches.iter().enumerate() {
                    express_children(&branch.states, &format!("{here}/Branches/{index}"), found);
                }
            }
            StateKind::Map(map) => {
                let processor = format!("{here}/ItemProcessor");
                let express = map.distributed.as_ref().is_some_and(|d| {
                    d.execution_type == statelog_core::asl::ChildExecutionType::Express
                });
                if express {
                    check_states(&map.item_processor.states, &processor, found);
                } else {
                    express_children(&map.item_processor.states, &processor, found);
                }
            }
            _ => {}
        }
    }
}

fn check_states(states: &StateMap, pointer: &str, found: &mut Vec<Diagnostic>) {
    for state in states {
        let here = format!("{pointer}/States/{}", state.name);
        match &state.kind {
            StateKind::Task(task) => {
                let resource = &task.resource;
                let message = if resource.is_activity() {
                    Some("Express state machine does not support Activity ARN")
                } else {
                    match resource.pattern() {
                        IntegrationPattern::Sync | IntegrationPattern::Sync2 => Some(
                            "Express state machine does not support '.sync' service integration",
                        ),
                        // AWS's message has two spaces before "at" for this one.
                        IntegrationPattern::WaitForTaskToken => Some(
                            "Express state machine does not support '.waitForTaskToken' service \
                             integration ",
                        ),
                        IntegrationPattern::RequestResponse => None,
                    }
                };
                if let Some(message) = message {
                    found.push(Diagnostic::error(
                        format!("{here}/Resource"),
                        DiagnosticCode::SchemaValidationFailed,
                        message,
                    ));
                }
            }
            StateKind::Parallel(parallel) => {
                for (index, branch) in parallel.branches.iter().enumerate() {
                    check_states(&branch.states, &format!("{here}/Branches/{index}"), found);
                }
            }
            StateKind::Map(map) => {
                check_states(
                    &map.item_processor.states,
                    &format!("{here}/ItemProcessor"),
                    found,
                );
            }
            _ => {}
        }
    }
}

/// Starts an Express execution of `machine` and runs its first decision here. With `waiter`
/// the outcome is sent there when it ends.
#[allow(clippy::too_many_arguments)]
pub(crate) fn start(
    engine: &Engine,
    machine: &Machine,
    definition: Arc<StateMachine>,
    name: String,
    input: Value,
    input_text: &str,
    input_kept: Option<InputAsWritten>,
    waited: bool,
) -> Result<ExpressExecution, Error> {
    let inner = &engine.inner;
    let id = super::naming::random_name(&inner.entropy)?;
    let arn = format!(
        "arn:aws:states:{}:{}:express:{}:{name}:{id}",
        inner.options.region, inner.options.account, machine.name
    );
    let key: Arc<str> = Arc::from(arn.as_str());
    let (sender, receiver) = tokio::sync::oneshot::channel();
    let run = Arc::new(Run {
        arn: key.clone(),
        state: Mutex::new(RunState {
            execution: ExecutionState::new(),
            definition,
            input_text: input_text.to_string(),
            name,
            calls: HashMap::new(),
            waiter: waited.then_some(sender),
        }),
    });
    let mut guard = run.state.lock();
    {
        let mut running = inner.express.running.lock();
        if running.len() >= EXPRESS_RUNNING_MAX {
            return Err(Error::ExecutionLimitExceeded {
                running: running.len(),
            });
        }
        running.insert(key.clone(), run.clone());
    }
    let request = StartRequest {
        input,
        input_text: input_kept,
        execution_arn: arn.clone(),
        state_machine_arn: engine.state_machine_arn(&machine.name),
        role_arn: machine.role_arn.clone(),
        // An Express execution keeps no history to name a version in.
        through: None,
        map_run_arn: None,
    };
    let now_ms = inner.options.clock.now_ms();
    let mut draws = inner.entropy.draws();
    let decided = decide_owned(
        &guard.definition,
        ExecutionState::new(),
        Trigger::Start(request),
        now_ms,
        &inner.express_options,
        &mut draws,
    );
    let decision = match decided
        .map_err(Error::from)
        .and_then(|d| draws.finish().map(|()| d))
    {
        Ok(decision) => decision,
        Err(error) => {
            inner.express.running.lock().remove(&key);
            return Err(error);
        }
    };
    guard.execution = decision.next_state;
    let start_ms = guard.execution.start_ms().unwrap_or(now_ms);
    perform(engine, &run, &mut guard, decision.effects);
    drop(guard);
    Ok(ExpressExecution {
        execution_arn: arn,
        start_ms,
        outcome: receiver,
    })
}

/// Decides `trigger` on the execution (if it still runs) and performs the effects.
fn drive(engine: &Engine, execution_arn: &str, trigger: Trigger) {
    let Some(run) = engine
        .inner
        .express
        .running
        .lock()
        .get(execution_arn)
        .cloned()
    else {
        return;
    };
    let mut guard = run.state.lock();
    if guard.execution.status().is_closed() {
        return;
    }
    let inner = &engine.inner;
    let now_ms = inner.options.clock.now_ms();
    let mut draws = inner.entropy.draws();
    let decided = decide(
        &guard.definition,
        &guard.execution,
        trigger,
        now_ms,
        &inner.express_options,
        &mut draws,
    );
    match decided
        .map_err(Error::from)
        .and_then(|d| draws.finish().map(|()| d))
    {
        Ok(decision) => {
            guard.execution = decision.next_state;
            perform(engine, &run, &mut guard, decision.effects);
        }
        // A bug or a failed draw: nothing is durable to fall back on, so the execution ends
        // (its waiter hears `States.Runtime`) and the failure is kept for the embedder.
        Err(error) => {
            inner
                .background_errors
                .lock()
                .push(format!("express execution {execution_arn}: {error}"));
            let failure = RuntimeFailure {
                cause: error.to_string(),
                now_ms,
            };
            close(engine, &run, &mut guard, Some(failure));
        }
    }
}

/// Why an execution ended outside the interpreter.
struct RuntimeFailure {
    cause: String,
    now_ms: u64,
}

fn perform(engine: &Engine, run: &Arc<Run>, state: &mut RunState, effects: Vec<Effect>) {
    for effect in effects {
        match effect {
            Effect::InvokeTask(invocation) => call(engine, run, state, invocation),
            Effect::ArmTimer {
                timer_id, due_ms, ..
            } => arm(engine, &run.arn, timer_id, due_ms),
            Effect::CancelTask { task_id } => {
                if let Some(call) = state.calls.remove(&task_id) {
                    call.abort();
                }
            }
            Effect::Closed { .. } => close(engine, run, state, None),
        }
    }
}

/// Calls the task's handler on the engine's runtime; its answer drives the execution. A
/// resource with no handler fails the task at once (an Express execution does not wait for a
/// registration: it has five minutes).
fn call(engine: &Engine, run: &Arc<Run>, state: &mut RunState, invocation: TaskInvocation) {
    let task_id = invocation.task_id;
    let Some(handler) = engine.inner.handlers.get(&invocation.resource) else {
        let trigger = Trigger::TaskFailed {
            task_id,
            error: "States.TaskFailed".to_string(),
            cause: format!(
                "no handler is registered for the resource '{}'",
                invocation.resource
            ),
        };
        // Answered on the runtime: this thread holds the execution's lock.
        let weak = Arc::downgrade(&engine.inner);
        let arn = run.arn.clone();
        drop(engine.inner.handle.spawn(async move {
            if let Some(inner) = weak.upgrade() {
                drive(&Engine { inner }, &arn, trigger);
            }
        }));
        return;
    };
    let context = with_attempt_id(invocation.context, &run.arn, task_id);
    let call = handler.call(invocation.input, context);
    let weak = Arc::downgrade(&engine.inner);
    let arn = run.arn.clone();
    let running = engine.inner.handle.spawn(async move {
        let outcome = answer_of(call).await;
        let Some(inner) = weak.upgrade() else { return };
        let engine = Engine { inner };
        let trigger = super::tokens::handler_trigger(task_id, outcome);
        // Not under the map's lock: `close` takes it under the execution's.
        let run = engine.inner.express.running.lock().get(&arn).cloned();
        if let Some(run) = run {
            run.state.lock().calls.remove(&task_id);
        }
        drive(&engine, &arn, trigger);
    });
    state.calls.insert(task_id, running.abort_handle());
}

fn arm(engine: &Engine, execution_arn: &Arc<str>, timer_id: EventId, due_ms: u64) {
    engine
        .inner
        .express
        .timers
        .lock()
        .push(Reverse(ExpressTimer {
            due_ms,
            execution_arn: execution_arn.clone(),
            timer_id,
        }));
    engine.inner.timer_signal.notify();
}

/// Ends the execution: forgets it, stops its handler calls, tells its waiter.
fn close(engine: &Engine, run: &Arc<Run>, state: &mut RunState, failure: Option<RuntimeFailure>) {
    let express = &engine.inner.express;
    let running_count = {
        let mut running = express.running.lock();
        running.remove(&run.arn);
        running.len()
    };
    for (_, call) in state.calls.drain() {
        call.abort();
    }
    compact_timers(express, running_count);
    let Some(waiter) = state.waiter.take() else {
        return;
    };
    let execution = &state.execution;
    let start_ms = execution.start_ms().unwrap_or_default();
    let (status, stop_ms, error, cause) = match failure {
        Some(failure) => (
            ExecutionStatus::Failed,
            failure.now_ms,
            Some("States.Runtime".to_string()),
            Some(failure.cause),
        ),
        None => {
            let failure = execution.failure();
            (
                store_status(execution.status()),
                execution.close_ms().unwrap_or(start_ms),
                failure.and_then(|f| f.error.clone()),
                failure.and_then(|f| f.cause.clone()),
            )
        }
    };
    let output_text = execution
        .output()
        .and_then(|output| serde_json::to_string(output).ok());
    let duration_ms = stop_ms.saturating_sub(start_ms);
    let steps = duration_ms.div_ceil(EXPRESS_BILLED_DURATION_MS_STEP).max(1);
    let outcome = ExpressOutcome {
        execution_arn: run.arn.to_string(),
        state_machine_arn: execution
            .state_machine_arn()
            .unwrap_or_default()
            .to_string(),
        name: state.name.clone(),
        status,
        start_ms,
        stop_ms,
        input_text: std::mem::take(&mut state.input_text),
        output_text,
        error,
        cause,
        billed_duration_ms: steps * EXPRESS_BILLED_DURATION_MS_STEP,
        billed_memory_mb: EXPRESS_BILLED_MEMORY_MB,
    };
    // A waiter that went away (its caller hung up) needs nothing.
    let _ = waiter.send(outcome);
}

/// The interpreter's status as the store names it (the API's).
fn store_status(status: statelog_core::interpreter::ExecutionStatus) -> ExecutionStatus {
    use statelog_core::interpreter::ExecutionStatus as Folded;
    match status {
        Folded::Succeeded => ExecutionStatus::Succeeded,
        Folded::Failed => ExecutionStatus::Failed,
        Folded::TimedOut => ExecutionStatus::TimedOut,
        Folded::Aborted => ExecutionStatus::Aborted,
        Folded::NotStarted | Folded::Running => ExecutionStatus::Running,
    }
}

/// Drops the timers of ended executions once they are most of the heap (amortized O(1) per
/// close), so a Wait that outlived its execution does not stay in memory until it is due.
fn compact_timers(express: &ExpressRuns, running_count: usize) {
    let mut timers = express.timers.lock();
    if timers.len() < TIMER_HEAP_COMPACT_LEN_MIN
        || timers.len() < 2 * (running_count + 1) * TIMERS_PER_EXECUTION_TYPICAL
    {
        return;
    }
    let running = express.running.lock();
    timers.retain(|t| running.contains_key(&t.0.execution_arn));
}

/// Express timers on the kernel's timer thread: a backend that serves no task, whose deadlines
/// are the running Express executions' timers.
pub(crate) struct ExpressTimers;

impl TaskBackend for ExpressTimers {
    fn name(&self) -> &'static str {
        "express timers"
    }

    fn cancel(&self, _engine: &Engine, _attempt: &AttemptKey) {}

    fn next_due_ms(&self, engine: &Engine) -> Option<u64> {
        engine
            .inner
            .express
            .timers
            .lock()
            .peek()
            .map(|t| t.0.due_ms)
    }

    fn run_due(&self, engine: &Engine, now_ms: u64) -> usize {
        let mut due = Vec::new();
        {
            let mut timers = engine.inner.express.timers.lock();
            while timers.peek().is_some_and(|t| t.0.due_ms <= now_ms) {
                if let Some(Reverse(timer)) = timers.pop() {
                    due.push(timer);
                }
            }
        }
        let fired = due.len();
        for timer in due {
            let trigger = Trigger::TimerFired {
                timer_id: timer.timer_id,
            };
            drive(engine, &timer.execution_arn, trigger);
        }
        fired
    }
}

impl Engine {
    /// How many Express executions are running.
    pub fn express_running_count(&self) -> usize {
        self.inner.express.running.lock().len()
    }
}

#[cfg(test)]
mod express_tests {
    //! Express executions end to end through the engine API: each kind of state, the 5-minute
    //! limit on a manual clock, the definition checks, and the invariant that none of it
    //! writes to the log.
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde_json::json;

    use super::*;
    use crate::clock::ManualClock;
    use crate::limits::EXPRESS_EXECUTION_MS_MAX;
    use crate::test_support::records;
    use crate::{EngineOptions, MachineType, TaskError};

    const NOW_MS: u64 = 1_704_067_200_000;

    fn engine(clock: &ManualClock) -> Engine {
        let log = Arc::new(statelog_store::MemoryLog::new());
        let options = EngineOptions {
            background_timers: false,
            clock: Arc::new(clock.clone()),
            ..EngineOptions::default()
        };
        Engine::open_with_log(log, options).expect("opens")
    }

    fn express(engine: &Engine, name: &str, definition: &str) {
        engine
            .create_state_machine_of_type(name, definition, None, MachineType::Express, &[])
            .expect("an Express machine");
    }

    const PASS_CHOICE: &str = r#"{"StartAt":"P","States":{
        "P":{"Type":"Pass","Result":{"n":2},"ResultPath":"$.r","Next":"C"},
        "C":{"Type":"Choice","Choices":[{"Variable":"$.r.n","NumericEquals":2,"Next":"Ok"}],"Default":"No"},
        "Ok":{"Type":"Pass","OutputPath":"$.r","End":true},
        "No":{"Type":"Fail","Error":"Wrong","Cause":"n is not 2"}}}"#;

    /// A Pass/Choice execution succeeds with its output, and the log holds exactly the
    /// machine's record before and after: an Express execution writes nothing.
    #[test]
    fn a_pass_and_choice_execution_succeeds_and_writes_nothing_to_the_log() {
        let clock = ManualClock::new(NOW_MS);
        let engine = engine(&clock);
        express(&engine, "quick", PASS_CHOICE);
        let before = records(&engine);
        let outcome = engine
            .start_sync_execution("quick", Some("first"), r#"{"a": 1}"#)
            .expect("runs");
        assert_eq!(outcome.status, ExecutionStatus::Succeeded);
        assert_eq!(outcome.output_text.as_deref(), Some(r#"{"n":2}"#));
        assert_eq!(outcome.input_text, r#"{"a": 1}"#);
        assert_eq!(outcome.name, "first");
        assert_eq!((outcome.error, outcome.cause), (None, None));
        assert!(outcome
            .execution_arn
            .starts_with("arn:aws:states:us-east-1:000000000000:express:quick:first:"));
        assert_eq!(
            outcome.state_machine_arn,
            "arn:aws:states:us-east-1:000000000000:stateMachine:quick"
        );
        assert_eq!((outcome.start_ms, outcome.stop_ms), (NOW_MS, NOW_MS));
        assert_eq!(outcome.billed_duration_ms, EXPRESS_BILLED_DURATION_MS_STEP);
        assert_eq!(outcome.billed_memory_mb, EXPRESS_BILLED_MEMORY_MB);
        // Asynchronous starts of the same name are distinct executions (at-least-once).
        let first = engine
            .start_execution("quick", Some("again"), "{}")
            .expect("starts");
        let second = engine
            .start_execution("quick", Some("again"), "{}")
            .expect("starts");
        assert_ne!(first.execution_arn, second.execution_arn);
        assert_eq!(records(&engine), before, "nothing was appended");
        assert_eq!(engine.express_running_count(), 0, "nothing is kept");
        assert_eq!(engine.open_execution_count(), 0);
    }

    /// A Fail state ends it `Failed` with its error and cause; the API has no description, no
    /// history and no listing of it, as AWS answers.
    #[test]
    fn a_failed_execution_answers_its_error_and_leaves_nothing_to_describe() {
        let clock = ManualClock::new(NOW_MS);
        let engine = engine(&clock);
        express(
            &engine,
            "quick",
            PASS_CHOICE.replace("\"n\":2", "\"n\":3").as_str(),
        );
        let outcome = engine
            .start_sync_execution("quick", None, "{}")
            .expect("runs");
        assert_eq!(outcome.status, ExecutionStatus::Failed);
        assert_eq!(outcome.error.as_deref(), Some("Wrong"));
        assert_eq!(outcome.cause.as_deref(), Some("n is not 2"));
        assert_eq!(outcome.output_text, None);
        let arn = outcome.execution_arn.as_str();
        for error in [
            engine
                .describe_execution(arn)
                .map(|_| ())
                .expect_err("no description"),
            engine
                .get_execution_history(arn, &crate::HistoryQuery::default())
                .map(|_| ())
                .expect_err("no history"),
            engine
                .stop_execution(arn, None, None)
                .map(|_| ())
                .expect_err("no stop"),
        ] {
            assert_eq!(error.aws_name(), "InvalidArn");
            assert!(
                error
                    .to_string()
                    .ends_with("Resource type not valid in this context: express"),
                "{error}"
            );
        }
        let listing = crate::ListExecutions {
            state_machine: Some("quick".to_string()),
            ..crate::ListExecutions::default()
        };
        let refused = engine.list_executions(&listing).expect_err("refused");
        assert_eq!(refused.aws_name(), "StateMachineTypeNotSupported");
    }

    /// A Task calls its registered handler (the context carries the Express ARN), a Retry and
    /// a Catch work as in STANDARD, and a resource with no handler fails the task at once.
    #[test]
    fn tasks_call_their_handlers_and_an_unhandled_resource_fails_the_task() {
        let clock = ManualClock::new(NOW_MS);
        let engine = engine(&clock);
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = calls.clone();
        engine.register_integration("arn:aws:lambda:us-east-1:000000000000:function:double", {
            move |input: Value, context: Value| {
                let n = counted.fetch_add(1, Ordering::SeqCst);
                async move {
                    let id = context["Execution"]["Id"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    if n == 0 {
                        return Err(TaskError::new("Flaky", "first call fails"));
                    }
                    Ok(json!({"x": input["x"].as_i64().unwrap_or(0) * 2, "id": id}))
                }
            }
        });
        let definition = r#"{"StartAt":"T","States":{
            "T":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:000000000000:function:double",
                 "Retry":[{"ErrorEquals":["Flaky"],"IntervalSeconds":1,"MaxAttempts":2}],"Next":"U"},
            "U":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:000000000000:function:missing",
                 "Catch":[{"ErrorEquals":["States.TaskFailed"],"ResultPath":"$.caught","Next":"Done"}],"End":true},
            "Done":{"Type":"Succeed"}}}"#;
        express(&engine, "tasks", definition);
        let before = records(&engine);
        let started = engine
            .start_express_execution("tasks", None, r#"{"x": 21}"#)
            .expect("starts");
        // The retry's backoff is a timer of the manual clock (before the execution's own
        // 5-minute timer): moved to it and fired once it is armed.
        let handle = std::thread::spawn(move || started.wait());
        while !handle.is_finished() {
            let due = engine
                .next_timer_due_ms()
                .filter(|&due| due < NOW_MS + 60_000);
            if let Some(due) = due {
                clock.set_ms(due);
                engine.run_due_timers();
            }
            std::thread::yield_now();
        }
        let outcome = handle.join().expect("joins").expect("ends");
        assert_eq!(outcome.status, ExecutionStatus::Succeeded, "{outcome:?}");
        let output: Value =
            serde_json::from_str(outcome.output_text.as_deref().expect("output")).expect("json");
        assert_eq!(output["x"], 42);
        assert_eq!(output["id"], json!(outcome.execution_arn));
        assert_eq!(output["caught"]["Error"], "States.TaskFailed");
        assert_eq!(calls.load(Ordering::SeqCst), 2, "called again by the Retry");
        assert_eq!(records(&engine), before);
    }

    /// A Wait runs on the engine's timers (manual clock); an execution still open after 5
    /// minutes times out with `States.Timeout`.
    #[test]
    fn a_wait_fires_on_the_manual_clock_and_five_minutes_time_an_execution_out() {
        let clock = ManualClock::new(NOW_MS);
        let engine = engine(&clock);
        let wait = |seconds: u64| {
            format!(
                r#"{{"StartAt":"W","States":{{"W":{{"Type":"Wait","Seconds":{seconds},"End":true}}}}}}"#
            )
        };
        express(&engine, "nap", &wait(60));
        express(&engine, "sleep", &wait(600));
        let nap = engine
            .start_express_execution("nap", None, "{}")
            .expect("starts");
        let sleep = engine
            .start_express_execution("sleep", None, "{}")
            .expect("starts");
        assert_eq!(engine.express_running_count(), 2);
        assert_eq!(engine.next_timer_due_ms(), Some(NOW_MS + 60_000));
        clock.advance_ms(60_000);
        assert_eq!(engine.run_due_timers(), 1);
        let napped = nap.wait().expect("ends");
        assert_eq!(napped.status, ExecutionStatus::Succeeded);
        assert_eq!(napped.stop_ms - napped.start_ms, 60_000);
        assert_eq!(napped.billed_duration_ms, 60_000);
        clock.advance_ms(EXPRESS_EXECUTION_MS_MAX - 60_000);
        engine.run_due_timers();
        let slept = sleep.wait().expect("ends");
        assert_eq!(slept.status, ExecutionStatus::TimedOut);
        assert_eq!(slept.error.as_deref(), Some("States.Timeout"));
        assert_eq!(slept.stop_ms - slept.start_ms, EXPRESS_EXECUTION_MS_MAX);
        assert_eq!(engine.express_running_count(), 0);
    }

    /// `.sync`, `.waitForTaskToken` and activities are refused in an EXPRESS definition (in
    /// branches too), with AWS's words at the offending `Resource`; STANDARD takes them.
    #[test]
    fn callbacks_sync_jobs_and_activities_are_refused_in_express_definitions() {
        let clock = ManualClock::new(NOW_MS);
        let engine = engine(&clock);
        let task = |resource: &str| {
            format!(
                r#"{{"StartAt":"P","States":{{"P":{{"Type":"Parallel","End":true,"Branches":[
                    {{"StartAt":"Run","States":{{"Run":{{"Type":"Task","Resource":"{resource}","End":true}}}}}}]}}}}}}"#
            )
        };
        let cases = [
            (
                "arn:aws:states:::states:startExecution.sync",
                "Express state machine does not support '.sync' service integration",
            ),
            (
                "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
                "Express state machine does not support '.waitForTaskToken' service integration ",
            ),
            (
                "arn:aws:states:us-east-1:000000000000:activity:work",
                "Express state machine does not support Activity ARN",
            ),
        ];
        for (resource, message) in cases {
            let definition = task(resource);
            let refused = engine
                .create_state_machine_of_type("m", &definition, None, MachineType::Express, &[])
                .expect_err(resource);
            let Error::InvalidDefinition { diagnostics } = &refused else {
                panic!("{refused}");
            };
            assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
            assert_eq!(
                diagnostics[0].path,
                "/States/P/Branches/0/States/Run/Resource"
            );
            assert_eq!(diagnostics[0].message, message);
            assert_eq!(diagnostics[0].code, DiagnosticCode::SchemaValidationFailed);
        }
        // An update of an EXPRESS machine obeys the same rules, and keeps its type.
        express(&engine, "quick", PASS_CHOICE);
        let refused = engine
            .update_state_machine_revision("quick", Some(&task(cases[1].0)), None)
            .expect_err("refused");
        assert_eq!(refused.aws_name(), "InvalidDefinition");
        let updated = engine
            .update_state_machine_revision(
                "quick",
                Some(&task("arn:aws:lambda:us-east-1:000000000000:function:f")),
                None,
            )
            .expect("a request/response Task is fine");
        assert_eq!(updated.machine_type, MachineType::Express);
        let standard = engine
            .create_state_machine("m", &task(cases[0].0), None)
            .expect("STANDARD takes .sync");
        assert_eq!(standard.machine_type, MachineType::Standard);
        let refused = engine
            .start_sync_execution("m", None, "{}")
            .expect_err("not EXPRESS");
        assert_eq!(refused.aws_name(), "StateMachineTypeNotSupported");
        // The name is taken by a STANDARD machine: an EXPRESS one of the same name is another.
        let taken = engine
            .create_state_machine_of_type("m", &task(cases[0].0), None, MachineType::Express, &[])
            .expect_err("exists");
        assert_eq!(taken.aws_name(), "InvalidDefinition");
        let taken = engine
            .create_state_machine_of_type("m", PASS_CHOICE, None, MachineType::Express, &[])
            .expect_err("exists");
        assert_eq!(taken.aws_name(), "StateMachineAlreadyExists");
    }

    /// `start_sync_execution` called on a tokio runtime's thread (a handler's, an async
    /// embedder's) waits instead of panicking.
    #[tokio::test]
    async fn a_sync_start_on_a_runtime_thread_waits_for_its_outcome() {
        let clock = ManualClock::new(NOW_MS);
        let engine = engine(&clock);
        express(&engine, "quick", PASS_CHOICE);
        let outcome = engine
            .start_sync_execution("quick", None, "{}")
            .expect("runs");
        assert_eq!(outcome.status, ExecutionStatus::Succeeded);
    }

    /// A sync start through a version ARN runs that version, as `StartExecution` does.
    #[test]
    fn a_sync_start_through_a_version_arn_runs_that_version() {
        let clock = ManualClock::new(NOW_MS);
        let engine = engine(&clock);
        express(
            &engine,
            "versioned",
            r#"{"StartAt":"P","States":{"P":{"Type":"Pass","Result":"one","End":true}}}"#,
        );
        let version = engine
            .publish_state_machine_version("versioned", None, None)
            .expect("publishes");
        engine
            .update_state_machine(
                "versioned",
                Some(r#"{"StartAt":"P","States":{"P":{"Type":"Pass","Result":"two","End":true}}}"#),
                None,
            )
            .expect("updates");
        let outcome = engine
            .start_sync_execution(&version.state_machine_version_arn, None, "{}")
            .expect("runs");
        assert_eq!(outcome.status, ExecutionStatus::Succeeded);
        assert_eq!(outcome.output_text.as_deref(), Some("\"one\""));
        let latest = engine
            .start_sync_execution("versioned", None, "{}")
            .expect("runs");
        assert_eq!(latest.output_text.as_deref(), Some("\"two\""));
    }

    /// An EXPRESS machine survives a restart (its type is in its record); a running Express
    /// execution does not (it was only in memory).
    #[test]
    fn an_express_machine_survives_a_restart_and_its_running_execution_does_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = ManualClock::new(NOW_MS);
        let options = || EngineOptions {
            background_timers: false,
            clock: Arc::new(clock.clone()),
            ..EngineOptions::default()
        };
        let engine = Engine::open(dir.path(), options()).expect("opens");
        express(
            &engine,
            "nap",
            r#"{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":60,"End":true}}}"#,
        );
        let running = engine
            .start_express_execution("nap", None, "{}")
            .expect("starts");
        assert_eq!(engine.express_running_count(), 1);
        drop(engine);
        assert!(
            matches!(running.wait(), Err(Error::Interrupted)),
            "a closed engine loses its running Express executions"
        );
        let engine = Engine::open(dir.path(), options()).expect("reopens");
        assert_eq!(engine.express_running_count(), 0);
        assert_eq!(engine.next_timer_due_ms(), None, "no timer came back");
        let machine = engine.describe_state_machine("nap").expect("kept");
        assert_eq!(machine.machine_type, MachineType::Express);
        let again = engine
            .start_express_execution("nap", None, "{}")
            .expect("starts");
        clock.advance_ms(60_000);
        engine.run_due_timers();
        assert_eq!(
            again.wait().expect("ends").status,
            ExecutionStatus::Succeeded
        );
    }
}
