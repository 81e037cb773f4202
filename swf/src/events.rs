//! events: the history events of an SWF workflow execution, one [`Attributes`] variant per SWF
//! event type, each holding a struct with SWF's attribute fields, and their JSON shape
//! ([`Event::to_json`]: `eventId`, `eventTimestamp` in epoch seconds, `eventType` and
//! `<lowerCamel type>EventAttributes`).
//!
//! Invariants: field names and enum values are SWF's; an absent optional field is left out of
//! the JSON (never `null`); `token_nonce` of the started events never reaches JSON. Variants and
//! enum values are only ever appended (the postcard encoding numbers them in order, see
//! [`crate::encoding`]); a field is never removed or retyped without a new format version.
//! Must not: decide anything (the transitions do), read a clock, or do I/O.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::api::{
    timestamp_from_ms, ActivityType, ChildPolicy, TaskList, WorkflowExecution, WorkflowType,
};

/// One event of a run's history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// Dense from 1 within the run.
    pub event_id: u64,
    /// When it happened, epoch milliseconds.
    pub timestamp_ms: u64,
    /// What happened.
    pub attributes: Attributes,
}

impl Event {
    /// SWF's `eventType`.
    pub fn event_type(&self) -> &'static str {
        self.attributes.event_type()
    }

    /// SWF's JSON of the event.
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert("eventId".into(), Value::from(self.event_id));
        object.insert(
            "eventTimestamp".into(),
            Value::from(timestamp_from_ms(self.timestamp_ms)),
        );
        object.insert("eventType".into(), Value::from(self.event_type()));
        object.insert(
            self.attributes.attributes_key(),
            self.attributes.attributes_json(),
        );
        Value::Object(object)
    }
}

/// The timeout kinds of an activity task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ActivityTaskTimeoutType {
    /// Started, not closed in time.
    StartToClose,
    /// Scheduled, not started in time.
    ScheduleToStart,
    /// Scheduled, not closed in time.
    ScheduleToClose,
    /// Started, no heartbeat in time.
    Heartbeat,
}

/// The timeout kinds of a decision task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DecisionTaskTimeoutType {
    /// Started, not completed in time.
    StartToClose,
    /// Scheduled, not started in time.
    ScheduleToStart,
}

/// The timeout kind of a workflow execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum WorkflowExecutionTimeoutType {
    /// The execution's start-to-close timeout.
    StartToClose,
}

/// Why an execution was terminated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum WorkflowExecutionTerminatedCause {
    /// The parent's child policy.
    ChildPolicyApplied,
    /// The history reached its event limit.
    EventLimitExceeded,
    /// TerminateWorkflowExecution.
    OperatorInitiated,
}

/// Why a cancel was requested of an execution (absent: RequestCancelWorkflowExecution or a
/// RequestCancelExternalWorkflowExecution decision).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum WorkflowExecutionCancelRequestedCause {
    /// The parent's child policy.
    ChildPolicyApplied,
}

/// Causes of `ScheduleActivityTaskFailed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ScheduleActivityTaskFailedCause {
    /// The type is deprecated.
    ActivityTypeDeprecated,
    /// The type is not registered.
    ActivityTypeDoesNotExist,
    /// An open activity has that activity id.
    ActivityIdAlreadyInUse,
    /// Too many open activities.
    OpenActivitiesLimitExceeded,
    /// Scheduled too fast.
    ActivityCreationRateExceeded,
    /// No schedule-to-close timeout given or registered.
    DefaultScheduleToCloseTimeoutUndefined,
    /// No task list given or registered.
    DefaultTaskListUndefined,
    /// No schedule-to-start timeout given or registered.
    DefaultScheduleToStartTimeoutUndefined,
    /// No start-to-close timeout given or registered.
    DefaultStartToCloseTimeoutUndefined,
    /// No heartbeat timeout given or registered.
    DefaultHeartbeatTimeoutUndefined,
    /// Not permitted.
    OperationNotPermitted,
}

/// Causes of `RequestCancelActivityTaskFailed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RequestCancelActivityTaskFailedCause {
    /// No open activity has that id.
    ActivityIdUnknown,
    /// Not permitted.
    OperationNotPermitted,
}

/// Causes of `StartTimerFailed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum StartTimerFailedCause {
    /// An open timer has that id.
    TimerIdAlreadyInUse,
    /// Too many open timers.
    OpenTimersLimitExceeded,
    /// Started too fast.
    TimerCreationRateExceeded,
    /// Not permitted.
    OperationNotPermitted,
}

/// Causes of `CancelTimerFailed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CancelTimerFailedCause {
    /// No open timer has that id.
    TimerIdUnknown,
    /// Not permitted.
    OperationNotPermitted,
}

/// Causes of `RecordMarkerFailed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RecordMarkerFailedCause {
    /// Not permitted.
    OperationNotPermitted,
}

/// Causes of `CompleteWorkflowExecutionFailed`, `FailWorkflowExecutionFailed` and
/// `CancelWorkflowExecutionFailed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CloseDecisionFailedCause {
    /// New events arrived while the decision task was started: the decider must see them.
    UnhandledDecision,
    /// Not permitted.
    OperationNotPermitted,
}

/// Causes of `ContinueAsNewWorkflowExecutionFailed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ContinueAsNewWorkflowExecutionFailedCause {
    /// New events arrived while the decision task was started.
    UnhandledDecision,
    /// The workflow type is deprecated.
    WorkflowTypeDeprecated,
    /// The workflow type is not registered.
    WorkflowTypeDoesNotExist,
    /// No execution start-to-close timeout given or registered.
    DefaultExecutionStartToCloseTimeoutUndefined,
    /// No decision task start-to-close timeout given or registered.
    DefaultTaskStartToCloseTimeoutUndefined,
    /// No task list given or registered.
    DefaultTaskListUndefined,
    /// No child policy given or registered.
    DefaultChildPolicyUndefined,
    /// Continued too fast.
    ContinueAsNewWorkflowExecutionRateExceeded,
    /// Not permitted.
    OperationNotPermitted,
}

/// Causes of `StartChildWorkflowExecutionFailed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum StartChildWorkflowExecutionFailedCause {
    /// The type is not registered.
    WorkflowTypeDoesNotExist,
    /// The type is deprecated.
    WorkflowTypeDeprecated,
    /// Too many open children.
    OpenChildrenLimitExceeded,
    /// Too many open executions.
    OpenWorkflowsLimitExceeded,
    /// Started too fast.
    ChildCreationRateExceeded,
    /// An open execution has that workflow id.
    WorkflowAlreadyRunning,
    /// No execution start-to-close timeout given or registered.
    DefaultExecutionStartToCloseTimeoutUndefined,
    /// No task list given or registered.
    DefaultTaskListUndefined,
    /// No decision task start-to-close timeout given or registered.
    DefaultTaskStartToCloseTimeoutUndefined,
    /// No child policy given or registered.
    DefaultChildPolicyUndefined,
    /// Not permitted.
    OperationNotPermitted,
}

/// Causes of `SignalExternalWorkflowExecutionFailed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SignalExternalWorkflowExecutionFailedCause {
    /// No such open execution.
    UnknownExternalWorkflowExecution,
    /// Signalled too fast.
    SignalExternalWorkflowExecutionRateExceeded,
    /// Not permitted.
    OperationNotPermitted,
}

/// Causes of `RequestCancelExternalWorkflowExecutionFailed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RequestCancelExternalWorkflowExecutionFailedCause {
    /// No such open execution.
    UnknownExternalWorkflowExecution,
    /// Requested too fast.
    RequestCancelExternalWorkflowExecutionRateExceeded,
    /// Not permitted.
    OperationNotPermitted,
}

/// Causes of `ScheduleLambdaFunctionFailed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ScheduleLambdaFunctionFailedCause {
    /// An open Lambda function has that id.
    IdAlreadyInUse,
    /// Too many open Lambda functions.
    OpenLambdaFunctionsLimitExceeded,
    /// Scheduled too fast.
    LambdaFunctionCreationRateExceeded,
    /// Lambda is not available (statelog runs no Lambda functions).
    LambdaServiceNotAvailableInRegion,
}

// ---------------------------------------------------------------------------------------------
// Workflow execution events

