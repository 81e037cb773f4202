//! Crash test of a running Distributed Map with SIGKILL: the first process starts one parent
//! execution whose Distributed Map runs `ITEMS` items as STANDARD child executions
//! (MaxConcurrency 16); each child's Task calls a handler that appends `<index> <child ARN>
//! <process id>` to a file opened with O_APPEND and answers after a few milliseconds. The test SIGKILLs each
//! process after a seeded random number of its progress lines and opens the next one on the
//! same directory: recovery re-dispatches the parent's Map Run, which finds every child it
//! started before by its derived name. A last process takes the run to its end. Then the parent
//! succeeded with every item's result exactly once, in item order; the Map Run has exactly one
//! child per item; and no item ran in two children (each index in the file names one child
//! ARN only: a handler call repeated after a crash is the same child's task, at least once).
//!
//! The same with EXPRESS children: each child's end is recorded in a Map Run record (grouped,
//! unsynced: a SIGKILL does not lose what was written), and a child holds its concurrency slot
//! until its end is, so a resumed run reruns only the children in flight at the kill: at most
//! MaxConcurrency items per kill (at least once, as AWS's Express children). Every item's result
//! is in the output exactly once, in order, and for each killed process at most MaxConcurrency
//! of the items it called ran again in a later process.
//!
//! `STATELOG_CRASH_CYCLES` (default 12) and `STATELOG_CRASH_SEED` (default printed) tune it.

use crate::kill_common;
use kill_common::{kill_points, run_to_end, run_until_killed, seed_and_cycles, spawn_child};

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use statelog::clock::ManualClock;
use statelog::engine::{Engine, EngineOptions, ExecutionStatus, TaskError};

const CHILD_ENV: &str = "STATELOG_MAP_RUN_KILL_DIR";
const MODE_ENV: &str = "STATELOG_MAP_RUN_KILL_MODE";
const TYPE_ENV: &str = "STATELOG_MAP_RUN_KILL_TYPE";
const START_MS: u64 = 1_704_067_200_000;
/// Items of the Map Run.
const ITEMS: u64 = 300;
/// The Map's MaxConcurrency.
const MAX_CONCURRENCY: usize = 16;
const RESOURCE: &str = "arn:aws:lambda:us-east-1:000000000000:function:map-item";

fn definition(execution_type: &str) -> String {
    format!(
        r#"{{"StartAt":"M","States":{{"M":{{"Type":"Map","ItemsPath":"$.items","MaxConcurrency":{MAX_CONCURRENCY},
        "ItemSelector":{{"n.$":"$$.Map.Item.Value"}},
        "ItemProcessor":{{"ProcessorConfig":{{"Mode":"DISTRIBUTED","ExecutionType":"{execution_type}"}},
          "StartAt":"Work","States":{{"Work":{{"Type":"Task","Resource":"{RESOURCE}",
            "Parameters":{{"n.$":"$.n","child.$":"$$.Execution.Id"}},"End":true}}}}}},
        "End":true}}}}}}"#
    )
}

fn open_engine(dir: &str, read_only: bool) -> Engine {
    let options = EngineOptions {
        clock: Arc::new(ManualClock::new(START_MS)),
        background_timers: false,
        entropy_seed: Some(17),
        read_only,
        ..EngineOptions::default()
    };
    let engine = Engine::open(dir, options).expect("opens the engine");
    if !read_only {
        let calls = format!("{dir}/calls");
        engine.register_integration(RESOURCE, move |input: Value, _context: Value| {
            let calls = calls.clone();
            async move {
                let n = input["n"]
                    .as_u64()
                    .ok_or_else(|| TaskError::new("Bad", "no n"))?;
                let child = input["child"].as_str().unwrap_or_default().to_string();
                let mut file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&calls)
                    .map_err(|e| TaskError::new("Io", e.to_string()))?;
                // One write(2) of the whole line: a kill cannot tear it.
                let process = std::process::id();
                file.write_all(format!("{n} {child} {process}\n").as_bytes())
                    .map_err(|e| TaskError::new("Io", e.to_string()))?;
                tokio::time::sleep(Duration::from_millis(n % 3 + 1)).await;
                println!("call {n}");
                Ok(json!({"n": n, "squared": n * n}))
            }
        });
    }
    engine
}

