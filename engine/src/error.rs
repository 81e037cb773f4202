//! error: the engine's typed errors, each with the AWS Step Functions error name an API client
//! would see ([`Error::aws_name`]). ASL runtime failures are not here: they are history data.
//!
//! A refusal's reason is a typed enum (`PayloadReason`, `NameReason`, `ArnReason`, ...) whose
//! Display is the sentence the server sends: the AWS answers are checked byte for byte, so a
//! reason's words change only with the tests and the recorded AWS answers. A foreign error (an
//! I/O error, a JSON reader's) is kept as the `#[source]`, not as its text.
//!
//! Invariants: no `reason: String`; `is_retryable` and `aws_name` name every variant.

use statelog_core::asl::Diagnostic;
use statelog_core::history::depth::PayloadTextError;
use statelog_core::interpreter::TokenFormatError;
use statelog_store::{DamageReason, ExecutionStatus};

use crate::arn::{ResourceType, ACCOUNT_ID_DIGITS_COUNT, SERVICE};

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
    /// The execution input is not a JSON text within the size and depth limits.
    #[error("invalid execution input: the input {reason}")]
    InvalidExecutionInput {
        /// What is wrong.
        reason: PayloadReason,
    },
    /// A state machine or execution name breaks AWS's naming rules.
    #[error("invalid name '{name}': {reason}")]
    InvalidName {
        /// The name given.
        name: String,
        /// Which rule it breaks.
        reason: NameReason,
    },
    /// A string that should be an ARN of the right kind is not.
    #[error("invalid ARN '{arn}': {reason}")]
    InvalidArn {
        /// The text given.
        arn: String,
        /// What is wrong.
        reason: ArnReason,
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
        reason: TaskTokenReason,
    },
    /// The task of a genuine task token has closed or timed out (`TaskTimedOut`).
    #[error("the task token has either expired or the task associated with the token has already been closed (task {task_id} of {execution_arn})")]
    TaskTimedOut {
        /// The execution of the task.
        execution_arn: String,
        /// The task (the id of its `TaskScheduled` event).
        task_id: u32,
    },
    /// The output sent with a task token is not JSON, too large or too deep (`InvalidOutput`).
    #[error("invalid task output: the output {reason}")]
    InvalidOutput {
        /// What is wrong with it.
        reason: PayloadReason,
    },
    /// No activity has this ARN (`ActivityDoesNotExist`).
    #[error("activity does not exist: {activity_arn}")]
    ActivityDoesNotExist {
        /// The ARN given.
        activity_arn: String,
    },
    /// A task list is at one of its named maxima (`limits::TASK_LIST_POLLERS_MAX`, for its
    /// pollers and, apart, for its peekers; `limits::TASK_LIST_PENDING_MAX`).
    #[error("task list '{task_list}' already has {limit} {what}")]
    TaskListLimitExceeded {
        /// The list.
        task_list: String,
        /// `pollers`, `peekers` or `pending tasks`.
        what: &'static str,
        /// The maximum.
        limit: usize,
    },
    /// An argument outside its allowed range.
    #[error("invalid {field}: {reason}")]
    InvalidArgument {
        /// The argument.
        field: &'static str,
        /// What is wrong, and what is allowed.
        reason: ArgumentReason,
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
        /// What is wrong with the record (the store's typed reason).
        reason: DamageReason,
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
        reason: RedriveRefusal,
    },
    /// A call lacks a parameter it needs (`MissingRequiredParameter`), e.g. an
    /// `UpdateStateMachine` with neither a definition nor a role.
    #[error("missing required parameter: {reason}")]
    MissingRequiredParameter {
        /// What is missing.
        reason: MissingParameter,
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
    /// The call conflicts with the resource's state (`ConflictException`): a publish of a
    /// revision that is no longer current, an alias that exists with another routing, a
    /// version an alias still routes to.
    #[error("{reason}")]
    Conflict {
        /// What conflicts.
        reason: ConflictReason,
    },
    /// A state machine already has as many versions as allowed
    /// (`ServiceQuotaExceededException`).
    #[error("state machine {state_machine_arn} already has {limit} versions, the most allowed; delete unused versions first")]
    VersionQuotaExceeded {
        /// The machine.
        state_machine_arn: String,
        /// `limits::VERSIONS_PER_MACHINE_MAX`.
        limit: usize,
    },
    /// An input breaks a rule of the operation (`ValidationException`, AWS's sentence).
    #[error("{reason}")]
    Validation {
        /// Which rule.
        reason: ValidationReason,
    },
    /// The random source failed while the operation needed it (a task token, a generated
    /// name): the operation is refused and nothing is written, since a fallback value would be
    /// predictable.
    #[error("the random source failed while making {what}: {source}")]
    RandomSourceFailed {
        /// What needed the random bytes.
        what: &'static str,
        /// What the source reported.
        #[source]
        source: std::io::Error,
    },
    /// The engine's async runtime (the tokio runtime that runs task handlers) could not be
    /// built on open. This is its only use.
    #[error("cannot start the engine runtime: {source}")]
    Runtime {
        /// What the OS reported.
        #[source]
        source: std::io::Error,
    },
    /// The operation does not apply to the state machine's type (`StartSyncExecution` of a
    /// STANDARD machine, `ListExecutions` of an EXPRESS one), as AWS answers.
    #[error("This operation is not supported by this type of state machine")]
    StateMachineTypeNotSupported {
        /// The machine's ARN or name, as given.
        state_machine: String,
        /// Its type.
        machine_type: statelog_store::MachineType,
    },
    /// As many Express executions run as the engine keeps in memory
    /// (`limits::EXPRESS_RUNNING_MAX`): a start is refused until some end.
    #[error("{running} Express executions are running, the most this engine runs at once")]
    ExecutionLimitExceeded {
        /// How many run.
        running: usize,
    },
    /// The engine stopped (its runtime shut down) while an answer it had appended waited for
    /// the log: whether the answer is durable is unknown. Retrying it is safe: a recorded
    /// answer makes the retry `TaskTimedOut`, a lost one is recorded then.
    #[error("the engine stopped before the answer was acknowledged")]
    Interrupted,
    /// A background thread of the engine (`timer`, `compaction`) could not be started on open.
    #[error("cannot start the {thread} thread: {source}")]
    ThreadNotStarted {
        /// Which thread.
        thread: &'static str,
        /// What the OS reported.
        #[source]
        source: std::io::Error,
    },
    /// A `TestState` request the state cannot be tested with (`ValidationException`; a
    /// Parallel or Map without a mock is `InvalidDefinition`, as AWS answers).
    #[error("{reason}")]
    TestStateRefused {
        /// Why.
        reason: crate::test_state::TestStateRefusal,
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
            Error::StateMachineTypeNotSupported { .. } => "StateMachineTypeNotSupported",
            Error::ExecutionLimitExceeded { .. } => "ExecutionLimitExceeded",
            Error::Conflict { .. } => "ConflictException",
            Error::VersionQuotaExceeded { .. } => "ServiceQuotaExceededException",
            Error::Validation { .. } => "ValidationException",
            Error::TestStateRefused { reason } => reason.aws_name(),
            // Faults of the engine itself: a server answers them without their detail.
            Error::Store(_)
            | Error::Interpreter(_)
            | Error::Runtime { .. }
            | Error::Interrupted
            | Error::ThreadNotStarted { .. }
            | Error::NotRendered { .. }
            | Error::RandomSourceFailed { .. }
            | Error::ExecutionDamaged { .. } => "InternalFailure",
        }
    }
}

