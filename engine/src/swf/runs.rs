//! swf::runs: open SWF workflow runs and the one path of every change to them. Each open run
//! has a slot: its folded state (`statelog_swf::fold::Execution`) and its events, behind the
//! lock that serializes its changes. A change is: the pure transitions decide the events to
//! append (`statelog_swf::transitions`), the engine numbers and stamps them, folds them on a
//! copy, follows what they do to other runs (`transitions::effects`: a child's start, its
//! parent's notice of its close, a signal or cancel of another run, a child policy, a
//! continued run; each target's events from `transitions::effect_events`, and so on for what
//! those do), makes every run's events durable as one atomic store append
//! (`Store::swf_append_batches`), adopts the copies, then syncs each run's tasks with the task
//! lists and its next deadline with the deadline heap (`sync`).
//!
//! Invariants: the slot locks of every run a change touches are held from the decision to the
//! adoption, so the folded state always equals the written log; nothing is handed out (a task
//! token, an answer) before its events are durable; a closed run leaves memory (its slot, its
//! list entries) in the commit that closes it. Lock order: run slots in run id order when a
//! change waits for them (`Swf::transact`); any other slot only by `try_lock`, and a change
//! that cannot take one at once writes nothing and is run again with all of them locked in
//! order ([`Txn`]); then the task lists or the deadline heap, never the other way round. Must
//! not: hold a slot lock while waiting for a poll or for a slot out of order; read wall time
//! except through the engine's clock.

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use parking_lot::Mutex;
use statelog_store::swf::{CloseStatus as StoreClose, RunClose, RunHeader, RunStart};
use statelog_swf::api::{self, Fault, SwfError};
use statelog_swf::encoding::{decode_events, encode_events};
use statelog_swf::events::{Attributes, Event};
use statelog_swf::fold::{Execution, RunKey};
use statelog_swf::transitions::{self, Effect};

use super::lists::{TaskKind, TaskRef};
use super::{internal, model, Swf};
use crate::Engine;

/// One open run.
#[derive(Debug)]
pub(crate) struct RunSlot {
    pub(crate) state: Arc<Mutex<RunState>>,
}

impl RunSlot {
    fn new(state: RunState) -> Arc<RunSlot> {
        Arc::new(RunSlot {
            state: Arc::new(Mutex::new(state)),
        })
    }
}

type Guard = parking_lot::ArcMutexGuard<parking_lot::RawMutex, RunState>;

/// The runs one change holds: the run it is about (`primary`, which it derefs to) and the
/// other runs it reaches (children, parents, signal and cancel targets). A change locks more
/// than one run only in run id order ([`Swf::transact`]) or without waiting
/// (`try_lock`): a run it cannot lock at once is `wanted`, and the change is dropped and run
/// again with every run it wants locked in order. So no two changes ever wait for each other.
pub(crate) struct Txn<'a> {
    primary: &'a mut RunState,
    others: BTreeMap<Arc<str>, Guard>,
    /// Runs it needed and could not lock without waiting.
    wanted: Vec<Arc<str>>,
    /// It read something about a run (from the index) that moved before it held the run.
    stale: bool,
}

impl Deref for Txn<'_> {
    type Target = RunState;
    fn deref(&self) -> &RunState {
        self.primary
    }
}

impl DerefMut for Txn<'_> {
    fn deref_mut(&mut self) -> &mut RunState {
        self.primary
    }
}

/// What a change finds of a run it reaches.
enum Reach<'t> {
    /// Held by this change.
    Held(&'t mut RunState),
    /// Not open (closed, or never was).
    Closed,
    /// Locked by another change: wanted.
    Busy,
}

