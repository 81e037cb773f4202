//! wal: the `Wal` handle: options, open, append, read, retention. It wires `recovery`,
//! `writer`, `reader` and `compaction` together.
//!
//! Invariants: `Wal` is `Send + Sync`; every method is safe to call from many threads. This
//! module holds no logic of its own beyond argument checks and delegation.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::limits::{
    SEGMENTS_READY_MAX, SEGMENT_SIZE_BYTES_DEFAULT, SEGMENT_SIZE_BYTES_MAX, SEGMENT_SIZE_BYTES_MIN,
};
use crate::record::{OwnedRecord, Record};
use crate::recovery::RecoveryReport;
use crate::storage::{FsStorage, Storage};
use crate::{Durability, Lsn, LsnRange, RecordKind, RepairMode, SegmentId};

/// How a log is opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalOptions {
    /// Size of every new segment file.
    pub segment_size_bytes: u64,
    /// When an append is acknowledged.
    pub durability: Durability,
    /// What open does with corruption.
    pub repair: RepairMode,
    /// How many zero-filled or recycled segments to keep ready ahead of the writer.
    pub segments_ready_count: usize,
    /// Run segment preparation on a background thread (otherwise call `prepare_segments`;
    /// a rotation that finds no ready segment prepares one inline).
    pub background_preparation: bool,
    /// Open without changing anything on disk; appends and retention calls are refused.
    pub read_only: bool,
}

impl Default for WalOptions {
    fn default() -> Self {
        WalOptions {
            segment_size_bytes: SEGMENT_SIZE_BYTES_DEFAULT,
            durability: Durability::GroupCommit,
            repair: RepairMode::Refuse,
            segments_ready_count: 1,
            background_preparation: true,
            read_only: false,
        }
    }
}

impl WalOptions {
    /// Checks the options against the limits.
    pub fn validate(&self) -> Result<()> {
        if !(SEGMENT_SIZE_BYTES_MIN..=SEGMENT_SIZE_BYTES_MAX).contains(&self.segment_size_bytes) {
            return Err(Error::InvalidOptions {
                field: "segment_size_bytes",
                reason: format!(
                    "{} is outside {SEGMENT_SIZE_BYTES_MIN}..={SEGMENT_SIZE_BYTES_MAX}",
                    self.segment_size_bytes
                ),
            });
        }
        if self.segments_ready_count == 0 || self.segments_ready_count > SEGMENTS_READY_MAX {
            return Err(Error::InvalidOptions {
                field: "segments_ready_count",
                reason: format!(
                    "{} is outside 1..={SEGMENTS_READY_MAX}",
                    self.segments_ready_count
                ),
            });
        }
        Ok(())
    }
}

/// One retained segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentInfo {
    /// Its id.
    pub segment_id: SegmentId,
    /// The LSN of its first record (or of the next record, when it has none yet).
    pub first_lsn: Lsn,
    /// The LSN of its last record, `None` when it has none.
    pub last_lsn: Option<Lsn>,
    /// File size.
    pub size_bytes: u64,
    /// Whether it is the segment being appended to.
    pub active: bool,
}

/// What a compaction did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactionReport {
    /// Segments removed (their live records now live under new LSNs).
    pub segments_deleted: Vec<SegmentId>,
    /// For every record copied forward: (old LSN, new LSN), in old-LSN order.
    pub lsn_mapping: Vec<(Lsn, Lsn)>,
    /// Records dropped because the predicate said they were no longer live.
    pub records_dropped_count: u64,
}

/// Counters of a running log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WalStats {
    /// The LSN the next append gets.
    pub next_lsn: Lsn,
    /// Every LSN up to this one is durable (0 when none).
    pub durable_lsn: Lsn,
    /// Retained segments.
    pub segments_count: usize,
    /// Segments ready ahead of the writer.
    pub segments_ready_count: usize,
    /// fdatasync calls issued by commits.
    pub syncs_count: u64,
    /// Write calls issued by commits.
    pub writes_count: u64,
    /// Rotations that had to prepare a segment inline (no ready segment).
    pub inline_prepares_count: u64,
}

/// A write-ahead log. `Send + Sync`; share it with `Arc`.
#[derive(Debug)]
pub struct Wal {
    dir: PathBuf,
}

