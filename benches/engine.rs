//! Engine benchmarks (criterion): durable state transitions per second with group commit at 1,
//! 100 and 10,000 concurrent executions of a 10-state Pass/Choice machine; the latency of one
//! 10-state Pass chain from start to durable success next to one raw fdatasync measured in the
//! same run; resident bytes per open and per closed execution; recovery of a log holding
//! 1,000,000 events across 10,000 executions; Express against STANDARD executions of a
//! 10-state Pass chain per second, in process, in the same run (group `express`).
//!
//! Run: `cargo bench --bench engine` (figures are printed as `FIGURE name: value` lines as well
//! as criterion's). `STATELOG_BENCH_QUICK=1` shrinks the recovery log to 100,000 events.

use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use statelog::engine::{Engine, EngineOptions, MachineType};
use statelog_wal::Durability;

/// A 10-state machine of Pass and Choice states (10 transitions per execution).
fn pass_choice_machine() -> String {
    let mut states = Vec::new();
    for i in 0..10 {
        let next = if i == 9 {
            r#""End": true"#.to_string()
        } else {
            format!(r#""Next": "S{}""#, i + 1)
        };
        let state = if i % 2 == 1 && i < 9 {
            format!(
                r#""S{i}": {{"Type": "Choice", "Choices": [{{"Variable": "$.n", "NumericGreaterThan": 1000, "Next": "S9"}}], "Default": "S{}"}}"#,
                i + 1
            )
        } else {
            format!(r#""S{i}": {{"Type": "Pass", {next}}}"#)
        };
        states.push(state);
    }
    format!(
        r#"{{"StartAt": "S0", "States": {{{}}}}}"#,
        states.join(", ")
    )
}

/// A chain of `n` Pass states.
fn pass_chain(n: usize) -> String {
    let states: Vec<String> = (0..n)
        .map(|i| {
            if i + 1 == n {
                format!(r#""P{i}": {{"Type": "Pass", "End": true}}"#)
            } else {
                format!(r#""P{i}": {{"Type": "Pass", "Next": "P{}"}}"#, i + 1)
            }
        })
        .collect();
    format!(
        r#"{{"StartAt": "P0", "States": {{{}}}}}"#,
        states.join(", ")
    )
}

fn engine(dir: &std::path::Path, durability: Durability) -> Engine {
    let options = EngineOptions {
        durability,
        background_timers: false,
        ..EngineOptions::default()
    };
    Engine::open(dir, options).expect("engine opens")
}

/// Starts `count` executions from `threads` threads at once; returns the elapsed time.
fn run_concurrent(engine: &Engine, machine: &str, count: usize, threads: usize) -> Duration {
    let per_thread = count.div_ceil(threads);
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                for _ in 0..per_thread {
                    engine
                        .start_execution(machine, None, r#"{"n": 1}"#)
                        .expect("starts");
                }
            });
        }
    });
    started.elapsed()
}

fn transitions(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let engine = engine(dir.path(), Durability::GroupCommit);
    engine
        .create_state_machine("pc", &pass_choice_machine(), None)
        .expect("creates");
    let mut group = c.benchmark_group("transitions");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));
    for concurrency in [1usize, 100, 10_000] {
        // Every execution of the machine makes 10 transitions in one durable decision.
        group.throughput(Throughput::Elements(10 * concurrency as u64));
        let threads = concurrency.min(512);
        group.bench_function(format!("concurrent_{concurrency}"), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| run_concurrent(&engine, "pc", concurrency, threads))
                    .sum()
            })
        });
        let elapsed = run_concurrent(&engine, "pc", concurrency.max(1_000), threads);
        let rate = 10.0 * concurrency.max(1_000) as f64 / elapsed.as_secs_f64();
        println!("FIGURE transitions_per_s_at_{concurrency}: {rate:.0}");
    }
    group.finish();
}