impl Error {
    /// Whether the same call, unchanged, may succeed later. Retryable: a task list at its limit
    /// (its pollers and tasks drain), a failed random source, an OS resource the engine could
    /// not get (a thread, the runtime), a store failure the store calls retryable (no log
    /// segment could be made: nothing was written and writes resume once space is freed), a
    /// log directory locked by another process (it may be released). Everything else is
    /// terminal: bad input, a missing or closed resource, a damaged execution, a poisoned,
    /// fenced or read-only log, a bug. A caller that retries must retry only these.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::TaskListLimitExceeded { .. }
            | Error::ExecutionLimitExceeded { .. }
            | Error::RandomSourceFailed { .. }
            | Error::Runtime { .. }
            | Error::Interrupted
            | Error::ThreadNotStarted { .. } => true,
            // The WAL calls a lock terminal for the writer that met it; for an open it is
            // passing: the other process may exit.
            Error::Store(store) => {
                store.is_retryable()
                    || matches!(
                        store,
                        statelog_store::Error::Log(statelog_wal::Error::Locked { .. })
                    )
            }
            // The call's input is wrong, and stays wrong.
            Error::InvalidDefinition { .. }
            | Error::InvalidExecutionInput { .. }
            | Error::InvalidName { .. }
            | Error::InvalidArn { .. }
            | Error::InvalidToken { .. }
            | Error::InvalidTaskToken { .. }
            | Error::InvalidOutput { .. }
            | Error::InvalidArgument { .. }
            | Error::MissingRequiredParameter { .. }
            | Error::Validation { .. }
            | Error::TooManyTags { .. }
            | Error::TestStateRefused { .. } => false,
            // The resource is missing, present, closed or in a state the call cannot change.
            // A redrive refused while another runs is terminal too: if that one succeeds, the
            // execution is no longer redrivable at all.
            Error::ExecutionDoesNotExist { .. }
            | Error::StateMachineDoesNotExist { .. }
            | Error::StateMachineAlreadyExists { .. }
            | Error::ExecutionAlreadyExists { .. }
            | Error::TaskTimedOut { .. }
            | Error::ActivityDoesNotExist { .. }
            | Error::ResourceNotFound { .. }
            | Error::StateMachineTypeNotSupported { .. }
            | Error::Conflict { .. }
            | Error::VersionQuotaExceeded { .. }
            | Error::ExecutionNotRedrivable { .. } => false,
            // Bugs and damage stay until the software or the log is repaired.
            Error::ExecutionDamaged { .. } | Error::Interpreter(_) | Error::NotRendered { .. } => {
                false
            }
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
                reason,
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

/// Why a payload (an execution input, a task output) is refused. Displayed after "the input" or
/// "the output".
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PayloadReason {
    /// The text is longer than the limit.
    #[error("is {size_bytes} bytes; the limit is {limit_bytes} bytes")]
    TooLarge {
        /// The text's size.
        size_bytes: usize,
        /// `limits::PAYLOAD_SIZE_BYTES_MAX`.
        limit_bytes: usize,
    },
    /// The text is not one JSON value, or nests too deep.
    #[error("{0}")]
    Unreadable(#[source] PayloadTextError),
}

/// Which of AWS's naming rules a name breaks (`Error::InvalidName`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameReason {
    /// Empty, or longer than a state machine or execution name may be.
    #[error("{chars} characters; a name has 1 to {chars_max}")]
    Length {
        /// How many characters it has.
        chars: usize,
        /// `limits::RESOURCE_NAME_CHARS_MAX`.
        chars_max: usize,
    },
    /// A character AWS forbids in names (white space, brackets, wildcards, controls, ...).
    #[error("it contains the forbidden character {character:?}")]
    ForbiddenCharacter {
        /// The first such character.
        character: char,
    },
    /// Longer than an activity name may be.
    #[error("longer than {chars_max} characters")]
    ActivityNameTooLong {
        /// `limits::ACTIVITY_NAME_CHARS_MAX`.
        chars_max: usize,
    },
}

/// What is wrong with a text given as an ARN (`Error::InvalidArn`). The words are AWS's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ArnReason {
    /// It does not start with `arn:`.
    #[error("Invalid ARN prefix: it must start with 'arn:'")]
    Prefix,
    /// The partition field is not a word of lowercase letters, digits and `-`.
    #[error("Invalid partition: '{partition}'")]
    Partition {
        /// The field given.
        partition: String,
    },
    /// The service field is not `states`.
    #[error("Invalid service: '{service}' (expected '{SERVICE}')")]
    Service {
        /// The field given.
        service: String,
    },
    /// The region field is not a word of lowercase letters, digits and `-`.
    #[error("Invalid region: '{region}'")]
    Region {
        /// The field given.
        region: String,
    },
    /// The account field is not 12 digits.
    #[error("Account ID is not valid: '{account}' (expected {ACCOUNT_ID_DIGITS_COUNT} digits)")]
    Account {
        /// The field given.
        account: String,
    },
    /// The resource type field names no Step Functions resource.
    #[error("Invalid resource type: '{resource_type}'")]
    ResourceType {
        /// The field given.
        resource_type: String,
    },
    /// The names after the resource type do not have the type's shape.
    #[error("a {resource_type} ARN ends in {}, names without ':'", resource_type.shape())]
    Shape {
        /// The resource type the ARN names.
        resource_type: ResourceType,
    },
    /// A well-formed ARN of a type the operation does not take.
    #[error("Resource type not valid in this context: {found}")]
    WrongType {
        /// The type it names.
        found: ResourceType,
    },
    /// Not `arn:...:mapRun:<machine>/<label>:<id>` where a Map Run ARN is expected.
    #[error("not a Map Run ARN (arn:<partition>:states:<region>:<account>:mapRun:<machine>/<label>:<id>)")]
    NotAMapRun,
    /// `stateMachineArn#Case` while no mock configuration is loaded.
    #[error(
        "'#{test_case}' names a test case, but no mock configuration is loaded (statelog serve --mock-config FILE)"
    )]
    NoMockConfig {
        /// The test case named.
        test_case: String,
    },
    /// `stateMachineArn#Case` whose test case the mock configuration does not hold.
    #[error(
        "the mock configuration has no test case '{test_case}' for state machine '{state_machine}'"
    )]
    UnknownTestCase {
        /// The state machine's name.
        state_machine: String,
        /// The test case named.
        test_case: String,
    },
}