/// `WorkflowExecutionStarted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowExecutionStarted {
    /// The input.
    pub input: Option<String>,
    /// The execution's start-to-close timeout.
    pub execution_start_to_close_timeout: Option<String>,
    /// The decision tasks' start-to-close timeout.
    pub task_start_to_close_timeout: Option<String>,
    /// The child policy.
    pub child_policy: ChildPolicy,
    /// The decision task list.
    pub task_list: TaskList,
    /// The decision task priority.
    pub task_priority: Option<String>,
    /// The type.
    pub workflow_type: WorkflowType,
    /// The tags.
    pub tag_list: Option<Vec<String>>,
    /// The run this one continues (ContinueAsNew).
    pub continued_execution_run_id: Option<String>,
    /// The parent, for a child.
    pub parent_workflow_execution: Option<WorkflowExecution>,
    /// The parent's `StartChildWorkflowExecutionInitiated` event.
    pub parent_initiated_event_id: Option<u64>,
    /// The Lambda role.
    pub lambda_role: Option<String>,
}

/// `WorkflowExecutionCompleted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowExecutionCompleted {
    /// The result.
    pub result: Option<String>,
    /// The decision task that completed it.
    pub decision_task_completed_event_id: u64,
}

/// `WorkflowExecutionFailed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowExecutionFailed {
    /// Why.
    pub reason: Option<String>,
    /// Details.
    pub details: Option<String>,
    /// The decision task that failed it.
    pub decision_task_completed_event_id: u64,
}

/// `WorkflowExecutionTimedOut`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowExecutionTimedOut {
    /// Always START_TO_CLOSE.
    pub timeout_type: WorkflowExecutionTimeoutType,
    /// The child policy applied.
    pub child_policy: ChildPolicy,
}

/// `WorkflowExecutionCanceled`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowExecutionCanceled {
    /// Details.
    pub details: Option<String>,
    /// The decision task that canceled it.
    pub decision_task_completed_event_id: u64,
}

/// `WorkflowExecutionContinuedAsNew`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowExecutionContinuedAsNew {
    /// The new run's input.
    pub input: Option<String>,
    /// The decision task that continued it.
    pub decision_task_completed_event_id: u64,
    /// The new run's id.
    pub new_execution_run_id: String,
    /// The new run's start-to-close timeout.
    pub execution_start_to_close_timeout: Option<String>,
    /// The new run's decision task list.
    pub task_list: TaskList,
    /// The new run's decision task priority.
    pub task_priority: Option<String>,
    /// The new run's decision task start-to-close timeout.
    pub task_start_to_close_timeout: Option<String>,
    /// The new run's child policy.
    pub child_policy: ChildPolicy,
    /// The new run's tags.
    pub tag_list: Option<Vec<String>>,
    /// The new run's type.
    pub workflow_type: WorkflowType,
    /// The new run's Lambda role.
    pub lambda_role: Option<String>,
}

/// `WorkflowExecutionTerminated`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowExecutionTerminated {
    /// Why.
    pub reason: Option<String>,
    /// Details.
    pub details: Option<String>,
    /// The child policy applied.
    pub child_policy: ChildPolicy,
    /// What terminated it.
    pub cause: Option<WorkflowExecutionTerminatedCause>,
}

/// `WorkflowExecutionSignaled`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowExecutionSignaled {
    /// The signal's name.
    pub signal_name: String,
    /// The signal's input.
    pub input: Option<String>,
    /// The execution that sent it (a SignalExternalWorkflowExecution decision).
    pub external_workflow_execution: Option<WorkflowExecution>,
    /// The sender's `SignalExternalWorkflowExecutionInitiated` event.
    pub external_initiated_event_id: Option<u64>,
}

/// `WorkflowExecutionCancelRequested`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowExecutionCancelRequested {
    /// The execution that asked (a RequestCancelExternalWorkflowExecution decision).
    pub external_workflow_execution: Option<WorkflowExecution>,
    /// The asker's `RequestCancelExternalWorkflowExecutionInitiated` event.
    pub external_initiated_event_id: Option<u64>,
    /// Set when a parent's child policy asked.
    pub cause: Option<WorkflowExecutionCancelRequestedCause>,
}

/// `CompleteWorkflowExecutionFailed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteWorkflowExecutionFailed {
    /// Why.
    pub cause: CloseDecisionFailedCause,
    /// The decision task of the decision.
    pub decision_task_completed_event_id: u64,
}

/// `FailWorkflowExecutionFailed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailWorkflowExecutionFailed {
    /// Why.
    pub cause: CloseDecisionFailedCause,
    /// The decision task of the decision.
    pub decision_task_completed_event_id: u64,
}

/// `CancelWorkflowExecutionFailed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelWorkflowExecutionFailed {
    /// Why.
    pub cause: CloseDecisionFailedCause,
    /// The decision task of the decision.
    pub decision_task_completed_event_id: u64,
}

/// `ContinueAsNewWorkflowExecutionFailed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContinueAsNewWorkflowExecutionFailed {
    /// Why.
    pub cause: ContinueAsNewWorkflowExecutionFailedCause,
    /// The decision task of the decision.
    pub decision_task_completed_event_id: u64,
}

// ---------------------------------------------------------------------------------------------
// Decision task events

/// `DecisionTaskScheduled`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionTaskScheduled {
    /// The list it was scheduled in.
    pub task_list: TaskList,
    /// Its priority.
    pub task_priority: Option<String>,
    /// Its start-to-close timeout.
    pub start_to_close_timeout: Option<String>,
    /// Its schedule-to-start timeout (from RespondDecisionTaskCompleted's
    /// `taskListScheduleToStartTimeout`).
    pub schedule_to_start_timeout: Option<String>,
}

/// `DecisionTaskStarted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionTaskStarted {
    /// The decider's identity.
    pub identity: Option<String>,
    /// The `DecisionTaskScheduled` event.
    pub scheduled_event_id: u64,
    /// The random part of the task's token (never in JSON), so a token can be checked after
    /// a restart.
    pub token_nonce: [u8; 16],
}

/// `DecisionTaskCompleted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionTaskCompleted {
    /// The decider's context.
    pub execution_context: Option<String>,
    /// The `DecisionTaskScheduled` event.
    pub scheduled_event_id: u64,
    /// The `DecisionTaskStarted` event.
    pub started_event_id: u64,
    /// The list of the next decision tasks, when the decider changed it.
    pub task_list: Option<TaskList>,
    /// The schedule-to-start timeout of the next decision tasks.
    pub task_list_schedule_to_start_timeout: Option<String>,
}

/// `DecisionTaskTimedOut`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionTaskTimedOut {
    /// Which timeout.
    pub timeout_type: DecisionTaskTimeoutType,
    /// The `DecisionTaskScheduled` event.
    pub scheduled_event_id: u64,
    /// The `DecisionTaskStarted` event (0 for SCHEDULE_TO_START).
    pub started_event_id: u64,
}

// ---------------------------------------------------------------------------------------------
// Activity task events

/// `ActivityTaskScheduled`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivityTaskScheduled {
    /// The type.
    pub activity_type: ActivityType,
    /// The decider's id for it.
    pub activity_id: String,
    /// The input.
    pub input: Option<String>,
    /// Decider data (not sent to the worker).
    pub control: Option<String>,
    /// Schedule-to-start timeout.
    pub schedule_to_start_timeout: Option<String>,
    /// Schedule-to-close timeout.
    pub schedule_to_close_timeout: Option<String>,
    /// Start-to-close timeout.
    pub start_to_close_timeout: Option<String>,
    /// The list it was scheduled in.
    pub task_list: TaskList,
    /// Its priority.
    pub task_priority: Option<String>,
    /// The decision task that scheduled it.
    pub decision_task_completed_event_id: u64,
    /// Heartbeat timeout.
    pub heartbeat_timeout: Option<String>,
}

/// `ActivityTaskStarted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivityTaskStarted {
    /// The worker's identity.
    pub identity: Option<String>,
    /// The `ActivityTaskScheduled` event.
    pub scheduled_event_id: u64,
    /// The random part of the task's token (never in JSON).
    pub token_nonce: [u8; 16],
}

/// `ActivityTaskCompleted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivityTaskCompleted {
    /// The result.
    pub result: Option<String>,
    /// The `ActivityTaskScheduled` event.
    pub scheduled_event_id: u64,
    /// The `ActivityTaskStarted` event.
    pub started_event_id: u64,
}

/// `ActivityTaskFailed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivityTaskFailed {
    /// Why.
    pub reason: Option<String>,
    /// Details.
    pub details: Option<String>,
    /// The `ActivityTaskScheduled` event.
    pub scheduled_event_id: u64,
    /// The `ActivityTaskStarted` event.
    pub started_event_id: u64,
}

