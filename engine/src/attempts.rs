//! attempts: the live state of every task attempt in one table, keyed by `AttemptKey`. An
//! attempt's entry holds what the backends keep for it: its handler call, the handler's answer
//! not recorded yet (and a `.sync` outcome deferred until then), its heartbeat clock, its
//! embedder `.sync` job, the `.sync` child execution it waits for. Each backend reads and writes
//! its own part through the methods here; none sees the map.
//!
//! Secondary indexes live beside the entries, under the same lock, and hold only keys: the
//! heartbeat and job-poll deadline heaps (entries may be stale: a deadline is checked against
//! the attempt's part when it comes due) and the child ARN -> attempt map.
//!
//! Invariants:
//! - An entry exists only while one of its parts is set: a method that clears the last part
//!   drops it.
//! - The child index names exactly the attempts whose `child` is set.
//! - Every running job has a poll armed or in flight; the poll drops the job once its task is
//!   over.
//! - The end of an attempt (`end`, after every backend's `cancel`) drops its whole entry.
//! - The close of an execution (`execution_closed`) drops every part of its attempts but a
//!   running job (its poll cancels it). `Engine::perform` calls it after all the closing
//!   decision's effects: a handed-over task's `CancelTask` comes after `Closed`.
//!
//! Must not: hold the lock across an await, a handler call, a slot lock or a log append (each
//! method takes it once and returns).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;
use tokio::task::AbortHandle;

use super::backend::AttemptKey;
use super::jobs::{JobWait, RunningJob};
use super::TaskError;
use statelog_core::history::EventId;
use statelog_core::interpreter::Trigger;

/// A heartbeat clock: when it runs out, and the interval a heartbeat restarts it with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct HeartbeatClock {
    due_ms: u64,
    interval_s: u64,
}

impl HeartbeatClock {
    fn started(interval_s: u64, now_ms: u64) -> Self {
        HeartbeatClock {
            due_ms: now_ms.saturating_add(interval_s.saturating_mul(1000)),
            interval_s,
        }
    }
}

/// The `.sync` child execution an attempt waits for.
#[derive(Debug, Clone)]
struct ChildWait {
    child_arn: Arc<str>,
    /// `.sync:2` (the child's input and output as JSON, not as text).
    json_output: bool,
}

/// The attempt a closed child execution answers, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChildWaiter {
    /// The parent's attempt.
    pub(crate) attempt: AttemptKey,
    /// `.sync:2`: the child's input and output as JSON.
    pub(crate) json_output: bool,
}

/// What a handler call left when it finished: its answer (unless a token answer took it) and a
/// `.sync` outcome that came before that answer was recorded.
pub(crate) struct FinishedCall {
    /// The handler's answer, not recorded yet.
    pub(crate) answer: Option<Result<Value, TaskError>>,
    /// A `.sync` job's outcome deferred until the answer is recorded.
    pub(crate) deferred: Option<Trigger>,
}

/// Everything live about one attempt; each field belongs to one backend.
#[derive(Default)]
struct Attempt {
    /// The handler call running for it (`handlers::HandlerCalls`).
    call: Option<AbortHandle>,
    /// The handler's answer, kept from the poll that finished the call until one thread
    /// records it (`runtime::drive_handler_answer`, or a token answer's commit).
    answer: Option<Result<Value, TaskError>>,
    /// A `.sync` job's outcome that came while its start call was pending.
    deferred: Option<Trigger>,
    /// Its heartbeat clock (`tokens::HeartbeatClocks`).
    heartbeat: Option<HeartbeatClock>,
    /// Its embedder `.sync` job (`jobs::JobBackend`).
    job: Option<JobWait>,
    /// The `.sync` child it waits for (`integrations::SyncChildBackend`).
    child: Option<ChildWait>,
}

impl Attempt {
    fn is_empty(&self) -> bool {
        self.call.is_none()
            && self.answer.is_none()
            && self.deferred.is_none()
            && self.heartbeat.is_none()
            && self.job.is_none()
            && self.child.is_none()
    }
}

/// A deadline of one attempt in a heap, earliest first.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Deadline {
    due_ms: u64,
    attempt: AttemptKey,
}

