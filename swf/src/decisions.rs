//! decisions: the 13 SWF decision types a decider answers with, and their validation
//! ([`parse_decisions`]): `decisionType` known, its `<type>DecisionAttributes` present when it
//! has required fields, no other type's attributes, required fields given, lengths, names,
//! timeouts and priorities within SWF's constraints.
//!
//! Invariants: a decision that [`parse_decisions`] returns satisfies every constraint SWF
//! checks before executing (whether it can be carried out, for example whether its activity
//! type exists, is the transitions' business: they answer a `…Failed` event, not an error).
//! Must not: look at an execution's state or the registry.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::{
    check_length, check_name, check_optional_length, constraint_error, missing_field,
    parse_optional_task_priority, ActivityType, ChildPolicy, SwfError, TaskList, Timeout,
    WorkflowType,
};
use crate::limits;

/// `ScheduleActivityTaskDecisionAttributes`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ScheduleActivityTask {
    /// The type (required).
    pub activity_type: Option<ActivityType>,
    /// The decider's id for the task (required).
    pub activity_id: String,
    /// Decider data.
    pub control: Option<String>,
    /// The input.
    pub input: Option<String>,
    /// Schedule-to-close timeout (the type's default when absent).
    pub schedule_to_close_timeout: Option<String>,
    /// The list (the type's default when absent).
    pub task_list: Option<TaskList>,
    /// The priority (the type's default when absent).
    pub task_priority: Option<String>,
    /// Schedule-to-start timeout.
    pub schedule_to_start_timeout: Option<String>,
    /// Start-to-close timeout.
    pub start_to_close_timeout: Option<String>,
    /// Heartbeat timeout.
    pub heartbeat_timeout: Option<String>,
}

/// `RequestCancelActivityTaskDecisionAttributes`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RequestCancelActivityTask {
    /// The activity (required).
    pub activity_id: String,
}

/// `CompleteWorkflowExecutionDecisionAttributes`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CompleteWorkflowExecution {
    /// The result.
    pub result: Option<String>,
}

/// `FailWorkflowExecutionDecisionAttributes`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FailWorkflowExecution {
    /// Why.
    pub reason: Option<String>,
    /// Details.
    pub details: Option<String>,
}

/// `CancelWorkflowExecutionDecisionAttributes`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CancelWorkflowExecution {
    /// Details.
    pub details: Option<String>,
}

/// `ContinueAsNewWorkflowExecutionDecisionAttributes`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ContinueAsNewWorkflowExecution {
    /// The new run's input.
    pub input: Option<String>,
    /// The new run's start-to-close timeout.
    pub execution_start_to_close_timeout: Option<String>,
    /// The new run's decision task list.
    pub task_list: Option<TaskList>,
    /// The new run's decision task priority.
    pub task_priority: Option<String>,
    /// The new run's decision task start-to-close timeout.
    pub task_start_to_close_timeout: Option<String>,
    /// The new run's child policy.
    pub child_policy: Option<ChildPolicy>,
    /// The new run's tags.
    pub tag_list: Option<Vec<String>>,
    /// The new run's type version (the same type's name).
    pub workflow_type_version: Option<String>,
    /// The new run's Lambda role.
    pub lambda_role: Option<String>,
}

/// `RecordMarkerDecisionAttributes`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RecordMarker {
    /// The marker's name (required).
    pub marker_name: String,
    /// Details.
    pub details: Option<String>,
}

/// `StartTimerDecisionAttributes`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StartTimer {
    /// The decider's id for it (required).
    pub timer_id: String,
    /// Decider data.
    pub control: Option<String>,
    /// Seconds until it fires (required; `NONE` is not allowed).
    pub start_to_fire_timeout: String,
}

/// `CancelTimerDecisionAttributes`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CancelTimer {
    /// The timer (required).
    pub timer_id: String,
}

