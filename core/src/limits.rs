//! limits: every named maximum of the pure core (definitions, paths, payloads, histories), in
//! one place. Exceeding one is a typed error, never a silent truncation. Limits of the layers
//! above live in their own crate's `limits`; `statelog::limits` re-exports them all.

/// The largest input, output or task result, in UTF-8 bytes (AWS: 256 KiB).
pub const PAYLOAD_SIZE_BYTES_MAX: usize = 256 * 1024;

/// The largest definition, in bytes (AWS: 1 MiB).
pub const DEFINITION_SIZE_BYTES_MAX: usize = 1024 * 1024;

/// The longest state name, in characters.
pub const STATE_NAME_CHARS_MAX: usize = 80;

/// The default cap on events in one execution's history (AWS: 25,000).
pub const HISTORY_EVENTS_MAX: u32 = 25_000;

/// How long an execution may stay open: 1 year.
pub const EXECUTION_OPEN_MS_MAX: u64 = 365 * 24 * 3600 * 1000;

/// The deepest JSON nesting a definition may have (objects and arrays); deeper text is rejected by
/// the JSON reader before any recursion can exhaust the stack (serde_json's own bound).
pub const DEFINITION_JSON_DEPTH_MAX: usize = 128;

/// The deepest nesting of Parallel branches and Map processors inside one another.
pub const DEFINITION_STATE_NESTING_MAX: usize = 24;

// Each nesting level costs at least four JSON levels (States, state, Branches, branch), so the
// state limit is reachable before the JSON one.
const _: () = assert!(DEFINITION_STATE_NESTING_MAX * 4 < DEFINITION_JSON_DEPTH_MAX);

/// The longest JSONPath text accepted, in bytes.
pub const PATH_TEXT_BYTES_MAX: usize = 4096;

/// The most segments (`.a`, `[0]`, ...) in one JSONPath, and indexes in one `[0,1,...]` union.
pub const PATH_SEGMENTS_MAX: usize = 256;

/// The deepest nesting of filter expressions (`[?( ( ( ... ) ) )]`) in one JSONPath.
pub const PATH_FILTER_DEPTH_MAX: usize = 16;

/// The most node visits one JSONPath evaluation may make before it is abandoned (guards
/// `$..a..b..c` and filters against exponential work).
pub const PATH_EVAL_STEPS_MAX: usize = 1_000_000;

/// The most intrinsic calls nested in one field (`States.A(States.B(...))`; AWS: 10).
pub const INTRINSIC_NESTING_DEPTH_MAX: usize = 10;

/// The most arguments of one intrinsic call.
pub const INTRINSIC_ARGS_MAX: usize = 256;

/// The most elements `States.ArrayRange` may produce (AWS: 1000).
pub const INTRINSIC_ARRAY_RANGE_ITEMS_MAX: usize = 1000;

/// The longest string `States.Hash`, `States.Base64Encode` and `States.Base64Decode` accept, in
/// characters (AWS: 10,000).
pub const INTRINSIC_STRING_CHARS_MAX: usize = 10_000;

/// The deepest nesting of objects and arrays in a payload template.
pub const TEMPLATE_DEPTH_MAX: usize = 64;

const _: () = assert!(PATH_TEXT_BYTES_MAX <= DEFINITION_SIZE_BYTES_MAX);

const _: () = assert!(INTRINSIC_ARRAY_RANGE_ITEMS_MAX <= PATH_EVAL_STEPS_MAX);

/// The longest workflow variable name, in bytes (statelog's bound; AWS documents none).
pub const VARIABLE_NAME_BYTES_MAX: usize = 128;

/// The largest value of one workflow variable, as compact JSON in UTF-8 bytes (AWS: 256 KiB).
pub const VARIABLE_SIZE_BYTES_MAX: usize = 256 * 1024;

/// The largest total of the values one `Assign` sets, as compact JSON (AWS: 256 KiB).
pub const ASSIGN_SIZE_BYTES_MAX: usize = 256 * 1024;

/// The largest total of all variables an execution holds at once, as compact JSON
/// (AWS: 10 MiB).
pub const VARIABLES_TOTAL_BYTES_MAX: usize = 10 * 1024 * 1024;

const _: () = assert!(VARIABLE_SIZE_BYTES_MAX <= ASSIGN_SIZE_BYTES_MAX);
const _: () = assert!(ASSIGN_SIZE_BYTES_MAX <= VARIABLES_TOTAL_BYTES_MAX);

/// The most iterations an inline Map state runs at once, whatever its `MaxConcurrency` (AWS: 40).
pub const MAP_INLINE_CONCURRENCY_MAX: u64 = 40;

/// The longest task token, in characters (AWS: 1..=2,048).
pub const TASK_TOKEN_CHARS_MAX: usize = 2048;

/// The longest task list name (statelog's `TaskList` extension), in characters.
pub const TASK_LIST_NAME_CHARS_MAX: usize = 256;

/// The deepest nesting of objects and arrays a payload the interpreter produces may have (a
/// state's input, output, parameters or a task's result); a deeper one fails the execution
/// with `States.Runtime` before it is committed. Every recursive operation on a payload
/// (clone, compare, drop, serialize, paths, templates) stays within a 2 MiB thread stack at
/// this depth, even unoptimised; records are read back at any depth.
pub const PAYLOAD_JSON_DEPTH_MAX: usize = 512;

/// `serde_json`'s default recursion limit: its default reader refuses text nested this deep
/// (it reads 127 levels). Definitions and `States.StringToJson` are read with it; execution
/// inputs and task results were, before they were read up to [`PAYLOAD_JSON_DEPTH_MAX`].
pub const JSON_READER_DEPTH_DEFAULT: usize = 128;

// A template may wrap an input the reader accepted; the payload limit must leave it room.
const _: () = assert!(JSON_READER_DEPTH_DEFAULT + TEMPLATE_DEPTH_MAX <= PAYLOAD_JSON_DEPTH_MAX);

const _: () = assert!(DEFINITION_JSON_DEPTH_MAX <= PAYLOAD_JSON_DEPTH_MAX);

/// The longest Distributed Map `Label`, in characters (AWS).
pub const MAP_LABEL_CHARS_MAX: usize = 40;

/// The most child executions a Distributed Map runs at once (AWS: `MaxConcurrency` 0 means
/// "as many as the service allows", up to 10,000).
pub const MAP_RUN_CONCURRENCY_MAX: u64 = 10_000;
