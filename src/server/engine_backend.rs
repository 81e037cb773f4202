//! engine_backend: [`Backend`] over the public engine API ([`crate::engine::Engine`]).
//!
//! Owns the mapping from accounts to engines. The engine has no namespace inside one data
//! directory yet, so the account boundary is a directory boundary: in development mode the one
//! account's engine lives in the data directory itself (so `statelog executions --data-dir DIR`
//! sees what the server ran); with a credentials file each account gets its own engine in
//! `DIR/accounts/<account id>/`, opened on first use. One account can therefore never name,
//! list or touch another's state machines or executions.
//!
//! Invariants: engine calls that commit block until the log's fdatasync, so each runs under
//! `block_in_place` (multi-threaded runtime) or on the blocking pool, never stalling a reactor,
//! except the async ones that await the log's durability instead of blocking (a task token's
//! answer, `send_task_*_awaiting`; a long poll's claim);
//! calls that commit nothing (reads), and every call over a log that does not sync, run inline
//! once the account's engine is open (opening it, which replays the log, never runs inline); engine errors keep their AWS name, and only the
//! engine's own faults (store, interpreter, runtime) become 5xx. Must not: interpret definitions,
//! names or inputs itself (the engine does).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;

use super::backend::{
    ActivityInfo, ActivityTaskInfo, Backend, Caller, ExecutionInfo, ExecutionStarted,
    ExecutionSummary, MetricSample, Page, StateMachineCreated, StateMachineInfo,
    StateMachineSummary, StateMachineUpdated, SwfCallKind, TaskListTask,
};
use super::error::Error;
use super::limits::{ACCOUNTS_OPEN_MAX, LIST_PAGE_STATE_MACHINES_DEFAULT};
use super::protocol::{
    CreateStateMachineInput, GetExecutionHistoryInput, ListExecutionsInput, RedriveExecutionInput,
    StartExecutionInput, StartSyncExecutionInput, StopExecutionInput, TagInput,
    UpdateStateMachineInput,
};
use super::swf_service::fault_error;
use crate::engine::arn::{Arn, ResourceType};
use crate::engine::swf::api::{DescribeDomainInput, Fault, SwfError};
use crate::engine::{
    ActivityDescription, Durability, Engine, EngineMetrics, EngineOptions, Error as EngineError,
    ExecutionStatus, ExpressOutcome, HistoryQuery, ListExecutions, MachineDescription, Tag,
    CLOSED_STATUSES, COMMIT_LATENCY_BUCKETS_MICROS,
};
use crate::limits::ACTIVITY_POLL_MS_MAX;

/// Where each account's engine lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccountLayout {
    /// Development mode: one account, its engine in the data directory itself.
    Single {
        /// The account id.
        account_id: String,
    },
    /// One engine per account, in `<data dir>/accounts/<account id>/`.
    PerAccount,
}

/// The engines of every account a server has seen.
#[derive(Debug)]
pub struct EngineBackend {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    data_dir: PathBuf,
    layout: AccountLayout,
    options: EngineOptions,
    engines: Mutex<HashMap<String, Engine>>,
    /// Whether a read may wait on the log (a replicated log, whose sync before a listing or
    /// history read waits for a quorum): then reads run where they may block, too.
    reads_may_block: bool,
}

/// Maps an engine error to the server's, keeping its AWS name.
pub fn engine_error(error: EngineError) -> Error {
    if let Some(refusal) = error.log_refusal() {
        // The detail (paths included) goes to the server's log; the client gets what to do.
        tracing::error!(%error, "the log refused the call");
        return Error::LogUnavailable {
            message: refusal.message(),
        };
    }
    if let EngineError::TooManyTags { resource_arn, .. } = &error {
        return Error::TooManyTags {
            resource_name: resource_arn.clone(),
            message: error.to_string(),
        };
    }
    let aws_name = error.aws_name();
    // The engine names its own faults `InternalFailure`; their text (file paths, LSNs) is the
    // operator's, logged by the router, never the client's. Everything else is about the input.
    if aws_name == "InternalFailure" {
        return Error::Internal {
            detail: error.to_string(),
        };
    }
    Error::Engine {
        aws_name,
        message: error.to_string(),
        server_fault: false,
    }
}

fn join_error(error: tokio::task::JoinError) -> Error {
    Error::Internal {
        detail: format!("the engine call did not complete: {error}"),
    }
}

fn activity_info(a: ActivityDescription) -> ActivityInfo {
    ActivityInfo {
        arn: a.activity_arn,
        name: a.name,
        created_ms: a.created_ms,
    }
}

