//! map_runs: Distributed Map. A Map state in `DISTRIBUTED` mode records `MapRunStarted` and
//! waits for its Map Run as a task waits for its backend: the interpreter's
//! `Effect::InvokeTask` with the reserved resource `interpreter::MAP_RUN_RESOURCE`, served here
//! by [`MapRunBackend`]. The run reads its plan from the parent's folded state
//! (`interpreter::map_run_plan`: items, ItemSelector, ItemBatcher, tolerance, concurrency, the
//! child definition), starts one child execution per item (or batch) and answers the parent
//! with `TaskSucceeded` (the children's outputs, in item order) or `TaskFailed` (its error),
//! which the interpreter records as `MapRunSucceeded` / `MapRunFailed`. No child event is
//! written to the parent.
//!
//! Children are executions of the account, of a machine of their own named
//! `<parent machine>/<label>` (a catalog record made or updated at the run's start from the
//! parent's `ItemProcessor`; hidden from ListStateMachines): STANDARD children are durable,
//! listed and describable (`arn:...:execution:<machine>/<label>:<name>`); EXPRESS children run
//! in memory (`Engine::start_express_execution`'s path), nothing written per child.
//!
//! Durability: a child's name is derived from the Map Run's ARN and the child's index
//! (`naming::derived_name`), and children start in index order; a Map Run dispatched again
//! after a crash (recovery re-dispatches the parent's pending effects) finds each STANDARD child
//! it started before (`ExecutionAlreadyExists`) and waits for it or reads its outcome, so no
//! item's STANDARD child runs twice. EXPRESS children leave nothing of their own: the run
//! records their ends (`statelog_store::map_runs`, `ChildrenEnded`, grouped and unsynced,
//! `EndsBuffer`) and a run dispatched again takes the recorded ends instead of running those
//! children (`replay_recorded_ends`); a child holds its concurrency slot until its end is
//! appended, so a crash reruns at most `MaxConcurrency` of them (at-least-once, as AWS's
//! Express children are). The run's opening and each `UpdateMapRun` are records too (synced):
//! the parent of a run is found through the store's index, and a resumed run uses the latest
//! settings.
//!
//! Invariants: at most `MaxConcurrency` children run at once (0: `MAP_RUN_CONCURRENCY_MAX`);
//! what the run keeps per child is the running ones and the outputs needed for the result
//! (dropped once they exceed the payload limit: the run then fails with
//! `States.DataLimitExceeded`); which children ended is one bit per index (`ChildSet`), never
//! a per-child entry. Must not: write to the parent's history (the parent's events
//! are its own decisions through `commit_decision`), hold a slot lock across a child's start.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use serde_json::Value;

use super::backend::{AttemptKey, TaskBackend};
use super::versions::StartTarget;
use super::{Engine, Error, Inner, MachineType, ValidationReason};
use statelog_core::asl::ChildExecutionType;
use statelog_core::history::{EventDetails, HistoryEvent};
use statelog_core::interpreter::{self, MapRunPlan, TaskInvocation, Trigger};
use statelog_core::limits::{MAP_RUN_CONCURRENCY_MAX, PAYLOAD_SIZE_BYTES_MAX};
use statelog_items::{
    ChildResult, ChildStatus, ItemReaderSpec, ItemSource, ItemSources, ItemsError, ResultWriterSpec,
};

use statelog_store::map_runs::{
    ChildEnd as RecordedEnd, ChildEndStatus, MapRunRecord, MapRunSettings,
};

use crate::limits::{
    MAP_RUNS_KEPT_MAX, MAP_RUN_ENDS_FLUSH_INTERVAL_MS, MAP_RUN_ENDS_PER_RECORD_MAX,
    MAP_RUN_ENDS_RECORD_SIZE_BYTES_MAX, MAP_RUN_READ_SLICE_ITEMS_MAX,
};

/// The error a Map state fails with when its ItemReader does (AWS).
const ITEM_READER_FAILED: &str = "States.ItemReaderFailed";
/// The error a Map state fails with when its ResultWriter does (AWS).
const RESULT_WRITER_FAILED: &str = "States.ResultWriterFailed";

/// The error a Map Run fails with when its failures pass the tolerated threshold (AWS).
pub const EXCEED_TOLERATED_FAILURE_THRESHOLD: &str = "States.ExceedToleratedFailureThreshold";

/// How a Map Run stands (`DescribeMapRun.status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapRunStatus {
    /// Children are running.
    Running,
    /// Every child ended within the tolerated failures.
    Succeeded,
    /// Its failures passed the threshold, or it could not run.
    Failed,
    /// Its execution stopped, or its Map was aborted.
    Aborted,
}

impl MapRunStatus {
    /// The AWS name (`RUNNING`, `SUCCEEDED`, `FAILED`, `ABORTED`).
    pub fn aws_name(self) -> &'static str {
        match self {
            MapRunStatus::Running => "RUNNING",
            MapRunStatus::Succeeded => "SUCCEEDED",
            MapRunStatus::Failed => "FAILED",
            MapRunStatus::Aborted => "ABORTED",
        }
    }
}

/// `itemCounts` / `executionCounts` of a Map Run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MapRunCounts {
    /// Not started yet.
    pub pending: u64,
    /// Running.
    pub running: u64,
    /// Succeeded.
    pub succeeded: u64,
    /// Failed.
    pub failed: u64,
    /// Timed out.
    pub timed_out: u64,
    /// Aborted.
    pub aborted: u64,
    /// All of them.
    pub total: u64,
    /// Whose results were written (without a ResultWriter: those in the Map's output).
    pub results_written: u64,
}

/// `DescribeMapRun`.
#[derive(Debug, Clone, PartialEq)]
pub struct MapRunDescription {
    /// The Map Run's ARN.
    pub map_run_arn: String,
    /// The execution whose Map state started it.
    pub execution_arn: String,
    /// How it stands.
    pub status: MapRunStatus,
    /// When it started, ms since the epoch.
    pub start_ms: u64,
    /// When it ended, ms since the epoch.
    pub stop_ms: Option<u64>,
    /// `maxConcurrency` (0: as many as the engine allows).
    pub max_concurrency: u64,
    /// `toleratedFailurePercentage`.
    pub tolerated_failure_percentage: f64,
    /// `toleratedFailureCount`.
    pub tolerated_failure_count: u64,
    /// Items by status.
    pub item_counts: MapRunCounts,
    /// Child executions by status.
    pub execution_counts: MapRunCounts,
    /// How many times it was redriven.
    pub redrive_count: u32,
}

/// One entry of `ListMapRuns`.
#[derive(Debug, Clone, PartialEq)]
pub struct MapRunListItem {
    /// The execution whose Map state started it.
    pub execution_arn: String,
    /// The Map Run's ARN.
    pub map_run_arn: String,
    /// The child machine's ARN (`...:stateMachine:<machine>/<label>`).
    pub state_machine_arn: String,
    /// When it started, ms since the epoch.
    pub start_ms: u64,
    /// When it ended, ms since the epoch.
    pub stop_ms: Option<u64>,
}

/// One Map Run this engine runs or ran since it opened.
pub(crate) struct MapRun {
    arn: Arc<str>,
    /// How many times the run was redriven (`MapRunRedriven`).
    redrive_count: u32,
    attempt: AttemptKey,
    start_ms: u64,
    state: Mutex<RunState>,
    /// Wakes the run's driver: a change of `MaxConcurrency`, an abort.
    changed: tokio::sync::Notify,
}

struct RunState {
    status: MapRunStatus,
    stop_ms: Option<u64>,
    max_concurrency: u64,
    tolerated_failure_count: Option<u64>,
    tolerated_failure_percentage: Option<f64>,
    items: MapRunCounts,
    executions: MapRunCounts,
    /// The STANDARD children running now (stopped on an abort).
    running_children: HashSet<Arc<str>>,
    aborting: bool,
}

/// The engine's Map Runs: by ARN (running, and those ended since the engine opened, up to
/// `MAP_RUNS_KEPT_MAX`), by the
/// parent's attempt (running), and the STANDARD children whose close a run waits for.
#[derive(Default)]
pub(crate) struct MapRunTable {
    /// Wakes the EXPRESS runs waiting for a handler (`Engine::register_integration`).
    pub(crate) handlers_changed: Arc<tokio::sync::Notify>,
    runs: Mutex<crate::ArnMap<Arc<MapRun>>>,
    by_attempt: Mutex<HashMap<AttemptKey, Arc<MapRun>>>,
    children: Mutex<crate::ArnMap<tokio::sync::oneshot::Sender<()>>>,
    /// Serializes `UpdateMapRun`s, so the latest record is the settings in memory.
    updates: Mutex<()>,
    /// How many times a Map Run's parent was looked for by reading the parent machine's
    /// executions (a run the log has no `Opened` record of: an older build's).
    pub(crate) parent_scans: std::sync::atomic::AtomicU64,
}

/// The Map Runs as a task backend (see the module docs).
pub(crate) struct MapRunBackend;

impl TaskBackend for MapRunBackend {
    fn name(&self) -> &'static str {
        "map runs"
    }

    fn serves(&self, _engine: &Engine, invocation: &TaskInvocation) -> bool {
        invocation.resource == interpreter::MAP_RUN_RESOURCE
    }

    fn dispatch(&self, engine: &Engine, attempt: AttemptKey, invocation: TaskInvocation) {
        let map_run_arn = invocation.context["MapRun"]["Arn"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let weak = Arc::downgrade(&engine.inner);
        engine.inner.handle.spawn(async move {
            run(weak, attempt, map_run_arn).await;
        });
    }

    fn cancel(&self, engine: &Engine, attempt: &AttemptKey) {
        let Some(run) = engine.inner.map_runs.by_attempt.lock().remove(attempt) else {
            return;
        };
        let children: Vec<Arc<str>> = {
            let mut state = run.state.lock();
            state.aborting = true;
            if state.status == MapRunStatus::Running {
                state.status = MapRunStatus::Aborted;
                state.stop_ms = Some(engine.inner.options.clock.now_ms());
            }
            state.running_children.iter().cloned().collect()
        };
        run.changed.notify_one();
        stop_children(engine, children, "the Map Run was aborted");
    }

    fn execution_closed(&self, engine: &Engine, execution_arn: &str) {
        let mut children = engine.inner.map_runs.children.lock();
        // Most closes are of no Map Run's child: no hashing then.
        if children.is_empty() {
            return;
        }
        if let Some(waiter) = children.remove(execution_arn) {
            drop(children);
            let _ = waiter.send(());
        }
    }
}

/// Stops STANDARD children in the background, best effort (a failure is kept in
/// `background_errors`).
fn stop_children(engine: &Engine, children: Vec<Arc<str>>, cause: &'static str) {
    if children.is_empty() {
        return;
    }
    let weak = Arc::downgrade(&engine.inner);
    engine.inner.handle.spawn_blocking(move || {
        let Some(inner) = weak.upgrade() else { return };
        let engine = Engine { inner };
        for child in children {
            if let Err(error) = engine.stop_execution(&child, Some("States.Aborted"), Some(cause)) {
                engine.inner.background_errors.lock().push(format!(
                    "stopping the Map Run child {child} failed: {error}"
                ));
            }
        }
    });
}

/// How one child ended.
enum ChildOutcome {
    Succeeded(Value),
    Failed { error: String, cause: String },
    TimedOut,
    Aborted,
}

/// One child's end: its outcome, and its result as a `ResultWriter` writes it.
struct ChildEnd {
    outcome: ChildOutcome,
    result: Option<ChildResult>,
}

impl ChildEnd {
    fn without_result(outcome: ChildOutcome) -> Self {
        ChildEnd {
            outcome,
            result: None,
        }
    }
}

/// What the driver needs to start children, fixed at the run's start.
struct Children {
    plan: MapRunPlan,
    machine: Arc<statelog_core::asl::StateMachine>,
    map_run_arn: Arc<str>,
    /// The child machine's record.
    record: Arc<statelog_store::Machine>,
    /// The Task resources of the children's definition (outside nested Distributed Maps).
    resources: Vec<String>,
}

/// The Task resources of `states` and of their Parallel branches and inline Map processors.
fn task_resources(states: &statelog_core::asl::StateMap, out: &mut Vec<String>) {
    use statelog_core::asl::StateKind;
    for state in states {
        match &state.kind {
            StateKind::Task(task) if !out.contains(&task.resource.raw) => {
                out.push(task.resource.raw.clone());
            }
            StateKind::Parallel(parallel) => {
                for branch in &parallel.branches {
                    task_resources(&branch.states, out);
                }
            }
            StateKind::Map(map) if map.distributed.is_none() => {
                task_resources(&map.item_processor.states, out);
            }
            _ => {}
        }
    }
}

/// Waits until every Task resource of the EXPRESS children has a handler: a run dispatched by
/// recovery starts before the embedder registers its handlers, and an Express task with no
/// handler fails at once (`None`: the engine closed).
async fn handlers_ready(weak: &Weak<Inner>, children: &Children) -> Option<()> {
    loop {
        let inner = weak.upgrade()?;
        // Held without the engine: a wait never keeps a dropped engine alive.
        let changed = inner.map_runs.handlers_changed.clone();
        let notified = changed.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let missing = children
            .resources
            .iter()
            .any(|resource| inner.handlers.get(resource).is_none());
        drop(inner);
        if !missing {
            return Some(());
        }
        notified.await;
    }
}

