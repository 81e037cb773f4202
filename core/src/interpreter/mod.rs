//! interpreter: pure stepping of one execution. `decide(definition, state, trigger, now_ms, ...)`
//! returns the new events (and the effects they call for); `apply(state, event)` folds one event
//! into the [`ExecutionState`]. No I/O, no clock (time comes in as `now_ms`), no randomness of its
//! own (jitter and intrinsic randomness come from the caller's [`Entropy`] and are recorded in
//! the events), no WAL.
//!
//! # How the engine drives it
//! ```text
//! trigger -> decide(def, &state, trigger, now_ms, &options, entropy) -> Decision { events, effects }
//!         -> store appends `events` durably (one commit)
//!         -> state = decision.next_state  (== apply(&mut state, e) for each e in events)
//!         -> perform `effects` (invoke task handlers, arm timers, report the close)
//! recovery: state = fold(apply, events from the log); perform pending_effects(&state)
//! ```
//!
//! # Using it (store, engine, CLI)
//! - Start: `decide(&def, &ExecutionState::new(), Trigger::Start(StartRequest { .. }), now_ms,
//!   &Options::default(), &mut entropy)`. Other triggers: `TaskSucceeded`/`TaskFailed`/
//!   `TaskTimedOut` with the `task_id` of an [`Effect::InvokeTask`], `TimerFired` with the
//!   `timer_id` of an [`Effect::ArmTimer`], `Stop`.
//! - Persist `decision.events` as one WAL record: `history::encoding::encode(&EventBatch {
//!   execution_arn, events })`. After the commit adopt `decision.next_state` (or fold the events
//!   with [`apply`]; the two are equal) and perform `decision.effects`. Once encoded, hand the
//!   events to [`recycle_events`] (optional: the next decision on the thread reuses the vector).
//! - Recovery: `ExecutionState::replay(events)` then [`pending_effects`] (every timer to re-arm,
//!   every task to re-dispatch, or `Closed`). `apply` needs no definition; `decide` does.
//! - Describe: [`ExecutionState::status`], `output`, `failure`, `event_count` (against the cap),
//!   `start_ms`, `close_ms`. History: `history::aws_json::render_history(events,
//!   include_execution_data)`.
//! - Dispatch is at-least-once: a task may be re-dispatched after a crash; answers to a task that
//!   is no longer running (late, duplicate, after a timeout) are stale and decide to nothing.
//! - Redrive: `Trigger::Redrive` on a failed, timed-out or aborted state appends
//!   `ExecutionRedriven` and reruns what did not succeed (see `redrive`); the caller checks the
//!   AWS rules (window, open time, event budget).
//! - `.waitForTaskToken` (see `waiting`): the task draws a token (`$$.Task.Token`, recorded in
//!   `TaskScheduled`), its handler's answer records `TaskSubmitted`, and
//!   `TokenSucceeded`/`TokenFailed` complete it. `HeartbeatSeconds` is tracked by the runtime
//!   (it answers `TaskTimedOut { error: "States.HeartbeatTimeout" }`): heartbeats write nothing.
//! - Activity resources: `ActivityScheduled` (token and task list recorded), the engine's
//!   `ActivityStarted { task_id, worker_name }` trigger when a worker claims it, then the token's
//!   answer: `ActivitySucceeded` / `ActivityFailed` / `ActivityTimedOut`.
//!
//! # Invariants
//! - `decide` never mutates its input: it works on a clone and returns events that, applied to
//!   the original state in order, reproduce exactly the state it ended with (tested by replay).
//! - Events are dense from 1; `previousEventId` follows AWS (see `state` for the rule).
//! - A decision runs the machine as far as it can go without the outside world: a chain of
//!   Pass/Choice/Succeed/Fail states, Parallel branches and Map iterations made only of them, run
//!   to their end in one decision, so they commit once.
//! - Every wait is visible in the folded state: [`pending_effects`] re-derives the timers to arm
//!   and the tasks to dispatch, so recovery needs nothing but the log.
//! - Stale triggers (a timer that is no longer armed, a task that is no longer running) produce an
//!   empty decision, never an error: timers and handlers are at-least-once.
//! - ASL runtime failures (`States.Runtime`, a task's error) are history data, not Rust errors.
//!   [`Error`] is for misuse (a trigger on a closed execution, an event that does not fit the
//!   state) and for paths not implemented yet.
//!
//! Must not: do I/O, read a clock, draw random numbers itself, or know about the WAL.

