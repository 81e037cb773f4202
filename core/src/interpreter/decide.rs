//! decide: the pure decision step. Given the definition, the folded state and one trigger, runs
//! the execution as far as it can go without the outside world and returns the new events.
//!
//! How: a [`Decider`] holds a clone of the state and changes it only through `apply` (every event
//! it emits is applied at once), so the events it returns reproduce its final state on replay.
//! Trigger handlers only record what happened (a task event, a fired timer); the machine then
//! moves by [`Decider::advance`] from the root down: every thread runs until it waits, ends or
//! fails, and a thread's end is handled by its parent (the execution, a Parallel, a Map) in the
//! same decision.
//!
//! Must not: read a clock, draw randomness except through the caller's `Entropy`, or do I/O.

use std::borrow::Cow;

use serde_json::Value;

#[path = "states/mod.rs"]
pub(super) mod states;
pub use states::map::{EvaluatedAccess, MapRunPlan};

use super::effects::{decision_effects, Keys};
use super::io::*;
use super::state::{
    apply, apply_timer, ExecutionState, IterationOutcome, Phase, StateRun, Thread, Timer,
};
use super::{
    Decision, Effect, Error, Inconsistency, InputAsWritten, Options, StartRequest, Trigger,
};
use crate::asl::{
    assign::AssignInput, Assign, ChoiceState, CountField, Env, FailField, FailState,
    IntegrationPattern, MapState, ParallelState, PassState, PercentageField, ResourceKind,
    SecondsField, State, StateKind, StateMachine, StateMap, TaskState, Transition, WaitFor,
    WaitState,
};
use crate::history::{
    AssignedVariables, ErrorCause, EventDetails, EventId, ExecutionStarted, HistoryEvent,
    MapIteration, MapStateStarted, Output, Payload, StateEntered, StateExited, StateName,
    TaskError, TaskOutput, TaskResource, TaskScheduled, TimerArm, TimerPurpose,
};
use crate::limits::{
    ASSIGN_SIZE_BYTES_MAX, MAP_INLINE_CONCURRENCY_MAX, PAYLOAD_JSON_DEPTH_MAX,
    PAYLOAD_SIZE_BYTES_MAX, VARIABLES_TOTAL_BYTES_MAX, VARIABLE_SIZE_BYTES_MAX,
};
use crate::paths::{Entropy, StatesError, Variables, STATES_DATA_LIMIT_EXCEEDED};

/// Room reserved for the events of a decision that starts an execution (it often runs a chain
/// of states at once: a 10-state chain makes 22 events). Growing the vector instead moved every
/// event again, a measurable share of `decide`.
const START_EVENTS_RESERVED: usize = 32;

/// Room reserved for the events of any other decision.
const EVENTS_RESERVED: usize = 8;

/// The largest events vector (in events) a thread keeps for reuse: a decision that made
/// thousands of events (a big Map) must not pin that much memory on its thread for ever.
const SPARE_EVENTS_KEPT_MAX: usize = 64;

std::thread_local! {
    /// An emptied events vector handed back by [`recycle_events`], reused by the next decision
    /// on this thread: allocating and freeing a start's vector (about 11 KiB) per decision makes
    /// glibc's malloc consolidate its fast bins every time (`docs/bench/tuning.md`).
    static SPARE_EVENTS: std::cell::Cell<Vec<HistoryEvent>> = const { std::cell::Cell::new(Vec::new()) };
}

/// An empty events vector with room for `reserved` events: this thread's spare one when it is
/// big enough.
fn events_buffer(reserved: usize) -> Vec<HistoryEvent> {
    let spare = SPARE_EVENTS
        .try_with(std::cell::Cell::take)
        .unwrap_or_default();
    if spare.capacity() >= reserved {
        spare
    } else {
        Vec::with_capacity(reserved)
    }
}

/// Hands a decision's events vector back once the caller is done with it (after the append):
/// the events are dropped now and the emptied vector is reused by the next decision on this
/// thread. Optional: a vector never handed back is simply freed.
pub fn recycle_events(mut events: Vec<HistoryEvent>) {
    events.clear();
    if events.capacity() > SPARE_EVENTS_KEPT_MAX {
        return;
    }
    // Keep the bigger of the two spares (a start needs more room than most decisions).
    let _ = SPARE_EVENTS.try_with(|spare| {
        let current = spare.take();
        spare.set(if events.capacity() >= current.capacity() {
            events
        } else {
            current
        });
    });
}

/// Decides what `trigger` does to the execution: the events to append and the effects to perform
/// once they are durable. Pure: the same inputs give the same decision. `state` is untouched.
pub fn decide(
    definition: &StateMachine,
    state: &ExecutionState,
    trigger: Trigger,
    now_ms: u64,
    options: &Options,
    entropy: &mut dyn Entropy,
) -> Result<Decision, Error> {
    decide_owned(definition, state.clone(), trigger, now_ms, options, entropy)
}

/// [`decide`] on a state the caller gives up (saves copying it); the decision carries the state
/// after its events in [`Decision::next_state`].
pub fn decide_owned(
    definition: &StateMachine,
    state: ExecutionState,
    trigger: Trigger,
    now_ms: u64,
    options: &Options,
    entropy: &mut dyn Entropy,
) -> Result<Decision, Error> {
    match (&trigger, state.status()) {
        (Trigger::Start(_), super::ExecutionStatus::NotStarted) => {}
        (Trigger::Start(_), _) => {
            return Err(Error::AlreadyStarted {
                event_count: state.event_count(),
            })
        }
        (Trigger::Redrive, status) if super::redrive::may_reopen(status) => {}
        (_, super::ExecutionStatus::NotStarted) => {
            return Err(Error::NotStarted {
                trigger: trigger.name(),
            })
        }
        (_, status) if status.is_closed() => {
            return Err(Error::Closed {
                trigger: trigger.name(),
                status,
            })
        }
        _ => {}
    }
    // A redrive reopens a closed execution: nothing of before carries over (and a close in
    // the same decision is a new close).
    let before = match trigger {
        Trigger::Redrive => Keys::default(),
        _ => Keys::of_state(&state),
    };
    let handed_over_before: Vec<EventId> = match trigger {
        Trigger::Redrive => Vec::new(),
        _ => state
            .waiting_handed_over()
            .into_iter()
            .filter_map(|(task_id, handed_over)| handed_over.then_some(task_id))
            .collect(),
    };
    // Paired check (debug builds): the keys give what the difference of the full effects gave.
    #[cfg(debug_assertions)]
    let before_effects = match trigger {
        Trigger::Redrive => Vec::new(),
        _ => super::effects::pending_effects(&state),
    };
    let first_id = state.event_count() + 1;
    let events_reserved = match trigger {
        Trigger::Start(_) => START_EVENTS_RESERVED,
        _ => EVENTS_RESERVED,
    };
    let mut decider = Decider {
        def: definition,
        state,
        events: events_buffer(events_reserved),
        now_ms,
        options,
        entropy,
        fired: None,
        within_limits: None,
        map_run_answer: None,
        exited_links_to: None,
    };
    let answered = match decider.run(trigger) {
        Ok(answered) => answered,
        Err(Interrupt::Closed) => None,
        Err(Interrupt::Fail(error)) => return Err(error),
    };
    let mut effects = decision_effects(&before, &decider.state, answered);
    #[cfg(debug_assertions)]
    debug_assert_eq!(
        effects,
        super::effects::difference(
            &before_effects,
            super::effects::pending_effects(&decider.state),
            answered
        ),
        "the effects by keys and by the full difference disagree"
    );
    // A handed-over task (submitted, claimed) that is no longer awaited, and was not answered
    // by this trigger, is cancelled too (a `.sync` child is stopped).
    let still_waiting: Vec<EventId> = decider
        .state
        .waiting_handed_over()
        .into_iter()
        .map(|(task_id, _)| task_id)
        .collect();
    for task_id in handed_over_before {
        if !still_waiting.contains(&task_id) && Some(task_id) != answered {
            effects.push(Effect::CancelTask { task_id });
        }
    }
    debug_assert!(decider.events.first().map_or(true, |e| e.id.0 == first_id));
    Ok(Decision {
        events: decider.events,
        effects,
        next_state: decider.state,
    })
}

