//! `statelog serve`'s waiting operations over the real engine, in process: a callback
//! (`.waitForTaskToken`) state machine answered with SendTaskSuccess / SendTaskFailure /
//! SendTaskHeartbeat over HTTP, with the AWS error names of bad, late and foreign tokens. Time
//! comes from a manual clock; nothing sleeps.
#![cfg(feature = "server")]

use std::sync::Arc;

use parking_lot::Mutex;

use serde_json::{json, Value};

use statelog::server::credentials::DEV_ACCOUNT_ID;

use crate::serve_common;
use serve_common::*;

const SEND: &str = "arn:aws:states:::sqs:sendMessage.waitForTaskToken";

/// Registers a fake queue on `account`'s engine; returns where the tokens it receives go.
fn queue(s: &Server, account_id: &str) -> Arc<Mutex<Vec<String>>> {
    let tokens: Arc<Mutex<Vec<String>>> = Arc::default();
    let engine = engine(s, account_id);
    let sink = tokens.clone();
    engine.register_integration(SEND, move |input: Value, _context: Value| {
        let sink = sink.clone();
        async move {
            let token = input["MessageBody"]["TaskToken"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            sink.lock().push(token);
            Ok(json!({"MessageId": "m-1"}))
        }
    });
    tokens
}

fn callback_machine(extra: &str) -> String {
    format!(
        r#"{{"StartAt":"Ask","States":{{
            "Ask":{{"Type":"Task","Resource":"{SEND}",
                "Parameters":{{"QueueUrl":"q","MessageBody":{{"TaskToken.$":"$$.Task.Token"}}}}
                {extra},
                "Next":"Done"}},
            "Done":{{"Type":"Pass","End":true}}}}}}"#
    )
}

/// Starts an execution of a fresh callback machine named `name` and waits until its token was
/// sent; returns (execution ARN, token).
async fn start_waiting(
    s: &Server,
    tokens: &Arc<Mutex<Vec<String>>>,
    name: &str,
    extra: &str,
) -> (String, String) {
    let machine = create_machine(s, name, &callback_machine(extra)).await;
    let before = tokens.lock().len();
    let arn = start(s, &machine, "e1").await;
    idle(s, DEV_ACCOUNT_ID);
    let token = {
        let tokens = tokens.lock();
        assert_eq!(tokens.len(), before + 1, "the queue got one token");
        tokens.last().cloned().expect("a token")
    };
    (arn, token)
}

#[tokio::test]
async fn send_task_success_over_http_completes_the_callback() {
    let s = server(None);
    let tokens = queue(&s, DEV_ACCOUNT_ID);
    let (arn, token) = start_waiting(&s, &tokens, "cb-success", "").await;
    assert_eq!(describe(&s, &arn).await["status"], "RUNNING");

    let heartbeat = ok(&s, "SendTaskHeartbeat", json!({"taskToken": token})).await;
    assert_eq!(heartbeat, json!({}));
    let answer = ok(
        &s,
        "SendTaskSuccess",
        json!({"taskToken": token, "output": "{\"answer\":42}"}),
    )
    .await;
    assert_eq!(answer, json!({}));
    idle(&s, DEV_ACCOUNT_ID);
    let described = describe(&s, &arn).await;
    assert_eq!(described["status"], "SUCCEEDED", "{described}");
    assert_eq!(described["output"], "{\"answer\":42}");

    // The task has closed: a second answer is late.
    refused_each(
        &s,
        [
            (
                "SendTaskSuccess",
                json!({"taskToken": token, "output": "{}"}),
                "TaskTimedOut",
            ),
            (
                "SendTaskHeartbeat",
                json!({"taskToken": token}),
                "TaskTimedOut",
            ),
        ],
    )
    .await;
}

#[tokio::test]
async fn send_task_failure_over_http_fails_the_execution() {
    let s = server(None);
    let tokens = queue(&s, DEV_ACCOUNT_ID);
    let (arn, token) = start_waiting(&s, &tokens, "cb-failure", "").await;
    ok(
        &s,
        "SendTaskFailure",
        json!({"taskToken": token, "error": "Worker.Broke", "cause": "the disk is full"}),
    )
    .await;
    idle(&s, DEV_ACCOUNT_ID);
    let described = describe(&s, &arn).await;
    assert_eq!(described["status"], "FAILED", "{described}");
    assert_eq!(described["error"], "Worker.Broke");
    assert_eq!(described["cause"], "the disk is full");
}