/// `ActivityTaskTimedOut`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivityTaskTimedOut {
    /// Which timeout.
    pub timeout_type: ActivityTaskTimeoutType,
    /// The `ActivityTaskScheduled` event.
    pub scheduled_event_id: u64,
    /// The `ActivityTaskStarted` event (0 when it never started).
    pub started_event_id: u64,
    /// The last heartbeat's details.
    pub details: Option<String>,
}

/// `ActivityTaskCanceled`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivityTaskCanceled {
    /// Details.
    pub details: Option<String>,
    /// The `ActivityTaskScheduled` event.
    pub scheduled_event_id: u64,
    /// The `ActivityTaskStarted` event (0 when it never started).
    pub started_event_id: u64,
    /// The latest `ActivityTaskCancelRequested` event.
    pub latest_cancel_requested_event_id: Option<u64>,
}

/// `ActivityTaskCancelRequested`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivityTaskCancelRequested {
    /// The decision task that asked.
    pub decision_task_completed_event_id: u64,
    /// The activity.
    pub activity_id: String,
}

/// `ScheduleActivityTaskFailed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleActivityTaskFailed {
    /// The type asked for.
    pub activity_type: ActivityType,
    /// The id asked for.
    pub activity_id: String,
    /// Why.
    pub cause: ScheduleActivityTaskFailedCause,
    /// The decision task of the decision.
    pub decision_task_completed_event_id: u64,
}

/// `RequestCancelActivityTaskFailed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestCancelActivityTaskFailed {
    /// The id asked for.
    pub activity_id: String,
    /// Why.
    pub cause: RequestCancelActivityTaskFailedCause,
    /// The decision task of the decision.
    pub decision_task_completed_event_id: u64,
}

// ---------------------------------------------------------------------------------------------
// Timers and markers

/// `TimerStarted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimerStarted {
    /// The decider's id for it.
    pub timer_id: String,
    /// Decider data.
    pub control: Option<String>,
    /// Seconds until it fires.
    pub start_to_fire_timeout: String,
    /// The decision task that started it.
    pub decision_task_completed_event_id: u64,
}

/// `TimerFired`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimerFired {
    /// The timer.
    pub timer_id: String,
    /// The `TimerStarted` event.
    pub started_event_id: u64,
}

/// `TimerCanceled`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimerCanceled {
    /// The timer.
    pub timer_id: String,
    /// The `TimerStarted` event.
    pub started_event_id: u64,
    /// The decision task that canceled it.
    pub decision_task_completed_event_id: u64,
}

/// `StartTimerFailed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StartTimerFailed {
    /// The id asked for.
    pub timer_id: String,
    /// Why.
    pub cause: StartTimerFailedCause,
    /// The decision task of the decision.
    pub decision_task_completed_event_id: u64,
}

/// `CancelTimerFailed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelTimerFailed {
    /// The id asked for.
    pub timer_id: String,
    /// Why.
    pub cause: CancelTimerFailedCause,
    /// The decision task of the decision.
    pub decision_task_completed_event_id: u64,
}

/// `MarkerRecorded`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MarkerRecorded {
    /// The marker's name.
    pub marker_name: String,
    /// Its details.
    pub details: Option<String>,
    /// The decision task that recorded it.
    pub decision_task_completed_event_id: u64,
}

/// `RecordMarkerFailed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordMarkerFailed {
    /// The marker's name.
    pub marker_name: String,
    /// Why.
    pub cause: RecordMarkerFailedCause,
    /// The decision task of the decision.
    pub decision_task_completed_event_id: u64,
}

// ---------------------------------------------------------------------------------------------
// Child workflows

/// `StartChildWorkflowExecutionInitiated`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StartChildWorkflowExecutionInitiated {
    /// The child's workflow id.
    pub workflow_id: String,
    /// The child's type.
    pub workflow_type: WorkflowType,
    /// Decider data.
    pub control: Option<String>,
    /// The child's input.
    pub input: Option<String>,
    /// The child's start-to-close timeout.
    pub execution_start_to_close_timeout: Option<String>,
    /// The child's decision task list.
    pub task_list: TaskList,
    /// The child's decision task priority.
    pub task_priority: Option<String>,
    /// The decision task of the decision.
    pub decision_task_completed_event_id: u64,
    /// The child's child policy.
    pub child_policy: ChildPolicy,
    /// The child's decision task start-to-close timeout.
    pub task_start_to_close_timeout: Option<String>,
    /// The child's tags.
    pub tag_list: Option<Vec<String>>,
    /// The child's Lambda role.
    pub lambda_role: Option<String>,
}

/// `StartChildWorkflowExecutionFailed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StartChildWorkflowExecutionFailed {
    /// The type asked for.
    pub workflow_type: WorkflowType,
    /// Why.
    pub cause: StartChildWorkflowExecutionFailedCause,
    /// The id asked for.
    pub workflow_id: String,
    /// The `StartChildWorkflowExecutionInitiated` event (0 when it was never initiated).
    pub initiated_event_id: u64,
    /// The decision task of the decision.
    pub decision_task_completed_event_id: u64,
    /// Decider data.
    pub control: Option<String>,
}

/// `ChildWorkflowExecutionStarted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChildWorkflowExecutionStarted {
    /// The child.
    pub workflow_execution: WorkflowExecution,
    /// The child's type.
    pub workflow_type: WorkflowType,
    /// The `StartChildWorkflowExecutionInitiated` event.
    pub initiated_event_id: u64,
}

/// `ChildWorkflowExecutionCompleted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChildWorkflowExecutionCompleted {
    /// The child.
    pub workflow_execution: WorkflowExecution,
    /// The child's type.
    pub workflow_type: WorkflowType,
    /// The child's result.
    pub result: Option<String>,
    /// The `StartChildWorkflowExecutionInitiated` event.
    pub initiated_event_id: u64,
    /// The `ChildWorkflowExecutionStarted` event.
    pub started_event_id: u64,
}

/// `ChildWorkflowExecutionFailed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChildWorkflowExecutionFailed {
    /// The child.
    pub workflow_execution: WorkflowExecution,
    /// The child's type.
    pub workflow_type: WorkflowType,
    /// Why.
    pub reason: Option<String>,
    /// Details.
    pub details: Option<String>,
    /// The `StartChildWorkflowExecutionInitiated` event.
    pub initiated_event_id: u64,
    /// The `ChildWorkflowExecutionStarted` event.
    pub started_event_id: u64,
}

/// `ChildWorkflowExecutionTimedOut`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChildWorkflowExecutionTimedOut {
    /// The child.
    pub workflow_execution: WorkflowExecution,
    /// The child's type.
    pub workflow_type: WorkflowType,
    /// Which timeout.
    pub timeout_type: WorkflowExecutionTimeoutType,
    /// The `StartChildWorkflowExecutionInitiated` event.
    pub initiated_event_id: u64,
    /// The `ChildWorkflowExecutionStarted` event.
    pub started_event_id: u64,
}

/// `ChildWorkflowExecutionCanceled`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChildWorkflowExecutionCanceled {
    /// The child.
    pub workflow_execution: WorkflowExecution,
    /// The child's type.
    pub workflow_type: WorkflowType,
    /// Details.
    pub details: Option<String>,
    /// The `StartChildWorkflowExecutionInitiated` event.
    pub initiated_event_id: u64,
    /// The `ChildWorkflowExecutionStarted` event.
    pub started_event_id: u64,
}

/// `ChildWorkflowExecutionTerminated`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChildWorkflowExecutionTerminated {
    /// The child.
    pub workflow_execution: WorkflowExecution,
    /// The child's type.
    pub workflow_type: WorkflowType,
    /// The `StartChildWorkflowExecutionInitiated` event.
    pub initiated_event_id: u64,
    /// The `ChildWorkflowExecutionStarted` event.
    pub started_event_id: u64,
}

// ---------------------------------------------------------------------------------------------
// External executions

/// `SignalExternalWorkflowExecutionInitiated`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignalExternalWorkflowExecutionInitiated {
    /// The target's workflow id.
    pub workflow_id: String,
    /// The target's run id.
    pub run_id: Option<String>,
    /// The signal's name.
    pub signal_name: String,
    /// The signal's input.
    pub input: Option<String>,
    /// The decision task of the decision.
    pub decision_task_completed_event_id: u64,
    /// Decider data.
    pub control: Option<String>,
}

