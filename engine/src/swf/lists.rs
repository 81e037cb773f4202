//! swf::lists: the SWF task lists of one engine: decision task lists and activity task lists,
//! each scoped to a domain and named by the caller (a list exists once a task is scheduled into
//! it or a poller asks for it). A list is ordered by `taskPriority` (higher first), then by the
//! order tasks were offered (FIFO). Pollers block on the list's condition variable up to their
//! deadline.
//!
//! The lists are memory only, derived from the runs' folded states: the engine offers every
//! scheduled, unclaimed task of a run after each commit (and on open), and withdraws the ones
//! that are no longer scheduled. A task sits in at most one list, once; `take` hands it to
//! exactly one poller, who must claim it durably (`…TaskStarted`) under the run's lock and
//! drop it if the run no longer has it scheduled (a stale entry is harmless).
//!
//! A poll may be given up by whoever waits for its answer ([`PollCancel`]: an HTTP client that
//! hung up): a waiting poller wakes and answers nothing, and a poller that took a task but
//! has not claimed it yet leaves it to the list (the caller checks before its claim).
//!
//! Invariants: no lock of this module is held while the caller appends or holds a run lock
//! (the run lock is taken first, then this one, never the other way round); a cancel's own
//! lock is never held while the lists' lock is taken. Must not: sleep
//! (pollers wait on a condition variable with a deadline), read the engine's clock (deadlines
//! of a long poll are real time by design: they bound a connection, not a workflow).

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Condvar, Mutex, MutexGuard};
use statelog_swf::api::{Fault, SwfError};

use crate::limits::SWF_TASK_LIST_POLLERS_MAX;

/// Which kind of list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum TaskKind {
    /// Decision tasks (deciders poll them).
    Decision,
    /// Activity tasks (workers poll them).
    Activity,
}

/// A task in a list: its run and the id of the event that scheduled it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct TaskRef {
    /// The run.
    pub(crate) run_id: Arc<str>,
    /// The `DecisionTaskScheduled` / `ActivityTaskScheduled` event.
    pub(crate) scheduled_event_id: u64,
}

type ListKey = (TaskKind, String, String);
type Order = (Reverse<i32>, u64);

#[derive(Debug, Default)]
struct List {
    queue: BTreeMap<Order, TaskRef>,
    condvar: Arc<Condvar>,
    /// Polls waiting on it now (at most [`SWF_TASK_LIST_POLLERS_MAX`]).
    pollers: usize,
}

#[derive(Debug, Default)]
struct Lists {
    lists: HashMap<ListKey, List>,
    /// Where each task is, and its place in that list.
    placed: HashMap<TaskRef, (ListKey, Order)>,
    next_seq: u64,
    /// Set by [`TaskLists::close`]: every poll answers empty from then on, so a poll still
    /// waiting when its engine shuts down claims nothing nobody would receive.
    closed: bool,
}

/// Every SWF task list of the engine.
#[derive(Debug, Default)]
pub(crate) struct TaskLists {
    inner: Arc<Mutex<Lists>>,
}

/// How a long poll learns that nobody waits for its answer any more: whoever waits (an HTTP
/// request) holds a clone and calls [`PollCancel::cancel`] when it stops waiting (its
/// connection closed). A poll that is cancelled while it waits wakes and answers empty; one
/// cancelled after it took a task but before it claimed it leaves the task to its list, so the
/// task goes to the next poller instead of being started for nobody. A poll cancelled after
/// its claim is durable is too late: its task stays started until its start-to-close timeout
/// (SWF's own recovery for an answer a decider or worker never got).
#[derive(Debug, Clone, Default)]
pub struct PollCancel {
    inner: Arc<CancelState>,
}

#[derive(Debug, Default)]
struct CancelState {
    cancelled: AtomicBool,
    /// The list its poll waits on (set while it waits): what `cancel` wakes.
    waiting_on: Mutex<Option<Waiting>>,
}

#[derive(Debug)]
struct Waiting {
    lists: Arc<Mutex<Lists>>,
    condvar: Arc<Condvar>,
}

impl PollCancel {
    /// A poll nobody has given up yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Gives the poll up: it answers empty and claims no task from now on (one already
    /// claimed stays claimed). Idempotent; callable from any thread, before, during or after
    /// the poll.
    pub fn cancel(&self) {
        self.inner.cancelled.store(true, Ordering::SeqCst);
        // Taken out (the cancel's lock released) before the lists' lock is taken: a poller
        // installs its waiting place under the lists' lock, so the two never nest this way.
        let waiting = self.inner.waiting_on.lock().take();
        if let Some(waiting) = waiting {
            // Under the lists' lock: the poller either has not checked the flag yet (and will
            // see it) or waits on the condvar (and is woken).
            let _lists = waiting.lists.lock();
            waiting.condvar.notify_all();
        }
    }

