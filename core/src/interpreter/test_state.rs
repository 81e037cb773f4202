//! test_state: one state run on its own, as AWS's `TestState` runs it: a state, an input,
//! optional variables, Context object and mocked answer -> the state's output, error, next
//! state and status, with each intermediate value of its data flow (the inspection data).
//!
//! How: the same pieces the interpreter runs, in the same order, called one by one so that each
//! value between two steps can be shown. The data-flow steps are `asl::DataFlow`'s and
//! `asl::CatchFlow`'s; `Assign` is `decide::assigned_variables`; a Choice is
//! `states::choice::choose`; a Fail's error and cause are `states::fail::fail_error_cause`;
//! Retry and Catch match with `decide::handles` and wait `decide::retry_delay_ms`. Nothing here
//! evaluates a path, template or expression itself.
//!
//! What runs, per state type:
//! - Pass, Succeed, Choice, Fail: their whole data flow; a mock is refused (AWS refuses it).
//! - Wait: its data flow, without waiting (AWS answers at once); its `Seconds`/`Timestamp`
//!   fields are not evaluated.
//! - Task: with a mock, the mock is its result or error; without one, the caller's `call`
//!   answers (the engine calls the handler registered for the resource). An activity,
//!   `.sync` or `.waitForTaskToken` Task needs a mock, as on AWS. With a mocked error, a
//!   Retrier that matches and has attempts left (after `retrier_retry_count` retries) makes the
//!   answer `RETRIABLE` with its index and backoff; else a Catcher that matches makes it
//!   `CAUGHT_ERROR` with the Catcher's `Next` and output; else `FAILED`.
//! - Parallel and Map: only with a mock (AWS refuses them without): the mock is the whole
//!   state's result (an array, one entry per branch for a Parallel). The branches and
//!   iterations do not run; a Map's inspection shows its items and each iteration's input, a
//!   Parallel's only its input and the steps after its result (as AWS shows it).
//!
//! Invariants: nothing is written or kept; the time and entropy come from the caller. The
//! answer is the one the interpreter would reach for the same state, input, variables and
//! answer (`tests` compare them for each state type).
//! Must not: do I/O, read a clock or draw randomness of its own; evaluate any ASL field by
//! code of its own instead of the seam's.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::decide::{
    assigned_variables, handles, output_too_large, retriers_and_catchers, retry_delay_ms,
    states::{choice::choose, fail::fail_error_cause, map::items_not_array},
};
use super::io::{context_with, error_output, retries};
use super::state::ExecutionInfo;
use crate::asl::{
    CountField, DataFlow, Env, IntegrationPattern, MapState, PercentageField, ResourceKind, State,
    StateKind, StateMachine, TaskState, Transition,
};
use crate::history::{AssignedVariables, ErrorCause};
use crate::paths::{Entropy, StatesError, Variables};

/// The name a single state's definition is tested under (AWS's: its diagnostics point at
/// `/States/StateName/...` and its Context object's `State.Name` is `StateName`).
pub const SINGLE_STATE_NAME: &str = "StateName";

/// One test of one state.
pub struct TestState<'a> {
    /// The machine holding the state (a single state's definition is wrapped into one by
    /// [`machine_of_state`]).
    pub machine: &'a StateMachine,
    /// The state to run, one of the machine's top-level states.
    pub state_name: &'a str,
    /// The state's raw input.
    pub input: Value,
    /// The variables in scope as the state is entered.
    pub variables: Variables,
    /// The Context object the state sees (`$$`, `$states.context`); see [`default_context`].
    pub context: Value,
    /// The mocked answer of a Task, Parallel or Map.
    pub mock: Option<Mock>,
    /// How many times the Retrier that matches the mocked error has already retried
    /// (`stateConfiguration.retrierRetryCount`).
    pub retrier_retry_count: u32,
    /// The time the state runs at, in ms since the epoch (`$now()`, `States.UUID` need none,
    /// but JSONata's clock functions read it).
    pub now_ms: u64,
}

/// A mocked answer (`mock.result` or `mock.errorOutput`).
#[derive(Debug, Clone, PartialEq)]
pub enum Mock {
    /// The state's result.
    Result(Value),
    /// The state's failure.
    Error(ErrorCause),
}

/// What a Task without a mock asks its caller to run.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskCall<'a> {
    /// The Task state's name.
    pub state_name: &'a str,
    /// The `Resource` ARN as written.
    pub resource: &'a str,
    /// The task's input (after InputPath and Parameters, or Arguments).
    pub input: &'a Value,
    /// The Context object the task sees.
    pub context: &'a Value,
}

/// The caller's answer to a [`TaskCall`]: `None` when nothing can run the resource.
pub type TaskAnswer = Option<Result<Value, ErrorCause>>;

/// The status of a tested state (AWS's `TestExecutionStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestStatus {
    /// The state finished: `output` and, unless it ends its thread, `next_state`.
    Succeeded,
    /// The state failed: `error` and `cause`.
    Failed,
    /// The state failed and a Retrier would run it again.
    Retriable,
    /// The state failed and a Catcher took the error: `next_state` is its `Next`.
    CaughtError,
}

impl TestStatus {
    /// The AWS name (`SUCCEEDED`, `FAILED`, `RETRIABLE`, `CAUGHT_ERROR`).
    pub fn aws_name(self) -> &'static str {
        match self {
            TestStatus::Succeeded => "SUCCEEDED",
            TestStatus::Failed => "FAILED",
            TestStatus::Retriable => "RETRIABLE",
            TestStatus::CaughtError => "CAUGHT_ERROR",
        }
    }
}

/// How a handled error was handled (`inspectionData.errorDetails`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorDetails {
    /// The index of the Retrier that matched the error.
    pub retry_index: Option<usize>,
    /// The wait before the retry, in whole seconds (only when the state is `RETRIABLE`),
    /// before any jitter.
    pub retry_backoff_interval_seconds: Option<u64>,
    /// The index of the Catcher that took the error.
    pub catch_index: Option<usize>,
}

/// Each value between two steps of the state's data flow (`inspectionData`); a step the state
/// does not reach or does not have is `None`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Inspection {
    /// The raw input.
    pub input: Value,
    /// After `InputPath` (JSONPath).
    pub after_input_path: Option<Value>,
    /// After `Parameters` (JSONPath; a Pass's result without `Result`).
    pub after_parameters: Option<Value>,
    /// After `Arguments` (JSONata Task and Parallel).
    pub after_arguments: Option<Value>,
    /// The result (a Task's answer, a Parallel's or Map's mock, a Pass's `Result`).
    pub result: Option<Value>,
    /// After `ResultSelector` (JSONPath).
    pub after_result_selector: Option<Value>,
    /// After `ResultPath` (JSONPath).
    pub after_result_path: Option<Value>,
    /// A Map's items (after `ItemsPath` or `Items`).
    pub after_items_path: Option<Value>,
    /// A Map's input of each iteration (after `ItemSelector`).
    pub after_item_selector: Option<Vec<Value>>,
    /// A Map's literal `MaxConcurrency`.
    pub max_concurrency: Option<u64>,
    /// A Map's literal `ToleratedFailureCount`.
    pub tolerated_failure_count: Option<u64>,
    /// A Map's literal `ToleratedFailurePercentage`.
    pub tolerated_failure_percentage: Option<f64>,
    /// The variables after the state: those given, with what the state (or the Catcher
    /// taken) assigned.
    pub variables: BTreeMap<String, Value>,
    /// How a failure was handled.
    pub error_details: Option<ErrorDetails>,
}

