//! template: payload templates (`Parameters`, `ResultSelector`, `ItemSelector`) compiled once
//! into a tree of literals, paths and intrinsic calls, then evaluated per state run.
//!
//! Invariants: a compiled template holds no unparsed `.$` string; output keys have the `.$`
//! suffix removed; key order is the template's order. Compilation reports every problem, each
//! with a JSON pointer relative to the template.
//!
//! Must not: re-parse anything at evaluation, or panic on any template or input.

use serde_json::{Map, Value};

use crate::limits;

use super::intrinsic::Call;
use super::{
    to_json_text, Entropy, Path, StatesError, TemplateDiagnostic, Variables, STATES_RUNTIME,
};

/// A compiled template node.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    /// A value copied as is (no `.$` key anywhere inside).
    Literal(Value),
    /// An object with at least one dynamic entry somewhere below.
    Object(Vec<(String, Entry)>),
    /// An array with at least one dynamic element somewhere below.
    Array(Vec<Node>),
}

/// One entry of a compiled object.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Entry {
    /// A plain key.
    Node(Node),
    /// `"key.$": "$..."`; `field` is the key as written (with `.$`).
    Path { field: String, path: Path },
    /// `"key.$": "States.X(...)"`.
    Call { field: String, call: Box<Call> },
}

/// True when `value` mentions `$$` anywhere (a string, or an object key). Walks with an
/// explicit stack: templates may nest deeper than the call stack should.
pub(crate) fn mentions_context(value: &Value) -> bool {
    let mut stack = vec![value];
    while let Some(node) = stack.pop() {
        match node {
            Value::String(s) if s.contains("$$") => return true,
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => {
                if map.keys().any(|k| k.contains("$$")) {
                    return true;
                }
                stack.extend(map.values());
            }
            _ => {}
        }
    }
    false
}

/// Escapes a key for a JSON pointer (RFC 6901).
fn pointer_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Compiles `source`, pushing every problem into `problems`.
pub(crate) fn compile(
    source: &Value,
    pointer: &str,
    depth: usize,
    problems: &mut Vec<TemplateDiagnostic>,
) -> Node {
    if depth > limits::TEMPLATE_DEPTH_MAX {
        problems.push(TemplateDiagnostic {
            pointer: pointer.to_string(),
            message: format!(
                "the template nests objects and arrays deeper than {}",
                limits::TEMPLATE_DEPTH_MAX
            ),
        });
        return Node::Literal(Value::Null);
    }
    match source {
        Value::Object(map) => {
            let mut entries: Vec<(String, Entry)> = Vec::with_capacity(map.len());
            let mut dynamic = false;
            for (key, value) in map {
                let here = format!("{pointer}/{}", pointer_token(key));
                let (name, entry) = if let Some(name) = key.strip_suffix(".$") {
                    dynamic = true;
                    let entry = compile_dynamic(key, value, &here, problems);
                    (name.to_string(), entry)
                } else {
                    let node = compile(value, &here, depth + 1, problems);
                    if !matches!(node, Node::Literal(_)) {
                        dynamic = true;
                    }
                    (key.clone(), Entry::Node(node))
                };
                if name.is_empty() {
                    problems.push(TemplateDiagnostic {
                        pointer: here.clone(),
                        message: "the key '.$' names no field".to_string(),
                    });
                }
                if entries.iter().any(|(existing, _)| *existing == name) {
                    problems.push(TemplateDiagnostic {
                        pointer: here,
                        message: format!(
                            "the field '{name}' is given twice (once with '.$' and once without)"
                        ),
                    });
                    continue;
                }
                entries.push((name, entry));
            }
            if dynamic {
                Node::Object(entries)
            } else {
                Node::Literal(source.clone())
            }
        }
        Value::Array(items) => {
            let nodes: Vec<Node> = items
                .iter()
                .enumerate()
                .map(|(i, item)| compile(item, &format!("{pointer}/{i}"), depth + 1, problems))
                .collect();
            if nodes.iter().all(|n| matches!(n, Node::Literal(_))) {
                Node::Literal(source.clone())
            } else {
                Node::Array(nodes)
            }
        }
        other => Node::Literal(other.clone()),
    }
}

