//! Cluster throughput and takeover (issue 19): a 10-state machine over HTTP on 1, 2 and 3
//! `statelog serve --nats` nodes over R3 JetStream, beside `statelog serve` on the local WAL
//! in the same run, and the takeover time after a node is killed with SIGKILL.
//!
//! Every server is the `statelog` binary in a child process (the binary users run, with its
//! allocator; SIGKILL is a real crash): the nodes join a 3-server nats-server cluster on
//! loopback (`statelog_nats::testing::TestCluster`: JetStream on file storage,
//! `sync_interval: always`, so every acknowledged append was fsynced on 2 of 3 servers) after
//! `statelog cluster init --partitions 8`, each with the production lease (3,000 ms).
//!
//! Cases, in this order: the WAL server; 1 node, then a second and a third node joining (each
//! measured once the 8 partitions are spread: the leases in NATS KV are held by the live
//! nodes, each at most ceil(8 / nodes), and one execution in every partition has succeeded
//! through the first node); the WAL server again (the machine's drift shows between its two
//! rows). Then the takeover, repeated: the third node is stopped (SIGTERM) so two nodes remain;
//! one is killed (SIGKILL) while idle and the clock runs until an execution named into one of
//! its partitions was started and read back SUCCEEDED through the survivor (retried every 10 ms
//! while it answers an error); a new node then joins and is killed in turn.
//!
//! The closed loop: C clients (threads), each with a keep-alive connection to every server;
//! client `i`'s execution `k` goes to node `(i + k) % nodes` (round robin), which answers it or
//! forwards it to the partition's owner. Two workloads (`STATELOG_BENCH_WORKLOADS`, default
//! `pass,task`):
//! - `pass`: 10 Pass states. A client starts an execution (StartExecution) and calls
//!   DescribeExecution through the same node until it is SUCCEEDED (at once, then every 1 ms).
//! - `task`: 10 Task states on an activity of the case's own; C + 16 activity workers (threads,
//!   worker `w` on node `w % nodes`) poll it (GetActivityTask, which on a cluster claims across
//!   every node) and answer each task (SendTaskSuccess). A client starts an execution, waits
//!   for the worker that answered its last step, then reads SUCCEEDED (DescribeExecution).
//!
//! A client starts its next execution as soon as one succeeded. Printed per case:
//! executions/s, transitions/s (10 per execution), p50/p99 start-to-success, DescribeExecution
//! calls per execution, 503 retries, and CPU per execution of the statelog processes and of the
//! three nats-servers (from /proc), over the measured interval after a warm-up.
//!
//! `cargo bench --bench cluster` (features `server` and `cluster`; needs `nats-server` 2.12+ on
//! PATH or `$STATELOG_NATS_SERVER`, else it prints why it skipped). Environment:
//! `STATELOG_BENCH_WORKLOADS`, `STATELOG_BENCH_CONCURRENCY` (default `16,64`),
//! `STATELOG_BENCH_NODES` (default `1,2,3`), `STATELOG_BENCH_SECONDS` (measured, default 10),
//! `STATELOG_BENCH_WARMUP_SECONDS` (default 2), `STATELOG_BENCH_TAKEOVERS` (default 3),
//! `STATELOG_BENCH_SERVE_BINARY` (default the `statelog` Cargo built). Under `cargo test --benches` (no `--bench`) it runs a short smoke version.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use statelog::server::credentials::DEV_ACCOUNT_ID;
use statelog::server::limits::KEEP_ALIVE_IDLE_TIMEOUT_MS;
use statelog_cluster::buckets::{decode, LEASES_BUCKET};
use statelog_cluster::lease::{lease_key, LeaseValue};
use statelog_cluster::partition::{partition_of_execution, PartitionIndex};
use statelog_nats::testing::TestCluster;

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

// Shared with the other HTTP benches; this one connects only through `try_connect`.
#[allow(dead_code)]
#[path = "support/http_client.rs"]
mod http_client;
use http_client::{HttpClient, Identity};

/// The cluster's partitions.
const PARTITIONS: u32 = 8;

/// States of the machine (Pass states), so transitions per execution.
const STEPS_COUNT: usize = 10;

/// The machine's name (part of the partition key of its executions).
const MACHINE_NAME: &str = "steps";

/// Between two DescribeExecution calls of a running execution.
const DESCRIBE_POLL_MS: u64 = 1;

/// Before a call answered 503 (the partition is moving) or, in the takeover, any error, is
/// sent again.
const RETRY_MS: u64 = 10;

/// How long a server may take to print its address, and the partitions to spread.
const READY_TIMEOUT_MS: u64 = 60_000;

/// How long one execution may take from its start to its success before the bench fails.
const EXECUTION_TIMEOUT_MS: u64 = 60_000;

/// How long one HTTP answer may take (a forward to a dead node gives up well before).
const HTTP_READ_TIMEOUT_MS: u64 = 90_000;

/// Development mode accepts any well-formed signature.
const IDENTITY: Identity = Identity {
    access_key_id: "AKIDBENCH",
    secret_access_key: "bench-secret",
    service: "states",
};

// ---------------------------------------------------------------------------------------------
// Settings

