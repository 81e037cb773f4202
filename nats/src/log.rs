//! log: [`JetStreamLog`], the store's log contract (`statelog_store::Log`) over one JetStream
//! stream (one per partition), replicated (R3 by default) on file storage; with the servers'
//! `sync_interval: always` an acknowledgement means "fsynced on a quorum".
//!
//! LSNs. The contract wants dense per-record LSNs while one stream message carries one whole
//! batch (a batch is never split, so it is atomic: JetStream stores a message or not). The
//! stream sequence therefore cannot be the LSN. Each message carries the LSN of its first
//! record in a header (`Statelog-Lsn`, see `message.rs`), and the log keeps an in-memory index
//! of the acknowledged messages that hold records, `(stream sequence, first LSN, record
//! count)`, in order (about 32 bytes a batch). `open` rebuilds it by replaying the stream
//! once (an ordered consumer); a read by LSN is a binary search and one message get by
//! sequence. The alternative, one message per record with the sequence as the LSN, would
//! split batches (no atomicity: JetStream has no multi-message transaction the fence also
//! covers) and multiply the acknowledgements. Messages that hold no caller record (the
//! takeover marker, an empty compaction round) take no LSN. A replay takes its first LSN from
//! the stream's first message: 1 on a stream never purged, the first record kept on one
//! purged below a sequence; from there each message must follow the one before it.
//!
//! Fencing. Each owner opens with an epoch (the cluster layer passes its lease's revision).
//! Open replays the stream, refuses an epoch lower than the one in the last takeover marker
//! ([`Error::StaleEpoch`]), then writes its takeover: one atomic batch of
//! `limits::TAKEOVER_MESSAGES` markers whose first carries `Nats-Expected-Last-Sequence` = the
//! last sequence the replay saw. Every later message carries `Nats-Msg-Id = <epoch>:<sequence
//! it must get>` and `Nats-Expected-Last-Sequence` = that sequence minus one; an owner has at
//! most `limits::PIPELINE_MESSAGES_MAX` messages between queueing and the processing of their
//! acknowledgement, and sends nothing once one was refused. Why that fences a stale owner that
//! pipelines: its first message to reach the stream after the takeover expects `L` (the last
//! sequence before the takeover), the rest of its window `L+1 ..= L+PIPELINE-1`; the takeover
//! moves the last sequence from `L` to `L+TAKEOVER` (> `L+PIPELINE-1`) in one step (atomic:
//! no sequence in between is ever the last one), and it only grows afterwards, so no message of
//! the window ever finds the sequence it expects. Issue 19 measured that expected-last-sequence
//! alone lets 4 of 5 pipelined stale appends through: with one marker the stale window's
//! second message expects exactly the marker's sequence; the jump is what closes that.
//! `Nats-Expected-Last-Msg-Id`, the other candidate, was tried here first and dropped:
//! nats-server 2.15.1 checks it only when it applies a replicated entry, so a stale message
//! passes the leader, fails on every replica as a "critical write error", and the stream then
//! took no more appends from the new owner either (a 30 s ack timeout, or a wrong-sequence
//! refusal of its next append; `nats/tests/jetstream.rs` guards this). The sequence is checked
//! before the entry is proposed. Any refusal, and any other publish failure (unknown outcome),
//! makes the log refuse every later write (fail-stop): [`Log::refusal`] says so,
//! `statelog_store::Error::Fenced` for a fence, `Error::Replicated` otherwise. A refused log is
//! opened again (with a new epoch) to go on; the replay then tells what of the in-flight
//! batches the stream kept.
//!
//! Durability and acknowledgement. Appends are pipelined: the caller's thread takes the next
//! LSN and queues the message under the writer lock; one task of the client runtime (the
//! pipeline task) publishes in order and processes the acknowledgements in the same order. A record is acknowledged (readable,
//! `durable_lsn`) once the server acknowledged its message and a synced append, a `sync`, or a
//! notified append asked for it: an unsynced append is published at once but shows only after
//! the next sync, as on the local WAL. `append_notify`'s callback runs on the pipeline
//! task.
//!
//! Timeouts. A publish waits [`JetStreamOptions::ack_timeout_ms`] for its acknowledgement (a
//! timeout stops the log: its outcome is unknown); every other call waits
//! [`JetStreamOptions::request_timeout_ms`]: each step of `open`, a read, a purge, and the gap
//! between two messages of a replay or scan. A request sent while its stream (or the meta
//! group) elects a leader is never answered, so `open` fails at the request timeout and its
//! caller opens again, rather than waiting out an ack timeout per step. Creating or finding
//! the stream, and creating a replay's or scan's consumer, are asked again a few times
//! ([`STREAM_SETUP_ATTEMPTS`]) before they fail.
//!
//! Retention. Extents are runs of [`JetStreamOptions::extent_messages`] stream sequences.
//! `compact_below` copies the records `keep` keeps forward (each `compaction` message names the
//! sequence below which the originals are superseded), then purges below a sequence; a
//! replay finishes an interrupted compaction. `trim_below` purges whole extents only. A purge
//! is not fenced by the server: the log purges only while it is not refused, and only below
//! what it has acknowledged copies of.
//!
//! Must not: interpret payloads; write from two owners (the fence is what keeps that true);
//! read a clock for anything but a tail's timeout.

use std::collections::VecDeque;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream::consumer::{pull, DeliverPolicy};
use async_nats::jetstream::context::{PublishError, PublishErrorKind};
use async_nats::jetstream::message::PublishMessage as Publish;
use async_nats::jetstream::publish::PublishAck;
use async_nats::jetstream::stream::{self, StorageType};
use async_nats::HeaderMap;
use futures_util::StreamExt;
use parking_lot::{Condvar, Mutex};
use statelog_store::{
    Compacted, CompactionProgress, Durability, Extent, Keep, Log, LogRecord, LogStats, OnDurable,
    Visit, VisitRecord,
};
use statelog_wal::{Lsn, RecordKind};
use tokio::sync::mpsc;

use crate::limits::{
    ACK_TIMEOUT_MS_DEFAULT, BATCH_RECORDS_MAX, EXTENT_MESSAGES_DEFAULT, FETCH_BUFFER_MESSAGES,
    HEADERS_RESERVE_BYTES, MESSAGE_BODY_BYTES_MAX, PIPELINE_MESSAGES_MAX, REPLICAS_MAX,
    REQUEST_TIMEOUT_MS_DEFAULT, STREAM_SETUP_ATTEMPTS, TAKEOVER_MESSAGES,
};
use crate::message::{
    body_size_bytes, decode_body, encode_body, Type, BODY_HEAD_BYTES, HEADER_EPOCH, HEADER_LSN,
    HEADER_PURGE_BELOW, HEADER_TYPE, RECORD_HEAD_BYTES,
};
use crate::Error;

