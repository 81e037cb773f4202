//! jsonata: the seam between the core and a JSONata evaluator, and the compiled `{% %}`
//! template every JSONata field is held as.
//!
//! The core does not depend on an evaluator (the one statelog uses, `statelog-jsonata`, pulls
//! in a clock and `getrandom`): it defines what it needs as traits. [`Jsonata`] compiles an
//! expression once, at machine-creation time, and binds the values an evaluation sees
//! (`$states` and the variables) once per state step; [`CompiledExpression`] is one compiled
//! expression; [`Host`] gives an evaluation the decision's time and entropy. The embedder (the
//! engine) hands its evaluator to `parse_definition` through
//! [`ValidationOptions::jsonata`](super::ValidationOptions); without one, a JSONata definition
//! is refused as not supported.
//!
//! [`JsonataTemplate`] is a field value with `{% ... %}` strings at any depth of objects and
//! arrays (expressions) and every other value a literal. `Output`, `Arguments`, `Items`,
//! `ItemSelector` and a Catcher's `Output` are held as one; an `Assign` can reuse it.
//!
//! Invariants: every expression in a template compiled and passed the Step Functions checks
//! (no top-level read of the input, no `$eval`); evaluation failures are
//! `States.QueryEvaluationError`s worded as AWS words them, naming the field
//! (`Output/result`).
//! Must not: read a clock or draw randomness of its own (the [`Host`] does), or know an
//! evaluator's types.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::paths::{Entropy, StatesError};

/// The ASL error of a JSONata expression that fails at run time.
pub const QUERY_EVALUATION_ERROR: &str = "States.QueryEvaluationError";

/// A JSONata evaluator: compiles expressions and binds the values they see.
pub trait Jsonata: Send + Sync {
    /// Compiles `source` (the text inside `{% %}`, trimmed).
    fn compile(&self, source: &str) -> Result<Arc<dyn CompiledExpression>, CompileError>;

    /// Converts `$states` and `variables` (name without `$`, value) once, for every
    /// expression of one state step.
    fn bind(&self, states: &States<'_>, variables: &[(&str, &Value)]) -> Box<dyn Bound>;
}

/// What `$states` holds for one evaluation: `input` always, the rest where the field may
/// read it.
#[derive(Debug, Clone, Copy)]
pub struct States<'a> {
    /// `$states.input`: the state's raw input.
    pub input: &'a Value,
    /// `$states.result`: a Task's, Parallel's or Map's result (in `Output` after success).
    pub result: Option<&'a Value>,
    /// `$states.errorOutput`: the error output (in a Catcher's `Output`).
    pub error_output: Option<&'a Value>,
    /// `$states.context`: the Context object (`None` when no expression of the state reads
    /// it: building it costs allocations).
    pub context: Option<&'a Value>,
    /// The field paths below `$states` the expressions read
    /// ([`CompiledExpression::states_paths`], merged): the evaluator may bind only those
    /// (converting a large input costs more than evaluating). `None`: all of it.
    pub paths: Option<&'a [Vec<String>]>,
}

/// Values bound by [`Jsonata::bind`], in the evaluator's own form.
pub trait Bound {
    /// For the evaluator to find its own type again.
    fn as_any(&self) -> &dyn Any;
}

/// One compiled expression.
pub trait CompiledExpression: Send + Sync {
    /// The text it was compiled from.
    fn source(&self) -> &str;
    /// The `$name` values it reads without binding them itself, without the `$` (`states`
    /// and variables); function names do not count.
    fn free_variables(&self) -> &[String];
    /// Whether it reads its input at the top level (`$`, a field name, ...): Step Functions
    /// refuses that.
    fn reads_context(&self) -> bool;
    /// Whether it names the function `$name` (give it without the `$`).
    fn calls(&self, function: &str) -> bool;
    /// The field paths below `$states` it reads (`["input", "order", "id"]` for
    /// `$states.input.order.id`), each read whole at its end; `None` (the default) when it
    /// may read `$states` otherwise. The core only merges them and hands them back to
    /// [`Jsonata::bind`]: an evaluator may write other steps into them (`statelog-jsonata`
    /// writes a constant index as `[0]`).
    fn states_paths(&self) -> Option<&[Vec<String>]> {
        None
    }
    /// Evaluates with the values `bound` (made by the same evaluator's [`Jsonata::bind`]);
    /// `Ok(None)`: it returned nothing (undefined).
    fn evaluate(&self, bound: &dyn Bound, host: &mut dyn Host) -> Result<Option<Value>, EvalError>;
    /// Evaluates straight over `states` and `variables` (those [`Jsonata::bind`] would get),
    /// without binding them, where the expression's shape allows it (a path, a comparison): exactly what
    /// [`CompiledExpression::evaluate`] over their bindings would give. `None` (the default):
    /// bind and evaluate.
    fn evaluate_direct(
        &self,
        states: &States<'_>,
        variables: &[(&str, &Value)],
    ) -> Option<Result<Option<Value>, EvalError>> {
        let _ = (states, variables);
        None
    }
}

