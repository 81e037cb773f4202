//! `ItemSource` and `ItemCursor`: where a Map Run's items come from, read in slices.
//! `ObjectStores` is the source of the S3 resources (`s3:getObject` with each input type,
//! `s3:listObjectsV2`); an embedder may register its own for another resource.
//!
//! Invariants: a cursor hands out items in the source's order, each once, starting at item
//! index `from`; the same spec over the same objects gives the same sequence, so a Map Run
//! that recovers at `from` meets exactly the items it had not finished. MaxItems counts from
//! item 0, not from `from`. A cursor holds at most one item's bytes plus one chunk (gzip: one
//! inflated step) besides the slice it returns.
//!
//! Must not: hold the item list; start children (the engine does).

use std::collections::VecDeque;

use async_trait::async_trait;
use bytes::Bytes;
use flate2::write::MultiGzDecoder;
use serde_json::Value;
use std::io::Write;

use crate::decode::{Csv, Decoder, JsonArray, JsonLines, Location, Step};
use crate::error::{Access, ItemsError, ManifestProblem};
use crate::limits::GZIP_STEP_SIZE_BYTES_MAX;
use crate::spec::{CsvHeaders, InputType, ItemReaderSpec, ReaderTarget};
use crate::stores::{Chunks, Listing, ObjectStores, Pin};

/// Where a Map Run's items come from. `ObjectStores` implements it for the S3 resources; an
/// embedder may implement it for a resource of its own (the engine keeps a map
/// resource -> `Arc<dyn ItemSource>`).
#[async_trait]
pub trait ItemSource: Send + Sync {
    /// Opens the items starting at item index `from` (0-based; a recovering Map Run resumes
    /// there).
    async fn open(
        &self,
        spec: &ItemReaderSpec,
        from: u64,
    ) -> Result<Box<dyn ItemCursor>, ItemsError>;
}

/// A Map Run's items, read in slices.
#[async_trait]
pub trait ItemCursor: Send {
    /// The next items in order, at most `max` (at least 1: asking for 0 answers an empty
    /// slice, which reads as the end); empty = no more. CSV rows are objects of
    /// strings; listObjectsV2 entries are `{Etag, LastModified, Key, Size, StorageClass}`;
    /// S3 inventory rows are objects keyed by the inventory's `fileSchema`.
    async fn next_slice(&mut self, max: usize) -> Result<Vec<Value>, ItemsError>;

    /// The bytes the cursor holds between slices (for bounds checks; 0 if it does not know).
    fn held_bytes(&self) -> usize {
        0
    }

    /// The ETag of the object read (`s3:getObject`; for MANIFEST, the manifest's), to pin
    /// with `ItemReaderSpec::with_expected_etag` when the Map Run resumes; `None` for a
    /// listing or a source without one.
    fn object_etag(&self) -> Option<&str> {
        None
    }
}

/// One item at a time; the cursors below build on it.
#[async_trait]
trait ItemStream: Send {
    async fn next_item(&mut self) -> Result<Option<Value>, ItemsError>;
    fn held_bytes(&self) -> usize;
    fn object_etag(&self) -> Option<&str>;
}

#[async_trait]
impl ItemSource for ObjectStores {
    async fn open(
        &self,
        spec: &ItemReaderSpec,
        from: u64,
    ) -> Result<Box<dyn ItemCursor>, ItemsError> {
        let mut stream: Box<dyn ItemStream> = match spec.target() {
            ReaderTarget::Object {
                bucket,
                key,
                version_id,
                input_type,
            } => {
                let pin = Pin {
                    version_id: version_id.as_deref(),
                    etag: spec.expected_etag(),
                };
                open_object(self, bucket, key, pin, input_type).await?
            }
            ReaderTarget::List { bucket, prefix } => Box::new(ListStream {
                listing: self.list(bucket, prefix)?,
            }),
            ReaderTarget::Other => {
                return Err(ItemsError::UnsupportedResource {
                    resource: spec.resource().to_string(),
                    access: Access::Read,
                })
            }
        };
        let end = spec.max_items();
        let skip = end.map_or(from, |end| from.min(end));
        for _ in 0..skip {
            if stream.next_item().await?.is_none() {
                break;
            }
        }
        Ok(Box::new(Limited {
            stream,
            remaining: end.map(|end| end - skip),
        }))
    }
}