/// One record of a batch on its way out: kind, origin LSN (0: written here first), payload.
type OutgoingRecord<'r> = (u8, u64, &'r [u8]);

/// How to open a [`JetStreamLog`].
#[derive(Debug, Clone)]
pub struct JetStreamOptions {
    /// The servers' client URLs (any of them will do; the client fails over).
    pub urls: Vec<String>,
    /// The stream (one per partition, `statelog_p<index>`).
    pub stream: String,
    /// Its one subject.
    pub subject: String,
    /// Replicas of a stream this open creates (3; 1 for quick tests). An existing stream keeps
    /// its own.
    pub replicas: usize,
    /// This owner's epoch: at least the epoch of the stream's last takeover marker (the
    /// cluster layer passes its lease's revision, which only grows).
    pub epoch: u64,
    /// Stream sequences per extent (what trim and compaction drop whole).
    pub extent_messages: u64,
    /// How long a publish waits for its acknowledgement (a timeout stops the log).
    pub ack_timeout_ms: u64,
    /// How long any other call to the servers waits for its answer: each step of `open`
    /// (finding the stream, its state, the takeover's acknowledgement), a read by sequence, a
    /// purge, and the gap between two messages of a replay or scan. A step of `open` that
    /// times out is a failed open (its caller opens again); a read that times out is a
    /// retryable error.
    pub request_timeout_ms: u64,
    /// The runtime the client runs on; `None`: the log builds a small one of its own.
    pub runtime: Option<tokio::runtime::Handle>,
}

impl JetStreamOptions {
    /// Options for `stream` (subject `<stream>.log`), R3, at `epoch`.
    pub fn new(urls: Vec<String>, stream: impl Into<String>, epoch: u64) -> Self {
        let stream = stream.into();
        Self {
            urls,
            subject: format!("{stream}.log"),
            stream,
            replicas: 3,
            epoch,
            extent_messages: EXTENT_MESSAGES_DEFAULT,
            ack_timeout_ms: ACK_TIMEOUT_MS_DEFAULT,
            request_timeout_ms: REQUEST_TIMEOUT_MS_DEFAULT,
            runtime: None,
        }
    }

    fn check(&self) -> Result<(), Error> {
        let invalid = |field, reason: &str| {
            Err(Error::InvalidOptions {
                field,
                reason: reason.to_owned(),
            })
        };
        if self.urls.is_empty() {
            return invalid("urls", "no server URL");
        }
        if self.stream.is_empty()
            || self
                .stream
                .chars()
                .any(|c| c.is_whitespace() || matches!(c, '.' | '*' | '>' | '/' | '\\'))
        {
            return invalid(
                "stream",
                "empty, or holds whitespace, '.', '*', '>' or a slash",
            );
        }
        if self.subject.is_empty() || self.subject.contains(['*', '>', ' ']) {
            return invalid("subject", "empty, or holds a wildcard or a space");
        }
        if self.replicas == 0 || self.replicas > REPLICAS_MAX {
            return invalid("replicas", "must be 1 to 5");
        }
        if self.epoch == 0 {
            return invalid("epoch", "must be at least 1");
        }
        if self.extent_messages == 0 {
            return invalid("extent_messages", "must be at least 1");
        }
        if self.ack_timeout_ms == 0 {
            return invalid("ack_timeout_ms", "must be at least 1");
        }
        if self.request_timeout_ms == 0 {
            return invalid("request_timeout_ms", "must be at least 1");
        }
        Ok(())
    }
}

/// One acknowledged message that holds records.
#[derive(Debug, Clone, Copy)]
struct Entry {
    sequence: u64,
    first_lsn: u64,
    count: u64,
    size_bytes: u64,
}

impl Entry {
    fn last_lsn(&self) -> u64 {
        self.first_lsn + self.count - 1
    }
}

/// What readers and waiters share with the pipeline task.
#[derive(Debug)]
struct State {
    /// Acknowledged messages holding records, in sequence order.
    entries: VecDeque<Entry>,
    /// The first stream sequence the log still holds (purges move it).
    first_sequence: u64,
    /// The last sequence the server acknowledged (the marker's at least).
    last_sequence: u64,
    /// The first LSN the log still holds.
    first_lsn: u64,
    /// Every record up to this LSN was acknowledged by the server.
    acked_lsn: u64,
    /// Every record up to this LSN was asked to be acknowledged (sync, synced, notified).
    horizon_lsn: u64,
    /// Messages published and not yet acknowledged.
    in_flight_count: u64,
    /// Messages this owner published.
    writes_count: u64,
    /// Set once a write failed: every later write gets it.
    refusal: Option<Arc<Error>>,
}

impl State {
    fn durable_lsn(&self) -> u64 {
        self.acked_lsn.min(self.horizon_lsn)
    }

    /// The next LSN after the acknowledged records.
    fn after_acked(&self) -> u64 {
        self.acked_lsn + 1
    }

    /// Drops the entries below `sequence` and moves the first positions.
    fn forget_below(&mut self, sequence: u64) {
        while self
            .entries
            .front()
            .is_some_and(|entry| entry.sequence < sequence)
        {
            self.entries.pop_front();
        }
        self.first_sequence = self.first_sequence.max(sequence);
        self.first_lsn = self
            .entries
            .front()
            .map_or(self.after_acked(), |entry| entry.first_lsn);
    }

    /// The index of the entry holding `lsn`.
    fn find(&self, lsn: u64) -> Option<usize> {
        let index = self.entries.partition_point(|entry| entry.last_lsn() < lsn);
        self.entries
            .get(index)
            .filter(|entry| entry.first_lsn <= lsn)
            .map(|_| index)
    }
}

#[derive(Debug)]
struct Shared {
    stream_name: String,
    state: Mutex<State>,
    /// Woken when `state` moves (an acknowledgement, a refusal).
    changed: Condvar,
}

impl Shared {
    fn refuse(&self, error: Error) -> Arc<Error> {
        let mut state = self.state.lock();
        let refusal = state.refusal.get_or_insert_with(|| Arc::new(error)).clone();
        self.changed.notify_all();
        refusal
    }

    fn refused(&self) -> Option<Arc<Error>> {
        self.state.lock().refusal.clone()
    }
}

/// A message on its way, with what its acknowledgement must do.
struct Pending {
    epoch: u64,
    sequence: u64,
    first_lsn: u64,
    count: u64,
    size_bytes: u64,
    on_durable: Option<OnDurable>,
}

impl Pending {
    /// Its `Nats-Msg-Id` (built again only for an error).
    fn message_id(&self) -> String {
        message_id(self.epoch, self.sequence)
    }
}

/// The `Nats-Msg-Id` of the message an owner at `epoch` expects at `sequence`.
fn message_id(epoch: u64, sequence: u64) -> String {
    format!("{epoch}:{sequence}")
}

/// What the pipeline task gets.
struct Outgoing {
    message: Publish,
    pending: Pending,
}

