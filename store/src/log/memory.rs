//! memory: a log held in memory. Nothing survives the process. For tests of the layers above
//! and for embedders that want no disk.
//!
//! Invariants: `first_lsn + records.len()` is the next LSN; `durable_lsn` never passes it;
//! read, scan and tail see only records up to `durable_lsn` (what a synced WAL shows).
//! Must not: hand out a record appended after [`MemoryLog::fence`].

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use statelog_wal::Lsn;

use super::{
    Compacted, CompactionProgress, Durability, Extent, Keep, Log, LogRecord, LogStats, Visit,
    VisitRecord,
};
use crate::limits::TAIL_WAIT_MS_MAX;
use crate::Error;

/// A log held in memory: nothing survives the process. For tests of the layers above.
#[derive(Debug, Default)]
pub struct MemoryLog {
    state: Mutex<State>,
    /// Woken when `durable_lsn` moves (the tail waits on it).
    durable: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// The retained records, `first_lsn` first: (kind, payload).
    records: VecDeque<(u8, Vec<u8>)>,
    /// The LSN of `records[0]` (0 in a new log means 1).
    first_lsn: u64,
    /// Every record up to this LSN is acknowledged (0: none).
    durable_lsn: u64,
    /// Set by [`MemoryLog::fence`]: every later write fails.
    fenced: bool,
}

impl State {
    fn first(&self) -> u64 {
        self.first_lsn.max(1)
    }

    fn next(&self) -> u64 {
        self.first() + self.records.len() as u64
    }

    fn get(&self, lsn: u64) -> Option<&(u8, Vec<u8>)> {
        if lsn > self.durable_lsn {
            return None;
        }
        let index = lsn.checked_sub(self.first())?;
        self.records.get(usize::try_from(index).ok()?)
    }
}

impl MemoryLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// Fences the current writer, as a replicated log does to a stale owner when another
    /// writer takes over: every later append and sync fails with [`Error::Fenced`]. What was
    /// acknowledged before stays readable.
    pub fn fence(&self) {
        self.state.lock().fenced = true;
    }

    fn advance_durable(&self, state: &mut State, upto: u64) {
        let upto = upto.min(state.next() - 1);
        if upto > state.durable_lsn {
            state.durable_lsn = upto;
            self.durable.notify_all();
        }
    }
}

impl Log for MemoryLog {
    fn append_batch(&self, records: &[(u8, &[u8])]) -> Result<Lsn, Error> {
        self.append(records, Durability::Synced)
    }

    fn scan(&self, visit: &mut Visit<'_>) -> Result<(), Error> {
        self.scan_from(Lsn(1), &mut |record| {
            visit(record.lsn, record.kind, record.payload)
        })
    }

    fn append(&self, records: &[(u8, &[u8])], durability: Durability) -> Result<Lsn, Error> {
        let mut state = self.state.lock();
        if state.fenced {
            return Err(Error::Fenced);
        }
        if records.is_empty() {
            return Err(Error::Log(statelog_wal::Error::EmptyBatch));
        }
        let first = state.next();
        state.records.extend(
            records
                .iter()
                .map(|&(kind, payload)| (kind, payload.to_vec())),
        );
        if durability == Durability::Synced {
            let last = state.next() - 1;
            self.advance_durable(&mut state, last);
        }
        Ok(Lsn(first))
    }

    /// Memory is durable at once: the append is synced and `on_durable` called before this
    /// returns, without waiting for anything.
    fn append_notify(
        &self,
        records: &[(u8, &[u8])],
        on_durable: super::OnDurable,
    ) -> Result<Lsn, Error> {
        let first = self.append(records, Durability::Synced)?;
        on_durable(Ok(()));
        Ok(first)
    }

    fn notifies(&self) -> bool {
        true
    }

    fn sync(&self, upto: Lsn) -> Result<Lsn, Error> {
        let mut state = self.state.lock();
        if state.fenced {
            return Err(Error::Fenced);
        }
        // Like the WAL, a sync makes everything appended so far durable.
        let last = state.next() - 1;
        self.advance_durable(&mut state, last);
        debug_assert!(state.durable_lsn >= upto.0.min(last));
        Ok(Lsn(state.durable_lsn))
    }

    fn read(&self, lsn: Lsn) -> Result<Option<(u8, Vec<u8>)>, Error> {
        let state = self.state.lock();
        // Past the acknowledged end is out of range, as the WAL answers it (the contract).
        if lsn.0 == 0 || lsn.0 > state.durable_lsn {
            return Err(Error::Log(statelog_wal::Error::LsnOutOfRange {
                lsn,
                first: Lsn(state.first()),
                next: Lsn(state.durable_lsn + 1),
            }));
        }
        Ok(state.get(lsn.0).cloned())
    }

    fn scan_from(&self, from: Lsn, visit: &mut VisitRecord<'_>) -> Result<(), Error> {
        let state = self.state.lock();
        for lsn in from.0.max(state.first())..=state.durable_lsn {
            let Some((kind, payload)) = state.get(lsn) else {
                unreachable!("every LSN from first to durable is held");
            };
            visit(&LogRecord {
                lsn: Lsn(lsn),
                origin_lsn: Lsn(lsn),
                kind: *kind,
                payload,
            })?;
        }
        Ok(())
    }

    fn wait_for(&self, lsn: Lsn, timeout: Duration) -> Result<bool, Error> {
        let deadline = Instant::now() + timeout.min(Duration::from_millis(TAIL_WAIT_MS_MAX));
        let mut state = self.state.lock();
        while state.durable_lsn < lsn.0 {
            if self.durable.wait_until(&mut state, deadline).timed_out() {
                return Ok(state.durable_lsn >= lsn.0);
            }
        }
        Ok(true)
    }

    fn trim_below(&self, lsn: Lsn) -> Result<Lsn, Error> {
        let mut state = self.state.lock();
        // Only acknowledged records are dropped: an unsynced one is not yet the log's.
        let below = lsn.0.min(state.durable_lsn + 1);
        while state.first() < below {
            state.records.pop_front();
            state.first_lsn = state.first() + 1;
        }
        Ok(Lsn(state.first()))
    }

    fn extents(&self) -> Vec<Extent> {
        // Nothing to reclaim beyond what trim drops: compaction only forgets.
        Vec::new()
    }

    fn compact_below(
        &self,
        _below: Lsn,
        _keep: &mut Keep<'_>,
        _progress: &mut dyn FnMut(&CompactionProgress),
    ) -> Result<Compacted, Error> {
        Ok(Compacted::default())
    }

    fn stats(&self) -> LogStats {
        let state = self.state.lock();
        LogStats {
            first_lsn: Lsn(state.first()),
            next_lsn: Lsn(state.next()),
            durable_lsn: Lsn(state.durable_lsn),
            syncs_count: 0,
            writes_count: 0,
        }
    }

    fn refusal(&self) -> Option<Error> {
        self.state.lock().fenced.then_some(Error::Fenced)
    }
}
