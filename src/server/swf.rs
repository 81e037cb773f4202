//! swf: the Amazon SWF API (`X-Amz-Target: SimpleWorkflowService.<Op>`, AWS JSON 1.0, SigV4
//! service `swf`): the operation names, and which of two services answers each call.
//!
//! Every SWF operation is served by the engine's SWF service ([`super::swf_service`]): domains
//! (per account), workflow and activity types, executions, decision and activity task lists,
//! history, listings and tags, with SWF's faults.
//!
//! Before SWF workflows existed, five activity-worker operations mapped onto Step Functions task
//! lists, and that mapping keeps working: `PollForActivityTask` and `CountPendingActivityTasks`
//! of the domain named after the caller's account id go to the Step Functions task lists while
//! no SWF domain of that name is registered (once one is, its SWF task lists serve), and
//! `RespondActivityTaskCompleted`, `RespondActivityTaskFailed` and `RecordActivityTaskHeartbeat`
//! with a Step Functions task token (three `.`-separated fields; an SWF token is base64url and
//! has no `.`) answer that task. The mapping (documented in docs/serve.md): `taskList.name` is
//! a statelog task list (a `TaskList` name, or an activity ARN for that activity's default
//! list); `identity` is the worker name recorded in `ActivityStarted`. A polled task answers
//! `activityId` = the id of its `ActivityScheduled` event, `activityType` = {activity name,
//! version `"1"`}, `workflowExecution` = {`workflowId`: execution name, `runId`: execution ARN}.
//! `result` must be JSON text (it becomes the state's result; absent means `null`);
//! `reason`/`details` of a failure become the task's error/cause. A bad, foreign or closed
//! token is `UnknownResourceFault`, a full task list `LimitExceededFault`, as SWF names them.
//!
//! Heartbeats of the mapping: `cancelRequested` is always `false`. In SWF it is `true` while a
//! decider's cancel request waits for the worker to answer `RespondActivityTaskCanceled`;
//! a Step Functions task has no such pending state: a stop, timeout or abort closes the task in
//! the same commit, after which its token is `UnknownResourceFault`, so an answerable token is
//! never being cancelled. Heartbeat `details` are checked and dropped: SWF shows the last ones
//! in `ActivityTaskTimedOut`, but Step Functions has no heartbeat details, and the conformance
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

/// The SWF operations statelog serves: every operation of the Amazon SWF API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SwfOperation {
    /// Registers a domain.
    RegisterDomain,
    /// Describes a domain.
    DescribeDomain,
    /// Lists domains by registration status.
    ListDomains,
    /// Deprecates a domain.
    DeprecateDomain,
    /// Undeprecates a domain.
    UndeprecateDomain,
    /// Registers a workflow type with its defaults.
    RegisterWorkflowType,
    /// Describes a workflow type.
    DescribeWorkflowType,
    /// Lists workflow types.
    ListWorkflowTypes,
    /// Deprecates a workflow type.
    DeprecateWorkflowType,
    /// Undeprecates a workflow type.
    UndeprecateWorkflowType,
    /// Deletes a deprecated workflow type.
    DeleteWorkflowType,
    /// Registers an activity type with its defaults.
    RegisterActivityType,
    /// Describes an activity type.
    DescribeActivityType,
    /// Lists activity types.
    ListActivityTypes,
    /// Deprecates an activity type.
    DeprecateActivityType,
    /// Undeprecates an activity type.
    UndeprecateActivityType,
    /// Deletes a deprecated activity type.
    DeleteActivityType,
    /// Starts a workflow execution.
    StartWorkflowExecution,
    /// Long-polls a decision task list.
    PollForDecisionTask,
    /// Answers a decision task with decisions.
    RespondDecisionTaskCompleted,
    /// Long-polls an activity task list (SWF's, or a Step Functions list).
    PollForActivityTask,
    /// Completes an activity task with its result.
    RespondActivityTaskCompleted,
    /// Fails an activity task with a reason and details.
    RespondActivityTaskFailed,
    /// Answers an activity task's cancel request.
    RespondActivityTaskCanceled,
    /// Records an activity task's heartbeat.
    RecordActivityTaskHeartbeat,
    /// Counts the activity tasks waiting in a list.
    CountPendingActivityTasks,
    /// Counts the decision tasks waiting in a list.
    CountPendingDecisionTasks,
    /// Describes a workflow execution.
    DescribeWorkflowExecution,
    /// Reads a page of a run's history.
    GetWorkflowExecutionHistory,
    /// Signals a workflow execution.
    SignalWorkflowExecution,
    /// Asks a workflow execution to cancel.
    RequestCancelWorkflowExecution,
    /// Terminates a workflow execution.
    TerminateWorkflowExecution,
    /// Lists open executions by filter.
    ListOpenWorkflowExecutions,
    /// Lists closed executions by filter.
    ListClosedWorkflowExecutions,
    /// Counts open executions by filter.
    CountOpenWorkflowExecutions,
    /// Counts closed executions by filter.
    CountClosedWorkflowExecutions,
    /// Tags a domain.
    TagResource,
    /// Removes a domain's tags.
    UntagResource,
    /// Lists a domain's tags.
    ListTagsForResource,
}