#[derive(Default)]
struct Table {
    /// Ordered by execution, then task, so one execution's attempts are one range.
    attempts: BTreeMap<AttemptKey, Attempt>,
    /// Heartbeat deadlines; an entry may be older than its clock (a beat moves only the clock).
    heartbeat_deadlines: BinaryHeap<Reverse<Deadline>>,
    /// Job poll deadlines; an entry may be of a job that is gone.
    poll_deadlines: BinaryHeap<Reverse<Deadline>>,
    /// `.sync` child execution ARN -> the attempt waiting for it.
    children: crate::ArnMap<AttemptKey>,
}

impl Table {
    /// Changes the attempt's entry (created if absent), dropping it if `change` left it empty.
    fn update<T>(&mut self, key: &AttemptKey, change: impl FnOnce(&mut Attempt) -> T) -> T {
        let attempt = self.attempts.entry(key.clone()).or_default();
        let out = change(attempt);
        if attempt.is_empty() {
            self.attempts.remove(key);
        }
        out
    }

    /// Changes the attempt's entry if it exists, dropping it if `change` left it empty.
    fn update_existing<T>(
        &mut self,
        key: &AttemptKey,
        change: impl FnOnce(&mut Attempt) -> T,
    ) -> Option<T> {
        let attempt = self.attempts.get_mut(key)?;
        let out = change(attempt);
        if attempt.is_empty() {
            self.attempts.remove(key);
        }
        Some(out)
    }

    /// Removes the entry and the child index entry that names it.
    fn remove(&mut self, key: &AttemptKey) -> Option<Attempt> {
        let attempt = self.attempts.remove(key)?;
        if let Some(child) = &attempt.child {
            self.children.remove(&child.child_arn);
        }
        Some(attempt)
    }

    /// The keys of every attempt of `execution_arn`.
    fn keys_of(&self, execution_arn: &str) -> Vec<AttemptKey> {
        if self.attempts.is_empty() {
            return Vec::new();
        }
        let execution: Arc<str> = Arc::from(execution_arn);
        let first = AttemptKey::new(execution.clone(), EventId(0));
        let last = AttemptKey::new(execution, EventId(u32::MAX));
        self.attempts
            .range(first..=last)
            .map(|(key, _)| key.clone())
            .collect()
    }
}

/// Pops the deadlines due at `now_ms`.
fn pop_due(heap: &mut BinaryHeap<Reverse<Deadline>>, now_ms: u64) -> Vec<Deadline> {
    let mut due = Vec::new();
    while heap.peek().is_some_and(|Reverse(d)| d.due_ms <= now_ms) {
        if let Some(Reverse(deadline)) = heap.pop() {
            due.push(deadline);
        }
    }
    due
}

/// The table of live attempts (see the module docs), behind one lock.
#[derive(Default)]
pub(crate) struct Attempts {
    table: Mutex<Table>,
}

impl Attempts {
    // Handler calls.

    /// Keeps the abort handle of the attempt's handler call.
    pub(crate) fn start_call(&self, key: &AttemptKey, call: AbortHandle) {
        self.table.lock().update(key, |a| a.call = Some(call));
    }

    /// Takes the abort handle of the attempt's handler call, if it runs.
    pub(crate) fn take_call(&self, key: &AttemptKey) -> Option<AbortHandle> {
        let mut table = self.table.lock();
        table.update_existing(key, |a| a.call.take()).flatten()
    }

    /// Keeps the answer of the attempt's handler call until it is recorded.
    pub(crate) fn keep_answer(&self, key: &AttemptKey, outcome: Result<Value, TaskError>) {
        self.table.lock().update(key, |a| a.answer = Some(outcome));
    }

    /// Takes the handler's answer, if it is still here.
    pub(crate) fn take_answer(&self, key: &AttemptKey) -> Option<Result<Value, TaskError>> {
        let mut table = self.table.lock();
        table.update_existing(key, |a| a.answer.take()).flatten()
    }

    /// Keeps a `.sync` job's outcome until the start's answer is recorded.
    pub(crate) fn defer_outcome(&self, key: &AttemptKey, trigger: Trigger) {
        self.table
            .lock()
            .update(key, |a| a.deferred = Some(trigger));
    }

    /// Takes the `.sync` outcome deferred for the attempt, if any.
    #[cfg(test)]
    pub(crate) fn take_deferred(&self, key: &AttemptKey) -> Option<Trigger> {
        let mut table = self.table.lock();
        table.update_existing(key, |a| a.deferred.take()).flatten()
    }

