//! kernel: the one path of every trigger. `Engine::commit_decision` decides a trigger on an
//! execution's folded state, appends the decision as one log batch and adopts the decided state
//! under the execution's slot lock; the caller then performs the effects (`Engine::perform`).
//! The kernel also owns the one timer heap (`Wait` and retry timers) and the timer thread,
//! which fires due timers and runs the task backends' due deadlines. It reaches what tasks
//! wait for only through `Inner.backends` (see `backend`): a backend may join a decision
//! before its append, and deliver once it is durable.
//!
//! Invariants: the slot lock of an execution is held from `decide` to `apply`, so triggers of
//! one execution never interleave and the folded state always equals the *written* log. Every
//! decision is durable when its commit returns, except one: a handler's answer that only
//! records `TaskSubmitted` (no effect) is written without waiting for a sync
//! (`Commit::HandlerAnswer`); the next synced commit makes it durable, a read of the history
//! syncs first, and its loss in a crash equals a crash just before it was recorded (the task is
//! dispatched again). A `Commit::Notify` decision (a worker's claim of an activity task, a
//! worker's answer to a token) or a `Commit::HandlerAnswer` with a callback returns before its
//! sync, and the log tells the callback once it is durable; its caller hands out the token,
//! runs the backends' deliveries and performs its effects only then. So: effects are performed, and callers
//! answered, only after their decision is durable, and nothing is done on the strength of a
//! record that is not. A call answered from the folded state without a decision of its own (a
//! re-sent start, a late token answer) makes the notified appends durable first
//! (`Store::sync_unsynced`), since the state adopts a notified decision before it is. Timers
//! and answers are at-least-once: a stale one yields an empty decision.
//!
//! Must not: hold any engine-wide lock across an append; perform an effect itself (that is
//! `Engine::perform`, after the commit returns).

use std::cmp::Reverse;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use super::{Engine, Error, Inner};
use crate::limits::{TIMERS_PER_EXECUTION_TYPICAL, TIMER_HEAP_COMPACT_LEN_MIN, TIMER_POLL_MS_MAX};
use statelog_core::asl::StateMachine;
use statelog_core::history::{EventDetails, EventId};
#[cfg(debug_assertions)]
use statelog_core::interpreter::apply;
use statelog_core::interpreter::{
    decide, decide_owned, Decision, Effect, ExecutionState, ExecutionStatus, Trigger,
};

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

/// One request to commit a decision: the trigger, and what sets this commit apart from a plain
/// one. Every decision the engine makes goes through `Engine::commit_decision` with one.
pub(crate) enum Commit<'a> {
    /// Decide `trigger` and append the decision durably.
    Trigger(Trigger),
    /// A redrive: decide `Trigger::Redrive` and write the redrive's client token in the same
    /// atomic batch as `ExecutionRedriven` (`Store::prepare_events_with_redrive_token`), so a
    /// crash keeps both or neither.
    Redrive {
        /// The client token of the `RedriveExecution` call, when it gave one.
        client_token: Option<&'a str>,
    },
    /// A Rust handler's answer (`TaskSucceeded`/`TaskFailed` of a handler call). When its
    /// decision is only the `TaskSubmitted` of a waiting task, with no effect, it is written
    /// without waiting for a sync (`Store::append_prepared_unsynced`): nothing is done on the
    /// strength of it, the next synced commit of the log makes it durable, and losing it in a
    /// crash is a crash just before it was recorded (the task is dispatched again on open).
    HandlerAnswer {
        /// The handler's answer.
        trigger: Trigger,
        /// Given: the decision is appended as `Commit::Notify` appends it (a submission-only
        /// one too), and this told once it is durable (`Committed::notified`).
        on_durable: Option<statelog_store::OnDurable>,
    },
    /// Decide `trigger` and append the decision without waiting for its sync: the log calls
    /// `on_durable` once it is durable (`Store::append_prepared_notify`), from the thread that
    /// made it so. The caller acts on the decision (answers, performs its effects) only after
    /// `on_durable` said Ok. For a caller that must not block (an async long poll). The state is
    /// adopted at once, so a later trigger of the execution decides after it; that trigger's
    /// synced commit makes this one durable first (the log is ordered), and a read of the
    /// history syncs first. `on_durable` is dropped uncalled when the decision records nothing
    /// or the append fails.
    Notify {
        /// The trigger to decide.
        trigger: Trigger,
        /// Told once the decision is durable, or why it never will be.
        on_durable: statelog_store::OnDurable,
    },
    /// An answer for task `task_id` (`trigger`) that came after another answer for it that is
    /// not recorded yet (`before`, e.g. the handler's `TaskSubmitted` of a `.sync` start):
    /// `before` is decided first and `trigger` on the state it leaves, if the task still waits
    /// then; both in one commit.
    After {
        /// The earlier answer, decided first.
        before: Trigger,
        /// The later answer.
        trigger: Trigger,
        /// The task both answer.
        task_id: EventId,
    },
}

