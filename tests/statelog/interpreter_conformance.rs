//! Conformance of the pure interpreter against histories recorded on real AWS Step Functions:
//! every manifest case that needs nothing beyond the core language (`needs: []`, no Task states;
//! plus the StopExecution case, stopped right after its start, and the cases that need only
//! request/response service integrations, whose tasks are answered with the outcomes AWS
//! recorded) runs through `decide`/`apply` alone (timers fired in order on a simulated clock), its history
//! is rendered in the AWS JSON shape and judged by the official comparator (`run.judge` in
//! `../shared/conformance/run.py`, fed by `tests/conformance_judge.py`).
//!
//! The JSONPath cases that need workflow variables run too (counted apart); those that also
//! need JSONata do not.
//!
//! Skips with a printed reason when the corpus or python3 is absent. The pass count has a floor
//! that may only go up.

use crate::conformance_common;
use conformance_common::interpreter::{case_request, drive};
use conformance_common::Judge;

use serde_json::{json, Value};
use statelog::history::aws_json::render_history;
use statelog::history::EventId;
use statelog::interpreter::Trigger;

/// Cases that must pass; raise it when more pass, never lower it. The 6 others hold recorder
/// placeholders no engine can produce (`RandomNumberGenerated`, `generated-uuid`, `start-time`).
const PASSED_FLOOR: usize = 257;

/// Of them, the cases that need workflow variables (JSONPath `Assign` and `$name`); raise it
/// when more pass. The 3 others are recorded with payloads the recorder parsed (a list or a
/// number where AWS answers JSON text).
const VARIABLES_PASSED_FLOOR: usize = 20;

/// Answers while the execution waits: a stop right after the start for the StopExecution case,
/// else the oldest task gets the next outcome AWS recorded; `None` fires the next timer.
fn answer_recorded(
    stop_after_start: bool,
    answers: &[Value],
) -> impl FnMut(&mut Vec<EventId>) -> Result<Option<Trigger>, String> + '_ {
    let mut answers = answers.iter();
    move |tasks| {
        if stop_after_start {
            return Ok(Some(Trigger::Stop {
                error: None,
                cause: None,
            }));
        }
        if tasks.is_empty() {
            return Ok(None);
        }
        let task_id = tasks.remove(0);
        let answer = answers.next().ok_or("a task AWS did not run")?;
        Ok(Some(match answer.get("output").and_then(Value::as_str) {
            Some(output) => Trigger::TaskSucceeded {
                task_id,
                output: serde_json::from_str(output).map_err(|e| format!("output: {e}"))?,
            },
            None => Trigger::TaskFailed {
                task_id,
                error: answer["error"].as_str().unwrap_or_default().to_string(),
                cause: answer["cause"].as_str().unwrap_or_default().to_string(),
            },
        }))
    }
}

/// JSONata cases that need variables and must pass; raise it when more pass, never lower it.
const JSONATA_VARIABLES_PASSED_FLOOR: usize = 10;

/// JSONata cases (with or without variables) that must pass through the interpreter; raise it
/// when more pass, never lower it.
const JSONATA_PASSED_FLOOR: usize = 92;

/// Runs the cases `selection` lists and judges them against `floor`.
fn run_listed(selection: &[&str], label: &str, floor: usize) -> Option<(Vec<Value>, Vec<String>)> {
    let (judge, cases) = Judge::list_selected("conformance_judge.py", selection)?;
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
        let stop_after_start = case["stop"].as_bool().unwrap_or(false);
        let outcome = drive(case, request, answer_recorded(stop_after_start, answers));
        results.push(match outcome {
            Ok((events, status)) => json!({
                "id": case["id"], "status": status, "sm_arn": sm_arn, "exec_arn": exec_arn,
                "events": render_history(&events, true),
            }),
            Err(error) => json!({"id": case["id"], "error": error}),
        });
    }
    let passed = judge.judge_and_report(&results, label, floor);
    Some((cases, passed))
}

#[test]
fn needs_none_cases_match_the_aws_recordings() {
    let Some((cases, passed)) = run_listed(
        &[],
        "conformance (core language + stop + request/response integrations, interpreter only)",
        PASSED_FLOOR,
    ) else {
        return;
    };
    conformance_common::report_need(
        &cases,
        &passed,
        "variables",
        "conformance, interpreter only",
        VARIABLES_PASSED_FLOOR,
    );
}

#[test]
fn jsonata_cases_match_the_aws_recordings() {
    let Some((cases, passed)) = run_listed(
        &["jsonata"],
        "conformance (JSONata; interpreter only)",
        JSONATA_PASSED_FLOOR,
    ) else {
        return;
    };
    conformance_common::report_need(
        &cases,
        &passed,
        "variables",
        "conformance (JSONata; interpreter only)",
        JSONATA_VARIABLES_PASSED_FLOOR,
    );
}