    /// The handler call is over: forgets its handle and takes its answer and deferred outcome.
    pub(crate) fn finish_call(&self, key: &AttemptKey) -> FinishedCall {
        let mut table = self.table.lock();
        let finished = table.update_existing(key, |a| {
            a.call = None;
            FinishedCall {
                answer: a.answer.take(),
                deferred: a.deferred.take(),
            }
        });
        finished.unwrap_or(FinishedCall {
            answer: None,
            deferred: None,
        })
    }

    // Heartbeat clocks.

    /// Starts (or restarts) the attempt's heartbeat clock.
    pub(crate) fn arm_heartbeat(&self, key: &AttemptKey, interval_s: u64, now_ms: u64) {
        let clock = HeartbeatClock::started(interval_s, now_ms);
        let mut table = self.table.lock();
        table.update(key, |a| a.heartbeat = Some(clock));
        table.heartbeat_deadlines.push(Reverse(Deadline {
            due_ms: clock.due_ms,
            attempt: key.clone(),
        }));
    }

    /// Moves the attempt's clock to `now + its interval`; false when it is not armed.
    pub(crate) fn beat(&self, key: &AttemptKey, now_ms: u64) -> bool {
        let mut table = self.table.lock();
        let Some(clock) = table
            .attempts
            .get_mut(key)
            .and_then(|a| a.heartbeat.as_mut())
        else {
            return false;
        };
        *clock = HeartbeatClock::started(clock.interval_s, now_ms);
        true
    }

    /// Stops the attempt's heartbeat clock.
    pub(crate) fn disarm_heartbeat(&self, key: &AttemptKey) {
        self.table
            .lock()
            .update_existing(key, |a| a.heartbeat = None);
    }

    /// The earliest heartbeat deadline (possibly older than its clock: waking early is fine).
    pub(crate) fn next_heartbeat_due_ms(&self) -> Option<u64> {
        let table = self.table.lock();
        table.heartbeat_deadlines.peek().map(|Reverse(d)| d.due_ms)
    }

    /// Takes the attempts whose heartbeat clock has run out at `now_ms` (their clocks stop).
    pub(crate) fn take_due_heartbeats(&self, now_ms: u64) -> Vec<AttemptKey> {
        let mut table = self.table.lock();
        let mut out = Vec::new();
        for deadline in pop_due(&mut table.heartbeat_deadlines, now_ms) {
            let clock = table
                .attempts
                .get(&deadline.attempt)
                .and_then(|a| a.heartbeat);
            match clock {
                // Beaten since this entry was pushed: wait for the clock's deadline.
                Some(clock) if clock.due_ms > now_ms => {
                    table.heartbeat_deadlines.push(Reverse(Deadline {
                        due_ms: clock.due_ms,
                        attempt: deadline.attempt,
                    }));
                }
                Some(_) => {
                    table.update_existing(&deadline.attempt, |a| a.heartbeat = None);
                    out.push(deadline.attempt);
                }
                None => {}
            }
        }
        out
    }

    /// How many heartbeat clocks are armed.
    pub(crate) fn heartbeat_clock_count(&self) -> usize {
        let table = self.table.lock();
        table
            .attempts
            .values()
            .filter(|a| a.heartbeat.is_some())
            .count()
    }

    // Embedder `.sync` jobs.

    /// Sets the attempt's job (replacing a recovered one by the running one).
    pub(crate) fn set_job(&self, key: &AttemptKey, job: JobWait) {
        self.table.lock().update(key, |a| a.job = Some(job));
    }

    /// Takes the attempt's job, running or recovered.
    pub(crate) fn take_job(&self, key: &AttemptKey) -> Option<JobWait> {
        let mut table = self.table.lock();
        table.update_existing(key, |a| a.job.take()).flatten()
    }

    /// The attempt's running job, if it has one.
    pub(crate) fn running_job(&self, key: &AttemptKey) -> Option<RunningJob> {
        let table = self.table.lock();
        match table.attempts.get(key).and_then(|a| a.job.as_ref()) {
            Some(JobWait::Running(running)) => Some(running.clone()),
            _ => None,
        }
    }

    /// Whether the attempt has a running job.
    pub(crate) fn has_running_job(&self, key: &AttemptKey) -> bool {
        let table = self.table.lock();
        let job = table.attempts.get(key).and_then(|a| a.job.as_ref());
        matches!(job, Some(JobWait::Running(_)))
    }

