//! A probe for profiling the engine's hot path (not a benchmark: see `benches/engine.rs`):
//! starts `COUNT` executions of a 10-state Pass/Choice machine from `THREADS` threads with the
//! chosen durability and prints transitions per second.
//!
//! `cargo run --release --example throughput_probe -- [count] [threads] [group|nosync|percommit]`

use std::time::Instant;

use statelog::engine::{Engine, EngineOptions};
use statelog_wal::Durability;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let count: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(50_000);
    let threads: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(64);
    let durability = match args.get(3).map(String::as_str) {
        Some("nosync") => Durability::NoSync,
        Some("percommit") => Durability::PerCommit,
        _ => Durability::GroupCommit,
    };
    let mut states = Vec::new();
    for i in 0..10 {
        if i % 2 == 1 && i < 9 {
            states.push(format!(
                r#""S{i}": {{"Type": "Choice", "Choices": [{{"Variable": "$.n", "NumericGreaterThan": 1000, "Next": "S9"}}], "Default": "S{}"}}"#,
                i + 1
            ));
        } else if i == 9 {
            states.push(format!(r#""S{i}": {{"Type": "Pass", "End": true}}"#));
        } else {
            states.push(format!(
                r#""S{i}": {{"Type": "Pass", "Next": "S{}"}}"#,
                i + 1
            ));
        }
    }
    let definition = format!(
        r#"{{"StartAt": "S0", "States": {{{}}}}}"#,
        states.join(", ")
    );
    let dir = std::env::temp_dir().join(format!("statelog-probe-{}", std::process::id()));
    let options = EngineOptions {
        durability,
        background_timers: false,
        ..EngineOptions::default()
    };
    let engine = match Engine::open(&dir, options) {
        Ok(engine) => engine,
        Err(e) => {
            eprintln!("cannot open {}: {e}", dir.display());
            std::process::exit(2);
        }
    };
    if let Err(e) = engine.create_state_machine("pc", &definition, None) {
        eprintln!("cannot create the machine: {e}");
        std::process::exit(2);
    }
    let per_thread = count.div_ceil(threads);
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                for _ in 0..per_thread {
                    if let Err(e) = engine.start_execution("pc", None, r#"{"n": 1}"#) {
                        eprintln!("start failed: {e}");
                        std::process::exit(1);
                    }
                }
            });
        }
    });
    let elapsed = started.elapsed();
    let executions = per_thread * threads;
    println!(
        "{executions} executions, {threads} threads, {durability:?}: {:.0} transitions/s ({:.1} us per execution)",
        10.0 * executions as f64 / elapsed.as_secs_f64(),
        elapsed.as_secs_f64() * 1e6 / executions as f64
    );
    drop(engine);
    let _ = std::fs::remove_dir_all(&dir);
}
