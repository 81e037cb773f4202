//! A quick performance probe (the criterion benches live in `benches/`): raw write+fdatasync
//! rate on a zero-filled file, the WAL's durable append rate with 1 and 16 writers, and the
//! open-to-ready time of a log of one million 100-byte records.
//!
//! Run: `cargo run --release -p statelog-wal --example probe -- [DIR]`

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

fn wal_rate(dir: &Path, threads: usize) -> (f64, u64) {
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
                let mut count = 0u64;
                while started.elapsed() < RUN {
                    wal.append(kind, &payload).expect("append");
                    count += 1;
                }
                count
            })
        })
        .collect();
    let total: u64 = handles.into_iter().map(|h| h.join().expect("thread")).sum();
    let rate = total as f64 / started.elapsed().as_secs_f64();
    let syncs = wal.stats().syncs_count;
    drop(wal);
    let _ = std::fs::remove_dir_all(&dir);
    (rate, syncs)
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
        let (rate, syncs) = wal_rate(&dir, threads);
        println!(
            "wal {threads:>2} writers: {rate:.0} appends/s ({syncs} syncs; {:.2}x raw fdatasync; minimal group-commit loop {reference:.0}/s -> {:.2}x)",
            rate / raw,
            rate / reference
        );
    }
    let (open, scan, bytes) = recovery(&dir);
    println!(
        "1M x 100 B: open-to-ready {open:?} ({:.2} GB/s), full scan {scan:?}",
        bytes as f64 / open.as_secs_f64() / 1e9
    );
}
