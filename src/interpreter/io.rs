//! io: a state's input and output processing as the interpreter applies it (InputPath,
//! Parameters, ResultSelector, ResultPath, OutputPath), the Context object `$$`, Choice rule
//! evaluation and AWS's wording of runtime failures.
//!
//! Built on the contract of `paths` (`Path::select`, `ReferencePath::set`, `Template::evaluate`).
//! Must not: read a clock or draw randomness (templates get the caller's `Entropy`).

use serde_json::{json, Map, Value};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use super::state::{ExecutionInfo, StateRun};
use crate::asl::{CompareFamily, CompareOp, Condition, Operand, PatternPiece, Test, TypeCheck};
use crate::history::ErrorCause;
use crate::paths::{Entropy, InputOutputPath, Path, ResultPathField, StatesError, Template};

/// `States.Runtime`.
pub(crate) const STATES_RUNTIME: &str = "States.Runtime";

/// A failure of a state, as history data.
pub(crate) fn failure(error: &str, cause: impl Into<String>) -> ErrorCause {
    ErrorCause::new(error, cause)
}

/// Milliseconds since the epoch as AWS prints times in the Context object
/// (`2024-05-01T12:00:00.123Z`).
pub(crate) fn iso_time(ms: u64) -> String {
    let nanos = i128::from(ms) * 1_000_000;
    match OffsetDateTime::from_unix_timestamp_nanos(nanos) {
        Ok(t) => format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second(),
            t.millisecond()
        ),
        Err(_) => "1970-01-01T00:00:00.000Z".to_string(),
    }
}

/// The name after the last `:` of an ARN.
pub(crate) fn arn_name(arn: &str) -> &str {
    arn.rsplit(':').next().unwrap_or(arn)
}

/// The Context object `$$` for a state (SPEC.md §6).
pub(crate) fn context_object(info: &ExecutionInfo, run: &StateRun) -> Value {
    context_with(
        info,
        &run.name,
        run.entered_ms,
        run.retried_errors.len() as u32,
    )
}

/// The Context object for the given state name, entry time and retry count.
pub(crate) fn context_with(
    info: &ExecutionInfo,
    state_name: &str,
    entered_ms: u64,
    retry_count: u32,
) -> Value {
    json!({
        "Execution": {
            "Id": info.execution_arn,
            "Input": info.input,
            "StartTime": iso_time(info.start_ms),
            "Name": arn_name(&info.execution_arn),
            "RoleArn": info.role_arn,
            "RedriveCount": 0,
        },
        "StateMachine": {
            "Id": info.state_machine_arn,
            "Name": arn_name(&info.state_machine_arn),
        },
        "State": {
            "Name": state_name,
            "EnteredTime": iso_time(entered_ms),
            "RetryCount": retry_count,
        },
    })
}

/// JSONPath `$.a.b` in the bracket notation AWS prints (`$['a']['b']`), best effort.
fn bracketed(path: &str) -> String {
    let Some(rest) = path.strip_prefix('$') else {
        return path.to_string();
    };
    let simple = rest.split('.').skip(1).all(|part| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
    });
    if !rest.starts_with('.') || !simple {
        return path.to_string();
    }
    let mut out = String::from("$");
    for part in rest.split('.').skip(1) {
        out.push_str(&format!("['{part}']"));
    }
    out
}

/// Selects with a path that must find something (InputPath, OutputPath, ItemsPath, ...).
pub(crate) fn select_required(
    path: &Path,
    input: &Value,
    context: &Value,
) -> Result<Value, StatesError> {
    path.select(input, context).ok_or_else(|| {
        StatesError::new(
            STATES_RUNTIME,
            format!(
                "Invalid path '{}' : No results for path: {}",
                path.as_str(),
                bracketed(path.as_str())
            ),
        )
    })
}

