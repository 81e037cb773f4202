//! error: the cluster layer's one error type.

/// A boxed error from the NATS client (its error types are generic per operation).
pub type ClientError = Box<dyn std::error::Error + Send + Sync>;

/// Why a node name is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NodeNameProblem {
    /// The name is empty.
    Empty,
    /// The name is longer than [`crate::limits::NODE_NAME_BYTES_MAX`].
    TooLong,
    /// The name has a byte outside `A-Z a-z 0-9 - _` (it is a KV key and a subject token).
    BadCharacter,
}

impl std::fmt::Display for NodeNameProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Empty => "is empty",
            Self::TooLong => "is longer than 64 bytes",
            Self::BadCharacter => "may only have A-Z, a-z, 0-9, '-' and '_'",
        })
    }
}

/// What went wrong in the cluster layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A partition count outside 1..=max.
    #[error("partition count {count} is outside 1..={max}")]
    PartitionCount {
        /// The count given.
        count: u32,
        /// [`crate::limits::PARTITIONS_MAX`].
        max: u32,
    },
    /// A part of a partition key longer than 4 GiB.
    #[error("a partition key part of {length_bytes} bytes is longer than 4 GiB")]
    KeyPartTooLong {
        /// Its length.
        length_bytes: usize,
    },
    /// A node name that cannot be a KV key and a subject token.
    #[error("node name {name:?} {problem}")]
    NodeName {
        /// The name given.
        name: String,
        /// What is wrong with it.
        problem: NodeNameProblem,
    },
    /// A listen address longer than [`crate::limits::LISTEN_BYTES_MAX`].
    #[error("listen address of {length_bytes} bytes is longer than {limit_bytes}")]
    ListenTooLong {
        /// Its length.
        length_bytes: usize,
        /// The limit.
        limit_bytes: usize,
    },
    /// A lease duration outside the accepted range.
    #[error("lease of {lease_ms} ms is outside {min_ms}..={max_ms} ms")]
    LeaseMs {
        /// The lease given.
        lease_ms: u64,
        /// [`crate::limits::LEASE_MS_MIN`].
        min_ms: u64,
        /// [`crate::limits::LEASE_MS_MAX`].
        max_ms: u64,
    },
    /// No NATS URL was given.
    #[error("no NATS URL given (--nats nats://HOST:PORT[,nats://HOST:PORT...])")]
    NoUrls,
    /// Connecting to NATS failed.
    #[error("cannot connect to NATS at {urls}: {source}")]
    Connect {
        /// The URLs tried, comma-separated.
        urls: String,
        /// The client's error.
        #[source]
        source: ClientError,
    },
    /// A KV operation on a cluster bucket failed.
    #[error("NATS KV bucket {bucket}: {operation} failed: {source}")]
    Bucket {
        /// The bucket.
        bucket: &'static str,
        /// What was being done (`create bucket`, `create config`, `update p3`, ...).
        operation: String,
        /// The client's error.
        #[source]
        source: ClientError,
    },
    /// A KV operation took longer than its bound.
    #[error("NATS KV bucket {bucket}: {operation} took longer than {timeout_ms} ms")]
    TimedOut {
        /// The bucket.
        bucket: &'static str,
        /// What was being done.
        operation: String,
        /// The bound.
        timeout_ms: u64,
    },
    /// `init` with another partition count than the cluster already has.
    #[error(
        "the cluster is already initialized with {existing} partitions; \
         {requested} requested (the count is fixed at creation)"
    )]
    AlreadyInitialized {
        /// The cluster's count.
        existing: u32,
        /// The count asked for.
        requested: u32,
    },
    /// `load` found no config.
    #[error("not initialized: run statelog cluster init --nats URLS --partitions N")]
    NotInitialized,
    /// The config names a format this build does not read.
    #[error("cluster config format {format} is unknown to this build (it reads format {supported}); upgrade statelog")]
    ConfigFormat {
        /// The format found.
        format: u64,
        /// The format this build writes and reads.
        supported: u64,
    },
    /// An entry of a cluster bucket does not parse.
    #[error("NATS KV bucket {bucket} key {key}: not a valid entry: {reason}")]
    EntryCorrupt {
        /// The bucket.
        bucket: &'static str,
        /// The key.
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// An entry of a cluster bucket is larger than [`crate::limits::ENTRY_BYTES_MAX`].
    #[error(
        "NATS KV bucket {bucket} key {key}: entry of {size_bytes} bytes is over {limit_bytes}"
    )]
    EntryTooLarge {
        /// The bucket.
        bucket: &'static str,
        /// The key.
        key: String,
        /// Its size.
        size_bytes: usize,
        /// The limit.
        limit_bytes: usize,
    },
}
