//! JSONata states through `decide`/`apply` alone (the conformance driver: a simulated clock,
//! seeded entropy): each state type's JSONata arm (`Output`, `Arguments`, `Items`,
//! `ItemSelector`, `Condition`, the number, timestamp and Fail fields, a Catcher's `Output`),
//! `$states` (`input`, `result`, `errorOutput`, `context`), runtime failures as
//! `States.QueryEvaluationError` with AWS's causes and an `EvaluationFailed` event (catchable),
//! and `$millis`/`$random` from the decision's clock and entropy.

use crate::conformance_common::interpreter::{case_request, drive};

use serde_json::{json, Value};
use statelog::history::{EventDetails, EventId, HistoryEvent, TimerPurpose};
use statelog::interpreter::{ExecutionState, Trigger};

/// The conformance driver's start time.
const T0_MS: u64 = 1_700_000_000_000;

/// A finished run: its events and the folded state.
struct Ran {
    events: Vec<HistoryEvent>,
    state: ExecutionState,
    status: String,
}

impl Ran {
    fn output(&self) -> &Value {
        self.state
            .output()
            .unwrap_or_else(|| panic!("the execution failed: {:?}", self.state.failure()))
    }

    fn types(&self) -> Vec<&'static str> {
        self.events.iter().map(|e| e.details.type_name()).collect()
    }

    fn failure(&self) -> (String, String) {
        let failure = self.state.failure().expect("the execution failed");
        (
            failure.error.clone().unwrap_or_default(),
            failure.cause.clone().unwrap_or_default(),
        )
    }
}

/// Runs `definition` on `input`; the tasks it invokes get `answers` in order (`Ok`: the
/// result, `Err`: error and cause).
fn run(definition: Value, input: Value, answers: Vec<Result<Value, (&str, &str)>>) -> Ran {
    let case = json!({
        "definition": definition.to_string(),
        "input": input.to_string(),
        "role_arn": "arn:aws:iam::000000000000:role/r",
    });
    let mut answers = answers.into_iter();
    let next = |tasks: &mut Vec<EventId>| -> Result<Option<Trigger>, String> {
        if tasks.is_empty() {
            return Ok(None);
        }
        let task_id = tasks.remove(0);
        Ok(Some(match answers.next().ok_or("no answer left")? {
            Ok(output) => Trigger::TaskSucceeded { task_id, output },
            Err((error, cause)) => Trigger::TaskFailed {
                task_id,
                error: error.to_string(),
                cause: cause.to_string(),
            },
        }))
    };
    let (events, status) = drive(&case, case_request(0, &case), next).expect("runs");
    let state = ExecutionState::replay(&events).expect("the events fold");
    Ran {
        events,
        state,
        status,
    }
}

fn jsonata(states: Value) -> Value {
    let start = states
        .as_object()
        .and_then(|m| m.keys().next().cloned())
        .expect("a state");
    json!({"QueryLanguage": "JSONata", "StartAt": start, "States": states})
}

#[test]
fn pass_output_evaluates_every_expression_in_place() {
    let ran = run(
        jsonata(json!({"P": {"Type": "Pass", "End": true, "Output": {
            "sum": "{% $states.input.a + 1 %}",
            "list": ["lit", "{% $states.input.b %}", {"deep": "{% $uppercase($states.input.s) %}"}],
            "n": 5,
            "text": "not {% an %} expression",
            "name": "{% $states.context.State.Name %}",
        }}})),
        json!({"a": 1, "b": [true], "s": "x"}),
        vec![],
    );
    assert_eq!(
        ran.output(),
        &json!({"sum": 2, "list": ["lit", [true], {"deep": "X"}], "n": 5,
                "text": "not {% an %} expression", "name": "P"})
    );
    assert_eq!(
        ran.types(),
        [
            "ExecutionStarted",
            "PassStateEntered",
            "PassStateExited",
            "ExecutionSucceeded"
        ]
    );
}

#[test]
fn a_state_without_output_passes_its_input_and_a_jsonata_state_runs_in_a_jsonpath_machine() {
    let ran = run(
        json!({"StartAt": "A", "States": {
            "A": {"Type": "Pass", "QueryLanguage": "JSONata", "Next": "B"},
            "B": {"Type": "Pass", "QueryLanguage": "JSONata", "Output": "{% $states.input.k %}",
                  "Next": "C"},
            "C": {"Type": "Pass", "Parameters": {"v.$": "$"}, "End": true},
        }}),
        json!({"k": "v"}),
        vec![],
    );
    assert_eq!(ran.output(), &json!({"v": "v"}));
}

