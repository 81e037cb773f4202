//! Shared harness of the `statelog serve` tests: an engine-backed server on a manual clock,
//! SigV4-signed requests through the router, and helpers that expect an answer or a named error.

#![allow(dead_code)]

pub mod socket;

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{json, Value};
use tower::ServiceExt;

use statelog::clock::{Clock, ManualClock};
use statelog::engine::{Engine, EngineOptions};
use statelog::server::backend::{Backend, Caller};
use statelog::server::credentials::{Credential, Credentials, DEV_ACCOUNT_ID};
use statelog::server::engine_backend::{AccountLayout, EngineBackend};
use statelog::server::router::router;
use statelog::server::sigv4::{signed_json_request, SigningParams};
use statelog::server::ServerState;
use statelog_wal::Durability;

pub const NOW_MS: u64 = 1_795_985_679_000;

/// The role every test machine is created with.
pub const ROLE: &str = "arn:aws:iam::000000000000:role/statelog";

pub struct Server {
    pub state: Arc<ServerState<EngineBackend>>,
    pub clock: ManualClock,
    pub credentials: Option<Credentials>,
    /// What every engine of this server opens with (again after [`restart`]).
    pub options: EngineOptions,
    pub _dir: tempfile::TempDir,
}

/// A server over a fresh data directory, with `credentials` (`None`: development mode).
pub fn server(credentials: Option<Credentials>) -> Server {
    server_with(credentials, |_| {})
}

/// [`server`], its engines opened with the test options (the manual clock, no fsync, no
/// background timers, one worker thread) changed by `adjust`.
pub fn server_with(
    credentials: Option<Credentials>,
    adjust: impl FnOnce(&mut EngineOptions),
) -> Server {
    let dir = tempfile::tempdir().expect("temp dir");
    let clock = ManualClock::new(NOW_MS);
    let mut options = EngineOptions {
        clock: Arc::new(clock.clone()),
        durability: Durability::NoSync,
        background_timers: false,
        worker_threads: 1,
        ..EngineOptions::default()
    };
    adjust(&mut options);
    Server {
        state: open(dir.path(), credentials.clone(), &options),
        clock,
        credentials,
        options,
        _dir: dir,
    }
}

fn open(
    dir: &std::path::Path,
    credentials: Option<Credentials>,
    options: &EngineOptions,
) -> Arc<ServerState<EngineBackend>> {
    let layout = if credentials.is_some() {
        AccountLayout::PerAccount
    } else {
        AccountLayout::Single {
            account_id: DEV_ACCOUNT_ID.into(),
        }
    };
    let backend = EngineBackend::new(dir, layout, options.clone());
    ServerState::new(backend, credentials, options.clock.clone())
}

