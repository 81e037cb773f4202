//! swf::model: the one place the engine reads the pure model's folded state
//! (`statelog_swf::fold::Execution`) and calls its transitions. Everything here is a plain
//! projection or a forwarding call: the decisions are the model's.
//!
//! Must not: decide anything the model decides (what events a call appends, causes,
//! timeouts); read a clock (times come in as arguments).

use statelog_swf::api;
use statelog_swf::fold::{DecisionTaskState, Execution};

/// How the run closed, if it did.
pub(crate) fn close_status(execution: &Execution) -> Option<api::CloseStatus> {
    if execution.is_open() {
        None
    } else {
        execution.close_status
    }
}

/// Whether a cancel was requested of the run.
pub(crate) fn cancel_requested(execution: &Execution) -> bool {
    execution.cancel_requested
}

/// The scheduled (unclaimed) decision task: its scheduled event, list and priority.
pub(crate) fn decision_scheduled(execution: &Execution) -> Option<(u64, String, i32)> {
    match &execution.decision_task {
        DecisionTaskState::Scheduled(task) => Some((
            task.scheduled_event_id,
            task.task_list.name.clone(),
            task.priority,
        )),
        _ => None,
    }
}

/// The started decision task: its started event and token nonce.
pub(crate) fn decision_started(execution: &Execution) -> Option<(u64, [u8; 16])> {
    match &execution.decision_task {
        DecisionTaskState::Started(task) => Some((task.started_event_id, task.token_nonce)),
        _ => None,
    }
}

/// The scheduled, unclaimed activity tasks: scheduled event, list, priority.
pub(crate) fn activities_waiting(execution: &Execution) -> Vec<(u64, String, i32)> {
    let mut waiting: Vec<_> = execution
        .activities
        .values()
        .filter(|a| a.started.is_none())
        .map(|a| (a.scheduled_event_id, a.task_list.name.clone(), a.priority))
        .collect();
    // In scheduling order (the activities are keyed by activityId): tasks of one priority are
    // offered, and so handed out, first scheduled first.
    waiting.sort_unstable_by_key(|&(scheduled, _, _)| scheduled);
    waiting
}

/// The started activity task of a started event: its scheduled event and token nonce.
pub(crate) fn activity_by_started(
    execution: &Execution,
    started_event_id: u64,
) -> Option<(u64, [u8; 16])> {
    execution.activities.values().find_map(|a| {
        let started = a.started.as_ref()?;
        (started.started_event_id == started_event_id)
            .then_some((a.scheduled_event_id, started.token_nonce))
    })
}

/// The run's type.
pub(crate) fn workflow_type(execution: &Execution) -> api::WorkflowType {
    execution.workflow_type.clone()
}

/// The `previousStartedEventId` of the next decision task.
pub(crate) fn previous_started_event_id(execution: &Execution) -> u64 {
    execution.previous_started_event_id
}

/// DescribeWorkflowExecution's `executionConfiguration`.
pub(crate) fn configuration(execution: &Execution) -> api::WorkflowExecutionConfiguration {
    let c = &execution.config;
    api::WorkflowExecutionConfiguration {
        task_start_to_close_timeout: c.task_start_to_close.to_wire(),
        execution_start_to_close_timeout: c.execution_start_to_close.to_wire(),
        task_list: c.task_list.clone(),
        task_priority: c.task_priority.clone(),
        child_policy: c.child_policy,
        lambda_role: c.lambda_role.clone(),
    }
}

/// DescribeWorkflowExecution's `openCounts`.
pub(crate) fn open_counts(execution: &Execution) -> api::WorkflowExecutionOpenCounts {
    api::WorkflowExecutionOpenCounts {
        open_activity_tasks: execution.activities.len() as u64,
        open_decision_tasks: u64::from(execution.decision_task != DecisionTaskState::None),
        open_timers: execution.timers.len() as u64,
        // A closed run's children are no longer its open children (its policy applied).
        open_child_workflow_executions: if execution.is_open() {
            execution.open_children.len() as u64
        } else {
            0
        },
        open_lambda_functions: None,
    }
}

/// When the latest activity task was scheduled.
pub(crate) fn latest_activity_task_ms(execution: &Execution) -> Option<u64> {
    execution.latest_activity_task_scheduled_ms
}

/// The latest `executionContext` a decider gave.
pub(crate) fn latest_execution_context(execution: &Execution) -> Option<String> {
    execution.latest_execution_context.clone()
}

// ---------------------------------------------------------------------------------------------
// Transitions (forwarded; the engine supplies time, nonces and new run ids)

use statelog_store::swf::{RegistrationStatus as StoreStatus, TypeEntry, TypeKind};
use statelog_swf::api::SwfError;
use statelog_swf::decisions::Decision;
use statelog_swf::events::{Attributes, Event};
use statelog_swf::transitions::{self, ActivityTypeView, DecisionTaskCompletion, WorkflowTypeView};

use super::registry::child_policy_of;
use super::Swf;