#[test]
fn a_pass_output_reads_its_input_as_states_result_whether_or_not_other_fields_read_it() {
    // Output reads `$states.result` (the Pass's input), directly or through an alias; or reads
    // only `$states.input` beside an Assign; or is absent beside an Assign (the output is the
    // input).
    let ran = run(
        jsonata(json!({
            "A": {"Type": "Pass", "Output": {"r": "{% $states.result.k %}", "i": "{% $states.input.k %}"},
                  "Next": "B"},
            "B": {"Type": "Pass", "Output": "{% ($s := $states; $s.result) %}", "Next": "C"},
            "C": {"Type": "Pass", "Assign": {"seen": "{% $states.input.r %}"},
                  "Output": {"only": "{% $states.input.i %}", "lit": 1}, "Next": "D"},
            "D": {"Type": "Pass", "Assign": {"again": "{% $seen %}"}, "Output": {"fixed": true},
                  "Next": "E"},
            "E": {"Type": "Pass", "Assign": {"last": "{% $again %}"}, "End": true},
        })),
        json!({"k": "v"}),
        vec![],
    );
    assert_eq!(ran.output(), &json!({"fixed": true}));
    let outputs: Vec<Value> = ran
        .events
        .iter()
        .filter_map(|event| event.details.state_exited())
        .map(|exited| Value::clone(&exited.output))
        .collect();
    assert_eq!(
        outputs,
        [
            json!({"r": "v", "i": "v"}),
            json!({"r": "v", "i": "v"}),
            json!({"only": "v", "lit": 1}),
            json!({"fixed": true}),
            json!({"fixed": true}),
        ]
    );
}

#[test]
fn task_arguments_output_and_timeout_see_input_result_and_context() {
    let ran = run(
        jsonata(json!({"T": {
            "Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "End": true,
            "Arguments": {"FunctionName": "f", "Payload": "{% $states.input.p %}"},
            "TimeoutSeconds": "{% $states.input.t %}",
            "Output": "{% {'r': $states.result.v, 'p': $states.input.p, 's': $states.context.State.Name} %}",
        }})),
        json!({"p": {"q": 1}, "t": 30}),
        vec![Ok(json!({"v": 7}))],
    );
    let scheduled = ran
        .events
        .iter()
        .find_map(|e| match &e.details {
            EventDetails::TaskScheduled(d) => Some(d),
            _ => None,
        })
        .expect("a TaskScheduled");
    assert_eq!(
        scheduled.parameters,
        json!({"FunctionName": "f", "Payload": {"q": 1}})
    );
    assert_eq!(scheduled.timeout_in_seconds, Some(30));
    assert_eq!(ran.output(), &json!({"r": 7, "p": {"q": 1}, "s": "T"}));
}

#[test]
fn a_task_without_output_gives_its_result() {
    let ran = run(
        jsonata(
            json!({"T": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
                             "End": true}}),
        ),
        json!({"in": 1}),
        vec![Ok(json!({"out": 2}))],
    );
    assert_eq!(ran.output(), &json!({"out": 2}));
}

#[test]
fn choice_takes_the_first_true_condition_and_its_rule_output() {
    let definition = jsonata(json!({
        "C": {"Type": "Choice", "Default": "Small",
              "Output": {"from": "state"},
              "Choices": [
                  {"Condition": "{% $states.input.n > 10 %}", "Next": "Big",
                   "Output": {"from": "rule", "n": "{% $states.input.n %}"}},
                  {"Condition": "{% $states.input.n > 5 %}", "Next": "Big"},
              ]},
        "Big": {"Type": "Succeed"},
        "Small": {"Type": "Succeed", "Output": "{% 'small' %}"},
    }));
    let big = run(definition.clone(), json!({"n": 11}), vec![]);
    assert_eq!(big.output(), &json!({"from": "rule", "n": 11}));
    let medium = run(definition.clone(), json!({"n": 6}), vec![]);
    assert_eq!(medium.output(), &json!({"from": "state"}));
    let small = run(definition, json!({"n": 1}), vec![]);
    assert_eq!(small.output(), &json!("small"));
    // A condition that is not a boolean fails the state.
    let ran = run(
        jsonata(json!({"C": {"Type": "Choice", "Default": "D",
                             "Choices": [{"Condition": "{% $states.input.n %}", "Next": "D"}]},
                       "D": {"Type": "Succeed"}})),
        json!({"n": 3}),
        vec![],
    );
    let (error, cause) = ran.failure();
    assert_eq!(error, "States.QueryEvaluationError");
    assert!(
        cause.ends_with(
            "The JSONata expression '$states.input.n' specified for the field 'Condition' \
             returned an unexpected result type. Expected 'boolean', but was 'number' for value: 3"
        ),
        "{cause}"
    );
}

