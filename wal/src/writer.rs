//! writer: append plus group commit, rotation into ready segments, segment preparation,
//! fail-stop.
//!
//! Appends encode their frames into an in-memory chunk under the state mutex (no I/O, no
//! allocation once the spare buffers are warm). A committing caller that finds no leader becomes
//! the leader: it takes every buffered chunk, writes each with one `write_at`, issues one
//! fdatasync per touched file, and then wakes every waiter its sync covers. An idle caller thus
//! syncs itself; under load one sync covers every record written so far.
//!
//! Commit gather (group commit only, `WalOptions::commit_gather_us_max`): each sync counts the
//! batches it covered (`released`: those committers are the likely next appenders). A new
//! leader that finds fewer than `released` batches appended since that sync ended waits on
//! `gather_cv` (the state lock released) until they have appended or a bound passes (at most
//! half the running average sync duration, at most the option), then takes every buffered chunk
//! as usual; the append that completes the expected count wakes it. A lone writer is its own
//! expected arrival, so an idle log never waits. The gather only delays when a leader takes the
//! buffer: what is written, in which order, and when it is acknowledged are unchanged. The log's
//! syncer thread, which commits for notified appends (`append_batch_notify`), never gathers:
//! their callers wait in no thread, so a gather would only hold them back.
//!
//! Sync marks: a syncing leader ends the buffer with a sync mark (repeating the last LSN, no LSN
//! of its own) when a record went into the active segment after its last mark, so every record
//! a sync acknowledges is followed on disk by a frame synced with it. Every batch is admitted
//! only with room for a mark behind it.
//!
//! Invariants: frames reach storage in LSN order (one leader at a time, chunks in order); an LSN
//! is reported durable only after the sync of every file holding it returned Ok; after any write,
//! sync error the log is poisoned and nothing more is acknowledged, and a sync is never
//! retried. A failed segment preparation poisons nothing: it wrote no log data (a temporary
//! file until its rename), so the append that needed the segment is refused
//! (`Error::SegmentUnavailable`, no LSN given out, nothing written) and the background thread
//! retries with a bounded backoff while the writer appends into the segments it has. Rotation writes the new segment's header in the same chunk as its first
//! records, into a file that is already full-size and whose directory entry is already durable,
//! so no commit pays for file growth or metadata. This module must not interpret record payloads.

use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard, RwLock};

use crate::error::{Error, Result};
use crate::limits::{
    BATCH_RECORDS_MAX, COMMIT_GATHER_SYNC_DENOMINATOR, COMMIT_GATHER_SYNC_NUMERATOR,
    COMMIT_SPIN_CORES_RESERVED, COMMIT_SPIN_SYNC_DENOMINATOR, COMMIT_SPIN_SYNC_NUMERATOR,
    INDEX_STRIDE_RECORDS, LSN_MAX, NOTICES_PENDING_MAX, PREPARE_RETRY_MS_MAX, PREPARE_RETRY_MS_MIN,
    RECORD_HEADER_SIZE_BYTES, RECORD_SIZE_BYTES_MAX, RETIRE_RELEASE_STEP_BYTES,
    SEGMENT_HEADER_SIZE_BYTES, SYNC_AVERAGE_WEIGHT_SHIFT, SYNC_MARK_FRAME_SIZE_BYTES,
};
use crate::record::{self, COPY_PREFIX_SIZE_BYTES, FLAG_BATCH_END, KIND_SYNC_MARK};
use crate::recovery::{self, SegMeta};
use crate::segment::{self, SegmentHeader, TEMP_SUFFIX};
use crate::storage::{join, Storage, StorageFile};
use crate::wal::WalOptions;
use crate::{Durability, Lsn, SegmentId};

/// What a notifying append (`Wal::append_batch_notify`) is told once its batch is acknowledged
/// under the log's durability, or the error that means it never will be (the log is poisoned).
/// It runs on whichever thread acknowledged the batch (a committer's, or the log's syncer), so it
/// must be quick and must not call into the log (it may run with the writer's state locked).
pub type Acknowledged = Box<dyn FnOnce(Result<()>) + Send>;

/// One notifying append waiting for its acknowledgement.
struct Notice {
    /// The batch's last LSN.
    lsn: u64,
    call: Acknowledged,
}

impl std::fmt::Debug for Notice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notice").field("lsn", &self.lsn).finish()
    }
}

/// Spare chunk buffers kept for reuse.
const SPARE_BUFFERS_MAX: usize = 8;

/// The segments readers see, and which compactions are committed.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    pub segments: Vec<SegMeta>,
    /// Begin LSNs of committed compactions; shared with readers by `Arc` (copied on write).
    pub committed: Arc<HashSet<u64>>,
}

#[derive(Debug)]
pub(crate) struct Active {
    pub id: SegmentId,
    pub seed: u32,
    pub file: Arc<dyn StorageFile>,
    pub path: Arc<Path>,
    pub size_bytes: u64,
    /// Offset where the next frame goes (buffered frames included).
    pub offset: u64,
    pub records_count: u64,
    /// (min, max) caller time of its records (`Wal::open_timed`).
    pub time_range: Option<(u64, u64)>,
    /// A record was encoded after the segment's last sync mark: the next syncing write must
    /// end with one. Never set for a version-1 segment or a fenced one.
    pub needs_mark: bool,
}

#[derive(Debug)]
struct Chunk {
    segment_id: SegmentId,
    file: Arc<dyn StorageFile>,
    path: Arc<Path>,
    offset: u64,
    bytes: Vec<u8>,
}

#[derive(Debug)]
pub(crate) struct Ready {
    pub id: SegmentId,
    pub file: Arc<dyn StorageFile>,
    pub path: Arc<Path>,
}

type SyncTarget = (SegmentId, Arc<dyn StorageFile>, Arc<Path>);

