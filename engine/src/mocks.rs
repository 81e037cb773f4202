//! mocks: the Step Functions Local mock configuration (`MockConfigFile.json`) and the task
//! backend that answers a test case's mocked Task states from it.
//!
//! The file: `StateMachines.<machine>.TestCases.<case>.<state>` names a response of
//! `MockedResponses`, and `MockedResponses.<response>.<invocations>` holds exactly one of
//! `Return` (the service's result) or `Throw` (`Error`, optional `Cause`) for the invocations
//! `"N"` or `"N-M"` (0-based, every attempt of the state in the execution, retries included).
//! An execution started as `stateMachineArn#Case` runs test case `Case`: a Task state the case
//! names is answered from the file (`TaskSucceeded` with `Return`, `TaskFailed` with `Throw`);
//! any other task goes to the backends after this one, as without a mock.
//!
//! Where the test case is kept: the execution's started event records its state machine ARN
//! with `#Case` (`history::split_test_case`); nothing else changes in the stored bytes, and the
//! ARN every API answers and `$$.StateMachine.Id` leave the suffix out. An invocation number
//! is the count of earlier `TaskScheduled` events of the same state in the execution's
//! history, so an attempt re-dispatched after a restart gets the same answer as before.
//!
//! Invariants: a parsed configuration names only responses it holds, and no two ranges of a
//! response overlap. Must not: parse lazily (a malformed file is refused whole, with the JSON
//! path of its first fault, before anything runs), or keep an invocation count in memory.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::backend::{AttemptKey, TaskBackend};
use super::Engine;
use statelog_core::history::{split_test_case, EventDetails, HistoryEvent};
use statelog_core::interpreter::{TaskInvocation, Trigger};

/// A parsed mock configuration: test cases by state machine name, each naming the mocked
/// response of some of its states.
#[derive(Debug, Clone, Default)]
pub struct MockConfig {
    machines: BTreeMap<String, BTreeMap<String, TestCase>>,
}

/// One test case: the mocked response of each state it names.
#[derive(Debug, Clone, Default)]
pub struct TestCase {
    states: BTreeMap<String, Arc<MockedResponse>>,
}

/// One entry of `MockedResponses`: answers by invocation number.
#[derive(Debug, Clone)]
pub struct MockedResponse {
    name: String,
    /// Sorted by `first`; no two overlap.
    answers: Vec<Numbered>,
}

#[derive(Debug, Clone)]
struct Numbered {
    first: u32,
    last: u32,
    answer: MockAnswer,
}

/// What a mocked invocation answers.
#[derive(Debug, Clone, PartialEq)]
pub enum MockAnswer {
    /// `Return`: the task succeeds with this result.
    Return(Value),
    /// `Throw`: the task fails with this error and cause.
    Throw {
        /// `Error`.
        error: String,
        /// `Cause`, when given.
        cause: Option<String>,
    },
}

/// A mock configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MockConfigError {
    /// The file could not be read.
    #[error("cannot read the mock configuration {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The text is not JSON (serde_json's message names the line and column).
    #[error("the mock configuration is not JSON: {source}")]
    NotJson {
        /// What the parser said.
        source: serde_json::Error,
    },
    /// The JSON does not have the mock configuration's shape.
    #[error("mock configuration at {path}: {problem}")]
    Invalid {
        /// The JSON path of the faulty value (`$.MockedResponses.M['0-2'].Throw`).
        path: String,
        /// What is wrong there.
        problem: MockProblem,
    },
}

/// What is wrong at a place of a mock configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MockProblem {
    /// A value that must be an object is not.
    #[error("expected an object, found {found}")]
    NotAnObject {
        /// The JSON type found.
        found: &'static str,
    },
    /// A value that must be a string is not.
    #[error("expected a string, found {found}")]
    NotAString {
        /// The JSON type found.
        found: &'static str,
    },
    /// A field the format does not have (a misspelling would otherwise mock nothing).
    #[error("unknown field '{field}' (expected {})", expected.join(", "))]
    UnknownField {
        /// The field found.
        field: String,
        /// The fields allowed here.
        expected: &'static [&'static str],
    },
    /// A required field is absent.
    #[error("missing field '{field}'")]
    MissingField {
        /// The field.
        field: &'static str,
    },
    /// An invocation key that is neither `N` nor `N-M` with `N <= M`.
    #[error("'{key}' is not an invocation number (\"0\") or range (\"1-2\", first <= last)")]
    InvocationKey {
        /// The key found.
        key: String,
    },
    /// Two keys of one response cover the same invocation.
    #[error("invocations '{key}' overlap '{other}'")]
    Overlap {
        /// The later key.
        key: String,
        /// The key it overlaps.
        other: String,
    },
    /// A response entry with both or neither of `Return` and `Throw`.
    #[error("expected exactly one of 'Return' or 'Throw', found {found}")]
    ReturnOrThrow {
        /// How many of the two were given.
        found: usize,
    },
    /// A response without any invocation.
    #[error("a mocked response needs at least one invocation (\"0\": {{...}})")]
    NoInvocations,
    /// A test case names a response `MockedResponses` does not hold.
    #[error("no mocked response named '{name}' in MockedResponses")]
    UnknownResponse {
        /// The name given.
        name: String,
    },
}

/// A JSON path being walked, for errors.
#[derive(Clone)]
struct Place(String);

impl Place {
    fn root() -> Self {
        Place("$".to_string())
    }

