//! node: one statelog node's membership of the cluster, driven over NATS KV. It registers the
//! node in `statelog_nodes` and keeps the entry fresh, watches the node and lease buckets, runs
//! [`crate::lease::decide`] on every change and every tick, carries its actions out with
//! create-only and compare-and-set writes, and reports each ownership change to an
//! [`OwnershipSink`] as it happens.
//!
//! Invariants: [`Ownership::Lost`] is delivered before the lease is released, and at once when
//! the lease is found taken or a renewal is refused or late; [`Ownership::Acquired`] carries the
//! acquiring revision as the epoch, so epochs of one partition strictly grow. Time is the tokio
//! monotonic clock of this process: liveness is never judged by another machine's wall time.
//! Must not: block on the sink (it is called on the driver's task); hold a partition past its
//! renew deadline; retry a refused compare-and-set with a guessed revision.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_nats::jetstream::kv;
use futures_util::StreamExt as _;
use serde::{Deserialize, Serialize};
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

use crate::buckets::{self, LEASES_BUCKET, NODES_BUCKET};
use crate::config;
use crate::error::{Error, NodeNameProblem};
use crate::lease::{
    decide, lease_key, partition_of_key, Action, Expected, Held, LeaseValue, LostReason, Timing,
    Unanswered, View,
};
use crate::limits::{LEASE_MS, LISTEN_BYTES_MAX, NODE_NAME_BYTES_MAX, REQUEST_TIMEOUT_MS};
use crate::partition::PartitionIndex;

/// A change of what this node owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ownership {
    /// This node now owns `partition`: open its log with `epoch`, then its engine.
    Acquired {
        /// The partition.
        partition: PartitionIndex,
        /// The lease's acquiring revision: the log's fencing epoch.
        epoch: u64,
    },
    /// This node no longer owns `partition`: stop its engine at once.
    Lost {
        /// The partition.
        partition: PartitionIndex,
        /// Why.
        reason: LostReason,
    },
}

/// Where ownership changes go. `deliver` runs on the driver's task: for `Lost` it must stop
/// the partition's appends before returning (drop its log handle); for `Acquired` it must hand
/// the opening (replay) to another task, so renewals of other partitions are not held up.
pub trait OwnershipSink: Send + Sync + 'static {
    /// One change, in the order they happen.
    fn deliver(&self, event: Ownership);
}

impl<F: Fn(Ownership) + Send + Sync + 'static> OwnershipSink for F {
    fn deliver(&self, event: Ownership) {
        self(event);
    }
}

/// A node registry entry's value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeEntry {
    /// The address the node serves the API on.
    pub listen: String,
    /// When the node started, milliseconds since the Unix epoch (wall clock; informational).
    pub started_ms: u64,
}

/// How a node takes part.
#[derive(Debug, Clone)]
pub struct NodeOptions {
    /// The node's name: 1..=64 bytes of `A-Z a-z 0-9 - _`, unique in the cluster.
    pub name: String,
    /// The address it serves the API on (registered for other nodes and operators).
    pub listen: String,
    /// The lease length ([`LEASE_MS`] by default; tests shorten it).
    pub lease_ms: u64,
}

impl NodeOptions {
    /// Options with the default lease.
    pub fn new(name: impl Into<String>, listen: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            listen: listen.into(),
            lease_ms: LEASE_MS,
        }
    }
}

/// Checks a node name: a KV key and a NATS subject token.
pub fn check_node_name(name: &str) -> Result<(), Error> {
    let problem = if name.is_empty() {
        Some(NodeNameProblem::Empty)
    } else if name.len() > NODE_NAME_BYTES_MAX {
        Some(NodeNameProblem::TooLong)
    } else if !name
        .bytes()
        .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
    {
        Some(NodeNameProblem::BadCharacter)
    } else {
        None
    };
    match problem {
        Some(problem) => Err(Error::NodeName {
            name: name.to_owned(),
            problem,
        }),
        None => Ok(()),
    }
}

