//! recovery: the scan run by open, and what it decides.
//!
//! It lists the segment files, classifies their headers, scans every record of every used
//! segment (CRC, length and the exact expected LSN each time), and decides:
//! - a sealed (non-newest) segment must hold every LSN up to the next segment's first LSN and end
//!   on a batch boundary; anything else is `Error::Corrupt`. Bytes after that point are the
//!   remains of a tail that an earlier recovery fenced off, never records;
//! - the newest segment ends at its first invalid frame. If any valid frame of this segment
//!   follows, that is corruption. Otherwise the tail is torn or zeroed: the log ends at the last
//!   complete batch (a record's or a sync mark's), and if a tail was cut (reported with the
//!   bytes it dropped) the writer is *fenced*: its next append rotates to a new segment whose
//!   header records where the old one ends, so the dropped frames can never be mistaken for
//!   records. Every syncing write ends with a sync mark, so an acknowledged record is never the
//!   last valid frame: damage to it is always followed by a valid frame, and is corruption;
//! - a version-1 newest segment (no sync marks) is fenced too: marks never enter it;
//! - an interrupted compaction whose commit record is durable is finished (old segments removed).
//!
//! Invariants: nothing is skipped silently: every truncation is in the `RecoveryReport`, every
//! other damage is an error unless `RepairMode::TruncateAtCorruption`. In read-only mode nothing
//! on disk changes. Recovery never rewrites record bytes.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::error::{CorruptReason, Error, Follower, Result, TornReason};
use crate::limits::{
    INDEX_STRIDE_RECORDS, RECORD_HEADER_SIZE_BYTES, SEGMENTS_MAX, SEGMENT_HEADER_SIZE_BYTES,
    SYNC_MARK_PAYLOAD_SIZE_BYTES,
};
use crate::record::{self, Frame, Invalid, KIND_COMPACT_COMMIT};
use crate::segment::{self, HeaderState, TEMP_SUFFIX};
use crate::storage::{join, Mapping, Storage, StorageFile};
use crate::wal::{TimeOf, WalOptions};
use crate::{Lsn, RecordKind, RepairMode, SegmentId};

/// What open found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Segments whose records were scanned.
    pub segments_scanned_count: usize,
    /// Records found valid (including the log's own compaction markers, which take LSNs).
    pub records_count: u64,
    /// Sync marks found valid (they end syncing writes and take no LSN; not in `records_count`).
    pub sync_marks_count: u64,
    /// Record bytes checked.
    pub bytes_scanned: u64,
    /// The first retained LSN, if any record is retained.
    pub first_lsn: Option<Lsn>,
    /// The last LSN, if any.
    pub last_lsn: Option<Lsn>,
    /// The torn or zeroed tail that was cut off, if it held anything.
    pub torn_tail: Option<TornTail>,
    /// What `RepairMode::TruncateAtCorruption` dropped.
    pub repair: Option<Repair>,
    /// Old segments removed to finish a compaction interrupted after its commit.
    pub compaction_segments_removed: Vec<SegmentId>,
    /// Leftover temporary files removed.
    pub temp_files_removed_count: usize,
    /// Preallocated or recycled segments found ready for use.
    pub segments_ready_count: usize,
}

/// A torn tail cut off by recovery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// The newest segment.
    pub segment_id: SegmentId,
    /// Where the log now ends inside it.
    pub offset_bytes: u64,
    /// What was found there.
    pub reason: TornReason,
    /// Complete records dropped because their batch was incomplete.
    pub records_dropped_count: u64,
    /// Bytes cut off: the complete records dropped plus the damaged frame as far as its header
    /// states its length (its header alone when the length is out of bounds; nothing for zeros).
    pub dropped_bytes: u64,
}

/// What repair dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repair {
    /// The segment holding the corruption.
    pub segment_id: SegmentId,
    /// Where the log now ends inside it.
    pub offset_bytes: u64,
    /// The corruption.
    pub reason: CorruptReason,
    /// Whole segments removed after it.
    pub segments_removed: Vec<SegmentId>,
}

