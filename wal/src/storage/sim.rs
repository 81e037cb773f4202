//! sim: the simulated disk, for tests of the log and of crates built on it.
//!
//! It keeps, per file, the bytes written (what reads see) apart from the bytes made durable by a
//! sync, and per directory the entries made durable by `sync_dir` apart from the live ones.
//! Unsynced writes of all files sit in one ordered stream, so a crash can keep any prefix of it
//! (tearing the last write at any byte). Every call gets an op index; a `FaultPlan` makes the call
//! with a given index fail (EIO, ENOSPC, EROFS), or halts the "process" from an index on. After a
//! failed sync the file's pending writes are dropped from the durable stream, as Linux does, so
//! code that retries fsync and trusts it is caught.
//!
//! Invariants: `crash` never invents bytes that were not written (except the explicit garbage of
//! `TornTailGarbage` and the explicit bit flips of `flip_bit`). This module must not be used by
//! production code paths.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;
use statelog_rng::Rng;

use super::{Mapping, Storage, StorageFile};

/// Sector size used when a torn write leaves garbage in the rest of its sector.
pub const SIM_SECTOR_SIZE_BYTES: usize = 512;

/// The error an injected fault returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Errno {
    /// Input/output error.
    Eio,
    /// No space left on device.
    Enospc,
    /// Read-only file system.
    Erofs,
}

impl Errno {
    fn to_io(self) -> io::Error {
        match self {
            // Raw Linux errno values, so the errors look like the kernel's.
            Errno::Eio => io::Error::from_raw_os_error(5),
            Errno::Enospc => io::Error::from_raw_os_error(28),
            Errno::Erofs => io::Error::from_raw_os_error(30),
        }
    }
}

/// Which faults to inject.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultPlan {
    /// The call with this op index fails with this error and has no effect.
    pub fail_at_op: Option<(u64, Errno)>,
    /// Every call from this op index on fails with EIO and has no effect (the process died).
    pub halt_at_op: Option<u64>,
    /// Writes that would take the total written bytes past this budget fail with ENOSPC.
    pub enospc_after_bytes: Option<u64>,
}

/// What the rest of a torn sector holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// Zeros.
    Zeros,
    /// Pseudo-random bytes from this seed.
    Random(u64),
}

/// What survives a crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashMode {
    /// Only synced bytes survive; directory operations survive.
    DropUnsynced,
    /// Synced bytes plus the first `cut_bytes` bytes of the unsynced write stream, in order.
    TornTail {
        /// Bytes of the unsynced stream that reach the disk.
        cut_bytes: u64,
    },
    /// Like `TornTail`, but the rest of the sector holding the cut is overwritten with `fill`.
    TornTailGarbage {
        /// Bytes of the unsynced stream that reach the disk.
        cut_bytes: u64,
        /// What the rest of the torn sector holds.
        fill: Fill,
    },
    /// Only synced bytes survive and unsynced directory operations are rolled back.
    LoseDirOps,
    /// Each 512-byte sector of the unsynced writes survives or not, independently (the disk
    /// reordered its writes); directory operations survive.
    SectorSubset {
        /// Seed of the choice.
        seed: u64,
    },
}

#[derive(Debug, Clone, Default)]
struct FileData {
    current: Vec<u8>,
    durable: Vec<u8>,
}

#[derive(Debug, Clone)]
enum PendingOp {
    Write { offset_bytes: u64, bytes: Vec<u8> },
    SetLen { len_bytes: u64 },
}

#[derive(Debug, Clone)]
struct Pending {
    file_id: u64,
    op: PendingOp,
}

#[derive(Debug, Default)]
struct SimState {
    files: HashMap<u64, FileData>,
    file_id_next: u64,
    live_dir: BTreeMap<PathBuf, u64>,
    durable_dir: BTreeMap<PathBuf, u64>,
    pending: Vec<Pending>,
    op_index: u64,
    written_bytes_total: u64,
    faults: FaultPlan,
}

impl SimState {
    /// Counts one op and returns the injected error for it, if any.
    fn begin_op(&mut self) -> io::Result<u64> {
        let index = self.op_index;
        self.op_index += 1;
        if let Some(halt) = self.faults.halt_at_op {
            if index >= halt {
                return Err(io::Error::other("simulated crash: process halted"));
            }
        }
        if let Some((at, errno)) = self.faults.fail_at_op {
            if at == index {
                return Err(errno.to_io());
            }
        }
        Ok(index)
    }