/// The plan of the Map Run whose attempt (its `MapRunStarted` id) is `task_id` in the
/// execution `state` of `definition`: what the engine's Map Run backend runs (see
/// [`MapRunPlan`]). Pure, like `decide`: the same state gives the same plan.
pub fn map_run_plan(
    definition: &StateMachine,
    state: &ExecutionState,
    task_id: EventId,
) -> Result<MapRunPlan, Error> {
    let options = Options::default();
    // The plan draws nothing from it: its values come from generators seeded by the Map's entry.
    let mut entropy = statelog_rng::Rng::new(0);
    let mut decider = Decider {
        def: definition,
        state: state.clone(),
        events: Vec::new(),
        now_ms: 0,
        options: &options,
        entropy: &mut entropy,
        fired: None,
        within_limits: None,
        map_run_answer: None,
        exited_links_to: None,
    };
    match decider.map_run_plan(task_id.0) {
        Ok(plan) => Ok(plan),
        Err(Interrupt::Fail(error)) => Err(error),
        Err(Interrupt::Closed) => Err(Error::Inconsistent {
            event_id: task_id.0,
            event_type: "MapRunStarted",
            reason: Inconsistency::Decider("the Map Run's plan closed the execution"),
        }),
    }
}

/// Why a decision stopped early.
enum Interrupt {
    /// The execution closed (the history cap was reached).
    Closed,
    /// A misuse or an inconsistency: the decision is void.
    Fail(Error),
}

impl From<Error> for Interrupt {
    fn from(error: Error) -> Self {
        Interrupt::Fail(error)
    }
}

type Step<T> = Result<T, Interrupt>;

/// How a thread stands after it was advanced.
#[derive(Debug)]
enum Outcome {
    /// It waits for a task, a timer or its children.
    Waiting,
    /// Its last state exited with this output.
    Done(Payload),
    /// It failed with this error (nobody caught it inside the thread).
    Failed(ErrorCause),
    /// It was aborted.
    Aborted,
}

/// What a step needs to know of the running state (copied out to keep borrows short).
struct RunInfo {
    name: String,
    entered_event_id: u32,
    input: Payload,
    retried_errors: Vec<String>,
    context: Value,
    /// The variables as of the state's entry (shared with the folded state: no copy).
    variables: std::sync::Arc<Variables>,
}

struct Decider<'d, 'e> {
    def: &'d StateMachine,
    state: ExecutionState,
    events: Vec<HistoryEvent>,
    now_ms: u64,
    options: &'d Options,
    entropy: &'e mut dyn Entropy,
    /// The timer whose firing this decision handles.
    fired: Option<u32>,
    /// The Map Run outcome this decision handles: the run's attempt (its `MapRunStarted` id)
    /// and its results or error (taken by the Map's step, as `fired` by a timer's).
    map_run_answer: Option<(u32, Result<Value, ErrorCause>)>,
    /// The `previousEventId` of the next `MapStateExited`, when AWS links it elsewhere than
    /// the cursor (a Distributed Map's exit, see `states::map`).
    exited_links_to: Option<u32>,
    /// The payload a state's exit last found within the size and depth limits. A Pass or
    /// Choice hands its input on unchanged, so the next entered and exited events carry the
    /// same payload: checked once, not at every event (both walks were a measurable share of
    /// a Pass chain). Held, so no other payload can be found at its address.
    within_limits: Option<Payload>,
}

/// The `States.Runtime` cause for an event whose payload nests deeper than
/// [`PAYLOAD_JSON_DEPTH_MAX`]: it names the state where the event says it.
fn too_deep_cause(details: &EventDetails) -> String {
    let state = details
        .state_entered()
        .map(|d| d.name.as_str())
        .or_else(|| details.state_exited().map(|d| d.name.as_str()));
    let what = match state {
        Some(name) => format!("The state '{name}'"),
        None => format!("The {} event", details.type_name()),
    };
    format!(
        "{what} produced a payload nested deeper than the maximum of \
         {PAYLOAD_JSON_DEPTH_MAX} levels of objects and arrays."
    )
}

fn inconsistent(reason: impl Into<Inconsistency>) -> Interrupt {
    Interrupt::Fail(Error::Inconsistent {
        event_id: 0,
        event_type: "(decide)",
        reason: reason.into(),
    })
}

/// The state running at `scope` in `state` (a free function, so the borrow is of the state
/// alone and the decider's other fields stay usable).
fn running_in<'s>(state: &'s ExecutionState, scope: &[u32]) -> Step<&'s StateRun> {
    state.thread(scope).and_then(Thread::run).ok_or_else(|| {
        inconsistent(Inconsistency::NoRunningStateAt {
            scope: scope.to_vec(),
        })
    })
}

/// The variables the state running at `scope` reads: the values as of its entry (`$name` in
/// its paths, intrinsics and expressions), from its thread and every enclosing one. Borrowed
/// at the top level; merged (owned) inside a branch or iteration that assigned its own. A free
/// function, like [`running_in`], so the borrow is of the state alone and the step's
/// `asl::Env` can hold it beside the decider's entropy.
fn variables_in<'s>(state: &'s ExecutionState, scope: &[u32]) -> Cow<'s, Variables> {
    state.variables.at(scope)
}

/// What `assign` sets, evaluated on `on` with the values as of entry (`env`), as the exited
/// event records it; `None` without an `Assign`. Each value and their total are held to AWS's
/// limits (`States.DataLimitExceeded`), and so is the execution's total once they are set.
pub(super) fn assigned_variables(
    assign: Option<&Assign>,
    on: &AssignInput<'_>,
    context: &Value,
    env: &mut Env<'_>,
) -> Result<Option<AssignedVariables>, StatesError> {
    let Some(assign) = assign else {
        return Ok(None);
    };
    let values = assign.evaluate(on, context, env)?;
    let variables = env.variables;
    let mut texts = std::collections::BTreeMap::new();
    let mut assign_bytes = 0usize;
    for (name, value) in values {
        if crate::history::depth::exceeds(&value, PAYLOAD_JSON_DEPTH_MAX) {
            return Err(StatesError::new(
                STATES_RUNTIME,
                format!(
                    "The value assigned to the variable '{name}' nests more than {PAYLOAD_JSON_DEPTH_MAX} levels deep"
                ),
            ));
        }
        let text = crate::paths::to_json_text(&value);
        if text.len() > VARIABLE_SIZE_BYTES_MAX {
            return Err(StatesError::new(
                STATES_DATA_LIMIT_EXCEEDED,
                format!(
                    "The variable '{name}' is {} bytes; a variable may hold at most {VARIABLE_SIZE_BYTES_MAX} bytes",
                    text.len()
                ),
            ));
        }
        assign_bytes += text.len();
        texts.insert(name, text);
    }
    if texts.is_empty() {
        // `"Assign": {}` assigns nothing, and AWS shows no `assignedVariables` for it.
        return Ok(None);
    }
    if assign_bytes > ASSIGN_SIZE_BYTES_MAX {
        return Err(StatesError::new(
            STATES_DATA_LIMIT_EXCEEDED,
            format!(
                "The Assign field sets {assign_bytes} bytes of variables; one Assign may set at most {ASSIGN_SIZE_BYTES_MAX} bytes"
            ),
        ));
    }
    // The execution's total once these are set: the values they replace no longer count.
    let kept_bytes: usize = variables
        .iter()
        .filter(|(name, _)| !texts.contains_key(*name))
        .map(|(_, value)| json_size_bytes(value))
        .sum();
    if kept_bytes + assign_bytes > VARIABLES_TOTAL_BYTES_MAX {
        return Err(StatesError::new(
            STATES_DATA_LIMIT_EXCEEDED,
            format!(
                "The variables would hold {} bytes; an execution may hold at most {VARIABLES_TOTAL_BYTES_MAX} bytes of variables",
                kept_bytes + assign_bytes
            ),
        ));
    }
    Ok(Some(AssignedVariables {
        variables: texts,
        truncated: false,
    }))
}

