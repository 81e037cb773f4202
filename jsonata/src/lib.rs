//! statelog's JSONata evaluator: the one module the rest of statelog reaches JSONata through.
//!
//! Owns: compiling an expression once (`Expression::compile`, at machine-creation time),
//! what it references (`free_variables`, `reads_context`, `calls`), evaluating it against JSON
//! with bindings (`$states`, variables), the functions Step Functions adds (`$partition`,
//! `$range`, `$hash`, `$random([seed])`, `$uuid`, `$parse`; `$eval` refused), and taking
//! `$now`, `$millis`, `$random` and `$uuid` from the caller's [`Host`] so that a replay
//! computes the same values. Also the `{% ... %}` test ([`is_expression`]), and ([`asl`]) the
//! core's JSONata seam implemented over all this, which the engine hands the parser.
//!
//! Must not: do I/O, read a clock for a value (an evaluation's time budget,
//! [`Limits::timeout_ms`], is the one clock read, and only stops it), draw unseeded randomness
//! or start threads; know about ASL beyond the seam it implements; let a `jsonata_core` type
//! into its API.
//!
//! The engine underneath is `jsonata-core` (pinned exactly): its parser gives an AST that is
//! `Send + Sync`, and its tree-walking evaluator takes bindings and host functions. A fresh
//! evaluator is made for each evaluation (it is neither `Send` nor reusable across threads),
//! holding only the host functions the expression names. Expressions of a few simple shapes
//! (literals, `$v.a[0].b`, `&` of strings, comparisons of numbers) are evaluated without it
//! (`fast`), giving what it gives.
//!
//! Known gaps, each from the engine: numbers are `f64` (an integer past 2^53 in the input
//! loses precision); a parse error carries no position; `$toMillis(text, picture)` with a
//! picture lacking date parts fills them from the machine's clock; an endless tail-recursive
//! function loops until a [`Cancel`] or the time budget stops it (no depth limit catches a
//! tail call; [`asl`] gives every evaluation a budget); and the
//! engine's normal dependencies include a clock and `getrandom` (unused here: `$now`,
//! `$millis`, `$random` and `$shuffle` are always replaced when named).

pub mod asl;
mod convert;
mod fast;
#[cfg(test)]
mod fast_tests;
mod functions;
mod scan;

use std::collections::BTreeSet;
use std::fmt;

use jsonata_core::ast::AstNode;
use jsonata_core::evaluator::{Context, Evaluator, EvaluatorError, EvaluatorOptions};
use jsonata_core::value::JValue;
use serde_json::Value;

/// The inside of a `{% ... %}` string, trimmed: a string that starts with `{%` and ends with
/// `%}` is a JSONata expression; any other string is a literal (`None`).
pub fn is_expression(text: &str) -> Option<&str> {
    let inner = text.strip_prefix("{%")?.strip_suffix("%}")?;
    Some(inner.trim())
}

/// What the evaluator needs from its caller that must be recorded for a replay.
///
/// Each is asked at most once per evaluation, and only when the expression names a function
/// that needs it: `now_ms` when it names `$now` or `$millis` (as in JSONata, every call in one
/// evaluation sees the same instant), `next_u64` when it names `$random` or `$uuid` (the
/// draw seeds the generator those calls share during the evaluation). The same answers give
/// the same results.
pub trait Host {
    /// Milliseconds since the Unix epoch (UTC).
    fn now_ms(&mut self) -> i64;
    /// 64 random bits.
    fn next_u64(&mut self) -> u64;
}

/// Named values an expression sees as `$name`: `$states` and the workflow's variables.
///
/// Each value is converted to the evaluator's form once, when it is set, so one `Bindings`
/// can serve every expression of a state. Not `Send`: build it where it is used.
#[derive(Default)]
pub struct Bindings {
    values: Vec<(String, JValue)>,
}

impl Bindings {
    /// No bindings.
    pub fn new() -> Bindings {
        Bindings::default()
    }