impl<'a> Txn<'a> {
    /// A change of one run the caller holds locked (a claim: it reaches no other run).
    pub(crate) fn solo(state: &'a mut RunState) -> Txn<'a> {
        Txn {
            primary: state,
            others: BTreeMap::new(),
            wanted: Vec::new(),
            stale: false,
        }
    }

    fn must_retry(&self) -> bool {
        self.stale || !self.wanted.is_empty()
    }

    /// The open run `run_id`, locked by this change if it can be without waiting.
    fn reach(&mut self, swf: &Swf<'_>, run_id: &str) -> Reach<'_> {
        if *self.primary.run_id == *run_id {
            return Reach::Held(self.primary);
        }
        if !self.others.contains_key(run_id) {
            let Some(slot) = swf.open_slot(run_id) else {
                return Reach::Closed;
            };
            match slot.state.try_lock_arc() {
                Some(guard) => {
                    self.others.insert(Arc::from(run_id), guard);
                }
                None => {
                    self.wanted.push(Arc::from(run_id));
                    return Reach::Busy;
                }
            }
        }
        match self.others.get_mut(run_id) {
            Some(guard) if model::close_status(&guard.execution).is_none() => Reach::Held(guard),
            _ => Reach::Closed,
        }
    }
}

/// The events one change appends to one run, folded on a copy.
struct Plan {
    domain: String,
    workflow_id: String,
    run_id: Arc<str>,
    retention_days: u32,
    /// Events the run had before.
    base_len: usize,
    was_open: bool,
    next: Execution,
    events: Vec<Event>,
    /// The start of a run this change opens (a child, a continued run).
    start: Option<RunStart>,
}

impl Plan {
    fn of(state: &RunState) -> Plan {
        Plan {
            domain: state.domain.clone(),
            workflow_id: state.workflow_id.clone(),
            run_id: state.run_id.clone(),
            retention_days: state.retention_days,
            base_len: state.events.len(),
            was_open: model::close_status(&state.execution).is_none(),
            next: state.execution.clone(),
            events: Vec::new(),
            start: None,
        }
    }

    /// Numbers, stamps and folds `attributes` after the planned events; answers the state
    /// before them and the events.
    fn append(
        &mut self,
        attributes: Vec<Attributes>,
        now_ms: u64,
    ) -> Result<(Execution, Vec<Event>), SwfError> {
        let before = self.next.clone();
        let events = number(self.base_len + self.events.len(), attributes, now_ms);
        for event in &events {
            self.next.apply(event).map_err(internal)?;
        }
        self.events.extend(events.iter().cloned());
        Ok((before, events))
    }

    fn header(&self, now_ms: u64) -> Option<RunHeader> {
        let (first, last) = (self.events.first()?, self.events.last()?);
        let close = model::close_status(&self.next)
            .filter(|_| self.was_open)
            .map(|status| RunClose {
                status: store_close(status),
                close_ms: now_ms,
                retention_days: self.retention_days,
            });
        Some(RunHeader {
            domain: self.domain.clone(),
            workflow_id: self.workflow_id.clone(),
            run_id: self.run_id.to_string(),
            first_event_id: first.event_id,
            last_event_id: last.event_id,
            start: self.start.clone(),
            close,
        })
    }
}

/// The error a try that must be run again answers (never seen by a caller).
fn retry() -> SwfError {
    SwfError::new(
        Fault::Internal,
        "an SWF change could not lock the runs it reaches",
    )
}

/// What the engine holds of an open run.
#[derive(Debug)]
pub(crate) struct RunState {
    pub(crate) domain: String,
    pub(crate) workflow_id: String,
    pub(crate) run_id: Arc<str>,
    /// The domain's retention, recorded in the closing batch.
    pub(crate) retention_days: u32,
    pub(crate) execution: Execution,
    pub(crate) events: Vec<Event>,
    /// The tasks of this run offered to the lists.
    offered: Vec<TaskRef>,
    /// The deadline pushed on the heap last.
    armed_due_ms: Option<u64>,
}

/// The open runs, the lists and the deadline heap.
#[derive(Debug, Default)]
pub(crate) struct Runs {
    pub(crate) open: Mutex<HashMap<Arc<str>, Arc<RunSlot>>>,
    /// `(due ms, run)`: a stale entry (the run's deadline moved or it closed) fires nothing.
    pub(crate) deadlines: Mutex<DeadlineHeap>,
    /// Open runs per domain (a domain with none has no entry): counted up before a new run's
    /// first append (so two racing starts cannot both pass the limit), down when a run leaves
    /// `open` or its start is not written. A leaf lock: nothing is taken while it is held.
    open_per_domain: Mutex<HashMap<String, usize>>,
}

/// Deadlines of open runs, earliest first: `(due ms, run)`.
type DeadlineHeap = std::collections::BinaryHeap<Reverse<(u64, Arc<str>)>>;

/// A run about to be opened: who it is and how it starts.
pub(crate) struct NewRun<'a> {
    pub(crate) domain: &'a str,
    pub(crate) workflow_id: &'a str,
    pub(crate) run_id: &'a str,
    /// Its domain's retention, recorded when it closes.
    pub(crate) retention_days: u32,
    pub(crate) start: RunStart,
}

/// The store's close status of a folded close.
pub(crate) fn store_close(status: api::CloseStatus) -> StoreClose {
    match status {
        api::CloseStatus::Completed => StoreClose::Completed,
        api::CloseStatus::Failed => StoreClose::Failed,
        api::CloseStatus::Canceled => StoreClose::Canceled,
        api::CloseStatus::Terminated => StoreClose::Terminated,
        api::CloseStatus::ContinuedAsNew => StoreClose::ContinuedAsNew,
        api::CloseStatus::TimedOut => StoreClose::TimedOut,
    }
}

impl RunState {
    fn new(
        domain: String,
        workflow_id: String,
        run_id: Arc<str>,
        retention_days: u32,
        execution: Execution,
        events: Vec<Event>,
    ) -> Self {
        RunState {
            domain,
            workflow_id,
            run_id,
            retention_days,
            execution,
            events,
            offered: Vec::new(),
            armed_due_ms: None,
        }
    }

