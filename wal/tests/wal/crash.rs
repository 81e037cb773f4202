//! Crash-consistency sweeps on the simulated disk (TESTING.md C1-C5, C7, C8, E1-E3): for small
//! canned workloads, the process is halted at every storage op index, the disk is crashed in
//! every mode (unsynced writes dropped, the unsynced stream torn at every byte with and without
//! garbage in the torn sector, unsynced directory operations rolled back), and recovery must give
//! back every acknowledged record byte-identical, whole batches only, no holes, nothing invented.

use crate::common;

use std::sync::Arc;

use common::*;
use statelog_wal::storage::sim::{CrashMode, Errno, FaultPlan, SimStorage};
use statelog_wal::{Durability, Error, Lsn, Wal, WalOptions};

fn slow() -> bool {
    std::env::var("STATELOG_SLOW_TESTS").is_ok_and(|v| v == "1")
}

#[test]
fn c1_single_segment_appends_every_size() {
    let mut total = 0;
    let sizes: &[usize] = if slow() {
        &[0, 1, 100, 4095, 4096, 4097, 65_536, 262_144]
    } else {
        &[0, 1, 100, 4095, 4096, 4097, 65_536]
    };
    for &size in sizes {
        // Segments just big enough for a few records, so the sweep also crosses a rotation.
        let segment = (3 * (size as u64 + 16) + 64)
            .next_multiple_of(4096)
            .max(8192);
        let ops = vec![
            Op::Prepare,
            Op::Append { size_bytes: size },
            Op::Append { size_bytes: size },
            Op::Append { size_bytes: 10 },
            Op::Append { size_bytes: size },
        ];
        let started = std::time::Instant::now();
        let images = sweep(
            &ops,
            &options(segment, Durability::GroupCommit),
            &format!("C1 size={size}"),
        );
        println!("C1 size={size}: {images} images in {:?}", started.elapsed());
        total += images;
    }
    println!("C1: {total} crash images checked");
    assert!(total > 1000);
}

#[test]
fn c2_group_commit_batches() {
    let mut total = 0;
    for batch in [1usize, 2, 16, 64] {
        let ops = vec![
            Op::Prepare,
            Op::Batch {
                sizes_bytes: vec![20; batch],
            },
            Op::Batch {
                sizes_bytes: (0..batch).map(|i| i * 3).collect(),
            },
            Op::Append { size_bytes: 5 },
        ];
        total += sweep(
            &ops,
            &options(64 * 1024, Durability::GroupCommit),
            &format!("C2 batch={batch}"),
        );
    }
    // NoSync + explicit sync: many batches written before one sync; tears cross batches.
    let ops = vec![
        Op::Batch {
            sizes_bytes: vec![30; 3],
        },
        Op::Batch {
            sizes_bytes: vec![1; 5],
        },
        Op::Sync,
        Op::Batch {
            sizes_bytes: vec![40; 4],
        },
        Op::Append { size_bytes: 7 },
        Op::Batch {
            sizes_bytes: vec![2; 2],
        },
        Op::Sync,
    ];
    total += sweep(&ops, &options(64 * 1024, Durability::NoSync), "C2 nosync");
    println!("C2: {total} crash images checked");
}

#[test]
fn c3_segment_rotation() {
    // 4 KiB segments and ~1 KiB records: a rotation every few appends, inline preparation
    // (create temp, zero-fill, sync, rename, dir sync) inside the sweep.
    let mut ops = Vec::new();
    let rounds = if slow() { 14 } else { 6 };
    for _ in 0..rounds {
        ops.push(Op::Append { size_bytes: 1000 });
    }
    ops.push(Op::Batch {
        sizes_bytes: vec![900, 900, 900],
    });
    let images = sweep(&ops, &options(4096, Durability::GroupCommit), "C3");
    println!("C3: {images} crash images checked");
    // And with preparation ahead of time (the background step called explicitly).
    let ops = vec![
        Op::Prepare,
        Op::Append { size_bytes: 2000 },
        Op::Append { size_bytes: 2000 },
        Op::Prepare,
        Op::Append { size_bytes: 2000 },
        Op::Append { size_bytes: 10 },
    ];
    let images = sweep(&ops, &options(4096, Durability::GroupCommit), "C3 prepared");
    println!("C3 prepared: {images} crash images checked");
}

