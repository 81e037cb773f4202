//! fuzzing: the entry functions of the cargo-fuzz targets (`fuzz/`), also replayed over the
//! committed corpus by a plain `cargo test` (`tests/statelog/wal_fuzz_corpus.rs`). Built only with the
//! `fuzzing` feature.
//!
//! Each entry takes arbitrary bytes and panics exactly when an oracle fails:
//! - [`record_decode`]: decoding never panics, never yields a frame whose checksum does not
//!   hold, and every decoded frame re-encodes to the exact bytes it came from.
//! - [`segment_recover`]: a directory image (format below) laid out durably on the simulated
//!   disk; opening it returns the recovered records or a corruption error, never panics, and a
//!   second open (after the first may have truncated a torn tail) gives the same answer; a
//!   read-only open agrees with the read-write one; a recovered log takes a new record under a
//!   fresh LSN and reopens as the recovered records plus that one.
//!
//! Directory image format (chosen so byte mutations stay meaningful): byte 0 holds flags
//! (bit 0: repair mode `TruncateAtCorruption`; bits 1..=2: segment size `4096 << n`), then
//! entries until the input ends: `name: u8 | len: u16 le | len bytes` (a short last entry takes
//! what remains). Name bits 0..=5 give a segment id; bit 6 makes it a `.wal.tmp` file and bit 7
//! a stray file the log must ignore. A later entry with the same name replaces the earlier one.
//!
//! This module must not be used by the log itself; it only drives the public API (plus the
//! crate's own frame codec for `record_decode`).

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::limits::{LSN_MAX, RECORD_HEADER_SIZE_BYTES, SEGMENT_SIZE_BYTES_MIN};
use crate::record::{decode, encode_into, segment_seed};
use crate::storage::sim::SimStorage;
use crate::storage::Storage;
use crate::{Durability, Error, RepairMode, SegmentId, Wal, WalOptions};

/// The directory the image is laid out in on the simulated disk.
pub const IMAGE_DIR: &str = "/fuzz/wal";

/// Bit of the flags byte selecting `RepairMode::TruncateAtCorruption`.
pub const IMAGE_FLAG_REPAIR: u8 = 0x01;
/// Bit of a name byte making the entry a `.wal.tmp` file.
pub const IMAGE_NAME_TEMP: u8 = 0x40;
/// Bit of a name byte making the entry a stray file.
pub const IMAGE_NAME_STRAY: u8 = 0x80;
/// Bits of a name byte holding the segment id.
pub const IMAGE_NAME_ID_MASK: u8 = 0x3f;

/// Fuzz entry F1: `data[0]` is the segment id whose CRC seed applies, the rest a stream of
/// frames decoded from offset 0 until the first invalid one.
pub fn record_decode(data: &[u8]) {
    let Some((&segment_byte, bytes)) = data.split_first() else {
        return;
    };
    let seed = segment_seed(SegmentId(u64::from(segment_byte)));
    let mut offset = 0usize;
    let mut expected_lsn = None;
    while let Ok(frame) = decode(bytes, offset, seed, expected_lsn) {
        let end = offset + frame.size_bytes;
        assert!(end <= bytes.len(), "frame ends past its input");
        assert_eq!(
            frame.size_bytes,
            RECORD_HEADER_SIZE_BYTES + frame.payload.len(),
            "frame size disagrees with its payload"
        );
        assert!(
            frame.lsn >= 1 && frame.lsn <= LSN_MAX,
            "lsn {} out of range",
            frame.lsn
        );
        // The checksum, computed here independently of the decoder.
        let stored = u32::from_le_bytes(
            bytes[offset..offset + 4]
                .try_into()
                .expect("a decoded frame has a 4-byte crc"),
        );
        let mut hasher = crc32fast::Hasher::new_with_initial(seed);
        hasher.update(&bytes[offset + 4..end]);
        assert_eq!(
            hasher.finalize(),
            stored,
            "decoded a frame whose checksum fails"
        );
        let mut encoded = Vec::with_capacity(frame.size_bytes);
        encode_into(
            &mut encoded,
            seed,
            frame.lsn,
            frame.kind_byte,
            frame.payload,
        );
        assert_eq!(
            encoded,
            &bytes[offset..end],
            "decode -> encode does not round-trip"
        );
        let Some(next) = frame.lsn.checked_add(1).filter(|&n| n <= LSN_MAX) else {
            break;
        };
        expected_lsn = Some(next);
        offset = end;
    }
}