/// `SignalExternalWorkflowExecutionFailed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignalExternalWorkflowExecutionFailed {
    /// The target's workflow id.
    pub workflow_id: String,
    /// The target's run id.
    pub run_id: Option<String>,
    /// Why.
    pub cause: SignalExternalWorkflowExecutionFailedCause,
    /// The `SignalExternalWorkflowExecutionInitiated` event (0 when never initiated).
    pub initiated_event_id: u64,
    /// The decision task of the decision.
    pub decision_task_completed_event_id: u64,
    /// Decider data.
    pub control: Option<String>,
}

/// `ExternalWorkflowExecutionSignaled`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExternalWorkflowExecutionSignaled {
    /// The target.
    pub workflow_execution: WorkflowExecution,
    /// The `SignalExternalWorkflowExecutionInitiated` event.
    pub initiated_event_id: u64,
}

/// `RequestCancelExternalWorkflowExecutionInitiated`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestCancelExternalWorkflowExecutionInitiated {
    /// The target's workflow id.
    pub workflow_id: String,
    /// The target's run id.
    pub run_id: Option<String>,
    /// The decision task of the decision.
    pub decision_task_completed_event_id: u64,
    /// Decider data.
    pub control: Option<String>,
}

/// `RequestCancelExternalWorkflowExecutionFailed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestCancelExternalWorkflowExecutionFailed {
    /// The target's workflow id.
    pub workflow_id: String,
    /// The target's run id.
    pub run_id: Option<String>,
    /// Why.
    pub cause: RequestCancelExternalWorkflowExecutionFailedCause,
    /// The `RequestCancelExternalWorkflowExecutionInitiated` event (0 when never initiated).
    pub initiated_event_id: u64,
    /// The decision task of the decision.
    pub decision_task_completed_event_id: u64,
    /// Decider data.
    pub control: Option<String>,
}

/// `ExternalWorkflowExecutionCancelRequested`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExternalWorkflowExecutionCancelRequested {
    /// The target.
    pub workflow_execution: WorkflowExecution,
    /// The `RequestCancelExternalWorkflowExecutionInitiated` event.
    pub initiated_event_id: u64,
}

/// `ScheduleLambdaFunctionFailed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleLambdaFunctionFailed {
    /// The decider's id for the function.
    pub id: String,
    /// The function's name.
    pub name: String,
    /// Why.
    pub cause: ScheduleLambdaFunctionFailedCause,
    /// The decision task of the decision.
    pub decision_task_completed_event_id: u64,
}

macro_rules! attributes {
    ($($variant:ident),* $(,)?) => {
        /// What an event records: one variant per SWF event type, named as SWF names it.
        /// New variants go at the end only (the encoding numbers them in order).
        #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
        #[non_exhaustive]
        pub enum Attributes {
            $(
                #[doc = concat!("`", stringify!($variant), "`.")]
                $variant($variant),
            )*
        }

        impl Attributes {
            /// Every event type's name, in declaration (encoding) order.
            pub const EVENT_TYPES: &'static [&'static str] = &[$(stringify!($variant)),*];

            /// SWF's `eventType`.
            pub fn event_type(&self) -> &'static str {
                match self {
                    $(Attributes::$variant(_) => stringify!($variant),)*
                }
            }

            fn inner_json(&self) -> Result<Value, serde_json::Error> {
                match self {
                    $(Attributes::$variant(a) => serde_json::to_value(a),)*
                }
            }
        }
    };
}

attributes! {
    WorkflowExecutionStarted,
    WorkflowExecutionCompleted,
    WorkflowExecutionFailed,
    WorkflowExecutionTimedOut,
    WorkflowExecutionCanceled,
    WorkflowExecutionContinuedAsNew,
    WorkflowExecutionTerminated,
    WorkflowExecutionSignaled,
    WorkflowExecutionCancelRequested,
    CompleteWorkflowExecutionFailed,
    FailWorkflowExecutionFailed,
    CancelWorkflowExecutionFailed,
    ContinueAsNewWorkflowExecutionFailed,
    DecisionTaskScheduled,
    DecisionTaskStarted,
    DecisionTaskCompleted,
    DecisionTaskTimedOut,
    ActivityTaskScheduled,
    ActivityTaskStarted,
    ActivityTaskCompleted,
    ActivityTaskFailed,
    ActivityTaskTimedOut,
    ActivityTaskCanceled,
    ActivityTaskCancelRequested,
    ScheduleActivityTaskFailed,
    RequestCancelActivityTaskFailed,
    TimerStarted,
    TimerFired,
    TimerCanceled,
    StartTimerFailed,
    CancelTimerFailed,
    MarkerRecorded,
    RecordMarkerFailed,
    StartChildWorkflowExecutionInitiated,
    StartChildWorkflowExecutionFailed,
    ChildWorkflowExecutionStarted,
    ChildWorkflowExecutionCompleted,
    ChildWorkflowExecutionFailed,
    ChildWorkflowExecutionTimedOut,
    ChildWorkflowExecutionCanceled,
    ChildWorkflowExecutionTerminated,
    SignalExternalWorkflowExecutionInitiated,
    SignalExternalWorkflowExecutionFailed,
    ExternalWorkflowExecutionSignaled,
    RequestCancelExternalWorkflowExecutionInitiated,
    RequestCancelExternalWorkflowExecutionFailed,
    ExternalWorkflowExecutionCancelRequested,
    ScheduleLambdaFunctionFailed,
}

impl Attributes {
    /// The JSON key of the attributes: `<lowerCamel event type>EventAttributes`.
    pub fn attributes_key(&self) -> String {
        let event_type = self.event_type();
        let mut chars = event_type.chars();
        let first = chars
            .next()
            .expect("every event type name is non-empty")
            .to_ascii_lowercase();
        format!("{first}{}EventAttributes", chars.as_str())
    }

    /// The attributes as SWF writes them: absent optional fields left out, the token nonce
    /// never included.
    pub fn attributes_json(&self) -> Value {
        // The attribute structs hold only strings, integers, enums and nested structs of
        // those: serde_json cannot fail on them.
        let mut value = self
            .inner_json()
            .expect("event attributes always serialize to JSON");
        if let Value::Object(object) = &mut value {
            object.remove("tokenNonce");
        }
        drop_nulls(&mut value);
        value
    }

    /// Whether a decider must see this event: it schedules a decision task (unless one is
    /// scheduled or started already). SWF's rule: activity closed, timer fired, signal, cancel
    /// request, a decision's failure, a decision task timed out, child and external outcomes.
    pub fn wakes_decider(&self) -> bool {
        matches!(
            self,
            Attributes::WorkflowExecutionSignaled(_)
                | Attributes::WorkflowExecutionCancelRequested(_)
                | Attributes::CompleteWorkflowExecutionFailed(_)
                | Attributes::FailWorkflowExecutionFailed(_)
                | Attributes::CancelWorkflowExecutionFailed(_)
                | Attributes::ContinueAsNewWorkflowExecutionFailed(_)
                | Attributes::DecisionTaskTimedOut(_)
                | Attributes::ActivityTaskCompleted(_)
                | Attributes::ActivityTaskFailed(_)
                | Attributes::ActivityTaskTimedOut(_)
                | Attributes::ActivityTaskCanceled(_)
                | Attributes::ScheduleActivityTaskFailed(_)
                | Attributes::RequestCancelActivityTaskFailed(_)
                | Attributes::TimerFired(_)
                | Attributes::StartTimerFailed(_)
                | Attributes::CancelTimerFailed(_)
                | Attributes::RecordMarkerFailed(_)
                | Attributes::StartChildWorkflowExecutionFailed(_)
                | Attributes::ChildWorkflowExecutionStarted(_)
                | Attributes::ChildWorkflowExecutionCompleted(_)
                | Attributes::ChildWorkflowExecutionFailed(_)
                | Attributes::ChildWorkflowExecutionTimedOut(_)
                | Attributes::ChildWorkflowExecutionCanceled(_)
                | Attributes::ChildWorkflowExecutionTerminated(_)
                | Attributes::SignalExternalWorkflowExecutionFailed(_)
                | Attributes::ExternalWorkflowExecutionSignaled(_)
                | Attributes::RequestCancelExternalWorkflowExecutionFailed(_)
                | Attributes::ExternalWorkflowExecutionCancelRequested(_)
                | Attributes::ScheduleLambdaFunctionFailed(_)
        )
    }

