//! error: the engine's typed errors, each with the AWS Step Functions error name an API client
//! would see ([`Error::aws_name`]). ASL runtime failures are not here: they are history data.

use statelog_core::asl::Diagnostic;

/// Errors of the engine API.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No execution with this ARN.
    #[error("execution does not exist: {execution_arn}")]
    ExecutionDoesNotExist {
        /// The ARN asked for.
        execution_arn: String,
    },
    /// No state machine with this name or ARN.
    #[error("state machine does not exist: {state_machine}")]
    StateMachineDoesNotExist {
        /// The name or ARN asked for.
        state_machine: String,
    },
    /// A state machine with this name exists with another definition or role.
    #[error("state machine already exists: {state_machine_arn}")]
    StateMachineAlreadyExists {
        /// The existing machine's ARN.
        state_machine_arn: String,
    },
    /// The definition does not validate; every problem found is listed.
    #[error("invalid state machine definition: {}", summarize(diagnostics))]
    InvalidDefinition {
        /// Every problem, with the JSON pointer of the offending field.
        diagnostics: Vec<Diagnostic>,
    },
    /// The execution input is not a JSON text within the size limit.
    #[error("invalid execution input: {reason}")]
    InvalidExecutionInput {
        /// What is wrong.
        reason: String,
    },
    /// A state machine or execution name breaks AWS's naming rules.
    #[error("invalid name '{name}': {reason}")]
    InvalidName {
        /// The name given.
        name: String,
        /// Which rule it breaks.
        reason: String,
    },
    /// A string that should be an ARN of the right kind is not.
    #[error("invalid ARN '{arn}': {reason}")]
    InvalidArn {
        /// The text given.
        arn: String,
        /// What is wrong.
        reason: String,
    },
    /// An execution with this name exists with another input, or is closed.
    #[error("execution already exists: {execution_arn}")]
    ExecutionAlreadyExists {
        /// The existing execution's ARN.
        execution_arn: String,
    },
    /// A pagination token this engine did not issue for this query.
    #[error("invalid pagination token '{token}'")]
    InvalidToken {
        /// The token given.
        token: String,
    },
    /// A task token this engine did not issue, issued in another namespace, or damaged
    /// (`InvalidToken`; the token itself is not echoed).
    #[error("invalid task token: {reason}")]
    InvalidTaskToken {
        /// Why it is refused.
        reason: String,
    },
    /// The task of a genuine task token has closed or timed out (`TaskTimedOut`).
    #[error("the task token has either expired or the task associated with the token has already been closed (task {task_id} of {execution_arn})")]
    TaskTimedOut {
        /// The execution of the task.
        execution_arn: String,
        /// The task (the id of its `TaskScheduled` event).
        task_id: u32,
    },
    /// The output sent with a task token is not JSON or too large (`InvalidOutput`).
    #[error("invalid task output: {reason}")]
    InvalidOutput {
        /// What is wrong with it.
        reason: String,
    },
    /// No activity has this ARN (`ActivityDoesNotExist`).
    #[error("activity does not exist: {activity_arn}")]
    ActivityDoesNotExist {
        /// The ARN given.
        activity_arn: String,
    },
    /// A task list is at one of its named maxima (`limits::TASK_LIST_POLLERS_MAX`,
    /// `limits::TASK_LIST_PENDING_MAX`).
    #[error("task list '{task_list}' already has {limit} {what}")]
    TaskListLimitExceeded {
        /// The list.
        task_list: String,
        /// `pollers` or `pending tasks`.
        what: &'static str,
        /// The maximum.
        limit: usize,
    },
    /// An argument outside its allowed range.
    #[error("invalid {field}: {reason}")]
    InvalidArgument {
        /// The argument.
        field: &'static str,
        /// What is allowed.
        reason: String,
    },
    /// The store (or the log under it) failed: I/O, corruption, a poisoned log.
    #[error("store: {0}")]
    Store(#[source] statelog_store::Error),
    /// The execution has a record that does not read although the log's checksum held (a
    /// software bug, not damage on the disk). Every call on it answers this; the other
    /// executions are not affected. `Engine::damaged_executions` lists them.
    #[error(
        "execution {execution_arn} is damaged: its record at lsn {lsn} does not read: {reason}"
    )]
    ExecutionDamaged {
        /// The execution.
        execution_arn: String,
        /// The LSN of its first record that does not read.
        lsn: u64,
        /// What is wrong with the record.
        reason: String,
    },
    /// The interpreter refused a trigger or a recorded history (a bug or a foreign log).
    #[error("interpreter: {0}")]
    Interpreter(#[from] statelog_core::interpreter::Error),
    /// The execution cannot be redriven (status, 14-day window, 1-year open time, event budget,
    /// or a redrive already running).
    #[error("execution {execution_arn} is not redrivable: {reason}")]
    ExecutionNotRedrivable {
        /// The execution.
        execution_arn: String,
        /// Why not.
        reason: String,
    },
    /// A call lacks a parameter it needs (`MissingRequiredParameter`), e.g. an
    /// `UpdateStateMachine` with neither a definition nor a role.
    #[error("missing required parameter: {reason}")]
    MissingRequiredParameter {
        /// What is missing.
        reason: String,
    },
    /// A tag change would leave a resource with more tags than allowed (`TooManyTags`).
    #[error("{resource_arn} would have {count} tags; at most {limit} are allowed")]
    TooManyTags {
        /// The resource (its ARN).
        resource_arn: String,
        /// How many tags it would have.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// No state machine or activity has this ARN (`ResourceNotFound`).
    #[error("resource not found: {resource_arn}")]
    ResourceNotFound {
        /// The ARN given.
        resource_arn: String,
    },
    /// The random source failed while the operation needed it (a task token, a generated
    /// name): the operation is refused and nothing is written, since a fallback value would be
    /// predictable.
    #[error("the random source failed while making {what}: {reason}")]
    RandomSourceFailed {
        /// What needed the random bytes.
        what: &'static str,
        /// What the source reported.
        reason: String,
    },
    /// The engine's async runtime (the tokio runtime that runs task handlers) could not be
    /// built on open. This is its only use.
    #[error("cannot start the engine runtime: {reason}")]
    Runtime {
        /// What the OS reported.
        reason: String,
    },
    /// A background thread of the engine (`timer`, `compaction`) could not be started on open.
    #[error("cannot start the {thread} thread: {source}")]
    ThreadNotStarted {
        /// Which thread.
        thread: &'static str,
        /// What the OS reported.
        #[source]
        source: std::io::Error,
    },
    /// A JSON value held by the engine could not be rendered as text (a bug: a parsed value
    /// always renders).
    #[error("cannot render {what}: {source}")]
    NotRendered {
        /// What was rendered (`an execution input`, `an activity input`).
        what: &'static str,
        /// What serde_json reported.
        #[source]
        source: serde_json::Error,
    },
}

impl Error {
    /// The AWS Step Functions error name for this error. The engine's own faults (store,
    /// interpreter, runtime) are AWS's `InternalFailure`.
    pub fn aws_name(&self) -> &'static str {
        match self {
            Error::ExecutionDoesNotExist { .. } => "ExecutionDoesNotExist",
            Error::StateMachineDoesNotExist { .. } => "StateMachineDoesNotExist",
            Error::StateMachineAlreadyExists { .. } => "StateMachineAlreadyExists",
            Error::InvalidDefinition { .. } => "InvalidDefinition",
            Error::InvalidExecutionInput { .. } => "InvalidExecutionInput",
            Error::InvalidName { .. } => "InvalidName",
            Error::InvalidArn { .. } => "InvalidArn",
            Error::ExecutionAlreadyExists { .. } => "ExecutionAlreadyExists",
            Error::InvalidToken { .. } => "InvalidToken",
            Error::InvalidTaskToken { .. } => "InvalidToken",
            Error::TaskTimedOut { .. } => "TaskTimedOut",
            Error::InvalidOutput { .. } => "InvalidOutput",
            Error::ActivityDoesNotExist { .. } => "ActivityDoesNotExist",
            Error::TaskListLimitExceeded { .. } => "ActivityWorkerLimitExceeded",
            Error::InvalidArgument { .. } => "ValidationException",
            Error::ExecutionNotRedrivable { .. } => "ExecutionNotRedrivable",
            Error::MissingRequiredParameter { .. } => "MissingRequiredParameter",
            Error::TooManyTags { .. } => "TooManyTags",
            Error::ResourceNotFound { .. } => "ResourceNotFound",
            // Faults of the engine itself: a server answers them without their detail.
            Error::Store(_)
            | Error::Interpreter(_)
            | Error::Runtime { .. }
            | Error::ThreadNotStarted { .. }
            | Error::NotRendered { .. }
            | Error::RandomSourceFailed { .. }
            | Error::ExecutionDamaged { .. } => "InternalFailure",
        }
    }
}