    /// The execution as the API names it.
    pub(crate) fn execution_ref(&self) -> api::WorkflowExecution {
        api::WorkflowExecution {
            workflow_id: self.workflow_id.clone(),
            run_id: self.run_id.to_string(),
        }
    }
}

/// Numbers and stamps `attributes` after `after` events.
fn number(after: usize, attributes: Vec<Attributes>, now_ms: u64) -> Vec<Event> {
    attributes
        .into_iter()
        .enumerate()
        .map(|(i, attributes)| Event {
            event_id: (after + i + 1) as u64,
            timestamp_ms: now_ms,
            attributes,
        })
        .collect()
}

impl Swf<'_> {
    pub(crate) fn runs(&self) -> &Runs {
        &self.service().runs
    }

    pub(crate) fn now(&self) -> u64 {
        self.engine.inner.options.clock.now_ms()
    }

    /// The open run `run_id`, if open.
    pub(crate) fn open_slot(&self, run_id: &str) -> Option<Arc<RunSlot>> {
        self.runs().open.lock().get(run_id).cloned()
    }

    /// Whether a cancel was requested of the open run `run_id`.
    pub(crate) fn cancel_requested(&self, run_id: &str) -> bool {
        self.open_slot(run_id)
            .is_some_and(|slot| model::cancel_requested(&slot.state.lock().execution))
    }

    /// A fresh run id: 16 random bytes, base64url.
    pub(crate) fn new_run_id(&self) -> Result<String, SwfError> {
        use base64::Engine as _;
        let mut bytes = [0u8; 16];
        self.engine
            .inner
            .entropy
            .fill(&mut bytes, "an SWF run id")
            .map_err(internal)?;
        Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
    }

    /// A fresh token nonce.
    pub(crate) fn new_nonce(&self) -> Result<[u8; 16], SwfError> {
        let mut bytes = [0u8; 16];
        self.engine
            .inner
            .entropy
            .fill(&mut bytes, "an SWF task token")
            .map_err(internal)?;
        Ok(bytes)
    }

    /// Writes a new run's first events (its start) and opens its slot. `WorkflowExecution
    /// AlreadyStartedFault` when the workflow id has an open run (checked by the store under
    /// its index lock, so two racing starts cannot both open).
    pub(crate) fn open_run(
        &self,
        run: NewRun<'_>,
        attributes: Vec<Attributes>,
        now_ms: u64,
    ) -> Result<(), SwfError> {
        let NewRun {
            domain,
            workflow_id,
            run_id,
            retention_days,
            start,
        } = run;
        self.writable()?;
        let events = number(0, attributes, now_ms);
        let key = RunKey {
            domain: domain.to_string(),
            workflow_id: workflow_id.to_string(),
            run_id: run_id.to_string(),
        };
        let execution = Execution::fold(key, &events).map_err(internal)?;
        let header = RunHeader {
            domain: domain.to_string(),
            workflow_id: workflow_id.to_string(),
            run_id: run_id.to_string(),
            first_event_id: 1,
            last_event_id: events.len() as u64,
            start: Some(start),
            close: None,
        };
        let store = &self.engine.inner.store;
        self.admit_open_run(domain)?;
        store
            .swf_append_events(header, &encode_events(&events))
            .inspect_err(|_| self.release_open_run(domain))
            .map_err(|e| match e {
                statelog_store::Error::SwfSequence(
                    statelog_store::swf::SwfSequenceError::WorkflowOpen { .. },
                ) => SwfError::new(
                    Fault::WorkflowExecutionAlreadyStarted,
                    format!("An execution of workflow id {workflow_id} is already open"),
                ),
                other => internal(other),
            })?;
        let run_id: Arc<str> = Arc::from(run_id);
        let state = RunState::new(
            domain.to_string(),
            workflow_id.to_string(),
            run_id.clone(),
            retention_days,
            execution,
            events,
        );
        let slot = RunSlot::new(state);
        // Open before the sync offers its first decision task, so its poller finds the slot.
        self.runs().open.lock().insert(run_id, slot.clone());
        self.sync(&mut slot.state.lock());
        Ok(())
    }