/// Why a task token is refused (`Error::InvalidTaskToken`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TaskTokenReason {
    /// The text is not a token this engine could have issued.
    #[error("{0}")]
    Malformed(#[from] TokenFormatError),
    /// A well-formed token that names no task of the caller's namespace, or whose secret does
    /// not match the task's.
    #[error("no task of this namespace has this token")]
    Unknown,
}

/// Why an argument is outside its allowed range (`Error::InvalidArgument`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ArgumentReason {
    /// A page size (`maxResults`) above the operation's maximum.
    #[error("{asked} is outside 1..={max}")]
    PageSize {
        /// The size asked for.
        asked: usize,
        /// The operation's maximum.
        max: usize,
    },
    /// A tag key or value with too few or too many characters. The text reads "a tag tag key":
    /// the words answered before the reasons were typed, kept byte for byte.
    #[error("{text:?} has {chars} characters; a tag {part} has {chars_min} to {chars_max}")]
    TagLength {
        /// `tag key` or `tag value`.
        part: &'static str,
        /// The text given.
        text: String,
        /// How many characters it has.
        chars: usize,
        /// The fewest allowed.
        chars_min: usize,
        /// The most allowed.
        chars_max: usize,
    },
    /// A tag key or value with a character tags may not hold.
    #[error("{text:?} contains {character:?}; tags may hold letters, digits, white space and _ . : / = + - @")]
    TagCharacter {
        /// The text given.
        text: String,
        /// The first such character.
        character: char,
    },
    /// A task list name that is empty or too long.
    #[error("'{name}' must have 1 to {chars_max} characters")]
    TaskListName {
        /// The name given.
        name: String,
        /// `limits::TASK_LIST_NAME_CHARS_MAX`.
        chars_max: usize,
    },
    /// A job key naming a waiting task that is not a `.sync` task.
    #[error("task {task_id} of {execution_arn} is not a .sync task")]
    NotSyncTask {
        /// The execution.
        execution_arn: String,
        /// The task (the id of its `TaskScheduled` event).
        task_id: u32,
    },
}

