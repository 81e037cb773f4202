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
//! The records are read, checksummed and judged on a scanning thread of the compaction's own,
//! at the lowest CPU priority (`COMPACTION_SCAN_NICE`), which prepares batches of copies a
//! bounded queue ahead; the calling thread only appends prepared batches (one lock of the
//! writer's state each) and makes each durable before the next (a write led as any commit, then
//! an fdatasync of its own outside the writer's leader role), so memory stays bounded,
//! appenders win the CPU over the scan, and a concurrent group commit never waits behind a
//! flush of copies nor has more than one batch of them to write; before each batch, and before each old segment
//! leaves the log (on a lowest-priority thread too: renamed out, one directory sync, then
//! removed, its blocks freed in durable steps while appenders are active), it lets the
//! commits in flight or pending go first, a bounded number of times (`Inner::give_way`).
//! The caller's progress callback runs on the calling thread,
//! after every segment scanned and at the end (`CompactionProgress`).
//!
//! Invariants: only a prefix of the log is ever removed; the active segment is never removed;
//! old segments are removed only after the COMMIT is durable. This module must not interpret
//! payloads beyond calling the caller's predicate.

use std::ops::ControlFlow;
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::limits::{
    COMPACTION_BATCH_SIZE_BYTES_MAX, COMPACTION_GIVE_WAYS_MAX, COMPACTION_GIVE_WAY_WAIT_MS,
    COMPACTION_IDLE_UNSYNCED_SIZE_BYTES_MAX, COMPACTION_RECORDS_MAX, COMPACTION_SCAN_NICE,
    COMPACTION_SCAN_QUEUE_BATCHES,
};
use crate::reader::View;
use crate::record::{
    self, Record, COPY_PREFIX_SIZE_BYTES, KIND_COMPACT_BEGIN, KIND_COMPACT_COMMIT, KIND_COPY,
};
use crate::recovery::SegMeta;
use crate::storage::StorageFile;
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
    inner.retire_segments(taken, &mut || false)?;
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

/// What the scanning thread hands the committing thread.
enum Scanned {
    /// Copy payloads back to back, with (original LSN, start, end) of each, and their framed
    /// size in the log.
    Batch {
        buffer: Vec<u8>,
        spans: Vec<(u64, usize, usize)>,
        framed_size_bytes: usize,
    },
    /// Every record of one more segment was judged (the counts are cumulative).
    Segment {
        scanned_count: u64,
        scanned_size_bytes: u64,
        live_count: u64,
        live_size_bytes: u64,
        dropped_count: u64,
    },
}

/// Judges the records of the covered segments on its own thread (lowest CPU priority, no lock
/// of the writer held): reads and checksums them, asks `live`, and builds batches of copy
/// payloads, handed over through a bounded queue. Returns how many records `live` dropped.
struct Scanner<'a> {
    inner: &'a Inner,
    begin: u64,
    first_lsn: u64,
    end: u64,
    /// (first LSN, file size) of the covered segments.
    bounds: &'a [(u64, u64)],
    batch_size_bytes_max: usize,
}

