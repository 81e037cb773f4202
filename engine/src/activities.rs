//! activities: Step Functions activities and the task lists that route their tasks to workers
//! (after Amazon SWF). Owns the activity registry (`create_activity`, `describe_activity`,
//! `list_activities`, `delete_activity`), the task lists (pending tasks, waiting pollers and
//! waiting peekers per `(namespace, list)`), the hand-out of a scheduled activity task
//! (`dispatch` routes every activity resource here), the long poll `get_activity_task` /
//! `poll_task_lists` and the peek `await_task_lists`.
//!
//! A task list exists as soon as a task is scheduled into it or a worker polls it. An activity's
//! default list is named by the activity ARN; a Task state may name another with the `TaskList`
//! / `TaskListPath` extensions. A task sits in exactly one list and is handed to one poller;
//! delivery is FIFO per list, best effort (a task whose claim fails goes back to the front).
//! Claiming writes `ActivityStarted` (with the worker's name) durably before the token leaves;
//! the poll awaits that durability without blocking its thread (`Commit::Notify`).
//! A task scheduled while a poller waits on its list is claimed for that poller in the commit
//! that schedules it (`reserve_poller`, used by `kernel::Engine::commit_decision`): one commit less.
//!
//! A peek (`await_task_lists`, what a cluster node sends each partition's owner before its
//! claiming poll with wait 0) waits until one of its lists holds a pending task and claims
//! nothing: a peeker never takes a task, never takes a poller's place and never refuses an offer.
//! A task that becomes pending (queued by `offer`, or put back after a failed claim) wakes every
//! peeker of its list; a task handed straight to a waiting poller, or claimed in the commit that
//! schedules it, wakes none (it was never claimable by anyone else). A peek's true is a hint,
//! not a promise: a local poller, another node's claim or the task's own end may take the task
//! before the caller's claim, which then finds nothing, and the caller peeks again.
//!
//! The lists are memory only: they are derived from the log. On open every scheduled, unclaimed
//! activity task is offered again (it is a pending effect of its execution), and a claimed one
//! stays claimed until its answer, its heartbeat or its timeout. The registry is persisted: each
//! `create_activity` / `delete_activity` is a durable catalog record (`store::catalog`), so the
//! activities of a data directory (its namespace) are there again after `open`, and survive
//! compaction while they live. Tasks of an activity that does not exist still queue in its list.
//!
//! Invariants: no lock of this module is held across an await or a log append; a pending task
//! and a poller are never both waiting in one list; a peeker still listed in a list that holds a
//! pending task has been woken; a peek's registration ends with its future (completed or
//! dropped), so no peeker outlives its caller. Must not: sleep (the long poll and the peek wait
//! on a channel with a deadline), hand out a task that is not claimable, or let a peek claim.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::oneshot;

use super::arn::{Arn, ResourceType};
use super::backend::{AttemptKey, Delivery};
use super::error::{ArgumentReason, NameReason};
use super::kernel::Commit;
use super::{Engine, Error};
use crate::limits::{
    ACTIVITY_NAME_CHARS_MAX, ACTIVITY_POLL_MS_MAX, TASK_LIST_PENDING_MAX, TASK_LIST_POLLERS_MAX,
};
use statelog_core::asl::StateMachine;
use statelog_core::history::EventId;
use statelog_core::interpreter::{
    decide_owned, Decision, Effect, ExecutionState, TaskInvocation, Trigger,
};
use statelog_core::limits::TASK_LIST_NAME_CHARS_MAX;

/// An activity as `DescribeActivity` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivityDescription {
    /// `arn:aws:states:<region>:<account>:activity:<name>`.
    pub activity_arn: String,
    /// Its name.
    pub name: String,
    /// When it was created, ms since the epoch.
    pub created_ms: u64,
}

/// A task handed to a worker by `get_activity_task`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivityTask {
    /// Answer with `send_task_success` / `send_task_failure` / `send_task_heartbeat`.
    pub task_token: String,
    /// The task's effective input, as JSON text.
    pub input: String,
    /// The execution the task belongs to.
    pub execution_arn: String,
    /// The Task state's `Resource` (the activity ARN).
    pub activity_arn: String,
    /// The id of the task's `ActivityScheduled` event.
    pub scheduled_event_id: u32,
    /// The id of the `ActivityStarted` event the claim wrote.
    pub started_event_id: u32,
}

/// Whether a Task `Resource` names an activity.
pub(crate) fn is_activity_resource(resource: &str) -> bool {
    resource.split(':').nth(5) == Some("activity")
}

/// The account field of an ARN.
fn account_of(arn: &str) -> &str {
    arn.split(':').nth(4).unwrap_or_default()
}

type ListKey = (String, String);

/// A scheduled task waiting in a list.
#[derive(Debug, Clone)]
struct Pending {
    attempt: AttemptKey,
    /// Already claimed for the receiving poller (scheduled and claimed in one commit, see
    /// `Activities::reserve_poller`): hand this out as is.
    claimed: Option<Box<ActivityTask>>,
}

/// One waiting long poll; registered in every list it polls, served once.
struct Poller {
    sender: Mutex<Option<oneshot::Sender<Pending>>>,
    /// The worker name the poll gave (recorded in `ActivityStarted`).
    worker_name: Option<String>,
}

/// A waiting poller taken out of its lists to receive a task claimed for it in the same commit
/// that schedules the task (see `kernel::Engine::commit_decision`).
pub(crate) struct Reservation {
    sender: oneshot::Sender<Pending>,
    /// The worker name the poll gave.
    pub(crate) worker_name: Option<String>,
}

impl Reservation {
    /// Hands the claimed task to the poller; false when it stopped waiting meanwhile (the task
    /// is then a claimed task whose worker vanished: its heartbeat or timeout frees it).
    pub(crate) fn deliver(self, attempt: AttemptKey, task: ActivityTask) -> bool {
        let pending = Pending {
            attempt,
            claimed: Some(Box::new(task)),
        };
        self.sender.send(pending).is_ok()
    }
}

/// One waiting peek (`Engine::await_task_lists`); registered in every list it peeks, woken
/// once (by the first of its lists that gets a pending task), taking nothing.
struct Peeker {
    sender: Mutex<Option<oneshot::Sender<()>>>,
}

