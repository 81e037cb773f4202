//! swf::executions: the SWF operations on workflow executions: start, the decision and
//! activity long polls and their answers, heartbeats, pending counts, describe, history,
//! signal, cancel request and terminate. Each decides through the pure transitions (via
//! `model`) and writes through `runs` (one durable batch per call).
//!
//! Tasks: a poll takes a task from its list (`lists`), then claims it under the run's lock:
//! only a task the folded state still has scheduled is claimed, by a durable
//! `…TaskStarted` carrying a fresh nonce; the token is made of it and handed out after the
//! append returns. An answer finds its task by the token's run and started event, compares the
//! nonce in constant time and closes the task in the same commit (single use). A bad, foreign
//! or used token is `UnknownResourceFault`, whatever part of it failed.
//!
//! A poll given up by its caller (`PollCancel`: a client that hung up) answers empty, and a task
//! it took but had not claimed goes back to its list; one given up after its claim's append
//! began is claimed for nobody and recovers by its start-to-close timeout, as in SWF.
//! A decision task polled with `startAtPreviousStartedEvent` shows the events from the previous
//! decision task's started instant on (`history::since_previous_started`); its page scope
//! records that, so its later pages show the same events.
//!
//! Must not: log or echo a token; hold a run lock while waiting in a poll.

use std::time::{Duration, Instant};

use statelog_store::swf::{RegistrationStatus, RunStart, TypeKind};
use statelog_swf::api::{self, Fault, SwfError};
use statelog_swf::limits;
use statelog_swf::transitions;

use super::lists::{PollCancel, TaskKind, TaskRef};
use super::runs::{NewRun, RunState, Txn};
use super::{internal, model, token, Swf};

fn unknown_token() -> SwfError {
    SwfError::unknown_resource(
        "Unknown task token: it names no open task (unknown, already answered, or timed out)",
    )
}

