//! cluster: what `statelog serve` needs to run as one node of a cluster (issue 19).
//!
//! - [`host`]: one engine per partition this node owns, opened and closed by the lease
//!   driver's `Ownership` events, each over its partition's log.
//! - [`route`]: which partition a call touches (pure: operation, body, partition count).
//! - [`forward`]: node-to-node calls over NATS request/reply, retried on `NotOwner`.
//! - [`jetstream`]: the host's [`host::LogFactory`] on a real cluster: partition `i` is the
//!   JetStream stream `statelog_p<i>`, opened at the lease's epoch.
//! - [`backend`]: [`backend::ClusterBackend`], the server's `Backend` on a node: each call
//!   placed by [`route`], answered here or forwarded; spanning calls asked of every partition.
//! - [`listing`]: a cluster-wide `ListExecutions` merged from every partition's page.
//! - [`serve`]: a node put together for `statelog serve --nats` ([`serve::start_node`]).
//!
//! Lives in the root crate, not in `statelog-cluster` (that crate must not depend on the
//! engine or the server) and not under `src/server/` (the server names only the engine's API;
//! a node composes partition logs and engines, the layer below it).

pub mod backend;
pub mod forward;
pub mod host;
pub mod jetstream;
pub mod listing;
pub mod route;
pub mod serve;
