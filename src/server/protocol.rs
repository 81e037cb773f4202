//! protocol: the AWS JSON 1.0 wire format of Step Functions: operation names, input shapes read
//! from the body, output shapes written back, timestamps as epoch seconds.
//!
//! Owns [`Operation`] (every operation the service model names, and which of them statelog
//! serves) and the `*Input` structs (camelCase members, as the service model spells them).
//! Invariants: a body that is not JSON, or not an object, or has a member of the wrong type is a
//! `SerializationException`; a missing required member or a broken constraint is a
//! `ValidationException` naming the member. Unknown members are ignored, as AWS does, so newer
//! SDKs keep working. Must not: call the engine or hold state.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use super::error::Error;
use super::limits::{
    ARN_BYTES_MAX, CLIENT_TOKEN_CHARS_MAX, NAME_CHARS_MAX, NEXT_TOKEN_CHARS_MAX, PAGE_RESULTS_MAX,
    STOP_CAUSE_CHARS_MAX, STOP_ERROR_CHARS_MAX, TASK_TOKEN_CHARS_MAX,
};
use crate::engine::test_state::{InspectionLevel, TestMock, TestStateRequest};
use crate::engine::MachineType;
use crate::limits::{DEFINITION_SIZE_BYTES_MAX, PAYLOAD_SIZE_BYTES_MAX};

/// The `X-Amz-Target` prefix of Step Functions operations.
pub const TARGET_PREFIX: &str = "AWSStepFunctions.";

/// The content type of AWS JSON 1.0 requests and responses.
pub const CONTENT_TYPE: &str = "application/x-amz-json-1.0";

macro_rules! operations {
    (served: [$($served:ident),* $(,)?], later: [$($later:ident => $why:literal),* $(,)?]) => {
        /// Every Step Functions operation statelog knows by name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum Operation {
            $(
                #[doc = concat!("`", stringify!($served), "` (served).")]
                $served,
            )*
            $(
                #[doc = concat!("`", stringify!($later), "` (not served yet: ", $why, ").")]
                $later,
            )*
        }

        impl Operation {
            /// Every known operation.
            pub const ALL: &'static [Operation] = &[$(Operation::$served,)* $(Operation::$later,)*];

            /// The operation's AWS name.
            pub fn name(self) -> &'static str {
                match self {
                    $(Operation::$served => stringify!($served),)*
                    $(Operation::$later => stringify!($later),)*
                }
            }

            /// The operation named `name`, if Step Functions has it.
            pub fn from_name(name: &str) -> Option<Operation> {
                match name {
                    $(stringify!($served) => Some(Operation::$served),)*
                    $(stringify!($later) => Some(Operation::$later),)*
                    _ => None,
                }
            }

            /// `None` when served; otherwise why not yet.
            pub fn not_served_reason(self) -> Option<&'static str> {
                match self {
                    $(Operation::$served => None,)*
                    $(Operation::$later => Some($why),)*
                }
            }
        }
    };
}

operations! {
    served: [
        CreateStateMachine, DescribeStateMachine, ListStateMachines, UpdateStateMachine,
        DeleteStateMachine, ValidateStateMachineDefinition, StartExecution, StartSyncExecution,
        DescribeExecution,
        DescribeStateMachineForExecution, ListExecutions, StopExecution, GetExecutionHistory,
        SendTaskSuccess, SendTaskFailure, SendTaskHeartbeat, RedriveExecution, CreateActivity,
        DescribeActivity, ListActivities, DeleteActivity, GetActivityTask,
        TagResource, UntagResource, ListTagsForResource,
        PublishStateMachineVersion, ListStateMachineVersions, DeleteStateMachineVersion,
        CreateStateMachineAlias, DescribeStateMachineAlias, ListStateMachineAliases,
        UpdateStateMachineAlias, DeleteStateMachineAlias, TestState,
        DescribeMapRun, ListMapRuns, UpdateMapRun,
    ],
    later: []
}

/// Resolves an `X-Amz-Target` header value to a served operation.
pub fn operation_of_target(target: Option<&str>) -> Result<Operation, Error> {
    let target = target.unwrap_or("(none)");
    let operation = target
        .strip_prefix(TARGET_PREFIX)
        .and_then(Operation::from_name)
        .ok_or_else(|| Error::UnknownOperation {
            target: target.to_owned(),
        })?;
    match operation.not_served_reason() {
        None => Ok(operation),
        Some(reason) => Err(Error::NotSupported {
            operation: operation.name().to_owned(),
            reason,
        }),
    }
}

/// Reads an operation's input from the body. An empty body is `{}`, as AWS treats it.
pub fn decode<T: DeserializeOwned>(operation: Operation, body: &[u8]) -> Result<T, Error> {
    decode_input(operation.name(), MEMBERS, body)
}

/// Why a request body is not the operation's input ([`Error::Serialization`] names the
/// operation).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SerializationReason {
    /// JSON, but not an object (an array, a string, a number).
    #[error("the body must be a JSON object")]
    NotAnObject,
    /// Not JSON at all.
    #[error("the body is not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// A JSON object whose members do not have the input's types (the decoder's words).
    #[error("{0}")]
    WrongShape(#[source] serde_json::Error),
}