    /// Whether the poll was given up.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::SeqCst)
    }

    fn wait_on(&self, waiting: Option<Waiting>) {
        *self.inner.waiting_on.lock() = waiting;
    }
}

impl TaskLists {
    /// Puts `task` at its place in a list (a task already in a list stays where it is) and
    /// wakes one poller of that list.
    pub(crate) fn offer(
        &self,
        kind: TaskKind,
        domain: &str,
        list: &str,
        priority: i32,
        task: TaskRef,
    ) {
        let mut lists = self.inner.lock();
        if lists.placed.contains_key(&task) {
            return;
        }
        let seq = lists.next_seq;
        lists.next_seq += 1;
        let key = (kind, domain.to_string(), list.to_string());
        let order = (Reverse(priority), seq);
        lists.placed.insert(task.clone(), (key.clone(), order));
        let entry = lists.lists.entry(key).or_default();
        entry.queue.insert(order, task);
        entry.condvar.notify_one();
    }

    /// Takes `task` out of its list, if it is in one.
    pub(crate) fn withdraw(&self, task: &TaskRef) {
        let mut lists = self.inner.lock();
        if let Some((key, order)) = lists.placed.remove(task) {
            if let Some(list) = lists.lists.get_mut(&key) {
                list.queue.remove(&order);
                if list.queue.is_empty()
                    && list.pollers == 0
                    && Arc::strong_count(&list.condvar) == 1
                {
                    lists.lists.remove(&key);
                }
            }
        }
    }

    /// Whether `task` waits in a list.
    #[cfg(test)]
    pub(crate) fn contains(&self, task: &TaskRef) -> bool {
        self.inner.lock().placed.contains_key(task)
    }

    /// Drops a list nobody waits on and nothing waits in.
    fn forget_if_idle(lists: &mut Lists, key: &ListKey) {
        if let Some(list) = lists.lists.get(key) {
            if list.queue.is_empty() && list.pollers == 0 && Arc::strong_count(&list.condvar) == 1 {
                lists.lists.remove(key);
            }
        }
    }

    fn take_locked(lists: &mut Lists, key: &ListKey) -> Option<TaskRef> {
        let list = lists.lists.get_mut(key)?;
        let (_, task) = list.queue.pop_first()?;
        lists.placed.remove(&task);
        Some(task)
    }

