//! The input/output processing pipeline of a state as pure functions.
//!
//! CONTRACT (the JSONPath arm of `asl::DataFlow` and the interpreter call these):
//! `process_input`, `process_parameters`, `process_result`, `process_output`,
//! `check_payload_size`.
//!
//! Order for one state run (AWS):
//! `raw input -> InputPath -> Parameters -> (task / Pass result) -> ResultSelector ->
//! ResultPath (combined with the *raw* input) -> OutputPath -> output`.
//!
//! Causes are worded as AWS words them *after* its per-state prefix; the interpreter adds
//! "An error occurred while executing the state 'X' (entered at the event id #N). " with
//! [`in_state`] where AWS does (States.Runtime failures of paths and templates).
//!
//! Must not: parse anything (paths and templates arrive compiled), or read a clock.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::limits;

use super::jsonpath::{Root, Segment};
use super::{
    to_json_text, Entropy, InputOutputPath, Path, ResultPathField, StatesError, Template,
    Variables, NO_VARIABLES, STATES_DATA_LIMIT_EXCEEDED, STATES_RUNTIME,
};

/// Applies `InputPath` to the state's raw input. `Discard` (`"InputPath": null`) gives `{}`.
/// A definite path that finds nothing is `States.Runtime` ("Invalid path '$.x' : No results for
/// path: $['x']"). Returns an owned copy; [`process_input_cow`] borrows instead.
pub fn process_input(
    raw_input: &Value,
    input_path: &InputOutputPath,
    context: &Value,
) -> Result<Value, StatesError> {
    process_input_cow(raw_input, input_path, context).map(Cow::into_owned)
}

/// Like [`process_input`], but the result borrows from `raw_input` (or `context`) where it can
/// (`$`, names and indexes), so the common case copies nothing.
pub fn process_input_cow<'a>(
    raw_input: &'a Value,
    input_path: &InputOutputPath,
    context: &'a Value,
) -> Result<Cow<'a, Value>, StatesError> {
    process_input_cow_in(raw_input, input_path, context, &NO_VARIABLES)
}

/// [`process_input_cow`] with the workflow variables in scope (`"InputPath": "$x"`).
pub fn process_input_cow_in<'a>(
    raw_input: &'a Value,
    input_path: &InputOutputPath,
    context: &'a Value,
    variables: &'a Variables,
) -> Result<Cow<'a, Value>, StatesError> {
    match input_path {
        InputOutputPath::Discard => Ok(Cow::Owned(Value::Object(Map::new()))),
        InputOutputPath::Select(path) => {
            if let Some(found) = path.select_definite_ref(raw_input, context, variables) {
                return match found {
                    Some(value) => Ok(Cow::Borrowed(value)),
                    None => Err(invalid_path(path, raw_input, context, variables)),
                };
            }
            select_io(raw_input, input_path, context, variables).map(Cow::Owned)
        }
    }
}

/// Applies `Parameters` (when present) to the effective input; without a template the
/// effective input passes through (copied).
pub fn process_parameters(
    effective_input: &Value,
    parameters: Option<&Template>,
    context: &Value,
    entropy: &mut dyn Entropy,
) -> Result<Value, StatesError> {
    match parameters {
        None => Ok(effective_input.clone()),
        Some(template) => template.evaluate(effective_input, context, entropy),
    }
}

/// Applies `ResultSelector` (when present) to `result`, then `ResultPath`, which places the
/// selected result into the state's **raw** input (`Discard`: the raw input passes through;
/// `$`: the result replaces it). Takes the raw input by value: it is consumed into the output.
pub fn process_result(
    raw_input: Value,
    result: Value,
    result_selector: Option<&Template>,
    result_path: &ResultPathField,
    context: &Value,
    entropy: &mut dyn Entropy,
) -> Result<Value, StatesError> {
    let selected = match result_selector {
        None => result,
        Some(template) => template.evaluate(&result, context, entropy)?,
    };
    match result_path {
        ResultPathField::Discard => Ok(raw_input),
        ResultPathField::Reference(path) if path.is_root() => Ok(selected),
        ResultPathField::Reference(path) => path.set(raw_input, selected),
    }
}

