//! test_state: AWS's `TestState` on the engine ([`Engine::test_state`]): one state of a
//! definition run on its own with an input, variables, a Context object and a mocked answer,
//! through the core's pure `interpreter::test_state`, with the engine's clock and entropy.
//!
//! The answer types are the core's, re-exported here on purpose: they are what
//! [`Engine::test_state`] returns, so they are part of the engine's API. Callers above the
//! engine (the server, the CLI) name them through this module and never through
//! `statelog-core`.
//!
//! A Task without a mock calls the handler registered for its resource (waiting at most
//! [`TEST_STATE_TASK_TIMEOUT_MS`](crate::limits::TEST_STATE_TASK_TIMEOUT_MS), then
//! `States.Timeout`); the built-in integrations are not called (each would start or stop an
//! execution, a write), nor is anything with no handler: those need a mock.
//!
//! Invariants: a test appends nothing to the log and changes nothing the engine keeps; a
//! handler it calls is the only side effect, and only the handler's own.
//! Must not: start, change or read an execution; reach the log.

use std::sync::{mpsc, Arc};
use std::time::Duration;

use serde_json::Value;
use statelog_core::asl::jsonata::json_type;
use statelog_core::asl::{parse_definition, ResourceKind, StateKind, StateMachine};
use statelog_core::history::depth::{parse_payload, PayloadTextError};
use statelog_core::interpreter::test_state::{
    default_context, machine_of_state, test_state, TaskAnswer, TaskCall, TestExecution, TestState,
    SINGLE_STATE_NAME,
};
pub use statelog_core::interpreter::test_state::{
    ErrorDetails, Inspection, InspectionLevel, Mock, Refusal, TestStateAnswer, TestStatus,
};
use statelog_core::paths::Variables;

use crate::clock::Clock;
use crate::history::ErrorCause;
use crate::limits::TEST_STATE_TASK_TIMEOUT_MS;
use crate::random::EntropySource;
use crate::{validate, Engine, Error, RandomSource};

/// The execution a test runs as, in its default Context object: `$$.Execution.Name`.
const TEST_EXECUTION_NAME: &str = "TestStateExecution";

/// The state machine a test runs in, in its default Context object: `$$.StateMachine.Name`.
const TEST_MACHINE_NAME: &str = "TestStateMachine";

/// One `TestState` call, as the API gives it (JSON as text).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TestStateRequest {
    /// One state's definition, or a whole machine's when `state_name` is given.
    pub definition: String,
    /// The state of a whole machine to test.
    pub state_name: Option<String>,
    /// The state's input (JSON text; `{}` when absent).
    pub input: Option<String>,
    /// The variables in scope (a JSON object's text).
    pub variables: Option<String>,
    /// The Context object (a JSON object's text); only with a mock, as on AWS.
    pub context: Option<String>,
    /// The mocked answer.
    pub mock: Option<TestMock>,
    /// The role, shown as `$$.Execution.RoleArn`.
    pub role_arn: Option<String>,
    /// `stateConfiguration.retrierRetryCount`: retries already made by the Retrier that
    /// matches the mocked error.
    pub retrier_retry_count: Option<u32>,
    /// Whether the caller asked for secrets (`revealSecrets`): refused with a mock, as on AWS;
    /// statelog has no secrets to hide otherwise.
    pub reveal_secrets: bool,
    /// `stateConfiguration.errorCausedByState` (not supported: refused when given).
    pub error_caused_by_state: Option<String>,
    /// `stateConfiguration.mapIterationFailureCount` (not supported: refused when given).
    pub map_iteration_failure_count: Option<u32>,
    /// `stateConfiguration.mapItemReaderData` (Distributed Map; refused when given).
    pub map_item_reader_data: Option<String>,
}

/// A mocked answer as the API gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct TestMock {
    /// `mock.result`: the result's JSON text.
    pub result: Option<String>,
    /// `mock.errorOutput.error`.
    pub error: Option<String>,
    /// `mock.errorOutput.cause`.
    pub cause: Option<String>,
    /// Whether `mock.errorOutput` was given.
    pub error_output: bool,
}

