//! encoding: the compact, versioned binary form of an event batch, as the store writes it into
//! one WAL record.
//!
//! Layout: one format-version byte ([`FORMAT_VERSION`]) followed by the postcard encoding of
//! [`EventBatch`] (postcard's wire format is frozen at 1.0). A record names its execution, so one
//! WAL holds every execution interleaved.
//!
//! Invariants: `decode(encode(b)) == b`; a record with another version byte, trailing bytes or
//! damaged content is a typed [`Error`], never a panic. Must not: do I/O.

use serde::{Deserialize, Serialize};

use super::{Error, HistoryEvent};

/// The format version this build writes and reads.
pub const FORMAT_VERSION: u8 = 1;

/// The events one decision appended to one execution: the payload of one WAL record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventBatch {
    /// The execution the events belong to (its ARN).
    pub execution_arn: String,
    /// The events, in id order, dense.
    pub events: Vec<HistoryEvent>,
}

/// Encodes a batch as `[FORMAT_VERSION] ++ postcard(batch)`.
pub fn encode(batch: &EventBatch) -> Result<Vec<u8>, Error> {
    let mut bytes = vec![FORMAT_VERSION];
    let body = postcard::to_allocvec(batch).map_err(|e| Error::Encode {
        reason: e.to_string(),
    })?;
    bytes.extend_from_slice(&body);
    Ok(bytes)
}

/// Decodes a record written by [`encode`].
pub fn decode(bytes: &[u8]) -> Result<EventBatch, Error> {
    let (&version, body) = bytes.split_first().ok_or(Error::EmptyRecord)?;
    if version != FORMAT_VERSION {
        return Err(Error::UnsupportedVersion {
            found: version,
            supported: FORMAT_VERSION,
        });
    }
    let (batch, rest): (EventBatch, &[u8]) =
        postcard::take_from_bytes(body).map_err(|e| Error::Decode {
            reason: e.to_string(),
        })?;
    if !rest.is_empty() {
        return Err(Error::TrailingBytes {
            trailing_bytes: rest.len(),
        });
    }
    Ok(batch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::*;
    use serde_json::json;

    fn sample() -> EventBatch {
        let events = vec![
            HistoryEvent {
                id: EventId(1),
                previous_event_id: 0,
                timestamp_ms: 1_700_000_000_123,
                details: EventDetails::ExecutionStarted(ExecutionStarted {
                    input: json!({"a": [1, 2.5, "x", null, {"b": true}]}).into(),
                    input_truncated: false,
                    role_arn: "arn:aws:iam::000000000000:role/r".into(),
                    state_machine_alias_arn: None,
                    state_machine_version_arn: None,
                    execution_arn: "arn:aws:states:us-east-1:000000000000:execution:sm:e".into(),
                    state_machine_arn: "arn:aws:states:us-east-1:000000000000:stateMachine:sm"
                        .into(),
                    input_text: Some("{\"a\": [1, 2.5, \"x\", null, {\"b\": true}]}".into()),
                }),
                scope: vec![],
                timer: Some(TimerArm {
                    due_ms: 99,
                    owner: vec![],
                    purpose: TimerPurpose::ExecutionTimeout,
                }),
            },
            HistoryEvent {
                id: EventId(2),
                previous_event_id: 0,
                timestamp_ms: 1_700_000_000_124,
                details: EventDetails::TaskFailed(TaskError {
                    resource_type: "lambda".into(),
                    resource: "invoke".into(),
                    error: Some("E".into()),
                    cause: None,
                }),
                scope: vec![0, 3],
                timer: None,
            },
            HistoryEvent {
                id: EventId(3),
                previous_event_id: 2,
                timestamp_ms: 1_700_000_000_125,
                details: EventDetails::MapStateSucceeded,
                scope: vec![],
                timer: None,
            },
        ];
        EventBatch {
            execution_arn: "exec".into(),
            events,
        }
    }

    #[test]
    fn round_trips() {
        let batch = sample();
        let bytes = encode(&batch).expect("encodes");
        assert_eq!(bytes[0], FORMAT_VERSION);
        assert_eq!(decode(&bytes).expect("decodes"), batch);
    }

    #[test]
    fn rejects_other_versions_empty_and_trailing_bytes() {
        let mut bytes = encode(&sample()).expect("encodes");
        assert!(matches!(decode(&[]), Err(Error::EmptyRecord)));
        bytes.push(0);
        assert!(matches!(
            decode(&bytes),
            Err(Error::TrailingBytes { trailing_bytes: 1 })
        ));
        bytes.pop();
        bytes[0] = 7;
        assert!(matches!(
            decode(&bytes),
            Err(Error::UnsupportedVersion { found: 7, .. })
        ));
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let bytes = encode(&sample()).expect("encodes");
        for len in 0..bytes.len() {
            assert!(
                decode(&bytes[..len]).is_err(),
                "prefix of {len} bytes decoded"
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..256)) {
            let _ = decode(&bytes);
        }
    }
}