    fn file(&mut self, id: u64) -> io::Result<&mut FileData> {
        self.files
            .get_mut(&id)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "simulated file gone"))
    }

    fn sync_file(&mut self, id: u64) -> io::Result<()> {
        let mut kept = Vec::with_capacity(self.pending.len());
        let mut mine = Vec::new();
        for pending in self.pending.drain(..) {
            if pending.file_id == id {
                mine.push(pending.op);
            } else {
                kept.push(pending);
            }
        }
        self.pending = kept;
        let data = self.file(id)?;
        for op in mine {
            apply(&mut data.durable, &op);
        }
        Ok(())
    }

    fn drop_pending_of(&mut self, id: u64) {
        self.pending.retain(|pending| pending.file_id != id);
    }
}

fn apply(bytes: &mut Vec<u8>, op: &PendingOp) {
    match op {
        PendingOp::Write {
            offset_bytes,
            bytes: data,
        } => {
            let start = usize::try_from(*offset_bytes).expect("sim offsets fit usize");
            let end = start + data.len();
            if bytes.len() < end {
                bytes.resize(end, 0);
            }
            bytes[start..end].copy_from_slice(data);
        }
        PendingOp::SetLen { len_bytes } => {
            bytes.resize(
                usize::try_from(*len_bytes).expect("sim lengths fit usize"),
                0,
            );
        }
    }
}

/// The simulated disk. Cloning shares the same disk.
#[derive(Debug, Clone, Default)]
pub struct SimStorage {
    state: Arc<Mutex<SimState>>,
}

impl SimStorage {
    /// An empty disk.
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces the fault plan.
    pub fn set_faults(&self, faults: FaultPlan) {
        self.state.lock().faults = faults;
    }

    /// Calls made so far (the next call gets this index).
    pub fn op_count(&self) -> u64 {
        self.state.lock().op_index
    }

    /// Bytes written so far, over all files (what `FaultPlan::enospc_after_bytes` counts).
    pub fn written_bytes_total(&self) -> u64 {
        self.state.lock().written_bytes_total
    }

    /// Bytes written but not yet made durable, over all files.
    pub fn pending_bytes(&self) -> u64 {
        self.state
            .lock()
            .pending
            .iter()
            .map(|pending| match &pending.op {
                PendingOp::Write { bytes, .. } => bytes.len() as u64,
                PendingOp::SetLen { .. } => 0,
            })
            .sum()
    }

    /// The paths whose directory entries exist now (live view).
    pub fn paths(&self) -> Vec<PathBuf> {
        self.state.lock().live_dir.keys().cloned().collect()
    }

    /// The bytes a read of `path` sees now.
    pub fn file_bytes(&self, path: &Path) -> Option<Vec<u8>> {
        let state = self.state.lock();
        let id = state.live_dir.get(path)?;
        state.files.get(id).map(|data| data.current.clone())
    }

    /// Flips one bit of a file's bytes (both written and durable views): bit rot.
    pub fn flip_bit(&self, path: &Path, offset_bytes: u64, bit_index: u8) -> bool {
        let mut state = self.state.lock();
        let Some(&id) = state.live_dir.get(path) else {
            return false;
        };
        let Some(data) = state.files.get_mut(&id) else {
            return false;
        };
        let Ok(offset) = usize::try_from(offset_bytes) else {
            return false;
        };
        let mask = 1u8 << (bit_index % 8);
        let mut flipped = false;
        if let Some(byte) = data.current.get_mut(offset) {
            *byte ^= mask;
            flipped = true;
        }
        if let Some(byte) = data.durable.get_mut(offset) {
            *byte ^= mask;
        }
        flipped
    }

    /// Overwrites bytes of a file in both views (for tests that plant stale or damaged data).
    pub fn overwrite(&self, path: &Path, offset_bytes: u64, bytes: &[u8]) -> bool {
        let mut state = self.state.lock();
        let Some(&id) = state.live_dir.get(path) else {
            return false;
        };
        let Some(data) = state.files.get_mut(&id) else {
            return false;
        };
        let op = PendingOp::Write {
            offset_bytes,
            bytes: bytes.to_vec(),
        };
        apply(&mut data.current, &op);
        apply(&mut data.durable, &op);
        true
    }

