//! Writes one backward-compatibility fixture: `fixture_writer_express`'s, plus a Distributed
//! Map whose STANDARD children name their Map Run in their `ExecutionStarted` (history format
//! 3), and a JSONata machine whose expression fails (`EvaluationFailed`). `expected.json`
//! lists the parent and the failed JSONata execution among `executions`, and `map_run` names
//! the run, its parent and each child with the Map Run its `DescribeExecution` shows.
//!
//! It needs a build where a child names its Map Run (issue 20) and the engine API of that
//! build. Keep the rest as `fixture_writer_express` is. The Map runs one child at a time
//! (`MaxConcurrency` 1), so the same commit writes the same bytes.
//!
//! Every execution is left idle before the next call, so task handlers on worker threads
//! cannot interleave their appends with the next call's: the same commit writes the same bytes.
//!
//! `cargo run --example fixture_writer_map_run -- OUT_DIR` writes `OUT_DIR/data/` (the engine's
//! data directory), `OUT_DIR/expected.json` and `OUT_DIR/token.txt` (the waiting task's token).

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use statelog::clock::ManualClock;
use statelog::engine::{Engine, EngineOptions, HistoryQuery, MachineType, Tag, TaskError};

/// The manual clock's start: 2024-01-01T00:00:00Z.
const START_MS: u64 = 1_704_067_200_000;
const DAY_MS: u64 = 24 * 60 * 60 * 1000;
/// Small segments keep the fixture tens of KiB and let compaction delete whole segments.
const SEGMENT_SIZE_BYTES: u64 = 16 * 1024;
/// Closed executions vanish a day after their close, so compaction has something to reclaim.
const RETENTION_MS: u64 = DAY_MS;
/// Enough expired executions to fill several segments.
const EXPIRED_COUNT: usize = 40;
const ENTROPY_SEED: u64 = 14;

const SEND: &str = "arn:aws:states:::sqs:sendMessage.waitForTaskToken";
const FLAKY: &str = "arn:aws:lambda:us-east-1:000000000000:function:flaky";
const BROKEN: &str = "arn:aws:lambda:us-east-1:000000000000:function:broken";

/// The EXPRESS machine: a Pass and a Choice.
const QUICK: &str = r#"{"StartAt":"Add","States":{
  "Add":{"Type":"Pass","Parameters":{"n.$":"$.n","more":true},"Next":"Check"},
  "Check":{"Type":"Choice","Choices":[{"Variable":"$.more","BooleanEquals":true,"Next":"Done"}],"Default":"Done"},
  "Done":{"Type":"Succeed"}}}"#;

/// A Distributed Map over three items, one STANDARD child at a time.
const FAN: &str = r#"{"StartAt":"Fan","States":{
  "Fan":{"Type":"Map","ItemsPath":"$.items","MaxConcurrency":1,"Label":"Fan",
    "ItemSelector":{"n.$":"$$.Map.Item.Value"},
    "ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"STANDARD"},
      "StartAt":"Double","States":{"Double":{"Type":"Pass","Parameters":{"twice.$":"States.MathAdd($.n, $.n)"},"End":true}}},
    "End":true}}}"#;

/// A Distributed Map whose one child fails: `MapRunFailed` (no failure tolerated), and again
/// after a redrive of the parent (`MapRunRedriven`).
const FAN_FAILS: &str = r#"{"StartAt":"Fan","States":{
  "Fan":{"Type":"Map","ItemsPath":"$.items","Label":"Fails",
    "ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"STANDARD"},
      "StartAt":"Nope","States":{"Nope":{"Type":"Fail","Error":"Nope","Cause":"the child fails"}}},
    "End":true}}}"#;

/// A Distributed Map whose one child waits an hour (the clock does not move): stopping the
/// parent aborts the run (`MapRunAborted`).
const FAN_WAITS: &str = r#"{"StartAt":"Fan","States":{
  "Fan":{"Type":"Map","ItemsPath":"$.items","Label":"Waits",
    "ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"STANDARD"},
      "StartAt":"Hold","States":{"Hold":{"Type":"Wait","Seconds":3600,"End":true}}},
    "End":true}}}"#;

/// A JSONata Pass whose `Output` fails to evaluate: `EvaluationFailed`, then the failure.
const BROKEN_JSONATA: &str = r#"{"QueryLanguage":"JSONata","StartAt":"Eval","States":{
  "Eval":{"Type":"Pass","Output":"{% $number('not a number') + $states.input.n %}","End":true}}}"#;

