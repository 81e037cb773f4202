//! limits: every named maximum, re-exported from the crate of the layer that owns it (the
//! core, the store, the engine), and those of the command line. Exceeding one is a typed error,
//! never a silent truncation. The server's own limits are in `server::limits`.

pub use statelog_core::limits::*;
pub use statelog_engine::limits::*;
pub use statelog_store::limits::*;

/// The most writer threads one `statelog wal append-test` run starts.
pub const APPEND_TEST_THREADS_MAX: u32 = 1024;

/// The most records one `statelog wal append-test` run appends.
pub const APPEND_TEST_RECORDS_MAX: u64 = 1 << 32;