impl Error {
    /// Whether the same call, unchanged, may succeed later: a task list at its limit (its
    /// pollers and tasks drain), a failed random source, an OS resource the engine could not
    /// get (a thread, the runtime), a log directory locked by another process. Everything else is terminal:
    /// bad input, a missing or closed resource, a damaged execution, a poisoned or read-only
    /// log, a bug. A caller that retries must retry only these.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::TaskListLimitExceeded { .. }
            | Error::RandomSourceFailed { .. }
            | Error::Runtime { .. }
            | Error::ThreadNotStarted { .. } => true,
            // A failed write or sync poisons the log (every later call fails the same way), so
            // a log's I/O error is terminal; a lock held by another process may be released.
            Error::Store(statelog_store::Error::Log(log)) => {
                matches!(log, statelog_wal::Error::Locked { .. })
            }
            _ => false,
        }
    }
}

impl From<statelog_store::Error> for Error {
    /// A damaged execution is its own variant; every other store failure is [`Error::Store`].
    fn from(error: statelog_store::Error) -> Self {
        match error {
            statelog_store::Error::Damaged {
                execution_arn,
                lsn,
                reason,
            } => Error::ExecutionDamaged {
                execution_arn,
                lsn,
                reason: reason.to_string(),
            },
            other => Error::Store(other),
        }
    }
}

fn summarize(diagnostics: &[Diagnostic]) -> String {
    diagnostics
        .iter()
        .map(|d| format!("{}: {}", d.path, d.message))
        .collect::<Vec<_>>()
        .join("; ")
}
