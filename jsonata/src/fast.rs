//! Expressions simple enough to evaluate without the engine: literals, a variable followed by
//! field names and constant indexes (`$states.input.order.items[0].sku`), `&` of such
//! operands when each is a string or nothing, and `=`, `!=`, `<`, `<=`, `>`, `>=` of numbers
//! (`=` and `!=` also of strings and booleans).
//!
//! Each shape gives exactly what the evaluator gives; where a value falls outside what is
//! handled here (an array along a path, a number in a concatenation, a string compared with
//! `<`, ...) the evaluation is left to the engine ([`Fast::evaluate`] returns `None`).
//! `fast_tests` compares the two on many inputs.

use jsonata_core::ast::{AstNode, BinaryOp, PathStep, Stage};
use jsonata_core::value::JValue;

use crate::Bindings;

/// An expression of a shape evaluated here.
#[derive(Debug, Clone)]
pub(crate) enum Fast {
    Str(String),
    Num(f64),
    Bool(bool),
    Null,
    /// `$name` then field names and indexes.
    Path {
        name: String,
        keys: Vec<Key>,
    },
    /// `lhs & rhs`.
    Concat(Box<Fast>, Box<Fast>),
    /// A comparison (`op` is one of the six comparison operators).
    Compare(BinaryOp, Box<Fast>, Box<Fast>),
}

/// One step of a [`Fast::Path`] after its variable.
#[derive(Debug, Clone)]
pub(crate) enum Key {
    Field(String),
    /// `[k]`, a constant index from the start.
    Index(usize),
}

/// What a fast evaluation gives.
pub(crate) enum Got<'b> {
    /// Undefined.
    Nothing,
    /// A bound value, or a part of one (never an array or undefined).
    Found(&'b JValue),
    Str(String),
    Num(f64),
    Bool(bool),
    Null,
}

/// The constant index of a stage list that is one `[k]` with `k` a whole number `>= 0`.
pub(crate) fn constant_index(stages: &[Stage]) -> Option<usize> {
    let [Stage::Filter(node)] = stages else {
        return None;
    };
    match node.as_ref() {
        // Up to 2^31: a larger literal index is left to the engine.
        AstNode::Number(n) if n.fract() == 0.0 && *n >= 0.0 && *n < 2_147_483_648.0 => {
            Some(*n as usize)
        }
        _ => None,
    }
}

impl Fast {
    /// The fast form of `ast`, if it has one.
    pub(crate) fn of(ast: &AstNode) -> Option<Fast> {
        Some(match ast {
            AstNode::String(s) => Fast::Str(s.clone()),
            AstNode::Number(n) if n.is_finite() => Fast::Num(*n),
            AstNode::Boolean(b) => Fast::Bool(*b),
            AstNode::Null => Fast::Null,
            AstNode::Variable(name) if !name.is_empty() => Fast::Path {
                name: name.clone(),
                keys: Vec::new(),
            },
            AstNode::Path { steps } => path(steps)?,
            AstNode::Binary { op, lhs, rhs } => {
                let (lhs, rhs) = (Box::new(Fast::of(lhs)?), Box::new(Fast::of(rhs)?));
                match op {
                    BinaryOp::Concatenate => Fast::Concat(lhs, rhs),
                    BinaryOp::Equal
                    | BinaryOp::NotEqual
                    | BinaryOp::LessThan
                    | BinaryOp::LessThanOrEqual
                    | BinaryOp::GreaterThan
                    | BinaryOp::GreaterThanOrEqual => Fast::Compare(*op, lhs, rhs),
                    _ => return None,
                }
            }
            _ => return None,
        })
    }

    /// The value among `bindings`; `None`: left to the engine.
    pub(crate) fn evaluate<'b>(&self, bindings: &'b Bindings) -> Option<Got<'b>> {
        Some(match self {
            Fast::Str(s) => Got::Str(s.clone()),
            Fast::Num(n) => Got::Num(*n),
            Fast::Bool(b) => Got::Bool(*b),
            Fast::Null => Got::Null,
            Fast::Path { name, keys } => match look_up(bindings, name, keys)? {
                None => Got::Nothing,
                Some(value) => Got::Found(value),
            },
            Fast::Concat(lhs, rhs) => {
                let mut joined = text(lhs.evaluate(bindings)?)?;
                joined.push_str(&text(rhs.evaluate(bindings)?)?);
                Got::Str(joined)
            }
            Fast::Compare(op, lhs, rhs) => {
                compare(*op, lhs.evaluate(bindings)?, rhs.evaluate(bindings)?)?
            }
        })
    }
}

