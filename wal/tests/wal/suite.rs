//! The WAL conformance suite: the same scenarios against the real file system (`FsStorage` in a
//! temporary directory) and the simulated disk (`SimStorage`). It guards the public contract:
//! appends come back byte-identical and in order after reopen, rotation and batches keep LSNs
//! dense, retention removes only whole sealed segments, compaction maps old LSNs to new ones,
//! limits and reserved kinds are typed errors, and a failed sync poisons the log.

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Arc;

use statelog_wal::storage::sim::{CrashMode, Errno, FaultPlan, SimStorage};
use statelog_wal::{
    Durability, Error, FsStorage, Lsn, RecordKind, RecoveryReport, Storage, Wal, WalOptions,
};

const SEGMENT_SIZE_BYTES: u64 = 8192;

fn options(durability: Durability) -> WalOptions {
    WalOptions {
        segment_size_bytes: SEGMENT_SIZE_BYTES,
        durability,
        background_preparation: false,
        ..WalOptions::default()
    }
}

/// A storage under test and the directory the log lives in.
struct Backend {
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    _temp: Option<tempfile::TempDir>,
}

impl Backend {
    /// Opens (or reopens) the log with group commit, as most cases here do.
    fn open_group_commit(&self) -> (Wal, RecoveryReport) {
        Wal::open_with_storage(
            Arc::clone(&self.storage),
            &self.dir,
            options(Durability::GroupCommit),
        )
        .expect("open")
    }
}

fn backends() -> Vec<(&'static str, Backend)> {
    let temp = tempfile::tempdir().expect("tempdir");
    let dir = temp.path().join("wal");
    vec![
        (
            "fs",
            Backend {
                storage: Arc::new(FsStorage::new()),
                dir,
                _temp: Some(temp),
            },
        ),
        (
            "sim",
            Backend {
                storage: Arc::new(SimStorage::new()),
                dir: PathBuf::from("/sim/wal"),
                _temp: None,
            },
        ),
    ]
}

fn kind(value: u8) -> RecordKind {
    RecordKind::new(value).expect("caller kind")
}

fn payload(index: usize, size: usize) -> Vec<u8> {
    (0..size).map(|i| (i * 31 + index * 7) as u8).collect()
}

fn all_records(wal: &Wal) -> Vec<(u64, u8, Vec<u8>)> {
    wal.iter_from(Lsn(1))
        .expect("iter")
        .map(|r| {
            let r = r.expect("record");
            (r.lsn.0, r.kind.get(), r.payload)
        })
        .collect()
}

#[test]
fn append_read_reopen_across_rotations() {
    for (name, backend) in backends() {
        for durability in [
            Durability::PerCommit,
            Durability::GroupCommit,
            Durability::NoSync,
        ] {
            let dir = backend.dir.join(format!("{durability:?}"));
            let mut expected = Vec::new();
            {
                let (wal, report) =
                    Wal::open_with_storage(Arc::clone(&backend.storage), &dir, options(durability))
                        .expect("open");
                assert_eq!(report.records_count, 0, "{name}");
                for index in 0..200 {
                    let body = payload(index, index % 300);
                    let lsn = wal
                        .append(kind((index % 100) as u8), &body)
                        .expect("append");
                    assert_eq!(lsn, Lsn(index as u64 + 1), "{name}: dense lsns");
                    expected.push((lsn.0, (index % 100) as u8, body));
                }
                wal.sync().expect("sync");
                assert!(wal.segments().len() >= 3, "{name}: rotated");
                assert_eq!(
                    all_records(&wal),
                    expected,
                    "{name}: read back before reopen"
                );
                let one = wal.read(Lsn(57)).expect("read").expect("present");
                assert_eq!(one.payload, expected[56].2);
            }
            let (wal, report) =
                Wal::open_with_storage(Arc::clone(&backend.storage), &dir, options(durability))
                    .expect("reopen");
            assert_eq!(report.records_count, 200, "{name}: {report:?}");
            assert_eq!(report.last_lsn, Some(Lsn(200)));
            assert_eq!(report.torn_tail, None);
            assert_eq!(
                all_records(&wal),
                expected,
                "{name}: read back after reopen"
            );
            let next = wal.append(kind(1), b"after").expect("append after reopen");
            assert_eq!(next, Lsn(201));
        }
    }
}