impl Scanner<'_> {
    fn run(
        &self,
        live: &mut (dyn FnMut(&Record<'_>) -> bool + Send),
        out: &SyncSender<Scanned>,
    ) -> Result<u64> {
        lower_cpu_priority();
        let mut buffer: Vec<u8> = Vec::with_capacity(self.batch_size_bytes_max);
        let mut spans: Vec<(u64, usize, usize)> = Vec::new();
        let mut framed_size_bytes = 0usize;
        let (mut live_count, mut live_size_bytes, mut dropped_count) = (0u64, 0u64, 0u64);
        let mut scanned_size_bytes = 0u64;
        // Index in `bounds` of the segment being scanned.
        let mut scanning = 0usize;
        // Set when the committing side stopped listening (it failed): stop quietly.
        let mut closed = false;
        let mut failure: Option<Error> = None;
        let send = |message: Scanned, closed: &mut bool| {
            if out.send(message).is_err() {
                *closed = true;
            }
        };
        let mut view = View::new(self.inner, self.first_lsn)?;
        view.scan(|record| {
            if record.lsn.0 >= self.end {
                return ControlFlow::Break(());
            }
            while scanning + 1 < self.bounds.len() && record.lsn.0 >= self.bounds[scanning + 1].0 {
                scanned_size_bytes += self.bounds[scanning].1;
                scanning += 1;
                let message = Scanned::Segment {
                    scanned_count: scanning as u64,
                    scanned_size_bytes,
                    live_count,
                    live_size_bytes,
                    dropped_count,
                };
                send(message, &mut closed);
                if closed {
                    return ControlFlow::Break(());
                }
            }
            if !live(&record) {
                dropped_count += 1;
                return ControlFlow::Continue(());
            }
            if live_count as usize >= COMPACTION_RECORDS_MAX {
                failure = Some(Error::Unsupported {
                    what: "compaction of more than COMPACTION_RECORDS_MAX live records",
                });
                return ControlFlow::Break(());
            }
            let framed = record::framed_size(COPY_PREFIX_SIZE_BYTES + record.payload.len());
            if !spans.is_empty() && framed_size_bytes + framed > self.batch_size_bytes_max {
                let batch = Scanned::Batch {
                    buffer: std::mem::replace(
                        &mut buffer,
                        Vec::with_capacity(self.batch_size_bytes_max),
                    ),
                    spans: std::mem::take(&mut spans),
                    framed_size_bytes,
                };
                framed_size_bytes = 0;
                send(batch, &mut closed);
                if closed {
                    return ControlFlow::Break(());
                }
            }
            let start = buffer.len();
            // A copy of a copy keeps the first original LSN: readers order copies by it.
            record::encode_copy_payload(
                &mut buffer,
                record.copied_from.unwrap_or(record.lsn).0,
                self.begin,
                record.kind.get(),
                record.payload,
            );
            spans.push((record.lsn.0, start, buffer.len()));
            framed_size_bytes += framed;
            live_count += 1;
            live_size_bytes += framed as u64;
            ControlFlow::Continue(())
        })?;
        if let Some(error) = failure {
            return Err(error);
        }
        if !closed && !spans.is_empty() {
            send(
                Scanned::Batch {
                    buffer,
                    spans,
                    framed_size_bytes,
                },
                &mut closed,
            );
        }
        Ok(dropped_count)
    }
}

/// Puts the calling thread at the lowest CPU priority (nice `COMPACTION_SCAN_NICE`), best
/// effort: on two cores the scan would otherwise take a core from the threads that append.
/// Only the scanning thread calls it; it ends with the scan, so nothing is restored.
fn lower_cpu_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `gettid` and `setpriority` take and return plain integers and touch no memory
        // of ours. On Linux the nice value belongs to the thread that `who` names: this one.
        let result = unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            libc::setpriority(libc::PRIO_PROCESS, tid, COMPACTION_SCAN_NICE)
        };
        // A refusal only leaves the scan at its normal priority.
        let _ = result;
    }
}

/// Hands the scanner's batches to the writer (one lock of its state each), makes each durable
/// itself, and keeps the LSN mapping.
struct Copier<'a> {
    inner: &'a Inner,
    mapping: Vec<(Lsn, Lsn)>,
    copied_size_bytes: u64,
    /// The last LSN this compaction appended (BEGIN, then each batch's last copy): buffered
    /// records after it are an appender's, which go first (`Inner::give_way`).
    own_upto: u64,
    /// The first copy written but not yet synced by this thread, and the framed bytes from it
    /// on (only while no appender is active: `COMPACTION_IDLE_UNSYNCED_SIZE_BYTES_MAX`).
    unsynced_from: Option<u64>,
    unsynced_size_bytes: usize,
}

