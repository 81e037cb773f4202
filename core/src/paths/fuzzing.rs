//! fuzzing: the entry functions of the `jsonpath_eval` and `intrinsic_parse` fuzz targets, kept
//! in the library so a plain `cargo test` replays their corpora on stable.
//!
//! Each function takes arbitrary bytes, drives the parsers and evaluators, and asserts the
//! properties that must hold for every input (a panic is the finding). Work per input is bounded
//! by the limits in [`crate::limits`].
//!
//! Must not: read files, draw unseeded randomness or depend on global state (entropy is a
//! seeded `statelog_rng::Rng`, so a corpus input replays the same way every time).

use serde_json::{json, Value};
use statelog_rng::Rng;

use super::intrinsic::Call;
use super::{Path, ReferencePath, Template, Variables};

fn sample_document() -> Value {
    json!({
        "a": [1, 2.5, "x", null, true, {"b": [{"c": 1}, {"c": 2}]}],
        "o": {"k": "v", "n": -3, "nested": {"deep": [[1], [2, [3]]]}},
        "s": "1,2,3",
        "e": ""
    })
}

/// Splits fuzz bytes into (first line, rest) as text.
fn split(data: &[u8]) -> (String, &[u8]) {
    let cut = data.iter().position(|b| *b == b'\n').unwrap_or(data.len());
    let head = String::from_utf8_lossy(&data[..cut]).into_owned();
    let rest = data.get(cut + 1..).unwrap_or(&[]);
    (head, rest)
}

/// Fuzz entry `jsonpath_eval`: the first line is a path, the rest a JSON document (a fixed
/// sample when it is not JSON). Parses it as a full path, a reference path and a template
/// value, and evaluates what parses.
pub fn jsonpath_eval(data: &[u8]) {
    let (text, rest) = split(data);
    let document: Value = serde_json::from_slice(rest).unwrap_or_else(|_| sample_document());
    let context = json!({"Execution": {"Input": document.clone(), "Name": "n"}});

    if let Ok(path) = Path::parse(&text) {
        assert_eq!(path.as_str(), text, "a path keeps its text");
        let reparsed = Path::parse(path.as_str()).expect("a path's own text parses again");
        assert_eq!(reparsed, path, "parsing is deterministic");
        // Every variable the path reads is assigned (to the document), so filters naming
        // variables are evaluated too.
        let mut variables = Variables::new();
        for name in path.variables() {
            variables.insert(name.clone(), document.clone());
        }
        for found in [
            path.try_select(&document, &context),
            path.try_select_in(&document, &context, &variables),
        ] {
            if let Ok(Some(found)) = found {
                if !path.is_definite() {
                    assert!(found.is_array(), "an indefinite path yields an array");
                }
            }
        }
    }
    if let Ok(reference) = ReferencePath::parse(&text) {
        let full = Path::parse(&text).expect("a reference path is a path");
        assert!(full.is_definite(), "a reference path names one location");
        let marker = json!({"marker": [1, 2, 3]});
        if let Ok(updated) = reference.set(document.clone(), marker.clone()) {
            assert_eq!(
                reference.get(&updated),
                Some(&marker),
                "set then get returns the value"
            );
        }
    }
    let template = json!({"v.$": text, "fixed": [1, {"w.$": "$"}]});
    if let Ok(compiled) = Template::compile(&template) {
        let _ = compiled.evaluate(&document, &context, &mut Rng::new(1));
    }
}

/// Fuzz entry `intrinsic_parse`: the bytes (as text) are an intrinsic call; when it parses it is
/// evaluated against a sample input, and the same text goes through a template.
pub fn intrinsic_parse(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let document = sample_document();
    let context = json!({"Execution": {"Input": document.clone(), "Name": "a-b-c"}});
    if let Ok(call) = Call::parse(&text) {
        assert_eq!(
            Call::parse(&text).as_ref(),
            Ok(&call),
            "parsing is deterministic"
        );
        let first = call.evaluate(&document, &context, &mut Rng::new(7), "v.$");
        let second = call.evaluate(&document, &context, &mut Rng::new(7), "v.$");
        assert_eq!(
            first, second,
            "evaluation is deterministic given the entropy"
        );
    }
    let template = json!({"v.$": text.as_ref()});
    if let Ok(compiled) = Template::compile(&template) {
        let _ = compiled.evaluate(&document, &context, &mut Rng::new(3));
    }
}