fn latency(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let engine = engine(dir.path(), Durability::PerCommit);
    engine
        .create_state_machine("chain", &pass_chain(10), None)
        .expect("creates");
    // The probe rewrites one preallocated block in place, so its fdatasync carries no metadata:
    // the cheapest durable write the device offers (the WAL writes preallocated segments too).
    let probe_path = dir.path().join("fdatasync-probe");
    let probe = std::fs::File::create(&probe_path).expect("probe file");
    let block = vec![7u8; 4096];
    probe.write_all_at(&block, 0).expect("preallocates");
    probe.sync_all().expect("syncs");
    let mut group = c.benchmark_group("latency");
    group.sample_size(50);
    group.bench_function("fdatasync_4KiB", |b| {
        b.iter(|| {
            probe.write_all_at(&block, 0).expect("writes");
            probe.sync_data().expect("syncs");
        })
    });
    group.bench_function("pass_chain_10_start_to_durable_success", |b| {
        b.iter(|| {
            engine
                .start_execution("chain", None, r#"{"n": 1}"#)
                .expect("starts")
        })
    });
    group.finish();
    // The issue's guard is on the median: the two are timed one after the other in each round
    // (alternating, so both see the same moment of the device), and the medians compared. A
    // segment rotation (a new file's sync_all and a directory sync) lands in the chain's tail,
    // which the mean shows and the median does not.
    let rounds = 1_000;
    let mut sync_us = Vec::with_capacity(rounds);
    let mut chain_us = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let started = Instant::now();
        probe.write_all_at(&block, 0).expect("writes");
        probe.sync_data().expect("syncs");
        sync_us.push(started.elapsed().as_secs_f64() * 1e6);
        let started = Instant::now();
        engine
            .start_execution("chain", None, r#"{"n": 1}"#)
            .expect("starts");
        chain_us.push(started.elapsed().as_secs_f64() * 1e6);
    }
    let (sync_p50, sync_mean) = median_and_mean(&mut sync_us);
    let (chain_p50, chain_mean) = median_and_mean(&mut chain_us);
    println!(
        "FIGURE fdatasync_p50_us: {sync_p50:.1}  pass_chain_10_p50_us: {chain_p50:.1}  ratio_p50: {:.2}  (means {sync_mean:.1} and {chain_mean:.1}, ratio {:.2})",
        chain_p50 / sync_p50,
        chain_mean / sync_mean
    );
}

/// The median and the mean of `samples` (sorted in place).
fn median_and_mean(samples: &mut [f64]) -> (f64, f64) {
    samples.sort_by(f64::total_cmp);
    let median = samples[samples.len() / 2];
    let mean = samples.iter().sum::<f64>() / samples.len() as f64;
    (median, mean)
}

/// Resident set size of this process, in bytes (Linux `/proc/self/statm`).
fn rss_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

fn memory(_c: &mut Criterion) {
    let count = 20_000usize;
    let dir = tempfile::tempdir().expect("temp dir");
    let engine = engine(dir.path(), Durability::NoSync);
    engine
        .create_state_machine("pc", &pass_choice_machine(), None)
        .expect("creates");
    let waiting =
        r#"{"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 3600, "End": true}}}"#;
    engine
        .create_state_machine("wait", waiting, None)
        .expect("creates");
    // Warm up allocator and runtime so the deltas measure executions only.
    run_concurrent(&engine, "pc", 2_000, 4);
    let before = rss_bytes();
    run_concurrent(&engine, "pc", count, 4);
    let after_closed = rss_bytes();
    run_concurrent(&engine, "wait", count, 4);
    let after_open = rss_bytes();
    if let (Some(a), Some(b), Some(c)) = (before, after_closed, after_open) {
        println!(
            "FIGURE bytes_per_closed_execution: {}  bytes_per_open_execution: {}",
            b.saturating_sub(a) / count as u64,
            c.saturating_sub(b) / count as u64
        );
    }
}

/// Writes a log of `executions` executions of a chain of `chain_states` Pass states, ending in
/// a long Wait when `left_open` (so recovery must fold every history).
fn recovery_log(dir: &std::path::Path, executions: usize, chain_states: usize, left_open: bool) {
    let engine = engine(dir, Durability::NoSync);
    let mut definition: serde_json::Value =
        serde_json::from_str(&pass_chain(chain_states)).expect("chain is JSON");
    if left_open {
        let last = format!("P{}", chain_states - 1);
        definition["States"][&last] = serde_json::json!({"Type": "Pass", "Next": "Hold"});
        definition["States"]["Hold"] =
            serde_json::json!({"Type": "Wait", "Seconds": 86400, "End": true});
    }
    engine
        .create_state_machine("long", &definition.to_string(), None)
        .expect("creates");
    run_concurrent(&engine, "long", executions, 4);
}

fn recovery(c: &mut Criterion) {
    let quick = std::env::var_os("STATELOG_BENCH_QUICK").is_some();
    let executions = 10_000usize;
    // 49 or 50 Pass states: 2 events each, plus start and success/wait: ~100 events each.
    let (chain_states, label) = if quick { (5, "100k") } else { (50, "1M") };
    let mut group = c.benchmark_group("recovery");
    group.sample_size(10);
    for left_open in [false, true] {
        let dir = tempfile::tempdir().expect("temp dir");
        let states = if left_open {
            chain_states - 1
        } else {
            chain_states
        };
        recovery_log(dir.path(), executions, states, left_open);
        let which = if left_open { "open" } else { "closed" };
        let options = || EngineOptions {
            background_timers: false,
            read_only: true,
            ..EngineOptions::default()
        };
        group.bench_function(format!("open_{label}_events_10k_{which}_executions"), |b| {
            b.iter(|| Engine::open(dir.path(), options()).expect("reopens"))
        });
        let started = Instant::now();
        let reopened = Engine::open(dir.path(), options()).expect("reopens");
        let elapsed_ms = started.elapsed().as_secs_f64() * 1e3;
        let events: u64 = reopened
            .list_executions(&statelog::engine::ListExecutions {
                max_results: 1000,
                ..Default::default()
            })
            .map(|page| page.executions.len() as u64)
            .unwrap_or(0);
        println!(
            "FIGURE recovery_ms_{label}_events_{executions}_{which}_executions: {elapsed_ms:.0} \
             (open executions after recovery: {}, first page listed: {events})",
            reopened.open_execution_count()
        );
    }
    group.finish();
}

/// Runs `count` executions of `machine` from `threads` threads at once, each call returning
/// once its execution has ended (STANDARD: `start_execution`, whose 10 Pass states close in its
/// first durable decision; EXPRESS: `start_sync_execution`); returns the elapsed time.
fn run_chains(
    engine: &Engine,
    machine: &str,
    express: bool,
    count: usize,
    threads: usize,
) -> Duration {
    let per_thread = count.div_ceil(threads);
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                for _ in 0..per_thread {
                    if express {
                        let outcome = engine
                            .start_sync_execution(machine, None, r#"{"n": 1}"#)
                            .expect("runs");
                        assert_eq!(outcome.status.aws_name(), "SUCCEEDED");
                    } else {
                        engine
                            .start_execution(machine, None, r#"{"n": 1}"#)
                            .expect("starts");
                    }
                }
            });
        }
    });
    started.elapsed()
}

