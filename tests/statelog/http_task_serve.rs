//! The HTTP Task through the `statelog serve` binary, started with `--connections FILE` as a
//! child process, against real servers on loopback (`http_common`):
//! - the secrets of the connections file reach the API called, and never the execution's
//!   history (GetExecutionHistory, DescribeExecution) or the server's log (searched for);
//! - a kill -9 of `serve` while a call is in flight (the API holds the request) re-dispatches
//!   the call after restart, with the same idempotency key, and the execution completes;
//! - a malformed connections file stops the server at startup, naming the place.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::http_common::{Recorded, Reply, TestServer};
use crate::serve_common::socket::parse_answer;
use crate::serve_common::ROLE;
use statelog::engine::http_task::IDEMPOTENCY_HEADER;
use statelog::server::sigv4::{signed_json_headers, SigningParams};

/// A running `statelog serve`.
struct Serve {
    child: Child,
    addr: String,
    _stdout: BufReader<ChildStdout>,
}

impl Serve {
    /// Starts the binary on `data`, with `connections`, its log (stderr, `RUST_LOG=debug`)
    /// appended to `log`; returns once it listens.
    fn start(data: &Path, connections: &Path, log: &Path) -> Serve {
        let log = std::fs::File::options()
            .create(true)
            .append(true)
            .open(log)
            .expect("log file");
        let mut child = Command::new(env!("CARGO_BIN_EXE_statelog"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .arg("--data-dir")
            .arg(data)
            .arg("--connections")
            .arg(connections)
            .env("RUST_LOG", "debug")
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("spawn statelog serve");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("a line");
        let addr = line
            .trim()
            .strip_prefix("listening on http://")
            .unwrap_or_else(|| panic!("not the listening line: {line:?}"))
            .to_string();
        Serve {
            child,
            addr,
            _stdout: stdout,
        }
    }

    /// Calls `operation` (development mode: any well-formed signature); the JSON answer.
    fn call(&self, operation: &str, body: Value) -> Value {
        let body = body.to_string().into_bytes();
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("after 1970")
            .as_millis() as u64;
        let params = SigningParams {
            access_key_id: "AKIDEXAMPLE",
            secret_access_key: "dev",
            region: "us-east-1",
            service: "states",
            now_ms,
        };
        let headers = signed_json_headers(
            "localhost",
            &format!("AWSStepFunctions.{operation}"),
            &body,
            &params,
        )
        .expect("signs");
        let mut request = format!(
            "POST / HTTP/1.1\r\ncontent-length: {}\r\nconnection: close\r\n",
            body.len()
        );
        for (name, value) in &headers {
            request.push_str(&format!("{name}: {}\r\n", value.to_str().expect("ascii")));
        }
        request.push_str("\r\n");
        let mut bytes = request.into_bytes();
        bytes.extend_from_slice(&body);
        let mut stream = std::net::TcpStream::connect(&self.addr).expect("connect");
        stream.write_all(&bytes).expect("write");
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).expect("read");
        let answer = parse_answer(&answer);
        assert_eq!(answer.status, 200, "{operation}: {}", answer.head);
        answer.json()
    }

    /// Waits (up to 60 s) until the execution is no longer RUNNING; its description.
    fn wait_closed(&self, execution_arn: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let described = self.call("DescribeExecution", json!({"executionArn": execution_arn}));
            if described["status"] != json!("RUNNING") {
                return described;
            }
            assert!(Instant::now() < deadline, "still running: {described}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn start_execution(&self, machine_arn: &str, name: &str) -> String {
        self.call(
            "StartExecution",
            json!({"stateMachineArn": machine_arn, "name": name, "input": "{}"}),
        )["executionArn"]
            .as_str()
            .expect("an execution ARN")
            .to_string()
    }

    /// SIGTERM, then waits for the exit.
    fn stop(mut self) {
        // SAFETY: signals the child this test spawned.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let status = self.child.wait().expect("waits");
        assert!(status.success(), "{status:?}");
    }

    /// kill -9, then waits for the exit.
    fn kill(mut self) {
        self.child.kill().expect("SIGKILL");
        let _ = self.child.wait();
    }
}

fn create_machine(serve: &Serve, name: &str, endpoint: &str, connection: &str) -> String {
    let definition = json!({"StartAt": "Call", "States": {"Call": {
        "Type": "Task", "Resource": "arn:aws:states:::http:invoke",
        "Parameters": {"ApiEndpoint": endpoint, "Method": "POST",
                       "RequestBody": {"order": 1},
                       "Authentication": {"ConnectionArn":
                           format!("arn:aws:events:us-east-1:000000000000:connection/{connection}/1a2b")}},
        "End": true}}});
    serve.call(
        "CreateStateMachine",
        json!({"name": name, "definition": definition.to_string(), "roleArn": ROLE}),
    )["stateMachineArn"]
        .as_str()
        .expect("a machine ARN")
        .to_string()
}

fn write_connections(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("connections.json");
    std::fs::write(&path, text).expect("write connections");
    path
}

const API_KEY_SECRET: &str = "sk-live-5f9e1c0d";
const HEADER_SECRET: &str = "hdr-secret-77d2";
const PASSWORD_SECRET: &str = "basic-pw-a31b";

#[test]
fn secrets_reach_the_api_and_never_the_history_or_the_server_log() {
    let api = TestServer::start(|request: &Recorded| {
        if request.uri == "/deny" {
            Reply::json(401, json!({"message": "denied"}))
        } else {
            Reply::json(200, json!({"ok": true}))
        }
    });
    let dir = tempfile::tempdir().expect("temp dir");
    let connections = write_connections(
        dir.path(),
        &format!(
            r#"{{"shop": {{"authorizationType": "API_KEY", "apiKeyName": "x-api-key",
                          "apiKeyValue": "{API_KEY_SECRET}",
                          "invocationHttpParameters": {{"headerParameters":
                              [{{"key": "x-extra", "value": "{HEADER_SECRET}"}}]}}}},
                "partner": {{"authorizationType": "BASIC", "username": "ann",
                             "password": "{PASSWORD_SECRET}"}}}}"#
        ),
    );
    let log = dir.path().join("serve.log");
    let serve = Serve::start(&dir.path().join("data"), &connections, &log);
    let ok = create_machine(&serve, "ok", &api.url("/ok"), "shop");
    let deny = create_machine(&serve, "deny", &api.url("/deny"), "partner");
    let ok = serve.start_execution(&ok, "one");
    let deny = serve.start_execution(&deny, "two");
    let ok_described = serve.wait_closed(&ok);
    let deny_described = serve.wait_closed(&deny);
    assert_eq!(ok_described["status"], json!("SUCCEEDED"), "{ok_described}");
    assert_eq!(
        deny_described["status"],
        json!("FAILED"),
        "{deny_described}"
    );
    assert_eq!(
        deny_described["error"],
        json!("States.Http.StatusCode.401"),
        "{deny_described}"
    );
    let mut seen = vec![ok_described.to_string(), deny_described.to_string()];
    for arn in [&ok, &deny] {
        let history = serve.call(
            "GetExecutionHistory",
            json!({"executionArn": arn, "includeExecutionData": true, "maxResults": 1000}),
        );
        let text = history.to_string();
        // The request shows as AWS shows it: the task's parameters, naming the connection.
        assert!(text.contains("ConnectionArn"), "{text}");
        seen.push(text);
    }
    serve.stop();
    seen.push(std::fs::read_to_string(&log).expect("the log"));
    assert!(
        !seen[seen.len() - 1].is_empty(),
        "the server logged something"
    );
    for secret in [API_KEY_SECRET, HEADER_SECRET, PASSWORD_SECRET] {
        for text in &seen {
            assert!(!text.contains(secret), "{secret} leaked into: {text}");
        }
    }
    // They were sent, though: the test would prove nothing otherwise.
    let requests = api.requests();
    let shop = requests
        .iter()
        .find(|r| r.uri == "/ok")
        .expect("the /ok call");
    assert_eq!(shop.header("x-api-key"), Some(API_KEY_SECRET));
    assert_eq!(shop.header("x-extra"), Some(HEADER_SECRET));
    let partner = requests
        .iter()
        .find(|r| r.uri == "/deny")
        .expect("the /deny call");
    assert!(partner
        .header("authorization")
        .is_some_and(|a| a.starts_with("Basic ")));
}