/// The acknowledgement of a published message (awaited when it is the oldest in flight).
type AckFuture = Pin<Box<dyn Future<Output = Result<PublishAck, PublishError>> + Send>>;

/// A message the pipeline task published (or failed to), with what its acknowledgement must do.
type InFlight = (Result<AckFuture, Error>, Pending);

/// The writer's position, under the writer lock (appends take it to be ordered).
#[derive(Debug)]
struct Writer {
    next_lsn: u64,
    next_sequence: u64,
    outgoing: mpsc::UnboundedSender<Outgoing>,
}

/// The log over one JetStream stream (see the module docs).
pub struct JetStreamLog {
    shared: Arc<Shared>,
    writer: Mutex<Writer>,
    stream: stream::Stream,
    client: async_nats::Client,
    handle: tokio::runtime::Handle,
    /// The runtime the log built, shut down on drop.
    runtime: Option<tokio::runtime::Runtime>,
    epoch: u64,
    extent_messages: u64,
    batch_size_bytes_max: usize,
    /// A replay's or scan's idle bound (`JetStreamOptions::request_timeout_ms`).
    request_timeout: Duration,
}

impl std::fmt::Debug for JetStreamLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JetStreamLog")
            .field("stream", &self.shared.stream_name)
            .field("epoch", &self.epoch)
            .finish_non_exhaustive()
    }
}

/// Runs `future` on `handle` and blocks the calling thread for its output.
fn run<T: Send + 'static>(
    handle: &tokio::runtime::Handle,
    future: impl Future<Output = Result<T, Error>> + Send + 'static,
) -> Result<T, Error> {
    let (sender, receiver) = std::sync::mpsc::sync_channel(1);
    handle.spawn(async move {
        let _ = sender.send(future.await);
    });
    receiver.recv().unwrap_or(Err(Error::Stopped))
}

/// One message as a fetch gives it.
struct Fetched {
    sequence: u64,
    kind: Type,
    lsn: u64,
    epoch: Option<u64>,
    purge_below: Option<u64>,
    payload: Vec<u8>,
}

fn header_u64(headers: Option<&HeaderMap>, name: &str) -> Option<u64> {
    headers?.get(name)?.as_str().parse().ok()
}

fn parse_fetched(
    stream: &str,
    sequence: u64,
    headers: Option<&HeaderMap>,
    payload: Vec<u8>,
) -> Result<Fetched, Error> {
    let decode = |reason| Error::Decode {
        stream: stream.to_owned(),
        sequence,
        reason,
    };
    let kind = headers
        .and_then(|headers| headers.get(HEADER_TYPE))
        .and_then(|value| Type::parse(value.as_str()))
        .ok_or_else(|| decode("no Statelog-Type header this build knows"))?;
    let lsn = header_u64(headers, HEADER_LSN).ok_or_else(|| decode("no Statelog-Lsn header"))?;
    Ok(Fetched {
        sequence,
        kind,
        lsn,
        epoch: header_u64(headers, HEADER_EPOCH),
        purge_below: header_u64(headers, HEADER_PURGE_BELOW),
        payload,
    })
}

/// Streams the messages of sequences `first..=last` (those still there) in order, through a
/// bounded channel, from an ordered consumer; no message for `idle` is an error.
fn fetch_range(
    handle: &tokio::runtime::Handle,
    stream: stream::Stream,
    first: u64,
    last: u64,
    idle: Duration,
) -> mpsc::Receiver<Result<Fetched, Error>> {
    let (sender, receiver) = mpsc::channel(FETCH_BUFFER_MESSAGES);
    handle.spawn(async move {
        let name = stream.cached_info().config.name.clone();
        let failed = |operation, reason: String| Error::Stream {
            stream: name.clone(),
            operation,
            reason,
        };
        let result: Result<(), Error> = async {
            if last == 0 || first > last {
                return Ok(());
            }
            // Creating the consumer reads nothing yet: like the stream's setup, a failure (a
            // timeout while the stream elects a leader) is asked again, a few times.
            let stream = &stream;
            let consumer = asked_again(|| async move {
                stream
                    .create_consumer(pull::OrderedConfig {
                        deliver_policy: DeliverPolicy::ByStartSequence {
                            start_sequence: first.max(1),
                        },
                        ..Default::default()
                    })
                    .await
            })
            .await
            .map_err(|error| failed("creating a replay consumer", error.to_string()))?;
            let mut messages = consumer
                .messages()
                .await
                .map_err(|error| failed("replaying", error.to_string()))?;
            loop {
                let next = tokio::time::timeout(idle, messages.next())
                    .await
                    .map_err(|_| {
                        failed(
                            "replaying",
                            format!("no message for {} ms", idle.as_millis()),
                        )
                    })?;
                let Some(message) = next else {
                    return Err(failed("replaying", "the consumer ended".to_owned()));
                };
                let message = message.map_err(|error| failed("replaying", error.to_string()))?;
                let sequence = message
                    .info()
                    .map_err(|error| failed("replaying", error.to_string()))?
                    .stream_sequence;
                if sequence > last {
                    return Ok(());
                }
                let fetched = parse_fetched(
                    &name,
                    sequence,
                    message.message.headers.as_ref(),
                    message.message.payload.to_vec(),
                );
                if sender.send(fetched).await.is_err() {
                    return Ok(());
                }
                if sequence == last {
                    return Ok(());
                }
            }
        }
        .await;
        if let Err(error) = result {
            let _ = sender.send(Err(error)).await;
        }
    });
    receiver
}

/// What a replay found.
#[derive(Debug, Default)]
struct Replayed {
    entries: VecDeque<Entry>,
    next_lsn: u64,
    marker_epoch: u64,
    purge_below: u64,
}

