//! StartExecution of a 5-state Pass machine: over HTTP on loopback (signed with SigV4, verified
//! against a credentials file) versus the same engine call in process, in the same run, on the
//! same engine settings. Prints requests/s, p50 and p99 for each and the HTTP layer's cost (the
//! difference of the p50s).
//!
//! `cargo bench --bench serve` (env `STATELOG_BENCH_REQUESTS`, default 2000 per measurement).
//! Two durabilities: `NoSync` isolates the HTTP layer; `GroupCommit` is what a server runs with.
//! One client, one request at a time (latency); the client signs each request before its timer
//! starts, so the figures hold only the server's work and the loopback round trip.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use statelog::clock::SystemClock;
use statelog::engine::{Engine, EngineOptions};
use statelog::server::credentials::{Credential, Credentials};
use statelog::server::engine_backend::{AccountLayout, EngineBackend};
use statelog::server::ServerState;
use statelog_wal::Durability;

#[path = "support/http_client.rs"]
mod http_client;
use http_client::{HttpClient as Client, Identity};

const ACCOUNT: &str = "123456789012";
const KEY: &str = "AKIDBENCH";
const SECRET: &str = "bench-secret";

fn definition() -> String {
    json!({
        "StartAt": "P1",
        "States": {
            "P1": {"Type": "Pass", "Next": "P2"},
            "P2": {"Type": "Pass", "Result": {"step": 2}, "ResultPath": "$.two", "Next": "P3"},
            "P3": {"Type": "Pass", "Next": "P4"},
            "P4": {"Type": "Pass", "Next": "P5"},
            "P5": {"Type": "Pass", "End": true}
        }
    })
    .to_string()
}

struct Summary {
    requests_per_s: f64,
    p50: Duration,
    p99: Duration,
}

/// `busy` is the sum of the timed sections, so requests/s is the one-client rate without the
/// client's own preparation.
fn summarize(mut latencies: Vec<Duration>, busy: Duration) -> Summary {
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() as f64 - 1.0) * q).round() as usize];
    Summary {
        requests_per_s: latencies.len() as f64 / busy.as_secs_f64(),
        p50: at(0.50),
        p99: at(0.99),
    }
}

fn options(durability: Durability) -> EngineOptions {
    EngineOptions {
        durability,
        clock: Arc::new(SystemClock),
        account: ACCOUNT.into(),
        ..EngineOptions::default()
    }
}

fn in_process(durability: Durability, requests: usize) -> Summary {
    let dir = tempfile::tempdir().expect("temp dir");
    let engine = Engine::open(dir.path(), options(durability)).expect("engine opens");
    let machine = engine
        .create_state_machine("five", &definition(), None)
        .expect("machine")
        .state_machine_arn;
    let mut latencies = Vec::with_capacity(requests);
    let mut busy = Duration::ZERO;
    for i in 0..requests {
        let name = format!("e{i}");
        let started = Instant::now();
        engine
            .start_execution(&machine, Some(&name), "{\"order\":7}")
            .expect("starts");
        let elapsed = started.elapsed();
        latencies.push(elapsed);
        busy += elapsed;
    }
    summarize(latencies, busy)
}

/// The connection the HTTP figures use, signing as the bench's credentials.
const IDENTITY: Identity = Identity {
    access_key_id: KEY,
    secret_access_key: SECRET,
    service: "states",
};

