//! variables: the workflow variables of an execution as its events fold them, by thread.
//!
//! Each thread (the top level, a Parallel branch, a Map iteration) has its own scope, keyed by
//! the thread's path of branch/iteration indexes (an event's `scope`). A `*StateExited` event's
//! `assignedVariables` set values in the scope of its thread; a state reads its own scope and
//! every enclosing one (an inner scope never holds a name of an outer one: the parser refuses
//! an inner `Assign` of an outer name). A Parallel's or Map's inner scopes are dropped when it
//! is entered and when it exits, so an iteration's or branch's values vanish with it, and a
//! loop back into the same state starts afresh. A failure keeps them: a redrive reruns the
//! failed state in its thread with the values it saw the first time.
//!
//! Invariants: only `state::apply` changes them (a replay rebuilds the same scopes); an empty
//! execution holds no allocation. Must not: look at the definition or evaluate anything.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use crate::history::AssignedVariables;
use crate::paths::{Variables, NO_VARIABLES};

use super::state::ApplyError;

/// The variables of every thread that assigned some, by thread scope.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct ScopedVariables {
    /// Shared, so a step can hold a state's values while the fold moves on
    /// ([`ScopedVariables::shared_at`]); an assignment copies a scope only while a step holds it.
    scopes: BTreeMap<Vec<u32>, Arc<Variables>>,
}

/// The one empty set a step holds when no scope has values (no allocation per step).
static NO_VARIABLES_SHARED: LazyLock<Arc<Variables>> = LazyLock::new(|| Arc::new(Variables::new()));

impl ScopedVariables {
    /// Folds the variables a state of the thread at `scope` assigned as it exited.
    pub(crate) fn assign(
        &mut self,
        scope: &[u32],
        assigned: &AssignedVariables,
    ) -> Result<(), ApplyError> {
        if assigned.variables.is_empty() {
            return Ok(());
        }
        let values = Arc::make_mut(self.scopes.entry(scope.to_vec()).or_default());
        for (name, text) in &assigned.variables {
            let value = crate::history::depth::parse_stored(text).map_err(|cause| {
                ApplyError::AssignedVariableText {
                    name: name.clone(),
                    cause: cause.to_string(),
                }
            })?;
            values.insert(name.clone(), value);
        }
        Ok(())
    }

    /// Drops the scopes strictly inside `scope` (the branches and iterations of the Parallel or
    /// Map state running there).
    pub(crate) fn clear_below(&mut self, scope: &[u32]) {
        if self.scopes.is_empty() {
            return;
        }
        self.scopes
            .retain(|key, _| !(key.len() > scope.len() && key.starts_with(scope)));
    }

    /// What the state running in the thread at `scope` reads: its own scope's values and
    /// those of every enclosing scope. Borrowed when at most one scope holds values (always at
    /// the top level); merged, inner over outer, otherwise.
    pub(crate) fn at(&self, scope: &[u32]) -> Cow<'_, Variables> {
        match self.enclosing(scope) {
            (None, _) => Cow::Borrowed(&NO_VARIABLES),
            (Some(only), None) => Cow::Borrowed(only),
            (Some(first), Some(_)) => Cow::Owned(self.merged(first, scope)),
        }
    }

    /// [`ScopedVariables::at`] as a shared handle, for a step that keeps the values while the
    /// execution's state changes under it: no copy unless scopes must be merged.
    pub(crate) fn shared_at(&self, scope: &[u32]) -> Arc<Variables> {
        match self.enclosing(scope) {
            (None, _) => Arc::clone(&NO_VARIABLES_SHARED),
            (Some(only), None) => Arc::clone(only),
            (Some(first), Some(_)) => Arc::new(self.merged(first, scope)),
        }
    }

    /// The outermost scope enclosing `scope` that has values, and the next one if any.
    fn enclosing(&self, scope: &[u32]) -> (Option<&Arc<Variables>>, Option<&Arc<Variables>>) {
        if self.scopes.is_empty() {
            return (None, None);
        }
        let mut found = (0..=scope.len()).filter_map(|depth| self.scopes.get(&scope[..depth]));
        (found.next(), found.next())
    }

    /// The values of every scope enclosing `scope`, inner over outer, from the outermost
    /// (`first`).
    fn merged(&self, first: &Variables, scope: &[u32]) -> Variables {
        let mut merged = first.clone();
        let inner = (0..=scope.len()).filter_map(|depth| self.scopes.get(&scope[..depth]));
        for values in inner.skip(1) {
            for (name, value) in values.iter() {
                merged.insert(name.to_string(), value.clone());
            }
        }
        merged
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn assigned(pairs: &[(&str, &str)]) -> AssignedVariables {
        AssignedVariables {
            variables: pairs
                .iter()
                .map(|(name, text)| (name.to_string(), text.to_string()))
                .collect(),
            truncated: false,
        }
    }

    #[test]
    fn a_scope_reads_itself_and_every_enclosing_scope() {
        let mut scoped = ScopedVariables::default();
        assert!(scoped.at(&[]).is_empty());
        scoped
            .assign(&[], &assigned(&[("x", "42"), ("o", "{\"a\":[1]}")]))
            .expect("folds");
        scoped
            .assign(&[0, 1], &assigned(&[("inner", "\"i\"")]))
            .expect("folds");
        assert!(matches!(scoped.at(&[]), Cow::Borrowed(_)));
        assert_eq!(scoped.at(&[]).get("o"), Some(&json!({"a": [1]})));
        assert_eq!(scoped.at(&[]).get("inner"), None);
        let inner = scoped.at(&[0, 1]);
        assert_eq!(inner.get("x"), Some(&json!(42)));
        assert_eq!(inner.get("inner"), Some(&json!("i")));
        // A sibling iteration sees the outer values only.
        assert_eq!(scoped.at(&[0, 2]).get("inner"), None);
        assert_eq!(scoped.at(&[0, 2]).get("x"), Some(&json!(42)));
        // A later assignment replaces the value.
        scoped
            .assign(&[], &assigned(&[("x", "43")]))
            .expect("folds");
        assert_eq!(scoped.at(&[0, 1]).get("x"), Some(&json!(43)));
    }

    #[test]
    fn the_scopes_inside_a_state_vanish_when_it_clears_them() {
        let mut scoped = ScopedVariables::default();
        scoped.assign(&[], &assigned(&[("x", "1")])).expect("folds");
        scoped
            .assign(&[0], &assigned(&[("b", "2")]))
            .expect("folds");
        scoped
            .assign(&[0, 3], &assigned(&[("c", "3")]))
            .expect("folds");
        scoped
            .assign(&[1], &assigned(&[("d", "4")]))
            .expect("folds");
        scoped.clear_below(&[0]);
        assert_eq!(scoped.at(&[0, 3]).get("c"), None);
        assert_eq!(
            scoped.at(&[0]).get("b"),
            Some(&json!(2)),
            "its own scope stays"
        );
        assert_eq!(scoped.at(&[1]).get("d"), Some(&json!(4)), "a sibling stays");
        scoped.clear_below(&[]);
        assert_eq!(scoped.at(&[0]).get("b"), None);
        assert_eq!(scoped.at(&[]).get("x"), Some(&json!(1)));
    }

    #[test]
    fn undecodable_text_is_a_typed_error_naming_the_variable() {
        let mut scoped = ScopedVariables::default();
        let error = scoped
            .assign(&[], &assigned(&[("bad", "{not json")]))
            .expect_err("not JSON");
        assert!(
            matches!(error, ApplyError::AssignedVariableText { ref name, .. } if name == "bad")
        );
    }
}
