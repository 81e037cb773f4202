//! transitions: what happens to an SWF run, as pure functions that answer the events to
//! append (`Vec<Attributes>`). The engine gives them ids (from `Execution::next_event_id`, in
//! order) and the same `now_ms` as timestamp, applies them with `Execution::apply`, and makes
//! them durable; nothing here changes an `Execution`.
//!
//! Decision task rule (SWF's): one is scheduled at the start and after any event a decider
//! must see (`Attributes::wakes_decider`) unless one is scheduled or started already; while
//! one is started, such an event schedules the next only once the started one completes or
//! times out. A closing decision of a task during which such events arrived fails with
//! UNHANDLED_DECISION (and, the events still being unseen, a new task is scheduled).
//!
//! Decisions that reach another run of the domain are decided here and carried out by the
//! engine: StartChildWorkflowExecution records `StartChildWorkflowExecutionInitiated` and then
//! `ChildWorkflowExecutionStarted` (the engine drew the child's run id) or
//! `StartChildWorkflowExecutionFailed` (WORKFLOW_ALREADY_RUNNING when an open run, or an open
//! child of this run, has the workflow id; causes found in the decision itself, such as
//! WORKFLOW_TYPE_DOES_NOT_EXIST or a DEFAULT_*_UNDEFINED, fail it uninitiated, initiated event
//! 0); SignalExternalWorkflowExecution and RequestCancelExternalWorkflowExecution record their
//! `…Initiated` event and then `ExternalWorkflowExecution{Signaled,CancelRequested}` or their
//! `…Failed` event (UNKNOWN_EXTERNAL_WORKFLOW_EXECUTION), as [`Registry::open_execution`]
//! answers. What the batch does to the other runs is an [`Effect`] ([`effects`]): the child's
//! first events, the target's signal or cancel request, and on a close the parent's
//! `ChildWorkflowExecution…` notice (not for a continue-as-new: the new run stays the child)
//! and the child policy for every open child (TERMINATE, REQUEST_CANCEL, both cause
//! CHILD_POLICY_APPLIED; ABANDON does nothing). [`effect_events`] gives the target's events;
//! the engine writes every run's events in one atomic append.
//!
//! ScheduleLambdaFunction fails with LAMBDA_SERVICE_NOT_AVAILABLE_IN_REGION (statelog runs no
//! Lambda functions).
//!
//! A batch that would grow the history past `limits::HISTORY_EVENTS_MAX` is replaced by
//! `WorkflowExecutionTerminated` with cause EVENT_LIMIT_EXCEEDED, as SWF does.
//!
//! Invariants: every batch folds onto the execution it was computed from (checked while it is
//! built); a failed operation answers an `SwfError` and no events.
//! Must not: read a clock, draw randomness (token nonces and new run ids come in), or do I/O.

use crate::api::{
    check_length, check_name, check_optional_length, check_tag_list, parse_optional_task_priority,
    ActivityType, ActivityTypeConfiguration, ChildPolicy, Fault, RegistrationStatus,
    StartWorkflowExecutionInput, SwfError, TaskList, Timeout, WorkflowExecution, WorkflowType,
    WorkflowTypeConfiguration,
};
use crate::decisions::{self, Decision};
use crate::events::*;
use crate::fold::{DecisionTaskState, Execution, RunKey};
use crate::limits;

/// What a transition needs of a registered activity type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivityTypeView {
    /// Registered or deprecated.
    pub status: RegistrationStatus,
    /// Its defaults.
    pub configuration: ActivityTypeConfiguration,
}

/// What a transition needs of a registered workflow type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowTypeView {
    /// Registered or deprecated.
    pub status: RegistrationStatus,
    /// Its defaults.
    pub configuration: WorkflowTypeConfiguration,
}

/// What a transition needs of the run's domain: its registered types (a deleted type is
/// `None`) and, for the decisions that reach another run, its open executions.
pub trait Registry {
    /// The activity type, if registered.
    fn activity_type(&self, activity_type: &ActivityType) -> Option<ActivityTypeView>;
    /// The workflow type, if registered.
    fn workflow_type(&self, workflow_type: &WorkflowType) -> Option<WorkflowTypeView>;
    /// The open execution of `workflow_id` in the domain (only if it is run `run_id`, when
    /// one is given). The default knows none.
    fn open_execution(&self, workflow_id: &str, run_id: Option<&str>) -> Option<WorkflowExecution> {
        let _ = (workflow_id, run_id);
        None
    }
    /// Whether an open run of the domain has `workflow_id` (a child cannot take it). The
    /// default asks [`Registry::open_execution`].
    fn workflow_id_in_use(&self, workflow_id: &str) -> bool {
        self.open_execution(workflow_id, None).is_some()
    }
    /// Whether the domain is at its quota of open executions once `adding` more are open (the
    /// children this batch started already): a StartChildWorkflowExecution then fails with
    /// OPEN_WORKFLOWS_LIMIT_EXCEEDED. Never full unless the embedder says so.
    fn open_executions_full(&self, adding: usize) -> bool {
        let _ = adding;
        false
    }
    /// Whether the activity task list `list` of the run's domain is full once `adding` more
    /// tasks are in it (the ones this decision batch scheduled into it already; its embedder
    /// bounds the tasks waiting in a list): a ScheduleActivityTask into it then fails with
    /// ACTIVITY_CREATION_RATE_EXCEEDED. Never full unless the embedder says so.
    fn activity_list_full(&self, list: &str, adding: usize) -> bool {
        let _ = (list, adding);
        false
    }
}

/// A batch being built on a copy of the execution, each event applied as it is added.
struct Draft {
    execution: Execution,
    events: Vec<Attributes>,
    now_ms: u64,
    first_event_id: u64,
}

impl Draft {
    fn new(execution: &Execution, now_ms: u64) -> Draft {
        Draft {
            execution: execution.clone(),
            events: Vec::new(),
            now_ms,
            first_event_id: execution.next_event_id,
        }
    }

    /// Adds an event and answers its id.
    fn push(&mut self, attributes: Attributes) -> Result<u64, SwfError> {
        let event_id = self.execution.next_event_id;
        let event = Event {
            event_id,
            timestamp_ms: self.now_ms,
            attributes,
        };
        self.execution.apply(&event).map_err(|e| {
            SwfError::new(
                Fault::Internal,
                format!("an SWF transition built an event that does not fold: {e}"),
            )
        })?;
        self.events.push(event.attributes);
        Ok(event_id)
    }

    /// Schedules a decision task if one is due, checks the history limit, and answers the
    /// batch.
    fn finish(mut self) -> Result<Vec<Attributes>, SwfError> {
        if self.execution.needs_decision_task() {
            let scheduled = decision_task_scheduled(&self.execution);
            self.push(scheduled)?;
        }
        let total = self.first_event_id - 1 + self.events.len() as u64;
        if total >= limits::HISTORY_EVENTS_MAX && !self.events.is_empty() {
            return Ok(vec![Attributes::WorkflowExecutionTerminated(
                WorkflowExecutionTerminated {
                    reason: None,
                    details: None,
                    child_policy: self.execution.config.child_policy,
                    cause: Some(WorkflowExecutionTerminatedCause::EventLimitExceeded),
                },
            )]);
        }
        Ok(self.events)
    }
}

/// The next decision task of a run: its list (the decider's override, if any), priority and
/// timeouts.
fn decision_task_scheduled(execution: &Execution) -> Attributes {
    let (task_list, schedule_to_start) = match &execution.task_list_override {
        Some(o) => (
            o.task_list.clone(),
            o.schedule_to_start.map(Timeout::to_wire),
        ),
        None => (execution.config.task_list.clone(), None),
    };
    Attributes::DecisionTaskScheduled(DecisionTaskScheduled {
        task_list,
        task_priority: execution.config.task_priority.clone(),
        start_to_close_timeout: Some(execution.config.task_start_to_close.to_wire()),
        schedule_to_start_timeout: schedule_to_start,
    })
}

fn closed(execution: &Execution) -> SwfError {
    SwfError::unknown_resource(format!(
        "Unknown execution: WorkflowExecution=[workflowId={}, runId={}] is closed",
        execution.key.workflow_id, execution.key.run_id
    ))
}

fn require_open(execution: &Execution) -> Result<(), SwfError> {
    if execution.is_open() {
        Ok(())
    } else {
        Err(closed(execution))
    }
}

fn unknown_task(what: &str) -> SwfError {
    SwfError::unknown_resource(format!("Unknown task: {what}"))
}

fn default_undefined(what: &str) -> SwfError {
    SwfError::new(
        Fault::DefaultUndefined,
        format!("No {what} was given and the workflow type registers no default"),
    )
}

/// The first choice that is given of `value` and `default`, parsed as a timeout.
fn resolve_timeout(
    field: &str,
    value: Option<&str>,
    default: Option<&str>,
) -> Result<Option<Timeout>, SwfError> {
    Timeout::parse_optional(field, value.or(default))
}

/// The events that start a run: `WorkflowExecutionStarted` and the first
/// `DecisionTaskScheduled`. `workflow_type` is the registered type of `input.workflowType`
/// (the engine answers UnknownResourceFault when there is none).
pub fn start(
    input: &StartWorkflowExecutionInput,
    workflow_type: &WorkflowTypeView,
) -> Result<Vec<Attributes>, SwfError> {
    check_name("domain", &input.domain, limits::NAME_CHARS_MAX)?;
    check_name("workflowId", &input.workflow_id, limits::NAME_CHARS_MAX)?;
    check_name(
        "workflowType.name",
        &input.workflow_type.name,
        limits::NAME_CHARS_MAX,
    )?;
    check_name(
        "workflowType.version",
        &input.workflow_type.version,
        limits::VERSION_CHARS_MAX,
    )?;
    if let Some(list) = &input.task_list {
        check_name("taskList.name", &list.name, limits::NAME_CHARS_MAX)?;
    }
    check_optional_length("input", input.input.as_deref(), limits::DATA_CHARS_MAX)?;
    check_optional_length(
        "lambdaRole",
        input.lambda_role.as_deref(),
        limits::ARN_CHARS_MAX,
    )?;
    if let Some(tags) = &input.tag_list {
        check_tag_list(tags)?;
    }
    parse_optional_task_priority("taskPriority", input.task_priority.as_deref())?;
    if workflow_type.status == RegistrationStatus::Deprecated {
        return Err(SwfError::new(
            Fault::TypeDeprecated,
            format!(
                "WorkflowType=[name={}, version={}] is deprecated",
                input.workflow_type.name, input.workflow_type.version
            ),
        ));
    }
    let defaults = &workflow_type.configuration;
    let task_list = input
        .task_list
        .clone()
        .or_else(|| defaults.default_task_list.clone())
        .ok_or_else(|| default_undefined("taskList"))?;
    let execution_timeout = resolve_timeout(
        "executionStartToCloseTimeout",
        input.execution_start_to_close_timeout.as_deref(),
        defaults.default_execution_start_to_close_timeout.as_deref(),
    )?
    .ok_or_else(|| default_undefined("executionStartToCloseTimeout"))?;
    if execution_timeout == Timeout::Unlimited {
        // SWF: an execution may run at most one year; NONE is not allowed here.
        return Err(SwfError::validation(
            "executionStartToCloseTimeout must be a number of seconds: NONE is not allowed \
             for a workflow execution",
        ));
    }
    let task_timeout = resolve_timeout(
        "taskStartToCloseTimeout",
        input.task_start_to_close_timeout.as_deref(),
        defaults.default_task_start_to_close_timeout.as_deref(),
    )?
    .ok_or_else(|| default_undefined("taskStartToCloseTimeout"))?;
    let child_policy = input
        .child_policy
        .or(defaults.default_child_policy)
        .ok_or_else(|| default_undefined("childPolicy"))?;
    let task_priority = input
        .task_priority
        .clone()
        .or_else(|| defaults.default_task_priority.clone());
    parse_optional_task_priority("taskPriority", task_priority.as_deref())?;
    let started = WorkflowExecutionStarted {
        input: input.input.clone(),
        execution_start_to_close_timeout: Some(execution_timeout.to_wire()),
        task_start_to_close_timeout: Some(task_timeout.to_wire()),
        child_policy,
        task_list,
        task_priority,
        workflow_type: input.workflow_type.clone(),
        tag_list: input.tag_list.clone().filter(|t| !t.is_empty()),
        continued_execution_run_id: None,
        parent_workflow_execution: None,
        parent_initiated_event_id: None,
        lambda_role: input
            .lambda_role
            .clone()
            .or_else(|| defaults.default_lambda_role.clone()),
    };
    first_events(&input.domain, &input.workflow_id, started)
}

fn first_events(
    domain: &str,
    workflow_id: &str,
    started: WorkflowExecutionStarted,
) -> Result<Vec<Attributes>, SwfError> {
    let key = RunKey {
        domain: domain.to_string(),
        workflow_id: workflow_id.to_string(),
        run_id: String::new(),
    };
    let first = Event {
        event_id: 1,
        timestamp_ms: 0,
        attributes: Attributes::WorkflowExecutionStarted(started),
    };
    let execution = Execution::started(key, &first).map_err(|e| {
        SwfError::new(
            Fault::Internal,
            format!("a WorkflowExecutionStarted event does not fold: {e}"),
        )
    })?;
    debug_assert!(execution.needs_decision_task());
    Ok(vec![first.attributes, decision_task_scheduled(&execution)])
}

/// The first events of the run a `WorkflowExecutionContinuedAsNew` of `previous` starts.
pub fn start_continued(
    previous: &Execution,
    continued: &WorkflowExecutionContinuedAsNew,
) -> Result<Vec<Attributes>, SwfError> {
    let started = WorkflowExecutionStarted {
        input: continued.input.clone(),
        execution_start_to_close_timeout: continued.execution_start_to_close_timeout.clone(),
        task_start_to_close_timeout: continued.task_start_to_close_timeout.clone(),
        child_policy: continued.child_policy,
        task_list: continued.task_list.clone(),
        task_priority: continued.task_priority.clone(),
        workflow_type: continued.workflow_type.clone(),
        tag_list: continued.tag_list.clone(),
        continued_execution_run_id: Some(previous.key.run_id.clone()),
        // A child that continues as new stays its parent's child.
        parent_workflow_execution: previous.parent.clone(),
        parent_initiated_event_id: previous.parent_initiated_event_id,
        lambda_role: continued.lambda_role.clone(),
    };
    first_events(&previous.key.domain, &previous.key.workflow_id, started)
}

/// A decider takes the scheduled decision task: `DecisionTaskStarted` with the token's
/// nonce.
pub fn decision_task_started(
    execution: &Execution,
    identity: Option<&str>,
    token_nonce: [u8; 16],
    now_ms: u64,
) -> Result<Vec<Attributes>, SwfError> {
    require_open(execution)?;
    check_optional_length("identity", identity, limits::IDENTITY_CHARS_MAX)?;
    let DecisionTaskState::Scheduled(scheduled) = &execution.decision_task else {
        return Err(unknown_task("the execution has no scheduled decision task"));
    };
    let mut draft = Draft::new(execution, now_ms);
    draft.push(Attributes::DecisionTaskStarted(DecisionTaskStarted {
        identity: identity.map(str::to_string),
        scheduled_event_id: scheduled.scheduled_event_id,
        token_nonce,
    }))?;
    Ok(draft.events)
}

/// The answer of a decider (RespondDecisionTaskCompleted), decisions already parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionTaskCompletion<'a> {
    /// The `DecisionTaskStarted` event the token names.
    pub started_event_id: u64,
    /// The decisions.
    pub decisions: &'a [Decision],
    /// The decider's context.
    pub execution_context: Option<&'a str>,
    /// The list of the next decision tasks.
    pub task_list: Option<&'a TaskList>,
    /// How long the next decision tasks may wait in `task_list`.
    pub task_list_schedule_to_start_timeout: Option<&'a str>,
    /// The run id a ContinueAsNewWorkflowExecution decision gives the new run (the engine
    /// draws it; unused otherwise).
    pub new_run_id: &'a str,
    /// The run ids of the children the StartChildWorkflowExecution decisions start, one per
    /// such decision in order (the engine draws them).
    pub child_run_ids: &'a [String],
}

