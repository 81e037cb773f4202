//! jobs: the general `.sync` integration for jobs the embedder runs ([`JobIntegration`]).
//!
//! An integration is registered under its base ARN (no suffix) with the patterns it declares
//! ([`JobIntegration::patterns`]); the engine serves `<base><suffix>` for each of them:
//! - no suffix: `start` is called and the task succeeds with the job handle;
//! - `.waitForTaskToken`: `start` is called (the input carries `$$.Task.Token` if the definition
//!   puts it there), the handle is recorded as `TaskSubmitted` and the token answers the task;
//! - `.sync` / `.sync:2`: `start` is called, the handle is recorded as `TaskSubmitted` (so a
//!   restarted engine can poll or cancel the job), and the task completes when the job does:
//!   the integration pushes the outcome with [`Engine::report_job`], and the engine polls
//!   [`JobIntegration::status`] every [`JobIntegration::poll_interval_ms`] as a fallback, on a
//!   timer of the injected clock (one heap entry per running job, no thread, no task).
//!
//! A definition asking a registered integration for a pattern it did not declare is rejected by
//! `create_state_machine` (`InvalidDefinition`, code `InvalidResource`, naming the state). A
//! resource registered later, or a machine created before the registration (machines outlive
//! the process, integrations are registered after each `open`), is checked at dispatch: the
//! task fails with `States.Runtime`.
//!
//! Cancel: when the engine stops waiting for a running `.sync` job (StopExecution, a failed
//! Parallel branch or Map iteration around it, its TimeoutSeconds or HeartbeatSeconds), it calls
//! [`JobIntegration::cancel`] in the background. The history records the request (the abort or
//! timeout event follows the `TaskSubmitted` that holds the handle, both durable before cancel
//! is called); a failed cancel is kept in `background_errors`. A cancel never blocks the stop.
//! A job whose `start` had not returned when the task was cancelled is cancelled at its first
//! poll (its task is no longer awaited); a `start` whose future was dropped before it answered
//! leaves no handle and cannot be cancelled by the engine. After a restart, a job whose handle
//! is recorded is known from `open` on (`note_recovered_job`): if the engine stops waiting for
//! it before its integration is registered (a stop right after `open`), the cancel is queued
//! and `register_job_integration` calls it.
//!
//! Invariants: a job task completes at most once (push and poll both become a trigger decided
//! under the execution's slot lock; the second finds no waiting task and is stale); its start's
//! answer (`TaskSubmitted`) is always recorded before its outcome, in the same commit when the
//! outcome came first (`decide_job_outcome`); a poll entry
//! whose job is gone is dropped when it comes due. Must not: block a trigger on the
//! integration (every call runs on the engine's runtime), or hold a lock across an await.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};

use parking_lot::{Mutex, RwLock};
use serde_json::Value;

use super::backend::AttemptKey;
use super::error::ArgumentReason;
use super::kernel::{Commit, SlotState};
use super::{Engine, Error, Inner, TaskError, TaskFuture, TaskHandler};
use statelog_core::asl::{IntegrationPattern, StateKind, StateMachine, StateMap};
use statelog_core::history::EventId;
use statelog_core::interpreter::{Effect, Trigger, WaitingTask};

/// One job: one attempt of one Task state (`<execution ARN>/<task id>`, the `AttemptId`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct JobKey {
    /// The execution the task belongs to.
    pub execution_arn: String,
    /// The task (the id of its `TaskScheduled` event).
    pub task_id: u32,
}

impl fmt::Display for JobKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.execution_arn, self.task_id)
    }
}

impl JobKey {
    /// Parses an `AttemptId` (`<execution ARN>/<task id>`).
    pub fn parse(attempt_id: &str) -> Option<JobKey> {
        let (arn, id) = attempt_id.rsplit_once('/')?;
        Some(JobKey {
            execution_arn: arn.to_string(),
            task_id: id.parse().ok()?,
        })
    }
}

/// What `start` is given.
#[derive(Debug, Clone, PartialEq)]
pub struct JobStart {
    /// The job's key; push its outcome with it ([`Engine::report_job`]).
    pub key: JobKey,
    /// The pattern the Task asked for.
    pub pattern: IntegrationPattern,
    /// The task's effective input.
    pub input: Value,
    /// The task's Context object (with `AttemptId`).
    pub context: Value,
}