/// Every record reads back right after its append, while its segment is still the active one
/// (a reader keeps the active segment's mapping where the storage maps live: the later writes
/// must show in it), across rotations and after a reopen appends to the recovered segment.
#[test]
fn each_record_reads_back_right_after_its_append_in_the_active_segment() {
    for (name, backend) in backends() {
        let mut expected = Vec::new();
        for round in 0..2 {
            let (wal, _report) = backend.open_group_commit();
            for index in 0..120 {
                let index = round * 120 + index;
                let body = payload(index, 40 + index % 90);
                let lsn = wal.append(kind(7), &body).expect("append");
                expected.push(body);
                let read = wal.read(lsn).expect("read").expect("present");
                assert_eq!(read.payload, expected[index], "{name}: lsn {}", lsn.0);
                // An earlier record of the same segment still reads the same.
                let first = wal.read(Lsn(1)).expect("read").expect("present");
                assert_eq!(first.payload, expected[0], "{name}");
            }
            assert!(wal.segments().len() >= 2, "{name}: rotated");
        }
    }
}

#[test]
fn batches_are_dense_and_atomic_units() {
    for (name, backend) in backends() {
        let (wal, _) = backend.open_group_commit();
        let a = payload(1, 100);
        let b = payload(2, 0);
        let c = payload(3, 1000);
        let range = wal
            .append_batch(&[(kind(1), &a), (kind(2), &b), (kind(3), &c)])
            .expect("batch");
        assert_eq!((range.first, range.last), (Lsn(1), Lsn(3)), "{name}");
        let many: Vec<Vec<u8>> = (0..40).map(|i| payload(i, 50)).collect();
        let items: Vec<(RecordKind, &[u8])> =
            many.iter().map(|p| (kind(4), p.as_slice())).collect();
        let range = wal.append_batch(&items).expect("big batch");
        assert_eq!((range.first, range.last), (Lsn(4), Lsn(43)));
        assert!(matches!(wal.append_batch(&[]), Err(Error::EmptyBatch)));
        let too_big: Vec<Vec<u8>> = (0..10).map(|i| payload(i, 1000)).collect();
        let items: Vec<(RecordKind, &[u8])> =
            too_big.iter().map(|p| (kind(4), p.as_slice())).collect();
        assert!(
            matches!(wal.append_batch(&items), Err(Error::BatchTooLarge { .. })),
            "{name}"
        );
        assert_eq!(all_records(&wal).len(), 43);
    }
}

#[test]
fn limits_and_kinds_are_typed_errors() {
    assert!(matches!(
        RecordKind::new(120),
        Err(Error::ReservedKind { kind: 120, .. })
    ));
    assert!(RecordKind::new(RecordKind::MAX).is_ok());
    // With the default segment size callers get the whole named limit.
    let (big, _) = Wal::open_with_storage(
        Arc::new(SimStorage::new()),
        "/big",
        WalOptions {
            background_preparation: false,
            ..WalOptions::default()
        },
    )
    .expect("open");
    assert_eq!(
        big.payload_size_bytes_max(),
        statelog_wal::limits::RECORD_SIZE_BYTES_MAX
    );
    drop(big);
    let sim = SimStorage::new();
    let (wal, _) = Wal::open_with_storage(Arc::new(sim), "/w", options(Durability::GroupCommit))
        .expect("open");
    let limit = wal.payload_size_bytes_max();
    assert!(limit < SEGMENT_SIZE_BYTES as usize);
    let at_limit = vec![5u8; limit];
    let lsn = wal.append(kind(1), &at_limit).expect("at the limit");
    assert_eq!(
        wal.read(lsn).expect("read").expect("present").payload,
        at_limit
    );
    let over = vec![5u8; limit + 1];
    assert!(
        matches!(wal.append(kind(1), &over), Err(Error::RecordTooLarge { size_bytes, limit_bytes }) if size_bytes == limit + 1 && limit_bytes == limit)
    );
    assert!(matches!(
        wal.read(Lsn(99)),
        Err(Error::LsnOutOfRange { .. })
    ));
    let bad = WalOptions {
        segment_size_bytes: 100,
        ..WalOptions::default()
    };
    assert!(matches!(
        Wal::open_with_storage(Arc::new(SimStorage::new()), "/x", bad),
        Err(Error::InvalidOptions {
            field: "segment_size_bytes",
            ..
        })
    ));
}

