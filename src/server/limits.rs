//! limits: every named maximum of the HTTP server, in one place. Exceeding one is a typed error
//! answered to the client, never a silent truncation or unbounded growth.
//!
//! These live beside the server (not in `engine/src/limits.rs`) because only the server's adapter
//! reads them; the engine's own payload limits still apply behind it.

use crate::limits::{
    DEFINITION_SIZE_BYTES_MAX, PAYLOAD_SIZE_BYTES_MAX, TAGS_PER_RESOURCE_MAX, TAG_KEY_CHARS_MAX,
    TAG_VALUE_CHARS_MAX,
};

/// The most bytes JSON escaping writes for one byte of a string member: `\u0000` is 6 bytes
/// for 1. A client may escape any character this way, even `a` as `\u0061`.
pub const JSON_ESCAPE_BYTES_PER_BYTE_MAX: usize = 6;

/// The most UTF-8 bytes of one character, for members limited in characters.
pub const UTF8_CHAR_BYTES_MAX: usize = 4;

/// The bytes a request may spend outside its string members' contents: member names, quotes,
/// punctuation, whitespace, numbers, booleans and the small configuration objects.
pub const REQUEST_ENVELOPE_BYTES_MAX: usize = 64 * 1024;

/// The longest `versionDescription` and `traceHeader`, in characters (AWS: 256).
pub const SHORT_TEXT_CHARS_MAX: usize = 256;

/// The unescaped bytes of every string member of a definition-carrying request (Create- and
/// UpdateStateMachine, ValidateStateMachineDefinition) at their own limits: the definition,
/// name, role and machine ARNs, version description and every tag.
pub const DEFINITION_REQUEST_MEMBERS_BYTES_MAX: usize = DEFINITION_SIZE_BYTES_MAX
    + NAME_CHARS_MAX * UTF8_CHAR_BYTES_MAX
    + 2 * ARN_BYTES_MAX
    + SHORT_TEXT_CHARS_MAX * UTF8_CHAR_BYTES_MAX
    + TAGS_PER_RESOURCE_MAX * (TAG_KEY_CHARS_MAX + TAG_VALUE_CHARS_MAX) * UTF8_CHAR_BYTES_MAX;

/// The unescaped bytes of every string member of a payload-carrying request (StartExecution,
/// SendTaskSuccess) at their own limits: the payload, name or task token, ARN, trace header.
pub const PAYLOAD_REQUEST_MEMBERS_BYTES_MAX: usize = PAYLOAD_SIZE_BYTES_MAX
    + TASK_TOKEN_CHARS_MAX * UTF8_CHAR_BYTES_MAX
    + ARN_BYTES_MAX
    + SHORT_TEXT_CHARS_MAX * UTF8_CHAR_BYTES_MAX;

/// The largest request body accepted, in bytes (6,850,432, about 6.5 MiB). It is derived from
/// the member limits: every request whose members are within their own limits fits even when
/// each byte is escaped as `\u00XX`. A member over its own limit is refused by that limit's check, with its
/// own AWS error (a definition over 1 MiB is `InvalidDefinition`). A `Content-Length` above
/// this is refused before any byte of the body is read; a chunked body is cut off as soon as
/// it passes it.
pub const REQUEST_BODY_BYTES_MAX: usize = JSON_ESCAPE_BYTES_PER_BYTE_MAX
    * DEFINITION_REQUEST_MEMBERS_BYTES_MAX
    + REQUEST_ENVELOPE_BYTES_MAX;

// Every request kind with its members at their limits fits: definitions (by construction),
// payloads, and SWF results with details.
const _: () =
    assert!(DEFINITION_SIZE_BYTES_MAX * JSON_ESCAPE_BYTES_PER_BYTE_MAX < REQUEST_BODY_BYTES_MAX);
