//! retention: forgetting expired executions. [`Store::compact`] drops every closed execution
//! whose close is older than a cutoff (the caller's clock decides it) from the index, and has the
//! WAL copy forward the live records of the sealed segments it removes; the index follows the
//! WAL's LSN mapping, so every retained history stays readable and contiguous.
//!
//! Invariants: open executions are never dropped, whatever their age; machine records are always
//! kept (they identify machines by their original LSN, see `Store::open`); catalog records are
//! kept when live (`Catalog::is_live`: live activities, current tag sets, redrive tokens of
//! executions kept) and only then; Map Run records (`map_runs`) are kept while their parent
//! execution's records are and dropped with them (or once an earlier compaction forgot the
//! parent); readers by LSN are held off
//! (the store's `reads` lock) from the start of the copy until the index follows the mapping, so
//! no reader ever sees an LSN that the compaction removed; appends are not held off. Must not: read a clock or decide what is expired beyond
//! comparing close times with the cutoff it is given.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use parking_lot::{RwLockReadGuard, RwLockWriteGuard};
use statelog_wal::Lsn;

use super::record::{self, BatchHeader, CatalogRecord, MachineRecord, KIND_CATALOG, KIND_EVENTS};
use super::{CompactionProgress, Error, Extent, Store};
use crate::limits::{
    COMPACTION_CHUNK_SIZE_BYTES, COMPACTION_INDEX_BATCH_COUNT, COMPACTION_INDEX_READ_BATCH_COUNT,
};

/// A set of execution ARNs, hashed as the index's map is (`ArnMap`).
type ArnSet<T> = HashSet<T, foldhash::quality::RandomState>;

/// One record found by the open scan, applied in original-LSN order.
pub(super) enum Found {
    /// A state machine record.
    Machine(MachineRecord),
    /// An event batch header.
    Batch(BatchHeader),
    /// A catalog record.
    Catalog(CatalogRecord),
    /// An SWF record (an event batch's header only).
    Swf(Box<crate::swf::SwfRecord>),
    /// A Map Run record.
    MapRun(Box<crate::map_runs::MapRunRecord>),
}

/// What one [`Store::compact`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreCompaction {
    /// Executions forgotten (closed before the cutoff).
    pub executions_expired_count: u64,
    /// Segments scanned (the sealed prefix of the log, before compaction).
    pub segments_scanned_count: u64,
    /// Segments deleted.
    pub segments_deleted_count: u64,
    /// Records copied forward.
    pub records_copied_count: u64,
    /// Records dropped.
    pub records_dropped_count: u64,
    /// Bytes of the log before.
    pub size_bytes_before: u64,
    /// Bytes of the log after.
    pub size_bytes_after: u64,
}

impl StoreCompaction {
    /// Bytes the compaction gave back (0 when the log grew).
    pub fn bytes_reclaimed(&self) -> u64 {
        self.size_bytes_before.saturating_sub(self.size_bytes_after)
    }
}

/// The execution ARN of an events record, read in place from its batch header (no allocation:
/// compaction judges every record of the segments it scans). `None` when it cannot be read.
fn batch_execution_arn(payload: &[u8]) -> Option<&str> {
    let (&version, body) = payload.split_first()?;
    if version != record::BATCH_ENVELOPE_VERSION {
        return None;
    }
    // `BatchHeader` starts with the ARN; postcard reads a `&str` in place.
    let (arn, _): (&str, _) = postcard::take_from_bytes(body).ok()?;
    Some(arn)
}

/// The parent execution ARN of a Map Run record, read in place: every variant begins with the
/// run's ARN and then its parent's (postcard: the variant's tag, then the fields in order).
fn map_run_parent(payload: &[u8]) -> Option<&str> {
    let (&version, body) = payload.split_first()?;
    if version != crate::map_runs::MAP_RUN_FORMAT_VERSION {
        return None;
    }
    let (fields, _): ((u32, &str, &str), _) = postcard::take_from_bytes(body).ok()?;
    Some(fields.2)
}

/// The LSN that ends the sealed extents up to the one holding `newest`; never past the start of
/// the last extent (the one appended to, never compacted).
fn compact_bound(extents: &[Extent], newest: Lsn) -> Lsn {
    let active_first = extents.last().map_or(Lsn(0), |s| s.first_lsn);
    extents
        .iter()
        .find(|s| s.first_lsn > newest)
        .map_or(active_first, |s| s.first_lsn.min(active_first))
}

fn log_size_bytes(extents: &[Extent]) -> u64 {
    extents.iter().map(|s| s.size_bytes).sum()
}

/// An expired execution and where its record LSNs (as the index knows them) sit in a shared
/// flat vector.
struct Expired {
    arn: Arc<str>,
    lsns: std::ops::Range<usize>,
    /// Its newest record (records copied forward can sit after newer originals).
    newest: Option<Lsn>,
}

