//! route: which partition a call touches, as a pure function of the operation, its body and
//! the cluster's partition count (issue 19, `CLUSTER-DESIGN.md` "Which partition a call
//! touches").
//!
//! - An execution lives in `partition_of_execution(account, machine name, execution name)`,
//!   read from its ARN; a task token names its execution's ARN
//!   (`interpreter::parse_token`), so `SendTask*` go where the execution is; `StartExecution`
//!   goes by its machine ARN's account and name and the execution's name. A start without a
//!   name is named by the receiving node first ([`name_unnamed_start`]), so every node that
//!   might retry it sends the same name.
//! - The catalog (state machines, activities, tags; SWF domains and types) is partition 0's
//!   ([`Target::Catalog`]).
//! - Lists and task lists span partitions ([`Target::AllPartitions`]): ListExecutions (one
//!   machine's executions hash everywhere), GetActivityTask, the SWF polls, counts and
//!   execution lists.
//! - An SWF run lives in `partition_of_swf_run(account, domain, workflowId)`. SWF task tokens
//!   name only their run id, which says nothing of the partition: an SWF `Respond*` or
//!   `RecordActivityTaskHeartbeat` with an SWF token is [`Target::AllPartitions`] (only the
//!   owner of the run accepts it; the others answer `UnknownResourceFault`).
//!
//! Invariants: a body the single-node server refuses is refused here with the same error
//! (the same decoder, the same `validate`, the same ARN parser and token reader), so routing
//! never changes an answer; a well-formed call always gets a target. Must not: look anything
//! up (no state: routing is the same on every node).

use serde::de::DeserializeOwned;
use serde::Deserialize;
use statelog_cluster::partition::{partition_of_execution, partition_of_swf_run, PartitionIndex};

use crate::engine::arn::{parse_machine, Arn, Resource, ResourceType};
use crate::engine::{Error as EngineError, TaskTokenReason};
use crate::interpreter::parse_token;
use crate::server::engine_backend::engine_error;
use crate::server::error::Error;
use crate::server::protocol::{
    decode, ActivityArnInput, CreateActivityInput, CreateStateMachineAliasInput,
    CreateStateMachineInput, ExecutionArnInput, GetActivityTaskInput, GetExecutionHistoryInput,
    ListExecutionsInput, ListMachineCatalogInput, ListStateMachinesInput, ListTagsForResourceInput,
    Operation, PublishStateMachineVersionInput, RedriveExecutionInput, SendTaskFailureInput,
    SendTaskSuccessInput, StartExecutionInput, StateMachineAliasArnInput, StateMachineArnInput,
    StateMachineVersionArnInput, StopExecutionInput, TagResourceInput, TaskTokenInput,
    TestStateInput, UntagResourceInput, UpdateStateMachineAliasInput, UpdateStateMachineInput,
    ValidateDefinitionInput,
};
use crate::server::swf::SwfOperation;

/// Why a cluster refuses a start through a version or alias ARN.
pub const VERSIONS_NOT_IN_CLUSTER: &str =
    "starting a state machine version or alias is not served by a cluster yet (its partitions \
     import a machine's current revision only)";

/// Why a cluster refuses the Map Run operations (and `ListExecutions` by `mapRunArn`).
pub const MAP_RUNS_NOT_ROUTED: &str =
    "Distributed Map runs are not routed by a cluster yet (a Map Run's ARN does not name its \
     parent execution's partition)";

/// The partition that holds the catalog (the authority).
pub const CATALOG_PARTITION: PartitionIndex = PartitionIndex(0);

/// Where a call goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The owner of this partition answers it.
    Partition(PartitionIndex),
    /// The catalog's authority (the owner of [`CATALOG_PARTITION`]).
    Catalog,
    /// Every partition's owner; the answers are merged.
    AllPartitions,
}

