//! Redrive and compaction figures (plain timing, printed as `FIGURE name: value` lines):
//! - redrive of an execution with a ~24,000-event history until `ExecutionRedriven` is durable
//!   (group commit, fdatasync), median and max of several runs;
//! - compaction throughput (bytes of segments scanned per second) next to a plain copy of the
//!   same bytes with an fsync, in the same run;
//! - p99 latency of concurrent appends (executions started by another thread) without and while
//!   compactions run.
//!
//! The compaction figures are taken over three rounds (medians printed last); the append p99
//! baseline is sampled right before and right after each compaction. `FIGURE slow_appends`
//! lists the appends slower than twice that p99 by phase (from the progress callbacks): `start`
//! (before the first segment scanned), `copy`, `end` (last segment, COMMIT, removal of the old
//! segments) and `index` (the store's index update after the WAL's step).
//!
//! Run: `cargo bench --bench redrive`. `STATELOG_BENCH_QUICK=1` shrinks the compaction log and
//! runs one round; `STATELOG_BENCH_ONLY=redrive|throughput|p99` runs one part and
//! `STATELOG_BENCH_ROUNDS=N` sets the rounds of the compaction parts.
//! `STATELOG_BENCH_ONLY=removal` runs only a diagnostic of the file system, without the log:
//! an append's fdatasync while 55 files of 1 MiB are removed, against while they are renamed
//! or shrunk in durable steps of 256 KiB before removal.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use statelog::clock::ManualClock;
use statelog::engine::{Engine, EngineOptions};
use statelog_wal::Durability;

const DAY_MS: u64 = 24 * 3600 * 1000;
const START_MS: u64 = 1_704_067_200_000;

fn engine(dir: &Path, clock: &ManualClock, segment_size_bytes: u64) -> Engine {
    let options = EngineOptions {
        clock: Arc::new(clock.clone()),
        background_timers: false,
        durability: Durability::GroupCommit,
        segment_size_bytes,
        ..EngineOptions::default()
    };
    Engine::open(dir, options).expect("engine opens")
}

/// A Map of `items` Pass iterations (4 events each), then a Fail state.
fn big_failure(items: usize) -> (String, String) {
    let definition = r#"{
      "StartAt": "Spin",
      "States": {
        "Spin": {"Type": "Map", "ResultPath": null,
                 "ItemProcessor": {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}},
                 "Next": "Stop"},
        "Stop": {"Type": "Fail", "Error": "Done", "Cause": "by design"}
      }
    }"#;
    let input = serde_json::to_string(&(0..items).collect::<Vec<_>>()).expect("json");
    (definition.to_string(), input)
}

fn redrive_latency() {
    let dir = tempfile::tempdir().expect("dir");
    let clock = ManualClock::new(START_MS);
    let engine = engine(dir.path(), &clock, 64 << 20);
    let (definition, input) = big_failure(5_998);
    engine
        .create_state_machine("big", &definition, None)
        .expect("creates");
    let mut times = Vec::new();
    let mut events = 0;
    for run in 0..7 {
        let arn = engine
            .start_execution("big", Some(&format!("r{run}")), &input)
            .expect("starts")
            .execution_arn;
        events = engine.describe_execution(&arn).expect("d").event_count;
        let started = Instant::now();
        engine.redrive_execution(&arn, None).expect("redrives");
        times.push(started.elapsed());
    }
    times.sort();
    println!(
        "FIGURE redrive_ready_ms ({events} events, median of 7): {:.2}",
        times[3].as_secs_f64() * 1e3
    );
    println!(
        "FIGURE redrive_ready_ms_max ({events} events): {:.2}",
        times[6].as_secs_f64() * 1e3
    );
}

const CHAIN: &str = r#"{
  "StartAt": "One",
  "States": {
    "One": {"Type": "Pass", "Result": {"pad": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}, "ResultPath": "$.one", "Next": "Two"},
    "Two": {"Type": "Pass", "End": true}
  }
}"#;
const WAIT: &str =
    r#"{"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 25920000, "End": true}}}"#;