#[test]
fn c5_retention_and_compaction() {
    let mut ops = Vec::new();
    for _ in 0..9 {
        ops.push(Op::Append { size_bytes: 900 });
    }
    ops.push(Op::CompactBelowSegment { segment_index: 3 });
    ops.push(Op::Append { size_bytes: 100 });
    ops.push(Op::DeleteBelowSegment { segment_index: 1 });
    ops.push(Op::Append { size_bytes: 100 });
    let images = sweep(&ops, &options(4096, Durability::GroupCommit), "C5");
    println!("C5: {images} crash images checked");
}

/// C8: a crash during recovery itself, then recovery again.
#[test]
fn c8_crash_during_recovery() {
    let ops = vec![
        Op::Append { size_bytes: 1000 },
        Op::Append { size_bytes: 1000 },
        Op::Batch {
            sizes_bytes: vec![1500, 1500],
        },
        Op::Append { size_bytes: 1000 },
        Op::CompactBelowSegment { segment_index: 1 },
        Op::Append { size_bytes: 50 },
    ];
    let opts = options(4096, Durability::GroupCommit);
    let (clean, _) = run_halted(&ops, &opts, None);
    let mut images = 0;
    for halt_at in 0..=clean.op_count() {
        let (sim, model) = run_halted(&ops, &opts, Some(halt_at));
        for mode in [
            CrashMode::DropUnsynced,
            CrashMode::LoseDirOps,
            CrashMode::TornTail {
                cut_bytes: sim.pending_bytes() / 2,
            },
        ] {
            let first = sim.crash(mode);
            // How many ops does a clean recovery of this image take?
            let probe = first.crash(CrashMode::TornTail {
                cut_bytes: u64::MAX,
            });
            let before = probe.op_count();
            drop(
                Wal::open_with_storage(Arc::new(probe.clone()), DIR, opts.clone())
                    .expect("recovery of a crash image"),
            );
            let recovery_ops = probe.op_count() - before;
            for stop in 0..recovery_ops {
                let attempt = first.crash(CrashMode::TornTail {
                    cut_bytes: u64::MAX,
                });
                attempt.set_faults(FaultPlan {
                    halt_at_op: Some(stop),
                    ..FaultPlan::default()
                });
                let _ = Wal::open_with_storage(Arc::new(attempt.clone()), DIR, opts.clone());
                for second in [CrashMode::DropUnsynced, CrashMode::LoseDirOps] {
                    let image = attempt.crash(second);
                    let mut model = model.clone();
                    let context = format!(
                        "C8 halt_at={halt_at} mode={mode:?} recovery stop={stop} then {second:?}"
                    );
                    drop(recover_and_check(&image, &opts, &mut model, &context));
                    images += 1;
                }
            }
        }
    }
    println!("C8: {images} double-crash images checked");
    assert!(images > 0);
}

/// E1/E2: an injected EIO at every op index (writes and syncs alike): nothing acknowledged
/// after it, the log poisoned (unless the op was a segment preparation, which writes no log
/// data and poisons nothing), and the reopened image holds exactly what the model allows.
#[test]
fn e1_e2_eio_at_every_op() {
    let ops = vec![
        Op::Prepare,
        Op::Append { size_bytes: 100 },
        Op::Batch {
            sizes_bytes: vec![50; 4],
        },
        Op::Append { size_bytes: 3000 },
        Op::Append { size_bytes: 3000 },
        Op::Append { size_bytes: 10 },
    ];
    let opts = options(4096, Durability::GroupCommit);
    let (clean, _) = run_halted(&ops, &opts, None);
    let mut failures = 0;
    for at in 0..clean.op_count() {
        let sim = SimStorage::new();
        sim.set_faults(FaultPlan {
            fail_at_op: Some((at, Errno::Eio)),
            ..FaultPlan::default()
        });
        let mut model = Model::default();
        let Ok((wal, _)) = Wal::open_with_storage(Arc::new(sim.clone()), DIR, opts.clone()) else {
            continue;
        };
        let completed = run_ops(&wal, &ops, &mut model);
        if !completed {
            failures += 1;
            if wal.poisoned().is_none() {
                // A failed segment preparation wrote no log data: its op was refused and
                // nothing is poisoned (the next rotation prepares again).
                assert!(
                    wal.stats().prepare_failures_count > 0,
                    "at={at}: an op refused without poisoning is a preparation"
                );
                assert!(wal.sync().is_ok(), "at={at}: the log still works");
            } else {
                // Fail-stop: every later call is refused, with the original cause.
                let later = wal.append(kind_for(1), b"later");
                assert!(
                    matches!(later, Err(Error::Poisoned { .. })),
                    "at={at}: {later:?}"
                );
                assert!(matches!(wal.sync(), Err(Error::Poisoned { .. })));
            }
        }
        drop(wal);
        for mode in [
            CrashMode::DropUnsynced,
            CrashMode::TornTail {
                cut_bytes: u64::MAX,
            },
        ] {
            let mut model = model.clone();
            drop(recover_and_check(
                &sim.crash(mode),
                &opts,
                &mut model,
                &format!("E1/E2 at={at} {mode:?}"),
            ));
        }
    }
    assert!(failures > 5, "faults were injected ({failures})");
}