#[tokio::test]
async fn bad_tokens_and_outputs_get_aws_errors() {
    let s = server(None);
    let tokens = queue(&s, DEV_ACCOUNT_ID);
    let (arn, token) = start_waiting(&s, &tokens, "cb-bad", "").await;
    refused_each(
        &s,
        [
            (
                "SendTaskSuccess",
                json!({"taskToken": "not-a-token", "output": "{}"}),
                "InvalidToken",
            ),
            (
                "SendTaskHeartbeat",
                json!({"taskToken": "not-a-token"}),
                "InvalidToken",
            ),
            (
                "SendTaskFailure",
                json!({"taskToken": "not-a-token"}),
                "InvalidToken",
            ),
            (
                "SendTaskSuccess",
                json!({"taskToken": token, "output": "{not json"}),
                "InvalidOutput",
            ),
            // Member constraints are the service model's.
            (
                "SendTaskSuccess",
                json!({"output": "{}"}),
                "ValidationException",
            ),
            (
                "SendTaskSuccess",
                json!({"taskToken": "", "output": "{}"}),
                "ValidationException",
            ),
            (
                "SendTaskFailure",
                json!({"taskToken": token, "error": "e".repeat(257)}),
                "ValidationException",
            ),
        ],
    )
    .await;
    // None of that touched the waiting task.
    assert_eq!(describe(&s, &arn).await["status"], "RUNNING");
    ok(
        &s,
        "SendTaskSuccess",
        json!({"taskToken": token, "output": "{}"}),
    )
    .await;
    idle(&s, DEV_ACCOUNT_ID);
    assert_eq!(describe(&s, &arn).await["status"], "SUCCEEDED");
}

#[tokio::test]
async fn a_token_sent_with_another_accounts_credentials_is_invalid() {
    let s = server(Some(two_accounts()));
    let tokens = queue(&s, "111111111111");
    let created = json!({"name": "cb", "definition": callback_machine(""), "roleArn": ROLE});
    let machine = ok_as(&s, ONE, "CreateStateMachine", created).await;
    let started = ok_as(
        &s,
        ONE,
        "StartExecution",
        json!({"stateMachineArn": machine["stateMachineArn"], "name": "e1"}),
    )
    .await;
    let engine_one = engine(&s, "111111111111");
    engine_one.wait_idle();
    let token = tokens.lock().last().cloned().expect("a token");
    let answer = json!({"taskToken": token, "output": "{}"});
    refused_as(&s, TWO, "SendTaskSuccess", answer.clone(), "InvalidToken").await;
    ok_as(&s, ONE, "SendTaskSuccess", answer).await;
    engine_one.wait_idle();
    let described = engine_one
        .describe_execution(started["executionArn"].as_str().expect("arn"))
        .expect("describe");
    assert_eq!(described.status.aws_name(), "SUCCEEDED");
}

#[tokio::test]
async fn redrive_over_http_continues_from_the_failed_step() {
    let s = server(None);
    let tokens = queue(&s, DEV_ACCOUNT_ID);
    let (arn, token) = start_waiting(&s, &tokens, "cb-redrive", "").await;
    let machine_arn = describe(&s, &arn).await["stateMachineArn"].clone();

    // A running execution cannot be redriven.
    let described = describe(&s, &arn).await;
    assert_eq!(described["redriveCount"], 0);
    assert_eq!(described["redriveStatus"], "NOT_REDRIVABLE", "{described}");
    refused(
        &s,
        "RedriveExecution",
        json!({"executionArn": arn}),
        "ExecutionNotRedrivable",
    )
    .await;

    ok(
        &s,
        "SendTaskFailure",
        json!({"taskToken": token, "error": "Worker.Broke"}),
    )
    .await;
    idle(&s, DEV_ACCOUNT_ID);
    let described = describe(&s, &arn).await;
    assert_eq!(described["status"], "FAILED");
    assert_eq!(described["redriveStatus"], "REDRIVABLE", "{described}");

    s.clock.advance_ms(5_000);
    let redriven = ok(
        &s,
        "RedriveExecution",
        json!({"executionArn": arn, "clientToken": "once"}),
    )
    .await;
    let redrive_date = redriven["redriveDate"].as_f64().expect("redriveDate");
    assert!(redrive_date > 0.0, "{redriven}");
    // The same client token answers the first redrive again.
    let again = ok(
        &s,
        "RedriveExecution",
        json!({"executionArn": arn, "clientToken": "once"}),
    )
    .await;
    assert_eq!(again["redriveDate"], redriven["redriveDate"]);
    idle(&s, DEV_ACCOUNT_ID);

    let described = describe(&s, &arn).await;
    assert_eq!(described["status"], "RUNNING", "{described}");
    assert_eq!(described["redriveCount"], 1, "{described}");
    assert_eq!(described["redriveDate"], redriven["redriveDate"]);

    // The failed step runs again with a new token; answering it completes the execution.
    let second = tokens.lock().last().cloned().expect("a second token");
    assert_ne!(second, token, "the redriven task got a new token");
    ok(
        &s,
        "SendTaskSuccess",
        json!({"taskToken": second, "output": "{}"}),
    )
    .await;
    idle(&s, DEV_ACCOUNT_ID);
    assert_eq!(describe(&s, &arn).await["status"], "SUCCEEDED");

    // ListExecutions shows the redrive and filters on it.
    let listed = ok(
        &s,
        "ListExecutions",
        json!({"stateMachineArn": machine_arn, "redriveFilter": "REDRIVEN"}),
    )
    .await;
    let executions = listed["executions"].as_array().expect("executions");
    assert_eq!(executions.len(), 1, "{listed}");
    assert_eq!(executions[0]["executionArn"], arn);
    assert_eq!(executions[0]["redriveCount"], 1);
    let never = ok(
        &s,
        "ListExecutions",
        json!({"stateMachineArn": machine_arn, "redriveFilter": "NOT_REDRIVEN"}),
    )
    .await;
    assert_eq!(never["executions"], json!([]), "{never}");
    refused(
        &s,
        "ListExecutions",
        json!({"stateMachineArn": machine_arn, "redriveFilter": "SOMETIMES"}),
        "ValidationException",
    )
    .await;

    // A succeeded execution is not redrivable; unknown executions are named.
    refused_each(
        &s,
        [
            (
                "RedriveExecution",
                json!({"executionArn": arn}),
                "ExecutionNotRedrivable",
            ),
            (
                "RedriveExecution",
                json!({"executionArn": format!("{arn}-nope")}),
                "ExecutionDoesNotExist",
            ),
            (
                "RedriveExecution",
                json!({"executionArn": "nope"}),
                "InvalidArn",
            ),
        ],
    )
    .await;
}

