//! statelog-engine: the public API. Opens a data directory (log + store), registers task integrations,
//! creates/describes/lists/deletes state machines, starts/stops/describes/lists executions and
//! reads their histories. Wires the pure core (`asl`, `interpreter`) to the `store` and the
//! [`Clock`].
//!
//! The loop, for every trigger (a start, a handler's answer, a due timer, a stop):
//! `decide` -> `Store::append_events` (one atomic log batch, durable before anything else
//! happens) -> `apply` -> effects (spawn the handler on the engine's runtime, arm a timer, wake
//! whoever waits for the close).
//!
//! Invariants:
//! - An event is durable before the engine acts on it or acknowledges the call that caused it.
//! - Triggers of one execution are serialized by its slot lock; no engine-wide lock is held
//!   exclusively across a log append (machine creation, update and deletion and catalog changes
//!   excepted), so executions share group commits. Starts hold `machine_changes` shared, so an
//!   `UpdateStateMachine` waits for the starts in flight (see `catalog`).
//! - Recovery is the same fold: `open` replays the log, re-arms every timer and re-dispatches
//!   every task whose outcome is not in the log. Handlers are therefore called **at least once**:
//!   the context they receive carries `AttemptId` (`<execution ARN>/<task id>`), identical for
//!   a re-dispatch of the same attempt, so a handler can deduplicate its side effects.
//! - A task that no longer matters (its execution stopped or timed out, its branch aborted, its
//!   own timeout or heartbeat ran out) has its handler's future dropped (`CancelTask`), its
//!   heartbeat clock stopped, its unclaimed activity task withdrawn and its `.sync` job asked to
//!   cancel; an answer that still arrives is ignored.
//! - A task whose resource has no handler registered waits (parked) until one is registered;
//!   register integrations right after `open` so recovered tasks resume. A registration never
//!   misses a task parked while it runs (`handlers`: one lock over both).
//!
//! Must not: read wall time except through the [`Clock`]; hold a closed execution's history in
//! memory; let a background failure vanish (it is kept in [`Engine::background_errors`]).

mod activities;
pub mod arn;
mod attempts;
mod backend;
mod catalog;
pub mod clock;
mod close_waiters;
mod error;
mod express;
mod handlers;
pub mod http_task;
mod integrations;
mod jobs;
mod kernel;
pub mod limits;
mod log_health;
mod map_runs;
mod metrics;
pub mod mocks;
mod naming;
mod random;
mod redrive;
mod retention;
mod runtime;
pub mod swf;
pub mod testing;
mod tokens;
mod versions;
// The API of the callers above the engine (the server, the CLI): they name nothing below it.
pub mod history;
pub mod inspect;
pub mod test_state;
pub mod validate;

use std::collections::{BinaryHeap, HashMap};
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex, RwLock};
use serde_json::Value;
use statelog_core::asl::{parse_definition, StateMachine};
use statelog_core::history::{split_test_case, EventDetails, EventId, HistoryEvent, TestCaseArn};
use statelog_core::interpreter::{self, apply, pending_effects, ExecutionState, InputAsWritten};
use statelog_core::limits::{HISTORY_EVENTS_MAX, PAYLOAD_SIZE_BYTES_MAX};
use statelog_store::{self as store, ExecutionSummary, Log, Machine, Store};
pub use statelog_wal::Durability;
use statelog_wal::{Lsn, Wal, WalOptions};

use crate::clock::{Clock, SystemClock};
use crate::limits::{
    HISTORY_PAGE_EVENTS_DEFAULT, HISTORY_PAGE_EVENTS_MAX, LIST_PAGE_EXECUTIONS_DEFAULT,
    LIST_PAGE_EXECUTIONS_MAX, RECOVERY_THREADS_MAX,
};
use arn::{Arn, ResourceType};

pub use activities::{ActivityDescription, ActivityTask};
pub use catalog::Tag;
pub use error::{
    ArgumentReason, ArnReason, ConflictReason, Error, MissingParameter, NameReason, PayloadReason,
    RedriveRefusal, TaskTokenReason, ValidationReason,
};
pub use express::{ExpressExecution, ExpressOutcome};
pub use http_task::{Connections, HttpTask};
pub use jobs::{Job, JobFuture, JobIntegration, JobKey, JobStart, JobStatus};
use kernel::{Slot, TimerEntry, TimerSignal};
pub use log_health::LogRefusal;
pub use map_runs::{
    MapRunCounts, MapRunDescription, MapRunListItem, MapRunStatus,
    EXCEED_TOLERATED_FAILURE_THRESHOLD,
};
pub use metrics::{EngineMetrics, CLOSED_STATUSES, COMMIT_LATENCY_BUCKETS_MICROS};
pub use mocks::{MockConfig, MockConfigError};
pub use random::{OsRandom, RandomSource};
pub use redrive::{RedriveInfo, RedriveOutcome, RedriveStatus};
pub use retention::CompactionProgress;
pub use retention::CompactionSummary;
/// A Distributed Map's item readers and result writers (`EngineOptions::item_sources`).
pub use statelog_items as items;
pub use statelog_store::{ExecutionStatus, MachineType};
pub use versions::{
    AliasDescription, AliasPage, PublishedVersion, RoutingEntry, VersionPage, INITIAL_REVISION_ID,
};

/// How an engine is opened.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// When a log append counts as durable (group commit shares fsyncs between executions).
    pub durability: Durability,
    /// The only source of time.
    pub clock: Arc<dyn Clock>,
    /// The event id that ends an execution with `States.Runtime` (AWS: 25,000).
    pub history_events_max: u32,
    /// The longest an execution may stay open, in ms (AWS: 1 year).
    pub execution_open_ms_max: u64,
    /// The region in ARNs.
    pub region: String,
    /// The account in ARNs.
    pub account: String,
    /// The role of state machines created without one.
    pub role_arn_default: Option<String>,
    /// Run a thread that fires due timers by itself. Tests on a manual clock turn it off and call
    /// [`Engine::run_due_timers`].
    pub background_timers: bool,
    /// Worker threads of the runtime that runs task handlers.
    pub worker_threads: usize,
    /// Size of each log segment file.
    pub segment_size_bytes: u64,
    /// Draw every decision's random numbers (retry jitter, and task tokens too, so for tests
    /// only) from this seed instead of `random_source` (reproducible tests).
    pub entropy_seed: Option<u64>,
    /// Where task tokens and generated names come from (and, without `entropy_seed`, every
    /// other draw): the OS generator by default. When it fails, the operation fails with
    /// [`Error::RandomSourceFailed`]; nothing falls back to a fixed value.
    pub random_source: Arc<dyn RandomSource>,
    /// Open the log read-only (inspection commands): every call that would append fails.
    pub read_only: bool,
    /// How long a closed execution stays visible after its close, in ms (default 90 days); then
    /// it is gone from every API and compaction reclaims its bytes.
    pub retention_ms: u64,
    /// With `background_timers`, run a thread that compacts every `compaction_interval_ms` by
    /// the clock (0: never; tests call [`Engine::compact`] or [`Engine::compact_if_due`]
    /// themselves). Read-only engines never compact.
    pub compaction_interval_ms: u64,
    /// Threads that decode and fold the open executions' histories on open (at most
    /// `RECOVERY_THREADS_MAX`). 1 by default: on the shared 2-core build machine, 2 threads
    /// were slower than 1 (see `docs/engine-bench.md`).
    pub recovery_threads: usize,
    /// The most SWF runs open at once in one domain (default
    /// [`limits::SWF_OPEN_RUNS_PER_DOMAIN_MAX`], SWF's 100,000); a start past it answers
    /// `LimitExceededFault`.
    pub swf_open_runs_per_domain_max: usize,
    /// The most activity tasks waiting in one SWF task list (default
    /// [`limits::SWF_TASK_LIST_PENDING_MAX`]); a ScheduleActivityTask into a full list fails
    /// with ACTIVITY_CREATION_RATE_EXCEEDED.
    pub swf_task_list_pending_max: usize,
    /// The Step Functions Local mock configuration (`statelog serve --mock-config FILE`): an
    /// execution started as `stateMachineArn#Case` answers the Task states test case `Case`
    /// mocks from it (see [`mocks`]). `None`: a `#Case` start is refused.
    pub mock_config: Option<Arc<MockConfig>>,
    /// The HTTP Task (`arn:aws:states:::http:invoke`) with its connections, registered by
    /// `open` before recovery dispatches anything (`None`: not registered; HTTP Tasks wait for
    /// [`Engine::register_http_task`] like any resource without a handler).
    pub http_task: Option<HttpTask>,
    /// Where a Distributed Map's `ItemReader` reads and its `ResultWriter` writes (object
    /// stores, and item sources an embedder registered); `None`: a Map Run with either fails
    /// with `States.ItemReaderFailed` / `States.ResultWriterFailed` naming the missing store.
    pub item_sources: Option<statelog_items::ItemSources>,
}

