//! E4: a real ENOSPC. The log lives on a 1 MiB tmpfs (root only; elsewhere the test prints why
//! it skips). Appending until the file system is full must end in a typed error, never a panic,
//! with every acknowledged record readable afterwards; a failed segment preparation poisons
//! nothing; once space is added, a reopened log accepts writes again. The simulated-disk cases
//! below check the same for a preparation that fails while a ready segment is still free.

use std::path::{Path, PathBuf};
use std::process::Command;

use statelog_wal::{Durability, Error, Lsn, RecordKind, Wal, WalOptions};

struct Mount(PathBuf);

impl Mount {
    fn tmpfs(dir: &Path, size: &str) -> Option<Mount> {
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status()
            .ok()?;
        status.success().then(|| Mount(dir.to_path_buf()))
    }
    fn resize(&self, size: &str) -> bool {
        Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn options() -> WalOptions {
    WalOptions {
        segment_size_bytes: 128 * 1024,
        durability: Durability::GroupCommit,
        background_preparation: false,
        ..WalOptions::default()
    }
}

fn is_enospc(error: &Error) -> bool {
    match error {
        Error::Io { source, .. } => source.raw_os_error() == Some(28),
        Error::Poisoned { cause } | Error::SegmentUnavailable { cause, .. } => is_enospc(cause),
        _ => false,
    }
}

#[test]
fn real_enospc_is_a_typed_error_and_nothing_acknowledged_is_lost() {
    let temp = tempfile::tempdir().expect("tempdir");
    let Some(mount) = Mount::tmpfs(temp.path(), "1m") else {
        println!("skip: cannot mount a tmpfs here (needs root)");
        return;
    };
    let dir = temp.path().join("wal");
    let mut acked = Vec::new();
    {
        let (wal, _) = match Wal::open(&dir, options()) {
            Ok(opened) => opened,
            Err(error) => panic!("open on an empty 1 MiB tmpfs: {error}"),
        };
        let kind = RecordKind::new(1).expect("kind");
        let mut failure = None;
        for index in 0..100_000u32 {
            let payload = vec![(index % 251) as u8; 1000];
            match wal.append(kind, &payload) {
                Ok(lsn) => acked.push((lsn, payload)),
                Err(error) => {
                    failure = Some(error);
                    break;
                }
            }
        }
        let failure = failure.expect("a 1 MiB file system fills up");
        assert!(is_enospc(&failure), "typed ENOSPC, got {failure}");
        // The disk filled while preparing a segment: that wrote no log data, so the log is
        // not poisoned, and each later append that needs the segment is refused the same way.
        assert!(
            wal.poisoned().is_none(),
            "a failed preparation poisons nothing"
        );
        assert!(matches!(
            wal.append(kind, &[0u8; 1000]),
            Err(Error::SegmentUnavailable { .. })
        ));
        for (lsn, payload) in acked.iter().step_by(37) {
            assert_eq!(
                &wal.read(*lsn).expect("read").expect("present").payload,
                payload
            );
        }
    }
    assert!(!acked.is_empty());
    assert!(mount.resize("4m"), "remount with more space");
    let (wal, _) = Wal::open(&dir, options()).expect("reopen after space was freed");
    let records: Vec<_> = wal
        .iter_from(Lsn(1))
        .expect("iter")
        .collect::<Result<_, _>>()
        .expect("read back");
    assert!(records.len() >= acked.len());
    for ((lsn, payload), record) in acked.iter().zip(&records) {
        assert_eq!((*lsn, payload), (record.lsn, &record.payload));
    }
    let next = wal
        .append(RecordKind::new(1).expect("kind"), b"after")
        .expect("writes resume");
    assert!(next.0 > acked.len() as u64);
    drop(wal);
    drop(mount);
}

/// A failed preparation of a future segment poisons nothing (simulated disk, ENOSPC): the
/// writer keeps appending into the segments it has, the preparation is reported
/// (`WalStats::prepare_failures_count`, `prepare_failure`), the append that needs a segment
/// that cannot be made is refused without poisoning, and once space is back the same open log
/// prepares and appends again; every acknowledged record survives a crash.
#[test]
fn a_failed_preparation_is_reported_and_retried_and_poisons_nothing() {
    use statelog_wal::storage::sim::{CrashMode, FaultPlan, SimStorage};
    use std::sync::Arc;
    const SEGMENT_BYTES: u64 = 4096;
    let sim = SimStorage::new();
    let options = WalOptions {
        segment_size_bytes: SEGMENT_BYTES,
        durability: Durability::GroupCommit,
        background_preparation: false,
        ..WalOptions::default()
    };
    let (wal, _) =
        Wal::open_with_storage(Arc::new(sim.clone()), "/log", options.clone()).expect("opens");
    let kind = RecordKind::new(1).expect("kind");
    let payload = [7u8; 200];
    let mut acked = Vec::new();
    acked.push(
        wal.append(kind, b"first")
            .expect("the first segment is made inline"),
    );
    assert_eq!(wal.prepare_segments().expect("one ready segment"), 1);
    // Rotate into the ready segment: now the writer wants the next one prepared.
    while wal.stats().segments_count < 2 {
        acked.push(wal.append(kind, &payload).expect("appends"));
    }
    assert_eq!(wal.stats().segments_ready_count, 0);

    // The disk fills: room for the rest of this segment's records (the simulated disk counts
    // every written byte), not for a whole new segment.
    let budget = sim.written_bytes_total() + SEGMENT_BYTES - 1;
    sim.set_faults(FaultPlan {
        enospc_after_bytes: Some(budget),
        ..FaultPlan::default()
    });
    let failed = wal.prepare_segments().expect_err("no room for a segment");
    assert!(
        matches!(&failed, Error::SegmentUnavailable { cause, .. } if is_enospc(cause)),
        "{failed}"
    );
    assert!(wal.poisoned().is_none(), "a preparation poisons nothing");
    let stats = wal.stats();
    assert_eq!(stats.prepare_failures_count, 1);
    assert!(stats
        .prepare_failure
        .is_some_and(|m| m.contains("write_at")));
    // The rest of the active segment takes appends.
    let before = acked.len();
    let refused = loop {
        match wal.append(kind, &payload) {
            Ok(lsn) => acked.push(lsn),
            Err(error) => break error,
        }
    };
    assert!(
        acked.len() - before >= 10,
        "appends went on after the failed preparation ({} acknowledged)",
        acked.len() - before
    );
    assert!(
        matches!(&refused, Error::SegmentUnavailable { .. }),
        "the append that needs a third segment is refused: {refused}"
    );
    assert!(
        wal.poisoned().is_none(),
        "a refused rotation poisons nothing"
    );
    assert!(matches!(
        wal.append(kind, &payload),
        Err(Error::SegmentUnavailable { .. })
    ));

    // Space is back: the same log prepares and appends again.
    sim.set_faults(FaultPlan::default());
    acked.push(wal.append(kind, &payload).expect("the rotation is retried"));
    assert_eq!(wal.stats().prepare_failure, None, "cleared by a success");
    drop(wal);
    let image = sim.crash(CrashMode::DropUnsynced);
    let (reopened, _) = Wal::open_with_storage(Arc::new(image), "/log", options).expect("reopens");
    for lsn in &acked {
        assert!(
            reopened.read(*lsn).expect("read").is_some(),
            "{lsn:?} survived"
        );
    }
    assert_eq!(
        reopened.stats().next_lsn.0,
        acked.last().expect("acked").0 + 1,
        "no record beyond what was acknowledged"
    );
}

/// The background thread retries a failed preparation by itself, with a bounded backoff:
/// once space is back, a segment becomes ready without any call (bounded wait, real time).
#[test]
fn the_background_thread_retries_a_failed_preparation() {
    use statelog_wal::storage::sim::{FaultPlan, SimStorage};
    use std::sync::Arc;
    use std::time::{Duration, Instant};
    let sim = SimStorage::new();
    sim.set_faults(FaultPlan {
        enospc_after_bytes: Some(0),
        ..FaultPlan::default()
    });
    let options = WalOptions {
        segment_size_bytes: 4096,
        durability: Durability::GroupCommit,
        background_preparation: true,
        ..WalOptions::default()
    };
    let (wal, _) = Wal::open_with_storage(Arc::new(sim.clone()), "/log", options).expect("opens");
    let deadline = Instant::now() + Duration::from_secs(10);
    while wal.stats().prepare_failures_count < 2 {
        assert!(Instant::now() < deadline, "the thread retries");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(wal.poisoned().is_none());
    sim.set_faults(FaultPlan::default());
    while wal.stats().segments_ready_count == 0 {
        assert!(
            Instant::now() < deadline,
            "a retry succeeds once space is back"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(wal.stats().prepare_failure, None);
    wal.append(RecordKind::new(1).expect("kind"), b"x")
        .expect("appends");
}
