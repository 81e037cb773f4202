//! depth: how deeply a JSON payload nests, and reading stored payload text at any depth.
//!
//! A payload nests as deep as its chain of objects and arrays: a scalar is 0, `[]` is 1,
//! `{"a":[1]}` is 2. What callers send is read up to
//! [`PAYLOAD_JSON_DEPTH_MAX`](crate::limits::PAYLOAD_JSON_DEPTH_MAX) ([`parse_payload`]), and
//! the interpreter keeps what it produces within it, so every operation on a payload fits a
//! thread's stack. Records are read back at any depth ([`parse_stored`]): older builds
//! committed payloads deeper than `serde_json`'s recursion limit (128), and a committed record
//! must always read.
//!
//! Invariants: nothing here recurses on the call stack over a value's depth (the reader grows
//! its stack on the heap as it descends). Must not: do I/O.

use serde::Deserialize;
use serde_json::Value;

/// Stack kept free before the reader descends one more level, in bytes (`serde_stacker`'s
/// red zone): more than one level of the reader ever takes, unoptimised.
const READER_RED_ZONE_BYTES: usize = 128 * 1024;

/// Stack allocated each time the reader runs out, in bytes.
const READER_STACK_GROWTH_BYTES: usize = 2 * 1024 * 1024;

const _: () = assert!(READER_RED_ZONE_BYTES < READER_STACK_GROWTH_BYTES);

/// The nesting depth of `value`, counting at most up to `limit + 1` (the walk stops there, so
/// checking a huge payload against a limit costs no more than the limit's worth of levels per
/// branch). Iterative: it never recurses. Only containers are queued, so a payload of scalars
/// (or one level of containers) is walked without allocating.
pub fn depth_up_to(value: &Value, limit: usize) -> usize {
    fn is_container(value: &&Value) -> bool {
        matches!(value, Value::Array(_) | Value::Object(_))
    }
    let mut deepest = 0;
    let mut pending: Vec<(&Value, usize)> = Vec::new();
    let mut next = Some((value, 0usize));
    while let Some((value, depth)) = next.take().or_else(|| pending.pop()) {
        let depth = depth + 1;
        match value {
            Value::Array(items) => {
                pending.extend(
                    items
                        .iter()
                        .filter(is_container)
                        .map(|child| (child, depth)),
                );
            }
            Value::Object(map) => {
                pending.extend(
                    map.values()
                        .filter(is_container)
                        .map(|child| (child, depth)),
                );
            }
            _ => continue,
        }
        deepest = deepest.max(depth);
        if deepest > limit {
            return deepest;
        }
    }
    deepest
}

/// True when `value` nests deeper than `limit`.
pub fn exceeds(value: &Value, limit: usize) -> bool {
    depth_up_to(value, limit) > limit
}