/// The answer of one test.
#[derive(Debug, Clone, PartialEq)]
pub struct TestStateAnswer {
    /// How the state ended.
    pub status: TestStatus,
    /// Its output (`SUCCEEDED`, `CAUGHT_ERROR`).
    pub output: Option<Value>,
    /// The error name (`FAILED`, `RETRIABLE`, `CAUGHT_ERROR`).
    pub error: Option<String>,
    /// The error's cause.
    pub cause: Option<String>,
    /// The next state (a `Next`, a Choice's pick, a Catcher's `Next`); `None` at an end.
    pub next_state: Option<String>,
    /// The intermediate values.
    pub inspection: Inspection,
}

/// How much of the answer AWS shows (`inspectionLevel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InspectionLevel {
    /// `INFO` (the default): status, output, error, cause and next state.
    #[default]
    Info,
    /// `DEBUG`: also the inspection data.
    Debug,
    /// `TRACE`: also an HTTP Task's request and response (statelog runs no HTTP Task, so the
    /// same as `DEBUG`).
    Trace,
}

impl InspectionLevel {
    /// The level named `name` (`INFO`, `DEBUG`, `TRACE`).
    pub fn from_aws_name(name: &str) -> Option<Self> {
        match name {
            "INFO" => Some(InspectionLevel::Info),
            "DEBUG" => Some(InspectionLevel::Debug),
            "TRACE" => Some(InspectionLevel::Trace),
            _ => None,
        }
    }
}

impl TestStateAnswer {
    /// The answer as AWS's `TestState` renders it: every JSON value as compact JSON text,
    /// absent fields left out, `inspectionData` from `DEBUG` on.
    pub fn to_aws_json(&self, level: InspectionLevel) -> Value {
        self.render(level, &|value| {
            Value::String(crate::paths::to_json_text(value))
        })
    }

    /// The answer with its inspection data, as [`TestStateAnswer::to_aws_json`] at `DEBUG`
    /// but with each JSON value as JSON rather than text, for people to read.
    pub fn to_readable_json(&self) -> Value {
        self.render(InspectionLevel::Debug, &Value::clone)
    }

    fn render(&self, level: InspectionLevel, text: &dyn Fn(&Value) -> Value) -> Value {
        let mut answer = Map::new();
        answer.insert("status".into(), json!(self.status.aws_name()));
        if let Some(output) = &self.output {
            answer.insert("output".into(), text(output));
        }
        if let Some(error) = &self.error {
            answer.insert("error".into(), json!(error));
        }
        if let Some(cause) = &self.cause {
            answer.insert("cause".into(), json!(cause));
        }
        if let Some(next) = &self.next_state {
            answer.insert("nextState".into(), json!(next));
        }
        if level == InspectionLevel::Info {
            return Value::Object(answer);
        }
        let shown = &self.inspection;
        let mut data = Map::new();
        data.insert("input".into(), text(&shown.input));
        let values = [
            ("afterInputPath", &shown.after_input_path),
            ("afterParameters", &shown.after_parameters),
            ("afterArguments", &shown.after_arguments),
            ("result", &shown.result),
            ("afterResultSelector", &shown.after_result_selector),
            ("afterResultPath", &shown.after_result_path),
            ("afterItemsPath", &shown.after_items_path),
        ];
        for (name, value) in values {
            if let Some(value) = value {
                data.insert(name.into(), text(value));
            }
        }
        if let Some(inputs) = &shown.after_item_selector {
            data.insert(
                "afterItemSelector".into(),
                text(&Value::from(inputs.clone())),
            );
        }
        if let Some(count) = shown.max_concurrency {
            data.insert("maxConcurrency".into(), json!(count));
        }
        if let Some(count) = shown.tolerated_failure_count {
            data.insert("toleratedFailureCount".into(), json!(count));
        }
        if let Some(percentage) = shown.tolerated_failure_percentage {
            data.insert("toleratedFailurePercentage".into(), json!(percentage));
        }
        if !shown.variables.is_empty() {
            let variables: Map<String, Value> = shown
                .variables
                .iter()
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect();
            data.insert("variables".into(), text(&Value::Object(variables)));
        }
        if let Some(details) = &shown.error_details {
            let mut rendered = Map::new();
            if let Some(index) = details.retry_index {
                rendered.insert("retryIndex".into(), json!(index));
            }
            if let Some(seconds) = details.retry_backoff_interval_seconds {
                rendered.insert("retryBackoffIntervalSeconds".into(), json!(seconds));
            }
            if let Some(index) = details.catch_index {
                rendered.insert("catchIndex".into(), json!(index));
            }
            data.insert("errorDetails".into(), Value::Object(rendered));
        }
        answer.insert("inspectionData".into(), Value::Object(data));
        Value::Object(answer)
    }
}

/// Why a test cannot run at all (the request is wrong, not the state's run).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// `stateName` names no top-level state of the machine.
    #[error("State not found in definition: '{name}'")]
    StateNotFound {
        /// The name asked for.
        name: String,
    },
    /// A mock given for a state type that takes none (Pass, Wait, Choice, Succeed, Fail).
    #[error("State type '{state_type}' is not supported when a mock is specified")]
    MockNotAccepted {
        /// The state's type.
        state_type: &'static str,
    },
    /// A Parallel or Map state without a mock (its branches or iterations are not run).
    #[error("TestState does not run a {state_type} state's {what}: give a mock of its result")]
    MockRequired {
        /// `Parallel` or `Map`.
        state_type: &'static str,
        /// `branches` or `iterations`.
        what: &'static str,
    },
    /// An activity, `.sync` or `.waitForTaskToken` Task without a mock.
    #[error(
        "The Task state '{state}' uses {kind} ({resource}), which TestState runs only with a mock"
    )]
    TaskKindNeedsMock {
        /// The state.
        state: String,
        /// The resource.
        resource: String,
        /// `an activity`, `the .sync pattern`, ...
        kind: &'static str,
    },
    /// A Task without a mock whose resource nothing can run.
    #[error("The Task state '{state}' has no handler for its resource {resource}: give a mock or register a handler")]
    TaskNeedsMock {
        /// The state.
        state: String,
        /// The resource.
        resource: String,
    },
    /// A Parallel's or Map's mocked result that is not an array.
    #[error("Mocked result must be an array.")]
    MockResultNotArray,
    /// A Distributed Map whose items come from an `ItemReader` (AWS takes them from
    /// `mapItemReaderData`, which statelog does not read yet).
    #[error("TestState does not read a Distributed Map's ItemReader (mapItemReaderData is not supported yet)")]
    ItemReaderNotRead,
    /// A Parallel's mocked result with another count of entries than it has branches.
    #[error("Mocked result must contain the same number of items as number of Parallel branches ({branches}, not {results}).")]
    MockBranchCountMismatch {
        /// The Parallel's branches.
        branches: usize,
        /// The mocked result's entries.
        results: usize,
    },
}