/// E3: ENOSPC at every byte budget; after space is freed and the log reopened, writes resume.
#[test]
fn e3_enospc_at_every_budget() {
    let ops: Vec<Op> = (0..12)
        .map(|i| Op::Append {
            size_bytes: 300 + i * 50,
        })
        .collect();
    let opts = options(4096, Durability::GroupCommit);
    let mut budget = 0u64;
    let mut refusals = 0;
    while budget < 40_000 {
        let sim = SimStorage::new();
        sim.set_faults(FaultPlan {
            enospc_after_bytes: Some(budget),
            ..FaultPlan::default()
        });
        let mut model = Model::default();
        if let Ok((wal, _)) = Wal::open_with_storage(Arc::new(sim.clone()), DIR, opts.clone()) {
            if !run_ops(&wal, &ops, &mut model) {
                refusals += 1;
            }
        }
        sim.set_faults(FaultPlan::default());
        let image = sim.crash(CrashMode::TornTail {
            cut_bytes: u64::MAX,
        });
        let wal = recover_and_check(&image, &opts, &mut model, &format!("E3 budget={budget}"));
        let lsn = wal
            .append(kind_for(7), &7u64.to_le_bytes())
            .expect("writes resume after space is freed");
        assert!(wal.read(lsn).expect("read").is_some());
        budget += 4096;
    }
    assert!(refusals > 3);
}

/// C4: frames of a recycled segment never validate under the new segment's identity.
#[test]
fn c4_stale_frames_never_validate() {
    let sim = SimStorage::new();
    let opts = options(4096, Durability::GroupCommit);
    let (wal, _) = Wal::open_with_storage(Arc::new(sim.clone()), DIR, opts.clone()).expect("open");
    let mut model = Model::default();
    // Fill several segments, delete them (they are recycled into the ready queue), keep going
    // so that recycled files are written over, with stale frames behind the new ones.
    for round in 0..20u64 {
        for _ in 0..6 {
            let (id, payload) = model.payload(200 + (round as usize * 37) % 500);
            model
                .submitted
                .insert(id, (kind_for(id).get(), payload.clone(), id));
            wal.append(kind_for(id), &payload).expect("append");
            model.acked.insert(id);
        }
        let segments = wal.segments();
        if segments.len() > 2 {
            let cut = segments[segments.len() - 2].first_lsn;
            let doomed: Vec<u64> = read_all(&wal)
                .iter()
                .filter(|r| r.lsn < cut)
                .filter_map(|r| id_of(&r.payload))
                .collect();
            wal.delete_below(cut).expect("delete");
            for id in doomed {
                model.acked.remove(&id);
                model.gone.insert(id);
            }
        }
        let image = sim.crash(CrashMode::DropUnsynced);
        drop(recover_and_check(
            &image,
            &opts,
            &mut model.clone(),
            &format!("C4 round {round}"),
        ));
    }
    drop(wal);
    // Direct check: every stale image of a segment, read under another identity, yields nothing.
    let mut stale_images = 0;
    let paths = sim.paths();
    for path in &paths {
        let bytes = sim.file_bytes(path).expect("bytes");
        for other in 1000..1000 + if slow() { 1000 } else { 100 } {
            let image = SimStorage::new();
            let name = format!("{DIR}/{other:020}.wal");
            let _ =
                <SimStorage as statelog_wal::Storage>::create(&image, std::path::Path::new(&name))
                    .map(|f| f.write_at(0, &bytes).and_then(|_| f.sync_data()));
            <SimStorage as statelog_wal::Storage>::sync_dir(&image, std::path::Path::new(DIR))
                .expect("sync dir");
            let (wal, report) = Wal::open_with_storage(Arc::new(image), DIR, opts.clone())
                .expect("a stale file is an unused segment");
            assert_eq!(report.records_count, 0);
            assert!(read_all(&wal).is_empty());
            stale_images += 1;
        }
    }
    // Frame level, at volume: every frame of every segment file, read as if it were in another
    // segment (the identity a recycled file takes), fails validation.
    let identities = if slow() { 1_000_000u64 } else { 10_000 };
    let mut frames = Vec::new();
    for path in &paths {
        let bytes = sim.file_bytes(path).expect("bytes");
        let name = path.file_name().and_then(|n| n.to_str()).expect("name");
        let own = statelog_wal::SegmentId(name[..20].parse().expect("segment id"));
        let mut offset = 64usize;
        while let Ok(frame) = statelog_wal::record::decode_frame(&bytes, offset, own, None) {
            frames.push((bytes.clone(), offset, frame.lsn));
            offset += frame.size_bytes;
        }
    }
    assert!(!frames.is_empty());
    let mut checks = 0u64;
    for other in 0..identities {
        let (bytes, offset, lsn) = &frames[(other as usize) % frames.len()];
        let identity = statelog_wal::SegmentId(1_000_000 + other);
        assert!(
            statelog_wal::record::decode_frame(bytes, *offset, identity, Some(Lsn(*lsn))).is_err(),
            "stale frame validated"
        );
        checks += 1;
    }
    println!("C4: {stale_images} stale images rejected, {checks} stale frames rejected");
    assert!(stale_images >= 100);
}