#[derive(Debug)]
pub(crate) struct State {
    pub next_lsn: u64,
    pub active: Option<Active>,
    /// Recovery dropped frames in the active segment: the next append must rotate.
    pub fence: bool,
    chunks: Vec<Chunk>,
    /// An empty chunk list kept for the next leader (no allocation per commit).
    chunks_spare: Vec<Chunk>,
    pub written_lsn: u64,
    pub durable_lsn: u64,
    leader_active: bool,
    unsynced: Vec<SyncTarget>,
    pub poisoned: Option<Arc<Error>>,
    spare: Vec<Vec<u8>>,
    pub ready: VecDeque<Ready>,
    pub next_segment_id: u64,
    preparing: bool,
    pub shutdown: bool,
    pub syncs_count: u64,
    pub writes_count: u64,
    pub inline_prepares_count: u64,
    /// Segment preparations that failed (background or inline); none of them poisons.
    pub prepare_failures_count: u64,
    /// The last preparation's failure, while no preparation has succeeded since.
    pub prepare_failure: Option<Arc<Error>>,
    /// Batches enqueued since open (commit gather: arrivals are counted in batches).
    batches_count: u64,
    /// `batches_count` when the last leader took the buffer.
    batches_at_take: u64,
    /// A gathering leader waits until `batches_count` reaches this: the count when the last
    /// sync ended plus the batches that sync covered.
    gather_until_batches: u64,
    /// A leader is waiting on `gather_cv`.
    gathering: bool,
    /// Running average duration of a leader's write + sync, in nanoseconds.
    sync_ns_avg: u64,
    pub gathers_count: u64,
    pub gather_timeouts_count: u64,
    pub spins_count: u64,
    pub spin_hits_count: u64,
    /// Committers in `spin_until_durable` now (at most `commit_spinners_max()`).
    spinning_count: usize,
    pub compaction_syncs_count: u64,
    /// Sync marks written (one per syncing write that carried new records).
    pub sync_marks_count: u64,
    /// Notifying appends waiting for their acknowledgement, in LSN order.
    notices: VecDeque<Notice>,
    /// A spare list for the notices one acknowledgement answers (no allocation per commit).
    notices_ready: Vec<Notice>,
    /// The syncer thread waits on `syncer_cv` (nothing for it to sync).
    syncer_idle: bool,
}

/// Whether a leading committer may wait for the committers the last sync released
/// ([`Inner::gather`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gather {
    /// When the option allows it and fewer batches arrived than the last sync released.
    IfExpected,
    /// Never (the log's syncer thread).
    Never,
}

/// What a committing caller waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Want {
    /// Written to storage (no sync).
    Written,
    /// Covered by a successful sync.
    Durable,
    /// Covered by a sync this caller issued.
    OwnSync,
}

/// The shared core of a `Wal`.
#[derive(Debug)]
pub(crate) struct Inner {
    pub storage: Arc<dyn Storage>,
    pub dir: PathBuf,
    pub options: WalOptions,
    /// The caller's timestamp reader, when opened with `Wal::open_timed`.
    pub time_of: Option<crate::wal::TimeOf>,
    pub state: Mutex<State>,
    /// Signalled when durable/written LSNs move, a leader finishes, or the log is poisoned.
    pub commit_cv: Condvar,
    /// Signalled when a gathering leader's expected committers have all appended, or on poison.
    pub gather_cv: Condvar,
    /// `State::durable_lsn`, published (under the state lock) for spinning committers.
    pub durable_hint: AtomicU64,
    /// Set (under the state lock) when the log is poisoned, for spinning committers.
    pub poisoned_hint: AtomicBool,
    /// Signalled when a segment becomes ready or one is needed.
    pub prepare_cv: Condvar,
    /// Signalled when a notifying append waits for a sync, or on shutdown.
    pub syncer_cv: Condvar,
    pub catalog: RwLock<Catalog>,
    pub compaction_lock: Mutex<()>,
}

impl State {
    pub(crate) fn new(
        next_lsn: u64,
        active: Option<Active>,
        fence: bool,
        ready: VecDeque<Ready>,
        next_segment_id: u64,
    ) -> Self {
        State {
            next_lsn,
            active,
            fence,
            chunks: Vec::new(),
            chunks_spare: Vec::new(),
            written_lsn: next_lsn - 1,
            durable_lsn: next_lsn - 1,
            leader_active: false,
            unsynced: Vec::new(),
            poisoned: None,
            spare: Vec::new(),
            ready,
            next_segment_id,
            preparing: false,
            shutdown: false,
            syncs_count: 0,
            writes_count: 0,
            inline_prepares_count: 0,
            prepare_failures_count: 0,
            prepare_failure: None,
            batches_count: 0,
            batches_at_take: 0,
            gather_until_batches: 0,
            gathering: false,
            sync_ns_avg: 0,
            gathers_count: 0,
            gather_timeouts_count: 0,
            spins_count: 0,
            spin_hits_count: 0,
            spinning_count: 0,
            compaction_syncs_count: 0,
            sync_marks_count: 0,
            notices: VecDeque::new(),
            notices_ready: Vec::new(),
            syncer_idle: false,
        }
    }
}

fn poisoned_error(cause: &Arc<Error>) -> Error {
    Error::Poisoned {
        cause: Arc::clone(cause),
    }
}

impl Inner {
    /// The largest payload a caller may append (room is kept for the copy prefix compaction adds
    /// and for the sync mark behind it).
    pub(crate) fn payload_size_bytes_max(&self) -> usize {
        let room = self.options.segment_size_bytes as usize
            - SEGMENT_HEADER_SIZE_BYTES
            - RECORD_HEADER_SIZE_BYTES
            - SYNC_MARK_FRAME_SIZE_BYTES;
        RECORD_SIZE_BYTES_MAX.min(room - COPY_PREFIX_SIZE_BYTES)
    }

    /// Poisons the log with `error` (the first cause wins) and returns the poisoned error.
    pub(crate) fn poison(&self, state: &mut State, error: Error) -> Error {
        let cause = state
            .poisoned
            .get_or_insert_with(|| Arc::new(error))
            .clone();
        self.poisoned_hint.store(true, Ordering::Release);
        self.commit_cv.notify_all();
        self.gather_cv.notify_all();
        self.prepare_cv.notify_all();
        // No batch waiting for its acknowledgement will get one.
        for notice in state.notices.drain(..) {
            (notice.call)(Err(poisoned_error(&cause)));
        }
        poisoned_error(&cause)
    }