/// `$name` then plain field names and constant indexes.
fn path(steps: &[PathStep]) -> Option<Fast> {
    let plain = |step: &PathStep| {
        step.focus.is_none() && step.index_var.is_none() && step.ancestor_label.is_none()
    };
    let (first, rest) = steps.split_first()?;
    let AstNode::Variable(name) = &first.node else {
        return None;
    };
    if name.is_empty() || !plain(first) || !first.stages.is_empty() {
        return None;
    }
    let mut keys = Vec::with_capacity(rest.len());
    for step in rest {
        let AstNode::Name(key) = &step.node else {
            return None;
        };
        if !plain(step) {
            return None;
        }
        keys.push(Key::Field(key.clone()));
        if !step.stages.is_empty() {
            keys.push(Key::Index(constant_index(&step.stages)?));
        }
    }
    Some(Fast::Path {
        name: name.clone(),
        keys,
    })
}

/// What a path finds: `Some(None)` nothing; `None` where the engine must decide (an array
/// read by a field name, which maps over its items, an index into anything but an array of
/// non-arrays, an array as the result).
fn look_up<'b>(bindings: &'b Bindings, name: &str, keys: &[Key]) -> Option<Option<&'b JValue>> {
    let Some(mut value) = bindings.get(name) else {
        return Some(None);
    };
    for key in keys {
        value = match (key, value) {
            (Key::Field(key), JValue::Object(map)) => match map.get(key) {
                Some(child) => child,
                None => return Some(None),
            },
            (Key::Field(_), JValue::Array(_)) => return None,
            (Key::Index(index), JValue::Array(items)) => {
                if items.iter().any(|item| matches!(item, JValue::Array(_))) {
                    return None;
                }
                match items.get(*index) {
                    Some(item) => item,
                    None => return Some(None),
                }
            }
            (Key::Index(_), _) => return None,
            // A field of a string, number, boolean or null is nothing.
            (Key::Field(_), _) => return Some(None),
        };
    }
    match value {
        JValue::Array(_) | JValue::Undefined => None,
        other => Some(Some(other)),
    }
}

/// An operand of `&`: nothing is the empty string; other than a string, the engine decides.
fn text(got: Got<'_>) -> Option<String> {
    match got {
        Got::Nothing => Some(String::new()),
        Got::Str(s) => Some(s),
        Got::Found(JValue::String(s)) => Some(s.to_string()),
        _ => None,
    }
}

/// A comparison of numbers (or, by `=` and `!=`, of two strings or two booleans); with
/// nothing on either side `=` and `!=` are false and the others nothing. Anything else: the engine decides.
fn compare<'b>(op: BinaryOp, lhs: Got<'_>, rhs: Got<'_>) -> Option<Got<'b>> {
    enum Plain<'a> {
        Nothing,
        Num(f64),
        Str(&'a str),
        Bool(bool),
    }
    fn plain<'g>(got: &'g Got<'_>) -> Option<Plain<'g>> {
        match got {
            Got::Nothing => Some(Plain::Nothing),
            Got::Num(n) | Got::Found(JValue::Number(n)) => Some(Plain::Num(*n)),
            Got::Str(s) => Some(Plain::Str(s)),
            Got::Found(JValue::String(s)) => Some(Plain::Str(s)),
            Got::Bool(b) | Got::Found(JValue::Bool(b)) => Some(Plain::Bool(*b)),
            _ => None,
        }
    }
    let (lhs, rhs) = (plain(&lhs)?, plain(&rhs)?);
    let equality = matches!(op, BinaryOp::Equal | BinaryOp::NotEqual);
    let order = match (&lhs, &rhs) {
        (Plain::Nothing, _) | (_, Plain::Nothing) if equality => return Some(Got::Bool(false)),
        (Plain::Nothing, Plain::Nothing | Plain::Num(_)) | (Plain::Num(_), Plain::Nothing) => {
            return Some(Got::Nothing)
        }
        (Plain::Num(a), Plain::Num(b)) => a.partial_cmp(b)?,
        (Plain::Str(a), Plain::Str(b)) if equality => {
            return Some(Got::Bool((a == b) == (op == BinaryOp::Equal)))
        }
        (Plain::Bool(a), Plain::Bool(b)) if equality => {
            return Some(Got::Bool((a == b) == (op == BinaryOp::Equal)))
        }
        _ => return None,
    };
    use std::cmp::Ordering::{Equal, Greater, Less};
    Some(Got::Bool(match op {
        BinaryOp::Equal => order == Equal,
        BinaryOp::NotEqual => order != Equal,
        BinaryOp::LessThan => order == Less,
        BinaryOp::LessThanOrEqual => order != Greater,
        BinaryOp::GreaterThan => order == Greater,
        BinaryOp::GreaterThanOrEqual => order != Less,
        _ => return None,
    }))
}

/// Where a direct evaluation ([`Fast::evaluate_json`]) finds a `$name`: `$states` as its
/// members (`input`, `result`, `errorOutput`, `context`, those present), the variables set;
/// neither converted.
pub(crate) struct JsonRoots<'a> {
    pub(crate) states: &'a [(&'a str, &'a serde_json::Value)],
    pub(crate) variables: &'a [(&'a str, &'a serde_json::Value)],
}

