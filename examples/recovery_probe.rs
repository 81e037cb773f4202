//! A probe for profiling recovery (not a benchmark: see `benches/engine.rs`): writes (once) a
//! log of 10,000 executions of ~100 events each, all left open in a long Wait, then times
//! `Engine::open` on it.
//!
//! `cargo run --release --example recovery_probe -- DIR [RECOVERY_THREADS]`

use std::time::Instant;

use statelog::engine::{Engine, EngineOptions};
use statelog_wal::Durability;

fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: recovery_probe DIR");
        std::process::exit(2);
    };
    let recovery_threads = std::env::args()
        .nth(2)
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    let options = || EngineOptions {
        durability: Durability::NoSync,
        background_timers: false,
        recovery_threads,
        ..EngineOptions::default()
    };
    if !std::path::Path::new(&dir).exists() {
        let engine = Engine::open(&dir, options()).expect("opens");
        let mut states = serde_json::Map::new();
        for i in 0..49 {
            states.insert(
                format!("P{i}"),
                serde_json::json!({"Type": "Pass", "Next": format!("P{}", i + 1)}),
            );
        }
        states.insert(
            "P49".to_string(),
            serde_json::json!({"Type": "Wait", "Seconds": 86400, "End": true}),
        );
        let definition = serde_json::json!({"StartAt": "P0", "States": states});
        engine
            .create_state_machine("long", &definition.to_string(), None)
            .expect("creates");
        for _ in 0..10_000 {
            engine
                .start_execution("long", None, r#"{"n": 1}"#)
                .expect("starts");
        }
    }
    let started = Instant::now();
    let engine = Engine::open(&dir, options()).expect("reopens");
    println!(
        "open: {:.0} ms, {} open executions",
        started.elapsed().as_secs_f64() * 1e3,
        engine.open_execution_count()
    );
}