    /// Encodes a batch into the buffer and assigns its LSNs; nothing is written yet.
    /// `items` are (kind value, payload); internal kinds are allowed here.
    pub(crate) fn enqueue_batch(&self, items: &[(u8, &[u8])]) -> Result<(u64, u64)> {
        if items.is_empty() {
            return Err(Error::EmptyBatch);
        }
        if self.options.read_only {
            return Err(Error::ReadOnly { op: "append" });
        }
        let internal_max = self.payload_size_bytes_max() + COPY_PREFIX_SIZE_BYTES;
        let mut total = 0usize;
        for (_, payload) in items {
            if payload.len() > internal_max {
                return Err(Error::RecordTooLarge {
                    size_bytes: payload.len(),
                    limit_bytes: internal_max,
                });
            }
            total += record::framed_size(payload.len());
        }
        // Room for a sync mark stays behind every batch, so a syncing write never lacks it.
        let room = self.options.segment_size_bytes as usize
            - SEGMENT_HEADER_SIZE_BYTES
            - SYNC_MARK_FRAME_SIZE_BYTES;
        if items.len() > BATCH_RECORDS_MAX || total > room {
            return Err(Error::BatchTooLarge {
                records_count: items.len(),
                size_bytes: total,
                limit_bytes: room,
                limit_records: BATCH_RECORDS_MAX,
            });
        }
        let mut state = self.state.lock();
        self.ensure_room(&mut state, (total + SYNC_MARK_FRAME_SIZE_BYTES) as u64)?;
        let first = state.next_lsn;
        let last = first + items.len() as u64 - 1;
        if last > LSN_MAX {
            return Err(Error::LsnExhausted { lsn: Lsn(last) });
        }
        let state = &mut *state;
        let active = state
            .active
            .as_mut()
            .expect("rotation leaves an active segment");
        assert!(
            active.offset + (total + SYNC_MARK_FRAME_SIZE_BYTES) as u64 <= active.size_bytes,
            "batch and its sync mark fit after rotation"
        );
        let chunk = active_chunk(&mut state.chunks, &mut state.spare, active);
        // Sparse index entries go straight into the catalog; its lock is taken only for a
        // batch that crosses an index stride (once per INDEX_STRIDE_RECORDS records).
        let mut catalog: Option<parking_lot::RwLockWriteGuard<'_, Catalog>> = None;
        for (lsn, (position, (kind, payload))) in (first..).zip(items.iter().enumerate()) {
            let flags = if position + 1 == items.len() {
                FLAG_BATCH_END
            } else {
                0
            };
            if active.records_count % INDEX_STRIDE_RECORDS == 0 {
                let offset_u32 = u32::try_from(active.offset).expect("segment offsets fit u32");
                let catalog = catalog.get_or_insert_with(|| self.catalog.write());
                if let Some(meta) = catalog.segments.last_mut() {
                    debug_assert_eq!(meta.id, active.id);
                    meta.index.push((lsn, offset_u32));
                }
            }
            record::encode_into(&mut chunk.bytes, active.seed, lsn, kind | flags, payload);
            if let Some(time_of) = self.time_of {
                recovery::widen(
                    &mut active.time_range,
                    recovery::item_time(time_of, *kind, payload),
                );
            }
            active.offset += record::framed_size(payload.len()) as u64;
            active.records_count += 1;
        }
        // Version-1 segments get no marks; a v1 active segment is always fenced, so records
        // only ever go into segments this build created.
        active.needs_mark = true;
        debug_assert_eq!(chunk.offset + chunk.bytes.len() as u64, active.offset);
        drop(catalog);
        state.next_lsn = last + 1;
        state.batches_count += 1;
        if state.gathering && state.batches_count >= state.gather_until_batches {
            self.gather_cv.notify_one();
        }
        Ok((first, last))
    }

    /// Ends the buffer with a sync mark when a record was encoded into the active segment after
    /// its last mark. Called by a syncing leader, with the state locked, just before it takes
    /// the buffer: the mark is then written and synced with the records it follows, so every
    /// record a sync acknowledges has a valid frame behind it on disk. It repeats the LSN of the
    /// record before it and carries the durable LSN before this write.
    fn append_sync_mark(&self, state: &mut State) {
        let durable_lsn = state.durable_lsn;
        let lsn = state.next_lsn - 1;
        let Some(active) = state.active.as_mut() else {
            return;
        };
        if !active.needs_mark {
            return;
        }
        assert!(
            active.records_count > 0,
            "a mark follows a record of its segment"
        );
        assert!(
            active.offset + SYNC_MARK_FRAME_SIZE_BYTES as u64 <= active.size_bytes,
            "room for a mark is kept behind every batch"
        );
        assert!(
            durable_lsn <= lsn,
            "the durable LSN never passes the last one"
        );
        let chunk = active_chunk(&mut state.chunks, &mut state.spare, active);
        record::encode_into(
            &mut chunk.bytes,
            active.seed,
            lsn,
            KIND_SYNC_MARK | FLAG_BATCH_END,
            &record::encode_sync_mark_payload(durable_lsn),
        );
        active.offset += SYNC_MARK_FRAME_SIZE_BYTES as u64;
        active.needs_mark = false;
        debug_assert_eq!(chunk.offset + chunk.bytes.len() as u64, active.offset);
        state.sync_marks_count += 1;
    }

    /// Makes a pending fence durable now: rotates to a new segment (header only) and syncs it,
    /// so the new segment's `first_lsn` bounds the old one on every later open. Used after a
    /// repair, whose truncation point must not depend on the repair mode of the next open.
    pub(crate) fn persist_fence(&self) -> Result<()> {
        {
            let mut state = self.state.lock();
            if !state.fence {
                return Ok(());
            }
            self.ensure_room(&mut state, 0)?;
        }
        let target = self.state.lock().next_lsn - 1;
        self.commit(target, Want::OwnSync)
    }

