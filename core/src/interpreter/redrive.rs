//! redrive: what the fold keeps so a closed execution can be redriven, and how
//! `ExecutionRedriven` reopens it.
//!
//! A failure destroys the shape of what failed: `ParallelStateFailed`/`MapStateFailed` replace
//! the running branches/iterations by a bare failed phase, `*StateAborted` and
//! `MapIterationAborted` replace a running thread by `Aborted`. [`remember`] keeps the thread as
//! it was just before (keyed by its scope) so [`reopen`] can rebuild the tree: successful
//! threads keep their results, every failed, aborted or interrupted state is put back to
//! *entered* (its retry counters at 0) so `decide` runs it again, a Parallel keeps its successful
//! branches and an inline Map its successful iterations. After `States.DataLimitExceeded` a
//! failed Parallel/Map reruns whole. A Wait interrupted while waiting keeps its timer.
//!
//! Invariants: only `apply` calls these, so a replay of the log rebuilds exactly the same state.
//! Must not: look at the definition, the clock, or anything but the folded state.

use std::collections::{BTreeMap, BTreeSet};

use super::state::{ApplyError, ExecutionState, ExecutionStatus, IterationOutcome, Phase, Thread};

/// The error after which a failed Parallel/Map reruns whole instead of only its failed parts.
const DATA_LIMIT_ERROR: &str = "States.DataLimitExceeded";

/// What the fold keeps for redrive: how often the execution was redriven, and the threads that a
/// failure or an abort replaced, by scope.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct RedriveMemory {
    /// `ExecutionRedriven` events so far.
    pub(crate) count: u32,
    /// When the last `ExecutionRedriven` happened, ms since the epoch.
    pub(crate) last_ms: Option<u64>,
    /// Threads as they were before a failure/abort replaced them, by scope.
    stash: BTreeMap<Vec<u32>, Thread>,
    /// Scopes whose state `reopen` put back to *entered*: each gets a fresh `*StateEntered`
    /// event when `decide` next advances it (see [`reentering`]), as a rerun state does in AWS
    /// histories; applying that event takes the scope out of this set.
    reentry: BTreeSet<Vec<u32>>,
}

/// True when an execution in `status` may take an `ExecutionRedriven` event.
pub(crate) fn may_reopen(status: ExecutionStatus) -> bool {
    matches!(
        status,
        ExecutionStatus::Failed | ExecutionStatus::TimedOut | ExecutionStatus::Aborted
    )
}

/// Keeps the thread at `scope` as it is now, if it is running (before a failure or an abort
/// replaces it).
pub(crate) fn remember(state: &mut ExecutionState, scope: &[u32]) {
    if let Some(thread @ Thread::Running(_)) = state.thread(scope) {
        let thread = thread.clone();
        state.redrive.stash.insert(scope.to_vec(), thread);
    }
}

/// A state was entered at `scope`: whatever was kept for that thread and below is history.
pub(crate) fn forget_below(state: &mut ExecutionState, scope: &[u32]) {
    if !state.redrive.stash.is_empty() {
        state.redrive.stash.retain(|key, _| !key.starts_with(scope));
    }
    if !state.redrive.reentry.is_empty() {
        state.redrive.reentry.retain(|key| !key.starts_with(scope));
    }
}

/// A state-entered event is applied at `scope`: true (and the scope is no longer pending) when
/// it is the re-entry of a state that `reopen` put back to *entered*, which then starts afresh.
pub(crate) fn take_reentry(state: &mut ExecutionState, scope: &[u32]) -> bool {
    state.redrive.reentry.remove(scope)
}

/// True when the state running at `scope` was put back to *entered* by a redrive and has not
/// had its new `*StateEntered` event yet: `decide` enters it again before running it.
pub(crate) fn reentering(state: &ExecutionState, scope: &[u32]) -> bool {
    state.redrive.reentry.contains(scope)
}

/// Records every scope whose state is running and back at *entered* in `thread` and below.
fn collect_reentry(thread: &Thread, scope: &mut Vec<u32>, out: &mut BTreeSet<Vec<u32>>) {
    let Thread::Running(run) = thread else {
        return;
    };
    match &run.phase {
        Phase::Entered => {
            out.insert(scope.clone());
        }
        Phase::Parallel { branches } => {
            for (index, branch) in branches.iter().enumerate() {
                scope.push(index as u32);
                collect_reentry(branch, scope, out);
                scope.pop();
            }
        }
        Phase::Map { iterations, .. } => {
            for (index, iteration) in iterations.iter().enumerate() {
                scope.push(index as u32);
                collect_reentry(&iteration.thread, scope, out);
                scope.pop();
            }
        }
        _ => {}
    }
}