fn engine_tags(tags: Vec<TagInput>) -> Vec<Tag> {
    tags.into_iter().map(|t| Tag::new(t.key, t.value)).collect()
}

fn machine_info(m: MachineDescription) -> StateMachineInfo {
    StateMachineInfo {
        arn: m.state_machine_arn,
        name: m.name,
        definition: m.definition,
        role_arn: m.role_arn,
        created_ms: m.created_ms,
        updated_ms: m.updated_ms,
        revision_id: m.revision_id,
        variable_references: m.variable_references,
        machine_type: m.machine_type,
        description: m.description,
        map_run_arn: None,
        label: None,
    }
}

impl EngineBackend {
    /// A backend that opens engines under `data_dir` with `options` (region, clock, durability;
    /// `account` is set per account).
    pub fn new(
        data_dir: impl Into<PathBuf>,
        layout: AccountLayout,
        options: EngineOptions,
    ) -> Self {
        Self {
            shared: Arc::new(Shared {
                data_dir: data_dir.into(),
                layout,
                options,
                engines: Mutex::new(HashMap::new()),
                reads_may_block: false,
            }),
        }
    }

    /// A backend serving `engine`, already open, as the one account of `layout` (a
    /// [`AccountLayout::Single`]): for embedders and tests that open the engine themselves.
    pub fn with_open_engine(
        data_dir: impl Into<PathBuf>,
        account_id: &str,
        engine: Engine,
        options: EngineOptions,
    ) -> Self {
        let backend = Self::new(
            data_dir,
            AccountLayout::Single {
                account_id: account_id.to_owned(),
            },
            options,
        );
        backend
            .shared
            .engines
            .lock()
            .insert(account_id.to_owned(), engine);
        backend
    }

    /// [`EngineBackend::with_open_engine`] over a log whose reads may wait on other machines
    /// (a cluster partition's replicated log): every engine call, reads included, runs where
    /// it may block, never inline on a worker that holds connections and timers.
    pub fn with_open_engine_over_replicated_log(
        data_dir: impl Into<PathBuf>,
        account_id: &str,
        engine: Engine,
        options: EngineOptions,
    ) -> Self {
        let mut backend = Self::with_open_engine(data_dir, account_id, engine, options);
        if let Some(shared) = Arc::get_mut(&mut backend.shared) {
            shared.reads_may_block = true;
        }
        backend
    }

    /// Opens the development account's engine now, so a broken data directory stops the server
    /// at start-up instead of failing the first request.
    pub fn open_eagerly(&self) -> Result<(), Error> {
        if let AccountLayout::Single { account_id } = &self.shared.layout {
            let caller = Caller {
                account_id: account_id.clone(),
                region: self.shared.options.region.clone(),
                access_key_id: String::new(),
            };
            self.shared.engine(&caller)?;
        }
        Ok(())
    }

    /// The engine of `caller`'s account, opened on first use (blocks while recovery replays the
    /// log).
    pub fn engine(&self, caller: &Caller) -> Result<Engine, Error> {
        self.shared.engine(caller)
    }