#[test]
fn a_call_in_flight_when_serve_is_killed_is_sent_again_with_the_same_key() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    // The first call is held until its client dies; the next one is answered.
    let api = TestServer::start(move |_: &Recorded| {
        if counted.fetch_add(1, Ordering::SeqCst) == 0 {
            Reply::Hold
        } else {
            Reply::json(200, json!({"charged": true}))
        }
    });
    let dir = tempfile::tempdir().expect("temp dir");
    let connections = write_connections(
        dir.path(),
        r#"{"shop": {"authorizationType": "API_KEY", "apiKeyName": "x-api-key", "apiKeyValue": "k"}}"#,
    );
    let data = dir.path().join("data");
    let log = dir.path().join("serve.log");
    let serve = Serve::start(&data, &connections, &log);
    let machine = create_machine(&serve, "charge", &api.url("/charge"), "shop");
    let execution = serve.start_execution(&machine, "once");
    api.wait_for_requests(1);
    serve.kill();

    let serve = Serve::start(&data, &connections, &log);
    let requests = api.wait_for_requests(2);
    let described = serve.wait_closed(&execution);
    assert_eq!(described["status"], json!("SUCCEEDED"), "{described}");
    let output: Value =
        serde_json::from_str(described["output"].as_str().expect("output")).expect("JSON");
    assert_eq!(output["ResponseBody"], json!({"charged": true}));
    let first = requests[0].header(IDEMPOTENCY_HEADER).expect("a key");
    let second = requests[1].header(IDEMPOTENCY_HEADER).expect("a key");
    assert_eq!(first, second, "the re-dispatched call carries the same key");
    assert!(
        first.starts_with(&format!("{execution}/")),
        "the key is the attempt's AttemptId: {first}"
    );
    serve.stop();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[test]
fn a_malformed_connections_file_stops_serve_at_startup_naming_the_place() {
    let dir = tempfile::tempdir().expect("temp dir");
    let connections = write_connections(
        dir.path(),
        r#"{"shop": {"authorizationType": "API_KEY", "apiKeyName": "x-api-key"}}"#,
    );
    let output = Command::new(env!("CARGO_BIN_EXE_statelog"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--connections")
        .arg(&connections)
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("/shop: the field 'apiKeyValue' is required"),
        "{stderr}"
    );
    assert!(stderr.contains("connections.json"), "{stderr}");
}