/// Why an execution cannot be redriven now (`Error::ExecutionNotRedrivable`, and the
/// `redriveStatusReason` that `DescribeExecution` shows).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RedriveRefusal {
    /// Only a failed, aborted or timed-out execution can be redriven.
    #[error("Execution is {}; only a FAILED, ABORTED or TIMED_OUT execution can be redriven", status.aws_name())]
    Status {
        /// Its status.
        status: ExecutionStatus,
    },
    /// It closed longer ago than the redrive window.
    #[error("Execution closed {closed_ms_ago} ms ago; the redrive window is {window_ms} ms")]
    WindowPassed {
        /// How long ago it closed.
        closed_ms_ago: u64,
        /// `limits::REDRIVE_WINDOW_MS`.
        window_ms: u64,
    },
    /// It started as long ago as an execution may stay open.
    #[error(
        "Execution started {started_ms_ago} ms ago; it may stay open at most {open_ms_max} ms"
    )]
    OpenTooLong {
        /// How long ago it started.
        started_ms_ago: u64,
        /// The engine's `execution_open_ms_max`.
        open_ms_max: u64,
    },
    /// Its history has no room for `ExecutionRedriven` and one more event.
    #[error("Execution history has {event_count} events; redrive needs fewer than {events_max}")]
    EventBudget {
        /// Events in its history.
        event_count: u32,
        /// One less than the engine's `history_events_max`.
        events_max: u32,
    },
    /// It is open already: a redrive is in progress.
    #[error("the execution is running (a redrive is in progress)")]
    Running,
    /// It is a Distributed Map's child execution (`REDRIVABLE_BY_MAP_RUN`): its Map Run
    /// redrives it when its parent execution is redriven.
    #[error("a child execution of a Map Run is redriven through its parent execution; redrive the parent")]
    MapRunChild,
}

