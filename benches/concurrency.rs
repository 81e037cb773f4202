//! Throughput under concurrency (issue 16): one closed-loop driver run against statelog and
//! against Restate, a durable-execution server with its own log. N clients each start a
//! 10-step workflow, wait for its durable success, and start the next one at once.
//!
//! Workloads (`STATELOG_BENCH_WORKLOADS`, comma-separated names; default all):
//! - `restate`: Restate's ingress, service `steps` whose handler runs 10 `ctx.run` steps
//!   (`benches/peers/restate/`). Only with `STATELOG_BENCH_RESTATE=1` and the npm install
//!   present; otherwise the run prints why it skipped.
//! - `task`: statelog in process, 10 Task states answered by a Rust handler.
//! - `serve`: the `statelog serve` binary in a child process on loopback, 10 Task states on an
//!   activity; activity workers (tokio tasks of this process) answer each step over HTTP
//!   (GetActivityTask + SendTaskSuccess, AWS JSON 1.0 signed with SigV4); clients start over
//!   HTTP and learn of the durable success from the worker that answered the last step.
//! - `pass`: statelog in process, 10 Pass states.
//! - `pass_async`: the same machine, each client a tokio task on a multi-threaded runtime with
//!   one worker per core, starting with `Engine::start_execution_async` (no thread blocks on
//!   the log's sync) and describing the closed execution.
//!
//! Printed per workload and concurrency: executions/s, p50 and p99 start-to-success, CPU per
//! execution (this process by getrusage; `statelog serve`, Restate's server and service from
//! /proc/<pid>/stat), commits per fdatasync, transitions/s and commits per execution for
//! statelog. Each figure covers the measured
//! interval only, after a warm-up.
//!
//! `cargo bench --bench concurrency`. Environment: `STATELOG_BENCH_CONCURRENCY` (default
//! `1,16,256`), `STATELOG_BENCH_SECONDS` (measured, default 3), `STATELOG_BENCH_WARMUP_SECONDS`
//! (default 2), `STATELOG_BENCH_ROUNDS` (default 1; rounds alternate the workloads),
//! `STATELOG_BENCH_WORKERS` (activity workers of `serve`; default the concurrency + 64, at most
//! the server's long polls per account), `STATELOG_BENCH_SERVE_BINARY` (the `statelog` binary
//! `serve` runs; default the one Cargo built), `STATELOG_BENCH_COMMIT_SPIN_US_MAX` (the
//! in-process engines' `WalOptions::commit_spin_us_max`; default the WAL's),
//! `STATELOG_BENCH_COMMIT_GATHER_US_MAX` (their `WalOptions::commit_gather_us_max`; default the
//! WAL's), `STATELOG_BENCH_ASYNC_WORKERS` (`pass_async`'s runtime workers; default one per
//! core). `benches/peers/README.md` explains each
//! figure.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, HeaderValue};
use serde_json::{json, Value};

use statelog::clock::{Clock, SystemClock};
use statelog::engine::{Engine, EngineOptions, ExecutionStatus, TaskError};
use statelog::server::limits::{
    CONNECTIONS_PER_PEER_MAX, KEEP_ALIVE_IDLE_TIMEOUT_MS, LONG_POLLS_PER_ACCOUNT_MAX,
};
use statelog::server::protocol::CONTENT_TYPE;
use statelog::server::sigv4::{sign_with, SigningKeyCache, SigningParams};

#[allow(dead_code)]
#[path = "support/child.rs"]
mod child;

#[path = "support/completions.rs"]
mod completions;

#[path = "support/env.rs"]
mod env;
use child::ChildProcess;
use completions::Completions;
use env::env_parse;

const ACCOUNT: &str = "123456789012";
const REGION: &str = "us-east-1";
const KEY: &str = "AKIDBENCH";
const SECRET: &str = "bench-secret";

/// Steps of every workflow: Task or Pass states for statelog, `ctx.run` calls for Restate.
const STEPS_COUNT: usize = 10;

/// The Task states' resource in process, answered by [`step_handler`].
const HANDLER_ARN: &str = "arn:aws:lambda:us-east-1:123456789012:function:step";

/// How long one HTTP answer may take before the bench gives up (a long poll takes up to 60 s).
const HTTP_READ_TIMEOUT_MS: u64 = 120_000;

/// How long Restate's server and service may take to come up and register.
const RESTATE_START_TIMEOUT_MS: u64 = 60_000;

/// Restate's npm directory, beside this file.
fn restate_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers/restate")
}

// ---------------------------------------------------------------------------------------------
// Settings

struct Settings {
    concurrency_levels: Vec<usize>,
    warmup: Duration,
    measured: Duration,
    rounds_count: usize,
    workloads: Vec<WorkloadKind>,
    workers_count: Option<usize>,
    restate: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WorkloadKind {
    Restate,
    Task,
    Serve,
    Pass,
    PassAsync,
}

impl WorkloadKind {
    const ALL: [WorkloadKind; 5] = [
        Self::Restate,
        Self::Task,
        Self::Serve,
        Self::Pass,
        Self::PassAsync,
    ];

    fn name(self) -> &'static str {
        match self {
            Self::Restate => "restate",
            Self::Task => "task",
            Self::Serve => "serve",
            Self::Pass => "pass",
            Self::PassAsync => "pass_async",
        }
    }
}

fn settings() -> Settings {
    // `cargo test --benches` runs bench binaries without `--bench`: stay quick then, and leave
    // Restate alone.
    let benching = std::env::args().any(|a| a == "--bench");
    let levels_text = std::env::var("STATELOG_BENCH_CONCURRENCY")
        .unwrap_or_else(|_| if benching { "1,16,256" } else { "1,4" }.to_string());
    let concurrency_levels: Vec<usize> = levels_text
        .split(',')
        .map(|level| {
            let level = level.trim();
            match level.parse::<usize>() {
                Ok(n) if n > 0 => n,
                _ => panic!("STATELOG_BENCH_CONCURRENCY: {level:?} is not a positive count"),
            }
        })
        .collect();
    let seconds = |name: &str, bench_default: f64, test_default: f64| {
        let value: f64 = env_parse(name).unwrap_or(if benching {
            bench_default
        } else {
            test_default
        });
        assert!(value >= 0.0, "{name} is not negative");
        Duration::from_secs_f64(value)
    };
    let workloads = match std::env::var("STATELOG_BENCH_WORKLOADS") {
        Ok(text) => text
            .split(',')
            .map(|name| {
                let name = name.trim();
                WorkloadKind::ALL
                    .into_iter()
                    .find(|kind| kind.name() == name)
                    .unwrap_or_else(|| {
                        panic!("STATELOG_BENCH_WORKLOADS: {name:?} is none of restate, task, serve, pass")
                    })
            })
            .collect(),
        Err(_) => WorkloadKind::ALL.to_vec(),
    };
    let settings = Settings {
        concurrency_levels,
        warmup: seconds("STATELOG_BENCH_WARMUP_SECONDS", 2.0, 0.1),
        measured: seconds("STATELOG_BENCH_SECONDS", 3.0, 0.3),
        rounds_count: env_parse("STATELOG_BENCH_ROUNDS").unwrap_or(1),
        workloads,
        workers_count: env_parse("STATELOG_BENCH_WORKERS"),
        restate: benching && std::env::var("STATELOG_BENCH_RESTATE").as_deref() == Ok("1"),
    };
    assert!(
        !settings.measured.is_zero(),
        "the measured interval is empty"
    );
    assert!(settings.rounds_count > 0, "at least one round");
    settings
}

