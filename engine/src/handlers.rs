//! handlers: the registered task handlers, by resource, and the tasks parked for want of one.
//!
//! A dispatch that finds no handler parks its task; a registration takes the tasks parked for
//! its resource and dispatches them. Both look at the map and the parked list under one lock,
//! so "no handler, park" and "register, take the parked" never interleave. (Two locks let a
//! registration run between a dispatch's lookup and its park: the registration found nothing
//! parked, the task was parked after it, and its handler was never called.)
//!
//! Invariants: a task is parked only while its resource has no handler; a registration returns
//! every task parked for its resource, once. Must not: call a handler or append under the lock.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use parking_lot::RwLock;
use serde_json::Value;

use super::backend::{AttemptKey, TaskBackend};
use super::{Engine, Inner, TaskError, TaskHandler};
use statelog_core::history::EventId;
use statelog_core::interpreter::{TaskInvocation, Trigger};

/// A task waiting for a handler of its resource.
pub(crate) struct ParkedTask {
    /// The attempt.
    pub(crate) attempt: AttemptKey,
    /// The call to make once a handler is registered.
    pub(crate) invocation: TaskInvocation,
}

/// What `park_unless_registered` did with a task.
// Returned once and matched at once; boxing the invocation would add an allocation to a
// dispatch that lost the race, for nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Parking {
    /// No handler: the task waits for `register`.
    Parked,
    /// A handler was registered since the caller looked: call it.
    Registered(Arc<dyn TaskHandler>, TaskInvocation),
}

/// The handlers and the parked tasks, under one lock.
#[derive(Default)]
pub(crate) struct TaskHandlers {
    inner: RwLock<Registry>,
}

#[derive(Default)]
struct Registry {
    by_resource: HashMap<String, Arc<dyn TaskHandler>>,
    parked: Vec<ParkedTask>,
}

impl TaskHandlers {
    /// The handler registered for `resource`, if any (a shared lock: the dispatch fast path).
    pub(crate) fn get(&self, resource: &str) -> Option<Arc<dyn TaskHandler>> {
        self.inner.read().by_resource.get(resource).cloned()
    }

    /// Parks `invocation` unless a handler of its resource is registered now. Decided under the
    /// lock `register` takes, so a registration either comes first (its handler is returned)
    /// or finds the task parked.
    pub(crate) fn park_unless_registered(
        &self,
        attempt: &AttemptKey,
        invocation: TaskInvocation,
    ) -> Parking {
        let mut registry = self.inner.write();
        if let Some(handler) = registry.by_resource.get(&invocation.resource) {
            return Parking::Registered(handler.clone(), invocation);
        }
        registry.parked.push(ParkedTask {
            attempt: attempt.clone(),
            invocation,
        });
        Parking::Parked
    }

    /// Registers `handler` for `resource` (replacing any) and takes the tasks parked for it, in
    /// the order they were parked.
    pub(crate) fn register(
        &self,
        resource: &str,
        handler: Arc<dyn TaskHandler>,
    ) -> Vec<ParkedTask> {
        let mut registry = self.inner.write();
        registry.by_resource.insert(resource.to_string(), handler);
        let (now, later): (Vec<_>, Vec<_>) = registry
            .parked
            .drain(..)
            .partition(|task| task.invocation.resource == resource);
        registry.parked = later;
        debug_assert!(
            registry
                .parked
                .iter()
                .all(|task| !registry.by_resource.contains_key(&task.invocation.resource)),
            "a task is parked only while its resource has no handler"
        );
        now
    }
}

/// Rust handler calls as a task backend, the last in the routing order: it serves every task
/// the backends before it did not. A registered handler (a job integration's, a built-in
/// `.sync` child's, or an embedder's) is called on the runtime; a job resource with an
/// undeclared pattern fails at once; anything else is parked until its handler is registered.
pub(crate) struct HandlerCalls;

