//! `ItemsError`: every way reading a Map Run's items or writing its results fails, each
//! naming what and where, and the AWS error the Map state fails with (`error_name`).
//!
//! Invariants: every variant maps to one error name; reading errors to
//! `States.ItemReaderFailed`, writing errors to `States.ResultWriterFailed`. Where AWS gives
//! a cause text of its own (a JSON object that is no array, duplicate CSV headers, a negative
//! MaxItems), `cause` answers exactly that text.
//!
//! Must not: carry a catch-all; dress an object-store error as anything but what it is.

use std::path::PathBuf;

/// The error name AWS fails a Map state with when its items cannot be read.
pub const ITEM_READER_FAILED: &str = "States.ItemReaderFailed";
/// The error name AWS fails a Map state with when its results cannot be written.
pub const RESULT_WRITER_FAILED: &str = "States.ResultWriterFailed";
/// The error name of a failure outside a Map state's reading or writing (configuration).
pub const RUNTIME: &str = "States.Runtime";

/// Whether an object-store error happened reading items or writing results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reading a Map Run's items (`ItemReader`).
    Read,
    /// Writing a Map Run's results (`ResultWriter`).
    Write,
}

impl Access {
    fn error_name(self) -> &'static str {
        match self {
            Access::Read => ITEM_READER_FAILED,
            Access::Write => RESULT_WRITER_FAILED,
        }
    }
}

/// Which configuration object a field belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigKind {
    /// An ItemReader's `ReaderConfig`.
    ReaderConfig,
    /// A ResultWriter's `WriterConfig`.
    WriterConfig,
}

impl std::fmt::Display for ConfigKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ConfigKind::ReaderConfig => "ReaderConfig",
            ConfigKind::WriterConfig => "WriterConfig",
        })
    }
}

/// What is wrong with a manifest (an S3 inventory's `manifest.json`, an Athena manifest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManifestProblem {
    /// The manifest is not a JSON object.
    NotAnObject,
    /// A field the manifest must have is missing or has the wrong type.
    Field {
        /// The field, as S3 inventory spells it (`fileSchema`, `files`, `key`).
        name: &'static str,
        /// What it must be.
        expected: &'static str,
    },
    /// A line of an Athena manifest is not what it must be.
    Line {
        /// The line's index (0-based).
        line_index: u64,
        /// What it must be.
        expected: &'static str,
    },
    /// The inventory's files are not CSV (ORC and Parquet inventories are not read).
    FileFormat {
        /// The manifest's `fileFormat`.
        format: String,
    },
}

impl std::fmt::Display for ManifestProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ManifestProblem::NotAnObject => write!(f, "it is not a JSON object"),
            ManifestProblem::Field { name, expected } => {
                write!(f, "field {name} must be {expected}")
            }
            ManifestProblem::Line {
                line_index,
                expected,
            } => write!(f, "line {line_index} must be {expected}"),
            ManifestProblem::FileFormat { format } => {
                write!(
                    f,
                    "fileFormat {format:?} is not read (only CSV inventories are)"
                )
            }
        }
    }
}