    /// The disk a reboot would see after a crash now. The returned disk has no faults, no
    /// pending writes and a fresh op counter; this one is left as it was.
    pub fn crash(&self, mode: CrashMode) -> SimStorage {
        let state = self.state.lock();
        let dir = match mode {
            CrashMode::LoseDirOps => state.durable_dir.clone(),
            _ => state.live_dir.clone(),
        };
        let mut files: HashMap<u64, Vec<u8>> = state
            .files
            .iter()
            .map(|(&id, data)| (id, data.durable.clone()))
            .collect();
        if let CrashMode::SectorSubset { seed } = mode {
            let mut rng = Rng::new(seed | 1);
            for pending in &state.pending {
                let Some(bytes) = files.get_mut(&pending.file_id) else {
                    continue;
                };
                match &pending.op {
                    PendingOp::SetLen { .. } => apply(bytes, &pending.op),
                    PendingOp::Write {
                        offset_bytes,
                        bytes: data,
                    } => {
                        let start = usize::try_from(*offset_bytes).expect("sim offsets fit usize");
                        let mut position = 0usize;
                        while position < data.len() {
                            let absolute = start + position;
                            let sector_end =
                                (absolute / SIM_SECTOR_SIZE_BYTES + 1) * SIM_SECTOR_SIZE_BYTES;
                            let len = (sector_end - absolute).min(data.len() - position);
                            if rng.coin() {
                                let piece = data[position..position + len].to_vec();
                                apply(
                                    bytes,
                                    &PendingOp::Write {
                                        offset_bytes: absolute as u64,
                                        bytes: piece,
                                    },
                                );
                            }
                            position += len;
                        }
                    }
                }
            }
        }
        let (cut_bytes, fill) = match mode {
            CrashMode::DropUnsynced | CrashMode::LoseDirOps | CrashMode::SectorSubset { .. } => {
                (0, None)
            }
            CrashMode::TornTail { cut_bytes } => (cut_bytes, None),
            CrashMode::TornTailGarbage { cut_bytes, fill } => (cut_bytes, Some(fill)),
        };
        let mut budget = cut_bytes;
        for pending in &state.pending {
            if budget == 0 {
                break;
            }
            let Some(bytes) = files.get_mut(&pending.file_id) else {
                continue;
            };
            match &pending.op {
                PendingOp::SetLen { .. } => apply(bytes, &pending.op),
                PendingOp::Write {
                    offset_bytes,
                    bytes: data,
                } => {
                    let len = data.len() as u64;
                    if len <= budget {
                        apply(bytes, &pending.op);
                        budget -= len;
                        continue;
                    }
                    let kept = usize::try_from(budget).expect("budget below write length");
                    let mut torn = data[..kept].to_vec();
                    if let Some(fill) = fill {
                        let absolute = *offset_bytes as usize + kept;
                        let sector_end =
                            (absolute / SIM_SECTOR_SIZE_BYTES + 1) * SIM_SECTOR_SIZE_BYTES;
                        let garbage_len = sector_end - absolute;
                        let mut rng = match fill {
                            Fill::Zeros => None,
                            Fill::Random(seed) => Some(Rng::new(seed | 1)),
                        };
                        for _ in 0..garbage_len {
                            // The low byte of each value, as the sequences recorded so far.
                            torn.push(rng.as_mut().map_or(0, |rng| rng.next_u64() as u8));
                        }
                    }
                    apply(
                        bytes,
                        &PendingOp::Write {
                            offset_bytes: *offset_bytes,
                            bytes: torn,
                        },
                    );
                    budget = 0;
                }
            }
        }
        let mut next = SimState {
            file_id_next: state.file_id_next,
            ..SimState::default()
        };
        for (path, id) in &dir {
            if let Some(bytes) = files.remove(id) {
                next.files.insert(
                    *id,
                    FileData {
                        current: bytes.clone(),
                        durable: bytes,
                    },
                );
                next.live_dir.insert(path.clone(), *id);
                next.durable_dir.insert(path.clone(), *id);
            }
        }
        SimStorage {
            state: Arc::new(Mutex::new(next)),
        }
    }
}

#[derive(Debug)]
struct SimFile {
    state: Arc<Mutex<SimState>>,
    id: u64,
}

