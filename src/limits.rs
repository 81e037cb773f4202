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

/// The most events one `GetExecutionHistory` page returns (AWS: 1000).
pub const HISTORY_PAGE_EVENTS_MAX: usize = 1000;

/// The events a `GetExecutionHistory` page returns when the caller gives no size (AWS: 100).
pub const HISTORY_PAGE_EVENTS_DEFAULT: usize = 100;

/// The most executions one `ListExecutions` page returns (AWS: 1000).
pub const LIST_PAGE_EXECUTIONS_MAX: usize = 1000;

/// The executions a `ListExecutions` page returns when the caller gives no size (AWS: 100).
pub const LIST_PAGE_EXECUTIONS_DEFAULT: usize = 100;

/// The longest state machine or execution name, in characters (AWS: 80).
pub const RESOURCE_NAME_CHARS_MAX: usize = 80;

/// The longest the timer thread sleeps before looking at the clock again, in ms (it also wakes
/// whenever a timer is armed), so a clock that jumps is noticed.
pub const TIMER_POLL_MS_MAX: u64 = 200;

/// The most threads recovery decodes and folds open executions on.
pub const RECOVERY_THREADS_MAX: usize = 8;

/// Below this many armed timers the engine's timer heap is never compacted.
pub const TIMER_HEAP_COMPACT_LEN_MIN: usize = 4096;

/// Timers an open execution usually has armed (its own timeout and one wait); the heap drops
/// the timers of closed executions when it holds more than twice this many per open execution.
pub const TIMERS_PER_EXECUTION_TYPICAL: usize = 2;

const _: () = assert!(HISTORY_PAGE_EVENTS_DEFAULT <= HISTORY_PAGE_EVENTS_MAX);
const _: () = assert!(LIST_PAGE_EXECUTIONS_DEFAULT <= LIST_PAGE_EXECUTIONS_MAX);
/// The most iterations an inline Map state runs at once, whatever its `MaxConcurrency` (AWS: 40).
pub const MAP_INLINE_CONCURRENCY_MAX: u64 = 40;

/// How often the background compaction runs by default, in ms of the engine's clock: daily.
pub const COMPACTION_INTERVAL_MS_DEFAULT: u64 = 24 * 3600 * 1000;

/// The longest the compaction thread sleeps before looking at the clock again, in ms.
pub const COMPACTION_POLL_MS_MAX: u64 = 1000;

/// About how many bytes of segments one compaction step covers before it lets readers by LSN in
/// again (at least one segment). Each step pays one sync of its COMMIT and one directory sync.
pub const COMPACTION_CHUNK_SIZE_BYTES: u64 = 64 * 1024 * 1024;

/// The most index entries a compaction updates or removes per hold of the index lock (64: in
/// the redrive bench, appends slowed past twice the p99 while the index followed a compaction
/// were about half as many as with 256, compaction throughput unchanged).
pub const COMPACTION_INDEX_BATCH_COUNT: usize = 64;

/// The most index entries (positions in start order) a compaction reads per hold of the index
/// lock while choosing the expired executions.
pub const COMPACTION_INDEX_READ_BATCH_COUNT: usize = 256;
/// The longest task token, in characters (AWS: 1..=2,048).
pub const TASK_TOKEN_CHARS_MAX: usize = 2048;

/// The longest task list name (statelog's `TaskList` extension), in characters.
pub const TASK_LIST_NAME_CHARS_MAX: usize = 256;

/// The most tasks waiting in one task list for a worker; scheduling past it fails the task.
pub const TASK_LIST_PENDING_MAX: usize = 100_000;

/// The most workers long-polling one task list at once; one more is refused.
pub const TASK_LIST_POLLERS_MAX: usize = 1_000;

/// The longest a `get_activity_task` long poll waits (AWS: 60 s).
pub const ACTIVITY_POLL_MS_MAX: u64 = 60_000;

/// The longest activity name (AWS: 80 characters).
pub const ACTIVITY_NAME_CHARS_MAX: usize = 80;

/// The shortest status-poll interval of a `.sync` job integration, in ms (a smaller declared
/// interval is raised to it).
pub const JOB_POLL_INTERVAL_MS_MIN: u64 = 100;
/// The most writer threads one `statelog wal append-test` run starts.
pub const APPEND_TEST_THREADS_MAX: u32 = 1024;

/// The most records one `statelog wal append-test` run appends.
pub const APPEND_TEST_RECORDS_MAX: u64 = 1 << 32;

/// Tags one state machine or activity may carry (AWS: 50).
pub const TAGS_PER_RESOURCE_MAX: usize = 50;

/// Characters of a tag key (AWS: 1 to 128).
pub const TAG_KEY_CHARS_MAX: usize = 128;

/// Characters of a tag value (AWS: 0 to 256).
pub const TAG_VALUE_CHARS_MAX: usize = 256;

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
