//! record: framing of one record (header + payload), encode and decode.
//!
//! Layout (little-endian, 16 bytes of framing):
//! `crc32: u32 | payload_len: u32 | lsn_and_kind: u64 | payload`, where `lsn_and_kind` holds the
//! LSN in its low 56 bits and the kind byte in its top 8 bits (bit 7 of the kind byte marks the
//! last record of a batch). The CRC is crc32 (crc32fast) seeded with the segment's identity and
//! covering bytes 4..16 of the header and the payload, so bytes written under another segment id
//! (recycled or preallocated files) never validate.
//!
//! Invariants: `decode` never reads past the slice it is given, never allocates, and returns a
//! frame only when its CRC, length and expected LSN all agree. This module does no I/O.

use crate::limits::{
    FRAME_PAYLOAD_SIZE_BYTES_MAX, LSN_MAX, RECORD_HEADER_SIZE_BYTES, SYNC_MARK_PAYLOAD_SIZE_BYTES,
};
use crate::{Lsn, RecordKind, SegmentId};

/// Bit of the kind byte marking the last record of an atomic batch.
pub(crate) const FLAG_BATCH_END: u8 = 0x80;
/// Mask of the kind value inside the kind byte.
pub(crate) const KIND_MASK: u8 = 0x7f;
/// Internal kind: the sync mark that ends every syncing write. It carries the LSN of the record
/// before it (it takes no LSN of its own) and, as payload, the durable LSN before that write. An
/// acknowledged record is therefore always followed on disk by a valid frame, so recovery can
/// tell damage to it (corruption) from a torn write (which only reaches unsynced bytes).
pub(crate) const KIND_SYNC_MARK: u8 = 124;
/// Internal kind: start of a compaction; its LSN names the compaction.
pub(crate) const KIND_COMPACT_BEGIN: u8 = 125;
/// Internal kind: a live record copied forward by compaction.
pub(crate) const KIND_COPY: u8 = 126;
/// Internal kind: a compaction's copies are complete and durable.
pub(crate) const KIND_COMPACT_COMMIT: u8 = 127;
/// Bytes of the copy prefix: original LSN, compaction begin LSN, original kind.
pub(crate) use crate::limits::COPY_PREFIX_SIZE_BYTES;

/// The CRC seed of a segment: a CRC of a domain tag and the segment id.
pub(crate) fn segment_seed(segment_id: SegmentId) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(b"statelog-wal/segment");
    hasher.update(&segment_id.0.to_le_bytes());
    hasher.finalize()
}

/// Size of a framed record carrying `payload_len` bytes.
pub(crate) const fn framed_size(payload_len: usize) -> usize {
    RECORD_HEADER_SIZE_BYTES + payload_len
}

/// Appends one framed record to `out`. The caller has checked the payload size and LSN range.
pub(crate) fn encode_into(out: &mut Vec<u8>, seed: u32, lsn: u64, kind_byte: u8, payload: &[u8]) {
    assert!(
        payload.len() <= FRAME_PAYLOAD_SIZE_BYTES_MAX,
        "payload size checked by caller"
    );
    assert!(lsn >= 1, "lsn 0 is never assigned");
    assert!(lsn <= LSN_MAX, "lsn range checked by caller");
    let start = out.len();
    let len_u32 = u32::try_from(payload.len())
        .expect("payload length below FRAME_PAYLOAD_SIZE_BYTES_MAX fits u32");
    let lsn_and_kind = lsn | (u64::from(kind_byte) << 56);
    out.extend_from_slice(&[0u8; 4]);
    out.extend_from_slice(&len_u32.to_le_bytes());
    out.extend_from_slice(&lsn_and_kind.to_le_bytes());
    out.extend_from_slice(payload);
    let mut hasher = crc32fast::Hasher::new_with_initial(seed);
    hasher.update(&out[start + 4..]);
    let crc = hasher.finalize();
    out[start..start + 4].copy_from_slice(&crc.to_le_bytes());
    debug_assert_eq!(out.len() - start, framed_size(payload.len()));
}

/// One validated frame inside a segment image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The record's LSN.
    pub lsn: u64,
    /// The kind byte (kind value and flags).
    pub kind_byte: u8,
    /// The payload.
    pub payload: &'a [u8],
    /// Framed size (header + payload).
    pub size_bytes: usize,
}

