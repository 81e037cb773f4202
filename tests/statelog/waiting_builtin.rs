//! The engine's own service as integrations: `states:startExecution` (request/response and
//! `.waitForTaskToken`, the child answering its parent's token through
//! `aws-sdk:sfn:sendTaskSuccess`/`sendTaskFailure`), `.sync` / `.sync:2` (the child's close
//! completes the parent, across a restart too; stopping the parent stops the child), and the
//! SDK's `describeExecution` and `stopExecution`. Runs on the manual clock; waits end by the executions closing, never by time.

use crate::engine_common;

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

/// A parent whose one Task starts `child_arn` as `kid` with pattern `suffix`, passing `n` on;
/// `extra` adds fields to the Task (e.g. `,"TimeoutSeconds":5`).
fn sync_parent(child_arn: &str, suffix: &str, extra: &str) -> String {
    format!(
        r#"{{"StartAt":"Run","States":{{"Run":{{"Type":"Task",
        "Resource":"arn:aws:states:::states:startExecution{suffix}",
        "Parameters":{{"StateMachineArn":"{child_arn}","Name":"kid","Input":{{"n.$":"$.n"}}}}{extra},
        "End":true}}}}}}"#
    )
}

#[test]
fn sync_waits_for_the_child_and_sync2_returns_json() {
    let h = Harness::new();
    let child = h
        .engine
        .create_state_machine(
            "child",
            r#"{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":10,"Next":"P"},
                "P":{"Type":"Pass","Parameters":{"doubled.$":"States.MathAdd($.n, $.n)"},"End":true}}}"#,
            None,
        )
        .expect("child");
    for (machine, suffix) in [("p1", ".sync"), ("p2", ".sync:2")] {
        h.engine
            .create_state_machine(
                machine,
                &sync_parent(&child.state_machine_arn, suffix, ""),
                None,
            )
            .expect("parent");
    }
    let sync = h
        .engine
        .start_execution("p1", Some("a"), r#"{"n":2}"#)
        .expect("start")
        .execution_arn;
    h.engine.wait_idle();
    assert_eq!(
        h.engine.describe_execution(&sync).expect("d").status,
        ExecutionStatus::Running,
        "waits for the child"
    );
    h.clock.advance_ms(10_000);
    h.engine.run_due_timers();
    let done = h.engine.wait_until_closed(&sync).expect("closes");
    assert_eq!(done.status, ExecutionStatus::Succeeded);
    let output = done.output.expect("output");
    assert_eq!(output["Status"], json!("SUCCEEDED"));
    assert_eq!(
        output["Output"],
        json!("{\"doubled\":4}"),
        "JSON text for .sync"
    );
    let types = event_types(&h.engine, &sync);
    assert_eq!(
        types.iter().filter(|t| *t == "TaskSucceeded").count(),
        1,
        "{types:?}"
    );
    // A child name is taken once; .sync:2 needs another child.
    h.engine.delete_state_machine("p2").expect("delete");
    h.engine
        .create_state_machine(
            "p2",
            &sync_parent(&child.state_machine_arn, ".sync:2", "").replace("kid", "kid2"),
            None,
        )
        .expect("parent");
    let sync2 = h
        .engine
        .start_execution("p2", Some("b"), r#"{"n":3}"#)
        .expect("start")
        .execution_arn;
    h.engine.wait_idle();
    h.clock.advance_ms(10_000);
    h.engine.run_due_timers();
    let done = h.engine.wait_until_closed(&sync2).expect("closes");
    assert_eq!(
        done.output.expect("output")["Output"],
        json!({"doubled": 6})
    );
}

#[test]
fn stopping_the_parent_stops_a_sync_child() {
    let h = Harness::new();
    let (parent, kid) = running_sync_parent(&h, "");
    h.engine
        .stop_execution(&parent, Some("Stop"), None)
        .expect("stop");
    let kid = h.engine.wait_until_closed(&kid).expect("kid closes");
    assert_eq!(kid.status, ExecutionStatus::Aborted);
    assert!(h.engine.background_errors().is_empty());
}

#[test]
fn a_sync_parent_is_matched_with_its_child_again_after_a_restart() {
    let h = Harness::new();
    let child = h
        .engine
        .create_state_machine(
            "child",
            r#"{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":10,"End":true}}}"#,
            None,
        )
        .expect("child");
    h.engine
        .create_state_machine(
            "p",
            &sync_parent(&child.state_machine_arn, ".sync:2", ""),
            None,
        )
        .expect("parent");
    let parent = h
        .engine
        .start_execution("p", Some("a"), r#"{"n":1}"#)
        .expect("start")
        .execution_arn;
    h.engine.wait_idle();
    // Restart past the child's wait: on open the parent's job is matched with its child again
    // (from the TaskSubmitted output), then the child's late timer closes it and pushes.
    let h = h.restart(20_000);
    h.engine.run_due_timers();
    let done = h.engine.wait_until_closed(&parent).expect("closes");
    assert_eq!(done.status, ExecutionStatus::Succeeded);
    assert_eq!(done.output.expect("output")["Output"], json!({"n": 1}));
}

/// A running `.sync` parent whose task has `extra` (e.g. `TimeoutSeconds`), over its running
/// child `kid` that waits an hour: (parent, kid).
fn running_sync_parent(h: &Harness, extra: &str) -> (String, String) {
    let child = h
        .engine
        .create_state_machine(
            "child",
            r#"{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":3600,"End":true}}}"#,
            None,
        )
        .expect("child");
    h.engine
        .create_state_machine(
            "p",
            &sync_parent(&child.state_machine_arn, ".sync", extra),
            None,
        )
        .expect("parent");
    let parent = h
        .engine
        .start_execution("p", Some("a"), r#"{"n":1}"#)
        .expect("start")
        .execution_arn;
    h.engine.wait_idle();
    let kid = h.engine.execution_arn("child", "kid");
    assert_eq!(
        h.engine.describe_execution(&kid).expect("kid").status,
        ExecutionStatus::Running
    );
    (parent, kid)
}

#[test]
fn a_sync_tasks_timeout_stops_the_child() {
    let h = Harness::new();
    let (parent, kid) = running_sync_parent(&h, r#","TimeoutSeconds":5"#);
    h.clock.advance_ms(5_000);
    h.engine.run_due_timers();
    let done = h.engine.wait_until_closed(&parent).expect("parent closes");
    assert_eq!(done.error.as_deref(), Some("States.Timeout"));
    let kid = h.engine.wait_until_closed(&kid).expect("kid closes");
    assert_eq!(kid.status, ExecutionStatus::Aborted);
    assert!(h.engine.background_errors().is_empty());
}

#[test]
fn a_sync_tasks_heartbeat_timeout_stops_the_child() {
    let h = Harness::new();
    let (parent, kid) = running_sync_parent(&h, r#","HeartbeatSeconds":5"#);
    h.clock.advance_ms(5_000);
    h.engine.run_due_timers();
    let done = h.engine.wait_until_closed(&parent).expect("parent closes");
    assert_eq!(done.error.as_deref(), Some("States.HeartbeatTimeout"));
    let kid = h.engine.wait_until_closed(&kid).expect("kid closes");
    assert_eq!(kid.status, ExecutionStatus::Aborted);
    assert!(h.engine.background_errors().is_empty());
}

#[test]
fn a_sync_child_started_through_a_version_arn_answers_its_parent() {
    // The child's ARN names its machine, not the version: the parent waits for the right one.
    let h = Harness::new();
    h.engine
        .create_state_machine(
            "child",
            r#"{"StartAt":"P","States":{"P":{"Type":"Pass","Result":{"v":1},"End":true}}}"#,
            None,
        )
        .expect("child");
    let version = h
        .engine
        .publish_state_machine_version("child", None, None)
        .expect("publishes");
    h.engine
        .create_state_machine(
            "parent",
            &sync_parent(&version.state_machine_version_arn, ".sync:2", ""),
            None,
        )
        .expect("parent");
    let arn = h
        .engine
        .start_execution("parent", Some("p"), r#"{"n":1}"#)
        .expect("start")
        .execution_arn;
    let done = h.engine.wait_until_closed(&arn).expect("closes");
    assert_eq!(done.status, ExecutionStatus::Succeeded, "{done:?}");
    let output = done.output.expect("output");
    assert_eq!(output["Output"], json!({"v": 1}));
    assert!(
        output["ExecutionArn"]
            .as_str()
            .is_some_and(|a| a.ends_with(":execution:child:kid")),
        "{output}"
    );
}

#[test]
fn an_express_sync_child_fails_the_task_instead_of_waiting_for_ever() {
    let h = Harness::new();
    let child = h
        .engine
        .create_state_machine_of_type(
            "fast",
            r#"{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}"#,
            None,
            statelog::engine::MachineType::Express,
            &[],
        )
        .expect("child");
    h.engine
        .create_state_machine(
            "parent",
            &sync_parent(&child.state_machine_arn, ".sync", ""),
            None,
        )
        .expect("parent");
    let arn = h
        .engine
        .start_execution("parent", Some("p"), r#"{"n":1}"#)
        .expect("start")
        .execution_arn;
    let done = h.engine.wait_until_closed(&arn).expect("closes");
    assert_eq!(done.status, ExecutionStatus::Failed);
    assert_eq!(
        done.error.as_deref(),
        Some("Sfn.StateMachineTypeNotSupportedException")
    );
}
