//! statelog-cluster: the pieces of a statelog cluster that sit beside the log (issue 19).
//!
//! - [`partition`]: which partition an execution or an SWF run lives in (a fixed format).
//! - [`config`]: the cluster's fixed settings in NATS KV, written once by `init`.
//! - [`lease`]: who should own which partition, as a pure decision over what a node has seen.
//! - [`node`]: the NATS driver of that decision: registry heartbeats, lease writes by
//!   compare-and-set, and [`node::Ownership`] events for the layer that opens engines.
//!
//! Must not: depend on the engine or the server (they depend on this); decide safety (that is
//! the log's fence: a lease only says who should try).

pub mod buckets;
pub mod config;
pub mod error;
pub mod lease;
pub mod limits;
pub mod node;
pub mod partition;

pub use error::Error;
