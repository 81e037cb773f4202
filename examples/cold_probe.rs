//! A probe for the c=1 guard's cold start (not a benchmark: see `benches/engine.rs`): times one
//! unsynced start of a 10-state Pass chain right after the thread slept in a raw fdatasync, in
//! a `nanosleep`, or spun, so the start's CPU after a sleep can be told from its CPU when hot.
//!
//! `cargo run --release --example cold_probe -- [rounds]`

use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

use statelog::engine::{Engine, EngineOptions};
use statelog_wal::Durability;

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(3_000);
    let states: Vec<String> = (0..10)
        .map(|i| {
            if i == 9 {
                format!(r#""P{i}": {{"Type": "Pass", "End": true}}"#)
            } else {
                format!(r#""P{i}": {{"Type": "Pass", "Next": "P{}"}}"#, i + 1)
            }
        })
        .collect();
    let definition = format!(
        r#"{{"StartAt": "P0", "States": {{{}}}}}"#,
        states.join(", ")
    );
    let dir = std::env::temp_dir().join(format!("statelog-cold-probe-{}", std::process::id()));
    let options = EngineOptions {
        durability: Durability::NoSync,
        background_timers: false,
        ..EngineOptions::default()
    };
    let engine = Engine::open(&dir, options).expect("engine opens");
    engine
        .create_state_machine("chain", &definition, None)
        .expect("creates");
    let probe = std::fs::File::create(dir.join("fdatasync-probe")).expect("probe file");
    let block = vec![7u8; 4096];
    probe.write_all_at(&block, 0).expect("writes");
    probe.sync_all().expect("syncs");
    let start = || {
        let started = Instant::now();
        engine
            .start_execution("chain", None, r#"{"n": 1}"#)
            .expect("starts");
        started.elapsed().as_secs_f64() * 1e6
    };
    let mut after_sync = Vec::new();
    let mut after_sleep = Vec::new();
    let mut after_spin = Vec::new();
    let mut hot = Vec::new();
    for _ in 0..rounds {
        probe.write_all_at(&block, 0).expect("writes");
        probe.sync_data().expect("syncs");
        after_sync.push(start());
        std::thread::sleep(Duration::from_micros(80));
        after_sleep.push(start());
        let spun = Instant::now();
        while spun.elapsed() < Duration::from_micros(80) {
            std::hint::spin_loop();
        }
        after_spin.push(start());
        hot.push(start());
    }
    for (name, samples) in [
        ("after a raw fdatasync", &mut after_sync),
        ("after an 80 us sleep", &mut after_sleep),
        ("after an 80 us spin", &mut after_spin),
        ("right after another start", &mut hot),
    ] {
        samples.sort_by(f64::total_cmp);
        println!(
            "{name:28} p25 {:6.1} us  p50 {:6.1} us",
            samples[samples.len() / 4],
            samples[samples.len() / 2]
        );
    }
    drop(engine);
    let _ = std::fs::remove_dir_all(&dir);
}
