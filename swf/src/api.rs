//! api: the Amazon SWF operations' input and output shapes, with SWF's JSON field names, its
//! faults ([`Fault`], [`SwfError`]) and the validation helpers every operation shares (names,
//! lengths, timeouts, priorities, retention).
//!
//! Invariants: every field is named as the SWF API reference names it (`camelCase`); an optional
//! field is an `Option` that is left out of the JSON when `None`; timestamps are epoch seconds as
//! JSON numbers (millisecond precision); timeouts are strings of seconds or `"NONE"`.
//! Must not: hold behaviour beyond validation (the engine answers the operations), read a clock,
//! or do I/O.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::limits;

// ---------------------------------------------------------------------------------------------
// Faults

/// An SWF fault: what went wrong, as SWF names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Fault {
    /// A named domain, type, execution or task (token) does not exist or is closed.
    UnknownResource,
    /// RegisterDomain of a name that is already registered.
    DomainAlreadyExists,
    /// Register*Type of a type that already exists.
    TypeAlreadyExists,
    /// The domain is deprecated.
    DomainDeprecated,
    /// The type is deprecated.
    TypeDeprecated,
    /// Undeprecate of a type that is not deprecated, or Delete of one that is not deprecated.
    TypeNotDeprecated,
    /// StartWorkflowExecution while an execution with that workflow id is open.
    WorkflowExecutionAlreadyStarted,
    /// A required default (task list, timeout, child policy) is neither given nor registered.
    DefaultUndefined,
    /// A limit (domains, open executions, pending tasks, ...) is reached.
    LimitExceeded,
    /// The caller may not perform the operation.
    OperationNotPermitted,
    /// A resource would have more tags than allowed.
    TooManyTags,
    /// The input does not satisfy a constraint.
    Validation,
    /// The operation or option is not supported by statelog.
    Unsupported,
    /// An internal error (storage).
    Internal,
}

impl Fault {
    /// Every fault.
    pub const ALL: [Fault; 14] = [
        Fault::UnknownResource,
        Fault::DomainAlreadyExists,
        Fault::TypeAlreadyExists,
        Fault::DomainDeprecated,
        Fault::TypeDeprecated,
        Fault::TypeNotDeprecated,
        Fault::WorkflowExecutionAlreadyStarted,
        Fault::DefaultUndefined,
        Fault::LimitExceeded,
        Fault::OperationNotPermitted,
        Fault::TooManyTags,
        Fault::Validation,
        Fault::Unsupported,
        Fault::Internal,
    ];

    /// The fault's name on the wire (the `__type` after `#`).
    pub fn aws_name(self) -> &'static str {
        match self {
            Fault::UnknownResource => "UnknownResourceFault",
            Fault::DomainAlreadyExists => "DomainAlreadyExistsFault",
            Fault::TypeAlreadyExists => "TypeAlreadyExistsFault",
            Fault::DomainDeprecated => "DomainDeprecatedFault",
            Fault::TypeDeprecated => "TypeDeprecatedFault",
            Fault::TypeNotDeprecated => "TypeNotDeprecatedFault",
            Fault::WorkflowExecutionAlreadyStarted => "WorkflowExecutionAlreadyStartedFault",
            Fault::DefaultUndefined => "DefaultUndefinedFault",
            Fault::LimitExceeded => "LimitExceededFault",
            Fault::OperationNotPermitted => "OperationNotPermittedFault",
            Fault::TooManyTags => "TooManyTagsFault",
            Fault::Validation => "ValidationException",
            Fault::Unsupported => "UnsupportedOperation",
            Fault::Internal => "InternalFailure",
        }
    }

    /// The fault a wire name names, if any.
    pub fn from_aws_name(name: &str) -> Option<Fault> {
        Fault::ALL.into_iter().find(|f| f.aws_name() == name)
    }
}

/// An SWF operation's error: the fault and a message for the caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", fault.aws_name())]
pub struct SwfError {
    /// What went wrong.
    pub fault: Fault,
    /// What and where, for the caller.
    pub message: String,
}

impl SwfError {
    /// An error of `fault` with `message`.
    pub fn new(fault: Fault, message: impl Into<String>) -> SwfError {
        SwfError {
            fault,
            message: message.into(),
        }
    }

    /// A `ValidationException`.
    pub fn validation(message: impl Into<String>) -> SwfError {
        SwfError::new(Fault::Validation, message)
    }

    /// An `UnknownResourceFault`.
    pub fn unknown_resource(message: impl Into<String>) -> SwfError {
        SwfError::new(Fault::UnknownResource, message)
    }

    /// An `UnsupportedOperation` naming what is not supported.
    pub fn unsupported(what: impl Into<String>) -> SwfError {
        SwfError::new(
            Fault::Unsupported,
            format!("{} is not supported by statelog", what.into()),
        )
    }
}

// ---------------------------------------------------------------------------------------------
// Validation helpers

/// A constraint failure in AWS's wording: `1 validation error detected: Value '<v>' at
/// '<field>' failed to satisfy constraint: Member must <rule>`.
pub fn constraint_error(field: &str, value: &str, rule: &str) -> SwfError {
    let shown: String = value.chars().take(64).collect();
    SwfError::validation(format!(
        "1 validation error detected: Value '{shown}' at '{field}' failed to satisfy \
         constraint: Member must {rule}"
    ))
}

/// A missing required field.
pub fn missing_field(field: &str) -> SwfError {
    SwfError::validation(format!(
        "1 validation error detected: Value null at '{field}' failed to satisfy constraint: \
         Member must not be null"
    ))
}

