//! wal: the `Wal` handle: options, open, append, read, retention. It wires `recovery`,
//! `writer`, `reader` and `compaction` together.
//!
//! Invariants: `Wal` is `Send + Sync`; every method is safe to call from many threads. This
//! module holds no logic of its own beyond argument checks and delegation.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

use std::collections::VecDeque;

use parking_lot::{Condvar, Mutex, RwLock};

use crate::compaction::CompactionProgress;
use crate::error::{Error, OptionReason, Result};
use crate::limits::{
    COMMIT_GATHER_US_LIMIT, COMMIT_GATHER_US_MAX_DEFAULT, COMMIT_SPIN_US_LIMIT,
    COMMIT_SPIN_US_MAX_DEFAULT, LOCK_RETRY_MS, LOCK_WAIT_MS_DEFAULT, SEGMENTS_READY_MAX,
    SEGMENT_SIZE_BYTES_DEFAULT, SEGMENT_SIZE_BYTES_MAX, SEGMENT_SIZE_BYTES_MIN,
};
use crate::reader::{RecordIter, View};
use crate::record::{OwnedRecord, Record};
use crate::recovery::RecoveryReport;
use crate::storage::{FsStorage, Storage};
use crate::writer::{Acknowledged, Active, Catalog, Inner, Ready, State, Want};
use crate::{compaction, recovery};
use crate::{Durability, Lsn, LsnRange, RecordKind, RepairMode, SegmentId};

/// How a log is opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalOptions {
    /// Size of every new segment file.
    pub segment_size_bytes: u64,
    /// When an append is acknowledged.
    pub durability: Durability,
    /// What open does with corruption.
    pub repair: RepairMode,
    /// How many zero-filled or recycled segments to keep ready ahead of the writer.
    pub segments_ready_count: usize,
    /// Run segment preparation on a background thread (otherwise call `prepare_segments`;
    /// a rotation that finds no ready segment prepares one inline).
    pub background_preparation: bool,
    /// Open without changing anything on disk; appends and retention calls are refused.
    pub read_only: bool,
    /// How long a writable open waits for the directory lock before failing with
    /// [`Error::Locked`]: a log handle that is being dropped on another thread (an engine that
    /// is shutting down) releases it within moments, another process holding it does not.
    pub lock_wait_ms: u64,
    /// Group commit only (`Durability::GroupCommit`; `PerCommit` and `NoSync` never gather):
    /// the longest a commit leader waits, before it writes and syncs, for the committers that
    /// the previous sync acknowledged to append again, so that one sync covers them too. The
    /// wait is also capped at half the running average sync duration, ends as soon as they
    /// have all appended, and never happens on an idle log (a lone writer is its own expected
    /// committer). The log's syncer thread, which commits for notified appends
    /// (`append_batch_notify`), never gathers. 0 turns the gather off. Default
    /// `COMMIT_GATHER_US_MAX_DEFAULT` (200 µs); at most `COMMIT_GATHER_US_LIMIT`.
    pub commit_gather_us_max: u64,
    /// Group commit only: the longest a committer whose records are buffered or being synced
    /// by another thread's commit spins for that sync (checking the durable LSN between
    /// `yield_now` calls) before it sleeps on the condvar: on a disk whose syncs are about as
    /// quick as a sleep-and-wake of a thread, the sleep doubles the wait (figures in
    /// `docs/bench/tuning.md`). Spins only while the running average sync is at most this
    /// long, and for at most 1.5 times that average; and only while fewer committers spin than
    /// the cores available less `COMMIT_SPIN_CORES_RESERVED` (at least one may), the others
    /// sleeping at once, so that under concurrency the spin does not take the cores the
    /// runnable threads need. 0 turns it off. Default `COMMIT_SPIN_US_MAX_DEFAULT` (200 µs);
    /// at most `COMMIT_SPIN_US_LIMIT`.
    pub commit_spin_us_max: u64,
}

