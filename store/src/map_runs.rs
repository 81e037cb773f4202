//! map_runs: the store's Map Run records (Distributed Map, issue 20) and their index. One record
//! kind ([`KIND_MAP_RUN`]) holds what a Map Run needs beyond its parent's history: its opening
//! (the parent execution, the start, the settings), each `UpdateMapRun` (the run's whole
//! settings; the latest wins), and the ends of its EXPRESS children, many per record (EXPRESS
//! children write nothing of their own, so these records are what a resumed run skips).
//!
//! Record layout: `[MAP_RUN_FORMAT_VERSION] ++ postcard(MapRunRecord)`. Variant and field order
//! is the wire format.
//!
//! The index ([`MapRunIndex`]): per Map Run ARN, its parent execution, start, latest settings
//! and the LSNs of its `ChildrenEnded` records (never their payloads: a run of a million items
//! costs one LSN per record, and a record holds many ends).
//!
//! Retention rule (applied by `Store::compact`): a run's records are kept while its parent
//! execution's records are, and dropped with them (the parent expired and wholly below the
//! compacted chunk, or already forgotten by an earlier compaction).
//!
//! Invariants: every record names its run and its parent; an `Updated` or `ChildrenEnded`
//! record of a run the index does not know (an `Opened` lost with an older build's log, or a
//! run opened before this record kind existed) still indexes the run under the parent it names.
//! Must not: read a clock, judge an update (the engine validates), or decide which recorded
//! ends count for a redriven run (the engine does, from each record's `redrive_count`).

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use statelog_wal::Lsn;

use super::record::{Damage, Format, ReadError};
use super::{Error, Store};

/// Record kind of every Map Run record ([`MapRunRecord`]).
pub const KIND_MAP_RUN: u8 = 5;

/// The format version of Map Run records this build writes: the newest it reads.
pub const MAP_RUN_FORMAT_VERSION: u8 = 1;

/// Map Run records ([`MapRunRecord`]).
pub const MAP_RUN_FORMAT: Format = Format {
    name: "map run",
    kind: KIND_MAP_RUN,
    oldest: 1,
    newest: MAP_RUN_FORMAT_VERSION,
};

/// A Map Run's settings that `UpdateMapRun` may change (AWS's `maxConcurrency`,
/// `toleratedFailureCount`, `toleratedFailurePercentage`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MapRunSettings {
    /// `maxConcurrency` (0: as many as the engine allows).
    pub max_concurrency: u64,
    /// `toleratedFailureCount`, when set.
    pub tolerated_failure_count: Option<u64>,
    /// `toleratedFailurePercentage`, when set.
    pub tolerated_failure_percentage: Option<f64>,
}

/// How an EXPRESS child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChildEndStatus {
    /// It succeeded.
    Succeeded,
    /// It failed (or could not start).
    Failed,
    /// It timed out.
    TimedOut,
    /// It was aborted.
    Aborted,
}

/// One EXPRESS child's end: what the run keeps for its output and what a ResultWriter writes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildEnd {
    /// The child's index in the run (0-based, in item order).
    pub child_index: u64,
    /// How many items the child covered (1, or its batch's size).
    pub item_count: u64,
    /// How it ended.
    pub status: ChildEndStatus,
    /// The child's execution ARN (empty when it could not start).
    pub execution_arn: String,
    /// Its input, compact JSON text (`None` when it could not start).
    pub input: Option<String>,
    /// Its output, compact JSON text.
    pub output: Option<String>,
    /// Its error.
    pub error: Option<String>,
    /// Its cause.
    pub cause: Option<String>,
    /// When it started, ms since the epoch.
    pub start_ms: u64,
    /// When it ended, ms since the epoch.
    pub stop_ms: u64,
}

/// One change to a Map Run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum MapRunRecord {
    /// The run opened (its first dispatch).
    Opened {
        /// The Map Run's ARN.
        map_run_arn: String,
        /// The execution whose Map state started it.
        execution_arn: String,
        /// When it started, ms since the epoch.
        start_ms: u64,
        /// Its settings from the definition.
        settings: MapRunSettings,
    },
    /// `UpdateMapRun`: the run's whole settings after it.
    Updated {
        /// The Map Run's ARN.
        map_run_arn: String,
        /// The execution whose Map state started it.
        execution_arn: String,
        /// The settings now.
        settings: MapRunSettings,
        /// When, ms since the epoch.
        updated_ms: u64,
    },
    /// EXPRESS children that ended, in the order they ended.
    ChildrenEnded {
        /// The Map Run's ARN.
        map_run_arn: String,
        /// The execution whose Map state started it.
        execution_arn: String,
        /// The run's redrive count when they ended (a redrive reruns the failed ones).
        redrive_count: u32,
        /// The ends.
        ends: Vec<ChildEnd>,
    },
}