impl Storage for SimStorage {
    fn create(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>> {
        let mut state = self.state.lock();
        state.begin_op()?;
        let id = state.file_id_next;
        state.file_id_next += 1;
        state.files.insert(id, FileData::default());
        state.live_dir.insert(path.to_path_buf(), id);
        Ok(Arc::new(SimFile {
            state: Arc::clone(&self.state),
            id,
        }))
    }
    fn open(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>> {
        let mut state = self.state.lock();
        state.begin_op()?;
        let id = *state.live_dir.get(path).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("simulated: no {}", path.display()),
            )
        })?;
        Ok(Arc::new(SimFile {
            state: Arc::clone(&self.state),
            id,
        }))
    }
    fn create_dir_all(&self, _dir: &Path) -> io::Result<()> {
        // Directories are implicit in the simulated disk.
        Ok(())
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut state = self.state.lock();
        state.begin_op()?;
        Ok(state
            .live_dir
            .keys()
            .filter(|path| path.parent() == Some(dir))
            .filter_map(|path| {
                path.file_name()
                    .and_then(|name| name.to_str())
                    .map(str::to_owned)
            })
            .collect())
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        state.begin_op()?;
        let id = state.live_dir.remove(from).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("simulated: no {}", from.display()),
            )
        })?;
        state.live_dir.insert(to.to_path_buf(), id);
        Ok(())
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        state.begin_op()?;
        state.live_dir.remove(path).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("simulated: no {}", path.display()),
            )
        })?;
        Ok(())
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        state.begin_op()?;
        let live: Vec<(PathBuf, u64)> = state
            .live_dir
            .iter()
            .filter(|(path, _)| path.parent() == Some(dir))
            .map(|(p, id)| (p.clone(), *id))
            .collect();
        state
            .durable_dir
            .retain(|path, _| path.parent() != Some(dir));
        state.durable_dir.extend(live);
        Ok(())
    }
}

