//! Scenario: an attacker who can capture signed requests, sign for any region, and name any
//! ARN, against `statelog serve` (issue 13, items 4, 7 and 8). Guards that:
//! - the headers that select the operation (`X-Amz-Target`, `Content-Type`) are signed, so a
//!   captured request replayed with another target does not run;
//! - a signature scoped to another region than the server's is refused;
//! - an ARN is parsed whole: a malformed one is `InvalidArn`, another account's, region's or
//!   partition's names nothing of the caller's, and the caller's own resource is untouched;
//! - an engine fault answers `InternalFailure` with a message that holds no server detail.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, Request, StatusCode};
use serde_json::{json, Value};

use statelog::clock::Clock;
use statelog::server::error::INTERNAL_FAILURE_MESSAGE;
use statelog::server::protocol::CONTENT_TYPE;
use statelog::server::sigv4::{self, SigningParams};
use statelog::server::Backend;

use crate::serve_common;
use serve_common::*;

/// A definition whose executions wait an hour (timers do not fire in these tests).
const WAITING: &str =
    r#"{"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 3600, "End": true}}}"#;

/// A `POST /` of `target` carrying `body`, signed with `key` for `region` and `service`; only
/// the headers in `signed` (besides `host` and `x-amz-date`) are signed, the others of
/// `content-type` and `x-amz-target` are added after signing.
fn request_signed_over(
    s: &Server,
    key: Key,
    (region, service): (&str, &str),
    target: &str,
    body: &Value,
    signed: &[&str],
) -> Request<Body> {
    let body = body.to_string().into_bytes();
    let all = [
        ("content-type", HeaderValue::from_static(CONTENT_TYPE)),
        (
            "x-amz-target",
            HeaderValue::from_str(target).expect("a header value"),
        ),
    ];
    let mut headers = HeaderMap::new();
    headers.insert("host", HeaderValue::from_static("localhost"));
    for (name, value) in &all {
        if signed.contains(name) {
            headers.insert(*name, value.clone());
        }
    }
    let params = SigningParams {
        access_key_id: key.id,
        secret_access_key: key.secret,
        region,
        service,
        now_ms: s.clock.now_ms(),
    };
    let authorization = sigv4::sign("POST", "/", "", &mut headers, &body, &params).expect("signs");
    headers.insert(
        "authorization",
        HeaderValue::from_str(&authorization).expect("a header value"),
    );
    for (name, value) in all {
        if !signed.contains(&name) {
            headers.insert(name, value);
        }
    }
    let mut request = Request::new(Body::from(body));
    *request.method_mut() = Method::POST;
    *request.headers_mut() = headers;
    request
}

/// A Step Functions request signed as an SDK signs it, for `region`.
fn sfn_request_in(
    s: &Server,
    key: Key,
    region: &str,
    operation: &str,
    body: &Value,
) -> Request<Body> {
    request_signed_over(
        s,
        key,
        (region, "states"),
        &format!("AWSStepFunctions.{operation}"),
        body,
        &["content-type", "x-amz-target"],
    )
}

/// Replaces the `X-Amz-Target` of a captured request, keeping its signature.
fn retargeted(mut request: Request<Body>, operation: &str) -> Request<Body> {
    let target = format!("AWSStepFunctions.{operation}");
    request.headers_mut().insert(
        "x-amz-target",
        HeaderValue::from_str(&target).expect("a header value"),
    );
    request
}

fn assert_refused(
    (status, answer): &(StatusCode, Value),
    expected_status: StatusCode,
    aws_name: &str,
) -> String {
    assert_eq!(*status, expected_status, "{answer}");
    assert_eq!(answer["__type"], aws_name, "{answer}");
    answer["message"].as_str().expect("message").to_owned()
}

/// The status of execution `arn` of account [`ONE`].
async fn status_of(s: &Server, arn: &str) -> Value {
    ok_as(s, ONE, "DescribeExecution", json!({"executionArn": arn})).await["status"].clone()
}

/// Account ONE's machine `base` (waiting) and a running execution of it.
async fn one_base_running(s: &Server) -> (String, String) {
    let created = ok_as(
        s,
        ONE,
        "CreateStateMachine",
        json!({"name": "base", "definition": WAITING, "roleArn": ROLE}),
    )
    .await;
    let machine = created["stateMachineArn"].as_str().expect("arn").to_owned();
    let started = ok_as(
        s,
        ONE,
        "StartExecution",
        json!({"stateMachineArn": machine, "name": "victim"}),
    )
    .await;
    let execution = started["executionArn"].as_str().expect("arn").to_owned();
    (machine, execution)
}

