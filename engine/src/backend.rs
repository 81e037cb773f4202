//! backend: what a task waits for, registered on the kernel through one trait. A task's answer
//! comes from a Rust handler call, an activity task list, a task token (with its heartbeat
//! clock), a `.sync` child execution or an embedder job; each is a `TaskBackend` in the one
//! list `Inner.backends` builds at open. The kernel and the runtime go through the list: they
//! route an invocation to the first backend that serves it, tell every backend when an
//! attempt is over, let every backend join a commit before its append, and ask every backend
//! for its earliest deadline.
//!
//! Invariants: the list's order is the routing precedence (activity resources, then handler
//! lookup, which reaches the job integrations and the built-in `.sync` children registered as
//! handlers); the last routing backend serves every invocation, so a task is never dropped.
//! Must not: append, or hold a slot lock, in `dispatch` or `cancel`.

use std::sync::Arc;

use super::{Engine, Error};
use statelog_core::asl::StateMachine;
use statelog_core::history::EventId;
use statelog_core::interpreter::{Decision, TaskInvocation};

/// One attempt of a task: the execution and the task's scheduled event id. Every per-attempt
/// table is keyed by it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct AttemptKey {
    /// The execution's ARN.
    pub(crate) execution: Arc<str>,
    /// The event that scheduled the task.
    pub(crate) task: EventId,
}

impl AttemptKey {
    /// The attempt of task `task` of `execution`.
    pub(crate) fn new(execution: Arc<str>, task: EventId) -> Self {
        AttemptKey { execution, task }
    }
}

/// Work a backend does once a commit it joined is durable (hand a claimed task to its poller).
pub(crate) type Delivery = Box<dyn FnOnce(&Engine) + Send>;

/// Something a task waits for. The kernel never names one: it goes through `Backends`.
pub(crate) trait TaskBackend: Send + Sync {
    /// A short name, for debugging and tests.
    fn name(&self) -> &'static str;

    /// Whether this backend takes the invocation (by resource or pattern). A backend that only
    /// keeps state for attempts other backends started (heartbeats) serves none.
    fn serves(&self, _engine: &Engine, _invocation: &TaskInvocation) -> bool {
        false
    }

    /// Starts waiting for the attempt's answer (call a handler, offer it on a task list).
    /// Called only when `serves` said yes.
    fn dispatch(&self, _engine: &Engine, _attempt: AttemptKey, _invocation: TaskInvocation) {}

    /// The attempt is over (aborted, timed out, answered elsewhere): drop what waits for it.
    fn cancel(&self, engine: &Engine, attempt: &AttemptKey);

    /// Joins a decision before its append (an activity poller waiting claims the task in the
    /// same commit); returns what to do once the commit is durable.
    fn before_append(
        &self,
        _engine: &Engine,
        _execution_arn: &str,
        _definition: &StateMachine,
        _decision: &mut Decision,
        _now_ms: u64,
    ) -> Result<Option<Delivery>, Error> {
        Ok(None)
    }

    /// The earliest deadline this backend keeps (heartbeats, job polls), in ms of the clock.
    fn next_due_ms(&self, _engine: &Engine) -> Option<u64> {
        None
    }

    /// Runs this backend's deadlines due at `now_ms`; returns how many fired.
    fn run_due(&self, _engine: &Engine, _now_ms: u64) -> usize {
        0
    }
}

/// The backends registered on the kernel, in routing order.
pub(crate) struct Backends {
    list: Box<[Box<dyn TaskBackend>]>,
}

impl Backends {
    /// The engine's backends, in today's routing precedence: activity task lists, then handler
    /// calls (a registered handler, a job integration's pattern, else parked), then the state
    /// kept for attempts of any backend (heartbeats, `.sync` children, embedder jobs).
    pub(crate) fn standard() -> Self {
        Backends::of(vec![
            Box::new(super::activities::ActivityLists),
            Box::new(super::handlers::HandlerCalls),
            Box::new(super::tokens::HeartbeatClocks),
            Box::new(super::integrations::SyncChildBackend),
            Box::new(super::jobs::JobBackend),
        ])
    }

    /// A list of backends, in routing order.
    pub(crate) fn of(list: Vec<Box<dyn TaskBackend>>) -> Self {
        Backends {
            list: list.into_boxed_slice(),
        }
    }

    /// The backends' names, in order.
    pub(crate) fn names(&self) -> Vec<&'static str> {
        self.list.iter().map(|b| b.name()).collect()
    }

    /// Routes the invocation to the first backend that serves it; returns that backend's name,
    /// or `None` when none does (the task then waits for nothing: a bug in the list).
    pub(crate) fn dispatch(
        &self,
        engine: &Engine,
        attempt: AttemptKey,
        invocation: TaskInvocation,
    ) -> Option<&'static str> {
        let backend = self.list.iter().find(|b| b.serves(engine, &invocation))?;
        backend.dispatch(engine, attempt, invocation);
        Some(backend.name())
    }

    /// Tells every backend the attempt is over.
    pub(crate) fn cancel(&self, engine: &Engine, attempt: &AttemptKey) {
        for backend in self.list.iter() {
            backend.cancel(engine, attempt);
        }
    }

    /// Lets every backend join the decision before its append; returns the deliveries to run
    /// once it is durable (empty, without allocating, when no backend joined).
    pub(crate) fn before_append(
        &self,
        engine: &Engine,
        execution_arn: &str,
        definition: &StateMachine,
        decision: &mut Decision,
        now_ms: u64,
    ) -> Result<Vec<Delivery>, Error> {
        let mut deliveries = Vec::new();
        for backend in self.list.iter() {
            if let Some(delivery) =
                backend.before_append(engine, execution_arn, definition, decision, now_ms)?
            {
                deliveries.push(delivery);
            }
        }
        Ok(deliveries)
    }

    /// The earliest deadline any backend keeps.
    pub(crate) fn next_due_ms(&self, engine: &Engine) -> Option<u64> {
        self.list.iter().filter_map(|b| b.next_due_ms(engine)).min()
    }

    /// Runs every backend's due deadlines; returns how many fired.
    pub(crate) fn run_due(&self, engine: &Engine, now_ms: u64) -> usize {
        self.list.iter().map(|b| b.run_due(engine, now_ms)).sum()
    }
}