impl Default for EngineOptions {
    fn default() -> Self {
        Self {
            durability: Durability::GroupCommit,
            clock: Arc::new(SystemClock),
            history_events_max: HISTORY_EVENTS_MAX,
            execution_open_ms_max: statelog_core::limits::EXECUTION_OPEN_MS_MAX,
            region: "us-east-1".to_string(),
            account: "000000000000".to_string(),
            role_arn_default: None,
            background_timers: true,
            worker_threads: 2,
            segment_size_bytes: statelog_wal::limits::SEGMENT_SIZE_BYTES_DEFAULT,
            entropy_seed: None,
            random_source: Arc::new(OsRandom),
            read_only: false,
            retention_ms: crate::limits::RETENTION_MS_DEFAULT,
            compaction_interval_ms: crate::limits::COMPACTION_INTERVAL_MS_DEFAULT,
            recovery_threads: 1,
            swf_open_runs_per_domain_max: crate::limits::SWF_OPEN_RUNS_PER_DOMAIN_MAX,
            swf_task_list_pending_max: crate::limits::SWF_TASK_LIST_PENDING_MAX,
            mock_config: None,
            http_task: None,
            item_sources: None,
        }
    }
}

/// A task handler's failure: the error name Retry/Catch match on, and a human cause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskError {
    /// The error name (e.g. `Payment.Declined`).
    pub error: String,
    /// The human cause.
    pub cause: String,
}

impl TaskError {
    /// A failure with `error` and `cause`.
    pub fn new(error: impl Into<String>, cause: impl Into<String>) -> Self {
        Self {
            error: error.into(),
            cause: cause.into(),
        }
    }
}

/// What a task handler returns.
pub type TaskFuture = Pin<Box<dyn Future<Output = Result<Value, TaskError>> + Send + 'static>>;

/// An integration: called with the task's effective input and its Context object (plus
/// `AttemptId`, see the module docs). Any `Fn(Value, Value) -> impl Future` of the right output
/// is one.
pub trait TaskHandler: Send + Sync + 'static {
    /// Starts one call.
    fn call(&self, input: Value, context: Value) -> TaskFuture;
}

impl<F, Fut> TaskHandler for F
where
    F: Fn(Value, Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, TaskError>> + Send + 'static,
{
    fn call(&self, input: Value, context: Value) -> TaskFuture {
        Box::pin(self(input, context))
    }
}

/// A state machine as `DescribeStateMachine` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MachineDescription {
    /// `arn:aws:states:<region>:<account>:stateMachine:<name>`.
    pub state_machine_arn: String,
    /// Its name.
    pub name: String,
    /// Its definition text.
    pub definition: String,
    /// The role its executions run as.
    pub role_arn: String,
    /// When it was created, ms since the epoch.
    pub created_ms: u64,
    /// When this definition and role were set by `UpdateStateMachine`, ms since the epoch
    /// (`None`: as created).
    pub updated_ms: Option<u64>,
    /// The revision's id as AWS shows it (`revisionId`): `None` for the revision made at
    /// creation, a stable UUID-shaped id for each update (see `catalog::revision_id`).
    pub revision_id: Option<String>,
    /// The workflow variables each state reads (`variableReferences`), by state name, sorted;
    /// states that read none are left out.
    pub variable_references: std::collections::BTreeMap<String, Vec<String>>,
    /// `STANDARD` or `EXPRESS`, as created.
    pub machine_type: MachineType,
    /// A version's description (`DescribeStateMachine` of a version ARN); `None` otherwise.
    pub description: Option<String>,
}

/// What `StartExecution` answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartedExecution {
    /// The execution's ARN.
    pub execution_arn: String,
    /// When it started, ms since the epoch.
    pub start_ms: u64,
}

/// An execution as `DescribeExecution` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutionDescription {
    /// The execution's ARN.
    pub execution_arn: String,
    /// Its state machine's ARN.
    pub state_machine_arn: String,
    /// Its name.
    pub name: String,
    /// How it stands.
    pub status: ExecutionStatus,
    /// When it started, ms since the epoch.
    pub start_ms: u64,
    /// When it closed, ms since the epoch.
    pub stop_ms: Option<u64>,
    /// Its input.
    pub input: Value,
    /// Its input exactly as the caller sent it to `start_execution` (spacing and key order
    /// kept).
    pub input_text: String,
    /// Its output, once succeeded.
    pub output: Option<Value>,
    /// Its output as JSON text, as AWS shows it: compact, except that the input keeps the
    /// caller's text wherever it passes through unchanged (as in the history).
    pub output_text: Option<String>,
    /// The error it failed, timed out or was stopped with.
    pub error: Option<String>,
    /// The cause it failed, timed out or was stopped with.
    pub cause: Option<String>,
    /// Events in its history so far (the cap is `history_events_max`).
    pub event_count: u32,
    /// `redriveCount`, `redriveDate`, `redriveStatus`, `redriveStatusReason`.
    pub redrive: RedriveInfo,
    /// `stateMachineVersionArn`: the version it was started on (through a version or alias).
    pub state_machine_version_arn: Option<String>,
    /// `stateMachineAliasArn`: the alias it was started through.
    pub state_machine_alias_arn: Option<String>,
    /// `mapRunArn`: the Map Run that started it, for a Distributed Map's child.
    pub map_run_arn: Option<String>,
}

/// One execution in a `ListExecutions` page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutionListItem {
    /// The execution's ARN.
    pub execution_arn: String,
    /// Its state machine's ARN.
    pub state_machine_arn: String,
    /// Its name.
    pub name: String,
    /// How it stands.
    pub status: ExecutionStatus,
    /// When it started, ms since the epoch.
    pub start_ms: u64,
    /// When it closed, ms since the epoch.
    pub stop_ms: Option<u64>,
    /// `redriveCount`: how many times it was redriven.
    pub redrive_count: u32,
    /// `redriveDate`: when it was last redriven, ms since the epoch.
    pub redrive_ms: Option<u64>,
    /// `stateMachineVersionArn`: the version it was started on (through a version or alias).
    pub state_machine_version_arn: Option<String>,
    /// `stateMachineAliasArn`: the alias it was started through.
    pub state_machine_alias_arn: Option<String>,
}

