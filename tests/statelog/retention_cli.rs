//! `statelog wal compact DIR` driven as a script would: stdout and stderr are pipes (not a
//! terminal), so no progress bar is drawn and the output is exactly one summary line whose first
//! four fields keep their historical format. The log is written by an engine on a manual clock
//! set in 2024, so its closed executions are long past the 90-day retention for the binary's
//! system clock, while an open one (a one-year Wait) is kept.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use statelog::clock::ManualClock;
use statelog::engine::{Engine, EngineOptions, HistoryQuery};
use statelog_wal::Durability;

const BIN: &str = env!("CARGO_BIN_EXE_statelog");
const START_MS: u64 = 1_704_067_200_000;
const SEGMENT_SIZE_BYTES: u64 = 16 * 1024;
const CHAIN: &str = r#"{"StartAt": "One", "States": {
  "One": {"Type": "Pass", "Result": {"pad": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}, "Next": "Two"},
  "Two": {"Type": "Pass", "End": true}}}"#;
const YEAR_WAIT: &str =
    r#"{"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 31000000, "End": true}}}"#;

fn engine(dir: &Path) -> Engine {
    let options = EngineOptions {
        clock: Arc::new(ManualClock::new(START_MS)),
        background_timers: false,
        durability: Durability::GroupCommit,
        segment_size_bytes: SEGMENT_SIZE_BYTES,
        ..EngineOptions::default()
    };
    Engine::open(dir, options).expect("engine opens")
}

/// The numbers of `field N` in the summary line, in order.
fn parse_fields(line: &str) -> Vec<(String, u64)> {
    let body = line
        .strip_prefix("compacted: ")
        .unwrap_or_else(|| panic!("summary line prefix: {line:?}"));
    body.split(", ")
        .map(|field| {
            let (name, value) = field
                .rsplit_once(' ')
                .unwrap_or_else(|| panic!("field {field:?}"));
            let value = value
                .parse()
                .unwrap_or_else(|_| panic!("number in {field:?}"));
            (name.to_string(), value)
        })
        .collect()
}

#[test]
fn compact_off_a_terminal_prints_one_summary_line_and_keeps_the_open_execution() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (open_arn, before) = {
        let engine = engine(dir.path());
        engine
            .create_state_machine("chain", CHAIN, None)
            .expect("creates");
        engine
            .create_state_machine("wait", YEAR_WAIT, None)
            .expect("creates");
        let open_arn = engine
            .start_execution("wait", Some("year"), "{}")
            .expect("starts")
            .execution_arn;
        for i in 0..200 {
            engine
                .start_execution("chain", Some(&format!("old{i}")), "{}")
                .expect("starts");
        }
        let before = engine
            .get_execution_history(&open_arn, &HistoryQuery::default())
            .expect("reads");
        (open_arn, format!("{:?}", before.events))
    };
    let out = Command::new(BIN)
        .args(["wal", "compact"])
        .arg(dir.path())
        .output()
        .expect("statelog runs");
    let stdout = String::from_utf8(out.stdout).expect("utf-8 stdout");
    let stderr = String::from_utf8(out.stderr).expect("utf-8 stderr");
    assert!(out.status.success(), "stdout {stdout:?} stderr {stderr:?}");
    // No bar, no carriage returns, nothing on stderr: only the summary line.
    assert_eq!(stderr, "", "nothing drawn off a terminal");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "one summary line: {stdout:?}");
    assert!(!stdout.contains('\r'), "{stdout:?}");
    let fields = parse_fields(lines[0]);
    let names: Vec<&str> = fields.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        [
            "segments scanned",
            "deleted",
            "records copied",
            "bytes reclaimed",
            "records dropped",
            "executions expired",
            "bytes copied"
        ],
        "the first four fields keep their order, later ones are appended"
    );
    let value = |name: &str| {
        fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
            .expect("field present")
    };
    assert!(value("segments scanned") >= 2, "{stdout}");
    assert!(value("deleted") >= 1, "{stdout}");
    assert!(value("deleted") <= value("segments scanned"), "{stdout}");
    assert!(value("bytes reclaimed") > 0, "{stdout}");
    // Those in the active segment (never compacted) are only invisible, not yet dropped.
    let expired = value("executions expired");
    assert!((100..=200).contains(&expired), "{stdout}");
    assert!(value("records dropped") >= expired, "{stdout}");
    // The open execution and the machines were copied forward: their bytes are counted.
    assert!(value("records copied") >= 3, "{stdout}");
    assert!(value("bytes copied") > 0, "{stdout}");

    // The open execution survived whole; a second compaction finds nothing expired.
    let engine = engine(dir.path());
    let after = engine
        .get_execution_history(&open_arn, &HistoryQuery::default())
        .expect("open execution kept");
    assert_eq!(format!("{:?}", after.events), before);
    drop(engine);
    let again = Command::new(BIN)
        .args(["wal", "compact"])
        .arg(dir.path())
        .output()
        .expect("statelog runs");
    assert!(again.status.success());
    let again = String::from_utf8(again.stdout).expect("utf-8");
    let again = parse_fields(again.trim_end());
    assert_eq!(again[5], ("executions expired".to_string(), 0));
}
