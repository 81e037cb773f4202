//! Task: hands its effective input to an integration and waits for the answer.
//!
//! ```text
//! decide: phase --(trigger or step: the events emitted)--> phase
//! Entered --(TaskScheduled [+ timeout timer], TaskStarted)--> Task (Scheduled, Started)
//! Entered --(ActivityScheduled [+ timeout timer])--> Task (activity, waits for a worker)
//! Task --(ActivityStarted: a worker claimed it)--> Task (Started)
//! Task --(handler answer on a .waitForTaskToken task: TaskSubmitted)--> Task (Submitted)
//! Task --(handler answer Ok: TaskSucceeded | ActivitySucceeded)--> TaskSucceeded
//! TaskSucceeded --(ResultSelector, ResultPath, OutputPath: TaskStateExited)--> Exited
//! Task --(TaskFailed | TaskTimedOut | Activity{Failed,TimedOut}, a retrier takes it)--> Backoff
//! Task --(TaskFailed | TaskTimedOut | Activity{Failed,TimedOut}, no retrier)--> Failed
//! Backoff --(TimerFired: TaskScheduled again, attempt + 1)--> Task
//! Failed --(a catcher takes it: TaskStateExited)--> the catcher's Next | thread Failed
//! Task --(parent fails)--> Aborted --(TaskStateAborted)
//!
//! apply: phase --(event folded)--> phase
//! Entered | Backoff --(TaskScheduled)--> Task (Scheduled, attempt = retries so far)
//! Entered | Backoff --(ActivityScheduled)--> Task (activity, Scheduled, its task list)
//! Task --(the TaskTimeout timer its scheduling event arms)--> Task (timeout armed)
//! Task --(TaskStarted)--> Task (Started)
//! Task (activity) --(ActivityStarted)--> Task (Started)
//! Task --(TaskSubmitted)--> Task (Submitted; with a token, the answer kept as the job handle)
//! Task --(TaskSucceeded)--> TaskSucceeded (its output)
//! Task (activity) --(ActivitySucceeded)--> TaskSucceeded (its output)
//! Task --(TaskFailed | TaskTimedOut | TaskStartFailed | TaskSubmitFailed)--> Failed (its error)
//! Task (activity) --(ActivityFailed | ActivityTimedOut | ActivityScheduleFailed)--> Failed
//! any --(a RetryBackoff timer on the event)--> Backoff (the error counted)     state::apply_timer
//! Entered, exited, aborted: the arms every state shares (`state`)
//! ```
//! The apply rows are the `fold_*` functions at the end of this file, called by
//! `state::apply`; any other phase is an `ApplyError` naming the rule broken.

use super::super::*;

impl Decider<'_, '_> {
    /// One step of the Task running at `scope` in `phase`.
    pub(in crate::interpreter::decide) fn step_task(
        &mut self,
        scope: &[u32],
        state: &State,
        task: &TaskState,
        phase: Shallow,
    ) -> Step<Option<Outcome>> {
        match phase {
            Shallow::Entered => self.begin_task(scope, state, task),
            Shallow::Backoff(timer) if self.fired == Some(timer) => {
                self.fired = None;
                self.begin_task(scope, state, task)
            }
            Shallow::TaskSucceeded => {
                let output = match self
                    .state
                    .thread(scope)
                    .and_then(Thread::run)
                    .map(|r| &r.phase)
                {
                    Some(Phase::TaskSucceeded { output }) => output.clone(),
                    _ => return Err(inconsistent("task result vanished")),
                };
                let run = self.run_info(scope)?;
                self.finish_with_result(scope, state, &run, output)
            }
            _ => self.step_shared(scope, state, phase),
        }
    }

    pub(in crate::interpreter::decide) fn task_resource(
        &self,
        scope: &[u32],
    ) -> Step<(String, String)> {
        match self
            .state
            .thread(scope)
            .and_then(Thread::run)
            .map(|r| &r.phase)
        {
            Some(Phase::Task(task)) => Ok((task.resource_type.clone(), task.resource.clone())),
            _ => Err(inconsistent("no task in flight")),
        }
    }

