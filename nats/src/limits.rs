//! limits: every bound of the JetStream log, named.

/// How long [`crate::testing::TestCluster`] waits for JetStream to have a meta leader after
/// starting its servers.
pub const TEST_CLUSTER_READY_MS_MAX: u64 = 30_000;

/// The most body bytes one message (one batch) carries: below the server's default
/// `max_payload` of 1 MiB, with room for the headers. A server with a smaller `max_payload`
/// lowers it (`JetStreamLog::batch_size_bytes_max`).
pub const MESSAGE_BODY_BYTES_MAX: usize = 1024 * 1024 - 8 * 1024;

/// Bytes kept free below the server's `max_payload` for a message's headers (ids, LSN, type).
pub const HEADERS_RESERVE_BYTES: usize = 1024;

/// The most records one batch may carry.
pub const BATCH_RECORDS_MAX: usize = 65_536;

/// Stream sequences per extent by default (what trim and compaction drop whole).
pub const EXTENT_MESSAGES_DEFAULT: u64 = 4096;

/// How long a publish waits for its acknowledgement by default. A stream leader's loss
/// paused writes 4.0-5.5 s here; a timeout stops the log.
pub const ACK_TIMEOUT_MS_DEFAULT: u64 = 30_000;

/// How long any other call to the servers waits for its answer by default (each step of an
/// open, a read, a purge, the gap between two messages of a replay). A request sent while its
/// stream or the meta group elects a leader is never answered: the open fails at this bound
/// and its caller opens again, instead of waiting out the ack timeout.
pub const REQUEST_TIMEOUT_MS_DEFAULT: u64 = 5_000;

/// Messages a replay or scan buffers ahead of its reader.
pub const FETCH_BUFFER_MESSAGES: usize = 256;

/// The most replicas a stream may have (JetStream's own bound).
pub const REPLICAS_MAX: usize = 5;

/// Worker threads of the runtime a log builds for itself (publishing, acknowledgements, reads).
pub const RUNTIME_THREADS: usize = 2;

/// The most messages of one owner between queueing and the processing of their
/// acknowledgement: the pipeline's depth, and the window a stale owner can have in flight.
pub const PIPELINE_MESSAGES_MAX: u64 = 256;

/// Markers in a takeover's atomic batch: more than [`PIPELINE_MESSAGES_MAX`], so the stream's
/// last sequence jumps past every sequence a stale owner's window expects. Below the server's
/// atomic batch size limit (1000).
pub const TAKEOVER_MESSAGES: u64 = PIPELINE_MESSAGES_MAX + 1;

/// How often `open` asks to create or find its stream, and a replay or scan to create its
/// consumer, before it gives up (each ask waits up to the request timeout; a meta or stream
/// leader change times one out).
pub const STREAM_SETUP_ATTEMPTS: u32 = 3;
