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

/// The deepest JSON nesting a definition may have (objects and arrays); deeper text is rejected by
/// the JSON reader before any recursion can exhaust the stack (serde_json's own bound).
pub const DEFINITION_JSON_DEPTH_MAX: usize = 128;

/// The deepest nesting of Parallel branches and Map processors inside one another.
pub const DEFINITION_STATE_NESTING_MAX: usize = 24;

// Each nesting level costs at least four JSON levels (States, state, Branches, branch), so the
// state limit is reachable before the JSON one.
const _: () = assert!(DEFINITION_STATE_NESTING_MAX * 4 < DEFINITION_JSON_DEPTH_MAX);
