//! Shared harness of the `statelog serve` tests: an engine-backed server on a manual clock,
//! SigV4-signed requests through the router, and helpers that expect an answer or a named error.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Request, StatusCode};
use serde_json::{json, Value};
use tower::ServiceExt;

use statelog::clock::{Clock, ManualClock};
use statelog::engine::{Engine, EngineOptions};
use statelog::server::backend::{Backend, Caller};
use statelog::server::credentials::{Credential, Credentials, DEV_ACCOUNT_ID};
use statelog::server::engine_backend::{AccountLayout, EngineBackend};
use statelog::server::protocol::CONTENT_TYPE;
use statelog::server::router::router;
use statelog::server::sigv4::{sign, SigningParams};
use statelog::server::ServerState;
use statelog_wal::Durability;

pub const NOW_MS: u64 = 1_795_985_679_000;

/// The role every test machine is created with.
pub const ROLE: &str = "arn:aws:iam::000000000000:role/statelog";

pub struct Server {
    pub state: Arc<ServerState<EngineBackend>>,
    pub clock: ManualClock,
    pub credentials: Option<Credentials>,
    pub _dir: tempfile::TempDir,
}

/// A server over a fresh data directory, with `credentials` (`None`: development mode).
pub fn server(credentials: Option<Credentials>) -> Server {
    let dir = tempfile::tempdir().expect("temp dir");
    let clock = ManualClock::new(NOW_MS);
    Server {
        state: open(dir.path(), credentials.clone(), &clock),
        clock,
        credentials,
        _dir: dir,
    }
}

fn open(
    dir: &std::path::Path,
    credentials: Option<Credentials>,
    clock: &ManualClock,
) -> Arc<ServerState<EngineBackend>> {
    let options = EngineOptions {
        clock: Arc::new(clock.clone()),
        durability: Durability::NoSync,
        background_timers: false,
        worker_threads: 1,
        ..EngineOptions::default()
    };
    let layout = if credentials.is_some() {
        AccountLayout::PerAccount
    } else {
        AccountLayout::Single {
            account_id: DEV_ACCOUNT_ID.into(),
        }
    };
    let backend = EngineBackend::new(dir, layout, options);
    ServerState::new(backend, credentials, Arc::new(clock.clone()))
}

/// Shuts `s` down (its engines close their logs) and serves the same data directory again,
/// on the same clock and credentials: what a restart of `statelog serve` sees.
pub async fn restart(s: Server) -> Server {
    s.state.backend.shutdown().await;
    let Server {
        state,
        clock,
        credentials,
        _dir,
    } = s;
    drop(state);
    Server {
        state: open(_dir.path(), credentials.clone(), &clock),
        clock,
        credentials,
        _dir,
    }
}

/// A caller of `account_id` in `us-east-1`.
pub fn caller(account_id: &str) -> Caller {
    Caller {
        account_id: account_id.into(),
        region: "us-east-1".into(),
        access_key_id: String::new(),
    }
}

/// The engine of `account_id` (opened on first use).
pub fn engine(s: &Server, account_id: &str) -> Engine {
    s.state.backend.engine(&caller(account_id)).expect("engine")
}

/// Waits until the engine of `account_id` has nothing left to run.
pub fn idle(s: &Server, account_id: &str) {
    engine(s, account_id).wait_idle();
}

/// Creates a state machine `name` of `definition` (development mode); returns its ARN.
pub async fn create_machine(s: &Server, name: &str, definition: &str) -> String {
    let created = ok(
        s,
        "CreateStateMachine",
        json!({"name": name, "definition": definition, "roleArn": ROLE}),
    )
    .await;
    created["stateMachineArn"].as_str().expect("arn").to_owned()
}

/// Starts an unnamed execution of `machine` with `input` (JSON text, as sent); returns its ARN.
pub async fn start_with_input(s: &Server, machine: &str, input: &str) -> String {
    let started = ok(
        s,
        "StartExecution",
        json!({"stateMachineArn": machine, "input": input}),
    )
    .await;
    started["executionArn"].as_str().expect("arn").to_owned()
}

/// DescribeExecution of `arn` (development mode).
pub async fn describe(s: &Server, arn: &str) -> Value {
    ok(s, "DescribeExecution", json!({"executionArn": arn})).await
}

/// Starts execution `name` of `machine` with input `{}`; returns its ARN.
pub async fn start(s: &Server, machine: &str, name: &str) -> String {
    let started = ok(
        s,
        "StartExecution",
        json!({"stateMachineArn": machine, "name": name}),
    )
    .await;
    started["executionArn"].as_str().expect("arn").to_owned()
}

