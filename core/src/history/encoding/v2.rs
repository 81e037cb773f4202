//! v2: the history format version 2, frozen (statelog before a child execution named its Map
//! Run).
//!
//! Version 3 appended `map_run_arn` to [`ExecutionStarted`](crate::history::ExecutionStarted);
//! postcard encodes fields by position, so version 2 bytes are read with these copies of the
//! types whose bytes changed and of every type that holds them, then upcast (`From`): an old
//! start was started by no Map Run. Every other detail type is today's, unchanged. Version 1
//! (`v1`) holds the same `ExecutionStarted` as version 2, and reads it through this copy.
//!
//! Must not: change. These types are the bytes of every version 2 record ever written.

use serde::{Deserialize, Serialize};

use crate::history::{
    json_text, ActivityScheduled, ActivityStarted, ErrorCause, EvaluationFailed, EventId,
    ExecutionRedriven, LambdaFunctionScheduled, MapIteration, MapRunRedriven, MapRunStarted,
    MapStateStarted, Output, Payload, StateEntered, StateExited, TaskError, TaskOutput,
    TaskResource, TaskScheduled, TimerArm,
};

/// `executionStartedEventDetails` as versions 1 and 2 wrote it: no `map_run_arn`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ExecutionStarted {
    #[serde(with = "json_text::shared")]
    input: Payload,
    input_truncated: bool,
    role_arn: String,
    state_machine_alias_arn: Option<String>,
    state_machine_version_arn: Option<String>,
    execution_arn: String,
    state_machine_arn: String,
    input_text: Option<String>,
}

impl From<ExecutionStarted> for crate::history::ExecutionStarted {
    fn from(old: ExecutionStarted) -> Self {
        crate::history::ExecutionStarted {
            input: old.input,
            input_truncated: old.input_truncated,
            role_arn: old.role_arn,
            state_machine_alias_arn: old.state_machine_alias_arn,
            state_machine_version_arn: old.state_machine_version_arn,
            execution_arn: old.execution_arn,
            state_machine_arn: old.state_machine_arn,
            input_text: old.input_text,
            map_run_arn: None,
        }
    }
}

/// Today's `EventDetails::ExecutionStarted` holds its details boxed.
impl From<ExecutionStarted> for Box<crate::history::ExecutionStarted> {
    fn from(old: ExecutionStarted) -> Self {
        Box::new(old.into())
    }
}

crate::history::frozen_event_details! {
    /// The event types of version 2, in their frozen order (the same as today's).
    EventDetails {
        ActivityFailed(ErrorCause),
        ActivityScheduleFailed(ErrorCause),
        ActivityScheduled(ActivityScheduled),
        ActivityStarted(ActivityStarted),
        ActivitySucceeded(Output),
        ActivityTimedOut(ErrorCause),
        ChoiceStateEntered(StateEntered),
        ChoiceStateExited(StateExited),
        EvaluationFailed(EvaluationFailed),
        ExecutionAborted(ErrorCause),
        ExecutionFailed(ErrorCause),
        ExecutionRedriven(ExecutionRedriven),
        ExecutionStarted(ExecutionStarted),
        ExecutionSucceeded(Output),
        ExecutionTimedOut(ErrorCause),
        FailStateEntered(StateEntered),
        LambdaFunctionFailed(ErrorCause),
        LambdaFunctionScheduleFailed(ErrorCause),
        LambdaFunctionScheduled(LambdaFunctionScheduled),
        LambdaFunctionStartFailed(ErrorCause),
        LambdaFunctionStarted,
        LambdaFunctionSucceeded(Output),
        LambdaFunctionTimedOut(ErrorCause),
        MapIterationAborted(MapIteration),
        MapIterationFailed(MapIteration),
        MapIterationStarted(MapIteration),
        MapIterationSucceeded(MapIteration),
        MapRunAborted,
        MapRunFailed(ErrorCause),
        MapRunRedriven(MapRunRedriven),
        MapRunStarted(MapRunStarted),
        MapRunSucceeded,
        MapStateAborted,
        MapStateEntered(StateEntered),
        MapStateExited(StateExited),
        MapStateFailed,
        MapStateStarted(MapStateStarted),
        MapStateSucceeded,
        ParallelStateAborted,
        ParallelStateEntered(StateEntered),
        ParallelStateExited(StateExited),
        ParallelStateFailed,
        ParallelStateStarted,
        ParallelStateSucceeded,
        PassStateEntered(StateEntered),
        PassStateExited(StateExited),
        SucceedStateEntered(StateEntered),
        SucceedStateExited(StateExited),
        TaskFailed(TaskError),
        TaskScheduled(TaskScheduled),
        TaskStarted(TaskResource),
        TaskStartFailed(TaskError),
        TaskStateAborted,
        TaskStateEntered(StateEntered),
        TaskStateExited(StateExited),
        TaskSubmitFailed(TaskError),
        TaskSubmitted(TaskOutput),
        TaskSucceeded(TaskOutput),
        TaskTimedOut(TaskError),
        WaitStateAborted,
        WaitStateEntered(StateEntered),
        WaitStateExited(StateExited),
    }
}

/// One event as version 2 wrote it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct HistoryEvent {
    id: EventId,
    previous_event_id: u32,
    timestamp_ms: u64,
    details: EventDetails,
    scope: Vec<u32>,
    timer: Option<TimerArm>,
}

impl From<HistoryEvent> for crate::history::HistoryEvent {
    fn from(old: HistoryEvent) -> Self {
        crate::history::HistoryEvent {
            id: old.id,
            previous_event_id: old.previous_event_id,
            timestamp_ms: old.timestamp_ms,
            details: old.details.into(),
            scope: old.scope,
            timer: old.timer,
        }
    }
}

/// A batch as version 2 wrote it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct EventBatch {
    execution_arn: String,
    events: Vec<HistoryEvent>,
}

impl From<EventBatch> for super::EventBatch {
    fn from(old: EventBatch) -> Self {
        super::EventBatch {
            execution_arn: old.execution_arn,
            events: old.events.into_iter().map(Into::into).collect(),
        }
    }
}