/// What a call conflicts with (`Error::Conflict`). The words are AWS's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConflictReason {
    /// `PublishStateMachineVersion` with a `revisionId` that is not the current one.
    #[error("Failed to publish the State Machine version for revision {requested}. The current State Machine revision is {current}.")]
    RevisionChanged {
        /// The revision id given.
        requested: String,
        /// The current revision id (`INITIAL` for the creation's).
        current: String,
    },
    /// `CreateStateMachineAlias` of a name that exists with another description or routing.
    #[error("Failed to create alias because an alias with the same name and a different routing configuration already exists.")]
    AliasDiffers {
        /// The alias's ARN.
        alias_arn: String,
    },
    /// `DeleteStateMachineVersion` of a version aliases route to.
    #[error("Version to be deleted must not be referenced by an alias. Current list of aliases referencing this version: [{}]", aliases.join(", "))]
    VersionInUse {
        /// The version's ARN.
        version_arn: String,
        /// The aliases routing to it, by name.
        aliases: Vec<String>,
    },
}

/// Which rule of an operation an input breaks (`Error::Validation`). The words are AWS's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ValidationReason {
    /// An `UpdateMapRun` value out of its range.
    #[error("1 validation error detected: Value at '{member}' failed to satisfy constraint: {constraint}")]
    MapRunUpdateRange {
        /// `maxConcurrency` or `toleratedFailurePercentage`.
        member: &'static str,
        /// The allowed range, as AWS words it.
        constraint: &'static str,
    },
    /// `UpdateMapRun` of a Map Run that is no longer running.
    #[error("Map Run {map_run_arn} is not running")]
    MapRunNotRunning {
        /// The run's ARN.
        map_run_arn: String,
    },
    /// `versionDescription` without `publish: true`.
    #[error("Version description can only be set when publish is true")]
    DescriptionWithoutPublish,
    /// A description longer than allowed.
    #[error("1 validation error detected: Value at '{member}' failed to satisfy constraint: Member must have length less than or equal to {chars_max}")]
    DescriptionLength {
        /// `description` or `versionDescription`.
        member: &'static str,
        /// `limits::DESCRIPTION_CHARS_MAX`.
        chars_max: usize,
    },
    /// An alias name that is empty or too long.
    #[error("1 validation error detected: Value '{name}' at 'name' failed to satisfy constraint: Member must have length between 1 and {chars_max}")]
    AliasNameLength {
        /// The name given.
        name: String,
        /// `limits::RESOURCE_NAME_CHARS_MAX`.
        chars_max: usize,
    },
    /// An alias name outside AWS's pattern (letters, digits, `_ - .`, not digits only).
    #[error("1 validation error detected: Value '{name}' at 'name' failed to satisfy constraint: Member must satisfy regular expression pattern: ^(?=.*[a-zA-Z_\\-\\.])[a-zA-Z0-9_\\-\\.]+$")]
    AliasNamePattern {
        /// The name given.
        name: String,
    },
    /// A routing configuration with no entry or more than two.
    #[error("1 validation error detected: Value at 'routingConfiguration' failed to satisfy constraint: Member must have length between 1 and {entries_max} (found {count})")]
    RoutingLength {
        /// How many entries it has.
        count: usize,
        /// `limits::ALIAS_ROUTES_MAX`.
        entries_max: usize,
    },
    /// A routing entry whose ARN is not a version ARN (or versions of two machines).
    #[error("Routing configuration must contain state machine version ARNs. Received: [{}]", received.join(", "))]
    RoutingNotVersions {
        /// The ARNs given.
        received: Vec<String>,
    },
    /// A routing configuration naming one version twice.
    #[error("Routing configuration must contain distinct state machine version ARNs. Received: [{}]", received.join(", "))]
    RoutingNotDistinct {
        /// The ARNs given.
        received: Vec<String>,
    },
    /// A weight above 100.
    #[error("1 validation error detected: Value '{weight}' at 'routingConfiguration.{position}.member.weight' failed to satisfy constraint: Member must have value less than or equal to 100")]
    WeightTooLarge {
        /// Its entry's position, from 1.
        position: usize,
        /// The weight given.
        weight: u32,
    },
    /// Weights that do not sum to 100.
    #[error("Sum of routing configuration weights must equal 100. Received: [{}]", weights.iter().map(u32::to_string).collect::<Vec<_>>().join(", "))]
    WeightsSum {
        /// The weights given.
        weights: Vec<u32>,
    },
    /// An alias ARN where a version ARN (or the reverse) is needed.
    #[error("Invalid Arn: '{arn}' is not a state machine {expected} ARN")]
    NotQualifiedAs {
        /// The ARN given.
        arn: String,
        /// `version` or `alias`.
        expected: &'static str,
    },
}

