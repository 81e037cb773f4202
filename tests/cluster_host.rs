//! PartitionHost under the real lease driver, against a real 3-server NATS cluster: a node
//! alone opens an engine for every partition; when a second node joins, the partitions it
//! takes are closed on the first at once (an engine clone still held appends nothing) and
//! opened on the second over the same log, whose replay shows what the first wrote.
//!
//! The partitions' logs are `MemoryLog`s shared by both nodes' factories, standing in for the
//! JetStream streams (which `statelog-nats` provides).

#![cfg(all(feature = "server", feature = "cluster"))]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use statelog::clock::ManualClock;
use statelog::cluster::host::{LogFactory, OptionsFor, PartitionHost};
use statelog::engine::EngineOptions;
use statelog::store::{self, Log, MemoryLog};
use statelog_cluster::config;
use statelog_cluster::limits::TAKEOVER_MS_MAX;
use statelog_cluster::node::{Node, NodeOptions};
use statelog_cluster::partition::{partition_of_execution, PartitionIndex};
use statelog_nats::testing::TestCluster;

const PARTITIONS: u32 = 4;
/// The tests' lease: short so takeovers are quick, long enough that a KV round trip on a
/// loaded 2-core CI machine (its request timeout is a tenth of it) does not lose a lease.
const TEST_LEASE_MS: u64 = 2_000;
const ACCOUNT: &str = "000000000000";
const WAIT: &str = r#"{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":60,"End":true}}}"#;

/// One log per partition, the same for every node (the stream outlives its owners).
#[derive(Default)]
struct Streams {
    logs: Mutex<BTreeMap<PartitionIndex, Arc<MemoryLog>>>,
}

impl Streams {
    fn log(&self, partition: PartitionIndex) -> Arc<MemoryLog> {
        self.logs.lock().entry(partition).or_default().clone()
    }
}

impl LogFactory for Streams {
    fn open(&self, partition: PartitionIndex, _epoch: u64) -> Result<Arc<dyn Log>, store::Error> {
        let log: Arc<dyn Log> = self.log(partition);
        Ok(log)
    }
}

fn host(streams: &Arc<Streams>) -> PartitionHost {
    let clock = ManualClock::new(1_700_000_000_000);
    let options: Arc<OptionsFor> = Arc::new(move |_| EngineOptions {
        clock: Arc::new(clock.clone()),
        background_timers: false,
        worker_threads: 1,
        account: ACCOUNT.to_string(),
        ..EngineOptions::default()
    });
    PartitionHost::new(streams.clone(), options)
}

async fn start_node(
    cluster: &TestCluster,
    server: usize,
    name: &str,
    host: &PartitionHost,
) -> Node {
    let client = async_nats::connect(cluster.url(server))
        .await
        .expect("connect");
    let mut options = NodeOptions::new(name, format!("127.0.0.1:{}", 9_100 + server));
    options.lease_ms = TEST_LEASE_MS;
    Node::start(client, options, Arc::new(host.clone()))
        .await
        .expect("node starts")
}

/// Waits until `host` serves exactly `count` partitions, at most the takeover bound.
async fn wait_serving(host: &PartitionHost, count: usize) -> BTreeMap<PartitionIndex, u64> {
    let deadline = Instant::now() + Duration::from_millis(TAKEOVER_MS_MAX);
    loop {
        let owned = host.owned();
        if owned.len() == count {
            return owned;
        }
        assert!(
            Instant::now() < deadline,
            "serving {owned:?}, want {count} within {TAKEOVER_MS_MAX} ms"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[test]
fn engines_follow_ownership_across_a_join() {
    let Some(cluster) = TestCluster::start_or_skip(3) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        config::init(&cluster.urls(), PARTITIONS)
            .await
            .expect("init");
        let streams = Arc::new(Streams::default());
        let host_a = host(&streams);
        let host_b = host(&streams);

        let a = start_node(&cluster, 0, "a", &host_a).await;
        let alone = wait_serving(&host_a, PARTITIONS as usize).await;
        assert_eq!(alone.len(), 4);

        // An execution in the highest partition, which a hands over when b joins.
        let moved = PartitionIndex(PARTITIONS - 1);
        let name = (0..)
            .map(|i| format!("run-{i}"))
            .find(|name| {
                partition_of_execution(ACCOUNT, "m", name, PARTITIONS).expect("in range") == moved
            })
            .expect("some name lands there");
        let engine_a = host_a.engine(moved).expect("a serves it");
        engine_a
            .create_state_machine("m", WAIT, None)
            .expect("machine");
        let started = engine_a
            .start_execution("m", Some(&name), "{}")
            .expect("started on a");

        let b = start_node(&cluster, 1, "b", &host_b).await;
        let served_b = wait_serving(&host_b, 2).await;
        let served_a = wait_serving(&host_a, 2).await;
        assert!(served_b.contains_key(&moved), "b took {served_b:?}");
        assert!(served_a.keys().all(|p| !served_b.contains_key(p)));
        // b's epoch for the moved partition is larger than a's was.
        assert!(served_b[&moved] > alone[&moved]);

        // a's engine for it, still held, appends nothing any more.
        let log = streams.log(moved);
        let end = log.stats().next_lsn;
        let refused = engine_a.stop_execution(&started.execution_arn, None, None);
        assert!(refused.is_err(), "{refused:?}");
        assert_eq!(log.stats().next_lsn, end);

        // b replayed what a wrote and writes on.
        let engine_b = host_b.engine(moved).expect("b serves it");
        let described = engine_b
            .describe_execution(&started.execution_arn)
            .expect("replayed on b");
        assert_eq!(described.status.aws_name(), "RUNNING");
        engine_b
            .stop_execution(&started.execution_arn, None, None)
            .expect("b's engine writes");
        assert!(log.stats().next_lsn > end);

        b.shutdown().await;
        a.shutdown().await;
        assert!(host_a.owned().is_empty() && host_b.owned().is_empty());
    });
}
