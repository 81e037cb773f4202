//! error: the one error type of the WAL crate.
//!
//! Invariants: every variant carries the evidence needed to act on it (segment, offset, sizes,
//! the failing operation and path). `Poisoned` carries the original cause. This module must not
//! decide policy (retry, repair): it only describes what happened.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use crate::record::Invalid;
use crate::{Lsn, SegmentId};

/// Every error the WAL returns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A storage operation failed.
    #[error("wal i/o error during {op} on {}: {source}", path.display())]
    Io {
        /// The storage operation (`write_at`, `sync_data`, `rename`, ...).
        op: &'static str,
        /// The file or directory it was applied to.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// Durable bytes do not form a valid log: a checksum, length, LSN or header failure at or
    /// before the durable end. Open refuses the log unless `RepairMode::TruncateAtCorruption`.
    #[error("wal corrupt in segment {segment_id} at offset {offset_bytes}: {reason}")]
    Corrupt {
        /// The segment holding the damage.
        segment_id: SegmentId,
        /// Byte offset inside the segment file where valid data stops.
        offset_bytes: u64,
        /// What is wrong there.
        reason: CorruptReason,
    },
    /// A record payload is larger than the log accepts.
    #[error("record of {size_bytes} bytes exceeds the limit of {limit_bytes} bytes")]
    RecordTooLarge {
        /// The payload size.
        size_bytes: usize,
        /// The effective limit (smaller of `RECORD_SIZE_BYTES_MAX` and the segment room).
        limit_bytes: usize,
    },
    /// A batch does not fit in one segment or has too many records.
    #[error("batch of {records_count} records and {size_bytes} bytes exceeds the limit of {limit_bytes} bytes / {limit_records} records")]
    BatchTooLarge {
        /// Records in the batch.
        records_count: usize,
        /// Framed bytes of the batch.
        size_bytes: usize,
        /// The most framed bytes one batch may take (one segment's room).
        limit_bytes: usize,
        /// The most records one batch may carry.
        limit_records: usize,
    },
    /// A batch with no records.
    #[error("append_batch called with no records")]
    EmptyBatch,
    /// A record kind outside the range reserved for callers.
    #[error("record kind {kind} is reserved for the log itself (callers use 0..={max})")]
    ReservedKind {
        /// The kind given.
        kind: u8,
        /// The largest kind a caller may use.
        max: u8,
    },
    /// Another process holds the log directory open for writing.
    #[error("wal directory {} is locked by another process (read-only opens do not need the lock)", dir.display())]
    Locked {
        /// The log directory.
        dir: PathBuf,
    },
    /// The log failed earlier (write or sync error); nothing more is accepted until reopen.
    #[error("wal poisoned by an earlier failure: {cause}")]
    Poisoned {
        /// The failure that poisoned the log.
        cause: Arc<Error>,
    },
    /// The writer needed a new segment and could not prepare it (a full disk, an I/O error):
    /// the append was refused before anything of it was written, and the log is not poisoned.
    /// Later appends try again.
    #[error("cannot prepare wal segment {segment_id}: {cause}")]
    SegmentUnavailable {
        /// The segment that could not be made.
        segment_id: SegmentId,
        /// What failed.
        cause: Arc<Error>,
    },
    /// Options that cannot work.
    #[error("invalid wal option {field}: {reason}")]
    InvalidOptions {
        /// The option.
        field: &'static str,
        /// Why it is rejected.
        reason: OptionReason,
    },
    /// The log was opened read-only and a mutating call was made.
    #[error("wal opened read-only: {op} refused")]
    ReadOnly {
        /// The refused operation.
        op: &'static str,
    },
    /// An LSN outside what the log holds.
    #[error("lsn {lsn} out of range: the log holds {first}..{next}")]
    LsnOutOfRange {
        /// The LSN asked for.
        lsn: Lsn,
        /// The first retained LSN.
        first: Lsn,
        /// The next LSN to be assigned.
        next: Lsn,
    },
    /// The LSN space is exhausted.
    #[error("lsn space exhausted at {lsn}")]
    LsnExhausted {
        /// The LSN that would have been assigned.
        lsn: Lsn,
    },
    /// Too many segment files.
    #[error("{count} segment files exceed the limit of {limit}")]
    TooManySegments {
        /// Segment files found or needed.
        count: usize,
        /// `SEGMENTS_MAX`.
        limit: usize,
    },
    /// A segment was written in a format version this build does not read (a newer build wrote
    /// it). Open refuses the log rather than misread it.
    #[error("segment {segment_id} has format version {version}; this build reads versions {supported_min}..={supported_max}")]
    UnsupportedFormatVersion {
        /// The segment.
        segment_id: SegmentId,
        /// The version its header names.
        version: u32,
        /// The oldest version this build reads.
        supported_min: u32,
        /// The newest version this build reads (and the one it writes).
        supported_max: u32,
    },
    /// A path that is not implemented.
    #[error("not supported: {what}")]
    Unsupported {
        /// What is missing.
        what: &'static str,
    },
}

