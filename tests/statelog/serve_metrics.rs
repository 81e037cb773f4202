//! `GET /metrics` of `statelog serve` over the real engine: every engine counter it shows
//! (executions started, closed by status, transitions, WAL commits, commit latency, pending
//! tasks per list) moves after a run. In process, on a manual clock; nothing sleeps.
//!
//! Who may read it: with credentials only the metrics listener (`--metrics-listen`) serves it,
//! and a stranger on the API port learns nothing; wrong methods are answered AWS-shaped.
#![cfg(feature = "server")]

use axum::body::Body;
use axum::http::Request;
use serde_json::json;
use tower::ServiceExt;

use statelog::server::credentials::DEV_ACCOUNT_ID;
use statelog::server::router::router;

use crate::serve_common;
use serve_common::socket;
use serve_common::*;

async fn scrape(s: &Server) -> String {
    let response = router(s.state.clone())
        .oneshot(
            Request::builder()
                .method("GET")
                .uri("/metrics")
                .body(Body::empty())
                .expect("request"),
        )
        .await
        .expect("infallible");
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body");
    String::from_utf8(bytes.to_vec()).expect("UTF-8")
}

/// The value of the sample whose name-and-labels text is exactly `series`; 0 when absent.
fn value(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .map_or(0.0, |v| v.parse().expect("a number"))
}

