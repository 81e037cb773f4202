//! wal: the local write-ahead log under the contract. Every operation maps onto one of
//! [`Wal`]'s own; extents are its segments.
//!
//! Must not: add an allocation or a lock to the append path beyond the WAL's own (the store's
//! append is the engine's commit).

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use statelog_wal::{Lsn, RecordKind, Wal};

use super::{
    Compacted, CompactionProgress, Durability, Extent, Keep, Log, LogRecord, LogStats, Visit,
    VisitRecord,
};
use crate::limits::{TAIL_POLL_INTERVAL_MS, TAIL_WAIT_MS_MAX};
use crate::Error;

/// Appends one framed batch as `durability` says.
fn append_framed(
    wal: &Wal,
    framed: &[(RecordKind, &[u8])],
    durability: Durability,
) -> Result<Lsn, Error> {
    let range = match durability {
        Durability::Synced => wal.append_batch(framed)?,
        Durability::Unsynced => wal.append_batch_unsynced(framed)?,
    };
    debug_assert!(range.last.0 - range.first.0 + 1 == framed.len() as u64);
    Ok(range.first)
}

impl Log for Wal {
    fn append_batch(&self, records: &[(u8, &[u8])]) -> Result<Lsn, Error> {
        Log::append(self, records, Durability::Synced)
    }

    fn scan(&self, visit: &mut Visit<'_>) -> Result<(), Error> {
        Log::scan_from(self, Lsn(1), &mut |record| {
            visit(record.lsn, record.kind, record.payload)
        })
    }

    fn append(&self, records: &[(u8, &[u8])], durability: Durability) -> Result<Lsn, Error> {
        match records {
            // The common case (one decision, one record) frames on the stack.
            [(kind, payload)] => {
                append_framed(self, &[(RecordKind::new(*kind)?, *payload)], durability)
            }
            _ => {
                let mut framed = Vec::with_capacity(records.len());
                for &(kind, payload) in records {
                    framed.push((RecordKind::new(kind)?, payload));
                }
                append_framed(self, &framed, durability)
            }
        }
    }

    fn append_notify(
        &self,
        records: &[(u8, &[u8])],
        on_durable: super::OnDurable,
    ) -> Result<Lsn, Error> {
        let on_acknowledged: statelog_wal::Acknowledged =
            Box::new(move |result| on_durable(result.map_err(Error::from)));
        let range = match records {
            [(kind, payload)] => {
                self.append_batch_notify(&[(RecordKind::new(*kind)?, *payload)], on_acknowledged)?
            }
            _ => {
                let mut framed = Vec::with_capacity(records.len());
                for &(kind, payload) in records {
                    framed.push((RecordKind::new(kind)?, payload));
                }
                self.append_batch_notify(&framed, on_acknowledged)?
            }
        };
        debug_assert!(range.last.0 - range.first.0 + 1 == records.len() as u64);
        Ok(range.first)
    }

    fn notifies(&self) -> bool {
        true
    }

    fn commit_in_flight(&self) -> bool {
        Wal::commit_in_flight(self)
    }

    fn notices_waiting(&self) -> usize {
        Wal::notices_waiting(self)
    }

    fn sync(&self, upto: Lsn) -> Result<Lsn, Error> {
        let durable = Wal::sync(self)?;
        debug_assert!(durable >= upto || upto.0 >= Wal::stats(self).next_lsn.0);
        Ok(durable)
    }

    fn read(&self, lsn: Lsn) -> Result<Option<(u8, Vec<u8>)>, Error> {
        Ok(Wal::read(self, lsn)?.map(|record| (record.kind.get(), record.payload)))
    }

    fn scan_from(&self, from: Lsn, visit: &mut VisitRecord<'_>) -> Result<(), Error> {
        let mut failure = None;
        Wal::scan_from(self, from, |record| {
            let found = LogRecord {
                lsn: record.lsn,
                origin_lsn: record.copied_from.unwrap_or(record.lsn),
                kind: record.kind.get(),
                payload: record.payload,
            };
            match visit(&found) {
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

    fn wait_for(&self, lsn: Lsn, timeout: Duration) -> Result<bool, Error> {
        let timeout = timeout.min(Duration::from_millis(TAIL_WAIT_MS_MAX));
        let started = Instant::now();
        loop {
            // A read past the acknowledged end is `LsnOutOfRange`; anything else means the
            // position is reached (a record, or one the log holds for itself).
            match Wal::read(self, lsn) {
                Ok(_) => return Ok(true),
                Err(statelog_wal::Error::LsnOutOfRange { .. }) => {}
                Err(error) => return Err(error.into()),
            }
            let waited = started.elapsed();
            if waited >= timeout {
                return Ok(false);
            }
            let poll = Duration::from_millis(TAIL_POLL_INTERVAL_MS);
            std::thread::sleep(poll.min(timeout - waited));
        }
    }

    fn trim_below(&self, lsn: Lsn) -> Result<Lsn, Error> {
        self.delete_below(lsn)?;
        Ok(first_lsn(self))
    }

    fn extents(&self) -> Vec<Extent> {
        self.segments()
            .iter()
            .map(|segment| Extent {
                first_lsn: segment.first_lsn,
                size_bytes: segment.size_bytes,
                sealed: !segment.active,
            })
            .collect()
    }

    fn compact_below(
        &self,
        below: Lsn,
        keep: &mut Keep<'_>,
        progress: &mut dyn FnMut(&CompactionProgress),
    ) -> Result<Compacted, Error> {
        let report = self.compact_below_with_progress(
            below,
            |record| {
                keep(&LogRecord {
                    lsn: record.lsn,
                    origin_lsn: record.copied_from.unwrap_or(record.lsn),
                    kind: record.kind.get(),
                    payload: record.payload,
                })
            },
            progress,
        )?;
        Ok(Compacted {
            extents_dropped_count: report.segments_deleted.len() as u64,
            lsn_mapping: report.lsn_mapping,
            records_dropped_count: report.records_dropped_count,
        })
    }

    fn stats(&self) -> LogStats {
        let stats = Wal::stats(self);
        LogStats {
            first_lsn: first_lsn(self),
            next_lsn: stats.next_lsn,
            durable_lsn: stats.durable_lsn,
            syncs_count: stats.syncs_count,
            writes_count: stats.writes_count,
        }
    }

    fn refusal(&self) -> Option<Error> {
        self.poisoned()
            .map(|cause| Error::Log(statelog_wal::Error::Poisoned { cause }))
    }
}

/// The first LSN the WAL still holds: its oldest segment's first.
fn first_lsn(wal: &Wal) -> Lsn {
    wal.segments()
        .first()
        .map_or(Lsn(1), |segment| segment.first_lsn)
}