impl Frame<'_> {
    /// Whether this record ends an atomic batch.
    pub fn is_batch_end(&self) -> bool {
        self.kind_byte & FLAG_BATCH_END != 0
    }
    /// The kind value without flags.
    pub fn kind_value(&self) -> u8 {
        self.kind_byte & KIND_MASK
    }
    /// Whether this is the log's sync mark (it repeats the LSN of the record before it).
    pub fn is_sync_mark(&self) -> bool {
        self.kind_value() == KIND_SYNC_MARK
    }
}

/// Why bytes at an offset are not a valid frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Invalid {
    /// Fewer than 16 bytes remain.
    ShortHeader,
    /// The header is all zero (unwritten, preallocated space).
    Zeroed,
    /// The length field exceeds the limit or the remaining bytes.
    BadLength {
        /// The length field.
        len: u32,
    },
    /// The LSN field is not the expected next LSN (or is 0).
    BadLsn {
        /// The LSN field.
        found: u64,
    },
    /// The checksum does not match.
    BadCrc {
        /// The stored CRC.
        expected: u32,
        /// The CRC computed over the bytes.
        actual: u32,
    },
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Invalid::ShortHeader => write!(f, "truncated record header"),
            Invalid::Zeroed => write!(f, "zeroed record header"),
            Invalid::BadLength { len } => write!(f, "record length {len} out of bounds"),
            Invalid::BadLsn { found } => write!(f, "unexpected lsn {found}"),
            Invalid::BadCrc { expected, actual } => {
                write!(
                    f,
                    "checksum mismatch: stored {expected:#010x}, computed {actual:#010x}"
                )
            }
        }
    }
}

/// Reads the header fields at `bytes[offset..]` without checking the CRC: (len, lsn, kind byte).
pub(crate) fn peek_header(bytes: &[u8], offset: usize) -> Option<(u32, u64, u8)> {
    let header = bytes.get(offset..offset.checked_add(RECORD_HEADER_SIZE_BYTES)?)?;
    let len = u32::from_le_bytes(header[4..8].try_into().ok()?);
    let word = u64::from_le_bytes(header[8..16].try_into().ok()?);
    Some((len, word & LSN_MAX, (word >> 56) as u8))
}

/// Steps over the frame at `bytes[offset..]` as the next frame of a walk, by its header alone
/// (no checksum): the record `expected`, or, when `mark_allowed`, a sync mark closing record
/// `expected - 1`. Returns the framed size and whether it is a sync mark, or `None` when the
/// header is not that (a zeroed or short header, a length out of bounds, another LSN or kind):
/// the caller then decodes the frame in full to learn why. For a walk to a later record, whose
/// own checksum and LSN are checked in full: a damaged length sends the walk to a place where
/// the expected LSN is (all but certainly) not found.
pub(crate) fn step_over(
    bytes: &[u8],
    offset: usize,
    expected: u64,
    mark_allowed: bool,
) -> Option<(usize, bool)> {
    let (len, lsn, kind_byte) = peek_header(bytes, offset)?;
    let len_usize = len as usize;
    let remaining = bytes.len() - offset - RECORD_HEADER_SIZE_BYTES;
    if len_usize > FRAME_PAYLOAD_SIZE_BYTES_MAX || len_usize > remaining || lsn == 0 {
        return None;
    }
    let is_mark = kind_byte & KIND_MASK == KIND_SYNC_MARK;
    if is_mark {
        let closes_previous = mark_allowed
            && lsn + 1 == expected
            && kind_byte & FLAG_BATCH_END != 0
            && len_usize == SYNC_MARK_PAYLOAD_SIZE_BYTES;
        return closes_previous.then_some((framed_size(len_usize), true));
    }
    (lsn == expected).then_some((framed_size(len_usize), false))
}

