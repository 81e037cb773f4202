//! Wait: arms a timer when entered and exits when it fires.
//!
//! ```text
//! decide: phase --(trigger or step: the events emitted)--> phase
//! (enter) --(WaitStateEntered + timer, due later)--> Waiting
//! (enter) --(WaitStateEntered, already due)--> Exited --(WaitStateExited)
//! (enter) --(time cannot be computed: States.Runtime)--> thread Failed
//! Waiting --(TimerFired)--> Exited --(WaitStateExited)--> next state's Entered | thread Done
//! Waiting --(parent fails)--> Aborted --(WaitStateAborted)
//!
//! apply: phase --(event folded)--> phase
//! thread Pending | Done --(WaitStateEntered)--> Entered               the shared arm (`state`)
//! Entered --(the Wait timer WaitStateEntered arms)--> Waiting (its timer)
//! Running --(WaitStateExited)--> thread Done (its output)             the shared arm
//! Running --(WaitStateAborted)--> thread Aborted                      the shared arm
//! ```
//! A Wait has no events of its own; its timer is folded by `fold_timer` at the end of this
//! file, called by `state::apply_timer`.

use super::super::*;

impl Decider<'_, '_> {
    /// One step of the Wait running at `scope` in `phase`: it moves only when its timer fired.
    pub(in crate::interpreter::decide) fn step_wait(
        &mut self,
        scope: &[u32],
        state: &State,
        phase: Shallow,
    ) -> Step<Option<Outcome>> {
        match phase {
            Shallow::Waiting(timer) if self.fired == Some(timer) => {
                self.fired = None;
                let run = self.run_info(scope)?;
                let effective =
                    state
                        .data_flow
                        .effective_input(&run.input, &run.context, &run.variables);
                match effective.map(Cow::into_owned) {
                    Ok(effective) => self.finish_wait(scope, state, effective),
                    Err(error) => self.fail_in(scope, &run, error).map(Some),
                }
            }
            _ => self.step_shared(scope, state, phase),
        }
    }

    /// Enters the Wait `state`: its entered event arms the timer, or the state exits at once
    /// when its time is already due, or fails when its time cannot be computed.
    pub(in crate::interpreter::decide) fn enter_wait(
        &mut self,
        scope: &[u32],
        name: &str,
        state: &State,
        wait: &WaitState,
        input: Payload,
    ) -> Step<Option<Outcome>> {
        let entered_event_id = self.state.last_event_id + 1;
        let info = self
            .state
            .info
            .as_ref()
            .ok_or_else(|| inconsistent("not started"))?;
        let context = if uses_context(state) {
            context_with(info, name, self.now_ms, None)
        } else {
            Value::Null
        };
        // Entering: the thread's values are the ones this state sees.
        let variables = variables_in(&self.state, scope);
        let mut env = step_env!(self, &variables);
        let computed = state
            .data_flow
            .effective_input(&input, &context, &variables)
            .and_then(|effective| {
                let due_ms = wait_due(state, &wait.wait, &effective, &context, &mut env)?;
                Ok((due_ms, effective.into_owned()))
            });
        match computed {
            Ok((due_ms, _)) if due_ms > self.now_ms => {
                let timer = TimerArm {
                    due_ms,
                    owner: scope.to_vec(),
                    purpose: TimerPurpose::Wait,
                };
                self.emit(scope, entered_details(state, input), Some(timer))?;
                Ok(None)
            }
            Ok((_, effective)) => {
                self.emit(scope, entered_details(state, input), None)?;
                self.finish_wait(scope, state, effective)
            }
            Err(error) => {
                self.emit(scope, entered_details(state, input), None)?;
                let error = self.step_failure(scope, name, entered_event_id, error)?;
                Ok(Some(Outcome::Failed(error)))
            }
        }
    }

