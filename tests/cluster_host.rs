//! PartitionHost under the real lease driver, against a real 3-server NATS cluster: a node
//! alone opens an engine for every partition; when a second node joins, the partitions it
//! takes are closed on the first at once (an engine clone still held appends nothing) and
//! opened on the second over the same log, whose replay shows what the first wrote.
//!
//! The first test's partition logs are `MemoryLog`s shared by both nodes' factories, standing
//! in for the streams. The second runs on the real ones (`JetStreamLogFactory`: a JetStream
//! stream per partition, fenced by the lease's epoch): a node is aborted as a crash, the
//! survivor takes its partitions over, replays them from JetStream and finishes their
//! executions, and the crashed node's engines can append nothing acknowledged any more.
//!
//! The retention test runs on the real streams too, without lease drivers (the test delivers
//! the ownership events, as a driver would, at epochs it picks): closed executions past
//! retention are compacted out of the stream (copied forward the live ones, purged below a
//! sequence), and a second host that takes the partition over replays none of them.

#![cfg(all(feature = "server", feature = "cluster"))]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use statelog::clock::{Clock, ManualClock};
use statelog::cluster::host::{HostError, LogFactory, OptionsFor, PartitionHost};
use statelog::cluster::jetstream::{stream_name, JetStreamLogFactory};
use statelog::engine::{Engine, EngineOptions, HistoryQuery};
use statelog::store::{self, Log, MemoryLog};
use statelog_cluster::config;
use statelog_cluster::limits::{LEASE_MS, TAKEOVER_MS_MAX};
use statelog_cluster::node::{Node, NodeOptions};
use statelog_cluster::partition::{partition_of_execution, PartitionIndex};
use statelog_nats::testing::TestCluster;
use statelog_nats::{JetStreamLog, JetStreamOptions};

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
    start_node_with_lease(cluster, server, name, host, TEST_LEASE_MS).await
}

