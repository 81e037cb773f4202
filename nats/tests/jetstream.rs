//! `JetStreamLog` on a real 3-node nats-server cluster (R3), started and stopped by each test:
//! the store's whole log contract, then what only a replicated log has to show: fencing of a
//! stale owner (through a leader change too), a full cluster restart, a stream purged below a
//! sequence (compaction, trim) replayed by its next owner, and a server killed under appends.
//!
//! Scenario guarded: issue 19's promise that an acknowledged append is on a quorum and stays
//! there, and that a stale owner cannot get anything acknowledged once a newer one opened.
//! Tests run one at a time (each starts its own cluster); without a server they print
//! `skipped: <reason>` and pass.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use statelog_nats::testing::TestCluster;
use statelog_nats::{Error as NatsError, JetStreamLog, JetStreamOptions};
use statelog_store::contract::{self, payload};
use statelog_store::{Durability, Error, Log};
use statelog_wal::Lsn;

/// One cluster at a time on this 2-core machine.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Extents of a few messages, so 40 appends seal several (trim and compaction have work).
const EXTENT_MESSAGES: u64 = 8;

/// A notified append of a healthy cluster is told within this (it returns as soon as it is).
const TOLD_WITHIN: Duration = Duration::from_secs(60);

fn options(cluster: &TestCluster, stream: &str, epoch: u64) -> JetStreamOptions {
    JetStreamOptions {
        extent_messages: EXTENT_MESSAGES,
        ..JetStreamOptions::new(cluster.urls(), stream, epoch)
    }
}

fn open(cluster: &TestCluster, stream: &str, epoch: u64) -> JetStreamLog {
    JetStreamLog::open(options(cluster, stream, epoch)).expect("opens")
}

/// Every record of the log: LSN -> (kind, payload).
fn contents(log: &dyn Log) -> BTreeMap<Lsn, (u8, Vec<u8>)> {
    contract::scanned(log, Lsn(1))
        .into_iter()
        .map(|(lsn, _, kind, bytes)| (lsn, (kind, bytes)))
        .collect()
}