/// A `ListExecutions` request.
#[derive(Debug, Clone, Default)]
pub struct ListExecutions {
    /// Only this machine's executions (name or ARN; a version or alias ARN: only those started
    /// on that version or through that alias); all when `None`.
    pub state_machine: Option<String>,
    /// Only executions in this status.
    pub status_filter: Option<ExecutionStatus>,
    /// Page size, `1..=1000`; 0 means the default (100).
    pub max_results: usize,
    /// The token of the previous page.
    pub next_token: Option<String>,
}

/// A page of executions, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutionPage {
    /// The executions.
    pub executions: Vec<ExecutionListItem>,
    /// Pass it back for the next page; `None` on the last.
    pub next_token: Option<String>,
}

/// A `GetExecutionHistory` request.
#[derive(Debug, Clone)]
pub struct HistoryQuery {
    /// Page size, `1..=1000`; 0 means the default (100).
    pub max_results: usize,
    /// The token of the previous page.
    pub next_token: Option<String>,
    /// Newest event first.
    pub reverse_order: bool,
    /// Include inputs and outputs in the rendered events.
    pub include_execution_data: bool,
}

impl Default for HistoryQuery {
    fn default() -> Self {
        Self {
            max_results: 0,
            next_token: None,
            reverse_order: false,
            include_execution_data: true,
        }
    }
}

/// A page of history events.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryPage {
    /// The events, in the order asked for.
    pub events: Vec<HistoryEvent>,
    /// Pass it back for the next page; `None` on the last.
    pub next_token: Option<String>,
    /// Whether rendering includes inputs and outputs.
    pub include_execution_data: bool,
    /// The execution input and the text its caller wrote, for rendering as AWS does.
    input_text: Option<(Value, String)>,
    /// The id of the history's first `MapStateExited`: from there on AWS renders compact text.
    first_map_exit_id: Option<u32>,
}

impl HistoryPage {
    /// The page in AWS `GetExecutionHistory` JSON shape.
    pub fn to_aws_json(&self) -> Value {
        let events: Vec<Value> = self
            .events
            .iter()
            .map(|e| {
                let before_map_exit = self.first_map_exit_id.map_or(true, |id| e.id.0 < id);
                let input = self
                    .input_text
                    .as_ref()
                    .filter(|_| before_map_exit)
                    .map(|(value, text)| (value, text.as_str()));
                statelog_core::history::aws_json::render_event_with(
                    e,
                    self.include_execution_data,
                    input,
                )
            })
            .collect();
        let mut page = serde_json::Map::new();
        page.insert("events".to_string(), Value::Array(events));
        if let Some(token) = &self.next_token {
            page.insert("nextToken".to_string(), Value::String(token.clone()));
        }
        Value::Object(page)
    }
}

/// An async start appended and not yet known durable ([`Engine::start_execution_async`]): a
/// caller that drops it before the log's word leaves the wait and the start's effects to a task
/// of its runtime.
struct PendingStart<'a> {
    engine: &'a Engine,
    runtime: tokio::runtime::Handle,
    awaited: Option<(runtime::RecordedStart, kernel::LogWord)>,
}

impl Drop for PendingStart<'_> {
    fn drop(&mut self) {
        let Some((recorded, told)) = self.awaited.take() else {
            return;
        };
        let engine = self.engine.clone();
        self.runtime.spawn(async move {
            if let Ok(Ok(())) = told.await {
                recorded.finish(&engine);
            }
        });
    }
}

/// The engine handle: cheap to clone, `Send + Sync`.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("open_executions", &self.inner.open.lock().len())
            .finish()
    }
}

#[derive(Debug, Default)]
struct HandlerCounts {
    in_flight: usize,
    recorded: u64,
}

/// A map keyed by execution ARN: hashed with foldhash's quality hasher (seeded per map), as
/// the store's index is, rather than SipHash: a Pass-chain start hashes its ARN in several of
/// these maps, and SipHash over ~80-byte ARNs was 1,800 of the start's 73,000 instructions.
pub(crate) type ArnMap<V> = HashMap<Arc<str>, V, foldhash::quality::RandomState>;

/// One blocking start counted in flight (`Inner::blocking_starts`) until dropped.
struct BlockingStart<'a> {
    starts: &'a AtomicUsize,
    /// How many were in flight with this one when it entered.
    count: usize,
}

impl<'a> BlockingStart<'a> {
    fn enter(starts: &'a AtomicUsize) -> Self {
        let count = starts.fetch_add(1, Ordering::Relaxed) + 1;
        BlockingStart { starts, count }
    }
}

impl Drop for BlockingStart<'_> {
    fn drop(&mut self) {
        self.starts.fetch_sub(1, Ordering::Relaxed);
    }
}

struct Inner {
    store: Store,
    options: EngineOptions,
    interpreter_options: interpreter::Options,
    /// `interpreter_options` with the Express open-time limit (`limits::EXPRESS_EXECUTION_MS_MAX`).
    express_options: interpreter::Options,
    /// The running Express executions and their timers (see `express`).
    express: express::ExpressRuns,
    /// Distributed Map runs (see `map_runs`).
    map_runs: map_runs::MapRunTable,
    /// Task handlers by resource, and the tasks whose resource had no handler when they were
    /// due, waiting for one (see `handlers`).
    handlers: handlers::TaskHandlers,
    /// What each task attempt waits for now: its handler call, unrecorded answer, heartbeat
    /// clock, `.sync` job or child (see `attempts`).
    attempts: attempts::Attempts,
    /// Open executions.
    open: Mutex<ArnMap<Arc<Slot>>>,
    /// Compiled definitions by the LSN of their machine revision's record.
    definitions: Mutex<HashMap<Lsn, Arc<StateMachine>, foldhash::quality::RandomState>>,
    /// Held shared by each start from its machine lookup until its first batch is durable,
    /// exclusively by `update_state_machine` (see `catalog`).
    machine_changes: RwLock<()>,
    timers: Mutex<BinaryHeap<std::cmp::Reverse<TimerEntry>>>,
    /// Activities and task lists (see `activities`).
    activities: activities::Activities,
    /// Job integrations, and cancels of recovered jobs waiting for theirs (see `jobs`).
    job_table: jobs::JobTable,
    /// What tasks wait for, in routing order: the kernel and the runtime reach the task
    /// backends only through this list (see `backend`).
    backends: backend::Backends,
    timer_signal: Arc<TimerSignal>,
    /// Threads in `wait_until_closed`, by execution; a close wakes only its own.
    close_waiters: close_waiters::CloseWaiters,
    background_errors: Mutex<Vec<String>>,
    /// Handler calls spawned and not yet recorded (`wait_idle` waits for none), and answers
    /// recorded so far.
    in_flight: Mutex<HandlerCounts>,
    in_flight_changed: Condvar,
    entropy: random::EntropySource,
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
    handle: tokio::runtime::Handle,
    shutdown: AtomicBool,
    /// Blocking starts (`Engine::start_execution`) in flight now.
    blocking_starts: AtomicUsize,
    /// Executions, transitions and commits counted (see `metrics`).
    counters: metrics::Counters,
    /// Amazon SWF: registry lock, open runs, task lists, timers (see `swf`).
    swf: swf::SwfService,
}