    /// Makes sure the active segment has room for `size_bytes` more, rotating to the next
    /// ready segment (preparing one inline when none is ready and none is being prepared).
    /// Called with the state locked; may release it while waiting for a preparation.
    fn ensure_room(&self, state: &mut MutexGuard<'_, State>, size_bytes: u64) -> Result<()> {
        let ready = loop {
            if let Some(cause) = &state.poisoned {
                return Err(poisoned_error(cause));
            }
            let needs_rotation = match &state.active {
                None => true,
                Some(active) => state.fence || active.offset + size_bytes > active.size_bytes,
            };
            if !needs_rotation {
                return Ok(());
            }
            if let Some(ready) = state.ready.pop_front() {
                break ready;
            }
            if state.preparing {
                self.prepare_cv.wait(state);
                continue;
            }
            let id = SegmentId(state.next_segment_id);
            state.next_segment_id += 1;
            state.inline_prepares_count += 1;
            match segment::prepare(
                self.storage.as_ref(),
                &self.dir,
                id,
                self.options.segment_size_bytes,
            ) {
                Ok(file) => {
                    state.prepare_failure = None;
                    break Ready {
                        id,
                        file,
                        path: Arc::from(join(&self.dir, &segment::file_name(id))),
                    };
                }
                Err(error) => {
                    // Nothing of this batch was written and no LSN was given out: refuse it
                    // without poisoning (only a failed write or sync of log data poisons).
                    return Err(self.preparation_failed(state, id, error));
                }
            }
        };
        let first_lsn = state.next_lsn;
        let mut catalog = self.catalog.write();
        if let Some(old) = state.active.take() {
            let last = (old.records_count > 0).then(|| first_lsn - 1);
            if let Some(meta) = catalog.segments.last_mut() {
                assert_eq!(
                    meta.id, old.id,
                    "the catalog's last segment is the active one"
                );
                meta.sealed = Some((last, old.offset));
                meta.time_range = old.time_range;
            }
        }
        let header = SegmentHeader {
            format_version: segment::FORMAT_VERSION,
            segment_id: ready.id,
            first_lsn: Lsn(first_lsn),
        }
        .encode();
        let mut bytes = state.spare.pop().unwrap_or_default();
        bytes.clear();
        bytes.extend_from_slice(&header);
        state.chunks.push(Chunk {
            segment_id: ready.id,
            file: Arc::clone(&ready.file),
            path: ready.path.clone(),
            offset: 0,
            bytes,
        });
        let seed = record::segment_seed(ready.id);
        catalog.segments.push(SegMeta {
            id: ready.id,
            seed,
            file: Arc::clone(&ready.file),
            path: ready.path.to_path_buf(),
            size_bytes: self.options.segment_size_bytes,
            first_lsn,
            sealed: None,
            index: Vec::new(),
            map: Arc::new(OnceLock::new()),
            time_range: None,
        });
        drop(catalog);
        state.active = Some(Active {
            id: ready.id,
            seed,
            file: ready.file,
            path: ready.path,
            size_bytes: self.options.segment_size_bytes,
            offset: SEGMENT_HEADER_SIZE_BYTES as u64,
            records_count: 0,
            time_range: None,
            needs_mark: false,
        });
        state.fence = false;
        self.prepare_cv.notify_all();
        Ok(())
    }

    /// Waits until `target` satisfies `want`, leading commits as needed.
    pub(crate) fn commit(&self, target: u64, want: Want) -> Result<()> {
        self.commit_as(target, want, Gather::IfExpected)
    }

    /// [`Inner::commit`], gathering as `gather` says when it leads.
    fn commit_as(&self, target: u64, want: Want, gather: Gather) -> Result<()> {
        let mut state = self.state.lock();
        let mut synced_once = false;
        let mut spun = false;
        loop {
            if let Some(cause) = &state.poisoned {
                return Err(poisoned_error(cause));
            }
            let done = match want {
                Want::Written => state.written_lsn >= target,
                Want::Durable => state.durable_lsn >= target,
                Want::OwnSync => synced_once,
            };
            if done {
                return Ok(());
            }
            if state.leader_active {
                if want == Want::Durable && !spun {
                    spun = true;
                    self.spin_until_durable(&mut state, target);
                    continue;
                }
                self.commit_cv.wait(&mut state);
                continue;
            }
            state.leader_active = true;
            let sync = want != Want::Written;
            if want == Want::Durable
                && gather == Gather::IfExpected
                && self.options.durability == Durability::GroupCommit
                && self.options.commit_gather_us_max > 0
            {
                self.gather(&mut state);
                if let Some(cause) = &state.poisoned {
                    let error = poisoned_error(cause);
                    state.leader_active = false;
                    self.commit_cv.notify_all();
                    return Err(error);
                }
            }
            if sync {
                self.append_sync_mark(&mut state);
            }
            let spare = std::mem::take(&mut state.chunks_spare);
            let mut chunks = std::mem::replace(&mut state.chunks, spare);
            let upto = state.next_lsn - 1;
            let covered_batches = state.batches_count - state.batches_at_take;
            state.batches_at_take = state.batches_count;
            // Files with unsynced writes from earlier leaders: synced before a newer segment is
            // first written, and by any syncing commit.
            let mut targets: Vec<SyncTarget> = std::mem::take(&mut state.unsynced);
            let started = Instant::now();
            let result =
                MutexGuard::unlocked(&mut state, || write_and_sync(&chunks, &mut targets, sync));
            let elapsed_ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
            state.leader_active = false;
            state.writes_count += chunks.len() as u64;
            if sync {
                state.syncs_count += targets.len() as u64;
            }
            for chunk in chunks.drain(..) {
                if state.spare.len() < SPARE_BUFFERS_MAX {
                    state.spare.push(chunk.bytes);
                }
            }
            state.chunks_spare = chunks;
            match result {
                Ok(()) => {
                    state.written_lsn = state.written_lsn.max(upto);
                    if sync {
                        state.durable_lsn = state.durable_lsn.max(upto);
                        self.durable_hint
                            .store(state.durable_lsn, Ordering::Release);
                        // The committers of the batches this sync covered are released now:
                        // the next leader expects them back.
                        state.gather_until_batches = state.batches_count + covered_batches;
                        state.sync_ns_avg = average(state.sync_ns_avg, elapsed_ns);
                        targets.clear();
                        state.unsynced = targets;
                    } else {
                        // Still unsynced (the writes of other leaders since are appended later).
                        state.unsynced = targets;
                    }
                }
                Err(error) => {
                    let _ = self.poison(&mut state, error);
                }
            }
            synced_once |= sync;
            self.commit_cv.notify_all();
            self.answer_notices(&mut state);
        }
    }

    /// The LSN up to which appends are acknowledged under the configured durability.
    fn acknowledged_lsn(&self, state: &State) -> u64 {
        match self.options.durability {
            Durability::NoSync => state.written_lsn,
            Durability::PerCommit | Durability::GroupCommit => state.durable_lsn,
        }
    }

