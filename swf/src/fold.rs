//! fold: the state of one SWF workflow run, folded from its history ([`Execution::fold`],
//! [`Execution::apply`]): status, configuration, open activities, open timers, open children,
//! the decision task, and what the decider has not seen yet.
//!
//! Decision task table (checked by [`Execution::apply`]):
//!
//! | state     | event                                  | next      |
//! |-----------|----------------------------------------|-----------|
//! | None      | DecisionTaskScheduled                  | Scheduled |
//! | Scheduled | DecisionTaskStarted (same scheduled id) | Started   |
//! | Scheduled | DecisionTaskTimedOut SCHEDULE_TO_START | None      |
//! | Started   | DecisionTaskCompleted (same ids)       | None      |
//! | Started   | DecisionTaskTimedOut START_TO_CLOSE    | None      |
//! | any       | an execution-closing event             | None      |
//!
//! Every other pairing is a [`FoldError`]. At most one decision task is open per run.
//!
//! Invariants: `next_event_id` is one past the last applied event; events are dense from 1 and
//! the first is `WorkflowExecutionStarted`; nothing follows a closing event. Heartbeats are not
//! events (SWF records none): [`Execution::record_heartbeat`] changes the in-memory state only.
//! Must not: decide what happens next (the transitions do), read a clock, or do I/O.

use std::collections::BTreeMap;

use crate::api::{
    parse_task_priority, timestamp_from_ms, ActivityType, ChildPolicy, CloseStatus,
    ExecutionStatus, TaskList, Timeout, WorkflowExecution, WorkflowExecutionConfiguration,
    WorkflowExecutionDetail, WorkflowExecutionInfo, WorkflowExecutionOpenCounts, WorkflowType,
};
use crate::events::{Attributes, DecisionTaskTimeoutType, Event};

/// The identity of a run: its domain, workflow id and run id (the events do not carry them).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunKey {
    /// The domain.
    pub domain: String,
    /// The workflow id.
    pub workflow_id: String,
    /// The run id.
    pub run_id: String,
}

/// Why a history does not fold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FoldError {
    /// No events.
    #[error("an SWF history must start with WorkflowExecutionStarted; it is empty")]
    Empty,
    /// The first event is not `WorkflowExecutionStarted`, or a second one came.
    #[error("event {event_id} is {event_type}; WorkflowExecutionStarted must be event 1 only")]
    Misplaced {
        /// The event.
        event_id: u64,
        /// Its type.
        event_type: &'static str,
    },
    /// Event ids are not dense.
    #[error("event id {found} where {expected} was next")]
    IdGap {
        /// The next id.
        expected: u64,
        /// The event's id.
        found: u64,
    },
    /// An event after the run closed.
    #[error("event {event_id} ({event_type}) follows the close of the run")]
    AfterClose {
        /// The event.
        event_id: u64,
        /// Its type.
        event_type: &'static str,
    },
    /// A decision task event that the decision task table does not allow.
    #[error("event {event_id} ({event_type}) does not fit the decision task state {state}")]
    DecisionTask {
        /// The event.
        event_id: u64,
        /// Its type.
        event_type: &'static str,
        /// The state it met.
        state: &'static str,
    },
    /// An activity event naming no open activity, or the wrong started event.
    #[error("event {event_id} ({event_type}) names no open activity task of scheduled event {scheduled_event_id} (started {started_event_id})")]
    UnknownActivity {
        /// The event.
        event_id: u64,
        /// Its type.
        event_type: &'static str,
        /// The scheduled event it names.
        scheduled_event_id: u64,
        /// The started event it names (0: none).
        started_event_id: u64,
    },
    /// An activity scheduled with an id already open.
    #[error("event {event_id} schedules activity id {activity_id:?}, which is open")]
    ActivityIdInUse {
        /// The event.
        event_id: u64,
        /// The activity id.
        activity_id: String,
    },
    /// An activity cancel request naming no open activity.
    #[error("event {event_id} asks to cancel activity id {activity_id:?}, which is not open")]
    ActivityIdUnknown {
        /// The event.
        event_id: u64,
        /// The activity id.
        activity_id: String,
    },
    /// A timer started with an id already open.
    #[error("event {event_id} starts timer {timer_id:?}, which is open")]
    TimerIdInUse {
        /// The event.
        event_id: u64,
        /// The timer id.
        timer_id: String,
    },
    /// A timer event naming no open timer.
    #[error("event {event_id} ({event_type}) names timer {timer_id:?} started by event {started_event_id}, which is not open")]
    UnknownTimer {
        /// The event.
        event_id: u64,
        /// Its type.
        event_type: &'static str,
        /// The timer id.
        timer_id: String,
        /// The started event it names.
        started_event_id: u64,
    },
    /// A child event naming no open child (by its `StartChildWorkflowExecutionInitiated`).
    #[error("event {event_id} ({event_type}) names no open child initiated by event {initiated_event_id}")]
    UnknownChild {
        /// The event.
        event_id: u64,
        /// Its type.
        event_type: &'static str,
        /// The initiated event it names.
        initiated_event_id: u64,
    },
    /// A timeout or priority string that does not parse.
    #[error("event {event_id} has {field} = {value:?}, which is not valid")]
    BadValue {
        /// The event.
        event_id: u64,
        /// The field.
        field: &'static str,
        /// Its value.
        value: String,
    },
}

/// A decision task that waits in its list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduledDecisionTask {
    /// Its `DecisionTaskScheduled` event.
    pub scheduled_event_id: u64,
    /// When it was scheduled, epoch ms.
    pub scheduled_ms: u64,
    /// Its list.
    pub task_list: TaskList,
    /// Its priority (higher first).
    pub priority: i32,
    /// Its start-to-close timeout.
    pub start_to_close: Timeout,
    /// Its schedule-to-start timeout (`None`: unlimited).
    pub schedule_to_start: Option<Timeout>,
}