/// Reads the input object of the operation named `operation` (named in errors): not JSON, not
/// an object or a wrong member type is a `SerializationException`; a missing required member is a
/// `ValidationException` naming it, when `members` (the names of the protocol's required members)
/// knows the name, else `?`. An empty body is `{}`, as AWS reads it.
pub(crate) fn decode_input<T: DeserializeOwned>(
    operation: &str,
    members: &[&'static str],
    body: &[u8],
) -> Result<T, Error> {
    let serialization = |reason: SerializationReason| Error::Serialization {
        operation: operation.to_owned(),
        reason,
    };
    let body: &[u8] = match body.iter().position(|b| !b.is_ascii_whitespace()) {
        None => b"{}",
        Some(first) if body[first] == b'{' => body,
        // A struct would also read from an array: only an object is an input.
        Some(_) => {
            return Err(
                match serde_json::from_slice::<serde::de::IgnoredAny>(body) {
                    Ok(_) => serialization(SerializationReason::NotAnObject),
                    Err(e) => serialization(SerializationReason::NotJson(e)),
                },
            )
        }
    };
    serde_json::from_slice(body).map_err(|e| {
        if e.is_syntax() || e.is_eof() {
            return serialization(SerializationReason::NotJson(e));
        }
        let text = e.to_string();
        match text.strip_prefix("missing field `") {
            Some(rest) => {
                let name = rest.split('`').next().unwrap_or("?");
                Error::Validation {
                    // A `'static` name from the known set (nothing leaks).
                    member: members.iter().find(|m| **m == name).copied().unwrap_or("?"),
                    constraint: "Member must not be null".into(),
                }
            }
            None => serialization(SerializationReason::WrongShape(e)),
        }
    })
}

/// The required members of the Step Functions operations' inputs, as serde names them.
const MEMBERS: &[&str] = &[
    "name",
    "definition",
    "roleArn",
    "stateMachineArn",
    "executionArn",
    "input",
    "taskToken",
    "activityArn",
    "output",
    "resourceArn",
    "tags",
    "tagKeys",
    "stateMachineVersionArn",
    "stateMachineAliasArn",
    "routingConfiguration",
    "mapRunArn",
];

/// Milliseconds since the epoch, written as epoch seconds with a fraction (AWS `timestamp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Timestamp(pub u64);

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(self.0 as f64 / 1000.0)
    }
}

fn check_len(member: &'static str, text: &str, chars_max: usize) -> Result<(), Error> {
    let count = text.chars().count();
    if count == 0 || count > chars_max {
        return Err(Error::Validation {
            member,
            constraint: format!("Member must have length between 1 and {chars_max} (got {count})"),
        });
    }
    Ok(())
}

fn check_arn(member: &'static str, arn: &str) -> Result<(), Error> {
    check_len(member, arn, ARN_BYTES_MAX)
}

fn check_max_results(max_results: Option<i64>) -> Result<u32, Error> {
    match max_results {
        None => Ok(0),
        Some(n) if (0..=i64::from(PAGE_RESULTS_MAX)).contains(&n) => {
            Ok(u32::try_from(n).unwrap_or(PAGE_RESULTS_MAX))
        }
        Some(n) => Err(Error::Validation {
            member: "maxResults",
            constraint: format!(
                "Member must have value between 0 and {PAGE_RESULTS_MAX} (got {n})"
            ),
        }),
    }
}

/// `CreateStateMachine` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateStateMachineInput {
    /// The machine's name (unique within the account).
    pub name: String,
    /// The ASL definition text.
    pub definition: String,
    /// The IAM role ARN (recorded and echoed; statelog has no IAM).
    pub role_arn: String,
    /// `STANDARD` (default) or `EXPRESS`.
    #[serde(rename = "type")]
    pub machine_type: Option<String>,
    /// Accepted and ignored (statelog keeps every STANDARD history in its log).
    pub logging_configuration: Option<Value>,
    /// Accepted and ignored.
    pub tracing_configuration: Option<Value>,
    /// Tags to set on the new machine.
    pub tags: Option<Vec<TagInput>>,
    /// Publish the new machine's revision as version 1.
    pub publish: Option<bool>,
    /// The description of the version `publish` makes (only with `publish: true`).
    pub version_description: Option<String>,
}

impl CreateStateMachineInput {
    /// Checks the service model's constraints.
    pub fn validate(&self) -> Result<(), Error> {
        check_len("name", &self.name, NAME_CHARS_MAX)?;
        check_arn("roleArn", &self.role_arn)?;
        check_machine_type(self.machine_type.as_deref()).map(|_| ())
    }

    /// The type asked for (STANDARD when absent); `validate` has checked it.
    pub fn machine_type(&self) -> Result<MachineType, Error> {
        check_machine_type(self.machine_type.as_deref())
    }
}

fn check_machine_type(machine_type: Option<&str>) -> Result<MachineType, Error> {
    match machine_type {
        None => Ok(MachineType::Standard),
        Some(name) => MachineType::from_aws_name(name).ok_or_else(|| Error::Validation {
            member: "type",
            constraint: format!(
                "Member must satisfy enum value set: [STANDARD, EXPRESS] (got {name:?})"
            ),
        }),
    }
}

