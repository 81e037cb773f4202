//! state: [`ExecutionState`], the fold of an execution's events, and [`apply`], the fold step.
//!
//! Shape: the execution is a tree of *threads*. The root thread runs the top-level states; a
//! Parallel state owns one thread per branch and a Map state one per started iteration. An
//! event's `scope` names its thread by the path of branch/iteration indexes from the root.
//! Each thread is pending, running one state ([`StateRun`]), done with an output, or aborted.
//!
//! `previousEventId` (AWS's rule, read off the recordings): every event points at the last
//! *advancing* event before it; `ExecutionStarted`, `MapIterationSucceeded`,
//! `MapIterationFailed`, `MapIterationAborted`, `MapStateSucceeded` and `ParallelStateSucceeded`
//! do not advance (so the first state-entered event points at 0, and `MapIterationStarted(i+1)`
//! points at the last event of iteration `i`). The cursor is kept here so replay reproduces it.
//!
//! What is folded here, and where the rest is: [`apply`] checks the event's place (id, closed,
//! first event) and `apply_details` dispatches by event type, naming every type (no
//! catch-all). This module folds the execution's own events and the arms every state shares;
//! each state type's own events are folded by its module in `states/` (see its table).
//! ```text
//! NotStarted --(ExecutionStarted)--> Running (root thread Pending)
//! Running --(ExecutionSucceeded | Failed | TimedOut | Aborted)--> closed (that status)
//! Failed | TimedOut | Aborted --(ExecutionRedriven)--> Running (see `redrive`)
//! Running --(the ExecutionTimeout timer its start or redrive arms)--> execution timer armed
//! thread Pending | Done --(any *StateEntered)--> Running (Entered); a redrive's re-entry: any
//! Running --(any *StateExited naming it)--> thread Done (the event's output)
//! Running --(Task/Wait/Parallel/MapStateAborted)--> thread Aborted
//! any phase --(a RetryBackoff timer on the event)--> Backoff (the error counted)
//! Parallel | Map --(ParallelStateSucceeded | MapStateSucceeded)--> Finishing
//! Parallel | Map --(ParallelStateFailed | MapStateFailed)--> Failed (the error known to decide)
//! Entered | Backoff --(MapStateFailed: a JSONata Map whose `Items` failed)--> Failed
//! Running --(EvaluationFailed: a JSONata expression of the state failed)--> Running (the
//!   failure that follows it is what changes the state)
//! any --(Lambda*: never written here)--> ApplyError::NotProduced
//! ```
//!
//! Invariants: `apply` is the only way the state changes (decide works on a clone through it);
//! ids are dense. Must not: look at the definition, the clock, or anything but the event.

use serde_json::Value;

use super::decide::states::{map, parallel, task, wait};
use super::{Error, Inconsistency};
use crate::history::{
    ErrorCause, EventDetails, ExecutionStarted, HistoryEvent, Payload, StateEntered, StateExited,
    TimerPurpose,
};

/// How an execution stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExecutionStatus {
    /// No event yet.
    NotStarted,
    /// Started, not closed.
    Running,
    /// Closed by `ExecutionSucceeded`.
    Succeeded,
    /// Closed by `ExecutionFailed`.
    Failed,
    /// Closed by `ExecutionTimedOut`.
    TimedOut,
    /// Closed by `ExecutionAborted`.
    Aborted,
}

impl ExecutionStatus {
    /// The AWS status name (`RUNNING`, `SUCCEEDED`, ...).
    pub fn aws_name(self) -> &'static str {
        match self {
            ExecutionStatus::NotStarted | ExecutionStatus::Running => "RUNNING",
            ExecutionStatus::Succeeded => "SUCCEEDED",
            ExecutionStatus::Failed => "FAILED",
            ExecutionStatus::TimedOut => "TIMED_OUT",
            ExecutionStatus::Aborted => "ABORTED",
        }
    }

    /// True for the four closed statuses.
    pub fn is_closed(self) -> bool {
        !matches!(self, ExecutionStatus::NotStarted | ExecutionStatus::Running)
    }
}

/// A timer that is armed: its id (the arming event's id) and due time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Timer {
    pub(crate) id: u32,
    pub(crate) due_ms: u64,
}

/// What the execution knows about itself from `ExecutionStarted`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ExecutionInfo {
    /// Shared with `ExecutionStarted` and the first state's input.
    pub(crate) input: Payload,
    pub(crate) execution_arn: String,
    pub(crate) state_machine_arn: String,
    pub(crate) role_arn: String,
    pub(crate) start_ms: u64,
    /// `ExecutionRedriven` events so far (`$$.Execution.RedriveCount`).
    pub(crate) redrive_count: u32,
}

/// The fold of an execution's events.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutionState {
    pub(crate) status: ExecutionStatus,
    pub(crate) info: Option<ExecutionInfo>,
    pub(crate) last_event_id: u32,
    pub(crate) cursor_event_id: u32,
    /// When the last event was a `MapIterationSucceeded`: the cursor before it, which the next
    /// `MapIterationStarted` points at.
    pub(crate) cursor_before_iteration_succeeded: Option<u32>,
    pub(crate) root: Thread,
    pub(crate) execution_timer: Option<Timer>,
    pub(crate) output: Option<Payload>,
    pub(crate) failure: Option<ErrorCause>,
    pub(crate) close_ms: Option<u64>,
    /// What redrive needs from the fold (see `redrive`).
    pub(crate) redrive: super::redrive::RedriveMemory,
    /// The workflow variables, by thread (see `variables`).
    pub(crate) variables: super::variables::ScopedVariables,
}

