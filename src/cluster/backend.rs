//! backend: [`ClusterBackend`], the server's [`Backend`] on one node of a cluster.
//!
//! Every call is placed before it is decoded ([`Backend::place`], with [`route`]): a call of
//! one partition (an execution, a task token) or of the catalog (partition 0: state machines,
//! activities, tags, and every Amazon SWF call) is answered here when this node owns that
//! partition, else forwarded to its owner over NATS ([`forward`]) and answered with the
//! owner's answer. An unnamed `StartExecution` is named here first, so a retry through any
//! node starts the same execution. A call that spans partitions is answered here by the typed
//! methods, which ask every partition:
//!
//! - `ListExecutions`: each partition's newest-first page, merged by start time
//!   ([`super::listing`]).
//! - `GetActivityTask` (and SWF's `PollForActivityTask` over a Step Functions task list): a
//!   round of claims that take only what is queued, on every node that owns partitions
//!   (`statelog.ClaimTask`); when none has a task, a peek on each of them, which waits until
//!   one of its partitions queues a task and claims nothing (`statelog.PeekTasks`, cancelled
//!   with `statelog.CancelPeek` when another answered first); then claims again, until the
//!   poll's 60 s pass. No task is claimed that is not handed out: only a claim claims, and
//!   one claim is sent at a time.
//! - `CountPendingActivityTasks` over a Step Functions list: the sum over the nodes.
//!
//! The catalog lives in partition 0's engine. A partition that starts an execution first
//! reads the machine from the catalog and, when its own copy is missing or differs, creates or
//! updates it (so its executions keep the revision they started with, as on one node).
//!
//! Invariants: a call is answered by the engine of the partition it touches, on the node that
//! holds that partition's lease at the epoch its log was opened with (a stale owner's writes
//! are refused by the log's fence, whatever this layer believes, and it answers no read once
//! its lease's renew deadline passed on its own clock); a partition this node does
//! not own or has not opened is [`Error::PartitionUnavailable`] (503, retried by AWS clients).
//! Must not: decide ownership (the lease driver does) or answer for a partition from a stale
//! engine (the host hands out only open engines).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use statelog_cluster::node::Node;
use statelog_cluster::partition::{partition_of_execution, PartitionIndex};
use tokio::sync::watch;

use super::forward::{forward_within, ForwardError, ForwardedAnswer, ForwardedCall, Responder};
use super::host::{HostError, PartitionHost};
use super::listing::{merge_pages, ListCursor, PartCursor, WirePage, WireSummary};
use super::route::{
    self, execution_partition, token_partition, Target, CATALOG_PARTITION,
    SYNC_EXECUTION_NOT_ROUTED,
};
use crate::engine::arn::{Arn, ResourceType};
use crate::engine::limits::LIST_PAGE_EXECUTIONS_DEFAULT;
use crate::engine::{Engine, EngineOptions, ExpressOutcome, MachineType};
use crate::limits::ACTIVITY_POLL_MS_MAX;
use crate::server::backend::{
    ActivityInfo, ActivityTaskInfo, Backend, CallName, Caller, ExecutionInfo, ExecutionStarted,
    ExecutionSummary, MetricSample, Page, Placement, StateMachineCreated, StateMachineInfo,
    StateMachineSummary, StateMachineUpdated, SwfCallKind, TaskListTask,
};
use crate::server::engine_backend::{engine_error, EngineBackend};
use crate::server::error::Error;
use crate::server::limits::{
    CLUSTER_PEEK_ROUND_MS, FORWARD_CALL_TIMEOUT_MS, FORWARD_TIMEOUT_MS, HOST_REOPEN_CHECK_MS,
    PAGE_RESULTS_MAX,
};
use crate::server::protocol::{
    CreateStateMachineInput, GetExecutionHistoryInput, ListExecutionsInput, Operation,
    RedriveExecutionInput, StartExecutionInput, StartSyncExecutionInput, StopExecutionInput,
    TagInput, UpdateStateMachineInput,
};
use crate::server::swf::SwfOperation;

/// The internal operation that claims a queued task on one node (wait 0).
const CLAIM_TASK: &str = "statelog.ClaimTask";
/// The internal operation that waits for a task on one node without claiming it.
const PEEK_TASKS: &str = "statelog.PeekTasks";
/// The internal operation that ends a peek another node no longer needs.
const CANCEL_PEEK: &str = "statelog.CancelPeek";
/// The internal operation that counts a list's queued tasks on one node.
const COUNT_PENDING: &str = "statelog.CountPending";
/// The internal operation that lists one partition's executions.
const LIST_EXECUTIONS_PART: &str = "statelog.ListExecutionsPart";

/// What a node needs to serve as a cluster member.
pub struct ClusterBackendOptions {
    /// The region of every ARN.
    pub region: String,
    /// This node's name.
    pub node: String,
    /// The cluster's partition count.
    pub partitions: u32,
    /// The node's data directory (the partition engines keep nothing there yet).
    pub data_dir: PathBuf,
    /// The options each partition's engine adapter is made with.
    pub engine_options: EngineOptions,
}

/// The server's backend on one cluster node. Cheap to clone.
#[derive(Clone)]
pub struct ClusterBackend {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ClusterBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterBackend")
            .field("node", &self.inner.options.node)
            .field("partitions", &self.inner.options.partitions)
            .finish_non_exhaustive()
    }
}

struct Inner {
    options: ClusterBackendOptions,
    host: PartitionHost,
    client: async_nats::Client,
    owners: watch::Receiver<BTreeMap<PartitionIndex, String>>,
    held_until: watch::Receiver<BTreeMap<PartitionIndex, tokio::time::Instant>>,
    /// The engine adapter of each open partition, with the engine generation it was made for
    /// (a partition opened again, even at the same epoch, gets a new one).
    adapters: Mutex<BTreeMap<PartitionIndex, (u64, Arc<EngineBackend>)>>,
    /// One lock per partition, held while a machine's copy is created or updated there.
    imports: Mutex<BTreeMap<PartitionIndex, Arc<tokio::sync::Mutex<()>>>>,
    /// Peeks this node runs for other nodes, by id, so they can be cancelled.
    peeks: Mutex<HashMap<String, tokio::task::AbortHandle>>,
    /// Counter of this node's peek ids.
    next_peek: AtomicU64,
    /// The lease driver and the forwarded-call responder, stopped at shutdown.
    membership: Mutex<Option<Membership>>,
}

