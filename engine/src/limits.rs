//! limits: every named maximum of the engine (pages, names, timers, task lists, recovery,
//! compaction schedule), in one place. Exceeding one is a typed error, never a silent
//! truncation. A relation with a limit of a lower layer is checked here, in the higher crate.

/// How long a closed execution is kept by default: 90 days.
pub const RETENTION_MS_DEFAULT: u64 = 90 * 24 * 3600 * 1000;

/// How long after its close an execution may be redriven: 14 days.
pub const REDRIVE_WINDOW_MS: u64 = 14 * 24 * 3600 * 1000;

const _: () = assert!(REDRIVE_WINDOW_MS < RETENTION_MS_DEFAULT);

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

/// The most blocking starts (`Engine::start_execution`) in flight at once, and the most notified
/// batches waiting for the log's word, for which a blocking start has the log's own thread make
/// its commit when a commit is in flight already (`Commit::Notify`, the caller blocked until
/// told); past either a start commits in place, leading or joining a group commit as before.
/// Issue 16, 10-state Pass chains from 16 threads: 473-504k transitions/s with the log's thread
/// against 374-380k in place; from 256 threads 310-320k against 437-451k (256 callers woken one
/// by one by one thread, and its syncs never gather). 64 lies between the two. The notices'
/// bound keeps in place the starts of 256 Task executions whose handler answers wait on the
/// log's thread: 5,913-6,137 executions/s against 4,153-4,620 without it.
pub const NOTIFIED_BLOCKING_STARTS_MAX: usize = 64;

/// The most threads recovery decodes and folds open executions on.
pub const RECOVERY_THREADS_MAX: usize = 8;

/// Below this many armed timers the engine's timer heap is never compacted.
pub const TIMER_HEAP_COMPACT_LEN_MIN: usize = 4096;

/// Timers an open execution usually has armed (its own timeout and one wait); the heap drops
/// the timers of closed executions when it holds more than twice this many per open execution.
pub const TIMERS_PER_EXECUTION_TYPICAL: usize = 2;

const _: () = assert!(HISTORY_PAGE_EVENTS_DEFAULT <= HISTORY_PAGE_EVENTS_MAX);

const _: () = assert!(LIST_PAGE_EXECUTIONS_DEFAULT <= LIST_PAGE_EXECUTIONS_MAX);

/// How often the background compaction runs by default, in ms of the engine's clock: daily.
pub const COMPACTION_INTERVAL_MS_DEFAULT: u64 = 24 * 3600 * 1000;

/// The longest the compaction thread sleeps before looking at the clock again, in ms.
pub const COMPACTION_POLL_MS_MAX: u64 = 1000;

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

/// Tags one state machine or activity may carry (AWS: 50).
pub const TAGS_PER_RESOURCE_MAX: usize = 50;

/// Characters of a tag key (AWS: 1 to 128).
pub const TAG_KEY_CHARS_MAX: usize = 128;

/// Characters of a tag value (AWS: 0 to 256).
pub const TAG_VALUE_CHARS_MAX: usize = 256;

/// The most SWF domains one engine (one account) may have (SWF: 100 per account).
pub const SWF_DOMAINS_MAX: usize = 100;

/// The most workflow types, and the most activity types, one SWF domain may have (SWF: 10,000
/// of each per domain).
pub const SWF_TYPES_PER_DOMAIN_MAX: usize = 10_000;

/// How many times one SWF change that reaches other runs (a child's start or close, a signal
/// or cancel of another run, a child policy) is tried: a try that finds a run it needs locked
/// by another change lets go of everything and tries again with all of them locked in run id
/// order; one that read a run that moved before it held it tries again too.
pub const SWF_CHANGE_ATTEMPTS_MAX: usize = 16;

/// The default of `EngineOptions::swf_open_runs_per_domain_max`: the most SWF workflow runs open
/// at once in one domain (SWF: 100,000 open executions per domain, children included). Each
/// open run's folded state and events are held in memory, so this bounds that memory. A start
/// past it (StartWorkflowExecution, a child start) is refused with `LimitExceededFault`; a
/// continue-as-new closes one run as it opens the next, so it never adds one.
pub const SWF_OPEN_RUNS_PER_DOMAIN_MAX: usize = 100_000;

/// The default of `EngineOptions::swf_task_list_pending_max`: the most activity tasks waiting
/// (scheduled, not started) in one SWF task list. SWF documents no such quota (only 2,000
/// tasks scheduled per second per list, refused with ACTIVITY_CREATION_RATE_EXCEEDED); the
/// list is memory, so statelog bounds it and refuses a ScheduleActivityTask into a full list
/// with that same cause: the decider sees a `ScheduleActivityTaskFailed` event and may
/// schedule again later, nothing is lost. The check reads the list as the decision is made and
/// counts the batch's own earlier schedules into it, so one batch never overfills a list;
/// decisions of different runs at the same moment may each pass it, so a list holds at most
/// this many plus the activities of the other batches in flight at that moment. Decision tasks need
/// no such bound: a run has at most one scheduled, so a decision list holds at most the open
/// runs of its domain.
pub const SWF_TASK_LIST_PENDING_MAX: usize = 100_000;

/// The most polls waiting at once on one SWF task list (SWF: 1,000 per list); one more is
/// refused with `LimitExceededFault`. Over HTTP the server's long-poll bound per account is
/// lower, so it refuses first; an embedder calling the engine meets this one.
pub const SWF_TASK_LIST_POLLERS_MAX: usize = 1_000;

