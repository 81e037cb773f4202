//! The end of the log on the simulated disk (issue 13, item 2): a torn write and a flipped bit
//! in the last acknowledged record must never look alike.
//!
//! - A torn tail after a crash (the unsynced write cut at every byte) is truncated at the last
//!   complete batch and reported in `RecoveryReport::torn_tail`, with the bytes it dropped.
//! - A bit flipped anywhere in the last acknowledged batch, after a clean close or after a crash
//!   that tore or dropped later unsynced writes, makes open refuse the log with
//!   `Error::Corrupt` naming the segment and the damaged record's offset. Every syncing write
//!   ends with a sync mark, so an acknowledged record is never the last valid frame on disk.
//! - A bit flipped in that final sync mark loses no record: it is a reported torn tail.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::*;
use statelog_wal::record::decode_frame;
use statelog_wal::storage::sim::{CrashMode, SimStorage};
use statelog_wal::{Durability, Error, SegmentId, Wal, WalOptions};

/// Bytes of a segment header (`docs/wal-format.md`).
const SEGMENT_HEADER_SIZE_BYTES: usize = 64;
/// The kind value of the log's sync mark (`docs/wal-format.md`).
const SYNC_MARK_KIND: u8 = 124;

/// One valid frame found by walking a segment image.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: u64,
    end: u64,
    batch_end: bool,
    sync_mark: bool,
    /// The id the test harness put in a caller record's payload.
    id: Option<u64>,
}

/// The newest used segment of an image: the highest id whose header is not zeros.
fn newest_segment(image: &SimStorage) -> Option<(PathBuf, SegmentId)> {
    image
        .paths()
        .into_iter()
        .filter_map(|path| {
            let name = path.file_name()?.to_str()?;
            let id: u64 = name.strip_suffix(".wal")?.parse().ok()?;
            let bytes = image.file_bytes(&path)?;
            let used = bytes.len() >= SEGMENT_HEADER_SIZE_BYTES
                && bytes[..SEGMENT_HEADER_SIZE_BYTES].iter().any(|&b| b != 0);
            used.then_some((path, SegmentId(id)))
        })
        .max_by_key(|(_, id)| *id)
}

/// The valid frames of a segment image, in order, from its first record on.
fn frames(bytes: &[u8], segment_id: SegmentId) -> Vec<Span> {
    let mut spans = Vec::new();
    let mut offset = SEGMENT_HEADER_SIZE_BYTES;
    while let Ok(frame) = decode_frame(bytes, offset, segment_id, None) {
        spans.push(Span {
            start: offset as u64,
            end: (offset + frame.size_bytes) as u64,
            batch_end: frame.is_batch_end(),
            sync_mark: frame.kind_value() == SYNC_MARK_KIND,
            id: (frame.kind_value() != SYNC_MARK_KIND)
                .then(|| id_of(frame.payload))
                .flatten(),
        });
        offset += frame.size_bytes;
    }
    spans
}

fn open(
    image: &SimStorage,
    options: &WalOptions,
) -> Result<(Wal, statelog_wal::RecoveryReport), Error> {
    Wal::open_with_storage(Arc::new(image.clone()), DIR, options.clone())
}