async fn start_node_with_lease(
    cluster: &TestCluster,
    server: usize,
    name: &str,
    host: &PartitionHost,
    lease_ms: u64,
) -> Node {
    let client = async_nats::connect(cluster.url(server))
        .await
        .expect("connect");
    let mut options = NodeOptions::new(name, format!("127.0.0.1:{}", 9_100 + server));
    options.lease_ms = lease_ms;
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

/// A host over `factory` whose engines share one manual clock, returned with it.
fn clocked_host(factory: Arc<dyn LogFactory>) -> (PartitionHost, ManualClock) {
    let clock = ManualClock::new(1_700_000_000_000);
    let engines_clock = clock.clone();
    let options: Arc<OptionsFor> = Arc::new(move |_| EngineOptions {
        clock: Arc::new(engines_clock.clone()),
        background_timers: false,
        worker_threads: 1,
        account: ACCOUNT.to_string(),
        ..EngineOptions::default()
    });
    (PartitionHost::new(factory, options), clock)
}

/// An execution name that lands in `partition`.
fn name_in(partition: PartitionIndex, prefix: &str) -> String {
    (0..)
        .map(|i| format!("{prefix}-{i}"))
        .find(|name| {
            partition_of_execution(ACCOUNT, "m", name, PARTITIONS).expect("in range") == partition
        })
        .expect("some name lands there")
}

/// Bound on one partition's takeover including its replay, so that a broken takeover fails
/// the test instead of hanging it (not a performance assertion: the figure is printed).
const TAKEOVER_WAIT_MS: u64 = TAKEOVER_MS_MAX + 30_000;

#[test]
fn a_crashed_nodes_partitions_are_replayed_from_jetstream_and_finish_on_the_survivor() {
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
        // Both nodes open the same streams (statelog_p0..3, R3) on the real cluster.
        let factory = Arc::new(JetStreamLogFactory::new(cluster.urls(), 3));
        let (host_a, _clock_a) = clocked_host(factory.clone());
        let (host_b, clock_b) = clocked_host(factory);

        // The production lease: the nodes' KV requests get a tenth of it each, and 60 ms (the
        // 600 ms test lease's) is too short beside four R3 streams being created with fsync on
        // this shared machine (a node's start timed out on it).
        let a = start_node_with_lease(&cluster, 0, "a", &host_a, LEASE_MS).await;
        wait_serving(&host_a, PARTITIONS as usize).await;
        let b = start_node_with_lease(&cluster, 1, "b", &host_b, LEASE_MS).await;
        wait_serving(&host_b, 2).await;
        let served_a = wait_serving(&host_a, 2).await;

        // An execution (a 60 s Wait) on each partition a serves, through a's engines.
        let mut runs: Vec<(PartitionIndex, Engine, String, usize)> = Vec::new();
        for &partition in served_a.keys() {
            let engine = host_a.engine(partition).expect("a serves it");
            engine
                .create_state_machine("m", WAIT, None)
                .expect("machine on a");
            let before = engine.armed_timer_count();
            let started = engine
                .start_execution("m", Some(&name_in(partition, "crash")), "{}")
                .expect("started on a");
            let timers = engine.armed_timer_count();
            assert!(timers > before, "the Wait arms a timer");
            runs.push((partition, engine, started.execution_arn, timers));
        }

        // a crashes: its lease driver stops, nothing is released and its host is never told
        // (its engines stay open, as in a process that is partitioned away rather than dead).
        let aborted_at = Instant::now();
        a.abort();

        // The survivor serves each of them once the lease ran out and the replay finished;
        // every partition polled in one loop, so each figure is its own.
        let deadline = aborted_at + Duration::from_millis(TAKEOVER_WAIT_MS);
        let mut acquired_ms: BTreeMap<PartitionIndex, u128> = BTreeMap::new();
        let mut served_ms: BTreeMap<PartitionIndex, u128> = BTreeMap::new();
        while served_ms.len() < runs.len() {
            for (partition, ..) in &runs {
                if !acquired_ms.contains_key(partition) && b.owned().contains_key(partition) {
                    acquired_ms.insert(*partition, aborted_at.elapsed().as_millis());
                }
                if served_ms.contains_key(partition) {
                    continue;
                }
                match host_b.engine(*partition) {
                    Ok(_) => {
                        served_ms.insert(*partition, aborted_at.elapsed().as_millis());
                    }
                    Err(HostError::NotOwner { .. } | HostError::Opening { .. }) => {}
                    Err(other) => panic!("{partition}: {other}"),
                }
            }
            assert!(
                Instant::now() < deadline,
                "served {served_ms:?} by b {TAKEOVER_WAIT_MS} ms after a's abort"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        for (partition, ..) in &runs {
            let epoch = host_b.owned()[partition];
            println!(
                "takeover: {partition} served by b {} ms after a's abort (lease acquired at {} \
                 ms, then opened and replayed from JetStream; epoch {} -> {epoch}, lease \
                 {LEASE_MS} ms)",
                served_ms[partition],
                acquired_ms
                    .get(partition)
                    .map_or_else(|| "?".to_string(), |ms| ms.to_string()),
                served_a[partition],
            );
            assert!(epoch > served_a[partition], "{partition}: epoch {epoch}");
        }
        let owned_b = wait_serving(&host_b, PARTITIONS as usize).await;

        for (partition, engine_a, arn, timers) in &runs {
            let engine_b = host_b.engine(*partition).expect("b serves it");
            // Replayed from the stream: the execution is there, its timer re-armed.
            let described = engine_b.describe_execution(arn).expect("replayed on b");
            assert_eq!(described.status.aws_name(), "RUNNING", "{partition}");
            assert_eq!(
                engine_b.armed_timer_count(),
                *timers,
                "{partition}: re-armed"
            );

            // a's engine, still open, is refused by the servers: b's takeover fenced it.
            for _ in 0..2 {
                match engine_a.stop_execution(arn, None, None) {
                    Err(statelog::engine::Error::Store(store::Error::Fenced)) => {}
                    other => panic!("{partition}: a's stale stop: {other:?}"),
                }
            }
            let refused = engine_a.start_execution("m", Some(&name_in(*partition, "late")), "{}");
            assert!(refused.is_err(), "{partition}: {refused:?}");
            // Nothing of it reached the stream.
            assert_eq!(
                engine_b
                    .describe_execution(arn)
                    .expect("b")
                    .status
                    .aws_name(),
                "RUNNING"
            );
        }

        // The Wait runs out on b's clock: every execution finishes on b.
        clock_b.advance_ms(61_000);
        for (partition, _, arn, _) in &runs {
            let engine_b = host_b.engine(*partition).expect("b serves it");
            assert!(
                engine_b.run_due_timers() >= 1,
                "{partition}: the Wait is due"
            );
            let closed =
                tokio::task::block_in_place(|| engine_b.wait_until_closed(arn)).expect("closes");
            assert_eq!(closed.status.aws_name(), "SUCCEEDED", "{partition}");
            let events = engine_b
                .get_execution_history(arn, &HistoryQuery::default())
                .expect("history")
                .events;
            let ids: Vec<u32> = events.iter().map(|event| event.id.0).collect();
            let contiguous: Vec<u32> = (1..=events.len() as u32).collect();
            assert_eq!(ids, contiguous, "{partition}: ids");
            let types: Vec<&str> = events.iter().map(|e| e.details.type_name()).collect();
            assert_eq!(
                types,
                [
                    "ExecutionStarted",
                    "WaitStateEntered",
                    "WaitStateExited",
                    "ExecutionSucceeded"
                ],
                "{partition}"
            );
        }
        // b still writes on every partition it took (the takeover left the streams writable).
        for partition in owned_b.keys() {
            let engine_b = host_b.engine(*partition).expect("b serves it");
            engine_b
                .create_state_machine("after", WAIT, None)
                .expect("b writes after the takeover");
        }

        b.shutdown().await;
        assert!(host_b.owned().is_empty());
    });
}

/// The shared streams, each open handing out a log this test can stop (its `refusal` then
/// answers, as a JetStream log's does after a lost acknowledgement).
#[derive(Default)]
struct StoppableStreams {
    streams: Streams,
    handed: Mutex<Vec<Arc<statelog::cluster::host::OwnedLog>>>,
}

impl LogFactory for StoppableStreams {
    fn open(&self, partition: PartitionIndex, _epoch: u64) -> Result<Arc<dyn Log>, store::Error> {
        let inner: Arc<dyn Log> = self.streams.log(partition);
        let log = Arc::new(statelog::cluster::host::OwnedLog::new(inner));
        self.handed.lock().push(log.clone());
        let log: Arc<dyn Log> = log;
        Ok(log)
    }
}

#[test]
fn a_partition_whose_log_stopped_is_opened_again_at_its_epoch() {
    use statelog_cluster::node::{Ownership, OwnershipSink};
    let factory = Arc::new(StoppableStreams::default());
    let (host, _clock) = clocked_host(factory.clone());
    let partition = PartitionIndex(1);
    host.deliver(Ownership::Acquired {
        partition,
        epoch: 7,
    });
    let engine = host
        .wait_opened(partition, Duration::from_secs(30))
        .expect("opened");
    engine
        .create_state_machine("m", WAIT, None)
        .expect("machine");
    let started = engine
        .start_execution("m", Some("before"), "{}")
        .expect("started");
    // Nothing is stopped: nothing reopens.
    assert!(host.reopen_stopped().is_empty());
    let (_, generation) = host.engine_at(partition).expect("open");

    // The log stops (fail-stop): the engine refuses writes, and the host opens it again.
    factory.handed.lock()[0].close();
    assert!(engine
        .stop_execution(&started.execution_arn, None, None)
        .is_err());
    // Until it is opened again, nothing is answered from the stopped engine (its state may be
    // ahead of what the log kept).
    assert!(
        matches!(
            host.engine_at(partition),
            Err(HostError::Stopped { epoch: 7, .. })
        ),
        "{:?}",
        host.engine_at(partition).map(|(_, generation)| generation)
    );
    assert_eq!(host.reopen_stopped(), vec![partition]);
    let reopened = host
        .wait_opened(partition, Duration::from_secs(30))
        .expect("opened again");
    assert_eq!(host.owned().get(&partition), Some(&7), "the same epoch");
    let (_, reopened_generation) = host.engine_at(partition).expect("open");
    assert_ne!(
        reopened_generation, generation,
        "another engine: whoever kept the first must know"
    );
    assert_eq!(factory.handed.lock().len(), 2, "a new log");
    // What was written is there, and the partition writes again.
    let described = reopened
        .describe_execution(&started.execution_arn)
        .expect("replayed");
    assert_eq!(described.status.aws_name(), "RUNNING");
    reopened
        .stop_execution(&started.execution_arn, None, None)
        .expect("writes again");
    assert!(host.reopen_stopped().is_empty());
}

/// Extents of this many stream messages (4,096 in production), so the retention test's few
/// executions seal extents that a compaction may purge.
const SMALL_EXTENT_MESSAGES: u64 = 4;

/// The cluster's streams, opened with small extents.
struct SmallExtents(JetStreamLogFactory);

impl LogFactory for SmallExtents {
    fn open(&self, partition: PartitionIndex, epoch: u64) -> Result<Arc<dyn Log>, store::Error> {
        let options = JetStreamOptions {
            extent_messages: SMALL_EXTENT_MESSAGES,
            ..self.0.options(partition, epoch)
        };
        let log: Arc<dyn Log> = Arc::new(JetStreamLog::open(options)?);
        Ok(log)
    }
}

/// The first and last sequence the servers hold in `partition`'s stream.
fn stream_sequences(cluster: &TestCluster, partition: PartitionIndex) -> (u64, u64) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let client = async_nats::connect(cluster.url(2)).await.expect("connect");
        let jetstream = async_nats::jetstream::new(client);
        let mut stream = jetstream
            .get_stream(stream_name(partition))
            .await
            .expect("the partition's stream");
        let info = stream.info().await.expect("stream info");
        (info.state.first_sequence, info.state.last_sequence)
    })
}

