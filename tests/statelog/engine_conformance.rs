//! Conformance through the engine API: every manifest case `tests/conformance_judge.py` lists
//! (the core language, the StopExecution case stopped right after its start, and request/response
//! service tasks answered by a registered handler with the outcomes AWS recorded, oldest task
//! first, one at a time) is created, started and driven to its end by a real `Engine` on a real
//! data directory and a manual clock (due timers fired in order when no task is waiting), its
//! history is read back from the log (all pages) in the AWS JSON shape and judged by the official
//! comparator (`run.judge`).
//!
//! Skips with a printed reason when the corpus or python3 is absent. The pass count has a floor
//! that may only go up.

use crate::conformance_common;
use conformance_common::Judge;

use std::sync::mpsc;
use std::sync::Arc;

use serde_json::{json, Value};
use statelog::clock::{Clock, ManualClock};
use statelog::engine::{Engine, EngineOptions, HistoryQuery, TaskError};

/// A task waiting for the test to answer it.
type Gate = tokio::sync::oneshot::Sender<Result<Value, TaskError>>;

/// Every `Resource` in a definition.
fn resources(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(resource)) = map.get("Resource") {
                out.push(resource.clone());
            }
            map.values().for_each(|v| resources(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| resources(v, out)),
        _ => {}
    }
}

/// Registers a handler for every resource of `definition` that parks each call on a gate sent
/// to `gates`, in dispatch order.
fn register_gated(engine: &Engine, definition: &str, gates: &mpsc::Sender<Gate>) {
    let mut found = Vec::new();
    if let Ok(parsed) = serde_json::from_str::<Value>(definition) {
        resources(&parsed, &mut found);
    }
    for resource in found {
        let gates = gates.clone();
        engine.register_integration(&resource, move |_input: Value, _context: Value| {
            let (gate, answer) = tokio::sync::oneshot::channel();
            let _ = gates.send(gate);
            async move {
                answer.await.unwrap_or_else(|_| {
                    Err(TaskError::new(
                        "States.Runtime",
                        "the test dropped the task",
                    ))
                })
            }
        });
    }
}

/// A recorded answer as a handler result.
fn recorded(answer: &Value) -> Result<Result<Value, TaskError>, String> {
    match answer.get("output").and_then(Value::as_str) {
        Some(output) => Ok(Ok(
            serde_json::from_str(output).map_err(|e| format!("output: {e}"))?
        )),
        None => Ok(Err(TaskError::new(
            answer["error"].as_str().unwrap_or_default(),
            answer["cause"].as_str().unwrap_or_default(),
        ))),
    }
}

/// Cases that must pass through the engine; raise it when more pass, never lower it.
const PASSED_FLOOR: usize = 257;

/// Of them, the JSONPath cases that need workflow variables; the 3 others are recorded with
/// payloads the recorder parsed (a list or a number where AWS answers JSON text).
const VARIABLES_PASSED_FLOOR: usize = 20;

/// The manual clock's start.
const T0_MS: u64 = 1_700_000_000_000;

/// The most timers one case may fire before it counts as stuck.
const CASE_TIMERS_MAX: usize = 10_000;