/// A started job, as `status` and `cancel` are given it.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// The job's key.
    pub key: JobKey,
    /// The pattern the Task asked for.
    pub pattern: IntegrationPattern,
    /// What `start` returned (recorded in `TaskSubmitted`).
    pub handle: Value,
}

/// How a job stands.
#[derive(Debug, Clone, PartialEq)]
pub enum JobStatus {
    /// Still running (pushed, it restarts the task's heartbeat clock).
    Running,
    /// Done: the task succeeds with this output.
    Succeeded(Value),
    /// Failed: the task fails with this error and cause (Retry/Catch see `error`).
    Failed {
        /// The error name.
        error: String,
        /// The human cause.
        cause: String,
    },
}

/// What the calls of a [`JobIntegration`] return.
pub type JobFuture<T> = Pin<Box<dyn Future<Output = Result<T, TaskError>> + Send + 'static>>;

/// An integration that runs jobs (see the module docs). The engine keeps it until it drops: an
/// integration that pushes through an [`Engine`] should hold one it can let go of (e.g. behind
/// an `Option`), or the two keep each other alive.
pub trait JobIntegration: Send + Sync + 'static {
    /// The patterns it supports; a Task asking for another is rejected.
    fn patterns(&self) -> Vec<IntegrationPattern>;
    /// How often the engine asks `status` of a running `.sync` job, in ms (at least
    /// `limits::JOB_POLL_INTERVAL_MS_MIN`).
    fn poll_interval_ms(&self) -> u64;
    /// Starts a job; the answer is its handle (any JSON), recorded in the history. Called at
    /// least once per task attempt (again after a restart if the handle was not recorded):
    /// deduplicate on `start.key`.
    fn start(&self, start: JobStart) -> JobFuture<Value>;
    /// How the job stands now.
    fn status(&self, job: Job) -> JobFuture<JobStatus>;
    /// Asks the job to stop; best effort. May come for a job that has just finished (a task
    /// aborted while `start` ran is cancelled at its first poll): make it idempotent.
    fn cancel(&self, job: Job) -> JobFuture<()>;
}

/// A running `.sync` job the engine waits for.
#[derive(Clone)]
pub(crate) struct RunningJob {
    integration: Arc<dyn JobIntegration>,
    job: Job,
}

/// A `.sync` job recovered on open (its handle is in the history) whose integration was not
/// registered yet.
pub(crate) struct RecoveredJob {
    /// The base ARN its integration will be registered under.
    base: String,
    job: Job,
}

impl RecoveredJob {
    /// The base ARN its integration will be registered under.
    pub(crate) fn base(&self) -> &str {
        &self.base
    }
}

/// The embedder job an attempt waits for: its part of the attempt (`attempts::Attempts`).
pub(crate) enum JobWait {
    /// Started (or picked up by its integration's registration): polled and cancelled.
    Running(RunningJob),
    /// Known from its recorded handle since `open`; its integration is not registered yet.
    Recovered(RecoveredJob),
}

/// The attempt named by a job's key.
fn attempt_of(key: &JobKey) -> AttemptKey {
    AttemptKey::new(Arc::from(key.execution_arn.as_str()), EventId(key.task_id))
}

/// The `.sync` job of a submitted waiting task whose handle is in the history, with the base
/// ARN of its integration; `None` for other patterns and for tasks not yet submitted.
fn recorded_job(execution_arn: &str, task: &WaitingTask) -> Option<(String, Job)> {
    let resource = statelog_core::asl::parse_resource(&task.resource_arn).ok()?;
    let handle = task.submitted_output.clone()?;
    if !is_sync(resource.pattern()) {
        return None;
    }
    let job = Job {
        key: JobKey {
            execution_arn: execution_arn.to_string(),
            task_id: task.task_id.0,
        },
        pattern: resource.pattern(),
        handle,
    };
    Some((resource.base().to_string(), job))
}

