//! Retention and compaction on the manual clock: a closed execution disappears from every API
//! exactly `retention_ms` after its close; compaction deletes segments of expired records,
//! copies the live ones forward, and every retained history reads back the same, also after a
//! restart; an open execution waiting for most of a year is never compacted away; a soak of one
//! simulated year at a steady rate keeps the directory bounded.

use crate::engine_common;

use std::path::Path;
use std::sync::Arc;

use statelog::clock::{Clock, ManualClock};
use statelog::engine::{
    Engine, EngineOptions, Error, ExecutionStatus, HistoryQuery, ListExecutions,
};
use statelog_wal::Durability;

const DAY_MS: u64 = 24 * 3600 * 1000;
const START_MS: u64 = engine_common::START_MS;
const SEGMENT_SIZE_BYTES: u64 = 16 * 1024;

const CHAIN: &str = r#"{
  "StartAt": "One",
  "States": {
    "One": {"Type": "Pass", "Result": {"pad": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}, "ResultPath": "$.one", "Next": "Two"},
    "Two": {"Type": "Pass", "End": true}
  }
}"#;

/// Waits about 300 days, then succeeds.
const LONG_WAIT: &str = r#"{
  "StartAt": "Sleep",
  "States": {"Sleep": {"Type": "Wait", "Seconds": 25920000, "Next": "Done"}, "Done": {"Type": "Pass", "End": true}}
}"#;

fn open(dir: &Path, clock: &ManualClock, retention_ms: u64) -> Engine {
    let options = EngineOptions {
        clock: Arc::new(clock.clone()),
        background_timers: false,
        entropy_seed: Some(3),
        segment_size_bytes: SEGMENT_SIZE_BYTES,
        durability: Durability::NoSync,
        retention_ms,
        ..EngineOptions::default()
    };
    Engine::open(dir, options).expect("engine opens")
}

fn history_json(engine: &Engine, arn: &str) -> serde_json::Value {
    let query = HistoryQuery {
        max_results: 1000,
        ..HistoryQuery::default()
    };
    engine
        .get_execution_history(arn, &query)
        .expect("history")
        .to_aws_json()
}

fn dir_size_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .expect("lists")
        .filter_map(Result::ok)
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

fn all_listed(engine: &Engine) -> Vec<String> {
    engine
        .list_executions(&ListExecutions {
            max_results: 1000,
            ..ListExecutions::default()
        })
        .expect("lists")
        .executions
        .into_iter()
        .map(|e| e.execution_arn)
        .collect()
}

#[test]
fn an_execution_disappears_from_every_api_at_its_retention_edge() {
    let dir = tempfile::tempdir().expect("dir");
    let clock = ManualClock::new(START_MS);
    let engine = open(dir.path(), &clock, 30 * DAY_MS);
    engine
        .create_state_machine("chain", CHAIN, None)
        .expect("creates");
    let arn = engine
        .start_execution("chain", Some("old"), "{}")
        .expect("starts")
        .execution_arn;
    let closed = engine
        .describe_execution(&arn)
        .expect("d")
        .stop_ms
        .expect("closed");
    clock.advance_ms(closed + 30 * DAY_MS - 1 - clock.now_ms());
    assert!(engine.describe_execution(&arn).is_ok());
    assert_eq!(all_listed(&engine), vec![arn.clone()]);
    clock.advance_ms(1);
    assert!(matches!(
        engine.describe_execution(&arn),
        Err(Error::ExecutionDoesNotExist { .. })
    ));
    assert!(matches!(
        engine.get_execution_history(&arn, &HistoryQuery::default()),
        Err(Error::ExecutionDoesNotExist { .. })
    ));
    assert!(all_listed(&engine).is_empty());
    assert!(matches!(
        engine.describe_redrive(&arn),
        Err(Error::ExecutionDoesNotExist { .. })
    ));
    // Also after a restart, before any compaction.
    drop(engine);
    let engine = open(dir.path(), &clock, 30 * DAY_MS);
    assert!(matches!(
        engine.describe_execution(&arn),
        Err(Error::ExecutionDoesNotExist { .. })
    ));
}