    /// Records a task failure (or timeout), arming a retry when a retrier takes it.
    pub(in crate::interpreter::decide) fn task_failure(
        &mut self,
        scope: &[u32],
        timed_out: bool,
        error: String,
        cause: Option<String>,
    ) -> Step<()> {
        let (resource_type, resource) = self.task_resource(scope)?;
        let state = self.state_def(scope)?;
        let run = self.run_info(scope)?;
        let (retriers, _) = retriers_and_catchers(state);
        let timer = self
            .retry_due(retriers, &run.retried_errors, &error)
            .map(|due_ms| TimerArm {
                due_ms,
                owner: scope.to_vec(),
                purpose: TimerPurpose::RetryBackoff {
                    error: error.clone(),
                },
            });
        let details = TaskError {
            resource_type,
            resource,
            // SendTaskFailure may leave the error out; AWS then records none.
            error: (!error.is_empty()).then_some(error),
            cause,
        };
        let details = match (self.is_activity_task(scope), timed_out) {
            (true, timed_out) => {
                let details = ErrorCause {
                    error: details.error,
                    cause: details.cause,
                };
                if timed_out {
                    EventDetails::ActivityTimedOut(details)
                } else {
                    EventDetails::ActivityFailed(details)
                }
            }
            (false, true) => EventDetails::TaskTimedOut(Box::new(details)),
            (false, false) => EventDetails::TaskFailed(Box::new(details)),
        };
        self.emit(scope, details, timer).map(drop)
    }

    /// Whether the task in flight at `scope` is an activity task.
    pub(in crate::interpreter::decide) fn is_activity_task(&self, scope: &[u32]) -> bool {
        matches!(
            self.state.thread(scope).and_then(Thread::run).map(|r| &r.phase),
            Some(Phase::Task(task)) if task.activity.is_some()
        )
    }

    /// A `.waitForTaskToken` task's integration accepted the call: `TaskSubmitted` with its
    /// answer; the task keeps waiting for its token.
    pub(in crate::interpreter::decide) fn submit_token_task(
        &mut self,
        task_id: EventId,
        output: Value,
    ) -> Step<()> {
        let Some(scope) = self.find_task(task_id.0) else {
            return Ok(());
        };
        let (resource_type, resource) = self.task_resource(&scope)?;
        let details = TaskOutput {
            resource_type,
            resource,
            output,
            output_truncated: false,
        };
        self.emit(&scope, EventDetails::TaskSubmitted(Box::new(details)), None)
            .map(drop)
    }

