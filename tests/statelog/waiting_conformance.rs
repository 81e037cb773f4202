//! Conformance of `.waitForTaskToken` tasks against histories recorded on real AWS Step
//! Functions: the manifest cases that need `callback` (plus the request/response services and
//! input placeholders the core conformance test accepts) run through `decide`/`apply` alone; the
//! integration's recorded answer submits the task (`TaskSubmitted`), then the recorded token
//! answer (`SendTaskSuccess`/`SendTaskFailure`) or timeout completes it. Cases are listed and
//! judged by `tests/waiting_conformance_judge.py` with the official comparator (`run.judge`).
//!
//! Skips with a printed reason when the corpus or python3 is absent. The pass count has a floor
//! that may only go up.

use crate::conformance_common;
use conformance_common::interpreter::{case_request, drive};
use conformance_common::Judge;

use serde_json::{json, Value};
use statelog::history::aws_json::render_history;
use statelog::history::{EventDetails, EventId};
use statelog::interpreter::Trigger;

/// Cases that must pass; raise it when more pass, never lower it (all 13 pass).
const PASSED_FLOOR: usize = 13;

/// Answers while the execution waits, the oldest task first (a submitted token task before a
/// task not yet submitted), with the next outcome AWS recorded: the integration's answer submits
/// a token task, then the token's answer (or timeout) completes it; `None` fires the next timer.
fn answer_recorded(
    answers: &[Value],
) -> impl FnMut(&mut Vec<EventId>) -> Result<Option<Trigger>, String> + '_ {
    let mut answers = answers.iter();
    let mut waiting: Vec<EventId> = Vec::new();
    move |tasks| {
        let Some(task_id) = waiting.first().copied().or_else(|| tasks.first().copied()) else {
            return Ok(None);
        };
        let answer = answers.next().ok_or("a task AWS did not run")?;
        let parse = |text: &Value| -> Result<Value, String> {
            serde_json::from_str(text.as_str().unwrap_or_default())
                .map_err(|e| format!("output: {e}"))
        };
        tasks.retain(|t| *t != task_id);
        if let Some(output) = answer.get("submitted") {
            waiting.push(task_id);
            return Ok(Some(Trigger::TaskSucceeded {
                task_id,
                output: parse(output)?,
            }));
        }
        waiting.retain(|t| *t != task_id);
        Ok(Some(if let Some(output) = answer.get("output") {
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
        }))
    }
}

#[test]
fn callback_cases_match_the_aws_recordings() {
    let Some((judge, cases)) = Judge::list("waiting_conformance_judge.py") else {
        return;
    };
    let mut results = Vec::new();
    for (n, case) in cases.iter().enumerate() {
        let request = case_request(n, case);
        let (sm_arn, exec_arn) = (
            request.state_machine_arn.clone(),
            request.execution_arn.clone(),
        );
        let answers = case["answers"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        let outcome = drive(case, request, answer_recorded(answers));
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