// ---------------------------------------------------------------------------------------------
// The closed loop

/// One workload under the closed loop. Every client calls [`Workload::execute`] again as soon
/// as the last call returned.
trait Workload: Sync {
    /// A client's own state (a connection).
    type Client;

    /// The state of client `client_index`.
    fn client(&self, client_index: usize) -> Self::Client;

    /// Runs one execution from its start to its durable success; panics on anything else.
    fn execute(&self, client: &mut Self::Client, client_index: usize, sequence: u64);

    /// The engine's counters (commits, fdatasyncs, transitions), for the statelog workloads.
    fn counters(&self) -> Option<Counters> {
        None
    }

    /// Processes besides this one that do the workload's work (Restate's server, its service).
    fn peers(&self) -> Vec<PeerProcess> {
        Vec::new()
    }
}

/// statelog's engine counters at one moment.
#[derive(Debug, Clone, Copy)]
struct Counters {
    commits_count: u64,
    syncs_count: u64,
    transitions_count: u64,
}

impl Counters {
    fn of(engine: &Engine) -> Self {
        let metrics = engine.metrics();
        Self {
            commits_count: metrics.commits,
            syncs_count: metrics.wal_syncs,
            transitions_count: metrics.transitions,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct PeerProcess {
    name: &'static str,
    pid: u32,
}

/// Counters read at both ends of the measured interval.
struct Sample {
    at: Instant,
    cpu_self: Option<Duration>,
    cpu_peers: Vec<Option<Duration>>,
    commits_count: Option<u64>,
    syncs_count: Option<u64>,
    transitions_count: Option<u64>,
}

fn sample<W: Workload>(workload: &W, peers: &[PeerProcess]) -> Sample {
    let counters = workload.counters();
    Sample {
        at: Instant::now(),
        cpu_self: cpu_of_this_process(),
        cpu_peers: peers.iter().map(|peer| cpu_of_process(peer.pid)).collect(),
        commits_count: counters.map(|c| c.commits_count),
        syncs_count: counters.map(|c| c.syncs_count),
        transitions_count: counters.map(|c| c.transitions_count),
    }
}

/// When one execution started and when its success came back.
#[derive(Debug, Clone, Copy)]
struct Span {
    started: Instant,
    succeeded: Instant,
}

struct Report {
    executions_count: usize,
    interval: Duration,
    latencies: Vec<Duration>,
    cpu_self: Option<Duration>,
    cpu_peers: Vec<(&'static str, Option<Duration>)>,
    commits_count: Option<u64>,
    syncs_count: Option<u64>,
    transitions_count: Option<u64>,
}

fn delta<T: Copy + std::ops::Sub<Output = T>>(before: Option<T>, after: Option<T>) -> Option<T> {
    Some(after? - before?)
}

/// Runs `concurrency` clients for the warm-up and the measured interval, then stops them
/// (each finishes the execution it is in). Counts the executions that succeeded inside the
/// interval, and takes their latencies: one that started during the warm-up counts too, so a
/// latency longer than the interval is still seen (the warm-up must outlast one latency).
fn closed_loop<W: Workload>(
    workload: &W,
    concurrency: usize,
    warmup: Duration,
    measured: Duration,
) -> Report {
    assert!(concurrency > 0, "at least one client");
    let peers = workload.peers();
    let stop = AtomicBool::new(false);
    let (first, last, spans) = std::thread::scope(|scope| {
        let clients: Vec<_> = (0..concurrency)
            .map(|client_index| {
                let stop = &stop;
                std::thread::Builder::new()
                    .name(format!("client-{client_index}"))
                    .spawn_scoped(scope, move || {
                        let mut client = workload.client(client_index);
                        let mut spans = Vec::new();
                        let mut sequence = 0u64;
                        while !stop.load(Ordering::Relaxed) {
                            let started = Instant::now();
                            workload.execute(&mut client, client_index, sequence);
                            spans.push(Span {
                                started,
                                succeeded: Instant::now(),
                            });
                            sequence += 1;
                        }
                        spans
                    })
                    .expect("client thread starts")
            })
            .collect();
        std::thread::sleep(warmup);
        let first = sample(workload, &peers);
        std::thread::sleep(measured);
        let last = sample(workload, &peers);
        stop.store(true, Ordering::Relaxed);
        let spans: Vec<Span> = clients
            .into_iter()
            .flat_map(|client| client.join().expect("client thread"))
            .collect();
        (first, last, spans)
    });
    report(&spans, &first, &last, &peers)
}

/// The report of the executions whose success came between the samples `first` and `last`.
fn report(spans: &[Span], first: &Sample, last: &Sample, peers: &[PeerProcess]) -> Report {
    let inside = |at: Instant| at >= first.at && at <= last.at;
    let mut latencies: Vec<Duration> = spans
        .iter()
        .filter(|s| inside(s.succeeded))
        .map(|s| s.succeeded - s.started)
        .collect();
    latencies.sort();
    Report {
        executions_count: latencies.len(),
        interval: last.at - first.at,
        latencies,
        cpu_self: delta(first.cpu_self, last.cpu_self),
        cpu_peers: peers
            .iter()
            .zip(first.cpu_peers.iter().zip(&last.cpu_peers))
            .map(|(peer, (before, after))| (peer.name, delta(*before, *after)))
            .collect(),
        commits_count: delta(first.commits_count, last.commits_count),
        syncs_count: delta(first.syncs_count, last.syncs_count),
        transitions_count: delta(first.transitions_count, last.transitions_count),
    }
}

/// [`closed_loop`] with each client a tokio task on a multi-threaded runtime of one worker per
/// core, starting with `Engine::start_execution_async`; the machine (Pass states) closes in its
/// start, so the describe that checks its success does not wait.
fn closed_loop_async(
    workload: &InProcess,
    concurrency: usize,
    warmup: Duration,
    measured: Duration,
) -> Report {
    assert!(concurrency > 0, "at least one client");
    let cores = std::env::var("STATELOG_BENCH_ASYNC_WORKERS")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cores)
        .build()
        .expect("runtime");
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..concurrency)
        .map(|client_index| {
            let engine = workload.engine.clone();
            let machine_arn = workload.machine_arn.clone();
            let stop = stop.clone();
            runtime.spawn(async move {
                let mut spans = Vec::new();
                let mut sequence = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let started = Instant::now();
                    let name = execution_name(client_index, sequence);
                    let execution = engine
                        .start_execution_async(&machine_arn, Some(&name), INPUT)
                        .await
                        .expect("starts");
                    let closed = engine
                        .describe_execution(&execution.execution_arn)
                        .expect("the execution exists");
                    assert_eq!(closed.status, ExecutionStatus::Succeeded, "{name}");
                    spans.push(Span {
                        started,
                        succeeded: Instant::now(),
                    });
                    sequence += 1;
                }
                spans
            })
        })
        .collect();
    std::thread::sleep(warmup);
    let first = sample(workload, &[]);
    std::thread::sleep(measured);
    let last = sample(workload, &[]);
    stop.store(true, Ordering::Relaxed);
    let spans: Vec<Span> = runtime.block_on(async {
        let mut spans = Vec::new();
        for client in clients {
            spans.extend(client.await.expect("client task"));
        }
        spans
    });
    report(&spans, &first, &last, &[])
}

// ---------------------------------------------------------------------------------------------
// CPU

/// User + system CPU of this process (every thread) so far.
fn cpu_of_this_process() -> Option<Duration> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes one `rusage` into the pointer it is given.
    let status = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    if status != 0 {
        return None;
    }
    // SAFETY: getrusage returned 0, so it filled the struct (zeroed before in any case).
    let usage = unsafe { usage.assume_init() };
    let of = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    Some(of(usage.ru_utime) + of(usage.ru_stime))
}

