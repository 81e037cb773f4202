//! swf_service: the Amazon SWF workflow operations (domains, types, executions, decision and
//! activity tasks, history, listings, tags) routed to the engine's SWF service
//! (`Engine::swf()`), one engine method per operation, named after it.
//!
//! Each operation's body is read into its `engine::swf::api` input type (a body that does not
//! read is a `SerializationException`, a missing required member a `ValidationException` naming
//! it), the engine's answer is written back as SWF's JSON (an operation SWF answers with nothing
//! answers `{}`), and the engine's [`SwfError`] becomes the fault SWF names
//! ([`fault_error`]).
//!
//! Invariants: called only after the request is authenticated, with the caller's account's
//! engine (an engine's registry is its account's); a long poll (`PollForDecisionTask`,
//! `PollForActivityTask`) runs off the reactor (the engine's poll blocks its thread up to
//! [`POLL_WAIT`]) and holds one of the server's long-poll permits until that thread is done, so
//! the permits bound the threads polls occupy even when clients hang up; a client that hangs
//! up cancels its poll (`CancelOnDrop`), so the thread and permit come back at once and no task
//! is started for it, unless its claim was already being written (then the task's
//! start-to-close timeout recovers it, as in SWF). Must not: hold SWF
//! logic (validation, defaults, history and tokens are the engine's) or log a task token.

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

use super::backend::{Backend, Caller, SwfCallKind};
use super::error::Error;
use super::protocol;
use super::swf::{SwfOperation, TARGET_PREFIX};
use super::ServerState;
use crate::engine::swf::api::{self, Fault, SwfError};
use crate::engine::swf::PollCancel;
use crate::limits::ACTIVITY_POLL_MS_MAX;

/// Gives an engine long poll up when dropped. Its request's future holds it across the poll, and
/// the server drops that future when the client hangs up (the connection closes before the
/// answer): the poll then wakes and answers nobody, and a task it took but had not claimed
/// stays for the next poller (`PollCancel`). Dropped after an answer, it changes nothing.
struct CancelOnDrop(PollCancel);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// How long an SWF long poll waits for a task before it answers an empty one (SWF's 60 s).
pub const POLL_WAIT: Duration = Duration::from_millis(ACTIVITY_POLL_MS_MAX);

/// The names serde may report as missing members of SWF inputs (nested ones by their own
/// name); a name not here is reported as `?`.
const MEMBERS: &[&str] = &[
    "name",
    "version",
    "domain",
    "taskList",
    "taskToken",
    "workflowId",
    "runId",
    "workflowType",
    "activityType",
    "workflowExecutionRetentionPeriodInDays",
    "registrationStatus",
    "execution",
    "signalName",
    "startTimeFilter",
    "oldestDate",
    "status",
    "tag",
    "resourceArn",
    "tags",
    "tagKeys",
    "key",
];

/// Reads the input of an SWF operation.
fn decode<T: DeserializeOwned>(operation: SwfOperation, body: &[u8]) -> Result<T, Error> {
    let name = format!("{TARGET_PREFIX}{}", operation.name());
    protocol::decode_input(&name, MEMBERS, body)
}

/// The engine's SWF error as the server answers it: each fault under its SWF name (HTTP 400),
/// except an internal one, whose detail stays in the server's log (`InternalFailure`, 500).
pub fn fault_error(error: SwfError) -> Error {
    match error.fault {
        Fault::Internal => Error::Internal {
            detail: error.message,
        },
        fault => Error::SwfFault {
            fault: fault.aws_name(),
            message: error.message,
        },
    }
}

/// An engine answer as SWF's JSON; `()` (SWF answers nothing) is `{}`.
fn answer<T: Serialize>(output: T) -> Result<Value, Error> {
    let value = serde_json::to_value(output).map_err(|e| Error::Internal {
        detail: format!("an SWF answer does not serialize: {e}"),
    })?;
    Ok(if value.is_null() { json!({}) } else { value })
}

/// Runs `$method` of the engine's SWF service on the decoded input, as a call of `$kind`.
macro_rules! call {
    ($state:expr, $caller:expr, $operation:expr, $body:expr, $kind:ident, $method:ident) => {{
        let input = decode($operation, $body)?;
        let output = $state
            .backend
            .swf($caller, SwfCallKind::$kind, move |engine| {
                engine.swf().$method(&input)
            })
            .await?;
        answer(output)
    }};
}