fn child(scope: &[u32], index: usize) -> Vec<u32> {
    let mut path = scope.to_vec();
    path.push(index as u32);
    path
}

fn entered_details(state: &State, input: Payload) -> EventDetails {
    let d = StateEntered {
        name: StateName::from(state.name.as_str()),
        input,
        input_truncated: false,
    };
    match &state.kind {
        StateKind::Pass(_) => EventDetails::PassStateEntered(d),
        StateKind::Task(_) => EventDetails::TaskStateEntered(d),
        StateKind::Choice(_) => EventDetails::ChoiceStateEntered(d),
        StateKind::Wait(_) => EventDetails::WaitStateEntered(d),
        StateKind::Succeed => EventDetails::SucceedStateEntered(d),
        StateKind::Fail(_) => EventDetails::FailStateEntered(d),
        StateKind::Parallel(_) => EventDetails::ParallelStateEntered(d),
        StateKind::Map(_) => EventDetails::MapStateEntered(d),
    }
}

fn exited_details(
    state: &State,
    output: Payload,
    assigned: Option<AssignedVariables>,
) -> Option<EventDetails> {
    let d = StateExited {
        name: StateName::from(state.name.as_str()),
        output,
        output_truncated: false,
        assigned,
    };
    Some(match &state.kind {
        StateKind::Pass(_) => EventDetails::PassStateExited(d),
        StateKind::Task(_) => EventDetails::TaskStateExited(d),
        StateKind::Choice(_) => EventDetails::ChoiceStateExited(d),
        StateKind::Wait(_) => EventDetails::WaitStateExited(d),
        StateKind::Succeed => EventDetails::SucceedStateExited(d),
        StateKind::Parallel(_) => EventDetails::ParallelStateExited(d),
        StateKind::Map(_) => EventDetails::MapStateExited(d),
        StateKind::Fail(_) => return None,
    })
}

fn aborted_details(state: &State) -> Option<EventDetails> {
    match &state.kind {
        StateKind::Task(_) => Some(EventDetails::TaskStateAborted),
        StateKind::Wait(_) => Some(EventDetails::WaitStateAborted),
        StateKind::Parallel(_) => Some(EventDetails::ParallelStateAborted),
        StateKind::Map(_) => Some(EventDetails::MapStateAborted),
        StateKind::Pass(_) | StateKind::Choice(_) | StateKind::Succeed | StateKind::Fail(_) => None,
    }
}

pub(super) fn retriers_and_catchers(
    state: &State,
) -> (&[crate::asl::Retrier], &[crate::asl::Catcher]) {
    match &state.kind {
        StateKind::Task(t) => (&t.retry, &t.catch),
        StateKind::Parallel(p) => (&p.retry, &p.catch),
        StateKind::Map(m) => (&m.retry, &m.catch),
        StateKind::Pass(_)
        | StateKind::Choice(_)
        | StateKind::Wait(_)
        | StateKind::Succeed
        | StateKind::Fail(_) => (&[], &[]),
    }
}

/// Whether an `ErrorEquals` list takes `error`: the ASL rules (`matched`, from `asl`), plus
/// `States.TaskFailed` as AWS documents it: a wildcard for the errors a task's integration raises
/// (any name outside `States.*`), never for `States.Timeout` (seen in the recordings: a Catch on
/// `States.TaskFailed` takes `S3.NoSuchBucketException`).
pub(super) fn handles(error_equals: &[String], matched: bool, error: &str) -> bool {
    matched
        || (!error.starts_with("States.")
            && error_equals.iter().any(|name| name == "States.TaskFailed"))
}

/// The wait before the retry that follows `attempts` earlier retries by `retrier`, before any
/// jitter: `IntervalSeconds * BackoffRate^attempts`, capped by `MaxDelaySeconds` and by
/// `open_ms_max` (no wait outlives the execution).
pub(super) fn retry_delay_ms(
    retrier: &crate::asl::Retrier,
    attempts: usize,
    open_ms_max: u64,
) -> u64 {
    let exponent = i32::try_from(attempts).unwrap_or(i32::MAX);
    let delay_seconds = retrier.interval_seconds as f64 * retrier.backoff_rate.powi(exponent);
    let mut delay_ms = if delay_seconds.is_finite() {
        (delay_seconds * 1000.0).min(u64::MAX as f64) as u64
    } else {
        u64::MAX
    };
    if let Some(max_delay_seconds) = retrier.max_delay_seconds {
        delay_ms = delay_ms.min(max_delay_seconds.saturating_mul(1000));
    }
    delay_ms.min(open_ms_max)
}

/// `States.DataLimitExceeded` when the output of the state `name` is larger than a payload
/// may be, worded as AWS words it; `None` when it fits.
pub(super) fn output_too_large(name: &str, output: &Value) -> Option<ErrorCause> {
    (json_size_bytes(output) > PAYLOAD_SIZE_BYTES_MAX).then(|| {
        failure(
            "States.DataLimitExceeded",
            format!(
                "The state/task '{name}' returned a result with a size exceeding the maximum number of bytes service limit."
            ),
        )
    })
}

/// AWS prefixes `States.Runtime` and `States.QueryEvaluationError` causes with the state and
/// the id of its entered event.
fn with_prefix(name: &str, entered_event_id: u32, error: StatesError) -> ErrorCause {
    let prefixed =
        error.error == STATES_RUNTIME || error.error == crate::asl::jsonata::QUERY_EVALUATION_ERROR;
    if prefixed && !error.cause.starts_with("An error occurred while") {
        ErrorCause::new(
            error.error,
            format!(
                "An error occurred while executing the state '{name}' (entered at the event id #{entered_event_id}). {}",
                error.cause
            ),
        )
    } else {
        ErrorCause::new(error.error, error.cause)
    }
}

fn runtime(cause: impl Into<String>) -> StatesError {
    StatesError::new(STATES_RUNTIME, cause)
}

