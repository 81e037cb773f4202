//! limits: every named maximum of the WAL crate, in one place.
//!
//! Invariants: relationships between limits are checked at compile time below. Exceeding a limit
//! is a typed error (`Error::RecordTooLarge`, `Error::BatchTooLarge`, `Error::InvalidOptions`),
//! never a silent truncation. This module holds constants only; it must not do anything.

/// Bytes of framing in front of every record payload: CRC32, payload length, LSN and kind.
pub const RECORD_HEADER_SIZE_BYTES: usize = 16;

/// The largest record payload a caller may append, in bytes (when the segment has room for it:
/// with small segments the limit is the segment's room, see `Wal::payload_size_bytes_max`).
pub const RECORD_SIZE_BYTES_MAX: usize = 4 * 1024 * 1024;

/// Bytes compaction puts in front of a payload it copies forward (original LSN, compaction,
/// original kind).
pub const COPY_PREFIX_SIZE_BYTES: usize = 17;

/// The largest payload of any frame on disk: a caller's largest payload plus the copy prefix.
pub const FRAME_PAYLOAD_SIZE_BYTES_MAX: usize = RECORD_SIZE_BYTES_MAX + COPY_PREFIX_SIZE_BYTES;

/// Bytes reserved at the start of every segment file for its header.
pub const SEGMENT_HEADER_SIZE_BYTES: usize = 64;

/// Payload bytes of a sync mark: the durable LSN before the write it ends.
pub const SYNC_MARK_PAYLOAD_SIZE_BYTES: usize = 8;

/// Bytes of the sync mark that ends every syncing write (framing plus payload). Every segment
/// keeps this much room behind its last record, so a mark always fits.
pub const SYNC_MARK_FRAME_SIZE_BYTES: usize =
    RECORD_HEADER_SIZE_BYTES + SYNC_MARK_PAYLOAD_SIZE_BYTES;

/// The smallest segment size accepted by `WalOptions`.
pub const SEGMENT_SIZE_BYTES_MIN: u64 = 4096;

/// The largest segment size accepted by `WalOptions` (offsets inside a segment fit in a u32).
pub const SEGMENT_SIZE_BYTES_MAX: u64 = 1 << 30;

/// The default segment size.
pub const SEGMENT_SIZE_BYTES_DEFAULT: u64 = 64 * 1024 * 1024;

/// The most records one `append_batch` call may carry.
pub const BATCH_RECORDS_MAX: usize = 65_536;

/// The most preallocated (or recycled) segments kept ready ahead of the writer.
pub const SEGMENTS_READY_MAX: usize = 8;

/// The most segment files a log directory may hold.
pub const SEGMENTS_MAX: usize = 1_000_000;

/// The largest LSN: LSNs take the low 56 bits of the header's LSN word.
pub const LSN_MAX: u64 = (1 << 56) - 1;

/// One sparse index entry is kept per this many records of a segment (reads by LSN).
pub const INDEX_STRIDE_RECORDS: u64 = 64;

/// Size of one write when a segment is zero-filled.
///
/// Small on purpose: the page cache keeps a buffered write's pages in folios sized to the write,
/// and the log later appends commit by commit into the pages this fill left cached. On Linux 6.18
/// ext4, a 1,028-byte append into a segment filled 1 MiB at a time took 5.5 µs in `pwrite` and
/// its `fdatasync` 2-4 µs more than the same append into one filled 16 KiB at a time (2.5 µs,
/// the same as a 4 KiB file's); 64 KiB was already slower to sync
/// (`benches/probes/fdatasync_file_size.py`). The fill itself costs more syscalls: about 25 ms of
/// writes for a 64 MiB segment against 12 ms, on the preallocating thread.
pub const ZERO_FILL_CHUNK_BYTES: usize = 16 * 1024;

/// The most records one compaction may copy forward.
pub const COMPACTION_RECORDS_MAX: usize = 16 * 1024 * 1024;

