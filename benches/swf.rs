//! Amazon SWF benchmarks (criterion), in process and over HTTP, every commit synced
//! (`Durability::PerCommit`), next to one raw fdatasync measured in the same run:
//!
//! - `decision_round_trip`: a decision task is scheduled (the start is durable) -> a decider's
//!   poll claims it (`DecisionTaskStarted` durable, token handed out) -> it answers
//!   `CompleteWorkflowExecution` -> the close is durable. Two synced commits.
//! - `activity_round_trip`: an activity task is scheduled -> a worker's poll claims it
//!   (`ActivityTaskStarted` durable) -> it answers `RespondActivityTaskCompleted` -> the
//!   completion (and the decision task it schedules) is durable. Two synced commits.
//! - `raw_fdatasync`: one 4 KiB overwrite of a preallocated block + fdatasync.
//! - `workflows_per_second` (printed, not a criterion group): 3-activity workflows run by 16
//!   decider threads and 16 worker threads, group commit (`Durability::GroupCommit`): started
//!   all at once, timed from the first start to the last close.
//! - `http_*`: the same two round trips and the same workflows/s over HTTP: an in-process
//!   `statelog serve` (`statelog::server::serve`, development mode, one account) on a loopback
//!   port, and clients speaking HTTP/1.1 keep-alive on `std::net::TcpStream`, each request
//!   signed with SigV4 for the service `swf` before its timer starts (as boto3 would send it).
//!   A round trip is then: PollForDecisionTask (the claim durable) -> its answer ->
//!   RespondDecisionTaskCompleted (durable) -> its answer; and the same for an activity.
//!   Over HTTP each of the 16 deciders and 16 workers has its own connection; polls wait up
//!   to the server's 60 s and the server's shutdown ends the ones still waiting.
//!
//! Run: `cargo bench --bench swf` (figures also printed as `FIGURE name: value` lines;
//! `cargo bench --bench swf -- figures-only` skips the criterion groups). In-process, HTTP and
//! fdatasync samples alternate in one loop, so they share the machine's state.

use std::net::SocketAddr;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};
use statelog::clock::SystemClock;
use statelog::engine::swf::api;
use statelog::engine::{Engine, EngineOptions};
use statelog::server::credentials::DEV_ACCOUNT_ID;
use statelog::server::engine_backend::{AccountLayout, EngineBackend};
use statelog::server::ServerState;
use statelog_wal::Durability;

#[path = "support/http_client.rs"]
mod http_client;
use http_client::{HttpClient, Identity};

const DOMAIN: &str = "bench";

fn input<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("an API input")
}

fn engine(dir: &std::path::Path, durability: Durability) -> Engine {
    let options = EngineOptions {
        durability,
        background_timers: false,
        ..EngineOptions::default()
    };
    let engine = Engine::open(dir, options).expect("engine opens");
    let swf = engine.swf();
    swf.register_domain(&input(json!({
        "name": DOMAIN, "workflowExecutionRetentionPeriodInDays": "1"
    })))
    .expect("domain");
    swf.register_workflow_type(&input(json!({
        "domain": DOMAIN, "name": "w", "version": "1",
        "defaultTaskStartToCloseTimeout": "NONE", "defaultExecutionStartToCloseTimeout": "31536000",
        "defaultTaskList": {"name": "deciders"}, "defaultChildPolicy": "TERMINATE"
    })))
    .expect("workflow type");
    swf.register_activity_type(&input(json!({
        "domain": DOMAIN, "name": "a", "version": "1",
        "defaultTaskStartToCloseTimeout": "NONE", "defaultTaskHeartbeatTimeout": "NONE",
        "defaultTaskScheduleToStartTimeout": "NONE", "defaultTaskScheduleToCloseTimeout": "NONE",
        "defaultTaskList": {"name": "workers"}
    })))
    .expect("activity type");
    engine
}

static NEXT: AtomicU64 = AtomicU64::new(0);

fn start(engine: &Engine) -> String {
    let id = format!("w{}", NEXT.fetch_add(1, Ordering::Relaxed));
    engine
        .swf()
        .start_workflow_execution(&input(json!({
            "domain": DOMAIN, "workflowId": id, "workflowType": {"name": "w", "version": "1"}
        })))
        .expect("starts");
    id
}

