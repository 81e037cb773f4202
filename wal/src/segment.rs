//! segment: segment files: naming, the checksummed header, zero-filled preallocation.
//!
//! A segment file is `{segment_id:020}.wal`, fixed-size, and starts with a 64-byte header:
//! `magic "SLWALSEG" | format_version: u32 | header_crc: u32 | segment_id: u64 | first_lsn: u64 |
//! 32 reserved zero bytes`, little-endian, the CRC covering every header byte except itself.
//! Records start at `SEGMENT_HEADER_SIZE_BYTES`. A file whose header is all zeros (freshly
//! preallocated) or names another segment id (recycled) holds no records yet.
//!
//! Invariants: a segment file becomes visible under its final name only after its full length
//! is written and synced (`prepare`), so writing records into it never grows the file or changes
//! metadata. This module does not decide when to rotate or delete; the writer does.

use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, HeaderDamage, Result};
use crate::limits::{
    LSN_MAX, SEGMENT_HEADER_SIZE_BYTES, SEGMENT_SIZE_BYTES_MAX, ZERO_FILL_CHUNK_BYTES,
};
use crate::storage::{join, Storage, StorageFile};
use crate::{Lsn, SegmentId};

/// The magic bytes opening every segment header.
pub const SEGMENT_MAGIC: [u8; 8] = *b"SLWALSEG";
/// The segment format version this build writes. Version 2 ends every syncing write with a sync
/// mark (`docs/wal-format.md`); version 1 segments (no marks) are still read.
pub const FORMAT_VERSION: u32 = 2;
/// The oldest segment format version this build reads.
pub const FORMAT_VERSION_MIN: u32 = 1;
/// File name suffix of segments.
pub(crate) const SEGMENT_SUFFIX: &str = ".wal";
/// File name suffix of segments being preallocated.
pub(crate) const TEMP_SUFFIX: &str = ".wal.tmp";

/// The decoded header of a segment in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentHeader {
    /// The format version the segment was written in (`FORMAT_VERSION_MIN..=FORMAT_VERSION`).
    pub format_version: u32,
    /// The segment's id (also its file name).
    pub segment_id: SegmentId,
    /// The LSN of its first record.
    pub first_lsn: Lsn,
}

impl SegmentHeader {
    /// The 64 header bytes.
    pub(crate) fn encode(&self) -> [u8; SEGMENT_HEADER_SIZE_BYTES] {
        let mut out = [0u8; SEGMENT_HEADER_SIZE_BYTES];
        out[0..8].copy_from_slice(&SEGMENT_MAGIC);
        out[8..12].copy_from_slice(&self.format_version.to_le_bytes());
        out[16..24].copy_from_slice(&self.segment_id.0.to_le_bytes());
        out[24..32].copy_from_slice(&self.first_lsn.0.to_le_bytes());
        let crc = header_crc(&out);
        out[12..16].copy_from_slice(&crc.to_le_bytes());
        out
    }
}

fn header_crc(bytes: &[u8; SEGMENT_HEADER_SIZE_BYTES]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&bytes[0..12]);
    hasher.update(&bytes[16..]);
    hasher.finalize()
}

/// What the first bytes of a segment file say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HeaderState {
    /// A valid header naming this file's segment id.
    Valid(SegmentHeader),
    /// All zeros: preallocated, never used.
    Zeroed,
    /// A valid header naming another segment: a recycled file, never used under this name.
    Recycled { found: SegmentId },
    /// A valid header of a format version this build does not read (a newer build wrote it).
    UnsupportedVersion { version: u32 },
    /// Anything else; the damage says what is wrong.
    Damaged(HeaderDamage),
}

/// Classifies the header bytes of the file named for `expected`.
pub(crate) fn read_header(bytes: &[u8], expected: SegmentId) -> HeaderState {
    let Some(raw) = bytes.get(..SEGMENT_HEADER_SIZE_BYTES) else {
        return HeaderState::Damaged(HeaderDamage::ShortFile {
            len_bytes: bytes.len() as u64,
        });
    };
    if raw.iter().all(|&b| b == 0) {
        return HeaderState::Zeroed;
    }
    let mut header = [0u8; SEGMENT_HEADER_SIZE_BYTES];
    header.copy_from_slice(raw);
    if header[0..8] != SEGMENT_MAGIC {
        return HeaderState::Damaged(HeaderDamage::BadMagic);
    }
    let stored = u32::from_le_bytes([header[12], header[13], header[14], header[15]]);
    let actual = header_crc(&header);
    if stored != actual {
        return HeaderState::Damaged(HeaderDamage::ChecksumMismatch {
            stored,
            computed: actual,
        });
    }
    let version = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
    if !(FORMAT_VERSION_MIN..=FORMAT_VERSION).contains(&version) {
        return HeaderState::UnsupportedVersion { version };
    }
    let mut word = [0u8; 8];
    word.copy_from_slice(&header[16..24]);
    let segment_id = SegmentId(u64::from_le_bytes(word));
    word.copy_from_slice(&header[24..32]);
    let first_lsn = Lsn(u64::from_le_bytes(word));
    if segment_id != expected {
        return HeaderState::Recycled { found: segment_id };
    }
    if first_lsn.0 == 0 || first_lsn.0 > LSN_MAX {
        return HeaderState::Damaged(HeaderDamage::FirstLsnOutOfRange {
            first_lsn,
            max: LSN_MAX,
        });
    }
    if bytes.len() as u64 > SEGMENT_SIZE_BYTES_MAX {
        return HeaderState::Damaged(HeaderDamage::FileTooLarge {
            len_bytes: bytes.len() as u64,
        });
    }
    HeaderState::Valid(SegmentHeader {
        format_version: version,
        segment_id,
        first_lsn,
    })
}