impl MapRunRecord {
    /// The Map Run the record belongs to.
    pub fn map_run_arn(&self) -> &str {
        match self {
            MapRunRecord::Opened { map_run_arn, .. }
            | MapRunRecord::Updated { map_run_arn, .. }
            | MapRunRecord::ChildrenEnded { map_run_arn, .. } => map_run_arn,
        }
    }

    /// The parent execution the record names.
    pub fn execution_arn(&self) -> &str {
        match self {
            MapRunRecord::Opened { execution_arn, .. }
            | MapRunRecord::Updated { execution_arn, .. }
            | MapRunRecord::ChildrenEnded { execution_arn, .. } => execution_arn,
        }
    }
}

/// Encodes a Map Run record.
pub fn encode_map_run(record: &MapRunRecord) -> Result<Vec<u8>, Error> {
    postcard::to_extend(record, vec![MAP_RUN_FORMAT_VERSION]).map_err(|e| Error::Encode {
        what: "map run record",
        reason: e,
    })
}

/// Decodes a Map Run record of this build or an older one.
pub fn decode_map_run(bytes: &[u8]) -> Result<MapRunRecord, ReadError> {
    let (&version, body) = bytes
        .split_first()
        .ok_or(ReadError::Damaged(Damage::Empty {
            format: MAP_RUN_FORMAT.name,
        }))?;
    MAP_RUN_FORMAT.check(version)?;
    decode_map_run_body(version, body)
}

/// The one place that reads each Map Run version into today's [`MapRunRecord`]. Version 1 is
/// today's type.
fn decode_map_run_body(version: u8, body: &[u8]) -> Result<MapRunRecord, ReadError> {
    match version {
        1 => {
            let (record, rest): (MapRunRecord, &[u8]) = postcard::take_from_bytes(body)
                .map_err(|e| ReadError::Damaged(Damage::Postcard(e)))?;
            if !rest.is_empty() {
                return Err(ReadError::Damaged(Damage::TrailingBytes {
                    count: rest.len(),
                }));
            }
            Ok(record)
        }
        found => Err(ReadError::Damaged(Damage::NoDecoder {
            format: MAP_RUN_FORMAT.name,
            found,
        })),
    }
}

/// What the store knows of one Map Run.
#[derive(Debug, Clone, PartialEq)]
pub struct MapRunEntry {
    /// The execution whose Map state started it.
    pub execution_arn: Arc<str>,
    /// When it started, ms since the epoch (`None`: no `Opened` record was read).
    pub start_ms: Option<u64>,
    /// The latest recorded settings (`None`: neither opened nor updated in this log).
    pub settings: Option<MapRunSettings>,
    /// The LSNs of its `ChildrenEnded` records, in log order.
    pub(crate) ends: Vec<Lsn>,
}

impl MapRunEntry {
    /// How many `ChildrenEnded` records the run has.
    pub fn ends_record_count(&self) -> usize {
        self.ends.len()
    }
}

/// The Map Runs of the log, by ARN.
#[derive(Debug, Default, Clone)]
pub(crate) struct MapRunIndex {
    pub(crate) runs: HashMap<Arc<str>, MapRunEntry>,
}

impl MapRunIndex {
    /// Applies one record at (current) LSN `lsn`.
    pub(crate) fn apply(&mut self, lsn: Lsn, record: MapRunRecord) {
        let entry = self
            .runs
            .entry(Arc::from(record.map_run_arn()))
            .or_insert_with(|| MapRunEntry {
                execution_arn: Arc::from(record.execution_arn()),
                start_ms: None,
                settings: None,
                ends: Vec::new(),
            });
        match record {
            MapRunRecord::Opened {
                start_ms, settings, ..
            } => {
                entry.start_ms = Some(start_ms);
                // An update recorded before (an older open lost) stays the latest.
                entry.settings.get_or_insert(settings);
            }
            MapRunRecord::Updated { settings, .. } => entry.settings = Some(settings),
            MapRunRecord::ChildrenEnded { .. } => entry.ends.push(lsn),
        }
    }

    /// Forgets the runs of the parents `gone` says are gone.
    pub(crate) fn forget_parents(&mut self, gone: impl Fn(&str) -> bool) {
        self.runs.retain(|_, entry| !gone(&entry.execution_arn));
    }