/// Every way reading items or writing results fails.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ItemsError {
    /// `ObjectStoreConfig::Local`'s root is not a directory.
    #[error("the local object store's root {root:?} is not a directory")]
    RootNotADirectory {
        /// The configured root.
        root: PathBuf,
    },
    /// An `ObjectStoreConfig::S3` field is empty.
    #[error("the S3 object store's {field} is empty")]
    S3ConfigEmpty {
        /// The empty field (`endpoint`, `region`, ...).
        field: &'static str,
    },
    /// The resource is neither S3 action this crate serves nor one an embedder registered.
    #[error("no item source or result writer serves resource {resource:?}")]
    UnsupportedResource {
        /// The ItemReader's or ResultWriter's `Resource`.
        resource: String,
        /// An ItemReader's (`Read`) or a ResultWriter's (`Write`).
        access: Access,
    },
    /// An argument (`Parameters`/`Arguments`) is missing or has the wrong type.
    #[error("the {resource} argument {field} must be {expected}")]
    InvalidArgument {
        /// The resource whose argument it is.
        resource: String,
        /// The argument (`Bucket`, `Key`, `Prefix`, `VersionId`).
        field: &'static str,
        /// What it must be.
        expected: &'static str,
        /// An ItemReader's (`Read`) or a ResultWriter's (`Write`).
        access: Access,
    },
    /// A `ReaderConfig` or `WriterConfig` field is missing or has a value this crate does not
    /// know.
    #[error("{config}.{field} must be {expected}")]
    InvalidConfig {
        /// `ReaderConfig` or `WriterConfig`.
        config: ConfigKind,
        /// The field.
        field: &'static str,
        /// What it must be.
        expected: &'static str,
    },
    /// A documented AWS feature this crate does not implement yet.
    #[error("{feature} is not supported yet")]
    Unsupported {
        /// The feature (`InputType PARQUET`, ...).
        feature: &'static str,
    },
    /// `ReaderConfig.MaxItems` is negative.
    #[error("field MaxItems must be positive (it is {value})")]
    MaxItemsNegative {
        /// The value given.
        value: i64,
    },
    /// A bucket name that is not a safe directory name (local) or a valid S3 bucket name.
    #[error("bucket name {bucket:?} is invalid: {rule}")]
    InvalidBucketName {
        /// The name given.
        bucket: String,
        /// The rule it breaks.
        rule: &'static str,
    },
    /// An object key that cannot name an object here: empty, with an empty, `.` or `..`
    /// segment, or with a character the object store refuses.
    #[error("key {key:?} in bucket {bucket:?} is invalid: {source}")]
    InvalidKey {
        /// The bucket.
        bucket: String,
        /// The key given.
        key: String,
        /// The object store's objection (boxed: it is large).
        #[source]
        source: Box<object_store::path::Error>,
    },
    /// The bucket does not exist.
    #[error("bucket {bucket:?} does not exist")]
    NoSuchBucket {
        /// The bucket.
        bucket: String,
        /// Reading items or writing results.
        access: Access,
    },
    /// The object does not exist.
    #[error("object {key:?} does not exist in bucket {bucket:?}")]
    NoSuchKey {
        /// The bucket.
        bucket: String,
        /// The key.
        key: String,
        /// Reading items or writing results.
        access: Access,
    },
    /// The object store failed an operation.
    #[error("{operation} of {key:?} in bucket {bucket:?} failed: {source}")]
    Store {
        /// The bucket.
        bucket: String,
        /// The key (or the prefix listed).
        key: String,
        /// What was done (`get`, `list`, `put`, `multipart upload`).
        operation: &'static str,
        /// Reading items or writing results.
        access: Access,
        /// The object store's error (boxed: it is large).
        #[source]
        source: Box<object_store::Error>,
    },
    /// The object is not the one a resuming Map Run read: its ETag changed, so item indexes
    /// no longer name the same items.
    #[error("object {key:?} in bucket {bucket:?} changed since the Map Run began (ETag {etag} expected)")]
    ObjectChanged {
        /// The bucket.
        bucket: String,
        /// The key.
        key: String,
        /// The ETag expected.
        etag: String,
    },
    /// A JSON item file's top level is not an array.
    #[error("object {key:?} in bucket {bucket:?} is not a JSON array")]
    NotAnArray {
        /// The bucket.
        bucket: String,
        /// The key.
        key: String,
    },
    /// An item is not valid JSON (a JSON file's element or a JSONL line).
    #[error("item {item_index} of {key:?} in bucket {bucket:?} is not valid JSON: {source}")]
    BadJson {
        /// The bucket.
        bucket: String,
        /// The key.
        key: String,
        /// The item's index in the object (0-based).
        item_index: u64,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// A JSON item file ends inside its array.
    #[error("object {key:?} in bucket {bucket:?} ends inside its JSON array")]
    TruncatedJson {
        /// The bucket.
        bucket: String,
        /// The key.
        key: String,
    },
    /// Bytes other than white space follow a JSON item file's array.
    #[error("object {key:?} in bucket {bucket:?} has data after its JSON array")]
    TrailingData {
        /// The bucket.
        bucket: String,
        /// The key.
        key: String,
    },
    /// A text item (CSV row, JSONL line) is not UTF-8.
    #[error("item {item_index} of {key:?} in bucket {bucket:?} is not UTF-8")]
    NotUtf8 {
        /// The bucket.
        bucket: String,
        /// The key.
        key: String,
        /// The item's index in the object (0-based; for CSV, the row's).
        item_index: u64,
    },
    /// An item is larger than `ITEM_SIZE_BYTES_MAX`.
    #[error(
        "item {item_index} of {key:?} in bucket {bucket:?} is larger than {limit_bytes} bytes"
    )]
    ItemTooLarge {
        /// The bucket.
        bucket: String,
        /// The key.
        key: String,
        /// The item's index in the object (0-based).
        item_index: u64,
        /// The limit.
        limit_bytes: usize,
    },
    /// An object read whole is larger than `WHOLE_OBJECT_SIZE_BYTES_MAX`.
    #[error("object {key:?} in bucket {bucket:?} has {size_bytes} bytes, more than {limit_bytes}")]
    ObjectTooLarge {
        /// The bucket.
        bucket: String,
        /// The key.
        key: String,
        /// Its size.
        size_bytes: u64,
        /// The limit.
        limit_bytes: usize,
    },
    /// Two CSV headers are equal.
    #[error("CSV headers cannot contain duplicates ({header:?} twice)")]
    CsvHeadersDuplicate {
        /// The repeated header.
        header: String,
    },
    /// The CSV header row or `CSVHeaders` is larger than `CSV_HEADER_SIZE_BYTES_MAX`.
    #[error("the CSV header has {size_bytes} bytes, more than {limit_bytes}")]
    CsvHeaderTooLarge {
        /// Its size.
        size_bytes: usize,
        /// The limit.
        limit_bytes: usize,
    },
    /// `CSVHeaderLocation: FIRST_ROW` on an object with no row at all.
    #[error("object {key:?} in bucket {bucket:?} has no CSV header row")]
    CsvHeaderMissing {
        /// The bucket.
        bucket: String,
        /// The key.
        key: String,
    },
    /// A manifest (S3 inventory, Athena) is malformed.
    #[error("manifest {key:?} in bucket {bucket:?} is invalid: {problem}")]
    BadManifest {
        /// The bucket.
        bucket: String,
        /// The manifest's key.
        key: String,
        /// What is wrong.
        problem: ManifestProblem,
    },
    /// A gzipped object does not decompress.
    #[error("object {key:?} in bucket {bucket:?} is not valid gzip: {source}")]
    Gzip {
        /// The bucket.
        bucket: String,
        /// The key.
        key: String,
        /// The decoder's error.
        #[source]
        source: std::io::Error,
    },
    /// A listed object's metadata could not be read from the local file system.
    #[error("listing {path:?} failed: {source}")]
    LocalList {
        /// The directory or file.
        path: PathBuf,
        /// The file system's error.
        #[source]
        source: std::io::Error,
    },
    /// The map run ARN has no id after its last `:`.
    #[error("map run ARN {map_run_arn:?} has no map run id after its last ':'")]
    InvalidMapRunArn {
        /// The ARN given.
        map_run_arn: String,
    },
    /// An embedder's item source failed.
    #[error("item source {resource:?} failed: {cause}")]
    SourceFailed {
        /// The resource the source serves.
        resource: String,
        /// What the source said.
        cause: String,
    },
}

