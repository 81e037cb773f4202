//! effects: what the runtime must do for an execution, derived from its folded state alone
//! ([`pending_effects`]), and the difference between two states (what one decision adds).
//!
//! Invariant: everything an open execution waits on appears here (its timers and its tasks in
//! flight), so recovery re-arms and re-dispatches from the log. Must not: look at the clock.

use std::collections::BTreeSet;

use super::io::context_object;
use super::state::{ExecutionState, IterationOutcome, Phase, StateRun, TaskRun, Thread, Timer};
use super::{Effect, TaskInvocation, TimerKind};
use crate::history::EventId;

/// Every effect the execution's state calls for now: the timers to arm, the tasks to dispatch,
/// or `Closed`. Deterministic order (the execution timer, then threads depth-first).
pub fn pending_effects(state: &ExecutionState) -> Vec<Effect> {
    collect(state, Build::All).1
}

/// Which of the effects [`collect`] finds it builds (a task's invocation, its Context object,
/// is the costly part).
#[derive(Clone, Copy)]
enum Build<'a> {
    /// Every one ([`pending_effects`]).
    All,
    /// Only those the keys of the state before a decision lack: `difference` would drop the
    /// others anyway.
    Except(&'a Keys),
    /// None: the keys alone.
    Nothing,
}

/// The keys of everything `state` calls for, and the effects `build` asks for, in
/// [`pending_effects`]'s order; one walk of the state.
fn collect(state: &ExecutionState, build: Build<'_>) -> (Keys, Vec<Effect>) {
    let mut keys = Keys::default();
    let mut effects = Vec::new();
    if state.status().is_closed() {
        keys.closed = true;
        if !matches!(build, Build::Nothing) {
            effects.push(Effect::Closed {
                status: state.status(),
            });
        }
        return (keys, effects);
    }
    let builds = |key| match build {
        Build::All => true,
        Build::Except(known) => !known.all.contains(&key),
        Build::Nothing => false,
    };
    visit(state, &mut |pending| match pending {
        Pending::Timer { timer, kind } => {
            let key = (KEY_TIMER, EventId(timer.id));
            keys.all.insert(key);
            if builds(key) {
                effects.push(Effect::ArmTimer {
                    timer_id: EventId(timer.id),
                    due_ms: timer.due_ms,
                    kind,
                });
            }
        }
        Pending::Task { run, task } => {
            let key = (KEY_TASK, EventId(task.task_id));
            keys.tasks.push(EventId(task.task_id));
            keys.all.insert(key);
            if builds(key) {
                effects.push(Effect::InvokeTask(invocation(state, run, task)));
            }
        }
        Pending::MapRun { run, task_id } => {
            let key = (KEY_TASK, EventId(task_id));
            keys.tasks.push(EventId(task_id));
            keys.all.insert(key);
            if builds(key) {
                effects.push(Effect::InvokeTask(map_run_invocation(state, run, task_id)));
            }
        }
    });
    (keys, effects)
}

/// The task `task` of state `run` as its backend is to be called. An activity task carries no
/// Context object (`null`): its worker gets the input and the token (GetActivityTask), and
/// building the object for every step it schedules was about 4,900 of the 19,700
/// instructions of deciding an activity answer (issue 16).
fn invocation(state: &ExecutionState, run: &StateRun, task: &TaskRun) -> TaskInvocation {
    let context = match &state.info {
        Some(info) if task.activity.is_none() => context_object(info, run, true),
        _ => serde_json::Value::Null,
    };
    TaskInvocation {
        task_id: EventId(task.task_id),
        attempt: task.attempt,
        state_name: run.name.clone(),
        resource: task.resource_arn.clone(),
        input: task.parameters.clone(),
        context,
        heartbeat_seconds: task.heartbeat_seconds,
    }
}

/// A Map Run as its backend is to be called: the reserved resource
/// [`super::MAP_RUN_RESOURCE`], the Map's input as the state received it, the Map Run's ARN in
/// the Context object (`MapRun.Arn`); the backend reads the rest with
/// [`super::map_run_plan`].
fn map_run_invocation(state: &ExecutionState, run: &StateRun, task_id: u32) -> TaskInvocation {
    let mut context = match &state.info {
        Some(info) => context_object(info, run, true),
        None => serde_json::Value::Null,
    };
    if let (serde_json::Value::Object(fields), Phase::MapRun { map_run_arn, .. }) =
        (&mut context, &run.phase)
    {
        fields.insert("MapRun".into(), serde_json::json!({ "Arn": map_run_arn }));
    }
    TaskInvocation {
        task_id: EventId(task_id),
        attempt: run.retried_errors.len() as u32,
        state_name: run.name.clone(),
        resource: super::MAP_RUN_RESOURCE.to_string(),
        input: serde_json::Value::clone(&run.input),
        context,
        heartbeat_seconds: None,
    }
}

/// One thing an open execution waits on, as [`visit`] finds it.
enum Pending<'a> {
    MapRun {
        run: &'a StateRun,
        task_id: u32,
    },
    Timer {
        timer: Timer,
        kind: TimerKind,
    },
    Task {
        run: &'a StateRun,
        task: &'a TaskRun,
    },
}