impl Peeker {
    /// Tells the peek a task is pending, once (another of its lists may have told it already).
    fn wake(&self) {
        if let Some(sender) = self.sender.lock().take() {
            // The peek may have stopped waiting; its registration is going away then.
            let _ = sender.send(());
        }
    }
}

#[derive(Default)]
struct TaskList {
    pending: VecDeque<Pending>,
    pollers: VecDeque<Arc<Poller>>,
    peekers: Vec<Arc<Peeker>>,
}

impl TaskList {
    /// Wakes and forgets every peeker of the list: a task is pending in it. A peeker that also
    /// peeks other lists stays listed there until its peek ends (`Activities::unpeek`).
    fn wake_peekers(&mut self) {
        for peeker in self.peekers.drain(..) {
            peeker.wake();
        }
        debug_assert!(self.peekers.is_empty());
    }
}

/// The task lists (the registry is in the store).
#[derive(Default)]
pub(crate) struct Activities {
    lists: Mutex<HashMap<ListKey, TaskList>>,
}

/// What a poll found under the lists lock.
enum Found {
    Task(Pending),
    Registered,
}

/// What a peek found under the lists lock.
#[derive(Debug, PartialEq, Eq)]
enum Peeked {
    /// A list holds a pending task.
    Pending,
    /// No list does; the peeker is registered in every list (when it was given one).
    Waiting,
}

/// A peek registered in its lists; dropping it (the peek returned, or its future was dropped)
/// takes the peeker out of every list, so a cancelled peek leaves nothing behind.
struct PeekRegistration<'a> {
    activities: &'a Activities,
    namespace: &'a str,
    lists: &'a [String],
    peeker: Arc<Peeker>,
}

impl Drop for PeekRegistration<'_> {
    fn drop(&mut self) {
        self.activities
            .unpeek(self.namespace, self.lists, &self.peeker);
    }
}

impl Activities {
    /// Unclaimed tasks of every known list: `(namespace, list, count)`, sorted.
    pub(crate) fn pending_counts(&self) -> Vec<(String, String, usize)> {
        let mut counts: Vec<_> = self
            .lists
            .lock()
            .iter()
            .map(|((namespace, list), l)| (namespace.clone(), list.clone(), l.pending.len()))
            .collect();
        counts.sort();
        counts
    }

    /// Gives `task` to the first live poller of its list, else queues it. Returns the task
    /// back when the list is full.
    fn offer(&self, key: ListKey, task: Pending) -> Result<(), Pending> {
        let mut lists = self.lists.lock();
        let list = lists.entry(key).or_default();
        let mut task = task;
        while let Some(poller) = list.pollers.pop_front() {
            let Some(sender) = poller.sender.lock().take() else {
                continue;
            };
            match sender.send(task) {
                Ok(()) => return Ok(()),
                Err(back) => task = back,
            }
        }
        if list.pending.len() >= TASK_LIST_PENDING_MAX {
            return Err(task);
        }
        list.pending.push_back(task);
        list.wake_peekers();
        Ok(())
    }

    /// Takes the first poller still waiting on list `list` of the namespace of
    /// `execution_arn`, if any, out of every list it polls.
    pub(crate) fn reserve_poller(&self, execution_arn: &str, list: &str) -> Option<Reservation> {
        let key = (account_of(execution_arn).to_string(), list.to_string());
        let mut lists = self.lists.lock();
        let list = lists.get_mut(&key)?;
        while let Some(poller) = list.pollers.pop_front() {
            let Some(sender) = poller.sender.lock().take() else {
                continue;
            };
            if sender.is_closed() {
                continue;
            }
            return Some(Reservation {
                sender,
                worker_name: poller.worker_name.clone(),
            });
        }
        None
    }

    /// Puts back a task whose hand-out did not complete, first in line.
    fn put_back(&self, key: ListKey, task: Pending) {
        let mut lists = self.lists.lock();
        let list = lists.entry(key).or_default();
        list.pending.push_front(task);
        list.wake_peekers();
    }

    /// Takes the first pending task of the first non-empty list, or registers `poller` in
    /// every list (all under one lock, so no task slips between the two).
    fn take_or_register(
        &self,
        namespace: &str,
        lists: &[String],
        poller: &Arc<Poller>,
    ) -> Result<Found, Error> {
        let mut all = self.lists.lock();
        for name in lists {
            let key = (namespace.to_string(), name.clone());
            if let Some(task) = all.get_mut(&key).and_then(|l| l.pending.pop_front()) {
                return Ok(Found::Task(task));
            }
        }
        for name in lists {
            let key = (namespace.to_string(), name.clone());
            if all
                .get(&key)
                .is_some_and(|l| l.pollers.len() >= TASK_LIST_POLLERS_MAX)
            {
                return Err(Error::TaskListLimitExceeded {
                    task_list: name.clone(),
                    what: "pollers",
                    limit: TASK_LIST_POLLERS_MAX,
                });
            }
        }
        for name in lists {
            let key = (namespace.to_string(), name.clone());
            all.entry(key)
                .or_default()
                .pollers
                .push_back(poller.clone());
        }
        Ok(Found::Registered)
    }

    /// Removes `poller` from its lists and closes it.
    /// Returns true when a hand-off had already taken the poller's sender (its task is in the
    /// channel, or on its way from a commit in flight).
    fn deregister(&self, namespace: &str, lists: &[String], poller: &Arc<Poller>) -> bool {
        let handed_off = poller.sender.lock().take().is_none();
        let mut all = self.lists.lock();
        for name in lists {
            let key = (namespace.to_string(), name.clone());
            if let Some(list) = all.get_mut(&key) {
                list.pollers.retain(|p| !Arc::ptr_eq(p, poller));
            }
        }
        handed_off
    }

