//! A full disk and a poisoned log, as `statelog serve` shows them. A data directory with no
//! room for the first log segment stops `serve` before it listens (a real ENOSPC on a 1 MiB
//! tmpfs; root only, else a printed skip). An engine whose log is poisoned (an injected EIO on
//! a log write, on the simulated disk) makes `GET /health` answer 503 with the poisoned state
//! and every write answer `ServiceUnavailable` saying how to recover, while reads still work.

use crate::serve_common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{json, Value};

use serve_common::{send_to as send, signed_request, DEV, NOW_MS, ROLE};
use statelog::clock::ManualClock;
use statelog::engine::{Engine, EngineOptions};
use statelog::server::credentials::DEV_ACCOUNT_ID;
use statelog::server::engine_backend::EngineBackend;
use statelog::server::ServerState;
use statelog::store::Log;
use statelog_wal::storage::sim::{Errno, FaultPlan, SimStorage};
use statelog_wal::{Durability, Wal, WalOptions};

struct Mount(PathBuf);

impl Mount {
    fn tmpfs(dir: &Path, size: &str) -> Option<Mount> {
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .stderr(Stdio::null())
            .status()
            .ok()?;
        status.success().then(|| Mount(dir.to_path_buf()))
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn serve_refuses_to_start_on_a_disk_too_small_for_its_first_segment() {
    let temp = tempfile::tempdir().expect("tempdir");
    let Some(_mount) = Mount::tmpfs(temp.path(), "1m") else {
        println!("skip: cannot mount a tmpfs here (needs root)");
        return;
    };
    let data_dir = temp.path().join("data");
    let mut child = Command::new(env!("CARGO_BIN_EXE_statelog"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().expect("waits") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("serve kept running on a disk with no room for a segment");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = child.wait_with_output().expect("output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(status.code(), Some(2), "stderr: {stderr}");
    assert!(!stdout.contains("listening"), "{stdout}");
    assert!(stderr.contains(&data_dir.display().to_string()), "{stderr}");
    assert!(stderr.contains("bytes"), "names the space needed: {stderr}");
    assert!(stderr.contains("No space left on device"), "{stderr}");
}

async fn call(
    state: &Arc<ServerState<EngineBackend>>,
    operation: &str,
    body: Value,
) -> (StatusCode, Value) {
    send(
        state,
        signed_request(operation, &body, DEV.id, DEV.secret, NOW_MS),
    )
    .await
}

async fn health(state: &Arc<ServerState<EngineBackend>>) -> (StatusCode, Value) {
    let request = Request::get("/health")
        .body(Body::empty())
        .expect("request");
    send(state, request).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poisoned_log_answers_health_503_and_writes_service_unavailable() {
    let disk = SimStorage::new();
    let wal_options = WalOptions {
        durability: Durability::PerCommit,
        segment_size_bytes: 1 << 20,
        background_preparation: false,
        ..WalOptions::default()
    };
    let (wal, _) =
        Wal::open_with_storage(Arc::new(disk.clone()), "/data", wal_options).expect("opens");
    let clock = ManualClock::new(NOW_MS);
    let options = EngineOptions {
        clock: Arc::new(clock.clone()),
        background_timers: false,
        worker_threads: 1,
        account: DEV_ACCOUNT_ID.to_owned(),
        ..EngineOptions::default()
    };
    let log: Arc<dyn Log> = Arc::new(wal);
    let engine = Engine::open_with_log(log, options.clone()).expect("engine opens");
    let backend = EngineBackend::with_open_engine("/data", DEV_ACCOUNT_ID, engine, options);
    let state = ServerState::new(backend, None, Arc::new(clock));

    let machine = json!({
        "name": "m",
        "definition": r#"{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}"#,
        "roleArn": ROLE,
    });
    let created = call(&state, "CreateStateMachine", machine).await;
    assert_eq!(created.0, StatusCode::OK, "{:?}", created.1);
    let machine_arn = created.1["stateMachineArn"].clone();
    assert_eq!(
        health(&state).await,
        (StatusCode::OK, json!({"status": "ok"}))
    );

    // The next log write fails: the log is poisoned.
    disk.set_faults(FaultPlan {
        fail_at_op: Some((disk.op_count(), Errno::Eio)),
        ..FaultPlan::default()
    });
    let start = json!({"stateMachineArn": machine_arn, "name": "e1"});
    for attempt in 0..2 {
        let (status, body) = call(&state, "StartExecution", start.clone()).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{attempt}: {body}");
        assert_eq!(body["__type"], "ServiceUnavailable", "{body}");
        let message = body["message"].as_str().expect("a message");
        assert!(message.contains("the log is poisoned"), "{message}");
        assert!(message.contains("restart the server"), "{message}");
        assert!(!message.contains("/data"), "no path: {message}");
    }
    let (status, body) = health(&state).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["status"], "poisoned");
    let reason = body["reason"].as_str().expect("a reason");
    assert!(reason.contains("Input/output error"), "{reason}");
    assert!(!reason.contains("/data"), "no path: {reason}");
    assert_eq!(
        body.as_object().map(|o| o.len()),
        Some(2),
        "status and reason only"
    );
    // Reads of what is durable still work.
    let described = call(
        &state,
        "DescribeStateMachine",
        json!({"stateMachineArn": machine_arn}),
    )
    .await;
    assert_eq!(described.0, StatusCode::OK, "{:?}", described.1);
}
