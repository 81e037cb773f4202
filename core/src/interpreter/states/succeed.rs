//! Succeed: ends its thread with its input (after InputPath and OutputPath).
//!
//! ```text
//! decide: phase --(trigger or step: the events emitted)--> phase
//! Entered --(SucceedStateExited)--> thread Done
//! Entered --(a path fails: States.Runtime)--> thread Failed
//!
//! apply: phase --(event folded)--> phase
//! thread Pending | Done --(SucceedStateEntered)--> Entered
//! Entered --(SucceedStateExited)--> thread Done (its output)
//! ```
//! A Succeed has no events of its own: both are folded by the arms every state shares in
//! `state::apply`.

use super::super::*;

impl Decider<'_, '_> {
    /// One step of the Succeed running at `scope` in `phase`.
    pub(in crate::interpreter::decide) fn step_succeed(
        &mut self,
        scope: &[u32],
        state: &State,
        phase: Shallow,
    ) -> Step<Option<Outcome>> {
        if phase != Shallow::Entered {
            return self.step_shared(scope, state, phase);
        }
        let run = running_in(&self.state, scope)?;
        let context = self.context_if_used(state, run)?;
        let variables = variables_in(&self.state, scope);
        let entered_event_id = run.entered_event_id;
        let flow = &state.data_flow;
        let mut env = step_env!(self, &variables);
        let output = flow
            .effective_input(&run.input, &context, &variables)
            .and_then(|v| flow.output(v.into_owned(), &context, &mut env));
        match output {
            Ok(output) => self.exit(scope, state, output, None, &Transition::End),
            Err(error) => Ok(Some(Outcome::Failed(self.step_failure(
                scope,
                &state.name,
                entered_event_id,
                error,
            )?))),
        }
    }
}