/// The registered job integrations, and the cancels of recovered jobs waiting for theirs. The
/// jobs themselves are parts of their attempts (`attempts::Attempts`).
#[derive(Default)]
pub(crate) struct JobTable {
    integrations: RwLock<HashMap<String, Arc<dyn JobIntegration>>>,
    /// Recovered jobs the engine stopped waiting for before their integration was registered:
    /// `register_job_integration` cancels them.
    cancels_queued: Mutex<Vec<RecoveredJob>>,
}

impl JobTable {
    /// The declared patterns of the integration registered under `base`, if any.
    pub(crate) fn patterns(&self, base: &str) -> Option<Vec<IntegrationPattern>> {
        self.integrations.read().get(base).map(|i| i.patterns())
    }
}

fn is_sync(pattern: IntegrationPattern) -> bool {
    matches!(
        pattern,
        IntegrationPattern::Sync | IntegrationPattern::Sync2
    )
}

fn suffix_name(pattern: IntegrationPattern) -> &'static str {
    match pattern {
        IntegrationPattern::RequestResponse => "(no suffix)",
        other => other.suffix(),
    }
}

/// The handler the engine registers for `<base><suffix>` of a job integration.
struct JobHandler {
    engine: Weak<Inner>,
    integration: Arc<dyn JobIntegration>,
    pattern: IntegrationPattern,
}

impl TaskHandler for JobHandler {
    fn call(&self, input: Value, context: Value) -> TaskFuture {
        let engine = self.engine.clone();
        let integration = self.integration.clone();
        let pattern = self.pattern;
        Box::pin(async move {
            let key = context["AttemptId"]
                .as_str()
                .and_then(JobKey::parse)
                .ok_or_else(|| TaskError::new("States.Runtime", "no AttemptId in the context"))?;
            let start = JobStart {
                key: key.clone(),
                pattern,
                input,
                context,
            };
            let handle = integration.start(start).await?;
            if is_sync(pattern) {
                if let Some(inner) = engine.upgrade() {
                    let engine = Engine { inner };
                    let job = Job {
                        key,
                        pattern,
                        handle: handle.clone(),
                    };
                    engine.track_job(integration, job);
                }
            }
            Ok(handle)
        })
    }
}

/// Finds the first Task state (JSON pointer, resource) asking `table` for an undeclared pattern.
fn undeclared(table: &JobTable, states: &StateMap, pointer: &str) -> Option<(String, String)> {
    for state in states {
        let here = format!("{pointer}/States/{}", state.name);
        let found = match &state.kind {
            StateKind::Task(task) => {
                let resource = &task.resource;
                table
                    .patterns(resource.base())
                    .filter(|patterns| !patterns.contains(&resource.pattern()))
                    .map(|patterns| {
                        let supported: Vec<&str> =
                            patterns.iter().map(|p| suffix_name(*p)).collect();
                        (
                            format!("{here}/Resource"),
                            format!(
                                "resource '{}' does not support the pattern '{}'; it supports: {}",
                                resource.base(),
                                suffix_name(resource.pattern()),
                                supported.join(", ")
                            ),
                        )
                    })
            }
            StateKind::Parallel(parallel) => {
                parallel.branches.iter().enumerate().find_map(|(i, b)| {
                    undeclared(table, &b.states, &format!("{here}/Branches/{i}"))
                })
            }
            StateKind::Map(map) => undeclared(
                table,
                &map.item_processor.states,
                &format!("{here}/ItemProcessor"),
            ),
            _ => None,
        };
        if found.is_some() {
            return found;
        }
    }
    None
}