mod decide;
mod effects;
mod io;
mod redrive;
mod state;
pub mod test_state;
mod variables;
mod waiting;

pub use decide::{decide, decide_owned, map_run_plan, recycle_events, EvaluatedAccess, MapRunPlan};

/// The reserved resource of a Distributed Map's Map Run in [`Effect::InvokeTask`]: the engine's
/// Map Run backend serves it and answers with `TaskSucceeded` (the results, in item order) or
/// `TaskFailed` (the run's error), which the interpreter records as `MapRunSucceeded` /
/// `MapRunFailed`. A `CancelTask` of it (the execution stopped, the Map aborted) stops the run.
pub const MAP_RUN_RESOURCE: &str = "statelog:mapRun";
pub use effects::pending_effects;
pub use state::{apply, ApplyError, ExecutionState, ExecutionStatus};
pub use waiting::{
    compose_token, parse_token, TokenFormatError, TokenParts, WaitingRef, WaitingTask,
};

use serde_json::Value;

use crate::history::{EventId, HistoryEvent};
pub use crate::paths::Entropy;

/// Errors of the interpreter (not ASL failures: those are events).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `Start` on an execution that already has events.
    #[error("the execution has already started ({event_count} events)")]
    AlreadyStarted {
        /// How many events the execution has.
        event_count: u32,
    },
    /// A trigger other than `Start` on an execution that has not started.
    #[error("trigger {trigger} on an execution that has not started")]
    NotStarted {
        /// The trigger's name.
        trigger: &'static str,
    },
    /// A trigger on an execution that is already closed.
    #[error("trigger {trigger} on an execution that is already closed ({status:?})")]
    Closed {
        /// The trigger's name.
        trigger: &'static str,
        /// How the execution closed.
        status: ExecutionStatus,
    },
    /// An event that does not fit the folded state (a corrupt or foreign history).
    #[error("event {event_id} ({event_type}) does not fit the execution state: {reason}")]
    Inconsistent {
        /// The offending event's id.
        event_id: u32,
        /// The offending event's type.
        event_type: &'static str,
        /// What does not fit.
        reason: Inconsistency,
    },
    /// The definition does not match the history (a state named in the history is missing).
    #[error("state '{state}' of the history is not in the definition")]
    UnknownState {
        /// The missing state's name.
        state: String,
    },
    /// A payload over [`crate::limits::PAYLOAD_SIZE_BYTES_MAX`] where AWS rejects the call
    /// (the execution input) rather than failing the execution.
    #[error("{what} is {size_bytes} bytes; the limit is {limit_bytes} bytes")]
    PayloadTooLarge {
        /// Which payload.
        what: &'static str,
        /// Its size as compact JSON.
        size_bytes: usize,
        /// The limit.
        limit_bytes: usize,
    },
    /// A payload nested deeper than [`crate::limits::PAYLOAD_JSON_DEPTH_MAX`] where AWS
    /// rejects the call (the execution input) rather than failing the execution.
    #[error("{what} nests deeper than {depth_max} levels of objects and arrays")]
    PayloadTooDeep {
        /// Which payload.
        what: &'static str,
        /// The limit.
        depth_max: usize,
    },
    /// A feature the interpreter does not run yet.
    #[error("not supported yet: {feature} (state '{state}')")]
    Unsupported {
        /// What is missing, e.g. "activity resources".
        feature: String,
        /// The state that needs it.
        state: String,
    },
}