struct Membership {
    node: Option<Node>,
    responder: Option<Responder>,
    reopener: tokio::task::JoinHandle<()>,
    /// The runtime the lease driver runs on (its own: see `serve::start_node`).
    lease_runtime: Option<tokio::runtime::Runtime>,
}

impl Drop for Membership {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which an async context refuses; this never blocks.
        if let Some(runtime) = self.lease_runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// One task a claim handed out, as it crosses nodes.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct WireTask {
    task_token: String,
    input: String,
    execution_arn: String,
    activity_arn: String,
    scheduled_event_id: u32,
    started_event_id: u32,
}

/// A claim or peek request.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct TaskRequest {
    lists: Vec<String>,
    #[serde(default)]
    worker: Option<String>,
    #[serde(default)]
    wait_ms: u64,
    #[serde(default)]
    peek_id: Option<String>,
}

/// A random UUID (version 4), the name AWS gives an unnamed execution.
fn random_uuid() -> Result<String, Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|error| Error::Internal {
        detail: format!("the OS random source failed: {error}"),
    })?;
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    Ok(crate::server::router::hyphenated(&bytes))
}

fn route_error(error: route::RouteError) -> Error {
    match error {
        route::RouteError::Input(error) => error,
        other => Error::Internal {
            detail: format!("routing failed: {other}"),
        },
    }
}

fn host_error(error: HostError) -> Error {
    let (partition, reason) = match &error {
        HostError::NotOwner { partition } => (*partition, "this node does not own it".to_owned()),
        HostError::Opening { partition, .. } => {
            (*partition, "its log is being replayed here".to_owned())
        }
        HostError::Stopped { partition, .. } => (
            *partition,
            "its log stopped here and is being opened again".to_owned(),
        ),
        HostError::OpenFailed { partition, .. } => {
            tracing::error!(%error, "a partition did not open");
            (*partition, "it did not open on this node".to_owned())
        }
    };
    Error::PartitionUnavailable {
        partition: partition.0,
        reason,
    }
}

/// Whether a call may wait for up to a long poll's 60 s at its owner.
fn is_long_poll(call: CallName) -> bool {
    matches!(
        call,
        CallName::StepFunctions(Operation::GetActivityTask)
            | CallName::Swf(SwfOperation::PollForDecisionTask)
            | CallName::Swf(SwfOperation::PollForActivityTask)
    )
}