/// A running node: its driver task, and what it owns now.
#[derive(Debug)]
pub struct Node {
    name: String,
    partitions: u32,
    owned: watch::Receiver<BTreeMap<PartitionIndex, u64>>,
    owners: watch::Receiver<BTreeMap<PartitionIndex, String>>,
    held_until: watch::Receiver<BTreeMap<PartitionIndex, Instant>>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Node {
    /// Joins the cluster `client` is connected to: reads its config (refusing an
    /// uninitialized cluster), registers this node, and starts the driver on the current
    /// tokio runtime. Ownership changes go to `sink`.
    pub async fn start(
        client: async_nats::Client,
        options: NodeOptions,
        sink: Arc<dyn OwnershipSink>,
    ) -> Result<Self, Error> {
        check_node_name(&options.name)?;
        if options.listen.len() > LISTEN_BYTES_MAX {
            return Err(Error::ListenTooLong {
                length_bytes: options.listen.len(),
                limit_bytes: LISTEN_BYTES_MAX,
            });
        }
        let timing = Timing::for_lease_ms(options.lease_ms)?;
        let config = config::load_with(&client).await?;
        let request_ms = crate::limits::REQUEST_TIMEOUT_MS;
        let nodes = buckets::open_or_create(&client, NODES_BUCKET, request_ms).await?;
        let leases = buckets::open_or_create(&client, LEASES_BUCKET, request_ms).await?;
        let entry = NodeEntry {
            listen: options.listen.clone(),
            started_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
                .unwrap_or(0),
        };
        let (owned_sender, owned) = watch::channel(BTreeMap::new());
        let (owners_sender, owners) = watch::channel(BTreeMap::new());
        let (held_until_sender, held_until) = watch::channel(BTreeMap::new());
        let mut driver = Driver {
            name: options.name.clone(),
            partitions: config.partitions,
            timing,
            nodes,
            leases,
            entry: buckets::encode(&entry),
            sink,
            view: View::default(),
            epoch: Instant::now(),
            last_beat_ms: None,
            unanswered: BTreeMap::new(),
            owned: owned_sender,
            owners: owners_sender,
            held_until: held_until_sender,
        };
        // Register before deciding, so others count this node when they balance.
        if let Some(beat) = driver.beat(REQUEST_TIMEOUT_MS) {
            driver.last_beat_ms = Some(beat.await?);
        }
        // It owns nothing yet, so no renew deadline bounds this first read: it gets as long as
        // `init`/`load` requests do (a loaded machine can take longer than a lease tick).
        let mut watches = Some(driver.resync(REQUEST_TIMEOUT_MS).await?);
        let (stop, mut stopped) = oneshot::channel();
        let task = tokio::spawn(async move {
            driver.run(&mut watches, &mut stopped).await;
        });
        Ok(Self {
            name: options.name,
            partitions: config.partitions,
            owned,
            owners,
            held_until,
            stop: Some(stop),
            task: Some(task),
        })
    }

    /// The node's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The cluster's partition count.
    pub fn partitions(&self) -> u32 {
        self.partitions
    }

    /// The partitions owned now, with their epochs.
    pub fn owned(&self) -> BTreeMap<PartitionIndex, u64> {
        self.owned.borrow().clone()
    }

    /// Who holds each partition's lease as this node last saw the leases (itself for what it
    /// holds); a partition absent has no holder now. A hint for routing, never for safety:
    /// the holder named may have lost the lease since (it then answers that it does not own
    /// the partition, and the caller asks again).
    pub fn owners(&self) -> BTreeMap<PartitionIndex, String> {
        self.owners.borrow().clone()
    }

    /// The holder of `partition`'s lease as [`Node::owners`] names it.
    pub fn owner_of(&self, partition: PartitionIndex) -> Option<String> {
        self.owners.borrow().get(&partition).cloned()
    }

    /// A receiver of, for each partition this node holds, the instant its renew deadline
    /// passes (its last renewal's send plus the renew deadline, on this node's monotonic
    /// clock). A caller that serves a partition checks it against `Instant::now()` itself, so
    /// a node resumed after a pause past its lease stops serving at once, before its driver
    /// has run again to drop the partition.
    pub fn held_until_watch(&self) -> watch::Receiver<BTreeMap<PartitionIndex, Instant>> {
        self.held_until.clone()
    }

    /// A receiver that changes whenever the owners seen do.
    pub fn owners_watch(&self) -> watch::Receiver<BTreeMap<PartitionIndex, String>> {
        self.owners.clone()
    }

    /// A receiver that changes whenever the owned set does.
    pub fn owned_watch(&self) -> watch::Receiver<BTreeMap<PartitionIndex, u64>> {
        self.owned.clone()
    }

    /// Leaves the cluster cleanly: every partition is reported lost ([`LostReason::Shutdown`])
    /// and released, and the registry entry deleted, so others take over at once.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            // An error means the driver already ended.
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            // A panicked or aborted driver has nothing left to release.
            let _ = task.await;
        }
    }

    /// Stops the driver where it is, as a crash would: nothing is released, no event is
    /// delivered; others take the partitions once the leases run out.
    pub fn abort(mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// The two KV watches.
struct Watches {
    nodes: kv::Watch,
    leases: kv::Watch,
}

/// The driver's state, owned by its task.
struct Driver {
    name: String,
    partitions: u32,
    timing: Timing,
    nodes: kv::Store,
    leases: kv::Store,
    entry: Vec<u8>,
    sink: Arc<dyn OwnershipSink>,
    view: View,
    /// The zero of this node's monotonic milliseconds.
    epoch: Instant,
    last_beat_ms: Option<u64>,
    owned: watch::Sender<BTreeMap<PartitionIndex, u64>>,
    /// The holders seen, published with `owned`.
    owners: watch::Sender<BTreeMap<PartitionIndex, String>>,
    /// When each held partition's renew deadline passes, published with `owned`.
    held_until: watch::Sender<BTreeMap<PartitionIndex, Instant>>,
    /// Acquisitions whose answer never came, until the watch shows what became of them.
    unanswered: BTreeMap<PartitionIndex, Unanswered>,
}

/// What one watch produced.
enum Event {
    Node(Option<Result<kv::Entry, kv::WatcherError>>),
    Lease(Option<Result<kv::Entry, kv::WatcherError>>),
    Tick,
    Stop,
}

impl Driver {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    async fn run(&mut self, watches: &mut Option<Watches>, stopped: &mut oneshot::Receiver<()>) {
        loop {
            // Wake on the tick, or sooner on the earliest renew deadline.
            let wait_ms = self
                .until_deadline_ms()
                .map_or(self.timing.tick_ms, |left_ms| {
                    left_ms.clamp(1, self.timing.tick_ms)
                });
            let tick = tokio::time::sleep(std::time::Duration::from_millis(wait_ms));
            let event = match watches.as_mut() {
                Some(current) => tokio::select! {
                    biased;
                    _ = &mut *stopped => Event::Stop,
                    item = current.leases.next() => Event::Lease(item),
                    item = current.nodes.next() => Event::Node(item),
                    () = tick => Event::Tick,
                },
                None => tokio::select! {
                    biased;
                    _ = &mut *stopped => Event::Stop,
                    () = tick => Event::Tick,
                },
            };
            match event {
                Event::Stop => {
                    self.leave().await;
                    return;
                }
                Event::Lease(Some(Ok(entry))) => self.observe_lease(&entry),
                Event::Node(Some(Ok(entry))) => self.observe_node(&entry),
                // A broken or ended watch: start again from a scan (a reconnect may have
                // lost entries). Until then, leases still lapse on the deadline.
                Event::Lease(_) | Event::Node(_) => *watches = None,
                Event::Tick => {}
            }
            // Decide first: a lapsed lease is dropped before anything else may wait on NATS.
            self.step().await;
            if watches.is_none() {
                // Bounded by the earliest renew deadline, so a slow resync cannot hold a
                // partition past it; an unfinished one is tried again on the next turn.
                let bound_ms = self
                    .until_deadline_ms()
                    .map_or(crate::limits::REQUEST_TIMEOUT_MS, |left_ms| left_ms.max(1));
                let resynced = tokio::time::timeout(
                    std::time::Duration::from_millis(bound_ms),
                    self.resync(self.timing.request_timeout_ms),
                )
                .await;
                *watches = resynced.ok().and_then(Result::ok);
                self.drop_lapsed();
            }
        }
    }

    /// How long until the earliest renew deadline of a held partition, if any is held.
    fn until_deadline_ms(&self) -> Option<u64> {
        let now_ms = self.now_ms();
        self.view
            .held
            .values()
            .map(|held| (held.renewed_at_ms + self.timing.renew_deadline_ms).saturating_sub(now_ms))
            .min()
    }

    /// Drops every held partition past its renew deadline, at once.
    fn drop_lapsed(&mut self) {
        let now_ms = self.now_ms();
        let lapsed: Vec<PartitionIndex> = self
            .view
            .held
            .iter()
            .filter(|(_, held)| {
                now_ms.saturating_sub(held.renewed_at_ms) >= self.timing.renew_deadline_ms
            })
            .map(|(&partition, _)| partition)
            .collect();
        for partition in lapsed {
            self.lose(partition, LostReason::DeadlineMissed);
        }
        let deadline_ms = self.timing.renew_deadline_ms;
        self.unanswered
            .retain(|_, unanswered| now_ms.saturating_sub(unanswered.sent_ms) < deadline_ms);
        self.publish();
    }

    /// Watches both buckets, then reads every key, so nothing written between is missed (the
    /// view keeps the higher revision of a key, whichever order they come in).
    /// Each request is bounded by `timeout_ms`: in the loop, like a lease write, so a resync
    /// against an unreachable NATS ends within a tick or two and the loop gets back to its
    /// deadlines.
    async fn resync(&mut self, timeout_ms: u64) -> Result<Watches, Error> {
        let timeout_ms = timeout_ms.max(1);
        let nodes_watch = buckets::bounded(
            NODES_BUCKET,
            || "watch".into(),
            timeout_ms,
            self.nodes.watch_all(),
        )
        .await?
        .map_err(|error| bucket_error(NODES_BUCKET, "watch", error))?;
        let leases_watch = buckets::bounded(
            LEASES_BUCKET,
            || "watch".into(),
            timeout_ms,
            self.leases.watch_all(),
        )
        .await?
        .map_err(|error| bucket_error(LEASES_BUCKET, "watch", error))?;
        for (store, bucket) in [
            (self.nodes.clone(), NODES_BUCKET),
            (self.leases.clone(), LEASES_BUCKET),
        ] {
            let mut keys =
                buckets::bounded(bucket, || "list keys".into(), timeout_ms, store.keys())
                    .await?
                    .map_err(|error| bucket_error(bucket, "list keys", error))?;
            while let Some(key) = keys.next().await {
                let key = key.map_err(|error| bucket_error(bucket, "list keys", error))?;
                let entry = buckets::bounded(
                    bucket,
                    || format!("read {key}"),
                    timeout_ms,
                    store.entry(key.clone()),
                )
                .await?
                .map_err(|error| bucket_error(bucket, &format!("read {key}"), error))?;
                if let Some(entry) = entry {
                    if bucket == NODES_BUCKET {
                        self.observe_node(&entry);
                    } else {
                        self.observe_lease(&entry);
                    }
                }
            }
        }
        Ok(Watches {
            nodes: nodes_watch,
            leases: leases_watch,
        })
    }

    fn observe_lease(&mut self, entry: &kv::Entry) {
        let Some(partition) = partition_of_key(&entry.key, self.partitions) else {
            return;
        };
        let now_ms = self.now_ms();
        let deleted = entry.operation != kv::Operation::Put;
        // An entry that does not parse names no holder: it is treated as released, and the
        // next acquisition's compare-and-set replaces it.
        let value = if deleted {
            None
        } else {
            buckets::decode::<LeaseValue>(LEASES_BUCKET, &entry.key, &entry.value).ok()
        };
        let renewed = value.as_ref().map_or(0, |value| value.renewed);
        let holder = value.and_then(|value| value.node);
        if let Some(unanswered) = self.unanswered.get(&partition).copied() {
            if entry.revision > unanswered.after_revision {
                // The first revision past the unanswered write's expectation: it is that write
                // (adopted while its deadline allows) or someone else's.
                self.unanswered.remove(&partition);
                let seen = (holder.as_deref(), renewed, entry.revision, deleted);
                if !self.view.held.contains_key(&partition)
                    && unanswered.adopts(&self.name, seen, now_ms, &self.timing)
                {
                    self.view.held.insert(
                        partition,
                        Held {
                            epoch: entry.revision,
                            revision: entry.revision,
                            renewed_at_ms: unanswered.sent_ms,
                            renewed: 0,
                        },
                    );
                    self.sink.deliver(Ownership::Acquired {
                        partition,
                        epoch: entry.revision,
                    });
                }
            }
        }
        self.view
            .observe_lease(partition, holder, entry.revision, deleted, now_ms);
    }

    fn observe_node(&mut self, entry: &kv::Entry) {
        let now_ms = self.now_ms();
        let deleted = entry.operation != kv::Operation::Put;
        self.view
            .observe_node(&entry.key, entry.revision, deleted, now_ms);
    }

    /// The registry write due now, if one is: it answers when it was sent.
    /// The heartbeat due now, if any, its write bounded by `timeout_ms`.
    fn beat(
        &self,
        timeout_ms: u64,
    ) -> Option<impl std::future::Future<Output = Result<u64, Error>> + 'static> {
        let now_ms = self.now_ms();
        if self
            .last_beat_ms
            .is_some_and(|last| now_ms.saturating_sub(last) < self.timing.node_heartbeat_ms)
        {
            return None;
        }
        let store = self.nodes.clone();
        let name = self.name.clone();
        let entry = self.entry.clone();
        let timeout_ms = timeout_ms.max(1);
        Some(async move {
            buckets::bounded(
                NODES_BUCKET,
                || format!("put {name}"),
                timeout_ms,
                store.put(&name, entry.into()),
            )
            .await?
            .map_err(|error| bucket_error(NODES_BUCKET, "put", error))?;
            Ok(now_ms)
        })
    }

    /// Decides and acts, then publishes what is owned.
    async fn step(&mut self) {
        let now_ms = self.now_ms();
        let actions = decide(
            &self.name,
            self.partitions,
            &self.view,
            now_ms,
            &self.timing,
        );
        let mut writes = Vec::new();
        for action in actions {
            match action {
                Action::Drop { partition, reason } => self.lose(partition, reason),
                Action::Release {
                    partition,
                    revision,
                } => {
                    // Stop first, then let go, so the next owner never overlaps this one.
                    self.lose(partition, LostReason::Released);
                    let value = LeaseValue {
                        node: None,
                        renewed: 0,
                    };
                    let timeout_ms = self.timing.request_timeout_ms;
                    writes.push(self.write(
                        partition,
                        Expected::Revision(revision),
                        value,
                        timeout_ms,
                    ));
                }
                Action::Renew {
                    partition,
                    revision,
                } => {
                    let Some(held) = self.view.held.get(&partition).copied() else {
                        continue;
                    };
                    let value = LeaseValue {
                        node: Some(self.name.clone()),
                        renewed: held.renewed.wrapping_add(1),
                    };
                    // A renewal still unanswered at the deadline is given up: the partition
                    // is dropped then, whatever the answer would have been.
                    let left_ms =
                        (held.renewed_at_ms + self.timing.renew_deadline_ms).saturating_sub(now_ms);
                    let timeout_ms = self.timing.request_timeout_ms.min(left_ms);
                    writes.push(self.write(
                        partition,
                        Expected::Revision(revision),
                        value,
                        timeout_ms,
                    ));
                }
                Action::Acquire {
                    partition,
                    expected,
                } => {
                    let value = LeaseValue {
                        node: Some(self.name.clone()),
                        renewed: 0,
                    };
                    let timeout_ms = self.timing.request_timeout_ms;
                    writes.push(self.write(partition, expected, value, timeout_ms));
                }
            }
        }
        // The heartbeat goes with the lease writes, so neither waits for the other.
        let beat = self.beat(self.timing.request_timeout_ms);
        let (results, beaten) = tokio::join!(futures_util::future::join_all(writes), async move {
            match beat {
                Some(beat) => Some(beat.await),
                None => None,
            }
        });
        for written in results {
            self.written(written);
        }
        // A failed heartbeat is tried again on the next turn; others see this node late.
        if let Some(Ok(sent_ms)) = beaten {
            self.last_beat_ms = Some(sent_ms);
        }
        self.drop_lapsed();
    }

    /// One lease write, bounded by the request timeout; answers what happened.
    fn write(
        &self,
        partition: PartitionIndex,
        expected: Expected,
        value: LeaseValue,
        timeout_ms: u64,
    ) -> impl std::future::Future<Output = Written> + 'static {
        let store = self.leases.clone();
        let sent_ms = self.now_ms();
        let timeout_ms = timeout_ms.max(1);
        let key = lease_key(partition);
        async move {
            let bytes = buckets::encode(&value);
            let request = async {
                match expected {
                    Expected::Absent => store
                        .create(&key, bytes.into())
                        .await
                        .map_err(|error| error.kind() == kv::CreateErrorKind::AlreadyExists),
                    Expected::Revision(revision) => store
                        .update(&key, bytes.into(), revision)
                        .await
                        .map_err(|error| error.kind() == kv::UpdateErrorKind::WrongLastRevision),
                }
            };
            let outcome =
                match tokio::time::timeout(std::time::Duration::from_millis(timeout_ms), request)
                    .await
                {
                    Ok(Ok(revision)) => WriteOutcome::Done(revision),
                    Ok(Err(true)) => WriteOutcome::Refused,
                    Ok(Err(false)) | Err(_) => WriteOutcome::Unknown,
                };
            Written {
                partition,
                value,
                sent_ms,
                outcome,
            }
        }
    }

    fn written(&mut self, written: Written) {
        let Written {
            partition,
            value,
            sent_ms,
            outcome,
        } = written;
        let mine = value.node.as_deref() == Some(self.name.as_str());
        let acquiring = mine && value.renewed == 0 && !self.view.held.contains_key(&partition);
        if acquiring && outcome == WriteOutcome::Unknown {
            let after_revision = self
                .view
                .leases
                .get(&partition)
                .map_or(0, |seen| seen.revision);
            // The earliest unanswered send counts: had an earlier one landed, others count
            // their lease from it.
            self.unanswered.entry(partition).or_insert(Unanswered {
                sent_ms,
                after_revision,
            });
        }
        match (outcome, self.view.held.get_mut(&partition)) {
            // A renewal.
            (WriteOutcome::Done(revision), Some(held)) if mine => {
                held.revision = revision;
                held.renewed_at_ms = sent_ms;
                held.renewed = value.renewed;
            }
            (WriteOutcome::Refused, Some(_)) if mine => {
                self.lose(partition, LostReason::RenewRefused)
            }
            // A renewal that timed out or failed: the deadline decides.
            (WriteOutcome::Unknown, Some(_)) => {}
            // An acquisition.
            (WriteOutcome::Done(revision), None) if mine => {
                self.view.held.insert(
                    partition,
                    Held {
                        epoch: revision,
                        revision,
                        renewed_at_ms: sent_ms,
                        renewed: value.renewed,
                    },
                );
                self.sink.deliver(Ownership::Acquired {
                    partition,
                    epoch: revision,
                });
            }
            // A release, or an acquisition lost to another node or unanswered (the lease
            // then runs out and is taken again by someone).
            _ => {}
        }
        // The write's own revision is seen now, so the watch delivering it later is no news.
        if let WriteOutcome::Done(revision) = outcome {
            let now_ms = self.now_ms();
            self.view
                .observe_lease(partition, value.node, revision, false, now_ms);
        }
    }

    fn lose(&mut self, partition: PartitionIndex, reason: LostReason) {
        if self.view.held.remove(&partition).is_some() {
            self.sink.deliver(Ownership::Lost { partition, reason });
        }
    }

    fn publish(&self) {
        let owned: BTreeMap<PartitionIndex, u64> = self
            .view
            .held
            .iter()
            .map(|(&partition, held)| (partition, held.epoch))
            .collect();
        self.owned.send_if_modified(|current| {
            if *current == owned {
                false
            } else {
                *current = owned;
                true
            }
        });
        let held_until: BTreeMap<PartitionIndex, Instant> = self
            .view
            .held
            .iter()
            .map(|(&partition, held)| {
                let ms = held
                    .renewed_at_ms
                    .saturating_add(self.timing.renew_deadline_ms);
                (partition, self.epoch + std::time::Duration::from_millis(ms))
            })
            .collect();
        self.held_until.send_if_modified(|current| {
            if *current == held_until {
                false
            } else {
                *current = held_until;
                true
            }
        });
        let mut owners: BTreeMap<PartitionIndex, String> = self
            .view
            .leases
            .iter()
            .filter(|(_, seen)| !seen.deleted)
            .filter_map(|(&partition, seen)| Some((partition, seen.holder.clone()?)))
            // An entry naming this node for a partition it no longer holds is stale.
            .filter(|(_, holder)| *holder != self.name)
            .collect();
        // What this node holds is its own, whatever an older entry seen says.
        for &partition in self.view.held.keys() {
            owners.insert(partition, self.name.clone());
        }
        self.owners.send_if_modified(|current| {
            if *current == owners {
                false
            } else {
                *current = owners;
                true
            }
        });
    }

    /// A clean stop: lose and release everything, then leave the registry.
    async fn leave(&mut self) {
        let held: Vec<(PartitionIndex, u64)> = self
            .view
            .held
            .iter()
            .map(|(&partition, held)| (partition, held.revision))
            .collect();
        let mut writes = Vec::new();
        for (partition, revision) in held {
            self.lose(partition, LostReason::Shutdown);
            let value = LeaseValue {
                node: None,
                renewed: 0,
            };
            let timeout_ms = self.timing.request_timeout_ms;
            writes.push(self.write(partition, Expected::Revision(revision), value, timeout_ms));
        }
        // Releases that fail leave leases to run out; nothing more to do on the way out.
        let _ = futures_util::future::join_all(writes).await;
        self.publish();
        let timeout_ms = self.timing.request_timeout_ms.max(1);
        let _ = tokio::time::timeout(
            std::time::Duration::from_millis(timeout_ms),
            self.nodes.delete(&self.name),
        )
        .await;
    }
}