    /// Whether one of `lists` holds a pending task; if none does and `peeker` is given, registers
    /// it in every list (all under one lock, so no task slips between the two).
    /// `TaskListLimitExceeded` (and nothing registered) when a list already has its maximum of
    /// peekers, the same maximum as of pollers.
    fn peek_or_register(
        &self,
        namespace: &str,
        lists: &[String],
        peeker: Option<&Arc<Peeker>>,
    ) -> Result<Peeked, Error> {
        let mut all = self.lists.lock();
        for name in lists {
            let key = (namespace.to_string(), name.clone());
            if all.get(&key).is_some_and(|l| !l.pending.is_empty()) {
                return Ok(Peeked::Pending);
            }
        }
        let Some(peeker) = peeker else {
            return Ok(Peeked::Waiting);
        };
        for name in lists {
            let key = (namespace.to_string(), name.clone());
            if all
                .get(&key)
                .is_some_and(|l| l.peekers.len() >= TASK_LIST_POLLERS_MAX)
            {
                return Err(Error::TaskListLimitExceeded {
                    task_list: name.clone(),
                    what: "peekers",
                    limit: TASK_LIST_POLLERS_MAX,
                });
            }
        }
        for name in lists {
            let key = (namespace.to_string(), name.clone());
            let list = all.entry(key).or_default();
            // A list named twice registers the peeker once.
            if !list.peekers.iter().any(|p| Arc::ptr_eq(p, peeker)) {
                list.peekers.push(peeker.clone());
            }
            debug_assert!(list.peekers.len() <= TASK_LIST_POLLERS_MAX);
        }
        Ok(Peeked::Waiting)
    }

    /// Takes `peeker` out of every list it may still be listed in.
    fn unpeek(&self, namespace: &str, lists: &[String], peeker: &Arc<Peeker>) {
        let mut all = self.lists.lock();
        for name in lists {
            let key = (namespace.to_string(), name.clone());
            if let Some(list) = all.get_mut(&key) {
                list.peekers.retain(|p| !Arc::ptr_eq(p, peeker));
            }
        }
    }

    /// How many peeks wait on a list.
    #[cfg(test)]
    fn peeker_count(&self, namespace: &str, list: &str) -> usize {
        self.lists
            .lock()
            .get(&(namespace.to_string(), list.to_string()))
            .map_or(0, |l| l.peekers.len())
    }

    /// Withdraws the scheduled, unclaimed task of the attempt from whichever list of its
    /// namespace holds it (its task was aborted or timed out). Scans the non-empty lists of the
    /// namespace; false when no list held it (claimed, or not an activity task).
    pub(crate) fn withdraw(&self, attempt: &AttemptKey) -> bool {
        let namespace = account_of(&attempt.execution);
        let mut lists = self.lists.lock();
        for ((list_namespace, _), list) in lists.iter_mut() {
            if list_namespace != namespace || list.pending.is_empty() {
                continue;
            }
            let found = list.pending.iter().position(|p| p.attempt == *attempt);
            if let Some(index) = found {
                list.pending.remove(index);
                return true;
            }
        }
        false
    }

    /// How many tasks wait in a list.
    fn pending_count(&self, namespace: &str, list: &str) -> usize {
        self.lists
            .lock()
            .get(&(namespace.to_string(), list.to_string()))
            .map_or(0, |l| l.pending.len())
    }
}

fn check_list_name(name: &str) -> Result<(), Error> {
    if name.is_empty() || name.chars().count() > TASK_LIST_NAME_CHARS_MAX {
        return Err(Error::InvalidArgument {
            field: "taskList",
            reason: ArgumentReason::TaskListName {
                name: name.to_string(),
                chars_max: TASK_LIST_NAME_CHARS_MAX,
            },
        });
    }
    Ok(())
}

impl Engine {
    /// `CreateActivity`: registers an activity durably (idempotent for an existing name) and
    /// returns its ARN, `arn:aws:states:<region>:<account>:activity:<name>`.
    pub fn create_activity(&self, name: &str) -> Result<ActivityDescription, Error> {
        self.create_activity_with_tags(name, &[])
    }

    /// `CreateActivity` with tags: checks the tags, creates the activity (or finds it), then
    /// sets the tags on it.
    pub fn create_activity_with_tags(
        &self,
        name: &str,
        tags: &[super::Tag],
    ) -> Result<ActivityDescription, Error> {
        super::naming::check_name(name)?;
        if name.chars().count() > ACTIVITY_NAME_CHARS_MAX {
            return Err(Error::InvalidName {
                name: name.to_string(),
                reason: NameReason::ActivityNameTooLong {
                    chars_max: ACTIVITY_NAME_CHARS_MAX,
                },
            });
        }
        let pairs = super::catalog::check_tags(tags)?;
        super::catalog::check_tag_count(&self.activity_arn(name), &pairs)?;
        let now_ms = self.inner.options.clock.now_ms();
        let (entry, _created) = self.inner.store.create_activity(name, now_ms)?;
        let description = self.activity_description(&entry);
        if !pairs.is_empty() {
            self.tag_resource(&description.activity_arn, tags)?;
        }
        Ok(description)
    }

    /// `DescribeActivity`.
    pub fn describe_activity(&self, activity_arn: &str) -> Result<ActivityDescription, Error> {
        self.activity_name_of(activity_arn)?
            .and_then(|name| self.inner.store.activity(name))
            .map(|entry| self.activity_description(&entry))
            .ok_or_else(|| Error::ActivityDoesNotExist {
                activity_arn: activity_arn.to_string(),
            })
    }

    /// `ListActivities`, by name.
    pub fn list_activities(&self) -> Vec<ActivityDescription> {
        self.inner
            .store
            .activities()
            .iter()
            .map(|entry| self.activity_description(entry))
            .collect()
    }

    /// `DeleteActivity`: forgets the activity and its tags, durably (its queued tasks stay in
    /// their lists).
    pub fn delete_activity(&self, activity_arn: &str) -> Result<(), Error> {
        let missing = || Error::ActivityDoesNotExist {
            activity_arn: activity_arn.to_string(),
        };
        let name = self.activity_name_of(activity_arn)?.ok_or_else(missing)?;
        let now_ms = self.inner.options.clock.now_ms();
        if self.inner.store.delete_activity(name, now_ms)? {
            Ok(())
        } else {
            Err(missing())
        }
    }

    /// `arn:aws:states:<region>:<account>:activity:<name>` of this engine.
    fn activity_arn(&self, name: &str) -> String {
        format!(
            "arn:aws:states:{}:{}:activity:{name}",
            self.inner.options.region, self.inner.options.account
        )
    }