/// (a) The unsynced write is cut at every byte: recovery keeps the complete batches, and when
/// any byte past them reached the disk it reports a torn tail at the last batch end whose
/// dropped byte count covers every such byte and nothing past the write.
#[test]
fn a_torn_tail_after_a_crash_is_truncated_and_reported_with_its_bytes() {
    let workloads: Vec<(Vec<Op>, Durability)> = vec![
        (
            vec![
                Op::Append { size_bytes: 100 },
                Op::Batch {
                    sizes_bytes: vec![40, 0, 300],
                },
                Op::Append { size_bytes: 0 },
                Op::Append { size_bytes: 700 },
            ],
            Durability::GroupCommit,
        ),
        (
            vec![
                Op::Batch {
                    sizes_bytes: vec![30; 3],
                },
                Op::Append { size_bytes: 7 },
                Op::Sync,
                Op::Batch {
                    sizes_bytes: vec![50; 2],
                },
                Op::Sync,
            ],
            Durability::NoSync,
        ),
    ];
    let (mut reported, mut in_marks, mut images) = (0u64, 0u64, 0u64);
    for (ops, durability) in &workloads {
        let opts = options(64 * 1024, *durability);
        let (clean, _) = run_halted(ops, &opts, None);
        for halt_at in 0..=clean.op_count() {
            let (sim, model) = run_halted(ops, &opts, Some(halt_at));
            let pending = sim.pending_bytes();
            if pending == 0 {
                continue;
            }
            // Where the unsynced stream lands: after the durable frames, in the newest segment
            // (none yet when the process halted while preparing the first one).
            let durable = sim.crash(CrashMode::DropUnsynced);
            let Some((path, segment_id)) = newest_segment(&sim.crash(CrashMode::TornTail {
                cut_bytes: u64::MAX,
            })) else {
                continue;
            };
            // A segment whose header is not durable yet gets it in the same write as its first
            // records: the stream then starts with the header, a span of its own.
            let durable_bytes = durable.file_bytes(&path).unwrap_or_default();
            let header_durable = durable_bytes
                .get(..SEGMENT_HEADER_SIZE_BYTES)
                .is_some_and(|header| header.iter().any(|&b| b != 0));
            let written_from = if header_durable {
                frames(&durable_bytes, segment_id)
                    .last()
                    .map_or(SEGMENT_HEADER_SIZE_BYTES as u64, |span| span.end)
            } else {
                0
            };
            let whole = sim.crash(CrashMode::TornTail {
                cut_bytes: u64::MAX,
            });
            let header_span = Span {
                start: 0,
                end: SEGMENT_HEADER_SIZE_BYTES as u64,
                batch_end: true,
                sync_mark: false,
                id: None,
            };
            let whole_bytes = whole.file_bytes(&path).expect("segment");
            let spans: Vec<Span> = (!header_durable)
                .then_some(header_span)
                .into_iter()
                .chain(frames(&whole_bytes, segment_id))
                .filter(|span| span.start >= written_from)
                .collect();
            for cut in 0..=pending {
                let context = format!("{durability:?} halt_at={halt_at} cut={cut}");
                let image = sim.crash(CrashMode::TornTail { cut_bytes: cut });
                let (wal, report) =
                    open(&image, &opts).unwrap_or_else(|e| panic!("{context}: {e}"));
                check_recovered(&read_all(&wal), &mut model.clone(), &context);
                images += 1;
                // Zeros the write put where zeros already were count as persisted.
                let mut persisted_to = written_from + cut;
                while whole_bytes.get(persisted_to as usize) == Some(&0)
                    && spans.iter().any(|span| span.end > persisted_to)
                {
                    persisted_to += 1;
                }
                // The log ends at the last batch end the cut left whole.
                let kept_to = spans
                    .iter()
                    .filter(|span| span.batch_end && span.end <= persisted_to)
                    .map(|span| span.end)
                    .next_back()
                    .unwrap_or(written_from);
                let Some(torn) = report.torn_tail else {
                    assert_eq!(
                        kept_to, persisted_to,
                        "{context}: bytes past the log's end unreported"
                    );
                    continue;
                };
                assert!(
                    kept_to < persisted_to,
                    "{context}: torn tail reported at a clean end: {torn:?}"
                );
                assert_eq!(torn.segment_id, segment_id, "{context}");
                assert_eq!(torn.offset_bytes, kept_to, "{context}");
                let damaged_end = spans
                    .iter()
                    .map(|span| span.end)
                    .find(|&end| end >= persisted_to)
                    .expect("the cut lies inside the write");
                assert!(
                    kept_to + torn.dropped_bytes >= persisted_to,
                    "{context}: {} bytes dropped do not cover the {} persisted past the end",
                    torn.dropped_bytes,
                    persisted_to - kept_to
                );
                assert!(
                    kept_to + torn.dropped_bytes <= damaged_end,
                    "{context}: {} bytes dropped reach past the damaged frame",
                    torn.dropped_bytes
                );
                let cut_in_mark = spans.iter().any(|span| {
                    span.sync_mark && span.start < persisted_to && persisted_to < span.end
                });
                if cut_in_mark {
                    assert_eq!(torn.records_dropped_count, 0, "{context}");
                    in_marks += 1;
                }
                reported += 1;
            }
        }
    }
    println!("torn tails: {images} images, {reported} reported, {in_marks} cut inside a sync mark");
    assert!(
        reported > 500 && in_marks > 10,
        "{reported} reported, {in_marks} in marks"
    );
}