    /// Follows a compaction's LSN mapping.
    pub(crate) fn remap(&mut self, mapping: &HashMap<Lsn, Lsn>) {
        for entry in self.runs.values_mut() {
            for lsn in &mut entry.ends {
                if let Some(new) = mapping.get(lsn) {
                    *lsn = *new;
                }
            }
        }
    }
}

impl Store {
    /// Appends one Map Run record and indexes it. `synced`: returns once it is durable;
    /// otherwise once it is written, and the next synced append (or [`Store::sync_unsynced`])
    /// makes it durable. A crash before that loses it, which only means what it records happens
    /// again (an EXPRESS child's end: the child runs again).
    pub fn append_map_run(&self, record: MapRunRecord, synced: bool) -> Result<(), Error> {
        use std::sync::atomic::Ordering;
        let bytes = encode_map_run(&record)?;
        let lsn = if synced {
            self.log.append_batch(&[(KIND_MAP_RUN, bytes.as_slice())])?
        } else {
            let lsn = self.log.append(
                &[(KIND_MAP_RUN, bytes.as_slice())],
                super::Durability::Unsynced,
            )?;
            self.unsynced_lsn.fetch_max(lsn.0, Ordering::AcqRel);
            lsn
        };
        self.index.write().map_runs.apply(lsn, record);
        Ok(())
    }

    /// What the log records of a Map Run (`None`: no record of it).
    pub fn map_run(&self, map_run_arn: &str) -> Option<MapRunEntry> {
        self.index.read().map_runs.runs.get(map_run_arn).cloned()
    }

    /// The `position`th `ChildrenEnded` record of the run (in log order: 0 is the first), with
    /// the redrive count it was written at; `None` past the last. One record is read per call
    /// (a caller walks a run of any size holding one record). Syncs the log first if the
    /// record may not be durable yet.
    pub fn map_run_children_ended(
        &self,
        map_run_arn: &str,
        position: usize,
    ) -> Result<Option<(u32, Vec<ChildEnd>)>, Error> {
        let _reading = self.reads.read();
        let lsn = match self.index.read().map_runs.runs.get(map_run_arn) {
            Some(entry) => match entry.ends.get(position) {
                Some(lsn) => *lsn,
                None => return Ok(None),
            },
            None => return Ok(None),
        };
        self.sync_unsynced_upto(lsn)?;
        let (kind, payload) = self.log.read(lsn)?.ok_or_else(|| Error::MissingRecord {
            lsn: lsn.0,
            execution_arn: map_run_arn.to_string(),
        })?;
        let decoded = match kind {
            KIND_MAP_RUN => decode_map_run(&payload),
            _ => Err(ReadError::Damaged(Damage::NoDecoder {
                format: MAP_RUN_FORMAT.name,
                found: kind,
            })),
        };
        match decoded {
            Ok(MapRunRecord::ChildrenEnded {
                map_run_arn: found,
                redrive_count,
                ends,
                ..
            }) if found == map_run_arn => Ok(Some((redrive_count, ends))),
            Ok(other) => Err(Error::ForeignRecord {
                lsn: lsn.0,
                execution_arn: map_run_arn.to_string(),
                found: other.map_run_arn().to_string(),
            }),
            Err(error) => Err(Error::Damaged {
                execution_arn: map_run_arn.to_string(),
                lsn: lsn.0,
                reason: super::DamageReason::Record(match error {
                    ReadError::Damaged(damage) => damage,
                    ReadError::Newer(newer) => Damage::NoDecoder {
                        format: MAP_RUN_FORMAT.name,
                        found: newer.found,
                    },
                }),
            }),
        }
    }
}

/// One labelled sample of every record variant and child status (the golden samples of
/// `formats.rs`).
#[cfg(test)]
pub(crate) fn samples() -> Vec<(String, Vec<u8>)> {
    records()
        .into_iter()
        .map(|(label, record)| (label, encode_map_run(&record).expect("a sample encodes")))
        .collect()
}