/// Child mode: does nothing unless the parent set `STATELOG_MAP_RUN_KILL_DIR`.
#[test]
fn map_run_kill_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let engine = open_engine(&dir, false);
    let execution_type = std::env::var(TYPE_ENV).unwrap_or_else(|_| "STANDARD".to_string());
    engine
        .create_state_machine("parent", &definition(&execution_type), None)
        .expect("creates (or finds) the machine");
    let arn = engine.execution_arn("parent", "p");
    if engine.describe_execution(&arn).is_err() {
        let items: Vec<u64> = (0..ITEMS).collect();
        engine
            .start_execution("parent", Some("p"), &json!({ "items": items }).to_string())
            .expect("starts");
        println!("ack");
    }
    let closed = engine.wait_until_closed(&arn).expect("closes");
    println!("closed {:?}", closed.status);
    println!("done");
}

fn spawn(dir: &str, finish: bool, execution_type: &str) -> std::process::Child {
    let mode = if finish { "finish" } else { "crash" };
    spawn_child(
        module_path!(),
        "map_run_kill_child",
        &[
            (CHILD_ENV, dir.to_string()),
            (MODE_ENV, mode.to_string()),
            (TYPE_ENV, execution_type.to_string()),
        ],
    )
}

/// Runs the kill cycles over a fresh directory with children of `execution_type`, then a last
/// process to the end; the directory (kept by the returned guard) holds the log and the calls.
fn kill_and_finish(execution_type: &str, default_seed: u64) -> tempfile::TempDir {
    let name = format!("map run kill test ({execution_type})");
    let (seed, cycles) = seed_and_cycles(&name, default_seed, 12);
    let mut rng = kill_points(seed);
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().to_str().expect("utf-8 path").to_string();
    let mut kills = 0u64;
    for _ in 0..cycles {
        let lines_before_kill = 1 + rng.below(ITEMS / 4);
        let child = spawn(&dir, false, execution_type);
        let killed = run_until_killed(child, lines_before_kill, |line| line.starts_with("call "));
        kills += u64::from(killed);
    }
    let mut done = false;
    run_to_end(spawn(&dir, true, execution_type), |line| {
        done |= line == "done"
    });
    assert!(done, "the last process saw the parent close");
    println!("{name}: {kills} kills");
    tmp
}

/// The parent succeeded with every item's result exactly once, in item order; its ARN.
fn assert_every_item_once(engine: &Engine) -> String {
    let arn = engine.execution_arn("parent", "p");
    let parent = engine.describe_execution(&arn).expect("the parent exists");
    assert_eq!(parent.status, ExecutionStatus::Succeeded, "{parent:?}");
    let expected: Vec<Value> = (0..ITEMS)
        .map(|n| json!({"n": n, "squared": n * n}))
        .collect();
    assert_eq!(
        parent.output,
        Some(Value::Array(expected)),
        "every item once, in order"
    );
    arn
}

/// One line of the calls file: the item's index, the child's ARN, the calling process's id.
fn call_line(line: &str) -> (u64, &str, u32) {
    let mut fields = line.splitn(3, ' ');
    let n = fields.next().and_then(|n| n.parse().ok());
    let child = fields.next();
    let process = fields.next().and_then(|p| p.parse().ok());
    match (n, child, process) {
        (Some(n), Some(child), Some(process)) => (n, child, process),
        _ => panic!("a calls line is `<index> <child> <process>`: {line:?}"),
    }
}

