//! effects: what the runtime must do for an execution, derived from its folded state alone
//! ([`pending_effects`]), and the difference between two states (what one decision adds).
//!
//! Invariant: everything an open execution waits on appears here (its timers and its tasks in
//! flight), so recovery re-arms and re-dispatches from the log. Must not: look at the clock.

use std::collections::BTreeSet;

use super::io::context_object;
use super::state::{ExecutionState, IterationOutcome, Phase, Thread};
use super::{Effect, TaskInvocation, TimerKind};
use crate::history::EventId;

/// Every effect the execution's state calls for now: the timers to arm, the tasks to dispatch,
/// or `Closed`. Deterministic order (the execution timer, then threads depth-first).
pub fn pending_effects(state: &ExecutionState) -> Vec<Effect> {
    let mut effects = Vec::new();
    if state.status().is_closed() {
        effects.push(Effect::Closed {
            status: state.status(),
        });
        return effects;
    }
    if let Some(timer) = state.execution_timer {
        effects.push(Effect::ArmTimer {
            timer_id: EventId(timer.id),
            due_ms: timer.due_ms,
            kind: TimerKind::ExecutionTimeout,
        });
    }
    collect(state, &state.root, &mut effects);
    effects
}

fn collect(state: &ExecutionState, thread: &Thread, effects: &mut Vec<Effect>) {
    let Thread::Running(run) = thread else { return };
    match &run.phase {
        Phase::Waiting { timer } => effects.push(Effect::ArmTimer {
            timer_id: EventId(timer.id),
            due_ms: timer.due_ms,
            kind: TimerKind::Wait,
        }),
        Phase::Backoff { timer } => effects.push(Effect::ArmTimer {
            timer_id: EventId(timer.id),
            due_ms: timer.due_ms,
            kind: TimerKind::RetryBackoff,
        }),
        // A submitted `.waitForTaskToken` task or a claimed activity task waits for its
        // token: nothing to dispatch.
        Phase::Task(task) if task.token.is_some() && super::waiting::handed_over(task) => {
            if let Some(timer) = task.timeout_timer {
                effects.push(Effect::ArmTimer {
                    timer_id: EventId(timer.id),
                    due_ms: timer.due_ms,
                    kind: TimerKind::TaskTimeout,
                });
            }
        }
        Phase::Task(task) => {
            let context = match &state.info {
                Some(info) => context_object(info, run),
                None => serde_json::Value::Null,
            };
            effects.push(Effect::InvokeTask(TaskInvocation {
                task_id: EventId(task.task_id),
                attempt: task.attempt,
                state_name: run.name.clone(),
                resource: task.resource_arn.clone(),
                input: task.parameters.clone(),
                context,
                heartbeat_seconds: task.heartbeat_seconds,
            }));
            if let Some(timer) = task.timeout_timer {
                effects.push(Effect::ArmTimer {
                    timer_id: EventId(timer.id),
                    due_ms: timer.due_ms,
                    kind: TimerKind::TaskTimeout,
                });
            }
        }
        Phase::Parallel { branches } => {
            for branch in branches {
                collect(state, branch, effects);
            }
        }
        Phase::Map { iterations, .. } => {
            for iteration in iterations {
                if iteration.outcome == IterationOutcome::Running {
                    collect(state, &iteration.thread, effects);
                }
            }
        }
        Phase::Entered | Phase::TaskSucceeded { .. } | Phase::Failed { .. } | Phase::Finishing => {}
    }
}

/// The effects of going from `before` to `after`: new timers and tasks, tasks no longer awaited
/// (except `answered`, the task whose answer caused the decision), and the close.
pub(crate) fn difference(
    before: &[Effect],
    after: Vec<Effect>,
    answered: Option<EventId>,
) -> Vec<Effect> {
    let key = |e: &Effect| match e {
        Effect::InvokeTask(t) => Some((0u8, t.task_id)),
        Effect::ArmTimer { timer_id, .. } => Some((1u8, *timer_id)),
        Effect::CancelTask { .. } | Effect::Closed { .. } => None,
    };
    let before_keys: BTreeSet<_> = before.iter().filter_map(key).collect();
    let after_keys: BTreeSet<_> = after.iter().filter_map(key).collect();
    let was_closed = before.iter().any(|e| matches!(e, Effect::Closed { .. }));
    let mut effects: Vec<Effect> = Vec::new();
    for effect in before {
        if let Effect::InvokeTask(task) = effect {
            if !after_keys.contains(&(0, task.task_id)) && Some(task.task_id) != answered {
                effects.push(Effect::CancelTask {
                    task_id: task.task_id,
                });
            }
        }
    }
    for effect in after {
        let new = match key(&effect) {
            Some(k) => !before_keys.contains(&k),
            None => matches!(effect, Effect::Closed { .. }) && !was_closed,
        };
        if new {
            effects.push(effect);
        }
    }
    effects
}
