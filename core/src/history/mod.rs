//! history: the execution history events (AWS names and detail shapes), their ids and their
//! versioned encoding. The source of truth for replay.
//!
//! Owns: [`HistoryEvent`], [`EventDetails`] (all 62 AWS `HistoryEventType`s, even those the
//! interpreter does not emit yet), the detail structs, the compact WAL encoding ([`encoding`]) and
//! the AWS `GetExecutionHistory` JSON shape ([`aws_json`]).
//!
//! Invariants:
//! - Event ids are dense from 1 within one execution; `previous_event_id < id`.
//! - The order of the variants of [`EventDetails`] and the fields of every detail struct are part
//!   of the WAL format (postcard encodes variant indexes and fields by position): never reorder,
//!   only append, and bump [`encoding::FORMAT_VERSION`] for anything else (the steps are in
//!   [`encoding`]; `statelog-store`'s `formats.rs` enforces it).
//! - Payloads (input, output, parameters) are held as `serde_json::Value` in memory (state
//!   inputs and outputs and execution input/output as a shared [`Payload`]) and stored as
//!   compact JSON text, exactly the text AWS returns. Stored text reads back at any nesting
//!   depth ([`depth`]); the interpreter keeps what it produces within
//!   [`crate::limits::PAYLOAD_JSON_DEPTH_MAX`].
//!
//! Must not: do I/O, read a clock, or know about the WAL; `store` does that.

pub mod aws_json;
pub mod depth;
pub mod encoding;
#[cfg(any(test, feature = "test-support"))]
pub mod samples;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Errors of the history layer (decoding records, checking event sequences).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A record starts with a format version older than any this build reads (version 0 was
    /// never written: such a byte is damage).
    #[error(
        "history record has format version {found}, which this build does not read (it reads versions {oldest} to {supported})",
        oldest = encoding::OLDEST_READ_VERSION
    )]
    UnsupportedVersion {
        /// The version byte found in the record.
        found: u8,
        /// The newest version this build reads (the one it writes).
        supported: u8,
    },
    /// A record written by a newer statelog: its format version is past the newest this build
    /// knows. Never read as today's format (it would misread).
    #[error(
        "history record has format version {found}, written by a newer statelog: this build reads versions up to {newest}"
    )]
    NewerVersion {
        /// The version byte found in the record.
        found: u8,
        /// The newest version this build reads (the one it writes).
        newest: u8,
    },
    /// A record is empty (no version byte).
    #[error("history record is empty (no format version byte)")]
    EmptyRecord,
    /// The record bytes do not decode as an event batch.
    #[error("history record does not decode: {cause}")]
    Decode {
        /// What postcard reported.
        cause: postcard::Error,
    },
    /// An event batch could not be encoded.
    #[error("history record does not encode: {cause}")]
    Encode {
        /// What postcard reported.
        cause: postcard::Error,
    },
    /// Bytes left over after the batch: the record is longer than its content.
    #[error("history record has {trailing_bytes} trailing bytes after the event batch")]
    TrailingBytes {
        /// How many bytes follow the decoded batch.
        trailing_bytes: usize,
    },
    /// Event ids are not dense from 1, or a `previousEventId` points forward.
    #[error("event sequence broken at position {position}: {reason}")]
    BadSequence {
        /// 0-based index of the offending event in the checked slice.
        position: usize,
        /// What is wrong.
        reason: SequenceBreak,
    },
}

/// How a run of events fails [`check_sequence`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SequenceBreak {
    /// The next id would not fit in a `u32`.
    #[error("event id overflows u32")]
    IdOverflow,
    /// An id that does not follow the one before it.
    #[error("id is {id} but {expected} was expected")]
    NotDense {
        /// The event's id.
        id: u32,
        /// The id that follows the previous one.
        expected: u32,
    },
    /// A `previousEventId` at or after the event's own id.
    #[error("previousEventId {previous_event_id} is not before id {id}")]
    PreviousNotBefore {
        /// The event's `previousEventId`.
        previous_event_id: u32,
        /// The event's id.
        id: u32,
    },
}

/// The id of an event within its execution: dense, 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct EventId(pub u32);

impl EventId {
    /// The id as a plain number.
    pub fn get(self) -> u32 {
        self.0
    }
}

