//! A quick performance probe (the criterion benches live in `benches/`): raw write+fdatasync
//! rate on a zero-filled file, the WAL's durable append rate with 1 and 16 writers, and the
//! open-to-ready time of a log of one million 100-byte records.
//!
//! Run: `cargo run --release -p statelog-wal --example probe -- [DIR] [recovery|commit|emulated]`
//! (`commit`: the append figures only; `emulated`: 16 writers against a fixed-latency sync on
//! DIR, best a tmpfs, to see what the commit path adds to the disk's latency).

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use statelog_wal::{Durability, Lsn, RecordKind, Wal, WalOptions};

const RUN: Duration = Duration::from_secs(2);

fn raw_fdatasync(dir: &Path) -> f64 {
    let path = dir.join("raw.probe");
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .expect("open");
    file.write_all_at(&vec![0u8; 64 << 20], 0)
        .expect("zero fill");
    file.sync_all().expect("sync");
    let record = [7u8; 116];
    let started = Instant::now();
    let mut count = 0u64;
    while started.elapsed() < RUN {
        file.write_all_at(&record, count * 116).expect("write");
        file.sync_data().expect("fdatasync");
        count += 1;
    }
    let rate = count as f64 / started.elapsed().as_secs_f64();
    drop(file);
    let _ = std::fs::remove_file(&path);
    rate
}

/// The reference: a minimal group-commit loop (one buffer, one leader at a time doing pwrite +
/// fdatasync for everything buffered) on a zero-filled file.
fn minimal_group_commit(dir: &Path, threads: usize) -> f64 {
    use parking_lot::{Condvar, Mutex};
    struct Shared {
        buffer: Vec<u8>,
        buffered_count: u64,
        durable_count: u64,
        offset: u64,
        leader: bool,
    }
    let path = dir.join("gc.probe");
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .expect("open");
    file.write_all_at(&vec![0u8; 64 << 20], 0)
        .expect("zero fill");
    file.sync_all().expect("sync");
    let file = Arc::new(file);
    let shared = Arc::new((
        Mutex::new(Shared {
            buffer: Vec::new(),
            buffered_count: 0,
            durable_count: 0,
            offset: 0,
            leader: false,
        }),
        Condvar::new(),
    ));
    let started = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let shared = Arc::clone(&shared);
            let file = Arc::clone(&file);
            std::thread::spawn(move || {
                let mut count = 0u64;
                let mut spare = Vec::new();
                while started.elapsed() < RUN {
                    let (lock, cv) = &*shared;
                    let mut state = lock.lock();
                    state.buffer.extend_from_slice(&[7u8; 116]);
                    state.buffered_count += 1;
                    let mine = state.buffered_count;
                    while state.durable_count < mine {
                        if state.leader {
                            cv.wait(&mut state);
                            continue;
                        }
                        state.leader = true;
                        std::mem::swap(&mut spare, &mut state.buffer);
                        let upto = state.buffered_count;
                        let offset = state.offset;
                        state.offset += spare.len() as u64;
                        drop(state);
                        file.write_all_at(&spare, offset).expect("write");
                        file.sync_data().expect("fdatasync");
                        spare.clear();
                        state = lock.lock();
                        state.leader = false;
                        state.durable_count = upto;
                        cv.notify_all();
                    }
                    count += 1;
                }
                count
            })
        })
        .collect();
    let total: u64 = handles.into_iter().map(|h| h.join().expect("thread")).sum();
    let rate = total as f64 / started.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(&path);
    rate
}

/// Appends per second, syncs issued, and the median append latency.
fn wal_rate(dir: &Path, threads: usize) -> (f64, u64, Duration) {
    let dir = dir.join(format!("wal-{threads}"));
    let _ = std::fs::remove_dir_all(&dir);
    let options = WalOptions {
        durability: Durability::GroupCommit,
        ..WalOptions::default()
    };
    let (wal, _) = Wal::open(&dir, options).expect("open");
    // Warm up: the first append takes the first segment; then wait until the next one is ready,
    // so the measurement does not include a 64 MiB zero-fill running beside it.
    wal.append(RecordKind::new(1).expect("kind"), b"warm-up")
        .expect("append");
    wal.prepare_segments().expect("prepare");
    let wal = Arc::new(wal);
    let started = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let wal = Arc::clone(&wal);
            std::thread::spawn(move || {
                let payload = [42u8; 100];
                let kind = RecordKind::new(1).expect("kind");
                let mut latencies = Vec::new();
                while started.elapsed() < RUN {
                    let t = Instant::now();
                    wal.append(kind, &payload).expect("append");
                    latencies.push(t.elapsed());
                }
                latencies
            })
        })
        .collect();
    let mut latencies: Vec<Duration> = handles
        .into_iter()
        .flat_map(|h| h.join().expect("thread"))
        .collect();
    latencies.sort();
    let total = latencies.len() as u64;
    let p50 = latencies
        .get(latencies.len() / 2)
        .copied()
        .unwrap_or_default();
    let rate = total as f64 / started.elapsed().as_secs_f64();
    let syncs = wal.stats().syncs_count;
    drop(wal);
    let _ = std::fs::remove_dir_all(&dir);
    (rate, syncs, p50)
}