/// C7: bit flips inside durable records are detected: `Corrupt`, or, only for the sync mark that
/// ends a segment (it holds no record), nothing lost: a *reported* torn tail in the newest
/// segment, bytes past the last record (never read) in a sealed one.
#[test]
fn c7_bit_flips_detected() {
    let opts = options(4096, Durability::GroupCommit);
    let sim = SimStorage::new();
    let mut model = Model::default();
    {
        let (wal, _) =
            Wal::open_with_storage(Arc::new(sim.clone()), DIR, opts.clone()).expect("open");
        let ops: Vec<Op> = (0..14)
            .map(|i| Op::Append {
                size_bytes: 100 + (i * 97) % 700,
            })
            .collect();
        assert!(run_ops(&wal, &ops, &mut model));
    }
    let durable = sim.crash(CrashMode::DropUnsynced);
    // Where the records are: read each segment file and walk its frames.
    let paths = durable.paths();
    // path, start, end, the sync mark ending its segment, in the newest segment
    let mut frames: Vec<(std::path::PathBuf, u64, u64, bool, bool)> = Vec::new();
    let (wal, _) = Wal::open_with_storage(
        Arc::new(durable.crash(CrashMode::DropUnsynced)),
        DIR,
        opts.clone(),
    )
    .expect("open");
    let newest = wal
        .segments()
        .last()
        .map(|s| s.segment_id)
        .expect("segment");
    drop(wal);
    for path in &paths {
        let bytes = durable.file_bytes(path).expect("bytes");
        let mut offset = 64usize;
        while offset + 16 <= bytes.len() {
            let len = u32::from_le_bytes(bytes[offset + 4..offset + 8].try_into().expect("4 bytes"))
                as usize;
            let word =
                u64::from_le_bytes(bytes[offset + 8..offset + 16].try_into().expect("8 bytes"));
            if word & ((1 << 56) - 1) == 0 {
                break;
            }
            let is_newest = path
                .to_string_lossy()
                .contains(&format!("{:020}", newest.0));
            let end = offset + 16 + len;
            // The newest segment's last frame: zeros follow it.
            let last = bytes
                .get(end..end + 16)
                .is_some_and(|next| next.iter().all(|&b| b == 0));
            let is_mark = (word >> 56) & 0x7f == 124;
            frames.push((
                path.clone(),
                offset as u64,
                end as u64,
                last && is_mark,
                is_newest,
            ));
            offset = end;
        }
    }
    assert!(frames.len() >= 14);
    let flips = if slow() { 100_000 } else { 1_500 };
    let mut rng = statelog_rng::Rng::new(0x2545_F491_4F6C_DD1D);
    let (mut corrupt, mut reported) = (0, 0);
    for _ in 0..flips {
        // One value chooses the frame, the offset in it and the bit, as it always has.
        let x = rng.next_u64();
        let (path, start, end, final_mark, in_newest) = &frames[(x % frames.len() as u64) as usize];
        let offset = start + (x >> 20) % (end - start);
        let image = durable.crash(CrashMode::DropUnsynced);
        assert!(image.flip_bit(path, offset, (x >> 8) as u8 % 8));
        match Wal::open_with_storage(Arc::new(image), DIR, opts.clone()) {
            Err(Error::Corrupt { .. }) => corrupt += 1,
            Err(other) => panic!("flip at {path:?}+{offset}: unexpected error {other}"),
            Ok((wal, report)) => {
                assert!(
                    *final_mark,
                    "flip at {path:?}+{offset} undetected: {report:?}"
                );
                assert_eq!(
                    report.torn_tail.is_some(),
                    *in_newest,
                    "flip in the newest segment's final sync mark must be reported"
                );
                assert_eq!(read_all(&wal).len(), model.acked.len(), "nothing lost");
                reported += 1;
            }
        }
    }
    println!("C7: {flips} flips: {corrupt} corrupt, {reported} in a sync mark ending a segment (nothing lost)");
    assert_eq!(corrupt + reported, flips);
}