/// User + system CPU of process `pid` so far, from `/proc/<pid>/stat` (utime and stime, in
/// clock ticks); `None` where there is no such file.
fn cpu_of_process(pid: u32) -> Option<Duration> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count from after it.
    let after_name = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // Fields 14 and 15 of the line are the 12th and 13th after the name (state is field 3).
    let utime_ticks: u64 = fields.get(11)?.parse().ok()?;
    let stime_ticks: u64 = fields.get(12)?.parse().ok()?;
    // SAFETY: sysconf reads a configuration value and has no preconditions.
    let ticks_per_s = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks_per_s <= 0 {
        return None;
    }
    Some(Duration::from_secs_f64(
        (utime_ticks + stime_ticks) as f64 / ticks_per_s as f64,
    ))
}

// ---------------------------------------------------------------------------------------------
// Definitions

fn chain(state_of: impl Fn(usize, String) -> String) -> String {
    let states: Vec<String> = (0..STEPS_COUNT)
        .map(|index| {
            let next = if index + 1 == STEPS_COUNT {
                r#""End": true"#.to_string()
            } else {
                format!(r#""Next": "S{}""#, index + 1)
            };
            format!(r#""S{index}": {}"#, state_of(index, next))
        })
        .collect();
    format!(
        r#"{{"StartAt": "S0", "States": {{{}}}}}"#,
        states.join(", ")
    )
}

/// 10 Task states on `resource`; each step's output is its input with `n` one higher.
fn task_chain(resource: &str) -> String {
    chain(|_, next| format!(r#"{{"Type": "Task", "Resource": "{resource}", {next}}}"#))
}

fn pass_chain() -> String {
    chain(|_, next| format!(r#"{{"Type": "Pass", {next}}}"#))
}

const INPUT: &str = r#"{"n": 0}"#;

fn step_output(input: &Value) -> Value {
    let mut output = json!({"n": input["n"].as_u64().unwrap_or(0) + 1});
    // `serve` routes the last step's answer back to the client that started the execution.
    if let Some(client_index) = input.get("client") {
        output["client"] = client_index.clone();
    }
    output
}

/// Opens statelog's engine (in process and under `serve`); with
/// `STATELOG_BENCH_COMMIT_SPIN_US_MAX` or `STATELOG_BENCH_COMMIT_GATHER_US_MAX` set, over a WAL
/// opened with that commit spin or gather (the engine's options do not carry them).
fn open_engine(dir: &Path) -> Engine {
    let commit_spin_us_max: Option<u64> = env_parse("STATELOG_BENCH_COMMIT_SPIN_US_MAX");
    let commit_gather_us_max: Option<u64> = env_parse("STATELOG_BENCH_COMMIT_GATHER_US_MAX");
    if commit_spin_us_max.is_none() && commit_gather_us_max.is_none() {
        return Engine::open(dir, engine_options()).expect("engine opens");
    }
    let options = engine_options();
    let defaults = statelog_wal::WalOptions::default();
    let wal_options = statelog_wal::WalOptions {
        durability: options.durability,
        segment_size_bytes: options.segment_size_bytes,
        commit_spin_us_max: commit_spin_us_max.unwrap_or(defaults.commit_spin_us_max),
        commit_gather_us_max: commit_gather_us_max.unwrap_or(defaults.commit_gather_us_max),
        ..defaults
    };
    let (wal, _report) = statelog_wal::Wal::open(dir, wal_options).expect("wal opens");
    Engine::open_with_log(Arc::new(wal), options).expect("engine opens")
}

fn engine_options() -> EngineOptions {
    EngineOptions {
        clock: Arc::new(SystemClock),
        account: ACCOUNT.into(),
        region: REGION.into(),
        ..EngineOptions::default()
    }
}

fn execution_name(client_index: usize, sequence: u64) -> String {
    format!("c{client_index}-{sequence}")
}

fn expect_succeeded(engine: &Engine, execution_arn: &str) {
    let closed = engine
        .wait_until_closed(execution_arn)
        .expect("the execution exists");
    assert_eq!(
        closed.status,
        ExecutionStatus::Succeeded,
        "{execution_arn} closed as {:?}",
        closed.status
    );
}

// ---------------------------------------------------------------------------------------------
// statelog in process

/// statelog in process: 10 Task states answered by a Rust handler, or 10 Pass states.
struct InProcess {
    engine: Engine,
    machine_arn: String,
    _dir: tempfile::TempDir,
}

impl InProcess {
    fn open(definition: &str) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let engine = open_engine(dir.path());
        engine.register_integration(HANDLER_ARN, |input: Value, _context: Value| async move {
            Ok::<_, TaskError>(step_output(&input))
        });
        let machine_arn = engine
            .create_state_machine("steps", definition, None)
            .expect("machine")
            .state_machine_arn;
        Self {
            engine,
            machine_arn,
            _dir: dir,
        }
    }
}

impl Workload for InProcess {
    type Client = ();

    fn client(&self, _client_index: usize) {}

    fn execute(&self, _client: &mut (), client_index: usize, sequence: u64) {
        let started = self
            .engine
            .start_execution(
                &self.machine_arn,
                Some(&execution_name(client_index, sequence)),
                INPUT,
            )
            .expect("starts");
        expect_succeeded(&self.engine, &started.execution_arn);
    }

    fn counters(&self) -> Option<Counters> {
        Some(Counters::of(&self.engine))
    }
}

// ---------------------------------------------------------------------------------------------
// HTTP/1.1 client

/// One keep-alive HTTP/1.1 connection; reads answers framed by Content-Length or chunked.
struct Http {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    host: String,
}

impl Http {
    fn connect(addr: SocketAddr) -> std::io::Result<Self> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_millis(HTTP_READ_TIMEOUT_MS)))?;
        Ok(Self {
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
            host: addr.to_string(),
        })
    }

    /// Sends `method path` with `headers` (besides host and length) and `body`; returns the
    /// status and the body of the answer.
    fn request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> std::io::Result<(u16, Vec<u8>)> {
        let bytes = request_bytes(method, path, &self.host, headers, body);
        self.send(&bytes)
    }

    /// Sends a whole request, as bytes; returns the status and the body of the answer.
    fn send(&mut self, bytes: &[u8]) -> std::io::Result<(u16, Vec<u8>)> {
        self.writer.write_all(bytes)?;
        self.read_answer()
    }

    fn read_answer(&mut self) -> std::io::Result<(u16, Vec<u8>)> {
        let mut status_line = String::new();
        self.reader.read_line(&mut status_line)?;
        let status = status_of(&status_line)?;
        let mut framing = Framing::default();
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line)?;
            if !framing.read_header(&line)? {
                break;
            }
        }
        let (length_bytes, chunked) = (framing.length_bytes.unwrap_or(0), framing.chunked);
        if !chunked {
            let mut body = vec![0u8; length_bytes];
            self.reader.read_exact(&mut body)?;
            return Ok((status, body));
        }
        let mut body = Vec::new();
        loop {
            let mut size_line = String::new();
            self.reader.read_line(&mut size_line)?;
            let size_text = size_line.trim_end().split(';').next().unwrap_or("");
            let size_bytes = usize::from_str_radix(size_text, 16)
                .map_err(|_| broken_answer("bad chunk size"))?;
            let start = body.len();
            body.resize(start + size_bytes, 0);
            self.reader.read_exact(&mut body[start..])?;
            let mut end = String::new();
            self.reader.read_line(&mut end)?;
            if size_bytes == 0 {
                return Ok((status, body));
            }
        }
    }
}