    /// Registers `call` to be told when the batch ending at `lsn` is acknowledged, and wakes
    /// the syncer when it is idle; answers at once when the batch already is (or never will
    /// be). Gives `call` back when `NOTICES_PENDING_MAX` notices wait already: the caller then
    /// commits itself.
    pub(crate) fn notify_when_acknowledged(
        &self,
        lsn: u64,
        call: Acknowledged,
    ) -> Option<Acknowledged> {
        let mut state = self.state.lock();
        if let Some(cause) = &state.poisoned {
            let error = poisoned_error(cause);
            drop(state);
            call(Err(error));
            return None;
        }
        if self.acknowledged_lsn(&state) >= lsn {
            drop(state);
            call(Ok(()));
            return None;
        }
        if state.notices.len() >= NOTICES_PENDING_MAX {
            return Some(call);
        }
        // Appenders register after their enqueue, not always in LSN order.
        let at = state.notices.partition_point(|n| n.lsn <= lsn);
        state.notices.insert(at, Notice { lsn, call });
        debug_assert!(state.notices.front().is_some_and(|n| n.lsn <= lsn));
        if state.syncer_idle {
            self.syncer_cv.notify_one();
        }
        None
    }

    /// Whether a commit is in flight (a leader writes or syncs) or notified batches wait for one.
    pub(crate) fn commit_in_flight(&self) -> bool {
        let state = self.state.lock();
        state.leader_active || !state.notices.is_empty()
    }

    /// How many notices wait for their acknowledgement.
    pub(crate) fn notices_waiting(&self) -> usize {
        self.state.lock().notices.len()
    }

    /// Answers every notice the acknowledged LSN covers, the state lock released while they run.
    fn answer_notices(&self, state: &mut MutexGuard<'_, State>) {
        let acknowledged = self.acknowledged_lsn(state);
        if !state.notices.front().is_some_and(|n| n.lsn <= acknowledged) {
            return;
        }
        let mut ready = std::mem::take(&mut state.notices_ready);
        while let Some(notice) = state.notices.pop_front() {
            if notice.lsn > acknowledged {
                state.notices.push_front(notice);
                break;
            }
            ready.push(notice);
        }
        debug_assert!(!ready.is_empty(), "the first notice was covered");
        MutexGuard::unlocked(state, || {
            for notice in ready.drain(..) {
                (notice.call)(Ok(()));
            }
        });
        if ready.capacity() > state.notices_ready.capacity() {
            state.notices_ready = ready;
        }
    }

    /// The syncer thread (started by the first notifying append): while notices wait for an
    /// acknowledgement that no committer gives them, commits up to the last of them (leading
    /// a group commit, or joining one in flight); sleeps on `syncer_cv` when none waits, and
    /// returns on shutdown once none does.
    pub(crate) fn syncer_loop(&self) {
        let want = match self.options.durability {
            Durability::NoSync => Want::Written,
            Durability::PerCommit | Durability::GroupCommit => Want::Durable,
        };
        let mut state = self.state.lock();
        loop {
            self.answer_notices(&mut state);
            let acknowledged = self.acknowledged_lsn(&state);
            let target = state.notices.back().map(|n| n.lsn);
            if let Some(lsn) = target.filter(|&lsn| lsn > acknowledged) {
                assert!(state.poisoned.is_none(), "poisoning answers every notice");
                drop(state);
                // Never gathers: a notified append waits in no thread, so the sync that covers
                // the batches here now lets their callers go on sooner, and the next appends ride
                // on the next sync (issue 16: async starts at 16 in flight made 42-51k
                // executions/s without the gather, 30k with it).
                let result = self.commit_as(lsn, want, Gather::Never);
                state = self.state.lock();
                if let Err(error) = result {
                    // A commit fails only on a poisoned log; fail-stop if it ever did otherwise.
                    if state.poisoned.is_none() {
                        let _ = self.poison(&mut state, error);
                    }
                }
                continue;
            }
            if state.shutdown {
                return;
            }
            state.syncer_idle = true;
            self.syncer_cv.wait(&mut state);
            state.syncer_idle = false;
        }
    }

    /// The commit gather of a leader that has set `leader_active` and not yet taken the buffer:
    /// when fewer batches were appended since the last sync than it covered, waits (the state
    /// lock released) until they have been, or until the bound passes: half the average sync
    /// duration, at most `commit_gather_us_max`. Never waits with an empty buffer (nothing of
    /// its own to cover) or before a sync has been measured. Returns with the state locked.
    fn gather(&self, state: &mut MutexGuard<'_, State>) {
        if state.batches_count >= state.gather_until_batches || state.chunks.is_empty() {
            return;
        }
        let bound_ns = (state
            .sync_ns_avg
            .saturating_mul(COMMIT_GATHER_SYNC_NUMERATOR)
            / COMMIT_GATHER_SYNC_DENOMINATOR)
            .min(self.options.commit_gather_us_max.saturating_mul(1_000));
        if bound_ns == 0 {
            return;
        }
        state.gathers_count += 1;
        state.gathering = true;
        let deadline = Instant::now() + Duration::from_nanos(bound_ns);
        while state.batches_count < state.gather_until_batches && state.poisoned.is_none() {
            if self.gather_cv.wait_until(state, deadline).timed_out() {
                if state.batches_count < state.gather_until_batches {
                    state.gather_timeouts_count += 1;
                }
                break;
            }
        }
        state.gathering = false;
    }

    /// The commit spin of a committer whose records another thread's commit will cover
    /// (group commit, `WalOptions::commit_spin_us_max`): when the running average sync is
    /// quick (at most the option), waits for `target` to be durable by checking
    /// `durable_hint` between `yield_now` calls, the state lock released, for at most 1.5
    /// average syncs; the caller then re-checks, and sleeps on `commit_cv` if it must. On a
    /// quick disk a sleep-and-wake costs about as much as the sync itself. Only
    /// `commit_spinners_max()` committers spin at once: past that, the others sleep at once, so
    /// that under concurrency the spinners' `yield_now` calls do not take the cores the runnable
    /// threads (workers, the next appenders) need. Returns with the state locked.
    fn spin_until_durable(&self, state: &mut MutexGuard<'_, State>, target: u64) {
        let cap_ns = self.options.commit_spin_us_max.saturating_mul(1_000);
        if self.options.durability != Durability::GroupCommit
            || cap_ns == 0
            || state.sync_ns_avg == 0
            || state.sync_ns_avg > cap_ns
            || state.spinning_count >= commit_spinners_max()
        {
            return;
        }
        let bound_ns = (state.sync_ns_avg.saturating_mul(COMMIT_SPIN_SYNC_NUMERATOR)
            / COMMIT_SPIN_SYNC_DENOMINATOR)
            .min(cap_ns);
        state.spins_count += 1;
        state.spinning_count += 1;
        let reached = MutexGuard::unlocked(state, || {
            let deadline = Instant::now() + Duration::from_nanos(bound_ns);
            loop {
                if self.durable_hint.load(Ordering::Acquire) >= target
                    || self.poisoned_hint.load(Ordering::Acquire)
                {
                    return true;
                }
                if Instant::now() >= deadline {
                    return false;
                }
                std::thread::yield_now();
            }
        });
        assert!(
            state.spinning_count > 0,
            "this committer is counted as spinning"
        );
        state.spinning_count -= 1;
        if reached {
            state.spin_hits_count += 1;
        }
    }