/// The file name of a segment.
pub(crate) fn file_name(id: SegmentId) -> String {
    format!("{:020}{SEGMENT_SUFFIX}", id.0)
}

/// Parses a segment file name; `None` for any other file.
pub(crate) fn parse_file_name(name: &str) -> Option<SegmentId> {
    let digits = name.strip_suffix(SEGMENT_SUFFIX)?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().map(SegmentId)
}

/// Creates a zero-filled segment file of `size_bytes` under its final name, durably: written
/// under a temporary name, synced, renamed, directory synced.
pub(crate) fn prepare(
    storage: &dyn Storage,
    dir: &Path,
    id: SegmentId,
    size_bytes: u64,
) -> Result<Arc<dyn StorageFile>> {
    let temp = join(dir, &format!("{:020}{TEMP_SUFFIX}", id.0));
    let result = prepare_at(storage, dir, &temp, id, size_bytes);
    if result.is_err() {
        // A failed preparation leaves no half-filled file holding space (a full disk frees
        // what it took). Best effort: every open removes temporary files anyway.
        let _ = storage.remove(&temp);
    }
    result
}

fn prepare_at(
    storage: &dyn Storage,
    dir: &Path,
    temp: &Path,
    id: SegmentId,
    size_bytes: u64,
) -> Result<Arc<dyn StorageFile>> {
    let path = join(dir, &file_name(id));
    let file = storage
        .create(temp)
        .map_err(|e| Error::io("create", temp, e))?;
    let zeros = vec![0u8; ZERO_FILL_CHUNK_BYTES];
    let mut offset = 0u64;
    while offset < size_bytes {
        let len = (size_bytes - offset).min(ZERO_FILL_CHUNK_BYTES as u64) as usize;
        file.write_at(offset, &zeros[..len])
            .map_err(|e| Error::io("write_at", temp, e))?;
        offset += len as u64;
    }
    file.sync_all()
        .map_err(|e| Error::io("sync_all", temp, e))?;
    storage
        .rename(temp, &path)
        .map_err(|e| Error::io("rename", temp, e))?;
    storage
        .sync_dir(dir)
        .map_err(|e| Error::io("sync_dir", dir, e))?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_states() {
        let header = SegmentHeader {
            format_version: FORMAT_VERSION,
            segment_id: SegmentId(7),
            first_lsn: Lsn(100),
        };
        let bytes = header.encode();
        assert_eq!(
            read_header(&bytes, SegmentId(7)),
            HeaderState::Valid(header)
        );
        assert_eq!(
            read_header(&bytes, SegmentId(8)),
            HeaderState::Recycled {
                found: SegmentId(7)
            }
        );
        assert_eq!(read_header(&[0u8; 64], SegmentId(7)), HeaderState::Zeroed);
        assert!(matches!(
            read_header(&bytes[..10], SegmentId(7)),
            HeaderState::Damaged(_)
        ));
        for bit in 0..SEGMENT_HEADER_SIZE_BYTES * 8 {
            let mut damaged = bytes;
            damaged[bit / 8] ^= 1 << (bit % 8);
            assert!(
                !matches!(read_header(&damaged, SegmentId(7)), HeaderState::Valid(_)),
                "bit {bit} undetected"
            );
        }
    }

    #[test]
    fn version_one_is_read_and_an_unknown_version_is_named() {
        for format_version in [FORMAT_VERSION_MIN, FORMAT_VERSION] {
            let header = SegmentHeader {
                format_version,
                segment_id: SegmentId(3),
                first_lsn: Lsn(1),
            };
            assert_eq!(
                read_header(&header.encode(), SegmentId(3)),
                HeaderState::Valid(header)
            );
        }
        let newer = SegmentHeader {
            format_version: FORMAT_VERSION + 1,
            segment_id: SegmentId(3),
            first_lsn: Lsn(1),
        };
        assert_eq!(
            read_header(&newer.encode(), SegmentId(3)),
            HeaderState::UnsupportedVersion {
                version: FORMAT_VERSION + 1
            }
        );
    }

    #[test]
    fn names() {
        assert_eq!(file_name(SegmentId(42)), "00000000000000000042.wal");
        assert_eq!(
            parse_file_name("00000000000000000042.wal"),
            Some(SegmentId(42))
        );
        assert_eq!(parse_file_name("42.wal"), None);
        assert_eq!(parse_file_name("00000000000000000042.wal.tmp"), None);
    }
}
