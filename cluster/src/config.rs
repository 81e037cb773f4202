//! config: the cluster's fixed settings, written once by `statelog cluster init` into KV bucket
//! `statelog_cluster`, key `config`, and read by every node at start.
//!
//! The value is JSON `{"format":1,"partitions":N,"created_ms":MS}`. `format` is read first: a
//! format other than [`CONFIG_FORMAT`] is refused by number, so an old build never runs a
//! cluster laid out by a newer one.
//!
//! Invariants: the config is written with create-only semantics, so the partition count never
//! changes once a cluster exists (changing it would move every execution).
//! Must not: overwrite or delete an existing config.

use async_nats::jetstream::kv;
use serde::{Deserialize, Serialize};

use crate::buckets::{self, CONFIG_BUCKET, LEASES_BUCKET, NODES_BUCKET};
use crate::error::Error;
use crate::limits::REQUEST_TIMEOUT_MS;
use crate::partition::check_count;

/// The key of the config in [`CONFIG_BUCKET`].
pub const CONFIG_KEY: &str = "config";

/// The config format this build writes and reads.
pub const CONFIG_FORMAT: u64 = 1;

/// The cluster's fixed settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterConfig {
    /// [`CONFIG_FORMAT`].
    pub format: u64,
    /// The partition count, 1..=[`crate::limits::PARTITIONS_MAX`].
    pub partitions: u32,
    /// When it was created, milliseconds since the Unix epoch (wall clock; informational).
    pub created_ms: u64,
}

/// What `init` did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InitOutcome {
    /// The cluster was created with this config.
    Created(ClusterConfig),
    /// The cluster already had this config, with the partition count asked for.
    AlreadyInitialized(ClusterConfig),
}

impl InitOutcome {
    /// The cluster's config, either way.
    pub fn config(&self) -> &ClusterConfig {
        match self {
            Self::Created(config) | Self::AlreadyInitialized(config) => config,
        }
    }
}

/// Decodes a config entry: the format first, then the fields.
pub fn decode_config(bytes: &[u8]) -> Result<ClusterConfig, Error> {
    #[derive(Deserialize)]
    struct Format {
        format: u64,
    }
    let format: Format = buckets::decode(CONFIG_BUCKET, CONFIG_KEY, bytes)?;
    if format.format != CONFIG_FORMAT {
        return Err(Error::ConfigFormat {
            format: format.format,
            supported: CONFIG_FORMAT,
        });
    }
    let config: ClusterConfig = buckets::decode(CONFIG_BUCKET, CONFIG_KEY, bytes)?;
    check_count(config.partitions).map_err(|error| Error::EntryCorrupt {
        bucket: CONFIG_BUCKET,
        key: CONFIG_KEY.to_owned(),
        reason: error.to_string(),
    })?;
    Ok(config)
}

fn now_wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Creates the cluster at `urls` with `partitions` partitions: the three buckets, then the
/// config, create-only. The same count again answers [`InitOutcome::AlreadyInitialized`];
/// another count is [`Error::AlreadyInitialized`] naming both.
pub async fn init(urls: &[String], partitions: u32) -> Result<InitOutcome, Error> {
    check_count(partitions)?;
    let client = buckets::connect(urls).await?;
    init_with(&client, partitions).await
}

