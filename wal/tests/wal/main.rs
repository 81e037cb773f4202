//! statelog-wal's integration tests: one binary, one module per scenario file, so the suite
//! links once. Run one module with a filter, e.g. `cargo test -p statelog-wal --test wal crash::`.
//!
//! `tests/alloc.rs` stays a binary of its own: it installs a counting `#[global_allocator]`,
//! which is process-wide and would count (and be disturbed by) every other test's allocations.

// The model and helpers shared by several modules.
mod common;

// The scenarios, one module per former test binary.
mod compaction_twice;
mod crash;
mod damaged;
mod enospc;
mod gather;
mod model;
mod notify;
mod suite;
mod tail;
