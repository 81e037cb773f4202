//! integrations: the engine's own service as built-in task integrations, so every waiting
//! pattern works with nothing outside the process:
//! - `arn:aws:states:::states:startExecution` (request/response: starts a child execution and
//!   answers `ExecutionArn`/`StartDate`) and `...startExecution.waitForTaskToken` (the child's
//!   input carries the token; the task completes when someone answers it).
//! - `arn:aws:states:::aws-sdk:sfn:<action>` for `sendTaskSuccess`, `sendTaskFailure`,
//!   `sendTaskHeartbeat`, `startExecution`, `describeExecution` and `stopExecution`, so a child
//!   can answer its parent's token from inside a state machine.
//!
//! Registered by `Engine::register_builtin_integrations` (called by `open`); an embedder may
//! replace any of them with `register_integration`. Errors of the engine API become task failures
//! named `Sfn.<Name>Exception` (e.g. `Sfn.TaskTimedOutException`), with the message as cause.
//!
//! Invariants: a built-in handler holds only a weak reference to the engine (no cycle); engine
//! calls that append to the log run on the blocking pool, never on an async worker. Must not:
//! `.sync`/`.sync:2` (not implemented: the definition fails at run time with `Unsupported`).

use std::sync::{Arc, Weak};

use serde_json::{json, Map, Value};

use super::{Engine, Error, Inner, TaskError, TaskFuture, TaskHandler};

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

/// One built-in action, bound to the engine weakly.
struct Builtin {
    engine: Weak<Inner>,
    action: &'static str,
}

impl TaskHandler for Builtin {
    fn call(&self, input: Value, _context: Value) -> TaskFuture {
        let engine = self.engine.clone();
        let action = self.action;
        Box::pin(async move {
            let outcome = tokio::task::spawn_blocking(move || {
                let inner = engine.upgrade().ok_or_else(|| {
                    TaskError::new("States.TaskFailed", "the engine has shut down")
                })?;
                run(&Engine { inner }, action, &input)
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

impl Engine {
    /// Registers the built-in integrations (see the module docs); `open` calls it. Registering
    /// one of these resources again replaces it.
    pub fn register_builtin_integrations(&self) {
        let weak = Arc::downgrade(&self.inner);
        let builtin = |action| Builtin {
            engine: weak.clone(),
            action,
        };
        self.register_integration(START_EXECUTION, builtin("startExecution"));
        self.register_integration(START_EXECUTION_CALLBACK, builtin("startExecution"));
        for action in SDK_ACTIONS {
            self.register_integration(&format!("{SDK_PREFIX}{action}"), builtin(action));
        }
    }
}