/// The most batches of `Wal::append_batch_notify` that may wait for their acknowledgement at
/// once. Past it, a notifying append waits for its own commit (back-pressure, no refusal).
pub const NOTICES_PENDING_MAX: usize = 65_536;

const _: () = assert!(RECORD_HEADER_SIZE_BYTES <= 16);
const _: () = assert!(SEGMENT_SIZE_BYTES_MIN <= SEGMENT_SIZE_BYTES_DEFAULT);
const _: () = assert!(SEGMENT_SIZE_BYTES_DEFAULT <= SEGMENT_SIZE_BYTES_MAX);
const _: () = assert!(SEGMENT_SIZE_BYTES_MAX <= u32::MAX as u64);
const _: () = assert!(
    (SEGMENT_HEADER_SIZE_BYTES + RECORD_HEADER_SIZE_BYTES) as u64 <= SEGMENT_SIZE_BYTES_MIN
);
// The smallest segment holds a header, a record with a copy prefix, and its sync mark.
const _: () = assert!(
    (SEGMENT_HEADER_SIZE_BYTES
        + RECORD_HEADER_SIZE_BYTES
        + COPY_PREFIX_SIZE_BYTES
        + SYNC_MARK_FRAME_SIZE_BYTES) as u64
        <= SEGMENT_SIZE_BYTES_MIN
);
const _: () = assert!(FRAME_PAYLOAD_SIZE_BYTES_MAX as u64 <= SEGMENT_SIZE_BYTES_MAX);
const _: () = assert!(FRAME_PAYLOAD_SIZE_BYTES_MAX <= u32::MAX as usize);
const _: () = assert!(SEGMENTS_READY_MAX >= 1);

/// How long a writable open waits, by default, for a directory lock held by a log handle that is
/// still being dropped, in milliseconds.
pub const LOCK_WAIT_MS_DEFAULT: u64 = 5_000;

/// The pause between two attempts to take a directory lock, in milliseconds.
pub const LOCK_RETRY_MS: u64 = 5;

const _: () = assert!(LOCK_RETRY_MS <= LOCK_WAIT_MS_DEFAULT);

/// The most framed bytes of copies one compaction hands the writer in one batch (one lock of
/// the writer's state per batch, not per record), and then writes and syncs itself before the
/// next: a concurrent committer waits for at most one batch's write and sync (a small batch
/// keeps that wait near an idle append's; `docs/bench/tuning.md`).
/// Capped to a sixteenth of the segment size so a batch that does not fit the active segment's
/// tail wastes little of it.
pub const COMPACTION_BATCH_SIZE_BYTES_MAX: usize = 16 * 1024;

/// The most framed bytes of copies a compaction leaves written but unsynced while no appender
/// is active (none waited for, none appended between two of its batches): it then syncs each
/// batch only when appends come, or at this bound, instead of pacing every batch with an
/// fdatasync of its own. An appender that arrives meanwhile finds at most this much of ours to
/// flush, once. Measured (bench `redrive`, `STATELOG_BENCH_ONLY=throughput`): the per-batch
/// syncs were 18-22 ms of a 54 MiB compaction's 110 ms.
pub const COMPACTION_IDLE_UNSYNCED_SIZE_BYTES_MAX: usize = 1024 * 1024;

/// The nice value of a compaction's scanning thread (the lowest CPU priority): on a small
/// machine the scan competes with the threads that append, which must win.
pub const COMPACTION_SCAN_NICE: i32 = 19;

/// Batches of copies a compaction's scanning thread may prepare ahead of the thread that
/// appends them (memory: this many times `COMPACTION_BATCH_SIZE_BYTES_MAX`).
pub const COMPACTION_SCAN_QUEUE_BATCHES: usize = 4;

/// Times a compaction lets concurrent committers go first before each batch of copies and each
/// segment removal (then it proceeds: compaction is never starved).
pub const COMPACTION_GIVE_WAYS_MAX: usize = 4;

/// The longest one give-way of a compaction waits for the commit in flight to end.
pub const COMPACTION_GIVE_WAY_WAIT_MS: u64 = 5;