/// The receiver of the log's word on a `Commit::Notify` decision.
pub(crate) type LogWord = tokio::sync::oneshot::Receiver<Result<(), statelog_store::Error>>;

/// An `on_durable` for `Commit::Notify` whose word a blocked thread waits for
/// ([`BlockingWord::wait`]).
pub(crate) fn blocking_word() -> (statelog_store::OnDurable, BlockingWord) {
    let word = Arc::new(WordSlot::default());
    let teller = WordTeller(Some(word.clone()));
    let on_durable: statelog_store::OnDurable =
        Box::new(move |result| teller.tell(Told::Durable(result)));
    (on_durable, BlockingWord(word))
}

/// The log's word on a `Commit::Notify` decision, for a thread that blocks until it comes.
pub(crate) struct BlockingWord(Arc<WordSlot>);

impl BlockingWord {
    /// Blocks until the log tells: `Ok` once the decision is durable, the log's error if it
    /// never will be, `Interrupted` if its `on_durable` was dropped untold (only with the log).
    pub(crate) fn wait(self) -> Result<(), Error> {
        let mut word = self.0.word.lock();
        loop {
            match word.take() {
                Some(Told::Durable(result)) => return result.map_err(Error::from),
                Some(Told::Dropped) => return Err(Error::Interrupted),
                None => self.0.told.wait(&mut word),
            }
        }
    }
}

#[derive(Default)]
struct WordSlot {
    word: parking_lot::Mutex<Option<Told>>,
    told: parking_lot::Condvar,
}

impl WordSlot {
    fn put(&self, told: Told) {
        *self.word.lock() = Some(told);
        self.told.notify_one();
    }
}

enum Told {
    Durable(Result<(), statelog_store::Error>),
    Dropped,
}

/// The telling side, inside `on_durable`: it tells once, and dropped untold it tells
/// `Told::Dropped`.
struct WordTeller(Option<Arc<WordSlot>>);

impl WordTeller {
    fn tell(mut self, told: Told) {
        if let Some(slot) = self.0.take() {
            slot.put(told);
        }
    }
}

impl Drop for WordTeller {
    fn drop(&mut self) {
        if let Some(slot) = self.0.take() {
            slot.put(Told::Dropped);
        }
    }
}

/// An `on_durable` for `Commit::Notify` and the receiver its word arrives on (a receiver dropped
/// meanwhile changes nothing: the decision stands).
pub(crate) fn log_word_channel() -> (statelog_store::OnDurable, LogWord) {
    let (durable, told) = tokio::sync::oneshot::channel();
    let on_durable: statelog_store::OnDurable = Box::new(move |result| {
        let _ = durable.send(result);
    });
    (on_durable, told)
}

