//! Fuzz target F2 `segment_recover`: an arbitrary (damaged) segment directory image, laid out on
//! the simulated disk and opened. The oracle lives in `statelog_wal::fuzzing::segment_recover`
//! (shared with the corpus replay test): open returns the recovered prefix or a corruption
//! error, never panics, and recovering twice gives the same result.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    statelog_wal::fuzzing::segment_recover(data);
});