impl Default for ExecutionState {
    fn default() -> Self {
        Self::new()
    }
}

impl ExecutionState {
    /// The state before any event.
    pub fn new() -> Self {
        Self {
            status: ExecutionStatus::NotStarted,
            info: None,
            last_event_id: 0,
            cursor_event_id: 0,
            cursor_before_iteration_succeeded: None,
            root: Thread::Pending,
            execution_timer: None,
            output: None,
            failure: None,
            close_ms: None,
            redrive: super::redrive::RedriveMemory::default(),
            variables: super::variables::ScopedVariables::default(),
        }
    }

    /// Folds `events` into a fresh state.
    pub fn replay<'a>(events: impl IntoIterator<Item = &'a HistoryEvent>) -> Result<Self, Error> {
        let mut state = Self::new();
        for event in events {
            apply(&mut state, event)?;
        }
        Ok(state)
    }

    /// How the execution stands.
    pub fn status(&self) -> ExecutionStatus {
        self.status
    }

    /// The `previousEventId` the next event gets when it has these details (AWS's rule).
    pub fn previous_event_id_for(&self, details: &EventDetails) -> u32 {
        match (details, self.cursor_before_iteration_succeeded) {
            // A stop comes from outside the run: AWS links it to nothing.
            (EventDetails::ExecutionAborted(_), _) => 0,
            (EventDetails::MapIterationStarted(_), Some(id)) => id,
            _ => self.cursor_event_id,
        }
    }

    /// The id the next event links to by default (its `previousEventId`).
    pub(crate) fn cursor_event_id(&self) -> u32 {
        self.cursor_event_id
    }

    /// How many events the history holds (the last event's id).
    pub fn event_count(&self) -> u32 {
        self.last_event_id
    }

    /// The execution's output, once it succeeded.
    pub fn output(&self) -> Option<&Value> {
        self.output.as_deref()
    }

    /// The error and cause it failed, timed out or was aborted with.
    pub fn failure(&self) -> Option<&ErrorCause> {
        self.failure.as_ref()
    }

    /// The execution input, once started.
    pub fn input(&self) -> Option<&Value> {
        self.info.as_ref().map(|i| &*i.input)
    }

    /// The execution ARN, once started.
    pub fn execution_arn(&self) -> Option<&str> {
        self.info.as_ref().map(|i| i.execution_arn.as_str())
    }

    /// The state machine ARN, once started.
    pub fn state_machine_arn(&self) -> Option<&str> {
        self.info.as_ref().map(|i| i.state_machine_arn.as_str())
    }

    /// When the execution started (ms since the epoch).
    pub fn start_ms(&self) -> Option<u64> {
        self.info.as_ref().map(|i| i.start_ms)
    }

    /// When the execution closed (ms since the epoch).
    pub fn close_ms(&self) -> Option<u64> {
        self.close_ms
    }

    /// The thread at `scope`, if it exists.
    pub(crate) fn thread(&self, scope: &[u32]) -> Option<&Thread> {
        let mut thread = &self.root;
        for &index in scope {
            thread = thread.child(index)?;
        }
        Some(thread)
    }

    /// The thread at `scope`; Parallel branch threads are created (pending) on first use.
    pub(crate) fn thread_mut(&mut self, scope: &[u32]) -> Result<&mut Thread, ApplyError> {
        let mut thread = &mut self.root;
        for (depth, &index) in scope.iter().enumerate() {
            thread = match thread {
                Thread::Running(run) => match &mut run.phase {
                    Phase::Parallel { branches } => {
                        let index = index as usize;
                        if branches.len() <= index {
                            branches.resize(index + 1, Thread::Pending);
                        }
                        &mut branches[index]
                    }
                    Phase::Map { iterations, .. } => match iterations.get_mut(index as usize) {
                        Some(iteration) => &mut iteration.thread,
                        None => {
                            return Err(ApplyError::IterationNotStarted {
                                scope: scope.to_vec(),
                                index,
                                depth,
                            })
                        }
                    },
                    _ => {
                        return Err(ApplyError::NoChildren {
                            scope: scope.to_vec(),
                            state: run.name.clone(),
                            depth,
                        })
                    }
                },
                _ => {
                    return Err(ApplyError::NoRunningState {
                        scope: scope.to_vec(),
                        depth,
                    })
                }
            };
        }
        Ok(thread)
    }
}

/// One line of execution: the top level, a Parallel branch or a Map iteration.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Thread {
    /// Created, its first state not entered yet.
    Pending,
    /// Running a state.
    Running(Box<StateRun>),
    /// Its last state exited with this output (or, between an exit and the next entry inside
    /// one decision, the output that the next state receives).
    Done { output: Payload },
    /// Stopped because a sibling failed or the execution ended.
    Aborted,
}

impl Thread {
    fn child(&self, index: u32) -> Option<&Thread> {
        match self {
            Thread::Running(run) => match &run.phase {
                Phase::Parallel { branches } => branches.get(index as usize),
                Phase::Map { iterations, .. } => iterations
                    .get(index as usize)
                    .map(|iteration| &iteration.thread),
                _ => None,
            },
            _ => None,
        }
    }

    pub(crate) fn run(&self) -> Option<&StateRun> {
        match self {
            Thread::Running(run) => Some(run),
            _ => None,
        }
    }
}

