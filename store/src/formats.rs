//! formats: the tests that enforce the record-format rule of `ARCHITECTURE.md`: the bytes of a
//! record kind change only together with a bump of its format version and a new fixture log.
//!
//! Two checks, both over every format of [`FORMATS`]:
//! - Golden samples. One sample of every variant of every type a record holds (events from
//!   `history::samples`, machine, catalog and envelope records from here) is encoded at today's
//!   versions and compared with `tests/fixtures/formats/<stem>-v<N>.hex` for the current N.
//!   A field added, removed, retyped or moved, or a variant added or moved, changes some
//!   sample's bytes (or adds a sample) and fails here. The golden files of older versions must
//!   still decode through the version dispatch. `STATELOG_BLESS_FORMATS=1` writes the golden
//!   file of a new version once; it never rewrites one.
//! - Fixture logs. Every record of `tests/fixtures/logs/*/data` decodes; those written at
//!   today's version of their format encode again to exactly their bytes; and every format's
//!   current version occurs in some fixture (a bump without a new fixture fails).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use super::record::{
    self, decode_batch_header, decode_catalog, decode_machine, encode_batch, encode_catalog,
    encode_machine, BatchHeader, CatalogRecord, Format, MachineRecord, StartedHeader,
    BATCH_ENVELOPE_FORMAT, CATALOG_FORMAT, HISTORY_FORMAT, MACHINE_FORMAT,
};
use super::{ExecutionStatus, FORMATS};
use statelog_core::history::encoding::{self, EventBatch};
use statelog_core::history::{samples, EventDetails, TimerPurpose};

/// Where the golden files are (the workspace's `tests/`, one level above this crate).
const GOLDEN_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/formats");
/// Where the fixture logs are.
const FIXTURE_LOGS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/logs");
/// Set to `1` to write the golden file of a format version that has none.
const BLESS_ENV: &str = "STATELOG_BLESS_FORMATS";

/// An exhaustive `match` (no wildcard) naming every variant of an enum, and the list of those
/// names from the same tokens: a new variant does not compile until it is listed, and then the
/// tests want a sample of it.
macro_rules! variant_names {
    ($name:ident, $all:ident, $ty:ident: $($variant:ident),* $(,)?) => {
        fn $name(value: &$ty) -> &'static str {
            match value {
                $( $ty::$variant { .. } => stringify!($variant) ),*
            }
        }
        const $all: &[&str] = &[ $( stringify!($variant) ),* ];
    };
}

variant_names!(timer_purpose_name, TIMER_PURPOSES, TimerPurpose:
    Wait, RetryBackoff, TaskTimeout, ExecutionTimeout);
variant_names!(status_name, STATUSES, ExecutionStatus:
    Running, Succeeded, Failed, TimedOut, Aborted);
variant_names!(machine_name, MACHINE_RECORDS, MachineRecord: Created, Deleted, Updated);
variant_names!(catalog_name, CATALOG_RECORDS, CatalogRecord:
    ActivityCreated, ActivityDeleted, TagsSet, Redriven, VersionPublished, VersionDeleted,
    AliasSet, AliasDeleted);
use super::swf::{CloseStatus, SwfRecord, TypeKind};
variant_names!(swf_name, SWF_RECORDS, SwfRecord:
    DomainRegistered, DomainDeprecated, DomainUndeprecated, DomainDeleted, TypeRegistered,
    TypeDeprecated, TypeUndeprecated, TypeDeleted, TagsSet, Events);
variant_names!(close_status_name, CLOSE_STATUSES, CloseStatus:
    Completed, Failed, Canceled, Terminated, ContinuedAsNew, TimedOut);
variant_names!(type_kind_name, TYPE_KINDS, TypeKind: Workflow, Activity);
use super::map_runs::{ChildEndStatus, MapRunRecord};
variant_names!(map_run_name, MAP_RUN_RECORDS, MapRunRecord: Opened, Updated, ChildrenEnded);
variant_names!(child_end_status_name, CHILD_END_STATUSES, ChildEndStatus:
    Succeeded, Failed, TimedOut, Aborted);

/// The file stem of a format's golden files.
fn stem(format: &Format) -> &'static str {
    match format.name {
        "event batch envelope" => "envelope",
        "history" => "history",
        "state machine" => "machine",
        "catalog" => "catalog",
        "swf" => "swf",
        "map run" => "maprun",
        other => panic!("no golden file stem for format {other}: add one here"),
    }
}

/// One labelled sample of a format at today's version.
type Samples = Vec<(String, Vec<u8>)>;