/// A decision task a decider holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartedDecisionTask {
    /// The task as scheduled.
    pub scheduled: ScheduledDecisionTask,
    /// Its `DecisionTaskStarted` event.
    pub started_event_id: u64,
    /// When it started, epoch ms.
    pub started_ms: u64,
    /// The random part of its token.
    pub token_nonce: [u8; 16],
}

/// The decision task of a run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum DecisionTaskState {
    /// None open.
    #[default]
    None,
    /// One waits in its list.
    Scheduled(ScheduledDecisionTask),
    /// A decider holds one.
    Started(StartedDecisionTask),
}

impl DecisionTaskState {
    fn name(&self) -> &'static str {
        match self {
            DecisionTaskState::None => "None",
            DecisionTaskState::Scheduled(_) => "Scheduled",
            DecisionTaskState::Started(_) => "Started",
        }
    }
}

/// A worker's hold on an activity task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartedActivity {
    /// Its `ActivityTaskStarted` event.
    pub started_event_id: u64,
    /// When it started, epoch ms.
    pub started_ms: u64,
    /// The random part of its token.
    pub token_nonce: [u8; 16],
    /// The worker's identity.
    pub identity: Option<String>,
}

/// An open activity task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenActivity {
    /// The decider's id.
    pub activity_id: String,
    /// The type.
    pub activity_type: ActivityType,
    /// Its `ActivityTaskScheduled` event.
    pub scheduled_event_id: u64,
    /// When it was scheduled, epoch ms.
    pub scheduled_ms: u64,
    /// Its list.
    pub task_list: TaskList,
    /// Its priority (higher first).
    pub priority: i32,
    /// Its input.
    pub input: Option<String>,
    /// Schedule-to-start timeout.
    pub schedule_to_start: Timeout,
    /// Schedule-to-close timeout.
    pub schedule_to_close: Timeout,
    /// Start-to-close timeout.
    pub start_to_close: Timeout,
    /// Heartbeat timeout.
    pub heartbeat: Timeout,
    /// The worker's hold, once started.
    pub started: Option<StartedActivity>,
    /// The latest `ActivityTaskCancelRequested` event, when a cancel was requested.
    pub cancel_requested_event_id: Option<u64>,
    /// The last heartbeat, epoch ms (in memory only).
    pub last_heartbeat_ms: Option<u64>,
    /// The last heartbeat's details (in memory only).
    pub last_heartbeat_details: Option<String>,
}

/// An open timer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenTimer {
    /// Its `TimerStarted` event.
    pub started_event_id: u64,
    /// When it fires, epoch ms.
    pub due_ms: u64,
}

/// A child run a run started (or is starting) and that has not closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenChild {
    /// The child's workflow id.
    pub workflow_id: String,
    /// The child's type.
    pub workflow_type: WorkflowType,
    /// The child's first run, once `ChildWorkflowExecutionStarted` names it (a child that
    /// continues as new stays this run's child under the same workflow id).
    pub run_id: Option<String>,
    /// The `ChildWorkflowExecutionStarted` event, once started.
    pub started_event_id: Option<u64>,
}

/// The configuration of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutionConfig {
    /// The decision task list.
    pub task_list: TaskList,
    /// The decision task priority as given (`None`: 0).
    pub task_priority: Option<String>,
    /// The decision task start-to-close timeout.
    pub task_start_to_close: Timeout,
    /// The execution start-to-close timeout.
    pub execution_start_to_close: Timeout,
    /// The child policy.
    pub child_policy: ChildPolicy,
    /// The Lambda role.
    pub lambda_role: Option<String>,
}

/// A decider's override of the decision task list (RespondDecisionTaskCompleted `taskList`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskListOverride {
    /// The list of the next decision tasks.
    pub task_list: TaskList,
    /// How long a task may wait there; on that timeout the override ends. `None`: permanent.
    pub schedule_to_start: Option<Timeout>,
}

/// The folded state of one SWF workflow run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Execution {
    /// Domain, workflow id and run id.
    pub key: RunKey,
    /// The type.
    pub workflow_type: WorkflowType,
    /// Open or closed.
    pub status: ExecutionStatus,
    /// How it closed.
    pub close_status: Option<CloseStatus>,
    /// When it started, epoch ms.
    pub start_ms: u64,
    /// When it closed, epoch ms.
    pub close_ms: Option<u64>,
    /// The configuration.
    pub config: ExecutionConfig,
    /// The input.
    pub input: Option<String>,
    /// The tags.
    pub tag_list: Vec<String>,
    /// The parent, for a child run.
    pub parent: Option<WorkflowExecution>,
    /// The parent's `StartChildWorkflowExecutionInitiated` event, for a child run.
    pub parent_initiated_event_id: Option<u64>,
    /// The run this one continues.
    pub continued_execution_run_id: Option<String>,
    /// Whether a cancel was requested.
    pub cancel_requested: bool,
    /// Open activities by activity id.
    pub activities: BTreeMap<String, OpenActivity>,
    /// Open timers by timer id.
    pub timers: BTreeMap<String, OpenTimer>,
    /// Children not closed, by their `StartChildWorkflowExecutionInitiated` event. A close of
    /// this run keeps them (its child policy applies to them).
    pub open_children: BTreeMap<u64, OpenChild>,
    /// The decision task.
    pub decision_task: DecisionTaskState,
    /// The decider's task list override, when one is in force.
    pub task_list_override: Option<TaskListOverride>,
    /// Whether events a decider must see arrived since the last decision task started (or
    /// since the start): a decision task is due, and a closing decision of the started task
    /// fails with UNHANDLED_DECISION.
    pub unseen_events: bool,
    /// The started event of the last completed decision task (0: none).
    pub previous_started_event_id: u64,
    /// The latest `executionContext` a decider gave.
    pub latest_execution_context: Option<String>,
    /// When the last activity task was scheduled, epoch ms.
    pub latest_activity_task_scheduled_ms: Option<u64>,
    /// The id of the next event.
    pub next_event_id: u64,
}

