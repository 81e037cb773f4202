//! backend: the seam between the HTTP adapter and the engine. [`Backend`] is what the router
//! calls; the engine adapter implements it over the public engine API.
//!
//! Owns the caller identity ([`Caller`]: account = namespace) and the plain result shapes the
//! router renders. Invariants: every method is called with an authenticated caller; results are
//! already scoped to `caller.account_id`. Must not: know about HTTP, headers or signatures.

use std::future::Future;

use serde_json::Value;

use super::error::Error;
use super::protocol::Operation;
use super::protocol::{
    CreateStateMachineInput, GetExecutionHistoryInput, ListExecutionsInput, RedriveExecutionInput,
    StartExecutionInput, StartSyncExecutionInput, StopExecutionInput, TagInput,
    UpdateStateMachineInput,
};
use super::swf::SwfOperation;
use crate::engine::swf::api::SwfError;
use crate::engine::{Engine, ExpressOutcome, MachineType};

/// The operation a call names: one of Step Functions or one of Amazon SWF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallName {
    /// `AWSStepFunctions.<Operation>`.
    StepFunctions(Operation),
    /// `SimpleWorkflowService.<Operation>`.
    Swf(SwfOperation),
}

impl CallName {
    /// The operation's AWS name.
    pub fn name(self) -> &'static str {
        match self {
            CallName::StepFunctions(operation) => operation.name(),
            CallName::Swf(operation) => operation.name(),
        }
    }

    /// The operation of AWS name `name` (a Step Functions one first: the two sets of names
    /// do not overlap), `None` for neither.
    pub fn from_name(name: &str) -> Option<CallName> {
        Operation::from_name(name)
            .map(CallName::StepFunctions)
            .or_else(|| SwfOperation::from_name(name).ok().map(CallName::Swf))
    }
}

/// Where an authenticated call is answered ([`Backend::place`]).
#[derive(Debug)]
pub enum Placement {
    /// Here, by the typed methods, with the body as it came.
    Here,
    /// Here, by the typed methods, with this body instead (a cluster node names an unnamed
    /// `StartExecution` before it routes it).
    HereWith(Vec<u8>),
    /// Already answered elsewhere (by the node that owns what the call touches).
    Answered(Result<Value, Error>),
}

/// Who is calling: the account (namespace) and region the request was signed for (always the
/// server's region, [`Backend::region`]: the router refuses a signature scoped to another).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The 12-digit account id; everything the call touches lives in it.
    pub account_id: String,
    /// The region of the signature's scope (`us-east-1`).
    pub region: String,
    /// The access key id the request was signed with.
    pub access_key_id: String,
}

/// A state machine as Describe* shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct StateMachineInfo {
    /// Its ARN.
    pub arn: String,
    /// Its name.
    pub name: String,
    /// The ASL definition text as created.
    pub definition: String,
    /// The role ARN given at creation.
    pub role_arn: String,
    /// When it was created, ms since the epoch.
    pub created_ms: u64,
    /// When its definition or role was last updated, ms since the epoch (`None`: never).
    pub updated_ms: Option<u64>,
    /// The revision's `revisionId` (`None` for the revision made at creation, as AWS shows it).
    pub revision_id: Option<String>,
    /// `variableReferences`: the workflow variables each state reads, by state name (empty:
    /// the field is left out, as AWS does).
    pub variable_references: std::collections::BTreeMap<String, Vec<String>>,
    /// `type`: STANDARD or EXPRESS.
    pub machine_type: MachineType,
    /// A version's `description` (`DescribeStateMachine` of a version ARN).
    pub description: Option<String>,
    /// DescribeStateMachineForExecution of a Distributed Map's child: the Map Run that
    /// started it (`mapRunArn`).
    pub map_run_arn: Option<String>,
    /// ... and its Map's `label`.
    pub label: Option<String>,
}

/// What `UpdateStateMachine` answers: the new revision.
#[derive(Debug, Clone, PartialEq)]
pub struct StateMachineUpdated {
    /// When it was updated, ms since the epoch.
    pub updated_ms: u64,
    /// The new revision's `revisionId`.
    pub revision_id: Option<String>,
    /// `stateMachineVersionArn`: the version `publish` made (or found).
    pub version_arn: Option<String>,
}

/// A state machine as ListStateMachines shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct StateMachineSummary {
    /// Its ARN.
    pub arn: String,
    /// Its name.
    pub name: String,
    /// When it was created, ms since the epoch.
    pub created_ms: u64,
    /// `type`: STANDARD or EXPRESS.
    pub machine_type: MachineType,
}

/// A created state machine.
#[derive(Debug, Clone, PartialEq)]
pub struct StateMachineCreated {
    /// Its ARN.
    pub arn: String,
    /// When it was created, ms since the epoch.
    pub created_ms: u64,
    /// `stateMachineVersionArn`: the version `publish` made.
    pub version_arn: Option<String>,
}