/// `SignalExternalWorkflowExecutionDecisionAttributes`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SignalExternalWorkflowExecution {
    /// The target's workflow id (required).
    pub workflow_id: String,
    /// The target's run.
    pub run_id: Option<String>,
    /// The signal's name (required).
    pub signal_name: String,
    /// The signal's input.
    pub input: Option<String>,
    /// Decider data.
    pub control: Option<String>,
}

/// `RequestCancelExternalWorkflowExecutionDecisionAttributes`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RequestCancelExternalWorkflowExecution {
    /// The target's workflow id (required).
    pub workflow_id: String,
    /// The target's run.
    pub run_id: Option<String>,
    /// Decider data.
    pub control: Option<String>,
}

/// `StartChildWorkflowExecutionDecisionAttributes`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StartChildWorkflowExecution {
    /// The child's type (required).
    pub workflow_type: Option<WorkflowType>,
    /// The child's workflow id (required).
    pub workflow_id: String,
    /// Decider data.
    pub control: Option<String>,
    /// The child's input.
    pub input: Option<String>,
    /// The child's start-to-close timeout.
    pub execution_start_to_close_timeout: Option<String>,
    /// The child's decision task list.
    pub task_list: Option<TaskList>,
    /// The child's decision task priority.
    pub task_priority: Option<String>,
    /// The child's decision task start-to-close timeout.
    pub task_start_to_close_timeout: Option<String>,
    /// The child's child policy.
    pub child_policy: Option<ChildPolicy>,
    /// The child's tags.
    pub tag_list: Option<Vec<String>>,
    /// The child's Lambda role.
    pub lambda_role: Option<String>,
}

/// `ScheduleLambdaFunctionDecisionAttributes`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ScheduleLambdaFunction {
    /// The decider's id for it (required).
    pub id: String,
    /// The function's name (required).
    pub name: String,
    /// Decider data.
    pub control: Option<String>,
    /// The input.
    pub input: Option<String>,
    /// Start-to-close timeout.
    pub start_to_close_timeout: Option<String>,
}

/// One decision of a decider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Decision {
    /// Schedules an activity task.
    ScheduleActivityTask(ScheduleActivityTask),
    /// Asks to cancel an open activity task.
    RequestCancelActivityTask(RequestCancelActivityTask),
    /// Closes the execution as completed.
    CompleteWorkflowExecution(CompleteWorkflowExecution),
    /// Closes the execution as failed.
    FailWorkflowExecution(FailWorkflowExecution),
    /// Closes the execution as canceled.
    CancelWorkflowExecution(CancelWorkflowExecution),
    /// Closes the execution and starts a new run of the same workflow id.
    ContinueAsNewWorkflowExecution(ContinueAsNewWorkflowExecution),
    /// Records a marker.
    RecordMarker(RecordMarker),
    /// Starts a timer.
    StartTimer(StartTimer),
    /// Cancels an open timer.
    CancelTimer(CancelTimer),
    /// Signals another execution.
    SignalExternalWorkflowExecution(SignalExternalWorkflowExecution),
    /// Asks another execution to cancel.
    RequestCancelExternalWorkflowExecution(RequestCancelExternalWorkflowExecution),
    /// Starts a child execution.
    StartChildWorkflowExecution(StartChildWorkflowExecution),
    /// Schedules a Lambda function.
    ScheduleLambdaFunction(ScheduleLambdaFunction),
}

/// Every `decisionType`, in SWF's order.
pub const DECISION_TYPES: [&str; 13] = [
    "ScheduleActivityTask",
    "RequestCancelActivityTask",
    "CompleteWorkflowExecution",
    "FailWorkflowExecution",
    "CancelWorkflowExecution",
    "ContinueAsNewWorkflowExecution",
    "RecordMarker",
    "StartTimer",
    "CancelTimer",
    "SignalExternalWorkflowExecution",
    "RequestCancelExternalWorkflowExecution",
    "StartChildWorkflowExecution",
    "ScheduleLambdaFunction",
];

