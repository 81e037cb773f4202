//! Appends/s of `JetStreamLog` (R3, a real 3-node nats-server cluster on loopback started by
//! the bench) beside the local WAL and beside the raw async-nats client on the same cluster, in
//! the same run: 100-byte single-record batches, pipelined by one owner through `append_notify`
//! (the engine's path when a commit must not block), each iteration a burst of `BURST_COUNT`
//! appends waited for until every one is told.
//!
//! The raw cases are the baseline the log is measured against (log/raw in one run): one task
//! of a 2-thread runtime publishes the same message the log writes (same headers and body
//! bytes) with `send_publish`, at most `RAW_WINDOW` in flight, and awaits the acknowledgements
//! in order, checking each one's sequence. `raw_fenced` carries the fence's headers
//! (`Nats-Msg-Id`, `Nats-Expected-Last-Sequence`); `raw_unfenced` carries neither, which tells
//! what the per-message expected-last-sequence check costs on the server. Every JetStream case
//! runs on the same stream through the same server (the raw publisher after the log is dropped,
//! continuing at the stream's last sequence): where the stream's leader sits, and whether the
//! client talks to it directly, moves the rate between runs; within a run the cases share it.
//!
//! `cargo bench -p statelog-nats --bench append`; without a server the JetStream cases print
//! `skipped: <reason>` and only the WAL runs. Under `cargo test --benches` each case runs once.

use std::collections::VecDeque;
use std::sync::mpsc;
use std::time::Duration;

use async_nats::jetstream::context::PublishAckFuture;
use async_nats::jetstream::message::PublishMessage;
use async_nats::jetstream::stream::{Config, StorageType};
use async_nats::HeaderMap;
use criterion::{Criterion, Throughput};
use statelog_nats::limits::PIPELINE_MESSAGES_MAX;
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

/// The epoch in the raw publisher's message ids (the log's is 1).
const RAW_EPOCH: u64 = 2;

/// The raw publisher's window: the log's.
const RAW_WINDOW: usize = PIPELINE_MESSAGES_MAX as usize;

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

/// The raw client on the log's stream (after the log is dropped), publishing what the log
/// would, continuing at the stream's last sequence.
struct Raw {
    runtime: tokio::runtime::Runtime,
    context: async_nats::jetstream::Context,
    subject: String,
    /// The body the log writes for one 100-byte record (format, count, kind, origin, length).
    body: Vec<u8>,
    fenced: bool,
    /// The sequence the next message must get.
    next_sequence: u64,
}

impl Raw {
    fn open(urls: &[String], stream: &str, fenced: bool) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        let subject = format!("{stream}.log");
        let (context, last_sequence) = runtime.block_on(async {
            let client = async_nats::ConnectOptions::new()
                .connect(urls)
                .await
                .expect("connects");
            let context = async_nats::jetstream::new(client);
            let mut created = context
                .get_or_create_stream(Config {
                    name: stream.to_owned(),
                    subjects: vec![subject.clone()],
                    storage: StorageType::File,
                    num_replicas: 3,
                    // As the log creates its streams (the takeover is an atomic batch).
                    allow_atomic_publish: true,
                    ..Default::default()
                })
                .await
                .expect("a stream");
            let last = created.info().await.expect("its state").state.last_sequence;
            (context, last)
        });
        let mut body = vec![1_u8];
        body.extend_from_slice(&1_u32.to_le_bytes());
        body.push(1);
        body.extend_from_slice(&0_u64.to_le_bytes());
        body.extend_from_slice(&(RECORD_SIZE_BYTES as u32).to_le_bytes());
        body.extend_from_slice(&[0x5a; RECORD_SIZE_BYTES]);
        Self {
            runtime,
            context,
            subject,
            body,
            fenced,
            next_sequence: last_sequence + 1,
        }
    }

    fn burst(&mut self) {
        let first = self.next_sequence;
        let (context, subject, body, fenced) = (
            &self.context,
            self.subject.as_str(),
            &self.body,
            self.fenced,
        );
        self.runtime.block_on(async move {
            let mut in_flight: VecDeque<(u64, PublishAckFuture)> = VecDeque::new();
            let acked = |sequence: u64, ack: Result<_, _>| {
                let ack: async_nats::jetstream::publish::PublishAck = ack.expect("acknowledged");
                assert_eq!(ack.sequence, sequence, "the sequence it expected");
            };
            for sequence in first..first + BURST_COUNT {
                if in_flight.len() >= RAW_WINDOW {
                    let (expected, future) = in_flight.pop_front().expect("one in flight");
                    acked(expected, future.await);
                }
                let mut headers = HeaderMap::new();
                headers.insert("Statelog-Type", "batch");
                headers.insert("Statelog-Lsn", sequence.to_string().as_str());
                let mut message = PublishMessage::build()
                    .headers(headers)
                    .payload(body.clone().into());
                if fenced {
                    message = message
                        .message_id(format!("{RAW_EPOCH}:{sequence}"))
                        .expected_last_sequence(sequence - 1);
                }
                let future = context
                    .send_publish(subject.to_owned(), message)
                    .await
                    .expect("published");
                in_flight.push_back((sequence, future));
            }
            while let Some((expected, future)) = in_flight.pop_front() {
                acked(expected, future.await);
            }
        });
        self.next_sequence += BURST_COUNT;
    }
}

fn appends(c: &mut Criterion) {
    let payload = vec![0x5a_u8; RECORD_SIZE_BYTES];
    let mut group = c.benchmark_group("append_100b_pipelined");
    group.throughput(Throughput::Elements(BURST_COUNT));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(8));

    let dir = tempfile::Builder::new()
        .prefix("statelog-nats-bench-wal")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("a scratch dir");
    let (wal, _) = Wal::open(dir.path(), WalOptions::default()).expect("opens");
    group.bench_function("local_wal", |b| b.iter(|| burst(&wal, &payload)));
    drop(wal);

    if let Some(cluster) = TestCluster::start_or_skip(3) {
        // Every case on one stream through one server: the leader's placement and whether the
        // client talks to it decide much of the rate, so the cases share both.
        let urls = vec![cluster.url(0)];
        let log =
            JetStreamLog::open(JetStreamOptions::new(urls.clone(), "bench", 1)).expect("opens");
        eprintln!(
            "stream leader {:?}, client on {}",
            log.stream_leader().expect("the stream's state"),
            log.connected_server()
        );
        group.bench_function("jetstream_r3", |b| b.iter(|| burst(&log, &payload)));
        drop(log);
        let mut raw = Raw::open(&urls, "bench", true);
        group.bench_function("raw_fenced_r3", |b| b.iter(|| raw.burst()));
        raw.fenced = false;
        group.bench_function("raw_unfenced_r3", |b| b.iter(|| raw.burst()));
        drop(raw);
        drop(cluster);
    }
    group.finish();
}

criterion::criterion_group!(benches, appends);
criterion::criterion_main!(benches);
