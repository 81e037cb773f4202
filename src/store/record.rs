//! record: the store's record kinds in the log and the encoding of the ones it owns.
//!
//! Layout of every payload: one format-version byte, then postcard (wire format frozen at 1.0).
//! Event batches use `history::encoding` (its own version byte); state machine records use
//! [`MACHINE_FORMAT_VERSION`]; catalog records (activities, tags, redrive client tokens) use
//! [`CATALOG_FORMAT_VERSION`]. Invariants: `decode(encode(r)) == r`; a wrong version, trailing
//! bytes or damage is a typed error. Field order is the wire format: append fields only, and
//! bump the version for anything else. Must not: do I/O.

use serde::{Deserialize, Serialize};

use super::Error;

/// Record kind of a batch of one execution's events (`history::encoding::EventBatch`).
pub const KIND_EVENTS: u8 = 1;
/// Record kind of a state machine creation ([`MachineRecord::Created`]).
pub const KIND_MACHINE: u8 = 2;

/// Record kind of a change to the catalog: activities, tags and redrive client tokens
/// ([`CatalogRecord`]).
pub const KIND_CATALOG: u8 = 3;

/// The format version of catalog records this build writes and reads.
pub const CATALOG_FORMAT_VERSION: u8 = 1;

/// The format version of state machine records this build writes and reads.
pub const MACHINE_FORMAT_VERSION: u8 = 1;

/// The format version of the envelope of event batch records this build writes and reads.
pub const BATCH_ENVELOPE_VERSION: u8 = 1;

/// What the index needs from an event batch, stored in front of it so that `open` rebuilds the
/// index without decoding the events (their payloads are JSON text).
///
/// Record layout: `[BATCH_ENVELOPE_VERSION] ++ postcard(BatchHeader) ++ history::encoding bytes`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchHeader {
    /// The execution the events belong to.
    pub execution_arn: String,
    /// The id of the batch's first event.
    pub first_event_id: u32,
    /// The id of the batch's last event.
    pub last_event_id: u32,
    /// Present when the batch starts the execution: its machine and start time.
    pub started: Option<StartedHeader>,
    /// The status the batch leaves the execution in, when it changes it, and when.
    pub status: Option<(super::ExecutionStatus, u64)>,
}

/// The start of an execution, as the index needs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StartedHeader {
    /// The machine's ARN.
    pub state_machine_arn: String,
    /// When the execution started, ms since the epoch.
    pub start_ms: u64,
}

/// The borrowed twin of [`BatchHeader`], for writing: postcard encodes `&str` as `String`, so
/// it writes the same bytes without copying the ARNs (checked by the tests below).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct BatchHeaderRef<'a> {
    /// The execution the events belong to.
    pub execution_arn: &'a str,
    /// The id of the batch's first event.
    pub first_event_id: u32,
    /// The id of the batch's last event.
    pub last_event_id: u32,
    /// Present when the batch starts the execution.
    pub started: Option<StartedHeaderRef<'a>>,
    /// The status the batch leaves the execution in, when it changes it, and when.
    pub status: Option<(super::ExecutionStatus, u64)>,
}

/// The borrowed twin of [`StartedHeader`].
#[derive(Debug, Clone, Copy, Serialize)]
pub struct StartedHeaderRef<'a> {
    /// The machine's ARN.
    pub state_machine_arn: &'a str,
    /// When the execution started, ms since the epoch.
    pub start_ms: u64,
}

impl BatchHeader {
    /// The borrowed form of this header.
    pub fn borrowed(&self) -> BatchHeaderRef<'_> {
        BatchHeaderRef {
            execution_arn: &self.execution_arn,
            first_event_id: self.first_event_id,
            last_event_id: self.last_event_id,
            started: self.started.as_ref().map(|s| StartedHeaderRef {
                state_machine_arn: &s.state_machine_arn,
                start_ms: s.start_ms,
            }),
            status: self.status,
        }
    }
}