/// InputPath / OutputPath: absent means `$`, `null` means `{}`.
pub(crate) fn apply_io_path(
    field: Option<&InputOutputPath>,
    value: &Value,
    context: &Value,
) -> Result<Value, StatesError> {
    match field {
        None => Ok(value.clone()),
        Some(InputOutputPath::Discard) => Ok(Value::Object(Map::new())),
        Some(InputOutputPath::Select(path)) => select_required(path, value, context),
    }
}

/// ResultPath: absent means the result replaces the input, `null` keeps the raw input.
pub(crate) fn apply_result_path(
    field: Option<&ResultPathField>,
    raw_input: &Value,
    result: Value,
) -> Result<Value, StatesError> {
    match field {
        None => Ok(result),
        Some(ResultPathField::Discard) => Ok(raw_input.clone()),
        Some(ResultPathField::Reference(path)) => path.set(raw_input.clone(), result),
    }
}

/// A payload template (Parameters, ResultSelector, ItemSelector), when present.
pub(crate) fn apply_template(
    template: Option<&Template>,
    value: Value,
    context: &Value,
    entropy: &mut dyn Entropy,
) -> Result<Value, StatesError> {
    match template {
        None => Ok(value),
        Some(t) => t.evaluate(&value, context, entropy),
    }
}

/// The state output a Catcher passes on: `{"Error": ..., "Cause": ...}`.
pub(crate) fn error_output(error: &ErrorCause) -> Value {
    let mut map = Map::new();
    if let Some(e) = &error.error {
        map.insert("Error".into(), json!(e));
    }
    if let Some(c) = &error.cause {
        map.insert("Cause".into(), json!(c));
    }
    Value::Object(map)
}

/// Parses an RFC 3339 timestamp as ASL accepts it.
pub(crate) fn parse_timestamp(text: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(text, &Rfc3339).ok()
}

/// Milliseconds since the epoch of a timestamp (0 for times before 1970).
pub(crate) fn timestamp_ms(t: OffsetDateTime) -> u64 {
    let ms = t.unix_timestamp_nanos() / 1_000_000;
    u64::try_from(ms).unwrap_or(0)
}