/// Runs one case through the engine; returns (rendered events, status) or why it could not.
fn run_case(
    engine: &Engine,
    clock: &ManualClock,
    n: usize,
    case: &Value,
) -> Result<(Value, String, String, String), String> {
    let machine = format!("statemachine{n}x");
    let name = format!("execution{n}x");
    let definition = case["definition"].as_str().unwrap_or_default();
    let role = case["role_arn"].as_str();
    let (gate_sender, gate_receiver) = mpsc::channel::<Gate>();
    register_gated(engine, definition, &gate_sender);
    let mut answers = case["answers"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter();
    let mut waiting = std::collections::VecDeque::new();
    engine
        .create_state_machine(&machine, definition, role)
        .map_err(|e| format!("{}: {e}", e.aws_name()))?;
    let input = case["input"].as_str().unwrap_or_default();
    let arn = engine
        .start_execution(&machine, Some(&name), input)
        .map_err(|e| format!("{}: {e}", e.aws_name()))?
        .execution_arn;
    if case["stop"].as_bool().unwrap_or(false) {
        engine
            .stop_execution(&arn, None, None)
            .map_err(|e| e.to_string())?;
    }
    let mut fired = 0;
    loop {
        let d = engine.describe_execution(&arn).map_err(|e| e.to_string())?;
        if d.status.is_closed() {
            break;
        }
        waiting.extend(gate_receiver.try_iter());
        if let Some(gate) = waiting.pop_front() {
            // Answer the oldest task with the next outcome AWS recorded, and wait until the
            // engine has recorded it.
            if gate.is_closed() {
                // The engine cancelled this task (timed out or aborted): nothing to answer.
                continue;
            }
            let answer = answers.next().ok_or("a task AWS did not run")?;
            let target = engine.answers_recorded() + 1;
            if gate.send(recorded(&answer)?).is_ok() {
                engine.wait_answers_recorded(target);
            }
            continue;
        }
        let due_ms = engine
            .next_timer_due_ms()
            .ok_or("stuck: open with nothing to wait for")?;
        if due_ms > clock.now_ms() {
            clock.set_ms(due_ms);
        }
        fired += engine.run_due_timers();
        if fired > CASE_TIMERS_MAX {
            return Err("did not finish".into());
        }
    }
    let mut events = Vec::new();
    let mut query = HistoryQuery {
        max_results: 1000,
        ..HistoryQuery::default()
    };
    loop {
        let page = engine
            .get_execution_history(&arn, &query)
            .map_err(|e| e.to_string())?;
        if let Value::Array(rendered) = page.to_aws_json()["events"].take() {
            events.extend(rendered);
        }
        match page.next_token {
            Some(token) => query.next_token = Some(token),
            None => break,
        }
    }
    let status = engine
        .describe_execution(&arn)
        .map_err(|e| e.to_string())?
        .status
        .aws_name()
        .to_string();
    engine
        .delete_state_machine(&machine)
        .map_err(|e| e.to_string())?;
    Ok((
        Value::Array(events),
        status,
        engine.state_machine_arn(&machine),
        arn,
    ))
}

/// JSONata cases that need variables and must pass; raise it when more pass, never lower it.
const JSONATA_VARIABLES_PASSED_FLOOR: usize = 10;

/// JSONata cases (with or without variables) that must pass through the engine; raise it
/// when more pass, never lower it.
const JSONATA_PASSED_FLOOR: usize = 92;

/// Runs the cases `selection` lists through one engine and judges them against `floor`.
fn run_listed(selection: &[&str], label: &str, floor: usize) -> Option<(Vec<Value>, Vec<String>)> {
    let (judge, cases) = Judge::list_selected("conformance_judge.py", selection)?;
    let data = tempfile::tempdir().expect("temp dir");
    let clock = ManualClock::new(T0_MS);
    let options = EngineOptions {
        clock: Arc::new(clock.clone()),
        background_timers: false,
        entropy_seed: Some(0x2545_f491_4f6c_dd1d),
        ..EngineOptions::default()
    };
    let engine = Engine::open(data.path(), options).expect("engine opens");
    let mut results = Vec::new();
    for (n, case) in cases.iter().enumerate() {
        results.push(match run_case(&engine, &clock, n, case) {
            Ok((events, status, sm_arn, exec_arn)) => json!({
                "id": case["id"], "status": status, "sm_arn": sm_arn, "exec_arn": exec_arn,
                "events": events,
            }),
            Err(error) => json!({"id": case["id"], "error": error}),
        });
    }
    let passed = judge.judge_and_report(&results, label, floor);
    Some((cases, passed))
}

#[test]
fn listed_cases_through_the_engine_match_the_aws_recordings() {
    let Some((cases, passed)) = run_listed(
        &[],
        "conformance through the engine (core, stop, recorded task answers)",
        PASSED_FLOOR,
    ) else {
        return;
    };
    conformance_common::report_need(
        &cases,
        &passed,
        "variables",
        "conformance through the engine",
        VARIABLES_PASSED_FLOOR,
    );
}

#[test]
fn jsonata_cases_through_the_engine_match_the_aws_recordings() {
    let Some((cases, passed)) = run_listed(
        &["jsonata"],
        "conformance through the engine (JSONata)",
        JSONATA_PASSED_FLOOR,
    ) else {
        return;
    };
    conformance_common::report_need(
        &cases,
        &passed,
        "variables",
        "conformance through the engine (JSONata)",
        JSONATA_VARIABLES_PASSED_FLOOR,
    );
}
