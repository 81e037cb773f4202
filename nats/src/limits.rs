//! limits: every bound of the JetStream log, named.

/// How long [`crate::testing::TestCluster`] waits for JetStream to have a meta leader after
/// starting its servers.
pub const TEST_CLUSTER_READY_MS_MAX: u64 = 30_000;