/// Why an event does not fit the folded state (the `reason` of [`Error::Inconsistent`]): the
/// fold's checks, or what `decide` found broken in the state it works on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Inconsistency {
    /// The event's id is not the next one.
    #[error("id {id} does not follow {last_event_id}")]
    IdOutOfOrder {
        /// The event's id.
        id: u32,
        /// The last id folded.
        last_event_id: u32,
    },
    /// An event after the execution closed (other than `ExecutionRedriven`).
    #[error("the execution is already closed ({status:?})")]
    AlreadyClosed {
        /// How it closed.
        status: ExecutionStatus,
    },
    /// The first event is not `ExecutionStarted`.
    #[error("the first event must be ExecutionStarted")]
    NotStartedFirst,
    /// The event does not fit the state it is folded into.
    #[error(transparent)]
    Apply(#[from] ApplyError),
    /// `decide` looked for a running state where the thread runs none.
    #[error("no running state at scope {scope:?}")]
    NoRunningStateAt {
        /// The thread's scope.
        scope: Vec<u32>,
    },
    /// A scope names a Parallel branch the definition does not have.
    #[error("no branch {index}")]
    NoBranch {
        /// The branch's index.
        index: u32,
    },
    /// A scope walks into a state that has no branches or item processor.
    #[error("'{state}' has no branches")]
    NoBranches {
        /// The state's name.
        state: String,
    },
    /// `decide` advanced a thread that was never started.
    #[error("advance of an unstarted thread {scope:?}")]
    UnstartedThread {
        /// The thread's scope.
        scope: Vec<u32>,
    },
    /// A state is in a phase its type never reaches.
    #[error("state '{state}' ({state_type}) cannot be in phase {phase}")]
    ImpossiblePhase {
        /// The state's name.
        state: String,
        /// Its ASL type (`Pass`, `Task`, ...).
        state_type: &'static str,
        /// The phase found, as `decide` names it.
        phase: String,
    },
    /// A running Map's parameters no longer evaluate (they did when it started).
    #[error("Map parameters changed: {cause}")]
    MapParametersChanged {
        /// The cause of the evaluation's failure.
        cause: String,
    },
    /// A Parallel branch has no thread after its Parallel started them all.
    #[error("branch {index} was never started")]
    BranchNotStarted {
        /// The branch's index.
        index: usize,
    },
    /// One of `decide`'s own invariants broke; the text is the invariant (a fixed sentence).
    #[error("{0}")]
    Decider(&'static str),
}

impl From<&'static str> for Inconsistency {
    fn from(invariant: &'static str) -> Self {
        Inconsistency::Decider(invariant)
    }
}

/// The text a start's input was written as, kept where it is not the input's compact form: AWS
/// shows a passed-through input as its caller wrote it (`[1, 2]` stays `[1, 2]`). Made only by
/// [`InputAsWritten::parse`], from the text it parses, so it reads as the input it came with and
/// the decider need not parse it again.
#[derive(Debug, Clone, PartialEq)]
pub struct InputAsWritten(String);

impl InputAsWritten {
    /// Reads a start's input text (as [`crate::history::depth::parse_payload`] does): the
    /// input, and the text itself where the input's compact form differs from it.
    pub fn parse(
        text: &str,
    ) -> Result<(Value, Option<InputAsWritten>), crate::history::depth::PayloadTextError> {
        let input = crate::history::depth::parse_payload(text)?;
        let kept = (!is_compact_form(&input, text)).then(|| InputAsWritten(text.to_string()));
        Ok((input, kept))
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The text, owned.
    pub fn into_string(self) -> String {
        self.0
    }
}

/// Whether `text` is exactly `value`'s compact JSON form: the form is written into a writer
/// that compares it with the text as it goes (no allocation, stops at the first difference).
fn is_compact_form(value: &Value, text: &str) -> bool {
    struct Compare<'a> {
        rest: &'a [u8],
    }
    impl std::io::Write for Compare<'_> {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            match self.rest.strip_prefix(bytes) {
                Some(rest) => {
                    self.rest = rest;
                    Ok(bytes.len())
                }
                None => Err(std::io::ErrorKind::InvalidData.into()),
            }
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut compare = Compare {
        rest: text.as_bytes(),
    };
    serde_json::to_writer(&mut compare, value).is_ok() && compare.rest.is_empty()
}

