//! contract: the log contract's cases (feature `contract`), run against every implementation of
//! [`Log`]: the store's own logs (`store/tests/store/log_contract.rs`) and the replicated one
//! (`nats/tests/`). Each case takes a fresh log and panics when the log breaks the contract (see
//! the module docs of `log`).
//!
//! Must not: depend on one implementation; a case that needs a restart or a second writer
//! belongs to the implementation's own tests.

#![allow(clippy::panic, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use statelog_wal::Lsn;

use crate::{Durability, Error, Log};

/// Records big enough that a WAL segment of 4 KiB holds only a handful.
pub const PAYLOAD_SIZE_BYTES: usize = 300;

/// A tail that is expected to succeed has this long (it returns as soon as it does).
const TAIL_WAIT_LONG: Duration = Duration::from_secs(10);

/// A tail that is expected to time out waits this long.
const TAIL_WAIT_SHORT: Duration = Duration::from_millis(20);

/// A record of [`PAYLOAD_SIZE_BYTES`] that starts with `tag` (little-endian).
pub fn payload(tag: u64) -> Vec<u8> {
    let mut bytes = vec![(tag % 251) as u8; PAYLOAD_SIZE_BYTES];
    bytes[..8].copy_from_slice(&tag.to_le_bytes());
    bytes
}

/// Appends one synced record of [`payload`]`(tag)`.
pub fn append_one(log: &dyn Log, tag: u64) -> Lsn {
    log.append(&[(1, &payload(tag))], Durability::Synced)
        .expect("appends")
}

/// Every record from `from`: (LSN, origin LSN, kind, payload).
pub fn scanned(log: &dyn Log, from: Lsn) -> Vec<(Lsn, Lsn, u8, Vec<u8>)> {
    let mut seen = Vec::new();
    log.scan_from(from, &mut |record| {
        seen.push((
            record.lsn,
            record.origin_lsn,
            record.kind,
            record.payload.to_vec(),
        ));
        Ok(())
    })
    .expect("scans");
    seen
}

/// A synced record reads back, and the counters follow it.
pub fn append_then_read_round_trips(log: &dyn Log) {
    let lsn = log
        .append(&[(7, b"hello")], Durability::Synced)
        .expect("appends");
    assert_eq!(log.read(lsn).expect("reads"), Some((7, b"hello".to_vec())));
    assert!(log.stats().durable_lsn >= lsn);
    assert_eq!(log.stats().next_lsn, Lsn(lsn.0 + 1));
}

/// A batch takes dense LSNs; an empty batch is refused and takes none.
pub fn a_batch_is_dense_and_whole(log: &dyn Log) {
    let before = log.stats().next_lsn;
    let first = log
        .append(&[(1, b"a"), (2, b"b"), (3, b"c")], Durability::Synced)
        .expect("appends");
    assert_eq!(first, before);
    assert_eq!(log.stats().next_lsn, Lsn(first.0 + 3));
    let seen = scanned(log, first);
    let kinds: Vec<u8> = seen.iter().map(|record| record.2).collect();
    assert_eq!(kinds, [1, 2, 3]);
    let lsns: Vec<Lsn> = seen.iter().map(|record| record.0).collect();
    assert_eq!(lsns, [first, Lsn(first.0 + 1), Lsn(first.0 + 2)]);
    assert!(
        log.append(&[], Durability::Synced).is_err(),
        "an empty batch is refused"
    );
    assert_eq!(
        log.stats().next_lsn,
        Lsn(first.0 + 3),
        "a refused batch takes no LSN"
    );
}

/// A scan is in LSN order from where it is asked, and a visitor's error stops it.
pub fn scan_is_in_order_and_starts_where_asked(log: &dyn Log) {
    let lsns: Vec<Lsn> = (0..5).map(|tag| append_one(log, tag)).collect();
    let all = scanned(log, Lsn(1));
    assert!(all.windows(2).all(|pair| pair[0].0 < pair[1].0));
    assert!(
        all.iter().all(|record| record.0 == record.1),
        "nothing was copied forward"
    );
    let from_third = scanned(log, lsns[2]);
    assert_eq!(from_third.len(), 3);
    assert_eq!(from_third[0].0, lsns[2]);
    assert_eq!(from_third[0].3, payload(2));
    // A visitor's error stops the scan and comes back.
    let mut visited = 0;
    let stopped = log.scan_from(lsns[0], &mut |_| {
        visited += 1;
        Err(Error::Fenced)
    });
    assert!(matches!(stopped, Err(Error::Fenced)));
    assert_eq!(visited, 1);
}

