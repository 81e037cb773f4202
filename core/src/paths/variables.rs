//! variables: the workflow variables a state can read (`$name` in a JSONPath path or an
//! intrinsic's argument, `$name` in a JSONata expression), as of the state's entry.
//!
//! Owns [`Variables`], a read-only view of the names in scope and their JSON values. Who
//! assigns them (a state's or a Catcher's `Assign`), when new values become visible (from the
//! next state on) and how Parallel branches and Map iterations see outer values is the
//! interpreter's business; this type only answers "what is `$name` here".
//!
//! Must not: read a clock, draw randomness, or copy values on lookup.

use std::collections::BTreeMap;

use serde_json::Value;

/// The variables in scope at one point of an execution, by name (without the `$`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Variables {
    values: BTreeMap<String, Value>,
}

/// No variables: what a state sees before any `Assign` ran.
pub static NO_VARIABLES: Variables = Variables {
    values: BTreeMap::new(),
};

impl Variables {
    /// No variables.
    pub const fn new() -> Self {
        Self {
            values: BTreeMap::new(),
        }
    }

    /// The value of `$name`, if it is assigned.
    #[inline]
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.values.get(name)
    }

    /// Sets `$name` to `value`, returning the value it replaces.
    pub fn insert(&mut self, name: String, value: Value) -> Option<Value> {
        self.values.insert(name, value)
    }

    /// The assigned names and their values, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.values
            .iter()
            .map(|(name, value)| (name.as_str(), value))
    }

    /// How many variables are assigned.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// True when no variable is assigned.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_name_reads_what_was_last_inserted_and_nothing_else() {
        let mut variables = Variables::new();
        assert!(variables.is_empty() && NO_VARIABLES.is_empty());
        assert_eq!(variables.insert("a".into(), json!(1)), None);
        assert_eq!(variables.insert("a".into(), json!([2])), Some(json!(1)));
        assert_eq!(variables.get("a"), Some(&json!([2])));
        assert_eq!(variables.get("b"), None);
        assert_eq!(
            variables.iter().collect::<Vec<_>>(),
            vec![("a", &json!([2]))]
        );
        assert_eq!(variables.len(), 1);
    }
}