/// Why a `TestState` request is refused (`Error::TestStateRefused`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TestStateRefusal {
    /// The state cannot be tested as asked (no such state, a mock where none is taken or
    /// none where one is needed, a mock of the wrong shape).
    #[error("{0}")]
    State(#[from] Refusal),
    /// `variables` is not a JSON object's text.
    #[error("variables must be a JSON object: the text {0}")]
    VariablesUnreadable(PayloadTextError),
    /// `variables` is JSON, but not an object.
    #[error("variables must be a JSON object, not a JSON {found}")]
    VariablesNotObject {
        /// The JSON type found.
        found: &'static str,
    },
    /// `mock.result` is not JSON.
    #[error("Mocked result must be valid JSON: the text {0}")]
    MockResultUnreadable(PayloadTextError),
    /// A mock with both `result` and `errorOutput`, or neither.
    #[error("A test mock should have only one of the following fields: [result, errorOutput].")]
    MockFields,
    /// `mock.errorOutput` without its `error`.
    #[error("mock.errorOutput.error is required when mock.errorOutput is given")]
    MockErrorMissing,
    /// `revealSecrets` with a mock.
    #[error("TestState does not support RevealSecrets when a mock is specified.")]
    RevealSecretsWithMock,
    /// `context` without a mock.
    #[error("A Context object may only be given together with a mock.")]
    ContextWithoutMock,
    /// `context` is not a JSON object's text.
    #[error("Invalid Context object provided: the text {0}")]
    ContextUnreadable(PayloadTextError),
    /// `context` has a top-level field a Context object has not.
    #[error("Invalid Context object provided: Field '{field}' is not allowed")]
    ContextField {
        /// The field.
        field: String,
    },
    /// `context` is JSON, but not an object.
    #[error("Invalid Context object provided: it must be a JSON object, not a JSON {found}")]
    ContextNotObject {
        /// The JSON type found.
        found: &'static str,
    },
    /// `context` with a `Map` field (AWS refuses it too).
    #[error("Invalid Context object provided: 'Map' field is not supported when mocking a Context object")]
    ContextMap,
    /// A Task without a mock whose resource is a built-in integration: running it would start
    /// or stop an execution, and a test writes nothing.
    #[error("The Task state '{state}' calls the built-in integration {resource}, which starts or stops executions; TestState runs it only with a mock")]
    BuiltinNeedsMock {
        /// The state.
        state: String,
        /// The resource.
        resource: String,
    },
    /// A `stateConfiguration` field statelog does not implement (Distributed Map, a Map's or
    /// Parallel's inner error).
    #[error("stateConfiguration.{field} is not supported by statelog's TestState")]
    ConfigurationNotSupported {
        /// The field.
        field: &'static str,
    },
}

impl TestStateRefusal {
    /// The AWS error name: `InvalidDefinition` for a Parallel or Map without a mock (as AWS
    /// answers), else `ValidationException`.
    pub fn aws_name(&self) -> &'static str {
        match self {
            TestStateRefusal::State(Refusal::MockRequired { .. }) => "InvalidDefinition",
            _ => "ValidationException",
        }
    }
}

/// What a test runs with, besides its request: the time, the entropy, the ARNs of the
/// default Context object and what answers a Task without a mock.
struct Surroundings<'a> {
    now_ms: u64,
    entropy: &'a EntropySource,
    region: &'a str,
    account: &'a str,
    call: &'a mut dyn FnMut(TaskCall<'_>) -> TaskAnswer,
}

/// Where a test runs without an engine (the server, `statelog test-state`): nothing is
/// registered, so a Task needs a mock.
#[derive(Debug, Clone)]
pub struct Detached {
    /// The clock the test reads (`$$.State.EnteredTime`, JSONata's `$now()`).
    pub clock: Arc<dyn Clock>,
    /// The entropy source (`States.UUID`, `$random()`).
    pub random: Arc<dyn RandomSource>,
    /// The region in the default Context object's ARNs.
    pub region: String,
    /// The account in the default Context object's ARNs.
    pub account: String,
}

/// [`Engine::test_state`] without an engine: the same answer and refusals, but no handler
/// is registered, so every Task needs a mock (`TaskNeedsMock` otherwise).
pub fn test_state_detached(
    request: &TestStateRequest,
    detached: &Detached,
) -> Result<TestStateAnswer, Error> {
    let entropy = EntropySource::new(detached.random.clone(), None);
    let surroundings = Surroundings {
        now_ms: detached.clock.now_ms(),
        entropy: &entropy,
        region: &detached.region,
        account: &detached.account,
        call: &mut |_| None,
    };
    run(request, surroundings)
}