    pub(in crate::interpreter::decide) fn begin_task(
        &mut self,
        scope: &[u32],
        state: &State,
        task: &TaskState,
    ) -> Step<Option<Outcome>> {
        let run = self.run_info(scope)?;
        let (resource_type, resource) = match &task.resource.kind {
            ResourceKind::Activity { .. } => ("activity".to_string(), task.resource.raw.clone()),
            ResourceKind::Integration {
                service,
                action,
                pattern,
            } => match pattern {
                IntegrationPattern::RequestResponse => (service.clone(), action.clone()),
                IntegrationPattern::WaitForTaskToken
                | IntegrationPattern::Sync
                | IntegrationPattern::Sync2 => {
                    (service.clone(), format!("{action}{}", pattern.suffix()))
                }
            },
            ResourceKind::Other { resource } => (task.resource.namespace.clone(), resource.clone()),
        };
        let mut run = run;
        let activity = task.resource.is_activity();
        let task_token = match &task.resource.kind {
            ResourceKind::Activity { .. }
            | ResourceKind::Integration {
                pattern:
                    IntegrationPattern::WaitForTaskToken
                    | IntegrationPattern::Sync
                    | IntegrationPattern::Sync2,
                ..
            } => {
                let execution_arn = self
                    .state
                    .info
                    .as_ref()
                    .map(|i| i.execution_arn.clone())
                    .unwrap_or_default();
                // The TaskScheduled event this decision emits next.
                let task_id = EventId(self.state.last_event_id + 1);
                let token = crate::interpreter::waiting::compose_token(
                    &mut *self.entropy,
                    &execution_arn,
                    task_id,
                );
                // `.sync` tasks keep their token to themselves (the engine completes them).
                let exposed = !matches!(
                    task.resource.kind,
                    ResourceKind::Integration {
                        pattern: IntegrationPattern::Sync | IntegrationPattern::Sync2,
                        ..
                    }
                );
                if let (true, Value::Object(context)) = (exposed, &mut run.context) {
                    let mut task = serde_json::Map::new();
                    task.insert("Token".to_string(), Value::String(token.clone()));
                    context.insert("Task".to_string(), Value::Object(task));
                }
                Some(token)
            }
            _ => None,
        };
        let run = run;
        let mut env = step_env!(self, &run.variables);
        let prepared = (|| {
            let flow = &state.data_flow;
            let variables = &run.variables;
            let effective = flow.effective_input(&run.input, &run.context, variables)?;
            let parameters = flow.parameters(Cow::Borrowed(&*effective), &run.context, &mut env)?;
            let mut seconds = |field: Option<&SecondsField>, name: &str| match field {
                Some(SecondsField::Expression(expression)) => {
                    let field = name.trim_end_matches("Path");
                    let value = state_expression(
                        state,
                        expression,
                        field,
                        &run.input,
                        &run.context,
                        &mut env,
                    )?;
                    jsonata_count(expression, field, &value, 1).map(Some)
                }
                other => seconds_field(other, &effective, &run.context, variables, name),
            };
            let timeout = seconds(task.timeout.as_ref(), "TimeoutSecondsPath")?;
            let heartbeat = seconds(task.heartbeat.as_ref(), "HeartbeatSecondsPath")?;
            let task_list = crate::interpreter::waiting::task_list_field(
                task.task_list.as_ref(),
                &effective,
                &run.context,
                variables,
            )?;
            Ok((parameters, timeout, heartbeat, task_list))
        })();
        let (parameters, timeout, heartbeat, task_list) = match prepared {
            Ok(prepared) => prepared,
            Err(error) => {
                let error = self.step_failure(scope, &run.name, run.entered_event_id, error)?;
                return self.handle_failure(scope, state, error, true, None);
            }
        };
        let region = if task.resource.region.is_empty() {
            self.state
                .info
                .as_ref()
                .and_then(|i| i.execution_arn.split(':').nth(3))
                .unwrap_or_default()
                .to_string()
        } else {
            task.resource.region.clone()
        };
        let timer = timeout.map(|seconds| TimerArm {
            due_ms: self.now_ms.saturating_add(seconds.saturating_mul(1000)),
            owner: scope.to_vec(),
            purpose: TimerPurpose::TaskTimeout,
        });
        if activity {
            let scheduled = crate::history::ActivityScheduled {
                resource: task.resource.raw.clone(),
                input: parameters,
                input_truncated: false,
                timeout_in_seconds: timeout,
                heartbeat_in_seconds: heartbeat,
                task_token,
                task_list,
            };
            self.emit(
                scope,
                EventDetails::ActivityScheduled(Box::new(scheduled)),
                timer,
            )?;
            return Ok(Some(Outcome::Waiting));
        }
        let scheduled = TaskScheduled {
            resource_type: resource_type.clone(),
            resource: resource.clone(),
            region,
            parameters,
            timeout_in_seconds: timeout,
            heartbeat_in_seconds: heartbeat,
            task_credentials_role_arn: None,
            resource_arn: task.resource.raw.clone(),
            task_token,
        };
        self.emit(
            scope,
            EventDetails::TaskScheduled(Box::new(scheduled)),
            timer,
        )?;
        self.emit(
            scope,
            EventDetails::TaskStarted(TaskResource {
                resource_type,
                resource,
            }),
            None,
        )?;
        Ok(Some(Outcome::Waiting))
    }
}

