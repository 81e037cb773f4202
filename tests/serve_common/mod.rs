//! Shared harness of the `statelog serve` tests: an engine-backed server on a manual clock,
//! SigV4-signed requests through the router, and helpers that expect an answer or a named error.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Request, StatusCode};
use serde_json::Value;
use tower::ServiceExt;

use statelog::clock::{Clock, ManualClock};
use statelog::engine::EngineOptions;
use statelog::server::credentials::{Credential, Credentials, DEV_ACCOUNT_ID};
use statelog::server::engine_backend::{AccountLayout, EngineBackend};
use statelog::server::protocol::CONTENT_TYPE;
use statelog::server::router::router;
use statelog::server::sigv4::{sign, SigningParams};
use statelog::server::ServerState;
use statelog_wal::Durability;

pub const NOW_MS: u64 = 1_795_985_679_000;

pub struct Server {
    pub state: Arc<ServerState<EngineBackend>>,
    pub clock: ManualClock,
    pub _dir: tempfile::TempDir,
}

pub fn server(credentials: Option<Credentials>) -> Server {
    let dir = tempfile::tempdir().expect("temp dir");
    let clock = ManualClock::new(NOW_MS);
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
    let backend = EngineBackend::new(dir.path(), layout, options);
    let state = ServerState::new(backend, credentials, Arc::new(clock.clone()));
    Server {
        state,
        clock,
        _dir: dir,
    }
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
