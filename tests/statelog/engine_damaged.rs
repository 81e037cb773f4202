//! Records that must always read back, and one that does not (issue 13, item 1).
//!
//! - State data nested past `serde_json`'s recursion limit (a Pass state's `Parameters`
//!   wrapping `$` around a 127-level input) is committed, described, listed, read as history
//!   and recovered after a restart. Before, the event committed but never decoded again: every
//!   read answered an error and the data directory no longer opened.
//! - A chain that keeps nesting deeper fails the execution with `States.Runtime` at
//!   `PAYLOAD_JSON_DEPTH_MAX`, decided before the commit, and everything it committed reads.
//! - One record that passes its checksum but does not decode (crafted with the store's own
//!   encoder, then damaged) makes only its execution damaged: the engine opens, lists it among
//!   `damaged_executions` with its LSN, answers `ExecutionDamaged` for it, and serves every
//!   other execution. `statelog wal verify` names it and exits 1.
//!
//! Every engine here runs on a thread with a 2 MiB stack, a tokio worker's.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use serde_json::{json, Value};
use statelog::clock::ManualClock;
use statelog::engine::{
    Engine, EngineOptions, Error, ExecutionStatus, HistoryQuery, ListExecutions,
};
use statelog::history::encoding::{self, EventBatch};
use statelog::history::{EventDetails, EventId, HistoryEvent, StateExited};
use statelog::limits::{JSON_READER_DEPTH_DEFAULT, PAYLOAD_JSON_DEPTH_MAX};
use statelog::store::{BatchHeaderRef, KIND_EVENTS};
use statelog_wal::{Lsn, RecordKind, Wal, WalOptions};

const START_MS: u64 = 1_704_067_200_000;
const SEGMENT_SIZE_BYTES: u64 = 1 << 20;

/// Runs `test` on a thread with a 2 MiB stack.
fn on_small_stack(test: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(test)
        .expect("spawns")
        .join()
        .expect("the test thread finishes");
}

fn open(dir: &Path, clock: &ManualClock) -> Engine {
    let options = EngineOptions {
        clock: Arc::new(clock.clone()),
        background_timers: false,
        entropy_seed: Some(7),
        segment_size_bytes: SEGMENT_SIZE_BYTES,
        ..EngineOptions::default()
    };
    Engine::open(dir, options).expect("engine opens")
}

/// JSON text nested `depth` levels deep (objects inside arrays), the deepest being `1`.
fn nested_text(depth: usize) -> String {
    let mut text = String::from("1");
    for level in 0..depth {
        text = if level % 2 == 0 {
            format!("[{text}]")
        } else {
            format!("{{\"k\":{text}}}")
        };
    }
    text
}

fn depth(value: &Value) -> usize {
    statelog::history::depth::depth_up_to(value, usize::MAX)
}

fn history(engine: &Engine, execution_arn: &str) -> Result<Vec<HistoryEvent>, Error> {
    let query = HistoryQuery {
        max_results: 1000,
        ..HistoryQuery::default()
    };
    Ok(engine.get_execution_history(execution_arn, &query)?.events)
}

const WRAP_WAIT_WRAP: &str = r#"{
  "StartAt": "Wrap",
  "States": {
    "Wrap": {"Type": "Pass", "Parameters": {"a": {"b": {"c.$": "$"}}}, "Next": "Sleep"},
    "Sleep": {"Type": "Wait", "Seconds": 10, "Next": "Again"},
    "Again": {"Type": "Pass", "Parameters": {"a": {"b": {"c.$": "$"}}}, "End": true}
  }
}"#;

