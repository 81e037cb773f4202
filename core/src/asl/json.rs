//! json: reads definition text into a `serde_json::Value`, reporting duplicate object keys
//! (which `serde_json` would silently collapse to the last one).
//!
//! Invariants: nesting is bounded by `serde_json`'s recursion limit (128 levels), so no input can
//! overflow the stack; every duplicate key is reported with its JSON pointer. Must not: interpret
//! ASL (that is `parse`).

use std::cell::RefCell;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use super::diagnostic::{pointer_child, pointer_index};

/// The result of reading definition text.
pub(crate) struct Checked {
    /// The document (for a duplicated key, the last value wins, as in `serde_json`).
    pub value: Value,
    /// JSON pointers of every key that appeared twice in its object.
    pub duplicate_keys: Vec<String>,
}

/// Parses `text` as one JSON value, collecting duplicate keys.
pub(crate) fn parse_checked(text: &str) -> Result<Checked, serde_json::Error> {
    let duplicates = RefCell::new(Vec::new());
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = ValueSeed {
        at: &At::Root,
        duplicates: &duplicates,
    }
    .deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(Checked {
        value,
        duplicate_keys: duplicates.into_inner(),
    })
}

/// Where a value sits, as a chain of parents: the JSON pointer is only spelled out for a
/// duplicate key, so reading a definition allocates nothing per node for it.
enum At<'a> {
    Root,
    Key(&'a At<'a>, &'a str),
    Index(&'a At<'a>, usize),
}

impl At<'_> {
    fn pointer(&self) -> String {
        match self {
            At::Root => "/".to_string(),
            At::Key(parent, key) => pointer_child(&parent.pointer(), key),
            At::Index(parent, index) => pointer_index(&parent.pointer(), *index),
        }
    }
}

struct ValueSeed<'a> {
    at: &'a At<'a>,
    duplicates: &'a RefCell<Vec<String>>,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom(format!("number {v} is not finite")))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            let at = At::Index(self.at, items.len());
            let seed = ValueSeed {
                at: &at,
                duplicates: self.duplicates,
            };
            match seq.next_element_seed(seed)? {
                Some(item) => items.push(item),
                None => break,
            }
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let at = At::Key(self.at, &key);
            let value = map.next_value_seed(ValueSeed {
                at: &at,
                duplicates: self.duplicates,
            })?;
            if object.contains_key(&key) {
                self.duplicates.borrow_mut().push(at.pointer());
            }
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_duplicate_keys_with_their_pointer() {
        let checked =
            parse_checked(r#"{"a": 1, "b": {"c": [1, {"d": 1, "d": 2}]}, "a": 3}"#).expect("json");
        assert_eq!(
            checked.duplicate_keys,
            vec!["/b/c/1/d".to_string(), "/a".to_string()]
        );
        assert_eq!(checked.value["a"], 3);
        assert_eq!(checked.value["b"]["c"][1]["d"], 2);
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let text = "[".repeat(10_000) + &"]".repeat(10_000);
        assert!(parse_checked(&text).is_err());
    }

    #[test]
    fn trailing_garbage_and_huge_numbers_are_errors() {
        assert!(parse_checked("{} x").is_err());
        assert!(parse_checked("1e400").is_err());
        assert_eq!(
            parse_checked("-0").expect("json").value,
            serde_json::json!(-0.0)
        );
    }
}