async fn replay(
    mut messages: mpsc::Receiver<Result<Fetched, Error>>,
    stream_name: &str,
) -> Result<Replayed, Error> {
    let mut replayed = Replayed {
        next_lsn: 1,
        ..Replayed::default()
    };
    let mut first = true;
    while let Some(fetched) = messages.recv().await {
        let fetched = fetched?;
        let records = decode_body(&fetched.payload).map_err(|reason| Error::Decode {
            stream: stream_name.to_owned(),
            sequence: fetched.sequence,
            reason,
        })?;
        let count = records.len() as u64;
        // The stream's first message says where its LSNs start: at 1 on a stream never
        // purged, at the first record kept on one purged below a sequence (a compaction, a
        // trim). Every later message must follow the one before it.
        if std::mem::take(&mut first) {
            if fetched.sequence == 1 && fetched.lsn != 1 {
                return Err(Error::Decode {
                    stream: stream_name.to_owned(),
                    sequence: fetched.sequence,
                    reason: "the stream's first message does not start at LSN 1",
                });
            }
            replayed.next_lsn = fetched.lsn;
        }
        if fetched.lsn != replayed.next_lsn && count > 0 {
            return Err(Error::Decode {
                stream: stream_name.to_owned(),
                sequence: fetched.sequence,
                reason: "its first LSN does not follow the message before it",
            });
        }
        match fetched.kind {
            Type::Takeover => {
                let epoch = fetched.epoch.ok_or(Error::Decode {
                    stream: stream_name.to_owned(),
                    sequence: fetched.sequence,
                    reason: "a takeover marker without Statelog-Epoch",
                })?;
                replayed.marker_epoch = replayed.marker_epoch.max(epoch);
            }
            Type::Compaction => {
                if let Some(below) = fetched.purge_below {
                    // The originals below are superseded by the copies up to this one.
                    while replayed
                        .entries
                        .front()
                        .is_some_and(|entry| entry.sequence < below)
                    {
                        replayed.entries.pop_front();
                    }
                    replayed.purge_below = replayed.purge_below.max(below);
                }
            }
            Type::Batch => {}
        }
        if count > 0 {
            replayed.entries.push_back(Entry {
                sequence: fetched.sequence,
                first_lsn: fetched.lsn,
                count,
                size_bytes: fetched.payload.len() as u64,
            });
        }
        replayed.next_lsn = replayed.next_lsn.max(fetched.lsn + count);
    }
    Ok(replayed)
}

fn publish_error(
    stream: &str,
    message_id: &str,
    error: &async_nats::jetstream::context::PublishError,
) -> Error {
    match error.kind() {
        PublishErrorKind::WrongLastMessageId | PublishErrorKind::WrongLastSequence => {
            Error::Fenced {
                stream: stream.to_owned(),
                message_id: message_id.to_owned(),
                reason: error.to_string(),
            }
        }
        _ => Error::Publish {
            stream: stream.to_owned(),
            message_id: message_id.to_owned(),
            reason: error.to_string(),
        },
    }
}

fn headers(kind: Type, lsn: u64) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(HEADER_TYPE, kind.as_str());
    headers.insert(HEADER_LSN, lsn.to_string().as_str());
    headers
}

impl JetStreamLog {
    /// Opens (creating when absent) the stream, replays it, refuses an `epoch` older than its
    /// last takeover marker's, writes this owner's marker (fenced by the last sequence), and
    /// finishes a compaction a crash interrupted.
    pub fn open(options: JetStreamOptions) -> Result<Self, Error> {
        options.check()?;
        let (runtime, handle) = match &options.runtime {
            Some(handle) => (None, handle.clone()),
            None => {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(crate::limits::RUNTIME_THREADS)
                    .thread_name("statelog-nats")
                    .enable_all()
                    .build()
                    .map_err(Error::Runtime)?;
                let handle = runtime.handle().clone();
                (Some(runtime), handle)
            }
        };
        let request_timeout = Duration::from_millis(options.request_timeout_ms);
        let opened = run(&handle, connect(options.clone()))?;
        let Connected {
            client,
            publishing,
            requests,
            stream,
            first_sequence,
            last_sequence,
            max_payload_bytes,
        } = opened;
        let name = options.stream.clone();
        let replayed = {
            let messages = fetch_range(
                &handle,
                stream.clone(),
                first_sequence,
                last_sequence,
                request_timeout,
            );
            let name = name.clone();
            run(&handle, async move { replay(messages, &name).await })?
        };
        if replayed.marker_epoch > options.epoch {
            return Err(Error::StaleEpoch {
                stream: name,
                epoch: options.epoch,
                marker_epoch: replayed.marker_epoch,
            });
        }
        // The takeover: one atomic batch of TAKEOVER_MESSAGES markers, fenced by the last
        // sequence the replay saw. It moves the stream's last sequence past every sequence a
        // stale owner's bounded window of in-flight messages can expect (module docs).
        let marker_sequence = last_sequence + TAKEOVER_MESSAGES;
        {
            let context = requests.clone();
            let client = client.clone();
            let subject = options.subject.clone();
            let name = name.clone();
            let (epoch, next_lsn) = (options.epoch, replayed.next_lsn);
            run(&handle, async move {
                let batch_id = format!("takeover-{epoch}-{}", last_sequence + 1);
                let body = encode_body(std::iter::empty::<(u8, u64, &[u8])>());
                let marker = |index: u64| {
                    let mut headers = headers(Type::Takeover, next_lsn);
                    headers.insert(HEADER_EPOCH, epoch.to_string().as_str());
                    headers.insert("Nats-Batch-Id", batch_id.as_str());
                    headers.insert("Nats-Batch-Sequence", index.to_string().as_str());
                    headers
                };
                let mut first = marker(1);
                first.insert(
                    "Nats-Expected-Last-Sequence",
                    last_sequence.to_string().as_str(),
                );
                let failed = |reason: String| Error::Publish {
                    stream: name.clone(),
                    message_id: batch_id.clone(),
                    reason,
                };
                let mut pending = Some(first);
                for index in 1..TAKEOVER_MESSAGES {
                    let headers = pending.take().unwrap_or_else(|| marker(index));
                    client
                        .publish_with_headers(subject.clone(), headers, body.clone().into())
                        .await
                        .map_err(|error| failed(error.to_string()))?;
                }
                let mut commit = pending.take().unwrap_or_else(|| marker(TAKEOVER_MESSAGES));
                commit.insert("Nats-Batch-Commit", "1");
                let ack = context
                    .send_publish(
                        subject,
                        Publish::build().headers(commit).payload(body.into()),
                    )
                    .await
                    .map_err(|error| publish_error(&name, &batch_id, &error))?
                    .await
                    .map_err(|error| publish_error(&name, &batch_id, &error))?;
                if ack.sequence != marker_sequence {
                    return Err(Error::UnexpectedSequence {
                        stream: name,
                        message_id: batch_id,
                        sequence: ack.sequence,
                        expected: marker_sequence,
                    });
                }
                Ok(())
            })?;
        }
        let mut first_sequence = first_sequence.max(1);
        if replayed.purge_below > first_sequence {
            purge(&handle, &stream, replayed.purge_below)?;
            first_sequence = replayed.purge_below;
        }
        let acked_lsn = replayed.next_lsn - 1;
        let first_lsn = replayed
            .entries
            .front()
            .map_or(replayed.next_lsn, |entry| entry.first_lsn);
        let shared = Arc::new(Shared {
            stream_name: name.clone(),
            state: Mutex::new(State {
                entries: replayed.entries,
                first_sequence,
                last_sequence: marker_sequence,
                first_lsn,
                acked_lsn,
                horizon_lsn: acked_lsn,
                in_flight_count: 0,
                writes_count: 1,
                refusal: None,
            }),
            changed: Condvar::new(),
        });
        let (outgoing, outgoing_receiver) = mpsc::unbounded_channel();
        handle.spawn(pipelining(
            publishing,
            options.subject.clone(),
            Arc::clone(&shared),
            outgoing_receiver,
        ));
        let batch_size_bytes_max =
            MESSAGE_BODY_BYTES_MAX.min(max_payload_bytes.saturating_sub(HEADERS_RESERVE_BYTES));
        Ok(Self {
            shared,
            writer: Mutex::new(Writer {
                next_lsn: replayed.next_lsn,
                next_sequence: marker_sequence + 1,
                outgoing,
            }),
            stream,
            client,
            handle,
            runtime,
            epoch: options.epoch,
            extent_messages: options.extent_messages,
            batch_size_bytes_max,
            request_timeout,
        })
    }