fn dir_size_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .expect("lists")
        .filter_map(Result::ok)
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

fn fill(engine: &Engine, prefix: &str, count: usize) {
    for i in 0..count {
        if i % 10 == 0 {
            engine
                .start_execution("wait", Some(&format!("{prefix}w{i}")), "{}")
                .expect("starts");
        }
        engine
            .start_execution("chain", Some(&format!("{prefix}{i}")), "{}")
            .expect("starts");
    }
}

/// One compaction of a fresh log; returns (compaction bytes/s, plain copy bytes/s).
fn compaction_throughput(quick: bool) -> (f64, f64) {
    let dir = tempfile::tempdir().expect("dir");
    let clock = ManualClock::new(START_MS);
    let segment = 1u64 << 20;
    let engine = {
        let options = EngineOptions {
            clock: Arc::new(clock.clone()),
            background_timers: false,
            durability: Durability::NoSync,
            segment_size_bytes: segment,
            ..EngineOptions::default()
        };
        Engine::open(dir.path(), options).expect("opens")
    };
    engine
        .create_state_machine("chain", CHAIN, None)
        .expect("creates");
    engine
        .create_state_machine("wait", WAIT, None)
        .expect("creates");
    let count = if quick { 20_000 } else { 60_000 };
    fill(&engine, "old", count);
    clock.advance_ms(100 * DAY_MS);
    fill(&engine, "new", 100);
    drop(engine);
    let engine = engine_at(dir.path(), &clock, segment);
    let scanned: u64 = {
        let size = dir_size_bytes(dir.path());
        size.saturating_sub(2 * segment)
    };
    let started = Instant::now();
    let report = engine.compact().expect("compacts");
    let elapsed = started.elapsed();
    let scanned_bytes = report.segments_scanned_count * segment;
    println!(
        "FIGURE compaction: {} segments scanned, {} deleted, {} records copied, {} bytes reclaimed in {:.1} ms",
        report.segments_scanned_count,
        report.segments_deleted_count,
        report.records_copied_count,
        report.bytes_reclaimed(),
        elapsed.as_secs_f64() * 1e3
    );
    let compaction_bytes_per_s = scanned_bytes as f64 / elapsed.as_secs_f64();
    println!("FIGURE compaction_bytes_per_s: {compaction_bytes_per_s:.0}");
    // The yardstick: copy the same number of bytes to a new file and fsync it.
    let copy_dir = tempfile::tempdir().expect("dir");
    let data = vec![0x5au8; scanned.max(scanned_bytes) as usize];
    let started = Instant::now();
    {
        use std::io::Write;
        let mut file = std::fs::File::create(copy_dir.path().join("copy")).expect("creates");
        file.write_all(&data).expect("writes");
        file.sync_all().expect("syncs");
    }
    let copy_elapsed = started.elapsed();
    let copy_bytes_per_s = data.len() as f64 / copy_elapsed.as_secs_f64();
    println!("FIGURE plain_copy_bytes_per_s: {copy_bytes_per_s:.0}");
    (compaction_bytes_per_s, copy_bytes_per_s)
}

/// fsyncs every file in `dir` and the directory itself.
fn sync_files(dir: &Path) {
    for entry in std::fs::read_dir(dir)
        .expect("lists")
        .filter_map(Result::ok)
    {
        if entry.file_type().is_ok_and(|t| t.is_file()) {
            std::fs::File::open(entry.path())
                .and_then(|f| f.sync_all())
                .expect("syncs");
        }
    }
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .expect("syncs the directory");
}

/// The highest segment id among the files of `dir` (segment files are named by their id).
fn segment_id_max(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .expect("lists")
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let digits: String = name.chars().take_while(char::is_ascii_digit).collect();
            (digits.len() == 20)
                .then(|| digits.parse::<u64>().ok())
                .flatten()
        })
        .max()
        .unwrap_or(0)
}