/// Runs one SWF workflow operation (every operation but the Step Functions mapping's, which
/// `swf::dispatch` routes before calling this).
pub async fn dispatch<B: Backend>(
    state: &ServerState<B>,
    caller: &Caller,
    operation: SwfOperation,
    body: &[u8],
) -> Result<Value, Error> {
    use SwfOperation as Op;
    match operation {
        Op::RegisterDomain => call!(state, caller, operation, body, Commit, register_domain),
        Op::DescribeDomain => call!(state, caller, operation, body, Read, describe_domain),
        Op::ListDomains => call!(state, caller, operation, body, Read, list_domains),
        Op::DeprecateDomain => call!(state, caller, operation, body, Commit, deprecate_domain),
        Op::UndeprecateDomain => {
            call!(state, caller, operation, body, Commit, undeprecate_domain)
        }
        Op::RegisterWorkflowType => {
            call!(
                state,
                caller,
                operation,
                body,
                Commit,
                register_workflow_type
            )
        }
        Op::DescribeWorkflowType => {
            call!(state, caller, operation, body, Read, describe_workflow_type)
        }
        Op::ListWorkflowTypes => call!(state, caller, operation, body, Read, list_workflow_types),
        Op::DeprecateWorkflowType => {
            call!(
                state,
                caller,
                operation,
                body,
                Commit,
                deprecate_workflow_type
            )
        }
        Op::UndeprecateWorkflowType => {
            call!(
                state,
                caller,
                operation,
                body,
                Commit,
                undeprecate_workflow_type
            )
        }
        Op::DeleteWorkflowType => {
            call!(state, caller, operation, body, Commit, delete_workflow_type)
        }
        Op::RegisterActivityType => {
            call!(
                state,
                caller,
                operation,
                body,
                Commit,
                register_activity_type
            )
        }
        Op::DescribeActivityType => {
            call!(state, caller, operation, body, Read, describe_activity_type)
        }
        Op::ListActivityTypes => call!(state, caller, operation, body, Read, list_activity_types),
        Op::DeprecateActivityType => {
            call!(
                state,
                caller,
                operation,
                body,
                Commit,
                deprecate_activity_type
            )
        }
        Op::UndeprecateActivityType => {
            call!(
                state,
                caller,
                operation,
                body,
                Commit,
                undeprecate_activity_type
            )
        }
        Op::DeleteActivityType => {
            call!(state, caller, operation, body, Commit, delete_activity_type)
        }
        Op::StartWorkflowExecution => {
            call!(
                state,
                caller,
                operation,
                body,
                Commit,
                start_workflow_execution
            )
        }
        Op::PollForDecisionTask => {
            let input: api::PollForDecisionTaskInput = decode(operation, body)?;
            let permit = state.long_polls.admit(&caller.account_id)?;
            let cancel = PollCancel::new();
            let on_hang_up = CancelOnDrop(cancel.clone());
            let task = state
                .backend
                .swf(caller, SwfCallKind::LongPoll, move |engine| {
                    // Held until the engine's poll returns, even when the client left first: the
                    // permits bound the threads polls occupy.
                    let _permit = permit;
                    engine
                        .swf()
                        .poll_for_decision_task_cancellable(&input, POLL_WAIT, &cancel)
                })
                .await?;
            drop(on_hang_up);
            answer(task)
        }
        Op::RespondDecisionTaskCompleted => {
            call!(
                state,
                caller,
                operation,
                body,
                Commit,
                respond_decision_task_completed
            )
        }
        Op::PollForActivityTask => {
            let input: api::PollForActivityTaskInput = decode(operation, body)?;
            let permit = state.long_polls.admit(&caller.account_id)?;
            let cancel = PollCancel::new();
            let on_hang_up = CancelOnDrop(cancel.clone());
            let task = state
                .backend
                .swf(caller, SwfCallKind::LongPoll, move |engine| {
                    // Held until the engine's poll returns, even when the client left first: the
                    // permits bound the threads polls occupy.
                    let _permit = permit;
                    engine
                        .swf()
                        .poll_for_activity_task_cancellable(&input, POLL_WAIT, &cancel)
                })
                .await?;
            drop(on_hang_up);
            answer(task)
        }
        Op::RespondActivityTaskCompleted => {
            call!(
                state,
                caller,
                operation,
                body,
                Commit,
                respond_activity_task_completed
            )
        }
        Op::RespondActivityTaskFailed => {
            call!(
                state,
                caller,
                operation,
                body,
                Commit,
                respond_activity_task_failed
            )
        }
        Op::RespondActivityTaskCanceled => {
            call!(
                state,
                caller,
                operation,
                body,
                Commit,
                respond_activity_task_canceled
            )
        }
        Op::RecordActivityTaskHeartbeat => {
            call!(
                state,
                caller,
                operation,
                body,
                Commit,
                record_activity_task_heartbeat
            )
        }
        Op::CountPendingActivityTasks => {
            call!(
                state,
                caller,
                operation,
                body,
                Read,
                count_pending_activity_tasks
            )
        }
        Op::CountPendingDecisionTasks => {
            call!(
                state,
                caller,
                operation,
                body,
                Read,
                count_pending_decision_tasks
            )
        }
        Op::DescribeWorkflowExecution => {
            call!(
                state,
                caller,
                operation,
                body,
                Read,
                describe_workflow_execution
            )
        }
        Op::GetWorkflowExecutionHistory => {
            call!(
                state,
                caller,
                operation,
                body,
                Read,
                get_workflow_execution_history
            )
        }
        Op::SignalWorkflowExecution => {
            call!(
                state,
                caller,
                operation,
                body,
                Commit,
                signal_workflow_execution
            )
        }
        Op::RequestCancelWorkflowExecution => call!(
            state,
            caller,
            operation,
            body,
            Commit,
            request_cancel_workflow_execution
        ),
        Op::TerminateWorkflowExecution => {
            call!(
                state,
                caller,
                operation,
                body,
                Commit,
                terminate_workflow_execution
            )
        }
        Op::ListOpenWorkflowExecutions => {
            call!(
                state,
                caller,
                operation,
                body,
                Read,
                list_open_workflow_executions
            )
        }
        Op::ListClosedWorkflowExecutions => {
            call!(
                state,
                caller,
                operation,
                body,
                Read,
                list_closed_workflow_executions
            )
        }
        Op::CountOpenWorkflowExecutions => {
            call!(
                state,
                caller,
                operation,
                body,
                Read,
                count_open_workflow_executions
            )
        }
        Op::CountClosedWorkflowExecutions => {
            call!(
                state,
                caller,
                operation,
                body,
                Read,
                count_closed_workflow_executions
            )
        }
        Op::TagResource => call!(state, caller, operation, body, Commit, tag_resource),
        Op::UntagResource => call!(state, caller, operation, body, Commit, untag_resource),
        Op::ListTagsForResource => {
            call!(state, caller, operation, body, Read, list_tags_for_resource)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_keep_their_swf_names_and_internal_ones_hide_the_detail() {
        for fault in Fault::ALL {
            let error = fault_error(SwfError::new(fault, "what and where"));
            match fault {
                Fault::Internal => {
                    assert_eq!(error.aws_name(), "InternalFailure");
                    assert_eq!(error.status().as_u16(), 500);
                    assert!(!error.to_string().contains("what and where"));
                }
                _ => {
                    assert_eq!(error.aws_name(), fault.aws_name());
                    assert_eq!(error.status().as_u16(), 400);
                    assert_eq!(error.to_string(), "what and where");
                }
            }
        }
    }

    #[test]
    fn inputs_read_into_the_api_types_or_name_what_is_wrong() {
        let op = SwfOperation::RegisterDomain;
        let input: api::RegisterDomainInput = decode(
            op,
            br#"{"name":"d","workflowExecutionRetentionPeriodInDays":"1"}"#,
        )
        .expect("reads");
        assert_eq!(input.name, "d");
        let error =
            decode::<api::RegisterDomainInput>(op, br#"{"name":"d"}"#).expect_err("missing");
        assert_eq!(error.aws_name(), "ValidationException");
        assert!(
            error
                .to_string()
                .contains("workflowExecutionRetentionPeriodInDays"),
            "{error}"
        );
        let error =
            decode::<api::DescribeDomainInput>(SwfOperation::DescribeDomain, br#"{"name":7}"#)
                .expect_err("wrong type");
        assert_eq!(error.aws_name(), "SerializationException");
        assert!(error.to_string().contains("DescribeDomain"), "{error}");
    }

    #[test]
    fn an_empty_answer_is_an_empty_object() {
        assert_eq!(answer(()).expect("serializes"), json!({}));
        assert_eq!(
            answer(api::Run { run_id: "r".into() }).expect("serializes"),
            json!({"runId": "r"})
        );
    }
}
