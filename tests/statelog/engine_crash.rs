//! Crash test: a child process (this test binary re-run in child mode) runs many executions of a
//! machine with slow task handlers (a Task, a Map of Tasks, a Pass) on a real data directory and
//! is SIGKILLed at seeded random moments: after reading a random number of its progress lines
//! (so the parent never sleeps). Each kill is followed by a new child on the same directory that
//! starts the same executions again (idempotent names) and goes on. A last child runs them all
//! to the end. Then every execution must be SUCCEEDED with the right output and a complete,
//! contiguous history (ids dense from 1, one outcome per scheduled task), and every start the
//! child acknowledged before a kill must exist.
//!
//! `STATELOG_CRASH_CYCLES` (default 100) and `STATELOG_CRASH_SEED` (default printed) tune it.

use crate::kill_common;
use kill_common::{kill_points, run_to_end, run_until_killed, seed_and_cycles, spawn_child};

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use statelog::engine::{Engine, EngineOptions, ExecutionStatus, HistoryQuery, TaskError};
use statelog::history::{check_sequence, EventDetails};

const CHILD_ENV: &str = "STATELOG_CRASH_CHILD_DIR";
const MODE_ENV: &str = "STATELOG_CRASH_CHILD_MODE";
const EXECUTIONS: u64 = 24;
const RESOURCE: &str = "arn:aws:lambda:us-east-1:000000000000:function:double";
const DEFINITION: &str = r#"{
  "StartAt": "First",
  "States": {
    "First": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:000000000000:function:double",
              "Parameters": {"v.$": "$.v"}, "ResultPath": "$.first", "Next": "Each"},
    "Each": {"Type": "Map", "ItemsPath": "$.items", "ResultPath": "$.each", "MaxConcurrency": 2,
             "ItemProcessor": {"StartAt": "Item", "States": {
               "Item": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:000000000000:function:double",
                        "Parameters": {"v.$": "$"}, "End": true}}},
             "Next": "Sum"},
    "Sum": {"Type": "Pass", "Parameters": {"first.$": "$.first.v", "each.$": "$.each[*].v"}, "End": true}
  }
}"#;

fn input(i: u64) -> String {
    json!({"v": i, "items": [i, i + 1, i + 2]}).to_string()
}

fn expected_output(i: u64) -> Value {
    json!({"first": 2 * i, "each": [2 * i, 2 * (i + 1), 2 * (i + 2)]})
}

fn child_engine(dir: &str) -> Engine {
    let engine = Engine::open(dir, EngineOptions::default()).expect("child opens the engine");
    engine.register_integration(RESOURCE, |input: Value, context: Value| async move {
        println!("call {}", context["AttemptId"].as_str().unwrap_or("?"));
        let jitter_ms = input["v"].as_u64().unwrap_or(0) % 3 + 1;
        tokio::time::sleep(Duration::from_millis(jitter_ms)).await;
        let v = input["v"]
            .as_u64()
            .ok_or_else(|| TaskError::new("Bad", "no v"))?;
        Ok(json!({"v": 2 * v}))
    });
    engine
}

/// Child mode: does nothing unless the parent set `STATELOG_CRASH_CHILD_DIR`.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let finish = std::env::var(MODE_ENV).is_ok_and(|m| m == "finish");
    let engine = child_engine(&dir);
    engine
        .create_state_machine("crashy", DEFINITION, None)
        .expect("creates (or finds) the machine");
    let mut arns = Vec::new();
    for i in 0..EXECUTIONS {
        let name = format!("e{i}");
        match engine.start_execution("crashy", Some(&name), &input(i)) {
            Ok(started) => arns.push(started.execution_arn),
            // Closed in an earlier life: its name is taken for good.
            Err(e) if e.aws_name() == "ExecutionAlreadyExists" => {
                arns.push(engine.execution_arn("crashy", &name))
            }
            Err(e) => panic!("start {name}: {e}"),
        }
        println!("ack {name}");
    }
    if finish {
        for arn in &arns {
            engine.wait_until_closed(arn).expect("closes");
        }
        println!("done");
    } else {
        for arn in &arns {
            let _ = engine.wait_until_closed(arn);
        }
        println!("done");
    }
}

fn spawn(dir: &str, finish: bool) -> std::process::Child {
    let mode = if finish { "finish" } else { "crash" };
    spawn_child(
        module_path!(),
        "crash_child",
        &[(CHILD_ENV, dir.to_string()), (MODE_ENV, mode.to_string())],
    )
}

#[test]
fn killed_children_lose_nothing_and_every_execution_finishes() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let (seed, cycles) = seed_and_cycles("engine crash test", 0x5eed_1234_abcd, 100);
    let mut rng = kill_points(seed);
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().to_str().expect("utf-8 path").to_string();
    let mut acknowledged = BTreeSet::new();
    let mut calls: HashMap<String, usize> = HashMap::new();
    let mut kills = 0;
    for _ in 0..cycles {
        let lines_before_kill = 1 + rng.below(30);
        let killed = run_until_killed(spawn(&dir, false), lines_before_kill, |line| {
            if let Some(name) = line.strip_prefix("ack ") {
                acknowledged.insert(name.to_string());
            }
            if let Some(attempt) = line.strip_prefix("call ") {
                *calls.entry(attempt.to_string()).or_default() += 1;
            }
            line.starts_with("ack ") || line.starts_with("call ")
        });
        kills += usize::from(killed);
    }
    let mut done = false;
    run_to_end(spawn(&dir, true), |line| {
        if let Some(attempt) = line.strip_prefix("call ") {
            *calls.entry(attempt.to_string()).or_default() += 1;
        }
        done |= line == "done";
    });
    assert!(done);
    println!(
        "engine crash test: {kills} kills, {} handler calls for {} distinct attempts",
        calls.values().sum::<usize>(),
        calls.len()
    );

    let options = EngineOptions {
        read_only: true,
        background_timers: false,
        ..EngineOptions::default()
    };
    let engine = Engine::open(&dir, options).expect("parent opens");
    let engine = Arc::new(engine);
    for name in &acknowledged {
        let arn = engine.execution_arn("crashy", name);
        assert!(
            engine.describe_execution(&arn).is_ok(),
            "acknowledged {name} lost"
        );
    }
    for i in 0..EXECUTIONS {
        let arn = engine.execution_arn("crashy", &format!("e{i}"));
        let d = engine.describe_execution(&arn).expect("exists");
        assert_eq!(d.status, ExecutionStatus::Succeeded, "e{i}: {d:?}");
        assert_eq!(d.output, Some(expected_output(i)), "e{i}");
        let query = HistoryQuery {
            max_results: 1000,
            ..HistoryQuery::default()
        };
        let events = engine
            .get_execution_history(&arn, &query)
            .expect("history")
            .events;
        check_sequence(0, &events).expect("contiguous ids from 1");
        assert_eq!(events.len() as u32, d.event_count);
        assert!(matches!(
            events[0].details,
            EventDetails::ExecutionStarted(_)
        ));
        assert!(matches!(
            events.last().map(|e| &e.details),
            Some(EventDetails::ExecutionSucceeded(_))
        ));
        let scheduled = events
            .iter()
            .filter(|e| matches!(e.details, EventDetails::TaskScheduled(_)))
            .count();
        let succeeded = events
            .iter()
            .filter(|e| matches!(e.details, EventDetails::TaskSucceeded(_)))
            .count();
        assert_eq!(scheduled, 4, "e{i}: one First and three Items");
        assert_eq!(succeeded, 4, "e{i}: exactly one outcome per task");
    }
}
