//! Writes the state machine versions and aliases backward-compatibility fixture (catalog format
//! 2): a data directory holding every catalog record variant that format added
//! (`VersionPublished`, `VersionDeleted`, `AliasSet`, `AliasDeleted`) and executions started
//! through a version ARN (one left open in a 60 s Wait of version 1, after the machine moved
//! on), through an alias, and unqualified.
//!
//! `cargo run --example fixture_writer_versions -- OUT_DIR` writes `OUT_DIR/data/` and
//! `OUT_DIR/expected.json` (remove `OUT_DIR/data/LOCK` afterwards, as for every fixture).

use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Value};
use statelog::clock::ManualClock;
use statelog::engine::{Engine, EngineOptions, HistoryQuery, RoutingEntry};

/// 2024-01-01T00:00:00Z.
const START_MS: u64 = 1_704_067_200_000;
const SEGMENT_SIZE_BYTES: u64 = 16 * 1024;
const RETENTION_MS: u64 = 24 * 3600 * 1000;
const ENTROPY_SEED: u64 = 22;

/// Waits 60 s, then answers `{"v": 1}`.
const V1: &str = r#"{"StartAt":"Sleep","States":{"Sleep":{"Type":"Wait","Seconds":60,"Next":"Answer"},"Answer":{"Type":"Pass","Result":{"v":1},"End":true}}}"#;
/// Answers `{"v": 2}`.
const V2: &str =
    r#"{"StartAt":"Answer","States":{"Answer":{"Type":"Pass","Result":{"v":2},"End":true}}}"#;
/// Answers `{"v": 3}`.
const V3: &str =
    r#"{"StartAt":"Answer","States":{"Answer":{"Type":"Pass","Result":{"v":3},"End":true}}}"#;

fn route(engine: &Engine, pairs: &[(u32, u32)]) -> Vec<RoutingEntry> {
    pairs
        .iter()
        .map(|&(number, weight)| RoutingEntry {
            state_machine_version_arn: engine.version_arn("ver", number),
            weight,
        })
        .collect()
}

fn main() {
    let out = std::env::args()
        .nth(1)
        .expect("usage: fixture_writer_versions OUT_DIR");
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
    let machine = engine.state_machine_arn("ver");
    engine
        .create_state_machine_published("ver", V1, None, &[], true, Some("the first"))
        .expect("creates version 1");
    clock.advance_ms(1000);
    engine
        .update_state_machine_published(&machine, Some(V2), None, true, None)
        .expect("publishes version 2");
    clock.advance_ms(1000);
    engine
        .update_state_machine_published(&machine, Some(V3), None, true, Some("short-lived"))
        .expect("publishes version 3");
    engine
        .delete_state_machine_version(&engine.version_arn("ver", 3))
        .expect("deletes version 3");
    engine
        .create_state_machine_alias("prod", Some("production"), &route(&engine, &[(2, 100)]))
        .expect("creates prod");
    engine
        .create_state_machine_alias("gone", None, &route(&engine, &[(1, 100)]))
        .expect("creates gone");
    engine
        .delete_state_machine_alias(&engine.alias_arn("ver", "gone"))
        .expect("deletes gone");
    clock.advance_ms(1000);
    let on_v1 = engine
        .start_execution(&engine.version_arn("ver", 1), Some("on-v1"), "{}")
        .expect("starts on version 1")
        .execution_arn;
    let via_alias = engine
        .start_execution(&engine.alias_arn("ver", "prod"), Some("via-alias"), "{}")
        .expect("starts through prod")
        .execution_arn;
    let latest = engine
        .start_execution(&machine, Some("latest"), "{}")
        .expect("starts unqualified")
        .execution_arn;
    clock.advance_ms(1000);
    engine
        .update_state_machine_alias(
            &engine.alias_arn("ver", "prod"),
            None,
            Some(&route(&engine, &[(1, 40), (2, 60)])),
        )
        .expect("updates prod");
    engine.wait_idle();

    let versions: Vec<Value> = engine
        .list_state_machine_versions(&machine, 0, None)
        .expect("lists")
        .versions
        .iter()
        .map(|v| json!({"arn": v.state_machine_version_arn, "created_ms": v.created_ms}))
        .collect();
    let prod = engine
        .describe_state_machine_alias(&engine.alias_arn("ver", "prod"))
        .expect("describes prod");
    let executions: Vec<Value> = [&on_v1, &via_alias, &latest]
        .iter()
        .map(|arn| {
            let d = engine.describe_execution(arn).expect("describes");
            let query = HistoryQuery {
                max_results: 1000,
                ..HistoryQuery::default()
            };
            let history = engine
                .get_execution_history(arn, &query)
                .expect("history")
                .to_aws_json();
            let types: Vec<Value> = history["events"]
                .as_array()
                .expect("events")
                .iter()
                .map(|e| e["type"].clone())
                .collect();
            json!({
                "arn": arn,
                "status": d.status.aws_name(),
                "output": d.output,
                "version_arn": d.state_machine_version_arn,
                "alias_arn": d.state_machine_alias_arn,
                "event_types": types,
            })
        })
        .collect();
    let expected = json!({
        "writer": "fixture_writer_versions",
        "start_ms": START_MS,
        "now_ms": clock_now(&clock),
        "segment_size_bytes": SEGMENT_SIZE_BYTES,
        "retention_ms": RETENTION_MS,
        "entropy_seed": ENTROPY_SEED,
        "versions": {
            "machine": machine,
            "current_definition": V3,
            "listed": versions,
            "deleted": engine.version_arn("ver", 3),
            "alias": {
                "arn": prod.state_machine_alias_arn,
                "description": prod.description,
                "routing": prod.routing.iter().map(|r| json!({
                    "version_arn": r.state_machine_version_arn, "weight": r.weight
                })).collect::<Vec<_>>(),
                "created_ms": prod.created_ms,
                "updated_ms": prod.updated_ms,
            },
            "gone_alias": engine.alias_arn("ver", "gone"),
        },
        "executions": executions,
    });
    std::fs::write(
        out.join("expected.json"),
        serde_json::to_string_pretty(&expected).expect("json") + "\n",
    )
    .expect("writes expected.json");
    assert!(engine.background_errors().is_empty());
    println!("wrote {}", out.display());
}

fn clock_now(clock: &ManualClock) -> u64 {
    use statelog::clock::Clock;
    clock.now_ms()
}