/// Input of operations that name one state machine.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StateMachineArnInput {
    /// The machine's ARN.
    pub state_machine_arn: String,
}

impl StateMachineArnInput {
    /// Checks the service model's constraints.
    pub fn validate(&self) -> Result<(), Error> {
        check_arn("stateMachineArn", &self.state_machine_arn)
    }
}

/// Input of operations that name one execution.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionArnInput {
    /// The execution's ARN.
    pub execution_arn: String,
}

impl ExecutionArnInput {
    /// Checks the service model's constraints.
    pub fn validate(&self) -> Result<(), Error> {
        check_arn("executionArn", &self.execution_arn)
    }
}

/// `DescribeMapRun` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MapRunArnInput {
    /// The Map Run's ARN.
    pub map_run_arn: String,
}

impl MapRunArnInput {
    /// Checks the service model's constraints.
    pub fn validate(&self) -> Result<(), Error> {
        check_arn("mapRunArn", &self.map_run_arn)
    }
}

/// `ListMapRuns` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListMapRunsInput {
    /// The execution whose Map Runs are listed.
    pub execution_arn: String,
    /// Page size; 0 or absent for the default.
    pub max_results: Option<i64>,
    /// The token of the previous page.
    pub next_token: Option<String>,
}

impl ListMapRunsInput {
    /// Checks the service model's constraints; returns the page size (0 = default).
    pub fn validate(&self) -> Result<u32, Error> {
        check_arn("executionArn", &self.execution_arn)?;
        if let Some(token) = &self.next_token {
            check_len("nextToken", token, NEXT_TOKEN_CHARS_MAX)?;
        }
        check_max_results(self.max_results)
    }
}

/// `UpdateMapRun` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateMapRunInput {
    /// The Map Run's ARN.
    pub map_run_arn: String,
    /// The new `maxConcurrency` (0: as many as allowed).
    pub max_concurrency: Option<i64>,
    /// The new `toleratedFailurePercentage` (0 to 100).
    pub tolerated_failure_percentage: Option<f64>,
    /// The new `toleratedFailureCount`.
    pub tolerated_failure_count: Option<i64>,
}

impl UpdateMapRunInput {
    /// Checks the service model's constraints.
    pub fn validate(&self) -> Result<(), Error> {
        check_arn("mapRunArn", &self.map_run_arn)?;
        if self
            .max_concurrency
            .is_some_and(|n| !(0..=10_000).contains(&n))
        {
            return Err(Error::Validation {
                member: "maxConcurrency",
                constraint: "Member must have value between 0 and 10000".into(),
            });
        }
        if self
            .tolerated_failure_percentage
            .is_some_and(|p| !(0.0..=100.0).contains(&p))
        {
            return Err(Error::Validation {
                member: "toleratedFailurePercentage",
                constraint: "Member must have value between 0 and 100".into(),
            });
        }
        if self.tolerated_failure_count.is_some_and(|n| n < 0) {
            return Err(Error::Validation {
                member: "toleratedFailureCount",
                constraint: "Member must have value greater than or equal to 0".into(),
            });
        }
        Ok(())
    }
}

/// `ListStateMachines` input.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListStateMachinesInput {
    /// Page size; 0 or absent for the default.
    pub max_results: Option<i64>,
    /// The token of the previous page.
    pub next_token: Option<String>,
}

impl ListStateMachinesInput {
    /// Checks the service model's constraints; returns the page size (0 = default).
    pub fn validate(&self) -> Result<u32, Error> {
        check_max_results(self.max_results)
    }
}

/// `UpdateStateMachine` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateStateMachineInput {
    /// The machine to update.
    pub state_machine_arn: String,
    /// The new definition, if any.
    pub definition: Option<String>,
    /// The new role, if any.
    pub role_arn: Option<String>,
    /// Accepted and ignored.
    pub logging_configuration: Option<Value>,
    /// Accepted and ignored.
    pub tracing_configuration: Option<Value>,
    /// Publish the revision the update leaves current as a version.
    pub publish: Option<bool>,
    /// The description of the version `publish` makes (only with `publish: true`).
    pub version_description: Option<String>,
}

impl UpdateStateMachineInput {
    /// Checks the service model's constraints.
    pub fn validate(&self) -> Result<(), Error> {
        // Neither a definition nor a role is the engine's `MissingRequiredParameter`.
        check_arn("stateMachineArn", &self.state_machine_arn)
    }
}

/// One tag on the wire (`Tag`: `key`, `value`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct TagInput {
    /// The key (the engine checks 1 to 128 characters).
    #[serde(default)]
    pub key: String,
    /// The value (0 to 256 characters).
    #[serde(default)]
    pub value: String,
}

/// `TagResource` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TagResourceInput {
    /// The state machine or activity.
    pub resource_arn: String,
    /// The tags to add.
    pub tags: Vec<TagInput>,
}

impl TagResourceInput {
    /// Checks the service model's constraints.
    pub fn validate(&self) -> Result<(), Error> {
        check_arn("resourceArn", &self.resource_arn)
    }
}

/// `UntagResource` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UntagResourceInput {
    /// The state machine or activity.
    pub resource_arn: String,
    /// The keys of the tags to remove.
    pub tag_keys: Vec<String>,
}

