//! `statelog serve --mock-config`: a test case started over the API as
//! `stateMachineArn#TestCase` answers its mocked Task states from the mock configuration with
//! the history the service would have produced; an unknown test case, or one without a mock
//! configuration, is `InvalidArn` naming it; a malformed file stops the server at startup
//! naming the place of the fault. In process on a manual clock, and the real binary for the
//! startup refusal.
#![cfg(feature = "server")]

use std::process::Command;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::serve_common;
use serve_common::*;
use statelog::engine::MockConfig;
use statelog::server::credentials::DEV_ACCOUNT_ID;

/// The example of AWS's mock configuration page, cut to the two states of the machine below.
const MOCKS: &str = r#"{
  "StateMachines": {
    "LambdaSQSIntegration": {
      "TestCases": {
        "HappyPath": {"LambdaState": "MockedLambdaSuccess", "SQSState": "MockedSQSSuccess"},
        "RetryPath": {"LambdaState": "MockedLambdaRetry", "SQSState": "MockedSQSSuccess"}
      }
    }
  },
  "MockedResponses": {
    "MockedLambdaSuccess": {
      "0": {"Return": {"StatusCode": 200, "Payload": {"StatusCode": 200, "body": "Hello from Lambda!"}}}
    },
    "MockedSQSSuccess": {
      "0": {"Return": {"MD5OfMessageBody": "3bcb6e8e", "MessageId": "3bcb6e8e-8b51"}}
    },
    "MockedLambdaRetry": {
      "0": {"Throw": {"Error": "Lambda.ResourceNotReadyException", "Cause": "Lambda resource is not ready."}},
      "1-2": {"Throw": {"Error": "Lambda.TimeoutException", "Cause": "Lambda timed out."}},
      "3": {"Return": {"StatusCode": 200, "Payload": {"StatusCode": 200, "body": "Hello from Lambda!"}}}
    }
  }
}"#;

fn definition() -> String {
    json!({
        "StartAt": "LambdaState",
        "States": {
            "LambdaState": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"FunctionName": "HelloWorldFunction", "Payload.$": "$"},
                "ResultSelector": {"body.$": "$.Payload.body"},
                "Retry": [{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 1, "MaxAttempts": 3, "BackoffRate": 1}],
                "Next": "SQSState"
            },
            "SQSState": {
                "Type": "Task",
                "Resource": "arn:aws:states:::sqs:sendMessage",
                "Parameters": {"QueueUrl": "https://sqs.us-east-1.amazonaws.com/000000000000/q", "MessageBody.$": "$.body"},
                "End": true
            }
        }
    })
    .to_string()
}

fn mocked_server() -> Server {
    let config = MockConfig::from_json(MOCKS).expect("the mock file parses");
    server_with(None, |options| options.mock_config = Some(Arc::new(config)))
}

async fn history(s: &Server, arn: &str) -> Vec<Value> {
    let page = ok(
        s,
        "GetExecutionHistory",
        json!({"executionArn": arn, "maxResults": 1000}),
    )
    .await;
    page["events"].as_array().expect("events").clone()
}

fn types(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["type"].as_str().expect("a type"))
        .collect()
}

#[tokio::test]
async fn a_test_case_runs_over_the_api_with_the_mocked_services_history() {
    let s = mocked_server();
    let machine = create_machine(&s, "LambdaSQSIntegration", &definition()).await;
    let started = ok(
        &s,
        "StartExecution",
        json!({"stateMachineArn": format!("{machine}#HappyPath"), "name": "happy", "input": "{\"a\":1}"}),
    )
    .await;
    let arn = started["executionArn"].as_str().expect("arn").to_owned();
    assert_eq!(
        arn,
        "arn:aws:states:us-east-1:000000000000:execution:LambdaSQSIntegration:happy"
    );
    idle(&s, DEV_ACCOUNT_ID);
    let described = describe(&s, &arn).await;
    assert_eq!(described["status"], "SUCCEEDED");
    assert_eq!(described["stateMachineArn"], machine.as_str());
    assert_eq!(
        described["output"],
        r#"{"MD5OfMessageBody":"3bcb6e8e","MessageId":"3bcb6e8e-8b51"}"#
    );
    let events = history(&s, &arn).await;
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
    let scheduled = &events[2]["taskScheduledEventDetails"];
    assert_eq!(scheduled["resourceType"], "lambda");
    assert_eq!(scheduled["resource"], "invoke");
    assert_eq!(
        scheduled["parameters"],
        r#"{"FunctionName":"HelloWorldFunction","Payload":{"a":1}}"#
    );
    let succeeded = &events[4]["taskSucceededEventDetails"];
    assert_eq!(succeeded["resourceType"], "lambda");
    assert_eq!(
        succeeded["output"],
        r#"{"StatusCode":200,"Payload":{"StatusCode":200,"body":"Hello from Lambda!"}}"#
    );
    assert_eq!(
        events[9]["taskSucceededEventDetails"]["resourceType"],
        "sqs"
    );

    // The retry path: invocation 0 throws one error, 1-2 another, 3 returns.
    let arn = start(&s, &format!("{machine}#RetryPath"), "retry").await;
    idle(&s, DEV_ACCOUNT_ID);
    // Each retry waits 1 s on the server's manual clock.
    for _ in 0..3 {
        s.clock.advance_ms(1_000);
        engine(&s, DEV_ACCOUNT_ID).run_due_timers();
        idle(&s, DEV_ACCOUNT_ID);
    }
    assert_eq!(describe(&s, &arn).await["status"], "SUCCEEDED");
    let errors: Vec<Value> = history(&s, &arn)
        .await
        .iter()
        .filter(|e| e["type"] == "TaskFailed")
        .map(|e| e["taskFailedEventDetails"]["error"].clone())
        .collect();
    assert_eq!(
        errors,
        [
            "Lambda.ResourceNotReadyException",
            "Lambda.TimeoutException",
            "Lambda.TimeoutException"
        ]
    );
}

#[tokio::test]
async fn an_unknown_test_case_or_no_mock_file_is_invalid_arn_naming_it() {
    let s = mocked_server();
    let machine = create_machine(&s, "LambdaSQSIntegration", &definition()).await;
    let message = refused(
        &s,
        "StartExecution",
        json!({"stateMachineArn": format!("{machine}#NoSuchCase")}),
        "InvalidArn",
    )
    .await;
    assert!(message.contains("NoSuchCase"), "{message}");
    assert!(message.contains("LambdaSQSIntegration"), "{message}");

    let plain = server(None);
    let machine = create_machine(&plain, "LambdaSQSIntegration", &definition()).await;
    let message = refused(
        &plain,
        "StartExecution",
        json!({"stateMachineArn": format!("{machine}#HappyPath")}),
        "InvalidArn",
    )
    .await;
    assert!(message.contains("--mock-config"), "{message}");
}

#[test]
fn a_malformed_mock_file_stops_serve_naming_the_place() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("MockConfigFile.json");
    std::fs::write(
        &file,
        r#"{"StateMachines": {"M": {"TestCases": {"C": {"S": "R"}}}},
            "MockedResponses": {"R": {"0": {"Return": 1, "Throw": {"Error": "E"}}}}}"#,
    )
    .expect("writes");
    let output = Command::new(env!("CARGO_BIN_EXE_statelog"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path().join("data"))
        .arg("--mock-config")
        .arg(&file)
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "--mock-config: mock configuration at $.MockedResponses.R['0']: expected exactly one of 'Return' or 'Throw', found 2"
        ),
        "{stderr}"
    );
    assert!(output.stdout.is_empty(), "it never listened");
}