impl Engine {
    /// Registers a job integration under `base_arn` (a Task `Resource` without suffix, e.g.
    /// `arn:aws:states:::batch:submitJob`) for the patterns it declares, replacing any handler
    /// of those resources; picks up the `.sync` jobs of open executions that were waiting for
    /// it (after a restart) and polls them at once.
    pub fn register_job_integration(&self, base_arn: &str, integration: impl JobIntegration) {
        let integration: Arc<dyn JobIntegration> = Arc::new(integration);
        self.inner
            .job_table
            .integrations
            .write()
            .insert(base_arn.to_string(), integration.clone());
        for pattern in integration.patterns() {
            let handler = JobHandler {
                engine: Arc::downgrade(&self.inner),
                integration: integration.clone(),
                pattern,
            };
            self.register_integration(&format!("{base_arn}{}", pattern.suffix()), handler);
        }
        // Recovered `.sync` tasks already submitted: their handle is in the history.
        let open: Vec<_> = self
            .inner
            .open
            .lock()
            .iter()
            .map(|(arn, slot)| (arn.clone(), slot.clone()))
            .collect();
        for (arn, slot) in open {
            let waiting = slot.state.lock().execution.waiting_tokens();
            for task in waiting {
                let Some((base, job)) = recorded_job(&arn, &task) else {
                    continue;
                };
                if base != base_arn {
                    continue;
                }
                let attempt = AttemptKey::new(arn.clone(), task.task_id);
                let running = RunningJob {
                    integration: integration.clone(),
                    job,
                };
                self.inner
                    .attempts
                    .set_job(&attempt, JobWait::Running(running));
                let now_ms = self.inner.options.clock.now_ms();
                self.inner.attempts.arm_poll(&attempt, now_ms);
            }
        }
        // Recovered jobs of this base: the ones still awaited were picked up above (the others
        // are dropped); the ones the engine stopped waiting for before this registration are
        // cancelled now.
        self.inner.attempts.drop_recovered_jobs(base_arn);
        let cancelled: Vec<Job> = {
            let mut queued = self.inner.job_table.cancels_queued.lock();
            let (now, later): (Vec<_>, Vec<_>) = queued.drain(..).partition(|r| r.base == base_arn);
            *queued = later;
            now.into_iter().map(|r| r.job).collect()
        };
        for job in cancelled {
            self.spawn_cancel(integration.clone(), job);
        }
        self.inner.timer_signal.notify();
    }

    /// Recovery (`open`): remembers a submitted `.sync` task whose handle is recorded, so a
    /// stop, abort or timeout that comes before its integration is registered still cancels
    /// the job once it is (`register_job_integration`). Tasks of other patterns are ignored.
    pub(crate) fn note_recovered_job(&self, execution_arn: &Arc<str>, task: &WaitingTask) {
        let Some((base, job)) = recorded_job(execution_arn, task) else {
            return;
        };
        let attempt = AttemptKey::new(execution_arn.clone(), task.task_id);
        self.inner
            .attempts
            .set_job(&attempt, JobWait::Recovered(RecoveredJob { base, job }));
    }

    /// `create_state_machine`'s check: a Task may not ask a registered job integration for a
    /// pattern it did not declare.
    pub(crate) fn check_job_patterns(&self, definition: &StateMachine) -> Result<(), Error> {
        if self.inner.job_table.integrations.read().is_empty() {
            return Ok(());
        }
        match undeclared(&self.inner.job_table, &definition.states, "") {
            None => Ok(()),
            Some((path, message)) => Err(Error::InvalidDefinition {
                diagnostics: vec![statelog_core::asl::Diagnostic::error(
                    path,
                    statelog_core::asl::DiagnosticCode::InvalidResource,
                    message,
                )],
            }),
        }
    }

    /// Dispatch's check for a resource with no handler: a job integration that does not
    /// declare the pattern fails the task now instead of parking it forever.
    pub(crate) fn undeclared_pattern(&self, resource_arn: &str) -> Option<String> {
        let resource = statelog_core::asl::parse_resource(resource_arn).ok()?;
        let patterns = self.inner.job_table.patterns(resource.base())?;
        (!patterns.contains(&resource.pattern())).then(|| {
            format!(
                "resource '{}' does not support the pattern '{}'",
                resource.base(),
                suffix_name(resource.pattern())
            )
        })
    }

    /// Starts waiting for a started `.sync` job: recorded, first poll armed.
    fn track_job(&self, integration: Arc<dyn JobIntegration>, job: Job) {
        let attempt = attempt_of(&job.key);
        let interval_ms = integration
            .poll_interval_ms()
            .max(crate::limits::JOB_POLL_INTERVAL_MS_MIN);
        let running = RunningJob { integration, job };
        self.inner
            .attempts
            .set_job(&attempt, JobWait::Running(running));
        let now_ms = self.inner.options.clock.now_ms();
        self.inner
            .attempts
            .arm_poll(&attempt, now_ms.saturating_add(interval_ms));
        self.inner.timer_signal.notify();
    }

