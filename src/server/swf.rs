//! swf: the Amazon SWF activity-worker operations (`X-Amz-Target:
//! SimpleWorkflowService.<Op>`, AWS JSON 1.0, SigV4 service `swf`) over statelog task lists, so
//! an SWF worker (for example `boto3.client("swf")`) can serve a task list.
//!
//! Served: `PollForActivityTask`, `RespondActivityTaskCompleted`, `RespondActivityTaskFailed`,
//! `RecordActivityTaskHeartbeat`, `CountPendingActivityTasks`. Every other SWF operation is a
//! typed `UnsupportedOperation` naming it.
//!
//! Mapping (documented in docs/serve.md): the SWF `domain` is the caller's account id (the
//! namespace; any other domain is `UnknownResourceFault`); `taskList.name` is a statelog task
//! list (a `TaskList` name, or an activity ARN for that activity's default list); `identity` is
//! the worker name recorded in `ActivityStarted`. A polled task answers `activityId` = the id of
//! its `ActivityScheduled` event, `activityType` = {activity name, version `"1"`},
//! `workflowExecution` = {`workflowId`: execution name, `runId`: execution ARN}. `result` must be
//! JSON text (it becomes the state's result; absent means `null`); `reason`/`details` of a
//! failure become the task's error/cause. A bad, foreign or closed token is
//! `UnknownResourceFault`, a full task list `LimitExceededFault`, as SWF names them.
//!
//! Heartbeats: `cancelRequested` is always `false`. In SWF it is `true` while a decider's
//! cancel request waits for the worker to answer `RespondActivityTaskCanceled`; statelog has no
//! such pending state: a stop, timeout or abort closes the task in the same commit, after which
//! its token is `UnknownResourceFault`, so an answerable token is never being cancelled.
//! Heartbeat `details` are checked and dropped: SWF shows the last ones in
//! `ActivityTaskTimedOut`, but Step Functions has no heartbeat details, and the conformance
//! recordings show a timed-out activity's `ActivityTimedOut` and a heartbeat-timed-out
//! callback's `TaskTimedOut` as `error: States.Timeout` with no cause, so showing them there
//! would change that recorded shape.
//!
//! Invariants: called only after the request is authenticated; a long poll holds one of the
//! server's shared long-poll permits. Must not: hold engine logic (everything goes through the
//! [`Backend`]).

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

use super::backend::{Backend, Caller};
use super::error::Error;
use super::limits::{
    SWF_DETAILS_CHARS_MAX, SWF_DOMAIN_CHARS_MAX, SWF_IDENTITY_CHARS_MAX, SWF_REASON_CHARS_MAX,
    SWF_RESULT_CHARS_MAX, SWF_TASK_LIST_NAME_CHARS_MAX, TASK_TOKEN_CHARS_MAX,
};
use super::protocol;
use super::ServerState;

/// The `X-Amz-Target` prefix of Amazon SWF operations.
pub const TARGET_PREFIX: &str = "SimpleWorkflowService.";

/// The SigV4 scope service of SWF requests.
pub const SIGNING_SERVICE: &str = "swf";

/// The `version` statelog reports in `activityType` (activities have no versions).
pub const ACTIVITY_TYPE_VERSION: &str = "1";

/// The SWF operations statelog serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SwfOperation {
    /// Long-polls a task list for an activity task.
    PollForActivityTask,
    /// Completes a task with its result.
    RespondActivityTaskCompleted,
    /// Fails a task with a reason and details.
    RespondActivityTaskFailed,
    /// Resets a task's heartbeat clock.
    RecordActivityTaskHeartbeat,
    /// Counts the tasks waiting in a list.
    CountPendingActivityTasks,
}

