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
use crate::interpreter::TaskInvocation;

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