/// Reads a caller timestamp (e.g. milliseconds) out of a record, `None` when it has none.
/// Given to [`Wal::open_timed`], the log tracks each segment's time range
/// (`SegmentInfo::time_range`) from its records, on append and at recovery (a copy made by
/// compaction keeps its original's time). Nothing extra is stored on disk.
#[derive(Debug, Clone, Copy)]
pub struct TimeOf(pub fn(RecordKind, &[u8]) -> Option<u64>);

impl Default for WalOptions {
    fn default() -> Self {
        WalOptions {
            segment_size_bytes: SEGMENT_SIZE_BYTES_DEFAULT,
            durability: Durability::GroupCommit,
            repair: RepairMode::Refuse,
            segments_ready_count: 1,
            background_preparation: true,
            read_only: false,
            lock_wait_ms: LOCK_WAIT_MS_DEFAULT,
            commit_gather_us_max: COMMIT_GATHER_US_MAX_DEFAULT,
            commit_spin_us_max: COMMIT_SPIN_US_MAX_DEFAULT,
        }
    }
}

impl WalOptions {
    /// Small segments (64 KiB) prepared inline, group commit: for tests and small logs, where
    /// zero-filling 64 MiB segments and a background thread per log would dominate.
    pub fn small() -> Self {
        WalOptions {
            segment_size_bytes: 64 * 1024,
            background_preparation: false,
            ..WalOptions::default()
        }
    }

    /// Checks the options against the limits.
    pub fn validate(&self) -> Result<()> {
        if !(SEGMENT_SIZE_BYTES_MIN..=SEGMENT_SIZE_BYTES_MAX).contains(&self.segment_size_bytes) {
            return Err(Error::InvalidOptions {
                field: "segment_size_bytes",
                reason: OptionReason::OutsideRange {
                    value: self.segment_size_bytes,
                    min: SEGMENT_SIZE_BYTES_MIN,
                    max: SEGMENT_SIZE_BYTES_MAX,
                },
            });
        }
        if self.segments_ready_count == 0 || self.segments_ready_count > SEGMENTS_READY_MAX {
            return Err(Error::InvalidOptions {
                field: "segments_ready_count",
                reason: OptionReason::OutsideRange {
                    value: self.segments_ready_count as u64,
                    min: 1,
                    max: SEGMENTS_READY_MAX as u64,
                },
            });
        }
        if self.commit_gather_us_max > COMMIT_GATHER_US_LIMIT {
            return Err(Error::InvalidOptions {
                field: "commit_gather_us_max",
                reason: OptionReason::AboveLimit {
                    value: self.commit_gather_us_max,
                    limit: COMMIT_GATHER_US_LIMIT,
                },
            });
        }
        if self.commit_spin_us_max > COMMIT_SPIN_US_LIMIT {
            return Err(Error::InvalidOptions {
                field: "commit_spin_us_max",
                reason: OptionReason::AboveLimit {
                    value: self.commit_spin_us_max,
                    limit: COMMIT_SPIN_US_LIMIT,
                },
            });
        }
        Ok(())
    }
}

/// One retained segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentInfo {
    /// Its id.
    pub segment_id: SegmentId,
    /// The LSN of its first record (or of the next record, when it has none yet).
    pub first_lsn: Lsn,
    /// The LSN of its last record, `None` when it has none.
    pub last_lsn: Option<Lsn>,
    /// File size.
    pub size_bytes: u64,
    /// Whether it is the segment being appended to.
    pub active: bool,
    /// The (min, max) caller timestamp of its records (opened with [`Wal::open_timed`]).
    pub time_range: Option<(u64, u64)>,
}

/// What a compaction did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactionReport {
    /// Segments removed (their live records now live under new LSNs).
    pub segments_deleted: Vec<SegmentId>,
    /// For every record copied forward: (old LSN, new LSN), in old-LSN order.
    pub lsn_mapping: Vec<(Lsn, Lsn)>,
    /// Records dropped because the predicate said they were no longer live.
    pub records_dropped_count: u64,
}