impl SwfOperation {
    /// Every served SWF operation.
    pub const ALL: &'static [SwfOperation] = &[
        SwfOperation::PollForActivityTask,
        SwfOperation::RespondActivityTaskCompleted,
        SwfOperation::RespondActivityTaskFailed,
        SwfOperation::RecordActivityTaskHeartbeat,
        SwfOperation::CountPendingActivityTasks,
    ];

    /// The operation's SWF name.
    pub fn name(self) -> &'static str {
        match self {
            SwfOperation::PollForActivityTask => "PollForActivityTask",
            SwfOperation::RespondActivityTaskCompleted => "RespondActivityTaskCompleted",
            SwfOperation::RespondActivityTaskFailed => "RespondActivityTaskFailed",
            SwfOperation::RecordActivityTaskHeartbeat => "RecordActivityTaskHeartbeat",
            SwfOperation::CountPendingActivityTasks => "CountPendingActivityTasks",
        }
    }

    /// The served operation named `name` (after the target prefix); any other name is
    /// `UnsupportedOperation` naming it.
    pub fn from_name(name: &str) -> Result<SwfOperation, Error> {
        SwfOperation::ALL
            .iter()
            .copied()
            .find(|op| op.name() == name)
            .ok_or_else(|| Error::NotSupported {
                operation: format!("{TARGET_PREFIX}{name}"),
                reason: "statelog serves only the SWF activity-worker operations \
                         (PollForActivityTask, RespondActivityTaskCompleted, \
                         RespondActivityTaskFailed, RecordActivityTaskHeartbeat, \
                         CountPendingActivityTasks)",
            })
    }
}

/// `taskList`: `{name}`.
#[derive(Debug, Clone, Deserialize)]
pub struct TaskList {
    /// The list's name: a `TaskList` name, or an activity ARN for its default list.
    pub name: String,
}

/// `PollForActivityTask` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PollForActivityTaskInput {
    /// The SWF domain: the caller's account id.
    pub domain: String,
    /// The list to poll.
    pub task_list: TaskList,
    /// The worker's name (recorded in `ActivityStarted`).
    pub identity: Option<String>,
}

/// `CountPendingActivityTasks` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CountPendingActivityTasksInput {
    /// The SWF domain: the caller's account id.
    pub domain: String,
    /// The list to count.
    pub task_list: TaskList,
}

/// `RespondActivityTaskCompleted` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RespondActivityTaskCompletedInput {
    /// The task's token.
    pub task_token: String,
    /// The task's result, JSON text (absent: `null`).
    pub result: Option<String>,
}

/// `RespondActivityTaskFailed` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RespondActivityTaskFailedInput {
    /// The task's token.
    pub task_token: String,
    /// The error name Retry/Catch see.
    pub reason: Option<String>,
    /// The cause.
    pub details: Option<String>,
}

/// `RecordActivityTaskHeartbeat` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordActivityTaskHeartbeatInput {
    /// The task's token.
    pub task_token: String,
    /// Progress details: length-checked, then dropped (see the module docs: Step Functions'
    /// history has no place for them).
    pub details: Option<String>,
}

/// Reads an SWF input: not JSON, not an object or a wrong member type is a
/// `SerializationException`; a missing required member a `ValidationException` naming it.
pub fn decode<T: DeserializeOwned>(operation: SwfOperation, body: &[u8]) -> Result<T, Error> {
    const MEMBERS: &[&str] = &["domain", "taskList", "taskToken", "name"];
    let name = format!("{TARGET_PREFIX}{}", operation.name());
    protocol::decode_input(&name, MEMBERS, body)
}

fn check_len(
    member: &'static str,
    text: &str,
    chars_min: usize,
    chars_max: usize,
) -> Result<(), Error> {
    let count = text.chars().count();
    if count < chars_min || count > chars_max {
        return Err(Error::Validation {
            member,
            constraint: format!(
                "Member must have length between {chars_min} and {chars_max} (got {count})"
            ),
        });
    }
    Ok(())
}

fn check_optional(member: &'static str, text: Option<&str>, chars_max: usize) -> Result<(), Error> {
    text.map_or(Ok(()), |t| check_len(member, t, 0, chars_max))
}

