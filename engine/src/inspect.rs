//! inspect: the log under an engine, for operator tools (`statelog wal verify|dump|stats` and
//! the `append-test` crash workload) that read or write it without opening an engine.
//!
//! The WAL's and the store's types are re-exported here on purpose: an operator tool reads the
//! log as the log (frames, LSNs, segments), and checks each record with the store's own decoder,
//! so nothing above the engine copies a decoder or names `statelog-wal` or `statelog-store`.
//!
//! Invariants: [`open_read_only`] never changes a byte of the log; [`check_record`] is the
//! decoder a history read uses, not a second one.
//!
//! Must not: interpret records itself, or open an engine.

use std::path::Path;

pub use statelog_store::{NewerVersion, RecordCheck};
pub use statelog_wal::limits::RECORD_SIZE_BYTES_MAX;
pub use statelog_wal::{
    Durability, Error as WalError, Lsn, Record, RecordKind, RecoveryReport, SegmentInfo, TornTail,
    Wal, WalOptions,
};

/// Opens the log in `dir` read-only: recovery checks every frame and reports a torn tail, but
/// nothing is truncated, prepared or written.
pub fn open_read_only(dir: &Path) -> Result<(Wal, RecoveryReport), WalError> {
    let options = WalOptions {
        read_only: true,
        background_preparation: false,
        ..WalOptions::default()
    };
    Wal::open(dir, options)
}

/// Whether a record of `kind` shows that the log is a statelog store's: one with a state
/// machine, a catalog, an SWF or a Map Run record. Every execution needs its machine, and
/// machine records are never compacted, so a store's log always holds one; an SWF run needs
/// its domain, whose registration (or deletion) record is kept as long as the run.
pub fn is_store_marker(kind: RecordKind) -> bool {
    let kind = kind.get();
    kind == statelog_store::KIND_MACHINE
        || kind == statelog_store::KIND_CATALOG
        || kind == statelog_store::swf::KIND_SWF
        || kind == statelog_store::map_runs::KIND_MAP_RUN
}

/// Reads `record` whole with the store's decoders, as a history read would.
pub fn check_record(record: &Record<'_>) -> RecordCheck {
    statelog_store::decode_record(record.kind.get(), record.payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(value: u8) -> RecordKind {
        RecordKind::new(value).expect("a valid record kind")
    }

    #[test]
    fn machine_and_catalog_records_mark_a_store_log() {
        assert!(is_store_marker(kind(statelog_store::KIND_MACHINE)));
        assert!(is_store_marker(kind(statelog_store::KIND_CATALOG)));
        assert!(!is_store_marker(kind(statelog_store::KIND_EVENTS)));
    }

    #[test]
    fn read_only_open_of_a_missing_directory_fails_without_creating_it() {
        let parent = std::env::temp_dir().join(format!("statelog-inspect-{}", std::process::id()));
        let dir = parent.join("missing");
        assert!(open_read_only(&dir).is_err());
        assert!(!dir.exists());
    }

    #[test]
    fn store_records_are_checked_by_the_store_s_decoder() {
        let machine = |payload: &'static [u8]| Record {
            lsn: Lsn(1),
            kind: kind(statelog_store::KIND_MACHINE),
            payload,
            copied_from: None,
        };
        // A machine record is its format version, then postcard: version 1 with garbage after it
        // is damage; a version past the newest is a newer build's record.
        assert!(matches!(
            check_record(&machine(&[1, 0xff, 0xff, 0xff])),
            RecordCheck::Damaged { .. }
        ));
        assert!(matches!(
            check_record(&machine(&[0xff])),
            RecordCheck::Newer(NewerVersion { found: 0xff, .. })
        ));
        let unknown = Record {
            kind: kind(RecordKind::MAX),
            ..machine(&[1])
        };
        assert_eq!(check_record(&unknown), RecordCheck::UnknownKind);
    }

    /// A Map Run record (kind 5) reads whole, as `statelog wal verify` checks it: never damage
    /// or an unknown kind; a newer version of it is a newer build's.
    #[test]
    fn map_run_records_are_store_records_that_read() {
        use statelog_store::map_runs::{
            encode_map_run, MapRunRecord, MapRunSettings, KIND_MAP_RUN,
        };
        assert!(is_store_marker(kind(KIND_MAP_RUN)));
        let mut payload = encode_map_run(&MapRunRecord::Updated {
            map_run_arn: "run".into(),
            execution_arn: "parent".into(),
            settings: MapRunSettings {
                max_concurrency: 4,
                tolerated_failure_count: None,
                tolerated_failure_percentage: Some(10.0),
            },
            updated_ms: 1,
        })
        .expect("encodes");
        let record = |payload: &[u8]| {
            check_record(&Record {
                lsn: Lsn(1),
                kind: kind(KIND_MAP_RUN),
                payload,
                copied_from: None,
            })
        };
        assert_eq!(
            record(&payload),
            RecordCheck::Readable {
                execution_arn: None
            }
        );
        payload[0] = statelog_store::map_runs::MAP_RUN_FORMAT_VERSION + 1;
        assert!(matches!(record(&payload), RecordCheck::Newer(_)));
    }
}