#[test]
fn repair_mode_truncates_at_corruption_and_says_so() {
    let opts = options(4096, Durability::GroupCommit);
    let sim = SimStorage::new();
    {
        let (wal, _) =
            Wal::open_with_storage(Arc::new(sim.clone()), DIR, opts.clone()).expect("open");
        for index in 0..20u64 {
            wal.append(kind_for(index), &[index as u8; 700])
                .expect("append");
        }
    }
    let image = sim.crash(CrashMode::DropUnsynced);
    let first = image
        .paths()
        .into_iter()
        .find(|p| p.to_string_lossy().ends_with("1.wal"))
        .expect("first segment");
    // Each record (716 bytes) is followed by its write's sync mark (24 bytes).
    let second = 64 + 716 + 24;
    assert!(image.flip_bit(&first, second + 20, 3)); // inside the second record
    let err =
        Wal::open_with_storage(Arc::new(image.clone()), DIR, opts.clone()).expect_err("corrupt");
    let Error::Corrupt {
        segment_id,
        offset_bytes,
        ..
    } = err
    else {
        panic!("{err:?}")
    };
    assert_eq!(segment_id.0, 1);
    assert_eq!(offset_bytes, second);
    let repair = statelog_wal::WalOptions {
        repair: statelog_wal::RepairMode::TruncateAtCorruption,
        ..opts.clone()
    };
    let (wal, report) =
        Wal::open_with_storage(Arc::new(image.clone()), DIR, repair).expect("repaired");
    let repaired = report.repair.expect("repair reported");
    assert_eq!(repaired.offset_bytes, second);
    assert!(!repaired.segments_removed.is_empty());
    assert_eq!(read_all(&wal).len(), 1);
    let next = wal.append(kind_for(1), b"after repair").expect("append");
    assert_eq!(next, Lsn(2));
    drop(wal);
    let (wal, _) =
        Wal::open_with_storage(Arc::new(image.crash(CrashMode::DropUnsynced)), DIR, opts)
            .expect("clean after repair");
    assert_eq!(read_all(&wal).len(), 2);
}