pub fn two_accounts() -> Credentials {
    let mut keys = BTreeMap::new();
    keys.insert(
        "AKIDONE".to_owned(),
        Credential {
            secret_access_key: "one-secret".into(),
            account_id: "111111111111".into(),
        },
    );
    keys.insert(
        "AKIDTWO".to_owned(),
        Credential {
            secret_access_key: "two-secret".into(),
            account_id: "222222222222".into(),
        },
    );
    Credentials::from_map(keys, "test").expect("valid")
}

pub fn signed_request(
    operation: &str,
    body: &Value,
    key: &str,
    secret: &str,
    now_ms: u64,
) -> Request<Body> {
    signed_target(
        "states",
        &format!("AWSStepFunctions.{operation}"),
        body,
        key,
        secret,
        now_ms,
    )
}

/// A request for `target`, signed for the SigV4 scope service `service` (`states`, `swf`).
pub fn signed_target(
    service: &str,
    target: &str,
    body: &Value,
    key: &str,
    secret: &str,
    now_ms: u64,
) -> Request<Body> {
    let body = body.to_string().into_bytes();
    let mut headers = HeaderMap::new();
    headers.insert("host", HeaderValue::from_static("localhost"));
    headers.insert("content-type", HeaderValue::from_static(CONTENT_TYPE));
    headers.insert(
        "x-amz-target",
        HeaderValue::from_str(target).expect("ascii"),
    );
    let authorization = sign(
        "POST",
        "/",
        "",
        &mut headers,
        &body,
        &SigningParams {
            access_key_id: key,
            secret_access_key: secret,
            region: "us-east-1",
            service,
            now_ms,
        },
    )
    .expect("signs");
    let mut request = Request::builder().method("POST").uri("/");
    for (name, value) in &headers {
        request = request.header(name, value);
    }
    request
        .header("authorization", authorization)
        .body(Body::from(body))
        .expect("request")
}

pub async fn send(s: &Server, request: Request<Body>) -> (StatusCode, Value) {
    let response = router(s.state.clone())
        .oneshot(request)
        .await
        .expect("infallible");
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body");
    (status, serde_json::from_slice(&bytes).expect("JSON answer"))
}

pub async fn call_as(
    s: &Server,
    key: &str,
    secret: &str,
    operation: &str,
    body: Value,
) -> (StatusCode, Value) {
    let request = signed_request(operation, &body, key, secret, s.clock.now_ms());
    send(s, request).await
}

pub async fn call(s: &Server, operation: &str, body: Value) -> (StatusCode, Value) {
    call_as(s, "test", "test", operation, body).await
}

pub async fn ok(s: &Server, operation: &str, body: Value) -> Value {
    let (status, value) = call(s, operation, body).await;
    assert_eq!(status, StatusCode::OK, "{operation}: {value}");
    value
}

pub async fn refused(s: &Server, operation: &str, body: Value, aws_name: &str) -> String {
    let (status, value) = call(s, operation, body).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{operation}: {value}");
    assert_eq!(value["__type"], aws_name, "{operation}: {value}");
    value["message"].as_str().expect("message").to_owned()
}

/// Each call `(operation, body, AWS error name)` must be refused with that name.
pub async fn refused_each<const N: usize>(s: &Server, cases: [(&str, Value, &str); N]) {
    for (operation, body, aws_name) in cases {
        refused(s, operation, body, aws_name).await;
    }
}

/// An SWF call (`SimpleWorkflowService.<operation>`, signed for `swf`) as `key`.
pub async fn swf_call_as(
    s: &Server,
    key: &str,
    secret: &str,
    operation: &str,
    body: Value,
) -> (StatusCode, Value) {
    let request = signed_target(
        "swf",
        &format!("SimpleWorkflowService.{operation}"),
        &body,
        key,
        secret,
        s.clock.now_ms(),
    );
    send(s, request).await
}

/// An SWF call in development mode.
pub async fn swf_call(s: &Server, operation: &str, body: Value) -> (StatusCode, Value) {
    swf_call_as(s, "test", "test", operation, body).await
}

/// An SWF call in development mode that must succeed; its answer.
pub async fn swf_ok(s: &Server, operation: &str, body: Value) -> Value {
    let (status, value) = swf_call(s, operation, body).await;
    assert_eq!(status, StatusCode::OK, "{operation}: {value}");
    value
}

/// An SWF call in development mode that must fail with `fault`; its message.
pub async fn swf_refused(s: &Server, operation: &str, body: Value, fault: &str) -> String {
    let (status, value) = swf_call(s, operation, body).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{operation}: {value}");
    assert_eq!(value["__type"], fault, "{operation}: {value}");
    value["message"].as_str().expect("message").to_owned()
}
