//! Fuzz target F3 `asl_parse_validate`: definition bytes -> parse + validate. The oracle lives in
//! `statelog::asl::fuzz::parse_validate_oracle` so `cargo test` replays the corpus with it.
//! Run: `cargo fuzz run -s none asl_parse_validate -- -dict=asl_parse_validate.dict -max_total_time=60`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    statelog::asl::fuzz::parse_validate_oracle(data);
});