    /// How many `.sync` jobs of job integrations the engine waits for.
    pub fn running_job_count(&self) -> usize {
        self.inner.attempts.running_job_count()
    }

    /// Pushes how a `.sync` job stands: `Succeeded`/`Failed` complete its task (once: a second
    /// report, or one after the task closed, is `TaskTimedOut`), `Running` restarts the task's
    /// heartbeat clock. `InvalidArgument` when `key` names no `.sync` task of an open execution.
    pub fn report_job(&self, key: &JobKey, status: JobStatus) -> Result<(), Error> {
        let arn = key.execution_arn.as_str();
        let task_id = EventId(key.task_id);
        let slot = self.inner.open.lock().get(arn).cloned();
        let waiting = slot
            .as_ref()
            .and_then(|slot| slot.state.lock().execution.waiting_task(task_id));
        let Some(waiting) = waiting else {
            return match self.inner.store.execution(arn) {
                Some(_) => Err(Error::TaskTimedOut {
                    execution_arn: key.execution_arn.clone(),
                    task_id: key.task_id,
                }),
                None => Err(Error::ExecutionDoesNotExist {
                    execution_arn: key.execution_arn.clone(),
                }),
            };
        };
        let sync = statelog_core::asl::parse_resource(&waiting.resource_arn)
            .is_ok_and(|r| is_sync(r.pattern()));
        if !sync {
            return Err(Error::InvalidArgument {
                field: "job",
                reason: ArgumentReason::NotSyncTask {
                    execution_arn: arn.to_string(),
                    task_id: key.task_id,
                },
            });
        }
        let trigger = match status {
            JobStatus::Running => {
                let now_ms = self.inner.options.clock.now_ms();
                self.inner.attempts.beat(&attempt_of(key), now_ms);
                return Ok(());
            }
            JobStatus::Succeeded(output) => Trigger::TokenSucceeded { task_id, output },
            JobStatus::Failed { error, cause } => Trigger::TokenFailed {
                task_id,
                error,
                cause,
            },
        };
        let attempt = attempt_of(key);
        self.inner.attempts.take_job(&attempt);
        self.inner.attempts.disarm_heartbeat(&attempt);
        let Some(slot) = slot else { return Ok(()) };
        let effects = {
            let mut guard = slot.state.lock();
            match self.decide_job_outcome(arn, &mut guard, task_id, trigger)? {
                Some(effects) => effects,
                None => {
                    return Err(Error::TaskTimedOut {
                        execution_arn: key.execution_arn.clone(),
                        task_id: key.task_id,
                    })
                }
            }
        };
        self.perform(arn, &slot, effects);
        Ok(())
    }

    /// Decides a `.sync` job's outcome (`trigger`) for task `task_id` of `execution_arn`,
    /// under its slot lock (`slot`); `None` when the task is not waiting. A job cannot end
    /// before its start returned, and AWS records the start (`TaskSubmitted`) first: when the
    /// start's answer is not recorded yet, it is decided first, in this commit, if the call
    /// has returned; while the call is still pending, the outcome waits for it
    /// (`Attempts::defer_outcome`) and the commit that records the start's answer decides it.
    pub(crate) fn decide_job_outcome(
        &self,
        execution_arn: &str,
        slot: &mut SlotState,
        task_id: EventId,
        trigger: Trigger,
    ) -> Result<Option<Vec<Effect>>, Error> {
        let Some(task) = slot.execution.waiting_ref(task_id) else {
            return Ok(None);
        };
        if task.submitted {
            return self
                .commit_decision(execution_arn, slot, Commit::Trigger(trigger))
                .map(|committed| Some(committed.effects));
        }
        let attempt = AttemptKey::new(Arc::from(execution_arn), task_id);
        let Some(start) = self.inner.attempts.take_answer(&attempt) else {
            self.inner.attempts.defer_outcome(&attempt, trigger);
            return Ok(Some(Vec::new()));
        };
        let before = super::tokens::handler_trigger(task_id, start);
        let request = Commit::After {
            before,
            trigger,
            task_id,
        };
        Ok(Some(
            self.commit_decision(execution_arn, slot, request)?.effects,
        ))
    }