fn history_samples() -> Samples {
    samples::events()
        .into_iter()
        .map(|event| {
            let label = event.details.type_name().to_string();
            let batch = EventBatch {
                execution_arn: "sample-execution".into(),
                events: vec![event],
            };
            (label, encoding::encode(&batch).expect("a sample encodes"))
        })
        .collect()
}

fn envelope_samples() -> Samples {
    let header = |started: bool, status: Option<ExecutionStatus>| BatchHeader {
        execution_arn: "sample-execution".into(),
        first_event_id: 3,
        last_event_id: 9,
        started: started.then(|| StartedHeader {
            state_machine_arn: "sample-machine".into(),
            start_ms: 1_704_067_200_000,
        }),
        status: status.map(|s| (s, 1_704_067_200_001)),
    };
    let statuses = [
        ExecutionStatus::Running,
        ExecutionStatus::Succeeded,
        ExecutionStatus::Failed,
        ExecutionStatus::TimedOut,
        ExecutionStatus::Aborted,
    ];
    let mut out = vec![(
        "continued".to_string(),
        encode_batch(&header(false, None), &[]).expect("encodes"),
    )];
    for status in statuses {
        let label = format!("started-{}", status_name(&status));
        let bytes = encode_batch(&header(true, Some(status)), &[]).expect("encodes");
        out.push((label, bytes));
    }
    out
}

fn machine_records() -> Vec<MachineRecord> {
    vec![
        MachineRecord::Created {
            name: "sample".into(),
            definition: r#"{"StartAt":"A","States":{"A":{"Type":"Succeed"}}}"#.into(),
            role_arn: "sample-role".into(),
            created_ms: 1,
            // The type that is not the default, so its byte shows.
            machine_type: super::MachineType::Express,
        },
        MachineRecord::Deleted {
            name: "sample".into(),
            deleted_ms: 2,
        },
        MachineRecord::Updated {
            name: "sample".into(),
            definition: r#"{"StartAt":"B","States":{"B":{"Type":"Succeed"}}}"#.into(),
            role_arn: "sample-role-2".into(),
            updated_ms: 3,
        },
    ]
}

fn catalog_records() -> Vec<CatalogRecord> {
    vec![
        CatalogRecord::ActivityCreated {
            name: "sample".into(),
            created_ms: 1,
        },
        CatalogRecord::ActivityDeleted {
            name: "sample".into(),
            deleted_ms: 2,
        },
        CatalogRecord::TagsSet {
            resource_arn: "sample-activity".into(),
            tags: vec![("k".into(), "v".into()), ("team".into(), String::new())],
        },
        CatalogRecord::Redriven {
            execution_arn: "sample-execution".into(),
            client_token: "sample-token".into(),
            redrive_ms: 3,
            redrive_count: 1,
        },
        CatalogRecord::VersionPublished {
            machine: "sample".into(),
            number: 2,
            revision_lsn: 7,
            description: Some("sample-description".into()),
            created_ms: 4,
        },
        CatalogRecord::VersionDeleted {
            machine: "sample".into(),
            number: 2,
            deleted_ms: 5,
        },
        CatalogRecord::AliasSet {
            machine: "sample".into(),
            name: "sample-alias".into(),
            description: None,
            routing: vec![(1, 90), (2, 10)],
            created_ms: 6,
            updated_ms: Some(7),
        },
        CatalogRecord::AliasDeleted {
            machine: "sample".into(),
            name: "sample-alias".into(),
            deleted_ms: 8,
        },
    ]
}

/// Today's samples of `format`.
fn samples_of(format: &Format) -> Samples {
    match stem(format) {
        "history" => history_samples(),
        "envelope" => envelope_samples(),
        "machine" => machine_records()
            .iter()
            .map(|r| {
                (
                    machine_name(r).to_string(),
                    encode_machine(r).expect("encodes"),
                )
            })
            .collect(),
        "catalog" => catalog_records()
            .iter()
            .map(|r| {
                (
                    catalog_name(r).to_string(),
                    encode_catalog(r).expect("encodes"),
                )
            })
            .collect(),
        "swf" => super::swf::samples(),
        "maprun" => super::map_runs::samples(),
        other => panic!("no samples for {other}"),
    }
}