    /// Counts one more open run in `domain`, or refuses it with `LimitExceededFault` when the
    /// domain already has `EngineOptions::swf_open_runs_per_domain_max` open (SWF's quota on
    /// open executions per domain). Every start of a new run (StartWorkflowExecution, a child
    /// start) passes here before its first append, and gives the count back
    /// ([`Swf::release_open_run`]) if that append fails.
    pub(crate) fn admit_open_run(&self, domain: &str) -> Result<(), SwfError> {
        let max = self.engine.inner.options.swf_open_runs_per_domain_max;
        let mut counts = self.runs().open_per_domain.lock();
        let count = counts.entry(domain.to_string()).or_insert(0);
        if *count >= max {
            if *count == 0 {
                counts.remove(domain);
            }
            return Err(SwfError::new(
                Fault::LimitExceeded,
                format!(
                    "Domain {domain} already has {max} open workflow executions, the most it may \
                     have open at once"
                ),
            ));
        }
        *count += 1;
        Ok(())
    }

    /// Counts one more open run in `domain` whatever the limit: a run that replaces a closing
    /// one in the same append (continue-as-new), or one recovered from the log.
    fn count_open_run(&self, domain: &str) {
        *self
            .runs()
            .open_per_domain
            .lock()
            .entry(domain.to_string())
            .or_insert(0) += 1;
    }