impl ClusterBackend {
    /// A backend over `host` (the engines of the partitions this node owns), forwarding over
    /// `client`, with `owners` the lease holders the node sees and `held_until` when each of
    /// its own leases' renew deadline passes (`Node::held_until_watch`).
    pub fn new(
        options: ClusterBackendOptions,
        host: PartitionHost,
        client: async_nats::Client,
        owners: watch::Receiver<BTreeMap<PartitionIndex, String>>,
        held_until: watch::Receiver<BTreeMap<PartitionIndex, tokio::time::Instant>>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                options,
                host,
                client,
                owners,
                held_until,
                adapters: Mutex::new(BTreeMap::new()),
                imports: Mutex::new(BTreeMap::new()),
                peeks: Mutex::new(HashMap::new()),
                next_peek: AtomicU64::new(0),
                membership: Mutex::new(None),
            }),
        }
    }

    /// Hands the backend the node's lease driver and responder, which [`Backend::shutdown`]
    /// stops (the leases released, so the others take over at once), and starts, on the
    /// current runtime, the task that reopens a partition whose log stopped
    /// ([`PartitionHost::reopen_stopped`], every [`HOST_REOPEN_CHECK_MS`]) and lets go of the
    /// adapters of engines the host no longer serves.
    pub fn attach(&self, node: Node, responder: Responder, lease_runtime: tokio::runtime::Runtime) {
        let inner = Arc::downgrade(&self.inner);
        let reopener = tokio::spawn(async move {
            let mut every =
                tokio::time::interval(std::time::Duration::from_millis(HOST_REOPEN_CHECK_MS));
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                every.tick().await;
                let Some(inner) = inner.upgrade() else { return };
                inner.host.reopen_stopped();
                prune_adapters(&inner);
            }
        });
        *self.inner.membership.lock() = Some(Membership {
            node: Some(node),
            responder: Some(responder),
            reopener,
            lease_runtime: Some(lease_runtime),
        });
    }

    /// How many engine adapters this backend keeps (one per partition served since the last
    /// pruning).
    pub fn adapters_count(&self) -> usize {
        self.inner.adapters.lock().len()
    }

    /// The host of this node's partitions.
    pub fn host(&self) -> &PartitionHost {
        &self.inner.host
    }

    fn partitions(&self) -> u32 {
        self.inner.options.partitions
    }

    /// Whether this node's lease of `partition` is within its renew deadline now, on this
    /// node's monotonic clock (false at once after a pause past the lease, before the lease
    /// driver has run again).
    fn lease_fresh(&self, partition: PartitionIndex) -> bool {
        self.inner
            .held_until
            .borrow()
            .get(&partition)
            .is_some_and(|until| tokio::time::Instant::now() < *until)
    }

    /// The engine adapter of `partition`, while this node holds its lease and has opened it.
    fn local(&self, partition: PartitionIndex) -> Result<Arc<EngineBackend>, Error> {
        if !self.lease_fresh(partition) {
            return Err(host_error(HostError::NotOwner { partition }));
        }
        let (engine, generation) = self.inner.host.engine_at(partition).map_err(host_error)?;
        let mut adapters = self.inner.adapters.lock();
        if let Some((made_for, adapter)) = adapters.get(&partition) {
            if *made_for == generation {
                return Ok(adapter.clone());
            }
        }
        let adapter = Arc::new(EngineBackend::with_open_engine_over_replicated_log(
            &self.inner.options.data_dir,
            &self.inner.options.engine_options.account,
            engine,
            self.inner.options.engine_options.clone(),
        ));
        adapters.insert(partition, (generation, adapter.clone()));
        Ok(adapter)
    }

    fn owns(&self, partition: PartitionIndex) -> bool {
        self.lease_fresh(partition) && self.inner.host.engine(partition).is_ok()
    }

    fn resolver(&self) -> impl Fn(PartitionIndex) -> Option<String> + Send + Sync + 'static {
        let owners = self.inner.owners.clone();
        move |partition| owners.borrow().get(&partition).cloned()
    }

    /// The nodes that own at least one partition now, this one first when it does.
    fn owning_nodes(&self) -> Vec<String> {
        let me = &self.inner.options.node;
        let mut nodes: Vec<String> = self.inner.owners.borrow().values().cloned().collect();
        nodes.sort();
        nodes.dedup();
        if let Some(at) = nodes.iter().position(|node| node == me) {
            let mine = nodes.remove(at);
            nodes.insert(0, mine);
        }
        nodes
    }

    /// Sends a call to the owner of `partition` and answers with its answer.
    async fn forward(
        &self,
        partition: PartitionIndex,
        caller: &Caller,
        operation: &str,
        body: String,
        timeout_ms: u64,
    ) -> Result<Value, Error> {
        let call = ForwardedCall {
            partition: Some(partition.0),
            operation: operation.to_owned(),
            input: body,
            account_id: caller.account_id.clone(),
            region: caller.region.clone(),
            access_key_id: caller.access_key_id.clone(),
        };
        let resolve = self.resolver();
        let answer = forward_within(&self.inner.client, &resolve, partition, &call, timeout_ms)
            .await
            .map_err(|error| forward_error(partition, error))?;
        answer_value(partition, answer)
    }

    /// Sends an internal call to node `node` (no partition: the node answers for all it owns).
    async fn ask_node(
        &self,
        node: &str,
        caller: &Caller,
        operation: &str,
        body: String,
        timeout_ms: u64,
    ) -> Result<Value, Error> {
        let call = ForwardedCall {
            partition: None,
            operation: operation.to_owned(),
            input: body,
            account_id: caller.account_id.clone(),
            region: caller.region.clone(),
            access_key_id: caller.access_key_id.clone(),
        };
        let name = node.to_owned();
        let resolve = move |_: PartitionIndex| Some(name.clone());
        let answer = forward_within(
            &self.inner.client,
            &resolve,
            PartitionIndex(0),
            &call,
            timeout_ms,
        )
        .await
        .map_err(|error| {
            forward_failure(error).unwrap_or_else(|reason| Error::NodeUnavailable {
                node: node.to_owned(),
                reason,
            })
        })?;
        match answer {
            // A node-wide call names no partition: the node answers it whatever it owns.
            ForwardedAnswer::NotOwner { .. } => Err(Error::NodeUnavailable {
                node: node.to_owned(),
                reason: "it answered for no partition".to_owned(),
            }),
            answer => answer_value(PartitionIndex(0), answer),
        }
    }

    /// The catalog's description of the machine `arn`.
    async fn catalog_machine(&self, caller: &Caller, arn: &str) -> Result<StateMachineInfo, Error> {
        if self.owns(CATALOG_PARTITION) {
            return self
                .local(CATALOG_PARTITION)?
                .describe_state_machine(caller, arn)
                .await;
        }
        let body = json!({ "stateMachineArn": arn }).to_string();
        let answer = self
            .forward(
                CATALOG_PARTITION,
                caller,
                Operation::DescribeStateMachine.name(),
                body,
                FORWARD_CALL_TIMEOUT_MS,
            )
            .await?;
        let text = |key: &str| {
            answer
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| Error::Internal {
                    detail: format!("the catalog's DescribeStateMachine answer has no {key}"),
                })
        };
        Ok(StateMachineInfo {
            arn: text("stateMachineArn")?,
            name: text("name")?,
            definition: text("definition")?,
            role_arn: text("roleArn")?,
            created_ms: 0,
            updated_ms: None,
            revision_id: answer
                .get("revisionId")
                .and_then(Value::as_str)
                .map(str::to_owned),
            variable_references: BTreeMap::new(),
            // The type is imported with the machine: a partition's copy runs its executions
            // as the catalog's machine says (an EXPRESS one in memory).
            machine_type: MachineType::from_aws_name(&text("type")?).ok_or_else(|| {
                Error::Internal {
                    detail: "the catalog's DescribeStateMachine answer has an unknown type"
                        .to_owned(),
                }
            })?,
            description: None,
            // A cluster runs no Distributed Map (`route::MAP_RUNS_NOT_ROUTED`).
            map_run_arn: None,
            label: None,
        })
    }

    /// Makes `partition`'s copy of the machine `arn` the catalog's: created when missing,
    /// updated when its definition or role differs.
    async fn import_machine(
        &self,
        caller: &Caller,
        partition: PartitionIndex,
        arn: &str,
    ) -> Result<(), Error> {
        let catalog = self.catalog_machine(caller, arn).await?;
        if partition == CATALOG_PARTITION {
            return Ok(());
        }
        let local = self.local(partition)?;
        let same = |copy: &StateMachineInfo| {
            copy.definition == catalog.definition
                && copy.role_arn == catalog.role_arn
                && copy.machine_type == catalog.machine_type
        };
        if matches!(local.describe_state_machine(caller, arn).await, Ok(copy) if same(&copy)) {
            return Ok(());
        }
        // One import at a time per partition: two starts that both find the copy missing
        // would otherwise both create it, and the second be refused as already existing.
        let lock = self
            .inner
            .imports
            .lock()
            .entry(partition)
            .or_default()
            .clone();
        let _importing = lock.lock().await;
        match local.describe_state_machine(caller, arn).await {
            Ok(copy) if same(&copy) => Ok(()),
            Ok(_) => local
                .update_state_machine(
                    caller,
                    UpdateStateMachineInput {
                        state_machine_arn: arn.to_owned(),
                        definition: Some(catalog.definition),
                        role_arn: Some(catalog.role_arn),
                        logging_configuration: None,
                        tracing_configuration: None,
                        publish: None,
                        version_description: None,
                    },
                )
                .await
                .map(|_| ()),
            Err(Error::Engine {
                aws_name: "StateMachineDoesNotExist",
                ..
            }) => local
                .create_state_machine(
                    caller,
                    CreateStateMachineInput {
                        name: catalog.name,
                        definition: catalog.definition,
                        role_arn: catalog.role_arn,
                        machine_type: Some(catalog.machine_type.aws_name().to_owned()),
                        logging_configuration: None,
                        tracing_configuration: None,
                        tags: None,
                        publish: None,
                        version_description: None,
                    },
                )
                .await
                .map(|_| ()),
            Err(other) => Err(other),
        }
    }

    fn execution_partition(&self, arn: &str) -> Result<PartitionIndex, Error> {
        execution_partition(arn, self.partitions()).map_err(route_error)
    }

    fn token_partition(&self, token: &str) -> Result<PartitionIndex, Error> {
        token_partition(token, self.partitions()).map_err(route_error)
    }

    /// Claims a queued task of `lists` on one of this node's partitions, trying them from a
    /// rotating start; `None` when none has one.
    async fn claim_here(
        &self,
        namespace: &str,
        lists: &[String],
        worker: Option<&str>,
    ) -> Result<Option<WireTask>, Error> {
        let owned: Vec<PartitionIndex> = self
            .inner
            .host
            .owned()
            .into_keys()
            .filter(|&partition| self.lease_fresh(partition))
            .collect();
        if owned.is_empty() {
            return Ok(None);
        }
        let start = self.inner.next_peek.fetch_add(1, Ordering::Relaxed) as usize % owned.len();
        for index in 0..owned.len() {
            let partition = owned[(start + index) % owned.len()];
            let Ok(engine) = self.inner.host.engine(partition) else {
                continue;
            };
            let task = engine
                .poll_task_lists(namespace, lists, worker, 0)
                .await
                .map_err(engine_error)?;
            if let Some(task) = task {
                return Ok(Some(WireTask {
                    task_token: task.task_token,
                    input: task.input,
                    execution_arn: task.execution_arn,
                    activity_arn: task.activity_arn,
                    scheduled_event_id: task.scheduled_event_id,
                    started_event_id: task.started_event_id,
                }));
            }
        }
        Ok(None)
    }

    /// Waits until one of this node's partitions queues a task of `lists`, at most `wait_ms`.
    async fn peek_here(&self, namespace: &str, lists: &[String], wait_ms: u64) -> bool {
        let engines: Vec<Engine> = self
            .inner
            .host
            .owned()
            .into_keys()
            .filter_map(|partition| self.inner.host.engine(partition).ok())
            .collect();
        if engines.is_empty() {
            tokio::time::sleep(std::time::Duration::from_millis(wait_ms)).await;
            return false;
        }
        let waits = engines.iter().map(|engine| {
            Box::pin(async move {
                match engine.await_task_lists(namespace, lists, wait_ms).await {
                    Ok(true) => Ok(()),
                    _ => Err(()),
                }
            })
        });
        let found = futures_util::future::select_ok(waits).await.is_ok();
        found
    }

    /// One node's claim, here or over NATS.
    async fn claim_on(
        &self,
        node: &str,
        caller: &Caller,
        lists: &[String],
        worker: Option<&str>,
    ) -> Result<Option<WireTask>, Error> {
        if node == self.inner.options.node {
            return self.claim_here(&caller.account_id, lists, worker).await;
        }
        let request = TaskRequest {
            lists: lists.to_vec(),
            worker: worker.map(str::to_owned),
            wait_ms: 0,
            peek_id: None,
        };
        let body = serde_json::to_string(&request).unwrap_or_default();
        let answer = self
            .ask_node(node, caller, CLAIM_TASK, body, FORWARD_CALL_TIMEOUT_MS)
            .await?;
        if answer.is_null() {
            return Ok(None);
        }
        serde_json::from_value(answer)
            .map(Some)
            .map_err(|error| Error::Internal {
                detail: format!("node {node}: a claimed task does not read: {error}"),
            })
    }

    /// The spanning long poll: claims, then peeks, until a task is handed out or 60 s pass.
    async fn poll_everywhere(
        &self,
        caller: &Caller,
        lists: Vec<String>,
        worker: Option<String>,
    ) -> Result<Option<WireTask>, Error> {
        let deadline =
            tokio::time::Instant::now() + std::time::Duration::from_millis(ACTIVITY_POLL_MS_MAX);
        loop {
            let nodes = self.owning_nodes();
            for node in &nodes {
                match self.claim_on(node, caller, &lists, worker.as_deref()).await {
                    Ok(Some(task)) => return Ok(Some(task)),
                    Ok(None) => {}
                    // A node that cannot answer now holds nothing this poll can take; the
                    // next round asks the owners again.
                    Err(Error::PartitionUnavailable { .. } | Error::NodeUnavailable { .. }) => {}
                    Err(other) => return Err(other),
                }
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            let left_ms = u64::try_from((deadline - now).as_millis()).unwrap_or(u64::MAX);
            let wait_ms = left_ms.min(CLUSTER_PEEK_ROUND_MS);
            self.peek_nodes(caller, &nodes, &lists, wait_ms).await;
        }
    }

    /// Waits until any of `nodes` says a task is queued, or `wait_ms` pass; cancels the
    /// other nodes' peeks.
    async fn peek_nodes(&self, caller: &Caller, nodes: &[String], lists: &[String], wait_ms: u64) {
        let me = self.inner.options.node.clone();
        let id = format!(
            "{me}-{}",
            self.inner.next_peek.fetch_add(1, Ordering::Relaxed)
        );
        let mut waits = Vec::new();
        for node in nodes {
            let node = node.clone();
            let id = id.clone();
            let this = self.clone();
            let caller = caller.clone();
            let lists = lists.to_vec();
            waits.push(Box::pin(async move {
                let found = if node == this.inner.options.node {
                    this.peek_here(&caller.account_id, &lists, wait_ms).await
                } else {
                    let request = TaskRequest {
                        lists,
                        worker: None,
                        wait_ms,
                        peek_id: Some(id),
                    };
                    let body = serde_json::to_string(&request).unwrap_or_default();
                    matches!(
                        this.ask_node(
                            &node,
                            &caller,
                            PEEK_TASKS,
                            body,
                            wait_ms + FORWARD_CALL_TIMEOUT_MS
                        )
                        .await,
                        Ok(Value::Bool(true))
                    )
                };
                if found {
                    Ok(())
                } else {
                    Err(())
                }
            }));
        }
        if waits.is_empty() {
            tokio::time::sleep(std::time::Duration::from_millis(wait_ms)).await;
            return;
        }
        // The first `true` ends the wait; a peek that ended `false` early (an unreachable
        // node) does not, so wait on the others up to the round's end.
        let round = tokio::time::sleep(std::time::Duration::from_millis(wait_ms));
        tokio::select! {
            _ = futures_util::future::select_ok(waits) => {}
            () = round => {}
        }
        for node in nodes.iter().filter(|node| **node != me) {
            let this = self.clone();
            let caller = caller.clone();
            let node = node.clone();
            let body = json!({ "peekId": id }).to_string();
            tokio::spawn(async move {
                // A peek that already ended has nothing to cancel.
                let _ = this
                    .ask_node(&node, &caller, CANCEL_PEEK, body, FORWARD_CALL_TIMEOUT_MS)
                    .await;
            });
        }
    }

    /// One partition's page of `ListExecutions`, here or at its owner.
    async fn list_part(
        &self,
        caller: &Caller,
        partition: PartitionIndex,
        input: &ListExecutionsInput,
        token: Option<String>,
        max_results: u32,
    ) -> Result<WirePage, Error> {
        let mut body = list_input_json(input);
        body["nextToken"] = token.map_or(Value::Null, Value::String);
        body["maxResults"] = json!(max_results);
        if self.owns(partition) {
            return self
                .list_part_here(caller, partition, &body.to_string())
                .await;
        }
        let answer = self
            .forward(
                partition,
                caller,
                LIST_EXECUTIONS_PART,
                body.to_string(),
                FORWARD_CALL_TIMEOUT_MS,
            )
            .await?;
        serde_json::from_value(answer).map_err(|error| Error::Internal {
            detail: format!(
                "partition p{}: a listing does not read: {error}",
                partition.0
            ),
        })
    }

    async fn list_part_here(
        &self,
        caller: &Caller,
        partition: PartitionIndex,
        body: &str,
    ) -> Result<WirePage, Error> {
        let input: ListExecutionsInput =
            crate::server::protocol::decode(Operation::ListExecutions, body.as_bytes())?;
        let max_results = input.validate()?;
        let local = self.local(partition)?;
        match local.list_executions(caller, input, max_results).await {
            Ok(page) => Ok(WirePage {
                items: page
                    .items
                    .into_iter()
                    .map(|e| WireSummary {
                        arn: e.arn,
                        state_machine_arn: e.state_machine_arn,
                        name: e.name,
                        status: e.status.to_owned(),
                        start_ms: e.start_ms,
                        stop_ms: e.stop_ms,
                        redrive_count: e.redrive_count,
                        redrive_ms: e.redrive_ms,
                    })
                    .collect(),
                next_token: page.next_token,
            }),
            // A partition that never started an execution of the machine has no copy of it:
            // nothing of it is there (the catalog was asked first whether it exists).
            Err(Error::Engine {
                aws_name: "StateMachineDoesNotExist",
                ..
            }) => Ok(WirePage {
                items: Vec::new(),
                next_token: None,
            }),
            Err(other) => Err(other),
        }
    }

    /// Answers an internal call another node sent this one.
    pub async fn answer_internal(&self, call: &ForwardedCall) -> Result<Value, Error> {
        let caller = Caller {
            account_id: call.account_id.clone(),
            region: call.region.clone(),
            access_key_id: call.access_key_id.clone(),
        };
        let request = || -> Result<TaskRequest, Error> {
            serde_json::from_str(&call.input).map_err(|error| Error::Internal {
                detail: format!("{}: the request does not read: {error}", call.operation),
            })
        };
        match call.operation.as_str() {
            CLAIM_TASK => {
                let request = request()?;
                let task = self
                    .claim_here(
                        &caller.account_id,
                        &request.lists,
                        request.worker.as_deref(),
                    )
                    .await?;
                Ok(serde_json::to_value(task).unwrap_or(Value::Null))
            }
            PEEK_TASKS => {
                let request = request()?;
                let wait_ms = request.wait_ms.min(ACTIVITY_POLL_MS_MAX);
                let this = self.clone();
                let namespace = caller.account_id.clone();
                let lists = request.lists.clone();
                let peek =
                    tokio::spawn(async move { this.peek_here(&namespace, &lists, wait_ms).await });
                let id = request.peek_id.unwrap_or_default();
                self.inner
                    .peeks
                    .lock()
                    .insert(id.clone(), peek.abort_handle());
                let found = peek.await.unwrap_or(false);
                self.inner.peeks.lock().remove(&id);
                Ok(Value::Bool(found))
            }
            CANCEL_PEEK => {
                let id = serde_json::from_str::<Value>(&call.input)
                    .ok()
                    .and_then(|v| v.get("peekId").and_then(Value::as_str).map(str::to_owned))
                    .unwrap_or_default();
                if let Some(peek) = self.inner.peeks.lock().remove(&id) {
                    peek.abort();
                }
                Ok(Value::Null)
            }
            COUNT_PENDING => {
                let request = request()?;
                let mut count = 0usize;
                for partition in self.inner.host.owned().into_keys() {
                    if !self.lease_fresh(partition) {
                        continue;
                    }
                    if let Ok(engine) = self.inner.host.engine(partition) {
                        for list in &request.lists {
                            count += engine.task_list_pending_count(&caller.account_id, list);
                        }
                    }
                }
                Ok(json!(count))
            }
            LIST_EXECUTIONS_PART => {
                let partition = PartitionIndex(call.partition.unwrap_or(0));
                let page = self.list_part_here(&caller, partition, &call.input).await?;
                Ok(serde_json::to_value(page).unwrap_or(Value::Null))
            }
            other => Err(Error::Internal {
                detail: format!("no internal operation {other}"),
            }),
        }
    }

    /// Whether `operation` is one of the internal ones nodes send each other.
    pub fn is_internal(operation: &str) -> bool {
        matches!(
            operation,
            CLAIM_TASK | PEEK_TASKS | CANCEL_PEEK | COUNT_PENDING | LIST_EXECUTIONS_PART
        )
    }

    /// Whether this node owns `partition` now (a forwarded call for another is `NotOwner`).
    pub fn answers_for(&self, partition: PartitionIndex) -> bool {
        self.owns(partition)
    }
}

