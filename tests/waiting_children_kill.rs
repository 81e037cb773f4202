//! Crash test of running `.sync` children with SIGKILL: each process (this test binary re-run in
//! child mode) starts parent executions of its own whose Task runs a child execution through
//! `arn:aws:states:::states:startExecution.sync:2` (named after the parent, so a start repeated
//! after a crash finds the same child) and waits for it; the child execution's own Task calls a
//! handler that takes a few milliseconds. It also waits for the previous process's parents,
//! which its open recovered (parents waiting on children, children running). The test SIGKILLs
//! each process after a seeded random number of its progress lines and starts the next on the
//! same directory. A last process takes everything to its end. Then every parent that exists
//! (every acknowledged one must) has succeeded with its child's output, with one `TaskSucceeded`
//! for its Task; its child exists and succeeded; there is exactly one child per parent; and
//! every history is whole and contiguous.
//!
//! `STATELOG_CRASH_CYCLES` (default 40) and `STATELOG_CRASH_SEED` (default printed) tune it.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use statelog::clock::ManualClock;
use statelog::engine::{
    Engine, EngineOptions, ExecutionStatus, HistoryQuery, ListExecutions, TaskError,
};
use statelog::history::check_sequence;

const CHILD_ENV: &str = "STATELOG_CHILDREN_KILL_DIR";
const CYCLE_ENV: &str = "STATELOG_CHILDREN_KILL_CYCLE";
const MODE_ENV: &str = "STATELOG_CHILDREN_KILL_MODE";
const START_MS: u64 = 1_704_067_200_000;
/// Parent executions each process starts.
const PER_PROCESS: u64 = 8;
const RESOURCE: &str = "arn:aws:lambda:us-east-1:000000000000:function:slow-double";
const KID: &str = r#"{
  "StartAt": "Double",
  "States": {
    "Double": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:000000000000:function:slow-double",
               "Parameters": {"n.$": "$.n"}, "End": true}
  }
}"#;

fn parent_definition(kid_arn: &str) -> String {
    format!(
        r#"{{"StartAt":"Run","States":{{"Run":{{"Type":"Task",
        "Resource":"arn:aws:states:::states:startExecution.sync:2",
        "Parameters":{{"StateMachineArn":"{kid_arn}","Name.$":"States.Format('kid-{{}}', $.name)",
            "Input":{{"n.$":"$.n"}}}},
        "ResultSelector":{{"out.$":"$.Output"}},
        "End":true}}}}}}"#
    )
}

fn expected_output(i: u64) -> Value {
    json!({"out": {"doubled": 2 * i}})
}

fn open_engine(dir: &str, read_only: bool) -> Engine {
    let options = EngineOptions {
        clock: Arc::new(ManualClock::new(START_MS)),
        background_timers: false,
        entropy_seed: Some(13),
        read_only,
        ..EngineOptions::default()
    };
    let engine = Engine::open(dir, options).expect("opens the engine");
    // Real milliseconds in the killed process only, so that kills find children running.
    engine.register_integration(RESOURCE, |input: Value, _context: Value| async move {
        let n = input["n"]
            .as_u64()
            .ok_or_else(|| TaskError::new("Bad", "no n"))?;
        tokio::time::sleep(Duration::from_millis(n % 3 + 1)).await;
        println!("call {n}");
        Ok(json!({"doubled": 2 * n}))
    });
    engine
}