#[tokio::test]
async fn an_activity_worker_loop_over_http() {
    let s = server(None);
    let created = ok(&s, "CreateActivity", json!({"name": "resize"})).await;
    let activity = created["activityArn"].as_str().expect("arn").to_owned();
    assert!(activity.contains(":activity:resize"), "{created}");
    // Idempotent for an existing name.
    let again = ok(&s, "CreateActivity", json!({"name": "resize"})).await;
    assert_eq!(again["activityArn"], created["activityArn"]);
    let described = ok(&s, "DescribeActivity", json!({"activityArn": activity})).await;
    assert_eq!(described["name"], "resize");
    assert_eq!(described["creationDate"], created["creationDate"]);
    ok(&s, "CreateActivity", json!({"name": "archive"})).await;
    let listed = ok(&s, "ListActivities", json!({"maxResults": 1})).await;
    assert_eq!(listed["activities"][0]["name"], "archive", "{listed}");
    let rest = ok(
        &s,
        "ListActivities",
        json!({"nextToken": listed["nextToken"]}),
    )
    .await;
    assert_eq!(rest["activities"][0]["name"], "resize", "{rest}");
    assert!(rest.get("nextToken").is_none(), "{rest}");

    let definition = json!({
        "StartAt": "Work",
        "States": {"Work": {"Type": "Task", "Resource": activity, "End": true}}
    })
    .to_string();
    let machine = create_machine(&s, "worked", &definition).await;
    let mut executions = Vec::new();
    for n in 0..3 {
        executions.push(start_with_input(&s, &machine, &format!("{{\"n\":{n}}}")).await);
    }
    idle(&s, DEV_ACCOUNT_ID);

    // The worker: poll, do the work, answer; every queued task is handed out once.
    let mut seen = Vec::new();
    for _ in 0..3 {
        let task = ok(
            &s,
            "GetActivityTask",
            json!({"activityArn": activity, "workerName": "w1"}),
        )
        .await;
        let token = task["taskToken"].as_str().expect("a task token").to_owned();
        let input: Value =
            serde_json::from_str(task["input"].as_str().expect("input")).expect("JSON input");
        let n = input["n"].as_i64().expect("n");
        seen.push(n);
        ok(
            &s,
            "SendTaskSuccess",
            json!({"taskToken": token, "output": json!({"doubled": n * 2}).to_string()}),
        )
        .await;
    }
    seen.sort_unstable();
    assert_eq!(seen, vec![0, 1, 2]);
    idle(&s, DEV_ACCOUNT_ID);
    for (arn, n) in executions.iter().zip(0..) {
        let described = describe(&s, arn).await;
        assert_eq!(described["status"], "SUCCEEDED", "{described}");
        let output: Value =
            serde_json::from_str(described["output"].as_str().expect("output")).expect("JSON");
        assert_eq!(output["doubled"], n * 2);
    }

    refused_each(
        &s,
        [
            (
                "GetActivityTask",
                json!({"activityArn": format!("{activity}-nope")}),
                "ActivityDoesNotExist",
            ),
            (
                "DescribeActivity",
                json!({"activityArn": format!("{activity}-nope")}),
                "ActivityDoesNotExist",
            ),
            (
                "DescribeActivity",
                json!({"activityArn": "nope"}),
                "InvalidArn",
            ),
            (
                "CreateActivity",
                json!({"name": "has space"}),
                "InvalidName",
            ),
            ("CreateActivity", json!({"name": ""}), "ValidationException"),
        ],
    )
    .await;

    ok(&s, "DeleteActivity", json!({"activityArn": activity})).await;
    // Already gone: still success, as AWS answers.
    ok(&s, "DeleteActivity", json!({"activityArn": activity})).await;
    refused(
        &s,
        "DescribeActivity",
        json!({"activityArn": activity}),
        "ActivityDoesNotExist",
    )
    .await;
}
