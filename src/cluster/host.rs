//! host: one [`Engine`] per partition this node owns, opened and closed by
//! [`Ownership`] events.
//!
//! `Acquired { partition, epoch }` opens the partition's log through the [`LogFactory`] with
//! that epoch and an engine over it (`Engine::open_with_log`: replay, timers re-armed, waiting
//! tasks re-offered) on a thread of its own, so the lease driver that delivers the event is not
//! held up by a replay. `Lost { partition }` closes the partition at once: its log is shut (every
//! later append, sync or compaction of it fails with `store::Error::Fenced`, whoever still holds
//! a clone of the engine) and the engine is dropped from the table, so the partition is answered
//! [`HostError::NotOwner`] from then on.
//!
//! Invariants: an engine is handed out only while its partition is owned and its epoch is the
//! latest acquired; once `deliver(Lost)` returns, no append of that partition's log made through
//! this host starts (one already in flight is not waited for, so the lease driver never stalls
//! on a slow stream: the next owner's takeover fences it or replays it). An engine
//! that finished opening after its partition was lost or re-acquired is closed, never served.
//! Must not: decide ownership (the lease driver does); be trusted for safety across nodes (that
//! is the log's fence: a stale owner's appends are refused by the log itself).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;
use statelog_cluster::node::{Ownership, OwnershipSink};
use statelog_cluster::partition::PartitionIndex;

use crate::engine::{Engine, EngineOptions};
use crate::store::{
    self, Compacted, CompactionProgress, Durability, Extent, Keep, Log, LogStats, OnDurable, Visit,
    VisitOrigin, VisitRecord,
};
use statelog_wal::Lsn;

/// Opens the log of one partition for an owner at `epoch` (the JetStream log fences every
/// older epoch's writer). Called on a host thread, never on the lease driver's task.
pub trait LogFactory: Send + Sync + 'static {
    /// The log of `partition`, written by this node at `epoch`.
    fn open(&self, partition: PartitionIndex, epoch: u64) -> Result<Arc<dyn Log>, store::Error>;
}

/// The engine options of each partition's engine (its clock, region, account, threads).
pub type OptionsFor = dyn Fn(PartitionIndex) -> EngineOptions + Send + Sync;

/// Why the host cannot answer for a partition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// This node does not own the partition (never did, or lost it).
    #[error("partition {partition} is not owned by this node")]
    NotOwner {
        /// The partition.
        partition: PartitionIndex,
    },
    /// This node owns the partition but its engine is still opening (replaying its log).
    #[error("partition {partition} is opening (epoch {epoch}): its log is being replayed")]
    Opening {
        /// The partition.
        partition: PartitionIndex,
        /// The epoch it is being opened with.
        epoch: u64,
    },
    /// The partition's log stopped (fail-stop after a lost acknowledgement or a timeout): its
    /// engine's state may hold decisions the log never acknowledged, so it answers nothing
    /// until the log is opened again (`PartitionHost::reopen_stopped`) and replayed.
    #[error("partition {partition} (epoch {epoch}): its log stopped; it is being opened again")]
    Stopped {
        /// The partition.
        partition: PartitionIndex,
        /// The epoch it is held at.
        epoch: u64,
    },
    /// Opening the partition's log or engine failed; it stays unanswered until acquired again.
    #[error("partition {partition} (epoch {epoch}) did not open: {detail}")]
    OpenFailed {
        /// The partition.
        partition: PartitionIndex,
        /// The epoch it was opened with.
        epoch: u64,
        /// The log's or engine's error.
        detail: String,
    },
}

/// What the host knows of one owned partition.
enum Slot {
    Opening {
        epoch: u64,
    },
    Open {
        epoch: u64,
        engine: Engine,
        log: Arc<OwnedLog>,
        /// Which opening of this host made it (one count for the whole host).
        generation: u64,
    },
    Failed {
        epoch: u64,
        detail: String,
    },
}

struct Shared {
    factory: Arc<dyn LogFactory>,
    options: Arc<OptionsFor>,
    slots: Mutex<BTreeMap<PartitionIndex, Slot>>,
    /// The next engine generation ([`PartitionHost::engine_at`]).
    generations: AtomicU64,
    /// Woken whenever a slot changes (tests and callers wait for an open to finish).
    changed: parking_lot::Condvar,
}