/// The [`Env`] of one step: the decider's time, entropy and JSONata evaluator, and the
/// variables given (a field-by-field borrow, so the decider's state stays readable).
macro_rules! step_env {
    ($decider:ident, $variables:expr) => {
        crate::asl::Env {
            now_ms: $decider.now_ms,
            entropy: &mut *$decider.entropy,
            variables: $variables,
            jsonata: $decider.def.jsonata.as_ref(),
        }
    };
}
pub(super) use step_env;

/// What a JSONata expression of `state`'s own fields sees: `$states` with `input` as its
/// input (and `context` when the state's expressions may read it), and the variables it reads.
fn state_bindings<'a>(
    state: &'a State,
    input: &'a Value,
    context: &'a Value,
) -> (crate::asl::jsonata::States<'a>, &'a [String]) {
    let (variables, reads_context, paths) = match state.data_flow.as_jsonata() {
        Some(flow) => (
            flow.variables.as_slice(),
            flow.reads_context,
            flow.states_paths.as_deref(),
        ),
        None => (&[][..], false, None),
    };
    let states = crate::asl::jsonata::States {
        input,
        result: None,
        error_output: None,
        context: reads_context.then_some(context),
        paths,
    };
    (states, variables)
}

/// Evaluates one JSONata expression of `state`'s own fields (`TimeoutSeconds`, `Seconds`,
/// `Error`, ...) with `$states.input` the state's `input`.
fn state_expression(
    state: &State,
    expression: &crate::asl::Expression,
    field: &str,
    input: &Value,
    context: &Value,
    env: &mut crate::asl::Env<'_>,
) -> Result<Value, StatesError> {
    let (states, variables) = state_bindings(state, input, context);
    crate::asl::data_flow::evaluate_expression(expression, field, &states, variables, env)
}

/// [`state_expression`] for a template (`{% %}` expressions at any depth) of `state`.
fn state_template(
    state: &State,
    template: &crate::asl::JsonataTemplate,
    field: &str,
    input: &Value,
    context: &Value,
    env: &mut crate::asl::Env<'_>,
) -> Result<Value, StatesError> {
    let (states, variables) = state_bindings(state, input, context);
    crate::asl::data_flow::evaluate(template, field, &states, variables, env)
}

/// A JSONata number field's value as a whole number of at least `min` (`TimeoutSeconds`,
/// `MaxConcurrency`, `Seconds`, ...).
fn jsonata_count(
    expression: &crate::asl::Expression,
    field: &str,
    value: &Value,
    min: u64,
) -> Result<u64, StatesError> {
    match value.as_u64() {
        Some(n) if n >= min => Ok(n),
        _ => match value.as_f64() {
            Some(f) if f.fract() == 0.0 && f >= min as f64 && f <= u64::MAX as f64 => Ok(f as u64),
            _ => Err(expression.wrong_type(field, "integer", value)),
        },
    }
}

