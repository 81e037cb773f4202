//! assign: a state's, a Choice rule's or a Catcher's `Assign`, the workflow variables it sets.
//!
//! Owns [`Assign`], one variant per query language, and its evaluation into the new values.
//! When the values become visible (from the next state on), where they live (the thread's
//! scope) and how they are recorded (`assignedVariables` on the state's exited event) is the
//! interpreter's business.
//!
//! Invariants: every name is a valid variable name (checked by `asl::parse`); evaluation reads
//! the values as of the state's entry, never the ones it is computing.
//! Must not: read a clock, draw randomness of its own, or parse text.

use serde_json::{Map, Value};

use crate::paths::{Entropy, StatesError, Template, Variables};

/// An `Assign` field, in the state's query language.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Assign {
    /// A JSONPath state's `Assign`: a payload template (`"b.$": "$.field"`, literals,
    /// intrinsic calls), whose top-level keys are the variable names (without `.$`).
    JsonPath(Template),
}

impl Assign {
    /// The new values, by name: the template evaluated on `input` (the state's result, or the
    /// error output in a Catcher), the Context object and the variables as of entry.
    pub fn evaluate(
        &self,
        input: &Value,
        context: &Value,
        variables: &Variables,
        entropy: &mut dyn Entropy,
    ) -> Result<Map<String, Value>, StatesError> {
        match self {
            Assign::JsonPath(template) => {
                match template.evaluate_in(input, context, variables, entropy)? {
                    Value::Object(values) => Ok(values),
                    // The parser accepts only an object as a JSONPath Assign.
                    other => Err(StatesError::new(
                        crate::paths::STATES_RUNTIME,
                        format!("The Assign field evaluated to {other}, not an object"),
                    )),
                }
            }
        }
    }

    /// The names this Assign sets (without `.$`), in the order written.
    pub fn names(&self) -> Vec<&str> {
        match self {
            Assign::JsonPath(template) => template
                .source()
                .as_object()
                .map(|map| {
                    map.keys()
                        .map(|key| key.strip_suffix(".$").unwrap_or(key))
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    /// True when an expression of the Assign may read the Context object.
    pub fn mentions_context(&self) -> bool {
        match self {
            Assign::JsonPath(template) => template.mentions_context(),
        }
    }

    /// The variables the Assign reads, each once.
    pub fn variable_references(&self) -> Vec<String> {
        match self {
            Assign::JsonPath(template) => template.variable_references(),
        }
    }
}
