//! The input/output processing pipeline of a state as pure functions.
//!
//! CONTRACT (the interpreter calls these): `process_input`, `process_parameters`,
//! `process_result`, `process_output`, `check_payload_size`.
