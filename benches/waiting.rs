//! Waiting benchmarks (criterion): the `.waitForTaskToken` and activity round trips next to one
//! raw fdatasync measured in the same run, every commit synced (`Durability::PerCommit`).
//!
//! Each round trip has two figures:
//! - `..._from_scheduled`: the issue's interval, from the return of `start_execution` (the
//!   task is scheduled: its `TaskScheduled` / `ActivityScheduled` (+ `ActivityStarted` for a
//!   waiting poller) commit is durable and the task is handed to its handler or poller) to the
//!   return of `send_task_success` (the next state durable);
//! - `..._full_cycle`: from the call to `start_execution`, so it includes the scheduling commit.
//!
//! - `token_round_trip`: start -> TaskScheduled durable -> the integration hands the token out
//!   (its answer, TaskSubmitted, is ready at once and written without its own sync) ->
//!   `send_task_success` -> the next state durable (full cycle: 2 synced commits; from
//!   scheduled: 1).
//! - `token_answer`: `send_task_success` on a parked task until the close is durable (1 commit).
//! - `activity_round_trip`: start -> ActivityScheduled durable -> a worker's poll claims it
//!   (ActivityStarted durable) -> `send_task_success` -> the close durable (full cycle: 3
//!   commits; from scheduled: 2).
//! - `activity_round_trip_polling`: a worker already long-polls the list -> start -> the task
//!   is scheduled and claimed for it (one commit) -> the long poll returns ->
//!   `send_task_success` -> the close durable (full cycle: 2 commits; from scheduled: 1).
//!
//! Run: `cargo bench --bench waiting` (figures also printed as `FIGURE name: value` lines, each
//! round trip alternating with one raw fdatasync; `cargo bench --bench waiting -- figures-only`
//! skips the criterion groups and prints only those).

use std::os::unix::fs::FileExt;
use std::sync::mpsc;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};
use parking_lot::Mutex;
use serde_json::{json, Value};
use statelog::engine::{Engine, EngineOptions};
use statelog_wal::Durability;

const SEND: &str = "arn:aws:states:::sqs:sendMessage.waitForTaskToken";
const MACHINE: &str = r#"{"StartAt":"Ask","States":{"Ask":{"Type":"Task",
    "Resource":"arn:aws:states:::sqs:sendMessage.waitForTaskToken",
    "Parameters":{"QueueUrl":"q","MessageBody":{"TaskToken.$":"$$.Task.Token"}},"End":true}}}"#;