/// Shuts `s` down (its engines close their logs) and serves the same data directory again,
/// with the same clock, options and credentials: what a restart of `statelog serve` sees.
pub async fn restart(s: Server) -> Server {
    s.state.backend.shutdown().await;
    let Server {
        state,
        clock,
        credentials,
        options,
        _dir,
    } = s;
    drop(state);
    Server {
        state: open(_dir.path(), credentials.clone(), &options),
        clock,
        credentials,
        options,
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

/// Credentials of two accounts: [`ONE`] (111111111111) and [`TWO`] (222222222222).
pub fn two_accounts() -> Credentials {
    let mut keys = BTreeMap::new();
    for (key, account_id) in [(ONE, "111111111111"), (TWO, "222222222222")] {
        let credential = Credential {
            secret_access_key: key.secret.into(),
            account_id: account_id.into(),
        };
        keys.insert(key.id.to_owned(), credential);
    }
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
    let params = SigningParams {
        access_key_id: key,
        secret_access_key: secret,
        region: "us-east-1",
        service,
        now_ms,
    };
    signed_json_request("localhost", target, body, &params).expect("signs")
}

pub async fn send(s: &Server, request: Request<Body>) -> (StatusCode, Value) {
    send_to(&s.state, request).await
}

/// Sends one request through the router of `state` (a server a test assembled itself).
pub async fn send_to(
    state: &Arc<ServerState<EngineBackend>>,
    request: Request<Body>,
) -> (StatusCode, Value) {
    let response = router(state.clone())
        .oneshot(request)
        .await
        .expect("infallible");
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body");
    (status, serde_json::from_slice(&bytes).expect("JSON answer"))
}

/// An access key and its secret.
#[derive(Debug, Clone, Copy)]
pub struct Key {
    pub id: &'static str,
    pub secret: &'static str,
}

/// Any key: development mode accepts every well-formed signature.
pub const DEV: Key = Key {
    id: "test",
    secret: "test",
};
/// Account 111111111111 of [`two_accounts`].
pub const ONE: Key = Key {
    id: "AKIDONE",
    secret: "one-secret",
};
/// Account 222222222222 of [`two_accounts`].
pub const TWO: Key = Key {
    id: "AKIDTWO",
    secret: "two-secret",
};

/// A Step Functions call signed with `key`.
pub async fn call_as(s: &Server, key: Key, operation: &str, body: Value) -> (StatusCode, Value) {
    let request = signed_request(operation, &body, key.id, key.secret, s.clock.now_ms());
    send(s, request).await
}

/// An SWF call (`SimpleWorkflowService.<operation>`, signed for `swf`) with `key`.
pub async fn swf_call_as(
    s: &Server,
    key: Key,
    operation: &str,
    body: Value,
) -> (StatusCode, Value) {
    let target = format!("SimpleWorkflowService.{operation}");
    let request = signed_target("swf", &target, &body, key.id, key.secret, s.clock.now_ms());
    send(s, request).await
}

/// The answer of a call that must have succeeded.
fn expect_ok(operation: &str, (status, value): (StatusCode, Value)) -> Value {
    assert_eq!(status, StatusCode::OK, "{operation}: {value}");
    value
}

/// The message of a call that must have been refused with `aws_name`.
fn expect_refused(operation: &str, (status, value): (StatusCode, Value), aws_name: &str) -> String {
    assert_eq!(status, StatusCode::BAD_REQUEST, "{operation}: {value}");
    // SWF faults carry SWF's namespace (`com.amazonaws.swf.base.model#`); clients read the name.
    let wire = value["__type"].as_str().unwrap_or("");
    assert_eq!(
        wire.rsplit('#').next(),
        Some(aws_name),
        "{operation}: {value}"
    );
    value["message"].as_str().expect("message").to_owned()
}

pub async fn call(s: &Server, operation: &str, body: Value) -> (StatusCode, Value) {
    call_as(s, DEV, operation, body).await
}

/// A call with `key` that must succeed; its answer.
pub async fn ok_as(s: &Server, key: Key, operation: &str, body: Value) -> Value {
    expect_ok(operation, call_as(s, key, operation, body).await)
}

/// A call with `key` that must be refused with `aws_name`; its message.
pub async fn refused_as(
    s: &Server,
    key: Key,
    operation: &str,
    body: Value,
    aws_name: &str,
) -> String {
    expect_refused(operation, call_as(s, key, operation, body).await, aws_name)
}

pub async fn ok(s: &Server, operation: &str, body: Value) -> Value {
    ok_as(s, DEV, operation, body).await
}

pub async fn refused(s: &Server, operation: &str, body: Value, aws_name: &str) -> String {
    refused_as(s, DEV, operation, body, aws_name).await
}

/// Each call `(operation, body, AWS error name)` must be refused with that name.
pub async fn refused_each<const N: usize>(s: &Server, cases: [(&str, Value, &str); N]) {
    for (operation, body, aws_name) in cases {
        refused(s, operation, body, aws_name).await;
    }
}

/// An SWF call in development mode.
pub async fn swf_call(s: &Server, operation: &str, body: Value) -> (StatusCode, Value) {
    swf_call_as(s, DEV, operation, body).await
}

/// An SWF call with `key` that must succeed; its answer.
pub async fn swf_ok_as(s: &Server, key: Key, operation: &str, body: Value) -> Value {
    expect_ok(operation, swf_call_as(s, key, operation, body).await)
}

/// An SWF call with `key` that must fail with `fault`; its message.
pub async fn swf_refused_as(
    s: &Server,
    key: Key,
    operation: &str,
    body: Value,
    fault: &str,
) -> String {
    expect_refused(operation, swf_call_as(s, key, operation, body).await, fault)
}

/// An SWF call in development mode that must succeed; its answer.
pub async fn swf_ok(s: &Server, operation: &str, body: Value) -> Value {
    swf_ok_as(s, DEV, operation, body).await
}

/// An SWF call in development mode that must fail with `fault`; its message.
pub async fn swf_refused(s: &Server, operation: &str, body: Value, fault: &str) -> String {
    swf_refused_as(s, DEV, operation, body, fault).await
}