impl Decision {
    /// SWF's `decisionType`.
    pub fn decision_type(&self) -> &'static str {
        match self {
            Decision::ScheduleActivityTask(_) => DECISION_TYPES[0],
            Decision::RequestCancelActivityTask(_) => DECISION_TYPES[1],
            Decision::CompleteWorkflowExecution(_) => DECISION_TYPES[2],
            Decision::FailWorkflowExecution(_) => DECISION_TYPES[3],
            Decision::CancelWorkflowExecution(_) => DECISION_TYPES[4],
            Decision::ContinueAsNewWorkflowExecution(_) => DECISION_TYPES[5],
            Decision::RecordMarker(_) => DECISION_TYPES[6],
            Decision::StartTimer(_) => DECISION_TYPES[7],
            Decision::CancelTimer(_) => DECISION_TYPES[8],
            Decision::SignalExternalWorkflowExecution(_) => DECISION_TYPES[9],
            Decision::RequestCancelExternalWorkflowExecution(_) => DECISION_TYPES[10],
            Decision::StartChildWorkflowExecution(_) => DECISION_TYPES[11],
            Decision::ScheduleLambdaFunction(_) => DECISION_TYPES[12],
        }
    }

    /// Whether the decision closes the execution.
    pub fn closes_execution(&self) -> bool {
        matches!(
            self,
            Decision::CompleteWorkflowExecution(_)
                | Decision::FailWorkflowExecution(_)
                | Decision::CancelWorkflowExecution(_)
                | Decision::ContinueAsNewWorkflowExecution(_)
        )
    }
}

/// The JSON key of a decision type's attributes.
fn attributes_key(decision_type: &str) -> String {
    let mut chars = decision_type.chars();
    let first = chars
        .next()
        .expect("decision type names are non-empty")
        .to_ascii_lowercase();
    format!("{first}{}DecisionAttributes", chars.as_str())
}

/// Parses and validates the `decisions` of RespondDecisionTaskCompleted.
pub fn parse_decisions(values: &[Value]) -> Result<Vec<Decision>, SwfError> {
    if values.len() > limits::DECISIONS_PER_TASK_MAX {
        return Err(constraint_error(
            "decisions",
            &format!("{} decisions", values.len()),
            &format!(
                "have length less than or equal to {}",
                limits::DECISIONS_PER_TASK_MAX
            ),
        ));
    }
    values
        .iter()
        .enumerate()
        .map(|(index, value)| parse_decision(&format!("decisions.{}.member", index + 1), value))
        .collect()
}

fn parse_decision(path: &str, value: &Value) -> Result<Decision, SwfError> {
    let Some(object) = value.as_object() else {
        return Err(SwfError::validation(format!(
            "{path} must be an object with a decisionType"
        )));
    };
    let decision_type = match object.get("decisionType") {
        None | Some(Value::Null) => return Err(missing_field(&format!("{path}.decisionType"))),
        Some(Value::String(s)) => s.as_str(),
        Some(other) => {
            return Err(SwfError::validation(format!(
                "{path}.decisionType must be a string, not {other}"
            )))
        }
    };
    let Some(&known) = DECISION_TYPES.iter().find(|t| **t == decision_type) else {
        return Err(constraint_error(
            &format!("{path}.decisionType"),
            decision_type,
            &format!("satisfy enum value set: [{}]", DECISION_TYPES.join(", ")),
        ));
    };
    let key = attributes_key(known);
    for other in DECISION_TYPES.iter().filter(|t| **t != known) {
        let other_key = attributes_key(other);
        if object.get(&other_key).is_some_and(|v| !v.is_null()) {
            return Err(SwfError::validation(format!(
                "{path}: {other_key} must not be set for a decision of type {known} (only \
                 {key})"
            )));
        }
    }
    let attributes = object.get(&key).filter(|v| !v.is_null());
    let at = format!("{path}.{key}");
    let decision = match known {
        "ScheduleActivityTask" => Decision::ScheduleActivityTask(read(&at, attributes, true)?),
        "RequestCancelActivityTask" => {
            Decision::RequestCancelActivityTask(read(&at, attributes, true)?)
        }
        "CompleteWorkflowExecution" => {
            Decision::CompleteWorkflowExecution(read(&at, attributes, false)?)
        }
        "FailWorkflowExecution" => Decision::FailWorkflowExecution(read(&at, attributes, false)?),
        "CancelWorkflowExecution" => {
            Decision::CancelWorkflowExecution(read(&at, attributes, false)?)
        }
        "ContinueAsNewWorkflowExecution" => {
            Decision::ContinueAsNewWorkflowExecution(read(&at, attributes, false)?)
        }
        "RecordMarker" => Decision::RecordMarker(read(&at, attributes, true)?),
        "StartTimer" => Decision::StartTimer(read(&at, attributes, true)?),
        "CancelTimer" => Decision::CancelTimer(read(&at, attributes, true)?),
        "SignalExternalWorkflowExecution" => {
            Decision::SignalExternalWorkflowExecution(read(&at, attributes, true)?)
        }
        "RequestCancelExternalWorkflowExecution" => {
            Decision::RequestCancelExternalWorkflowExecution(read(&at, attributes, true)?)
        }
        "StartChildWorkflowExecution" => {
            Decision::StartChildWorkflowExecution(read(&at, attributes, true)?)
        }
        "ScheduleLambdaFunction" => Decision::ScheduleLambdaFunction(read(&at, attributes, true)?),
        _ => unreachable!("{known} is one of DECISION_TYPES, each matched above"),
    };
    validate(&at, &decision)?;
    Ok(decision)
}