impl std::fmt::Display for EventId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// One event of an execution's history.
///
/// `scope` and `timer` are statelog's own bookkeeping that AWS does not show: they are
/// stored in the WAL (replay needs them) and never rendered in the AWS JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryEvent {
    /// Dense, 1-based id within the execution.
    pub id: EventId,
    /// The event this one follows, as AWS numbers it (0 for none; see the conformance quirks).
    pub previous_event_id: u32,
    /// When the event happened, in milliseconds since the Unix epoch.
    pub timestamp_ms: u64,
    /// The event type and its AWS details.
    pub details: EventDetails,
    /// Where in the execution the event happened: empty at the top level; inside a Parallel
    /// branch or a Map iteration, the scope of the Parallel/Map state followed by the branch or
    /// iteration index.
    pub scope: Vec<u32>,
    /// The timer this event arms, if any (a Wait, a retry backoff, a task timeout, the execution
    /// timeout). Its due time is recorded, never recomputed, so a replay reproduces drawn jitter
    /// exactly. The timer's id is this event's id.
    pub timer: Option<TimerArm>,
}

/// A timer armed by an event (statelog bookkeeping, not shown in the AWS JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimerArm {
    /// When the timer is due, in milliseconds since the epoch.
    pub due_ms: u64,
    /// The scope of the state the timer belongs to (see [`HistoryEvent::scope`]); it may differ
    /// from the arming event's scope (a Parallel's retry is armed by its failed branch's event).
    pub owner: Vec<u32>,
    /// What the timer is for.
    pub purpose: TimerPurpose,
}

/// What a [`TimerArm`] is for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TimerPurpose {
    /// A Wait state's wait.
    Wait,
    /// The backoff before retrying the owner state after `error`.
    RetryBackoff {
        /// The error that was retried (counts against the retrier that matches it).
        error: String,
    },
    /// The owner task's `TimeoutSeconds`.
    TaskTimeout,
    /// The execution's `TimeoutSeconds` or open-time limit.
    ExecutionTimeout,
}

/// A recorded state machine ARN, split: an execution started as `stateMachineArn#Case` (a test
/// case of a mock configuration) records `ExecutionStarted.state_machine_arn` with the `#Case`
/// suffix, which no answer shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestCaseArn<'a> {
    /// The state machine's ARN (or name), without the suffix.
    pub machine_arn: &'a str,
    /// The test case, when the execution runs one.
    pub test_case: Option<&'a str>,
}

/// Splits `state_machine_arn` at its first `#` (never part of a state machine name).
pub fn split_test_case(state_machine_arn: &str) -> TestCaseArn<'_> {
    match state_machine_arn.split_once('#') {
        Some((machine_arn, test_case)) => TestCaseArn {
            machine_arn,
            test_case: Some(test_case),
        },
        None => TestCaseArn {
            machine_arn: state_machine_arn,
            test_case: None,
        },
    }
}

/// Checks that `events` continue a history whose last id is `last_id`: ids dense and increasing,
/// every `previous_event_id` pointing backwards.
pub fn check_sequence(last_id: u32, events: &[HistoryEvent]) -> Result<(), Error> {
    let mut expected = last_id;
    for (position, event) in events.iter().enumerate() {
        expected = expected.checked_add(1).ok_or(Error::BadSequence {
            position,
            reason: SequenceBreak::IdOverflow,
        })?;
        if event.id.0 != expected {
            return Err(Error::BadSequence {
                position,
                reason: SequenceBreak::NotDense {
                    id: event.id.0,
                    expected,
                },
            });
        }
        if event.previous_event_id >= event.id.0 {
            return Err(Error::BadSequence {
                position,
                reason: SequenceBreak::PreviousNotBefore {
                    previous_event_id: event.previous_event_id,
                    id: event.id.0,
                },
            });
        }
    }
    Ok(())
}

/// `error` and `cause` of a failure event; AWS omits either when absent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorCause {
    /// The error name (e.g. `States.Timeout`).
    pub error: Option<String>,
    /// The human cause.
    pub cause: Option<String>,
}

impl ErrorCause {
    /// Both fields present.
    pub fn new(error: impl Into<String>, cause: impl Into<String>) -> Self {
        Self {
            error: Some(error.into()),
            cause: Some(cause.into()),
        }
    }
}

/// A JSON payload that events and the interpreter's state share instead of copying: a state
/// that passes its input on (a Pass or Choice without paths) hands the same payload to its
/// exited event, the next entered event and the next state, so it costs no copy at all. Its
/// stored form is the value's compact JSON text, as for any payload (`json_text`).
pub type Payload = std::sync::Arc<Value>;