#[test]
fn state_data_nested_past_the_reader_limit_reads_back_and_survives_restarts() {
    on_small_stack(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        let clock = ManualClock::new(START_MS);
        let engine = open(dir.path(), &clock);
        engine
            .create_state_machine("deep", WRAP_WAIT_WRAP, None)
            .expect("creates");
        // The deepest input the reader accepts: 127 levels.
        let input_depth = JSON_READER_DEPTH_DEFAULT - 1;
        let started = engine
            .start_execution("deep", Some("e"), &nested_text(input_depth))
            .expect("starts");
        let arn = started.execution_arn;
        let d = engine.describe_execution(&arn).expect("describes");
        assert_eq!(d.status, ExecutionStatus::Running);
        let events = history(&engine, &arn).expect("history reads");
        let wrapped = events
            .iter()
            .find_map(|e| e.details.state_exited().map(|x| x.output.clone()))
            .expect("Wrap exited");
        assert_eq!(depth(&wrapped), input_depth + 3);
        drop(engine);

        // Reopen: the open execution's deep events are decoded and folded again.
        let engine = open(dir.path(), &clock);
        assert!(engine.damaged_executions().is_empty());
        assert_eq!(
            engine.describe_execution(&arn).expect("describes").status,
            ExecutionStatus::Running
        );
        clock.advance_ms(10_000);
        engine.run_due_timers();
        engine.wait_idle();
        let d = engine.describe_execution(&arn).expect("describes");
        assert_eq!(d.status, ExecutionStatus::Succeeded, "{d:?}");
        assert_eq!(depth(&d.output.expect("output")), input_depth + 6);
        drop(engine);

        let engine = open(dir.path(), &clock);
        let d = engine.describe_execution(&arn).expect("describes");
        assert_eq!(d.status, ExecutionStatus::Succeeded);
        assert_eq!(
            history(&engine, &arn).expect("reads").len(),
            d.event_count as usize
        );
        let listed = engine
            .list_executions(&ListExecutions::default())
            .expect("lists");
        assert_eq!(listed.executions.len(), 1);
    });
}

#[test]
fn inputs_nest_up_to_the_payload_depth_limit() {
    on_small_stack(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        let clock = ManualClock::new(START_MS);
        let engine = open(dir.path(), &clock);
        engine
            .create_state_machine("pass", PASS, None)
            .expect("creates");
        // Past the JSON reader's default (127 levels) up to the payload limit: accepted.
        let arn = engine
            .start_execution("pass", Some("deep"), &nested_text(PAYLOAD_JSON_DEPTH_MAX))
            .expect("starts")
            .execution_arn;
        let d = engine.describe_execution(&arn).expect("describes");
        assert_eq!(d.status, ExecutionStatus::Succeeded);
        assert_eq!(depth(&d.output.expect("output")), PAYLOAD_JSON_DEPTH_MAX);
        // One level more: refused before anything is written, naming the limit.
        let refused = engine.start_execution(
            "pass",
            Some("deeper"),
            &nested_text(PAYLOAD_JSON_DEPTH_MAX + 1),
        );
        match refused {
            Err(Error::InvalidExecutionInput { reason }) => {
                assert!(
                    reason
                        .to_string()
                        .contains(&PAYLOAD_JSON_DEPTH_MAX.to_string()),
                    "{reason}"
                );
            }
            other => panic!("expected InvalidExecutionInput, got {other:?}"),
        }
        drop(engine);
        let engine = open(dir.path(), &clock);
        assert_eq!(
            history(&engine, &arn).expect("reads").len(),
            d.event_count as usize
        );
    });
}

