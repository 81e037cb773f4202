//! Appends/s of `JetStreamLog` (R3, a real 3-node nats-server cluster on loopback started by
//! the bench) beside the local WAL, in the same run: 100-byte single-record batches, pipelined
//! by one owner through `append_notify` (the engine's path when a commit must not block), each
//! iteration a burst of `BURST_COUNT` appends waited for until every one is told.
//!
//! `cargo bench -p statelog-nats --bench append`; without a server the JetStream case prints
//! `skipped: <reason>` and only the WAL runs. Under `cargo test --benches` each case runs once.

use std::sync::mpsc;
use std::time::Duration;

use criterion::{Criterion, Throughput};
use statelog_nats::testing::TestCluster;
use statelog_nats::{JetStreamLog, JetStreamOptions};
use statelog_store::Log;
use statelog_wal::{Wal, WalOptions};

/// Payload size of every record.
const RECORD_SIZE_BYTES: usize = 100;

/// Appends per iteration, all in flight before the first is waited for.
const BURST_COUNT: u64 = 1000;

/// A burst that is not told within this is a failure, not a slow run.
const TOLD_WITHIN: Duration = Duration::from_secs(60);

fn burst(log: &dyn Log, payload: &[u8]) {
    let (sender, told) = mpsc::channel();
    for _ in 0..BURST_COUNT {
        let sender = sender.clone();
        log.append_notify(
            &[(1, payload)],
            Box::new(move |result| {
                let _ = sender.send(result.is_ok());
            }),
        )
        .expect("appends");
    }
    drop(sender);
    for _ in 0..BURST_COUNT {
        assert!(
            told.recv_timeout(TOLD_WITHIN).expect("told"),
            "acknowledged"
        );
    }
}

fn appends(c: &mut Criterion) {
    let payload = vec![0x5a_u8; RECORD_SIZE_BYTES];
    let mut group = c.benchmark_group("append_100b_pipelined");
    group.throughput(Throughput::Elements(BURST_COUNT));
    group.sample_size(10);

    let dir = tempfile::Builder::new()
        .prefix("statelog-nats-bench-wal")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("a scratch dir");
    let (wal, _) = Wal::open(dir.path(), WalOptions::default()).expect("opens");
    group.bench_function("local_wal", |b| b.iter(|| burst(&wal, &payload)));
    drop(wal);

    if let Some(cluster) = TestCluster::start_or_skip(3) {
        let log =
            JetStreamLog::open(JetStreamOptions::new(cluster.urls(), "bench", 1)).expect("opens");
        group.bench_function("jetstream_r3", |b| b.iter(|| burst(&log, &payload)));
        drop(log);
        drop(cluster);
    }
    group.finish();
}

criterion::criterion_group!(benches, appends);
criterion::criterion_main!(benches);