/// One used segment as the catalog holds it.
#[derive(Debug)]
pub(crate) struct SegMeta {
    pub id: SegmentId,
    pub seed: u32,
    pub file: Arc<dyn StorageFile>,
    pub path: PathBuf,
    pub size_bytes: u64,
    pub first_lsn: u64,
    /// Set once the segment is no longer appended to: (last LSN or `None`, end offset).
    pub sealed: Option<(Option<u64>, u64)>,
    /// Sparse (lsn, offset) index, one entry per `INDEX_STRIDE_RECORDS` records.
    pub index: Vec<(u64, u32)>,
    /// The mapping, cached once the segment is sealed (or, where the storage maps live, at the
    /// first read of the active segment).
    pub map: Arc<OnceLock<Mapping>>,
    /// (min, max) caller timestamp of its records (`Wal::open_timed`), once sealed; the
    /// active segment's range lives in the writer state.
    pub time_range: Option<(u64, u64)>,
}

/// Everything open needs to start the writer.
#[derive(Debug)]
pub(crate) struct Recovered {
    pub segments: Vec<SegMeta>,
    pub ready: Vec<(SegmentId, Arc<dyn StorageFile>, PathBuf)>,
    pub next_lsn: u64,
    pub active_end_offset: u64,
    pub active_records_count: u64,
    pub active_time_range: Option<(u64, u64)>,
    /// The active segment's last kept frame is a record, not a sync mark: the next syncing
    /// write must end with one even if it carries no new record.
    pub active_needs_mark: bool,
    pub fence: bool,
    pub committed: HashSet<u64>,
    pub next_segment_id: u64,
    pub report: RecoveryReport,
}

/// The outcome of scanning one segment.
#[derive(Debug, Default)]
struct Scan {
    /// Offset just past the last valid frame.
    end_offset: u64,
    last_lsn: Option<u64>,
    /// (lsn, offset after) of the last frame that ends a batch.
    last_batch_end: Option<(u64, u64)>,
    /// The frame ending the last batch is a sync mark.
    last_batch_end_is_mark: bool,
    /// Where and why the scan stopped, when it stopped on an invalid frame.
    stop: Option<(u64, Invalid)>,
    records_count: u64,
    sync_marks_count: u64,
    index: Vec<(u64, u32)>,
    /// (lsn, begin lsn, first segment, last segment) of every compaction commit.
    commits: Vec<(u64, u64, u64, u64)>,
    /// Caller time range of the records up to the last batch end.
    time_range_at_batch_end: Option<(u64, u64)>,
}

fn scan(
    bytes: &[u8],
    seed: u32,
    first_lsn: u64,
    stop_before: Option<u64>,
    time_of: Option<TimeOf>,
) -> Scan {
    let mut time_range: Option<(u64, u64)> = None;
    let mut out = Scan {
        end_offset: SEGMENT_HEADER_SIZE_BYTES as u64,
        ..Scan::default()
    };
    let mut offset = SEGMENT_HEADER_SIZE_BYTES;
    let mut expected = first_lsn;
    // A sync mark may follow a record of this segment, never open it or follow another mark.
    let mut mark_allowed = false;
    loop {
        if Some(expected) == stop_before {
            break;
        }
        match record::decode_next(bytes, offset, seed, expected, mark_allowed) {
            Ok(frame) if frame.is_sync_mark() => {
                debug_assert_eq!(frame.payload.len(), SYNC_MARK_PAYLOAD_SIZE_BYTES);
                debug_assert!(frame.is_batch_end(), "a sync mark is its own batch");
                offset += frame.size_bytes;
                out.sync_marks_count += 1;
                out.last_batch_end = Some((frame.lsn, offset as u64));
                out.last_batch_end_is_mark = true;
                out.time_range_at_batch_end = time_range;
                mark_allowed = false;
            }
            Ok(frame) => {
                if out.records_count % INDEX_STRIDE_RECORDS == 0 {
                    let offset_u32 = u32::try_from(offset)
                        .expect("segment offsets fit u32 (SEGMENT_SIZE_BYTES_MAX)");
                    out.index.push((expected, offset_u32));
                }
                note_marker(&frame, &mut out.commits);
                if let Some(time_of) = time_of {
                    widen(&mut time_range, frame_time(time_of, &frame));
                }
                offset += frame.size_bytes;
                out.records_count += 1;
                out.last_lsn = Some(expected);
                if frame.is_batch_end() {
                    out.last_batch_end = Some((expected, offset as u64));
                    out.last_batch_end_is_mark = false;
                    out.time_range_at_batch_end = time_range;
                }
                expected += 1;
                mark_allowed = true;
            }
            Err(invalid) => {
                out.stop = Some((offset as u64, invalid));
                break;
            }
        }
    }
    out.end_offset = offset as u64;
    out
}