/// A crash after a compaction's COMMIT is durable but before its old segments are gone: the
/// next open finishes the removal, and every record is visible exactly once.
#[test]
fn compaction_interrupted_after_commit_is_finished_by_recovery() {
    let opts = options(4096, Durability::GroupCommit);
    let ops: Vec<Op> = (0..12).map(|_| Op::Append { size_bytes: 900 }).collect();
    let (before, _) = run_halted(&ops, &opts, None);
    let start = before.op_count();
    let mut all = ops.clone();
    all.push(Op::CompactBelowSegment { segment_index: 2 });
    let (after, _) = run_halted(&all, &opts, None);
    let mut finished_by_recovery = 0;
    for halt_at in start..after.op_count() {
        let (sim, model) = run_halted(&all, &opts, Some(halt_at));
        let image = sim.crash(CrashMode::TornTail {
            cut_bytes: u64::MAX,
        });
        let (wal, report) =
            Wal::open_with_storage(Arc::new(image), DIR, opts.clone()).expect("recovers");
        if !report.compaction_segments_removed.is_empty() {
            finished_by_recovery += 1;
        }
        let mut model = model.clone();
        check_recovered(
            &read_all(&wal),
            &mut model,
            &format!("halt_at={halt_at} {report:?}"),
        );
    }
    assert!(
        finished_by_recovery > 0,
        "some crash point fell between COMMIT and removal"
    );
}

/// Markers and copies of an unfinished compaction are never shown to readers.
#[test]
fn readers_never_see_log_internal_records() {
    let opts = options(4096, Durability::GroupCommit);
    let ops: Vec<Op> = (0..10)
        .map(|_| Op::Append { size_bytes: 900 })
        .chain([Op::CompactBelowSegment { segment_index: 2 }])
        .collect();
    let (clean, _) = run_halted(&ops, &opts, None);
    for halt_at in 0..clean.op_count() {
        let (sim, _) = run_halted(&ops, &opts, Some(halt_at));
        let image = sim.crash(CrashMode::TornTail {
            cut_bytes: u64::MAX,
        });
        let (wal, _) =
            Wal::open_with_storage(Arc::new(image), DIR, opts.clone()).expect("recovers");
        let records = read_all(&wal);
        assert!(records
            .iter()
            .all(|r| r.kind.get() <= statelog_wal::RecordKind::MAX && id_of(&r.payload).is_some()));
        let last = wal.stats().next_lsn.0;
        for lsn in 1..last {
            if let Some(record) = wal.read(Lsn(lsn)).expect("read") {
                assert!(
                    id_of(&record.payload).is_some(),
                    "lsn {lsn} is a caller record"
                );
            }
        }
    }
}

/// The disk persisted an arbitrary subset of the unsynced sectors (write reordering). Such an
/// image can hold valid unacknowledged frames behind a hole; recovery either opens it cleanly or
/// refuses with `Corrupt` (it cannot tell the hole from damage), and the repair mode then gives
/// back every acknowledged record: nothing acknowledged is ever at risk.
#[test]
fn sector_reordering_never_loses_acknowledged_records() {
    let seeds: u64 = if slow() { 64 } else { 6 };
    let workloads: Vec<(Vec<Op>, statelog_wal::WalOptions)> = vec![
        (
            vec![
                Op::Append { size_bytes: 700 },
                Op::Batch {
                    sizes_bytes: vec![300; 4],
                },
                Op::Append { size_bytes: 2000 },
                Op::Append { size_bytes: 100 },
                Op::Append { size_bytes: 1500 },
            ],
            options(4096, Durability::GroupCommit),
        ),
        (
            vec![
                Op::Append { size_bytes: 700 },
                Op::Append { size_bytes: 900 },
                Op::Sync,
                Op::Batch {
                    sizes_bytes: vec![500; 3],
                },
                Op::Append { size_bytes: 1200 },
                Op::Append { size_bytes: 50 },
                Op::Sync,
            ],
            options(4096, Durability::NoSync),
        ),
    ];
    let (mut clean_opens, mut refused) = (0, 0);
    for (ops, opts) in &workloads {
        let (clean, _) = run_halted(ops, opts, None);
        for halt_at in 0..=clean.op_count() {
            let (sim, model) = run_halted(ops, opts, Some(halt_at));
            for seed in 0..seeds {
                let image = sim.crash(CrashMode::SectorSubset {
                    seed: seed * 7919 + halt_at,
                });
                let context = format!("halt_at={halt_at} seed={seed} {:?}", opts.durability);
                match Wal::open_with_storage(Arc::new(image.clone()), DIR, opts.clone()) {
                    Ok((wal, _)) => {
                        check_recovered(&read_all(&wal), &mut model.clone(), &context);
                        clean_opens += 1;
                    }
                    Err(Error::Corrupt { .. }) => {
                        let repair = statelog_wal::WalOptions {
                            repair: statelog_wal::RepairMode::TruncateAtCorruption,
                            ..opts.clone()
                        };
                        let (wal, report) =
                            Wal::open_with_storage(Arc::new(image.clone()), DIR, repair)
                                .expect("repair opens");
                        assert!(report.repair.is_some(), "{context}");
                        let mut model = model.clone();
                        check_recovered(
                            &read_all(&wal),
                            &mut model,
                            &format!("{context} after repair"),
                        );
                        drop(wal);
                        // The repair is durable: a plain open afterwards sees the same log.
                        let after = image.crash(CrashMode::DropUnsynced);
                        let (wal, report) =
                            Wal::open_with_storage(Arc::new(after), DIR, opts.clone())
                                .expect("plain open after a repair");
                        assert!(report.repair.is_none());
                        check_recovered(
                            &read_all(&wal),
                            &mut model,
                            &format!("{context} reopened after repair"),
                        );
                        refused += 1;
                    }
                    Err(other) => panic!("{context}: {other}"),
                }
            }
        }
    }
    println!("sector subsets: {clean_opens} opened cleanly, {refused} refused then repaired");
    assert!(clean_opens > 0);
}

