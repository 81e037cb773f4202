//! log: the contract between the store and the log under it. [`Log`] is everything the store
//! asks of a log; [`statelog_wal::Wal`] implements it for real (`wal.rs`), [`MemoryLog`] holds
//! records in memory for tests and embedders that need no disk (`memory.rs`). A replicated log
//! (issue 19, `statelog-nats`) is a third implementation, checked by the same contract cases
//! (`contract.rs`, feature `contract`; run by `store/tests/store/log_contract.rs` and `nats/tests/`).
//!
//! The contract:
//! - Positions. Every record has an LSN. LSNs are dense and increase by one per record. A batch
//!   of `n` records starting at `first` holds `first..first + n`.
//! - Append. [`Log::append`] writes a batch atomically: after a crash either every record of it
//!   is there or none is. [`Durability::Synced`] returns once the batch is durable.
//!   [`Durability::Unsynced`] returns once it is ordered; it becomes durable with the next
//!   [`Log::sync`] or synced append (a log is a prefix: durable at `n` means durable below `n`).
//!   A crash may lose an unsynced batch and everything after it, never a part of it.
//! - Notify. [`Log::append_notify`] appends like an unsynced append and calls its
//!   [`OnDurable`] once the batch is durable (or with the error that means it never will be),
//!   from whichever thread made it so; the log itself sees to it that the batch becomes durable
//!   without another append or sync. For a caller that must not block yet must not act on the
//!   batch before it is durable. Optional: [`Log::notifies`] says whether a log has it.
//! - Read. [`Log::read`] gives one record. `None` for a position below [`LogStats::first_lsn`]
//!   (trimmed or compacted away) or one holding no caller record. A position past the
//!   acknowledged end (`Lsn(0)`, or above [`LogStats::durable_lsn`]: never appended, or
//!   appended unsynced and not yet acknowledged) is `statelog_wal::Error::LsnOutOfRange`, so a
//!   caller can tell "gone" from "not there yet".
//! - Scan. [`Log::scan_from`] visits records in LSN order from a position to the end acknowledged
//!   at the call. Each record carries its origin LSN: where it was first written, when
//!   compaction copied it forward.
//! - Tail. [`Log::wait_for`] blocks until a record at a position is acknowledged, or a timeout.
//!   A follower resumes with `scan_from(next)` then `wait_for(next, timeout)`, keeping `next`.
//! - Trim. [`Log::trim_below`] drops whole records below a position, at the log's own
//!   granularity ([`Extent`]s): it may keep some below the position, never drops one at or
//!   after it. It does not copy anything: what is still live below must have been copied
//!   forward first ([`Log::compact_below`], which the store's retention drives).
//! - Compaction. [`Log::compact_below`] copies forward what `keep` keeps from the sealed extents
//!   below a position, makes the copies durable, then drops those extents. A log that lists no
//!   extents ([`Log::extents`] empty) has nothing to reclaim: compaction is a no-op there.
//! - Fencing. A log has at most one writer. The WAL takes a lock on its directory: a second
//!   writer's open fails with `statelog_wal::Error::Locked`. A fenced writer (another writer took
//!   the log over, [`MemoryLog::fence`]) gets [`Error::Fenced`] from every later append and sync:
//!   nothing it appends after the fence is ever acknowledged.
//! - Errors. [`Error::is_retryable`] says which failures a caller may retry as they are (a full
//!   disk). The rest are terminal for this writer: poisoned, fenced, locked, corrupt.
//!
//! Must not: interpret payloads; read a clock for anything but a tail's timeout.

#[cfg(feature = "contract")]
pub mod contract;
mod memory;
mod wal;

use std::fmt::Debug;
use std::time::Duration;

use statelog_wal::Lsn;

pub use statelog_wal::CompactionProgress;

pub use memory::MemoryLog;

use super::Error;

/// How durable an append must be before it returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Returns once the batch is durable (under the log's configured durability).
    Synced,
    /// Returns once the batch is ordered. A later sync or synced append makes it durable; a
    /// crash before that may lose it and everything after it.
    Unsynced,
}

/// What [`Log::append_notify`] calls once its batch is durable, or with the error that means it
/// never will be. It runs on the thread that made the batch durable (a committer's, or the log's
/// own), so it must be quick and must not call into the log.
pub type OnDurable = Box<dyn FnOnce(Result<(), Error>) + Send>;