/// The machine a single state's definition is tested in: `{"StartAt": "StateName", "States":
/// {"StateName": state}}`, with a `Succeed` state for each name the state may go to (`Next`,
/// `Default`, a Choice rule's or a Catcher's `Next`), so that it validates as a machine.
/// `state` is returned unchanged inside; a value that is not an object is wrapped all the same
/// (the parser then says what is wrong with it).
pub fn machine_of_state(state: Value) -> Value {
    let mut targets: Vec<String> = Vec::new();
    if let Value::Object(fields) = &state {
        let mut add = |name: Option<&Value>| {
            if let Some(Value::String(name)) = name {
                if name != SINGLE_STATE_NAME && !targets.contains(name) {
                    targets.push(name.clone());
                }
            }
        };
        add(fields.get("Next"));
        add(fields.get("Default"));
        for list in ["Choices", "Catch"] {
            if let Some(Value::Array(entries)) = fields.get(list) {
                for entry in entries {
                    add(entry.get("Next"));
                }
            }
        }
    }
    let mut states = Map::new();
    states.insert(SINGLE_STATE_NAME.to_string(), state);
    for target in targets {
        states.insert(target, json!({"Type": "Succeed"}));
    }
    json!({"StartAt": SINGLE_STATE_NAME, "States": states})
}

/// Who the tested state runs as, for its default Context object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestExecution<'a> {
    /// `$$.Execution.Id`.
    pub execution_arn: &'a str,
    /// `$$.StateMachine.Id`.
    pub state_machine_arn: &'a str,
    /// `$$.Execution.RoleArn`.
    pub role_arn: &'a str,
}

/// The Context object of `state_name` as it runs first in an execution started at `now_ms`
/// with `input` (the interpreter's own, with `State.RetryCount` for the types that retry).
pub fn default_context(
    machine: &StateMachine,
    state_name: &str,
    execution: &TestExecution<'_>,
    input: &Value,
    retry_count: u32,
    now_ms: u64,
) -> Value {
    let info = ExecutionInfo {
        input: Arc::new(input.clone()),
        execution_arn: execution.execution_arn.to_string(),
        state_machine_arn: execution.state_machine_arn.to_string(),
        role_arn: execution.role_arn.to_string(),
        start_ms: now_ms,
        redrive_count: 0,
    };
    let retry_count = machine
        .states
        .get(state_name)
        .filter(|state| retries(state))
        .map(|_| retry_count);
    context_with(&info, state_name, now_ms, retry_count)
}

/// Runs the state `test.state_name` of `test.machine` once. `call` answers a Task without a
/// mock. Errors only for a request that cannot run; every failure of the state itself is in
/// the answer.
pub fn test_state(
    test: TestState<'_>,
    entropy: &mut dyn Entropy,
    call: &mut dyn FnMut(TaskCall<'_>) -> TaskAnswer,
) -> Result<TestStateAnswer, Refusal> {
    let state = test
        .machine
        .states
        .get(test.state_name)
        .ok_or_else(|| Refusal::StateNotFound {
            name: test.state_name.to_string(),
        })?;
    let accepts_mock = matches!(
        state.kind,
        StateKind::Task(_) | StateKind::Parallel(_) | StateKind::Map(_)
    );
    if test.mock.is_some() && !accepts_mock {
        return Err(Refusal::MockNotAccepted {
            state_type: state.type_name(),
        });
    }
    let mut run = Run {
        state,
        input: Arc::new(test.input),
        context: test.context,
        variables: test.variables,
        env_now_ms: test.now_ms,
        jsonata: test.machine.jsonata.as_ref(),
        entropy,
        retrier_retry_count: test.retrier_retry_count,
        inspection: Inspection::default(),
    };
    run.inspection.input = Value::clone(&run.input);
    let ended = match &state.kind {
        StateKind::Pass(pass) => run.pass(&pass.next),
        StateKind::Succeed => run.no_result(None),
        StateKind::Wait(wait) => run.no_result(next_of(&wait.next)),
        StateKind::Choice(choice) => run.choice(choice),
        StateKind::Fail(fail) => run.fail(fail),
        StateKind::Task(task) => run.task(task, test.mock, call)?,
        StateKind::Parallel(parallel) => {
            let Some(mock) = test.mock else {
                return Err(Refusal::MockRequired {
                    state_type: "Parallel",
                    what: "branches",
                });
            };
            if let Mock::Result(result) = &mock {
                match result {
                    Value::Array(results) if results.len() == parallel.branches.len() => {}
                    Value::Array(results) => {
                        return Err(Refusal::MockBranchCountMismatch {
                            branches: parallel.branches.len(),
                            results: results.len(),
                        })
                    }
                    _ => return Err(Refusal::MockResultNotArray),
                }
            }
            run.parallel(&parallel.next, mock)
        }
        StateKind::Map(map) => {
            if map
                .distributed
                .as_ref()
                .is_some_and(|d| d.item_reader.is_some())
            {
                return Err(Refusal::ItemReaderNotRead);
            }
            let Some(mock) = test.mock else {
                return Err(Refusal::MockRequired {
                    state_type: "Map",
                    what: "iterations",
                });
            };
            if matches!(&mock, Mock::Result(result) if !result.is_array()) {
                return Err(Refusal::MockResultNotArray);
            }
            run.map(map, mock)
        }
    };
    // An output larger than a payload may be fails the state, as it fails an execution.
    let ended = match &ended.output {
        Some(output) if ended.status == TestStatus::Succeeded => {
            match output_too_large(&state.name, output) {
                Some(error) => Ended::failed(error),
                None => ended,
            }
        }
        _ => ended,
    };
    let mut inspection = run.inspection;
    inspection.variables = run
        .variables
        .iter()
        .map(|(name, value)| (name.to_string(), value.clone()))
        .collect();
    Ok(TestStateAnswer {
        status: ended.status,
        output: ended.output,
        error: ended.error.as_ref().and_then(|e| e.error.clone()),
        cause: ended.error.and_then(|e| e.cause),
        next_state: ended.next_state,
        inspection,
    })
}

/// How the run ended, before the inspection is attached.
struct Ended {
    status: TestStatus,
    output: Option<Value>,
    error: Option<ErrorCause>,
    next_state: Option<String>,
}

impl Ended {
    fn failed(error: ErrorCause) -> Self {
        Ended {
            status: TestStatus::Failed,
            output: None,
            error: Some(error),
            next_state: None,
        }
    }

    fn succeeded(output: Value, next_state: Option<String>) -> Self {
        Ended {
            status: TestStatus::Succeeded,
            output: Some(output),
            error: None,
            next_state,
        }
    }
}

fn next_of(transition: &Transition) -> Option<String> {
    match transition {
        Transition::Next(name) => Some(name.clone()),
        Transition::End => None,
    }
}

fn step_error(error: StatesError) -> ErrorCause {
    ErrorCause::new(error.error, error.cause)
}

/// One state's run: its values and what it has shown so far.
struct Run<'r> {
    state: &'r State,
    input: Arc<Value>,
    context: Value,
    variables: Variables,
    env_now_ms: u64,
    jsonata: Option<&'r crate::asl::JsonataRuntime>,
    entropy: &'r mut dyn Entropy,
    retrier_retry_count: u32,
    inspection: Inspection,
}