/// An engine whose queue integration sends every token to the returned receiver.
fn engine(dir: &std::path::Path) -> (Engine, mpsc::Receiver<String>) {
    let options = EngineOptions {
        durability: Durability::PerCommit,
        background_timers: false,
        ..EngineOptions::default()
    };
    let engine = Engine::open(dir, options).expect("engine opens");
    let (sender, receiver) = mpsc::channel();
    let sender = Mutex::new(sender);
    engine.register_integration(SEND, move |input: Value, _context: Value| {
        let token = input["MessageBody"]["TaskToken"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let _ = sender.lock().send(token);
        async move { Ok(json!({"MessageId": "m"})) }
    });
    engine
        .create_state_machine("ask", MACHINE, None)
        .expect("machine");
    let activity = engine.create_activity("bench").expect("activity");
    let machine = format!(
        r#"{{"StartAt":"Work","States":{{"Work":{{"Type":"Task","Resource":"{}","End":true}}}}}}"#,
        activity.activity_arn
    );
    engine
        .create_state_machine("work", &machine, None)
        .expect("machine");
    (engine, receiver)
}

/// The two intervals of one round trip, in microseconds: from the call to `start_execution`
/// (full cycle) and from its return (the task is scheduled: its scheduling commit is durable
/// and it is handed to its handler or poller) to `send_task_success`'s return (the next state
/// durable).
#[derive(Clone, Copy)]
struct Trip {
    full_us: f64,
    scheduled_us: f64,
}

fn trip(started: Instant, scheduled: Instant) -> Trip {
    let done = Instant::now();
    Trip {
        full_us: (done - started).as_secs_f64() * 1e6,
        scheduled_us: (done - scheduled).as_secs_f64() * 1e6,
    }
}

fn round_trip(engine: &Engine, tokens: &mpsc::Receiver<String>) -> Trip {
    let started = Instant::now();
    engine.start_execution("ask", None, "{}").expect("start");
    let scheduled = Instant::now();
    let token = tokens.recv().expect("token handed out");
    // The answer may overtake the TaskSubmitted record; both orders complete the task once.
    engine.send_task_success(&token, "{}").expect("answer");
    trip(started, scheduled)
}

fn activity_round_trip(engine: &Engine, runtime: &tokio::runtime::Runtime, activity: &str) -> Trip {
    let started = Instant::now();
    engine.start_execution("work", None, "{}").expect("start");
    let scheduled = Instant::now();
    let task = runtime
        .block_on(engine.get_activity_task(activity, Some("bench")))
        .expect("poll")
        .expect("a task");
    engine
        .send_task_success(&task.task_token, "{}")
        .expect("answer");
    trip(started, scheduled)
}

fn activity_round_trip_polling(
    engine: &Engine,
    runtime: &tokio::runtime::Runtime,
    activity: &str,
) -> Trip {
    let (task, started, scheduled) = runtime.block_on(async {
        let poller = engine.clone();
        let arn = activity.to_string();
        let poll = tokio::spawn(async move { poller.get_activity_task(&arn, Some("bench")).await });
        // Let the poll register before the task exists.
        tokio::task::yield_now().await;
        let started = Instant::now();
        engine.start_execution("work", None, "{}").expect("start");
        let scheduled = Instant::now();
        (poll.await.expect("joined"), started, scheduled)
    });
    let task = task.expect("poll").expect("a task");
    engine
        .send_task_success(&task.task_token, "{}")
        .expect("answer");
    trip(started, scheduled)
}

fn park(engine: &Engine, tokens: &mpsc::Receiver<String>, count: usize) -> Vec<String> {
    for _ in 0..count {
        engine.start_execution("ask", None, "{}").expect("start");
    }
    engine.wait_idle();
    tokens.try_iter().collect()
}

fn p50(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn tokens(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (engine, receiver) = engine(dir.path());
    let probe_path = dir.path().join("fdatasync-probe");
    let probe = std::fs::File::create(&probe_path).expect("probe file");
    let block = vec![7u8; 4096];
    probe.write_all_at(&block, 0).expect("preallocates");
    probe.sync_all().expect("syncs");
    let sync = || {
        probe.write_all_at(&block, 0).expect("writes");
        probe.sync_data().expect("syncs");
    };

    let mut group = c.benchmark_group("waiting");
    group.sample_size(30);
    group.bench_function("fdatasync_4KiB", |b| b.iter(sync));
    group.bench_function("token_round_trip", |b| {
        b.iter(|| round_trip(&engine, &receiver).full_us)
    });
    group.bench_function("token_answer", |b| {
        b.iter_custom(|iters| {
            let parked = park(&engine, &receiver, iters as usize);
            let started = Instant::now();
            for token in &parked {
                engine.send_task_success(token, "{}").expect("answer");
            }
            started.elapsed()
        })
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    let activity = engine.list_activities()[0].activity_arn.clone();
    group.bench_function("activity_round_trip", |b| {
        b.iter(|| activity_round_trip(&engine, &runtime, &activity).full_us)
    });
    group.bench_function("activity_round_trip_polling", |b| {
        b.iter(|| activity_round_trip_polling(&engine, &runtime, &activity).full_us)
    });
    group.finish();

    // Figures: each round trip is timed right after one raw fdatasync, alternating, so both
    // p50s come from the same minutes of a shared machine's disk and scheduler.
    let rounds = 200;
    let time_sync_us = || {
        let started = Instant::now();
        sync();
        started.elapsed().as_secs_f64() * 1e6
    };
    // p50 of the fdatasyncs, of the full cycles, of the intervals from scheduled.
    let alternate = |f: &mut dyn FnMut() -> Trip| {
        let mut syncs = Vec::with_capacity(rounds);
        let mut full = Vec::with_capacity(rounds);
        let mut scheduled = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            syncs.push(time_sync_us());
            let t = f();
            full.push(t.full_us);
            scheduled.push(t.scheduled_us);
        }
        (p50(syncs), p50(full), p50(scheduled))
    };
    let token = alternate(&mut || round_trip(&engine, &receiver));
    let parked = park(&engine, &receiver, rounds);
    let mut next = parked.iter();
    let answer = alternate(&mut || {
        let started = Instant::now();
        if let Some(token) = next.next() {
            engine.send_task_success(token, "{}").expect("answer");
        }
        trip(started, started)
    });
    let activity_trip = alternate(&mut || activity_round_trip(&engine, &runtime, &activity));
    let polling = alternate(&mut || activity_round_trip_polling(&engine, &runtime, &activity));
    for (name, (sync_us, full_us, scheduled_us)) in [
        ("token_round_trip", token),
        ("activity_round_trip", activity_trip),
        ("activity_round_trip_polling", polling),
    ] {
        println!(
            "FIGURE p50 {name}_from_scheduled_us: {scheduled_us:.1} (x{:.2} of fdatasync_us {sync_us:.1})",
            scheduled_us / sync_us
        );
        println!(
            "FIGURE p50 {name}_full_cycle_us: {full_us:.1} (x{:.2} of fdatasync_us {sync_us:.1})",
            full_us / sync_us
        );
    }
    let (sync_us, answer_us, _) = answer;
    println!(
        "FIGURE p50 token_answer_us: {answer_us:.1} (x{:.2} of fdatasync_us {sync_us:.1})",
        answer_us / sync_us
    );
}

criterion_group!(benches, tokens);
criterion_main!(benches);