    /// Lets the committers in flight or pending go first: waits while a leader is writing or
    /// syncing, or records after `own_upto` (the caller's own last LSN) are buffered unwritten,
    /// up to `give_ways_max` times (each bounded by `wait_ms_max`), so a background job
    /// (compaction) neither leads a commit of appenders' records nor puts its own bytes ahead
    /// of theirs, and is never starved. Returns how many times it waited.
    pub(crate) fn give_way(&self, own_upto: u64, give_ways_max: usize, wait_ms_max: u64) -> usize {
        let mut state = self.state.lock();
        let mut waited = 0usize;
        while waited < give_ways_max
            && state.poisoned.is_none()
            && (state.leader_active
                || (state.next_lsn - 1 > own_upto.max(state.written_lsn)
                    && !state.chunks.is_empty()))
        {
            let _ = self
                .commit_cv
                .wait_for(&mut state, std::time::Duration::from_millis(wait_ms_max));
            waited += 1;
        }
        waited
    }

    /// The LSN up to which readers may see records.
    pub(crate) fn visible_lsn(&self) -> u64 {
        let state = self.state.lock();
        self.acknowledged_lsn(&state)
    }

    /// Records a failed preparation of segment `id` (its id is given back, so ids stay in
    /// rotation order) and returns the error the caller gets: `SegmentUnavailable`, which
    /// poisons nothing. A preparation writes no log data: its file is a temporary one until
    /// the final rename, and every open removes leftovers unread.
    fn preparation_failed(&self, state: &mut State, id: SegmentId, error: Error) -> Error {
        assert_eq!(
            state.next_segment_id,
            id.0 + 1,
            "no id is taken while a preparation runs"
        );
        state.next_segment_id = id.0;
        state.prepare_failures_count += 1;
        let cause = Arc::new(error);
        state.prepare_failure = Some(Arc::clone(&cause));
        Error::SegmentUnavailable {
            segment_id: id,
            cause,
        }
    }

    /// The background step: prepares segments until enough are ready. With `wait` it keeps going
    /// until shutdown (the background thread), otherwise it returns how many it made. A failed
    /// preparation poisons nothing: the background thread tries again after a backoff that
    /// doubles from `PREPARE_RETRY_MS_MIN` to `PREPARE_RETRY_MS_MAX` (the writer meanwhile
    /// appends into the segments it has); without `wait` the error is returned.
    pub(crate) fn prepare_loop(&self, wait: bool) -> Result<usize> {
        let mut made = 0usize;
        let mut retry_ms = 0u64;
        let mut state = self.state.lock();
        loop {
            if state.shutdown {
                return Ok(made);
            }
            if let Some(cause) = &state.poisoned {
                if wait {
                    return Ok(made);
                }
                return Err(poisoned_error(cause));
            }
            if state.preparing || state.ready.len() >= self.options.segments_ready_count {
                if !wait && !state.preparing {
                    return Ok(made);
                }
                self.prepare_cv.wait(&mut state);
                continue;
            }
            state.preparing = true;
            let id = SegmentId(state.next_segment_id);
            state.next_segment_id += 1;
            let result = MutexGuard::unlocked(&mut state, || {
                segment::prepare(
                    self.storage.as_ref(),
                    &self.dir,
                    id,
                    self.options.segment_size_bytes,
                )
            });
            state.preparing = false;
            match result {
                Ok(file) => {
                    state.ready.push_back(Ready {
                        id,
                        file,
                        path: Arc::from(join(&self.dir, &segment::file_name(id))),
                    });
                    state.prepare_failure = None;
                    retry_ms = 0;
                    made += 1;
                    self.prepare_cv.notify_all();
                }
                Err(error) => {
                    let error = self.preparation_failed(&mut state, id, error);
                    // A writer waiting for this preparation tries its own (and fails alone).
                    self.prepare_cv.notify_all();
                    if !wait {
                        return Err(error);
                    }
                    retry_ms = (retry_ms * 2).clamp(PREPARE_RETRY_MS_MIN, PREPARE_RETRY_MS_MAX);
                    let retry_at = Instant::now() + Duration::from_millis(retry_ms);
                    while !state.shutdown && state.poisoned.is_none() {
                        if self.prepare_cv.wait_until(&mut state, retry_at).timed_out() {
                            break;
                        }
                    }
                }
            }
        }
    }