    fn field(&self, name: &str) -> Place {
        let plain = !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit());
        if plain {
            Place(format!("{}.{name}", self.0))
        } else {
            Place(format!("{}['{}']", self.0, name.replace('\'', "\\'")))
        }
    }

    fn fault(&self, problem: MockProblem) -> MockConfigError {
        MockConfigError::Invalid {
            path: self.0.clone(),
            problem,
        }
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn object<'a>(value: &'a Value, place: &Place) -> Result<&'a Map<String, Value>, MockConfigError> {
    value.as_object().ok_or_else(|| {
        place.fault(MockProblem::NotAnObject {
            found: json_type(value),
        })
    })
}

fn string<'a>(value: &'a Value, place: &Place) -> Result<&'a str, MockConfigError> {
    value.as_str().ok_or_else(|| {
        place.fault(MockProblem::NotAString {
            found: json_type(value),
        })
    })
}

/// Refuses a field of `map` outside `expected`.
fn only_fields(
    map: &Map<String, Value>,
    expected: &'static [&'static str],
    place: &Place,
) -> Result<(), MockConfigError> {
    match map.keys().find(|k| !expected.contains(&k.as_str())) {
        Some(field) => Err(place.fault(MockProblem::UnknownField {
            field: field.clone(),
            expected,
        })),
        None => Ok(()),
    }
}

fn required<'a>(
    map: &'a Map<String, Value>,
    field: &'static str,
    place: &Place,
) -> Result<&'a Value, MockConfigError> {
    map.get(field)
        .ok_or_else(|| place.fault(MockProblem::MissingField { field }))
}

/// `"N"` or `"N-M"` with `N <= M`.
fn invocation_range(key: &str) -> Option<(u32, u32)> {
    let number = |text: &str| {
        (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
            .then(|| text.parse::<u32>().ok())
            .flatten()
    };
    match key.split_once('-') {
        None => number(key).map(|n| (n, n)),
        Some((first, last)) => {
            let (first, last) = (number(first)?, number(last)?);
            (first <= last).then_some((first, last))
        }
    }
}

fn parse_response(
    name: &str,
    value: &Value,
    place: &Place,
) -> Result<MockedResponse, MockConfigError> {
    let entries = object(value, place)?;
    if entries.is_empty() {
        return Err(place.fault(MockProblem::NoInvocations));
    }
    let mut answers: Vec<(Numbered, &str)> = Vec::with_capacity(entries.len());
    for (key, entry) in entries {
        let at = place.field(key);
        let (first, last) = invocation_range(key)
            .ok_or_else(|| at.fault(MockProblem::InvocationKey { key: key.clone() }))?;
        if let Some((_, other)) = answers
            .iter()
            .find(|(n, _)| n.first <= last && first <= n.last)
        {
            return Err(at.fault(MockProblem::Overlap {
                key: key.clone(),
                other: other.to_string(),
            }));
        }
        let fields = object(entry, &at)?;
        only_fields(fields, &["Return", "Throw"], &at)?;
        let answer = match (fields.get("Return"), fields.get("Throw")) {
            (Some(result), None) => MockAnswer::Return(result.clone()),
            (None, Some(throw)) => {
                let at = at.field("Throw");
                let throw = object(throw, &at)?;
                only_fields(throw, &["Error", "Cause"], &at)?;
                let error = string(required(throw, "Error", &at)?, &at.field("Error"))?;
                let cause = match throw.get("Cause") {
                    Some(cause) => Some(string(cause, &at.field("Cause"))?.to_string()),
                    None => None,
                };
                MockAnswer::Throw {
                    error: error.to_string(),
                    cause,
                }
            }
            (result, throw) => {
                return Err(at.fault(MockProblem::ReturnOrThrow {
                    found: usize::from(result.is_some()) + usize::from(throw.is_some()),
                }))
            }
        };
        answers.push((
            Numbered {
                first,
                last,
                answer,
            },
            key,
        ));
    }
    let mut answers: Vec<Numbered> = answers.into_iter().map(|(n, _)| n).collect();
    answers.sort_by_key(|n| n.first);
    debug_assert!(
        answers.windows(2).all(|pair| pair[0].last < pair[1].first),
        "no two ranges of a response overlap"
    );
    Ok(MockedResponse {
        name: name.to_string(),
        answers,
    })
}

impl MockConfig {
    /// Reads and checks the mock configuration file at `path`.
    pub fn from_file(path: impl AsRef<Path>) -> Result<MockConfig, MockConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| MockConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        MockConfig::from_json(&text)
    }

    /// Parses and checks a mock configuration; the first fault is named by its JSON path.
    pub fn from_json(text: &str) -> Result<MockConfig, MockConfigError> {
        let root: Value =
            serde_json::from_str(text).map_err(|source| MockConfigError::NotJson { source })?;
        let place = Place::root();
        let top = object(&root, &place)?;
        only_fields(top, &["StateMachines", "MockedResponses"], &place)?;

        let responses_place = place.field("MockedResponses");
        let mut responses: BTreeMap<&str, Arc<MockedResponse>> = BTreeMap::new();
        for (name, value) in object(required(top, "MockedResponses", &place)?, &responses_place)? {
            let response = parse_response(name, value, &responses_place.field(name))?;
            responses.insert(name, Arc::new(response));
        }

        let machines_place = place.field("StateMachines");
        let mut machines = BTreeMap::new();
        for (machine, value) in object(required(top, "StateMachines", &place)?, &machines_place)? {
            let at = machines_place.field(machine);
            let fields = object(value, &at)?;
            only_fields(fields, &["TestCases"], &at)?;
            let cases_place = at.field("TestCases");
            let mut cases = BTreeMap::new();
            for (case, states) in object(required(fields, "TestCases", &at)?, &cases_place)? {
                let at = cases_place.field(case);
                let mut test_case = TestCase::default();
                for (state, response) in object(states, &at)? {
                    let at = at.field(state);
                    let name = string(response, &at)?;
                    let response = responses.get(name).ok_or_else(|| {
                        at.fault(MockProblem::UnknownResponse {
                            name: name.to_string(),
                        })
                    })?;
                    test_case.states.insert(state.clone(), response.clone());
                }
                cases.insert(case.clone(), test_case);
            }
            machines.insert(machine.clone(), cases);
        }
        Ok(MockConfig { machines })
    }

    /// Test case `case` of state machine `machine`, if the configuration has it.
    pub fn test_case(&self, machine: &str, case: &str) -> Option<&TestCase> {
        self.machines.get(machine)?.get(case)
    }

    /// How many test cases the configuration holds, over every state machine.
    pub fn test_case_count(&self) -> usize {
        self.machines.values().map(BTreeMap::len).sum()
    }
}