/// EXPRESS children: their ends are recorded, so a crash reruns only the children in flight
/// (at least once, as AWS's Express children): for each killed process, at most MaxConcurrency
/// of the items it called ran again later. No item is lost and each result is in the output
/// once, in order.
#[test]
fn killed_engines_finish_an_express_map_run_rerunning_at_most_max_concurrency_items_per_kill() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let tmp = kill_and_finish("EXPRESS", 0x5e4_7c1d_5eed);
    let dir = tmp.path().to_str().expect("utf-8 path").to_string();
    let engine = open_engine(&dir, true);
    assert_every_item_once(&engine);
    let calls = std::fs::read_to_string(format!("{dir}/calls")).expect("the calls file");
    // Processes in the order they first called; each item's calling processes.
    let mut processes: Vec<u32> = Vec::new();
    let mut ran_by: BTreeMap<u64, Vec<u32>> = BTreeMap::new();
    for line in calls.lines() {
        let (n, _child, process) = call_line(line);
        if !processes.contains(&process) {
            processes.push(process);
        }
        ran_by.entry(n).or_default().push(process);
    }
    assert_eq!(ran_by.len() as u64, ITEMS, "every item ran");
    let mut rerun_items = 0usize;
    for (position, process) in processes.iter().enumerate() {
        let later = &processes[position + 1..];
        let rerun: Vec<u64> = ran_by
            .iter()
            .filter(|(_, by)| by.contains(process) && by.iter().any(|p| later.contains(p)))
            .map(|(n, _)| *n)
            .collect();
        assert!(
            rerun.len() <= MAX_CONCURRENCY,
            "process {process} (#{position}) called {} items that ran again after it: {rerun:?}",
            rerun.len()
        );
        rerun_items += rerun.len();
    }
    // Within one process an item runs once (a recorded end is never run again).
    for (n, by) in &ran_by {
        let distinct: BTreeSet<&u32> = by.iter().collect();
        assert_eq!(
            distinct.len(),
            by.len(),
            "item {n} ran twice in one process: {by:?}"
        );
    }
    println!(
        "express map run kill test: {} calls for {ITEMS} items, {} processes, {rerun_items} reruns",
        calls.lines().count(),
        processes.len()
    );
}

#[test]
fn killed_engines_finish_a_map_run_with_every_item_once() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let tmp = kill_and_finish("STANDARD", 0x3a9_2c1d_5eed);
    let dir = tmp.path().to_str().expect("utf-8 path").to_string();
    let engine = open_engine(&dir, true);
    let arn = assert_every_item_once(&engine);

    let runs = engine.list_map_runs(&arn).expect("map runs");
    assert_eq!(runs.len(), 1, "one Map Run");
    let mut children = BTreeSet::new();
    let mut token: Option<String> = None;
    loop {
        let page = engine
            .list_map_run_executions(&runs[0].map_run_arn, None, 1000, token.as_deref())
            .expect("children");
        for child in &page.executions {
            assert_eq!(child.status, ExecutionStatus::Succeeded, "{child:?}");
            children.insert(child.execution_arn.clone());
        }
        token = page.next_token;
        if token.is_none() {
            break;
        }
    }
    assert_eq!(children.len() as u64, ITEMS, "one child per item");

    let calls = std::fs::read_to_string(format!("{dir}/calls")).expect("the calls file");
    let mut ran_in: BTreeMap<u64, BTreeSet<String>> = BTreeMap::new();
    for line in calls.lines() {
        let (n, child, _process) = call_line(line);
        ran_in.entry(n).or_default().insert(child.to_string());
    }
    assert_eq!(ran_in.len() as u64, ITEMS, "every item ran");
    for (n, kids) in &ran_in {
        assert_eq!(kids.len(), 1, "item {n} ran in two children: {kids:?}");
        let kid = kids.iter().next().expect("one");
        assert!(
            children.contains(kid),
            "item {n} ran in {kid}, not a child of the run"
        );
    }
    println!(
        "map run kill test: {} calls for {ITEMS} items",
        calls.lines().count()
    );
}
