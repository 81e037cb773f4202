//! E4: a real ENOSPC. The log lives on a 1 MiB tmpfs (root only; elsewhere the test prints why
//! it skips). Appending until the file system is full must end in a typed error, never a panic,
//! with every acknowledged record readable afterwards; once space is added, a reopened log
//! accepts writes again.

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
        Error::Poisoned { cause } => is_enospc(cause),
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
        assert!(matches!(
            wal.append(kind, b"more"),
            Err(Error::Poisoned { .. })
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
