//! limits: every named maximum of the HTTP server, in one place. Exceeding one is a typed error
//! answered to the client, never a silent truncation or unbounded growth.
//!
//! These live beside the server (not in the engine's `src/limits.rs`) because only the server's
//! adapter reads them; the engine's own payload limits still apply behind it.

/// The largest request body accepted, in bytes (1 MiB). A `Content-Length` above it is refused
/// before any byte of the body is read; a chunked body is cut off as soon as it passes it.
pub const REQUEST_BODY_BYTES_MAX: usize = 1024 * 1024;

/// The most TCP connections served at once; the next connection waits in the kernel's accept
/// queue until one closes.
pub const CONNECTIONS_MAX: usize = 1024;

/// The most long polls (`GetActivityTask`) waiting at once; one more is refused with a typed
/// error instead of tying up another connection.
pub const LONG_POLLS_CONCURRENT_MAX: usize = 256;

/// The most long polls one account may have waiting at once: a quarter of the server's, so an
/// account that holds all of its own leaves the rest to others. One more is refused as AWS
/// refuses it (`ActivityWorkerLimitExceeded`; SWF: `LimitExceededFault`).
pub const LONG_POLLS_PER_ACCOUNT_MAX: usize = LONG_POLLS_CONCURRENT_MAX / 4;

/// How far a signed request's time may be from the server's clock, in milliseconds (AWS: 15
/// minutes, in both directions).
pub const SIGNATURE_CLOCK_SKEW_MS_MAX: u64 = 15 * 60 * 1000;

/// The most `SignedHeaders` one request may list (bounds the canonical request's size).
pub const SIGNED_HEADERS_COUNT_MAX: usize = 64;

/// The longest `Authorization` header accepted, in bytes.
pub const AUTHORIZATION_HEADER_BYTES_MAX: usize = 4096;

/// The largest credentials file read, in bytes.
pub const CREDENTIALS_FILE_BYTES_MAX: usize = 1024 * 1024;

/// The most `maxResults` a list or history call may ask for (AWS: 1000).
pub const PAGE_RESULTS_MAX: u32 = 1000;

/// The longest state machine or execution name, in characters (AWS: 80).
pub const NAME_CHARS_MAX: usize = 80;

/// The longest ARN accepted in a request, in bytes (AWS: 256, 2048 for some members).
pub const ARN_BYTES_MAX: usize = 2048;

/// The longest `error` of `StopExecution`, in characters (AWS: 256).
pub const STOP_ERROR_CHARS_MAX: usize = 256;

/// The longest `cause` of `StopExecution`, in characters (AWS: 32,768).
pub const STOP_CAUSE_CHARS_MAX: usize = 32_768;

/// The most diagnostics `ValidateStateMachineDefinition` returns when the caller gives no
/// `maxResults` (AWS's default is 100).
pub const VALIDATE_DIAGNOSTICS_DEFAULT: u32 = 100;

/// How long graceful shutdown waits for in-flight requests before it closes them, in ms.
pub const SHUTDOWN_GRACE_MS: u64 = 10_000;

const _: () = assert!(crate::limits::PAYLOAD_SIZE_BYTES_MAX < REQUEST_BODY_BYTES_MAX);
const _: () = assert!(crate::limits::DEFINITION_SIZE_BYTES_MAX <= REQUEST_BODY_BYTES_MAX);
const _: () = assert!(LONG_POLLS_CONCURRENT_MAX < CONNECTIONS_MAX);
const _: () = assert!(0 < LONG_POLLS_PER_ACCOUNT_MAX);
const _: () = assert!(LONG_POLLS_PER_ACCOUNT_MAX < LONG_POLLS_CONCURRENT_MAX);
const _: () = assert!(NAME_CHARS_MAX < ARN_BYTES_MAX);

/// The page size of `ListStateMachines` when the caller gives none (AWS: 100).
pub const LIST_PAGE_STATE_MACHINES_DEFAULT: u32 = 100;

/// The most accounts (one engine each) one server opens.
pub const ACCOUNTS_OPEN_MAX: usize = 1024;

const _: () = assert!(LIST_PAGE_STATE_MACHINES_DEFAULT <= PAGE_RESULTS_MAX);

/// The longest `taskToken` accepted, in characters (AWS: 2048).
pub const TASK_TOKEN_CHARS_MAX: usize = 2048;

/// The longest `clientToken` of `RedriveExecution`, in characters (AWS: 64).
pub const CLIENT_TOKEN_CHARS_MAX: usize = 64;

/// The longest SWF `domain`, in characters (SWF: 256).
pub const SWF_DOMAIN_CHARS_MAX: usize = 256;

/// The longest SWF `taskList.name`, in characters (SWF: 256; statelog's list names are bounded
/// by the engine's `TASK_LIST_NAME_CHARS_MAX`).
pub const SWF_TASK_LIST_NAME_CHARS_MAX: usize = 256;

/// The longest SWF `identity`, in characters (SWF: 256).
pub const SWF_IDENTITY_CHARS_MAX: usize = 256;

/// The longest SWF `result`, in characters (SWF: 32,768).
pub const SWF_RESULT_CHARS_MAX: usize = 32_768;

/// The longest SWF `reason`, in characters (SWF: 256).
pub const SWF_REASON_CHARS_MAX: usize = 256;

/// The longest SWF `details`, in characters (SWF: 32,768).
pub const SWF_DETAILS_CHARS_MAX: usize = 32_768;

const _: () = assert!(SWF_TASK_LIST_NAME_CHARS_MAX <= crate::limits::TASK_LIST_NAME_CHARS_MAX);

/// The most SigV4 signing keys the server keeps derived (one per access key, day, region and
/// service in use); past it the cache starts over.
pub const SIGNING_KEYS_CACHED_MAX: usize = 4096;