#[tokio::test]
async fn the_target_and_the_content_type_must_be_signed() {
    for credentials in [None, Some(two_accounts())] {
        let key = if credentials.is_some() { ONE } else { DEV };
        let s = server(credentials);
        let body = json!({});
        for (signed, unsigned) in [
            (&["content-type"][..], "x-amz-target"),
            (&["x-amz-target"][..], "content-type"),
        ] {
            let request = request_signed_over(
                &s,
                key,
                ("us-east-1", "states"),
                "AWSStepFunctions.ListStateMachines",
                &body,
                signed,
            );
            let message = assert_refused(
                &send(&s, request).await,
                StatusCode::BAD_REQUEST,
                "IncompleteSignatureException",
            );
            assert!(message.contains(unsigned), "{message}");
        }
        // The same for SWF (service `swf`).
        let request = request_signed_over(
            &s,
            key,
            ("us-east-1", "swf"),
            "SimpleWorkflowService.CountPendingActivityTasks",
            &json!({"domain": "x", "taskList": {"name": "l"}}),
            &["content-type"],
        );
        assert_refused(
            &send(&s, request).await,
            StatusCode::BAD_REQUEST,
            "IncompleteSignatureException",
        );
        // Signed as SDKs sign: accepted.
        let request = sfn_request_in(&s, key, "us-east-1", "ListStateMachines", &body);
        assert_eq!(send(&s, request).await.0, StatusCode::OK);
    }
}

#[tokio::test]
async fn a_captured_request_replayed_with_another_target_does_not_run() {
    let s = server(Some(two_accounts()));
    let (_machine, victim) = one_base_running(&s).await;
    let body = json!({"executionArn": victim});

    // Captured from a client that left the target unsigned: the replay is refused before it
    // can stop anything.
    let captured = request_signed_over(
        &s,
        ONE,
        ("us-east-1", "states"),
        "AWSStepFunctions.DescribeExecution",
        &body,
        &["content-type"],
    );
    assert_refused(
        &send(&s, retargeted(captured, "StopExecution")).await,
        StatusCode::BAD_REQUEST,
        "IncompleteSignatureException",
    );
    assert_eq!(status_of(&s, &victim).await, "RUNNING");

    // Captured from an SDK (target signed): the changed target breaks the signature.
    let captured = sfn_request_in(&s, ONE, "us-east-1", "DescribeExecution", &body);
    assert_refused(
        &send(&s, retargeted(captured, "StopExecution")).await,
        StatusCode::FORBIDDEN,
        "InvalidSignatureException",
    );
    assert_eq!(status_of(&s, &victim).await, "RUNNING");
}

#[tokio::test]
async fn a_signature_scoped_to_another_region_is_refused() {
    for credentials in [None, Some(two_accounts())] {
        let key = if credentials.is_some() { ONE } else { DEV };
        let s = server(credentials);
        for (service, target) in [
            ("states", "AWSStepFunctions.ListStateMachines"),
            ("swf", "SimpleWorkflowService.CountPendingActivityTasks"),
        ] {
            let request = request_signed_over(
                &s,
                key,
                ("xx-fake-9", service),
                target,
                &json!({"domain": "x", "taskList": {"name": "l"}}),
                &["content-type", "x-amz-target"],
            );
            let message = assert_refused(
                &send(&s, request).await,
                StatusCode::FORBIDDEN,
                "InvalidSignatureException",
            );
            assert!(
                message.contains("Credential should be scoped to a valid region"),
                "{message}"
            );
        }
    }
}

#[tokio::test]
async fn the_server_serves_and_mints_its_own_region() {
    let s = server_with(Some(two_accounts()), |options| {
        options.region = "eu-west-1".into();
    });
    let create = json!({"name": "base", "definition": WAITING, "roleArn": ROLE});
    let request = sfn_request_in(&s, ONE, "us-east-1", "CreateStateMachine", &create);
    let message = assert_refused(
        &send(&s, request).await,
        StatusCode::FORBIDDEN,
        "InvalidSignatureException",
    );
    assert!(message.contains("us-east-1"), "{message}");
    let request = sfn_request_in(&s, ONE, "eu-west-1", "CreateStateMachine", &create);
    let (status, created) = send(&s, request).await;
    assert_eq!(status, StatusCode::OK, "{created}");
    assert_eq!(
        created["stateMachineArn"],
        "arn:aws:states:eu-west-1:111111111111:stateMachine:base"
    );
}