/// A state being run by a thread.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StateRun {
    pub(crate) name: String,
    pub(crate) entered_event_id: u32,
    pub(crate) entered_ms: u64,
    /// The state's raw input (before InputPath), shared with its entered event.
    pub(crate) input: Payload,
    /// The errors retried so far, in order (`$$.State.RetryCount` is its length).
    pub(crate) retried_errors: Vec<String>,
    pub(crate) phase: Phase,
}

/// Where a running state is in its life.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Phase {
    /// Just entered (transient within a decision, except for a Fail state's last event).
    Entered,
    /// A Wait state waiting for its timer.
    Waiting { timer: Timer },
    /// A Task state with a task in flight.
    Task(TaskRun),
    /// Waiting for the retry backoff timer.
    Backoff { timer: Timer },
    /// The task's result arrived (transient).
    TaskSucceeded { output: Value },
    /// The state failed and no retry was armed (transient): caught or propagated next. For
    /// `ParallelStateFailed`/`MapStateFailed` the error is known to `decide` only.
    Failed { error: Option<ErrorCause> },
    /// A Parallel state running its branches.
    Parallel { branches: Vec<Thread> },
    /// A Map state running its iterations (index = position).
    Map {
        length: u32,
        iterations: Vec<Iteration>,
    },
    /// A Distributed Map waiting for its Map Run (`MapRunStarted`): the engine runs the
    /// children and answers with the run's outcome, as a task's backend answers a task.
    MapRun {
        /// The Map's length (its `MapStateStarted`).
        length: u32,
        /// The id of the `MapRunStarted` event: the Map Run's attempt, as a task's id.
        task_id: u32,
        /// The Map Run's ARN.
        map_run_arn: String,
        /// How many times the run was redriven (its `MapRunRedriven`'s count; 0 when started).
        redrive_count: u32,
    },
    /// A Distributed Map whose Map Run ended (`MapRunSucceeded`/`Failed`/`Aborted`): the Map's
    /// own end follows; kept for a redrive, which redrives the same run (`MapRunRedriven`).
    MapRunEnded {
        /// The Map's length.
        length: u32,
        /// The Map Run's ARN.
        map_run_arn: String,
        /// How many times the run was redriven so far.
        redrive_count: u32,
    },
    /// `ParallelStateSucceeded` / `MapStateSucceeded` seen (transient): output processing next.
    Finishing,
}

/// A task in flight.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TaskRun {
    /// The id of its `TaskScheduled` event.
    pub(crate) task_id: u32,
    /// 0-based attempt (retries so far).
    pub(crate) attempt: u32,
    /// The effective input sent.
    pub(crate) parameters: Value,
    /// The `Resource` ARN as written.
    pub(crate) resource_arn: String,
    /// `resourceType` / `resource` as the task events show them.
    pub(crate) resource_type: String,
    pub(crate) resource: String,
    pub(crate) stage: TaskStage,
    pub(crate) timeout_timer: Option<Timer>,
    /// `heartbeatInSeconds` of its `TaskScheduled` event.
    pub(crate) heartbeat_seconds: Option<u64>,
    /// `.waitForTaskToken` and activities: the attempt's task token (from its scheduling
    /// event).
    pub(crate) token: Option<String>,
    /// An activity task (`ActivityScheduled`): its task list (`None`: the default list).
    pub(crate) activity: Option<Box<ActivityTask>>,
    /// What the integration answered when it accepted the call (`TaskSubmitted`): a `.sync`
    /// task's job handle.
    pub(crate) submitted_output: Option<Box<Value>>,
}

/// What an activity task adds to a task.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ActivityTask {
    /// The task list named by `TaskList`/`TaskListPath`, if any.
    pub(crate) task_list: Option<String>,
}

/// How far a task got (leaves room for `.sync` and `.waitForTaskToken`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskStage {
    /// `TaskScheduled` seen.
    Scheduled,
    /// `TaskStarted` seen.
    Started,
    /// `TaskSubmitted` seen (`.sync`: the job runs).
    Submitted,
}

/// One Map iteration.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Iteration {
    pub(crate) thread: Thread,
    pub(crate) outcome: IterationOutcome,
}

/// What the Map state has recorded about an iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IterationOutcome {
    /// Started, no end event yet.
    Running,
    /// `MapIterationSucceeded`.
    Succeeded,
    /// `MapIterationFailed`.
    Failed,
    /// `MapIterationAborted`.
    Aborted,
}