impl Swf<'_> {
    /// StartWorkflowExecution.
    pub fn start_workflow_execution(
        &self,
        input: &api::StartWorkflowExecutionInput,
    ) -> Result<api::Run, SwfError> {
        api::check_name("workflowId", &input.workflow_id, limits::NAME_CHARS_MAX)?;
        api::check_optional_length("input", input.input.as_deref(), limits::DATA_CHARS_MAX)?;
        if let Some(tags) = &input.tag_list {
            api::check_tag_list(tags)?;
        }
        let domain = self.usable_domain(&input.domain)?;
        let t = &input.workflow_type;
        let entry = self.type_entry(&input.domain, TypeKind::Workflow, &t.name, &t.version)?;
        if entry.status == RegistrationStatus::Deprecated {
            return Err(SwfError::new(
                Fault::TypeDeprecated,
                format!(
                    "WorkflowType is deprecated: [name={}, version={}]",
                    t.name, t.version
                ),
            ));
        }
        if self
            .engine
            .inner
            .store
            .swf_open_run(&input.domain, &input.workflow_id)
            .is_some()
        {
            return Err(SwfError::new(
                Fault::WorkflowExecutionAlreadyStarted,
                format!(
                    "An execution of workflow id {} is already open",
                    input.workflow_id
                ),
            ));
        }
        let run_id = self.new_run_id()?;
        let now_ms = self.now();
        let attributes = model::start(input, &entry)?;
        let start = RunStart {
            type_name: t.name.clone(),
            type_version: t.version.clone(),
            start_ms: now_ms,
            tags: input.tag_list.clone().unwrap_or_default(),
            continued_from: None,
        };
        let run = NewRun {
            domain: &input.domain,
            workflow_id: &input.workflow_id,
            run_id: &run_id,
            retention_days: domain.retention_days,
            start,
        };
        self.open_run(run, attributes, now_ms)?;
        Ok(api::Run { run_id })
    }

    /// PollForDecisionTask: waits up to `wait` for a decision task of the list; an empty
    /// answer (empty `taskToken`, no `events`) when none came. With `nextPageToken`, the next
    /// page of the history of the decision task that token came with (no new task is taken).
    pub fn poll_for_decision_task(
        &self,
        input: &api::PollForDecisionTaskInput,
        wait: Duration,
    ) -> Result<api::DecisionTask, SwfError> {
        self.poll_for_decision_task_cancellable(input, wait, &PollCancel::new())
    }

    /// PollForDecisionTask that `cancel` may give up (its caller stopped waiting for the
    /// answer): a waiting poll then answers empty at once, and a task it took but has not
    /// claimed yet stays scheduled for the next poller (see [`PollCancel`]).
    pub fn poll_for_decision_task_cancellable(
        &self,
        input: &api::PollForDecisionTaskInput,
        wait: Duration,
        cancel: &PollCancel,
    ) -> Result<api::DecisionTask, SwfError> {
        api::check_name(
            "taskList.name",
            &input.task_list.name,
            limits::NAME_CHARS_MAX,
        )?;
        api::check_optional_length(
            "identity",
            input.identity.as_deref(),
            limits::IDENTITY_CHARS_MAX,
        )?;
        api::page_size(input.maximum_page_size)?;
        self.domain(&input.domain)?;
        if let Some(page_token) = input.next_page_token.as_deref().filter(|t| !t.is_empty()) {
            return self.decision_page(input, page_token);
        }
        let deadline = Instant::now() + wait;
        loop {
            let lists = &self.service().lists;
            let Some(task) = lists.take(
                TaskKind::Decision,
                &input.domain,
                &input.task_list.name,
                deadline,
                cancel,
            )?
            else {
                return Ok(api::DecisionTask::empty());
            };
            if let Some(answer) = self.claim_decision(&task, input, cancel)? {
                return Ok(answer);
            }
        }
    }

    /// Claims a decision task taken from a list: `None` when the run no longer has it
    /// scheduled (a stale list entry) or the poll was given up (then the task goes back to
    /// its list).
    fn claim_decision(
        &self,
        task: &TaskRef,
        input: &api::PollForDecisionTaskInput,
        cancel: &PollCancel,
    ) -> Result<Option<api::DecisionTask>, SwfError> {
        let Some(slot) = self.open_slot(&task.run_id) else {
            return Ok(None);
        };
        let mut state = slot.state.lock();
        if model::decision_scheduled(&state.execution).map(|d| d.0) != Some(task.scheduled_event_id)
        {
            return Ok(None);
        }
        if cancel.is_cancelled() {
            // Nobody would receive its token: back to its list, unclaimed.
            self.sync(&mut state);
            return Ok(None);
        }
        let now_ms = self.now();
        let started = self.new_nonce().and_then(|nonce| {
            model::decision_task_started(&state.execution, input.identity.as_deref(), nonce, now_ms)
                .map(|attributes| (nonce, attributes))
        });
        let (nonce, attributes) = match started {
            Ok(started) => started,
            Err(error) => {
                // Taken from its list but not claimed: back to it.
                self.sync(&mut state);
                return Err(error);
            }
        };
        if let Err(error) = self.commit(&mut Txn::solo(&mut state), attributes, now_ms) {
            // Not claimed: back to its list.
            self.sync(&mut state);
            return Err(error);
        }
        let Some((started_event_id, _)) = model::decision_started(&state.execution) else {
            return Err(internal("a claimed decision task is not started"));
        };
        let token = token::encode(&state.run_id, started_event_id, &nonce);
        let from_previous = input.start_at_previous_started_event.unwrap_or(false);
        Ok(Some(self.decision_task(
            &state,
            token,
            started_event_id,
            from_previous,
            input,
        )?))
    }

    /// The answer of a started decision task: its page of events (from the previous started
    /// event on when `from_previous`, SWF's `startAtPreviousStartedEvent`).
    fn decision_task(
        &self,
        state: &RunState,
        task_token: String,
        started_event_id: u64,
        from_previous: bool,
        input: &api::PollForDecisionTaskInput,
    ) -> Result<api::DecisionTask, SwfError> {
        let previous_started_event_id = model::previous_started_event_id(&state.execution);
        let visible = model::decision_events(
            &state.events,
            started_event_id,
            previous_started_event_id,
            from_previous,
        );
        let (events, next_page_token) = model::history_page(
            visible,
            &model::decision_scope(&task_token, from_previous),
            input.next_page_token.as_deref(),
            input.maximum_page_size,
            input.reverse_order.unwrap_or(false),
        )?;
        Ok(api::DecisionTask {
            task_token,
            started_event_id,
            workflow_execution: Some(state.execution_ref()),
            workflow_type: Some(model::workflow_type(&state.execution)),
            events: Some(events),
            next_page_token,
            previous_started_event_id,
        })
    }

    /// The next page of a started decision task's history (`nextPageToken` of a poll): the
    /// token's scope names the run and the started event, and whether the task's events start
    /// at the previous started event (as its first poll asked; later polls' flag is not
    /// read); the task must still be started.
    fn decision_page(
        &self,
        input: &api::PollForDecisionTaskInput,
        page_token: &str,
    ) -> Result<api::DecisionTask, SwfError> {
        let gone = || {
            SwfError::validation(
                "Specified token has exceeded its maximum lifetime: its decision task is closed",
            )
        };
        let scope = statelog_swf::history::token_scope(page_token)?;
        let (claimed, from_previous) = model::read_decision_scope(&scope).ok_or_else(gone)?;
        let slot = self.open_slot(&claimed.run_id).ok_or_else(gone)?;
        let state = slot.state.lock();
        if state.domain != input.domain {
            return Err(gone());
        }
        match model::decision_started(&state.execution) {
            Some((started, nonce))
                if started == claimed.started_event_id
                    && token::same_nonce(&nonce, &claimed.nonce) =>
            {
                let task_token = token::encode(&state.run_id, started, &nonce);
                self.decision_task(&state, task_token, started, from_previous, input)
            }
            _ => Err(gone()),
        }
    }

    /// The open run and started decision task a token names, under the run's lock (and the
    /// runs the change reaches: `Swf::transact`, so `then` may run more than once).
    fn with_decision_token<T>(
        &self,
        task_token: &str,
        mut then: impl FnMut(&Self, &mut Txn<'_>, u64) -> Result<T, SwfError>,
    ) -> Result<T, SwfError> {
        let token = token::decode(task_token).ok_or_else(unknown_token)?;
        self.transact(&token.run_id, |swf, state| {
            match model::decision_started(&state.execution) {
                Some((started, nonce))
                    if started == token.started_event_id
                        && token::same_nonce(&nonce, &token.nonce) =>
                {
                    then(swf, state, started)
                }
                _ => Err(unknown_token()),
            }
        })
        .unwrap_or_else(|| Err(unknown_token()))
    }

    /// RespondDecisionTaskCompleted.
    pub fn respond_decision_task_completed(
        &self,
        input: &api::RespondDecisionTaskCompletedInput,
    ) -> Result<(), SwfError> {
        api::check_optional_length(
            "executionContext",
            input.execution_context.as_deref(),
            limits::DATA_CHARS_MAX,
        )?;
        self.with_decision_token(&input.task_token, |swf, state, started| {
            // Checked once the token is: a bad token is UnknownResourceFault whatever the
            // decisions hold, as SWF answers it.
            let decisions = statelog_swf::decisions::parse_decisions(
                input.decisions.as_deref().unwrap_or_default(),
            )?;
            let now_ms = swf.now();
            let registry = model::RegistryView::new(swf, &state.domain);
            let new_run_id = swf.new_run_id()?;
            let children = decisions
                .iter()
                .filter(|d| {
                    matches!(
                        d,
                        statelog_swf::decisions::Decision::StartChildWorkflowExecution(_)
                    )
                })
                .count();
            let child_run_ids = (0..children)
                .map(|_| swf.new_run_id())
                .collect::<Result<Vec<_>, _>>()?;
            let attributes = model::decision_task_completed(
                &state.execution,
                started,
                &decisions,
                input,
                &registry,
                (&new_run_id, &child_run_ids),
                now_ms,
            )?;
            swf.commit(state, attributes, now_ms)
        })
    }

    /// PollForActivityTask: waits up to `wait` for an activity task of the list; an empty
    /// answer (empty `taskToken`) when none came.
    pub fn poll_for_activity_task(
        &self,
        input: &api::PollForActivityTaskInput,
        wait: Duration,
    ) -> Result<api::ActivityTask, SwfError> {
        self.poll_for_activity_task_cancellable(input, wait, &PollCancel::new())
    }

    /// PollForActivityTask that `cancel` may give up, as
    /// [`Swf::poll_for_decision_task_cancellable`].
    pub fn poll_for_activity_task_cancellable(
        &self,
        input: &api::PollForActivityTaskInput,
        wait: Duration,
        cancel: &PollCancel,
    ) -> Result<api::ActivityTask, SwfError> {
        api::check_name(
            "taskList.name",
            &input.task_list.name,
            limits::NAME_CHARS_MAX,
        )?;
        api::check_optional_length(
            "identity",
            input.identity.as_deref(),
            limits::IDENTITY_CHARS_MAX,
        )?;
        self.domain(&input.domain)?;
        let deadline = Instant::now() + wait;
        loop {
            let lists = &self.service().lists;
            let Some(task) = lists.take(
                TaskKind::Activity,
                &input.domain,
                &input.task_list.name,
                deadline,
                cancel,
            )?
            else {
                return Ok(api::ActivityTask::empty());
            };
            if let Some(answer) = self.claim_activity(&task, input.identity.clone(), cancel)? {
                return Ok(answer);
            }
        }
    }

    fn claim_activity(
        &self,
        task: &TaskRef,
        identity: Option<String>,
        cancel: &PollCancel,
    ) -> Result<Option<api::ActivityTask>, SwfError> {
        let Some(slot) = self.open_slot(&task.run_id) else {
            return Ok(None);
        };
        let mut state = slot.state.lock();
        let still_waiting = state
            .execution
            .activity_by_scheduled_event(task.scheduled_event_id)
            .is_some_and(|a| a.started.is_none());
        if !still_waiting {
            return Ok(None);
        }
        if cancel.is_cancelled() {
            // Nobody would receive its token: back to its list, unclaimed.
            self.sync(&mut state);
            return Ok(None);
        }
        let now_ms = self.now();
        let started = self.new_nonce().and_then(|nonce| {
            model::activity_task_started(
                &state.execution,
                task.scheduled_event_id,
                identity.as_deref(),
                nonce,
                now_ms,
            )
            .map(|attributes| (nonce, attributes))
        });
        let (nonce, attributes) = match started {
            Ok(started) => started,
            Err(error) => {
                // Taken from its list but not claimed: back to it.
                self.sync(&mut state);
                return Err(error);
            }
        };
        if let Err(error) = self.commit(&mut Txn::solo(&mut state), attributes, now_ms) {
            self.sync(&mut state);
            return Err(error);
        }
        let started_event_id = state.events.len() as u64;
        let scheduled = state
            .execution
            .activity_by_scheduled_event(task.scheduled_event_id)
            .filter(|a| a.started.as_ref().map(|s| s.started_event_id) == Some(started_event_id))
            .ok_or_else(|| internal("a claimed activity task is not started"))?;
        Ok(Some(api::ActivityTask {
            task_token: token::encode(&state.run_id, started_event_id, &nonce),
            activity_id: Some(scheduled.activity_id.clone()),
            started_event_id,
            workflow_execution: Some(state.execution_ref()),
            activity_type: Some(scheduled.activity_type.clone()),
            input: scheduled.input.clone(),
        }))
    }

    /// The open run and started activity task (its scheduled event id) a token names, under
    /// the run's lock (and the runs the change reaches: `then` may run more than once).
    fn with_activity_token<T>(
        &self,
        task_token: &str,
        mut then: impl FnMut(&Self, &mut Txn<'_>, u64, u64) -> Result<T, SwfError>,
    ) -> Result<T, SwfError> {
        let token = token::decode(task_token).ok_or_else(unknown_token)?;
        self.transact(
            &token.run_id,
            |swf, state| match model::activity_by_started(&state.execution, token.started_event_id)
            {
                Some((scheduled, nonce)) if token::same_nonce(&nonce, &token.nonce) => {
                    then(swf, state, scheduled, token.started_event_id)
                }
                _ => Err(unknown_token()),
            },
        )
        .unwrap_or_else(|| Err(unknown_token()))
    }

    /// RespondActivityTaskCompleted.
    pub fn respond_activity_task_completed(
        &self,
        input: &api::RespondActivityTaskCompletedInput,
    ) -> Result<(), SwfError> {
        api::check_optional_length("result", input.result.as_deref(), limits::DATA_CHARS_MAX)?;
        self.with_activity_token(&input.task_token, |swf, state, scheduled, started| {
            let now_ms = swf.now();
            let attributes = transitions::activity_task_completed(
                &state.execution,
                scheduled,
                started,
                input.result.as_deref(),
                now_ms,
            )?;
            swf.commit(state, attributes, now_ms)
        })
    }

    /// RespondActivityTaskFailed.
    pub fn respond_activity_task_failed(
        &self,
        input: &api::RespondActivityTaskFailedInput,
    ) -> Result<(), SwfError> {
        api::check_optional_length("reason", input.reason.as_deref(), limits::REASON_CHARS_MAX)?;
        api::check_optional_length("details", input.details.as_deref(), limits::DATA_CHARS_MAX)?;
        self.with_activity_token(&input.task_token, |swf, state, scheduled, started| {
            let now_ms = swf.now();
            let attributes = transitions::activity_task_failed(
                &state.execution,
                scheduled,
                started,
                input.reason.as_deref(),
                input.details.as_deref(),
                now_ms,
            )?;
            swf.commit(state, attributes, now_ms)
        })
    }

    /// RespondActivityTaskCanceled.
    pub fn respond_activity_task_canceled(
        &self,
        input: &api::RespondActivityTaskCanceledInput,
    ) -> Result<(), SwfError> {
        api::check_optional_length("details", input.details.as_deref(), limits::DATA_CHARS_MAX)?;
        self.with_activity_token(&input.task_token, |swf, state, scheduled, started| {
            let now_ms = swf.now();
            let attributes = transitions::activity_task_canceled(
                &state.execution,
                scheduled,
                started,
                input.details.as_deref(),
                now_ms,
            )?;
            swf.commit(state, attributes, now_ms)
        })
    }

    /// RecordActivityTaskHeartbeat: resets the task's heartbeat clock (in memory: SWF records
    /// no event) and answers whether a cancel was requested.
    pub fn record_activity_task_heartbeat(
        &self,
        input: &api::RecordActivityTaskHeartbeatInput,
    ) -> Result<api::ActivityTaskStatus, SwfError> {
        api::check_optional_length("details", input.details.as_deref(), limits::DATA_CHARS_MAX)?;
        self.with_activity_token(
            &input.task_token,
            |swf, state, scheduled, started_event_id| {
                let cancel_requested = state
                    .execution
                    .record_heartbeat(
                        scheduled,
                        started_event_id,
                        swf.now(),
                        input.details.clone(),
                    )
                    .ok_or_else(unknown_token)?;
                // The heartbeat deadline moved.
                swf.sync(state);
                Ok(api::ActivityTaskStatus { cancel_requested })
            },
        )
    }

    /// CountPendingActivityTasks.
    pub fn count_pending_activity_tasks(
        &self,
        input: &api::CountPendingActivityTasksInput,
    ) -> Result<api::PendingTaskCount, SwfError> {
        self.domain(&input.domain)?;
        api::check_name(
            "taskList.name",
            &input.task_list.name,
            limits::NAME_CHARS_MAX,
        )?;
        let count =
            self.service()
                .lists
                .count(TaskKind::Activity, &input.domain, &input.task_list.name);
        Ok(api::PendingTaskCount {
            count: count as u64,
            truncated: Some(false),
        })
    }

    /// CountPendingDecisionTasks.
    pub fn count_pending_decision_tasks(
        &self,
        input: &api::CountPendingDecisionTasksInput,
    ) -> Result<api::PendingTaskCount, SwfError> {
        self.domain(&input.domain)?;
        api::check_name(
            "taskList.name",
            &input.task_list.name,
            limits::NAME_CHARS_MAX,
        )?;
        let count =
            self.service()
                .lists
                .count(TaskKind::Decision, &input.domain, &input.task_list.name);
        Ok(api::PendingTaskCount {
            count: count as u64,
            truncated: Some(false),
        })
    }

    /// The run a (domain, workflow id, optional run id) names: the given run, or the open run
    /// of the workflow id; `UnknownResourceFault` when none (or it is past retention).
    fn named_run(
        &self,
        domain: &str,
        workflow_id: &str,
        run_id: Option<&str>,
        open_only: bool,
    ) -> Result<statelog_store::swf::RunSummary, SwfError> {
        self.domain(domain)?;
        let store = &self.engine.inner.store;
        let run = match run_id {
            Some(run_id) => store
                .swf_run(run_id)
                .filter(|r| r.domain == domain && r.workflow_id == workflow_id),
            None => store.swf_open_run(domain, workflow_id),
        };
        let now_ms = self.now();
        run.filter(|r| !r.is_expired(now_ms))
            .filter(|r| !open_only || r.close.is_none())
            .ok_or_else(|| {
                SwfError::unknown_resource(format!(
                    "Unknown execution: WorkflowExecution=[workflowId={workflow_id}, runId={}]",
                    run_id.unwrap_or("")
                ))
            })
    }

    /// Runs `then` on the open run a caller names, under its lock (and the runs the change
    /// reaches: `then` may run more than once).
    fn with_open_run<T>(
        &self,
        domain: &str,
        workflow_id: &str,
        run_id: Option<&str>,
        mut then: impl FnMut(&Self, &mut Txn<'_>) -> Result<T, SwfError>,
    ) -> Result<T, SwfError> {
        let run = self.named_run(domain, workflow_id, run_id, true)?;
        let closed = || {
            SwfError::unknown_resource(format!(
                "Unknown execution: WorkflowExecution=[workflowId={workflow_id}] is closed"
            ))
        };
        self.transact(&run.run_id, |swf, state| {
            if model::close_status(&state.execution).is_some() {
                return Err(closed());
            }
            then(swf, state)
        })
        .unwrap_or_else(|| Err(closed()))
    }

    /// SignalWorkflowExecution.
    pub fn signal_workflow_execution(
        &self,
        input: &api::SignalWorkflowExecutionInput,
    ) -> Result<(), SwfError> {
        api::check_name("signalName", &input.signal_name, limits::NAME_CHARS_MAX)?;
        api::check_optional_length("input", input.input.as_deref(), limits::DATA_CHARS_MAX)?;
        self.with_open_run(
            &input.domain,
            &input.workflow_id,
            input.run_id.as_deref(),
            |swf, state| {
                let now_ms = swf.now();
                let attributes = transitions::signal(
                    &state.execution,
                    &input.signal_name,
                    input.input.as_deref(),
                    now_ms,
                )?;
                swf.commit(state, attributes, now_ms)
            },
        )
    }

    /// RequestCancelWorkflowExecution.
    pub fn request_cancel_workflow_execution(
        &self,
        input: &api::RequestCancelWorkflowExecutionInput,
    ) -> Result<(), SwfError> {
        self.with_open_run(
            &input.domain,
            &input.workflow_id,
            input.run_id.as_deref(),
            |swf, state| {
                let now_ms = swf.now();
                let attributes = transitions::request_cancel(&state.execution, now_ms)?;
                swf.commit(state, attributes, now_ms)
            },
        )
    }

    /// TerminateWorkflowExecution.
    pub fn terminate_workflow_execution(
        &self,
        input: &api::TerminateWorkflowExecutionInput,
    ) -> Result<(), SwfError> {
        api::check_optional_length("reason", input.reason.as_deref(), limits::REASON_CHARS_MAX)?;
        api::check_optional_length("details", input.details.as_deref(), limits::DATA_CHARS_MAX)?;
        self.with_open_run(
            &input.domain,
            &input.workflow_id,
            input.run_id.as_deref(),
            |swf, state| {
                let now_ms = swf.now();
                let attributes = transitions::terminate(
                    &state.execution,
                    input.reason.as_deref(),
                    input.details.as_deref(),
                    input.child_policy,
                    now_ms,
                )?;
                swf.commit(state, attributes, now_ms)
            },
        )
    }

    /// The events of a run (open: from memory; closed: from the store) with its summary.
    fn run_events(
        &self,
        domain: &str,
        execution: &api::WorkflowExecution,
    ) -> Result<
        (
            statelog_store::swf::RunSummary,
            Vec<statelog_swf::events::Event>,
        ),
        SwfError,
    > {
        let run = self.named_run(
            domain,
            &execution.workflow_id,
            Some(&execution.run_id),
            false,
        )?;
        if let Some(slot) = self.open_slot(&run.run_id) {
            let state = slot.state.lock();
            return Ok((run, state.events.clone()));
        }
        let events = self.stored_events(&run.run_id)?;
        Ok((run, events))
    }

    /// DescribeWorkflowExecution.
    pub fn describe_workflow_execution(
        &self,
        input: &api::DescribeWorkflowExecutionInput,
    ) -> Result<api::WorkflowExecutionDetail, SwfError> {
        let (run, events) = self.run_events(&input.domain, &input.execution)?;
        let key = statelog_swf::fold::RunKey {
            domain: run.domain.clone(),
            workflow_id: run.workflow_id.clone(),
            run_id: run.run_id.to_string(),
        };
        let execution = statelog_swf::fold::Execution::fold(key, &events).map_err(internal)?;
        let mut execution_info = self.execution_info(&run);
        // The parent is in the child's history (its started event), not in the index.
        execution_info.parent = execution.parent.clone();
        Ok(api::WorkflowExecutionDetail {
            execution_info,
            execution_configuration: model::configuration(&execution),
            open_counts: model::open_counts(&execution),
            latest_activity_task_timestamp: model::latest_activity_task_ms(&execution)
                .map(api::timestamp_from_ms),
            latest_execution_context: model::latest_execution_context(&execution),
        })
    }

    /// GetWorkflowExecutionHistory.
    pub fn get_workflow_execution_history(
        &self,
        input: &api::GetWorkflowExecutionHistoryInput,
    ) -> Result<api::History, SwfError> {
        api::page_size(input.maximum_page_size)?;
        let (run, events) = self.run_events(&input.domain, &input.execution)?;
        let (events, next_page_token) = model::history_page(
            &events,
            &run.run_id,
            input.next_page_token.as_deref(),
            input.maximum_page_size,
            input.reverse_order.unwrap_or(false),
        )?;
        Ok(api::History {
            events,
            next_page_token,
        })
    }

    /// Every event of a run as SWF's JSON, by run id or by workflow id (its newest run, in any
    /// domain): for `statelog history`. `None` when no run matches.
    pub fn history_json_of(&self, id: &str) -> Result<Option<Vec<serde_json::Value>>, SwfError> {
        let store = &self.engine.inner.store;
        let run = store.swf_run(id).or_else(|| {
            store
                .swf_domains()
                .iter()
                .flat_map(|d| store.swf_runs_of_workflow(&d.name, id))
                .max_by_key(|r| r.start_index)
        });
        let Some(run) = run else {
            return Ok(None);
        };
        let events = match self.open_slot(&run.run_id) {
            Some(slot) => slot.state.lock().events.clone(),
            None => self.stored_events(&run.run_id)?,
        };
        Ok(Some(events.iter().map(|e| e.to_json()).collect()))
    }
}