/// The [`Env`] of one step of a [`Run`], borrowing its fields one by one (so the run's
/// inspection stays writable beside it).
macro_rules! run_env {
    ($run:ident, $variables:expr) => {
        Env {
            now_ms: $run.env_now_ms,
            entropy: &mut *$run.entropy,
            variables: $variables,
            jsonata: $run.jsonata,
        }
    };
}

impl Run<'_> {
    fn flow(&self) -> &DataFlow {
        &self.state.data_flow
    }

    fn is_json_path(&self) -> bool {
        self.flow().as_json_path().is_some()
    }

    /// Sets what `assigned` assigns on top of the variables given.
    fn assign(&mut self, assigned: Option<AssignedVariables>) {
        for (name, text) in assigned.into_iter().flat_map(|a| a.variables) {
            let value = serde_json::from_str(&text)
                .expect("an assigned value is compact JSON text the core rendered");
            self.variables.insert(name, value);
        }
    }

    /// Pass: its result (`Result`, `Parameters` or the effective input), `Assign` on it, then
    /// `ResultPath` and `OutputPath` (JSONata: `Output`).
    fn pass(&mut self, next: &Transition) -> Ended {
        let variables = self.variables.clone();
        let flow = &self.state.data_flow;
        let fixed = flow.as_json_path().and_then(|f| f.result.clone());
        let mut env = run_env!(self, &variables);
        let mut shown = Inspection::default();
        let finished = (|| {
            let effective = flow.effective_input(&self.input, &self.context, &variables)?;
            if fixed.is_none() && flow.as_json_path().is_some() {
                shown.after_input_path = Some(effective.clone().into_owned());
            }
            let discarded = flow.pass_result_is_discarded();
            let result = if discarded && self.state.assign.is_some() {
                effective.into_owned()
            } else {
                flow.pass_result(effective, &self.context, &mut env)?
            };
            let on = flow.assign_input(&result, &self.input, None, &self.context);
            let assigned =
                assigned_variables(self.state.assign.as_ref(), &on, &self.context, &mut env)?;
            if flow.as_json_path().is_some() {
                match &fixed {
                    Some(value) => shown.result = Some(value.clone()),
                    None if !discarded => shown.after_parameters = Some(result.clone()),
                    None => {}
                }
                shown.after_result_selector = Some(result.clone());
                let placed = flow.place_result(&self.input, result)?;
                shown.after_result_path = Some(placed.clone());
                let output = flow.output(placed, &self.context, &mut env)?;
                return Ok((output, assigned));
            }
            let output = flow.result_output(&self.input, result, &self.context, &mut env)?;
            Ok((output, assigned))
        })();
        self.keep(shown);
        match finished {
            Ok((output, assigned)) => {
                self.assign(assigned);
                Ended::succeeded(output, next_of(next))
            }
            Err(error) => Ended::failed(step_error(error)),
        }
    }

    /// Succeed and Wait: `InputPath` and `OutputPath` (JSONata: `Output`).
    fn no_result(&mut self, next_state: Option<String>) -> Ended {
        let variables = self.variables.clone();
        let flow = &self.state.data_flow;
        let mut env = run_env!(self, &variables);
        let mut shown = Inspection::default();
        let finished = (|| {
            let effective = flow.effective_input(&self.input, &self.context, &variables)?;
            if flow.as_json_path().is_some() {
                shown.after_input_path = Some(effective.clone().into_owned());
            }
            let on = flow.assign_input(&effective, &self.input, None, &self.context);
            let assigned =
                assigned_variables(self.state.assign.as_ref(), &on, &self.context, &mut env)?;
            let output = flow.output(effective.into_owned(), &self.context, &mut env)?;
            Ok((output, assigned))
        })();
        self.keep(shown);
        match finished {
            Ok((output, assigned)) => {
                self.assign(assigned);
                Ended::succeeded(output, next_state)
            }
            Err(error) => Ended::failed(step_error(error)),
        }
    }

    fn choice(&mut self, choice: &crate::asl::ChoiceState) -> Ended {
        let variables = self.variables.clone();
        if self.is_json_path() {
            if let Ok(effective) =
                self.flow()
                    .effective_input(&self.input, &self.context, &variables)
            {
                self.inspection.after_input_path = Some(effective.into_owned());
            }
        }
        let state = self.state;
        let mut env = run_env!(self, &variables);
        match choose(state, choice, &self.input, &self.context, &mut env) {
            Ok(chosen) => {
                let next = chosen.next.to_string();
                let output = Value::clone(&chosen.output);
                self.assign(chosen.assigned);
                Ended::succeeded(output, Some(next))
            }
            Err(error) => Ended::failed(step_error(error)),
        }
    }

    fn fail(&mut self, fail: &crate::asl::FailState) -> Ended {
        let variables = self.variables.clone();
        if self.is_json_path() {
            self.inspection.after_input_path = Some(Value::clone(&self.input));
        }
        let state = self.state;
        let mut env = run_env!(self, &variables);
        match fail_error_cause(state, fail, &self.input, &self.context, &mut env) {
            Ok(error) => Ended::failed(error),
            Err(error) => Ended::failed(step_error(error)),
        }
    }

    /// Task: the task's input, its answer (mocked or called), then its result's data flow.
    fn task(
        &mut self,
        task: &TaskState,
        mock: Option<Mock>,
        call: &mut dyn FnMut(TaskCall<'_>) -> TaskAnswer,
    ) -> Result<Ended, Refusal> {
        let needs_mock = match &task.resource.kind {
            ResourceKind::Activity { .. } => Some("an activity"),
            ResourceKind::Integration { pattern, .. } => match pattern {
                IntegrationPattern::RequestResponse => None,
                IntegrationPattern::Sync | IntegrationPattern::Sync2 => {
                    Some("the .sync integration pattern")
                }
                IntegrationPattern::WaitForTaskToken => {
                    Some("the .waitForTaskToken integration pattern")
                }
            },
            ResourceKind::Other { .. } => None,
        };
        if let (None, Some(kind)) = (&mock, needs_mock) {
            return Err(Refusal::TaskKindNeedsMock {
                state: self.state.name.clone(),
                resource: task.resource.raw.clone(),
                kind,
            });
        }
        let parameters = match self.arguments() {
            Ok(parameters) => parameters,
            Err(error) => return Ok(self.failure(step_error(error), true)),
        };
        let answer = match mock {
            Some(Mock::Result(result)) => Ok(result),
            Some(Mock::Error(error)) => Err(error),
            None => {
                let asked = TaskCall {
                    state_name: &self.state.name,
                    resource: &task.resource.raw,
                    input: &parameters,
                    context: &self.context,
                };
                call(asked).ok_or_else(|| Refusal::TaskNeedsMock {
                    state: self.state.name.clone(),
                    resource: task.resource.raw.clone(),
                })?
            }
        };
        Ok(match answer {
            Ok(result) => self.finish(result, next_of(&task.next)),
            Err(error) => self.failure(error, true),
        })
    }

    /// Parallel with a mocked answer: its branches' input, then the mock as its result.
    fn parallel(&mut self, next: &Transition, mock: Mock) -> Ended {
        let ended = match self.arguments() {
            Err(error) => self.failure(step_error(error), true),
            Ok(_) => match mock {
                Mock::Result(result) => self.finish(result, next_of(next)),
                Mock::Error(error) => self.failure(error, true),
            },
        };
        // AWS shows a mocked Parallel's input and the steps after its result, not the
        // branches' input or the mock itself (recorded: `test_io_parallel_state_mock_success`).
        let shown = &mut self.inspection;
        shown.after_input_path = None;
        shown.after_parameters = None;
        shown.after_arguments = None;
        shown.result = None;
        ended
    }

    /// Map with a mocked answer: its items and each iteration's input, then the mock as its
    /// result.
    fn map(&mut self, map: &MapState, mock: Mock) -> Ended {
        self.inspection.max_concurrency = match map.max_concurrency {
            Some(CountField::Literal(count)) => Some(count),
            _ => None,
        };
        self.inspection.tolerated_failure_count = match map.tolerated_failure_count {
            Some(CountField::Literal(count)) => Some(count),
            _ => None,
        };
        self.inspection.tolerated_failure_percentage = match map.tolerated_failure_percentage {
            Some(PercentageField::Literal(percentage)) => Some(percentage),
            _ => None,
        };
        let variables = self.variables.clone();
        let flow = &self.state.data_flow;
        let mut env = run_env!(self, &variables);
        let mut shown = Inspection::default();
        let prepared = (|| {
            let effective = flow.effective_input(&self.input, &self.context, &variables)?;
            if flow.as_json_path().is_some() {
                shown.after_input_path = Some(effective.clone().into_owned());
            }
            let items = flow.items(&effective, &self.context, &mut env)?;
            let Value::Array(list) = &*items else {
                return Err(items_not_array(flow, &items));
            };
            shown.after_items_path = Some(Value::clone(&items));
            let mut inputs = Vec::with_capacity(list.len());
            for (index, item) in list.iter().enumerate() {
                inputs.push(flow.item_input(
                    &effective,
                    item.clone(),
                    index,
                    &self.context,
                    &mut env,
                )?);
            }
            shown.after_item_selector = Some(inputs);
            Ok(())
        })();
        self.keep(shown);
        if let Err(error) = prepared {
            return self.failure(step_error(error), true);
        }
        match mock {
            Mock::Result(result) => self.finish(result, next_of(&map.next)),
            Mock::Error(error) => self.failure(error, true),
        }
    }

    /// A Task's or Parallel's input: `InputPath` then `Parameters` (JSONata: `Arguments`).
    fn arguments(&mut self) -> Result<Value, StatesError> {
        let variables = self.variables.clone();
        let flow = &self.state.data_flow;
        let mut env = run_env!(self, &variables);
        let effective = flow.effective_input(&self.input, &self.context, &variables)?;
        let json_path = flow.as_json_path().is_some();
        if json_path {
            self.inspection.after_input_path = Some(effective.clone().into_owned());
        }
        let parameters = flow.parameters(effective, &self.context, &mut env)?;
        if json_path {
            self.inspection.after_parameters = Some(parameters.clone());
        } else {
            self.inspection.after_arguments = Some(parameters.clone());
        }
        Ok(parameters)
    }

    /// A Task's, Parallel's or Map's `result`: `ResultSelector`, `Assign`, `ResultPath`,
    /// `OutputPath` (JSONata: `Assign`, `Output`). A failure there is caught, not retried.
    fn finish(&mut self, result: Value, next_state: Option<String>) -> Ended {
        self.inspection.result = Some(result.clone());
        let variables = self.variables.clone();
        let flow = &self.state.data_flow;
        let mut env = run_env!(self, &variables);
        let mut shown = Inspection::default();
        let finished = (|| {
            let selected = flow.select_result(result, &self.context, &mut env)?;
            let on = flow.assign_input(&selected, &self.input, Some(&selected), &self.context);
            let assigned =
                assigned_variables(self.state.assign.as_ref(), &on, &self.context, &mut env)?;
            if flow.as_json_path().is_some() {
                shown.after_result_selector = Some(selected.clone());
                let placed = flow.place_result(&self.input, selected)?;
                shown.after_result_path = Some(placed.clone());
                let output = flow.output(placed, &self.context, &mut env)?;
                return Ok((output, assigned));
            }
            let output = flow.selected_output(&self.input, selected, &self.context, &mut env)?;
            Ok((output, assigned))
        })();
        self.keep(shown);
        match finished {
            Ok((output, assigned)) => {
                self.assign(assigned);
                Ended::succeeded(output, next_state)
            }
            Err(error) => self.failure(step_error(error), false),
        }
    }

    /// The state failed with `error`: a Retrier that matches (when `retry` may) and has
    /// attempts left makes it `RETRIABLE`; else a Catcher that matches takes it; else `FAILED`.
    fn failure(&mut self, error: ErrorCause, retry: bool) -> Ended {
        let (retriers, catchers) = retriers_and_catchers(self.state);
        let name = error.error.clone().unwrap_or_default();
        let mut details = ErrorDetails::default();
        if retry {
            if let Some(index) = retriers
                .iter()
                .position(|r| handles(&r.error_equals, r.matches(&name), &name))
            {
                details.retry_index = Some(index);
                let retrier = &retriers[index];
                let attempts = self.retrier_retry_count as usize;
                if attempts < retrier.max_attempts as usize {
                    let delay_ms = retry_delay_ms(retrier, attempts, u64::MAX);
                    details.retry_backoff_interval_seconds = Some(delay_ms / 1000);
                    self.inspection.error_details = Some(details);
                    return Ended {
                        status: TestStatus::Retriable,
                        output: None,
                        error: Some(error),
                        next_state: None,
                    };
                }
            }
        }
        let Some(index) = catchers
            .iter()
            .position(|c| handles(&c.error_equals, c.matches(&name), &name))
        else {
            if details != ErrorDetails::default() {
                self.inspection.error_details = Some(details);
            }
            return Ended::failed(error);
        };
        details.catch_index = Some(index);
        self.inspection.error_details = Some(details);
        let catcher = &catchers[index];
        // The state's own Assign is skipped: the Catcher's applies, on the error output.
        let variables = self.variables.clone();
        let mut env = run_env!(self, &variables);
        let shown = error_output(&error);
        let on = catcher
            .flow
            .assign_input(&self.input, &shown, &self.context);
        let caught = assigned_variables(catcher.assign.as_ref(), &on, &self.context, &mut env)
            .and_then(|assigned| {
                let output =
                    catcher
                        .flow
                        .output(&self.input, shown.clone(), &self.context, &mut env)?;
                Ok((output, assigned))
            });
        match caught {
            Ok((output, assigned)) => {
                self.assign(assigned);
                Ended {
                    status: TestStatus::CaughtError,
                    output: Some(output),
                    error: Some(error),
                    next_state: Some(catcher.next.clone()),
                }
            }
            Err(error) => Ended::failed(step_error(error)),
        }
    }

    /// Keeps the values a step showed (set fields only).
    fn keep(&mut self, shown: Inspection) {
        let kept = &mut self.inspection;
        let fields = [
            (&mut kept.after_input_path, shown.after_input_path),
            (&mut kept.after_parameters, shown.after_parameters),
            (&mut kept.result, shown.result),
            (&mut kept.after_result_selector, shown.after_result_selector),
            (&mut kept.after_result_path, shown.after_result_path),
            (&mut kept.after_items_path, shown.after_items_path),
        ];
        for (field, value) in fields {
            if value.is_some() {
                *field = value;
            }
        }
        if shown.after_item_selector.is_some() {
            kept.after_item_selector = shown.after_item_selector;
        }
    }
}

