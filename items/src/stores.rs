//! The object-store seam: `ObjectStoreConfig` (a local root directory or an S3-compatible
//! endpoint) and `ObjectStores`, the buckets opened once and shared.
//!
//! A local bucket is a directory under the root; a key is a path under it, `/` separating
//! directories. Over S3 a bucket is a bucket, reached by path-style requests.
//!
//! Invariants: a bucket name is checked before it names a directory or a URL (no `/`, `\`,
//! `..`, leading `.`); a key goes through `object_store::path::Path::parse`, which refuses
//! empty, `.` and `..` segments, so no key reaches outside its bucket's directory. A listing
//! yields keys in S3's order (byte-wise ascending), locally too, so an item's index is stable
//! and a recovering Map Run resumes at the right item.
//!
//! Must not: hold an object whole unless it is read whole on purpose (bounded by
//! `WHOLE_OBJECT_SIZE_BYTES_MAX`); write anything but what a caller asks for.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{GetOptions, ObjectMeta, ObjectStore, ObjectStoreExt, PutPayload};

use crate::error::{Access, ItemsError};
use crate::limits::{BUCKET_NAME_LENGTH_BYTES_MAX, WHOLE_OBJECT_SIZE_BYTES_MAX};

/// Where buckets live: a local root directory (bucket = directory under it) or an
/// S3-compatible endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjectStoreConfig {
    /// Buckets are the directories under `root` (which must exist).
    Local {
        /// The directory holding one directory per bucket.
        root: PathBuf,
    },
    /// Buckets are an S3-compatible endpoint's, reached by path-style requests.
    S3 {
        /// The endpoint's URL (`https://s3.eu-west-1.amazonaws.com`, `http://127.0.0.1:9000`).
        endpoint: String,
        /// The region requests are signed for.
        region: String,
        /// The access key id requests are signed with.
        access_key_id: String,
        /// The secret access key requests are signed with.
        secret_access_key: String,
        /// Whether an `http://` endpoint is allowed (a local test server).
        allow_http: bool,
    },
}

/// The buckets, opened once, shared (cheap to clone: one `Arc`).
#[derive(Debug, Clone)]
pub struct ObjectStores {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: ObjectStoreConfig,
    /// One client per bucket, made on first use (object_store's S3 client is per bucket).
    buckets: Mutex<HashMap<String, Arc<dyn ObjectStore>>>,
}