/// What the execution is, for its `ExecutionStarted` event and `$$.Execution` / `$$.StateMachine`.
#[derive(Debug, Clone, PartialEq)]
pub struct StartRequest {
    /// The execution input.
    pub input: Value,
    /// The input exactly as the caller wrote it, where that is not `input`'s compact form
    /// (kept for the history's display; made by [`InputAsWritten::parse`] with `input`).
    pub input_text: Option<InputAsWritten>,
    /// `arn:aws:states:<region>:<account>:execution:<machine>:<name>`.
    pub execution_arn: String,
    /// `arn:aws:states:<region>:<account>:stateMachine:<machine>`.
    pub state_machine_arn: String,
    /// The role the execution runs as.
    pub role_arn: String,
    /// The version (and alias) it was started through; `None` for an unqualified start.
    /// Boxed: most starts have none, and a trigger stays small.
    pub through: Option<Box<StartedThrough>>,
    /// The Map Run starting it, for a Distributed Map's child (`ExecutionStarted.map_run_arn`).
    pub map_run_arn: Option<String>,
}

/// The version a start runs, and the alias that chose it, as `ExecutionStarted` records them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartedThrough {
    /// `stateMachineVersionArn`: `...:stateMachine:<machine>:<n>`.
    pub version_arn: String,
    /// `stateMachineAliasArn`, when started through an alias.
    pub alias_arn: Option<String>,
}

/// Something from the outside world that moves an execution.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Trigger {
    /// Start the execution (its first decision).
    Start(StartRequest),
    /// A task handler answered with a result.
    TaskSucceeded {
        /// The task (the id of its `TaskScheduled` event, see [`Effect::InvokeTask`]).
        task_id: EventId,
        /// The result.
        output: Value,
    },
    /// A task handler failed.
    TaskFailed {
        /// The task.
        task_id: EventId,
        /// The error name (matched by Retry/Catch).
        error: String,
        /// The human cause.
        cause: String,
    },
    /// The runtime observed that a task ran out of time (a heartbeat it tracks itself; the
    /// task's `TimeoutSeconds` arrives as a [`Trigger::TimerFired`]).
    TaskTimedOut {
        /// The task.
        task_id: EventId,
        /// `States.Timeout` or `States.HeartbeatTimeout`.
        error: String,
    },
    /// `SendTaskSuccess` with the token of a `.waitForTaskToken` task (the engine checked it).
    /// A handler's own answer to such a task is [`Trigger::TaskSucceeded`]: it only submits it.
    TokenSucceeded {
        /// The task.
        task_id: EventId,
        /// The output sent with the token.
        output: Value,
    },
    /// `SendTaskFailure` with the token of a `.waitForTaskToken` task (the engine checked it).
    TokenFailed {
        /// The task.
        task_id: EventId,
        /// The error name (matched by Retry/Catch).
        error: String,
        /// The human cause.
        cause: String,
    },
    /// A worker claimed an activity task (`GetActivityTask`; the engine checked it).
    ActivityStarted {
        /// The task.
        task_id: EventId,
        /// The name the worker gave.
        worker_name: Option<String>,
    },
    /// A timer armed by [`Effect::ArmTimer`] is due.
    TimerFired {
        /// The timer (the id of the event that armed it).
        timer_id: EventId,
    },
    /// RedriveExecution: reopen a failed, timed out or aborted execution and rerun what did not
    /// succeed (see `redrive`). The caller checks the redrive window and the event budget.
    Redrive,
    /// StopExecution.
    Stop {
        /// The error to record, if any.
        error: Option<String>,
        /// The cause to record, if any.
        cause: Option<String>,
    },
}

