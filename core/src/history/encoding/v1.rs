//! v1: the history format version 1, frozen (statelog before workflow variables).
//!
//! Version 2 appended `assigned` to [`StateExited`](crate::history::StateExited); postcard
//! encodes fields by position, so version 1 bytes are read with these copies of the types whose
//! bytes changed and of every type that holds them, then upcast (`From`): an old exited event
//! assigned no variable. Every other detail type is today's, unchanged, but `ExecutionStarted`,
//! which version 3 changed: version 1 holds version 2's (`v2::ExecutionStarted`).
//!
//! Must not: change. These types are the bytes of every version 1 record ever written.

use serde::{Deserialize, Serialize};

use super::v2::ExecutionStarted;
use crate::history::{
    ActivityScheduled, ActivityStarted, ErrorCause, EvaluationFailed, EventId, ExecutionRedriven,
    LambdaFunctionScheduled, MapIteration, MapRunRedriven, MapRunStarted, MapStateStarted, Output,
    Payload, StateEntered, TaskError, TaskOutput, TaskResource, TaskScheduled, TimerArm,
};

/// `stateExitedEventDetails` as version 1 wrote it: no `assigned`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct StateExited {
    name: String,
    #[serde(with = "crate::history::json_text")]
    output: Payload,
    output_truncated: bool,
}

impl From<StateExited> for crate::history::StateExited {
    fn from(old: StateExited) -> Self {
        crate::history::StateExited {
            name: old.name.into(),
            output: old.output,
            output_truncated: old.output_truncated,
            assigned: None,
        }
    }
}

crate::history::frozen_event_details! {
    /// The event types of version 1, in their frozen order (the same as today's).
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

/// One event as version 1 wrote it.
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

/// A batch as version 1 wrote it.
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
