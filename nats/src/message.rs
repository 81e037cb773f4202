//! message: what one stream message of the log holds, in its headers and body.
//!
//! Headers (besides the fence's `Nats-Msg-Id` and `Nats-Expected-Last-*`):
//! - `Statelog-Type`: `batch` (a caller's batch), `takeover` (a new owner's marker, no records)
//!   or `compaction` (records copied forward, each with its origin LSN).
//! - `Statelog-Lsn`: the LSN of the message's first record; for a message without records, the
//!   LSN the next record gets. The replay at open rebuilds the LSN index from it.
//! - `Statelog-Epoch` (takeover): the owner's epoch.
//! - `Statelog-Purge-Below` (compaction): every message below this stream sequence is
//!   superseded by this copy and the ones before it; a replay skips them and finishes the purge.
//!
//! Body: a format byte ([`BODY_FORMAT`]), the record count (u32 LE), then per record its kind
//! (u8), its origin LSN (u64 LE, 0: the record's own LSN), its length (u32 LE) and its bytes.
//!
//! Must not: interpret payloads.

use std::ops::Range;

/// The body format this build writes and reads.
pub const BODY_FORMAT: u8 = 1;

/// Bytes in front of the records.
pub const BODY_HEAD_BYTES: usize = 1 + 4;

/// Bytes in front of each record's payload.
pub const RECORD_HEAD_BYTES: usize = 1 + 8 + 4;

/// Header names.
pub const HEADER_TYPE: &str = "Statelog-Type";
/// The first LSN (or the next one) of a message.
pub const HEADER_LSN: &str = "Statelog-Lsn";
/// A takeover marker's epoch.
pub const HEADER_EPOCH: &str = "Statelog-Epoch";
/// A compaction copy's purge bound.
pub const HEADER_PURGE_BELOW: &str = "Statelog-Purge-Below";

/// What a message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    /// A caller's batch.
    Batch,
    /// A new owner's marker.
    Takeover,
    /// Records copied forward by compaction.
    Compaction,
}

impl Type {
    /// Its header value.
    pub fn as_str(self) -> &'static str {
        match self {
            Type::Batch => "batch",
            Type::Takeover => "takeover",
            Type::Compaction => "compaction",
        }
    }

    /// From a header value.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "batch" => Some(Type::Batch),
            "takeover" => Some(Type::Takeover),
            "compaction" => Some(Type::Compaction),
            _ => None,
        }
    }
}

/// The encoded size of a body holding records of these payload sizes.
pub fn body_size_bytes(payload_sizes: impl Iterator<Item = usize>) -> usize {
    BODY_HEAD_BYTES
        + payload_sizes
            .map(|size| RECORD_HEAD_BYTES + size)
            .sum::<usize>()
}

/// Encodes records `(kind, origin LSN or 0, payload)` into a body.
pub fn encode_body<'a>(
    records: impl ExactSizeIterator<Item = (u8, u64, &'a [u8])> + Clone,
) -> Vec<u8> {
    let size = body_size_bytes(records.clone().map(|(_, _, payload)| payload.len()));
    let mut body = Vec::with_capacity(size);
    body.push(BODY_FORMAT);
    // The caller bounds the count (`limits::BATCH_RECORDS_MAX`) far below u32.
    body.extend_from_slice(&(records.len() as u32).to_le_bytes());
    for (kind, origin, payload) in records {
        body.push(kind);
        body.extend_from_slice(&origin.to_le_bytes());
        body.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        body.extend_from_slice(payload);
    }
    body
}

/// One record of a decoded body: its kind, origin (0: its own LSN) and payload's range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyRecord {
    /// The caller's kind.
    pub kind: u8,
    /// Where it was first written (0: at its own LSN).
    pub origin: u64,
    /// Its bytes in the body.
    pub payload: Range<usize>,
}

/// Decodes a body; the reason when it is not one this log wrote.
pub fn decode_body(body: &[u8]) -> Result<Vec<BodyRecord>, &'static str> {
    let (&format, rest) = body.split_first().ok_or("an empty body")?;
    if format != BODY_FORMAT {
        return Err("an unknown body format");
    }
    let count = rest.get(..4).ok_or("a body cut short in its count")?;
    let count = u32::from_le_bytes([count[0], count[1], count[2], count[3]]) as usize;
    let mut records = Vec::with_capacity(count.min(body.len() / RECORD_HEAD_BYTES));
    let mut at = BODY_HEAD_BYTES;
    for _ in 0..count {
        let head = body
            .get(at..at + RECORD_HEAD_BYTES)
            .ok_or("a body cut short in a record head")?;
        let kind = head[0];
        let mut origin = [0u8; 8];
        origin.copy_from_slice(&head[1..9]);
        let length = u32::from_le_bytes([head[9], head[10], head[11], head[12]]) as usize;
        let start = at + RECORD_HEAD_BYTES;
        let end = start
            .checked_add(length)
            .filter(|end| *end <= body.len())
            .ok_or("a body cut short in a payload")?;
        records.push(BodyRecord {
            kind,
            origin: u64::from_le_bytes(origin),
            payload: start..end,
        });
        at = end;
    }
    if at != body.len() {
        return Err("bytes after the last record");
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_round_trips_and_damage_is_named() {
        let records: Vec<(u8, u64, &[u8])> = vec![(1, 0, b"one"), (7, 42, b""), (3, 0, b"three")];
        let body = encode_body(records.iter().copied());
        assert_eq!(
            body.len(),
            body_size_bytes(records.iter().map(|r| r.2.len()))
        );
        let decoded = decode_body(&body).expect("decodes");
        assert_eq!(decoded.len(), 3);
        assert_eq!(decoded[1].kind, 7);
        assert_eq!(decoded[1].origin, 42);
        assert_eq!(&body[decoded[2].payload.clone()], b"three");
        assert_eq!(
            decode_body(&body[..body.len() - 1]),
            Err("a body cut short in a payload")
        );
        assert_eq!(decode_body(&[]), Err("an empty body"));
        assert_eq!(decode_body(&[9, 0, 0, 0, 0]), Err("an unknown body format"));
        let mut longer = body.clone();
        longer.push(0);
        assert_eq!(decode_body(&longer), Err("bytes after the last record"));
        let empty = encode_body(std::iter::empty::<(u8, u64, &[u8])>());
        assert_eq!(decode_body(&empty), Ok(Vec::new()));
    }

    /// Body format 1, byte for byte: streams written by this build must be read by every later
    /// one, so a change to the layout shows up here (and needs a new `BODY_FORMAT`).
    #[test]
    fn body_format_1_is_pinned() {
        let records: Vec<(u8, u64, &[u8])> = vec![(1, 0, b"ab"), (7, 0x0102, b"")];
        let body = encode_body(records.iter().copied());
        let expected: &[u8] = &[
            1, // format
            2, 0, 0, 0, // record count
            1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, b'a',
            b'b', // kind, origin 0, length, bytes
            7, 0x02, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // kind, origin 0x0102, length 0
        ];
        assert_eq!(body, expected);
        let decoded = decode_body(expected).expect("decodes");
        assert_eq!((decoded[0].kind, decoded[0].origin), (1, 0));
        assert_eq!(&expected[decoded[0].payload.clone()], b"ab");
        assert_eq!((decoded[1].kind, decoded[1].origin), (7, 0x0102));
    }
}