/// The caller time of a frame: of the caller's record, or of the original a copy carries.
fn frame_time(time_of: TimeOf, frame: &Frame<'_>) -> Option<u64> {
    item_time(time_of, frame.kind_value(), frame.payload)
}

/// The caller time of a record of kind value `kind` (caller kind, or a copy of one).
pub(crate) fn item_time(time_of: TimeOf, kind: u8, payload: &[u8]) -> Option<u64> {
    if kind <= RecordKind::MAX {
        return (time_of.0)(RecordKind::from_trusted(kind), payload);
    }
    if kind == record::KIND_COPY {
        let (_, _, original_kind, payload) = record::decode_copy_payload(payload)?;
        if original_kind <= RecordKind::MAX {
            return (time_of.0)(RecordKind::from_trusted(original_kind), payload);
        }
    }
    None
}

/// Widens a (min, max) range by one time.
pub(crate) fn widen(range: &mut Option<(u64, u64)>, time: Option<u64>) {
    if let Some(time) = time {
        *range = Some(match *range {
            None => (time, time),
            Some((min, max)) => (min.min(time), max.max(time)),
        });
    }
}

fn note_marker(frame: &Frame<'_>, commits: &mut Vec<(u64, u64, u64, u64)>) {
    if frame.kind_value() != KIND_COMPACT_COMMIT {
        return;
    }
    let p = frame.payload;
    if p.len() < 24 {
        return;
    }
    let word = |i: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&p[i..i + 8]);
        u64::from_le_bytes(w)
    };
    commits.push((frame.lsn, word(0), word(8), word(16)));
}

/// How many bytes the invalid frame at `offset` spans, as far as its header says: the stated
/// frame when its length is in bounds, the header alone when not, nothing for zeros.
fn damaged_frame_bytes(bytes: &[u8], offset: u64, invalid: Invalid) -> u64 {
    let remaining = (bytes.len() as u64).saturating_sub(offset);
    match invalid {
        // Fewer bytes than a header at the end of the file: never a frame the writer began.
        Invalid::Zeroed | Invalid::ShortHeader => 0,
        Invalid::BadLength { .. } => (RECORD_HEADER_SIZE_BYTES as u64).min(remaining),
        Invalid::BadLsn { .. } | Invalid::BadCrc { .. } => {
            let stated = usize::try_from(offset)
                .ok()
                .and_then(|offset| record::peek_header(bytes, offset))
                .map_or(0, |(len, _, _)| u64::from(len));
            (RECORD_HEADER_SIZE_BYTES as u64 + stated).min(remaining)
        }
    }
}

/// Zeroed space is skipped in blocks of this size while hunting for valid frames.
const ZERO_SKIP_BLOCK_BYTES: usize = 256;

/// Looks for any valid frame of this segment at or after `from` with an LSN of at least
/// `lsn_min` (frames the writer could have written after the damage); returns (offset, lsn).
fn find_valid_after(bytes: &[u8], seed: u32, from: usize, lsn_min: u64) -> Option<(u64, u64)> {
    let mut offset = from;
    while offset + RECORD_HEADER_SIZE_BYTES <= bytes.len() {
        // Skip zeroed space a block at a time: preallocated tails are zeros.
        if offset % ZERO_SKIP_BLOCK_BYTES == 0 {
            if let Some(block) = bytes.get(offset..offset + ZERO_SKIP_BLOCK_BYTES) {
                if block.iter().fold(0u8, |acc, &b| acc | b) == 0 {
                    offset += ZERO_SKIP_BLOCK_BYTES;
                    continue;
                }
            }
        }
        if let Some((len, lsn, _kind)) = record::peek_header(bytes, offset) {
            let fits = (len as usize) <= bytes.len() - offset - RECORD_HEADER_SIZE_BYTES;
            if fits && lsn != 0 && lsn >= lsn_min {
                if let Ok(frame) = record::decode(bytes, offset, seed, None) {
                    return Some((offset as u64, frame.lsn));
                }
            }
        }
        offset += 1;
    }
    None
}