struct Settings {
    workloads: Vec<Kind>,
    concurrency_levels: Vec<usize>,
    nodes_counts: Vec<usize>,
    warmup: Duration,
    measured: Duration,
    takeovers_count: usize,
}

/// The machine the clients run: 10 Pass states, or 10 Task states on an activity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Pass,
    Task,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Pass => "pass",
            Kind::Task => "task",
        }
    }
}

fn env_counts(name: &str, default: &str) -> Vec<usize> {
    let text = std::env::var(name).unwrap_or_else(|_| default.to_string());
    text.split(',')
        .map(|item| match item.trim().parse::<usize>() {
            Ok(count) if count > 0 => count,
            _ => panic!("{name}: {item:?} is not a positive count"),
        })
        .collect()
}

fn settings() -> Settings {
    // `cargo test --benches` runs bench binaries without `--bench`: a short smoke run then.
    let benching = std::env::args().any(|a| a == "--bench");
    let seconds = |name: &str, bench_default: f64, test_default: f64| {
        let value: f64 = env_parse(name).unwrap_or(if benching {
            bench_default
        } else {
            test_default
        });
        assert!(value >= 0.0, "{name} is not negative");
        Duration::from_secs_f64(value)
    };
    let workloads = std::env::var("STATELOG_BENCH_WORKLOADS")
        .unwrap_or_else(|_| "pass,task".to_string())
        .split(',')
        .map(|name| match name.trim() {
            "pass" => Kind::Pass,
            "task" => Kind::Task,
            other => panic!("STATELOG_BENCH_WORKLOADS: {other:?} is neither pass nor task"),
        })
        .collect();
    let settings = Settings {
        workloads,
        concurrency_levels: env_counts(
            "STATELOG_BENCH_CONCURRENCY",
            if benching { "16,64" } else { "2" },
        ),
        nodes_counts: env_counts(
            "STATELOG_BENCH_NODES",
            if benching { "1,2,3" } else { "1,2" },
        ),
        warmup: seconds("STATELOG_BENCH_WARMUP_SECONDS", 2.0, 0.2),
        measured: seconds("STATELOG_BENCH_SECONDS", 10.0, 0.5),
        takeovers_count: env_parse("STATELOG_BENCH_TAKEOVERS").unwrap_or(if benching {
            3
        } else {
            1
        }),
    };
    assert!(
        !settings.measured.is_zero(),
        "the measured interval is empty"
    );
    assert!(
        settings.nodes_counts.windows(2).all(|w| w[0] < w[1]),
        "STATELOG_BENCH_NODES grows (nodes join, none leaves between cases)"
    );
    settings
}

// ---------------------------------------------------------------------------------------------
// Child processes

/// The `statelog` binary: `STATELOG_BENCH_SERVE_BINARY`, or the one Cargo built.
fn statelog_binary() -> PathBuf {
    std::env::var_os("STATELOG_BENCH_SERVE_BINARY")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_statelog")))
}

/// One `statelog serve` child, stopped with SIGTERM (then SIGKILL) when dropped.
struct Server {
    name: String,
    addr: SocketAddr,
    process: ChildProcess,
}

impl Server {
    /// Runs `statelog serve` with `args` besides `--listen 127.0.0.1:0`, its stderr into
    /// `dir/<name>.log`; returns once it printed the address it serves on.
    fn start(name: &str, args: &[String], dir: &Path) -> Result<Self, String> {
        let log = dir.join(format!("{name}.log"));
        let err = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let mut command = Command::new(statelog_binary());
        command
            .arg("serve")
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            // The same log level for every server: warnings only, so logging costs none.
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(err);
        let mut process = ChildProcess::spawn(name, &mut command, log)
            .map_err(|e| format!("{name}: cannot spawn {}: {e}", statelog_binary().display()))?;
        let stdout = process.child_mut().stdout.take().expect("stdout is piped");
        let (sender, receiver) = mpsc::channel();
        // Reads stdout to its end, so the child never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sender = Some(sender);
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(addr) = line.strip_prefix("listening on http://") {
                    if let Some(sender) = sender.take() {
                        let _ = sender.send(addr.trim().to_string());
                    }
                }
            }
        });
        let addr = match receiver.recv_timeout(Duration::from_millis(READY_TIMEOUT_MS)) {
            Ok(addr) => addr,
            Err(_) => {
                return Err(format!(
                    "{name} printed no address:\n{}",
                    process.log_tail()
                ))
            }
        };
        let addr = addr
            .parse()
            .map_err(|e| format!("{name} printed {addr:?}: {e}"))?;
        Ok(Self {
            name: name.to_string(),
            addr,
            process,
        })
    }

    fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// SIGKILL, and reaps it.
    fn kill(self) {
        self.process.kill();
    }

    /// Fails with its log when it exited.
    fn check_running(&mut self) -> Result<(), String> {
        self.process.check_running()
    }
}