    /// A `.sync` job's outcome for task `task_id` of `execution_arn`, from the background
    /// (a child execution that closed): decided as `decide_job_outcome` does; a failure is
    /// kept in `background_errors`, a task no longer waiting ignores it.
    pub(crate) fn drive_job_outcome(
        &self,
        execution_arn: &str,
        task_id: EventId,
        trigger: Trigger,
    ) {
        let Some(slot) = self.inner.open.lock().get(execution_arn).cloned() else {
            return;
        };
        let what = trigger.name();
        let decided = {
            let mut guard = slot.state.lock();
            self.decide_job_outcome(execution_arn, &mut guard, task_id, trigger)
        };
        match decided {
            Ok(Some(effects)) => self.perform(execution_arn, &slot, effects),
            Ok(None) => {}
            Err(error) => self
                .inner
                .background_errors
                .lock()
                .push(format!("{what} for {execution_arn}: {error}")),
        }
    }

    /// The engine stopped waiting for the attempt: cancel its job, if it is a running `.sync`
    /// job, in the background.
    pub(crate) fn cancel_job(&self, attempt: &AttemptKey) {
        match self.inner.attempts.take_job(attempt) {
            Some(JobWait::Running(running)) => self.spawn_cancel(running.integration, running.job),
            // A recovered job whose integration is not registered yet: cancelled when it is.
            Some(JobWait::Recovered(recovered)) => {
                self.inner.job_table.cancels_queued.lock().push(recovered);
            }
            None => {}
        }
    }

    /// Calls `cancel` of `job` on the runtime; a failure goes to `background_errors`.
    fn spawn_cancel(&self, integration: Arc<dyn JobIntegration>, job: Job) {
        let call = integration.cancel(job.clone());
        let job = job.key.to_string();
        self.spawn_job_call(async move {
            let outcome = call.await;
            move |engine: &Engine| {
                if let Err(error) = outcome {
                    engine.inner.background_errors.lock().push(format!(
                        "cancelling the .sync job {job} failed: {}: {}",
                        error.error, error.cause
                    ));
                }
            }
        });
    }

    /// Runs a call to a job integration on the runtime, then `finish` on the blocking pool
    /// (it may append); counted in `wait_idle`.
    fn spawn_job_call<F, G>(&self, call: F)
    where
        F: Future<Output = G> + Send + 'static,
        G: FnOnce(&Engine) + Send + 'static,
    {
        let weak = Arc::downgrade(&self.inner);
        self.inner.in_flight.lock().in_flight += 1;
        self.inner.handle.spawn(async move {
            let finish = call.await;
            let _ = tokio::task::spawn_blocking(move || {
                if let Some(inner) = weak.upgrade() {
                    let engine = Engine { inner };
                    finish(&engine);
                    engine.inner.in_flight.lock().in_flight -= 1;
                    engine.inner.in_flight_changed.notify_all();
                }
            })
            .await;
        });
    }
}

/// The embedder job integrations as a task backend. A job starts through the handler its
/// integration registers (so `HandlerCalls` routes it); this backend cancels a running
/// `.sync` job when the attempt is over and polls the running jobs' status when due.
pub(crate) struct JobBackend;

impl super::backend::TaskBackend for JobBackend {
    fn name(&self) -> &'static str {
        "embedder jobs"
    }

    fn cancel(&self, engine: &Engine, attempt: &AttemptKey) {
        engine.cancel_job(attempt);
    }

    fn next_due_ms(&self, engine: &Engine) -> Option<u64> {
        engine.inner.attempts.next_poll_due_ms()
    }

    fn run_due(&self, engine: &Engine, now_ms: u64) -> usize {
        run_due_polls(engine, now_ms)
    }
}