    /// Removes or recycles whole segments already taken out of the catalog. Each is first
    /// renamed, oldest first: to a fresh segment id when recycled, else out of the log's
    /// namespace (to its own id's temporary name, which every open removes unread); then the
    /// directory is synced once, so from here on the segments are gone from the log durably.
    /// Recycled files join the ready queue only then. Last, the renamed-out files are removed;
    /// while appenders are active their blocks are first freed in durable steps of
    /// `RETIRE_RELEASE_STEP_BYTES` (a hole punched and synced each), since freeing a whole
    /// segment at once slows a concurrent append's fdatasync (measured on ext4 with `discard`).
    /// The state lock is held only to reserve ids and to publish: appends go on throughout.
    /// `before_each` runs before every rename, removal and step (compaction gives way to
    /// committers there) and says whether appenders are active.
    pub(crate) fn retire_segments(
        &self,
        retired: Vec<SegMeta>,
        before_each: &mut dyn FnMut() -> bool,
    ) -> Result<()> {
        if retired.is_empty() {
            return Ok(());
        }
        // (segment, new id when recycled)
        let plan: Vec<(SegMeta, Option<SegmentId>)> = {
            let mut state = self.state.lock();
            // Ready segments must join the queue in id order: wait out a preparation in flight
            // and hold further ones off (`preparing`) until the recycled files are published.
            while state.preparing && state.poisoned.is_none() {
                self.prepare_cv.wait(&mut state);
            }
            if let Some(cause) = &state.poisoned {
                return Err(poisoned_error(cause));
            }
            state.preparing = true;
            let mut recycling = state.ready.len();
            retired
                .into_iter()
                .map(|meta| {
                    let recycle = recycling < self.options.segments_ready_count
                        && meta.size_bytes == self.options.segment_size_bytes;
                    let id = recycle.then(|| {
                        recycling += 1;
                        let id = SegmentId(state.next_segment_id);
                        state.next_segment_id += 1;
                        id
                    });
                    (meta, id)
                })
                .collect()
        };
        let mut recycled: Vec<Ready> = Vec::new();
        // Renamed out of the log: (file, temporary path, size), removed last.
        let mut leaving: Vec<(Arc<dyn StorageFile>, PathBuf, u64)> = Vec::new();
        let mut result = Ok(());
        for (meta, id) in plan {
            before_each();
            let to = match id {
                Some(id) => join(&self.dir, &segment::file_name(id)),
                None => join(&self.dir, &format!("{:020}{TEMP_SUFFIX}", meta.id.0)),
            };
            if let Err(error) = self.storage.rename(&meta.path, &to) {
                result = Err(Error::io("rename", &meta.path, error));
                break;
            }
            match id {
                Some(id) => recycled.push(Ready {
                    id,
                    file: meta.file,
                    path: Arc::from(to),
                }),
                // This log's own mapping of it goes now (readers holding an older view see
                // zeros where blocks are freed: a checksum error, as for a recycled file).
                None => leaving.push((meta.file, to, meta.size_bytes)),
            }
        }
        if result.is_ok() {
            result = self
                .storage
                .sync_dir(&self.dir)
                .map_err(|e| Error::io("sync_dir", &self.dir, e));
        }
        {
            let mut state = self.state.lock();
            state.preparing = false;
            self.prepare_cv.notify_all();
            match result {
                Ok(()) => {
                    state.ready.extend(recycled);
                    self.prepare_cv.notify_all();
                }
                Err(error) => return Err(self.poison(&mut state, error)),
            }
        }
        // The files are out of the log now; a crash from here leaves temporary files that the
        // next open removes.
        for (file, path, size_bytes) in leaving {
            let outcome = self.remove_leaving(file.as_ref(), &path, size_bytes, before_each);
            if let Err(error) = outcome {
                let mut state = self.state.lock();
                return Err(self.poison(&mut state, error));
            }
        }
        Ok(())
    }

    /// Removes one file already renamed out of the log, first freeing its blocks in durable
    /// steps while `before_each` reports appenders active.
    fn remove_leaving(
        &self,
        file: &dyn StorageFile,
        path: &Path,
        size_bytes: u64,
        before_each: &mut dyn FnMut() -> bool,
    ) -> Result<()> {
        let mut offset = 0u64;
        while offset < size_bytes && before_each() {
            let len = RETIRE_RELEASE_STEP_BYTES.min(size_bytes - offset);
            file.release_range(offset, len)
                .map_err(|e| Error::io("release_range", path, e))?;
            file.sync_data()
                .map_err(|e| Error::io("sync_data", path, e))?;
            offset += len;
        }
        self.storage
            .remove(path)
            .map_err(|e| Error::io("remove", path, e))
    }
}

/// The buffered chunk that ends at the active segment's next offset, started (from a spare
/// buffer) if the last chunk is for another segment or place.
fn active_chunk<'a>(
    chunks: &'a mut Vec<Chunk>,
    spare: &mut Vec<Vec<u8>>,
    active: &Active,
) -> &'a mut Chunk {
    let append_to_last = matches!(chunks.last(), Some(chunk) if chunk.segment_id == active.id && chunk.offset + chunk.bytes.len() as u64 == active.offset);
    if !append_to_last {
        let mut bytes = spare.pop().unwrap_or_default();
        bytes.clear();
        chunks.push(Chunk {
            segment_id: active.id,
            file: Arc::clone(&active.file),
            path: Arc::clone(&active.path),
            offset: active.offset,
            bytes,
        });
    }
    chunks.last_mut().expect("a chunk for the active segment")
}

/// How many committers may spin at once: the cores available less
/// `COMMIT_SPIN_CORES_RESERVED` (the others are left to the threads that do the work), at least
/// one (so an idle log's committer keeps its quick path). Read once per process.
fn commit_spinners_max() -> usize {
    static SPINNERS_MAX: OnceLock<usize> = OnceLock::new();
    *SPINNERS_MAX.get_or_init(|| {
        let cores_count = std::thread::available_parallelism().map_or(1, |cores| cores.get());
        cores_count
            .saturating_sub(COMMIT_SPIN_CORES_RESERVED)
            .max(1)
    })
}

/// The running average of sync durations with one more sample (the first sample is taken as is).
fn average(avg_ns: u64, sample_ns: u64) -> u64 {
    if avg_ns == 0 {
        return sample_ns;
    }
    let avg = i128::from(avg_ns);
    let moved = avg + ((i128::from(sample_ns) - avg) >> SYNC_AVERAGE_WEIGHT_SHIFT);
    u64::try_from(moved.max(1)).unwrap_or(u64::MAX)
}

