//! retention: forgetting expired executions. [`Store::compact`] drops every closed execution
//! whose close is older than a cutoff (the caller's clock decides it) from the index, and has the
//! WAL copy forward the live records of the sealed segments it removes; the index follows the
//! WAL's LSN mapping, so every retained history stays readable and contiguous.
//!
//! Invariants: open executions are never dropped, whatever their age; machine records are always
//! kept (they identify machines by their original LSN, see `Store::open`); catalog records are
//! kept when live (`Catalog::is_live`: live activities, current tag sets, redrive tokens of
//! executions kept) and only then; readers by LSN are held off
//! (the store's `reads` lock) from the start of the copy until the index follows the mapping, so
//! no reader ever sees an LSN that the compaction removed; appends are not held off. Must not: read a clock or decide what is expired beyond
//! comparing close times with the cutoff it is given.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use statelog_wal::{Lsn, Wal};

use super::record::{self, BatchHeader, CatalogRecord, MachineRecord, KIND_CATALOG, KIND_EVENTS};
use super::{Error, Store};
use crate::limits::COMPACTION_CHUNK_SEGMENTS;

/// One record found by the open scan, applied in original-LSN order.
pub(super) enum Found {
    /// A state machine record.
    Machine(MachineRecord),
    /// An event batch header.
    Batch(BatchHeader),
    /// A catalog record.
    Catalog(CatalogRecord),
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

/// The LSN that ends the sealed segments up to the one holding `newest`; never past the start of
/// the active segment (it is never compacted).
fn compact_bound(wal: &Wal, newest: Lsn) -> Lsn {
    let segments = wal.segments();
    let active_first = segments.last().map_or(Lsn(0), |s| s.first_lsn);
    segments
        .iter()
        .find(|s| s.first_lsn > newest)
        .map_or(active_first, |s| s.first_lsn.min(active_first))
}

fn log_size_bytes(wal: &Wal) -> u64 {
    wal.segments().iter().map(|s| s.size_bytes).sum()
}

impl Store {
    /// Forgets every closed execution that closed before `closed_before_ms` and compacts the
    /// log's sealed segments. A log that is not a WAL (memory) only forgets.
    pub fn compact(&self, closed_before_ms: u64) -> Result<StoreCompaction, Error> {
        let expired: HashSet<Arc<str>> = {
            let index = self.index.read();
            index
                .executions
                .iter()
                .filter(|(_, e)| {
                    e.status.is_closed() && e.stop_ms.is_some_and(|s| s < closed_before_ms)
                })
                .map(|(arn, _)| arn.clone())
                .collect()
        };
        let mut report = StoreCompaction::default();
        let Some(wal) = self.log.as_wal() else {
            let mut index = self.index.write();
            for arn in &expired {
                index.executions.remove(arn);
            }
            index
                .catalog
                .forget_redrive_tokens(|arn| expired.contains(arn));
            report.executions_expired_count = expired.len() as u64;
            return Ok(report);
        };
        // The newest record of each expired execution (work outside the index lock later).
        let mut newest: HashMap<Arc<str>, Lsn> = {
            let index = self.index.read();
            expired
                .iter()
                .filter_map(|arn| {
                    let entry = index.executions.get(arn)?;
                    Some((arn.clone(), entry.record_lsns.iter().max().copied()?))
                })
                .collect()
        };
        // Compact up to the end of the segment holding the newest expired record.
        let below = newest
            .values()
            .max()
            .map_or(Lsn(0), |newest| compact_bound(wal, *newest));
        report.size_bytes_before = log_size_bytes(wal);
        report.segments_scanned_count = wal
            .segments()
            .iter()
            .filter(|s| !s.active && s.first_lsn < below)
            .count() as u64;
        // A few segments at a time: each chunk's copies are synced on their own, so appends
        // running meanwhile never wait behind one long copy. Only an expired execution whose
        // records all lie below the chunk is dropped: no history is ever cut in two (the
        // others are copied forward whole and dropped by a later compaction).
        loop {
            let segments = wal.segments();
            if segments.first().map_or(true, |s| s.first_lsn >= below) {
                break;
            }
            let chunk_below = segments
                .get(COMPACTION_CHUNK_SEGMENTS)
                .map_or(below, |s| s.first_lsn.min(below));
            // Readers by LSN wait; appends go on (they never read old records).
            let _exclusive = self.reads.write();
            let droppable = |arn: &str| newest.get(arn).is_some_and(|lsn| *lsn < chunk_below);
            // A snapshot: records only ever turn from live to dead (see `Catalog::is_live`).
            let catalog = self.index.read().catalog.clone();
            // Executions with records copied forward: only their index entries change.
            let moved: RefCell<HashSet<Arc<str>>> = RefCell::default();
            let mut dropped: HashSet<Arc<str>> = HashSet::new();
            let done = wal.compact_below(chunk_below, |record| {
                if record.kind.get() == KIND_CATALOG {
                    return match record::decode_catalog(record.payload) {
                        Ok(CatalogRecord::Redriven { execution_arn, .. })
                            if droppable(&execution_arn) =>
                        {
                            false
                        }
                        Ok(other) => catalog.is_live(&other),
                        // Keep what cannot be judged: open will report it.
                        Err(_) => true,
                    };
                }
                if record.kind.get() != KIND_EVENTS {
                    return true;
                }
                match record::decode_batch_header(record.payload) {
                    Ok((header, _)) => {
                        let keep = !droppable(&header.execution_arn);
                        if keep {
                            moved.borrow_mut().insert(Arc::from(header.execution_arn));
                        }
                        keep
                    }
                    // Keep what cannot be judged: open will report it.
                    Err(_) => true,
                }
            })?;
            if done.segments_deleted.is_empty() {
                break;
            }
            for (arn, lsn) in &newest {
                if *lsn < chunk_below {
                    dropped.insert(arn.clone());
                }
            }
            let moved = moved.into_inner();
            let mapping: HashMap<Lsn, Lsn> = done.lsn_mapping.iter().copied().collect();
            {
                let mut index = self.index.write();
                for arn in &moved {
                    if let Some(entry) = index.executions.get_mut(arn) {
                        for lsn in &mut entry.record_lsns {
                            if let Some(new) = mapping.get(lsn) {
                                *lsn = *new;
                            }
                        }
                    }
                }
                for arn in &dropped {
                    index.executions.remove(arn);
                }
                index
                    .catalog
                    .forget_redrive_tokens(|arn| dropped.contains(arn));
            }
            // An expired execution copied forward (it straddled the chunk's end) is kept whole
            // for a later compaction.
            newest.retain(|arn, _| !dropped.contains(arn) && !moved.contains(arn));
            report.executions_expired_count += dropped.len() as u64;
            report.segments_deleted_count += done.segments_deleted.len() as u64;
            report.records_copied_count += done.lsn_mapping.len() as u64;
            report.records_dropped_count += done.records_dropped_count;
        }
        report.size_bytes_after = log_size_bytes(wal);
        Ok(report)
    }
}