/// A decider answers its task: `DecisionTaskCompleted`, then each decision executed or turned
/// into its `…Failed` event, then a new `DecisionTaskScheduled` if the decider has events to
/// see.
pub fn decision_task_completed(
    execution: &Execution,
    completion: &DecisionTaskCompletion<'_>,
    registry: &dyn Registry,
    now_ms: u64,
) -> Result<Vec<Attributes>, SwfError> {
    require_open(execution)?;
    let DecisionTaskState::Started(started) = &execution.decision_task else {
        return Err(unknown_task("the decision task is not started"));
    };
    if started.started_event_id != completion.started_event_id {
        return Err(unknown_task("the decision task is closed"));
    }
    check_optional_length(
        "executionContext",
        completion.execution_context,
        limits::DATA_CHARS_MAX,
    )?;
    if let Some(list) = completion.task_list {
        check_name("taskList.name", &list.name, limits::NAME_CHARS_MAX)?;
    }
    Timeout::parse_optional(
        "taskListScheduleToStartTimeout",
        completion.task_list_schedule_to_start_timeout,
    )?;
    if let Some(index) = completion
        .decisions
        .iter()
        .position(Decision::closes_execution)
    {
        if index + 1 != completion.decisions.len() {
            return Err(SwfError::validation(format!(
                "decisions.{}.member: {} closes the workflow execution and must be the last \
                 decision",
                index + 1,
                completion.decisions[index].decision_type()
            )));
        }
    }
    // Events a decider must see arrived while this task was started.
    let unhandled = execution.unseen_events;
    let mut draft = Draft::new(execution, now_ms);
    let completed_id = draft.push(Attributes::DecisionTaskCompleted(DecisionTaskCompleted {
        execution_context: completion.execution_context.map(str::to_string),
        scheduled_event_id: started.scheduled.scheduled_event_id,
        started_event_id: started.started_event_id,
        task_list: completion.task_list.cloned(),
        task_list_schedule_to_start_timeout: completion
            .task_list_schedule_to_start_timeout
            .map(str::to_string),
    }))?;
    let mut child_run_ids = completion.child_run_ids.iter();
    let mut children_started = 0usize;
    for decision in completion.decisions {
        let event = execute(
            &draft,
            decision,
            completed_id,
            unhandled,
            registry,
            completion.new_run_id,
        )?;
        match event {
            Executed::One(attributes) => {
                draft.push(*attributes)?;
            }
            Executed::StartChild(initiated) => {
                let initiated = *initiated;
                let workflow_id = initiated.workflow_id.clone();
                let workflow_type = initiated.workflow_type.clone();
                let control = initiated.control.clone();
                let run_id = child_run_ids.next().ok_or_else(|| {
                    SwfError::new(
                        Fault::Internal,
                        "StartChildWorkflowExecution needs a child run id from the engine",
                    )
                })?;
                // In use: an open run of the domain, or a child of this run not closed (its
                // run may be starting in this very batch).
                let in_use = registry.workflow_id_in_use(&workflow_id)
                    || draft
                        .execution
                        .open_children
                        .values()
                        .any(|c| c.workflow_id == workflow_id);
                let cause = if in_use {
                    Some(StartChildWorkflowExecutionFailedCause::WorkflowAlreadyRunning)
                } else if registry.open_executions_full(children_started) {
                    Some(StartChildWorkflowExecutionFailedCause::OpenWorkflowsLimitExceeded)
                } else {
                    None
                };
                let initiated_id =
                    draft.push(Attributes::StartChildWorkflowExecutionInitiated(initiated))?;
                if let Some(cause) = cause {
                    draft.push(Attributes::StartChildWorkflowExecutionFailed(
                        StartChildWorkflowExecutionFailed {
                            workflow_type,
                            cause,
                            workflow_id,
                            initiated_event_id: initiated_id,
                            decision_task_completed_event_id: completed_id,
                            control,
                        },
                    ))?;
                } else {
                    children_started += 1;
                    draft.push(Attributes::ChildWorkflowExecutionStarted(
                        ChildWorkflowExecutionStarted {
                            workflow_execution: WorkflowExecution {
                                workflow_id,
                                run_id: run_id.clone(),
                            },
                            workflow_type,
                            initiated_event_id: initiated_id,
                        },
                    ))?;
                }
            }
            Executed::SignalExternal(initiated) => {
                let initiated = *initiated;
                let target =
                    registry.open_execution(&initiated.workflow_id, initiated.run_id.as_deref());
                let (workflow_id, run_id, control) = (
                    initiated.workflow_id.clone(),
                    initiated.run_id.clone(),
                    initiated.control.clone(),
                );
                let initiated_id = draft.push(
                    Attributes::SignalExternalWorkflowExecutionInitiated(initiated),
                )?;
                draft.push(match target {
                    Some(workflow_execution) => Attributes::ExternalWorkflowExecutionSignaled(
                        ExternalWorkflowExecutionSignaled {
                            workflow_execution,
                            initiated_event_id: initiated_id,
                        },
                    ),
                    None => Attributes::SignalExternalWorkflowExecutionFailed(
                        SignalExternalWorkflowExecutionFailed {
                            workflow_id,
                            run_id,
                            cause: SignalExternalWorkflowExecutionFailedCause::UnknownExternalWorkflowExecution,
                            initiated_event_id: initiated_id,
                            decision_task_completed_event_id: completed_id,
                            control,
                        },
                    ),
                })?;
            }
            Executed::CancelExternal(initiated) => {
                let initiated = *initiated;
                let target =
                    registry.open_execution(&initiated.workflow_id, initiated.run_id.as_deref());
                let (workflow_id, run_id, control) = (
                    initiated.workflow_id.clone(),
                    initiated.run_id.clone(),
                    initiated.control.clone(),
                );
                let initiated_id = draft.push(
                    Attributes::RequestCancelExternalWorkflowExecutionInitiated(initiated),
                )?;
                draft.push(match target {
                    Some(workflow_execution) => {
                        Attributes::ExternalWorkflowExecutionCancelRequested(
                            ExternalWorkflowExecutionCancelRequested {
                                workflow_execution,
                                initiated_event_id: initiated_id,
                            },
                        )
                    }
                    None => Attributes::RequestCancelExternalWorkflowExecutionFailed(
                        RequestCancelExternalWorkflowExecutionFailed {
                            workflow_id,
                            run_id,
                            cause: RequestCancelExternalWorkflowExecutionFailedCause::UnknownExternalWorkflowExecution,
                            initiated_event_id: initiated_id,
                            decision_task_completed_event_id: completed_id,
                            control,
                        },
                    ),
                })?;
            }
            Executed::CancelUnstarted {
                activity_id,
                scheduled_event_id,
            } => {
                let requested = draft.push(Attributes::ActivityTaskCancelRequested(
                    ActivityTaskCancelRequested {
                        decision_task_completed_event_id: completed_id,
                        activity_id,
                    },
                ))?;
                draft.push(Attributes::ActivityTaskCanceled(ActivityTaskCanceled {
                    details: None,
                    scheduled_event_id,
                    started_event_id: 0,
                    latest_cancel_requested_event_id: Some(requested),
                }))?;
            }
        }
    }
    draft.finish()
}

/// What one decision turns into.
enum Executed {
    /// One event.
    One(Box<Attributes>),
    /// A child to start: initiated, then started (or failed, its workflow id in use).
    StartChild(Box<StartChildWorkflowExecutionInitiated>),
    /// A signal to send: initiated, then signaled (or failed, no such open execution).
    SignalExternal(Box<SignalExternalWorkflowExecutionInitiated>),
    /// A cancel to request: initiated, then requested (or failed, no such open execution).
    CancelExternal(Box<RequestCancelExternalWorkflowExecutionInitiated>),
    /// A cancel of an activity no worker holds: requested and canceled at once.
    CancelUnstarted {
        activity_id: String,
        scheduled_event_id: u64,
    },
}

fn execute(
    draft: &Draft,
    decision: &Decision,
    completed_id: u64,
    unhandled: bool,
    registry: &dyn Registry,
    new_run_id: &str,
) -> Result<Executed, SwfError> {
    let execution = &draft.execution;
    let one = |attributes| Executed::One(Box::new(attributes));
    Ok(match decision {
        Decision::ScheduleActivityTask(d) => {
            one(schedule_activity(execution, d, completed_id, registry)?)
        }
        Decision::RequestCancelActivityTask(d) => match execution.activities.get(&d.activity_id) {
            None => one(Attributes::RequestCancelActivityTaskFailed(
                RequestCancelActivityTaskFailed {
                    activity_id: d.activity_id.clone(),
                    cause: RequestCancelActivityTaskFailedCause::ActivityIdUnknown,
                    decision_task_completed_event_id: completed_id,
                },
            )),
            Some(activity) if activity.started.is_none() => Executed::CancelUnstarted {
                activity_id: d.activity_id.clone(),
                scheduled_event_id: activity.scheduled_event_id,
            },
            Some(_) => one(Attributes::ActivityTaskCancelRequested(
                ActivityTaskCancelRequested {
                    decision_task_completed_event_id: completed_id,
                    activity_id: d.activity_id.clone(),
                },
            )),
        },
        Decision::CompleteWorkflowExecution(d) => one(if unhandled {
            Attributes::CompleteWorkflowExecutionFailed(CompleteWorkflowExecutionFailed {
                cause: CloseDecisionFailedCause::UnhandledDecision,
                decision_task_completed_event_id: completed_id,
            })
        } else {
            Attributes::WorkflowExecutionCompleted(WorkflowExecutionCompleted {
                result: d.result.clone(),
                decision_task_completed_event_id: completed_id,
            })
        }),
        Decision::FailWorkflowExecution(d) => one(if unhandled {
            Attributes::FailWorkflowExecutionFailed(FailWorkflowExecutionFailed {
                cause: CloseDecisionFailedCause::UnhandledDecision,
                decision_task_completed_event_id: completed_id,
            })
        } else {
            Attributes::WorkflowExecutionFailed(WorkflowExecutionFailed {
                reason: d.reason.clone(),
                details: d.details.clone(),
                decision_task_completed_event_id: completed_id,
            })
        }),
        Decision::CancelWorkflowExecution(d) => one(if unhandled {
            Attributes::CancelWorkflowExecutionFailed(CancelWorkflowExecutionFailed {
                cause: CloseDecisionFailedCause::UnhandledDecision,
                decision_task_completed_event_id: completed_id,
            })
        } else {
            Attributes::WorkflowExecutionCanceled(WorkflowExecutionCanceled {
                details: d.details.clone(),
                decision_task_completed_event_id: completed_id,
            })
        }),
        Decision::ContinueAsNewWorkflowExecution(d) => one(continue_as_new(
            execution,
            d,
            completed_id,
            unhandled,
            registry,
            new_run_id,
        )?),
        Decision::RecordMarker(d) => one(Attributes::MarkerRecorded(MarkerRecorded {
            marker_name: d.marker_name.clone(),
            details: d.details.clone(),
            decision_task_completed_event_id: completed_id,
        })),
        Decision::StartTimer(d) => {
            let cause = if execution.timers.contains_key(&d.timer_id) {
                Some(StartTimerFailedCause::TimerIdAlreadyInUse)
            } else if execution.timers.len() >= limits::OPEN_TIMERS_MAX {
                Some(StartTimerFailedCause::OpenTimersLimitExceeded)
            } else {
                None
            };
            one(match cause {
                Some(cause) => Attributes::StartTimerFailed(StartTimerFailed {
                    timer_id: d.timer_id.clone(),
                    cause,
                    decision_task_completed_event_id: completed_id,
                }),
                None => Attributes::TimerStarted(TimerStarted {
                    timer_id: d.timer_id.clone(),
                    control: d.control.clone(),
                    start_to_fire_timeout: d.start_to_fire_timeout.clone(),
                    decision_task_completed_event_id: completed_id,
                }),
            })
        }
        Decision::CancelTimer(d) => one(match execution.timers.get(&d.timer_id) {
            Some(timer) => Attributes::TimerCanceled(TimerCanceled {
                timer_id: d.timer_id.clone(),
                started_event_id: timer.started_event_id,
                decision_task_completed_event_id: completed_id,
            }),
            None => Attributes::CancelTimerFailed(CancelTimerFailed {
                timer_id: d.timer_id.clone(),
                cause: CancelTimerFailedCause::TimerIdUnknown,
                decision_task_completed_event_id: completed_id,
            }),
        }),
        Decision::SignalExternalWorkflowExecution(d) => {
            Executed::SignalExternal(Box::new(SignalExternalWorkflowExecutionInitiated {
                workflow_id: d.workflow_id.clone(),
                run_id: d.run_id.clone(),
                signal_name: d.signal_name.clone(),
                input: d.input.clone(),
                decision_task_completed_event_id: completed_id,
                control: d.control.clone(),
            }))
        }
        Decision::RequestCancelExternalWorkflowExecution(d) => {
            Executed::CancelExternal(Box::new(RequestCancelExternalWorkflowExecutionInitiated {
                workflow_id: d.workflow_id.clone(),
                run_id: d.run_id.clone(),
                decision_task_completed_event_id: completed_id,
                control: d.control.clone(),
            }))
        }
        Decision::StartChildWorkflowExecution(d) => {
            start_child_decision(execution, d, completed_id, registry)?
        }
        Decision::ScheduleLambdaFunction(d) => one(Attributes::ScheduleLambdaFunctionFailed(
            ScheduleLambdaFunctionFailed {
                id: d.id.clone(),
                name: d.name.clone(),
                cause: ScheduleLambdaFunctionFailedCause::LambdaServiceNotAvailableInRegion,
                decision_task_completed_event_id: completed_id,
            },
        )),
    })
}

/// A StartChildWorkflowExecution decision: the child's configuration resolved from the
/// decision and its type's defaults (as StartWorkflowExecution resolves them), or the
/// decision's `…Failed` event when the type or a default is missing or too many children are
/// open. Whether the workflow id is free is looked at when it is initiated.
fn start_child_decision(
    execution: &Execution,
    d: &decisions::StartChildWorkflowExecution,
    completed_id: u64,
    registry: &dyn Registry,
) -> Result<Executed, SwfError> {
    use StartChildWorkflowExecutionFailedCause as Cause;
    let Some(workflow_type) = d.workflow_type.clone() else {
        return Err(SwfError::validation(
            "startChildWorkflowExecutionDecisionAttributes.workflowType is required",
        ));
    };
    let failed = |cause| {
        Ok(Executed::One(Box::new(
            Attributes::StartChildWorkflowExecutionFailed(StartChildWorkflowExecutionFailed {
                workflow_type: workflow_type.clone(),
                cause,
                workflow_id: d.workflow_id.clone(),
                initiated_event_id: 0,
                decision_task_completed_event_id: completed_id,
                control: d.control.clone(),
            }),
        )))
    };
    let Some(view) = registry.workflow_type(&workflow_type) else {
        return failed(Cause::WorkflowTypeDoesNotExist);
    };
    if view.status == RegistrationStatus::Deprecated {
        return failed(Cause::WorkflowTypeDeprecated);
    }
    if execution.open_children.len() >= limits::OPEN_CHILDREN_MAX {
        return failed(Cause::OpenChildrenLimitExceeded);
    }
    let defaults = &view.configuration;
    let Some(execution_timeout) = resolve_timeout(
        "executionStartToCloseTimeout",
        d.execution_start_to_close_timeout.as_deref(),
        defaults.default_execution_start_to_close_timeout.as_deref(),
    )?
    .filter(|t| *t != Timeout::Unlimited) else {
        return failed(Cause::DefaultExecutionStartToCloseTimeoutUndefined);
    };
    let Some(task_list) = d
        .task_list
        .clone()
        .or_else(|| defaults.default_task_list.clone())
    else {
        return failed(Cause::DefaultTaskListUndefined);
    };
    let Some(task_timeout) = resolve_timeout(
        "taskStartToCloseTimeout",
        d.task_start_to_close_timeout.as_deref(),
        defaults.default_task_start_to_close_timeout.as_deref(),
    )?
    else {
        return failed(Cause::DefaultTaskStartToCloseTimeoutUndefined);
    };
    let Some(child_policy) = d.child_policy.or(defaults.default_child_policy) else {
        return failed(Cause::DefaultChildPolicyUndefined);
    };
    Ok(Executed::StartChild(Box::new(
        StartChildWorkflowExecutionInitiated {
            workflow_id: d.workflow_id.clone(),
            workflow_type,
            control: d.control.clone(),
            input: d.input.clone(),
            execution_start_to_close_timeout: Some(execution_timeout.to_wire()),
            task_list,
            task_priority: d
                .task_priority
                .clone()
                .or_else(|| defaults.default_task_priority.clone()),
            decision_task_completed_event_id: completed_id,
            child_policy,
            task_start_to_close_timeout: Some(task_timeout.to_wire()),
            tag_list: d.tag_list.clone().filter(|t| !t.is_empty()),
            lambda_role: d
                .lambda_role
                .clone()
                .or_else(|| defaults.default_lambda_role.clone()),
        },
    )))
}