/// A started execution.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutionStarted {
    /// Its ARN.
    pub arn: String,
    /// When it started, ms since the epoch.
    pub start_ms: u64,
}

/// An execution as DescribeExecution shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutionInfo {
    /// Its ARN.
    pub arn: String,
    /// Its state machine's ARN.
    pub state_machine_arn: String,
    /// Its name.
    pub name: String,
    /// `RUNNING`, `SUCCEEDED`, `FAILED`, `TIMED_OUT`, `ABORTED`, ...
    pub status: &'static str,
    /// When it started, ms since the epoch.
    pub start_ms: u64,
    /// When it closed, ms since the epoch.
    pub stop_ms: Option<u64>,
    /// The input JSON text.
    pub input: Option<String>,
    /// The output JSON text (succeeded executions).
    pub output: Option<String>,
    /// The error name (failed, timed out or aborted executions).
    pub error: Option<String>,
    /// The cause.
    pub cause: Option<String>,
    /// How many times it was redriven.
    pub redrive_count: u32,
    /// When it was last redriven, ms since the epoch.
    pub redrive_ms: Option<u64>,
    /// `REDRIVABLE`, `NOT_REDRIVABLE`, ...; `None` when the backend does not know.
    pub redrive_status: Option<&'static str>,
    /// Why it cannot be redriven.
    pub redrive_status_reason: Option<String>,
    /// `stateMachineVersionArn`: the version it was started on.
    pub version_arn: Option<String>,
    /// `stateMachineAliasArn`: the alias it was started through.
    pub alias_arn: Option<String>,
    /// `mapRunArn`: the Map Run that started it, for a Distributed Map's child.
    pub map_run_arn: Option<String>,
}

/// An execution as ListExecutions shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutionSummary {
    /// Its ARN.
    pub arn: String,
    /// Its state machine's ARN.
    pub state_machine_arn: String,
    /// Its name.
    pub name: String,
    /// Its status, as AWS spells it.
    pub status: &'static str,
    /// When it started, ms since the epoch.
    pub start_ms: u64,
    /// When it closed, ms since the epoch.
    pub stop_ms: Option<u64>,
    /// How many times it was redriven.
    pub redrive_count: u32,
    /// When it was last redriven, ms since the epoch.
    pub redrive_ms: Option<u64>,
    /// `stateMachineVersionArn`: the version it was started on.
    pub version_arn: Option<String>,
    /// `stateMachineAliasArn`: the alias it was started through.
    pub alias_arn: Option<String>,
}

/// An activity as CreateActivity, DescribeActivity and ListActivities show it.
#[derive(Debug, Clone, PartialEq)]
pub struct ActivityInfo {
    /// Its ARN.
    pub arn: String,
    /// Its name.
    pub name: String,
    /// When it was created, ms since the epoch.
    pub created_ms: u64,
}

/// A task handed to an activity worker.
#[derive(Debug, Clone, PartialEq)]
pub struct ActivityTaskInfo {
    /// The token to answer it with (SendTaskSuccess / Failure / Heartbeat).
    pub task_token: String,
    /// Its input, JSON text.
    pub input: String,
}

/// A task handed to an SWF worker polling a task list.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskListTask {
    /// The token to answer it with.
    pub task_token: String,
    /// Its input, JSON text.
    pub input: String,
    /// The execution it belongs to.
    pub execution_arn: String,
    /// The activity ARN of its Task state.
    pub activity_arn: String,
    /// The id of its `ActivityScheduled` event.
    pub scheduled_event_id: u32,
    /// The id of the `ActivityStarted` event its claim wrote.
    pub started_event_id: u32,
}

/// How an SWF call runs on the engine, so the backend can keep the reactor free.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwfCallKind {
    /// It commits nothing (a describe, a list, a count). It may still wait: a run's lock is
    /// held across that run's commit (and its sync), and a closed run's history is read from
    /// the log, so the adapter runs it off the reactor as it does a commit.
    Read,
    /// It may commit (and so wait for the log's sync).
    Commit,
    /// It blocks its thread until a task comes or the poll's wait passes (up to 60 s).
    LongPoll,
}

/// One page of a listing.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    /// The items of this page.
    pub items: Vec<T>,
    /// The token of the next page, if there is one.
    pub next_token: Option<String>,
}

/// One metric sample the backend exposes on `/metrics`.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricSample {
    /// The metric name (`statelog_transitions_total`).
    pub name: String,
    /// `counter` or `gauge`.
    pub kind: &'static str,
    /// One-line help text.
    pub help: String,
    /// Label pairs.
    pub labels: Vec<(String, String)>,
    /// The value.
    pub value: f64,
}