/// Checks `value`'s length in characters is within `min..=max`.
pub fn check_length(field: &str, value: &str, min: usize, max: usize) -> Result<(), SwfError> {
    let length = value.chars().count();
    if length < min {
        return Err(constraint_error(
            field,
            value,
            &format!("have length greater than or equal to {min}"),
        ));
    }
    if length > max {
        return Err(constraint_error(
            field,
            value,
            &format!("have length less than or equal to {max}"),
        ));
    }
    Ok(())
}

/// Checks an optional value's length (absent is fine).
pub fn check_optional_length(field: &str, value: Option<&str>, max: usize) -> Result<(), SwfError> {
    match value {
        Some(value) => check_length(field, value, 0, max),
        None => Ok(()),
    }
}

/// Whether `c` is a control character SWF forbids in names (`\u0000-\u001f`, `\u007f-\u009f`).
fn is_forbidden_control(c: char) -> bool {
    ('\u{0}'..='\u{1f}').contains(&c) || ('\u{7f}'..='\u{9f}').contains(&c)
}

/// Checks an SWF name (domain, type, version, task list, activity id, timer id, workflow id,
/// signal name, marker name): 1..=`max` characters, no leading or trailing whitespace, no `:`,
/// `/`, `|` or control characters, and not the literal `arn`.
pub fn check_name(field: &str, value: &str, max: usize) -> Result<(), SwfError> {
    check_length(field, value, 1, max)?;
    if value.trim() != value {
        return Err(SwfError::validation(format!(
            "{field} '{value}' must not start or end with whitespace"
        )));
    }
    if let Some(c) = value
        .chars()
        .find(|&c| matches!(c, ':' | '/' | '|') || is_forbidden_control(c))
    {
        return Err(SwfError::validation(format!(
            "{field} '{}' must not contain '{}' (':', '/', '|' and control characters are \
             not allowed)",
            value.escape_debug(),
            c.escape_debug()
        )));
    }
    if value == "arn" {
        return Err(SwfError::validation(format!(
            "{field} must not be the literal string 'arn'"
        )));
    }
    Ok(())
}

/// A timeout of SWF: a number of seconds, or unlimited (`"NONE"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Timeout {
    /// No limit (`"NONE"`).
    Unlimited,
    /// This many seconds.
    Seconds(u64),
}

impl Timeout {
    /// Parses a timeout string (`"NONE"` or decimal seconds, 0 ..= one year) of `field`.
    pub fn parse(field: &str, value: &str) -> Result<Timeout, SwfError> {
        check_length(field, value, 1, limits::TIMEOUT_CHARS_MAX)?;
        if value == "NONE" {
            return Ok(Timeout::Unlimited);
        }
        if !value.bytes().all(|b| b.is_ascii_digit()) {
            return Err(SwfError::validation(format!(
                "Invalid value for {field}: '{value}' (a timeout is a number of seconds or \
                 \"NONE\")"
            )));
        }
        let seconds: u64 = value
            .parse()
            .map_err(|_| SwfError::validation(format!("Invalid value for {field}: '{value}'")))?;
        if seconds > limits::TIMEOUT_SECONDS_MAX {
            return Err(SwfError::validation(format!(
                "Invalid value for {field}: {seconds} seconds exceeds the maximum of {}",
                limits::TIMEOUT_SECONDS_MAX
            )));
        }
        Ok(Timeout::Seconds(seconds))
    }

    /// Parses an optional timeout.
    pub fn parse_optional(field: &str, value: Option<&str>) -> Result<Option<Timeout>, SwfError> {
        value.map(|v| Timeout::parse(field, v)).transpose()
    }

    /// The timeout as SWF writes it.
    pub fn to_wire(self) -> String {
        match self {
            Timeout::Unlimited => "NONE".to_string(),
            Timeout::Seconds(s) => s.to_string(),
        }
    }

    /// The timeout in milliseconds, `None` when unlimited.
    pub fn as_ms(self) -> Option<u64> {
        match self {
            Timeout::Unlimited => None,
            Timeout::Seconds(s) => Some(s.saturating_mul(1000)),
        }
    }
}

/// Parses a `taskPriority` string of `field`: a decimal integer in Java's int range (SWF:
/// `-2147483648` ..= `2147483647`), higher first.
pub fn parse_task_priority(field: &str, value: &str) -> Result<i32, SwfError> {
    check_length(field, value, 1, limits::TASK_PRIORITY_CHARS_MAX)?;
    value.parse::<i32>().map_err(|_| {
        SwfError::validation(format!(
            "Invalid value for {field}: '{value}' (an integer from -2147483648 to 2147483647)"
        ))
    })
}

/// Parses an optional `taskPriority`.
pub fn parse_optional_task_priority(
    field: &str,
    value: Option<&str>,
) -> Result<Option<i32>, SwfError> {
    value.map(|v| parse_task_priority(field, v)).transpose()
}

/// Parses `workflowExecutionRetentionPeriodInDays`: decimal days, 0 ..= 90.
pub fn parse_retention_days(value: &str) -> Result<u32, SwfError> {
    const FIELD: &str = "workflowExecutionRetentionPeriodInDays";
    check_length(FIELD, value, 1, limits::RETENTION_DAYS_CHARS_MAX)?;
    let days = if value.bytes().all(|b| b.is_ascii_digit()) {
        value.parse::<u32>().ok()
    } else {
        None
    };
    match days {
        Some(days) if days <= limits::RETENTION_DAYS_MAX => Ok(days),
        _ => Err(SwfError::validation(format!(
            "Invalid value for {FIELD}: '{value}' (days from 0 to {})",
            limits::RETENTION_DAYS_MAX
        ))),
    }
}

/// Checks a `maximumPageSize` (1 ..= 1000) and answers the page size to use (1000 when absent).
pub fn page_size(value: Option<u32>) -> Result<u32, SwfError> {
    match value {
        None | Some(0) => Ok(limits::PAGE_SIZE_MAX),
        Some(size) if size <= limits::PAGE_SIZE_MAX => Ok(size),
        Some(size) => Err(constraint_error(
            "maximumPageSize",
            &size.to_string(),
            &format!("have value less than or equal to {}", limits::PAGE_SIZE_MAX),
        )),
    }
}