/// `statelog cluster init --nats URLS --partitions N`.
fn cluster_init(urls: &[String], partitions: u32) -> Result<(), String> {
    let output = Command::new(statelog_binary())
        .args(["cluster", "init", "--nats", &urls.join(",")])
        .args(["--partitions", &partitions.to_string()])
        .output()
        .map_err(|e| format!("cluster init: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cluster init: {}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(())
}

/// User + system CPU of process `pid` so far (`/proc/<pid>/stat`); `None` where it is gone.
fn cpu_of_process(pid: u32) -> Option<Duration> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count from after it.
    let fields: Vec<&str> = text[text.rfind(')')? + 1..].split_whitespace().collect();
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

fn cpu_of(pids: &[u32]) -> Option<Duration> {
    pids.iter().map(|&pid| cpu_of_process(pid)).sum()
}

// ---------------------------------------------------------------------------------------------
// Calls

/// A keep-alive connection to one server, opened again after the server closed it, and before
/// the server's idle timeout could close it under a request.
struct Connection {
    addr: SocketAddr,
    http: Option<HttpClient>,
    /// When the last answer was read.
    used_at: Instant,
}

/// Why a call got no 200.
#[derive(Debug)]
enum CallError {
    /// The server answered this status and body.
    Status { status: u16, body: String },
    /// No answer: the connection failed or closed.
    Gone,
}

impl CallError {
    fn is_unavailable(&self) -> bool {
        matches!(self, CallError::Status { status: 503, .. })
    }

    fn is_already_exists(&self) -> bool {
        matches!(self, CallError::Status { body, .. } if body.contains("ExecutionAlreadyExists"))
    }
}

impl Connection {
    fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            http: None,
            used_at: Instant::now(),
        }
    }

    fn call(&mut self, operation: &str, body: &Value) -> Result<Value, CallError> {
        if self.used_at.elapsed() >= Duration::from_millis(KEEP_ALIVE_IDLE_TIMEOUT_MS / 2) {
            self.http = None;
        }
        let http = match &mut self.http {
            Some(http) => http,
            None => self.http.insert(
                HttpClient::try_connect(
                    self.addr,
                    IDENTITY,
                    Some(Duration::from_millis(HTTP_READ_TIMEOUT_MS)),
                )
                .ok_or(CallError::Gone)?,
            ),
        };
        let request = http.prepare(
            &format!("AWSStepFunctions.{operation}"),
            body.to_string().as_bytes(),
        );
        let Some((status, answer)) = http.send(&request) else {
            self.http = None;
            return Err(CallError::Gone);
        };
        self.used_at = Instant::now();
        if status != 200 {
            return Err(CallError::Status {
                status,
                body: String::from_utf8_lossy(&answer).into_owned(),
            });
        }
        serde_json::from_slice(&answer).map_err(|e| CallError::Status {
            status,
            body: format!("not JSON: {e}"),
        })
    }
}

/// What one execution cost besides its latency.
#[derive(Debug, Default, Clone, Copy)]
struct Effort {
    describes_count: u64,
    retries_count: u64,
}

/// Starts `name` and reads it back until SUCCEEDED, through `connection`. A 503 (a partition
/// moving) is retried; so is any error when `retry_any` (the takeover, where the survivor may
/// still forward to the dead node). Anything else, or a close other than SUCCEEDED, fails.
fn run_execution(
    connection: &mut Connection,
    machine_arn: &str,
    name: &str,
    retry_any: bool,
    effort: &mut Effort,
) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_millis(EXECUTION_TIMEOUT_MS);
    let execution_arn = start_execution(
        connection,
        machine_arn,
        name,
        r#"{"n": 0}"#,
        retry_any,
        deadline,
        effort,
    )?;
    await_success(connection, &execution_arn, retry_any, deadline, effort)
}

/// StartExecution of `name` with `input`; its ARN. Retries as [`run_execution`] says.
fn start_execution(
    connection: &mut Connection,
    machine_arn: &str,
    name: &str,
    input: &str,
    retry_any: bool,
    deadline: Instant,
    effort: &mut Effort,
) -> Result<String, String> {
    let start = json!({"stateMachineArn": machine_arn, "name": name, "input": input});
    let mut attempts_count = 0u32;
    loop {
        attempts_count += 1;
        match connection.call("StartExecution", &start) {
            Ok(started) => match started["executionArn"].as_str() {
                Some(arn) => return Ok(arn.to_string()),
                None => return Err(format!("StartExecution {name}: no executionArn: {started}")),
            },
            // An earlier attempt whose answer was lost may have started it.
            Err(error) if attempts_count > 1 && error.is_already_exists() => {
                return Ok(format!(
                    "{}:{name}",
                    machine_arn.replacen(":stateMachine:", ":execution:", 1)
                ));
            }
            Err(error) if (retry_any || error.is_unavailable()) && Instant::now() < deadline => {
                effort.retries_count += 1;
                std::thread::sleep(Duration::from_millis(RETRY_MS));
            }
            Err(error) => return Err(format!("StartExecution {name}: {error:?}")),
        }
    }
}

