//! reader: iterate records by LSN, and read one record by LSN.
//!
//! A `View` is a snapshot of the catalog (segment mappings, the visible LSN and the committed
//! compactions) taken when a read starts. Within a segment it walks frames from the nearest
//! sparse-index entry, up to the visible LSN or the next segment's first LSN. The frames before
//! the first LSN asked for are stepped over by their headers (length, exact LSN, kind: no
//! checksum), so a read of one record does not checksum the up to `INDEX_STRIDE_RECORDS` records
//! before it; every frame from that LSN on has its CRC and exact LSN checked. Sync marks (which
//! repeat the LSN of the record before them) are checked and stepped over. A header that does
//! not step over (damage) restarts the walk of its segment with every frame checked in full, so
//! the error names the frame it would have named.
//!
//! Invariants: a reader never returns bytes that failed their checksum (it returns
//! `Error::Corrupt` instead), never returns a record past the acknowledged end, and hides the
//! log's own markers and copies of uncommitted compactions. It never writes.

use std::collections::HashSet;
use std::sync::Arc;

use crate::error::{CorruptReason, Error, Result};
use crate::record::{self, OwnedRecord, Record, KIND_COPY};
use crate::storage::Mapping;
use crate::writer::Inner;
use crate::{Lsn, RecordKind, SegmentId};

#[derive(Debug)]
struct SegView {
    id: SegmentId,
    seed: u32,
    map: Mapping,
    /// Where to start: (lsn, offset).
    start: (u64, u64),
    /// The next segment's first LSN: this segment holds no LSN at or above it.
    stop_before: Option<u64>,
}

/// A raw frame position found by the walk.
#[derive(Debug, Clone, Copy)]
struct Found {
    segment_index: usize,
    payload_start: usize,
    payload_len: usize,
    kind_byte: u8,
    lsn: u64,
}

/// A snapshot for reading from an LSN on.
#[derive(Debug)]
pub(crate) struct View {
    segments: Vec<SegView>,
    visible_lsn: u64,
    committed: Arc<HashSet<u64>>,
    position_segment: usize,
    position_offset: u64,
    position_lsn: u64,
    from: u64,
    /// Every frame is checked in full, those before `from` too (set when a header did not
    /// step over).
    check_all: bool,
}

impl View {
    /// Takes a snapshot for reading records with LSN >= `from`.
    pub(crate) fn new(inner: &Inner, from: u64) -> Result<View> {
        Self::bounded(inner, from, usize::MAX)
    }

    /// Like `new`, mapping at most `segments_max` segments (a read of one LSN needs one).
    pub(crate) fn bounded(inner: &Inner, from: u64, segments_max: usize) -> Result<View> {
        let visible_lsn = inner.visible_lsn();
        let catalog = inner.catalog.read();
        let committed = Arc::clone(&catalog.committed);
        let first_index = catalog
            .segments
            .partition_point(|meta| meta.first_lsn <= from)
            .saturating_sub(1);
        let mut segments = Vec::new();
        for (position, meta) in catalog
            .segments
            .iter()
            .enumerate()
            .skip(first_index)
            .take(segments_max)
        {
            if meta.first_lsn > visible_lsn {
                break;
            }
            let map = match meta.map.get() {
                Some(map) => map.clone(),
                None => {
                    let map = meta
                        .file
                        .map()
                        .map_err(|e| Error::io("mmap", &meta.path, e))?;
                    // A sealed segment no longer changes; the active one may be kept too where
                    // its mapping shows later writes and already spans the segment's full size
                    // (a memory map of the preallocated file): a read of the newest records then
                    // maps nothing.
                    let keep = meta.sealed.is_some()
                        || (meta.file.map_shows_later_writes()
                            && map.len() as u64 >= meta.size_bytes);
                    if keep {
                        let _ = meta.map.set(map.clone());
                    }
                    map
                }
            };
            let hint_index = meta.index.partition_point(|(lsn, _)| *lsn <= from);
            let start = if hint_index == 0 {
                (
                    meta.first_lsn,
                    crate::limits::SEGMENT_HEADER_SIZE_BYTES as u64,
                )
            } else {
                let (lsn, offset) = meta.index[hint_index - 1];
                (lsn, u64::from(offset))
            };
            let stop_before = catalog
                .segments
                .get(position + 1)
                .map(|next| next.first_lsn);
            segments.push(SegView {
                id: meta.id,
                seed: meta.seed,
                map,
                start,
                stop_before,
            });
        }
        drop(catalog);
        let (position_offset, position_lsn) = segments
            .first()
            .map_or((0, from), |s| (s.start.1, s.start.0));
        Ok(View {
            segments,
            visible_lsn,
            committed,
            position_segment: 0,
            position_offset,
            position_lsn,
            from,
            check_all: false,
        })
    }