/// Waits for the log's word (a [`LogWord`], or a borrow of one): `Ok` once the decision is
/// durable, the log's error if it never will be, `Interrupted` if the log was dropped without a
/// word (only with the engine: the log always tells, poisoning tells the error).
pub(crate) async fn log_word(
    told: impl std::future::Future<
        Output = Result<Result<(), statelog_store::Error>, tokio::sync::oneshot::error::RecvError>,
    >,
) -> Result<(), Error> {
    match told.await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => Err(error.into()),
        Err(_) => Err(Error::Interrupted),
    }
}

/// What a commit leaves for its caller.
#[must_use = "the effects of a durable decision must be performed"]
pub(crate) struct Committed {
    /// The effects to perform (`Engine::perform`), now that the decision is durable.
    pub(crate) effects: Vec<Effect>,
    /// Whether the request's last trigger was decided: false only for `Commit::After` whose
    /// `before` closed the task (then only `before` is recorded).
    pub(crate) trigger_decided: bool,
    /// What backends hand over once the decision is durable (a task claimed for a waiting
    /// poller). Empty except after `Commit::Notify`, whose caller runs them once told it is
    /// durable; every other commit has run them before it returns.
    pub(crate) deliveries: Vec<super::backend::Delivery>,
    /// Whether the request's `on_durable` went to the log with the decision, which will tell
    /// it: the caller must wait for it before it acts. False when the decision recorded nothing
    /// or was written otherwise (then `on_durable` was dropped uncalled).
    pub(crate) notified: bool,
}

impl Engine {
    /// The one entry point for committing a decision: decides `request` on the slot's state,
    /// appends it as one log batch (durable, except as `Commit::HandlerAnswer` says) and adopts
    /// the decided state. The caller holds the slot lock (`slot` is its guard) and performs the
    /// returned effects after dropping it.
    pub(crate) fn commit_decision(
        &self,
        execution_arn: &str,
        slot: &mut SlotState,
        request: Commit<'_>,
    ) -> Result<Committed, Error> {
        let inner = &self.inner;
        let now_ms = inner.options.clock.now_ms();
        match request {
            Commit::Trigger(trigger) => {
                let decision = decide_first(inner, slot, trigger, now_ms)?;
                commit(
                    self,
                    execution_arn,
                    slot,
                    decision,
                    now_ms,
                    None,
                    Append::Synced,
                )
            }
            Commit::Notify {
                trigger,
                on_durable,
            } => {
                let decision = decide_first(inner, slot, trigger, now_ms)?;
                let append = Append::Notify(on_durable);
                commit(self, execution_arn, slot, decision, now_ms, None, append)
            }
            Commit::Redrive { client_token } => {
                let decision = decide_first(inner, slot, Trigger::Redrive, now_ms)?;
                commit(
                    self,
                    execution_arn,
                    slot,
                    decision,
                    now_ms,
                    client_token,
                    Append::Synced,
                )
            }
            Commit::HandlerAnswer {
                trigger,
                on_durable,
            } => {
                let decision = decide_at(inner, slot, &slot.execution, trigger, now_ms)?;
                let submission_only = decision.effects.is_empty()
                    && matches!(
                        decision.events.as_slice(),
                        [event] if matches!(event.details, EventDetails::TaskSubmitted(_))
                    );
                // With a callback even a submission is notified: an unsynced write waits for
                // the leader in flight, which its caller (on the runtime) must not.
                let append = match on_durable {
                    Some(on_durable) => Append::Notify(on_durable),
                    None if submission_only => Append::Unsynced,
                    None => Append::Synced,
                };
                commit(self, execution_arn, slot, decision, now_ms, None, append)
            }
            Commit::After {
                before,
                trigger,
                task_id,
            } => {
                let mut first = decide_at(inner, slot, &slot.execution, before, now_ms)?;
                let waiting = first.next_state.waiting_ref(task_id).is_some();
                if waiting {
                    let second = decide_at(inner, slot, &first.next_state, trigger, now_ms)?;
                    first.events.extend(second.events);
                    first.effects.extend(second.effects);
                    first.next_state = second.next_state;
                }
                let committed = commit(
                    self,
                    execution_arn,
                    slot,
                    first,
                    now_ms,
                    None,
                    Append::Synced,
                )?;
                Ok(Committed {
                    trigger_decided: waiting,
                    ..committed
                })
            }
        }
    }