/// Applies `OutputPath` to the value produced by ResultPath. `Discard` gives `{}`.
pub fn process_output(
    value: Value,
    output_path: &InputOutputPath,
    context: &Value,
) -> Result<Value, StatesError> {
    process_output_in(value, output_path, context, &NO_VARIABLES)
}

/// [`process_output`] with the workflow variables in scope (`"OutputPath": "$x"`).
pub fn process_output_in(
    value: Value,
    output_path: &InputOutputPath,
    context: &Value,
    variables: &Variables,
) -> Result<Value, StatesError> {
    match output_path {
        InputOutputPath::Select(path) if path.as_str() == "$" => Ok(value),
        other => select_io(&value, other, context, variables),
    }
}

/// Checks a payload against [`limits::PAYLOAD_SIZE_BYTES_MAX`] (compact JSON, UTF-8 bytes) and
/// returns its size. `source` names the state or task, as AWS names it in the cause.
pub fn check_payload_size(value: &Value, source: &str) -> Result<usize, StatesError> {
    let size_bytes = json_size_bytes(value);
    if size_bytes > limits::PAYLOAD_SIZE_BYTES_MAX {
        return Err(StatesError::new(
            STATES_DATA_LIMIT_EXCEEDED,
            format!(
                "The state/task '{source}' returned a result with a size exceeding the maximum \
                 number of bytes service limit."
            ),
        ));
    }
    Ok(size_bytes)
}

/// The size of `value` as compact JSON text (what `serde_json::to_string` produces), in bytes,
/// without building the text.
pub fn json_size_bytes(value: &Value) -> usize {
    /// Counts what a `Display` implementation writes.
    struct Count(usize);
    impl std::fmt::Write for Count {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0 += s.len();
            Ok(())
        }
    }
    /// The bytes of `n`'s JSON text: an integer's digits counted, a float's text formatted.
    fn number_size_bytes(n: &serde_json::Number) -> usize {
        if let Some(u) = n.as_u64() {
            return u.checked_ilog10().map_or(1, |log| log as usize + 1);
        }
        if let Some(i) = n.as_i64() {
            return 1 + i
                .unsigned_abs()
                .checked_ilog10()
                .map_or(1, |log| log as usize + 1);
        }
        let mut count = Count(0);
        // Writing into a counter cannot fail.
        let _ = std::fmt::Write::write_fmt(&mut count, format_args!("{n}"));
        count.0
    }
    fn string_size_bytes(s: &str) -> usize {
        let mut size = 2; // the quotes
        for b in s.bytes() {
            size += match b {
                b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
                0x00..=0x1f => 6,
                _ => 1,
            };
        }
        size
    }
    /// Below this depth the count recurses (no allocation); deeper subtrees use an explicit
    /// stack, since payloads may nest deeper than the call stack should.
    const RECURSION_DEPTH_MAX: usize = 32;
    fn recurse(value: &Value, depth: usize) -> usize {
        match value {
            Value::Array(items) if depth < RECURSION_DEPTH_MAX => {
                2 + items.len().saturating_sub(1)
                    + items.iter().map(|v| recurse(v, depth + 1)).sum::<usize>()
            }
            Value::Object(map) if depth < RECURSION_DEPTH_MAX => {
                2 + map.len().saturating_sub(1)
                    + map
                        .iter()
                        .map(|(k, v)| string_size_bytes(k) + 1 + recurse(v, depth + 1))
                        .sum::<usize>()
            }
            Value::Array(_) | Value::Object(_) => with_stack(value),
            scalar => with_stack(scalar),
        }
    }
    fn with_stack(value: &Value) -> usize {
        let mut size = 0usize;
        let mut stack: Vec<&Value> = Vec::new();
        let mut next = Some(value);
        while let Some(node) = next.take().or_else(|| stack.pop()) {
            size += match node {
                Value::Null => 4,
                Value::Bool(true) => 4,
                Value::Bool(false) => 5,
                Value::Number(n) => number_size_bytes(n),
                Value::String(s) => string_size_bytes(s),
                Value::Array(items) => {
                    stack.extend(items);
                    2 + items.len().saturating_sub(1)
                }
                Value::Object(map) => {
                    stack.extend(map.values());
                    let keys: usize = map.keys().map(|k| string_size_bytes(k) + 1).sum();
                    2 + keys + map.len().saturating_sub(1)
                }
            };
        }
        size
    }
    let size = recurse(value, 0);
    debug_assert_eq!(
        size,
        serde_json::to_string(value)
            .map(|t| t.len())
            .unwrap_or(size),
        "the size count matches serde_json's compact text"
    );
    size
}