/// Encodes an event batch record: the envelope version, the header, then the history bytes.
#[cfg(test)]
pub fn encode_batch(header: &BatchHeader, history_bytes: &[u8]) -> Result<Vec<u8>, Error> {
    let mut bytes = Vec::new();
    encode_batch_head_into(&header.borrowed(), &mut bytes)?;
    bytes.extend_from_slice(history_bytes);
    Ok(bytes)
}

/// Appends the envelope version and the header of an event batch record to `out` (the history
/// bytes follow): the allocation-free form of [`encode_batch`] for a reused buffer.
pub fn encode_batch_head_into(header: &BatchHeaderRef<'_>, out: &mut Vec<u8>) -> Result<(), Error> {
    out.push(BATCH_ENVELOPE_VERSION);
    let taken = std::mem::take(out);
    *out = postcard::to_extend(header, taken).map_err(|e| Error::Encode {
        what: "event batch header",
        reason: e.to_string(),
    })?;
    Ok(())
}

/// Splits an event batch record into its header and the history bytes that follow it.
pub fn decode_batch_header(bytes: &[u8]) -> Result<(BatchHeader, &[u8]), String> {
    let (&version, body) = bytes
        .split_first()
        .ok_or_else(|| "empty record (no format version byte)".to_string())?;
    if version != BATCH_ENVELOPE_VERSION {
        return Err(format!(
            "envelope format version {version}, this build reads {BATCH_ENVELOPE_VERSION}"
        ));
    }
    let (header, rest): (BatchHeader, &[u8]) =
        postcard::take_from_bytes(body).map_err(|e| e.to_string())?;
    if header.last_event_id < header.first_event_id {
        return Err(format!(
            "header ids run backwards ({}..{})",
            header.first_event_id, header.last_event_id
        ));
    }
    Ok((header, rest))
}

/// A record of the store read as far as `open` reads it: machines and catalog records whole,
/// event batches only their header.
pub(crate) enum Decoded {
    /// A state machine record.
    Machine(MachineRecord),
    /// The header of an event batch.
    Batch(BatchHeader),
    /// A catalog record.
    Catalog(CatalogRecord),
}

/// Why a record does not read.
pub(crate) enum Undecodable {
    /// A kind this build does not know (a newer build's log).
    UnknownKind,
    /// The bytes do not decode as their kind.
    Damaged {
        /// The execution the record names, where that much of it reads.
        execution_arn: Option<String>,
        /// What the decoder reported.
        reason: String,
    },
}

/// Reads a record of `kind` as `Store::open` does (an event batch's header only).
pub(crate) fn decode(kind: u8, payload: &[u8]) -> Result<Decoded, Undecodable> {
    let damaged = |reason: String| Undecodable::Damaged {
        execution_arn: None,
        reason,
    };
    match kind {
        KIND_MACHINE => decode_machine(payload)
            .map(Decoded::Machine)
            .map_err(damaged),
        KIND_CATALOG => decode_catalog(payload)
            .map(Decoded::Catalog)
            .map_err(damaged),
        KIND_EVENTS => match decode_batch_header(payload) {
            Ok((header, _)) => Ok(Decoded::Batch(header)),
            Err(reason) => Err(Undecodable::Damaged {
                execution_arn: batch_execution_arn(payload),
                reason,
            }),
        },
        _ => Err(Undecodable::UnknownKind),
    }
}

/// The execution ARN at the front of an event batch record whose header does not read whole
/// (it is the header's first field), if that much reads.
fn batch_execution_arn(payload: &[u8]) -> Option<String> {
    let (&version, body) = payload.split_first()?;
    if version != BATCH_ENVELOPE_VERSION {
        return None;
    }
    postcard::take_from_bytes::<String>(body)
        .ok()
        .map(|(arn, _)| arn)
}