/// An HTTP/1.1 request with `headers` besides host and length.
fn request_bytes(
    method: &str,
    path: &str,
    host: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Vec<u8> {
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nhost: {host}\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

/// [`Http`] on tokio, for the activity workers: hundreds of them share one thread, as a
/// worker written with asynchronous I/O would (a thread each spent the cores on switches).
struct AsyncHttp {
    reader: tokio::io::BufReader<tokio::net::tcp::OwnedReadHalf>,
    writer: tokio::net::tcp::OwnedWriteHalf,
    host: String,
}

impl AsyncHttp {
    async fn connect(addr: SocketAddr) -> std::io::Result<Self> {
        let stream = tokio::net::TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let (reader, writer) = stream.into_split();
        Ok(Self {
            reader: tokio::io::BufReader::new(reader),
            writer,
            host: addr.to_string(),
        })
    }

    async fn send(&mut self, bytes: &[u8]) -> std::io::Result<(u16, Vec<u8>)> {
        use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
        self.writer.write_all(bytes).await?;
        let mut status_line = String::new();
        self.reader.read_line(&mut status_line).await?;
        let status = status_of(&status_line)?;
        let mut framing = Framing::default();
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).await?;
            if !framing.read_header(&line)? {
                break;
            }
        }
        if framing.chunked {
            return Err(broken_answer(
                "the workers read only answers with a content-length",
            ));
        }
        let length_bytes = framing
            .length_bytes
            .ok_or_else(|| broken_answer("no content-length"))?;
        let mut body = vec![0u8; length_bytes];
        self.reader.read_exact(&mut body).await?;
        Ok((status, body))
    }
}

fn broken_answer(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what)
}

/// The code of an HTTP/1.1 status line; an empty line means the server closed the connection.
fn status_of(status_line: &str) -> std::io::Result<u16> {
    if status_line.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the server closed the connection",
        ));
    }
    status_line
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| broken_answer("no status code"))
}

/// How an answer's body is framed, from its header lines.
#[derive(Default)]
struct Framing {
    length_bytes: Option<usize>,
    chunked: bool,
}

impl Framing {
    /// Takes one header line; false at the blank line that ends the head.
    fn read_header(&mut self, line: &str) -> std::io::Result<bool> {
        let line = line.trim_end();
        if line.is_empty() {
            return Ok(false);
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                let length_bytes = value
                    .trim()
                    .parse()
                    .map_err(|_| broken_answer("bad content-length"))?;
                self.length_bytes = Some(length_bytes);
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                self.chunked = value.trim().eq_ignore_ascii_case("chunked");
            }
        }
        Ok(true)
    }
}

// ---------------------------------------------------------------------------------------------
// statelog serve with activity workers

/// One signed AWS JSON 1.0 request to the statelog server at `host`, as bytes.
/// The signing keys of the bench's requests: derived once a day, as a client that signs many
/// requests does (four HMACs per request were a fifth of the activity workers' CPU).
static SIGNING_KEYS: std::sync::LazyLock<SigningKeyCache> =
    std::sync::LazyLock::new(SigningKeyCache::default);