/// Why a call has no target.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RouteError {
    /// The body is refused, with the error the single-node server answers for it.
    #[error(transparent)]
    Input(#[from] Error),
    /// A `StartExecution` without a name reached routing: the receiving node must draw its
    /// name first ([`name_unnamed_start`]), or a retry on another node would start a second
    /// execution.
    #[error("StartExecution without a name cannot be routed: name it first")]
    UnnamedStart,
    /// The partition count or a key part is out of range.
    #[error(transparent)]
    Partition(#[from] statelog_cluster::Error),
}

fn input<T: DeserializeOwned>(operation: Operation, body: &[u8]) -> Result<T, RouteError> {
    Ok(decode(operation, body)?)
}

/// The partition of the execution `arn` (which must be an execution ARN, as the single-node
/// server requires).
pub fn execution_partition(arn: &str, partitions: u32) -> Result<PartitionIndex, RouteError> {
    let parsed = Arn::parse_as(arn, &[ResourceType::Execution]).map_err(engine_error)?;
    match parsed.resource {
        Resource::Execution { machine, name } => Ok(partition_of_execution(
            parsed.account,
            machine,
            name,
            partitions,
        )?),
        // `parse_as` allowed only executions.
        other => Err(RouteError::Input(Error::Internal {
            detail: format!("an execution ARN parsed as {other:?}"),
        })),
    }
}

/// The partition of the execution a Step Functions task token names.
pub fn token_partition(token: &str, partitions: u32) -> Result<PartitionIndex, RouteError> {
    let parts = parse_token(token).map_err(|error| {
        engine_error(EngineError::InvalidTaskToken {
            reason: error.into(),
        })
    })?;
    // A well-formed token whose execution part is not an execution ARN names no task: the
    // single-node server answers it as an unknown token, not as a bad ARN.
    execution_partition(&parts.execution_arn, partitions).map_err(|error| match error {
        RouteError::Input(Error::Engine {
            aws_name: "InvalidArn",
            ..
        }) => RouteError::Input(engine_error(EngineError::InvalidTaskToken {
            reason: TaskTokenReason::Unknown,
        })),
        other => other,
    })
}

/// Why a cluster answers `StartSyncExecution` with `NotSupported`.
pub const SYNC_EXECUTION_NOT_ROUTED: &str =
    "synchronous Express executions are not served by a cluster yet (a single-node server serves them)";

/// The target of a Step Functions call with body `body`, among `partitions` partitions.
pub fn route(operation: Operation, body: &[u8], partitions: u32) -> Result<Target, RouteError> {
    statelog_cluster::partition::check_count(partitions)?;
    let at = |partition: PartitionIndex| Ok(Target::Partition(partition));
    match operation {
        Operation::CreateStateMachine => {
            input::<CreateStateMachineInput>(operation, body)?.validate()?;
            Ok(Target::Catalog)
        }
        Operation::DescribeStateMachine | Operation::DeleteStateMachine => {
            input::<StateMachineArnInput>(operation, body)?.validate()?;
            Ok(Target::Catalog)
        }
        Operation::UpdateStateMachine => {
            input::<UpdateStateMachineInput>(operation, body)?.validate()?;
            Ok(Target::Catalog)
        }
        Operation::ListStateMachines | Operation::ListActivities => {
            input::<ListStateMachinesInput>(operation, body)?.validate()?;
            Ok(Target::Catalog)
        }
        // Answered by whichever node receives it: it reads nothing. Routed to the catalog so
        // that every call has an owner.
        Operation::ValidateStateMachineDefinition => {
            input::<ValidateDefinitionInput>(operation, body)?.validate()?;
            Ok(Target::Catalog)
        }
        // Answered by whichever node receives it, without an engine (`ClusterBackend::place`
        // keeps it here): it reads and writes nothing. Routed to the catalog so that every
        // call has an owner.
        Operation::TestState => {
            input::<TestStateInput>(operation, body)?.validate()?;
            Ok(Target::Catalog)
        }
        Operation::CreateActivity => {
            input::<CreateActivityInput>(operation, body)?.validate()?;
            Ok(Target::Catalog)
        }
        Operation::DescribeActivity | Operation::DeleteActivity => {
            input::<ActivityArnInput>(operation, body)?.validate()?;
            Ok(Target::Catalog)
        }
        Operation::TagResource => {
            input::<TagResourceInput>(operation, body)?.validate()?;
            Ok(Target::Catalog)
        }
        Operation::UntagResource => {
            input::<UntagResourceInput>(operation, body)?.validate()?;
            Ok(Target::Catalog)
        }
        Operation::ListTagsForResource => {
            input::<ListTagsForResourceInput>(operation, body)?.validate()?;
            Ok(Target::Catalog)
        }
        Operation::StartExecution => {
            let start: StartExecutionInput = input(operation, body)?;
            start.validate()?;
            let (machine, qualifier) =
                parse_machine(&start.state_machine_arn).map_err(engine_error)?;
            if qualifier.is_some() {
                // A partition imports a machine's current revision, not its versions.
                return Err(RouteError::Input(Error::NotSupported {
                    operation: operation.name().to_owned(),
                    reason: VERSIONS_NOT_IN_CLUSTER,
                }));
            }
            let Some(name) = start.name.as_deref() else {
                return Err(RouteError::UnnamedStart);
            };
            at(partition_of_execution(
                machine.account,
                machine.resource.name(),
                name,
                partitions,
            )?)
        }
        Operation::DescribeExecution | Operation::DescribeStateMachineForExecution => {
            let call: ExecutionArnInput = input(operation, body)?;
            call.validate()?;
            at(execution_partition(&call.execution_arn, partitions)?)
        }
        Operation::StopExecution => {
            let call: StopExecutionInput = input(operation, body)?;
            call.validate()?;
            at(execution_partition(&call.execution_arn, partitions)?)
        }
        Operation::GetExecutionHistory => {
            let call: GetExecutionHistoryInput = input(operation, body)?;
            call.validate()?;
            at(execution_partition(&call.execution_arn, partitions)?)
        }
        Operation::RedriveExecution => {
            let call: RedriveExecutionInput = input(operation, body)?;
            call.validate()?;
            at(execution_partition(&call.execution_arn, partitions)?)
        }
        Operation::SendTaskSuccess => {
            let call: SendTaskSuccessInput = input(operation, body)?;
            call.validate()?;
            at(token_partition(&call.task_token, partitions)?)
        }
        Operation::SendTaskFailure => {
            let call: SendTaskFailureInput = input(operation, body)?;
            call.validate()?;
            at(token_partition(&call.task_token, partitions)?)
        }
        Operation::SendTaskHeartbeat => {
            let call: TaskTokenInput = input(operation, body)?;
            call.validate()?;
            at(token_partition(&call.task_token, partitions)?)
        }
        Operation::PublishStateMachineVersion => {
            input::<PublishStateMachineVersionInput>(operation, body)?.validate()?;
            Ok(Target::Catalog)
        }
        Operation::ListStateMachineVersions | Operation::ListStateMachineAliases => {
            input::<ListMachineCatalogInput>(operation, body)?.validate()?;
            Ok(Target::Catalog)
        }
        Operation::DeleteStateMachineVersion => {
            input::<StateMachineVersionArnInput>(operation, body)?.validate()?;
            Ok(Target::Catalog)
        }
        Operation::CreateStateMachineAlias => {
            input::<CreateStateMachineAliasInput>(operation, body)?.validate()?;
            Ok(Target::Catalog)
        }
        Operation::DescribeStateMachineAlias | Operation::DeleteStateMachineAlias => {
            input::<StateMachineAliasArnInput>(operation, body)?.validate()?;
            Ok(Target::Catalog)
        }
        Operation::UpdateStateMachineAlias => {
            input::<UpdateStateMachineAliasInput>(operation, body)?.validate()?;
            Ok(Target::Catalog)
        }
        Operation::ListExecutions => {
            let list = input::<ListExecutionsInput>(operation, body)?;
            list.validate()?;
            if list.map_run_arn.is_some() {
                return Err(RouteError::Input(Error::NotSupported {
                    operation: operation.name().to_owned(),
                    reason: MAP_RUNS_NOT_ROUTED,
                }));
            }
            Ok(Target::AllPartitions)
        }
        Operation::DescribeMapRun | Operation::ListMapRuns | Operation::UpdateMapRun => {
            Err(RouteError::Input(Error::NotSupported {
                operation: operation.name().to_owned(),
                reason: MAP_RUNS_NOT_ROUTED,
            }))
        }
        Operation::GetActivityTask => {
            input::<GetActivityTaskInput>(operation, body)?.validate()?;
            Ok(Target::AllPartitions)
        }
        // A synchronous Express execution answers when it ends (up to 5 minutes): a forwarded
        // call waits at most `FORWARD_CALL_TIMEOUT_MS`, so a cluster does not serve it yet.
        // (An Express `StartExecution` is routed as any start: its partition imports the
        // machine with its type and runs it in memory.)
        Operation::StartSyncExecution => Err(RouteError::Input(Error::NotSupported {
            operation: operation.name().to_owned(),
            reason: SYNC_EXECUTION_NOT_ROUTED,
        })),
        // Every operation is routed today; an operation named but not served yet lands here.
        #[allow(unreachable_patterns)]
        later => Err(RouteError::Input(Error::NotSupported {
            operation: later.name().to_owned(),
            reason: later
                .not_served_reason()
                .unwrap_or("it has no route in a cluster"),
        })),
    }
}

/// The members of SWF inputs routing reads; every other member is the owner's to check.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SwfKey {
    domain: Option<String>,
    workflow_id: Option<String>,
    execution: Option<SwfExecution>,
    task_token: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SwfExecution {
    workflow_id: Option<String>,
}

/// The target of an Amazon SWF call with body `body` of the caller `account`, among
/// `partitions` partitions. A body routing cannot read (not JSON, a member missing or of
/// another type) goes to the catalog's owner, whose dispatch answers it exactly as a single
/// node does.
pub fn route_swf(
    operation: SwfOperation,
    account: &str,
    body: &[u8],
    partitions: u32,
) -> Result<Target, RouteError> {
    use SwfOperation as Op;
    statelog_cluster::partition::check_count(partitions)?;
    let key: Option<SwfKey> = serde_json::from_slice(body).ok();
    let run = |domain: Option<&String>, workflow_id: Option<&String>| match (domain, workflow_id) {
        (Some(domain), Some(workflow_id)) => Ok(Target::Partition(partition_of_swf_run(
            account,
            domain,
            workflow_id,
            partitions,
        )?)),
        _ => Ok(Target::Catalog),
    };
    match operation {
        Op::StartWorkflowExecution
        | Op::SignalWorkflowExecution
        | Op::RequestCancelWorkflowExecution
        | Op::TerminateWorkflowExecution => {
            let key = key.unwrap_or_default();
            run(key.domain.as_ref(), key.workflow_id.as_ref())
        }
        Op::DescribeWorkflowExecution | Op::GetWorkflowExecutionHistory => {
            let key = key.unwrap_or_default();
            let workflow_id = key.execution.as_ref().and_then(|e| e.workflow_id.as_ref());
            run(key.domain.as_ref(), workflow_id)
        }
        Op::RespondDecisionTaskCompleted
        | Op::RespondActivityTaskCompleted
        | Op::RespondActivityTaskFailed
        | Op::RespondActivityTaskCanceled
        | Op::RecordActivityTaskHeartbeat => {
            match key.and_then(|key| key.task_token) {
                // A Step Functions activity task answered through SWF's worker API.
                Some(token) if parse_token(&token).is_ok() => {
                    Ok(Target::Partition(token_partition(&token, partitions)?))
                }
                Some(_) => Ok(Target::AllPartitions),
                None => Ok(Target::Catalog),
            }
        }
        Op::PollForDecisionTask
        | Op::PollForActivityTask
        | Op::CountPendingActivityTasks
        | Op::CountPendingDecisionTasks
        | Op::ListOpenWorkflowExecutions
        | Op::ListClosedWorkflowExecutions
        | Op::CountOpenWorkflowExecutions
        | Op::CountClosedWorkflowExecutions => Ok(Target::AllPartitions),
        // Domains, types and tags: the catalog.
        _ => Ok(Target::Catalog),
    }
}

/// Gives an unnamed `StartExecution` body a name drawn by `draw` (the receiving node's
/// generator), so the start can be routed and retried; a named one is returned as it is.
/// A body that does not read as a JSON object is returned unchanged (routing then answers the
/// single-node error for it).
pub fn name_unnamed_start(
    body: &[u8],
    draw: impl FnOnce() -> Result<String, Error>,
) -> Result<Vec<u8>, Error> {
    let Ok(serde_json::Value::Object(mut object)) = serde_json::from_slice(body) else {
        return Ok(body.to_vec());
    };
    if object.get("name").is_some_and(|name| !name.is_null()) {
        return Ok(body.to_vec());
    }
    object.insert("name".into(), serde_json::Value::String(draw()?));
    serde_json::to_vec(&serde_json::Value::Object(object)).map_err(|error| Error::Internal {
        detail: format!("cannot encode a named StartExecution body: {error}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};
    use std::sync::Arc;

    const ACCOUNT: &str = "123456789012";
    const MACHINE_ARN: &str = "arn:aws:states:us-east-1:123456789012:stateMachine:orders";
    const EXECUTION_ARN: &str = "arn:aws:states:us-east-1:123456789012:execution:orders:run-1";
    const ACTIVITY_ARN: &str = "arn:aws:states:us-east-1:123456789012:activity:pack";
    const PARTITIONS: u32 = 16;

    fn body(value: Value) -> Vec<u8> {
        value.to_string().into_bytes()
    }

    fn routed(operation: Operation, value: Value) -> Target {
        route(operation, &body(value), PARTITIONS)
            .unwrap_or_else(|error| panic!("{}: {error}", operation.name()))
    }

    fn run_1() -> Target {
        Target::Partition(
            partition_of_execution(ACCOUNT, "orders", "run-1", PARTITIONS).expect("in range"),
        )
    }

    /// A token as the engine composes it: a 24-byte secret, the execution ARN, the task id,
    /// each part base64url without padding, dot-separated.
    fn token_of(execution_arn: &str) -> String {
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        use base64::Engine as _;
        format!(
            "{}.{}.7",
            URL_SAFE_NO_PAD.encode([9_u8; 24]),
            URL_SAFE_NO_PAD.encode(execution_arn)
        )
    }

    /// The AWS error name and message of a refused route.
    fn refusal(operation: Operation, value: Value) -> (String, String) {
        match route(operation, &body(value), PARTITIONS) {
            Err(RouteError::Input(error)) => (error.aws_name().to_string(), error.to_string()),
            other => panic!("{}: {other:?}", operation.name()),
        }
    }

    #[test]
    fn versions_and_aliases_go_to_the_authority_and_their_starts_are_refused() {
        let version = format!("{MACHINE_ARN}:1");
        let alias = format!("{MACHINE_ARN}:prod");
        let routing = json!([{"stateMachineVersionArn": version, "weight": 100}]);
        for (operation, value) in [
            (
                Operation::PublishStateMachineVersion,
                json!({"stateMachineArn": MACHINE_ARN}),
            ),
            (
                Operation::ListStateMachineVersions,
                json!({"stateMachineArn": MACHINE_ARN}),
            ),
            (
                Operation::DeleteStateMachineVersion,
                json!({"stateMachineVersionArn": version}),
            ),
            (
                Operation::CreateStateMachineAlias,
                json!({"name": "prod", "routingConfiguration": routing}),
            ),
            (
                Operation::DescribeStateMachineAlias,
                json!({"stateMachineAliasArn": alias}),
            ),
            (
                Operation::UpdateStateMachineAlias,
                json!({"stateMachineAliasArn": alias, "description": "d"}),
            ),
            (
                Operation::DeleteStateMachineAlias,
                json!({"stateMachineAliasArn": alias}),
            ),
            (
                Operation::ListStateMachineAliases,
                json!({"stateMachineArn": MACHINE_ARN}),
            ),
        ] {
            assert_eq!(
                route(operation, &body(value), PARTITIONS).expect("routes"),
                Target::Catalog,
                "{}",
                operation.name()
            );
        }
        for qualified in [&version, &alias] {
            let (name, message) = refusal(
                Operation::StartExecution,
                json!({"stateMachineArn": qualified, "name": "n"}),
            );
            assert_eq!(name, "UnsupportedOperation");
            assert!(message.contains(VERSIONS_NOT_IN_CLUSTER), "{message}");
        }
    }

    #[test]
    fn catalog_operations_go_to_the_authority() {
        let cases = [
            (
                Operation::CreateStateMachine,
                json!({"name": "orders", "definition": "{}", "roleArn": "arn:aws:iam::123456789012:role/r"}),
            ),
            (
                Operation::DescribeStateMachine,
                json!({"stateMachineArn": MACHINE_ARN}),
            ),
            (
                Operation::DeleteStateMachine,
                json!({"stateMachineArn": MACHINE_ARN}),
            ),
            (
                Operation::UpdateStateMachine,
                json!({"stateMachineArn": MACHINE_ARN, "definition": "{}"}),
            ),
            (Operation::ListStateMachines, json!({})),
            (
                Operation::ValidateStateMachineDefinition,
                json!({"definition": "{}"}),
            ),
            (
                Operation::TestState,
                json!({"definition": "{\"Type\": \"Pass\", \"End\": true}"}),
            ),
            (Operation::CreateActivity, json!({"name": "pack"})),
            (
                Operation::DescribeActivity,
                json!({"activityArn": ACTIVITY_ARN}),
            ),
            (
                Operation::DeleteActivity,
                json!({"activityArn": ACTIVITY_ARN}),
            ),
            (Operation::ListActivities, json!({"maxResults": 10})),
            (
                Operation::TagResource,
                json!({"resourceArn": MACHINE_ARN, "tags": [{"key": "k", "value": "v"}]}),
            ),
            (
                Operation::UntagResource,
                json!({"resourceArn": MACHINE_ARN, "tagKeys": ["k"]}),
            ),
            (
                Operation::ListTagsForResource,
                json!({"resourceArn": ACTIVITY_ARN}),
            ),
        ];
        for (operation, value) in cases {
            assert_eq!(
                routed(operation, value),
                Target::Catalog,
                "{}",
                operation.name()
            );
        }
    }

    #[test]
    fn execution_operations_go_to_the_execution_partition() {
        let cases = [
            (
                Operation::DescribeExecution,
                json!({"executionArn": EXECUTION_ARN}),
            ),
            (
                Operation::DescribeStateMachineForExecution,
                json!({"executionArn": EXECUTION_ARN}),
            ),
            (
                Operation::StopExecution,
                json!({"executionArn": EXECUTION_ARN}),
            ),
            (
                Operation::GetExecutionHistory,
                json!({"executionArn": EXECUTION_ARN, "maxResults": 5}),
            ),
            (
                Operation::RedriveExecution,
                json!({"executionArn": EXECUTION_ARN}),
            ),
            (
                Operation::StartExecution,
                json!({"stateMachineArn": MACHINE_ARN, "name": "run-1", "input": "{}"}),
            ),
        ];
        for (operation, value) in cases {
            assert_eq!(routed(operation, value), run_1(), "{}", operation.name());
        }
        // The golden value of partition.rs: the route is the cluster's one mapping.
        assert_eq!(run_1(), Target::Partition(PartitionIndex(7)));
        let other = routed(
            Operation::DescribeExecution,
            json!({"executionArn": "arn:aws:states:us-east-1:123456789012:execution:orders:run-2"}),
        );
        assert_eq!(other, Target::Partition(PartitionIndex(10)));
    }

    #[test]
    fn task_tokens_go_where_their_execution_is() {
        let token = token_of(EXECUTION_ARN);
        let cases = [
            (
                Operation::SendTaskSuccess,
                json!({"taskToken": token, "output": "{}"}),
            ),
            (
                Operation::SendTaskFailure,
                json!({"taskToken": token, "error": "E", "cause": "c"}),
            ),
            (Operation::SendTaskHeartbeat, json!({"taskToken": token})),
        ];
        for (operation, value) in cases {
            assert_eq!(routed(operation, value), run_1(), "{}", operation.name());
        }
    }

    #[test]
    fn listing_a_map_runs_children_is_refused_typed() {
        let map_run = "arn:aws:states:us-east-1:123456789012:mapRun:orders/L:1";
        let (name, message) = refusal(Operation::ListExecutions, json!({"mapRunArn": map_run}));
        assert_eq!(name, "UnsupportedOperation");
        assert!(message.contains(MAP_RUNS_NOT_ROUTED), "{message}");
    }

    #[test]
    fn spanning_operations_go_to_every_partition() {
        assert_eq!(
            routed(
                Operation::ListExecutions,
                json!({"stateMachineArn": MACHINE_ARN})
            ),
            Target::AllPartitions
        );
        assert_eq!(
            routed(
                Operation::GetActivityTask,
                json!({"activityArn": ACTIVITY_ARN})
            ),
            Target::AllPartitions
        );
    }

    #[test]
    fn every_operation_has_a_route_or_its_single_node_refusal() {
        for &operation in Operation::ALL {
            let result = route(operation, b"{}", PARTITIONS);
            match operation.not_served_reason() {
                Some(reason) => match result {
                    Err(RouteError::Input(Error::NotSupported {
                        operation: name,
                        reason: why,
                    })) => {
                        assert_eq!(name, operation.name());
                        assert_eq!(why, reason);
                    }
                    other => panic!("{}: {other:?}", operation.name()),
                },
                // Served by a single node, not by a cluster yet.
                None if operation == Operation::StartSyncExecution => match result {
                    Err(RouteError::Input(Error::NotSupported { reason, .. })) => {
                        assert_eq!(reason, SYNC_EXECUTION_NOT_ROUTED);
                    }
                    other => panic!("{}: {other:?}", operation.name()),
                },
                // Served by a single node, not routed by a cluster yet.
                None if matches!(
                    operation,
                    Operation::DescribeMapRun | Operation::ListMapRuns | Operation::UpdateMapRun
                ) =>
                {
                    match result {
                        Err(RouteError::Input(Error::NotSupported { reason, .. })) => {
                            assert_eq!(reason, MAP_RUNS_NOT_ROUTED);
                        }
                        other => panic!("{}: {other:?}", operation.name()),
                    }
                }
                // An empty body is refused for its missing members or routed; never anything
                // else.
                None => match result {
                    Ok(_) | Err(RouteError::Input(Error::Validation { .. })) => {}
                    other => panic!("{}: {other:?}", operation.name()),
                },
            }
        }
    }

    #[test]
    fn an_unnamed_start_is_named_first() {
        let unnamed = body(json!({"stateMachineArn": MACHINE_ARN, "input": "{}"}));
        assert!(matches!(
            route(Operation::StartExecution, &unnamed, PARTITIONS),
            Err(RouteError::UnnamedStart)
        ));
        let named = name_unnamed_start(&unnamed, || Ok("run-1".to_string())).expect("named");
        let value: Value = serde_json::from_slice(&named).expect("json");
        assert_eq!(value["name"], "run-1");
        assert_eq!(value["input"], "{}");
        assert_eq!(
            route(Operation::StartExecution, &named, PARTITIONS).expect("routes"),
            run_1()
        );
        // A named start keeps its name; the generator is not asked.
        let again = name_unnamed_start(&named, || panic!("not drawn")).expect("unchanged");
        assert_eq!(again, named);
    }

    #[test]
    fn malformed_arns_and_tokens_are_refused_in_the_single_node_words() {
        assert_eq!(
            refusal(
                Operation::DescribeExecution,
                json!({"executionArn": "base"})
            ),
            (
                "InvalidArn".to_string(),
                "invalid ARN 'base': Invalid ARN prefix: it must start with 'arn:'".to_string()
            )
        );
        let (name, message) = refusal(
            Operation::StopExecution,
            json!({"executionArn": MACHINE_ARN}),
        );
        assert_eq!(name, "InvalidArn");
        assert!(message.contains(MACHINE_ARN), "{message}");
        let (name, message) = refusal(
            Operation::StartExecution,
            json!({"stateMachineArn": EXECUTION_ARN, "name": "n"}),
        );
        assert_eq!(name, "InvalidArn");
        assert!(message.contains(EXECUTION_ARN), "{message}");
        assert_eq!(
            refusal(Operation::SendTaskHeartbeat, json!({"taskToken": "abc"})),
            (
                "InvalidToken".to_string(),
                "invalid task token: not a task token: it does not have three dot-separated parts"
                    .to_string()
            )
        );
        // A token whose execution part is not an execution ARN names no task.
        assert_eq!(
            refusal(
                Operation::SendTaskSuccess,
                json!({"taskToken": token_of(MACHINE_ARN), "output": "{}"}),
            ),
            (
                "InvalidToken".to_string(),
                "invalid task token: no task of this namespace has this token".to_string()
            )
        );
        // A missing member is named as the single-node decoder names it.
        let (name, message) = refusal(Operation::DescribeExecution, json!({}));
        assert_eq!(name, "ValidationException");
        assert!(message.contains("executionArn"), "{message}");
    }

    /// The same bodies through the single-node server (router + engine backend over a memory
    /// log) answer the same error name and message as routing refuses them with.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn refusals_match_the_single_node_server() {
        use crate::clock::ManualClock;
        use crate::engine::{Engine, EngineOptions};
        use crate::server::engine_backend::EngineBackend;
        use crate::server::sigv4::{signed_json_request, SigningParams};
        use crate::server::ServerState;
        use tower::ServiceExt as _;
        // Development mode's one account (the ARNs' accounts do not matter: each body is
        // refused before anything is looked up).
        const DEV_ACCOUNT: &str = "000000000000";

        let clock = ManualClock::new(1_700_000_000_000);
        let options = EngineOptions {
            clock: Arc::new(clock.clone()),
            background_timers: false,
            worker_threads: 1,
            account: DEV_ACCOUNT.to_string(),
            ..EngineOptions::default()
        };
        let engine =
            Engine::open_with_log(Arc::new(crate::store::MemoryLog::new()), options.clone())
                .expect("engine");
        let dir = tempfile::tempdir().expect("dir");
        let backend = EngineBackend::with_open_engine(dir.path(), DEV_ACCOUNT, engine, options);
        let state = ServerState::new(backend, None, Arc::new(clock.clone()));
        let cases = [
            (
                Operation::DescribeExecution,
                json!({"executionArn": "base"}),
            ),
            (
                Operation::StopExecution,
                json!({"executionArn": MACHINE_ARN}),
            ),
            (
                Operation::StartExecution,
                json!({"stateMachineArn": EXECUTION_ARN, "name": "n"}),
            ),
            (Operation::SendTaskHeartbeat, json!({"taskToken": "abc"})),
            (
                Operation::SendTaskSuccess,
                json!({"taskToken": token_of(MACHINE_ARN), "output": "{}"}),
            ),
            (Operation::GetExecutionHistory, json!({})),
        ];
        for (operation, value) in cases {
            let (name, message) = refusal(operation, value.clone());
            let target = format!("AWSStepFunctions.{}", operation.name());
            let params = SigningParams {
                access_key_id: "AKIDDEV",
                secret_access_key: "secret",
                region: "us-east-1",
                service: "states",
                now_ms: 1_700_000_000_000,
            };
            let request = signed_json_request("127.0.0.1:8080", &target, body(value), &params)
                .expect("signable");
            let response = crate::server::router::router(state.clone())
                .oneshot(request)
                .await
                .expect("the router is infallible");
            let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
                .await
                .expect("reads");
            let answer: Value = serde_json::from_slice(&bytes).expect("json");
            let wire = answer["__type"].as_str().unwrap_or("");
            assert_eq!(wire.rsplit('#').next(), Some(name.as_str()), "{answer}");
            assert_eq!(
                answer["message"].as_str(),
                Some(message.as_str()),
                "{answer}"
            );
        }
    }

    #[test]
    fn swf_runs_go_by_domain_and_workflow_id() {
        let run = Target::Partition(
            partition_of_swf_run(ACCOUNT, "shop", "order-17", PARTITIONS).expect("in range"),
        );
        assert_eq!(
            run,
            Target::Partition(PartitionIndex(12)),
            "the golden value"
        );
        let by_id = json!({"domain": "shop", "workflowId": "order-17"});
        for operation in [
            SwfOperation::StartWorkflowExecution,
            SwfOperation::SignalWorkflowExecution,
            SwfOperation::RequestCancelWorkflowExecution,
            SwfOperation::TerminateWorkflowExecution,
        ] {
            assert_eq!(
                route_swf(operation, ACCOUNT, &body(by_id.clone()), PARTITIONS).expect("routes"),
                run,
                "{operation:?}"
            );
        }
        let by_execution =
            json!({"domain": "shop", "execution": {"workflowId": "order-17", "runId": "r"}});
        for operation in [
            SwfOperation::DescribeWorkflowExecution,
            SwfOperation::GetWorkflowExecutionHistory,
        ] {
            assert_eq!(
                route_swf(operation, ACCOUNT, &body(by_execution.clone()), PARTITIONS)
                    .expect("routes"),
                run,
                "{operation:?}"
            );
        }
        // Another account's workflow of the same id is another key.
        let elsewhere = route_swf(
            SwfOperation::StartWorkflowExecution,
            "222222222222",
            &body(by_id),
            1_024,
        )
        .expect("routes");
        let here = route_swf(
            SwfOperation::StartWorkflowExecution,
            ACCOUNT,
            &body(json!({"domain": "shop", "workflowId": "order-17"})),
            1_024,
        )
        .expect("routes");
        assert_ne!(elsewhere, here);
    }

    #[test]
    fn swf_task_lists_span_partitions_and_the_registry_is_the_catalog() {
        let list = body(json!({"domain": "shop", "taskList": {"name": "l"}}));
        for operation in [
            SwfOperation::PollForDecisionTask,
            SwfOperation::PollForActivityTask,
            SwfOperation::CountPendingActivityTasks,
            SwfOperation::CountPendingDecisionTasks,
            SwfOperation::ListOpenWorkflowExecutions,
            SwfOperation::ListClosedWorkflowExecutions,
            SwfOperation::CountOpenWorkflowExecutions,
            SwfOperation::CountClosedWorkflowExecutions,
        ] {
            assert_eq!(
                route_swf(operation, ACCOUNT, &list, PARTITIONS).expect("routes"),
                Target::AllPartitions,
                "{operation:?}"
            );
        }
        for operation in [
            SwfOperation::RegisterDomain,
            SwfOperation::DescribeDomain,
            SwfOperation::ListDomains,
            SwfOperation::RegisterWorkflowType,
            SwfOperation::ListActivityTypes,
            SwfOperation::DeleteActivityType,
            SwfOperation::TagResource,
        ] {
            assert_eq!(
                route_swf(operation, ACCOUNT, b"{\"domain\":\"shop\"}", PARTITIONS)
                    .expect("routes"),
                Target::Catalog,
                "{operation:?}"
            );
        }
    }

    #[test]
    fn swf_tokens_go_to_their_execution_or_to_every_partition() {
        let sfn = body(json!({"taskToken": token_of(EXECUTION_ARN)}));
        let swf = body(json!({"taskToken": "AQNydW4AAAAAAAAABQ"}));
        for operation in [
            SwfOperation::RespondActivityTaskCompleted,
            SwfOperation::RespondActivityTaskFailed,
            SwfOperation::RespondActivityTaskCanceled,
            SwfOperation::RecordActivityTaskHeartbeat,
            SwfOperation::RespondDecisionTaskCompleted,
        ] {
            assert_eq!(
                route_swf(operation, ACCOUNT, &sfn, PARTITIONS).expect("routes"),
                run_1(),
                "{operation:?}"
            );
            assert_eq!(
                route_swf(operation, ACCOUNT, &swf, PARTITIONS).expect("routes"),
                Target::AllPartitions,
                "{operation:?}"
            );
            // Unreadable: the authority's dispatch answers it as one node does.
            assert_eq!(
                route_swf(operation, ACCOUNT, b"[1]", PARTITIONS).expect("routes"),
                Target::Catalog
            );
        }
    }

    #[test]
    fn a_partition_count_out_of_range_is_refused() {
        let value = body(json!({"executionArn": EXECUTION_ARN}));
        assert!(matches!(
            route(Operation::DescribeExecution, &value, 0),
            Err(RouteError::Partition(
                statelog_cluster::Error::PartitionCount { count: 0, .. }
            ))
        ));
        assert!(matches!(
            route_swf(SwfOperation::ListDomains, ACCOUNT, b"{}", 0),
            Err(RouteError::Partition(
                statelog_cluster::Error::PartitionCount { count: 0, .. }
            ))
        ));
    }
}
