//! limits: every named maximum of the engine crate, in one place. Exceeding one is a typed
//! error, never a silent truncation.

/// The largest input, output or task result, in UTF-8 bytes (AWS: 256 KiB).
pub const PAYLOAD_SIZE_BYTES_MAX: usize = 256 * 1024;

/// The largest definition, in bytes (AWS: 1 MiB).
pub const DEFINITION_SIZE_BYTES_MAX: usize = 1024 * 1024;

/// The longest state name, in characters.
pub const STATE_NAME_CHARS_MAX: usize = 80;

/// The default cap on events in one execution's history (AWS: 25,000).
pub const HISTORY_EVENTS_MAX: u32 = 25_000;

/// How long a closed execution is kept by default: 90 days.
pub const RETENTION_MS_DEFAULT: u64 = 90 * 24 * 3600 * 1000;

/// How long after its close an execution may be redriven: 14 days.
pub const REDRIVE_WINDOW_MS: u64 = 14 * 24 * 3600 * 1000;

/// How long an execution may stay open: 1 year.
pub const EXECUTION_OPEN_MS_MAX: u64 = 365 * 24 * 3600 * 1000;

const _: () = assert!(REDRIVE_WINDOW_MS < RETENTION_MS_DEFAULT);

/// The most writer threads one `statelog wal append-test` run starts.
pub const APPEND_TEST_THREADS_MAX: u32 = 1024;

/// The most records one `statelog wal append-test` run appends.
pub const APPEND_TEST_RECORDS_MAX: u64 = 1 << 32;
