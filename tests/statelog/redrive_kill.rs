//! Crash test of redrive with SIGKILL: each child process (this test binary re-run in child
//! mode) starts executions of its own on a real data directory, each of which fails in its Task
//! on the first run (the handler fails while `$$.Execution.RedriveCount` is 0), and redrives
//! each failed one with a client token of its own; the rerun succeeds. It first takes the
//! previous child's executions to their end, as the log left them: running, failed, or
//! redriven. The parent SIGKILLs each child after a seeded random number of its progress lines
//! and starts the next on the same directory. A last child takes every execution to its end.
//! Then every execution must have succeeded with the right output after exactly one redrive,
//! its history whole and contiguous, with one `ExecutionRedriven` and the failed Task's outcome
//! kept before it; and every start and redrive a child acknowledged must be in the log.
//!
//! `STATELOG_CRASH_CYCLES` (default 40) and `STATELOG_CRASH_SEED` (default printed) tune it.

use crate::kill_common;
use kill_common::{kill_points, run_to_end, run_until_killed, seed_and_cycles, spawn_child};

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{json, Value};
use statelog::clock::ManualClock;
use statelog::engine::{Engine, EngineOptions, ExecutionStatus, HistoryQuery, TaskError};
use statelog::history::check_sequence;

const CHILD_ENV: &str = "STATELOG_REDRIVE_KILL_DIR";
const MODE_ENV: &str = "STATELOG_REDRIVE_KILL_MODE";
const CYCLE_ENV: &str = "STATELOG_REDRIVE_KILL_CYCLE";
const START_MS: u64 = 1_704_067_200_000;
/// Executions each child starts.
const PER_CHILD: u64 = 8;
const RESOURCE: &str = "arn:aws:lambda:us-east-1:000000000000:function:flaky";
const DEFINITION: &str = r#"{
  "StartAt": "Prep",
  "States": {
    "Prep": {"Type": "Pass", "Result": "p", "ResultPath": "$.prep", "Next": "Work"},
    "Work": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:000000000000:function:flaky",
             "Parameters": {"v.$": "$.v", "redrives.$": "$$.Execution.RedriveCount"},
             "ResultPath": "$.work", "End": true}
  }
}"#;

fn expected_output(i: u64) -> Value {
    json!({"v": i, "prep": "p", "work": {"v": 2 * i}})
}

fn child_engine(dir: &str) -> Engine {
    let options = EngineOptions {
        // Every child at the same time: redrive's 14-day window is not what is tested here.
        clock: Arc::new(ManualClock::new(START_MS)),
        background_timers: false,
        entropy_seed: Some(11),
        ..EngineOptions::default()
    };
    let engine = Engine::open(dir, options).expect("child opens the engine");
    engine.register_integration(RESOURCE, |input: Value, _context: Value| async move {
        if input["redrives"].as_u64() == Some(0) {
            return Err(TaskError::new("Flaky", "the first run fails"));
        }
        let v = input["v"]
            .as_u64()
            .ok_or_else(|| TaskError::new("Bad", "no v"))?;
        Ok(json!({"v": 2 * v}))
    });
    engine
}

/// Child mode: does nothing unless the parent set `STATELOG_REDRIVE_KILL_DIR`.
#[test]
fn redrive_kill_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let engine = child_engine(&dir);
    engine
        .create_state_machine("flaky", DEFINITION, None)
        .expect("creates (or finds) the machine");
    let cycle: u64 = std::env::var(CYCLE_ENV).expect("cycle").parse().expect("n");
    let finish = std::env::var(MODE_ENV).is_ok_and(|m| m == "finish");
    // The previous child's executions first (all of them for the last child), then its own.
    let first = if finish { 0 } else { cycle.saturating_sub(1) };
    for c in first..=cycle {
        for i in 0..PER_CHILD {
            let name = format!("c{c}-e{i}");
            let arn = engine.execution_arn("flaky", &name);
            if c == cycle && !finish {
                let input = json!({ "v": i }).to_string();
                engine
                    .start_execution("flaky", Some(&name), &input)
                    .expect("starts");
                println!("ack start {name}");
            } else if let Err(e) = engine.describe_execution(&arn) {
                // Never started: its child was killed first.
                assert_eq!(e.aws_name(), "ExecutionDoesNotExist", "{name}: {e}");
                continue;
            }
            let closed = engine.wait_until_closed(&arn).expect("closes");
            if closed.status == ExecutionStatus::Failed {
                let token = format!("redrive-{name}");
                let outcome = engine
                    .redrive_execution(&arn, Some(&token))
                    .expect("redrives");
                assert_eq!(outcome.redrive_count, 1, "{name}: redriven once");
                println!("ack redrive {name}");
            }
            let closed = engine.wait_until_closed(&arn).expect("closes");
            assert_eq!(closed.status, ExecutionStatus::Succeeded, "{name}");
            println!("ack done {name}");
        }
    }
    println!("done");
}