struct FileEntry {
    id: SegmentId,
    path: PathBuf,
    file: Arc<dyn StorageFile>,
    map: Mapping,
    header: HeaderState,
}

fn corrupt(segment_id: SegmentId, offset_bytes: u64, reason: CorruptReason) -> Error {
    Error::Corrupt {
        segment_id,
        offset_bytes,
        reason,
    }
}

/// Runs recovery over `dir`.
pub(crate) fn recover(
    storage: &dyn Storage,
    dir: &Path,
    options: &WalOptions,
    time_of: Option<TimeOf>,
) -> Result<Recovered> {
    let names = storage.list(dir).map_err(|e| Error::io("list", dir, e))?;
    let mut report = RecoveryReport::default();
    let mut dir_dirty = false;
    let mut entries: Vec<FileEntry> = Vec::new();
    for name in &names {
        let path = join(dir, name);
        if name.ends_with(TEMP_SUFFIX) {
            if !options.read_only {
                storage
                    .remove(&path)
                    .map_err(|e| Error::io("remove", &path, e))?;
                dir_dirty = true;
            }
            report.temp_files_removed_count += 1;
            continue;
        }
        let Some(id) = segment::parse_file_name(name) else {
            continue;
        };
        let opened = if options.read_only {
            storage.open_read(&path)
        } else {
            storage.open(&path)
        };
        let file = opened.map_err(|e| Error::io("open", &path, e))?;
        let map = file.map().map_err(|e| Error::io("mmap", &path, e))?;
        let header = segment::read_header(&map, id);
        entries.push(FileEntry {
            id,
            path,
            file,
            map,
            header,
        });
    }
    if entries.len() > SEGMENTS_MAX {
        return Err(Error::TooManySegments {
            count: entries.len(),
            limit: SEGMENTS_MAX,
        });
    }
    entries.sort_by_key(|entry| entry.id);
    // A segment of a newer format anywhere: this build must not guess what it holds.
    for entry in &entries {
        if let HeaderState::UnsupportedVersion { version } = entry.header {
            return Err(Error::UnsupportedFormatVersion {
                segment_id: entry.id,
                version,
                supported_min: segment::FORMAT_VERSION_MIN,
                supported_max: segment::FORMAT_VERSION,
            });
        }
    }
    let next_segment_id = entries.last().map_or(1, |entry| entry.id.0 + 1);

    // Which files are used segments: every file up to the last one with a valid header.
    let last_used_index = entries
        .iter()
        .rposition(|entry| matches!(entry.header, HeaderState::Valid(_)));
    let mut removed: Vec<SegmentId> = Vec::new();
    let mut repair: Option<Repair> = None;
    let mut used_count = last_used_index.map_or(0, |index| index + 1);
    for (index, entry) in entries.iter().enumerate().take(used_count) {
        if let HeaderState::Valid(_) = entry.header {
            continue;
        }
        let reason = match &entry.header {
            HeaderState::Zeroed => CorruptReason::ZeroedHeader,
            HeaderState::Recycled { found } => CorruptReason::RecycledHeader { found: *found },
            HeaderState::Damaged(damage) => CorruptReason::Header(*damage),
            HeaderState::Valid(_) => unreachable!("valid headers skipped above"),
            HeaderState::UnsupportedVersion { .. } => {
                unreachable!("unsupported versions refused above")
            }
        };
        if options.repair != RepairMode::TruncateAtCorruption {
            return Err(corrupt(entry.id, 0, reason));
        }
        repair = Some(Repair {
            segment_id: entry.id,
            offset_bytes: 0,
            reason,
            segments_removed: Vec::new(),
        });
        used_count = index;
        break;
    }
    // Files after the used ones: a damaged header there is a torn header of an unused segment
    // (reported, like any torn write), unless records of that segment follow it.
    let mut torn_header: Option<TornTail> = None;
    for entry in entries.iter().skip(used_count) {
        if let HeaderState::Damaged(damage) = entry.header {
            let seed = record::segment_seed(entry.id);
            let found = find_valid_after(&entry.map, seed, SEGMENT_HEADER_SIZE_BYTES, 1);
            if found.is_none() && torn_header.is_none() {
                torn_header = Some(TornTail {
                    segment_id: entry.id,
                    offset_bytes: 0,
                    reason: TornReason::Header(damage),
                    records_dropped_count: 0,
                    dropped_bytes: SEGMENT_HEADER_SIZE_BYTES as u64,
                });
            }
            if let Some((offset, lsn)) = found {
                let reason = CorruptReason::HeaderDamagedBeforeRecord {
                    damage,
                    lsn,
                    offset_bytes: offset,
                };
                if options.repair != RepairMode::TruncateAtCorruption {
                    return Err(corrupt(entry.id, 0, reason));
                }
                if repair.is_none() {
                    repair = Some(Repair {
                        segment_id: entry.id,
                        offset_bytes: 0,
                        reason,
                        segments_removed: Vec::new(),
                    });
                }
            }
        }
    }

    // Scan the used segments in order.
    let mut segments: Vec<SegMeta> = Vec::new();
    let mut commits: Vec<(u64, u64, u64, u64)> = Vec::new();
    let mut fence = false;
    let mut next_lsn = 1u64;
    let mut active_end_offset = SEGMENT_HEADER_SIZE_BYTES as u64;
    let mut active_records_count = 0u64;
    let mut active_time_range: Option<(u64, u64)> = None;
    let mut active_needs_mark = false;
    let mut index = 0usize;
    while index < used_count {
        let entry = &entries[index];
        let HeaderState::Valid(header) = entry.header else {
            unreachable!("files before used_count have valid headers")
        };
        let seed = record::segment_seed(entry.id);
        let next_first = if index + 1 < used_count {
            match &entries[index + 1].header {
                HeaderState::Valid(next) => Some(next.first_lsn.0),
                _ => unreachable!("files before used_count have valid headers"),
            }
        } else {
            None
        };
        // Used segments are read whole: map them again with their pages prefaulted.
        let map = entry
            .file
            .map_for_scan()
            .map_err(|e| Error::io("mmap", &entry.path, e))?;
        let scanned = scan(&map, seed, header.first_lsn.0, next_first, time_of);
        report.segments_scanned_count += 1;
        report.records_count += scanned.records_count;
        report.sync_marks_count += scanned.sync_marks_count;
        report.bytes_scanned += scanned.end_offset - SEGMENT_HEADER_SIZE_BYTES as u64;
        // Decide where this segment ends and whether that is corruption.
        let mut problem: Option<(u64, CorruptReason)> = None;
        let mut end = (scanned.end_offset, scanned.last_lsn);
        let mut dropped = 0u64;
        if let Some(next_first) = next_first {
            if let Some((offset, invalid)) = scanned.stop {
                problem = Some((
                    offset,
                    CorruptReason::SealedFrame {
                        invalid,
                        expected_lsn: scanned.last_lsn.map_or(header.first_lsn.0, |l| l + 1),
                        next_first_lsn: next_first,
                    },
                ));
            } else if scanned.last_lsn.is_some()
                && scanned.last_batch_end.map(|(lsn, _)| lsn) != scanned.last_lsn
            {
                problem = Some((scanned.end_offset, CorruptReason::SealedInsideBatch));
            }
        } else {
            let stop_offset = scanned
                .stop
                .map_or(scanned.end_offset, |(offset, _)| offset);
            let from = usize::try_from(stop_offset).expect("offset within mapping") + 1;
            let lsn_min = scanned.last_lsn.map_or(header.first_lsn.0, |l| l + 1);
            if let Some((offset, lsn)) = find_valid_after(&map, seed, from, lsn_min) {
                // A sync mark behind the damage means the damaged bytes were synced with it.
                let follower = usize::try_from(offset)
                    .ok()
                    .and_then(|at| record::peek_header(&map, at))
                    .map_or(Follower::Record, |(_, _, kind_byte)| {
                        if kind_byte & record::KIND_MASK == record::KIND_SYNC_MARK {
                            Follower::SyncMark
                        } else {
                            Follower::Record
                        }
                    });
                problem = Some((
                    stop_offset,
                    CorruptReason::ValidAfterStop {
                        stop: scanned.stop.map(|(_, invalid)| invalid),
                        follower,
                        lsn,
                        offset_bytes: offset,
                    },
                ));
            } else {
                let (batch_lsn, batch_offset) = scanned
                    .last_batch_end
                    .map_or((None, SEGMENT_HEADER_SIZE_BYTES as u64), |(l, o)| {
                        (Some(l), o)
                    });
                if batch_lsn != scanned.last_lsn {
                    dropped =
                        scanned.last_lsn.unwrap_or(0) - batch_lsn.unwrap_or(header.first_lsn.0 - 1);
                    end = (batch_offset, batch_lsn);
                    fence = true;
                }
                let torn = matches!(scanned.stop, Some((_, invalid)) if !matches!(invalid, Invalid::Zeroed | Invalid::ShortHeader));
                if torn || dropped > 0 {
                    // The torn bytes stay where they are; appends move on to a new segment, so
                    // a later open never finds them behind new records (a clean log after a
                    // clean close, whatever crash came before).
                    fence = true;
                    let damaged_bytes = scanned.stop.map_or(0, |(offset, invalid)| {
                        damaged_frame_bytes(&map, offset, invalid)
                    });
                    report.torn_tail = Some(TornTail {
                        segment_id: entry.id,
                        offset_bytes: end.0,
                        reason: scanned
                            .stop
                            .map_or(TornReason::IncompleteBatch, |(_, invalid)| {
                                TornReason::Frame(invalid)
                            }),
                        records_dropped_count: dropped,
                        dropped_bytes: stop_offset - end.0 + damaged_bytes,
                    });
                }
            }
        }
        if let Some((offset, reason)) = problem {
            if options.repair != RepairMode::TruncateAtCorruption {
                return Err(corrupt(entry.id, offset, reason));
            }
            // Keep this segment up to its last complete batch before the damage; drop the rest.
            let (batch_lsn, batch_offset) = scanned
                .last_batch_end
                .map_or((None, SEGMENT_HEADER_SIZE_BYTES as u64), |(l, o)| {
                    (Some(l), o)
                });
            end = (batch_offset.min(offset), batch_lsn);
            fence = true;
            repair = Some(Repair {
                segment_id: entry.id,
                offset_bytes: end.0,
                reason,
                segments_removed: Vec::new(),
            });
            used_count = index + 1;
        }
        let kept_last = end.1;
        commits.extend(
            scanned
                .commits
                .iter()
                .copied()
                .filter(|c| Some(c.0) <= kept_last),
        );
        let index_kept: Vec<(u64, u32)> = scanned
            .index
            .into_iter()
            .filter(|(lsn, _)| Some(*lsn) <= kept_last)
            .collect();
        let is_newest = index + 1 == used_count;
        next_lsn = kept_last.map_or(header.first_lsn.0, |l| l + 1);
        if is_newest {
            active_end_offset = end.0;
            active_records_count = kept_last.map_or(0, |l| l + 1 - header.first_lsn.0);
            active_time_range = scanned.time_range_at_batch_end;
            // The kept end is a batch end: a record's, or a sync mark's (then nothing is open).
            let ends_with_mark = scanned.last_batch_end_is_mark
                && scanned.last_batch_end.map(|(_, o)| o) == Some(end.0);
            active_needs_mark = kept_last.is_some()
                && !ends_with_mark
                && header.format_version >= segment::FORMAT_VERSION;
            // A version-1 segment gets no sync marks: the writer moves on to a new segment.
            if header.format_version < segment::FORMAT_VERSION {
                fence = true;
            }
        }
        segments.push(SegMeta {
            id: entry.id,
            seed,
            file: Arc::clone(&entry.file),
            path: entry.path.clone(),
            size_bytes: map.len() as u64,
            first_lsn: header.first_lsn.0,
            sealed: if is_newest {
                None
            } else {
                Some((kept_last, end.0))
            },
            index: index_kept,
            map: Arc::new(OnceLock::new()),
            time_range: scanned.time_range_at_batch_end,
        });
        if !is_newest {
            let cached = segments.last().expect("just pushed");
            let _ = cached.map.set(map.clone());
        }
        index += 1;
    }

    // Files past the log's end: after a repair they go. Otherwise a file of the configured size
    // is reused as a ready segment if nothing of its own identity is in it: a zeroed or torn
    // header with frames of this segment behind it (the disk kept later sectors of a write
    // whose header sector it lost; never acknowledged) would let those frames line up behind
    // new ones, so such a file goes. Recycled files are not checked (their stale bytes make the
    // hunt slow); they go too and are replaced by fresh preallocation.
    let mut ready = Vec::new();
    for entry in entries.into_iter().skip(used_count) {
        let reusable = match &entry.header {
            HeaderState::Zeroed | HeaderState::Damaged(_) => {
                let seed = record::segment_seed(entry.id);
                find_valid_after(&entry.map, seed, SEGMENT_HEADER_SIZE_BYTES, 1).is_none()
            }
            HeaderState::Recycled { .. }
            | HeaderState::Valid(_)
            | HeaderState::UnsupportedVersion { .. } => false,
        };
        let keep =
            repair.is_none() && reusable && entry.map.len() as u64 == options.segment_size_bytes;
        if keep {
            ready.push((entry.id, entry.file, entry.path));
            continue;
        }
        if matches!(entry.header, HeaderState::Valid(_)) {
            removed.push(entry.id);
        }
        if !options.read_only {
            storage
                .remove(&entry.path)
                .map_err(|e| Error::io("remove", &entry.path, e))?;
            dir_dirty = true;
        }
    }
    if let Some(repair) = repair.as_mut() {
        repair.segments_removed = removed;
    }
    // A torn tail of the newest used segment says more (it concerns records) than the torn
    // header of an unused one; both at once would take two crashes.
    if report.torn_tail.is_none() {
        report.torn_tail = torn_header;
    }
    report.repair = repair;

    // Finish compactions whose commit is durable but whose old segments are still here.
    let mut committed = HashSet::new();
    for &(_lsn, begin, first_segment, last_segment) in &commits {
        committed.insert(begin);
        let newest_id = segments.last().map(|s| s.id.0);
        let mut kept = Vec::with_capacity(segments.len());
        for meta in segments.drain(..) {
            let in_range =
                (first_segment..=last_segment).contains(&meta.id.0) && Some(meta.id.0) != newest_id;
            if in_range {
                if !options.read_only {
                    storage
                        .remove(&meta.path)
                        .map_err(|e| Error::io("remove", &meta.path, e))?;
                    dir_dirty = true;
                }
                report.compaction_segments_removed.push(meta.id);
            } else {
                kept.push(meta);
            }
        }
        segments = kept;
    }
    if dir_dirty && !options.read_only {
        storage
            .sync_dir(dir)
            .map_err(|e| Error::io("sync_dir", dir, e))?;
    }
    report.first_lsn = segments
        .first()
        .map(|s| Lsn(s.first_lsn))
        .filter(|l| l.0 < next_lsn);
    report.last_lsn = (next_lsn > 1)
        .then_some(Lsn(next_lsn - 1))
        .filter(|_| report.first_lsn.is_some());
    report.segments_ready_count = ready.len();
    debug_assert!(segments.windows(2).all(|w| w[0].id < w[1].id));
    Ok(Recovered {
        segments,
        ready,
        next_lsn,
        active_end_offset,
        active_records_count,
        active_time_range,
        // A fenced segment takes no more bytes, not even a mark.
        active_needs_mark: active_needs_mark && !fence,
        fence,
        committed,
        next_segment_id,
        report,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{encode_into, segment_seed, FLAG_BATCH_END};

    fn segment(id: u64, first_lsn: u64, frames: &[(u64, bool, usize)], size: usize) -> Vec<u8> {
        let mut bytes = crate::segment::SegmentHeader {
            format_version: crate::segment::FORMAT_VERSION,
            segment_id: SegmentId(id),
            first_lsn: Lsn(first_lsn),
        }
        .encode()
        .to_vec();
        let seed = segment_seed(SegmentId(id));
        for &(lsn, end, len) in frames {
            encode_into(
                &mut bytes,
                seed,
                lsn,
                1 | if end { FLAG_BATCH_END } else { 0 },
                &vec![lsn as u8; len],
            );
        }
        bytes.resize(size, 0);
        bytes
    }

    #[test]
    fn scan_stops_at_first_invalid_and_tracks_batches() {
        let bytes = segment(
            3,
            10,
            &[(10, true, 5), (11, false, 5), (12, true, 5), (13, false, 5)],
            4096,
        );
        let out = scan(&bytes, segment_seed(SegmentId(3)), 10, None, None);
        assert_eq!(out.records_count, 4);
        assert_eq!(out.last_lsn, Some(13));
        assert_eq!(out.last_batch_end.map(|(lsn, _)| lsn), Some(12));
        assert!(matches!(out.stop, Some((_, Invalid::Zeroed))));
        // A sealed segment stops before the next segment's first LSN.
        let out = scan(&bytes, segment_seed(SegmentId(3)), 10, Some(12), None);
        assert_eq!(out.last_lsn, Some(11));
        assert_eq!(out.stop, None);
    }

    #[test]
    fn hunt_finds_valid_frames_after_damage_only_for_this_identity() {
        let mut bytes = segment(
            3,
            10,
            &[(10, true, 5), (11, true, 300), (12, true, 5)],
            4096,
        );
        let second = SEGMENT_HEADER_SIZE_BYTES + 21;
        bytes[second + 20] ^= 1; // damage record 11's payload
        let seed = segment_seed(SegmentId(3));
        let found = find_valid_after(&bytes, seed, second + 1, 11).expect("record 12 follows");
        assert_eq!(found.1, 12);
        assert_eq!(
            find_valid_after(&bytes, seed, second + 1, 13),
            None,
            "older lsns do not count"
        );
        assert_eq!(
            find_valid_after(&bytes, segment_seed(SegmentId(4)), second + 1, 1),
            None
        );
        assert_eq!(find_valid_after(&[0u8; 8192], seed, 64, 1), None);
    }

    #[test]
    fn damaged_header_of_unused_segment_is_a_torn_header() {
        use crate::storage::sim::SimStorage;
        let sim = SimStorage::new();
        let dir = Path::new("/r");
        let used = segment(1, 1, &[(1, true, 10)], 4096);
        let mut torn = segment(2, 2, &[], 4096);
        torn[40] = 0xff; // header CRC now fails, and no record follows
        for (id, bytes) in [(1u64, &used), (2u64, &torn)] {
            let file = sim
                .create(&dir.join(crate::segment::file_name(SegmentId(id))))
                .expect("create");
            file.write_at(0, bytes).expect("write");
            file.sync_data().expect("sync");
        }
        sim.sync_dir(dir).expect("sync dir");
        let options = WalOptions {
            segment_size_bytes: 4096,
            ..WalOptions::default()
        };
        let recovered = recover(&sim, dir, &options, None).expect("recovers");
        assert_eq!(recovered.next_lsn, 2);
        assert_eq!(
            recovered.ready.len(),
            1,
            "a torn header with nothing behind it is reused"
        );
        // With a record of segment 2 behind the damaged header, it is corruption.
        let sim2 = sim.crash(crate::storage::sim::CrashMode::DropUnsynced);
        let mut with_record = segment(2, 2, &[(2, true, 10)], 4096);
        with_record[40] = 0xff;
        assert!(sim2.overwrite(
            &dir.join(crate::segment::file_name(SegmentId(2))),
            0,
            &with_record
        ));
        let err = recover(&sim2, dir, &options, None).expect_err("corrupt");
        assert!(
            matches!(
                err,
                Error::Corrupt {
                    segment_id: SegmentId(2),
                    offset_bytes: 0,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn sealed_segment_missing_its_last_record_is_corrupt() {
        use crate::storage::sim::SimStorage;
        let sim = SimStorage::new();
        let dir = Path::new("/r");
        let first = segment(1, 1, &[(1, true, 10), (2, true, 10)], 4096);
        let second = segment(2, 4, &[(4, true, 10)], 4096); // lsn 3 is missing
        for (id, bytes) in [(1u64, &first), (2u64, &second)] {
            let file = sim
                .create(&dir.join(crate::segment::file_name(SegmentId(id))))
                .expect("create");
            file.write_at(0, bytes).expect("write");
            file.sync_data().expect("sync");
        }
        let options = WalOptions {
            segment_size_bytes: 4096,
            ..WalOptions::default()
        };
        let err = recover(&sim, dir, &options, None).expect_err("corrupt");
        assert!(
            matches!(
                err,
                Error::Corrupt {
                    segment_id: SegmentId(1),
                    ..
                }
            ),
            "{err}"
        );
    }
}
