//! statelog-wal: durable, ordered bytes. A segmented, checksummed, group-committed write-ahead
//! log. It knows bytes, records and segments, and nothing of workflows.
//!
//! # Using it
//! ```no_run
//! use statelog_wal::{Durability, RecordKind, Wal, WalOptions};
//! # fn main() -> Result<(), statelog_wal::Error> {
//! let options = WalOptions { durability: Durability::GroupCommit, ..WalOptions::default() };
//! let (wal, report) = Wal::open("/tmp/statelog-wal-doc", options)?;
//! println!("recovered: {report:?}");
//! let lsn = wal.append(RecordKind::new(1)?, b"event bytes")?; // returns once durable
//! let record = wal.read(lsn)?.expect("just appended");
//! assert_eq!(record.payload, b"event bytes");
//! # Ok(()) }
//! ```
//!
//! # Public API (the contract other crates build on)
//! - [`Wal::open`] / [`Wal::open_with_storage`] → `(Wal, RecoveryReport)`: scan the directory,
//!   cut a torn tail of the newest segment (reported in [`RecoveryReport::torn_tail`] with the
//!   bytes dropped), finish an interrupted compaction, fail with [`Error::Corrupt`]
//!   `{ segment_id, offset_bytes, reason }` on any other damage (a flipped bit in the last
//!   acknowledged record included: every syncing write ends with a sync mark) unless
//!   [`RepairMode::TruncateAtCorruption`] (reported in [`RecoveryReport::repair`]), and with
//!   [`Error::UnsupportedFormatVersion`] on a segment of a newer format. `WalOptions::read_only` changes nothing on disk (for `verify`,
//!   `dump`, `stats`).
//! - Appends: [`Wal::append`]`(kind, payload) -> Lsn`, [`Wal::append_batch`] (one atomic batch in
//!   one commit, never split across segments), or [`Wal::enqueue`] + [`Wal::wait_durable`];
//!   [`Wal::sync`] makes everything written durable. They return once acknowledged under
//!   [`Durability`]. Payloads up to [`Wal::payload_size_bytes_max`]; kinds `0..=RecordKind::MAX`.
//! - Reads: [`Wal::read`]`(lsn) -> Option<OwnedRecord>`, [`Wal::iter_from`] (owned records),
//!   [`Wal::scan_from`] (zero-copy). Readers see acknowledged records only, never the log's own
//!   markers; a record moved by compaction has a new LSN and `copied_from: Some(old)`.
//! - Retention: [`Wal::segments`] (id, LSN range, size, and the caller time range when opened
//!   with [`Wal::open_timed`] and a [`TimeOf`] that reads a timestamp out of a record),
//!   [`Wal::delete_below`], [`Wal::compact_below`]`(lsn, live)` → [`CompactionReport`] with the
//!   `lsn_mapping` (old → new), and [`Wal::compact_below_with_progress`] telling a callback how
//!   far it is ([`CompactionProgress`]). Both remove only whole sealed segments at the front of the log. A
//!   reader still walking a removed segment may get `Error::Corrupt` (its file can be recycled).
//! - [`Wal::prepare_segments`]: the background step (a thread does it when
//!   `WalOptions::background_preparation`); [`Wal::stats`]: counters, among them the commit
//!   gather's ([`WalStats::gathers_count`], [`WalStats::gather_timeouts_count`]).
//! - Group commit's gather: `WalOptions::commit_gather_us_max` (default 200 µs, 0 = off, only
//!   with [`Durability::GroupCommit`]) bounds how long a commit leader waits for the committers
//!   the previous sync released before it writes and syncs, so one sync covers them too. The
//!   log's own syncer thread (notified appends) never gathers.
//! - Group commit's spin: `WalOptions::commit_spin_us_max` (default 200 µs, 0 = off, only with
//!   [`Durability::GroupCommit`]): a committer whose records another thread's sync will cover
//!   waits for it yielding the CPU, instead of sleeping, when syncs are that quick
//!   ([`WalStats::spins_count`], [`WalStats::spin_hits_count`]).
//! - [`Storage`] / [`StorageFile`] with [`FsStorage`] and, in tests or with feature `sim`,
//!   `storage::sim::SimStorage` (crash modes, fault plan). [`record::decode_frame`] /
//!   [`record::encode_frame`] for tools and fuzz targets.
//!
//! The byte layout and the crash argument are in `docs/wal-format.md`.
//!
//! Invariants: an acknowledged append is on disk; a newer segment is never written before older
//! segments' writes are durable; after any write or sync error the log is poisoned (fail-stop)
//! and every later call returns [`Error::Poisoned`]; damage before the end of the newest segment
//! is never skipped silently, and damage to an acknowledged record is never taken for a torn
//! write. This crate depends on no workspace crate and must not learn about
//! workflows.
#![deny(missing_docs)]

pub mod error;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod limits;
pub mod record;
pub mod segment;
pub mod storage;

mod compaction;
mod reader;
mod recovery;
mod wal;
mod writer;

use std::fmt;

pub use crate::compaction::CompactionProgress;
pub use crate::error::{
    CorruptReason, Error, Follower, HeaderDamage, OptionReason, Result, TornReason,
};
pub use crate::reader::RecordIter;
pub use crate::record::{OwnedRecord, Record};
pub use crate::recovery::{RecoveryReport, Repair, TornTail};
pub use crate::storage::{DirLock, FsStorage, Mapping, Storage, StorageFile, LOCK_FILE_NAME};
pub use crate::wal::{CompactionReport, SegmentInfo, TimeOf, Wal, WalOptions, WalStats};
pub use crate::writer::Acknowledged;

/// A log sequence number: dense, starting at 1, assigned in append order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Lsn(pub u64);

impl fmt::Display for Lsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A segment's number; segment files are named by it and numbered in log order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SegmentId(pub u64);

impl fmt::Display for SegmentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A caller-chosen record kind, `0..=RecordKind::MAX`. Larger values are the log's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RecordKind(u8);

impl RecordKind {
    /// The largest kind a caller may use.
    pub const MAX: u8 = 119;

    /// A caller kind; values above [`RecordKind::MAX`] are reserved.
    pub fn new(kind: u8) -> Result<Self> {
        if kind > Self::MAX {
            return Err(Error::ReservedKind {
                kind,
                max: Self::MAX,
            });
        }
        Ok(RecordKind(kind))
    }

    /// The kind's value.
    pub fn get(self) -> u8 {
        self.0
    }

    /// Builds a kind from a value already checked (copies of records read back).
    pub(crate) fn from_trusted(kind: u8) -> Self {
        debug_assert!(kind <= Self::MAX);
        RecordKind(kind)
    }
}

/// When an append counts as acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Every commit issues its own fdatasync before returning.
    PerCommit,
    /// One fdatasync covers every record written so far and wakes every waiter it covers; an
    /// idle caller syncs itself.
    GroupCommit,
    /// No sync at all: an append returns once written to the OS. For tests only.
    NoSync,
}

/// What open does with corruption.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RepairMode {
    /// Open fails with [`Error::Corrupt`].
    #[default]
    Refuse,
    /// Open truncates the log at the corruption and reports what it dropped.
    TruncateAtCorruption,
}

/// An inclusive range of LSNs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LsnRange {
    /// The first LSN.
    pub first: Lsn,
    /// The last LSN.
    pub last: Lsn,
}