#[tokio::test]
async fn state_machine_arns_are_parsed_not_matched_by_their_tail() {
    let s = server(Some(two_accounts()));
    let (machine, _victim) = one_base_running(&s).await;
    // Account TWO has a `base` too: an ARN of account ONE must not reach it either.
    let two_base = ok_as(
        &s,
        TWO,
        "CreateStateMachine",
        json!({"name": "base", "definition": WAITING, "roleArn": ROLE}),
    )
    .await["stateMachineArn"]
        .clone();
    let cases = [
        ("arn:stateMachine:base", "InvalidArn"),
        (
            "arn:aws:states:us-east-1:111111111111:activity:x:stateMachine:base",
            "InvalidArn",
        ),
        // `stateMachine:base:x` is an alias ARN since versions and aliases (serve_versions);
        // two qualifiers are no ARN at all.
        (
            "arn:aws:states:us-east-1:111111111111:stateMachine:base:x:y",
            "InvalidArn",
        ),
        ("base", "InvalidArn"),
        (
            "arn:aws:states:us-east-1:222222222222:stateMachine:base",
            "StateMachineDoesNotExist",
        ),
        (
            "arn:aws:states:eu-west-1:111111111111:stateMachine:base",
            "StateMachineDoesNotExist",
        ),
        (
            "arn:aws-cn:states:us-east-1:111111111111:stateMachine:base",
            "StateMachineDoesNotExist",
        ),
    ];
    for (arn, aws_name) in cases {
        let arn_input = json!({"stateMachineArn": arn});
        for (operation, body) in [
            (
                "StartExecution",
                json!({"stateMachineArn": arn, "name": "x"}),
            ),
            ("DescribeStateMachine", arn_input.clone()),
            (
                "UpdateStateMachine",
                json!({"stateMachineArn": arn, "definition": WAITING}),
            ),
            ("ListExecutions", arn_input.clone()),
        ] {
            let message = refused_as(&s, ONE, operation, body, aws_name).await;
            assert!(message.contains(arn), "{operation} {arn}: {message}");
        }
    }
    // Nothing started: only the victim runs, in account ONE; account TWO ran nothing.
    let listed = ok_as(
        &s,
        ONE,
        "ListExecutions",
        json!({"stateMachineArn": machine}),
    )
    .await;
    let names: Vec<&Value> = listed["executions"]
        .as_array()
        .expect("executions")
        .iter()
        .map(|e| &e["name"])
        .collect();
    assert_eq!(names, [&json!("victim")]);
    let listed = ok_as(
        &s,
        TWO,
        "ListExecutions",
        json!({"stateMachineArn": two_base}),
    )
    .await;
    assert_eq!(listed["executions"], json!([]));
    // Deleting through another account's ARN deletes nothing of the caller's.
    ok_as(
        &s,
        ONE,
        "DeleteStateMachine",
        json!({"stateMachineArn": "arn:aws:states:us-east-1:222222222222:stateMachine:base"}),
    )
    .await;
    ok_as(
        &s,
        ONE,
        "DescribeStateMachine",
        json!({"stateMachineArn": machine}),
    )
    .await;
}