/// Runs one Map Run to its end and answers its parent (nothing when the attempt was cancelled
/// or the engine closed).
async fn run(weak: Weak<Inner>, attempt: AttemptKey, map_run_arn: String) {
    let prepared = {
        let attempt = attempt.clone();
        let weak = weak.clone();
        tokio::task::spawn_blocking(move || {
            let inner = weak.upgrade()?;
            Some(prepare(&Engine { inner }, &attempt, &map_run_arn))
        })
        .await
    };
    let (run, children) = match prepared {
        Ok(Some(Ok(prepared))) => prepared,
        Ok(Some(Err(error))) => {
            answer(
                &weak,
                &attempt,
                Trigger::TaskFailed {
                    task_id: attempt.task,
                    error: "States.Runtime".to_string(),
                    cause: format!("the Map Run could not start: {error}"),
                },
            )
            .await;
            return;
        }
        Ok(None) | Err(_) => return,
    };
    let outcome = drive(&weak, &run, Arc::new(children)).await;
    let Some(trigger) = outcome else { return };
    {
        let mut state = run.state.lock();
        if state.status == MapRunStatus::Running {
            state.status = match trigger {
                Trigger::TaskSucceeded { .. } => MapRunStatus::Succeeded,
                _ => MapRunStatus::Failed,
            };
            state.stop_ms = weak.upgrade().map(|inner| inner.options.clock.now_ms());
        }
    }
    if let Some(inner) = weak.upgrade() {
        inner.map_runs.by_attempt.lock().remove(&attempt);
    }
    answer(&weak, &attempt, trigger).await;
}

/// Puts `run` in the table of runs by ARN; with `kept_max` runs there already, the ended ones
/// are dropped first, so the table holds the running runs and at most `kept_max` in all
/// otherwise (a dropped run is described from its parent's history).
fn admit(runs: &mut crate::ArnMap<Arc<MapRun>>, run: Arc<MapRun>, kept_max: usize) {
    if runs.len() >= kept_max {
        runs.retain(|_, kept| kept.state.lock().status == MapRunStatus::Running);
    }
    runs.insert(run.arn.clone(), run);
}

/// Drives the parent with the run's answer, off the runtime's workers.
async fn answer(weak: &Weak<Inner>, attempt: &AttemptKey, trigger: Trigger) {
    let weak = weak.clone();
    let parent = attempt.execution.clone();
    let _ = tokio::task::spawn_blocking(move || {
        let Some(inner) = weak.upgrade() else { return };
        Engine { inner }.drive_in_background(&parent, trigger);
    })
    .await;
}

/// The run's plan from its parent's folded state, its child machine made or updated, and the
/// run registered (or found again: a dispatch repeated in this process).
fn prepare(
    engine: &Engine,
    attempt: &AttemptKey,
    map_run_arn: &str,
) -> Result<(Arc<MapRun>, Children), Error> {
    let slot = engine
        .inner
        .open
        .lock()
        .get(&attempt.execution)
        .cloned()
        .ok_or_else(|| Error::ExecutionDoesNotExist {
            execution_arn: attempt.execution.to_string(),
        })?;
    let plan = {
        let guard = slot.state.lock();
        interpreter::map_run_plan(&guard.definition, &guard.execution, attempt.task)?
    };
    let start_ms = engine.inner.options.clock.now_ms();
    let machine_name = child_machine_name(map_run_arn)
        .ok_or_else(|| Error::InvalidArn {
            arn: map_run_arn.to_string(),
            reason: super::ArnReason::NotAMapRun,
        })?
        .to_string();
    let machine = ensure_child_machine(engine, &machine_name, &plan)?;
    let definition = engine.definition_at(machine.lsn)?;
    // The run's record: written at its first dispatch (synced: DescribeMapRun finds its parent
    // by it), read again at a later one (a restart, a redrive) for the latest UpdateMapRun.
    let store = &engine.inner.store;
    let defined = MapRunSettings {
        max_concurrency: plan.max_concurrency,
        tolerated_failure_count: plan.tolerated_failure_count,
        tolerated_failure_percentage: plan.tolerated_failure_percentage,
    };
    let (start_ms, settings) = match store.map_run(map_run_arn) {
        Some(entry) => (
            entry.start_ms.unwrap_or(start_ms),
            entry.settings.unwrap_or(defined),
        ),
        None => {
            store.append_map_run(
                MapRunRecord::Opened {
                    map_run_arn: map_run_arn.to_string(),
                    execution_arn: attempt.execution.to_string(),
                    start_ms,
                    settings: defined,
                },
                true,
            )?;
            (start_ms, defined)
        }
    };
    // Items from the input are counted now; read ones as they are read.
    let (items_total, total) = match plan.item_reader {
        Some(_) => (0, 0),
        None => (plan.items.len() as u64, batches(&plan).len() as u64),
    };
    let run = Arc::new(MapRun {
        arn: Arc::from(map_run_arn),
        redrive_count: plan.redrive_count,
        attempt: attempt.clone(),
        start_ms,
        state: Mutex::new(RunState {
            status: MapRunStatus::Running,
            stop_ms: None,
            max_concurrency: settings.max_concurrency,
            tolerated_failure_count: settings.tolerated_failure_count,
            tolerated_failure_percentage: settings.tolerated_failure_percentage,
            items: MapRunCounts {
                pending: items_total,
                total: items_total,
                ..MapRunCounts::default()
            },
            executions: MapRunCounts {
                pending: total,
                total,
                ..MapRunCounts::default()
            },
            running_children: HashSet::new(),
            aborting: false,
        }),
        changed: tokio::sync::Notify::new(),
    });
    let table = &engine.inner.map_runs;
    admit(&mut table.runs.lock(), run.clone(), MAP_RUNS_KEPT_MAX);
    table.by_attempt.lock().insert(attempt.clone(), run.clone());
    let map_run_arn = run.arn.clone();
    let mut resources = Vec::new();
    if plan.execution_type == ChildExecutionType::Express {
        task_resources(&definition.states, &mut resources);
    }
    Ok((
        run,
        Children {
            plan,
            machine: definition,
            map_run_arn,
            record: machine,
            resources,
        },
    ))
}

/// `<parent machine>/<label>` of `arn:...:mapRun:<parent machine>/<label>:<id>`.
pub(crate) fn child_machine_name(map_run_arn: &str) -> Option<&str> {
    let (_, rest) = map_run_arn.split_once(":mapRun:")?;
    let (name, _id) = rest.rsplit_once(':')?;
    name.contains('/').then_some(name)
}

/// The child machine of the run: created, or updated when the parent's `ItemProcessor`
/// changed since it was made.
fn ensure_child_machine(
    engine: &Engine,
    name: &str,
    plan: &MapRunPlan,
) -> Result<Arc<statelog_store::Machine>, Error> {
    let definition =
        serde_json::to_string(&plan.child_definition).map_err(|source| Error::NotRendered {
            what: "a Map Run's child definition",
            source,
        })?;
    let machine_type = match plan.execution_type {
        ChildExecutionType::Standard => MachineType::Standard,
        ChildExecutionType::Express => MachineType::Express,
    };
    let store = &engine.inner.store;
    let now_ms = engine.inner.options.clock.now_ms();
    match store.machine(name) {
        Some(existing) if &*existing.definition == definition.as_str() => {
            if existing.machine_type != machine_type {
                return Err(Error::StateMachineTypeNotSupported {
                    state_machine: engine.state_machine_arn(name),
                    machine_type: existing.machine_type,
                });
            }
            Ok(existing)
        }
        Some(existing) => {
            let _changes = engine.inner.machine_changes.write();
            Ok(store.update_machine(name, &definition, &existing.role_arn, now_ms)?)
        }
        None => {
            let role = engine.default_role_arn();
            match store.create_machine(name, &definition, &role, machine_type, now_ms) {
                Ok(machine) => Ok(machine),
                // Another run of the same Map made it first.
                Err(statelog_store::Error::MachineExists { .. }) => {
                    store
                        .machine(name)
                        .ok_or_else(|| Error::StateMachineDoesNotExist {
                            state_machine: name.to_string(),
                        })
                }
                Err(error) => Err(error.into()),
            }
        }
    }
}

/// The children's item ranges of items from the input: one item each, or the `ItemBatcher`'s
/// batches (see [`BatchRule`]).
fn batches(plan: &MapRunPlan) -> Vec<Range<usize>> {
    let rule = BatchRule::of(plan);
    let mut out = Vec::new();
    let mut start = 0;
    let mut bytes = 0u64;
    for (index, item) in plan.items.iter().enumerate() {
        let size = rule.size_of(item);
        if rule.full(index - start, bytes, size) {
            out.push(start..index);
            start = index;
            bytes = 0;
        }
        bytes += size;
    }
    if start < plan.items.len() {
        out.push(start..plan.items.len());
    }
    out
}

/// How items are grouped into children: one each without an `ItemBatcher`, else at most
/// `MaxItemsPerBatch` items and `MaxInputBytesPerBatch` bytes of items (at least one item).
#[derive(Clone, Copy)]
struct BatchRule {
    max_items: usize,
    max_bytes: Option<u64>,
}

impl BatchRule {
    fn of(plan: &MapRunPlan) -> Self {
        BatchRule {
            max_items: match plan.batched {
                false => 1,
                true => plan
                    .max_items_per_batch
                    .filter(|&n| n > 0)
                    .map_or(usize::MAX, |n| n as usize),
            },
            max_bytes: plan.max_input_bytes_per_batch.filter(|&n| n > 0),
        }
    }

    /// The bytes an item counts for (only measured under a byte limit).
    fn size_of(&self, item: &Value) -> u64 {
        match self.max_bytes {
            Some(_) => serde_json::to_vec(item).map_or(0, |v| v.len() as u64 + 1),
            None => 0,
        }
    }

    /// Whether a batch of `items` items and `bytes` bytes is full before an item of `size`.
    fn full(&self, items: usize, bytes: u64, size: u64) -> bool {
        items >= self.max_items
            || self
                .max_bytes
                .is_some_and(|max| items > 0 && bytes + size > max)
    }
}

/// The input of a child over `items` (the first at item index `first`): the selected item, or
/// `{"Items": [...], "BatchInput": ...}` for a batch.
fn child_input(plan: &MapRunPlan, first: usize, items: Vec<Value>) -> Result<Value, ChildOutcome> {
    let mut selected = Vec::with_capacity(items.len());
    for (offset, item) in items.into_iter().enumerate() {
        let input =
            plan.selected_input(item, first + offset)
                .map_err(|error| ChildOutcome::Failed {
                    error: error.error.unwrap_or_default(),
                    cause: error.cause.unwrap_or_default(),
                })?;
        selected.push(input);
    }
    if !plan.batched {
        return Ok(selected.pop().unwrap_or(Value::Null));
    }
    let mut input = serde_json::Map::new();
    input.insert("Items".into(), Value::Array(selected));
    if let Some(batch_input) = &plan.batch_input {
        input.insert("BatchInput".into(), batch_input.clone());
    }
    Ok(Value::Object(input))
}

/// Where the children's items come from, one child's at a time: the input's items (batched
/// up front), or an `ItemReader`'s cursor read in slices (memory: one slice).
enum Feed {
    Input {
        batches: Vec<Range<usize>>,
        next: usize,
    },
    Reader {
        cursor: Box<dyn statelog_items::ItemCursor>,
        buffer: std::collections::VecDeque<Value>,
        next_item: usize,
        next_child: usize,
        done: bool,
    },
}

/// One child to start: its index, its input, how many items it covers.
struct NextChild {
    index: usize,
    input: Result<Value, ChildOutcome>,
    items: u64,
}

impl Feed {
    /// The next child, reading at most `slice` items when the buffer runs dry; `None` at the end.
    async fn next(
        &mut self,
        plan: &MapRunPlan,
        slice: usize,
    ) -> Result<Option<NextChild>, ItemsError> {
        match self {
            Feed::Input { batches, next } => {
                let Some(range) = batches.get(*next).cloned() else {
                    return Ok(None);
                };
                let index = *next;
                *next += 1;
                let items = plan.items[range.clone()].to_vec();
                Ok(Some(NextChild {
                    index,
                    items: range.len() as u64,
                    input: child_input(plan, range.start, items),
                }))
            }
            Feed::Reader {
                cursor,
                buffer,
                next_item,
                next_child,
                done,
            } => {
                let rule = BatchRule::of(plan);
                let mut items = Vec::new();
                let mut bytes = 0u64;
                loop {
                    if buffer.is_empty() && !*done {
                        let read = cursor.next_slice(slice.max(1)).await?;
                        *done = read.is_empty();
                        buffer.extend(read);
                    }
                    let Some(item) = buffer.front() else { break };
                    let size = rule.size_of(item);
                    if rule.full(items.len(), bytes, size) {
                        break;
                    }
                    bytes += size;
                    items.extend(buffer.pop_front());
                }
                if items.is_empty() {
                    return Ok(None);
                }
                let first = *next_item;
                *next_item += items.len();
                let index = *next_child;
                *next_child += 1;
                Ok(Some(NextChild {
                    index,
                    items: items.len() as u64,
                    input: child_input(plan, first, items),
                }))
            }
        }
    }
}

/// The run's item feed: the input's batches, or the `ItemReader` opened at its first item.
async fn open_feed(weak: &Weak<Inner>, plan: &MapRunPlan) -> Result<Feed, ItemsError> {
    let Some(reader) = &plan.item_reader else {
        return Ok(Feed::Input {
            batches: batches(plan),
            next: 0,
        });
    };
    let spec = ItemReaderSpec::new(&reader.resource, &reader.arguments, reader.config.as_ref())?;
    let spec = match reader.max_items {
        Some(max_items) => spec.with_max_items(Some(max_items)),
        None => spec,
    };
    let sources = item_sources(weak, ITEM_READER_FAILED)?;
    let cursor = sources.open(&spec, 0).await?;
    Ok(Feed::Reader {
        cursor,
        buffer: std::collections::VecDeque::new(),
        next_item: 0,
        next_child: 0,
        done: false,
    })
}

