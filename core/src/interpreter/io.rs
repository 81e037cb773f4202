//! io: a state's input and output processing as the interpreter applies it (InputPath,
//! Parameters, ResultSelector, ResultPath, OutputPath), the Context object `$$` and AWS's wording
//! of runtime failures.
//!
//! Built on `paths::pipeline` (which words path misses as AWS does) and `Template::evaluate`.
//! Must not: read a clock or draw randomness (templates get the caller's `Entropy`).

use std::borrow::Cow;

use serde_json::{json, Map, Value};
use time::OffsetDateTime;

use super::state::{ExecutionInfo, StateRun};
use crate::history::ErrorCause;
use crate::paths::{
    pipeline, Entropy, InputOutputPath, Path, ResultPathField, StatesError, Template,
};

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
            "Input": *info.input,
            "StartTime": iso_time(info.start_ms),
            "Name": arn_name(&info.execution_arn),
            "RoleArn": info.role_arn,
            "RedriveCount": info.redrive_count,
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

/// Selects with a path that must find something (ItemsPath, `...Path` fields), worded as AWS
/// words a miss.
pub(crate) fn select_required(
    path: &Path,
    input: &Value,
    context: &Value,
) -> Result<Value, StatesError> {
    pipeline::process_input(input, &InputOutputPath::Select(path.clone()), context)
}

/// InputPath / OutputPath: absent means `$`, `null` means `{}`.
pub(crate) fn apply_io_path(
    field: Option<&InputOutputPath>,
    value: &Value,
    context: &Value,
) -> Result<Value, StatesError> {
    match field {
        None => Ok(value.clone()),
        Some(field) => pipeline::process_input(value, field, context),
    }
}

/// InputPath borrowing from `value` where it can (absent means `$`: `value` itself, not
/// copied; a definite path borrows what it finds).
pub(crate) fn apply_io_path_cow<'a>(
    field: Option<&InputOutputPath>,
    value: &'a Value,
    context: &'a Value,
) -> Result<Cow<'a, Value>, StatesError> {
    match field {
        None => Ok(Cow::Borrowed(value)),
        Some(field) => pipeline::process_input_cow(value, field, context),
    }
}

/// OutputPath on an owned value: absent means `$` (the value itself, not copied).
pub(crate) fn apply_output_path(
    field: Option<&InputOutputPath>,
    value: Value,
    context: &Value,
) -> Result<Value, StatesError> {
    match field {
        None => Ok(value),
        Some(field) => pipeline::process_output(value, field, context),
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
        Some(ResultPathField::Reference(path)) if path.is_root() => Ok(result),
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
///
/// A failure without an error name (`SendTaskFailure` may leave both fields out) shows both
/// members as `null`, as AWS records it; with an error name, a missing cause is left out.
pub(crate) fn error_output(error: &ErrorCause) -> Value {
    let mut map = Map::new();
    match &error.error {
        Some(e) => {
            map.insert("Error".into(), json!(e));
            if let Some(c) = &error.cause {
                map.insert("Cause".into(), json!(c));
            }
        }
        None => {
            map.insert("Error".into(), Value::Null);
            map.insert("Cause".into(), json!(error.cause));
        }
    }
    Value::Object(map)
}

/// Parses a timestamp as ASL accepts it.
pub(crate) fn parse_timestamp(text: &str) -> Option<OffsetDateTime> {
    crate::asl::parse_timestamp(text)
}

/// Milliseconds since the epoch of a timestamp (0 for times before 1970).
pub(crate) fn timestamp_ms(t: OffsetDateTime) -> u64 {
    let ms = t.unix_timestamp_nanos() / 1_000_000;
    u64::try_from(ms).unwrap_or(0)
}

/// The value as AWS quotes it in causes: a string's text, anything else as compact JSON.
pub(crate) fn quoted_value(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

/// The size in bytes of a value's compact JSON text, counted without building the text (this
/// runs at every state exit).
pub(crate) fn json_size_bytes(value: &Value) -> usize {
    pipeline::json_size_bytes(value)
}

/// True when running `state` may read the Context object (`$$`): a path that starts with `$$`
/// or a template/intrinsic that mentions it. Conservative: building `$$` costs allocations on
/// every step, so states that cannot read it skip it.
pub(crate) fn uses_context(state: &crate::asl::State) -> bool {
    use crate::asl::{FailField, SecondsField, StateKind, WaitFor};
    let io = |p: &Option<InputOutputPath>| matches!(p, Some(InputOutputPath::Select(p)) if p.is_context());
    let template = |t: &Option<Template>| t.as_ref().is_some_and(Template::mentions_context);
    let seconds =
        |f: &Option<SecondsField>| matches!(f, Some(SecondsField::Path(p)) if p.is_context());
    if io(&state.input_path) || io(&state.output_path) {
        return true;
    }
    match &state.kind {
        StateKind::Pass(pass) => template(&pass.parameters),
        StateKind::Task(task) => {
            template(&task.parameters)
                || template(&task.result_selector)
                || seconds(&task.timeout)
                || seconds(&task.heartbeat)
        }
        StateKind::Choice(choice) => choice
            .choices
            .iter()
            .any(|rule| condition_uses_context(&rule.condition)),
        StateKind::Wait(wait) => match &wait.wait {
            WaitFor::SecondsPath(p) | WaitFor::TimestampPath(p) => p.is_context(),
            WaitFor::Seconds(_) | WaitFor::Timestamp(_) => false,
        },
        StateKind::Succeed => false,
        StateKind::Fail(fail) => [&fail.error, &fail.cause].iter().any(
            |field| matches!(field, Some(FailField::Dynamic { text, .. }) if text.contains("$$")),
        ),
        // Composite states are entered rarely; always give them the Context object.
        StateKind::Parallel(_) | StateKind::Map(_) => true,
    }
}

fn condition_uses_context(condition: &crate::asl::Condition) -> bool {
    use crate::asl::{Condition, Operand, Test};
    match condition {
        Condition::And(all) | Condition::Or(all) => all.iter().any(condition_uses_context),
        Condition::Not(inner) => condition_uses_context(inner),
        Condition::Test { variable, test } => {
            variable.is_context()
                || matches!(test, Test::Compare { operand: Operand::Path(p), .. } if p.is_context())
        }
    }
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
    fn error_output_shows_nulls_only_without_an_error_name() {
        let both = |error: Option<&str>, cause: Option<&str>| {
            error_output(&ErrorCause {
                error: error.map(str::to_string),
                cause: cause.map(str::to_string),
            })
        };
        assert_eq!(
            both(Some("E"), Some("c")),
            json!({"Error": "E", "Cause": "c"})
        );
        assert_eq!(both(Some("E"), None), json!({"Error": "E"}));
        assert_eq!(both(None, None), json!({"Error": null, "Cause": null}));
        assert_eq!(both(None, Some("c")), json!({"Error": null, "Cause": "c"}));
    }
}