/// What the router needs from the engine: one method per served operation, every one required
/// (only `metrics` and `shutdown` have neutral defaults), so a backend states what it does with
/// each; one it does not model answers a typed [`Error::NotSupported`] naming the operation.
pub trait Backend: Send + Sync + 'static {
    /// The region this backend serves: the one in every ARN it mints, and the only one a
    /// request's signature may be scoped to.
    fn region(&self) -> &str;

    /// Creates a state machine in the caller's account.
    fn create_state_machine(
        &self,
        caller: &Caller,
        input: CreateStateMachineInput,
    ) -> impl Future<Output = Result<StateMachineCreated, Error>> + Send;

    /// Describes a state machine of the caller's account.
    fn describe_state_machine(
        &self,
        caller: &Caller,
        arn: &str,
    ) -> impl Future<Output = Result<StateMachineInfo, Error>> + Send;

    /// Lists the caller's state machines; `max_results == 0` means the default page size.
    fn list_state_machines(
        &self,
        caller: &Caller,
        max_results: u32,
        next_token: Option<String>,
    ) -> impl Future<Output = Result<Page<StateMachineSummary>, Error>> + Send;

    /// Updates a state machine; returns the update time and the new revision's id.
    fn update_state_machine(
        &self,
        caller: &Caller,
        input: UpdateStateMachineInput,
    ) -> impl Future<Output = Result<StateMachineUpdated, Error>> + Send;

    /// Deletes a state machine.
    fn delete_state_machine(
        &self,
        caller: &Caller,
        arn: &str,
    ) -> impl Future<Output = Result<(), Error>> + Send;

    /// Starts (or, for the same name and input, finds) an execution.
    fn start_execution(
        &self,
        caller: &Caller,
        input: StartExecutionInput,
    ) -> impl Future<Output = Result<ExecutionStarted, Error>> + Send;

    /// Runs an execution of an EXPRESS machine and answers once it ends
    /// (`StartSyncExecution`).
    fn start_sync_execution(
        &self,
        caller: &Caller,
        input: StartSyncExecutionInput,
    ) -> impl Future<Output = Result<ExpressOutcome, Error>> + Send;

    /// Describes an execution.
    fn describe_execution(
        &self,
        caller: &Caller,
        arn: &str,
    ) -> impl Future<Output = Result<ExecutionInfo, Error>> + Send;

    /// The state machine an execution runs.
    fn describe_state_machine_for_execution(
        &self,
        caller: &Caller,
        execution_arn: &str,
    ) -> impl Future<Output = Result<StateMachineInfo, Error>> + Send;

    /// Lists executions of a state machine, newest first; `max_results == 0` means the default.
    fn list_executions(
        &self,
        caller: &Caller,
        input: ListExecutionsInput,
        max_results: u32,
    ) -> impl Future<Output = Result<Page<ExecutionSummary>, Error>> + Send;

    /// Stops an execution; returns the stop time (ms).
    fn stop_execution(
        &self,
        caller: &Caller,
        input: StopExecutionInput,
    ) -> impl Future<Output = Result<u64, Error>> + Send;

    /// One page of an execution's history, each event already in AWS JSON form.
    fn get_execution_history(
        &self,
        caller: &Caller,
        input: GetExecutionHistoryInput,
        max_results: u32,
    ) -> impl Future<Output = Result<Page<Value>, Error>> + Send;

    /// `CreateActivity`: registers an activity with `tags` (idempotent for an existing name).
    fn create_activity(
        &self,
        caller: &Caller,
        name: String,
        tags: Vec<TagInput>,
    ) -> impl Future<Output = Result<ActivityInfo, Error>> + Send;

    /// `TagResource`: adds tags to a state machine or activity.
    fn tag_resource(
        &self,
        caller: &Caller,
        resource_arn: String,
        tags: Vec<TagInput>,
    ) -> impl Future<Output = Result<(), Error>> + Send;

    /// `UntagResource`: removes the tags with these keys.
    fn untag_resource(
        &self,
        caller: &Caller,
        resource_arn: String,
        tag_keys: Vec<String>,
    ) -> impl Future<Output = Result<(), Error>> + Send;

    /// `ListTagsForResource`: the tags of a state machine or activity, by key.
    fn list_tags_for_resource(
        &self,
        caller: &Caller,
        resource_arn: String,
    ) -> impl Future<Output = Result<Vec<TagInput>, Error>> + Send;

    /// `DescribeActivity`.
    fn describe_activity(
        &self,
        caller: &Caller,
        arn: String,
    ) -> impl Future<Output = Result<ActivityInfo, Error>> + Send;

    /// `ListActivities`, by name; `max_results == 0` means the default page size.
    fn list_activities(
        &self,
        caller: &Caller,
        max_results: u32,
        next_token: Option<String>,
    ) -> impl Future<Output = Result<Page<ActivityInfo>, Error>> + Send;

    /// `DeleteActivity` (success for one already gone).
    fn delete_activity(
        &self,
        caller: &Caller,
        arn: String,
    ) -> impl Future<Output = Result<(), Error>> + Send;

    /// `GetActivityTask`: long-polls the activity (up to 60 s); `None` when no task came.
    fn get_activity_task(
        &self,
        caller: &Caller,
        arn: String,
        worker_name: Option<String>,
    ) -> impl Future<Output = Result<Option<ActivityTaskInfo>, Error>> + Send;

    /// `RedriveExecution`: restarts a failed, aborted or timed-out execution from its
    /// unsuccessful step; returns the redrive time (ms).
    fn redrive_execution(
        &self,
        caller: &Caller,
        input: RedriveExecutionInput,
    ) -> impl Future<Output = Result<u64, Error>> + Send;

    /// `SendTaskSuccess`: answers the task waiting on `task_token` with `output` (JSON text).
    fn send_task_success(
        &self,
        caller: &Caller,
        task_token: String,
        output: String,
    ) -> impl Future<Output = Result<(), Error>> + Send;

    /// `SendTaskFailure`: fails the task waiting on `task_token` with `error` and `cause`.
    fn send_task_failure(
        &self,
        caller: &Caller,
        task_token: String,
        error: String,
        cause: String,
    ) -> impl Future<Output = Result<(), Error>> + Send;

    /// `SendTaskHeartbeat`: resets the heartbeat clock of the task waiting on `task_token`.
    fn send_task_heartbeat(
        &self,
        caller: &Caller,
        task_token: String,
    ) -> impl Future<Output = Result<(), Error>> + Send;

    /// `PollForActivityTask` (SWF): long-polls the caller's task list `list` (up to 60 s);
    /// `identity` is the worker name; `None` when no task came.
    fn poll_task_list(
        &self,
        caller: &Caller,
        list: String,
        identity: Option<String>,
    ) -> impl Future<Output = Result<Option<TaskListTask>, Error>> + Send;

    /// `CountPendingActivityTasks` (SWF): how many tasks wait, unclaimed, in `list`.
    fn count_pending_tasks(
        &self,
        caller: &Caller,
        list: String,
    ) -> impl Future<Output = Result<usize, Error>> + Send;

    /// Runs one Amazon SWF call on the caller's engine (`call` reaches its SWF service through
    /// `Engine::swf`), where a call of `kind` may run; the engine's [`SwfError`] becomes the
    /// fault the server answers.
    fn swf<T, F>(
        &self,
        caller: &Caller,
        kind: SwfCallKind,
        call: F,
    ) -> impl Future<Output = Result<T, Error>> + Send
    where
        T: Send + 'static,
        F: FnOnce(&Engine) -> Result<T, SwfError> + Send + 'static;

    /// Runs one call on the engine that holds the caller's state machines (in a cluster, the
    /// catalog partition's): state machine versions and aliases, and the Map Run operations
    /// (which a cluster refuses before this, `route::MAP_RUNS_NOT_ROUTED`); the engine's error
    /// becomes the server's.
    fn catalog_engine<T, F>(
        &self,
        caller: &Caller,
        call: F,
    ) -> impl Future<Output = Result<T, Error>> + Send
    where
        T: Send + 'static,
        F: FnOnce(&Engine) -> Result<T, crate::engine::Error> + Send + 'static;

    /// Whether the caller's account has an SWF domain named `name` (registered or deprecated):
    /// with one, the SWF activity operations of that domain are SWF's, not the Step Functions
    /// mapping's.
    fn swf_domain_registered(
        &self,
        caller: &Caller,
        name: String,
    ) -> impl Future<Output = Result<bool, Error>> + Send;

    /// Where the call with this body is answered, decided before it is decoded: a single
    /// node answers everything here; a cluster node forwards a call whose partition another
    /// node owns and answers it with that node's answer.
    fn place(
        &self,
        caller: &Caller,
        call: CallName,
        body: &[u8],
    ) -> impl Future<Output = Placement> + Send {
        let _ = (caller, call, body);
        async { Placement::Here }
    }

    /// Counters the engine exposes (transitions, WAL commits, executions by status).
    fn metrics(&self) -> Vec<MetricSample> {
        Vec::new()
    }

    /// `Some(reason)` when an engine's log is poisoned (no write is accepted until a restart);
    /// `/health` answers 503 with the reason. The reason names no path, account or secret.
    fn log_poisoned(&self) -> Option<String> {
        None
    }

    /// Called once after the server stopped accepting and in-flight requests finished: finish
    /// commits and close the log.
    fn shutdown(&self) -> impl Future<Output = ()> + Send {
        async {}
    }
}