/// The decision's clock and entropy, as an evaluation sees them.
pub trait Host {
    /// Milliseconds since the Unix epoch (UTC): the decision's `now`.
    fn now_ms(&mut self) -> i64;
    /// 64 random bits from the decision's entropy.
    fn next_u64(&mut self) -> u64;
}

/// Bindings made on first use: a step whose expressions all evaluate directly
/// ([`Expression::evaluate_direct`]) converts nothing.
pub struct LazyBound<'f> {
    bind: &'f dyn Fn() -> Result<Box<dyn Bound>, crate::paths::StatesError>,
    bound: Option<Box<dyn Bound>>,
}

impl<'f> LazyBound<'f> {
    /// Bindings that `bind` makes when first asked for.
    pub fn new(bind: &'f dyn Fn() -> Result<Box<dyn Bound>, crate::paths::StatesError>) -> Self {
        LazyBound { bind, bound: None }
    }

    /// The bindings, made now if not yet.
    pub fn get(&mut self) -> Result<&dyn Bound, crate::paths::StatesError> {
        let bound = match self.bound.take() {
            Some(bound) => bound,
            None => (self.bind)()?,
        };
        Ok(&**self.bound.insert(bound))
    }
}

/// The [`Host`] of one decision.
pub struct DecisionHost<'a> {
    /// The decision's time.
    pub now_ms: u64,
    /// The decision's entropy.
    pub entropy: &'a mut dyn Entropy,
}

impl Host for DecisionHost<'_> {
    fn now_ms(&mut self) -> i64 {
        i64::try_from(self.now_ms).unwrap_or(i64::MAX)
    }

    fn next_u64(&mut self) -> u64 {
        self.entropy.next_u64()
    }
}

/// An expression that does not compile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileError {
    /// The JSONata error code (`S0202`, ...), where there is one.
    pub code: Option<String>,
    /// The message, without the code.
    pub message: String,
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.code {
            Some(code) => write!(f, "{code}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// An evaluation that failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvalError {
    /// The expression threw: `CODE: message`, as AWS quotes it.
    Threw(String),
    /// It returned a function or a regular expression, which has no JSON value.
    NotJson,
}

/// The evaluator a machine was compiled with, shared by its expressions' evaluations.
/// Compared equal to any other: it is behaviour, not part of the definition.
#[derive(Clone)]
pub struct JsonataRuntime(pub Arc<dyn Jsonata>);

impl fmt::Debug for JsonataRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JsonataRuntime")
    }
}

impl PartialEq for JsonataRuntime {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// A compiled expression as the model holds it: compared and printed by its source text.
#[derive(Clone)]
pub struct Expression(Arc<dyn CompiledExpression>);

impl Expression {
    /// Wraps a compiled expression.
    pub fn new(compiled: Arc<dyn CompiledExpression>) -> Self {
        Expression(compiled)
    }

    /// The text inside `{% %}`, trimmed.
    pub fn source(&self) -> &str {
        self.0.source()
    }

    /// See [`CompiledExpression::free_variables`].
    pub fn free_variables(&self) -> &[String] {
        self.0.free_variables()
    }

    /// See [`CompiledExpression::states_paths`].
    pub fn states_paths(&self) -> Option<&[Vec<String>]> {
        self.0.states_paths()
    }

    /// Evaluates for the field `field` (`Output/result`, named in AWS's causes): nothing
    /// (undefined) is an error, as is a value with no JSON form or a throw.
    pub fn evaluate(
        &self,
        field: &dyn Fn() -> String,
        bound: &dyn Bound,
        host: &mut dyn Host,
    ) -> Result<Value, StatesError> {
        self.answer(field, self.0.evaluate(bound, host))
    }