#[tokio::test]
async fn execution_activity_and_tag_arns_are_parsed_whole() {
    let s = server(Some(two_accounts()));
    let (machine, victim) = one_base_running(&s).await;
    let activity = ok_as(&s, ONE, "CreateActivity", json!({"name": "work"})).await["activityArn"]
        .as_str()
        .expect("arn")
        .to_owned();
    let other_account = victim.replace(":111111111111:", ":222222222222:");
    let other_region = victim.replace(":us-east-1:", ":eu-west-1:");
    let execution_cases = [
        (
            "arn:aws:states:us-east-1:111111111111:execution:base".to_owned(),
            "InvalidArn",
        ),
        (format!("{victim}:extra"), "InvalidArn"),
        (machine.clone(), "InvalidArn"),
        (other_account.clone(), "ExecutionDoesNotExist"),
        (other_region, "ExecutionDoesNotExist"),
    ];
    for (arn, aws_name) in &execution_cases {
        for operation in [
            "DescribeExecution",
            "StopExecution",
            "GetExecutionHistory",
            "DescribeStateMachineForExecution",
            "RedriveExecution",
        ] {
            refused_as(&s, ONE, operation, json!({"executionArn": arn}), aws_name).await;
        }
    }
    assert_eq!(status_of(&s, &victim).await, "RUNNING");

    let activity_cases = [
        (format!("{activity}:x"), "InvalidArn"),
        (machine.clone(), "InvalidArn"),
        (
            activity.replace(":111111111111:", ":222222222222:"),
            "ActivityDoesNotExist",
        ),
        (
            activity.replace(":us-east-1:", ":eu-west-1:"),
            "ActivityDoesNotExist",
        ),
    ];
    for (arn, aws_name) in &activity_cases {
        for operation in ["DescribeActivity", "GetActivityTask"] {
            refused_as(&s, ONE, operation, json!({"activityArn": arn}), aws_name).await;
        }
    }
    ok_as(
        &s,
        ONE,
        "DescribeActivity",
        json!({"activityArn": activity}),
    )
    .await;

    let tag_cases = [
        (victim.clone(), "InvalidArn"),
        ("arn:stateMachine:base".to_owned(), "InvalidArn"),
        (
            machine.replace(":111111111111:", ":222222222222:"),
            "ResourceNotFound",
        ),
        (
            activity.replace(":us-east-1:", ":eu-west-1:"),
            "ResourceNotFound",
        ),
    ];
    for (arn, aws_name) in &tag_cases {
        refused_as(
            &s,
            ONE,
            "TagResource",
            json!({"resourceArn": arn, "tags": [{"key": "k", "value": "v"}]}),
            aws_name,
        )
        .await;
        refused_as(
            &s,
            ONE,
            "ListTagsForResource",
            json!({"resourceArn": arn}),
            aws_name,
        )
        .await;
    }
}

#[tokio::test]
async fn an_engine_fault_is_an_internal_failure_without_server_detail() {
    let s = server(Some(two_accounts()));
    let accounts = s._dir.path().join("accounts");
    std::fs::create_dir_all(&accounts).expect("accounts dir");
    // Account ONE's data directory cannot be created: a file is in the way.
    std::fs::write(accounts.join("111111111111"), b"not a directory").expect("file");
    // Account TWO's log cannot be opened: its segment is a directory.
    std::fs::create_dir_all(
        accounts
            .join("222222222222")
            .join("00000000000000000000.wal"),
    )
    .expect("segment dir");
    for key in [ONE, TWO] {
        for operation in ["ListStateMachines", "ListActivities"] {
            let answer = call_as(&s, key, operation, json!({})).await;
            let message = assert_refused(
                &answer,
                StatusCode::INTERNAL_SERVER_ERROR,
                "InternalFailure",
            );
            assert!(!message.contains('/'), "{operation}: {message}");
            assert_eq!(message, INTERNAL_FAILURE_MESSAGE);
        }
    }
    // The SWF endpoint answers the same way.
    let answer = swf_call_as(
        &s,
        ONE,
        "CountPendingActivityTasks",
        json!({"domain": "111111111111", "taskList": {"name": "l"}}),
    )
    .await;
    let message = assert_refused(
        &answer,
        StatusCode::INTERNAL_SERVER_ERROR,
        "InternalFailure",
    );
    assert_eq!(message, INTERNAL_FAILURE_MESSAGE);
}

#[tokio::test]
async fn an_account_directory_still_opens_with_the_default_account() {
    // `statelog history --data-dir DIR/accounts/<id>` opens an account's engine with the
    // default options (account 000000000000): the account's own execution ARNs still resolve,
    // because executions are looked up by their whole ARN, not by this engine's account.
    let s = server(Some(two_accounts()));
    let (_machine, victim) = one_base_running(&s).await;
    let dir = s._dir.path().join("accounts").join("111111111111");
    s.state.backend.shutdown().await;
    let options = statelog::engine::EngineOptions {
        read_only: true,
        background_timers: false,
        ..statelog::engine::EngineOptions::default()
    };
    let engine = statelog::engine::Engine::open(&dir, options).expect("opens");
    let described = engine.describe_execution(&victim).expect("found");
    assert_eq!(described.execution_arn, victim);
    let malformed = engine
        .describe_execution("arn:aws:states:us-east-1:111111111111:execution:base")
        .expect_err("refused");
    assert_eq!(malformed.aws_name(), "InvalidArn");
}
