//! integrations: the engine's own service as built-in task integrations, so every waiting
//! pattern works with nothing outside the process:
//! - `arn:aws:states:::states:startExecution` (request/response: starts a child execution and
//!   answers `ExecutionArn`/`StartDate`) and `...startExecution.waitForTaskToken` (the child's
//!   input carries the token; the task completes when someone answers it).
//! - `arn:aws:states:::aws-sdk:sfn:<action>` for `sendTaskSuccess`, `sendTaskFailure`,
//!   `sendTaskHeartbeat`, `startExecution`, `describeExecution` and `stopExecution`, so a child
//!   can answer its parent's token from inside a state machine.
//!
//! - `arn:aws:states:::states:startExecution.sync` / `.sync:2`: the task completes when the
//!   child closes, with the child's description as output (`Input`/`Output` as JSON text for
//!   `.sync`, as JSON for `.sync:2`); a child that did not succeed fails it with
//!   `States.TaskFailed` and that description as cause. The child's close pushes the completion;
//!   on open every submitted `.sync` task is matched with its child again (a child that closed
//!   while the engine was down completes it then: the fallback check). Stopping the parent (or
//!   anything else that stops waiting for the task) stops the child, best effort, in the
//!   background: a failure is kept in `background_errors`, never blocks the stop.
//!
//! Registered by `Engine::register_builtin_integrations` (called by `open`); an embedder may
//! replace any of them with `register_integration`. Errors of the engine API become task failures
//! named `Sfn.<Name>Exception` (e.g. `Sfn.TaskTimedOutException`), with the message as cause.
//! The general `.sync` trait for embedder jobs is `jobs::JobIntegration`; the built-in start
//! does not use it (its push is the child's close in this process, and open re-matches every
//! child, so a status poll would only add wake-ups). A stop, an abort around the task, its
//! TimeoutSeconds or its HeartbeatSeconds all stop the child (`job_cancelled`).
//!
//! Invariants: a built-in handler holds only a weak reference to the engine (no cycle); engine
//! calls that append to the log run on the blocking pool, never on an async worker; a `.sync`
//! task is completed at most once (the completion is a trigger on the parent's slot; a second is
//! stale). Must not: block a stop on a child.

use std::sync::{Arc, Weak};

use serde_json::{json, Map, Value};

use super::backend::AttemptKey;
use super::{Engine, Error, ExecutionDescription, Inner, TaskError, TaskFuture, TaskHandler};
use statelog_core::history::EventId;
use statelog_core::interpreter::{Trigger, WaitingTask};

/// The `states` optimized integration, request/response.
const START_EXECUTION: &str = "arn:aws:states:::states:startExecution";
/// The `states` optimized integration, wait for a callback.
const START_EXECUTION_CALLBACK: &str = "arn:aws:states:::states:startExecution.waitForTaskToken";
/// The prefix of the AWS SDK integrations of the `sfn` service.
const SDK_PREFIX: &str = "arn:aws:states:::aws-sdk:sfn:";
/// The SDK actions served.
const SDK_ACTIONS: [&str; 6] = [
    "sendTaskSuccess",
    "sendTaskFailure",
    "sendTaskHeartbeat",
    "startExecution",
    "describeExecution",
    "stopExecution",
];

/// `.sync` resources of the built-in start, and whether the output is JSON (`.sync:2`).
const START_EXECUTION_SYNC: [(&str, bool); 2] = [
    ("arn:aws:states:::states:startExecution.sync", false),
    ("arn:aws:states:::states:startExecution.sync:2", true),
];

/// One built-in action, bound to the engine weakly.
struct Builtin {
    engine: Weak<Inner>,
    action: &'static str,
    /// `.sync` (false) / `.sync:2` (true): the start is a job.
    sync: Option<bool>,
}

impl TaskHandler for Builtin {
    fn call(&self, input: Value, context: Value) -> TaskFuture {
        let engine = self.engine.clone();
        let action = self.action;
        let sync = self.sync;
        Box::pin(async move {
            let outcome = tokio::task::spawn_blocking(move || {
                let inner = engine.upgrade().ok_or_else(|| {
                    TaskError::new("States.TaskFailed", "the engine has shut down")
                })?;
                let engine = Engine { inner };
                match sync {
                    Some(json_output) => start_job(&engine, &input, &context, json_output),
                    None => run(&engine, action, &input),
                }
            })
            .await;
            match outcome {
                Ok(result) => result,
                Err(join) => Err(TaskError::new(
                    "States.TaskFailed",
                    format!("the built-in integration did not finish: {join}"),
                )),
            }
        })
    }
}