fn aws_request(host: &str, operation: &str, body: &Value) -> Vec<u8> {
    let body = body.to_string();
    let target = format!("AWSStepFunctions.{operation}");
    let mut headers = HeaderMap::new();
    headers.insert(
        "host",
        HeaderValue::from_str(host).expect("an address is ascii"),
    );
    headers.insert("content-type", HeaderValue::from_static(CONTENT_TYPE));
    headers.insert(
        "x-amz-target",
        HeaderValue::from_str(&target).expect("ascii"),
    );
    let authorization = sign_with(
        "POST",
        "/",
        "",
        &mut headers,
        body.as_bytes(),
        &SigningParams {
            access_key_id: KEY,
            secret_access_key: SECRET,
            region: REGION,
            service: "states",
            now_ms: SystemClock.now_ms(),
        },
        Some(&SIGNING_KEYS),
    )
    .expect("signs");
    let signed: Vec<(String, String)> = headers
        .iter()
        .filter(|(name, _)| name.as_str() != "host")
        .map(|(name, value)| (name.to_string(), value.to_str().expect("ascii").to_string()))
        .collect();
    let mut header_refs: Vec<(&str, &str)> = signed
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect();
    header_refs.push(("authorization", &authorization));
    request_bytes("POST", "/", host, &header_refs, body.as_bytes())
}

/// The JSON of a 200 answer to `operation`; panics on any other.
fn aws_answer(operation: &str, answer: std::io::Result<(u16, Vec<u8>)>) -> Value {
    let (status, answer) = answer.unwrap_or_else(|e| panic!("{operation}: {e}"));
    assert_eq!(
        status,
        200,
        "{operation}: {}",
        String::from_utf8_lossy(&answer)
    );
    serde_json::from_slice(&answer).expect("the answer is JSON")
}

/// One signed AWS JSON 1.0 call to the statelog server.
fn aws_call(http: &mut Http, operation: &str, body: &Value) -> Value {
    let bytes = aws_request(&http.host, operation, body);
    aws_answer(operation, http.send(&bytes))
}

/// [`aws_call`] on tokio.
async fn aws_call_async(http: &mut AsyncHttp, operation: &str, body: &Value) -> Value {
    let bytes = aws_request(&http.host, operation, body);
    aws_answer(operation, http.send(&bytes).await)
}

/// `statelog serve`, the binary users run, as a child process on loopback with a credentials
/// file (so the server's CPU is its own, with the binary's allocator). 10 Task states on one
/// activity; a pool of activity workers (threads of this process) polls it over HTTP.
struct Serve {
    addr: SocketAddr,
    metrics: SocketAddr,
    machine_arn: String,
    activity_arn: String,
    workers: Vec<tokio::task::JoinHandle<()>>,
    /// The workers' runtime: one thread.
    workers_runtime: tokio::runtime::Runtime,
    done: Arc<Completions>,
    /// Connections the clients share, at most [`SERVE_CLIENT_CONNECTIONS_MAX`]: one is taken
    /// for a StartExecution and given back, so a client waiting for its execution holds none
    /// (the workers need the server's connections per peer).
    connections: ConnectionPool,
    // Dropped after the workers have left: the server, then its directory.
    server: ChildProcess,
    _dir: tempfile::TempDir,
}

/// The `statelog` binary `serve` runs: `STATELOG_BENCH_SERVE_BINARY`, or the one Cargo built
/// beside this bench.
fn serve_binary() -> PathBuf {
    std::env::var_os("STATELOG_BENCH_SERVE_BINARY")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_statelog")))
}

/// The most connections the `serve` clients share (they hold one only while starting).
const SERVE_CLIENT_CONNECTIONS_MAX: usize = 64;

/// How long a `serve` client connection may stay idle in the pool: well inside the server's
/// keep-alive idle timeout, after which the server closes it.
const SERVE_CLIENT_IDLE_MS_MAX: u64 = KEEP_ALIVE_IDLE_TIMEOUT_MS / 2;

/// Activity workers beyond the concurrency, by default: polls that wait when a task is
/// scheduled claim it in the commit that schedules it (AWS advises at least 100 open polls per
/// activity ARN).
const SERVE_IDLE_POLLERS_COUNT: usize = 64;

/// How long one `serve` execution may take before the bench looks at what happened to it.
const SERVE_EXECUTION_TIMEOUT_MS: u64 = 60_000;

impl Serve {
    fn start(workers_count: usize, clients_count: usize) -> Self {
        assert!(workers_count > 0, "at least one activity worker");
        assert!(
            workers_count <= LONG_POLLS_PER_ACCOUNT_MAX,
            "the server refuses more than {LONG_POLLS_PER_ACCOUNT_MAX} long polls of one account"
        );
        let dir = tempfile::tempdir().expect("temp dir");
        let credentials = dir.path().join("credentials.json");
        std::fs::write(
            &credentials,
            json!({KEY: {"secret_access_key": SECRET, "account_id": ACCOUNT}}).to_string(),
        )
        .expect("credentials file");
        let [port, metrics_port] = free_ports();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let metrics = SocketAddr::from(([127, 0, 0, 1], metrics_port));
        let mut server = Process::spawn(
            "statelog serve",
            Command::new(serve_binary())
                .arg("serve")
                .arg("--data-dir")
                .arg(dir.path().join("data"))
                .arg("--listen")
                .arg(addr.to_string())
                .arg("--credentials")
                .arg(&credentials)
                .arg("--region")
                .arg(REGION)
                .arg("--metrics-listen")
                .arg(metrics.to_string()),
            dir.path().join("serve.log"),
        )
        .expect("statelog serve starts");
        wait_for("statelog serve's metrics", || {
            server.check_running()?;
            http_call(metrics, "GET", "/metrics", "")
        })
        .unwrap_or_else(|e| panic!("{e}"));
        let mut http = Http::connect(addr).expect("connects");
        let activity_arn = aws_call(&mut http, "CreateActivity", &json!({"name": "step"}))
            ["activityArn"]
            .as_str()
            .expect("activityArn")
            .to_string();
        let machine = json!({
            "name": "steps",
            "definition": task_chain(&activity_arn),
            "roleArn": format!("arn:aws:iam::{ACCOUNT}:role/bench"),
        });
        let machine_arn = aws_call(&mut http, "CreateStateMachine", &machine)["stateMachineArn"]
            .as_str()
            .expect("stateMachineArn")
            .to_string();
        let done = Arc::new(Completions::new(clients_count));
        let workers_runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("workers")
            .enable_all()
            .build()
            .expect("the workers' runtime");
        let workers = (0..workers_count)
            .map(|worker_index| {
                let activity_arn = activity_arn.clone();
                let done = done.clone();
                workers_runtime.spawn(async move {
                    activity_worker(addr, &activity_arn, worker_index, &done).await;
                })
            })
            .collect();
        Self {
            addr,
            metrics,
            machine_arn,
            activity_arn,
            workers,
            workers_runtime,
            done,
            connections: ConnectionPool::new(addr),
            server,
            _dir: dir,
        }
    }
}

