//! Arbitrary damaged segment directories: recovery and reading never panic, and whatever a
//! successful open returns re-validates (every record it shows decodes with its CRC). Valid logs
//! are mutated by random byte overwrites, truncations and foreign files.

use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;
use statelog_wal::storage::sim::{CrashMode, SimStorage};
use statelog_wal::{Durability, Error, Lsn, RecordKind, Storage, Wal, WalOptions};

const DIR: &str = "/d";

fn options(read_only: bool) -> WalOptions {
    WalOptions {
        segment_size_bytes: 4096,
        durability: Durability::GroupCommit,
        background_preparation: false,
        read_only,
        ..WalOptions::default()
    }
}

fn base_image(records: usize) -> SimStorage {
    let sim = SimStorage::new();
    let (wal, _) =
        Wal::open_with_storage(Arc::new(sim.clone()), DIR, options(false)).expect("open");
    for index in 0..records {
        let payload = vec![index as u8; 50 + (index * 37) % 600];
        wal.append(RecordKind::new((index % 50) as u8).expect("kind"), &payload)
            .expect("append");
    }
    drop(wal);
    sim.crash(CrashMode::DropUnsynced)
}

#[derive(Debug, Clone)]
enum Damage {
    Overwrite {
        file_index: usize,
        offset: usize,
        bytes: Vec<u8>,
    },
    Truncate {
        file_index: usize,
        len: usize,
    },
    Foreign {
        id: u64,
        bytes: Vec<u8>,
    },
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        (
            0usize..4,
            0usize..4096,
            prop::collection::vec(any::<u8>(), 1..32)
        )
            .prop_map(|(file_index, offset, bytes)| Damage::Overwrite {
                file_index,
                offset,
                bytes
            }),
        (0usize..4, 0usize..4096)
            .prop_map(|(file_index, len)| Damage::Truncate { file_index, len }),
        (0u64..8, prop::collection::vec(any::<u8>(), 0..300))
            .prop_map(|(id, bytes)| Damage::Foreign { id, bytes }),
    ]
}

fn apply(image: &SimStorage, damage: &Damage) {
    let mut paths = image.paths();
    paths.sort();
    match damage {
        Damage::Overwrite {
            file_index,
            offset,
            bytes,
        } => {
            if let Some(path) = paths.get(file_index % paths.len().max(1)) {
                image.overwrite(path, *offset as u64, bytes);
            }
        }
        Damage::Truncate { file_index, len } => {
            if let Some(path) = paths.get(file_index % paths.len().max(1)) {
                let mut bytes = image.file_bytes(path).expect("bytes");
                bytes.truncate(*len);
                let file = image.create(path).expect("recreate");
                file.write_at(0, &bytes).expect("write");
                file.sync_data().expect("sync");
            }
        }
        Damage::Foreign { id, bytes } => {
            let path = Path::new(DIR).join(format!("{id:020}.wal"));
            let file = image.create(&path).expect("create");
            file.write_at(0, bytes).expect("write");
            file.sync_data().expect("sync");
        }
    }
    image.sync_dir(Path::new(DIR)).expect("sync dir");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn recovery_never_panics_on_damaged_directories(records in 0usize..25, damages in prop::collection::vec(damage(), 1..4)) {
        let image = base_image(records);
        for d in &damages {
            apply(&image, d);
        }
        for read_only in [true, false] {
            match Wal::open_with_storage(Arc::new(image.crash(CrashMode::DropUnsynced)), DIR, options(read_only)) {
                Ok((wal, report)) => {
                    let shown: Result<Vec<_>, Error> = wal.iter_from(Lsn(1)).and_then(|iter| iter.collect());
                    if let Ok(records) = shown {
                        prop_assert!(records.len() as u64 <= report.records_count);
                        for record in &records {
                            let payload_index = record.payload.first().copied().unwrap_or(0) as usize;
                            prop_assert!(record.payload.iter().all(|&b| b as usize == payload_index));
                        }
                    }
                    if !read_only {
                        // A writable log accepts appends after whatever recovery decided.
                        let _ = wal.append(RecordKind::new(1).expect("kind"), b"after");
                    }
                }
                Err(Error::Corrupt { .. }) | Err(Error::Io { .. }) => {}
                Err(other) => prop_assert!(false, "unexpected error {other}"),
            }
        }
    }
}
