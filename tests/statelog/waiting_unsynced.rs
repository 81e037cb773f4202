//! The handler's `TaskSubmitted` is written without waiting for its own sync (the next synced
//! commit makes it durable): on the WAL's simulated disk, a crash that loses it leads exactly
//! where a crash just before recording it leads (the task is dispatched again on open, the
//! handler is called again, its answer recorded, the token still answers); a later synced
//! commit, or a read of the history, makes it durable; and a crash at every disk op of the
//! token answer that follows leaves a history that completes once, with one `TaskSubmitted`
//! before the answer, never the answer without it.

use crate::engine_common;
use engine_common::{checked_history, open_on_sim, ONE_TASK_SUBMITTED, ONE_TASK_SUCCEEDED};

use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{json, Value};
use statelog::clock::ManualClock;
use statelog::engine::{Engine, EngineOptions, ExecutionStatus};
use statelog_wal::storage::sim::{CrashMode, FaultPlan, SimStorage};
use statelog_wal::Durability;

const START_MS: u64 = 1_704_067_200_000;
const DIR: &str = "/data";
const SEND: &str = "arn:aws:states:::sqs:sendMessage.waitForTaskToken";
const MACHINE: &str = r#"{"StartAt":"Ask","States":{"Ask":{"Type":"Task",
    "Resource":"arn:aws:states:::sqs:sendMessage.waitForTaskToken",
    "Parameters":{"T.$":"$$.Task.Token"},"End":true}}}"#;

/// What the queue integration saw: every token it was handed, in order.
type Calls = Arc<Mutex<Vec<String>>>;

fn open(disk: &SimStorage, clock: &ManualClock, calls: &Calls) -> Result<Engine, String> {
    let options = EngineOptions {
        clock: Arc::new(clock.clone()),
        background_timers: false,
        entropy_seed: Some(5),
        worker_threads: 1,
        ..EngineOptions::default()
    };
    let engine = open_on_sim(disk, DIR, Durability::PerCommit, 64 * 1024, options)?;
    let seen = calls.clone();
    engine.register_integration(SEND, move |input: Value, _context: Value| {
        seen.lock()
            .push(input["T"].as_str().unwrap_or_default().to_string());
        async move { Ok(json!({"MessageId": "m"})) }
    });
    engine.wait_idle();
    Ok(engine)
}

fn types(engine: &Engine, arn: &str) -> Vec<String> {
    checked_history(engine, arn)
        .iter()
        .map(|e| e.details.type_name().to_string())
        .collect()
}

/// A fresh disk with machine `ask` and execution `name` started, its handler's answer
/// recorded (unsynced) and nothing synced after it; the engine is kept running.
fn parked(name: &str) -> (Engine, SimStorage, ManualClock, Calls, String) {
    let disk = SimStorage::new();
    let clock = ManualClock::new(START_MS);
    let calls = Calls::default();
    let engine = open(&disk, &clock, &calls).expect("opens");
    engine
        .create_state_machine("ask", MACHINE, None)
        .expect("machine");
    let arn = engine
        .start_execution("ask", Some(name), "{}")
        .expect("starts")
        .execution_arn;
    engine.wait_idle();
    assert_eq!(calls.lock().len(), 1);
    assert!(engine.background_errors().is_empty());
    (engine, disk, clock, calls, arn)
}

fn calls_with(calls: &Calls, token: &str) -> usize {
    calls.lock().iter().filter(|t| t.as_str() == token).count()
}

#[test]
fn a_lost_task_submitted_is_a_crash_before_it_was_recorded() {
    let (_engine, disk, clock, calls, arn) = parked("e");
    assert!(
        disk.pending_bytes() > 0,
        "TaskSubmitted is written, not synced"
    );
    let token = calls.lock()[0].clone();
    let rebooted = disk.crash(CrashMode::DropUnsynced);
    let engine = open(&rebooted, &clock, &calls).expect("reopens");
    // Recovery found the task not submitted: dispatched again, the handler called again with
    // the same token (it is in TaskScheduled), and its answer recorded.
    assert_eq!(*calls.lock(), [token.clone(), token.clone()]);
    assert_eq!(types(&engine, &arn), ONE_TASK_SUBMITTED);
    engine.send_task_success(&token, "{}").expect("answers");
    assert_eq!(types(&engine, &arn), ONE_TASK_SUCCEEDED);
    // Durable: survives another crash as it is.
    let again = rebooted.crash(CrashMode::DropUnsynced);
    let engine = open(&again, &clock, &calls).expect("reopens");
    assert_eq!(types(&engine, &arn), ONE_TASK_SUCCEEDED);
    assert_eq!(calls.lock().len(), 2);
}