    /// A Wait's time has come: exit with OutputPath applied to its effective input.
    pub(in crate::interpreter::decide) fn finish_wait(
        &mut self,
        scope: &[u32],
        state: &State,
        effective: Value,
    ) -> Step<Option<Outcome>> {
        let run = self.run_info(scope)?;
        let StateKind::Wait(wait) = &state.kind else {
            return Err(inconsistent("finish_wait on a state that is not a Wait"));
        };
        let mut env = step_env!(self, &run.variables);
        // Assign reads the effective input (JSONata: `$states.input`), with the values as of
        // entry.
        let on = state
            .data_flow
            .assign_input(&effective, &run.input, None, &run.context);
        let finished = match assigned_variables(state.assign.as_ref(), &on, &run.context, &mut env)
        {
            Ok(assigned) => state
                .data_flow
                .output(effective, &run.context, &mut env)
                .map(|output| (output, assigned)),
            Err(error) => Err(error),
        };
        match finished {
            Ok((output, assigned)) => self.exit(scope, state, output, assigned, &wait.next),
            Err(error) => self.fail_in(scope, &run, error).map(Some),
        }
    }
}

/// When the Wait `state` is due, from its effective input (the raw input in JSONata).
pub(in crate::interpreter::decide) fn wait_due(
    state: &State,
    wait: &WaitFor,
    effective: &Value,
    context: &Value,
    env: &mut crate::asl::Env<'_>,
) -> Result<u64, StatesError> {
    let now = env.now_ms;
    let variables = env.variables;
    {
        match wait {
            WaitFor::SecondsExpression(expression) => {
                let value =
                    state_expression(state, expression, "Seconds", effective, context, env)?;
                let seconds = jsonata_count(expression, "Seconds", &value, 0)?;
                Ok(now.saturating_add(seconds.saturating_mul(1000)))
            }
            WaitFor::TimestampExpression(expression) => {
                let value =
                    state_expression(state, expression, "Timestamp", effective, context, env)?;
                match value.as_str().and_then(parse_timestamp) {
                    Some(t) => Ok(timestamp_ms(t)),
                    None => Err(StatesError::new(
                        crate::asl::jsonata::QUERY_EVALUATION_ERROR,
                        format!(
                            "The Timestamp field cannot be parsed as an ISO-8601 extended offset date-time format string: {}",
                            quoted_value(&value)
                        ),
                    )
                    .at("Timestamp")),
                }
            }
            WaitFor::Seconds(seconds) => Ok(now.saturating_add(seconds.saturating_mul(1000))),
            WaitFor::Timestamp(t) => Ok(timestamp_ms(*t)),
            WaitFor::SecondsPath(path) => {
                let p = path.as_str();
                let value = path
                    .select_in(effective, context, variables)
                    .ok_or_else(|| {
                        runtime(format!(
                            "The SecondsPath parameter does not reference an input value: {p}"
                        ))
                    })?;
                if let Some(seconds) = value.as_i64() {
                    if seconds < 0 {
                        return Err(runtime(format!(
                            "The SecondsPath parameter references a negative value: {p} == {value}"
                        )));
                    }
                    return Ok(now.saturating_add((seconds as u64).saturating_mul(1000)));
                }
                if let Some(seconds) = value.as_u64() {
                    return Ok(now.saturating_add(seconds.saturating_mul(1000)));
                }
                Err(runtime(format!(
                    "The SecondsPath parameter cannot be parsed as a long value: {p} == {}",
                    quoted_value(&value)
                )))
            }
            WaitFor::TimestampPath(path) => {
                let p = path.as_str();
                let value = path
                    .select_in(effective, context, variables)
                    .ok_or_else(|| {
                        runtime(format!(
                            "The TimestampPath parameter does not reference an input value: {p}"
                        ))
                    })?;
                match value.as_str().and_then(parse_timestamp) {
                    Some(t) => Ok(timestamp_ms(t)),
                    None => Err(runtime(format!(
                        "The TimestampPath parameter does not reference a valid ISO-8601 extended offset date-time format string: {p} == {}",
                        quoted_value(&value)
                    ))),
                }
            }
        }
    }
}

// The fold: how this state's events change the folded state (`state::apply` dispatches here).
// A Wait has no events of its own: its entered, exited and aborted events are folded by the
// arms every state shares; only the timer its entered event arms is folded here.

use crate::interpreter::state::ApplyError;

/// The Wait timer armed by `WaitStateEntered`: Entered -> Waiting.
pub(in crate::interpreter) fn fold_timer(
    run: &mut StateRun,
    timer: Timer,
) -> Result<(), ApplyError> {
    if run.phase != Phase::Entered {
        return Err(ApplyError::Misplaced(
            "a Wait timer on a state that is not freshly entered",
        ));
    }
    run.phase = Phase::Waiting { timer };
    Ok(())
}