impl<'d> Decider<'d, '_> {
    // ----------------------------------------------------------------- events

    /// Emits one event: numbers it, applies it, keeps it. Replaces it by the history-cap
    /// failure when it would be the last event the history may hold.
    fn emit(&mut self, scope: &[u32], details: EventDetails, timer: Option<TimerArm>) -> Step<u32> {
        let id = self.state.last_event_id + 1;
        if id >= self.options.history_events_max && !details.is_terminal() {
            let cause = format!(
                "The execution reached the maximum number of history events ({}).",
                self.options.history_events_max
            );
            return self.fail_runtime(cause);
        }
        // A payload nested deeper than every operation on it can safely go fails the execution
        // here, before anything is committed (AWS's `States.Runtime` is not caught by Catch).
        if let Some(payload) = details.payload() {
            let checked = self
                .within_limits
                .as_ref()
                .is_some_and(|checked| std::ptr::eq(payload, &**checked));
            if !checked && crate::history::depth::exceeds(payload, PAYLOAD_JSON_DEPTH_MAX) {
                return self.fail_runtime(too_deep_cause(&details));
            }
        }
        self.push(scope, details, timer)
    }

    /// Closes the execution with `States.Runtime` instead of the event that would break a limit.
    fn fail_runtime(&mut self, cause: String) -> Step<u32> {
        self.push(
            &[],
            EventDetails::ExecutionFailed(failure(STATES_RUNTIME, cause)),
            None,
        )?;
        Err(Interrupt::Closed)
    }

    fn push(&mut self, scope: &[u32], details: EventDetails, timer: Option<TimerArm>) -> Step<u32> {
        let previous_event_id = match &details {
            // AWS links an evaluation failure to what its state's entered event links to.
            EventDetails::EvaluationFailed(_) => self.entered_previous_event_id(scope),
            EventDetails::MapStateExited(_) if self.exited_links_to.is_some() => {
                self.exited_links_to.take().unwrap_or_default()
            }
            _ => self.state.previous_event_id_for(&details),
        };
        // Built in place in the list (an event is 176 bytes: moving it in cost two copies).
        self.events.push(HistoryEvent {
            id: EventId(self.state.last_event_id + 1),
            previous_event_id,
            timestamp_ms: self.now_ms,
            details,
            scope: scope.to_vec(),
            timer,
        });
        let Some(event) = self.events.last() else {
            unreachable!("pushed above")
        };
        if let Err(error) = apply(&mut self.state, event) {
            self.events.pop();
            return Err(error.into());
        }
        Ok(event.id.0)
    }

    /// The `previousEventId` of the entered event of the state running at `scope` when this
    /// decision emitted it, else the usual one.
    fn entered_previous_event_id(&self, scope: &[u32]) -> u32 {
        // A Wait evaluates once entered: its failure links to its entered event (AWS).
        if self
            .state_def(scope)
            .is_ok_and(|s| matches!(s.kind, StateKind::Wait(_)))
        {
            return self.state.cursor_event_id();
        }
        let entered = running_in(&self.state, scope).map(|run| run.entered_event_id);
        self.events
            .iter()
            .rev()
            .find(|e| entered.as_ref().is_ok_and(|id| e.id.0 == *id))
            .map(|e| e.previous_event_id)
            .unwrap_or(self.state.cursor_event_id())
    }

    /// Arms a retry backoff for the state at `owner` on the last event of this decision.
    fn arm_retry_on_last_event(&mut self, owner: &[u32], due_ms: u64, error: String) -> Step<()> {
        let Some(last) = self.events.last_mut() else {
            return Err(inconsistent(
                "a retry with no event in the decision to carry its timer",
            ));
        };
        if last.timer.is_some() {
            return Err(inconsistent("the last event already carries a timer"));
        }
        let purpose = TimerPurpose::RetryBackoff { error };
        apply_timer(
            &mut self.state,
            owner,
            &purpose,
            Timer {
                id: last.id.0,
                due_ms,
            },
        )
        .map_err(inconsistent)?;
        last.timer = Some(TimerArm {
            due_ms,
            owner: owner.to_vec(),
            purpose,
        });
        Ok(())
    }

    // ------------------------------------------------------------ navigation

    /// The states of the thread at `scope` (the top level, a branch, a Map's processor).
    fn states_at(&self, scope: &[u32]) -> Step<&'d StateMap> {
        let mut states = &self.def.states;
        for depth in 0..scope.len() {
            let name = self.running(&scope[..depth])?.name.as_str();
            let state = states.get(name).ok_or_else(|| Error::UnknownState {
                state: name.to_string(),
            })?;
            states = match &state.kind {
                StateKind::Parallel(p) => match p.branches.get(scope[depth] as usize) {
                    Some(branch) => &branch.states,
                    None => {
                        return Err(inconsistent(Inconsistency::NoBranch {
                            index: scope[depth],
                        }))
                    }
                },
                StateKind::Map(m) => &m.item_processor.states,
                _ => {
                    return Err(inconsistent(Inconsistency::NoBranches {
                        state: name.to_string(),
                    }))
                }
            };
        }
        Ok(states)
    }

    /// The state running at `scope` (borrowed: copy out what must outlive a change).
    fn running(&self, scope: &[u32]) -> Step<&StateRun> {
        running_in(&self.state, scope)
    }

    /// The definition of the state running at `scope`.
    fn state_def(&self, scope: &[u32]) -> Step<&'d State> {
        let states = self.states_at(scope)?;
        let name = self.running(scope)?.name.as_str();
        states.get(name).ok_or_else(|| {
            Interrupt::Fail(Error::UnknownState {
                state: name.to_string(),
            })
        })
    }

    /// The Context object for the state running at `scope` when `state` may read it
    /// (`uses_context`), else `null`: most states never read `$$`, and building it costs a
    /// dozen allocations.
    fn context_if_used(&self, state: &State, run: &StateRun) -> Step<Value> {
        if !uses_context(state) {
            return Ok(Value::Null);
        }
        let info = self
            .state
            .info
            .as_ref()
            .ok_or_else(|| inconsistent("not started"))?;
        Ok(context_object(info, run, retries(state)))
    }

    fn run_info(&self, scope: &[u32]) -> Step<RunInfo> {
        let run = self
            .state
            .thread(scope)
            .and_then(Thread::run)
            .ok_or_else(|| {
                inconsistent(Inconsistency::NoRunningStateAt {
                    scope: scope.to_vec(),
                })
            })?;
        let info = self
            .state
            .info
            .as_ref()
            .ok_or_else(|| inconsistent("not started"))?;
        let state = self.state_def(scope)?;
        Ok(RunInfo {
            name: run.name.clone(),
            entered_event_id: run.entered_event_id,
            input: run.input.clone(),
            retried_errors: run.retried_errors.clone(),
            context: if uses_context(state) {
                context_object(info, run, retries(state))
            } else {
                Value::Null
            },
            variables: self.state.variables.shared_at(scope),
        })
    }

    fn fail_in(&mut self, scope: &[u32], run: &RunInfo, error: StatesError) -> Step<Outcome> {
        let error = self.step_failure(scope, &run.name, run.entered_event_id, error)?;
        Ok(Outcome::Failed(error))
    }

    /// The failure of one step of the state `name` at `scope`, worded as AWS words it
    /// ([`with_prefix`]); a JSONata evaluation failure is first recorded in an
    /// `EvaluationFailed` event, as AWS records it.
    fn step_failure(
        &mut self,
        scope: &[u32],
        name: &str,
        entered_event_id: u32,
        error: StatesError,
    ) -> Step<ErrorCause> {
        let evaluation = (error.error == crate::asl::jsonata::QUERY_EVALUATION_ERROR)
            .then(|| error.location.clone());
        let failure = with_prefix(name, entered_event_id, error);
        if let Some(location) = evaluation {
            let details = crate::history::EvaluationFailed {
                error: failure.error.clone(),
                cause: failure.cause.clone(),
                location,
                state: name.to_string(),
            };
            self.emit(
                scope,
                EventDetails::EvaluationFailed(Box::new(details)),
                None,
            )?;
        }
        Ok(failure)
    }

    // ---------------------------------------------------------------- triggers

    /// Handles the trigger, then advances the machine. Returns the task the trigger answered.
    fn run(&mut self, trigger: Trigger) -> Step<Option<EventId>> {
        let trigger = match super::waiting::route(&self.state, trigger) {
            super::waiting::Routed::Plain(trigger) => trigger,
            super::waiting::Routed::Stale => return Ok(None),
            super::waiting::Routed::Submit { task_id, output } => {
                self.submit_token_task(task_id, output)?;
                return Ok(Some(task_id));
            }
        };
        match trigger {
            Trigger::Start(request) => {
                self.start(request)?;
                Ok(None)
            }
            Trigger::TaskSucceeded { task_id, output } => {
                let Some(scope) = self.find_task(task_id.0) else {
                    return Ok(None);
                };
                if self.is_map_run(&scope) {
                    self.map_run_answer = Some((task_id.0, Ok(output)));
                    self.advance_root()?;
                    return Ok(Some(task_id));
                }
                let (resource_type, resource) = self.task_resource(&scope)?;
                if json_size_bytes(&output) > PAYLOAD_SIZE_BYTES_MAX {
                    let cause = format!(
                        "The state/task '{}' returned a result with a size exceeding the maximum number of bytes service limit.",
                        resource
                    );
                    self.task_failure(
                        &scope,
                        false,
                        "States.DataLimitExceeded".into(),
                        Some(cause),
                    )?;
                } else if self.is_activity_task(&scope) {
                    let details = crate::history::Output {
                        output: output.into(),
                        output_truncated: false,
                    };
                    self.emit(&scope, EventDetails::ActivitySucceeded(details), None)?;
                } else {
                    let details = TaskOutput {
                        resource_type,
                        resource,
                        output,
                        output_truncated: false,
                    };
                    self.emit(&scope, EventDetails::TaskSucceeded(Box::new(details)), None)?;
                }
                self.advance_root()?;
                Ok(Some(task_id))
            }
            Trigger::TaskFailed {
                task_id,
                error,
                cause,
            } => {
                let Some(scope) = self.find_task(task_id.0) else {
                    return Ok(None);
                };
                if self.is_map_run(&scope) {
                    let error = ErrorCause {
                        error: Some(error),
                        cause: Some(cause),
                    };
                    self.map_run_answer = Some((task_id.0, Err(error)));
                    self.advance_root()?;
                    return Ok(Some(task_id));
                }
                self.task_failure(&scope, false, error, Some(cause))?;
                self.advance_root()?;
                Ok(Some(task_id))
            }
            Trigger::TaskTimedOut { task_id, error } => {
                let Some(scope) = self.find_task(task_id.0) else {
                    return Ok(None);
                };
                self.task_failure(&scope, true, error, None)?;
                self.advance_root()?;
                // Not an answer from the task's integration: the task is cancelled (its
                // handler dropped, its `.sync` job asked to stop), as on `TimeoutSeconds`.
                Ok(None)
            }
            Trigger::TimerFired { timer_id } => {
                if self.state.execution_timer.map(|t| t.id) == Some(timer_id.0) {
                    let details = failure("States.Timeout", "");
                    let details = ErrorCause {
                        error: details.error,
                        cause: None,
                    };
                    self.emit(&[], EventDetails::ExecutionTimedOut(details), None)?;
                    return Ok(None);
                }
                match self.find_timer(timer_id.0) {
                    None => Ok(None),
                    Some((scope, true)) => {
                        // A task's TimeoutSeconds.
                        self.task_failure(&scope, true, "States.Timeout".into(), None)?;
                        self.advance_root()?;
                        Ok(None)
                    }
                    Some((_, false)) => {
                        self.fired = Some(timer_id.0);
                        self.advance_root()?;
                        Ok(None)
                    }
                }
            }
            Trigger::Redrive => {
                self.redrive()?;
                Ok(None)
            }
            // SendTaskFailure: error and cause are optional there; empty means left out.
            Trigger::TokenFailed {
                task_id,
                error,
                cause,
            } => {
                let Some(scope) = self.find_task(task_id.0) else {
                    return Ok(None);
                };
                let cause = (!cause.is_empty()).then_some(cause);
                self.task_failure(&scope, false, error, cause)?;
                self.advance_root()?;
                Ok(Some(task_id))
            }
            // Routed above to TaskSucceeded.
            Trigger::TokenSucceeded { .. } => Ok(None),
            // A worker claimed an activity task.
            Trigger::ActivityStarted {
                task_id,
                worker_name,
            } => {
                let Some(scope) = self.find_task(task_id.0) else {
                    return Ok(None);
                };
                let claimable = self
                    .state
                    .waiting_task(task_id)
                    .is_some_and(|t| t.activity && !t.submitted);
                if !claimable {
                    return Ok(None);
                }
                let details = crate::history::ActivityStarted { worker_name };
                self.emit(&scope, EventDetails::ActivityStarted(details), None)?;
                Ok(Some(task_id))
            }
            Trigger::Stop { error, cause } => {
                // A running Map Run is aborted with its execution (its children are stopped by
                // the engine when the run's attempt is cancelled).
                for scope in self.map_runs() {
                    self.emit(&scope, EventDetails::MapRunAborted, None)?;
                }
                self.emit(
                    &[],
                    EventDetails::ExecutionAborted(ErrorCause { error, cause }),
                    None,
                )?;
                Ok(None)
            }
        }
    }

    fn start(&mut self, request: StartRequest) -> Step<()> {
        if crate::history::depth::exceeds(&request.input, PAYLOAD_JSON_DEPTH_MAX) {
            return Err(Interrupt::Fail(Error::PayloadTooDeep {
                what: "execution input",
                depth_max: PAYLOAD_JSON_DEPTH_MAX,
            }));
        }
        let size_bytes = json_size_bytes(&request.input);
        if size_bytes > PAYLOAD_SIZE_BYTES_MAX {
            return Err(Interrupt::Fail(Error::PayloadTooLarge {
                what: "execution input",
                size_bytes,
                limit_bytes: PAYLOAD_SIZE_BYTES_MAX,
            }));
        }
        let open_ms_max = self.options.execution_open_ms_max;
        let timeout_ms = match self.def.timeout_seconds {
            Some(seconds) => seconds.saturating_mul(1000).min(open_ms_max),
            None => open_ms_max,
        };
        let timer = TimerArm {
            due_ms: self.now_ms.saturating_add(timeout_ms),
            owner: Vec::new(),
            purpose: TimerPurpose::ExecutionTimeout,
        };
        let input_text = request.input_text.map(InputAsWritten::into_string);
        // One shared payload: the started event, the execution's info and the first state.
        let input = Payload::new(request.input);
        let details = ExecutionStarted {
            input: Payload::clone(&input),
            input_truncated: false,
            role_arn: request.role_arn,
            state_machine_alias_arn: request
                .through
                .as_ref()
                .and_then(|through| through.alias_arn.clone()),
            state_machine_version_arn: request.through.map(|through| through.version_arn),
            execution_arn: request.execution_arn,
            state_machine_arn: request.state_machine_arn,
            input_text,
            map_run_arn: request.map_run_arn,
        };
        self.emit(
            &[],
            EventDetails::ExecutionStarted(Box::new(details)),
            Some(timer),
        )?;
        let start_at = self.def.start_at.clone();
        let outcome = self.enter_and_advance(&[], &start_at, input)?;
        self.finish_root(outcome)
    }

    fn advance_root(&mut self) -> Step<()> {
        let outcome = self.advance(&[])?;
        self.finish_root(outcome)
    }

    fn finish_root(&mut self, outcome: Outcome) -> Step<()> {
        match outcome {
            Outcome::Waiting => Ok(()),
            Outcome::Done(output) => {
                let details = Output {
                    output,
                    output_truncated: false,
                };
                self.emit(&[], EventDetails::ExecutionSucceeded(details), None)
                    .map(drop)
            }
            Outcome::Failed(error) => self
                .emit(&[], EventDetails::ExecutionFailed(error), None)
                .map(drop),
            Outcome::Aborted => Err(inconsistent("the top level was aborted")),
        }
    }

    /// The scope of the task (or Map Run) whose attempt is `task_id`.
    fn find_task(&self, task_id: u32) -> Option<Vec<u32>> {
        let mut found = None;
        walk(&self.state.root, &mut Vec::new(), &mut |scope, phase| {
            let id = match phase {
                Phase::Task(task) => task.task_id,
                Phase::MapRun { task_id, .. } => *task_id,
                _ => return,
            };
            if id == task_id {
                found = Some(scope.to_vec());
            }
        });
        found
    }

    /// Whether the thread at `scope` waits for a Map Run.
    fn is_map_run(&self, scope: &[u32]) -> bool {
        matches!(
            self.state
                .thread(scope)
                .and_then(Thread::run)
                .map(|r| &r.phase),
            Some(Phase::MapRun { .. })
        )
    }

    /// The scopes of the running Map Runs, depth-first.
    fn map_runs(&self) -> Vec<Vec<u32>> {
        let mut found = Vec::new();
        walk(&self.state.root, &mut Vec::new(), &mut |scope, phase| {
            if matches!(phase, Phase::MapRun { .. }) {
                found.push(scope.to_vec());
            }
        });
        found
    }

    /// The scope of the state owning timer `timer_id`, and whether it is a task timeout.
    fn find_timer(&self, timer_id: u32) -> Option<(Vec<u32>, bool)> {
        let mut found = None;
        walk(
            &self.state.root,
            &mut Vec::new(),
            &mut |scope, phase| match phase {
                Phase::Waiting { timer } | Phase::Backoff { timer } if timer.id == timer_id => {
                    found = Some((scope.to_vec(), false))
                }
                Phase::Task(task) if task.timeout_timer.map(|t| t.id) == Some(timer_id) => {
                    found = Some((scope.to_vec(), true))
                }
                _ => {}
            },
        );
        found
    }

    /// When the retrier matching `error` has attempts left: the due time of the next attempt.
    fn retry_due(
        &mut self,
        retriers: &[crate::asl::Retrier],
        retried: &[String],
        error: &str,
    ) -> Option<u64> {
        let index = retriers
            .iter()
            .position(|r| handles(&r.error_equals, r.matches(error), error))?;
        let attempts = retried
            .iter()
            .filter(|e| {
                retriers
                    .iter()
                    .position(|r| handles(&r.error_equals, r.matches(e), e))
                    == Some(index)
            })
            .count();
        let retrier = &retriers[index];
        if attempts >= retrier.max_attempts as usize {
            return None;
        }
        let mut delay_ms = retry_delay_ms(retrier, attempts, self.options.execution_open_ms_max);
        if retrier.jitter_strategy == crate::asl::JitterStrategy::Full {
            delay_ms = self.entropy.next_u64() % delay_ms.saturating_add(1);
        }
        Some(self.now_ms.saturating_add(delay_ms))
    }

    // ------------------------------------------------------------------ threads

    /// Enters `name` in the thread at `scope` with `input`, then advances the thread.
    fn enter_and_advance(
        &mut self,
        scope: &[u32],
        name: &str,
        input: impl Into<Payload>,
    ) -> Step<Outcome> {
        match self.enter(scope, name, input)? {
            Some(outcome) => Ok(outcome),
            None => self.advance(scope),
        }
    }

    /// Emits the state-entered event. A Wait arms its timer here (or exits at once when already
    /// due); `Some` when the thread ended already (a Wait that could not compute its time).
    fn enter(
        &mut self,
        scope: &[u32],
        name: &str,
        input: impl Into<Payload>,
    ) -> Step<Option<Outcome>> {
        let input: Payload = input.into();
        let states = self.states_at(scope)?;
        let state = states.get(name).ok_or_else(|| Error::UnknownState {
            state: name.to_string(),
        })?;
        match &state.kind {
            StateKind::Wait(wait) => self.enter_wait(scope, name, state, wait, input),
            StateKind::Pass(_)
            | StateKind::Task(_)
            | StateKind::Choice(_)
            | StateKind::Succeed
            | StateKind::Fail(_)
            | StateKind::Parallel(_)
            | StateKind::Map(_) => {
                self.emit(scope, entered_details(state, input), None)?;
                Ok(None)
            }
        }
    }

    /// Runs the thread at `scope` until it waits, ends or fails.
    fn advance(&mut self, scope: &[u32]) -> Step<Outcome> {
        loop {
            match self.state.thread(scope) {
                None | Some(Thread::Pending) => {
                    return Err(inconsistent(Inconsistency::UnstartedThread {
                        scope: scope.to_vec(),
                    }))
                }
                Some(Thread::Done { output }) => return Ok(Outcome::Done(Payload::clone(output))),
                Some(Thread::Aborted) => return Ok(Outcome::Aborted),
                // A state a redrive reruns is entered again (a Wait recomputes its time).
                Some(Thread::Running(run)) if super::redrive::reentering(&self.state, scope) => {
                    let (name, input) = (run.name.clone(), run.input.clone());
                    if let Some(outcome) = self.enter(scope, &name, input)? {
                        return Ok(outcome);
                    }
                }
                Some(Thread::Running(_)) => {
                    if let Some(outcome) = self.step(scope)? {
                        return Ok(outcome);
                    }
                }
            }
        }
    }

    /// One step of the state running at `scope`; `None` when the thread moved on to another
    /// state and should be stepped again. Each state type's module (`states/`) handles the
    /// phases its transition table names and hands the rest to [`Self::step_shared`].
    fn step(&mut self, scope: &[u32]) -> Step<Option<Outcome>> {
        let state = self.state_def(scope)?;
        let phase = match self.state.thread(scope).and_then(Thread::run) {
            Some(run) => Shallow::of(&run.phase),
            None => return Err(inconsistent("step without a running state")),
        };
        // No arm for "any other state": a new state type must say here how it steps.
        match &state.kind {
            StateKind::Pass(pass) => self.step_pass(scope, state, pass, phase),
            StateKind::Task(task) => self.step_task(scope, state, task, phase),
            StateKind::Choice(choice) => self.step_choice(scope, state, choice, phase),
            StateKind::Wait(_) => self.step_wait(scope, state, phase),
            StateKind::Succeed => self.step_succeed(scope, state, phase),
            StateKind::Fail(fail) => self.step_fail(scope, state, fail, phase),
            StateKind::Parallel(parallel) => {
                self.step_parallel_state(scope, state, parallel, phase)
            }
            StateKind::Map(map) => self.step_map_state(scope, state, map, phase),
        }
    }

    /// The phases every state type steps the same way: waiting for a task, a timer or a retry
    /// (a fired backoff on a state that cannot retry is an inconsistency), and a recorded failure
    /// (retry, catch or fail the thread). Any other phase does not fit the state.
    fn step_shared(
        &mut self,
        scope: &[u32],
        state: &State,
        phase: Shallow,
    ) -> Step<Option<Outcome>> {
        match phase {
            Shallow::Backoff(timer) if self.fired == Some(timer) => {
                self.fired = None;
                Err(inconsistent("a retry backoff on a state that cannot retry"))
            }
            Shallow::Waiting(_) | Shallow::Backoff(_) | Shallow::Task => Ok(Some(Outcome::Waiting)),
            Shallow::Failed => {
                let error = match self
                    .state
                    .thread(scope)
                    .and_then(Thread::run)
                    .map(|r| &r.phase)
                {
                    Some(Phase::Failed { error: Some(error) }) => error.clone(),
                    _ => return Err(inconsistent("a failed state without its error")),
                };
                self.handle_failure(scope, state, error, false, None)
            }
            Shallow::Entered
            | Shallow::TaskSucceeded
            | Shallow::Parallel
            | Shallow::Map
            | Shallow::MapRun(_)
            | Shallow::MapRunEnded
            | Shallow::Finishing => Err(inconsistent(Inconsistency::ImpossiblePhase {
                state: state.name.clone(),
                state_type: state.kind.type_name(),
                phase: format!("{phase:?}"),
            })),
        }
    }

    /// Emits the state-exited event (checking the payload limit) and follows the transition:
    /// `None` when the next state was entered (step on), `Some` when the thread ended.
    fn exit(
        &mut self,
        scope: &[u32],
        state: &State,
        output: impl Into<Payload>,
        assigned: Option<AssignedVariables>,
        next: &Transition,
    ) -> Step<Option<Outcome>> {
        let next = match next {
            Transition::End => None,
            Transition::Next(name) => Some(name.as_str()),
        };
        self.exit_to(scope, state, output, assigned, next)
    }

    /// [`Self::exit`] with the next state's name (`None`: the thread ends). `assigned` rides
    /// on the exited event; its fold makes the values visible from the next state on.
    fn exit_to(
        &mut self,
        scope: &[u32],
        state: &State,
        output: impl Into<Payload>,
        assigned: Option<AssignedVariables>,
        next: Option<&str>,
    ) -> Step<Option<Outcome>> {
        let output: Payload = output.into();
        let checked = self
            .within_limits
            .as_ref()
            .is_some_and(|checked| Payload::ptr_eq(checked, &output));
        let too_large = match checked {
            true => None,
            false => output_too_large(&state.name, &output),
        };
        if let Some(error) = too_large {
            return Ok(Some(Outcome::Failed(error)));
        }
        // The exited event, the next entered event and the next state share one payload.
        let details = exited_details(state, Payload::clone(&output), assigned)
            .ok_or_else(|| inconsistent("a Fail state does not exit"))?;
        self.emit(scope, details, None)?;
        // Within the size limit (above) and the depth limit (the emit's check).
        self.within_limits = Some(Payload::clone(&output));
        match next {
            None => Ok(Some(Outcome::Done(output))),
            Some(name) => self.enter(scope, name, output),
        }
    }

    /// Ends a Task, Parallel or Map state with its `result`: ResultSelector, ResultPath and
    /// OutputPath, then its transition. A failure there is caught or fails the thread; it is not
    /// retried.
    fn finish_with_result(
        &mut self,
        scope: &[u32],
        state: &State,
        run: &RunInfo,
        result: Value,
    ) -> Step<Option<Outcome>> {
        let next = match &state.kind {
            StateKind::Task(s) => &s.next,
            StateKind::Parallel(s) => &s.next,
            StateKind::Map(s) => &s.next,
            _ => return Err(inconsistent("a result for a state that takes none")),
        };
        // ResultSelector, then Assign on the selected result (with the values as of entry),
        // then ResultPath and OutputPath (JSONata: Assign and Output on `$states.result`).
        let flow = &state.data_flow;
        let mut env = step_env!(self, &run.variables);
        let finished = (|| {
            let selected = flow.select_result(result, &run.context, &mut env)?;
            let on = flow.assign_input(&selected, &run.input, Some(&selected), &run.context);
            let assigned = assigned_variables(state.assign.as_ref(), &on, &run.context, &mut env)?;
            let output = flow.selected_output(&run.input, selected, &run.context, &mut env)?;
            Ok((output, assigned))
        })();
        match finished {
            Ok((output, assigned)) => self.exit(scope, state, output, assigned, next),
            Err(error) => {
                let error = self.step_failure(scope, &run.name, run.entered_event_id, error)?;
                self.handle_failure(scope, state, error, false, None)
            }
        }
    }

    /// A state failed: retry (when allowed and a retrier has attempts left), else emit
    /// `failed_event`, then catch (exit to the catcher's state) or let the thread fail.
    fn handle_failure(
        &mut self,
        scope: &[u32],
        state: &State,
        error: ErrorCause,
        allow_retry: bool,
        failed_event: Option<EventDetails>,
    ) -> Step<Option<Outcome>> {
        let run = self.run_info(scope)?;
        let (retriers, catchers) = retriers_and_catchers(state);
        let name = error.error.clone().unwrap_or_default();
        // A retry's timer rides on the decision's last event; a failure before any event of
        // this decision (a retried state failing again as it restarts) is not retried again.
        if allow_retry && !self.events.is_empty() {
            if let Some(due_ms) = self.retry_due(retriers, &run.retried_errors, &name) {
                self.arm_retry_on_last_event(scope, due_ms, name)?;
                return Ok(Some(Outcome::Waiting));
            }
        }
        if let Some(details) = failed_event {
            self.emit(scope, details, None)?;
        }
        let Some(catcher) = catchers
            .iter()
            .find(|c| handles(&c.error_equals, c.matches(&name), &name))
        else {
            return Ok(Some(Outcome::Failed(error)));
        };
        // The state's own Assign is skipped: the Catcher's applies, on the error output.
        let error_output = error_output(&error);
        let mut env = step_env!(self, &run.variables);
        let on = catcher
            .flow
            .assign_input(&run.input, &error_output, &run.context);
        let caught = assigned_variables(catcher.assign.as_ref(), &on, &run.context, &mut env)
            .and_then(|assigned| {
                let output =
                    catcher
                        .flow
                        .output(&run.input, error_output, &run.context, &mut env)?;
                Ok((output, assigned))
            });
        match caught {
            Ok((output, assigned)) => self.exit(
                scope,
                state,
                output,
                assigned,
                &Transition::Next(catcher.next.clone()),
            ),
            Err(e) => self.fail_in(scope, &run, e).map(Some),
        }
    }

    /// AWS closes the Task state whose uncaught failure failed a Parallel branch or a Map
    /// iteration with `TaskStateAborted`, after the siblings' aborts and before the
    /// `ParallelStateFailed`/`MapStateFailed` (recorded: a Parallel over a failed
    /// `.waitForTaskToken` task, a Map whose Task timed out). Other state types close no event.
    fn abort_failed_task(&mut self, scope: &[u32]) -> Step<()> {
        let is_task = matches!(self.state.thread(scope), Some(Thread::Running(_)))
            && matches!(self.state_def(scope)?.kind, StateKind::Task(_));
        if is_task {
            self.emit(scope, EventDetails::TaskStateAborted, None)?;
        }
        Ok(())
    }

    /// Aborts whatever the thread at `scope` waits on, innermost first.
    fn abort(&mut self, scope: &[u32]) -> Step<()> {
        let phase = match self.state.thread(scope) {
            Some(Thread::Running(run)) => Shallow::of(&run.phase),
            _ => return Ok(()),
        };
        let state = self.state_def(scope)?;
        match phase {
            Shallow::Parallel => {
                if let StateKind::Parallel(p) = &state.kind {
                    for index in 0..p.branches.len() {
                        self.abort(&child(scope, index))?;
                    }
                }
            }
            Shallow::Map => {
                let running = self
                    .map_iterations(scope, IterationOutcome::Running)
                    .unwrap_or_default();
                self.abort_map_iterations(scope, state, running)?;
            }
            Shallow::MapRun(_) => {
                self.emit(scope, EventDetails::MapRunAborted, None)?;
            }
            _ => {}
        }
        if let Some(details) = aborted_details(state) {
            self.emit(scope, details, None)?;
        }
        Ok(())
    }
}