impl Copier<'_> {
    /// Appends one prepared batch and makes it durable (this thread writes it, leading a
    /// commit that only writes or joining one, then syncs its files outside the leader role),
    /// then yields so that concurrent committers go next. A committer that comes in meanwhile
    /// waits for at most this one batch's write to the page cache, never for its flush nor for
    /// a backlog of copies, and its own fdatasync finds at most one batch of ours to flush.
    /// While no appender is active (none to give way to, none appended since our last batch),
    /// the sync waits until `COMPACTION_IDLE_UNSYNCED_SIZE_BYTES_MAX` of copies are written.
    fn hand_over(
        &mut self,
        buffer: &[u8],
        spans: &[(u64, usize, usize)],
        framed_size_bytes: usize,
    ) -> Result<()> {
        if spans.is_empty() {
            return Ok(());
        }
        let items: Vec<(u8, &[u8])> = spans
            .iter()
            .map(|(_, start, end)| (KIND_COPY, &buffer[*start..*end]))
            .collect();
        let waited = self.inner.give_way(
            self.own_upto,
            COMPACTION_GIVE_WAYS_MAX,
            COMPACTION_GIVE_WAY_WAIT_MS,
        );
        let (first, last) = self.inner.enqueue_batch(&items)?;
        drop(items);
        // An appender's records sit between our last batch and this one, or we gave way.
        let appenders_active = waited > 0 || first != self.own_upto + 1;
        self.mapping.extend(
            spans
                .iter()
                .zip(first..)
                .map(|((old, _, _), new)| (Lsn(*old), Lsn(new))),
        );
        self.copied_size_bytes += framed_size_bytes as u64;
        self.own_upto = last;
        // Led by this thread (or joined), the commit only writes: a committer that comes in
        // meanwhile waits for one 16 KiB write to the page cache, not for a device flush.
        self.inner.commit(last, Want::Written)?;
        let unsynced_from = *self.unsynced_from.get_or_insert(first);
        self.unsynced_size_bytes += framed_size_bytes;
        if appenders_active || self.unsynced_size_bytes >= COMPACTION_IDLE_UNSYNCED_SIZE_BYTES_MAX {
            self.sync_outside_leader(unsynced_from, last)?;
            self.unsynced_from = None;
            self.unsynced_size_bytes = 0;
        }
        std::thread::yield_now();
        Ok(())
    }

    /// Flushes the segment files holding `first..=last` with an fdatasync of this thread's own,
    /// outside the writer's leader role, so concurrent committers never queue behind it (their
    /// own leader's fdatasync runs beside it and finds these pages already on their way). It
    /// only paces the copy (each batch is on disk before the next is handed over) and keeps the
    /// appenders' syncs from flushing a backlog of copies: the writer's own accounting is
    /// untouched (the files stay in its unsynced set, and the COMMIT's durable commit covers
    /// every copy). A failed sync poisons the log, as the writer's do.
    fn sync_outside_leader(&self, first: u64, last: u64) -> Result<()> {
        let files: Vec<(Arc<dyn StorageFile>, std::path::PathBuf)> = {
            let catalog = self.inner.catalog.read();
            let mut files = Vec::new();
            for meta in catalog.segments.iter().rev() {
                if meta.first_lsn > last {
                    continue;
                }
                files.push((Arc::clone(&meta.file), meta.path.clone()));
                if meta.first_lsn <= first {
                    break;
                }
            }
            files
        };
        for (file, path) in files {
            if let Err(error) = file.sync_data() {
                let error = Error::io("sync_data", &path, error);
                let mut state = self.inner.state.lock();
                return Err(self.inner.poison(&mut state, error));
            }
        }
        self.inner.state.lock().compaction_syncs_count += 1;
        Ok(())
    }
}

