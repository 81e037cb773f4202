//! Shared harness of the crash and model tests: workloads whose payloads carry unique ids, a
//! runner that drives a `Wal` on `SimStorage` and records what was acknowledged, and the checker
//! of "nothing lost, nothing invented" after a crash.
// Each test binary uses a different part of this harness.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use statelog_rng::Rng;
use statelog_wal::storage::sim::{CrashMode, FaultPlan, Fill, SimStorage};
use statelog_wal::{Durability, Error, Lsn, OwnedRecord, RecordKind, Wal, WalOptions};

pub const DIR: &str = "/sim/wal";

/// One step of a workload.
#[derive(Debug, Clone)]
pub enum Op {
    /// Append one record of this payload size.
    Append { size_bytes: usize },
    /// Append one atomic batch of records of these sizes.
    Batch { sizes_bytes: Vec<usize> },
    /// `Wal::sync` (the acknowledgement point in `NoSync` mode).
    Sync,
    /// Delete sealed segments below the first LSN of the retained segment at this index.
    DeleteBelowSegment { segment_index: usize },
    /// Compact sealed segments below the first LSN of the retained segment at this index;
    /// records whose id is a multiple of 3 are not live.
    CompactBelowSegment { segment_index: usize },
    /// The background step.
    Prepare,
}

/// What the test knows about every record it ever submitted.
#[derive(Debug, Default, Clone)]
pub struct Model {
    /// id -> (kind, payload, batch id).
    pub submitted: BTreeMap<u64, (u8, Vec<u8>, u64)>,
    /// Ids that must be present.
    pub acked: BTreeSet<u64>,
    /// Ids that must be absent (dropped by an acknowledged compaction, or lost before an
    /// acknowledgement by an earlier crash).
    pub gone: BTreeSet<u64>,
    /// Ids that may be absent (dropped by a retention call that did not return Ok).
    pub maybe_gone: BTreeSet<u64>,
    /// Ids appended but not yet acknowledged (NoSync: not yet covered by a sync).
    pub unsynced: BTreeSet<u64>,
    pub id_next: u64,
    pub batch_next: u64,
}

impl Model {
    pub fn payload(&mut self, size_bytes: usize) -> (u64, Vec<u8>) {
        let id = self.id_next;
        self.id_next += 1;
        let mut payload = Vec::with_capacity(size_bytes.max(8));
        payload.extend_from_slice(&id.to_le_bytes());
        let mut rng = Rng::for_stream(id);
        while payload.len() < size_bytes.max(8) {
            payload.push(rng.next_u64() as u8);
        }
        (id, payload)
    }
}

pub fn id_of(payload: &[u8]) -> Option<u64> {
    let mut word = [0u8; 8];
    word.copy_from_slice(payload.get(..8)?);
    Some(u64::from_le_bytes(word))
}

pub fn kind_for(id: u64) -> RecordKind {
    RecordKind::new((id % 100) as u8).expect("caller kind")
}

pub fn options(segment_size_bytes: u64, durability: Durability) -> WalOptions {
    WalOptions {
        segment_size_bytes,
        durability,
        background_preparation: false,
        ..WalOptions::default()
    }
}

