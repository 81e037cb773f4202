//! statelog-items: where a Distributed Map's items come from and where its results go.
//!
//! - `ObjectStores` over an `ObjectStoreConfig`: buckets in a local root directory (a bucket
//!   is a directory) or at an S3-compatible endpoint, through the `object_store` crate.
//! - `ItemReaderSpec` + `ItemSource::open` -> an `ItemCursor` that reads items in slices:
//!   `s3:getObject` with `InputType` JSON, JSONL, CSV (FIRST_ROW or GIVEN headers, the five
//!   delimiters), MANIFEST (an S3 inventory) or an Athena manifest (`ATHENA_DATA`), and
//!   `s3:listObjectsV2` (the objects, or with `LOAD_AND_FLATTEN` their items). An embedder may
//!   implement `ItemSource` for a resource of its own and register it in `ItemSources`.
//! - `ResultWriterSpec` + `ObjectStores::result_writer` -> a `ResultSink` that writes AWS's
//!   layout (`SUCCEEDED_0.json`, ..., `manifest.json`).
//! - `ItemsError`, whose `error_name` is the AWS error the Map state fails with.
//!
//! Invariants: memory is bounded by the slice asked for and the limits in `limits.rs`, not
//! by the item count; a listing or an object yields the same items in the same order each
//! time it is read, so a Map Run recovering at item index `from` meets no item twice and
//! misses none.
//!
//! Must not: depend on any statelog crate (the engine depends on this one); evaluate
//! JSONPath or JSONata; start executions.

mod decode;
pub mod error;
pub mod limits;
mod source;
pub mod spec;
mod stores;
mod writer;

pub use error::{Access, ConfigKind, ItemsError, ManifestProblem};
pub use source::{ItemCursor, ItemSource, ItemSources};
pub use spec::{
    CsvDelimiter, CsvHeaders, InputType, ItemReaderSpec, OutputType, ReaderTarget,
    ResultWriterSpec, Transformation, WriterConfig, S3_GET_OBJECT, S3_LIST_OBJECTS_V2,
    S3_PUT_OBJECT,
};
pub use stores::{ObjectStoreConfig, ObjectStores};
pub use writer::{
    ChildResult, ChildStatus, ExecutionStatus, RedriveStatus, ResultFile, ResultSink,
};
