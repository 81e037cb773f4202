//! paths: JSONPath as ASL uses it, reference paths, payload templates, intrinsic functions and
//! the input/output processing pipeline (InputPath -> Parameters -> result -> ResultSelector ->
//! ResultPath -> OutputPath).
//!
//! Everything here is pure: no I/O, no clock, no randomness of its own (intrinsics that need
//! randomness take it from the caller through [`Entropy`]). Paths and templates are parsed once
//! (at validation) into a compiled form and evaluated many times.
//!
//! CONTRACT (other modules code against these names; keep them):
//! - [`StatesError`]: an ASL runtime failure as history data (`error` + `cause`).
//! - [`ParseError`]: a path/intrinsic/template syntax error with a human message.
//! - [`Path`]: a full JSONPath (`$...`, `$$...` for the Context object, `$name...` for a
//!   workflow variable), `parse`, `as_str`, `is_context`, `variable`, `variables` (its
//!   root's and its filters' `$name`s), `is_definite`, `select`
//!   (and `select_in`, `try_select_in`, `select_cow_in` with the [`Variables`] in scope).
//! - [`ReferencePath`]: a path naming one location (for ResultPath), `parse`, `as_str`, `get`,
//!   `set`.
//! - [`Template`]: a compiled payload template (Parameters, ResultSelector, ItemSelector):
//!   `compile` (all problems at once, as [`TemplateDiagnostic`]), `evaluate` (`evaluate_in`
//!   with variables) and `variable_references`.
//! - [`InputOutputPath`], [`ResultPathField`] and the pipeline functions in [`pipeline`].
//! - [`Variables`]: the workflow variables in scope (`$name`), `get`.
//!
//! Files: `jsonpath` (grammar, evaluator, step budget), `template` (compiled payload
//! templates), `intrinsic` (the 18 `States.*` functions), `pipeline` (the state's data flow and
//! AWS's wording of its failures), `fuzzing` (fuzz entry functions, replayed by `cargo test`).
//!
//! Semantics worth knowing, each checked against the AWS recordings in the conformance corpus:
//! - Jayway JsonPath rules: an indefinite path (`*`, `..`, slices, unions, filters) always
//!   yields an array, empty when nothing matches; a definite one yields one value or nothing.
//! - In a quoted name only the quote and `\` are escapes (`$['a\"b']` is the key `a\"b`).
//! - `States.MathAdd` rounds fractional arguments half up (`-1.5` -> `-1`; MathRandom does the
//!   same by analogy);
//!   `States.Format` prints objects and arrays as `{a=1, b=[x, y]}`, not as JSON.
//! - Causes are AWS's words without the per-state prefix; [`pipeline::in_state`] adds it.
//!
//! Invariants: no evaluation panics or runs unbounded (see the `PATH_*`, `INTRINSIC_*` and
//! `TEMPLATE_*` limits); nothing is parsed at evaluation time.
//! Must not: read a clock, draw randomness, do I/O, or depend on another engine module.

#![deny(missing_docs)]

use std::borrow::Cow;

use serde_json::Value;

pub mod fuzzing;
pub mod intrinsic;
mod jsonpath;
pub mod pipeline;
mod template;
mod variables;

pub use variables::{Variables, NO_VARIABLES};

/// `States.Runtime`: a failure of the engine to run the state as written.
pub const STATES_RUNTIME: &str = "States.Runtime";
/// `States.IntrinsicFailure`: an intrinsic function call failed at run time.
pub const STATES_INTRINSIC_FAILURE: &str = "States.IntrinsicFailure";
/// `States.ResultPathMatchFailure`: ResultPath cannot be applied to the state's input.
pub const STATES_RESULT_PATH_MATCH_FAILURE: &str = "States.ResultPathMatchFailure";
/// `States.DataLimitExceeded`: a payload is larger than 256 KiB.
pub const STATES_DATA_LIMIT_EXCEEDED: &str = "States.DataLimitExceeded";

