//! Distributed Map benchmark (a bench binary, not criterion: each figure is one run of a whole
//! Map Run): items per second through a Distributed Map of Pass children, STANDARD and EXPRESS,
//! `MaxConcurrency` 1,000, items from a JSONL `ItemReader` in a local bucket and results to a
//! `ResultWriter` (FLATTEN), with the parent's history length; and, with `rss`, the process's
//! peak resident set (`VmHWM`) over a run of 1,000,000 EXPRESS items.
//!
//! Run: `cargo bench --bench map_run` (100,000 items each; `STATELOG_BENCH_ITEMS=N` changes
//! it) and `cargo bench --bench map_run -- rss` (1,000,000 items; the same variable). Figures
//! are printed as `FIGURE name: value` lines.

use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use statelog::engine::items::{ItemSources, ObjectStoreConfig, ObjectStores};
use statelog::engine::{Durability, Engine, EngineOptions, ExecutionStatus, HistoryQuery};

fn items_count(default: u64) -> u64 {
    std::env::var("STATELOG_BENCH_ITEMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A bucket `data` under `root` holding `items.jsonl` with `count` items.
fn write_items(root: &std::path::Path, count: u64) {
    std::fs::create_dir_all(root.join("data")).expect("bucket");
    let mut file = std::io::BufWriter::new(
        std::fs::File::create(root.join("data/items.jsonl")).expect("file"),
    );
    for n in 0..count {
        writeln!(file, "{{\"n\":{n}}}").expect("write");
    }
    file.flush().expect("flush");
}

fn engine(dir: &std::path::Path, objects: &std::path::Path) -> Engine {
    let stores = ObjectStores::open(ObjectStoreConfig::Local {
        root: objects.to_path_buf(),
    })
    .expect("object store");
    let options = EngineOptions {
        durability: Durability::GroupCommit,
        item_sources: Some(ItemSources::new(stores)),
        ..EngineOptions::default()
    };
    Engine::open(dir, options).expect("engine opens")
}

fn definition(execution_type: &str) -> String {
    format!(
        r#"{{"StartAt":"M","States":{{"M":{{"Type":"Map","MaxConcurrency":1000,
        "ItemReader":{{"Resource":"arn:aws:states:::s3:getObject",
          "Parameters":{{"Bucket":"data","Key":"items.jsonl"}},"ReaderConfig":{{"InputType":"JSONL"}}}},
        "ResultWriter":{{"Resource":"arn:aws:states:::s3:putObject",
          "Parameters":{{"Bucket":"data","Prefix":"out"}},
          "WriterConfig":{{"Transformation":"FLATTEN"}}}},
        "ItemProcessor":{{"ProcessorConfig":{{"Mode":"DISTRIBUTED","ExecutionType":"{execution_type}"}},
          "StartAt":"P","States":{{"P":{{"Type":"Pass","End":true}}}}}},
        "End":true}}}}}}"#
    )
}

/// One Map Run over `count` items; prints items/s and the parent's history length.
fn run(execution_type: &str, count: u64) {
    let dir = tempfile::tempdir().expect("temp dir");
    let objects = dir.path().join("objects");
    write_items(&objects, count);
    let engine = engine(&dir.path().join("log"), &objects);
    let machine = format!("dmap-{}", execution_type.to_lowercase());
    engine
        .create_state_machine(&machine, &definition(execution_type), None)
        .expect("machine");
    let started_at = Instant::now();
    let started = engine
        .start_execution(&machine, Some("run"), "{}")
        .expect("starts");
    let closed = engine
        .wait_until_closed(&started.execution_arn)
        .expect("closes");
    let seconds = started_at.elapsed().as_secs_f64();
    assert_eq!(closed.status, ExecutionStatus::Succeeded, "{closed:?}");
    let history = engine
        .get_execution_history(
            &started.execution_arn,
            &HistoryQuery {
                max_results: 1000,
                ..HistoryQuery::default()
            },
        )
        .expect("history");
    let lower = execution_type.to_lowercase();
    println!(
        "FIGURE map_run_{lower}_items_per_second ({count} items, MaxConcurrency 1000): {:.0}",
        count as f64 / seconds
    );
    println!("FIGURE map_run_{lower}_seconds ({count} items): {seconds:.2}");
    println!(
        "FIGURE map_run_{lower}_parent_history_events ({count} items): {}",
        history.events.len()
    );
}

/// `VmHWM` of this process, in kB.
fn peak_rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "rss") {
        let count = items_count(1_000_000);
        let dir = tempfile::tempdir().expect("temp dir");
        let objects = dir.path().join("objects");
        write_items(&objects, count);
        let before = peak_rss_kb();
        let engine = engine(&dir.path().join("log"), &objects);
        engine
            .create_state_machine("dmap-rss", &definition("EXPRESS"), None)
            .expect("machine");
        let started_at = Instant::now();
        let started = engine
            .start_execution("dmap-rss", Some("run"), "{}")
            .expect("starts");
        let closed = engine
            .wait_until_closed(&started.execution_arn)
            .expect("closes");
        assert_eq!(closed.status, ExecutionStatus::Succeeded, "{closed:?}");
        println!(
            "FIGURE map_run_rss_seconds ({count} EXPRESS items, MaxConcurrency 1000): {:.2}",
            started_at.elapsed().as_secs_f64()
        );
        println!("FIGURE map_run_rss_peak_kb_before_engine: {before}");
        println!(
            "FIGURE map_run_rss_peak_kb ({count} EXPRESS items, MaxConcurrency 1000): {}",
            peak_rss_kb()
        );
        drop(Arc::new(engine));
        return;
    }
    // `cargo bench` passes `--bench`; any other argument selects nothing more.
    let count = items_count(100_000);
    run("EXPRESS", count);
    run("STANDARD", count);
}