fn schedule_activity(
    execution: &Execution,
    d: &decisions::ScheduleActivityTask,
    completed_id: u64,
    registry: &dyn Registry,
) -> Result<Attributes, SwfError> {
    let Some(activity_type) = d.activity_type.clone() else {
        return Err(SwfError::validation(
            "scheduleActivityTaskDecisionAttributes.activityType is required",
        ));
    };
    let failed = |cause| {
        Ok(Attributes::ScheduleActivityTaskFailed(
            ScheduleActivityTaskFailed {
                activity_type: activity_type.clone(),
                activity_id: d.activity_id.clone(),
                cause,
                decision_task_completed_event_id: completed_id,
            },
        ))
    };
    use ScheduleActivityTaskFailedCause as Cause;
    let Some(view) = registry.activity_type(&activity_type) else {
        return failed(Cause::ActivityTypeDoesNotExist);
    };
    if view.status == RegistrationStatus::Deprecated {
        return failed(Cause::ActivityTypeDeprecated);
    }
    if execution.activities.contains_key(&d.activity_id) {
        return failed(Cause::ActivityIdAlreadyInUse);
    }
    if execution.activities.len() >= limits::OPEN_ACTIVITIES_MAX {
        return failed(Cause::OpenActivitiesLimitExceeded);
    }
    let defaults = &view.configuration;
    let Some(task_list) = d
        .task_list
        .clone()
        .or_else(|| defaults.default_task_list.clone())
    else {
        return failed(Cause::DefaultTaskListUndefined);
    };
    // This batch's own schedules into the list count too (they are after its completed event).
    let adding = execution
        .activities
        .values()
        .filter(|a| a.scheduled_event_id > completed_id && a.task_list.name == task_list.name)
        .count();
    if registry.activity_list_full(&task_list.name, adding) {
        return failed(Cause::ActivityCreationRateExceeded);
    }
    let timeouts = [
        (
            "scheduleToCloseTimeout",
            d.schedule_to_close_timeout.as_deref(),
            defaults.default_task_schedule_to_close_timeout.as_deref(),
            Cause::DefaultScheduleToCloseTimeoutUndefined,
        ),
        (
            "scheduleToStartTimeout",
            d.schedule_to_start_timeout.as_deref(),
            defaults.default_task_schedule_to_start_timeout.as_deref(),
            Cause::DefaultScheduleToStartTimeoutUndefined,
        ),
        (
            "startToCloseTimeout",
            d.start_to_close_timeout.as_deref(),
            defaults.default_task_start_to_close_timeout.as_deref(),
            Cause::DefaultStartToCloseTimeoutUndefined,
        ),
        (
            "heartbeatTimeout",
            d.heartbeat_timeout.as_deref(),
            defaults.default_task_heartbeat_timeout.as_deref(),
            Cause::DefaultHeartbeatTimeoutUndefined,
        ),
    ];
    let mut resolved = Vec::with_capacity(timeouts.len());
    for (field, value, default, cause) in timeouts {
        match resolve_timeout(field, value, default)? {
            Some(timeout) => resolved.push(Some(timeout.to_wire())),
            None => return failed(cause),
        }
    }
    let task_priority = d
        .task_priority
        .clone()
        .or_else(|| defaults.default_task_priority.clone());
    let [schedule_to_close, schedule_to_start, start_to_close, heartbeat]: [Option<String>; 4] =
        resolved.try_into().expect("one resolved value per timeout");
    Ok(Attributes::ActivityTaskScheduled(ActivityTaskScheduled {
        activity_type,
        activity_id: d.activity_id.clone(),
        input: d.input.clone(),
        control: d.control.clone(),
        schedule_to_start_timeout: schedule_to_start,
        schedule_to_close_timeout: schedule_to_close,
        start_to_close_timeout: start_to_close,
        task_list,
        task_priority,
        decision_task_completed_event_id: completed_id,
        heartbeat_timeout: heartbeat,
    }))
}

fn continue_as_new(
    execution: &Execution,
    d: &decisions::ContinueAsNewWorkflowExecution,
    completed_id: u64,
    unhandled: bool,
    registry: &dyn Registry,
    new_run_id: &str,
) -> Result<Attributes, SwfError> {
    use ContinueAsNewWorkflowExecutionFailedCause as Cause;
    let failed = |cause| {
        Ok(Attributes::ContinueAsNewWorkflowExecutionFailed(
            ContinueAsNewWorkflowExecutionFailed {
                cause,
                decision_task_completed_event_id: completed_id,
            },
        ))
    };
    if unhandled {
        return failed(Cause::UnhandledDecision);
    }
    let workflow_type = WorkflowType {
        name: execution.workflow_type.name.clone(),
        version: d
            .workflow_type_version
            .clone()
            .unwrap_or_else(|| execution.workflow_type.version.clone()),
    };
    let Some(view) = registry.workflow_type(&workflow_type) else {
        return failed(Cause::WorkflowTypeDoesNotExist);
    };
    if view.status == RegistrationStatus::Deprecated {
        return failed(Cause::WorkflowTypeDeprecated);
    }
    let defaults = &view.configuration;
    let Some(execution_timeout) = resolve_timeout(
        "executionStartToCloseTimeout",
        d.execution_start_to_close_timeout.as_deref(),
        defaults.default_execution_start_to_close_timeout.as_deref(),
    )?
    .filter(|t| *t != Timeout::Unlimited) else {
        return failed(Cause::DefaultExecutionStartToCloseTimeoutUndefined);
    };
    let Some(task_timeout) = resolve_timeout(
        "taskStartToCloseTimeout",
        d.task_start_to_close_timeout.as_deref(),
        defaults.default_task_start_to_close_timeout.as_deref(),
    )?
    else {
        return failed(Cause::DefaultTaskStartToCloseTimeoutUndefined);
    };
    let Some(task_list) = d
        .task_list
        .clone()
        .or_else(|| defaults.default_task_list.clone())
    else {
        return failed(Cause::DefaultTaskListUndefined);
    };
    let Some(child_policy) = d.child_policy.or(defaults.default_child_policy) else {
        return failed(Cause::DefaultChildPolicyUndefined);
    };
    check_length("newExecutionRunId", new_run_id, 1, limits::RUN_ID_CHARS_MAX).map_err(|_| {
        SwfError::new(
            Fault::Internal,
            "ContinueAsNewWorkflowExecution needs a new run id from the engine",
        )
    })?;
    Ok(Attributes::WorkflowExecutionContinuedAsNew(
        WorkflowExecutionContinuedAsNew {
            input: d.input.clone(),
            decision_task_completed_event_id: completed_id,
            new_execution_run_id: new_run_id.to_string(),
            execution_start_to_close_timeout: Some(execution_timeout.to_wire()),
            task_list,
            task_priority: d
                .task_priority
                .clone()
                .or_else(|| defaults.default_task_priority.clone()),
            task_start_to_close_timeout: Some(task_timeout.to_wire()),
            child_policy,
            tag_list: d.tag_list.clone().filter(|t| !t.is_empty()),
            workflow_type,
            lambda_role: d
                .lambda_role
                .clone()
                .or_else(|| defaults.default_lambda_role.clone()),
        },
    ))
}

/// A worker takes the scheduled activity task of `scheduled_event_id`: `ActivityTaskStarted`.
pub fn activity_task_started(
    execution: &Execution,
    scheduled_event_id: u64,
    identity: Option<&str>,
    token_nonce: [u8; 16],
    now_ms: u64,
) -> Result<Vec<Attributes>, SwfError> {
    require_open(execution)?;
    check_optional_length("identity", identity, limits::IDENTITY_CHARS_MAX)?;
    match execution.activity_by_scheduled_event(scheduled_event_id) {
        Some(activity) if activity.started.is_none() => {}
        _ => return Err(unknown_task("the activity task is not scheduled")),
    }
    let mut draft = Draft::new(execution, now_ms);
    draft.push(Attributes::ActivityTaskStarted(ActivityTaskStarted {
        identity: identity.map(str::to_string),
        scheduled_event_id,
        token_nonce,
    }))?;
    Ok(draft.events)
}

/// Checks the activity task a token names is open and started by `started_event_id`.
fn require_started_activity(
    execution: &Execution,
    scheduled_event_id: u64,
    started_event_id: u64,
) -> Result<(), SwfError> {
    require_open(execution)?;
    let started = execution
        .activity_by_scheduled_event(scheduled_event_id)
        .and_then(|a| a.started.as_ref())
        .map(|s| s.started_event_id);
    if started == Some(started_event_id) {
        Ok(())
    } else {
        Err(unknown_task("the activity task is closed"))
    }
}

/// A worker completes its task: `ActivityTaskCompleted` (and a decision task if due).
pub fn activity_task_completed(
    execution: &Execution,
    scheduled_event_id: u64,
    started_event_id: u64,
    result: Option<&str>,
    now_ms: u64,
) -> Result<Vec<Attributes>, SwfError> {
    require_started_activity(execution, scheduled_event_id, started_event_id)?;
    check_optional_length("result", result, limits::DATA_CHARS_MAX)?;
    let mut draft = Draft::new(execution, now_ms);
    draft.push(Attributes::ActivityTaskCompleted(ActivityTaskCompleted {
        result: result.map(str::to_string),
        scheduled_event_id,
        started_event_id,
    }))?;
    draft.finish()
}

/// A worker fails its task: `ActivityTaskFailed` (and a decision task if due).
pub fn activity_task_failed(
    execution: &Execution,
    scheduled_event_id: u64,
    started_event_id: u64,
    reason: Option<&str>,
    details: Option<&str>,
    now_ms: u64,
) -> Result<Vec<Attributes>, SwfError> {
    require_started_activity(execution, scheduled_event_id, started_event_id)?;
    check_optional_length("reason", reason, limits::REASON_CHARS_MAX)?;
    check_optional_length("details", details, limits::DATA_CHARS_MAX)?;
    let mut draft = Draft::new(execution, now_ms);
    draft.push(Attributes::ActivityTaskFailed(ActivityTaskFailed {
        reason: reason.map(str::to_string),
        details: details.map(str::to_string),
        scheduled_event_id,
        started_event_id,
    }))?;
    draft.finish()
}

/// A worker reports its task canceled: `ActivityTaskCanceled` (and a decision task if due).
pub fn activity_task_canceled(
    execution: &Execution,
    scheduled_event_id: u64,
    started_event_id: u64,
    details: Option<&str>,
    now_ms: u64,
) -> Result<Vec<Attributes>, SwfError> {
    require_started_activity(execution, scheduled_event_id, started_event_id)?;
    check_optional_length("details", details, limits::DATA_CHARS_MAX)?;
    let latest_cancel_requested_event_id = execution
        .activity_by_scheduled_event(scheduled_event_id)
        .and_then(|a| a.cancel_requested_event_id);
    let mut draft = Draft::new(execution, now_ms);
    draft.push(Attributes::ActivityTaskCanceled(ActivityTaskCanceled {
        details: details.map(str::to_string),
        scheduled_event_id,
        started_event_id,
        latest_cancel_requested_event_id,
    }))?;
    draft.finish()
}

/// SignalWorkflowExecution: `WorkflowExecutionSignaled` (and a decision task if due).
pub fn signal(
    execution: &Execution,
    signal_name: &str,
    input: Option<&str>,
    now_ms: u64,
) -> Result<Vec<Attributes>, SwfError> {
    require_open(execution)?;
    check_name("signalName", signal_name, limits::NAME_CHARS_MAX)?;
    check_optional_length("input", input, limits::DATA_CHARS_MAX)?;
    let mut draft = Draft::new(execution, now_ms);
    draft.push(Attributes::WorkflowExecutionSignaled(
        WorkflowExecutionSignaled {
            signal_name: signal_name.to_string(),
            input: input.map(str::to_string),
            external_workflow_execution: None,
            external_initiated_event_id: None,
        },
    ))?;
    draft.finish()
}

/// RequestCancelWorkflowExecution: `WorkflowExecutionCancelRequested` (and a decision task if
/// due). The decider decides whether to cancel.
pub fn request_cancel(execution: &Execution, now_ms: u64) -> Result<Vec<Attributes>, SwfError> {
    require_open(execution)?;
    let mut draft = Draft::new(execution, now_ms);
    draft.push(Attributes::WorkflowExecutionCancelRequested(
        WorkflowExecutionCancelRequested {
            external_workflow_execution: None,
            external_initiated_event_id: None,
            cause: None,
        },
    ))?;
    draft.finish()
}

/// TerminateWorkflowExecution: `WorkflowExecutionTerminated` (the execution's child policy
/// unless one is given).
pub fn terminate(
    execution: &Execution,
    reason: Option<&str>,
    details: Option<&str>,
    child_policy: Option<ChildPolicy>,
    now_ms: u64,
) -> Result<Vec<Attributes>, SwfError> {
    require_open(execution)?;
    check_optional_length("reason", reason, limits::REASON_CHARS_MAX)?;
    check_optional_length("details", details, limits::DATA_CHARS_MAX)?;
    let mut draft = Draft::new(execution, now_ms);
    draft.push(Attributes::WorkflowExecutionTerminated(
        WorkflowExecutionTerminated {
            reason: reason.map(str::to_string),
            details: details.map(str::to_string),
            child_policy: child_policy.unwrap_or(execution.config.child_policy),
            cause: Some(WorkflowExecutionTerminatedCause::OperatorInitiated),
        },
    ))?;
    draft.finish()
}

// ---------------------------------------------------------------------------------------------
// Effects on other runs: the engine carries them out in the same durable batch.

/// What a batch of one run does to another run of its domain. [`effects`] reads them off the
/// batch; the engine locks the target, asks [`effect_events`] for the target's events and
/// writes both runs' events in one atomic append.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// A child run to open: its first events.
    StartChild {
        /// The child's workflow id and run id.
        child: WorkflowExecution,
        /// Its first events (`WorkflowExecutionStarted` naming the parent, then its first
        /// `DecisionTaskScheduled`).
        attributes: Vec<Attributes>,
    },
    /// A signal for the open run `target` (a SignalExternalWorkflowExecution decision).
    Signal {
        /// The target.
        target: WorkflowExecution,
        /// The sender.
        sender: WorkflowExecution,
        /// The sender's `SignalExternalWorkflowExecutionInitiated` event.
        initiated_event_id: u64,
        /// The signal's name.
        signal_name: String,
        /// The signal's input.
        input: Option<String>,
    },
    /// A cancel request for the open run `target` (a RequestCancelExternalWorkflowExecution
    /// decision).
    RequestCancel {
        /// The target.
        target: WorkflowExecution,
        /// The asker.
        sender: WorkflowExecution,
        /// The asker's `RequestCancelExternalWorkflowExecutionInitiated` event.
        initiated_event_id: u64,
    },
    /// A child closed (not continued as new): its parent hears how.
    ChildClosed {
        /// The parent.
        parent: WorkflowExecution,
        /// The parent's `StartChildWorkflowExecutionInitiated` event of the child.
        initiated_event_id: u64,
        /// The child's run that closed.
        child: WorkflowExecution,
        /// The child's closing event.
        close: Box<Attributes>,
    },
    /// A parent closed with this child open: the parent's child policy applies to the open
    /// run of `child_workflow_id` (whichever run of the child's chain is open).
    ChildPolicy {
        /// The child's workflow id.
        child_workflow_id: String,
        /// The parent's run.
        parent: WorkflowExecution,
        /// The parent's `StartChildWorkflowExecutionInitiated` event of the child.
        initiated_event_id: u64,
        /// The policy.
        policy: ChildPolicy,
    },
}

impl Effect {
    /// The run the effect lands on: its workflow id and, when known, its run id (a child
    /// policy names the child's workflow id only).
    pub fn target(&self) -> (&str, Option<&str>) {
        match self {
            Effect::StartChild { child, .. } => (&child.workflow_id, Some(&child.run_id)),
            Effect::Signal { target, .. } | Effect::RequestCancel { target, .. } => {
                (&target.workflow_id, Some(&target.run_id))
            }
            Effect::ChildClosed { parent, .. } => (&parent.workflow_id, Some(&parent.run_id)),
            Effect::ChildPolicy {
                child_workflow_id, ..
            } => (child_workflow_id, None),
        }
    }
}