/// A state that wraps its input eight levels deeper, looping back to itself until a field that
/// never appears does: only the depth limit ends it.
const WRAP_FOREVER: &str = r#"{
  "StartAt": "Wrap",
  "States": {
    "Wrap": {"Type": "Pass", "Parameters": {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h.$": "$"}}}}}}}}, "Next": "Again?"},
    "Again?": {"Type": "Choice", "Choices": [{"Variable": "$.never", "IsPresent": true, "Next": "Done"}], "Default": "Wrap"},
    "Done": {"Type": "Succeed"}
  }
}"#;

#[test]
fn nesting_past_the_payload_depth_limit_fails_with_states_runtime_before_the_commit() {
    on_small_stack(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        let clock = ManualClock::new(START_MS);
        let engine = open(dir.path(), &clock);
        engine
            .create_state_machine("forever", WRAP_FOREVER, None)
            .expect("creates");
        let started = engine
            .start_execution(
                "forever",
                Some("e"),
                &nested_text(JSON_READER_DEPTH_DEFAULT - 1),
            )
            .expect("starts");
        let arn = started.execution_arn;
        let d = engine.describe_execution(&arn).expect("describes");
        assert_eq!(d.status, ExecutionStatus::Failed, "{d:?}");
        assert_eq!(d.error.as_deref(), Some("States.Runtime"));
        let cause = d.cause.expect("a cause");
        assert!(cause.contains("'Wrap'"), "{cause}");
        assert!(
            cause.contains(&PAYLOAD_JSON_DEPTH_MAX.to_string()),
            "{cause}"
        );
        let events = history(&engine, &arn).expect("history reads");
        assert!(matches!(
            events.last().map(|e| &e.details),
            Some(EventDetails::ExecutionFailed(_))
        ));
        let deepest = events
            .iter()
            .filter_map(|e| e.details.payload())
            .map(depth)
            .max()
            .expect("payloads");
        assert!(deepest <= PAYLOAD_JSON_DEPTH_MAX, "{deepest}");
        assert!(deepest > PAYLOAD_JSON_DEPTH_MAX - 8, "{deepest}");
        drop(engine);
        let engine = open(dir.path(), &clock);
        assert_eq!(
            engine.describe_execution(&arn).expect("describes").status,
            ExecutionStatus::Failed
        );
        assert_eq!(history(&engine, &arn).expect("reads").len(), events.len());
    });
}

const SLEEP: &str = r#"{
  "StartAt": "Sleep",
  "States": {"Sleep": {"Type": "Wait", "Seconds": 25920000, "End": true}}
}"#;

const PASS: &str = r#"{"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}}"#;

/// Appends to the log at `dir` an event batch of `arn` holding one `WaitStateExited` (event
/// `id`), written with the store's own encoders, then damaged: one `}` of its output's JSON
/// text becomes `]`. The log frames it with a valid checksum. Returns its LSN.
fn append_undecodable(dir: &Path, arn: &str, id: u32) -> Lsn {
    let event = HistoryEvent {
        id: EventId(id),
        previous_event_id: id - 1,
        timestamp_ms: START_MS,
        details: EventDetails::WaitStateExited(StateExited {
            name: "Sleep".into(),
            output: json!({"damaged": "here"}).into(),
            output_truncated: false,
            assigned: None,
        }),
        scope: Vec::new(),
        timer: None,
    };
    let mut bytes = Vec::new();
    let header = BatchHeaderRef {
        execution_arn: arn,
        first_event_id: id,
        last_event_id: id,
        started: None,
        status: None,
    };
    statelog::store::encode_batch_head_into(&header, &mut bytes).expect("encodes");
    let mut history_bytes = encoding::encode(&EventBatch {
        execution_arn: arn.to_string(),
        events: vec![event],
    })
    .expect("encodes");
    let text = br#"{"damaged":"here"}"#;
    let at = history_bytes
        .windows(text.len())
        .position(|w| w == text)
        .expect("the output's text is in the record");
    history_bytes[at + text.len() - 1] = b']';
    bytes.extend_from_slice(&history_bytes);
    let options = WalOptions {
        segment_size_bytes: SEGMENT_SIZE_BYTES,
        ..WalOptions::default()
    };
    let (wal, _) = Wal::open(dir, options).expect("wal opens");
    let kind = RecordKind::new(KIND_EVENTS).expect("a kind");
    wal.append_batch(&[(kind, &bytes)]).expect("appends").first
}

fn is_damaged(result: Result<impl std::fmt::Debug, Error>, arn: &str, at: Lsn) {
    match result {
        Err(Error::ExecutionDamaged {
            execution_arn, lsn, ..
        }) => {
            assert_eq!(execution_arn, arn);
            assert_eq!(lsn, at.0);
        }
        other => panic!("expected ExecutionDamaged for {arn} at {at}, got {other:?}"),
    }
}

