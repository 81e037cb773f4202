//! statelog: a durable Amazon States Language engine embedded in a Rust service.
//!
//! See `ARCHITECTURE.md` for the codemap. The pure core (`asl`, `paths`, `history`,
//! `interpreter`) does no I/O and reads no clock; `store` binds histories to the WAL; `engine` is
//! the public API that wires it all.

pub mod asl;
pub mod clock;
pub mod engine;
pub mod history;
pub mod interpreter;
pub mod limits;
pub mod paths;
#[cfg(feature = "server")]
pub mod server;
pub mod store;
