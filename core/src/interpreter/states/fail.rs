//! Fail: fails its thread with its Error and Cause (literal or from a path).
//!
//! ```text
//! decide: phase --(trigger or step: the events emitted)--> phase
//! Entered --(Error/Cause evaluated)--> thread Failed (the parent records the failure)
//!
//! apply: phase --(event folded)--> phase
//! thread Pending | Done --(FailStateEntered)--> Entered (its last phase: it never exits)
//! ```
//! A Fail state has no exited event; it is folded by the `*StateEntered` arm every state
//! shares in `state::apply`. Its failure is folded where the parent records it
//! (`ExecutionFailed`, `ParallelStateFailed`, `MapIterationFailed`).

use super::super::*;

impl Decider<'_, '_> {
    /// One step of the Fail running at `scope` in `phase`.
    pub(in crate::interpreter::decide) fn step_fail(
        &mut self,
        scope: &[u32],
        state: &State,
        fail: &FailState,
        phase: Shallow,
    ) -> Step<Option<Outcome>> {
        match phase {
            Shallow::Entered => self.run_fail(scope, fail).map(Some),
            _ => self.step_shared(scope, state, phase),
        }
    }

    pub(in crate::interpreter::decide) fn run_fail(
        &mut self,
        scope: &[u32],
        fail: &crate::asl::FailState,
    ) -> Step<Outcome> {
        let run = self.run_info(scope)?;
        let state = self.state_def(scope)?;
        let mut env = step_env!(self, &run.variables);
        let outcome = fail_error_cause(state, fail, &run.input, &run.context, &mut env);
        match outcome {
            Ok(error) => Ok(Outcome::Failed(error)),
            Err(e) => self.fail_in(scope, &run, e),
        }
    }
}

/// The Fail state's error and cause: literal, from a path or intrinsic (`ErrorPath`,
/// `CausePath`) or a JSONata expression, on its `input`. Shared by the interpreter and
/// `test_state`. A failing path or expression names its field, as AWS words it.
pub(in crate::interpreter) fn fail_error_cause(
    state: &State,
    fail: &FailState,
    input: &Value,
    context: &Value,
    env: &mut crate::asl::Env<'_>,
) -> Result<ErrorCause, StatesError> {
    let mut evaluate =
        |field: &Option<FailField>, name: &str| -> Result<Option<String>, StatesError> {
            match field {
                None => Ok(None),
                Some(FailField::Literal(text)) => Ok(Some(text.clone())),
                Some(FailField::Expression(expression)) => {
                    let value = state_expression(state, expression, name, input, context, env)?;
                    match value {
                        Value::String(text) => Ok(Some(text)),
                        other => Err(expression.wrong_type(name, "string", &other)),
                    }
                }
                Some(FailField::Dynamic { expression, .. }) => {
                    let value =
                        expression.evaluate_in(input, context, env.variables, &mut *env.entropy)?;
                    Ok(Some(quoted_value(&value)))
                }
            }
        };
    let error = evaluate(&fail.error, "Error")?;
    Ok(ErrorCause {
        error,
        cause: evaluate(&fail.cause, "Cause")?,
    })
}