/// An unsynced record is acknowledged by a sync or a later synced append.
pub fn an_unsynced_append_is_acknowledged_by_sync(log: &dyn Log) {
    let lsn = log
        .append(&[(1, b"later")], Durability::Unsynced)
        .expect("appends");
    let durable = log.sync(lsn).expect("syncs");
    assert!(durable >= lsn);
    assert!(log.stats().durable_lsn >= lsn);
    assert_eq!(log.read(lsn).expect("reads"), Some((1, b"later".to_vec())));
    // A synced append after an unsynced one acknowledges both (a log is a prefix).
    let unsynced = log
        .append(&[(1, b"u")], Durability::Unsynced)
        .expect("appends");
    let synced = append_one(log, 9);
    assert!(log.stats().durable_lsn >= synced);
    assert_eq!(log.read(unsynced).expect("reads"), Some((1, b"u".to_vec())));
}

/// A notified append is told once, after its batch is durable, with no other append or sync
/// to drive it; the batch is then readable.
pub fn a_notified_append_is_told_once_durable(log: &dyn Log) {
    let before = append_one(log, 1);
    let (sender, receiver) = std::sync::mpsc::channel();
    let first = log
        .append_notify(
            &[(1, b"told"), (2, b"too")],
            Box::new(move |result| {
                let _ = sender.send(result);
            }),
        )
        .expect("appends");
    assert_eq!(first, Lsn(before.0 + 1));
    let told = receiver.recv_timeout(TAIL_WAIT_LONG).expect("told");
    told.expect("durable");
    assert!(receiver.try_recv().is_err(), "told once");
    assert!(log.notifies());
    assert!(log.stats().durable_lsn.0 > first.0);
    assert_eq!(log.read(first).expect("reads"), Some((1, b"told".to_vec())));
    assert_eq!(
        log.read(Lsn(first.0 + 1)).expect("reads"),
        Some((2, b"too".to_vec()))
    );
}

/// A read past the acknowledged end is `LsnOutOfRange`, an unsynced record included.
pub fn a_read_past_the_acknowledged_end_is_out_of_range(log: &dyn Log) {
    let out_of_range = |log: &dyn Log, asked: Lsn, next_expected: Lsn| {
        let read = log.read(asked);
        assert!(
            matches!(
                read,
                Err(Error::Log(statelog_wal::Error::LsnOutOfRange { lsn, next, .. }))
                    if lsn == asked && next == next_expected
            ),
            "{asked:?}: {read:?}"
        );
    };
    out_of_range(log, Lsn(1), Lsn(1));
    let last = append_one(log, 1);
    let next = Lsn(last.0 + 1);
    out_of_range(log, Lsn(0), next);
    out_of_range(log, next, next);
    out_of_range(log, Lsn(last.0 + 100), next);
    // An unsynced record is not acknowledged: out of range until a sync makes it durable.
    let unsynced = log
        .append(&[(1, b"u")], Durability::Unsynced)
        .expect("appends");
    assert_eq!(unsynced, next);
    out_of_range(log, unsynced, next);
    log.sync(unsynced).expect("syncs");
    assert_eq!(log.read(unsynced).expect("reads"), Some((1, b"u".to_vec())));
}

/// A tail wakes for a later append and times out without one.
pub fn the_tail_sees_later_appends(log: Arc<dyn Log>) {
    let next = log.stats().next_lsn;
    assert!(!log.wait_for(next, TAIL_WAIT_SHORT).expect("waits"));
    let writer = {
        let log = Arc::clone(&log);
        std::thread::spawn(move || append_one(log.as_ref(), 42))
    };
    assert!(log.wait_for(next, TAIL_WAIT_LONG).expect("waits"));
    let appended = writer.join().expect("the writer ends");
    assert_eq!(appended, next);
    let seen = scanned(log.as_ref(), next);
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].3, payload(42));
    // A position already reached returns at once.
    assert!(log.wait_for(next, Duration::ZERO).expect("waits"));
}

