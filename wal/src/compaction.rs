//! compaction: retention support: delete whole segments below an LSN, and crash-safe
//! copy-forward compaction.
//!
//! Compaction of the sealed segments entirely below an LSN appends, in order: a BEGIN marker
//! (its LSN names the compaction), one COPY record per live record (original LSN, begin LSN,
//! original kind, payload), and a COMMIT marker naming the begin LSN and the segment range; it
//! syncs, then publishes the copies (catalog) and removes the old segments. A COPY is visible only
//! when the COMMIT of its compaction is in the log; recovery finishes the removal for any COMMIT
//! whose old segments are still present. So a crash before the COMMIT is durable leaves the
//! originals visible and the copies hidden; a crash after it leaves the copies visible and the
//! originals removed at open: nothing lost, nothing visible twice.
//!
//! Copies reach the writer in bounded batches (one lock of its state each) and are written out
//! and synced in bounded chunks while the copy runs, so memory stays bounded and concurrent
//! group commits never have the whole copy to write or flush; the caller's progress callback
//! hears after every segment scanned and at the end (`CompactionProgress`).
//!
//! Invariants: only a prefix of the log is ever removed; the active segment is never removed;
//! old segments are removed only after the COMMIT is durable. This module must not interpret
//! payloads beyond calling the caller's predicate.

use std::ops::ControlFlow;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::limits::{
    COMPACTION_BATCH_SIZE_BYTES_MAX, COMPACTION_RECORDS_MAX, COMPACTION_SYNC_CHUNK_SIZE_BYTES,
    COMPACTION_WRITE_CHUNK_SIZE_BYTES,
};
use crate::reader::View;
use crate::record::{
    self, Record, COPY_PREFIX_SIZE_BYTES, KIND_COMPACT_BEGIN, KIND_COMPACT_COMMIT, KIND_COPY,
};
use crate::recovery::SegMeta;
use crate::wal::CompactionReport;
use crate::writer::{Inner, Want};
use crate::{Lsn, SegmentId};

/// The prefix of sealed segments whose records are all below `lsn`: (count, end LSN exclusive).
fn removable_prefix(inner: &Inner, lsn: u64) -> (usize, u64) {
    let catalog = inner.catalog.read();
    let mut count = 0usize;
    let mut end = 0u64;
    while count + 1 < catalog.segments.len() {
        let meta = &catalog.segments[count];
        let next = &catalog.segments[count + 1];
        if meta.sealed.is_none() || next.first_lsn > lsn {
            break;
        }
        end = next.first_lsn;
        count += 1;
    }
    (count, end)
}

/// Takes the first `count` segments out of the catalog, marking `committed` if given.
fn take_prefix(inner: &Inner, count: usize, committed: Option<u64>) -> Vec<SegMeta> {
    let mut catalog = inner.catalog.write();
    if let Some(begin) = committed {
        Arc::make_mut(&mut catalog.committed).insert(begin);
    }
    let taken: Vec<SegMeta> = catalog.segments.drain(..count).collect();
    assert!(
        !catalog.segments.is_empty(),
        "the active segment is never removed"
    );
    taken
}

fn check_writable(inner: &Inner, op: &'static str) -> Result<()> {
    if inner.options.read_only {
        return Err(Error::ReadOnly { op });
    }
    if let Some(cause) = &inner.state.lock().poisoned {
        return Err(Error::Poisoned {
            cause: cause.clone(),
        });
    }
    Ok(())
}

/// Deletes every sealed segment whose records all lie below `lsn`.
pub(crate) fn delete_below(inner: &Inner, lsn: u64) -> Result<Vec<SegmentId>> {
    let _exclusive = inner.compaction_lock.lock();
    check_writable(inner, "delete_below")?;
    let (count, end) = removable_prefix(inner, lsn);
    if count == 0 {
        return Ok(Vec::new());
    }
    // No write may still be pending into a file about to be removed or recycled.
    inner.commit(end - 1, Want::Durable)?;
    let taken = take_prefix(inner, count, None);
    let ids = taken.iter().map(|meta| meta.id).collect();
    inner.retire_segments(taken)?;
    Ok(ids)
}

