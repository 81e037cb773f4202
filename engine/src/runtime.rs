//! runtime: the engine's loop. `drive` runs one trigger through decide -> durable append ->
//! apply -> effects; effects spawn task handlers on the tokio runtime, arm timers in a due-time
//! heap, and wake close waiters. The timer thread (optional) fires due timers by the injected
//! clock.
//!
//! Invariants: the slot lock of an execution is held from `decide` to `apply`, so triggers of
//! one execution never interleave and the folded state always equals the *written* log. Every
//! decision is durable when its append returns, except one: a handler's answer that only
//! records `TaskSubmitted` (no effect) is written without waiting for a sync
//! (`decide_and_record_handler_answer`); the next synced commit makes it durable, a read of
//! the history syncs first, and its loss in a crash equals a crash just before it was recorded
//! (the task is dispatched again). So: effects are performed, and callers answered, only after
//! their decision is durable, and nothing is done on the strength of a record that is not.
//! Timers and handler answers are at-least-once: a stale one yields an empty decision. A
//! handler's answer is kept (`tokens::HandlerAnswers`) from the poll that finished the call
//! until one thread records it under the slot lock. Must not: hold any engine-wide lock
//! across an append.

use std::cmp::Reverse;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use serde_json::Value;

use super::handlers::Parking;
use super::{Engine, Error, Inner, StartedExecution};
use crate::limits::{TIMERS_PER_EXECUTION_TYPICAL, TIMER_HEAP_COMPACT_LEN_MIN, TIMER_POLL_MS_MAX};
use statelog_core::asl::StateMachine;
use statelog_core::history::EventId;
#[cfg(debug_assertions)]
use statelog_core::interpreter::apply;
use statelog_core::interpreter::{
    decide, decide_owned, Effect, ExecutionState, ExecutionStatus, StartRequest, TaskInvocation,
    Trigger,
};
use statelog_store::Machine;

/// One open execution: its folded state and definition, behind the lock that serializes its
/// triggers.
pub(crate) struct Slot {
    pub(crate) state: Mutex<SlotState>,
}

pub(crate) struct SlotState {
    pub(crate) execution: ExecutionState,
    pub(crate) definition: Arc<StateMachine>,
}

impl Slot {
    pub(crate) fn new(execution: ExecutionState, definition: Arc<StateMachine>) -> Self {
        Self {
            state: Mutex::new(SlotState {
                execution,
                definition,
            }),
        }
    }
}

/// An armed timer, ordered by due time.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct TimerEntry {
    pub(crate) due_ms: u64,
    pub(crate) execution_arn: Arc<str>,
    pub(crate) timer_id: u32,
}

/// Wakes the timer thread when a timer is armed or the engine shuts down.
#[derive(Default)]
pub(crate) struct TimerSignal {
    changed: Mutex<bool>,
    condvar: Condvar,
}

impl TimerSignal {
    pub(crate) fn notify(&self) {
        *self.changed.lock() = true;
        self.condvar.notify_all();
    }
}