/// Runs `ops` against the log until the first error; updates `model`. Returns whether every op
/// succeeded.
pub fn run_ops(wal: &Wal, ops: &[Op], model: &mut Model) -> bool {
    let sync_acks = wal.options().durability != Durability::NoSync;
    for op in ops {
        let ok = match op {
            Op::Append { size_bytes } => {
                let (id, payload) = model.payload(*size_bytes);
                let batch = model.batch_next;
                model.batch_next += 1;
                model
                    .submitted
                    .insert(id, (kind_for(id).get(), payload.clone(), batch));
                model.unsynced.insert(id);
                match wal.append(kind_for(id), &payload) {
                    Ok(_) => {
                        if sync_acks {
                            model.unsynced.remove(&id);
                            model.acked.insert(id);
                        }
                        true
                    }
                    Err(_) => false,
                }
            }
            Op::Batch { sizes_bytes } => {
                let batch = model.batch_next;
                model.batch_next += 1;
                let mut ids = Vec::new();
                let mut payloads = Vec::new();
                for size in sizes_bytes {
                    let (id, payload) = model.payload(*size);
                    model
                        .submitted
                        .insert(id, (kind_for(id).get(), payload.clone(), batch));
                    model.unsynced.insert(id);
                    ids.push(id);
                    payloads.push(payload);
                }
                let items: Vec<(RecordKind, &[u8])> = ids
                    .iter()
                    .zip(&payloads)
                    .map(|(id, p)| (kind_for(*id), p.as_slice()))
                    .collect();
                match wal.append_batch(&items) {
                    Ok(_) => {
                        if sync_acks {
                            for id in ids {
                                model.unsynced.remove(&id);
                                model.acked.insert(id);
                            }
                        }
                        true
                    }
                    Err(_) => false,
                }
            }
            Op::Sync => match wal.sync() {
                Ok(_) => {
                    let now: Vec<u64> = model.unsynced.iter().copied().collect();
                    for id in now {
                        model.unsynced.remove(&id);
                        model.acked.insert(id);
                    }
                    true
                }
                Err(_) => false,
            },
            Op::DeleteBelowSegment { segment_index } => {
                let segments = wal.segments();
                let Some(target) = segments.get(*segment_index) else {
                    continue;
                };
                let Some(doomed) = ids_below(wal, target.first_lsn) else {
                    return false;
                };
                model.maybe_gone.extend(doomed.iter().copied());
                match wal.delete_below(target.first_lsn) {
                    Ok(_) => {
                        for id in doomed {
                            model.acked.remove(&id);
                            model.unsynced.remove(&id);
                            model.maybe_gone.remove(&id);
                            model.gone.insert(id);
                        }
                        true
                    }
                    Err(_) => false,
                }
            }
            Op::CompactBelowSegment { segment_index } => {
                let segments = wal.segments();
                let Some(target) = segments.get(*segment_index) else {
                    continue;
                };
                let Some(doomed) = ids_below(wal, target.first_lsn) else {
                    return false;
                };
                let doomed: Vec<u64> = doomed.into_iter().filter(|id| id % 3 == 0).collect();
                model.maybe_gone.extend(doomed.iter().copied());
                match wal.compact_below(target.first_lsn, |record| {
                    id_of(record.payload).is_some_and(|id| id % 3 != 0)
                }) {
                    Ok(_) => {
                        for id in doomed {
                            model.acked.remove(&id);
                            model.unsynced.remove(&id);
                            model.maybe_gone.remove(&id);
                            model.gone.insert(id);
                        }
                        true
                    }
                    Err(_) => false,
                }
            }
            Op::Prepare => wal.prepare_segments().is_ok(),
        };
        if !ok {
            return false;
        }
    }
    true
}

/// Ids of the records below `lsn`; `None` when reading fails (the process is halted).
fn ids_below(wal: &Wal, lsn: Lsn) -> Option<Vec<u64>> {
    let mut ids = Vec::new();
    for record in wal.iter_from(Lsn(1)).ok()? {
        let record = record.ok()?;
        if record.lsn >= lsn {
            break;
        }
        ids.extend(id_of(&record.payload));
    }
    Some(ids)
}

/// Checks a recovered log against the model; on success the model is advanced to the
/// recovered state (present ids acknowledged, absent unacknowledged ids gone forever).
pub fn check_recovered(records: &[OwnedRecord], model: &mut Model, context: &str) {
    let mut present: BTreeMap<u64, usize> = BTreeMap::new();
    let mut last_original_id: Option<u64> = None;
    for (position, record) in records.iter().enumerate() {
        let id = id_of(&record.payload)
            .unwrap_or_else(|| panic!("{context}: record {:?} has no id", record.lsn));
        let (kind, payload, _) = model
            .submitted
            .get(&id)
            .unwrap_or_else(|| panic!("{context}: invented record id {id} at {:?}", record.lsn));
        assert_eq!(record.kind.get(), *kind, "{context}: kind of id {id}");
        assert!(
            record.payload == *payload,
            "{context}: payload of id {id} differs"
        );
        assert!(
            present.insert(id, position).is_none(),
            "{context}: id {id} visible twice"
        );
        assert!(
            !model.gone.contains(&id),
            "{context}: id {id} reappeared after it was gone"
        );
        if record.copied_from.is_none() {
            if let Some(previous) = last_original_id {
                assert!(
                    previous < id,
                    "{context}: originals out of order ({previous} then {id})"
                );
            }
            last_original_id = Some(id);
        }
    }
    for id in &model.acked {
        if model.maybe_gone.contains(id) {
            continue;
        }
        assert!(
            present.contains_key(id),
            "{context}: acknowledged id {id} lost"
        );
    }
    // Whole batches only.
    let mut batches: BTreeMap<u64, (usize, usize)> = BTreeMap::new();
    for (id, (_, _, batch)) in &model.submitted {
        if model.gone.contains(id) || model.maybe_gone.contains(id) {
            continue;
        }
        let entry = batches.entry(*batch).or_default();
        entry.0 += 1;
        if present.contains_key(id) {
            entry.1 += 1;
        }
    }
    for (batch, (total, found)) in &batches {
        assert!(
            *found == 0 || found == total,
            "{context}: batch {batch} partially recovered ({found} of {total})"
        );
    }
    // No holes: an unacknowledged record may survive only if everything submitted before it did.
    let mut hole: Option<u64> = None;
    for id in model.submitted.keys() {
        if model.gone.contains(id) || model.maybe_gone.contains(id) {
            continue;
        }
        if present.contains_key(id) {
            if let Some(missing) = hole {
                panic!("{context}: id {id} recovered but earlier id {missing} is missing");
            }
        } else {
            hole.get_or_insert(*id);
        }
    }
    // Advance the model.
    let ids: Vec<u64> = model.submitted.keys().copied().collect();
    for id in ids {
        if present.contains_key(&id) {
            model.acked.insert(id);
        } else {
            model.acked.remove(&id);
            model.gone.insert(id);
        }
    }
    model.maybe_gone.clear();
    model.unsynced.clear();
}

