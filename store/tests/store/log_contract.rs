//! The log contract suite: every implementation of `statelog_store::Log` must pass the same
//! cases (see the contract in the `log` module's docs). The cases run against the WAL on a
//! temp dir, the WAL on the simulated disk (so crashes can be modelled) and `MemoryLog`.
//! The cases live in `statelog_store::contract` (feature `contract`), so the replicated log
//! (`nats/tests/`) runs the same ones.
//!
//! Scenario guarded: the store relies on nothing of a log but this contract; a log that passes
//! these cases can sit under the store.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use statelog_store::contract::{
    append_one, contract_suite, payload, scan_is_in_order_and_starts_where_asked, scanned,
};
use statelog_store::{Durability, Error, Log, MemoryLog};
use statelog_wal::storage::sim::{CrashMode, SimStorage};
use statelog_wal::{Lsn, Wal, WalOptions};

/// The smallest segments the WAL takes: a few dozen records fill several extents.
const SEGMENT_SIZE_BYTES: u64 = 4096;

fn options() -> WalOptions {
    WalOptions {
        segment_size_bytes: SEGMENT_SIZE_BYTES,
        lock_wait_ms: 0,
        ..WalOptions::small()
    }
}

// ---- the implementations ----

#[test]
fn memory_log_keeps_the_contract() {
    contract_suite(&|| Arc::new(MemoryLog::new()));
}

#[test]
fn wal_on_a_temp_dir_keeps_the_contract() {
    let root = tempfile::tempdir().expect("a temp dir");
    let count = std::cell::Cell::new(0);
    contract_suite(&|| {
        count.set(count.get() + 1);
        let dir = root.path().join(format!("log{}", count.get()));
        Arc::new(Wal::open(&dir, options()).expect("opens").0)
    });
}

fn open_sim(storage: &SimStorage) -> Wal {
    Wal::open_with_storage(Arc::new(storage.clone()), "/log", options())
        .expect("opens")
        .0
}

#[test]
fn wal_on_the_simulated_disk_keeps_the_contract() {
    contract_suite(&|| Arc::new(open_sim(&SimStorage::new())));
}

/// A log written before the contract grew: only the three required operations. The defaults
/// of the others must keep the contract for it.
#[derive(Debug, Default)]
struct PreContractLog {
    inner: MemoryLog,
}

impl Log for PreContractLog {
    fn append_batch(&self, records: &[(u8, &[u8])]) -> Result<Lsn, Error> {
        self.inner.append_batch(records)
    }

    fn read(&self, lsn: Lsn) -> Result<Option<(u8, Vec<u8>)>, Error> {
        self.inner.read(lsn)
    }

    fn scan(&self, visit: &mut statelog_store::Visit<'_>) -> Result<(), Error> {
        self.inner.scan(visit)
    }
}

#[test]
fn a_log_with_only_the_required_operations_keeps_the_contract_by_default() {
    let make = || PreContractLog::default();
    a_batch_is_dense_and_whole_without_stats(&make());
    scan_is_in_order_and_starts_where_asked(&make());
    let log = make();
    let lsn = log
        .append(&[(1, b"later")], Durability::Unsynced)
        .expect("appends");
    assert!(log.sync(lsn).expect("syncs") >= lsn);
    assert_eq!(log.read(lsn).expect("reads"), Some((1, b"later".to_vec())));
    assert!(!log.notifies());
    let refused = log.append_notify(&[(1, b"n")], Box::new(|_| {}));
    assert!(
        matches!(
            refused,
            Err(Error::Unsupported {
                operation: "append_notify"
            })
        ),
        "{refused:?}"
    );
    // Trim may keep everything; the extents are none, so compaction changes nothing.
    assert_eq!(log.trim_below(lsn).expect("trims"), Lsn(1));
    assert!(log.extents().is_empty());
    let tail = log.wait_for(lsn, Duration::ZERO);
    assert!(
        matches!(
            tail,
            Err(Error::Unsupported {
                operation: "wait_for"
            })
        ),
        "{tail:?}"
    );
    assert!(log.refusal().is_none());
}

/// [`a_batch_is_dense_and_whole`] for a log without counters: positions from its appends.
fn a_batch_is_dense_and_whole_without_stats(log: &dyn Log) {
    let first = log
        .append(&[(1, b"a"), (2, b"b"), (3, b"c")], Durability::Synced)
        .expect("appends");
    let seen = scanned(log, first);
    let lsns: Vec<Lsn> = seen.iter().map(|record| record.0).collect();
    assert_eq!(lsns, [first, Lsn(first.0 + 1), Lsn(first.0 + 2)]);
    let next = log
        .append(&[(4, b"d")], Durability::Synced)
        .expect("appends");
    assert_eq!(next, Lsn(first.0 + 3));
}