/// The default of `WalOptions::commit_gather_us_max`: the longest a group-commit leader waits,
/// before it writes and syncs, for the committers the previous sync released to append again.
pub const COMMIT_GATHER_US_MAX_DEFAULT: u64 = 200;

/// The largest `WalOptions::commit_gather_us_max` accepted (10 ms): past it a lone committer
/// whose expected companions never come would wait longer than a slow disk's sync.
pub const COMMIT_GATHER_US_LIMIT: u64 = 10_000;

/// A gather waits at most this fraction (numerator over `COMMIT_GATHER_SYNC_DENOMINATOR`) of the
/// running average sync duration, so its worst case adds at most half a sync to a commit.
pub const COMMIT_GATHER_SYNC_NUMERATOR: u64 = 1;

/// The denominator of the gather's fraction of the average sync duration.
pub const COMMIT_GATHER_SYNC_DENOMINATOR: u64 = 2;

/// The running average of sync durations moves by 1/2^this of the difference on each sync
/// (an exponentially weighted average over about the last eight syncs).
pub const SYNC_AVERAGE_WEIGHT_SHIFT: u32 = 3;

const _: () = assert!(COMMIT_GATHER_US_MAX_DEFAULT <= COMMIT_GATHER_US_LIMIT);
const _: () = assert!(COMMIT_GATHER_SYNC_NUMERATOR <= COMMIT_GATHER_SYNC_DENOMINATOR);
const _: () = assert!(COMMIT_GATHER_SYNC_DENOMINATOR > 0);

/// The default of `WalOptions::commit_spin_us_max`: the longest a committer whose records a
/// running sync will cover spins (yielding the CPU) for it before it sleeps on the condvar.
pub const COMMIT_SPIN_US_MAX_DEFAULT: u64 = 200;

/// The largest `WalOptions::commit_spin_us_max` accepted (1 ms): spinning is only worth it
/// for syncs quicker than a sleep-and-wake round trip, a few hundred microseconds at most.
pub const COMMIT_SPIN_US_LIMIT: u64 = 1_000;

/// A spin lasts at most this multiple (numerator over `COMMIT_SPIN_SYNC_DENOMINATOR`) of the
/// running average sync duration: a committer that arrives during a gather and its sync waits
/// for at most about 1.5 syncs.
pub const COMMIT_SPIN_SYNC_NUMERATOR: u64 = 3;

/// The denominator of the spin's multiple of the average sync duration.
pub const COMMIT_SPIN_SYNC_DENOMINATOR: u64 = 2;

/// Cores the commit spin leaves to other threads: at most the available cores less this many
/// committers spin at once (at least one), the others sleep until the sync wakes them.
pub const COMMIT_SPIN_CORES_RESERVED: usize = 1;

const _: () = assert!(COMMIT_SPIN_US_MAX_DEFAULT <= COMMIT_SPIN_US_LIMIT);
const _: () = assert!(COMMIT_SPIN_SYNC_DENOMINATOR > 0);

/// The step in which the blocks of a retired segment are freed (hole punched, then synced)
/// before its file is removed, while appenders are active: on a disk that discards freed
/// blocks, removing a whole file at once stalls a concurrent append's fdatasync; smaller steps
/// spread the freeing thinner at the cost of a longer removal. 64 KiB is the measured balance
/// (`docs/bench/tuning.md`).
pub const RETIRE_RELEASE_STEP_BYTES: u64 = 64 * 1024;

/// The first wait before the background thread retries a failed segment preparation, in ms.
pub const PREPARE_RETRY_MS_MIN: u64 = 10;

/// The longest wait between retries of a failed segment preparation, in ms (the wait doubles
/// from `PREPARE_RETRY_MS_MIN` up to it): a full disk is probed at most once a few seconds.
pub const PREPARE_RETRY_MS_MAX: u64 = 5_000;

const _: () = assert!(0 < PREPARE_RETRY_MS_MIN);
const _: () = assert!(PREPARE_RETRY_MS_MIN <= PREPARE_RETRY_MS_MAX);