/// DescribeExecution of `execution_arn` until SUCCEEDED (at once, then every
/// [`DESCRIBE_POLL_MS`]). Retries as [`run_execution`] says.
fn await_success(
    connection: &mut Connection,
    execution_arn: &str,
    retry_any: bool,
    deadline: Instant,
    effort: &mut Effort,
) -> Result<(), String> {
    let describe = json!({"executionArn": execution_arn});
    loop {
        effort.describes_count += 1;
        match connection.call("DescribeExecution", &describe) {
            Ok(described) => match described["status"].as_str() {
                Some("SUCCEEDED") => return Ok(()),
                Some("RUNNING") if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(DESCRIBE_POLL_MS));
                }
                _ => return Err(format!("{execution_arn}: {described}")),
            },
            Err(error) if (retry_any || error.is_unavailable()) && Instant::now() < deadline => {
                effort.retries_count += 1;
                std::thread::sleep(Duration::from_millis(RETRY_MS));
            }
            Err(error) => return Err(format!("DescribeExecution {execution_arn}: {error:?}")),
        }
    }
}

/// The 10 Pass states, or 10 Task states on `activity_arn`.
fn definition(activity_arn: Option<&str>) -> String {
    let states: serde_json::Map<String, Value> = (0..STEPS_COUNT)
        .map(|index| {
            let mut state = match activity_arn {
                None => json!({"Type": "Pass"}),
                Some(arn) => json!({"Type": "Task", "Resource": arn}),
            };
            if index + 1 == STEPS_COUNT {
                state["End"] = json!(true);
            } else {
                state["Next"] = json!(format!("S{}", index + 1));
            }
            (format!("S{index}"), state)
        })
        .collect();
    json!({"StartAt": "S0", "States": states}).to_string()
}

/// `operation` through `addr`, retried while it answers 503; panics on anything else.
fn call_available(connection: &mut Connection, operation: &str, body: &Value) -> Value {
    let deadline = Instant::now() + Duration::from_millis(READY_TIMEOUT_MS);
    loop {
        match connection.call(operation, body) {
            Ok(answer) => return answer,
            Err(error) if error.is_unavailable() && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(RETRY_MS));
            }
            Err(error) => panic!("{operation}: {error:?}"),
        }
    }
}

/// Creates state machine `name` with `definition` through `addr`; its ARN.
fn create_machine(addr: SocketAddr, name: &str, definition: &str) -> String {
    let body = json!({
        "name": name,
        "definition": definition,
        "roleArn": format!("arn:aws:iam::{DEV_ACCOUNT_ID}:role/bench"),
    });
    let created = call_available(&mut Connection::new(addr), "CreateStateMachine", &body);
    created["stateMachineArn"]
        .as_str()
        .expect("stateMachineArn")
        .to_string()
}

/// An execution name, with `prefix`, whose execution of machine `machine_name` lives in
/// `partition`.
fn name_in_partition(machine_name: &str, prefix: &str, partition: PartitionIndex) -> String {
    (0u64..)
        .map(|index| format!("{prefix}-{index}"))
        .find(|name| {
            partition_of_execution(DEV_ACCOUNT_ID, machine_name, name, PARTITIONS)
                .expect("a valid partition count")
                == partition
        })
        .expect("some name hashes into every partition")
}

// ---------------------------------------------------------------------------------------------
// Leases

/// Reads the partitions' lease holders from NATS KV.
struct Leases {
    runtime: tokio::runtime::Runtime,
    store: async_nats::jetstream::kv::Store,
}

impl Leases {
    fn open(urls: &[String]) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("the lease reader's runtime");
        let store = runtime.block_on(async {
            let client = statelog_cluster::buckets::connect(urls)
                .await
                .expect("connects to NATS");
            async_nats::jetstream::new(client)
                .get_key_value(LEASES_BUCKET)
                .await
                .expect("the lease bucket exists (the first node made it)")
        });
        Self { runtime, store }
    }

    /// The holder of every held partition.
    fn holders(&self) -> BTreeMap<PartitionIndex, String> {
        self.runtime.block_on(holders(&self.store))
    }
}

async fn holders(store: &async_nats::jetstream::kv::Store) -> BTreeMap<PartitionIndex, String> {
    let mut holders = BTreeMap::new();
    for index in 0..PARTITIONS {
        let partition = PartitionIndex(index);
        let key = lease_key(partition);
        let Ok(Some(bytes)) = store.get(&key).await else {
            continue;
        };
        let value: LeaseValue = decode(LEASES_BUCKET, &key, &bytes).expect("a lease entry");
        if let Some(node) = value.node {
            holders.insert(partition, node);
        }
    }
    holders
}