impl Engine {
    /// Opens (creating if missing) the engine's log in `dir`, replays it, re-arms every timer of
    /// the open executions and queues their unanswered tasks for dispatch.
    pub fn open(dir: impl AsRef<Path>, options: EngineOptions) -> Result<Engine, Error> {
        let wal_options = WalOptions {
            durability: options.durability,
            segment_size_bytes: options.segment_size_bytes,
            read_only: options.read_only,
            ..WalOptions::default()
        };
        let (wal, _report) = Wal::open(dir, wal_options).map_err(store::Error::from)?;
        Self::open_with_log(Arc::new(wal), options)
    }

    /// Opens the engine over any [`Log`] (e.g. [`store::MemoryLog`] for tests without a disk).
    pub fn open_with_log(log: Arc<dyn Log>, options: EngineOptions) -> Result<Engine, Error> {
        let store = Store::open(log)?;
        let engine = Self::assemble(store, options)?;
        // Before recovery dispatches anything: recovered built-in tasks find their handler.
        engine.register_builtin_integrations();
        if let Some(task) = engine.inner.options.http_task.clone() {
            engine.register_http_task(task);
        }
        // Fold every open execution: one sequential pass over the log, decoded and folded on
        // `recovery_threads` threads.
        let partitions = engine.inner.options.recovery_threads;
        type Folded = HashMap<String, ExecutionState>;
        // An execution whose records do not read or fold is damaged: the store marks it, and
        // it is not recovered; the others are.
        let folded: Vec<Folded> = engine.inner.store.fold_open_batches(
            partitions.min(RECOVERY_THREADS_MAX),
            HashMap::new,
            |states: &mut Folded, batch| {
                let state = states.entry(batch.execution_arn.clone()).or_default();
                for event in &batch.events {
                    apply(state, event)
                        .map_err(|error| format!("event {} does not fold: {error}", event.id))?;
                }
                Ok::<(), String>(())
            },
        )?;
        let states: HashMap<String, ExecutionState> = folded.into_iter().flatten().collect();
        let mut recovered = Vec::with_capacity(states.len());
        for (arn, state) in states {
            let arn: Arc<str> = Arc::from(arn);
            if engine.inner.store.damage_of(&arn).is_some() {
                continue;
            }
            let summary = engine.summary(&arn)?;
            if state.status().is_closed() {
                // The record headers said open, the events say closed: this one is damaged.
                let last_lsn = engine.inner.store.last_record_lsn(&arn).unwrap_or(Lsn(0));
                engine.inner.store.mark_damaged(
                    &arn,
                    last_lsn,
                    store::DamageReason::HeadersOpenEventsClosed,
                );
                continue;
            }
            let definition = engine.definition_at(summary.machine_lsn)?;
            let effects = pending_effects(&state);
            tokens::arm_recovered(&engine, &arn, &state);
            let slot = Arc::new(Slot::new(state, definition));
            engine.inner.open.lock().insert(arn.clone(), slot.clone());
            recovered.push((arn, slot, effects));
        }
        let mut parents = Vec::new();
        for (arn, slot, effects) in recovered {
            engine.perform(&arn, &slot, effects);
            parents.push((arn, slot));
        }
        for (arn, slot) in parents {
            let waiting = slot.state.lock().execution.waiting_tokens();
            engine.recover_jobs(&arn, waiting);
        }
        // SWF runs: fold, offer their scheduled tasks again, arm their deadlines.
        swf::recover(&engine);
        if engine.inner.options.background_timers {
            kernel::spawn_timer_thread(&engine)?;
        }
        if engine.inner.options.background_timers
            && engine.inner.options.compaction_interval_ms > 0
            && !engine.inner.options.read_only
        {
            retention::spawn_compaction_thread(&engine)?;
        }
        Ok(engine)
    }