/// Decodes and validates the frame at `bytes[offset..]`. `expected_lsn` of `None` accepts any
/// LSN (used when hunting for valid data after damage).
pub(crate) fn decode(
    bytes: &[u8],
    offset: usize,
    seed: u32,
    expected_lsn: Option<u64>,
) -> Result<Frame<'_>, Invalid> {
    let Some(header) = bytes.get(offset..offset.saturating_add(RECORD_HEADER_SIZE_BYTES)) else {
        return Err(Invalid::ShortHeader);
    };
    if header.len() < RECORD_HEADER_SIZE_BYTES {
        return Err(Invalid::ShortHeader);
    }
    if header.iter().all(|&b| b == 0) {
        return Err(Invalid::Zeroed);
    }
    let stored_crc = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
    let len = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
    let word = u64::from_le_bytes([
        header[8], header[9], header[10], header[11], header[12], header[13], header[14],
        header[15],
    ]);
    let lsn = word & LSN_MAX;
    let kind_byte = (word >> 56) as u8;
    let len_usize = len as usize;
    let remaining = bytes.len() - offset - RECORD_HEADER_SIZE_BYTES;
    if len_usize > FRAME_PAYLOAD_SIZE_BYTES_MAX || len_usize > remaining {
        return Err(Invalid::BadLength { len });
    }
    match expected_lsn {
        Some(expected) if lsn != expected => return Err(Invalid::BadLsn { found: lsn }),
        None if lsn == 0 => return Err(Invalid::BadLsn { found: lsn }),
        _ => {}
    }
    let body_start = offset + RECORD_HEADER_SIZE_BYTES;
    let body = &bytes[body_start..body_start + len_usize];
    // The covered bytes (header after the CRC, then the payload) are contiguous: one pass.
    let mut hasher = crc32fast::Hasher::new_with_initial(seed);
    hasher.update(&bytes[offset + 4..body_start + len_usize]);
    let actual = hasher.finalize();
    if actual != stored_crc {
        return Err(Invalid::BadCrc {
            expected: stored_crc,
            actual,
        });
    }
    let frame = Frame {
        lsn,
        kind_byte,
        payload: body,
        size_bytes: framed_size(len_usize),
    };
    debug_assert!(frame.size_bytes <= bytes.len() - offset);
    Ok(frame)
}

/// Decodes the frame at `bytes[offset..]` as the next frame of a walk through a segment: the
/// record `expected`, or, when `mark_allowed` (a record of this segment precedes it), a sync mark
/// closing record `expected - 1`. The LSN and kind are peeked first, so any other frame fails
/// exactly as `decode(.., Some(expected))` would.
pub(crate) fn decode_next(
    bytes: &[u8],
    offset: usize,
    seed: u32,
    expected: u64,
    mark_allowed: bool,
) -> Result<Frame<'_>, Invalid> {
    let closes_previous = match peek_header(bytes, offset) {
        Some((_, lsn, kind_byte)) => {
            mark_allowed && kind_byte & KIND_MASK == KIND_SYNC_MARK && lsn + 1 == expected
        }
        None => false,
    };
    if !closes_previous {
        return decode(bytes, offset, seed, Some(expected));
    }
    let frame = decode(bytes, offset, seed, Some(expected - 1))?;
    debug_assert!(frame.is_sync_mark());
    // The writer makes every mark its own batch with an 8-byte payload; anything else with a
    // valid checksum is not a frame this log wrote here.
    if !frame.is_batch_end() || frame.payload.len() != SYNC_MARK_PAYLOAD_SIZE_BYTES {
        return Err(Invalid::BadLsn { found: frame.lsn });
    }
    Ok(frame)
}

/// The payload of a sync mark: the durable LSN before the write it ends.
pub(crate) fn encode_sync_mark_payload(durable_lsn: u64) -> [u8; SYNC_MARK_PAYLOAD_SIZE_BYTES] {
    durable_lsn.to_le_bytes()
}

/// Decodes and validates the frame at `bytes[offset_bytes..]` of segment `segment_id`, as recovery
/// does (for tools and fuzz targets). `expected_lsn` of `None` accepts any non-zero LSN. Never
/// panics, never allocates, and returns a frame only when its CRC, length and LSN agree.
pub fn decode_frame(
    bytes: &[u8],
    offset_bytes: usize,
    segment_id: SegmentId,
    expected_lsn: Option<Lsn>,
) -> Result<Frame<'_>, Invalid> {
    if offset_bytes > bytes.len() {
        return Err(Invalid::ShortHeader);
    }
    decode(
        bytes,
        offset_bytes,
        segment_seed(segment_id),
        expected_lsn.map(|lsn| lsn.0),
    )
}

/// Appends one framed record for segment `segment_id` to `out` (for tools and fuzz targets).
pub fn encode_frame(
    out: &mut Vec<u8>,
    segment_id: SegmentId,
    lsn: Lsn,
    kind: RecordKind,
    batch_end: bool,
    payload: &[u8],
) -> crate::Result<()> {
    if payload.len() > FRAME_PAYLOAD_SIZE_BYTES_MAX {
        return Err(crate::Error::RecordTooLarge {
            size_bytes: payload.len(),
            limit_bytes: FRAME_PAYLOAD_SIZE_BYTES_MAX,
        });
    }
    if lsn.0 == 0 || lsn.0 > LSN_MAX {
        return Err(crate::Error::LsnExhausted { lsn });
    }
    let flags = if batch_end { FLAG_BATCH_END } else { 0 };
    encode_into(
        out,
        segment_seed(segment_id),
        lsn.0,
        kind.get() | flags,
        payload,
    );
    Ok(())
}