/// One record as a scan gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogRecord<'a> {
    /// Its position.
    pub lsn: Lsn,
    /// Where it was first written: its LSN, unless compaction copied it forward.
    pub origin_lsn: Lsn,
    /// The caller's record kind.
    pub kind: u8,
    /// The caller's bytes.
    pub payload: &'a [u8],
}

/// A run of records the log drops whole (a WAL segment). Compaction and trim work in extents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    /// The LSN of its first record (or of the next one, when it holds none yet).
    pub first_lsn: Lsn,
    /// Its size on the medium.
    pub size_bytes: u64,
    /// Whether it takes no more appends. Only sealed extents are compacted or trimmed.
    pub sealed: bool,
}

/// What one [`Log::compact_below`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Compacted {
    /// Extents dropped.
    pub extents_dropped_count: u64,
    /// For every record copied forward: (old LSN, new LSN), in old-LSN order.
    pub lsn_mapping: Vec<(Lsn, Lsn)>,
    /// Records `keep` dropped.
    pub records_dropped_count: u64,
}

/// Counters of a log, the same for every implementation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogStats {
    /// The first position the log still holds (records below were trimmed or compacted).
    pub first_lsn: Lsn,
    /// The position the next append gets.
    pub next_lsn: Lsn,
    /// Every record up to this one is durable (`Lsn(0)` when none is).
    pub durable_lsn: Lsn,
    /// Syncs issued to the medium (0 for a log without one).
    pub syncs_count: u64,
    /// Writes issued to the medium (0 for a log without one).
    pub writes_count: u64,
}

/// What [`Log::scan_from`] calls with each record; its error stops the scan and is returned.
pub type VisitRecord<'a> = dyn FnMut(&LogRecord<'_>) -> Result<(), Error> + 'a;

/// What [`Log::compact_below`] asks of each record below the bound: keep it (copy it forward)?
/// It may run on a thread of the log's own.
pub type Keep<'a> = dyn FnMut(&LogRecord<'_>) -> bool + Send + 'a;

/// The visitor [`Log::scan`] calls with each record's LSN, kind and payload.
pub type Visit<'a> = dyn FnMut(Lsn, u8, &[u8]) -> Result<(), Error> + 'a;

/// What [`Log::scan_with_origin`] calls: `(origin LSN, LSN, kind, payload)`.
pub type VisitOrigin<'a> = dyn FnMut(Lsn, Lsn, u8, &[u8]) -> Result<(), Error> + 'a;

/// What the store needs from a durable, ordered log (see the module docs for the contract).
///
/// Three operations are required: [`Log::append_batch`], [`Log::read`] and [`Log::scan`], so a
/// log written before the contract grew still compiles. Every other operation has a default
/// that keeps the contract for such a log: every append synced, nothing trimmed, no extents, no
/// counters, and no tail ([`Error::Unsupported`]). The WAL and [`MemoryLog`] implement them all.
pub trait Log: Send + Sync + Debug {
    /// Appends `records` as one atomic batch and returns the LSN of the first, once durable.
    fn append_batch(&self, records: &[(u8, &[u8])]) -> Result<Lsn, Error>;

    /// Reads one record's kind and payload; `None` when the LSN holds no caller record (below
    /// the first retained position, or a log-internal record); [`Error::Log`] with
    /// `statelog_wal::Error::LsnOutOfRange` past the acknowledged end.
    fn read(&self, lsn: Lsn) -> Result<Option<(u8, Vec<u8>)>, Error>;

