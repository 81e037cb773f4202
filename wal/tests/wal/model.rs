//! Model-based property test: random appends, batches, syncs, rotations (small segments),
//! preparations, deletions, compactions, injected I/O errors and crashes in every mode, on the
//! simulated disk. After every crash, recovery must give back every acknowledged record
//! byte-identical, whole batches only, a gap-free prefix of the unacknowledged ones, nothing
//! invented, and nothing that an earlier recovery dropped.

use crate::common;

use std::sync::Arc;

use common::*;
use proptest::prelude::*;
use statelog_wal::storage::sim::{CrashMode, Errno, FaultPlan, Fill, SimStorage};
use statelog_wal::{Durability, Error, RepairMode, Wal, WalOptions};

#[derive(Debug, Clone)]
enum Step {
    Op(Op),
    /// Crash; the u16 picks the cut inside the unsynced stream.
    Crash {
        kind: u8,
        cut_permille: u16,
    },
    /// Make one of the next few storage calls fail.
    Fault {
        in_ops: u64,
        enospc: bool,
    },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (0usize..1500).prop_map(|size_bytes| Step::Op(Op::Append { size_bytes })),
        2 => prop::collection::vec(0usize..400, 1..8).prop_map(|sizes_bytes| Step::Op(Op::Batch { sizes_bytes })),
        3 => Just(Step::Op(Op::Sync)),
        1 => Just(Step::Op(Op::Prepare)),
        1 => (0usize..4).prop_map(|segment_index| Step::Op(Op::DeleteBelowSegment { segment_index })),
        1 => (0usize..4).prop_map(|segment_index| Step::Op(Op::CompactBelowSegment { segment_index })),
        2 => (0u8..5, 0u16..=1000).prop_map(|(kind, cut_permille)| Step::Crash { kind, cut_permille }),
        1 => (0u64..6, any::<bool>()).prop_map(|(in_ops, enospc)| Step::Fault { in_ops, enospc }),
    ]
}

fn crash_mode(sim: &SimStorage, kind: u8, cut_permille: u16) -> CrashMode {
    let cut_bytes = sim.pending_bytes() * u64::from(cut_permille) / 1000;
    match kind {
        0 => CrashMode::DropUnsynced,
        1 => CrashMode::TornTail { cut_bytes },
        2 => CrashMode::TornTailGarbage {
            cut_bytes,
            fill: Fill::Random(u64::from(cut_permille) + 1),
        },
        3 => CrashMode::LoseDirOps,
        _ => CrashMode::SectorSubset {
            seed: u64::from(cut_permille),
        },
    }
}

fn run_case(steps: &[Step], durability: Durability) {
    let opts = options(4096, durability);
    let mut sim = SimStorage::new();
    let mut model = Model::default();
    let mut wal = Some(
        Wal::open_with_storage(Arc::new(sim.clone()), DIR, opts.clone())
            .expect("open")
            .0,
    );
    for (index, step) in steps.iter().enumerate() {
        let context = format!("step {index} {step:?} ({durability:?})");
        match step {
            Step::Op(op) => {
                let log = wal.as_ref().expect("open log");
                if !run_ops(log, std::slice::from_ref(op), &mut model) {
                    // An injected fault poisoned the log: the process restarts on what the disk
                    // holds (its page cache intact).
                    drop(wal.take());
                    sim.set_faults(FaultPlan::default());
                    sim = sim.crash(CrashMode::TornTail {
                        cut_bytes: u64::MAX,
                    });
                    wal = Some(recover_and_check(
                        &sim,
                        &opts,
                        &mut model,
                        &format!("{context}: restart after fault"),
                    ));
                }
            }
            Step::Crash { kind, cut_permille } => {
                drop(wal.take());
                let mode = crash_mode(&sim, *kind, *cut_permille);
                sim = sim.crash(mode);
                if matches!(mode, CrashMode::SectorSubset { .. }) {
                    // A hole before valid unsynced frames is refused as corruption; the repair
                    // mode must then keep every acknowledged record.
                    if let Err(Error::Corrupt { .. }) =
                        Wal::open_with_storage(Arc::new(sim.clone()), DIR, opts.clone())
                    {
                        let repair = WalOptions {
                            repair: RepairMode::TruncateAtCorruption,
                            ..opts.clone()
                        };
                        drop(
                            Wal::open_with_storage(Arc::new(sim.clone()), DIR, repair)
                                .expect("repair opens"),
                        );
                    }
                }
                wal = Some(recover_and_check(
                    &sim,
                    &opts,
                    &mut model,
                    &format!("{context}: {mode:?}"),
                ));
            }
            Step::Fault { in_ops, enospc } => {
                let errno = if *enospc { Errno::Enospc } else { Errno::Eio };
                sim.set_faults(FaultPlan {
                    fail_at_op: Some((sim.op_count() + in_ops, errno)),
                    ..FaultPlan::default()
                });
            }
        }
    }
    // The live log agrees with the model too (everything written is visible in-process).
    sim.set_faults(FaultPlan::default());
    if let Some(log) = wal.take() {
        if log.sync().is_ok() {
            for id in model.unsynced.clone() {
                model.unsynced.remove(&id);
                model.acked.insert(id);
            }
            let records = read_all(&log);
            check_recovered(&records, &mut model.clone(), "live log at the end");
        }
        drop(log);
        let image = sim.crash(CrashMode::DropUnsynced);
        drop(recover_and_check(&image, &opts, &mut model, "final crash"));
    }
}

fn cases() -> u32 {
    if std::env::var("STATELOG_SLOW_TESTS").is_ok_and(|v| v == "1") {
        5000
    } else {
        1000
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn recovery_equals_durable_prefix(steps in prop::collection::vec(step(), 1..80), no_sync in any::<bool>()) {
        let durability = if no_sync { Durability::NoSync } else { Durability::GroupCommit };
        run_case(&steps, durability);
    }
}
