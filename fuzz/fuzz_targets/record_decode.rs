//! Fuzz target F1 `record_decode`: raw bytes through the WAL's record decoder. The oracle lives
//! in `statelog_wal::fuzzing::record_decode` (shared with the corpus replay test): decoding never
//! panics, never yields a record whose checksum fails, and every decoded record re-encodes to
//! the exact bytes it came from.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    statelog_wal::fuzzing::record_decode(data);
});