impl TaskBackend for HandlerCalls {
    fn name(&self) -> &'static str {
        "handler calls"
    }

    fn serves(&self, _engine: &Engine, _invocation: &TaskInvocation) -> bool {
        true
    }

    fn dispatch(&self, engine: &Engine, attempt: AttemptKey, invocation: TaskInvocation) {
        let (handler, invocation) = match engine.inner.handlers.get(&invocation.resource) {
            Some(handler) => (handler, invocation),
            None => {
                if let Some(cause) = engine.undeclared_pattern(&invocation.resource) {
                    let trigger = Trigger::TaskFailed {
                        task_id: invocation.task_id,
                        error: "States.Runtime".to_string(),
                        cause,
                    };
                    engine.drive_in_background(&attempt.execution, trigger);
                    return;
                }
                // Looked up again under the registration's lock: a handler registered since
                // the lookup above has taken the parked tasks already, so parking now would
                // lose this one.
                match engine
                    .inner
                    .handlers
                    .park_unless_registered(&attempt, invocation)
                {
                    Parking::Parked => return,
                    Parking::Registered(handler, invocation) => (handler, invocation),
                }
            }
        };
        call_handler(engine, attempt, handler, invocation);
    }

    /// The handler's future is dropped; had it answered already, that answer is a stale
    /// trigger.
    fn cancel(&self, engine: &Engine, attempt: &AttemptKey) {
        if let Some(call) = engine.inner.attempts.take_call(attempt) {
            call.abort();
        }
    }
}

/// Calls `handler` on the runtime for the attempt; its answer is recorded off the async
/// workers once the call returns.
fn call_handler(
    engine: &Engine,
    attempt: AttemptKey,
    handler: Arc<dyn TaskHandler>,
    invocation: TaskInvocation,
) {
    let task_id = invocation.task_id;
    if let Some(seconds) = invocation.heartbeat_seconds {
        let now_ms = engine.inner.options.clock.now_ms();
        engine
            .inner
            .attempts
            .arm_heartbeat(&attempt, seconds, now_ms);
    }
    let context = with_attempt_id(invocation.context, &attempt.execution, task_id);
    let call = handler.call(invocation.input, context);
    let weak: Weak<Inner> = Arc::downgrade(&engine.inner);
    engine.inner.in_flight.lock().in_flight += 1;
    // One task per call: it keeps the answer in the attempt's entry in the poll that finishes
    // the call, so a token answer that comes after the call returned always finds it (see
    // `attempts`), then has it recorded off the async workers. Dropped unfinished (the call
    // was cancelled), its `Recording` guard has the end of the call recorded all the same.
    let recording = Recording::new(weak, attempt.clone());
    let running = engine.inner.handle.spawn(async move {
        let outcome = answer_of(call).await;
        if let (Some(inner), Some(attempt)) = (recording.engine(), recording.attempt()) {
            inner.attempts.keep_answer(attempt, outcome);
        }
        recording.finish(false);
    });
    engine
        .inner
        .attempts
        .start_call(&attempt, running.abort_handle());
}

/// Has a handler call's end recorded (`record_answer`) on the blocking pool, once: by
/// `finish` when the call returned, or when dropped unfinished (the call was cancelled).
struct Recording {
    call: Option<(Weak<Inner>, AttemptKey)>,
}

impl Recording {
    fn new(weak: Weak<Inner>, attempt: AttemptKey) -> Self {
        Self {
            call: Some((weak, attempt)),
        }
    }

    /// The engine, while it is open.
    fn engine(&self) -> Option<Arc<Inner>> {
        self.call.as_ref().and_then(|(weak, _)| weak.upgrade())
    }

    fn attempt(&self) -> Option<&AttemptKey> {
        self.call.as_ref().map(|(_, attempt)| attempt)
    }

    fn finish(mut self, cancelled: bool) {
        if let Some((weak, attempt)) = self.call.take() {
            record_in_background(weak, attempt, cancelled);
        }
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        if let Some((weak, attempt)) = self.call.take() {
            record_in_background(weak, attempt, true);
        }
    }
}