#[test]
fn delete_below_removes_only_whole_sealed_segments() {
    for (name, backend) in backends() {
        let (wal, _) = backend.open_group_commit();
        for index in 0..100 {
            wal.append(kind(1), &payload(index, 200)).expect("append");
        }
        let before = wal.segments();
        assert!(before.len() >= 3, "{name}");
        let cut = before[2].first_lsn;
        let deleted = wal.delete_below(cut).expect("delete");
        assert_eq!(
            deleted,
            vec![before[0].segment_id, before[1].segment_id],
            "{name}"
        );
        let records = all_records(&wal);
        assert_eq!(records.first().map(|r| r.0), Some(cut.0));
        assert_eq!(records.last().map(|r| r.0), Some(100));
        assert_eq!(
            wal.read(Lsn(1)).expect("read"),
            None,
            "deleted records read as None"
        );
        // The active segment is never deleted.
        wal.delete_below(Lsn(u64::MAX >> 8))
            .expect("delete all sealed");
        assert_eq!(wal.segments().len(), 1);
        assert_eq!(all_records(&wal).last().map(|r| r.0), Some(100));
        drop(wal);
        let (wal, report) = backend.open_group_commit();
        assert_eq!(report.last_lsn, Some(Lsn(100)), "{name}");
        assert_eq!(wal.append(kind(1), b"x").expect("append"), Lsn(101));
    }
}

#[test]
fn compaction_copies_live_records_and_maps_lsns() {
    for (name, backend) in backends() {
        let (wal, _) = backend.open_group_commit();
        for index in 0..300 {
            wal.append(kind((index % 2) as u8), &payload(index, 150))
                .expect("append");
        }
        let cut = wal.segments()[3].first_lsn;
        // Live: kind 1 only.
        let report = wal
            .compact_below(cut, |record| record.kind.get() == 1)
            .expect("compact");
        assert_eq!(report.segments_deleted.len(), 3, "{name}");
        let copied = report.lsn_mapping.len() as u64;
        assert_eq!(copied + report.records_dropped_count, cut.0 - 1);
        for (old, new) in &report.lsn_mapping {
            let record = wal.read(*new).expect("read").expect("copy visible");
            assert_eq!(record.copied_from, Some(*old));
            assert_eq!(record.kind.get(), 1);
            assert_eq!(record.payload, payload(old.0 as usize - 1, 150));
            assert_eq!(wal.read(*old).expect("read"), None, "original gone");
        }
        let visible = all_records(&wal);
        assert_eq!(visible.len() as u64, copied + (300 - (cut.0 - 1)), "{name}");
        drop(wal);
        let (wal, _) = backend.open_group_commit();
        assert_eq!(all_records(&wal), visible, "{name}: same view after reopen");
        // Compacting the copies again keeps them (new mapping hop).
        let cut = wal.segments().last().expect("segments").first_lsn;
        let again = wal.compact_below(cut, |_| true).expect("compact again");
        // Copies go to the end of the log, so compare the sets of payloads.
        let mut after: Vec<Vec<u8>> = all_records(&wal).into_iter().map(|r| r.2).collect();
        let mut before: Vec<Vec<u8>> = visible.into_iter().map(|r| r.2).collect();
        after.sort();
        before.sort();
        assert!(
            after == before,
            "{name}: compacting everything live keeps every payload"
        );
        assert!(!again.lsn_mapping.is_empty());
    }
}