fn engine_at(dir: &Path, clock: &ManualClock, segment: u64) -> Engine {
    engine(dir, clock, segment)
}

fn percentile(mut samples: Vec<Duration>, p: f64) -> Duration {
    samples.sort();
    let index = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[index]
}

/// One compaction with appends running next to it; returns p99 during / p99 without (the
/// baseline is sampled right before and right after the compaction, so load drift on a shared
/// machine weighs on both sides alike). `None` when no append overlapped the compaction.
fn append_p99_while_compacting(quick: bool) -> Option<f64> {
    let dir = tempfile::tempdir().expect("dir");
    let clock = ManualClock::new(START_MS);
    let segment = 1u64 << 20;
    {
        let options = EngineOptions {
            clock: Arc::new(clock.clone()),
            background_timers: false,
            durability: Durability::NoSync,
            segment_size_bytes: segment,
            ..EngineOptions::default()
        };
        let filler = Engine::open(dir.path(), options).expect("opens");
        filler
            .create_state_machine("chain", CHAIN, None)
            .expect("creates");
        filler
            .create_state_machine("wait", WAIT, None)
            .expect("creates");
        fill(&filler, "old", if quick { 20_000 } else { 60_000 });
        filler.compact().expect("no-op");
    }
    // The fill ran without syncs: make its segments durable first, as a server's group commits
    // would have, so the kernel's writeback of its ~55 MiB of dirty pages cannot land inside
    // the measurement.
    sync_files(dir.path());
    clock.advance_ms(100 * DAY_MS);
    let engine = engine(dir.path(), &clock, segment);
    let sample = |engine: &Engine, tag: &str, i: usize| -> (Instant, Duration) {
        let started = Instant::now();
        engine
            .start_execution("chain", Some(&format!("{tag}{i}")), "{}")
            .expect("starts");
        (started, started.elapsed())
    };
    let mut baseline: Vec<Duration> = (0..1_000).map(|i| sample(&engine, "b", i).1).collect();
    let done = Arc::new(AtomicBool::new(false));
    let id_before = segment_id_max(dir.path());
    let compaction = {
        let engine = engine.clone();
        let done = done.clone();
        std::thread::spawn(move || {
            let started = Instant::now();
            // When the first and the last "segment scanned" progress came (the copy phase
            // lies between; the COMMIT and the removal of the old segments come after).
            let mut scanned_at: Option<(Instant, Instant)> = None;
            // When the WAL's step ended (old segments removed); the store's index update
            // comes after.
            let mut step_end: Option<Instant> = None;
            let report = engine
                .compact_with_progress(|p| {
                    let now = Instant::now();
                    if p.segments_deleted_count == 0 {
                        scanned_at = Some(scanned_at.map_or((now, now), |(first, _)| (first, now)));
                    } else {
                        step_end = Some(now);
                    }
                })
                .expect("compacts");
            let ended = Instant::now();
            done.store(true, Ordering::SeqCst);
            (started, ended, report, scanned_at, step_end)
        })
    };
    let mut during = Vec::new();
    let mut i = 0;
    while !done.load(Ordering::SeqCst) {
        during.push(sample(&engine, "d", i));
        i += 1;
    }
    let (from, to, report, scanned_at, step_end) = compaction.join().expect("joins");
    // Segment ids handed out during the compaction (rotations into ready segments, segments
    // prepared or recycled): each new id is a zero-filled or a recycled file.
    println!(
        "FIGURE segment_ids_during_compaction: {}",
        segment_id_max(dir.path()).saturating_sub(id_before)
    );
    let step_end = step_end.unwrap_or(to);
    baseline.extend((1_000..2_000).map(|i| sample(&engine, "b", i).1));
    let inside: Vec<(Instant, Duration)> = during
        .into_iter()
        .filter(|(at, _)| *at >= from && *at <= to)
        .collect();
    let p99_base = percentile(baseline, 0.99);
    // Where the appends slower than twice the p99 without compaction started: before the
    // first segment was scanned (choosing the executions, the first segment), during the copy,
    // or after the last "segment scanned" (last segment, COMMIT, removal of old segments).
    let (scan_first, scan_last) = scanned_at.unwrap_or((to, to));
    let slow: Vec<String> = inside
        .iter()
        .filter(|(_, d)| *d > p99_base * 2)
        .map(|(at, d)| {
            let phase = if *at < scan_first {
                "start"
            } else if *at <= scan_last {
                "copy"
            } else if *at <= step_end {
                "end"
            } else {
                "index"
            };
            format!(
                "{phase}@{:.1}ms:{:.0}us",
                (*at - from).as_secs_f64() * 1e3,
                d.as_secs_f64() * 1e6
            )
        })
        .collect();
    println!(
        "FIGURE slow_appends (> 2x p99 without; copy phase {:.1}-{:.1} ms, step end {:.1} ms): {}",
        (scan_first - from).as_secs_f64() * 1e3,
        (scan_last - from).as_secs_f64() * 1e3,
        (step_end - from).as_secs_f64() * 1e3,
        slow.join(" ")
    );
    let inside: Vec<Duration> = inside.into_iter().map(|(_, d)| d).collect();
    println!(
        "FIGURE append_p99_us_without_compaction (1000 appends before + 1000 after): {:.0}",
        p99_base.as_secs_f64() * 1e6
    );
    if inside.is_empty() {
        println!("FIGURE append_p99_us_while_compacting: no append overlapped the compaction");
        return None;
    }
    let n = inside.len();
    let p99_during = percentile(inside, 0.99);
    println!(
        "FIGURE append_p99_us_while_compacting ({n} appends during a {:.0} ms compaction: {} segments deleted, {} records copied): {:.0}",
        (to - from).as_secs_f64() * 1e3,
        report.segments_deleted_count,
        report.records_copied_count,
        p99_during.as_secs_f64() * 1e6
    );
    let ratio = p99_during.as_secs_f64() / p99_base.as_secs_f64();
    println!("FIGURE append_p99_ratio: {ratio:.2}");
    Some(ratio)
}

