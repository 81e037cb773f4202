//! limits: every named maximum of the store (compaction steps), in one place.

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

/// How long [`crate::Log::wait_for`] on the local WAL sleeps between looks at its end, in ms.
/// The WAL has no append notification; a follower of a local log is a test or a tool, so a
/// short poll costs nothing on the commit path.
pub const TAIL_POLL_INTERVAL_MS: u64 = 2;

/// The longest one [`crate::Log::wait_for`] may block, in ms: a longer timeout is cut to it,
/// so a caller's loop always gets its thread back.
pub const TAIL_WAIT_MS_MAX: u64 = 60_000;

const _: () = assert!(TAIL_POLL_INTERVAL_MS < TAIL_WAIT_MS_MAX);