/// Waits until `nodes` hold every partition between them, each some and at most its share,
/// then runs one execution in every partition through the first node (so every partition's
/// engine is open and has imported the machine).
fn wait_spread(leases: &Leases, nodes: &mut [Server], machine_arn: &str, round: &str) {
    let share = PARTITIONS.div_ceil(nodes.len() as u32) as usize;
    let deadline = Instant::now() + Duration::from_millis(READY_TIMEOUT_MS);
    loop {
        for node in nodes.iter_mut() {
            node.check_running().unwrap_or_else(|e| panic!("{e}"));
        }
        let holders = leases.holders();
        let counts: Vec<usize> = nodes
            .iter()
            .map(|node| holders.values().filter(|held| **held == node.name).count())
            .collect();
        let spread = counts.iter().sum::<usize>() == PARTITIONS as usize
            && counts.iter().all(|&count| count >= 1 && count <= share);
        if spread {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the partitions did not spread over {} nodes: {holders:?}",
            nodes.len()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut connection = Connection::new(nodes[0].addr);
    for index in 0..PARTITIONS {
        let name = name_in_partition(
            MACHINE_NAME,
            &format!("probe-{round}"),
            PartitionIndex(index),
        );
        run_execution(
            &mut connection,
            machine_arn,
            &name,
            false,
            &mut Effort::default(),
        )
        .unwrap_or_else(|e| panic!("probe of partition {index}: {e}"));
    }
}

// ---------------------------------------------------------------------------------------------
// The closed loop

struct Report {
    latencies: Vec<Duration>,
    interval: Duration,
    effort: Effort,
    cpu_statelog: Option<Duration>,
    cpu_nats: Option<Duration>,
}

/// Runs `concurrency` clients, each with a connection to every one of `addrs`, for the warm-up
/// and the measured interval (each calls `execute(connections, client_index, sequence, effort)`
/// again as soon as it returned), then stops them (each finishes the execution it is in). Counts the executions
/// that succeeded inside the interval (one started in the warm-up counts, so the warm-up must
/// outlast one latency).
fn closed_loop<F>(
    addrs: &[SocketAddr],
    execute: F,
    concurrency: usize,
    settings: &Settings,
    statelog_pids: &[u32],
    nats_pids: &[u32],
) -> Report
where
    F: Fn(&mut [Connection], usize, usize, &mut Effort) + Sync,
{
    assert!(concurrency > 0 && !addrs.is_empty());
    let stop = AtomicBool::new(false);
    let describes = AtomicU64::new(0);
    let retries = AtomicU64::new(0);
    let sample = || {
        (
            Instant::now(),
            cpu_of(statelog_pids),
            cpu_of(nats_pids),
            describes.load(Ordering::Relaxed),
            retries.load(Ordering::Relaxed),
        )
    };
    let (first, last, spans) = std::thread::scope(|scope| {
        let clients: Vec<_> = (0..concurrency)
            .map(|client_index| {
                let (stop, describes, retries, execute) = (&stop, &describes, &retries, &execute);
                std::thread::Builder::new()
                    .name(format!("client-{client_index}"))
                    .spawn_scoped(scope, move || {
                        let mut connections: Vec<Connection> =
                            addrs.iter().map(|&addr| Connection::new(addr)).collect();
                        let mut spans = Vec::new();
                        let mut sequence = 0usize;
                        while !stop.load(Ordering::Relaxed) {
                            let mut effort = Effort::default();
                            let started = Instant::now();
                            execute(&mut connections, client_index, sequence, &mut effort);
                            let succeeded = Instant::now();
                            describes.fetch_add(effort.describes_count, Ordering::Relaxed);
                            retries.fetch_add(effort.retries_count, Ordering::Relaxed);
                            spans.push((started, succeeded));
                            sequence += 1;
                        }
                        spans
                    })
                    .expect("client thread starts")
            })
            .collect();
        std::thread::sleep(settings.warmup);
        let first = sample();
        std::thread::sleep(settings.measured);
        let last = sample();
        stop.store(true, Ordering::Relaxed);
        let spans: Vec<(Instant, Instant)> = clients
            .into_iter()
            .flat_map(|client| client.join().expect("client thread"))
            .collect();
        (first, last, spans)
    });
    let mut latencies: Vec<Duration> = spans
        .iter()
        .filter(|(_, succeeded)| *succeeded >= first.0 && *succeeded <= last.0)
        .map(|(started, succeeded)| *succeeded - *started)
        .collect();
    latencies.sort();
    let delta = |a: Option<Duration>, b: Option<Duration>| Some(b? - a?);
    Report {
        latencies,
        interval: last.0 - first.0,
        effort: Effort {
            describes_count: last.3 - first.3,
            retries_count: last.4 - first.4,
        },
        cpu_statelog: delta(first.1, last.1),
        cpu_nats: delta(first.2, last.2),
    }
}

fn header() {
    println!(
        "{:<5} {:<8} {:>5} {:>4} {:>9} {:>13} {:>8} {:>8} {:>11} {:>8} {:>14} {:>11}",
        "work",
        "backend",
        "nodes",
        "c",
        "exec/s",
        "transitions/s",
        "p50 ms",
        "p99 ms",
        "describe/ex",
        "503s",
        "statelog ms/ex",
        "nats ms/ex"
    );
}

fn print_row(workload: &str, backend: &str, nodes: usize, concurrency: usize, report: &Report) {
    let executions = report.latencies.len() as f64;
    let per_s = executions / report.interval.as_secs_f64();
    let percentile_ms = |q: f64| match report.latencies.len() {
        0 => "-".to_string(),
        len => format!(
            "{:.2}",
            report.latencies[((len as f64 - 1.0) * q).round() as usize].as_secs_f64() * 1e3
        ),
    };
    let per_execution_ms = |cpu: Option<Duration>| match cpu {
        Some(cpu) if executions > 0.0 => format!("{:.3}", cpu.as_secs_f64() * 1e3 / executions),
        _ => "-".to_string(),
    };
    println!(
        "{:<5} {:<8} {:>5} {:>4} {:>9.0} {:>13.0} {:>8} {:>8} {:>11.2} {:>8} {:>14} {:>11}",
        workload,
        backend,
        nodes,
        concurrency,
        per_s,
        per_s * STEPS_COUNT as f64,
        percentile_ms(0.50),
        percentile_ms(0.99),
        report.effort.describes_count as f64 / executions.max(1.0),
        report.effort.retries_count,
        per_execution_ms(report.cpu_statelog),
        per_execution_ms(report.cpu_nats),
    );
}

// ---------------------------------------------------------------------------------------------
// The cases

// ---------------------------------------------------------------------------------------------
// Activity workers (the Task workload)

/// Activity workers beyond the concurrency: polls already waiting when a task is queued.
const IDLE_WORKERS_COUNT: usize = 16;

/// Polls `activity_arn` through `addr` and answers each task with its input's `n` one higher,
/// until a task whose input says `stop`; tells `done` when it answered an execution's last
/// step.
fn activity_worker(addr: SocketAddr, activity_arn: &str, worker_index: usize, done: &Completions) {
    let mut connection = Connection::new(addr);
    let poll = json!({"activityArn": activity_arn, "workerName": format!("w{worker_index}")});
    loop {
        let task = call_available(&mut connection, "GetActivityTask", &poll);
        let Some(token) = task["taskToken"].as_str().filter(|t| !t.is_empty()) else {
            continue; // the long poll ended without a task
        };
        let input: Value = serde_json::from_str(task["input"].as_str().expect("task input"))
            .expect("the input is JSON");
        let mut output = input.clone();
        let n = input["n"].as_u64().expect("a step's input has n") + 1;
        output["n"] = json!(n);
        let answer = json!({"taskToken": token, "output": output.to_string()});
        call_available(&mut connection, "SendTaskSuccess", &answer);
        if input["stop"] == json!(true) {
            return;
        }
        if let (true, Some(client_index)) = (n == STEPS_COUNT as u64, input["client"].as_u64()) {
            done.succeeded(usize::try_from(client_index).expect("a client index"));
        }
    }
}

/// Runs one workload at one concurrency over `addrs` (a machine and, for Task, an activity of
/// its own, made through the first node) and prints its row.
#[allow(clippy::too_many_arguments)]
fn run_case(
    kind: Kind,
    backend: &str,
    addrs: &[SocketAddr],
    pass_machine_arn: &str,
    case: &str,
    concurrency: usize,
    settings: &Settings,
    statelog_pids: &[u32],
    nats_pids: &[u32],
) {
    let execution_name = |client_index: usize, sequence: usize| {
        format!(
            "{case}-{}-c{concurrency}-{client_index}-{sequence}",
            kind.name()
        )
    };
    let report = match kind {
        Kind::Pass => closed_loop(
            addrs,
            |connections: &mut [Connection], client_index, sequence, effort: &mut Effort| {
                let node_index = (client_index + sequence) % connections.len();
                run_execution(
                    &mut connections[node_index],
                    pass_machine_arn,
                    &execution_name(client_index, sequence),
                    false,
                    effort,
                )
                .unwrap_or_else(|e| panic!("{case}: {e}"));
            },
            concurrency,
            settings,
            statelog_pids,
            nats_pids,
        ),
        Kind::Task => {
            let label = format!("{case}-c{concurrency}");
            let mut connection = Connection::new(addrs[0]);
            let activity = call_available(
                &mut connection,
                "CreateActivity",
                &json!({"name": format!("step-{label}")}),
            );
            let activity_arn = activity["activityArn"]
                .as_str()
                .expect("activityArn")
                .to_string();
            let machine_name = format!("tasks-{label}");
            let machine_arn =
                create_machine(addrs[0], &machine_name, &definition(Some(&activity_arn)));
            let done = std::sync::Arc::new(Completions::new(concurrency));
            let workers_count = concurrency + IDLE_WORKERS_COUNT;
            let workers: Vec<_> = (0..workers_count)
                .map(|worker_index| {
                    let (addr, activity_arn, done) = (
                        addrs[worker_index % addrs.len()],
                        activity_arn.clone(),
                        done.clone(),
                    );
                    std::thread::Builder::new()
                        .name(format!("worker-{worker_index}"))
                        .spawn(move || activity_worker(addr, &activity_arn, worker_index, &done))
                        .expect("worker thread starts")
                })
                .collect();
            // One execution in every partition first, one at a time: a partition's first
            // start of a machine copies it from the catalog, and concurrent first starts there
            // were seen to fail with StateMachineAlreadyExists (the copy is made by a
            // describe, then a create).
            for index in 0..PARTITIONS {
                let name = name_in_partition(&machine_name, "probe", PartitionIndex(index));
                run_execution(
                    &mut connection,
                    &machine_arn,
                    &name,
                    false,
                    &mut Effort::default(),
                )
                .unwrap_or_else(|e| panic!("{case}: probe of partition {index}: {e}"));
            }
            let report = closed_loop(
                addrs,
                |connections: &mut [Connection], client_index, sequence, effort: &mut Effort| {
                    let node_index = (client_index + sequence) % connections.len();
                    let connection = &mut connections[node_index];
                    let deadline = Instant::now() + Duration::from_millis(EXECUTION_TIMEOUT_MS);
                    let input = json!({"n": 0, "client": client_index}).to_string();
                    let arn = start_execution(
                        connection,
                        &machine_arn,
                        &execution_name(client_index, sequence),
                        &input,
                        false,
                        deadline,
                        effort,
                    )
                    .unwrap_or_else(|e| panic!("{case}: {e}"));
                    assert!(
                        done.wait(client_index, sequence as u64 + 1, deadline),
                        "{case}: {arn} did not succeed within {EXECUTION_TIMEOUT_MS} ms"
                    );
                    await_success(connection, &arn, false, deadline, effort)
                        .unwrap_or_else(|e| panic!("{case}: {e}"));
                },
                concurrency,
                settings,
                statelog_pids,
                nats_pids,
            );
            // Each worker leaves after answering a `stop` task: one such execution per worker.
            for worker_index in 0..workers_count {
                let input = r#"{"n": 0, "stop": true}"#;
                let deadline = Instant::now() + Duration::from_millis(EXECUTION_TIMEOUT_MS);
                start_execution(
                    &mut connection,
                    &machine_arn,
                    &format!("stop-{worker_index}"),
                    input,
                    false,
                    deadline,
                    &mut Effort::default(),
                )
                .unwrap_or_else(|e| panic!("{case}: stopping the workers: {e}"));
            }
            for worker in workers {
                worker.join().expect("an activity worker panicked");
            }
            report
        }
    };
    print_row(kind.name(), backend, addrs.len(), concurrency, &report);
}

fn wal_case(settings: &Settings, dir: &Path, round: &str, nats_pids: &[u32]) {
    let data_dir = dir.join(format!("wal-{round}"));
    let server = Server::start(
        &format!("wal-{round}"),
        &["--data-dir".into(), data_dir.display().to_string()],
        dir,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let machine_arn = create_machine(server.addr, MACHINE_NAME, &definition(None));
    for &concurrency in &settings.concurrency_levels {
        for &kind in &settings.workloads {
            run_case(
                kind,
                "wal",
                &[server.addr],
                &machine_arn,
                &format!("wal{round}"),
                concurrency,
                settings,
                &[server.pid()],
                nats_pids,
            );
        }
    }
}

fn start_node(urls: &[String], name: &str, dir: &Path) -> Server {
    let args = vec![
        "--nats".into(),
        urls.join(","),
        "--node".into(),
        name.into(),
        "--data-dir".into(),
        dir.join(name).display().to_string(),
    ];
    Server::start(name, &args, dir).unwrap_or_else(|e| panic!("{e}"))
}

/// What one takeover took, each from the SIGKILL.
struct Takeover {
    /// Until the survivor's lease on the partition was seen in KV.
    lease_after: Option<Duration>,
    /// Until the survivor answered StartExecution.
    started_after: Duration,
    /// Until DescribeExecution through the survivor answered SUCCEEDED.
    succeeded_after: Duration,
    /// The errors StartExecution answered before (kind -> count).
    errors: BTreeMap<String, u64>,
    /// The longest single StartExecution call.
    longest_call: Duration,
}

/// An error's kind: the status and the AWS error name, or that no answer came.
fn error_kind(error: &CallError) -> String {
    match error {
        CallError::Gone => "no answer".to_string(),
        CallError::Status { status, body } => {
            let name = serde_json::from_str::<Value>(body)
                .ok()
                .and_then(|v| v["__type"].as_str().map(str::to_string))
                .unwrap_or_default();
            format!("{status} {name}")
        }
    }
}

/// Kills `victim` (SIGKILL) with `survivor` beside it, and starts an execution in one of the
/// victim's partitions through the survivor, every [`RETRY_MS`] until it is answered, then
/// reads it until SUCCEEDED.
fn takeover(
    leases: &Leases,
    survivor: &Server,
    victim: Server,
    machine_arn: &str,
    round: usize,
) -> Takeover {
    let holders = leases.holders();
    let partition = *holders
        .iter()
        .find(|(_, holder)| **holder == victim.name)
        .expect("the victim holds a partition")
        .0;
    let name = name_in_partition(MACHINE_NAME, &format!("takeover-{round}"), partition);
    let victim_name = victim.name.clone();
    let store = leases.store.clone();
    let killed = Instant::now();
    victim.kill();
    // The lease's move, watched beside the calls.
    let lease_moved = leases.runtime.spawn(async move {
        loop {
            let holder = holders_of(&store, partition).await;
            if holder.is_some_and(|holder| holder != victim_name) {
                return Instant::now();
            }
            tokio::time::sleep(Duration::from_millis(RETRY_MS)).await;
        }
    });
    let mut connection = Connection::new(survivor.addr);
    let deadline = killed + Duration::from_millis(EXECUTION_TIMEOUT_MS);
    let start = json!({"stateMachineArn": machine_arn, "name": name, "input": r#"{"n": 0}"#});
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    let mut longest_call = Duration::ZERO;
    let execution_arn = loop {
        let sent = Instant::now();
        let answer = connection.call("StartExecution", &start);
        longest_call = longest_call.max(sent.elapsed());
        match answer {
            Ok(started) => {
                break started["executionArn"]
                    .as_str()
                    .expect("executionArn")
                    .to_string()
            }
            // An earlier attempt whose answer was lost may have started it.
            Err(error) if !errors.is_empty() && error.is_already_exists() => {
                break format!(
                    "{}:{name}",
                    machine_arn.replacen(":stateMachine:", ":execution:", 1)
                );
            }
            Err(error) if Instant::now() < deadline => {
                *errors.entry(error_kind(&error)).or_default() += 1;
                std::thread::sleep(Duration::from_millis(RETRY_MS));
            }
            Err(error) => panic!("takeover {round}: StartExecution {name}: {error:?}"),
        }
    };
    let started = Instant::now();
    await_success(
        &mut connection,
        &execution_arn,
        true,
        deadline,
        &mut Effort::default(),
    )
    .unwrap_or_else(|e| panic!("takeover {round}: {e}"));
    let succeeded = Instant::now();
    let lease_at = leases.runtime.block_on(async {
        tokio::time::timeout(Duration::from_millis(READY_TIMEOUT_MS), lease_moved)
            .await
            .ok()
            .and_then(Result::ok)
    });
    Takeover {
        lease_after: lease_at.map(|at| at - killed),
        started_after: started - killed,
        succeeded_after: succeeded - killed,
        errors,
        longest_call,
    }
}

async fn holders_of(
    store: &async_nats::jetstream::kv::Store,
    partition: PartitionIndex,
) -> Option<String> {
    holders(store).await.remove(&partition)
}

fn main() {
    let settings = settings();
    let Some(cluster) = TestCluster::start_or_skip(3) else {
        println!("cluster bench skipped: no usable nats-server");
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let nats_pids = cluster.pids();
    let urls = cluster.urls();
    println!(
        "closed loop of {STEPS_COUNT}-state executions (pass: StartExecution, then \
         DescribeExecution until SUCCEEDED; task: the same on 10 Task states answered by \
         activity workers); warm-up {:.1} s, measured {:.1} s per row; \
         {PARTITIONS} partitions, R3 JetStream on 3 local nats-servers (sync_interval: always); \
         statelog servers are child processes of {}",
        settings.warmup.as_secs_f64(),
        settings.measured.as_secs_f64(),
        statelog_binary().display(),
    );
    header();
    wal_case(&settings, dir.path(), "1", &nats_pids);

    cluster_init(&urls, PARTITIONS).unwrap_or_else(|e| panic!("{e}"));
    let mut nodes: Vec<Server> = vec![start_node(&urls, "n1", dir.path())];
    let leases = Leases::open(&urls);
    let machine_arn = create_machine(nodes[0].addr, MACHINE_NAME, &definition(None));
    let nodes_max = *settings.nodes_counts.last().expect("a node count");
    for count in 1..=nodes_max.max(2) {
        if nodes.len() < count {
            nodes.push(start_node(&urls, &format!("n{count}"), dir.path()));
        }
        if !settings.nodes_counts.contains(&count) {
            continue;
        }
        wait_spread(&leases, &mut nodes, &machine_arn, &format!("n{count}"));
        let addrs: Vec<SocketAddr> = nodes.iter().map(|node| node.addr).collect();
        let pids: Vec<u32> = nodes.iter().map(Server::pid).collect();
        for &concurrency in &settings.concurrency_levels {
            for &kind in &settings.workloads {
                run_case(
                    kind,
                    "cluster",
                    &addrs,
                    &machine_arn,
                    &format!("n{count}"),
                    concurrency,
                    &settings,
                    &pids,
                    &nats_pids,
                );
            }
        }
    }
    wal_case(&settings, dir.path(), "2", &nats_pids);

    // Takeovers with two nodes: the first node survives each.
    nodes.truncate(2);
    for round in 0..settings.takeovers_count {
        if nodes.len() < 2 {
            nodes.push(start_node(&urls, &format!("t{round}"), dir.path()));
        }
        wait_spread(&leases, &mut nodes, &machine_arn, &format!("t{round}"));
        let victim = nodes.pop().expect("two nodes");
        let victim_name = victim.name.clone();
        let taken = takeover(&leases, &nodes[0], victim, &machine_arn, round);
        let ms = |d: Duration| format!("{:.0}", d.as_secs_f64() * 1e3);
        println!(
            "takeover {}: SIGKILL of {victim_name}; survivor's lease seen at {} ms, \
             StartExecution answered at {} ms, SUCCEEDED read at {} ms; errors before: {:?}; \
             longest StartExecution call {} ms",
            round + 1,
            taken.lease_after.map_or("-".to_string(), ms),
            ms(taken.started_after),
            ms(taken.succeeded_after),
            taken.errors,
            ms(taken.longest_call),
        );
    }
}
