//! `statelog serve`'s Amazon SWF activity-worker operations over the real engine, in process: a
//! state machine whose activity Task names a `TaskList`, served by SWF calls
//! (PollForActivityTask, RecordActivityTaskHeartbeat, RespondActivityTaskCompleted /
//! RespondActivityTaskFailed, CountPendingActivityTasks), with SWF's fault names for bad and
//! spent tokens and account isolation. Time comes from a manual clock; nothing sleeps.
#![cfg(feature = "server")]

use serde_json::{json, Value};

use statelog::server::credentials::DEV_ACCOUNT_ID;

use crate::serve_common;
use serve_common::*;

/// Creates activity `resize` and a machine whose Task sends it to task list `gpu`, with a
/// Catch so a failed task ends the execution with its error visible.
async fn machine(s: &Server) -> (String, String) {
    let created = ok(s, "CreateActivity", json!({"name": "resize"})).await;
    let activity = created["activityArn"].as_str().expect("arn").to_owned();
    let definition = json!({
        "StartAt": "Work",
        "States": {
            "Work": {"Type": "Task", "Resource": activity, "TaskList": "gpu",
                     "HeartbeatSeconds": 30, "End": true}
        }
    })
    .to_string();
    let arn = create_machine(s, "swf-worked", &definition).await;
    (activity, arn)
}

/// Starts one execution of [`machine`] and claims its task from `gpu` as an SWF worker;
/// returns (execution ARN, task token).
async fn claimed(s: &Server) -> (String, String) {
    let (_activity, machine) = machine(s).await;
    let execution = start(s, &machine, "e1").await;
    idle(s, DEV_ACCOUNT_ID);
    let task = swf_ok(s, "PollForActivityTask", poll_body("gpu")).await;
    let token = task["taskToken"].as_str().expect("token").to_owned();
    (execution, token)
}