/// Starts a new execution, or answers for an existing one with the same name (see
/// `Engine::start_execution`).
pub(crate) fn start(
    engine: &Engine,
    machine: &Machine,
    definition: Arc<StateMachine>,
    execution_arn: String,
    input: Value,
    input_text: &str,
) -> Result<StartedExecution, Error> {
    let inner = &engine.inner;
    let key: Arc<str> = Arc::from(execution_arn.as_str());
    loop {
        let existing = {
            let mut open = inner.open.lock();
            match open.get(&key) {
                Some(slot) => Some(slot.clone()),
                None => {
                    if inner.store.execution(&execution_arn).is_some() {
                        return Err(Error::ExecutionAlreadyExists { execution_arn });
                    }
                    let slot = Arc::new(Slot::new(ExecutionState::new(), definition.clone()));
                    // Lock before publishing, so a racing start with the same name waits for
                    // this one to be durable (or gone).
                    let mut guard = slot.state.lock();
                    open.insert(key.clone(), slot.clone());
                    drop(open);
                    let request = StartRequest {
                        input: input.clone(),
                        input_text: Some(input_text.to_string()),
                        execution_arn: execution_arn.clone(),
                        state_machine_arn: engine.state_machine_arn(&machine.name),
                        role_arn: machine.role_arn.clone(),
                    };
                    let result =
                        decide_and_append(engine, &key, &mut guard, Trigger::Start(request));
                    let effects = match result {
                        Ok(effects) => effects,
                        Err(error) => {
                            drop(guard);
                            let mut open = inner.open.lock();
                            if open.get(&key).is_some_and(|s| Arc::ptr_eq(s, &slot)) {
                                open.remove(&key);
                            }
                            return Err(error);
                        }
                    };
                    let start_ms = guard.execution.start_ms().unwrap_or_default();
                    drop(guard);
                    engine.perform(&key, &slot, effects);
                    return Ok(StartedExecution {
                        execution_arn,
                        start_ms,
                    });
                }
            }
        };
        let Some(slot) = existing else { continue };
        let guard = slot.state.lock();
        let status = guard.execution.status();
        if status == ExecutionStatus::NotStarted {
            // The racing start failed and is removing its slot; try again.
            drop(guard);
            std::thread::yield_now();
            continue;
        }
        if status.is_closed() || guard.execution.input() != Some(&input) {
            return Err(Error::ExecutionAlreadyExists { execution_arn });
        }
        return Ok(StartedExecution {
            execution_arn,
            start_ms: guard.execution.start_ms().unwrap_or_default(),
        });
    }
}

/// Decides, appends durably and adopts the decided state; returns the effects to perform.
pub(crate) fn decide_and_append(
    engine: &Engine,
    execution_arn: &str,
    slot: &mut SlotState,
    trigger: Trigger,
) -> Result<Vec<Effect>, Error> {
    decide_and_append_with_token(engine, execution_arn, slot, trigger, None)
}

/// `decide_and_append`; with `redrive_token`, the redrive's client token is written in the same
/// atomic batch as `ExecutionRedriven` (`Store::append_events_with_redrive_token`).
pub(crate) fn decide_and_append_with_token(
    engine: &Engine,
    execution_arn: &str,
    slot: &mut SlotState,
    trigger: Trigger,
    redrive_token: Option<&str>,
) -> Result<Vec<Effect>, Error> {
    let inner = &engine.inner;
    let now_ms = inner.options.clock.now_ms();
    let decision = if slot.execution.status() == ExecutionStatus::NotStarted {
        // Nothing to lose on failure: decide on a fresh state without copying it.
        let mut draws = inner.entropy.draws();
        let decision = decide_owned(
            &slot.definition,
            ExecutionState::new(),
            trigger,
            now_ms,
            &inner.interpreter_options,
            &mut draws,
        )?;
        // A failed draw (a task token) refuses the decision before anything is written.
        draws.finish()?;
        decision
    } else {
        decide_at(inner, slot, &slot.execution, trigger, now_ms)?
    };
    commit(
        engine,
        execution_arn,
        slot,
        decision,
        now_ms,
        redrive_token,
        true,
    )
}

/// A token's answer (`trigger`, for task `task_id`) with, when given, the handler's answer
/// that came before it but was not recorded yet (`before`): `before` is decided first and the
/// token's answer on the state it leaves, both in one commit. Returns the effects and whether
/// the token's answer found its task still waiting (a handler's failure may have closed it:
/// then only `before` is recorded).
pub(crate) fn decide_and_append_after(
    engine: &Engine,
    execution_arn: &str,
    slot: &mut SlotState,
    before: Option<Trigger>,
    trigger: Trigger,
    task_id: EventId,
) -> Result<(Vec<Effect>, bool), Error> {
    let Some(before) = before else {
        return Ok((
            decide_and_append(engine, execution_arn, slot, trigger)?,
            true,
        ));
    };
    let inner = &engine.inner;
    let now_ms = inner.options.clock.now_ms();
    let mut first = decide_at(inner, slot, &slot.execution, before, now_ms)?;
    let waiting = first.next_state.waiting_ref(task_id).is_some();
    if waiting {
        let second = decide_at(inner, slot, &first.next_state, trigger, now_ms)?;
        first.events.extend(second.events);
        first.effects.extend(second.effects);
        first.next_state = second.next_state;
    }
    let effects = commit(engine, execution_arn, slot, first, now_ms, None, true)?;
    Ok((effects, waiting))
}