impl UntagResourceInput {
    /// Checks the service model's constraints.
    pub fn validate(&self) -> Result<(), Error> {
        check_arn("resourceArn", &self.resource_arn)
    }
}

/// `ListTagsForResource` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTagsForResourceInput {
    /// The state machine or activity.
    pub resource_arn: String,
}

impl ListTagsForResourceInput {
    /// Checks the service model's constraints.
    pub fn validate(&self) -> Result<(), Error> {
        check_arn("resourceArn", &self.resource_arn)
    }
}

/// `ValidateStateMachineDefinition` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ValidateDefinitionInput {
    /// The ASL definition text.
    pub definition: String,
    /// `STANDARD` (default) or `EXPRESS`.
    #[serde(rename = "type")]
    pub machine_type: Option<String>,
    /// The lowest severity reported: `ERROR` (default) or `WARNING`.
    pub severity: Option<String>,
    /// The most diagnostics returned; 0 or absent for 100.
    pub max_results: Option<i64>,
}

impl ValidateDefinitionInput {
    /// The type to validate for (STANDARD when absent); `validate` has checked it.
    pub fn machine_type(&self) -> Result<MachineType, Error> {
        check_machine_type(self.machine_type.as_deref())
    }

    /// Checks the service model's constraints; returns the page size (0 = default).
    pub fn validate(&self) -> Result<u32, Error> {
        check_machine_type(self.machine_type.as_deref())?;
        match self.severity.as_deref() {
            None | Some("ERROR") | Some("WARNING") => {}
            Some(other) => {
                return Err(Error::Validation {
                    member: "severity",
                    constraint: format!(
                        "Member must satisfy enum value set: [ERROR, WARNING] (got {other:?})"
                    ),
                })
            }
        }
        check_max_results(self.max_results)
    }
}

/// `TestState` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TestStateInput {
    /// One state's definition, or a whole machine's with `stateName`.
    pub definition: String,
    /// Shown as `$$.Execution.RoleArn`; statelog assumes no role.
    pub role_arn: Option<String>,
    /// The state's input JSON text; `{}` when absent.
    pub input: Option<String>,
    /// `INFO` (default), `DEBUG` or `TRACE`.
    pub inspection_level: Option<String>,
    /// Refused together with a mock, as on AWS; nothing is secret otherwise.
    pub reveal_secrets: Option<bool>,
    /// The variables in scope, a JSON object's text.
    pub variables: Option<String>,
    /// The state of a whole machine to test.
    pub state_name: Option<String>,
    /// The mocked answer of a Task, Parallel or Map.
    pub mock: Option<TestStateMockInput>,
    /// The Context object's text (only with a mock).
    pub context: Option<String>,
    /// The state's configuration.
    pub state_configuration: Option<TestStateConfigurationInput>,
}

/// `TestState`'s `mock`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TestStateMockInput {
    /// The mocked result's JSON text.
    pub result: Option<String>,
    /// The mocked failure.
    pub error_output: Option<TestStateErrorOutput>,
    /// `STRICT` (default), `PRESENT` or `NONE`. statelog holds no service models to check a
    /// mocked result against, so every mode accepts any JSON result.
    pub field_validation_mode: Option<String>,
}

/// `TestState`'s `mock.errorOutput`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TestStateErrorOutput {
    /// The error name (required when `errorOutput` is given).
    pub error: Option<String>,
    /// The cause.
    pub cause: Option<String>,
}

/// `TestState`'s `stateConfiguration`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TestStateConfigurationInput {
    /// Retries already made by the Retrier that matches the mocked error.
    pub retrier_retry_count: Option<i64>,
    /// A Map's or Parallel's inner failing state (refused: not supported).
    pub error_caused_by_state: Option<String>,
    /// Failed Map iterations (refused: not supported).
    pub map_iteration_failure_count: Option<i64>,
    /// Distributed Map reader data (refused: not supported).
    pub map_item_reader_data: Option<String>,
}

