//! Fuzz target `intrinsic_parse`: bytes as an intrinsic function call (`States.Format(...)`
//! and the other 17). The oracle lives in `statelog::paths::fuzzing::intrinsic_parse` (shared
//! with the corpus replay test `tests/statelog/paths_fuzz_corpus.rs`): no panic; parsing is deterministic;
//! evaluation is deterministic given the entropy and bounded (nesting, argument count and
//! ArrayRange size are limited in `limits.rs`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    statelog::paths::fuzzing::intrinsic_parse(data);
});