/// A state's name in an event: kept inline up to 24 bytes (most names), so that naming the state
/// in its entered and exited events allocates nothing; stored and encoded as a string.
pub type StateName = compact_str::CompactString;

/// `stateEnteredEventDetails`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateEntered {
    /// The state's name.
    pub name: StateName,
    /// The state's raw input.
    #[serde(with = "json_text::shared")]
    pub input: Payload,
    /// `inputDetails.truncated`.
    pub input_truncated: bool,
}

/// `stateExitedEventDetails`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateExited {
    /// The state's name.
    pub name: StateName,
    /// The state's output.
    #[serde(with = "json_text::shared")]
    pub output: Payload,
    /// `outputDetails.truncated`.
    pub output_truncated: bool,
    /// `assignedVariables` and `assignedVariablesDetails`: what the state's (or the taken
    /// Choice rule's or Catcher's) `Assign` set; `None` when it has none (history format 2;
    /// every version 1 record reads as `None`).
    pub assigned: Option<AssignedVariables>,
}

/// The variables a state assigned as it exited (`assignedVariables`), as AWS shows them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssignedVariables {
    /// Each variable's new value as compact JSON text, by name.
    pub variables: std::collections::BTreeMap<String, String>,
    /// `assignedVariablesDetails.truncated`.
    pub truncated: bool,
}

/// `executionStartedEventDetails`, plus the execution's identity (statelog's, not rendered).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecutionStarted {
    /// The execution input.
    #[serde(with = "json_text::shared")]
    pub input: Payload,
    /// `inputDetails.truncated`.
    pub input_truncated: bool,
    /// The role the execution runs as.
    pub role_arn: String,
    /// `stateMachineAliasArn`, when started through an alias.
    pub state_machine_alias_arn: Option<String>,
    /// `stateMachineVersionArn`, when started through a version.
    pub state_machine_version_arn: Option<String>,
    /// The execution's ARN (statelog bookkeeping: feeds `$$.Execution.Id`).
    pub execution_arn: String,
    /// The state machine's ARN (statelog bookkeeping: feeds `$$.StateMachine.Id`).
    pub state_machine_arn: String,
    /// The input exactly as the caller wrote it, when that differs from its compact form. AWS
    /// shows a passed-through input in its original text (`[1, 2]` stays `[1, 2]`), so the
    /// renderer uses it wherever the value appears unchanged.
    pub input_text: Option<String>,
    /// The Map Run that started it, for a Distributed Map's child (statelog bookkeeping:
    /// `DescribeExecution.mapRunArn`; AWS's event shows nothing of it). History format 3.
    pub map_run_arn: Option<String>,
}

/// An `output` with its `outputDetails` (`executionSucceededEventDetails`,
/// `activitySucceededEventDetails`, `lambdaFunctionSucceededEventDetails`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Output {
    /// The output.
    #[serde(with = "json_text::shared")]
    pub output: Payload,
    /// `outputDetails.truncated`.
    pub output_truncated: bool,
}

/// `executionRedrivenEventDetails`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutionRedriven {
    /// How many times the execution has been redriven, this one included.
    pub redrive_count: u32,
}

/// `activityScheduledEventDetails`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActivityScheduled {
    /// The activity ARN.
    pub resource: String,
    /// The effective input handed to the worker.
    #[serde(with = "json_text")]
    pub input: Value,
    /// `inputDetails.truncated`.
    pub input_truncated: bool,
    /// `timeoutInSeconds`.
    pub timeout_in_seconds: Option<u64>,
    /// `heartbeatInSeconds`.
    pub heartbeat_in_seconds: Option<u64>,
    /// The task token of this attempt (statelog bookkeeping, as in `TaskScheduled`; not
    /// rendered).
    pub task_token: Option<String>,
    /// The task list the task was put in (statelog's `TaskList` extension; `None` is the
    /// activity's default list; not rendered).
    pub task_list: Option<String>,
}

/// `activityStartedEventDetails`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivityStarted {
    /// The name the polling worker gave.
    pub worker_name: Option<String>,
}

/// `evaluationFailedEventDetails`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvaluationFailed {
    /// The error name.
    pub error: Option<String>,
    /// The human cause.
    pub cause: Option<String>,
    /// Where in the state the evaluation failed.
    pub location: Option<String>,
    /// The state's name.
    pub state: String,
}