#[cfg(test)]
mod tests {
    //! Each state type tested alone: the status, output, next state and each inspection value,
    //! with and without a mock; Retry and Catch on a mocked error; and, for the state types
    //! that need no answer, the same output as the interpreter's run of the same state.

    use super::*;
    use crate::asl::{parse_definition, ValidationOptions};
    use crate::interpreter::{decide, ExecutionState, Options, StartRequest, Trigger};
    use statelog_rng::Rng;

    fn machine_of(state: Value) -> StateMachine {
        let text = machine_of_state(state).to_string();
        parse_definition(&text, &ValidationOptions::default()).expect("a valid state")
    }

    struct Case {
        state: Value,
        input: Value,
        variables: Vec<(&'static str, Value)>,
        mock: Option<Mock>,
        retries: u32,
    }

    fn case(state: Value, input: Value) -> Case {
        Case {
            state,
            input,
            variables: Vec::new(),
            mock: None,
            retries: 0,
        }
    }

    fn run_with(
        case: Case,
        call: &mut dyn FnMut(TaskCall<'_>) -> TaskAnswer,
    ) -> Result<TestStateAnswer, Refusal> {
        let machine = machine_of(case.state);
        let mut variables = Variables::new();
        for (name, value) in case.variables {
            variables.insert(name.to_string(), value);
        }
        let execution = TestExecution {
            execution_arn: "arn:aws:states:us-east-1:0:execution:m:e",
            state_machine_arn: "arn:aws:states:us-east-1:0:stateMachine:m",
            role_arn: "arn:aws:iam::0:role/r",
        };
        let context = default_context(
            &machine,
            SINGLE_STATE_NAME,
            &execution,
            &case.input,
            case.retries,
            1_000,
        );
        let test = TestState {
            machine: &machine,
            state_name: SINGLE_STATE_NAME,
            input: case.input,
            variables,
            context,
            mock: case.mock,
            retrier_retry_count: case.retries,
            now_ms: 1_000,
        };
        test_state(test, &mut Rng::new(7), call)
    }

    fn run(case: Case) -> TestStateAnswer {
        run_with(case, &mut |_| None).expect("the test runs")
    }

    fn error(name: &str, cause: &str) -> Mock {
        Mock::Error(ErrorCause::new(name, cause))
    }

    #[test]
    fn a_pass_shows_each_step_of_its_data_flow() {
        let answer = run(case(
            json!({
                "Type": "Pass",
                "InputPath": "$.initial",
                "Parameters": {"static": "s", "from.$": "$.field"},
                "ResultPath": "$.modified",
                "OutputPath": "$.modified",
                "Next": "After"
            }),
            json!({"initial": {"field": "f"}, "other": 1}),
        ));
        assert_eq!(answer.status, TestStatus::Succeeded);
        assert_eq!(answer.output, Some(json!({"static": "s", "from": "f"})));
        assert_eq!(answer.next_state.as_deref(), Some("After"));
        let shown = &answer.inspection;
        assert_eq!(shown.input, json!({"initial": {"field": "f"}, "other": 1}));
        assert_eq!(shown.after_input_path, Some(json!({"field": "f"})));
        assert_eq!(
            shown.after_parameters,
            Some(json!({"static": "s", "from": "f"}))
        );
        assert_eq!(
            shown.after_result_selector,
            Some(json!({"static": "s", "from": "f"}))
        );
        assert_eq!(
            shown.after_result_path,
            Some(
                json!({"initial": {"field": "f"}, "other": 1, "modified": {"static": "s", "from": "f"}})
            )
        );
        assert_eq!(shown.result, None);
        assert_eq!(answer.error, None);
    }

    #[test]
    fn a_pass_with_a_result_shows_it_and_no_parameters() {
        let answer = run(case(
            json!({"Type": "Pass", "Result": {"k": "v"}, "End": true}),
            json!({"a": 1}),
        ));
        assert_eq!(answer.output, Some(json!({"k": "v"})));
        assert_eq!(answer.next_state, None, "End: no next state");
        assert_eq!(answer.inspection.result, Some(json!({"k": "v"})));
        assert_eq!(answer.inspection.after_parameters, None);
        assert_eq!(answer.inspection.after_input_path, None);
    }

    #[test]
    fn assign_reads_the_given_variables_and_shows_the_variables_after_the_state() {
        let mut test = case(
            json!({
                "Type": "Pass",
                "Parameters": {"seen.$": "$old"},
                "Assign": {"new.$": "$.seen", "old": "replaced"},
                "End": true
            }),
            json!({"a": 5}),
        );
        test.variables = vec![("old", json!("given")), ("kept", json!(1))];
        let answer = run(test);
        assert_eq!(answer.output, Some(json!({"seen": "given"})), "{answer:?}");
        let expected: BTreeMap<String, Value> = [
            ("kept".to_string(), json!(1)),
            ("new".to_string(), json!("given")),
            ("old".to_string(), json!("replaced")),
        ]
        .into_iter()
        .collect();
        assert_eq!(answer.inspection.variables, expected);
    }

    #[test]
    fn a_choice_answers_its_pick_as_next_state() {
        let state = json!({
            "Type": "Choice",
            "Choices": [
                {"Variable": "$.value", "NumericGreaterThanEquals": 20, "Next": "Twenties"}
            ],
            "Default": "Other"
        });
        let picked = run(case(state.clone(), json!({"value": 22})));
        assert_eq!(picked.status, TestStatus::Succeeded);
        assert_eq!(picked.next_state.as_deref(), Some("Twenties"));
        assert_eq!(picked.output, Some(json!({"value": 22})));
        assert_eq!(
            picked.inspection.after_input_path,
            Some(json!({"value": 22}))
        );
        let default = run(case(state, json!({"value": 2})));
        assert_eq!(default.next_state.as_deref(), Some("Other"));
        let unmatched = run(case(
            json!({"Type": "Choice", "Choices": [{"Variable": "$.v", "IsPresent": true, "Next": "X"}]}),
            json!({}),
        ));
        assert_eq!(unmatched.status, TestStatus::Failed);
        assert_eq!(unmatched.error.as_deref(), Some("States.NoChoiceMatched"));
    }

    #[test]
    fn a_fail_answers_its_error_and_cause() {
        let answer = run(case(
            json!({"Type": "Fail", "ErrorPath": "$.e", "Cause": "because"}),
            json!({"e": "Custom.Error"}),
        ));
        assert_eq!(answer.status, TestStatus::Failed);
        assert_eq!(answer.error.as_deref(), Some("Custom.Error"));
        assert_eq!(answer.cause.as_deref(), Some("because"));
        assert_eq!(answer.output, None);
    }

    #[test]
    fn succeed_and_wait_pass_their_input_on_at_once() {
        let succeed = run(case(
            json!({"Type": "Succeed", "InputPath": "$.a", "OutputPath": "$.b"}),
            json!({"a": {"b": 1}}),
        ));
        assert_eq!(succeed.output, Some(json!(1)));
        assert_eq!(succeed.inspection.after_input_path, Some(json!({"b": 1})));
        let wait = run(case(
            json!({"Type": "Wait", "Seconds": 86400, "Next": "Later"}),
            json!({"x": 1}),
        ));
        assert_eq!(wait.status, TestStatus::Succeeded);
        assert_eq!(wait.output, Some(json!({"x": 1})));
        assert_eq!(wait.next_state.as_deref(), Some("Later"));
    }

    #[test]
    fn a_failing_path_fails_the_state_with_states_runtime() {
        let answer = run(case(
            json!({"Type": "Pass", "InputPath": "$.missing", "End": true}),
            json!({}),
        ));
        assert_eq!(answer.status, TestStatus::Failed);
        assert_eq!(answer.error.as_deref(), Some("States.Runtime"));
        assert!(answer
            .cause
            .as_deref()
            .is_some_and(|c| c.contains("$.missing")));
    }

    #[test]
    fn an_output_over_the_payload_limit_fails_with_data_limit_exceeded() {
        let big = "x".repeat(crate::limits::PAYLOAD_SIZE_BYTES_MAX);
        let answer = run(case(json!({"Type": "Pass", "End": true}), json!([big])));
        assert_eq!(answer.status, TestStatus::Failed);
        assert_eq!(answer.error.as_deref(), Some("States.DataLimitExceeded"));
        assert_eq!(answer.output, None);
    }

    const TASK: &str = "arn:aws:states:::lambda:invoke";

    fn task(extra: Value) -> Value {
        let mut state = json!({
            "Type": "Task",
            "Resource": TASK,
            "Parameters": {"FunctionName": "f", "Payload.$": "$"},
            "ResultSelector": {"body.$": "$.Payload"},
            "ResultPath": "$.answer",
            "Next": "After"
        });
        if let (Value::Object(state), Value::Object(extra)) = (&mut state, extra) {
            state.extend(extra);
        }
        state
    }

    #[test]
    fn a_task_with_a_mocked_result_runs_its_result_through_its_data_flow() {
        let mut test = case(task(json!({})), json!({"n": 1}));
        test.mock = Some(Mock::Result(json!({"Payload": "done", "StatusCode": 200})));
        let answer = run(test);
        assert_eq!(answer.status, TestStatus::Succeeded);
        assert_eq!(answer.next_state.as_deref(), Some("After"));
        assert_eq!(
            answer.output,
            Some(json!({"n": 1, "answer": {"body": "done"}}))
        );
        let shown = &answer.inspection;
        assert_eq!(
            shown.after_parameters,
            Some(json!({"FunctionName": "f", "Payload": {"n": 1}}))
        );
        assert_eq!(
            shown.result,
            Some(json!({"Payload": "done", "StatusCode": 200}))
        );
        assert_eq!(shown.after_result_selector, Some(json!({"body": "done"})));
        assert_eq!(
            shown.after_result_path,
            Some(json!({"n": 1, "answer": {"body": "done"}}))
        );
    }

    #[test]
    fn a_task_without_a_mock_asks_its_caller_and_is_refused_when_nobody_answers() {
        let mut asked = Vec::new();
        let answer = run_with(case(task(json!({})), json!({"n": 1})), &mut |call| {
            asked.push((call.resource.to_string(), call.input.clone()));
            Some(Ok(json!({"Payload": 7})))
        })
        .expect("answered");
        assert_eq!(
            asked,
            vec![(
                TASK.to_string(),
                json!({"FunctionName": "f", "Payload": {"n": 1}})
            )]
        );
        assert_eq!(answer.output, Some(json!({"n": 1, "answer": {"body": 7}})));
        let refused = run_with(case(task(json!({})), json!({})), &mut |_| None);
        assert!(
            matches!(refused, Err(Refusal::TaskNeedsMock { resource, .. }) if resource == TASK)
        );
        let activity = case(
            json!({"Type": "Task", "Resource": "arn:aws:states:us-east-1:0:activity:a", "End": true}),
            json!({}),
        );
        let refused = run_with(activity, &mut |_| Some(Ok(json!(1))));
        assert!(matches!(
            refused,
            Err(Refusal::TaskKindNeedsMock {
                kind: "an activity",
                ..
            })
        ));
    }

    fn retried_task() -> Value {
        task(json!({
            "Retry": [
                {"ErrorEquals": ["Other"], "MaxAttempts": 1},
                {"ErrorEquals": ["Mock.Error"], "IntervalSeconds": 1, "MaxAttempts": 5, "BackoffRate": 2.0}
            ],
            "Catch": [
                {"ErrorEquals": ["Nothing"], "Next": "No"},
                {"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Handler"}
            ]
        }))
    }

    #[test]
    fn a_mocked_error_is_retriable_while_its_retrier_has_attempts_left() {
        let mut test = case(retried_task(), json!({"n": 1}));
        test.mock = Some(error("Mock.Error", "mocked"));
        test.retries = 4;
        let answer = run(test);
        assert_eq!(answer.status, TestStatus::Retriable);
        assert_eq!(answer.error.as_deref(), Some("Mock.Error"));
        assert_eq!(answer.cause.as_deref(), Some("mocked"));
        assert_eq!(answer.output, None);
        assert_eq!(answer.next_state, None);
        assert_eq!(
            answer.inspection.error_details,
            Some(ErrorDetails {
                retry_index: Some(1),
                retry_backoff_interval_seconds: Some(16),
                catch_index: None
            })
        );
    }

    #[test]
    fn a_mocked_error_past_its_retries_is_caught_by_the_first_matching_catcher() {
        let mut test = case(retried_task(), json!({"n": 1}));
        test.mock = Some(error("Mock.Error", "mocked"));
        test.retries = 5;
        let answer = run(test);
        assert_eq!(answer.status, TestStatus::CaughtError);
        assert_eq!(answer.next_state.as_deref(), Some("Handler"));
        assert_eq!(
            answer.output,
            Some(json!({"n": 1, "error": {"Error": "Mock.Error", "Cause": "mocked"}}))
        );
        assert_eq!(answer.error.as_deref(), Some("Mock.Error"));
        assert_eq!(
            answer.inspection.error_details,
            Some(ErrorDetails {
                retry_index: Some(1),
                retry_backoff_interval_seconds: None,
                catch_index: Some(1)
            })
        );
    }

    #[test]
    fn an_unhandled_mocked_error_fails_the_state() {
        let mut test = case(task(json!({})), json!({}));
        test.mock = Some(error("Mock.Error", "mocked"));
        let answer = run(test);
        assert_eq!(answer.status, TestStatus::Failed);
        assert_eq!(answer.error.as_deref(), Some("Mock.Error"));
        assert_eq!(answer.inspection.error_details, None);
    }

    #[test]
    fn mocks_are_refused_where_aws_refuses_them_and_required_where_it_requires_them() {
        let mut pass = case(json!({"Type": "Pass", "End": true}), json!({}));
        pass.mock = Some(Mock::Result(json!(1)));
        assert_eq!(
            run_with(pass, &mut |_| None),
            Err(Refusal::MockNotAccepted { state_type: "Pass" })
        );
        let parallel = json!({"Type": "Parallel", "End": true, "Branches": [
            {"StartAt": "A", "States": {"A": {"Type": "Pass", "End": true}}},
            {"StartAt": "B", "States": {"B": {"Type": "Pass", "End": true}}}
        ]});
        assert!(matches!(
            run_with(case(parallel.clone(), json!({})), &mut |_| None),
            Err(Refusal::MockRequired {
                state_type: "Parallel",
                ..
            })
        ));
        let mut wrong_count = case(parallel.clone(), json!({}));
        wrong_count.mock = Some(Mock::Result(json!([1])));
        assert_eq!(
            run_with(wrong_count, &mut |_| None),
            Err(Refusal::MockBranchCountMismatch {
                branches: 2,
                results: 1
            })
        );
        let mut not_array = case(parallel, json!({}));
        not_array.mock = Some(Mock::Result(json!({})));
        assert_eq!(
            run_with(not_array, &mut |_| None),
            Err(Refusal::MockResultNotArray)
        );
    }

    #[test]
    fn a_mocked_parallel_takes_the_mock_as_its_result() {
        let mut test = case(
            json!({"Type": "Parallel", "Next": "N", "ResultPath": "$.r", "Branches": [
                {"StartAt": "A", "States": {"A": {"Type": "Pass", "End": true}}}
            ]}),
            json!({"in": 1}),
        );
        test.mock = Some(Mock::Result(json!(["a"])));
        let answer = run(test);
        assert_eq!(answer.output, Some(json!({"in": 1, "r": ["a"]})));
        assert_eq!(answer.inspection.result, None, "AWS does not show the mock");
        assert_eq!(answer.inspection.after_result_selector, Some(json!(["a"])));
        assert_eq!(answer.next_state.as_deref(), Some("N"));
    }

    #[test]
    fn a_mocked_map_shows_its_items_and_each_iteration_input() {
        let mut test = case(
            json!({
                "Type": "Map", "End": true, "ItemsPath": "$.list", "MaxConcurrency": 2,
                "ToleratedFailureCount": 1,
                "ItemSelector": {"i.$": "$$.Map.Item.Index", "v.$": "$$.Map.Item.Value"},
                "ItemProcessor": {"StartAt": "A", "States": {"A": {"Type": "Pass", "End": true}}}
            }),
            json!({"list": ["x", "y"]}),
        );
        test.mock = Some(Mock::Result(json!([1, 2])));
        let answer = run(test);
        assert_eq!(answer.output, Some(json!([1, 2])));
        let shown = &answer.inspection;
        assert_eq!(shown.after_items_path, Some(json!(["x", "y"])));
        assert_eq!(
            shown.after_item_selector,
            Some(vec![json!({"i": 0, "v": "x"}), json!({"i": 1, "v": "y"})])
        );
        assert_eq!(shown.max_concurrency, Some(2));
        assert_eq!(shown.tolerated_failure_count, Some(1));
    }

    #[test]
    fn a_missing_state_is_refused_by_name() {
        let machine = machine_of(json!({"Type": "Pass", "End": true}));
        let test = TestState {
            machine: &machine,
            state_name: "Nope",
            input: json!({}),
            variables: Variables::new(),
            context: Value::Null,
            mock: None,
            retrier_retry_count: 0,
            now_ms: 0,
        };
        let refused = test_state(test, &mut Rng::new(1), &mut |_| None);
        assert_eq!(
            refused,
            Err(Refusal::StateNotFound {
                name: "Nope".into()
            })
        );
    }

    #[test]
    fn a_single_state_is_wrapped_with_a_succeed_state_for_each_target() {
        let wrapped = machine_of_state(json!({
            "Type": "Choice", "Choices": [{"Variable": "$.a", "IsPresent": true, "Next": "A"}],
            "Default": "B"
        }));
        assert_eq!(wrapped["StartAt"], json!(SINGLE_STATE_NAME));
        assert_eq!(wrapped["States"]["A"], json!({"Type": "Succeed"}));
        assert_eq!(wrapped["States"]["B"], json!({"Type": "Succeed"}));
        assert_eq!(wrapped["States"].as_object().map(Map::len), Some(3));
    }

    #[test]
    fn the_aws_rendering_shows_inspection_data_from_debug_on() {
        let answer = run(case(
            json!({"Type": "Pass", "Result": [1], "Assign": {"v": 2}, "Next": "N"}),
            json!({"a": 1}),
        ));
        let info = answer.to_aws_json(InspectionLevel::Info);
        assert_eq!(
            info,
            json!({"status": "SUCCEEDED", "output": "[1]", "nextState": "N"})
        );
        let debug = answer.to_aws_json(InspectionLevel::Debug);
        assert_eq!(debug["inspectionData"]["input"], json!("{\"a\":1}"));
        assert_eq!(debug["inspectionData"]["result"], json!("[1]"));
        assert_eq!(debug["inspectionData"]["variables"], json!("{\"v\":2}"));
        assert_eq!(answer.to_aws_json(InspectionLevel::Trace), debug);
    }

    /// The interpreter's run of a one-state machine: its output, or its error and cause.
    fn interpreted(state: Value, input: Value) -> (Option<Value>, Option<ErrorCause>) {
        let machine = machine_of(state);
        let request = StartRequest {
            input,
            input_text: None,
            execution_arn: "arn:aws:states:us-east-1:0:execution:m:e".into(),
            state_machine_arn: "arn:aws:states:us-east-1:0:stateMachine:m".into(),
            role_arn: "arn:aws:iam::0:role/r".into(),
            through: None,
            map_run_arn: None,
        };
        let decision = decide(
            &machine,
            &ExecutionState::new(),
            Trigger::Start(request),
            1_000,
            &Options::default(),
            &mut Rng::new(7),
        )
        .expect("decided");
        let state = decision.next_state;
        (state.output().cloned(), state.failure().cloned())
    }

    #[test]
    fn each_state_type_needing_no_answer_ends_as_the_interpreter_ends_it() {
        // Each state ends its machine, so the interpreter's output is the state's.
        let cases = [
            (
                json!({"Type": "Pass", "InputPath": "$.a", "Parameters": {"x.$": "$.b"}, "ResultPath": "$.r", "End": true}),
                json!({"a": {"b": 2}}),
            ),
            (
                json!({"Type": "Pass", "Result": {"k": 1}, "ResultPath": null, "OutputPath": "$.a", "End": true}),
                json!({"a": 3}),
            ),
            (
                json!({"Type": "Pass", "InputPath": "$.nothing", "End": true}),
                json!({}),
            ),
            (
                json!({"Type": "Succeed", "OutputPath": "$.a"}),
                json!({"a": [1]}),
            ),
            (
                json!({"Type": "Fail", "Error": "E", "CausePath": "States.Format('n={}', $.n)"}),
                json!({"n": 4}),
            ),
            (
                json!({"Type": "Wait", "Seconds": 0, "End": true}),
                json!({"w": true}),
            ),
        ];
        for (state, input) in cases {
            let (output, failure) = interpreted(state.clone(), input.clone());
            let answer = run(case(state.clone(), input));
            assert_eq!(answer.output, output, "{state}");
            assert_eq!(
                answer.error,
                failure.as_ref().and_then(|f| f.error.clone()),
                "{state}"
            );
            if answer.error.as_deref() != Some("States.Runtime") {
                assert_eq!(answer.cause, failure.and_then(|f| f.cause), "{state}");
            }
        }
    }
}