fn poll_body(list: &str) -> Value {
    json!({"domain": DEV_ACCOUNT_ID, "taskList": {"name": list}, "identity": "swf-worker-1"})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_swf_worker_serves_a_task_list() {
    let s = server(None);
    let (activity, machine) = machine(&s).await;
    let mut executions = Vec::new();
    for n in 0..2 {
        let started = ok(
            &s,
            "StartExecution",
            json!({"stateMachineArn": machine, "name": format!("e{n}"),
                   "input": format!("{{\"n\":{n}}}")}),
        )
        .await;
        executions.push(started["executionArn"].as_str().expect("arn").to_owned());
    }
    idle(&s, DEV_ACCOUNT_ID);
    let count = swf_ok(
        &s,
        "CountPendingActivityTasks",
        json!({"domain": DEV_ACCOUNT_ID, "taskList": {"name": "gpu"}}),
    )
    .await;
    assert_eq!(count, json!({"count": 2, "truncated": false}));
    // The activity's default list is empty: the tasks went to `gpu`.
    let count = swf_ok(
        &s,
        "CountPendingActivityTasks",
        json!({"domain": DEV_ACCOUNT_ID, "taskList": {"name": activity}}),
    )
    .await;
    assert_eq!(count["count"], 0);

    // First task: heartbeat, then complete.
    let task = swf_ok(&s, "PollForActivityTask", poll_body("gpu")).await;
    let token = task["taskToken"].as_str().expect("token").to_owned();
    assert!(!token.is_empty(), "{task}");
    assert_eq!(
        task["activityType"],
        json!({"name": "resize", "version": "1"})
    );
    let run_id = task["workflowExecution"]["runId"].as_str().expect("runId");
    let first = executions
        .iter()
        .position(|e| e == run_id)
        .expect("runId is one of the executions");
    assert_eq!(
        task["workflowExecution"]["workflowId"],
        format!("e{first}"),
        "{task}"
    );
    let input: Value = serde_json::from_str(task["input"].as_str().expect("input")).expect("JSON");
    assert_eq!(input["n"], first);
    assert_eq!(task["activityId"], "3", "{task}");
    let beat = swf_ok(
        &s,
        "RecordActivityTaskHeartbeat",
        json!({"taskToken": token, "details": "half way"}),
    )
    .await;
    assert_eq!(beat, json!({"cancelRequested": false}));
    swf_ok(
        &s,
        "RespondActivityTaskCompleted",
        json!({"taskToken": token, "result": json!({"resized": first}).to_string()}),
    )
    .await;

    // Second task: fail it.
    let task = swf_ok(&s, "PollForActivityTask", poll_body("gpu")).await;
    let second_token = task["taskToken"].as_str().expect("token").to_owned();
    let second_arn = task["workflowExecution"]["runId"]
        .as_str()
        .expect("runId")
        .to_owned();
    assert_ne!(second_arn, executions[first]);
    swf_ok(
        &s,
        "RespondActivityTaskFailed",
        json!({"taskToken": second_token, "reason": "Resize.Broken", "details": "bad pixels"}),
    )
    .await;
    idle(&s, DEV_ACCOUNT_ID);

    let done = ok(
        &s,
        "DescribeExecution",
        json!({"executionArn": executions[first]}),
    )
    .await;
    assert_eq!(done["status"], "SUCCEEDED", "{done}");
    let output: Value =
        serde_json::from_str(done["output"].as_str().expect("output")).expect("JSON");
    assert_eq!(output, json!({"resized": first}));
    let failed = ok(&s, "DescribeExecution", json!({"executionArn": second_arn})).await;
    assert_eq!(failed["status"], "FAILED", "{failed}");
    assert_eq!(failed["error"], "Resize.Broken");
    assert_eq!(failed["cause"], "bad pixels");
    // The worker's identity is in the history's ActivityStarted event.
    let history = ok(
        &s,
        "GetExecutionHistory",
        json!({"executionArn": executions[first]}),
    )
    .await;
    let started = history["events"]
        .as_array()
        .expect("events")
        .iter()
        .find(|e| e["type"] == "ActivityStarted")
        .expect("ActivityStarted");
    assert_eq!(
        started["activityStartedEventDetails"]["workerName"],
        "swf-worker-1"
    );

    // A spent token and a forged one are SWF's UnknownResourceFault.
    swf_refused(
        &s,
        "RespondActivityTaskCompleted",
        json!({"taskToken": token, "result": "{}"}),
        "UnknownResourceFault",
    )
    .await;
    swf_refused(
        &s,
        "RecordActivityTaskHeartbeat",
        json!({"taskToken": "forged"}),
        "UnknownResourceFault",
    )
    .await;
    // Both tasks were handed out once: nothing is left in the list.
    let count = swf_ok(
        &s,
        "CountPendingActivityTasks",
        json!({"domain": DEV_ACCOUNT_ID, "taskList": {"name": "gpu"}}),
    )
    .await;
    assert_eq!(count["count"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_that_is_not_json_is_a_validation_error_and_the_task_stays_open() {
    let s = server(None);
    let (execution, token) = claimed(&s).await;
    let message = swf_refused(
        &s,
        "RespondActivityTaskCompleted",
        json!({"taskToken": token, "result": "not json"}),
        "ValidationException",
    )
    .await;
    assert!(message.contains("result"), "{message}");
    // No result at all is a null result.
    swf_ok(
        &s,
        "RespondActivityTaskCompleted",
        json!({"taskToken": token}),
    )
    .await;
    idle(&s, DEV_ACCOUNT_ID);
    let done = ok(&s, "DescribeExecution", json!({"executionArn": execution})).await;
    assert_eq!(done["status"], "SUCCEEDED", "{done}");
    assert_eq!(done["output"], "null");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accounts_are_swf_domains() {
    let s = server(Some(two_accounts()));
    // Account one schedules a task in its list `gpu`.
    let created = ok_as(&s, ONE, "CreateActivity", json!({"name": "resize"})).await;
    let definition = json!({
        "StartAt": "Work",
        "States": {"Work": {"Type": "Task", "Resource": created["activityArn"],
                            "TaskList": "gpu", "End": true}}
    })
    .to_string();
    let machine = ok_as(
        &s,
        ONE,
        "CreateStateMachine",
        json!({"name": "m", "definition": definition, "roleArn": ROLE}),
    )
    .await;
    let start = json!({"stateMachineArn": machine["stateMachineArn"], "input": "{}"});
    ok_as(&s, ONE, "StartExecution", start).await;
    idle(&s, "111111111111");
    let list = json!({"name": "gpu"});
    let count = |domain: &str| json!({"domain": domain, "taskList": list});
    // Account two cannot name account one's domain, and its own `gpu` list is empty.
    let fault = "UnknownResourceFault";
    let foreign = count("111111111111");
    swf_refused_as(&s, TWO, "CountPendingActivityTasks", foreign, fault).await;
    let theirs = swf_ok_as(&s, TWO, "CountPendingActivityTasks", count("222222222222")).await;
    assert_eq!(theirs["count"], 0, "{theirs}");
    let mine = swf_ok_as(&s, ONE, "CountPendingActivityTasks", count("111111111111")).await;
    assert_eq!(mine["count"], 1, "{mine}");
    // Account one's worker takes it; its token is unknown to account two.
    let task = swf_ok_as(&s, ONE, "PollForActivityTask", count("111111111111")).await;
    let token = task["taskToken"].as_str().expect("token").to_owned();
    assert!(!token.is_empty(), "{task}");
    let answer = json!({"taskToken": token, "result": "{}"});
    let completed = "RespondActivityTaskCompleted";
    swf_refused_as(&s, TWO, completed, answer.clone(), fault).await;
    swf_ok_as(&s, ONE, completed, answer).await;
}

/// `cancelRequested` is always `false`: a stop closes the execution's open tasks at once, so
/// the token a worker still holds is no longer answerable (SWF's `UnknownResourceFault`) and no
/// heartbeat ever sees a cancellation in progress.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_execution_closes_the_task_a_worker_holds() {
    let s = server(None);
    let (execution, token) = claimed(&s).await;
    let beat = swf_ok(
        &s,
        "RecordActivityTaskHeartbeat",
        json!({"taskToken": token}),
    )
    .await;
    assert_eq!(beat, json!({"cancelRequested": false}));
    ok(&s, "StopExecution", json!({"executionArn": execution})).await;
    idle(&s, DEV_ACCOUNT_ID);
    swf_refused(
        &s,
        "RecordActivityTaskHeartbeat",
        json!({"taskToken": token, "details": "still going"}),
        "UnknownResourceFault",
    )
    .await;
    swf_refused(
        &s,
        "RespondActivityTaskCompleted",
        json!({"taskToken": token, "result": "{}"}),
        "UnknownResourceFault",
    )
    .await;
    let stopped = ok(&s, "DescribeExecution", json!({"executionArn": execution})).await;
    assert_eq!(stopped["status"], "ABORTED", "{stopped}");
}