/// A disk with a fixed sync latency: real files (on tmpfs, where fdatasync costs nothing) whose
/// `sync_data` also sleeps `delay`. With it the 16-writer figures show what the commit path
/// itself adds to the disk (hand-offs, wake-ups) on a machine whose real disk is too noisy.
#[derive(Debug)]
struct SlowSync {
    inner: statelog_wal::FsStorage,
    delay: Duration,
}

#[derive(Debug)]
struct SlowFile {
    inner: Arc<dyn statelog_wal::StorageFile>,
    delay: Duration,
}

impl statelog_wal::Storage for SlowSync {
    fn create(&self, path: &Path) -> std::io::Result<Arc<dyn statelog_wal::StorageFile>> {
        let inner = self.inner.create(path)?;
        Ok(Arc::new(SlowFile {
            inner,
            delay: self.delay,
        }))
    }
    fn open(&self, path: &Path) -> std::io::Result<Arc<dyn statelog_wal::StorageFile>> {
        let inner = self.inner.open(path)?;
        Ok(Arc::new(SlowFile {
            inner,
            delay: self.delay,
        }))
    }
    fn create_dir_all(&self, dir: &Path) -> std::io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn list(&self, dir: &Path) -> std::io::Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &Path) -> std::io::Result<()> {
        self.inner.remove(path)
    }
    fn sync_dir(&self, dir: &Path) -> std::io::Result<()> {
        self.inner.sync_dir(dir)
    }
}

impl statelog_wal::StorageFile for SlowFile {
    fn write_at(&self, offset_bytes: u64, buf: &[u8]) -> std::io::Result<()> {
        self.inner.write_at(offset_bytes, buf)
    }
    fn read_at(&self, offset_bytes: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        self.inner.read_at(offset_bytes, buf)
    }
    fn set_len(&self, len_bytes: u64) -> std::io::Result<()> {
        self.inner.set_len(len_bytes)
    }
    fn sync_data(&self) -> std::io::Result<()> {
        self.inner.sync_data()?;
        std::thread::sleep(self.delay);
        Ok(())
    }
    fn sync_all(&self) -> std::io::Result<()> {
        self.inner.sync_all()
    }
    fn len(&self) -> std::io::Result<u64> {
        self.inner.len()
    }
    fn map(&self) -> std::io::Result<statelog_wal::Mapping> {
        self.inner.map()
    }
}

/// p50 of `pwrite` + `sync_data` (one writer) and of 16 writers' appends on a `SlowSync` disk.
fn emulated(dir: &Path, delay: Duration) {
    let storage = Arc::new(SlowSync {
        inner: statelog_wal::FsStorage::new(),
        delay,
    });
    let raw_path = dir.join("raw.emulated");
    let raw = statelog_wal::Storage::create(storage.as_ref(), &raw_path).expect("create");
    raw.write_at(0, &vec![0u8; 1 << 20]).expect("zero fill");
    let mut raw_latencies = Vec::new();
    let record = [7u8; 116];
    for index in 0..2000u64 {
        let t = Instant::now();
        raw.write_at(index * 116, &record).expect("write");
        raw.sync_data().expect("sync");
        raw_latencies.push(t.elapsed());
    }
    raw_latencies.sort();
    let raw_p50 = raw_latencies[raw_latencies.len() / 2];
    let wal_dir = dir.join("wal-emulated");
    let _ = std::fs::remove_dir_all(&wal_dir);
    let options = WalOptions {
        durability: Durability::GroupCommit,
        background_preparation: false,
        ..WalOptions::default()
    };
    let (wal, _) = Wal::open_with_storage(storage, &wal_dir, options).expect("open");
    wal.append(RecordKind::new(1).expect("kind"), b"warm-up")
        .expect("append");
    wal.prepare_segments().expect("prepare");
    let wal = Arc::new(wal);
    let started = Instant::now();
    let handles: Vec<_> = (0..16)
        .map(|_| {
            let wal = Arc::clone(&wal);
            std::thread::spawn(move || {
                let kind = RecordKind::new(1).expect("kind");
                let mut latencies = Vec::new();
                while started.elapsed() < RUN {
                    let t = Instant::now();
                    wal.append(kind, &[42u8; 100]).expect("append");
                    latencies.push(t.elapsed());
                }
                latencies
            })
        })
        .collect();
    let mut latencies: Vec<Duration> = handles
        .into_iter()
        .flat_map(|h| h.join().expect("thread"))
        .collect();
    let rate = latencies.len() as f64 / started.elapsed().as_secs_f64();
    latencies.sort();
    let p50 = latencies[latencies.len() / 2];
    let syncs = wal.stats().syncs_count;
    println!(
        "sync {delay:?}: raw p50 {raw_p50:?}; wal 16 writers {rate:.0}/s, p50 {p50:?} ({:.2}x raw), {:.1} appends per sync",
        p50.as_secs_f64() / raw_p50.as_secs_f64(),
        latencies.len() as f64 / syncs.max(1) as f64
    );
    drop(wal);
    let _ = std::fs::remove_dir_all(&wal_dir);
    let _ = std::fs::remove_file(&raw_path);
}