/// The engines of the partitions this node owns. Cheap to clone; the clones share one table.
/// It is the [`OwnershipSink`] of the node's lease driver.
#[derive(Clone)]
pub struct PartitionHost {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for PartitionHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartitionHost")
            .field("owned", &self.owned())
            .finish()
    }
}

impl PartitionHost {
    /// A host with nothing owned, opening logs through `factory` and engines with
    /// `options(partition)`.
    pub fn new(factory: Arc<dyn LogFactory>, options: Arc<OptionsFor>) -> Self {
        Self {
            shared: Arc::new(Shared {
                factory,
                options,
                slots: Mutex::new(BTreeMap::new()),
                generations: AtomicU64::new(1),
                changed: parking_lot::Condvar::new(),
            }),
        }
    }

    /// The engine of `partition`, while this node owns it and its engine is open.
    pub fn engine(&self, partition: PartitionIndex) -> Result<Engine, HostError> {
        self.engine_at(partition).map(|(engine, _)| engine)
    }

    /// [`PartitionHost::engine`] with its generation: a number that changes whenever the
    /// partition's engine is opened again (at a new epoch, or at the same one after its log
    /// stopped), so a caller that keeps something per engine knows when to make it anew.
    ///
    /// A partition whose log stopped answers [`HostError::Stopped`]: what its engine holds in
    /// memory may be ahead of what the stream kept (a decision adopted while its append was in
    /// flight, whose acknowledgement never came), so nothing is answered from it.
    pub fn engine_at(&self, partition: PartitionIndex) -> Result<(Engine, u64), HostError> {
        match self.shared.slots.lock().get(&partition) {
            Some(Slot::Open { epoch, log, .. }) if log.stopped() => Err(HostError::Stopped {
                partition,
                epoch: *epoch,
            }),
            Some(Slot::Open {
                engine, generation, ..
            }) => Ok((engine.clone(), *generation)),
            Some(Slot::Opening { epoch }) => Err(HostError::Opening {
                partition,
                epoch: *epoch,
            }),
            Some(Slot::Failed { epoch, detail }) => Err(HostError::OpenFailed {
                partition,
                epoch: *epoch,
                detail: detail.clone(),
            }),
            None => Err(HostError::NotOwner { partition }),
        }
    }

    /// The partitions whose engines answer now, with their epochs.
    pub fn owned(&self) -> BTreeMap<PartitionIndex, u64> {
        self.shared
            .slots
            .lock()
            .iter()
            .filter_map(|(&partition, slot)| match slot {
                Slot::Open { epoch, .. } => Some((partition, *epoch)),
                _ => None,
            })
            .collect()
    }

    /// Waits until `partition` is no longer opening (open, failed, or lost), at most
    /// `timeout`; answers what [`PartitionHost::engine`] answers then.
    pub fn wait_opened(
        &self,
        partition: PartitionIndex,
        timeout: Duration,
    ) -> Result<Engine, HostError> {
        let deadline = std::time::Instant::now() + timeout;
        let mut slots = self.shared.slots.lock();
        while matches!(slots.get(&partition), Some(Slot::Opening { .. })) {
            if self
                .shared
                .changed
                .wait_until(&mut slots, deadline)
                .timed_out()
            {
                break;
            }
        }
        drop(slots);
        self.engine(partition)
    }

    /// Opens again, at the epoch it holds, every partition whose log stopped (it refuses
    /// writes after an error: a lost acknowledgement when a stream leader died, a timeout) or
    /// whose opening failed (NATS unreachable, a stream without a leader yet): the lease is
    /// still this node's, so no one else will. The new log's takeover fences the stopped one's
    /// appends that might still land. Returns the partitions it reopens.
    pub fn reopen_stopped(&self) -> Vec<PartitionIndex> {
        let stopped: Vec<(PartitionIndex, u64)> = self
            .shared
            .slots
            .lock()
            .iter()
            .filter_map(|(&partition, slot)| match slot {
                Slot::Open { epoch, log, .. } if log.stopped() => Some((partition, *epoch)),
                Slot::Failed { epoch, .. } => Some((partition, *epoch)),
                _ => None,
            })
            .collect();
        for &(partition, epoch) in &stopped {
            tracing::warn!(%partition, epoch, "the partition's log stopped or did not open: opening it again");
            self.acquired(partition, epoch);
        }
        stopped
            .into_iter()
            .map(|(partition, _)| partition)
            .collect()
    }

