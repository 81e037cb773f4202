//! Replays the fuzz corpora as a plain `cargo test` on stable, without cargo-fuzz: every file of
//! `fuzz/corpus/<target>/` (the committed seeds) and `fuzz/regressions/<target>/` (every crash
//! the fuzzers ever found, minimized) goes through the same entry function the fuzz target
//! calls, `statelog_wal::fuzzing::{record_decode, segment_recover}`, which panics on any oracle
//! failure.
//!
//! `cargo test --test statelog -- --ignored wal_fuzz_corpus::write_seed_corpus` regenerates the seed
//! corpus from real logs written by the WAL on the simulated disk.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use statelog_wal::fuzzing::{self, IMAGE_DIR, IMAGE_FLAG_REPAIR};
use statelog_wal::storage::sim::{CrashMode, SimStorage};
use statelog_wal::{Durability, RecordKind, Storage, Wal, WalOptions};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

/// Calls `entry` on every file of `fuzz/<kind>/<target>/`; returns how many it replayed.
fn replay(kind: &str, target: &str, entry: fn(&[u8])) -> usize {
    let dir = fuzz_dir().join(kind).join(target);
    let Ok(listing) = std::fs::read_dir(&dir) else {
        return 0;
    };
    let mut paths: Vec<PathBuf> = listing
        .map(|e| e.expect("list a corpus directory").path())
        .filter(|p| {
            p.is_file()
                && !p
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with('.'))
        })
        .collect();
    paths.sort();
    for path in &paths {
        let bytes = std::fs::read(path).expect("read a corpus file");
        let outcome = std::panic::catch_unwind(|| entry(&bytes));
        assert!(
            outcome.is_ok(),
            "fuzz oracle failed on {} (replay: cargo fuzz run {target} {})",
            path.display(),
            path.display()
        );
    }
    paths.len()
}

#[test]
fn record_decode_corpus_and_regressions_replay_clean() {
    let seeds = replay("corpus", "record_decode", fuzzing::record_decode);
    let regressions = replay("regressions", "record_decode", fuzzing::record_decode);
    println!("record_decode: {seeds} seeds, {regressions} regressions replayed");
    assert!(seeds > 0, "the record_decode seed corpus is missing");
}

#[test]
fn segment_recover_corpus_and_regressions_replay_clean() {
    let seeds = replay("corpus", "segment_recover", fuzzing::segment_recover);
    let regressions = replay("regressions", "segment_recover", fuzzing::segment_recover);
    println!("segment_recover: {seeds} seeds, {regressions} regressions replayed");
    assert!(seeds > 0, "the segment_recover seed corpus is missing");
}

/// The oracles are not vacuous: a frame with a flipped payload bit is not decoded, and a
/// well-formed stream decodes (the entry would panic if it decoded a bad checksum).
#[test]
fn record_decode_oracle_sees_real_frames() {
    let stream = fuzzing::record_stream(1, &[(1, 1, b"hello"), (2, 0x81, b"")]);
    fuzzing::record_decode(&stream);
    let mut damaged = stream.clone();
    let last = damaged.len() - 17; // inside the first payload
    damaged[last] ^= 0x04;
    fuzzing::record_decode(&damaged);
}

fn write_seed(target: &str, name: &str, bytes: &[u8]) {
    let dir = fuzz_dir().join("corpus").join(target);
    std::fs::create_dir_all(&dir).expect("create the corpus directory");
    std::fs::write(dir.join(name), bytes).expect("write a seed");
}