/// Executions per second of a 10-state Pass chain as EXPRESS (in memory, nothing written)
/// and as STANDARD (one durable decision each, group commit), in one engine and one run, at 1
/// and 100 callers.
fn express(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let engine = engine(dir.path(), Durability::GroupCommit);
    let chain = pass_chain(10);
    engine
        .create_state_machine("standard", &chain, None)
        .expect("creates");
    engine
        .create_state_machine_of_type("express", &chain, None, MachineType::Express, &[])
        .expect("creates");
    let mut group = c.benchmark_group("express");
    group.sample_size(10);
    let per_round = 1_000;
    for threads in [1usize, 100] {
        group.throughput(Throughput::Elements(per_round as u64));
        for (label, machine, is_express) in [
            ("standard", "standard", false),
            ("express", "express", true),
        ] {
            group.bench_function(format!("{label}_pass_chain_10_threads_{threads}"), |b| {
                b.iter_custom(|iters| {
                    (0..iters)
                        .map(|_| run_chains(&engine, machine, is_express, per_round, threads))
                        .sum()
                })
            });
        }
        let rounds = 5_000;
        let standard = run_chains(&engine, "standard", false, rounds, threads);
        let express = run_chains(&engine, "express", true, rounds, threads);
        let standard_per_s = rounds as f64 / standard.as_secs_f64();
        let express_per_s = rounds as f64 / express.as_secs_f64();
        println!(
            "FIGURE pass_chain_10_executions_per_s_threads_{threads}: standard {standard_per_s:.0}  \
             express {express_per_s:.0}  ratio {:.1}",
            express_per_s / standard_per_s
        );
    }
    group.finish();
}

criterion_group!(benches, latency, transitions, memory, recovery, express);
criterion_main!(benches);
