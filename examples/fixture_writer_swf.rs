//! Writes the Amazon SWF backward-compatibility fixture: a data directory holding every SWF
//! record variant (`store::swf::SwfRecord`: domain registered, deprecated, undeprecated and
//! deleted, types registered, deprecated, undeprecated and deleted, tag sets, event batches)
//! and runs closed in several ways plus one left open with a started activity task (its token
//! in `token.txt`), a timer, a signal and a marker.
//!
//! `cargo run --example fixture_writer_swf -- OUT_DIR` writes `OUT_DIR/data/`,
//! `OUT_DIR/expected.json` and `OUT_DIR/token.txt`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use statelog::clock::ManualClock;
use statelog::engine::swf::api;
use statelog::engine::{Engine, EngineOptions};

/// 2024-01-01T00:00:00Z.
const START_MS: u64 = 1_704_067_200_000;
const SEGMENT_SIZE_BYTES: u64 = 16 * 1024;
const DOMAIN: &str = "fixture";

fn input<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("an API input")
}

fn poll_decision(engine: &Engine) -> api::DecisionTask {
    let task = engine
        .swf()
        .poll_for_decision_task(
            &input(json!({"domain": DOMAIN, "taskList": {"name": "deciders"}, "identity": "d"})),
            Duration::ZERO,
        )
        .expect("polls");
    assert!(!task.task_token.is_empty(), "a decision task waits");
    task
}

fn respond(engine: &Engine, token: &str, decisions: Value) {
    engine
        .swf()
        .respond_decision_task_completed(&input(json!({
            "taskToken": token, "decisions": decisions, "executionContext": "ctx"
        })))
        .expect("answers");
}

fn poll_activity(engine: &Engine) -> api::ActivityTask {
    let task = engine
        .swf()
        .poll_for_activity_task(
            &input(json!({"domain": DOMAIN, "taskList": {"name": "workers"}, "identity": "w"})),
            Duration::ZERO,
        )
        .expect("polls");
    assert!(!task.task_token.is_empty(), "an activity task waits");
    task
}

fn start(engine: &Engine, workflow_id: &str) -> String {
    engine
        .swf()
        .start_workflow_execution(&input(json!({
            "domain": DOMAIN, "workflowId": workflow_id,
            "workflowType": {"name": "order", "version": "1"}, "input": workflow_id,
            "tagList": ["fixture"]
        })))
        .expect("starts")
        .run_id
}

fn schedule(id: &str) -> Value {
    json!({"decisionType": "ScheduleActivityTask", "scheduleActivityTaskDecisionAttributes": {
        "activityType": {"name": "charge", "version": "1"}, "activityId": id, "input": id}})
}