fn spawn(dir: &str, cycle: u64, finish: bool) -> std::process::Child {
    let mode = if finish { "finish" } else { "crash" };
    spawn_child(
        module_path!(),
        "redrive_kill_child",
        &[
            (CHILD_ENV, dir.to_string()),
            (MODE_ENV, mode.to_string()),
            (CYCLE_ENV, cycle.to_string()),
        ],
    )
}

#[test]
fn killed_redrives_happen_once_and_every_execution_succeeds() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let (seed, cycles) = seed_and_cycles("redrive kill test", 0x00d1_5c0d_eed5, 40);
    let mut rng = kill_points(seed);
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().to_str().expect("utf-8 path").to_string();
    let (mut started, mut redriven) = (BTreeSet::new(), BTreeSet::new());
    let mut kills = 0u64;
    for cycle in 0..cycles {
        // Three lines per execution, its own and the previous child's: kills land anywhere.
        let lines_before_kill = 1 + rng.below(3 * 2 * PER_CHILD);
        let killed = run_until_killed(spawn(&dir, cycle, false), lines_before_kill, |line| {
            if let Some(name) = line.strip_prefix("ack start ") {
                started.insert(name.to_string());
            }
            if let Some(name) = line.strip_prefix("ack redrive ") {
                redriven.insert(name.to_string());
            }
            line.starts_with("ack ")
        });
        kills += u64::from(killed);
    }
    let mut done = false;
    run_to_end(spawn(&dir, cycles, true), |line| {
        if let Some(name) = line.strip_prefix("ack redrive ") {
            redriven.insert(name.to_string());
        }
        done |= line == "done";
    });
    assert!(done, "the last child took every execution to its end");
    println!(
        "redrive kill test: {kills} kills, {} starts and {} redrives acknowledged",
        started.len(),
        redriven.len()
    );

    let options = EngineOptions {
        clock: Arc::new(ManualClock::new(START_MS)),
        read_only: true,
        background_timers: false,
        ..EngineOptions::default()
    };
    let engine = Engine::open(&dir, options).expect("parent opens");
    let query = HistoryQuery {
        max_results: 1000,
        ..HistoryQuery::default()
    };
    let mut checked = 0u64;
    for (c, i) in (0..cycles).flat_map(|c| (0..PER_CHILD).map(move |i| (c, i))) {
        let name = format!("c{c}-e{i}");
        let arn = engine.execution_arn("flaky", &name);
        let described = match engine.describe_execution(&arn) {
            Ok(described) => described,
            Err(e) => {
                assert_eq!(e.aws_name(), "ExecutionDoesNotExist", "{name}: {e}");
                assert!(
                    !started.contains(&name),
                    "acknowledged start of {name} lost"
                );
                continue;
            }
        };
        checked += 1;
        assert_eq!(described.status, ExecutionStatus::Succeeded, "{name}");
        assert_eq!(described.output, Some(expected_output(i)), "{name}");
        assert_eq!(described.redrive.redrive_count, 1, "{name}: one redrive");
        let page = engine.get_execution_history(&arn, &query).expect("history");
        check_sequence(0, &page.events).expect("contiguous from 1");
        let types: Vec<String> = page.to_aws_json()["events"]
            .as_array()
            .expect("events")
            .iter()
            .map(|e| e["type"].as_str().unwrap_or_default().to_string())
            .collect();
        let count = |kind: &str| types.iter().filter(|t| *t == kind).count();
        assert_eq!(count("ExecutionRedriven"), 1, "{name}: {types:?}");
        assert_eq!(count("ExecutionFailed"), 1, "{name}: {types:?}");
        assert_eq!(count("ExecutionSucceeded"), 1, "{name}: {types:?}");
        let redriven_at = types.iter().position(|t| t == "ExecutionRedriven");
        let failed_at = types.iter().position(|t| t == "TaskFailed");
        assert!(
            failed_at.is_some(),
            "{name}: the first run's TaskFailed: {types:?}"
        );
        assert!(
            failed_at < redriven_at,
            "{name}: the first run's TaskFailed is kept before the redrive: {types:?}"
        );
    }
    println!("redrive kill test: {checked} executions checked");
    assert!(checked >= started.len() as u64);
    for name in &redriven {
        let arn = engine.execution_arn("flaky", name);
        let described = engine.describe_execution(&arn).expect("exists");
        assert!(
            described.redrive.redrive_count >= 1,
            "acknowledged redrive of {name} lost"
        );
    }
}