/// C7 (misdirected writes): one 512-byte sector of durable data lands on its neighbour. Open
/// either fails with `Corrupt`, or the damage lies beyond every acknowledged record (then all of
/// them are intact), or it hit the final batch of the newest segment and is reported.
#[test]
fn c7_misdirected_sector_writes_detected() {
    let opts = options(8192, Durability::GroupCommit);
    let sim = SimStorage::new();
    let mut model = Model::default();
    {
        let (wal, _) =
            Wal::open_with_storage(Arc::new(sim.clone()), DIR, opts.clone()).expect("open");
        let ops: Vec<Op> = (0..30)
            .map(|i| Op::Append {
                size_bytes: 100 + (i * 131) % 900,
            })
            .collect();
        assert!(run_ops(&wal, &ops, &mut model));
    }
    let durable = sim.crash(CrashMode::DropUnsynced);
    let (mut corrupt, mut harmless, mut reported) = (0, 0, 0);
    for path in durable.paths() {
        let bytes = durable.file_bytes(&path).expect("bytes");
        let sectors = bytes.len() / 512;
        for source in 0..sectors {
            for target in [source.wrapping_sub(1), source + 1] {
                if target >= sectors
                    || bytes[source * 512..(source + 1) * 512]
                        == bytes[target * 512..(target + 1) * 512]
                {
                    continue;
                }
                let image = durable.crash(CrashMode::DropUnsynced);
                assert!(image.overwrite(
                    &path,
                    (target * 512) as u64,
                    &bytes[source * 512..(source + 1) * 512]
                ));
                match Wal::open_with_storage(Arc::new(image), DIR, opts.clone()) {
                    Err(Error::Corrupt { .. }) => corrupt += 1,
                    Err(other) => panic!("{path:?} sector {source} -> {target}: {other}"),
                    Ok((wal, report)) => {
                        let mut check = model.clone();
                        let records = read_all(&wal);
                        let all_present = model
                            .acked
                            .iter()
                            .all(|id| records.iter().any(|r| id_of(&r.payload) == Some(*id)));
                        if all_present {
                            check_recovered(
                                &records,
                                &mut check,
                                &format!("{path:?} sector {source} -> {target}"),
                            );
                            harmless += 1;
                        } else {
                            assert!(
                                report.torn_tail.is_some(),
                                "{path:?} sector {source} -> {target}: silent loss {report:?}"
                            );
                            reported += 1;
                        }
                    }
                }
            }
        }
    }
    println!("C7 misdirected: {corrupt} corrupt, {harmless} beyond the log, {reported} reported torn tails");
    assert!(corrupt > 10);
}

