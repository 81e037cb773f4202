//! Crash test of compaction with SIGKILL: a child process (this test binary re-run in child mode)
//! opens a real data directory on a manual clock one day later than the last child, starts
//! executions (short Pass chains that close at once, and every fifth one a year-long Wait that
//! stays open) and compacts beside them on a thread of its own, with a retention of 10 days, so
//! the closed executions of earlier children expire and their segments are deleted or copied
//! forward while new ones are appended. The parent SIGKILLs it after a seeded random number of
//! its progress lines, often in the middle of a compaction, and starts the next child on the same
//! directory. Then the parent opens the directory on the final clock and checks, for every
//! execution a child acknowledged:
//! - an open execution is still open, with its history whole and contiguous (never compacted
//!   away, whatever its age);
//! - a closed execution still within retention exists, succeeded with the right output, and its
//!   history is whole and contiguous (nothing retained is lost);
//! - an execution that is gone is one that could have expired (nothing retained went missing),
//!   and a visible one closed within retention (nothing expired came back).
//!
//! Finally one more compaction on the recovered directory succeeds and changes no history.
//!
//! `STATELOG_CRASH_CYCLES` (default 40) and `STATELOG_CRASH_SEED` (default printed) tune it.

use crate::engine_common;
use crate::kill_common;
use engine_common::{CHAIN, LONG_WAIT, START_MS};
use kill_common::{kill_points, run_until_killed, seed_and_cycles, spawn_child};

use std::collections::HashMap;
use std::sync::mpsc::sync_channel;
use std::sync::Arc;

use serde_json::{json, Value};
use statelog::clock::ManualClock;
use statelog::engine::{Engine, EngineOptions, ExecutionStatus, HistoryQuery};
use statelog::history::check_sequence;

const CHILD_ENV: &str = "STATELOG_RETENTION_KILL_DIR";
const NOW_ENV: &str = "STATELOG_RETENTION_KILL_NOW_MS";
const CYCLE_ENV: &str = "STATELOG_RETENTION_KILL_CYCLE";
const DAY_MS: u64 = 24 * 3600 * 1000;
const RETENTION_MS: u64 = 10 * DAY_MS;
/// Small segments, so that a few children's executions fill many of them.
const SEGMENT_SIZE_BYTES: u64 = 16 * 1024;
/// The most children (days) one run takes, whatever `STATELOG_CRASH_CYCLES` asks.
const CYCLES_MAX: u64 = 280;
/// Executions one child starts when it is not killed first.
const STARTS_PER_CHILD: u64 = 40;

fn options(now_ms: u64) -> EngineOptions {
    EngineOptions {
        clock: Arc::new(ManualClock::new(now_ms)),
        background_timers: false,
        retention_ms: RETENTION_MS,
        segment_size_bytes: SEGMENT_SIZE_BYTES,
        entropy_seed: Some(7),
        ..EngineOptions::default()
    }
}

fn chain_input(name: &str) -> Value {
    json!({ "name": name })
}

