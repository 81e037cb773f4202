//! The crate's limits, in one place, with units as suffixes.
//!
//! Each bounds what a reader or the result writer holds in memory, or mirrors a limit AWS
//! documents for Distributed Map. Exceeding one is a typed error, never a silent truncation.

/// The largest item a reader hands out, as bytes of its JSON text (or its CSV row). AWS's
/// payload limit for a child execution's input is 256 KiB, so a larger item could not start
/// a child anyway; the bound keeps a reader's buffer to one item plus one chunk.
pub const ITEM_SIZE_BYTES_MAX: usize = 256 * 1024;

/// The largest CSV header row (FIRST_ROW) or CSVHeaders list (GIVEN), as AWS documents.
pub const CSV_HEADER_SIZE_BYTES_MAX: usize = 10 * 1024;

/// The most items a Map Run may read (`ReaderConfig.MaxItems` is at most this, AWS's figure).
/// A larger MaxItems is accepted and means this many.
pub const MAX_ITEMS_MAX: u64 = 100_000_000;

/// The largest object read whole: an S3 inventory `manifest.json`, or a JSON file whose items
/// sit behind `ReaderConfig.ItemsPointer`. Item files proper are streamed and have no limit.
pub const WHOLE_OBJECT_SIZE_BYTES_MAX: usize = 16 * 1024 * 1024;

/// The most compressed bytes handed to the gzip decoder at once: with deflate's worst ratio
/// (about 1032:1) one step inflates to at most about 4 MiB, so a gzip bomb cannot blow the
/// buffer up by more than that before the item limit stops it.
pub const GZIP_STEP_SIZE_BYTES_MAX: usize = 4 * 1024;

/// The size at which a results file is cut and the next one begun (`SUCCEEDED_1.json`, ...):
/// AWS splits results files at 5 GB.
pub const RESULT_FILE_SIZE_BYTES_MAX: u64 = 5 * 1024 * 1024 * 1024;

/// The part size of a results file's multipart upload: S3's smallest part (but the last).
/// What a result sink holds per open file is about this, times the parts in flight.
pub const RESULT_PART_SIZE_BYTES: usize = 5 * 1024 * 1024;

/// Parts of one results file uploading at once.
pub const RESULT_PARTS_IN_FLIGHT_MAX: usize = 2;

/// The longest local bucket name (a directory name on every file system we run on).
pub const BUCKET_NAME_LENGTH_BYTES_MAX: usize = 255;

const _: () = assert!(CSV_HEADER_SIZE_BYTES_MAX <= ITEM_SIZE_BYTES_MAX);
const _: () = assert!(ITEM_SIZE_BYTES_MAX <= WHOLE_OBJECT_SIZE_BYTES_MAX);
const _: () = assert!(RESULT_PART_SIZE_BYTES as u64 <= RESULT_FILE_SIZE_BYTES_MAX);
const _: () = assert!(GZIP_STEP_SIZE_BYTES_MAX <= ITEM_SIZE_BYTES_MAX);
