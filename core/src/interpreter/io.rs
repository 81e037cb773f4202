//! io: the pieces of a state run the states share besides its data flow: the Context object
//! `$$`, the `...Path` fields that read one value, the error output a Catcher gets, and AWS's
//! wording of runtime failures.
//!
//! A state's data flow (InputPath, Parameters, ResultSelector, ResultPath, OutputPath, ...) is
//! not here: the interpreter asks the state's `asl::DataFlow` for each step.
//! Built on `paths::pipeline` (which words path misses as AWS does).
//! Must not: read a clock or draw randomness.

use serde_json::{json, Map, Value};
use time::OffsetDateTime;

use super::state::{ExecutionInfo, StateRun};
use crate::history::ErrorCause;
use crate::paths::{pipeline, InputOutputPath, Path, StatesError, Variables};

/// `States.Runtime`.
pub(crate) const STATES_RUNTIME: &str = "States.Runtime";

/// A failure of a state, as history data.
pub(crate) fn failure(error: &str, cause: impl Into<String>) -> ErrorCause {
    ErrorCause::new(error, cause)
}

/// Milliseconds since the epoch as AWS prints times in the Context object
/// (`2024-05-01T12:00:00.123Z`). Written digit by digit (two per Task dispatched: `format!`
/// with padding was about 3,000 instructions a call, 7% of a Task step's).
pub(crate) fn iso_time(ms: u64) -> String {
    const EPOCH_TEXT: &str = "1970-01-01T00:00:00.000Z";
    let nanos = i128::from(ms) * 1_000_000;
    let Ok(t) = OffsetDateTime::from_unix_timestamp_nanos(nanos) else {
        return EPOCH_TEXT.to_string();
    };
    // From the epoch on, the year has four digits wherever the `time` crate reaches.
    let Ok(year) = u32::try_from(t.year()) else {
        return EPOCH_TEXT.to_string();
    };
    let mut text = String::with_capacity(EPOCH_TEXT.len());
    let mut push = |value: u32, width: u32, after: Option<char>| {
        for place in (0..width).rev() {
            let digit = (value / 10u32.pow(place)) % 10;
            text.push(char::from(b'0' + digit as u8));
        }
        if let Some(after) = after {
            text.push(after);
        }
    };
    push(year, 4, Some('-'));
    push(u32::from(u8::from(t.month())), 2, Some('-'));
    push(u32::from(t.day()), 2, Some('T'));
    push(u32::from(t.hour()), 2, Some(':'));
    push(u32::from(t.minute()), 2, Some(':'));
    push(u32::from(t.second()), 2, Some('.'));
    push(u32::from(t.millisecond()), 3, Some('Z'));
    text
}

/// The name after the last `:` of an ARN.
pub(crate) fn arn_name(arn: &str) -> &str {
    arn.rsplit(':').next().unwrap_or(arn)
}

/// The Context object `$$` for a state (SPEC.md §6). `State.RetryCount` is there only for
/// the state types that retry (Task, Parallel, Map: `retries`), as AWS shows it (a Pass's
/// `$$.State` has only `Name` and `EnteredTime`, recorded in the `BASE_PATHS` case).
pub(crate) fn context_object(info: &ExecutionInfo, run: &StateRun, retries: bool) -> Value {
    context_with(
        info,
        &run.name,
        run.entered_ms,
        retries.then_some(run.retried_errors.len() as u32),
    )
}

/// True for the state types whose Context object holds `State.RetryCount`.
pub(crate) fn retries(state: &crate::asl::State) -> bool {
    use crate::asl::StateKind;
    matches!(
        state.kind,
        StateKind::Task(_) | StateKind::Parallel(_) | StateKind::Map(_)
    )
}

/// The Context object for the given state name, entry time and retry count.
pub(crate) fn context_with(
    info: &ExecutionInfo,
    state_name: &str,
    entered_ms: u64,
    retry_count: Option<u32>,
) -> Value {
    // Built member by member into maps of their final size (what `json!` would build, in the
    // same order, without growing each map or serializing the input into a copy of itself):
    // one is built for every task dispatched.
    fn object<const N: usize>(members: [(&str, Value); N]) -> Value {
        let mut map = Map::with_capacity(N);
        for (key, value) in members {
            map.insert(key.to_string(), value);
        }
        Value::Object(map)
    }
    let text = |text: &str| Value::String(text.to_string());
    // A test case's `#Case` (see `history::split_test_case`) is not part of the machine's id.
    let machine_arn = crate::history::split_test_case(&info.state_machine_arn).machine_arn;
    object([
        (
            "Execution",
            object([
                ("Id", text(&info.execution_arn)),
                ("Input", Value::clone(&info.input)),
                ("StartTime", Value::String(iso_time(info.start_ms))),
                ("Name", text(arn_name(&info.execution_arn))),
                ("RoleArn", text(&info.role_arn)),
                ("RedriveCount", Value::from(info.redrive_count)),
            ]),
        ),
        (
            "StateMachine",
            object([
                ("Id", text(machine_arn)),
                ("Name", text(arn_name(machine_arn))),
            ]),
        ),
        (
            "State",
            match retry_count {
                Some(count) => object([
                    ("Name", text(state_name)),
                    ("EnteredTime", Value::String(iso_time(entered_ms))),
                    ("RetryCount", Value::from(count)),
                ]),
                None => object([
                    ("Name", text(state_name)),
                    ("EnteredTime", Value::String(iso_time(entered_ms))),
                ]),
            },
        ),
    ])
}