    fn acquired(&self, partition: PartitionIndex, epoch: u64) {
        tracing::info!(%partition, epoch, "partition acquired: opening its log");
        let previous = self
            .shared
            .slots
            .lock()
            .insert(partition, Slot::Opening { epoch });
        // A re-acquisition without a loss in between (not sent by the driver, but harmless):
        // the older epoch's engine stops first.
        if let Some(previous) = previous {
            close_slot(previous);
        }
        let host = self.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("statelog-open-{partition}"))
            .spawn(move || host.open(partition, epoch));
        if let Err(error) = spawned {
            self.finish(
                partition,
                epoch,
                Err(format!("cannot start the opening thread: {error}")),
            );
        }
    }

    /// Opens the log and the engine (on the opening thread).
    fn open(&self, partition: PartitionIndex, epoch: u64) {
        let opened = self
            .shared
            .factory
            .open(partition, epoch)
            .map_err(|error| format!("log: {error}"))
            .and_then(|log| {
                let log = Arc::new(OwnedLog::new(log));
                let as_log: Arc<dyn Log> = log.clone();
                match Engine::open_with_log(as_log, (self.shared.options)(partition)) {
                    Ok(engine) => Ok((engine, log)),
                    Err(error) => {
                        log.close();
                        Err(format!("engine: {error}"))
                    }
                }
            });
        self.finish(partition, epoch, opened);
    }

    fn finish(
        &self,
        partition: PartitionIndex,
        epoch: u64,
        opened: Result<(Engine, Arc<OwnedLog>), String>,
    ) {
        let mut slots = self.shared.slots.lock();
        let current = matches!(
            slots.get(&partition),
            Some(Slot::Opening { epoch: opening }) if *opening == epoch
        );
        if current {
            let slot = match opened {
                Ok((engine, log)) => {
                    tracing::info!(%partition, epoch, "partition open: serving it");
                    let generation = self.shared.generations.fetch_add(1, Ordering::Relaxed);
                    Slot::Open {
                        epoch,
                        engine,
                        log,
                        generation,
                    }
                }
                Err(detail) => {
                    tracing::warn!(%partition, epoch, %detail, "partition did not open (tried again)");
                    Slot::Failed { epoch, detail }
                }
            };
            slots.insert(partition, slot);
        } else if let Ok((engine, log)) = opened {
            // Lost (or re-acquired) while it opened: never served.
            drop(slots);
            close_slot(Slot::Open {
                epoch,
                engine,
                log,
                generation: 0,
            });
            self.shared.changed.notify_all();
            return;
        }
        drop(slots);
        self.shared.changed.notify_all();
    }

    fn lost(&self, partition: PartitionIndex) {
        let removed = self.shared.slots.lock().remove(&partition);
        if let Some(slot) = removed {
            close_slot(slot);
        }
        self.shared.changed.notify_all();
    }
}

/// Stops a partition's writes (waiting for the appends in flight), then drops the engine.
fn close_slot(slot: Slot) {
    if let Slot::Open { engine, log, .. } = slot {
        log.close();
        drop(engine);
    }
}

impl OwnershipSink for PartitionHost {
    fn deliver(&self, event: Ownership) {
        match event {
            Ownership::Acquired { partition, epoch } => self.acquired(partition, epoch),
            Ownership::Lost { partition, reason } => {
                tracing::info!(%partition, ?reason, "partition lost: closing its log");
                self.lost(partition);
            }
            // A later kind of event this host does not know changes nothing it serves.
            _ => {}
        }
    }
}

/// A partition's log as its engine sees it: the factory's log behind a switch that [`close`]
/// turns off for good. Reads go on after the close (nothing is unsafe about reading);
/// every write that starts after it is refused with [`store::Error::Fenced`].
///
/// [`close`]: OwnedLog::close
#[derive(Debug)]
pub struct OwnedLog {
    inner: Arc<dyn Log>,
    /// `true` while writes may start.
    open: AtomicBool,
}