const DAY_MS: u64 = 86_400_000;
/// The live execution's Wait: longer than retention plus a compaction interval, so it stays
/// open while the others expire.
const LIVE_WAIT_MS: u64 = 200 * DAY_MS;
/// A Choice on the input: `wait` waits `LIVE_WAIT_MS`, `fail` fails, anything else succeeds.
const BY_KIND: &str = r#"{"StartAt":"C","States":{
    "C":{"Type":"Choice","Choices":[
        {"Variable":"$.kind","StringEquals":"wait","Next":"W"},
        {"Variable":"$.kind","StringEquals":"fail","Next":"F"}],"Default":"P"},
    "W":{"Type":"Wait","Seconds":17280000,"End":true},
    "F":{"Type":"Fail","Error":"Test.Failed","Cause":"asked to"},
    "P":{"Type":"Pass","End":true}}}"#;
const _: () = assert!(LIVE_WAIT_MS == 17_280_000 * 1_000);

/// The event types of an execution's history, after checking that its ids are 1..=n.
fn history_types(engine: &Engine, arn: &str) -> Vec<String> {
    let events = engine
        .get_execution_history(arn, &HistoryQuery::default())
        .expect("history")
        .events;
    let ids: Vec<u32> = events.iter().map(|event| event.id.0).collect();
    let contiguous: Vec<u32> = (1..=events.len() as u32).collect();
    assert_eq!(ids, contiguous, "{arn}: event ids");
    events
        .iter()
        .map(|event| event.details.type_name().to_string())
        .collect()
}