/// How a file system takes the removal of old segments, without the log: one thread writes
/// 900 bytes and fdatasyncs in a loop (an append) over a preallocated, zero-filled file, while
/// another removes (or, to compare, renames) `count` files of 1 MiB that were written and
/// synced before, then syncs the directory. Prints the writer's fdatasync p50/p99 before and
/// during, and how long the removals and the directory sync took.
fn removal_probe(count: usize) {
    use std::os::unix::fs::FileExt;
    let dir = tempfile::tempdir().expect("dir");
    let log_size_bytes = 64u64 << 20;
    let log = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(dir.path().join("log"))
        .expect("creates");
    log.write_all_at(&vec![0u8; log_size_bytes as usize], 0)
        .expect("fills");
    log.sync_all().expect("syncs");
    let sync_dir = |dir: &Path| {
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .expect("syncs the directory");
    };
    for mode in ["remove", "shrink", "punch", "remove", "shrink", "punch"] {
        let olds = dir.path().join("old");
        std::fs::create_dir_all(&olds).expect("creates");
        let block = vec![0x5au8; 1 << 20];
        for i in 0..count {
            std::fs::write(olds.join(format!("{i:05}")), &block).expect("writes");
        }
        sync_files(&olds);
        let record = [b'x'; 900];
        let mut offset = 0u64;
        let mut append = |log: &std::fs::File| -> Duration {
            let started = Instant::now();
            log.write_at(&record, offset).expect("writes");
            log.sync_data().expect("syncs");
            offset = (offset + 1024) % log_size_bytes;
            started.elapsed()
        };
        let before: Vec<Duration> = (0..500).map(|_| append(&log)).collect();
        let done = Arc::new(AtomicBool::new(false));
        let remover = {
            let done = done.clone();
            let olds = olds.clone();
            std::thread::spawn(move || {
                let started = Instant::now();
                for i in 0..count {
                    let path = olds.join(format!("{i:05}"));
                    if mode == "remove" {
                        std::fs::remove_file(&path).expect("removes");
                    } else if mode == "shrink" {
                        // In steps of 256 KiB, each made durable, then the empty file.
                        let file = std::fs::OpenOptions::new()
                            .write(true)
                            .open(&path)
                            .expect("opens");
                        for len in [768u64 << 10, 512 << 10, 256 << 10, 0] {
                            file.set_len(len).expect("shrinks");
                            file.sync_data().expect("syncs");
                        }
                        std::fs::remove_file(&path).expect("removes");
                    } else if mode == "punch" {
                        // Holes of 256 KiB, each made durable, then the removal.
                        use std::os::fd::AsRawFd;
                        let file = std::fs::OpenOptions::new()
                            .write(true)
                            .open(&path)
                            .expect("opens");
                        for start in (0..4i64).map(|k| k * (256 << 10)) {
                            // SAFETY: plain integers on an fd this closure owns.
                            let result = unsafe {
                                libc::fallocate(
                                    file.as_raw_fd(),
                                    libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                                    start,
                                    256 << 10,
                                )
                            };
                            assert_eq!(result, 0, "punches a hole");
                            file.sync_data().expect("syncs");
                        }
                        std::fs::remove_file(&path).expect("removes");
                    } else {
                        std::fs::rename(&path, olds.join(format!("r{i:05}"))).expect("renames");
                    }
                }
                let removed = started.elapsed();
                sync_dir(&olds);
                done.store(true, Ordering::SeqCst);
                (removed, started.elapsed() - removed)
            })
        };
        let mut during = Vec::new();
        while !done.load(Ordering::SeqCst) {
            during.push(append(&log));
        }
        let (removed, dir_sync) = remover.join().expect("joins");
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        let n = during.len();
        println!(
            "FIGURE removal_probe {mode} {count} x 1 MiB: {:.1} ms, directory sync {:.2} ms; append fdatasync p50/p99 before {:.0}/{:.0} us, during {:.0}/{:.0} us ({n} appends)",
            removed.as_secs_f64() * 1e3,
            dir_sync.as_secs_f64() * 1e3,
            us(percentile(before.clone(), 0.5)),
            us(percentile(before, 0.99)),
            us(percentile(during.clone(), 0.5)),
            us(percentile(during, 0.99)),
        );
        std::fs::remove_dir_all(&olds).expect("cleans");
        sync_dir(dir.path());
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is read.
    let quick = std::env::var_os("STATELOG_BENCH_QUICK").is_some();
    // `STATELOG_BENCH_ONLY=redrive|throughput|p99` runs one part; `STATELOG_BENCH_ROUNDS=N`
    // sets the rounds of the compaction parts.
    let only = std::env::var("STATELOG_BENCH_ONLY").ok();
    let runs = |part: &str| only.as_deref().map_or(true, |o| o == part);
    if runs("redrive") {
        redrive_latency();
    }
    // Three rounds each (one when quick): a shared machine's load moves between rounds.
    let rounds = std::env::var("STATELOG_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(if quick { 1 } else { 3 });
    if runs("throughput") {
        let (compaction, copy): (Vec<f64>, Vec<f64>) =
            (0..rounds).map(|_| compaction_throughput(quick)).unzip();
        println!(
            "FIGURE compaction_bytes_per_s_median ({rounds} rounds): {:.0} (plain copy median {:.0})",
            median(compaction),
            median(copy)
        );
    }
    // Not part of a plain run: a diagnostic of the file system (`STATELOG_BENCH_ONLY=removal`).
    if only.as_deref() == Some("removal") {
        removal_probe(55);
    }
    if runs("p99") {
        let ratios: Vec<f64> = (0..rounds)
            .filter_map(|_| append_p99_while_compacting(quick))
            .collect();
        println!(
            "FIGURE append_p99_ratio_median ({} rounds): {:.2}",
            ratios.len(),
            median(ratios)
        );
    }
}