impl TestStateInput {
    /// Checks the service model's constraints; returns the inspection level.
    pub fn validate(&self) -> Result<InspectionLevel, Error> {
        check_len("definition", &self.definition, DEFINITION_SIZE_BYTES_MAX)?;
        if let Some(role) = &self.role_arn {
            check_arn("roleArn", role)?;
        }
        if let Some(name) = &self.state_name {
            check_len("stateName", name, NAME_CHARS_MAX)?;
        }
        for (member, text) in [
            ("input", &self.input),
            ("variables", &self.variables),
            ("context", &self.context),
        ] {
            check_len_max(member, text.as_deref(), PAYLOAD_SIZE_BYTES_MAX)?;
        }
        if let Some(mock) = &self.mock {
            check_len_max(
                "mock.result",
                mock.result.as_deref(),
                PAYLOAD_SIZE_BYTES_MAX,
            )?;
            if let Some(error) = &mock.error_output {
                check_len_max(
                    "mock.errorOutput.error",
                    error.error.as_deref(),
                    STOP_ERROR_CHARS_MAX,
                )?;
                check_len_max(
                    "mock.errorOutput.cause",
                    error.cause.as_deref(),
                    STOP_CAUSE_CHARS_MAX,
                )?;
            }
            match mock.field_validation_mode.as_deref() {
                None | Some("STRICT") | Some("PRESENT") | Some("NONE") => {}
                Some(other) => {
                    return Err(Error::Validation {
                        member: "mock.fieldValidationMode",
                        constraint: format!(
                            "Member must satisfy enum value set: [STRICT, PRESENT, NONE] (got {other:?})"
                        ),
                    })
                }
            }
        }
        if let Some(configuration) = &self.state_configuration {
            for (member, count) in [
                (
                    "stateConfiguration.retrierRetryCount",
                    configuration.retrier_retry_count,
                ),
                (
                    "stateConfiguration.mapIterationFailureCount",
                    configuration.map_iteration_failure_count,
                ),
            ] {
                if count.is_some_and(|n| !(0..=i64::from(u32::MAX)).contains(&n)) {
                    return Err(Error::Validation {
                        member,
                        constraint: format!(
                            "Member must have value greater than or equal to 0 (got {count:?})"
                        ),
                    });
                }
            }
        }
        match self.inspection_level.as_deref() {
            None => Ok(InspectionLevel::Info),
            Some(name) => InspectionLevel::from_aws_name(name).ok_or_else(|| Error::Validation {
                member: "inspectionLevel",
                constraint: format!(
                    "Member must satisfy enum value set: [INFO, DEBUG, TRACE] (got {name:?})"
                ),
            }),
        }
    }

    /// The engine's request.
    pub fn into_request(self) -> TestStateRequest {
        let configuration = self.state_configuration;
        let count = |n: Option<i64>| n.and_then(|n| u32::try_from(n).ok());
        TestStateRequest {
            definition: self.definition,
            state_name: self.state_name,
            input: self.input,
            variables: self.variables,
            context: self.context,
            mock: self.mock.map(|mock| TestMock {
                result: mock.result,
                error_output: mock.error_output.is_some(),
                error: mock.error_output.as_ref().and_then(|e| e.error.clone()),
                cause: mock.error_output.and_then(|e| e.cause),
            }),
            role_arn: self.role_arn,
            retrier_retry_count: configuration
                .as_ref()
                .and_then(|c| count(c.retrier_retry_count)),
            reveal_secrets: self.reveal_secrets.unwrap_or(false),
            error_caused_by_state: configuration
                .as_ref()
                .and_then(|c| c.error_caused_by_state.clone()),
            map_iteration_failure_count: configuration
                .as_ref()
                .and_then(|c| count(c.map_iteration_failure_count)),
            map_item_reader_data: configuration.and_then(|c| c.map_item_reader_data),
        }
    }
}

/// `StartExecution` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StartExecutionInput {
    /// The machine to run.
    pub state_machine_arn: String,
    /// The execution's name; a fresh one when absent.
    pub name: Option<String>,
    /// The input JSON text; `{}` when absent.
    pub input: Option<String>,
    /// Accepted and ignored (no X-Ray).
    pub trace_header: Option<String>,
}

impl StartExecutionInput {
    /// Checks the service model's constraints.
    pub fn validate(&self) -> Result<(), Error> {
        check_arn("stateMachineArn", &self.state_machine_arn)?;
        if let Some(name) = &self.name {
            check_len("name", name, NAME_CHARS_MAX)?;
        }
        Ok(())
    }
}

/// `StartSyncExecution` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StartSyncExecutionInput {
    /// The EXPRESS machine to run.
    pub state_machine_arn: String,
    /// The execution's name (need not be unique); a fresh one when absent.
    pub name: Option<String>,
    /// The input JSON text; `{}` when absent.
    pub input: Option<String>,
    /// Accepted and ignored (no X-Ray).
    pub trace_header: Option<String>,
    /// `ALL_DATA` (default) or `METADATA_ONLY` (the answer leaves out input and output).
    pub included_data: Option<String>,
}

impl StartSyncExecutionInput {
    /// Checks the service model's constraints; returns whether input and output are answered.
    pub fn validate(&self) -> Result<bool, Error> {
        check_arn("stateMachineArn", &self.state_machine_arn)?;
        if let Some(name) = &self.name {
            check_len("name", name, NAME_CHARS_MAX)?;
        }
        match self.included_data.as_deref() {
            None | Some("ALL_DATA") => Ok(true),
            Some("METADATA_ONLY") => Ok(false),
            Some(other) => Err(Error::Validation {
                member: "includedData",
                constraint: format!(
                    "Member must satisfy enum value set: [ALL_DATA, METADATA_ONLY] (got {other:?})"
                ),
            }),
        }
    }
}

/// `ListExecutions` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListExecutionsInput {
    /// The machine whose executions are listed.
    pub state_machine_arn: Option<String>,
    /// Only executions with this status (`RUNNING`, `SUCCEEDED`, ...).
    pub status_filter: Option<String>,
    /// Page size; 0 or absent for the default.
    pub max_results: Option<i64>,
    /// The token of the previous page.
    pub next_token: Option<String>,
    /// The Map Run whose child executions are listed (instead of `stateMachineArn`).
    pub map_run_arn: Option<String>,
    /// `REDRIVEN`/`NOT_REDRIVEN`: only executions redriven at least once, or never.
    pub redrive_filter: Option<String>,
}

