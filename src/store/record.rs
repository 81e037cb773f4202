//! record: the store's record kinds in the log and the encoding of the ones it owns.
//!
//! Layout of every payload: one format-version byte, then postcard (wire format frozen at 1.0).
//! Event batches use `history::encoding` (its own version byte); state machine records use
//! [`MACHINE_FORMAT_VERSION`]. Invariants: `decode(encode(r)) == r`; a wrong version, trailing
//! bytes or damage is a typed error. Field order is the wire format: append fields only, and
//! bump the version for anything else. Must not: do I/O.

use serde::{Deserialize, Serialize};

use super::Error;

/// Record kind of a batch of one execution's events (`history::encoding::EventBatch`).
pub const KIND_EVENTS: u8 = 1;
/// Record kind of a state machine creation ([`MachineRecord::Created`]).
pub const KIND_MACHINE: u8 = 2;

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

/// Encodes an event batch record: the envelope version, the header, then the history bytes.
pub fn encode_batch(header: &BatchHeader, history_bytes: &[u8]) -> Result<Vec<u8>, Error> {
    let mut bytes = vec![BATCH_ENVELOPE_VERSION];
    let head = postcard::to_allocvec(header).map_err(|e| Error::Encode {
        what: "event batch header",
        reason: e.to_string(),
    })?;
    bytes.reserve(head.len() + history_bytes.len());
    bytes.extend_from_slice(&head);
    bytes.extend_from_slice(history_bytes);
    Ok(bytes)
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
        for record in [created, deleted] {
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
}