/// An ASL runtime failure: becomes history data (`ExecutionFailed`, `TaskFailed`, ...), matched by
/// Retry/Catch `ErrorEquals`. Not a Rust-level error of the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatesError {
    /// The ASL error name, e.g. `States.Runtime`, `States.IntrinsicFailure`.
    pub error: String,
    /// The human cause, worded as AWS words it.
    pub cause: String,
    /// Where in the state a JSONata evaluation failed (`Output/result`, `Items`), as AWS's
    /// `EvaluationFailed` event gives it; `None` elsewhere.
    pub location: Option<String>,
}

impl StatesError {
    /// Builds an error with the given name and cause.
    pub fn new(error: impl Into<String>, cause: impl Into<String>) -> Self {
        Self {
            error: error.into(),
            cause: cause.into(),
            location: None,
        }
    }

    /// The same error, located at `location` (a JSONata field).
    pub fn at(mut self, location: impl Into<String>) -> Self {
        self.location = Some(location.into());
        self
    }
}

/// A syntax error in a path, an intrinsic call or a template, with the evidence: the text and
/// where in it parsing stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
#[non_exhaustive]
pub struct ParseError {
    /// A sentence a person understands, naming what is wrong (and where, in characters).
    pub message: String,
    /// The text that did not parse.
    pub text: String,
    /// The 0-based byte offset in `text` where parsing stopped, when one place is to blame.
    pub position_index: Option<usize>,
}

impl ParseError {
    /// An error about `text`, optionally at a byte offset.
    pub(crate) fn new(text: &str, position_index: Option<usize>, message: String) -> Self {
        debug_assert!(
            position_index.map_or(true, |i| i <= text.len()),
            "position inside the text"
        );
        ParseError {
            message,
            text: text.to_string(),
            position_index,
        }
    }
}

/// Randomness supplied by the caller (for `States.MathRandom` and `States.UUID`), so that a
/// replay can reproduce what a first run drew.
pub trait Entropy {
    /// The next 64 random bits.
    fn next_u64(&mut self) -> u64;
}

/// The shared seeded generator as entropy, for tests, fuzz replays and benches: a replay with
/// the same seed draws the same values.
impl Entropy for statelog_rng::Rng {
    fn next_u64(&mut self) -> u64 {
        statelog_rng::Rng::next_u64(self)
    }
}

/// A compiled full JSONPath as ASL uses it in InputPath, OutputPath, ItemsPath, Choice
/// `Variable`, `...Path` fields and `.$` template values.
#[derive(Debug, Clone, PartialEq)]
pub struct Path {
    text: String,
    parsed: jsonpath::Parsed,
    /// Every variable the path reads: its root's first, then those its filters compare with,
    /// each once, in order of appearance.
    variables: Vec<String>,
    /// Only names and indexes: evaluated by a walk by reference.
    simple: bool,
}

impl Path {
    /// Parses `text` (`$`, `$.a.b[0]`, `$..x`, `$.a[*]`, `$.a[1:3]`, `$.a[?(@.x > 1)]`, `$$.Task.Token`, ...).
    pub fn parse(text: &str) -> Result<Path, ParseError> {
        let parsed = jsonpath::parse(text)?;
        let simple = parsed
            .segments
            .iter()
            .all(|s| matches!(s, jsonpath::Segment::Child(_) | jsonpath::Segment::Index(_)));
        let mut variables: Vec<String> = parsed.variable.iter().cloned().collect();
        jsonpath::filter_variables(&parsed.segments, &mut variables);
        debug_assert!(
            !simple || variables.len() <= usize::from(parsed.variable.is_some()),
            "a path of names and indexes reads no variable but its root"
        );
        Ok(Path {
            text: text.to_string(),
            parsed,
            variables,
            simple,
        })
    }

    /// The path as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// True when the path starts with `$$` and reads the Context object.
    pub fn is_context(&self) -> bool {
        self.parsed.root == jsonpath::Root::Context
    }

    /// The workflow variable the path starts from (`x` for `$x.a`), if it starts with one.
    /// [`Path::variables`] also lists those its filters read.
    pub fn variable(&self) -> Option<&str> {
        self.parsed.variable.as_deref()
    }