/// Reads a decision's attributes (`required`: the type has required fields, so the
/// attributes must be there).
fn read<T: DeserializeOwned + Default>(
    at: &str,
    attributes: Option<&Value>,
    required: bool,
) -> Result<T, SwfError> {
    match attributes {
        None if required => Err(missing_field(at)),
        None => Ok(T::default()),
        Some(value) => serde_json::from_value(value.clone())
            .map_err(|e| SwfError::validation(format!("{at} is not valid: {e}"))),
    }
}

fn data(at: &str, field: &str, value: Option<&str>) -> Result<(), SwfError> {
    check_optional_length(&format!("{at}.{field}"), value, limits::DATA_CHARS_MAX)
}

fn timeout(at: &str, field: &str, value: Option<&str>) -> Result<(), SwfError> {
    Timeout::parse_optional(&format!("{at}.{field}"), value).map(|_| ())
}

fn task_list(at: &str, value: Option<&TaskList>) -> Result<(), SwfError> {
    match value {
        Some(list) => check_name(
            &format!("{at}.taskList.name"),
            &list.name,
            limits::NAME_CHARS_MAX,
        ),
        None => Ok(()),
    }
}

fn priority(at: &str, value: Option<&str>) -> Result<(), SwfError> {
    parse_optional_task_priority(&format!("{at}.taskPriority"), value).map(|_| ())
}

fn tags(at: &str, value: Option<&[String]>) -> Result<(), SwfError> {
    match value {
        Some(tags) => crate::api::check_tag_list(tags)
            .map_err(|e| SwfError::validation(format!("{at}: {}", e.message))),
        None => Ok(()),
    }
}

fn type_name_and_version(at: &str, name: &str, version: &str) -> Result<(), SwfError> {
    check_name(&format!("{at}.name"), name, limits::NAME_CHARS_MAX)?;
    check_name(&format!("{at}.version"), version, limits::VERSION_CHARS_MAX)
}