/// Converts epoch milliseconds to SWF's wire timestamp (epoch seconds, millisecond precision).
pub fn timestamp_from_ms(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

/// Converts SWF's wire timestamp (epoch seconds) to epoch milliseconds (negative and
/// non-finite values become 0).
pub fn timestamp_to_ms(seconds: f64) -> u64 {
    if seconds.is_finite() && seconds > 0.0 {
        (seconds * 1000.0).round() as u64
    } else {
        0
    }
}

// ---------------------------------------------------------------------------------------------
// Shared shapes

/// A workflow execution: its workflow id and run id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowExecution {
    /// The user's workflow id.
    pub workflow_id: String,
    /// The run id SWF gave the run.
    pub run_id: String,
}

/// A workflow type: name and version.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowType {
    /// The type's name.
    pub name: String,
    /// The type's version.
    pub version: String,
}

/// An activity type: name and version.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivityType {
    /// The type's name.
    pub name: String,
    /// The type's version.
    pub version: String,
}

/// A task list, by name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskList {
    /// The list's name.
    pub name: String,
}

/// Registration status of a domain or type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RegistrationStatus {
    /// Usable.
    Registered,
    /// Deprecated: no new executions or tasks of it.
    Deprecated,
}

/// Whether an execution is open or closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ExecutionStatus {
    /// Running.
    Open,
    /// Closed (see [`CloseStatus`]).
    Closed,
}

/// How an execution closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CloseStatus {
    /// CompleteWorkflowExecution.
    Completed,
    /// FailWorkflowExecution.
    Failed,
    /// CancelWorkflowExecution.
    Canceled,
    /// TerminateWorkflowExecution.
    Terminated,
    /// ContinueAsNewWorkflowExecution.
    ContinuedAsNew,
    /// The execution's start-to-close timeout.
    TimedOut,
}

/// What happens to child executions when their parent closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ChildPolicy {
    /// The children are terminated.
    Terminate,
    /// A cancel is requested of each child.
    RequestCancel,
    /// The children keep running.
    Abandon,
}

/// A domain's resource tag.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTag {
    /// The tag's key.
    pub key: String,
    /// The tag's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// A time window filter (epoch seconds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionTimeFilter {
    /// The oldest time included.
    pub oldest_date: f64,
    /// The latest time included (no bound when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_date: Option<f64>,
}

/// Filters executions by workflow id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowExecutionFilter {
    /// The workflow id to match.
    pub workflow_id: String,
}

/// Filters executions by type (name, and version when given).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowTypeFilter {
    /// The type's name.
    pub name: String,
    /// The type's version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// Filters executions by one of their tags.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TagFilter {
    /// The tag to match.
    pub tag: String,
}

/// Filters closed executions by close status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CloseStatusFilter {
    /// The close status to match.
    pub status: CloseStatus,
}

// ---------------------------------------------------------------------------------------------
// Domains

/// RegisterDomain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegisterDomainInput {
    /// The domain's name.
    pub name: String,
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Days closed executions are kept (decimal string, 0 ..= 90).
    pub workflow_execution_retention_period_in_days: String,
    /// Resource tags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<ResourceTag>>,
}

/// DescribeDomain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribeDomainInput {
    /// The domain's name.
    pub name: String,
}

/// DeprecateDomain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeprecateDomainInput {
    /// The domain's name.
    pub name: String,
}

/// UndeprecateDomain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UndeprecateDomainInput {
    /// The domain's name.
    pub name: String,
}

/// Deletes a domain. Not an operation of the SWF API (SWF only deprecates domains); statelog's
/// engine API has it for embedding programs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteDomainInput {
    /// The domain's name.
    pub name: String,
}

/// A domain's summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DomainInfo {
    /// The domain's name.
    pub name: String,
    /// Registered or deprecated.
    pub status: RegistrationStatus,
    /// The description given at registration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The domain's ARN.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arn: Option<String>,
}

/// A domain's configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DomainConfiguration {
    /// Days closed executions are kept.
    pub workflow_execution_retention_period_in_days: String,
}

/// DescribeDomain's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DomainDetail {
    /// The summary.
    pub domain_info: DomainInfo,
    /// The configuration.
    pub configuration: DomainConfiguration,
}

/// ListDomains.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListDomainsInput {
    /// The page to continue from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
    /// Which domains.
    pub registration_status: RegistrationStatus,
    /// The most results per page (1000 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum_page_size: Option<u32>,
    /// Descending by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse_order: Option<bool>,
}

/// ListDomains' answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DomainInfos {
    /// One page of domains.
    pub domain_infos: Vec<DomainInfo>,
    /// The next page, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// Workflow types

/// RegisterWorkflowType.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegisterWorkflowTypeInput {
    /// The domain.
    pub domain: String,
    /// The type's name.
    pub name: String,
    /// The type's version.
    pub version: String,
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Default decision task start-to-close timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_task_start_to_close_timeout: Option<String>,
    /// Default execution start-to-close timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_execution_start_to_close_timeout: Option<String>,
    /// Default decision task list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_task_list: Option<TaskList>,
    /// Default decision task priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_task_priority: Option<String>,
    /// Default child policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_child_policy: Option<ChildPolicy>,
    /// Default Lambda role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_lambda_role: Option<String>,
}

/// A workflow type's summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowTypeInfo {
    /// The type.
    pub workflow_type: WorkflowType,
    /// Registered or deprecated.
    pub status: RegistrationStatus,
    /// The description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// When it was registered (epoch seconds).
    pub creation_date: f64,
    /// When it was deprecated (epoch seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecation_date: Option<f64>,
}

