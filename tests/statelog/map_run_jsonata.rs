//! A JSONata Distributed Map whose Distributed fields hold `{% %}` expressions: the
//! `ItemReader`'s `Arguments` and `ReaderConfig`, the `ItemBatcher`'s counts and `BatchInput`,
//! and the `ResultWriter`'s `Arguments`, evaluated over `$states.input`, `$states.context` and
//! the variables in scope; an expression that fails fails the Map as the state's own error.

use std::sync::Arc;

use serde_json::{json, Value};
use statelog::clock::ManualClock;
use statelog::engine::items::{ItemSources, ObjectStoreConfig, ObjectStores};
use statelog::engine::{Engine, EngineOptions, ExecutionStatus};

const NOW_MS: u64 = 1_700_000_000_000;

fn engine_with_objects(root: &std::path::Path) -> Engine {
    let stores = ObjectStores::open(ObjectStoreConfig::Local {
        root: root.to_path_buf(),
    })
    .expect("a local object store");
    let options = EngineOptions {
        background_timers: false,
        clock: Arc::new(ManualClock::new(NOW_MS)),
        item_sources: Some(ItemSources::new(stores)),
        ..EngineOptions::default()
    };
    Engine::open_with_log(Arc::new(statelog::store::MemoryLog::new()), options).expect("opens")
}

fn run(
    engine: &Engine,
    name: &str,
    definition: &str,
    input: &str,
) -> statelog::engine::ExecutionDescription {
    engine
        .create_state_machine(name, definition, None)
        .expect("a valid definition");
    let started = engine
        .start_execution(name, Some("e1"), input)
        .expect("starts");
    engine
        .wait_until_closed(&started.execution_arn)
        .expect("closes")
}

/// The reader's bucket and key come from the input and a variable, `MaxItems` from an
/// expression; the batches' size and `BatchInput` too; the writer's prefix from the input.
#[test]
fn expressions_in_the_distributed_fields_are_evaluated_for_the_run() {
    let root = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(root.path().join("data")).expect("a bucket");
    let lines: String = (0..10).map(|n| format!("{{\"n\":{n}}}\n")).collect();
    std::fs::write(root.path().join("data/in.jsonl"), lines).expect("items");
    let engine = engine_with_objects(root.path());
    let definition = r#"{"QueryLanguage":"JSONata","StartAt":"Set","States":{
        "Set":{"Type":"Pass","Assign":{"key":"in.jsonl","per":2},"Next":"M"},
        "M":{"Type":"Map","MaxConcurrency":3,
          "ItemReader":{"Resource":"arn:aws:states:::s3:getObject",
            "Arguments":{"Bucket":"{% $states.input.bucket %}","Key":"{% $key %}"},
            "ReaderConfig":{"InputType":"JSONL","MaxItems":"{% $states.input.max - 1 %}"}},
          "ItemBatcher":{"MaxItemsPerBatch":"{% $per %}",
            "BatchInput":{"tag":"{% $uppercase($states.input.tag) %}","fixed":1}},
          "ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"EXPRESS"},
            "StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},
          "End":true}}}"#;
    let described = run(
        &engine,
        "reader",
        definition,
        r#"{"bucket":"data","max":6,"tag":"blue"}"#,
    );
    assert_eq!(
        described.status,
        ExecutionStatus::Succeeded,
        "{described:?}"
    );
    let batch = |ns: &[u32]| {
        json!({
            "Items": ns.iter().map(|n| json!({"n": n})).collect::<Vec<_>>(),
            "BatchInput": {"tag": "BLUE", "fixed": 1},
        })
    };
    assert_eq!(
        described.output,
        Some(json!([batch(&[0, 1]), batch(&[2, 3]), batch(&[4])]))
    );

    let writer = r#"{"QueryLanguage":"JSONata","StartAt":"M","States":{
        "M":{"Type":"Map","Items":"{% $states.input.items %}",
          "ResultWriter":{"Resource":"arn:aws:states:::s3:putObject",
            "Arguments":{"Bucket":"data","Prefix":"{% 'out-' & $states.input.run %}"}},
          "ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"STANDARD"},
            "StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},
          "End":true}}}"#;
    let described = run(&engine, "writer", writer, r#"{"items":[1,2],"run":"r7"}"#);
    assert_eq!(
        described.status,
        ExecutionStatus::Succeeded,
        "{described:?}"
    );
    let output = described.output.expect("an output");
    let key = output["ResultWriterDetails"]["Key"]
        .as_str()
        .expect("a key");
    assert!(
        key.starts_with("out-r7/") && key.ends_with("/manifest.json"),
        "{key}"
    );
    assert!(root.path().join("data").join(key).is_file(), "{key}");
}

/// An expression that does not evaluate fails the Map with the state's own error (here a
/// count that is not a number), before any Map Run starts; the Map's Catch takes it.
#[test]
fn an_expression_that_fails_fails_the_map_before_its_run() {
    let root = tempfile::tempdir().expect("temp dir");
    let engine = engine_with_objects(root.path());
    let definition = r#"{"QueryLanguage":"JSONata","StartAt":"M","States":{
        "M":{"Type":"Map","Items":"{% $states.input.items %}",
          "ItemBatcher":{"MaxItemsPerBatch":"{% $states.input.per %}"},
          "ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"EXPRESS"},
            "StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},
          "Catch":[{"ErrorEquals":["States.ALL"],"Output":"{% $states.errorOutput %}","Next":"Caught"}],
          "End":true},
        "Caught":{"Type":"Pass","End":true}}}"#;
    let described = run(
        &engine,
        "failing",
        definition,
        r#"{"items":[1,2],"per":"two"}"#,
    );
    assert_eq!(
        described.status,
        ExecutionStatus::Succeeded,
        "{described:?}"
    );
    let output: Value = described.output.expect("the caught error");
    assert_eq!(
        output["Error"],
        json!("States.QueryEvaluationError"),
        "{output}"
    );
    let runs = engine
        .list_map_runs(&described.execution_arn)
        .expect("lists runs");
    assert!(runs.is_empty(), "no Map Run started: {runs:?}");
}

/// A `{% %}` expression that does not compile is refused when the machine is created,
/// naming where it is.
#[test]
fn an_invalid_expression_in_an_item_reader_is_refused_at_creation() {
    let root = tempfile::tempdir().expect("temp dir");
    let engine = engine_with_objects(root.path());
    let definition = r#"{"QueryLanguage":"JSONata","StartAt":"M","States":{
        "M":{"Type":"Map",
          "ItemReader":{"Resource":"arn:aws:states:::s3:getObject",
            "Arguments":{"Bucket":"data","Key":"{% $states.input.( %}"},
            "ReaderConfig":{"InputType":"JSON"}},
          "ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"STANDARD"},
            "StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},
          "End":true}}}"#;
    let error = engine
        .create_state_machine("invalid", definition, None)
        .expect_err("refused");
    let text = error.to_string();
    assert!(
        text.contains("/States/M/ItemReader/Arguments/Key") && text.contains("JSONata"),
        "{text}"
    );
}