/// E5: an EIO while reading a segment surfaces as `Error::Io` naming the file, at open and
/// while iterating; nothing panics and the next open succeeds.
#[test]
fn e5_read_errors_name_the_segment() {
    let opts = options(4096, Durability::GroupCommit);
    let sim = SimStorage::new();
    {
        let (wal, _) =
            Wal::open_with_storage(Arc::new(sim.clone()), DIR, opts.clone()).expect("open");
        for index in 0..12u64 {
            wal.append(kind_for(index), &[index as u8; 900])
                .expect("append");
        }
    }
    let image = sim.crash(CrashMode::DropUnsynced);
    let start = image.op_count();
    let mut io_errors = 0;
    for at in start..start + 40 {
        image.set_faults(FaultPlan {
            fail_at_op: Some((at, Errno::Eio)),
            ..FaultPlan::default()
        });
        match Wal::open_with_storage(
            Arc::new(image.clone()),
            DIR,
            WalOptions {
                read_only: true,
                ..opts.clone()
            },
        ) {
            Err(Error::Io { path, .. }) => {
                assert!(path.starts_with(DIR), "{path:?}");
                io_errors += 1;
            }
            Err(other) => panic!("at {at}: {other}"),
            Ok((wal, _)) => {
                // The fault may hit a read instead.
                let result: Result<Vec<_>, Error> =
                    wal.iter_from(Lsn(1)).and_then(|iter| iter.collect());
                if let Err(error) = result {
                    assert!(matches!(error, Error::Io { .. }), "{error}");
                    io_errors += 1;
                }
            }
        }
    }
    image.set_faults(FaultPlan::default());
    let (wal, _) =
        Wal::open_with_storage(Arc::new(image), DIR, opts).expect("open after the faults");
    assert_eq!(read_all(&wal).len(), 12);
    assert!(io_errors > 3);
}

/// Group commit under concurrency: 8 threads append while the process is halted at a given op;
/// every append that returned Ok must be on the crash image, byte-identical, and no record may
/// be invented. (Thread interleavings vary from run to run; the invariant must hold for all.)
#[test]
fn concurrent_group_commit_acknowledges_only_durable_records() {
    let opts = WalOptions {
        background_preparation: true,
        ..options(16 * 1024, Durability::GroupCommit)
    };
    let halts: Vec<u64> = if slow() {
        (20..400).step_by(3).collect()
    } else {
        (20..400).step_by(29).collect()
    };
    let mut acked_total = 0usize;
    for halt_at in halts {
        let sim = SimStorage::new();
        sim.set_faults(FaultPlan {
            halt_at_op: Some(halt_at),
            ..FaultPlan::default()
        });
        let Ok((wal, _)) = Wal::open_with_storage(Arc::new(sim.clone()), DIR, opts.clone()) else {
            continue;
        };
        let wal = Arc::new(wal);
        let handles: Vec<_> = (0..8u64)
            .map(|thread| {
                let wal = Arc::clone(&wal);
                std::thread::spawn(move || {
                    let mut acked = Vec::new();
                    for index in 0..50u64 {
                        let id = thread * 1000 + index;
                        let mut payload = id.to_le_bytes().to_vec();
                        payload.resize(8 + (id as usize * 13) % 300, thread as u8);
                        match wal.append(kind_for(id), &payload) {
                            Ok(_) => acked.push((id, payload)),
                            Err(_) => break,
                        }
                    }
                    acked
                })
            })
            .collect();
        let acked: Vec<(u64, Vec<u8>)> = handles
            .into_iter()
            .flat_map(|h| h.join().expect("thread"))
            .collect();
        acked_total += acked.len();
        drop(wal);
        for mode in [
            CrashMode::DropUnsynced,
            CrashMode::LoseDirOps,
            CrashMode::TornTail {
                cut_bytes: sim.pending_bytes() / 2,
            },
        ] {
            let (wal, _) = Wal::open_with_storage(
                Arc::new(sim.crash(mode)),
                DIR,
                options(16 * 1024, Durability::GroupCommit),
            )
            .unwrap_or_else(|e| panic!("halt_at={halt_at} {mode:?}: {e}"));
            let records = read_all(&wal);
            for (id, payload) in &acked {
                assert!(
                    records.iter().any(|r| r.payload == *payload),
                    "halt_at={halt_at} {mode:?}: acknowledged id {id} lost"
                );
            }
            for record in &records {
                let id = id_of(&record.payload).expect("id");
                assert!(id % 1000 < 50 && id / 1000 < 8, "invented record {id}");
                assert_eq!(
                    record.payload.len(),
                    8 + (id as usize * 13) % 300,
                    "record {id} whole"
                );
            }
        }
    }
    println!("concurrent group commit: {acked_total} acknowledged appends checked");
    assert!(acked_total > 100);
}