/// Selects with a path that must find something (the `...Path` fields), worded as AWS words a
/// miss.
pub(crate) fn select_required(
    path: &Path,
    input: &Value,
    context: &Value,
    variables: &Variables,
) -> Result<Value, StatesError> {
    pipeline::process_input_cow_in(
        input,
        &InputOutputPath::Select(path.clone()),
        context,
        variables,
    )
    .map(std::borrow::Cow::into_owned)
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

/// True when running `state` may read the Context object (`$$`): its data flow mentions it
/// ([`crate::asl::DataFlow::mentions_context`]), or a path or intrinsic of its own fields
/// does. Conservative: building `$$` costs allocations on every step, so states that cannot
/// read it skip it.
pub(crate) fn uses_context(state: &crate::asl::State) -> bool {
    use crate::asl::{Assign, FailField, SecondsField, StateKind, WaitFor};
    let seconds =
        |f: &Option<SecondsField>| matches!(f, Some(SecondsField::Path(p)) if p.is_context());
    if state.data_flow.mentions_context()
        || state.assign.as_ref().is_some_and(Assign::mentions_context)
    {
        return true;
    }
    let catchers_read_context = |catchers: &[crate::asl::Catcher]| {
        catchers
            .iter()
            .any(|c| c.assign.as_ref().is_some_and(Assign::mentions_context))
    };
    match &state.kind {
        StateKind::Pass(_) => false,
        StateKind::Task(task) => {
            seconds(&task.timeout) || seconds(&task.heartbeat) || catchers_read_context(&task.catch)
        }
        StateKind::Choice(choice) => choice.choices.iter().any(|rule| {
            condition_uses_context(&rule.condition)
                || rule.assign.as_ref().is_some_and(Assign::mentions_context)
        }),
        StateKind::Wait(wait) => match &wait.wait {
            WaitFor::SecondsPath(p) | WaitFor::TimestampPath(p) => p.is_context(),
            WaitFor::Seconds(_)
            | WaitFor::Timestamp(_)
            | WaitFor::SecondsExpression(_)
            | WaitFor::TimestampExpression(_) => false,
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
        // A JSONata state says whether it reads the context in its data flow.
        Condition::Jsonata(_) => false,
        Condition::Test { variable, test } => {
            variable.is_context()
                || matches!(test, Test::Compare { operand: Operand::Path(p), .. } if p.is_context())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Context object built member by member is the one `json!` builds, order included.
    #[test]
    fn the_context_object_is_the_json_macros() {
        let info = ExecutionInfo {
            input: json!({"n": [1, {"k": "v"}], "s": "x"}).into(),
            execution_arn: "arn:aws:states:us-east-1:1:execution:m:e".into(),
            state_machine_arn: "arn:aws:states:us-east-1:1:stateMachine:m".into(),
            role_arn: "arn:aws:iam::1:role/r".into(),
            start_ms: 1_700_000_000_123,
            redrive_count: 2,
        };
        let built = context_with(&info, "T", 1_700_000_000_456, Some(3));
        let expected = json!({
            "Execution": {
                "Id": info.execution_arn,
                "Input": *info.input,
                "StartTime": iso_time(info.start_ms),
                "Name": "e",
                "RoleArn": info.role_arn,
                "RedriveCount": 2,
            },
            "StateMachine": {"Id": info.state_machine_arn, "Name": "m"},
            "State": {"Name": "T", "EnteredTime": "2023-11-14T22:13:20.456Z", "RetryCount": 3},
        });
        assert_eq!(built, expected);
        assert_eq!(
            serde_json::to_string(&built).expect("renders"),
            serde_json::to_string(&expected).expect("renders"),
            "same members in the same order"
        );
    }

    #[test]
    fn iso_time_has_millis_and_z() {
        assert_eq!(iso_time(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_time(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
        assert_eq!(iso_time(253_402_300_799_999), "9999-12-31T23:59:59.999Z");
    }

    /// The digit-by-digit text is what `format!` with padding writes, across the calendar
    /// (every month, leap days, single-digit fields, the last millisecond of a day).
    #[test]
    fn iso_time_matches_formatted_padding() {
        let formatted = |ms: u64| {
            let t = OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
                .expect("in range");
            format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
                t.year(),
                u8::from(t.month()),
                t.day(),
                t.hour(),
                t.minute(),
                t.second(),
                t.millisecond()
            )
        };
        let mut ms = 0u64;
        // A prime step of about 3.7 days crosses every field's carries over 60 years.
        while ms < 1_900_000_000_000 {
            assert_eq!(iso_time(ms), formatted(ms), "at {ms} ms");
            ms += 316_234_567;
        }
        for ms in [951_782_400_000, 951_868_799_999, 86_399_999, 1_000, 59_999] {
            assert_eq!(iso_time(ms), formatted(ms), "at {ms} ms");
        }
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