/// Why an event does not fit the folded state: the `reason` of [`Error::Inconsistent`] (as
/// [`Inconsistency::Apply`]), which names the event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ApplyError {
    /// An exited event's `assignedVariables` holds a value that is not JSON text.
    #[error("the assigned variable '{name}' is not JSON text: {cause}")]
    AssignedVariableText {
        /// The variable's name.
        name: String,
        /// What the JSON reader said.
        cause: String,
    },
    /// The event's scope walks into a Map iteration that was never started.
    #[error("scope {scope:?}: Map iteration {index} at depth {depth} was not started")]
    IterationNotStarted {
        /// The event's scope.
        scope: Vec<u32>,
        /// The iteration's index.
        index: u32,
        /// Where in the scope.
        depth: usize,
    },
    /// The event's scope walks into a state that has no branches or iterations.
    #[error("scope {scope:?}: state '{state}' at depth {depth} has no branches or iterations")]
    NoChildren {
        /// The event's scope.
        scope: Vec<u32>,
        /// The state found there.
        state: String,
        /// Where in the scope.
        depth: usize,
    },
    /// The event's scope walks through a thread that runs no state.
    #[error("scope {scope:?}: no running state at depth {depth}")]
    NoRunningState {
        /// The event's scope.
        scope: Vec<u32>,
        /// Where in the scope.
        depth: usize,
    },
    /// The event needs a running state and its thread has none.
    #[error("{what} needs a running state, the thread is {thread}")]
    NotRunning {
        /// What needed it (an event type or a kind of event).
        what: &'static str,
        /// The thread's condition: pending, done or aborted.
        thread: &'static str,
    },
    /// A state was entered on a thread that is still running (or aborted).
    #[error("state entered on a {thread} thread")]
    EnteredOnThread {
        /// The thread's condition.
        thread: &'static str,
    },
    /// A state exited that is not the one running.
    #[error("exit of '{exited}' while '{running}' runs")]
    ExitOfOther {
        /// The state the event names.
        exited: String,
        /// The state running.
        running: String,
    },
    /// A Map iteration started out of order or past the Map's length.
    #[error("iteration {index} started after {started} of {length}")]
    IterationOutOfOrder {
        /// The iteration the event starts.
        index: u32,
        /// How many had started.
        started: usize,
        /// The Map's length.
        length: u32,
    },
    /// A Map iteration ended that is not running.
    #[error("iteration {index} is not running")]
    IterationNotRunning {
        /// The iteration's index.
        index: u32,
    },
    /// An event type this interpreter never writes.
    #[error("{event_type} is not produced by this interpreter yet")]
    NotProduced {
        /// The event's type.
        event_type: &'static str,
    },
    /// A redrive of an execution that is not failed, timed out or aborted.
    #[error(
        "only a failed, timed out or aborted execution can be redriven, this one is {status:?}"
    )]
    NotRedrivable {
        /// The execution's status.
        status: ExecutionStatus,
    },
    /// The event comes where its state's phase does not allow it; the text is the rule broken.
    #[error("{0}")]
    Misplaced(&'static str),
}

/// True for the events that do not move the `previousEventId` cursor.
fn advances_cursor(details: &EventDetails) -> bool {
    // AWS links nothing to a `TaskStateAborted` (recorded after Parallel and Map failures: the
    // next event points to the event before it).
    !matches!(
        details,
        EventDetails::ExecutionStarted(_)
            | EventDetails::TaskStateAborted
            | EventDetails::MapIterationFailed(_)
            | EventDetails::MapIterationAborted(_)
            | EventDetails::MapStateSucceeded
            | EventDetails::ParallelStateSucceeded
    )
}

/// Folds one event into the state. Fails (leaving `state` unusable) when the event does not fit.
pub fn apply(state: &mut ExecutionState, event: &HistoryEvent) -> Result<(), Error> {
    let bad = |reason: Inconsistency| Error::Inconsistent {
        event_id: event.id.0,
        event_type: event.details.type_name(),
        reason,
    };
    if event.id.0 != state.last_event_id + 1 {
        return Err(bad(Inconsistency::IdOutOfOrder {
            id: event.id.0,
            last_event_id: state.last_event_id,
        }));
    }
    if state.status.is_closed() && !matches!(event.details, EventDetails::ExecutionRedriven(_)) {
        return Err(bad(Inconsistency::AlreadyClosed {
            status: state.status,
        }));
    }
    if state.status == ExecutionStatus::NotStarted
        && !matches!(event.details, EventDetails::ExecutionStarted(_))
    {
        return Err(bad(Inconsistency::NotStartedFirst));
    }
    apply_details(state, event).map_err(|e| bad(e.into()))?;
    if let Some(arm) = &event.timer {
        let timer = Timer {
            id: event.id.0,
            due_ms: arm.due_ms,
        };
        apply_timer(state, &arm.owner, &arm.purpose, timer).map_err(|e| bad(e.into()))?;
    }
    state.last_event_id = event.id.0;
    state.cursor_before_iteration_succeeded =
        matches!(event.details, EventDetails::MapIterationSucceeded(_))
            .then_some(state.cursor_event_id);
    if advances_cursor(&event.details) {
        state.cursor_event_id = event.id.0;
    }
    Ok(())
}

std::thread_local! {
    /// The box of the last state that exited on this thread, reused by the next state entered
    /// (with its name's buffer): a chain of states then allocates no box and no name per state.
    static SPARE_RUN: std::cell::Cell<Option<Box<StateRun>>> = const { std::cell::Cell::new(None) };
    /// The `null` a spare box holds instead of its last input (shared, not allocated per state).
    static SPARE_INPUT: Payload = Payload::default();
}

/// The name length (bytes) beyond which a retired state's name buffer is not kept for reuse.
const SPARE_RUN_NAME_BYTES_MAX: usize = 256;

/// A freshly entered state: this thread's spare box when there is one, else a new box.
fn new_run(name: &str, entered_event_id: u32, entered_ms: u64, input: Payload) -> Box<StateRun> {
    match SPARE_RUN.try_with(std::cell::Cell::take).ok().flatten() {
        Some(mut run) => {
            run.name.clear();
            run.name.push_str(name);
            run.entered_event_id = entered_event_id;
            run.entered_ms = entered_ms;
            run.input = input;
            debug_assert!(run.retried_errors.is_empty() && run.phase == Phase::Entered);
            run
        }
        None => Box::new(StateRun {
            name: name.to_string(),
            entered_event_id,
            entered_ms,
            input,
            retried_errors: Vec::new(),
            phase: Phase::Entered,
        }),
    }
}