/// The append blocks on an fsync: keep it off the async workers. A returned call's answer on a
/// log with a commit in flight (`Engine::notify_pays`) is appended right here, on the call's
/// worker, and waits for its durability in a task of the runtime
/// (`Engine::drive_handler_answer_notified`): no hop to the blocking pool and back, whose
/// switches were most of the CPU an execution gained at 256 in flight (issue 16).
fn record_in_background(weak: Weak<Inner>, attempt: AttemptKey, cancelled: bool) {
    let Some(inner) = weak.upgrade() else { return };
    let on_runtime = tokio::runtime::Handle::try_current().is_ok();
    let engine = Engine { inner };
    if !cancelled && on_runtime && engine.notify_pays() {
        let recorded = attempt.clone();
        engine.drive_handler_answer_notified(&attempt, move |engine, result| {
            answer_recorded(engine, &recorded, cancelled, result);
        });
        return;
    }
    let handle = engine.inner.handle.clone();
    drop(engine);
    drop(handle.spawn_blocking(move || record_answer(&weak, &attempt, cancelled)));
}

/// A handler's answer, run inside a task of the runtime: a panicking handler fails its task
/// (`States.TaskFailed` naming the panic) instead of leaving it unanswered for ever.
pub(crate) async fn answer_of(call: super::TaskFuture) -> Result<Value, TaskError> {
    match (CatchUnwind { call }).await {
        Ok(outcome) => outcome,
        Err(payload) => Err(TaskError::new(
            "States.TaskFailed",
            format!(
                "the task handler panicked: {}",
                panic_text(tokio::task::id(), payload.as_ref())
            ),
        )),
    }
}

/// A handler's future, with a panic in its poll caught and returned as `Err(payload)`.
pub(crate) struct CatchUnwind {
    pub(crate) call: super::TaskFuture,
}

impl std::future::Future for CatchUnwind {
    type Output = std::thread::Result<Result<Value, TaskError>>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let call = &mut self.call;
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| call.as_mut().poll(cx))) {
            Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
            Ok(std::task::Poll::Ready(outcome)) => std::task::Poll::Ready(Ok(outcome)),
            Err(payload) => std::task::Poll::Ready(Err(payload)),
        }
    }
}

/// A panic of task `id` as the runtime words it (`task 7 panicked with message "boom"`), the
/// wording a handler's failed task showed when the runtime caught the panic.
pub(crate) fn panic_text(id: tokio::task::Id, payload: &(dyn std::any::Any + Send)) -> String {
    let message = payload
        .downcast_ref::<&'static str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str));
    match message {
        Some(message) => format!("task {id} panicked with message {message:?}"),
        None => format!("task {id} panicked"),
    }
}

/// Records a handler's answer kept in its attempt's entry (unless a token answer already took it
/// into its own commit, see `tokens`), and counts it for `wait_idle`.
fn record_answer(weak: &Weak<Inner>, attempt: &AttemptKey, cancelled: bool) {
    let Some(inner) = weak.upgrade() else { return };
    let engine = Engine { inner };
    let result = engine.drive_handler_answer(attempt);
    answer_recorded(&engine, attempt, cancelled, result);
}