/// Which required parameter a call lacks (`Error::MissingRequiredParameter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MissingParameter {
    /// An `UpdateStateMachine` with neither a definition nor a role.
    #[error("UpdateStateMachine needs a definition, a roleArn, or both")]
    DefinitionOrRole,
    /// An `UpdateStateMachineAlias` with neither a description nor a routing configuration.
    #[error("UpdateStateMachineAlias needs a description, a routingConfiguration, or both")]
    DescriptionOrRouting,
}

#[cfg(test)]
mod tests {
    //! The typed reasons print the sentences the server sends (recorded AWS answers and the
    //! server tests compare them byte for byte), and `is_retryable` tells the truth.

    use std::sync::Arc;

    use super::*;

    fn io(what: &str) -> std::io::Error {
        std::io::Error::other(what.to_string())
    }

    fn wal_io() -> statelog_wal::Error {
        statelog_wal::Error::io("write_at", "/log/0001.seg", io("disk full"))
    }

    #[test]
    fn payload_reasons_keep_their_text() {
        let cases = [
            (
                Error::InvalidExecutionInput {
                    reason: PayloadReason::TooLarge {
                        size_bytes: 262_145,
                        limit_bytes: 262_144,
                    },
                },
                "invalid execution input: the input is 262145 bytes; the limit is 262144 bytes",
            ),
            (
                Error::InvalidExecutionInput {
                    reason: PayloadReason::Unreadable(PayloadTextError::TooDeep {
                        depth: 65,
                        depth_max: 64,
                    }),
                },
                "invalid execution input: the input nests 65 levels of objects and arrays deep; \
                 the limit is 64",
            ),
            (
                Error::InvalidOutput {
                    reason: PayloadReason::TooLarge {
                        size_bytes: 9,
                        limit_bytes: 8,
                    },
                },
                "invalid task output: the output is 9 bytes; the limit is 8 bytes",
            ),
        ];
        for (error, text) in cases {
            assert_eq!(error.to_string(), text);
        }
        let json = serde_json::from_str::<serde_json::Value>("{").expect_err("not JSON");
        let expected = format!("invalid task output: the output is not valid JSON: {json}");
        let error = Error::InvalidOutput {
            reason: PayloadReason::Unreadable(PayloadTextError::Invalid(json)),
        };
        assert_eq!(error.to_string(), expected);
        assert!(
            std::error::Error::source(&PayloadReason::Unreadable(PayloadTextError::TooDeep {
                depth: 2,
                depth_max: 1
            }))
            .is_some(),
            "the reader's error is kept typed"
        );
    }