/// After a torn tail was cut, a short append and a clean close leave a clean log: the torn
/// bytes are never found behind new records (`wal verify` would say exit 0, not 2).
#[test]
fn a_torn_tail_is_gone_after_the_next_clean_close() {
    let ops = vec![
        Op::Append { size_bytes: 300 },
        Op::Append { size_bytes: 900 },
    ];
    let opts = options(64 * 1024, Durability::GroupCommit);
    let (clean, _) = run_halted(&ops, &opts, None);
    let mut checked = 0;
    for halt_at in 0..=clean.op_count() {
        let (sim, model) = run_halted(&ops, &opts, Some(halt_at));
        for cut in 0..=sim.pending_bytes() {
            let image = sim.crash(CrashMode::TornTail { cut_bytes: cut });
            let context = format!("halt_at={halt_at} cut={cut}");
            let Ok((wal, report)) = open(&image, &opts) else {
                panic!("{context}: recovery failed");
            };
            if report.torn_tail.is_none() {
                continue;
            }
            let mut model = model.clone();
            check_recovered(&read_all(&wal), &mut model, &context);
            wal.append(kind_for(99), &99u64.to_le_bytes())
                .expect("append after recovery");
            drop(wal);
            let (wal, report) = open(&image.crash(CrashMode::DropUnsynced), &opts)
                .unwrap_or_else(|e| panic!("{context}: reopen: {e}"));
            assert_eq!(report.torn_tail, None, "{context}: the old tail came back");
            assert_eq!(
                read_all(&wal).last().and_then(|r| id_of(&r.payload)),
                Some(99),
                "{context}"
            );
            checked += 1;
        }
    }
    assert!(checked > 500, "{checked} torn tails checked");
}

/// Every bit of the final batch (its records and its sync mark) of the image is flipped in
/// turn: a flip in a record is `Corrupt` at that record's offset; a flip in the mark is a torn
/// tail that loses no record. Returns the flips checked.
fn flip_every_bit_of_the_last_batch(
    image: &SimStorage,
    opts: &WalOptions,
    acked: &[u64],
    context: &str,
) -> u64 {
    let (path, segment_id) = newest_segment(image).expect("a used segment");
    let spans = frames(&image.file_bytes(&path).expect("segment"), segment_id);
    let last_acked = *acked.last().expect("something acknowledged");
    let record_index = spans
        .iter()
        .rposition(|span| span.id == Some(last_acked))
        .unwrap_or_else(|| {
            panic!("{context}: the last acknowledged record is not in the newest segment")
        });
    // The batch of the last acknowledged record, and the mark that closed its write.
    let batch_start_index = spans[..record_index]
        .iter()
        .rposition(|span| span.batch_end)
        .map_or(0, |index| index + 1);
    let mark_index = spans[record_index..]
        .iter()
        .position(|span| span.sync_mark)
        .map(|index| record_index + index);
    let last_index = mark_index.unwrap_or(record_index);
    let mut flips = 0;
    for span in &spans[batch_start_index..=last_index] {
        for offset in span.start..span.end {
            for bit in 0..8u8 {
                let damaged = image.crash(CrashMode::DropUnsynced);
                assert!(damaged.flip_bit(&path, offset, bit));
                let where_ = format!("{context}: bit {bit} of byte {offset} ({span:?})");
                match open(&damaged, opts) {
                    Err(Error::Corrupt {
                        segment_id: found_segment,
                        offset_bytes,
                        ..
                    }) => {
                        // A damaged mark is corruption only when valid frames follow it.
                        assert!(
                            !span.sync_mark || spans.len() > last_index + 1,
                            "{where_}: a flip in the final mark refused"
                        );
                        assert_eq!(found_segment, segment_id, "{where_}");
                        assert_eq!(offset_bytes, span.start, "{where_}");
                    }
                    Err(other) => panic!("{where_}: unexpected error {other}"),
                    Ok((wal, report)) => {
                        assert!(
                            span.sync_mark,
                            "{where_}: a flipped acknowledged record opened: {report:?}"
                        );
                        let torn = report
                            .torn_tail
                            .unwrap_or_else(|| panic!("{where_}: unreported"));
                        assert_eq!(torn.offset_bytes, span.start, "{where_}");
                        assert_eq!(torn.records_dropped_count, 0, "{where_}");
                        assert!(torn.dropped_bytes > 0, "{where_}");
                        let ids: Vec<u64> = read_all(&wal)
                            .iter()
                            .filter_map(|r| id_of(&r.payload))
                            .collect();
                        for id in acked {
                            assert!(ids.contains(id), "{where_}: acknowledged id {id} lost");
                        }
                    }
                }
                flips += 1;
            }
        }
    }
    assert!(
        mark_index.is_some(),
        "{context}: no sync mark after the last acknowledged record"
    );
    flips
}