/// Trim drops records below a position, never one at or after it.
pub fn trim_drops_below_and_keeps_the_rest(log: &dyn Log) {
    let lsns: Vec<Lsn> = (0..40).map(|tag| append_one(log, tag)).collect();
    let mid = lsns[30];
    let first = log.trim_below(mid).expect("trims");
    assert!(first > Lsn(1), "something below {mid:?} was dropped");
    assert!(first <= mid, "nothing at or after the position is dropped");
    assert_eq!(log.stats().first_lsn, first);
    for (tag, lsn) in lsns.iter().enumerate() {
        let read = log.read(*lsn).expect("reads");
        if *lsn >= first {
            assert_eq!(read, Some((1, payload(tag as u64))), "{lsn:?} is kept");
        } else {
            assert_eq!(read, None, "{lsn:?} was trimmed");
        }
    }
    assert_eq!(
        scanned(log, Lsn(1)).first().map(|record| record.0),
        Some(first)
    );
}

/// Compaction copies forward what `keep` keeps (same origin, new LSN) and drops the rest.
pub fn compaction_copies_forward_what_it_keeps(log: &dyn Log) {
    let lsns: Vec<Lsn> = (0..40).map(|tag| append_one(log, tag)).collect();
    let extents = log.extents();
    let Some(bound) = extents.iter().rev().find(|e| e.sealed).map(|e| e.first_lsn) else {
        // A log without extents has nothing to reclaim: compaction changes nothing.
        let done = log
            .compact_below(lsns[39], &mut |_| false, &mut |_| {})
            .expect("compacts");
        assert_eq!(done, crate::Compacted::default());
        assert_eq!(scanned(log, Lsn(1)).len(), 40);
        return;
    };
    // Keep the even tags below the bound; drop the odd ones.
    let done = log
        .compact_below(
            bound,
            &mut |record| u64::from_le_bytes(record.payload[..8].try_into().expect("8")) % 2 == 0,
            &mut |_| {},
        )
        .expect("compacts");
    assert!(done.extents_dropped_count > 0);
    let below: Vec<Lsn> = lsns.iter().copied().filter(|lsn| *lsn < bound).collect();
    assert_eq!(done.lsn_mapping.len(), below.len().div_ceil(2));
    assert_eq!(done.records_dropped_count as usize, below.len() / 2);
    let by_origin: std::collections::HashMap<Lsn, (Lsn, Vec<u8>)> = scanned(log, Lsn(1))
        .into_iter()
        .map(|(lsn, origin, _, bytes)| (origin, (lsn, bytes)))
        .collect();
    for (tag, lsn) in lsns.iter().enumerate() {
        let kept = by_origin.get(lsn);
        if *lsn >= bound || tag % 2 == 0 {
            assert_eq!(
                kept.map(|k| k.1.clone()),
                Some(payload(tag as u64)),
                "{lsn:?}"
            );
        } else {
            assert!(kept.is_none(), "{lsn:?} was dropped");
        }
    }
    for (old, new) in &done.lsn_mapping {
        assert!(new > old);
        assert_eq!(by_origin.get(old).map(|k| k.0), Some(*new));
    }
}

/// Every case that needs no restart, each on a fresh log from `make`.
pub fn contract_suite(make: &dyn Fn() -> Arc<dyn Log>) {
    append_then_read_round_trips(make().as_ref());
    a_batch_is_dense_and_whole(make().as_ref());
    scan_is_in_order_and_starts_where_asked(make().as_ref());
    an_unsynced_append_is_acknowledged_by_sync(make().as_ref());
    a_notified_append_is_told_once_durable(make().as_ref());
    a_read_past_the_acknowledged_end_is_out_of_range(make().as_ref());
    the_tail_sees_later_appends(make());
    trim_drops_below_and_keeps_the_rest(make().as_ref());
    compaction_copies_forward_what_it_keeps(make().as_ref());
}