/// The engine's item sources, or the typed error of a Map Run that needs them without any
/// (`error`: the reader's or the writer's).
fn item_sources(weak: &Weak<Inner>, error: &'static str) -> Result<ItemSources, ItemsError> {
    let (resource, access) = match error {
        ITEM_READER_FAILED => ("ItemReader", statelog_items::Access::Read),
        _ => ("ResultWriter", statelog_items::Access::Write),
    };
    weak.upgrade()
        .and_then(|inner| inner.options.item_sources.clone())
        .ok_or_else(|| ItemsError::InvalidArgument {
            resource: resource.to_string(),
            field: "EngineOptions::item_sources",
            expected:
                "an object store of the engine (statelog serve --objects-dir or --s3-endpoint)",
            access,
        })
}

/// The Map state's failure for an item or result error.
fn items_failure(task_id: statelog_core::history::EventId, error: &ItemsError) -> Trigger {
    Trigger::TaskFailed {
        task_id,
        error: error.error_name().to_string(),
        cause: error.cause(),
    }
}

/// The children a resumed run does not start again: those whose end its records hold. One bit
/// per child index (125 KB per million children), never a per-child entry.
#[derive(Default)]
struct ChildSet {
    words: Vec<u64>,
}

impl ChildSet {
    /// Adds `index`; false when it was there already.
    fn insert(&mut self, index: usize) -> bool {
        let (word, bit) = (index / 64, index % 64);
        if self.words.len() <= word {
            self.words.resize(word + 1, 0);
        }
        let had = self.words[word] & (1 << bit) != 0;
        self.words[word] |= 1 << bit;
        !had
    }

    fn contains(&self, index: usize) -> bool {
        self.words
            .get(index / 64)
            .is_some_and(|word| word & (1 << (index % 64)) != 0)
    }
}

/// What the run collects of its children's ends for its answer: the ResultWriter's sink, or
/// the outputs in item order (dropped once past the payload limit), and its failed items.
struct Collected {
    sink: Option<statelog_items::ResultSink>,
    results: Vec<Value>,
    results_bytes: usize,
    too_large: bool,
    failed_items: u64,
}

/// One child's end as the run counts it.
enum Counted {
    /// Within the tolerance: its status and its place in the output.
    Kept(ChildStatus, Value),
    /// The failures passed the threshold.
    OverThreshold,
}

impl Collected {
    /// Counts one child's end in the run's state and, within the tolerance, puts its result in
    /// the output (`result`: the ResultWriter's record of it).
    async fn collect(
        &mut self,
        run: &Arc<MapRun>,
        index: usize,
        items: u64,
        outcome: ChildOutcome,
        result: Option<ChildResult>,
    ) -> Result<Counted, ItemsError> {
        let counted = {
            let mut state = run.state.lock();
            match outcome {
                ChildOutcome::Succeeded(output) => {
                    state.executions.succeeded += 1;
                    state.items.succeeded += items;
                    Counted::Kept(ChildStatus::Succeeded, output)
                }
                failure => {
                    let place = match failure {
                        ChildOutcome::TimedOut => {
                            state.executions.timed_out += 1;
                            state.items.timed_out += items;
                            Value::Null
                        }
                        ChildOutcome::Aborted => {
                            state.executions.aborted += 1;
                            state.items.aborted += items;
                            Value::Null
                        }
                        ChildOutcome::Failed { error, cause } => {
                            state.executions.failed += 1;
                            state.items.failed += items;
                            // A tolerated failure's place in the output holds its error.
                            serde_json::json!({ "Error": error, "Cause": cause })
                        }
                        ChildOutcome::Succeeded(_) => Value::Null,
                    };
                    self.failed_items += items;
                    // Items read so far count as the total: a reader's is not known before.
                    let total = state.items.total;
                    if exceeds_tolerance(&state, self.failed_items, total) {
                        state.aborting = true;
                        state.status = MapRunStatus::Failed;
                        Counted::OverThreshold
                    } else {
                        Counted::Kept(ChildStatus::Failed, place)
                    }
                }
            }
        };
        let Counted::Kept(status, place) = &counted else {
            return Ok(counted);
        };
        if let Some(sink) = self.sink.as_mut() {
            if let Some(child) = result {
                sink.write(*status, vec![child]).await?;
                let mut state = run.state.lock();
                state.items.results_written += items;
                state.executions.results_written += 1;
            }
            return Ok(counted);
        }
        if !self.too_large {
            self.results_bytes += serde_json::to_vec(place).map_or(0, |v| v.len()) + 1;
            if self.results.len() < index + 1 {
                self.results.resize(index + 1, Value::Null);
            }
            self.results[index] = place.clone();
            let mut state = run.state.lock();
            state.items.results_written += items;
            state.executions.results_written += 1;
            if self.results_bytes > PAYLOAD_SIZE_BYTES_MAX {
                self.too_large = true;
                self.results = Vec::new();
            }
        }
        Ok(counted)
    }
}

/// The EXPRESS children's ends not appended yet. A child counts against the run's concurrency
/// until its end is in the log (`EndsBuffer::len` + running <= MaxConcurrency), so a crash
/// reruns at most MaxConcurrency items whose end was written; the buffer is appended (unsynced)
/// once it holds `batch` ends or [`MAP_RUN_ENDS_RECORD_SIZE_BYTES_MAX`] bytes, after
/// [`MAP_RUN_ENDS_FLUSH_INTERVAL_MS`], and before the run answers.
struct EndsBuffer {
    ends: Vec<RecordedEnd>,
    size_bytes: usize,
    /// When the oldest end waiting must be appended.
    due: Option<tokio::time::Instant>,
}

