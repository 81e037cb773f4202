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

use super::data_flow::{self, Env};
use super::jsonata::{JsonataTemplate, States};
use crate::paths::{StatesError, Template};

/// An `Assign` field, in the state's query language.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Assign {
    /// A JSONPath state's `Assign`: a payload template (`"b.$": "$.field"`, literals,
    /// intrinsic calls), whose top-level keys are the variable names (without `.$`).
    JsonPath(Template),
    /// A JSONata state's `Assign`: an object whose keys are the variable names and whose
    /// values are templates (`{% %}` at any depth) over `$states` and the variables.
    Jsonata(JsonataTemplate),
}

/// What an `Assign` is evaluated on, in either query language.
#[derive(Debug, Clone, Copy)]
pub struct AssignInput<'a> {
    /// JSONPath's `$`: the state's (selected) result, its effective input (Choice, Wait) or
    /// the error output (a Catcher).
    pub value: &'a Value,
    /// JSONata's `$states`: the raw input, with `result` after success (Task, Parallel,
    /// Map) or `errorOutput` in a Catcher.
    pub states: States<'a>,
    /// The variables the JSONata expressions read (the state's or the Catcher's).
    pub reads: &'a [String],
}

impl Assign {
    /// The new values, by name: the template evaluated on `on` (JSONPath: its `value`;
    /// JSONata: its `$states`), the Context object and the variables as of entry (`env`).
    pub fn evaluate(
        &self,
        on: &AssignInput<'_>,
        context: &Value,
        env: &mut Env<'_>,
    ) -> Result<Map<String, Value>, StatesError> {
        match self {
            Assign::Jsonata(template) => {
                match data_flow::evaluate(template, "Assign", &on.states, on.reads, env)? {
                    Value::Object(values) => Ok(values),
                    // The parser accepts only an object as an Assign.
                    other => Err(StatesError::new(
                        crate::paths::STATES_RUNTIME,
                        format!("The Assign field evaluated to {other}, not an object"),
                    )),
                }
            }
            Assign::JsonPath(template) => {
                match template.evaluate_in(on.value, context, env.variables, &mut *env.entropy)? {
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
            Assign::Jsonata(JsonataTemplate::Object(members)) => {
                members.iter().map(|(name, _)| name.as_str()).collect()
            }
            Assign::Jsonata(JsonataTemplate::Literal(Value::Object(map))) => {
                map.keys().map(String::as_str).collect()
            }
            Assign::Jsonata(_) => Vec::new(),
        }
    }

    /// True when an expression of the Assign may read the Context object.
    pub fn mentions_context(&self) -> bool {
        match self {
            Assign::JsonPath(template) => template.mentions_context(),
            // `$states` may be aliased, so any mention of `context` counts (as for the
            // state's other expressions).
            Assign::Jsonata(template) => template
                .expressions()
                .iter()
                .any(|expression| expression.source().contains("context")),
        }
    }

    /// The variables the Assign reads, each once.
    pub fn variable_references(&self) -> Vec<String> {
        match self {
            Assign::JsonPath(template) => template.variable_references(),
            Assign::Jsonata(template) => {
                let mut names: Vec<String> = Vec::new();
                for expression in template.expressions() {
                    for name in expression.free_variables() {
                        if name != "states" && !names.contains(name) {
                            names.push(name.clone());
                        }
                    }
                }
                names
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! The JSONata variant without an evaluator: a literal Assign is its own value, its names
    //! are its keys; what the expressions compute is tested with the engine's evaluator
    //! (`tests/statelog/interpreter_variables.rs`).

    use serde_json::json;
    use statelog_rng::Rng;

    use super::*;
    use crate::paths::NO_VARIABLES;

    fn on(value: &Value) -> AssignInput<'_> {
        AssignInput {
            value,
            states: States {
                input: value,
                result: None,
                error_output: None,
                context: None,
                paths: None,
            },
            reads: &[],
        }
    }

    #[test]
    fn a_literal_jsonata_assign_sets_its_members_without_an_evaluator() {
        let assign = Assign::Jsonata(JsonataTemplate::Literal(json!({"a": 1, "b": [true]})));
        assert_eq!(assign.names(), ["a", "b"]);
        assert!(!assign.mentions_context());
        assert!(assign.variable_references().is_empty());
        let mut rng = Rng::new(1);
        let mut env = Env {
            now_ms: 0,
            entropy: &mut rng,
            variables: &NO_VARIABLES,
            jsonata: None,
        };
        let input = json!({});
        let values = assign
            .evaluate(&on(&input), &Value::Null, &mut env)
            .expect("a literal");
        assert_eq!(Value::Object(values), json!({"a": 1, "b": [true]}));
        let not_object = Assign::Jsonata(JsonataTemplate::Literal(json!([1])));
        let error = not_object
            .evaluate(&on(&input), &Value::Null, &mut env)
            .expect_err("not an object");
        assert_eq!(error.error, crate::paths::STATES_RUNTIME);
    }

    #[test]
    fn a_jsonpath_assign_names_drop_the_path_suffix() {
        let template = Template::compile(&json!({"a.$": "$.x", "b": 2})).expect("compiles");
        let assign = Assign::JsonPath(template);
        assert_eq!(assign.names(), ["a", "b"]);
        let mut rng = Rng::new(1);
        let mut env = Env {
            now_ms: 0,
            entropy: &mut rng,
            variables: &NO_VARIABLES,
            jsonata: None,
        };
        let input = json!({"x": 5});
        let values = assign
            .evaluate(&on(&input), &Value::Null, &mut env)
            .expect("evaluates");
        assert_eq!(Value::Object(values), json!({"a": 5, "b": 2}));
    }
}