/// Frames `records` (lsn, kind byte, payload) as they would sit in segment `segment_id`, prefixed
/// by that id's byte: an input of [`record_decode`] (for seed corpora).
pub fn record_stream(segment_id: u8, records: &[(u64, u8, &[u8])]) -> Vec<u8> {
    let seed = segment_seed(SegmentId(u64::from(segment_id)));
    let mut out = vec![segment_id];
    for &(lsn, kind_byte, payload) in records {
        encode_into(&mut out, seed, lsn, kind_byte, payload);
    }
    out
}

/// One record as recovery returned it: (lsn, kind, payload, copied_from).
type Recovered = (u64, u8, Vec<u8>, Option<u64>);

/// What one open of an image gave.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Recovered(Vec<Recovered>),
    Corrupt {
        segment_id: SegmentId,
        offset_bytes: u64,
    },
}

fn open_outcome(storage: &SimStorage, options: &WalOptions) -> Outcome {
    let shared: Arc<dyn Storage> = Arc::new(storage.clone());
    match Wal::open_with_storage(shared, IMAGE_DIR, options.clone()) {
        Ok((wal, _report)) => {
            let mut records: Vec<Recovered> = Vec::new();
            wal.scan_from(crate::Lsn(0), |record| {
                records.push((
                    record.lsn.0,
                    record.kind.get(),
                    record.payload.to_vec(),
                    record.copied_from.map(|l| l.0),
                ));
                ControlFlow::Continue(())
            })
            .unwrap_or_else(|e| panic!("scan of a log that opened failed: {e}"));
            for pair in records.windows(2) {
                assert!(pair[0].0 < pair[1].0, "recovered lsns out of order");
            }
            Outcome::Recovered(records)
        }
        Err(Error::Corrupt {
            segment_id,
            offset_bytes,
            ..
        }) => Outcome::Corrupt {
            segment_id,
            offset_bytes,
        },
        Err(e) => panic!("open of a damaged image failed with a non-corruption error: {e}"),
    }
}

/// Lays a directory image (format in the module docs) out durably on a fresh simulated disk.
/// Returns the disk and the options the image asks for.
pub fn image_to_storage(data: &[u8]) -> (SimStorage, WalOptions) {
    let storage = SimStorage::new();
    let dir = Path::new(IMAGE_DIR);
    storage
        .create_dir_all(dir)
        .expect("the fault-free sim creates directories");
    let flags = data.first().copied().unwrap_or(0);
    let options = WalOptions {
        segment_size_bytes: SEGMENT_SIZE_BYTES_MIN << ((flags >> 1) & 0x3),
        durability: Durability::NoSync,
        repair: if flags & IMAGE_FLAG_REPAIR != 0 {
            RepairMode::TruncateAtCorruption
        } else {
            RepairMode::Refuse
        },
        segments_ready_count: 1,
        background_preparation: false,
        read_only: false,
        lock_wait_ms: 0,
        commit_gather_us_max: 0,
        commit_spin_us_max: 0,
    };
    let mut rest = data.get(1..).unwrap_or(&[]);
    while let Some((&name, after_name)) = rest.split_first() {
        let (len, after_len) = match after_name {
            [low, high, tail @ ..] => (usize::from(u16::from_le_bytes([*low, *high])), tail),
            _ => (after_name.len(), &[][..]),
        };
        let take = len.min(after_len.len());
        let (bytes, tail) = after_len.split_at(take);
        rest = tail;
        let path = dir.join(image_file_name(name));
        let file = storage
            .create(&path)
            .expect("the fault-free sim creates files");
        file.write_at(0, bytes)
            .expect("the fault-free sim writes files");
        file.sync_all().expect("the fault-free sim syncs files");
    }
    storage
        .sync_dir(dir)
        .expect("the fault-free sim syncs directories");
    (storage, options)
}

