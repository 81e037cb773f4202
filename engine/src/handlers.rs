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
use std::sync::Arc;

use parking_lot::RwLock;

use super::TaskHandler;
use statelog_core::interpreter::TaskInvocation;

/// A task waiting for a handler of its resource.
pub(crate) struct ParkedTask {
    /// The execution it belongs to.
    pub(crate) execution_arn: Arc<str>,
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
        execution_arn: &Arc<str>,
        invocation: TaskInvocation,
    ) -> Parking {
        let mut registry = self.inner.write();
        if let Some(handler) = registry.by_resource.get(&invocation.resource) {
            return Parking::Registered(handler.clone(), invocation);
        }
        registry.parked.push(ParkedTask {
            execution_arn: execution_arn.clone(),
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

    #[test]
    fn a_registration_takes_only_its_resources_parked_tasks_in_order_and_once() {
        let handlers = TaskHandlers::default();
        let arn: Arc<str> = Arc::from("arn:aws:states:us-east-1:1:execution:m:e");
        for (resource, task_id) in [("a", 3), ("b", 4), ("a", 5)] {
            let parking = handlers.park_unless_registered(&arn, invocation(resource, task_id));
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
        match handlers.park_unless_registered(&arn, invocation("a", 3)) {
            Parking::Registered(_, task) => assert_eq!(task.task_id, EventId(3)),
            Parking::Parked => panic!("parked although its handler is registered"),
        }
        assert!(
            handlers.register("a", handler()).is_empty(),
            "nothing parked"
        );
    }
}