#[test]
fn the_next_synced_commit_makes_task_submitted_durable() {
    let (engine, disk, clock, calls, arn) = parked("e");
    let token = calls.lock()[0].clone();
    // Another execution's start is a synced commit after it.
    engine
        .start_execution("ask", Some("other"), "{}")
        .expect("starts");
    engine.wait_idle();
    let rebooted = disk.crash(CrashMode::DropUnsynced);
    let engine = open(&rebooted, &clock, &calls).expect("reopens");
    assert_eq!(types(&engine, &arn), ONE_TASK_SUBMITTED);
    assert_eq!(calls_with(&calls, &token), 1, "not dispatched again");
    engine.send_task_success(&token, "{}").expect("answers");
    assert_eq!(types(&engine, &arn), ONE_TASK_SUCCEEDED);
}

#[test]
fn a_read_of_the_history_makes_task_submitted_durable_first() {
    let (engine, disk, clock, calls, arn) = parked("e");
    let token = calls.lock()[0].clone();
    assert!(disk.pending_bytes() > 0);
    assert_eq!(types(&engine, &arn), ONE_TASK_SUBMITTED, "read back");
    assert_eq!(disk.pending_bytes(), 0, "synced by the read");
    let rebooted = disk.crash(CrashMode::DropUnsynced);
    let engine = open(&rebooted, &clock, &calls).expect("reopens");
    assert_eq!(types(&engine, &arn), ONE_TASK_SUBMITTED);
    assert_eq!(calls_with(&calls, &token), 1, "what was read survived");
}

/// Halts the disk at every op of the token answer that follows an unsynced `TaskSubmitted`,
/// reboots, and finishes the execution: never the answer without `TaskSubmitted`, one
/// `TaskSubmitted`, and the answer durable exactly when `send_task_success` said so.
#[test]
fn a_crash_at_any_point_of_the_answer_completes_the_task_once() {
    // How many disk ops the answer takes.
    let (engine, disk, _clock, calls, _arn) = parked("e");
    let token = calls.lock()[0].clone();
    let from = disk.op_count();
    engine.send_task_success(&token, "{}").expect("answers");
    let ops = disk.op_count() - from;
    assert!(ops > 0);
    let (mut lost, mut kept) = (0, 0);
    for k in 0..=ops {
        let (engine, disk, clock, calls, arn) = parked("e");
        let token = calls.lock()[0].clone();
        disk.set_faults(FaultPlan {
            halt_at_op: Some(disk.op_count() + k),
            ..FaultPlan::default()
        });
        let answered = engine.send_task_success(&token, "{}");
        let rebooted = disk.crash(CrashMode::DropUnsynced);
        let engine = open(&rebooted, &clock, &calls).unwrap_or_else(|e| panic!("op {k}: {e}"));
        engine.wait_idle();
        let after = types(&engine, &arn);
        if after == ONE_TASK_SUCCEEDED {
            kept += 1;
        } else {
            assert!(
                answered.is_err(),
                "op {k}: acknowledged, then lost: {after:?}"
            );
            // Lost with the answer, or before it: the task was dispatched again.
            assert_eq!(after, ONE_TASK_SUBMITTED, "op {k}");
            assert!(calls_with(&calls, &token) <= 2, "op {k}");
            lost += 1;
            engine
                .send_task_success(&token, "{}")
                .unwrap_or_else(|e| panic!("op {k}: answer after reboot: {e}"));
            assert_eq!(types(&engine, &arn), ONE_TASK_SUCCEEDED, "op {k}");
        }
        let d = engine.describe_execution(&arn).expect("describe");
        assert_eq!(d.status, ExecutionStatus::Succeeded, "op {k}");
    }
    println!("answer crash sweep: {ops} ops, {kept} kept the answer, {lost} lost it");
    assert!(kept > 0 && lost > 0);
}
