//! Crash at every point of a redrive, on the WAL's simulated disk: the "process" halts at op
//! index k of `redrive_execution` (every later disk call fails), the disk loses what was not
//! synced, and the engine reopens on what is left. Each time the execution is either exactly as
//! before (FAILED, same history, redrivable) or redriven (`ExecutionRedriven` then the rerun, ids
//! contiguous); a redrive after recovery, if none survived, runs it to success. With a client
//! token, the token is durable exactly when the redrive is: a retry with it after the reboot
//! answers the surviving redrive (same date and count) and never redrives again.

use crate::engine_common;
use engine_common::{checked_history, open_on_sim};

use std::sync::Arc;

use serde_json::{json, Value};
use statelog::clock::ManualClock;
use statelog::engine::{Engine, EngineOptions, ExecutionStatus, TaskError};
use statelog::history::{EventDetails, HistoryEvent};
use statelog_wal::storage::sim::{CrashMode, FaultPlan, SimStorage};
use statelog_wal::Durability;

const START_MS: u64 = 1_704_067_200_000;
const DIR: &str = "/data";
const RESOURCE: &str = "arn:aws:lambda:us-east-1:000000000000:function:flaky";
const DEFINITION: &str = r#"{
  "StartAt": "Prep",
  "States": {
    "Prep": {"Type": "Pass", "Result": 1, "ResultPath": "$.prep", "Next": "Call"},
    "Call": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:000000000000:function:flaky", "ResultPath": "$.call", "End": true}
  }
}"#;

fn open(disk: &SimStorage, clock: &ManualClock, healthy: bool) -> Result<Engine, String> {
    let options = EngineOptions {
        clock: Arc::new(clock.clone()),
        background_timers: false,
        entropy_seed: Some(9),
        worker_threads: 1,
        ..EngineOptions::default()
    };
    let engine = open_on_sim(disk, DIR, Durability::GroupCommit, 64 * 1024, options)?;
    engine.register_integration(RESOURCE, move |input: Value, _c: Value| async move {
        if healthy {
            Ok(json!({"ok": input["prep"]}))
        } else {
            Err(TaskError::new("Boom", "down"))
        }
    });
    engine.wait_idle();
    Ok(engine)
}

fn events(engine: &Engine, arn: &str) -> Vec<HistoryEvent> {
    checked_history(engine, arn)
}

/// The sweep: halt at every disk op of `redrive_execution(arn, token)`, reboot, check. With a
/// client token, the same token after the reboot must answer the one redrive that happened (or
/// make it, when none survived), never redrive a second time.
fn sweep(token: Option<&str>) {
    let disk = SimStorage::new();
    let clock = ManualClock::new(START_MS);
    let arn = {
        let engine = open(&disk, &clock, false).expect("opens");
        engine
            .create_state_machine("m", DEFINITION, None)
            .expect("creates");
        let arn = engine
            .start_execution("m", Some("e"), "{}")
            .expect("starts")
            .execution_arn;
        engine.wait_idle();
        assert_eq!(
            engine.describe_execution(&arn).expect("d").status,
            ExecutionStatus::Failed
        );
        arn
    };
    clock.advance_ms(1_000);
    let base = disk.crash(CrashMode::DropUnsynced);
    let before = {
        let engine = open(&base.crash(CrashMode::DropUnsynced), &clock, true).expect("opens");
        events(&engine, &arn)
    };
    // How many disk ops a redrive takes (opened healthy: the rerun task succeeds).
    let probe = base.crash(CrashMode::DropUnsynced);
    let engine = open(&probe, &clock, true).expect("opens");
    let from = probe.op_count();
    engine.redrive_execution(&arn, token).expect("redrives");
    engine.wait_idle();
    let ops = probe.op_count() - from;
    drop(engine);

    let (mut kept, mut lost) = (0, 0);
    for k in 0..=ops {
        let disk = base.crash(CrashMode::DropUnsynced);
        let engine = open(&disk, &clock, true).expect("opens");
        disk.set_faults(FaultPlan {
            halt_at_op: Some(disk.op_count() + k),
            ..FaultPlan::default()
        });
        let _ = engine.redrive_execution(&arn, token);
        engine.wait_idle();
        drop(engine);
        let rebooted = disk.crash(CrashMode::DropUnsynced);
        let engine = open(&rebooted, &clock, true).unwrap_or_else(|e| panic!("op {k}: {e}"));
        engine.wait_idle();
        let after = events(&engine, &arn);
        let redriven_at = after.iter().find_map(|e| match e.details {
            EventDetails::ExecutionRedriven(_) => Some(e.timestamp_ms),
            _ => None,
        });
        if let Some(redrive_ms) = redriven_at {
            kept += 1;
            assert_eq!(&after[..before.len()], &before[..], "op {k}: prefix kept");
            // Recovery re-dispatched the rerun task: it succeeded.
            let d = engine.describe_execution(&arn).expect("d");
            assert_eq!(d.status, ExecutionStatus::Succeeded, "op {k}: {d:?}");
            assert_eq!(d.redrive.redrive_count, 1);
            if token.is_some() {
                // The token survived with the redrive: the retry answers it.
                let again = engine
                    .redrive_execution(&arn, token)
                    .unwrap_or_else(|e| panic!("op {k}: retried token: {e}"));
                assert_eq!(
                    (again.redrive_count, again.redrive_ms),
                    (1, redrive_ms),
                    "op {k}"
                );
            }
        } else {
            lost += 1;
            assert_eq!(after, before, "op {k}: untouched");
            let first = engine
                .redrive_execution(&arn, token)
                .unwrap_or_else(|e| panic!("op {k}: redrive after recovery: {e}"));
            assert_eq!(first.redrive_count, 1, "op {k}");
            engine.wait_idle();
            let d = engine.describe_execution(&arn).expect("d");
            assert_eq!(d.status, ExecutionStatus::Succeeded, "op {k}: {d:?}");
            if token.is_some() {
                let again = engine
                    .redrive_execution(&arn, token)
                    .unwrap_or_else(|e| panic!("op {k}: retried token: {e}"));
                assert_eq!(again, first, "op {k}");
            }
        }
        let d = engine.describe_execution(&arn).expect("d");
        assert_eq!(d.redrive.redrive_count, 1, "op {k}: redriven once");
    }
    println!(
        "redrive crash sweep (token {token:?}): {ops} ops, {kept} kept the redrive, {lost} lost it"
    );
    assert!(kept > 0 && lost > 0);
}

#[test]
fn a_crash_at_any_point_of_a_redrive_keeps_the_history_whole() {
    sweep(None);
}

#[test]
fn a_client_token_is_durable_with_its_redrive() {
    sweep(Some("retry-me"));
}
