//! statelog-nats: statelog's log on NATS JetStream (issue 19). [`JetStreamLog`] implements the
//! store's log contract (`statelog_store::Log`) over one replicated stream per partition, fenced
//! by the owner's epoch (`log.rs` says how); [`Error`] is its error, mapped into the store's.
//! With feature `testing`, [`testing::TestCluster`] runs real `nats-server` processes on
//! loopback for tests.
//!
//! Must not: depend on the engine or the server; interpret payloads.

mod error;
pub mod limits;
mod log;
mod message;
#[cfg(feature = "testing")]
pub mod testing;

pub use error::Error;
pub use log::{JetStreamLog, JetStreamOptions};