/// Counters of a running log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WalStats {
    /// The LSN the next append gets.
    pub next_lsn: Lsn,
    /// Every LSN up to this one is durable (0 when none).
    pub durable_lsn: Lsn,
    /// Retained segments.
    pub segments_count: usize,
    /// Segments ready ahead of the writer.
    pub segments_ready_count: usize,
    /// fdatasync calls issued by commits.
    pub syncs_count: u64,
    /// Write calls issued by commits.
    pub writes_count: u64,
    /// Rotations that had to prepare a segment inline (no ready segment).
    pub inline_prepares_count: u64,
    /// Segment preparations that failed (a full disk, an I/O error); each is retried, none
    /// poisons the log.
    pub prepare_failures_count: u64,
    /// The last preparation failure's message while no preparation has succeeded since.
    pub prepare_failure: Option<String>,
    /// Commit gathers: a group-commit leader waited for committers the previous sync released
    /// (`WalOptions::commit_gather_us_max`).
    pub gathers_count: u64,
    /// Gathers that ended at their time bound with some expected committer missing (the leader
    /// then committed what it had).
    pub gather_timeouts_count: u64,
    /// Committers that spun for another thread's sync (`WalOptions::commit_spin_us_max`).
    pub spins_count: u64,
    /// Spins that saw their records durable before their bound (the others then slept).
    pub spin_hits_count: u64,
    /// fdatasyncs a compaction ran itself, outside the leader role, for its batches of copies:
    /// one per batch while appenders are active, fewer while none is
    /// (`limits::COMPACTION_IDLE_UNSYNCED_SIZE_BYTES_MAX`).
    pub compaction_syncs_count: u64,
    /// Sync marks written: one per syncing write that carried new records (`docs/wal-format.md`).
    pub sync_marks_count: u64,
}

/// A write-ahead log. `Send + Sync`; share it with `Arc`.
#[derive(Debug)]
pub struct Wal {
    pub(crate) inner: Arc<Inner>,
    background: Option<std::thread::JoinHandle<()>>,
    /// The syncer thread of notifying appends, started by the first (`None`: it could not be
    /// started, and notifying appends commit themselves).
    syncer: std::sync::OnceLock<Option<std::thread::JoinHandle<()>>>,
    /// Held for the life of a writable log; `None` when read-only or on the simulated disk.
    _dir_lock: Option<crate::storage::DirLock>,
}

impl Wal {
    /// Opens (creating if missing) the log in `dir` on the real file system.
    pub fn open(dir: impl AsRef<Path>, options: WalOptions) -> Result<(Wal, RecoveryReport)> {
        Self::open_with_storage(Arc::new(FsStorage::new()), dir, options)
    }

    /// Opens the log in `dir` over any storage.
    pub fn open_with_storage(
        storage: Arc<dyn Storage>,
        dir: impl AsRef<Path>,
        options: WalOptions,
    ) -> Result<(Wal, RecoveryReport)> {
        Self::open_inner(storage, dir.as_ref(), options, None)
    }

    /// Like [`Wal::open_with_storage`], tracking each segment's caller time range with
    /// `time_of` (see [`TimeOf`]).
    pub fn open_timed(
        storage: Arc<dyn Storage>,
        dir: impl AsRef<Path>,
        options: WalOptions,
        time_of: TimeOf,
    ) -> Result<(Wal, RecoveryReport)> {
        Self::open_inner(storage, dir.as_ref(), options, Some(time_of))
    }

