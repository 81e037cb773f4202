//! The test cluster itself: real servers start, answer, die and come back, and none is left.
//!
//! Scenario guarded: every JetStream test stands on `statelog_nats::testing`; a cluster that
//! leaves processes behind or reports ready before JetStream has a leader breaks them all.

use statelog_nats::testing::TestCluster;

/// Whether a process with this pid exists.
fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn a_cluster_starts_kills_restarts_and_leaves_no_process() {
    let Some(mut cluster) = TestCluster::start_or_skip(3) else {
        return;
    };
    assert_eq!(cluster.len(), 3);
    assert_eq!(cluster.running_urls().len(), 3);
    let pids = cluster.pids();
    assert_eq!(pids.len(), 3);
    assert!(pids.iter().all(|pid| alive(*pid)));
    cluster.kill(1);
    assert!(!alive(pids[1]), "a killed server is reaped");
    assert_eq!(cluster.running_urls().len(), 2);
    cluster
        .wait_ready()
        .expect("two of three still have a meta leader");
    cluster.restart(1).expect("restarts");
    cluster.wait_ready().expect("ready again");
    let after = cluster.pids();
    assert_eq!(after.len(), 3);
    drop(cluster);
    for pid in after {
        assert!(!alive(pid), "server {pid} outlived its cluster");
    }
}