fn poll_decision(engine: &Engine) -> api::DecisionTask {
    let task = engine
        .swf()
        .poll_for_decision_task(
            &input(json!({"domain": DOMAIN, "taskList": {"name": "deciders"}})),
            Duration::from_secs(5),
        )
        .expect("polls");
    assert!(!task.task_token.is_empty(), "a decision task");
    task
}

fn answer(engine: &Engine, token: &str, decisions: Vec<Value>) {
    engine
        .swf()
        .respond_decision_task_completed(&input(json!({
            "taskToken": token, "decisions": decisions
        })))
        .expect("answers");
}

fn complete() -> Vec<Value> {
    vec![json!({"decisionType": "CompleteWorkflowExecution",
                "completeWorkflowExecutionDecisionAttributes": {"result": "ok"}})]
}

fn schedule(k: usize) -> Value {
    json!({"decisionType": "ScheduleActivityTask", "scheduleActivityTaskDecisionAttributes": {
        "activityType": {"name": "a", "version": "1"}, "activityId": format!("a{k}"),
        "input": k.to_string()}})
}

/// One decision round trip (poll -> answer -> durable) on a run whose decision task is
/// scheduled.
fn decision_round_trip(engine: &Engine) -> Duration {
    start(engine);
    let began = Instant::now();
    let task = poll_decision(engine);
    answer(engine, &task.task_token, complete());
    began.elapsed()
}

/// One activity round trip (poll -> answer -> durable) on a run with one activity scheduled.
fn activity_round_trip(engine: &Engine) -> Duration {
    start(engine);
    let task = poll_decision(engine);
    answer(engine, &task.task_token, vec![schedule(0)]);
    let began = Instant::now();
    let activity = engine
        .swf()
        .poll_for_activity_task(
            &input(json!({"domain": DOMAIN, "taskList": {"name": "workers"}})),
            Duration::from_secs(5),
        )
        .expect("polls");
    assert!(!activity.task_token.is_empty(), "an activity task");
    engine
        .swf()
        .respond_activity_task_completed(&input(json!({
            "taskToken": activity.task_token, "result": "r"
        })))
        .expect("answers");
    let took = began.elapsed();
    // Close the run so the lists stay small.
    let task = poll_decision(engine);
    answer(engine, &task.task_token, complete());
    took
}