fn over_http(durability: Durability, requests: usize) -> Summary {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut keys = BTreeMap::new();
    keys.insert(
        KEY.to_owned(),
        Credential {
            secret_access_key: SECRET.into(),
            account_id: ACCOUNT.into(),
        },
    );
    let credentials = Credentials::from_map(keys, "bench").expect("credentials");
    let backend = EngineBackend::new(dir.path(), AccountLayout::PerAccount, options(durability));
    let state = ServerState::new(backend, Some(credentials), Arc::new(SystemClock));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = runtime.spawn(statelog::server::serve(state, listener, 64, async move {
        let _ = stopped.await;
    }));
    let mut client = Client::connect(addr, IDENTITY);
    let create = json!({"name": "five", "definition": definition(), "roleArn": "arn:aws:iam::123456789012:role/r"});
    let request = client.prepare(
        "AWSStepFunctions.CreateStateMachine",
        create.to_string().as_bytes(),
    );
    let (status, body) = client.send(&request).expect("an answer");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let machine = format!("arn:aws:states:us-east-1:{ACCOUNT}:stateMachine:five");
    let mut latencies = Vec::with_capacity(requests);
    let mut busy = Duration::ZERO;
    for i in 0..requests {
        let body =
            json!({"stateMachineArn": machine, "name": format!("e{i}"), "input": "{\"order\":7}"});
        let request = client.prepare(
            "AWSStepFunctions.StartExecution",
            body.to_string().as_bytes(),
        );
        let started = Instant::now();
        let (status, answer) = client.send(&request).expect("an answer");
        let elapsed = started.elapsed();
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
        latencies.push(elapsed);
        busy += elapsed;
    }
    // The protocol alone: an operation that never reaches the engine (SigV4 + JSON + asl parse
    // of the 5-state definition), to split the HTTP layer from the engine hop.
    let mut protocol_latencies = Vec::with_capacity(requests);
    let mut protocol_busy = Duration::ZERO;
    let validate = json!({"definition": definition()}).to_string();
    for _ in 0..requests {
        let request = client.prepare(
            "AWSStepFunctions.ValidateStateMachineDefinition",
            validate.as_bytes(),
        );
        let started = Instant::now();
        let (status, answer) = client.send(&request).expect("an answer");
        let elapsed = started.elapsed();
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
        protocol_latencies.push(elapsed);
        protocol_busy += elapsed;
    }
    let protocol = summarize(protocol_latencies, protocol_busy);
    println!(
        "{:<12} {:<10} {:>12.0} {:>10.1} {:>10.1}   (ValidateStateMachineDefinition: no engine call)",
        "-",
        "http",
        protocol.requests_per_s,
        protocol.p50.as_secs_f64() * 1e6,
        protocol.p99.as_secs_f64() * 1e6
    );
    drop(client);
    let _ = stop.send(());
    runtime
        .block_on(server)
        .expect("server joins")
        .expect("clean shutdown");
    summarize(latencies, busy)
}

/// The floor under any HTTP figure: a 1-byte ping-pong over a loopback TCP connection to a
/// thread that echoes it.
fn loopback_round_trip(requests: usize) -> Summary {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let echo = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("accept");
        stream.set_nodelay(true).expect("nodelay");
        let mut byte = [0u8; 1];
        while stream.read_exact(&mut byte).is_ok() {
            if stream.write_all(&byte).is_err() {
                break;
            }
        }
    });
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let mut latencies = Vec::with_capacity(requests);
    let mut busy = Duration::ZERO;
    let mut byte = [7u8; 1];
    for _ in 0..requests {
        let started = Instant::now();
        stream.write_all(&byte).expect("write");
        stream.read_exact(&mut byte).expect("read");
        let elapsed = started.elapsed();
        latencies.push(elapsed);
        busy += elapsed;
    }
    drop(stream);
    echo.join().expect("echo thread ends");
    summarize(latencies, busy)
}

fn main() {
    // `cargo test --benches` runs bench binaries with `--bench` absent; stay quick then.
    let benching = std::env::args().any(|a| a == "--bench");
    let requests: usize = std::env::var("STATELOG_BENCH_REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if benching { 2000 } else { 20 });
    println!("StartExecution, 5-state Pass machine, {requests} sequential requests per row");
    println!(
        "{:<12} {:<10} {:>12} {:>10} {:>10}",
        "durability", "path", "requests/s", "p50 us", "p99 us"
    );
    let floor = loopback_round_trip(requests);
    println!(
        "{:<12} {:<10} {:>12.0} {:>10.1} {:>10.1}   (1-byte TCP echo: the network floor)",
        "-",
        "loopback",
        floor.requests_per_s,
        floor.p50.as_secs_f64() * 1e6,
        floor.p99.as_secs_f64() * 1e6
    );
    for (label, durability) in [
        ("no-sync", Durability::NoSync),
        ("group", Durability::GroupCommit),
    ] {
        let engine = in_process(durability, requests);
        let http = over_http(durability, requests);
        for (path, s) in [("in-process", &engine), ("http", &http)] {
            println!(
                "{label:<12} {path:<10} {:>12.0} {:>10.1} {:>10.1}",
                s.requests_per_s,
                s.p50.as_secs_f64() * 1e6,
                s.p99.as_secs_f64() * 1e6
            );
        }
        println!(
            "{label:<12} http layer cost at p50: {:.1} us",
            (http.p50.as_secs_f64() - engine.p50.as_secs_f64()) * 1e6
        );
    }
}