/// (b) After a clean close, a flip anywhere in the last acknowledged batch is refused.
#[test]
fn b_a_flip_in_the_last_acknowledged_record_after_a_clean_close_is_corruption() {
    let workloads: Vec<(Vec<Op>, WalOptions)> = vec![
        (
            vec![
                Op::Append { size_bytes: 100 },
                Op::Append { size_bytes: 20 },
            ],
            options(64 * 1024, Durability::GroupCommit),
        ),
        (
            vec![
                Op::Append { size_bytes: 100 },
                Op::Batch {
                    sizes_bytes: vec![10, 0, 30],
                },
            ],
            options(64 * 1024, Durability::PerCommit),
        ),
        (
            // Records written unsynced, then one sync: its write is the mark alone.
            vec![
                Op::Append { size_bytes: 40 },
                Op::Append { size_bytes: 12 },
                Op::Sync,
            ],
            options(64 * 1024, Durability::NoSync),
        ),
        (
            // The last record opens a new segment.
            vec![
                Op::Append { size_bytes: 3000 },
                Op::Append { size_bytes: 2000 },
            ],
            options(4096, Durability::GroupCommit),
        ),
    ];
    let mut flips = 0;
    for (ops, opts) in &workloads {
        let (sim, model) = run_halted(ops, opts, None);
        let acked: Vec<u64> = model.acked.iter().copied().collect();
        let image = sim.crash(CrashMode::DropUnsynced);
        flips += flip_every_bit_of_the_last_batch(
            &image,
            opts,
            &acked,
            &format!("{:?} clean", opts.durability),
        );
    }
    println!("clean close: {flips} flips checked");
    assert!(flips > 1000);
}

/// (c) Acknowledged, then more appends whose unsynced write a crash drops or tears, then a flip
/// anywhere in the last acknowledged batch: refused all the same.
#[test]
fn c_a_flip_in_the_last_acknowledged_record_after_a_crash_is_corruption() {
    let ops = vec![
        Op::Append { size_bytes: 60 },
        Op::Batch {
            sizes_bytes: vec![16, 24],
        },
        Op::Append { size_bytes: 200 },
        Op::Append { size_bytes: 9 },
    ];
    let opts = options(64 * 1024, Durability::GroupCommit);
    let (clean, _) = run_halted(&ops, &opts, None);
    let (mut flips, mut crashes) = (0, 0);
    for halt_at in 0..=clean.op_count() {
        let (sim, model) = run_halted(&ops, &opts, Some(halt_at));
        let acked: Vec<u64> = model.acked.iter().copied().collect();
        let pending = sim.pending_bytes();
        if acked.is_empty() || pending == 0 {
            continue;
        }
        for mode in [
            CrashMode::DropUnsynced,
            CrashMode::TornTail { cut_bytes: 1 },
            CrashMode::TornTail {
                cut_bytes: pending / 2,
            },
            CrashMode::TornTail {
                cut_bytes: pending - 1,
            },
        ] {
            let image = sim.crash(mode);
            flips += flip_every_bit_of_the_last_batch(
                &image,
                &opts,
                &acked,
                &format!("halt_at={halt_at} {mode:?}"),
            );
            crashes += 1;
        }
    }
    println!("after a crash: {flips} flips over {crashes} crash images");
    assert!(crashes >= 8, "{crashes} crash images");
}

/// A segment header as `docs/wal-format.md` lays it out, of any format version.
fn segment_header(format_version: u32, segment_id: u64, first_lsn: u64) -> [u8; 64] {
    let mut bytes = [0u8; 64];
    bytes[..8].copy_from_slice(b"SLWALSEG");
    bytes[8..12].copy_from_slice(&format_version.to_le_bytes());
    bytes[16..24].copy_from_slice(&segment_id.to_le_bytes());
    bytes[24..32].copy_from_slice(&first_lsn.to_le_bytes());
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&bytes[0..12]);
    hasher.update(&bytes[16..64]);
    bytes[12..16].copy_from_slice(&hasher.finalize().to_le_bytes());
    bytes
}