impl Engine {
    /// Runs one state of `request.definition` on its own, as AWS's `TestState` does, and
    /// answers its status, output, error, next state and each intermediate value. Writes
    /// nothing. A Task without a mock calls the handler registered for its resource. Refuses a
    /// definition that does not validate (`InvalidDefinition`), an input that is not JSON
    /// (`InvalidExecutionInput`) and a request the state cannot be tested with
    /// (`TestStateRefused`).
    pub fn test_state(&self, request: &TestStateRequest) -> Result<TestStateAnswer, Error> {
        let options = &self.inner.options;
        let surroundings = Surroundings {
            now_ms: options.clock.now_ms(),
            entropy: &self.inner.entropy,
            region: &options.region,
            account: &options.account,
            call: &mut |call| self.call_handler(call),
        };
        run(request, surroundings)
    }

    /// Calls the handler registered for the task's resource and waits for its answer, at most
    /// `TEST_STATE_TASK_TIMEOUT_MS` (then `States.Timeout`). `None` when no handler is
    /// registered.
    fn call_handler(&self, call: TaskCall<'_>) -> TaskAnswer {
        let handler = self.inner.handlers.get(call.resource)?;
        let future = handler.call(call.input.clone(), call.context.clone());
        let (sender, answer) = mpsc::sync_channel(1);
        self.inner.handle.spawn(async move {
            // The receiver may have given up (timed out); nothing more to do then.
            let _ = sender.send(future.await);
        });
        let waited = crate::runtime::off_the_reactor(|| {
            answer.recv_timeout(Duration::from_millis(TEST_STATE_TASK_TIMEOUT_MS))
        });
        Some(match waited {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(failure)) => Err(ErrorCause::new(failure.error, failure.cause)),
            Err(_) => Err(ErrorCause::new(
                "States.Timeout",
                format!(
                    "The task's handler did not answer within {} seconds.",
                    TEST_STATE_TASK_TIMEOUT_MS / 1000
                ),
            )),
        })
    }
}

/// One test: the request read and checked, the state run by the core.
fn run(
    request: &TestStateRequest,
    surroundings: Surroundings<'_>,
) -> Result<TestStateAnswer, Error> {
    let unsupported = [
        (
            "errorCausedByState",
            request.error_caused_by_state.is_some(),
        ),
        (
            "mapIterationFailureCount",
            request.map_iteration_failure_count.is_some(),
        ),
        ("mapItemReaderData", request.map_item_reader_data.is_some()),
    ];
    if let Some((field, _)) = unsupported.into_iter().find(|(_, given)| *given) {
        return Err(refused(TestStateRefusal::ConfigurationNotSupported {
            field,
        }));
    }
    let machine = compile(&request.definition, request.state_name.is_some())?;
    let state_name = request.state_name.as_deref().unwrap_or(SINGLE_STATE_NAME);
    let input = match &request.input {
        Some(text) => crate::parse_input(text)?.0,
        None => Value::Object(serde_json::Map::new()),
    };
    let variables = variables(request.variables.as_deref())?;
    let mock = mock(request)?;
    let now_ms = surroundings.now_ms;
    let retries = request.retrier_retry_count.unwrap_or(0);
    let context = match &request.context {
        Some(_) if mock.is_none() => return Err(refused(TestStateRefusal::ContextWithoutMock)),
        Some(text) => context(text)?,
        None => {
            let arn = |kind: &str, name: &str| {
                format!(
                    "arn:aws:states:{}:{}:{kind}:{name}",
                    surroundings.region, surroundings.account
                )
            };
            let execution_arn = arn(
                "execution",
                &format!("{TEST_MACHINE_NAME}:{TEST_EXECUTION_NAME}"),
            );
            let state_machine_arn = arn("stateMachine", TEST_MACHINE_NAME);
            let execution = TestExecution {
                execution_arn: &execution_arn,
                state_machine_arn: &state_machine_arn,
                role_arn: request.role_arn.as_deref().unwrap_or_default(),
            };
            default_context(&machine, state_name, &execution, &input, retries, now_ms)
        }
    };
    if mock.is_none() {
        check_callable(&machine, state_name)?;
    }
    let test = TestState {
        machine: &machine,
        state_name,
        input,
        variables,
        context,
        mock,
        retrier_retry_count: retries,
        now_ms,
    };
    let mut draws = surroundings.entropy.draws();
    let answer = test_state(test, &mut draws, surroundings.call)
        .map_err(|refusal| refused(TestStateRefusal::State(refusal)))?;
    // A failed draw (JSONata's `$random`, `States.UUID`) refuses the answer.
    draws.finish()?;
    Ok(answer)
}