/// Keeps the box of a state that left its thread for the next [`new_run`] on this thread; its
/// contents are dropped now (only the name's buffer is kept, when small).
fn retire_run(mut run: Box<StateRun>) {
    if run.name.capacity() > SPARE_RUN_NAME_BYTES_MAX {
        return;
    }
    let Ok(null) = SPARE_INPUT.try_with(Payload::clone) else {
        // This thread is exiting: no spare is kept.
        return;
    };
    run.input = null;
    run.retried_errors = Vec::new();
    run.phase = Phase::Entered;
    let _ = SPARE_RUN.try_with(|spare| spare.set(Some(run)));
}

/// The state `thread` runs, or why `what` (an event type or a kind of event) cannot fold.
pub(crate) fn running<'a>(
    thread: &'a mut Thread,
    what: &'static str,
) -> Result<&'a mut StateRun, ApplyError> {
    match thread {
        Thread::Running(run) => Ok(run),
        other => Err(ApplyError::NotRunning {
            what,
            thread: thread_name(other),
        }),
    }
}

fn thread_name(thread: &Thread) -> &'static str {
    match thread {
        Thread::Pending => "pending",
        Thread::Running(_) => "running",
        Thread::Done { .. } => "done",
        Thread::Aborted => "aborted",
    }
}

/// Folds the event's details: a dispatch by event type. The execution's own events and the
/// entered/exited/aborted events every state shares are folded here; each state type's own
/// events by its module in `states/` (the `fold_*` functions at the end of each file). Every
/// event type is named (no catch-all), so a new one does not compile until it is folded.
fn apply_details(state: &mut ExecutionState, event: &HistoryEvent) -> Result<(), ApplyError> {
    use EventDetails as E;
    let scope = event.scope.as_slice();
    let at_ms = event.timestamp_ms;
    match &event.details {
        E::ExecutionStarted(d) => start(state, scope, d, at_ms),
        E::ExecutionSucceeded(d) => {
            close(state, ExecutionStatus::Succeeded, at_ms);
            state.output = Some(Payload::clone(&d.output));
            Ok(())
        }
        E::ExecutionFailed(d) => close_with_failure(state, ExecutionStatus::Failed, d, at_ms),
        E::ExecutionTimedOut(d) => close_with_failure(state, ExecutionStatus::TimedOut, d, at_ms),
        E::ExecutionAborted(d) => close_with_failure(state, ExecutionStatus::Aborted, d, at_ms),
        E::ExecutionRedriven(_) => {
            if !scope.is_empty() {
                return Err(ApplyError::Misplaced(
                    "ExecutionRedriven must be at the top level",
                ));
            }
            super::redrive::reopen(state, at_ms)
        }
        E::ChoiceStateEntered(d)
        | E::FailStateEntered(d)
        | E::MapStateEntered(d)
        | E::ParallelStateEntered(d)
        | E::PassStateEntered(d)
        | E::SucceedStateEntered(d)
        | E::TaskStateEntered(d)
        | E::WaitStateEntered(d) => enter(state, scope, d, event.id.0, at_ms),
        E::ChoiceStateExited(d)
        | E::MapStateExited(d)
        | E::ParallelStateExited(d)
        | E::PassStateExited(d)
        | E::SucceedStateExited(d)
        | E::TaskStateExited(d)
        | E::WaitStateExited(d) => exit(state, scope, d),
        E::TaskStateAborted
        | E::WaitStateAborted
        | E::ParallelStateAborted
        | E::MapStateAborted => abort(state, scope),
        E::TaskScheduled(d) => task::fold_scheduled(state, scope, event.id.0, d),
        E::ActivityScheduled(d) => task::fold_activity_scheduled(state, scope, event.id.0, d),
        E::ActivityStarted(_) => task::fold_activity_started(state, scope),
        E::ActivitySucceeded(d) => task::fold_activity_succeeded(state, scope, d),
        E::ActivityFailed(d) | E::ActivityTimedOut(d) | E::ActivityScheduleFailed(d) => {
            task::fold_activity_failed(state, scope, d)
        }
        E::TaskStarted(_) => task::fold_started(state, scope),
        E::TaskSubmitted(d) => task::fold_submitted(state, scope, d),
        E::TaskSucceeded(d) => task::fold_succeeded(state, scope, d),
        E::TaskFailed(d) | E::TaskTimedOut(d) | E::TaskStartFailed(d) | E::TaskSubmitFailed(d) => {
            task::fold_failed(state, scope, d)
        }
        E::ParallelStateStarted => parallel::fold_started(state, scope),
        E::MapStateStarted(d) => map::fold_started(state, scope, d),
        E::MapIterationStarted(d) => map::fold_iteration_started(state, scope, d),
        E::MapIterationSucceeded(d) => {
            map::fold_iteration_ended(state, scope, d, IterationOutcome::Succeeded)
        }
        E::MapIterationFailed(d) => {
            map::fold_iteration_ended(state, scope, d, IterationOutcome::Failed)
        }
        E::MapIterationAborted(d) => {
            map::fold_iteration_ended(state, scope, d, IterationOutcome::Aborted)
        }
        E::ParallelStateSucceeded | E::MapStateSucceeded => children_succeeded(state, scope),
        E::ParallelStateFailed | E::MapStateFailed => children_failed(state, scope),
        E::EvaluationFailed(_) => running(state.thread_mut(scope)?, "EvaluationFailed").map(drop),
        E::LambdaFunctionFailed(_)
        | E::LambdaFunctionScheduleFailed(_)
        | E::LambdaFunctionScheduled(_)
        | E::LambdaFunctionStartFailed(_)
        | E::LambdaFunctionStarted
        | E::LambdaFunctionSucceeded(_)
        | E::LambdaFunctionTimedOut(_) => Err(ApplyError::NotProduced {
            event_type: event.details.type_name(),
        }),
        E::MapRunRedriven(d) => map::fold_map_run_redriven(state, scope, event.id.0, d),
        E::MapRunStarted(d) => map::fold_map_run_started(state, scope, event.id.0, d),
        E::MapRunSucceeded | E::MapRunFailed(_) | E::MapRunAborted => {
            map::fold_map_run_ended(state, scope)
        }
    }
}