impl SwfOperation {
    /// Every served SWF operation.
    pub const ALL: &'static [SwfOperation] = &[
        SwfOperation::RegisterDomain,
        SwfOperation::DescribeDomain,
        SwfOperation::ListDomains,
        SwfOperation::DeprecateDomain,
        SwfOperation::UndeprecateDomain,
        SwfOperation::RegisterWorkflowType,
        SwfOperation::DescribeWorkflowType,
        SwfOperation::ListWorkflowTypes,
        SwfOperation::DeprecateWorkflowType,
        SwfOperation::UndeprecateWorkflowType,
        SwfOperation::DeleteWorkflowType,
        SwfOperation::RegisterActivityType,
        SwfOperation::DescribeActivityType,
        SwfOperation::ListActivityTypes,
        SwfOperation::DeprecateActivityType,
        SwfOperation::UndeprecateActivityType,
        SwfOperation::DeleteActivityType,
        SwfOperation::StartWorkflowExecution,
        SwfOperation::PollForDecisionTask,
        SwfOperation::RespondDecisionTaskCompleted,
        SwfOperation::PollForActivityTask,
        SwfOperation::RespondActivityTaskCompleted,
        SwfOperation::RespondActivityTaskFailed,
        SwfOperation::RespondActivityTaskCanceled,
        SwfOperation::RecordActivityTaskHeartbeat,
        SwfOperation::CountPendingActivityTasks,
        SwfOperation::CountPendingDecisionTasks,
        SwfOperation::DescribeWorkflowExecution,
        SwfOperation::GetWorkflowExecutionHistory,
        SwfOperation::SignalWorkflowExecution,
        SwfOperation::RequestCancelWorkflowExecution,
        SwfOperation::TerminateWorkflowExecution,
        SwfOperation::ListOpenWorkflowExecutions,
        SwfOperation::ListClosedWorkflowExecutions,
        SwfOperation::CountOpenWorkflowExecutions,
        SwfOperation::CountClosedWorkflowExecutions,
        SwfOperation::TagResource,
        SwfOperation::UntagResource,
        SwfOperation::ListTagsForResource,
    ];

    /// The operation's SWF name.
    pub fn name(self) -> &'static str {
        match self {
            SwfOperation::RegisterDomain => "RegisterDomain",
            SwfOperation::DescribeDomain => "DescribeDomain",
            SwfOperation::ListDomains => "ListDomains",
            SwfOperation::DeprecateDomain => "DeprecateDomain",
            SwfOperation::UndeprecateDomain => "UndeprecateDomain",
            SwfOperation::RegisterWorkflowType => "RegisterWorkflowType",
            SwfOperation::DescribeWorkflowType => "DescribeWorkflowType",
            SwfOperation::ListWorkflowTypes => "ListWorkflowTypes",
            SwfOperation::DeprecateWorkflowType => "DeprecateWorkflowType",
            SwfOperation::UndeprecateWorkflowType => "UndeprecateWorkflowType",
            SwfOperation::DeleteWorkflowType => "DeleteWorkflowType",
            SwfOperation::RegisterActivityType => "RegisterActivityType",
            SwfOperation::DescribeActivityType => "DescribeActivityType",
            SwfOperation::ListActivityTypes => "ListActivityTypes",
            SwfOperation::DeprecateActivityType => "DeprecateActivityType",
            SwfOperation::UndeprecateActivityType => "UndeprecateActivityType",
            SwfOperation::DeleteActivityType => "DeleteActivityType",
            SwfOperation::StartWorkflowExecution => "StartWorkflowExecution",
            SwfOperation::PollForDecisionTask => "PollForDecisionTask",
            SwfOperation::RespondDecisionTaskCompleted => "RespondDecisionTaskCompleted",
            SwfOperation::PollForActivityTask => "PollForActivityTask",
            SwfOperation::RespondActivityTaskCompleted => "RespondActivityTaskCompleted",
            SwfOperation::RespondActivityTaskFailed => "RespondActivityTaskFailed",
            SwfOperation::RespondActivityTaskCanceled => "RespondActivityTaskCanceled",
            SwfOperation::RecordActivityTaskHeartbeat => "RecordActivityTaskHeartbeat",
            SwfOperation::CountPendingActivityTasks => "CountPendingActivityTasks",
            SwfOperation::CountPendingDecisionTasks => "CountPendingDecisionTasks",
            SwfOperation::DescribeWorkflowExecution => "DescribeWorkflowExecution",
            SwfOperation::GetWorkflowExecutionHistory => "GetWorkflowExecutionHistory",
            SwfOperation::SignalWorkflowExecution => "SignalWorkflowExecution",
            SwfOperation::RequestCancelWorkflowExecution => "RequestCancelWorkflowExecution",
            SwfOperation::TerminateWorkflowExecution => "TerminateWorkflowExecution",
            SwfOperation::ListOpenWorkflowExecutions => "ListOpenWorkflowExecutions",
            SwfOperation::ListClosedWorkflowExecutions => "ListClosedWorkflowExecutions",
            SwfOperation::CountOpenWorkflowExecutions => "CountOpenWorkflowExecutions",
            SwfOperation::CountClosedWorkflowExecutions => "CountClosedWorkflowExecutions",
            SwfOperation::TagResource => "TagResource",
            SwfOperation::UntagResource => "UntagResource",
            SwfOperation::ListTagsForResource => "ListTagsForResource",
        }
    }

    /// The served operation named `name` (after the target prefix); any other name is
    /// `UnknownOperationException` naming it.
    pub fn from_name(name: &str) -> Result<SwfOperation, Error> {
        SwfOperation::ALL
            .iter()
            .copied()
            .find(|op| op.name() == name)
            .ok_or_else(|| Error::UnknownSwfOperation {
                target: format!("{TARGET_PREFIX}{name}"),
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

/// The members the routing looks at before an operation is read.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RoutingPeek {
    domain: Option<String>,
    task_token: Option<String>,
}

/// Whether a call goes to the Step Functions mapping (see the module docs): a poll or count of
/// the domain named after the caller's account while no SWF domain of that name is registered,
/// or an answer or heartbeat with a Step Functions task token. Everything else is SWF's.
async fn serves_step_functions<B: Backend>(
    state: &ServerState<B>,
    caller: &Caller,
    operation: SwfOperation,
    body: &[u8],
) -> Result<bool, Error> {
    // A body that does not read is the SWF service's to report.
    let peek = || serde_json::from_slice::<RoutingPeek>(body).unwrap_or_default();
    match operation {
        SwfOperation::PollForActivityTask | SwfOperation::CountPendingActivityTasks => {
            match peek().domain {
                Some(domain) if domain == caller.account_id => {
                    Ok(!state.backend.swf_domain_registered(caller, domain).await?)
                }
                _ => Ok(false),
            }
        }
        SwfOperation::RespondActivityTaskCompleted
        | SwfOperation::RespondActivityTaskFailed
        | SwfOperation::RecordActivityTaskHeartbeat => Ok(peek()
            .task_token
            .is_some_and(|token| token.contains(STEP_FUNCTIONS_TOKEN_SEPARATOR))),
        _ => Ok(false),
    }
}

/// The separator of a Step Functions task token's fields (`secret.execution.task`, the
/// engine's `waitForTaskToken` tokens); an SWF task token is base64url, which never holds it.
const STEP_FUNCTIONS_TOKEN_SEPARATOR: char = '.';

/// Runs one authenticated SWF call: on the Step Functions mapping or the SWF service.
pub async fn dispatch<B: Backend>(
    state: &ServerState<B>,
    caller: &Caller,
    operation: SwfOperation,
    body: &[u8],
) -> Result<Value, Error> {
    let result = match serves_step_functions(state, caller, operation, body).await {
        Ok(true) => dispatch_mapping(state, caller, operation, body).await,
        Ok(false) => super::swf_service::dispatch(state, caller, operation, body).await,
        Err(error) => Err(error),
    };
    result.map_err(swf_error)
}

/// Runs one of the five activity-worker operations on the Step Functions task lists.
async fn dispatch_mapping<B: Backend>(
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
        other => Err(Error::Internal {
            detail: format!(
                "{} has no Step Functions mapping (routing sent it there)",
                other.name()
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_others_are_unknown() {
        for op in SwfOperation::ALL {
            assert_eq!(SwfOperation::from_name(op.name()).ok(), Some(*op));
        }
        assert_eq!(
            SwfOperation::ALL.len(),
            39,
            "every operation of the SWF API"
        );
        let error = SwfOperation::from_name("Frobnicate").expect_err("no such operation");
        assert_eq!(error.aws_name(), "UnknownOperationException");
        assert!(error
            .to_string()
            .contains("SimpleWorkflowService.Frobnicate"));
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