    /// Drops the recovered jobs of the integration registered under `base` (the leftovers of
    /// its registration: the jobs still awaited are running by now).
    pub(crate) fn drop_recovered_jobs(&self, base: &str) {
        let mut table = self.table.lock();
        let dropped: Vec<AttemptKey> = table
            .attempts
            .iter()
            .filter(|(_, a)| matches!(&a.job, Some(JobWait::Recovered(r)) if r.base() == base))
            .map(|(key, _)| key.clone())
            .collect();
        for key in dropped {
            table.update_existing(&key, |a| a.job = None);
        }
    }

    /// Arms a poll of the attempt's job at `due_ms`.
    pub(crate) fn arm_poll(&self, key: &AttemptKey, due_ms: u64) {
        self.table.lock().poll_deadlines.push(Reverse(Deadline {
            due_ms,
            attempt: key.clone(),
        }));
    }

    /// The earliest poll deadline (possibly of a finished job: waking early is fine).
    pub(crate) fn next_poll_due_ms(&self) -> Option<u64> {
        let table = self.table.lock();
        table.poll_deadlines.peek().map(|Reverse(d)| d.due_ms)
    }

    /// Takes the attempts whose poll is due at `now_ms`.
    pub(crate) fn take_due_polls(&self, now_ms: u64) -> Vec<AttemptKey> {
        let mut table = self.table.lock();
        pop_due(&mut table.poll_deadlines, now_ms)
            .into_iter()
            .map(|d| d.attempt)
            .collect()
    }

    /// How many running `.sync` jobs the engine waits for.
    pub(crate) fn running_job_count(&self) -> usize {
        let table = self.table.lock();
        table
            .attempts
            .values()
            .filter(|a| matches!(a.job, Some(JobWait::Running(_))))
            .count()
    }

    // `.sync` child executions.

    /// The attempt waits for child execution `child_arn`.
    pub(crate) fn wait_for_child(&self, key: &AttemptKey, child_arn: Arc<str>, json_output: bool) {
        let mut table = self.table.lock();
        let previous = table.update(key, |a| {
            a.child.replace(ChildWait {
                child_arn: child_arn.clone(),
                json_output,
            })
        });
        if let Some(previous) = previous {
            table.children.remove(&previous.child_arn);
        }
        table.children.insert(child_arn, key.clone());
    }

    /// The child `child_arn` closed: takes the attempt that waited for it.
    pub(crate) fn take_child_waiter(&self, child_arn: &str) -> Option<ChildWaiter> {
        let mut table = self.table.lock();
        // Most closes have no parent waiting: no hashing then.
        if table.children.is_empty() {
            return None;
        }
        let attempt = table.children.remove(child_arn)?;
        let child = table
            .update_existing(&attempt, |a| a.child.take())
            .flatten();
        debug_assert!(
            child.is_some(),
            "the child index names only waiting attempts"
        );
        child.map(|child| ChildWaiter {
            attempt,
            json_output: child.json_output,
        })
    }

    /// The attempt stops waiting for its child: returns the child's ARN.
    pub(crate) fn take_child(&self, key: &AttemptKey) -> Option<Arc<str>> {
        let mut table = self.table.lock();
        let child = table.update_existing(key, |a| a.child.take()).flatten()?;
        table.children.remove(&child.child_arn);
        Some(child.child_arn)
    }

    /// Forgets the child `child_arn` (its start failed).
    pub(crate) fn forget_child(&self, child_arn: &str) {
        let mut table = self.table.lock();
        if let Some(attempt) = table.children.remove(child_arn) {
            table.update_existing(&attempt, |a| a.child = None);
        }
    }

    // Ends.

    /// The attempt is over: drops whatever is left of it (after every backend took its part).
    pub(crate) fn end(&self, key: &AttemptKey) {
        self.table.lock().remove(key);
    }