/// Drops the adapter of every partition whose engine the host no longer serves, or serves in
/// a later generation: the adapter holds its engine (its threads and memory) alive.
fn prune_adapters(inner: &Inner) {
    inner.adapters.lock().retain(|&partition, (generation, _)| {
        inner
            .host
            .engine_at(partition)
            .is_ok_and(|(_, current)| current == *generation)
    });
}

fn list_input_json(input: &ListExecutionsInput) -> Value {
    json!({
        "stateMachineArn": input.state_machine_arn,
        "statusFilter": input.status_filter,
        "mapRunArn": input.map_run_arn,
        "redriveFilter": input.redrive_filter,
    })
}

fn forward_error(partition: PartitionIndex, error: ForwardError) -> Error {
    forward_failure(error).unwrap_or_else(|reason| Error::PartitionUnavailable {
        partition: partition.0,
        reason,
    })
}

/// The error a failed forwarding is when it is the call's own (too large, a corrupt answer);
/// otherwise `Err(reason)`: the receiver could not answer now (503, retried).
fn forward_failure(error: ForwardError) -> Result<Error, String> {
    match error {
        ForwardError::TooLarge { limit_bytes, .. } => Ok(Error::BodyTooLarge { limit_bytes }),
        ForwardError::Corrupt { .. } => Ok(Error::Internal {
            detail: error.to_string(),
        }),
        other => Err(other.to_string()),
    }
}