/// Copy-forward compaction of the sealed segments entirely below `lsn`, telling `progress` after
/// every segment scanned and once at the end.
///
/// A scanning thread at the lowest CPU priority reads the covered segments through the
/// checksum-verifying reader, asks `live`, and builds batches of at most
/// `COMPACTION_BATCH_SIZE_BYTES_MAX` of copy payloads (re-framed under their new LSN later: the
/// frame CRC covers the LSN), at most `COMPACTION_SCAN_QUEUE_BATCHES` ahead. The calling thread
/// only appends prepared batches (one lock of the writer's state each) and makes each durable
/// before the next, so memory stays bounded, the writer's lock is never held while records are
/// read or judged, and a concurrent group commit waits for at most one batch's write (never its flush).
pub(crate) fn compact_below(
    inner: &Inner,
    lsn: u64,
    live: &mut (dyn FnMut(&Record<'_>) -> bool + Send),
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
    let mut marker = Vec::with_capacity(24);
    marker.extend_from_slice(&first_segment.0.to_le_bytes());
    marker.extend_from_slice(&last_segment.0.to_le_bytes());
    let (begin, _) = inner.enqueue_batch(&[(KIND_COMPACT_BEGIN, &marker)])?;

    let segment_size_bytes = inner.options.segment_size_bytes;
    let scanner = Scanner {
        inner,
        begin,
        first_lsn: bounds[0].0,
        end,
        bounds: &bounds,
        batch_size_bytes_max: COMPACTION_BATCH_SIZE_BYTES_MAX
            .min((segment_size_bytes / 16) as usize)
            .max(1),
    };
    let mut copier = Copier {
        inner,
        mapping: Vec::new(),
        copied_size_bytes: 0,
        own_upto: begin,
        unsynced_from: None,
        unsynced_size_bytes: 0,
    };
    let mut state = CompactionProgress {
        segments_total_count: count as u64,
        ..CompactionProgress::default()
    };
    let scanned: Result<u64> = std::thread::scope(|scope| {
        let (sender, receiver) = sync_channel::<Scanned>(COMPACTION_SCAN_QUEUE_BATCHES);
        let scanner = &scanner;
        let worker = std::thread::Builder::new()
            .name("statelog-wal-compact-scan".to_owned())
            .spawn_scoped(scope, move || scanner.run(live, &sender))
            .map_err(|e| Error::io("spawn", &inner.dir, e))?;
        let mut handed: Result<()> = Ok(());
        for message in receiver.iter() {
            match message {
                Scanned::Batch {
                    buffer,
                    spans,
                    framed_size_bytes,
                } => {
                    handed = copier.hand_over(&buffer, &spans, framed_size_bytes);
                    if handed.is_err() {
                        break;
                    }
                }
                Scanned::Segment {
                    scanned_count,
                    scanned_size_bytes,
                    live_count,
                    live_size_bytes,
                    dropped_count,
                } => {
                    state.segments_scanned_count = scanned_count;
                    state.scanned_size_bytes = scanned_size_bytes;
                    state.records_copied_count = live_count;
                    state.copied_size_bytes = live_size_bytes;
                    state.records_dropped_count = dropped_count;
                    progress(&state);
                }
            }
        }
        // A failed hand-over stops the scanner at its next send.
        drop(receiver);
        let scanned = match worker.join() {
            Ok(scanned) => scanned,
            // The predicate panicked: the caller sees its panic, as if it ran on its thread.
            Err(panic) => std::panic::resume_unwind(panic),
        };
        handed?;
        scanned
    });
    // On failure the BEGIN and any copies stay hidden: no COMMIT names them.
    let records_dropped_count = scanned?;
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
        records_dropped_count,
    };
    // One segment at a time, each after the commits in flight or pending have gone (bounded
    // give-way), on a thread at the lowest CPU priority as the scan (freeing blocks is kernel
    // CPU work): renamed out of the log oldest first (so the removed segments stay a prefix;
    // after a crash recovery removes the rest, the COMMIT is durable), one directory sync,
    // then removed, their blocks freed in durable steps (`RETIRE_RELEASE_STEP_BYTES`) while
    // appends go on: removing many files at once stalls concurrent appends' syncs
    // (`docs/bench/tuning.md`).
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("statelog-wal-compact-retire".to_owned())
            .spawn_scoped(scope, || {
                lower_cpu_priority();
                // Appenders are active when the compaction had to give way, or the log grew
                // since the last look.
                let mut seen_next_lsn = commit_lsn + 1;
                inner.retire_segments(taken, &mut || {
                    let waited = inner.give_way(
                        commit_lsn,
                        COMPACTION_GIVE_WAYS_MAX,
                        COMPACTION_GIVE_WAY_WAIT_MS,
                    );
                    let next_lsn = inner.state.lock().next_lsn;
                    let grew = next_lsn != seen_next_lsn;
                    seen_next_lsn = next_lsn;
                    waited > 0 || grew
                })
            })
            .map_err(|e| Error::io("spawn", &inner.dir, e))?
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })?;
    state.segments_scanned_count = count as u64;
    state.scanned_size_bytes = bounds.iter().map(|(_, size)| size).sum();
    state.records_copied_count = report.lsn_mapping.len() as u64;
    state.copied_size_bytes = copier.copied_size_bytes;
    state.records_dropped_count = records_dropped_count;
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

    #[test]
    fn retired_segments_leave_the_log_by_rename_and_are_freed_in_steps_while_appenders_run() {
        let sim = Arc::new(SimStorage::new());
        let options = WalOptions {
            segment_size_bytes: SEGMENT_SIZE_BYTES,
            durability: Durability::GroupCommit,
            background_preparation: false,
            ..WalOptions::default()
        };
        let (wal, _) = Wal::open_with_storage(sim.clone(), "/w", options).expect("opens");
        for i in 0u32..200 {
            let payload = format!("record {i} {}", "p".repeat(90)).into_bytes();
            wal.append(RecordKind::new(1).expect("kind"), &payload)
                .expect("appends");
        }
        wal.sync().expect("syncs");
        let inner = wal.inner_for_tests();
        let ready_before = wal.stats().segments_ready_count;
        let taken = super::take_prefix(inner, 3, None);
        let old_paths: Vec<_> = taken.iter().map(|meta| meta.path.clone()).collect();
        let mut calls = 0usize;
        inner
            .retire_segments(taken, &mut || {
                calls += 1;
                true
            })
            .expect("retires");
        let recycled = wal.stats().segments_ready_count - ready_before;
        let removed = 3 - recycled;
        assert!(removed >= 2, "segments_ready_count 1: at most one recycled");
        // One call before each rename, and one per freeing step of each removed file (a
        // 4 KiB segment is one step of RETIRE_RELEASE_STEP_BYTES).
        assert_eq!(calls, 3 + removed);
        let paths = sim.paths();
        for old in &old_paths {
            assert!(!paths.contains(old), "{} is gone", old.display());
        }
        assert!(
            paths
                .iter()
                .all(|p| !p.to_string_lossy().ends_with(crate::segment::TEMP_SUFFIX)),
            "no temporary file is left: {paths:?}"
        );
        // With no appender active the files are removed without freeing steps.
        let taken = super::take_prefix(inner, 2, None);
        let mut calls = 0usize;
        inner
            .retire_segments(taken, &mut || {
                calls += 1;
                false
            })
            .expect("retires");
        assert_eq!(calls, 2 + 2, "one call per rename, one look per removal");
        drop(wal);
        let (_reopened, report) =
            Wal::open_with_storage(sim, "/w", WalOptions::default()).expect("reopens");
        assert_eq!(report.temp_files_removed_count, 0);
    }

    #[test]
    fn copy_batches_are_synced_outside_the_writers_leader_role_and_only_while_appenders_run() {
        // Idle: no appender. The copies (well under COMPACTION_IDLE_UNSYNCED_SIZE_BYTES_MAX)
        // are written batch by batch and made durable by the COMMIT's commit alone.
        let (wal, _) = log();
        let segments = wal.segments();
        let cut = segments[segments.len() - 2].first_lsn;
        wal.sync().expect("syncs");
        let syncs_before = wal.stats().syncs_count;
        let report = wal
            .compact_below_with_progress(cut, |r| r.kind.get() == 2, |_| {})
            .expect("compacts");
        // Small segments cap a batch at 256 bytes: the copies span many batches.
        let last_copy = report.lsn_mapping.last().expect("copies").1;
        assert!(report.lsn_mapping.len() > 20, "many batches of copies");
        // The writer's leaders synced only for the start (nothing pending here) and the
        // COMMIT, not once per batch.
        let leader_syncs = wal.stats().syncs_count - syncs_before;
        assert!(
            leader_syncs <= 2,
            "{leader_syncs} syncs led for {} copies",
            report.lsn_mapping.len()
        );
        assert_eq!(
            wal.stats().compaction_syncs_count,
            0,
            "idle: no sync per batch"
        );
        assert!(wal.stats().durable_lsn >= last_copy);
        assert!(wal.read(last_copy).expect("reads").is_some());

        // Busy: an appender commits while the records are judged, so its records come between
        // the batches: those batches are flushed by the compaction's own fdatasync, outside
        // the leader role, before the next is handed over.
        let (wal, _) = log();
        let segments = wal.segments();
        let cut = segments[segments.len() - 2].first_lsn;
        wal.sync().expect("syncs");
        let appender = RecordKind::new(1).expect("kind");
        let report = wal
            .compact_below_with_progress(
                cut,
                |r| {
                    wal.append(appender, b"an appender's record")
                        .expect("appends");
                    r.kind.get() == 2
                },
                |_| {},
            )
            .expect("compacts");
        let last_copy = report.lsn_mapping.last().expect("copies").1;
        // The first batch always follows an appender's record (the scan judged a record, so
        // appended, before it sent the batch); later ones do while the scan is still running.
        assert!(
            wal.stats().compaction_syncs_count >= 1,
            "busy: batches synced by the compaction"
        );
        assert!(wal.stats().durable_lsn >= last_copy);
        assert!(wal.read(last_copy).expect("reads").is_some());
    }

    #[test]
    fn idle_copies_are_synced_once_per_idle_bound() {
        use crate::limits::COMPACTION_IDLE_UNSYNCED_SIZE_BYTES_MAX;
        // Segments of 64 KiB (batches of 4 KiB), 2.5 MiB of live records to copy.
        let options = WalOptions {
            segment_size_bytes: 64 * 1024,
            durability: Durability::GroupCommit,
            background_preparation: false,
            ..WalOptions::default()
        };
        let (wal, _) =
            Wal::open_with_storage(Arc::new(SimStorage::new()), "/w", options).expect("opens");
        let payload = vec![b'p'; 1000];
        for _ in 0..2600 {
            wal.enqueue(RecordKind::new(2).expect("kind"), &payload)
                .expect("enqueues");
        }
        wal.sync().expect("syncs");
        let segments = wal.segments();
        let cut = segments[segments.len() - 1].first_lsn;
        let mut copied_size_bytes = 0u64;
        let report = wal
            .compact_below_with_progress(cut, |_| true, |p| copied_size_bytes = p.copied_size_bytes)
            .expect("compacts");
        assert!(copied_size_bytes > 2 * COMPACTION_IDLE_UNSYNCED_SIZE_BYTES_MAX as u64);
        // One sync each time the written-but-unsynced copies reach the bound; the rest is
        // made durable by the COMMIT.
        let syncs = wal.stats().compaction_syncs_count;
        assert_eq!(
            syncs,
            copied_size_bytes / COMPACTION_IDLE_UNSYNCED_SIZE_BYTES_MAX as u64,
            "{copied_size_bytes} bytes copied"
        );
        let last_copy = report.lsn_mapping.last().expect("copies").1;
        assert!(wal.stats().durable_lsn >= last_copy);
    }

    #[test]
    fn compaction_gives_way_to_an_appenders_buffered_records_a_bounded_number_of_times() {
        let (wal, _) = log();
        let inner = wal.inner_for_tests();
        let own = wal.sync().expect("syncs").0;
        // A zero wait: the bound is counted, nothing sleeps.
        assert_eq!(inner.give_way(own, 3, 0), 0, "nothing pending: no wait");
        let theirs = wal
            .enqueue(RecordKind::new(1).expect("kind"), b"an appender's record")
            .expect("enqueues");
        assert_eq!(
            inner.give_way(own, 3, 0),
            3,
            "an appender's unwritten record: gives way, at most 3 times"
        );
        assert_eq!(
            inner.give_way(theirs.0, 3, 0),
            0,
            "records up to the caller's own last LSN are not waited for"
        );
        wal.wait_durable(theirs).expect("commits");
        assert_eq!(inner.give_way(own, 3, 0), 0, "written: no wait");
    }

    #[test]
    fn records_are_judged_on_a_low_priority_scanning_thread_and_progress_on_the_caller() {
        let (wal, _) = log();
        let segments = wal.segments();
        let cut = segments[segments.len() - 2].first_lsn;
        let caller = std::thread::current().id();
        let judged_on = parking_lot::Mutex::new(std::collections::HashSet::new());
        let mut progress_on = std::collections::HashSet::new();
        let nice = parking_lot::Mutex::new(None);
        wal.compact_below_with_progress(
            cut,
            |r| {
                let thread = std::thread::current();
                judged_on
                    .lock()
                    .insert((thread.id(), thread.name().map(str::to_owned)));
                #[cfg(target_os = "linux")]
                {
                    // SAFETY: plain integer syscalls.
                    let value = unsafe {
                        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
                        libc::getpriority(libc::PRIO_PROCESS, tid)
                    };
                    *nice.lock() = Some(value);
                }
                r.kind.get() == 2
            },
            |_| {
                progress_on.insert(std::thread::current().id());
            },
        )
        .expect("compacts");
        let judged_on = judged_on.into_inner();
        assert_eq!(judged_on.len(), 1, "one scanning thread");
        let (thread, name) = judged_on.into_iter().next().expect("judged");
        assert_ne!(thread, caller);
        assert_eq!(name.as_deref(), Some("statelog-wal-compact-scan"));
        assert_eq!(progress_on.into_iter().collect::<Vec<_>>(), vec![caller]);
        #[cfg(target_os = "linux")]
        assert_eq!(nice.into_inner(), Some(crate::limits::COMPACTION_SCAN_NICE));
        #[cfg(not(target_os = "linux"))]
        let _ = nice;
    }

    #[test]
    fn a_panicking_predicate_reaches_the_caller_and_hides_the_partial_copy() {
        let (wal, live) = log();
        let segments = wal.segments();
        let cut = segments[segments.len() - 2].first_lsn;
        let mut seen = 0usize;
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            wal.compact_below(cut, |r| {
                seen += 1;
                assert!(seen < 200, "the predicate gives up");
                r.kind.get() == 2
            })
        }));
        assert!(outcome.is_err(), "the panic reached the caller");
        // Nothing was removed and no copy is visible: the live records read back once, at
        // their original LSNs; a later compaction completes.
        let after = wal.segments();
        assert_eq!(after[0].segment_id, segments[0].segment_id);
        assert!(after.len() >= segments.len());
        let copies = wal
            .iter_from(Lsn(1))
            .expect("iterates")
            .filter(|r| r.as_ref().is_ok_and(|r| r.kind.get() == 2))
            .count();
        assert_eq!(copies, live.len());
        let report = wal
            .compact_below(cut, |r| r.kind.get() == 2)
            .expect("compacts after the panic");
        assert!(!report.segments_deleted.is_empty());
    }
}