    /// This owner's epoch.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The stream's name.
    pub fn stream_name(&self) -> &str {
        &self.shared.stream_name
    }

    /// The name of the server leading the stream's replicas now (`None` while there is none).
    pub fn stream_leader(&self) -> Result<Option<String>, Error> {
        let mut stream = self.stream.clone();
        let name = self.shared.stream_name.clone();
        run(&self.handle, async move {
            let info = stream.info().await.map_err(|error| Error::Stream {
                stream: name,
                operation: "asking its state",
                reason: error.to_string(),
            })?;
            Ok(info
                .cluster
                .as_ref()
                .and_then(|cluster| cluster.leader.clone()))
        })
    }

    /// The name of the server the client is connected to now.
    pub fn connected_server(&self) -> String {
        self.client.server_info().server_name
    }

    /// The most encoded bytes one batch may take (below the server's `max_payload`).
    pub fn batch_size_bytes_max(&self) -> usize {
        self.batch_size_bytes_max
    }

    fn refusal_error(&self) -> Option<statelog_store::Error> {
        self.shared.refused().map(refusal_to_store)
    }

    /// Queues one message of `records` (with origins) in order; returns its first LSN and the
    /// sequence it must get.
    fn enqueue(
        &self,
        kind: Type,
        records: &[OutgoingRecord<'_>],
        purge_below: Option<u64>,
        acknowledge: bool,
        on_durable: Option<OnDurable>,
    ) -> Result<(Lsn, u64), statelog_store::Error> {
        if let Some(refusal) = self.refusal_error() {
            return Err(refusal);
        }
        let size_bytes = body_size_bytes(records.iter().map(|record| record.2.len()));
        if records.len() > BATCH_RECORDS_MAX || size_bytes > self.batch_size_bytes_max {
            return Err(Error::BatchTooLarge {
                records_count: records.len(),
                size_bytes,
                limit_bytes: self.batch_size_bytes_max,
                limit_records: BATCH_RECORDS_MAX,
            }
            .into());
        }
        let body = encode_body(records.iter().copied());
        let count = records.len() as u64;
        let mut writer = self.writer.lock();
        // The window: at most PIPELINE_MESSAGES_MAX messages between queueing and their
        // acknowledgement's processing (the fence's argument needs the bound).
        {
            let mut state = self.shared.state.lock();
            while state.in_flight_count >= PIPELINE_MESSAGES_MAX && state.refusal.is_none() {
                self.shared.changed.wait(&mut state);
            }
            if let Some(refusal) = &state.refusal {
                return Err(refusal_to_store(Arc::clone(refusal)));
            }
        }
        let first_lsn = writer.next_lsn;
        let sequence = writer.next_sequence;
        let id = message_id(self.epoch, sequence);
        let mut headers = headers(kind, first_lsn);
        if let Some(below) = purge_below {
            headers.insert(HEADER_PURGE_BELOW, below.to_string().as_str());
        }
        let message = Publish::build()
            .headers(headers)
            .payload(body.into())
            .message_id(id)
            .expected_last_sequence(sequence - 1);
        {
            let mut state = self.shared.state.lock();
            state.in_flight_count += 1;
            state.writes_count += 1;
            if acknowledge && count > 0 {
                state.horizon_lsn = state.horizon_lsn.max(first_lsn + count - 1);
            }
        }
        let outgoing = Outgoing {
            message,
            pending: Pending {
                epoch: self.epoch,
                sequence,
                first_lsn,
                count,
                size_bytes: size_bytes as u64,
                on_durable,
            },
        };
        if let Err(unsent) = writer.outgoing.send(outgoing) {
            let refusal = self.shared.refuse(Error::Stopped);
            if let Some(on_durable) = unsent.0.pending.on_durable {
                drop(on_durable);
            }
            return Err(refusal_to_store(refusal));
        }
        writer.next_lsn += count;
        writer.next_sequence += 1;
        Ok((Lsn(first_lsn), sequence))
    }

    /// Blocks until the message at `sequence` is acknowledged (acknowledgements come in order),
    /// or the log refuses.
    fn wait_acknowledged(&self, sequence: u64) -> Result<(), statelog_store::Error> {
        let mut state = self.shared.state.lock();
        loop {
            if state.last_sequence >= sequence {
                return Ok(());
            }
            if let Some(refusal) = &state.refusal {
                return Err(refusal_to_store(Arc::clone(refusal)));
            }
            self.shared.changed.wait(&mut state);
        }
    }

    /// A caller's batch as the log writes it: refused when empty or holding a kind that is not
    /// a caller's; each record with origin 0 (written here first, not copied forward).
    fn caller_records<'r>(
        records: &[(u8, &'r [u8])],
    ) -> Result<Vec<OutgoingRecord<'r>>, statelog_store::Error> {
        if records.is_empty() {
            return Err(statelog_wal::Error::EmptyBatch.into());
        }
        records
            .iter()
            .map(|&(kind, payload)| {
                RecordKind::new(kind)?;
                Ok((kind, 0, payload))
            })
            .collect()
    }

    fn get(&self, sequence: u64) -> Result<Fetched, Error> {
        let stream = self.stream.clone();
        let name = self.shared.stream_name.clone();
        run(&self.handle, async move {
            let message = stream
                .get_raw_message(sequence)
                .await
                .map_err(|error| Error::Read {
                    stream: name.clone(),
                    sequence,
                    reason: error.to_string(),
                })?;
            parse_fetched(
                &name,
                sequence,
                Some(&message.headers),
                message.payload.to_vec(),
            )
        })
    }

    /// The first sequence of the extent holding `sequence`.
    fn extent_start(&self, sequence: u64) -> u64 {
        (sequence.max(1) - 1) / self.extent_messages * self.extent_messages + 1
    }

    /// Purges below `sequence` unless refused, and forgets the entries there.
    fn purge_below(&self, sequence: u64) -> Result<(), statelog_store::Error> {
        if let Some(refusal) = self.refusal_error() {
            return Err(refusal);
        }
        purge(&self.handle, &self.stream, sequence)?;
        self.shared.state.lock().forget_below(sequence);
        Ok(())
    }
}

fn refusal_to_store(refusal: Arc<Error>) -> statelog_store::Error {
    if refusal.is_fence() {
        statelog_store::Error::Fenced
    } else {
        Error::Poisoned { cause: refusal }.into()
    }
}

fn purge(
    handle: &tokio::runtime::Handle,
    stream: &stream::Stream,
    below: u64,
) -> Result<(), Error> {
    let stream = stream.clone();
    run(handle, async move {
        stream
            .purge()
            .sequence(below)
            .await
            .map(|_| ())
            .map_err(|error| Error::Stream {
                stream: stream.cached_info().config.name.clone(),
                operation: "purging",
                reason: error.to_string(),
            })
    })
}

/// What connecting found.
struct Connected {
    client: async_nats::Client,
    /// Publishes wait `ack_timeout_ms` for their acknowledgements.
    publishing: async_nats::jetstream::Context,
    /// Every other call waits `request_timeout_ms` for its answer.
    requests: async_nats::jetstream::Context,
    stream: stream::Stream,
    first_sequence: u64,
    last_sequence: u64,
    max_payload_bytes: usize,
}

/// `ask`'s answer, asked up to [`STREAM_SETUP_ATTEMPTS`] times until it succeeds; the last
/// failure is the error. For the setup steps that a stream's or the meta group's leader
/// election times out (creating or finding the stream, creating a consumer).
async fn asked_again<T, E, Asked>(mut ask: impl FnMut() -> Asked) -> Result<T, E>
where
    Asked: Future<Output = Result<T, E>>,
{
    let mut attempt = 1;
    loop {
        match ask().await {
            Ok(answer) => return Ok(answer),
            Err(error) if attempt >= STREAM_SETUP_ATTEMPTS => return Err(error),
            Err(_) => attempt += 1,
        }
    }
}

async fn connect(options: JetStreamOptions) -> Result<Connected, Error> {
    let request_timeout = Duration::from_millis(options.request_timeout_ms);
    let client = async_nats::ConnectOptions::new()
        .name(format!(
            "statelog {} epoch {}",
            options.stream, options.epoch
        ))
        .request_timeout(Some(request_timeout))
        .connect(options.urls.as_slice())
        .await
        .map_err(|error| Error::Connect {
            urls: options.urls.join(","),
            reason: error.to_string(),
        })?;
    let max_payload_bytes = client.server_info().max_payload;
    let publishing = async_nats::jetstream::context::ContextBuilder::new()
        .timeout(Duration::from_millis(options.ack_timeout_ms))
        .build(client.clone());
    let requests = async_nats::jetstream::context::ContextBuilder::new()
        .timeout(request_timeout)
        .build(client.clone());
    let failed = |operation, reason: String| Error::Stream {
        stream: options.stream.clone(),
        operation,
        reason,
    };
    // Creating or finding the stream is idempotent: a timeout (a meta leader change) is asked
    // again, a few times; each ask waits the request timeout.
    let config = stream::Config {
        name: options.stream.clone(),
        subjects: vec![options.subject.clone()],
        storage: StorageType::File,
        num_replicas: options.replicas,
        // The takeover is one atomic batch.
        allow_atomic_publish: true,
        ..Default::default()
    };
    let (stream, info) = {
        let (requests, config, failed) = (&requests, &config, &failed);
        asked_again(|| async move {
            let mut stream = requests
                .get_or_create_stream(config.clone())
                .await
                .map_err(|error| failed("creating or finding", error.to_string()))?;
            let info = stream
                .info()
                .await
                .map_err(|error| failed("asking its state", error.to_string()))?
                .clone();
            Ok::<_, Error>((stream, info))
        })
        .await?
    };
    let (first_sequence, last_sequence) = (info.state.first_sequence, info.state.last_sequence);
    Ok(Connected {
        client,
        publishing,
        requests,
        stream,
        first_sequence,
        last_sequence,
        max_payload_bytes,
    })
}

/// The pipeline task: publishes each queued message in order and processes the
/// acknowledgements in the same order, in one task (one hop from the caller's thread, none
/// between publishing and acknowledging). It publishes every message already queued before it
/// looks at the oldest acknowledgement, so a burst goes out back to back; the window bounds
/// the queue, so acknowledgements are not starved. The first failure refuses the log.
async fn pipelining(
    context: async_nats::jetstream::Context,
    subject: String,
    shared: Arc<Shared>,
    mut outgoing: mpsc::UnboundedReceiver<Outgoing>,
) {
    // Shared bytes: a clone per message copies nothing.
    let subject = async_nats::Subject::from(subject.as_str());
    let mut in_flight: VecDeque<InFlight> = VecDeque::new();
    let mut queued = true;
    loop {
        tokio::select! {
            biased;
            received = outgoing.recv(), if queued => match received {
                Some(Outgoing { message, pending }) => {
                    let result = if shared.refused().is_some() {
                        Err(Error::Stopped)
                    } else {
                        context
                            .send_publish(subject.clone(), message)
                            .await
                            .map(IntoFuture::into_future)
                            .map_err(|error| {
                                publish_error(&shared.stream_name, &pending.message_id(), &error)
                            })
                    };
                    in_flight.push_back((result, pending));
                }
                None => queued = false,
            },
            outcome = acknowledgement(&shared, in_flight.front_mut()), if !in_flight.is_empty() => {
                if let Some((_, pending)) = in_flight.pop_front() {
                    settle(&shared, pending, outcome);
                }
            },
            else => return,
        }
    }
}

/// The outcome of the oldest message in flight: its acknowledgement awaited (cancel-safe: the
/// future stays in the queue), or the refusal or publish failure it already has. Once refused,
/// an acknowledgement is not awaited (each would wait out its timeout): its message expects
/// the sequence of one the server refused or may not have.
async fn acknowledgement(shared: &Shared, front: Option<&mut InFlight>) -> Result<(), Error> {
    let Some((result, pending)) = front else {
        return Err(Error::Stopped);
    };
    if let Some(refusal) = shared.refused() {
        return Err(Error::Poisoned { cause: refusal });
    }
    let future = match result {
        Ok(future) => future,
        Err(error) => return Err(std::mem::replace(error, Error::Stopped)),
    };
    match future.await {
        Err(error) => Err(publish_error(
            &shared.stream_name,
            &pending.message_id(),
            &error,
        )),
        Ok(ack) if ack.duplicate => Err(Error::Duplicate {
            stream: shared.stream_name.clone(),
            message_id: pending.message_id(),
        }),
        Ok(ack) if ack.sequence != pending.sequence => Err(Error::UnexpectedSequence {
            stream: shared.stream_name.clone(),
            message_id: pending.message_id(),
            sequence: ack.sequence,
            expected: pending.sequence,
        }),
        Ok(_) => Ok(()),
    }
}

/// Processes the oldest message's outcome: moves the acknowledged end, or refuses the log, and
/// tells a notified append.
fn settle(shared: &Shared, pending: Pending, outcome: Result<(), Error>) {
    let told = {
        let mut state = shared.state.lock();
        state.in_flight_count = state.in_flight_count.saturating_sub(1);
        match (&state.refusal, outcome) {
            (Some(refusal), _) => Err(Arc::clone(refusal)),
            (None, Err(error)) => {
                let refusal = Arc::new(error);
                state.refusal = Some(Arc::clone(&refusal));
                Err(refusal)
            }
            (None, Ok(())) => {
                if pending.count > 0 {
                    state.entries.push_back(Entry {
                        sequence: pending.sequence,
                        first_lsn: pending.first_lsn,
                        count: pending.count,
                        size_bytes: pending.size_bytes,
                    });
                    state.acked_lsn = pending.first_lsn + pending.count - 1;
                }
                state.last_sequence = pending.sequence;
                Ok(())
            }
        }
    };
    shared.changed.notify_all();
    if let Some(on_durable) = pending.on_durable {
        on_durable(told.map_err(refusal_to_store));
    }
}

impl Drop for JetStreamLog {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Log for JetStreamLog {
    fn append_batch(&self, records: &[(u8, &[u8])]) -> Result<Lsn, statelog_store::Error> {
        self.append(records, Durability::Synced)
    }