/// The statuses an execution can have, as AWS spells them.
pub const EXECUTION_STATUSES: &[&str] = &[
    "RUNNING",
    "SUCCEEDED",
    "FAILED",
    "TIMED_OUT",
    "ABORTED",
    "PENDING_REDRIVE",
];

impl ListExecutionsInput {
    /// Checks the service model's constraints; returns the page size (0 = default).
    pub fn validate(&self) -> Result<u32, Error> {
        match (&self.state_machine_arn, &self.map_run_arn) {
            (Some(_), Some(_)) => {
                return Err(Error::Validation {
                    member: "mapRunArn",
                    constraint: "Give either stateMachineArn or mapRunArn, not both".into(),
                })
            }
            (None, None) => {
                return Err(Error::Validation {
                    member: "stateMachineArn",
                    constraint: "Member must not be null (give stateMachineArn or mapRunArn)"
                        .into(),
                })
            }
            (Some(arn), None) => check_arn("stateMachineArn", arn)?,
            (None, Some(arn)) => check_arn("mapRunArn", arn)?,
        }
        if let Some(status) = &self.status_filter {
            if !EXECUTION_STATUSES.contains(&status.as_str()) {
                return Err(Error::Validation {
                    member: "statusFilter",
                    constraint: format!(
                        "Member must satisfy enum value set: {EXECUTION_STATUSES:?} (got {status:?})"
                    ),
                });
            }
        }
        if let Some(filter) = &self.redrive_filter {
            if !REDRIVE_FILTERS.contains(&filter.as_str()) {
                return Err(Error::Validation {
                    member: "redriveFilter",
                    constraint: format!(
                        "Member must satisfy enum value set: {REDRIVE_FILTERS:?} (got {filter:?})"
                    ),
                });
            }
        }
        check_max_results(self.max_results)
    }
}

/// The values of `ListExecutions`' `redriveFilter`.
pub const REDRIVE_FILTERS: &[&str] = &["REDRIVEN", "NOT_REDRIVEN"];

/// `RedriveExecution` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RedriveExecutionInput {
    /// The execution to redrive.
    pub execution_arn: String,
    /// Idempotency token: the same token for the same execution answers the first redrive.
    pub client_token: Option<String>,
}

impl RedriveExecutionInput {
    /// Checks the service model's constraints (AWS: `clientToken` 1..64 characters).
    pub fn validate(&self) -> Result<(), Error> {
        check_arn("executionArn", &self.execution_arn)?;
        if let Some(token) = &self.client_token {
            check_len("clientToken", token, CLIENT_TOKEN_CHARS_MAX)?;
        }
        Ok(())
    }
}

/// `StopExecution` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StopExecutionInput {
    /// The execution to stop.
    pub execution_arn: String,
    /// The error recorded with the abort.
    pub error: Option<String>,
    /// The cause recorded with the abort.
    pub cause: Option<String>,
}

impl StopExecutionInput {
    /// Checks the service model's constraints.
    pub fn validate(&self) -> Result<(), Error> {
        check_arn("executionArn", &self.execution_arn)?;
        if let Some(error) = &self.error {
            if error.chars().count() > STOP_ERROR_CHARS_MAX {
                return Err(Error::Validation {
                    member: "error",
                    constraint: format!(
                        "Member must have length less than or equal to {STOP_ERROR_CHARS_MAX}"
                    ),
                });
            }
        }
        if let Some(cause) = &self.cause {
            if cause.chars().count() > STOP_CAUSE_CHARS_MAX {
                return Err(Error::Validation {
                    member: "cause",
                    constraint: format!(
                        "Member must have length less than or equal to {STOP_CAUSE_CHARS_MAX}"
                    ),
                });
            }
        }
        Ok(())
    }
}

/// `GetExecutionHistory` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetExecutionHistoryInput {
    /// The execution whose history is read.
    pub execution_arn: String,
    /// Page size; 0 or absent for the default (100).
    pub max_results: Option<i64>,
    /// Newest first when true.
    pub reverse_order: Option<bool>,
    /// The token of the previous page.
    pub next_token: Option<String>,
    /// Include inputs and outputs (default true).
    pub include_execution_data: Option<bool>,
}

impl GetExecutionHistoryInput {
    /// Checks the service model's constraints; returns the page size (0 = default).
    pub fn validate(&self) -> Result<u32, Error> {
        check_arn("executionArn", &self.execution_arn)?;
        check_max_results(self.max_results)
    }
}

fn check_next_token(next_token: Option<&str>) -> Result<(), Error> {
    match next_token {
        Some(token) => check_len("nextToken", token, NEXT_TOKEN_CHARS_MAX),
        None => Ok(()),
    }
}

/// `PublishStateMachineVersion` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PublishStateMachineVersionInput {
    /// The machine whose current revision is published.
    pub state_machine_arn: String,
    /// Publish only if this is the current revision's id (`INITIAL`: the creation's).
    pub revision_id: Option<String>,
    /// The version's description.
    pub description: Option<String>,
}

impl PublishStateMachineVersionInput {
    /// Checks the service model's constraints.
    pub fn validate(&self) -> Result<(), Error> {
        check_arn("stateMachineArn", &self.state_machine_arn)
    }
}

