//! statelog-swf: the pure model of Amazon SWF workflow executions (issue 18;
//! the shared SWF design pins the seams).
//!
//! Modules:
//! - [`api`]: every operation's input and output shape with SWF's JSON names, the faults
//!   ([`api::Fault`], [`api::SwfError`]) and the shared validation helpers.
//! - [`limits`]: SWF's named maximums.
//! - [`events`]: the history events ([`events::Event`], one [`events::Attributes`] variant per
//!   SWF event type) and their SWF JSON; `events::samples()` is the golden sample.
//! - [`decisions`]: the 13 decision types and their validation ([`decisions::parse_decisions`]).
//! - [`encoding`]: the stored bytes of an event batch (version + postcard).
//! - [`fold`]: the state of one run folded from its history ([`fold::Execution`]).
//! - [`history`]: paging of histories and lists (`maximumPageSize`, `reverseOrder`, checked
//!   `nextPageToken`s).
//! - [`transitions`]: what happens next, as the events to append (start, decision and
//!   activity tasks, signals, cancels, terminations, timeouts and timers).
//!
//! Deviations from SWF-DESIGN.md (additions only; nothing pinned is renamed):
//! - `DecisionTask.workflow_execution` / `workflow_type` and `ActivityTask.activity_id` /
//!   `workflow_execution` / `activity_type` are `Option`, so that an empty poll answers only
//!   `taskToken: ""` and the event ids (`DecisionTask::empty()`, `ActivityTask::empty()`).
//! - `DecisionTask.previous_started_event_id` is a `u64` always written (0 when none), as SWF.
//! - `Execution::fold(key: RunKey, &[Event])` takes the run's domain, workflow id and run id
//!   (the events do not carry them); `Execution::started(key, &first_event)` starts a fold.
//! - Heartbeats are not history events (SWF records none): `Execution::record_heartbeat`
//!   updates the in-memory state; after a restart the heartbeat clock restarts from the
//!   started event unless the engine keeps heartbeats itself.
//! - `transitions::decision_task_started(&Execution, identity, token_nonce, now_ms)` and
//!   `activity_task_started(&Execution, scheduled_event_id, identity, token_nonce, now_ms)`
//!   take the nonce the engine drew; `decision_task_completed(&Execution,
//!   &DecisionTaskCompletion, &dyn Registry, now_ms)` takes the answer as one struct (started
//!   event id, parsed decisions, executionContext, taskList, taskListScheduleToStartTimeout
//!   and the run id a ContinueAsNew decision gives the new run);
//!   `transitions::start_continued` gives the new run's first events.
//! - `DecisionTaskCompletion.child_run_ids` (one drawn run id per StartChildWorkflowExecution
//!   decision); `transitions::Registry` also answers `open_execution`, `workflow_id_in_use`
//!   and `open_executions_full` (defaults: none, none, never); `fold::Execution` keeps
//!   `open_children` as `OpenChild`s by initiated event and `parent_initiated_event_id`.
//! - `DeleteDomainInput` exists for the engine API, but SWF has no DeleteDomain operation.
//! - `history::page(&[Event], &PageRequest { scope, maximum_page_size, reverse_order,
//!   next_page_token })` pages events; `history::page_indices(len, &PageRequest)` pages any
//!   list; `history::token_scope(token)` reads the scope back (PollForDecisionTask with a
//!   `nextPageToken` finds its run and started event by it; the engine chooses the scope
//!   string). A decision task's events are the history up to its `DecisionTaskStarted`.
//!
//! Behaviour the engine and the server rely on:
//! - A transition answers `Err(SwfError)` and no events, or events that fold (each batch is
//!   applied to a copy while it is built). `UnknownResourceFault` for a closed run or task.
//! - A closing decision that is not the last decision is a `ValidationException`.
//! - StartChildWorkflowExecution, SignalExternalWorkflowExecution and
//!   RequestCancelExternalWorkflowExecution are decided here from what `transitions::Registry`
//!   answers of the domain (`open_execution`; child run ids come in with the
//!   `DecisionTaskCompletion`); what lands on the other run is a `transitions::Effect`
//!   (`transitions::effects` reads them off a batch, `transitions::effect_events` gives the
//!   other run's events), carried out by the engine in the same durable append.
//!   ScheduleLambdaFunction fails with LAMBDA_SERVICE_NOT_AVAILABLE_IN_REGION.
//! - `executionStartToCloseTimeout` of `NONE` is a `ValidationException` (SWF: at most a year).
//! - A batch that would take the history past 25,000 events becomes
//!   `WorkflowExecutionTerminated` with cause EVENT_LIMIT_EXCEEDED.
//!
//! Invariants: pure. No clock (times come in as epoch milliseconds), no randomness (token
//! nonces come in from the engine), no file system, network, threads or tokio.
//! Must not: depend on any statelog crate; perform I/O.

#![deny(missing_docs)]

pub mod api;
pub mod decisions;
pub mod encoding;
pub mod events;
pub mod fold;
pub mod history;
pub mod limits;
pub mod transitions;