/// Reopens a closed execution for `ExecutionRedriven` at `at_ms`.
pub(crate) fn reopen(state: &mut ExecutionState, at_ms: u64) -> Result<(), ApplyError> {
    if !may_reopen(state.status) {
        return Err(ApplyError::NotRedrivable {
            status: state.status,
        });
    }
    let whole = state
        .failure
        .as_ref()
        .and_then(|f| f.error.as_deref())
        .is_some_and(|e| e == DATA_LIMIT_ERROR);
    let stash = std::mem::take(&mut state.redrive.stash);
    let root = std::mem::replace(&mut state.root, Thread::Pending);
    state.root = rerun(root, &mut Vec::new(), &stash, whole).ok_or(ApplyError::Misplaced(
        "the failed top-level state cannot be found in the history",
    ))?;
    let mut reentry = BTreeSet::new();
    collect_reentry(&state.root, &mut Vec::new(), &mut reentry);
    state.redrive.reentry = reentry;
    state.status = ExecutionStatus::Running;
    state.close_ms = None;
    state.failure = None;
    state.output = None;
    state.redrive.count += 1;
    state.redrive.last_ms = Some(at_ms);
    if let Some(info) = state.info.as_mut() {
        info.redrive_count = state.redrive.count;
    }
    Ok(())
}

/// The thread at `scope` made ready to run again; `None` when its shape was lost (the caller
/// then reruns its parent whole).
fn rerun(
    thread: Thread,
    scope: &mut Vec<u32>,
    stash: &BTreeMap<Vec<u32>, Thread>,
    whole: bool,
) -> Option<Thread> {
    let mut run = match thread {
        Thread::Done { .. } | Thread::Pending => return Some(thread),
        Thread::Aborted => {
            let kept = stash.get(scope.as_slice())?.clone();
            if matches!(kept, Thread::Aborted) {
                return None;
            }
            return rerun(kept, scope, stash, whole);
        }
        Thread::Running(run) => run,
    };
    run.retried_errors.clear();
    let phase = std::mem::replace(&mut run.phase, Phase::Entered);
    run.phase = match phase {
        Phase::Waiting { timer } => Phase::Waiting { timer },
        Phase::Entered
        | Phase::Task(_)
        | Phase::Backoff { .. }
        | Phase::TaskSucceeded { .. }
        | Phase::Failed { error: Some(_) }
        | Phase::Finishing => Phase::Entered,
        // A Distributed Map's run is redriven as a run (`MapRunRedriven`), unless the failure
        // asks for a whole rerun.
        Phase::MapRun {
            length,
            map_run_arn,
            redrive_count,
            ..
        }
        | Phase::MapRunEnded {
            length,
            map_run_arn,
            redrive_count,
        } if !whole => Phase::MapRunEnded {
            length,
            map_run_arn,
            redrive_count,
        },
        Phase::MapRun { .. } | Phase::MapRunEnded { .. } => Phase::Entered,
        Phase::Failed { error: None } => {
            let kept = stash
                .get(scope.as_slice())
                .and_then(Thread::run)
                .map(|kept| kept.phase.clone());
            match kept {
                // A Distributed Map whose run failed: the same run, redriven.
                Some(Phase::MapRunEnded {
                    length,
                    map_run_arn,
                    redrive_count,
                }) if !whole => Phase::MapRunEnded {
                    length,
                    map_run_arn,
                    redrive_count,
                },
                // One that failed before its run, or reruns whole: a new Map Run.
                Some(Phase::Map { iterations, .. }) if iterations.is_empty() => Phase::Entered,
                Some(Phase::MapRunEnded { .. }) => Phase::Entered,
                Some(children @ (Phase::Parallel { .. } | Phase::Map { .. })) if !whole => {
                    rerun_children(children, scope, stash, whole).unwrap_or(Phase::Entered)
                }
                _ => Phase::Entered,
            }
        }
        children @ (Phase::Parallel { .. } | Phase::Map { .. }) => {
            rerun_children(children, scope, stash, whole).unwrap_or(Phase::Entered)
        }
    };
    Some(Thread::Running(run))
}

/// The branches or iterations of a Parallel/Map made ready: successful ones kept, the others
/// rerun. `None` when one of them cannot be rebuilt.
fn rerun_children(
    phase: Phase,
    scope: &mut Vec<u32>,
    stash: &BTreeMap<Vec<u32>, Thread>,
    whole: bool,
) -> Option<Phase> {
    match phase {
        Phase::Parallel { branches } => {
            let mut out = Vec::with_capacity(branches.len());
            for (index, branch) in branches.into_iter().enumerate() {
                scope.push(index as u32);
                let branch = rerun(branch, scope, stash, whole);
                scope.pop();
                out.push(branch?);
            }
            Some(Phase::Parallel { branches: out })
        }
        Phase::Map { length, iterations } => {
            let mut out = Vec::with_capacity(iterations.len());
            for (index, mut iteration) in iterations.into_iter().enumerate() {
                if iteration.outcome != IterationOutcome::Succeeded {
                    scope.push(index as u32);
                    let thread = rerun(iteration.thread, scope, stash, whole);
                    scope.pop();
                    iteration.thread = thread?;
                    if matches!(iteration.thread, Thread::Pending) {
                        return None;
                    }
                    iteration.outcome = IterationOutcome::Running;
                }
                out.push(iteration);
            }
            Some(Phase::Map {
                length,
                iterations: out,
            })
        }
        _ => None,
    }
}

impl ExecutionState {
    /// How many times the execution has been redriven (`ExecutionRedriven` events).
    pub fn redrive_count(&self) -> u32 {
        self.redrive.count
    }

    /// When the execution was last redriven, ms since the epoch.
    pub fn redrive_ms(&self) -> Option<u64> {
        self.redrive.last_ms
    }
}
