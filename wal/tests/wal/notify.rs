//! Notifying appends (`Wal::append_batch_notify`): the caller does not wait; it is told once its
//! batch is acknowledged. Guarded here: the answer comes only after the batch is durable (the
//! crash image taken inside the answer holds it), with no other committer to drive the sync (the
//! log's syncer does); concurrent notifying and waiting appenders are all answered and all
//! survive a crash; a failed write answers the waiting batches with the poison; dropping the log
//! answers what still waits; the syncer never gathers; `notices_waiting` counts the batches not
//! answered yet. Nothing here depends on timing: a missing
//! answer fails at a generous guard instead of hanging.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use statelog_wal::storage::sim::{CrashMode, FaultPlan, SimStorage};
use statelog_wal::{Durability, Error, Lsn, RecordKind, Storage, Wal, WalOptions};

const DIR: &str = "/notify";

/// Turns a lost answer into a failure instead of a hung test (not a timing assertion).
const ANSWER_GUARD: Duration = Duration::from_secs(60);

fn kind() -> RecordKind {
    RecordKind::new(1).expect("kind 1 is a caller kind")
}

fn options(durability: Durability) -> WalOptions {
    WalOptions {
        segment_size_bytes: 1024 * 1024,
        durability,
        background_preparation: false,
        ..WalOptions::default()
    }
}

fn open(storage: Arc<dyn Storage>, durability: Durability) -> Wal {
    let (wal, _) =
        Wal::open_with_storage(storage, Path::new(DIR), options(durability)).expect("open");
    wal.prepare_segments().expect("prepare a ready segment");
    wal
}

fn records_of(image: SimStorage) -> BTreeMap<u64, Vec<u8>> {
    let image: Arc<dyn Storage> = Arc::new(image);
    let (wal, _) = Wal::open_with_storage(image, Path::new(DIR), options(Durability::GroupCommit))
        .expect("reopen after crash");
    wal.iter_from(Lsn(1))
        .expect("iter")
        .map(|r| r.map(|r| (r.lsn.0, r.payload)).expect("record"))
        .collect()
}

#[test]
fn a_notified_batch_is_answered_only_once_durable_by_the_syncer() {
    let sim = Arc::new(SimStorage::new());
    let wal = open(sim.clone(), Durability::GroupCommit);
    let (sender, receiver) = mpsc::channel();
    let at_answer = sim.clone();
    let range = wal
        .append_batch_notify(
            &[(kind(), b"first"), (kind(), b"second")],
            Box::new(move |result| {
                // What a power loss at the moment of the answer would keep.
                let image = at_answer.crash(CrashMode::DropUnsynced);
                let _ = sender.send((result, image));
            }),
        )
        .expect("appended");
    assert_eq!((range.first, range.last), (Lsn(1), Lsn(2)));
    let (result, image) = receiver.recv_timeout(ANSWER_GUARD).expect("answered");
    result.expect("acknowledged");
    let records = records_of(image);
    assert_eq!(records.get(&1).map(Vec::as_slice), Some(&b"first"[..]));
    assert_eq!(records.get(&2).map(Vec::as_slice), Some(&b"second"[..]));
    assert!(wal.stats().syncs_count >= 1, "the syncer synced");
    assert!(receiver.try_recv().is_err(), "answered once");
}

#[test]
fn notifying_and_waiting_appenders_are_all_answered_and_survive_a_crash() {
    let sim = Arc::new(SimStorage::new());
    let wal = Arc::new(open(sim.clone(), Durability::GroupCommit));
    let threads_count = 6;
    let appends_count = 40;
    let handles: Vec<_> = (0..threads_count)
        .map(|thread| {
            let wal = wal.clone();
            std::thread::spawn(move || {
                let mut acknowledged = Vec::new();
                for index in 0..appends_count {
                    let body = format!("writer-{thread}-append-{index}").into_bytes();
                    // Every other writer waits itself; the rest are told.
                    let lsn = if thread % 2 == 0 {
                        wal.append(kind(), &body).expect("append")
                    } else {
                        let (sender, receiver) = mpsc::channel();
                        let range = wal
                            .append_batch_notify(
                                &[(kind(), &body)],
                                Box::new(move |result| {
                                    let _ = sender.send(result);
                                }),
                            )
                            .expect("appended");
                        let answer = receiver.recv_timeout(ANSWER_GUARD).expect("answered");
                        answer.expect("acknowledged");
                        range.last
                    };
                    acknowledged.push((lsn.0, body));
                }
                acknowledged
            })
        })
        .collect();
    let acknowledged: Vec<(u64, Vec<u8>)> = handles
        .into_iter()
        .flat_map(|h| h.join().expect("writer"))
        .collect();
    assert_eq!(acknowledged.len(), threads_count * appends_count);
    let records = records_of(sim.crash(CrashMode::DropUnsynced));
    for (lsn, body) in &acknowledged {
        assert_eq!(
            records.get(lsn),
            Some(body),
            "acknowledged LSN {lsn} survives"
        );
    }
}