impl StorageFile for SimFile {
    fn write_at(&self, offset_bytes: u64, buf: &[u8]) -> io::Result<()> {
        let mut state = self.state.lock();
        state.begin_op()?;
        if let Some(budget) = state.faults.enospc_after_bytes {
            if state.written_bytes_total + buf.len() as u64 > budget {
                return Err(Errno::Enospc.to_io());
            }
        }
        state.written_bytes_total += buf.len() as u64;
        let op = PendingOp::Write {
            offset_bytes,
            bytes: buf.to_vec(),
        };
        apply(&mut state.file(self.id)?.current, &op);
        state.pending.push(Pending {
            file_id: self.id,
            op,
        });
        Ok(())
    }
    fn read_at(&self, offset_bytes: u64, buf: &mut [u8]) -> io::Result<usize> {
        let mut state = self.state.lock();
        state.begin_op()?;
        let data = &state.file(self.id)?.current;
        let start = usize::try_from(offset_bytes)
            .unwrap_or(usize::MAX)
            .min(data.len());
        let count = buf.len().min(data.len() - start);
        buf[..count].copy_from_slice(&data[start..start + count]);
        Ok(count)
    }
    fn set_len(&self, len_bytes: u64) -> io::Result<()> {
        let mut state = self.state.lock();
        state.begin_op()?;
        let op = PendingOp::SetLen { len_bytes };
        apply(&mut state.file(self.id)?.current, &op);
        state.pending.push(Pending {
            file_id: self.id,
            op,
        });
        Ok(())
    }
    fn sync_data(&self) -> io::Result<()> {
        let mut state = self.state.lock();
        let halted = state
            .faults
            .halt_at_op
            .is_some_and(|halt| state.op_index >= halt);
        if let Err(err) = state.begin_op() {
            if !halted {
                // An injected sync failure: Linux marks the dirty pages clean after reporting
                // the error once, so the data never reaches the disk and a retried fsync
                // reports success. (A halted process never issued the sync: its writes stay
                // pending and a crash may keep any prefix of them.)
                state.drop_pending_of(self.id);
            }
            return Err(err);
        }
        state.sync_file(self.id)
    }
    fn sync_all(&self) -> io::Result<()> {
        self.sync_data()
    }
    fn len(&self) -> io::Result<u64> {
        let mut state = self.state.lock();
        state.begin_op()?;
        Ok(state.file(self.id)?.current.len() as u64)
    }
    fn map(&self) -> io::Result<Mapping> {
        let mut state = self.state.lock();
        state.begin_op()?;
        let bytes: Arc<[u8]> = Arc::from(state.file(self.id)?.current.as_slice());
        Ok(Mapping::from_bytes(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (SimStorage, Arc<dyn StorageFile>, PathBuf) {
        let sim = SimStorage::new();
        let dir = PathBuf::from("/d");
        let path = dir.join("f");
        let file = sim.create(&path).expect("create");
        sim.sync_dir(&dir).expect("sync dir");
        (sim, file, path)
    }

    #[test]
    fn unsynced_writes_drop_on_crash() {
        let (sim, file, path) = setup();
        file.write_at(0, b"abcd").expect("write");
        file.sync_data().expect("sync");
        file.write_at(4, b"efgh").expect("write");
        assert_eq!(sim.file_bytes(&path).expect("file"), b"abcdefgh");
        let after = sim.crash(CrashMode::DropUnsynced);
        assert_eq!(after.file_bytes(&path).expect("file"), b"abcd");
    }

    #[test]
    fn torn_tail_keeps_prefix_of_stream() {
        let (sim, file, path) = setup();
        file.write_at(0, b"abcd").expect("write");
        file.write_at(4, b"efgh").expect("write");
        assert_eq!(sim.pending_bytes(), 8);
        for cut in 0..=8u64 {
            let after = sim.crash(CrashMode::TornTail { cut_bytes: cut });
            let bytes = after.file_bytes(&path).expect("file");
            assert_eq!(&bytes[..], &b"abcdefgh"[..cut as usize]);
        }
    }

    #[test]
    fn torn_garbage_fills_sector() {
        let (sim, file, path) = setup();
        file.write_at(0, &[7u8; 600]).expect("write");
        let after = sim.crash(CrashMode::TornTailGarbage {
            cut_bytes: 10,
            fill: Fill::Random(5),
        });
        let bytes = after.file_bytes(&path).expect("file");
        assert_eq!(bytes.len(), SIM_SECTOR_SIZE_BYTES);
        assert_eq!(&bytes[..10], &[7u8; 10]);
    }

    #[test]
    fn sector_subset_keeps_some_sectors() {
        let (sim, file, path) = setup();
        file.write_at(0, &[9u8; 4096]).expect("write");
        let mut kept_counts = std::collections::BTreeSet::new();
        for seed in 0..16 {
            let bytes = sim
                .crash(CrashMode::SectorSubset { seed })
                .file_bytes(&path)
                .expect("file");
            let kept = bytes
                .chunks(SIM_SECTOR_SIZE_BYTES)
                .filter(|s| s.iter().all(|&b| b == 9))
                .count();
            kept_counts.insert(kept);
        }
        assert!(
            kept_counts.len() > 2,
            "different seeds keep different sectors: {kept_counts:?}"
        );
    }

    #[test]
    fn lose_dir_ops_rolls_back_create() {
        let (sim, _file, path) = setup();
        let other = PathBuf::from("/d/g");
        let g = sim.create(&other).expect("create");
        g.write_at(0, b"x").expect("write");
        g.sync_data().expect("sync");
        assert!(sim
            .crash(CrashMode::LoseDirOps)
            .file_bytes(&other)
            .is_none());
        assert!(sim
            .crash(CrashMode::DropUnsynced)
            .file_bytes(&other)
            .is_some());
        assert!(sim.crash(CrashMode::LoseDirOps).file_bytes(&path).is_some());
    }

    #[test]
    fn failed_sync_drops_pending_writes() {
        let (sim, file, path) = setup();
        file.write_at(0, b"abcd").expect("write");
        let next = sim.op_count();
        sim.set_faults(FaultPlan {
            fail_at_op: Some((next, Errno::Eio)),
            ..FaultPlan::default()
        });
        assert!(file.sync_data().is_err());
        // A retry "succeeds" but the data is gone from the durable image.
        file.sync_data().expect("retry reports success");
        assert_eq!(
            sim.crash(CrashMode::DropUnsynced)
                .file_bytes(&path)
                .expect("file"),
            b""
        );
    }

    #[test]
    fn halt_and_enospc() {
        let (sim, file, _path) = setup();
        sim.set_faults(FaultPlan {
            enospc_after_bytes: Some(3),
            ..FaultPlan::default()
        });
        let err = file.write_at(0, b"abcd").expect_err("no space");
        assert_eq!(err.raw_os_error(), Some(28));
        let at = sim.op_count();
        sim.set_faults(FaultPlan {
            halt_at_op: Some(at),
            ..FaultPlan::default()
        });
        assert!(file.write_at(0, b"a").is_err());
        assert!(file.sync_data().is_err());
    }
}
