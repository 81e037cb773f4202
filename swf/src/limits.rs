//! limits: every named maximum of the SWF model, with SWF's values. Exceeding one is a typed
//! `ValidationException` (or the `…Failed` event SWF defines), never a silent truncation.

/// The longest domain, type, version, task list, activity, timer, workflow or signal name.
pub const NAME_CHARS_MAX: usize = 256;

/// The longest version of a workflow or activity type.
pub const VERSION_CHARS_MAX: usize = 64;

/// The longest `description` of a domain or type.
pub const DESCRIPTION_CHARS_MAX: usize = 1024;

/// The longest `input`, `result`, `details`, `control` or execution context (32 KiB).
pub const DATA_CHARS_MAX: usize = 32_768;

/// The longest `reason` of a failure or termination.
pub const REASON_CHARS_MAX: usize = 256;

/// The longest ARN (a Lambda role).
pub const ARN_CHARS_MAX: usize = 1600;

/// The longest run id.
pub const RUN_ID_CHARS_MAX: usize = 64;

/// The longest Lambda function name.
pub const FUNCTION_NAME_CHARS_MAX: usize = 64;

/// The longest `identity` of a decider or worker.
pub const IDENTITY_CHARS_MAX: usize = 256;

/// The longest task token.
pub const TASK_TOKEN_CHARS_MAX: usize = 1024;

/// The longest `nextPageToken`.
pub const PAGE_TOKEN_CHARS_MAX: usize = 2048;

/// The longest timeout string (`"NONE"` or decimal seconds).
pub const TIMEOUT_CHARS_MAX: usize = 8;

/// The longest `taskPriority` string.
pub const TASK_PRIORITY_CHARS_MAX: usize = 11;

/// The most tags of one workflow execution (`tagList`).
pub const EXECUTION_TAGS_MAX: usize = 5;

/// The longest tag of a workflow execution.
pub const EXECUTION_TAG_CHARS_MAX: usize = 256;

/// The most resource tags of one domain.
pub const RESOURCE_TAGS_MAX: usize = 50;

/// The longest resource tag key.
pub const RESOURCE_TAG_KEY_CHARS_MAX: usize = 128;

/// The longest resource tag value.
pub const RESOURCE_TAG_VALUE_CHARS_MAX: usize = 256;

/// The longest retention period string, in characters (`"90"`).
pub const RETENTION_DAYS_CHARS_MAX: usize = 8;

/// The longest retention of closed executions, in days.
pub const RETENTION_DAYS_MAX: u32 = 90;

/// The default and largest page of a list or a history (`maximumPageSize`).
pub const PAGE_SIZE_MAX: u32 = 1000;

/// The most decisions one RespondDecisionTaskCompleted may carry.
pub const DECISIONS_PER_TASK_MAX: usize = 1000;

/// The most activity tasks open at once in one run (SWF: 1000); one more fails with
/// OPEN_ACTIVITIES_LIMIT_EXCEEDED.
pub const OPEN_ACTIVITIES_MAX: usize = 1000;

/// The most timers open at once in one run (SWF: 1000); one more fails with
/// OPEN_TIMERS_LIMIT_EXCEEDED.
pub const OPEN_TIMERS_MAX: usize = 1000;

/// The most children open at once of one run (SWF: 1000); one more fails with
/// OPEN_CHILDREN_LIMIT_EXCEEDED.
pub const OPEN_CHILDREN_MAX: usize = 1000;

/// The most events one execution's history may hold (SWF: 25,000).
pub const HISTORY_EVENTS_MAX: u64 = 25_000;

/// The longest timeout any task or execution may have, in seconds (1 year).
pub const TIMEOUT_SECONDS_MAX: u64 = 365 * 24 * 3600;

const _: () = assert!(VERSION_CHARS_MAX <= NAME_CHARS_MAX);
const _: () = assert!(DECISIONS_PER_TASK_MAX as u64 <= HISTORY_EVENTS_MAX);
// "31536000" is eight digits: the longest timeout fits the longest timeout string.
const _: () = assert!(TIMEOUT_SECONDS_MAX < 100_000_000);