    fn open_inner(
        storage: Arc<dyn Storage>,
        dir: &Path,
        options: WalOptions,
        time_of: Option<TimeOf>,
    ) -> Result<(Wal, RecoveryReport)> {
        options.validate()?;
        let dir: PathBuf = dir.to_path_buf();
        if !options.read_only && storage.list(&dir).is_err() {
            // A new log directory: its own entry must be durable before any record in it is
            // acknowledged, so the parent is synced too.
            storage
                .create_dir_all(&dir)
                .map_err(|e| Error::io("create_dir_all", &dir, e))?;
            if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                storage
                    .sync_dir(parent)
                    .map_err(|e| Error::io("sync_dir", parent, e))?;
            }
        }
        // One writing process per directory: a second writer would interleave appends with ours.
        // Read-only opens (inspection while a server runs) take no lock.
        let dir_lock = if options.read_only {
            None
        } else {
            lock_directory(storage.as_ref(), &dir, options.lock_wait_ms)?
        };
        let recovered = recovery::recover(storage.as_ref(), &dir, &options, time_of)?;
        let report = recovered.report.clone();
        let active = recovered.segments.last().map(|meta| Active {
            id: meta.id,
            seed: meta.seed,
            file: Arc::clone(&meta.file),
            path: Arc::from(meta.path.as_path()),
            size_bytes: meta.size_bytes,
            offset: recovered.active_end_offset,
            records_count: recovered.active_records_count,
            time_range: recovered.active_time_range,
            needs_mark: recovered.active_needs_mark,
        });
        let ready: VecDeque<Ready> = recovered
            .ready
            .into_iter()
            .map(|(id, file, path)| Ready {
                id,
                file,
                path: Arc::from(path),
            })
            .collect();
        let state = State::new(
            recovered.next_lsn,
            active,
            recovered.fence,
            ready,
            recovered.next_segment_id,
        );
        let inner = Arc::new(Inner {
            storage,
            dir,
            options: options.clone(),
            time_of,
            state: Mutex::new(state),
            commit_cv: Condvar::new(),
            gather_cv: Condvar::new(),
            durable_hint: AtomicU64::new(recovered.next_lsn - 1),
            poisoned_hint: AtomicBool::new(false),
            prepare_cv: Condvar::new(),
            syncer_cv: Condvar::new(),
            catalog: RwLock::new(Catalog {
                segments: recovered.segments,
                committed: Arc::new(recovered.committed),
            }),
            compaction_lock: Mutex::new(()),
        });
        if report.repair.is_some() && !options.read_only {
            inner.persist_fence()?;
        }
        let background = if options.background_preparation && !options.read_only {
            let worker = Arc::clone(&inner);
            let handle = std::thread::Builder::new()
                .name("statelog-wal-prepare".to_owned())
                .spawn(move || {
                    // Errors poison the log; the writer reports them.
                    let _ = worker.prepare_loop(true);
                })
                .map_err(|e| Error::io("spawn", &inner.dir, e))?;
            Some(handle)
        } else {
            None
        };
        Ok((
            Wal {
                inner,
                background,
                syncer: std::sync::OnceLock::new(),
                _dir_lock: dir_lock,
            },
            report,
        ))
    }

    /// The log directory.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The options the log was opened with.
    pub fn options(&self) -> &WalOptions {
        &self.inner.options
    }

    /// The largest payload `append` accepts with these options.
    pub fn payload_size_bytes_max(&self) -> usize {
        self.inner.payload_size_bytes_max()
    }

    fn check_payload(&self, payload: &[u8]) -> Result<()> {
        let limit = self.inner.payload_size_bytes_max();
        if payload.len() > limit {
            return Err(Error::RecordTooLarge {
                size_bytes: payload.len(),
                limit_bytes: limit,
            });
        }
        Ok(())
    }

    fn want(&self) -> Want {
        match self.inner.options.durability {
            Durability::PerCommit => Want::OwnSync,
            Durability::GroupCommit => Want::Durable,
            Durability::NoSync => Want::Written,
        }
    }

    /// Appends one record and returns its LSN once it is acknowledged under the configured
    /// durability.
    pub fn append(&self, kind: RecordKind, payload: &[u8]) -> Result<Lsn> {
        let lsn = self.enqueue(kind, payload)?;
        self.inner.commit(lsn.0, self.want())?;
        Ok(lsn)
    }

    /// Appends records as one atomic batch (all or none survive a crash) in one commit.
    pub fn append_batch(&self, records: &[(RecordKind, &[u8])]) -> Result<LsnRange> {
        for (_, payload) in records {
            self.check_payload(payload)?;
        }
        if records.len() <= BATCH_INLINE_MAX {
            let mut items: [(u8, &[u8]); BATCH_INLINE_MAX] = [(0, &[]); BATCH_INLINE_MAX];
            for (slot, (kind, payload)) in items.iter_mut().zip(records) {
                *slot = (kind.get(), payload);
            }
            let (first, last) = self.inner.enqueue_batch(&items[..records.len()])?;
            self.inner.commit(last, self.want())?;
            return Ok(LsnRange {
                first: Lsn(first),
                last: Lsn(last),
            });
        }
        let items: Vec<(u8, &[u8])> = records
            .iter()
            .map(|(kind, payload)| (kind.get(), *payload))
            .collect();
        let (first, last) = self.inner.enqueue_batch(&items)?;
        self.inner.commit(last, self.want())?;
        Ok(LsnRange {
            first: Lsn(first),
            last: Lsn(last),
        })
    }

    /// Appends records as one atomic batch and returns once they are written to storage,
    /// without waiting for a sync, whatever the durability mode: the next syncing commit (any
    /// caller's) makes them durable, and a crash before it loses them together with everything
    /// appended after them (the log stays a prefix). Reads see them only once durable
    /// ([`Wal::sync`] makes them so). For records whose loss equals a crash just before they
    /// were appended.
    pub fn append_batch_unsynced(&self, records: &[(RecordKind, &[u8])]) -> Result<LsnRange> {
        for (_, payload) in records {
            self.check_payload(payload)?;
        }
        let items: Vec<(u8, &[u8])> = records
            .iter()
            .map(|(kind, payload)| (kind.get(), *payload))
            .collect();
        let (first, last) = self.inner.enqueue_batch(&items)?;
        self.inner.commit(last, Want::Written)?;
        Ok(LsnRange {
            first: Lsn(first),
            last: Lsn(last),
        })
    }

    /// Appends records as one atomic batch without waiting for it, and tells `on_acknowledged`
    /// once the batch is acknowledged under the configured durability (durable; written under
    /// `NoSync`), or gives it the error that means it never will be (the log is poisoned). The
    /// call runs on the thread that acknowledged the batch: a committer's, or the log's syncer,
    /// a thread the first notifying append starts, which commits while notified batches wait
    /// and no other committer covers them. Like every batch, reads see it only once it is
    /// acknowledged. For a caller that must not block (an async task) yet must not act before
    /// its records are durable. An error returned here means nothing was appended and
    /// `on_acknowledged` is dropped uncalled.
    pub fn append_batch_notify(
        &self,
        records: &[(RecordKind, &[u8])],
        on_acknowledged: Acknowledged,
    ) -> Result<LsnRange> {
        for (_, payload) in records {
            self.check_payload(payload)?;
        }
        let (first, last) = if records.len() <= BATCH_INLINE_MAX {
            let mut items: [(u8, &[u8]); BATCH_INLINE_MAX] = [(0, &[]); BATCH_INLINE_MAX];
            for (slot, (kind, payload)) in items.iter_mut().zip(records) {
                *slot = (kind.get(), payload);
            }
            self.inner.enqueue_batch(&items[..records.len()])?
        } else {
            let items: Vec<(u8, &[u8])> = records
                .iter()
                .map(|(kind, payload)| (kind.get(), *payload))
                .collect();
            self.inner.enqueue_batch(&items)?
        };
        let syncer_running = self.syncer.get_or_init(|| self.start_syncer()).is_some();
        let unregistered = if syncer_running {
            self.inner.notify_when_acknowledged(last, on_acknowledged)
        } else {
            Some(on_acknowledged)
        };
        // No syncer, or too many notices waiting: commit here (the batch is appended either way).
        if let Some(call) = unregistered {
            call(self.inner.commit(last, self.want()));
        }
        Ok(LsnRange {
            first: Lsn(first),
            last: Lsn(last),
        })
    }

    /// Whether a commit is in flight now (a leader writes or syncs) or notified batches wait for
    /// one: a notifying append then rides on it or the next. On an idle log a notifying append
    /// waits for the syncer thread to wake; a caller that may block is quicker committing in
    /// place.
    pub fn commit_in_flight(&self) -> bool {
        self.inner.commit_in_flight()
    }

    /// How many notifying appends wait for their acknowledgement now (a hint).
    pub fn notices_waiting(&self) -> usize {
        self.inner.notices_waiting()
    }

    /// Starts the syncer thread of notifying appends; `None` when the thread cannot be started.
    fn start_syncer(&self) -> Option<std::thread::JoinHandle<()>> {
        let worker = Arc::clone(&self.inner);
        std::thread::Builder::new()
            .name("statelog-wal-sync".to_owned())
            .spawn(move || worker.syncer_loop())
            .ok()
    }

    /// The shared core, for the crate's unit tests.
    #[cfg(test)]
    pub(crate) fn inner_for_tests(&self) -> &Inner {
        &self.inner
    }

    /// Appends one record without waiting; pair with `wait_durable`.
    pub fn enqueue(&self, kind: RecordKind, payload: &[u8]) -> Result<Lsn> {
        self.check_payload(payload)?;
        let (first, _) = self.inner.enqueue_batch(&[(kind.get(), payload)])?;
        Ok(Lsn(first))
    }

    /// Waits until `lsn` is acknowledged under the configured durability.
    pub fn wait_durable(&self, lsn: Lsn) -> Result<()> {
        self.inner.commit(lsn.0, self.want())
    }

    /// Makes every record appended so far durable (whatever the durability mode); returns the
    /// durable LSN.
    pub fn sync(&self) -> Result<Lsn> {
        let target = self.inner.state.lock().next_lsn - 1;
        self.inner.commit(target, Want::Durable)?;
        Ok(Lsn(target))
    }

    /// Reads one record by LSN; `None` for an LSN no longer retained, or one that holds a
    /// log-internal record or a copy of an uncommitted compaction. An LSN past the acknowledged
    /// end is `Error::LsnOutOfRange`.
    pub fn read(&self, lsn: Lsn) -> Result<Option<OwnedRecord>> {
        let visible = self.inner.visible_lsn();
        if lsn.0 == 0 || lsn.0 > visible {
            let first = self
                .inner
                .catalog
                .read()
                .segments
                .first()
                .map_or(Lsn(1), |s| Lsn(s.first_lsn));
            return Err(Error::LsnOutOfRange {
                lsn,
                first,
                next: Lsn(visible + 1),
            });
        }
        View::bounded(&self.inner, lsn.0, 1)?.read_one()
    }

    /// Iterates owned records from `from` on, up to the acknowledged end at the time of the call.
    pub fn iter_from(&self, from: Lsn) -> Result<RecordIter> {
        Ok(RecordIter::new(View::new(&self.inner, from.0)?))
    }

    /// Calls `visit` with every record from `from` on, without copying payloads, until it
    /// returns `ControlFlow::Break`.
    pub fn scan_from(
        &self,
        from: Lsn,
        visit: impl FnMut(Record<'_>) -> ControlFlow<()>,
    ) -> Result<()> {
        View::new(&self.inner, from.0)?.scan(visit)
    }

    /// The retained segments, oldest first.
    pub fn segments(&self) -> Vec<SegmentInfo> {
        let (next_lsn, active_time_range) = {
            let state = self.inner.state.lock();
            (
                state.next_lsn,
                state.active.as_ref().and_then(|a| a.time_range),
            )
        };
        let catalog = self.inner.catalog.read();
        let count = catalog.segments.len();
        catalog
            .segments
            .iter()
            .enumerate()
            .map(|(position, meta)| {
                let active = position + 1 == count && meta.sealed.is_none();
                let last_lsn = match meta.sealed {
                    Some((last, _)) => last.map(Lsn),
                    None => (next_lsn > meta.first_lsn).then(|| Lsn(next_lsn - 1)),
                };
                let time_range = if active {
                    active_time_range
                } else {
                    meta.time_range
                };
                SegmentInfo {
                    segment_id: meta.id,
                    first_lsn: Lsn(meta.first_lsn),
                    last_lsn,
                    size_bytes: meta.size_bytes,
                    active,
                    time_range,
                }
            })
            .collect()
    }

    /// The failure that poisoned the log (a failed write or sync of log data), if one did:
    /// from then on nothing more is acknowledged until the log is reopened.
    pub fn poisoned(&self) -> Option<Arc<Error>> {
        self.inner.state.lock().poisoned.clone()
    }

    /// Counters.
    pub fn stats(&self) -> WalStats {
        let segments_count = self.inner.catalog.read().segments.len();
        let state = self.inner.state.lock();
        WalStats {
            next_lsn: Lsn(state.next_lsn),
            durable_lsn: Lsn(state.durable_lsn),
            segments_count,
            segments_ready_count: state.ready.len(),
            syncs_count: state.syncs_count,
            writes_count: state.writes_count,
            inline_prepares_count: state.inline_prepares_count,
            prepare_failures_count: state.prepare_failures_count,
            prepare_failure: state.prepare_failure.as_ref().map(|e| e.to_string()),
            gathers_count: state.gathers_count,
            gather_timeouts_count: state.gather_timeouts_count,
            spins_count: state.spins_count,
            spin_hits_count: state.spin_hits_count,
            compaction_syncs_count: state.compaction_syncs_count,
            sync_marks_count: state.sync_marks_count,
        }
    }

    /// Deletes every sealed segment whose records all have LSNs below `lsn`; returns them.
    pub fn delete_below(&self, lsn: Lsn) -> Result<Vec<SegmentId>> {
        compaction::delete_below(&self.inner, lsn.0)
    }

    /// Copy-forward compaction of the sealed segments entirely below `lsn`: re-appends the
    /// records `live` keeps, makes the copies durable, then deletes the old segments. Crash-safe
    /// at every step.
    /// `live` runs on a scanning thread of the log's own (at the lowest CPU priority), once per
    /// record in LSN order.
    pub fn compact_below(
        &self,
        lsn: Lsn,
        mut live: impl FnMut(&Record<'_>) -> bool + Send,
    ) -> Result<CompactionReport> {
        compaction::compact_below(&self.inner, lsn.0, &mut live, &mut |_| {})
    }

    /// `compact_below`, telling `progress` how far it is after every segment scanned and once
    /// at the end (segments deleted, bytes reclaimed). `progress` runs on the calling thread.
    pub fn compact_below_with_progress(
        &self,
        lsn: Lsn,
        mut live: impl FnMut(&Record<'_>) -> bool + Send,
        mut progress: impl FnMut(&CompactionProgress),
    ) -> Result<CompactionReport> {
        compaction::compact_below(&self.inner, lsn.0, &mut live, &mut progress)
    }

    /// The background step: prepares (zero-fills) segments until `segments_ready_count` are
    /// ready; returns how many it made.
    pub fn prepare_segments(&self) -> Result<usize> {
        if self.inner.options.read_only {
            return Err(Error::ReadOnly {
                op: "prepare_segments",
            });
        }
        self.inner.prepare_loop(false)
    }
}

impl Drop for Wal {
    fn drop(&mut self) {
        {
            let mut state = self.inner.state.lock();
            state.shutdown = true;
            self.inner.prepare_cv.notify_all();
            self.inner.syncer_cv.notify_all();
        }
        if let Some(handle) = self.background.take() {
            // A panicking preparer already poisoned nothing we can report here.
            let _ = handle.join();
        }
        // The syncer commits what notices still wait for, then returns. It may itself drop the
        // last handle (from a notice's call): it cannot join itself.
        if let Some(handle) = self.syncer.take().flatten() {
            if handle.thread().id() != std::thread::current().id() {
                let _ = handle.join();
            }
        }
    }
}

// `Wal` is shared between threads by `Arc`.
const _: fn() = || {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Wal>();
};

/// Batches up to this many records are passed without a heap allocation.
const BATCH_INLINE_MAX: usize = 16;

/// Takes the writer lock of `dir`, retrying every [`LOCK_RETRY_MS`] for up to `wait_ms`.
fn lock_directory(
    storage: &dyn Storage,
    dir: &Path,
    wait_ms: u64,
) -> Result<Option<crate::storage::DirLock>> {
    let started = std::time::Instant::now();
    loop {
        match storage.lock_exclusive(dir) {
            Ok(lock) => return Ok(lock),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if started.elapsed().as_millis() >= u128::from(wait_ms) {
                    return Err(Error::Locked {
                        dir: dir.to_path_buf(),
                    });
                }
                std::thread::sleep(std::time::Duration::from_millis(LOCK_RETRY_MS));
            }
            Err(e) => return Err(Error::io("lock", dir, e)),
        }
    }
}