/// What [`decode_record`] found in one record of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordCheck {
    /// The record reads whole: for an event batch, its header and every event, which agree.
    Readable {
        /// The execution an event batch belongs to (`None` for other kinds).
        execution_arn: Option<String>,
    },
    /// A record kind this build does not know.
    UnknownKind,
    /// The record does not read as its kind (its checksum held: a software bug).
    Damaged {
        /// The execution it belongs to, where that much of it reads.
        execution_arn: Option<String>,
        /// What the decoder reported.
        reason: String,
    },
}

/// Reads one record of the store's log whole, as a history read would (`statelog wal verify`
/// checks every record with it): the same decoders the store uses, nothing copied.
pub fn decode_record(kind: u8, payload: &[u8]) -> RecordCheck {
    match decode(kind, payload) {
        Err(Undecodable::UnknownKind) => RecordCheck::UnknownKind,
        Err(Undecodable::Damaged {
            execution_arn,
            reason,
        }) => RecordCheck::Damaged {
            execution_arn,
            reason,
        },
        Ok(Decoded::Machine(_) | Decoded::Catalog(_)) => RecordCheck::Readable {
            execution_arn: None,
        },
        Ok(Decoded::Batch(header)) => {
            let check = check_batch_events(&header, payload);
            let execution_arn = Some(header.execution_arn);
            match check {
                Ok(()) => RecordCheck::Readable { execution_arn },
                Err(reason) => RecordCheck::Damaged {
                    execution_arn,
                    reason,
                },
            }
        }
    }
}

/// Decodes the events behind an event batch's header and checks they agree with it.
fn check_batch_events(header: &BatchHeader, payload: &[u8]) -> Result<(), String> {
    let (_, history_bytes) = decode_batch_header(payload)?;
    let batch = crate::history::encoding::decode(history_bytes).map_err(|e| e.to_string())?;
    if batch.execution_arn != header.execution_arn {
        return Err(format!(
            "the events belong to {}, the header names {}",
            batch.execution_arn, header.execution_arn
        ));
    }
    let first = batch.events.first().map(|e| e.id.0);
    let last = batch.events.last().map(|e| e.id.0);
    if first != Some(header.first_event_id) || last != Some(header.last_event_id) {
        return Err(format!(
            "header says events {}..={} but the batch holds {first:?}..={last:?}",
            header.first_event_id, header.last_event_id
        ));
    }
    Ok(())
}

/// A change to the set of state machines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum MachineRecord {
    /// A state machine was created.
    Created {
        /// Its name.
        name: String,
        /// Its definition text, as given.
        definition: String,
        /// The role its executions run as.
        role_arn: String,
        /// When, in ms since the epoch.
        created_ms: u64,
    },
    /// A state machine was deleted (its running executions go on).
    Deleted {
        /// Its name.
        name: String,
        /// When, in ms since the epoch.
        deleted_ms: u64,
    },
    /// A live state machine got a new definition and role (both stored whole): executions
    /// started after this record run it; those started before keep theirs.
    Updated {
        /// Its name.
        name: String,
        /// The definition text from now on.
        definition: String,
        /// The role from now on.
        role_arn: String,
        /// When, in ms since the epoch.
        updated_ms: u64,
    },
}

/// A change to the catalog: what statelog keeps besides histories and state machines.
///
/// Field and variant order is the wire format (append only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum CatalogRecord {
    /// An activity was created.
    ActivityCreated {
        /// Its name (unique in the log's namespace).
        name: String,
        /// When, in ms since the epoch.
        created_ms: u64,
    },
    /// An activity was deleted (its tags go with it).
    ActivityDeleted {
        /// Its name.
        name: String,
        /// When, in ms since the epoch.
        deleted_ms: u64,
    },
    /// The whole tag set of a resource after a change (empty: no tags). The latest record of a
    /// resource wins.
    TagsSet {
        /// The state machine's or activity's ARN.
        resource_arn: String,
        /// `(key, value)` pairs, keys unique, in key order.
        tags: Vec<(String, String)>,
    },
    /// A redrive made with a client token, so a repeat of the token answers it again.
    Redriven {
        /// The execution redriven.
        execution_arn: String,
        /// The caller's idempotency token.
        client_token: String,
        /// When it was redriven, ms since the epoch.
        redrive_ms: u64,
        /// The execution's redrive count after it.
        redrive_count: u32,
    },
}