/// Keeps a failed recording's error and counts the recorded answer for `wait_idle` (a
/// handler's, or a test case's mocked answer, see `mocks`).
pub(crate) fn answer_recorded(
    engine: &Engine,
    attempt: &AttemptKey,
    cancelled: bool,
    result: Result<(), crate::Error>,
) {
    if let Err(error) = result {
        engine.inner.background_errors.lock().push(format!(
            "TaskAnswer of task {} for {}: {error}",
            attempt.task.0, attempt.execution
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
pub(crate) fn with_attempt_id(context: Value, execution_arn: &str, task_id: EventId) -> Value {
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

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::TaskError;
    use statelog_core::history::EventId;

    fn handler() -> Arc<dyn TaskHandler> {
        Arc::new(|_input: Value, _context: Value| async { Ok::<_, TaskError>(json!({})) })
    }

    fn invocation(resource: &str, task_id: u32) -> TaskInvocation {
        TaskInvocation {
            task_id: EventId(task_id),
            attempt: 0,
            state_name: "Run".to_string(),
            resource: resource.to_string(),
            input: json!({}),
            context: json!({}),
            heartbeat_seconds: None,
        }
    }

    /// A handler that panics fails its task (the runtime's wording of the panic in the cause),
    /// and its call counts as over (`wait_idle` returns); one that answers after its task was
    /// cancelled (the execution was stopped) leaves nothing in flight either.
    #[test]
    fn a_panicking_handler_fails_its_task_and_a_cancelled_call_ends() {
        use crate::{EngineOptions, ExecutionStatus};
        let log = Arc::new(statelog_store::MemoryLog::new());
        let options = EngineOptions {
            background_timers: false,
            ..EngineOptions::default()
        };
        let engine = crate::Engine::open_with_log(log, options).expect("opens");
        let resource = "arn:aws:lambda:us-east-1:123456789012:function:boom";
        engine.register_integration(resource, |_input: Value, _context: Value| async {
            if true {
                panic!("boom");
            }
            Ok::<_, TaskError>(json!({}))
        });
        // A machine `name` of one Task on `resource`, and one execution of it started.
        let start_one_task = |name: &str, resource: &str| {
            let definition = format!(
                r#"{{"StartAt":"T","States":{{"T":{{"Type":"Task","Resource":"{resource}","End":true}}}}}}"#
            );
            engine
                .create_state_machine(name, &definition, None)
                .expect("machine");
            engine
                .start_execution(name, Some("e"), "{}")
                .expect("starts")
                .execution_arn
        };
        let arn = start_one_task("m", resource);
        let closed = engine.wait_until_closed(&arn).expect("closes");
        assert_eq!(closed.status, ExecutionStatus::Failed);
        assert_eq!(closed.error.as_deref(), Some("States.TaskFailed"));
        let cause = closed.cause.expect("a cause");
        assert!(
            cause.starts_with("the task handler panicked: task ")
                && cause.ends_with(" panicked with message \"boom\""),
            "{cause}"
        );
        engine.wait_idle();

        // A call that never answers, cancelled by a stop of its execution.
        let never = "arn:aws:lambda:us-east-1:123456789012:function:never";
        engine.register_integration(never, |_input: Value, _context: Value| {
            std::future::pending::<Result<Value, TaskError>>()
        });
        let arn = start_one_task("n", never);
        engine.stop_execution(&arn, None, None).expect("stops");
        engine.wait_idle();
        assert_eq!(
            engine.answers_recorded(),
            1,
            "the cancelled call gave no answer"
        );
    }

    #[test]
    fn a_registration_takes_only_its_resources_parked_tasks_in_order_and_once() {
        let handlers = TaskHandlers::default();
        let arn: Arc<str> = Arc::from("arn:aws:states:us-east-1:1:execution:m:e");
        for (resource, task_id) in [("a", 3), ("b", 4), ("a", 5)] {
            let attempt = AttemptKey::new(arn.clone(), EventId(task_id));
            let parking = handlers.park_unless_registered(&attempt, invocation(resource, task_id));
            assert!(matches!(parking, Parking::Parked));
        }
        let taken: Vec<u32> = handlers
            .register("a", handler())
            .iter()
            .map(|task| task.invocation.task_id.0)
            .collect();
        assert_eq!(taken, [3, 5]);
        assert!(handlers.register("a", handler()).is_empty(), "taken once");
        assert!(handlers.get("a").is_some());
        assert!(handlers.get("b").is_none());
        let taken = handlers.register("b", handler());
        assert_eq!(taken.len(), 1);
        assert_eq!(taken[0].invocation.task_id, EventId(4));
    }

    #[test]
    fn a_task_whose_handler_came_after_the_lookup_is_handed_back_not_parked() {
        let handlers = TaskHandlers::default();
        let arn: Arc<str> = Arc::from("arn:aws:states:us-east-1:1:execution:m:e");
        // The dispatch looked and found nothing; the registration ran before it parks.
        assert!(handlers.get("a").is_none());
        assert!(handlers.register("a", handler()).is_empty());
        let attempt = AttemptKey::new(arn, EventId(3));
        match handlers.park_unless_registered(&attempt, invocation("a", 3)) {
            Parking::Registered(_, task) => assert_eq!(task.task_id, EventId(3)),
            Parking::Parked => panic!("parked although its handler is registered"),
        }
        assert!(
            handlers.register("a", handler()).is_empty(),
            "nothing parked"
        );
    }
}
