//! Express workflows through `statelog serve` in process: `CreateStateMachine` with
//! `type: EXPRESS` (described and listed with it), `StartSyncExecution`'s answer in AWS's
//! shape (succeeded, failed, `includedData`), an asynchronous `StartExecution` whose name may
//! repeat, the refusals AWS answers for Express executions and machines, and a request whose
//! `Host` carries botocore's `sync-` prefix. Nothing is written to the log by an execution.
#![cfg(feature = "server")]

use axum::http::StatusCode;
use serde_json::{json, Value};
use statelog::server::sigv4::{signed_json_request, SigningParams};

use crate::serve_common;
use serve_common::*;

const QUICK: &str = r#"{"StartAt":"P","States":{
    "P":{"Type":"Pass","Result":{"Arg1":"argument1"},"Next":"C"},
    "C":{"Type":"Choice","Choices":[{"Variable":"$.Arg1","StringEquals":"argument1","Next":"Ok"}],"Default":"No"},
    "Ok":{"Type":"Succeed"},
    "No":{"Type":"Fail","Error":"SomeFailure","Cause":"not argument1"}}}"#;

const FAILS: &str =
    r#"{"StartAt":"F","States":{"F":{"Type":"Fail","Error":"SomeFailure","Cause":"it fails"}}}"#;

async fn create_express(s: &Server, name: &str, definition: &str) -> String {
    let created = ok(
        s,
        "CreateStateMachine",
        json!({"name": name, "definition": definition, "roleArn": ROLE, "type": "EXPRESS"}),
    )
    .await;
    created["stateMachineArn"].as_str().expect("arn").to_owned()
}

/// The account's engine's commits and log writes so far.
fn records(s: &Server) -> (u64, u64) {
    let metrics = engine(s, "000000000000").metrics();
    (metrics.commits, metrics.wal_writes)
}