/// Encodes a catalog record as `[CATALOG_FORMAT_VERSION] ++ postcard(record)`.
pub fn encode_catalog(record: &CatalogRecord) -> Result<Vec<u8>, Error> {
    let mut bytes = vec![CATALOG_FORMAT_VERSION];
    let body = postcard::to_allocvec(record).map_err(|e| Error::Encode {
        what: "catalog record",
        reason: e.to_string(),
    })?;
    bytes.extend_from_slice(&body);
    Ok(bytes)
}

/// Decodes a record written by [`encode_catalog`].
pub fn decode_catalog(bytes: &[u8]) -> Result<CatalogRecord, String> {
    let (&version, body) = bytes
        .split_first()
        .ok_or_else(|| "empty record (no format version byte)".to_string())?;
    if version != CATALOG_FORMAT_VERSION {
        return Err(format!(
            "catalog format version {version}, this build reads {CATALOG_FORMAT_VERSION}"
        ));
    }
    let (record, rest): (CatalogRecord, &[u8]) =
        postcard::take_from_bytes(body).map_err(|e| e.to_string())?;
    if !rest.is_empty() {
        return Err(format!("{} trailing bytes", rest.len()));
    }
    Ok(record)
}

/// Encodes a machine record as `[MACHINE_FORMAT_VERSION] ++ postcard(record)`.
pub fn encode_machine(record: &MachineRecord) -> Result<Vec<u8>, Error> {
    let mut bytes = vec![MACHINE_FORMAT_VERSION];
    let body = postcard::to_allocvec(record).map_err(|e| Error::Encode {
        what: "state machine record",
        reason: e.to_string(),
    })?;
    bytes.extend_from_slice(&body);
    Ok(bytes)
}