fn assert_unknown(engine: &Engine, arn: &str, who: &str) {
    match engine.describe_execution(arn) {
        Err(statelog::engine::Error::ExecutionDoesNotExist { .. }) => {}
        other => panic!("{who}: {arn} should be unknown: {other:?}"),
    }
}

#[test]
fn expired_executions_are_purged_from_the_stream_and_stay_gone_after_a_takeover() {
    let Some(cluster) = TestCluster::start_or_skip(3) else {
        return;
    };
    let factory: Arc<dyn LogFactory> =
        Arc::new(SmallExtents(JetStreamLogFactory::new(cluster.urls(), 3)));
    // Each host's engines run on their own manual clock, and with the options a `serve --nats`
    // node gives them: the default retention (90 days) and compaction interval (daily).
    let (host_a, clock_a) = clocked_host(factory.clone());
    let (host_b, clock_b) = clocked_host(factory);
    let defaults = EngineOptions::default();
    let partition = PartitionIndex(1);
    use statelog_cluster::node::{Ownership, OwnershipSink};
    host_a.deliver(Ownership::Acquired {
        partition,
        epoch: 5,
    });
    let engine_a = host_a
        .wait_opened(partition, Duration::from_millis(TAKEOVER_WAIT_MS))
        .expect("a opens the stream");
    let opened_ms = clock_a.now_ms();
    engine_a
        .create_state_machine("m", BY_KIND, None)
        .expect("machine");

    // The live one first: its records sit in the oldest extent, so a compaction must copy
    // them forward to purge that extent.
    let live = engine_a
        .start_execution("m", Some(&name_in(partition, "live")), r#"{"kind":"wait"}"#)
        .expect("started")
        .execution_arn;
    let timers = engine_a.armed_timer_count();
    assert!(timers >= 1, "the live Wait arms a timer");
    let mut expiring = Vec::new();
    for i in 0..5 {
        let kind = if i == 2 { "fail" } else { "pass" };
        let arn = engine_a
            .start_execution(
                "m",
                Some(&name_in(partition, &format!("old{i}"))),
                &format!(r#"{{"kind":"{kind}"}}"#),
            )
            .expect("started")
            .execution_arn;
        let closed = engine_a.wait_until_closed(&arn).expect("closes");
        let want = if kind == "fail" {
            "FAILED"
        } else {
            "SUCCEEDED"
        };
        assert_eq!(closed.status.aws_name(), want, "{arn}");
        expiring.push(arn);
    }
    // Every record of the executions that will expire is at or below this sequence.
    let (_, expiring_last_sequence) = stream_sequences(&cluster, partition);
    let live_history = history_types(&engine_a, &live);
    assert_eq!(
        live_history,
        [
            "ExecutionStarted",
            "ChoiceStateEntered",
            "ChoiceStateExited",
            "WaitStateEntered"
        ]
    );

    // Past retention and past one compaction interval.
    assert!(defaults.retention_ms + defaults.compaction_interval_ms < LIVE_WAIT_MS);
    clock_a.advance_ms(defaults.retention_ms + defaults.compaction_interval_ms);
    for arn in &expiring {
        assert_unknown(&engine_a, arn, "a, past retention");
    }
    // Executions that close now stay (and seal the extents holding the expired ones).
    let mut recent = Vec::new();
    for i in 0..2 * SMALL_EXTENT_MESSAGES {
        let arn = engine_a
            .start_execution(
                "m",
                Some(&name_in(partition, &format!("new{i}"))),
                r#"{"kind":"pass"}"#,
            )
            .expect("started")
            .execution_arn;
        engine_a.wait_until_closed(&arn).expect("closes");
        recent.push(arn);
    }

    // The background thread's step, on a's clock: due one interval after the open.
    let mut last_ms = Some(opened_ms);
    let summary = engine_a
        .compact_if_due(&mut last_ms, defaults.compaction_interval_ms)
        .expect("compaction")
        .expect("due");
    println!("compaction on a: {summary:?}");
    assert_eq!(summary.executions_expired_count, expiring.len() as u64);
    assert!(summary.segments_deleted_count >= 1, "{summary:?}");
    assert!(summary.records_copied_count >= 1, "{summary:?}");
    assert!(
        engine_a
            .compact_if_due(&mut last_ms, defaults.compaction_interval_ms)
            .expect("compaction")
            .is_none(),
        "not due again until an interval passed"
    );
    // The purge happened on the servers: nothing of the expired executions is kept.
    let (first_sequence, last_sequence) = stream_sequences(&cluster, partition);
    println!(
        "stream {}: sequences {first_sequence}..={last_sequence} (the expired executions' \
         records were at or below {expiring_last_sequence})",
        stream_name(partition)
    );
    assert!(
        first_sequence > expiring_last_sequence,
        "first sequence {first_sequence}, expired records up to {expiring_last_sequence}"
    );
    for arn in &expiring {
        assert_unknown(&engine_a, arn, "a, compacted");
    }
    assert_eq!(history_types(&engine_a, &live), live_history);
    assert_eq!(
        engine_a
            .describe_execution(&live)
            .expect("live")
            .status
            .aws_name(),
        "RUNNING"
    );
    for arn in &recent {
        assert_eq!(
            engine_a
                .describe_execution(arn)
                .expect("recent")
                .status
                .aws_name(),
            "SUCCEEDED"
        );
    }

    // b takes the partition over at a larger epoch. Its clock is where a's was before it
    // advanced, so retention hides nothing on b: an expired execution whose records were
    // still in the stream would be visible again here.
    host_b.deliver(Ownership::Acquired {
        partition,
        epoch: 6,
    });
    let engine_b = host_b
        .wait_opened(partition, Duration::from_millis(TAKEOVER_WAIT_MS))
        .expect("b opens the stream");
    for arn in &expiring {
        assert_unknown(&engine_b, arn, "b, replayed");
    }
    for arn in &recent {
        assert_eq!(
            engine_b
                .describe_execution(arn)
                .expect("recent on b")
                .status
                .aws_name(),
            "SUCCEEDED"
        );
    }
    assert_eq!(history_types(&engine_b, &live), live_history);
    assert_eq!(
        engine_b.armed_timer_count(),
        timers,
        "the live Wait is re-armed"
    );
    // a's engine is fenced: its compaction (the recent ones expire on its clock too) copies
    // nothing forward and purges nothing.
    clock_a.advance_ms(defaults.retention_ms + defaults.compaction_interval_ms);
    let stale = engine_a.compact();
    assert!(
        matches!(
            stale,
            Err(statelog::engine::Error::Store(store::Error::Fenced))
        ),
        "a's compaction after the takeover: {stale:?}"
    );
    assert_eq!(
        stream_sequences(&cluster, partition).0,
        first_sequence,
        "a purged nothing after the takeover"
    );

    // The live one finishes on b.
    clock_b.advance_ms(LIVE_WAIT_MS);
    assert!(engine_b.run_due_timers() >= 1, "the Wait is due");
    let closed = engine_b.wait_until_closed(&live).expect("closes");
    assert_eq!(closed.status.aws_name(), "SUCCEEDED");
    let mut finished = live_history.clone();
    finished.extend([
        "WaitStateExited".to_string(),
        "ExecutionSucceeded".to_string(),
    ]);
    assert_eq!(history_types(&engine_b, &live), finished);

    // b compacts too: on its clock the recent ones are past retention, the live one is not.
    for i in 0..2 * SMALL_EXTENT_MESSAGES {
        let arn = engine_b
            .start_execution(
                "m",
                Some(&name_in(partition, &format!("b{i}"))),
                r#"{"kind":"pass"}"#,
            )
            .expect("started on b")
            .execution_arn;
        engine_b.wait_until_closed(&arn).expect("closes");
    }
    clock_b.advance_ms(DAY_MS);
    let summary = engine_b.compact().expect("b's compaction");
    println!("compaction on b: {summary:?}");
    assert_eq!(summary.executions_expired_count, recent.len() as u64);
    assert!(stream_sequences(&cluster, partition).0 > first_sequence);
    for arn in &recent {
        assert_unknown(&engine_b, arn, "b, compacted");
    }
    assert_eq!(history_types(&engine_b, &live), finished);
}