pub fn read_all(wal: &Wal) -> Vec<OwnedRecord> {
    wal.iter_from(Lsn(1))
        .expect("iter")
        .collect::<Result<Vec<_>, Error>>()
        .expect("read back")
}

/// Opens the image and checks it.
pub fn recover_and_check(
    image: &SimStorage,
    options: &WalOptions,
    model: &mut Model,
    context: &str,
) -> Wal {
    let (wal, _report) = match Wal::open_with_storage(Arc::new(image.clone()), DIR, options.clone())
    {
        Ok(opened) => opened,
        Err(error) => panic!("{context}: recovery failed: {error}"),
    };
    let records = read_all(&wal);
    check_recovered(&records, model, context);
    wal
}

/// The crash images worth checking after a run that stopped with `pending_bytes` unsynced.
pub fn crash_modes(pending_bytes: u64, seed: u64) -> Vec<CrashMode> {
    let mut modes = vec![CrashMode::DropUnsynced, CrashMode::LoseDirOps];
    let cuts: Vec<u64> = if pending_bytes <= 4608 {
        (0..=pending_bytes).collect()
    } else {
        let mut cuts: HashSet<u64> = (0..=256)
            .chain(pending_bytes - 256..=pending_bytes)
            .collect();
        let mut cut = 0;
        while cut < pending_bytes {
            cuts.insert(cut);
            cut += 509;
        }
        let mut cuts: Vec<u64> = cuts.into_iter().collect();
        cuts.sort_unstable();
        cuts
    };
    for cut in cuts {
        modes.push(CrashMode::TornTail { cut_bytes: cut });
        if cut % 7 == 0 && cut < pending_bytes {
            modes.push(CrashMode::TornTailGarbage {
                cut_bytes: cut,
                fill: Fill::Random(seed ^ cut),
            });
        }
    }
    modes
}

/// Runs `ops` on a fresh simulated disk with the process halted at op `halt_at` (None: never).
pub fn run_halted(ops: &[Op], options: &WalOptions, halt_at: Option<u64>) -> (SimStorage, Model) {
    let sim = SimStorage::new();
    sim.set_faults(FaultPlan {
        halt_at_op: halt_at,
        ..FaultPlan::default()
    });
    let mut model = Model::default();
    if let Ok((wal, _)) = Wal::open_with_storage(Arc::new(sim.clone()), DIR, options.clone()) {
        run_ops(&wal, ops, &mut model);
    }
    (sim, model)
}

/// Exhaustive crash-point sweep: every op index x every crash mode. Returns images checked.
pub fn sweep(ops: &[Op], options: &WalOptions, context: &str) -> u64 {
    let (clean, _) = run_halted(ops, options, None);
    let total_ops = clean.op_count();
    let mut images = 0u64;
    for halt_at in 0..=total_ops {
        let (sim, model) = run_halted(ops, options, Some(halt_at));
        if std::env::var("SWEEP_DEBUG").is_ok() {
            println!(
                "{context} halt_at={halt_at} pending={}",
                sim.pending_bytes()
            );
        }
        for mode in crash_modes(sim.pending_bytes(), halt_at) {
            let image = sim.crash(mode);
            let mut model = model.clone();
            let wal = recover_and_check(
                &image,
                options,
                &mut model,
                &format!("{context} halt_at={halt_at} mode={mode:?}"),
            );
            drop(wal);
            images += 1;
        }
    }
    images
}