/// `ExecutionStarted`: the execution runs, its root thread waits for the first state.
fn start(
    state: &mut ExecutionState,
    scope: &[u32],
    started: &ExecutionStarted,
    at_ms: u64,
) -> Result<(), ApplyError> {
    if state.status != ExecutionStatus::NotStarted || !scope.is_empty() {
        return Err(ApplyError::Misplaced(
            "ExecutionStarted must be the first event, at the top level",
        ));
    }
    state.status = ExecutionStatus::Running;
    state.info = Some(ExecutionInfo {
        input: started.input.clone(),
        execution_arn: started.execution_arn.clone(),
        state_machine_arn: started.state_machine_arn.clone(),
        role_arn: started.role_arn.clone(),
        start_ms: at_ms,
        redrive_count: 0,
    });
    state.root = Thread::Pending;
    Ok(())
}

fn close(state: &mut ExecutionState, status: ExecutionStatus, at_ms: u64) {
    state.status = status;
    state.close_ms = Some(at_ms);
    state.execution_timer = None;
}

/// `ExecutionFailed` / `ExecutionTimedOut` / `ExecutionAborted`: closed with its error.
fn close_with_failure(
    state: &mut ExecutionState,
    status: ExecutionStatus,
    failure: &ErrorCause,
    at_ms: u64,
) -> Result<(), ApplyError> {
    close(state, status, at_ms);
    state.failure = Some(failure.clone());
    Ok(())
}

/// Any `*StateEntered`: the thread at `scope` (pending, or done with the previous state's
/// output) runs the state, just entered.
fn enter(
    state: &mut ExecutionState,
    scope: &[u32],
    entered: &StateEntered,
    entered_event_id: u32,
    at_ms: u64,
) -> Result<(), ApplyError> {
    // A state a redrive put back to *entered* is entered afresh (see `redrive`).
    let reentry = super::redrive::take_reentry(state, scope);
    super::redrive::forget_below(state, scope);
    // A new state in this thread: the branches and iterations of what ran here before are
    // over, their variables with them (a redrive's re-entry keeps them for the rerun).
    if !reentry {
        state.variables.clear_below(scope);
    }
    let thread = state.thread_mut(scope)?;
    if !reentry && !matches!(thread, Thread::Pending | Thread::Done { .. }) {
        return Err(ApplyError::EnteredOnThread {
            thread: thread_name(thread),
        });
    }
    // The state shares its input with the event (no copy).
    if let Thread::Running(run) = std::mem::replace(thread, Thread::Pending) {
        retire_run(run);
    }
    let input = Payload::clone(&entered.input);
    *thread = Thread::Running(new_run(&entered.name, entered_event_id, at_ms, input));
    Ok(())
}

/// Any `*StateExited`: the running state leaves its thread, done with the state's output.
fn exit(state: &mut ExecutionState, scope: &[u32], exited: &StateExited) -> Result<(), ApplyError> {
    let thread = state.thread_mut(scope)?;
    let run = running(thread, "a state exit")?;
    if run.name != exited.name {
        return Err(ApplyError::ExitOfOther {
            exited: exited.name.to_string(),
            running: run.name.clone(),
        });
    }
    // The thread's output is shared with the event (no copy).
    let output = Payload::clone(&exited.output);
    if let Thread::Running(run) = std::mem::replace(thread, Thread::Done { output }) {
        retire_run(run);
    }
    // The state's branches or iterations end with it; what it assigned is seen from the next
    // state of its thread on.
    state.variables.clear_below(scope);
    if let Some(assigned) = &exited.assigned {
        state.variables.assign(scope, assigned)?;
    }
    Ok(())
}

/// `TaskStateAborted` / `WaitStateAborted` / `ParallelStateAborted` / `MapStateAborted`: the
/// running state's thread is aborted (remembered first, for a redrive).
fn abort(state: &mut ExecutionState, scope: &[u32]) -> Result<(), ApplyError> {
    super::redrive::remember(state, scope);
    let thread = state.thread_mut(scope)?;
    running(thread, "an abort")?;
    *thread = Thread::Aborted;
    Ok(())
}

/// `ParallelStateSucceeded` / `MapStateSucceeded`: the branches or iterations are over, output
/// processing comes next. Shared by Parallel and Map: either event ends either kind's children.
fn children_succeeded(state: &mut ExecutionState, scope: &[u32]) -> Result<(), ApplyError> {
    let run = running(state.thread_mut(scope)?, "a Parallel/Map success")?;
    if !matches!(
        run.phase,
        Phase::Parallel { .. } | Phase::Map { .. } | Phase::MapRunEnded { .. }
    ) {
        return Err(ApplyError::Misplaced("no branches or iterations running"));
    }
    run.phase = Phase::Finishing;
    Ok(())
}