    #[test]
    fn name_and_arn_reasons_keep_their_text() {
        let name = |name: &str, reason| Error::InvalidName {
            name: name.to_string(),
            reason,
        };
        let arn = |arn: &str, reason| Error::InvalidArn {
            arn: arn.to_string(),
            reason,
        };
        let cases = [
            (
                name(
                    "",
                    NameReason::Length {
                        chars: 0,
                        chars_max: 80,
                    },
                ),
                "invalid name '': 0 characters; a name has 1 to 80",
            ),
            (
                name("a b", NameReason::ForbiddenCharacter { character: ' ' }),
                "invalid name 'a b': it contains the forbidden character ' '",
            ),
            (
                name("n", NameReason::ActivityNameTooLong { chars_max: 80 }),
                "invalid name 'n': longer than 80 characters",
            ),
            (
                arn("base", ArnReason::Prefix),
                "invalid ARN 'base': Invalid ARN prefix: it must start with 'arn:'",
            ),
            (
                arn(
                    "t",
                    ArnReason::Partition {
                        partition: "A".into(),
                    },
                ),
                "invalid ARN 't': Invalid partition: 'A'",
            ),
            (
                arn(
                    "t",
                    ArnReason::Service {
                        service: "lambda".into(),
                    },
                ),
                "invalid ARN 't': Invalid service: 'lambda' (expected 'states')",
            ),
            (
                arn("t", ArnReason::Region { region: "".into() }),
                "invalid ARN 't': Invalid region: ''",
            ),
            (
                arn(
                    "t",
                    ArnReason::Account {
                        account: "42".into(),
                    },
                ),
                "invalid ARN 't': Account ID is not valid: '42' (expected 12 digits)",
            ),
            (
                arn(
                    "t",
                    ArnReason::ResourceType {
                        resource_type: "mapRun".into(),
                    },
                ),
                "invalid ARN 't': Invalid resource type: 'mapRun'",
            ),
            (
                arn(
                    "t",
                    ArnReason::Shape {
                        resource_type: ResourceType::Execution,
                    },
                ),
                "invalid ARN 't': a execution ARN ends in \
                 execution:<state machine name>:<execution name>, names without ':'",
            ),
            (
                arn(
                    "t",
                    ArnReason::WrongType {
                        found: ResourceType::Activity,
                    },
                ),
                "invalid ARN 't': Resource type not valid in this context: activity",
            ),
        ];
        for (error, text) in cases {
            assert_eq!(error.to_string(), text);
        }
    }

    #[test]
    fn other_reasons_keep_their_text() {
        let argument = |field, reason| Error::InvalidArgument { field, reason };
        let not_redrivable = |reason| Error::ExecutionNotRedrivable {
            execution_arn: "arn:e".into(),
            reason,
        };
        let cases = [
            (
                Error::InvalidTaskToken {
                    reason: TaskTokenReason::Unknown,
                },
                "invalid task token: no task of this namespace has this token".to_string(),
            ),
            (
                Error::InvalidTaskToken {
                    reason: TaskTokenReason::Malformed(TokenFormatError {
                        reason: "it is empty",
                    }),
                },
                "invalid task token: not a task token: it is empty".to_string(),
            ),
            (
                argument(
                    "maxResults",
                    ArgumentReason::PageSize {
                        asked: 1001,
                        max: 1000,
                    },
                ),
                "invalid maxResults: 1001 is outside 1..=1000".to_string(),
            ),
            (
                argument(
                    "tag key",
                    ArgumentReason::TagLength {
                        part: "tag key",
                        text: String::new(),
                        chars: 0,
                        chars_min: 1,
                        chars_max: 128,
                    },
                ),
                // The doubled "tag" is today's answer, kept byte for byte.
                "invalid tag key: \"\" has 0 characters; a tag tag key has 1 to 128".to_string(),
            ),
            (
                argument(
                    "tag value",
                    ArgumentReason::TagCharacter {
                        text: "a!".into(),
                        character: '!',
                    },
                ),
                "invalid tag value: \"a!\" contains '!'; tags may hold letters, digits, white \
                 space and _ . : / = + - @"
                    .to_string(),
            ),
            (
                argument(
                    "taskList",
                    ArgumentReason::TaskListName {
                        name: String::new(),
                        chars_max: 80,
                    },
                ),
                "invalid taskList: '' must have 1 to 80 characters".to_string(),
            ),
            (
                argument(
                    "job",
                    ArgumentReason::NotSyncTask {
                        execution_arn: "arn:e".into(),
                        task_id: 3,
                    },
                ),
                "invalid job: task 3 of arn:e is not a .sync task".to_string(),
            ),
            (
                not_redrivable(RedriveRefusal::Status {
                    status: ExecutionStatus::Succeeded,
                }),
                "execution arn:e is not redrivable: Execution is SUCCEEDED; only a FAILED, \
                 ABORTED or TIMED_OUT execution can be redriven"
                    .to_string(),
            ),
            (
                not_redrivable(RedriveRefusal::WindowPassed {
                    closed_ms_ago: 5,
                    window_ms: 4,
                }),
                "execution arn:e is not redrivable: Execution closed 5 ms ago; the redrive \
                 window is 4 ms"
                    .to_string(),
            ),
            (
                not_redrivable(RedriveRefusal::OpenTooLong {
                    started_ms_ago: 7,
                    open_ms_max: 6,
                }),
                "execution arn:e is not redrivable: Execution started 7 ms ago; it may stay \
                 open at most 6 ms"
                    .to_string(),
            ),
            (
                not_redrivable(RedriveRefusal::EventBudget {
                    event_count: 9,
                    events_max: 9,
                }),
                "execution arn:e is not redrivable: Execution history has 9 events; redrive \
                 needs fewer than 9"
                    .to_string(),
            ),
            (
                not_redrivable(RedriveRefusal::Running),
                "execution arn:e is not redrivable: the execution is running (a redrive is in \
                 progress)"
                    .to_string(),
            ),
            (
                not_redrivable(RedriveRefusal::MapRunChild),
                "execution arn:e is not redrivable: a child execution of a Map Run is redriven \
                 through its parent execution; redrive the parent"
                    .to_string(),
            ),
            (
                Error::MissingRequiredParameter {
                    reason: MissingParameter::DefinitionOrRole,
                },
                "missing required parameter: UpdateStateMachine needs a definition, a roleArn, \
                 or both"
                    .to_string(),
            ),
            (
                Error::ExecutionDamaged {
                    execution_arn: "arn:e".into(),
                    lsn: 7,
                    reason: DamageReason::FoldForeignEvents {
                        events_arn: "arn:f".into(),
                    },
                },
                "execution arn:e is damaged: its record at lsn 7 does not read: the events \
                 belong to arn:f"
                    .to_string(),
            ),
            (
                Error::RandomSourceFailed {
                    what: "a task token",
                    source: io("no entropy"),
                },
                "the random source failed while making a task token: no entropy".to_string(),
            ),
            (
                Error::Runtime {
                    source: io("no threads"),
                },
                "cannot start the engine runtime: no threads".to_string(),
            ),
        ];
        for (error, text) in cases {
            assert_eq!(error.to_string(), text);
        }
    }

