//! log: the seam between the store and the durable log. [`Log`] is what the store needs from a
//! write-ahead log (atomic batch append, read by LSN, a full scan); [`statelog_wal::Wal`]
//! implements it for real, [`MemoryLog`] holds records in memory for tests that need no disk.
//!
//! Invariants: `append_batch` returns only once every record of the batch is acknowledged
//! under the log's durability; records are returned by `scan` in LSN order, dense batches never
//! interleaved with a half of another. Must not: interpret payloads.

use std::fmt::Debug;
use std::ops::ControlFlow;

use parking_lot::RwLock;
use statelog_wal::{Lsn, RecordKind, Wal};

use super::Error;

/// The visitor `Log::scan` calls with each record's LSN, kind and payload.
pub type Visit<'a> = dyn FnMut(Lsn, u8, &[u8]) -> Result<(), Error> + 'a;

/// What the store needs from a durable, ordered log.
pub trait Log: Send + Sync + Debug {
    /// Appends `records` as one atomic batch and returns the LSN of the first, once durable.
    fn append_batch(&self, records: &[(u8, &[u8])]) -> Result<Lsn, Error>;

    /// Reads one record's kind and payload; `None` when the LSN holds no caller record.
    fn read(&self, lsn: Lsn) -> Result<Option<(u8, Vec<u8>)>, Error>;

    /// Calls `visit` with every record in LSN order; stops at the first error it returns.
    fn scan(&self, visit: &mut Visit<'_>) -> Result<(), Error>;

    /// Like [`Log::scan`], also giving each record's original LSN (differs from its LSN when
    /// compaction copied it forward): `visit(origin, lsn, kind, payload)`.
    fn scan_with_origin(&self, visit: &mut VisitOrigin<'_>) -> Result<(), Error> {
        self.scan(&mut |lsn, kind, payload| visit(lsn, lsn, kind, payload))
    }

    /// The WAL under this log, when it is one (compaction works on it).
    fn as_wal(&self) -> Option<&Wal> {
        None
    }
}

/// What [`Log::scan_with_origin`] calls: `(origin LSN, LSN, kind, payload)`.
pub type VisitOrigin<'a> = dyn FnMut(Lsn, Lsn, u8, &[u8]) -> Result<(), Error> + 'a;

impl Log for Wal {
    fn append_batch(&self, records: &[(u8, &[u8])]) -> Result<Lsn, Error> {
        let range = match records {
            // The common case (one decision, one record) frames on the stack.
            [(kind, payload)] => Wal::append_batch(self, &[(RecordKind::new(*kind)?, *payload)])?,
            _ => {
                let mut framed = Vec::with_capacity(records.len());
                for &(kind, payload) in records {
                    framed.push((RecordKind::new(kind)?, payload));
                }
                Wal::append_batch(self, &framed)?
            }
        };
        debug_assert!(range.last.0 - range.first.0 + 1 == records.len() as u64);
        Ok(range.first)
    }

    fn read(&self, lsn: Lsn) -> Result<Option<(u8, Vec<u8>)>, Error> {
        Ok(Wal::read(self, lsn)?.map(|record| (record.kind.get(), record.payload)))
    }

    fn scan(&self, visit: &mut Visit<'_>) -> Result<(), Error> {
        let mut failure = None;
        self.scan_from(Lsn(1), |record| {
            match visit(record.lsn, record.kind.get(), record.payload) {
                Ok(()) => ControlFlow::Continue(()),
                Err(error) => {
                    failure = Some(error);
                    ControlFlow::Break(())
                }
            }
        })?;
        match failure {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    fn scan_with_origin(&self, visit: &mut VisitOrigin<'_>) -> Result<(), Error> {
        let mut failure = None;
        self.scan_from(Lsn(1), |record| {
            let origin = record.copied_from.unwrap_or(record.lsn);
            match visit(origin, record.lsn, record.kind.get(), record.payload) {
                Ok(()) => ControlFlow::Continue(()),
                Err(error) => {
                    failure = Some(error);
                    ControlFlow::Break(())
                }
            }
        })?;
        match failure {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    fn as_wal(&self) -> Option<&Wal> {
        Some(self)
    }
}

/// A log held in memory: nothing survives the process. For tests of the layers above.
#[derive(Debug, Default)]
pub struct MemoryLog {
    records: RwLock<Vec<(u8, Vec<u8>)>>,
}

impl MemoryLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Log for MemoryLog {
    fn append_batch(&self, records: &[(u8, &[u8])]) -> Result<Lsn, Error> {
        let mut held = self.records.write();
        let first = Lsn(held.len() as u64 + 1);
        held.extend(
            records
                .iter()
                .map(|&(kind, payload)| (kind, payload.to_vec())),
        );
        Ok(first)
    }

    fn read(&self, lsn: Lsn) -> Result<Option<(u8, Vec<u8>)>, Error> {
        let held = self.records.read();
        Ok(lsn
            .0
            .checked_sub(1)
            .and_then(|index| held.get(index as usize))
            .cloned())
    }

    fn scan(&self, visit: &mut Visit<'_>) -> Result<(), Error> {
        let held = self.records.read();
        for (index, (kind, payload)) in held.iter().enumerate() {
            visit(Lsn(index as u64 + 1), *kind, payload)?;
        }
        Ok(())
    }
}