    /// Every workflow variable the path reads: the one it starts from (`$x.a`) and those its
    /// filters compare with (`$.items[?(@.price < $limit)]` reads `limit`), each once, in order
    /// of appearance.
    pub fn variables(&self) -> &[String] {
        &self.variables
    }

    /// True when the path reads a workflow variable anywhere ([`Path::variables`] is not empty).
    #[inline]
    pub fn reads_variables(&self) -> bool {
        !self.variables.is_empty()
    }

    /// The document the path starts from: the input, the Context object, or the variable's
    /// value (`None` when the variable is not assigned).
    #[inline]
    fn start<'a>(
        &self,
        input: &'a Value,
        context: &'a Value,
        variables: &'a Variables,
    ) -> Option<&'a Value> {
        match self.parsed.root {
            jsonpath::Root::Context => Some(context),
            jsonpath::Root::Variable => self.variable().and_then(|name| variables.get(name)),
            jsonpath::Root::Input | jsonpath::Root::Current => Some(input),
        }
    }

    /// True when the path can name at most one location (no wildcard, slice, filter, union or
    /// recursive descent).
    pub fn is_definite(&self) -> bool {
        self.parsed.is_definite()
    }

    /// Evaluates the path against `input` (or `context` when [`Path::is_context`]). `None` when a
    /// definite path finds nothing; an indefinite path yields an array of its matches.
    /// An evaluation that exceeds [`crate::limits::PATH_EVAL_STEPS_MAX`] also yields `None`;
    /// use [`Path::try_select`] to tell the two apart.
    pub fn select(&self, input: &Value, context: &Value) -> Option<Value> {
        self.try_select(input, context).ok().flatten()
    }

    /// [`Path::select`] with the workflow variables in scope (`$name` paths read them).
    pub fn select_in(
        &self,
        input: &Value,
        context: &Value,
        variables: &Variables,
    ) -> Option<Value> {
        self.try_select_in(input, context, variables).ok().flatten()
    }

    /// Like [`Path::try_select`], but borrows the match from `input`/`context` when the path is
    /// made of names and indexes only (Choice `Variable`, ItemsPath, `...Path` fields), so the
    /// common case copies nothing.
    pub fn select_cow<'a>(
        &self,
        input: &'a Value,
        context: &'a Value,
    ) -> Result<Option<Cow<'a, Value>>, StatesError> {
        self.select_cow_in(input, context, &NO_VARIABLES)
    }

    /// [`Path::select_cow`] with the workflow variables in scope.
    pub fn select_cow_in<'a>(
        &self,
        input: &'a Value,
        context: &'a Value,
        variables: &'a Variables,
    ) -> Result<Option<Cow<'a, Value>>, StatesError> {
        if let Some(found) = self.select_definite_ref(input, context, variables) {
            return Ok(found.map(Cow::Borrowed));
        }
        Ok(self
            .try_select_in(input, context, variables)?
            .map(Cow::Owned))
    }

    /// Like [`Path::select`], but an evaluation that exceeds
    /// [`crate::limits::PATH_EVAL_STEPS_MAX`] is a `States.Runtime` error naming the path.
    pub fn try_select(&self, input: &Value, context: &Value) -> Result<Option<Value>, StatesError> {
        self.try_select_in(input, context, &NO_VARIABLES)
    }

    /// [`Path::try_select`] with the workflow variables in scope: a `$name` path reads the
    /// variable's value, and finds nothing when it is not assigned; a filter that compares with
    /// a variable that is not assigned is a `States.Runtime` error naming the path and the
    /// variable.
    pub fn try_select_in(
        &self,
        input: &Value,
        context: &Value,
        variables: &Variables,
    ) -> Result<Option<Value>, StatesError> {
        if let Some(found) = self.select_definite_ref(input, context, variables) {
            return Ok(found.cloned());
        }
        let Some(start) = self.start(input, context, variables) else {
            return Ok(None);
        };
        // Every variable a filter reads must be assigned, whether or not the evaluation would
        // reach it (an empty array tests nothing): the same path fails the same way on any
        // input.
        let root_count = usize::from(self.parsed.variable.is_some());
        if let Some(name) = self.variables[root_count..]
            .iter()
            .find(|name| variables.get(name).is_none())
        {
            return Err(self.unassigned(name));
        }
        let mut evaluator = jsonpath::Evaluator::new(input, context, variables);
        let mut found =
            evaluator
                .matches(start, &self.parsed.segments)
                .map_err(|stop| match stop {
                    jsonpath::EvalError::BudgetExceeded => StatesError::new(
                        STATES_RUNTIME,
                        format!(
                            "The JSONPath '{}' needed more than {} evaluation steps",
                            self.text,
                            crate::limits::PATH_EVAL_STEPS_MAX
                        ),
                    ),
                    // Checked above; kept typed in case a caller evaluates without the check.
                    jsonpath::EvalError::VariableUnassigned(name) => self.unassigned(&name),
                })?;
        if self.is_definite() {
            debug_assert!(
                found.len() <= 1,
                "a definite path matched several locations"
            );
            Ok(found.pop().map(jsonpath::Found::into_value))
        } else {
            Ok(Some(Value::Array(
                found.into_iter().map(jsonpath::Found::into_value).collect(),
            )))
        }
    }
}