    /// Binds `$name` (give `name` without the `$`) to `value`, replacing an earlier binding of
    /// the same name.
    pub fn set(&mut self, name: &str, value: &Value) -> &mut Bindings {
        let converted = convert::to_jvalue(value);
        match self.values.iter_mut().find(|(n, _)| n == name) {
            Some((_, slot)) => *slot = converted,
            None => self.values.push((name.to_string(), converted)),
        }
        self
    }

    /// The builder form of [`Bindings::set`].
    pub fn with(mut self, name: &str, value: &Value) -> Bindings {
        self.set(name, value);
        self
    }

    /// Binds `$name` to a value already converted.
    pub(crate) fn set_converted(&mut self, name: &str, converted: JValue) -> &mut Bindings {
        match self.values.iter_mut().find(|(n, _)| n == name) {
            Some((_, slot)) => *slot = converted,
            None => self.values.push((name.to_string(), converted)),
        }
        self
    }

    /// The value bound to `$name`.
    pub(crate) fn get(&self, name: &str) -> Option<&JValue> {
        self.values.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// Whether `$name` is bound.
    pub fn contains(&self, name: &str) -> bool {
        self.values.iter().any(|(n, _)| n == name)
    }
}

/// Limits on one evaluation.
#[derive(Debug, Clone, Default)]
pub struct Limits {
    /// The deepest nesting of evaluation allowed (JSONata's `stack` option); beyond it the
    /// evaluation fails with `D1011`. `None`: the engine's own bound (about 30,000 levels,
    /// then `U1001`).
    pub max_depth: Option<usize>,
    /// The longest the evaluation may run, in milliseconds (JSONata's `timeout`); beyond it
    /// the evaluation fails with `D1012`. The one clock read this crate allows the engine
    /// underneath: it stops an evaluation and never enters its result.
    pub timeout_ms: Option<u64>,
    /// Stops the evaluation (`U1003`) once cancelled, from any thread: how a caller with a
    /// clock bounds an evaluation's time, since this crate reads none.
    pub cancel: Option<Cancel>,
}

/// A flag that stops every evaluation holding a clone of it once set. Cannot be reset.
#[derive(Debug, Clone, Default)]
pub struct Cancel(jsonata_core::evaluator::CancelToken);

impl Cancel {
    /// Not cancelled.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Stops the evaluations holding it (at their next step).
    pub fn cancel(&self) {
        self.0.cancel();
    }

    /// Whether it has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.0.is_cancelled()
    }
}

/// An expression that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", display_coded(self.code.as_deref(), &self.message))]
pub struct CompileError {
    /// The JSONata error code (`S0202`, ...), where the parser gives one.
    pub code: Option<String>,
    /// The message, without the code.
    pub message: String,
}

/// An evaluation that failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    /// JSONata raised an error (a type error, a failed `$assert`, `$error(...)`, a Step
    /// Functions function refusing its arguments, ...). `Display` gives `CODE: message`, the
    /// text AWS quotes in a `States.QueryEvaluationError` cause.
    #[error("{}", display_coded(code.as_deref(), message))]
    Jsonata {
        /// The JSONata error code (`T1006`, `D3030`, ...), where there is one.
        code: Option<String>,
        /// The message, without the code.
        message: String,
    },
    /// The expression returned a function or a regular expression, which has no JSON form
    /// (AWS: "returned an unsupported result type").
    #[error("the expression returned a {kind}, which has no JSON value")]
    NotJson {
        /// `function` or `regex`.
        kind: &'static str,
    },
}

impl EvalError {
    /// The JSONata error code, if any.
    pub fn code(&self) -> Option<&str> {
        match self {
            EvalError::Jsonata { code, .. } => code.as_deref(),
            EvalError::NotJson { .. } => None,
        }
    }

    pub(crate) fn coded(code: &str, message: impl Into<String>) -> EvalError {
        EvalError::Jsonata {
            code: Some(code.to_string()),
            message: message.into(),
        }
    }
}