/// The index of the server leading `log`'s stream, asked until there is one.
fn leader_index(cluster: &TestCluster, log: &JetStreamLog) -> usize {
    for _ in 0..600 {
        // An error is a request lost with a dead server: ask again.
        if let Ok(Some(name)) = log.stream_leader() {
            return cluster.index_of(&name).expect("a server of the cluster");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the stream had no leader for 30 s");
}

#[test]
fn the_log_contract_holds_on_a_three_node_cluster() {
    let _serial = serial();
    let Some(cluster) = TestCluster::start_or_skip(3) else {
        return;
    };
    let count = AtomicU64::new(0);
    contract::contract_suite(&|| {
        let stream = format!("contract{}", count.fetch_add(1, Ordering::Relaxed));
        Arc::new(open(&cluster, &stream, 1)) as Arc<dyn Log>
    });
    assert!(count.load(Ordering::Relaxed) >= 9, "every case ran");
}

#[test]
fn bad_options_and_oversized_batches_are_refused_typed() {
    let _serial = serial();
    let Some(cluster) = TestCluster::start_or_skip(3) else {
        return;
    };
    let refused = JetStreamLog::open(options(&cluster, "bad", 0));
    assert!(
        matches!(
            refused,
            Err(NatsError::InvalidOptions { field: "epoch", .. })
        ),
        "{refused:?}"
    );
    let refused = JetStreamLog::open(options(&cluster, "a.b", 1));
    assert!(
        matches!(
            refused,
            Err(NatsError::InvalidOptions {
                field: "stream",
                ..
            })
        ),
        "{refused:?}"
    );
    let log = open(&cluster, "sizes", 1);
    let limit = log.batch_size_bytes_max();
    assert!(limit < 1024 * 1024, "below the server's max_payload");
    let big = vec![7u8; limit];
    let before = log.stats().next_lsn;
    let refused = log.append(&[(1, &big)], Durability::Synced);
    assert!(
        matches!(
            refused,
            Err(Error::Log(statelog_wal::Error::BatchTooLarge { limit_bytes, .. }))
                if limit_bytes == limit
        ),
        "{refused:?}"
    );
    assert_eq!(log.stats().next_lsn, before, "a refused batch takes no LSN");
    assert!(log.refusal().is_none(), "bad input does not stop the log");
    // The largest batch that fits goes through whole.
    let fits = vec![9u8; limit - 5 - 13];
    let lsn = log.append(&[(1, &fits)], Durability::Synced).expect("fits");
    assert_eq!(log.read(lsn).expect("reads"), Some((1, fits)));
}

#[test]
fn a_stale_owner_that_pipelines_gets_nothing_acknowledged_after_a_takeover() {
    let _serial = serial();
    let Some(mut cluster) = TestCluster::start_or_skip(3) else {
        return;
    };
    // The stream and its leader first, so the stale owner can be connected elsewhere: what it
    // sees after the leader change is then the server's answer, not a lost connection.
    let leader = {
        let first = open(&cluster, "fenced", 1);
        leader_index(&cluster, &first)
    };
    let others: Vec<String> = (0..cluster.len())
        .filter(|index| *index != leader)
        .map(|index| cluster.url(index))
        .collect();
    let stale = JetStreamLog::open(JetStreamOptions {
        urls: others,
        ..options(&cluster, "fenced", 5)
    })
    .expect("opens");
    let before: Vec<Lsn> = (0..10)
        .map(|tag| contract::append_one(&stale, tag))
        .collect();

    // A newer owner opens, then the stream's leader is killed (a leader change).
    let owner = open(&cluster, "fenced", 6);
    assert_eq!(owner.stats().next_lsn, Lsn(before[9].0 + 1));
    cluster.kill(leader);
    let new_leader = leader_index(&cluster, &owner);
    assert_ne!(new_leader, leader, "the leader changed");

    // The stale owner pipelines: unsynced appends and notified ones, then a sync.
    let (sender, told) = mpsc::channel();
    let mut attempted = 0;
    for tag in 100..120u64 {
        let sender = sender.clone();
        let queued = if tag % 2 == 0 {
            stale.append(&[(1, &payload(tag))], Durability::Unsynced)
        } else {
            stale.append_notify(
                &[(1, &payload(tag))],
                Box::new(move |result| {
                    let _ = sender.send(result);
                }),
            )
        };
        if queued.is_err() {
            break;
        }
        attempted += 1;
    }
    assert!(attempted > 0, "the stale owner could queue appends");
    let synced = stale.sync(Lsn(u64::MAX));
    assert!(matches!(synced, Err(Error::Fenced)), "{synced:?}");
    drop(sender);
    for result in told.iter() {
        assert!(matches!(result, Err(Error::Fenced)), "{result:?}");
    }
    assert!(matches!(stale.refusal(), Some(Error::Fenced)));
    let later = stale.append(&[(1, b"later")], Durability::Synced);
    assert!(matches!(later, Err(Error::Fenced)), "{later:?}");
    assert!(
        stale.stats().durable_lsn <= before[9],
        "nothing after the takeover is acknowledged to the stale owner"
    );

    // The new owner goes on across the leader change (on the two servers left); the stream
    // holds its records and the stale owner's from before the takeover, nothing of the stale
    // owner's after it.
    let mine = contract::append_one(&owner, 7);
    assert_eq!(mine, Lsn(before[9].0 + 1));
    let held = contents(&owner);
    let expected: BTreeMap<Lsn, (u8, Vec<u8>)> = before
        .iter()
        .enumerate()
        .map(|(tag, lsn)| (*lsn, (1, payload(tag as u64))))
        .chain([(mine, (1, payload(7)))])
        .collect();
    assert_eq!(held, expected);
    cluster.restart(leader).expect("restarts");
    cluster.wait_ready().expect("ready");

    // An owner older than the stream's last marker is refused at open.
    let refused = JetStreamLog::open(options(&cluster, "fenced", 5));
    assert!(
        matches!(
            refused,
            Err(NatsError::StaleEpoch {
                epoch: 5,
                marker_epoch: 6,
                ..
            })
        ),
        "{refused:?}"
    );
    drop(owner);
    // The newest owner reopening (the same lease) goes on where it was.
    let again = open(&cluster, "fenced", 6);
    assert_eq!(contents(&again), expected);
}

#[test]
fn a_full_cluster_restart_keeps_every_acknowledged_record() {
    let _serial = serial();
    let Some(mut cluster) = TestCluster::start_or_skip(3) else {
        return;
    };
    let expected = {
        let log = open(&cluster, "restart", 1);
        let mut expected = BTreeMap::new();
        for tag in 0..30u64 {
            let lsn = log
                .append(
                    &[(1, &payload(tag)), (2, &payload(tag + 1000))],
                    Durability::Synced,
                )
                .expect("appends");
            expected.insert(lsn, (1, payload(tag)));
            expected.insert(Lsn(lsn.0 + 1), (2, payload(tag + 1000)));
        }
        let unsynced = log
            .append(&[(3, b"synced by sync")], Durability::Unsynced)
            .expect("appends");
        log.sync(unsynced).expect("syncs");
        expected.insert(unsynced, (3, b"synced by sync".to_vec()));
        assert_eq!(contents(&log), expected);
        expected
    };
    cluster.stop_all();
    for index in 0..cluster.len() {
        cluster.restart(index).expect("restarts");
    }
    cluster.wait_ready().expect("ready after the restart");
    let log = open(&cluster, "restart", 2);
    assert_eq!(
        contents(&log),
        expected,
        "every acknowledged record is back"
    );
    let next = contract::append_one(&log, 99);
    assert_eq!(next, Lsn(expected.len() as u64 + 1), "LSNs go on densely");
}

#[test]
fn a_compacted_or_trimmed_stream_is_replayed_by_the_next_owner() {
    let _serial = serial();
    let Some(cluster) = TestCluster::start_or_skip(3) else {
        return;
    };
    // Compaction: the odd tags of the sealed extents dropped, the even ones copied forward,
    // every original below the bound purged from the stream.
    let log = open(&cluster, "purged", 1);
    for tag in 0..40u64 {
        contract::append_one(&log, tag);
    }
    let bound = log
        .extents()
        .iter()
        .rev()
        .find(|extent| extent.sealed)
        .map(|extent| extent.first_lsn)
        .expect("40 appends seal extents");
    let done = log
        .compact_below(
            bound,
            &mut |record| u64::from_le_bytes(record.payload[..8].try_into().expect("8")) % 2 == 0,
            &mut |_| {},
        )
        .expect("compacts");
    assert!(done.extents_dropped_count > 0 && done.records_dropped_count > 0);
    let compacted = contents(&log);
    let first_lsn = log.stats().first_lsn;
    assert!(first_lsn > Lsn(1), "the front was purged: {first_lsn:?}");
    drop(log);
    // The next owner replays a stream whose first message is not its first LSN any more.
    let log = open(&cluster, "purged", 2);
    assert_eq!(contents(&log), compacted);
    assert_eq!(log.stats().first_lsn, first_lsn);
    let next = contract::append_one(&log, 100);
    assert_eq!(
        next,
        Lsn(compacted.keys().last().expect("records").0 + 1),
        "LSNs go on densely"
    );

    // Trim: whole extents purged, the rest replayed as it was.
    let middle = *compacted.keys().nth(compacted.len() / 2).expect("records");
    let first_lsn = log.trim_below(middle).expect("trims");
    assert!(first_lsn > compacted.keys().next().copied().expect("records"));
    let trimmed = contents(&log);
    drop(log);
    let log = open(&cluster, "purged", 3);
    assert_eq!(contents(&log), trimmed);
    assert_eq!(log.stats().first_lsn, first_lsn);
}

/// What one notified append was told, with its LSN and bytes.
type Told = (Lsn, Vec<u8>, Result<(), Error>);

/// Queues notified appends of tags `tags` until one is refused, killing server `kill` before
/// tag `kill_at` once the earlier ones are acknowledged; returns what each queued one was told.
fn append_through_a_kill(
    log: &JetStreamLog,
    cluster: &mut TestCluster,
    tags: std::ops::Range<u64>,
    kill_at: u64,
    kill: usize,
) -> Vec<Told> {
    let (sender, told) = mpsc::channel::<(u64, Result<(), Error>)>();
    let mut queued = BTreeMap::new();
    for tag in tags {
        if tag == kill_at {
            // What was queued so far is acknowledged first, so the kill meets appends in flight
            // with some acknowledged ones before them.
            if let Some((lsn, _)) = queued.values().last() {
                assert!(log.wait_for(*lsn, TOLD_WITHIN).expect("waits"));
            }
            cluster.kill(kill);
        }
        let bytes = payload(tag);
        let sender = sender.clone();
        let appended = log.append_notify(
            &[(1, &bytes)],
            Box::new(move |result| {
                let _ = sender.send((tag, result));
            }),
        );
        match appended {
            Ok(lsn) => {
                queued.insert(tag, (lsn, bytes));
            }
            Err(_) => break,
        }
    }
    drop(sender);
    let mut answers = Vec::new();
    while answers.len() < queued.len() {
        let (tag, result) = told
            .recv_timeout(TOLD_WITHIN)
            .expect("every append is told");
        let (lsn, bytes) = queued[&tag].clone();
        answers.push((lsn, bytes, result));
    }
    answers
}

#[test]
fn killing_one_server_under_appends_loses_nothing_acknowledged() {
    let _serial = serial();
    let Some(mut cluster) = TestCluster::start_or_skip(3) else {
        return;
    };
    let log = open(&cluster, "kill", 1);
    let leader = leader_index(&cluster, &log);
    let connected = cluster
        .index_of(&log.connected_server())
        .expect("a server of the cluster");
    let follower = (0..cluster.len())
        .find(|index| *index != leader && *index != connected)
        .expect("three servers");

    // A follower (not the one the client uses) dies under appends: nothing stops.
    let first = append_through_a_kill(&log, &mut cluster, 0..1000, 300, follower);
    assert_eq!(first.len(), 1000);
    assert!(
        first.iter().all(|told| told.2.is_ok()),
        "a follower's death refuses nothing"
    );
    assert!(log.refusal().is_none());
    cluster.restart(follower).expect("restarts");
    cluster.wait_ready().expect("ready");

    // Then the leader dies under appends: the log may stop (fail-stop), loses nothing
    // acknowledged.
    let second = append_through_a_kill(&log, &mut cluster, 1000..2000, 1300, leader);
    drop(log);
    cluster.restart(leader).expect("restarts");
    cluster.wait_ready().expect("ready");
    let reopened = open(&cluster, "kill", 2);
    let held = contents(&reopened);
    let acknowledged: Vec<&Told> = first
        .iter()
        .chain(&second)
        .filter(|told| told.2.is_ok())
        .collect();
    assert!(acknowledged.len() >= 1300, "{}", acknowledged.len());
    for (lsn, bytes, _) in &acknowledged {
        assert_eq!(
            held.get(lsn).map(|record| &record.1),
            Some(bytes),
            "{lsn:?}"
        );
    }
    println!(
        "acknowledged {} of {} queued; the stream holds {}",
        acknowledged.len(),
        first.len() + second.len(),
        held.len()
    );
}