impl Error {
    /// Wraps an I/O error with the operation and path it came from.
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Error::Io {
            op,
            path: path.into(),
            source,
        }
    }

    /// Whether the same call may succeed if made again, with nothing changed by the caller.
    ///
    /// Only `SegmentUnavailable` is: the append was refused before anything of it was written
    /// and the log is not poisoned. Every other error is terminal for the call: a poisoned log
    /// refuses every later write, bad input stays bad, damage stays until repaired.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::SegmentUnavailable { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_segment_unavailable_is_retryable() {
        let io = || Error::io("write_at", "/x", io::Error::other("disk full"));
        let unavailable = Error::SegmentUnavailable {
            segment_id: SegmentId(3),
            cause: Arc::new(io()),
        };
        assert!(unavailable.is_retryable());
        assert!(!io().is_retryable());
        assert!(!Error::Poisoned {
            cause: Arc::new(io())
        }
        .is_retryable());
        assert!(!Error::EmptyBatch.is_retryable());
    }

    #[test]
    fn typed_reasons_keep_their_text() {
        let corrupt = Error::Corrupt {
            segment_id: SegmentId(2),
            offset_bytes: 80,
            reason: CorruptReason::ValidAfterStop {
                stop: Some(Invalid::BadCrc {
                    expected: 1,
                    actual: 2,
                }),
                follower: Follower::SyncMark,
                lsn: 9,
                offset_bytes: 120,
            },
        };
        assert_eq!(
            corrupt.to_string(),
            "wal corrupt in segment 2 at offset 80: checksum mismatch: stored 0x00000001, \
             computed 0x00000002, yet a valid sync mark (lsn 9) follows at offset 120"
        );
        let end = CorruptReason::ValidAfterStop {
            stop: None,
            follower: Follower::Record,
            lsn: 4,
            offset_bytes: 64,
        };
        assert_eq!(
            end.to_string(),
            "end of scan, yet a valid record (lsn 4) follows at offset 64"
        );
        assert_eq!(
            CorruptReason::HeaderDamagedBeforeRecord {
                damage: HeaderDamage::BadMagic,
                lsn: 5,
                offset_bytes: 64,
            }
            .to_string(),
            "bad segment magic; yet record lsn 5 of this segment follows at offset 64"
        );
        assert_eq!(
            CorruptReason::SealedFrame {
                invalid: Invalid::Zeroed,
                expected_lsn: 7,
                next_first_lsn: 9,
            }
            .to_string(),
            "zeroed record header where lsn 7 was expected; the next segment starts at lsn 9"
        );
        assert_eq!(
            TornReason::Header(HeaderDamage::ShortFile { len_bytes: 10 }).to_string(),
            "torn segment header: file of 10 bytes is shorter than a header"
        );
        assert_eq!(TornReason::IncompleteBatch.to_string(), "incomplete batch");
        assert_eq!(
            Error::InvalidOptions {
                field: "segments_ready_count",
                reason: OptionReason::OutsideRange {
                    value: 0,
                    min: 1,
                    max: 8,
                },
            }
            .to_string(),
            "invalid wal option segments_ready_count: 0 is outside 1..=8"
        );
        assert_eq!(
            OptionReason::AboveLimit {
                value: 20,
                limit: 10,
            }
            .to_string(),
            "20 is above 10"
        );
    }
}