/// Records a handler's answer (`trigger`, a `TaskSucceeded`/`TaskFailed` of a handler). When
/// its decision is only the `TaskSubmitted` of a waiting task, with no effect, it is written
/// without waiting for a sync (`Store::append_prepared_unsynced`): nothing is done on the
/// strength of it, the next synced commit of the log makes it durable (the token answer's
/// commit is one), and losing it in a crash is a crash just before it was recorded (the task
/// is dispatched again on open, its handler called again, as for any unrecorded answer).
pub(crate) fn decide_and_record_handler_answer(
    engine: &Engine,
    execution_arn: &str,
    slot: &mut SlotState,
    trigger: Trigger,
) -> Result<Vec<Effect>, Error> {
    let inner = &engine.inner;
    let now_ms = inner.options.clock.now_ms();
    let decision = decide_at(inner, slot, &slot.execution, trigger, now_ms)?;
    let submission_only = decision.effects.is_empty()
        && matches!(
            decision.events.as_slice(),
            [event] if matches!(event.details, statelog_core::history::EventDetails::TaskSubmitted(_))
        );
    commit(
        engine,
        execution_arn,
        slot,
        decision,
        now_ms,
        None,
        !submission_only,
    )
}

/// `interpreter::decide` of `trigger` on `state` (the slot's, or one decided from it) with the
/// slot's definition and the engine's interpreter options and entropy, at `now_ms`.
fn decide_at(
    inner: &Inner,
    slot: &SlotState,
    state: &ExecutionState,
    trigger: Trigger,
    now_ms: u64,
) -> Result<statelog_core::interpreter::Decision, Error> {
    let mut draws = inner.entropy.draws();
    let decision = decide(
        &slot.definition,
        state,
        trigger,
        now_ms,
        &inner.interpreter_options,
        &mut draws,
    )?;
    // A failed draw (a task token, jitter) refuses the decision before anything is written.
    draws.finish()?;
    Ok(decision)
}

/// Appends a decision (one log batch; durable unless `sync` is false, see
/// `decide_and_record_handler_answer`) and adopts its state; returns its effects.
fn commit(
    engine: &Engine,
    execution_arn: &str,
    slot: &mut SlotState,
    mut decision: statelog_core::interpreter::Decision,
    now_ms: u64,
    redrive_token: Option<&str>,
    sync: bool,
) -> Result<Vec<Effect>, Error> {
    let inner = &engine.inner;
    if decision.events.is_empty() {
        return Ok(decision.effects);
    }
    let handovers = claim_for_waiting_pollers(
        engine,
        execution_arn,
        &slot.definition,
        &mut decision,
        now_ms,
    )?;
    let commit_started = std::time::Instant::now();
    // A redrive's client token rides in the batch of its `ExecutionRedriven`.
    let prepared = match redrive_token {
        Some(token) => {
            inner
                .store
                .prepare_events_with_redrive_token(execution_arn, &decision.events, token)?
        }
        None => inner
            .store
            .prepare_events(execution_arn, &decision.events)?,
    };
    let tally = super::metrics::Tally::of(&decision.events);
    #[cfg(debug_assertions)]
    {
        // Paired check: the decided state is the fold of the events about to be made durable.
        let mut folded = slot.execution.clone();
        for event in &decision.events {
            apply(&mut folded, event)?;
        }
        debug_assert!(folded == decision.next_state, "decide and apply disagree");
    }
    // Encoded: drop the events now, while they are in this thread's cache (after the commit
    // wait they are cold, and freeing them cost a tenth of all cycles with 512 threads).
    statelog_core::interpreter::recycle_events(decision.events);
    if sync {
        inner.store.append_prepared(prepared)?;
    } else {
        inner.store.append_prepared_unsynced(prepared)?;
    }
    let commit_micros = u64::try_from(commit_started.elapsed().as_micros()).unwrap_or(u64::MAX);
    inner.counters.record_tally(tally, commit_micros);
    slot.execution = decision.next_state;
    if !handovers.is_empty() {
        let key: Arc<str> = Arc::from(execution_arn);
        for (task_id, heartbeat_seconds, reservation, task) in handovers {
            if let Some(seconds) = heartbeat_seconds {
                inner.heartbeats.arm(&key, task_id, seconds, now_ms);
            }
            reservation.deliver(&key, task_id, task);
        }
    }
    Ok(decision.effects)
}