/// Evaluates a Choice condition against the effective input.
pub(crate) fn evaluate_condition(
    condition: &Condition,
    input: &Value,
    context: &Value,
) -> Result<bool, StatesError> {
    match condition {
        Condition::And(all) => {
            for c in all {
                if !evaluate_condition(c, input, context)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        Condition::Or(any) => {
            for c in any {
                if evaluate_condition(c, input, context)? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        Condition::Not(inner) => Ok(!evaluate_condition(inner, input, context)?),
        Condition::Test { variable, test } => {
            let value = variable.select(input, context);
            evaluate_test(variable, value.as_ref(), test, input, context)
        }
    }
}

fn invalid_variable(variable: &Path) -> StatesError {
    StatesError::new(
        STATES_RUNTIME,
        format!(
            "Invalid path '{}': The choice state's condition path references an invalid value.",
            variable.as_str()
        ),
    )
}

fn evaluate_test(
    variable: &Path,
    value: Option<&Value>,
    test: &Test,
    input: &Value,
    context: &Value,
) -> Result<bool, StatesError> {
    match test {
        Test::Is { check, expected } => {
            let holds = match (check, value) {
                (TypeCheck::Present, v) => v.is_some(),
                (_, None) => false,
                (TypeCheck::Null, Some(v)) => v.is_null(),
                (TypeCheck::Numeric, Some(v)) => v.is_number(),
                (TypeCheck::String, Some(v)) => v.is_string(),
                (TypeCheck::Boolean, Some(v)) => v.is_boolean(),
                (TypeCheck::Timestamp, Some(v)) => v.as_str().and_then(parse_timestamp).is_some(),
            };
            Ok(holds == *expected)
        }
        Test::StringMatches(pattern) => {
            let value = value.ok_or_else(|| invalid_variable(variable))?;
            Ok(value
                .as_str()
                .is_some_and(|s| glob_matches(&pattern.pieces, s)))
        }
        Test::Compare {
            family,
            op,
            operand,
        } => {
            let value = value.ok_or_else(|| invalid_variable(variable))?;
            let right = match operand {
                Operand::String(s) => json!(s),
                Operand::Number(n) => json!(n),
                Operand::Boolean(b) => json!(b),
                Operand::Timestamp(t) => {
                    return Ok(match value.as_str().and_then(parse_timestamp) {
                        Some(left) => compare(op, left.cmp(t)),
                        None => false,
                    })
                }
                Operand::Path(path) => path
                    .select(input, context)
                    .ok_or_else(|| invalid_variable(path))?,
            };
            Ok(compare_values(*family, *op, value, &right))
        }
    }
}

fn compare(op: &CompareOp, ordering: std::cmp::Ordering) -> bool {
    use std::cmp::Ordering::*;
    match op {
        CompareOp::Equals => ordering == Equal,
        CompareOp::LessThan => ordering == Less,
        CompareOp::GreaterThan => ordering == Greater,
        CompareOp::LessThanEquals => ordering != Greater,
        CompareOp::GreaterThanEquals => ordering != Less,
    }
}

fn compare_values(family: CompareFamily, op: CompareOp, left: &Value, right: &Value) -> bool {
    match family {
        CompareFamily::String => match (left.as_str(), right.as_str()) {
            (Some(l), Some(r)) => compare(&op, l.cmp(r)),
            _ => false,
        },
        CompareFamily::Numeric => match (left.as_f64(), right.as_f64()) {
            (Some(l), Some(r)) if left.is_number() && right.is_number() => {
                l.partial_cmp(&r).is_some_and(|o| compare(&op, o))
            }
            _ => false,
        },
        CompareFamily::Boolean => match (left.as_bool(), right.as_bool()) {
            (Some(l), Some(r)) => op == CompareOp::Equals && l == r,
            _ => false,
        },
        CompareFamily::Timestamp => {
            match (
                left.as_str().and_then(parse_timestamp),
                right.as_str().and_then(parse_timestamp),
            ) {
                (Some(l), Some(r)) => compare(&op, l.cmp(&r)),
                _ => false,
            }
        }
    }
}

/// `StringMatches`: literal pieces separated by `*` (any run of characters).
fn glob_matches(pieces: &[PatternPiece], text: &str) -> bool {
    match pieces.split_first() {
        None => text.is_empty(),
        Some((PatternPiece::Literal(lit), rest)) => text
            .strip_prefix(lit.as_str())
            .is_some_and(|tail| glob_matches(rest, tail)),
        Some((PatternPiece::Star, rest)) => {
            if rest.is_empty() {
                return true;
            }
            text.char_indices()
                .map(|(i, _)| i)
                .chain(std::iter::once(text.len()))
                .any(|i| glob_matches(rest, &text[i..]))
        }
    }
}

/// The value as AWS quotes it in causes: a string's text, anything else as compact JSON.
pub(crate) fn quoted_value(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

/// The compact JSON text of a value, and its size in bytes.
pub(crate) fn json_size_bytes(value: &Value) -> usize {
    serde_json::to_string(value)
        .map(|s| s.len())
        .unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_time_has_millis_and_z() {
        assert_eq!(iso_time(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_time(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
    }

    #[test]
    fn bracketed_paths_match_aws_wording() {
        assert_eq!(bracketed("$.NoSuchInputPath"), "$['NoSuchInputPath']");
        assert_eq!(bracketed("$.a.b"), "$['a']['b']");
        assert_eq!(bracketed("$.a[0]"), "$.a[0]");
    }

    #[test]
    fn glob_matching() {
        let p = |s: &str| PatternPiece::Literal(s.to_string());
        let pieces = vec![p("log-"), PatternPiece::Star, p(".txt")];
        assert!(glob_matches(&pieces, "log-2024.txt"));
        assert!(glob_matches(&pieces, "log-.txt"));
        assert!(!glob_matches(&pieces, "log-2024.csv"));
        assert!(glob_matches(&[PatternPiece::Star], ""));
        assert!(!glob_matches(&[p("a")], "ab"));
    }
}