impl OwnedLog {
    /// Whether the log refuses writes while still this owner's (fail-stop after an error):
    /// it is to be opened again.
    fn stopped(&self) -> bool {
        self.is_open() && self.inner.refusal().is_some()
    }

    /// `inner`, open for writes.
    pub fn new(inner: Arc<dyn Log>) -> Self {
        Self {
            inner,
            open: AtomicBool::new(true),
        }
    }

    /// Refuses every write that starts from now on, at once. A write already in flight is
    /// not waited for (over JetStream it can wait out an acknowledgement's timeout, and the
    /// lease driver that closes a lost partition must not stall): it lands before the next
    /// owner's takeover, which then replays it as part of the history it takes over, or after
    /// it, and the stream refuses it (the takeover moved the expected last sequence).
    pub fn close(&self) {
        self.open.store(false, Ordering::SeqCst);
    }

    /// Whether writes still go through.
    pub fn is_open(&self) -> bool {
        self.open.load(Ordering::SeqCst)
    }

    fn write<T>(
        &self,
        f: impl FnOnce(&dyn Log) -> Result<T, store::Error>,
    ) -> Result<T, store::Error> {
        if !self.is_open() {
            return Err(store::Error::Fenced);
        }
        f(&*self.inner)
    }
}

impl Log for OwnedLog {
    fn append_batch(&self, records: &[(u8, &[u8])]) -> Result<Lsn, store::Error> {
        self.write(|log| log.append_batch(records))
    }

    fn read(&self, lsn: Lsn) -> Result<Option<(u8, Vec<u8>)>, store::Error> {
        self.inner.read(lsn)
    }

    fn scan(&self, visit: &mut Visit<'_>) -> Result<(), store::Error> {
        self.inner.scan(visit)
    }

    fn append(&self, records: &[(u8, &[u8])], durability: Durability) -> Result<Lsn, store::Error> {
        self.write(|log| log.append(records, durability))
    }

    fn append_notify(
        &self,
        records: &[(u8, &[u8])],
        on_durable: OnDurable,
    ) -> Result<Lsn, store::Error> {
        self.write(|log| log.append_notify(records, on_durable))
    }

    fn notifies(&self) -> bool {
        self.inner.notifies()
    }

    fn commit_in_flight(&self) -> bool {
        self.inner.commit_in_flight()
    }

    fn sync(&self, upto: Lsn) -> Result<Lsn, store::Error> {
        self.write(|log| log.sync(upto))
    }

    fn scan_from(&self, from: Lsn, visit: &mut VisitRecord<'_>) -> Result<(), store::Error> {
        self.inner.scan_from(from, visit)
    }

    fn scan_with_origin(&self, visit: &mut VisitOrigin<'_>) -> Result<(), store::Error> {
        self.inner.scan_with_origin(visit)
    }

    fn wait_for(&self, lsn: Lsn, timeout: Duration) -> Result<bool, store::Error> {
        self.inner.wait_for(lsn, timeout)
    }

    fn trim_below(&self, lsn: Lsn) -> Result<Lsn, store::Error> {
        self.write(|log| log.trim_below(lsn))
    }

    fn extents(&self) -> Vec<Extent> {
        self.inner.extents()
    }

    fn compact_below(
        &self,
        below: Lsn,
        keep: &mut Keep<'_>,
        progress: &mut dyn FnMut(&CompactionProgress),
    ) -> Result<Compacted, store::Error> {
        self.write(|log| log.compact_below(below, keep, progress))
    }

    fn stats(&self) -> LogStats {
        self.inner.stats()
    }