/// Appends the payload of a copy record to `out`: original LSN, compaction begin LSN, original kind,
/// then the original payload.
pub(crate) fn encode_copy_payload(
    out: &mut Vec<u8>,
    original_lsn: u64,
    begin_lsn: u64,
    kind: u8,
    payload: &[u8],
) {
    out.extend_from_slice(&original_lsn.to_le_bytes());
    out.extend_from_slice(&begin_lsn.to_le_bytes());
    out.push(kind);
    out.extend_from_slice(payload);
}

/// The parts of a copy record's payload: (original LSN, begin LSN, original kind, payload).
pub(crate) fn decode_copy_payload(payload: &[u8]) -> Option<(u64, u64, u8, &[u8])> {
    if payload.len() < COPY_PREFIX_SIZE_BYTES {
        return None;
    }
    let original = u64::from_le_bytes(payload[0..8].try_into().ok()?);
    let begin = u64::from_le_bytes(payload[8..16].try_into().ok()?);
    Some((
        original,
        begin,
        payload[16],
        &payload[COPY_PREFIX_SIZE_BYTES..],
    ))
}

/// A record as callers see it: copies carry the kind and payload of their original.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// The record's LSN (for a compacted record, its new LSN).
    pub lsn: Lsn,
    /// The caller's kind.
    pub kind: RecordKind,
    /// The caller's payload.
    pub payload: &'a [u8],
    /// For a record copied forward by compaction, the LSN it had before.
    pub copied_from: Option<Lsn>,
}

impl Record<'_> {
    /// An owned copy of this record.
    pub fn to_owned_record(&self) -> OwnedRecord {
        OwnedRecord {
            lsn: self.lsn,
            kind: self.kind,
            payload: self.payload.to_vec(),
            copied_from: self.copied_from,
        }
    }
}

/// A record with its own payload buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedRecord {
    /// The record's LSN.
    pub lsn: Lsn,
    /// The caller's kind.
    pub kind: RecordKind,
    /// The caller's payload.
    pub payload: Vec<u8>,
    /// For a record copied forward by compaction, the LSN it had before.
    pub copied_from: Option<Lsn>,
}