/// `done` (finished steps) plus `step` (the running one), with the whole compaction's total.
fn progress_sum(
    done: &CompactionProgress,
    step: &CompactionProgress,
    total: u64,
) -> CompactionProgress {
    CompactionProgress {
        segments_total_count: total,
        segments_scanned_count: done.segments_scanned_count + step.segments_scanned_count,
        scanned_size_bytes: done.scanned_size_bytes + step.scanned_size_bytes,
        records_copied_count: done.records_copied_count + step.records_copied_count,
        copied_size_bytes: done.copied_size_bytes + step.copied_size_bytes,
        records_dropped_count: done.records_dropped_count + step.records_dropped_count,
        segments_deleted_count: done.segments_deleted_count + step.segments_deleted_count,
        reclaimed_size_bytes: done.reclaimed_size_bytes + step.reclaimed_size_bytes,
    }
}

impl Store {
    /// Forgets every closed execution that closed before `closed_before_ms` and compacts the
    /// log's sealed extents. A log without extents (memory) only forgets.
    pub fn compact(&self, closed_before_ms: u64) -> Result<StoreCompaction, Error> {
        self.compact_with_progress(closed_before_ms, &mut |_| {})
    }

    /// [`Store::compact`], telling `progress` how far the whole compaction is after every
    /// segment scanned and at the end of every step (counts cumulative over the steps;
    /// `segments_total_count` is the sealed prefix to compact).
    pub fn compact_with_progress(
        &self,
        closed_before_ms: u64,
        progress: &mut dyn FnMut(&CompactionProgress),
    ) -> Result<StoreCompaction, Error> {
        self.compact_with_swf(closed_before_ms, None, progress)
    }