/// Decodes `bytes` as `format` through its version dispatch and encodes the result again at
/// today's version.
fn decode_and_encode(format: &Format, bytes: &[u8]) -> Result<Vec<u8>, String> {
    match stem(format) {
        "history" => {
            let batch = encoding::decode(bytes).map_err(|e| e.to_string())?;
            encoding::encode(&batch).map_err(|e| e.to_string())
        }
        "envelope" => {
            let (header, rest) = decode_batch_header(bytes).map_err(|e| e.to_string())?;
            encode_batch(&header, rest).map_err(|e| e.to_string())
        }
        "machine" => {
            let record = decode_machine(bytes).map_err(|e| e.to_string())?;
            encode_machine(&record).map_err(|e| e.to_string())
        }
        "catalog" => {
            let record = decode_catalog(bytes).map_err(|e| e.to_string())?;
            encode_catalog(&record).map_err(|e| e.to_string())
        }
        "swf" => {
            let (record, events) = super::swf::decode_swf(bytes).map_err(|e| e.to_string())?;
            match &record {
                super::swf::SwfRecord::Events(header) => {
                    super::swf::encode_swf_events(header, events).map_err(|e| e.to_string())
                }
                other => super::swf::encode_swf(other).map_err(|e| e.to_string()),
            }
        }
        "maprun" => {
            let record = super::map_runs::decode_map_run(bytes).map_err(|e| e.to_string())?;
            super::map_runs::encode_map_run(&record).map_err(|e| e.to_string())
        }
        other => panic!("no decoder for {other}"),
    }
}

fn golden_path(format: &Format, version: u8) -> PathBuf {
    Path::new(GOLDEN_DIR).join(format!("{}-v{version}.hex", stem(format)))
}

fn read_golden(path: &Path) -> BTreeMap<String, Vec<u8>> {
    let text = std::fs::read_to_string(path).expect("golden file reads");
    let mut lines = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let (label, hex) = line.split_once(' ').expect("a golden line is `LABEL HEX`");
        let bytes = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
            .collect();
        assert!(
            lines.insert(label.to_string(), bytes).is_none(),
            "{}: label {label} twice",
            path.display()
        );
    }
    lines
}

fn write_golden(path: &Path, format: &Format, samples: &Samples) {
    let mut text = format!(
        "# {} format version {}: one sample per line, `LABEL HEX`.\n\
         # Written once by {BLESS_ENV}=1 (store/src/formats.rs). Never edit or rewrite it: a\n\
         # change to these bytes is a new format version.\n",
        format.name, format.newest
    );
    for (label, bytes) in samples {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        text.push_str(&format!("{label} {hex}\n"));
    }
    std::fs::create_dir_all(GOLDEN_DIR).expect("golden dir");
    std::fs::write(path, text).expect("golden file writes");
}

/// What to do when a format's bytes changed.
fn bump_advice(format: &Format) -> String {
    format!(
        "the {} record format changed without a version bump. A change to a record's bytes \
         needs a new format version: bump its constant (now {}), keep a decoder for the old \
         version in its dispatch (upcasting to today's types), run the tests once with \
         {BLESS_ENV}=1 to write {}, and add a fixture log written by the new build \
         (tests/fixtures/make-logs.sh). See docs/wal-format.md, \"Record versions\".",
        format.name,
        format.newest,
        golden_path(format, format.newest + 1).display()
    )
}