    fn read(&self, lsn: Lsn) -> Result<Option<(u8, Vec<u8>)>, statelog_store::Error> {
        let (sequence, first_lsn) = {
            let state = self.shared.state.lock();
            let durable = state.durable_lsn();
            if lsn.0 == 0 || lsn.0 > durable {
                return Err(statelog_wal::Error::LsnOutOfRange {
                    lsn,
                    first: Lsn(state.first_lsn),
                    next: Lsn(durable + 1),
                }
                .into());
            }
            match state.find(lsn.0) {
                Some(index) => (
                    state.entries[index].sequence,
                    state.entries[index].first_lsn,
                ),
                None => return Ok(None),
            }
        };
        let fetched = self.get(sequence)?;
        let records = decode_body(&fetched.payload).map_err(|reason| Error::Decode {
            stream: self.shared.stream_name.clone(),
            sequence,
            reason,
        })?;
        let index = usize::try_from(lsn.0 - first_lsn).unwrap_or(usize::MAX);
        Ok(records.get(index).map(|record| {
            (
                record.kind,
                fetched.payload[record.payload.clone()].to_vec(),
            )
        }))
    }

    fn scan(&self, visit: &mut Visit<'_>) -> Result<(), statelog_store::Error> {
        self.scan_from(Lsn(1), &mut |record| {
            visit(record.lsn, record.kind, record.payload)
        })
    }