    /// The next raw frame at or after `from`, including hidden ones.
    fn next_frame(&mut self) -> Result<Option<Found>> {
        loop {
            let Some(segment) = self.segments.get(self.position_segment) else {
                return Ok(None);
            };
            let lsn = self.position_lsn;
            let at_end = lsn > self.visible_lsn || Some(lsn) == segment.stop_before;
            if at_end {
                self.position_segment += 1;
                match self.segments.get(self.position_segment) {
                    Some(next) => {
                        self.position_offset = next.start.1;
                        self.position_lsn = next.start.0;
                        continue;
                    }
                    None => return Ok(None),
                }
            }
            let offset = usize::try_from(self.position_offset).expect("offsets fit usize");
            // A sync mark may sit between two records (never first in a segment): stepped over.
            let mark_allowed = offset > crate::limits::SEGMENT_HEADER_SIZE_BYTES;
            if lsn < self.from && !self.check_all {
                match record::step_over(&segment.map, offset, lsn, mark_allowed) {
                    Some((size_bytes, is_mark)) => {
                        self.position_offset += size_bytes as u64;
                        if !is_mark {
                            self.position_lsn += 1;
                        }
                    }
                    None => {
                        // Damage, or a step over misled by it: walk this segment again from
                        // its start, checking every frame, to report the frame as before.
                        self.check_all = true;
                        (self.position_lsn, self.position_offset) = segment.start;
                    }
                }
                continue;
            }
            let frame = record::decode_next(&segment.map, offset, segment.seed, lsn, mark_allowed)
                .map_err(|invalid| Error::Corrupt {
                    segment_id: segment.id,
                    offset_bytes: self.position_offset,
                    reason: CorruptReason::AcknowledgedUnreadable {
                        lsn: Lsn(lsn),
                        invalid,
                    },
                })?;
            self.position_offset += frame.size_bytes as u64;
            if frame.is_sync_mark() {
                continue;
            }
            self.position_lsn += 1;
            if lsn < self.from {
                continue;
            }
            return Ok(Some(Found {
                segment_index: self.position_segment,
                payload_start: offset + crate::limits::RECORD_HEADER_SIZE_BYTES,
                payload_len: frame.payload.len(),
                kind_byte: frame.kind_byte,
                lsn,
            }));
        }
    }