fn sdk_error(error: Error) -> TaskError {
    TaskError::new(
        format!("Sfn.{}Exception", error.aws_name()),
        error.to_string(),
    )
}

fn missing(field: &str) -> TaskError {
    TaskError::new(
        "Sfn.ValidationException",
        format!("the parameter '{field}' is required and must be a string"),
    )
}

fn text<'a>(input: &'a Value, field: &str) -> Result<&'a str, TaskError> {
    input
        .get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| missing(field))
}

fn optional_text<'a>(input: &'a Value, field: &str) -> Option<&'a str> {
    input.get(field).and_then(Value::as_str)
}

/// `Input` as text: a string is taken as written, any other JSON value is serialized.
fn input_text(input: &Value) -> Result<String, TaskError> {
    match input.get("Input") {
        None | Some(Value::Null) => Ok("{}".to_string()),
        Some(Value::String(text)) => Ok(text.clone()),
        Some(other) => serde_json::to_string(other)
            .map_err(|e| TaskError::new("Sfn.ValidationException", format!("Input: {e}"))),
    }
}

/// Epoch seconds as the AWS SDKs return dates in JSON.
fn date(ms: u64) -> Value {
    json!(ms as f64 / 1000.0)
}

/// `startExecution.sync[:2]`: names the child, records the job, starts the child.
fn start_job(
    engine: &Engine,
    input: &Value,
    context: &Value,
    json_output: bool,
) -> Result<Value, TaskError> {
    let attempt = context["AttemptId"].as_str().unwrap_or_default();
    let (parent_arn, task_id) = attempt
        .rsplit_once('/')
        .and_then(|(arn, id)| Some((arn, id.parse::<u32>().ok()?)))
        .ok_or_else(|| TaskError::new("States.TaskFailed", "no AttemptId in the context"))?;
    let machine = text(input, "StateMachineArn")?;
    // Without a `Name`, the child is named after this attempt (not at random): a start repeated
    // after a crash that lost its answer then finds the child it started before. The parent's
    // start time is in the seed too: a later execution reusing the parent's name (after
    // retention) must not find the children of the earlier one.
    let (name, ours) = match optional_text(input, "Name") {
        Some(name) => (name.to_string(), false),
        None => {
            let started = context["Execution"]["StartTime"]
                .as_str()
                .unwrap_or_default();
            (
                super::naming::derived_name(&format!("{attempt}@{started}")),
                true,
            )
        }
    };
    // The child's ARN names its machine, also when started through a version or alias ARN
    // (`...:stateMachine:NAME:1` runs as an execution of NAME).
    let (machine_name, _) = engine.machine_and_qualifier(machine).map_err(sdk_error)?;
    // An EXPRESS child keeps no history whose close this task could wait on: refused, rather
    // than a task that waits for ever, until the `.sync` path awaits an Express outcome.
    if let Some(child_machine) = engine.inner.store.machine(machine_name) {
        if child_machine.machine_type == statelog_store::MachineType::Express {
            return Err(TaskError::new(
                "Sfn.StateMachineTypeNotSupportedException",
                format!(
                    "statelog does not run an EXPRESS state machine ({machine}) as a .sync child yet"
                ),
            ));
        }
    }
    let child: Arc<str> = Arc::from(engine.execution_arn(machine_name, &name).as_str());
    // Recorded before the start: a child that closes at once still finds its parent.
    let parent = AttemptKey::new(Arc::from(parent_arn), EventId(task_id));
    engine
        .inner
        .attempts
        .wait_for_child(&parent, child.clone(), json_output);
    match engine.start_execution(machine, Some(&name), &input_text(input)?) {
        Ok(started) => Ok(json!({
            "ExecutionArn": started.execution_arn,
            "StartDate": date(started.start_ms),
        })),
        // This attempt's own child, started before a crash that lost the start's answer (a
        // running one with the same input was returned above). Its close was pushed to a task
        // that no longer waited: push it again, deferred until this answer is recorded.
        Err(Error::ExecutionAlreadyExists { .. }) if ours => {
            let described = engine.describe_execution(&child).map_err(|error| {
                engine.inner.attempts.forget_child(&child);
                sdk_error(error)
            })?;
            if described.status.is_closed() {
                engine.job_closed(&child);
            }
            Ok(json!({
                "ExecutionArn": described.execution_arn,
                "StartDate": date(described.start_ms),
            }))
        }
        Err(error) => {
            engine.inner.attempts.forget_child(&child);
            Err(sdk_error(error))
        }
    }
}