fn display_coded(code: Option<&str>, message: &str) -> String {
    match code {
        Some(code) => format!("{code}: {message}"),
        None => message.to_string(),
    }
}

/// Splits `X0000: message` into its code and message. The engine puts a prefix before the
/// code of some errors (`Invalid syntax: S0201: ...`, `Signature validation failed: T0410:
/// ...`); the code is taken where it starts the text or follows a `: `.
fn split_code(text: &str) -> (Option<String>, String) {
    let b = text.as_bytes();
    let code_at = |i: usize| {
        b.len() >= i + 6
            && b[i].is_ascii_uppercase()
            && b[i + 1..i + 5].iter().all(u8::is_ascii_digit)
            && b[i + 5] == b':'
            && (i == 0 || (i >= 2 && &b[i - 2..i] == b": "))
    };
    match (0..b.len()).find(|&i| code_at(i)) {
        Some(i) => (
            Some(text[i..i + 5].to_string()),
            text[i + 6..].trim_start().to_string(),
        ),
        None => (None, text.to_string()),
    }
}

fn from_engine(e: &EvaluatorError) -> EvalError {
    let (code, mut message) = split_code(e.message());
    // Where the engine words an error otherwise than jsonata-js 2.0.6 (AWS's version, whose
    // words AWS quotes in its causes), the reference's words.
    let reference = match code.as_deref() {
        Some("T1006") => Some("Attempted to invoke a non-function"),
        Some("T1008") => Some("Attempted to partially apply a non-function"),
        _ => None,
    };
    if let Some(text) = reference {
        message = text.to_string();
    }
    EvalError::Jsonata { code, message }
}

/// A compiled JSONata expression: parsed once, `Send + Sync`, evaluated any number of times.
#[derive(Debug, Clone)]
pub struct Expression {
    source: String,
    ast: AstNode,
    free: Vec<String>,
    reads_context: bool,
    calls: BTreeSet<String>,
    states_paths: Option<Vec<Vec<String>>>,
    /// When the expression has a shape evaluated without the engine ([`fast`]).
    fast: Option<fast::Fast>,
}

impl Expression {
    /// Parses `source` (the text inside `{% %}`).
    pub fn compile(source: &str) -> Result<Expression, CompileError> {
        let ast = jsonata_core::parser::parse(source).map_err(|e| {
            let text = e.to_string();
            let (code, message) = split_code(&text);
            // The engine gives a few parse errors without their JSONata code.
            let code = code.or_else(|| uncoded_parse_error(&e).map(str::to_string));
            CompileError { code, message }
        })?;
        let facts = scan::scan(&ast);
        Ok(Expression {
            source: source.to_string(),
            free: facts.free,
            reads_context: facts.reads_context,
            calls: facts.calls,
            states_paths: facts.states_paths,
            fast: fast::Fast::of(&ast),
            ast,
        })
    }

    /// The text it was compiled from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The `$name` values the expression reads that it does not bind itself (by `:=`, a
    /// function parameter, `@$v` or `#$i`), in order of first appearance, without the `$`:
    /// what must come from [`Bindings`] (`states`, variables). Function names do not count:
    /// neither a name in call position (`$sum(...)`, `$f(...)`) nor a built-in function taken
    /// as a value (`$map(xs, $string)`). A name bound later in the same block counts as
    /// bound (so a reference before its binding is not reported).
    pub fn free_variables(&self) -> &[String] {
        &self.free
    }

    /// Whether the expression reads its input directly at the top level (`$`, `$$`, a field
    /// name, `*`, `**`) rather than through a variable; Step Functions refuses that.
    pub fn reads_context(&self) -> bool {
        self.reads_context
    }

    /// The field paths below `$states` the expression reads, each whole at its end
    /// (`["input", "order", "id"]` for `$states.input.order.id`); `None` when it reads
    /// `$states` in another way, so all of it must be bound.
    pub fn states_paths(&self) -> Option<&[Vec<String>]> {
        self.states_paths.as_deref()
    }

