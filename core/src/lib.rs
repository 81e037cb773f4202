//! statelog-core: the pure core of statelog. `asl` reads and validates a definition, `paths`
//! evaluates JSONPath, templates and intrinsics, `history` is the event model and its encoding,
//! `interpreter` decides the next events of an execution from its history and folds them back.
//!
//! Must not: do I/O, read a clock, start a thread or depend on the WAL, tokio, libc or
//! getrandom (Cargo checks it: none is a dependency of this crate). Times and entropy come in
//! as arguments; the store and the engine, above, do the rest.

pub mod asl;
pub mod history;
pub mod interpreter;
pub mod limits;
pub mod paths;