fn chain_output(name: &str) -> Value {
    json!({ "name": name, "one": {"pad": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"} })
}

/// The start time of the child that started `name` (`c{cycle}-{i}`).
fn started_ms(name: &str) -> u64 {
    let cycle: u64 = name[1..name.find('-').expect("c<cycle>-<i>")]
        .parse()
        .expect("cycle number");
    START_MS + cycle * DAY_MS
}

/// Child mode: does nothing unless the parent set `STATELOG_RETENTION_KILL_DIR`.
#[test]
fn retention_kill_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let now_ms: u64 = std::env::var(NOW_ENV).expect("now").parse().expect("ms");
    let cycle: u64 = std::env::var(CYCLE_ENV).expect("cycle").parse().expect("n");
    let engine = Arc::new(Engine::open(&dir, options(now_ms)).expect("child opens the engine"));
    engine
        .create_state_machine("chain", CHAIN, None)
        .expect("creates (or finds) the machine");
    engine
        .create_state_machine("wait", LONG_WAIT, None)
        .expect("creates (or finds) the machine");
    let (wake, woken) = sync_channel::<()>(1);
    let compactor = {
        let engine = Arc::clone(&engine);
        std::thread::spawn(move || {
            for () in woken {
                println!("compacting");
                let summary = engine.compact().expect("compacts");
                println!(
                    "compacted {} {}",
                    summary.segments_deleted_count, summary.records_copied_count
                );
            }
        })
    };
    for i in 0..STARTS_PER_CHILD {
        let name = format!("c{cycle}-{i}");
        if i % 5 == 4 {
            engine
                .start_execution("wait", Some(&name), "{}")
                .expect("starts");
            println!("ack wait {name}");
        } else {
            let input = chain_input(&name).to_string();
            engine
                .start_execution("chain", Some(&name), &input)
                .expect("starts");
            println!("ack chain {name}");
        }
        if i % 8 == 7 {
            // One compaction at a time; a wake-up while one runs is dropped.
            let _ = wake.try_send(());
        }
    }
    drop(wake);
    compactor.join().expect("the compaction thread ends");
    println!("done");
}

fn spawn(dir: &str, cycle: u64) -> std::process::Child {
    spawn_child(
        module_path!(),
        "retention_kill_child",
        &[
            (CHILD_ENV, dir.to_string()),
            (NOW_ENV, (START_MS + cycle * DAY_MS).to_string()),
            (CYCLE_ENV, cycle.to_string()),
        ],
    )
}

fn history(engine: &Engine, arn: &str) -> Vec<Value> {
    let query = HistoryQuery {
        max_results: 1000,
        ..HistoryQuery::default()
    };
    let page = engine.get_execution_history(arn, &query).expect("history");
    check_sequence(0, &page.events).expect("contiguous from 1");
    page.to_aws_json()["events"]
        .as_array()
        .expect("events")
        .clone()
}

#[test]
fn killed_compactions_keep_every_retained_history() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let (seed, cycles) = seed_and_cycles("retention kill test", 0x0c0f_fee5_eed5, 40);
    // A child's clock is a day after the last one's: the open executions' 300-day Wait (and the
    // 1-year limit) must outlast the run.
    let cycles = cycles.min(CYCLES_MAX);
    let mut rng = kill_points(seed);
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().to_str().expect("utf-8 path").to_string();
    // Acknowledged executions: name -> machine.
    let mut acknowledged: HashMap<String, &'static str> = HashMap::new();
    let (mut kills, mut kills_in_compaction, mut deleted_total) = (0u64, 0u64, 0u64);
    for cycle in 0..cycles {
        let lines_before_kill = 1 + rng.below(STARTS_PER_CHILD + 10);
        let mut compacting = false;
        let killed = run_until_killed(spawn(&dir, cycle), lines_before_kill, |line| {
            if let Some(name) = line.strip_prefix("ack chain ") {
                acknowledged.insert(name.to_string(), "chain");
            } else if let Some(name) = line.strip_prefix("ack wait ") {
                acknowledged.insert(name.to_string(), "wait");
            } else if line == "compacting" {
                compacting = true;
            } else if let Some(counts) = line.strip_prefix("compacted ") {
                compacting = false;
                deleted_total += counts
                    .split(' ')
                    .next()
                    .and_then(|n| n.parse::<u64>().ok())
                    .expect("segments deleted");
            } else {
                return line == "done";
            }
            true
        });
        kills += u64::from(killed);
        kills_in_compaction += u64::from(killed && compacting);
    }
    println!(
        "retention kill test: {kills} kills, {kills_in_compaction} during a compaction, \
         {deleted_total} segments deleted by completed compactions, {} executions acknowledged",
        acknowledged.len()
    );
    assert!(
        deleted_total > 0 || cycles < 20,
        "the compactions deleted segments"
    );

    let now_ms = START_MS + cycles * DAY_MS;
    let engine = Engine::open(&dir, options(now_ms)).expect("parent opens");
    let mut histories: HashMap<String, Vec<Value>> = HashMap::new();
    let (mut kept, mut gone) = (0u64, 0u64);
    for (name, machine) in &acknowledged {
        let arn = engine.execution_arn(machine, name);
        match engine.describe_execution(&arn) {
            Ok(mut described) => {
                if *machine == "chain" && described.status == ExecutionStatus::Running {
                    // Killed before its Pass states were recorded: this open finishes it.
                    described = engine.wait_until_closed(&arn).expect("closes");
                }
                if *machine == "wait" {
                    assert_eq!(described.status, ExecutionStatus::Running, "{name}");
                } else {
                    assert_eq!(described.status, ExecutionStatus::Succeeded, "{name}");
                    assert_eq!(described.output, Some(chain_output(name)), "{name}");
                    let stop_ms = described.stop_ms.expect("closed");
                    assert!(
                        stop_ms + RETENTION_MS > now_ms,
                        "{name} closed at {stop_ms} is past retention yet visible"
                    );
                }
                let events = history(&engine, &arn);
                assert_eq!(events[0]["type"], "ExecutionStarted", "{name}");
                histories.insert(arn, events);
                kept += 1;
            }
            Err(e) => {
                assert_eq!(e.aws_name(), "ExecutionDoesNotExist", "{name}: {e}");
                assert_eq!(*machine, "chain", "open execution {name} lost");
                assert!(
                    started_ms(name) + RETENTION_MS <= now_ms,
                    "{name}, started within retention, lost"
                );
                gone += 1;
            }
        }
    }
    println!("retention kill test: {kept} executions kept, {gone} expired");
    assert!(gone > 0 || cycles < 20, "some executions expired");

    // The recovered directory compacts again, and no kept history changes.
    engine.compact().expect("compacts the recovered log");
    for (arn, events) in &histories {
        assert_eq!(
            &history(&engine, arn),
            events,
            "{arn} after one more compaction"
        );
    }
}