    #[test]
    fn retryable_are_the_passing_failures_only() {
        let retryable = [
            Error::from(statelog_store::Error::Log(
                statelog_wal::Error::SegmentUnavailable {
                    segment_id: statelog_wal::SegmentId(3),
                    cause: Arc::new(wal_io()),
                },
            )),
            Error::from(statelog_store::Error::Log(statelog_wal::Error::Locked {
                dir: "/log".into(),
            })),
            Error::TaskListLimitExceeded {
                task_list: "l".into(),
                what: "pollers",
                limit: 1,
            },
            Error::RandomSourceFailed {
                what: "a task token",
                source: io("no entropy"),
            },
            Error::Runtime {
                source: io("no threads"),
            },
            Error::ThreadNotStarted {
                thread: "timer",
                source: io("no threads"),
            },
        ];
        for error in &retryable {
            assert!(error.is_retryable(), "{error}");
        }
        let terminal = [
            // A failed write poisons the log: every later call fails the same way.
            Error::from(statelog_store::Error::Log(wal_io())),
            Error::from(statelog_store::Error::Log(statelog_wal::Error::Poisoned {
                cause: Arc::new(wal_io()),
            })),
            Error::from(statelog_store::Error::Log(statelog_wal::Error::ReadOnly {
                op: "append",
            })),
            Error::from(statelog_store::Error::Fenced),
            Error::from(statelog_store::Error::Damaged {
                execution_arn: "arn:e".into(),
                lsn: 7,
                reason: DamageReason::FoldForeignEvents {
                    events_arn: "arn:f".into(),
                },
            }),
            Error::InvalidExecutionInput {
                reason: PayloadReason::TooLarge {
                    size_bytes: 2,
                    limit_bytes: 1,
                },
            },
            Error::InvalidTaskToken {
                reason: TaskTokenReason::Unknown,
            },
            Error::InvalidArn {
                arn: "base".into(),
                reason: ArnReason::Prefix,
            },
            Error::ExecutionDoesNotExist {
                execution_arn: "arn:e".into(),
            },
            Error::TaskTimedOut {
                execution_arn: "arn:e".into(),
                task_id: 3,
            },
            Error::ExecutionNotRedrivable {
                execution_arn: "arn:e".into(),
                reason: RedriveRefusal::Running,
            },
        ];
        for error in &terminal {
            assert!(!error.is_retryable(), "{error}");
        }
        assert!(
            matches!(terminal[4], Error::ExecutionDamaged { .. }),
            "a damaged execution is its own variant, not a store error"
        );
    }
}