/// Decodes a record written by [`encode_machine`].
pub fn decode_machine(bytes: &[u8]) -> Result<MachineRecord, String> {
    let (&version, body) = bytes
        .split_first()
        .ok_or_else(|| "empty record (no format version byte)".to_string())?;
    if version != MACHINE_FORMAT_VERSION {
        return Err(format!(
            "format version {version}, this build reads {MACHINE_FORMAT_VERSION}"
        ));
    }
    let (record, rest): (MachineRecord, &[u8]) =
        postcard::take_from_bytes(body).map_err(|e| e.to_string())?;
    if !rest.is_empty() {
        return Err(format!("{} trailing bytes", rest.len()));
    }
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_headers_round_trip_and_reject_damage() {
        let header = BatchHeader {
            execution_arn: "arn:x".into(),
            first_event_id: 1,
            last_event_id: 4,
            started: Some(StartedHeader {
                state_machine_arn: "arn:m".into(),
                start_ms: 9,
            }),
            status: Some((crate::store::ExecutionStatus::Succeeded, 10)),
        };
        let bytes = encode_batch(&header, b"tail").expect("encodes");
        let (back, rest) = decode_batch_header(&bytes).expect("decodes");
        assert_eq!(back, header);
        assert_eq!(rest, b"tail");
        // The borrowed twin writes exactly the owned header's bytes, with and without a start.
        let mut owned = vec![BATCH_ENVELOPE_VERSION];
        owned.extend(postcard::to_allocvec(&header).expect("encodes"));
        let mut borrowed = Vec::new();
        encode_batch_head_into(&header.borrowed(), &mut borrowed).expect("encodes");
        assert_eq!(borrowed, owned);
        let later = BatchHeader {
            started: None,
            status: None,
            ..header.clone()
        };
        let mut owned = vec![BATCH_ENVELOPE_VERSION];
        owned.extend(postcard::to_allocvec(&later).expect("encodes"));
        let mut borrowed = vec![0xAA];
        encode_batch_head_into(&later.borrowed(), &mut borrowed).expect("encodes");
        assert_eq!(borrowed[0], 0xAA, "appends after what the buffer holds");
        assert_eq!(&borrowed[1..], owned.as_slice());
        let mut other = bytes.clone();
        other[0] = 7;
        assert!(decode_batch_header(&other).is_err());
        assert!(decode_batch_header(&bytes[..3]).is_err());
        assert!(decode_batch_header(&[]).is_err());
    }

    #[test]
    fn machine_records_round_trip_and_reject_damage() {
        let created = MachineRecord::Created {
            name: "orders".into(),
            definition: r#"{"StartAt":"A","States":{"A":{"Type":"Succeed"}}}"#.into(),
            role_arn: "arn:aws:iam::000000000000:role/r".into(),
            created_ms: 17,
        };
        let deleted = MachineRecord::Deleted {
            name: "orders".into(),
            deleted_ms: 18,
        };
        let updated = MachineRecord::Updated {
            name: "orders".into(),
            definition: r#"{"StartAt":"B","States":{"B":{"Type":"Succeed"}}}"#.into(),
            role_arn: "arn:aws:iam::000000000000:role/s".into(),
            updated_ms: 19,
        };
        for record in [created, deleted, updated] {
            let bytes = encode_machine(&record).expect("encodes");
            assert_eq!(bytes[0], MACHINE_FORMAT_VERSION);
            assert_eq!(decode_machine(&bytes).expect("decodes"), record);
            let mut longer = bytes.clone();
            longer.push(0);
            assert!(decode_machine(&longer)
                .expect_err("refused")
                .contains("trailing"));
            let mut other_version = bytes.clone();
            other_version[0] = 9;
            assert!(decode_machine(&other_version)
                .expect_err("refused")
                .contains("version 9"));
        }
        assert!(decode_machine(&[]).is_err());
        assert!(decode_machine(&[MACHINE_FORMAT_VERSION, 7]).is_err());
    }

    #[test]
    fn machine_records_written_before_updates_existed_still_decode() {
        // Variant 0 (`Created`) and 1 (`Deleted`) keep their tags: appending `Updated` moved
        // nothing. These bytes are what the format wrote before `Updated` was added.
        let deleted = [MACHINE_FORMAT_VERSION, 1, 1, b'a', 18];
        assert_eq!(
            decode_machine(&deleted).expect("decodes"),
            MachineRecord::Deleted {
                name: "a".into(),
                deleted_ms: 18
            }
        );
    }

    #[test]
    fn catalog_records_round_trip_and_reject_damage() {
        let records = [
            CatalogRecord::ActivityCreated {
                name: "work".into(),
                created_ms: 1,
            },
            CatalogRecord::ActivityDeleted {
                name: "work".into(),
                deleted_ms: 2,
            },
            CatalogRecord::TagsSet {
                resource_arn: "arn:aws:states:us-east-1:000000000000:activity:work".into(),
                tags: vec![("team".into(), "a".into()), ("x".into(), String::new())],
            },
            CatalogRecord::Redriven {
                execution_arn: "arn:x".into(),
                client_token: "t-1".into(),
                redrive_ms: 3,
                redrive_count: 1,
            },
        ];
        for record in records {
            let bytes = encode_catalog(&record).expect("encodes");
            assert_eq!(bytes[0], CATALOG_FORMAT_VERSION);
            assert_eq!(decode_catalog(&bytes).expect("decodes"), record);
            let mut longer = bytes.clone();
            longer.push(0);
            assert!(decode_catalog(&longer)
                .expect_err("refused")
                .contains("trailing"));
            let mut other_version = bytes.clone();
            other_version[0] = 9;
            assert!(decode_catalog(&other_version)
                .expect_err("refused")
                .contains("version 9"));
            assert!(decode_catalog(&bytes[..bytes.len() - 1]).is_err());
        }
        assert!(decode_catalog(&[]).is_err());
        assert!(decode_catalog(&[CATALOG_FORMAT_VERSION, 9]).is_err());
    }
}
