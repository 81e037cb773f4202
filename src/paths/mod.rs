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
//! - [`Path`]: a full JSONPath (`$...` or `$$...` for the Context object), `parse`, `as_str`,
//!   `is_context`, `is_definite`, `select`.
//! - [`ReferencePath`]: a path naming one location (for ResultPath), `parse`, `as_str`, `get`,
//!   `set`.
//! - [`Template`]: a compiled payload template (Parameters, ResultSelector, ItemSelector):
//!   `compile` (all problems at once, as [`TemplateDiagnostic`]) and `evaluate`.
//! - [`InputOutputPath`], [`ResultPathField`] and the pipeline functions in [`pipeline`].

use serde_json::Value;

pub mod pipeline;

/// An ASL runtime failure: becomes history data (`ExecutionFailed`, `TaskFailed`, ...), matched by
/// Retry/Catch `ErrorEquals`. Not a Rust-level error of the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatesError {
    /// The ASL error name, e.g. `States.Runtime`, `States.IntrinsicFailure`.
    pub error: String,
    /// The human cause, worded as AWS words it.
    pub cause: String,
}

impl StatesError {
    /// Builds an error with the given name and cause.
    pub fn new(error: impl Into<String>, cause: impl Into<String>) -> Self {
        Self {
            error: error.into(),
            cause: cause.into(),
        }
    }
}

/// A syntax error in a path, an intrinsic call or a template.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    /// A sentence a person understands, naming what is wrong.
    pub message: String,
}

/// Randomness supplied by the caller (for `States.MathRandom` and `States.UUID`), so that a
/// replay can reproduce what a first run drew.
pub trait Entropy {
    /// The next 64 random bits.
    fn next_u64(&mut self) -> u64;
}

/// A compiled full JSONPath as ASL uses it in InputPath, OutputPath, ItemsPath, Choice
/// `Variable`, `...Path` fields and `.$` template values.
#[derive(Debug, Clone, PartialEq)]
pub struct Path {
    text: String,
}

impl Path {
    /// Parses `text` (`$`, `$.a.b[0]`, `$..x`, `$.a[*]`, `$.a[1:3]`, `$.a[?(@.x > 1)]`, `$$.Task.Token`, ...).
    pub fn parse(text: &str) -> Result<Path, ParseError> {
        Err(ParseError {
            message: format!("JSONPath parsing is not implemented yet: '{text}'"),
        })
    }

    /// The path as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// True when the path starts with `$$` and reads the Context object.
    pub fn is_context(&self) -> bool {
        self.text.starts_with("$$")
    }

    /// True when the path can name at most one location (no wildcard, slice, filter, union or
    /// recursive descent).
    pub fn is_definite(&self) -> bool {
        false
    }

    /// Evaluates the path against `input` (or `context` when [`Path::is_context`]). `None` when a
    /// definite path finds nothing; an indefinite path yields an array of its matches.
    pub fn select(&self, input: &Value, context: &Value) -> Option<Value> {
        let _ = (input, context);
        None
    }
}

/// A compiled reference path: names a single location (ResultPath).
#[derive(Debug, Clone, PartialEq)]
pub struct ReferencePath {
    text: String,
}

impl ReferencePath {
    /// Parses a reference path (`$`, `$.a.b`, `$.a[0]`, `$['a b']`).
    pub fn parse(text: &str) -> Result<ReferencePath, ParseError> {
        Err(ParseError {
            message: format!("reference path parsing is not implemented yet: '{text}'"),
        })
    }

    /// The path as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The value at this location, if any.
    pub fn get<'a>(&self, value: &'a Value) -> Option<&'a Value> {
        let _ = value;
        None
    }

    /// Puts `value` at this location inside `target`, creating objects on the way; fails with
    /// `States.ResultPathMatchFailure` when the location cannot exist in `target`.
    pub fn set(&self, target: Value, value: Value) -> Result<Value, StatesError> {
        let _ = (target, value);
        Err(StatesError::new(
            "States.Runtime",
            "ResultPath is not implemented yet",
        ))
    }
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
}

impl Template {
    /// Compiles a template: every `"key.$"` value must be a path or an intrinsic call.
    pub fn compile(source: &Value) -> Result<Template, Vec<TemplateDiagnostic>> {
        let _ = source;
        Err(vec![TemplateDiagnostic {
            pointer: String::new(),
            message: "payload templates are not implemented yet".to_string(),
        }])
    }

    /// The template as written.
    pub fn source(&self) -> &Value {
        &self.source
    }

    /// Builds the payload from the effective input and the Context object.
    pub fn evaluate(
        &self,
        input: &Value,
        context: &Value,
        entropy: &mut dyn Entropy,
    ) -> Result<Value, StatesError> {
        let _ = (input, context, entropy);
        Err(StatesError::new(
            "States.Runtime",
            "payload templates are not implemented yet",
        ))
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