/// Puts one durable segment file of `bytes` into a fresh simulated disk.
fn disk_with_segment(segment_id: u64, bytes: &[u8]) -> (SimStorage, PathBuf) {
    let sim = SimStorage::new();
    let path = Path::new(DIR).join(format!("{segment_id:020}.wal"));
    <SimStorage as statelog_wal::Storage>::create_dir_all(&sim, Path::new(DIR)).expect("dir");
    let file = <SimStorage as statelog_wal::Storage>::create(&sim, &path).expect("create");
    file.write_at(0, bytes).expect("write");
    file.sync_data().expect("sync");
    <SimStorage as statelog_wal::Storage>::sync_dir(&sim, Path::new(DIR)).expect("sync dir");
    (sim, path)
}

/// A segment of a newer format than this build reads is refused by name, never misread.
#[test]
fn a_newer_format_version_is_refused_with_a_typed_error() {
    let mut bytes = vec![0u8; 8192];
    bytes[..64].copy_from_slice(&segment_header(3, 1, 1));
    let (sim, _) = disk_with_segment(1, &bytes);
    let error = open(&sim, &options(8192, Durability::GroupCommit)).expect_err("refused");
    assert!(
        matches!(
            error,
            Error::UnsupportedFormatVersion {
                segment_id: SegmentId(1),
                version: 3,
                supported_min: 1,
                supported_max: 2,
            }
        ),
        "{error:?}"
    );
}

/// The trailer costs one small frame per sync, none per record and none for an idle sync.
#[test]
fn one_sync_mark_per_syncing_write_not_per_record() {
    let (wal, _) = Wal::open_with_storage(
        Arc::new(SimStorage::new()),
        DIR,
        options(64 * 1024, Durability::NoSync),
    )
    .expect("open");
    for id in 0..10u64 {
        wal.append(kind_for(id), &id.to_le_bytes()).expect("append");
    }
    assert_eq!(
        wal.stats().sync_marks_count,
        0,
        "unsynced writes get no mark"
    );
    wal.sync().expect("sync");
    assert_eq!(
        wal.stats().sync_marks_count,
        1,
        "one mark for the sync of ten records"
    );
    wal.sync().expect("idle sync");
    assert_eq!(
        wal.stats().sync_marks_count,
        1,
        "an idle sync writes nothing"
    );
    let batch: Vec<(statelog_wal::RecordKind, &[u8])> =
        (0..5).map(|_| (kind_for(1), &b"batched"[..])).collect();
    wal.append_batch(&batch).expect("batch");
    wal.sync().expect("sync");
    assert_eq!(
        wal.stats().sync_marks_count,
        2,
        "one mark for a batch of five"
    );
}

/// A version-1 log (written before sync marks existed) still opens and reads as before, and the
/// next append goes into a new version-2 segment, so marks never enter a version-1 file.
#[test]
fn version_one_segments_open_read_and_are_never_appended_to() {
    let mut bytes = vec![0u8; 8192];
    bytes[..64].copy_from_slice(&segment_header(1, 1, 1));
    let mut frames_bytes = Vec::new();
    for lsn in 1..=3u64 {
        statelog_wal::record::encode_frame(
            &mut frames_bytes,
            SegmentId(1),
            statelog_wal::Lsn(lsn),
            kind_for(lsn),
            true,
            &lsn.to_le_bytes(),
        )
        .expect("frame");
    }
    bytes[64..64 + frames_bytes.len()].copy_from_slice(&frames_bytes);
    let (sim, path) = disk_with_segment(1, &bytes);
    let opts = options(8192, Durability::GroupCommit);
    {
        let (wal, report) = open(&sim, &opts).expect("a version-1 log opens");
        assert_eq!(report.torn_tail, None);
        let ids: Vec<u64> = read_all(&wal)
            .iter()
            .filter_map(|r| id_of(&r.payload))
            .collect();
        assert_eq!(ids, [1, 2, 3]);
        let lsn = wal
            .append(kind_for(4), &4u64.to_le_bytes())
            .expect("append");
        assert_eq!(lsn, statelog_wal::Lsn(4));
        let segments = wal.segments();
        assert_eq!(segments.len(), 2, "{segments:?}");
        assert_eq!(segments[0].last_lsn, Some(statelog_wal::Lsn(3)));
    }
    let after = sim.crash(CrashMode::DropUnsynced);
    assert_eq!(
        after.file_bytes(&path).expect("segment 1")[..],
        bytes[..],
        "the version-1 segment is unchanged"
    );
    let (wal, _) = open(&after, &opts).expect("reopens");
    let ids: Vec<u64> = read_all(&wal)
        .iter()
        .filter_map(|r| id_of(&r.payload))
        .collect();
    assert_eq!(ids, [1, 2, 3, 4]);
}
