//! aws_json: renders events in the shape of AWS `GetExecutionHistory`:
//! `{"timestamp": <epoch seconds>, "type": "...", "id": n, "previousEventId": n,
//! "<x>EventDetails": {...}}`, with payloads as compact JSON text and each event type under the
//! details key AWS uses for it (matched against the conformance recordings).
//!
//! Must not: show statelog's own bookkeeping (`scope`, `timer`, the ARNs inside
//! `ExecutionStarted`), do I/O.

use serde_json::{json, Map, Value};

use super::*;

/// Renders one event. With `include_execution_data == false`, inputs, outputs and task
/// parameters (and their `*Details`) are left out, as AWS does.
pub fn render_event(event: &HistoryEvent, include_execution_data: bool) -> Value {
    render_event_with(event, include_execution_data, None)
}

/// The execution input and the text its caller wrote it in (see `ExecutionStarted::input_text`).
pub type InputText<'a> = Option<(&'a Value, &'a str)>;

/// The raw input text of a history, taken from its `ExecutionStarted` event.
pub fn input_text(events: &[HistoryEvent]) -> InputText<'_> {
    events.iter().find_map(|e| match &e.details {
        EventDetails::ExecutionStarted(d) => d.input_text.as_deref().map(|t| (&*d.input, t)),
        _ => None,
    })
}

/// Like [`render_event`], writing the execution input in its original text wherever it appears
/// unchanged inside a payload.
pub fn render_event_with(
    event: &HistoryEvent,
    include_execution_data: bool,
    input: InputText<'_>,
) -> Value {
    let mut object = Map::new();
    object.insert(
        "timestamp".into(),
        json!(event.timestamp_ms as f64 / 1000.0),
    );
    object.insert("type".into(), json!(event.details.type_name()));
    object.insert("id".into(), json!(event.id.0));
    object.insert("previousEventId".into(), json!(event.previous_event_id));
    if let Some((key, details)) = render_details(&event.details, include_execution_data, input) {
        object.insert(key.into(), Value::Object(details));
    }
    Value::Object(object)
}

/// Renders a whole history as the JSON array AWS returns under `events`.
///
/// The execution input keeps its original text wherever it passes through unchanged, until the
/// first `MapStateExited`: AWS rebuilds a Map's result from its iterations, so from there on
/// values are compact even when they equal the input (observed in the recordings).
pub fn render_history(events: &[HistoryEvent], include_execution_data: bool) -> Value {
    let mut input = input_text(events);
    let mut rendered = Vec::with_capacity(events.len());
    for event in events {
        if matches!(event.details, EventDetails::MapStateExited(_)) {
            input = None;
        }
        rendered.push(render_event_with(event, include_execution_data, input));
    }
    Value::Array(rendered)
}

/// Compact JSON text of a payload (the form AWS shows), with the execution input in its
/// original text where it appears unchanged.
fn text(value: &Value, input: InputText<'_>) -> Value {
    Value::String(payload_text(value, input))
}

/// The compact JSON text of a payload as an event renders it (its `input` or `output`), with
/// the execution input in its original text where it appears unchanged: what a caller that
/// needs one payload's text (DescribeExecution's `output`) would otherwise render a whole
/// event for.
pub fn payload_text(value: &Value, input: InputText<'_>) -> String {
    let mut out = String::new();
    write_text(value, input, &mut out);
    out
}

fn write_text(value: &Value, input: InputText<'_>, out: &mut String) {
    if let Some((original, raw)) = input {
        if value == original {
            out.push_str(raw);
            return;
        }
    }
    match value {
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_text(item, input, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&scalar_text(&Value::String(key.clone())));
                out.push(':');
                write_text(item, input, out);
            }
            out.push('}');
        }
        scalar => out.push_str(&scalar_text(scalar)),
    }
}

fn scalar_text(value: &Value) -> String {
    // Serializing a `Value` to a string cannot fail (keys are strings, numbers are finite).
    serde_json::to_string(value).expect("a serde_json::Value always serializes")
}

struct Details<'i> {
    map: Map<String, Value>,
    data: bool,
    input: InputText<'i>,
}