fn answer_value(partition: PartitionIndex, answer: ForwardedAnswer) -> Result<Value, Error> {
    match answer {
        ForwardedAnswer::Output { output } => {
            serde_json::from_str(&output).map_err(|error| Error::Internal {
                detail: format!("a forwarded answer does not read: {error}"),
            })
        }
        ForwardedAnswer::Error {
            aws_name,
            message,
            status,
            resource_name,
        } => {
            let bare = aws_name.rsplit('#').next().unwrap_or(&aws_name);
            Err(Error::Forwarded {
                aws_name: crate::server::router::intern_outcome(bare),
                wire_type: aws_name.clone(),
                message,
                status,
                resource_name,
            })
        }
        ForwardedAnswer::NotOwner { partition: p } => Err(Error::PartitionUnavailable {
            partition: p,
            reason: format!(
                "its owner moved while the call to partition p{} was sent",
                partition.0
            ),
        }),
    }
}

impl Backend for ClusterBackend {
    fn region(&self) -> &str {
        &self.inner.options.region
    }

    async fn place(&self, caller: &Caller, call: CallName, body: &[u8]) -> Placement {
        // A body that is not JSON text is refused here by the decoder, as on one node (and a
        // forwarded call carries its body as JSON).
        let Ok(text) = std::str::from_utf8(body) else {
            return Placement::Here;
        };
        if serde_json::from_str::<&serde_json::value::RawValue>(text).is_err() {
            return Placement::Here;
        }
        let mut named = None;
        let target = match call {
            CallName::StepFunctions(
                Operation::ValidateStateMachineDefinition | Operation::TestState,
            ) => return Placement::Here,
            CallName::StepFunctions(Operation::StartExecution) => {
                let with_name = match route::name_unnamed_start(body, random_uuid) {
                    Ok(with_name) => with_name,
                    Err(error) => return Placement::Answered(Err(error)),
                };
                let target = route::route(Operation::StartExecution, &with_name, self.partitions());
                if with_name != body {
                    named = Some(with_name);
                }
                target
            }
            CallName::StepFunctions(operation) => route::route(operation, body, self.partitions()),
            CallName::Swf(operation) => {
                // Every SWF run lives in the catalog's partition; a Step Functions task
                // answered through SWF's worker API goes where its execution is.
                match route::route_swf(operation, &caller.account_id, body, self.partitions()) {
                    Ok(Target::Partition(partition))
                        if matches!(
                            operation,
                            SwfOperation::RespondActivityTaskCompleted
                                | SwfOperation::RespondActivityTaskFailed
                                | SwfOperation::RespondActivityTaskCanceled
                                | SwfOperation::RecordActivityTaskHeartbeat
                        ) =>
                    {
                        Ok(Target::Partition(partition))
                    }
                    Ok(_) => Ok(Target::Catalog),
                    Err(error) => Err(error),
                }
            }
        };
        let partition = match target {
            Ok(Target::Partition(partition)) => partition,
            Ok(Target::Catalog) => CATALOG_PARTITION,
            Ok(Target::AllPartitions) => return Placement::Here,
            // A refused body is refused by this node's own dispatch, with the same words.
            Err(_) => return Placement::Here,
        };
        if self.owns(partition) {
            return match named {
                Some(body) => Placement::HereWith(body),
                None => Placement::Here,
            };
        }
        let body = match named {
            Some(body) => String::from_utf8(body).unwrap_or_default(),
            None => text.to_owned(),
        };
        let timeout_ms = if is_long_poll(call) {
            FORWARD_TIMEOUT_MS
        } else {
            FORWARD_CALL_TIMEOUT_MS
        };
        Placement::Answered(
            self.forward(partition, caller, call.name(), body, timeout_ms)
                .await,
        )
    }