/// A workflow type's registered defaults.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowTypeConfiguration {
    /// Default decision task start-to-close timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_task_start_to_close_timeout: Option<String>,
    /// Default execution start-to-close timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_execution_start_to_close_timeout: Option<String>,
    /// Default decision task list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_task_list: Option<TaskList>,
    /// Default decision task priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_task_priority: Option<String>,
    /// Default child policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_child_policy: Option<ChildPolicy>,
    /// Default Lambda role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_lambda_role: Option<String>,
}

/// DescribeWorkflowType's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowTypeDetail {
    /// The summary.
    pub type_info: WorkflowTypeInfo,
    /// The defaults.
    pub configuration: WorkflowTypeConfiguration,
}

/// DescribeWorkflowType.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribeWorkflowTypeInput {
    /// The domain.
    pub domain: String,
    /// The type.
    pub workflow_type: WorkflowType,
}

/// DeprecateWorkflowType.
pub type DeprecateWorkflowTypeInput = DescribeWorkflowTypeInput;
/// UndeprecateWorkflowType.
pub type UndeprecateWorkflowTypeInput = DescribeWorkflowTypeInput;
/// DeleteWorkflowType (the type must be deprecated).
pub type DeleteWorkflowTypeInput = DescribeWorkflowTypeInput;

/// ListWorkflowTypes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListWorkflowTypesInput {
    /// The domain.
    pub domain: String,
    /// Only types of this name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Which types.
    pub registration_status: RegistrationStatus,
    /// The page to continue from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
    /// The most results per page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum_page_size: Option<u32>,
    /// Descending by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse_order: Option<bool>,
}

/// ListWorkflowTypes' answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowTypeInfos {
    /// One page of types.
    pub type_infos: Vec<WorkflowTypeInfo>,
    /// The next page, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// Activity types

/// RegisterActivityType.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegisterActivityTypeInput {
    /// The domain.
    pub domain: String,
    /// The type's name.
    pub name: String,
    /// The type's version.
    pub version: String,
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Default start-to-close timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_task_start_to_close_timeout: Option<String>,
    /// Default heartbeat timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_task_heartbeat_timeout: Option<String>,
    /// Default task list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_task_list: Option<TaskList>,
    /// Default task priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_task_priority: Option<String>,
    /// Default schedule-to-start timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_task_schedule_to_start_timeout: Option<String>,
    /// Default schedule-to-close timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_task_schedule_to_close_timeout: Option<String>,
}

/// An activity type's summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivityTypeInfo {
    /// The type.
    pub activity_type: ActivityType,
    /// Registered or deprecated.
    pub status: RegistrationStatus,
    /// The description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// When it was registered (epoch seconds).
    pub creation_date: f64,
    /// When it was deprecated (epoch seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecation_date: Option<f64>,
}

/// An activity type's registered defaults.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivityTypeConfiguration {
    /// Default start-to-close timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_task_start_to_close_timeout: Option<String>,
    /// Default heartbeat timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_task_heartbeat_timeout: Option<String>,
    /// Default task list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_task_list: Option<TaskList>,
    /// Default task priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_task_priority: Option<String>,
    /// Default schedule-to-start timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_task_schedule_to_start_timeout: Option<String>,
    /// Default schedule-to-close timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_task_schedule_to_close_timeout: Option<String>,
}

/// DescribeActivityType's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivityTypeDetail {
    /// The summary.
    pub type_info: ActivityTypeInfo,
    /// The defaults.
    pub configuration: ActivityTypeConfiguration,
}

/// DescribeActivityType.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribeActivityTypeInput {
    /// The domain.
    pub domain: String,
    /// The type.
    pub activity_type: ActivityType,
}

/// DeprecateActivityType.
pub type DeprecateActivityTypeInput = DescribeActivityTypeInput;
/// UndeprecateActivityType.
pub type UndeprecateActivityTypeInput = DescribeActivityTypeInput;
/// DeleteActivityType (the type must be deprecated).
pub type DeleteActivityTypeInput = DescribeActivityTypeInput;

/// ListActivityTypes.
pub type ListActivityTypesInput = ListWorkflowTypesInput;

/// ListActivityTypes' answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivityTypeInfos {
    /// One page of types.
    pub type_infos: Vec<ActivityTypeInfo>,
    /// The next page, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// Executions

/// StartWorkflowExecution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StartWorkflowExecutionInput {
    /// The domain.
    pub domain: String,
    /// The user's workflow id.
    pub workflow_id: String,
    /// The type to run.
    pub workflow_type: WorkflowType,
    /// The decision task list (the type's default when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_list: Option<TaskList>,
    /// The decision task priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_priority: Option<String>,
    /// The input given to the decider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// The execution's start-to-close timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_start_to_close_timeout: Option<String>,
    /// Up to five tags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag_list: Option<Vec<String>>,
    /// The decision task start-to-close timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_start_to_close_timeout: Option<String>,
    /// The child policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_policy: Option<ChildPolicy>,
    /// The Lambda role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lambda_role: Option<String>,
}

/// StartWorkflowExecution's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Run {
    /// The new run's id.
    pub run_id: String,
}

/// PollForDecisionTask.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PollForDecisionTaskInput {
    /// The domain.
    pub domain: String,
    /// The list to poll.
    pub task_list: TaskList,
    /// The decider's identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
    /// The page of the task's history to continue from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
    /// The most events per page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum_page_size: Option<u32>,
    /// Newest events first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse_order: Option<bool>,
    /// Start the history at the previous started decision task (not supported by statelog:
    /// the whole history is returned, which SWF allows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at_previous_started_event: Option<bool>,
}