/// The effects on other runs of `events`, just applied to `before` to give `after` (both of
/// one run): children started, signals and cancel requests sent, and on a close the parent's
/// notice (unless continued as new: the new run stays the child) and the child policy for
/// every open child.
pub fn effects(
    before: &Execution,
    after: &Execution,
    events: &[Event],
) -> Result<Vec<Effect>, SwfError> {
    let mut effects = Vec::new();
    let this = after.workflow_execution();
    let initiated_child = |id: u64| {
        events.iter().find_map(|e| match &e.attributes {
            Attributes::StartChildWorkflowExecutionInitiated(a) if e.event_id == id => Some(a),
            _ => None,
        })
    };
    let initiated_signal = |id: u64| {
        events.iter().find_map(|e| match &e.attributes {
            Attributes::SignalExternalWorkflowExecutionInitiated(a) if e.event_id == id => Some(a),
            _ => None,
        })
    };
    for event in events {
        match &event.attributes {
            Attributes::ChildWorkflowExecutionStarted(a) => {
                let initiated = initiated_child(a.initiated_event_id).ok_or_else(|| {
                    SwfError::new(
                        Fault::Internal,
                        "a ChildWorkflowExecutionStarted without its initiated event in the batch",
                    )
                })?;
                effects.push(Effect::StartChild {
                    child: a.workflow_execution.clone(),
                    attributes: start_child(&this, a.initiated_event_id, initiated)?,
                });
            }
            Attributes::ExternalWorkflowExecutionSignaled(a) => {
                let initiated = initiated_signal(a.initiated_event_id).ok_or_else(|| {
                    SwfError::new(
                        Fault::Internal,
                        "an ExternalWorkflowExecutionSignaled without its initiated event in the batch",
                    )
                })?;
                effects.push(Effect::Signal {
                    target: a.workflow_execution.clone(),
                    sender: this.clone(),
                    initiated_event_id: a.initiated_event_id,
                    signal_name: initiated.signal_name.clone(),
                    input: initiated.input.clone(),
                });
            }
            Attributes::ExternalWorkflowExecutionCancelRequested(a) => {
                effects.push(Effect::RequestCancel {
                    target: a.workflow_execution.clone(),
                    sender: this.clone(),
                    initiated_event_id: a.initiated_event_id,
                });
            }
            _ => {}
        }
    }
    let Some(close) = events
        .last()
        .filter(|_| before.is_open() && !after.is_open())
    else {
        return Ok(effects);
    };
    let continued = matches!(
        close.attributes,
        Attributes::WorkflowExecutionContinuedAsNew(_)
    );
    if let (Some(parent), Some(initiated_event_id), false) =
        (&after.parent, after.parent_initiated_event_id, continued)
    {
        effects.push(Effect::ChildClosed {
            parent: parent.clone(),
            initiated_event_id,
            child: this.clone(),
            close: Box::new(close.attributes.clone()),
        });
    }
    let policy = match &close.attributes {
        Attributes::WorkflowExecutionTerminated(a) => a.child_policy,
        Attributes::WorkflowExecutionTimedOut(a) => a.child_policy,
        _ => after.config.child_policy,
    };
    if policy != ChildPolicy::Abandon {
        for (initiated_event_id, child) in &after.open_children {
            effects.push(Effect::ChildPolicy {
                child_workflow_id: child.workflow_id.clone(),
                parent: this.clone(),
                initiated_event_id: *initiated_event_id,
                policy,
            });
        }
    }
    Ok(effects)
}

/// The first events of a child run: `WorkflowExecutionStarted` with the parent and its
/// initiated event, then the first `DecisionTaskScheduled`.
pub fn start_child(
    parent: &WorkflowExecution,
    initiated_event_id: u64,
    initiated: &StartChildWorkflowExecutionInitiated,
) -> Result<Vec<Attributes>, SwfError> {
    let started = WorkflowExecutionStarted {
        input: initiated.input.clone(),
        execution_start_to_close_timeout: initiated.execution_start_to_close_timeout.clone(),
        task_start_to_close_timeout: initiated.task_start_to_close_timeout.clone(),
        child_policy: initiated.child_policy,
        task_list: initiated.task_list.clone(),
        task_priority: initiated.task_priority.clone(),
        workflow_type: initiated.workflow_type.clone(),
        tag_list: initiated.tag_list.clone(),
        continued_execution_run_id: None,
        parent_workflow_execution: Some(parent.clone()),
        parent_initiated_event_id: Some(initiated_event_id),
        lambda_role: initiated.lambda_role.clone(),
    };
    // The domain is not in the events; the check fold needs a key only.
    first_events("", &initiated.workflow_id, started)
}

/// The events an effect appends to its target run (`target`, not a new child: the engine
/// opens those from [`Effect::StartChild`] itself). Nothing for a target that is closed or
/// no longer the run the effect is for (a child policy for a run of another parent, a notice
/// for a parent that no longer has the child open).
pub fn effect_events(
    target: &Execution,
    effect: &Effect,
    now_ms: u64,
) -> Result<Vec<Attributes>, SwfError> {
    if !target.is_open() {
        return Ok(Vec::new());
    }
    let mut draft = Draft::new(target, now_ms);
    match effect {
        Effect::StartChild { .. } => {
            return Err(SwfError::new(
                Fault::Internal,
                "a child start is a new run, not events of an open one",
            ))
        }
        Effect::Signal {
            sender,
            initiated_event_id,
            signal_name,
            input,
            ..
        } => {
            draft.push(Attributes::WorkflowExecutionSignaled(
                WorkflowExecutionSignaled {
                    signal_name: signal_name.clone(),
                    input: input.clone(),
                    external_workflow_execution: Some(sender.clone()),
                    external_initiated_event_id: Some(*initiated_event_id),
                },
            ))?;
        }
        Effect::RequestCancel {
            sender,
            initiated_event_id,
            ..
        } => {
            draft.push(Attributes::WorkflowExecutionCancelRequested(
                WorkflowExecutionCancelRequested {
                    external_workflow_execution: Some(sender.clone()),
                    external_initiated_event_id: Some(*initiated_event_id),
                    cause: None,
                },
            ))?;
        }
        Effect::ChildClosed {
            initiated_event_id,
            child,
            close,
            ..
        } => {
            let Some(open) = target.open_children.get(initiated_event_id) else {
                return Ok(Vec::new());
            };
            let (Some(started_event_id), true) =
                (open.started_event_id, open.workflow_id == child.workflow_id)
            else {
                return Ok(Vec::new());
            };
            let workflow_execution = child.clone();
            let workflow_type = open.workflow_type.clone();
            let initiated_event_id = *initiated_event_id;
            let event = match close.as_ref() {
                Attributes::WorkflowExecutionCompleted(a) => {
                    Attributes::ChildWorkflowExecutionCompleted(ChildWorkflowExecutionCompleted {
                        workflow_execution,
                        workflow_type,
                        result: a.result.clone(),
                        initiated_event_id,
                        started_event_id,
                    })
                }
                Attributes::WorkflowExecutionFailed(a) => {
                    Attributes::ChildWorkflowExecutionFailed(ChildWorkflowExecutionFailed {
                        workflow_execution,
                        workflow_type,
                        reason: a.reason.clone(),
                        details: a.details.clone(),
                        initiated_event_id,
                        started_event_id,
                    })
                }
                Attributes::WorkflowExecutionTimedOut(a) => {
                    Attributes::ChildWorkflowExecutionTimedOut(ChildWorkflowExecutionTimedOut {
                        workflow_execution,
                        workflow_type,
                        timeout_type: a.timeout_type,
                        initiated_event_id,
                        started_event_id,
                    })
                }
                Attributes::WorkflowExecutionCanceled(a) => {
                    Attributes::ChildWorkflowExecutionCanceled(ChildWorkflowExecutionCanceled {
                        workflow_execution,
                        workflow_type,
                        details: a.details.clone(),
                        initiated_event_id,
                        started_event_id,
                    })
                }
                Attributes::WorkflowExecutionTerminated(_) => {
                    Attributes::ChildWorkflowExecutionTerminated(ChildWorkflowExecutionTerminated {
                        workflow_execution,
                        workflow_type,
                        initiated_event_id,
                        started_event_id,
                    })
                }
                // Continued as new (the new run stays the child) or not a close.
                _ => return Ok(Vec::new()),
            };
            draft.push(event)?;
        }
        Effect::ChildPolicy {
            parent,
            initiated_event_id,
            policy,
            ..
        } => {
            if target.parent.as_ref() != Some(parent)
                || target.parent_initiated_event_id != Some(*initiated_event_id)
            {
                return Ok(Vec::new());
            }
            match policy {
                ChildPolicy::Abandon => return Ok(Vec::new()),
                ChildPolicy::Terminate => {
                    draft.push(Attributes::WorkflowExecutionTerminated(
                        WorkflowExecutionTerminated {
                            reason: None,
                            details: None,
                            child_policy: target.config.child_policy,
                            cause: Some(WorkflowExecutionTerminatedCause::ChildPolicyApplied),
                        },
                    ))?;
                }
                ChildPolicy::RequestCancel => {
                    draft.push(Attributes::WorkflowExecutionCancelRequested(
                        WorkflowExecutionCancelRequested {
                            external_workflow_execution: None,
                            external_initiated_event_id: None,
                            cause: Some(WorkflowExecutionCancelRequestedCause::ChildPolicyApplied),
                        },
                    ))?;
                }
            }
        }
    }
    draft.finish()
}

/// A deadline of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deadline {
    /// When, epoch ms.
    pub due_ms: u64,
    /// What.
    pub kind: DeadlineKind,
}

/// What comes due.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeadlineKind {
    /// The execution's start-to-close timeout.
    Execution,
    /// The started decision task's start-to-close timeout.
    DecisionStartToClose {
        /// Its started event.
        started_event_id: u64,
    },
    /// The scheduled decision task's schedule-to-start timeout.
    DecisionScheduleToStart {
        /// Its scheduled event.
        scheduled_event_id: u64,
    },
    /// An activity task's timeout.
    Activity {
        /// Its scheduled event.
        scheduled_event_id: u64,
        /// Which timeout.
        timeout_type: ActivityTaskTimeoutType,
    },
    /// A timer fires.
    Timer {
        /// The timer.
        timer_id: String,
        /// Its started event.
        started_event_id: u64,
    },
}

fn after(start_ms: u64, timeout: Timeout) -> Option<u64> {
    timeout.as_ms().map(|ms| start_ms.saturating_add(ms))
}

/// Every deadline of an open run, earliest first (ties in a fixed order).
pub fn deadlines(execution: &Execution) -> Vec<Deadline> {
    let mut deadlines = Vec::new();
    if !execution.is_open() {
        return deadlines;
    }
    if let Some(due_ms) = after(
        execution.start_ms,
        execution.config.execution_start_to_close,
    ) {
        deadlines.push(Deadline {
            due_ms,
            kind: DeadlineKind::Execution,
        });
    }
    match &execution.decision_task {
        DecisionTaskState::None => {}
        DecisionTaskState::Scheduled(task) => {
            if let Some(due_ms) = task
                .schedule_to_start
                .and_then(|t| after(task.scheduled_ms, t))
            {
                deadlines.push(Deadline {
                    due_ms,
                    kind: DeadlineKind::DecisionScheduleToStart {
                        scheduled_event_id: task.scheduled_event_id,
                    },
                });
            }
        }
        DecisionTaskState::Started(task) => {
            if let Some(due_ms) = after(task.started_ms, task.scheduled.start_to_close) {
                deadlines.push(Deadline {
                    due_ms,
                    kind: DeadlineKind::DecisionStartToClose {
                        started_event_id: task.started_event_id,
                    },
                });
            }
        }
    }
    for activity in execution.activities.values() {
        let mut kinds = Vec::new();
        match &activity.started {
            None => kinds.push((
                after(activity.scheduled_ms, activity.schedule_to_start),
                ActivityTaskTimeoutType::ScheduleToStart,
            )),
            Some(started) => {
                kinds.push((
                    after(started.started_ms, activity.start_to_close),
                    ActivityTaskTimeoutType::StartToClose,
                ));
                let beat_ms = activity.last_heartbeat_ms.unwrap_or(started.started_ms);
                kinds.push((
                    after(beat_ms, activity.heartbeat),
                    ActivityTaskTimeoutType::Heartbeat,
                ));
            }
        }
        kinds.push((
            after(activity.scheduled_ms, activity.schedule_to_close),
            ActivityTaskTimeoutType::ScheduleToClose,
        ));
        // Only the earliest can fire: it closes the task.
        if let Some((due_ms, timeout_type)) = kinds
            .into_iter()
            .filter_map(|(due, kind)| due.map(|d| (d, kind)))
            .min_by_key(|(due, _)| *due)
        {
            deadlines.push(Deadline {
                due_ms,
                kind: DeadlineKind::Activity {
                    scheduled_event_id: activity.scheduled_event_id,
                    timeout_type,
                },
            });
        }
    }
    for (timer_id, timer) in &execution.timers {
        deadlines.push(Deadline {
            due_ms: timer.due_ms,
            kind: DeadlineKind::Timer {
                timer_id: timer_id.clone(),
                started_event_id: timer.started_event_id,
            },
        });
    }
    deadlines.sort_by_key(|d| d.due_ms);
    deadlines
}

/// When the run's next deadline comes, epoch ms (`None`: none, or the run is closed).
pub fn next_due_ms(execution: &Execution) -> Option<u64> {
    deadlines(execution).first().map(|d| d.due_ms)
}

