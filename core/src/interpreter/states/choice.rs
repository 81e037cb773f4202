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
        let run = running_in(&self.state, scope)?;
        let context = self.context_if_used(state, run)?;
        let entered_event_id = run.entered_event_id;
        if let Some(flow) = state.data_flow.as_jsonata() {
            let variables = self.jsonata_variables(scope, state);
            let env = step_env!(self, &variables);
            let decided = (|| {
                let states = crate::asl::jsonata::States {
                    input: &run.input,
                    result: None,
                    error_output: None,
                    context: flow.reads_context.then_some(&context),
                    paths: flow.states_paths.as_deref(),
                };
                let bound = crate::asl::data_flow::bind(&states, &flow.variables, &env)?;
                let mut host = crate::asl::jsonata::DecisionHost {
                    now_ms: env.now_ms,
                    entropy: &mut *env.entropy,
                };
                let (next, rule_output) = choice.pick_jsonata(&*bound, &mut host)?;
                let output = match rule_output.or(flow.output.as_ref()) {
                    Some(template) => template.evaluate("Output", &*bound, &mut host)?,
                    None => Value::clone(&run.input),
                };
                Ok((next, output))
            })();
            return match decided {
                Ok((next, output)) => self.exit_to(scope, state, output, Some(next)),
                Err(error) => Ok(Some(Outcome::Failed(self.step_failure(
                    scope,
                    &state.name,
                    entered_event_id,
                    error,
                )?))),
            };
        }
        if state.data_flow.is_passthrough() {
            // No paths: the output is the input, shared, not copied.
            return match choice.pick(&run.input, &context) {
                Ok(next) => {
                    let output = Payload::clone(&run.input);
                    self.exit_to(scope, state, output, Some(next))
                }
                Err(error) => Ok(Some(Outcome::Failed(self.step_failure(
                    scope,
                    &state.name,
                    entered_event_id,
                    error,
                )?))),
            };
        }
        let decided = (|| {
            let flow = &state.data_flow;
            let effective = flow.effective_input(&run.input, &context)?;
            let next = choice.pick(&effective, &context)?;
            let variables = crate::paths::Variables::new();
            let mut env = step_env!(self, &variables);
            let output = flow.output(effective.into_owned(), &context, &mut env)?;
            Ok((next, output))
        })();
        match decided {
            Ok((next, output)) => self.exit_to(scope, state, output, Some(next)),
            Err(error) => Ok(Some(Outcome::Failed(self.step_failure(
                scope,
                &state.name,
                entered_event_id,
                error,
            )?))),
        }
    }
}