const _: () = assert!(
    JSON_ESCAPE_BYTES_PER_BYTE_MAX * PAYLOAD_REQUEST_MEMBERS_BYTES_MAX + REQUEST_ENVELOPE_BYTES_MAX
        <= REQUEST_BODY_BYTES_MAX
);
const _: () = assert!(
    JSON_ESCAPE_BYTES_PER_BYTE_MAX
        * (SWF_RESULT_CHARS_MAX + SWF_DETAILS_CHARS_MAX + TASK_TOKEN_CHARS_MAX)
        * UTF8_CHAR_BYTES_MAX
        + REQUEST_ENVELOPE_BYTES_MAX
        <= REQUEST_BODY_BYTES_MAX
);

// Bodies are buffered whole before the signature is checked: keep one under 8 MiB, so that
// `CONNECTIONS_MAX` of them stay within 8 GiB.
const _: () = assert!(REQUEST_BODY_BYTES_MAX <= 8 * 1024 * 1024);

/// The most TCP connections served at once. When they are all taken, a new connection evicts
/// the connection that has waited longest without a request in progress; when every
/// connection is inside a request, the new one waits in the kernel's accept queue.
pub const CONNECTIONS_MAX: usize = 1024;

/// The most connections one peer address keeps open at once. A peer at its cap that opens
/// another evicts its own oldest connection without a request in progress, or is refused
/// (closed at once) when all of them are inside requests. Every client behind one NAT or proxy
/// shares this cap.
pub const CONNECTIONS_PER_PEER_MAX: usize = 512;

/// How long a connection may wait for the first byte of a request, in ms: after it opens and
/// after each answer (keep-alive). Then it is closed.
pub const KEEP_ALIVE_IDLE_TIMEOUT_MS: u64 = 5_000;

/// How long a request head (request line and headers) may take from its first byte, in ms.
pub const HEADER_READ_TIMEOUT_MS: u64 = 10_000;

/// How long a request body may take from the end of the head to its last byte, in ms. Past it
/// the request is answered `RequestTimeoutException` (408) and the connection closes.
pub const REQUEST_BODY_TIMEOUT_MS: u64 = 30_000;

/// The most connections the metrics listener (`--metrics-listen`) serves at once.
pub const METRICS_CONNECTIONS_MAX: usize = 16;

/// The metrics listener's address with `--credentials` when the operator names none
/// (9464: the Prometheus exporter port of OpenTelemetry).
pub const METRICS_LISTEN_DEFAULT: &str = "127.0.0.1:9464";

// A peer can hold every long poll and still make other calls; one peer never holds more than
// half of the server's connections, so other peers always find slots.
const _: () = assert!(LONG_POLLS_CONCURRENT_MAX < CONNECTIONS_PER_PEER_MAX);
// One account's polls cover AWS's advice of 100 open polls per activity.
const _: () = assert!(LONG_POLLS_PER_ACCOUNT_MAX >= 100);
const _: () = assert!(CONNECTIONS_PER_PEER_MAX <= CONNECTIONS_MAX / 2);
// An idle connection is closed before a slow head could be; both before a slow body.
const _: () = assert!(KEEP_ALIVE_IDLE_TIMEOUT_MS < HEADER_READ_TIMEOUT_MS);
const _: () = assert!(HEADER_READ_TIMEOUT_MS < REQUEST_BODY_TIMEOUT_MS);
const _: () = assert!(METRICS_CONNECTIONS_MAX < CONNECTIONS_MAX);

/// The most long polls (`GetActivityTask`) waiting at once; one more is refused with a typed
/// error instead of tying up another connection.
pub const LONG_POLLS_CONCURRENT_MAX: usize = 448;

/// The most long polls one account may have waiting at once, below the server's so that an
/// account that holds all of its own leaves the rest (64) to others. AWS advises at least 100
/// open polls per activity ARN in production (the developer guide's "Avoid latency when
/// polling for activity tasks"), and a poll that is waiting when a task is scheduled claims it
/// in the commit that schedules it, so a pool larger than the tasks in flight saves a commit
/// per task. One more is refused as AWS refuses it (`ActivityWorkerLimitExceeded`; SWF:
/// `LimitExceededFault`).
pub const LONG_POLLS_PER_ACCOUNT_MAX: usize = 384;

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

