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
//! Invariants: only a prefix of the log is ever removed; the active segment is never removed;
//! old segments are removed only after the COMMIT is durable. This module must not interpret
//! payloads beyond calling the caller's predicate.

use std::ops::ControlFlow;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::limits::COMPACTION_RECORDS_MAX;
use crate::reader::View;
use crate::record::{self, Record, KIND_COMPACT_BEGIN, KIND_COMPACT_COMMIT, KIND_COPY};
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

/// Copy-forward compaction of the sealed segments entirely below `lsn`.
pub(crate) fn compact_below(
    inner: &Inner,
    lsn: u64,
    live: &dyn Fn(&Record<'_>) -> bool,
) -> Result<CompactionReport> {
    let _exclusive = inner.compaction_lock.lock();
    check_writable(inner, "compact_below")?;
    let (count, end) = removable_prefix(inner, lsn);
    if count == 0 {
        return Ok(CompactionReport::default());
    }
    // Every record to be judged must be durable (and so visible) before it is read.
    inner.commit(end - 1, Want::Durable)?;
    let (first_segment, last_segment, first_lsn) = {
        let catalog = inner.catalog.read();
        (
            catalog.segments[0].id,
            catalog.segments[count - 1].id,
            catalog.segments[0].first_lsn,
        )
    };
    let mut marker = Vec::with_capacity(24);
    marker.extend_from_slice(&first_segment.0.to_le_bytes());
    marker.extend_from_slice(&last_segment.0.to_le_bytes());
    let (begin, _) = inner.enqueue_batch(&[(KIND_COMPACT_BEGIN, &marker)])?;

    let mut report = CompactionReport::default();
    let mut copy = Vec::new();
    let mut failure: Option<Error> = None;
    let mut view = View::new(inner, first_lsn)?;
    view.scan(|record| {
        if record.lsn.0 >= end {
            return ControlFlow::Break(());
        }
        if !live(&record) {
            report.records_dropped_count += 1;
            return ControlFlow::Continue(());
        }
        if report.lsn_mapping.len() >= COMPACTION_RECORDS_MAX {
            failure = Some(Error::Unsupported {
                what: "compaction of more than COMPACTION_RECORDS_MAX live records",
            });
            return ControlFlow::Break(());
        }
        // A copy of a copy keeps the first original LSN: readers order copies by it.
        record::encode_copy_payload(
            &mut copy,
            record.copied_from.unwrap_or(record.lsn).0,
            begin,
            record.kind.get(),
            record.payload,
        );
        match inner.enqueue_batch(&[(KIND_COPY, &copy)]) {
            Ok((new_lsn, _)) => {
                report.lsn_mapping.push((record.lsn, Lsn(new_lsn)));
                ControlFlow::Continue(())
            }
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
    marker.clear();
    marker.extend_from_slice(&begin.to_le_bytes());
    marker.extend_from_slice(&first_segment.0.to_le_bytes());
    marker.extend_from_slice(&last_segment.0.to_le_bytes());
    let (commit_lsn, _) = inner.enqueue_batch(&[(KIND_COMPACT_COMMIT, &marker)])?;
    inner.commit(commit_lsn, Want::Durable)?;
    let taken = take_prefix(inner, count, Some(begin));
    debug_assert_eq!(taken.first().map(|m| m.id), Some(first_segment));
    debug_assert_eq!(taken.last().map(|m| m.id), Some(last_segment));
    report.segments_deleted = taken.iter().map(|meta| meta.id).collect();
    inner.retire_segments(taken)?;
    Ok(report)
}