/// Calls `found` with everything an open execution waits on, in [`pending_effects`]'s order:
/// the execution timer, then threads depth-first (a task before its timeout timer).
fn visit<'a>(state: &'a ExecutionState, found: &mut dyn FnMut(Pending<'a>)) {
    if let Some(timer) = state.execution_timer {
        found(Pending::Timer {
            timer,
            kind: TimerKind::ExecutionTimeout,
        });
    }
    visit_thread(&state.root, found);
}

fn visit_thread<'a>(thread: &'a Thread, found: &mut dyn FnMut(Pending<'a>)) {
    let Thread::Running(run) = thread else { return };
    match &run.phase {
        Phase::Waiting { timer } => found(Pending::Timer {
            timer: *timer,
            kind: TimerKind::Wait,
        }),
        Phase::Backoff { timer } => found(Pending::Timer {
            timer: *timer,
            kind: TimerKind::RetryBackoff,
        }),
        // A submitted `.waitForTaskToken` task or a claimed activity task waits for its
        // token: nothing to dispatch.
        Phase::Task(task) if task.token.is_some() && super::waiting::handed_over(task) => {
            if let Some(timer) = task.timeout_timer {
                found(Pending::Timer {
                    timer,
                    kind: TimerKind::TaskTimeout,
                });
            }
        }
        Phase::Task(task) => {
            found(Pending::Task { run, task });
            if let Some(timer) = task.timeout_timer {
                found(Pending::Timer {
                    timer,
                    kind: TimerKind::TaskTimeout,
                });
            }
        }
        Phase::Parallel { branches } => {
            for branch in branches {
                visit_thread(branch, found);
            }
        }
        Phase::MapRun { task_id, .. } => found(Pending::MapRun {
            run,
            task_id: *task_id,
        }),
        Phase::Map { iterations, .. } => {
            for iteration in iterations {
                if iteration.outcome == IterationOutcome::Running {
                    visit_thread(&iteration.thread, found);
                }
            }
        }
        Phase::Entered
        | Phase::TaskSucceeded { .. }
        | Phase::Failed { .. }
        | Phase::MapRunEnded { .. }
        | Phase::Finishing => {}
    }
}

const KEY_TASK: u8 = 0;
const KEY_TIMER: u8 = 1;

/// What [`difference`] compares of the effects of one state: the keys of its tasks (in order)
/// and timers, and whether it is closed.
#[derive(Debug, Default)]
pub(crate) struct Keys {
    tasks: Vec<EventId>,
    all: BTreeSet<(u8, EventId)>,
    closed: bool,
}

impl Keys {
    fn key(effect: &Effect) -> Option<(u8, EventId)> {
        match effect {
            Effect::InvokeTask(t) => Some((KEY_TASK, t.task_id)),
            Effect::ArmTimer { timer_id, .. } => Some((KEY_TIMER, *timer_id)),
            Effect::CancelTask { .. } | Effect::Closed { .. } => None,
        }
    }

    #[cfg(any(test, debug_assertions))]
    fn of_effects(effects: &[Effect]) -> Self {
        let mut keys = Keys::default();
        for effect in effects {
            if let Effect::InvokeTask(task) = effect {
                keys.tasks.push(task.task_id);
            }
            if matches!(effect, Effect::Closed { .. }) {
                keys.closed = true;
            }
            keys.all.extend(Self::key(effect));
        }
        keys
    }

    /// The keys of `pending_effects(state)`, without building its task invocations.
    pub(crate) fn of_state(state: &ExecutionState) -> Self {
        collect(state, Build::Nothing).0
    }
}

/// What one decision adds, from the keys of the state before it (`Keys::of_state`) to the
/// state after: the same as `difference(&pending_effects(before), pending_effects(after),
/// answered)`, building only the new tasks' invocations.
pub(crate) fn decision_effects(
    before: &Keys,
    after: &ExecutionState,
    answered: Option<EventId>,
) -> Vec<Effect> {
    let (after_keys, new) = collect(after, Build::Except(before));
    difference_of_keys(before, &after_keys, new, answered)
}

/// The effects of going from `before` to `after`: new timers and tasks, tasks no longer awaited
/// (except `answered`, the task whose answer caused the decision), and the close.
#[cfg(any(test, debug_assertions))]
pub(crate) fn difference(
    before: &[Effect],
    after: Vec<Effect>,
    answered: Option<EventId>,
) -> Vec<Effect> {
    let after_keys = Keys::of_effects(&after);
    difference_of_keys(&Keys::of_effects(before), &after_keys, after, answered)
}

/// [`difference`] on keys: `after` holds at least every effect of `after_keys` that
/// `before` lacks (those it also has are dropped here).
fn difference_of_keys(
    before: &Keys,
    after_keys: &Keys,
    after: Vec<Effect>,
    answered: Option<EventId>,
) -> Vec<Effect> {
    let mut effects: Vec<Effect> = Vec::new();
    for &task_id in &before.tasks {
        if !after_keys.all.contains(&(KEY_TASK, task_id)) && Some(task_id) != answered {
            effects.push(Effect::CancelTask { task_id });
        }
    }
    for effect in after {
        let new = match Keys::key(&effect) {
            Some(k) => !before.all.contains(&k),
            None => matches!(effect, Effect::Closed { .. }) && !before.closed,
        };
        if new {
            effects.push(effect);
        }
    }
    effects
}