/// The shape of a phase, without its payload (for matching while `self` is borrowed mutably).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shallow {
    Entered,
    Waiting(u32),
    Task,
    Backoff(u32),
    TaskSucceeded,
    Failed,
    Parallel,
    Map,
    MapRun(u32),
    MapRunEnded,
    Finishing,
}

impl Shallow {
    fn of(phase: &Phase) -> Self {
        match phase {
            Phase::Entered => Shallow::Entered,
            Phase::Waiting { timer } => Shallow::Waiting(timer.id),
            Phase::Task(_) => Shallow::Task,
            Phase::Backoff { timer } => Shallow::Backoff(timer.id),
            Phase::TaskSucceeded { .. } => Shallow::TaskSucceeded,
            Phase::Failed { .. } => Shallow::Failed,
            Phase::Parallel { .. } => Shallow::Parallel,
            Phase::Map { .. } => Shallow::Map,
            Phase::MapRun { task_id, .. } => Shallow::MapRun(*task_id),
            Phase::MapRunEnded { .. } => Shallow::MapRunEnded,
            Phase::Finishing => Shallow::Finishing,
        }
    }
}

/// Visits every running state of the tree (Map iterations only while running).
fn walk(thread: &Thread, scope: &mut Vec<u32>, visit: &mut dyn FnMut(&[u32], &Phase)) {
    let Thread::Running(run) = thread else { return };
    visit(scope, &run.phase);
    match &run.phase {
        Phase::Parallel { branches } => {
            for (index, branch) in branches.iter().enumerate() {
                scope.push(index as u32);
                walk(branch, scope, visit);
                scope.pop();
            }
        }
        Phase::Map { iterations, .. } => {
            for (index, iteration) in iterations.iter().enumerate() {
                if iteration.outcome == IterationOutcome::Running {
                    scope.push(index as u32);
                    walk(&iteration.thread, scope, visit);
                    scope.pop();
                }
            }
        }
        _ => {}
    }
}

impl Decider<'_, '_> {
    /// Appends `ExecutionRedriven` (re-arming the execution timeout, never past the open-time
    /// limit counted from the start) and runs again whatever did not succeed.
    fn redrive(&mut self) -> Step<()> {
        let info = self
            .state
            .info
            .as_ref()
            .ok_or_else(|| inconsistent("redrive of an execution that never started"))?;
        let open_ms_max = self.options.execution_open_ms_max;
        let deadline_ms = info.start_ms.saturating_add(open_ms_max);
        let timeout_ms = match self.def.timeout_seconds {
            Some(seconds) => seconds.saturating_mul(1000).min(open_ms_max),
            None => open_ms_max,
        };
        let timer = TimerArm {
            due_ms: self.now_ms.saturating_add(timeout_ms).min(deadline_ms),
            owner: Vec::new(),
            purpose: TimerPurpose::ExecutionTimeout,
        };
        let details = crate::history::ExecutionRedriven {
            redrive_count: self.state.redrive_count() + 1,
        };
        self.emit(&[], EventDetails::ExecutionRedriven(details), Some(timer))?;
        self.advance_root()
    }
}