/// How long the HTTP Task waits for its endpoint's TCP connection, and again for the TLS
/// handshake, in ms; longer fails the task with `States.Http.Socket`.
pub const HTTP_TASK_CONNECT_TIMEOUT_MS: u64 = 10_000;

/// The longest one HTTP Task call may take, from the connection to the last byte of the answer
/// (an OAuth token request included), in ms (AWS: 60 s); longer fails with `States.Http.Socket`.
pub const HTTP_TASK_TIMEOUT_MS: u64 = 60_000;

const _: () = assert!(HTTP_TASK_CONNECT_TIMEOUT_MS <= HTTP_TASK_TIMEOUT_MS);

/// The largest response body the HTTP Task reads, in bytes: the task's result is a payload, held
/// to the 256 KiB payload limit. A larger body fails the task with `States.DataLimitExceeded`.
pub const HTTP_TASK_RESPONSE_BODY_SIZE_BYTES_MAX: usize = 256 * 1024;

const _: () = assert!(
    HTTP_TASK_RESPONSE_BODY_SIZE_BYTES_MAX <= statelog_core::limits::PAYLOAD_SIZE_BYTES_MAX
);

/// The most connections one connections file may define.
pub const HTTP_CONNECTIONS_MAX: usize = 10_000;

/// How long before its `expires_in` an OAuth access token is fetched again, in ms, so a token
/// does not expire between the check and the call.
pub const HTTP_OAUTH_TOKEN_EXPIRY_MARGIN_MS: u64 = 30_000;

/// The longest an Express execution stays open (AWS: 5 minutes); then it times out
/// (`States.Timeout`, status `TIMED_OUT`).
pub const EXPRESS_EXECUTION_MS_MAX: u64 = 5 * 60 * 1000;

/// The most Express executions one engine runs at once (each is held in memory until it ends);
/// a start past it is `ExecutionLimitExceeded`.
pub const EXPRESS_RUNNING_MAX: usize = 100_000;

/// AWS bills an Express execution's duration in steps of 100 ms
/// (`billedDurationInMilliseconds`).
pub const EXPRESS_BILLED_DURATION_MS_STEP: u64 = 100;

/// The memory AWS bills the smallest Express execution for, in MB (`billedMemoryUsedInMB`).
pub const EXPRESS_BILLED_MEMORY_MB: u64 = 64;

const _: () = assert!(EXPRESS_EXECUTION_MS_MAX <= statelog_core::limits::EXECUTION_OPEN_MS_MAX);

/// The most live versions one state machine may have (AWS: 1000 per state machine).
pub const VERSIONS_PER_MACHINE_MAX: usize = 1000;

/// The most entries of an alias's routing configuration (AWS: two versions).
pub const ALIAS_ROUTES_MAX: usize = 2;

/// What the weights of an alias's routing configuration sum to, in percent.
pub const ALIAS_WEIGHTS_SUM_PERCENT: u32 = 100;

/// The longest version or alias description, in characters (AWS: 256).
pub const DESCRIPTION_CHARS_MAX: usize = 256;

/// The most versions or aliases one `ListStateMachineVersions`/`ListStateMachineAliases` page
/// holds (AWS: 1000).
pub const LIST_PAGE_CATALOG_MAX: usize = 1000;

/// The page size of `ListStateMachineVersions`/`ListStateMachineAliases` without `maxResults`.
pub const LIST_PAGE_CATALOG_DEFAULT: usize = 100;

/// The most clock jumps one `testing::TestEngine::skip_ahead` makes before it gives up (a
/// workflow that waits in a loop forever would otherwise never return).
pub const TEST_SKIP_AHEAD_JUMPS_MAX: usize = 10_000;

/// The longest a `TestState` of a Task without a mock waits for its handler's answer, in ms
/// (AWS runs a test for up to five minutes, then answers `States.Timeout`).
pub const TEST_STATE_TASK_TIMEOUT_MS: u64 = 5 * 60 * 1000;

/// The most items a Distributed Map's run reads from its ItemReader at once (it asks for what
/// its free concurrency can start, at most this): the run's item memory is one such slice.
pub const MAP_RUN_READ_SLICE_ITEMS_MAX: usize = 1_000;

/// How many Map Runs the engine keeps in memory with their live counts before it drops the
/// ended ones (`map_runs::MapRunTable`): a dropped run is described from its parent's history
/// (status, times, item total), as one that ended before the engine opened.
pub const MAP_RUNS_KEPT_MAX: usize = 10_000;

/// The most EXPRESS children's ends one Map Run record holds (`MapRunRecord::ChildrenEnded`):
/// ends are grouped into one unsynced append per this many (fewer when the run's concurrency
/// is small, see `map_runs::EndsBuffer`), never one append per child.
pub const MAP_RUN_ENDS_PER_RECORD_MAX: usize = 256;

/// The most bytes of EXPRESS children's ends (inputs, outputs, errors) one Map Run record
/// gathers before it is appended; one end more may pass it.
pub const MAP_RUN_ENDS_RECORD_SIZE_BYTES_MAX: usize = 1024 * 1024;

/// The longest an EXPRESS child's end waits in memory for its Map Run record, in ms (the ends
/// of a slow run are appended at least this often).
pub const MAP_RUN_ENDS_FLUSH_INTERVAL_MS: u64 = 10;

// A record of ends, plus one end of at most an input and an output at the payload limit (and
// their error and cause), fits in one log record.
const _: () = assert!(
    MAP_RUN_ENDS_RECORD_SIZE_BYTES_MAX + 4 * statelog_core::limits::PAYLOAD_SIZE_BYTES_MAX
        <= statelog_wal::limits::RECORD_SIZE_BYTES_MAX
);