impl TestCase {
    /// The mocked response of `state`, if this test case mocks it.
    pub fn response(&self, state: &str) -> Option<&MockedResponse> {
        self.states.get(state).map(|r| &**r)
    }
}

impl MockedResponse {
    /// The response's name in `MockedResponses`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The answer of 0-based invocation `invocation`, if the response covers it.
    pub fn answer(&self, invocation: u32) -> Option<&MockAnswer> {
        self.answers
            .iter()
            .find(|n| n.first <= invocation && invocation <= n.last)
            .map(|n| &n.answer)
    }
}

/// The backend that answers a test case's mocked states, first in the routing order.
pub(crate) struct MockedTasks;

impl MockedTasks {
    /// The mocked response for the attempt, when its execution runs a test case that mocks
    /// its state. Reads the execution's started event (the test case is recorded there).
    fn response<'a>(
        config: &'a MockConfig,
        engine: &Engine,
        attempt: &AttemptKey,
        invocation: &TaskInvocation,
    ) -> Option<&'a MockedResponse> {
        let (first, _) = engine
            .inner
            .store
            .first_and_last_events(&attempt.execution)
            .ok()?;
        let EventDetails::ExecutionStarted(started) = &first.details else {
            return None;
        };
        let recorded = split_test_case(&started.state_machine_arn);
        let machine = recorded.machine_arn.rsplit(':').next()?;
        config
            .test_case(machine, recorded.test_case?)?
            .response(&invocation.state_name)
    }
}

impl TaskBackend for MockedTasks {
    fn name(&self) -> &'static str {
        "mocked responses"
    }

    fn serves_attempt(
        &self,
        engine: &Engine,
        attempt: &AttemptKey,
        invocation: &TaskInvocation,
    ) -> bool {
        engine
            .inner
            .options
            .mock_config
            .as_deref()
            .is_some_and(|config| Self::response(config, engine, attempt, invocation).is_some())
    }

    fn dispatch(&self, engine: &Engine, attempt: AttemptKey, invocation: TaskInvocation) {
        // `serves_attempt` found the response; the configuration and the started event do not
        // change, so only a log that stopped reading loses it between the two.
        let config = engine.inner.options.mock_config.clone();
        let Some(response) = config
            .as_deref()
            .and_then(|config| Self::response(config, engine, &attempt, &invocation))
        else {
            engine.inner.background_errors.lock().push(format!(
                "mocked answer of task {} for {}: the execution's started event no longer reads",
                attempt.task.0, attempt.execution
            ));
            return;
        };
        let trigger = match engine.inner.store.history(&attempt.execution) {
            Ok(events) => {
                let number = invocation_number(&events, &invocation);
                mocked_trigger(response, number, &invocation)
            }
            Err(error) => {
                engine.inner.background_errors.lock().push(format!(
                    "mocked answer of task {} for {}: the history does not read: {error}",
                    attempt.task.0, attempt.execution
                ));
                return;
            }
        };
        // Recorded like a handler's answer, off the dispatching thread (a dispatch may run
        // inside another commit's effects) and counted for `wait_idle`.
        engine.inner.in_flight.lock().in_flight += 1;
        let answering = engine.clone();
        drop(engine.inner.handle.spawn_blocking(move || {
            let result = answering.drive(&attempt.execution, trigger);
            super::handlers::answer_recorded(&answering, &attempt, false, result);
        }));
    }

    fn cancel(&self, _engine: &Engine, _attempt: &AttemptKey) {}
}

/// The 0-based invocation number of the attempt: how many `TaskScheduled` events of the same
/// state come before it in the history. An event belongs to the state whose `TaskStateEntered`
/// it follows through `previousEventId` links (branches of a Parallel or Map chain apart).
fn invocation_number(events: &[HistoryEvent], invocation: &TaskInvocation) -> u32 {
    let mut state_of: Vec<Option<&str>> = Vec::with_capacity(events.len() + 1);
    state_of.push(None); // event ids are 1-based
    let mut count = 0u32;
    for event in events {
        if event.id >= invocation.task_id {
            break;
        }
        let state = match &event.details {
            EventDetails::TaskStateEntered(entered) => Some(entered.name.as_str()),
            _ => state_of
                .get(event.previous_event_id as usize)
                .copied()
                .flatten(),
        };
        if matches!(event.details, EventDetails::TaskScheduled(_))
            && state == Some(invocation.state_name.as_str())
        {
            count += 1;
        }
        state_of.push(state);
    }
    count
}

