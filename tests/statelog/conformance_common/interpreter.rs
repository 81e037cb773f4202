//! The interpreter-only driver of the conformance suites: runs one recorded case through
//! `decide`/`apply` alone, on a simulated clock (timers fire in due order) with seeded entropy.
//! What a suite answers while the execution waits (a stop, a task's recorded outcome, a token's
//! answer) comes from the suite's `next` closure.

use serde_json::Value;
use statelog::asl::parse_definition;
use statelog::history::{EventId, HistoryEvent};
use statelog::interpreter::{
    apply, decide, Effect, ExecutionState, InputAsWritten, Options, StartRequest, Trigger,
};
use statelog_rng::Rng;

/// The simulated start time of every case.
const T0_MS: u64 = 1_700_000_000_000;

/// Decisions one case may take before it counts as not finishing.
const DECISIONS_MAX: usize = 100_000;

/// The start request of case number `n`: ARNs named after `n`, the recorded role, no input yet
/// (`drive` parses the case's input).
pub fn case_request(n: usize, case: &Value) -> StartRequest {
    let sm_name = format!("statemachine{n}x");
    StartRequest {
        input: Value::Null,
        input_text: None,
        execution_arn: format!(
            "arn:aws:states:us-east-1:000000000000:execution:{sm_name}:execution{n}x"
        ),
        state_machine_arn: format!("arn:aws:states:us-east-1:000000000000:stateMachine:{sm_name}"),
        role_arn: case["role_arn"].as_str().unwrap_or_default().to_string(),
        through: None,
        map_run_arn: None,
    }
}

/// Runs `case` (its `definition` and `input`) to its end; returns (events, AWS status name) or
/// why it could not run. While the execution is open, `next` gets the invoked tasks not yet
/// answered (oldest first; it removes the ones it answers) and returns the trigger to decide
/// next, or `None` to fire the earliest timer.
pub fn drive(
    case: &Value,
    request: StartRequest,
    mut next: impl FnMut(&mut Vec<EventId>) -> Result<Option<Trigger>, String>,
) -> Result<(Vec<HistoryEvent>, String), String> {
    let definition = case["definition"].as_str().unwrap_or_default();
    let input = case["input"].as_str().unwrap_or_default();
    let def = parse_definition(definition, &statelog::engine::validate::options())
        .map_err(|d| format!("definition rejected: {d:?}"))?;
    let (input, input_text) = InputAsWritten::parse(input).map_err(|e| format!("input: {e}"))?;
    let options = Options::default();
    let mut entropy = Rng::new(0x2545_f491_4f6c_dd1d);
    let mut state = ExecutionState::new();
    let mut events = Vec::new();
    let mut tasks = Vec::new();
    let mut timers: Vec<(u64, EventId)> = Vec::new();
    let mut now_ms = T0_MS;
    let mut trigger = Trigger::Start(StartRequest {
        input,
        input_text,
        ..request
    });
    for _ in 0..DECISIONS_MAX {
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
        if let Some(answer) = next(&mut tasks)? {
            trigger = answer;
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