impl EndsBuffer {
    fn new() -> Self {
        EndsBuffer {
            ends: Vec::new(),
            size_bytes: 0,
            due: None,
        }
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    /// How many ends make a record for a run of concurrency `limit`: a quarter of it (at least
    /// one, at most [`MAP_RUN_ENDS_PER_RECORD_MAX`]), so waiting ends never hold back more than
    /// a quarter of the run's concurrency.
    fn batch(limit: usize) -> usize {
        (limit / 4).clamp(1, MAP_RUN_ENDS_PER_RECORD_MAX)
    }

    fn push(&mut self, end: RecordedEnd) {
        self.size_bytes += end.execution_arn.len()
            + [&end.input, &end.output, &end.error, &end.cause]
                .iter()
                .map(|text| text.as_ref().map_or(0, String::len))
                .sum::<usize>();
        self.ends.push(end);
        self.due.get_or_insert_with(|| {
            tokio::time::Instant::now()
                + std::time::Duration::from_millis(MAP_RUN_ENDS_FLUSH_INTERVAL_MS)
        });
    }

    fn full(&self, limit: usize) -> bool {
        self.ends.len() >= Self::batch(limit)
            || self.size_bytes >= MAP_RUN_ENDS_RECORD_SIZE_BYTES_MAX
    }

    /// Appends the waiting ends as one unsynced record (the parent's answer, a synced commit,
    /// makes it durable at the latest). A failed append is kept in `background_errors`: its
    /// children only run again after a crash, as Express children may.
    async fn flush(&mut self, weak: &Weak<Inner>, run: &Arc<MapRun>) {
        if self.ends.is_empty() {
            return;
        }
        let record = MapRunRecord::ChildrenEnded {
            map_run_arn: run.arn.to_string(),
            execution_arn: run.attempt.execution.to_string(),
            redrive_count: run.redrive_count,
            ends: std::mem::take(&mut self.ends),
        };
        self.size_bytes = 0;
        self.due = None;
        let weak = weak.clone();
        let _ = tokio::task::spawn_blocking(move || {
            let Some(inner) = weak.upgrade() else { return };
            if let Err(error) = inner.store.append_map_run(record, false) {
                inner.background_errors.lock().push(format!(
                    "recording a Map Run's children's ends failed: {error}"
                ));
            }
        })
        .await;
    }
}

/// The record of an EXPRESS child's end.
fn recorded_end(index: usize, items: u64, end: &ChildEnd) -> RecordedEnd {
    let status = match &end.outcome {
        ChildOutcome::Succeeded(_) => ChildEndStatus::Succeeded,
        ChildOutcome::Failed { .. } => ChildEndStatus::Failed,
        ChildOutcome::TimedOut => ChildEndStatus::TimedOut,
        ChildOutcome::Aborted => ChildEndStatus::Aborted,
    };
    match &end.result {
        Some(result) => RecordedEnd {
            child_index: index as u64,
            item_count: items,
            status,
            execution_arn: result.execution_arn.clone(),
            input: Some(result.input.clone()),
            output: result.output.clone(),
            error: result.error.clone(),
            cause: result.cause.clone(),
            start_ms: result.start_date_ms,
            stop_ms: result.stop_date_ms.unwrap_or(result.start_date_ms),
        },
        // It never started (its input or its start failed).
        None => {
            let (error, cause) = match &end.outcome {
                ChildOutcome::Failed { error, cause } => (Some(error.clone()), Some(cause.clone())),
                _ => (None, None),
            };
            RecordedEnd {
                child_index: index as u64,
                item_count: items,
                status,
                execution_arn: String::new(),
                input: None,
                output: None,
                error,
                cause,
                start_ms: 0,
                stop_ms: 0,
            }
        }
    }
}

/// A recorded end as the run's outcome and ResultWriter record of the child.
fn recorded_child(children: &Children, machine_arn: &str, end: RecordedEnd) -> ChildEnd {
    let outcome = match end.status {
        ChildEndStatus::Succeeded => ChildOutcome::Succeeded(
            end.output
                .as_deref()
                .and_then(|text| serde_json::from_str(text).ok())
                .unwrap_or(Value::Null),
        ),
        ChildEndStatus::Failed => ChildOutcome::Failed {
            error: end.error.clone().unwrap_or_default(),
            cause: end.cause.clone().unwrap_or_default(),
        },
        ChildEndStatus::TimedOut => ChildOutcome::TimedOut,
        ChildEndStatus::Aborted => ChildOutcome::Aborted,
    };
    let result = (!end.execution_arn.is_empty()).then(|| ChildResult {
        execution_arn: end.execution_arn,
        name: child_name(&children.map_run_arn, end.child_index as usize),
        state_machine_arn: machine_arn.to_string(),
        status: match end.status {
            ChildEndStatus::Succeeded => statelog_items::ExecutionStatus::Succeeded,
            ChildEndStatus::Failed => statelog_items::ExecutionStatus::Failed,
            ChildEndStatus::TimedOut => statelog_items::ExecutionStatus::TimedOut,
            ChildEndStatus::Aborted => statelog_items::ExecutionStatus::Aborted,
        },
        input: end.input.unwrap_or_default(),
        output: end.output,
        error: end.error,
        cause: end.cause,
        start_date_ms: end.start_ms,
        stop_date_ms: Some(end.stop_ms),
        redrive_count: 0,
        redrive_status: statelog_items::RedriveStatus::NotRedrivable,
        redrive_status_reason: None,
    });
    ChildEnd { outcome, result }
}

/// Takes the EXPRESS children's ends the run's records hold (a run dispatched again after a
/// restart, or redriven) as if they had just ended: counted, and their results in the output.
/// A redriven run keeps only the succeeded ends of earlier runs (the others run again) and
/// every end of its own redrive; the first end of an index wins. One record in memory at a
/// time. `Err`: the parent's answer (the failures passed the threshold, a ResultWriter or the
/// log failed).
async fn replay_recorded_ends(
    weak: &Weak<Inner>,
    run: &Arc<MapRun>,
    children: &Children,
    collected: &mut Collected,
    recorded: &mut ChildSet,
) -> Result<(), Option<Trigger>> {
    let task_id = run.attempt.task;
    let reads = children.plan.item_reader.is_some();
    let machine_arn = {
        let inner = weak.upgrade().ok_or(None)?;
        Engine { inner }.state_machine_arn(&children.record.name)
    };
    let mut position = 0;
    loop {
        let read = {
            let weak = weak.clone();
            let arn = run.arn.clone();
            tokio::task::spawn_blocking(move || {
                let inner = weak.upgrade()?;
                Some(inner.store.map_run_children_ended(&arn, position))
            })
            .await
            .ok()
            .flatten()
            .ok_or(None)?
        };
        let (redrive_count, ends) = match read {
            Ok(Some(record)) => record,
            Ok(None) => return Ok(()),
            Err(error) => {
                return Err(Some(Trigger::TaskFailed {
                    task_id,
                    error: "States.Runtime".to_string(),
                    cause: format!("the Map Run's recorded children do not read: {error}"),
                }))
            }
        };
        position += 1;
        for end in ends {
            let counts =
                redrive_count == run.redrive_count || end.status == ChildEndStatus::Succeeded;
            let index = end.child_index as usize;
            if !counts || !recorded.insert(index) {
                continue;
            }
            let items = end.item_count;
            {
                let mut state = run.state.lock();
                if reads {
                    state.items.total += items;
                    state.executions.total += 1;
                } else {
                    state.items.pending = state.items.pending.saturating_sub(items);
                    state.executions.pending = state.executions.pending.saturating_sub(1);
                }
            }
            let child = recorded_child(children, &machine_arn, end);
            match collected
                .collect(run, index, items, child.outcome, child.result)
                .await
            {
                Ok(Counted::Kept(..)) => {}
                Ok(Counted::OverThreshold) => return Err(Some(over_threshold(task_id))),
                Err(error) => return Err(Some(items_failure(task_id, &error))),
            }
        }
    }
}

/// The parent's answer when the run's failures passed its tolerated threshold.
fn over_threshold(task_id: statelog_core::history::EventId) -> Trigger {
    Trigger::TaskFailed {
        task_id,
        error: EXCEED_TOLERATED_FAILURE_THRESHOLD.to_string(),
        cause: "The specified tolerated failure threshold was exceeded".to_string(),
    }
}

/// Starts the children, at most `MaxConcurrency` at once, until all ended or the failures pass
/// the threshold; the parent's answer (`None`: aborted, or the engine closed). EXPRESS
/// children's ends are recorded (`EndsBuffer`) and, when the run is dispatched again, taken
/// from the records instead of run again (`replay_recorded_ends`).
async fn drive(weak: &Weak<Inner>, run: &Arc<MapRun>, children: Arc<Children>) -> Option<Trigger> {
    let plan = &children.plan;
    let task_id = run.attempt.task;
    let mut feed = match open_feed(weak, plan).await {
        Ok(feed) => feed,
        Err(error) => return Some(items_failure(task_id, &error)),
    };
    let sink = match &plan.result_writer {
        None => None,
        Some(writer) => {
            let opened = async {
                let spec = ResultWriterSpec::new(
                    &writer.resource,
                    &writer.arguments,
                    writer.config.as_ref(),
                )?;
                let sources = item_sources(weak, RESULT_WRITER_FAILED)?;
                sources.stores().result_writer(&spec, &run.arn).await
            }
            .await;
            match opened {
                Ok(sink) => Some(sink),
                Err(error) => return Some(items_failure(task_id, &error)),
            }
        }
    };
    let mut collected = Collected {
        sink,
        results: Vec::new(),
        results_bytes: 0,
        too_large: false,
        failed_items: 0,
    };
    let express = plan.execution_type == ChildExecutionType::Express;
    let mut recorded = ChildSet::default();
    if express {
        if let Err(answer) =
            replay_recorded_ends(weak, run, &children, &mut collected, &mut recorded).await
        {
            stop_running(weak, run, "the Map Run could not resume");
            if let Some(sink) = collected.sink.take() {
                let _ = sink.abort().await;
            }
            return answer;
        }
    }
    let mut ends = EndsBuffer::new();
    let reads = plan.item_reader.is_some();
    let mut exhausted = false;
    let mut in_flight = tokio::task::JoinSet::new();
    loop {
        let (limit, aborting) = {
            let state = run.state.lock();
            let limit = match state.max_concurrency {
                0 => MAP_RUN_CONCURRENCY_MAX,
                n => n.min(MAP_RUN_CONCURRENCY_MAX),
            };
            (limit as usize, state.aborting)
        };
        if aborting {
            in_flight.abort_all();
            ends.flush(weak, run).await;
            if let Some(sink) = collected.sink.take() {
                let _ = sink.abort().await;
            }
            return None;
        }
        if !ends.ends.is_empty()
            && (ends.full(limit)
                || in_flight.is_empty()
                || ends
                    .due
                    .is_some_and(|due| due <= tokio::time::Instant::now()))
        {
            ends.flush(weak, run).await;
        }
        while !exhausted && in_flight.len() + ends.len() < limit {
            let room = limit - in_flight.len() - ends.len();
            let next = match feed
                .next(plan, room.min(MAP_RUN_READ_SLICE_ITEMS_MAX))
                .await
            {
                Ok(next) => next,
                Err(error) => {
                    in_flight.abort_all();
                    ends.flush(weak, run).await;
                    stop_running(weak, run, "the Map Run's ItemReader failed");
                    return Some(items_failure(task_id, &error));
                }
            };
            let Some(next) = next else {
                exhausted = true;
                break;
            };
            // Its end is recorded: its result is in the output already.
            if recorded.contains(next.index) {
                continue;
            }
            {
                let mut state = run.state.lock();
                if reads {
                    state.items.total += next.items;
                    state.executions.total += 1;
                } else {
                    state.items.pending -= next.items;
                    state.executions.pending -= 1;
                }
                state.executions.running += 1;
                state.items.running += next.items;
            }
            let weak = weak.clone();
            let children = children.clone();
            let run = run.clone();
            in_flight.spawn(async move {
                let end = match next.input {
                    Ok(input) => run_child(&weak, &run, &children, next.index, input).await,
                    Err(outcome) => Some(ChildEnd::without_result(outcome)),
                };
                (next.index, next.items, end)
            });
        }
        if in_flight.is_empty() {
            break;
        }
        let flush_due = ends.due;
        let joined = tokio::select! {
            joined = in_flight.join_next() => joined,
            _ = run.changed.notified() => continue,
            _ = async {
                match flush_due {
                    Some(due) => tokio::time::sleep_until(due).await,
                    None => std::future::pending().await,
                }
            } => continue,
        };
        let Some(Ok((index, items, end))) = joined else {
            // A child's task panicked or was cancelled: the engine is closing.
            return None;
        };
        let end = end?;
        if express {
            ends.push(recorded_end(index, items, &end));
        }
        {
            let mut state = run.state.lock();
            state.executions.running -= 1;
            state.items.running -= items;
        }
        match collected
            .collect(run, index, items, end.outcome, end.result)
            .await
        {
            Ok(Counted::Kept(..)) => {}
            Ok(Counted::OverThreshold) => {
                in_flight.abort_all();
                ends.flush(weak, run).await;
                stop_running(
                    weak,
                    run,
                    "the Map Run's tolerated failure threshold was exceeded",
                );
                if let Some(sink) = collected.sink.take() {
                    let _ = sink.abort().await;
                }
                return Some(over_threshold(task_id));
            }
            Err(error) => {
                in_flight.abort_all();
                ends.flush(weak, run).await;
                stop_running(weak, run, "the Map Run's ResultWriter failed");
                return Some(items_failure(task_id, &error));
            }
        }
    }
    ends.flush(weak, run).await;
    if let Some(sink) = collected.sink {
        return Some(match sink.finish().await {
            Ok(output) => Trigger::TaskSucceeded { task_id, output },
            Err(error) => items_failure(task_id, &error),
        });
    }
    if collected.too_large {
        return Some(Trigger::TaskFailed {
            task_id,
            error: "States.DataLimitExceeded".to_string(),
            cause: format!(
                "The Map Run's results exceed the maximum number of bytes service limit ({PAYLOAD_SIZE_BYTES_MAX}); write them with a ResultWriter."
            ),
        });
    }
    let mut results = collected.results;
    let total = run.state.lock().executions.total as usize;
    results.resize(total, Value::Null);
    Some(Trigger::TaskSucceeded {
        task_id,
        output: Value::Array(results),
    })
}

/// Stops the run's running STANDARD children (best effort, in the background).
fn stop_running(weak: &Weak<Inner>, run: &Arc<MapRun>, cause: &'static str) {
    let running: Vec<Arc<str>> = run.state.lock().running_children.iter().cloned().collect();
    if let Some(inner) = weak.upgrade() {
        stop_children(&Engine { inner }, running, cause);
    }
}

/// Whether `failed` failed items out of `total` pass the run's tolerance (checked as each
/// child ends, as AWS does). With no tolerance set, any failure does.
fn exceeds_tolerance(state: &RunState, failed: u64, total: u64) -> bool {
    let over_count = |count: u64| failed > count;
    let over_percentage =
        |percentage: f64| total > 0 && (failed as f64 * 100.0 / total as f64) > percentage;
    match (
        state.tolerated_failure_count,
        state.tolerated_failure_percentage,
    ) {
        (None, None) => failed > 0,
        (Some(count), None) => over_count(count),
        (None, Some(percentage)) => over_percentage(percentage),
        (Some(count), Some(percentage)) => over_count(count) && over_percentage(percentage),
    }
}

/// The derived name of the run's child `index`.
pub(crate) fn child_name(map_run_arn: &str, index: usize) -> String {
    super::naming::derived_name(&format!("{map_run_arn}/{index}"))
}

/// The items crate's name of an execution status.
fn result_status(status: super::ExecutionStatus) -> statelog_items::ExecutionStatus {
    match status {
        super::ExecutionStatus::Running => statelog_items::ExecutionStatus::Running,
        super::ExecutionStatus::Succeeded => statelog_items::ExecutionStatus::Succeeded,
        super::ExecutionStatus::Failed => statelog_items::ExecutionStatus::Failed,
        super::ExecutionStatus::TimedOut => statelog_items::ExecutionStatus::TimedOut,
        super::ExecutionStatus::Aborted => statelog_items::ExecutionStatus::Aborted,
    }
}

/// Runs child `index` to its end (`None`: the engine closed).
async fn run_child(
    weak: &Weak<Inner>,
    run: &Arc<MapRun>,
    children: &Arc<Children>,
    index: usize,
    input: Value,
) -> Option<ChildEnd> {
    let name = child_name(&children.map_run_arn, index);
    match children.plan.execution_type {
        ChildExecutionType::Express => {
            handlers_ready(weak, children).await?;
            let (started, machine_arn) = {
                let inner = weak.upgrade()?;
                let engine = Engine { inner };
                let text = input.to_string();
                let started = super::express::start(
                    &engine,
                    &children.record,
                    children.machine.clone(),
                    name.clone(),
                    input,
                    &text,
                    None,
                    true,
                );
                (started, engine.state_machine_arn(&children.record.name))
            };
            let execution = match started {
                Ok(execution) => execution,
                Err(error) => return Some(ChildEnd::without_result(start_failure(error))),
            };
            let outcome = execution.outcome().await.ok()?;
            let result = ChildResult {
                execution_arn: outcome.execution_arn.clone(),
                name,
                state_machine_arn: machine_arn,
                status: result_status(outcome.status),
                input: outcome.input_text.clone(),
                output: outcome.output_text.clone(),
                error: outcome.error.clone(),
                cause: outcome.cause.clone(),
                start_date_ms: outcome.start_ms,
                stop_date_ms: Some(outcome.stop_ms),
                redrive_count: 0,
                redrive_status: statelog_items::RedriveStatus::NotRedrivable,
                redrive_status_reason: None,
            };
            let outcome = match outcome.status {
                super::ExecutionStatus::Succeeded => ChildOutcome::Succeeded(
                    outcome
                        .output_text
                        .as_deref()
                        .and_then(|t| serde_json::from_str(t).ok())
                        .unwrap_or(Value::Null),
                ),
                super::ExecutionStatus::TimedOut => ChildOutcome::TimedOut,
                super::ExecutionStatus::Aborted => ChildOutcome::Aborted,
                _ => ChildOutcome::Failed {
                    error: outcome.error.unwrap_or_default(),
                    cause: outcome.cause.unwrap_or_default(),
                },
            };
            Some(ChildEnd {
                outcome,
                result: Some(result),
            })
        }
        ChildExecutionType::Standard => {
            let inner = weak.upgrade()?;
            let arn: Arc<str> = Arc::from(
                Engine {
                    inner: inner.clone(),
                }
                .execution_arn(&children.record.name, &name)
                .as_str(),
            );
            let (closed, on_close) = tokio::sync::oneshot::channel();
            inner.map_runs.children.lock().insert(arn.clone(), closed);
            drop(inner);
            run.state.lock().running_children.insert(arn.clone());
            let outcome = standard_child(weak, children, arn.clone(), input, on_close).await;
            run.state.lock().running_children.remove(&arn);
            if let Some(inner) = weak.upgrade() {
                inner.map_runs.children.lock().remove(&arn);
            }
            outcome
        }
    }
}

/// A child that could not start fails its item.
fn start_failure(error: Error) -> ChildOutcome {
    ChildOutcome::Failed {
        error: format!("States.{}", error.aws_name()),
        cause: error.to_string(),
    }
}

/// Starts (or finds again) a STANDARD child and waits for its close.
async fn standard_child(
    weak: &Weak<Inner>,
    children: &Arc<Children>,
    arn: Arc<str>,
    input: Value,
    on_close: tokio::sync::oneshot::Receiver<()>,
) -> Option<ChildEnd> {
    let started = {
        let weak = weak.clone();
        let children = children.clone();
        let arn = arn.clone();
        tokio::task::spawn_blocking(move || {
            let inner = weak.upgrade()?;
            let engine = Engine { inner };
            let target = StartTarget {
                machine: children.record.clone(),
                version_arn: None,
                alias_arn: None,
                map_run_arn: Some(children.map_run_arn.to_string()),
            };
            let _revision = engine.inner.machine_changes.read_recursive();
            Some(super::runtime::start(
                &engine,
                &target,
                children.machine.clone(),
                arn.to_string(),
                input,
                None,
            ))
        })
        .await
        .ok()??
    };
    // A redriven run redrives a child found closed without success (it keeps its history and
    // counts the redrive); a run started again after a crash only waits for what it finds.
    let mut may_redrive = match started {
        Ok(_) => false,
        // Started before (a crash, or the run's earlier run): its name is derived from the run
        // and its index.
        Err(Error::ExecutionAlreadyExists { .. }) => children.plan.redrive_count > 0,
        Err(error) => return Some(ChildEnd::without_result(start_failure(error))),
    };
    let mut on_close = Some(on_close);
    loop {
        let described = {
            let weak = weak.clone();
            let arn = arn.clone();
            tokio::task::spawn_blocking(move || {
                let inner = weak.upgrade()?;
                Some(Engine { inner }.describe_execution(&arn))
            })
            .await
            .ok()??
        };
        let described = match described {
            Ok(described) => described,
            Err(error) => return Some(ChildEnd::without_result(start_failure(error))),
        };
        if described.status.is_closed()
            && described.status != super::ExecutionStatus::Succeeded
            && std::mem::take(&mut may_redrive)
        {
            let weak = weak.clone();
            let arn = arn.clone();
            let redriven = tokio::task::spawn_blocking(move || {
                let inner = weak.upgrade()?;
                Some(Engine { inner }.redrive_map_run_child(&arn).is_ok())
            })
            .await
            .ok()??;
            if redriven {
                continue;
            }
        }
        if described.status.is_closed() {
            let result = ChildResult {
                execution_arn: described.execution_arn.clone(),
                name: described.name.clone(),
                state_machine_arn: described.state_machine_arn.clone(),
                status: result_status(described.status),
                input: described.input_text.clone(),
                output: described.output_text.clone(),
                error: described.error.clone(),
                cause: described.cause.clone(),
                start_date_ms: described.start_ms,
                stop_date_ms: described.stop_ms,
                redrive_count: described.redrive.redrive_count,
                redrive_status: statelog_items::RedriveStatus::NotRedrivable,
                redrive_status_reason: None,
            };
            let outcome = match described.status {
                super::ExecutionStatus::Succeeded => {
                    ChildOutcome::Succeeded(described.output.unwrap_or(Value::Null))
                }
                super::ExecutionStatus::TimedOut => ChildOutcome::TimedOut,
                super::ExecutionStatus::Aborted => ChildOutcome::Aborted,
                _ => ChildOutcome::Failed {
                    error: described.error.unwrap_or_default(),
                    cause: described.cause.unwrap_or_default(),
                },
            };
            return Some(ChildEnd {
                outcome,
                result: Some(result),
            });
        }
        match on_close.take() {
            Some(receiver) => {
                // A dropped sender (the run's table cleared) ends the wait too.
                let _ = receiver.await;
            }
            None => {
                // Woken without a close: wait for one through a fresh registration.
                let (closed, receiver) = tokio::sync::oneshot::channel();
                let inner = weak.upgrade()?;
                inner.map_runs.children.lock().insert(arn.clone(), closed);
                drop(inner);
                on_close = Some(receiver);
            }
        }
    }
}

impl Engine {
    /// `DescribeMapRun`: a Map Run this engine runs or ran since it opened, else one found in
    /// its parent's history (counts then from the history alone).
    pub fn describe_map_run(&self, map_run_arn: &str) -> Result<MapRunDescription, Error> {
        if let Some(run) = self.inner.map_runs.runs.lock().get(map_run_arn).cloned() {
            let state = run.state.lock();
            return Ok(MapRunDescription {
                map_run_arn: run.arn.to_string(),
                execution_arn: run.attempt.execution.to_string(),
                status: state.status,
                start_ms: run.start_ms,
                stop_ms: state.stop_ms,
                max_concurrency: state.max_concurrency,
                tolerated_failure_percentage: state.tolerated_failure_percentage.unwrap_or(0.0),
                tolerated_failure_count: state.tolerated_failure_count.unwrap_or(0),
                item_counts: state.items,
                execution_counts: state.executions,
                redrive_count: run.redrive_count,
            });
        }
        let parent = self.map_run_parent(map_run_arn)?;
        let found = self
            .map_runs_of(&parent)?
            .into_iter()
            .find(|r| r.map_run_arn == map_run_arn)
            .ok_or_else(|| Error::ResourceNotFound {
                resource_arn: map_run_arn.to_string(),
            })?;
        Ok(found)
    }

