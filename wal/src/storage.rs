//! storage: the `Storage` seam, the only path from the log to the disk.
//!
//! `FsStorage` is the real file system (positional I/O, fdatasync/fsync, directory fsync, reads
//! through memmap2). `SimStorage` (module `sim`, test builds or feature `sim`) is the simulated
//! disk that keeps written bytes apart from synced bytes and can crash, tear and fail.
//!
//! Invariants: directory entries created, renamed or removed are volatile until `sync_dir`;
//! file bytes are volatile until `sync_data`/`sync_all`. This module must not know anything about
//! records or segments.

use std::fs::{File, OpenOptions};
use std::io;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[cfg(any(test, feature = "sim"))]
pub mod sim;

/// A file system as the log sees it.
pub trait Storage: Send + Sync + std::fmt::Debug {
    /// Creates (or truncates) a file; its directory entry is volatile until `sync_dir`.
    fn create(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>>;
    /// Opens an existing file for reading and writing.
    fn open(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>>;
    /// Opens an existing file for reading only (read-only opens of the log).
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>> {
        self.open(path)
    }
    /// Creates a directory (and its parents) if missing.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// The file names (not paths) in a directory, in no particular order.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// Renames a file; volatile until `sync_dir`.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes a file; volatile until `sync_dir`.
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Makes the directory's entries durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Takes the directory's writer lock, held until the returned guard is dropped, so that two
    /// processes never write one log. `Ok(None)` where the storage has no other process to fear
    /// (the simulated disk); an `io::ErrorKind::WouldBlock` error when another holder has it.
    fn lock_exclusive(&self, dir: &Path) -> io::Result<Option<DirLock>> {
        let _ = dir;
        Ok(None)
    }
}

/// One open file.
pub trait StorageFile: Send + Sync + std::fmt::Debug {
    /// Writes all of `buf` at `offset_bytes`.
    fn write_at(&self, offset_bytes: u64, buf: &[u8]) -> io::Result<()>;
    /// Reads up to `buf.len()` bytes at `offset_bytes`; returns the count read.
    fn read_at(&self, offset_bytes: u64, buf: &mut [u8]) -> io::Result<usize>;
    /// Sets the file length.
    fn set_len(&self, len_bytes: u64) -> io::Result<()>;
    /// Makes written data durable (fdatasync).
    fn sync_data(&self) -> io::Result<()>;
    /// Makes written data and metadata durable (fsync).
    fn sync_all(&self) -> io::Result<()>;
    /// The file length.
    fn len(&self) -> io::Result<u64>;
    /// Frees the blocks of `len_bytes` at `offset_bytes` without changing the file's length
    /// (reads there then see zeros). Best effort: a storage that cannot free a range early
    /// keeps its blocks until the file is removed, and returns Ok.
    fn release_range(&self, offset_bytes: u64, len_bytes: u64) -> io::Result<()> {
        let _ = (offset_bytes, len_bytes);
        Ok(())
    }
    /// Whether the file is empty.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
    /// A read-only view of the whole file as it is now. For the real file system it is a memory
    /// map that also shows later writes; for the simulated disk a snapshot.
    fn map(&self) -> io::Result<Mapping>;
    /// Whether a mapping from `map` shows bytes written after it was taken (a shared memory
    /// map does; a snapshot does not). A reader may keep such a mapping of a file still being
    /// written instead of mapping it again at every read.
    fn map_shows_later_writes(&self) -> bool {
        false
    }
    /// Like `map`, for a scan of the whole file: the real file system prefaults the pages.
    fn map_for_scan(&self) -> io::Result<Mapping> {
        self.map()
    }
}

/// Bytes of a file made visible to readers.
#[derive(Debug, Clone)]
pub struct Mapping(MappingInner);

#[derive(Debug, Clone)]
enum MappingInner {
    Empty,
    Mmap(Arc<memmap2::Mmap>),
    #[allow(dead_code)] // built only by the simulated disk
    Bytes(Arc<[u8]>),
}

impl Mapping {
    /// A mapping over bytes held in memory.
    pub fn from_bytes(bytes: Arc<[u8]>) -> Self {
        Mapping(MappingInner::Bytes(bytes))
    }
}

impl Deref for Mapping {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.0 {
            MappingInner::Empty => &[],
            MappingInner::Mmap(map) => map,
            MappingInner::Bytes(bytes) => bytes,
        }
    }
}

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct FsStorage;

impl FsStorage {
    /// The real file system.
    pub fn new() -> Self {
        FsStorage
    }
}

#[derive(Debug)]
struct FsFile {
    file: File,
}

impl Storage for FsStorage {
    fn create(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        Ok(Arc::new(FsFile { file }))
    }
    fn open(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        Ok(Arc::new(FsFile { file }))
    }
    fn open_read(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>> {
        let file = OpenOptions::new().read(true).open(path)?;
        Ok(Arc::new(FsFile { file }))
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            if let Some(name) = entry.file_name().to_str() {
                names.push(name.to_owned());
            }
        }
        Ok(names)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn lock_exclusive(&self, dir: &Path) -> io::Result<Option<DirLock>> {
        let path = join(dir, LOCK_FILE_NAME);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)?;
        use std::os::fd::AsRawFd;
        // SAFETY: `flock` only reads the descriptor, which `file` keeps open for this call; the
        // lock lives as long as the open file description (released on drop or process death).
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc == 0 {
            return Ok(Some(DirLock { _file: file }));
        }
        let error = io::Error::last_os_error();
        if error.kind() == io::ErrorKind::WouldBlock {
            Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("{} is held by another process", path.display()),
            ))
        } else {
            Err(error)
        }
    }
}