/// Everything due at `now_ms`, earliest first: timers fired, decision task timeouts (a new
/// decision task follows), activity timeouts (with the last heartbeat's details) and the
/// execution's timeout (which closes it, and nothing after it fires).
pub fn due(execution: &Execution, now_ms: u64) -> Result<Vec<Attributes>, SwfError> {
    let mut draft = Draft::new(execution, now_ms);
    for deadline in deadlines(execution) {
        if deadline.due_ms > now_ms || !draft.execution.is_open() {
            break;
        }
        let current = &draft.execution;
        let event = match deadline.kind {
            DeadlineKind::Execution => Some(Attributes::WorkflowExecutionTimedOut(
                WorkflowExecutionTimedOut {
                    timeout_type: WorkflowExecutionTimeoutType::StartToClose,
                    child_policy: current.config.child_policy,
                },
            )),
            DeadlineKind::DecisionStartToClose { started_event_id } => {
                match &current.decision_task {
                    DecisionTaskState::Started(task)
                        if task.started_event_id == started_event_id =>
                    {
                        Some(Attributes::DecisionTaskTimedOut(DecisionTaskTimedOut {
                            timeout_type: DecisionTaskTimeoutType::StartToClose,
                            scheduled_event_id: task.scheduled.scheduled_event_id,
                            started_event_id,
                        }))
                    }
                    _ => None,
                }
            }
            DeadlineKind::DecisionScheduleToStart { scheduled_event_id } => {
                match &current.decision_task {
                    DecisionTaskState::Scheduled(task)
                        if task.scheduled_event_id == scheduled_event_id =>
                    {
                        Some(Attributes::DecisionTaskTimedOut(DecisionTaskTimedOut {
                            timeout_type: DecisionTaskTimeoutType::ScheduleToStart,
                            scheduled_event_id,
                            started_event_id: 0,
                        }))
                    }
                    _ => None,
                }
            }
            DeadlineKind::Activity {
                scheduled_event_id,
                timeout_type,
            } => current
                .activity_by_scheduled_event(scheduled_event_id)
                .map(|activity| {
                    Attributes::ActivityTaskTimedOut(ActivityTaskTimedOut {
                        timeout_type,
                        scheduled_event_id,
                        started_event_id: activity
                            .started
                            .as_ref()
                            .map_or(0, |s| s.started_event_id),
                        details: activity.last_heartbeat_details.clone(),
                    })
                }),
            DeadlineKind::Timer {
                timer_id,
                started_event_id,
            } => match current.timers.get(&timer_id) {
                Some(timer) if timer.started_event_id == started_event_id => {
                    Some(Attributes::TimerFired(TimerFired {
                        timer_id,
                        started_event_id,
                    }))
                }
                _ => None,
            },
        };
        if let Some(event) = event {
            draft.push(event)?;
        }
    }
    draft.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{CloseStatus, ExecutionStatus};
    use crate::decisions::parse_decisions;
    use crate::fold::tests::key;
    use serde_json::{json, Value};
    use std::collections::BTreeMap;

    #[derive(Default)]
    struct TestRegistry {
        activities: BTreeMap<ActivityType, ActivityTypeView>,
        workflows: BTreeMap<WorkflowType, WorkflowTypeView>,
        /// Open executions of the domain: workflow id -> run id.
        open: BTreeMap<String, String>,
        /// Activity lists the embedder reports full.
        full_lists: Vec<String>,
    }

    impl Registry for TestRegistry {
        fn activity_type(&self, activity_type: &ActivityType) -> Option<ActivityTypeView> {
            self.activities.get(activity_type).cloned()
        }
        fn workflow_type(&self, workflow_type: &WorkflowType) -> Option<WorkflowTypeView> {
            self.workflows.get(workflow_type).cloned()
        }
        fn open_execution(
            &self,
            workflow_id: &str,
            run_id: Option<&str>,
        ) -> Option<WorkflowExecution> {
            let open = self.open.get(workflow_id)?;
            (run_id.is_none() || run_id == Some(open.as_str())).then(|| WorkflowExecution {
                workflow_id: workflow_id.to_string(),
                run_id: open.clone(),
            })
        }
        fn activity_list_full(&self, list: &str, adding: usize) -> bool {
            // "full" is full; "one" holds one task at most.
            self.full_lists.iter().any(|full| full == list) || (list == "one" && adding >= 1)
        }
    }

    fn activity(name: &str) -> ActivityType {
        ActivityType {
            name: name.into(),
            version: "1".into(),
        }
    }

    fn workflow(version: &str) -> WorkflowType {
        WorkflowType {
            name: "order".into(),
            version: version.into(),
        }
    }

    fn full_activity_defaults() -> ActivityTypeConfiguration {
        ActivityTypeConfiguration {
            default_task_start_to_close_timeout: Some("50".into()),
            default_task_heartbeat_timeout: Some("20".into()),
            default_task_list: Some(TaskList {
                name: "workers".into(),
            }),
            default_task_priority: Some("4".into()),
            default_task_schedule_to_start_timeout: Some("10".into()),
            default_task_schedule_to_close_timeout: Some("100".into()),
        }
    }

    fn workflow_defaults() -> WorkflowTypeConfiguration {
        WorkflowTypeConfiguration {
            default_task_start_to_close_timeout: Some("30".into()),
            default_execution_start_to_close_timeout: Some("3600".into()),
            default_task_list: Some(TaskList {
                name: "deciders".into(),
            }),
            default_task_priority: Some("2".into()),
            default_child_policy: Some(ChildPolicy::Terminate),
            default_lambda_role: None,
        }
    }

    fn registry() -> TestRegistry {
        let mut registry = TestRegistry::default();
        registry.activities.insert(
            activity("charge"),
            ActivityTypeView {
                status: RegistrationStatus::Registered,
                configuration: full_activity_defaults(),
            },
        );
        registry.activities.insert(
            activity("bare"),
            ActivityTypeView {
                status: RegistrationStatus::Registered,
                configuration: ActivityTypeConfiguration::default(),
            },
        );
        registry.activities.insert(
            activity("old"),
            ActivityTypeView {
                status: RegistrationStatus::Deprecated,
                configuration: full_activity_defaults(),
            },
        );
        registry.workflows.insert(
            workflow("1"),
            WorkflowTypeView {
                status: RegistrationStatus::Registered,
                configuration: workflow_defaults(),
            },
        );
        registry.workflows.insert(
            workflow("old"),
            WorkflowTypeView {
                status: RegistrationStatus::Deprecated,
                configuration: workflow_defaults(),
            },
        );
        registry.workflows.insert(
            workflow("bare"),
            WorkflowTypeView {
                status: RegistrationStatus::Registered,
                configuration: WorkflowTypeConfiguration::default(),
            },
        );
        registry.open.insert("busy".into(), "run-busy".into());
        registry.full_lists.push("full".into());
        registry
    }

    fn start_input() -> StartWorkflowExecutionInput {
        StartWorkflowExecutionInput {
            domain: "d".into(),
            workflow_id: "w".into(),
            workflow_type: workflow("1"),
            task_list: None,
            task_priority: None,
            input: Some("in".into()),
            execution_start_to_close_timeout: None,
            tag_list: Some(vec!["t".into()]),
            task_start_to_close_timeout: None,
            child_policy: None,
            lambda_role: None,
        }
    }

    /// The engine's part: ids in order, one timestamp, applied and kept.
    struct Run {
        execution: Execution,
        history: Vec<Event>,
    }

    impl Run {
        fn start_at(now_ms: u64) -> Run {
            let view = &registry().workflows[&workflow("1")];
            let attributes = start(&start_input(), view).expect("starts");
            let events: Vec<Event> = attributes
                .into_iter()
                .enumerate()
                .map(|(i, attributes)| Event {
                    event_id: i as u64 + 1,
                    timestamp_ms: now_ms,
                    attributes,
                })
                .collect();
            let execution = Execution::fold(key(), &events).expect("folds");
            Run {
                execution,
                history: events,
            }
        }

        fn commit(&mut self, batch: Vec<Attributes>, now_ms: u64) -> Vec<Event> {
            let mut committed = Vec::new();
            for attributes in batch {
                let event = Event {
                    event_id: self.execution.next_event_id,
                    timestamp_ms: now_ms,
                    attributes,
                };
                self.execution
                    .apply(&event)
                    .expect("a transition's batch folds");
                self.history.push(event.clone());
                committed.push(event);
            }
            committed
        }

        fn types_of(events: &[Event]) -> Vec<&'static str> {
            events.iter().map(Event::event_type).collect()
        }

        /// Takes the scheduled decision task.
        fn take_decision_task(&mut self, now_ms: u64) -> u64 {
            let batch = decision_task_started(&self.execution, Some("decider"), [1; 16], now_ms)
                .expect("a decision task is scheduled");
            self.commit(batch, now_ms)[0].event_id
        }

        /// Answers the started decision task.
        fn decide(&mut self, started: u64, decisions: Value, now_ms: u64) -> Vec<Event> {
            let decisions = parse_decisions(decisions.as_array().expect("a list")).expect("valid");
            let completion = DecisionTaskCompletion {
                started_event_id: started,
                decisions: &decisions,
                execution_context: Some("ctx"),
                task_list: None,
                task_list_schedule_to_start_timeout: None,
                new_run_id: "run-2",
                child_run_ids: &["kid-run-0".to_string(), "kid-run-1".to_string()],
            };
            let batch = decision_task_completed(&self.execution, &completion, &registry(), now_ms)
                .expect("completes");
            self.commit(batch, now_ms)
        }

        fn attributes(&self, event_id: u64) -> &Attributes {
            &self.history[event_id as usize - 1].attributes
        }
    }

    fn schedule(activity_name: &str, activity_id: &str, extra: Value) -> Value {
        let mut attributes = json!({
            "activityType": {"name": activity_name, "version": "1"},
            "activityId": activity_id,
        });
        if let (Some(target), Some(extra)) = (attributes.as_object_mut(), extra.as_object()) {
            target.extend(extra.clone());
        }
        json!({"decisionType": "ScheduleActivityTask",
               "scheduleActivityTaskDecisionAttributes": attributes})
    }

    #[test]
    fn start_uses_the_types_defaults_and_schedules_a_decision_task() {
        let run = Run::start_at(1_000);
        assert_eq!(
            Run::types_of(&run.history),
            ["WorkflowExecutionStarted", "DecisionTaskScheduled"]
        );
        let json = run.history[0].to_json();
        let started = &json["workflowExecutionStartedEventAttributes"];
        assert_eq!(started["taskList"], json!({"name": "deciders"}));
        assert_eq!(started["executionStartToCloseTimeout"], json!("3600"));
        assert_eq!(started["taskStartToCloseTimeout"], json!("30"));
        assert_eq!(started["childPolicy"], json!("TERMINATE"));
        assert_eq!(started["taskPriority"], json!("2"));
        let json = run.history[1].to_json();
        assert_eq!(
            json["decisionTaskScheduledEventAttributes"],
            json!({"taskList": {"name": "deciders"}, "taskPriority": "2",
                   "startToCloseTimeout": "30"})
        );
    }

    #[test]
    fn start_overrides_win_and_missing_defaults_are_faults() {
        let view = &registry().workflows[&workflow("1")];
        let mut input = start_input();
        input.task_list = Some(TaskList { name: "vip".into() });
        input.task_priority = Some("9".into());
        input.execution_start_to_close_timeout = Some("60".into());
        input.task_start_to_close_timeout = Some("NONE".into());
        input.child_policy = Some(ChildPolicy::Abandon);
        let events = start(&input, view).expect("starts");
        let Attributes::DecisionTaskScheduled(scheduled) = &events[1] else {
            panic!("second is DecisionTaskScheduled");
        };
        assert_eq!(scheduled.task_list.name, "vip");
        assert_eq!(scheduled.task_priority.as_deref(), Some("9"));
        assert_eq!(scheduled.start_to_close_timeout.as_deref(), Some("NONE"));
        let bare = WorkflowTypeView {
            status: RegistrationStatus::Registered,
            configuration: WorkflowTypeConfiguration::default(),
        };
        let mut input = start_input();
        let fault = |input: &StartWorkflowExecutionInput| {
            start(input, &bare).map_err(|e| (e.fault, e.message))
        };
        assert!(
            matches!(fault(&input), Err((Fault::DefaultUndefined, m)) if m.contains("taskList"))
        );
        input.task_list = Some(TaskList { name: "l".into() });
        assert!(
            matches!(fault(&input), Err((Fault::DefaultUndefined, m)) if m.contains("executionStartToCloseTimeout"))
        );
        input.execution_start_to_close_timeout = Some("NONE".into());
        assert!(matches!(fault(&input), Err((Fault::Validation, m)) if m.contains("NONE")));
        input.execution_start_to_close_timeout = Some("10".into());
        assert!(
            matches!(fault(&input), Err((Fault::DefaultUndefined, m)) if m.contains("taskStartToCloseTimeout"))
        );
        input.task_start_to_close_timeout = Some("10".into());
        assert!(
            matches!(fault(&input), Err((Fault::DefaultUndefined, m)) if m.contains("childPolicy"))
        );
        input.child_policy = Some(ChildPolicy::Terminate);
        assert!(fault(&input).is_ok());
        let deprecated = WorkflowTypeView {
            status: RegistrationStatus::Deprecated,
            configuration: workflow_defaults(),
        };
        assert_eq!(
            start(&start_input(), &deprecated).map_err(|e| e.fault),
            Err(Fault::TypeDeprecated)
        );
        let mut bad = start_input();
        bad.workflow_id = "a:b".into();
        assert_eq!(
            start(&bad, view).map_err(|e| e.fault),
            Err(Fault::Validation)
        );
        let mut bad = start_input();
        bad.tag_list = Some((0..6).map(|i| i.to_string()).collect());
        assert_eq!(
            start(&bad, view).map_err(|e| e.fault),
            Err(Fault::Validation)
        );
    }

    #[test]
    fn a_decision_task_starts_once_and_records_its_nonce() {
        let mut run = Run::start_at(1_000);
        let started = run.take_decision_task(2_000);
        assert_eq!(started, 3);
        let Attributes::DecisionTaskStarted(a) = run.attributes(started) else {
            panic!("started");
        };
        assert_eq!(a.scheduled_event_id, 2);
        assert_eq!(a.token_nonce, [1; 16]);
        assert_eq!(
            decision_task_started(&run.execution, None, [2; 16], 2_000).map_err(|e| e.fault),
            Err(Fault::UnknownResource)
        );
        // A wrong started id is a closed task.
        let decisions = [];
        let completion = DecisionTaskCompletion {
            started_event_id: started + 1,
            decisions: &decisions,
            execution_context: None,
            task_list: None,
            task_list_schedule_to_start_timeout: None,
            new_run_id: "",
            child_run_ids: &[],
        };
        assert_eq!(
            decision_task_completed(&run.execution, &completion, &registry(), 3_000)
                .map_err(|e| e.fault),
            Err(Fault::UnknownResource)
        );
    }

    #[test]
    fn an_empty_answer_schedules_nothing_and_previous_started_moves() {
        let mut run = Run::start_at(1_000);
        let first = run.take_decision_task(2_000);
        let events = run.decide(first, json!([]), 3_000);
        assert_eq!(Run::types_of(&events), ["DecisionTaskCompleted"]);
        assert_eq!(run.execution.previous_started_event_id, first);
        assert_eq!(
            run.execution.latest_execution_context.as_deref(),
            Some("ctx")
        );
        assert_eq!(run.execution.decision_task, DecisionTaskState::None);
        // A signal wakes the decider; the next task reports the first as previous.
        let batch = signal(&run.execution, "go", Some("x"), 4_000).expect("signals");
        let events = run.commit(batch, 4_000);
        assert_eq!(
            Run::types_of(&events),
            ["WorkflowExecutionSignaled", "DecisionTaskScheduled"]
        );
        let second = run.take_decision_task(5_000);
        assert_eq!(run.execution.previous_started_event_id, first);
        run.decide(second, json!([]), 6_000);
        assert_eq!(run.execution.previous_started_event_id, second);
    }

    #[test]
    fn schedule_activity_task_uses_defaults_and_overrides() {
        let mut run = Run::start_at(1_000);
        let started = run.take_decision_task(2_000);
        let events = run.decide(
            started,
            json!([
                schedule("charge", "a1", json!({})),
                schedule(
                    "charge",
                    "a2",
                    json!({"taskList": {"name": "fast"}, "taskPriority": "8",
                    "scheduleToStartTimeout": "1", "heartbeatTimeout": "NONE", "input": "i",
                    "control": "c"})
                ),
            ]),
            3_000,
        );
        assert_eq!(
            Run::types_of(&events),
            [
                "DecisionTaskCompleted",
                "ActivityTaskScheduled",
                "ActivityTaskScheduled"
            ]
        );
        assert_eq!(
            events[1].to_json()["activityTaskScheduledEventAttributes"],
            json!({"activityType": {"name": "charge", "version": "1"}, "activityId": "a1",
                   "scheduleToStartTimeout": "10", "scheduleToCloseTimeout": "100",
                   "startToCloseTimeout": "50", "taskList": {"name": "workers"},
                   "taskPriority": "4", "decisionTaskCompletedEventId": 4,
                   "heartbeatTimeout": "20"})
        );
        let a2 = &run.execution.activities["a2"];
        assert_eq!(a2.task_list.name, "fast");
        assert_eq!(a2.priority, 8);
        assert_eq!(a2.schedule_to_start, Timeout::Seconds(1));
        assert_eq!(a2.heartbeat, Timeout::Unlimited);
        assert_eq!(a2.input.as_deref(), Some("i"));
        assert_eq!(run.execution.latest_activity_task_scheduled_ms, Some(3_000));
        assert!(run.execution.decision_task == DecisionTaskState::None);
    }

    #[test]
    fn each_schedule_activity_task_failure_has_its_cause_and_wakes_the_decider() {
        let bare_timeouts = json!({"taskList": {"name": "l"}, "scheduleToCloseTimeout": "9",
            "scheduleToStartTimeout": "9", "startToCloseTimeout": "9", "heartbeatTimeout": "9"});
        let without = |field: &str| {
            let mut v = bare_timeouts.clone();
            v.as_object_mut().expect("object").remove(field);
            v
        };
        let cases = [
            (
                schedule("nope", "x", json!({})),
                "ACTIVITY_TYPE_DOES_NOT_EXIST",
            ),
            (schedule("old", "x", json!({})), "ACTIVITY_TYPE_DEPRECATED"),
            (
                schedule("charge", "taken", json!({})),
                "ACTIVITY_ID_ALREADY_IN_USE",
            ),
            (
                schedule("bare", "x", without("taskList")),
                "DEFAULT_TASK_LIST_UNDEFINED",
            ),
            (
                schedule("bare", "x", without("scheduleToCloseTimeout")),
                "DEFAULT_SCHEDULE_TO_CLOSE_TIMEOUT_UNDEFINED",
            ),
            (
                schedule("bare", "x", without("scheduleToStartTimeout")),
                "DEFAULT_SCHEDULE_TO_START_TIMEOUT_UNDEFINED",
            ),
            (
                schedule("bare", "x", without("startToCloseTimeout")),
                "DEFAULT_START_TO_CLOSE_TIMEOUT_UNDEFINED",
            ),
            (
                schedule("bare", "x", without("heartbeatTimeout")),
                "DEFAULT_HEARTBEAT_TIMEOUT_UNDEFINED",
            ),
            (
                schedule("charge", "x", json!({"taskList": {"name": "full"}})),
                "ACTIVITY_CREATION_RATE_EXCEEDED",
            ),
        ];
        for (decision, cause) in cases {
            let mut run = Run::start_at(1_000);
            let started = run.take_decision_task(2_000);
            let completed = run.decide(
                started,
                json!([schedule("charge", "taken", json!({}))]),
                2_500,
            );
            assert_eq!(completed.len(), 2);
            let batch =
                activity_task_started(&run.execution, completed[1].event_id, None, [3; 16], 2_600)
                    .expect("worker takes it");
            run.commit(batch, 2_600);
            // Wake the decider through a signal, then answer with the failing decision.
            let batch = signal(&run.execution, "s", None, 2_700).expect("signal");
            run.commit(batch, 2_700);
            let started = run.take_decision_task(2_800);
            let events = run.decide(started, json!([decision]), 3_000);
            assert_eq!(
                Run::types_of(&events),
                [
                    "DecisionTaskCompleted",
                    "ScheduleActivityTaskFailed",
                    "DecisionTaskScheduled"
                ],
                "{cause}"
            );
            assert_eq!(
                events[1].to_json()["scheduleActivityTaskFailedEventAttributes"]["cause"],
                json!(cause)
            );
        }
    }

    #[test]
    fn a_batch_counts_its_own_schedules_into_a_list_against_its_bound() {
        let mut run = Run::start_at(1_000);
        let started = run.take_decision_task(2_000);
        let into_one = |id: &str| schedule("charge", id, json!({"taskList": {"name": "one"}}));
        let events = run.decide(
            started,
            json!([
                into_one("a1"),
                into_one("a2"),
                schedule("charge", "b1", json!({}))
            ]),
            3_000,
        );
        assert_eq!(
            Run::types_of(&events),
            [
                "DecisionTaskCompleted",
                "ActivityTaskScheduled",
                "ScheduleActivityTaskFailed",
                "ActivityTaskScheduled",
                "DecisionTaskScheduled"
            ]
        );
        assert_eq!(
            events[2].to_json()["scheduleActivityTaskFailedEventAttributes"]["cause"],
            json!("ACTIVITY_CREATION_RATE_EXCEEDED")
        );
    }

    #[test]
    fn the_open_activities_limit_fails_a_schedule() {
        let mut run = Run::start_at(1_000);
        let started = run.take_decision_task(2_000);
        let many: Vec<Value> = (0..limits::OPEN_ACTIVITIES_MAX)
            .map(|i| schedule("charge", &format!("a{i}"), json!({})))
            .collect();
        run.decide(started, Value::Array(many), 3_000);
        assert_eq!(run.execution.activities.len(), limits::OPEN_ACTIVITIES_MAX);
        let batch = signal(&run.execution, "s", None, 3_100).expect("signal");
        run.commit(batch, 3_100);
        let started = run.take_decision_task(3_200);
        let events = run.decide(
            started,
            json!([schedule("charge", "one-more", json!({}))]),
            3_300,
        );
        let last = &events[1];
        assert_eq!(
            last.to_json()["scheduleActivityTaskFailedEventAttributes"]["cause"],
            json!("OPEN_ACTIVITIES_LIMIT_EXCEEDED")
        );
    }

    #[test]
    fn a_close_with_unhandled_events_fails_and_a_new_task_follows() {
        let closes = [
            (
                json!({"decisionType": "CompleteWorkflowExecution"}),
                "CompleteWorkflowExecutionFailed",
            ),
            (
                json!({"decisionType": "FailWorkflowExecution"}),
                "FailWorkflowExecutionFailed",
            ),
            (
                json!({"decisionType": "CancelWorkflowExecution"}),
                "CancelWorkflowExecutionFailed",
            ),
            (
                json!({"decisionType": "ContinueAsNewWorkflowExecution"}),
                "ContinueAsNewWorkflowExecutionFailed",
            ),
        ];
        for (decision, failed) in closes {
            let mut run = Run::start_at(1_000);
            let started = run.take_decision_task(2_000);
            // A signal arrives while the decider holds the task: no new task yet.
            let batch = signal(&run.execution, "late", None, 2_500).expect("signal");
            assert_eq!(
                Run::types_of(&run.commit(batch, 2_500)),
                ["WorkflowExecutionSignaled"]
            );
            let events = run.decide(started, json!([decision]), 3_000);
            assert_eq!(
                Run::types_of(&events),
                ["DecisionTaskCompleted", failed, "DecisionTaskScheduled"]
            );
            let json = events[1].to_json();
            let key = events[1].attributes.attributes_key();
            assert_eq!(json[key.as_str()]["cause"], json!("UNHANDLED_DECISION"));
            assert!(run.execution.is_open());
            // The next task sees the signal and may close.
            let started = run.take_decision_task(4_000);
            let events = run.decide(
                started,
                json!([{"decisionType": "CompleteWorkflowExecution",
                        "completeWorkflowExecutionDecisionAttributes": {"result": "r"}}]),
                5_000,
            );
            assert_eq!(
                Run::types_of(&events),
                ["DecisionTaskCompleted", "WorkflowExecutionCompleted"]
            );
            assert_eq!(run.execution.status, ExecutionStatus::Closed);
            assert_eq!(run.execution.close_status, Some(CloseStatus::Completed));
        }
    }

    #[test]
    fn close_decisions_close_and_must_be_last() {
        for (decision, closed, status) in [
            (
                json!({"decisionType": "FailWorkflowExecution",
                    "failWorkflowExecutionDecisionAttributes": {"reason": "r", "details": "d"}}),
                "WorkflowExecutionFailed",
                CloseStatus::Failed,
            ),
            (
                json!({"decisionType": "CancelWorkflowExecution"}),
                "WorkflowExecutionCanceled",
                CloseStatus::Canceled,
            ),
        ] {
            let mut run = Run::start_at(1_000);
            let started = run.take_decision_task(2_000);
            let events = run.decide(started, json!([decision]), 3_000);
            assert_eq!(Run::types_of(&events), ["DecisionTaskCompleted", closed]);
            assert_eq!(run.execution.close_status, Some(status));
            assert_eq!(next_due_ms(&run.execution), None);
            assert_eq!(
                signal(&run.execution, "s", None, 4_000).map_err(|e| e.fault),
                Err(Fault::UnknownResource)
            );
        }
        let mut run = Run::start_at(1_000);
        let started = run.take_decision_task(2_000);
        let decisions = parse_decisions(&[
            json!({"decisionType": "CompleteWorkflowExecution"}),
            json!({"decisionType": "RecordMarker", "recordMarkerDecisionAttributes": {"markerName": "m"}}),
        ])
        .expect("valid");
        let completion = DecisionTaskCompletion {
            started_event_id: started,
            decisions: &decisions,
            execution_context: None,
            task_list: None,
            task_list_schedule_to_start_timeout: None,
            new_run_id: "",
            child_run_ids: &[],
        };
        let error = decision_task_completed(&run.execution, &completion, &registry(), 3_000)
            .expect_err("close is not last");
        assert_eq!(error.fault, Fault::Validation);
        assert!(
            error.message.contains("decisions.1.member"),
            "{}",
            error.message
        );
    }

    #[test]
    fn continue_as_new_closes_and_starts_the_next_run() {
        let mut run = Run::start_at(1_000);
        let started = run.take_decision_task(2_000);
        let events = run.decide(
            started,
            json!([{"decisionType": "ContinueAsNewWorkflowExecution",
                    "continueAsNewWorkflowExecutionDecisionAttributes": {"input": "next",
                        "tagList": ["x"]}}]),
            3_000,
        );
        assert_eq!(
            Run::types_of(&events),
            ["DecisionTaskCompleted", "WorkflowExecutionContinuedAsNew"]
        );
        let Attributes::WorkflowExecutionContinuedAsNew(continued) = &events[1].attributes else {
            panic!("continued");
        };
        assert_eq!(continued.new_execution_run_id, "run-2");
        assert_eq!(continued.task_list.name, "deciders");
        assert_eq!(
            continued.execution_start_to_close_timeout.as_deref(),
            Some("3600")
        );
        assert_eq!(
            run.execution.close_status,
            Some(CloseStatus::ContinuedAsNew)
        );
        let next = start_continued(&run.execution, continued).expect("next run");
        let Attributes::WorkflowExecutionStarted(first) = &next[0] else {
            panic!("a start");
        };
        assert_eq!(first.continued_execution_run_id.as_deref(), Some("r"));
        assert_eq!(first.input.as_deref(), Some("next"));
        assert_eq!(first.tag_list, Some(vec!["x".to_string()]));
        assert!(matches!(next[1], Attributes::DecisionTaskScheduled(_)));
        // Failures: unknown version, deprecated version, undefined defaults.
        for (attributes, cause) in [
            (
                json!({"workflowTypeVersion": "9"}),
                "WORKFLOW_TYPE_DOES_NOT_EXIST",
            ),
            (
                json!({"workflowTypeVersion": "old"}),
                "WORKFLOW_TYPE_DEPRECATED",
            ),
            (
                json!({"workflowTypeVersion": "bare"}),
                "DEFAULT_EXECUTION_START_TO_CLOSE_TIMEOUT_UNDEFINED",
            ),
            (
                json!({"workflowTypeVersion": "bare", "executionStartToCloseTimeout": "5"}),
                "DEFAULT_TASK_START_TO_CLOSE_TIMEOUT_UNDEFINED",
            ),
            (
                json!({"workflowTypeVersion": "bare", "executionStartToCloseTimeout": "5",
                       "taskStartToCloseTimeout": "5"}),
                "DEFAULT_TASK_LIST_UNDEFINED",
            ),
            (
                json!({"workflowTypeVersion": "bare", "executionStartToCloseTimeout": "5",
                       "taskStartToCloseTimeout": "5", "taskList": {"name": "l"}}),
                "DEFAULT_CHILD_POLICY_UNDEFINED",
            ),
        ] {
            let mut run = Run::start_at(1_000);
            let started = run.take_decision_task(2_000);
            let events = run.decide(
                started,
                json!([{"decisionType": "ContinueAsNewWorkflowExecution",
                        "continueAsNewWorkflowExecutionDecisionAttributes": attributes}]),
                3_000,
            );
            assert_eq!(
                Run::types_of(&events),
                [
                    "DecisionTaskCompleted",
                    "ContinueAsNewWorkflowExecutionFailed",
                    "DecisionTaskScheduled"
                ],
                "{cause}"
            );
            assert_eq!(
                events[1].to_json()["continueAsNewWorkflowExecutionFailedEventAttributes"]["cause"],
                json!(cause)
            );
        }
    }

    #[test]
    fn timers_markers_and_their_failures() {
        let mut run = Run::start_at(1_000);
        let started = run.take_decision_task(2_000);
        let events = run.decide(
            started,
            json!([
                {"decisionType": "StartTimer",
                 "startTimerDecisionAttributes": {"timerId": "t", "startToFireTimeout": "5"}},
                {"decisionType": "StartTimer",
                 "startTimerDecisionAttributes": {"timerId": "t", "startToFireTimeout": "5"}},
                {"decisionType": "CancelTimer", "cancelTimerDecisionAttributes": {"timerId": "nope"}},
                {"decisionType": "RecordMarker",
                 "recordMarkerDecisionAttributes": {"markerName": "m", "details": "d"}},
            ]),
            3_000,
        );
        assert_eq!(
            Run::types_of(&events),
            [
                "DecisionTaskCompleted",
                "TimerStarted",
                "StartTimerFailed",
                "CancelTimerFailed",
                "MarkerRecorded",
                "DecisionTaskScheduled"
            ]
        );
        assert_eq!(
            events[2].to_json()["startTimerFailedEventAttributes"]["cause"],
            json!("TIMER_ID_ALREADY_IN_USE")
        );
        assert_eq!(
            events[3].to_json()["cancelTimerFailedEventAttributes"]["cause"],
            json!("TIMER_ID_UNKNOWN")
        );
        assert_eq!(run.execution.timers["t"].due_ms, 8_000);
        // The timer fires at its due time, not before; a decision task follows (once the
        // scheduled one is answered, as one is open now).
        let started = run.take_decision_task(4_000);
        run.decide(started, json!([]), 4_500);
        assert_eq!(next_due_ms(&run.execution), Some(8_000));
        assert!(due(&run.execution, 7_999).expect("nothing").is_empty());
        let batch = due(&run.execution, 8_000).expect("fires");
        let events = run.commit(batch, 8_000);
        assert_eq!(
            Run::types_of(&events),
            ["TimerFired", "DecisionTaskScheduled"]
        );
        assert_eq!(
            events[0].to_json()["timerFiredEventAttributes"],
            json!({"timerId": "t", "startedEventId": 5})
        );
        // Cancel of an open timer.
        let started = run.take_decision_task(9_000);
        run.decide(
            started,
            json!([{"decisionType": "StartTimer",
                    "startTimerDecisionAttributes": {"timerId": "u", "startToFireTimeout": "60"}}]),
            9_500,
        );
        let started_timer = run.execution.timers["u"].started_event_id;
        let batch = signal(&run.execution, "s", None, 9_600).expect("signal");
        run.commit(batch, 9_600);
        let started = run.take_decision_task(9_700);
        let events = run.decide(
            started,
            json!([{"decisionType": "CancelTimer", "cancelTimerDecisionAttributes": {"timerId": "u"}}]),
            9_800,
        );
        assert_eq!(
            Run::types_of(&events),
            ["DecisionTaskCompleted", "TimerCanceled"]
        );
        assert_eq!(
            events[1].to_json()["timerCanceledEventAttributes"]["startedEventId"],
            json!(started_timer)
        );
        assert!(run.execution.timers.is_empty());
    }

    #[test]
    fn schedule_lambda_function_fails_with_its_documented_cause() {
        let mut run = Run::start_at(1_000);
        let started = run.take_decision_task(2_000);
        let events = run.decide(
            started,
            json!([{"decisionType": "ScheduleLambdaFunction",
                    "scheduleLambdaFunctionDecisionAttributes": {"id": "f", "name": "fn"}}]),
            3_000,
        );
        assert_eq!(
            Run::types_of(&events),
            [
                "DecisionTaskCompleted",
                "ScheduleLambdaFunctionFailed",
                "DecisionTaskScheduled"
            ]
        );
        assert_eq!(
            events[1].to_json()["scheduleLambdaFunctionFailedEventAttributes"]["cause"],
            json!("LAMBDA_SERVICE_NOT_AVAILABLE_IN_REGION")
        );
    }

    fn start_child_decision(workflow_id: &str, version: &str, extra: Value) -> Value {
        let mut attributes = json!({
            "workflowType": {"name": "order", "version": version}, "workflowId": workflow_id,
            "control": "ctl", "input": "kid-in"});
        if let (Some(target), Some(extra)) = (attributes.as_object_mut(), extra.as_object()) {
            target.extend(extra.clone());
        }
        json!({"decisionType": "StartChildWorkflowExecution",
               "startChildWorkflowExecutionDecisionAttributes": attributes})
    }

    /// A parent (`w`/`r`) with child `kid` started (run `kid-run-0`) by its first decision,
    /// and the child's run folded from the start the effect gives.
    fn parent_and_child(extra: Value) -> (Run, Run) {
        let mut parent = Run::start_at(1_000);
        let started = parent.take_decision_task(2_000);
        let before = parent.execution.clone();
        let events = parent.decide(
            started,
            json!([start_child_decision("kid", "1", extra)]),
            3_000,
        );
        let effects = super::effects(&before, &parent.execution, &events).expect("effects");
        let [Effect::StartChild { child, attributes }] = effects.as_slice() else {
            panic!("one child start: {effects:?}");
        };
        assert_eq!(child.run_id, "kid-run-0");
        let events: Vec<Event> = attributes
            .iter()
            .enumerate()
            .map(|(i, a)| Event {
                event_id: i as u64 + 1,
                timestamp_ms: 3_000,
                attributes: a.clone(),
            })
            .collect();
        let key = RunKey {
            domain: "d".into(),
            workflow_id: "kid".into(),
            run_id: "kid-run-0".into(),
        };
        let execution = Execution::fold(key, &events).expect("the child's start folds");
        (
            parent,
            Run {
                execution,
                history: events,
            },
        )
    }

    #[test]
    fn start_child_initiates_and_starts_a_child_with_the_types_defaults() {
        let (parent, child) = parent_and_child(json!({"tagList": ["k"]}));
        assert_eq!(
            Run::types_of(&parent.history[3..]),
            [
                "DecisionTaskCompleted",
                "StartChildWorkflowExecutionInitiated",
                "ChildWorkflowExecutionStarted",
                "DecisionTaskScheduled"
            ]
        );
        assert_eq!(
            parent.history[4].to_json()["startChildWorkflowExecutionInitiatedEventAttributes"],
            json!({"workflowId": "kid", "workflowType": {"name": "order", "version": "1"},
                   "control": "ctl", "input": "kid-in", "executionStartToCloseTimeout": "3600",
                   "taskList": {"name": "deciders"}, "taskPriority": "2",
                   "decisionTaskCompletedEventId": 4, "childPolicy": "TERMINATE",
                   "taskStartToCloseTimeout": "30", "tagList": ["k"]})
        );
        assert_eq!(
            parent.history[5].to_json()["childWorkflowExecutionStartedEventAttributes"],
            json!({"workflowExecution": {"workflowId": "kid", "runId": "kid-run-0"},
                   "workflowType": {"name": "order", "version": "1"}, "initiatedEventId": 5})
        );
        assert_eq!(
            parent
                .execution
                .open_counts()
                .open_child_workflow_executions,
            1
        );
        let started = child.history[0].to_json();
        let started = &started["workflowExecutionStartedEventAttributes"];
        assert_eq!(
            started["parentWorkflowExecution"],
            json!({"workflowId": "w", "runId": "r"})
        );
        assert_eq!(started["parentInitiatedEventId"], json!(5));
        assert_eq!(started["input"], json!("kid-in"));
        assert_eq!(started["tagList"], json!(["k"]));
        assert_eq!(
            Run::types_of(&child.history),
            ["WorkflowExecutionStarted", "DecisionTaskScheduled"]
        );
        assert_eq!(child.execution.parent_initiated_event_id, Some(5));
    }

    #[test]
    fn each_start_child_failure_has_its_cause() {
        let bare = |extra: Value| start_child_decision("kid", "bare", extra);
        let cases = [
            (
                start_child_decision("kid", "nope", json!({})),
                "WORKFLOW_TYPE_DOES_NOT_EXIST",
                0,
            ),
            (
                start_child_decision("kid", "old", json!({})),
                "WORKFLOW_TYPE_DEPRECATED",
                0,
            ),
            (
                bare(json!({})),
                "DEFAULT_EXECUTION_START_TO_CLOSE_TIMEOUT_UNDEFINED",
                0,
            ),
            (
                bare(json!({"executionStartToCloseTimeout": "9"})),
                "DEFAULT_TASK_LIST_UNDEFINED",
                0,
            ),
            (
                bare(json!({"executionStartToCloseTimeout": "9", "taskList": {"name": "l"}})),
                "DEFAULT_TASK_START_TO_CLOSE_TIMEOUT_UNDEFINED",
                0,
            ),
            (
                bare(
                    json!({"executionStartToCloseTimeout": "9", "taskList": {"name": "l"},
                            "taskStartToCloseTimeout": "9"}),
                ),
                "DEFAULT_CHILD_POLICY_UNDEFINED",
                0,
            ),
            // An open execution of the domain has the workflow id: initiated, then failed.
            (
                start_child_decision("busy", "1", json!({})),
                "WORKFLOW_ALREADY_RUNNING",
                5,
            ),
            // So has the parent itself.
            (
                start_child_decision("w", "1", json!({})),
                "WORKFLOW_ALREADY_RUNNING",
                5,
            ),
        ];
        for (decision, cause, initiated) in cases {
            let mut run = Run::start_at(1_000);
            let started = run.take_decision_task(2_000);
            let mut registry = registry();
            registry.open.insert("w".into(), "r".into());
            let decisions = parse_decisions(&[decision]).expect("valid");
            let completion = DecisionTaskCompletion {
                started_event_id: started,
                decisions: &decisions,
                execution_context: None,
                task_list: None,
                task_list_schedule_to_start_timeout: None,
                new_run_id: "",
                child_run_ids: &["kid-run-0".to_string()],
            };
            let batch = decision_task_completed(&run.execution, &completion, &registry, 3_000)
                .expect("completes");
            let events = run.commit(batch, 3_000);
            let failed = events
                .iter()
                .find(|e| e.event_type() == "StartChildWorkflowExecutionFailed")
                .unwrap_or_else(|| panic!("{cause}: {:?}", Run::types_of(&events)));
            let json = failed.to_json();
            let a = &json["startChildWorkflowExecutionFailedEventAttributes"];
            assert_eq!(a["cause"], json!(cause));
            assert_eq!(a["initiatedEventId"], json!(initiated), "{cause}");
            assert_eq!(a["control"], json!("ctl"));
            assert_eq!(run.execution.open_children.len(), 0, "{cause}");
            assert_eq!(
                events.last().map(Event::event_type),
                Some("DecisionTaskScheduled")
            );
        }
        // Two children of one workflow id in one answer: the second finds it in use.
        let mut run = Run::start_at(1_000);
        let started = run.take_decision_task(2_000);
        let events = run.decide(
            started,
            json!([
                start_child_decision("twin", "1", json!({})),
                start_child_decision("twin", "1", json!({}))
            ]),
            3_000,
        );
        assert_eq!(
            Run::types_of(&events),
            [
                "DecisionTaskCompleted",
                "StartChildWorkflowExecutionInitiated",
                "ChildWorkflowExecutionStarted",
                "StartChildWorkflowExecutionInitiated",
                "StartChildWorkflowExecutionFailed",
                "DecisionTaskScheduled"
            ]
        );
    }

    #[test]
    fn the_open_children_limit_fails_a_start_child() {
        let mut run = Run::start_at(1_000);
        let ids: Vec<String> = (0..=limits::OPEN_CHILDREN_MAX)
            .map(|i| format!("kid-run-{i}"))
            .collect();
        let answer = |run: &mut Run, decisions: Vec<Value>, ids: &[String], now_ms| {
            let started = run.take_decision_task(now_ms);
            let decisions = parse_decisions(&decisions).expect("valid");
            let completion = DecisionTaskCompletion {
                started_event_id: started,
                decisions: &decisions,
                execution_context: None,
                task_list: None,
                task_list_schedule_to_start_timeout: None,
                new_run_id: "",
                child_run_ids: ids,
            };
            let batch = decision_task_completed(&run.execution, &completion, &registry(), now_ms)
                .expect("completes");
            run.commit(batch, now_ms)
        };
        let many: Vec<Value> = (0..limits::OPEN_CHILDREN_MAX)
            .map(|i| start_child_decision(&format!("kid{i}"), "1", json!({})))
            .collect();
        answer(&mut run, many, &ids, 2_000);
        assert_eq!(run.execution.open_children.len(), limits::OPEN_CHILDREN_MAX);
        let events = answer(
            &mut run,
            vec![start_child_decision("one-more", "1", json!({}))],
            &ids[limits::OPEN_CHILDREN_MAX..],
            3_000,
        );
        assert_eq!(
            events[1].to_json()["startChildWorkflowExecutionFailedEventAttributes"]["cause"],
            json!("OPEN_CHILDREN_LIMIT_EXCEEDED")
        );
    }

    #[test]
    fn signal_and_cancel_external_reach_open_runs_and_fail_for_unknown_ones() {
        let mut run = Run::start_at(1_000);
        let started = run.take_decision_task(2_000);
        let before = run.execution.clone();
        let events = run.decide(
            started,
            json!([
                {"decisionType": "SignalExternalWorkflowExecution",
                 "signalExternalWorkflowExecutionDecisionAttributes": {
                     "workflowId": "busy", "signalName": "s", "input": "si", "control": "c1"}},
                {"decisionType": "SignalExternalWorkflowExecution",
                 "signalExternalWorkflowExecutionDecisionAttributes": {
                     "workflowId": "busy", "runId": "another", "signalName": "s"}},
                {"decisionType": "RequestCancelExternalWorkflowExecution",
                 "requestCancelExternalWorkflowExecutionDecisionAttributes": {"workflowId": "busy"}},
                {"decisionType": "RequestCancelExternalWorkflowExecution",
                 "requestCancelExternalWorkflowExecutionDecisionAttributes": {
                     "workflowId": "nobody", "control": "c2"}},
            ]),
            3_000,
        );
        assert_eq!(
            Run::types_of(&events),
            [
                "DecisionTaskCompleted",
                "SignalExternalWorkflowExecutionInitiated",
                "ExternalWorkflowExecutionSignaled",
                "SignalExternalWorkflowExecutionInitiated",
                "SignalExternalWorkflowExecutionFailed",
                "RequestCancelExternalWorkflowExecutionInitiated",
                "ExternalWorkflowExecutionCancelRequested",
                "RequestCancelExternalWorkflowExecutionInitiated",
                "RequestCancelExternalWorkflowExecutionFailed",
                "DecisionTaskScheduled"
            ]
        );
        assert_eq!(
            events[2].to_json()["externalWorkflowExecutionSignaledEventAttributes"],
            json!({"workflowExecution": {"workflowId": "busy", "runId": "run-busy"},
                   "initiatedEventId": 5})
        );
        assert_eq!(
            events[4].to_json()["signalExternalWorkflowExecutionFailedEventAttributes"],
            json!({"workflowId": "busy", "runId": "another",
                   "cause": "UNKNOWN_EXTERNAL_WORKFLOW_EXECUTION", "initiatedEventId": 7,
                   "decisionTaskCompletedEventId": 4})
        );
        assert_eq!(
            events[8].to_json()["requestCancelExternalWorkflowExecutionFailedEventAttributes"]
                ["cause"],
            json!("UNKNOWN_EXTERNAL_WORKFLOW_EXECUTION")
        );
        let effects = super::effects(&before, &run.execution, &events).expect("effects");
        assert_eq!(effects.len(), 2, "{effects:?}");
        // The target's side.
        let mut target = Run::start_at(1_000);
        let t = target.take_decision_task(1_500);
        target.decide(t, json!([]), 1_600);
        let batch = effect_events(&target.execution, &effects[0], 3_000).expect("signals");
        let events = target.commit(batch, 3_000);
        assert_eq!(
            Run::types_of(&events),
            ["WorkflowExecutionSignaled", "DecisionTaskScheduled"]
        );
        assert_eq!(
            events[0].to_json()["workflowExecutionSignaledEventAttributes"],
            json!({"signalName": "s", "input": "si",
                   "externalWorkflowExecution": {"workflowId": "w", "runId": "r"},
                   "externalInitiatedEventId": 5})
        );
        let batch = effect_events(&target.execution, &effects[1], 3_000).expect("cancels");
        let events = target.commit(batch, 3_000);
        assert_eq!(
            events[0].to_json()["workflowExecutionCancelRequestedEventAttributes"],
            json!({"externalWorkflowExecution": {"workflowId": "w", "runId": "r"},
                   "externalInitiatedEventId": 9})
        );
        assert!(target.execution.cancel_requested);
    }

    #[test]
    fn a_child_close_notifies_its_parent_once() {
        let closes = [
            (
                json!({"decisionType": "CompleteWorkflowExecution",
                    "completeWorkflowExecutionDecisionAttributes": {"result": "done"}}),
                "ChildWorkflowExecutionCompleted",
                json!({"result": "done"}),
            ),
            (
                json!({"decisionType": "FailWorkflowExecution",
                    "failWorkflowExecutionDecisionAttributes": {"reason": "why", "details": "d"}}),
                "ChildWorkflowExecutionFailed",
                json!({"reason": "why", "details": "d"}),
            ),
            (
                json!({"decisionType": "CancelWorkflowExecution",
                    "cancelWorkflowExecutionDecisionAttributes": {"details": "cd"}}),
                "ChildWorkflowExecutionCanceled",
                json!({"details": "cd"}),
            ),
        ];
        for (decision, parent_event, fields) in closes {
            let (mut parent, mut child) = parent_and_child(json!({}));
            let started = child.take_decision_task(4_000);
            let before = child.execution.clone();
            let events = child.decide(started, json!([decision]), 5_000);
            let effects = super::effects(&before, &child.execution, &events).expect("effects");
            assert_eq!(effects.len(), 1, "{effects:?}");
            let batch = effect_events(&parent.execution, &effects[0], 5_000).expect("notice");
            let events = parent.commit(batch, 5_000);
            assert_eq!(events[0].event_type(), parent_event);
            let json = events[0].to_json();
            let a = json[events[0].attributes.attributes_key().as_str()]
                .as_object()
                .expect("attributes")
                .clone();
            assert_eq!(
                a["workflowExecution"],
                json!({"workflowId": "kid", "runId": "kid-run-0"})
            );
            assert_eq!(a["initiatedEventId"], json!(5));
            assert_eq!(a["startedEventId"], json!(6));
            for (k, v) in fields.as_object().expect("fields") {
                assert_eq!(&a[k], v, "{parent_event}.{k}");
            }
            assert_eq!(parent.execution.open_children.len(), 0);
            // A second notice finds no open child: nothing.
            assert_eq!(
                effect_events(&parent.execution, &effects[0], 5_000),
                Ok(vec![])
            );
        }
        // Timed out and terminated.
        let (parent, child) = parent_and_child(json!({"executionStartToCloseTimeout": "10"}));
        let batch = due(&child.execution, 13_000).expect("due");
        let mut after = child.execution.clone();
        let mut events = Vec::new();
        for (event_id, attributes) in (after.next_event_id..).zip(batch) {
            let e = Event {
                event_id,
                timestamp_ms: 13_000,
                attributes,
            };
            after.apply(&e).expect("folds");
            events.push(e);
        }
        let effects = super::effects(&child.execution, &after, &events).expect("effects");
        let batch = effect_events(&parent.execution, &effects[0], 13_000).expect("notice");
        assert!(
            matches!(&batch[0], Attributes::ChildWorkflowExecutionTimedOut(a)
            if a.timeout_type == WorkflowExecutionTimeoutType::StartToClose)
        );
        let batch = terminate(&child.execution, None, None, None, 6_000).expect("terminates");
        let mut after = child.execution.clone();
        let e = Event {
            event_id: after.next_event_id,
            timestamp_ms: 6_000,
            attributes: batch[0].clone(),
        };
        after.apply(&e).expect("folds");
        let effects = super::effects(&child.execution, &after, &[e]).expect("effects");
        let batch = effect_events(&parent.execution, &effects[0], 6_000).expect("notice");
        assert!(matches!(
            &batch[0],
            Attributes::ChildWorkflowExecutionTerminated(_)
        ));
    }

    #[test]
    fn a_parent_close_applies_its_child_policy_to_open_children() {
        for (policy, expected) in [
            (ChildPolicy::Terminate, Some("WorkflowExecutionTerminated")),
            (
                ChildPolicy::RequestCancel,
                Some("WorkflowExecutionCancelRequested"),
            ),
            (ChildPolicy::Abandon, None),
        ] {
            let (parent, mut child) = parent_and_child(json!({}));
            let batch =
                terminate(&parent.execution, None, None, Some(policy), 4_000).expect("terminates");
            let mut after = parent.execution.clone();
            let e = Event {
                event_id: after.next_event_id,
                timestamp_ms: 4_000,
                attributes: batch[0].clone(),
            };
            after.apply(&e).expect("folds");
            let effects = super::effects(&parent.execution, &after, &[e]).expect("effects");
            let Some(expected) = expected else {
                assert_eq!(effects, vec![], "ABANDON does nothing");
                continue;
            };
            assert_eq!(effects.len(), 1, "{effects:?}");
            assert_eq!(effects[0].target(), ("kid", None));
            let batch = effect_events(&child.execution, &effects[0], 4_000).expect("applies");
            let events = child.commit(batch, 4_000);
            assert_eq!(events[0].event_type(), expected);
            let json = events[0].to_json();
            let a = &json[events[0].attributes.attributes_key().as_str()];
            assert_eq!(a["cause"], json!("CHILD_POLICY_APPLIED"));
            // A run whose parent is another is left alone.
            let mut other = effects[0].clone();
            if let Effect::ChildPolicy { parent, .. } = &mut other {
                parent.run_id = "someone-else".into();
            }
            let (_, fresh) = parent_and_child(json!({}));
            assert_eq!(effect_events(&fresh.execution, &other, 4_000), Ok(vec![]));
        }
    }

    /// A run with activity `a1` scheduled (default timeouts: s2s 10, s2c 100, s2c 50, hb 20)
    /// at 3 s and the decision task answered.
    fn run_with_activity(extra: Value) -> (Run, u64) {
        let mut run = Run::start_at(1_000);
        let started = run.take_decision_task(2_000);
        let events = run.decide(started, json!([schedule("charge", "a1", extra)]), 3_000);
        (run, events[1].event_id)
    }

    #[test]
    fn activity_workers_start_complete_fail_and_cancel() {
        let (mut run, scheduled) = run_with_activity(json!({}));
        assert_eq!(
            activity_task_started(&run.execution, scheduled + 9, None, [5; 16], 4_000)
                .map_err(|e| e.fault),
            Err(Fault::UnknownResource)
        );
        let batch = activity_task_started(&run.execution, scheduled, Some("w1"), [5; 16], 4_000)
            .expect("starts");
        let started = run.commit(batch, 4_000)[0].event_id;
        assert_eq!(
            activity_task_started(&run.execution, scheduled, None, [5; 16], 4_000)
                .map_err(|e| e.fault),
            Err(Fault::UnknownResource),
            "started twice"
        );
        assert_eq!(
            activity_task_completed(&run.execution, scheduled, started + 1, None, 5_000)
                .map_err(|e| e.fault),
            Err(Fault::UnknownResource)
        );
        let batch = activity_task_completed(&run.execution, scheduled, started, Some("ok"), 5_000)
            .expect("completes");
        let events = run.commit(batch, 5_000);
        assert_eq!(
            Run::types_of(&events),
            ["ActivityTaskCompleted", "DecisionTaskScheduled"]
        );
        // A second answer with the same ids is a closed task.
        assert_eq!(
            activity_task_failed(&run.execution, scheduled, started, None, None, 5_000)
                .map_err(|e| e.fault),
            Err(Fault::UnknownResource)
        );

        let (mut run, scheduled) = run_with_activity(json!({}));
        let batch =
            activity_task_started(&run.execution, scheduled, None, [5; 16], 4_000).expect("starts");
        let started = run.commit(batch, 4_000)[0].event_id;
        let batch = activity_task_failed(
            &run.execution,
            scheduled,
            started,
            Some("declined"),
            Some("card"),
            5_000,
        )
        .expect("fails");
        let events = run.commit(batch, 5_000);
        assert_eq!(
            events[0].to_json()["activityTaskFailedEventAttributes"],
            json!({"reason": "declined", "details": "card", "scheduledEventId": scheduled,
                   "startedEventId": started})
        );
    }

    #[test]
    fn an_activity_closing_while_a_decision_task_is_started_waits_for_it() {
        let (mut run, scheduled) = run_with_activity(json!({}));
        let batch =
            activity_task_started(&run.execution, scheduled, None, [5; 16], 4_000).expect("starts");
        let started_activity = run.commit(batch, 4_000)[0].event_id;
        let batch = signal(&run.execution, "s", None, 4_100).expect("signal");
        run.commit(batch, 4_100);
        let decision = run.take_decision_task(4_200);
        let batch =
            activity_task_completed(&run.execution, scheduled, started_activity, None, 4_300)
                .expect("completes");
        let events = run.commit(batch, 4_300);
        assert_eq!(
            Run::types_of(&events),
            ["ActivityTaskCompleted"],
            "one is started"
        );
        let events = run.decide(decision, json!([]), 4_400);
        assert_eq!(
            Run::types_of(&events),
            ["DecisionTaskCompleted", "DecisionTaskScheduled"],
            "the completion is still unseen"
        );
    }

    #[test]
    fn request_cancel_activity_task_cancels_unstarted_and_flags_started() {
        let (mut run, scheduled) = run_with_activity(json!({}));
        let batch = signal(&run.execution, "s", None, 3_100).expect("signal");
        run.commit(batch, 3_100);
        let decision = run.take_decision_task(3_200);
        let events = run.decide(
            decision,
            json!([
                {"decisionType": "RequestCancelActivityTask",
                 "requestCancelActivityTaskDecisionAttributes": {"activityId": "a1"}},
                {"decisionType": "RequestCancelActivityTask",
                 "requestCancelActivityTaskDecisionAttributes": {"activityId": "zz"}},
            ]),
            3_300,
        );
        assert_eq!(
            Run::types_of(&events),
            [
                "DecisionTaskCompleted",
                "ActivityTaskCancelRequested",
                "ActivityTaskCanceled",
                "RequestCancelActivityTaskFailed",
                "DecisionTaskScheduled"
            ]
        );
        assert_eq!(
            events[2].to_json()["activityTaskCanceledEventAttributes"],
            json!({"scheduledEventId": scheduled, "startedEventId": 0,
                   "latestCancelRequestedEventId": events[1].event_id})
        );
        assert_eq!(
            events[3].to_json()["requestCancelActivityTaskFailedEventAttributes"]["cause"],
            json!("ACTIVITY_ID_UNKNOWN")
        );

        // A started task: only the request; the worker learns it from its heartbeat.
        let (mut run, scheduled) = run_with_activity(json!({}));
        let batch =
            activity_task_started(&run.execution, scheduled, None, [5; 16], 3_100).expect("starts");
        let started = run.commit(batch, 3_100)[0].event_id;
        assert_eq!(
            run.execution
                .record_heartbeat(scheduled, started, 3_150, None),
            Some(false)
        );
        let batch = signal(&run.execution, "s", None, 3_200).expect("signal");
        run.commit(batch, 3_200);
        let decision = run.take_decision_task(3_300);
        let events = run.decide(
            decision,
            json!([{"decisionType": "RequestCancelActivityTask",
                    "requestCancelActivityTaskDecisionAttributes": {"activityId": "a1"}}]),
            3_400,
        );
        assert_eq!(
            Run::types_of(&events),
            ["DecisionTaskCompleted", "ActivityTaskCancelRequested"]
        );
        let requested = events[1].event_id;
        assert_eq!(
            run.execution
                .record_heartbeat(scheduled, started, 3_500, None),
            Some(true)
        );
        let batch =
            activity_task_canceled(&run.execution, scheduled, started, Some("undone"), 3_600)
                .expect("canceled");
        let events = run.commit(batch, 3_600);
        assert_eq!(
            events[0].to_json()["activityTaskCanceledEventAttributes"],
            json!({"details": "undone", "scheduledEventId": scheduled, "startedEventId": started,
                   "latestCancelRequestedEventId": requested})
        );
        assert_eq!(events[1].event_type(), "DecisionTaskScheduled");
    }

    fn timed_out(run: &mut Run, now_ms: u64) -> Value {
        let batch = due(&run.execution, now_ms).expect("due");
        let events = run.commit(batch, now_ms);
        assert_eq!(
            Run::types_of(&events),
            ["ActivityTaskTimedOut", "DecisionTaskScheduled"]
        );
        events[0].to_json()["activityTaskTimedOutEventAttributes"].clone()
    }

    #[test]
    fn activity_schedule_to_start_times_out() {
        let (mut run, scheduled) = run_with_activity(json!({}));
        // Scheduled at 3 s with a 10 s schedule-to-start.
        assert_eq!(next_due_ms(&run.execution), Some(13_000));
        assert!(due(&run.execution, 12_999).expect("nothing yet").is_empty());
        assert_eq!(
            timed_out(&mut run, 13_000),
            json!({"timeoutType": "SCHEDULE_TO_START", "scheduledEventId": scheduled,
                   "startedEventId": 0})
        );
        assert!(run.execution.activities.is_empty());
    }

    #[test]
    fn activity_start_to_close_times_out() {
        let (mut run, scheduled) =
            run_with_activity(json!({"heartbeatTimeout": "NONE", "startToCloseTimeout": "5"}));
        let batch =
            activity_task_started(&run.execution, scheduled, None, [5; 16], 4_000).expect("starts");
        let started = run.commit(batch, 4_000)[0].event_id;
        assert_eq!(next_due_ms(&run.execution), Some(9_000));
        assert_eq!(
            timed_out(&mut run, 9_000),
            json!({"timeoutType": "START_TO_CLOSE", "scheduledEventId": scheduled,
                   "startedEventId": started})
        );
    }

    #[test]
    fn activity_heartbeat_times_out_with_the_last_details() {
        let (mut run, scheduled) = run_with_activity(json!({}));
        let batch =
            activity_task_started(&run.execution, scheduled, None, [5; 16], 4_000).expect("starts");
        let started = run.commit(batch, 4_000)[0].event_id;
        // Heartbeat timeout 20 s: due at 24 s, pushed to 30 s by a heartbeat at 10 s.
        assert_eq!(next_due_ms(&run.execution), Some(24_000));
        run.execution
            .record_heartbeat(scheduled, started, 10_000, Some("40%".into()))
            .expect("beats");
        assert_eq!(next_due_ms(&run.execution), Some(30_000));
        assert_eq!(
            timed_out(&mut run, 30_000),
            json!({"timeoutType": "HEARTBEAT", "scheduledEventId": scheduled,
                   "startedEventId": started, "details": "40%"})
        );
    }

    #[test]
    fn activity_schedule_to_close_times_out() {
        let (mut run, scheduled) = run_with_activity(json!({"scheduleToCloseTimeout": "8",
            "heartbeatTimeout": "NONE"}));
        let batch =
            activity_task_started(&run.execution, scheduled, None, [5; 16], 4_000).expect("starts");
        let started = run.commit(batch, 4_000)[0].event_id;
        assert_eq!(next_due_ms(&run.execution), Some(11_000));
        assert_eq!(
            timed_out(&mut run, 11_000),
            json!({"timeoutType": "SCHEDULE_TO_CLOSE", "scheduledEventId": scheduled,
                   "startedEventId": started})
        );
    }

    #[test]
    fn a_decision_task_start_to_close_timeout_is_followed_by_a_new_task() {
        let mut run = Run::start_at(1_000);
        let started = run.take_decision_task(2_000);
        // Task start-to-close 30 s from 2 s; the execution's 3600 s is later.
        assert_eq!(next_due_ms(&run.execution), Some(32_000));
        let batch = due(&run.execution, 32_000).expect("due");
        let events = run.commit(batch, 32_000);
        assert_eq!(
            Run::types_of(&events),
            ["DecisionTaskTimedOut", "DecisionTaskScheduled"]
        );
        assert_eq!(
            events[0].to_json()["decisionTaskTimedOutEventAttributes"],
            json!({"timeoutType": "START_TO_CLOSE", "scheduledEventId": 2,
                   "startedEventId": started})
        );
        // The late answer of the timed-out task is a closed task.
        let decisions = [];
        let completion = DecisionTaskCompletion {
            started_event_id: started,
            decisions: &decisions,
            execution_context: None,
            task_list: None,
            task_list_schedule_to_start_timeout: None,
            new_run_id: "",
            child_run_ids: &[],
        };
        assert_eq!(
            decision_task_completed(&run.execution, &completion, &registry(), 33_000)
                .map_err(|e| e.fault),
            Err(Fault::UnknownResource)
        );
    }

    #[test]
    fn a_task_list_override_with_schedule_to_start_falls_back_on_timeout() {
        let mut run = Run::start_at(1_000);
        let started = run.take_decision_task(2_000);
        let override_list = TaskList {
            name: "special".into(),
        };
        let decisions = [];
        let completion = DecisionTaskCompletion {
            started_event_id: started,
            decisions: &decisions,
            execution_context: None,
            task_list: Some(&override_list),
            task_list_schedule_to_start_timeout: Some("5"),
            new_run_id: "",
            child_run_ids: &[],
        };
        let batch = decision_task_completed(&run.execution, &completion, &registry(), 3_000)
            .expect("completes");
        run.commit(batch, 3_000);
        let batch = signal(&run.execution, "s", None, 4_000).expect("signal");
        let events = run.commit(batch, 4_000);
        assert_eq!(
            events[1].to_json()["decisionTaskScheduledEventAttributes"],
            json!({"taskList": {"name": "special"}, "taskPriority": "2",
                   "startToCloseTimeout": "30", "scheduleToStartTimeout": "5"})
        );
        assert_eq!(next_due_ms(&run.execution), Some(9_000));
        let batch = due(&run.execution, 9_000).expect("due");
        let events = run.commit(batch, 9_000);
        assert_eq!(
            Run::types_of(&events),
            ["DecisionTaskTimedOut", "DecisionTaskScheduled"]
        );
        assert_eq!(
            events[0].to_json()["decisionTaskTimedOutEventAttributes"],
            json!({"timeoutType": "SCHEDULE_TO_START", "scheduledEventId": events[0].event_id - 1,
                   "startedEventId": 0})
        );
        assert_eq!(
            events[1].to_json()["decisionTaskScheduledEventAttributes"]["taskList"],
            json!({"name": "deciders"})
        );
    }

    #[test]
    fn the_execution_times_out_and_nothing_follows() {
        let (mut run, _) = run_with_activity(json!({"scheduleToStartTimeout": "NONE",
            "scheduleToCloseTimeout": "NONE"}));
        let batch = due(&run.execution, 3_601_000).expect("due");
        let events = run.commit(batch, 3_601_000);
        assert_eq!(Run::types_of(&events), ["WorkflowExecutionTimedOut"]);
        assert_eq!(
            events[0].to_json()["workflowExecutionTimedOutEventAttributes"],
            json!({"timeoutType": "START_TO_CLOSE", "childPolicy": "TERMINATE"})
        );
        assert_eq!(run.execution.close_status, Some(CloseStatus::TimedOut));
        assert_eq!(next_due_ms(&run.execution), None);
        assert!(due(&run.execution, 9_999_999).expect("nothing").is_empty());
    }

    #[test]
    fn cancel_requests_and_terminations() {
        let mut run = Run::start_at(1_000);
        let started = run.take_decision_task(2_000);
        run.decide(started, json!([]), 3_000);
        let batch = request_cancel(&run.execution, 4_000).expect("requests");
        let events = run.commit(batch, 4_000);
        assert_eq!(
            Run::types_of(&events),
            ["WorkflowExecutionCancelRequested", "DecisionTaskScheduled"]
        );
        assert_eq!(
            events[0].to_json()["workflowExecutionCancelRequestedEventAttributes"],
            json!({})
        );
        assert!(run.execution.cancel_requested);
        let batch = terminate(&run.execution, Some("why"), None, None, 5_000).expect("ends");
        let events = run.commit(batch, 5_000);
        assert_eq!(
            events[0].to_json()["workflowExecutionTerminatedEventAttributes"],
            json!({"reason": "why", "childPolicy": "TERMINATE", "cause": "OPERATOR_INITIATED"})
        );
        assert_eq!(run.execution.close_status, Some(CloseStatus::Terminated));
        assert_eq!(
            terminate(&run.execution, None, None, None, 6_000).map_err(|e| e.fault),
            Err(Fault::UnknownResource)
        );
        assert_eq!(
            request_cancel(&run.execution, 6_000).map_err(|e| e.fault),
            Err(Fault::UnknownResource)
        );
    }

    #[test]
    fn a_batch_past_the_event_limit_terminates_the_run() {
        let mut run = Run::start_at(1_000);
        let started = run.take_decision_task(2_000);
        run.decide(started, json!([]), 3_000);
        run.execution.next_event_id = limits::HISTORY_EVENTS_MAX;
        let batch = signal(&run.execution, "s", None, 4_000).expect("answers");
        let events = run.commit(batch, 4_000);
        assert_eq!(Run::types_of(&events), ["WorkflowExecutionTerminated"]);
        assert_eq!(
            events[0].to_json()["workflowExecutionTerminatedEventAttributes"]["cause"],
            json!("EVENT_LIMIT_EXCEEDED")
        );
    }

    /// A seeded walk of random operations: after every batch the history folds, at most one
    /// decision task is open, and no decision task is owed (the rule is applied in the same
    /// batch as the event that owes it).
    #[test]
    fn a_random_walk_keeps_the_decision_task_rule() {
        for seed in 1..=20u64 {
            let mut state = seed;
            let mut next = move |bound: u64| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                (state >> 33) % bound
            };
            let mut run = Run::start_at(1_000);
            let mut now_ms = 1_000;
            let mut counter = 0;
            for _ in 0..200 {
                if !run.execution.is_open() {
                    break;
                }
                now_ms += 1 + next(4_000);
                counter += 1;
                let execution = &run.execution;
                let batch = match next(7) {
                    0 => signal(execution, "s", None, now_ms).ok(),
                    1 => decision_task_started(execution, None, [0; 16], now_ms).ok(),
                    2 => {
                        let DecisionTaskState::Started(task) = &execution.decision_task else {
                            continue;
                        };
                        let choice = match next(5) {
                            0 => schedule("charge", &format!("a{counter}"), json!({})),
                            1 => {
                                json!({"decisionType": "StartTimer", "startTimerDecisionAttributes":
                                {"timerId": format!("t{counter}"), "startToFireTimeout": "3"}})
                            }
                            2 => schedule("nope", "x", json!({})),
                            3 => json!({"decisionType": "CompleteWorkflowExecution"}),
                            _ => json!({"decisionType": "RecordMarker",
                                        "recordMarkerDecisionAttributes": {"markerName": "m"}}),
                        };
                        let decisions = parse_decisions(&[choice]).expect("valid");
                        let completion = DecisionTaskCompletion {
                            started_event_id: task.started_event_id,
                            decisions: &decisions,
                            execution_context: None,
                            task_list: None,
                            task_list_schedule_to_start_timeout: None,
                            new_run_id: "next",
                            child_run_ids: &[],
                        };
                        decision_task_completed(execution, &completion, &registry(), now_ms).ok()
                    }
                    3 => execution
                        .activities
                        .values()
                        .find(|a| a.started.is_none())
                        .map(|a| a.scheduled_event_id)
                        .and_then(|id| {
                            activity_task_started(execution, id, None, [0; 16], now_ms).ok()
                        }),
                    4 => execution
                        .activities
                        .values()
                        .find_map(|a| {
                            a.started
                                .as_ref()
                                .map(|s| (a.scheduled_event_id, s.started_event_id))
                        })
                        .and_then(|(scheduled, started)| {
                            activity_task_completed(execution, scheduled, started, None, now_ms)
                                .ok()
                        }),
                    _ => due(execution, now_ms).ok(),
                };
                if let Some(batch) = batch {
                    run.commit(batch, now_ms);
                }
                assert!(
                    !run.execution.needs_decision_task(),
                    "seed {seed}: a decision task is owed after event {}",
                    run.execution.next_event_id - 1
                );
                let refolded = Execution::fold(key(), &run.history).expect("the history folds");
                assert_eq!(refolded.next_event_id, run.execution.next_event_id);
                assert_eq!(refolded.decision_task, run.execution.decision_task);
            }
        }
    }
}
