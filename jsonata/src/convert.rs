//! JSON in and out of the evaluator's value type. Both walks grow the stack where a value is
//! deeply nested (the engine's `with_stack`), so no input depth overflows it.

use std::rc::Rc;

use jsonata_core::value::{with_stack, JArray, JMap, JValue};
use serde_json::{Number, Value};

use crate::EvalError;

/// `value` as the evaluator's value.
pub(crate) fn to_jvalue(value: &Value) -> JValue {
    match value {
        Value::Null => JValue::Null,
        Value::Bool(b) => JValue::Bool(*b),
        Value::Number(n) => JValue::Number(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => JValue::string(s.as_str()),
        Value::Array(items) => with_stack(|| {
            let flat = !items.iter().any(Value::is_array);
            JValue::Array(JArray::new_flat(
                items.iter().map(to_jvalue).collect(),
                flat,
            ))
        }),
        Value::Object(map) => with_stack(|| {
            let map: JMap = map.iter().map(|(k, v)| (k.clone(), to_jvalue(v))).collect();
            JValue::Object(Rc::new(map))
        }),
    }
}

/// An object of `members` as the evaluator's value, converted straight from the borrowed
/// values (no JSON copy is made first).
pub(crate) fn object_of(members: &[(&str, &Value)]) -> JValue {
    let map: JMap = members
        .iter()
        .map(|(k, v)| (k.to_string(), to_jvalue(v)))
        .collect();
    JValue::Object(Rc::new(map))
}

/// The object of `members` holding only what `paths` read (each a member name, then field
/// names, read whole at its end): an expression that reads `$states.input.order.id` sees the
/// same value as with the whole object converted, since it reads nothing else. Only objects
/// are pruned; any other value on a path is converted whole.
pub(crate) fn pruned_object(members: &[(&str, &Value)], paths: &[&[String]]) -> JValue {
    let mut map = JMap::default();
    for (name, value) in members {
        let below: Vec<&[String]> = paths
            .iter()
            .filter(|p| p.first().is_some_and(|first| first == name))
            .map(|p| &p[1..])
            .collect();
        if !below.is_empty() {
            map.insert(name.to_string(), pruned(value, &below));
        }
    }
    JValue::Object(Rc::new(map))
}

/// The index of a path step `[k]` (a constant index, as the scan writes it).
fn index_step(step: &str) -> Option<usize> {
    step.strip_prefix('[')?.strip_suffix(']')?.parse().ok()
}

/// `value` holding only what `paths` read below it (an empty path: all of it).
fn pruned(value: &Value, paths: &[&[String]]) -> JValue {
    if paths.iter().any(|p| p.is_empty()) {
        return to_jvalue(value);
    }
    let indexes: Option<Vec<usize>> = paths.iter().map(|p| index_step(&p[0])).collect();
    let object = match (value, indexes) {
        (Value::Object(object), _) if paths.iter().all(|p| index_step(&p[0]).is_none()) => object,
        // Only constant indexes into an array of non-arrays (`items[0]`): the items read, in
        // their places; the others are never read (`null` holds their place).
        (Value::Array(items), Some(indexes)) if !items.iter().any(Value::is_array) => {
            let len = indexes
                .iter()
                .map(|i| i.saturating_add(1))
                .max()
                .unwrap_or(0)
                .min(items.len());
            return with_stack(|| {
                let out = (0..len)
                    .map(|i| {
                        let below: Vec<&[String]> = paths
                            .iter()
                            .filter(|p| index_step(&p[0]) == Some(i))
                            .map(|p| &p[1..])
                            .collect();
                        if below.is_empty() {
                            JValue::Null
                        } else {
                            pruned(&items[i], &below)
                        }
                    })
                    .collect();
                JValue::Array(JArray::new_flat(out, true))
            });
        }
        _ => return to_jvalue(value),
    };
    with_stack(|| {
        let mut map = JMap::default();
        for path in paths {
            let key = &path[0];
            if map.contains_key(key) {
                continue;
            }
            let Some(child) = object.get(key) else {
                continue;
            };
            let below: Vec<&[String]> = paths
                .iter()
                .filter(|p| &p[0] == key)
                .map(|p| &p[1..])
                .collect();
            map.insert(key.clone(), pruned(child, &below));
        }
        JValue::Object(Rc::new(map))
    })
}

/// The JSON of an evaluation's result: `None` for undefined. Inside arrays and objects an
/// undefined value is left out; a function inside an object is left out and inside an array
/// becomes `null` (as JSON.stringify does); a function or regex as the whole result has no
/// JSON form.
pub(crate) fn from_jvalue(value: &JValue) -> Result<Option<Value>, EvalError> {
    match value {
        JValue::Undefined => Ok(None),
        JValue::Lambda(_) | JValue::Builtin { .. } => Err(EvalError::NotJson { kind: "function" }),
        JValue::Regex { .. } => Err(EvalError::NotJson { kind: "regex" }),
        other => inner(other).map(|v| v.or(Some(Value::Null))),
    }
}

/// A number as JSON: integral values within 2^53 as integers, others as floats; not finite
/// is JSONata's D1001.
pub(crate) fn number(n: f64) -> Result<Value, EvalError> {
    if !n.is_finite() {
        return Err(EvalError::coded(
            "D1001",
            format!("Number out of range: {n}"),
        ));
    }
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if n.fract() == 0.0 && n.abs() <= EXACT {
        // `-0` is the integer 0, as JSON.stringify writes it.
        return Ok(Value::from(n as i64));
    }
    Ok(Number::from_f64(n)
        .map(Value::Number)
        .unwrap_or(Value::Null))
}

/// `None`: left out of the enclosing container (undefined or a function).
fn inner(value: &JValue) -> Result<Option<Value>, EvalError> {
    Ok(Some(match value {
        JValue::Undefined | JValue::Lambda(_) | JValue::Builtin { .. } | JValue::Regex { .. } => {
            return Ok(None)
        }
        JValue::Null => Value::Null,
        JValue::Bool(b) => Value::Bool(*b),
        JValue::Number(n) => number(*n)?,
        JValue::String(s) => Value::String(s.to_string()),
        JValue::Array(items) => with_stack(|| -> Result<Value, EvalError> {
            let mut out = Vec::with_capacity(items.len());
            for item in items.iter() {
                match item {
                    JValue::Undefined => {}
                    JValue::Lambda(_) | JValue::Builtin { .. } | JValue::Regex { .. } => {
                        out.push(Value::Null)
                    }
                    other => out.push(inner(other)?.unwrap_or(Value::Null)),
                }
            }
            Ok(Value::Array(out))
        })?,
        JValue::Object(map) => with_stack(|| -> Result<Value, EvalError> {
            let mut out = serde_json::Map::with_capacity(map.len());
            for (k, v) in map.iter() {
                if let Some(v) = inner(v)? {
                    out.insert(k.clone(), v);
                }
            }
            Ok(Value::Object(out))
        })?,
    }))
}