    fn assemble(store: Store, options: EngineOptions) -> Result<Engine, Error> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(options.worker_threads.max(1))
            .thread_name("statelog-engine")
            .enable_time()
            // The HTTP Task's sockets (`http_task`).
            .enable_io()
            .build()
            .map_err(|source| Error::Runtime { source })?;
        let handle = runtime.handle().clone();
        let interpreter_options = interpreter::Options {
            history_events_max: options.history_events_max,
            execution_open_ms_max: options.execution_open_ms_max,
        };
        let express_options = interpreter::Options {
            execution_open_ms_max: crate::limits::EXPRESS_EXECUTION_MS_MAX
                .min(options.execution_open_ms_max),
            ..interpreter_options.clone()
        };
        let entropy =
            random::EntropySource::new(options.random_source.clone(), options.entropy_seed);
        Ok(Engine {
            inner: Arc::new(Inner {
                store,
                interpreter_options,
                express_options,
                express: express::ExpressRuns::default(),
                map_runs: map_runs::MapRunTable::default(),
                options,
                handlers: handlers::TaskHandlers::default(),
                attempts: attempts::Attempts::default(),
                open: Mutex::new(ArnMap::default()),
                definitions: Mutex::new(HashMap::default()),
                machine_changes: RwLock::new(()),
                timers: Mutex::new(BinaryHeap::new()),
                activities: activities::Activities::default(),
                job_table: jobs::JobTable::default(),
                backends: backend::Backends::standard(),
                timer_signal: Arc::new(TimerSignal::default()),
                close_waiters: close_waiters::CloseWaiters::default(),
                background_errors: Mutex::new(Vec::new()),
                in_flight: Mutex::new(HandlerCounts::default()),
                in_flight_changed: Condvar::new(),
                entropy,
                runtime: Mutex::new(Some(runtime)),
                handle,
                shutdown: AtomicBool::new(false),
                blocking_starts: AtomicUsize::new(0),
                counters: metrics::Counters::default(),
                swf: swf::SwfService::default(),
            }),
        })
    }

    /// Registers the handler for Task states whose `Resource` is exactly `resource`, and
    /// dispatches the tasks that were waiting for it (recovered or started before).
    pub fn register_integration(&self, resource: &str, handler: impl TaskHandler) {
        // One step with the park of a dispatch that found no handler (see `handlers`): a task
        // parked while this runs is either taken here or finds the handler itself.
        let waiting = self.inner.handlers.register(resource, Arc::new(handler));
        for task in waiting {
            self.dispatch(&task.attempt.execution, task.invocation);
        }
        // A Distributed Map's EXPRESS children wait for their handlers (see `map_runs`).
        self.inner.map_runs.handlers_changed.notify_waiters();
    }

    /// Creates a STANDARD state machine. The same name with the same definition and role
    /// returns the existing one; with another, `StateMachineAlreadyExists`.
    pub fn create_state_machine(
        &self,
        name: &str,
        definition: &str,
        role_arn: Option<&str>,
    ) -> Result<MachineDescription, Error> {
        self.create_typed_machine(name, definition, role_arn, MachineType::Standard)
    }

    /// [`Engine::create_state_machine`] of either type. An EXPRESS definition may not use
    /// `.sync`, `.waitForTaskToken` or activities (`InvalidDefinition`, as AWS); the same name
    /// with another type is `StateMachineAlreadyExists`.
    pub(crate) fn create_typed_machine(
        &self,
        name: &str,
        definition: &str,
        role_arn: Option<&str>,
        machine_type: MachineType,
    ) -> Result<MachineDescription, Error> {
        naming::check_name(name)?;
        let compiled =
            parse_definition(definition, &validate::options()).map_err(|diagnostics| {
                Error::InvalidDefinition {
                    diagnostics: diagnostics
                        .into_iter()
                        .filter(|d| d.severity == statelog_core::asl::Severity::Error)
                        .collect(),
                }
            })?;
        self.check_job_patterns(&compiled)?;
        express::check_express_children(&compiled)?;
        if machine_type == MachineType::Express {
            express::check_definition(&compiled)?;
        }
        let role_arn = match role_arn {
            Some(role) => role.to_string(),
            None => self.default_role_arn(),
        };
        if let Some(existing) = self.inner.store.machine(name) {
            if &*existing.definition == definition
                && existing.role_arn == role_arn
                && existing.machine_type == machine_type
            {
                return Ok(self.machine_description(&existing));
            }
            return Err(Error::StateMachineAlreadyExists {
                state_machine_arn: self.state_machine_arn(name),
            });
        }
        let now_ms = self.inner.options.clock.now_ms();
        let machine = self
            .inner
            .store
            .create_machine(name, definition, &role_arn, machine_type, now_ms)
            .map_err(|e| match e {
                store::Error::MachineExists { name } => Error::StateMachineAlreadyExists {
                    state_machine_arn: self.state_machine_arn(&name),
                },
                other => Error::from(other),
            })?;
        self.inner
            .definitions
            .lock()
            .insert(machine.lsn, Arc::new(compiled));
        Ok(self.machine_description(&machine))
    }

    /// Describes a live state machine, by name or ARN.
    pub fn describe_state_machine(&self, state_machine: &str) -> Result<MachineDescription, Error> {
        if let Some(version) = self.describe_version(state_machine)? {
            return Ok(version);
        }
        let machine = self.live_machine(state_machine)?;
        Ok(self.machine_description(&machine))
    }

    /// Every live state machine, by name.
    pub fn list_state_machines(&self) -> Vec<MachineDescription> {
        self.inner
            .store
            .machines()
            .iter()
            // A Distributed Map's child machine (`<machine>/<label>`) is not listed.
            .filter(|m| !m.name.contains('/'))
            .map(|m| self.machine_description(m))
            .collect()
    }

    /// Deletes a state machine (by name or ARN). Its running executions go on to their end.
    pub fn delete_state_machine(&self, state_machine: &str) -> Result<(), Error> {
        let machine = self.live_machine(state_machine)?;
        let now_ms = self.inner.options.clock.now_ms();
        self.inner
            .store
            .delete_machine(&machine.name, now_ms)
            .map_err(|e| match e {
                store::Error::UnknownMachine { name } => Error::StateMachineDoesNotExist {
                    state_machine: name,
                },
                other => Error::from(other),
            })
    }

    /// Starts an execution of `state_machine` (name or ARN) with `input` (JSON text). `name`
    /// defaults to a random UUID. The same name with the same input while it runs returns the
    /// same execution; otherwise an existing name is `ExecutionAlreadyExists`, as AWS does.
    /// Returns once the execution's first decision is durable.
    ///
    /// While a commit is in flight (and at most `NOTIFIED_BLOCKING_STARTS_MAX` blocking starts
    /// are), the start is appended for the log's own thread to make durable, and the calling
    /// thread waits for its word (`Commit::Notify`); on an idle log it syncs in place.
    ///
    /// An EXPRESS machine's execution starts in memory instead (see
    /// [`Engine::start_express_execution`]): its name need not be unique, nothing is written,
    /// and its outcome goes nowhere (AWS's asynchronous Express execution).
    pub fn start_execution(
        &self,
        state_machine: &str,
        name: Option<&str>,
        input: &str,
    ) -> Result<StartedExecution, Error> {
        let in_flight = BlockingStart::enter(&self.inner.blocking_starts);
        if in_flight.count <= limits::NOTIFIED_BLOCKING_STARTS_MAX
            && self.notify_pays()
            && self.inner.store.log().notices_waiting() < limits::NOTIFIED_BLOCKING_STARTS_MAX
        {
            let (on_durable, word) = kernel::blocking_word();
            let recorded = self.record_start(state_machine, name, input, Some(on_durable))?;
            if recorded.awaits_log {
                word.wait()?;
            }
            return Ok(recorded.finish(self));
        }
        let recorded = self.record_start(state_machine, name, input, None)?;
        debug_assert!(!recorded.awaits_log, "a synced start");
        Ok(recorded.finish(self))
    }

    /// [`Engine::start_execution`] for a caller on a tokio runtime, without blocking its thread
    /// on the log's fdatasync: the start is decided and appended on the calling thread
    /// (`Commit::Notify`), and the future completes once the log says it is durable and its
    /// effects are performed (a caller that stops waiting leaves that to a task spawned on its
    /// runtime, so the execution goes on). Many starts in flight thus share the log's syncs on
    /// a few threads. Off a runtime, on a log that does not notify or has no commit in flight
    /// (an idle log syncs quicker in place), for an Express machine or a mocked test case, it
    /// is [`Engine::start_execution`] (under `block_in_place` on a multi-threaded runtime); a
    /// start whose name was started already answers once that start is durable, as
    /// `start_execution` does.
    pub async fn start_execution_async(
        &self,
        state_machine: &str,
        name: Option<&str>,
        input: &str,
    ) -> Result<StartedExecution, Error> {
        // On an idle log the synced start in place is quicker than waiting for the log's
        // thread to be scheduled (`Engine::notify_pays`).
        let runtime = tokio::runtime::Handle::try_current()
            .ok()
            .filter(|_| self.notify_pays());
        let Some(runtime) = runtime else {
            return runtime::off_the_reactor(|| self.start_execution(state_machine, name, input));
        };
        let (on_durable, told) = kernel::log_word_channel();
        let recorded = self.record_start(state_machine, name, input, Some(on_durable))?;
        if !recorded.awaits_log {
            return Ok(recorded.finish(self));
        }
        let mut pending = PendingStart {
            engine: self,
            runtime,
            awaited: Some((recorded, told)),
        };
        let told = match pending.awaited.as_mut() {
            Some((_, told)) => told,
            None => unreachable!("set above"),
        };
        let word = kernel::log_word(told).await;
        let Some((recorded, _)) = pending.awaited.take() else {
            unreachable!("taken only here and on drop")
        };
        word.map(|()| recorded.finish(self))
    }

    /// A start recorded: synced without `on_durable`, else appended with `Commit::Notify` where
    /// the start path allows it (`runtime::RecordedStart::awaits_log`).
    fn record_start(
        &self,
        state_machine: &str,
        name: Option<&str>,
        input: &str,
        on_durable: Option<statelog_store::OnDurable>,
    ) -> Result<runtime::RecordedStart, Error> {
        // The revision looked up here is the one the log will assign to this start (recursive:
        // a start may run inside another start's effects).
        let _revision = self.inner.machine_changes.read_recursive();
        let TestCaseArn {
            machine_arn: state_machine,
            test_case,
        } = split_test_case(state_machine);
        let target = self.start_target(state_machine)?;
        if let Some(case) = test_case {
            self.check_test_case(state_machine, &target.machine.name, case)?;
        }
        let input_text = input;
        let (input, input_kept) = parse_input(input_text)?;
        let name = naming::start_name(name, &self.inner.entropy)?;
        let definition = self.definition_at(target.machine.lsn)?;
        if target.machine.machine_type == MachineType::Express {
            // Mocked test cases answer through the durable task path, which Express lacks.
            if test_case.is_some() {
                return Err(Error::StateMachineTypeNotSupported {
                    state_machine: state_machine.to_string(),
                    machine_type: target.machine.machine_type,
                });
            }
            let started = express::start(
                self,
                &target.machine,
                definition,
                name,
                input,
                input_text,
                input_kept,
                false,
            )?;
            return Ok(runtime::RecordedStart::done(StartedExecution {
                execution_arn: started.execution_arn,
                start_ms: started.start_ms,
            }));
        }
        let execution_arn = self.execution_arn(&target.machine.name, &name);
        // A mocked test case's answers go through the synced task path: its start is synced.
        let on_durable = on_durable.filter(|_| test_case.is_none());
        runtime::record_start(
            self,
            &target,
            definition,
            execution_arn,
            input,
            input_kept,
            test_case,
            on_durable,
        )
    }

    /// `InvalidArn` unless the mock configuration holds test case `case` of `machine`.
    fn check_test_case(&self, state_machine: &str, machine: &str, case: &str) -> Result<(), Error> {
        let arn = || format!("{state_machine}#{case}");
        let Some(config) = &self.inner.options.mock_config else {
            return Err(Error::InvalidArn {
                arn: arn(),
                reason: ArnReason::NoMockConfig {
                    test_case: case.to_string(),
                },
            });
        };
        if config.test_case(machine, case).is_none() {
            return Err(Error::InvalidArn {
                arn: arn(),
                reason: ArnReason::UnknownTestCase {
                    state_machine: machine.to_string(),
                    test_case: case.to_string(),
                },
            });
        }
        Ok(())
    }

    /// Starts an execution of the EXPRESS machine `state_machine` (name or ARN) in memory and
    /// returns at once, with a handle on its outcome (for an engine-internal caller that awaits
    /// many cheaply). `name` need not be unique (a UUID when absent); the ARN is
    /// `arn:aws:states:<region>:<account>:express:<machine>:<name>:<id>`. Nothing is written to
    /// the log. A STANDARD machine is `StateMachineTypeNotSupported`.
    pub fn start_express_execution(
        &self,
        state_machine: &str,
        name: Option<&str>,
        input: &str,
    ) -> Result<ExpressExecution, Error> {
        // Resolved as `start_execution` resolves it: a version or alias ARN runs that version.
        let machine = self.start_target(state_machine)?.machine;
        if machine.machine_type != MachineType::Express {
            return Err(Error::StateMachineTypeNotSupported {
                state_machine: state_machine.to_string(),
                machine_type: machine.machine_type,
            });
        }
        let input_text = input;
        let (input, input_kept) = parse_input(input_text)?;
        let name = naming::start_name(name, &self.inner.entropy)?;
        let definition = self.definition_at(machine.lsn)?;
        express::start(
            self, &machine, definition, name, input, input_text, input_kept, true,
        )
    }

    /// `StartSyncExecution`: runs an execution of the EXPRESS machine `state_machine` and
    /// blocks until it ends (at most `limits::EXPRESS_EXECUTION_MS_MAX` of the engine's clock;
    /// then it is `TimedOut`). Call it from a thread that may block, not an async worker (those
    /// await [`Engine::start_express_execution`]'s outcome).
    pub fn start_sync_execution(
        &self,
        state_machine: &str,
        name: Option<&str>,
        input: &str,
    ) -> Result<ExpressOutcome, Error> {
        self.start_express_execution(state_machine, name, input)?
            .wait()
    }

    /// Describes an execution.
    pub fn describe_execution(&self, execution_arn: &str) -> Result<ExecutionDescription, Error> {
        let summary = self.requested_summary(execution_arn)?;
        let (first, last) = self.inner.store.first_and_last_events(execution_arn)?;
        let EventDetails::ExecutionStarted(started) = &first.details else {
            return Err(Error::Store(store::Error::NotStarted {
                execution_arn: execution_arn.to_string(),
                found: first.details.type_name(),
            }));
        };
        let raw_input = started.input_text.as_deref().map(|t| (&*started.input, t));
        let input_text = match raw_input {
            Some((_, text)) => text.to_string(),
            None => {
                serde_json::to_string(&*started.input).map_err(|source| Error::NotRendered {
                    what: "an execution input",
                    source,
                })?
            }
        };
        // The text the event's rendering shows, without rendering the whole event.
        let output_text = match &last.details {
            EventDetails::ExecutionSucceeded(out) => Some(
                statelog_core::history::aws_json::payload_text(&out.output, raw_input),
            ),
            _ => None,
        };
        let (output, error, cause) = match &last.details {
            EventDetails::ExecutionSucceeded(out) => (Some(Value::clone(&out.output)), None, None),
            EventDetails::ExecutionFailed(ec)
            | EventDetails::ExecutionAborted(ec)
            | EventDetails::ExecutionTimedOut(ec) => (None, ec.error.clone(), ec.cause.clone()),
            _ => (None, None, None),
        };
        Ok(ExecutionDescription {
            execution_arn: execution_arn.to_string(),
            state_machine_arn: split_test_case(&started.state_machine_arn)
                .machine_arn
                .to_string(),
            name: naming::execution_name(execution_arn).to_string(),
            status: summary.status,
            start_ms: summary.start_ms,
            stop_ms: summary.stop_ms,
            input: Value::clone(&started.input),
            input_text,
            output,
            output_text,
            error,
            cause,
            event_count: summary.event_count,
            redrive: self.redrive_info(&summary),
            state_machine_version_arn: started.state_machine_version_arn.clone(),
            state_machine_alias_arn: started.state_machine_alias_arn.clone(),
            map_run_arn: started.map_run_arn.clone(),
        })
    }

    /// Lists executions newest first, optionally of one machine and in one status, a page at a
    /// time.
    pub fn list_executions(&self, request: &ListExecutions) -> Result<ExecutionPage, Error> {
        let limit = page_size(
            request.max_results,
            LIST_PAGE_EXECUTIONS_DEFAULT,
            LIST_PAGE_EXECUTIONS_MAX,
        )?;
        let (machine_lsn, through) = match &request.state_machine {
            Some(machine) => {
                let (origin, through) = self.listing_filter(machine)?;
                (Some(origin), through)
            }
            None => (None, versions::Through::Any),
        };
        let before = match &request.next_token {
            Some(token) => Some(
                token
                    .strip_prefix("x")
                    .and_then(|n| n.parse::<u64>().ok())
                    .ok_or_else(|| Error::InvalidToken {
                        token: token.clone(),
                    })?,
            ),
            None => None,
        };
        // The index holds a notified answer's status (a closing `SendTaskSuccess`) before the
        // log says it is durable: no listing shows it before it is.
        self.inner.store.sync_unsynced()?;
        let mut found = Vec::new();
        let mut cursor = before;
        loop {
            let want = limit + 1 - found.len();
            let batch = self.inner.store.executions_where(
                machine_lsn,
                request.status_filter,
                cursor,
                want,
                &|summary| through.keeps_indexed(summary),
            );
            let exhausted = batch.len() < want;
            cursor = batch.last().map(|e| e.start_index).or(cursor);
            for summary in batch {
                if self.is_expired(&summary) {
                    continue;
                }
                // The alias is in the execution's first event only.
                if let versions::Through::Alias(alias_arn) = &through {
                    let (_, alias) = self.started_through(&summary)?;
                    if alias.as_deref() != Some(alias_arn.as_str()) {
                        continue;
                    }
                }
                found.push(summary);
            }
            if exhausted || found.len() > limit || !matches!(through, versions::Through::Alias(_)) {
                break;
            }
        }
        let next_token = if found.len() > limit {
            found.truncate(limit);
            found.last().map(|e| format!("x{}", e.start_index))
        } else {
            None
        };
        let mut executions = Vec::with_capacity(found.len());
        for e in &found {
            let (state_machine_version_arn, state_machine_alias_arn) = self.started_through(e)?;
            executions.push(ExecutionListItem {
                execution_arn: e.execution_arn.to_string(),
                state_machine_arn: self
                    .inner
                    .store
                    .machine_at(e.machine_lsn)
                    .map(|m| self.state_machine_arn(&m.name))
                    .unwrap_or_default(),
                name: naming::execution_name(&e.execution_arn).to_string(),
                status: e.status,
                start_ms: e.start_ms,
                stop_ms: e.stop_ms,
                redrive_count: e.redrive_count,
                redrive_ms: e.redrive_ms,
                state_machine_version_arn,
                state_machine_alias_arn,
            });
        }
        Ok(ExecutionPage {
            executions,
            next_token,
        })
    }

    /// Stops a running execution with `error` and `cause` (both optional); returns the stop time.
    /// Stopping a closed execution changes nothing and returns its stop time.
    pub fn stop_execution(
        &self,
        execution_arn: &str,
        error: Option<&str>,
        cause: Option<&str>,
    ) -> Result<u64, Error> {
        let summary = self.requested_summary(execution_arn)?;
        if !summary.status.is_closed() {
            self.drive(
                execution_arn,
                interpreter::Trigger::Stop {
                    error: error.map(str::to_string),
                    cause: cause.map(str::to_string),
                },
            )?;
        }
        let summary = self.summary(execution_arn)?;
        Ok(summary
            .stop_ms
            .unwrap_or_else(|| self.inner.options.clock.now_ms()))
    }

    /// Reads a page of an execution's history from the log.
    pub fn get_execution_history(
        &self,
        execution_arn: &str,
        query: &HistoryQuery,
    ) -> Result<HistoryPage, Error> {
        let limit = page_size(
            query.max_results,
            HISTORY_PAGE_EVENTS_DEFAULT,
            HISTORY_PAGE_EVENTS_MAX,
        )?;
        let summary = self.requested_summary(execution_arn)?;
        let total = summary.event_count as usize;
        let direction = if query.reverse_order { "r" } else { "f" };
        let offset = match &query.next_token {
            Some(token) => token
                .strip_prefix(direction)
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|&n| n <= total)
                .ok_or_else(|| Error::InvalidToken {
                    token: token.clone(),
                })?,
            None => 0,
        };
        let end = offset.saturating_add(limit).min(total);
        // The ids the page shows, lowest first.
        let (low, high) = if query.reverse_order {
            (total - end + 1, total - offset)
        } else {
            (offset + 1, end)
        };
        let id = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        // Rendering a page needs the execution's input text (event 1's, kept when the caller
        // wrote it otherwise than compactly) and, when there is one, the first
        // `MapStateExited` before the page: from there on the input renders compactly. Only a
        // definition with a Map state has one; then every event from the first to the page's
        // highest is read, else only the page's records.
        let started = self.inner.store.event(execution_arn, EventId(1))?;
        let input_text = started
            .as_ref()
            .and_then(|started| input_text_of(std::slice::from_ref(started)));
        let may_map = input_text.is_some()
            && self
                .definition_at(summary.machine_lsn)
                .map_or(true, |definition| may_have_map_state(&definition.source));
        let (mut page, first_map_exit_id) = if may_map {
            let mut events = self
                .inner
                .store
                .history_range(execution_arn, 1..=id(high))?;
            let first_map_exit_id = events
                .iter()
                .find(|e| matches!(e.details, EventDetails::MapStateExited(_)))
                .map(|e| e.id.0);
            events.drain(..(low - 1).min(events.len()));
            (events, first_map_exit_id)
        } else {
            let events = self
                .inner
                .store
                .history_range(execution_arn, id(low)..=id(high))?;
            (events, None)
        };
        if query.reverse_order {
            page.reverse();
        }
        Ok(HistoryPage {
            events: page,
            next_token: (end < total).then(|| format!("{direction}{end}")),
            include_execution_data: query.include_execution_data,
            input_text,
            first_map_exit_id,
        })
    }

    /// Blocks until the execution is closed, then describes it.
    pub fn wait_until_closed(&self, execution_arn: &str) -> Result<ExecutionDescription, Error> {
        // Closed in the log, and its close performed (the slot leaves `open` last): a redrive
        // right after the return finds nothing of the closed run in the way.
        let closed = || -> Result<bool, Error> {
            Ok(self.requested_summary(execution_arn)?.status.is_closed()
                && !self.inner.open.lock().contains_key(execution_arn))
        };
        // Closed already (a start that ran to its end): nothing to wait for, no registration
        // (it takes the engine-wide waiters' lock twice).
        if closed()? {
            return self.describe_execution(execution_arn);
        }
        // Registered before the check: a close between the check and the wait still wakes it.
        let registration = self.inner.close_waiters.register(execution_arn);
        loop {
            if closed()? {
                drop(registration);
                return self.describe_execution(execution_arn);
            }
            registration.wait();
        }
    }

    /// Blocks until every handler call spawned so far has answered and its answer is recorded,
    /// and every mocked answer too (tasks parked for want of a handler do not count). With a manual clock and no background
    /// timers, the engine is then quiet until the next `run_due_timers`.
    pub fn wait_idle(&self) {
        let mut counts = self.inner.in_flight.lock();
        while counts.in_flight > 0 {
            self.inner.in_flight_changed.wait(&mut counts);
        }
    }

    /// How many handler answers (successes, failures, panics) and mocked answers (see
    /// [`mocks`]) have been handed to their executions since open, stale ones included
    /// (cancelled calls give no answer).
    pub fn answers_recorded(&self) -> u64 {
        self.inner.in_flight.lock().recorded
    }

    /// Blocks until `answers_recorded() >= count` (for tests that answer tasks one by one).
    pub fn wait_answers_recorded(&self, count: u64) {
        let mut counts = self.inner.in_flight.lock();
        while counts.recorded < count {
            self.inner.in_flight_changed.wait(&mut counts);
        }
    }

    /// Fires every timer due at the clock's current time; returns how many fired.
    pub fn run_due_timers(&self) -> usize {
        kernel::run_due_timers(self)
    }

    /// The due time of the earliest armed timer, if any.
    pub fn next_timer_due_ms(&self) -> Option<u64> {
        let timer = self.inner.timers.lock().peek().map(|t| t.0.due_ms);
        let backend = self.inner.backends.next_due_ms(self);
        timer.into_iter().chain(backend).min()
    }

    /// How many timers are armed (timers of closed executions are dropped in batches, so this
    /// may exceed the open executions' own timers for a while).
    pub fn armed_timer_count(&self) -> usize {
        self.inner.timers.lock().len()
    }

    /// How many executions are open.
    pub fn open_execution_count(&self) -> usize {
        self.inner.open.lock().len()
    }

    /// The records that do not read although the log's checksum held (a software bug, not
    /// damage on the disk), in LSN order: the first of each damaged execution's (calls on it
    /// answer [`Error::ExecutionDamaged`]), and records that name no execution (a state
    /// machine's, a catalog record). Found by `open`, or later by a read. Empty in a healthy log.
    pub fn damaged_executions(&self) -> Vec<store::DamagedRecord> {
        self.inner.store.damaged()
    }

    /// Failures of background work (a handler's answer that could not be recorded, a timer that
    /// could not fire), oldest first. Empty in a healthy engine.
    pub fn background_errors(&self) -> Vec<String> {
        self.inner.background_errors.lock().clone()
    }

    /// The clock the engine runs on.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.inner.options.clock
    }

    /// `arn:aws:states:<region>:<account>:stateMachine:<name>`.
    pub fn state_machine_arn(&self, name: &str) -> String {
        let options = &self.inner.options;
        // Joined, not formatted: every start names its machine (formatting was a measurable
        // share of a start).
        [
            "arn:aws:states:",
            &options.region,
            ":",
            &options.account,
            ":stateMachine:",
            name,
        ]
        .concat()
    }

    /// `arn:aws:states:<region>:<account>:execution:<machine>:<name>`.
    pub fn execution_arn(&self, machine: &str, name: &str) -> String {
        let options = &self.inner.options;
        [
            "arn:aws:states:",
            &options.region,
            ":",
            &options.account,
            ":execution:",
            machine,
            ":",
            name,
        ]
        .concat()
    }

    pub(crate) fn default_role_arn(&self) -> String {
        self.inner
            .options
            .role_arn_default
            .clone()
            .unwrap_or_else(|| {
                format!(
                    "arn:aws:iam::{}:role/statelog-execution",
                    self.inner.options.account
                )
            })
    }

    fn machine_description(&self, machine: &Machine) -> MachineDescription {
        MachineDescription {
            state_machine_arn: self.state_machine_arn(&machine.name),
            name: machine.name.clone(),
            definition: machine.definition.to_string(),
            role_arn: machine.role_arn.clone(),
            created_ms: machine.created_ms,
            updated_ms: machine.updated_ms,
            revision_id: catalog::revision_id(machine),
            machine_type: machine.machine_type,
            description: None,
            // A stored definition always compiles (it was validated when created); a failure
            // here is reported where the definition is run, not by a description.
            variable_references: self
                .definition_at(machine.lsn)
                .map(|definition| definition.variable_references())
                .unwrap_or_default(),
        }
    }

    /// The live machine `state_machine` names: a bare name (the embedded API), or a state
    /// machine ARN of this engine's region and account (another's is `StateMachineDoesNotExist`).
    fn live_machine(&self, state_machine: &str) -> Result<Arc<Machine>, Error> {
        let name = if state_machine.starts_with("arn:") {
            let arn = Arn::parse_as(state_machine, &[ResourceType::StateMachine])?;
            self.is_own(&arn).then_some(arn.resource.name())
        } else {
            Some(state_machine)
        };
        name.and_then(|name| self.inner.store.machine(name))
            .ok_or_else(|| Error::StateMachineDoesNotExist {
                state_machine: state_machine.to_string(),
            })
    }

    /// Whether `arn` lies in this engine's partition, region and account.
    fn is_own(&self, arn: &Arn<'_>) -> bool {
        arn.is_in(&self.inner.options.region, &self.inner.options.account)
    }

    /// The summary of the execution an API caller names: `InvalidArn` unless `execution_arn` is
    /// an execution ARN. The store keys executions by their whole ARN, so one of another region
    /// or account matches nothing (`ExecutionDoesNotExist`); a data directory served before
    /// under another region still finds its executions (`statelog history` opens any).
    fn requested_summary(&self, execution_arn: &str) -> Result<ExecutionSummary, Error> {
        Arn::parse_as(execution_arn, &[ResourceType::Execution])?;
        self.summary(execution_arn)
    }

    fn summary(&self, execution_arn: &str) -> Result<ExecutionSummary, Error> {
        if let Some(damage) = self.inner.store.damage_of(execution_arn) {
            return Err(Error::ExecutionDamaged {
                execution_arn: execution_arn.to_string(),
                lsn: damage.lsn.0,
                reason: damage.reason.clone(),
            });
        }
        self.inner
            .store
            .execution(execution_arn)
            .filter(|summary| !self.is_expired(summary))
            .ok_or_else(|| Error::ExecutionDoesNotExist {
                execution_arn: execution_arn.to_string(),
            })
    }

    pub(crate) fn definition_at(&self, machine_lsn: Lsn) -> Result<Arc<StateMachine>, Error> {
        if let Some(definition) = self.inner.definitions.lock().get(&machine_lsn) {
            return Ok(definition.clone());
        }
        let machine = self.inner.store.machine_at(machine_lsn).ok_or_else(|| {
            Error::StateMachineDoesNotExist {
                state_machine: format!("created at lsn {machine_lsn}"),
            }
        })?;
        let compiled = parse_definition(&machine.definition, &validate::options())
            .map_err(|diagnostics| Error::InvalidDefinition { diagnostics })?;
        let compiled = Arc::new(compiled);
        self.inner
            .definitions
            .lock()
            .insert(machine_lsn, compiled.clone());
        Ok(compiled)
    }
}