fn account(name: &str) -> String {
    format!("account=\"{DEV_ACCOUNT_ID}\"{name}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_counters_move_after_a_run() {
    let s = server(None);
    // Open the engine so its counters show, and take the baseline.
    engine(&s, DEV_ACCOUNT_ID);
    let before = scrape(&s).await;
    let started = format!("statelog_executions_started_total{{{}}}", account(""));
    let succeeded = format!(
        "statelog_executions_closed_total{{{}}}",
        account(",status=\"SUCCEEDED\"")
    );
    let failed = format!(
        "statelog_executions_closed_total{{{}}}",
        account(",status=\"FAILED\"")
    );
    let transitions = format!("statelog_state_transitions_total{{{}}}", account(""));
    let commits = format!("statelog_wal_commits_total{{{}}}", account(""));
    let latency_count = format!("statelog_wal_commit_seconds_count{{{}}}", account(""));
    let latency_inf = format!(
        "statelog_wal_commit_seconds_bucket{{{}}}",
        account(",le=\"+Inf\"")
    );
    let pending = format!("statelog_task_list_pending{{{}}}", account(",list=\"gpu\""));
    for series in [&started, &succeeded, &failed, &transitions, &commits] {
        assert_eq!(value(&before, series), 0.0, "{series} in\n{before}");
    }

    let pass = json!({"StartAt": "A", "States": {
        "A": {"Type": "Pass", "Next": "B"}, "B": {"Type": "Pass", "End": true}}});
    let fail = json!({"StartAt": "F", "States": {"F": {"Type": "Fail", "Error": "E"}}});
    let activity = ok(&s, "CreateActivity", json!({"name": "work"})).await["activityArn"].clone();
    let wait = json!({"StartAt": "W", "States": {
        "W": {"Type": "Task", "Resource": activity, "TaskList": "gpu", "End": true}}});
    let mut machines = Vec::new();
    for (name, definition) in [("pass", pass), ("fail", fail), ("wait", wait)] {
        machines.push(create_machine(&s, name, &definition.to_string()).await);
    }
    for machine in &machines {
        ok(&s, "StartExecution", json!({"stateMachineArn": machine})).await;
    }
    idle(&s, DEV_ACCOUNT_ID);

    let after = scrape(&s).await;
    assert_eq!(value(&after, &started), 3.0, "{after}");
    assert_eq!(value(&after, &succeeded), 1.0, "{after}");
    assert_eq!(value(&after, &failed), 1.0, "{after}");
    // A, B, F and W were entered.
    assert_eq!(value(&after, &transitions), 4.0, "{after}");
    let commit_count = value(&after, &commits);
    assert!(commit_count >= 3.0, "{after}");
    assert_eq!(value(&after, &latency_count), commit_count, "{after}");
    assert_eq!(value(&after, &latency_inf), commit_count, "{after}");
    assert_eq!(value(&after, &pending), 1.0, "{after}");
    assert!(after.contains("# TYPE statelog_wal_commit_seconds histogram"));
}

/// Over a syncing log the WAL's fdatasync count moves too, and the latency histogram counts
/// every commit.
#[test]
fn a_syncing_log_counts_its_fdatasyncs() {
    use statelog::clock::ManualClock;
    use statelog::engine::{Engine, EngineOptions};
    use std::sync::Arc;

    let dir = tempfile::tempdir().expect("temp dir");
    let engine = Engine::open(
        dir.path(),
        EngineOptions {
            clock: Arc::new(ManualClock::new(NOW_MS)),
            durability: statelog_wal::Durability::PerCommit,
            background_timers: false,
            worker_threads: 1,
            ..EngineOptions::default()
        },
    )
    .expect("engine");
    let before = engine.metrics();
    let machine = engine
        .create_state_machine(
            "m",
            r#"{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}"#,
            None,
        )
        .expect("machine")
        .state_machine_arn;
    engine
        .start_execution(&machine, Some("e1"), "{}")
        .expect("starts");
    engine.wait_idle();
    let after = engine.metrics();
    assert!(after.wal_syncs > before.wal_syncs, "{after:?}");
    assert_eq!(after.executions_started, 1);
    assert_eq!(after.executions_closed[0], 1, "{after:?}");
    assert_eq!(after.commit_buckets.iter().sum::<u64>(), after.commits);
    assert!(after.commits >= 1, "{after:?}");
}

/// A request of `method` to `path` on `addr` with no signature, as a stranger sends it.
async fn unsigned(addr: std::net::SocketAddr, method: &str, path: &str) -> socket::Answer {
    let mut stream = socket::connect_from(socket::loopback(1), addr).await;
    let request = format!(
        "{method} {path} HTTP/1.1\r\nhost: localhost\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
    );
    socket::exchange(&mut stream, request.as_bytes()).await
}

/// An error answer shaped as every AWS JSON error is: the JSON content type, `__type` and
/// `message` in the body, the error type and request id in headers.
fn assert_aws_shaped(answer: &socket::Answer, status: u16, aws_name: &str) {
    assert_eq!(answer.status, status, "{answer:?}");
    assert_eq!(
        answer.header("content-type"),
        Some("application/x-amz-json-1.0"),
        "{answer:?}"
    );
    assert_eq!(
        answer.header("x-amzn-errortype"),
        Some(aws_name),
        "{answer:?}"
    );
    assert!(answer.header("x-amzn-requestid").is_some(), "{answer:?}");
    let body = answer.json();
    assert_eq!(body["__type"], aws_name, "{body}");
    assert!(
        body["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{body}"
    );
}

/// With credentials, a stranger's `GET /metrics` on the API port learns nothing (no account
/// ids, no counts); the metrics listener serves it, and nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_credentials_metrics_are_served_only_on_the_metrics_listener() {
    let s = server(Some(two_accounts()));
    // Account ONE opens its engine, so the metrics have an account to tell about.
    ok_as(&s, ONE, "CreateActivity", json!({"name": "work"})).await;
    let running = socket::start_serving(
        s.state.clone(),
        statelog::server::ServeOptions::default(),
        true,
    )
    .await;
    let metrics_addr = running.metrics_addr.expect("a metrics listener");

    for method in ["GET", "POST", "HEAD"] {
        let answer = unsigned(running.addr, method, "/metrics").await;
        if method == "HEAD" {
            assert_eq!(answer.status, 400, "{answer:?}");
            continue;
        }
        assert_aws_shaped(&answer, 400, "UnknownOperationException");
        let text = String::from_utf8_lossy(&answer.body);
        assert!(!text.contains("111111111111"), "{text}");
        assert!(!text.contains("statelog_"), "{text}");
    }

    let answer = unsigned(metrics_addr, "GET", "/metrics").await;
    assert_eq!(answer.status, 200, "{answer:?}");
    let text = String::from_utf8_lossy(&answer.body);
    assert!(text.contains("statelog_http_requests_total"), "{text}");
    assert!(text.contains("account=\"111111111111\""), "{text}");

    // The metrics listener answers wrong methods and paths AWS-shaped, and never the API.
    for (method, path) in [("POST", "/metrics"), ("PUT", "/metrics"), ("GET", "/")] {
        assert_aws_shaped(
            &unsigned(metrics_addr, method, path).await,
            400,
            "UnknownOperationException",
        );
    }
    let call = signed_request("ListStateMachines", &json!({}), ONE.id, ONE.secret, NOW_MS);
    let mut stream = socket::connect_from(socket::loopback(1), metrics_addr).await;
    let answer = socket::exchange(&mut stream, &socket::raw(call).await).await;
    assert_aws_shaped(&answer, 400, "UnknownOperationException");
    running.stop().await;
}

/// In development mode `/metrics` stays on the API listener; a wrong method on it is answered
/// AWS-shaped like every other error.
#[tokio::test]
async fn development_mode_answers_wrong_methods_on_metrics_aws_shaped() {
    let s = server(None);
    assert!(scrape(&s).await.contains("statelog_http_requests_total"));
    for method in ["POST", "PUT", "DELETE"] {
        let response = router(s.state.clone())
            .oneshot(
                Request::builder()
                    .method(method)
                    .uri("/metrics")
                    .body(Body::empty())
                    .expect("request"),
            )
            .await
            .expect("infallible");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        assert_eq!(status, 400, "{method}: {}", String::from_utf8_lossy(&bytes));
        assert_eq!(
            headers
                .get("x-amzn-errortype")
                .and_then(|v| v.to_str().ok()),
            Some("UnknownOperationException"),
            "{method}"
        );
        assert!(headers.get("x-amzn-requestid").is_some(), "{method}");
        let body: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON");
        assert_eq!(body["__type"], "UnknownOperationException", "{method}");
        assert!(body["message"].is_string(), "{method}");
    }
}

/// `statelog serve --credentials F --metrics-listen ADDR`: the binary prints both addresses;
/// `/metrics` answers on the metrics one only.
#[test]
fn the_binary_serves_metrics_on_metrics_listen_only() {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::process::{Command, Stdio};

    let dir = tempfile::tempdir().expect("temp dir");
    let credentials = dir.path().join("credentials.json");
    std::fs::write(
        &credentials,
        r#"{"AKIDONE": {"secret_access_key": "one-secret", "account_id": "111111111111"}}"#,
    )
    .expect("write credentials");
    let mut child = Command::new(env!("CARGO_BIN_EXE_statelog"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--metrics-listen",
            "127.0.0.1:0",
        ])
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--credentials")
        .arg(&credentials)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn statelog serve");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut next_line = || lines.next().expect("a line").expect("UTF-8");
    let api = next_line();
    let metrics = next_line();
    let api = api
        .strip_prefix("listening on http://")
        .expect(&api)
        .to_owned();
    let metrics = metrics
        .strip_prefix("metrics on http://")
        .and_then(|m| m.strip_suffix("/metrics"))
        .expect(&metrics)
        .to_owned();
    let get = |addr: &str| {
        let mut stream = std::net::TcpStream::connect(addr).expect("connect");
        stream
            .write_all(b"GET /metrics HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n")
            .expect("write");
        let mut answer = String::new();
        stream.read_to_string(&mut answer).expect("read");
        answer
    };
    let on_api = get(&api);
    let on_metrics = get(&metrics);
    // SAFETY: signals the child this test spawned.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    let status = child.wait().expect("waits");
    assert!(on_api.starts_with("HTTP/1.1 400"), "{on_api}");
    assert!(on_api.contains("UnknownOperationException"), "{on_api}");
    assert!(!on_api.contains("statelog_"), "{on_api}");
    assert!(on_metrics.starts_with("HTTP/1.1 200"), "{on_metrics}");
    assert!(
        on_metrics.contains("statelog_http_requests_total"),
        "{on_metrics}"
    );
    assert!(status.success(), "{status:?}");
}
