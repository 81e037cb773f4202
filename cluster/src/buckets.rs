//! buckets: the cluster's three NATS KV buckets, their names, and the shared helpers that open
//! them, bound each request in time and decode their JSON entries.
//!
//! - `statelog_cluster`, key `config`: the cluster config ([`crate::config`]).
//! - `statelog_nodes`, key `<node name>`: one live node's registry entry ([`crate::node`]).
//! - `statelog_leases`, key `p<index>`: one partition's lease ([`crate::lease`]).
//!
//! Each bucket keeps one value per key (history 1) on file storage, with three replicas when
//! the NATS cluster has three servers or more, else one per server.
//!
//! Must not: write anything but through the create-only and compare-and-set calls the callers
//! choose; parse an entry over [`ENTRY_BYTES_MAX`].

use std::future::Future;
use std::time::Duration;

use async_nats::jetstream::{self, kv};
use serde::de::DeserializeOwned;

use crate::error::{ClientError, Error};
use crate::limits::{BUCKET_REPLICAS_MAX, CONNECT_TIMEOUT_MS, ENTRY_BYTES_MAX};

/// The bucket of the cluster config.
pub const CONFIG_BUCKET: &str = "statelog_cluster";
/// The bucket of the node registry.
pub const NODES_BUCKET: &str = "statelog_nodes";
/// The bucket of the partition leases.
pub const LEASES_BUCKET: &str = "statelog_leases";

/// Connects to NATS at any of `urls`.
pub async fn connect(urls: &[String]) -> Result<async_nats::Client, Error> {
    if urls.is_empty() {
        return Err(Error::NoUrls);
    }
    let joined = urls.join(",");
    let mut addresses = Vec::with_capacity(urls.len());
    for url in urls {
        let address: async_nats::ServerAddr = url.parse().map_err(|error| Error::Connect {
            urls: joined.clone(),
            source: Box::new(error) as ClientError,
        })?;
        addresses.push(address);
    }
    async_nats::ConnectOptions::new()
        .connection_timeout(Duration::from_millis(CONNECT_TIMEOUT_MS))
        .connect(addresses)
        .await
        .map_err(|error| Error::Connect {
            urls: joined,
            source: Box::new(error),
        })
}

/// How many replicas a bucket gets on the cluster `client` is connected to: three when it has
/// three servers or more, else one per server. The server count is the distinct client URLs
/// the server advertises for its cluster (its own among them), at least one.
pub fn replicas_for(client: &async_nats::Client) -> usize {
    let info = client.server_info();
    let mut urls: Vec<&str> = info.connect_urls.iter().map(String::as_str).collect();
    urls.sort_unstable();
    urls.dedup();
    urls.len().clamp(1, BUCKET_REPLICAS_MAX)
}

/// Runs one KV request, bounded by `timeout_ms`.
pub async fn bounded<T, E, F>(
    bucket: &'static str,
    operation: impl Fn() -> String,
    timeout_ms: u64,
    request: F,
) -> Result<Result<T, E>, Error>
where
    F: Future<Output = Result<T, E>>,
{
    tokio::time::timeout(Duration::from_millis(timeout_ms), request)
        .await
        .map_err(|_| Error::TimedOut {
            bucket,
            operation: operation(),
            timeout_ms,
        })
}

/// Opens bucket `name`, creating it (history 1, file storage, [`replicas_for`] replicas) when
/// it does not exist.
pub async fn open_or_create(
    client: &async_nats::Client,
    name: &'static str,
    timeout_ms: u64,
) -> Result<kv::Store, Error> {
    let context = jetstream::new(client.clone());
    let opened = bounded(
        name,
        || "open bucket".to_owned(),
        timeout_ms,
        context.get_key_value(name),
    )
    .await?;
    if let Ok(store) = opened {
        return Ok(store);
    }
    let config = kv::Config {
        bucket: name.to_owned(),
        history: 1,
        num_replicas: replicas_for(client),
        storage: jetstream::stream::StorageType::File,
        max_value_size: i32::try_from(ENTRY_BYTES_MAX).expect("a small limit"),
        ..Default::default()
    };
    let created = bounded(
        name,
        || "create bucket".to_owned(),
        timeout_ms,
        context.create_key_value(config),
    )
    .await?;
    match created {
        Ok(store) => Ok(store),
        // Another process may have created it between the two calls: open what is there.
        Err(create_error) => bounded(
            name,
            || "open bucket".to_owned(),
            timeout_ms,
            context.get_key_value(name),
        )
        .await?
        .map_err(|_| Error::Bucket {
            bucket: name,
            operation: "create bucket".to_owned(),
            source: Box::new(create_error),
        }),
    }
}

/// Decodes a JSON entry of `bucket`/`key`, refusing one over [`ENTRY_BYTES_MAX`].
pub fn decode<T: DeserializeOwned>(
    bucket: &'static str,
    key: &str,
    bytes: &[u8],
) -> Result<T, Error> {
    if bytes.len() > ENTRY_BYTES_MAX {
        return Err(Error::EntryTooLarge {
            bucket,
            key: key.to_owned(),
            size_bytes: bytes.len(),
            limit_bytes: ENTRY_BYTES_MAX,
        });
    }
    serde_json::from_slice(bytes).map_err(|error| Error::EntryCorrupt {
        bucket,
        key: key.to_owned(),
        reason: error.to_string(),
    })
}

/// Encodes an entry as JSON.
pub fn encode<T: serde::Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).expect("cluster entries are plain structs that always serialize")
}