    /// Runs `call` on the caller's engine on the blocking pool (opening it there if needed).
    /// With a log that does not sync (`Durability::NoSync`) no commit waits on the disk, so
    /// once the engine is open the call runs inline (see [`EngineBackend::read_engine`]).
    async fn with_engine<T, F>(&self, caller: &Caller, call: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(Engine) -> Result<T, Error> + Send + 'static,
    {
        if self.shared.options.durability == Durability::NoSync {
            return self.read_engine(caller, call).await;
        }
        self.hand_over(caller, call).await
    }

    /// Runs `call`, which commits nothing (a read, or taking the engine handle), on the
    /// caller's engine. Once the engine is open it runs inline on the worker: a read never
    /// waits for a commit's fdatasync, and handing the worker over (`block_in_place`) costs
    /// more than the read (about 25 µs a request on loopback, `benches/serve.rs`). Opening the
    /// engine (recovery) still happens on the blocking pool.
    async fn read_engine<T, F>(&self, caller: &Caller, call: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(Engine) -> Result<T, Error> + Send + 'static,
    {
        let open = self.shared.engines.lock().get(&caller.account_id).cloned();
        match open {
            Some(engine) if !self.shared.reads_may_block => call(engine),
            _ => self.hand_over(caller, call).await,
        }
    }

    /// Runs `call` where it may block: under `block_in_place` on a multi-threaded runtime,
    /// else on the blocking pool.
    async fn hand_over<T, F>(&self, caller: &Caller, call: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(Engine) -> Result<T, Error> + Send + 'static,
    {
        let shared = self.shared.clone();
        let caller = caller.clone();
        let multi_thread = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        if multi_thread {
            // On a multi-threaded runtime the call runs right here, after handing this worker's
            // other tasks to another thread: no hop to the blocking pool and back.
            tokio::task::block_in_place(move || call(shared.engine(&caller)?))
        } else {
            tokio::task::spawn_blocking(move || call(shared.engine(&caller)?))
                .await
                .map_err(join_error)?
        }
    }
}

impl Shared {
    /// The engine of `caller`'s account, opened on first use. Blocks while opening (recovery
    /// replays the log), so call it from the blocking pool.
    pub fn engine(&self, caller: &Caller) -> Result<Engine, Error> {
        let mut engines = self.engines.lock();
        if let Some(engine) = engines.get(&caller.account_id) {
            return Ok(engine.clone());
        }
        let dir = match &self.layout {
            AccountLayout::Single { account_id } => {
                // The router gives every development-mode caller this one account.
                assert_eq!(
                    account_id, &caller.account_id,
                    "development mode has exactly one account"
                );
                self.data_dir.clone()
            }
            AccountLayout::PerAccount => {
                assert!(
                    caller.account_id.len() == 12
                        && caller.account_id.bytes().all(|b| b.is_ascii_digit()),
                    "account ids are validated when the credentials file is loaded"
                );
                self.data_dir.join("accounts").join(&caller.account_id)
            }
        };
        if engines.len() >= ACCOUNTS_OPEN_MAX {
            return Err(Error::Engine {
                aws_name: "ServiceUnavailable",
                message: format!("this server already serves {ACCOUNTS_OPEN_MAX} accounts"),
                server_fault: true,
            });
        }
        std::fs::create_dir_all(&dir).map_err(|e| Error::Internal {
            detail: format!("cannot create the data directory {}: {e}", dir.display()),
        })?;
        let options = EngineOptions {
            account: caller.account_id.clone(),
            ..self.options.clone()
        };
        let engine = Engine::open(&dir, options).map_err(engine_error)?;
        tracing::info!(account = %caller.account_id, dir = %dir.display(), "engine opened");
        // Records that do not decode damage only their executions: the engine serves the rest,
        // and the operator learns which (docs/operations.md).
        for damaged in engine.damaged_executions() {
            tracing::error!(
                account = %caller.account_id,
                lsn = damaged.lsn.0,
                kind = damaged.kind,
                execution = damaged.execution_arn.as_deref().unwrap_or("unknown"),
                reason = %damaged.reason,
                "damaged record: it passed its checksum but does not decode; calls on its execution answer an error naming it"
            );
        }
        engines.insert(caller.account_id.clone(), engine.clone());
        Ok(engine)
    }
}

impl Backend for EngineBackend {
    fn region(&self) -> &str {
        &self.shared.options.region
    }

    async fn create_state_machine(
        &self,
        caller: &Caller,
        input: CreateStateMachineInput,
    ) -> Result<StateMachineCreated, Error> {
        self.with_engine(caller, move |engine| {
            let machine_type = input.machine_type()?;
            let tags = engine_tags(input.tags.unwrap_or_default());
            let (m, version) = engine
                .create_typed_machine_published(
                    &input.name,
                    &input.definition,
                    Some(&input.role_arn),
                    machine_type,
                    &tags,
                    input.publish.unwrap_or(false),
                    input.version_description.as_deref(),
                )
                .map_err(engine_error)?;
            Ok(StateMachineCreated {
                arn: m.state_machine_arn,
                created_ms: m.created_ms,
                version_arn: version.map(|v| v.state_machine_version_arn),
            })
        })
        .await
    }

    async fn describe_state_machine(
        &self,
        caller: &Caller,
        arn: &str,
    ) -> Result<StateMachineInfo, Error> {
        let arn = arn.to_owned();
        self.read_engine(caller, move |engine| {
            require_machine_arn(&arn)?;
            engine
                .describe_state_machine(&arn)
                .map(machine_info)
                .map_err(engine_error)
        })
        .await
    }

    async fn list_state_machines(
        &self,
        caller: &Caller,
        max_results: u32,
        next_token: Option<String>,
    ) -> Result<Page<StateMachineSummary>, Error> {
        self.read_engine(caller, move |engine| {
            page_by_name(
                engine.list_state_machines(),
                |m| m.name.as_str(),
                max_results,
                next_token.as_deref(),
                |m| StateMachineSummary {
                    arn: m.state_machine_arn,
                    name: m.name,
                    created_ms: m.created_ms,
                    machine_type: m.machine_type,
                },
            )
        })
        .await
    }

    async fn update_state_machine(
        &self,
        caller: &Caller,
        input: UpdateStateMachineInput,
    ) -> Result<StateMachineUpdated, Error> {
        self.with_engine(caller, move |engine| {
            require_arn(&input.state_machine_arn, ResourceType::StateMachine)?;
            engine
                .update_state_machine_published(
                    &input.state_machine_arn,
                    input.definition.as_deref(),
                    input.role_arn.as_deref(),
                    input.publish.unwrap_or(false),
                    input.version_description.as_deref(),
                )
                .map(|(m, version)| StateMachineUpdated {
                    updated_ms: m.updated_ms.unwrap_or(m.created_ms),
                    revision_id: m.revision_id,
                    version_arn: version.map(|v| v.state_machine_version_arn),
                })
                .map_err(engine_error)
        })
        .await
    }

    async fn create_activity(
        &self,
        caller: &Caller,
        name: String,
        tags: Vec<TagInput>,
    ) -> Result<ActivityInfo, Error> {
        self.with_engine(caller, move |engine| {
            engine
                .create_activity_with_tags(&name, &engine_tags(tags))
                .map(activity_info)
                .map_err(engine_error)
        })
        .await
    }

    async fn tag_resource(
        &self,
        caller: &Caller,
        resource_arn: String,
        tags: Vec<TagInput>,
    ) -> Result<(), Error> {
        self.with_engine(caller, move |engine| {
            engine
                .tag_resource(&resource_arn, &engine_tags(tags))
                .map_err(engine_error)
        })
        .await
    }

    async fn untag_resource(
        &self,
        caller: &Caller,
        resource_arn: String,
        tag_keys: Vec<String>,
    ) -> Result<(), Error> {
        self.with_engine(caller, move |engine| {
            engine
                .untag_resource(&resource_arn, &tag_keys)
                .map_err(engine_error)
        })
        .await
    }

    async fn list_tags_for_resource(
        &self,
        caller: &Caller,
        resource_arn: String,
    ) -> Result<Vec<TagInput>, Error> {
        self.with_engine(caller, move |engine| {
            let tags = engine
                .list_tags_for_resource(&resource_arn)
                .map_err(engine_error)?;
            Ok(tags
                .into_iter()
                .map(|t| TagInput {
                    key: t.key,
                    value: t.value,
                })
                .collect())
        })
        .await
    }

    async fn delete_state_machine(&self, caller: &Caller, arn: &str) -> Result<(), Error> {
        let arn = arn.to_owned();
        self.with_engine(caller, move |engine| {
            require_arn(&arn, ResourceType::StateMachine)?;
            match engine.delete_state_machine(&arn) {
                // AWS answers success for a machine that is already gone.
                Err(EngineError::StateMachineDoesNotExist { .. }) => Ok(()),
                other => other.map_err(engine_error),
            }
        })
        .await
    }

    async fn start_execution(
        &self,
        caller: &Caller,
        input: StartExecutionInput,
    ) -> Result<ExecutionStarted, Error> {
        require_machine_arn(&input.state_machine_arn)?;
        let started = if self.shared.options.durability == Durability::NoSync {
            self.read_engine(caller, move |engine| {
                let input_text = input.input.as_deref().unwrap_or("{}");
                engine
                    .start_execution(&input.state_machine_arn, input.name.as_deref(), input_text)
                    .map_err(engine_error)
            })
            .await?
        } else {
            // The start's commit does not block this worker while others are in flight: the
            // engine awaits its durability (on an idle log it syncs in place).
            let engine = self.read_engine(caller, Ok).await?;
            engine
                .start_execution_async(
                    &input.state_machine_arn,
                    input.name.as_deref(),
                    input.input.as_deref().unwrap_or("{}"),
                )
                .await
                .map_err(engine_error)?
        };
        Ok(ExecutionStarted {
            arn: started.execution_arn,
            start_ms: started.start_ms,
        })
    }

    async fn start_sync_execution(
        &self,
        caller: &Caller,
        input: StartSyncExecutionInput,
    ) -> Result<ExpressOutcome, Error> {
        // The start is in memory (an Express execution writes nothing), so it runs inline; the
        // wait for its end is awaited, holding no thread.
        let started = self
            .read_engine(caller, move |engine| {
                require_arn(&input.state_machine_arn, ResourceType::StateMachine)?;
                engine
                    .start_express_execution(
                        &input.state_machine_arn,
                        input.name.as_deref(),
                        input.input.as_deref().unwrap_or("{}"),
                    )
                    .map_err(engine_error)
            })
            .await?;
        started.outcome().await.map_err(engine_error)
    }

    async fn describe_execution(&self, caller: &Caller, arn: &str) -> Result<ExecutionInfo, Error> {
        let arn = arn.to_owned();
        self.read_engine(caller, move |engine| {
            require_arn(&arn, ResourceType::Execution)?;
            let d = engine.describe_execution(&arn).map_err(engine_error)?;
            Ok(ExecutionInfo {
                arn: d.execution_arn,
                state_machine_arn: d.state_machine_arn,
                name: d.name,
                status: d.status.aws_name(),
                start_ms: d.start_ms,
                stop_ms: d.stop_ms,
                input: Some(d.input_text),
                output: d.output_text,
                error: d.error,
                cause: d.cause,
                redrive_count: d.redrive.redrive_count,
                redrive_ms: d.redrive.redrive_ms,
                redrive_status: Some(d.redrive.redrive_status.aws_name()),
                redrive_status_reason: d
                    .redrive
                    .redrive_status_reason
                    .map(|reason| reason.to_string()),
                version_arn: d.state_machine_version_arn,
                alias_arn: d.state_machine_alias_arn,
                map_run_arn: d.map_run_arn,
            })
        })
        .await
    }

    async fn describe_state_machine_for_execution(
        &self,
        caller: &Caller,
        execution_arn: &str,
    ) -> Result<StateMachineInfo, Error> {
        let arn = execution_arn.to_owned();
        self.read_engine(caller, move |engine| {
            require_arn(&arn, ResourceType::Execution)?;
            let mut info = engine
                .describe_state_machine_for_execution(&arn)
                .map(machine_info)
                .map_err(engine_error)?;
            // A Distributed Map's child runs on the hidden machine `MACHINE/LABEL` (no caller
            // can name a machine with a slash): it names its Map Run and the Map's label.
            if let Some((_, label)) = info.name.split_once('/') {
                let label = label.to_string();
                let described = engine.describe_execution(&arn).map_err(engine_error)?;
                info.map_run_arn = described.map_run_arn;
                info.label = Some(label);
            }
            Ok(info)
        })
        .await
    }

    async fn list_executions(
        &self,
        caller: &Caller,
        input: ListExecutionsInput,
        max_results: u32,
    ) -> Result<Page<ExecutionSummary>, Error> {
        self.read_engine(caller, move |engine| {
            let status_filter = match input.status_filter.as_deref() {
                None => None,
                Some(name) => match ExecutionStatus::from_aws_name(name) {
                    Some(status) => Some(status),
                    // A status the engine does not have yet (PENDING_REDRIVE): nothing has it.
                    None => {
                        return Ok(Page {
                            items: Vec::new(),
                            next_token: None,
                        })
                    }
                },
            };
            if let Some(arn) = &input.state_machine_arn {
                require_machine_arn(arn)?;
            }
            let page = match &input.map_run_arn {
                Some(map_run_arn) => engine
                    .list_map_run_executions(
                        map_run_arn,
                        status_filter,
                        max_results as usize,
                        input.next_token.as_deref(),
                    )
                    .map_err(engine_error)?,
                None => {
                    let request = ListExecutions {
                        state_machine: input.state_machine_arn,
                        status_filter,
                        max_results: max_results as usize,
                        next_token: input.next_token,
                    };
                    match input.redrive_filter.as_deref() {
                        None => engine.list_executions(&request),
                        Some(filter) => {
                            engine.list_executions_by_redrive(&request, filter == "REDRIVEN")
                        }
                    }
                    .map_err(engine_error)?
                }
            };
            Ok(Page {
                items: page
                    .executions
                    .into_iter()
                    .map(|e| ExecutionSummary {
                        arn: e.execution_arn,
                        state_machine_arn: e.state_machine_arn,
                        name: e.name,
                        status: e.status.aws_name(),
                        start_ms: e.start_ms,
                        stop_ms: e.stop_ms,
                        redrive_count: e.redrive_count,
                        redrive_ms: e.redrive_ms,
                        version_arn: e.state_machine_version_arn,
                        alias_arn: e.state_machine_alias_arn,
                    })
                    .collect(),
                next_token: page.next_token,
            })
        })
        .await
    }

    async fn stop_execution(
        &self,
        caller: &Caller,
        input: StopExecutionInput,
    ) -> Result<u64, Error> {
        self.with_engine(caller, move |engine| {
            require_arn(&input.execution_arn, ResourceType::Execution)?;
            engine
                .stop_execution(
                    &input.execution_arn,
                    input.error.as_deref(),
                    input.cause.as_deref(),
                )
                .map_err(engine_error)
        })
        .await
    }

    async fn get_execution_history(
        &self,
        caller: &Caller,
        input: GetExecutionHistoryInput,
        max_results: u32,
    ) -> Result<Page<Value>, Error> {
        self.read_engine(caller, move |engine| {
            require_arn(&input.execution_arn, ResourceType::Execution)?;
            let page = engine
                .get_execution_history(
                    &input.execution_arn,
                    &HistoryQuery {
                        max_results: max_results as usize,
                        next_token: input.next_token,
                        reverse_order: input.reverse_order.unwrap_or(false),
                        include_execution_data: input.include_execution_data.unwrap_or(true),
                    },
                )
                .map_err(engine_error)?;
            let rendered = page.to_aws_json();
            let events = match rendered.get("events") {
                Some(Value::Array(events)) => events.clone(),
                _ => Vec::new(),
            };
            Ok(Page {
                items: events,
                next_token: page.next_token,
            })
        })
        .await
    }

    async fn describe_activity(&self, caller: &Caller, arn: String) -> Result<ActivityInfo, Error> {
        self.read_engine(caller, move |engine| {
            require_arn(&arn, ResourceType::Activity)?;
            engine
                .describe_activity(&arn)
                .map(activity_info)
                .map_err(engine_error)
        })
        .await
    }

    async fn list_activities(
        &self,
        caller: &Caller,
        max_results: u32,
        next_token: Option<String>,
    ) -> Result<Page<ActivityInfo>, Error> {
        self.read_engine(caller, move |engine| {
            page_by_name(
                engine.list_activities(),
                |a| a.name.as_str(),
                max_results,
                next_token.as_deref(),
                activity_info,
            )
        })
        .await
    }

    async fn delete_activity(&self, caller: &Caller, arn: String) -> Result<(), Error> {
        self.with_engine(caller, move |engine| {
            require_arn(&arn, ResourceType::Activity)?;
            match engine.delete_activity(&arn) {
                // AWS answers success for an activity that is already gone.
                Err(EngineError::ActivityDoesNotExist { .. }) => Ok(()),
                other => other.map_err(engine_error),
            }
        })
        .await
    }

    async fn get_activity_task(
        &self,
        caller: &Caller,
        arn: String,
        worker_name: Option<String>,
    ) -> Result<Option<ActivityTaskInfo>, Error> {
        require_arn(&arn, ResourceType::Activity)?;
        // Opening the engine may block (recovery); the poll itself is async and must not.
        let engine = self.read_engine(caller, Ok).await?;
        let task = engine
            .get_activity_task(&arn, worker_name.as_deref())
            .await
            .map_err(engine_error)?;
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
        self.with_engine(caller, move |engine| {
            require_arn(&input.execution_arn, ResourceType::Execution)?;
            engine
                .redrive_execution(&input.execution_arn, input.client_token.as_deref())
                .map(|outcome| outcome.redrive_ms)
                .map_err(engine_error)
        })
        .await
    }

    async fn send_task_success(
        &self,
        caller: &Caller,
        task_token: String,
        output: String,
    ) -> Result<(), Error> {
        let namespace = caller.account_id.clone();
        if self.shared.options.durability == Durability::NoSync {
            return self
                .read_engine(caller, move |engine| {
                    engine
                        .send_task_success_in(&namespace, &task_token, &output)
                        .map_err(engine_error)
                })
                .await;
        }
        // The answer's commit does not block this worker: the engine awaits its durability.
        let engine = self.read_engine(caller, Ok).await?;
        engine
            .send_task_success_awaiting(&namespace, &task_token, &output)
            .await
            .map_err(engine_error)
    }

    async fn send_task_failure(
        &self,
        caller: &Caller,
        task_token: String,
        error: String,
        cause: String,
    ) -> Result<(), Error> {
        let namespace = caller.account_id.clone();
        if self.shared.options.durability == Durability::NoSync {
            return self
                .read_engine(caller, move |engine| {
                    engine
                        .send_task_failure_in(&namespace, &task_token, &error, &cause)
                        .map_err(engine_error)
                })
                .await;
        }
        let engine = self.read_engine(caller, Ok).await?;
        engine
            .send_task_failure_awaiting(&namespace, &task_token, &error, &cause)
            .await
            .map_err(engine_error)
    }

    async fn send_task_heartbeat(&self, caller: &Caller, task_token: String) -> Result<(), Error> {
        let namespace = caller.account_id.clone();
        self.with_engine(caller, move |engine| {
            engine
                .send_task_heartbeat_in(&namespace, &task_token)
                .map_err(engine_error)
        })
        .await
    }

    async fn poll_task_list(
        &self,
        caller: &Caller,
        list: String,
        identity: Option<String>,
    ) -> Result<Option<TaskListTask>, Error> {
        // Opening the engine may block (recovery); the poll itself is async and must not.
        let engine = self.read_engine(caller, Ok).await?;
        let task = engine
            .poll_task_lists(
                &caller.account_id,
                &[list],
                identity.as_deref(),
                ACTIVITY_POLL_MS_MAX,
            )
            .await
            .map_err(engine_error)?;
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
        let namespace = caller.account_id.clone();
        self.read_engine(caller, move |engine| {
            Ok(engine.task_list_pending_count(&namespace, &list))
        })
        .await
    }

    async fn swf<T, F>(&self, caller: &Caller, kind: SwfCallKind, call: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&Engine) -> Result<T, SwfError> + Send + 'static,
    {
        let run = move |engine: Engine| call(&engine).map_err(fault_error);
        match kind {
            // A read may wait for a run's lock held across a sync, or read the log: off the
            // reactor like a commit, so two describes of busy runs never stall the server.
            SwfCallKind::Read | SwfCallKind::Commit => self.with_engine(caller, run).await,
            SwfCallKind::LongPoll => {
                // Opening the engine may block (recovery); the poll blocks its thread up to its
                // wait, so it runs on the blocking pool, never on a reactor thread.
                let engine = self.read_engine(caller, Ok).await?;
                tokio::task::spawn_blocking(move || run(engine))
                    .await
                    .map_err(join_error)?
            }
        }
    }

    async fn catalog_engine<T, F>(&self, caller: &Caller, call: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&Engine) -> Result<T, EngineError> + Send + 'static,
    {
        self.with_engine(caller, move |engine| call(&engine).map_err(engine_error))
            .await
    }

    async fn swf_domain_registered(&self, caller: &Caller, name: String) -> Result<bool, Error> {
        self.read_engine(caller, move |engine| {
            match engine.swf().describe_domain(&DescribeDomainInput { name }) {
                Ok(_) => Ok(true),
                Err(error) if error.fault == Fault::UnknownResource => Ok(false),
                Err(error) => Err(fault_error(error)),
            }
        })
        .await
    }

    fn metrics(&self) -> Vec<MetricSample> {
        let engines = self.shared.engines.lock();
        let mut samples = Vec::new();
        for (account, engine) in engines.iter() {
            engine_samples(account, &engine.metrics(), &mut samples);
            samples.push(MetricSample {
                name: "statelog_executions_open".into(),
                kind: "gauge",
                help: "Executions started and not yet closed.".into(),
                labels: vec![("account".into(), account.clone())],
                value: engine.open_execution_count() as f64,
            });
            samples.push(MetricSample {
                name: "statelog_engine_background_errors".into(),
                kind: "gauge",
                help: "Background failures the engine recorded (0 when healthy).".into(),
                labels: vec![("account".into(), account.clone())],
                value: engine.background_errors().len() as f64,
            });
        }
        samples
    }

    fn log_poisoned(&self) -> Option<String> {
        let engines = self.shared.engines.lock();
        engines.iter().find_map(|(account, engine)| {
            let refusal = engine.log_poisoned()?;
            tracing::error!(account = %account, reason = %refusal.message(), "the log is poisoned");
            Some(refusal.message())
        })
    }

    async fn shutdown(&self) {
        let engines: Vec<Engine> = self.shared.engines.lock().drain().map(|(_, e)| e).collect();
        let count = engines.len();
        // An SWF poll still waiting holds its own handle of the engine: stop the polls first, so
        // none claims a task its client will never receive and the last handle goes with them.
        for engine in &engines {
            engine.swf().stop_polls();
        }
        // Dropping the last handle stops the engine's runtime and closes its log; requests have
        // finished, and every acknowledged call was durable before it was answered.
        let _ = tokio::task::spawn_blocking(move || drop(engines)).await;
        tracing::info!(engines = count, "engines closed");
    }
}

/// The samples of one account's engine counters: executions started and closed by status,
/// transitions, log commits with their latency histogram, WAL syncs, and pending tasks per list.
fn engine_samples(account: &str, m: &EngineMetrics, out: &mut Vec<MetricSample>) {
    let sample = |name: &str, kind: &'static str, help: &str, labels: &[(&str, &str)], value| {
        let mut all = vec![("account".to_owned(), account.to_owned())];
        all.extend(
            labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        );
        MetricSample {
            name: name.to_owned(),
            kind,
            help: help.to_owned(),
            labels: all,
            value,
        }
    };
    out.push(sample(
        "statelog_executions_started_total",
        "counter",
        "Executions started since the engine opened.",
        &[],
        m.executions_started as f64,
    ));
    for (status, count) in CLOSED_STATUSES.iter().zip(m.executions_closed) {
        out.push(sample(
            "statelog_executions_closed_total",
            "counter",
            "Executions closed since the engine opened, by status.",
            &[("status", status)],
            count as f64,
        ));
    }
    out.push(sample(
        "statelog_state_transitions_total",
        "counter",
        "States entered since the engine opened.",
        &[],
        m.transitions as f64,
    ));
    out.push(sample(
        "statelog_wal_commits_total",
        "counter",
        "Decisions committed to the log (one durable batch each).",
        &[],
        m.commits as f64,
    ));
    out.push(sample(
        "statelog_wal_syncs_total",
        "counter",
        "fdatasync calls of the log (group commit: one may cover many commits).",
        &[],
        m.wal_syncs as f64,
    ));
    let help = "Time from a decision's append to its durability.";
    let mut cumulative = 0;
    for (i, count) in m.commit_buckets.iter().enumerate() {
        cumulative += count;
        let le = COMMIT_LATENCY_BUCKETS_MICROS.get(i).map_or_else(
            || "+Inf".to_owned(),
            |micros| (*micros as f64 / 1e6).to_string(),
        );
        out.push(sample(
            "statelog_wal_commit_seconds_bucket",
            "histogram",
            help,
            &[("le", &le)],
            cumulative as f64,
        ));
    }
    out.push(sample(
        "statelog_wal_commit_seconds_sum",
        "histogram",
        help,
        &[],
        m.commit_micros_sum as f64 / 1e6,
    ));
    out.push(sample(
        "statelog_wal_commit_seconds_count",
        "histogram",
        help,
        &[],
        m.commits as f64,
    ));
    for (_namespace, list, count) in &m.task_lists_pending {
        out.push(sample(
            "statelog_task_list_pending",
            "gauge",
            "Unclaimed tasks waiting in a task list.",
            &[("list", list)],
            *count as f64,
        ));
    }
}

/// Refuses a text that is not an ARN of `resource_type` (`InvalidArn`), with the engine's one
/// ARN parser. Whose resource it names is the engine's to decide.
/// `InvalidArn` unless `arn` is a state machine ARN, unqualified or of a version or alias.
fn require_machine_arn(arn: &str) -> Result<(), Error> {
    crate::engine::arn::parse_machine(arn)
        .map(drop)
        .map_err(engine_error)
}

fn require_arn(arn: &str, resource_type: ResourceType) -> Result<(), Error> {
    Arn::parse_as(arn, &[resource_type])
        .map(drop)
        .map_err(engine_error)
}

/// One page of `items` in name order: those after the previous page's `after:<name>` token, at
/// most `max_results` (the default page size when 0), and the token of the next page if any.
fn page_by_name<S, T>(
    mut items: Vec<S>,
    name_of: fn(&S) -> &str,
    max_results: u32,
    next_token: Option<&str>,
    into: impl FnMut(S) -> T,
) -> Result<Page<T>, Error> {
    let limit = if max_results == 0 {
        LIST_PAGE_STATE_MACHINES_DEFAULT
    } else {
        max_results
    } as usize;
    let after = match next_token {
        None => None,
        Some(token) => Some(token.strip_prefix("after:").ok_or_else(|| Error::Engine {
            aws_name: "InvalidToken",
            message: format!("invalid pagination token '{token}'"),
            server_fault: false,
        })?),
    };
    items.sort_by(|a, b| name_of(a).cmp(name_of(b)));
    let mut page: Vec<S> = items
        .into_iter()
        .filter(|item| after.map_or(true, |after| name_of(item) > after))
        .take(limit + 1)
        .collect();
    let next_token = if page.len() > limit {
        page.truncate(limit);
        page.last().map(|item| format!("after:{}", name_of(item)))
    } else {
        None
    };
    Ok(Page {
        items: page.into_iter().map(into).collect(),
        next_token,
    })
}