    /// Whether an async caller should commit with `Commit::Notify` rather than a synced commit
    /// off the reactor: the log notifies, and a commit is in flight for the notified batch to
    /// ride on. On an idle log the synced commit in place is quicker: a notified batch would
    /// wait for the log's own thread to be scheduled, which on a loaded 2-core machine cost
    /// milliseconds a step (`serve` at one execution in flight, issue 16).
    pub(crate) fn notify_pays(&self) -> bool {
        let log = self.inner.store.log();
        log.notifies() && log.commit_in_flight()
    }

    /// Arms a timer of `execution_arn` in the one heap and wakes the timer thread.
    pub(crate) fn arm_timer(&self, execution_arn: &Arc<str>, timer_id: EventId, due_ms: u64) {
        self.inner.timers.lock().push(Reverse(TimerEntry {
            due_ms,
            execution_arn: execution_arn.clone(),
            timer_id: timer_id.0,
        }));
        self.inner.timer_signal.notify();
    }

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
            self.commit_decision(execution_arn, &mut guard, Commit::Trigger(trigger))?
                .effects
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

    /// Drops the timers of closed executions once they are most of the heap, so a closed
    /// execution does not stay in memory until its (possibly year-long) timers come due.
    /// Amortized O(1) per close.
    pub(crate) fn compact_timers(&self) {
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
}

/// Decides `trigger` on the slot's state. A slot not started yet has nothing to lose on
/// failure: it is decided on a fresh state without copying it.
fn decide_first(
    inner: &Inner,
    slot: &SlotState,
    trigger: Trigger,
    now_ms: u64,
) -> Result<Decision, Error> {
    if slot.execution.status() != ExecutionStatus::NotStarted {
        return decide_at(inner, slot, &slot.execution, trigger, now_ms);
    }
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
    Ok(decision)
}

/// `interpreter::decide` of `trigger` on `state` (the slot's, or one decided from it) with the
/// slot's definition and the engine's interpreter options and entropy, at `now_ms`.
fn decide_at(
    inner: &Inner,
    slot: &SlotState,
    state: &ExecutionState,
    trigger: Trigger,
    now_ms: u64,
) -> Result<Decision, Error> {
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

/// How `commit` appends its decision.
enum Append {
    /// Durable when `commit` returns.
    Synced,
    /// Ordered when `commit` returns (see `Commit::HandlerAnswer`).
    Unsynced,
    /// Ordered when `commit` returns; the callback is told once durable (see `Commit::Notify`).
    Notify(statelog_store::OnDurable),
}

/// Appends a decision (one log batch, as `append` says) and adopts its state; returns its
/// effects, and the backends' deliveries when the caller must run them (`Append::Notify`: only
/// once told the decision is durable).
fn commit(
    engine: &Engine,
    execution_arn: &str,
    slot: &mut SlotState,
    mut decision: Decision,
    now_ms: u64,
    redrive_token: Option<&str>,
    append: Append,
) -> Result<Committed, Error> {
    let inner = &engine.inner;
    if decision.events.is_empty() {
        return Ok(Committed {
            effects: decision.effects,
            trigger_decided: true,
            deliveries: Vec::new(),
            notified: false,
        });
    }
    // A backend may join the decision (a waiting poller claims its task in this commit).
    let deliveries = inner.backends.before_append(
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
    // Encoded: the store keeps the batch's first and last events (a describe after the close
    // reads nothing back), and the rest are dropped now, while they are in this thread's cache
    // (after the commit wait they are cold, and freeing them cost a tenth of all cycles with
    // 512 threads).
    let mut events = decision.events;
    let mut prepared = prepared;
    inner.store.keep_ends(&mut prepared, &mut events);
    statelog_core::interpreter::recycle_events(events);
    let durable_now = match append {
        Append::Synced => {
            inner.store.append_prepared(prepared)?;
            true
        }
        Append::Unsynced => {
            inner.store.append_prepared_unsynced(prepared)?;
            true
        }
        Append::Notify(on_durable) => {
            inner.store.append_prepared_notify(prepared, on_durable)?;
            false
        }
    };
    let commit_micros = u64::try_from(commit_started.elapsed().as_micros()).unwrap_or(u64::MAX);
    inner.counters.record_tally(tally, commit_micros);
    slot.execution = decision.next_state;
    if !durable_now {
        return Ok(Committed {
            effects: decision.effects,
            trigger_decided: true,
            deliveries,
            notified: true,
        });
    }
    for delivery in deliveries {
        delivery(engine);
    }
    Ok(Committed {
        effects: decision.effects,
        trigger_decided: true,
        deliveries: Vec::new(),
        notified: false,
    })
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
    let fired = due.len() + engine.inner.backends.run_due(engine, now_ms);
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
        .map_err(|source| Error::ThreadNotStarted {
            thread: "timer",
            source,
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::types;
    use crate::EngineOptions;

    /// A blocked thread's word: durable, the log's error, or `Interrupted` when `on_durable`
    /// is dropped untold; a word told from another thread wakes the waiter.
    #[test]
    fn a_blocking_word_is_what_the_log_told_or_interrupted_when_dropped_untold() {
        let (on_durable, word) = blocking_word();
        let teller = std::thread::spawn(move || on_durable(Ok(())));
        word.wait().expect("told durable");
        teller.join().expect("tells");

        let (on_durable, word) = blocking_word();
        on_durable(Err(statelog_store::Error::Fenced));
        let refused = word.wait().expect_err("told the log's error");
        assert!(
            matches!(refused, Error::Store(statelog_store::Error::Fenced)),
            "{refused}"
        );

        let (on_durable, word) = blocking_word();
        drop(on_durable);
        assert!(matches!(word.wait(), Err(Error::Interrupted)));
    }

    /// The kernel's seam: a trigger that no longer matches the execution (a timer it never
    /// armed) commits nothing, and the timer it did arm commits once.
    #[test]
    fn a_stale_trigger_commits_nothing_and_the_armed_timer_commits_once() {
        let log = Arc::new(statelog_store::MemoryLog::new());
        let options = EngineOptions {
            background_timers: false,
            ..EngineOptions::default()
        };
        let engine = Engine::open_with_log(log, options).expect("opens");
        let definition =
            r#"{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":60,"End":true}}}"#;
        engine
            .create_state_machine("m", definition, None)
            .expect("machine");
        let started = engine
            .start_execution("m", Some("e"), "{}")
            .expect("starts");
        let arn = started.execution_arn.as_str();
        let before = types(&engine, arn).len();
        let slot = engine.inner.open.lock().get(arn).cloned().expect("open");
        let stale = Trigger::TimerFired {
            timer_id: EventId(9_999),
        };
        let committed = engine
            .commit_decision(arn, &mut slot.state.lock(), Commit::Trigger(stale))
            .expect("a stale trigger is no error");
        assert!(committed.effects.is_empty());
        assert_eq!(types(&engine, arn).len(), before, "nothing was appended");
        let due = engine.inner.timers.lock().peek().map(|t| t.0.timer_id);
        let timer_id = EventId(due.expect("the Wait armed a timer"));
        let committed = engine
            .commit_decision(
                arn,
                &mut slot.state.lock(),
                Commit::Trigger(Trigger::TimerFired { timer_id }),
            )
            .expect("the armed timer commits");
        assert!(committed.trigger_decided);
        assert!(
            types(&engine, arn).len() > before,
            "the timer's decision was appended"
        );
    }
}