fn status_of(status: StoreStatus) -> api::RegistrationStatus {
    match status {
        StoreStatus::Registered => api::RegistrationStatus::Registered,
        StoreStatus::Deprecated => api::RegistrationStatus::Deprecated,
    }
}

/// The model's view of a registered workflow type.
pub(crate) fn workflow_type_view(entry: &TypeEntry) -> WorkflowTypeView {
    let d = &entry.defaults;
    WorkflowTypeView {
        status: status_of(entry.status),
        configuration: api::WorkflowTypeConfiguration {
            default_task_start_to_close_timeout: d.task_start_to_close.clone(),
            default_execution_start_to_close_timeout: d.execution_start_to_close.clone(),
            default_task_list: d.task_list.clone().map(|name| api::TaskList { name }),
            default_task_priority: d.task_priority.clone(),
            default_child_policy: d.child_policy.as_deref().and_then(child_policy_of),
            default_lambda_role: d.lambda_role.clone(),
        },
    }
}

/// The model's view of a registered activity type.
pub(crate) fn activity_type_view(entry: &TypeEntry) -> ActivityTypeView {
    let d = &entry.defaults;
    ActivityTypeView {
        status: status_of(entry.status),
        configuration: api::ActivityTypeConfiguration {
            default_task_start_to_close_timeout: d.task_start_to_close.clone(),
            default_task_heartbeat_timeout: d.heartbeat.clone(),
            default_task_list: d.task_list.clone().map(|name| api::TaskList { name }),
            default_task_priority: d.task_priority.clone(),
            default_task_schedule_to_start_timeout: d.schedule_to_start.clone(),
            default_task_schedule_to_close_timeout: d.schedule_to_close.clone(),
        },
    }
}

/// The types of one domain as the transitions look them up (from the store's index).
pub(crate) struct RegistryView<'a> {
    swf: Swf<'a>,
    domain: String,
}

impl<'a> RegistryView<'a> {
    pub(crate) fn new(swf: &Swf<'a>, domain: &str) -> Self {
        RegistryView {
            swf: *swf,
            domain: domain.to_string(),
        }
    }
}

impl transitions::Registry for RegistryView<'_> {
    fn activity_type(&self, t: &api::ActivityType) -> Option<ActivityTypeView> {
        let store = &self.swf.engine.inner.store;
        store
            .swf_type(&self.domain, TypeKind::Activity, &t.name, &t.version)
            .map(|e| activity_type_view(&e))
    }

    fn workflow_type(&self, t: &api::WorkflowType) -> Option<WorkflowTypeView> {
        let store = &self.swf.engine.inner.store;
        store
            .swf_type(&self.domain, TypeKind::Workflow, &t.name, &t.version)
            .map(|e| workflow_type_view(&e))
    }

    /// From the store's index, and open in memory (a damaged run, not recovered, reaches no
    /// one). A run it names may close before the change holds it: the change then looks again
    /// (`runs::Txn`).
    fn open_execution(
        &self,
        workflow_id: &str,
        run_id: Option<&str>,
    ) -> Option<api::WorkflowExecution> {
        let store = &self.swf.engine.inner.store;
        let open = store.swf_open_run(&self.domain, workflow_id)?;
        if run_id.is_some_and(|r| r != &*open.run_id) || self.swf.open_slot(&open.run_id).is_none()
        {
            return None;
        }
        Some(api::WorkflowExecution {
            workflow_id: workflow_id.to_string(),
            run_id: open.run_id.to_string(),
        })
    }

    /// From the store's index alone: any open run holds its workflow id, damaged or not.
    fn workflow_id_in_use(&self, workflow_id: &str) -> bool {
        let store = &self.swf.engine.inner.store;
        store.swf_open_run(&self.domain, workflow_id).is_some()
    }

    /// `EngineOptions::swf_open_runs_per_domain_max` against the domain's open runs. Read as
    /// the decision is made: decisions of different runs at the same moment may each pass it
    /// (the children are counted when opened, whatever the limit).
    fn open_executions_full(&self, adding: usize) -> bool {
        let open = self.swf.open_runs_in(&self.domain);
        open.saturating_add(adding) >= self.swf.engine.inner.options.swf_open_runs_per_domain_max
    }

    fn activity_list_full(&self, list: &str, adding: usize) -> bool {
        let waiting =
            self.swf
                .service()
                .lists
                .count(super::lists::TaskKind::Activity, &self.domain, list);
        waiting.saturating_add(adding) >= self.swf.engine.inner.options.swf_task_list_pending_max
    }
}

/// The first events of a run.
pub(crate) fn start(
    input: &api::StartWorkflowExecutionInput,
    entry: &TypeEntry,
) -> Result<Vec<Attributes>, SwfError> {
    transitions::start(input, &workflow_type_view(entry))
}

/// A decider claims the scheduled decision task.
pub(crate) fn decision_task_started(
    execution: &Execution,
    identity: Option<&str>,
    nonce: [u8; 16],
    now_ms: u64,
) -> Result<Vec<Attributes>, SwfError> {
    transitions::decision_task_started(execution, identity, nonce, now_ms)
}