impl ObjectStores {
    /// Opens the object stores: checks a local root is a directory, an S3 configuration has
    /// no empty field. Buckets are reached on first use.
    pub fn open(config: ObjectStoreConfig) -> Result<Self, ItemsError> {
        match &config {
            ObjectStoreConfig::Local { root } => {
                if !root.is_dir() {
                    return Err(ItemsError::RootNotADirectory { root: root.clone() });
                }
            }
            ObjectStoreConfig::S3 {
                endpoint,
                region,
                access_key_id,
                secret_access_key,
                allow_http: _,
            } => {
                for (field, value) in [
                    ("endpoint", endpoint),
                    ("region", region),
                    ("access_key_id", access_key_id),
                    ("secret_access_key", secret_access_key),
                ] {
                    if value.is_empty() {
                        return Err(ItemsError::S3ConfigEmpty { field });
                    }
                }
            }
        }
        Ok(ObjectStores {
            inner: Arc::new(Inner {
                config,
                buckets: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// The configuration these stores were opened with.
    pub fn config(&self) -> &ObjectStoreConfig {
        &self.inner.config
    }

    /// Writes `bytes` as object `key` of `bucket` (replacing it), in one request.
    pub async fn put_object(
        &self,
        bucket: &str,
        key: &str,
        bytes: Vec<u8>,
    ) -> Result<(), ItemsError> {
        let store = self.bucket(bucket, Access::Write)?;
        let path = parse_key(bucket, key)?;
        store
            .put(&path, PutPayload::from(bytes))
            .await
            .map_err(|e| store_error(e, bucket, key, "put", Access::Write))?;
        Ok(())
    }

    /// Reads object `key` of `bucket` whole; at most `WHOLE_OBJECT_SIZE_BYTES_MAX` bytes.
    pub async fn get_object(&self, bucket: &str, key: &str) -> Result<Vec<u8>, ItemsError> {
        let (bytes, _etag) = self
            .read_whole(bucket, key, Pin::default(), Access::Read)
            .await?;
        Ok(bytes)
    }

    /// The client of `bucket`, made on first use. A local bucket must be an existing
    /// directory under the root.
    pub(crate) fn bucket(
        &self,
        bucket: &str,
        access: Access,
    ) -> Result<Arc<dyn ObjectStore>, ItemsError> {
        check_bucket_name(bucket, &self.inner.config)?;
        let mut buckets = self.inner.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(store) = buckets.get(bucket) {
            return Ok(Arc::clone(store));
        }
        let store: Arc<dyn ObjectStore> = match &self.inner.config {
            ObjectStoreConfig::Local { root } => {
                let dir = root.join(bucket);
                if !dir.is_dir() {
                    return Err(ItemsError::NoSuchBucket {
                        bucket: bucket.to_string(),
                        access,
                    });
                }
                let local = LocalFileSystem::new_with_prefix(&dir)
                    .map_err(|e| store_error(e, bucket, "", "open", access))?;
                Arc::new(local)
            }
            ObjectStoreConfig::S3 {
                endpoint,
                region,
                access_key_id,
                secret_access_key,
                allow_http,
            } => {
                let s3 = AmazonS3Builder::new()
                    .with_endpoint(endpoint)
                    .with_region(region)
                    .with_access_key_id(access_key_id)
                    .with_secret_access_key(secret_access_key)
                    .with_allow_http(*allow_http)
                    .with_virtual_hosted_style_request(false)
                    .with_bucket_name(bucket)
                    .build()
                    .map_err(|e| store_error(e, bucket, "", "open", access))?;
                Arc::new(s3)
            }
        };
        buckets.insert(bucket.to_string(), Arc::clone(&store));
        Ok(store)
    }

    /// The bytes of object `key`, as they stream in. `pin` names the version read and, for a
    /// Map Run that resumes, the ETag the object must still have.
    pub(crate) async fn chunks(
        &self,
        bucket: &str,
        key: &str,
        pin: Pin<'_>,
        access: Access,
    ) -> Result<Chunks, ItemsError> {
        let store = self.bucket(bucket, access)?;
        let path = parse_key(bucket, key)?;
        if pin.version_id.is_some() && matches!(self.inner.config, ObjectStoreConfig::Local { .. })
        {
            return Err(ItemsError::Unsupported {
                feature: "VersionId on a local bucket",
            });
        }
        let options = GetOptions {
            version: pin.version_id.map(str::to_string),
            if_match: pin.etag.map(str::to_string),
            ..GetOptions::default()
        };
        let result = match store.get_opts(&path, options).await {
            Ok(result) => result,
            Err(object_store::Error::Precondition { .. }) => {
                return Err(ItemsError::ObjectChanged {
                    bucket: bucket.to_string(),
                    key: key.to_string(),
                    etag: pin.etag.unwrap_or_default().to_string(),
                })
            }
            Err(e) => return Err(store_error(e, bucket, key, "get", access)),
        };
        Ok(Chunks {
            etag: result.meta.e_tag.clone(),
            stream: result.into_stream(),
            bucket: bucket.to_string(),
            key: key.to_string(),
            access,
        })
    }

    /// Reads object `key` whole, refusing one larger than `WHOLE_OBJECT_SIZE_BYTES_MAX`;
    /// answers its bytes and its ETag.
    pub(crate) async fn read_whole(
        &self,
        bucket: &str,
        key: &str,
        pin: Pin<'_>,
        access: Access,
    ) -> Result<(Vec<u8>, Option<String>), ItemsError> {
        let mut chunks = self.chunks(bucket, key, pin, access).await?;
        let mut bytes = Vec::new();
        while let Some(chunk) = chunks.next().await? {
            if bytes.len() + chunk.len() > WHOLE_OBJECT_SIZE_BYTES_MAX {
                return Err(ItemsError::ObjectTooLarge {
                    bucket: bucket.to_string(),
                    key: key.to_string(),
                    size_bytes: (bytes.len() + chunk.len()) as u64,
                    limit_bytes: WHOLE_OBJECT_SIZE_BYTES_MAX,
                });
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok((bytes, chunks.etag))
    }

    /// The objects of `bucket` whose keys start with `prefix`, in key order.
    pub(crate) fn list(&self, bucket: &str, prefix: &str) -> Result<Listing, ItemsError> {
        let store = self.bucket(bucket, Access::Read)?;
        // The directory part of the prefix, which object_store lists under; the rest filters.
        let parent = match prefix.rfind('/') {
            Some(at) => &prefix[..at],
            None => "",
        };
        let parent_path = if parent.is_empty() {
            None
        } else {
            Some(parse_key(bucket, parent)?)
        };
        let source = match &self.inner.config {
            ObjectStoreConfig::Local { root } => ListSource::Local(LocalWalk::new(
                root.join(bucket),
                parent,
                &prefix[prefix.rfind('/').map_or(0, |at| at + 1)..],
            )),
            ObjectStoreConfig::S3 { .. } => ListSource::Remote(store.list(parent_path.as_ref())),
        };
        Ok(Listing {
            store,
            source,
            bucket: bucket.to_string(),
            prefix: prefix.to_string(),
        })
    }
}

/// Which state of an object to read: a version (S3), and the ETag it must have.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Pin<'a> {
    pub(crate) version_id: Option<&'a str>,
    pub(crate) etag: Option<&'a str>,
}

/// An object's bytes as they stream in.
pub(crate) struct Chunks {
    /// The object's ETag, as the store gave it.
    pub(crate) etag: Option<String>,
    stream: BoxStream<'static, object_store::Result<Bytes>>,
    bucket: String,
    key: String,
    access: Access,
}

impl Chunks {
    /// The object's bucket and key.
    pub(crate) fn location(&self) -> (&str, &str) {
        (&self.bucket, &self.key)
    }

    /// The next chunk, or `None` at the end of the object.
    pub(crate) async fn next(&mut self) -> Result<Option<Bytes>, ItemsError> {
        match self.stream.next().await {
            None => Ok(None),
            Some(Ok(chunk)) => Ok(Some(chunk)),
            Some(Err(e)) => Err(store_error(e, &self.bucket, &self.key, "get", self.access)),
        }
    }
}

/// A bucket's objects under a prefix, in key order.
pub(crate) struct Listing {
    store: Arc<dyn ObjectStore>,
    source: ListSource,
    bucket: String,
    prefix: String,
}

enum ListSource {
    /// S3 lists in key order itself.
    Remote(BoxStream<'static, object_store::Result<ObjectMeta>>),
    /// A local bucket: a walk that sorts each directory as S3 would order the keys.
    Local(LocalWalk),
}

impl Listing {
    /// The bucket listed.
    pub(crate) fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The next object, or `None` after the last.
    pub(crate) async fn next(&mut self) -> Result<Option<ObjectMeta>, ItemsError> {
        loop {
            let meta = match &mut self.source {
                ListSource::Remote(stream) => match stream.next().await {
                    None => return Ok(None),
                    Some(Ok(meta)) => meta,
                    Some(Err(e)) => {
                        return Err(store_error(
                            e,
                            &self.bucket,
                            &self.prefix,
                            "list",
                            Access::Read,
                        ))
                    }
                },
                ListSource::Local(walk) => {
                    let Some(key) = walk.next().await? else {
                        return Ok(None);
                    };
                    let Ok(path) = Path::parse(&key) else {
                        continue; // a file name no S3 key could have (never written by us)
                    };
                    match self.store.head(&path).await {
                        Ok(meta) => meta,
                        Err(object_store::Error::NotFound { .. }) => continue, // removed since
                        Err(e) => {
                            return Err(store_error(e, &self.bucket, &key, "head", Access::Read))
                        }
                    }
                }
            };
            if meta.location.as_ref().starts_with(&self.prefix) {
                return Ok(Some(meta));
            }
        }
    }
}

/// A depth-first walk of a local bucket that yields file keys in byte-wise order: within a
/// directory, entries sort by name with a directory's name followed by `/`, which is the
/// order of the full keys. It holds one directory's names per level.
struct LocalWalk {
    bucket_dir: PathBuf,
    /// Directories being walked: each one's key prefix (`a/b/`), sorted entries, next index.
    stack: Vec<WalkFrame>,
    /// Set until the first directory is read: its key prefix and the name prefix to keep.
    start: Option<(String, String)>,
}

struct WalkFrame {
    key_prefix: String,
    entries: Vec<WalkEntry>,
    next_index: usize,
}

struct WalkEntry {
    /// The name, with `/` appended for a directory (the sort key).
    sort_name: String,
    is_dir: bool,
}

impl LocalWalk {
    fn new(bucket_dir: PathBuf, parent: &str, name_prefix: &str) -> Self {
        let key_prefix = if parent.is_empty() {
            String::new()
        } else {
            format!("{parent}/")
        };
        LocalWalk {
            bucket_dir,
            stack: Vec::new(),
            start: Some((key_prefix, name_prefix.to_string())),
        }
    }

    async fn next(&mut self) -> Result<Option<String>, ItemsError> {
        if let Some((key_prefix, name_prefix)) = self.start.take() {
            let mut entries = read_sorted_dir(self.bucket_dir.join(&key_prefix)).await?;
            entries.retain(|e| e.sort_name.starts_with(&name_prefix));
            self.stack.push(WalkFrame {
                key_prefix,
                entries,
                next_index: 0,
            });
        }
        loop {
            let Some(frame) = self.stack.last_mut() else {
                return Ok(None);
            };
            let Some(entry) = frame.entries.get(frame.next_index) else {
                self.stack.pop();
                continue;
            };
            frame.next_index += 1;
            let key = format!("{}{}", frame.key_prefix, entry.sort_name);
            if !entry.is_dir {
                return Ok(Some(key));
            }
            let entries = read_sorted_dir(self.bucket_dir.join(&key)).await?;
            self.stack.push(WalkFrame {
                key_prefix: key,
                entries,
                next_index: 0,
            });
        }
    }
}

/// A directory's entries, sorted as their keys sort; a missing directory has none. Skips
/// object_store's staging files of unfinished uploads (`name#<n>`).
async fn read_sorted_dir(dir: PathBuf) -> Result<Vec<WalkEntry>, ItemsError> {
    let read = tokio::task::spawn_blocking(move || -> Result<Vec<WalkEntry>, ItemsError> {
        let listing = match std::fs::read_dir(&dir) {
            Ok(listing) => listing,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(ItemsError::LocalList { path: dir, source }),
        };
        let mut entries = Vec::new();
        for entry in listing {
            let entry = entry.map_err(|source| ItemsError::LocalList {
                path: dir.clone(),
                source,
            })?;
            let Ok(name) = entry.file_name().into_string() else {
                continue; // not UTF-8: no S3 key
            };
            if is_staging_file(&name) {
                continue;
            }
            let is_dir = std::fs::metadata(entry.path())
                .map_err(|source| ItemsError::LocalList {
                    path: entry.path(),
                    source,
                })?
                .is_dir();
            let sort_name = if is_dir { format!("{name}/") } else { name };
            entries.push(WalkEntry { sort_name, is_dir });
        }
        entries.sort_by(|a, b| a.sort_name.as_bytes().cmp(b.sort_name.as_bytes()));
        Ok(entries)
    });
    read.await
        .unwrap_or_else(|join| std::panic::resume_unwind(join.into_panic()))
}

/// Whether `name` is object_store's staging file of an unfinished local upload.
fn is_staging_file(name: &str) -> bool {
    match name.rsplit_once('#') {
        Some((_, suffix)) => !suffix.is_empty() && suffix.bytes().all(|b| b.is_ascii_digit()),
        None => false,
    }
}

/// Checks a bucket name: locally a safe directory name, over S3 a valid bucket name.
fn check_bucket_name(bucket: &str, config: &ObjectStoreConfig) -> Result<(), ItemsError> {
    let refuse = |rule| {
        Err(ItemsError::InvalidBucketName {
            bucket: bucket.to_string(),
            rule,
        })
    };
    if bucket.is_empty() {
        return refuse("it is empty");
    }
    if bucket.len() > BUCKET_NAME_LENGTH_BYTES_MAX {
        return refuse("it is longer than 255 bytes");
    }
    if bucket.starts_with('.') {
        return refuse("it starts with '.'");
    }
    if !bucket
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'_')
    {
        return refuse("only letters, digits, '.', '-' and '_' are allowed");
    }
    if matches!(config, ObjectStoreConfig::S3 { .. }) && bucket.len() > 63 {
        return refuse("an S3 bucket name has at most 63 characters");
    }
    Ok(())
}

/// A key as an object_store path; refuses keys that could escape a bucket's directory.
pub(crate) fn parse_key(bucket: &str, key: &str) -> Result<Path, ItemsError> {
    Path::parse(key)
        .and_then(|path| {
            if path.as_ref().is_empty() {
                Err(object_store::path::Error::EmptySegment {
                    path: key.to_string(),
                })
            } else {
                Ok(path)
            }
        })
        .map_err(|source| ItemsError::InvalidKey {
            bucket: bucket.to_string(),
            key: key.to_string(),
            source: Box::new(source),
        })
}

/// An object_store error as this crate's: a missing object is `NoSuchKey`.
pub(crate) fn store_error(
    error: object_store::Error,
    bucket: &str,
    key: &str,
    operation: &'static str,
    access: Access,
) -> ItemsError {
    match error {
        object_store::Error::NotFound { .. } => ItemsError::NoSuchKey {
            bucket: bucket.to_string(),
            key: key.to_string(),
            access,
        },
        source => ItemsError::Store {
            bucket: bucket.to_string(),
            key: key.to_string(),
            operation,
            access,
            source: Box::new(source),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local(root: &std::path::Path) -> ObjectStores {
        ObjectStores::open(ObjectStoreConfig::Local {
            root: root.to_path_buf(),
        })
        .expect("open")
    }

    #[test]
    fn a_missing_root_is_refused() {
        let error = ObjectStores::open(ObjectStoreConfig::Local {
            root: PathBuf::from("/nonexistent/statelog-items"),
        })
        .expect_err("no root");
        assert!(matches!(error, ItemsError::RootNotADirectory { .. }));
    }

    #[tokio::test]
    async fn unsafe_bucket_names_and_keys_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("b")).expect("bucket");
        let stores = local(dir.path());
        for bucket in ["..", "../b", "a/b", ".hidden", "", "a\\b"] {
            let error = stores.get_object(bucket, "k").await.expect_err(bucket);
            assert!(
                matches!(error, ItemsError::InvalidBucketName { .. }),
                "{bucket}: {error}"
            );
        }
        for key in ["../x", "a/../../x", "", "a//b", "./x"] {
            let error = stores.get_object("b", key).await.expect_err(key);
            assert!(
                matches!(error, ItemsError::InvalidKey { .. }),
                "{key}: {error}"
            );
        }
        let missing = stores
            .get_object("nobucket", "k")
            .await
            .expect_err("no bucket");
        assert!(matches!(
            missing,
            ItemsError::NoSuchBucket {
                access: Access::Read,
                ..
            }
        ));
        let missing = stores.get_object("b", "k").await.expect_err("no key");
        assert!(matches!(missing, ItemsError::NoSuchKey { .. }));
    }

    #[tokio::test]
    async fn put_then_get_round_trips_under_the_bucket_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("b")).expect("bucket");
        let stores = local(dir.path());
        stores
            .put_object("b", "x/y.json", b"[1]".to_vec())
            .await
            .expect("put");
        assert_eq!(
            stores.get_object("b", "x/y.json").await.expect("get"),
            b"[1]"
        );
        assert_eq!(
            std::fs::read(dir.path().join("b/x/y.json")).expect("file"),
            b"[1]"
        );
    }

    #[tokio::test]
    async fn a_local_listing_is_in_s3_key_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("b")).expect("bucket");
        let stores = local(dir.path());
        // '-' (0x2d) sorts before '/' (0x2f): "a-c" comes before "a/b" although the
        // directory "a" sorts before the file "a-c" by name alone.
        for key in ["a/b", "a-c", "a/a/z", "b", "ab"] {
            stores
                .put_object("b", key, b"x".to_vec())
                .await
                .expect("put");
        }
        let mut listing = stores.list("b", "").expect("list");
        let mut keys = Vec::new();
        while let Some(meta) = listing.next().await.expect("next") {
            keys.push(meta.location.to_string());
        }
        assert_eq!(keys, ["a-c", "a/a/z", "a/b", "ab", "b"]);
        let mut listing = stores.list("b", "a/").expect("list");
        let mut keys = Vec::new();
        while let Some(meta) = listing.next().await.expect("next") {
            keys.push(meta.location.to_string());
        }
        assert_eq!(keys, ["a/a/z", "a/b"]);
        let mut listing = stores.list("b", "a").expect("list");
        let mut count = 0;
        while listing.next().await.expect("next").is_some() {
            count += 1;
        }
        assert_eq!(count, 4, "prefix 'a' is a string prefix, as in S3");
    }
}