    /// [`Expression::evaluate`] straight over `states` and the variables (see
    /// [`CompiledExpression::evaluate_direct`]); `None`: bind and evaluate.
    pub fn evaluate_direct(
        &self,
        field: &dyn Fn() -> String,
        states: &States<'_>,
        variables: &[(&str, &Value)],
    ) -> Option<Result<Value, StatesError>> {
        let evaluated = self.0.evaluate_direct(states, variables)?;
        Some(self.answer(field, evaluated))
    }

    fn answer(
        &self,
        field: &dyn Fn() -> String,
        evaluated: Result<Option<Value>, EvalError>,
    ) -> Result<Value, StatesError> {
        match evaluated {
            Ok(Some(value)) => Ok(value),
            Ok(None) => Err(self.failure(&field(), format_args!("returned nothing (undefined)."))),
            Err(EvalError::NotJson) => Err(self.failure(
                &field(),
                format_args!("returned an unsupported result type."),
            )),
            Err(EvalError::Threw(text)) => Err(self.failure(
                &field(),
                format_args!("threw an error during evaluation. {text}"),
            )),
        }
    }

    /// A `States.QueryEvaluationError` about this expression in `field`.
    pub fn failure(&self, field: &str, what: fmt::Arguments<'_>) -> StatesError {
        StatesError::new(
            QUERY_EVALUATION_ERROR,
            format!(
                "The JSONata expression '{}' specified for the field '{field}' {what}",
                self.source()
            ),
        )
        .at(field)
    }

    /// The AWS cause of a value of the wrong type (`expected`: `array`, `boolean`, ...).
    pub fn wrong_type(&self, field: &str, expected: &str, value: &Value) -> StatesError {
        let text = serde_json::to_string(value).unwrap_or_default();
        self.failure(
            field,
            format_args!(
                "returned an unexpected result type. Expected '{expected}', but was '{}' for value: {text}",
                json_type(value)
            ),
        )
    }
}

/// The JSON type name AWS uses in its causes.
pub fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

impl fmt::Debug for Expression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{% {} %}}", self.source())
    }
}

impl PartialEq for Expression {
    fn eq(&self, other: &Self) -> bool {
        self.source() == other.source()
    }
}

/// The inside of a `{% ... %}` string, trimmed; `None` for a literal string.
pub fn expression_text(text: &str) -> Option<&str> {
    let inner = text.strip_prefix("{%")?.strip_suffix("%}")?;
    Some(inner.trim())
}

/// A field value in JSONata mode: expressions at any depth, literals elsewhere.
#[derive(Debug, Clone, PartialEq)]
pub enum JsonataTemplate {
    /// A value with no expression in it, used as is.
    Literal(Value),
    /// A `{% %}` string.
    Expression(Expression),
    /// An object with an expression somewhere inside (members in order).
    Object(Vec<(String, JsonataTemplate)>),
    /// An array with an expression somewhere inside.
    Array(Vec<JsonataTemplate>),
}

/// Why an expression of a template was refused at creation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateProblem {
    /// It does not parse (AWS: `INVALID_JSONATA_EXPRESSION`).
    Invalid {
        /// The expression.
        source: String,
        /// What the parser said.
        error: CompileError,
    },
    /// It parses, but Step Functions does not run it (AWS:
    /// `UNSUPPORTED_JSONATA_EXPRESSION`).
    Unsupported {
        /// The expression.
        source: String,
        /// Why, as a sentence.
        reason: &'static str,
    },
}

impl JsonataTemplate {
    /// Compiles `value`; every refused expression is reported with the JSON pointer below
    /// `at` where it sits, and then `None` is returned.
    pub fn compile(
        value: &Value,
        at: &str,
        jsonata: &dyn Jsonata,
        problems: &mut Vec<(String, TemplateProblem)>,
    ) -> Option<JsonataTemplate> {
        if !has_expression(value) {
            return Some(JsonataTemplate::Literal(value.clone()));
        }
        let before = problems.len();
        let template = compile_inner(value, at, jsonata, problems);
        (problems.len() == before).then_some(template)
    }

    /// The single expression this template is, if it is one.
    pub fn as_expression(&self) -> Option<&Expression> {
        match self {
            JsonataTemplate::Expression(e) => Some(e),
            _ => None,
        }
    }

    /// Every expression in it, in document order.
    pub fn expressions(&self) -> Vec<&Expression> {
        let mut out = Vec::new();
        self.collect(&mut out);
        out
    }

