//! statelog: a durable Amazon States Language engine embedded in a Rust service.
//!
//! See `ARCHITECTURE.md` for the codemap. The pure core (`asl`, `paths`, `history`) does no I/O
//! and reads no clock.

pub mod asl;
pub mod clock;
pub mod history;
pub mod limits;
pub mod paths;