#[test]
fn wait_seconds_and_timestamp_take_expressions() {
    let ran = run(
        jsonata(json!({
            "W": {"Type": "Wait", "Seconds": "{% $states.input.s * 2 %}", "Next": "U"},
            "U": {"Type": "Wait", "Timestamp": "{% $states.input.at %}", "End": true,
                  "Output": "{% $states.input.s %}"},
        })),
        json!({"s": 5, "at": "2024-01-01T00:00:00Z"}),
        vec![],
    );
    let armed: Vec<u64> = ran
        .events
        .iter()
        .filter_map(|e| e.timer.as_ref())
        .filter(|t| t.purpose == TimerPurpose::Wait)
        .map(|t| t.due_ms)
        .collect();
    assert_eq!(armed, [T0_MS + 10_000, 1_704_067_200_000]);
    assert_eq!(ran.output(), &json!(5));
    let ran = run(
        jsonata(json!({"W": {"Type": "Wait", "Timestamp": "{% $states.input.at %}", "End": true}})),
        json!({"at": "2016-12-05 21:29:29Z"}),
        vec![],
    );
    let (error, cause) = ran.failure();
    assert_eq!(error, "States.QueryEvaluationError");
    assert_eq!(
        cause,
        "An error occurred while executing the state 'W' (entered at the event id #2). The \
         Timestamp field cannot be parsed as an ISO-8601 extended offset date-time format \
         string: 2016-12-05 21:29:29Z"
    );
    let failed = ran
        .events
        .iter()
        .find_map(|e| match &e.details {
            EventDetails::EvaluationFailed(d) => Some((e.previous_event_id, d)),
            _ => None,
        })
        .expect("an EvaluationFailed");
    assert_eq!(failed.0, 2, "a Wait's failure links to its entered event");
    assert_eq!(failed.1.location.as_deref(), Some("Timestamp"));
    assert_eq!(failed.1.state, "W");
}

#[test]
fn fail_error_and_cause_come_from_expressions() {
    let ran = run(
        jsonata(
            json!({"F": {"Type": "Fail", "Error": "{% 'E.' & $states.input.kind %}",
                             "Cause": "literal cause"}}),
        ),
        json!({"kind": "Bad"}),
        vec![],
    );
    assert_eq!(ran.status, "FAILED");
    assert_eq!(
        ran.failure(),
        ("E.Bad".to_string(), "literal cause".to_string())
    );
}

#[test]
fn map_items_and_item_selector_see_the_item_and_its_index() {
    let ran = run(
        jsonata(json!({"M": {
            "Type": "Map", "End": true, "MaxConcurrency": "{% 1 %}",
            "Items": "{% $states.input.xs %}",
            "ItemSelector": {"i": "{% $states.context.Map.Item.Index %}",
                             "v": "{% $states.context.Map.Item.Value %}",
                             "k": "{% $states.input.k %}"},
            "ItemProcessor": {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}},
            "Output": "{% $count($states.result) & ':' & $states.result[1].v %}",
        }})),
        json!({"xs": ["a", "b"], "k": 0}),
        vec![],
    );
    assert_eq!(ran.output(), &json!("2:b"));
    let literal = run(
        jsonata(json!({"M": {
            "Type": "Map", "End": true, "Items": [1, "{% $states.input.x %}"],
            "ItemProcessor": {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}},
        }})),
        json!({"x": 2}),
        vec![],
    );
    assert_eq!(literal.output(), &json!([1, 2]));
}

#[test]
fn map_items_of_the_wrong_type_fail_with_aws_cause_and_map_state_failed() {
    let ran = run(
        jsonata(json!({"M": {
            "Type": "Map", "End": true, "Items": "{% $states.input.x %}",
            "ItemProcessor": {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}},
        }})),
        json!({"x": {"foo": "bar"}}),
        vec![],
    );
    assert_eq!(
        ran.types(),
        [
            "ExecutionStarted",
            "MapStateEntered",
            "EvaluationFailed",
            "MapStateFailed",
            "ExecutionFailed"
        ]
    );
    let (error, cause) = ran.failure();
    assert_eq!(error, "States.QueryEvaluationError");
    assert_eq!(
        cause,
        "An error occurred while executing the state 'M' (entered at the event id #2). The \
         JSONata expression '$states.input.x' specified for the field 'Items' returned an \
         unexpected result type. Expected 'array', but was 'object' for value: {\"foo\":\"bar\"}"
    );
}

#[test]
fn parallel_arguments_feed_every_branch_and_output_sees_the_results() {
    let branch = |value: &str| {
        json!({"StartAt": "B", "States": {"B": {"Type": "Pass", "End": true,
                                             "Output": format!("{{% $states.input.{value} %}}")}}})
    };
    let ran = run(
        jsonata(json!({"Q": {
            "Type": "Parallel", "End": true,
            "Arguments": {"a": "{% $states.input.x %}", "b": 2},
            "Branches": [branch("a"), branch("b")],
            "Output": {"sum": "{% $sum($states.result) %}"},
        }})),
        json!({"x": 40}),
        vec![],
    );
    assert_eq!(ran.output(), &json!({"sum": 42}));
}

