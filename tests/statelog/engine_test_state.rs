//! `Engine::test_state` (AWS's TestState) through the engine's API: a Task without a mock calls
//! the registered handler, a JSONata state shows its `Arguments` and the variables it sets, a
//! whole machine is tested at a named state, and the test appends nothing to the log. Each
//! refusal has its AWS name (`InvalidDefinition`, `InvalidExecutionInput`,
//! `ValidationException`).

use std::sync::Arc;

use serde_json::{json, Value};

use statelog::clock::ManualClock;
use statelog::engine::test_state::{
    test_state_detached, Detached, TestMock, TestStateRequest, TestStatus,
};
use statelog::engine::{Engine, EngineOptions, OsRandom, TaskError};
use statelog::store::{Log, MemoryLog};

use crate::engine_common::START_MS;

const LAMBDA: &str = "arn:aws:states:::lambda:invoke";

fn open() -> (Engine, Arc<MemoryLog>) {
    let log = Arc::new(MemoryLog::new());
    let options = EngineOptions {
        clock: Arc::new(ManualClock::new(START_MS)),
        background_timers: false,
        ..EngineOptions::default()
    };
    let engine = Engine::open_with_log(log.clone(), options).expect("open");
    (engine, log)
}

fn request(state: Value, input: Value) -> TestStateRequest {
    TestStateRequest {
        definition: state.to_string(),
        input: Some(input.to_string()),
        ..TestStateRequest::default()
    }
}

fn mock_result(result: Value) -> Option<TestMock> {
    Some(TestMock {
        result: Some(result.to_string()),
        error: None,
        cause: None,
        error_output: false,
    })
}

#[test]
fn a_task_without_a_mock_calls_the_registered_handler_and_writes_nothing() {
    let (engine, log) = open();
    engine.register_integration(LAMBDA, |input: Value, context: Value| async move {
        Ok(json!({"Payload": {"echo": input["Payload"], "state": context["State"]["Name"]}}))
    });
    let before = log.stats();
    let state = json!({
        "Type": "Task",
        "Resource": LAMBDA,
        "Parameters": {"Payload.$": "$.value"},
        "ResultSelector": {"answer.$": "$.Payload"},
        "ResultPath": "$.result",
        "Next": "Done"
    });
    let answer = engine
        .test_state(&request(state, json!({"value": 3})))
        .expect("tested");
    assert_eq!(answer.status, TestStatus::Succeeded);
    assert_eq!(answer.next_state.as_deref(), Some("Done"));
    assert_eq!(
        answer.output,
        Some(json!({"value": 3, "result": {"answer": {"echo": 3, "state": "StateName"}}}))
    );
    assert_eq!(
        answer.inspection.after_parameters,
        Some(json!({"Payload": 3}))
    );
    let after = log.stats();
    assert_eq!(after.next_lsn, before.next_lsn, "a test appends nothing");
    assert!(engine
        .list_executions(&Default::default())
        .expect("listed")
        .executions
        .is_empty());
}

#[test]
fn a_handler_failure_goes_through_retry_and_catch() {
    let (engine, _log) = open();
    engine.register_integration(LAMBDA, |_: Value, _: Value| async move {
        Err::<Value, _>(TaskError::new("Lambda.Boom", "it broke"))
    });
    let state = json!({
        "Type": "Task",
        "Resource": LAMBDA,
        "Retry": [{"ErrorEquals": ["Lambda.Boom"], "MaxAttempts": 2, "IntervalSeconds": 3}],
        "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Recover"}],
        "End": true
    });
    let mut retried = request(state.clone(), json!({}));
    let answer = engine.test_state(&retried).expect("tested");
    assert_eq!(answer.status, TestStatus::Retriable);
    let details = answer.inspection.error_details.expect("details");
    assert_eq!(details.retry_index, Some(0));
    assert_eq!(details.retry_backoff_interval_seconds, Some(3));
    retried.retrier_retry_count = Some(2);
    // The handler's answer is not a mock, but the retry count applies to it as well.
    let answer = engine.test_state(&retried).expect("tested");
    assert_eq!(answer.status, TestStatus::CaughtError);
    assert_eq!(answer.next_state.as_deref(), Some("Recover"));
    assert_eq!(
        answer.output,
        Some(json!({"Error": "Lambda.Boom", "Cause": "it broke"}))
    );
}

#[test]
fn a_jsonata_task_shows_its_arguments_output_and_assigned_variables() {
    let (engine, _log) = open();
    let state = json!({
        "Type": "Task",
        "QueryLanguage": "JSONata",
        "Resource": LAMBDA,
        "Arguments": {"FunctionName": "f", "Payload": "{% $states.input.n + $base %}"},
        "Assign": {"last": "{% $states.result.Payload %}"},
        "Output": "{% {'doubled': $states.result.Payload * 2} %}",
        "End": true
    });
    let mut test = request(state, json!({"n": 4}));
    test.variables = Some(json!({"base": 10}).to_string());
    test.mock = mock_result(json!({"Payload": 14}));
    let answer = engine.test_state(&test).expect("tested");
    assert_eq!(answer.status, TestStatus::Succeeded);
    assert_eq!(answer.output, Some(json!({"doubled": 28})));
    assert_eq!(
        answer.inspection.after_arguments,
        Some(json!({"FunctionName": "f", "Payload": 14}))
    );
    assert_eq!(answer.inspection.after_parameters, None);
    assert_eq!(answer.inspection.after_input_path, None);
    assert_eq!(answer.inspection.variables.get("last"), Some(&json!(14)));
    assert_eq!(answer.inspection.variables.get("base"), Some(&json!(10)));
}