fn timeout(event_id: u64, field: &'static str, value: Option<&str>) -> Result<Timeout, FoldError> {
    match value {
        None => Ok(Timeout::Unlimited),
        Some(v) => Timeout::parse(field, v).map_err(|_| FoldError::BadValue {
            event_id,
            field,
            value: v.to_string(),
        }),
    }
}

fn priority(event_id: u64, value: Option<&str>) -> Result<i32, FoldError> {
    match value {
        None => Ok(0),
        Some(v) => parse_task_priority("taskPriority", v).map_err(|_| FoldError::BadValue {
            event_id,
            field: "taskPriority",
            value: v.to_string(),
        }),
    }
}

impl Execution {
    /// Folds a whole history.
    pub fn fold(key: RunKey, events: &[Event]) -> Result<Execution, FoldError> {
        let (first, rest) = events.split_first().ok_or(FoldError::Empty)?;
        let mut execution = Execution::started(key, first)?;
        for event in rest {
            execution.apply(event)?;
        }
        Ok(execution)
    }

    /// The state right after a run's first event.
    pub fn started(key: RunKey, event: &Event) -> Result<Execution, FoldError> {
        let Attributes::WorkflowExecutionStarted(started) = &event.attributes else {
            return Err(FoldError::Misplaced {
                event_id: event.event_id,
                event_type: event.event_type(),
            });
        };
        if event.event_id != 1 {
            return Err(FoldError::IdGap {
                expected: 1,
                found: event.event_id,
            });
        }
        let id = event.event_id;
        let config = ExecutionConfig {
            task_list: started.task_list.clone(),
            task_priority: started.task_priority.clone(),
            task_start_to_close: timeout(
                id,
                "taskStartToCloseTimeout",
                started.task_start_to_close_timeout.as_deref(),
            )?,
            execution_start_to_close: timeout(
                id,
                "executionStartToCloseTimeout",
                started.execution_start_to_close_timeout.as_deref(),
            )?,
            child_policy: started.child_policy,
            lambda_role: started.lambda_role.clone(),
        };
        priority(id, started.task_priority.as_deref())?;
        Ok(Execution {
            key,
            workflow_type: started.workflow_type.clone(),
            status: ExecutionStatus::Open,
            close_status: None,
            start_ms: event.timestamp_ms,
            close_ms: None,
            config,
            input: started.input.clone(),
            tag_list: started.tag_list.clone().unwrap_or_default(),
            parent: started.parent_workflow_execution.clone(),
            parent_initiated_event_id: started.parent_initiated_event_id,
            continued_execution_run_id: started.continued_execution_run_id.clone(),
            cancel_requested: false,
            activities: BTreeMap::new(),
            timers: BTreeMap::new(),
            open_children: BTreeMap::new(),
            decision_task: DecisionTaskState::None,
            task_list_override: None,
            // The first decision task is due from the start.
            unseen_events: true,
            previous_started_event_id: 0,
            latest_execution_context: None,
            latest_activity_task_scheduled_ms: None,
            next_event_id: 2,
        })
    }

    /// Whether the run is open.
    pub fn is_open(&self) -> bool {
        self.status == ExecutionStatus::Open
    }

    /// Whether a decision task should be scheduled now: the run is open, none is open, and
    /// there are events the decider has not seen.
    pub fn needs_decision_task(&self) -> bool {
        self.is_open() && self.decision_task == DecisionTaskState::None && self.unseen_events
    }

