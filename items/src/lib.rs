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
//! How an engine uses it (a local bucket `data` under `root`):
//!
//! ```
//! # use serde_json::json;
//! # use statelog_items::*;
//! # let root = tempfile::tempdir().unwrap();
//! # std::fs::create_dir(root.path().join("data")).unwrap();
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let stores = ObjectStores::open(ObjectStoreConfig::Local { root: root.path().into() })?;
//! stores.put_object("data", "in.jsonl", b"{\"n\": 1}\n{\"n\": 2}\n".to_vec()).await?;
//! let sources = ItemSources::new(stores.clone());
//! // The ItemReader, its Parameters/Arguments evaluated against the state input.
//! let spec = ItemReaderSpec::new(
//!     "arn:aws:states:::s3:getObject",
//!     &json!({"Bucket": "data", "Key": "in.jsonl"}),
//!     Some(&json!({"InputType": "JSONL"})),
//! )?;
//! // From item 0; a recovering Map Run passes the first index it has not started.
//! let mut cursor = sources.open(&spec, 0).await?;
//! let slice = cursor.next_slice(100).await?; // at most what MaxConcurrency lets run
//! assert_eq!(slice, vec![json!({"n": 1}), json!({"n": 2})]);
//! // The ResultWriter, then each child's result as it closes.
//! let writer = ResultWriterSpec::new(
//!     "arn:aws:states:::s3:putObject",
//!     &json!({"Bucket": "data", "Prefix": "out"}),
//!     None,
//! )?;
//! let map_run_arn = "arn:aws:states:us-east-1:123456789012:mapRun:m/label:7f3e";
//! let sink = stores.result_writer(&writer, map_run_arn).await?;
//! // sink.write(ChildStatus::Succeeded, results).await? for each batch of closed children.
//! let output = sink.finish().await?; // the Map state's output
//! assert_eq!(output["ResultWriterDetails"]["Key"], "out/7f3e/manifest.json");
//! # Ok::<(), ItemsError>(())
//! # }).unwrap();
//! ```
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