#[test]
fn a_failed_write_answers_the_waiting_batch_with_the_poison() {
    let sim = Arc::new(SimStorage::new());
    let wal = open(sim.clone(), Durability::GroupCommit);
    wal.append(kind(), b"durable").expect("append");
    // From here every storage call fails, as if the device went away.
    sim.set_faults(FaultPlan {
        halt_at_op: Some(sim.op_count()),
        ..FaultPlan::default()
    });
    let (sender, receiver) = mpsc::channel();
    wal.append_batch_notify(
        &[(kind(), b"lost")],
        Box::new(move |result| {
            let _ = sender.send(result);
        }),
    )
    .expect("appended (ordered, not yet written)");
    let answer = receiver.recv_timeout(ANSWER_GUARD).expect("answered");
    assert!(matches!(answer, Err(Error::Poisoned { .. })), "{answer:?}");
    // A later notifying append is refused, or told at once that it never will be durable.
    let (sender, receiver) = mpsc::channel();
    let later = wal.append_batch_notify(
        &[(kind(), b"later")],
        Box::new(move |result| {
            let _ = sender.send(result);
        }),
    );
    if later.is_ok() {
        let answer = receiver.recv_timeout(ANSWER_GUARD).expect("answered");
        assert!(matches!(answer, Err(Error::Poisoned { .. })), "{answer:?}");
    }
    sim.set_faults(FaultPlan::default());
    let records = records_of(sim.crash(CrashMode::DropUnsynced));
    assert_eq!(
        records.len(),
        1,
        "only the acknowledged record: {records:?}"
    );
}

#[test]
fn dropping_the_log_answers_what_still_waits() {
    let sim = Arc::new(SimStorage::new());
    let wal = open(sim.clone(), Durability::GroupCommit);
    let (sender, receiver) = mpsc::channel();
    for index in 0..20u8 {
        let sender = sender.clone();
        wal.append_batch_notify(
            &[(kind(), &[index])],
            Box::new(move |result| {
                let _ = sender.send(result.is_ok());
            }),
        )
        .expect("appended");
    }
    drop(sender);
    drop(wal);
    // Every call ran (each sender is gone), and each said acknowledged.
    let answers: Vec<bool> = receiver.iter().collect();
    assert_eq!(answers, vec![true; 20]);
    assert_eq!(records_of(sim.crash(CrashMode::DropUnsynced)).len(), 20);
}

#[test]
fn without_sync_a_notified_batch_is_answered_once_written() {
    let sim = Arc::new(SimStorage::new());
    let wal = open(sim.clone(), Durability::NoSync);
    let (sender, receiver) = mpsc::channel();
    wal.append_batch_notify(
        &[(kind(), b"written")],
        Box::new(move |result| {
            let _ = sender.send(result);
        }),
    )
    .expect("appended");
    receiver
        .recv_timeout(ANSWER_GUARD)
        .expect("answered")
        .expect("acknowledged");
    assert_eq!(wal.stats().syncs_count, 0, "NoSync never syncs");
    assert!(wal
        .read(Lsn(1))
        .expect("readable once acknowledged")
        .is_some());
}

#[test]
fn the_syncer_never_gathers() {
    // Only notified appends: every sync is the syncer's. Each round's batches are all answered
    // before the next round appends one batch, fewer than the last sync covered: a leader that
    // gathers would wait for the rest (and count it).
    let sim = Arc::new(SimStorage::new());
    let wal_options = WalOptions {
        commit_gather_us_max: 10_000,
        ..options(Durability::GroupCommit)
    };
    let storage: Arc<dyn Storage> = sim;
    let (wal, _) = Wal::open_with_storage(storage, Path::new(DIR), wal_options).expect("open");
    wal.prepare_segments().expect("prepare a ready segment");
    for round in 0..30 {
        let batches = if round % 2 == 0 { 4 } else { 1 };
        let (sender, receiver) = mpsc::channel();
        for index in 0..batches {
            let sender = sender.clone();
            let body = format!("round-{round}-batch-{index}").into_bytes();
            wal.append_batch_notify(
                &[(kind(), &body)],
                Box::new(move |result| {
                    let _ = sender.send(result);
                }),
            )
            .expect("appended");
        }
        for _ in 0..batches {
            let answer = receiver.recv_timeout(ANSWER_GUARD).expect("answered");
            answer.expect("acknowledged");
        }
    }
    let stats = wal.stats();
    assert!(stats.syncs_count >= 1, "the syncer synced");
    assert_eq!(stats.gathers_count, 0, "the syncer gathered: {stats:?}");
}

#[test]
fn notices_waiting_counts_the_notified_batches_not_answered_yet() {
    let sim = Arc::new(SimStorage::new());
    let wal = open(sim, Durability::GroupCommit);
    assert_eq!(wal.notices_waiting(), 0);
    // The first batch's answer holds the syncer until the test lets it go: the batches
    // appended meanwhile wait, unanswered.
    let (answering, answered_first) = mpsc::channel();
    let (release, released) = mpsc::channel::<()>();
    wal.append_batch_notify(
        &[(kind(), b"first")],
        Box::new(move |result| {
            let _ = answering.send(result);
            let _ = released.recv_timeout(ANSWER_GUARD);
        }),
    )
    .expect("appended");
    answered_first
        .recv_timeout(ANSWER_GUARD)
        .expect("answered")
        .expect("acknowledged");
    let (sender, receiver) = mpsc::channel();
    for body in [&b"second"[..], &b"third"[..]] {
        let sender = sender.clone();
        wal.append_batch_notify(
            &[(kind(), body)],
            Box::new(move |result| {
                let _ = sender.send(result);
            }),
        )
        .expect("appended");
    }
    assert_eq!(wal.notices_waiting(), 2, "two batches wait for their word");
    release.send(()).expect("the first answer waits");
    for _ in 0..2 {
        let answer = receiver.recv_timeout(ANSWER_GUARD).expect("answered");
        answer.expect("acknowledged");
    }
    assert_eq!(wal.notices_waiting(), 0, "every batch was answered");
}
