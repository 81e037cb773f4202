//! Choice: picks the next state from its rules in one step.
//!
//! ```text
//! decide: phase --(trigger or step: the events emitted)--> phase
//! Entered --(ChoiceStateExited)--> Exited --(the chosen state's Entered)
//! Entered --(no rule matches and no Default: States.NoChoiceMatched)--> thread Failed
//!
//! apply: phase --(event folded)--> phase
//! thread Pending | Done --(ChoiceStateEntered)--> Entered
//! Entered --(ChoiceStateExited)--> thread Done (its output, the chosen state's input)
//! ```
//! A Choice has no events of its own: both are folded by the arms every state shares in
//! `state::apply`.

use super::super::*;

impl Decider<'_, '_> {
    /// One step of the Choice running at `scope` in `phase`.
    pub(in crate::interpreter::decide) fn step_choice(
        &mut self,
        scope: &[u32],
        state: &State,
        choice: &ChoiceState,
        phase: Shallow,
    ) -> Step<Option<Outcome>> {
        match phase {
            Shallow::Entered => self.run_choice(scope, state, choice),
            _ => self.step_shared(scope, state, phase),
        }
    }

    pub(in crate::interpreter::decide) fn run_choice(
        &mut self,
        scope: &[u32],
        state: &State,
        choice: &ChoiceState,
    ) -> Step<Option<Outcome>> {
        let run = self.running(scope)?;
        let context = self.context_if_used(state, run)?;
        let entered_event_id = run.entered_event_id;
        if state.data_flow.is_passthrough() {
            // No paths: the output is the input, shared, not copied.
            return match choice.pick(&run.input, &context) {
                Ok(next) => {
                    let output = Payload::clone(&run.input);
                    self.exit_to(scope, state, output, Some(next))
                }
                Err(error) => Ok(Some(Outcome::Failed(with_prefix(
                    &state.name,
                    entered_event_id,
                    error,
                )))),
            };
        }
        let decided = (|| {
            let flow = &state.data_flow;
            let effective = flow.effective_input(&run.input, &context)?;
            let next = choice.pick(&effective, &context)?;
            let output = flow.output(effective.into_owned(), &context)?;
            Ok((next, output))
        })();
        match decided {
            Ok((next, output)) => self.exit_to(scope, state, output, Some(next)),
            Err(error) => Ok(Some(Outcome::Failed(with_prefix(
                &state.name,
                entered_event_id,
                error,
            )))),
        }
    }
}
