//! Partition ownership against a real 3-server NATS cluster: nodes split the partitions, a
//! crashed node's partitions move to the survivor within the takeover bound, a node whose lease
//! is taken by compare-and-set is told at once, a clean stop hands over by release, and every
//! takeover has a larger epoch than the ownership before it.
//!
//! Scenario guarded: one owner per partition (liveness) and growing epochs (the log's fence
//! rests on them). Leases are 600 ms here so the suite is quick; the rules scale with the lease.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream;
use statelog_cluster::buckets::LEASES_BUCKET;
use statelog_cluster::config;
use statelog_cluster::lease::LostReason;
use statelog_cluster::limits::TAKEOVER_MS_MAX;
use statelog_cluster::node::{Node, NodeOptions, Ownership};
use statelog_cluster::partition::PartitionIndex;
use statelog_nats::testing::TestCluster;
use tokio::sync::mpsc;

/// The tests' lease: short so takeovers are quick, long enough that a KV round trip on a
/// loaded 2-core CI machine (its request timeout is a tenth of it) does not lose a lease.
const TEST_LEASE_MS: u64 = 2_000;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// Every node's events, tagged with its name, in delivery order.
type Events = mpsc::UnboundedReceiver<(String, Ownership)>;

async fn start_node(
    cluster: &TestCluster,
    server: usize,
    name: &str,
    lease_ms: u64,
    events: &mpsc::UnboundedSender<(String, Ownership)>,
) -> Node {
    let client = async_nats::connect(cluster.url(server))
        .await
        .expect("connect");
    let mut options = NodeOptions::new(name, format!("127.0.0.1:{}", 9_000 + server));
    options.lease_ms = lease_ms;
    let sender = events.clone();
    let tag = name.to_owned();
    let sink = move |event: Ownership| {
        // The receiver lives as long as the test.
        let _ = sender.send((tag.clone(), event));
    };
    Node::start(client, options, Arc::new(sink))
        .await
        .expect("node starts")
}

/// Waits until `node` owns `count` partitions, at most `TAKEOVER_MS_MAX`.
async fn wait_owned(node: &Node, count: usize) -> BTreeMap<PartitionIndex, u64> {
    let mut owned = node.owned_watch();
    let waited = tokio::time::timeout(
        Duration::from_millis(TAKEOVER_MS_MAX),
        owned.wait_for(|owned| owned.len() == count),
    )
    .await;
    match waited {
        Ok(Ok(owned)) => owned.clone(),
        _ => panic!(
            "{} owns {:?}, not {count} partitions, after {TAKEOVER_MS_MAX} ms",
            node.name(),
            node.owned()
        ),
    }
}

/// Drains the events delivered so far.
fn drain(events: &mut Events) -> Vec<(String, Ownership)> {
    let mut drained = Vec::new();
    while let Ok(event) = events.try_recv() {
        drained.push(event);
    }
    drained
}

/// Every partition's acquisitions, in delivery order, have strictly growing epochs, and
/// ownership alternates acquire / lose per node.
fn check_epochs(history: &[(String, Ownership)]) {
    let mut last: BTreeMap<PartitionIndex, u64> = BTreeMap::new();
    for (node, event) in history {
        if let Ownership::Acquired { partition, epoch } = event {
            if let Some(previous) = last.insert(*partition, *epoch) {
                assert!(
                    *epoch > previous,
                    "{node} acquired {partition} at epoch {epoch} after epoch {previous}"
                );
            }
        }
    }
}