    fn append(
        &self,
        records: &[(u8, &[u8])],
        durability: Durability,
    ) -> Result<Lsn, statelog_store::Error> {
        let records = Self::caller_records(records)?;
        let synced = durability == Durability::Synced;
        let (first, sequence) = self.enqueue(Type::Batch, &records, None, synced, None)?;
        if synced {
            self.wait_acknowledged(sequence)?;
        }
        Ok(first)
    }

    fn append_notify(
        &self,
        records: &[(u8, &[u8])],
        on_durable: OnDurable,
    ) -> Result<Lsn, statelog_store::Error> {
        let records = Self::caller_records(records)?;
        let (first, _) = self.enqueue(Type::Batch, &records, None, true, Some(on_durable))?;
        Ok(first)
    }

    fn notifies(&self) -> bool {
        true
    }

    fn commit_in_flight(&self) -> bool {
        self.shared.state.lock().in_flight_count > 0
    }

    fn sync(&self, upto: Lsn) -> Result<Lsn, statelog_store::Error> {
        if let Some(refusal) = self.refusal_error() {
            return Err(refusal);
        }
        let last_sequence = {
            let writer = self.writer.lock();
            let mut state = self.shared.state.lock();
            state.horizon_lsn = state.horizon_lsn.max(writer.next_lsn - 1);
            writer.next_sequence - 1
        };
        self.wait_acknowledged(last_sequence)?;
        let durable = self.shared.state.lock().durable_lsn();
        debug_assert!(durable >= upto.0.min(durable));
        Ok(Lsn(durable))
    }

    fn scan_from(
        &self,
        from: Lsn,
        visit: &mut VisitRecord<'_>,
    ) -> Result<(), statelog_store::Error> {
        let (first_sequence, last_sequence, durable) = {
            let state = self.shared.state.lock();
            let durable = state.durable_lsn();
            let from = from.0.max(state.first_lsn);
            let start = state
                .entries
                .partition_point(|entry| entry.last_lsn() < from);
            let end = state
                .entries
                .partition_point(|entry| entry.first_lsn <= durable);
            if start >= end {
                return Ok(());
            }
            (
                state.entries[start].sequence,
                state.entries[end - 1].sequence,
                durable,
            )
        };
        let mut messages = fetch_range(
            &self.handle,
            self.stream.clone(),
            first_sequence,
            last_sequence,
            self.request_timeout,
        );
        while let Some(fetched) = messages.blocking_recv() {
            let fetched = fetched?;
            if fetched.kind == Type::Takeover {
                continue;
            }
            let records = decode_body(&fetched.payload).map_err(|reason| Error::Decode {
                stream: self.shared.stream_name.clone(),
                sequence: fetched.sequence,
                reason,
            })?;
            for (offset, record) in records.iter().enumerate() {
                let lsn = fetched.lsn + offset as u64;
                if lsn < from.0 || lsn > durable {
                    continue;
                }
                visit(&LogRecord {
                    lsn: Lsn(lsn),
                    origin_lsn: Lsn(if record.origin == 0 {
                        lsn
                    } else {
                        record.origin
                    }),
                    kind: record.kind,
                    payload: &fetched.payload[record.payload.clone()],
                })?;
            }
        }
        Ok(())
    }

    fn wait_for(&self, lsn: Lsn, timeout: Duration) -> Result<bool, statelog_store::Error> {
        let timeout = timeout.min(Duration::from_millis(
            statelog_store::limits::TAIL_WAIT_MS_MAX,
        ));
        let deadline = Instant::now() + timeout;
        let mut state = self.shared.state.lock();
        while state.durable_lsn() < lsn.0 {
            if self
                .shared
                .changed
                .wait_until(&mut state, deadline)
                .timed_out()
            {
                return Ok(state.durable_lsn() >= lsn.0);
            }
        }
        Ok(true)
    }

    fn trim_below(&self, lsn: Lsn) -> Result<Lsn, statelog_store::Error> {
        let (bound, first_sequence) = {
            let state = self.shared.state.lock();
            let below = lsn.0.min(state.durable_lsn() + 1);
            // The first message holding a record at or after the position, else the last one
            // (a purge never takes the last message: the fence's last id stays on it).
            let index = state
                .entries
                .partition_point(|entry| entry.last_lsn() < below);
            let sequence = state
                .entries
                .get(index)
                .map_or(state.last_sequence, |entry| entry.sequence)
                .min(state.last_sequence);
            (self.extent_start(sequence), state.first_sequence)
        };
        if bound > first_sequence {
            self.purge_below(bound)?;
        }
        Ok(Lsn(self.shared.state.lock().first_lsn))
    }

