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
    let mut object = Map::new();
    object.insert(
        "timestamp".into(),
        json!(event.timestamp_ms as f64 / 1000.0),
    );
    object.insert("type".into(), json!(event.details.type_name()));
    object.insert("id".into(), json!(event.id.0));
    object.insert("previousEventId".into(), json!(event.previous_event_id));
    if let Some((key, details)) = render_details(&event.details, include_execution_data) {
        object.insert(key.into(), Value::Object(details));
    }
    Value::Object(object)
}

/// Renders a whole history as the JSON array AWS returns under `events`.
pub fn render_history(events: &[HistoryEvent], include_execution_data: bool) -> Value {
    Value::Array(
        events
            .iter()
            .map(|e| render_event(e, include_execution_data))
            .collect(),
    )
}

/// Compact JSON text of a payload (the form AWS shows).
fn text(value: &Value) -> Value {
    // Serializing a `Value` to a string cannot fail (keys are strings, numbers are finite).
    Value::String(serde_json::to_string(value).expect("a serde_json::Value always serializes"))
}

struct Details {
    map: Map<String, Value>,
    data: bool,
}

impl Details {
    fn new(data: bool) -> Self {
        Self {
            map: Map::new(),
            data,
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
        self.put(key, text(value))
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

fn entered(d: &StateEntered, data: bool) -> Details {
    Details::new(data)
        .put("name", json!(d.name))
        .payload("input", &d.input, d.input_truncated)
}

fn exited(d: &StateExited, data: bool) -> Details {
    Details::new(data)
        .put("name", json!(d.name))
        .payload("output", &d.output, d.output_truncated)
}

fn output(d: &Output, data: bool) -> Details {
    Details::new(data).payload("output", &d.output, d.output_truncated)
}

fn iteration(d: &MapIteration, data: bool) -> Details {
    Details::new(data)
        .put("name", json!(d.name))
        .put("index", json!(d.index))
}

fn task_error(d: &TaskError, data: bool) -> Details {
    Details::new(data)
        .resource(&d.resource_type, &d.resource)
        .opt_str("error", &d.error)
        .opt_str("cause", &d.cause)
}

fn task_output(d: &TaskOutput, data: bool) -> Details {
    Details::new(data)
        .resource(&d.resource_type, &d.resource)
        .payload("output", &d.output, d.output_truncated)
}

/// The details key and object of an event type; `None` for types AWS shows without details.
fn render_details(
    details: &EventDetails,
    data: bool,
) -> Option<(&'static str, Map<String, Value>)> {
    use EventDetails as E;
    let ec = |ec: &ErrorCause| Details::new(data).error_cause(ec);
    let (key, d) = match details {
        E::ActivityFailed(d) => ("activityFailedEventDetails", ec(d)),
        E::ActivityScheduleFailed(d) => ("activityScheduleFailedEventDetails", ec(d)),
        E::ActivityScheduled(d) => (
            "activityScheduledEventDetails",
            Details::new(data)
                .put("resource", json!(d.resource))
                .payload("input", &d.input, d.input_truncated)
                .opt_u64("timeoutInSeconds", d.timeout_in_seconds)
                .opt_u64("heartbeatInSeconds", d.heartbeat_in_seconds),
        ),
        E::ActivityStarted(d) => (
            "activityStartedEventDetails",
            Details::new(data).opt_str("workerName", &d.worker_name),
        ),
        E::ActivitySucceeded(d) => ("activitySucceededEventDetails", output(d, data)),
        E::ActivityTimedOut(d) => ("activityTimedOutEventDetails", ec(d)),
        E::ChoiceStateEntered(d)
        | E::FailStateEntered(d)
        | E::MapStateEntered(d)
        | E::ParallelStateEntered(d)
        | E::PassStateEntered(d)
        | E::SucceedStateEntered(d)
        | E::TaskStateEntered(d)
        | E::WaitStateEntered(d) => ("stateEnteredEventDetails", entered(d, data)),
        E::ChoiceStateExited(d)
        | E::MapStateExited(d)
        | E::ParallelStateExited(d)
        | E::PassStateExited(d)
        | E::SucceedStateExited(d)
        | E::TaskStateExited(d)
        | E::WaitStateExited(d) => ("stateExitedEventDetails", exited(d, data)),
        E::EvaluationFailed(d) => (
            "evaluationFailedEventDetails",
            Details::new(data)
                .opt_str("error", &d.error)
                .opt_str("cause", &d.cause)
                .opt_str("location", &d.location)
                .put("state", json!(d.state)),
        ),
        E::ExecutionAborted(d) => ("executionAbortedEventDetails", ec(d)),
        E::ExecutionFailed(d) => ("executionFailedEventDetails", ec(d)),
        E::ExecutionRedriven(d) => (
            "executionRedrivenEventDetails",
            Details::new(data).put("redriveCount", json!(d.redrive_count)),
        ),
        E::ExecutionStarted(d) => (
            "executionStartedEventDetails",
            Details::new(data)
                .payload("input", &d.input, d.input_truncated)
                .put("roleArn", json!(d.role_arn))
                .opt_str("stateMachineAliasArn", &d.state_machine_alias_arn)
                .opt_str("stateMachineVersionArn", &d.state_machine_version_arn),
        ),
        E::ExecutionSucceeded(d) => ("executionSucceededEventDetails", output(d, data)),
        E::ExecutionTimedOut(d) => ("executionTimedOutEventDetails", ec(d)),
        E::LambdaFunctionFailed(d) => ("lambdaFunctionFailedEventDetails", ec(d)),
        E::LambdaFunctionScheduleFailed(d) => ("lambdaFunctionScheduleFailedEventDetails", ec(d)),
        E::LambdaFunctionScheduled(d) => (
            "lambdaFunctionScheduledEventDetails",
            Details::new(data)
                .put("resource", json!(d.resource))
                .payload("input", &d.input, d.input_truncated)
                .opt_u64("timeoutInSeconds", d.timeout_in_seconds)
                .credentials(&d.task_credentials_role_arn),
        ),
        E::LambdaFunctionStartFailed(d) => ("lambdaFunctionStartFailedEventDetails", ec(d)),
        E::LambdaFunctionSucceeded(d) => ("lambdaFunctionSucceededEventDetails", output(d, data)),
        E::LambdaFunctionTimedOut(d) => ("lambdaFunctionTimedOutEventDetails", ec(d)),
        E::MapIterationAborted(d) => ("mapIterationAbortedEventDetails", iteration(d, data)),
        E::MapIterationFailed(d) => ("mapIterationFailedEventDetails", iteration(d, data)),
        E::MapIterationStarted(d) => ("mapIterationStartedEventDetails", iteration(d, data)),
        E::MapIterationSucceeded(d) => ("mapIterationSucceededEventDetails", iteration(d, data)),
        E::MapRunFailed(d) => ("mapRunFailedEventDetails", ec(d)),
        E::MapRunRedriven(d) => (
            "mapRunRedrivenEventDetails",
            Details::new(data)
                .put("mapRunArn", json!(d.map_run_arn))
                .put("redriveCount", json!(d.redrive_count)),
        ),
        E::MapRunStarted(d) => (
            "mapRunStartedEventDetails",
            Details::new(data).put("mapRunArn", json!(d.map_run_arn)),
        ),
        E::MapStateStarted(d) => (
            "mapStateStartedEventDetails",
            Details::new(data).put("length", json!(d.length)),
        ),
        E::TaskFailed(d) => ("taskFailedEventDetails", task_error(d, data)),
        E::TaskScheduled(d) => {
            let mut details = Details::new(data)
                .resource(&d.resource_type, &d.resource)
                .put("region", json!(d.region));
            if data {
                details = details.put("parameters", text(&d.parameters));
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
            Details::new(data).resource(&d.resource_type, &d.resource),
        ),
        E::TaskStartFailed(d) => ("taskStartFailedEventDetails", task_error(d, data)),
        E::TaskSubmitFailed(d) => ("taskSubmitFailedEventDetails", task_error(d, data)),
        E::TaskSubmitted(d) => ("taskSubmittedEventDetails", task_output(d, data)),
        E::TaskSucceeded(d) => ("taskSucceededEventDetails", task_output(d, data)),
        E::TaskTimedOut(d) => ("taskTimedOutEventDetails", task_error(d, data)),
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
                input: json!({"a": 1}),
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
            EventDetails::ExecutionStarted(ExecutionStarted {
                input: json!([1, 2]),
                input_truncated: false,
                role_arn: "role".into(),
                state_machine_alias_arn: None,
                state_machine_version_arn: None,
                execution_arn: "exec".into(),
                state_machine_arn: "sm".into(),
            }),
        );
        assert_eq!(
            render_event(&e, true)["executionStartedEventDetails"],
            json!({"input": "[1,2]", "inputDetails": {"truncated": false}, "roleArn": "role"})
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
