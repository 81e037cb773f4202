//! A log written by a newer statelog is refused by version, never misread (issue 14).
//!
//! For each record format of the store's log (the event batch envelope, the history inside
//! it, state machine and catalog records), a record whose version byte is one past the newest
//! this build reads is appended to a real log, framed with a valid checksum. Then:
//! - `Engine::open` refuses the directory with a store error that names the format, the
//!   version found and the newest this build reads;
//! - `statelog wal verify` exits 3 ("could not check"), not 1 ("corrupt"), with an `error:`
//!   line naming segment, LSN, kind, format and version;
//! - `statelog history` refuses with the same words.
//!
//! The other direction (every older version this build knows still reads) is the fixture
//! corpus: `tests/statelog/fixture_logs.rs` and the format tests in `store/src/formats.rs`.

use std::ops::ControlFlow;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use statelog::clock::ManualClock;
use statelog::engine::{Engine, EngineOptions};
use statelog::history::encoding::{self, EventBatch};
use statelog::history::{EventDetails, EventId, HistoryEvent};
use statelog::store::{BatchHeaderRef, Format, FORMATS, KIND_CATALOG, KIND_EVENTS, KIND_MACHINE};
use statelog_wal::{Lsn, RecordKind, Wal, WalOptions};

const START_MS: u64 = 1_704_067_200_000;
const SEGMENT_SIZE_BYTES: u64 = 1 << 20;
const PASS: &str = r#"{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}"#;

fn options(clock: &ManualClock) -> EngineOptions {
    EngineOptions {
        clock: Arc::new(clock.clone()),
        background_timers: false,
        entropy_seed: Some(3),
        segment_size_bytes: SEGMENT_SIZE_BYTES,
        ..EngineOptions::default()
    }
}

fn format(name: &str) -> Format {
    FORMATS
        .into_iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no format {name}"))
}

fn wal_options() -> WalOptions {
    WalOptions {
        segment_size_bytes: SEGMENT_SIZE_BYTES,
        ..WalOptions::default()
    }
}

/// The payload of the first record of `kind` in the log at `dir`.
fn first_payload(dir: &Path, kind: u8) -> Vec<u8> {
    let (wal, _) = Wal::open(dir, wal_options()).expect("wal opens");
    let mut found = None;
    wal.scan_from(Lsn(0), |record| {
        if record.kind.get() == kind {
            found = Some(record.payload.to_vec());
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    })
    .expect("scans");
    found.unwrap_or_else(|| panic!("no record of kind {kind}"))
}

fn append(dir: &Path, kind: u8, payload: &[u8]) -> Lsn {
    let (wal, _) = Wal::open(dir, wal_options()).expect("wal opens");
    let kind = RecordKind::new(kind).expect("a kind");
    wal.append_batch(&[(kind, payload)]).expect("appends").first
}

/// An event batch continuing `arn` at event `id`, whose envelope version byte is `envelope`
/// and whose history version byte is `history`.
fn batch(arn: &str, id: u32, envelope: u8, history: u8) -> Vec<u8> {
    let mut bytes = Vec::new();
    let header = BatchHeaderRef {
        execution_arn: arn,
        first_event_id: id,
        last_event_id: id,
        started: None,
        status: None,
    };
    statelog::store::encode_batch_head_into(&header, &mut bytes).expect("encodes");
    bytes[0] = envelope;
    let head_len = bytes.len();
    bytes.extend(
        encoding::encode(&EventBatch {
            execution_arn: arn.to_string(),
            events: vec![HistoryEvent {
                id: EventId(id),
                previous_event_id: id - 1,
                timestamp_ms: START_MS,
                details: EventDetails::ParallelStateStarted,
                scope: Vec::new(),
                timer: None,
            }],
        })
        .expect("encodes"),
    );
    bytes[head_len] = history;
    bytes
}

#[test]
fn a_record_from_a_newer_format_version_is_refused_by_name_everywhere() {
    let base = tempfile::tempdir().expect("temp dir");
    let clock = ManualClock::new(START_MS);
    let engine = Engine::open(base.path(), options(&clock)).expect("opens");
    engine
        .create_state_machine("m", PASS, None)
        .expect("creates");
    engine.create_activity("work").expect("creates");
    let arn = engine
        .start_execution("m", Some("e"), "{}")
        .expect("starts")
        .execution_arn;
    let events = engine
        .describe_execution(&arn)
        .expect("describes")
        .event_count;
    drop(engine);

    let envelope = format("event batch envelope");
    let history = format("history");
    let machine = format("state machine");
    let catalog = format("catalog");
    let cases: Vec<(Format, u8, Vec<u8>)> = vec![
        (
            envelope,
            KIND_EVENTS,
            batch(&arn, events + 1, envelope.newest + 1, history.newest),
        ),
        (
            history,
            KIND_EVENTS,
            batch(&arn, events + 1, envelope.newest, history.newest + 1),
        ),
        (machine, KIND_MACHINE, {
            let mut bytes = first_payload(base.path(), KIND_MACHINE);
            bytes[0] = machine.newest + 1;
            bytes
        }),
        (catalog, KIND_CATALOG, {
            let mut bytes = first_payload(base.path(), KIND_CATALOG);
            bytes[0] = catalog.newest + 1;
            bytes
        }),
    ];
    for (format, kind, payload) in cases {
        let dir = tempfile::tempdir().expect("temp dir");
        for entry in std::fs::read_dir(base.path()).expect("reads") {
            let entry = entry.expect("entry");
            std::fs::copy(entry.path(), dir.path().join(entry.file_name())).expect("copies");
        }
        // The record itself is well formed for this build but for its version byte: with the
        // newest version it reads, it reads.
        let lsn = append(dir.path(), kind, &payload);
        let words = format!(
            "{} format version {}, written by a newer statelog: this build reads versions up to {}",
            format.name,
            format.newest + 1,
            format.newest
        );

        let refused = Engine::open(dir.path(), options(&clock)).expect_err("refused");
        let message = refused.to_string();
        assert!(
            message.contains(&format!("record at lsn {lsn} (kind {kind})"))
                && message.contains(&words),
            "{}: {message}",
            format.name
        );

        let verify = Command::new(env!("CARGO_BIN_EXE_statelog"))
            .args(["wal", "verify"])
            .arg(dir.path())
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&verify.stderr);
        assert_eq!(verify.status.code(), Some(3), "{}: {stderr}", format.name);
        assert!(
            stderr.contains(&format!("error: segment 1 lsn {lsn} kind {kind}: {words}")),
            "{}: {stderr}",
            format.name
        );

        let shown = Command::new(env!("CARGO_BIN_EXE_statelog"))
            .args(["history", &arn, "--data-dir"])
            .arg(dir.path())
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&shown.stderr);
        assert!(!shown.status.success(), "{}", format.name);
        assert!(stderr.contains(&words), "{}: {stderr}", format.name);
    }
}