/// Time this thread spent on a CPU, from /proc (robust against a loaded machine).
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|text| {
            text.split_whitespace()
                .next()
                .and_then(|field| field.parse().ok())
        })
        .unwrap_or(0)
}

fn recovery(dir: &Path) -> (Duration, Duration, u64) {
    let dir = dir.join("wal-recovery");
    let _ = std::fs::remove_dir_all(&dir);
    let options = WalOptions {
        durability: Durability::NoSync,
        ..WalOptions::default()
    };
    {
        let (wal, _) = Wal::open(&dir, options.clone()).expect("open");
        let payload = [9u8; 100];
        let kind = RecordKind::new(1).expect("kind");
        let batch: Vec<(RecordKind, &[u8])> = (0..1000).map(|_| (kind, &payload[..])).collect();
        for _ in 0..1000 {
            wal.append_batch(&batch).expect("batch");
        }
        wal.sync().expect("sync");
    }
    let options = WalOptions {
        durability: Durability::GroupCommit,
        ..options
    };
    let started = Instant::now();
    let cpu_before = thread_cpu_ns();
    let (wal, report) = Wal::open(&dir, options.clone()).expect("reopen");
    let open = started.elapsed();
    let cpu = thread_cpu_ns().saturating_sub(cpu_before);
    println!("  open: {open:?} wall, {:.1} ms on CPU", cpu as f64 / 1e6);
    let started = Instant::now();
    let mut count = 0u64;
    wal.scan_from(Lsn(1), |_| {
        count += 1;
        std::ops::ControlFlow::Continue(())
    })
    .expect("scan");
    let scan = started.elapsed();
    assert_eq!(report.records_count, 1_000_000);
    assert_eq!(count, 1_000_000);
    let bytes = report.bytes_scanned;
    drop(wal);
    let _ = std::fs::remove_dir_all(&dir);
    (open, scan, bytes)
}

fn main() {
    let dir: PathBuf = std::env::args().nth(1).map_or_else(
        || std::env::temp_dir().join("statelog-probe"),
        PathBuf::from,
    );
    std::fs::create_dir_all(&dir).expect("dir");
    if std::env::args().nth(2).as_deref() == Some("emulated") {
        for delay_us in [100u64, 300, 1000] {
            emulated(&dir, Duration::from_micros(delay_us));
        }
        return;
    }
    if std::env::args().nth(2).as_deref() == Some("recovery") {
        for _ in 0..5 {
            let (open, scan, bytes) = recovery(&dir);
            println!(
                "1M x 100 B: open-to-ready {open:?} ({:.2} GB/s), full scan {scan:?}",
                bytes as f64 / open.as_secs_f64() / 1e9
            );
        }
        return;
    }
    let _ = raw_fdatasync(&dir); // warm-up
    let raw = raw_fdatasync(&dir);
    println!("raw write+fdatasync: {raw:.0}/s");
    for threads in [1usize, 16] {
        let reference = minimal_group_commit(&dir, threads);
        let (rate, syncs, p50) = wal_rate(&dir, threads);
        println!(
            "wal {threads:>2} writers: {rate:.0} appends/s, p50 {p50:?} ({syncs} syncs; {:.2}x raw fdatasync; minimal group-commit loop {reference:.0}/s -> {:.2}x)",
            rate / raw,
            rate / reference
        );
    }
    if std::env::args().nth(2).as_deref() == Some("commit") {
        return;
    }
    let (open, scan, bytes) = recovery(&dir);
    println!(
        "1M x 100 B: open-to-ready {open:?} ({:.2} GB/s), full scan {scan:?}",
        bytes as f64 / open.as_secs_f64() / 1e9
    );
}