impl Path {
    /// The `States.Runtime` failure of a filter that reads `$name`, which is not assigned.
    fn unassigned(&self, name: &str) -> StatesError {
        debug_assert!(
            self.variables.iter().any(|known| known == name),
            "a variable the path reads"
        );
        StatesError::new(
            STATES_RUNTIME,
            format!(
                "Invalid path '{}' : The variable '${name}' used in its filter is not assigned",
                self.text
            ),
        )
    }

    /// The fast path for definite paths made of names and indexes only: a walk by reference,
    /// no intermediate lists. `None` when the path has other segments (the general evaluator
    /// handles it); `Some(None)` when it finds nothing.
    pub(crate) fn select_definite_ref<'a>(
        &self,
        input: &'a Value,
        context: &'a Value,
        variables: &'a Variables,
    ) -> Option<Option<&'a Value>> {
        if !self.simple {
            return None;
        }
        let Some(mut current) = self.start(input, context, variables) else {
            return Some(None);
        };
        for segment in &self.parsed.segments {
            let next = match (segment, current) {
                (jsonpath::Segment::Child(name), Value::Object(map)) => map.get(name),
                (jsonpath::Segment::Index(index), Value::Array(items)) => {
                    jsonpath::resolve_index(*index, items.len()).map(|i| &items[i])
                }
                // `.length` on an array is computed by the general evaluator.
                (jsonpath::Segment::Child(name), Value::Array(_)) if name == "length" => {
                    return None
                }
                _ => None,
            };
            match next {
                Some(value) => current = value,
                None => return Some(None),
            }
        }
        Some(Some(current))
    }
}

impl std::fmt::Display for Path {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// One step of a reference path.
#[derive(Debug, Clone, PartialEq)]
enum ReferenceStep {
    Field(String),
    Index(i64),
}

/// A compiled reference path: names a single location (ResultPath).
#[derive(Debug, Clone, PartialEq)]
pub struct ReferencePath {
    text: String,
    steps: Vec<ReferenceStep>,
}

impl ReferencePath {
    /// Parses a reference path (`$`, `$.a.b`, `$.a[0]`, `$['a b']`).
    pub fn parse(text: &str) -> Result<ReferencePath, ParseError> {
        let parsed = jsonpath::parse(text)?;
        if parsed.root != jsonpath::Root::Input {
            return Err(ParseError::new(
                text,
                Some(0),
                format!(
                    "invalid reference path '{text}': it must start with '$', not '$$' or a \
                     variable"
                ),
            ));
        }
        let mut steps = Vec::with_capacity(parsed.segments.len());
        for segment in parsed.segments {
            match segment {
                jsonpath::Segment::Child(name) => steps.push(ReferenceStep::Field(name)),
                jsonpath::Segment::Index(index) => steps.push(ReferenceStep::Index(index)),
                _ => {
                    return Err(ParseError::new(
                        text,
                        None,
                        format!(
                            "invalid reference path '{text}': a reference path names a single \
                             location, so it may use only '.name', \"['name']\" and '[index]' \
                             (no '*', '..', slices, unions, filters or functions)"
                        ),
                    ))
                }
            }
        }
        Ok(ReferencePath {
            text: text.to_string(),
            steps,
        })
    }