    async fn create_state_machine(
        &self,
        caller: &Caller,
        input: CreateStateMachineInput,
    ) -> Result<StateMachineCreated, Error> {
        self.local(CATALOG_PARTITION)?
            .create_state_machine(caller, input)
            .await
    }

    async fn describe_state_machine(
        &self,
        caller: &Caller,
        arn: &str,
    ) -> Result<StateMachineInfo, Error> {
        self.local(CATALOG_PARTITION)?
            .describe_state_machine(caller, arn)
            .await
    }

    async fn list_state_machines(
        &self,
        caller: &Caller,
        max_results: u32,
        next_token: Option<String>,
    ) -> Result<Page<StateMachineSummary>, Error> {
        self.local(CATALOG_PARTITION)?
            .list_state_machines(caller, max_results, next_token)
            .await
    }

    async fn update_state_machine(
        &self,
        caller: &Caller,
        input: UpdateStateMachineInput,
    ) -> Result<StateMachineUpdated, Error> {
        self.local(CATALOG_PARTITION)?
            .update_state_machine(caller, input)
            .await
    }

    async fn delete_state_machine(&self, caller: &Caller, arn: &str) -> Result<(), Error> {
        self.local(CATALOG_PARTITION)?
            .delete_state_machine(caller, arn)
            .await
    }

    /// Not in a cluster yet: routing refuses the call before it gets here (`route`), with the
    /// same answer.
    async fn start_sync_execution(
        &self,
        _caller: &Caller,
        _input: StartSyncExecutionInput,
    ) -> Result<ExpressOutcome, Error> {
        Err(Error::NotSupported {
            operation: Operation::StartSyncExecution.name().to_owned(),
            reason: SYNC_EXECUTION_NOT_ROUTED,
        })
    }