impl StorageFile for FsFile {
    fn write_at(&self, offset_bytes: u64, buf: &[u8]) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        self.file.write_all_at(buf, offset_bytes)
    }
    fn read_at(&self, offset_bytes: u64, buf: &mut [u8]) -> io::Result<usize> {
        use std::os::unix::fs::FileExt;
        self.file.read_at(buf, offset_bytes)
    }
    fn set_len(&self, len_bytes: u64) -> io::Result<()> {
        self.file.set_len(len_bytes)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.file.sync_data()
    }
    fn sync_all(&self) -> io::Result<()> {
        self.file.sync_all()
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }
    fn release_range(&self, offset_bytes: u64, len_bytes: u64) -> io::Result<()> {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let (Ok(offset), Ok(len)) = (
                libc::off_t::try_from(offset_bytes),
                libc::off_t::try_from(len_bytes),
            ) else {
                return Ok(());
            };
            // SAFETY: `fallocate` takes plain integers and an fd this file owns.
            let result = unsafe {
                libc::fallocate(
                    self.file.as_raw_fd(),
                    libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                    offset,
                    len,
                )
            };
            if result != 0 {
                let error = io::Error::last_os_error();
                // A file system without hole punching keeps the blocks until the removal.
                if error.raw_os_error() != Some(libc::EOPNOTSUPP) {
                    return Err(error);
                }
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (offset_bytes, len_bytes);
        Ok(())
    }
    fn map(&self) -> io::Result<Mapping> {
        if self.len()? == 0 {
            return Ok(Mapping(MappingInner::Empty));
        }
        // SAFETY: the log owns its directory: segment files are only written through this
        // process's `Storage`, never truncated while mapped (segments are fixed-size and removed
        // only after their last reader is gone from the catalog), so the mapped range stays valid.
        // Concurrent writes by the writer change bytes the reader does not interpret past the
        // visible LSN.
        let map = unsafe { memmap2::Mmap::map(&self.file)? };
        Ok(Mapping(MappingInner::Mmap(Arc::new(map))))
    }
    fn map_shows_later_writes(&self) -> bool {
        // A shared mapping of the file: later writes through the same file show in it.
        true
    }
    fn map_for_scan(&self) -> io::Result<Mapping> {
        if self.len()? == 0 {
            return Ok(Mapping(MappingInner::Empty));
        }
        // SAFETY: as in `map`.
        let map = unsafe { memmap2::MmapOptions::new().populate().map(&self.file)? };
        Ok(Mapping(MappingInner::Mmap(Arc::new(map))))
    }
}

/// Joins a directory and a file name.
/// The name of the file in a log directory whose advisory lock marks the one writing process.
/// Recovery ignores it (it is not a segment name).
pub const LOCK_FILE_NAME: &str = "LOCK";

/// The writer lock of a log directory: released when dropped (or when the process dies).
#[derive(Debug)]
pub struct DirLock {
    _file: std::fs::File,
}

pub(crate) fn join(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fs_round_trip_and_map() {
        let dir = tempfile::tempdir().expect("tempdir");
        let storage = FsStorage::new();
        let path = dir.path().join("a");
        let file = storage.create(&path).expect("create");
        file.set_len(8192).expect("set_len");
        file.write_at(100, b"hello").expect("write");
        file.sync_data().expect("sync");
        storage.sync_dir(dir.path()).expect("sync dir");
        let map = file.map().expect("map");
        assert_eq!(map.len(), 8192);
        assert_eq!(&map[100..105], b"hello");
        let mut buf = [0u8; 5];
        assert_eq!(file.read_at(100, &mut buf).expect("read"), 5);
        assert_eq!(&buf, b"hello");
        storage
            .rename(&path, &dir.path().join("b"))
            .expect("rename");
        assert_eq!(
            storage.list(dir.path()).expect("list"),
            vec!["b".to_owned()]
        );
        storage.remove(&dir.path().join("b")).expect("remove");
        assert!(storage.list(dir.path()).expect("list").is_empty());
    }
}
