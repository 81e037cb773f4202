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
use crate::spec::{CsvDelimiter, CsvHeaders, InputType, ItemReaderSpec, ReaderTarget};
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
                open_object(self, bucket, key, pin, input_type, false).await?
            }
            ReaderTarget::List {
                bucket,
                prefix,
                load: None,
            } => Box::new(ListStream {
                listing: self.list(bucket, prefix)?,
            }),
            ReaderTarget::List {
                bucket,
                prefix,
                load: Some(data),
            } => Box::new(ObjectsStream::listed(
                self.clone(),
                self.list(bucket, prefix)?,
                data,
            )),
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
    gzip: bool,
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
            Box::new(ObjectStream::new(chunks, JsonArray::new(location), gzip))
        }
        InputType::Jsonl => {
            let chunks = stores.chunks(bucket, key, pin, Access::Read).await?;
            Box::new(ObjectStream::new(chunks, JsonLines::new(location), gzip))
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
                gzip,
            ))
        }
        InputType::Manifest => {
            let (manifest, etag) = stores.read_whole(bucket, key, pin, Access::Read).await?;
            Box::new(ObjectsStream::s3_inventory(
                stores.clone(),
                bucket,
                key,
                &manifest,
                etag,
            )?)
        }
        InputType::AthenaManifest { data } => {
            let (manifest, etag) = stores.read_whole(bucket, key, pin, Access::Read).await?;
            Box::new(ObjectsStream::athena(
                stores.clone(),
                bucket,
                key,
                &manifest,
                etag,
                data,
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

/// An object a multi-object stream reads next.
struct ObjectKey {
    bucket: String,
    key: String,
}

/// Where a multi-object stream's objects come from.
enum ObjectQueue {
    /// Named by a manifest, read whole when the stream opened (at most
    /// `WHOLE_OBJECT_SIZE_BYTES_MAX`, so the queue is bounded too).
    Named(VecDeque<ObjectKey>),
    /// Listed as the stream goes (`listObjectsV2` with `LOAD_AND_FLATTEN`).
    Listed(Listing),
}

/// The items of several objects, one object after the other: an S3 inventory's files, an
/// Athena manifest's objects, or a listing's objects (`LOAD_AND_FLATTEN`). Only the object
/// being read is open.
struct ObjectsStream {
    stores: ObjectStores,
    queue: ObjectQueue,
    /// How each object's bytes become items.
    input_type: InputType,
    /// Whether a key ending in `.gz` is gunzipped (manifests' files; a listing's are read as
    /// they are).
    gunzip_gz: bool,
    current: Option<Box<dyn ItemStream>>,
    /// The ETag of the manifest that named the objects.
    manifest_etag: Option<String>,
}

impl ObjectsStream {
    /// `InputType: MANIFEST` (S3 inventory): the rows of the CSV files the manifest lists,
    /// in its order, keyed by its `fileSchema`, read from its `destinationBucket` (else the
    /// manifest's bucket).
    fn s3_inventory(
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
        let destination = match manifest.get("destinationBucket").and_then(Value::as_str) {
            Some(arn) => arn.rsplit(':').next().unwrap_or(arn).to_string(),
            None => bucket.to_string(),
        };
        let mut keys = VecDeque::with_capacity(files.len());
        for file in files {
            let file_key = file.get("key").and_then(Value::as_str).ok_or_else(|| {
                bad(ManifestProblem::Field {
                    name: "key",
                    expected: "a string in each of files",
                })
            })?;
            keys.push_back(ObjectKey {
                bucket: destination.clone(),
                key: file_key.to_string(),
            });
        }
        Ok(ObjectsStream {
            stores,
            queue: ObjectQueue::Named(keys),
            input_type: InputType::Csv {
                headers: CsvHeaders::Given(schema),
                delimiter: CsvDelimiter::Comma,
            },
            gunzip_gz: true,
            current: None,
            manifest_etag,
        })
    }

    /// `ManifestType: ATHENA_DATA`: the items of the objects the manifest lists, one
    /// `s3://bucket/key` per line (blank lines skipped), each read as `data`.
    fn athena(
        stores: ObjectStores,
        bucket: &str,
        key: &str,
        manifest: &[u8],
        manifest_etag: Option<String>,
        data: &InputType,
    ) -> Result<Self, ItemsError> {
        let text = std::str::from_utf8(manifest).map_err(|_| ItemsError::NotUtf8 {
            bucket: bucket.to_string(),
            key: key.to_string(),
            item_index: 0,
        })?;
        let mut keys = VecDeque::new();
        for (line_index, line) in text.lines().enumerate() {
            let line = line.trim().trim_matches('"');
            if line.is_empty() {
                continue;
            }
            let object = line
                .strip_prefix("s3://")
                .and_then(|rest| rest.split_once('/'))
                .filter(|(b, k)| !b.is_empty() && !k.is_empty())
                .ok_or_else(|| ItemsError::BadManifest {
                    bucket: bucket.to_string(),
                    key: key.to_string(),
                    problem: ManifestProblem::Line {
                        line_index: line_index as u64,
                        expected: "an s3://bucket/key URI",
                    },
                })?;
            keys.push_back(ObjectKey {
                bucket: object.0.to_string(),
                key: object.1.to_string(),
            });
        }
        Ok(ObjectsStream {
            stores,
            queue: ObjectQueue::Named(keys),
            input_type: data.clone(),
            gunzip_gz: true,
            current: None,
            manifest_etag,
        })
    }

    /// `listObjectsV2` with `LOAD_AND_FLATTEN`: each listed object's items, read as `data`.
    fn listed(stores: ObjectStores, listing: Listing, data: &InputType) -> Self {
        ObjectsStream {
            stores,
            queue: ObjectQueue::Listed(listing),
            input_type: data.clone(),
            gunzip_gz: false,
            current: None,
            manifest_etag: None,
        }
    }

    async fn next_object(&mut self) -> Result<Option<ObjectKey>, ItemsError> {
        match &mut self.queue {
            ObjectQueue::Named(keys) => Ok(keys.pop_front()),
            ObjectQueue::Listed(listing) => Ok(listing.next().await?.map(|meta| ObjectKey {
                bucket: listing.bucket().to_string(),
                key: meta.location.to_string(),
            })),
        }
    }
}

#[async_trait]
impl ItemStream for ObjectsStream {
    async fn next_item(&mut self) -> Result<Option<Value>, ItemsError> {
        loop {
            if let Some(current) = &mut self.current {
                if let Some(item) = current.next_item().await? {
                    return Ok(Some(item));
                }
                self.current = None;
            }
            let Some(object) = self.next_object().await? else {
                return Ok(None);
            };
            let gzip = self.gunzip_gz && object.key.ends_with(".gz");
            let stream = open_object(
                &self.stores,
                &object.bucket,
                &object.key,
                Pin::default(),
                &self.input_type,
                gzip,
            )
            .await?;
            self.current = Some(stream);
        }
    }

    fn held_bytes(&self) -> usize {
        self.current
            .as_ref()
            .map_or(0, |current| current.held_bytes())
    }

    fn object_etag(&self) -> Option<&str> {
        self.manifest_etag.as_deref()
    }
}