    /// One open run of `domain` fewer: it closed, or its start was not written.
    pub(crate) fn release_open_run(&self, domain: &str) {
        let mut counts = self.runs().open_per_domain.lock();
        if let Some(count) = counts.get_mut(domain) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                counts.remove(domain);
            }
        }
    }

    /// How many runs are open in `domain`.
    pub(crate) fn open_runs_in(&self, domain: &str) -> usize {
        self.runs()
            .open_per_domain
            .lock()
            .get(domain)
            .copied()
            .unwrap_or(0)
    }

    pub(crate) fn writable(&self) -> Result<(), SwfError> {
        if self.engine.inner.options.read_only {
            return Err(SwfError::new(
                Fault::OperationNotPermitted,
                "the engine is open read-only",
            ));
        }
        Ok(())
    }

    /// Runs `change` on the open run `run_id` and the runs it reaches (see [`Txn`]): tried
    /// again, with every run it wanted locked in run id order, while a try could not lock one
    /// at once. `None` when `run_id` is not open.
    pub(crate) fn transact<T>(
        &self,
        run_id: &str,
        mut change: impl FnMut(&Self, &mut Txn<'_>) -> Result<T, SwfError>,
    ) -> Option<Result<T, SwfError>> {
        let mut wanted: Vec<Arc<str>> = Vec::new();
        for _ in 0..crate::limits::SWF_CHANGE_ATTEMPTS_MAX {
            let mut ids = wanted.clone();
            ids.push(Arc::from(run_id));
            ids.sort();
            ids.dedup();
            let slots: Vec<(Arc<str>, Arc<RunSlot>)> = {
                let open = self.runs().open.lock();
                ids.iter()
                    .filter_map(|id| open.get(id).map(|slot| (id.clone(), slot.clone())))
                    .collect()
            };
            let mut primary = None;
            let mut others = BTreeMap::new();
            // In run id order: the one order every change that waits for a lock keeps.
            for (id, slot) in slots {
                let guard = slot.state.lock_arc();
                if *id == *run_id {
                    primary = Some(guard);
                } else {
                    others.insert(id, guard);
                }
            }
            let mut primary = primary?;
            let mut txn = Txn {
                primary: &mut primary,
                others,
                wanted: Vec::new(),
                stale: false,
            };
            let result = change(self, &mut txn);
            if !txn.must_retry() {
                return Some(result);
            }
            wanted.append(&mut txn.wanted);
        }
        Some(Err(internal(format!(
            "run {run_id}: a change reaching other runs found them busy {} times",
            crate::limits::SWF_CHANGE_ATTEMPTS_MAX
        ))))
    }

    /// Appends `attributes` to the change's run, and what they do to other runs (a child's
    /// start, its parent's notice of its close, a signal or cancel request, a child policy,
    /// a continued run; each of those may reach further runs): every run's events numbered,
    /// folded on a copy, made durable in one atomic append, adopted, synced. Nothing is
    /// written for no attributes. A try that wants a run it cannot lock at once, or read a
    /// run that moved, writes nothing and answers an error the caller's [`Swf::transact`]
    /// turns into another try.
    pub(crate) fn commit(
        &self,
        txn: &mut Txn<'_>,
        attributes: Vec<Attributes>,
        now_ms: u64,
    ) -> Result<(), SwfError> {
        if attributes.is_empty() {
            return Ok(());
        }
        self.writable()?;
        let primary: Arc<str> = txn.primary.run_id.clone();
        let mut plans: BTreeMap<Arc<str>, Plan> = BTreeMap::new();
        // New runs in the order they are opened (after every existing run in the append, so a
        // continued run follows the close of the run it continues).
        let mut opened: Vec<Arc<str>> = Vec::new();
        let mut plan = Plan::of(txn.primary);
        let (before, events) = plan.append(attributes, now_ms)?;
        let mut work: VecDeque<(Arc<str>, Execution, Vec<Event>)> = VecDeque::new();
        work.push_back((primary.clone(), before, events));
        plans.insert(primary.clone(), plan);
        while let Some((run_id, before, events)) = work.pop_front() {
            let Some(plan) = plans.get(&run_id) else {
                return Err(internal("an SWF change lost a run it planned"));
            };
            let after = plan.next.clone();
            let (domain, retention_days) = (plan.domain.clone(), plan.retention_days);
            if let Some(continued) = model::continued_as_new(&after, &events)? {
                let (header, events, execution) = self.continued_run(continued, now_ms)?;
                let id: Arc<str> = Arc::from(header.run_id.as_str());
                plans.insert(
                    id.clone(),
                    Plan {
                        domain: header.domain,
                        workflow_id: header.workflow_id,
                        run_id: id.clone(),
                        retention_days,
                        base_len: 0,
                        was_open: true,
                        next: execution,
                        events,
                        start: header.start,
                    },
                );
                opened.push(id);
            }
            for effect in transitions::effects(&before, &after, &events)? {
                if let Effect::StartChild { child, attributes } = &effect {
                    let id: Arc<str> = Arc::from(child.run_id.as_str());
                    let started =
                        self.child_plan(&domain, retention_days, child, attributes, now_ms)?;
                    plans.insert(id.clone(), started);
                    opened.push(id);
                    continue;
                }
                // The run the effect lands on: a run this change plans already (one it opens
                // included), else an open run it locks.
                let target: Option<Arc<str>> = match effect.target() {
                    (_, Some(run_id)) => Some(Arc::from(run_id)),
                    (workflow_id, None) => plans
                        .values()
                        .find(|p| {
                            p.workflow_id == workflow_id
                                && p.domain == domain
                                && model::close_status(&p.next).is_none()
                        })
                        .map(|p| p.run_id.clone())
                        .or_else(|| {
                            self.engine
                                .inner
                                .store
                                .swf_open_run(&domain, workflow_id)
                                .map(|r| r.run_id)
                        }),
                };
                let Some(target) = target else {
                    continue;
                };
                if !plans.contains_key(&target) {
                    match txn.reach(self, &target) {
                        Reach::Held(state) => {
                            plans.insert(target.clone(), Plan::of(state));
                        }
                        Reach::Busy => continue,
                        Reach::Closed => {
                            // A signal or cancel the sender recorded as delivered needs its
                            // target open: the index said it was, so look again.
                            if matches!(
                                effect,
                                Effect::Signal { .. } | Effect::RequestCancel { .. }
                            ) {
                                txn.stale = true;
                            }
                            continue;
                        }
                    }
                }
                let Some(plan) = plans.get_mut(&target) else {
                    continue;
                };
                let attributes = transitions::effect_events(&plan.next, &effect, now_ms)?;
                if attributes.is_empty() {
                    continue;
                }
                let (before, events) = plan.append(attributes, now_ms)?;
                work.push_back((target, before, events));
            }
        }
        if txn.must_retry() {
            return Err(retry());
        }
        let mut batches = Vec::with_capacity(plans.len());
        for plan in plans.values().filter(|p| p.start.is_none()) {
            if let Some(header) = plan.header(now_ms) {
                batches.push((header, encode_events(&plan.events)));
            }
        }
        for id in &opened {
            if let Some(header) = plans.get(id).and_then(|p| p.header(now_ms)) {
                batches.push((header, encode_events(&plans[id].events)));
            }
        }
        match self.engine.inner.store.swf_append_batches(batches) {
            Ok(()) => {}
            Err(statelog_store::Error::SwfSequence(
                statelog_store::swf::SwfSequenceError::WorkflowOpen { .. },
            )) if !opened.is_empty() => {
                // A start raced a child's workflow id: decide again, seeing it in use.
                txn.stale = true;
                return Err(retry());
            }
            Err(error) => return Err(internal(error)),
        }
        // Durable: adopt every plan.
        for (id, plan) in plans {
            if plan.start.is_some() {
                let state = RunState::new(
                    plan.domain,
                    plan.workflow_id,
                    id.clone(),
                    plan.retention_days,
                    plan.next,
                    plan.events,
                );
                let slot = RunSlot::new(state);
                // Counted whatever the limit: the model refused a child past it
                // (OPEN_WORKFLOWS_LIMIT_EXCEEDED), and a continued run replaces the run it
                // continues.
                self.count_open_run(&slot.state.lock().domain);
                self.runs().open.lock().insert(id, slot.clone());
                self.sync(&mut slot.state.lock());
                continue;
            }
            let Reach::Held(state) = txn.reach(self, &id) else {
                // Held from the plan to here: reach answers it again.
                return Err(internal("an SWF change let go of a run before adopting it"));
            };
            state.execution = plan.next;
            state.events.extend(plan.events);
            self.sync(state);
        }
        Ok(())
    }

    /// The plan of a child run this change opens.
    fn child_plan(
        &self,
        domain: &str,
        retention_days: u32,
        child: &api::WorkflowExecution,
        attributes: &[Attributes],
        now_ms: u64,
    ) -> Result<Plan, SwfError> {
        let events = number(0, attributes.to_vec(), now_ms);
        let key = RunKey {
            domain: domain.to_string(),
            workflow_id: child.workflow_id.clone(),
            run_id: child.run_id.clone(),
        };
        let execution = Execution::fold(key, &events).map_err(internal)?;
        let workflow_type = model::workflow_type(&execution);
        let start = RunStart {
            type_name: workflow_type.name,
            type_version: workflow_type.version,
            start_ms: now_ms,
            tags: execution.tag_list.clone(),
            continued_from: None,
        };
        Ok(Plan {
            domain: domain.to_string(),
            workflow_id: child.workflow_id.clone(),
            run_id: Arc::from(child.run_id.as_str()),
            retention_days,
            base_len: 0,
            was_open: true,
            next: execution,
            events,
            start: Some(start),
        })
    }

    /// The first batch of the run a continue-as-new starts: its header, events and folded
    /// state.
    fn continued_run(
        &self,
        continued: model::ContinueAsNew,
        now_ms: u64,
    ) -> Result<(RunHeader, Vec<Event>, Execution), SwfError> {
        let events = number(0, continued.attributes, now_ms);
        let key = RunKey {
            domain: continued.domain.clone(),
            workflow_id: continued.workflow_id.clone(),
            run_id: continued.run_id.clone(),
        };
        let execution = Execution::fold(key, &events).map_err(internal)?;
        let header = RunHeader {
            domain: continued.domain,
            workflow_id: continued.workflow_id,
            run_id: continued.run_id,
            first_event_id: 1,
            last_event_id: events.len() as u64,
            start: Some(RunStart {
                type_name: continued.workflow_type.name.clone(),
                type_version: continued.workflow_type.version.clone(),
                start_ms: now_ms,
                tags: continued.tags,
                continued_from: Some(continued.previous_run_id),
            }),
            close: None,
        };
        Ok((header, events, execution))
    }

    /// Brings the lists and the deadline heap in line with the run's folded state: every
    /// scheduled, unclaimed task is offered once, every other task of the run withdrawn, the
    /// next deadline armed; a closed run leaves the open runs.
    pub(crate) fn sync(&self, state: &mut RunState) {
        let lists = &self.service().lists;
        let closed = model::close_status(&state.execution).is_some();
        let mut desired: Vec<(TaskKind, String, i32, TaskRef)> = Vec::new();
        if !closed {
            if let Some((scheduled, list, priority)) = model::decision_scheduled(&state.execution) {
                desired.push((
                    TaskKind::Decision,
                    list,
                    priority,
                    TaskRef {
                        run_id: state.run_id.clone(),
                        scheduled_event_id: scheduled,
                    },
                ));
            }
            for (scheduled, list, priority) in model::activities_waiting(&state.execution) {
                desired.push((
                    TaskKind::Activity,
                    list,
                    priority,
                    TaskRef {
                        run_id: state.run_id.clone(),
                        scheduled_event_id: scheduled,
                    },
                ));
            }
        }
        for task in state.offered.drain(..) {
            if !desired.iter().any(|d| d.3 == task) {
                lists.withdraw(&task);
            }
        }
        for (kind, list, priority, task) in desired {
            lists.offer(kind, &state.domain, &list, priority, task.clone());
            state.offered.push(task);
        }
        if closed {
            state.armed_due_ms = None;
            let removed = self.runs().open.lock().remove(&state.run_id);
            if removed.is_some() {
                self.release_open_run(&state.domain);
            }
            return;
        }
        let due = model::next_due_ms(&state.execution);
        if let Some(due) = due {
            // A deadline that moved later (a heartbeat does at every beat) pushes nothing: the
            // armed entry fires first and `run_due` re-arms from the state then. Only an
            // earlier deadline, or none armed, pushes, so the heap holds O(1) entries per run
            // however often its workers beat.
            if state.armed_due_ms.map_or(true, |armed| due < armed) {
                state.armed_due_ms = Some(due);
                let mut heap = self.runs().deadlines.lock();
                heap.push(Reverse((due, state.run_id.clone())));
                self.compact_deadlines(&mut heap);
                drop(heap);
                self.engine.inner.timer_signal.notify();
            }
        } else {
            state.armed_due_ms = None;
        }
    }

    /// Drops the entries of closed runs once they are most of the heap, so a closed run does
    /// not stay in memory until its (possibly year-long) deadlines come due. Amortized O(1)
    /// per push. Entries of open runs are kept, stale or not (a stale one fires nothing).
    fn compact_deadlines(&self, heap: &mut DeadlineHeap) {
        if heap.len() < crate::limits::TIMER_HEAP_COMPACT_LEN_MIN {
            return;
        }
        let open = self.runs().open.lock();
        if heap.len() < 4 * (open.len() + 1) {
            return;
        }
        heap.retain(|entry| open.contains_key(&entry.0 .1));
    }

    /// The earliest deadline of any open run.
    pub(crate) fn next_deadline_ms(&self) -> Option<u64> {
        self.runs().deadlines.lock().peek().map(|e| e.0 .0)
    }

    /// Runs every deadline due at `now_ms` (timers, timeouts); returns how many runs moved.
    pub(crate) fn run_due(&self, now_ms: u64) -> usize {
        let mut due: Vec<Arc<str>> = Vec::new();
        {
            let mut heap = self.runs().deadlines.lock();
            while heap.peek().is_some_and(|e| e.0 .0 <= now_ms) {
                if let Some(Reverse((_, run))) = heap.pop() {
                    if !due.contains(&run) {
                        due.push(run);
                    }
                }
            }
        }
        let mut moved = 0;
        for run_id in due {
            let outcome = self.transact(&run_id, |swf, state| {
                if state.armed_due_ms.is_some_and(|armed| armed <= now_ms) {
                    state.armed_due_ms = None;
                }
                let attributes = model::due(&state.execution, now_ms)?;
                if attributes.is_empty() {
                    // Re-arm what is still ahead. A deadline the model reports due yet acts
                    // on is looked at again a second later, never in a loop at the same
                    // instant.
                    let arm = match model::next_due_ms(&state.execution) {
                        Some(due) if due > now_ms => Some(due),
                        Some(_) => Some(now_ms.saturating_add(1_000)),
                        None => None,
                    };
                    if let Some(due) = arm {
                        if state.armed_due_ms.map_or(true, |armed| due < armed) {
                            state.armed_due_ms = Some(due);
                            swf.runs()
                                .deadlines
                                .lock()
                                .push(Reverse((due, run_id.clone())));
                        }
                    }
                    return Ok(false);
                }
                match swf.commit(state, attributes, now_ms) {
                    Ok(()) => Ok(true),
                    Err(error) => {
                        // Kept for the embedder; the deadline is tried again a second later.
                        state.armed_due_ms = Some(now_ms.saturating_add(1_000));
                        swf.runs()
                            .deadlines
                            .lock()
                            .push(Reverse((now_ms.saturating_add(1_000), run_id.clone())));
                        Err(error)
                    }
                }
            });
            match outcome {
                None | Some(Ok(false)) => {}
                Some(Ok(true)) => moved += 1,
                Some(Err(error)) => self
                    .engine
                    .inner
                    .background_errors
                    .lock()
                    .push(format!("swf deadline of run {run_id}: {error}")),
            }
        }
        moved
    }

    /// Reads a run's events from the store (open or closed), checked and decoded.
    pub(crate) fn stored_events(&self, run_id: &str) -> Result<Vec<Event>, SwfError> {
        let batches = self
            .engine
            .inner
            .store
            .swf_history(run_id)
            .map_err(internal)?;
        let mut events = Vec::new();
        for bytes in batches {
            events.extend(decode_events(&bytes).map_err(internal)?);
        }
        for (i, event) in events.iter().enumerate() {
            if event.event_id != i as u64 + 1 {
                return Err(internal(format!(
                    "run {run_id}: event {} where {} belongs",
                    event.event_id,
                    i + 1
                )));
            }
        }
        Ok(events)
    }
}