/// A task claimed in the commit that schedules it, for the poller that waits for it.
type Handover = (
    EventId,
    Option<u64>,
    super::activities::Reservation,
    super::ActivityTask,
);

/// For every activity task `decision` schedules into a list where a poller waits, takes that
/// poller and adds the claim (`ActivityStarted` with its worker name) to the decision, so
/// scheduling and claiming share one commit. The tasks are handed over once it is durable.
fn claim_for_waiting_pollers(
    engine: &Engine,
    execution_arn: &str,
    definition: &StateMachine,
    decision: &mut statelog_core::interpreter::Decision,
    now_ms: u64,
) -> Result<Vec<Handover>, Error> {
    let mut handovers = Vec::new();
    let scheduled: Vec<EventId> = decision
        .effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::InvokeTask(task) if super::activities::is_activity_resource(&task.resource) => {
                Some(task.task_id)
            }
            _ => None,
        })
        .collect();
    for task_id in scheduled {
        let Some(waiting) = decision.next_state.waiting_task(task_id) else {
            continue;
        };
        let list = waiting
            .task_list
            .as_deref()
            .unwrap_or(&waiting.resource_arn);
        let Some(reservation) = engine.inner.activities.reserve_poller(execution_arn, list) else {
            continue;
        };
        let input = serde_json::to_string(&waiting.input).map_err(|e| Error::Runtime {
            reason: format!("cannot render an activity input: {e}"),
        })?;
        let trigger = Trigger::ActivityStarted {
            task_id,
            worker_name: reservation.worker_name.clone(),
        };
        let mut draws = engine.inner.entropy.draws();
        let claim = decide(
            definition,
            &decision.next_state,
            trigger,
            now_ms,
            &engine.inner.interpreter_options,
            &mut draws,
        )?;
        draws.finish()?;
        decision.events.extend(claim.events);
        decision.effects.extend(claim.effects);
        decision.next_state = claim.next_state;
        let task = super::ActivityTask {
            task_token: waiting.token,
            input,
            execution_arn: execution_arn.to_string(),
            activity_arn: waiting.resource_arn,
            scheduled_event_id: task_id.0,
            started_event_id: decision.next_state.event_count(),
        };
        handovers.push((task_id, waiting.heartbeat_seconds, reservation, task));
    }
    Ok(handovers)
}

impl Engine {
    /// Runs one trigger for an open execution. A trigger for a closed or unknown execution is
    /// stale and does nothing.
    pub(crate) fn drive(&self, execution_arn: &str, trigger: Trigger) -> Result<(), Error> {
        let Some(slot) = self.inner.open.lock().get(execution_arn).cloned() else {
            return Ok(());
        };
        let effects = {
            let mut guard = slot.state.lock();
            if guard.execution.status().is_closed() && !matches!(trigger, Trigger::Redrive) {
                return Ok(());
            }
            decide_and_append(self, execution_arn, &mut guard, trigger)?
        };
        self.perform(execution_arn, &slot, effects);
        Ok(())
    }