/// The domain must be the caller's account id.
fn check_domain(caller: &Caller, domain: &str) -> Result<(), Error> {
    check_len("domain", domain, 1, SWF_DOMAIN_CHARS_MAX)?;
    if domain == caller.account_id {
        Ok(())
    } else {
        Err(Error::SwfFault {
            fault: "UnknownResourceFault",
            message: format!(
                "Unknown domain: {domain} (statelog's SWF domain is the caller's account id, {})",
                caller.account_id
            ),
        })
    }
}

fn check_task_list(list: &TaskList) -> Result<(), Error> {
    check_len("taskList.name", &list.name, 1, SWF_TASK_LIST_NAME_CHARS_MAX)
}

fn check_token(token: &str) -> Result<(), Error> {
    check_len("taskToken", token, 1, TASK_TOKEN_CHARS_MAX)
}

/// Renames the engine's Step Functions error names to the SWF faults a worker expects.
fn swf_error(error: Error) -> Error {
    match error {
        Error::Engine {
            aws_name: "InvalidToken" | "TaskTimedOut" | "TaskDoesNotExist",
            message,
            ..
        } => Error::SwfFault {
            fault: "UnknownResourceFault",
            message: format!("Unknown activity task: {message}"),
        },
        Error::Engine {
            aws_name: "ActivityWorkerLimitExceeded",
            message,
            ..
        } => Error::SwfFault {
            fault: "LimitExceededFault",
            message,
        },
        Error::AccountLongPollsExceeded { limit } => Error::SwfFault {
            fault: "LimitExceededFault",
            message: format!(
                "this account already has {limit} long polls waiting (its limit); retry later"
            ),
        },
        Error::Engine {
            aws_name: "InvalidOutput",
            message,
            ..
        } => Error::Validation {
            member: "result",
            constraint: format!("Member must be JSON text (statelog passes it on): {message}"),
        },
        other => other,
    }
}

/// The name in an activity or execution ARN: its last `:`-field (the whole text for a bare
/// name).
fn last_field(arn: &str) -> &str {
    arn.rsplit(':').next().unwrap_or(arn)
}

/// Runs one authenticated SWF call.
pub async fn dispatch<B: Backend>(
    state: &ServerState<B>,
    caller: &Caller,
    operation: SwfOperation,
    body: &[u8],
) -> Result<Value, Error> {
    dispatch_inner(state, caller, operation, body)
        .await
        .map_err(swf_error)
}