/// `ListStateMachineVersions` and `ListStateMachineAliases` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListMachineCatalogInput {
    /// The machine.
    pub state_machine_arn: String,
    /// Page size; 0 or absent for the default.
    pub max_results: Option<i64>,
    /// The token of the previous page.
    pub next_token: Option<String>,
}

impl ListMachineCatalogInput {
    /// Checks the service model's constraints; returns the page size (0 = default).
    pub fn validate(&self) -> Result<u32, Error> {
        check_arn("stateMachineArn", &self.state_machine_arn)?;
        check_next_token(self.next_token.as_deref())?;
        check_max_results(self.max_results)
    }
}

/// `DeleteStateMachineVersion` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StateMachineVersionArnInput {
    /// The version.
    pub state_machine_version_arn: String,
}

impl StateMachineVersionArnInput {
    /// Checks the service model's constraints.
    pub fn validate(&self) -> Result<(), Error> {
        check_arn("stateMachineVersionArn", &self.state_machine_version_arn)
    }
}

/// `DescribeStateMachineAlias` and `DeleteStateMachineAlias` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StateMachineAliasArnInput {
    /// The alias.
    pub state_machine_alias_arn: String,
}

impl StateMachineAliasArnInput {
    /// Checks the service model's constraints.
    pub fn validate(&self) -> Result<(), Error> {
        check_arn("stateMachineAliasArn", &self.state_machine_alias_arn)
    }
}

/// One entry of a routing configuration (`RoutingConfigurationListItem`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoutingInput {
    /// The version.
    pub state_machine_version_arn: String,
    /// Its share of starts, 0 to 100.
    pub weight: i64,
}

/// Checks each entry's members (the engine checks the configuration as a whole) and reads the
/// weights as unsigned: a negative one is refused here, one above 100 by the engine.
fn check_routing(routing: &[RoutingInput]) -> Result<(), Error> {
    for entry in routing {
        check_arn(
            "routingConfiguration.member.stateMachineVersionArn",
            &entry.state_machine_version_arn,
        )?;
        if entry.weight < 0 || u32::try_from(entry.weight).is_err() {
            return Err(Error::Validation {
                member: "routingConfiguration.member.weight",
                constraint: format!(
                    "Member must have value between 0 and 100 (got {})",
                    entry.weight
                ),
            });
        }
    }
    Ok(())
}

impl RoutingInput {
    /// The weight, once [`check_routing`] accepted it.
    pub fn weight_percent(&self) -> u32 {
        u32::try_from(self.weight).unwrap_or(u32::MAX)
    }
}

/// `CreateStateMachineAlias` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateStateMachineAliasInput {
    /// The alias's name.
    pub name: String,
    /// Its description.
    pub description: Option<String>,
    /// One or two versions with weights.
    pub routing_configuration: Vec<RoutingInput>,
}

impl CreateStateMachineAliasInput {
    /// Checks the service model's member constraints.
    pub fn validate(&self) -> Result<(), Error> {
        check_routing(&self.routing_configuration)
    }
}

/// `UpdateStateMachineAlias` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateStateMachineAliasInput {
    /// The alias.
    pub state_machine_alias_arn: String,
    /// A new description.
    pub description: Option<String>,
    /// A new routing configuration.
    pub routing_configuration: Option<Vec<RoutingInput>>,
}