    /// Takes the first task of a list, waiting for one until `deadline` (a deadline already
    /// past takes only what is there), or until `cancel` gives the poll up (then nothing). A
    /// poll that would wait on a list where [`SWF_TASK_LIST_POLLERS_MAX`] polls wait already is
    /// refused with `LimitExceededFault`, as SWF refuses it.
    pub(crate) fn take(
        &self,
        kind: TaskKind,
        domain: &str,
        list: &str,
        deadline: Instant,
        cancel: &PollCancel,
    ) -> Result<Option<TaskRef>, SwfError> {
        let key = (kind, domain.to_string(), list.to_string());
        let mut lists = self.inner.lock();
        if lists.closed || cancel.is_cancelled() {
            return Ok(None);
        }
        if let Some(task) = Self::take_locked(&mut lists, &key) {
            return Ok(Some(task));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        let entry = lists.lists.entry(key.clone()).or_default();
        if entry.pollers >= SWF_TASK_LIST_POLLERS_MAX {
            return Err(SwfError::new(
                Fault::LimitExceeded,
                format!(
                    "Task list {list} already has {SWF_TASK_LIST_POLLERS_MAX} polls waiting, the \
                     most it may have"
                ),
            ));
        }
        // Counted while it waits; the list is kept while any poller is counted.
        entry.pollers += 1;
        let task = self.wait_locked(&mut lists, &key, deadline, cancel);
        if let Some(list) = lists.lists.get_mut(&key) {
            list.pollers -= 1;
        }
        Self::forget_if_idle(&mut lists, &key);
        Ok(task)
    }

    /// The wait of [`TaskLists::take`], its poller counted in the list.
    fn wait_locked(
        &self,
        lists: &mut MutexGuard<'_, Lists>,
        key: &ListKey,
        deadline: Instant,
        cancel: &PollCancel,
    ) -> Option<TaskRef> {
        loop {
            if lists.closed || cancel.is_cancelled() {
                return None;
            }
            if let Some(task) = Self::take_locked(lists, key) {
                return Some(task);
            }
            let condvar = lists.lists.entry(key.clone()).or_default().condvar.clone();
            // Installed, then the flag checked again, all under the lists' lock: a cancel
            // between the two finds the waiting place and wakes the wait below.
            cancel.wait_on(Some(Waiting {
                lists: self.inner.clone(),
                condvar: condvar.clone(),
            }));
            if cancel.is_cancelled() {
                cancel.wait_on(None);
                return None;
            }
            let timed_out = condvar.wait_until(lists, deadline).timed_out();
            // The waiting place holds a clone of the condvar: gone before the caller counts the
            // list's clones.
            cancel.wait_on(None);
            if timed_out {
                if lists.closed || cancel.is_cancelled() {
                    return None;
                }
                return Self::take_locked(lists, key);
            }
        }
    }

    /// How many tasks wait in a list.
    pub(crate) fn count(&self, kind: TaskKind, domain: &str, list: &str) -> usize {
        let key = (kind, domain.to_string(), list.to_string());
        self.inner
            .lock()
            .lists
            .get(&key)
            .map_or(0, |list| list.queue.len())
    }

    /// Closes every list: the waiting polls wake and answer empty, later ones answer empty at
    /// once. For a shutdown: a poll whose server is going away must not claim a task.
    pub(crate) fn close(&self) {
        let mut lists = self.inner.lock();
        lists.closed = true;
        for list in lists.lists.values() {
            list.condvar.notify_all();
        }
    }

    /// Wakes every poller (a test that wants them to look again).
    #[cfg(test)]
    pub(crate) fn wake_all(&self) {
        let lists = self.inner.lock();
        for list in lists.lists.values() {
            list.condvar.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn take(
        lists: &TaskLists,
        kind: TaskKind,
        domain: &str,
        list: &str,
        deadline: Instant,
        cancel: &PollCancel,
    ) -> Option<TaskRef> {
        lists
            .take(kind, domain, list, deadline, cancel)
            .expect("under the pollers limit")
    }

    fn task(run: &str, id: u64) -> TaskRef {
        TaskRef {
            run_id: Arc::from(run),
            scheduled_event_id: id,
        }
    }

    #[test]
    fn a_closed_list_wakes_its_waiting_poller_empty_and_hands_out_nothing() {
        let lists = Arc::new(TaskLists::default());
        let waiting = {
            let lists = lists.clone();
            std::thread::spawn(move || {
                let far = Instant::now() + std::time::Duration::from_secs(600);
                take(
                    &lists,
                    TaskKind::Decision,
                    "d",
                    "l",
                    far,
                    &PollCancel::new(),
                )
            })
        };
        // One close is enough whether or not the poller waits yet: a close before its wait is
        // seen at the top of its loop, one during it wakes it.
        lists.close();
        assert_eq!(waiting.join().expect("joins"), None);
        lists.offer(TaskKind::Decision, "d", "l", 0, task("r", 1));
        assert_eq!(
            take(
                &lists,
                TaskKind::Decision,
                "d",
                "l",
                Instant::now(),
                &PollCancel::new()
            ),
            None
        );
    }

    #[test]
    fn a_cancelled_poll_wakes_empty_takes_nothing_and_leaves_no_list_behind() {
        let lists = Arc::new(TaskLists::default());
        let cancel = PollCancel::new();
        let waiting = {
            let (lists, cancel) = (lists.clone(), cancel.clone());
            std::thread::spawn(move || {
                let far = Instant::now() + Duration::from_secs(600);
                take(&lists, TaskKind::Decision, "d", "l", far, &cancel)
            })
        };
        // One cancel is enough whether or not the poller waits yet (as with `close`).
        cancel.cancel();
        assert_eq!(waiting.join().expect("joins"), None);
        assert!(
            lists.inner.lock().lists.is_empty(),
            "no empty list kept for a poll that left"
        );
        // A cancelled poll takes nothing even when a task waits; another poll gets it.
        lists.offer(TaskKind::Decision, "d", "l", 0, task("r", 1));
        let past = Instant::now();
        assert_eq!(
            take(&lists, TaskKind::Decision, "d", "l", past, &cancel),
            None
        );
        assert_eq!(lists.count(TaskKind::Decision, "d", "l"), 1);
        assert_eq!(
            take(
                &lists,
                TaskKind::Decision,
                "d",
                "l",
                past,
                &PollCancel::new()
            ),
            Some(task("r", 1))
        );
        // Pollers of one list: cancelling one leaves the other waiting for the next task.
        let (one, two) = (PollCancel::new(), PollCancel::new());
        let spawn = |cancel: &PollCancel| {
            let (lists, cancel) = (lists.clone(), cancel.clone());
            std::thread::spawn(move || {
                let far = Instant::now() + Duration::from_secs(600);
                take(&lists, TaskKind::Decision, "d", "l", far, &cancel)
            })
        };
        let (first, second) = (spawn(&one), spawn(&two));
        one.cancel();
        assert_eq!(first.join().expect("joins"), None);
        lists.offer(TaskKind::Decision, "d", "l", 0, task("r", 2));
        assert_eq!(second.join().expect("joins"), Some(task("r", 2)));
        assert!(!two.is_cancelled());
    }

    #[test]
    fn a_list_refuses_a_poller_past_its_limit_and_counts_only_waiting_ones() {
        let lists = Arc::new(TaskLists::default());
        let cancels: Vec<PollCancel> = (0..SWF_TASK_LIST_POLLERS_MAX)
            .map(|_| PollCancel::new())
            .collect();
        let waiting: Vec<_> = cancels
            .iter()
            .map(|cancel| {
                let (lists, cancel) = (lists.clone(), cancel.clone());
                std::thread::spawn(move || {
                    let far = Instant::now() + Duration::from_secs(600);
                    lists.take(TaskKind::Activity, "d", "l", far, &cancel)
                })
            })
            .collect();
        // Wait until every poller is counted (each counts itself before it waits).
        while lists
            .inner
            .lock()
            .lists
            .get(&(TaskKind::Activity, "d".into(), "l".into()))
            .map_or(0, |l| l.pollers)
            < SWF_TASK_LIST_POLLERS_MAX
        {
            std::thread::yield_now();
        }
        let far = Instant::now() + Duration::from_secs(600);
        let refused = lists
            .take(TaskKind::Activity, "d", "l", far, &PollCancel::new())
            .expect_err("one poller too many");
        assert_eq!(refused.fault, Fault::LimitExceeded);
        // Another list, and a poll that does not wait (a task is there), are not refused.
        assert_eq!(
            take(
                &lists,
                TaskKind::Decision,
                "d",
                "l",
                Instant::now(),
                &PollCancel::new()
            ),
            None
        );
        lists.offer(TaskKind::Activity, "d", "l", 0, task("r", 1));
        for cancel in &cancels {
            cancel.cancel();
        }
        let answers: Vec<_> = waiting
            .into_iter()
            .map(|w| w.join().expect("joins").expect("was admitted"))
            .collect();
        assert!(answers.iter().filter(|a| a.is_some()).count() <= 1);
        // Once they left, the list takes pollers again and keeps no count.
        let past = Instant::now();
        let _ = take(
            &lists,
            TaskKind::Activity,
            "d",
            "l",
            past,
            &PollCancel::new(),
        );
        assert_eq!(
            take(
                &lists,
                TaskKind::Activity,
                "d",
                "l",
                Instant::now() + Duration::from_millis(1),
                &PollCancel::new()
            ),
            None
        );
        assert!(lists.inner.lock().lists.is_empty(), "no list kept");
    }

    #[test]
    fn higher_priority_first_then_fifo_and_lists_are_separate() {
        let lists = TaskLists::default();
        let past = Instant::now();
        lists.offer(TaskKind::Activity, "d", "l", 0, task("a", 1));
        lists.offer(TaskKind::Activity, "d", "l", 5, task("b", 1));
        lists.offer(TaskKind::Activity, "d", "l", 0, task("c", 1));
        lists.offer(TaskKind::Activity, "d", "l", -3, task("d", 1));
        lists.offer(TaskKind::Activity, "d", "l", 5, task("b", 1));
        lists.offer(TaskKind::Decision, "d", "l", 9, task("x", 1));
        lists.offer(TaskKind::Activity, "e", "l", 9, task("y", 1));
        assert_eq!(
            lists.count(TaskKind::Activity, "d", "l"),
            4,
            "an offer is once"
        );
        let order: Vec<String> = std::iter::from_fn(|| {
            take(
                &lists,
                TaskKind::Activity,
                "d",
                "l",
                past,
                &PollCancel::new(),
            )
        })
        .map(|t| t.run_id.to_string())
        .collect();
        assert_eq!(order, ["b", "a", "c", "d"]);
        assert_eq!(lists.count(TaskKind::Decision, "d", "l"), 1);
        lists.withdraw(&task("x", 1));
        assert_eq!(lists.count(TaskKind::Decision, "d", "l"), 0);
        assert!(lists.contains(&task("y", 1)));
    }

    #[test]
    fn a_waiting_poller_gets_a_task_offered_later_and_an_empty_one_times_out() {
        let lists = Arc::new(TaskLists::default());
        let waiting = {
            let lists = lists.clone();
            std::thread::spawn(move || {
                take(
                    &lists,
                    TaskKind::Decision,
                    "d",
                    "l",
                    Instant::now() + Duration::from_secs(30),
                    &PollCancel::new(),
                )
            })
        };
        // Offer until the poller has it (it may not be waiting yet).
        lists.offer(TaskKind::Decision, "d", "l", 0, task("r", 3));
        let got = waiting.join().expect("joins");
        assert_eq!(got, Some(task("r", 3)));
        let empty = take(
            &lists,
            TaskKind::Decision,
            "d",
            "l",
            Instant::now() + Duration::from_millis(20),
            &PollCancel::new(),
        );
        assert_eq!(empty, None);
        lists.wake_all();
    }
}