const PADDED: &str = r#"{"StartAt":"One","States":{
  "One":{"Type":"Pass","Result":{"pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"},"ResultPath":"$.one","Next":"Two"},
  "Two":{"Type":"Pass","End":true}}}"#;

/// Pass, Choice, Parallel, Map and Succeed in one run.
const FLOW_V1: &str = r#"{"StartAt":"Start","States":{
  "Start":{"Type":"Pass","Result":[1,2,3],"ResultPath":"$.items","Next":"Route"},
  "Route":{"Type":"Choice","Choices":[{"Variable":"$.go","BooleanEquals":true,"Next":"Both"}],"Default":"Done"},
  "Both":{"Type":"Parallel","ResultPath":"$.both","Next":"Each","Branches":[
    {"StartAt":"Left","States":{"Left":{"Type":"Pass","Result":"l","End":true}}},
    {"StartAt":"Right","States":{"Right":{"Type":"Pass","Result":"r","End":true}}}]},
  "Each":{"Type":"Map","ItemsPath":"$.items","ResultPath":"$.each","Next":"Done",
    "Iterator":{"StartAt":"Item","States":{"Item":{"Type":"Pass","End":true}}}},
  "Done":{"Type":"Succeed"}}}"#;

/// FLOW_V1 with a new Choice default: the UpdateStateMachine revision.
const FLOW_V2: &str = r#"{"StartAt":"Start","States":{
  "Start":{"Type":"Pass","Result":[1,2,3],"ResultPath":"$.items","Next":"Route"},
  "Route":{"Type":"Choice","Choices":[{"Variable":"$.go","BooleanEquals":true,"Next":"Both"}],"Default":"Each"},
  "Both":{"Type":"Parallel","ResultPath":"$.both","Next":"Each","Branches":[
    {"StartAt":"Left","States":{"Left":{"Type":"Pass","Result":"l","End":true}}},
    {"StartAt":"Right","States":{"Right":{"Type":"Pass","Result":"r","End":true}}}]},
  "Each":{"Type":"Map","ItemsPath":"$.items","ResultPath":"$.each","Next":"Done",
    "Iterator":{"StartAt":"Item","States":{"Item":{"Type":"Pass","End":true}}}},
  "Done":{"Type":"Succeed"}}}"#;

const FAILS: &str = r#"{"StartAt":"No","States":{"No":{"Type":"Fail","Error":"Fixture.Failed","Cause":"on purpose"}}}"#;

const WAITS: &str = r#"{"StartAt":"Nap","States":{"Nap":{"Type":"Wait","Seconds":3600,"Next":"Done"},"Done":{"Type":"Pass","End":true}}}"#;

fn caught() -> String {
    format!(
        r#"{{"StartAt":"Call","States":{{
  "Call":{{"Type":"Task","Resource":"{BROKEN}","Catch":[{{"ErrorEquals":["States.ALL"],"ResultPath":"$.error","Next":"Handled"}}],"Next":"Handled"}},
  "Handled":{{"Type":"Pass","End":true}}}}}}"#
    )
}

fn flaky() -> String {
    format!(
        r#"{{"StartAt":"First","States":{{
  "First":{{"Type":"Pass","Next":"Call"}},
  "Call":{{"Type":"Task","Resource":"{FLAKY}","End":true}}}}}}"#
    )
}

fn ask() -> String {
    format!(
        r#"{{"StartAt":"Ask","States":{{
  "Ask":{{"Type":"Task","Resource":"{SEND}","Parameters":{{"QueueUrl":"q","MessageBody":{{"TaskToken.$":"$$.Task.Token"}}}},"Next":"Done"}},
  "Done":{{"Type":"Pass","End":true}}}}}}"#
    )
}

fn activity_task(activity_arn: &str) -> String {
    format!(
        r#"{{"StartAt":"Work","States":{{"Work":{{"Type":"Task","Resource":"{activity_arn}","End":true}}}}}}"#
    )
}