    /// Like `drive`, for background work: a failure is kept in `background_errors`.
    pub(crate) fn drive_in_background(&self, execution_arn: &str, trigger: Trigger) {
        let what = trigger.name();
        if let Err(error) = self.drive(execution_arn, trigger) {
            self.inner
                .background_errors
                .lock()
                .push(format!("{what} for {execution_arn}: {error}"));
        }
    }

    /// Performs the effects of a durable decision.
    pub(crate) fn perform(&self, execution_arn: &str, slot: &Arc<Slot>, effects: Vec<Effect>) {
        let key: Arc<str> = Arc::from(execution_arn);
        for effect in effects {
            match effect {
                Effect::InvokeTask(invocation) => self.dispatch(&key, invocation),
                Effect::ArmTimer {
                    timer_id, due_ms, ..
                } => {
                    self.inner.timers.lock().push(Reverse(TimerEntry {
                        due_ms,
                        execution_arn: key.clone(),
                        timer_id: timer_id.0,
                    }));
                    self.inner.timer_signal.notify();
                }
                // The handler's future is dropped; had it answered already, that answer is a
                // stale trigger. Its heartbeat clock stops, an unclaimed activity task leaves
                // its list, and a `.sync` job is asked to cancel in the background.
                Effect::CancelTask { task_id } => {
                    if let Some(running) =
                        self.inner.running.lock().remove(&(key.clone(), task_id.0))
                    {
                        running.abort();
                    }
                    self.inner.heartbeats.disarm(execution_arn, task_id);
                    self.inner.activities.withdraw(execution_arn, task_id);
                    self.job_cancelled(execution_arn, task_id);
                    self.cancel_job(execution_arn, task_id);
                }
                Effect::Closed { .. } => {
                    {
                        let mut open = self.inner.open.lock();
                        if open.get(&key).is_some_and(|s| Arc::ptr_eq(s, slot)) {
                            open.remove(&key);
                        }
                    }
                    *self.inner.closed_count.lock() += 1;
                    self.inner.closed_changed.notify_all();
                    self.job_closed(execution_arn);
                    self.compact_timers();
                }
            }
        }
    }

    /// Drops the timers of closed executions once they are most of the heap, so a closed
    /// execution does not stay in memory until its (possibly year-long) timers come due.
    /// Amortized O(1) per close.
    fn compact_timers(&self) {
        let mut timers = self.inner.timers.lock();
        if timers.len() < TIMER_HEAP_COMPACT_LEN_MIN {
            return;
        }
        let open = self.inner.open.lock();
        if timers.len() < 2 * (open.len() + 1) * TIMERS_PER_EXECUTION_TYPICAL {
            return;
        }
        timers.retain(|t| open.contains_key(&t.0.execution_arn));
    }