/// Asks the status of every running job whose poll is due at `now_ms`; returns how many.
pub(crate) fn run_due_polls(engine: &Engine, now_ms: u64) -> usize {
    let due = engine.inner.attempts.take_due_polls(now_ms);
    let mut asked = 0;
    for key in due {
        let Some(running) = engine.inner.attempts.running_job(&key) else {
            continue;
        };
        // A job whose task is no longer awaited (aborted while `start` ran, or completed by a
        // push that overtook the start's answer) is cancelled instead of polled.
        let slot = engine.inner.open.lock().get(&key.execution).cloned();
        let waiting =
            slot.is_some_and(|s| s.state.lock().execution.waiting_ref(key.task).is_some());
        if !waiting {
            engine.cancel_job(&key);
            continue;
        }
        asked += 1;
        let call = running.integration.status(running.job.clone());
        let interval_ms = running
            .integration
            .poll_interval_ms()
            .max(crate::limits::JOB_POLL_INTERVAL_MS_MIN);
        engine.spawn_job_call(async move {
            let outcome = call.await;
            move |engine: &Engine| {
                let job = &running.job;
                let status = match outcome {
                    Ok(status) => status,
                    Err(error) => {
                        engine.inner.background_errors.lock().push(format!(
                            "the status of the .sync job {} failed: {}: {}",
                            job.key, error.error, error.cause
                        ));
                        JobStatus::Running
                    }
                };
                let still_running = engine.inner.attempts.has_running_job(&key);
                match status {
                    JobStatus::Running if still_running => {
                        let now_ms = engine.inner.options.clock.now_ms();
                        engine
                            .inner
                            .attempts
                            .arm_poll(&key, now_ms.saturating_add(interval_ms));
                        engine.inner.timer_signal.notify();
                    }
                    JobStatus::Running => {}
                    done => {
                        // Pushed meanwhile: the push completed it, this is stale.
                        if still_running {
                            // A push that won the race since the check: stale, not an error.
                            let result = engine.report_job(&job.key, done);
                            if let Err(error) = result.or_else(|e| match e {
                                Error::TaskTimedOut { .. } => Ok(()),
                                other => Err(other),
                            }) {
                                engine.inner.background_errors.lock().push(format!(
                                    "completing the .sync job {} failed: {error}",
                                    job.key
                                ));
                            }
                        }
                    }
                }
            }
        });
    }
    asked
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::test_support::{records, types, ONE_TASK_SUCCEEDED};

    /// A running job of `NeverStarts` for the attempt (for the table's tests).
    pub(crate) fn running_job(execution_arn: &str, task_id: EventId) -> RunningJob {
        RunningJob {
            integration: Arc::new(NeverStarts),
            job: job(execution_arn, task_id),
        }
    }

    /// A recovered job of `BASE` for the attempt (for the table's tests).
    pub(crate) fn recovered_job(execution_arn: &str, task_id: EventId) -> RecoveredJob {
        RecoveredJob {
            base: BASE.to_string(),
            job: job(execution_arn, task_id),
        }
    }

    fn job(execution_arn: &str, task_id: EventId) -> Job {
        Job {
            key: JobKey {
                execution_arn: execution_arn.to_string(),
                task_id: task_id.0,
            },
            pattern: IntegrationPattern::Sync,
            handle: serde_json::json!({"JobId": "j"}),
        }
    }

    /// A `.sync` integration whose `start` never returns by itself: the tests put its answer in
    /// the attempt table as the finished call would, and no recording thread ever runs, so the order of
    /// the start's answer and the job's outcome is theirs to choose.
    struct NeverStarts;

    impl JobIntegration for NeverStarts {
        fn patterns(&self) -> Vec<IntegrationPattern> {
            vec![IntegrationPattern::Sync]
        }

        fn poll_interval_ms(&self) -> u64 {
            60_000
        }

        fn start(&self, _start: JobStart) -> JobFuture<Value> {
            Box::pin(std::future::pending())
        }

        fn status(&self, _job: Job) -> JobFuture<JobStatus> {
            Box::pin(async { Ok(JobStatus::Running) })
        }

        fn cancel(&self, _job: Job) -> JobFuture<()> {
            Box::pin(async { Ok(()) })
        }
    }

    pub(crate) const BASE: &str = "arn:aws:states:::batch:submitJob";

    /// An engine over a memory log with one `.sync` task waiting for its pending `start`:
    /// (engine, execution ARN, the job's key).
    fn pending_start() -> (Engine, Arc<str>, JobKey) {
        let log = Arc::new(statelog_store::MemoryLog::new());
        let options = crate::EngineOptions {
            background_timers: false,
            ..Default::default()
        };
        let engine = Engine::open_with_log(log, options).expect("opens");
        engine.register_job_integration(BASE, NeverStarts);
        let definition = format!(
            r#"{{"StartAt":"Run","States":{{"Run":{{"Type":"Task","Resource":"{BASE}.sync","End":true}}}}}}"#
        );
        engine
            .create_state_machine("m", &definition, None)
            .expect("machine");
        let arn = engine
            .start_execution("m", Some("e"), "{}")
            .expect("start")
            .execution_arn;
        let slot = engine.inner.open.lock().get(arn.as_str()).cloned();
        let task_id = slot
            .expect("open")
            .state
            .lock()
            .execution
            .waiting_tokens()
            .first()
            .map(|t| t.task_id)
            .expect("one waiting task");
        let key = JobKey {
            execution_arn: arn.clone(),
            task_id: task_id.0,
        };
        (engine, Arc::from(arn.as_str()), key)
    }

    #[test]
    fn an_outcome_after_the_start_returned_records_the_start_first_in_one_commit() {
        let (engine, arn, key) = pending_start();
        let task_id = EventId(key.task_id);
        // The call returned; the thread that records its answer has not taken the lock yet.
        engine.inner.attempts.keep_answer(
            &AttemptKey::new(arn.clone(), task_id),
            Ok(serde_json::json!({"JobId": "j"})),
        );
        let before = records(&engine);
        engine
            .report_job(&key, JobStatus::Succeeded(serde_json::json!({"done": 1})))
            .expect("accepted");
        assert_eq!(records(&engine) - before, 1, "one commit");
        assert_eq!(types(&engine, &arn), ONE_TASK_SUCCEEDED);
        // The recording thread comes late: nothing is left to record.
        engine
            .drive_handler_answer(&AttemptKey::new(arn.clone(), task_id))
            .expect("stale");
        assert_eq!(records(&engine) - before, 1);
    }

    #[test]
    fn an_outcome_while_the_start_is_pending_waits_for_its_answer() {
        let (engine, arn, key) = pending_start();
        let task_id = EventId(key.task_id);
        let before = records(&engine);
        engine
            .report_job(&key, JobStatus::Succeeded(serde_json::json!({"done": 1})))
            .expect("accepted");
        assert_eq!(
            records(&engine),
            before,
            "nothing recorded before the start returned"
        );
        assert!(engine
            .inner
            .attempts
            .take_deferred(&AttemptKey::new(arn.clone(), task_id))
            .is_some());
        // Put it back as `report_job` left it, then let the start return and be recorded.
        engine.inner.attempts.defer_outcome(
            &AttemptKey::new(arn.clone(), task_id),
            Trigger::TokenSucceeded {
                task_id,
                output: serde_json::json!({"done": 1}),
            },
        );
        engine.inner.attempts.keep_answer(
            &AttemptKey::new(arn.clone(), task_id),
            Ok(serde_json::json!({"JobId": "j"})),
        );
        engine
            .drive_handler_answer(&AttemptKey::new(arn.clone(), task_id))
            .expect("records");
        assert_eq!(records(&engine) - before, 1, "one commit");
        assert_eq!(types(&engine, &arn), ONE_TASK_SUCCEEDED);
        let done = engine.describe_execution(&arn).expect("described");
        assert_eq!(done.output, Some(serde_json::json!({"done": 1})));
    }

    #[test]
    fn a_failed_start_closes_the_task_before_a_deferred_outcome() {
        let (engine, arn, key) = pending_start();
        let task_id = EventId(key.task_id);
        engine
            .report_job(&key, JobStatus::Succeeded(serde_json::json!({"done": 1})))
            .expect("accepted");
        engine.inner.attempts.keep_answer(
            &AttemptKey::new(arn.clone(), task_id),
            Err(TaskError::new("Batch.Refused", "no capacity")),
        );
        engine
            .drive_handler_answer(&AttemptKey::new(arn.clone(), task_id))
            .expect("records");
        let types = types(&engine, &arn);
        assert!(types.contains(&"TaskFailed"), "{types:?}");
        assert!(!types.contains(&"TaskSucceeded"), "{types:?}");
        assert!(engine
            .inner
            .attempts
            .take_deferred(&AttemptKey::new(arn.clone(), task_id))
            .is_none());
    }
}
