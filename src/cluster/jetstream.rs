//! jetstream: the [`LogFactory`] of a real cluster, one [`JetStreamLog`] per partition.
//!
//! Partition `i` is the stream `statelog_p<i>` (subject `statelog_p<i>.log`, the names of
//! `docs/cluster-ownership.md`), created by its first owner's open. The epoch the lease gives
//! is the log's epoch ([`JetStreamOptions::epoch`]): the open replays the stream, refuses an
//! epoch below the stream's last takeover marker, and writes this owner's takeover, after which
//! every append of an older owner is refused by the servers (`store::Error::Fenced`).
//!
//! Must not: cache logs across opens (each acquisition is a new epoch, so a new log); decide
//! who owns what (the lease driver does).

use std::sync::Arc;

use statelog_cluster::partition::PartitionIndex;
use statelog_nats::{JetStreamLog, JetStreamOptions};

use crate::cluster::host::LogFactory;
use crate::server::limits::{CLUSTER_LOG_ACK_TIMEOUT_MS, CLUSTER_LOG_REQUEST_TIMEOUT_MS};
use crate::store::{self, Log};

/// The name of partition `partition`'s stream: `statelog_p<index>`.
pub fn stream_name(partition: PartitionIndex) -> String {
    format!("statelog_p{}", partition.0)
}

/// Opens each partition's log on a JetStream stream of the cluster at `urls`.
#[derive(Debug, Clone)]
pub struct JetStreamLogFactory {
    urls: Vec<String>,
    replicas: usize,
    runtime: Option<tokio::runtime::Handle>,
}

impl JetStreamLogFactory {
    /// Logs on the servers at `urls` (any of them; the client fails over), streams created
    /// with `replicas` replicas (3 in production; an existing stream keeps its own). Each log
    /// runs its client on a small runtime of its own.
    pub fn new(urls: Vec<String>, replicas: usize) -> Self {
        Self {
            urls,
            replicas,
            runtime: None,
        }
    }

    /// Runs every log's client on `runtime` instead (the caller keeps it running while logs
    /// are open).
    pub fn with_runtime(mut self, runtime: tokio::runtime::Handle) -> Self {
        self.runtime = Some(runtime);
        self
    }

    /// The options partition `partition` is opened with at `epoch`.
    pub fn options(&self, partition: PartitionIndex, epoch: u64) -> JetStreamOptions {
        let mut options = JetStreamOptions::new(self.urls.clone(), stream_name(partition), epoch);
        options.replicas = self.replicas;
        options.runtime = self.runtime.clone();
        options.ack_timeout_ms = CLUSTER_LOG_ACK_TIMEOUT_MS;
        options.request_timeout_ms = CLUSTER_LOG_REQUEST_TIMEOUT_MS;
        options
    }
}

impl LogFactory for JetStreamLogFactory {
    /// Opens (creating when absent) the stream, replays it and takes it over at `epoch`. A
    /// stale epoch is `store::Error::Fenced`; bad options, an unreachable cluster or a stream
    /// error are `store::Error::Replicated` naming the stream and the cause.
    fn open(&self, partition: PartitionIndex, epoch: u64) -> Result<Arc<dyn Log>, store::Error> {
        let log = JetStreamLog::open(self.options(partition, epoch))?;
        Ok(Arc::new(log))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_map_to_the_documented_stream_names() {
        assert_eq!(stream_name(PartitionIndex(0)), "statelog_p0");
        assert_eq!(stream_name(PartitionIndex(1023)), "statelog_p1023");
        let factory = JetStreamLogFactory::new(vec!["nats://127.0.0.1:4222".into()], 1);
        let options = factory.options(PartitionIndex(7), 42);
        assert_eq!(options.stream, "statelog_p7");
        assert_eq!(options.subject, "statelog_p7.log");
        assert_eq!(options.epoch, 42);
        assert_eq!(options.replicas, 1);
        assert_eq!(options.urls, vec!["nats://127.0.0.1:4222".to_string()]);
    }

    #[test]
    fn bad_options_are_a_typed_error_not_a_panic() {
        // Epoch 0 is refused by the log's option check before any connection is made.
        let factory = JetStreamLogFactory::new(vec!["nats://127.0.0.1:1".into()], 3);
        match factory.open(PartitionIndex(0), 0) {
            Err(store::Error::Replicated { cause, .. }) => {
                let text = cause.to_string();
                assert!(text.contains("epoch"), "{text}");
            }
            other => panic!("{other:?}"),
        }
        let factory = JetStreamLogFactory::new(Vec::new(), 3);
        match factory.open(PartitionIndex(0), 1) {
            Err(store::Error::Replicated { cause, .. }) => {
                assert!(cause.to_string().contains("urls"), "{cause}");
            }
            other => panic!("{other:?}"),
        }
    }
}
