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
        let variables = variables_in(&self.state, scope);
        let entered_event_id = run.entered_event_id;
        let mut env = step_env!(self, &variables);
        match choose(state, choice, &run.input, &context, &mut env) {
            Ok(chosen) => self.exit_to(
                scope,
                state,
                chosen.output,
                chosen.assigned,
                Some(chosen.next),
            ),
            Err(error) => Ok(Some(Outcome::Failed(self.step_failure(
                scope,
                &state.name,
                entered_event_id,
                error,
            )?))),
        }
    }
}

/// What a Choice state decided: where it goes, its output and the variables it sets.
pub(in crate::interpreter) struct Chosen<'c> {
    /// The chosen state (a rule's `Next`, or `Default`).
    pub(in crate::interpreter) next: &'c str,
    /// The output (the input, shared, when there is nothing to select).
    pub(in crate::interpreter) output: Payload,
    /// The taken rule's `Assign`, or the state's own on `Default`.
    pub(in crate::interpreter) assigned: Option<AssignedVariables>,
}

/// Runs the Choice `state` on its raw `input`: picks the rule, evaluates the taken rule's
/// Assign (or the state's own when `Default` is taken) on the effective input with the values
/// as of entry, and the output. Shared by the interpreter and `test_state`.
pub(in crate::interpreter) fn choose<'c>(
    state: &'c State,
    choice: &'c ChoiceState,
    input: &Payload,
    context: &Value,
    env: &mut Env<'_>,
) -> Result<Chosen<'c>, StatesError> {
    if let Some(flow) = state.data_flow.as_jsonata() {
        let states = crate::asl::jsonata::States {
            input,
            result: None,
            error_output: None,
            context: flow.reads_context.then_some(context),
            paths: flow.states_paths.as_deref(),
        };
        let values = crate::asl::data_flow::read_variables(&flow.variables, env.variables);
        let runtime = env.jsonata;
        let make = || crate::asl::data_flow::bind_read(&states, &values, runtime);
        let mut bound = crate::asl::jsonata::LazyBound::new(&make);
        let mut host = crate::asl::jsonata::DecisionHost {
            now_ms: env.now_ms,
            entropy: &mut *env.entropy,
        };
        let picked = choice.pick_jsonata(&states, &values, &mut bound, &mut host)?;
        let rule_output = picked.rule.and_then(|rule| rule.output.as_ref());
        // Without an `Output` the output is the input, shared, not copied.
        let output = match rule_output.or(flow.output.as_ref()) {
            Some(template) => {
                Payload::from(template.evaluate("Output", bound.get()?, &mut host)?)
            }
            None => Payload::clone(input),
        };
        drop(bound);
        let on = state.data_flow.assign_input(input, input, None, context);
        let assigned = assigned_variables(assign_of(state, picked), &on, context, env)?;
        return Ok(Chosen {
            next: picked.next,
            output,
            assigned,
        });
    }
    if state.data_flow.is_passthrough() {
        // No paths: the output is the input, shared, not copied.
        let picked = choice.pick_in(input, context, env.variables)?;
        let on = state.data_flow.assign_input(input, input, None, context);
        let assigned = assigned_variables(assign_of(state, picked), &on, context, env)?;
        return Ok(Chosen {
            next: picked.next,
            output: Payload::clone(input),
            assigned,
        });
    }
    let flow = &state.data_flow;
    let variables = env.variables;
    let effective = flow.effective_input(input, context, variables)?;
    let picked = choice.pick_in(&effective, context, variables)?;
    let on = flow.assign_input(&effective, input, None, context);
    let assigned = assigned_variables(assign_of(state, picked), &on, context, env)?;
    let output = flow.output(effective.into_owned(), context, env)?;
    Ok(Chosen {
        next: picked.next,
        output: Payload::from(output),
        assigned,
    })
}

/// The Assign that applies when the Choice `state` took `picked`: the rule's, or the state's
/// own when `Default` was taken.
fn assign_of<'a>(state: &'a State, picked: crate::asl::choice::Picked<'a>) -> Option<&'a Assign> {
    match picked.rule {
        Some(rule) => rule.assign.as_ref(),
        None => state.assign.as_ref(),
    }
}
