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
        if state.data_flow.is_passthrough() {
            // Its output is its input: shared, not copied.
            let output = Payload::clone(&run.input);
            return self.exit(scope, state, output, &pass.next);
        }
        let context = self.context_if_used(state, run)?;
        let entered_event_id = run.entered_event_id;
        let variables = self.jsonata_variables(scope, state);
        let mut env = step_env!(self, &variables);
        let output = (|| {
            let flow = &state.data_flow;
            let effective = flow.effective_input(&run.input, &context)?;
            let result = flow.pass_result(effective, &context, &mut env)?;
            flow.result_output(&run.input, result, &context, &mut env)
        })();
        match output {
            Ok(output) => self.exit(scope, state, output, &pass.next),
            Err(error) => Ok(Some(Outcome::Failed(self.step_failure(
                scope,
                &state.name,
                entered_event_id,
                error,
            )?))),
        }
    }
}