#[cfg(test)]
pub(crate) fn records() -> Vec<(String, MapRunRecord)> {
    let settings = MapRunSettings {
        max_concurrency: 10,
        tolerated_failure_count: Some(2),
        tolerated_failure_percentage: Some(12.5),
    };
    let end = |child_index: u64, status: ChildEndStatus| ChildEnd {
        child_index,
        item_count: 1,
        status,
        execution_arn: format!("sample-child-{child_index}"),
        input: Some(r#"{"item":1}"#.into()),
        output: (status == ChildEndStatus::Succeeded).then(|| "2".into()),
        error: (status == ChildEndStatus::Failed).then(|| "States.TaskFailed".into()),
        cause: (status == ChildEndStatus::Failed).then(|| "sample-cause".into()),
        start_ms: 1_704_067_200_000,
        stop_ms: 1_704_067_200_005,
    };
    vec![
        (
            "Opened".into(),
            MapRunRecord::Opened {
                map_run_arn: "sample-map-run".into(),
                execution_arn: "sample-execution".into(),
                start_ms: 1_704_067_200_000,
                settings,
            },
        ),
        (
            "Updated".into(),
            MapRunRecord::Updated {
                map_run_arn: "sample-map-run".into(),
                execution_arn: "sample-execution".into(),
                settings: MapRunSettings {
                    max_concurrency: 0,
                    tolerated_failure_count: None,
                    tolerated_failure_percentage: None,
                },
                updated_ms: 1_704_067_200_001,
            },
        ),
        (
            "ChildrenEnded".into(),
            MapRunRecord::ChildrenEnded {
                map_run_arn: "sample-map-run".into(),
                execution_arn: "sample-execution".into(),
                redrive_count: 1,
                ends: vec![
                    end(0, ChildEndStatus::Succeeded),
                    end(1, ChildEndStatus::Failed),
                    end(2, ChildEndStatus::TimedOut),
                    end(3, ChildEndStatus::Aborted),
                ],
            },
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MemoryLog, Store};

    #[test]
    fn every_sample_round_trips_and_damage_is_refused() {
        for (label, record) in records() {
            let bytes = encode_map_run(&record).expect("encodes");
            assert_eq!(decode_map_run(&bytes).expect(&label), record, "{label}");
            let mut trailing = bytes.clone();
            trailing.push(0);
            assert!(matches!(
                decode_map_run(&trailing),
                Err(ReadError::Damaged(Damage::TrailingBytes { count: 1 }))
            ));
            let mut newer = bytes.clone();
            newer[0] = MAP_RUN_FORMAT_VERSION + 1;
            assert!(matches!(decode_map_run(&newer), Err(ReadError::Newer(_))));
        }
        assert!(matches!(
            decode_map_run(&[]),
            Err(ReadError::Damaged(Damage::Empty { .. }))
        ));
    }

    fn ended(map_run_arn: &str, index: u64) -> MapRunRecord {
        let (_, MapRunRecord::ChildrenEnded { mut ends, .. }) = records().remove(2) else {
            unreachable!("the third sample is ChildrenEnded")
        };
        ends.truncate(1);
        ends[0].child_index = index;
        MapRunRecord::ChildrenEnded {
            map_run_arn: map_run_arn.into(),
            execution_arn: "parent".into(),
            redrive_count: 0,
            ends,
        }
    }

    #[test]
    fn the_index_is_rebuilt_on_open_with_the_latest_settings_and_every_end() {
        let log = Arc::new(MemoryLog::new());
        let store = Store::open(log.clone()).expect("opens");
        let (_, opened) = records().remove(0);
        let MapRunRecord::Opened { settings, .. } = opened.clone() else {
            unreachable!()
        };
        let opened = match opened {
            MapRunRecord::Opened {
                start_ms, settings, ..
            } => MapRunRecord::Opened {
                map_run_arn: "run".into(),
                execution_arn: "parent".into(),
                start_ms,
                settings,
            },
            _ => unreachable!(),
        };
        store.append_map_run(opened, true).expect("appends");
        store
            .append_map_run(ended("run", 4), false)
            .expect("appends");
        let updated = MapRunSettings {
            max_concurrency: 3,
            ..settings
        };
        store
            .append_map_run(
                MapRunRecord::Updated {
                    map_run_arn: "run".into(),
                    execution_arn: "parent".into(),
                    settings: updated,
                    updated_ms: 9,
                },
                true,
            )
            .expect("appends");
        store
            .append_map_run(ended("run", 7), false)
            .expect("appends");
        store
            .append_map_run(ended("other", 1), false)
            .expect("appends");
        store.sync_unsynced().expect("syncs");
        drop(store);
        let store = Store::open(log).expect("reopens");
        let entry = store.map_run("run").expect("indexed");
        assert_eq!(&*entry.execution_arn, "parent");
        assert_eq!(entry.start_ms, Some(1_704_067_200_000));
        assert_eq!(entry.settings, Some(updated));
        assert_eq!(entry.ends_record_count(), 2);
        let mut seen = Vec::new();
        let mut position = 0;
        while let Some((_, ends)) = store
            .map_run_children_ended("run", position)
            .expect("reads")
        {
            seen.extend(ends.iter().map(|e| e.child_index));
            position += 1;
        }
        assert_eq!(seen, vec![4, 7]);
        assert!(store.map_run("missing").is_none());
    }
}