fn image_file_name(name: u8) -> String {
    let id = u64::from(name & IMAGE_NAME_ID_MASK);
    if name & IMAGE_NAME_STRAY != 0 {
        format!("stray-{id}")
    } else if name & IMAGE_NAME_TEMP != 0 {
        format!("{id:020}.wal.tmp")
    } else {
        format!("{id:020}.wal")
    }
}

/// Serializes the files of `dir` on `storage` into a directory image with the given flags (for
/// seed corpora: a real log written by the WAL, then mutated by the fuzzer). Files whose names
/// the format cannot express, or larger than `u16::MAX` bytes, are cut to fit.
pub fn storage_to_image(storage: &SimStorage, dir: &Path, flags: u8) -> Vec<u8> {
    let mut out = vec![flags];
    let mut paths: Vec<PathBuf> = storage
        .paths()
        .into_iter()
        .filter(|p| p.parent() == Some(dir))
        .collect();
    paths.sort();
    for path in paths {
        let Some(file_name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let (digits, temp) = if let Some(d) = file_name.strip_suffix(".wal.tmp") {
            (d, true)
        } else if let Some(d) = file_name.strip_suffix(".wal") {
            (d, false)
        } else {
            continue;
        };
        let Ok(id) = digits.parse::<u8>() else {
            continue;
        };
        let name = (id & IMAGE_NAME_ID_MASK) | if temp { IMAGE_NAME_TEMP } else { 0 };
        let bytes = storage.file_bytes(&path).unwrap_or_default();
        let len = bytes.len().min(usize::from(u16::MAX));
        out.push(name);
        out.extend_from_slice(
            &u16::try_from(len)
                .expect("len capped at u16::MAX")
                .to_le_bytes(),
        );
        out.extend_from_slice(&bytes[..len]);
    }
    out
}

/// Fuzz entry F2: opens a directory image three times (read-only, then read-write twice) and
/// checks that every open gives a prefix of records or a corruption error, and all agree.
pub fn segment_recover(data: &[u8]) {
    let (storage, options) = image_to_storage(data);
    let read_only = WalOptions {
        read_only: true,
        ..options.clone()
    };
    let looked = open_outcome(&storage, &read_only);
    let first = open_outcome(&storage, &options);
    let second = open_outcome(&storage, &options);
    assert_eq!(first, second, "recovering twice gave different results");
    if options.repair == RepairMode::Refuse {
        assert_eq!(looked, first, "a read-only open disagrees with recovery");
    } else if let Outcome::Recovered(records) = &looked {
        // Repair only ever drops records: what a read-only open sees without damage is what
        // recovery keeps.
        assert_eq!(
            Outcome::Recovered(records.clone()),
            first,
            "repair changed a log the read-only open found whole"
        );
    }
    if let Outcome::Recovered(records) = second {
        append_after_recovery(&storage, &options, records);
    }
}

/// A recovered log takes a new record under a fresh LSN (never one it already holds), and a
/// reopen shows exactly the recovered records plus that one.
fn append_after_recovery(storage: &SimStorage, options: &WalOptions, mut records: Vec<Recovered>) {
    let shared: Arc<dyn Storage> = Arc::new(storage.clone());
    let (wal, _report) = Wal::open_with_storage(shared, IMAGE_DIR, options.clone())
        .unwrap_or_else(|e| panic!("a log that recovered twice failed to open a third time: {e}"));
    let kind = crate::RecordKind::new(7).expect("7 is a caller kind");
    let payload = b"appended after recovery";
    let lsn = wal
        .append(kind, payload)
        .unwrap_or_else(|e| panic!("append after recovery failed: {e}"));
    if let Some(last) = records.last() {
        assert!(
            lsn.0 > last.0,
            "append after recovery reused lsn {} (the log holds up to {})",
            lsn.0,
            last.0
        );
    }
    drop(wal);
    records.push((lsn.0, 7, payload.to_vec(), None));
    assert_eq!(
        open_outcome(storage, options),
        Outcome::Recovered(records),
        "the reopened log is not the recovered records plus the appended one"
    );
}
