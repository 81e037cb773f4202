//! Conformance of `.waitForTaskToken` tasks against histories recorded on real AWS Step
//! Functions: the manifest cases that need `callback` (plus the request/response services and
//! input placeholders the core conformance test accepts) run through `decide`/`apply` alone; the
//! integration's recorded answer submits the task (`TaskSubmitted`), then the recorded token
//! answer (`SendTaskSuccess`/`SendTaskFailure`) or timeout completes it. Cases are listed and
//! judged by `tests/waiting_conformance_judge.py` with the official comparator (`run.judge`).
//!
//! Skips with a printed reason when the corpus or python3 is absent. The pass count has a floor
//! that may only go up.

mod conformance_common;
use conformance_common::Judge;

use serde_json::{json, Value};
use statelog::asl::{parse_definition, ValidationOptions};
use statelog::history::aws_json::render_history;
use statelog::history::{EventDetails, HistoryEvent};
use statelog::interpreter::{
    apply, decide, Effect, Entropy, ExecutionState, Options, StartRequest, Trigger,
};

/// Cases that must pass; raise it when more pass, never lower it (all 13 pass).
const PASSED_FLOOR: usize = 13;

/// The simulated start time of every case.
const T0_MS: u64 = 1_700_000_000_000;

struct Seeded(u64);

impl Entropy for Seeded {
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Runs one case to its end; returns (events, AWS status name) or why it could not run.
fn run_case(
    definition: &str,
    input: &str,
    request: StartRequest,
    answers: &[Value],
) -> Result<(Vec<HistoryEvent>, String), String> {
    let mut answers = answers.iter();
    let mut tasks = Vec::new();
    let mut waiting: Vec<statelog::history::EventId> = Vec::new();
    let def = parse_definition(definition, &ValidationOptions::default())
        .map_err(|d| format!("definition rejected: {d:?}"))?;
    let input_text = Some(input.to_string());
    let input: Value = serde_json::from_str(input).map_err(|e| format!("input: {e}"))?;
    let options = Options::default();
    let mut entropy = Seeded(0x2545_f491_4f6c_dd1d);
    let mut state = ExecutionState::new();
    let mut events = Vec::new();
    let mut timers: Vec<(u64, statelog::history::EventId)> = Vec::new();
    let mut now_ms = T0_MS;
    let mut trigger = Trigger::Start(StartRequest {
        input,
        input_text,
        ..request
    });
    for _ in 0..100_000 {
        let decision = decide(&def, &state, trigger, now_ms, &options, &mut entropy)
            .map_err(|e| format!("decide: {e}"))?;
        for event in &decision.events {
            apply(&mut state, event).map_err(|e| format!("apply: {e}"))?;
        }
        events.extend(decision.events);
        for effect in decision.effects {
            match effect {
                Effect::ArmTimer {
                    timer_id, due_ms, ..
                } => timers.push((due_ms, timer_id)),
                Effect::InvokeTask(task) => tasks.push(task.task_id),
                Effect::CancelTask { .. } | Effect::Closed { .. } => {}
            }
        }
        if state.status().is_closed() {
            return Ok((events, state.status().aws_name().to_string()));
        }
        if let Some(task_id) = waiting.first().copied().or_else(|| tasks.first().copied()) {
            // Answer the oldest task with the next outcome AWS recorded: the integration's
            // answer submits a token task, then the token's answer (or timeout) completes it.
            let answer = answers.next().ok_or("a task AWS did not run")?;
            let parse = |text: &Value| -> Result<Value, String> {
                serde_json::from_str(text.as_str().unwrap_or_default())
                    .map_err(|e| format!("output: {e}"))
            };
            trigger = if let Some(output) = answer.get("submitted") {
                tasks.retain(|t| *t != task_id);
                waiting.push(task_id);
                Trigger::TaskSucceeded {
                    task_id,
                    output: parse(output)?,
                }
            } else {
                tasks.retain(|t| *t != task_id);
                waiting.retain(|t| *t != task_id);
                if let Some(output) = answer.get("output") {
                    Trigger::TokenSucceeded {
                        task_id,
                        output: parse(output)?,
                    }
                } else if let Some(error) = answer.get("timed_out") {
                    Trigger::TaskTimedOut {
                        task_id,
                        error: error.as_str().unwrap_or_default().to_string(),
                    }
                } else {
                    Trigger::TokenFailed {
                        task_id,
                        error: answer["error"].as_str().unwrap_or_default().to_string(),
                        cause: answer["cause"].as_str().unwrap_or_default().to_string(),
                    }
                }
            };
            continue;
        }
        timers.sort();
        if timers.is_empty() {
            return Err("stuck: open with nothing to wait for".into());
        }
        let (due_ms, timer_id) = timers.remove(0);
        now_ms = now_ms.max(due_ms);
        trigger = Trigger::TimerFired { timer_id };
    }
    Err("did not finish".into())
}

#[test]
fn callback_cases_match_the_aws_recordings() {
    let Some((judge, cases)) = Judge::list("waiting_conformance_judge.py") else {
        return;
    };
    let mut results = Vec::new();
    for (n, case) in cases.iter().enumerate() {
        let sm_name = format!("statemachine{n}x");
        let sm_arn = format!("arn:aws:states:us-east-1:000000000000:stateMachine:{sm_name}");
        let exec_arn =
            format!("arn:aws:states:us-east-1:000000000000:execution:{sm_name}:execution{n}x");
        let request = StartRequest {
            input: Value::Null,
            input_text: None,
            execution_arn: exec_arn.clone(),
            state_machine_arn: sm_arn.clone(),
            role_arn: case["role_arn"].as_str().unwrap_or_default().to_string(),
        };
        let outcome = run_case(
            case["definition"].as_str().unwrap_or_default(),
            case["input"].as_str().unwrap_or_default(),
            request,
            case["answers"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default(),
        );
        results.push(match outcome {
            Ok((events, status)) => {
                let tokens: Vec<String> = events
                    .iter()
                    .filter_map(|e| match &e.details {
                        EventDetails::TaskScheduled(d) => d.task_token.clone(),
                        _ => None,
                    })
                    .collect();
                json!({
                    "id": case["id"], "status": status, "sm_arn": sm_arn, "exec_arn": exec_arn,
                    "events": render_history(&events, true), "tokens": tokens,
                })
            }
            Err(error) => json!({"id": case["id"], "error": error}),
        });
    }
    judge.judge_and_report(
        &results,
        "conformance (callback: .waitForTaskToken tasks answered as AWS recorded, interpreter only)",
        PASSED_FLOOR,
    );
}