    fn collect<'a>(&'a self, out: &mut Vec<&'a Expression>) {
        match self {
            JsonataTemplate::Literal(_) => {}
            JsonataTemplate::Expression(e) => out.push(e),
            JsonataTemplate::Object(members) => members.iter().for_each(|(_, t)| t.collect(out)),
            JsonataTemplate::Array(items) => items.iter().for_each(|t| t.collect(out)),
        }
    }

    /// Evaluates for the field named `field` (`Output`, `Arguments`, ...): literals as they
    /// are, each expression's value in its place.
    pub fn evaluate(
        &self,
        field: &str,
        bound: &dyn Bound,
        host: &mut dyn Host,
    ) -> Result<Value, StatesError> {
        let mut trail = Vec::new();
        self.evaluate_at(field, &mut trail, bound, host)
    }

    fn evaluate_at<'a>(
        &'a self,
        field: &str,
        trail: &mut Vec<Step<'a>>,
        bound: &dyn Bound,
        host: &mut dyn Host,
    ) -> Result<Value, StatesError> {
        match self {
            JsonataTemplate::Literal(value) => Ok(value.clone()),
            JsonataTemplate::Expression(e) => {
                let name = || {
                    let mut name = field.to_string();
                    for step in trail.iter() {
                        name.push('/');
                        match step {
                            Step::Key(k) => name.push_str(k),
                            Step::Index(i) => name.push_str(&i.to_string()),
                        }
                    }
                    name
                };
                e.evaluate(&name, bound, host)
            }
            JsonataTemplate::Object(members) => {
                let mut map = Map::with_capacity(members.len());
                for (key, template) in members {
                    trail.push(Step::Key(key));
                    let value = template.evaluate_at(field, trail, bound, host)?;
                    trail.pop();
                    map.insert(key.clone(), value);
                }
                Ok(Value::Object(map))
            }
            JsonataTemplate::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (index, template) in items.iter().enumerate() {
                    trail.push(Step::Index(index));
                    out.push(template.evaluate_at(field, trail, bound, host)?);
                    trail.pop();
                }
                Ok(Value::Array(out))
            }
        }
    }
}

/// One step from a field to a value inside it, for naming the value in a cause.
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

fn has_expression(value: &Value) -> bool {
    match value {
        Value::String(s) => expression_text(s).is_some(),
        Value::Array(items) => items.iter().any(has_expression),
        Value::Object(map) => map.values().any(has_expression),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

fn compile_inner(
    value: &Value,
    at: &str,
    jsonata: &dyn Jsonata,
    problems: &mut Vec<(String, TemplateProblem)>,
) -> JsonataTemplate {
    use super::diagnostic::{pointer_child, pointer_index};
    if !has_expression(value) {
        return JsonataTemplate::Literal(value.clone());
    }
    match value {
        Value::String(text) => {
            let source = expression_text(text).expect("has_expression saw an expression");
            match compile_expression(source, jsonata) {
                Ok(e) => JsonataTemplate::Expression(e),
                Err(problem) => {
                    problems.push((at.to_string(), problem));
                    JsonataTemplate::Literal(Value::Null)
                }
            }
        }
        Value::Array(items) => JsonataTemplate::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| compile_inner(item, &pointer_index(at, i), jsonata, problems))
                .collect(),
        ),
        Value::Object(map) => JsonataTemplate::Object(
            map.iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        compile_inner(v, &pointer_child(at, k), jsonata, problems),
                    )
                })
                .collect(),
        ),
        Value::Null | Value::Bool(_) | Value::Number(_) => {
            unreachable!("has_expression is false for scalars")
        }
    }
}

/// Compiles one expression and applies the Step Functions checks.
pub fn compile_expression(
    source: &str,
    jsonata: &dyn Jsonata,
) -> Result<Expression, TemplateProblem> {
    let compiled = jsonata
        .compile(source)
        .map_err(|error| TemplateProblem::Invalid {
            source: source.to_string(),
            error,
        })?;
    if compiled.reads_context() {
        return Err(TemplateProblem::Unsupported {
            source: source.to_string(),
            reason: "a top-level reference must be $states or a variable ($name), not the input ($ or a field name)",
        });
    }
    if compiled.calls("eval") {
        return Err(TemplateProblem::Unsupported {
            source: source.to_string(),
            reason: "the function $eval is not available (use $parse)",
        });
    }
    Ok(Expression::new(compiled))
}