/// A decision task. Empty (no task within the poll's wait) when `task_token` is empty: then
/// only `startedEventId` and `previousStartedEventId` (both 0) go with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionTask {
    /// The task's token (empty when no task).
    pub task_token: String,
    /// The `DecisionTaskStarted` event's id.
    pub started_event_id: u64,
    /// The execution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_execution: Option<WorkflowExecution>,
    /// The execution's type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_type: Option<WorkflowType>,
    /// One page of the history (absent when no task).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<Value>>,
    /// The history's next page, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
    /// The previous `DecisionTaskStarted` the decider processed (0 when none).
    pub previous_started_event_id: u64,
}

impl DecisionTask {
    /// The answer of a poll that found no task.
    pub fn empty() -> DecisionTask {
        DecisionTask {
            task_token: String::new(),
            started_event_id: 0,
            workflow_execution: None,
            workflow_type: None,
            events: None,
            next_page_token: None,
            previous_started_event_id: 0,
        }
    }
}

/// RespondDecisionTaskCompleted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RespondDecisionTaskCompletedInput {
    /// The task's token.
    pub task_token: String,
    /// The decisions (parsed by `decisions::parse_decisions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decisions: Option<Vec<Value>>,
    /// The decider's context, shown by DescribeWorkflowExecution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_context: Option<String>,
    /// The list of the execution's next decision tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_list: Option<TaskList>,
    /// The schedule-to-start timeout of the next decision task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_list_schedule_to_start_timeout: Option<String>,
}

/// PollForActivityTask.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PollForActivityTaskInput {
    /// The domain.
    pub domain: String,
    /// The list to poll.
    pub task_list: TaskList,
    /// The worker's identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
}

/// An activity task. Empty (no task within the poll's wait) when `task_token` is empty.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivityTask {
    /// The task's token (empty when no task).
    pub task_token: String,
    /// The decider's activity id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activity_id: Option<String>,
    /// The `ActivityTaskStarted` event's id.
    pub started_event_id: u64,
    /// The execution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_execution: Option<WorkflowExecution>,
    /// The activity's type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activity_type: Option<ActivityType>,
    /// The activity's input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
}

impl ActivityTask {
    /// The answer of a poll that found no task.
    pub fn empty() -> ActivityTask {
        ActivityTask {
            task_token: String::new(),
            activity_id: None,
            started_event_id: 0,
            workflow_execution: None,
            activity_type: None,
            input: None,
        }
    }
}

/// RespondActivityTaskCompleted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RespondActivityTaskCompletedInput {
    /// The task's token.
    pub task_token: String,
    /// The result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
}

/// RespondActivityTaskFailed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RespondActivityTaskFailedInput {
    /// The task's token.
    pub task_token: String,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<String>,
}

/// RespondActivityTaskCanceled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RespondActivityTaskCanceledInput {
    /// The task's token.
    pub task_token: String,
    /// Details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<String>,
}

/// RecordActivityTaskHeartbeat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordActivityTaskHeartbeatInput {
    /// The task's token.
    pub task_token: String,
    /// Progress details (shown by an `ActivityTaskTimedOut` of kind HEARTBEAT).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<String>,
}

/// RecordActivityTaskHeartbeat's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivityTaskStatus {
    /// Whether the decider asked to cancel the task.
    pub cancel_requested: bool,
}

/// CountPendingActivityTasks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CountPendingActivityTasksInput {
    /// The domain.
    pub domain: String,
    /// The list.
    pub task_list: TaskList,
}

/// CountPendingDecisionTasks.
pub type CountPendingDecisionTasksInput = CountPendingActivityTasksInput;

/// Count of pending tasks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingTaskCount {
    /// How many.
    pub count: u64,
    /// Whether the count stopped at a limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
}

/// DescribeWorkflowExecution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribeWorkflowExecutionInput {
    /// The domain.
    pub domain: String,
    /// The execution.
    pub execution: WorkflowExecution,
}

/// An execution's summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowExecutionInfo {
    /// The execution.
    pub execution: WorkflowExecution,
    /// Its type.
    pub workflow_type: WorkflowType,
    /// When it started (epoch seconds).
    pub start_timestamp: f64,
    /// When it closed (epoch seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_timestamp: Option<f64>,
    /// Open or closed.
    pub execution_status: ExecutionStatus,
    /// How it closed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_status: Option<CloseStatus>,
    /// The parent execution, for a child.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<WorkflowExecution>,
    /// Its tags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag_list: Option<Vec<String>>,
    /// Whether a cancel was requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel_requested: Option<bool>,
}

/// An execution's configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowExecutionConfiguration {
    /// Decision task start-to-close timeout.
    pub task_start_to_close_timeout: String,
    /// Execution start-to-close timeout.
    pub execution_start_to_close_timeout: String,
    /// Decision task list.
    pub task_list: TaskList,
    /// Decision task priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_priority: Option<String>,
    /// Child policy.
    pub child_policy: ChildPolicy,
    /// Lambda role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lambda_role: Option<String>,
}

/// Counts of an execution's open tasks.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowExecutionOpenCounts {
    /// Open activity tasks.
    pub open_activity_tasks: u64,
    /// Open decision tasks (0 or 1).
    pub open_decision_tasks: u64,
    /// Open timers.
    pub open_timers: u64,
    /// Open child executions.
    pub open_child_workflow_executions: u64,
    /// Open Lambda functions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_lambda_functions: Option<u64>,
}

/// DescribeWorkflowExecution's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowExecutionDetail {
    /// The summary.
    pub execution_info: WorkflowExecutionInfo,
    /// The configuration.
    pub execution_configuration: WorkflowExecutionConfiguration,
    /// Open task counts.
    pub open_counts: WorkflowExecutionOpenCounts,
    /// When the last activity task was scheduled (epoch seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_activity_task_timestamp: Option<f64>,
    /// The latest `executionContext` a decider gave.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_execution_context: Option<String>,
}

