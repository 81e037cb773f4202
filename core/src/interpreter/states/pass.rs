//! Pass: moves its input (or its `Result`/`Parameters`) to its output in one step.
//!
//! ```text
//! decide: phase --(trigger or step: the events emitted)--> phase
//! Entered --(PassStateExited)--> Exited --(next state's Entered | thread Done)
//! Entered --(path or template fails: States.Runtime)--> thread Failed
//!
//! apply: phase --(event folded)--> phase
//! thread Pending | Done --(PassStateEntered)--> Entered
//! Entered --(PassStateExited)--> thread Done (its output)
//! ```
//! A Pass has no events of its own: both are folded by the arms every state shares in
//! `state::apply`.

use super::super::*;

impl Decider<'_, '_> {
    /// One step of the Pass running at `scope` in `phase`.
    pub(in crate::interpreter::decide) fn step_pass(
        &mut self,
        scope: &[u32],
        state: &State,
        pass: &PassState,
        phase: Shallow,
    ) -> Step<Option<Outcome>> {
        match phase {
            Shallow::Entered => self.run_pass(scope, state, pass),
            _ => self.step_shared(scope, state, phase),
        }
    }

    pub(in crate::interpreter::decide) fn run_pass(
        &mut self,
        scope: &[u32],
        state: &State,
        pass: &PassState,
    ) -> Step<Option<Outcome>> {
        // Borrows the running state instead of copying it: the input is copied at most once,
        // into the output.
        let run = running_in(&self.state, scope)?;
        if state.data_flow.is_passthrough() && state.assign.is_none() {
            // Its output is its input: shared, not copied.
            let output = Payload::clone(&run.input);
            return self.exit(scope, state, output, None, &pass.next);
        }
        let context = self.context_if_used(state, run)?;
        let variables = variables_in(&self.state, scope);
        let entered_event_id = run.entered_event_id;
        let mut env = step_env!(self, &variables);
        let finished = (|| {
            let flow = &state.data_flow;
            let effective = flow.effective_input(&run.input, &context, &variables)?;
            // Assign reads the Pass's result (its Result, Parameters or effective input),
            // before ResultPath places it.
            let (result, assigned) = match &state.assign {
                None => (flow.pass_result(effective, &context, &mut env)?, None),
                Some(assign) => {
                    let result = if flow.pass_result_is_discarded() {
                        effective.into_owned()
                    } else {
                        flow.pass_result(effective, &context, &mut env)?
                    };
                    let on = flow.assign_input(&result, &run.input, None, &context);
                    let assigned = assigned_variables(Some(assign), &on, &context, &mut env)?;
                    (result, assigned)
                }
            };
            let output = flow.result_output(&run.input, result, &context, &mut env)?;
            Ok((output, assigned))
        })();
        match finished {
            Ok((output, assigned)) => self.exit(scope, state, output, assigned, &pass.next),
            Err(error) => Ok(Some(Outcome::Failed(self.step_failure(
                scope,
                &state.name,
                entered_event_id,
                error,
            )?))),
        }
    }
}