    /// `ListMapRuns`: the Map Runs the execution's Map states started, newest first.
    pub fn list_map_runs(&self, execution_arn: &str) -> Result<Vec<MapRunListItem>, Error> {
        self.requested_summary(execution_arn)?;
        let mut runs: Vec<MapRunListItem> = self
            .map_runs_of(execution_arn)?
            .into_iter()
            .map(|d| {
                let machine = child_machine_name(&d.map_run_arn).unwrap_or_default();
                MapRunListItem {
                    execution_arn: d.execution_arn,
                    state_machine_arn: self.state_machine_arn(machine),
                    map_run_arn: d.map_run_arn,
                    start_ms: d.start_ms,
                    stop_ms: d.stop_ms,
                }
            })
            .collect();
        runs.reverse();
        Ok(runs)
    }

    /// `UpdateMapRun`: a running Map Run's `maxConcurrency` and tolerated thresholds.
    pub fn update_map_run(
        &self,
        map_run_arn: &str,
        max_concurrency: Option<u64>,
        tolerated_failure_percentage: Option<f64>,
        tolerated_failure_count: Option<u64>,
    ) -> Result<(), Error> {
        if let Some(p) = tolerated_failure_percentage {
            if !(0.0..=100.0).contains(&p) {
                return Err(Error::Validation {
                    reason: ValidationReason::MapRunUpdateRange {
                        member: "toleratedFailurePercentage",
                        constraint: "Member must have value between 0 and 100",
                    },
                });
            }
        }
        if max_concurrency.is_some_and(|n| n > MAP_RUN_CONCURRENCY_MAX) {
            return Err(Error::Validation {
                reason: ValidationReason::MapRunUpdateRange {
                    member: "maxConcurrency",
                    constraint: "Member must have value between 0 and 10000",
                },
            });
        }
        let run = self.inner.map_runs.runs.lock().get(map_run_arn).cloned();
        let Some(run) = run else {
            // Known from its parent's history (ended, or before a restart): nothing to change.
            self.describe_map_run(map_run_arn)?;
            return Err(Error::Validation {
                reason: ValidationReason::MapRunNotRunning {
                    map_run_arn: map_run_arn.to_string(),
                },
            });
        };
        // Recorded (synced) before it answers, and applied in the order recorded: a run resumed
        // after a restart, and DescribeMapRun, use the latest record.
        let _serial = self.inner.map_runs.updates.lock();
        let settings = {
            let state = run.state.lock();
            if state.status != MapRunStatus::Running {
                return Err(Error::Validation {
                    reason: ValidationReason::MapRunNotRunning {
                        map_run_arn: map_run_arn.to_string(),
                    },
                });
            }
            MapRunSettings {
                max_concurrency: max_concurrency.unwrap_or(state.max_concurrency),
                tolerated_failure_count: tolerated_failure_count.or(state.tolerated_failure_count),
                tolerated_failure_percentage: tolerated_failure_percentage
                    .or(state.tolerated_failure_percentage),
            }
        };
        self.inner.store.append_map_run(
            MapRunRecord::Updated {
                map_run_arn: map_run_arn.to_string(),
                execution_arn: run.attempt.execution.to_string(),
                settings,
                updated_ms: self.inner.options.clock.now_ms(),
            },
            true,
        )?;
        {
            let mut state = run.state.lock();
            state.max_concurrency = settings.max_concurrency;
            state.tolerated_failure_count = settings.tolerated_failure_count;
            state.tolerated_failure_percentage = settings.tolerated_failure_percentage;
        }
        run.changed.notify_one();
        Ok(())
    }

    /// `ListExecutions(mapRunArn=...)`: the STANDARD children of a Map Run, in index order
    /// (children start in index order, so the first missing one ends the list; EXPRESS
    /// children are not listed, as AWS lists no Express execution). The token is the index to
    /// go on from.
    pub fn list_map_run_executions(
        &self,
        map_run_arn: &str,
        status_filter: Option<super::ExecutionStatus>,
        max_results: usize,
        next_token: Option<&str>,
    ) -> Result<super::ExecutionPage, Error> {
        let limit = super::page_size(
            max_results,
            super::limits::LIST_PAGE_EXECUTIONS_DEFAULT,
            super::limits::LIST_PAGE_EXECUTIONS_MAX,
        )?;
        let mut index = match next_token {
            None => 0,
            Some(token) => token
                .strip_prefix('m')
                .and_then(|n| n.parse::<usize>().ok())
                .ok_or_else(|| Error::InvalidToken {
                    token: token.to_string(),
                })?,
        };
        self.describe_map_run(map_run_arn)?;
        self.inner.store.sync_unsynced()?;
        let machine = child_machine_name(map_run_arn).unwrap_or_default();
        let machine_arn = self.state_machine_arn(machine);
        let mut executions = Vec::new();
        loop {
            let arn = self.execution_arn(machine, &child_name(map_run_arn, index));
            let Some(summary) = self.inner.store.execution(&arn) else {
                return Ok(super::ExecutionPage {
                    executions,
                    next_token: None,
                });
            };
            if executions.len() == limit {
                return Ok(super::ExecutionPage {
                    executions,
                    next_token: Some(format!("m{index}")),
                });
            }
            index += 1;
            if status_filter.is_some_and(|status| status != summary.status) {
                continue;
            }
            executions.push(super::ExecutionListItem {
                name: super::naming::execution_name(&arn).to_string(),
                execution_arn: arn,
                state_machine_arn: machine_arn.clone(),
                status: summary.status,
                start_ms: summary.start_ms,
                stop_ms: summary.stop_ms,
                redrive_count: summary.redrive_count,
                redrive_ms: summary.redrive_ms,
                state_machine_version_arn: None,
                state_machine_alias_arn: None,
            });
        }
    }

    /// The execution that started the Map Run `map_run_arn`: the one its `Opened` record
    /// names (the store's index), else (a run an older build opened) found by the ARN's shape
    /// among the parent machine's executions. Checked by the caller against that execution's
    /// history.
    fn map_run_parent(&self, map_run_arn: &str) -> Result<String, Error> {
        let invalid = || Error::InvalidArn {
            arn: map_run_arn.to_string(),
            reason: super::ArnReason::NotAMapRun,
        };
        let machine = child_machine_name(map_run_arn).ok_or_else(invalid)?;
        if let Some(recorded) = self.inner.store.map_run(map_run_arn) {
            return Ok(recorded.execution_arn.to_string());
        }
        self.inner
            .map_runs
            .parent_scans
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // The parent is any execution of the parent machine whose history holds the run: the
        // runs this engine knows name it; otherwise the parent machine's executions are read.
        let (parent_machine, _label) = machine.rsplit_once('/').ok_or_else(invalid)?;
        let machine_arn = self.state_machine_arn(parent_machine);
        let mut token = None;
        loop {
            let page = self.list_executions(&super::ListExecutions {
                state_machine: Some(machine_arn.clone()),
                status_filter: None,
                max_results: 0,
                next_token: token,
            });
            let page = match page {
                Ok(page) => page,
                Err(Error::StateMachineDoesNotExist { .. }) => {
                    return Err(Error::ResourceNotFound {
                        resource_arn: map_run_arn.to_string(),
                    })
                }
                Err(error) => return Err(error),
            };
            for execution in &page.executions {
                if self
                    .map_runs_of(&execution.execution_arn)?
                    .iter()
                    .any(|r| r.map_run_arn == map_run_arn)
                {
                    return Ok(execution.execution_arn.clone());
                }
            }
            match page.next_token {
                Some(next) => token = Some(next),
                None => {
                    return Err(Error::ResourceNotFound {
                        resource_arn: map_run_arn.to_string(),
                    })
                }
            }
        }
    }

    /// The Map Runs of an execution, from its history (a run this engine runs now or ran
    /// since it opened answers with its live counts).
    fn map_runs_of(&self, execution_arn: &str) -> Result<Vec<MapRunDescription>, Error> {
        let events = self.inner.store.history(execution_arn)?;
        let mut runs: Vec<MapRunDescription> = Vec::new();
        let mut open: HashMap<Vec<u32>, usize> = HashMap::new();
        let mut lengths: HashMap<Vec<u32>, u32> = HashMap::new();
        for event in events.iter() {
            let HistoryEvent {
                details,
                scope,
                timestamp_ms,
                ..
            } = event;

            match details {
                EventDetails::MapStateStarted(started) => {
                    lengths.insert(scope.clone(), started.length);
                }
                EventDetails::MapRunStarted(started) => {
                    let length = u64::from(lengths.get(scope.as_slice()).copied().unwrap_or(0));
                    open.insert(scope.clone(), runs.len());
                    runs.push(MapRunDescription {
                        map_run_arn: started.map_run_arn.clone(),
                        execution_arn: execution_arn.to_string(),
                        status: MapRunStatus::Running,
                        start_ms: *timestamp_ms,
                        stop_ms: None,
                        max_concurrency: 0,
                        tolerated_failure_percentage: 0.0,
                        tolerated_failure_count: 0,
                        item_counts: MapRunCounts {
                            total: length,
                            ..MapRunCounts::default()
                        },
                        execution_counts: MapRunCounts::default(),
                        redrive_count: 0,
                    });
                }
                // A redriven run runs again under its ARN.
                EventDetails::MapRunRedriven(redriven) => {
                    if let Some(index) = runs
                        .iter()
                        .position(|r| r.map_run_arn == redriven.map_run_arn)
                    {
                        let run = &mut runs[index];
                        run.status = MapRunStatus::Running;
                        run.stop_ms = None;
                        run.redrive_count = redriven.redrive_count;
                        open.insert(scope.clone(), index);
                    }
                }
                EventDetails::MapRunSucceeded
                | EventDetails::MapRunFailed(_)
                | EventDetails::MapRunAborted => {
                    if let Some(index) = open.remove(scope.as_slice()) {
                        let run = &mut runs[index];
                        run.stop_ms = Some(*timestamp_ms);
                        run.status = match details {
                            EventDetails::MapRunSucceeded => {
                                run.item_counts.succeeded = run.item_counts.total;
                                run.item_counts.results_written = run.item_counts.total;
                                MapRunStatus::Succeeded
                            }
                            EventDetails::MapRunFailed(_) => MapRunStatus::Failed,
                            _ => MapRunStatus::Aborted,
                        };
                    }
                }
                _ => {}
            }
        }
        // A run of an execution that closed without its run's end (stopped): aborted.
        let closed = events.last().is_some_and(|e| e.details.is_terminal());
        for run in &mut runs {
            if let Some(live) = self
                .inner
                .map_runs
                .runs
                .lock()
                .get(run.map_run_arn.as_str())
            {
                let state = live.state.lock();
                run.status = state.status;
                run.stop_ms = state.stop_ms.or(run.stop_ms);
                run.max_concurrency = state.max_concurrency;
                run.tolerated_failure_count = state.tolerated_failure_count.unwrap_or(0);
                run.tolerated_failure_percentage =
                    state.tolerated_failure_percentage.unwrap_or(0.0);
                run.item_counts = state.items;
                run.execution_counts = state.executions;
                run.redrive_count = live.redrive_count;
            } else {
                // The latest recorded settings (the definition's, or an UpdateMapRun's).
                if let Some(settings) = self
                    .inner
                    .store
                    .map_run(&run.map_run_arn)
                    .and_then(|recorded| recorded.settings)
                {
                    run.max_concurrency = settings.max_concurrency;
                    run.tolerated_failure_count = settings.tolerated_failure_count.unwrap_or(0);
                    run.tolerated_failure_percentage =
                        settings.tolerated_failure_percentage.unwrap_or(0.0);
                }
                if closed && run.status == MapRunStatus::Running {
                    run.status = MapRunStatus::Aborted;
                    run.stop_ms = events.last().map(|e| e.timestamp_ms);
                }
            }
        }
        Ok(runs)
    }
}

#[cfg(test)]
mod map_run_tests {
    //! Distributed Map end to end through the engine API: STANDARD and EXPRESS children, the
    //! parent's events, the selector and batcher, tolerance, MaxConcurrency, abort on stop.
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde_json::json;