#[test]
fn failed_sync_poisons_and_nothing_more_is_acknowledged() {
    let sim = SimStorage::new();
    let (wal, _) = Wal::open_with_storage(
        Arc::new(sim.clone()),
        "/w",
        options(Durability::GroupCommit),
    )
    .expect("open");
    wal.prepare_segments().expect("prepare");
    let acked = wal.append(kind(1), b"first").expect("append");
    // The next op of the next append is its write, then its sync: fail the sync.
    let at = sim.op_count() + 1;
    sim.set_faults(FaultPlan {
        fail_at_op: Some((at, Errno::Eio)),
        ..FaultPlan::default()
    });
    let err = wal.append(kind(1), b"second").expect_err("sync fails");
    assert!(
        matches!(&err, Error::Poisoned { cause } if matches!(**cause, Error::Io { op: "sync_data", .. })),
        "{err:?}"
    );
    sim.set_faults(FaultPlan::default());
    assert!(matches!(
        wal.append(kind(1), b"third"),
        Err(Error::Poisoned { .. })
    ));
    assert!(matches!(wal.sync(), Err(Error::Poisoned { .. })));
    // Durable data stays readable.
    assert_eq!(
        wal.read(acked).expect("read").expect("present").payload,
        b"first"
    );
    drop(wal);
    let image = sim.crash(CrashMode::DropUnsynced);
    let (wal, _) = Wal::open_with_storage(Arc::new(image), "/w", options(Durability::GroupCommit))
        .expect("reopen");
    let records = all_records(&wal);
    assert_eq!(records, vec![(1, 1, b"first".to_vec())]);
}

