//! Copy-forward compaction run again over its own copies: a copy of a copy keeps the first
//! original LSN (readers order copies by it), and segments recycled by one compaction while
//! the background preparer works are used in id order, so the log reopens intact.

use std::ops::ControlFlow;

use statelog_wal::{Durability, Lsn, RecordKind, Wal, WalOptions};

fn options() -> WalOptions {
    WalOptions {
        segment_size_bytes: 4096,
        durability: Durability::NoSync,
        ..WalOptions::default()
    }
}

/// Every visible record: (lsn, copied_from, payload).
fn records(wal: &Wal) -> Vec<(Lsn, Option<Lsn>, Vec<u8>)> {
    let mut out = Vec::new();
    wal.scan_from(Lsn(1), |r| {
        out.push((r.lsn, r.copied_from, r.payload.to_vec()));
        ControlFlow::Continue(())
    })
    .expect("scans");
    out
}

fn fill(wal: &Wal, count: usize, tag: &str) {
    let kind = RecordKind::new(1).expect("kind");
    for i in 0..count {
        let payload = format!("{tag}-{i:04}-{}", "x".repeat(200));
        wal.append(kind, payload.as_bytes()).expect("appends");
    }
}

/// Compacts every sealed segment, keeping the records whose payload starts with `keep`.
fn compact_all(wal: &Wal) -> usize {
    let active = wal.segments().last().expect("a segment").first_lsn;
    let report = wal
        .compact_below(active, |r| r.payload.starts_with(b"keep"))
        .expect("compacts");
    report.segments_deleted.len()
}

#[test]
fn a_copy_of_a_copy_keeps_its_first_origin_and_the_log_reopens() {
    let dir = tempfile::tempdir().expect("dir");
    let wal = Wal::open(dir.path(), options()).expect("opens").0;
    let kind = RecordKind::new(1).expect("kind");
    let keep_lsn = wal.append(kind, b"keep-me").expect("appends");
    for round in 0..5 {
        fill(&wal, 60, &format!("r{round}"));
        assert!(compact_all(&wal) > 0, "round {round} removed segments");
        let kept: Vec<_> = records(&wal)
            .into_iter()
            .filter(|(_, _, p)| p.as_slice() == b"keep-me")
            .collect();
        assert_eq!(kept.len(), 1, "round {round}: {kept:?}");
        assert_eq!(kept[0].1, Some(keep_lsn), "round {round}: origin kept");
    }
    let before = records(&wal);
    drop(wal);
    let wal = Wal::open(dir.path(), options()).expect("reopens intact").0;
    assert_eq!(records(&wal), before);
}