fn main() {
    let Some(out) = std::env::args().nth(1) else {
        eprintln!("usage: fixture_writer_express OUT_DIR");
        std::process::exit(2);
    };
    let out = Path::new(&out);
    let data = out.join("data");
    if data.exists() {
        eprintln!("{} exists: refusing to write over it", data.display());
        std::process::exit(2);
    }
    std::fs::create_dir_all(&data).expect("creates the data directory");
    let clock = ManualClock::new(START_MS);
    let options = EngineOptions {
        clock: Arc::new(clock.clone()),
        background_timers: false,
        entropy_seed: Some(ENTROPY_SEED),
        segment_size_bytes: SEGMENT_SIZE_BYTES,
        retention_ms: RETENTION_MS,
        compaction_interval_ms: 0,
        ..EngineOptions::default()
    };
    let engine = Engine::open(&data, options).expect("opens");

    // 1. A compacted log: executions that close, expire and are compacted away.
    engine
        .create_state_machine("padded", PADDED, None)
        .expect("creates padded");
    let mut expired = Vec::new();
    for i in 0..EXPIRED_COUNT {
        let started = engine
            .start_execution(
                "padded",
                Some(&format!("old-{i}")),
                &format!(r#"{{"i":{i}}}"#),
            )
            .expect("starts old");
        expired.push(started.execution_arn);
        engine.wait_idle();
    }
    clock.advance_ms(2 * RETENTION_MS);
    let compaction = engine.compact().expect("compacts");
    assert!(compaction.segments_deleted_count > 0, "{compaction:?}");

    // 2. Machines with tags and a revision; activities with tags.
    let owner = [Tag::new("owner", "fixtures"), Tag::new("tier", "gold")];
    let flow = engine
        .create_state_machine_with_tags("flow", FLOW_V1, None, &owner)
        .expect("creates flow")
        .state_machine_arn;
    let first = engine
        .start_execution("flow", Some("before-update"), r#"{"go":true}"#)
        .expect("starts");
    engine.wait_idle();
    clock.advance_ms(1000);
    engine
        .update_state_machine("flow", Some(FLOW_V2), None)
        .expect("updates flow");
    engine
        .tag_resource(&flow, &[Tag::new("stage", "two")])
        .expect("tags flow");
    let second = engine
        .start_execution("flow", Some("after-update"), r#"{"go":false}"#)
        .expect("starts");
    engine.wait_idle();
    let activity = engine
        .create_activity_with_tags("worker", &[Tag::new("team", "ops")])
        .expect("creates activity")
        .activity_arn;

    // 3. Closed executions: failed, caught, aborted, redriven.
    engine
        .create_state_machine("fails", FAILS, None)
        .expect("creates");
    let failed = engine
        .start_execution("fails", Some("failed"), "{}")
        .expect("starts");
    engine.wait_idle();
    engine.register_integration(BROKEN, |_input: Value, _context: Value| async move {
        Err::<Value, _>(TaskError::new("Fixture.Broken", "always"))
    });
    engine
        .create_state_machine("caught", &caught(), None)
        .expect("creates");
    let caught_run = engine
        .start_execution("caught", Some("caught"), "{}")
        .expect("starts");
    engine.wait_idle();
    engine
        .create_state_machine("waits", WAITS, None)
        .expect("creates");
    let stopped = engine
        .start_execution("waits", Some("stopped"), "{}")
        .expect("starts");
    engine.wait_idle();
    engine
        .stop_execution(
            &stopped.execution_arn,
            Some("Fixture.Stopped"),
            Some("by hand"),
        )
        .expect("stops");
    let flaky_calls = Arc::new(AtomicUsize::new(0));
    let calls = flaky_calls.clone();
    engine.register_integration(FLAKY, move |input: Value, _context: Value| {
        let call = calls.fetch_add(1, Ordering::SeqCst);
        async move {
            if call == 0 {
                Err(TaskError::new("Fixture.Flaky", "first call fails"))
            } else {
                Ok(json!({"call": call, "input": input}))
            }
        }
    });
    engine
        .create_state_machine("flaky", &flaky(), None)
        .expect("creates");
    let redriven = engine
        .start_execution("flaky", Some("redriven"), r#"{"n":1}"#)
        .expect("starts");
    engine.wait_idle();
    clock.advance_ms(1000);
    let redrive = engine
        .redrive_execution(&redriven.execution_arn, Some("fixture-redrive-1"))
        .expect("redrives");
    engine.wait_idle();
    // The same client token answers the first redrive and appends nothing.
    let again = engine
        .redrive_execution(&redriven.execution_arn, Some("fixture-redrive-1"))
        .expect("redrives again");
    assert_eq!(again, redrive);

    // 4. Open executions: a task waiting for its token and a queued activity task.
    let tokens = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let sent = tokens.clone();
    engine.register_integration(SEND, move |input: Value, _context: Value| {
        let token = input["MessageBody"]["TaskToken"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        sent.lock().expect("not poisoned").push(token);
        async move { Ok(json!({"MessageId": "m-1"})) }
    });
    engine
        .create_state_machine("ask", &ask(), None)
        .expect("creates");
    let waiting = engine
        .start_execution("ask", Some("waiting"), r#"{"q":1}"#)
        .expect("starts");
    engine.wait_idle();
    engine
        .create_state_machine("act", &activity_task(&activity), None)
        .expect("creates");
    let queued = engine
        .start_execution("act", Some("queued"), r#"{"job":7}"#)
        .expect("starts");
    engine.wait_idle();
    let token = tokens
        .lock()
        .expect("not poisoned")
        .first()
        .cloned()
        .expect("the waiting task sent its token");

    // What this build sees, for the newer build to compare with.
    let arns = [
        first.execution_arn,
        second.execution_arn,
        failed.execution_arn,
        caught_run.execution_arn,
        stopped.execution_arn,
        redriven.execution_arn.clone(),
        waiting.execution_arn.clone(),
        queued.execution_arn.clone(),
    ];
    // A Distributed Map with STANDARD children, and a JSONata expression that fails.
    let fan = run_to_close(&engine, "fan", FAN, "fan-out", r#"{"items":[1,2,3]}"#);
    let runs = engine.list_map_runs(&fan).expect("lists the Map Runs");
    let map_run_arn = runs[0].map_run_arn.clone();
    let children: Vec<Value> = engine
        .list_map_run_executions(&map_run_arn, None, 0, None)
        .expect("lists the children")
        .executions
        .iter()
        .map(|child| {
            let described = engine
                .describe_execution(&child.execution_arn)
                .expect("describes a child");
            json!({
                "arn": child.execution_arn,
                "map_run_arn": described.map_run_arn,
                "output": described.output_text,
            })
        })
        .collect();
    // A failing Map Run, redriven (and failing again); a Map Run aborted by a stop.
    let fails = run_to_close(
        &engine,
        "fan-fails",
        FAN_FAILS,
        "fan-failed",
        r#"{"items":[1]}"#,
    );
    engine
        .redrive_execution(&fails, None)
        .expect("redrives fan-fails");
    engine
        .wait_until_closed(&fails)
        .expect("fan-fails closes again");
    engine.wait_idle();
    engine
        .create_state_machine("fan-waits", FAN_WAITS, None)
        .expect("creates fan-waits");
    let waits = engine
        .start_execution("fan-waits", Some("fan-stopped"), r#"{"items":[1]}"#)
        .expect("starts fan-waits");
    // The child is waiting (ExecutionStarted, WaitStateEntered) before the stop: the bytes do
    // not depend on timing.
    loop {
        engine.wait_idle();
        let runs = engine
            .list_map_runs(&waits.execution_arn)
            .expect("lists runs");
        let waiting = runs.first().is_some_and(|run| {
            engine
                .list_map_run_executions(&run.map_run_arn, None, 0, None)
                .is_ok_and(|children| {
                    children.executions.iter().any(|child| {
                        engine
                            .describe_execution(&child.execution_arn)
                            .is_ok_and(|d| d.event_count >= 2)
                    })
                })
        });
        if waiting {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    engine
        .stop_execution(
            &waits.execution_arn,
            Some("Fixture"),
            Some("stopped while its child waits"),
        )
        .expect("stops fan-waits");
    engine
        .wait_until_closed(&waits.execution_arn)
        .expect("fan-waits closes");
    // The run stops its child in the background: wait for that too, so it is written first.
    let aborted = engine
        .list_map_runs(&waits.execution_arn)
        .expect("lists runs");
    for child in engine
        .list_map_run_executions(&aborted[0].map_run_arn, None, 0, None)
        .expect("lists the children")
        .executions
    {
        engine
            .wait_until_closed(&child.execution_arn)
            .expect("the child closes");
    }
    engine.wait_idle();
    let broken_jsonata = run_to_close(
        &engine,
        "broken-jsonata",
        BROKEN_JSONATA,
        "evaluation-failed",
        r#"{"n":1}"#,
    );
    let arns: Vec<String> = arns
        .into_iter()
        .chain([fan.clone(), fails, waits.execution_arn, broken_jsonata])
        .collect();
    let executions: Vec<Value> = arns.iter().map(|arn| execution(&engine, arn)).collect();
    // An EXPRESS machine, tagged, and a synchronous execution of it (nothing is written).
    let quick = engine
        .create_state_machine_of_type(
            "quick",
            QUICK,
            None,
            MachineType::Express,
            &[Tag::new("kind", "express")],
        )
        .expect("creates quick");
    let quick_input = r#"{"n": 2}"#;
    let quick_run = engine
        .start_sync_execution("quick", Some("sync"), quick_input)
        .expect("runs quick");
    assert_eq!(quick_run.status.aws_name(), "SUCCEEDED");
    let machines: Vec<Value> = engine
        .list_state_machines()
        .iter()
        .map(|m| {
            let tags = engine
                .list_tags_for_resource(&m.state_machine_arn)
                .expect("machine tags");
            json!({
                "arn": m.state_machine_arn,
                "name": m.name,
                "definition": m.definition,
                "revision_id": m.revision_id,
                "tags": tags_json(&tags),
                "type": m.machine_type.aws_name(),
            })
        })
        .collect();
    let activities: Vec<Value> = engine
        .list_activities()
        .iter()
        .map(|a| {
            let tags = engine
                .list_tags_for_resource(&a.activity_arn)
                .expect("activity tags");
            json!({"arn": a.activity_arn, "name": a.name, "tags": tags_json(&tags)})
        })
        .collect();
    let expected = json!({
        "start_ms": START_MS,
        "now_ms": clock_now(&engine),
        "retention_ms": RETENTION_MS,
        "segment_size_bytes": SEGMENT_SIZE_BYTES,
        "entropy_seed": ENTROPY_SEED,
        "compaction": {
            "executions_expired_count": compaction.executions_expired_count,
            "segments_deleted_count": compaction.segments_deleted_count,
        },
        "expired_executions": expired,
        "executions": executions,
        "machines": machines,
        "activities": activities,
        "waiting": {"execution_arn": waiting.execution_arn, "token": token},
        "queued_activity": {"execution_arn": queued.execution_arn, "activity_arn": activity},
        "map_run": {
            "map_run_arn": map_run_arn,
            "parent": fan,
            "children": children,
        },
        "express": {
            "machine_arn": quick.state_machine_arn,
            "input": quick_input,
            "output": quick_run.output_text,
        },
        "redrive": {
            "execution_arn": redriven.execution_arn,
            "client_token": "fixture-redrive-1",
            "redrive_ms": redrive.redrive_ms,
            "redrive_count": redrive.redrive_count,
        },
    });
    drop(engine);
    let text = serde_json::to_string_pretty(&expected).expect("serializes");
    std::fs::write(out.join("expected.json"), text + "\n").expect("writes expected.json");
    std::fs::write(out.join("token.txt"), format!("{token}\n")).expect("writes token.txt");
}

/// Creates `machine` from `definition`, starts `name` with `input` and waits until it closed
/// and the engine is idle; its ARN.
fn run_to_close(
    engine: &Engine,
    machine: &str,
    definition: &str,
    name: &str,
    input: &str,
) -> String {
    engine
        .create_state_machine(machine, definition, None)
        .expect("creates the machine");
    let arn = engine
        .start_execution(machine, Some(name), input)
        .expect("starts")
        .execution_arn;
    engine.wait_until_closed(&arn).expect("closes");
    engine.wait_idle();
    arn
}

fn clock_now(engine: &Engine) -> u64 {
    engine.clock().now_ms()
}

fn tags_json(tags: &[Tag]) -> Value {
    let mut pairs: Vec<(String, String)> = tags
        .iter()
        .map(|t| (t.key.clone(), t.value.clone()))
        .collect();
    pairs.sort();
    Value::from(
        pairs
            .into_iter()
            .map(|(key, value)| json!({"key": key, "value": value}))
            .collect::<Vec<_>>(),
    )
}

/// An execution as `DescribeExecution` and `GetExecutionHistory` show it.
fn execution(engine: &Engine, arn: &str) -> Value {
    let description = engine.describe_execution(arn).expect("describes");
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
        "status": description.status.aws_name(),
        "event_count": description.event_count,
        "event_types": types,
        "output": description.output_text,
        "error": description.error,
        "cause": description.cause,
        "redrive_count": description.redrive.redrive_count,
    })
}