// ---- restarts, fencing and a second writer: per implementation ----

#[test]
fn wal_synced_records_survive_a_reopen() {
    let root = tempfile::tempdir().expect("a temp dir");
    let dir: PathBuf = root.path().join("log");
    let reopen = |dir: &Path| Wal::open(dir, options()).expect("opens").0;
    let (synced, unsynced_then_synced) = {
        let wal = reopen(&dir);
        let log: &dyn Log = &wal;
        let synced = append_one(log, 1);
        let later = log
            .append(&[(1, &payload(2)), (1, &payload(3))], Durability::Unsynced)
            .expect("appends");
        log.sync(Lsn(later.0 + 1)).expect("syncs");
        (synced, later)
    };
    let wal = reopen(&dir);
    let log: &dyn Log = &wal;
    assert_eq!(log.read(synced).expect("reads"), Some((1, payload(1))));
    assert_eq!(
        log.read(Lsn(unsynced_then_synced.0 + 1)).expect("reads"),
        Some((1, payload(3)))
    );
}

#[test]
fn a_crash_keeps_what_was_synced_and_an_unsynced_batch_whole_or_not_at_all() {
    let storage = SimStorage::new();
    let (synced, unsynced) = {
        let wal = open_sim(&storage);
        let log: &dyn Log = &wal;
        let first = log
            .append(&[(1, &payload(1))], Durability::Unsynced)
            .expect("appends");
        log.sync(first).expect("syncs");
        let unsynced = log
            .append(&[(1, &payload(2)), (1, &payload(3))], Durability::Unsynced)
            .expect("appends");
        (first, unsynced)
    };
    let after = storage.crash(CrashMode::DropUnsynced);
    let wal = open_sim(&after);
    let log: &dyn Log = &wal;
    assert_eq!(log.read(synced).expect("reads"), Some((1, payload(1))));
    let kept: Vec<Lsn> = scanned(log, unsynced).iter().map(|r| r.0).collect();
    assert!(
        kept.is_empty() || kept == [unsynced, Lsn(unsynced.0 + 1)],
        "the unsynced batch is whole or gone: {kept:?}"
    );
}

#[test]
fn a_fenced_writer_is_refused_typed_and_for_good() {
    let log = MemoryLog::new();
    let before = append_one(&log, 1);
    assert!(log.refusal().is_none());
    log.fence();
    let append = log.append(&[(1, b"stale")], Durability::Synced);
    assert!(matches!(append, Err(Error::Fenced)), "{append:?}");
    let unsynced = log.append(&[(1, b"stale")], Durability::Unsynced);
    assert!(matches!(unsynced, Err(Error::Fenced)), "{unsynced:?}");
    assert!(matches!(log.sync(before), Err(Error::Fenced)));
    let refusal = log.refusal().expect("fenced");
    assert!(matches!(refusal, Error::Fenced));
    assert!(!refusal.is_retryable());
    // What was acknowledged before the fence still reads; nothing after it was taken.
    assert_eq!(log.read(before).expect("reads"), Some((1, payload(1))));
    assert_eq!(log.stats().next_lsn, Lsn(before.0 + 1));
}

#[test]
fn a_second_wal_writer_is_refused_typed() {
    let root = tempfile::tempdir().expect("a temp dir");
    let (_first, _) = Wal::open(root.path(), options()).expect("opens");
    let second = Wal::open(root.path(), options()).map_err(Error::from);
    match second {
        Err(error @ Error::Log(statelog_wal::Error::Locked { .. })) => {
            assert!(!error.is_retryable());
        }
        other => panic!("a second writer must be refused with Locked: {other:?}"),
    }
}

#[test]
fn a_full_disk_is_retryable_and_a_poisoned_log_is_not() {
    let full = Error::Log(statelog_wal::Error::SegmentUnavailable {
        segment_id: statelog_wal::SegmentId(2),
        cause: Arc::new(statelog_wal::Error::Unsupported { what: "space" }),
    });
    assert!(full.is_retryable());
    let poisoned = Error::Log(statelog_wal::Error::Poisoned {
        cause: Arc::new(statelog_wal::Error::Unsupported { what: "sync" }),
    });
    assert!(!poisoned.is_retryable());
}