    use super::*;
    use crate::clock::ManualClock;
    use crate::{EngineOptions, ExecutionStatus, HistoryQuery, TaskError};
    use statelog_core::history::EventDetails;

    const NOW_MS: u64 = 1_704_067_200_000;

    /// A run in the table of runs by ARN, with `status`.
    fn table_run(arn: &str, status: MapRunStatus) -> Arc<MapRun> {
        Arc::new(MapRun {
            arn: Arc::from(arn),
            redrive_count: 0,
            attempt: AttemptKey::new(Arc::from("parent"), statelog_core::history::EventId(3)),
            start_ms: NOW_MS,
            state: Mutex::new(RunState {
                status,
                stop_ms: None,
                max_concurrency: 0,
                tolerated_failure_count: None,
                tolerated_failure_percentage: None,
                items: MapRunCounts::default(),
                executions: MapRunCounts::default(),
                running_children: HashSet::new(),
                aborting: false,
            }),
            changed: tokio::sync::Notify::new(),
        })
    }

    /// The table of runs stays bounded: once it holds `kept_max` runs, admitting another drops
    /// the ended ones and keeps every running one.
    #[test]
    fn the_table_of_runs_drops_ended_runs_past_its_bound() {
        let mut runs = crate::ArnMap::default();
        admit(&mut runs, table_run("a", MapRunStatus::Succeeded), 3);
        admit(&mut runs, table_run("b", MapRunStatus::Running), 3);
        admit(&mut runs, table_run("c", MapRunStatus::Failed), 3);
        assert_eq!(runs.len(), 3, "below the bound nothing is dropped");
        admit(&mut runs, table_run("d", MapRunStatus::Running), 3);
        let mut kept: Vec<&str> = runs.keys().map(|k| &**k).collect();
        kept.sort_unstable();
        assert_eq!(kept, ["b", "d"]);
        admit(&mut runs, table_run("e", MapRunStatus::Running), 3);
        assert_eq!(runs.len(), 3);
        admit(&mut runs, table_run("f", MapRunStatus::Running), 3);
        assert_eq!(runs.len(), 4, "running runs are never dropped");
    }

    fn engine() -> Engine {
        let log = Arc::new(statelog_store::MemoryLog::new());
        let options = EngineOptions {
            background_timers: false,
            clock: Arc::new(ManualClock::new(NOW_MS)),
            ..EngineOptions::default()
        };
        Engine::open_with_log(log, options).expect("opens")
    }

