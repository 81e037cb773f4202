//! The cluster config against a real 3-server NATS cluster: init creates it once, the same
//! count again is an answer, another count is refused naming both, load reads it, an
//! uninitialized cluster says how to initialize it, and a newer format is refused by number.
//!
//! Scenario guarded: the partition count is fixed at creation; a second init with another
//! count must never change where executions live.

use async_nats::jetstream;
use statelog_cluster::buckets::{self, CONFIG_BUCKET};
use statelog_cluster::config::{self, InitOutcome, CONFIG_KEY};
use statelog_cluster::node::{Node, NodeOptions};
use statelog_cluster::Error;
use statelog_nats::testing::TestCluster;
use std::sync::Arc;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

#[test]
fn init_is_create_only_and_load_reads_it() {
    let Some(cluster) = TestCluster::start_or_skip(3) else {
        return;
    };
    // One URL is enough: the client learns the others.
    let urls = vec![cluster.url(1)];
    runtime().block_on(async {
        match config::load(&urls).await {
            Err(Error::NotInitialized) => {}
            other => panic!("before init: {other:?}"),
        }
        // A node refuses to join a cluster nobody initialized.
        let client = buckets::connect(&urls).await.expect("connect");
        let sink = |_: statelog_cluster::node::Ownership| {};
        match Node::start(client, NodeOptions::new("a", "127.0.0.1:1"), Arc::new(sink)).await {
            Err(error @ Error::NotInitialized) => {
                assert!(
                    error.to_string().contains("statelog cluster init"),
                    "{error}"
                );
            }
            other => panic!("a node before init: {other:?}"),
        }
        let created = config::init(&urls, 16).await.expect("init");
        assert!(matches!(created, InitOutcome::Created(_)), "{created:?}");
        assert_eq!(created.config().partitions, 16);
        assert_eq!(created.config().format, 1);

        let again = config::init(&cluster.urls(), 16).await.expect("same count");
        assert_eq!(
            again,
            InitOutcome::AlreadyInitialized(created.config().clone())
        );

        match config::init(&urls, 8).await {
            Err(error @ Error::AlreadyInitialized { .. }) => {
                let text = error.to_string();
                assert!(text.contains("16") && text.contains('8'), "{text}");
                assert!(matches!(
                    error,
                    Error::AlreadyInitialized {
                        existing: 16,
                        requested: 8
                    }
                ));
            }
            other => panic!("another count: {other:?}"),
        }
        assert_eq!(
            config::load(&[cluster.url(2)]).await.expect("load"),
            *created.config()
        );

        // The buckets are R3 on a 3-server cluster.
        let client = buckets::connect(&urls).await.expect("connect");
        let context = jetstream::new(client.clone());
        for bucket in [CONFIG_BUCKET, buckets::NODES_BUCKET, buckets::LEASES_BUCKET] {
            let mut stream = context
                .get_stream(format!("KV_{bucket}"))
                .await
                .expect("bucket stream");
            let info = stream.info().await.expect("stream info");
            assert_eq!(info.config.num_replicas, 3, "{bucket}");
        }

        // A config written by a newer build is refused by its format number.
        let store = context.get_key_value(CONFIG_BUCKET).await.expect("bucket");
        store
            .put(
                CONFIG_KEY,
                br#"{"format":2,"partitions":16,"created_ms":0}"#.to_vec().into(),
            )
            .await
            .expect("overwrite for the test");
        match config::load(&urls).await {
            Err(Error::ConfigFormat {
                format: 2,
                supported: 1,
            }) => {}
            other => panic!("newer format: {other:?}"),
        }
    });
}

#[test]
fn bad_partition_counts_and_urls_are_typed_errors() {
    runtime().block_on(async {
        match config::init(&["nats://127.0.0.1:1".to_owned()], 0).await {
            Err(Error::PartitionCount { count: 0, max }) => assert_eq!(max, 1_024),
            other => panic!("{other:?}"),
        }
        match config::init(&[], 4).await {
            Err(Error::NoUrls) => {}
            other => panic!("{other:?}"),
        }
        match config::load(&["not a url at all".to_owned()]).await {
            Err(Error::Connect { urls, .. }) => assert_eq!(urls, "not a url at all"),
            other => panic!("{other:?}"),
        }
    });
}

/// Fewer than three servers: one replica per server (statelog_nats::testing makes every
/// server a cluster member, so the smallest cluster it starts is two).
#[test]
fn a_two_server_cluster_gets_two_replica_buckets() {
    let Some(cluster) = TestCluster::start_or_skip(2) else {
        return;
    };
    runtime().block_on(async {
        let created = config::init(&cluster.urls(), 4).await.expect("init");
        assert_eq!(created.config().partitions, 4);
        let client = buckets::connect(&cluster.urls()).await.expect("connect");
        assert_eq!(buckets::replicas_for(&client), 2);
        let context = jetstream::new(client);
        let mut stream = context
            .get_stream(format!("KV_{CONFIG_BUCKET}"))
            .await
            .expect("bucket stream");
        assert_eq!(stream.info().await.expect("info").config.num_replicas, 2);
    });
}
