//! backend: what a task waits for, registered on the kernel through one trait. A task's answer
//! comes from a Rust handler call, an activity task list, a task token (with its heartbeat
//! clock), a `.sync` child execution or an embedder job; each is a `TaskBackend` in the one
//! list `Inner.backends` builds at open. The kernel and the runtime go through the list: they
//! route an invocation to the first backend that serves it, tell every backend when an
//! attempt is over, let every backend join a commit before its append, and ask every backend
//! for its earliest deadline.
//!
//! Invariants: the list's order is the routing precedence (a test case's mocked states, then
//! activity resources, then handler lookup, which reaches the job integrations and the built-in
//! `.sync` children registered as handlers); the last routing backend serves every invocation, so a task is never dropped.
//! Must not: append, or hold a slot lock, in `dispatch` or `cancel`.

use std::sync::Arc;

use super::{Engine, Error};
use statelog_core::asl::StateMachine;
use statelog_core::history::EventId;
use statelog_core::interpreter::{Decision, TaskInvocation};

/// One attempt of a task: the execution and the task's scheduled event id. Every per-attempt
/// table is keyed by it (`attempts::Attempts`). Ordered by execution, then task.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
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

    /// Whether this backend takes this attempt of the invocation: `serves` unless the backend
    /// looks at the attempt's execution too (a test case's mocked responses).
    fn serves_attempt(
        &self,
        engine: &Engine,
        _attempt: &AttemptKey,
        invocation: &TaskInvocation,
    ) -> bool {
        self.serves(engine, invocation)
    }

    /// Starts waiting for the attempt's answer (call a handler, offer it on a task list).
    /// Called only when `serves` said yes.
    fn dispatch(&self, _engine: &Engine, _attempt: AttemptKey, _invocation: TaskInvocation) {}

    /// The attempt is over (aborted, timed out, answered elsewhere): drop what waits for it.
    fn cancel(&self, engine: &Engine, attempt: &AttemptKey);

    /// An execution closed (it may be the child another execution's task waits for).
    fn execution_closed(&self, _engine: &Engine, _execution_arn: &str) {}

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
    /// The engine's backends, in today's routing precedence: a test case's mocked responses
    /// (serving nothing without a mock configuration), activity task lists, then handler
    /// calls (a registered handler, a job integration's pattern, else parked), then the state
    /// kept for attempts of any backend (heartbeats, `.sync` children, embedder jobs).
    pub(crate) fn standard() -> Self {
        Backends::of(vec![
            // Serves only the reserved Map Run resource, which no handler may take.
            Box::new(super::map_runs::MapRunBackend),
            Box::new(super::mocks::MockedTasks),
            Box::new(super::activities::ActivityLists),
            Box::new(super::handlers::HandlerCalls),
            Box::new(super::tokens::HeartbeatClocks),
            Box::new(super::integrations::SyncChildBackend),
            Box::new(super::jobs::JobBackend),
            Box::new(super::swf::SwfDeadlines),
            Box::new(super::express::ExpressTimers),
        ])
    }

    /// A list of backends, in routing order.
    pub(crate) fn of(list: Vec<Box<dyn TaskBackend>>) -> Self {
        Backends {
            list: list.into_boxed_slice(),
        }
    }

    /// The backends' names, in order.
    #[cfg(test)]
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
        let backend = self
            .list
            .iter()
            .find(|b| b.serves_attempt(engine, &attempt, &invocation))?;
        backend.dispatch(engine, attempt, invocation);
        Some(backend.name())
    }

    /// Tells every backend the attempt is over, then drops what is left of its entry in the
    /// attempt table (an answer that came too late), so no part of it outlives the others.
    pub(crate) fn cancel(&self, engine: &Engine, attempt: &AttemptKey) {
        for backend in self.list.iter() {
            backend.cancel(engine, attempt);
        }
        engine.inner.attempts.end(attempt);
    }

    /// Tells every backend an execution closed. (Its attempts' entries are dropped once every
    /// effect of the closing decision is performed, see `Engine::perform`.)
    pub(crate) fn execution_closed(&self, engine: &Engine, execution_arn: &str) {
        for backend in self.list.iter() {
            backend.execution_closed(engine, execution_arn);
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use parking_lot::Mutex;
    use serde_json::json;

    use super::*;
    use crate::EngineOptions;

    /// A backend that serves resources starting with `prefix` and records what it was asked.
    #[derive(Default)]
    struct Probe {
        prefix: &'static str,
        dispatched: Mutex<Vec<AttemptKey>>,
        cancelled: AtomicUsize,
        due_ms: Option<u64>,
    }

    impl TaskBackend for Arc<Probe> {
        fn name(&self) -> &'static str {
            self.prefix
        }

        fn serves(&self, _engine: &Engine, invocation: &TaskInvocation) -> bool {
            invocation.resource.starts_with(self.prefix)
        }

        fn dispatch(&self, _engine: &Engine, attempt: AttemptKey, _invocation: TaskInvocation) {
            self.dispatched.lock().push(attempt);
        }

        fn cancel(&self, _engine: &Engine, _attempt: &AttemptKey) {
            self.cancelled.fetch_add(1, Ordering::SeqCst);
        }

        fn next_due_ms(&self, _engine: &Engine) -> Option<u64> {
            self.due_ms
        }

        fn run_due(&self, _engine: &Engine, now_ms: u64) -> usize {
            usize::from(self.due_ms.is_some_and(|due| due <= now_ms))
        }
    }

    fn invocation(resource: &str) -> TaskInvocation {
        TaskInvocation {
            task_id: EventId(3),
            attempt: 0,
            state_name: "T".to_string(),
            resource: resource.to_string(),
            input: json!({}),
            context: json!({}),
            heartbeat_seconds: None,
        }
    }

    fn engine() -> Engine {
        let log = Arc::new(statelog_store::MemoryLog::new());
        let options = EngineOptions {
            background_timers: false,
            ..EngineOptions::default()
        };
        Engine::open_with_log(log, options).expect("opens")
    }

    /// The first backend that serves a task takes it, the later ones never see it; a cancel
    /// reaches every backend; deadlines are the earliest of all, and due ones are summed.
    #[test]
    fn the_first_serving_backend_takes_the_task_and_every_backend_hears_the_cancel() {
        let engine = engine();
        let first = Arc::new(Probe {
            prefix: "a:",
            due_ms: Some(50),
            ..Probe::default()
        });
        let second = Arc::new(Probe {
            prefix: "a:b:",
            due_ms: Some(20),
            ..Probe::default()
        });
        let backends = Backends::of(vec![Box::new(first.clone()), Box::new(second.clone())]);
        let attempt = AttemptKey::new(Arc::from("arn:e"), EventId(3));
        let routed = backends.dispatch(&engine, attempt.clone(), invocation("a:b:c"));
        assert_eq!(routed, Some("a:"), "precedence is the list's order");
        assert_eq!(*first.dispatched.lock(), vec![attempt.clone()]);
        assert!(second.dispatched.lock().is_empty());
        assert_eq!(
            backends.dispatch(&engine, attempt.clone(), invocation("z")),
            None
        );

        backends.cancel(&engine, &attempt);
        assert_eq!(first.cancelled.load(Ordering::SeqCst), 1);
        assert_eq!(second.cancelled.load(Ordering::SeqCst), 1);

        assert_eq!(backends.next_due_ms(&engine), Some(20));
        assert_eq!(backends.run_due(&engine, 30), 1);
        assert_eq!(backends.run_due(&engine, 60), 2);
    }

    /// The engine's list keeps today's routing precedence: a test case's mocked state first
    /// (none without a mock configuration), an activity resource to its task list, anything
    /// else to the handler calls (which serve every task).
    #[test]
    fn the_standard_list_routes_activities_first_and_everything_else_to_handlers() {
        let engine = engine();
        let standard = Backends::standard();
        assert_eq!(
            standard.names(),
            vec![
                "map runs",
                "mocked responses",
                "activity task lists",
                "handler calls",
                "heartbeat clocks",
                "sync child executions",
                "embedder jobs",
                "swf deadlines",
                "express timers",
            ]
        );
        let serving = |resource: &str| {
            let invocation = invocation(resource);
            standard
                .list
                .iter()
                .find(|b| b.serves(&engine, &invocation))
                .map(|b| b.name())
        };
        assert_eq!(
            serving("arn:aws:states:us-east-1:000000000000:activity:work"),
            Some("activity task lists")
        );
        assert_eq!(
            serving("arn:aws:states:::states:startExecution.sync"),
            Some("handler calls")
        );
        assert_eq!(serving("anything"), Some("handler calls"));
    }
}