/// The item sources of an engine: `ObjectStores` for the S3 resources, and those an embedder
/// registered for resources of its own (which take precedence). Cheap to clone.
#[derive(Clone)]
pub struct ItemSources {
    stores: ObjectStores,
    registered: std::collections::HashMap<String, std::sync::Arc<dyn ItemSource>>,
}

impl std::fmt::Debug for ItemSources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ItemSources")
            .field("stores", &self.stores)
            .field("registered", &self.registered.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl ItemSources {
    /// The S3 resources over `stores`, nothing registered.
    pub fn new(stores: ObjectStores) -> Self {
        ItemSources {
            stores,
            registered: std::collections::HashMap::new(),
        }
    }

    /// Serves `resource` (an ItemReader's `Resource`, exactly as written) with `source`,
    /// replacing what served it before.
    pub fn register(&mut self, resource: &str, source: std::sync::Arc<dyn ItemSource>) {
        self.registered.insert(resource.to_string(), source);
    }

    /// The object stores (for result writers).
    pub fn stores(&self) -> &ObjectStores {
        &self.stores
    }
}

#[async_trait]
impl ItemSource for ItemSources {
    async fn open(
        &self,
        spec: &ItemReaderSpec,
        from: u64,
    ) -> Result<Box<dyn ItemCursor>, ItemsError> {
        match self.registered.get(spec.resource()) {
            Some(source) => source.open(spec, from).await,
            None => self.stores.open(spec, from).await,
        }
    }
}

/// A stream cut at MaxItems.
struct Limited {
    stream: Box<dyn ItemStream>,
    /// Items still to hand out (`None`: all).
    remaining: Option<u64>,
}

#[async_trait]
impl ItemCursor for Limited {
    async fn next_slice(&mut self, max: usize) -> Result<Vec<Value>, ItemsError> {
        debug_assert!(max > 0, "a slice of 0 items reads as the end of the items");
        let mut want = max;
        if let Some(remaining) = self.remaining {
            want = want.min(usize::try_from(remaining).unwrap_or(usize::MAX));
        }
        let mut slice = Vec::with_capacity(want.min(4096));
        while slice.len() < want {
            match self.stream.next_item().await? {
                Some(item) => slice.push(item),
                None => {
                    self.remaining = Some(0);
                    break;
                }
            }
        }
        if let Some(remaining) = &mut self.remaining {
            *remaining -= (slice.len() as u64).min(*remaining);
        }
        debug_assert!(slice.len() <= max);
        Ok(slice)
    }

    fn held_bytes(&self) -> usize {
        self.stream.held_bytes()
    }

    fn object_etag(&self) -> Option<&str> {
        self.stream.object_etag()
    }
}

async fn open_object(
    stores: &ObjectStores,
    bucket: &str,
    key: &str,
    pin: Pin<'_>,
    input_type: &InputType,
) -> Result<Box<dyn ItemStream>, ItemsError> {
    let location = Location {
        bucket: bucket.to_string(),
        key: key.to_string(),
    };
    Ok(match input_type {
        InputType::Json {
            items_pointer: Some(pointer),
        } => {
            let (bytes, etag) = stores.read_whole(bucket, key, pin, Access::Read).await?;
            let document: Value =
                serde_json::from_slice(&bytes).map_err(|source| ItemsError::BadJson {
                    bucket: bucket.to_string(),
                    key: key.to_string(),
                    item_index: 0,
                    source,
                })?;
            drop(bytes);
            let mut document = document;
            match document.pointer_mut(pointer).map(Value::take) {
                Some(Value::Array(items)) => Box::new(VecStream {
                    items: items.into_iter(),
                    etag,
                }),
                _ => {
                    return Err(ItemsError::NotAnArray {
                        bucket: bucket.to_string(),
                        key: format!("{key}#{pointer}"),
                    })
                }
            }
        }
        InputType::Json {
            items_pointer: None,
        } => {
            let chunks = stores.chunks(bucket, key, pin, Access::Read).await?;
            Box::new(ObjectStream::new(chunks, JsonArray::new(location), false))
        }
        InputType::Jsonl => {
            let chunks = stores.chunks(bucket, key, pin, Access::Read).await?;
            Box::new(ObjectStream::new(chunks, JsonLines::new(location), false))
        }
        InputType::Csv { headers, delimiter } => {
            let chunks = stores.chunks(bucket, key, pin, Access::Read).await?;
            let given = match headers {
                CsvHeaders::FirstRow => None,
                CsvHeaders::Given(given) => Some(given.clone()),
            };
            Box::new(ObjectStream::new(
                chunks,
                Csv::new(location, delimiter.byte(), given),
                false,
            ))
        }
        InputType::Manifest => {
            let (manifest, etag) = stores.read_whole(bucket, key, pin, Access::Read).await?;
            Box::new(ManifestStream::new(
                stores.clone(),
                bucket,
                key,
                &manifest,
                etag,
            )?)
        }
    })
}

/// One object's items, decoded as its chunks stream in (gunzipped first if `gzip`).
struct ObjectStream<D> {
    chunks: Chunks,
    decoder: D,
    gzip: Option<Gunzip>,
    ended: bool,
}

/// Gunzipping as compressed chunks come: one step of at most `GZIP_STEP_SIZE_BYTES_MAX`
/// compressed bytes per pull, so what a step inflates to is all the decoder gets at once.
struct Gunzip {
    decoder: MultiGzDecoder<Vec<u8>>,
    /// The compressed bytes of the last chunk not yet inflated.
    pending: Bytes,
}

impl<D: Decoder> ObjectStream<D> {
    fn new(chunks: Chunks, decoder: D, gzip: bool) -> Self {
        ObjectStream {
            chunks,
            decoder,
            gzip: gzip.then(|| Gunzip {
                decoder: MultiGzDecoder::new(Vec::new()),
                pending: Bytes::new(),
            }),
            ended: false,
        }
    }

    fn gzip_error(&self, source: std::io::Error) -> ItemsError {
        let (bucket, key) = self.chunks.location();
        ItemsError::Gzip {
            bucket: bucket.to_string(),
            key: key.to_string(),
            source,
        }
    }

    /// Gives the decoder more bytes, or marks the end of the object.
    async fn pull(&mut self) -> Result<(), ItemsError> {
        if let Some(gzip) = &mut self.gzip {
            if !gzip.pending.is_empty() {
                let step_size_bytes = gzip.pending.len().min(GZIP_STEP_SIZE_BYTES_MAX);
                let step = gzip.pending.split_to(step_size_bytes);
                let written = gzip.decoder.write_all(&step);
                let inflated = std::mem::take(gzip.decoder.get_mut());
                if let Err(e) = written {
                    return Err(self.gzip_error(e));
                }
                self.decoder.push(&inflated);
                return Ok(());
            }
        }
        match self.chunks.next().await? {
            Some(chunk) => match &mut self.gzip {
                None => self.decoder.push(&chunk),
                Some(gzip) => gzip.pending = chunk,
            },
            None => {
                if let Some(mut gzip) = self.gzip.take() {
                    let finished = gzip.decoder.try_finish();
                    let inflated = std::mem::take(gzip.decoder.get_mut());
                    if let Err(e) = finished {
                        return Err(self.gzip_error(e));
                    }
                    self.decoder.push(&inflated);
                }
                self.ended = true;
            }
        }
        Ok(())
    }
}

#[async_trait]
impl<D: Decoder> ItemStream for ObjectStream<D> {
    async fn next_item(&mut self) -> Result<Option<Value>, ItemsError> {
        loop {
            match self.decoder.step(self.ended)? {
                Step::Item(item) => return Ok(Some(item)),
                Step::End => return Ok(None),
                Step::NeedInput => {
                    assert!(!self.ended, "a decoder asked for input after the end");
                    self.pull().await?;
                }
            }
        }
    }

    fn held_bytes(&self) -> usize {
        self.decoder.held_bytes()
    }

    fn object_etag(&self) -> Option<&str> {
        self.chunks.etag.as_deref()
    }
}

/// Items already in memory (a JSON file read whole for its `ItemsPointer`).
struct VecStream {
    items: std::vec::IntoIter<Value>,
    etag: Option<String>,
}

#[async_trait]
impl ItemStream for VecStream {
    async fn next_item(&mut self) -> Result<Option<Value>, ItemsError> {
        Ok(self.items.next())
    }

    fn held_bytes(&self) -> usize {
        0 // bounded by WHOLE_OBJECT_SIZE_BYTES_MAX when read
    }

    fn object_etag(&self) -> Option<&str> {
        self.etag.as_deref()
    }
}

/// `s3:listObjectsV2`: each object as AWS gives it to a Map Run.
struct ListStream {
    listing: Listing,
}

#[async_trait]
impl ItemStream for ListStream {
    async fn next_item(&mut self) -> Result<Option<Value>, ItemsError> {
        let Some(meta) = self.listing.next().await? else {
            return Ok(None);
        };
        let etag = match meta.e_tag {
            Some(tag) if tag.starts_with('"') => tag,
            Some(tag) => format!("\"{tag}\""),
            None => String::new(),
        };
        // The field order of AWS's recorded answers.
        let mut item = serde_json::Map::new();
        item.insert("Etag".into(), Value::String(etag));
        item.insert(
            "LastModified".into(),
            Value::from(meta.last_modified.timestamp()),
        );
        item.insert("Key".into(), Value::String(meta.location.to_string()));
        item.insert("Size".into(), Value::from(meta.size));
        item.insert("StorageClass".into(), Value::String("STANDARD".into()));
        Ok(Some(Value::Object(item)))
    }

    fn held_bytes(&self) -> usize {
        0
    }

    fn object_etag(&self) -> Option<&str> {
        None
    }
}

/// `InputType: MANIFEST` (S3 inventory): the rows of the CSV files the manifest lists, in
/// its order, keyed by its `fileSchema`. Files ending in `.gz` are gunzipped as they stream.
struct ManifestStream {
    stores: ObjectStores,
    /// Where the files are: the manifest's `destinationBucket`, else the manifest's bucket.
    bucket: String,
    files: VecDeque<String>,
    schema: Vec<String>,
    current: Option<ObjectStream<Csv>>,
    manifest_etag: Option<String>,
}

impl ManifestStream {
    fn new(
        stores: ObjectStores,
        bucket: &str,
        key: &str,
        manifest: &[u8],
        manifest_etag: Option<String>,
    ) -> Result<Self, ItemsError> {
        let bad = |problem| ItemsError::BadManifest {
            bucket: bucket.to_string(),
            key: key.to_string(),
            problem,
        };
        let manifest: Value =
            serde_json::from_slice(manifest).map_err(|_| bad(ManifestProblem::NotAnObject))?;
        let manifest = manifest
            .as_object()
            .ok_or_else(|| bad(ManifestProblem::NotAnObject))?;
        if let Some(format) = manifest.get("fileFormat") {
            match format.as_str() {
                Some(f) if f.eq_ignore_ascii_case("CSV") => {}
                Some(f) => {
                    return Err(bad(ManifestProblem::FileFormat {
                        format: f.to_string(),
                    }))
                }
                None => {
                    return Err(bad(ManifestProblem::Field {
                        name: "fileFormat",
                        expected: "a string",
                    }))
                }
            }
        }
        let schema: Vec<String> = manifest
            .get("fileSchema")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                bad(ManifestProblem::Field {
                    name: "fileSchema",
                    expected: "a string of comma-separated field names",
                })
            })?
            .split(',')
            .map(|field| field.trim().to_string())
            .collect();
        crate::spec::check_csv_headers(&schema)?;
        let files = manifest
            .get("files")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                bad(ManifestProblem::Field {
                    name: "files",
                    expected: "an array",
                })
            })?;
        let mut keys = VecDeque::with_capacity(files.len());
        for file in files {
            let file_key = file.get("key").and_then(Value::as_str).ok_or_else(|| {
                bad(ManifestProblem::Field {
                    name: "key",
                    expected: "a string in each of files",
                })
            })?;
            keys.push_back(file_key.to_string());
        }
        let destination = match manifest.get("destinationBucket").and_then(Value::as_str) {
            Some(arn) => arn.rsplit(':').next().unwrap_or(arn).to_string(),
            None => bucket.to_string(),
        };
        Ok(ManifestStream {
            stores,
            bucket: destination,
            files: keys,
            schema,
            current: None,
            manifest_etag,
        })
    }
}

#[async_trait]
impl ItemStream for ManifestStream {
    async fn next_item(&mut self) -> Result<Option<Value>, ItemsError> {
        loop {
            if let Some(current) = &mut self.current {
                if let Some(item) = current.next_item().await? {
                    return Ok(Some(item));
                }
                self.current = None;
            }
            let Some(key) = self.files.pop_front() else {
                return Ok(None);
            };
            let chunks = self
                .stores
                .chunks(&self.bucket, &key, Pin::default(), Access::Read)
                .await?;
            let location = Location {
                bucket: self.bucket.clone(),
                key: key.clone(),
            };
            let csv = Csv::new(location, b',', Some(self.schema.clone()));
            self.current = Some(ObjectStream::new(chunks, csv, key.ends_with(".gz")));
        }
    }

    fn held_bytes(&self) -> usize {
        self.current.as_ref().map_or(0, ItemStream::held_bytes)
    }

    fn object_etag(&self) -> Option<&str> {
        self.manifest_etag.as_deref()
    }
}