    fn distributed(execution_type: &str, extra: &str, child: &str) -> String {
        format!(
            r#"{{"StartAt":"M","States":{{"M":{{"Type":"Map","ItemsPath":"$.items",{extra}
              "ItemProcessor":{{"ProcessorConfig":{{"Mode":"DISTRIBUTED","ExecutionType":"{execution_type}"}},
              "StartAt":"C","States":{{"C":{child}}}}},"End":true}}}}}}"#
        )
    }

    fn types(engine: &Engine, arn: &str) -> Vec<String> {
        let page = engine
            .get_execution_history(arn, &HistoryQuery::default())
            .expect("history");
        page.events
            .iter()
            .map(|e| e.details.type_name().to_string())
            .collect()
    }

    fn run(engine: &Engine, definition: &str, input: &str) -> crate::ExecutionDescription {
        engine
            .create_state_machine("parent", definition, None)
            .expect("valid");
        let started = engine
            .start_execution("parent", Some("p1"), input)
            .expect("starts");
        engine
            .wait_until_closed(&started.execution_arn)
            .expect("closes")
    }

    /// STANDARD children: the parent's history holds the Map Run's events only, its output the
    /// children's in item order; the children are executions of `parent/<label>`, listed by
    /// `list_map_run_executions`, and the Map Run is described and listed.
    #[test]
    fn standard_children_run_each_item_and_the_parent_keeps_only_map_run_events() {
        let engine = engine();
        let definition = distributed(
            "STANDARD",
            r#""Label":"Lab","MaxConcurrency":2,"ItemSelector":{"v.$":"$$.Map.Item.Value","i.$":"$$.Map.Item.Index"},"#,
            r#"{"Type":"Pass","End":true}"#,
        );
        let described = run(&engine, &definition, r#"{"items":["a","b","c"]}"#);
        assert_eq!(
            described.status,
            ExecutionStatus::Succeeded,
            "{described:?}"
        );
        assert_eq!(
            described.output,
            Some(json!([{"v":"a","i":0},{"v":"b","i":1},{"v":"c","i":2}]))
        );
        assert_eq!(
            types(&engine, &described.execution_arn),
            [
                "ExecutionStarted",
                "MapStateEntered",
                "MapStateStarted",
                "MapRunStarted",
                "MapRunSucceeded",
                "MapStateSucceeded",
                "MapStateExited",
                "ExecutionSucceeded"
            ]
        );
        let runs = engine
            .list_map_runs(&described.execution_arn)
            .expect("lists");
        assert_eq!(runs.len(), 1);
        let map_run_arn = &runs[0].map_run_arn;
        assert!(
            map_run_arn.starts_with("arn:aws:states:us-east-1:000000000000:mapRun:parent/Lab:"),
            "{map_run_arn}"
        );
        let run = engine.describe_map_run(map_run_arn).expect("describes");
        assert_eq!(run.status, MapRunStatus::Succeeded);
        assert_eq!(run.max_concurrency, 2);
        assert_eq!(run.item_counts.succeeded, 3);
        assert_eq!(run.execution_counts.total, 3);
        let children = engine
            .list_map_run_executions(map_run_arn, None, 0, None)
            .expect("lists children");
        assert_eq!(children.executions.len(), 3);
        for child in &children.executions {
            assert!(child.execution_arn.contains(":execution:parent/Lab:"));
            assert_eq!(child.status, ExecutionStatus::Succeeded);
            let described = engine
                .describe_execution(&child.execution_arn)
                .expect("describes a child");
            assert_eq!(described.map_run_arn.as_deref(), Some(map_run_arn.as_str()));
        }
        assert_eq!(described.map_run_arn, None, "the parent has no Map Run");
        let page = engine
            .list_map_run_executions(map_run_arn, None, 2, None)
            .expect("a page");
        assert_eq!(page.executions.len(), 2);
        let rest = engine
            .list_map_run_executions(map_run_arn, None, 2, page.next_token.as_deref())
            .expect("the next page");
        assert_eq!(rest.executions.len(), 1);
        assert!(
            !engine
                .list_state_machines()
                .iter()
                .any(|m| m.name.contains('/')),
            "child machines are not listed"
        );
    }

    /// EXPRESS children run through the Express path and write nothing per child; the batcher
    /// gives each child `{"Items": [...], "BatchInput": ...}`.
    #[test]
    fn express_children_take_batches() {
        let engine = engine();
        let definition = distributed(
            "EXPRESS",
            r#""ItemBatcher":{"MaxItemsPerBatch":2,"BatchInput":{"k.$":"$.k"}},"#,
            r#"{"Type":"Pass","End":true}"#,
        );
        let described = run(&engine, &definition, r#"{"items":[1,2,3],"k":"x"}"#);
        assert_eq!(
            described.status,
            ExecutionStatus::Succeeded,
            "{described:?}"
        );
        assert_eq!(
            described.output,
            Some(json!([
                {"Items":[1,2],"BatchInput":{"k":"x"}},
                {"Items":[3],"BatchInput":{"k":"x"}}
            ]))
        );
    }

    /// A failing child beyond the tolerated count fails the Map with
    /// `States.ExceedToleratedFailureThreshold`, which its Catch takes; within it, the run
    /// succeeds with the failure's error in its place.
    #[test]
    fn tolerance_decides_whether_failures_fail_the_map() {
        let engine = engine();
        let child = r#"{"Type":"Choice","Choices":[{"Variable":"$","NumericEquals":2,"Next":"F"}],"Default":"P"},
            "P":{"Type":"Pass","End":true},"F":{"Type":"Fail","Error":"Two","Cause":"two"}"#;
        let tolerated = distributed("STANDARD", r#""ToleratedFailureCount":1,"#, child);
        let described = run(&engine, &tolerated, r#"{"items":[1,2,3]}"#);
        assert_eq!(
            described.status,
            ExecutionStatus::Succeeded,
            "{described:?}"
        );
        assert_eq!(
            described.output,
            Some(json!([1, {"Error":"Two","Cause":"two"}, 3]))
        );

        let engine = self::engine();
        let caught = format!(
            r#"{{"StartAt":"M","States":{{"M":{{"Type":"Map","ItemsPath":"$.items",
              "Catch":[{{"ErrorEquals":["States.ExceedToleratedFailureThreshold"],"Next":"Caught"}}],
              "ItemProcessor":{{"ProcessorConfig":{{"Mode":"DISTRIBUTED","ExecutionType":"EXPRESS"}},
              "StartAt":"C","States":{{"C":{child}}}}},"End":true}},
              "Caught":{{"Type":"Pass","End":true}}}}}}"#
        );
        let described = run(&engine, &caught, r#"{"items":[1,2,3]}"#);
        assert_eq!(
            described.status,
            ExecutionStatus::Succeeded,
            "{described:?}"
        );
        assert_eq!(
            described.output.as_ref().map(|o| o["Error"].clone()),
            Some(json!("States.ExceedToleratedFailureThreshold"))
        );
        let history = types(&engine, &described.execution_arn);
        assert!(history.contains(&"MapRunFailed".to_string()), "{history:?}");
        assert!(
            history.contains(&"MapStateFailed".to_string()),
            "{history:?}"
        );
    }

    /// No more children run at once than `MaxConcurrency`: the children's task counts the
    /// calls in flight (each answers only when released), never with sleeps.
    #[test]
    fn max_concurrency_bounds_the_running_children() {
        let engine = engine();
        let running = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let (gate, _) = tokio::sync::broadcast::channel::<()>(16);
        let gate = Arc::new(gate);
        {
            let (running, peak, gate) = (running.clone(), peak.clone(), gate.clone());
            engine.register_integration("arn:aws:lambda:us-east-1:000000000000:function:hold", {
                move |input: Value, _context: Value| {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    let mut released = gate.subscribe();
                    let running = running.clone();
                    async move {
                        let _ = released.recv().await;
                        running.fetch_sub(1, Ordering::SeqCst);
                        Ok::<Value, TaskError>(input)
                    }
                }
            });
        }
        let definition = distributed(
            "EXPRESS",
            r#""MaxConcurrency":3,"#,
            r#"{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:000000000000:function:hold","End":true}"#,
        );
        engine
            .create_state_machine("parent", &definition, None)
            .expect("valid");
        let items: Vec<u32> = (0..10).collect();
        let started = engine
            .start_execution("parent", Some("p1"), &json!({ "items": items }).to_string())
            .expect("starts");
        let arn = started.execution_arn.clone();
        let waiter = {
            let engine = engine.clone();
            std::thread::spawn(move || engine.wait_until_closed(&arn))
        };
        while !waiter.is_finished() {
            // Release whoever runs now; the next ones start as these end.
            let _ = gate.send(());
            std::thread::yield_now();
        }
        let described = waiter.join().expect("joins").expect("closes");
        assert_eq!(
            described.status,
            ExecutionStatus::Succeeded,
            "{described:?}"
        );
        assert_eq!(described.output, Some(json!(items)));
        let peak = peak.load(Ordering::SeqCst);
        assert!((1..=3).contains(&peak), "peak {peak}");
    }

    /// Redriving a parent whose Map Run failed redrives the run (`MapRunRedriven`, same ARN,
    /// `redriveCount` 1): the child that succeeded is not run again, the failed one is redriven
    /// (its own redrive count 1), the one never started starts.
    #[test]
    fn a_redriven_parent_redrives_its_map_run_and_only_the_failed_children() {
        let engine = engine();
        let broken = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let calls = Arc::new(Mutex::new(Vec::new()));
        {
            let (broken, calls) = (broken.clone(), calls.clone());
            engine.register_integration(
                "arn:aws:lambda:us-east-1:000000000000:function:item",
                move |input: Value, _context: Value| {
                    let n = input.as_u64().unwrap_or_default();
                    calls.lock().push(n);
                    let fail = n == 1 && broken.load(Ordering::SeqCst);
                    async move {
                        if fail {
                            Err(TaskError::new("Broken", "item 1 fails once"))
                        } else {
                            Ok(json!(n * 10))
                        }
                    }
                },
            );
        }
        let definition = distributed(
            "STANDARD",
            r#""MaxConcurrency":1,"#,
            r#"{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:000000000000:function:item","End":true}"#,
        );
        let described = run(&engine, &definition, r#"{"items":[0,1,2]}"#);
        assert_eq!(described.status, ExecutionStatus::Failed, "{described:?}");
        assert_eq!(
            described.error.as_deref(),
            Some(EXCEED_TOLERATED_FAILURE_THRESHOLD)
        );
        let arn = described.execution_arn.clone();
        let map_run_arn = engine.list_map_runs(&arn).expect("runs")[0]
            .map_run_arn
            .clone();
        let failed_child = engine
            .list_map_run_executions(&map_run_arn, None, 0, None)
            .expect("children")
            .executions[1]
            .execution_arn
            .clone();
        assert_eq!(
            engine
                .describe_execution(&failed_child)
                .expect("describes")
                .redrive
                .redrive_status,
            crate::RedriveStatus::RedrivableByMapRun
        );
        // Its parent redrives it, never a caller (AWS's `REDRIVABLE_BY_MAP_RUN`).
        assert!(
            matches!(
                engine.redrive_execution(&failed_child, None),
                Err(Error::ExecutionNotRedrivable {
                    reason: crate::RedriveRefusal::MapRunChild,
                    ..
                })
            ),
            "a child is not redriven directly"
        );
        broken.store(false, Ordering::SeqCst);
        engine.redrive_execution(&arn, None).expect("redrives");
        let described = engine.wait_until_closed(&arn).expect("closes");
        assert_eq!(
            described.status,
            ExecutionStatus::Succeeded,
            "{described:?}"
        );
        assert_eq!(described.output, Some(json!([0, 10, 20])));
        let history = types(&engine, &arn);
        assert!(
            history.contains(&"MapRunRedriven".to_string()),
            "{history:?}"
        );
        assert_eq!(
            history.iter().filter(|t| *t == "MapRunStarted").count(),
            1,
            "the same run: {history:?}"
        );
        let mut ran = calls.lock().clone();
        ran.sort_unstable();
        assert_eq!(ran, [0, 1, 1, 2], "item 0 is not run again");
        let run = engine.describe_map_run(&map_run_arn).expect("describes");
        assert_eq!(run.redrive_count, 1);
        assert_eq!(run.status, MapRunStatus::Succeeded);
        let children = engine
            .list_map_run_executions(&map_run_arn, None, 0, None)
            .expect("children");
        assert_eq!(children.executions.len(), 3);
        let redriven: Vec<u32> = children
            .executions
            .iter()
            .map(|c| c.redrive_count)
            .collect();
        assert_eq!(redriven, [0, 1, 0]);
    }

    /// An EXPRESS item processor follows the Express rules (no `.sync`, `.waitForTaskToken` or
    /// activity), in a STANDARD machine too: refused at creation naming the `Resource`.
    #[test]
    fn express_children_may_not_wait() {
        let engine = engine();
        let definition = distributed(
            "EXPRESS",
            "",
            r#"{"Type":"Task","Resource":"arn:aws:states:::states:startExecution.sync","Parameters":{"StateMachineArn":"x"},"End":true}"#,
        );
        match engine.create_state_machine("parent", &definition, None) {
            Err(Error::InvalidDefinition { diagnostics }) => assert!(
                diagnostics
                    .iter()
                    .any(|d| d.path == "/States/M/ItemProcessor/States/C/Resource"),
                "{diagnostics:?}"
            ),
            other => panic!("{other:?}"),
        }
        let standard = distributed(
            "STANDARD",
            "",
            r#"{"Type":"Task","Resource":"arn:aws:states:::states:startExecution.sync","Parameters":{"StateMachineArn":"x"},"End":true}"#,
        );
        engine
            .create_state_machine("parent", &standard, None)
            .expect("STANDARD children may wait");
    }

    fn engine_with_objects(root: &std::path::Path) -> Engine {
        let stores = statelog_items::ObjectStores::open(statelog_items::ObjectStoreConfig::Local {
            root: root.to_path_buf(),
        })
        .expect("a local object store");
        let log = Arc::new(statelog_store::MemoryLog::new());
        let options = EngineOptions {
            background_timers: false,
            clock: Arc::new(ManualClock::new(NOW_MS)),
            item_sources: Some(ItemSources::new(stores)),
            ..EngineOptions::default()
        };
        Engine::open_with_log(log, options).expect("opens")
    }

    /// An `ItemReader` (JSONL in a local bucket, `MaxItemsPath`) feeds the children in slices,
    /// batched; `MapStateStarted` says 0 (recorded); a `ResultWriter` writes the results and
    /// the Map's output is its manifest's place.
    #[test]
    fn item_reader_feeds_children_and_result_writer_writes_their_results() {
        let root = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(root.path().join("data")).expect("a bucket");
        let lines: String = (0..25).map(|n| format!("{{\"n\":{n}}}\n")).collect();
        std::fs::write(root.path().join("data/in.jsonl"), lines).expect("items");
        let engine = engine_with_objects(root.path());
        let definition = r#"{"StartAt":"M","States":{"M":{"Type":"Map","MaxConcurrency":4,
            "ItemReader":{"Resource":"arn:aws:states:::s3:getObject",
              "Parameters":{"Bucket":"data","Key.$":"$.key"},
              "ReaderConfig":{"InputType":"JSONL","MaxItemsPath":"$.max"}},
            "ItemBatcher":{"MaxItemsPerBatch":3},
            "ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"EXPRESS"},
              "StartAt":"P","States":{"P":{"Type":"Pass","OutputPath":"$.Items","End":true}}},
            "End":true}}}"#;
        let described = run(&engine, definition, r#"{"key":"in.jsonl","max":20}"#);
        assert_eq!(
            described.status,
            ExecutionStatus::Succeeded,
            "{described:?}"
        );
        let batches: Vec<Value> = (0..20)
            .collect::<Vec<u32>>()
            .chunks(3)
            .map(|chunk| json!(chunk.iter().map(|n| json!({"n": n})).collect::<Vec<_>>()))
            .collect();
        assert_eq!(described.output, Some(Value::Array(batches)));
        let history = engine
            .get_execution_history(&described.execution_arn, &HistoryQuery::default())
            .expect("history");
        let started = history.events.iter().find_map(|e| match &e.details {
            EventDetails::MapStateStarted(started) => Some(started.length),
            _ => None,
        });
        assert_eq!(started, Some(0));
        let run = &engine
            .list_map_runs(&described.execution_arn)
            .expect("runs")[0];
        let counts = engine
            .describe_map_run(&run.map_run_arn)
            .expect("describes");
        assert_eq!(counts.item_counts.total, 20);
        assert_eq!(counts.execution_counts.total, 7);

        let writer = r#"{"StartAt":"M","States":{"M":{"Type":"Map","ItemsPath":"$.items",
            "ResultWriter":{"Resource":"arn:aws:states:::s3:putObject",
              "Parameters":{"Bucket":"data","Prefix":"out"}},
            "ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"STANDARD"},
              "StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},
            "End":true}}}"#;
        engine
            .create_state_machine("writer", writer, None)
            .expect("valid");
        let started = engine
            .start_execution("writer", Some("w1"), r#"{"items":[1,2]}"#)
            .expect("starts");
        let described = engine
            .wait_until_closed(&started.execution_arn)
            .expect("closes");
        assert_eq!(
            described.status,
            ExecutionStatus::Succeeded,
            "{described:?}"
        );
        let output = described.output.expect("output");
        let key = output["ResultWriterDetails"]["Key"]
            .as_str()
            .expect("a key");
        assert!(
            key.starts_with("out/") && key.ends_with("/manifest.json"),
            "{key}"
        );
        let manifest: Value = serde_json::from_slice(
            &std::fs::read(root.path().join("data").join(key)).expect("the manifest"),
        )
        .expect("json");
        let succeeded = manifest["ResultFiles"]["SUCCEEDED"][0]["Key"]
            .as_str()
            .expect("a results file");
        let results: Value = serde_json::from_slice(
            &std::fs::read(root.path().join("data").join(succeeded)).expect("results"),
        )
        .expect("json");
        assert_eq!(results.as_array().map(Vec::len), Some(2), "{results}");
    }

    /// Without an object store, an `ItemReader` fails the Map with `States.ItemReaderFailed`.
    #[test]
    fn an_item_reader_without_an_object_store_fails_the_map() {
        let engine = engine();
        let definition = r#"{"StartAt":"M","States":{"M":{"Type":"Map",
            "ItemReader":{"Resource":"arn:aws:states:::s3:getObject",
              "Parameters":{"Bucket":"data","Key":"k"},"ReaderConfig":{"InputType":"JSON"}},
            "ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"STANDARD"},
              "StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},
            "End":true}}}"#;
        let described = run(&engine, definition, "{}");
        assert_eq!(described.status, ExecutionStatus::Failed);
        assert_eq!(described.error.as_deref(), Some("States.ItemReaderFailed"));
    }

    /// Stopping the parent aborts its Map Run: `MapRunAborted` before `ExecutionAborted`, and
    /// its running STANDARD children are stopped.
    #[test]
    fn stopping_the_parent_aborts_the_map_run_and_its_children() {
        let engine = engine();
        let definition = distributed(
            "STANDARD",
            "",
            r#"{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:000000000000:function:never","End":true}"#,
        );
        engine
            .create_state_machine("parent", &definition, None)
            .expect("valid");
        let started = engine
            .start_execution("parent", Some("p1"), r#"{"items":[1,2]}"#)
            .expect("starts");
        let map_run_arn = loop {
            let runs = engine.list_map_runs(&started.execution_arn).expect("lists");
            if let Some(run) = runs.first() {
                let children = engine
                    .list_map_run_executions(&run.map_run_arn, None, 0, None)
                    .expect("children");
                if children.executions.len() == 2 {
                    break run.map_run_arn.clone();
                }
            }
            std::thread::yield_now();
        };
        engine
            .stop_execution(&started.execution_arn, None, None)
            .expect("stops");
        let history = types(&engine, &started.execution_arn);
        assert_eq!(
            &history[history.len() - 2..],
            ["MapRunAborted", "ExecutionAborted"]
        );
        assert_eq!(
            engine
                .describe_map_run(&map_run_arn)
                .expect("describes")
                .status,
            MapRunStatus::Aborted
        );
        loop {
            let children = engine
                .list_map_run_executions(&map_run_arn, None, 0, None)
                .expect("children");
            if children
                .executions
                .iter()
                .all(|c| c.status == ExecutionStatus::Aborted)
            {
                break;
            }
            std::thread::yield_now();
        }
    }

    const ITEM_RESOURCE: &str = "arn:aws:lambda:us-east-1:000000000000:function:item";

    /// An engine over `log` (a reopen is a restart of the same log).
    fn engine_on(log: &Arc<statelog_store::MemoryLog>) -> Engine {
        let options = EngineOptions {
            background_timers: false,
            clock: Arc::new(ManualClock::new(NOW_MS)),
            ..EngineOptions::default()
        };
        Engine::open_with_log(log.clone(), options).expect("opens")
    }

    /// Registers the item handler: it notes each item it is called with in `calls` and answers
    /// `item * 10`, except that an item for which `hold` says so never answers.
    fn item_handler(
        engine: &Engine,
        calls: &Arc<Mutex<Vec<u64>>>,
        hold: impl Fn(u64) -> bool + Send + Sync + 'static,
    ) {
        let calls = calls.clone();
        let hold = Arc::new(hold);
        engine.register_integration(ITEM_RESOURCE, move |input: Value, _context: Value| {
            let n = input.as_u64().unwrap_or_default();
            calls.lock().push(n);
            let held = hold(n);
            async move {
                if held {
                    std::future::pending::<()>().await;
                }
                Ok::<Value, TaskError>(json!(n * 10))
            }
        });
    }

    /// Waits (yielding) until `done` holds, for at most `attempts` looks.
    fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
        for _ in 0..200_000 {
            if done() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        panic!("timed out waiting for {what}");
    }

    fn start_parent(engine: &Engine, definition: &str, items: &[u64]) -> (String, String) {
        engine
            .create_state_machine("parent", definition, None)
            .expect("valid");
        let started = engine
            .start_execution("parent", Some("p1"), &json!({ "items": items }).to_string())
            .expect("starts");
        let arn = started.execution_arn;
        let mut map_run_arn = String::new();
        wait_for("the Map Run", || {
            match engine.list_map_runs(&arn).expect("runs").first() {
                Some(run) => {
                    map_run_arn = run.map_run_arn.clone();
                    true
                }
                None => false,
            }
        });
        (arn, map_run_arn)
    }

    /// An EXPRESS run stopped by a restart mid-run: the reopened engine runs only the items
    /// whose end was not recorded (here the two held in flight and the ones never started),
    /// and the output holds every item's result once, in item order.
    #[test]
    fn a_reopened_engine_resumes_an_express_run_without_the_children_whose_end_was_recorded() {
        let log = Arc::new(statelog_store::MemoryLog::new());
        let engine = engine_on(&log);
        let calls = Arc::new(Mutex::new(Vec::new()));
        // Items 6 and up never answer in the first engine.
        item_handler(&engine, &calls, |n| n >= 6);
        let definition = distributed(
            "EXPRESS",
            r#""MaxConcurrency":2,"#,
            &format!(r#"{{"Type":"Task","Resource":"{ITEM_RESOURCE}","End":true}}"#),
        );
        let items: Vec<u64> = (0..12).collect();
        let (arn, map_run_arn) = start_parent(&engine, &definition, &items);
        // Both slots held by items 6 and 7: every end before them was appended (an end holds
        // its slot until it is).
        wait_for("items 6 and 7 in flight", || calls.lock().len() == 8);
        let recorded = engine.inner.store.map_run(&map_run_arn).expect("opened");
        assert!(recorded.ends_record_count() >= 1);
        // The synced commit that makes them durable (any would; the test has none).
        engine.inner.store.sync_unsynced().expect("syncs");
        drop(engine);

        let engine = engine_on(&log);
        let again = Arc::new(Mutex::new(Vec::new()));
        item_handler(&engine, &again, |_| false);
        let described = engine.wait_until_closed(&arn).expect("closes");
        assert_eq!(
            described.status,
            ExecutionStatus::Succeeded,
            "{described:?}"
        );
        let expected: Vec<u64> = items.iter().map(|n| n * 10).collect();
        assert_eq!(described.output, Some(json!(expected)));
        let mut rerun = again.lock().clone();
        rerun.sort_unstable();
        assert_eq!(
            rerun,
            (6..12).collect::<Vec<u64>>(),
            "only unrecorded items run"
        );
        let counts = engine.describe_map_run(&map_run_arn).expect("described");
        assert_eq!(counts.item_counts.succeeded, 12);
        assert_eq!(counts.item_counts.results_written, 12);
    }

    /// UpdateMapRun is recorded: after a restart DescribeMapRun shows the updated settings and
    /// the resumed run runs as many children as the update allows (the definition said 2).
    #[test]
    fn update_map_run_survives_a_reopen_and_the_resumed_run_uses_it() {
        let log = Arc::new(statelog_store::MemoryLog::new());
        let engine = engine_on(&log);
        let calls = Arc::new(Mutex::new(Vec::new()));
        item_handler(&engine, &calls, |_| true);
        let definition = distributed(
            "EXPRESS",
            r#""MaxConcurrency":2,"ToleratedFailureCount":1,"#,
            &format!(r#"{{"Type":"Task","Resource":"{ITEM_RESOURCE}","End":true}}"#),
        );
        let items: Vec<u64> = (0..10).collect();
        let (_arn, map_run_arn) = start_parent(&engine, &definition, &items);
        wait_for("two children", || calls.lock().len() == 2);
        engine
            .update_map_run(&map_run_arn, Some(5), Some(40.0), None)
            .expect("updates");
        drop(engine);

        let engine = engine_on(&log);
        let again = Arc::new(Mutex::new(Vec::new()));
        item_handler(&engine, &again, |_| true);
        wait_for("five children", || again.lock().len() == 5);
        let described = engine.describe_map_run(&map_run_arn).expect("described");
        assert_eq!(described.max_concurrency, 5);
        assert_eq!(described.tolerated_failure_percentage, 40.0);
        assert_eq!(
            described.tolerated_failure_count, 1,
            "kept from the definition"
        );
        assert_eq!(described.execution_counts.running, 5);
        assert_eq!(
            again.lock().len(),
            5,
            "no more than the updated concurrency"
        );
    }

    /// A Map Run not in the engine's table (ended before a restart) is found through the
    /// store's index of runs, never by reading the parent machine's executions, and keeps its
    /// recorded settings.
    #[test]
    fn describe_map_run_after_a_reopen_finds_the_parent_through_the_index() {
        let log = Arc::new(statelog_store::MemoryLog::new());
        let engine = engine_on(&log);
        let definition = distributed(
            "EXPRESS",
            r#""MaxConcurrency":7,"#,
            r#"{"Type":"Pass","End":true}"#,
        );
        let described = run(&engine, &definition, r#"{"items":[1,2,3]}"#);
        assert_eq!(described.status, ExecutionStatus::Succeeded);
        let parent = described.execution_arn;
        let map_run_arn = engine.list_map_runs(&parent).expect("runs")[0]
            .map_run_arn
            .clone();
        drop(engine);

        let engine = engine_on(&log);
        let run = engine.describe_map_run(&map_run_arn).expect("described");
        assert_eq!(run.execution_arn, parent);
        assert_eq!(run.status, MapRunStatus::Succeeded);
        assert_eq!(run.max_concurrency, 7, "the recorded settings");
        let page = engine
            .list_map_run_executions(&map_run_arn, None, 0, None)
            .expect("lists");
        assert!(
            page.executions.is_empty(),
            "EXPRESS children are not listed"
        );
        assert!(matches!(
            engine.update_map_run(&map_run_arn, Some(1), None, None),
            Err(Error::Validation { .. })
        ));
        assert_eq!(
            engine
                .inner
                .map_runs
                .parent_scans
                .load(std::sync::atomic::Ordering::Relaxed),
            0,
            "no scan of the parent machine's executions"
        );
    }

    /// A Map Run an older build ran has no `Opened` record: its parent is still found, by the
    /// scan of the parent machine's executions (here the same log without its kind 5 records).
    #[test]
    fn a_map_run_without_records_is_found_by_the_scan_of_the_parent_machine() {
        let log = Arc::new(statelog_store::MemoryLog::new());
        let engine = engine_on(&log);
        let definition = distributed("STANDARD", "", r#"{"Type":"Pass","End":true}"#);
        let described = run(&engine, &definition, r#"{"items":[1,2]}"#);
        let parent = described.execution_arn;
        let map_run_arn = engine.list_map_runs(&parent).expect("runs")[0]
            .map_run_arn
            .clone();
        drop(engine);
        let older = Arc::new(statelog_store::MemoryLog::new());
        let mut kept = 0;
        statelog_store::Log::scan(&*log, &mut |_, kind, payload| {
            if kind != statelog_store::map_runs::KIND_MAP_RUN {
                statelog_store::Log::append_batch(&*older, &[(kind, payload)])?;
                kept += 1;
            }
            Ok(())
        })
        .expect("copies");
        assert!(kept > 0);
        let engine = engine_on(&older);
        assert!(engine.inner.store.map_run(&map_run_arn).is_none());
        let run = engine.describe_map_run(&map_run_arn).expect("described");
        assert_eq!(run.execution_arn, parent);
        assert_eq!(run.status, MapRunStatus::Succeeded);
        assert_eq!(
            engine
                .inner
                .map_runs
                .parent_scans
                .load(std::sync::atomic::Ordering::Relaxed),
            1,
            "found by the scan"
        );
        let page = engine
            .list_map_run_executions(&map_run_arn, None, 0, None)
            .expect("lists");
        assert_eq!(page.executions.len(), 2);
    }

    /// An EXPRESS run with an ItemReader and a ResultWriter, stopped by a restart mid-run: the
    /// reopened engine writes the recorded results to its new sink first and runs only the
    /// unrecorded items; the manifest's result files hold every item's result exactly once.
    #[test]
    fn a_resumed_express_run_writes_every_result_once_through_its_result_writer() {
        let root = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(root.path().join("data")).expect("a bucket");
        let lines: String = (0..12).map(|n| format!("{{\"n\":{n}}}\n")).collect();
        std::fs::write(root.path().join("data/in.jsonl"), lines).expect("items");
        let log = Arc::new(statelog_store::MemoryLog::new());
        let open = || {
            let stores =
                statelog_items::ObjectStores::open(statelog_items::ObjectStoreConfig::Local {
                    root: root.path().to_path_buf(),
                })
                .expect("a local object store");
            let options = EngineOptions {
                background_timers: false,
                clock: Arc::new(ManualClock::new(NOW_MS)),
                item_sources: Some(ItemSources::new(stores)),
                ..EngineOptions::default()
            };
            Engine::open_with_log(log.clone(), options).expect("opens")
        };
        let handler = |engine: &Engine, calls: &Arc<Mutex<Vec<u64>>>, hold_from: u64| {
            let calls = calls.clone();
            engine.register_integration(ITEM_RESOURCE, move |input: Value, _context: Value| {
                let n = input["n"].as_u64().unwrap_or_default();
                calls.lock().push(n);
                async move {
                    if n >= hold_from {
                        std::future::pending::<()>().await;
                    }
                    Ok::<Value, TaskError>(json!(n * 10))
                }
            });
        };
        let engine = open();
        let calls = Arc::new(Mutex::new(Vec::new()));
        handler(&engine, &calls, 6);
        let definition = format!(
            r#"{{"StartAt":"M","States":{{"M":{{"Type":"Map","MaxConcurrency":2,
            "ItemReader":{{"Resource":"arn:aws:states:::s3:getObject",
              "Parameters":{{"Bucket":"data","Key":"in.jsonl"}},"ReaderConfig":{{"InputType":"JSONL"}}}},
            "ResultWriter":{{"Resource":"arn:aws:states:::s3:putObject",
              "Parameters":{{"Bucket":"data","Prefix":"out"}}}},
            "ItemProcessor":{{"ProcessorConfig":{{"Mode":"DISTRIBUTED","ExecutionType":"EXPRESS"}},
              "StartAt":"C","States":{{"C":{{"Type":"Task","Resource":"{ITEM_RESOURCE}","End":true}}}}}},
            "End":true}}}}}}"#
        );
        let (arn, map_run_arn) = start_parent(&engine, &definition, &[]);
        wait_for("items 6 and 7 in flight", || calls.lock().len() == 8);
        engine.inner.store.sync_unsynced().expect("syncs");
        drop(engine);

        let engine = open();
        let again = Arc::new(Mutex::new(Vec::new()));
        handler(&engine, &again, u64::MAX);
        let described = engine.wait_until_closed(&arn).expect("closes");
        assert_eq!(
            described.status,
            ExecutionStatus::Succeeded,
            "{described:?}"
        );
        let mut rerun = again.lock().clone();
        rerun.sort_unstable();
        assert_eq!(
            rerun,
            (6..12).collect::<Vec<u64>>(),
            "only unrecorded items run"
        );
        let output = described.output.expect("output");
        let key = output["ResultWriterDetails"]["Key"]
            .as_str()
            .expect("a key");
        let read = |key: &str| -> Value {
            serde_json::from_slice(
                &std::fs::read(root.path().join("data").join(key)).expect("a file"),
            )
            .expect("json")
        };
        let manifest = read(key);
        let mut outputs = Vec::new();
        for file in manifest["ResultFiles"]["SUCCEEDED"]
            .as_array()
            .expect("succeeded files")
        {
            for result in read(file["Key"].as_str().expect("a key"))
                .as_array()
                .expect("results")
            {
                let text = result["Output"].as_str().expect("an output");
                outputs.push(serde_json::from_str::<u64>(text).expect("a number"));
            }
        }
        outputs.sort_unstable();
        assert_eq!(outputs, (0..12).map(|n| n * 10).collect::<Vec<u64>>());
        let counts = engine.describe_map_run(&map_run_arn).expect("described");
        assert_eq!(counts.item_counts.total, 12);
        assert_eq!(counts.item_counts.succeeded, 12);
        assert_eq!(counts.item_counts.results_written, 12);
    }

    /// A redriven EXPRESS run keeps its recorded successes (their children do not run again,
    /// their outputs stay) and reruns the failed child and the ones never started.
    #[test]
    fn a_redriven_express_run_reruns_only_the_children_that_did_not_succeed() {
        let engine = engine();
        let broken = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let calls = Arc::new(Mutex::new(Vec::new()));
        {
            let (broken, calls) = (broken.clone(), calls.clone());
            engine.register_integration(ITEM_RESOURCE, move |input: Value, _context: Value| {
                let n = input.as_u64().unwrap_or_default();
                calls.lock().push(n);
                let fail = n == 2 && broken.load(Ordering::SeqCst);
                async move {
                    if fail {
                        Err(TaskError::new("Broken", "item 2 fails once"))
                    } else {
                        Ok(json!(n * 10))
                    }
                }
            });
        }
        let definition = distributed(
            "EXPRESS",
            r#""MaxConcurrency":1,"#,
            &format!(r#"{{"Type":"Task","Resource":"{ITEM_RESOURCE}","End":true}}"#),
        );
        let described = run(&engine, &definition, r#"{"items":[0,1,2,3,4]}"#);
        assert_eq!(described.status, ExecutionStatus::Failed, "{described:?}");
        assert_eq!(calls.lock().clone(), vec![0, 1, 2]);
        broken.store(false, Ordering::SeqCst);
        calls.lock().clear();
        let arn = described.execution_arn;
        engine.redrive_execution(&arn, None).expect("redrives");
        let described = engine.wait_until_closed(&arn).expect("closes");
        assert_eq!(
            described.status,
            ExecutionStatus::Succeeded,
            "{described:?}"
        );
        assert_eq!(described.output, Some(json!([0, 10, 20, 30, 40])));
        assert_eq!(
            calls.lock().clone(),
            vec![2, 3, 4],
            "the successes are kept"
        );
    }
}