/// What `$name` is among [`JsonRoots`].
enum JsonRoot<'a> {
    States(&'a [(&'a str, &'a serde_json::Value)]),
    Value(&'a serde_json::Value),
}

impl<'a> JsonRoots<'a> {
    fn get(&self, name: &str) -> Option<JsonRoot<'a>> {
        if name == "states" {
            return Some(JsonRoot::States(self.states));
        }
        self.variables
            .iter()
            .find(|(variable, _)| *variable == name)
            .map(|(_, value)| JsonRoot::Value(value))
    }
}

/// What a direct evaluation gives: [`Got`] over JSON values.
pub(crate) enum GotJson<'b> {
    Nothing,
    /// A bound value, or a part of one: never an array, an object or `$states` itself.
    Found(&'b serde_json::Value),
    Str(String),
    Num(f64),
    Bool(bool),
    Null,
}

impl Fast {
    /// [`Fast::evaluate`] straight over JSON values, without converting them into bindings
    /// first: the same value wherever both answer. `None` where the engine (or the converted
    /// form) must decide, and also where the value found is an object (its JSON would be
    /// rebuilt through the evaluator's form, which writes numbers its own way).
    pub(crate) fn evaluate_json<'b>(&self, root: &JsonRoots<'b>) -> Option<GotJson<'b>> {
        Some(match self {
            Fast::Str(s) => GotJson::Str(s.clone()),
            Fast::Num(n) => GotJson::Num(*n),
            Fast::Bool(b) => GotJson::Bool(*b),
            Fast::Null => GotJson::Null,
            Fast::Path { name, keys } => match look_up_json(root.get(name), keys)? {
                None => GotJson::Nothing,
                Some(value) => GotJson::Found(value),
            },
            Fast::Concat(lhs, rhs) => {
                let mut joined = text_json(lhs.evaluate_json(root)?)?;
                joined.push_str(&text_json(rhs.evaluate_json(root)?)?);
                GotJson::Str(joined)
            }
            Fast::Compare(op, lhs, rhs) => {
                let got = |got: GotJson<'_>| -> Option<Got<'static>> {
                    Some(match got {
                        GotJson::Nothing => Got::Nothing,
                        GotJson::Str(s) => Got::Str(s),
                        GotJson::Found(serde_json::Value::String(s)) => Got::Str(s.clone()),
                        GotJson::Num(n) => Got::Num(n),
                        GotJson::Found(serde_json::Value::Number(n)) => {
                            Got::Num(n.as_f64().unwrap_or(f64::NAN))
                        }
                        GotJson::Bool(b) | GotJson::Found(&serde_json::Value::Bool(b)) => {
                            Got::Bool(b)
                        }
                        GotJson::Null | GotJson::Found(serde_json::Value::Null) => Got::Null,
                        GotJson::Found(_) => return None,
                    })
                };
                let lhs = got(lhs.evaluate_json(root)?)?;
                let rhs = got(rhs.evaluate_json(root)?)?;
                match compare(*op, lhs, rhs)? {
                    Got::Bool(b) => GotJson::Bool(b),
                    Got::Nothing => GotJson::Nothing,
                    _ => return None,
                }
            }
        })
    }
}

/// [`look_up`] over JSON: the same answers, with `$states` walked member by member.
fn look_up_json<'b>(
    root: Option<JsonRoot<'b>>,
    keys: &[Key],
) -> Option<Option<&'b serde_json::Value>> {
    use serde_json::Value;
    let (mut value, keys) = match root {
        None => return Some(None),
        Some(JsonRoot::Value(value)) => (value, keys),
        Some(JsonRoot::States(members)) => match keys.split_first() {
            // `$states` itself is an object: left to the converted form.
            None => return None,
            Some((Key::Field(name), rest)) => {
                match members.iter().find(|(member, _)| member == name) {
                    Some((_, value)) => (*value, rest),
                    None => return Some(None),
                }
            }
            Some((Key::Index(_), _)) => return None,
        },
    };
    for key in keys {
        value = match (key, value) {
            (Key::Field(key), Value::Object(map)) => match map.get(key.as_str()) {
                Some(child) => child,
                None => return Some(None),
            },
            (Key::Field(_), Value::Array(_)) => return None,
            (Key::Index(index), Value::Array(items)) => {
                if items.iter().any(Value::is_array) {
                    return None;
                }
                match items.get(*index) {
                    Some(item) => item,
                    None => return Some(None),
                }
            }
            (Key::Index(_), _) => return None,
            (Key::Field(_), _) => return Some(None),
        };
    }
    match value {
        Value::Array(_) | Value::Object(_) => None,
        other => Some(Some(other)),
    }
}

/// [`text`] over JSON.
fn text_json(got: GotJson<'_>) -> Option<String> {
    match got {
        GotJson::Nothing => Some(String::new()),
        GotJson::Str(s) => Some(s),
        GotJson::Found(serde_json::Value::String(s)) => Some(s.clone()),
        _ => None,
    }
}
