//! Writes the Map Run backward-compatibility fixture (map run format 1, record kind 5): a data
//! directory holding every Map Run record variant (`Opened`, `Updated`, `ChildrenEnded`).
//!
//! - `fan`: a Distributed Map over EXPRESS Pass children (MaxConcurrency 2), run to its end:
//!   its run's `Opened` record and its children's ends.
//! - `held`: a Distributed Map over EXPRESS Task children (MaxConcurrency 2) whose handler
//!   answers items 0 and 1 and never answers items 2 and 3; once 2 and 3 are in flight (so the
//!   ends of 0 and 1 are recorded), `UpdateMapRun` sets its MaxConcurrency to 3 (`Updated`,
//!   synced, which makes the ends durable too), and the writer exits with the run open.
//!
//! A build that reads the fixture resumes `held`'s run: only items 2 and 3 run again, and its
//! output holds every item's result once. The ends' grouping into records depends on timing,
//! so two runs of the writer may differ in how many `ChildrenEnded` records they write.
//!
//! `cargo run --example fixture_writer_maprun -- OUT_DIR` writes `OUT_DIR/data/` and
//! `OUT_DIR/expected.json` (remove `OUT_DIR/data/LOCK` afterwards, as for every fixture).

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use statelog::clock::ManualClock;
use statelog::engine::{Engine, EngineOptions, HistoryQuery, TaskError};

/// 2024-01-01T00:00:00Z.
const START_MS: u64 = 1_704_067_200_000;
const SEGMENT_SIZE_BYTES: u64 = 16 * 1024;
const RETENTION_MS: u64 = 24 * 3600 * 1000;
const ENTROPY_SEED: u64 = 20;

const ITEM: &str = "arn:aws:lambda:us-east-1:000000000000:function:item";

fn distributed(child: &str) -> String {
    format!(
        r#"{{"StartAt":"M","States":{{"M":{{"Type":"Map","ItemsPath":"$.items","MaxConcurrency":2,
          "ItemProcessor":{{"ProcessorConfig":{{"Mode":"DISTRIBUTED","ExecutionType":"EXPRESS"}},
          "StartAt":"C","States":{{"C":{child}}}}},"End":true}}}}}}"#
    )
}

fn map_run_of(engine: &Engine, execution_arn: &str) -> String {
    for _ in 0..100_000 {
        if let Some(run) = engine.list_map_runs(execution_arn).expect("lists").first() {
            return run.map_run_arn.clone();
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    panic!("no Map Run for {execution_arn}");
}

fn event_types(engine: &Engine, arn: &str) -> Vec<Value> {
    let query = HistoryQuery {
        max_results: 1000,
        ..HistoryQuery::default()
    };
    let history = engine
        .get_execution_history(arn, &query)
        .expect("history")
        .to_aws_json();
    history["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["type"].clone())
        .collect()
}

fn main() {
    let out = std::env::args()
        .nth(1)
        .expect("usage: fixture_writer_maprun OUT_DIR");
    let out = Path::new(&out);
    let data = out.join("data");
    std::fs::create_dir_all(&data).expect("creates the data directory");
    let clock = ManualClock::new(START_MS);
    let options = EngineOptions {
        clock: Arc::new(clock.clone()),
        background_timers: false,
        compaction_interval_ms: 0,
        entropy_seed: Some(ENTROPY_SEED),
        segment_size_bytes: SEGMENT_SIZE_BYTES,
        retention_ms: RETENTION_MS,
        ..EngineOptions::default()
    };
    let engine = Engine::open(&data, options).expect("opens");
    let calls = Arc::new(Mutex::new(Vec::new()));
    {
        let calls = calls.clone();
        engine.register_integration(ITEM, move |input: Value, _context: Value| {
            let n = input.as_u64().unwrap_or_default();
            calls.lock().expect("calls").push(n);
            async move {
                if n >= 2 {
                    std::future::pending::<()>().await;
                }
                Ok::<Value, TaskError>(json!(n * 10))
            }
        });
    }

    engine
        .create_state_machine(
            "held",
            &distributed(&format!(
                r#"{{"Type":"Task","Resource":"{ITEM}","End":true}}"#
            )),
            None,
        )
        .expect("creates held");
    let held = engine
        .start_execution("held", Some("held"), r#"{"items":[0,1,2,3]}"#)
        .expect("starts held")
        .execution_arn;
    let held_run = map_run_of(&engine, &held);
    for _ in 0..100_000 {
        if calls.lock().expect("calls").len() == 4 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert_eq!(
        calls.lock().expect("calls").len(),
        4,
        "items 2 and 3 in flight"
    );
    engine
        .update_map_run(&held_run, Some(3), None, None)
        .expect("updates held's run");

    engine
        .create_state_machine("fan", &distributed(r#"{"Type":"Pass","End":true}"#), None)
        .expect("creates fan");
    let fan = engine
        .start_execution("fan", Some("fan"), r#"{"items":[1,2,3]}"#)
        .expect("starts fan")
        .execution_arn;
    let fan_described = engine.wait_until_closed(&fan).expect("fan closes");
    let fan_run = map_run_of(&engine, &fan);

    let expected = json!({
        "writer": "fixture_writer_maprun",
        "start_ms": START_MS,
        "now_ms": START_MS,
        "segment_size_bytes": SEGMENT_SIZE_BYTES,
        "retention_ms": RETENTION_MS,
        "entropy_seed": ENTROPY_SEED,
        "item_resource": ITEM,
        "fan": {
            "execution_arn": fan,
            "map_run_arn": fan_run,
            "status": fan_described.status.aws_name(),
            "output": fan_described.output,
            "max_concurrency": 2,
        },
        "held": {
            "execution_arn": held,
            "map_run_arn": held_run,
            "max_concurrency": 3,
            "recorded_items": [0, 1],
            "output": [0, 10, 20, 30],
        },
        "executions": [
            {"arn": fan, "event_types": event_types(&engine, &fan)},
            {"arn": held, "event_types": event_types(&engine, &held)},
        ],
    });
    std::fs::write(
        out.join("expected.json"),
        serde_json::to_string_pretty(&expected).expect("json") + "\n",
    )
    .expect("writes expected.json");
    assert!(engine.background_errors().is_empty());
    println!("wrote {}", out.display());
    // The held children never answer: leave without waiting for them.
    std::process::exit(0);
}