/// The execution input and the text its caller wrote, from the `ExecutionStarted` in `events`.
fn input_text_of(events: &[HistoryEvent]) -> Option<(Value, String)> {
    statelog_core::history::aws_json::input_text(events)
        .map(|(value, text)| (value.clone(), text.to_string()))
}

/// Whether a definition may hold a Map state: some object, at any depth, has `"Type": "Map"`.
/// A Parameters template that happens to hold that pair answers true too, which only costs a
/// history read a page could have skipped.
fn may_have_map_state(source: &Value) -> bool {
    match source {
        Value::Object(object) => {
            object.get("Type").and_then(Value::as_str) == Some("Map")
                || object.values().any(may_have_map_state)
        }
        Value::Array(items) => items.iter().any(may_have_map_state),
        _ => false,
    }
}

/// Reads a start's input: the value, and its text where that is not the value's compact form.
fn parse_input(input: &str) -> Result<(Value, Option<InputAsWritten>), Error> {
    if input.len() > PAYLOAD_SIZE_BYTES_MAX {
        return Err(Error::InvalidExecutionInput {
            reason: PayloadReason::TooLarge {
                size_bytes: input.len(),
                limit_bytes: PAYLOAD_SIZE_BYTES_MAX,
            },
        });
    }
    InputAsWritten::parse(input).map_err(|e| Error::InvalidExecutionInput {
        reason: PayloadReason::Unreadable(e),
    })
}