#[test]
fn a_catcher_output_sees_the_error_output_and_the_input() {
    let ran = run(
        jsonata(json!({
            "T": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "End": true,
                  "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "H",
                             "Output": {"e": "{% $states.errorOutput.Error %}",
                                        "in": "{% $states.input.id %}"}}]},
            "H": {"Type": "Succeed"},
        })),
        json!({"id": 9}),
        vec![Err(("Boom", "it broke"))],
    );
    assert_eq!(ran.output(), &json!({"e": "Boom", "in": 9}));
    // Without an Output the error output itself goes on.
    let ran = run(
        jsonata(json!({
            "T": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "End": true,
                  "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "H"}]},
            "H": {"Type": "Succeed"},
        })),
        json!({}),
        vec![Err(("Boom", "it broke"))],
    );
    assert_eq!(ran.output(), &json!({"Error": "Boom", "Cause": "it broke"}));
}

#[test]
fn an_expression_that_returns_nothing_is_an_evaluation_error_a_catcher_can_take() {
    let ran = run(
        jsonata(json!({"P": {"Type": "Pass", "End": true, "Output": {"r": "{% $nothing %}"}}})),
        json!({}),
        vec![],
    );
    assert_eq!(
        ran.types(),
        [
            "ExecutionStarted",
            "PassStateEntered",
            "EvaluationFailed",
            "ExecutionFailed"
        ]
    );
    assert_eq!(
        ran.failure(),
        (
            "States.QueryEvaluationError".to_string(),
            "An error occurred while executing the state 'P' (entered at the event id #2). The \
             JSONata expression '$nothing' specified for the field 'Output/r' returned nothing \
             (undefined)."
                .to_string()
        )
    );
    // A Task's Output failing after its result is caught like any error.
    let ran = run(
        jsonata(json!({
            "T": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "End": true,
                  "Output": "{% $error('no') %}",
                  "Catch": [{"ErrorEquals": ["States.QueryEvaluationError"], "Next": "H",
                             "Output": "{% $states.errorOutput.Cause %}"}]},
            "H": {"Type": "Succeed"},
        })),
        json!({}),
        vec![Ok(json!(1))],
    );
    let cause = ran.output().as_str().expect("the cause");
    assert!(
        cause.ends_with(
            "The JSONata expression '$error('no')' specified for the field 'Output' threw an \
             error during evaluation. D3137: no"
        ),
        "{cause}"
    );
}

#[test]
fn time_and_randomness_come_from_the_decision() {
    let definition = jsonata(json!({"P": {"Type": "Pass", "End": true, "Output": {
        "millis": "{% $millis() %}",
        "now": "{% $now() %}",
        "random": "{% $random() %}",
        "uuid": "{% $uuid() %}",
    }}}));
    let first = run(definition.clone(), json!({}), vec![]);
    let output = first.output();
    assert_eq!(output["millis"], json!(T0_MS));
    assert_eq!(output["now"], json!("2023-11-14T22:13:20.000Z"));
    let random = output["random"].as_f64().expect("a number");
    assert!((0.0..1.0).contains(&random), "{random}");
    assert_eq!(output["uuid"].as_str().map(str::len), Some(36));
    // The same entropy gives the same values (the driver seeds it the same way).
    let again = run(definition, json!({}), vec![]);
    assert_eq!(again.output(), first.output());
}

#[test]
fn a_map_whose_items_draw_randomness_gives_the_same_items_at_every_step() {
    // One iteration at a time, each waiting for its task: the Map's parameters are computed
    // again at each later decision and must not change.
    let ran = run(
        jsonata(json!({"M": {
            "Type": "Map", "End": true, "MaxConcurrency": 1,
            "Items": "{% ($r := $random(); [$r, $r, $millis(), $uuid()]) %}",
            "ItemProcessor": {"StartAt": "T", "States": {"T": {
                "Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "End": true,
                "Output": "{% $states.input %}"}}},
        }})),
        json!({}),
        vec![Ok(json!(0)), Ok(json!(0)), Ok(json!(0)), Ok(json!(0))],
    );
    let items = ran.output().as_array().expect("the items");
    assert_eq!(items.len(), 4);
    assert!(items[0].as_f64().is_some_and(|r| (0.0..1.0).contains(&r)));
    // Item 1 was started at a later decision than item 0: the same draw.
    assert_eq!(items[0], items[1]);
    assert_eq!(items[2], json!(T0_MS), "the Map's entry time");
    assert_eq!(items[3].as_str().map(str::len), Some(36));
}