    /// The name in an activity ARN, `None` when the ARN is of another region or account;
    /// `InvalidArn` when the text is not an activity ARN.
    fn activity_name_of<'a>(&self, activity_arn: &'a str) -> Result<Option<&'a str>, Error> {
        let arn = Arn::parse_as(activity_arn, &[ResourceType::Activity])?;
        Ok(self.is_own(&arn).then_some(arn.resource.name()))
    }

    fn activity_description(&self, entry: &statelog_store::ActivityEntry) -> ActivityDescription {
        ActivityDescription {
            activity_arn: self.activity_arn(&entry.name),
            name: entry.name.clone(),
            created_ms: entry.created_ms,
        }
    }

    /// `GetActivityTask`: long-polls the activity's default task list for up to 60 s; returns
    /// the task's token and input, or `None` when none came in time.
    pub async fn get_activity_task(
        &self,
        activity_arn: &str,
        worker_name: Option<&str>,
    ) -> Result<Option<ActivityTask>, Error> {
        self.describe_activity(activity_arn)?;
        let namespace = account_of(activity_arn).to_string();
        let lists = [activity_arn.to_string()];
        self.poll_task_lists(&namespace, &lists, worker_name, ACTIVITY_POLL_MS_MAX)
            .await
    }

    /// Long-polls `lists` of `namespace` in priority order (the first list with a task wins)
    /// for up to `wait_ms` (at most 60 s; 0 only takes what is queued). A list is named by an
    /// activity ARN (its default list) or by a `TaskList` name. `TaskListLimitExceeded` when a
    /// list already has its maximum of pollers.
    pub async fn poll_task_lists(
        &self,
        namespace: &str,
        lists: &[String],
        worker_name: Option<&str>,
        wait_ms: u64,
    ) -> Result<Option<ActivityTask>, Error> {
        for name in lists {
            check_list_name(name)?;
        }
        let wait = Duration::from_millis(wait_ms.min(ACTIVITY_POLL_MS_MAX));
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let (sender, mut receiver) = oneshot::channel();
            let poller = Arc::new(Poller {
                sender: Mutex::new(Some(sender)),
                worker_name: worker_name.map(str::to_string),
            });
            let activities = &self.inner.activities;
            let found = match activities.take_or_register(namespace, lists, &poller)? {
                Found::Task(task) => Some(task),
                Found::Registered => {
                    let now = tokio::time::Instant::now();
                    let got = if now < deadline {
                        tokio::time::timeout(deadline - now, &mut receiver)
                            .await
                            .ok()
                            .and_then(Result::ok)
                    } else {
                        None
                    };
                    let handed_off = activities.deregister(namespace, lists, &poller);
                    match got {
                        Some(task) => Some(task),
                        // A hand-off that raced the deadline is in the channel, or comes once
                        // the commit that claims the task for this poller is durable (the
                        // sender is dropped if that commit fails): wait for it.
                        None if handed_off => (&mut receiver).await.ok(),
                        None => None,
                    }
                }
            };
            let Some(task) = found else {
                return Ok(None);
            };
            if let Some(claimed) = task.claimed {
                return Ok(Some(*claimed));
            }
            if let Some(handed) = self.claim_activity_task(&task, worker_name).await? {
                return Ok(Some(handed));
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(None);
            }
        }
    }

    /// Waits until one of `lists` of `namespace` holds an unclaimed task (at once if one is
    /// queued), for up to `wait_ms` (capped at ACTIVITY_POLL_MS_MAX); claims and takes nothing.
    ///
    /// True when a list holds a pending task (now, or one became pending while waiting); false
    /// when none did within the wait (0 only looks). True is a hint: the task may be claimed
    /// (by a local poller, another claim, its own timeout) before the caller's claiming
    /// `poll_task_lists(.., 0)`, which then finds nothing, and the caller peeks again. A task
    /// handed straight to a waiting poller, or claimed in the commit that schedules it, does
    /// not wake a peek. The peek never takes a task from a poller and never refuses an offer.
    /// Cancel-safe: a dropped future leaves no peeker registered. Errors: `InvalidArgument` for
    /// a bad list name (as `poll_task_lists`), `TaskListLimitExceeded` when a list already has
    /// `TASK_LIST_POLLERS_MAX` peeks waiting.
    pub async fn await_task_lists(
        &self,
        namespace: &str,
        lists: &[String],
        wait_ms: u64,
    ) -> Result<bool, Error> {
        for name in lists {
            check_list_name(name)?;
        }
        let wait = Duration::from_millis(wait_ms.min(ACTIVITY_POLL_MS_MAX));
        let deadline = tokio::time::Instant::now() + wait;
        let activities = &self.inner.activities;
        if wait.is_zero() {
            let peeked = activities.peek_or_register(namespace, lists, None)?;
            return Ok(peeked == Peeked::Pending);
        }
        let (sender, receiver) = oneshot::channel();
        let peeker = Arc::new(Peeker {
            sender: Mutex::new(Some(sender)),
        });
        if activities.peek_or_register(namespace, lists, Some(&peeker))? == Peeked::Pending {
            return Ok(true);
        }
        // From here every way out, a drop of this future included, unregisters the peeker.
        let registration = PeekRegistration {
            activities,
            namespace,
            lists,
            peeker,
        };
        // While the registration holds the peeker, its sender is only ever taken to be sent
        // on: a closed channel cannot happen, and would mean nothing came.
        let woken = matches!(
            tokio::time::timeout_at(deadline, receiver).await,
            Ok(Ok(()))
        );
        drop(registration);
        Ok(woken)
    }

    /// How many tasks wait, unclaimed, in a task list of `namespace`.
    pub fn task_list_pending_count(&self, namespace: &str, list: &str) -> usize {
        self.inner.activities.pending_count(namespace, list)
    }

    /// Routes a scheduled activity task to its list (called by `dispatch`).
    pub(crate) fn offer_activity_task(&self, attempt: AttemptKey) {
        let (execution_arn, task_id) = (&attempt.execution, attempt.task);
        let Some(slot) = self.inner.open.lock().get(execution_arn).cloned() else {
            return;
        };
        let Some(task) = slot.state.lock().execution.waiting_task(task_id) else {
            return;
        };
        if task.submitted {
            return;
        }
        let list = task.task_list.clone().unwrap_or(task.resource_arn);
        let key = (account_of(execution_arn).to_string(), list.clone());
        let pending = Pending {
            attempt: attempt.clone(),
            claimed: None,
        };
        if self.inner.activities.offer(key, pending).is_err() {
            self.drive_in_background(
                execution_arn,
                Trigger::TokenFailed {
                    task_id,
                    error: "States.TaskListFull".to_string(),
                    cause: format!(
                        "task list '{list}' already holds {TASK_LIST_PENDING_MAX} pending tasks"
                    ),
                },
            );
        }
    }

    /// Claims a handed-out task for a worker: `ActivityStarted` (with the worker's name)
    /// durable before the task, and its token, is returned; heartbeat clock armed. `None` when
    /// the task is no longer claimable (answered, timed out, claimed).
    ///
    /// The long poll's thread never waits for the log's fdatasync. Over a log that notifies
    /// (the WAL) while a commit is in flight (`Engine::notify_pays`), the claim is appended
    /// with `Commit::Notify` and the poll awaits the log's word that it is durable: a server
    /// worker keeps serving its other connections meanwhile, with no hand-over to another
    /// thread (`block_in_place` and its thread switches were a fifth of a 2-core server's
    /// cycles at 256 executions, issue 16). Otherwise the claim's synced commit runs off the
    /// reactor (`claim_off_the_reactor`).
    async fn claim_activity_task(
        &self,
        task: &Pending,
        worker_name: Option<&str>,
    ) -> Result<Option<ActivityTask>, Error> {
        if !self.notify_pays() {
            return self.claim_off_the_reactor(task, worker_name);
        }
        // The poll may stop waiting; the claim stands either way.
        let (on_durable, receiver) = super::kernel::log_word_channel();
        let Some(claim) = self.record_claim(task, worker_name, Some(on_durable))? else {
            return Ok(None);
        };
        match receiver.await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => return Err(error.into()),
            // A recorded claim's log always tells (poisoning tells the error). Were one to
            // drop it untold, the task stays claimed until its heartbeat or timeout frees it,
            // as with a vanished worker: no token leaves on an unknown durability.
            Err(_) => return Ok(None),
        }
        Ok(Some(self.hand_out(task, claim)))
    }

    /// The claim's synced commit, for a log that does not notify: on a multi-threaded runtime
    /// under `block_in_place`, which hands the worker's other tasks (the server's connections)
    /// to another thread first; elsewhere (a current-thread runtime, another executor) inline.
    fn claim_off_the_reactor(
        &self,
        task: &Pending,
        worker_name: Option<&str>,
    ) -> Result<Option<ActivityTask>, Error> {
        let claim_synced = || {
            let claim = self.record_claim(task, worker_name, None)?;
            Ok(claim.map(|claim| self.hand_out(task, claim)))
        };
        super::runtime::off_the_reactor(claim_synced)
    }

    /// Records the claim of a handed-out task (`ActivityStarted`): durable when this returns
    /// if `on_durable` is `None`, else appended with `Commit::Notify` and `on_durable` told
    /// once it is. Arms the heartbeat clock with the claim, before a notified claim is durable:
    /// a poll dropped while it waits (its worker went away) leaves a claimed task whose
    /// heartbeat or timeout frees it, as a hand-over to a vanished poller does, and a heartbeat
    /// timeout decided meanwhile is a synced commit, which makes the claim durable first.
    /// `None` when the task is not claimable.
    fn record_claim(
        &self,
        task: &Pending,
        worker_name: Option<&str>,
        on_durable: Option<statelog_store::OnDurable>,
    ) -> Result<Option<Claim>, Error> {
        let Some(slot) = self.inner.open.lock().get(&task.attempt.execution).cloned() else {
            return Ok(None);
        };
        let mut guard = slot.state.lock();
        let waiting = match guard.execution.waiting_task(task.attempt.task) {
            Some(w) if w.activity && !w.submitted => w,
            _ => return Ok(None),
        };
        // Rendered before the claim: a task that cannot be rendered is not claimed.
        let input = serde_json::to_string(&waiting.input).map_err(|e| Error::NotRendered {
            what: "an activity input",
            source: e,
        })?;
        let trigger = Trigger::ActivityStarted {
            task_id: task.attempt.task,
            worker_name: worker_name.map(str::to_string),
        };
        let request = match on_durable {
            Some(on_durable) => Commit::Notify {
                trigger,
                on_durable,
            },
            None => Commit::Trigger(trigger),
        };
        let events_before = guard.execution.event_count();
        let (effects, deliveries) =
            match self.commit_decision(&task.attempt.execution, &mut guard, request) {
                Ok(committed) => (committed.effects, committed.deliveries),
                Err(error) => {
                    drop(guard);
                    let key = (
                        account_of(&task.attempt.execution).to_string(),
                        waiting
                            .task_list
                            .clone()
                            .unwrap_or_else(|| waiting.resource_arn.clone()),
                    );
                    self.inner.activities.put_back(key, task.clone());
                    return Err(error);
                }
            };
        let started_event_id = guard.execution.event_count();
        drop(guard);
        if started_event_id == events_before {
            // Nothing recorded: the task was not claimable after all.
            return Ok(None);
        }
        // `ActivityStarted` only records the claim; were that to change, a notified claim's
        // effects would be lost with a poll dropped while it waits.
        debug_assert!(effects.is_empty(), "a claim has no effects");
        if let Some(seconds) = waiting.heartbeat_seconds {
            let now_ms = self.inner.options.clock.now_ms();
            self.inner
                .attempts
                .arm_heartbeat(&task.attempt, seconds, now_ms);
        }
        let handed = ActivityTask {
            task_token: waiting.token,
            input,
            execution_arn: task.attempt.execution.to_string(),
            activity_arn: waiting.resource_arn,
            scheduled_event_id: task.attempt.task.0,
            started_event_id,
        };
        Ok(Some(Claim {
            slot,
            effects,
            deliveries,
            task: handed,
        }))
    }

    /// Runs a durable claim's deliveries, performs its effects and gives its task.
    fn hand_out(&self, task: &Pending, claim: Claim) -> ActivityTask {
        for delivery in claim.deliveries {
            delivery(self);
        }
        self.perform(&task.attempt.execution, &claim.slot, claim.effects);
        claim.task
    }
}