/// Prefixes a cause the way AWS does for failures raised while running a state.
pub fn in_state(error: StatesError, state_name: &str, entered_event_id: u64) -> StatesError {
    StatesError {
        cause: format!(
            "An error occurred while executing the state '{state_name}' (entered at the event id \
             #{entered_event_id}). {}",
            error.cause
        ),
        error: error.error,
        location: error.location,
    }
}

fn select_io(
    value: &Value,
    path: &InputOutputPath,
    context: &Value,
    variables: &Variables,
) -> Result<Value, StatesError> {
    match path {
        InputOutputPath::Discard => Ok(Value::Object(Map::new())),
        InputOutputPath::Select(path) => match path.try_select_in(value, context, variables)? {
            Some(found) => Ok(found),
            None => Err(invalid_path(path, value, context, variables)),
        },
    }
}

/// AWS's (Jayway's) cause for an Input/OutputPath that finds nothing: "No results for path"
/// when only the last step is missing, "Missing property in path" naming the first missing
/// step otherwise. Reached only when the path found nothing: a definite path (names and
/// indexes, no filter), or any path whose root variable is not assigned. A filter's variable
/// that is not assigned never gets here: [`Path::try_select_in`] fails with its own cause.
fn invalid_path(path: &Path, value: &Value, context: &Value, variables: &Variables) -> StatesError {
    let parsed = &path.parsed;
    let unassigned = Value::Null;
    let (mut current, mut normalized) = match (parsed.root, path.variable()) {
        (Root::Context, _) => (context, String::from("$$")),
        (Root::Variable, Some(name)) => (
            variables.get(name).unwrap_or(&unassigned),
            format!("${name}"),
        ),
        _ => (value, String::from("$")),
    };
    let last_index = parsed.segments.len().saturating_sub(1);
    for (i, segment) in parsed.segments.iter().enumerate() {
        let next = match segment {
            Segment::Child(name) => {
                normalized.push_str(&format!("['{name}']"));
                current.as_object().and_then(|m| m.get(name))
            }
            Segment::Index(index) => {
                normalized.push_str(&format!("[{index}]"));
                current.as_array().and_then(|items| {
                    super::jsonpath::resolve_index(*index, items.len()).map(|j| &items[j])
                })
            }
            _ => None,
        };
        match next {
            Some(v) => current = v,
            None if i < last_index => {
                return StatesError::new(
                    STATES_RUNTIME,
                    format!(
                        "Invalid path '{}' : Missing property in path {normalized}",
                        path.as_str()
                    ),
                )
            }
            None => break,
        }
    }
    StatesError::new(
        STATES_RUNTIME,
        format!(
            "Invalid path '{}' : No results for path: {normalized}",
            path.as_str()
        ),
    )
}

/// The compact JSON of a payload, as history events carry it.
pub fn payload_text(value: &Value) -> String {
    to_json_text(value)
}