impl UpdateStateMachineAliasInput {
    /// Checks the service model's member constraints.
    pub fn validate(&self) -> Result<(), Error> {
        check_arn("stateMachineAliasArn", &self.state_machine_alias_arn)?;
        check_routing(self.routing_configuration.as_deref().unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_resolve_or_name_what_is_wrong() {
        assert_eq!(
            operation_of_target(Some("AWSStepFunctions.StartExecution")).ok(),
            Some(Operation::StartExecution)
        );
        let unknown =
            operation_of_target(Some("AWSStepFunctions.Frobnicate")).expect_err("unknown");
        assert_eq!(unknown.aws_name(), "UnknownOperationException");
        assert!(unknown.to_string().contains("Frobnicate"));
        let missing = operation_of_target(None).expect_err("missing");
        assert_eq!(missing.aws_name(), "UnknownOperationException");
        assert_eq!(
            operation_of_target(Some("AWSStepFunctions.DescribeMapRun")).ok(),
            Some(Operation::DescribeMapRun)
        );
        assert_eq!(
            operation_of_target(Some("AWSStepFunctions.PublishStateMachineVersion")).ok(),
            Some(Operation::PublishStateMachineVersion)
        );
        assert_eq!(
            operation_of_target(Some("AWSStepFunctions.TagResource")).ok(),
            Some(Operation::TagResource)
        );
        // Names are case-sensitive, as in the service model.
        assert!(operation_of_target(Some("AWSStepFunctions.startexecution")).is_err());
    }

    #[test]
    fn every_operation_round_trips_its_name() {
        for op in Operation::ALL {
            assert_eq!(Operation::from_name(op.name()), Some(*op));
        }
    }

    #[test]
    fn decoding_separates_serialization_from_validation() {
        let op = Operation::StartExecution;
        let error = decode::<StartExecutionInput>(op, b"{not json").expect_err("bad json");
        assert_eq!(error.aws_name(), "SerializationException");
        let error = decode::<StartExecutionInput>(op, b"[1]").expect_err("not object");
        assert_eq!(error.aws_name(), "SerializationException");
        let error = decode::<StartExecutionInput>(op, b"{}").expect_err("missing");
        assert_eq!(error.aws_name(), "ValidationException");
        assert!(error.to_string().contains("stateMachineArn"), "{error}");
        let error =
            decode::<StartExecutionInput>(op, br#"{"stateMachineArn": 5}"#).expect_err("type");
        assert_eq!(error.aws_name(), "SerializationException");
        let ok: StartExecutionInput =
            decode(op, br#"{"stateMachineArn": "arn:x", "futureMember": 1}"#)
                .expect("unknown members ignored");
        assert_eq!(ok.state_machine_arn, "arn:x");
        let empty: ListStateMachinesInput =
            decode(Operation::ListStateMachines, b"").expect("empty body is {}");
        assert_eq!(empty.max_results, None);
    }

    #[test]
    fn constraints_name_the_member() {
        let input = ListStateMachinesInput {
            max_results: Some(1001),
            next_token: None,
        };
        let error = input.validate().expect_err("too many");
        assert!(error.to_string().contains("maxResults"));
        let input = CreateStateMachineInput {
            name: "x".repeat(81),
            definition: "{}".into(),
            role_arn: "arn:aws:iam::1:role/r".into(),
            machine_type: None,
            logging_configuration: None,
            tracing_configuration: None,
            tags: None,
            publish: None,
            version_description: None,
        };
        assert!(input
            .validate()
            .expect_err("long name")
            .to_string()
            .contains("'name'"));
        assert_eq!(
            serde_json::to_string(&Timestamp(1_500)).expect("serializes"),
            "1.5"
        );
    }
}

/// `SendTaskSuccess` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendTaskSuccessInput {
    /// The token the task was given (`$$.Task.Token`).
    pub task_token: String,
    /// The task's output, JSON text.
    pub output: String,
}

impl SendTaskSuccessInput {
    /// Checks the service model's constraints (the engine checks the output's JSON and size).
    pub fn validate(&self) -> Result<(), Error> {
        check_len("taskToken", &self.task_token, TASK_TOKEN_CHARS_MAX)
    }
}

/// `SendTaskFailure` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendTaskFailureInput {
    /// The token the task was given.
    pub task_token: String,
    /// The error name; empty when absent.
    pub error: Option<String>,
    /// The cause; empty when absent.
    pub cause: Option<String>,
}

impl SendTaskFailureInput {
    /// Checks the service model's constraints.
    pub fn validate(&self) -> Result<(), Error> {
        check_len("taskToken", &self.task_token, TASK_TOKEN_CHARS_MAX)?;
        check_len_max("error", self.error.as_deref(), STOP_ERROR_CHARS_MAX)?;
        check_len_max("cause", self.cause.as_deref(), STOP_CAUSE_CHARS_MAX)
    }
}

/// `SendTaskHeartbeat` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskTokenInput {
    /// The token the task was given.
    pub task_token: String,
}

impl TaskTokenInput {
    /// Checks the service model's constraints.
    pub fn validate(&self) -> Result<(), Error> {
        check_len("taskToken", &self.task_token, TASK_TOKEN_CHARS_MAX)
    }
}

/// An optional member of at most `chars_max` characters (empty allowed).
fn check_len_max(member: &'static str, text: Option<&str>, chars_max: usize) -> Result<(), Error> {
    let count = text.map_or(0, |t| t.chars().count());
    if count > chars_max {
        return Err(Error::Validation {
            member,
            constraint: format!(
                "Member must have length less than or equal to {chars_max} (got {count})"
            ),
        });
    }
    Ok(())
}

/// `CreateActivity` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateActivityInput {
    /// The activity's name.
    pub name: String,
    /// Tags to set on the new activity.
    pub tags: Option<Vec<TagInput>>,
    /// Accepted and ignored (no encryption configuration).
    pub encryption_configuration: Option<Value>,
}

impl CreateActivityInput {
    /// Checks the service model's constraints (the engine checks the name's characters).
    pub fn validate(&self) -> Result<(), Error> {
        check_len("name", &self.name, NAME_CHARS_MAX)
    }
}

/// Input of operations that name one activity (DescribeActivity, DeleteActivity).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivityArnInput {
    /// The activity's ARN.
    pub activity_arn: String,
}

impl ActivityArnInput {
    /// Checks the service model's constraints.
    pub fn validate(&self) -> Result<(), Error> {
        check_arn("activityArn", &self.activity_arn)
    }
}

/// `GetActivityTask` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetActivityTaskInput {
    /// The activity to poll.
    pub activity_arn: String,
    /// The worker's name, recorded in the history.
    pub worker_name: Option<String>,
}

impl GetActivityTaskInput {
    /// Checks the service model's constraints (AWS: `workerName` up to 80 characters).
    pub fn validate(&self) -> Result<(), Error> {
        check_arn("activityArn", &self.activity_arn)?;
        check_len_max("workerName", self.worker_name.as_deref(), NAME_CHARS_MAX)
    }
}