impl ItemsError {
    /// The AWS error name the Map state fails with (`States.ItemReaderFailed`,
    /// `States.ResultWriterFailed`, or `States.Runtime` for configuration errors).
    pub fn error_name(&self) -> &'static str {
        match self {
            ItemsError::RootNotADirectory { .. } | ItemsError::S3ConfigEmpty { .. } => RUNTIME,
            ItemsError::NoSuchBucket { access, .. }
            | ItemsError::NoSuchKey { access, .. }
            | ItemsError::Store { access, .. }
            | ItemsError::UnsupportedResource { access, .. }
            | ItemsError::InvalidArgument { access, .. } => access.error_name(),
            ItemsError::InvalidConfig {
                config: ConfigKind::WriterConfig,
                ..
            }
            | ItemsError::InvalidMapRunArn { .. } => RESULT_WRITER_FAILED,
            _ => ITEM_READER_FAILED,
        }
    }

    /// The cause text the Map state fails with: AWS's own text where it has one, else this
    /// error's message.
    pub fn cause(&self) -> String {
        match self {
            ItemsError::NotAnArray { .. } => "Attempting to map over non-iterable node.".into(),
            ItemsError::CsvHeadersDuplicate { .. } => {
                "CSV headers cannot contain duplicates.".into()
            }
            ItemsError::MaxItemsNegative { .. } => "field MaxItems must be positive".into(),
            other => other.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_and_writing_errors_have_aws_names() {
        let missing = |access| ItemsError::NoSuchBucket {
            bucket: "b".into(),
            access,
        };
        assert_eq!(
            missing(Access::Read).error_name(),
            "States.ItemReaderFailed"
        );
        assert_eq!(
            missing(Access::Write).error_name(),
            "States.ResultWriterFailed"
        );
        let not_array = ItemsError::NotAnArray {
            bucket: "b".into(),
            key: "k".into(),
        };
        assert_eq!(not_array.error_name(), "States.ItemReaderFailed");
        assert_eq!(
            not_array.cause(),
            "Attempting to map over non-iterable node."
        );
        assert_eq!(
            ItemsError::MaxItemsNegative { value: -1 }.cause(),
            "field MaxItems must be positive"
        );
        let writer = ItemsError::InvalidArgument {
            resource: "arn:aws:states:::s3:putObject".into(),
            field: "Bucket",
            expected: "a string",
            access: Access::Write,
        };
        assert_eq!(writer.error_name(), "States.ResultWriterFailed");
    }
}