/// Polls the activity and answers every task with its input's `n` one higher, until a task
/// whose input says `stop`; tells `done` when it answered an execution's last step.
async fn activity_worker(
    addr: SocketAddr,
    activity_arn: &str,
    worker_index: usize,
    done: &Completions,
) {
    let mut http = AsyncHttp::connect(addr).await.expect("worker connects");
    let poll = json!({"activityArn": activity_arn, "workerName": format!("worker-{worker_index}")});
    loop {
        let task = aws_call_async(&mut http, "GetActivityTask", &poll).await;
        let Some(token) = task["taskToken"].as_str().filter(|t| !t.is_empty()) else {
            continue; // the long poll ended without a task
        };
        let input: Value = serde_json::from_str(task["input"].as_str().expect("task input"))
            .expect("the input is JSON");
        let output = step_output(&input);
        let answer = json!({"taskToken": token, "output": output.to_string()});
        aws_call_async(&mut http, "SendTaskSuccess", &answer).await;
        if input["stop"] == json!(true) {
            return;
        }
        let last = output["n"].as_u64() == Some(STEPS_COUNT as u64);
        if let (true, Some(client_index)) = (last, output["client"].as_u64()) {
            done.succeeded(usize::try_from(client_index).expect("a client index"));
        }
    }
}

/// The value of the metric line `name{...} value` in a Prometheus text answer.
fn metric_value(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .find(|line| line.starts_with(name) && line[name.len()..].starts_with(['{', ' ']))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse::<f64>().ok())
        .map(|value| value as u64)
}

/// Keep-alive connections shared by the `serve` clients, at most
/// [`SERVE_CLIENT_CONNECTIONS_MAX`] of them.
struct ConnectionPool {
    addr: SocketAddr,
    /// Idle connections with the moment each was given back, and how many exist (idle or
    /// taken).
    idle: parking_lot::Mutex<(Vec<(Http, Instant)>, usize)>,
    returned: parking_lot::Condvar,
}

impl ConnectionPool {
    fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            idle: parking_lot::Mutex::new((Vec::new(), 0)),
            returned: parking_lot::Condvar::new(),
        }
    }

    /// An idle connection, a new one while fewer than the maximum exist, or the next one
    /// given back. A connection idle for longer than [`SERVE_CLIENT_IDLE_MS_MAX`] is closed
    /// instead: the server may have closed it (its keep-alive idle timeout), and a request
    /// sent on it would find the connection gone.
    fn take(&self) -> Http {
        let mut idle = self.idle.lock();
        let idle_max = Duration::from_millis(SERVE_CLIENT_IDLE_MS_MAX);
        loop {
            let before = idle.0.len();
            idle.0.retain(|(_, since)| since.elapsed() < idle_max);
            idle.1 -= before - idle.0.len();
            if let Some((http, _)) = idle.0.pop() {
                return http;
            }
            if idle.1 < SERVE_CLIENT_CONNECTIONS_MAX {
                idle.1 += 1;
                drop(idle);
                return Http::connect(self.addr).expect("client connects");
            }
            self.returned.wait(&mut idle);
        }
    }

    fn give_back(&self, http: Http) {
        self.idle.lock().0.push((http, Instant::now()));
        self.returned.notify_one();
    }
}

impl Workload for Serve {
    type Client = ();

    fn client(&self, _client_index: usize) {}

    fn execute(&self, _client: &mut (), client_index: usize, sequence: u64) {
        let mut http = self.connections.take();
        let input = json!({"n": 0, "client": client_index}).to_string();
        let start = json!({
            "stateMachineArn": self.machine_arn,
            "name": execution_name(client_index, sequence),
            "input": input,
        });
        let started = aws_call(&mut http, "StartExecution", &start);
        // The API has no call that waits for a close (StartSyncExecution is for Express
        // machines), and polling DescribeExecution would add requests no client of Restate
        // makes: the worker that answered the last step says so.
        self.connections.give_back(http);
        let timeout = Duration::from_millis(SERVE_EXECUTION_TIMEOUT_MS);
        if !self
            .done
            .wait(client_index, sequence + 1, Instant::now() + timeout)
        {
            let arn = &started["executionArn"];
            let mut http = self.connections.take();
            let described = aws_call(
                &mut http,
                "DescribeExecution",
                &json!({"executionArn": arn}),
            );
            panic!("{arn} did not succeed within {timeout:?}: {described}");
        }
    }

    fn counters(&self) -> Option<Counters> {
        let text = http_call(self.metrics, "GET", "/metrics", "").expect("metrics answer");
        Some(Counters {
            commits_count: metric_value(&text, "statelog_wal_commits_total")?,
            syncs_count: metric_value(&text, "statelog_wal_syncs_total")?,
            transitions_count: metric_value(&text, "statelog_state_transitions_total")?,
        })
    }