    /// The execution closed: drops every part of every attempt of it but a running embedder
    /// job, which its armed poll cancels and drops (as it does for any job no longer awaited).
    /// Returns how many entries there were.
    pub(crate) fn execution_closed(&self, execution_arn: &str) -> usize {
        let mut table = self.table.lock();
        let keys = table.keys_of(execution_arn);
        for key in &keys {
            let Some(attempt) = table.remove(key) else {
                continue;
            };
            if let Some(JobWait::Running(running)) = attempt.job {
                let job = Some(JobWait::Running(running));
                table.attempts.insert(
                    key.clone(),
                    Attempt {
                        job,
                        ..Attempt::default()
                    },
                );
            }
        }
        debug_assert!(
            table
                .children
                .values()
                .all(|k| &*k.execution != execution_arn),
            "no child index entry names an attempt of the closed execution"
        );
        keys.len()
    }

    /// How many attempts have an entry.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.table.lock().attempts.len()
    }

    /// Whether the table and its child index agree (every index entry names an attempt waiting
    /// for that child, and every waiting attempt is indexed).
    #[cfg(test)]
    fn consistent(&self) -> bool {
        let table = self.table.lock();
        let indexed = table.children.iter().all(|(child, key)| {
            table
                .attempts
                .get(key)
                .and_then(|a| a.child.as_ref())
                .is_some_and(|c| &c.child_arn == child)
        });
        let waiting = table
            .attempts
            .values()
            .filter(|a| a.child.is_some())
            .count();
        indexed && waiting == table.children.len()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::jobs::tests::{recovered_job, running_job};

    fn key(execution: &str, task: u32) -> AttemptKey {
        AttemptKey::new(Arc::from(execution), EventId(task))
    }

    /// Gives the attempt every part a backend can keep: a call, an answer, a deferred outcome,
    /// a heartbeat clock, a running job and a child.
    fn fill(attempts: &Attempts, key: &AttemptKey, runtime: &tokio::runtime::Runtime) {
        let call = runtime.spawn(std::future::pending::<()>());
        attempts.start_call(key, call.abort_handle());
        attempts.keep_answer(key, Ok(json!({"a": 1})));
        attempts.defer_outcome(
            key,
            Trigger::TokenSucceeded {
                task_id: key.task,
                output: json!({}),
            },
        );
        attempts.arm_heartbeat(key, 10, 0);
        attempts.set_job(key, JobWait::Running(running_job(&key.execution, key.task)));
        let child: Arc<str> = Arc::from(format!("{}:child{}", key.execution, key.task.0));
        attempts.wait_for_child(key, child, false);
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime")
    }

    #[test]
    fn an_ended_attempt_leaves_nothing_whatever_parts_it_had() {
        let attempts = Attempts::default();
        let runtime = runtime();
        let (a, b) = (key("arn:e", 3), key("arn:e", 5));
        fill(&attempts, &a, &runtime);
        fill(&attempts, &b, &runtime);
        assert_eq!(attempts.len(), 2);
        assert_eq!(attempts.heartbeat_clock_count(), 2);
        assert_eq!(attempts.running_job_count(), 2);
        attempts.end(&a);
        assert_eq!(attempts.len(), 1);
        assert!(attempts.take_answer(&a).is_none());
        assert!(attempts.take_child_waiter("arn:e:child3").is_none());
        assert_eq!(attempts.heartbeat_clock_count(), 1);
        assert_eq!(attempts.running_job_count(), 1);
        assert!(attempts.consistent());
        // Its stale heartbeat deadline fires nothing.
        assert_eq!(attempts.take_due_heartbeats(10_000), vec![b.clone()]);
        assert!(attempts.consistent());
    }

    /// Of a closed execution's attempts only a running job is left, for its poll to cancel.
    #[test]
    fn a_closed_execution_leaves_only_its_running_jobs_and_keeps_the_others() {
        let attempts = Attempts::default();
        let runtime = runtime();
        let closing = [key("arn:e", 3), key("arn:e", 9)];
        // A prefix of the closing ARN is another execution.
        let others = [key("arn:e2", 3), key("arn:d", 4)];
        for k in closing.iter().chain(&others) {
            fill(&attempts, k, &runtime);
        }
        attempts.set_job(
            &closing[1],
            JobWait::Recovered(recovered_job(&closing[1].execution, closing[1].task)),
        );
        assert_eq!(attempts.execution_closed("arn:e"), 2);
        assert_eq!(attempts.len(), 3, "the other two, and one running job");
        assert_eq!(attempts.running_job_count(), 3);
        assert_eq!(attempts.heartbeat_clock_count(), 2);
        for k in &closing {
            assert!(attempts.take_call(k).is_none());
            assert!(attempts.take_answer(k).is_none());
            assert!(!attempts.beat(k, 0));
        }
        assert!(attempts.take_child_waiter("arn:e:child3").is_none());
        assert!(attempts.take_child_waiter("arn:e:child9").is_none());
        assert!(attempts.consistent());
        // The running job's poll comes due and finds its task closed: the job is taken.
        assert!(attempts.running_job(&closing[0]).is_some());
        assert!(matches!(
            attempts.take_job(&closing[0]),
            Some(JobWait::Running(_))
        ));
        assert!(
            attempts.take_job(&closing[1]).is_none(),
            "recovered: dropped"
        );
        assert_eq!(attempts.execution_closed("arn:e"), 0, "nothing is left");
        let waiter = attempts
            .take_child_waiter("arn:e2:child3")
            .expect("the other execution still waits");
        assert_eq!(waiter.attempt, others[0]);
        assert!(attempts.consistent());
    }

    #[test]
    fn taking_the_last_part_drops_the_entry() {
        let attempts = Attempts::default();
        let runtime = runtime();
        let k = key("arn:e", 3);
        attempts.keep_answer(&k, Err(TaskError::new("E", "c")));
        let call = runtime.spawn(std::future::pending::<()>());
        attempts.start_call(&k, call.abort_handle());
        let finished = attempts.finish_call(&k);
        assert!(matches!(finished.answer, Some(Err(_))));
        assert!(finished.deferred.is_none());
        assert_eq!(attempts.len(), 0, "call and answer gone: no entry");

        attempts.wait_for_child(&k, Arc::from("arn:child"), true);
        attempts.arm_heartbeat(&k, 1, 0);
        assert_eq!(attempts.take_child(&k).as_deref(), Some("arn:child"));
        assert_eq!(attempts.len(), 1, "the clock is still armed");
        attempts.disarm_heartbeat(&k);
        assert_eq!(attempts.len(), 0);
        assert!(attempts.consistent());

        attempts.wait_for_child(&k, Arc::from("arn:child"), true);
        attempts.forget_child("arn:child");
        assert_eq!(attempts.len(), 0);
        assert!(attempts.consistent());
    }

    #[test]
    fn a_beaten_clock_is_pushed_back_and_a_fired_one_is_gone() {
        let attempts = Attempts::default();
        let k = key("arn:e", 5);
        attempts.arm_heartbeat(&k, 10, 0);
        assert_eq!(attempts.next_heartbeat_due_ms(), Some(10_000));
        assert!(attempts.beat(&k, 8_000));
        assert!(attempts.take_due_heartbeats(10_000).is_empty());
        assert_eq!(attempts.next_heartbeat_due_ms(), Some(18_000));
        assert_eq!(attempts.take_due_heartbeats(18_000), vec![k.clone()]);
        assert!(!attempts.beat(&k, 20_000), "fired clocks are gone");
        assert_eq!(attempts.len(), 0);
    }

    #[test]
    fn polls_come_due_in_order_and_a_registration_drops_leftover_recovered_jobs() {
        let attempts = Attempts::default();
        let (running, recovered) = (key("arn:e", 3), key("arn:e", 4));
        attempts.set_job(
            &running,
            JobWait::Running(running_job("arn:e", running.task)),
        );
        attempts.set_job(
            &recovered,
            JobWait::Recovered(recovered_job("arn:e", recovered.task)),
        );
        attempts.arm_poll(&running, 7);
        assert_eq!(attempts.next_poll_due_ms(), Some(7));
        assert_eq!(attempts.take_due_polls(7), vec![running.clone()]);
        assert!(attempts.running_job(&running).is_some());
        assert!(attempts.running_job(&recovered).is_none());
        assert!(attempts.has_running_job(&running));
        assert!(!attempts.has_running_job(&recovered));
        assert!(attempts.take_due_polls(100).is_empty(), "taken once");
        attempts.drop_recovered_jobs("arn:aws:states:::other:job");
        assert_eq!(attempts.len(), 2, "another base's are kept");
        attempts.drop_recovered_jobs(crate::jobs::tests::BASE);
        assert_eq!(attempts.len(), 1, "the running job is not a leftover");
        assert!(attempts.take_job(&recovered).is_none());
        assert!(attempts.take_job(&running).is_some());
        assert_eq!(attempts.len(), 0);
    }
}