impl Trigger {
    /// The trigger's name, for errors and logs.
    pub fn name(&self) -> &'static str {
        match self {
            Trigger::Start(_) => "Start",
            Trigger::TaskSucceeded { .. } => "TaskSucceeded",
            Trigger::TaskFailed { .. } => "TaskFailed",
            Trigger::TaskTimedOut { .. } => "TaskTimedOut",
            Trigger::TokenSucceeded { .. } => "TokenSucceeded",
            Trigger::TokenFailed { .. } => "TokenFailed",
            Trigger::ActivityStarted { .. } => "ActivityStarted",
            Trigger::TimerFired { .. } => "TimerFired",
            Trigger::Stop { .. } => "Stop",
            Trigger::Redrive => "Redrive",
        }
    }
}

/// Knobs of `decide` that the embedder sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The event that would have this id is replaced by `ExecutionFailed` (`States.Runtime`).
    pub history_events_max: u32,
    /// The longest an execution may stay open (AWS: 1 year); it then times out.
    pub execution_open_ms_max: u64,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            history_events_max: crate::limits::HISTORY_EVENTS_MAX,
            execution_open_ms_max: crate::limits::EXECUTION_OPEN_MS_MAX,
        }
    }
}

/// Why a timer exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimerKind {
    /// A Wait state.
    Wait,
    /// The backoff before a retry.
    RetryBackoff,
    /// A task's `TimeoutSeconds`.
    TaskTimeout,
    /// The execution's `TimeoutSeconds` or the open-time limit.
    ExecutionTimeout,
}

/// A task to hand to its integration.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskInvocation {
    /// Identifies this attempt: the id of its `TaskScheduled` event. Unique within the
    /// execution, so handlers can deduplicate (dispatch is at-least-once).
    pub task_id: EventId,
    /// 0 for the first attempt, then 1, 2, ... (`$$.State.RetryCount`).
    pub attempt: u32,
    /// The Task state's name.
    pub state_name: String,
    /// The `Resource` ARN as written.
    pub resource: String,
    /// The effective input (after InputPath and Parameters).
    pub input: Value,
    /// The Context object as the task sees it; `null` for an activity task, whose worker gets
    /// only its input and token.
    pub context: Value,
    /// The state's `HeartbeatSeconds` (resolved), when set: the runtime answers
    /// `TaskTimedOut { error: "States.HeartbeatTimeout" }` when no heartbeat comes in time.
    pub heartbeat_seconds: Option<u64>,
}

/// Something the runtime must do after the decision's events are durable.
// An effect lives for one hand-off and is moved once; boxing the invocation would only add an
// allocation per task and break the engine's `Effect::InvokeTask(invocation)` by-value use.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Call the task's integration; answer with `TaskSucceeded`/`TaskFailed`.
    InvokeTask(TaskInvocation),
    /// Stop waiting for a task that no longer matters (aborted, timed out); best effort.
    CancelTask {
        /// The task.
        task_id: EventId,
    },
    /// Fire `TimerFired { timer_id }` at `due_ms` (or at once if already past).
    ArmTimer {
        /// The timer.
        timer_id: EventId,
        /// When, in ms since the epoch.
        due_ms: u64,
        /// Why.
        kind: TimerKind,
    },
    /// The execution closed; nothing more will happen to it.
    Closed {
        /// How it closed.
        status: ExecutionStatus,
    },
}

/// The result of one `decide`: events to append (in one commit) and effects to perform once
/// they are durable.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Decision {
    /// The new events, ids continuing the history densely.
    pub events: Vec<HistoryEvent>,
    /// What to do once `events` are durable.
    pub effects: Vec<Effect>,
    /// The state after `events` (exactly what folding them with [`apply`] gives): adopt it once
    /// the events are durable instead of applying them again.
    pub next_state: ExecutionState,
}

#[cfg(test)]
mod tests;
