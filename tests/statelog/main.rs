//! The root crate's integration tests: one binary, one module per scenario file, so the whole
//! suite links once. Run one module with a filter, e.g.
//! `cargo test -p statelog --test statelog engine_crash::`.
//!
//! The tests run as threads of this one process, so none may change process-global state (the
//! environment, the current directory, signal handlers, a global allocator); a test that needs a
//! fresh process runs this binary again as a child (`kill_common::spawn_child`). Files and ports
//! are per test: temporary directories and port 0.

// Helpers shared by several modules.
mod conformance_common;
mod engine_common;
mod http_common;
mod kill_common;
mod serve_common;

// The scenarios, one module per former test binary.
mod asl_conformance;
mod asl_fuzz_replay;
mod asl_jsonata;
mod asl_test_state_cli;
mod asl_validate_cli;
mod cluster_cli;
mod engine_catalog;
mod engine_cli;
mod engine_close_waiters;
mod engine_conformance;
mod engine_crash;
mod engine_damaged;
mod engine_scenarios;
mod engine_start_async;
mod engine_test_state;
mod engine_versions;
mod fixture_logs;
mod format_versions;
mod http_task;
mod http_task_serve;
mod interpreter_conformance;
mod interpreter_jsonata;
mod interpreter_replay;
mod interpreter_scenarios;
mod interpreter_throughput;
mod interpreter_variables;
mod map_run_jsonata;
mod map_run_kill;
mod paths_conformance;
mod paths_fuzz_corpus;
mod redrive_crash;
mod redrive_kill;
mod redrive_property;
mod redrive_scenarios;
mod redrive_variables;
mod redrive_waiting;
mod retention_cli;
mod retention_compaction;
mod retention_crash;
mod retention_kill;
mod serve_auth;
mod serve_catalog;
mod serve_console;
mod serve_disk;
mod serve_engine;
mod serve_express;
mod serve_metrics;
mod serve_mocks;
mod serve_swf;
mod serve_swf_hang_up;
mod serve_swf_workflows;
mod serve_test_state;
mod serve_transport;
mod serve_versions;
mod serve_waiting;
mod swf_kill;
mod waiting_aborts;
mod waiting_activities;
mod waiting_builtin;
mod waiting_children_kill;
mod waiting_claim;
mod waiting_conformance;
mod waiting_crash;
mod waiting_handover;
mod waiting_jobs;
mod waiting_parked;
mod waiting_reopen;
mod waiting_tokens;
mod waiting_unsynced;
mod wal_cli;
mod wal_crash;
mod wal_fuzz_corpus;