/// A real log on the simulated disk: `records_count` records of growing sizes in segments of
/// 4 KiB, synced; then the image a crash with `mode` would leave.
fn real_log_image(
    records_count: usize,
    durability: Durability,
    mode: impl Fn(&SimStorage) -> CrashMode,
    flags: u8,
) -> Vec<u8> {
    let storage = SimStorage::new();
    let options = WalOptions {
        segment_size_bytes: 4096,
        durability,
        segments_ready_count: 1,
        background_preparation: false,
        ..WalOptions::default()
    };
    let shared: Arc<dyn Storage> = Arc::new(storage.clone());
    let (wal, _report) =
        Wal::open_with_storage(shared, IMAGE_DIR, options).expect("open a log on the sim");
    let kind = RecordKind::new(1).expect("kind 1 is a caller kind");
    for i in 0..records_count {
        let payload = vec![u8::try_from(i % 251).expect("below 251"); (i * 37) % 700];
        wal.append(kind, &payload).expect("append on the sim");
    }
    drop(wal);
    let crashed = storage.crash(mode(&storage));
    fuzzing::storage_to_image(&crashed, Path::new(IMAGE_DIR), flags)
}

#[test]
#[ignore = "regenerates the committed seed corpus; run by hand"]
fn write_seed_corpus() {
    let payload_4k = vec![0xA5u8; 4096];
    write_seed(
        "record_decode",
        "one-record",
        &fuzzing::record_stream(1, &[(1, 1, b"statelog")]),
    );
    write_seed(
        "record_decode",
        "empty-payload-batch-end",
        &fuzzing::record_stream(2, &[(7, 0x80, b"")]),
    );
    write_seed(
        "record_decode",
        "three-records",
        &fuzzing::record_stream(
            3,
            &[
                (10, 0, b"a"),
                (11, 5, &[0u8; 100]),
                (12, 0x85, b"end of batch"),
            ],
        ),
    );
    write_seed(
        "record_decode",
        "page-sized",
        &fuzzing::record_stream(1, &[(1, 119, &payload_4k)]),
    );
    write_seed(
        "record_decode",
        "log-internal-kinds",
        &fuzzing::record_stream(1, &[(1, 125, b""), (2, 126, &[0u8; 17]), (3, 0xff, b"")]),
    );
    write_seed("segment_recover", "empty-dir", &[0]);
    // A preallocated, never used segment 1 of 4 KiB: name 1, length 0x1000, zeros.
    let mut zeroed = vec![0u8, 1, 0x00, 0x10];
    zeroed.resize(4 + 4096, 0);
    write_seed("segment_recover", "zeroed-segment", &zeroed);
    write_seed(
        "segment_recover",
        "real-log-clean",
        &real_log_image(20, Durability::PerCommit, |_| CrashMode::DropUnsynced, 0),
    );
    write_seed(
        "segment_recover",
        "real-log-rotated",
        &real_log_image(60, Durability::PerCommit, |_| CrashMode::DropUnsynced, 0),
    );
    write_seed(
        "segment_recover",
        "real-log-repair-mode",
        &real_log_image(
            30,
            Durability::PerCommit,
            |_| CrashMode::DropUnsynced,
            IMAGE_FLAG_REPAIR,
        ),
    );
    // Nothing synced: the crash keeps half of the written bytes, the last write torn.
    write_seed(
        "segment_recover",
        "real-log-torn-tail",
        &real_log_image(
            25,
            Durability::NoSync,
            |s| CrashMode::TornTail {
                cut_bytes: s.pending_bytes() / 2,
            },
            0,
        ),
    );
}

/// The image format carries a real log faithfully: the clean seed reopens with all its records,
/// so the fuzzer starts from logs that recover, not from noise.
#[test]
fn clean_seed_image_recovers_every_record() {
    let path = fuzz_dir()
        .join("corpus")
        .join("segment_recover")
        .join("real-log-clean");
    let bytes = std::fs::read(&path).expect("the committed clean seed");
    let (storage, options) = fuzzing::image_to_storage(&bytes);
    let shared: Arc<dyn Storage> = Arc::new(storage);
    let (wal, report) =
        Wal::open_with_storage(shared, IMAGE_DIR, options).expect("the clean seed opens");
    assert_eq!(report.records_count, 20, "{report:?}");
    let records: Vec<_> = wal
        .iter_from(statelog_wal::Lsn(1))
        .expect("iterate the recovered log")
        .collect::<Result<_, _>>()
        .expect("read every record");
    assert_eq!(records.len(), 20);
    assert_eq!(records[19].payload.len(), (19 * 37) % 700);
}