    async fn start_execution(
        &self,
        caller: &Caller,
        input: StartExecutionInput,
    ) -> Result<ExecutionStarted, Error> {
        let machine = Arn::parse_as(&input.state_machine_arn, &[ResourceType::StateMachine])
            .map_err(engine_error)?;
        let Some(name) = input.name.as_deref() else {
            return Err(Error::Internal {
                detail: "an unnamed StartExecution reached its partition (nodes name it first)"
                    .into(),
            });
        };
        let partition = partition_of_execution(
            machine.account,
            machine.resource.name(),
            name,
            self.partitions(),
        )
        .map_err(|error| Error::Internal {
            detail: format!("cannot place the execution: {error}"),
        })?;
        let arn = input.state_machine_arn.clone();
        self.import_machine(caller, partition, &arn).await?;
        self.local(partition)?.start_execution(caller, input).await
    }

    async fn describe_execution(&self, caller: &Caller, arn: &str) -> Result<ExecutionInfo, Error> {
        let partition = self.execution_partition(arn)?;
        self.local(partition)?.describe_execution(caller, arn).await
    }

    async fn describe_state_machine_for_execution(
        &self,
        caller: &Caller,
        execution_arn: &str,
    ) -> Result<StateMachineInfo, Error> {
        let partition = self.execution_partition(execution_arn)?;
        self.local(partition)?
            .describe_state_machine_for_execution(caller, execution_arn)
            .await
    }

    async fn list_executions(
        &self,
        caller: &Caller,
        input: ListExecutionsInput,
        max_results: u32,
    ) -> Result<Page<ExecutionSummary>, Error> {
        let partitions = self.partitions();
        if let Some(arn) = &input.state_machine_arn {
            // A machine the catalog does not know is refused as on one node.
            self.catalog_machine(caller, arn).await?;
        }
        let max = if max_results == 0 {
            u32::try_from(LIST_PAGE_EXECUTIONS_DEFAULT).unwrap_or(PAGE_RESULTS_MAX)
        } else {
            max_results.min(PAGE_RESULTS_MAX)
        };
        let cursor = match &input.next_token {
            Some(token) => ListCursor::decode(token, partitions)?,
            None => ListCursor {
                parts: vec![PartCursor::default(); partitions as usize],
            },
        };
        let mut reads = Vec::new();
        for (index, part) in cursor.parts.iter().enumerate() {
            let partition = PartitionIndex(u32::try_from(index).unwrap_or(u32::MAX));
            let input = &input;
            let token = part.token.clone();
            let done = part.done;
            reads.push(async move {
                if done {
                    return Ok(None);
                }
                self.list_part(caller, partition, input, token, max)
                    .await
                    .map(Some)
            });
        }
        let pages = futures_util::future::try_join_all(reads).await?;
        let (shown, cursor) = merge_pages(cursor, pages, max as usize);
        let next_token = (!cursor.parts.iter().all(|part| part.done)).then(|| cursor.encode());
        let mut items = Vec::with_capacity(shown.len());
        for e in shown {
            items.push(ExecutionSummary {
                arn: e.arn,
                state_machine_arn: e.state_machine_arn,
                name: e.name,
                status: status_name(&e.status)?,
                start_ms: e.start_ms,
                stop_ms: e.stop_ms,
                redrive_count: e.redrive_count,
                redrive_ms: e.redrive_ms,
                // Starts through a version or alias are not served by a cluster yet
                // (`route`), so no execution of a partition has one.
                version_arn: None,
                alias_arn: None,
            });
        }
        Ok(Page { items, next_token })
    }

    async fn stop_execution(
        &self,
        caller: &Caller,
        input: StopExecutionInput,
    ) -> Result<u64, Error> {
        let partition = self.execution_partition(&input.execution_arn)?;
        self.local(partition)?.stop_execution(caller, input).await
    }

    async fn get_execution_history(
        &self,
        caller: &Caller,
        input: GetExecutionHistoryInput,
        max_results: u32,
    ) -> Result<Page<Value>, Error> {
        let partition = self.execution_partition(&input.execution_arn)?;
        self.local(partition)?
            .get_execution_history(caller, input, max_results)
            .await
    }

    async fn create_activity(
        &self,
        caller: &Caller,
        name: String,
        tags: Vec<TagInput>,
    ) -> Result<ActivityInfo, Error> {
        self.local(CATALOG_PARTITION)?
            .create_activity(caller, name, tags)
            .await
    }

    async fn tag_resource(
        &self,
        caller: &Caller,
        resource_arn: String,
        tags: Vec<TagInput>,
    ) -> Result<(), Error> {
        self.local(CATALOG_PARTITION)?
            .tag_resource(caller, resource_arn, tags)
            .await
    }

    async fn untag_resource(
        &self,
        caller: &Caller,
        resource_arn: String,
        tag_keys: Vec<String>,
    ) -> Result<(), Error> {
        self.local(CATALOG_PARTITION)?
            .untag_resource(caller, resource_arn, tag_keys)
            .await
    }

    async fn list_tags_for_resource(
        &self,
        caller: &Caller,
        resource_arn: String,
    ) -> Result<Vec<TagInput>, Error> {
        self.local(CATALOG_PARTITION)?
            .list_tags_for_resource(caller, resource_arn)
            .await
    }

    async fn describe_activity(&self, caller: &Caller, arn: String) -> Result<ActivityInfo, Error> {
        self.local(CATALOG_PARTITION)?
            .describe_activity(caller, arn)
            .await
    }

    async fn list_activities(
        &self,
        caller: &Caller,
        max_results: u32,
        next_token: Option<String>,
    ) -> Result<Page<ActivityInfo>, Error> {
        self.local(CATALOG_PARTITION)?
            .list_activities(caller, max_results, next_token)
            .await
    }

    async fn delete_activity(&self, caller: &Caller, arn: String) -> Result<(), Error> {
        self.local(CATALOG_PARTITION)?
            .delete_activity(caller, arn)
            .await
    }

    async fn get_activity_task(
        &self,
        caller: &Caller,
        arn: String,
        worker_name: Option<String>,
    ) -> Result<Option<ActivityTaskInfo>, Error> {
        // The activity must exist in the catalog, as on one node.
        self.catalog_activity(caller, &arn).await?;
        let task = self.poll_everywhere(caller, vec![arn], worker_name).await?;
        Ok(task.map(|t| ActivityTaskInfo {
            task_token: t.task_token,
            input: t.input,
        }))
    }

