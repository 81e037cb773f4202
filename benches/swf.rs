//! Amazon SWF benchmarks (criterion), in process, every commit synced
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
//!
//! Run: `cargo bench --bench swf` (figures also printed as `FIGURE name: value` lines;
//! `cargo bench --bench swf -- figures-only` skips the criterion groups). The HTTP round trips
//! are measured by the server's bench.

use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};
use statelog::engine::swf::api;
use statelog::engine::{Engine, EngineOptions};
use statelog_wal::Durability;

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

fn figures(rounds: usize, workflows: usize) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let engine = engine(tmp.path(), Durability::PerCommit);
    let probe = tempfile::tempfile_in(tmp.path()).expect("probe file");
    probe.set_len(4096).expect("preallocates");
    probe.sync_all().expect("syncs");
    let (mut decisions, mut activities, mut syncs) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        decisions.push(decision_round_trip(&engine));
        syncs.push(raw_fdatasync(&probe));
        activities.push(activity_round_trip(&engine));
        syncs.push(raw_fdatasync(&probe));
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "FIGURE decision_round_trip_p50_ms: {:.3}",
        ms(median(decisions))
    );
    println!(
        "FIGURE activity_round_trip_p50_ms: {:.3}",
        ms(median(activities))
    );
    println!("FIGURE raw_fdatasync_p50_ms: {:.3}", ms(median(syncs)));
    println!(
        "FIGURE workflows_per_second_3_activities_16_deciders_16_workers: {:.1}",
        workflows_per_second(workflows)
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