    /// The decision task priority of the run.
    pub fn decision_task_priority(&self) -> i32 {
        self.config
            .task_priority
            .as_deref()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0)
    }

    /// The run as a workflow execution (workflow id and run id).
    pub fn workflow_execution(&self) -> WorkflowExecution {
        WorkflowExecution {
            workflow_id: self.key.workflow_id.clone(),
            run_id: self.key.run_id.clone(),
        }
    }

    /// The run's `WorkflowExecutionInfo` (List*/DescribeWorkflowExecution).
    pub fn info(&self) -> WorkflowExecutionInfo {
        WorkflowExecutionInfo {
            execution: self.workflow_execution(),
            workflow_type: self.workflow_type.clone(),
            start_timestamp: timestamp_from_ms(self.start_ms),
            close_timestamp: self.close_ms.map(timestamp_from_ms),
            execution_status: self.status,
            close_status: self.close_status,
            parent: self.parent.clone(),
            tag_list: (!self.tag_list.is_empty()).then(|| self.tag_list.clone()),
            cancel_requested: Some(self.cancel_requested),
        }
    }

    /// The run's open task counts.
    pub fn open_counts(&self) -> WorkflowExecutionOpenCounts {
        WorkflowExecutionOpenCounts {
            open_activity_tasks: self.activities.len() as u64,
            open_decision_tasks: u64::from(self.decision_task != DecisionTaskState::None),
            open_timers: self.timers.len() as u64,
            // A closed run's children are no longer its open children (its policy applied).
            open_child_workflow_executions: if self.is_open() {
                self.open_children.len() as u64
            } else {
                0
            },
            open_lambda_functions: Some(0),
        }
    }

    /// DescribeWorkflowExecution's answer for the run.
    pub fn detail(&self) -> WorkflowExecutionDetail {
        WorkflowExecutionDetail {
            execution_info: self.info(),
            execution_configuration: WorkflowExecutionConfiguration {
                task_start_to_close_timeout: self.config.task_start_to_close.to_wire(),
                execution_start_to_close_timeout: self.config.execution_start_to_close.to_wire(),
                task_list: self.config.task_list.clone(),
                task_priority: self.config.task_priority.clone(),
                child_policy: self.config.child_policy,
                lambda_role: self.config.lambda_role.clone(),
            },
            open_counts: self.open_counts(),
            latest_activity_task_timestamp: self
                .latest_activity_task_scheduled_ms
                .map(timestamp_from_ms),
            latest_execution_context: self.latest_execution_context.clone(),
        }
    }

    /// The open activity of a scheduled event.
    pub fn activity_by_scheduled_event(&self, scheduled_event_id: u64) -> Option<&OpenActivity> {
        self.activities
            .values()
            .find(|a| a.scheduled_event_id == scheduled_event_id)
    }

    fn activity_id_of(&self, scheduled_event_id: u64) -> Option<String> {
        self.activity_by_scheduled_event(scheduled_event_id)
            .map(|a| a.activity_id.clone())
    }

    /// Records a heartbeat of the started activity task of `scheduled_event_id` (and
    /// `started_event_id`): resets its heartbeat clock and keeps `details` for a HEARTBEAT
    /// timeout. Answers whether a cancel was requested. `None` when no such started task is
    /// open.
    pub fn record_heartbeat(
        &mut self,
        scheduled_event_id: u64,
        started_event_id: u64,
        now_ms: u64,
        details: Option<String>,
    ) -> Option<bool> {
        let activity = self
            .activities
            .values_mut()
            .find(|a| a.scheduled_event_id == scheduled_event_id)?;
        let started = activity.started.as_ref()?;
        if started.started_event_id != started_event_id {
            return None;
        }
        activity.last_heartbeat_ms = Some(now_ms);
        activity.last_heartbeat_details = details;
        Some(activity.cancel_requested_event_id.is_some())
    }

    /// Applies the next event.
    pub fn apply(&mut self, event: &Event) -> Result<(), FoldError> {
        let id = event.event_id;
        let event_type = event.event_type();
        if id != self.next_event_id {
            return Err(FoldError::IdGap {
                expected: self.next_event_id,
                found: id,
            });
        }
        if !self.is_open() {
            return Err(FoldError::AfterClose {
                event_id: id,
                event_type,
            });
        }
        let decision_task_error = |state: &DecisionTaskState| FoldError::DecisionTask {
            event_id: id,
            event_type,
            state: state.name(),
        };
        let unknown_activity =
            |scheduled_event_id: u64, started_event_id: u64| FoldError::UnknownActivity {
                event_id: id,
                event_type,
                scheduled_event_id,
                started_event_id,
            };
        match &event.attributes {
            Attributes::WorkflowExecutionStarted(_) => {
                return Err(FoldError::Misplaced {
                    event_id: id,
                    event_type,
                })
            }
            Attributes::WorkflowExecutionCompleted(_) => self.close(CloseStatus::Completed, event),
            Attributes::WorkflowExecutionFailed(_) => self.close(CloseStatus::Failed, event),
            Attributes::WorkflowExecutionTimedOut(_) => self.close(CloseStatus::TimedOut, event),
            Attributes::WorkflowExecutionCanceled(_) => self.close(CloseStatus::Canceled, event),
            Attributes::WorkflowExecutionContinuedAsNew(_) => {
                self.close(CloseStatus::ContinuedAsNew, event)
            }
            Attributes::WorkflowExecutionTerminated(_) => {
                self.close(CloseStatus::Terminated, event)
            }
            Attributes::WorkflowExecutionCancelRequested(_) => self.cancel_requested = true,
            Attributes::DecisionTaskScheduled(a) => {
                if self.decision_task != DecisionTaskState::None {
                    return Err(decision_task_error(&self.decision_task));
                }
                let schedule_to_start = a
                    .schedule_to_start_timeout
                    .as_deref()
                    .map(|v| timeout(id, "scheduleToStartTimeout", Some(v)))
                    .transpose()?;
                self.decision_task = DecisionTaskState::Scheduled(ScheduledDecisionTask {
                    scheduled_event_id: id,
                    scheduled_ms: event.timestamp_ms,
                    task_list: a.task_list.clone(),
                    priority: priority(id, a.task_priority.as_deref())?,
                    start_to_close: timeout(
                        id,
                        "startToCloseTimeout",
                        a.start_to_close_timeout.as_deref(),
                    )?,
                    schedule_to_start,
                });
            }
            Attributes::DecisionTaskStarted(a) => {
                let DecisionTaskState::Scheduled(scheduled) = &self.decision_task else {
                    return Err(decision_task_error(&self.decision_task));
                };
                if scheduled.scheduled_event_id != a.scheduled_event_id {
                    return Err(decision_task_error(&self.decision_task));
                }
                self.decision_task = DecisionTaskState::Started(StartedDecisionTask {
                    scheduled: scheduled.clone(),
                    started_event_id: id,
                    started_ms: event.timestamp_ms,
                    token_nonce: a.token_nonce,
                });
                self.unseen_events = false;
            }
            Attributes::DecisionTaskCompleted(a) => {
                let DecisionTaskState::Started(started) = &self.decision_task else {
                    return Err(decision_task_error(&self.decision_task));
                };
                if started.started_event_id != a.started_event_id
                    || started.scheduled.scheduled_event_id != a.scheduled_event_id
                {
                    return Err(decision_task_error(&self.decision_task));
                }
                self.previous_started_event_id = started.started_event_id;
                self.decision_task = DecisionTaskState::None;
                if a.execution_context.is_some() {
                    self.latest_execution_context = a.execution_context.clone();
                }
                if let Some(task_list) = &a.task_list {
                    let schedule_to_start = a
                        .task_list_schedule_to_start_timeout
                        .as_deref()
                        .map(|v| timeout(id, "taskListScheduleToStartTimeout", Some(v)))
                        .transpose()?;
                    self.task_list_override = Some(TaskListOverride {
                        task_list: task_list.clone(),
                        schedule_to_start,
                    });
                }
            }
            Attributes::DecisionTaskTimedOut(a) => {
                match (&self.decision_task, a.timeout_type) {
                    (
                        DecisionTaskState::Started(started),
                        DecisionTaskTimeoutType::StartToClose,
                    ) if started.started_event_id == a.started_event_id
                        && started.scheduled.scheduled_event_id == a.scheduled_event_id => {}
                    (
                        DecisionTaskState::Scheduled(scheduled),
                        DecisionTaskTimeoutType::ScheduleToStart,
                    ) if scheduled.scheduled_event_id == a.scheduled_event_id => {
                        // The override's wait ran out: back to the run's own list.
                        self.task_list_override = None;
                    }
                    (state, _) => return Err(decision_task_error(state)),
                }
                self.decision_task = DecisionTaskState::None;
            }
            Attributes::ActivityTaskScheduled(a) => {
                if self.activities.contains_key(&a.activity_id) {
                    return Err(FoldError::ActivityIdInUse {
                        event_id: id,
                        activity_id: a.activity_id.clone(),
                    });
                }
                let activity = OpenActivity {
                    activity_id: a.activity_id.clone(),
                    activity_type: a.activity_type.clone(),
                    scheduled_event_id: id,
                    scheduled_ms: event.timestamp_ms,
                    task_list: a.task_list.clone(),
                    priority: priority(id, a.task_priority.as_deref())?,
                    input: a.input.clone(),
                    schedule_to_start: timeout(
                        id,
                        "scheduleToStartTimeout",
                        a.schedule_to_start_timeout.as_deref(),
                    )?,
                    schedule_to_close: timeout(
                        id,
                        "scheduleToCloseTimeout",
                        a.schedule_to_close_timeout.as_deref(),
                    )?,
                    start_to_close: timeout(
                        id,
                        "startToCloseTimeout",
                        a.start_to_close_timeout.as_deref(),
                    )?,
                    heartbeat: timeout(id, "heartbeatTimeout", a.heartbeat_timeout.as_deref())?,
                    started: None,
                    cancel_requested_event_id: None,
                    last_heartbeat_ms: None,
                    last_heartbeat_details: None,
                };
                self.activities.insert(a.activity_id.clone(), activity);
                self.latest_activity_task_scheduled_ms = Some(event.timestamp_ms);
            }
            Attributes::ActivityTaskStarted(a) => {
                let activity_id = self
                    .activity_id_of(a.scheduled_event_id)
                    .ok_or_else(|| unknown_activity(a.scheduled_event_id, 0))?;
                let activity = self
                    .activities
                    .get_mut(&activity_id)
                    .expect("activity_id_of found it");
                if activity.started.is_some() {
                    return Err(unknown_activity(a.scheduled_event_id, 0));
                }
                activity.started = Some(StartedActivity {
                    started_event_id: id,
                    started_ms: event.timestamp_ms,
                    token_nonce: a.token_nonce,
                    identity: a.identity.clone(),
                });
            }
            Attributes::ActivityTaskCompleted(a) => {
                self.close_activity(a.scheduled_event_id, Some(a.started_event_id))
                    .ok_or_else(|| unknown_activity(a.scheduled_event_id, a.started_event_id))?;
            }
            Attributes::ActivityTaskFailed(a) => {
                self.close_activity(a.scheduled_event_id, Some(a.started_event_id))
                    .ok_or_else(|| unknown_activity(a.scheduled_event_id, a.started_event_id))?;
            }
            Attributes::ActivityTaskTimedOut(a) => {
                self.close_activity(a.scheduled_event_id, started_or_none(a.started_event_id))
                    .ok_or_else(|| unknown_activity(a.scheduled_event_id, a.started_event_id))?;
            }
            Attributes::ActivityTaskCanceled(a) => {
                self.close_activity(a.scheduled_event_id, started_or_none(a.started_event_id))
                    .ok_or_else(|| unknown_activity(a.scheduled_event_id, a.started_event_id))?;
            }
            Attributes::ActivityTaskCancelRequested(a) => {
                let Some(activity) = self.activities.get_mut(&a.activity_id) else {
                    return Err(FoldError::ActivityIdUnknown {
                        event_id: id,
                        activity_id: a.activity_id.clone(),
                    });
                };
                activity.cancel_requested_event_id = Some(id);
            }
            Attributes::TimerStarted(a) => {
                if self.timers.contains_key(&a.timer_id) {
                    return Err(FoldError::TimerIdInUse {
                        event_id: id,
                        timer_id: a.timer_id.clone(),
                    });
                }
                let fire = match Timeout::parse("startToFireTimeout", &a.start_to_fire_timeout) {
                    Ok(Timeout::Seconds(seconds)) => seconds,
                    _ => {
                        return Err(FoldError::BadValue {
                            event_id: id,
                            field: "startToFireTimeout",
                            value: a.start_to_fire_timeout.clone(),
                        })
                    }
                };
                self.timers.insert(
                    a.timer_id.clone(),
                    OpenTimer {
                        started_event_id: id,
                        due_ms: event.timestamp_ms.saturating_add(fire.saturating_mul(1000)),
                    },
                );
            }
            Attributes::TimerFired(a) => {
                self.close_timer(id, event_type, &a.timer_id, a.started_event_id)?
            }
            Attributes::TimerCanceled(a) => {
                self.close_timer(id, event_type, &a.timer_id, a.started_event_id)?
            }
            Attributes::StartChildWorkflowExecutionInitiated(a) => {
                self.open_children.insert(
                    id,
                    OpenChild {
                        workflow_id: a.workflow_id.clone(),
                        workflow_type: a.workflow_type.clone(),
                        run_id: None,
                        started_event_id: None,
                    },
                );
            }
            // Initiated event 0: refused before it was initiated (nothing to close).
            Attributes::StartChildWorkflowExecutionFailed(a) if a.initiated_event_id != 0 => {
                self.close_child(id, event_type, a.initiated_event_id, false)?
            }
            Attributes::ChildWorkflowExecutionStarted(a) => {
                let child = self.open_children.get_mut(&a.initiated_event_id).ok_or(
                    FoldError::UnknownChild {
                        event_id: id,
                        event_type,
                        initiated_event_id: a.initiated_event_id,
                    },
                )?;
                if child.started_event_id.is_some() {
                    return Err(FoldError::UnknownChild {
                        event_id: id,
                        event_type,
                        initiated_event_id: a.initiated_event_id,
                    });
                }
                child.run_id = Some(a.workflow_execution.run_id.clone());
                child.started_event_id = Some(id);
            }
            Attributes::ChildWorkflowExecutionCompleted(a) => {
                self.close_child(id, event_type, a.initiated_event_id, true)?
            }
            Attributes::ChildWorkflowExecutionFailed(a) => {
                self.close_child(id, event_type, a.initiated_event_id, true)?
            }
            Attributes::ChildWorkflowExecutionTimedOut(a) => {
                self.close_child(id, event_type, a.initiated_event_id, true)?
            }
            Attributes::ChildWorkflowExecutionCanceled(a) => {
                self.close_child(id, event_type, a.initiated_event_id, true)?
            }
            Attributes::ChildWorkflowExecutionTerminated(a) => {
                self.close_child(id, event_type, a.initiated_event_id, true)?
            }
            // The rest change nothing but (maybe) what the decider has not seen.
            _ => {}
        }
        if event.attributes.wakes_decider() {
            self.unseen_events = true;
        }
        self.next_event_id += 1;
        Ok(())
    }

    fn close(&mut self, status: CloseStatus, event: &Event) {
        self.status = ExecutionStatus::Closed;
        self.close_status = Some(status);
        self.close_ms = Some(event.timestamp_ms);
        // A closed run has no open tasks or timers: their tokens and deadlines are void.
        self.decision_task = DecisionTaskState::None;
        self.activities.clear();
        self.timers.clear();
        self.unseen_events = false;
    }

    /// Removes the activity of `scheduled_event_id` (whose started event must be `started`:
    /// `Some(id)` started by that event, `None` not started). `None` when no such activity.
    fn close_activity(
        &mut self,
        scheduled_event_id: u64,
        started: Option<u64>,
    ) -> Option<OpenActivity> {
        let activity_id = self.activity_id_of(scheduled_event_id)?;
        let activity = &self.activities[&activity_id];
        let actual = activity.started.as_ref().map(|s| s.started_event_id);
        if actual != started {
            return None;
        }
        self.activities.remove(&activity_id)
    }

    /// Removes the open child of `initiated_event_id`, which must be started (`started`) or
    /// not yet.
    fn close_child(
        &mut self,
        event_id: u64,
        event_type: &'static str,
        initiated_event_id: u64,
        started: bool,
    ) -> Result<(), FoldError> {
        match self.open_children.get(&initiated_event_id) {
            Some(child) if child.started_event_id.is_some() == started => {
                self.open_children.remove(&initiated_event_id);
                Ok(())
            }
            _ => Err(FoldError::UnknownChild {
                event_id,
                event_type,
                initiated_event_id,
            }),
        }
    }

    fn close_timer(
        &mut self,
        event_id: u64,
        event_type: &'static str,
        timer_id: &str,
        started_event_id: u64,
    ) -> Result<(), FoldError> {
        match self.timers.get(timer_id) {
            Some(timer) if timer.started_event_id == started_event_id => {
                self.timers.remove(timer_id);
                Ok(())
            }
            _ => Err(FoldError::UnknownTimer {
                event_id,
                event_type,
                timer_id: timer_id.to_string(),
                started_event_id,
            }),
        }
    }
}

