//! The engine's own service as integrations: `states:startExecution` (request/response and
//! `.waitForTaskToken`, the child answering its parent's token through
//! `aws-sdk:sfn:sendTaskSuccess`/`sendTaskFailure`), and the SDK's `describeExecution` and
//! `stopExecution`. Runs on the manual clock; waits end by the executions closing, never by time.

mod engine_common;

use engine_common::{event_types, Harness};
use serde_json::json;
use statelog::engine::ExecutionStatus;

const CHILD_ANSWERS: &str = r#"{"StartAt":"Answer","States":{"Answer":{"Type":"Task",
    "Resource":"arn:aws:states:::aws-sdk:sfn:sendTaskSuccess",
    "Parameters":{"TaskToken.$":"$.token","Output.$":"States.JsonToString($.payload)"},"End":true}}}"#;

const CHILD_FAILS: &str = r#"{"StartAt":"Answer","States":{"Answer":{"Type":"Task",
    "Resource":"arn:aws:states:::aws-sdk:sfn:sendTaskFailure",
    "Parameters":{"TaskToken.$":"$.token","Error":"Child.Refused","Cause":"no"},"End":true}}}"#;

fn parent(child_arn: &str) -> String {
    format!(
        r#"{{"StartAt":"Call","States":{{"Call":{{"Type":"Task",
        "Resource":"arn:aws:states:::states:startExecution.waitForTaskToken",
        "Parameters":{{"StateMachineArn":"{child_arn}",
            "Input":{{"token.$":"$$.Task.Token","payload":{{"v.$":"$.v"}}}}}},
        "End":true}}}}}}"#
    )
}

#[test]
fn a_child_answers_its_parents_token_from_inside_a_state_machine() {
    let h = Harness::new();
    let child = h
        .engine
        .create_state_machine("child", CHILD_ANSWERS, None)
        .expect("child");
    h.engine
        .create_state_machine("parent", &parent(&child.state_machine_arn), None)
        .expect("parent");
    let arn = h
        .engine
        .start_execution("parent", Some("p1"), r#"{"v":5}"#)
        .expect("start")
        .execution_arn;
    let done = h.engine.wait_until_closed(&arn).expect("closes");
    assert_eq!(done.status, ExecutionStatus::Succeeded);
    assert_eq!(done.output, Some(json!({"v": 5})));
    // The child may answer before the start's own answer is recorded (then no TaskSubmitted):
    // either way the task completes exactly once.
    let types = event_types(&h.engine, &arn);
    assert_eq!(
        types.iter().filter(|t| *t == "TaskSucceeded").count(),
        1,
        "{types:?}"
    );
    let child_arn = h.engine.list_executions(&Default::default()).expect("list");
    assert_eq!(child_arn.executions.len(), 2, "parent and child");
}

#[test]
fn a_child_failure_fails_the_parent_task() {
    let h = Harness::new();
    let child = h
        .engine
        .create_state_machine("child", CHILD_FAILS, None)
        .expect("child");
    h.engine
        .create_state_machine("parent", &parent(&child.state_machine_arn), None)
        .expect("parent");
    let arn = h
        .engine
        .start_execution("parent", Some("p1"), r#"{"v":5}"#)
        .expect("start")
        .execution_arn;
    let done = h.engine.wait_until_closed(&arn).expect("closes");
    assert_eq!(done.status, ExecutionStatus::Failed);
    assert_eq!(done.error.as_deref(), Some("Child.Refused"));
}

#[test]
fn start_describe_and_stop_through_the_sdk_integration() {
    let h = Harness::new();
    let waiting = h
        .engine
        .create_state_machine(
            "sleeper",
            r#"{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":3600,"End":true}}}"#,
            None,
        )
        .expect("sleeper");
    let driver = format!(
        r#"{{"StartAt":"Start","States":{{
        "Start":{{"Type":"Task","Resource":"arn:aws:states:::states:startExecution",
            "Parameters":{{"StateMachineArn":"{}","Name":"kid","Input":{{"a":1}}}},
            "ResultPath":"$.started","Next":"Describe"}},
        "Describe":{{"Type":"Task","Resource":"arn:aws:states:::aws-sdk:sfn:describeExecution",
            "Parameters":{{"ExecutionArn.$":"$.started.ExecutionArn"}},
            "ResultSelector":{{"Status.$":"$.Status","Input.$":"$.Input"}},
            "ResultPath":"$.described","Next":"Stop"}},
        "Stop":{{"Type":"Task","Resource":"arn:aws:states:::aws-sdk:sfn:stopExecution",
            "Parameters":{{"ExecutionArn.$":"$.started.ExecutionArn","Error":"Enough"}},
            "ResultPath":null,"Next":"Again"}},
        "Again":{{"Type":"Task","Resource":"arn:aws:states:::aws-sdk:sfn:sendTaskSuccess",
            "Parameters":{{"TaskToken":"forged","Output":"{{}}"}},
            "Catch":[{{"ErrorEquals":["Sfn.InvalidTokenException"],"ResultPath":"$.refused","Next":"Done"}}],
            "End":true}},
        "Done":{{"Type":"Pass","End":true}}}}}}"#,
        waiting.state_machine_arn
    );
    h.engine
        .create_state_machine("driver", &driver, None)
        .expect("driver");
    let arn = h
        .engine
        .start_execution("driver", Some("d1"), "{}")
        .expect("start")
        .execution_arn;
    let done = h.engine.wait_until_closed(&arn).expect("closes");
    assert_eq!(done.status, ExecutionStatus::Succeeded, "{done:?}");
    let output = done.output.expect("output");
    assert_eq!(
        output["described"],
        json!({"Status": "RUNNING", "Input": "{\"a\":1}"})
    );
    assert_eq!(
        output["refused"]["Error"],
        json!("Sfn.InvalidTokenException")
    );
    let kid = h.engine.execution_arn("sleeper", "kid");
    let kid = h.engine.describe_execution(&kid).expect("kid");
    assert_eq!(kid.status, ExecutionStatus::Aborted);
    assert_eq!(kid.error.as_deref(), Some("Enough"));
}
