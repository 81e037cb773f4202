//! statelog: a durable Amazon States Language engine embedded in a Rust service.
//!
//! See `ARCHITECTURE.md` for the codemap. The layers are crates: the pure core
//! (`statelog-core`: `asl`, `paths`, `history`, `interpreter`) does no I/O and reads no clock;
//! `statelog-store` binds histories to the WAL (`statelog-wal`); `statelog-engine` is the public
//! API that wires it all. This crate re-exports them under their old paths and adds the server
//! and the command line.

pub use statelog_core::{asl, history, interpreter, paths};
pub use statelog_engine as engine;
pub use statelog_engine::clock;
pub use statelog_store as store;

/// One node of a cluster (issue 19): engines per owned partition, call routing, forwarding.
/// Beside the server, not in it: a node composes partition logs and engines, below the API.
#[cfg(all(feature = "server", feature = "cluster"))]
pub mod cluster;
#[cfg(test)]
mod layering_tests;
pub mod limits;
#[cfg(feature = "server")]
pub mod server;