/// How far a running compaction is: what the caller's progress callback sees. Counts are
/// cumulative for one `compact_below` call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactionProgress {
    /// Sealed segments this compaction covers.
    pub segments_total_count: u64,
    /// Of those, segments whose records were all judged (and live ones handed to the writer).
    pub segments_scanned_count: u64,
    /// File bytes of the scanned segments.
    pub scanned_size_bytes: u64,
    /// Records copied forward so far.
    pub records_copied_count: u64,
    /// Framed bytes of those copies (what the log grew by).
    pub copied_size_bytes: u64,
    /// Records the predicate dropped so far.
    pub records_dropped_count: u64,
    /// Segments removed (only set by the last call, once the COMMIT is durable).
    pub segments_deleted_count: u64,
    /// File bytes of the removed segments minus the copied bytes, saturating at 0 (only set by
    /// the last call).
    pub reclaimed_size_bytes: u64,
}

/// Hands live records to the writer in batches of bounded size, writes them out and syncs them
/// in bounded chunks, and keeps the LSN mapping.
struct Copier<'a> {
    inner: &'a Inner,
    begin: u64,
    batch_size_bytes_max: usize,
    /// Write out / sync after this many bytes (the limits, scaled down for small segments).
    write_chunk_size_bytes: u64,
    sync_chunk_size_bytes: u64,
    /// Copy payloads of the batch being built, back to back.
    buffer: Vec<u8>,
    /// (original LSN, start, end) of each copy payload in `buffer`.
    spans: Vec<(u64, usize, usize)>,
    /// Framed bytes of the batch being built.
    batch_size_bytes: usize,
    /// Bytes handed to the writer and not yet written out / not yet synced by this copier.
    unwritten_size_bytes: u64,
    unsynced_size_bytes: u64,
    mapping: Vec<(Lsn, Lsn)>,
    copied_size_bytes: u64,
}

impl Copier<'_> {
    fn push(&mut self, record: &Record<'_>) -> Result<()> {
        let framed = record::framed_size(COPY_PREFIX_SIZE_BYTES + record.payload.len());
        if !self.spans.is_empty() && self.batch_size_bytes + framed > self.batch_size_bytes_max {
            self.flush()?;
        }
        let start = self.buffer.len();
        // A copy of a copy keeps the first original LSN: readers order copies by it.
        record::encode_copy_payload(
            &mut self.buffer,
            record.copied_from.unwrap_or(record.lsn).0,
            self.begin,
            record.kind.get(),
            record.payload,
        );
        self.spans.push((record.lsn.0, start, self.buffer.len()));
        self.batch_size_bytes += framed;
        Ok(())
    }

    /// Hands the batch being built to the writer (one lock of its state); writes out or syncs
    /// once a chunk's worth is pending, then yields so concurrent committers get the disk.
    fn flush(&mut self) -> Result<()> {
        if self.spans.is_empty() {
            return Ok(());
        }
        let items: Vec<(u8, &[u8])> = self
            .spans
            .iter()
            .map(|(_, start, end)| (KIND_COPY, &self.buffer[*start..*end]))
            .collect();
        let (first, last) = self.inner.enqueue_batch(&items)?;
        drop(items);
        self.mapping.extend(
            self.spans
                .iter()
                .zip(first..)
                .map(|((old, _, _), new)| (Lsn(*old), Lsn(new))),
        );
        let size_bytes = self.batch_size_bytes as u64;
        self.copied_size_bytes += size_bytes;
        self.unwritten_size_bytes += size_bytes;
        self.unsynced_size_bytes += size_bytes;
        self.spans.clear();
        self.buffer.clear();
        self.batch_size_bytes = 0;
        if self.unsynced_size_bytes >= self.sync_chunk_size_bytes {
            self.inner.commit(last, Want::Durable)?;
            self.unsynced_size_bytes = 0;
            self.unwritten_size_bytes = 0;
            std::thread::yield_now();
        } else if self.unwritten_size_bytes >= self.write_chunk_size_bytes {
            self.inner.commit(last, Want::Written)?;
            self.unwritten_size_bytes = 0;
            std::thread::yield_now();
        }
        Ok(())
    }
}