/// Recovery: folds every open run of the store, offers its scheduled tasks again (started
/// ones keep their tokens: the nonce is in their started event) and arms its deadlines. A run
/// whose events do not decode or fold is marked damaged and not recovered; the others are.
pub(crate) fn recover(engine: &Engine) {
    let swf = engine.swf();
    for run in engine.inner.store.swf_open_runs() {
        let key = RunKey {
            domain: run.domain.clone(),
            workflow_id: run.workflow_id.clone(),
            run_id: run.run_id.to_string(),
        };
        let recovered = swf.stored_events(&run.run_id).and_then(|events| {
            let mut execution = Execution::fold(key, &events).map_err(internal)?;
            // Heartbeats are memory only: a started task's heartbeat clock starts afresh at
            // open, so a live worker is never timed out by a crash.
            let now_ms = swf.now();
            let started: Vec<(u64, u64)> = execution
                .activities
                .values()
                .filter_map(|a| {
                    a.started
                        .as_ref()
                        .map(|s| (a.scheduled_event_id, s.started_event_id))
                })
                .collect();
            for (scheduled, started) in started {
                execution.record_heartbeat(scheduled, started, now_ms, None);
            }
            Ok((execution, events))
        });
        let (execution, events) = match recovered {
            Ok(folded) => folded,
            Err(error) => {
                engine
                    .inner
                    .store
                    .swf_mark_damaged(&run.run_id, error.message.clone());
                continue;
            }
        };
        let retention_days = engine
            .inner
            .store
            .swf_domain(&run.domain)
            .map_or(0, |d| d.retention_days);
        let state = RunState::new(
            run.domain.clone(),
            run.workflow_id.clone(),
            run.run_id.clone(),
            retention_days,
            execution,
            events,
        );
        let slot = RunSlot::new(state);
        swf.count_open_run(&run.domain);
        swf.runs()
            .open
            .lock()
            .insert(run.run_id.clone(), slot.clone());
        swf.sync(&mut slot.state.lock());
    }
}

/// The SWF deadlines as a task backend of the kernel's timer loop: they serve no ASL task;
/// the timer thread (or `Engine::run_due_timers`) runs them on the engine's clock.
pub(crate) struct SwfDeadlines;

impl crate::backend::TaskBackend for SwfDeadlines {
    fn name(&self) -> &'static str {
        "swf deadlines"
    }

    fn cancel(&self, _engine: &Engine, _attempt: &crate::backend::AttemptKey) {}

    fn next_due_ms(&self, engine: &Engine) -> Option<u64> {
        engine.swf().next_deadline_ms()
    }

    fn run_due(&self, engine: &Engine, now_ms: u64) -> usize {
        engine.swf().run_due(now_ms)
    }
}