impl<'i> Details<'i> {
    fn new(data: bool, input: InputText<'i>) -> Self {
        Self {
            map: Map::new(),
            data,
            input,
        }
    }
    fn put(mut self, key: &str, value: Value) -> Self {
        self.map.insert(key.into(), value);
        self
    }
    fn opt_str(self, key: &str, value: &Option<String>) -> Self {
        match value {
            Some(v) => self.put(key, json!(v)),
            None => self,
        }
    }
    fn opt_u64(self, key: &str, value: Option<u64>) -> Self {
        match value {
            Some(v) => self.put(key, json!(v)),
            None => self,
        }
    }
    fn payload(self, key: &str, value: &Value, truncated: bool) -> Self {
        if !self.data {
            return self;
        }
        let details_key = format!("{key}Details");
        let rendered = text(value, self.input);
        self.put(key, rendered)
            .put(&details_key, json!({ "truncated": truncated }))
    }
    fn error_cause(self, ec: &ErrorCause) -> Self {
        self.opt_str("error", &ec.error).opt_str("cause", &ec.cause)
    }
    fn credentials(self, role_arn: &Option<String>) -> Self {
        match role_arn {
            Some(r) => self.put("taskCredentials", json!({ "roleArn": r })),
            None => self,
        }
    }
    fn resource(self, resource_type: &str, resource: &str) -> Self {
        self.put("resourceType", json!(resource_type))
            .put("resource", json!(resource))
    }
}

fn entered<'i>(d: &StateEntered, data: bool, input: InputText<'i>) -> Details<'i> {
    Details::new(data, input)
        .put("name", json!(d.name))
        .payload("input", &d.input, d.input_truncated)
}

fn exited<'i>(d: &StateExited, data: bool, input: InputText<'i>) -> Details<'i> {
    let details = Details::new(data, input)
        .put("name", json!(d.name))
        .payload("output", &d.output, d.output_truncated);
    match &d.assigned {
        // The values are execution data, shown only with it, like the output.
        Some(assigned) if data => details
            .put("assignedVariables", json!(assigned.variables))
            .put(
                "assignedVariablesDetails",
                json!({ "truncated": assigned.truncated }),
            ),
        _ => details,
    }
}

fn output<'i>(d: &Output, data: bool, input: InputText<'i>) -> Details<'i> {
    Details::new(data, input).payload("output", &d.output, d.output_truncated)
}

fn iteration<'i>(d: &MapIteration, data: bool, input: InputText<'i>) -> Details<'i> {
    Details::new(data, input)
        .put("name", json!(d.name))
        .put("index", json!(d.index))
}

fn task_error<'i>(d: &TaskError, data: bool, input: InputText<'i>) -> Details<'i> {
    Details::new(data, input)
        .resource(&d.resource_type, &d.resource)
        .opt_str("error", &d.error)
        .opt_str("cause", &d.cause)
}

fn task_output<'i>(d: &TaskOutput, data: bool, input: InputText<'i>) -> Details<'i> {
    Details::new(data, input)
        .resource(&d.resource_type, &d.resource)
        .payload("output", &d.output, d.output_truncated)
}