async fn dispatch_inner<B: Backend>(
    state: &ServerState<B>,
    caller: &Caller,
    operation: SwfOperation,
    body: &[u8],
) -> Result<Value, Error> {
    let backend = &state.backend;
    match operation {
        SwfOperation::PollForActivityTask => {
            let input: PollForActivityTaskInput = decode(operation, body)?;
            check_domain(caller, &input.domain)?;
            check_task_list(&input.task_list)?;
            check_optional(
                "identity",
                input.identity.as_deref(),
                SWF_IDENTITY_CHARS_MAX,
            )?;
            let _permit = state.long_polls.admit(&caller.account_id)?;
            let task = backend
                .poll_task_list(caller, input.task_list.name, input.identity)
                .await?;
            // SWF answers a poll that found nothing with an empty task token.
            Ok(match task {
                None => json!({"taskToken": "", "startedEventId": 0}),
                Some(task) => {
                    let name = last_field(&task.execution_arn);
                    json!({
                        "taskToken": task.task_token,
                        "activityId": task.scheduled_event_id.to_string(),
                        "startedEventId": task.started_event_id,
                        "workflowExecution": {"workflowId": name, "runId": task.execution_arn},
                        "activityType": {
                            "name": last_field(&task.activity_arn),
                            "version": ACTIVITY_TYPE_VERSION,
                        },
                        "input": task.input,
                    })
                }
            })
        }
        SwfOperation::CountPendingActivityTasks => {
            let input: CountPendingActivityTasksInput = decode(operation, body)?;
            check_domain(caller, &input.domain)?;
            check_task_list(&input.task_list)?;
            let count = backend
                .count_pending_tasks(caller, input.task_list.name)
                .await?;
            Ok(json!({"count": count, "truncated": false}))
        }
        SwfOperation::RespondActivityTaskCompleted => {
            let input: RespondActivityTaskCompletedInput = decode(operation, body)?;
            check_token(&input.task_token)?;
            check_optional("result", input.result.as_deref(), SWF_RESULT_CHARS_MAX)?;
            backend
                .send_task_success(
                    caller,
                    input.task_token,
                    input.result.unwrap_or_else(|| "null".into()),
                )
                .await?;
            Ok(json!({}))
        }
        SwfOperation::RespondActivityTaskFailed => {
            let input: RespondActivityTaskFailedInput = decode(operation, body)?;
            check_token(&input.task_token)?;
            check_optional("reason", input.reason.as_deref(), SWF_REASON_CHARS_MAX)?;
            check_optional("details", input.details.as_deref(), SWF_DETAILS_CHARS_MAX)?;
            backend
                .send_task_failure(
                    caller,
                    input.task_token,
                    input.reason.unwrap_or_default(),
                    input.details.unwrap_or_default(),
                )
                .await?;
            Ok(json!({}))
        }
        SwfOperation::RecordActivityTaskHeartbeat => {
            let input: RecordActivityTaskHeartbeatInput = decode(operation, body)?;
            check_token(&input.task_token)?;
            check_optional("details", input.details.as_deref(), SWF_DETAILS_CHARS_MAX)?;
            backend
                .send_task_heartbeat(caller, input.task_token)
                .await?;
            // A stopped execution closes its tasks, so their tokens answer
            // UnknownResourceFault: an open task is never being cancelled (module docs).
            Ok(json!({"cancelRequested": false}))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_others_are_named_as_unsupported() {
        for op in SwfOperation::ALL {
            assert_eq!(SwfOperation::from_name(op.name()).ok(), Some(*op));
        }
        let error = SwfOperation::from_name("StartWorkflowExecution").expect_err("not served");
        assert_eq!(error.aws_name(), "UnsupportedOperation");
        assert!(error
            .to_string()
            .contains("SimpleWorkflowService.StartWorkflowExecution"));
    }

    #[test]
    fn decoding_names_the_missing_member() {
        let op = SwfOperation::PollForActivityTask;
        let error =
            decode::<PollForActivityTaskInput>(op, br#"{"domain":"1"}"#).expect_err("no task list");
        assert_eq!(error.aws_name(), "ValidationException");
        assert!(error.to_string().contains("taskList"), "{error}");
        let error = decode::<PollForActivityTaskInput>(op, b"[]").expect_err("not an object");
        assert_eq!(error.aws_name(), "SerializationException");
        let error = decode::<PollForActivityTaskInput>(op, br#"{"domain":"1","taskList":"x"}"#)
            .expect_err("wrong type");
        assert_eq!(error.aws_name(), "SerializationException");
    }

    #[test]
    fn engine_token_errors_become_swf_faults() {
        for name in ["InvalidToken", "TaskTimedOut"] {
            let error = swf_error(Error::Engine {
                aws_name: name,
                message: "m".into(),
                server_fault: false,
            });
            assert_eq!(error.aws_name(), "UnknownResourceFault");
            assert_eq!(error.status().as_u16(), 400);
        }
        let error = swf_error(Error::Engine {
            aws_name: "ActivityWorkerLimitExceeded",
            message: "m".into(),
            server_fault: false,
        });
        assert_eq!(error.aws_name(), "LimitExceededFault");
    }

    #[test]
    fn names_come_from_the_arn() {
        assert_eq!(
            last_field("arn:aws:states:us-east-1:000000000000:activity:resize"),
            "resize"
        );
        assert_eq!(
            last_field("arn:aws:states:us-east-1:000000000000:execution:m:e1"),
            "e1"
        );
        assert_eq!(last_field("plain"), "plain");
    }
}