    fn refusal(&self) -> Option<store::Error> {
        if self.is_open() {
            self.inner.refusal()
        } else {
            Some(store::Error::Fenced)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::store::MemoryLog;
    use statelog_cluster::lease::LostReason;

    const PASS: &str = r#"{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":60,"End":true}}}"#;
    const OPEN_WAIT: Duration = Duration::from_secs(30);

    /// One MemoryLog per partition, kept across epochs (as a stream outlives its owners), and
    /// every open recorded.
    #[derive(Default)]
    struct Memory {
        logs: Mutex<BTreeMap<PartitionIndex, Arc<MemoryLog>>>,
        opens: Mutex<Vec<(PartitionIndex, u64)>>,
        /// While set, opens wait for it to be cleared (a slow replay).
        hold: Mutex<bool>,
        released: parking_lot::Condvar,
        fail: Mutex<bool>,
    }

    impl Memory {
        fn log(&self, partition: u32) -> Arc<MemoryLog> {
            self.logs
                .lock()
                .entry(PartitionIndex(partition))
                .or_default()
                .clone()
        }
    }

    impl LogFactory for Memory {
        fn open(
            &self,
            partition: PartitionIndex,
            epoch: u64,
        ) -> Result<Arc<dyn Log>, store::Error> {
            self.opens.lock().push((partition, epoch));
            let mut hold = self.hold.lock();
            while *hold {
                self.released.wait(&mut hold);
            }
            drop(hold);
            if *self.fail.lock() {
                return Err(store::Error::Unsupported { operation: "open" });
            }
            let log: Arc<dyn Log> = self.log(partition.0);
            Ok(log)
        }
    }

    fn host() -> (PartitionHost, Arc<Memory>) {
        let memory = Arc::new(Memory::default());
        let clock = ManualClock::new(1_700_000_000_000);
        let options: Arc<OptionsFor> = Arc::new(move |_| EngineOptions {
            clock: Arc::new(clock.clone()),
            background_timers: false,
            worker_threads: 1,
            entropy_seed: Some(7),
            ..EngineOptions::default()
        });
        (PartitionHost::new(memory.clone(), options), memory)
    }

    fn acquire(host: &PartitionHost, partition: u32, epoch: u64) {
        host.deliver(Ownership::Acquired {
            partition: PartitionIndex(partition),
            epoch,
        });
    }

    fn lose(host: &PartitionHost, partition: u32) {
        host.deliver(Ownership::Lost {
            partition: PartitionIndex(partition),
            reason: LostReason::Taken,
        });
    }

    fn next_lsn(log: &MemoryLog) -> Lsn {
        log.stats().next_lsn
    }

    #[test]
    fn an_acquired_partition_is_served_and_a_lost_one_refuses_writes_at_once() {
        let (host, memory) = host();
        assert_eq!(
            host.engine(PartitionIndex(3)).err(),
            Some(HostError::NotOwner {
                partition: PartitionIndex(3)
            })
        );
        acquire(&host, 3, 41);
        let engine = host
            .wait_opened(PartitionIndex(3), OPEN_WAIT)
            .expect("opened");
        assert_eq!(memory.opens.lock().clone(), vec![(PartitionIndex(3), 41)]);
        assert_eq!(host.owned(), BTreeMap::from([(PartitionIndex(3), 41)]));
        engine
            .create_state_machine("m", PASS, None)
            .expect("created while owned");
        let started = engine
            .start_execution("m", Some("e1"), "{}")
            .expect("started");

        lose(&host, 3);
        assert_eq!(
            host.engine(PartitionIndex(3)).err(),
            Some(HostError::NotOwner {
                partition: PartitionIndex(3)
            })
        );
        assert!(host.owned().is_empty());
        // A clone still held (a call in flight) appends nothing any more.
        let log = memory.log(3);
        let end = next_lsn(&log);
        let refused = engine.start_execution("m", Some("e2"), "{}");
        assert!(refused.is_err(), "{refused:?}");
        let refused = engine.stop_execution(&started.execution_arn, None, None);
        assert!(refused.is_err(), "{refused:?}");
        assert_eq!(next_lsn(&log), end, "nothing appended after the loss");
    }

    #[test]
    fn a_fenced_log_refuses_the_engine_writes() {
        let (host, memory) = host();
        acquire(&host, 0, 5);
        let engine = host
            .wait_opened(PartitionIndex(0), OPEN_WAIT)
            .expect("opened");
        engine
            .create_state_machine("m", PASS, None)
            .expect("created");
        // Another writer took the stream over (what JetStream's fence does to a stale owner).
        let log = memory.log(0);
        log.fence();
        let end = next_lsn(&log);
        let refused = engine.start_execution("m", Some("late"), "{}");
        assert!(refused.is_err(), "{refused:?}");
        assert_eq!(next_lsn(&log), end);
    }

    #[test]
    fn a_reacquired_partition_replays_what_the_previous_epoch_wrote() {
        let (host, _memory) = host();
        acquire(&host, 2, 10);
        let engine = host
            .wait_opened(PartitionIndex(2), OPEN_WAIT)
            .expect("opened");
        engine
            .create_state_machine("m", PASS, None)
            .expect("created");
        let started = engine
            .start_execution("m", Some("e"), "{}")
            .expect("started");
        let timers = engine.armed_timer_count();
        assert!(timers > 0, "the Wait arms a timer");
        drop(engine);
        lose(&host, 2);
        acquire(&host, 2, 12);
        let engine = host
            .wait_opened(PartitionIndex(2), OPEN_WAIT)
            .expect("reopened");
        assert_eq!(host.owned(), BTreeMap::from([(PartitionIndex(2), 12)]));
        let described = engine
            .describe_execution(&started.execution_arn)
            .expect("replayed");
        assert_eq!(described.status.aws_name(), "RUNNING");
        assert_eq!(
            engine.armed_timer_count(),
            timers,
            "the timers are re-armed"
        );
        engine
            .stop_execution(&started.execution_arn, None, None)
            .expect("the new epoch writes");
    }

    #[test]
    fn a_partition_lost_while_opening_is_never_served() {
        let (host, memory) = host();
        *memory.hold.lock() = true;
        acquire(&host, 1, 3);
        assert_eq!(
            host.engine(PartitionIndex(1)).err(),
            Some(HostError::Opening {
                partition: PartitionIndex(1),
                epoch: 3
            })
        );
        lose(&host, 1);
        *memory.hold.lock() = false;
        memory.released.notify_all();
        // The open finishes on its thread and is closed; the partition stays unowned.
        assert_eq!(
            host.wait_opened(PartitionIndex(1), OPEN_WAIT).err(),
            Some(HostError::NotOwner {
                partition: PartitionIndex(1)
            })
        );
        // Wait for the opening thread to have called the factory and finished.
        while memory.opens.lock().is_empty() {
            std::thread::yield_now();
        }
        assert!(host.owned().is_empty());
    }

    #[test]
    fn a_failed_open_is_reported_with_its_cause() {
        let (host, memory) = host();
        *memory.fail.lock() = true;
        acquire(&host, 4, 9);
        match host.wait_opened(PartitionIndex(4), OPEN_WAIT) {
            Err(HostError::OpenFailed {
                partition,
                epoch,
                detail,
            }) => {
                assert_eq!((partition, epoch), (PartitionIndex(4), 9));
                assert!(detail.contains("open is not supported"), "{detail}");
            }
            other => panic!("{other:?}"),
        }
        // Acquired again (a later epoch), it opens.
        *memory.fail.lock() = false;
        acquire(&host, 4, 11);
        host.wait_opened(PartitionIndex(4), OPEN_WAIT)
            .expect("opens at the next epoch");
    }

    #[test]
    fn a_closed_log_refuses_every_write_and_still_reads() {
        let memory = Arc::new(MemoryLog::new());
        let owned = OwnedLog::new(memory.clone());
        let first = owned.append_batch(&[(1, b"a")]).expect("appended");
        owned.close();
        assert!(!owned.is_open());
        assert!(matches!(
            owned.append_batch(&[(1, b"b")]),
            Err(store::Error::Fenced)
        ));
        assert!(matches!(
            owned.append(&[(1, b"b")], Durability::Synced),
            Err(store::Error::Fenced)
        ));
        assert!(matches!(
            owned.append_notify(&[(1, b"b")], Box::new(|_| {})),
            Err(store::Error::Fenced)
        ));
        assert!(matches!(owned.sync(first), Err(store::Error::Fenced)));
        assert!(matches!(owned.trim_below(first), Err(store::Error::Fenced)));
        assert!(matches!(owned.refusal(), Some(store::Error::Fenced)));
        assert_eq!(owned.read(first).expect("reads"), Some((1, b"a".to_vec())));
        assert_eq!(memory.stats().next_lsn, Lsn(first.0 + 1));
    }
}