    fn extents(&self) -> Vec<Extent> {
        let state = self.shared.state.lock();
        let mut extents = Vec::new();
        if state.last_sequence < state.first_sequence {
            return extents;
        }
        let mut entries = state.entries.iter().peekable();
        let mut start = self.extent_start(state.first_sequence);
        while start <= state.last_sequence {
            let end = start + self.extent_messages - 1;
            let mut size_bytes = 0;
            let mut first_lsn = None;
            while let Some(entry) = entries.next_if(|entry| entry.sequence <= end) {
                first_lsn.get_or_insert(entry.first_lsn);
                size_bytes += entry.size_bytes;
            }
            let first_lsn = first_lsn.unwrap_or_else(|| {
                entries
                    .peek()
                    .map_or(state.after_acked(), |entry| entry.first_lsn)
            });
            extents.push(Extent {
                first_lsn: Lsn(first_lsn),
                size_bytes,
                sealed: end <= state.last_sequence,
            });
            start = end + 1;
        }
        extents
    }

    fn compact_below(
        &self,
        below: Lsn,
        keep: &mut Keep<'_>,
        progress: &mut dyn FnMut(&CompactionProgress),
    ) -> Result<Compacted, statelog_store::Error> {
        if let Some(refusal) = self.refusal_error() {
            return Err(refusal);
        }
        // The first sequence not to compact: the start of the first extent that is not sealed
        // or holds a record at or after `below`.
        let (first_sequence, bound, originals) = {
            let state = self.shared.state.lock();
            let durable = state.durable_lsn();
            let mut start = self.extent_start(state.first_sequence);
            loop {
                let end = start + self.extent_messages - 1;
                let sealed = end <= state.last_sequence;
                let reaches = state
                    .entries
                    .iter()
                    .filter(|entry| entry.sequence >= start && entry.sequence <= end)
                    .any(|entry| entry.last_lsn() >= below.0 || entry.last_lsn() > durable);
                if !sealed || reaches {
                    break;
                }
                start = end + 1;
            }
            let originals: Vec<Entry> = state
                .entries
                .iter()
                .take_while(|entry| entry.sequence < start)
                .copied()
                .collect();
            (state.first_sequence, start, originals)
        };
        if bound <= first_sequence {
            return Ok(Compacted::default());
        }
        let extents_total = (bound - self.extent_start(first_sequence)) / self.extent_messages;
        let mut done = Compacted::default();
        let mut told = CompactionProgress {
            segments_total_count: extents_total,
            ..CompactionProgress::default()
        };
        // Copies in chunks of whole original messages, each naming the sequence below which
        // the originals are superseded.
        let mut chunk: Vec<(u8, u64, Vec<u8>, u64)> = Vec::new();
        let mut chunk_size_bytes = BODY_HEAD_BYTES;
        if let Some(last) = originals.last() {
            let mut messages = fetch_range(
                &self.handle,
                self.stream.clone(),
                originals[0].sequence,
                last.sequence,
                self.request_timeout,
            );
            while let Some(fetched) = messages.blocking_recv() {
                let fetched = fetched?;
                if fetched.kind == Type::Takeover || fetched.sequence >= bound {
                    continue;
                }
                let records = decode_body(&fetched.payload).map_err(|reason| Error::Decode {
                    stream: self.shared.stream_name.clone(),
                    sequence: fetched.sequence,
                    reason,
                })?;
                let mut kept = Vec::new();
                for (offset, record) in records.iter().enumerate() {
                    let lsn = fetched.lsn + offset as u64;
                    let origin = if record.origin == 0 {
                        lsn
                    } else {
                        record.origin
                    };
                    let payload = &fetched.payload[record.payload.clone()];
                    told.scanned_size_bytes += payload.len() as u64;
                    if keep(&LogRecord {
                        lsn: Lsn(lsn),
                        origin_lsn: Lsn(origin),
                        kind: record.kind,
                        payload,
                    }) {
                        kept.push((record.kind, origin, payload.to_vec(), lsn));
                    } else {
                        done.records_dropped_count += 1;
                        told.records_dropped_count += 1;
                    }
                }
                let kept_size_bytes: usize = kept
                    .iter()
                    .map(|record| RECORD_HEAD_BYTES + record.2.len())
                    .sum();
                if !chunk.is_empty()
                    && (chunk_size_bytes + kept_size_bytes > self.batch_size_bytes_max
                        || chunk.len() + kept.len() > BATCH_RECORDS_MAX)
                {
                    self.copy_chunk(&mut chunk, fetched.sequence, &mut done, &mut told)?;
                    chunk_size_bytes = BODY_HEAD_BYTES;
                    progress(&told);
                }
                chunk_size_bytes += kept_size_bytes;
                chunk.extend(kept);
            }
        }
        self.copy_chunk(&mut chunk, bound, &mut done, &mut told)?;
        self.purge_below(bound)?;
        done.extents_dropped_count = extents_total;
        told.segments_scanned_count = extents_total;
        told.segments_deleted_count = extents_total;
        progress(&told);
        Ok(done)
    }

    fn stats(&self) -> LogStats {
        let next_lsn = self.writer.lock().next_lsn;
        let state = self.shared.state.lock();
        LogStats {
            first_lsn: Lsn(state.first_lsn),
            next_lsn: Lsn(next_lsn),
            durable_lsn: Lsn(state.durable_lsn()),
            syncs_count: 0,
            writes_count: state.writes_count,
        }
    }

    fn refusal(&self) -> Option<statelog_store::Error> {
        self.refusal_error()
    }
}

impl JetStreamLog {
    /// Writes one compaction copy (synced) of `chunk`, superseding the originals below
    /// `purge_below`, and records the LSN mapping.
    fn copy_chunk(
        &self,
        chunk: &mut Vec<(u8, u64, Vec<u8>, u64)>,
        purge_below: u64,
        done: &mut Compacted,
        told: &mut CompactionProgress,
    ) -> Result<(), statelog_store::Error> {
        let records: Vec<OutgoingRecord<'_>> = chunk
            .iter()
            .map(|(kind, origin, payload, _)| (*kind, *origin, payload.as_slice()))
            .collect();
        let (first, sequence) =
            self.enqueue(Type::Compaction, &records, Some(purge_below), true, None)?;
        self.wait_acknowledged(sequence)?;
        for (offset, (_, _, payload, old)) in chunk.iter().enumerate() {
            done.lsn_mapping
                .push((Lsn(*old), Lsn(first.0 + offset as u64)));
            told.records_copied_count += 1;
            told.copied_size_bytes += (RECORD_HEAD_BYTES + payload.len()) as u64;
        }
        chunk.clear();
        Ok(())
    }
}