impl Wal {
    /// Opens (creating if missing) the log in `dir` on the real file system.
    pub fn open(dir: impl AsRef<Path>, options: WalOptions) -> Result<(Wal, RecoveryReport)> {
        Self::open_with_storage(Arc::new(FsStorage::new()), dir, options)
    }

    /// Opens the log in `dir` over any storage.
    pub fn open_with_storage(
        storage: Arc<dyn Storage>,
        dir: impl AsRef<Path>,
        options: WalOptions,
    ) -> Result<(Wal, RecoveryReport)> {
        let _ = (storage, dir.as_ref(), options);
        Err(Error::Unsupported { what: "Wal::open" })
    }

    /// The log directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Appends one record and returns its LSN once it is acknowledged under the configured
    /// durability.
    pub fn append(&self, kind: RecordKind, payload: &[u8]) -> Result<Lsn> {
        let _ = (kind, payload);
        Err(Error::Unsupported {
            what: "Wal::append",
        })
    }

    /// Appends records as one atomic batch (all or none survive a crash) in one commit.
    pub fn append_batch(&self, records: &[(RecordKind, &[u8])]) -> Result<LsnRange> {
        let _ = records;
        Err(Error::Unsupported {
            what: "Wal::append_batch",
        })
    }

    /// Appends one record without waiting; pair with `wait_durable`.
    pub fn enqueue(&self, kind: RecordKind, payload: &[u8]) -> Result<Lsn> {
        let _ = (kind, payload);
        Err(Error::Unsupported {
            what: "Wal::enqueue",
        })
    }

    /// Waits until `lsn` is acknowledged under the configured durability.
    pub fn wait_durable(&self, lsn: Lsn) -> Result<()> {
        let _ = lsn;
        Err(Error::Unsupported {
            what: "Wal::wait_durable",
        })
    }

    /// Makes every record appended so far durable (whatever the durability mode); returns the
    /// durable LSN.
    pub fn sync(&self) -> Result<Lsn> {
        Err(Error::Unsupported { what: "Wal::sync" })
    }

    /// Reads one record by LSN; `None` for an LSN that holds a log-internal record or a record
    /// superseded by compaction.
    pub fn read(&self, lsn: Lsn) -> Result<Option<OwnedRecord>> {
        let _ = lsn;
        Err(Error::Unsupported { what: "Wal::read" })
    }

    /// Iterates owned records from `from` on, up to the acknowledged end at the time of the call.
    pub fn iter_from(&self, from: Lsn) -> Result<crate::reader::RecordIter> {
        let _ = from;
        Err(Error::Unsupported {
            what: "Wal::iter_from",
        })
    }

    /// Calls `visit` with every record from `from` on, without copying payloads, until it
    /// returns `ControlFlow::Break`.
    pub fn scan_from(
        &self,
        from: Lsn,
        visit: impl FnMut(Record<'_>) -> ControlFlow<()>,
    ) -> Result<()> {
        let _ = (from, visit);
        Err(Error::Unsupported {
            what: "Wal::scan_from",
        })
    }

    /// The retained segments, oldest first.
    pub fn segments(&self) -> Vec<SegmentInfo> {
        Vec::new()
    }

    /// Counters.
    pub fn stats(&self) -> WalStats {
        WalStats::default()
    }

    /// Deletes every sealed segment whose records all have LSNs below `lsn`; returns them.
    pub fn delete_below(&self, lsn: Lsn) -> Result<Vec<SegmentId>> {
        let _ = lsn;
        Err(Error::Unsupported {
            what: "Wal::delete_below",
        })
    }

    /// Copy-forward compaction of the sealed segments entirely below `lsn`: re-appends the
    /// records `live` keeps, makes the copies durable, then deletes the old segments. Crash-safe
    /// at every step.
    pub fn compact_below(
        &self,
        lsn: Lsn,
        live: impl Fn(&Record<'_>) -> bool,
    ) -> Result<CompactionReport> {
        let _ = (lsn, live);
        Err(Error::Unsupported {
            what: "Wal::compact_below",
        })
    }

    /// The background step: prepares (zero-fills) segments until `segments_ready_count` are
    /// ready; returns how many it made.
    pub fn prepare_segments(&self) -> Result<usize> {
        Err(Error::Unsupported {
            what: "Wal::prepare_segments",
        })
    }
}