    /// Calls the task's handler on the runtime, or parks the task until one is registered.
    pub(crate) fn dispatch(&self, execution_arn: &Arc<str>, invocation: TaskInvocation) {
        if super::activities::is_activity_resource(&invocation.resource) {
            // Activity tasks go to their task list; workers poll for them.
            self.offer_activity_task(execution_arn, invocation.task_id);
            return;
        }
        let (handler, invocation) = match self.inner.handlers.get(&invocation.resource) {
            Some(handler) => (handler, invocation),
            None => {
                if let Some(cause) = self.undeclared_pattern(&invocation.resource) {
                    let trigger = Trigger::TaskFailed {
                        task_id: invocation.task_id,
                        error: "States.Runtime".to_string(),
                        cause,
                    };
                    self.drive_in_background(execution_arn, trigger);
                    return;
                }
                // Looked up again under the registration's lock: a handler registered since
                // the lookup above has taken the parked tasks already, so parking now would
                // lose this one.
                match self
                    .inner
                    .handlers
                    .park_unless_registered(execution_arn, invocation)
                {
                    Parking::Parked => return,
                    Parking::Registered(handler, invocation) => (handler, invocation),
                }
            }
        };
        let task_id = invocation.task_id;
        if let Some(seconds) = invocation.heartbeat_seconds {
            let now_ms = self.inner.options.clock.now_ms();
            self.inner
                .heartbeats
                .arm(execution_arn, task_id, seconds, now_ms);
        }
        let context = with_attempt_id(invocation.context, execution_arn, task_id);
        let call = handler.call(invocation.input, context);
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        let arn = execution_arn.clone();
        self.inner.in_flight.lock().in_flight += 1;
        // The answer is kept in `answers` in the poll that finishes the call, so a token answer
        // that comes after the call returned always finds it (see `tokens::HandlerAnswers`).
        let keep = (weak.clone(), arn.clone());
        let running = self.inner.handle.spawn(async move {
            let outcome = call.await;
            if let Some(inner) = keep.0.upgrade() {
                inner.answers.put(&keep.1, task_id, outcome);
            }
        });
        let running_key = (arn.clone(), task_id.0);
        self.inner
            .running
            .lock()
            .insert(running_key, running.abort_handle());
        self.inner.handle.spawn(async move {
            let joined = running.await;
            let cancelled = joined.as_ref().is_err_and(|join| join.is_cancelled());
            // A panicking handler fails its task instead of leaving it unanswered forever.
            if let Err(join) = joined {
                if !cancelled {
                    if let Some(inner) = weak.upgrade() {
                        let failure = super::TaskError::new(
                            "States.TaskFailed",
                            format!("the task handler panicked: {join}"),
                        );
                        inner.answers.put(&arn, task_id, Err(failure));
                    }
                }
            }
            // The append blocks on an fsync: keep it off the async workers.
            let _ = tokio::task::spawn_blocking(move || {
                record_answer(&weak, &arn, task_id, cancelled);
            })
            .await;
        });
    }

    /// Records the handler answer kept for task `task_id`, taken under the execution's lock
    /// (a token answer takes it under the same lock, so exactly one of the two records it).
    pub(crate) fn drive_handler_answer(
        &self,
        execution_arn: &Arc<str>,
        task_id: EventId,
    ) -> Result<(), Error> {
        let slot = self.inner.open.lock().get(execution_arn).cloned();
        let Some(slot) = slot else {
            self.inner.answers.take(execution_arn, task_id);
            return Ok(());
        };
        let effects = {
            let mut guard = slot.state.lock();
            let deferred = self.inner.answers.take_deferred(execution_arn, task_id);
            let Some(outcome) = self.inner.answers.take(execution_arn, task_id) else {
                return Ok(());
            };
            if guard.execution.status().is_closed() {
                return Ok(());
            }
            let trigger = super::tokens::handler_trigger(task_id, outcome);
            match deferred {
                // A `.sync` job that ended before its start returned: the start's answer
                // (`TaskSubmitted`), then the job's outcome, in one commit.
                Some(outcome) => {
                    decide_and_append_after(
                        self,
                        execution_arn,
                        &mut guard,
                        Some(trigger),
                        outcome,
                        task_id,
                    )?
                    .0
                }
                None => decide_and_record_handler_answer(self, execution_arn, &mut guard, trigger)?,
            }
        };
        self.perform(execution_arn, &slot, effects);
        Ok(())
    }
}

/// Records a handler's answer kept in `answers` (unless a token answer already took it into its
/// own commit, see `tokens`), and counts it for `wait_idle`.
fn record_answer(weak: &Weak<Inner>, execution_arn: &Arc<str>, task_id: EventId, cancelled: bool) {
    let Some(inner) = weak.upgrade() else { return };
    let engine = Engine { inner };
    engine
        .inner
        .running
        .lock()
        .remove(&(execution_arn.clone(), task_id.0));
    if let Err(error) = engine.drive_handler_answer(execution_arn, task_id) {
        engine.inner.background_errors.lock().push(format!(
            "TaskAnswer of task {} for {execution_arn}: {error}",
            task_id.0
        ));
    }
    {
        let mut counts = engine.inner.in_flight.lock();
        counts.in_flight -= 1;
        counts.recorded += u64::from(!cancelled);
    }
    engine.inner.in_flight_changed.notify_all();
}