/// A recorded claim: what its hand-out needs once it is durable.
struct Claim {
    slot: Arc<super::kernel::Slot>,
    effects: Vec<Effect>,
    deliveries: Vec<super::backend::Delivery>,
    task: ActivityTask,
}

/// A task claimed in the commit that schedules it, for the poller that waits for it.
type Handover = (EventId, Option<u64>, Reservation, ActivityTask);

/// For every activity task `decision` schedules into a list where a poller waits, takes that
/// poller and adds the claim (`ActivityStarted` with its worker name) to the decision, so
/// scheduling and claiming share one commit. The tasks are handed over once it is durable.
pub(crate) fn claim_for_waiting_pollers(
    engine: &Engine,
    execution_arn: &str,
    definition: &StateMachine,
    decision: &mut Decision,
    now_ms: u64,
) -> Result<Vec<Handover>, Error> {
    let mut handovers = Vec::new();
    let scheduled: Vec<EventId> = decision
        .effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::InvokeTask(task) if is_activity_resource(&task.resource) => Some(task.task_id),
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
        let input = serde_json::to_string(&waiting.input).map_err(|e| Error::NotRendered {
            what: "an activity input",
            source: e,
        })?;
        let trigger = Trigger::ActivityStarted {
            task_id,
            worker_name: reservation.worker_name.clone(),
        };
        let mut draws = engine.inner.entropy.draws();
        // Decided on the decision's own state, not a copy: an error here fails the whole
        // commit, and the decision goes with it.
        let state = std::mem::replace(&mut decision.next_state, ExecutionState::new());
        let claim = decide_owned(
            definition,
            state,
            trigger,
            now_ms,
            &engine.inner.interpreter_options,
            &mut draws,
        )?;
        draws.finish()?;
        decision.events.extend(claim.events);
        decision.effects.extend(claim.effects);
        decision.next_state = claim.next_state;
        let task = ActivityTask {
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

/// The activity task lists as a task backend: an activity resource's task goes to its list,
/// where workers poll for it; a poller already waiting claims it in the commit that schedules
/// it; an aborted, unclaimed task leaves its list.
pub(crate) struct ActivityLists;

impl super::backend::TaskBackend for ActivityLists {
    fn name(&self) -> &'static str {
        "activity task lists"
    }

    fn serves(&self, _engine: &Engine, invocation: &TaskInvocation) -> bool {
        is_activity_resource(&invocation.resource)
    }

    fn dispatch(&self, engine: &Engine, attempt: AttemptKey, _invocation: TaskInvocation) {
        engine.offer_activity_task(attempt);
    }

    fn cancel(&self, engine: &Engine, attempt: &AttemptKey) {
        engine.inner.activities.withdraw(attempt);
    }

    fn before_append(
        &self,
        engine: &Engine,
        execution_arn: &str,
        definition: &StateMachine,
        decision: &mut Decision,
        now_ms: u64,
    ) -> Result<Option<Delivery>, Error> {
        let handovers =
            claim_for_waiting_pollers(engine, execution_arn, definition, decision, now_ms)?;
        if handovers.is_empty() {
            return Ok(None);
        }
        let key: Arc<str> = Arc::from(execution_arn);
        Ok(Some(Box::new(move |engine: &Engine| {
            for (task_id, heartbeat_seconds, reservation, task) in handovers {
                let attempt = AttemptKey::new(key.clone(), task_id);
                if let Some(seconds) = heartbeat_seconds {
                    engine
                        .inner
                        .attempts
                        .arm_heartbeat(&attempt, seconds, now_ms);
                }
                reservation.deliver(attempt, task);
            }
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activity_resources_are_recognized() {
        assert!(is_activity_resource(
            "arn:aws:states:us-east-1:000000000000:activity:work"
        ));
        assert!(!is_activity_resource("arn:aws:states:::lambda:invoke"));
        assert!(!is_activity_resource("activity"));
    }

    #[test]
    fn a_reserved_poller_knows_its_task_is_on_its_way_and_receives_it() {
        let activities = Activities::default();
        let arn: Arc<str> = Arc::from("arn:aws:states:r:1:execution:m:e");
        let (sender, mut receiver) = oneshot::channel();
        let poller = Arc::new(Poller {
            sender: Mutex::new(Some(sender)),
            worker_name: Some("w".to_string()),
        });
        let lists = ["l".to_string()];
        assert!(matches!(
            activities.take_or_register("1", &lists, &poller),
            Ok(Found::Registered)
        ));
        let reservation = activities
            .reserve_poller(&arn, "l")
            .expect("a waiting poller");
        assert_eq!(reservation.worker_name.as_deref(), Some("w"));
        assert!(activities.reserve_poller(&arn, "l").is_none(), "taken once");
        // The poll times out while the claiming commit is in flight: it must wait for the task.
        assert!(activities.deregister("1", &lists, &poller), "handed off");
        assert!(receiver.try_recv().is_err(), "not delivered yet");
        let task = ActivityTask {
            task_token: "t".to_string(),
            input: "{}".to_string(),
            execution_arn: "arn:aws:states:us-east-1:1:execution:m:e".to_string(),
            activity_arn: arn.to_string(),
            scheduled_event_id: 3,
            started_event_id: 4,
        };
        let attempt = AttemptKey::new(arn.clone(), EventId(3));
        assert!(reservation.deliver(attempt, task.clone()));
        let got = receiver.try_recv().expect("delivered");
        assert_eq!(got.claimed, Some(Box::new(task)));
        // A poller nobody took reports no hand-off.
        let (sender, _receiver) = oneshot::channel();
        let idle = Arc::new(Poller {
            sender: Mutex::new(Some(sender)),
            worker_name: None,
        });
        assert!(matches!(
            activities.take_or_register("1", &lists, &idle),
            Ok(Found::Registered)
        ));
        assert!(!activities.deregister("1", &lists, &idle));
    }

    #[test]
    fn one_poller_past_the_maximum_is_refused() {
        let activities = Activities::default();
        let lists = ["l".to_string()];
        let poller = || {
            let (sender, receiver) = oneshot::channel();
            let poller = Arc::new(Poller {
                sender: Mutex::new(Some(sender)),
                worker_name: None,
            });
            (poller, receiver)
        };
        let mut kept = Vec::new();
        for _ in 0..TASK_LIST_POLLERS_MAX {
            let (p, r) = poller();
            assert!(matches!(
                activities.take_or_register("1", &lists, &p),
                Ok(Found::Registered)
            ));
            kept.push((p, r));
        }
        let (p, _r) = poller();
        match activities.take_or_register("1", &lists, &p) {
            Err(Error::TaskListLimitExceeded { limit, .. }) => {
                assert_eq!(limit, TASK_LIST_POLLERS_MAX)
            }
            _ => panic!("the poller past the maximum is refused"),
        }
        // A deregistered poller frees its place.
        let (first, _) = &kept[0];
        activities.deregister("1", &lists, first);
        assert!(matches!(
            activities.take_or_register("1", &lists, &p),
            Ok(Found::Registered)
        ));
    }

    fn peeker() -> (Arc<Peeker>, oneshot::Receiver<()>) {
        let (sender, receiver) = oneshot::channel();
        let peeker = Arc::new(Peeker {
            sender: Mutex::new(Some(sender)),
        });
        (peeker, receiver)
    }

    fn pending(id: u32) -> Pending {
        Pending {
            attempt: AttemptKey::new(Arc::from("arn:aws:states:r:1:execution:m:e"), EventId(id)),
            claimed: None,
        }
    }

    #[test]
    fn a_peeker_is_woken_by_a_queued_task_and_never_takes_a_pollers_task() {
        let activities = Activities::default();
        let lists = ["l".to_string(), "k".to_string()];
        let key = ("1".to_string(), "l".to_string());
        let (peek, mut woken) = peeker();
        assert_eq!(
            activities.peek_or_register("1", &lists, Some(&peek)).ok(),
            Some(Peeked::Waiting)
        );
        assert_eq!(activities.peeker_count("1", "l"), 1);
        assert_eq!(activities.peeker_count("1", "k"), 1);
        // A poller waits too: the offered task is its, and the peeker hears nothing of it.
        let (sender, mut handed) = oneshot::channel();
        let poller = Arc::new(Poller {
            sender: Mutex::new(Some(sender)),
            worker_name: None,
        });
        assert!(matches!(
            activities.take_or_register("1", &lists[..1], &poller),
            Ok(Found::Registered)
        ));
        assert!(activities.offer(key.clone(), pending(1)).is_ok());
        assert_eq!(
            handed.try_recv().map(|t| t.attempt.task).ok(),
            Some(EventId(1))
        );
        assert!(
            woken.try_recv().is_err(),
            "a task taken by a poller wakes no peeker"
        );
        assert_eq!(activities.pending_count("1", "l"), 0);
        // With no poller the task is queued and wakes the peeker, which leaves that list.
        assert!(activities.offer(key.clone(), pending(2)).is_ok());
        assert!(woken.try_recv().is_ok(), "woken");
        assert_eq!(activities.peeker_count("1", "l"), 0);
        assert_eq!(activities.peeker_count("1", "k"), 1, "until its peek ends");
        activities.unpeek("1", &lists, &peek);
        assert_eq!(activities.peeker_count("1", "k"), 0);
        // The peek took nothing: a poll takes the task.
        assert_eq!(activities.pending_count("1", "l"), 1);
        assert_eq!(
            activities.peek_or_register("1", &lists, None).ok(),
            Some(Peeked::Pending)
        );
        match activities.take_or_register("1", &lists, &poller) {
            Ok(Found::Task(t)) => assert_eq!(t.attempt.task, EventId(2)),
            _ => panic!("the queued task is still there"),
        }
        // A task put back after a failed claim is pending again: it wakes a peeker too.
        let (again, mut woken_again) = peeker();
        assert_eq!(
            activities.peek_or_register("1", &lists, Some(&again)).ok(),
            Some(Peeked::Waiting)
        );
        activities.put_back(key, pending(2));
        assert!(woken_again.try_recv().is_ok(), "woken by the put-back task");
    }

    #[test]
    fn one_peeker_past_the_maximum_is_refused_and_offers_still_queue() {
        let activities = Activities::default();
        let lists = ["l".to_string()];
        let mut kept = Vec::new();
        for _ in 0..TASK_LIST_POLLERS_MAX {
            let (p, r) = peeker();
            assert_eq!(
                activities.peek_or_register("1", &lists, Some(&p)).ok(),
                Some(Peeked::Waiting)
            );
            kept.push((p, r));
        }
        let (p, _r) = peeker();
        match activities.peek_or_register("1", &lists, Some(&p)) {
            Err(Error::TaskListLimitExceeded {
                task_list,
                what,
                limit,
            }) => {
                assert_eq!(
                    (task_list.as_str(), what, limit),
                    ("l", "peekers", TASK_LIST_POLLERS_MAX)
                );
            }
            other => panic!("the peeker past the maximum is refused: {other:?}"),
        }
        assert_eq!(activities.peeker_count("1", "l"), TASK_LIST_POLLERS_MAX);
        // Peekers never block an offer; the offer wakes every one.
        let key = ("1".to_string(), "l".to_string());
        assert!(activities.offer(key, pending(1)).is_ok());
        assert_eq!(activities.pending_count("1", "l"), 1);
        assert_eq!(activities.peeker_count("1", "l"), 0);
        for (_, mut r) in kept {
            assert!(r.try_recv().is_ok(), "every peeker woken");
        }
    }

    const NAMESPACE: &str = "000000000000";

    /// An engine over a memory log with one activity and a machine whose one Task waits on
    /// it; returns the engine and the activity's ARN (its default list).
    fn activity_engine() -> (Engine, String) {
        let log = Arc::new(statelog_store::MemoryLog::new());
        let options = crate::EngineOptions {
            background_timers: false,
            ..Default::default()
        };
        let engine = Engine::open_with_log(log, options).expect("opens");
        let activity = engine.create_activity("work").expect("activity");
        let definition = format!(
            r#"{{"StartAt":"Work","States":{{"Work":{{"Type":"Task",
            "Resource":"{}","End":true}}}}}}"#,
            activity.activity_arn
        );
        engine
            .create_state_machine("m", &definition, None)
            .expect("machine");
        assert_eq!(account_of(&activity.activity_arn), NAMESPACE);
        (engine, activity.activity_arn)
    }

    fn paused_runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("a runtime")
    }

    #[test]
    fn a_peek_is_true_at_once_with_a_queued_task_and_claims_nothing() {
        let (engine, list) = activity_engine();
        let lists = [list.clone()];
        engine.start_execution("m", Some("e"), "{}").expect("start");
        assert_eq!(engine.task_list_pending_count(NAMESPACE, &list), 1);
        let runtime = paused_runtime();
        runtime.block_on(async {
            let started = tokio::time::Instant::now();
            let peeked = engine.await_task_lists(NAMESPACE, &lists, 60_000).await;
            assert_eq!(peeked.ok(), Some(true));
            assert_eq!(tokio::time::Instant::now(), started, "at once");
            assert_eq!(
                engine.await_task_lists(NAMESPACE, &lists, 0).await.ok(),
                Some(true)
            );
            assert_eq!(engine.inner.activities.peeker_count(NAMESPACE, &list), 0);
            assert_eq!(engine.task_list_pending_count(NAMESPACE, &list), 1);
            let task = engine
                .poll_task_lists(NAMESPACE, &lists, Some("w"), 0)
                .await
                .expect("poll")
                .expect("the peeked task is still claimable");
            assert_eq!(task.activity_arn, list);
        });
    }

    #[test]
    fn a_peek_with_no_task_is_false_after_its_wait_and_leaves_no_peeker() {
        let (engine, list) = activity_engine();
        let lists = [list.clone(), "other".to_string()];
        let runtime = paused_runtime();
        runtime.block_on(async {
            let started = tokio::time::Instant::now();
            let peeked = engine.await_task_lists(NAMESPACE, &lists, 1_500).await;
            assert_eq!(peeked.ok(), Some(false));
            assert_eq!(started.elapsed(), Duration::from_millis(1_500));
            // The wait is capped like a poll's.
            let started = tokio::time::Instant::now();
            let peeked = engine.await_task_lists(NAMESPACE, &lists, u64::MAX).await;
            assert_eq!(peeked.ok(), Some(false));
            assert_eq!(
                started.elapsed(),
                Duration::from_millis(ACTIVITY_POLL_MS_MAX)
            );
            assert_eq!(
                engine.await_task_lists(NAMESPACE, &lists, 0).await.ok(),
                Some(false)
            );
        });
        for name in &lists {
            assert_eq!(engine.inner.activities.peeker_count(NAMESPACE, name), 0);
        }
    }

    #[test]
    fn a_peek_is_woken_by_a_task_scheduled_while_it_waits_and_the_task_stays_claimable() {
        let (engine, list) = activity_engine();
        let engine = Arc::new(engine);
        let lists = vec!["first".to_string(), list.clone()];
        let runtime = paused_runtime();
        runtime.block_on(async {
            let started = tokio::time::Instant::now();
            let peek = tokio::spawn({
                let (engine, lists) = (engine.clone(), lists.clone());
                async move { engine.await_task_lists(NAMESPACE, &lists, 60_000).await }
            });
            // Let the peek register; the clock stands still while this task runs.
            while engine.inner.activities.peeker_count(NAMESPACE, &list) == 0 {
                tokio::task::yield_now().await;
            }
            engine.start_execution("m", Some("e"), "{}").expect("start");
            let peeked = peek.await.expect("the peek ran");
            assert_eq!(peeked.ok(), Some(true));
            assert!(
                started.elapsed() < Duration::from_millis(60_000),
                "woken, not timed out"
            );
            for name in &lists {
                assert_eq!(engine.inner.activities.peeker_count(NAMESPACE, name), 0);
            }
            assert_eq!(engine.task_list_pending_count(NAMESPACE, &list), 1);
            let task = engine
                .poll_task_lists(NAMESPACE, &lists, Some("w"), 0)
                .await
                .expect("poll");
            assert!(task.is_some(), "the peek claimed nothing");
        });
    }

    #[test]
    fn a_dropped_peek_leaves_no_peeker_registered() {
        let (engine, list) = activity_engine();
        let engine = Arc::new(engine);
        let lists = vec![list.clone(), "other".to_string()];
        let runtime = paused_runtime();
        runtime.block_on(async {
            let peek = tokio::spawn({
                let (engine, lists) = (engine.clone(), lists.clone());
                async move { engine.await_task_lists(NAMESPACE, &lists, 60_000).await }
            });
            while engine.inner.activities.peeker_count(NAMESPACE, &list) == 0 {
                tokio::task::yield_now().await;
            }
            assert_eq!(engine.inner.activities.peeker_count(NAMESPACE, "other"), 1);
            peek.abort();
            assert!(peek.await.is_err_and(|e| e.is_cancelled()));
            for name in &lists {
                assert_eq!(engine.inner.activities.peeker_count(NAMESPACE, name), 0);
            }
            // A peek cut short by its caller's own deadline leaves nothing either.
            let cut = tokio::time::timeout(
                Duration::from_millis(10),
                engine.await_task_lists(NAMESPACE, &lists, 60_000),
            )
            .await;
            assert!(cut.is_err(), "the caller's deadline came first");
            for name in &lists {
                assert_eq!(engine.inner.activities.peeker_count(NAMESPACE, name), 0);
            }
        });
    }

    #[test]
    fn a_peek_checks_its_list_names() {
        let (engine, _list) = activity_engine();
        let runtime = paused_runtime();
        let long = "x".repeat(TASK_LIST_NAME_CHARS_MAX + 1);
        for bad in [String::new(), long] {
            let lists = ["fine".to_string(), bad.clone()];
            let peeked = runtime.block_on(engine.await_task_lists(NAMESPACE, &lists, 1_000));
            match peeked {
                Err(Error::InvalidArgument {
                    field: "taskList",
                    reason: ArgumentReason::TaskListName { name, .. },
                }) => assert_eq!(name, bad),
                other => panic!("a bad list name is refused: {other:?}"),
            }
            assert_eq!(engine.inner.activities.peeker_count(NAMESPACE, "fine"), 0);
        }
    }

    #[test]
    fn a_list_hands_a_task_to_a_waiting_poller_else_queues_it_fifo() {
        let activities = Activities::default();
        let key = ("1".to_string(), "l".to_string());
        let task = |id| Pending {
            attempt: AttemptKey::new(Arc::from("arn:aws:states:r:1:execution:m:e"), EventId(id)),
            claimed: None,
        };
        assert!(activities.offer(key.clone(), task(1)).is_ok());
        assert!(activities.offer(key.clone(), task(2)).is_ok());
        let (sender, _receiver) = oneshot::channel();
        let poller = Arc::new(Poller {
            sender: Mutex::new(Some(sender)),
            worker_name: None,
        });
        let lists = ["l".to_string()];
        match activities.take_or_register("1", &lists, &poller) {
            Ok(Found::Task(t)) => assert_eq!(t.attempt.task, EventId(1)),
            _ => panic!("the first task comes first"),
        }
        assert_eq!(activities.pending_count("1", "l"), 1);
        // Another namespace sees nothing of it.
        match activities.take_or_register("2", &lists, &poller) {
            Ok(Found::Registered) => {}
            _ => panic!("namespaces are separate"),
        }
    }
}
