//! Fuzz target F4 `jsonpath_eval`: (path string, JSON document) through the JSONPath parser,
//! the reference-path parser, a payload template and the evaluator. The oracle lives in
//! `statelog::paths::fuzzing::jsonpath_eval` (shared with the corpus replay test
//! `tests/statelog/paths_fuzz_corpus.rs`): no panic; a path re-parses to itself; an indefinite path yields
//! an array; a reference path's `set` then `get` returns the value set; evaluation is bounded by
//! `limits::PATH_EVAL_STEPS_MAX`. Input: the first line is the path, the rest the document.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    statelog::paths::fuzzing::jsonpath_eval(data);
});