/// The nesting depth of JSON `text` (its deepest chain of `[` and `{` outside strings), found
/// by one pass over the bytes without parsing, so a reader can refuse text too deep before it
/// builds anything. Text that is not JSON gets some depth; the reader then refuses it.
pub fn text_depth(text: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for byte in text.bytes() {
        if in_string {
            match (escaped, byte) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// Why [`parse_payload`] refused a text.
#[derive(Debug, thiserror::Error)]
pub enum PayloadTextError {
    /// The text nests deeper than [`PAYLOAD_JSON_DEPTH_MAX`](crate::limits::PAYLOAD_JSON_DEPTH_MAX).
    #[error("nests {depth} levels of objects and arrays deep; the limit is {depth_max}")]
    TooDeep {
        /// How deep it nests.
        depth: usize,
        /// The limit.
        depth_max: usize,
    },
    /// The text is not one JSON value.
    #[error("is not valid JSON: {0}")]
    Invalid(#[from] serde_json::Error),
}

/// Reads a payload a caller sends (an execution input, a task result) up to
/// [`PAYLOAD_JSON_DEPTH_MAX`](crate::limits::PAYLOAD_JSON_DEPTH_MAX) levels deep: deeper text
/// is refused before it is parsed.
pub fn parse_payload(text: &str) -> Result<Value, PayloadTextError> {
    let depth_max = crate::limits::PAYLOAD_JSON_DEPTH_MAX;
    let depth = text_depth(text);
    if depth > depth_max {
        return Err(PayloadTextError::TooDeep { depth, depth_max });
    }
    Ok(parse_stored(text)?)
}

/// Reads stored payload text at any depth, growing the stack as the reader descends.
pub fn parse_stored(text: &str) -> Result<Value, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    deserializer.disable_recursion_limit();
    let value = {
        let deserializer = serde_stacker::Deserializer {
            de: &mut deserializer,
            red_zone: READER_RED_ZONE_BYTES,
            stack_size: READER_STACK_GROWTH_BYTES,
        };
        Value::deserialize(deserializer)?
    };
    deserializer.end()?;
    Ok(value)
}

/// Drops `value` without recursing over its depth: its containers are emptied one at a time
/// from the top, so a value deeper than the stack allows (an old record's) is freed safely.
pub fn dismantle(value: Value) {
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Value::Array(items) => pending.extend(items),
            Value::Object(map) => pending.extend(map.into_iter().map(|(_, child)| child)),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn depth_counts_objects_and_arrays_and_stops_past_the_limit() {
        assert_eq!(depth_up_to(&json!(1), 10), 0);
        assert_eq!(depth_up_to(&json!([]), 10), 1);
        assert_eq!(depth_up_to(&json!({"a": [1, {"b": {}}], "c": 2}), 10), 4);
        assert_eq!(
            depth_up_to(&json!([[[[[1]]]]]), 2),
            3,
            "stops one level past"
        );
        assert!(exceeds(&json!([[1]]), 1));
        assert!(!exceeds(&json!([[1]]), 2));
    }

    #[test]
    fn text_depth_skips_strings_and_caller_payloads_stop_at_the_limit() {
        assert_eq!(text_depth("1"), 0);
        assert_eq!(text_depth(r#"{"a": [1, {"b": "[[[{"}], "c": "\\\"{"}"#), 3);
        let max = crate::limits::PAYLOAD_JSON_DEPTH_MAX;
        let at_limit = format!("{}{}", "[".repeat(max), "]".repeat(max));
        let value = parse_payload(&at_limit).expect("reads at the limit");
        assert_eq!(depth_up_to(&value, usize::MAX), max);
        let deeper = format!("[{at_limit}]");
        assert!(matches!(
            parse_payload(&deeper),
            Err(PayloadTextError::TooDeep { depth, .. }) if depth == max + 1
        ));
        assert!(matches!(
            parse_payload("[1,"),
            Err(PayloadTextError::Invalid(_))
        ));
    }

    #[test]
    fn stored_text_reads_past_the_default_recursion_limit() {
        let depth = 10_000;
        let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        assert!(
            serde_json::from_str::<Value>(&text).is_err(),
            "the default reader refuses"
        );
        let value = parse_stored(&text).expect("reads");
        assert_eq!(depth_up_to(&value, usize::MAX), depth);
        // Drop it without recursing as deep: take it apart from the top.
        dismantle(value);
        assert!(parse_stored("[1] x").is_err(), "trailing text is refused");
    }

    /// `depth` levels of objects (`{"k": ...}`) or arrays around a number, built without
    /// recursion.
    fn nested(depth: usize, objects: bool) -> Value {
        let mut value = json!(1);
        for _ in 0..depth {
            value = if objects {
                json!({ "k": value })
            } else {
                Value::Array(vec![value])
            };
        }
        value
    }

    /// Runs `work` on a thread with a 2 MiB stack (a tokio worker's), failing the test if it
    /// does not finish (a stack overflow aborts the whole test binary instead).
    fn on_small_stack(work: impl FnOnce() + Send + 'static) {
        std::thread::Builder::new()
            .stack_size(2 * 1024 * 1024)
            .spawn(work)
            .expect("spawns")
            .join()
            .expect("finishes");
    }

    #[test]
    fn every_operation_on_the_deepest_payload_fits_a_2_mib_stack() {
        use crate::history::{
            aws_json, encoding, EventDetails, EventId, HistoryEvent, StateExited,
        };
        use crate::limits::PAYLOAD_JSON_DEPTH_MAX;
        use crate::paths::{Path, Template};
        on_small_stack(|| {
            for objects in [true, false] {
                let value = nested(PAYLOAD_JSON_DEPTH_MAX, objects);
                assert_eq!(depth_up_to(&value, usize::MAX), PAYLOAD_JSON_DEPTH_MAX);
                let copy = value.clone();
                assert!(copy == value);
                let text = serde_json::to_string(&value).expect("serializes");
                assert_eq!(text.len(), crate::paths::pipeline::json_size_bytes(&value));
                assert_eq!(parse_stored(&text).expect("reads"), value);
                let template = Template::compile(&json!({"a": {"b.$": "$"}})).expect("compiles");
                let wrapped = template
                    .evaluate(&value, &Value::Null, &mut statelog_rng::Rng::new(4))
                    .expect("evaluates");
                assert!(exceeds(&wrapped, PAYLOAD_JSON_DEPTH_MAX));
                let selected = Path::parse("$..k")
                    .expect("parses")
                    .select(&value, &Value::Null);
                assert!(selected.is_some());
                let event = HistoryEvent {
                    id: EventId(1),
                    previous_event_id: 0,
                    timestamp_ms: 0,
                    details: EventDetails::PassStateExited(StateExited {
                        name: "S".into(),
                        output: copy.into(),
                        output_truncated: false,
                        assigned: None,
                    }),
                    scope: Vec::new(),
                    timer: None,
                };
                let batch = encoding::EventBatch {
                    execution_arn: "exec".into(),
                    events: vec![event],
                };
                let bytes = encoding::encode(&batch).expect("encodes");
                let back = encoding::decode(&bytes).expect("decodes");
                assert!(back == batch);
                let rendered = aws_json::render_history(&back.events, true);
                assert!(rendered.to_string().len() > text.len());
                drop((value, wrapped, selected, batch, back, rendered));
            }
        });
    }

    #[test]
    fn a_record_deeper_than_any_limit_reads_on_a_2_mib_stack() {
        // What an older build could commit: nesting only the 256 KiB payload cap bounds.
        on_small_stack(|| {
            let depth = crate::limits::PAYLOAD_SIZE_BYTES_MAX / 2;
            let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            let value = parse_stored(&text).expect("reads");
            assert!(exceeds(&value, crate::limits::PAYLOAD_JSON_DEPTH_MAX));
            assert_eq!(depth_up_to(&value, usize::MAX), depth);
            dismantle(value);
        });
    }
}
