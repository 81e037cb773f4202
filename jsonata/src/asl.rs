//! The core's JSONata seam (`statelog_core::asl::jsonata`) implemented over [`Expression`]:
//! what the engine hands `parse_definition` so that JSONata machines compile and run.
//!
//! Evaluations are bounded: each gets a depth limit ([`DEPTH_MAX`]), so no expression (an
//! unbounded recursion included) overflows the stack, and a time budget
//! ([`EVALUATION_TIME_MS_MAX`]) so none loops for ever (an endless tail call, which no depth
//! limit sees). The time budget is the one clock this crate lets the engine underneath read:
//! it only stops an evaluation (its `D1012` failure is recorded like any other), it never
//! enters a result.

use std::any::Any;
use std::sync::Arc;

use serde_json::Value;
use statelog_core::asl::jsonata as seam;

use crate::{convert, Bindings, Expression, Limits};

/// The deepest nesting one evaluation may reach before failing with `D1011`.
pub const DEPTH_MAX: usize = 1_000;

/// The longest one evaluation may run before failing with `D1012`.
pub const EVALUATION_TIME_MS_MAX: u64 = 5_000;

/// The Step Functions flavour of JSONata, as the core's [`seam::Jsonata`].
#[derive(Debug, Default, Clone, Copy)]
pub struct StepFunctionsJsonata;

impl StepFunctionsJsonata {
    /// The evaluator as the core's `ValidationOptions::jsonata` takes it.
    pub fn runtime() -> seam::JsonataRuntime {
        seam::JsonataRuntime(Arc::new(StepFunctionsJsonata))
    }
}

/// Bindings made by [`StepFunctionsJsonata::bind`].
struct Bound(Bindings);

impl seam::Bound for Bound {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl seam::Jsonata for StepFunctionsJsonata {
    fn compile(
        &self,
        source: &str,
    ) -> Result<Arc<dyn seam::CompiledExpression>, seam::CompileError> {
        Expression::compile(source)
            .map(|e| Arc::new(e) as Arc<dyn seam::CompiledExpression>)
            .map_err(|e| seam::CompileError {
                code: e.code,
                message: e.message,
            })
    }

    fn bind(
        &self,
        states: &seam::States<'_>,
        variables: &[(&str, &Value)],
    ) -> Box<dyn seam::Bound> {
        let mut bindings = Bindings::new();
        let (members, count) = members_of(states);
        let members = &members[..count];
        let converted = match states.paths {
            // Only what the expressions read: a large input costs more to convert than the
            // expressions cost to run.
            Some(paths) => {
                let paths: Vec<&[String]> = paths.iter().map(Vec::as_slice).collect();
                convert::pruned_object(members, &paths)
            }
            None => convert::object_of(members),
        };
        bindings.set_converted("states", converted);
        for (name, value) in variables {
            bindings.set(name, value);
        }
        Box::new(Bound(bindings))
    }
}

/// The members of `$states` present, `input` first: the first `count` of the array.
fn members_of<'a>(states: &seam::States<'a>) -> ([(&'static str, &'a Value); 4], usize) {
    let mut members = [("input", states.input); 4];
    let mut count = 1;
    for (name, value) in [
        ("result", states.result),
        ("errorOutput", states.error_output),
        ("context", states.context),
    ] {
        if let Some(value) = value {
            members[count] = (name, value);
            count += 1;
        }
    }
    (members, count)
}

/// An evaluation's error as the core's seam names it.
fn seam_error(error: crate::EvalError) -> seam::EvalError {
    match error {
        crate::EvalError::NotJson { .. } => seam::EvalError::NotJson,
        other => seam::EvalError::Threw(other.to_string()),
    }
}

/// The host as the evaluator asks it.
struct Host<'a>(&'a mut dyn seam::Host);

impl crate::Host for Host<'_> {
    fn now_ms(&mut self) -> i64 {
        self.0.now_ms()
    }

    fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
}

impl seam::CompiledExpression for Expression {
    fn source(&self) -> &str {
        Expression::source(self)
    }

    fn free_variables(&self) -> &[String] {
        Expression::free_variables(self)
    }

    fn reads_context(&self) -> bool {
        Expression::reads_context(self)
    }

    fn calls(&self, function: &str) -> bool {
        Expression::calls(self, function)
    }

    fn states_paths(&self) -> Option<&[Vec<String>]> {
        Expression::states_paths(self)
    }

    fn evaluate_direct(
        &self,
        states: &seam::States<'_>,
        variables: &[(&str, &Value)],
    ) -> Option<Result<Option<Value>, seam::EvalError>> {
        let (members, count) = members_of(states);
        self.evaluate_json(&members[..count], variables)
            .map(|evaluated| evaluated.map_err(seam_error))
    }

    fn evaluate(
        &self,
        bound: &dyn seam::Bound,
        host: &mut dyn seam::Host,
    ) -> Result<Option<Value>, seam::EvalError> {
        let Some(Bound(bindings)) = bound.as_any().downcast_ref::<Bound>() else {
            return Err(seam::EvalError::Threw(
                "bindings made by another evaluator".to_string(),
            ));
        };
        let limits = Limits {
            max_depth: Some(DEPTH_MAX),
            timeout_ms: Some(EVALUATION_TIME_MS_MAX),
            cancel: None,
        };
        self.evaluate_with_limits(None, bindings, &mut Host(host), limits)
            .map_err(seam_error)
    }
}