fn started_or_none(started_event_id: u64) -> Option<u64> {
    (started_event_id != 0).then_some(started_event_id)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::events::*;

    pub(crate) fn key() -> RunKey {
        RunKey {
            domain: "d".into(),
            workflow_id: "w".into(),
            run_id: "r".into(),
        }
    }

    pub(crate) fn started_event() -> Event {
        Event {
            event_id: 1,
            timestamp_ms: 1_000,
            attributes: Attributes::WorkflowExecutionStarted(WorkflowExecutionStarted {
                input: Some("in".into()),
                execution_start_to_close_timeout: Some("3600".into()),
                task_start_to_close_timeout: Some("30".into()),
                child_policy: ChildPolicy::Terminate,
                task_list: TaskList {
                    name: "deciders".into(),
                },
                task_priority: Some("3".into()),
                workflow_type: WorkflowType {
                    name: "t".into(),
                    version: "1".into(),
                },
                tag_list: Some(vec!["a".into()]),
                continued_execution_run_id: None,
                parent_workflow_execution: None,
                parent_initiated_event_id: None,
                lambda_role: None,
            }),
        }
    }

    /// Builds a history one event at a time, ids dense, time advancing 1 s per event.
    pub(crate) struct History {
        pub(crate) events: Vec<Event>,
    }

    impl History {
        pub(crate) fn new() -> History {
            History {
                events: vec![started_event()],
            }
        }

        pub(crate) fn push(&mut self, attributes: Attributes) -> u64 {
            let id = self.events.len() as u64 + 1;
            self.events.push(Event {
                event_id: id,
                timestamp_ms: 1_000 * id,
                attributes,
            });
            id
        }

        pub(crate) fn fold(&self) -> Result<Execution, FoldError> {
            Execution::fold(key(), &self.events)
        }
    }

    pub(crate) fn scheduled_decision() -> Attributes {
        Attributes::DecisionTaskScheduled(DecisionTaskScheduled {
            task_list: TaskList {
                name: "deciders".into(),
            },
            task_priority: Some("3".into()),
            start_to_close_timeout: Some("30".into()),
            schedule_to_start_timeout: None,
        })
    }

    pub(crate) fn started_decision(scheduled_event_id: u64) -> Attributes {
        Attributes::DecisionTaskStarted(DecisionTaskStarted {
            identity: Some("decider".into()),
            scheduled_event_id,
            token_nonce: [7; 16],
        })
    }

    pub(crate) fn completed_decision(scheduled_event_id: u64, started_event_id: u64) -> Attributes {
        Attributes::DecisionTaskCompleted(DecisionTaskCompleted {
            execution_context: Some("ctx".into()),
            scheduled_event_id,
            started_event_id,
            task_list: None,
            task_list_schedule_to_start_timeout: None,
        })
    }

    pub(crate) fn scheduled_activity(activity_id: &str, completed_id: u64) -> Attributes {
        Attributes::ActivityTaskScheduled(ActivityTaskScheduled {
            activity_type: ActivityType {
                name: "a".into(),
                version: "1".into(),
            },
            activity_id: activity_id.into(),
            input: None,
            control: None,
            schedule_to_start_timeout: Some("10".into()),
            schedule_to_close_timeout: Some("100".into()),
            start_to_close_timeout: Some("50".into()),
            task_list: TaskList {
                name: "workers".into(),
            },
            task_priority: None,
            decision_task_completed_event_id: completed_id,
            heartbeat_timeout: Some("NONE".into()),
        })
    }

    #[test]
    fn a_start_folds_its_configuration() {
        let execution = History::new().fold().expect("folds");
        assert_eq!(execution.key, key());
        assert!(execution.is_open());
        assert_eq!(execution.config.task_start_to_close, Timeout::Seconds(30));
        assert_eq!(
            execution.config.execution_start_to_close,
            Timeout::Seconds(3600)
        );
        assert_eq!(execution.decision_task_priority(), 3);
        assert_eq!(execution.tag_list, ["a"]);
        assert_eq!(execution.next_event_id, 2);
        assert!(execution.needs_decision_task());
    }

    #[test]
    fn describe_shows_configuration_counts_and_latest_values() {
        let mut history = History::new();
        let s = history.push(scheduled_decision());
        let st = history.push(started_decision(s));
        let done = history.push(completed_decision(s, st));
        history.push(scheduled_activity("a1", done));
        let detail = history.fold().expect("folds").detail();
        assert_eq!(
            serde_json::to_value(&detail).expect("serializes"),
            serde_json::json!({
                "executionInfo": {
                    "execution": {"workflowId": "w", "runId": "r"},
                    "workflowType": {"name": "t", "version": "1"},
                    "startTimestamp": 1.0, "executionStatus": "OPEN",
                    "tagList": ["a"], "cancelRequested": false
                },
                "executionConfiguration": {
                    "taskStartToCloseTimeout": "30", "executionStartToCloseTimeout": "3600",
                    "taskList": {"name": "deciders"}, "taskPriority": "3",
                    "childPolicy": "TERMINATE"
                },
                "openCounts": {"openActivityTasks": 1, "openDecisionTasks": 0, "openTimers": 0,
                               "openChildWorkflowExecutions": 0, "openLambdaFunctions": 0},
                "latestActivityTaskTimestamp": 5.0,
                "latestExecutionContext": "ctx"
            })
        );
    }

    #[test]
    fn histories_must_start_right_and_stay_dense() {
        assert_eq!(Execution::fold(key(), &[]), Err(FoldError::Empty));
        let mut history = History::new();
        history.push(scheduled_decision());
        let mut gap = history.events.clone();
        gap[1].event_id = 3;
        assert_eq!(
            Execution::fold(key(), &gap),
            Err(FoldError::IdGap {
                expected: 2,
                found: 3
            })
        );
        let first_not_started = [history.events[1].clone()];
        assert!(matches!(
            Execution::fold(key(), &first_not_started),
            Err(FoldError::Misplaced { .. })
        ));
        history.push(started_event().attributes);
        assert!(matches!(
            history.fold(),
            Err(FoldError::Misplaced { event_id: 3, .. })
        ));
    }

    #[test]
    fn the_decision_task_table_is_enforced() {
        let mut history = History::new();
        let scheduled = history.push(scheduled_decision());
        let execution = history.fold().expect("scheduled");
        assert!(matches!(
            execution.decision_task,
            DecisionTaskState::Scheduled(_)
        ));
        assert!(!execution.needs_decision_task());
        // A second schedule while one is open.
        let mut twice = History {
            events: history.events.clone(),
        };
        twice.push(scheduled_decision());
        assert!(matches!(
            twice.fold(),
            Err(FoldError::DecisionTask {
                state: "Scheduled",
                ..
            })
        ));
        // Started must name the scheduled event.
        let mut wrong = History {
            events: history.events.clone(),
        };
        wrong.push(started_decision(scheduled + 5));
        assert!(matches!(wrong.fold(), Err(FoldError::DecisionTask { .. })));
        let started = history.push(started_decision(scheduled));
        let execution = history.fold().expect("started");
        let DecisionTaskState::Started(task) = &execution.decision_task else {
            panic!("started");
        };
        assert_eq!(task.started_event_id, started);
        assert_eq!(task.token_nonce, [7; 16]);
        assert!(!execution.unseen_events);
        // Completed with the wrong started id.
        let mut bad = History {
            events: history.events.clone(),
        };
        bad.push(completed_decision(scheduled, started + 1));
        assert!(matches!(bad.fold(), Err(FoldError::DecisionTask { .. })));
        // SCHEDULE_TO_START does not apply to a started task.
        let mut bad = History {
            events: history.events.clone(),
        };
        bad.push(Attributes::DecisionTaskTimedOut(DecisionTaskTimedOut {
            timeout_type: DecisionTaskTimeoutType::ScheduleToStart,
            scheduled_event_id: scheduled,
            started_event_id: 0,
        }));
        assert!(bad.fold().is_err());
        history.push(completed_decision(scheduled, started));
        let execution = history.fold().expect("completed");
        assert_eq!(execution.decision_task, DecisionTaskState::None);
        assert_eq!(execution.previous_started_event_id, started);
        assert_eq!(execution.latest_execution_context.as_deref(), Some("ctx"));
        assert!(!execution.needs_decision_task());
    }

    #[test]
    fn wakeups_while_started_are_unseen_until_the_next_start() {
        let mut history = History::new();
        let scheduled = history.push(scheduled_decision());
        let started = history.push(started_decision(scheduled));
        history.push(Attributes::WorkflowExecutionSignaled(
            WorkflowExecutionSignaled {
                signal_name: "s".into(),
                input: None,
                external_workflow_execution: None,
                external_initiated_event_id: None,
            },
        ));
        let execution = history.fold().expect("signaled");
        assert!(execution.unseen_events);
        assert!(!execution.needs_decision_task(), "one is started");
        history.push(completed_decision(scheduled, started));
        let execution = history.fold().expect("completed");
        assert!(execution.needs_decision_task(), "the signal is unseen");
    }

    #[test]
    fn activities_open_start_and_close() {
        let mut history = History::new();
        let s = history.push(scheduled_decision());
        let st = history.push(started_decision(s));
        let done = history.push(completed_decision(s, st));
        let a = history.push(scheduled_activity("a1", done));
        let mut duplicate = History {
            events: history.events.clone(),
        };
        duplicate.push(scheduled_activity("a1", done));
        assert!(matches!(
            duplicate.fold(),
            Err(FoldError::ActivityIdInUse { .. })
        ));
        let execution = history.fold().expect("scheduled");
        let activity = &execution.activities["a1"];
        assert_eq!(activity.scheduled_event_id, a);
        assert_eq!(activity.schedule_to_start, Timeout::Seconds(10));
        assert_eq!(activity.heartbeat, Timeout::Unlimited);
        assert_eq!(execution.latest_activity_task_scheduled_ms, Some(1_000 * a));
        // Completing a task that never started is a foreign sequence.
        let mut early = History {
            events: history.events.clone(),
        };
        early.push(Attributes::ActivityTaskCompleted(ActivityTaskCompleted {
            result: None,
            scheduled_event_id: a,
            started_event_id: a + 1,
        }));
        assert!(matches!(
            early.fold(),
            Err(FoldError::UnknownActivity { .. })
        ));
        let started = history.push(Attributes::ActivityTaskStarted(ActivityTaskStarted {
            identity: Some("worker".into()),
            scheduled_event_id: a,
            token_nonce: [9; 16],
        }));
        let mut again = History {
            events: history.events.clone(),
        };
        again.push(Attributes::ActivityTaskStarted(ActivityTaskStarted {
            identity: None,
            scheduled_event_id: a,
            token_nonce: [9; 16],
        }));
        assert!(again.fold().is_err(), "started twice");
        let cancel = history.push(Attributes::ActivityTaskCancelRequested(
            ActivityTaskCancelRequested {
                decision_task_completed_event_id: done,
                activity_id: "a1".into(),
            },
        ));
        let mut execution = history.fold().expect("cancel requested");
        assert_eq!(
            execution.activities["a1"].cancel_requested_event_id,
            Some(cancel)
        );
        assert_eq!(
            execution.record_heartbeat(a, started, 99_000, Some("half".into())),
            Some(true)
        );
        assert_eq!(
            execution.record_heartbeat(a, started + 1, 99_000, None),
            None
        );
        assert_eq!(execution.activities["a1"].last_heartbeat_ms, Some(99_000));
        history.push(Attributes::ActivityTaskCompleted(ActivityTaskCompleted {
            result: Some("ok".into()),
            scheduled_event_id: a,
            started_event_id: started,
        }));
        let execution = history.fold().expect("completed");
        assert!(execution.activities.is_empty());
        assert!(execution.needs_decision_task());
    }

    #[test]
    fn timers_start_fire_and_cancel() {
        let mut history = History::new();
        let t = history.push(Attributes::TimerStarted(TimerStarted {
            timer_id: "t".into(),
            control: None,
            start_to_fire_timeout: "5".into(),
            decision_task_completed_event_id: 1,
        }));
        let execution = history.fold().expect("started");
        assert_eq!(execution.timers["t"].due_ms, 1_000 * t + 5_000);
        let mut twice = History {
            events: history.events.clone(),
        };
        twice.push(Attributes::TimerStarted(TimerStarted {
            timer_id: "t".into(),
            control: None,
            start_to_fire_timeout: "5".into(),
            decision_task_completed_event_id: 1,
        }));
        assert!(matches!(twice.fold(), Err(FoldError::TimerIdInUse { .. })));
        let mut wrong = History {
            events: history.events.clone(),
        };
        wrong.push(Attributes::TimerFired(TimerFired {
            timer_id: "t".into(),
            started_event_id: t + 1,
        }));
        assert!(matches!(wrong.fold(), Err(FoldError::UnknownTimer { .. })));
        history.push(Attributes::TimerFired(TimerFired {
            timer_id: "t".into(),
            started_event_id: t,
        }));
        let execution = history.fold().expect("fired");
        assert!(execution.timers.is_empty());
        assert!(execution.unseen_events);
    }

    #[test]
    fn a_close_ends_everything_and_nothing_follows() {
        let mut history = History::new();
        let s = history.push(scheduled_decision());
        history.push(scheduled_activity("a1", 0));
        history.push(Attributes::WorkflowExecutionTerminated(
            WorkflowExecutionTerminated {
                reason: None,
                details: None,
                child_policy: ChildPolicy::Terminate,
                cause: Some(WorkflowExecutionTerminatedCause::OperatorInitiated),
            },
        ));
        let execution = history.fold().expect("terminated");
        assert_eq!(execution.close_status, Some(CloseStatus::Terminated));
        assert_eq!(execution.close_ms, Some(4_000));
        assert!(execution.activities.is_empty());
        assert_eq!(execution.decision_task, DecisionTaskState::None);
        assert!(!execution.needs_decision_task());
        history.push(started_decision(s));
        assert!(matches!(
            history.fold(),
            Err(FoldError::AfterClose { event_id: 5, .. })
        ));
    }

    #[test]
    fn every_sample_event_applies_or_is_rejected_without_panic() {
        // Folding each sample after a start must never panic (most are foreign sequences).
        for sample in crate::events::samples().into_iter().skip(1) {
            let mut history = History::new();
            history.push(sample.attributes);
            let _ = history.fold();
        }
    }
}