/// GetWorkflowExecutionHistory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetWorkflowExecutionHistoryInput {
    /// The domain.
    pub domain: String,
    /// The execution.
    pub execution: WorkflowExecution,
    /// The page to continue from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
    /// The most events per page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum_page_size: Option<u32>,
    /// Newest first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse_order: Option<bool>,
}

/// GetWorkflowExecutionHistory's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct History {
    /// One page of events (`Event::to_json`).
    pub events: Vec<Value>,
    /// The next page, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

/// SignalWorkflowExecution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignalWorkflowExecutionInput {
    /// The domain.
    pub domain: String,
    /// The workflow id.
    pub workflow_id: String,
    /// The run (the open run of the workflow id when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The signal's name.
    pub signal_name: String,
    /// The signal's input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
}

/// RequestCancelWorkflowExecution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestCancelWorkflowExecutionInput {
    /// The domain.
    pub domain: String,
    /// The workflow id.
    pub workflow_id: String,
    /// The run (the open run of the workflow id when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
}

/// TerminateWorkflowExecution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TerminateWorkflowExecutionInput {
    /// The domain.
    pub domain: String,
    /// The workflow id.
    pub workflow_id: String,
    /// The run (the open run of the workflow id when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<String>,
    /// The child policy (the execution's when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_policy: Option<ChildPolicy>,
}

/// ListOpenWorkflowExecutions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListOpenWorkflowExecutionsInput {
    /// The domain.
    pub domain: String,
    /// Start time window (required).
    pub start_time_filter: ExecutionTimeFilter,
    /// By type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub type_filter: Option<WorkflowTypeFilter>,
    /// By tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag_filter: Option<TagFilter>,
    /// The page to continue from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
    /// The most results per page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum_page_size: Option<u32>,
    /// Oldest first (default: newest first by start time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse_order: Option<bool>,
    /// By workflow id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_filter: Option<WorkflowExecutionFilter>,
}

/// ListClosedWorkflowExecutions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListClosedWorkflowExecutionsInput {
    /// The domain.
    pub domain: String,
    /// Start time window (exactly one of this and `close_time_filter`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time_filter: Option<ExecutionTimeFilter>,
    /// Close time window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_time_filter: Option<ExecutionTimeFilter>,
    /// By workflow id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_filter: Option<WorkflowExecutionFilter>,
    /// By close status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_status_filter: Option<CloseStatusFilter>,
    /// By type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub type_filter: Option<WorkflowTypeFilter>,
    /// By tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag_filter: Option<TagFilter>,
    /// The page to continue from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
    /// The most results per page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum_page_size: Option<u32>,
    /// Oldest first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse_order: Option<bool>,
}

/// The filters of ListOpen/ListClosed/CountOpen/CountClosed: executionFilter, typeFilter,
/// tagFilter and closeStatusFilter are mutually exclusive (SWF), and closed lists take exactly
/// one of startTimeFilter and closeTimeFilter.
pub fn check_exclusive_filters(
    filters: &[(&str, bool)],
    time_filters: Option<(bool, bool)>,
) -> Result<(), SwfError> {
    let given: Vec<&str> = filters.iter().filter(|f| f.1).map(|f| f.0).collect();
    if given.len() > 1 {
        return Err(SwfError::validation(format!(
            "Only one of {} can be specified (got {})",
            filters.iter().map(|f| f.0).collect::<Vec<_>>().join(", "),
            given.join(" and ")
        )));
    }
    match time_filters {
        Some((true, true)) => Err(SwfError::validation(
            "Only one of startTimeFilter and closeTimeFilter can be specified",
        )),
        Some((false, false)) => Err(SwfError::validation(
            "One of startTimeFilter and closeTimeFilter must be specified",
        )),
        _ => Ok(()),
    }
}

/// List{Open,Closed}WorkflowExecutions' answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowExecutionInfos {
    /// One page of executions.
    pub execution_infos: Vec<WorkflowExecutionInfo>,
    /// The next page, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}

/// CountOpenWorkflowExecutions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CountOpenWorkflowExecutionsInput {
    /// The domain.
    pub domain: String,
    /// Start time window (required).
    pub start_time_filter: ExecutionTimeFilter,
    /// By type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub type_filter: Option<WorkflowTypeFilter>,
    /// By tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag_filter: Option<TagFilter>,
    /// By workflow id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_filter: Option<WorkflowExecutionFilter>,
}

/// CountClosedWorkflowExecutions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CountClosedWorkflowExecutionsInput {
    /// The domain.
    pub domain: String,
    /// Start time window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time_filter: Option<ExecutionTimeFilter>,
    /// Close time window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_time_filter: Option<ExecutionTimeFilter>,
    /// By workflow id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_filter: Option<WorkflowExecutionFilter>,
    /// By type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub type_filter: Option<WorkflowTypeFilter>,
    /// By tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag_filter: Option<TagFilter>,
    /// By close status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_status_filter: Option<CloseStatusFilter>,
}

/// Count{Open,Closed}WorkflowExecutions' answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowExecutionCount {
    /// How many.
    pub count: u64,
    /// Whether the count stopped at a limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
}

// ---------------------------------------------------------------------------------------------
// Tags

/// TagResource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TagResourceInput {
    /// The domain's ARN.
    pub resource_arn: String,
    /// Tags to add or replace.
    pub tags: Vec<ResourceTag>,
}

/// UntagResource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UntagResourceInput {
    /// The domain's ARN.
    pub resource_arn: String,
    /// Keys to remove.
    pub tag_keys: Vec<String>,
}

