//! The commit gather of group commit (`WalOptions::commit_gather_us_max`): a lone writer never
//! gathers; a leader that expects the committers of the previous sync back waits for them (or
//! for its bound) and then commits everything buffered; a gather that times out still commits;
//! concurrent closed-loop writers share syncs and every acknowledged record survives a crash;
//! a compaction running beside gathering appenders finishes. Timing never decides an
//! assertion here: the counters (`WalStats::gathers_count`, `gather_timeouts_count`,
//! `syncs_count`) are checked through relations that hold whichever way a race goes.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use std::sync::{Arc, Barrier, Condvar, Mutex};

use statelog_wal::storage::sim::{CrashMode, SimStorage};
use statelog_wal::{Durability, Lsn, RecordKind, Storage, StorageFile, Wal, WalOptions, WalStats};

const DIR: &str = "/gather";

fn kind() -> RecordKind {
    RecordKind::new(1).expect("kind 1 is a caller kind")
}

fn options(durability: Durability) -> WalOptions {
    WalOptions {
        segment_size_bytes: 1024 * 1024,
        durability,
        background_preparation: false,
        ..WalOptions::default()
    }
}

fn open(storage: Arc<dyn Storage>, options: WalOptions) -> Wal {
    let (wal, _) = Wal::open_with_storage(storage, Path::new(DIR), options).expect("open");
    wal.prepare_segments().expect("prepare a ready segment");
    wal
}

/// Every record of the log after a crash that drops everything unsynced.
fn records_after_crash(sim: &SimStorage) -> BTreeMap<u64, Vec<u8>> {
    let image: Arc<dyn Storage> = Arc::new(sim.crash(CrashMode::DropUnsynced));
    let (wal, _) = Wal::open_with_storage(image, Path::new(DIR), options(Durability::GroupCommit))
        .expect("reopen after crash");
    wal.iter_from(Lsn(1))
        .expect("iter")
        .map(|r| r.map(|r| (r.lsn.0, r.payload)).expect("record"))
        .collect()
}

fn body(thread: usize, index: usize) -> Vec<u8> {
    format!("writer-{thread}-append-{index}").into_bytes()
}

#[test]
fn one_writer_never_gathers_nor_spins() {
    let sim = Arc::new(SimStorage::new());
    let wal = open(sim.clone(), options(Durability::GroupCommit));
    for index in 0..200 {
        wal.append(kind(), &body(0, index)).expect("append");
    }
    let stats = wal.stats();
    assert_eq!(stats.gathers_count, 0, "{stats:?}");
    assert_eq!(stats.gather_timeouts_count, 0, "{stats:?}");
    assert_eq!(
        stats.spins_count, 0,
        "no other committer to wait for: {stats:?}"
    );
    assert_eq!(
        stats.syncs_count, 200,
        "a lone writer syncs itself: {stats:?}"
    );
    assert_eq!(records_after_crash(&sim).len(), 200);
}

/// One sync covering two batches makes the next leader expect two arrivals; only one comes.
fn release_two_then_append_one(wal: &Wal) -> Lsn {
    wal.enqueue(kind(), b"first").expect("enqueue");
    let second = wal.enqueue(kind(), b"second").expect("enqueue");
    wal.wait_durable(second).expect("one commit covers both");
    wal.append(kind(), b"third").expect("append")
}

#[test]
fn a_gather_whose_committer_never_comes_times_out_and_commits() {
    let sim = Arc::new(SimStorage::new());
    let wal = open(sim.clone(), options(Durability::GroupCommit));
    let third = release_two_then_append_one(&wal);
    let stats = wal.stats();
    assert_eq!(stats.gathers_count, 1, "{stats:?}");
    assert_eq!(stats.gather_timeouts_count, 1, "{stats:?}");
    assert_eq!(stats.syncs_count, 2, "{stats:?}");
    assert_eq!(stats.durable_lsn, third);
    let records = records_after_crash(&sim);
    assert_eq!(
        records.get(&third.0).map(Vec::as_slice),
        Some(&b"third"[..])
    );
    assert_eq!(records.len(), 3);
}

#[test]
fn no_gather_when_turned_off_or_not_group_commit() {
    let off = WalOptions {
        commit_gather_us_max: 0,
        ..options(Durability::GroupCommit)
    };
    for options in [
        off,
        options(Durability::PerCommit),
        options(Durability::NoSync),
    ] {
        let wal = open(Arc::new(SimStorage::new()), options.clone());
        release_two_then_append_one(&wal);
        let stats = wal.stats();
        assert_eq!(stats.gathers_count, 0, "{options:?}: {stats:?}");
        assert_eq!(stats.gather_timeouts_count, 0, "{options:?}: {stats:?}");
    }
}