fn compile_dynamic(
    key: &str,
    value: &Value,
    pointer: &str,
    problems: &mut Vec<TemplateDiagnostic>,
) -> Entry {
    let placeholder = Entry::Node(Node::Literal(Value::Null));
    let Some(text) = value.as_str() else {
        problems.push(TemplateDiagnostic {
            pointer: pointer.to_string(),
            message: format!(
                "the value of '{key}' must be a string holding a path or an intrinsic function \
                 call, found {}",
                to_json_text(value)
            ),
        });
        return placeholder;
    };
    if text.starts_with('$') {
        match Path::parse(text) {
            Ok(path) => Entry::Path {
                field: key.to_string(),
                path,
            },
            Err(e) => {
                problems.push(TemplateDiagnostic {
                    pointer: pointer.to_string(),
                    message: e.message,
                });
                placeholder
            }
        }
    } else if text.trim_start().starts_with("States.") {
        match Call::parse(text) {
            Ok(call) => Entry::Call {
                field: key.to_string(),
                call: Box::new(call),
            },
            Err(e) => {
                problems.push(TemplateDiagnostic {
                    pointer: pointer.to_string(),
                    message: e.message,
                });
                placeholder
            }
        }
    } else {
        problems.push(TemplateDiagnostic {
            pointer: pointer.to_string(),
            message: format!(
                "the value of '{key}' must be a path (starting with '$') or an intrinsic function \
                 call (starting with 'States.'), found '{text}'"
            ),
        });
        placeholder
    }
}

/// Builds the payload described by `node`.
pub(crate) fn evaluate(
    node: &Node,
    input: &Value,
    context: &Value,
    variables: &Variables,
    entropy: &mut dyn Entropy,
) -> Result<Value, StatesError> {
    match node {
        Node::Literal(v) => Ok(v.clone()),
        Node::Array(items) => items
            .iter()
            .map(|item| evaluate(item, input, context, variables, entropy))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        Node::Object(entries) => {
            let mut out = Map::with_capacity(entries.len());
            for (name, entry) in entries {
                let value = evaluate_entry(entry, input, context, variables, entropy)?;
                out.insert(name.clone(), value);
            }
            Ok(Value::Object(out))
        }
    }
}

/// The value of one entry.
pub(crate) fn evaluate_entry(
    entry: &Entry,
    input: &Value,
    context: &Value,
    variables: &Variables,
    entropy: &mut dyn Entropy,
) -> Result<Value, StatesError> {
    match entry {
        Entry::Node(n) => evaluate(n, input, context, variables, entropy),
        Entry::Path { field, path } => match path.try_select_in(input, context, variables)? {
            Some(v) => Ok(v),
            None => Err(path_not_found(path, field, input)),
        },
        Entry::Call { field, call } => call.evaluate_in(input, context, variables, entropy, field),
    }
}

/// Adds the variables `node` reads to `names`, each once, in order of appearance. Recursive
/// like [`compile`], whose depth limit bounds it.
pub(crate) fn variable_references(node: &Node, names: &mut Vec<String>) {
    match node {
        Node::Literal(_) => {}
        Node::Array(items) => items
            .iter()
            .for_each(|item| variable_references(item, names)),
        Node::Object(entries) => entries
            .iter()
            .for_each(|(_, entry)| entry_variable_references(entry, names)),
    }
}

/// [`variable_references`] of one entry.
pub(crate) fn entry_variable_references(entry: &Entry, names: &mut Vec<String>) {
    match entry {
        Entry::Node(node) => variable_references(node, names),
        Entry::Path { path, .. } => add_reference(path, names),
        Entry::Call { call, .. } => call_variable_references(call, names),
    }
}

fn call_variable_references(call: &Call, names: &mut Vec<String>) {
    for arg in call.args() {
        match arg {
            super::intrinsic::Arg::Literal(_) => {}
            super::intrinsic::Arg::Path(path) => add_reference(path, names),
            super::intrinsic::Arg::Call(inner) => call_variable_references(inner, names),
        }
    }
}

/// Adds every variable `path` reads (its root's and its filters') not yet in `names`.
fn add_reference(path: &Path, names: &mut Vec<String>) {
    for name in path.variables() {
        if !names.iter().any(|known| known == name) {
            names.push(name.clone());
        }
    }
}

/// AWS's `States.Runtime` cause for a `.$` path that finds nothing.
pub(crate) fn path_not_found(path: &Path, field: &str, input: &Value) -> StatesError {
    StatesError::new(
        STATES_RUNTIME,
        format!(
            "The JSONPath '{}' specified for the field '{}' could not be found in the input '{}'",
            path.as_str(),
            field,
            to_json_text(input)
        ),
    )
}