/// The details key and object of an event type; `None` for types AWS shows without details.
fn render_details(
    details: &EventDetails,
    data: bool,
    input: InputText<'_>,
) -> Option<(&'static str, Map<String, Value>)> {
    use EventDetails as E;
    let ec = |ec: &ErrorCause| Details::new(data, input).error_cause(ec);
    let (key, d) = match details {
        E::ActivityFailed(d) => ("activityFailedEventDetails", ec(d)),
        E::ActivityScheduleFailed(d) => ("activityScheduleFailedEventDetails", ec(d)),
        E::ActivityScheduled(d) => (
            "activityScheduledEventDetails",
            Details::new(data, input)
                .put("resource", json!(d.resource))
                .payload("input", &d.input, d.input_truncated)
                .opt_u64("timeoutInSeconds", d.timeout_in_seconds)
                .opt_u64("heartbeatInSeconds", d.heartbeat_in_seconds),
        ),
        E::ActivityStarted(d) => (
            "activityStartedEventDetails",
            Details::new(data, input).opt_str("workerName", &d.worker_name),
        ),
        E::ActivitySucceeded(d) => ("activitySucceededEventDetails", output(d, data, input)),
        E::ActivityTimedOut(d) => ("activityTimedOutEventDetails", ec(d)),
        E::ChoiceStateEntered(d)
        | E::FailStateEntered(d)
        | E::MapStateEntered(d)
        | E::ParallelStateEntered(d)
        | E::PassStateEntered(d)
        | E::SucceedStateEntered(d)
        | E::TaskStateEntered(d)
        | E::WaitStateEntered(d) => ("stateEnteredEventDetails", entered(d, data, input)),
        E::ChoiceStateExited(d)
        | E::MapStateExited(d)
        | E::ParallelStateExited(d)
        | E::PassStateExited(d)
        | E::SucceedStateExited(d)
        | E::TaskStateExited(d)
        | E::WaitStateExited(d) => ("stateExitedEventDetails", exited(d, data, input)),
        E::EvaluationFailed(d) => (
            "evaluationFailedEventDetails",
            Details::new(data, input)
                .opt_str("error", &d.error)
                .opt_str("cause", &d.cause)
                .opt_str("location", &d.location)
                .put("state", json!(d.state)),
        ),
        E::ExecutionAborted(d) => ("executionAbortedEventDetails", ec(d)),
        E::ExecutionFailed(d) => ("executionFailedEventDetails", ec(d)),
        E::ExecutionRedriven(d) => (
            "executionRedrivenEventDetails",
            Details::new(data, input).put("redriveCount", json!(d.redrive_count)),
        ),
        E::ExecutionStarted(d) => (
            "executionStartedEventDetails",
            Details::new(data, input)
                .payload("input", &d.input, d.input_truncated)
                .put("roleArn", json!(d.role_arn))
                .opt_str("stateMachineAliasArn", &d.state_machine_alias_arn)
                .opt_str("stateMachineVersionArn", &d.state_machine_version_arn),
        ),
        E::ExecutionSucceeded(d) => ("executionSucceededEventDetails", output(d, data, input)),
        E::ExecutionTimedOut(d) => ("executionTimedOutEventDetails", ec(d)),
        E::LambdaFunctionFailed(d) => ("lambdaFunctionFailedEventDetails", ec(d)),
        E::LambdaFunctionScheduleFailed(d) => ("lambdaFunctionScheduleFailedEventDetails", ec(d)),
        E::LambdaFunctionScheduled(d) => (
            "lambdaFunctionScheduledEventDetails",
            Details::new(data, input)
                .put("resource", json!(d.resource))
                .payload("input", &d.input, d.input_truncated)
                .opt_u64("timeoutInSeconds", d.timeout_in_seconds)
                .credentials(&d.task_credentials_role_arn),
        ),
        E::LambdaFunctionStartFailed(d) => ("lambdaFunctionStartFailedEventDetails", ec(d)),
        E::LambdaFunctionSucceeded(d) => (
            "lambdaFunctionSucceededEventDetails",
            output(d, data, input),
        ),
        E::LambdaFunctionTimedOut(d) => ("lambdaFunctionTimedOutEventDetails", ec(d)),
        E::MapIterationAborted(d) => ("mapIterationAbortedEventDetails", iteration(d, data, input)),
        E::MapIterationFailed(d) => ("mapIterationFailedEventDetails", iteration(d, data, input)),
        E::MapIterationStarted(d) => ("mapIterationStartedEventDetails", iteration(d, data, input)),
        E::MapIterationSucceeded(d) => (
            "mapIterationSucceededEventDetails",
            iteration(d, data, input),
        ),
        E::MapRunFailed(d) => ("mapRunFailedEventDetails", ec(d)),
        E::MapRunRedriven(d) => (
            "mapRunRedrivenEventDetails",
            Details::new(data, input)
                .put("mapRunArn", json!(d.map_run_arn))
                .put("redriveCount", json!(d.redrive_count)),
        ),
        E::MapRunStarted(d) => (
            "mapRunStartedEventDetails",
            Details::new(data, input).put("mapRunArn", json!(d.map_run_arn)),
        ),
        E::MapStateStarted(d) => (
            "mapStateStartedEventDetails",
            Details::new(data, input).put("length", json!(d.length)),
        ),
        E::TaskFailed(d) => ("taskFailedEventDetails", task_error(d, data, input)),
        E::TaskScheduled(d) => {
            let mut details = Details::new(data, input)
                .resource(&d.resource_type, &d.resource)
                .put("region", json!(d.region));
            if data {
                let rendered = text(&d.parameters, input);
                details = details.put("parameters", rendered);
            }
            (
                "taskScheduledEventDetails",
                details
                    .opt_u64("timeoutInSeconds", d.timeout_in_seconds)
                    .opt_u64("heartbeatInSeconds", d.heartbeat_in_seconds)
                    .credentials(&d.task_credentials_role_arn),
            )
        }
        E::TaskStarted(d) => (
            "taskStartedEventDetails",
            Details::new(data, input).resource(&d.resource_type, &d.resource),
        ),
        E::TaskStartFailed(d) => ("taskStartFailedEventDetails", task_error(d, data, input)),
        E::TaskSubmitFailed(d) => ("taskSubmitFailedEventDetails", task_error(d, data, input)),
        E::TaskSubmitted(d) => ("taskSubmittedEventDetails", task_output(d, data, input)),
        E::TaskSucceeded(d) => ("taskSucceededEventDetails", task_output(d, data, input)),
        E::TaskTimedOut(d) => ("taskTimedOutEventDetails", task_error(d, data, input)),
        E::LambdaFunctionStarted
        | E::MapRunAborted
        | E::MapRunSucceeded
        | E::MapStateAborted
        | E::MapStateFailed
        | E::MapStateSucceeded
        | E::ParallelStateAborted
        | E::ParallelStateFailed
        | E::ParallelStateStarted
        | E::ParallelStateSucceeded
        | E::TaskStateAborted
        | E::WaitStateAborted => return None,
    };
    Some((key, d.map))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(id: u32, previous: u32, details: EventDetails) -> HistoryEvent {
        HistoryEvent {
            id: EventId(id),
            previous_event_id: previous,
            timestamp_ms: 1_700_000_000_250,
            details,
            scope: vec![],
            timer: None,
        }
    }

    #[test]
    fn state_entered_has_aws_shape() {
        let e = event(
            2,
            0,
            EventDetails::PassStateEntered(StateEntered {
                name: "S".into(),
                input: json!({"a": 1}).into(),
                input_truncated: false,
            }),
        );
        assert_eq!(
            render_event(&e, true),
            json!({"timestamp": 1_700_000_000.25, "type": "PassStateEntered", "id": 2,
                   "previousEventId": 0,
                   "stateEnteredEventDetails": {"name": "S", "input": "{\"a\":1}",
                                                 "inputDetails": {"truncated": false}}})
        );
        assert_eq!(
            render_event(&e, false)["stateEnteredEventDetails"],
            json!({"name": "S"}),
            "includeExecutionData=false drops input and inputDetails"
        );
    }

    #[test]
    fn execution_started_hides_bookkeeping_and_failures_omit_absent_fields() {
        let e = event(
            1,
            0,
            EventDetails::ExecutionStarted(Box::new(ExecutionStarted {
                input: json!([1, 2]).into(),
                input_truncated: false,
                role_arn: "role".into(),
                state_machine_alias_arn: None,
                state_machine_version_arn: None,
                execution_arn: "exec".into(),
                state_machine_arn: "sm".into(),
                input_text: Some("[1, 2]".into()),
                map_run_arn: None,
            })),
        );
        assert_eq!(
            render_event(&e, true)["executionStartedEventDetails"],
            json!({"input": "[1,2]", "inputDetails": {"truncated": false}, "roleArn": "role"})
        );
        let exited = event(
            2,
            0,
            EventDetails::PassStateExited(StateExited {
                name: "P".into(),
                output: json!([[1, 2], [1, 2, 3]]).into(),
                output_truncated: false,
                assigned: None,
            }),
        );
        let history = render_history(&[e.clone(), exited], true);
        assert_eq!(
            history[0]["executionStartedEventDetails"]["input"],
            json!("[1, 2]")
        );
        assert_eq!(
            history[1]["stateExitedEventDetails"]["output"],
            json!("[[1, 2],[1,2,3]]"),
            "the unchanged input keeps its original text, the rest is compact"
        );
        let f = event(
            3,
            2,
            EventDetails::ExecutionFailed(ErrorCause {
                error: Some("E".into()),
                cause: None,
            }),
        );
        assert_eq!(
            render_event(&f, true)["executionFailedEventDetails"],
            json!({"error": "E"})
        );
        let started = render_event(&event(4, 3, EventDetails::ParallelStateStarted), true);
        assert_eq!(
            started.as_object().map(|o| o.len()),
            Some(4),
            "no details key: {started}"
        );
    }
}