/// [`init`] over a connected client.
pub async fn init_with(client: &async_nats::Client, partitions: u32) -> Result<InitOutcome, Error> {
    check_count(partitions)?;
    let store = buckets::open_or_create(client, CONFIG_BUCKET, REQUEST_TIMEOUT_MS).await?;
    // The node and lease buckets are made here too, so their replica count is decided once.
    buckets::open_or_create(client, NODES_BUCKET, REQUEST_TIMEOUT_MS).await?;
    buckets::open_or_create(client, LEASES_BUCKET, REQUEST_TIMEOUT_MS).await?;
    let config = ClusterConfig {
        format: CONFIG_FORMAT,
        partitions,
        created_ms: now_wall_ms(),
    };
    let created = buckets::bounded(
        CONFIG_BUCKET,
        || "create config".to_owned(),
        REQUEST_TIMEOUT_MS,
        store.create(CONFIG_KEY, buckets::encode(&config).into()),
    )
    .await?;
    match created {
        Ok(_) => Ok(InitOutcome::Created(config)),
        Err(error) if error.kind() == kv::CreateErrorKind::AlreadyExists => {
            let existing = read(&store).await?.ok_or(Error::NotInitialized)?;
            if existing.partitions == partitions {
                Ok(InitOutcome::AlreadyInitialized(existing))
            } else {
                Err(Error::AlreadyInitialized {
                    existing: existing.partitions,
                    requested: partitions,
                })
            }
        }
        Err(error) => Err(Error::Bucket {
            bucket: CONFIG_BUCKET,
            operation: "create config".to_owned(),
            source: Box::new(error),
        }),
    }
}

/// Reads the cluster config at `urls`.
pub async fn load(urls: &[String]) -> Result<ClusterConfig, Error> {
    let client = buckets::connect(urls).await?;
    load_with(&client).await
}

/// [`load`] over a connected client.
pub async fn load_with(client: &async_nats::Client) -> Result<ClusterConfig, Error> {
    let context = async_nats::jetstream::new(client.clone());
    let opened = buckets::bounded(
        CONFIG_BUCKET,
        || "open bucket".to_owned(),
        REQUEST_TIMEOUT_MS,
        context.get_key_value(CONFIG_BUCKET),
    )
    .await?;
    // No bucket is the same answer as no key: nobody ran init.
    let Ok(store) = opened else {
        return Err(Error::NotInitialized);
    };
    read(&store).await?.ok_or(Error::NotInitialized)
}

async fn read(store: &kv::Store) -> Result<Option<ClusterConfig>, Error> {
    let entry = buckets::bounded(
        CONFIG_BUCKET,
        || "read config".to_owned(),
        REQUEST_TIMEOUT_MS,
        store.get(CONFIG_KEY),
    )
    .await?
    .map_err(|error| Error::Bucket {
        bucket: CONFIG_BUCKET,
        operation: "read config".to_owned(),
        source: Box::new(error),
    })?;
    entry.map(|bytes| decode_config(&bytes)).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_round_trips() {
        let config = ClusterConfig {
            format: 1,
            partitions: 16,
            created_ms: 1_700_000_000_000,
        };
        let bytes = buckets::encode(&config);
        assert_eq!(
            std::str::from_utf8(&bytes).expect("json"),
            r#"{"format":1,"partitions":16,"created_ms":1700000000000}"#
        );
        assert_eq!(decode_config(&bytes).expect("decodes"), config);
    }

    #[test]
    fn a_higher_format_is_refused_by_number() {
        let bytes = br#"{"format":2,"partitions":16,"created_ms":0,"shards":[1]}"#;
        match decode_config(bytes) {
            Err(Error::ConfigFormat { format, supported }) => {
                assert_eq!(format, 2);
                assert_eq!(supported, 1);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn broken_configs_are_typed_errors() {
        for bytes in [
            &b"not json"[..],
            br#"{"partitions":16}"#,
            br#"{"format":1,"partitions":0,"created_ms":0}"#,
            br#"{"format":1,"partitions":16,"created_ms":0,"extra":true}"#,
        ] {
            match decode_config(bytes) {
                Err(Error::EntryCorrupt { bucket, key, .. }) => {
                    assert_eq!(bucket, CONFIG_BUCKET);
                    assert_eq!(key, CONFIG_KEY);
                }
                other => panic!("{:?}: {other:?}", String::from_utf8_lossy(bytes)),
            }
        }
        let big = vec![b' '; crate::limits::ENTRY_BYTES_MAX + 1];
        assert!(matches!(
            decode_config(&big),
            Err(Error::EntryTooLarge { .. })
        ));
    }
}