/// The longest `nextToken` of `ListStateMachineVersions` and `ListStateMachineAliases`, in
/// characters (AWS: 1024).
pub const NEXT_TOKEN_CHARS_MAX: usize = 1024;

/// The longest `error` of `StopExecution`, in characters (AWS: 256).
pub const STOP_ERROR_CHARS_MAX: usize = 256;

/// The longest `cause` of `StopExecution`, in characters (AWS: 32,768).
pub const STOP_CAUSE_CHARS_MAX: usize = 32_768;

/// The most diagnostics `ValidateStateMachineDefinition` returns when the caller gives no
/// `maxResults` (AWS's default is 100).
pub const VALIDATE_DIAGNOSTICS_DEFAULT: u32 = 100;

/// How long graceful shutdown waits for in-flight requests before it closes them, in ms.
pub const SHUTDOWN_GRACE_MS: u64 = 10_000;

/// How long `statelog serve`, once its requests and engines are closed, waits for threads still
/// on the blocking pool (abandoned SWF long polls) before it exits, in ms.
pub const RUNTIME_SHUTDOWN_MS: u64 = 1_000;

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

/// How many nodes a forwarded call tries (issue 19): a node that answers `NotOwner` makes the
/// sender re-resolve the owner from the leases and send again, at most this many sends in all.
pub const FORWARD_ATTEMPTS_MAX: u32 = 3;

/// How long the sender waits before re-sending a call a node refused as `NotOwner` (a lease
/// that moved is seen by the sender within a KV round trip).
pub const FORWARD_RETRY_WAIT_MS: u64 = 100;

/// How long a forwarded call that is not a long poll may take at its owner: a commit waits
/// out a JetStream leader election (4.0-5.5 s measured in issue 19) with room; one that takes
/// longer is answered `ServiceUnavailable` (it may have taken effect: AWS clients retry, and
/// every retried call is idempotent or answers as a duplicate would).
pub const FORWARD_CALL_TIMEOUT_MS: u64 = 15_000;

/// How long a cluster partition's log waits for an acknowledgement before it stops (and its
/// owner opens it again). About a JetStream leader election (4.0-5.5 s measured in issue 19):
/// a publish sent to a stream whose leader died is never answered, so this bound is how long
/// the partition stays unserved before its reopening starts, and its opening succeeds as soon
/// as the new leader answers. Well under the log's own 30 s default, which held calls (and
/// their threads) through a NATS server's death for half a minute.
pub const CLUSTER_LOG_ACK_TIMEOUT_MS: u64 = 5_000;

/// How long a cluster partition's log waits for the answer to any other call (a step of its
/// opening, a read, a purge): a step asked while its stream elects a leader fails at this
/// bound and the opening is tried again (`HOST_REOPEN_CHECK_MS` later), so a reopening ends
/// within a few seconds of the election rather than one ack timeout after it. A read that
/// times out is answered `ServiceUnavailable`.
pub const CLUSTER_LOG_REQUEST_TIMEOUT_MS: u64 = 2_000;

/// How often a cluster node looks for partitions whose log stopped or did not open, to open
/// them again (`PartitionHost::reopen_stopped`): also the wait between two tries of one.
pub const HOST_REOPEN_CHECK_MS: u64 = 1_000;

/// How long one round of a cluster-wide long poll's peeks waits before the poll asks the
/// owners again (a partition taken over meanwhile is then peeked at its new owner).
pub const CLUSTER_PEEK_ROUND_MS: u64 = 5_000;

/// How long one forwarded call may take at its owner: the longest long poll (60 s) and room.
pub const FORWARD_TIMEOUT_MS: u64 = 65_000;

/// The largest forwarded call or answer, in bytes: the largest request body with its caller
/// and envelope. NATS servers refuse messages over their `max_payload` (1 MiB by default), so
/// a cluster that forwards bodies this large sets `max_payload` to at least this; a call over
/// the connected server's `max_payload` is refused before it is sent, naming both sizes.
pub const FORWARD_MESSAGE_BYTES_MAX: usize = REQUEST_BODY_BYTES_MAX + 64 * 1024;