    /// Whether the expression names the function `$name` (give it without the `$`), in call
    /// position or as a value.
    pub fn calls(&self, name: &str) -> bool {
        self.calls.contains(name)
    }

    /// Evaluates against `input` (`None`: no input, JSONata's undefined) with `bindings`,
    /// asking `host` for time and randomness as [`Host`] describes. `Ok(None)`: the expression
    /// returned nothing (undefined).
    pub fn evaluate(
        &self,
        input: Option<&Value>,
        bindings: &Bindings,
        host: &mut dyn Host,
    ) -> Result<Option<Value>, EvalError> {
        self.evaluate_with_limits(input, bindings, host, Limits::default())
    }

    /// Evaluates straight over JSON values where the expression's shape allows it (`fast`):
    /// `$states` as its `states` members, the `variables` set, nothing converted.
    /// The same answer [`Expression::evaluate`] gives over their bindings; `None`: evaluate
    /// with bindings.
    pub(crate) fn evaluate_json(
        &self,
        states: &[(&str, &Value)],
        variables: &[(&str, &Value)],
    ) -> Option<Result<Option<Value>, EvalError>> {
        let root = fast::JsonRoots { states, variables };
        Some(match self.fast.as_ref()?.evaluate_json(&root)? {
            fast::GotJson::Nothing => Ok(None),
            fast::GotJson::Found(Value::Number(n)) => {
                convert::number(n.as_f64().unwrap_or(f64::NAN)).map(Some)
            }
            fast::GotJson::Found(value) => Ok(Some(value.clone())),
            fast::GotJson::Str(s) => Ok(Some(Value::String(s))),
            fast::GotJson::Num(n) => convert::number(n).map(Some),
            fast::GotJson::Bool(b) => Ok(Some(Value::Bool(b))),
            fast::GotJson::Null => Ok(Some(Value::Null)),
        })
    }

    /// [`Expression::evaluate`] with limits.
    pub fn evaluate_with_limits(
        &self,
        input: Option<&Value>,
        bindings: &Bindings,
        host: &mut dyn Host,
        limits: Limits,
    ) -> Result<Option<Value>, EvalError> {
        // A simple shape needs no evaluator (the same values, the same JSON).
        if let (None, Some(fast)) = (input, &self.fast) {
            if let Some(got) = fast.evaluate(bindings) {
                return match got {
                    fast::Got::Nothing => Ok(None),
                    fast::Got::Found(value) => convert::from_jvalue(value),
                    fast::Got::Str(s) => Ok(Some(Value::String(s))),
                    fast::Got::Num(n) => convert::number(n).map(Some),
                    fast::Got::Bool(b) => Ok(Some(Value::Bool(b))),
                    fast::Got::Null => Ok(Some(Value::Null)),
                };
            }
        }
        let mut context = Context::new();
        for (name, value) in &bindings.values {
            context.bind(name.clone(), value.clone());
        }
        let options = EvaluatorOptions {
            max_stack_depth: limits.max_depth,
            timeout_ms: limits.timeout_ms,
            cancel: limits.cancel.map(|c| c.0),
            ..EvaluatorOptions::default()
        };
        let mut evaluator = Evaluator::with_options(context, options);
        functions::register(&mut evaluator, &self.calls, host)?;
        let data = match input {
            Some(value) => convert::to_jvalue(value),
            None => JValue::Undefined,
        };
        let result = evaluator
            .evaluate(&self.ast, &data)
            .map_err(|e| from_engine(&e))?;
        convert::from_jvalue(&result)
    }
}

/// The JSONata code of the parse errors the engine reports without one.
fn uncoded_parse_error(e: &jsonata_core::parser::ParserError) -> Option<&'static str> {
    use jsonata_core::parser::ParserError as P;
    match e {
        P::UnclosedComment => Some("S0106"),
        P::InvalidNumber(_) => Some("S0102"),
        _ => None,
    }
}

impl fmt::Display for Expression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}