    async fn redrive_execution(
        &self,
        caller: &Caller,
        input: RedriveExecutionInput,
    ) -> Result<u64, Error> {
        let partition = self.execution_partition(&input.execution_arn)?;
        self.local(partition)?
            .redrive_execution(caller, input)
            .await
    }

    async fn send_task_success(
        &self,
        caller: &Caller,
        task_token: String,
        output: String,
    ) -> Result<(), Error> {
        let partition = self.token_partition(&task_token)?;
        self.local(partition)?
            .send_task_success(caller, task_token, output)
            .await
    }

    async fn send_task_failure(
        &self,
        caller: &Caller,
        task_token: String,
        error: String,
        cause: String,
    ) -> Result<(), Error> {
        let partition = self.token_partition(&task_token)?;
        self.local(partition)?
            .send_task_failure(caller, task_token, error, cause)
            .await
    }

    async fn send_task_heartbeat(&self, caller: &Caller, task_token: String) -> Result<(), Error> {
        let partition = self.token_partition(&task_token)?;
        self.local(partition)?
            .send_task_heartbeat(caller, task_token)
            .await
    }

    async fn poll_task_list(
        &self,
        caller: &Caller,
        list: String,
        identity: Option<String>,
    ) -> Result<Option<TaskListTask>, Error> {
        let task = self.poll_everywhere(caller, vec![list], identity).await?;
        Ok(task.map(|t| TaskListTask {
            task_token: t.task_token,
            input: t.input,
            execution_arn: t.execution_arn,
            activity_arn: t.activity_arn,
            scheduled_event_id: t.scheduled_event_id,
            started_event_id: t.started_event_id,
        }))
    }

    async fn count_pending_tasks(&self, caller: &Caller, list: String) -> Result<usize, Error> {
        let request = TaskRequest {
            lists: vec![list],
            worker: None,
            wait_ms: 0,
            peek_id: None,
        };
        let body = serde_json::to_string(&request).unwrap_or_default();
        let mut count = 0usize;
        for node in self.owning_nodes() {
            let call = ForwardedCall {
                partition: None,
                operation: COUNT_PENDING.into(),
                input: body.clone(),
                account_id: caller.account_id.clone(),
                region: caller.region.clone(),
                access_key_id: caller.access_key_id.clone(),
            };
            let answer = if node == self.inner.options.node {
                self.answer_internal(&call).await?
            } else {
                self.ask_node(
                    &node,
                    caller,
                    COUNT_PENDING,
                    body.clone(),
                    FORWARD_CALL_TIMEOUT_MS,
                )
                .await?
            };
            count += answer
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(0);
        }
        Ok(count)
    }

    async fn swf<T, F>(&self, caller: &Caller, kind: SwfCallKind, call: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&Engine) -> Result<T, crate::engine::swf::api::SwfError> + Send + 'static,
    {
        self.local(CATALOG_PARTITION)?.swf(caller, kind, call).await
    }

    async fn catalog_engine<T, F>(&self, caller: &Caller, call: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&Engine) -> Result<T, crate::engine::Error> + Send + 'static,
    {
        self.local(CATALOG_PARTITION)?
            .catalog_engine(caller, call)
            .await
    }

    async fn swf_domain_registered(&self, caller: &Caller, name: String) -> Result<bool, Error> {
        self.local(CATALOG_PARTITION)?
            .swf_domain_registered(caller, name)
            .await
    }

    fn metrics(&self) -> Vec<MetricSample> {
        let owned = self.inner.host.owned();
        let mut samples = vec![MetricSample {
            name: "statelog_cluster_partitions_owned".into(),
            kind: "gauge",
            help: "Partitions whose engines this node serves now.".into(),
            labels: vec![("node".into(), self.inner.options.node.clone())],
            value: owned.len() as f64,
        }];
        for partition in owned.into_keys() {
            if let Ok(adapter) = self.local(partition) {
                for mut sample in adapter.metrics() {
                    sample
                        .labels
                        .push(("partition".into(), partition.0.to_string()));
                    samples.push(sample);
                }
            }
        }
        samples
    }

    fn log_poisoned(&self) -> Option<String> {
        self.inner
            .host
            .owned()
            .into_keys()
            .filter_map(|partition| self.local(partition).ok())
            .find_map(|adapter| adapter.log_poisoned())
    }

    async fn shutdown(&self) {
        let membership = self.inner.membership.lock().take();
        if let Some(mut membership) = membership {
            membership.reopener.abort();
            if let Some(responder) = membership.responder.take() {
                responder.stop();
            }
            // Releases every lease (the others take over at once) and closes the engines, on
            // the driver's own runtime.
            if let (Some(lease_runtime), Some(node)) =
                (membership.lease_runtime.take(), membership.node.take())
            {
                // A driver that panicked has nothing left to release.
                let _ = lease_runtime.spawn(node.shutdown()).await;
                lease_runtime.shutdown_background();
            }
        }
    }
}

impl ClusterBackend {
    /// The catalog's answer to `DescribeActivity` of `arn` (only whether it exists matters).
    async fn catalog_activity(&self, caller: &Caller, arn: &str) -> Result<(), Error> {
        if self.owns(CATALOG_PARTITION) {
            return self
                .local(CATALOG_PARTITION)?
                .describe_activity(caller, arn.to_owned())
                .await
                .map(|_| ());
        }
        let body = json!({ "activityArn": arn }).to_string();
        self.forward(
            CATALOG_PARTITION,
            caller,
            Operation::DescribeActivity.name(),
            body,
            FORWARD_CALL_TIMEOUT_MS,
        )
        .await
        .map(|_| ())
    }
}

/// The `'static` status name of a listed execution.
fn status_name(status: &str) -> Result<&'static str, Error> {
    crate::server::protocol::EXECUTION_STATUSES
        .iter()
        .find(|known| **known == status)
        .copied()
        .ok_or_else(|| Error::Internal {
            detail: format!("a partition listed an execution with status {status}"),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unnamed_starts_get_version_4_uuids() {
        let name = random_uuid().expect("drawn");
        assert_eq!(name.len(), 36);
        assert_eq!(&name[14..15], "4");
        assert!(matches!(&name[19..20], "8" | "9" | "a" | "b"));
        assert_ne!(name, random_uuid().expect("drawn"));
    }
}