/// Refuses a Task without a mock whose resource is a built-in integration.
fn check_callable(machine: &StateMachine, state_name: &str) -> Result<(), Error> {
    let Some(state) = machine.states.get(state_name) else {
        return Ok(());
    };
    if let StateKind::Task(task) = &state.kind {
        let other = matches!(task.resource.kind, ResourceKind::Other { .. });
        if !other && crate::integrations::is_builtin_resource(&task.resource.raw) {
            return Err(refused(TestStateRefusal::BuiltinNeedsMock {
                state: state.name.clone(),
                resource: task.resource.raw.clone(),
            }));
        }
    }
    Ok(())
}

fn refused(reason: TestStateRefusal) -> Error {
    Error::TestStateRefused { reason }
}

/// The machine the test runs in: the definition itself (`whole`), or one state's definition
/// wrapped into one (`machine_of_state`). Text that is not JSON is left to the parser, which
/// says where it breaks.
fn compile(definition: &str, whole: bool) -> Result<StateMachine, Error> {
    let text = match (whole, serde_json::from_str::<Value>(definition)) {
        (false, Ok(state)) => machine_of_state(state).to_string(),
        _ => definition.to_string(),
    };
    parse_definition(&text, &validate::options()).map_err(|diagnostics| Error::InvalidDefinition {
        diagnostics: diagnostics
            .into_iter()
            .filter(|d| d.severity == statelog_core::asl::Severity::Error)
            .collect(),
    })
}

fn variables(text: Option<&str>) -> Result<Variables, Error> {
    let mut variables = Variables::new();
    let Some(text) = text else {
        return Ok(variables);
    };
    let value =
        parse_payload(text).map_err(|e| refused(TestStateRefusal::VariablesUnreadable(e)))?;
    let Value::Object(values) = value else {
        return Err(refused(TestStateRefusal::VariablesNotObject {
            found: json_type(&value),
        }));
    };
    for (name, value) in values {
        variables.insert(name, value);
    }
    Ok(variables)
}

/// The Context object's top-level fields a caller may give (AWS's, `Map` aside).
const CONTEXT_FIELDS: [&str; 4] = ["Execution", "State", "StateMachine", "Task"];

fn context(text: &str) -> Result<Value, Error> {
    let value = parse_payload(text).map_err(|e| refused(TestStateRefusal::ContextUnreadable(e)))?;
    let Value::Object(fields) = &value else {
        return Err(refused(TestStateRefusal::ContextNotObject {
            found: json_type(&value),
        }));
    };
    for field in fields.keys() {
        if field == "Map" {
            return Err(refused(TestStateRefusal::ContextMap));
        }
        if !CONTEXT_FIELDS.contains(&field.as_str()) {
            return Err(refused(TestStateRefusal::ContextField {
                field: field.clone(),
            }));
        }
    }
    Ok(value)
}

fn mock(request: &TestStateRequest) -> Result<Option<Mock>, Error> {
    let Some(given) = &request.mock else {
        return Ok(None);
    };
    if request.reveal_secrets {
        return Err(refused(TestStateRefusal::RevealSecretsWithMock));
    }
    match (&given.result, given.error_output) {
        (Some(text), false) => parse_payload(text)
            .map(|result| Some(Mock::Result(result)))
            .map_err(|e| refused(TestStateRefusal::MockResultUnreadable(e))),
        (None, true) => match &given.error {
            Some(error) => Ok(Some(Mock::Error(ErrorCause {
                error: Some(error.clone()),
                cause: given.cause.clone(),
            }))),
            None => Err(refused(TestStateRefusal::MockErrorMissing)),
        },
        _ => Err(refused(TestStateRefusal::MockFields)),
    }
}