    fn peers(&self) -> Vec<PeerProcess> {
        vec![PeerProcess {
            name: "server",
            pid: self.server.pid(),
        }]
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        // Each worker leaves after answering one `stop` task, so one such execution per
        // worker releases them all.
        let mut http = Http::connect(self.addr).expect("connects");
        for worker_index in 0..self.workers.len() {
            let start = json!({
                "stateMachineArn": self.machine_arn,
                "name": format!("stop-{worker_index}"),
                "input": r#"{"n": 0, "stop": true}"#,
            });
            aws_call(&mut http, "StartExecution", &start);
        }
        for worker in self.workers.drain(..) {
            if self.workers_runtime.block_on(worker).is_err() && !std::thread::panicking() {
                panic!("an activity worker of {} panicked", self.activity_arn);
            }
        }
        if let Err(e) = self.server.check_running() {
            if !std::thread::panicking() {
                panic!("{e}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Restate

/// A child process killed (SIGTERM, then SIGKILL after a grace period) when dropped, its
/// stdout and stderr in `log`.
struct Process;

impl Process {
    fn spawn(
        name: &'static str,
        command: &mut Command,
        log: PathBuf,
    ) -> std::io::Result<ChildProcess> {
        let out = std::fs::File::create(&log)?;
        let err = out.try_clone()?;
        command.stdin(Stdio::null()).stdout(out).stderr(err);
        ChildProcess::spawn(name, command, log)
    }
}

/// Restate's server and the `steps` service (Node), started from the npm install beside this
/// file, on free loopback ports, with the server's data in a temp dir.
struct Restate {
    ingress: SocketAddr,
    // Dropped in this order: the service, then the server, then the directory.
    service: ChildProcess,
    server: ChildProcess,
    _dir: tempfile::TempDir,
}

/// Why Restate cannot run here, or where its binary is.
fn restate_binary() -> Result<PathBuf, String> {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => return Err(format!("no restate-server build for {other}")),
    };
    let os = match std::env::consts::OS {
        "linux" => "linux",
        "macos" => "darwin",
        other => return Err(format!("no restate-server build for {other}")),
    };
    let binary = restate_dir().join(format!(
        "node_modules/@restatedev/restate-server-{os}-{arch}/bin/restate-server"
    ));
    if !binary.is_file() {
        return Err(format!(
            "{} is absent: run benches/peers/restate/run.sh (npm ci) first",
            binary.display()
        ));
    }
    if !restate_dir()
        .join("node_modules/@restatedev/restate-sdk")
        .is_dir()
    {
        return Err("the Restate SDK is not installed: run benches/peers/restate/run.sh".into());
    }
    Ok(binary)
}

/// `N` distinct free loopback ports: all are held until all are chosen, so no two are the same.
fn free_ports<const N: usize>() -> [u16; N] {
    let listeners: Vec<std::net::TcpListener> = (0..N)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("a free loopback port"))
        .collect();
    std::array::from_fn(|index| {
        listeners[index]
            .local_addr()
            .expect("a bound listener has an address")
            .port()
    })
}

fn wait_for<T>(what: &str, mut attempt: impl FnMut() -> Result<T, String>) -> Result<T, String> {
    let deadline = Instant::now() + Duration::from_millis(RESTATE_START_TIMEOUT_MS);
    loop {
        match attempt() {
            Ok(value) => return Ok(value),
            Err(e) if Instant::now() >= deadline => return Err(format!("{what}: {e}")),
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

fn http_call(addr: SocketAddr, method: &str, path: &str, body: &str) -> Result<String, String> {
    let mut http = Http::connect(addr).map_err(|e| e.to_string())?;
    let (status, answer) = http
        .request(
            method,
            path,
            &[("content-type", "application/json")],
            body.as_bytes(),
        )
        .map_err(|e| e.to_string())?;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    if (200..300).contains(&status) {
        Ok(answer)
    } else {
        Err(format!("{status} {answer}"))
    }
}

impl Restate {
    fn start(binary: &Path) -> Result<Self, String> {
        let node = which("node").ok_or("node is not on PATH")?;
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let loopback = |port: u16| format!("127.0.0.1:{port}");
        let [node_port, admin_port, ingress_port, service_port] = free_ports();
        let server = Process::spawn(
            "restate-server",
            Command::new(binary)
                .arg("--config-file")
                .arg(restate_dir().join("restate.toml"))
                .arg("--base-dir")
                .arg(dir.path().join("data"))
                .args(["--listen-mode", "tcp", "--no-logo"])
                .env("RESTATE_BIND_ADDRESS", loopback(node_port))
                .env(
                    "RESTATE_ADVERTISED_ADDRESS",
                    format!("http://{}/", loopback(node_port)),
                )
                .env("RESTATE_ADMIN__BIND_ADDRESS", loopback(admin_port))
                .env("RESTATE_INGRESS__BIND_ADDRESS", loopback(ingress_port)),
            dir.path().join("server.log"),
        )
        .map_err(|e| format!("restate-server does not start: {e}"))?;
        let service = Process::spawn(
            "steps service",
            Command::new(node)
                .arg("service.js")
                .current_dir(restate_dir())
                .env("SERVICE_PORT", service_port.to_string())
                .env("RESTATE_LOGGING", "WARN"),
            dir.path().join("service.log"),
        )
        .map_err(|e| format!("the steps service does not start: {e}"))?;
        let mut restate = Self {
            ingress: SocketAddr::from(([127, 0, 0, 1], ingress_port)),
            service,
            server,
            _dir: dir,
        };
        let admin = SocketAddr::from(([127, 0, 0, 1], admin_port));
        wait_for("restate-server health", || {
            restate.server.check_running()?;
            http_call(admin, "GET", "/health", "")
        })?;
        let deployment = json!({"uri": format!("http://127.0.0.1:{service_port}")}).to_string();
        wait_for("registering the steps service", || {
            restate.service.check_running()?;
            http_call(admin, "POST", "/deployments", &deployment)
        })?;
        // The ingress learns of a new deployment shortly after the admin API answers.
        wait_for("the first invocation", || {
            restate.server.check_running()?;
            restate.service.check_running()?;
            http_call(restate.ingress, "POST", "/steps/run", INPUT)
        })?;
        Ok(restate)
    }
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|dir| Path::new(dir).join(program))
        .find(|path| path.is_file())
}

impl Workload for Restate {
    type Client = Http;

    fn client(&self, _client_index: usize) -> Http {
        Http::connect(self.ingress).expect("client connects to the ingress")
    }

    fn execute(&self, http: &mut Http, _client_index: usize, _sequence: u64) {
        let (status, answer) = http
            .request(
                "POST",
                "/steps/run",
                &[("content-type", "application/json")],
                INPUT.as_bytes(),
            )
            .expect("the ingress answers");
        assert_eq!(
            status,
            200,
            "steps/run: {}",
            String::from_utf8_lossy(&answer)
        );
        let output: Value = serde_json::from_slice(&answer).expect("JSON answer");
        assert_eq!(output, json!({"n": STEPS_COUNT}), "ten steps ran");
    }

    fn peers(&self) -> Vec<PeerProcess> {
        vec![
            PeerProcess {
                name: "server",
                pid: self.server.pid(),
            },
            PeerProcess {
                name: "service",
                pid: self.service.pid(),
            },
        ]
    }
}

// ---------------------------------------------------------------------------------------------
// The raw fdatasync, and printing

/// p50 of one 4 KiB overwrite + fdatasync in a temp dir: the floor under one durable commit.
fn raw_fdatasync_p50(count: usize) -> Duration {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(dir.path().join("sync"))
        .expect("file");
    let block = [7u8; 4096];
    let mut latencies = Vec::with_capacity(count);
    for _ in 0..count {
        let started = Instant::now();
        std::os::unix::fs::FileExt::write_all_at(&file, &block, 0).expect("write");
        file.sync_data().expect("fdatasync");
        latencies.push(started.elapsed());
    }
    latencies.sort();
    latencies[latencies.len() / 2]
}

fn header() {
    println!(
        "{:<6} {:<8} {:>5} {:>9} {:>8} {:>8} {:>10} {:>10} {:>11} {:>12} {:>10}",
        "round",
        "workload",
        "c",
        "exec/s",
        "p50 ms",
        "p99 ms",
        "cpu ms/ex",
        "peer ms/ex",
        "commits/sync",
        "transitions/s",
        "commits/ex"
    );
}

fn print_row(round_index: usize, kind: WorkloadKind, concurrency: usize, report: &Report) {
    let executions = report.executions_count as f64;
    let per_execution_ms = |cpu: Option<Duration>| match cpu {
        Some(cpu) if report.executions_count > 0 => {
            format!("{:.3}", cpu.as_secs_f64() * 1e3 / executions)
        }
        _ => "-".to_string(),
    };
    let percentile_ms = |q: f64| match report.latencies.len() {
        0 => "-".to_string(),
        len => format!(
            "{:.2}",
            report.latencies[((len as f64 - 1.0) * q).round() as usize].as_secs_f64() * 1e3
        ),
    };
    let peers_cpu: Option<Duration> = if report.cpu_peers.is_empty() {
        None
    } else {
        report.cpu_peers.iter().map(|(_, cpu)| *cpu).sum()
    };
    let commits_per_sync = match (report.commits_count, report.syncs_count) {
        (Some(commits), Some(syncs)) if syncs > 0 => {
            format!("{:.2}", commits as f64 / syncs as f64)
        }
        _ => "-".to_string(),
    };
    let commits_per_execution = match report.commits_count {
        Some(commits) if report.executions_count > 0 => {
            format!("{:.2}", commits as f64 / executions)
        }
        _ => "-".to_string(),
    };
    let transitions_per_s = match report.transitions_count {
        Some(transitions) => format!("{:.0}", transitions as f64 / report.interval.as_secs_f64()),
        None => "-".to_string(),
    };
    let breakdown: Vec<String> = report
        .cpu_peers
        .iter()
        .map(|(name, cpu)| format!("{name} {}", per_execution_ms(*cpu)))
        .collect();
    println!(
        "{:<6} {:<8} {:>5} {:>9.0} {:>8} {:>8} {:>10} {:>10} {:>12} {:>13} {:>10}{}",
        round_index + 1,
        kind.name(),
        concurrency,
        executions / report.interval.as_secs_f64(),
        percentile_ms(0.50),
        percentile_ms(0.99),
        per_execution_ms(report.cpu_self),
        per_execution_ms(peers_cpu),
        commits_per_sync,
        transitions_per_s,
        commits_per_execution,
        if breakdown.is_empty() {
            String::new()
        } else {
            format!("   (peer: {})", breakdown.join(", "))
        }
    );
}

fn run_one(
    settings: &Settings,
    restate: Option<&Restate>,
    kind: WorkloadKind,
    concurrency: usize,
) -> Option<Report> {
    let (warmup, measured) = (settings.warmup, settings.measured);
    Some(match kind {
        WorkloadKind::Restate => closed_loop(restate?, concurrency, warmup, measured),
        WorkloadKind::Task => closed_loop(
            &InProcess::open(&task_chain(HANDLER_ARN)),
            concurrency,
            warmup,
            measured,
        ),
        WorkloadKind::Pass => closed_loop(
            &InProcess::open(&pass_chain()),
            concurrency,
            warmup,
            measured,
        ),
        WorkloadKind::PassAsync => closed_loop_async(
            &InProcess::open(&pass_chain()),
            concurrency,
            warmup,
            measured,
        ),
        WorkloadKind::Serve => {
            let workers_count = settings
                .workers_count
                .unwrap_or(concurrency + SERVE_IDLE_POLLERS_COUNT)
                .min(LONG_POLLS_PER_ACCOUNT_MAX);
            // Every worker and shared client connection is one connection from 127.0.0.1;
            // past the server's cap per peer, a new one would evict another's.
            assert!(
                SERVE_CLIENT_CONNECTIONS_MAX + workers_count <= CONNECTIONS_PER_PEER_MAX,
                "serve: {SERVE_CLIENT_CONNECTIONS_MAX} client connections and {workers_count} \
                 workers pass the server's {CONNECTIONS_PER_PEER_MAX} connections per peer"
            );
            let serve = Serve::start(workers_count, concurrency);
            closed_loop(&serve, concurrency, warmup, measured)
        }
    })
}

fn main() {
    let benching = std::env::args().any(|a| a == "--bench");
    let settings = settings();
    let restate = if !settings.workloads.contains(&WorkloadKind::Restate) {
        None
    } else if !benching {
        println!("restate: skipped (it runs only under `cargo bench`)");
        None
    } else if !settings.restate {
        println!(
            "restate: skipped (set STATELOG_BENCH_RESTATE=1 and install benches/peers/restate, see its README)"
        );
        None
    } else {
        match restate_binary().and_then(|binary| Restate::start(&binary)) {
            Ok(restate) => Some(restate),
            Err(reason) => {
                println!("restate: skipped ({reason})");
                None
            }
        }
    };
    println!(
        "closed loop of {STEPS_COUNT}-step workflows; warm-up {:.1} s, measured {:.1} s per row; \
         serve workers: {}",
        settings.warmup.as_secs_f64(),
        settings.measured.as_secs_f64(),
        match settings.workers_count {
            Some(count) => count.to_string(),
            None => format!(
                "the concurrency + {SERVE_IDLE_POLLERS_COUNT}, at most {LONG_POLLS_PER_ACCOUNT_MAX}"
            ),
        }
    );
    println!(
        "raw 4 KiB fdatasync p50: {:.3} ms",
        raw_fdatasync_p50(if benching { 200 } else { 10 }).as_secs_f64() * 1e3
    );
    header();
    for round_index in 0..settings.rounds_count {
        for &concurrency in &settings.concurrency_levels {
            for &kind in &settings.workloads {
                if let Some(report) = run_one(&settings, restate.as_ref(), kind, concurrency) {
                    print_row(round_index, kind, concurrency, &report);
                }
            }
        }
    }
}