/// A decider answers its decision task.
pub(crate) fn decision_task_completed(
    execution: &Execution,
    started_event_id: u64,
    decisions: &[Decision],
    input: &api::RespondDecisionTaskCompletedInput,
    registry: &RegistryView<'_>,
    (new_run_id, child_run_ids): (&str, &[String]),
    now_ms: u64,
) -> Result<Vec<Attributes>, SwfError> {
    let completion = DecisionTaskCompletion {
        started_event_id,
        decisions,
        execution_context: input.execution_context.as_deref(),
        task_list: input.task_list.as_ref(),
        task_list_schedule_to_start_timeout: input.task_list_schedule_to_start_timeout.as_deref(),
        new_run_id,
        child_run_ids,
    };
    transitions::decision_task_completed(execution, &completion, registry, now_ms)
}

/// The run a `WorkflowExecutionContinuedAsNew` closed a run into.
pub(crate) struct ContinueAsNew {
    pub(crate) domain: String,
    pub(crate) workflow_id: String,
    pub(crate) run_id: String,
    pub(crate) previous_run_id: String,
    pub(crate) workflow_type: api::WorkflowType,
    pub(crate) tags: Vec<String>,
    pub(crate) attributes: Vec<Attributes>,
}

/// The new run to start when the run's last event continued it as new.
pub(crate) fn continued_as_new(
    execution: &Execution,
    events: &[Event],
) -> Result<Option<ContinueAsNew>, SwfError> {
    let Some(Attributes::WorkflowExecutionContinuedAsNew(continued)) =
        events.last().map(|e| &e.attributes)
    else {
        return Ok(None);
    };
    let attributes = transitions::start_continued(execution, continued)?;
    Ok(Some(ContinueAsNew {
        domain: execution.key.domain.clone(),
        workflow_id: execution.key.workflow_id.clone(),
        run_id: continued.new_execution_run_id.clone(),
        previous_run_id: execution.key.run_id.clone(),
        workflow_type: continued.workflow_type.clone(),
        tags: continued.tag_list.clone().unwrap_or_default(),
        attributes,
    }))
}

/// A worker claims the scheduled activity task.
pub(crate) fn activity_task_started(
    execution: &Execution,
    scheduled_event_id: u64,
    identity: Option<&str>,
    nonce: [u8; 16],
    now_ms: u64,
) -> Result<Vec<Attributes>, SwfError> {
    transitions::activity_task_started(execution, scheduled_event_id, identity, nonce, now_ms)
}

/// The next deadline of the run.
pub(crate) fn next_due_ms(execution: &Execution) -> Option<u64> {
    transitions::next_due_ms(execution)
}

/// What is due at `now_ms`.
pub(crate) fn due(execution: &Execution, now_ms: u64) -> Result<Vec<Attributes>, SwfError> {
    transitions::due(execution, now_ms)
}

/// One page of `events` as SWF's JSON (`statelog_swf::history::page`): `scope` names what is
/// paged (a run id, or a decision task), so a token of another is refused.
pub(crate) fn history_page(
    events: &[Event],
    scope: &str,
    token: Option<&str>,
    size: Option<u32>,
    reverse: bool,
) -> Result<(Vec<serde_json::Value>, Option<String>), SwfError> {
    let page = statelog_swf::history::page(
        events,
        &statelog_swf::history::PageRequest {
            scope,
            maximum_page_size: size,
            reverse_order: reverse,
            next_page_token: token,
        },
    )?;
    Ok((page.events, page.next_page_token))
}

/// The page scope of a decision task's history: the task's own token. A page token is
/// readable by anyone who holds it (it is checked, not sealed), so holding one proves holding
/// the task; one built from the run id and the started event id alone names no task.
/// The scope also records whether the task was polled with `startAtPreviousStartedEvent`
/// (`from_previous`), so every page of one task shows the same events whatever later polls
/// with its token say.
pub(crate) fn decision_scope(task_token: &str, from_previous: bool) -> String {
    if from_previous {
        format!("decision-since-previous|{task_token}")
    } else {
        format!("decision|{task_token}")
    }
}

/// The task token a decision task's page scope holds, and whether its events start at the
/// previous started event.
pub(crate) fn read_decision_scope(scope: &str) -> Option<(super::token::Token, bool)> {
    let (token, from_previous) = match scope.strip_prefix("decision-since-previous|") {
        Some(token) => (token, true),
        None => (scope.strip_prefix("decision|")?, false),
    };
    Some((super::token::decode(token)?, from_previous))
}

/// The events a decision task shows: every event up to its started event, or (polled with
/// `startAtPreviousStartedEvent`) those from the previous decision task's started instant on.
pub(crate) fn decision_events(
    events: &[Event],
    started_event_id: u64,
    previous_started_event_id: u64,
    from_previous: bool,
) -> &[Event] {
    let end = usize::try_from(started_event_id)
        .unwrap_or(usize::MAX)
        .min(events.len());
    let visible = &events[..end];
    if from_previous {
        statelog_swf::history::since_previous_started(visible, previous_started_event_id)
    } else {
        visible
    }
}