impl OwnedRecord {
    /// A borrowed view of this record.
    pub fn as_record(&self) -> Record<'_> {
        Record {
            lsn: self.lsn,
            kind: self.kind,
            payload: &self.payload,
            copied_from: self.copied_from,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(seed: u32, lsn: u64, kind: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_into(&mut out, seed, lsn, kind, payload);
        out
    }

    #[test]
    fn round_trip_sizes() {
        let seed = segment_seed(SegmentId(3));
        for size in [0usize, 1, 100, 4095, 4096, 4097, 65_536] {
            let payload: Vec<u8> = (0..size).map(|i| (i * 7) as u8).collect();
            let bytes = one(seed, 42, 5 | FLAG_BATCH_END, &payload);
            assert_eq!(bytes.len(), 16 + size);
            let frame = decode(&bytes, 0, seed, Some(42)).expect("valid frame");
            assert_eq!(frame.lsn, 42);
            assert_eq!(frame.kind_value(), 5);
            assert!(frame.is_batch_end());
            assert_eq!(frame.payload, &payload[..]);
        }
    }

    #[test]
    fn other_segment_seed_rejects() {
        let bytes = one(segment_seed(SegmentId(1)), 7, 1, b"hello");
        let err = decode(&bytes, 0, segment_seed(SegmentId(2)), Some(7)).expect_err("stale frame");
        assert!(matches!(err, Invalid::BadCrc { .. }));
    }

    #[test]
    fn wrong_lsn_rejects() {
        let seed = segment_seed(SegmentId(1));
        let bytes = one(seed, 7, 1, b"hello");
        assert_eq!(
            decode(&bytes, 0, seed, Some(8)),
            Err(Invalid::BadLsn { found: 7 })
        );
    }

    #[test]
    fn zeroed_and_short_reject() {
        let seed = segment_seed(SegmentId(1));
        assert_eq!(decode(&[0u8; 40], 0, seed, Some(1)), Err(Invalid::Zeroed));
        assert_eq!(
            decode(&[1u8; 10], 0, seed, Some(1)),
            Err(Invalid::ShortHeader)
        );
    }

    #[test]
    fn every_bit_flip_detected() {
        let seed = segment_seed(SegmentId(9));
        let bytes = one(seed, 1000, 3, b"the quick brown fox");
        for bit in 0..bytes.len() * 8 {
            let mut damaged = bytes.clone();
            damaged[bit / 8] ^= 1 << (bit % 8);
            assert!(
                decode(&damaged, 0, seed, Some(1000)).is_err(),
                "bit {bit} undetected"
            );
        }
    }

    #[test]
    fn truncated_payload_rejects() {
        let seed = segment_seed(SegmentId(1));
        let bytes = one(seed, 1, 1, &[9u8; 100]);
        for cut in 0..bytes.len() {
            assert!(
                decode(&bytes[..cut], 0, seed, Some(1)).is_err(),
                "cut {cut}"
            );
        }
    }

    #[test]
    fn public_frame_api_round_trips_and_rejects_out_of_range() {
        let mut out = Vec::new();
        let kind = RecordKind::new(9).expect("kind");
        encode_frame(&mut out, SegmentId(4), Lsn(77), kind, true, b"abc").expect("encode");
        let frame = decode_frame(&out, 0, SegmentId(4), Some(Lsn(77))).expect("decode");
        assert_eq!(
            (frame.lsn, frame.kind_value(), frame.payload),
            (77, 9, &b"abc"[..])
        );
        assert!(frame.is_batch_end());
        assert_eq!(
            decode_frame(&out, out.len() + 5, SegmentId(4), None),
            Err(Invalid::ShortHeader)
        );
        assert!(decode_frame(&out, 0, SegmentId(5), None).is_err());
        assert!(encode_frame(&mut out, SegmentId(4), Lsn(0), kind, true, b"").is_err());
    }

    #[test]
    fn a_sync_mark_closes_only_the_record_before_it() {
        let seed = segment_seed(SegmentId(2));
        let mut bytes = one(seed, 7, 1 | FLAG_BATCH_END, b"record");
        let mark_at = bytes.len();
        encode_into(
            &mut bytes,
            seed,
            7,
            KIND_SYNC_MARK | FLAG_BATCH_END,
            &encode_sync_mark_payload(6),
        );
        let mark = decode_next(&bytes, mark_at, seed, 8, true).expect("mark after lsn 7");
        assert!(mark.is_sync_mark());
        assert_eq!(mark.lsn, 7);
        assert_eq!(mark.payload, &6u64.to_le_bytes()[..]);
        assert_eq!(
            decode_next(&bytes, mark_at, seed, 8, false),
            Err(Invalid::BadLsn { found: 7 }),
            "not as a segment's first frame"
        );
        assert_eq!(
            decode_next(&bytes, mark_at, seed, 9, true),
            Err(Invalid::BadLsn { found: 7 }),
            "not for another record"
        );
        // A mark that is not its own batch, or has another payload size, is refused.
        let mut odd = Vec::new();
        encode_into(
            &mut odd,
            seed,
            7,
            KIND_SYNC_MARK,
            &encode_sync_mark_payload(6),
        );
        assert!(decode_next(&odd, 0, seed, 8, true).is_err());
        odd.clear();
        encode_into(&mut odd, seed, 7, KIND_SYNC_MARK | FLAG_BATCH_END, b"short");
        assert!(decode_next(&odd, 0, seed, 8, true).is_err());
        // A record of the previous LSN is no mark.
        assert_eq!(
            decode_next(&bytes, 0, seed, 8, true),
            Err(Invalid::BadLsn { found: 7 })
        );
        for bit in 0..(bytes.len() - mark_at) * 8 {
            let mut damaged = bytes.clone();
            damaged[mark_at + bit / 8] ^= 1 << (bit % 8);
            assert!(
                decode_next(&damaged, mark_at, seed, 8, true).is_err(),
                "bit {bit} of the mark undetected"
            );
        }
    }

    #[test]
    fn copy_payload_round_trip() {
        let mut out = Vec::new();
        encode_copy_payload(&mut out, 11, 99, 4, b"abc");
        assert_eq!(decode_copy_payload(&out), Some((11, 99, 4, &b"abc"[..])));
        assert_eq!(decode_copy_payload(&out[..5]), None);
    }
}