/// One 4 KiB overwrite of a preallocated block + fdatasync.
fn raw_fdatasync(file: &std::fs::File) -> Duration {
    let block = [7u8; 4096];
    let began = Instant::now();
    file.write_all_at(&block, 0).expect("writes");
    file.sync_data().expect("fdatasync");
    began.elapsed()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// 3-activity workflows/s with 16 deciders and 16 workers, `count` workflows.
fn workflows_per_second(count: usize) -> f64 {
    let tmp = tempfile::tempdir().expect("temp dir");
    let engine = engine(tmp.path(), Durability::GroupCommit);
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    for _ in 0..16 {
        let (e, s) = (engine.clone(), stop.clone());
        threads.push(std::thread::spawn(move || {
            let swf = e.swf();
            while !s.load(Ordering::SeqCst) {
                let task = swf
                    .poll_for_decision_task(
                        &input(json!({"domain": DOMAIN, "taskList": {"name": "deciders"}})),
                        Duration::from_millis(20),
                    )
                    .expect("polls");
                if task.task_token.is_empty() {
                    continue;
                }
                let events = task.events.unwrap_or_default();
                let done = events
                    .iter()
                    .filter(|e| e["eventType"] == "ActivityTaskCompleted")
                    .count();
                let scheduled = events
                    .iter()
                    .any(|e| e["eventType"] == "ActivityTaskScheduled");
                let decisions = if done == 3 {
                    complete()
                } else if !scheduled {
                    (0..3).map(schedule).collect()
                } else {
                    Vec::new()
                };
                answer(&e, &task.task_token, decisions);
            }
        }));
        let (e, s) = (engine.clone(), stop.clone());
        threads.push(std::thread::spawn(move || {
            let swf = e.swf();
            while !s.load(Ordering::SeqCst) {
                let task = swf
                    .poll_for_activity_task(
                        &input(json!({"domain": DOMAIN, "taskList": {"name": "workers"}})),
                        Duration::from_millis(20),
                    )
                    .expect("polls");
                if task.task_token.is_empty() {
                    continue;
                }
                swf.respond_activity_task_completed(&input(json!({
                    "taskToken": task.task_token, "result": "r"
                })))
                .expect("answers");
            }
        }));
    }
    let began = Instant::now();
    for _ in 0..count {
        start(&engine);
    }
    let open = || {
        engine
            .swf()
            .count_open_workflow_executions(&input(json!({
                "domain": DOMAIN, "startTimeFilter": {"oldestDate": 0}
            })))
            .expect("counts")
            .count
    };
    while open() > 0 {
        std::thread::sleep(Duration::from_millis(2));
    }
    let took = began.elapsed();
    stop.store(true, Ordering::SeqCst);
    for thread in threads {
        thread.join().expect("joins");
    }
    count as f64 / took.as_secs_f64()
}

/// A keep-alive connection to the server speaking SWF (`SimpleWorkflowService.<operation>`,
/// JSON answers), signed as any key of development mode.
struct Client(HttpClient);

impl Client {
    fn connect(addr: SocketAddr) -> Self {
        Self(HttpClient::connect(
            addr,
            Identity {
                access_key_id: "bench",
                secret_access_key: "bench",
                service: "swf",
            },
        ))
    }

    /// The bytes of a signed `SimpleWorkflowService.<operation>` request.
    fn request(&self, operation: &str, body: &Value) -> Vec<u8> {
        self.0.prepare(
            &format!("SimpleWorkflowService.{operation}"),
            body.to_string().as_bytes(),
        )
    }

    /// Sends `request` and reads its JSON answer: `None` once the server has gone.
    fn send(&mut self, request: &[u8]) -> Option<(u16, Value)> {
        let (status, body) = self.0.send(request)?;
        Some((status, serde_json::from_slice(&body).ok()?))
    }

    /// A call that must succeed.
    fn ok(&mut self, operation: &str, body: Value) -> Value {
        let request = self.request(operation, &body);
        let (status, answer) = self.send(&request).expect("an answer");
        assert_eq!(status, 200, "{operation}: {answer}");
        answer
    }
}

/// An in-process `statelog serve` on a loopback port (development mode), its domain and types
/// registered over HTTP.
struct HttpServer {
    addr: SocketAddr,
    runtime: tokio::runtime::Runtime,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<Result<(), statelog::server::Error>>>,
    _dir: tempfile::TempDir,
}

impl HttpServer {
    fn start(durability: Durability) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let options = EngineOptions {
            durability,
            clock: Arc::new(SystemClock),
            ..EngineOptions::default()
        };
        let backend = EngineBackend::new(
            dir.path(),
            AccountLayout::Single {
                account_id: DEV_ACCOUNT_ID.to_owned(),
            },
            options,
        );
        let state = ServerState::new(backend, None, Arc::new(SystemClock));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("binds");
        let addr = listener.local_addr().expect("addr");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = runtime.spawn(statelog::server::serve(state, listener, 64, async move {
            let _ = stopped.await;
        }));
        let server = HttpServer {
            addr,
            runtime,
            stop: Some(stop),
            task: Some(task),
            _dir: dir,
        };
        let mut c = Client::connect(addr);
        c.ok(
            "RegisterDomain",
            json!({"name": DOMAIN, "workflowExecutionRetentionPeriodInDays": "1"}),
        );
        c.ok(
            "RegisterWorkflowType",
            json!({"domain": DOMAIN, "name": "w", "version": "1",
                   "defaultTaskStartToCloseTimeout": "NONE",
                   "defaultExecutionStartToCloseTimeout": "31536000",
                   "defaultTaskList": {"name": "deciders"}, "defaultChildPolicy": "TERMINATE"}),
        );
        c.ok(
            "RegisterActivityType",
            json!({"domain": DOMAIN, "name": "a", "version": "1",
                   "defaultTaskStartToCloseTimeout": "NONE", "defaultTaskHeartbeatTimeout": "NONE",
                   "defaultTaskScheduleToStartTimeout": "NONE",
                   "defaultTaskScheduleToCloseTimeout": "NONE",
                   "defaultTaskList": {"name": "workers"}}),
        );
        server
    }

    /// Shuts the server down: polls still waiting answer empty, then it stops.
    fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            self.runtime
                .block_on(task)
                .expect("server joins")
                .expect("clean shutdown");
        }
    }
}