    /// The path as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// True for `$`, the whole document.
    pub fn is_root(&self) -> bool {
        self.steps.is_empty()
    }

    /// The value at this location, if any.
    pub fn get<'a>(&self, value: &'a Value) -> Option<&'a Value> {
        let mut current = value;
        for step in &self.steps {
            current = match (step, current) {
                (ReferenceStep::Field(name), Value::Object(map)) => map.get(name)?,
                (ReferenceStep::Index(index), Value::Array(items)) => {
                    &items[jsonpath::resolve_index(*index, items.len())?]
                }
                _ => return None,
            };
        }
        Some(current)
    }

    /// Puts `value` at this location inside `target`, creating objects on the way; fails with
    /// `States.ResultPathMatchFailure` when the location cannot exist in `target`.
    pub fn set(&self, target: Value, value: Value) -> Result<Value, StatesError> {
        if self.steps.is_empty() {
            return Ok(value);
        }
        let mut target = target;
        match place(&mut target, &self.steps, value) {
            Ok(()) => Ok(target),
            Err(()) => Err(StatesError::new(
                STATES_RESULT_PATH_MATCH_FAILURE,
                format!(
                    "Unable to apply ReferencePath {} to input '{}'",
                    self.text,
                    to_json_text(&target)
                ),
            )),
        }
    }
}

/// Writes `value` at `steps` below `node`; `Err` when a step meets a value of the wrong kind
/// (a field inside a non-object, an index outside an array or past its end).
fn place(node: &mut Value, steps: &[ReferenceStep], value: Value) -> Result<(), ()> {
    let Some((first, rest)) = steps.split_first() else {
        *node = value;
        return Ok(());
    };
    let child = match (first, node) {
        (ReferenceStep::Field(name), Value::Object(map)) => {
            if rest.is_empty() {
                map.insert(name.clone(), value);
                return Ok(());
            }
            map.entry(name.clone())
                .or_insert_with(|| Value::Object(serde_json::Map::new()))
        }
        (ReferenceStep::Index(index), Value::Array(items)) => {
            let i = jsonpath::resolve_index(*index, items.len()).ok_or(())?;
            &mut items[i]
        }
        _ => return Err(()),
    };
    place(child, rest, value)
}

impl std::fmt::Display for ReferencePath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// Compact JSON text of a value, as AWS prints payloads in causes and outputs.
pub fn to_json_text(value: &Value) -> String {
    // Serializing a `Value` to a String cannot fail: keys are strings and numbers are finite.
    serde_json::to_string(value).expect("a serde_json::Value always serializes")
}

/// One problem found while compiling a payload template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateDiagnostic {
    /// JSON pointer *relative to the template* (e.g. `/order/id.$`), to be appended to the
    /// template field's own path by the caller.
    pub pointer: String,
    /// What is wrong.
    pub message: String,
}

/// A compiled payload template (`Parameters`, `ResultSelector`, `ItemSelector`).
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    source: Value,
    root: template::Node,
    /// Whether the source mentions `$$` anywhere (computed once at compile time).
    mentions_context: bool,
}

impl Template {
    /// Compiles a template: every `"key.$"` value must be a path or an intrinsic call.
    /// Returns every problem found, each with a pointer relative to the template.
    pub fn compile(source: &Value) -> Result<Template, Vec<TemplateDiagnostic>> {
        let mut problems = Vec::new();
        let root = template::compile(source, "", 0, &mut problems);
        if problems.is_empty() {
            Ok(Template {
                source: source.clone(),
                root,
                mentions_context: template::mentions_context(source),
            })
        } else {
            Err(problems)
        }
    }

