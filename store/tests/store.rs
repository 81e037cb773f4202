//! The store crate's one integration-test binary. Each module guards one seam of the crate
//! from outside it, through the public API only.

#[path = "store/log_contract.rs"]
mod log_contract;