fn http_start(c: &mut Client) {
    let id = format!("h{}", NEXT.fetch_add(1, Ordering::Relaxed));
    c.ok(
        "StartWorkflowExecution",
        json!({"domain": DOMAIN, "workflowId": id, "workflowType": {"name": "w", "version": "1"}}),
    );
}

fn poll_body(list: &str) -> Value {
    json!({"domain": DOMAIN, "taskList": {"name": list}})
}

/// An HTTP decision round trip on a run whose decision task is scheduled: the signed requests
/// are made before the timer starts.
fn http_decision_round_trip(c: &mut Client) -> Duration {
    http_start(c);
    let poll = c.request("PollForDecisionTask", &poll_body("deciders"));
    let began = Instant::now();
    let (status, task) = c.send(&poll).expect("an answer");
    let token = task["taskToken"].as_str().unwrap_or_default().to_string();
    assert!(
        status == 200 && !token.is_empty(),
        "a decision task: {task}"
    );
    let answer = c.request(
        "RespondDecisionTaskCompleted",
        &json!({"taskToken": token, "decisions": complete()}),
    );
    let (status, body) = c.send(&answer).expect("an answer");
    let took = began.elapsed();
    assert_eq!(status, 200, "{body}");
    took
}

/// An HTTP activity round trip on a run with one activity scheduled.
fn http_activity_round_trip(c: &mut Client) -> Duration {
    http_start(c);
    let task = c.ok("PollForDecisionTask", poll_body("deciders"));
    c.ok(
        "RespondDecisionTaskCompleted",
        json!({"taskToken": task["taskToken"], "decisions": [schedule(0)]}),
    );
    let poll = c.request("PollForActivityTask", &poll_body("workers"));
    let began = Instant::now();
    let (status, activity) = c.send(&poll).expect("an answer");
    let token = activity["taskToken"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        status == 200 && !token.is_empty(),
        "an activity task: {activity}"
    );
    let answer = c.request(
        "RespondActivityTaskCompleted",
        &json!({"taskToken": token, "result": "r"}),
    );
    let (status, body) = c.send(&answer).expect("an answer");
    let took = began.elapsed();
    assert_eq!(status, 200, "{body}");
    // Close the run so the lists stay small.
    let task = c.ok("PollForDecisionTask", poll_body("deciders"));
    c.ok(
        "RespondDecisionTaskCompleted",
        json!({"taskToken": task["taskToken"], "decisions": complete()}),
    );
    took
}

/// What a decider answers a decision task of the 3-activity workflow.
fn decide(events: &[Value]) -> Vec<Value> {
    let done = events
        .iter()
        .filter(|e| e["eventType"] == "ActivityTaskCompleted")
        .count();
    let scheduled = events
        .iter()
        .any(|e| e["eventType"] == "ActivityTaskScheduled");
    if done == 3 {
        complete()
    } else if !scheduled {
        (0..3).map(schedule).collect()
    } else {
        Vec::new()
    }
}