/// `TimeoutSeconds[Path]` / `HeartbeatSeconds[Path]`.
pub(in crate::interpreter::decide) fn seconds_field(
    field: Option<&SecondsField>,
    effective: &Value,
    context: &Value,
    variables: &Variables,
    name: &str,
) -> Result<Option<u64>, StatesError> {
    match field {
        None => Ok(None),
        Some(SecondsField::Literal(seconds)) => Ok(Some(*seconds)),
        Some(SecondsField::Expression(_)) => Err(runtime(format!(
            "The {name} field holds a JSONata expression outside a JSONata state."
        ))),
        Some(SecondsField::Path(path)) => {
            let value = select_required(path, effective, context, variables)?;
            match value.as_u64() {
                Some(seconds) if seconds > 0 => Ok(Some(seconds)),
                _ => Err(runtime(format!(
                    "The {name} field refers to value \"{}\" which is not a valid positive integer: {}",
                    quoted_value(&value),
                    path.as_str()
                ))),
            }
        }
    }
}

// The fold: how this state's events change the folded state (`state::apply` dispatches here).

use crate::history::ActivityScheduled;
use crate::interpreter::state::{running, ActivityTask, ApplyError, TaskRun, TaskStage};

/// `TaskScheduled`: an attempt of a freshly entered or retrying Task is in flight.
pub(in crate::interpreter) fn fold_scheduled(
    state: &mut ExecutionState,
    scope: &[u32],
    task_id: u32,
    scheduled: &TaskScheduled,
) -> Result<(), ApplyError> {
    let run = running(state.thread_mut(scope)?, "TaskScheduled")?;
    if !matches!(run.phase, Phase::Entered | Phase::Backoff { .. }) {
        return Err(ApplyError::Misplaced(
            "TaskScheduled outside a freshly entered or retrying Task",
        ));
    }
    run.phase = Phase::Task(TaskRun {
        task_id,
        attempt: run.retried_errors.len() as u32,
        parameters: scheduled.parameters.clone(),
        resource_arn: scheduled.resource_arn.clone(),
        resource_type: scheduled.resource_type.clone(),
        resource: scheduled.resource.clone(),
        stage: TaskStage::Scheduled,
        timeout_timer: None,
        heartbeat_seconds: scheduled.heartbeat_in_seconds,
        token: scheduled.task_token.clone(),
        activity: None,
        submitted_output: None,
    });
    Ok(())
}

/// `ActivityScheduled`: an activity attempt of a freshly entered or retrying Task is on its
/// task list.
pub(in crate::interpreter) fn fold_activity_scheduled(
    state: &mut ExecutionState,
    scope: &[u32],
    task_id: u32,
    scheduled: &ActivityScheduled,
) -> Result<(), ApplyError> {
    let run = running(state.thread_mut(scope)?, "ActivityScheduled")?;
    if !matches!(run.phase, Phase::Entered | Phase::Backoff { .. }) {
        return Err(ApplyError::Misplaced(
            "ActivityScheduled outside a freshly entered or retrying Task",
        ));
    }
    run.phase = Phase::Task(TaskRun {
        task_id,
        attempt: run.retried_errors.len() as u32,
        parameters: scheduled.input.clone(),
        resource_arn: scheduled.resource.clone(),
        resource_type: "activity".to_string(),
        resource: scheduled.resource.clone(),
        stage: TaskStage::Scheduled,
        timeout_timer: None,
        heartbeat_seconds: scheduled.heartbeat_in_seconds,
        token: scheduled.task_token.clone(),
        activity: Some(Box::new(ActivityTask {
            task_list: scheduled.task_list.clone(),
        })),
        submitted_output: None,
    });
    Ok(())
}

/// `ActivityStarted`: a worker claimed the activity task.
pub(in crate::interpreter) fn fold_activity_started(
    state: &mut ExecutionState,
    scope: &[u32],
) -> Result<(), ApplyError> {
    let run = running(state.thread_mut(scope)?, "ActivityStarted")?;
    match &mut run.phase {
        Phase::Task(task) if task.activity.is_some() => task.stage = TaskStage::Started,
        _ => return Err(ApplyError::Misplaced("no activity task in flight")),
    }
    Ok(())
}