/// Child mode: does nothing unless the parent set `STATELOG_CHILDREN_KILL_DIR`.
#[test]
fn children_kill_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let engine = open_engine(&dir, false);
    let kid = engine
        .create_state_machine("kid", KID, None)
        .expect("creates (or finds) the machine");
    engine
        .create_state_machine("parent", &parent_definition(&kid.state_machine_arn), None)
        .expect("creates (or finds) the machine");
    let cycle: u64 = std::env::var(CYCLE_ENV).expect("cycle").parse().expect("n");
    let finish = std::env::var(MODE_ENV).is_ok_and(|m| m == "finish");
    let mut arns = Vec::new();
    // The previous process's parents (every earlier one's for the last process), then its own.
    let first = if finish { 0 } else { cycle.saturating_sub(1) };
    for c in first..cycle {
        for i in 0..PER_PROCESS {
            let arn = engine.execution_arn("parent", &format!("c{c}-p{i}"));
            if engine.describe_execution(&arn).is_ok() {
                arns.push(arn);
            }
        }
    }
    if !finish {
        for i in 0..PER_PROCESS {
            let name = format!("c{cycle}-p{i}");
            let input = json!({"n": i, "name": name}).to_string();
            let started = engine
                .start_execution("parent", Some(&name), &input)
                .expect("starts");
            arns.push(started.execution_arn);
            println!("ack {name}");
        }
    }
    for arn in &arns {
        let closed = engine.wait_until_closed(arn).expect("closes");
        println!("closed {} {:?}", closed.name, closed.status);
    }
    println!("done");
}

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn spawn_child(dir: &str, cycle: u64, finish: bool) -> std::process::Child {
    let exe = std::env::current_exe().expect("test binary path");
    Command::new(exe)
        .args([
            "--exact",
            "children_kill_child",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD_ENV, dir)
        .env(CYCLE_ENV, cycle.to_string())
        .env(MODE_ENV, if finish { "finish" } else { "crash" })
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("child starts")
}

#[test]
fn killed_engines_finish_every_sync_child_once() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let seed: u64 = std::env::var("STATELOG_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x0c41_1d5e_eed5);
    let cycles: u64 = std::env::var("STATELOG_CRASH_CYCLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    println!("children kill test: seed {seed}, {cycles} cycles (STATELOG_CRASH_SEED to replay)");
    let mut rng = XorShift(seed | 1);
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().to_str().expect("utf-8 path").to_string();
    let mut acknowledged = BTreeSet::new();
    let mut kills = 0u64;
    for cycle in 0..cycles {
        let mut child = spawn_child(&dir, cycle, false);
        let stdout = child.stdout.take().expect("piped");
        // "ack" and "closed" for each parent and "call" for each child's handler, and "closed"
        // for each of the previous process's parents.
        let lines_before_kill = 1 + rng.next() % (4 * PER_PROCESS);
        let (mut read, mut killed) = (0u64, false);
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(name) = line.strip_prefix("ack ") {
                acknowledged.insert(name.to_string());
            }
            if line == "done" {
                continue;
            }
            read += 1;
            if read >= lines_before_kill {
                child.kill().expect("SIGKILL");
                kills += 1;
                killed = true;
                break;
            }
        }
        let status = child.wait().expect("child reaped");
        assert!(
            status.success() || killed,
            "cycle {cycle}: child failed on its own: {status}"
        );
    }
    let mut child = spawn_child(&dir, cycles, true);
    let stdout = child.stdout.take().expect("piped");
    // Read to the end: a closed pipe would fail the process's last prints.
    let mut done = false;
    for line in BufReader::new(stdout).lines().map_while(Result::ok) {
        done |= line == "done";
    }
    assert!(
        child.wait().expect("reaped").success(),
        "the last process finishes"
    );
    assert!(done, "the last process saw every parent close");
    println!(
        "children kill test: {kills} kills, {} parents acknowledged before a kill",
        acknowledged.len()
    );

    let engine = open_engine(&dir, true);
    let query = HistoryQuery {
        max_results: 1000,
        ..HistoryQuery::default()
    };
    let types = |arn: &str| -> Vec<String> {
        let page = engine.get_execution_history(arn, &query).expect("history");
        check_sequence(0, &page.events).expect("contiguous from 1");
        page.to_aws_json()["events"]
            .as_array()
            .expect("events")
            .iter()
            .map(|e| e["type"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    let mut parents = 0u64;
    for (c, i) in (0..cycles).flat_map(|c| (0..PER_PROCESS).map(move |i| (c, i))) {
        let name = format!("c{c}-p{i}");
        let arn = engine.execution_arn("parent", &name);
        let parent = match engine.describe_execution(&arn) {
            Ok(parent) => parent,
            Err(e) => {
                assert_eq!(e.aws_name(), "ExecutionDoesNotExist", "{name}: {e}");
                assert!(!acknowledged.contains(&name), "acknowledged {name} lost");
                continue;
            }
        };
        parents += 1;
        assert_eq!(
            parent.status,
            ExecutionStatus::Succeeded,
            "{name}: {parent:?}"
        );
        assert_eq!(parent.output, Some(expected_output(i)), "{name}");
        let parent_types = types(&arn);
        let count = |kind: &str| parent_types.iter().filter(|t| *t == kind).count();
        assert_eq!(count("TaskSucceeded"), 1, "{name}: {parent_types:?}");
        assert_eq!(count("TaskFailed"), 0, "{name}: {parent_types:?}");
        let kid_arn = engine.execution_arn("kid", &format!("kid-{name}"));
        let kid = engine.describe_execution(&kid_arn).expect("child exists");
        assert_eq!(kid.status, ExecutionStatus::Succeeded, "kid-{name}");
        assert_eq!(kid.output, Some(json!({"doubled": 2 * i})), "kid-{name}");
        types(&kid_arn);
    }
    println!("children kill test: {parents} parents checked");
    let mut kids = 0u64;
    let mut next_token = None;
    loop {
        let page = engine
            .list_executions(&ListExecutions {
                state_machine: Some("kid".to_string()),
                max_results: 1000,
                next_token,
                ..ListExecutions::default()
            })
            .expect("lists");
        kids += page.executions.len() as u64;
        next_token = page.next_token;
        if next_token.is_none() {
            break;
        }
    }
    assert_eq!(kids, parents, "one child per parent");
}
