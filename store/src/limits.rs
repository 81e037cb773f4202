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