/// The trigger that answers the attempt with the response's invocation `number`; one past the
/// response's numbers fails the task with `States.Runtime`, naming both.
fn mocked_trigger(response: &MockedResponse, number: u32, invocation: &TaskInvocation) -> Trigger {
    let token = invocation.resource.ends_with(".waitForTaskToken");
    let task_id = invocation.task_id;
    match response.answer(number) {
        Some(MockAnswer::Return(output)) if token => Trigger::TokenSucceeded {
            task_id,
            output: output.clone(),
        },
        Some(MockAnswer::Return(output)) => Trigger::TaskSucceeded {
            task_id,
            output: output.clone(),
        },
        Some(MockAnswer::Throw { error, cause }) if token => Trigger::TokenFailed {
            task_id,
            error: error.clone(),
            cause: cause.clone().unwrap_or_default(),
        },
        Some(MockAnswer::Throw { error, cause }) => Trigger::TaskFailed {
            task_id,
            error: error.clone(),
            cause: cause.clone().unwrap_or_default(),
        },
        None => Trigger::TaskFailed {
            task_id,
            error: "States.Runtime".to_string(),
            cause: format!(
                "the mocked response '{}' has no answer for invocation {number} of state '{}'",
                response.name(),
                invocation.state_name
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(text: &str) -> (String, MockProblem) {
        match MockConfig::from_json(text) {
            Err(MockConfigError::Invalid { path, problem }) => (path, problem),
            Err(other) => panic!("expected an invalid-shape error, got {other}"),
            Ok(_) => panic!("accepted: {text}"),
        }
    }

    const GOOD: &str = r#"{
        "StateMachines": {"M": {"TestCases": {
            "Happy": {"Call": "Ok"},
            "Retry": {"Call": "FlakyThenOk", "Other": "Ok"}
        }}},
        "MockedResponses": {
            "Ok": {"0": {"Return": {"StatusCode": 200, "Payload": {"x": 1}}}},
            "FlakyThenOk": {
                "0": {"Throw": {"Error": "Lambda.ServiceException", "Cause": "down"}},
                "1-2": {"Throw": {"Error": "Lambda.TooManyRequestsException"}},
                "3": {"Return": "done"}
            }
        }
    }"#;

    #[test]
    fn a_good_file_answers_by_invocation_number_and_range() {
        let config = MockConfig::from_json(GOOD).expect("parses");
        assert_eq!(config.test_case_count(), 2);
        let retry = config.test_case("M", "Retry").expect("the case");
        let flaky = retry.response("Call").expect("mocked");
        assert_eq!(flaky.name(), "FlakyThenOk");
        assert_eq!(
            flaky.answer(0),
            Some(&MockAnswer::Throw {
                error: "Lambda.ServiceException".into(),
                cause: Some("down".into())
            })
        );
        for n in [1, 2] {
            assert_eq!(
                flaky.answer(n),
                Some(&MockAnswer::Throw {
                    error: "Lambda.TooManyRequestsException".into(),
                    cause: None
                })
            );
        }
        assert_eq!(flaky.answer(3), Some(&MockAnswer::Return("done".into())));
        assert_eq!(flaky.answer(4), None, "past the last number");
        assert!(retry.response("Unmocked").is_none());
        assert!(config.test_case("M", "Nope").is_none());
        assert!(config.test_case("Other", "Happy").is_none());
    }

    #[test]
    fn every_malformed_shape_names_its_place() {
        let cases: Vec<(&str, &str, MockProblem)> = vec![
            (r#"[]"#, "$", MockProblem::NotAnObject { found: "an array" }),
            (
                r#"{"StateMachines": {}, "MockedResponse": {}}"#,
                "$",
                MockProblem::UnknownField {
                    field: "MockedResponse".into(),
                    expected: &["StateMachines", "MockedResponses"],
                },
            ),
            (
                r#"{"StateMachines": {}}"#,
                "$",
                MockProblem::MissingField {
                    field: "MockedResponses",
                },
            ),
            (
                r#"{"MockedResponses": {}}"#,
                "$",
                MockProblem::MissingField {
                    field: "StateMachines",
                },
            ),
            (
                r#"{"StateMachines": {"M": {"TestCase": {}}}, "MockedResponses": {}}"#,
                "$.StateMachines.M",
                MockProblem::UnknownField {
                    field: "TestCase".into(),
                    expected: &["TestCases"],
                },
            ),
            (
                r#"{"StateMachines": {"M": {"TestCases": {"C": {"S": 3}}}}, "MockedResponses": {}}"#,
                "$.StateMachines.M.TestCases.C.S",
                MockProblem::NotAString { found: "a number" },
            ),
            (
                r#"{"StateMachines": {"M": {"TestCases": {"C": {"S": "R"}}}}, "MockedResponses": {}}"#,
                "$.StateMachines.M.TestCases.C.S",
                MockProblem::UnknownResponse { name: "R".into() },
            ),
            (
                r#"{"StateMachines": {"M": {"TestCases": {"C": []}}}, "MockedResponses": {}}"#,
                "$.StateMachines.M.TestCases.C",
                MockProblem::NotAnObject { found: "an array" },
            ),
            (
                r#"{"StateMachines": {}, "MockedResponses": {"R": {}}}"#,
                "$.MockedResponses.R",
                MockProblem::NoInvocations,
            ),
            (
                r#"{"StateMachines": {}, "MockedResponses": {"R": {"first": {"Return": 1}}}}"#,
                "$.MockedResponses.R.first",
                MockProblem::InvocationKey {
                    key: "first".into(),
                },
            ),
            (
                r#"{"StateMachines": {}, "MockedResponses": {"R": {"2-1": {"Return": 1}}}}"#,
                "$.MockedResponses.R['2-1']",
                MockProblem::InvocationKey { key: "2-1".into() },
            ),
            (
                r#"{"StateMachines": {}, "MockedResponses": {"R": {"-1": {"Return": 1}}}}"#,
                "$.MockedResponses.R['-1']",
                MockProblem::InvocationKey { key: "-1".into() },
            ),
            (
                r#"{"StateMachines": {}, "MockedResponses": {"R": {"0-2": {"Return": 1}, "2": {"Return": 2}}}}"#,
                "$.MockedResponses.R['2']",
                MockProblem::Overlap {
                    key: "2".into(),
                    other: "0-2".into(),
                },
            ),
            (
                r#"{"StateMachines": {}, "MockedResponses": {"R": {"0": {"Return": 1, "Throw": {"Error": "E"}}}}}"#,
                "$.MockedResponses.R['0']",
                MockProblem::ReturnOrThrow { found: 2 },
            ),
            (
                r#"{"StateMachines": {}, "MockedResponses": {"R": {"0": {}}}}"#,
                "$.MockedResponses.R['0']",
                MockProblem::ReturnOrThrow { found: 0 },
            ),
            (
                r#"{"StateMachines": {}, "MockedResponses": {"R": {"0": {"Retrun": 1}}}}"#,
                "$.MockedResponses.R['0']",
                MockProblem::UnknownField {
                    field: "Retrun".into(),
                    expected: &["Return", "Throw"],
                },
            ),
            (
                r#"{"StateMachines": {}, "MockedResponses": {"R": {"0": {"Throw": {"Cause": "c"}}}}}"#,
                "$.MockedResponses.R['0'].Throw",
                MockProblem::MissingField { field: "Error" },
            ),
            (
                r#"{"StateMachines": {}, "MockedResponses": {"R": {"0": {"Throw": {"Error": 1}}}}}"#,
                "$.MockedResponses.R['0'].Throw.Error",
                MockProblem::NotAString { found: "a number" },
            ),
            (
                r#"{"StateMachines": {}, "MockedResponses": {"R": {"0": {"Throw": {"Error": "E", "Cause": null}}}}}"#,
                "$.MockedResponses.R['0'].Throw.Cause",
                MockProblem::NotAString { found: "null" },
            ),
            (
                r#"{"StateMachines": {}, "MockedResponses": {"R": {"0": {"Throw": "E"}}}}"#,
                "$.MockedResponses.R['0'].Throw",
                MockProblem::NotAnObject { found: "a string" },
            ),
            (
                r#"{"StateMachines": {"My Machine": 1}, "MockedResponses": {}}"#,
                "$.StateMachines['My Machine']",
                MockProblem::NotAnObject { found: "a number" },
            ),
        ];
        for (text, path, problem) in cases {
            let (found_path, found_problem) = fault(text);
            assert_eq!(
                (found_path.as_str(), &found_problem),
                (path, &problem),
                "{text}"
            );
        }
    }

    #[test]
    fn not_json_and_a_missing_file_are_their_own_errors() {
        let error = MockConfig::from_json("{\"StateMachines\": ").expect_err("refused");
        assert!(matches!(error, MockConfigError::NotJson { .. }), "{error}");
        assert!(error.to_string().contains("line 1"), "{error}");
        let error = MockConfig::from_file("/nonexistent/MockConfigFile.json").expect_err("refused");
        assert!(matches!(error, MockConfigError::Read { .. }), "{error}");
        assert!(
            error
                .to_string()
                .contains("/nonexistent/MockConfigFile.json"),
            "{error}"
        );
        let (path, problem) = fault(r#"{"StateMachines": {}, "MockedResponses": {"R": {"x": 1}}}"#);
        let shown = MockConfigError::Invalid { path, problem }.to_string();
        assert_eq!(
            shown,
            "mock configuration at $.MockedResponses.R.x: 'x' is not an invocation number (\"0\") or range (\"1-2\", first <= last)"
        );
    }

    mod engine {
        use std::sync::Arc;

        use serde_json::{json, Value};

        use crate::mocks::MockConfig;
        use crate::testing::{SkipStop, TestEngine};
        use crate::{
            ArnReason, Engine, EngineOptions, Error, ExecutionStatus, HistoryQuery, TaskError,
        };
        use statelog_core::history::{EventDetails, HistoryEvent};

        const LAMBDA: &str = "arn:aws:states:::lambda:invoke";
        const SQS: &str = "arn:aws:states:::sqs:sendMessage";

        const CONFIG: &str = r#"{
            "StateMachines": {
                "Orders": {"TestCases": {
                    "Happy": {"LambdaState": "LambdaOk", "SQSState": "SqsOk"},
                    "Hybrid": {"LambdaState": "LambdaOk"},
                    "Flaky": {"LambdaState": "FlakyThenOk", "SQSState": "SqsOk"},
                    "Broken": {"LambdaState": "AlwaysDown"},
                    "Short": {"LambdaState": "OnceOnly"}
                }},
                "Loop": {"TestCases": {"Twice": {"Work": "Counted"}}},
                "Fan": {"TestCases": {"Three": {"Work": "Counted"}}},
                "Token": {"TestCases": {"Ok": {"Wait": "LambdaOk"}}},
                "Slow": {"TestCases": {"Flaky": {"LambdaState": "FlakyThenOk"}}}
            },
            "MockedResponses": {
                "LambdaOk": {"0": {"Return": {"StatusCode": 200, "Payload": {"ok": true}}}},
                "SqsOk": {"0-9": {"Return": {"MessageId": "m-1", "MD5OfMessageBody": "x"}}},
                "FlakyThenOk": {
                    "0": {"Throw": {"Error": "Lambda.ServiceException", "Cause": "down"}},
                    "1-2": {"Throw": {"Error": "Lambda.TooManyRequestsException", "Cause": "busy"}},
                    "3": {"Return": {"Payload": "finally"}}
                },
                "AlwaysDown": {"0-9": {"Throw": {"Error": "Lambda.ServiceException", "Cause": "down"}}},
                "OnceOnly": {"0": {"Throw": {"Error": "Lambda.ServiceException"}}},
                "Counted": {"0": {"Return": "first"}, "1": {"Return": "second"}, "2": {"Return": "third"}}
            }
        }"#;

        fn config() -> Arc<MockConfig> {
            Arc::new(MockConfig::from_json(CONFIG).expect("parses"))
        }

        fn mocked() -> TestEngine {
            TestEngine::with_options(EngineOptions {
                mock_config: Some(config()),
                ..EngineOptions::default()
            })
            .expect("opens")
        }

        /// The `Orders` machine: a Lambda then an SQS task (`Handled` is reached only through
        /// a catcher; without one given, one for an error nothing throws keeps it reachable).
        fn orders(engine: &Engine, retry: &str, catch: &str) {
            let catch = match catch {
                "[]" => r#"[{"ErrorEquals":["Never.Thrown"],"Next":"Handled"}]"#,
                given => given,
            };
            let definition = format!(
                r#"{{"StartAt":"LambdaState","States":{{
                    "LambdaState":{{"Type":"Task","Resource":"{LAMBDA}",
                        "Parameters":{{"FunctionName":"f","Payload.$":"$"}},
                        "Retry":{retry},"Catch":{catch},"Next":"SQSState"}},
                    "SQSState":{{"Type":"Task","Resource":"{SQS}",
                        "Parameters":{{"QueueUrl":"q","MessageBody.$":"$"}},"End":true}},
                    "Handled":{{"Type":"Pass","End":true}}}}}}"#
            );
            engine
                .create_state_machine("Orders", &definition, None)
                .expect("machine");
        }

        fn history(engine: &Engine, arn: &str) -> Vec<HistoryEvent> {
            let query = HistoryQuery {
                max_results: 1000,
                ..HistoryQuery::default()
            };
            engine
                .get_execution_history(arn, &query)
                .expect("history")
                .events
        }

        fn types(events: &[HistoryEvent]) -> Vec<&'static str> {
            events.iter().map(|e| e.details.type_name()).collect()
        }

        /// The (error, cause) of each TaskFailed, and the output of each TaskSucceeded, in order.
        fn answers(events: &[HistoryEvent]) -> Vec<Value> {
            events
                .iter()
                .filter_map(|e| match &e.details {
                    EventDetails::TaskSucceeded(out) => Some(out.output.clone()),
                    EventDetails::TaskFailed(failed) => Some(json!([failed.error, failed.cause])),
                    _ => None,
                })
                .collect()
        }

        fn run(test: &TestEngine, machine: &str, name: &str) -> String {
            let arn = test
                .start_execution(machine, Some(name), r#"{"order":7}"#)
                .expect("starts")
                .execution_arn;
            assert_eq!(test.skip_ahead().stop, SkipStop::NoneOpen);
            arn
        }

        #[test]
        fn a_test_case_answers_its_mocked_tasks_with_the_services_history() {
            let test = mocked();
            orders(&test, "[]", "[]");
            let arn = run(&test, "Orders#Happy", "happy");
            assert_eq!(
                arn, "arn:aws:states:us-east-1:000000000000:execution:Orders:happy",
                "the execution is named as any other"
            );
            let described = test.describe_execution(&arn).expect("describes");
            assert_eq!(described.status, ExecutionStatus::Succeeded);
            assert_eq!(
                described.state_machine_arn,
                "arn:aws:states:us-east-1:000000000000:stateMachine:Orders",
                "no #Case in the machine's ARN"
            );
            assert_eq!(
                described.output,
                Some(json!({"MessageId": "m-1", "MD5OfMessageBody": "x"}))
            );
            let events = history(&test, &arn);
            assert_eq!(
                types(&events),
                [
                    "ExecutionStarted",
                    "TaskStateEntered",
                    "TaskScheduled",
                    "TaskStarted",
                    "TaskSucceeded",
                    "TaskStateExited",
                    "TaskStateEntered",
                    "TaskScheduled",
                    "TaskStarted",
                    "TaskSucceeded",
                    "TaskStateExited",
                    "ExecutionSucceeded"
                ]
            );
            let EventDetails::TaskScheduled(scheduled) = &events[2].details else {
                panic!("scheduled");
            };
            assert_eq!(
                (
                    scheduled.resource_type.as_str(),
                    scheduled.resource.as_str()
                ),
                ("lambda", "invoke")
            );
            assert_eq!(
                scheduled.parameters,
                json!({"FunctionName": "f", "Payload": {"order": 7}})
            );
            assert_eq!(
                answers(&events),
                [
                    json!({"StatusCode": 200, "Payload": {"ok": true}}),
                    json!({"MessageId": "m-1", "MD5OfMessageBody": "x"})
                ]
            );
            // The same machine started plainly calls its integrations: nothing is mocked.
            test.start_execution("Orders", Some("plain"), "{}")
                .expect("starts");
            let skipped = test.skip_ahead();
            assert_eq!(
                skipped.stop,
                SkipStop::WaitingOnTasks(vec![
                    "arn:aws:states:us-east-1:000000000000:execution:Orders:plain".into()
                ]),
                "the plain run's Lambda task waits for a handler"
            );
        }

        #[test]
        fn a_state_the_case_does_not_mock_calls_its_integration() {
            let test = mocked();
            orders(&test, "[]", "[]");
            test.register_integration(SQS, |input: Value, _context: Value| async move {
                Ok::<_, TaskError>(json!({"sent": input["MessageBody"]}))
            });
            let arn = run(&test, "Orders#Hybrid", "hybrid");
            let events = history(&test, &arn);
            assert_eq!(
                answers(&events),
                [
                    json!({"StatusCode": 200, "Payload": {"ok": true}}),
                    json!({"sent": {"StatusCode": 200, "Payload": {"ok": true}}})
                ]
            );
        }

        #[test]
        fn throws_are_retried_by_invocation_number_and_caught() {
            let test = mocked();
            orders(
                &test,
                r#"[{"ErrorEquals":["Lambda.ServiceException","Lambda.TooManyRequestsException"],"IntervalSeconds":5,"MaxAttempts":3,"BackoffRate":1}]"#,
                r#"[{"ErrorEquals":["States.ALL"],"Next":"Handled"}]"#,
            );
            let arn = run(&test, "Orders#Flaky", "flaky");
            let events = history(&test, &arn);
            assert_eq!(
                answers(&events),
                [
                    json!(["Lambda.ServiceException", "down"]),
                    json!(["Lambda.TooManyRequestsException", "busy"]),
                    json!(["Lambda.TooManyRequestsException", "busy"]),
                    json!({"Payload": "finally"}),
                    json!({"MessageId": "m-1", "MD5OfMessageBody": "x"})
                ],
                "invocations 0, 1-2 and 3, then the SQS state's own 0"
            );
            assert_eq!(
                test.describe_execution(&arn).expect("describes").status,
                ExecutionStatus::Succeeded
            );

            // Every attempt throws: three retries, then the catcher.
            let arn = run(&test, "Orders#Broken", "broken");
            let events = history(&test, &arn);
            assert_eq!(answers(&events).len(), 4, "the first attempt and 3 retries");
            let entered: Vec<&str> = events
                .iter()
                .filter_map(|e| match &e.details {
                    EventDetails::PassStateEntered(s) => Some(s.name.as_str()),
                    _ => None,
                })
                .collect();
            assert_eq!(entered, ["Handled"]);

            // A retry past the response's numbers fails with a cause naming both.
            let arn = run(&test, "Orders#Short", "short");
            let events = history(&test, &arn);
            assert_eq!(
                answers(&events),
                [
                    json!(["Lambda.ServiceException", ""]),
                    json!([
                        "States.Runtime",
                        "the mocked response 'OnceOnly' has no answer for invocation 1 of state 'LambdaState'"
                    ])
                ]
            );
        }

        #[test]
        fn a_state_entered_again_counts_on_and_map_iterations_each_get_a_number() {
            let test = mocked();
            test.create_state_machine(
                "Loop",
                r#"{"StartAt":"Work","States":{
                    "Work":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","ResultPath":"$.last","Next":"Again"},
                    "Again":{"Type":"Choice","Choices":[{"Variable":"$.last","StringEquals":"first","Next":"Work"}],"Default":"Done"},
                    "Done":{"Type":"Succeed"}}}"#,
                None,
            )
            .expect("machine");
            let arn = run(&test, "Loop#Twice", "loop");
            assert_eq!(
                answers(&history(&test, &arn)),
                [json!("first"), json!("second")]
            );

            test.create_state_machine(
                "Fan",
                r#"{"StartAt":"M","States":{"M":{"Type":"Map","End":true,"ItemsPath":"$.items",
                    "ItemProcessor":{"StartAt":"Work","States":{
                        "Work":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","End":true}}}}}}"#,
                None,
            )
            .expect("machine");
            let arn = test
                .start_execution("Fan#Three", Some("fan"), r#"{"items":[1,2,3]}"#)
                .expect("starts")
                .execution_arn;
            assert_eq!(test.skip_ahead().stop, SkipStop::NoneOpen);
            let mut outputs: Vec<String> = answers(&history(&test, &arn))
                .iter()
                .map(|v| v.as_str().expect("a string").to_string())
                .collect();
            outputs.sort();
            assert_eq!(outputs, ["first", "second", "third"]);
        }

        #[test]
        fn a_token_task_is_answered_by_its_mock() {
            let test = mocked();
            test.create_state_machine(
                "Token",
                r#"{"StartAt":"Wait","States":{"Wait":{"Type":"Task",
                    "Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken",
                    "Parameters":{"FunctionName":"f","Payload":{"token.$":"$$.Task.Token"}},"End":true}}}"#,
                None,
            )
            .expect("machine");
            let arn = run(&test, "Token#Ok", "token");
            let described = test.describe_execution(&arn).expect("describes");
            assert_eq!(described.status, ExecutionStatus::Succeeded);
            assert_eq!(
                described.output,
                Some(json!({"StatusCode": 200, "Payload": {"ok": true}}))
            );
        }

        #[test]
        fn a_restart_mid_execution_keeps_the_answers() {
            let test = mocked();
            test.create_state_machine(
                "Slow",
                &format!(
                    r#"{{"StartAt":"LambdaState","States":{{"LambdaState":{{"Type":"Task","Resource":"{LAMBDA}",
                    "Retry":[{{"ErrorEquals":["States.ALL"],"IntervalSeconds":60,"MaxAttempts":5,"BackoffRate":1}}],"End":true}}}}}}"#
                ),
                None,
            )
            .expect("machine");
            let arn = test
                .start_execution("Slow#Flaky", Some("slow"), "{}")
                .expect("starts")
                .execution_arn;
            test.settle();
            assert_eq!(
                answers(&history(&test, &arn)).len(),
                1,
                "attempt 0 answered"
            );
            // Restarted in each backoff: the new engine has no memory of the count.
            let mut test = test;
            for _ in 0..3 {
                test = test.restart().expect("reopens");
                test.advance(std::time::Duration::from_secs(60));
            }
            let events = history(&test, &arn);
            assert_eq!(
                answers(&events),
                [
                    json!(["Lambda.ServiceException", "down"]),
                    json!(["Lambda.TooManyRequestsException", "busy"]),
                    json!(["Lambda.TooManyRequestsException", "busy"]),
                    json!({"Payload": "finally"})
                ]
            );
            let test = test.restart().expect("reopens");
            assert_eq!(
                history(&test, &arn),
                events,
                "a closed history reads the same"
            );
        }

        /// The same on a WAL directory closed and opened again (a new engine reads the log
        /// from disk, with the mock file loaded anew).
        #[test]
        fn a_reopened_wal_goes_on_with_the_same_answers() {
            let dir = tempfile::tempdir().expect("temp dir");
            let clock = crate::clock::ManualClock::new(crate::testing::TEST_CLOCK_START_MS);
            let options = || EngineOptions {
                clock: Arc::new(clock.clone()),
                background_timers: false,
                mock_config: Some(config()),
                ..EngineOptions::default()
            };
            let engine = Engine::open(dir.path(), options()).expect("opens");
            engine
                .create_state_machine(
                    "Slow",
                    &format!(
                        r#"{{"StartAt":"LambdaState","States":{{"LambdaState":{{"Type":"Task","Resource":"{LAMBDA}",
                        "Retry":[{{"ErrorEquals":["States.ALL"],"IntervalSeconds":60,"MaxAttempts":5,"BackoffRate":1}}],"End":true}}}}}}"#
                    ),
                    None,
                )
                .expect("machine");
            let arn = engine
                .start_execution("Slow#Flaky", Some("slow"), "{}")
                .expect("starts")
                .execution_arn;
            engine.wait_idle();
            drop(engine);
            for _ in 0..3 {
                let engine = Engine::open(dir.path(), options()).expect("reopens");
                clock.advance_ms(60_000);
                assert_eq!(engine.run_due_timers(), 1);
                engine.wait_idle();
            }
            let engine = Engine::open(dir.path(), options()).expect("reopens");
            let described = engine.describe_execution(&arn).expect("describes");
            assert_eq!(described.status, ExecutionStatus::Succeeded);
            assert_eq!(
                answers(&history(&engine, &arn)),
                [
                    json!(["Lambda.ServiceException", "down"]),
                    json!(["Lambda.TooManyRequestsException", "busy"]),
                    json!(["Lambda.TooManyRequestsException", "busy"]),
                    json!({"Payload": "finally"})
                ]
            );
        }

        #[test]
        fn a_test_case_start_is_refused_unless_the_file_has_it() {
            let test = mocked();
            orders(&test, "[]", "[]");
            match test.start_execution("Orders#Nope", None, "{}") {
                Err(Error::InvalidArn {
                    arn,
                    reason:
                        ArnReason::UnknownTestCase {
                            state_machine,
                            test_case,
                        },
                }) => {
                    assert_eq!(arn, "Orders#Nope");
                    assert_eq!(
                        (state_machine.as_str(), test_case.as_str()),
                        ("Orders", "Nope")
                    );
                }
                other => panic!("expected InvalidArn, got {other:?}"),
            }
            // By ARN, as the API gives it; and `$$.StateMachine.Id` has no #Case either.
            test.create_state_machine(
                "Loop",
                r#"{"StartAt":"Id","States":{"Id":{"Type":"Pass","Parameters":{"id.$":"$$.StateMachine.Id","name.$":"$$.StateMachine.Name"},"End":true}}}"#,
                None,
            )
            .expect("machine");
            let machine = test.state_machine_arn("Loop");
            let arn = run(&test, &format!("{machine}#Twice"), "context");
            assert_eq!(
                test.describe_execution(&arn).expect("describes").output,
                Some(json!({"id": machine, "name": "Loop"}))
            );

            // The name of a running test case with another case, or none, is taken.
            test.create_state_machine(
                "Token",
                r#"{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":60,"End":true}}}"#,
                None,
            )
            .expect("machine");
            test.start_execution("Token#Ok", Some("same"), "{}")
                .expect("starts");
            test.start_execution("Token#Ok", Some("same"), "{}")
                .expect("the same start again is the same execution");
            for other in ["Token", "Token#Other"] {
                let refused = test.start_execution(other, Some("same"), "{}");
                assert!(
                    matches!(
                        refused,
                        Err(Error::ExecutionAlreadyExists { .. } | Error::InvalidArn { .. })
                    ),
                    "{other}: {refused:?}"
                );
            }
            assert!(matches!(
                test.start_execution("Token", Some("same"), "{}"),
                Err(Error::ExecutionAlreadyExists { .. })
            ));

            let plain = TestEngine::new().expect("opens");
            orders(&plain, "[]", "[]");
            match plain.start_execution("Orders#Happy", None, "{}") {
                Err(Error::InvalidArn {
                    reason: ArnReason::NoMockConfig { test_case },
                    ..
                }) => assert_eq!(test_case, "Happy"),
                other => panic!("expected InvalidArn, got {other:?}"),
            }
        }
    }
}