/// The output of a `.sync` task: the child's description.
fn job_output(described: &ExecutionDescription, json_output: bool) -> Value {
    let payload = |value: &Value| {
        if json_output {
            value.clone()
        } else {
            json!(value.to_string())
        }
    };
    let mut out = Map::new();
    out.insert("ExecutionArn".into(), json!(described.execution_arn));
    out.insert("Input".into(), payload(&described.input));
    out.insert("Name".into(), json!(described.name));
    if let Some(output) = &described.output {
        out.insert("Output".into(), payload(output));
    }
    out.insert("StartDate".into(), date(described.start_ms));
    out.insert("StateMachineArn".into(), json!(described.state_machine_arn));
    out.insert("Status".into(), json!(described.status.aws_name()));
    if let Some(stop_ms) = described.stop_ms {
        out.insert("StopDate".into(), date(stop_ms));
    }
    if let Some(error) = &described.error {
        out.insert("Error".into(), json!(error));
    }
    if let Some(cause) = &described.cause {
        out.insert("Cause".into(), json!(cause));
    }
    Value::Object(out)
}

impl Engine {
    /// A closed execution: if it is a `.sync` child, complete its parent's task (push path).
    pub(crate) fn job_closed(&self, child_arn: &str) {
        let Some(waiter) = self.inner.attempts.take_child_waiter(child_arn) else {
            return;
        };
        let described = match self.describe_execution(child_arn) {
            Ok(described) => described,
            Err(error) => {
                self.inner.background_errors.lock().push(format!(
                    "the .sync child {child_arn} cannot be described: {error}"
                ));
                return;
            }
        };
        let output = job_output(&described, waiter.json_output);
        let task_id = waiter.attempt.task;
        let trigger = if described.status == super::ExecutionStatus::Succeeded {
            Trigger::TokenSucceeded { task_id, output }
        } else {
            Trigger::TokenFailed {
                task_id,
                error: "States.TaskFailed".to_string(),
                cause: output.to_string(),
            }
        };
        self.drive_job_outcome(&waiter.attempt.execution, task_id, trigger);
    }

    /// The parent stopped waiting for the attempt: stop its `.sync` child, best effort, off
    /// the caller's thread.
    pub(crate) fn job_cancelled(&self, parent: &AttemptKey) {
        let Some(child) = self.inner.attempts.take_child(parent) else {
            return;
        };
        let weak = Arc::downgrade(&self.inner);
        self.inner.handle.spawn_blocking(move || {
            let Some(inner) = weak.upgrade() else { return };
            let engine = Engine { inner };
            if let Err(error) = engine.stop_execution(
                &child,
                Some("States.Aborted"),
                Some("the parent task stopped waiting"),
            ) {
                engine
                    .inner
                    .background_errors
                    .lock()
                    .push(format!("stopping the .sync child {child} failed: {error}"));
            }
        });
    }

    /// Recovery: matches the submitted `.sync` tasks of a recovered execution with their
    /// children again; a child already closed completes its task now (the fallback check).
    /// Submitted `.sync` jobs of embedder integrations are noted for `register_job_integration`
    /// (`jobs::note_recovered_job`).
    pub(crate) fn recover_jobs(&self, parent_arn: &Arc<str>, waiting: Vec<WaitingTask>) {
        for task in waiting {
            let json_output = match START_EXECUTION_SYNC
                .iter()
                .find(|(resource, _)| *resource == task.resource_arn)
            {
                Some((_, json_output)) => *json_output,
                None => {
                    // An embedder's job: kept until its integration is registered.
                    self.note_recovered_job(parent_arn, &task);
                    continue;
                }
            };
            let Some(child) = task
                .submitted_output
                .as_ref()
                .and_then(|o| o["ExecutionArn"].as_str())
            else {
                continue;
            };
            let child: Arc<str> = Arc::from(child);
            let parent = AttemptKey::new(parent_arn.clone(), task.task_id);
            self.inner
                .attempts
                .wait_for_child(&parent, child.clone(), json_output);
            if self
                .describe_execution(&child)
                .is_ok_and(|d| d.status.is_closed())
            {
                self.job_closed(&child);
            }
        }
    }
}