#[test]
fn a_whole_machine_is_tested_at_the_named_state() {
    let (engine, _log) = open();
    let machine = json!({
        "StartAt": "First",
        "States": {
            "First": {"Type": "Pass", "Next": "Second"},
            "Second": {"Type": "Pass", "Result": "second", "End": true}
        }
    });
    let mut test = request(machine, json!({}));
    test.state_name = Some("Second".into());
    let answer = engine.test_state(&test).expect("tested");
    assert_eq!(answer.output, Some(json!("second")));
    assert_eq!(answer.next_state, None);
    test.state_name = Some("Third".into());
    let refused = engine.test_state(&test).expect_err("no such state");
    assert_eq!(refused.aws_name(), "ValidationException");
    assert!(refused.to_string().contains("Third"), "{refused}");
}

#[test]
fn each_refusal_has_its_aws_name() {
    let (engine, _log) = open();
    let pass = json!({"Type": "Pass", "End": true});
    let task = json!({"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage", "End": true});
    let mut bad_input = request(pass.clone(), json!({}));
    bad_input.input = Some("{not json".into());
    let mut mocked_pass = request(pass.clone(), json!({}));
    mocked_pass.mock = mock_result(json!(1));
    let mut bad_variables = request(pass.clone(), json!({}));
    bad_variables.variables = Some("[1]".into());
    let mut context_alone = request(pass.clone(), json!({}));
    context_alone.context = Some("{}".into());
    let mut bad_mock = request(task.clone(), json!({}));
    bad_mock.mock = Some(TestMock {
        result: Some("not json".into()),
        error: None,
        cause: None,
        error_output: false,
    });
    let parallel = json!({"Type": "Parallel", "End": true, "Branches": [
        {"StartAt": "A", "States": {"A": {"Type": "Pass", "End": true}}}
    ]});
    let mut map_count = request(pass.clone(), json!({}));
    map_count.map_iteration_failure_count = Some(1);
    let cases = [
        (
            request(json!({"Type": "Nope"}), json!({})),
            "InvalidDefinition",
        ),
        (bad_input, "InvalidExecutionInput"),
        (mocked_pass, "ValidationException"),
        (bad_variables, "ValidationException"),
        (context_alone, "ValidationException"),
        (bad_mock, "ValidationException"),
        (request(task, json!({})), "ValidationException"),
        (request(parallel, json!({})), "InvalidDefinition"),
        (map_count, "ValidationException"),
    ];
    for (test, aws_name) in cases {
        let refused = engine.test_state(&test).expect_err("refused");
        assert_eq!(refused.aws_name(), aws_name, "{test:?}: {refused}");
    }
}

#[test]
fn a_built_in_integration_is_not_called_without_a_mock() {
    let (engine, log) = open();
    let before = log.stats();
    let state = json!({
        "Type": "Task",
        "Resource": "arn:aws:states:::states:startExecution",
        "Parameters": {"StateMachineArn": "arn:aws:states:us-east-1:000000000000:stateMachine:m"},
        "End": true
    });
    let refused = engine
        .test_state(&request(state, json!({})))
        .expect_err("refused");
    assert_eq!(refused.aws_name(), "ValidationException");
    assert!(refused.to_string().contains("built-in"), "{refused}");
    assert_eq!(log.stats().next_lsn, before.next_lsn);
}

#[test]
fn the_detached_test_answers_as_the_engine_does_without_handlers() {
    let (engine, _log) = open();
    let state = json!({
        "Type": "Choice",
        "Choices": [{"Variable": "$.n", "NumericGreaterThan": 1, "Next": "Big"}],
        "Default": "Small"
    });
    let test = request(state, json!({"n": 2}));
    let detached = Detached {
        clock: Arc::new(ManualClock::new(START_MS)),
        random: Arc::new(OsRandom),
        region: "us-east-1".into(),
        account: "000000000000".into(),
    };
    let alone = test_state_detached(&test, &detached).expect("tested");
    let with_engine = engine.test_state(&test).expect("tested");
    assert_eq!(alone, with_engine);
    assert_eq!(alone.next_state.as_deref(), Some("Big"));
    let task = request(
        json!({"Type": "Task", "Resource": LAMBDA, "End": true}),
        json!({}),
    );
    let refused = test_state_detached(&task, &detached).expect_err("no handler");
    assert!(refused.to_string().contains("mock"), "{refused}");
}
