//! Crash at every point of a compaction, on the WAL's simulated disk: the "process" halts at op
//! index k of the compaction (every later disk call fails), the disk then loses what was not
//! synced (and, in a second sweep, directory operations not made durable), and the engine
//! reopens on what is left. Each time: every retained history reads back exactly as before,
//! histories are contiguous, the open execution is intact, nothing expired is visible, and a
//! second compaction on the recovered disk succeeds.

use crate::engine_common;
use engine_common::{open_on_sim, CHAIN, LONG_WAIT};

use std::collections::HashMap;
use std::sync::Arc;

use statelog::clock::ManualClock;
use statelog::engine::{Engine, EngineOptions, Error, HistoryQuery};
use statelog::history::check_sequence;
use statelog_wal::storage::sim::{CrashMode, FaultPlan, SimStorage};
use statelog_wal::Durability;

const DAY_MS: u64 = 24 * 3600 * 1000;
const START_MS: u64 = 1_704_067_200_000;
const SEGMENT_SIZE_BYTES: u64 = 8 * 1024;
const DIR: &str = "/data";

fn open(disk: &SimStorage, clock: &ManualClock) -> Result<Engine, String> {
    let options = EngineOptions {
        clock: Arc::new(clock.clone()),
        background_timers: false,
        entropy_seed: Some(5),
        retention_ms: 90 * DAY_MS,
        ..EngineOptions::default()
    };
    open_on_sim(
        disk,
        DIR,
        Durability::GroupCommit,
        SEGMENT_SIZE_BYTES,
        options,
    )
}

fn history(engine: &Engine, arn: &str) -> Result<serde_json::Value, Error> {
    let query = HistoryQuery {
        max_results: 1000,
        ..HistoryQuery::default()
    };
    let page = engine.get_execution_history(arn, &query)?;
    check_sequence(0, &page.events).expect("contiguous from 1");
    Ok(page.to_aws_json())
}

struct Fixture {
    base: SimStorage,
    clock: ManualClock,
    expired: Vec<String>,
    kept: HashMap<String, serde_json::Value>,
}

fn fixture() -> Fixture {
    let disk = SimStorage::new();
    let clock = ManualClock::new(START_MS);
    let engine = open(&disk, &clock).expect("opens");
    engine
        .create_state_machine("chain", CHAIN, None)
        .expect("creates");
    engine
        .create_state_machine("wait", LONG_WAIT, None)
        .expect("creates");
    let mut arns = vec![
        engine
            .start_execution("wait", Some("year"), "{}")
            .expect("starts")
            .execution_arn,
    ];
    let mut expired = Vec::new();
    for i in 0..40 {
        // Open executions interleaved with the expiring ones: the compaction copies enough of
        // them forward to write out and sync its copies in several chunks.
        arns.push(
            engine
                .start_execution("wait", Some(&format!("keep{i}")), "{}")
                .expect("starts")
                .execution_arn,
        );
        expired.push(
            engine
                .start_execution("chain", Some(&format!("old{i}")), "{}")
                .expect("starts")
                .execution_arn,
        );
    }
    clock.advance_ms(60 * DAY_MS);
    for i in 0..20 {
        arns.push(
            engine
                .start_execution("chain", Some(&format!("new{i}")), "{}")
                .expect("starts")
                .execution_arn,
        );
    }
    clock.advance_ms(31 * DAY_MS);
    let kept = arns
        .iter()
        .map(|a| (a.clone(), history(&engine, a).expect("reads")))
        .collect();
    drop(engine);
    Fixture {
        base: disk.crash(CrashMode::DropUnsynced),
        clock,
        expired,
        kept,
    }
}

fn check(engine: &Engine, f: &Fixture, what: &str) {
    for (arn, before) in &f.kept {
        let after = history(engine, arn).unwrap_or_else(|e| panic!("{what}: {arn}: {e}"));
        assert_eq!(&after, before, "{what}: {arn}");
    }
    for arn in &f.expired {
        assert!(
            matches!(
                engine.describe_execution(arn),
                Err(Error::ExecutionDoesNotExist { .. })
            ),
            "{what}: expired {arn} visible"
        );
    }
}

#[test]
fn a_crash_at_any_point_of_a_compaction_loses_nothing_retained() {
    let f = fixture();
    // How many disk ops a full compaction takes.
    let probe = f.base.crash(CrashMode::DropUnsynced);
    let engine = open(&probe, &f.clock).expect("opens");
    let before = probe.op_count();
    let report = engine.compact().expect("compacts");
    assert!(report.segments_deleted_count > 0, "{report:?}");
    // The interleaved open executions are copied forward (in several write/sync chunks).
    assert!(report.records_copied_count >= 40, "{report:?}");
    let ops = probe.op_count() - before;
    check(&engine, &f, "no crash");
    drop(engine);

    let mut crashes = 0;
    for mode in [CrashMode::DropUnsynced, CrashMode::LoseDirOps] {
        for k in 0..=ops {
            let disk = f.base.crash(CrashMode::DropUnsynced);
            let engine = open(&disk, &f.clock).expect("opens");
            disk.set_faults(FaultPlan {
                halt_at_op: Some(disk.op_count() + k),
                ..FaultPlan::default()
            });
            let _ = engine.compact();
            drop(engine);
            let rebooted = disk.crash(mode);
            let what = format!("{mode:?} at op {k} of {ops}");
            let engine = open(&rebooted, &f.clock).unwrap_or_else(|e| panic!("{what}: {e}"));
            check(&engine, &f, &what);
            engine
                .compact()
                .unwrap_or_else(|e| panic!("{what}: compaction after recovery: {e}"));
            check(&engine, &f, &format!("{what}, compacted again"));
            crashes += 1;
        }
    }
    println!("compaction crash sweep: {crashes} crash points over {ops} ops");
}