    /// The template as written.
    pub fn source(&self) -> &Value {
        &self.source
    }

    /// True when the template may read the Context object: `$$` appears somewhere in its
    /// source (a path, an intrinsic argument or a key). Conservative, known at compile time, so
    /// a caller can skip building `$$` for templates that cannot read it.
    pub fn mentions_context(&self) -> bool {
        self.mentions_context
    }

    /// Builds the payload from the effective input and the Context object.
    pub fn evaluate(
        &self,
        input: &Value,
        context: &Value,
        entropy: &mut dyn Entropy,
    ) -> Result<Value, StatesError> {
        template::evaluate(&self.root, input, context, &NO_VARIABLES, entropy)
    }

    /// [`Template::evaluate`] with the workflow variables in scope (`$name` paths and
    /// intrinsic arguments read them).
    pub fn evaluate_in(
        &self,
        input: &Value,
        context: &Value,
        variables: &Variables,
        entropy: &mut dyn Entropy,
    ) -> Result<Value, StatesError> {
        template::evaluate(&self.root, input, context, variables, entropy)
    }

    /// The variables the template reads (`$name` in a `.$` path or an intrinsic argument),
    /// each once, in the order they first appear.
    pub fn variable_references(&self) -> Vec<String> {
        let mut names = Vec::new();
        template::variable_references(&self.root, &mut names);
        names
    }
}

/// A single dynamic value outside a payload template: a path or an intrinsic call given in a
/// field such as a Fail state's `ErrorPath`/`CausePath`. Failures name that field as AWS does
/// ("The JSONPath '$.x' specified for the field 'CausePath' could not be found in the input ...").
#[derive(Debug, Clone, PartialEq)]
pub struct FieldExpression {
    field: String,
    entry: template::Entry,
}

impl FieldExpression {
    /// Parses `text` (a path starting with `$`, or a `States.*` call) given in `field`.
    pub fn parse(field: &str, text: &str) -> Result<FieldExpression, ParseError> {
        let entry = if text.trim_start().starts_with("States.") {
            template::Entry::Call {
                field: field.to_string(),
                call: Box::new(intrinsic::Call::parse(text)?),
            }
        } else {
            template::Entry::Path {
                field: field.to_string(),
                path: Path::parse(text)?,
            }
        };
        Ok(FieldExpression {
            field: field.to_string(),
            entry,
        })
    }

    /// The field the expression was given in.
    pub fn field(&self) -> &str {
        &self.field
    }

    /// Evaluates against the effective input and the Context object.
    pub fn evaluate(
        &self,
        input: &Value,
        context: &Value,
        entropy: &mut dyn Entropy,
    ) -> Result<Value, StatesError> {
        template::evaluate_entry(&self.entry, input, context, &NO_VARIABLES, entropy)
    }

    /// [`FieldExpression::evaluate`] with the workflow variables in scope.
    pub fn evaluate_in(
        &self,
        input: &Value,
        context: &Value,
        variables: &Variables,
        entropy: &mut dyn Entropy,
    ) -> Result<Value, StatesError> {
        template::evaluate_entry(&self.entry, input, context, variables, entropy)
    }

    /// The variables the expression reads, each once.
    pub fn variable_references(&self) -> Vec<String> {
        let mut names = Vec::new();
        template::entry_variable_references(&self.entry, &mut names);
        names
    }
}

/// The value of `InputPath` / `OutputPath`.
#[derive(Debug, Clone, PartialEq)]
pub enum InputOutputPath {
    /// The field is `null`: the state sees (or emits) `{}`.
    Discard,
    /// A path (the default when absent is `$`).
    Select(Path),
}

/// The value of `ResultPath`.
#[derive(Debug, Clone, PartialEq)]
pub enum ResultPathField {
    /// `null`: the result is discarded and the raw input passes through.
    Discard,
    /// A reference path (the default when absent is `$`).
    Reference(ReferencePath),
}

#[cfg(test)]
mod tests;