    /// Calls `visit` with every record in LSN order; stops at the first error it returns.
    fn scan(&self, visit: &mut Visit<'_>) -> Result<(), Error>;

    /// Appends `records` as one atomic batch with the durability asked for; returns the LSN of
    /// the first. The batch holds `first..first + records.len()`. An empty batch is refused.
    /// The default syncs every batch (more durable than asked, never less).
    fn append(&self, records: &[(u8, &[u8])], durability: Durability) -> Result<Lsn, Error> {
        let _ = durability;
        self.append_batch(records)
    }

    /// Appends `records` as one atomic batch without waiting for it to be durable, and calls
    /// `on_durable` once it is (see [`OnDurable`]); the log makes it durable by itself, with
    /// no further append or sync. Returns the LSN of the first record. An error returned here
    /// means nothing was appended, and `on_durable` is dropped uncalled. Only where
    /// [`Log::notifies`]; the default appends nothing and is [`Error::Unsupported`].
    fn append_notify(&self, records: &[(u8, &[u8])], on_durable: OnDurable) -> Result<Lsn, Error> {
        let _ = (records, on_durable);
        Err(Error::Unsupported {
            operation: "append_notify",
        })
    }

    /// Whether [`Log::append_notify`] is supported and never waits for a sync: a caller that
    /// must not block asks this first (and waits for a synced append elsewhere if not). The
    /// default is false.
    fn notifies(&self) -> bool {
        false
    }

    /// Whether a commit is in flight now (or notified batches wait for one): a notified append
    /// rides on it. An idle log may be quicker to commit in place (the caller blocks) than to
    /// notify, which wakes the log's own thread. A hint; the default is false.
    fn commit_in_flight(&self) -> bool {
        false
    }

    /// How many notified batches wait for the log's word now (`append_notify`). A hint; the
    /// default is 0.
    fn notices_waiting(&self) -> usize {
        0
    }

    /// Makes every record up to `upto` durable (and may make more); returns the durable end.
    /// The default has nothing to do: its appends are all synced.
    fn sync(&self, upto: Lsn) -> Result<Lsn, Error> {
        Ok(upto)
    }

    /// Calls `visit` with every record from `from` on, in LSN order, up to the end acknowledged
    /// when the call began; stops at the first error `visit` returns and returns it.
    fn scan_from(&self, from: Lsn, visit: &mut VisitRecord<'_>) -> Result<(), Error> {
        self.scan(&mut |lsn, kind, payload| {
            if lsn < from {
                return Ok(());
            }
            visit(&LogRecord {
                lsn,
                origin_lsn: lsn,
                kind,
                payload,
            })
        })
    }

    /// Like [`Log::scan`], also giving each record's original LSN (differs from its LSN when
    /// compaction copied it forward): `visit(origin, lsn, kind, payload)`.
    fn scan_with_origin(&self, visit: &mut VisitOrigin<'_>) -> Result<(), Error> {
        self.scan_from(Lsn(1), &mut |record| {
            visit(record.origin_lsn, record.lsn, record.kind, record.payload)
        })
    }

    /// The tail: blocks until the record at `lsn` is acknowledged (a scan from `lsn` then sees
    /// it), at most `timeout` (cut to `limits::TAIL_WAIT_MS_MAX`). `true` once it is, `false`
    /// on timeout. The default is [`Error::Unsupported`].
    fn wait_for(&self, lsn: Lsn, timeout: Duration) -> Result<bool, Error> {
        let _ = (lsn, timeout);
        Err(Error::Unsupported {
            operation: "wait_for",
        })
    }

    /// Drops whole extents whose records all sit below `lsn` (see the module docs: nothing is
    /// copied). Returns the new first position ([`LogStats::first_lsn`]). The default drops
    /// nothing, which the contract allows.
    fn trim_below(&self, lsn: Lsn) -> Result<Lsn, Error> {
        let _ = lsn;
        Ok(Lsn(1))
    }

    /// The log's extents, oldest first. Empty (the default) for a log that keeps nothing to
    /// reclaim.
    fn extents(&self) -> Vec<Extent> {
        Vec::new()
    }

    /// Copy-forward compaction of the sealed extents wholly below `below`: copies the records
    /// `keep` keeps to the end of the log (new LSNs, same origin), makes them durable, then
    /// drops those extents. Crash-safe at every step. `progress` is told how far it is. The
    /// default, for a log without extents, does nothing.
    fn compact_below(
        &self,
        below: Lsn,
        keep: &mut Keep<'_>,
        progress: &mut dyn FnMut(&CompactionProgress),
    ) -> Result<Compacted, Error> {
        let _ = (below, keep, progress);
        Ok(Compacted::default())
    }

    /// Counters, log-neutral. The default knows none (all zero).
    fn stats(&self) -> LogStats {
        LogStats::default()
    }

    /// `Some` once the log refuses every later write for good (a failed sync poisoned it, or
    /// the writer was fenced): the error later writes get. The default never refuses.
    fn refusal(&self) -> Option<Error> {
        None
    }
}