#[test]
fn scan_from_is_zero_copy_and_stops() {
    let (wal, _) = Wal::open_with_storage(
        Arc::new(SimStorage::new()),
        "/w",
        options(Durability::NoSync),
    )
    .expect("open");
    for index in 0..50 {
        wal.append(kind(2), &payload(index, 10)).expect("append");
    }
    let mut seen = Vec::new();
    wal.scan_from(Lsn(10), |record| {
        seen.push(record.lsn.0);
        if record.lsn.0 == 20 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .expect("scan");
    assert_eq!(seen, (10..=20).collect::<Vec<_>>());
}

#[test]
fn many_threads_append_concurrently() {
    let temp = tempfile::tempdir().expect("tempdir");
    let opts = WalOptions {
        segment_size_bytes: 256 * 1024,
        background_preparation: true,
        ..WalOptions::default()
    };
    let (wal, _) = Wal::open(temp.path(), opts.clone()).expect("open");
    let wal = Arc::new(wal);
    let threads: Vec<_> = (0..8)
        .map(|thread| {
            let wal = Arc::clone(&wal);
            std::thread::spawn(move || {
                let mut mine = Vec::new();
                for index in 0..100 {
                    let body = format!("t{thread}-{index}").into_bytes();
                    let lsn = wal.append(kind(thread as u8), &body).expect("append");
                    mine.push((lsn, body));
                }
                mine
            })
        })
        .collect();
    let mut acked: Vec<(Lsn, Vec<u8>)> = threads
        .into_iter()
        .flat_map(|t| t.join().expect("thread"))
        .collect();
    acked.sort();
    assert_eq!(acked.len(), 800);
    let lsns: Vec<u64> = acked.iter().map(|(lsn, _)| lsn.0).collect();
    assert_eq!(lsns, (1..=800).collect::<Vec<u64>>(), "dense lsns");
    let stats = wal.stats();
    assert!(stats.syncs_count <= 800);
    drop(wal);
    let (wal, _) = Wal::open(temp.path(), opts).expect("reopen");
    let records: Vec<(Lsn, Vec<u8>)> = wal
        .iter_from(Lsn(1))
        .expect("iter")
        .map(|r| r.map(|r| (r.lsn, r.payload)).expect("record"))
        .collect();
    assert_eq!(records, acked);
}

/// Every kind of commit wait at once, from 12 threads (`append`, `enqueue` + `wait_durable`,
/// `append` + `sync`), under each durability mode: commit rounds hand off between leaders
/// without losing a waiter (a lost wake-up hangs this test), LSNs stay dense, and after a final
/// sync every record survives a crash.
#[test]
fn mixed_commit_waits_all_complete_and_stay_dense() {
    for durability in [
        Durability::NoSync,
        Durability::GroupCommit,
        Durability::PerCommit,
    ] {
        let storage = Arc::new(SimStorage::new());
        let dir = PathBuf::from("/mixed");
        let (wal, _) =
            Wal::open_with_storage(storage.clone(), &dir, options(durability)).expect("open");
        let wal = Arc::new(wal);
        let threads: Vec<_> = (0..12u8)
            .map(|thread| {
                let wal = Arc::clone(&wal);
                std::thread::spawn(move || {
                    let mut mine = Vec::new();
                    for index in 0..150usize {
                        let body = payload(index, 10 + usize::from(thread));
                        let lsn = match (usize::from(thread) + index) % 3 {
                            0 => wal.append(kind(thread), &body).expect("append"),
                            1 => {
                                let lsn = wal.enqueue(kind(thread), &body).expect("enqueue");
                                wal.wait_durable(lsn).expect("wait_durable");
                                lsn
                            }
                            _ => {
                                let lsn = wal.append(kind(thread), &body).expect("append");
                                let durable = wal.sync().expect("sync");
                                assert!(durable >= lsn, "sync covers {lsn:?}: {durable:?}");
                                lsn
                            }
                        };
                        mine.push((lsn.0, thread, body));
                    }
                    mine
                })
            })
            .collect();
        let mut acked: Vec<(u64, u8, Vec<u8>)> = threads
            .into_iter()
            .flat_map(|t| t.join().expect("thread"))
            .collect();
        acked.sort();
        wal.sync().expect("final sync");
        assert_eq!(
            acked.iter().map(|r| r.0).collect::<Vec<_>>(),
            (1..=1800).collect::<Vec<u64>>(),
            "{durability:?}: dense lsns"
        );
        assert_eq!(all_records(&wal), acked, "{durability:?}: read back");
        drop(wal);
        let image = storage.crash(CrashMode::DropUnsynced);
        let (wal, _) = Wal::open_with_storage(Arc::new(image), &dir, options(durability))
            .expect("reopen after crash");
        assert_eq!(
            all_records(&wal),
            acked,
            "{durability:?}: durable after crash"
        );
    }
}

#[test]
fn read_only_open_changes_nothing_and_refuses_writes() {
    for (name, backend) in backends() {
        {
            let (wal, _) = backend.open_group_commit();
            for index in 0..30 {
                wal.append(kind(1), &payload(index, 300)).expect("append");
            }
        }
        let listing = |storage: &Arc<dyn Storage>| {
            let mut names = storage.list(&backend.dir).expect("list");
            names.sort();
            names
        };
        let before = listing(&backend.storage);
        let read_only = WalOptions {
            read_only: true,
            ..options(Durability::GroupCommit)
        };
        let (wal, report) =
            Wal::open_with_storage(Arc::clone(&backend.storage), &backend.dir, read_only)
                .expect("read-only open");
        assert_eq!(report.last_lsn, Some(Lsn(30)), "{name}");
        assert_eq!(all_records(&wal).len(), 30);
        assert!(
            matches!(wal.append(kind(1), b"no"), Err(Error::ReadOnly { .. })),
            "{name}"
        );
        assert!(matches!(
            wal.delete_below(Lsn(10)),
            Err(Error::ReadOnly { .. })
        ));
        drop(wal);
        assert_eq!(
            listing(&backend.storage),
            before,
            "{name}: nothing on disk changed"
        );
    }
}

#[test]
fn small_options_are_valid_and_work() {
    let options = WalOptions::small();
    options.validate().expect("valid");
    let (wal, _) =
        Wal::open_with_storage(Arc::new(SimStorage::new()), "/small", options).expect("open");
    let lsn = wal.append(kind(3), &[1u8; 5000]).expect("append");
    assert_eq!(
        wal.read(lsn).expect("read").expect("present").payload.len(),
        5000
    );
}

fn time_of(kind: RecordKind, payload: &[u8]) -> Option<u64> {
    if kind.get() != 5 {
        return None;
    }
    Some(u64::from_le_bytes(payload.get(..8)?.try_into().ok()?))
}

#[test]
fn segments_report_caller_time_ranges() {
    for (name, backend) in backends() {
        let opts = options(Durability::GroupCommit);
        let timed = statelog_wal::TimeOf(time_of);
        let (wal, _) = Wal::open_timed(
            Arc::clone(&backend.storage),
            &backend.dir,
            opts.clone(),
            timed,
        )
        .expect("open");
        // Times go up and down; kind 9 records carry no time.
        let mut times = Vec::new();
        for index in 0..60u64 {
            let time = 1_000 + (index * 37) % 500;
            let mut payload = time.to_le_bytes().to_vec();
            payload.resize(400, 1);
            wal.append(kind(5), &payload).expect("append");
            wal.append(kind(9), &[0xff; 300]).expect("append");
            times.push(time);
        }
        let segments = wal.segments();
        assert!(segments.len() >= 3, "{name}");
        let (global_min, global_max) = segments
            .iter()
            .filter_map(|s| s.time_range)
            .fold((u64::MAX, 0), |(lo, hi), (a, b)| (lo.min(a), hi.max(b)));
        assert_eq!(
            (global_min, global_max),
            (
                *times.iter().min().expect("min"),
                *times.iter().max().expect("max")
            )
        );
        for segment in &segments {
            let (min, max) = segment
                .time_range
                .expect("every segment holds timed records");
            // Check against the records actually in the segment.
            let last = segment.last_lsn.expect("records").0;
            let inside: Vec<u64> = wal
                .iter_from(segment.first_lsn)
                .expect("iter")
                .map(|r| r.expect("record"))
                .take_while(|r| r.lsn.0 <= last)
                .filter_map(|r| time_of(r.kind, &r.payload))
                .collect();
            assert_eq!(
                (min, max),
                (
                    *inside.iter().min().expect("min"),
                    *inside.iter().max().expect("max")
                ),
                "{name} segment {}",
                segment.segment_id
            );
        }
        drop(wal);
        let (wal, _) = Wal::open_timed(
            Arc::clone(&backend.storage),
            &backend.dir,
            opts.clone(),
            timed,
        )
        .expect("reopen");
        assert_eq!(
            wal.segments(),
            segments,
            "{name}: recovery rebuilds the same ranges"
        );
        // Copies keep their original's time.
        let cut = segments[2].first_lsn;
        wal.compact_below(cut, |_| true).expect("compact");
        let after = wal.segments();
        let (min_after, max_after) = after
            .iter()
            .filter_map(|s| s.time_range)
            .fold((u64::MAX, 0), |(lo, hi), (a, b)| (lo.min(a), hi.max(b)));
        assert_eq!((min_after, max_after), (global_min, global_max), "{name}");
    }
}

/// Two writers on one directory would interleave appends: the second open is refused while the
/// first holds the log, read-only inspection still works, and the lock goes with the writer.
#[test]
fn one_writing_process_per_directory() {
    let temp = tempfile::tempdir().expect("tempdir");
    let dir = temp.path().join("log");
    let (first, _) = Wal::open(&dir, options(Durability::PerCommit)).expect("first open");
    first.append(kind(1), b"held").expect("append");
    let impatient = WalOptions {
        lock_wait_ms: 0,
        ..options(Durability::PerCommit)
    };
    match Wal::open(&dir, impatient) {
        Err(Error::Locked { dir: locked }) => assert_eq!(locked, dir),
        other => panic!("second writer must be refused, got {other:?}"),
    }
    let read_only = WalOptions {
        read_only: true,
        ..options(Durability::PerCommit)
    };
    let (reader, _) = Wal::open(&dir, read_only).expect("read-only open beside the writer");
    assert_eq!(all_records(&reader).len(), 1);
    drop(reader);
    drop(first);
    let (again, _) = Wal::open(&dir, options(Durability::PerCommit)).expect("reopen after close");
    assert_eq!(all_records(&again).len(), 1);
}