/// The Context object a handler receives: the task's, plus `AttemptId`.
fn with_attempt_id(context: Value, execution_arn: &str, task_id: EventId) -> Value {
    let mut context = match context {
        Value::Object(map) => map,
        other => {
            let mut map = serde_json::Map::new();
            map.insert("Context".to_string(), other);
            map
        }
    };
    context.insert(
        "AttemptId".to_string(),
        Value::String(format!("{execution_arn}/{}", task_id.0)),
    );
    Value::Object(context)
}

/// Fires every timer due now; returns how many fired.
pub(crate) fn run_due_timers(engine: &Engine) -> usize {
    let now_ms = engine.inner.options.clock.now_ms();
    let mut due = Vec::new();
    {
        let mut timers = engine.inner.timers.lock();
        while timers.peek().is_some_and(|t| t.0.due_ms <= now_ms) {
            if let Some(Reverse(entry)) = timers.pop() {
                due.push(entry);
            }
        }
    }
    let fired = due.len()
        + super::tokens::run_due_heartbeats(engine, now_ms)
        + super::jobs::run_due_polls(engine, now_ms);
    for entry in due {
        engine.drive_in_background(
            &entry.execution_arn,
            Trigger::TimerFired {
                timer_id: EventId(entry.timer_id),
            },
        );
    }
    fired
}