    /// Interprets a found frame as a caller record, `None` when hidden.
    fn record_at(&self, found: Found) -> Option<Record<'_>> {
        // The frame was validated by `next_frame`; this only re-slices it.
        let map = &self.segments[found.segment_index].map;
        let frame_payload = &map[found.payload_start..found.payload_start + found.payload_len];
        let kind = found.kind_byte & record::KIND_MASK;
        if kind <= RecordKind::MAX {
            return Some(Record {
                lsn: Lsn(found.lsn),
                kind: RecordKind::from_trusted(kind),
                payload: frame_payload,
                copied_from: None,
            });
        }
        if kind == KIND_COPY {
            let (original, begin, original_kind, payload) =
                record::decode_copy_payload(frame_payload)?;
            if !self.committed.contains(&begin) || original_kind > RecordKind::MAX {
                return None;
            }
            return Some(Record {
                lsn: Lsn(found.lsn),
                kind: RecordKind::from_trusted(original_kind),
                payload,
                copied_from: Some(Lsn(original)),
            });
        }
        None
    }

    /// Visits every visible record until `visit` breaks.
    pub(crate) fn scan(
        &mut self,
        mut visit: impl FnMut(Record<'_>) -> std::ops::ControlFlow<()>,
    ) -> Result<()> {
        while let Some(found) = self.next_frame()? {
            if let Some(record) = self.record_at(found) {
                if visit(record).is_break() {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Reads exactly `lsn` (`self.from`): `None` when hidden or no longer retained.
    pub(crate) fn read_one(&mut self) -> Result<Option<OwnedRecord>> {
        let target = self.from;
        match self.next_frame()? {
            Some(found) if found.lsn == target => {
                Ok(self.record_at(found).map(|r| r.to_owned_record()))
            }
            _ => Ok(None),
        }
    }
}

/// An iterator over owned records from an LSN on, up to the acknowledged end when it was made.
#[derive(Debug)]
pub struct RecordIter {
    view: View,
    done: bool,
}

impl RecordIter {
    pub(crate) fn new(view: View) -> Self {
        RecordIter { view, done: false }
    }
}

impl Iterator for RecordIter {
    type Item = Result<OwnedRecord>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        loop {
            match self.view.next_frame() {
                Ok(Some(found)) => {
                    if let Some(record) = self.view.record_at(found) {
                        return Some(Ok(record.to_owned_record()));
                    }
                }
                Ok(None) => {
                    self.done = true;
                    return None;
                }
                Err(error) => {
                    self.done = true;
                    return Some(Err(error));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use crate::error::{CorruptReason, Error};
    use crate::limits::SEGMENT_HEADER_SIZE_BYTES;
    use crate::record::{self, Invalid, KIND_MASK, KIND_SYNC_MARK};
    use crate::storage::sim::SimStorage;
    use crate::wal::{Wal, WalOptions};
    use crate::{Lsn, RecordKind};

    const RECORDS_COUNT: u64 = 12;

    /// A log on the simulated disk with records 1..=RECORDS_COUNT, each its own synced batch
    /// (so sync marks sit between them), all in the first segment; and the offset of each
    /// record's frame in that segment's file, by LSN.
    fn log_with_records() -> (SimStorage, Wal, std::path::PathBuf, Vec<u64>) {
        let sim = SimStorage::new();
        let options = WalOptions {
            segment_size_bytes: 64 * 1024,
            background_preparation: false,
            ..WalOptions::default()
        };
        let (wal, _) =
            Wal::open_with_storage(Arc::new(sim.clone()), Path::new("/r"), options).expect("open");
        let kind = RecordKind::new(1).expect("kind");
        for lsn in 1..=RECORDS_COUNT {
            let payload = format!("record {lsn} of the reader's walk");
            assert_eq!(
                wal.append(kind, payload.as_bytes()).expect("append"),
                Lsn(lsn)
            );
        }
        let path = wal.inner.catalog.read().segments[0].path.clone();
        let bytes = sim.file_bytes(&path).expect("segment bytes");
        let mut offsets = vec![0u64];
        let mut offset = SEGMENT_HEADER_SIZE_BYTES;
        while let Some((len, lsn, kind_byte)) = record::peek_header(&bytes, offset) {
            if lsn == 0 {
                break;
            }
            if kind_byte & KIND_MASK != KIND_SYNC_MARK {
                assert_eq!(lsn, offsets.len() as u64, "records in LSN order");
                offsets.push(offset as u64);
            }
            offset += record::framed_size(len as usize);
        }
        assert_eq!(
            offsets.len() as u64,
            RECORDS_COUNT + 1,
            "every record found"
        );
        (sim, wal, path, offsets)
    }

    fn payload_of(wal: &Wal, lsn: u64) -> Vec<u8> {
        wal.read(Lsn(lsn))
            .expect("reads")
            .expect("the record is there")
            .payload
    }

    /// A read of one record checks its own checksum, not those of the records the walk steps
    /// over to reach it: a record damaged in its payload does not make a later one unreadable,
    /// and is still refused when it is the one read.
    #[test]
    fn a_read_steps_over_earlier_frames_by_their_headers() {
        let (sim, wal, path, offsets) = log_with_records();
        let damaged_lsn = 3;
        let payload_offset = offsets[damaged_lsn] + crate::limits::RECORD_HEADER_SIZE_BYTES as u64;
        assert!(sim.flip_bit(&path, payload_offset + 2, 1));
        assert_eq!(payload_of(&wal, 9), b"record 9 of the reader's walk");
        match wal.read(Lsn(damaged_lsn as u64)) {
            Err(Error::Corrupt {
                offset_bytes,
                reason: CorruptReason::AcknowledgedUnreadable { lsn, invalid },
                ..
            }) => {
                assert_eq!(offset_bytes, offsets[damaged_lsn]);
                assert_eq!(lsn, Lsn(damaged_lsn as u64));
                assert!(matches!(invalid, Invalid::BadCrc { .. }), "{invalid:?}");
            }
            other => panic!("the damaged record read as {other:?}"),
        }
    }

    /// A damaged header before the record read (its length: the walk would be misled) makes the
    /// walk check every frame from the segment's start, so the error names the damaged frame, as
    /// a walk that checksums every frame does.
    #[test]
    fn a_damaged_header_on_the_way_is_reported_at_its_own_offset() {
        let (sim, wal, path, offsets) = log_with_records();
        let damaged_lsn = 4;
        // Bit 3 of the length field's low byte: 8 bytes more or less.
        assert!(sim.flip_bit(&path, offsets[damaged_lsn] + 4, 3));
        match wal.read(Lsn(10)) {
            Err(Error::Corrupt {
                offset_bytes,
                reason: CorruptReason::AcknowledgedUnreadable { lsn, .. },
                ..
            }) => {
                assert_eq!(offset_bytes, offsets[damaged_lsn]);
                assert_eq!(lsn, Lsn(damaged_lsn as u64));
            }
            other => panic!("a read past the damaged header gave {other:?}"),
        }
        // The records before the damage are read as before.
        assert_eq!(payload_of(&wal, 2), b"record 2 of the reader's walk");
    }

    /// Stepping over by headers and checking every frame find the same records: every LSN reads
    /// back what was appended, sync marks and all.
    #[test]
    fn every_record_reads_back_through_the_step_over() {
        let (_sim, wal, _path, _offsets) = log_with_records();
        for lsn in 1..=RECORDS_COUNT {
            assert_eq!(
                payload_of(&wal, lsn),
                format!("record {lsn} of the reader's walk").as_bytes()
            );
        }
    }
}