#[test]
fn a_gather_bound_past_the_limit_is_refused() {
    let options = WalOptions {
        commit_gather_us_max: statelog_wal::limits::COMMIT_GATHER_US_LIMIT + 1,
        ..options(Durability::GroupCommit)
    };
    let error = Wal::open_with_storage(Arc::new(SimStorage::new()), Path::new(DIR), options)
        .expect_err("refused");
    assert!(
        matches!(
            error,
            statelog_wal::Error::InvalidOptions {
                field: "commit_gather_us_max",
                ..
            }
        ),
        "{error:?}"
    );
}

/// A leader gathers for the expected committer; the committer appends while it waits. Either the
/// arrival made the gather (one sync covers both: 2 syncs in all, no timeout) or the gather timed
/// out first: then the arrival either was buffered before the leader's sync (2) or syncs itself
/// (3), and as the lone committer after a one-committer sync it may gather (and time out) once
/// more on a loaded machine. Both records are durable either way.
#[test]
fn an_expected_committer_that_arrives_shares_the_leaders_sync() {
    let sim = Arc::new(SimStorage::new());
    let wal = Arc::new(open(sim.clone(), options(Durability::GroupCommit)));
    wal.enqueue(kind(), b"first").expect("enqueue");
    let second = wal.enqueue(kind(), b"second").expect("enqueue");
    wal.wait_durable(second).expect("one sync covers both");
    let leader = {
        let wal = Arc::clone(&wal);
        std::thread::spawn(move || wal.append(kind(), b"leader").expect("append"))
    };
    while wal.stats().gathers_count == 0 && !leader.is_finished() {
        std::thread::yield_now();
    }
    let arrival = wal.append(kind(), b"arrival").expect("append");
    let leader = leader.join().expect("leader thread");
    let stats = wal.stats();
    assert!((1..=2).contains(&stats.gathers_count), "{stats:?}");
    assert!((2..=3).contains(&stats.syncs_count), "{stats:?}");
    if stats.gather_timeouts_count == 0 {
        assert_eq!(
            (stats.gathers_count, stats.syncs_count),
            (1, 2),
            "a gather that is met saves the arrival's sync: {stats:?}"
        );
    }
    let records = records_after_crash(&sim);
    assert_eq!(
        records.get(&leader.0).map(Vec::as_slice),
        Some(&b"leader"[..])
    );
    assert_eq!(
        records.get(&arrival.0).map(Vec::as_slice),
        Some(&b"arrival"[..])
    );
}

/// A storage whose first `sync_data` after `arm` waits until `arrived` reaches the armed count:
/// the first commit of a round then provably overlaps every other writer's append.
#[derive(Debug)]
struct GatedStorage {
    inner: Arc<SimStorage>,
    gate: Arc<Gate>,
}

#[derive(Debug, Default)]
struct Gate {
    state: Mutex<GateState>,
    cv: Condvar,
}

#[derive(Debug, Default)]
struct GateState {
    armed_for: Option<usize>,
    arrived: usize,
}

impl Gate {
    fn arm(&self, count: usize) {
        let mut state = self.state.lock().expect("gate");
        state.armed_for = Some(count);
        state.arrived = 0;
    }
    fn arrive(&self) {
        let mut state = self.state.lock().expect("gate");
        state.arrived += 1;
        self.cv.notify_all();
    }
    fn pass(&self) {
        let mut state = self.state.lock().expect("gate");
        if let Some(count) = state.armed_for {
            while state.arrived < count {
                state = self.cv.wait(state).expect("gate");
            }
            state.armed_for = None;
        }
    }
}

#[derive(Debug)]
struct GatedFile {
    inner: Arc<dyn StorageFile>,
    gate: Arc<Gate>,
}

