//! error: the one error type of the JetStream log, and how it maps into the store's.
//!
//! Must not: decide policy; it describes what happened (the log decides to refuse for good).

use std::sync::Arc;

/// Every error of the JetStream log.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Options that cannot work.
    #[error("invalid jetstream log option {field}: {reason}")]
    InvalidOptions {
        /// The option.
        field: &'static str,
        /// Why.
        reason: String,
    },
    /// The client runtime could not be built.
    #[error("cannot build the client runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// No server of the list answered.
    #[error("cannot connect to {urls}: {reason}")]
    Connect {
        /// The URLs tried.
        urls: String,
        /// What the client reported.
        reason: String,
    },
    /// A JetStream API call about the stream failed (create, info, purge, consumer).
    #[error("stream {stream}: {operation}: {reason}")]
    Stream {
        /// The stream.
        stream: String,
        /// The call.
        operation: &'static str,
        /// What the server or client reported.
        reason: String,
    },
    /// Another owner wrote to the stream: the server refused this owner's message by its
    /// expected last message id or sequence. Nothing this owner appends is acknowledged any more.
    #[error("stream {stream}: fenced: message {message_id} refused ({reason})")]
    Fenced {
        /// The stream.
        stream: String,
        /// The refused message's `Nats-Msg-Id`.
        message_id: String,
        /// What the server said.
        reason: String,
    },
    /// The stream's last takeover marker names a newer epoch than this owner's.
    #[error(
        "stream {stream}: epoch {epoch} is older than the stream's owner epoch {marker_epoch}"
    )]
    StaleEpoch {
        /// The stream.
        stream: String,
        /// The epoch this owner opened with.
        epoch: u64,
        /// The epoch in the stream's last takeover marker.
        marker_epoch: u64,
    },
    /// A publish failed in a way that is not a fence (a timeout, a lost connection, no stream):
    /// its outcome is unknown, so the log stops writing (fail-stop).
    #[error("stream {stream}: publishing {message_id}: {reason}")]
    Publish {
        /// The stream.
        stream: String,
        /// The message's `Nats-Msg-Id`.
        message_id: String,
        /// What the client reported.
        reason: String,
    },
    /// The server took a message as a duplicate of an earlier one: it was not appended.
    #[error("stream {stream}: message {message_id} was taken as a duplicate")]
    Duplicate {
        /// The stream.
        stream: String,
        /// The message's `Nats-Msg-Id`.
        message_id: String,
    },
    /// The server acknowledged a message at a sequence the log did not expect.
    #[error(
        "stream {stream}: message {message_id} stored at sequence {sequence}, expected {expected}"
    )]
    UnexpectedSequence {
        /// The stream.
        stream: String,
        /// The message's `Nats-Msg-Id`.
        message_id: String,
        /// Where the server stored it.
        sequence: u64,
        /// Where the log expected it.
        expected: u64,
    },
    /// A batch larger than one message may carry.
    #[error("batch of {records_count} records and {size_bytes} bytes exceeds the limit of {limit_bytes} bytes / {limit_records} records")]
    BatchTooLarge {
        /// Records in the batch.
        records_count: usize,
        /// Encoded bytes of the batch.
        size_bytes: usize,
        /// The most bytes one batch may take.
        limit_bytes: usize,
        /// The most records one batch may carry.
        limit_records: usize,
    },
    /// A message could not be read back.
    #[error("stream {stream}: reading sequence {sequence}: {reason}")]
    Read {
        /// The stream.
        stream: String,
        /// The message's sequence.
        sequence: u64,
        /// What the client reported.
        reason: String,
    },
    /// A message of the stream is not one this log wrote (or is damaged).
    #[error("stream {stream}: message at sequence {sequence} does not decode: {reason}")]
    Decode {
        /// The stream.
        stream: String,
        /// The message's sequence.
        sequence: u64,
        /// What is wrong.
        reason: &'static str,
    },
    /// The log's client runtime stopped (the log is being dropped).
    #[error("the jetstream log's client runtime stopped")]
    Stopped,
    /// The log refused a write earlier; nothing more is written until it is opened again.
    #[error("jetstream log stopped by an earlier failure: {cause}")]
    Poisoned {
        /// The failure that stopped it.
        cause: Arc<Error>,
    },
}

impl Error {
    /// Whether it is a fence (another owner took the stream over).
    pub fn is_fence(&self) -> bool {
        match self {
            Error::Fenced { .. } | Error::StaleEpoch { .. } => true,
            Error::Poisoned { cause } => cause.is_fence(),
            _ => false,
        }
    }
}

impl From<Error> for statelog_store::Error {
    fn from(error: Error) -> Self {
        match error {
            error if error.is_fence() => statelog_store::Error::Fenced,
            Error::BatchTooLarge {
                records_count,
                size_bytes,
                limit_bytes,
                limit_records,
            } => statelog_store::Error::Log(statelog_wal::Error::BatchTooLarge {
                records_count,
                size_bytes,
                limit_bytes,
                limit_records,
            }),
            // A read may succeed when asked again; nothing was changed by it.
            error @ Error::Read { .. } => statelog_store::Error::Replicated {
                cause: Arc::new(error),
                retryable: true,
            },
            error => statelog_store::Error::Replicated {
                cause: Arc::new(error),
                retryable: false,
            },
        }
    }
}