#[test]
fn compaction_reclaims_expired_segments_and_keeps_live_histories_intact() {
    let dir = tempfile::tempdir().expect("dir");
    let clock = ManualClock::new(START_MS);
    let retention_ms = 90 * DAY_MS;
    let engine = open(dir.path(), &clock, retention_ms);
    engine
        .create_state_machine("chain", CHAIN, None)
        .expect("creates");
    engine
        .create_state_machine("wait", LONG_WAIT, None)
        .expect("creates");
    let waiting = engine
        .start_execution("wait", Some("year"), r#"{"w": 1}"#)
        .expect("starts")
        .execution_arn;
    let mut old = Vec::new();
    for i in 0..200 {
        old.push(
            engine
                .start_execution(
                    "chain",
                    Some(&format!("old-{i}")),
                    &format!("{{\"i\": {i}}}"),
                )
                .expect("starts")
                .execution_arn,
        );
    }
    clock.advance_ms(60 * DAY_MS);
    let mut young = Vec::new();
    for i in 0..100 {
        young.push(
            engine
                .start_execution(
                    "chain",
                    Some(&format!("young-{i}")),
                    &format!("{{\"i\": {i}}}"),
                )
                .expect("starts")
                .execution_arn,
        );
    }
    let young_histories: Vec<_> = young.iter().map(|a| history_json(&engine, a)).collect();
    let waiting_history = history_json(&engine, &waiting);
    let size_before = dir_size_bytes(dir.path());
    clock.advance_ms(31 * DAY_MS);
    let report = engine.compact().expect("compacts");
    assert_eq!(report.executions_expired_count, 200, "{report:?}");
    assert!(report.segments_deleted_count > 0, "{report:?}");
    assert!(report.records_dropped_count >= 200, "{report:?}");
    assert!(report.bytes_reclaimed() > 0, "{report:?}");
    assert!(dir_size_bytes(dir.path()) < size_before);
    for arn in &old {
        assert!(matches!(
            engine.describe_execution(arn),
            Err(Error::ExecutionDoesNotExist { .. })
        ));
    }
    for (arn, before) in young.iter().zip(&young_histories) {
        assert_eq!(&history_json(&engine, arn), before, "{arn}");
    }
    assert_eq!(history_json(&engine, &waiting), waiting_history);
    // A second compaction with nothing expired changes nothing visible.
    engine.compact().expect("compacts again");
    // Restart: the index is rebuilt from the copies, in their original order.
    drop(engine);
    let engine = open(dir.path(), &clock, retention_ms);
    for (arn, before) in young.iter().zip(&young_histories) {
        assert_eq!(&history_json(&engine, arn), before, "{arn} after restart");
    }
    assert_eq!(history_json(&engine, &waiting), waiting_history);
    for arn in &old {
        assert!(engine.describe_execution(arn).is_err());
    }
    // The year-long wait, never compacted away, finishes when due.
    clock.advance_ms(300 * DAY_MS);
    engine.run_due_timers();
    assert_eq!(
        engine.describe_execution(&waiting).expect("d").status,
        ExecutionStatus::Succeeded
    );
    // New work after compaction and restart appends and reads back normally.
    let fresh = engine
        .start_execution("chain", Some("fresh"), "{}")
        .expect("starts")
        .execution_arn;
    assert_eq!(
        engine.describe_execution(&fresh).expect("d").status,
        ExecutionStatus::Succeeded
    );
}

#[test]
fn soak_one_simulated_year_keeps_the_directory_bounded() {
    let dir = tempfile::tempdir().expect("dir");
    let clock = ManualClock::new(START_MS);
    let retention_ms = 90 * DAY_MS;
    let engine = open(dir.path(), &clock, retention_ms);
    engine
        .create_state_machine("chain", CHAIN, None)
        .expect("creates");
    let per_day = 4u64;
    let mut last_compaction = None;
    let mut sizes = Vec::new();
    let mut bytes_per_execution = 0u64;
    for day in 0..365u64 {
        for i in 0..per_day {
            engine
                .start_execution("chain", Some(&format!("d{day}-{i}")), "{\"n\": 1}")
                .expect("starts");
            clock.advance_ms(DAY_MS / per_day);
        }
        if day == 30 {
            // Before anything expires: the directory over what was written.
            bytes_per_execution = dir_size_bytes(dir.path()) / (31 * per_day);
        }
        engine
            .compact_if_due(&mut last_compaction, DAY_MS)
            .expect("compacts");
        sizes.push(dir_size_bytes(dir.path()));
    }
    let live_bytes = (retention_ms / DAY_MS) * per_day * bytes_per_execution;
    // Slack: copies of live records made by the last compactions, the active and the
    // preallocated segments.
    let bound = 2 * live_bytes + 4 * SEGMENT_SIZE_BYTES;
    let peak = sizes.iter().copied().max().unwrap_or(0);
    let at_day = |d: usize| sizes[d];
    eprintln!(
        "soak: {per_day}/day for 365 days, retention 90 days, ~{bytes_per_execution} B/execution, \
         live estimate {live_bytes} B, bound {bound} B; directory at day 90 {} B, 180 {} B, \
         270 {} B, 364 {} B, peak {peak} B",
        at_day(90),
        at_day(180),
        at_day(270),
        at_day(364)
    );
    assert!(peak <= bound, "peak {peak} > bound {bound}");
    // Levels off: the last quarter is no bigger than the second, within the slack.
    assert!(at_day(364) <= at_day(180) + 4 * SEGMENT_SIZE_BYTES + live_bytes / 2);
    // Executions closed in the last 90 days; the one closed exactly 90 days ago is gone.
    let listed = all_listed(&engine).len() as u64;
    assert!(
        (90 * per_day - 1..=90 * per_day).contains(&listed),
        "{listed} listed"
    );
}