/// What is wrong with a segment header that is neither valid, zeroed nor recycled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderDamage {
    /// The file ends before a whole header.
    #[error("file of {len_bytes} bytes is shorter than a header")]
    ShortFile {
        /// The file's length.
        len_bytes: u64,
    },
    /// The first bytes are not the segment magic.
    #[error("bad segment magic")]
    BadMagic,
    /// The header checksum does not match.
    #[error("segment header checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    ChecksumMismatch {
        /// The CRC stored in the header.
        stored: u32,
        /// The CRC computed over the header.
        computed: u32,
    },
    /// The header's first LSN is 0 or above `LSN_MAX`.
    #[error("segment header names lsn {first_lsn}, outside 1..={max}")]
    FirstLsnOutOfRange {
        /// The LSN the header names.
        first_lsn: Lsn,
        /// `LSN_MAX`.
        max: u64,
    },
    /// The file is larger than any segment may be.
    #[error("segment file of {len_bytes} bytes exceeds SEGMENT_SIZE_BYTES_MAX")]
    FileTooLarge {
        /// The file's length.
        len_bytes: u64,
    },
}

/// What follows a damaged frame in the newest segment, proving the damage is not a torn tail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follower {
    /// A record.
    Record,
    /// A sync mark: the damaged bytes were synced with it.
    SyncMark,
}

impl std::fmt::Display for Follower {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Follower::Record => "record",
            Follower::SyncMark => "sync mark",
        })
    }
}

/// Why durable bytes do not form a valid log (`Error::Corrupt`, `Repair`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CorruptReason {
    /// A used segment's header is damaged.
    #[error("{0}")]
    Header(HeaderDamage),
    /// A used segment's header is all zeros, yet a later segment is in use.
    #[error("zeroed segment header before a later segment")]
    ZeroedHeader,
    /// A used segment's header names another segment.
    #[error("segment header names segment {found}")]
    RecycledHeader {
        /// The segment id the header names.
        found: SegmentId,
    },
    /// An unused segment's header is damaged, yet a record of that segment follows it.
    #[error("{damage}; yet record lsn {lsn} of this segment follows at offset {offset_bytes}")]
    HeaderDamagedBeforeRecord {
        /// What is wrong with the header.
        damage: HeaderDamage,
        /// The record found after it.
        lsn: u64,
        /// Where that record starts.
        offset_bytes: u64,
    },
    /// A sealed segment holds an invalid frame.
    #[error("{invalid} where lsn {expected_lsn} was expected; the next segment starts at lsn {next_first_lsn}")]
    SealedFrame {
        /// What is wrong with the frame.
        invalid: Invalid,
        /// The LSN the frame should have held.
        expected_lsn: u64,
        /// The first LSN of the next segment.
        next_first_lsn: u64,
    },
    /// A sealed segment ends with an incomplete batch.
    #[error("sealed segment ends inside a batch")]
    SealedInsideBatch,
    /// The newest segment stops (at a damaged frame or the scan's end), yet a valid frame
    /// follows: damage, not a torn tail.
    #[error("{}, yet a valid {follower} (lsn {lsn}) follows at offset {offset_bytes}", StopDisplay(*stop))]
    ValidAfterStop {
        /// The damaged frame, or `None` where the scan ended without one.
        stop: Option<Invalid>,
        /// What follows.
        follower: Follower,
        /// The LSN of what follows.
        lsn: u64,
        /// Where it starts.
        offset_bytes: u64,
    },
    /// An acknowledged record does not read back.
    #[error("reading acknowledged lsn {lsn}: {invalid}")]
    AcknowledgedUnreadable {
        /// The record's LSN.
        lsn: Lsn,
        /// What is wrong with its frame.
        invalid: Invalid,
    },
}

/// Shows a scan's stop: the invalid frame, or "end of scan".
struct StopDisplay(Option<Invalid>);

impl std::fmt::Display for StopDisplay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(invalid) => invalid.fmt(f),
            None => f.write_str("end of scan"),
        }
    }
}

/// What recovery found at a torn tail (`TornTail`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TornReason {
    /// The header of a segment after the used ones was torn.
    #[error("torn segment header: {0}")]
    Header(HeaderDamage),
    /// The newest segment ends at a torn frame.
    #[error("{0}")]
    Frame(Invalid),
    /// The newest segment ends inside a batch.
    #[error("incomplete batch")]
    IncompleteBatch,
}

/// Why an option is rejected (`Error::InvalidOptions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OptionReason {
    /// The value is outside an inclusive range.
    #[error("{value} is outside {min}..={max}")]
    OutsideRange {
        /// The value given.
        value: u64,
        /// The smallest value accepted.
        min: u64,
        /// The largest value accepted.
        max: u64,
    },
    /// The value is above a limit.
    #[error("{value} is above {limit}")]
    AboveLimit {
        /// The value given.
        value: u64,
        /// The largest value accepted.
        limit: u64,
    },
}

/// The WAL's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
