//! `GET /metrics` of `statelog serve` over the real engine: every engine counter it shows
//! (executions started, closed by status, transitions, WAL commits, commit latency, pending
//! tasks per list) moves after a run. In process, on a manual clock; nothing sleeps.
#![cfg(feature = "server")]

use axum::body::Body;
use axum::http::Request;
use serde_json::json;
use tower::ServiceExt;

use statelog::server::credentials::DEV_ACCOUNT_ID;
use statelog::server::router::router;

mod serve_common;
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