impl StorageFile for GatedFile {
    fn write_at(&self, offset_bytes: u64, buf: &[u8]) -> io::Result<()> {
        self.inner.write_at(offset_bytes, buf)
    }
    fn read_at(&self, offset_bytes: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read_at(offset_bytes, buf)
    }
    fn set_len(&self, len_bytes: u64) -> io::Result<()> {
        self.inner.set_len(len_bytes)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.gate.pass();
        self.inner.sync_data()
    }
    fn sync_all(&self) -> io::Result<()> {
        self.inner.sync_all()
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn map(&self) -> io::Result<statelog_wal::Mapping> {
        self.inner.map()
    }
}

impl GatedStorage {
    fn wrap(&self, file: Arc<dyn StorageFile>) -> Arc<dyn StorageFile> {
        Arc::new(GatedFile {
            inner: file,
            gate: Arc::clone(&self.gate),
        })
    }
}

impl Storage for GatedStorage {
    fn create(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>> {
        Ok(self.wrap(self.inner.create(path)?))
    }
    fn open(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>> {
        Ok(self.wrap(self.inner.open(path)?))
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.inner.remove(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.sync_dir(dir)
    }
}

/// 8 writers released by a barrier run a closed loop of 50 commits each. Their first commits
/// overlap by construction (the first sync waits until all 8 have appended), so fewer syncs
/// than commits is certain; every acknowledged record is then found intact after a crash.
#[test]
fn barrier_released_writers_share_syncs_and_lose_nothing() {
    const WRITERS: usize = 8;
    const COMMITS_PER_WRITER: usize = 50;
    let sim = Arc::new(SimStorage::new());
    let gate = Arc::new(Gate::default());
    let storage = Arc::new(GatedStorage {
        inner: sim.clone(),
        gate: Arc::clone(&gate),
    });
    let wal = Arc::new(open(storage, options(Durability::GroupCommit)));
    gate.arm(WRITERS);
    let barrier = Arc::new(Barrier::new(WRITERS));
    let threads: Vec<_> = (0..WRITERS)
        .map(|thread| {
            let wal = Arc::clone(&wal);
            let barrier = Arc::clone(&barrier);
            let gate = Arc::clone(&gate);
            std::thread::spawn(move || {
                barrier.wait();
                let mut acked = Vec::new();
                let first = wal.enqueue(kind(), &body(thread, 0)).expect("enqueue");
                gate.arrive();
                wal.wait_durable(first).expect("wait_durable");
                acked.push((first.0, body(thread, 0)));
                for index in 1..COMMITS_PER_WRITER {
                    let lsn = wal.append(kind(), &body(thread, index)).expect("append");
                    acked.push((lsn.0, body(thread, index)));
                }
                acked
            })
        })
        .collect();
    let acked: BTreeMap<u64, Vec<u8>> = threads
        .into_iter()
        .flat_map(|t| t.join().expect("writer thread"))
        .collect();
    let commits = (WRITERS * COMMITS_PER_WRITER) as u64;
    assert_eq!(acked.len() as u64, commits, "distinct LSNs");
    let stats: WalStats = wal.stats();
    assert!(
        stats.syncs_count < commits,
        "{} syncs for {commits} commits: {stats:?}",
        stats.syncs_count
    );
    assert!(
        stats.gather_timeouts_count <= stats.gathers_count,
        "{stats:?}"
    );
    let records = records_after_crash(&sim);
    for (lsn, payload) in &acked {
        assert_eq!(records.get(lsn), Some(payload), "acknowledged LSN {lsn}");
    }
    assert_eq!(records.len() as u64, commits, "nothing invented");
}

/// Appenders commit (and gather) while a compaction copies records forward and gives way to
/// them: both finish (a deadlock would hang the test) and every acknowledged record is still
/// there (at its own LSN or, moved by compaction, as a copy).
#[test]
fn compaction_beside_gathering_appenders_finishes() {
    const WRITERS: usize = 4;
    const APPENDS_PER_WRITER: usize = 400;
    let sim = Arc::new(SimStorage::new());
    let small = WalOptions {
        segment_size_bytes: 8192,
        ..options(Durability::GroupCommit)
    };
    let wal = Arc::new(open(sim.clone(), small));
    for index in 0..600 {
        wal.append(kind(), &body(99, index)).expect("seed append");
    }
    let threads: Vec<_> = (0..WRITERS)
        .map(|thread| {
            let wal = Arc::clone(&wal);
            std::thread::spawn(move || {
                let mut acked = Vec::new();
                for index in 0..APPENDS_PER_WRITER {
                    let lsn = wal.append(kind(), &body(thread, index)).expect("append");
                    acked.push(lsn);
                }
                acked
            })
        })
        .collect();
    let mut compactions = 0usize;
    while compactions < 3 {
        let segments = wal.segments();
        let Some(cut) = segments.iter().rev().nth(1).map(|s| s.first_lsn) else {
            continue;
        };
        wal.compact_below(cut, |_| true).expect("compact");
        compactions += 1;
    }
    let acked: Vec<Lsn> = threads
        .into_iter()
        .flat_map(|t| t.join().expect("writer thread"))
        .collect();
    assert_eq!(acked.len(), WRITERS * APPENDS_PER_WRITER);
    let payloads: std::collections::HashSet<Vec<u8>> = wal
        .iter_from(Lsn(1))
        .expect("iter")
        .map(|r| r.map(|r| r.payload).expect("record"))
        .collect();
    for thread in 0..WRITERS {
        for index in 0..APPENDS_PER_WRITER {
            assert!(
                payloads.contains(&body(thread, index)),
                "writer {thread} append {index} kept"
            );
        }
    }
}