/// Copy-forward compaction of the sealed segments entirely below `lsn`, telling `progress` after
/// every segment scanned and once at the end.
///
/// Live records are handed to the writer in batches of at most `COMPACTION_BATCH_SIZE_BYTES_MAX`
/// (the writer's lock is never held while records are read or judged), written out every
/// `COMPACTION_WRITE_CHUNK_SIZE_BYTES` and synced every `COMPACTION_SYNC_CHUNK_SIZE_BYTES`
/// (at most half a segment and four segments: small logs take the same paths), so
/// memory stays bounded and concurrent group commits never queue behind the whole copy. Frames
/// are read through the checksum-verifying reader and re-framed under their new LSN (the frame
/// CRC covers the LSN, so it is recomputed once per copy).
pub(crate) fn compact_below(
    inner: &Inner,
    lsn: u64,
    live: &dyn Fn(&Record<'_>) -> bool,
    progress: &mut dyn FnMut(&CompactionProgress),
) -> Result<CompactionReport> {
    let _exclusive = inner.compaction_lock.lock();
    check_writable(inner, "compact_below")?;
    let (count, end) = removable_prefix(inner, lsn);
    if count == 0 {
        return Ok(CompactionReport::default());
    }
    // Every record to be judged must be durable (and so visible) before it is read.
    inner.commit(end - 1, Want::Durable)?;
    // (first LSN, file size) of the covered segments, to count progress by segment.
    let (first_segment, last_segment, bounds) = {
        let catalog = inner.catalog.read();
        let bounds: Vec<(u64, u64)> = catalog.segments[..count]
            .iter()
            .map(|meta| (meta.first_lsn, meta.size_bytes))
            .collect();
        (
            catalog.segments[0].id,
            catalog.segments[count - 1].id,
            bounds,
        )
    };
    let first_lsn = bounds[0].0;
    let mut marker = Vec::with_capacity(24);
    marker.extend_from_slice(&first_segment.0.to_le_bytes());
    marker.extend_from_slice(&last_segment.0.to_le_bytes());
    let (begin, _) = inner.enqueue_batch(&[(KIND_COMPACT_BEGIN, &marker)])?;

    let batch_size_bytes_max = COMPACTION_BATCH_SIZE_BYTES_MAX
        .min((inner.options.segment_size_bytes / 16) as usize)
        .max(1);
    let segment_size_bytes = inner.options.segment_size_bytes;
    let mut copier = Copier {
        inner,
        begin,
        batch_size_bytes_max,
        write_chunk_size_bytes: COMPACTION_WRITE_CHUNK_SIZE_BYTES.min(segment_size_bytes / 2),
        sync_chunk_size_bytes: COMPACTION_SYNC_CHUNK_SIZE_BYTES.min(segment_size_bytes * 4),
        buffer: Vec::with_capacity(batch_size_bytes_max),
        spans: Vec::new(),
        batch_size_bytes: 0,
        unwritten_size_bytes: 0,
        unsynced_size_bytes: 0,
        mapping: Vec::new(),
        copied_size_bytes: 0,
    };
    let mut state = CompactionProgress {
        segments_total_count: count as u64,
        ..CompactionProgress::default()
    };
    // Index in `bounds` of the segment being scanned.
    let mut scanning = 0usize;
    let mut failure: Option<Error> = None;
    let mut view = View::new(inner, first_lsn)?;
    view.scan(|record| {
        if record.lsn.0 >= end {
            return ControlFlow::Break(());
        }
        while scanning + 1 < bounds.len() && record.lsn.0 >= bounds[scanning + 1].0 {
            state.segments_scanned_count += 1;
            state.scanned_size_bytes += bounds[scanning].1;
            state.records_copied_count = copier.mapping.len() as u64 + copier.spans.len() as u64;
            state.copied_size_bytes = copier.copied_size_bytes + copier.batch_size_bytes as u64;
            progress(&state);
            scanning += 1;
            // A segment's worth of reading and checksumming done: let other threads run.
            std::thread::yield_now();
        }
        if !live(&record) {
            state.records_dropped_count += 1;
            return ControlFlow::Continue(());
        }
        if copier.mapping.len() + copier.spans.len() >= COMPACTION_RECORDS_MAX {
            failure = Some(Error::Unsupported {
                what: "compaction of more than COMPACTION_RECORDS_MAX live records",
            });
            return ControlFlow::Break(());
        }
        match copier.push(&record) {
            Ok(()) => ControlFlow::Continue(()),
            Err(error) => {
                failure = Some(error);
                ControlFlow::Break(())
            }
        }
    })?;
    if let Some(error) = failure {
        // The BEGIN and any copies stay hidden: no COMMIT names them.
        return Err(error);
    }
    copier.flush()?;
    marker.clear();
    marker.extend_from_slice(&begin.to_le_bytes());
    marker.extend_from_slice(&first_segment.0.to_le_bytes());
    marker.extend_from_slice(&last_segment.0.to_le_bytes());
    let (commit_lsn, _) = inner.enqueue_batch(&[(KIND_COMPACT_COMMIT, &marker)])?;
    inner.commit(commit_lsn, Want::Durable)?;
    let taken = take_prefix(inner, count, Some(begin));
    debug_assert_eq!(taken.first().map(|m| m.id), Some(first_segment));
    debug_assert_eq!(taken.last().map(|m| m.id), Some(last_segment));
    let removed_size_bytes: u64 = taken.iter().map(|meta| meta.size_bytes).sum();
    let report = CompactionReport {
        segments_deleted: taken.iter().map(|meta| meta.id).collect(),
        lsn_mapping: copier.mapping,
        records_dropped_count: state.records_dropped_count,
    };
    inner.retire_segments(taken)?;
    state.segments_scanned_count = count as u64;
    state.scanned_size_bytes = bounds.iter().map(|(_, size)| size).sum();
    state.records_copied_count = report.lsn_mapping.len() as u64;
    state.copied_size_bytes = copier.copied_size_bytes;
    state.segments_deleted_count = report.segments_deleted.len() as u64;
    state.reclaimed_size_bytes = removed_size_bytes.saturating_sub(copier.copied_size_bytes);
    progress(&state);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::storage::sim::SimStorage;
    use crate::{Durability, Lsn, RecordKind, Wal, WalOptions};

    use super::CompactionProgress;

    const SEGMENT_SIZE_BYTES: u64 = 4096;

    /// A log of 12 segments' worth of records, every third one "live" (kind 2).
    fn log() -> (Wal, Vec<(Lsn, Vec<u8>)>) {
        let options = WalOptions {
            segment_size_bytes: SEGMENT_SIZE_BYTES,
            durability: Durability::GroupCommit,
            background_preparation: false,
            ..WalOptions::default()
        };
        let (wal, _) =
            Wal::open_with_storage(Arc::new(SimStorage::new()), "/w", options).expect("opens");
        let mut live = Vec::new();
        for i in 0u32..400 {
            let payload = format!("record {i} {}", "p".repeat(90)).into_bytes();
            let kind = if i % 3 == 0 { 2 } else { 1 };
            let lsn = wal
                .append(RecordKind::new(kind).expect("kind"), &payload)
                .expect("appends");
            if kind == 2 {
                live.push((lsn, payload));
            }
        }
        (wal, live)
    }

    #[test]
    fn progress_counts_segments_and_bytes_and_ends_with_the_reclaimed_total() {
        let (wal, live) = log();
        let segments = wal.segments();
        let cut = segments[segments.len() - 2].first_lsn;
        let covered: Vec<_> = segments.iter().filter(|s| s.first_lsn < cut).collect();
        let covered_size_bytes: u64 = covered.iter().map(|s| s.size_bytes).sum();
        let mut seen: Vec<CompactionProgress> = Vec::new();
        let report = wal
            .compact_below_with_progress(cut, |r| r.kind.get() == 2, |p| seen.push(*p))
            .expect("compacts");
        assert!(seen.len() >= 2, "one call per segment and a last one");
        for pair in seen.windows(2) {
            assert!(pair[0].segments_scanned_count <= pair[1].segments_scanned_count);
            assert!(pair[0].scanned_size_bytes <= pair[1].scanned_size_bytes);
            assert!(pair[0].records_copied_count <= pair[1].records_copied_count);
            assert!(pair[0].copied_size_bytes <= pair[1].copied_size_bytes);
        }
        let last = seen.last().expect("a last call");
        assert_eq!(last.segments_total_count, covered.len() as u64);
        assert_eq!(last.segments_scanned_count, covered.len() as u64);
        assert_eq!(last.scanned_size_bytes, covered_size_bytes);
        assert_eq!(
            last.segments_deleted_count,
            report.segments_deleted.len() as u64
        );
        assert_eq!(last.records_copied_count, report.lsn_mapping.len() as u64);
        assert_eq!(last.records_dropped_count, report.records_dropped_count);
        assert!(last.copied_size_bytes > 0);
        assert_eq!(
            last.reclaimed_size_bytes,
            covered_size_bytes - last.copied_size_bytes
        );
        // Every call but the last reports nothing deleted yet.
        assert!(seen[..seen.len() - 1]
            .iter()
            .all(|p| p.segments_deleted_count == 0));
        // The copies span several batches (small segments cap a batch at 256 bytes) and the
        // live records read back in order under their new LSNs.
        let moved: Vec<(Lsn, Vec<u8>)> = live
            .iter()
            .filter(|(lsn, _)| *lsn < cut)
            .map(|(lsn, payload)| {
                let new = report
                    .lsn_mapping
                    .iter()
                    .find(|(old, _)| old == lsn)
                    .map(|(_, new)| *new)
                    .expect("mapped");
                (new, payload.clone())
            })
            .collect();
        assert!(moved.len() > 10);
        for (new, payload) in moved {
            let record = wal.read(new).expect("reads").expect("present");
            assert_eq!(record.payload, payload);
        }
    }
}