/// ListTagsForResource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTagsForResourceInput {
    /// The domain's ARN.
    pub resource_arn: String,
}

/// ListTagsForResource's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTagsForResourceOutput {
    /// The tags.
    pub tags: Vec<ResourceTag>,
}

/// Checks resource tags: at most [`limits::RESOURCE_TAGS_MAX`] (`TooManyTagsFault`), keys
/// 1..=128 characters, values up to 256.
pub fn check_resource_tags(tags: &[ResourceTag]) -> Result<(), SwfError> {
    if tags.len() > limits::RESOURCE_TAGS_MAX {
        return Err(SwfError::new(
            Fault::TooManyTags,
            format!(
                "{} tags exceed the maximum of {} tags per resource",
                tags.len(),
                limits::RESOURCE_TAGS_MAX
            ),
        ));
    }
    for tag in tags {
        check_length(
            "tags.member.key",
            &tag.key,
            1,
            limits::RESOURCE_TAG_KEY_CHARS_MAX,
        )?;
        check_optional_length(
            "tags.member.value",
            tag.value.as_deref(),
            limits::RESOURCE_TAG_VALUE_CHARS_MAX,
        )?;
    }
    Ok(())
}

/// Checks an execution's `tagList`: at most five tags of up to 256 characters.
pub fn check_tag_list(tags: &[String]) -> Result<(), SwfError> {
    if tags.len() > limits::EXECUTION_TAGS_MAX {
        return Err(constraint_error(
            "tagList",
            &format!("{} tags", tags.len()),
            &format!(
                "have length less than or equal to {}",
                limits::EXECUTION_TAGS_MAX
            ),
        ));
    }
    for tag in tags {
        check_length("tagList.member", tag, 0, limits::EXECUTION_TAG_CHARS_MAX)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_fault_has_its_aws_name_and_reads_back() {
        let names: Vec<&str> = Fault::ALL.iter().map(|f| f.aws_name()).collect();
        assert_eq!(
            names,
            [
                "UnknownResourceFault",
                "DomainAlreadyExistsFault",
                "TypeAlreadyExistsFault",
                "DomainDeprecatedFault",
                "TypeDeprecatedFault",
                "TypeNotDeprecatedFault",
                "WorkflowExecutionAlreadyStartedFault",
                "DefaultUndefinedFault",
                "LimitExceededFault",
                "OperationNotPermittedFault",
                "TooManyTagsFault",
                "ValidationException",
                "UnsupportedOperation",
                "InternalFailure",
            ]
        );
        for fault in Fault::ALL {
            assert_eq!(Fault::from_aws_name(fault.aws_name()), Some(fault));
        }
        assert_eq!(Fault::from_aws_name("NoSuchFault"), None);
        let error = SwfError::unknown_resource("Unknown domain: d");
        assert_eq!(error.to_string(), "UnknownResourceFault: Unknown domain: d");
    }

    #[test]
    fn names_follow_swf_rules() {
        assert!(check_name("name", "orders-1.0_x y", 256).is_ok());
        assert!(check_name("name", &"a".repeat(256), 256).is_ok());
        for bad in [
            "", " lead", "trail ", "a:b", "a/b", "a|b", "a\u{7}b", "a\u{85}b", "arn",
        ] {
            let error = check_name("name", bad, 256).expect_err(bad);
            assert_eq!(error.fault, Fault::Validation, "{bad:?}");
            assert!(error.message.contains("name"), "{}", error.message);
        }
        let long = check_name("domain", &"a".repeat(257), 256).expect_err("too long");
        assert!(
            long.message
                .contains("Member must have length less than or equal to 256"),
            "{}",
            long.message
        );
        // "arn" inside a name is fine; only the literal is reserved.
        assert!(check_name("name", "arnold", 256).is_ok());
    }

    #[test]
    fn timeouts_are_seconds_or_none() {
        assert_eq!(Timeout::parse("t", "NONE"), Ok(Timeout::Unlimited));
        assert_eq!(Timeout::parse("t", "0"), Ok(Timeout::Seconds(0)));
        assert_eq!(
            Timeout::parse("t", "31536000"),
            Ok(Timeout::Seconds(31_536_000))
        );
        for bad in ["", "-1", "1.5", "none", "31536001", "123456789", " 5"] {
            assert_eq!(
                Timeout::parse("t", bad).map_err(|e| e.fault),
                Err(Fault::Validation),
                "{bad:?}"
            );
        }
        assert_eq!(Timeout::Seconds(30).to_wire(), "30");
        assert_eq!(Timeout::Unlimited.to_wire(), "NONE");
        assert_eq!(Timeout::Seconds(30).as_ms(), Some(30_000));
        assert_eq!(Timeout::Unlimited.as_ms(), None);
        assert_eq!(Timeout::parse_optional("t", None), Ok(None));
    }

    #[test]
    fn priorities_retention_and_page_sizes() {
        assert_eq!(parse_task_priority("p", "-2147483648"), Ok(i32::MIN));
        assert_eq!(parse_task_priority("p", "2147483647"), Ok(i32::MAX));
        assert!(parse_task_priority("p", "2147483648").is_err());
        assert!(parse_task_priority("p", "high").is_err());
        assert_eq!(parse_retention_days("0"), Ok(0));
        assert_eq!(parse_retention_days("90"), Ok(90));
        assert!(parse_retention_days("91").is_err());
        assert!(parse_retention_days("NONE").is_err());
        assert!(parse_retention_days("-1").is_err());
        assert_eq!(page_size(None), Ok(1000));
        assert_eq!(page_size(Some(7)), Ok(7));
        assert_eq!(
            page_size(Some(1001)).map_err(|e| e.fault),
            Err(Fault::Validation)
        );
    }

    #[test]
    fn timestamps_are_epoch_seconds_with_milliseconds() {
        assert_eq!(timestamp_from_ms(1_700_000_000_123), 1_700_000_000.123);
        assert_eq!(timestamp_to_ms(1_700_000_000.123), 1_700_000_000_123);
        assert_eq!(timestamp_to_ms(-5.0), 0);
        assert_eq!(timestamp_to_ms(f64::NAN), 0);
    }

    #[test]
    fn inputs_read_swf_field_names() {
        let input: RegisterDomainInput = serde_json::from_value(json!({
            "name": "d", "workflowExecutionRetentionPeriodInDays": "1",
            "tags": [{"key": "k", "value": "v"}]
        }))
        .expect("RegisterDomain");
        assert_eq!(input.workflow_execution_retention_period_in_days, "1");
        assert_eq!(input.description, None);
        let start: StartWorkflowExecutionInput = serde_json::from_value(json!({
            "domain": "d", "workflowId": "w", "workflowType": {"name": "t", "version": "1"},
            "taskList": {"name": "l"}, "taskPriority": "5", "tagList": ["a"],
            "executionStartToCloseTimeout": "60", "taskStartToCloseTimeout": "NONE",
            "childPolicy": "REQUEST_CANCEL"
        }))
        .expect("StartWorkflowExecution");
        assert_eq!(start.child_policy, Some(ChildPolicy::RequestCancel));
        assert_eq!(start.task_list, Some(TaskList { name: "l".into() }));
        let closed: ListClosedWorkflowExecutionsInput = serde_json::from_value(json!({
            "domain": "d", "closeTimeFilter": {"oldestDate": 0},
            "closeStatusFilter": {"status": "CONTINUED_AS_NEW"}, "reverseOrder": true
        }))
        .expect("ListClosedWorkflowExecutions");
        assert_eq!(
            closed.close_status_filter.map(|f| f.status),
            Some(CloseStatus::ContinuedAsNew)
        );
        let bad = serde_json::from_value::<ListDomainsInput>(json!({"registrationStatus": "GONE"}));
        assert!(bad.is_err());
    }

    #[test]
    fn outputs_write_swf_field_names_and_leave_out_absent_ones() {
        let detail = WorkflowExecutionDetail {
            execution_info: WorkflowExecutionInfo {
                execution: WorkflowExecution {
                    workflow_id: "w".into(),
                    run_id: "r".into(),
                },
                workflow_type: WorkflowType {
                    name: "t".into(),
                    version: "1".into(),
                },
                start_timestamp: 1.5,
                close_timestamp: None,
                execution_status: ExecutionStatus::Open,
                close_status: None,
                parent: None,
                tag_list: None,
                cancel_requested: Some(false),
            },
            execution_configuration: WorkflowExecutionConfiguration {
                task_start_to_close_timeout: "10".into(),
                execution_start_to_close_timeout: "NONE".into(),
                task_list: TaskList { name: "l".into() },
                task_priority: None,
                child_policy: ChildPolicy::Terminate,
                lambda_role: None,
            },
            open_counts: WorkflowExecutionOpenCounts::default(),
            latest_activity_task_timestamp: None,
            latest_execution_context: Some("ctx".into()),
        };
        assert_eq!(
            serde_json::to_value(&detail).expect("serializes"),
            json!({
                "executionInfo": {
                    "execution": {"workflowId": "w", "runId": "r"},
                    "workflowType": {"name": "t", "version": "1"},
                    "startTimestamp": 1.5, "executionStatus": "OPEN", "cancelRequested": false
                },
                "executionConfiguration": {
                    "taskStartToCloseTimeout": "10", "executionStartToCloseTimeout": "NONE",
                    "taskList": {"name": "l"}, "childPolicy": "TERMINATE"
                },
                "openCounts": {
                    "openActivityTasks": 0, "openDecisionTasks": 0, "openTimers": 0,
                    "openChildWorkflowExecutions": 0
                },
                "latestExecutionContext": "ctx"
            })
        );
    }

    #[test]
    fn an_empty_poll_has_an_empty_token_and_no_events() {
        let value = serde_json::to_value(DecisionTask::empty()).expect("serializes");
        assert_eq!(
            value,
            json!({"taskToken": "", "startedEventId": 0, "previousStartedEventId": 0})
        );
        let value = serde_json::to_value(ActivityTask::empty()).expect("serializes");
        assert_eq!(value, json!({"taskToken": "", "startedEventId": 0}));
    }

    #[test]
    fn tags_and_filters_are_checked() {
        let tags: Vec<ResourceTag> = (0..51)
            .map(|i| ResourceTag {
                key: format!("k{i}"),
                value: None,
            })
            .collect();
        assert_eq!(
            check_resource_tags(&tags).map_err(|e| e.fault),
            Err(Fault::TooManyTags)
        );
        assert!(check_resource_tags(&tags[..50]).is_ok());
        let empty_key = [ResourceTag {
            key: String::new(),
            value: None,
        }];
        assert_eq!(
            check_resource_tags(&empty_key).map_err(|e| e.fault),
            Err(Fault::Validation)
        );
        let six: Vec<String> = (0..6).map(|i| i.to_string()).collect();
        assert!(check_tag_list(&six).is_err());
        assert!(check_tag_list(&six[..5]).is_ok());
        let filters = [("executionFilter", true), ("typeFilter", true)];
        assert!(check_exclusive_filters(&filters, None).is_err());
        assert!(check_exclusive_filters(&filters[..1], None).is_ok());
        assert!(check_exclusive_filters(&[], Some((false, false))).is_err());
        assert!(check_exclusive_filters(&[], Some((true, true))).is_err());
        assert!(check_exclusive_filters(&[], Some((true, false))).is_ok());
    }
}