#[test]
fn two_nodes_split_and_the_survivor_of_a_crash_owns_all() {
    let Some(cluster) = TestCluster::start_or_skip(3) else {
        return;
    };
    runtime().block_on(async {
        config::init(&cluster.urls(), 8).await.expect("init");
        let (sender, mut events) = mpsc::unbounded_channel();
        let mut history = Vec::new();

        let a = start_node(&cluster, 0, "a", TEST_LEASE_MS, &sender).await;
        let alone = wait_owned(&a, 8).await;
        assert_eq!(alone.keys().map(|p| p.0).collect::<Vec<_>>(), (0..8).collect::<Vec<_>>());

        let b = start_node(&cluster, 1, "b", TEST_LEASE_MS, &sender).await;
        let owned_b = wait_owned(&b, 4).await;
        let owned_a = wait_owned(&a, 4).await;
        assert!(owned_a.keys().all(|partition| !owned_b.contains_key(partition)));
        // a released its highest four, and said so before b took them.
        assert_eq!(owned_a.keys().map(|p| p.0).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
        history.extend(drain(&mut events));
        for index in 4..8 {
            let lost = history.iter().position(|(node, event)| {
                node == "a"
                    && *event
                        == Ownership::Lost {
                            partition: PartitionIndex(index),
                            reason: LostReason::Released,
                        }
            });
            let taken = history.iter().position(|(node, event)| {
                node == "b"
                    && matches!(event, Ownership::Acquired { partition, .. } if partition.0 == index)
            });
            assert!(lost.is_some() && taken.is_some() && lost < taken, "p{index}: {history:?}");
        }

        // a crashes: nothing released; b owns all once a's leases run out.
        let crashed = Instant::now();
        a.abort();
        let all = wait_owned(&b, 8).await;
        let takeover_ms = crashed.elapsed().as_millis();
        println!("takeover of 4 partitions after a crash: {takeover_ms} ms (lease {TEST_LEASE_MS} ms)");
        history.extend(drain(&mut events));
        for index in 0..4 {
            let epoch = all[&PartitionIndex(index)];
            assert!(epoch > owned_a[&PartitionIndex(index)], "p{index}");
        }
        check_epochs(&history);
        b.shutdown().await;
    });
}

#[test]
fn a_node_whose_lease_is_taken_is_told_at_once_and_takes_it_back_with_a_larger_epoch() {
    let Some(cluster) = TestCluster::start_or_skip(3) else {
        return;
    };
    runtime().block_on(async {
        config::init(&cluster.urls(), 2).await.expect("init");
        let (sender, mut events) = mpsc::unbounded_channel();
        // A long lease: the loss below cannot be the renew deadline.
        let lease_ms = 5_000;
        let a = start_node(&cluster, 0, "a", lease_ms, &sender).await;
        let owned = wait_owned(&a, 2).await;
        let before = owned[&PartitionIndex(1)];

        // Another writer takes p1 by compare-and-set, as a node that judged a gone would.
        let client = async_nats::connect(cluster.url(2)).await.expect("connect");
        let store = jetstream::new(client)
            .get_key_value(LEASES_BUCKET)
            .await
            .expect("bucket");
        let taken_revision = loop {
            let entry = store.entry("p1").await.expect("read").expect("a lease");
            let value = br#"{"node":"intruder","renewed":0}"#.to_vec();
            if let Ok(revision) = store.update("p1", value.into(), entry.revision).await {
                break revision;
            }
        };
        let taken_at = Instant::now();
        let lost = loop {
            let (node, event) =
                tokio::time::timeout(Duration::from_millis(lease_ms), events.recv())
                    .await
                    .expect("an event before a's lease would run out")
                    .expect("the channel is open");
            if matches!(event, Ownership::Lost { .. }) {
                break (node, event);
            }
        };
        println!(
            "loss reported {} ms after the take",
            taken_at.elapsed().as_millis()
        );
        match lost {
            (node, Ownership::Lost { partition, reason }) => {
                assert_eq!(node, "a");
                assert_eq!(partition, PartitionIndex(1));
                // Seen on the watch, or refused at the next renewal: never a lapse.
                assert!(
                    matches!(reason, LostReason::Taken | LostReason::RenewRefused),
                    "{reason:?}"
                );
            }
            other => panic!("{other:?}"),
        }
        let left = wait_owned(&a, 1).await;
        assert_eq!(left.keys().map(|p| p.0).collect::<Vec<_>>(), vec![0]);

        // The intruder never renews: a takes p1 back after a lease, with a larger epoch.
        let back = wait_owned(&a, 2).await;
        let epoch = back[&PartitionIndex(1)];
        assert!(
            epoch > taken_revision && taken_revision > before,
            "{before} {taken_revision} {epoch}"
        );
        a.shutdown().await;
    });
}

#[test]
fn a_clean_stop_releases_every_partition_to_the_others() {
    let Some(cluster) = TestCluster::start_or_skip(3) else {
        return;
    };
    runtime().block_on(async {
        config::init(&cluster.urls(), 4).await.expect("init");
        let (sender, mut events) = mpsc::unbounded_channel();
        let a = start_node(&cluster, 0, "a", TEST_LEASE_MS, &sender).await;
        let b = start_node(&cluster, 2, "b", TEST_LEASE_MS, &sender).await;
        wait_owned(&a, 2).await;
        let owned_b = wait_owned(&b, 2).await;
        drain(&mut events);
        b.shutdown().await;
        let history = drain(&mut events);
        for partition in owned_b.keys() {
            assert!(
                history.contains(&(
                    "b".to_owned(),
                    Ownership::Lost {
                        partition: *partition,
                        reason: LostReason::Shutdown
                    }
                )),
                "{partition}: {history:?}"
            );
        }
        let all = wait_owned(&a, 4).await;
        assert_eq!(all.len(), 4);
        // The leases say so: every one names a.
        let client = async_nats::connect(cluster.url(1)).await.expect("connect");
        let store = jetstream::new(client)
            .get_key_value(LEASES_BUCKET)
            .await
            .expect("bucket");
        for index in 0..4 {
            let value = store
                .get(format!("p{index}"))
                .await
                .expect("read")
                .expect("lease");
            let text = String::from_utf8_lossy(&value).into_owned();
            assert!(text.contains(r#""node":"a""#), "p{index}: {text}");
        }
        a.shutdown().await;
    });
}

/// NATS goes away under a holder (all three servers killed): renewals fail, and the holder
/// drops every partition on its renew deadline, which falls before a lease has passed since
/// its last renewal, so no other node could have been told to take over yet.
#[test]
fn a_holder_cut_off_from_nats_drops_its_partitions_on_the_renew_deadline() {
    let Some(mut cluster) = TestCluster::start_or_skip(3) else {
        return;
    };
    runtime().block_on(async {
        config::init(&cluster.urls(), 2).await.expect("init");
        let (sender, mut events) = mpsc::unbounded_channel();
        let a = start_node(&cluster, 0, "a", TEST_LEASE_MS, &sender).await;
        wait_owned(&a, 2).await;
        drain(&mut events);
        let killing = Instant::now();
        cluster.stop_all();
        // The node may renew through a server still running while the others are killed.
        let cut = Instant::now();
        println!(
            "killing the servers took {} ms",
            cut.duration_since(killing).as_millis()
        );
        let mut lost = Vec::new();
        while lost.len() < 2 {
            let (node, event) =
                tokio::time::timeout(Duration::from_millis(TAKEOVER_MS_MAX), events.recv())
                    .await
                    .expect("the partitions are dropped")
                    .expect("the channel is open");
            match event {
                Ownership::Lost { partition, reason } => {
                    assert_eq!(node, "a");
                    assert_eq!(reason, LostReason::DeadlineMissed, "{partition}");
                    lost.push(partition.0);
                }
                other => panic!("{other:?}"),
            }
        }
        println!(
            "both partitions dropped {} ms after the last server died (lease {TEST_LEASE_MS} ms)",
            cut.elapsed().as_millis()
        );
        lost.sort_unstable();
        assert_eq!(lost, vec![0, 1]);
        assert!(wait_owned(&a, 0).await.is_empty());
        a.abort();
    });
}
