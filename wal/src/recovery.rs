//! recovery: the scan run by open.
//!
//! (Filled in below.)

/// What open found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {}