pub(crate) fn page_size(asked: usize, default: usize, max: usize) -> Result<usize, Error> {
    match asked {
        0 => Ok(default),
        n if n <= max => Ok(n),
        n => Err(Error::InvalidArgument {
            field: "maxResults",
            reason: ArgumentReason::PageSize { asked: n, max },
        }),
    }
}

/// Helpers of the engine's unit tests.
#[cfg(test)]
pub(crate) mod test_support {
    use super::Engine;

    /// The history of a one-Task machine whose handed-over task then succeeded.
    pub(crate) const ONE_TASK_SUCCEEDED: [&str; 8] = [
        "ExecutionStarted",
        "TaskStateEntered",
        "TaskScheduled",
        "TaskStarted",
        "TaskSubmitted",
        "TaskSucceeded",
        "TaskStateExited",
        "ExecutionSucceeded",
    ];

    /// The event types of `execution_arn`'s history, as the store reads them.
    pub(crate) fn types(engine: &Engine, execution_arn: &str) -> Vec<&'static str> {
        let events = engine.inner.store.history(execution_arn).expect("history");
        events.iter().map(|e| e.details.type_name()).collect()
    }

    /// How many records the engine's log holds (a commit of events is one record).
    pub(crate) fn records(engine: &Engine) -> usize {
        let mut count = 0;
        engine
            .inner
            .store
            .log()
            .scan(&mut |_, _, _| {
                count += 1;
                Ok(())
            })
            .expect("scan");
        count
    }
}