/// 3-activity workflows/s over HTTP with 16 deciders and 16 workers (one connection each),
/// `count` workflows, group commit.
fn http_workflows_per_second(count: usize) -> f64 {
    let server = HttpServer::start(Durability::GroupCommit);
    let addr = server.addr;
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    for _ in 0..16 {
        let s = stop.clone();
        threads.push(std::thread::spawn(move || {
            let mut c = Client::connect(addr);
            while !s.load(Ordering::SeqCst) {
                let poll = c.request("PollForDecisionTask", &poll_body("deciders"));
                let Some((200, task)) = c.send(&poll) else {
                    return;
                };
                let Some(token) = task["taskToken"].as_str().filter(|t| !t.is_empty()) else {
                    continue;
                };
                let events = task["events"].as_array().cloned().unwrap_or_default();
                let answer = c.request(
                    "RespondDecisionTaskCompleted",
                    &json!({"taskToken": token, "decisions": decide(&events)}),
                );
                if c.send(&answer).is_none() {
                    return;
                }
            }
        }));
        let s = stop.clone();
        threads.push(std::thread::spawn(move || {
            let mut c = Client::connect(addr);
            while !s.load(Ordering::SeqCst) {
                let poll = c.request("PollForActivityTask", &poll_body("workers"));
                let Some((200, task)) = c.send(&poll) else {
                    return;
                };
                let Some(token) = task["taskToken"].as_str().filter(|t| !t.is_empty()) else {
                    continue;
                };
                let answer = c.request(
                    "RespondActivityTaskCompleted",
                    &json!({"taskToken": token, "result": "r"}),
                );
                if c.send(&answer).is_none() {
                    return;
                }
            }
        }));
    }
    let mut c = Client::connect(addr);
    let began = Instant::now();
    for _ in 0..count {
        http_start(&mut c);
    }
    let count_open = json!({"domain": DOMAIN, "startTimeFilter": {"oldestDate": 0}});
    while c.ok("CountOpenWorkflowExecutions", count_open.clone())["count"] != 0 {
        std::thread::sleep(Duration::from_millis(2));
    }
    let took = began.elapsed();
    stop.store(true, Ordering::SeqCst);
    drop(c);
    // The shutdown answers the waiting polls empty; each thread then sees `stop` or a closed
    // connection.
    server.stop();
    for thread in threads {
        thread.join().expect("joins");
    }
    count as f64 / took.as_secs_f64()
}

fn figures(rounds: usize, workflows: usize) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let engine = engine(tmp.path(), Durability::PerCommit);
    let probe = tempfile::tempfile_in(tmp.path()).expect("probe file");
    probe.set_len(4096).expect("preallocates");
    probe.sync_all().expect("syncs");
    let server = HttpServer::start(Durability::PerCommit);
    let mut client = Client::connect(server.addr);
    let (mut decisions, mut activities, mut syncs) = (Vec::new(), Vec::new(), Vec::new());
    let (mut http_decisions, mut http_activities) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        decisions.push(decision_round_trip(&engine));
        http_decisions.push(http_decision_round_trip(&mut client));
        syncs.push(raw_fdatasync(&probe));
        activities.push(activity_round_trip(&engine));
        http_activities.push(http_activity_round_trip(&mut client));
        syncs.push(raw_fdatasync(&probe));
    }
    drop(client);
    server.stop();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "FIGURE decision_round_trip_p50_ms: {:.3}",
        ms(median(decisions))
    );
    println!(
        "FIGURE activity_round_trip_p50_ms: {:.3}",
        ms(median(activities))
    );
    println!(
        "FIGURE http_decision_round_trip_p50_ms: {:.3}",
        ms(median(http_decisions))
    );
    println!(
        "FIGURE http_activity_round_trip_p50_ms: {:.3}",
        ms(median(http_activities))
    );
    println!("FIGURE raw_fdatasync_p50_ms: {:.3}", ms(median(syncs)));
    println!(
        "FIGURE workflows_per_second_3_activities_16_deciders_16_workers: {:.1}",
        workflows_per_second(workflows)
    );
    println!(
        "FIGURE http_workflows_per_second_3_activities_16_deciders_16_workers: {:.1}",
        http_workflows_per_second(workflows)
    );
}

fn bench(c: &mut Criterion) {
    let figures_only = std::env::args().any(|a| a == "figures-only");
    let benching = std::env::args().any(|a| a == "--bench");
    figures(
        if benching { 200 } else { 5 },
        if benching { 2_000 } else { 50 },
    );
    if figures_only || !benching {
        return;
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let engine = engine(tmp.path(), Durability::PerCommit);
    let probe = tempfile::tempfile_in(tmp.path()).expect("probe file");
    probe.set_len(4096).expect("preallocates");
    let mut group = c.benchmark_group("swf");
    group.sample_size(50);
    group.bench_function("decision_round_trip", |b| {
        b.iter_custom(|n| (0..n).map(|_| decision_round_trip(&engine)).sum())
    });
    group.bench_function("activity_round_trip", |b| {
        b.iter_custom(|n| (0..n).map(|_| activity_round_trip(&engine)).sum())
    });
    group.bench_function("raw_fdatasync", |b| {
        b.iter_custom(|n| (0..n).map(|_| raw_fdatasync(&probe)).sum())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