/// `ActivitySucceeded`: the activity's result arrived.
pub(in crate::interpreter) fn fold_activity_succeeded(
    state: &mut ExecutionState,
    scope: &[u32],
    succeeded: &Output,
) -> Result<(), ApplyError> {
    let run = running(state.thread_mut(scope)?, "ActivitySucceeded")?;
    if !matches!(&run.phase, Phase::Task(task) if task.activity.is_some()) {
        return Err(ApplyError::Misplaced("no activity task in flight"));
    }
    run.phase = Phase::TaskSucceeded {
        output: Value::clone(&succeeded.output),
    };
    Ok(())
}

/// `ActivityFailed` / `ActivityTimedOut` / `ActivityScheduleFailed`: the activity failed with
/// this error (a retry timer, if any, is folded after this).
pub(in crate::interpreter) fn fold_activity_failed(
    state: &mut ExecutionState,
    scope: &[u32],
    error: &ErrorCause,
) -> Result<(), ApplyError> {
    let run = running(state.thread_mut(scope)?, "an activity failure")?;
    if !matches!(&run.phase, Phase::Task(task) if task.activity.is_some()) {
        return Err(ApplyError::Misplaced("no activity task in flight"));
    }
    run.phase = Phase::Failed {
        error: Some(error.clone()),
    };
    Ok(())
}

/// `TaskStarted`: the integration runs the task.
pub(in crate::interpreter) fn fold_started(
    state: &mut ExecutionState,
    scope: &[u32],
) -> Result<(), ApplyError> {
    let run = running(state.thread_mut(scope)?, "a task event")?;
    match &mut run.phase {
        Phase::Task(task) => task.stage = TaskStage::Started,
        _ => return Err(ApplyError::Misplaced("no task in flight")),
    }
    Ok(())
}

/// `TaskSubmitted`: the integration accepted the call; a task with a token keeps its answer
/// (a `.sync` task's job handle).
pub(in crate::interpreter) fn fold_submitted(
    state: &mut ExecutionState,
    scope: &[u32],
    submitted: &TaskOutput,
) -> Result<(), ApplyError> {
    let run = running(state.thread_mut(scope)?, "a task event")?;
    match &mut run.phase {
        Phase::Task(task) => {
            task.stage = TaskStage::Submitted;
            if task.token.is_some() {
                task.submitted_output = Some(Box::new(submitted.output.clone()));
            }
        }
        _ => return Err(ApplyError::Misplaced("no task in flight")),
    }
    Ok(())
}

/// `TaskSucceeded`: the task's result arrived.
pub(in crate::interpreter) fn fold_succeeded(
    state: &mut ExecutionState,
    scope: &[u32],
    succeeded: &TaskOutput,
) -> Result<(), ApplyError> {
    let run = running(state.thread_mut(scope)?, "TaskSucceeded")?;
    if !matches!(run.phase, Phase::Task(_)) {
        return Err(ApplyError::Misplaced("no task in flight"));
    }
    run.phase = Phase::TaskSucceeded {
        output: succeeded.output.clone(),
    };
    Ok(())
}

/// `TaskFailed` / `TaskTimedOut` / `TaskStartFailed` / `TaskSubmitFailed`: the task failed
/// with this error (a retry timer, if any, is folded after this).
pub(in crate::interpreter) fn fold_failed(
    state: &mut ExecutionState,
    scope: &[u32],
    failed: &TaskError,
) -> Result<(), ApplyError> {
    let run = running(state.thread_mut(scope)?, "a task failure")?;
    if !matches!(run.phase, Phase::Task(_)) {
        return Err(ApplyError::Misplaced("no task in flight"));
    }
    run.phase = Phase::Failed {
        error: Some(ErrorCause {
            error: failed.error.clone(),
            cause: failed.cause.clone(),
        }),
    };
    Ok(())
}

/// The task's `TimeoutSeconds` timer, armed by its scheduling event.
pub(in crate::interpreter) fn fold_timeout_timer(
    run: &mut StateRun,
    timer: Timer,
) -> Result<(), ApplyError> {
    match &mut run.phase {
        Phase::Task(task) => task.timeout_timer = Some(timer),
        _ => {
            return Err(ApplyError::Misplaced(
                "a task timeout without a task in flight",
            ))
        }
    }
    Ok(())
}