fn main() {
    let out = std::env::args()
        .nth(1)
        .expect("usage: fixture_writer_swf OUT_DIR");
    let out = Path::new(&out);
    let data = out.join("data");
    std::fs::create_dir_all(&data).expect("creates the data directory");
    let clock = ManualClock::new(START_MS);
    let options = EngineOptions {
        clock: Arc::new(clock.clone()),
        background_timers: false,
        compaction_interval_ms: 0,
        segment_size_bytes: SEGMENT_SIZE_BYTES,
        ..EngineOptions::default()
    };
    let engine = Engine::open(&data, options).expect("opens");
    let swf = engine.swf();
    swf.register_domain(&input(json!({
        "name": DOMAIN, "description": "the SWF fixture",
        "workflowExecutionRetentionPeriodInDays": "30",
        "tags": [{"key": "team", "value": "fixtures"}]
    })))
    .expect("domain");
    for (name, action) in [("gone", "delete"), ("kept", "undeprecate")] {
        swf.register_domain(&input(json!({
            "name": name, "workflowExecutionRetentionPeriodInDays": "1"
        })))
        .expect("domain");
        swf.deprecate_domain(&input(json!({"name": name})))
            .expect("deprecates");
        if action == "delete" {
            swf.delete_domain(&input(json!({"name": name})))
                .expect("deletes");
        } else {
            swf.undeprecate_domain(&input(json!({"name": name})))
                .expect("undeprecates");
        }
    }
    swf.register_workflow_type(&input(json!({
        "domain": DOMAIN, "name": "order", "version": "1", "description": "orders",
        "defaultTaskStartToCloseTimeout": "60", "defaultExecutionStartToCloseTimeout": "86400",
        "defaultTaskList": {"name": "deciders"}, "defaultTaskPriority": "2",
        "defaultChildPolicy": "TERMINATE"
    })))
    .expect("workflow type");
    swf.register_activity_type(&input(json!({
        "domain": DOMAIN, "name": "charge", "version": "1",
        "defaultTaskStartToCloseTimeout": "300", "defaultTaskHeartbeatTimeout": "NONE",
        "defaultTaskList": {"name": "workers"}, "defaultTaskScheduleToStartTimeout": "NONE",
        "defaultTaskScheduleToCloseTimeout": "NONE"
    })))
    .expect("activity type");
    for version in ["old", "retired"] {
        let t = json!({"domain": DOMAIN, "activityType": {"name": "charge", "version": version}});
        swf.register_activity_type(&input(json!({
            "domain": DOMAIN, "name": "charge", "version": version
        })))
        .expect("activity type");
        swf.deprecate_activity_type(&input(t.clone()))
            .expect("deprecates");
        if version == "old" {
            swf.undeprecate_activity_type(&input(t))
                .expect("undeprecates");
        } else {
            swf.delete_activity_type(&input(t)).expect("deletes");
        }
    }
    swf.tag_resource(&input(json!({
        "resourceArn": swf.domain_arn(DOMAIN), "tags": [{"key": "tier", "value": "gold"}]
    })))
    .expect("tags");

    // A run that completes: an activity, a timer, a marker and a signal.
    let done = start(&engine, "done");
    let task = poll_decision(&engine);
    respond(
        &engine,
        &task.task_token,
        json!([schedule("pay"),
               {"decisionType": "StartTimer", "startTimerDecisionAttributes":
                    {"timerId": "wait", "startToFireTimeout": "5"}},
               {"decisionType": "RecordMarker", "recordMarkerDecisionAttributes":
                    {"markerName": "m", "details": "d"}}]),
    );
    let activity = poll_activity(&engine);
    swf.respond_activity_task_completed(&input(json!({
        "taskToken": activity.task_token, "result": "paid"
    })))
    .expect("completes");
    swf.signal_workflow_execution(&input(json!({
        "domain": DOMAIN, "workflowId": "done", "signalName": "go", "input": "now"
    })))
    .expect("signals");
    clock.advance_ms(5_000);
    engine.run_due_timers();
    let task = poll_decision(&engine);
    respond(
        &engine,
        &task.task_token,
        json!([{"decisionType": "CompleteWorkflowExecution",
                "completeWorkflowExecutionDecisionAttributes": {"result": "ok"}}]),
    );
    // A run that fails, and one terminated.
    let failed = start(&engine, "failed");
    let task = poll_decision(&engine);
    respond(
        &engine,
        &task.task_token,
        json!([{"decisionType": "FailWorkflowExecution",
                "failWorkflowExecutionDecisionAttributes": {"reason": "no", "details": "why"}}]),
    );
    let terminated = start(&engine, "terminated");
    swf.terminate_workflow_execution(&input(json!({
        "domain": DOMAIN, "workflowId": "terminated", "reason": "enough"
    })))
    .expect("terminates");
    // A run left open with a started activity task.
    let open = start(&engine, "open");
    let task = poll_decision(&engine);
    respond(&engine, &task.task_token, json!([schedule("ship")]));
    let activity = poll_activity(&engine);
    std::fs::write(out.join("token.txt"), &activity.task_token).expect("writes the token");

    let runs: Vec<Value> = [
        ("done", &done, "COMPLETED"),
        ("failed", &failed, "FAILED"),
        ("terminated", &terminated, "TERMINATED"),
        ("open", &open, "OPEN"),
    ]
    .iter()
    .map(|(workflow_id, run_id, status)| {
        let history = swf
            .get_workflow_execution_history(&input(json!({
                "domain": DOMAIN, "execution": {"workflowId": workflow_id, "runId": run_id}
            })))
            .expect("history");
        let types: Vec<Value> = history
            .events
            .iter()
            .map(|e| e["eventType"].clone())
            .collect();
        json!({"workflow_id": workflow_id, "run_id": run_id, "status": status,
               "event_types": types})
    })
    .collect();
    let expected = json!({
        "writer": "fixture_writer_swf",
        "start_ms": START_MS,
        "now_ms": clock_now(&clock),
        "segment_size_bytes": SEGMENT_SIZE_BYTES,
        "swf": {
            "domain": DOMAIN,
            "domains": ["fixture", "kept"],
            "activity_versions": ["1", "old"],
            "tags": [{"key": "team", "value": "fixtures"}, {"key": "tier", "value": "gold"}],
            "runs": runs,
        }
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
