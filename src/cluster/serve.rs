//! serve: one `statelog serve --nats` node put together: the NATS connection, the cluster's
//! config, the partition host over JetStream streams, the lease driver, the
//! [`ClusterBackend`] and the responder that answers other nodes' forwarded calls.
//!
//! Invariants: the node registers the address it serves the API on (the listener is bound
//! first); a forwarded call for a partition this node does not own is answered `NotOwner` and
//! never run; a forwarded call is run by the same dispatch as a client's
//! ([`router::dispatch_here`]), so its answer is the one this node would give its own client.
//! Must not: start without the cluster's config (`statelog cluster init` first).

use std::path::PathBuf;
use std::sync::Arc;

use statelog_cluster::node::{Node, NodeOptions};
use statelog_cluster::partition::PartitionIndex;

use super::backend::{ClusterBackend, ClusterBackendOptions};
use super::forward::{Answering, ForwardedAnswer, ForwardedCall, Responder};
use super::host::{LogFactory, OptionsFor, PartitionHost};
use super::jetstream::JetStreamLogFactory;
use crate::clock::Clock;
use crate::engine::EngineOptions;
use crate::server::backend::{CallName, Caller};
use crate::server::{router, Credentials, ServerState};

/// How a node joins.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// NATS server URLs.
    pub nats: Vec<String>,
    /// This node's name (unique in the cluster).
    pub node: String,
    /// The address the API is served on, as other nodes and operators should read it.
    pub listen: String,
    /// The node's directory for local files.
    pub data_dir: PathBuf,
    /// The lease length (ms).
    pub lease_ms: u64,
    /// Replicas of each partition's stream.
    pub replicas: usize,
    /// The options every partition's engine opens with (clock, region, quotas).
    pub engine_options: EngineOptions,
}

/// Why a node did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NodeError {
    /// NATS, the cluster's config or the lease driver refused.
    #[error(transparent)]
    Cluster(#[from] statelog_cluster::Error),
    /// The responder could not subscribe to its subject.
    #[error("cannot subscribe to the node's call subject: {0}")]
    Subscribe(#[from] async_nats::SubscribeError),
    /// The lease driver's runtime cannot be made.
    #[error("cannot start the lease driver's runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The lease driver's start did not finish (it panicked).
    #[error("the lease driver did not start: {0}")]
    LeaseDriver(String),
    /// The data directory cannot be made.
    #[error("cannot create the data directory {path}: {source}")]
    DataDir {
        /// The directory.
        path: PathBuf,
        /// The OS's error.
        #[source]
        source: std::io::Error,
    },
}

/// Starts a node on the current tokio runtime (multi-threaded): it joins the cluster and
/// answers forwarded calls; the returned state serves the API, with `credentials` (whose one
/// account is `config.engine_options.account`) or in development mode.
pub async fn start_node(
    config: NodeConfig,
    clock: Arc<dyn Clock>,
    credentials: Option<Credentials>,
) -> Result<Arc<ServerState<ClusterBackend>>, NodeError> {
    std::fs::create_dir_all(&config.data_dir).map_err(|source| NodeError::DataDir {
        path: config.data_dir.clone(),
        source,
    })?;
    let client = statelog_cluster::buckets::connect(&config.nats).await?;
    let cluster = statelog_cluster::config::load_with(&client).await?;
    // Each partition's log runs its client on a runtime of its own: the engine blocks its
    // calling thread on a log call (`JetStreamLog` waits on a channel), and a server worker
    // that does so must not be one the log's client needs.
    let factory: Arc<dyn LogFactory> = Arc::new(JetStreamLogFactory::new(
        config.nats.clone(),
        config.replicas,
    ));
    let engine_options = config.engine_options.clone();
    let options: Arc<OptionsFor> = Arc::new(move |_| engine_options.clone());
    let host = PartitionHost::new(factory, options);
    let mut node_options = NodeOptions::new(config.node.clone(), config.listen.clone());
    node_options.lease_ms = config.lease_ms;
    // The lease driver runs on a runtime of its own: engine calls that wait on a stream (a
    // sync before a read, a commit during a leader election) must never hold up a renewal,
    // or a loaded node loses its leases while it still serves.
    let lease_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("statelog-lease")
        .enable_all()
        .build()
        .map_err(NodeError::Runtime)?;
    let sink: Arc<PartitionHost> = Arc::new(host.clone());
    let lease_client = client.clone();
    let node = lease_runtime
        .spawn(async move { Node::start(lease_client, node_options, sink).await })
        .await
        .map_err(|error| NodeError::LeaseDriver(error.to_string()))??;
    let backend = ClusterBackend::new(
        ClusterBackendOptions {
            region: config.engine_options.region.clone(),
            node: config.node.clone(),
            partitions: cluster.partitions,
            data_dir: config.data_dir.clone(),
            engine_options: config.engine_options.clone(),
        },
        host,
        client.clone(),
        node.owners_watch(),
        node.held_until_watch(),
    );
    let state = ServerState::new(backend.clone(), credentials, clock);
    let handler_state = state.clone();
    let handler = move |call: ForwardedCall| -> Answering {
        let state = handler_state.clone();
        Box::pin(async move { answer_forwarded(&state, call).await })
    };
    let responder = Responder::start(client, &config.node, Arc::new(handler)).await?;
    backend.attach(node, responder, lease_runtime);
    Ok(state)
}

/// Runs a call another node forwarded here.
async fn answer_forwarded(
    state: &ServerState<ClusterBackend>,
    call: ForwardedCall,
) -> ForwardedAnswer {
    let backend = &state.backend;
    if let Some(partition) = call.partition {
        if !backend.answers_for(PartitionIndex(partition)) {
            return ForwardedAnswer::NotOwner { partition };
        }
    }
    let result = if ClusterBackend::is_internal(&call.operation) {
        backend.answer_internal(&call).await
    } else {
        match CallName::from_name(&call.operation) {
            Some(name) => {
                let caller = Caller {
                    account_id: call.account_id.clone(),
                    region: call.region.clone(),
                    access_key_id: call.access_key_id.clone(),
                };
                router::dispatch_here(state, &caller, name, call.input.as_bytes()).await
            }
            None => Err(crate::server::Error::UnknownOperation {
                target: call.operation.clone(),
            }),
        }
    };
    match result {
        Ok(value) => ForwardedAnswer::Output {
            output: value.to_string(),
        },
        // The partition moved while the call ran: the sender asks the new owner.
        Err(crate::server::Error::PartitionUnavailable { partition, .. })
            if call.partition == Some(partition) =>
        {
            ForwardedAnswer::NotOwner { partition }
        }
        Err(error) => {
            if let crate::server::Error::Internal { detail } = &error {
                tracing::error!(operation = %call.operation, %detail, "forwarded call failed");
            }
            ForwardedAnswer::Error {
                aws_name: error.wire_type(),
                message: error.to_string(),
                status: error.status().as_u16(),
                resource_name: error.resource_name().map(str::to_owned),
            }
        }
    }
}