/// A lease write's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WriteOutcome {
    /// Written at this revision.
    Done(u64),
    /// The compare-and-set (or create-only) was refused: the lease moved on.
    Refused,
    /// Failed otherwise or timed out: it may or may not have been written.
    Unknown,
}

struct Written {
    partition: PartitionIndex,
    value: LeaseValue,
    sent_ms: u64,
    outcome: WriteOutcome,
}

fn bucket_error(
    bucket: &'static str,
    operation: &str,
    error: impl std::error::Error + Send + Sync + 'static,
) -> Error {
    Error::Bucket {
        bucket,
        operation: operation.to_owned(),
        source: Box::new(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_names_are_checked() {
        assert!(check_node_name("node-1_a").is_ok());
        for (name, expected) in [
            ("", NodeNameProblem::Empty),
            ("a.b", NodeNameProblem::BadCharacter),
            ("a b", NodeNameProblem::BadCharacter),
            ("a*", NodeNameProblem::BadCharacter),
        ] {
            match check_node_name(name) {
                Err(Error::NodeName { problem, .. }) => assert_eq!(problem, expected, "{name:?}"),
                other => panic!("{name:?}: {other:?}"),
            }
        }
        let long = "n".repeat(NODE_NAME_BYTES_MAX + 1);
        assert!(matches!(
            check_node_name(&long),
            Err(Error::NodeName {
                problem: NodeNameProblem::TooLong,
                ..
            })
        ));
    }
}