/// `lambdaFunctionScheduledEventDetails`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LambdaFunctionScheduled {
    /// The function ARN.
    pub resource: String,
    /// The effective input.
    #[serde(with = "json_text")]
    pub input: Value,
    /// `inputDetails.truncated`.
    pub input_truncated: bool,
    /// `timeoutInSeconds`.
    pub timeout_in_seconds: Option<u64>,
    /// `taskCredentials.roleArn`.
    pub task_credentials_role_arn: Option<String>,
}

/// `mapIteration{Started,Succeeded,Failed,Aborted}EventDetails`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapIteration {
    /// The Map state's name.
    pub name: String,
    /// The iteration's 0-based index.
    pub index: u32,
}

/// `mapRunStartedEventDetails`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapRunStarted {
    /// The Map Run's ARN.
    pub map_run_arn: String,
}

/// `mapRunRedrivenEventDetails`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapRunRedriven {
    /// The Map Run's ARN.
    pub map_run_arn: String,
    /// How many times the Map Run has been redriven.
    pub redrive_count: u32,
}

/// `mapStateStartedEventDetails`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapStateStarted {
    /// How many items the Map iterates over.
    pub length: u32,
}

/// `taskScheduledEventDetails`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskScheduled {
    /// The service name (`resourceType`, e.g. `lambda`, `sns`, or `statelog` for our own).
    pub resource_type: String,
    /// The action (`resource`, e.g. `invoke`, `publish`, `invoke.waitForTaskToken`).
    pub resource: String,
    /// The region named in the ARN (may be empty).
    pub region: String,
    /// The effective parameters handed to the integration.
    #[serde(with = "json_text")]
    pub parameters: Value,
    /// `timeoutInSeconds`, when the state sets one.
    pub timeout_in_seconds: Option<u64>,
    /// `heartbeatInSeconds`, when the state sets one.
    pub heartbeat_in_seconds: Option<u64>,
    /// `taskCredentials.roleArn`.
    pub task_credentials_role_arn: Option<String>,
    /// The Task's `Resource` ARN as written (statelog bookkeeping: names the integration to
    /// call on recovery; not rendered).
    pub resource_arn: String,
    /// `.waitForTaskToken` only: the task token of this attempt (statelog bookkeeping, so the
    /// token survives a restart and a late answer can be told from a forged one; not rendered).
    pub task_token: Option<String>,
}

/// `taskStartedEventDetails`: which integration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskResource {
    /// `resourceType`.
    pub resource_type: String,
    /// `resource`.
    pub resource: String,
}

/// `task{Failed,StartFailed,SubmitFailed,TimedOut}EventDetails`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskError {
    /// `resourceType`.
    pub resource_type: String,
    /// `resource`.
    pub resource: String,
    /// The error name.
    pub error: Option<String>,
    /// The human cause.
    pub cause: Option<String>,
}

/// `task{Succeeded,Submitted}EventDetails`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskOutput {
    /// `resourceType`.
    pub resource_type: String,
    /// `resource`.
    pub resource: String,
    /// The integration's result.
    #[serde(with = "json_text")]
    pub output: Value,
    /// `outputDetails.truncated`.
    pub output_truncated: bool,
}