    /// [`Store::compact_with_progress`] that also forgets every closed SWF run past its
    /// domain's retention at `swf_now_ms` (`None`: keep every SWF run). SWF registry records
    /// are kept while live (`swf::SwfIndex::is_live`), every record of an open run always.
    pub fn compact_with_swf(
        &self,
        closed_before_ms: u64,
        swf_now_ms: Option<u64>,
        progress: &mut dyn FnMut(&CompactionProgress),
    ) -> Result<StoreCompaction, Error> {
        // Records are later judged by LSN alone. The expired executions and their record LSNs
        // (into one flat vector) in one walk of the start order, COMPACTION_INDEX_READ_BATCH_COUNT
        // positions per hold of the index lock: starts are never held off for the whole walk.
        // The start order only grows (a forgotten execution keeps its place), so positions read
        // in one hold stay valid in the next.
        let started_count = self.index.read().started.len();
        let mut expired: Vec<Expired> = Vec::new();
        let mut all_lsns: Vec<Lsn> = Vec::new();
        let mut position = 0usize;
        while position < started_count {
            let until = (position + COMPACTION_INDEX_READ_BATCH_COUNT).min(started_count);
            let index = self.index.read();
            for (start_index, arn) in (position..until).zip(&index.started[position..until]) {
                // Forgotten (a compaction), or a later execution of the same name holds the
                // entry now (it is judged at its own place).
                let Some(entry) = index.executions.get(arn) else {
                    continue;
                };
                if entry.start_index != start_index as u64
                    || !entry.status.is_closed()
                    || !entry.stop_ms.is_some_and(|s| s < closed_before_ms)
                {
                    continue;
                }
                let start = all_lsns.len();
                all_lsns.extend(entry.records.iter().map(|record| record.lsn));
                expired.push(Expired {
                    arn: arn.clone(),
                    lsns: start..all_lsns.len(),
                    newest: entry.records.iter().map(|record| record.lsn).max(),
                });
            }
            RwLockReadGuard::unlock_fair(index);
            position = until;
        }
        // SWF runs past their retention: judged by LSN like the executions above.
        if let Some(now_ms) = swf_now_ms {
            let index = self.index.read();
            for entry in index.swf.runs.values() {
                if !entry.summary.is_expired(now_ms) {
                    continue;
                }
                let start = all_lsns.len();
                all_lsns.extend(entry.records.iter().copied());
                expired.push(Expired {
                    arn: entry.summary.run_id.clone(),
                    lsns: start..all_lsns.len(),
                    newest: entry.records.iter().copied().max(),
                });
            }
        }
        let mut report = StoreCompaction::default();
        let extents = self.log.extents();
        if extents.is_empty() {
            let mut index = self.index.write();
            for execution in &expired {
                index.executions.remove(&execution.arn);
                index.swf.runs.remove(&execution.arn);
            }
            let gone: HashSet<&str> = expired.iter().map(|e| e.arn.as_ref()).collect();
            index
                .catalog
                .forget_redrive_tokens(|arn| gone.contains(arn));
            index.map_runs.forget_parents(|arn| gone.contains(arn));
            report.executions_expired_count = expired.len() as u64;
            return Ok(report);
        }
        // An expired execution without records has nothing to reclaim (kept as before).
        expired.retain(|execution| execution.newest.is_some());
        // Compact up to the end of the segment holding the newest expired record.
        let below = expired
            .iter()
            .filter_map(|e| e.newest)
            .max()
            .map_or(Lsn(0), |newest| compact_bound(&extents, newest));
        report.size_bytes_before = log_size_bytes(&extents);
        report.segments_scanned_count = extents
            .iter()
            .filter(|s| s.sealed && s.first_lsn < below)
            .count() as u64;
        // About COMPACTION_CHUNK_SIZE_BYTES of segments at a time, so readers by LSN are held
        // off for one step only (the WAL itself writes and syncs its copies in bounded chunks,
        // so appends never wait behind the copy). Only an expired execution whose records all
        // lie below the chunk is dropped: no history is ever cut in two (the others are copied
        // forward whole and dropped by a later compaction).
        let mut done_progress = CompactionProgress {
            segments_total_count: report.segments_scanned_count,
            ..CompactionProgress::default()
        };
        loop {
            let segments = self.log.extents();
            if segments.first().map_or(true, |s| s.first_lsn >= below) {
                break;
            }
            let mut chunk_size_bytes = 0u64;
            let chunk_segments = segments
                .iter()
                .take_while(|s| {
                    let take = chunk_size_bytes < COMPACTION_CHUNK_SIZE_BYTES;
                    chunk_size_bytes += s.size_bytes;
                    take
                })
                .count()
                .max(1);
            let chunk_below = segments
                .get(chunk_segments)
                .map_or(below, |s| s.first_lsn.min(below));
            // Readers by LSN wait; appends go on (they never read old records).
            let _exclusive = self.reads.write();
            // The records to drop, sorted: those of every expired execution wholly below the
            // chunk. The scan runs in LSN order, so a cursor judges each record in O(1).
            let wholly_below = |e: &Expired| e.newest.is_some_and(|lsn| lsn < chunk_below);
            let mut drop_lsns: Vec<Lsn> = expired
                .iter()
                .filter(|e| wholly_below(e))
                .flat_map(|e| all_lsns[e.lsns.clone()].iter().copied())
                .collect();
            drop_lsns.sort_unstable();
            // Catalog records (redrive tokens) of those executions go by ARN: the set is built
            // at the first such record (most logs have none, and it costs a hash per ARN).
            let mut droppable_arns: Option<ArnSet<&str>> = None;
            // A snapshot: records only ever turn from live to dead (see `Catalog::is_live`).
            let catalog = self.index.read().catalog.clone();
            // The same for the SWF registry (small: no runs are copied).
            let swf_registry = {
                let index = self.index.read();
                crate::swf::SwfIndex {
                    domains: index.swf.domains.clone(),
                    types: index.swf.types.clone(),
                    tags: index.swf.tags.clone(),
                    ..Default::default()
                }
            };
            // Map Run records go with their parent: those of a parent dropped here, and those
            // of a parent an earlier compaction forgot (the set is small: one per Map Run).
            let forgotten_parents: ArnSet<Arc<str>> = {
                let index = self.index.read();
                index
                    .map_runs
                    .runs
                    .values()
                    .filter(|run| {
                        !index.executions.contains_key(&run.execution_arn)
                            && !index.damaged.contains_key(&run.execution_arn)
                    })
                    .map(|run| run.execution_arn.clone())
                    .collect()
            };
            let mut dropped_parents: Option<ArnSet<&str>> = None;
            let mut cursor = 0usize;
            let mut droppable = |lsn: Lsn| {
                while drop_lsns.get(cursor).is_some_and(|d| *d < lsn) {
                    cursor += 1;
                }
                drop_lsns.get(cursor) == Some(&lsn)
            };
            // Executions with records copied forward: only their index entries change.
            let mut moved: ArnSet<Arc<str>> = ArnSet::default();
            let mut dropped: Vec<Arc<str>> = Vec::new();
            let total = report.segments_scanned_count;
            let mut last_step = CompactionProgress::default();
            let done = self.log.compact_below(
                chunk_below,
                &mut |record| {
                    if record.kind == KIND_CATALOG {
                        return match record::decode_catalog(record.payload) {
                            Ok(CatalogRecord::Redriven { execution_arn, .. })
                                if droppable_arns
                                    .get_or_insert_with(|| {
                                        expired
                                            .iter()
                                            .filter(|e| wholly_below(e))
                                            .map(|e| e.arn.as_ref())
                                            .collect()
                                    })
                                    .contains(execution_arn.as_str()) =>
                            {
                                false
                            }
                            Ok(other) => catalog.is_live(&other),
                            // Keep what cannot be judged: open will report it.
                            Err(_) => true,
                        };
                    }
                    if record.kind == crate::swf::KIND_SWF {
                        return match crate::swf::decode_swf(record.payload) {
                            Ok((crate::swf::SwfRecord::Events(header), _)) => {
                                if droppable(record.lsn) {
                                    return false;
                                }
                                if !moved.contains(header.run_id.as_str()) {
                                    moved.insert(Arc::from(header.run_id.as_str()));
                                }
                                true
                            }
                            Ok((registry, _)) => swf_registry.is_live(&registry),
                            // Keep what cannot be judged: open will report it.
                            Err(_) => true,
                        };
                    }
                    if record.kind == crate::map_runs::KIND_MAP_RUN {
                        // Keep what cannot be judged: open will report it.
                        let Some(parent) = map_run_parent(record.payload) else {
                            return true;
                        };
                        let dropped = dropped_parents.get_or_insert_with(|| {
                            expired
                                .iter()
                                .filter(|e| wholly_below(e))
                                .map(|e| e.arn.as_ref())
                                .collect()
                        });
                        return !dropped.contains(parent) && !forgotten_parents.contains(parent);
                    }
                    if record.kind != KIND_EVENTS {
                        return true;
                    }
                    if droppable(record.lsn) {
                        return false;
                    }
                    // Kept: its execution's index entry follows the copy. A record that cannot
                    // be judged is kept too (open will report it).
                    if let Some(arn) = batch_execution_arn(record.payload) {
                        if !moved.contains(arn) {
                            moved.insert(Arc::from(arn));
                        }
                    }
                    true
                },
                &mut |step| {
                    last_step = *step;
                    progress(&progress_sum(&done_progress, step, total));
                },
            )?;
            done_progress = progress_sum(&done_progress, &last_step, total);
            if done.extents_dropped_count == 0 {
                break;
            }
            // Dropped: every expired execution wholly below the chunk. One copied forward (it
            // straddled the chunk's end) is kept whole for a later compaction.
            expired.retain(|e| {
                if wholly_below(e) {
                    dropped.push(e.arn.clone());
                    return false;
                }
                !moved.contains(&e.arn)
            });
            let mapping: HashMap<Lsn, Lsn> = done.lsn_mapping.iter().copied().collect();
            {
                let mut index = self.index.write();
                index.map_runs.remap(&mapping);
                let gone: ArnSet<&str> = dropped.iter().map(|arn| arn.as_ref()).collect();
                index
                    .map_runs
                    .forget_parents(|arn| gone.contains(arn) || forgotten_parents.contains(arn));
            }
            // A bounded number of entries per hold of the index lock, so starts and other
            // index writers never wait behind the whole update (readers by LSN are still held
            // off by `reads`; the dropped executions are already invisible by their close time).
            let moved_list: Vec<&Arc<str>> = moved.iter().collect();
            for batch in moved_list.chunks(COMPACTION_INDEX_BATCH_COUNT) {
                let mut index = self.index.write();
                for arn in batch {
                    if let Some(entry) = index.executions.get_mut(*arn) {
                        for record in &mut entry.records {
                            if let Some(new) = mapping.get(&record.lsn) {
                                record.lsn = *new;
                            }
                        }
                    }
                    if let Some(run) = index.swf.runs.get_mut(*arn) {
                        for lsn in &mut run.records {
                            if let Some(new) = mapping.get(lsn) {
                                *lsn = *new;
                            }
                        }
                    }
                }
                // Hand the lock to a waiting start instead of taking it straight back.
                RwLockWriteGuard::unlock_fair(index);
            }
            for batch in dropped.chunks(COMPACTION_INDEX_BATCH_COUNT) {
                let mut index = self.index.write();
                for arn in batch {
                    index.executions.remove(arn);
                    index.swf.runs.remove(arn);
                }
                RwLockWriteGuard::unlock_fair(index);
            }
            if !dropped.is_empty() && self.index.read().catalog.has_redrive_tokens() {
                let gone: ArnSet<&str> = dropped.iter().map(|arn| arn.as_ref()).collect();
                self.index
                    .write()
                    .catalog
                    .forget_redrive_tokens(|arn| gone.contains(arn));
            }
            report.executions_expired_count += dropped.len() as u64;
            report.segments_deleted_count += done.extents_dropped_count;
            report.records_copied_count += done.lsn_mapping.len() as u64;
            report.records_dropped_count += done.records_dropped_count;
        }
        report.size_bytes_after = log_size_bytes(&self.log.extents());
        Ok(report)
    }
}