#[tokio::test]
async fn start_sync_execution_answers_in_aws_shape_and_writes_nothing() {
    let s = server(None);
    let machine = create_express(&s, "quick", QUICK).await;
    let described = ok(
        &s,
        "DescribeStateMachine",
        json!({"stateMachineArn": machine}),
    )
    .await;
    assert_eq!(described["type"], "EXPRESS");
    let listed = ok(&s, "ListStateMachines", json!({})).await;
    assert_eq!(listed["stateMachines"][0]["type"], "EXPRESS");
    let before = records(&s);

    let answer = ok(
        &s,
        "StartSyncExecution",
        json!({"stateMachineArn": machine, "name": "sync", "input": "{\"k\": 1}"}),
    )
    .await;
    assert_eq!(answer["status"], "SUCCEEDED", "{answer}");
    assert_eq!(answer["name"], "sync");
    assert_eq!(answer["stateMachineArn"], machine.as_str());
    let arn = answer["executionArn"].as_str().expect("arn");
    assert!(
        arn.starts_with("arn:aws:states:us-east-1:000000000000:express:quick:sync:"),
        "{arn}"
    );
    assert_eq!(answer["input"], "{\"k\": 1}");
    assert_eq!(answer["output"], r#"{"Arg1":"argument1"}"#);
    assert_eq!(answer["inputDetails"], json!({"included": true}));
    assert_eq!(answer["outputDetails"], json!({"included": true}));
    assert_eq!(
        answer["billingDetails"],
        json!({"billedMemoryUsedInMB": 64, "billedDurationInMilliseconds": 100})
    );
    assert!(answer["startDate"].is_number() && answer["stopDate"].is_number());
    assert!(answer.get("error").is_none() && answer.get("cause").is_none());

    // Only metadata when asked.
    let bare = ok(
        &s,
        "StartSyncExecution",
        json!({"stateMachineArn": machine, "includedData": "METADATA_ONLY"}),
    )
    .await;
    assert!(
        bare.get("input").is_none() && bare.get("output").is_none(),
        "{bare}"
    );
    assert_eq!(bare["outputDetails"], json!({"included": false}));

    // Asynchronous starts of one name are two executions.
    let start = || async {
        let started = ok(
            &s,
            "StartExecution",
            json!({"stateMachineArn": machine, "name": "again"}),
        )
        .await;
        started["executionArn"].as_str().expect("arn").to_owned()
    };
    let (first, second) = (start().await, start().await);
    assert_ne!(first, second);
    assert!(first.contains(":express:quick:again:"), "{first}");
    assert_eq!(records(&s), before, "an Express execution writes nothing");
}

#[tokio::test]
async fn a_failed_sync_execution_is_a_200_with_its_error() {
    let s = server(None);
    let machine = create_express(&s, "fails", FAILS).await;
    let answer = ok(
        &s,
        "StartSyncExecution",
        json!({"stateMachineArn": machine}),
    )
    .await;
    assert_eq!(answer["status"], "FAILED");
    assert_eq!(answer["error"], "SomeFailure");
    assert_eq!(answer["cause"], "it fails");
    assert!(answer.get("output").is_none());
    assert_eq!(answer["outputDetails"], json!({"included": true}));
}

#[tokio::test]
async fn express_executions_and_machines_get_aws_refusals() {
    let s = server(None);
    let express = create_express(&s, "quick", QUICK).await;
    let standard = create_machine(&s, "standard", QUICK).await;
    let answer = ok(
        &s,
        "StartSyncExecution",
        json!({"stateMachineArn": express}),
    )
    .await;
    let arn = answer["executionArn"].clone();
    for operation in ["DescribeExecution", "GetExecutionHistory", "StopExecution"] {
        let message = refused(&s, operation, json!({"executionArn": arn}), "InvalidArn").await;
        assert!(
            message.ends_with("Resource type not valid in this context: express"),
            "{operation}: {message}"
        );
    }
    refused(
        &s,
        "ListExecutions",
        json!({"stateMachineArn": express}),
        "StateMachineTypeNotSupported",
    )
    .await;
    let message = refused(
        &s,
        "StartSyncExecution",
        json!({"stateMachineArn": standard}),
        "StateMachineTypeNotSupported",
    )
    .await;
    assert_eq!(
        message,
        "This operation is not supported by this type of state machine"
    );
    let definition = json!({"StartAt": "T", "States": {"T": {"Type": "Task",
        "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken", "End": true}}});
    let message = refused(
        &s,
        "CreateStateMachine",
        json!({"name": "cb", "definition": definition.to_string(), "roleArn": ROLE,
               "type": "EXPRESS"}),
        "InvalidDefinition",
    )
    .await;
    assert!(
        message.contains(
            "/States/T/Resource: Express state machine does not support '.waitForTaskToken'"
        ),
        "{message}"
    );
    // ValidateStateMachineDefinition holds an EXPRESS definition to the same rules.
    let validate =
        |machine_type: &str| json!({"definition": definition.to_string(), "type": machine_type});
    let standard = ok(&s, "ValidateStateMachineDefinition", validate("STANDARD")).await;
    assert_eq!(standard["result"], "OK", "{standard}");
    let express = ok(&s, "ValidateStateMachineDefinition", validate("EXPRESS")).await;
    assert_eq!(express["result"], "FAIL", "{express}");
    assert_eq!(express["diagnostics"][0]["location"], "/States/T/Resource");
}

/// botocore sends `StartSyncExecution` to `sync-<host>` (the operation's `hostPrefix`); the
/// server answers whatever `Host` the request names, as long as it was signed with it.
#[tokio::test]
async fn a_sync_prefixed_host_is_served() {
    let s = server(None);
    let machine = create_express(&s, "quick", QUICK).await;
    let params = SigningParams {
        access_key_id: DEV.id,
        secret_access_key: DEV.secret,
        region: "us-east-1",
        service: "states",
        now_ms: NOW_MS,
    };
    let body = json!({"stateMachineArn": machine}).to_string().into_bytes();
    let request = signed_json_request(
        "sync-127.0.0.1:8083",
        "AWSStepFunctions.StartSyncExecution",
        body,
        &params,
    )
    .expect("signs");
    let (status, answer): (StatusCode, Value) = send(&s, request).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["status"], "SUCCEEDED");
}