fn run(engine: &Engine, action: &str, input: &Value) -> Result<Value, TaskError> {
    match action {
        "sendTaskSuccess" => {
            let token = text(input, "TaskToken")?;
            let output = text(input, "Output")?;
            engine.send_task_success(token, output).map_err(sdk_error)?;
            Ok(json!({}))
        }
        "sendTaskFailure" => {
            let token = text(input, "TaskToken")?;
            let error = optional_text(input, "Error").unwrap_or_default();
            let cause = optional_text(input, "Cause").unwrap_or_default();
            engine
                .send_task_failure(token, error, cause)
                .map_err(sdk_error)?;
            Ok(json!({}))
        }
        "sendTaskHeartbeat" => {
            engine
                .send_task_heartbeat(text(input, "TaskToken")?)
                .map_err(sdk_error)?;
            Ok(json!({}))
        }
        "startExecution" => {
            let machine = text(input, "StateMachineArn")?;
            let started = engine
                .start_execution(machine, optional_text(input, "Name"), &input_text(input)?)
                .map_err(sdk_error)?;
            Ok(json!({
                "ExecutionArn": started.execution_arn,
                "StartDate": date(started.start_ms),
            }))
        }
        "describeExecution" => {
            let described = engine
                .describe_execution(text(input, "ExecutionArn")?)
                .map_err(sdk_error)?;
            let mut out = Map::new();
            out.insert("ExecutionArn".into(), json!(described.execution_arn));
            out.insert("StateMachineArn".into(), json!(described.state_machine_arn));
            out.insert("Name".into(), json!(described.name));
            out.insert("Status".into(), json!(described.status.aws_name()));
            out.insert("StartDate".into(), date(described.start_ms));
            if let Some(stop_ms) = described.stop_ms {
                out.insert("StopDate".into(), date(stop_ms));
            }
            out.insert("Input".into(), json!(described.input.to_string()));
            if let Some(output) = &described.output {
                out.insert("Output".into(), json!(output.to_string()));
            }
            if let Some(error) = &described.error {
                out.insert("Error".into(), json!(error));
            }
            if let Some(cause) = &described.cause {
                out.insert("Cause".into(), json!(cause));
            }
            Ok(Value::Object(out))
        }
        "stopExecution" => {
            let stop_ms = engine
                .stop_execution(
                    text(input, "ExecutionArn")?,
                    optional_text(input, "Error"),
                    optional_text(input, "Cause"),
                )
                .map_err(sdk_error)?;
            Ok(json!({ "StopDate": date(stop_ms) }))
        }
        other => Err(TaskError::new(
            "States.TaskFailed",
            format!("the built-in integration has no action '{other}'"),
        )),
    }
}

/// Whether `resource` is one of the built-in integrations `register_builtin_integrations`
/// registers (each starts, stops or reads executions of this engine).
pub(crate) fn is_builtin_resource(resource: &str) -> bool {
    resource == START_EXECUTION
        || resource == START_EXECUTION_CALLBACK
        || START_EXECUTION_SYNC
            .iter()
            .any(|(sync, _)| *sync == resource)
        || resource
            .strip_prefix(SDK_PREFIX)
            .is_some_and(|action| SDK_ACTIONS.contains(&action))
}

impl Engine {
    /// Registers the built-in integrations (see the module docs); `open` calls it. Registering
    /// one of these resources again replaces it.
    pub fn register_builtin_integrations(&self) {
        let weak = Arc::downgrade(&self.inner);
        let builtin = |action| Builtin {
            engine: weak.clone(),
            action,
            sync: None,
        };
        for (resource, json_output) in START_EXECUTION_SYNC {
            let handler = Builtin {
                engine: weak.clone(),
                action: "startExecution",
                sync: Some(json_output),
            };
            self.register_integration(resource, handler);
        }
        self.register_integration(START_EXECUTION, builtin("startExecution"));
        self.register_integration(START_EXECUTION_CALLBACK, builtin("startExecution"));
        for action in SDK_ACTIONS {
            self.register_integration(&format!("{SDK_PREFIX}{action}"), builtin(action));
        }
    }
}

/// The built-in `.sync` child executions as a task backend. A child starts through the
/// handler `register_builtin_integrations` registers (so `HandlerCalls` routes it); this
/// backend stops the child when the parent's attempt is over, and completes the parent's task
/// when the child closes.
pub(crate) struct SyncChildBackend;

impl super::backend::TaskBackend for SyncChildBackend {
    fn name(&self) -> &'static str {
        "sync child executions"
    }

    fn cancel(&self, engine: &Engine, attempt: &AttemptKey) {
        engine.job_cancelled(attempt);
    }

    /// A closed child completes its parent's task (the push path).
    fn execution_closed(&self, engine: &Engine, execution_arn: &str) {
        engine.job_closed(execution_arn);
    }
}
