//! Parallel: runs its branches on one input and collects their outputs in order.
//!
//! ```text
//! decide: phase --(trigger or step: the events emitted)--> phase
//! Entered --(InputPath, Parameters: ParallelStateStarted)--> Parallel (every branch entered)
//! Parallel --(a branch waits)--> Parallel
//! Parallel --(every branch Done: ParallelStateSucceeded)--> Finishing --(ParallelStateExited)
//! Parallel --(a branch fails: siblings aborted, ParallelStateFailed)--> Failed
//! Entered --(InputPath/Parameters fail, a retrier takes it)--> Backoff
//! Backoff --(TimerFired: begins again, ParallelStateStarted)--> Parallel
//! Failed --(a catcher takes it: ParallelStateExited)--> the catcher's Next | thread Failed
//! Parallel --(parent fails)--> Aborted --(ParallelStateAborted)
//!
//! apply: phase --(event folded)--> phase
//! Entered | Backoff --(ParallelStateStarted)--> Parallel (no branch thread yet)
//! Parallel --(the first event scoped to branch i)--> Parallel (branch i created, Pending)
//! Parallel | Map --(ParallelStateSucceeded)--> Finishing               state::children_succeeded
//! Parallel | Map --(ParallelStateFailed)--> Failed (error known to decide)  state::children_failed
//! any --(a RetryBackoff timer on the event)--> Backoff (the error counted)  state::apply_timer
//! Entered, exited, aborted: the arms every state shares (`state`)
//! ```
//! `ParallelStateStarted` is folded by `fold_started` at the end of this file, a branch thread
//! by `ExecutionState::thread_mut`; any other phase is an `ApplyError`.

use super::super::*;

impl Decider<'_, '_> {
    /// One step of the Parallel running at `scope` in `phase`.
    pub(in crate::interpreter::decide) fn step_parallel_state(
        &mut self,
        scope: &[u32],
        state: &State,
        parallel: &ParallelState,
        phase: Shallow,
    ) -> Step<Option<Outcome>> {
        match phase {
            Shallow::Entered => self.begin_parallel(scope, state, parallel),
            Shallow::Backoff(timer) if self.fired == Some(timer) => {
                self.fired = None;
                self.begin_parallel(scope, state, parallel)
            }
            Shallow::Parallel => self.step_parallel(scope, state, parallel, None),
            _ => self.step_shared(scope, state, phase),
        }
    }

    pub(in crate::interpreter::decide) fn begin_parallel(
        &mut self,
        scope: &[u32],
        state: &State,
        parallel: &ParallelState,
    ) -> Step<Option<Outcome>> {
        let run = self.run_info(scope)?;
        let flow = &state.data_flow;
        let mut env = step_env!(self, &run.variables);
        let effective = flow
            .effective_input(&run.input, &run.context, &run.variables)
            .and_then(|v| flow.parameters(v, &run.context, &mut env));
        let effective = match effective {
            Ok(v) => v,
            Err(e) => {
                let error = self.step_failure(scope, &run.name, run.entered_event_id, e)?;
                return self.handle_failure(scope, state, error, true, None);
            }
        };
        self.emit(scope, EventDetails::ParallelStateStarted, None)?;
        self.step_parallel(scope, state, parallel, Some(effective))
    }

    pub(in crate::interpreter::decide) fn step_parallel(
        &mut self,
        scope: &[u32],
        state: &State,
        parallel: &ParallelState,
        fresh_input: Option<Value>,
    ) -> Step<Option<Outcome>> {
        let mut outcomes = Vec::with_capacity(parallel.branches.len());
        for (index, branch) in parallel.branches.iter().enumerate() {
            let path = child(scope, index);
            let started = !matches!(self.state.thread(&path), None | Some(Thread::Pending));
            let outcome = if started {
                self.advance(&path)?
            } else {
                let input = fresh_input
                    .clone()
                    .ok_or_else(|| inconsistent(Inconsistency::BranchNotStarted { index }))?;
                self.enter_and_advance(&path, &branch.start_at, input)?
            };
            outcomes.push(outcome);
        }
        let failed = outcomes
            .iter()
            .position(|o| matches!(o, Outcome::Failed(_)));
        if let Some(failed) = failed {
            for (index, outcome) in outcomes.iter().enumerate() {
                if matches!(outcome, Outcome::Waiting) {
                    self.abort(&child(scope, index))?;
                }
            }
            self.abort_failed_task(&child(scope, failed))?;
            let Outcome::Failed(error) = outcomes.swap_remove(failed) else {
                return Err(inconsistent("failed outcome vanished"));
            };
            return self.handle_failure(
                scope,
                state,
                error,
                true,
                Some(EventDetails::ParallelStateFailed),
            );
        }
        if outcomes.iter().any(|o| !matches!(o, Outcome::Done(_))) {
            return Ok(Some(Outcome::Waiting));
        }
        let results: Vec<Value> = outcomes
            .into_iter()
            .map(|o| match o {
                Outcome::Done(v) => Payload::unwrap_or_clone(v),
                _ => Value::Null,
            })
            .collect();
        self.emit(scope, EventDetails::ParallelStateSucceeded, None)?;
        let run = self.run_info(scope)?;
        self.finish_with_result(scope, state, &run, Value::Array(results))
    }
}

// The fold: how this state's events change the folded state (`state::apply` dispatches here).
// `ParallelStateSucceeded` / `ParallelStateFailed` are folded by `state::children_succeeded` /
// `state::children_failed`, shared with Map.

use crate::interpreter::state::{running, ApplyError};

/// `ParallelStateStarted`: a freshly entered or retrying Parallel runs its branches (their
/// threads are created by the first event inside each).
pub(in crate::interpreter) fn fold_started(
    state: &mut ExecutionState,
    scope: &[u32],
) -> Result<(), ApplyError> {
    let run = running(state.thread_mut(scope)?, "ParallelStateStarted")?;
    if !matches!(run.phase, Phase::Entered | Phase::Backoff { .. }) {
        return Err(ApplyError::Misplaced(
            "ParallelStateStarted outside a freshly entered or retrying state",
        ));
    }
    run.phase = Phase::Parallel {
        branches: Vec::new(),
    };
    Ok(())
}