    /// Whether this event closes the execution.
    pub fn closes_execution(&self) -> bool {
        matches!(
            self,
            Attributes::WorkflowExecutionCompleted(_)
                | Attributes::WorkflowExecutionFailed(_)
                | Attributes::WorkflowExecutionTimedOut(_)
                | Attributes::WorkflowExecutionCanceled(_)
                | Attributes::WorkflowExecutionContinuedAsNew(_)
                | Attributes::WorkflowExecutionTerminated(_)
        )
    }
}

/// Removes every `null` member of every object in `value` (SWF leaves absent fields out).
fn drop_nulls(value: &mut Value) {
    match value {
        Value::Object(object) => {
            object.retain(|_, v| !v.is_null());
            object.values_mut().for_each(drop_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

/// One event of every type, with every optional field set, in [`Attributes::EVENT_TYPES`]
/// order, ids dense from 1: the golden sample of the store's format test (its bytes must
/// decode by every later version).
pub fn samples() -> Vec<Event> {
    let workflow_type = WorkflowType {
        name: "order".into(),
        version: "1.0".into(),
    };
    let activity_type = ActivityType {
        name: "charge".into(),
        version: "2".into(),
    };
    let task_list = TaskList {
        name: "deciders".into(),
    };
    let other = WorkflowExecution {
        workflow_id: "other-workflow".into(),
        run_id: "other-run".into(),
    };
    let s = |text: &str| Some(text.to_string());
    let attributes = vec![
        Attributes::WorkflowExecutionStarted(WorkflowExecutionStarted {
            input: s("{\"order\":1}"),
            execution_start_to_close_timeout: s("3600"),
            task_start_to_close_timeout: s("30"),
            child_policy: ChildPolicy::Terminate,
            task_list: task_list.clone(),
            task_priority: s("5"),
            workflow_type: workflow_type.clone(),
            tag_list: Some(vec!["blue".into(), "green".into()]),
            continued_execution_run_id: s("previous-run"),
            parent_workflow_execution: Some(other.clone()),
            parent_initiated_event_id: Some(7),
            lambda_role: s("arn:aws:iam::123456789012:role/lambda"),
        }),
        Attributes::WorkflowExecutionCompleted(WorkflowExecutionCompleted {
            result: s("done"),
            decision_task_completed_event_id: 4,
        }),
        Attributes::WorkflowExecutionFailed(WorkflowExecutionFailed {
            reason: s("bad"),
            details: s("very bad"),
            decision_task_completed_event_id: 4,
        }),
        Attributes::WorkflowExecutionTimedOut(WorkflowExecutionTimedOut {
            timeout_type: WorkflowExecutionTimeoutType::StartToClose,
            child_policy: ChildPolicy::Abandon,
        }),
        Attributes::WorkflowExecutionCanceled(WorkflowExecutionCanceled {
            details: s("asked"),
            decision_task_completed_event_id: 4,
        }),
        Attributes::WorkflowExecutionContinuedAsNew(WorkflowExecutionContinuedAsNew {
            input: s("next"),
            decision_task_completed_event_id: 4,
            new_execution_run_id: "next-run".into(),
            execution_start_to_close_timeout: s("600"),
            task_list: task_list.clone(),
            task_priority: s("-3"),
            task_start_to_close_timeout: s("NONE"),
            child_policy: ChildPolicy::RequestCancel,
            tag_list: Some(vec!["blue".into()]),
            workflow_type: workflow_type.clone(),
            lambda_role: s("role"),
        }),
        Attributes::WorkflowExecutionTerminated(WorkflowExecutionTerminated {
            reason: s("operator"),
            details: s("stop"),
            child_policy: ChildPolicy::Terminate,
            cause: Some(WorkflowExecutionTerminatedCause::OperatorInitiated),
        }),
        Attributes::WorkflowExecutionSignaled(WorkflowExecutionSignaled {
            signal_name: "wake".into(),
            input: s("up"),
            external_workflow_execution: Some(other.clone()),
            external_initiated_event_id: Some(9),
        }),
        Attributes::WorkflowExecutionCancelRequested(WorkflowExecutionCancelRequested {
            external_workflow_execution: Some(other.clone()),
            external_initiated_event_id: Some(9),
            cause: Some(WorkflowExecutionCancelRequestedCause::ChildPolicyApplied),
        }),
        Attributes::CompleteWorkflowExecutionFailed(CompleteWorkflowExecutionFailed {
            cause: CloseDecisionFailedCause::UnhandledDecision,
            decision_task_completed_event_id: 4,
        }),
        Attributes::FailWorkflowExecutionFailed(FailWorkflowExecutionFailed {
            cause: CloseDecisionFailedCause::OperationNotPermitted,
            decision_task_completed_event_id: 4,
        }),
        Attributes::CancelWorkflowExecutionFailed(CancelWorkflowExecutionFailed {
            cause: CloseDecisionFailedCause::UnhandledDecision,
            decision_task_completed_event_id: 4,
        }),
        Attributes::ContinueAsNewWorkflowExecutionFailed(ContinueAsNewWorkflowExecutionFailed {
            cause: ContinueAsNewWorkflowExecutionFailedCause::WorkflowTypeDeprecated,
            decision_task_completed_event_id: 4,
        }),
        Attributes::DecisionTaskScheduled(DecisionTaskScheduled {
            task_list: task_list.clone(),
            task_priority: s("5"),
            start_to_close_timeout: s("30"),
            schedule_to_start_timeout: s("60"),
        }),
        Attributes::DecisionTaskStarted(DecisionTaskStarted {
            identity: s("decider-1"),
            scheduled_event_id: 14,
            token_nonce: [0xA5; 16],
        }),
        Attributes::DecisionTaskCompleted(DecisionTaskCompleted {
            execution_context: s("ctx"),
            scheduled_event_id: 14,
            started_event_id: 15,
            task_list: Some(TaskList {
                name: "other-deciders".into(),
            }),
            task_list_schedule_to_start_timeout: s("120"),
        }),
        Attributes::DecisionTaskTimedOut(DecisionTaskTimedOut {
            timeout_type: DecisionTaskTimeoutType::StartToClose,
            scheduled_event_id: 14,
            started_event_id: 15,
        }),
        Attributes::ActivityTaskScheduled(ActivityTaskScheduled {
            activity_type: activity_type.clone(),
            activity_id: "charge-1".into(),
            input: s("42"),
            control: s("c"),
            schedule_to_start_timeout: s("10"),
            schedule_to_close_timeout: s("100"),
            start_to_close_timeout: s("90"),
            task_list: TaskList {
                name: "workers".into(),
            },
            task_priority: s("7"),
            decision_task_completed_event_id: 16,
            heartbeat_timeout: s("20"),
        }),
        Attributes::ActivityTaskStarted(ActivityTaskStarted {
            identity: s("worker-1"),
            scheduled_event_id: 18,
            token_nonce: [0x5A; 16],
        }),
        Attributes::ActivityTaskCompleted(ActivityTaskCompleted {
            result: s("ok"),
            scheduled_event_id: 18,
            started_event_id: 19,
        }),
        Attributes::ActivityTaskFailed(ActivityTaskFailed {
            reason: s("declined"),
            details: s("card"),
            scheduled_event_id: 18,
            started_event_id: 19,
        }),
        Attributes::ActivityTaskTimedOut(ActivityTaskTimedOut {
            timeout_type: ActivityTaskTimeoutType::Heartbeat,
            scheduled_event_id: 18,
            started_event_id: 19,
            details: s("50%"),
        }),
        Attributes::ActivityTaskCanceled(ActivityTaskCanceled {
            details: s("stopped"),
            scheduled_event_id: 18,
            started_event_id: 19,
            latest_cancel_requested_event_id: Some(24),
        }),
        Attributes::ActivityTaskCancelRequested(ActivityTaskCancelRequested {
            decision_task_completed_event_id: 16,
            activity_id: "charge-1".into(),
        }),
        Attributes::ScheduleActivityTaskFailed(ScheduleActivityTaskFailed {
            activity_type: activity_type.clone(),
            activity_id: "charge-2".into(),
            cause: ScheduleActivityTaskFailedCause::ActivityTypeDoesNotExist,
            decision_task_completed_event_id: 16,
        }),
        Attributes::RequestCancelActivityTaskFailed(RequestCancelActivityTaskFailed {
            activity_id: "charge-9".into(),
            cause: RequestCancelActivityTaskFailedCause::ActivityIdUnknown,
            decision_task_completed_event_id: 16,
        }),
        Attributes::TimerStarted(TimerStarted {
            timer_id: "t1".into(),
            control: s("c"),
            start_to_fire_timeout: "5".into(),
            decision_task_completed_event_id: 16,
        }),
        Attributes::TimerFired(TimerFired {
            timer_id: "t1".into(),
            started_event_id: 27,
        }),
        Attributes::TimerCanceled(TimerCanceled {
            timer_id: "t1".into(),
            started_event_id: 27,
            decision_task_completed_event_id: 16,
        }),
        Attributes::StartTimerFailed(StartTimerFailed {
            timer_id: "t1".into(),
            cause: StartTimerFailedCause::TimerIdAlreadyInUse,
            decision_task_completed_event_id: 16,
        }),
        Attributes::CancelTimerFailed(CancelTimerFailed {
            timer_id: "t9".into(),
            cause: CancelTimerFailedCause::TimerIdUnknown,
            decision_task_completed_event_id: 16,
        }),
        Attributes::MarkerRecorded(MarkerRecorded {
            marker_name: "checkpoint".into(),
            details: s("here"),
            decision_task_completed_event_id: 16,
        }),
        Attributes::RecordMarkerFailed(RecordMarkerFailed {
            marker_name: "checkpoint".into(),
            cause: RecordMarkerFailedCause::OperationNotPermitted,
            decision_task_completed_event_id: 16,
        }),
        Attributes::StartChildWorkflowExecutionInitiated(StartChildWorkflowExecutionInitiated {
            workflow_id: "child".into(),
            workflow_type: workflow_type.clone(),
            control: s("c"),
            input: s("in"),
            execution_start_to_close_timeout: s("60"),
            task_list: task_list.clone(),
            task_priority: s("1"),
            decision_task_completed_event_id: 16,
            child_policy: ChildPolicy::Terminate,
            task_start_to_close_timeout: s("10"),
            tag_list: Some(vec!["kid".into()]),
            lambda_role: s("role"),
        }),
        Attributes::StartChildWorkflowExecutionFailed(StartChildWorkflowExecutionFailed {
            workflow_type: workflow_type.clone(),
            cause: StartChildWorkflowExecutionFailedCause::OperationNotPermitted,
            workflow_id: "child".into(),
            initiated_event_id: 34,
            decision_task_completed_event_id: 16,
            control: s("c"),
        }),
        Attributes::ChildWorkflowExecutionStarted(ChildWorkflowExecutionStarted {
            workflow_execution: other.clone(),
            workflow_type: workflow_type.clone(),
            initiated_event_id: 34,
        }),
        Attributes::ChildWorkflowExecutionCompleted(ChildWorkflowExecutionCompleted {
            workflow_execution: other.clone(),
            workflow_type: workflow_type.clone(),
            result: s("r"),
            initiated_event_id: 34,
            started_event_id: 36,
        }),
        Attributes::ChildWorkflowExecutionFailed(ChildWorkflowExecutionFailed {
            workflow_execution: other.clone(),
            workflow_type: workflow_type.clone(),
            reason: s("why"),
            details: s("what"),
            initiated_event_id: 34,
            started_event_id: 36,
        }),
        Attributes::ChildWorkflowExecutionTimedOut(ChildWorkflowExecutionTimedOut {
            workflow_execution: other.clone(),
            workflow_type: workflow_type.clone(),
            timeout_type: WorkflowExecutionTimeoutType::StartToClose,
            initiated_event_id: 34,
            started_event_id: 36,
        }),
        Attributes::ChildWorkflowExecutionCanceled(ChildWorkflowExecutionCanceled {
            workflow_execution: other.clone(),
            workflow_type: workflow_type.clone(),
            details: s("d"),
            initiated_event_id: 34,
            started_event_id: 36,
        }),
        Attributes::ChildWorkflowExecutionTerminated(ChildWorkflowExecutionTerminated {
            workflow_execution: other.clone(),
            workflow_type: workflow_type.clone(),
            initiated_event_id: 34,
            started_event_id: 36,
        }),
        Attributes::SignalExternalWorkflowExecutionInitiated(
            SignalExternalWorkflowExecutionInitiated {
                workflow_id: "other-workflow".into(),
                run_id: s("other-run"),
                signal_name: "poke".into(),
                input: s("i"),
                decision_task_completed_event_id: 16,
                control: s("c"),
            },
        ),
        Attributes::SignalExternalWorkflowExecutionFailed(SignalExternalWorkflowExecutionFailed {
            workflow_id: "other-workflow".into(),
            run_id: s("other-run"),
            cause: SignalExternalWorkflowExecutionFailedCause::UnknownExternalWorkflowExecution,
            initiated_event_id: 42,
            decision_task_completed_event_id: 16,
            control: s("c"),
        }),
        Attributes::ExternalWorkflowExecutionSignaled(ExternalWorkflowExecutionSignaled {
            workflow_execution: other.clone(),
            initiated_event_id: 42,
        }),
        Attributes::RequestCancelExternalWorkflowExecutionInitiated(
            RequestCancelExternalWorkflowExecutionInitiated {
                workflow_id: "other-workflow".into(),
                run_id: s("other-run"),
                decision_task_completed_event_id: 16,
                control: s("c"),
            },
        ),
        Attributes::RequestCancelExternalWorkflowExecutionFailed(
            RequestCancelExternalWorkflowExecutionFailed {
                workflow_id: "other-workflow".into(),
                run_id: s("other-run"),
                cause:
                    RequestCancelExternalWorkflowExecutionFailedCause::UnknownExternalWorkflowExecution,
                initiated_event_id: 45,
                decision_task_completed_event_id: 16,
                control: s("c"),
            },
        ),
        Attributes::ExternalWorkflowExecutionCancelRequested(
            ExternalWorkflowExecutionCancelRequested {
                workflow_execution: other,
                initiated_event_id: 45,
            },
        ),
        Attributes::ScheduleLambdaFunctionFailed(ScheduleLambdaFunctionFailed {
            id: "fn-1".into(),
            name: "resize".into(),
            cause: ScheduleLambdaFunctionFailedCause::LambdaServiceNotAvailableInRegion,
            decision_task_completed_event_id: 16,
        }),
    ];
    attributes
        .into_iter()
        .enumerate()
        .map(|(index, attributes)| Event {
            event_id: index as u64 + 1,
            timestamp_ms: 1_700_000_000_000 + index as u64 * 1_001,
            attributes,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn attributes_of(event_type: &str) -> Value {
        let event = samples()
            .into_iter()
            .find(|e| e.event_type() == event_type)
            .unwrap_or_else(|| panic!("no sample of {event_type}"));
        let json = event.to_json();
        let key = event.attributes.attributes_key();
        json[key.as_str()].clone()
    }

    #[test]
    fn samples_cover_every_event_type_once_with_dense_ids() {
        let samples = samples();
        let types: Vec<&str> = samples.iter().map(Event::event_type).collect();
        assert_eq!(types, Attributes::EVENT_TYPES);
        for (index, event) in samples.iter().enumerate() {
            assert_eq!(event.event_id, index as u64 + 1);
        }
        // The 31 types of the issue plus the child, external and lambda-failure types.
        assert_eq!(Attributes::EVENT_TYPES.len(), 48);
    }

    #[test]
    fn an_event_has_swf_envelope_fields() {
        let event = Event {
            event_id: 3,
            timestamp_ms: 1_700_000_000_250,
            attributes: Attributes::TimerFired(TimerFired {
                timer_id: "t".into(),
                started_event_id: 2,
            }),
        };
        assert_eq!(
            event.to_json(),
            json!({
                "eventId": 3,
                "eventTimestamp": 1_700_000_000.25,
                "eventType": "TimerFired",
                "timerFiredEventAttributes": {"timerId": "t", "startedEventId": 2}
            })
        );
    }

    #[test]
    fn every_attributes_key_is_lower_camel_of_the_type() {
        for event in samples() {
            let key = event.attributes.attributes_key();
            let json = event.to_json();
            let object = json.as_object().expect("an object");
            assert_eq!(object.len(), 4, "{key}");
            assert!(object.contains_key(&key), "{key}");
            assert!(key.ends_with("EventAttributes"));
            assert!(key.starts_with(|c: char| c.is_ascii_lowercase()));
        }
        assert_eq!(
            attributes_of("ExternalWorkflowExecutionCancelRequested"),
            json!({"workflowExecution": {"workflowId": "other-workflow", "runId": "other-run"},
                   "initiatedEventId": 45})
        );
    }

    #[test]
    fn no_json_holds_null_or_the_token_nonce() {
        fn walk(value: &Value, path: &str) {
            match value {
                Value::Null => panic!("null at {path}"),
                Value::Object(o) => {
                    for (k, v) in o {
                        assert_ne!(k, "tokenNonce", "{path}");
                        walk(v, &format!("{path}.{k}"));
                    }
                }
                Value::Array(a) => a.iter().for_each(|v| walk(v, path)),
                _ => {}
            }
        }
        for event in samples() {
            walk(&event.to_json(), event.event_type());
        }
        let absent = Event {
            event_id: 1,
            timestamp_ms: 0,
            attributes: Attributes::DecisionTaskStarted(DecisionTaskStarted {
                identity: None,
                scheduled_event_id: 1,
                token_nonce: [1; 16],
            }),
        };
        assert_eq!(
            absent.to_json()["decisionTaskStartedEventAttributes"],
            json!({"scheduledEventId": 1})
        );
    }

    #[test]
    fn workflow_execution_events_have_swf_shapes() {
        assert_eq!(
            attributes_of("WorkflowExecutionStarted"),
            json!({
                "input": "{\"order\":1}", "executionStartToCloseTimeout": "3600",
                "taskStartToCloseTimeout": "30", "childPolicy": "TERMINATE",
                "taskList": {"name": "deciders"}, "taskPriority": "5",
                "workflowType": {"name": "order", "version": "1.0"},
                "tagList": ["blue", "green"], "continuedExecutionRunId": "previous-run",
                "parentWorkflowExecution": {"workflowId": "other-workflow", "runId": "other-run"},
                "parentInitiatedEventId": 7,
                "lambdaRole": "arn:aws:iam::123456789012:role/lambda"
            })
        );
        assert_eq!(
            attributes_of("WorkflowExecutionCompleted"),
            json!({"result": "done", "decisionTaskCompletedEventId": 4})
        );
        assert_eq!(
            attributes_of("WorkflowExecutionFailed"),
            json!({"reason": "bad", "details": "very bad", "decisionTaskCompletedEventId": 4})
        );
        assert_eq!(
            attributes_of("WorkflowExecutionTimedOut"),
            json!({"timeoutType": "START_TO_CLOSE", "childPolicy": "ABANDON"})
        );
        assert_eq!(
            attributes_of("WorkflowExecutionCanceled"),
            json!({"details": "asked", "decisionTaskCompletedEventId": 4})
        );
        assert_eq!(
            attributes_of("WorkflowExecutionContinuedAsNew"),
            json!({
                "input": "next", "decisionTaskCompletedEventId": 4,
                "newExecutionRunId": "next-run", "executionStartToCloseTimeout": "600",
                "taskList": {"name": "deciders"}, "taskPriority": "-3",
                "taskStartToCloseTimeout": "NONE", "childPolicy": "REQUEST_CANCEL",
                "tagList": ["blue"], "workflowType": {"name": "order", "version": "1.0"},
                "lambdaRole": "role"
            })
        );
        assert_eq!(
            attributes_of("WorkflowExecutionTerminated"),
            json!({"reason": "operator", "details": "stop", "childPolicy": "TERMINATE",
                   "cause": "OPERATOR_INITIATED"})
        );
        assert_eq!(
            attributes_of("WorkflowExecutionSignaled"),
            json!({"signalName": "wake", "input": "up",
                   "externalWorkflowExecution": {"workflowId": "other-workflow", "runId": "other-run"},
                   "externalInitiatedEventId": 9})
        );
        assert_eq!(
            attributes_of("WorkflowExecutionCancelRequested"),
            json!({"externalWorkflowExecution": {"workflowId": "other-workflow", "runId": "other-run"},
                   "externalInitiatedEventId": 9, "cause": "CHILD_POLICY_APPLIED"})
        );
        for (event_type, cause) in [
            ("CompleteWorkflowExecutionFailed", "UNHANDLED_DECISION"),
            ("FailWorkflowExecutionFailed", "OPERATION_NOT_PERMITTED"),
            ("CancelWorkflowExecutionFailed", "UNHANDLED_DECISION"),
            (
                "ContinueAsNewWorkflowExecutionFailed",
                "WORKFLOW_TYPE_DEPRECATED",
            ),
        ] {
            assert_eq!(
                attributes_of(event_type),
                json!({"cause": cause, "decisionTaskCompletedEventId": 4}),
                "{event_type}"
            );
        }
    }

    #[test]
    fn decision_task_events_have_swf_shapes() {
        assert_eq!(
            attributes_of("DecisionTaskScheduled"),
            json!({"taskList": {"name": "deciders"}, "taskPriority": "5",
                   "startToCloseTimeout": "30", "scheduleToStartTimeout": "60"})
        );
        assert_eq!(
            attributes_of("DecisionTaskStarted"),
            json!({"identity": "decider-1", "scheduledEventId": 14})
        );
        assert_eq!(
            attributes_of("DecisionTaskCompleted"),
            json!({"executionContext": "ctx", "scheduledEventId": 14, "startedEventId": 15,
                   "taskList": {"name": "other-deciders"},
                   "taskListScheduleToStartTimeout": "120"})
        );
        assert_eq!(
            attributes_of("DecisionTaskTimedOut"),
            json!({"timeoutType": "START_TO_CLOSE", "scheduledEventId": 14, "startedEventId": 15})
        );
    }

    #[test]
    fn activity_task_events_have_swf_shapes() {
        assert_eq!(
            attributes_of("ActivityTaskScheduled"),
            json!({
                "activityType": {"name": "charge", "version": "2"}, "activityId": "charge-1",
                "input": "42", "control": "c", "scheduleToStartTimeout": "10",
                "scheduleToCloseTimeout": "100", "startToCloseTimeout": "90",
                "taskList": {"name": "workers"}, "taskPriority": "7",
                "decisionTaskCompletedEventId": 16, "heartbeatTimeout": "20"
            })
        );
        assert_eq!(
            attributes_of("ActivityTaskStarted"),
            json!({"identity": "worker-1", "scheduledEventId": 18})
        );
        assert_eq!(
            attributes_of("ActivityTaskCompleted"),
            json!({"result": "ok", "scheduledEventId": 18, "startedEventId": 19})
        );
        assert_eq!(
            attributes_of("ActivityTaskFailed"),
            json!({"reason": "declined", "details": "card", "scheduledEventId": 18,
                   "startedEventId": 19})
        );
        assert_eq!(
            attributes_of("ActivityTaskTimedOut"),
            json!({"timeoutType": "HEARTBEAT", "scheduledEventId": 18, "startedEventId": 19,
                   "details": "50%"})
        );
        assert_eq!(
            attributes_of("ActivityTaskCanceled"),
            json!({"details": "stopped", "scheduledEventId": 18, "startedEventId": 19,
                   "latestCancelRequestedEventId": 24})
        );
        assert_eq!(
            attributes_of("ActivityTaskCancelRequested"),
            json!({"decisionTaskCompletedEventId": 16, "activityId": "charge-1"})
        );
        assert_eq!(
            attributes_of("ScheduleActivityTaskFailed"),
            json!({"activityType": {"name": "charge", "version": "2"}, "activityId": "charge-2",
                   "cause": "ACTIVITY_TYPE_DOES_NOT_EXIST", "decisionTaskCompletedEventId": 16})
        );
        assert_eq!(
            attributes_of("RequestCancelActivityTaskFailed"),
            json!({"activityId": "charge-9", "cause": "ACTIVITY_ID_UNKNOWN",
                   "decisionTaskCompletedEventId": 16})
        );
        let kinds = [
            (ActivityTaskTimeoutType::StartToClose, "START_TO_CLOSE"),
            (
                ActivityTaskTimeoutType::ScheduleToStart,
                "SCHEDULE_TO_START",
            ),
            (
                ActivityTaskTimeoutType::ScheduleToClose,
                "SCHEDULE_TO_CLOSE",
            ),
            (ActivityTaskTimeoutType::Heartbeat, "HEARTBEAT"),
        ];
        for (kind, name) in kinds {
            assert_eq!(serde_json::to_value(kind).expect("enum"), json!(name));
        }
        assert_eq!(
            serde_json::to_value(DecisionTaskTimeoutType::ScheduleToStart).expect("enum"),
            json!("SCHEDULE_TO_START")
        );
    }

    #[test]
    fn timer_and_marker_events_have_swf_shapes() {
        assert_eq!(
            attributes_of("TimerStarted"),
            json!({"timerId": "t1", "control": "c", "startToFireTimeout": "5",
                   "decisionTaskCompletedEventId": 16})
        );
        assert_eq!(
            attributes_of("TimerFired"),
            json!({"timerId": "t1", "startedEventId": 27})
        );
        assert_eq!(
            attributes_of("TimerCanceled"),
            json!({"timerId": "t1", "startedEventId": 27, "decisionTaskCompletedEventId": 16})
        );
        assert_eq!(
            attributes_of("StartTimerFailed"),
            json!({"timerId": "t1", "cause": "TIMER_ID_ALREADY_IN_USE",
                   "decisionTaskCompletedEventId": 16})
        );
        assert_eq!(
            attributes_of("CancelTimerFailed"),
            json!({"timerId": "t9", "cause": "TIMER_ID_UNKNOWN",
                   "decisionTaskCompletedEventId": 16})
        );
        assert_eq!(
            attributes_of("MarkerRecorded"),
            json!({"markerName": "checkpoint", "details": "here",
                   "decisionTaskCompletedEventId": 16})
        );
        assert_eq!(
            attributes_of("RecordMarkerFailed"),
            json!({"markerName": "checkpoint", "cause": "OPERATION_NOT_PERMITTED",
                   "decisionTaskCompletedEventId": 16})
        );
    }

    #[test]
    fn child_and_external_events_have_swf_shapes() {
        let child = json!({"workflowId": "other-workflow", "runId": "other-run"});
        let wtype = json!({"name": "order", "version": "1.0"});
        assert_eq!(
            attributes_of("StartChildWorkflowExecutionInitiated"),
            json!({
                "workflowId": "child", "workflowType": wtype, "control": "c", "input": "in",
                "executionStartToCloseTimeout": "60", "taskList": {"name": "deciders"},
                "taskPriority": "1", "decisionTaskCompletedEventId": 16,
                "childPolicy": "TERMINATE", "taskStartToCloseTimeout": "10",
                "tagList": ["kid"], "lambdaRole": "role"
            })
        );
        assert_eq!(
            attributes_of("StartChildWorkflowExecutionFailed"),
            json!({"workflowType": wtype, "cause": "OPERATION_NOT_PERMITTED",
                   "workflowId": "child", "initiatedEventId": 34,
                   "decisionTaskCompletedEventId": 16, "control": "c"})
        );
        assert_eq!(
            attributes_of("ChildWorkflowExecutionStarted"),
            json!({"workflowExecution": child, "workflowType": wtype, "initiatedEventId": 34})
        );
        assert_eq!(
            attributes_of("ChildWorkflowExecutionCompleted"),
            json!({"workflowExecution": child, "workflowType": wtype, "result": "r",
                   "initiatedEventId": 34, "startedEventId": 36})
        );
        assert_eq!(
            attributes_of("ChildWorkflowExecutionFailed"),
            json!({"workflowExecution": child, "workflowType": wtype, "reason": "why",
                   "details": "what", "initiatedEventId": 34, "startedEventId": 36})
        );
        assert_eq!(
            attributes_of("ChildWorkflowExecutionTimedOut"),
            json!({"workflowExecution": child, "workflowType": wtype,
                   "timeoutType": "START_TO_CLOSE", "initiatedEventId": 34, "startedEventId": 36})
        );
        assert_eq!(
            attributes_of("ChildWorkflowExecutionCanceled"),
            json!({"workflowExecution": child, "workflowType": wtype, "details": "d",
                   "initiatedEventId": 34, "startedEventId": 36})
        );
        assert_eq!(
            attributes_of("ChildWorkflowExecutionTerminated"),
            json!({"workflowExecution": child, "workflowType": wtype,
                   "initiatedEventId": 34, "startedEventId": 36})
        );
        assert_eq!(
            attributes_of("SignalExternalWorkflowExecutionInitiated"),
            json!({"workflowId": "other-workflow", "runId": "other-run", "signalName": "poke",
                   "input": "i", "decisionTaskCompletedEventId": 16, "control": "c"})
        );
        assert_eq!(
            attributes_of("SignalExternalWorkflowExecutionFailed"),
            json!({"workflowId": "other-workflow", "runId": "other-run",
                   "cause": "UNKNOWN_EXTERNAL_WORKFLOW_EXECUTION", "initiatedEventId": 42,
                   "decisionTaskCompletedEventId": 16, "control": "c"})
        );
        assert_eq!(
            attributes_of("ExternalWorkflowExecutionSignaled"),
            json!({"workflowExecution": child, "initiatedEventId": 42})
        );
        assert_eq!(
            attributes_of("RequestCancelExternalWorkflowExecutionInitiated"),
            json!({"workflowId": "other-workflow", "runId": "other-run",
                   "decisionTaskCompletedEventId": 16, "control": "c"})
        );
        assert_eq!(
            attributes_of("RequestCancelExternalWorkflowExecutionFailed"),
            json!({"workflowId": "other-workflow", "runId": "other-run",
                   "cause": "UNKNOWN_EXTERNAL_WORKFLOW_EXECUTION", "initiatedEventId": 45,
                   "decisionTaskCompletedEventId": 16, "control": "c"})
        );
        assert_eq!(
            attributes_of("ScheduleLambdaFunctionFailed"),
            json!({"id": "fn-1", "name": "resize", "cause": "LAMBDA_SERVICE_NOT_AVAILABLE_IN_REGION",
                   "decisionTaskCompletedEventId": 16})
        );
    }

    #[test]
    fn cause_enums_use_swf_values() {
        let causes = [
            serde_json::to_value(
                ScheduleActivityTaskFailedCause::DefaultScheduleToCloseTimeoutUndefined,
            ),
            serde_json::to_value(ScheduleActivityTaskFailedCause::OpenActivitiesLimitExceeded),
            serde_json::to_value(StartTimerFailedCause::OpenTimersLimitExceeded),
            serde_json::to_value(
                ContinueAsNewWorkflowExecutionFailedCause::DefaultChildPolicyUndefined,
            ),
            serde_json::to_value(StartChildWorkflowExecutionFailedCause::WorkflowAlreadyRunning),
            serde_json::to_value(WorkflowExecutionTerminatedCause::EventLimitExceeded),
        ];
        let names: Vec<Value> = causes.into_iter().map(|c| c.expect("enum")).collect();
        assert_eq!(
            names,
            [
                json!("DEFAULT_SCHEDULE_TO_CLOSE_TIMEOUT_UNDEFINED"),
                json!("OPEN_ACTIVITIES_LIMIT_EXCEEDED"),
                json!("OPEN_TIMERS_LIMIT_EXCEEDED"),
                json!("DEFAULT_CHILD_POLICY_UNDEFINED"),
                json!("WORKFLOW_ALREADY_RUNNING"),
                json!("EVENT_LIMIT_EXCEEDED"),
            ]
        );
    }

    #[test]
    fn decider_wakeups_and_closes() {
        let samples = samples();
        let wakes: Vec<&str> = samples
            .iter()
            .filter(|e| e.attributes.wakes_decider())
            .map(Event::event_type)
            .collect();
        for expected in [
            "ActivityTaskCompleted",
            "ActivityTaskFailed",
            "ActivityTaskTimedOut",
            "ActivityTaskCanceled",
            "TimerFired",
            "WorkflowExecutionSignaled",
            "WorkflowExecutionCancelRequested",
            "DecisionTaskTimedOut",
            "ScheduleActivityTaskFailed",
            "CompleteWorkflowExecutionFailed",
        ] {
            assert!(wakes.contains(&expected), "{expected}");
        }
        for quiet in [
            "WorkflowExecutionStarted",
            "DecisionTaskScheduled",
            "DecisionTaskStarted",
            "DecisionTaskCompleted",
            "ActivityTaskScheduled",
            "ActivityTaskStarted",
            "ActivityTaskCancelRequested",
            "TimerStarted",
            "TimerCanceled",
            "MarkerRecorded",
        ] {
            assert!(!wakes.contains(&quiet), "{quiet}");
        }
        let closes: Vec<&str> = samples
            .iter()
            .filter(|e| e.attributes.closes_execution())
            .map(Event::event_type)
            .collect();
        assert_eq!(
            closes,
            [
                "WorkflowExecutionCompleted",
                "WorkflowExecutionFailed",
                "WorkflowExecutionTimedOut",
                "WorkflowExecutionCanceled",
                "WorkflowExecutionContinuedAsNew",
                "WorkflowExecutionTerminated",
            ]
        );
    }
}