#[test]
fn one_undecodable_record_damages_only_its_execution() {
    on_small_stack(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        let clock = ManualClock::new(START_MS);
        let engine = open(dir.path(), &clock);
        engine
            .create_state_machine("sleep", SLEEP, None)
            .expect("creates");
        engine
            .create_state_machine("pass", PASS, None)
            .expect("creates");
        let victim = engine
            .start_execution("sleep", Some("victim"), "{}")
            .expect("starts")
            .execution_arn;
        let sleeper = engine
            .start_execution("sleep", Some("sleeper"), "{}")
            .expect("starts")
            .execution_arn;
        let done = engine
            .start_execution("pass", Some("done"), r#"{"x": 1}"#)
            .expect("starts")
            .execution_arn;
        let closed_victim = engine
            .start_execution("pass", Some("closed-victim"), "{}")
            .expect("starts")
            .execution_arn;
        let victim_events = engine.describe_execution(&victim).expect("d").event_count;
        let closed_events = engine
            .describe_execution(&closed_victim)
            .expect("d")
            .event_count;
        drop(engine);
        let bad = append_undecodable(dir.path(), &victim, victim_events + 1);
        let bad_closed = append_undecodable(dir.path(), &closed_victim, closed_events + 1);

        // `wal verify` decodes payloads: it names both records and exits 1.
        let verify = Command::new(env!("CARGO_BIN_EXE_statelog"))
            .args(["wal", "verify"])
            .arg(dir.path())
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&verify.stderr);
        assert_eq!(verify.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "undecodable: segment 1 lsn {bad} kind 1 execution {victim}:"
            )),
            "{stderr}"
        );
        assert!(stderr.contains(&format!("lsn {bad_closed} ")), "{stderr}");
        assert!(String::from_utf8_lossy(&verify.stdout).is_empty());

        // The engine opens; the open victim is damaged (its fold failed), nothing else.
        let engine = open(dir.path(), &clock);
        let damaged = engine.damaged_executions();
        assert_eq!(damaged.len(), 1, "{damaged:?}");
        assert_eq!(damaged[0].lsn, bad);
        assert_eq!(damaged[0].execution_arn.as_deref(), Some(victim.as_str()));
        is_damaged(engine.describe_execution(&victim), &victim, bad);
        is_damaged(history(&engine, &victim), &victim, bad);
        is_damaged(engine.stop_execution(&victim, None, None), &victim, bad);

        // Every other execution is served: describe, history, list, start, and it moves on.
        assert_eq!(
            engine.describe_execution(&done).expect("describes").output,
            Some(json!({"x": 1}))
        );
        assert!(!history(&engine, &done).expect("reads").is_empty());
        assert_eq!(
            engine
                .describe_execution(&sleeper)
                .expect("describes")
                .status,
            ExecutionStatus::Running
        );
        let listed = engine
            .list_executions(&ListExecutions::default())
            .expect("lists");
        assert!(listed.executions.len() >= 3);
        let fresh = engine
            .start_execution("pass", Some("fresh"), "{}")
            .expect("starts")
            .execution_arn;
        assert_eq!(
            engine.describe_execution(&fresh).expect("describes").status,
            ExecutionStatus::Succeeded
        );
        engine.stop_execution(&sleeper, None, None).expect("stops");

        // A closed execution is not read on open: its damage shows on the first read.
        is_damaged(
            engine.describe_execution(&closed_victim),
            &closed_victim,
            bad_closed,
        );
        assert_eq!(engine.damaged_executions().len(), 2);
        drop(engine);

        // And the directory keeps opening.
        let engine = open(dir.path(), &clock);
        is_damaged(engine.describe_execution(&victim), &victim, bad);
        assert_eq!(
            engine
                .describe_execution(&sleeper)
                .expect("describes")
                .status,
            ExecutionStatus::Aborted
        );
    });
}