/// `ParallelStateFailed` / `MapStateFailed`: the branches or iterations give way to a bare
/// failure whose error only `decide` knows (remembered first, for a redrive). Shared by
/// Parallel and Map like [`children_succeeded`].
fn children_failed(state: &mut ExecutionState, scope: &[u32]) -> Result<(), ApplyError> {
    super::redrive::remember(state, scope);
    let run = running(state.thread_mut(scope)?, "a Parallel/Map failure")?;
    // A JSONata Map records its failure also when it fails before it starts (its `Items`).
    let before_start = matches!(run.phase, Phase::Entered | Phase::Backoff { .. });
    let children = matches!(
        run.phase,
        Phase::Parallel { .. } | Phase::Map { .. } | Phase::MapRunEnded { .. }
    );
    if !children && !before_start {
        return Err(ApplyError::Misplaced("no branches or iterations running"));
    }
    run.phase = Phase::Failed { error: None };
    Ok(())
}

/// Folds the timer an event arms for the state (or the execution) that owns it.
pub(crate) fn apply_timer(
    state: &mut ExecutionState,
    owner: &[u32],
    purpose: &TimerPurpose,
    timer: Timer,
) -> Result<(), ApplyError> {
    if let TimerPurpose::ExecutionTimeout = purpose {
        state.execution_timer = Some(timer);
        return Ok(());
    }
    let run = running(state.thread_mut(owner)?, "a timer")?;
    match purpose {
        TimerPurpose::Wait => wait::fold_timer(run, timer),
        TimerPurpose::RetryBackoff { error } => {
            run.retried_errors.push(error.clone());
            run.phase = Phase::Backoff { timer };
            Ok(())
        }
        TimerPurpose::TaskTimeout => task::fold_timeout_timer(run, timer),
        TimerPurpose::ExecutionTimeout => unreachable!("handled above"),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use serde_json::json;

    fn event(id: u32, details: EventDetails) -> HistoryEvent {
        HistoryEvent {
            id: crate::history::EventId(id),
            previous_event_id: id - 1,
            timestamp_ms: u64::from(id),
            details,
            scope: Vec::new(),
            timer: None,
        }
    }

    fn entered(name: &str, input: &Payload) -> EventDetails {
        EventDetails::PassStateEntered(crate::history::StateEntered {
            name: name.into(),
            input: Payload::clone(input),
            input_truncated: false,
        })
    }

    fn exited(name: &str, output: &Payload) -> EventDetails {
        EventDetails::PassStateExited(crate::history::StateExited {
            name: name.into(),
            output: Payload::clone(output),
            output_truncated: false,
            assigned: None,
        })
    }

    fn started(input: &Payload) -> HistoryEvent {
        event(
            1,
            EventDetails::ExecutionStarted(Box::new(crate::history::ExecutionStarted {
                input: Payload::clone(input),
                input_truncated: false,
                role_arn: "role".into(),
                state_machine_alias_arn: None,
                state_machine_version_arn: None,
                execution_arn: "exec".into(),
                state_machine_arn: "machine".into(),
                input_text: None,
                map_run_arn: None,
            })),
        )
    }

    /// The fold's typed errors reach the caller as `Error::Inconsistent` with the event named
    /// and the reason worded as before.
    #[test]
    fn events_that_do_not_fit_name_the_event_and_the_typed_reason() {
        let input = Payload::new(json!({}));
        let cases = [
            (
                vec![started(&input), event(2, exited("A", &input))],
                ApplyError::NotRunning {
                    what: "a state exit",
                    thread: "pending",
                },
                "event 2 (PassStateExited) does not fit the execution state: \
                 a state exit needs a running state, the thread is pending",
            ),
            (
                vec![
                    started(&input),
                    event(2, entered("A", &input)),
                    event(3, exited("B", &input)),
                ],
                ApplyError::ExitOfOther {
                    exited: "B".into(),
                    running: "A".into(),
                },
                "event 3 (PassStateExited) does not fit the execution state: \
                 exit of 'B' while 'A' runs",
            ),
            (
                vec![
                    started(&input),
                    event(2, entered("A", &input)),
                    event(
                        3,
                        EventDetails::TaskSucceeded(Box::new(crate::history::TaskOutput {
                            resource_type: "lambda".into(),
                            resource: "invoke".into(),
                            output: json!(1),
                            output_truncated: false,
                        })),
                    ),
                ],
                ApplyError::Misplaced("no task in flight"),
                "event 3 (TaskSucceeded) does not fit the execution state: no task in flight",
            ),
        ];
        for (events, reason, text) in cases {
            let (last, before) = events.split_last().expect("cases have events");
            let mut state = ExecutionState::replay(before).expect("the prefix folds");
            assert_eq!(
                apply_details(&mut state.clone(), last).expect_err("does not fit"),
                reason
            );
            let error = apply(&mut state, last).expect_err("does not fit");
            assert_eq!(error.to_string(), text);
        }
    }

    /// The fold's own checks reach the caller typed, worded as before.
    #[test]
    fn events_out_of_place_give_a_typed_inconsistency() {
        let input = Payload::new(json!({}));
        let closed = event(
            2,
            EventDetails::ExecutionFailed(ErrorCause {
                error: Some("E".into()),
                cause: None,
            }),
        );
        let cases = [
            (
                vec![started(&input), event(3, entered("A", &input))],
                Inconsistency::IdOutOfOrder {
                    id: 3,
                    last_event_id: 1,
                },
                "event 3 (PassStateEntered) does not fit the execution state: \
                 id 3 does not follow 1",
            ),
            (
                vec![started(&input), closed, event(3, entered("A", &input))],
                Inconsistency::AlreadyClosed {
                    status: ExecutionStatus::Failed,
                },
                "event 3 (PassStateEntered) does not fit the execution state: \
                 the execution is already closed (Failed)",
            ),
            (
                vec![event(1, entered("A", &input))],
                Inconsistency::NotStartedFirst,
                "event 1 (PassStateEntered) does not fit the execution state: \
                 the first event must be ExecutionStarted",
            ),
        ];
        for (events, reason, text) in cases {
            let (last, before) = events.split_last().expect("cases have events");
            let mut state = ExecutionState::replay(before).expect("the prefix folds");
            let error = apply(&mut state, last).expect_err("does not fit");
            assert_eq!(error.to_string(), text);
            match error {
                Error::Inconsistent {
                    reason: actual,
                    event_id,
                    ..
                } => {
                    assert_eq!(actual, reason);
                    assert_eq!(event_id, last.id.0);
                }
                other => panic!("not an inconsistency: {other:?}"),
            }
        }
    }

    /// `decide`'s reasons print as the sentences they were built from before they were typed.
    #[test]
    fn decide_inconsistencies_print_as_before() {
        let cases = [
            (
                Inconsistency::NoRunningStateAt { scope: vec![0, 2] },
                "no running state at scope [0, 2]",
            ),
            (Inconsistency::NoBranch { index: 3 }, "no branch 3"),
            (
                Inconsistency::NoBranches { state: "P".into() },
                "'P' has no branches",
            ),
            (
                Inconsistency::UnstartedThread { scope: vec![1] },
                "advance of an unstarted thread [1]",
            ),
            (
                Inconsistency::ImpossiblePhase {
                    state: "W".into(),
                    state_type: "Wait",
                    phase: "Finishing".into(),
                },
                "state 'W' (Wait) cannot be in phase Finishing",
            ),
            (
                Inconsistency::MapParametersChanged {
                    cause: "gone".into(),
                },
                "Map parameters changed: gone",
            ),
            (
                Inconsistency::BranchNotStarted { index: 4 },
                "branch 4 was never started",
            ),
            (Inconsistency::from("not started"), "not started"),
            (
                Inconsistency::from(ApplyError::IterationNotRunning { index: 5 }),
                "iteration 5 is not running",
            ),
        ];
        for (reason, text) in cases {
            assert_eq!(reason.to_string(), text);
        }
    }

    /// The dispatch routes every event type: exactly the types this interpreter never writes
    /// answer `NotProduced`, and every other type reaches a fold (here refused or accepted for
    /// its own reason, since a bare running execution has no state for most of them).
    #[test]
    fn every_event_type_is_folded_except_those_never_written() {
        let never_written = [
            "LambdaFunctionFailed",
            "LambdaFunctionScheduleFailed",
            "LambdaFunctionScheduled",
            "LambdaFunctionStartFailed",
            "LambdaFunctionStarted",
            "LambdaFunctionSucceeded",
            "LambdaFunctionTimedOut",
        ];
        let input = Payload::new(json!({}));
        let running = ExecutionState::replay([&started(&input)]).expect("folds");
        let samples = EventDetails::samples();
        assert_eq!(samples.len(), EventDetails::TYPE_NAMES.len());
        for details in samples {
            let type_name = details.type_name();
            let result = apply_details(&mut running.clone(), &event(2, details));
            let not_produced = matches!(result, Err(ApplyError::NotProduced { .. }));
            assert_eq!(
                not_produced,
                never_written.contains(&type_name),
                "{type_name}: {result:?}"
            );
        }
    }

    #[test]
    fn states_share_payloads_with_events_and_a_reused_run_holds_only_the_new_state() {
        let first = Payload::new(json!({"n": 1}));
        let second = Payload::new(json!({"n": 2}));
        let events = [
            event(
                1,
                EventDetails::ExecutionStarted(Box::new(crate::history::ExecutionStarted {
                    input: Payload::clone(&first),
                    input_truncated: false,
                    role_arn: "role".into(),
                    state_machine_alias_arn: None,
                    state_machine_version_arn: None,
                    execution_arn: "exec".into(),
                    state_machine_arn: "machine".into(),
                    input_text: None,
                    map_run_arn: None,
                })),
            ),
            event(2, entered("A rather long first state name", &first)),
            event(3, exited("A rather long first state name", &second)),
            event(4, entered("B", &second)),
        ];
        let state = ExecutionState::replay(&events).expect("folds");
        let Thread::Running(run) = &state.root else {
            panic!("B runs: {:?}", state.root);
        };
        assert_eq!(run.name, "B");
        assert_eq!((run.entered_event_id, run.entered_ms), (4, 4));
        assert_eq!(*run.input, json!({"n": 2}));
        assert!(
            Arc::ptr_eq(&run.input, &second),
            "the input is the event's, not a copy"
        );
        assert!(run.retried_errors.is_empty() && run.phase == Phase::Entered);
        assert!(Arc::ptr_eq(
            &state.info.as_ref().expect("started").input,
            &first
        ));
        // Folding the same events again (the spare run of this thread now reused) agrees.
        assert_eq!(ExecutionState::replay(&events).expect("folds"), state);
    }
}