/// Starts the thread that fires due timers, waking when one is armed and at least every
/// `TIMER_POLL_MS_MAX` (the clock may jump). It holds only a weak reference to the engine.
pub(crate) fn spawn_timer_thread(engine: &Engine) -> Result<(), Error> {
    let weak = Arc::downgrade(&engine.inner);
    let signal = engine.inner.timer_signal.clone();
    std::thread::Builder::new()
        .name("statelog-timers".to_string())
        .spawn(move || loop {
            let wait_ms = {
                let Some(inner) = weak.upgrade() else { return };
                if inner.shutdown.load(Ordering::SeqCst) {
                    return;
                }
                let engine = Engine { inner };
                run_due_timers(&engine);
                let now_ms = engine.inner.options.clock.now_ms();
                engine
                    .next_timer_due_ms()
                    .map_or(TIMER_POLL_MS_MAX, |due| due.saturating_sub(now_ms))
                    .min(TIMER_POLL_MS_MAX)
            };
            let mut changed = signal.changed.lock();
            if !*changed && wait_ms > 0 {
                signal
                    .condvar
                    .wait_for(&mut changed, Duration::from_millis(wait_ms));
            }
            *changed = false;
        })
        .map_err(|e| Error::Runtime {
            reason: format!("cannot start the timer thread: {e}"),
        })?;
    Ok(())
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.shutdown.store(true, Ordering::SeqCst);
        self.timer_signal.notify();
        if let Some(runtime) = self.runtime.lock().take() {
            runtime.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::sync::mpsc;

    use serde_json::json;

    use super::*;
    use crate::jobs::{Job, JobFuture, JobIntegration, JobStart, JobStatus};
    use crate::test_support::types;
    use crate::EngineOptions;
    use statelog_core::asl::IntegrationPattern;

    const BASE: &str = "arn:aws:states:::batch:submitJob";

    /// What the test sees of its `Gate`: which calls of `patterns` came in, a latch per held
    /// call, and how many jobs were started.
    struct GateSide {
        entered: mpsc::Receiver<usize>,
        release: Vec<mpsc::Sender<()>>,
        starts: Arc<AtomicUsize>,
    }

    /// A `.sync` job integration whose first `HELD` calls of `patterns` each wait for their own
    /// latch, so the test holds a registration and a dispatch exactly where it wants them. Its
    /// `start` answers at once.
    struct Gate {
        calls: AtomicUsize,
        entered: Mutex<mpsc::Sender<usize>>,
        latches: Vec<Mutex<mpsc::Receiver<()>>>,
        starts: Arc<AtomicUsize>,
    }

    const HELD: usize = 2;

    fn gate() -> (Gate, GateSide) {
        let (entered_tx, entered) = mpsc::channel();
        let (release, latches): (Vec<_>, Vec<_>) = (0..HELD)
            .map(|_| {
                let (tx, rx) = mpsc::channel();
                (tx, Mutex::new(rx))
            })
            .unzip();
        let starts = Arc::new(AtomicUsize::new(0));
        let gate = Gate {
            calls: AtomicUsize::new(0),
            entered: Mutex::new(entered_tx),
            latches,
            starts: starts.clone(),
        };
        let side = GateSide {
            entered,
            release,
            starts,
        };
        (gate, side)
    }

    impl JobIntegration for Gate {
        fn patterns(&self) -> Vec<IntegrationPattern> {
            let call = self.calls.fetch_add(1, Ordering::SeqCst);
            if let Some(latch) = self.latches.get(call) {
                self.entered
                    .lock()
                    .send(call + 1)
                    .expect("the test listens");
                latch.lock().recv().expect("the test lets it go");
            }
            vec![IntegrationPattern::Sync]
        }

        fn poll_interval_ms(&self) -> u64 {
            60_000
        }

        fn start(&self, _start: JobStart) -> JobFuture<Value> {
            self.starts.fetch_add(1, Ordering::SeqCst);
            Box::pin(async { Ok(json!({"JobId": "j"})) })
        }

        fn status(&self, _job: Job) -> JobFuture<JobStatus> {
            Box::pin(async { Ok(JobStatus::Running) })
        }

        fn cancel(&self, _job: Job) -> JobFuture<()> {
            Box::pin(async { Ok(()) })
        }
    }

    /// The lost task of `tests/waiting_children_kill.rs` (cycle 62): a dispatch that found no
    /// handler for its task, and a registration of that handler that ran to its end before the
    /// dispatch parked the task. The registration found nothing parked, the task was parked
    /// after it, and no handler call ever came. Here the dispatch is held in its pattern check
    /// (between "no handler" and "park") while the handler's registration completes.
    #[test]
    fn a_task_dispatched_while_its_handler_is_registered_reaches_the_handler() {
        let log = Arc::new(statelog_store::MemoryLog::new());
        let options = EngineOptions {
            background_timers: false,
            ..EngineOptions::default()
        };
        let engine = Engine::open_with_log(log, options).expect("opens");
        let definition = format!(
            r#"{{"StartAt":"Run","States":{{"Run":{{"Type":"Task","Resource":"{BASE}.sync","End":true}}}}}}"#
        );
        engine
            .create_state_machine("m", &definition, None)
            .expect("machine");
        let (gate, side) = gate();
        let registering = {
            let engine = engine.clone();
            std::thread::spawn(move || engine.register_job_integration(BASE, gate))
        };
        // The registration has recorded the integration, not yet registered its handlers.
        assert_eq!(side.entered.recv(), Ok(1));
        let starting = {
            let engine = engine.clone();
            std::thread::spawn(move || engine.start_execution("m", Some("e"), "{}"))
        };
        // The start's dispatch found no handler and asks whether the pattern is declared.
        assert_eq!(side.entered.recv(), Ok(2));
        side.release[0].send(()).expect("held");
        registering.join().expect("the registration ends");
        // The handler is registered now; the dispatch goes on.
        side.release[1].send(()).expect("held");
        let started = starting
            .join()
            .expect("the start ends")
            .expect("the start succeeds");
        engine.wait_idle();
        assert_eq!(
            side.starts.load(Ordering::SeqCst),
            1,
            "the task reached the handler registered while it was dispatched"
        );
        let types = types(&engine, &started.execution_arn);
        assert_eq!(types.last(), Some(&"TaskSubmitted"), "{types:?}");
    }
}