#[test]
fn the_samples_cover_every_variant() {
    let events: BTreeSet<&str> = samples::events()
        .iter()
        .map(|e| e.details.type_name())
        .collect();
    assert_eq!(events.len(), EventDetails::TYPE_NAMES.len());
    let purposes: BTreeSet<&str> = samples::events()
        .iter()
        .filter_map(|e| e.timer.as_ref().map(|t| timer_purpose_name(&t.purpose)))
        .collect();
    assert_eq!(purposes, TIMER_PURPOSES.iter().copied().collect());
    let statuses: BTreeSet<String> = envelope_samples().into_iter().map(|(l, _)| l).collect();
    for status in STATUSES {
        assert!(statuses.contains(&format!("started-{status}")), "{status}");
    }
    let machines: Vec<&str> = machine_records().iter().map(machine_name).collect();
    assert_eq!(machines, MACHINE_RECORDS);
    let catalog: Vec<&str> = catalog_records().iter().map(catalog_name).collect();
    assert_eq!(catalog, CATALOG_RECORDS);
    // SWF: every record variant, every type kind and every close status has a sample.
    let swf: Vec<(SwfRecord, Vec<u8>)> = super::swf::samples()
        .into_iter()
        .map(|(_, bytes)| {
            let (record, events) = super::swf::decode_swf(&bytes).expect("a sample decodes");
            (record, events.to_vec())
        })
        .collect();
    let names: BTreeSet<&str> = swf.iter().map(|(r, _)| swf_name(r)).collect();
    assert_eq!(names, SWF_RECORDS.iter().copied().collect());
    let kinds: BTreeSet<&str> = swf
        .iter()
        .filter_map(|(r, _)| match r {
            SwfRecord::TypeRegistered { kind, .. } => Some(type_kind_name(kind)),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, TYPE_KINDS.iter().copied().collect());
    let closes: BTreeSet<&str> = swf
        .iter()
        .filter_map(|(r, _)| match r {
            SwfRecord::Events(header) => {
                header.close.as_ref().map(|c| close_status_name(&c.status))
            }
            _ => None,
        })
        .collect();
    assert_eq!(closes, CLOSE_STATUSES.iter().copied().collect());
    // Map Runs: every record variant and every child end status has a sample.
    let map_runs: Vec<MapRunRecord> = super::map_runs::records()
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    let names: Vec<&str> = map_runs.iter().map(map_run_name).collect();
    assert_eq!(names, MAP_RUN_RECORDS);
    let statuses: BTreeSet<&str> = map_runs
        .iter()
        .filter_map(|r| match r {
            MapRunRecord::ChildrenEnded { ends, .. } => Some(ends),
            _ => None,
        })
        .flatten()
        .map(|end| child_end_status_name(&end.status))
        .collect();
    assert_eq!(statuses, CHILD_END_STATUSES.iter().copied().collect());
}

#[test]
fn every_format_matches_its_golden_samples_at_its_version() {
    let bless = std::env::var(BLESS_ENV).is_ok_and(|v| v == "1");
    let mut failures = Vec::new();
    for format in FORMATS {
        let samples = samples_of(&format);
        let path = golden_path(&format, format.newest);
        if !path.exists() {
            if bless {
                write_golden(&path, &format, &samples);
                eprintln!("wrote {}", path.display());
                continue;
            }
            failures.push(format!(
                "{} format version {} has no golden file {}. After a version bump, run the \
                 tests once with {BLESS_ENV}=1 to write it, and add a fixture log written by \
                 the new build (tests/fixtures/make-logs.sh). Never delete or rewrite the file \
                 of a version that was released.",
                format.name,
                format.newest,
                path.display(),
            ));
            continue;
        }
        let golden = read_golden(&path);
        for (label, bytes) in &samples {
            match golden.get(label) {
                Some(expected) if expected == bytes => {}
                Some(_) => failures.push(format!(
                    "{} sample {label} encodes differently from {}: {}",
                    format.name,
                    path.display(),
                    bump_advice(&format)
                )),
                None => failures.push(format!(
                    "{} sample {label} (a new variant?) is not in {}: {}",
                    format.name,
                    path.display(),
                    bump_advice(&format)
                )),
            }
        }
        let labels: BTreeSet<&String> = samples.iter().map(|(l, _)| l).collect();
        for label in golden.keys().filter(|l| !labels.contains(l)) {
            failures.push(format!(
                "{} sample {label} of {} no longer exists (a variant removed?): {}",
                format.name,
                path.display(),
                bump_advice(&format)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_golden_file_decodes_through_the_version_dispatch() {
    let mut seen = 0;
    for format in FORMATS {
        for version in 1..=u8::MAX {
            let path = golden_path(&format, version);
            if !path.exists() {
                continue;
            }
            assert!(
                (format.oldest..=format.newest).contains(&version),
                "{} is a version this build does not read ({}..={})",
                path.display(),
                format.oldest,
                format.newest
            );
            for (label, bytes) in read_golden(&path) {
                assert_eq!(
                    bytes[0],
                    version,
                    "{} {label}: version byte",
                    path.display()
                );
                let again = decode_and_encode(&format, &bytes)
                    .unwrap_or_else(|e| panic!("{} {label} does not decode: {e}", path.display()));
                if version == format.newest {
                    assert_eq!(again, bytes, "{} {label} re-encodes", path.display());
                }
                seen += 1;
            }
        }
    }
    assert!(seen > 0, "no golden files under {GOLDEN_DIR}");
}

/// Every record of one fixture log: `(kind, payload)`.
fn fixture_records(data: &Path) -> Vec<(u8, Vec<u8>)> {
    let copy = tempfile::tempdir().expect("tempdir");
    for entry in std::fs::read_dir(data).expect("fixture dir") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), copy.path().join(entry.file_name())).expect("copies");
    }
    let options = statelog_wal::WalOptions {
        read_only: true,
        background_preparation: false,
        ..statelog_wal::WalOptions::default()
    };
    let (wal, _) = statelog_wal::Wal::open(copy.path(), options).expect("fixture log opens");
    let mut records = Vec::new();
    wal.scan_from(statelog_wal::Lsn(0), |record| {
        records.push((record.kind.get(), record.payload.to_vec()));
        ControlFlow::<()>::Continue(())
    })
    .expect("fixture log scans");
    records
}

#[test]
fn fixture_records_at_todays_versions_encode_to_their_own_bytes() {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(FIXTURE_LOGS_DIR)
        .expect("fixture logs")
        .map(|e| e.expect("entry").path().join("data"))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no fixture logs under {FIXTURE_LOGS_DIR}");
    // (format name, version) -> how many records.
    let mut counts: BTreeMap<(&'static str, u8), usize> = BTreeMap::new();
    let mut failures = Vec::new();
    for dir in &dirs {
        for (index, (kind, payload)) in fixture_records(dir).into_iter().enumerate() {
            let at = format!("{} record {index} (kind {kind})", dir.display());
            let mut check = |format: &Format, bytes: &[u8]| {
                let version = bytes[0];
                *counts.entry((format.name, version)).or_default() += 1;
                match decode_and_encode(format, bytes) {
                    Err(e) => failures.push(format!("{at}: {} does not decode: {e}", format.name)),
                    Ok(again) if version == format.newest && again != bytes => {
                        failures.push(format!("{at}: {}", bump_advice(format)))
                    }
                    Ok(_) => {}
                }
            };
            match kind {
                super::KIND_MACHINE => check(&MACHINE_FORMAT, &payload),
                super::KIND_CATALOG => check(&CATALOG_FORMAT, &payload),
                super::swf::KIND_SWF => check(&super::swf::SWF_FORMAT, &payload),
                super::map_runs::KIND_MAP_RUN => check(&super::map_runs::MAP_RUN_FORMAT, &payload),
                super::KIND_EVENTS => match record::decode_batch_header(&payload) {
                    Ok((_, history)) => {
                        let envelope_len = payload.len() - history.len();
                        // The envelope alone: its header followed by no events.
                        check(&BATCH_ENVELOPE_FORMAT, &payload[..envelope_len]);
                        check(&HISTORY_FORMAT, history);
                    }
                    Err(e) => failures.push(format!("{at}: envelope does not decode: {e}")),
                },
                other => failures.push(format!("{at}: kind {other} is no store record")),
            }
        }
    }
    for format in FORMATS {
        if !counts.contains_key(&(format.name, format.newest)) {
            failures.push(format!(
                "no fixture log holds a {} record of version {} (the version this build \
                 writes): add a fixture written by this build (tests/fixtures/make-logs.sh)",
                format.name, format.newest
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The SWF events inside an SWF event batch record (`statelog_swf::encoding`, a `u16` version
/// of its own): one sample of every event type, each encoded alone, compared with
/// `swf-history-v<N>.hex`; the golden files of every version up to today's decode.
#[test]
fn swf_events_match_their_golden_samples_at_their_version() {
    use statelog_swf::encoding::{decode_events, encode_events, FORMAT_VERSION};
    use statelog_swf::events::{samples, Attributes};
    let path = |version: u16| Path::new(GOLDEN_DIR).join(format!("swf-history-v{version}.hex"));
    let today: Samples = samples()
        .into_iter()
        .map(|event| (event.event_type().to_string(), encode_events(&[event])))
        .collect();
    let labels: BTreeSet<&str> = today.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(
        labels,
        Attributes::EVENT_TYPES.iter().copied().collect(),
        "a sample of every SWF event type"
    );
    let current = path(FORMAT_VERSION);
    if !current.exists() && std::env::var(BLESS_ENV).is_ok_and(|v| v == "1") {
        let mut text = format!(
            "# swf history (statelog_swf::encoding) format version {FORMAT_VERSION}: one sample per \
             line, `LABEL HEX`.\n# Written once by {BLESS_ENV}=1 (store/src/formats.rs). Never edit \
             or rewrite it: a change to these bytes is a new format version.\n"
        );
        for (label, bytes) in &today {
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            text.push_str(&format!("{label} {hex}\n"));
        }
        std::fs::write(&current, text).expect("golden file writes");
    }
    let golden = read_golden(&current);
    for (label, bytes) in &today {
        assert_eq!(
            golden.get(label),
            Some(bytes),
            "SWF event {label} encodes differently from {} (or is new): a change to the SWF \
             events' bytes needs a new statelog_swf::encoding::FORMAT_VERSION",
            current.display()
        );
    }
    assert_eq!(golden.len(), today.len(), "an SWF event type was removed");
    for version in 1..=FORMAT_VERSION {
        for (label, bytes) in read_golden(&path(version)) {
            let events = decode_events(&bytes)
                .unwrap_or_else(|e| panic!("swf-history-v{version} {label} does not decode: {e}"));
            assert_eq!(events.len(), 1, "{label}");
        }
    }
}