/// Writes the chunks in order and, with `sync`, makes them durable. A segment's first write is
/// issued only after every older segment with unsynced writes is durable, so a crash (or a failed
/// sync, after which Linux drops the unsynced pages) can never keep a newer segment's records
/// while losing an older one's: the log on disk stays a prefix.
fn write_and_sync(chunks: &[Chunk], targets: &mut Vec<SyncTarget>, sync: bool) -> Result<()> {
    for chunk in chunks {
        let older_unsynced = targets.iter().any(|t| t.0 < chunk.segment_id);
        if older_unsynced {
            for (_, file, path) in targets.iter() {
                file.sync_data()
                    .map_err(|e| Error::io("sync_data", path.as_ref(), e))?;
            }
            targets.clear();
        }
        chunk
            .file
            .write_at(chunk.offset, &chunk.bytes)
            .map_err(|e| Error::io("write_at", chunk.path.as_ref(), e))?;
        if !targets.iter().any(|t| t.0 == chunk.segment_id) {
            targets.push((
                chunk.segment_id,
                Arc::clone(&chunk.file),
                Arc::clone(&chunk.path),
            ));
        }
    }
    if sync {
        targets.sort_by_key(|t| t.0);
        for (_, file, path) in targets.iter() {
            file.sync_data()
                .map_err(|e| Error::io("sync_data", path.as_ref(), e))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::sim::{CrashMode, SimStorage};
    use crate::wal::Wal;
    use crate::RecordKind;

    fn chunk(sim: &SimStorage, id: u64, bytes: &[u8]) -> Chunk {
        let path = Path::new("/w").join(segment::file_name(SegmentId(id)));
        let file = sim.create(&path).expect("create");
        Chunk {
            segment_id: SegmentId(id),
            file,
            path: Arc::from(path),
            offset: 0,
            bytes: bytes.to_vec(),
        }
    }

    #[test]
    fn sync_average_starts_at_the_first_sample_and_moves_an_eighth() {
        assert_eq!(average(0, 80_000), 80_000);
        assert_eq!(average(80_000, 160_000), 90_000);
        assert_eq!(average(80_000, 0), 70_000);
        assert_eq!(average(1, 0), 1, "never back to 0 (0 means unmeasured)");
        assert_eq!(average(u64::MAX, u64::MAX), u64::MAX);
    }

    #[test]
    fn newer_segment_written_only_after_older_is_durable() {
        let sim = SimStorage::new();
        sim.sync_dir(Path::new("/w")).expect("sync dir");
        let old = chunk(&sim, 1, b"old-segment-bytes");
        let mut targets = Vec::new();
        write_and_sync(std::slice::from_ref(&old), &mut targets, false).expect("write");
        assert_eq!(targets.len(), 1, "old segment left unsynced");
        let new = chunk(&sim, 2, b"new-segment-bytes");
        sim.sync_dir(Path::new("/w")).expect("sync dir");
        write_and_sync(std::slice::from_ref(&new), &mut targets, false).expect("write");
        // Whatever survives a crash now, the old segment's bytes are durable.
        let image = sim.crash(CrashMode::DropUnsynced);
        assert_eq!(
            image.file_bytes(&old.path).expect("old"),
            b"old-segment-bytes"
        );
        assert_eq!(image.file_bytes(&new.path).expect("new"), b"");
        assert_eq!(targets.len(), 1);
        assert_eq!(targets[0].0, SegmentId(2));
    }

    fn wal(durability: Durability, commit_spin_us_max: u64) -> Wal {
        let options = WalOptions {
            segment_size_bytes: 64 * 1024,
            background_preparation: false,
            durability,
            commit_spin_us_max,
            ..WalOptions::default()
        };
        let (wal, _) =
            Wal::open_with_storage(Arc::new(SimStorage::new()), Path::new("/s"), options)
                .expect("open");
        wal
    }

    /// Buffers one record (not written) and sets the running average sync to `avg_ns`:
    /// returns its LSN. The spin is then decided by the options and that average alone.
    fn pending(wal: &Wal, avg_ns: u64) -> u64 {
        let kind = RecordKind::new(1).expect("kind");
        let lsn = wal.enqueue(kind, b"pending").expect("enqueue").0;
        wal.inner.state.lock().sync_ns_avg = avg_ns;
        lsn
    }

    fn spin(wal: &Wal, target: u64) -> (u64, u64) {
        let mut state = wal.inner.state.lock();
        wal.inner.spin_until_durable(&mut state, target);
        (state.spins_count, state.spin_hits_count)
    }

    #[test]
    fn a_spin_whose_records_never_become_durable_ends_at_its_bound() {
        let wal = wal(Durability::GroupCommit, 200);
        let target = pending(&wal, 20_000);
        // Nobody syncs: the spin ends by its bound (30 µs) and the caller would then sleep.
        assert_eq!(spin(&wal, target), (1, 0));
    }

    #[test]
    fn a_spin_sees_a_published_durable_lsn_or_poison() {
        let wal = wal(Durability::GroupCommit, 200);
        let target = pending(&wal, 20_000);
        wal.inner.durable_hint.store(target, Ordering::Release);
        assert_eq!(spin(&wal, target), (1, 1));
        wal.inner.durable_hint.store(0, Ordering::Release);
        wal.inner.poisoned_hint.store(true, Ordering::Release);
        assert_eq!(
            spin(&wal, target),
            (2, 2),
            "a poisoned log ends the spin at once"
        );
    }

    #[test]
    fn no_spin_when_off_unmeasured_slow_or_not_group_commit() {
        for (durability, spin_us, avg_ns) in [
            (Durability::GroupCommit, 0, 20_000),
            (Durability::GroupCommit, 200, 0),
            (Durability::GroupCommit, 200, 200_001),
            (Durability::PerCommit, 200, 20_000),
            (Durability::NoSync, 200, 20_000),
        ] {
            let wal = wal(durability, spin_us);
            let target = pending(&wal, avg_ns);
            assert_eq!(
                spin(&wal, target),
                (0, 0),
                "{durability:?}, spin {spin_us} us, average sync {avg_ns} ns"
            );
        }
    }

    #[test]
    fn no_spin_past_the_spinners_budget_and_a_spin_returns_its_place() {
        let wal = wal(Durability::GroupCommit, 200);
        let target = pending(&wal, 20_000);
        // Every place taken by other spinners: this committer goes to sleep without spinning.
        wal.inner.state.lock().spinning_count = commit_spinners_max();
        assert_eq!(spin(&wal, target), (0, 0));
        assert_eq!(wal.inner.state.lock().spinning_count, commit_spinners_max());
        // One place free: it spins (to its bound, nobody syncs) and gives the place back.
        wal.inner.state.lock().spinning_count = commit_spinners_max() - 1;
        assert_eq!(spin(&wal, target), (1, 0));
        assert_eq!(
            wal.inner.state.lock().spinning_count,
            commit_spinners_max() - 1
        );
        assert!(
            commit_spinners_max() >= 1,
            "a lone committer may always spin"
        );
    }

    #[test]
    fn a_spin_past_the_limit_is_refused() {
        let options = WalOptions {
            commit_spin_us_max: crate::limits::COMMIT_SPIN_US_LIMIT + 1,
            ..WalOptions::default()
        };
        let error = Wal::open_with_storage(Arc::new(SimStorage::new()), Path::new("/s"), options)
            .expect_err("refused");
        assert!(
            matches!(
                error,
                crate::Error::InvalidOptions {
                    field: "commit_spin_us_max",
                    ..
                }
            ),
            "{error:?}"
        );
    }
}
