//! encoding: the stored bytes of a batch of SWF events: a leading format version (`u16`,
//! little endian) and the events in postcard.
//!
//! Version log:
//! - 1: `Vec<Event>` in postcard; `Attributes` variants and enum values numbered in their
//!   declaration order in `events.rs` (appended only).
//!
//! Invariants: every batch this or an earlier version wrote decodes; a batch of a newer version
//! is a typed error ([`DecodeError::NewerVersion`]), never a misread; decoding consumes every
//! byte. Must not: panic on any input.

use crate::events::Event;

/// The format version this build writes.
pub const FORMAT_VERSION: u16 = 1;

/// Why a batch of events does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// Fewer bytes than the version prefix.
    #[error("SWF event batch of {size_bytes} bytes is shorter than its 2-byte version")]
    Truncated {
        /// The batch's size.
        size_bytes: usize,
    },
    /// Version 0 was never written.
    #[error("SWF event batch has version 0, which no statelog writes")]
    ZeroVersion,
    /// Written by a newer statelog.
    #[error("SWF event batch has format version {found}; this statelog reads up to {supported}")]
    NewerVersion {
        /// The batch's version.
        found: u16,
        /// The newest version this build reads.
        supported: u16,
    },
    /// The postcard body is corrupt.
    #[error("SWF event batch (version {version}) does not decode: {reason}")]
    Corrupt {
        /// The batch's version.
        version: u16,
        /// What postcard said.
        reason: String,
    },
    /// Bytes left over after the events.
    #[error("SWF event batch (version {version}) has {trailing_bytes} trailing bytes")]
    TrailingBytes {
        /// The batch's version.
        version: u16,
        /// How many.
        trailing_bytes: usize,
    },
}

/// The stored bytes of `events`.
pub fn encode_events(events: &[Event]) -> Vec<u8> {
    let mut bytes = FORMAT_VERSION.to_le_bytes().to_vec();
    // Events hold only strings, integers, enums and fixed arrays: postcard cannot fail on them
    // when writing to a growable vector.
    let body = postcard::to_allocvec(events).expect("SWF events always encode");
    bytes.extend_from_slice(&body);
    debug_assert_eq!(decode_events(&bytes).as_deref(), Ok(events));
    bytes
}

/// The events of stored bytes.
pub fn decode_events(bytes: &[u8]) -> Result<Vec<Event>, DecodeError> {
    let Some((prefix, body)) = bytes.split_first_chunk::<2>() else {
        return Err(DecodeError::Truncated {
            size_bytes: bytes.len(),
        });
    };
    let version = u16::from_le_bytes(*prefix);
    if version == 0 {
        return Err(DecodeError::ZeroVersion);
    }
    if version > FORMAT_VERSION {
        return Err(DecodeError::NewerVersion {
            found: version,
            supported: FORMAT_VERSION,
        });
    }
    let (events, rest) =
        postcard::take_from_bytes::<Vec<Event>>(body).map_err(|e| DecodeError::Corrupt {
            version,
            reason: e.to_string(),
        })?;
    if !rest.is_empty() {
        return Err(DecodeError::TrailingBytes {
            version,
            trailing_bytes: rest.len(),
        });
    }
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::samples;

    #[test]
    fn every_sample_round_trips() {
        let samples = samples();
        let bytes = encode_events(&samples);
        assert_eq!(&bytes[..2], &FORMAT_VERSION.to_le_bytes());
        assert_eq!(decode_events(&bytes), Ok(samples.clone()));
        for event in &samples {
            let one = encode_events(std::slice::from_ref(event));
            assert_eq!(decode_events(&one), Ok(vec![event.clone()]));
        }
        assert_eq!(decode_events(&encode_events(&[])), Ok(vec![]));
    }

    #[test]
    fn the_token_nonce_is_stored() {
        let samples = samples();
        let decoded = decode_events(&encode_events(&samples)).expect("decodes");
        let nonces: Vec<[u8; 16]> = decoded
            .iter()
            .filter_map(|e| match &e.attributes {
                crate::events::Attributes::DecisionTaskStarted(a) => Some(a.token_nonce),
                crate::events::Attributes::ActivityTaskStarted(a) => Some(a.token_nonce),
                _ => None,
            })
            .collect();
        assert_eq!(nonces, [[0xA5; 16], [0x5A; 16]]);
    }

    #[test]
    fn bad_bytes_are_typed_errors() {
        assert_eq!(
            decode_events(&[1]),
            Err(DecodeError::Truncated { size_bytes: 1 })
        );
        assert_eq!(decode_events(&[0, 0, 0]), Err(DecodeError::ZeroVersion));
        assert_eq!(
            decode_events(&[2, 0, 0]),
            Err(DecodeError::NewerVersion {
                found: 2,
                supported: 1
            })
        );
        let mut bytes = encode_events(&samples());
        bytes.push(0);
        assert_eq!(
            decode_events(&bytes),
            Err(DecodeError::TrailingBytes {
                version: 1,
                trailing_bytes: 1
            })
        );
        let bytes = encode_events(&samples());
        // Every truncation of a valid batch is an error, never a panic.
        for cut in 2..bytes.len() {
            assert!(decode_events(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        // Flipped bytes never panic (they may still decode to other events).
        for at in 2..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[at] ^= 0xFF;
            // A batch that still decodes folds or is refused, never panics.
            if let Ok(events) = decode_events(&flipped) {
                let key = crate::fold::RunKey {
                    domain: "d".into(),
                    workflow_id: "w".into(),
                    run_id: "r".into(),
                };
                let _ = crate::fold::Execution::fold(key, &events);
            }
        }
    }
}