/// Declares a frozen copy of [`EventDetails`] as an older history format version wrote it, and
/// its upcast to today's type: every variant converts with `From`, the identity for detail
/// types that did not change (`encoding::decode_body` uses it; `docs/wal-format.md`, "Adding a
/// version"). A module uses it by path once it is re-exported after this definition with
/// `pub(crate) use frozen_event_details;`.
macro_rules! frozen_event_details {
    ($(#[$meta:meta])* $name:ident { $( $variant:ident $( ($ty:ty) )? ),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        pub(crate) enum $name {
            $( #[allow(missing_docs)] $variant $( ($ty) )? ),*
        }

        impl From<$name> for $crate::history::EventDetails {
            fn from(old: $name) -> Self {
                match old {
                    $( $crate::history::frozen_event_details!(@pat $name $variant details $( ($ty) )?)
                        => $crate::history::frozen_event_details!(@new $variant details $( ($ty) )?) ),*
                }
            }
        }
    };
    (@pat $name:ident $variant:ident $d:ident ($ty:ty)) => { $name::$variant($d) };
    (@pat $name:ident $variant:ident $d:ident) => { $name::$variant };
    (@new $variant:ident $d:ident ($ty:ty)) => {
        $crate::history::EventDetails::$variant($d.into())
    };
    (@new $variant:ident $d:ident) => { $crate::history::EventDetails::$variant };
}
pub(crate) use frozen_event_details;

macro_rules! event_details {
    ($( $(#[$doc:meta])* $variant:ident $( ($ty:ty) )? ),* $(,)?) => {
        /// The type of an event and its AWS details: one variant per AWS `HistoryEventType`.
        ///
        /// WAL format: the variant order is frozen. A new variant goes at the end and bumps
        /// [`encoding::FORMAT_VERSION`] (so an older build refuses it by version).
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        pub enum EventDetails {
            $( $(#[$doc])* $variant $( ($ty) )? ),*
        }

        impl EventDetails {
            /// The AWS event type name (`"PassStateEntered"`).
            pub fn type_name(&self) -> &'static str {
                match self {
                    $( event_details!(@pat $variant $( ($ty) )?) => stringify!($variant) ),*
                }
            }

            /// Every AWS event type name, in the frozen variant order.
            pub const TYPE_NAMES: &'static [&'static str] = &[ $( stringify!($variant) ),* ];

            /// One value of every variant, in variant order (for the format tests; behind the
            /// `test-support` feature).
            #[cfg(any(test, feature = "test-support"))]
            pub fn samples() -> Vec<EventDetails> {
                vec![ $( event_details!(@sample $variant $( ($ty) )?) ),* ]
            }
        }

        #[cfg(test)]
        frozen_event_details! {
            /// Today's variants frozen as an older version would be, to test the upcast.
            FrozenToday { $( $variant $( ($ty) )? ),* }
        }
    };
    (@pat $variant:ident ($ty:ty)) => { EventDetails::$variant(_) };
    (@pat $variant:ident) => { EventDetails::$variant };
    (@sample $variant:ident ($ty:ty)) => {
        EventDetails::$variant(<$ty as samples::Sample>::sample())
    };
    (@sample $variant:ident) => { EventDetails::$variant };
}

// Details larger than `StateExited`'s are boxed, so that every event (a state's entry and exit
// above all) is 176 bytes instead of 344: a decision moves each of its events several times
// (issue 16: those moves were about 6% of a Pass-chain start's instructions). A box encodes as
// its contents: the log format does not change.
event_details! {
    /// An activity task failed.
    ActivityFailed(ErrorCause),
    /// An activity could not be scheduled.
    ActivityScheduleFailed(ErrorCause),
    /// An activity task was put on its task list.
    ActivityScheduled(Box<ActivityScheduled>),
    /// A worker claimed the activity task.
    ActivityStarted(ActivityStarted),
    /// An activity task succeeded.
    ActivitySucceeded(Output),
    /// An activity task timed out.
    ActivityTimedOut(ErrorCause),
    /// A Choice state was entered.
    ChoiceStateEntered(StateEntered),
    /// A Choice state was left.
    ChoiceStateExited(StateExited),
    /// A JSONata or variable evaluation failed.
    EvaluationFailed(Box<EvaluationFailed>),
    /// The execution was stopped.
    ExecutionAborted(ErrorCause),
    /// The execution failed.
    ExecutionFailed(ErrorCause),
    /// The execution redriven after a failure.
    ExecutionRedriven(ExecutionRedriven),
    /// The execution started.
    ExecutionStarted(Box<ExecutionStarted>),
    /// The execution succeeded.
    ExecutionSucceeded(Output),
    /// The execution timed out.
    ExecutionTimedOut(ErrorCause),
    /// A Fail state was entered (it has no exit).
    FailStateEntered(StateEntered),
    /// A Lambda function (legacy resource form) failed.
    LambdaFunctionFailed(ErrorCause),
    /// A Lambda function could not be scheduled.
    LambdaFunctionScheduleFailed(ErrorCause),
    /// A Lambda function was scheduled.
    LambdaFunctionScheduled(Box<LambdaFunctionScheduled>),
    /// A Lambda function could not be started.
    LambdaFunctionStartFailed(ErrorCause),
    /// A Lambda function started.
    LambdaFunctionStarted,
    /// A Lambda function succeeded.
    LambdaFunctionSucceeded(Output),
    /// A Lambda function timed out.
    LambdaFunctionTimedOut(ErrorCause),
    /// A Map iteration was aborted.
    MapIterationAborted(MapIteration),
    /// A Map iteration failed.
    MapIterationFailed(MapIteration),
    /// A Map iteration started.
    MapIterationStarted(MapIteration),
    /// A Map iteration succeeded.
    MapIterationSucceeded(MapIteration),
    /// A Map Run (distributed Map) was aborted.
    MapRunAborted,
    /// A Map Run failed.
    MapRunFailed(ErrorCause),
    /// A Map Run was redriven.
    MapRunRedriven(MapRunRedriven),
    /// A Map Run started.
    MapRunStarted(MapRunStarted),
    /// A Map Run succeeded.
    MapRunSucceeded,
    /// A Map state was aborted.
    MapStateAborted,
    /// A Map state was entered.
    MapStateEntered(StateEntered),
    /// A Map state was left.
    MapStateExited(StateExited),
    /// A Map state failed.
    MapStateFailed,
    /// A Map state started its iterations.
    MapStateStarted(MapStateStarted),
    /// All iterations of a Map state succeeded.
    MapStateSucceeded,
    /// A Parallel state was aborted.
    ParallelStateAborted,
    /// A Parallel state was entered.
    ParallelStateEntered(StateEntered),
    /// A Parallel state was left.
    ParallelStateExited(StateExited),
    /// A Parallel state failed.
    ParallelStateFailed,
    /// A Parallel state started its branches.
    ParallelStateStarted,
    /// All branches of a Parallel state succeeded.
    ParallelStateSucceeded,
    /// A Pass state was entered.
    PassStateEntered(StateEntered),
    /// A Pass state was left.
    PassStateExited(StateExited),
    /// A Succeed state was entered.
    SucceedStateEntered(StateEntered),
    /// A Succeed state was left.
    SucceedStateExited(StateExited),
    /// A task failed.
    TaskFailed(Box<TaskError>),
    /// A task was scheduled.
    TaskScheduled(Box<TaskScheduled>),
    /// A task started.
    TaskStarted(TaskResource),
    /// A task failed to start.
    TaskStartFailed(Box<TaskError>),
    /// A Task state was aborted.
    TaskStateAborted,
    /// A Task state was entered.
    TaskStateEntered(StateEntered),
    /// A Task state was left.
    TaskStateExited(StateExited),
    /// A task could not be submitted.
    TaskSubmitFailed(Box<TaskError>),
    /// A task (`.sync`) was submitted.
    TaskSubmitted(Box<TaskOutput>),
    /// A task succeeded.
    TaskSucceeded(Box<TaskOutput>),
    /// A task timed out.
    TaskTimedOut(Box<TaskError>),
    /// A Wait state was aborted.
    WaitStateAborted,
    /// A Wait state was entered.
    WaitStateEntered(StateEntered),
    /// A Wait state was left.
    WaitStateExited(StateExited),
}

impl EventDetails {
    /// True for the four events that close an execution.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            EventDetails::ExecutionSucceeded(_)
                | EventDetails::ExecutionFailed(_)
                | EventDetails::ExecutionAborted(_)
                | EventDetails::ExecutionTimedOut(_)
        )
    }

    /// The JSON payload the event carries (an input, output, parameters or result), if any:
    /// every event carries at most one.
    pub fn payload(&self) -> Option<&Value> {
        match self {
            EventDetails::ActivityScheduled(d) => Some(&d.input),
            EventDetails::LambdaFunctionScheduled(d) => Some(&d.input),
            EventDetails::TaskScheduled(d) => Some(&d.parameters),
            EventDetails::ExecutionStarted(d) => Some(&d.input),
            EventDetails::ActivitySucceeded(d)
            | EventDetails::ExecutionSucceeded(d)
            | EventDetails::LambdaFunctionSucceeded(d) => Some(&d.output),
            EventDetails::TaskSubmitted(d) | EventDetails::TaskSucceeded(d) => Some(&d.output),
            other => other
                .state_entered()
                .map(|d| &*d.input)
                .or_else(|| other.state_exited().map(|d| &*d.output)),
        }
    }

    /// The `stateEnteredEventDetails` of a `*StateEntered` event.
    pub fn state_entered(&self) -> Option<&StateEntered> {
        match self {
            EventDetails::ChoiceStateEntered(d)
            | EventDetails::FailStateEntered(d)
            | EventDetails::MapStateEntered(d)
            | EventDetails::ParallelStateEntered(d)
            | EventDetails::PassStateEntered(d)
            | EventDetails::SucceedStateEntered(d)
            | EventDetails::TaskStateEntered(d)
            | EventDetails::WaitStateEntered(d) => Some(d),
            _ => None,
        }
    }

    /// The `stateExitedEventDetails` of a `*StateExited` event.
    pub fn state_exited(&self) -> Option<&StateExited> {
        match self {
            EventDetails::ChoiceStateExited(d)
            | EventDetails::MapStateExited(d)
            | EventDetails::ParallelStateExited(d)
            | EventDetails::PassStateExited(d)
            | EventDetails::SucceedStateExited(d)
            | EventDetails::TaskStateExited(d)
            | EventDetails::WaitStateExited(d) => Some(d),
            _ => None,
        }
    }
}

/// Stores a JSON value as its compact text (the form AWS returns), so the binary format does not
/// depend on a self-describing serde data model.
mod json_text {
    use serde::{Deserializer, Serializer};
    use serde_json::Value;

    use std::borrow::Borrow;
    use std::cell::RefCell;

    /// A scratch buffer kept this big at most between uses: the common payload is small, and
    /// a thread that once wrote a 256 KiB payload must not hold that much for ever.
    const SCRATCH_KEPT_BYTES_MAX: usize = 16 * 1024;

    thread_local! {
        /// Reused text buffer: encoding a payload then costs no allocation.
        static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    }

    /// Writes `value` (a `Value` or a shared [`super::Payload`]) as its compact JSON text.
    pub fn serialize<S: Serializer, V: Borrow<Value>>(
        value: &V,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let value = value.borrow();
        SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
            Ok(mut buffer) => {
                buffer.clear();
                serde_json::to_writer(&mut *buffer, value).map_err(serde::ser::Error::custom)?;
                let result = match std::str::from_utf8(&buffer) {
                    Ok(text) => serializer.serialize_str(text),
                    Err(e) => Err(serde::ser::Error::custom(e)),
                };
                if buffer.capacity() > SCRATCH_KEPT_BYTES_MAX {
                    *buffer = Vec::new();
                }
                result
            }
            // Re-entered (cannot happen with postcard): fall back to a fresh string.
            Err(_) => {
                let text = serde_json::to_string(value).map_err(serde::ser::Error::custom)?;
                serializer.serialize_str(&text)
            }
        })
    }

    /// [`super::Payload`] fields: the same stored text as [`serialize`] writes, remembered for
    /// the few small payloads last written on this thread, so a payload that several events of
    /// a batch share (a Pass or Choice hands its input on; a 10-state chain wrote the same text
    /// 22 times) is rendered once. A remembered entry holds its payload, so the pointer it is
    /// found by cannot name another value while it is kept; what is kept is bounded
    /// (`REMEMBERED_COUNT_MAX` payloads of at most `REMEMBERED_TEXT_BYTES_MAX` bytes each).
    pub mod shared {
        use serde::{Deserializer, Serializer};
        use std::cell::RefCell;
        use std::collections::VecDeque;
        use std::sync::Arc;

        use crate::history::Payload;

        /// Payloads remembered per thread.
        const REMEMBERED_COUNT_MAX: usize = 4;
        /// The longest text remembered: a larger payload is rendered each time, as before.
        const REMEMBERED_TEXT_BYTES_MAX: usize = 4 * 1024;

        /// The payloads last rendered on this thread and their texts, oldest first.
        struct Remembered {
            entries: VecDeque<(Payload, String)>,
        }

        impl Remembered {
            fn text_of(&self, payload: &Payload) -> Option<&str> {
                self.entries
                    .iter()
                    .find(|(kept, _)| Arc::ptr_eq(kept, payload))
                    .map(|(_, text)| text.as_str())
            }

            /// A buffer to render into: when full, the oldest entry is forgotten and its text's
            /// buffer reused.
            fn buffer(&mut self) -> Vec<u8> {
                if self.entries.len() < REMEMBERED_COUNT_MAX {
                    return Vec::new();
                }
                let mut bytes = self
                    .entries
                    .pop_front()
                    .map(|(_, text)| text.into_bytes())
                    .unwrap_or_default();
                bytes.clear();
                bytes
            }
        }

        thread_local! {
            static REMEMBERED: RefCell<Remembered> = const {
                RefCell::new(Remembered { entries: VecDeque::new() })
            };
        }

        /// Writes `payload` as its compact JSON text, rendered once while it is remembered.
        pub fn serialize<S: Serializer>(
            payload: &Payload,
            serializer: S,
        ) -> Result<S::Ok, S::Error> {
            REMEMBERED.with(|cell| {
                let Ok(mut remembered) = cell.try_borrow_mut() else {
                    return super::serialize(payload, serializer);
                };
                if let Some(text) = remembered.text_of(payload) {
                    return serializer.serialize_str(text);
                }
                let mut bytes = remembered.buffer();
                serde_json::to_writer(&mut bytes, &**payload).map_err(serde::ser::Error::custom)?;
                let text = String::from_utf8(bytes).map_err(serde::ser::Error::custom)?;
                let result = serializer.serialize_str(&text);
                if result.is_ok() && text.len() <= REMEMBERED_TEXT_BYTES_MAX {
                    remembered.entries.push_back((payload.clone(), text));
                }
                result
            })
        }

        /// Reads a payload written by [`serialize`] (the same text as any payload).
        pub fn deserialize<'de, D: Deserializer<'de>>(
            deserializer: D,
        ) -> Result<Payload, D::Error> {
            super::deserialize(deserializer)
        }
    }

    thread_local! {
        /// Set while [`skimming`] runs: payloads are stepped over, not parsed.
        static SKIMMING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    /// Runs `decode` with every payload it reads stepped over (read as `null`, its text not
    /// parsed): for events that are decoded only to reach the ones after them.
    pub(crate) fn skimming<T>(decode: impl FnOnce() -> T) -> T {
        struct Reset(bool);
        impl Drop for Reset {
            fn drop(&mut self) {
                SKIMMING.with(|flag| flag.set(self.0));
            }
        }
        let _reset = Reset(SKIMMING.with(|flag| flag.replace(true)));
        decode()
    }

    /// Reads a payload written by [`serialize`]: its text is parsed where it lies (borrowed
    /// from the record when the format allows), without a copy.
    pub fn deserialize<'de, D: Deserializer<'de>, V: From<Value>>(
        deserializer: D,
    ) -> Result<V, D::Error> {
        deserializer.deserialize_str(Text(std::marker::PhantomData))
    }

    struct Text<V>(std::marker::PhantomData<V>);

    impl<V: From<Value>> serde::de::Visitor<'_> for Text<V> {
        type Value = V;

        fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            formatter.write_str("the JSON text of a payload")
        }

        fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<V, E> {
            if SKIMMING.with(std::cell::Cell::get) {
                return Ok(V::from(Value::Null));
            }
            // At any depth: a committed payload must read back, whatever nests in it.
            super::depth::parse_stored(text)
                .map(V::from)
                .map_err(E::custom)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_62_aws_event_types_are_present_and_unique() {
        assert_eq!(EventDetails::TYPE_NAMES.len(), 62);
        let mut names = EventDetails::TYPE_NAMES.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 62);
    }

    #[test]
    fn a_frozen_copy_of_the_variants_decodes_todays_bytes_and_upcasts_to_them() {
        // What an older version's decoder does with `frozen_event_details!`: read the bytes
        // into the frozen enum, then convert. With today's variants frozen, every sample
        // comes back as itself.
        for details in EventDetails::samples() {
            let bytes = postcard::to_allocvec(&details).expect("encodes");
            let frozen: FrozenToday = postcard::from_bytes(&bytes).expect("decodes");
            assert_eq!(EventDetails::from(frozen), details);
        }
    }

    #[test]
    fn check_sequence_rejects_gaps_and_forward_links() {
        let event = |id: u32, prev: u32| HistoryEvent {
            id: EventId(id),
            previous_event_id: prev,
            timestamp_ms: 0,
            details: EventDetails::ParallelStateStarted,
            scope: Vec::new(),
            timer: None,
        };
        assert!(check_sequence(0, &[event(1, 0), event(2, 0), event(3, 2)]).is_ok());
        let gap = check_sequence(0, &[event(1, 0), event(3, 1)]).expect_err("a gap");
        assert!(matches!(
            gap,
            Error::BadSequence {
                position: 1,
                reason: SequenceBreak::NotDense { id: 3, expected: 2 },
            }
        ));
        assert_eq!(
            gap.to_string(),
            "event sequence broken at position 1: id is 3 but 2 was expected"
        );
        let forward = check_sequence(4, &[event(5, 5)]).expect_err("a forward link");
        assert_eq!(
            forward.to_string(),
            "event sequence broken at position 0: previousEventId 5 is not before id 5"
        );
        assert!(matches!(
            forward,
            Error::BadSequence {
                position: 0,
                reason: SequenceBreak::PreviousNotBefore {
                    previous_event_id: 5,
                    id: 5
                },
            }
        ));
        assert!(matches!(
            check_sequence(u32::MAX, &[event(1, 0)]),
            Err(Error::BadSequence {
                position: 0,
                reason: SequenceBreak::IdOverflow
            })
        ));
    }
}