fn validate(at: &str, decision: &Decision) -> Result<(), SwfError> {
    match decision {
        Decision::ScheduleActivityTask(d) => {
            let Some(activity_type) = &d.activity_type else {
                return Err(missing_field(&format!("{at}.activityType")));
            };
            type_name_and_version(
                &format!("{at}.activityType"),
                &activity_type.name,
                &activity_type.version,
            )?;
            check_name(
                &format!("{at}.activityId"),
                &d.activity_id,
                limits::NAME_CHARS_MAX,
            )?;
            data(at, "control", d.control.as_deref())?;
            data(at, "input", d.input.as_deref())?;
            timeout(
                at,
                "scheduleToCloseTimeout",
                d.schedule_to_close_timeout.as_deref(),
            )?;
            timeout(
                at,
                "scheduleToStartTimeout",
                d.schedule_to_start_timeout.as_deref(),
            )?;
            timeout(
                at,
                "startToCloseTimeout",
                d.start_to_close_timeout.as_deref(),
            )?;
            timeout(at, "heartbeatTimeout", d.heartbeat_timeout.as_deref())?;
            task_list(at, d.task_list.as_ref())?;
            priority(at, d.task_priority.as_deref())
        }
        Decision::RequestCancelActivityTask(d) => check_name(
            &format!("{at}.activityId"),
            &d.activity_id,
            limits::NAME_CHARS_MAX,
        ),
        Decision::CompleteWorkflowExecution(d) => data(at, "result", d.result.as_deref()),
        Decision::FailWorkflowExecution(d) => {
            check_optional_length(
                &format!("{at}.reason"),
                d.reason.as_deref(),
                limits::REASON_CHARS_MAX,
            )?;
            data(at, "details", d.details.as_deref())
        }
        Decision::CancelWorkflowExecution(d) => data(at, "details", d.details.as_deref()),
        Decision::ContinueAsNewWorkflowExecution(d) => {
            data(at, "input", d.input.as_deref())?;
            timeout(
                at,
                "executionStartToCloseTimeout",
                d.execution_start_to_close_timeout.as_deref(),
            )?;
            timeout(
                at,
                "taskStartToCloseTimeout",
                d.task_start_to_close_timeout.as_deref(),
            )?;
            task_list(at, d.task_list.as_ref())?;
            priority(at, d.task_priority.as_deref())?;
            tags(at, d.tag_list.as_deref())?;
            if let Some(version) = &d.workflow_type_version {
                check_name(
                    &format!("{at}.workflowTypeVersion"),
                    version,
                    limits::VERSION_CHARS_MAX,
                )?;
            }
            check_optional_length(
                &format!("{at}.lambdaRole"),
                d.lambda_role.as_deref(),
                limits::ARN_CHARS_MAX,
            )
        }
        Decision::RecordMarker(d) => {
            check_name(
                &format!("{at}.markerName"),
                &d.marker_name,
                limits::NAME_CHARS_MAX,
            )?;
            data(at, "details", d.details.as_deref())
        }
        Decision::StartTimer(d) => {
            check_name(
                &format!("{at}.timerId"),
                &d.timer_id,
                limits::NAME_CHARS_MAX,
            )?;
            data(at, "control", d.control.as_deref())?;
            let field = format!("{at}.startToFireTimeout");
            if d.start_to_fire_timeout.is_empty() {
                return Err(missing_field(&field));
            }
            match Timeout::parse(&field, &d.start_to_fire_timeout)? {
                Timeout::Seconds(_) => Ok(()),
                Timeout::Unlimited => Err(SwfError::validation(format!(
                    "{field} must be a number of seconds (NONE is not allowed for a timer)"
                ))),
            }
        }
        Decision::CancelTimer(d) => check_name(
            &format!("{at}.timerId"),
            &d.timer_id,
            limits::NAME_CHARS_MAX,
        ),
        Decision::SignalExternalWorkflowExecution(d) => {
            check_name(
                &format!("{at}.workflowId"),
                &d.workflow_id,
                limits::NAME_CHARS_MAX,
            )?;
            check_optional_length(
                &format!("{at}.runId"),
                d.run_id.as_deref(),
                limits::RUN_ID_CHARS_MAX,
            )?;
            check_name(
                &format!("{at}.signalName"),
                &d.signal_name,
                limits::NAME_CHARS_MAX,
            )?;
            data(at, "input", d.input.as_deref())?;
            data(at, "control", d.control.as_deref())
        }
        Decision::RequestCancelExternalWorkflowExecution(d) => {
            check_name(
                &format!("{at}.workflowId"),
                &d.workflow_id,
                limits::NAME_CHARS_MAX,
            )?;
            check_optional_length(
                &format!("{at}.runId"),
                d.run_id.as_deref(),
                limits::RUN_ID_CHARS_MAX,
            )?;
            data(at, "control", d.control.as_deref())
        }
        Decision::StartChildWorkflowExecution(d) => {
            let Some(workflow_type) = &d.workflow_type else {
                return Err(missing_field(&format!("{at}.workflowType")));
            };
            type_name_and_version(
                &format!("{at}.workflowType"),
                &workflow_type.name,
                &workflow_type.version,
            )?;
            check_name(
                &format!("{at}.workflowId"),
                &d.workflow_id,
                limits::NAME_CHARS_MAX,
            )?;
            data(at, "control", d.control.as_deref())?;
            data(at, "input", d.input.as_deref())?;
            timeout(
                at,
                "executionStartToCloseTimeout",
                d.execution_start_to_close_timeout.as_deref(),
            )?;
            timeout(
                at,
                "taskStartToCloseTimeout",
                d.task_start_to_close_timeout.as_deref(),
            )?;
            task_list(at, d.task_list.as_ref())?;
            priority(at, d.task_priority.as_deref())?;
            tags(at, d.tag_list.as_deref())?;
            check_optional_length(
                &format!("{at}.lambdaRole"),
                d.lambda_role.as_deref(),
                limits::ARN_CHARS_MAX,
            )
        }
        Decision::ScheduleLambdaFunction(d) => {
            check_length(&format!("{at}.id"), &d.id, 1, limits::NAME_CHARS_MAX)?;
            check_length(
                &format!("{at}.name"),
                &d.name,
                1,
                limits::FUNCTION_NAME_CHARS_MAX,
            )?;
            data(at, "control", d.control.as_deref())?;
            data(at, "input", d.input.as_deref())?;
            timeout(
                at,
                "startToCloseTimeout",
                d.start_to_close_timeout.as_deref(),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Fault;
    use serde_json::json;

    fn parse_one(value: Value) -> Result<Decision, SwfError> {
        parse_decisions(&[value]).map(|mut d| d.remove(0))
    }

    fn rejects(value: Value, mentioning: &str) {
        let error = parse_one(value.clone()).expect_err(&value.to_string());
        assert_eq!(error.fault, Fault::Validation, "{value}");
        assert!(
            error.message.contains(mentioning),
            "{value}: `{}` does not mention {mentioning}",
            error.message
        );
    }

    #[test]
    fn every_decision_type_parses_with_its_attributes() {
        let cases = [
            json!({"decisionType": "ScheduleActivityTask", "scheduleActivityTaskDecisionAttributes": {
                "activityType": {"name": "a", "version": "1"}, "activityId": "a1",
                "control": "c", "input": "i", "scheduleToCloseTimeout": "NONE",
                "taskList": {"name": "l"}, "taskPriority": "-5",
                "scheduleToStartTimeout": "10", "startToCloseTimeout": "20",
                "heartbeatTimeout": "5"}}),
            json!({"decisionType": "RequestCancelActivityTask",
                   "requestCancelActivityTaskDecisionAttributes": {"activityId": "a1"}}),
            json!({"decisionType": "CompleteWorkflowExecution",
                   "completeWorkflowExecutionDecisionAttributes": {"result": "r"}}),
            json!({"decisionType": "FailWorkflowExecution",
                   "failWorkflowExecutionDecisionAttributes": {"reason": "x", "details": "y"}}),
            json!({"decisionType": "CancelWorkflowExecution",
                   "cancelWorkflowExecutionDecisionAttributes": {"details": "d"}}),
            json!({"decisionType": "ContinueAsNewWorkflowExecution",
                   "continueAsNewWorkflowExecutionDecisionAttributes": {
                       "input": "i", "executionStartToCloseTimeout": "60",
                       "taskList": {"name": "l"}, "taskPriority": "1",
                       "taskStartToCloseTimeout": "10", "childPolicy": "ABANDON",
                       "tagList": ["t"], "workflowTypeVersion": "2", "lambdaRole": "r"}}),
            json!({"decisionType": "RecordMarker",
                   "recordMarkerDecisionAttributes": {"markerName": "m", "details": "d"}}),
            json!({"decisionType": "StartTimer",
                   "startTimerDecisionAttributes": {"timerId": "t", "startToFireTimeout": "0",
                                                    "control": "c"}}),
            json!({"decisionType": "CancelTimer", "cancelTimerDecisionAttributes": {"timerId": "t"}}),
            json!({"decisionType": "SignalExternalWorkflowExecution",
                   "signalExternalWorkflowExecutionDecisionAttributes": {
                       "workflowId": "w", "runId": "r", "signalName": "s", "input": "i"}}),
            json!({"decisionType": "RequestCancelExternalWorkflowExecution",
                   "requestCancelExternalWorkflowExecutionDecisionAttributes": {"workflowId": "w"}}),
            json!({"decisionType": "StartChildWorkflowExecution",
                   "startChildWorkflowExecutionDecisionAttributes": {
                       "workflowType": {"name": "w", "version": "1"}, "workflowId": "c",
                       "childPolicy": "TERMINATE"}}),
            json!({"decisionType": "ScheduleLambdaFunction",
                   "scheduleLambdaFunctionDecisionAttributes": {"id": "f", "name": "fn"}}),
        ];
        let decisions = parse_decisions(&cases).expect("all valid");
        let types: Vec<&str> = decisions.iter().map(Decision::decision_type).collect();
        assert_eq!(types, DECISION_TYPES);
        let Decision::ScheduleActivityTask(schedule) = &decisions[0] else {
            panic!("first is ScheduleActivityTask");
        };
        assert_eq!(schedule.heartbeat_timeout.as_deref(), Some("5"));
        assert_eq!(schedule.task_list, Some(TaskList { name: "l".into() }));
        let closing: Vec<bool> = decisions.iter().map(Decision::closes_execution).collect();
        assert_eq!(
            closing,
            [
                false, false, true, true, true, true, false, false, false, false, false, false,
                false
            ]
        );
    }

    #[test]
    fn close_decisions_may_leave_out_their_attributes() {
        for decision_type in [
            "CompleteWorkflowExecution",
            "FailWorkflowExecution",
            "CancelWorkflowExecution",
            "ContinueAsNewWorkflowExecution",
        ] {
            let decision = parse_one(json!({"decisionType": decision_type})).expect(decision_type);
            assert_eq!(decision.decision_type(), decision_type);
        }
    }

    #[test]
    fn the_envelope_is_checked() {
        rejects(json!("ScheduleActivityTask"), "decisions.1.member");
        rejects(json!({}), "decisions.1.member.decisionType");
        rejects(json!({"decisionType": 3}), "decisionType");
        rejects(json!({"decisionType": "Sleep"}), "enum value set");
        // Attributes are required for types with required fields.
        for decision_type in [
            "ScheduleActivityTask",
            "RequestCancelActivityTask",
            "RecordMarker",
            "StartTimer",
            "CancelTimer",
            "SignalExternalWorkflowExecution",
            "RequestCancelExternalWorkflowExecution",
            "StartChildWorkflowExecution",
            "ScheduleLambdaFunction",
        ] {
            rejects(json!({"decisionType": decision_type}), "DecisionAttributes");
        }
        // Another type's attributes.
        rejects(
            json!({"decisionType": "CompleteWorkflowExecution",
                   "startTimerDecisionAttributes": {"timerId": "t", "startToFireTimeout": "1"}}),
            "startTimerDecisionAttributes must not be set",
        );
        // Wrong field types.
        rejects(
            json!({"decisionType": "CancelTimer", "cancelTimerDecisionAttributes": {"timerId": 5}}),
            "cancelTimerDecisionAttributes is not valid",
        );
        // The index is 1-based, as AWS reports it.
        let error = parse_decisions(&[
            json!({"decisionType": "CompleteWorkflowExecution"}),
            json!({"decisionType": "CancelTimer", "cancelTimerDecisionAttributes": {}}),
        ])
        .expect_err("second is bad");
        assert!(
            error.message.contains("decisions.2.member"),
            "{}",
            error.message
        );
        let many = vec![json!({"decisionType": "RecordMarker"}); 1001];
        assert!(parse_decisions(&many).is_err());
        assert_eq!(parse_decisions(&[]), Ok(vec![]));
    }

    #[test]
    fn schedule_activity_task_fields_are_checked() {
        let with = |attributes: Value| {
            json!({"decisionType": "ScheduleActivityTask",
                   "scheduleActivityTaskDecisionAttributes": attributes})
        };
        rejects(with(json!({"activityId": "a"})), "activityType");
        rejects(
            with(json!({"activityType": {"name": "a", "version": "1"}})),
            "activityId",
        );
        rejects(
            with(json!({"activityType": {"name": "a", "version": "1"}, "activityId": "a:b"})),
            "activityId",
        );
        rejects(
            with(
                json!({"activityType": {"name": "a", "version": "v".repeat(65)},
                        "activityId": "a"}),
            ),
            "activityType.version",
        );
        rejects(
            with(
                json!({"activityType": {"name": "a", "version": "1"}, "activityId": "a",
                        "heartbeatTimeout": "soon"}),
            ),
            "heartbeatTimeout",
        );
        rejects(
            with(
                json!({"activityType": {"name": "a", "version": "1"}, "activityId": "a",
                        "taskPriority": "99999999999"}),
            ),
            "taskPriority",
        );
        rejects(
            with(
                json!({"activityType": {"name": "a", "version": "1"}, "activityId": "a",
                        "taskList": {"name": ""}}),
            ),
            "taskList.name",
        );
        rejects(
            with(
                json!({"activityType": {"name": "a", "version": "1"}, "activityId": "a",
                        "input": "x".repeat(32_769)}),
            ),
            "input",
        );
    }

    #[test]
    fn other_decisions_fields_are_checked() {
        rejects(
            json!({"decisionType": "StartTimer",
                   "startTimerDecisionAttributes": {"timerId": "t"}}),
            "startToFireTimeout",
        );
        rejects(
            json!({"decisionType": "StartTimer",
                   "startTimerDecisionAttributes": {"timerId": "t", "startToFireTimeout": "NONE"}}),
            "NONE is not allowed",
        );
        rejects(
            json!({"decisionType": "StartTimer",
                   "startTimerDecisionAttributes": {"timerId": "", "startToFireTimeout": "1"}}),
            "timerId",
        );
        rejects(
            json!({"decisionType": "FailWorkflowExecution",
                   "failWorkflowExecutionDecisionAttributes": {"reason": "r".repeat(257)}}),
            "reason",
        );
        rejects(
            json!({"decisionType": "RecordMarker", "recordMarkerDecisionAttributes": {}}),
            "markerName",
        );
        rejects(
            json!({"decisionType": "ContinueAsNewWorkflowExecution",
                   "continueAsNewWorkflowExecutionDecisionAttributes": {
                       "tagList": ["1", "2", "3", "4", "5", "6"]}}),
            "tagList",
        );
        rejects(
            json!({"decisionType": "ContinueAsNewWorkflowExecution",
                   "continueAsNewWorkflowExecutionDecisionAttributes": {"childPolicy": "KEEP"}}),
            "is not valid",
        );
        rejects(
            json!({"decisionType": "SignalExternalWorkflowExecution",
                   "signalExternalWorkflowExecutionDecisionAttributes": {"workflowId": "w"}}),
            "signalName",
        );
        rejects(
            json!({"decisionType": "StartChildWorkflowExecution",
                   "startChildWorkflowExecutionDecisionAttributes": {"workflowId": "w"}}),
            "workflowType",
        );
        rejects(
            json!({"decisionType": "ScheduleLambdaFunction",
                   "scheduleLambdaFunctionDecisionAttributes": {"id": "f", "name": "n".repeat(65)}}),
            "name",
        );
    }
}
