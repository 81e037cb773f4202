//! encoding: the compact, versioned binary form of an event batch, as the store writes it into
//! one WAL record.
//!
//! Layout: one format-version byte followed by the postcard encoding of [`EventBatch`]
//! (postcard's wire format is frozen at 1.0). A record names its execution, so one WAL holds
//! every execution interleaved. This build writes [`FORMAT_VERSION`] and reads every version in
//! [`READ_VERSIONS`].
//!
//! Versions. postcard encodes fields and variant indexes by position, so the Rust types are the
//! format: a field added to an event, or a variant inserted before the last one, changes the bytes
//! of every record and would misread the old ones. Such a change bumps [`FORMAT_VERSION`],
//! freezes the previous types in a module `vN` beside this one, and adds one arm to
//! [`decode_body`], the one place that maps a version to today's types (upcasting).
//! `docs/wal-format.md` ("Record versions") lists the versions and the steps;
//! `statelog-store`'s `formats.rs` fails CI when the bytes change without a bump.
//!
//! Invariants: `decode(encode(b)) == b`; a record from a newer version is
//! [`Error::NewerVersion`], one from a version never written is [`Error::UnsupportedVersion`];
//! trailing bytes or damaged content are typed errors, never a panic. Must not: do I/O.

use serde::{Deserialize, Serialize};

use super::{Error, HistoryEvent};

mod v1;
mod v2;

/// The format version this build writes: the newest it reads.
pub const FORMAT_VERSION: u8 = 3;

/// The oldest format version this build reads.
pub const OLDEST_READ_VERSION: u8 = 1;

/// Every format version this build reads, oldest first.
pub const READ_VERSIONS: std::ops::RangeInclusive<u8> = OLDEST_READ_VERSION..=FORMAT_VERSION;

const _: () = assert!(OLDEST_READ_VERSION >= 1 && OLDEST_READ_VERSION <= FORMAT_VERSION);

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
    let body = postcard::to_allocvec(batch).map_err(|cause| Error::Encode { cause })?;
    bytes.extend_from_slice(&body);
    Ok(bytes)
}

/// Decodes a record written by [`encode`] of this build or of any version in [`READ_VERSIONS`].
pub fn decode(bytes: &[u8]) -> Result<EventBatch, Error> {
    let (&version, body) = bytes.split_first().ok_or(Error::EmptyRecord)?;
    check_version(version)?;
    decode_body(version, body)
}

/// The execution and the first and last events of a record written by [`encode`] (the same
/// event twice when it holds one; `None` when it holds none), as [`decode`] would give them.
/// The events between them are decoded without parsing their payloads (read past, then
/// dropped): a whole record need not be built to answer for its ends. Their bytes are still
/// walked, so a damaged record is an error here as in [`decode`], except a payload text that is
/// not JSON between the ends (the log's checksum held, so only a wrong encoder wrote one).
pub fn decode_ends(bytes: &[u8]) -> Result<(String, Option<(HistoryEvent, HistoryEvent)>), Error> {
    let (&version, body) = bytes.split_first().ok_or(Error::EmptyRecord)?;
    check_version(version)?;
    match version {
        1 => take_whole_with(Ends::<v1::HistoryEvent>::new(), body)
            .map(|(arn, ends)| (arn, ends.map(|(first, last)| (first.into(), last.into())))),
        2 => take_whole_with(Ends::<v2::HistoryEvent>::new(), body)
            .map(|(arn, ends)| (arn, ends.map(|(first, last)| (first.into(), last.into())))),
        3 => take_whole_with(Ends::<HistoryEvent>::new(), body),
        // `check_version` admits only the versions above.
        found => Err(Error::UnsupportedVersion {
            found,
            supported: FORMAT_VERSION,
        }),
    }
}

/// [`EventBatch`] read as its execution and its first and last events, of the event type `E`
/// of the record's version.
struct Ends<E>(std::marker::PhantomData<E>);

impl<E> Ends<E> {
    fn new() -> Self {
        Ends(std::marker::PhantomData)
    }
}

impl<'de, E: serde::de::DeserializeOwned + Clone> serde::de::DeserializeSeed<'de> for Ends<E> {
    type Value = (String, Option<(E, E)>);

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_struct("EventBatch", &["execution_arn", "events"], self)
    }
}

impl<'de, E: serde::de::DeserializeOwned + Clone> serde::de::Visitor<'de> for Ends<E> {
    type Value = (String, Option<(E, E)>);

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("an event batch")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        use serde::de::Error as _;
        let execution_arn: String = seq
            .next_element()?
            .ok_or_else(|| A::Error::invalid_length(0, &self))?;
        let ends = seq
            .next_element_seed(EndEvents::<E>(std::marker::PhantomData))?
            .ok_or_else(|| A::Error::invalid_length(1, &self))?;
        Ok((execution_arn, ends))
    }
}

/// The events of a batch, keeping the first and the last.
struct EndEvents<E>(std::marker::PhantomData<E>);

impl<'de, E: serde::de::DeserializeOwned + Clone> serde::de::DeserializeSeed<'de> for EndEvents<E> {
    type Value = Option<(E, E)>;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de, E: serde::de::DeserializeOwned + Clone> serde::de::Visitor<'de> for EndEvents<E> {
    type Value = Option<(E, E)>;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("a sequence of events")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        // postcard knows the count: all but the last are skimmed after the first. Without a
        // count every event is decoded in full.
        let count = seq.size_hint();
        let Some(first) = seq.next_element::<E>()? else {
            return Ok(None);
        };
        let mut last = None;
        let mut index = 1usize;
        loop {
            let is_last = count.is_some_and(|count| index + 1 == count);
            let next = if count.is_some() && !is_last {
                super::json_text::skimming(|| seq.next_element::<E>())?
            } else {
                seq.next_element::<E>()?
            };
            let Some(event) = next else { break };
            if count.is_none() || is_last {
                last = Some(event);
            }
            index += 1;
        }
        let last = last.unwrap_or_else(|| first.clone());
        Ok(Some((first, last)))
    }
}

/// Where a record's format version stands against the versions a build reads,
/// `oldest..=newest`. The one version rule of every record format in the store's log: this
/// module's [`check_version`] and the store's `Format::check` both apply it, each with its own
/// error type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionStanding {
    /// Within `oldest..=newest`: this build reads it.
    Readable,
    /// Past `newest`: a newer build wrote it. Never read as today's format (it would misread).
    Newer,
    /// Before `oldest`: no build that reads this format wrote it, or support for it was dropped.
    Older,
}

impl VersionStanding {
    /// Where `found` stands against `oldest..=newest`.
    pub fn of(found: u8, oldest: u8, newest: u8) -> Self {
        assert!(oldest <= newest, "a format reads some version");
        if found > newest {
            VersionStanding::Newer
        } else if found < oldest {
            VersionStanding::Older
        } else {
            VersionStanding::Readable
        }
    }
}

/// Whether this build reads history records of `version`: [`Error::NewerVersion`] for a version
/// past [`FORMAT_VERSION`] (a newer statelog wrote the record), [`Error::UnsupportedVersion`]
/// for one before [`OLDEST_READ_VERSION`]. [`decode`] applies it; the store applies the same
/// rule ([`VersionStanding`], with these bounds) to the events' version byte when it opens a
/// log, before any batch is decoded, and reports it in its own error type.
pub fn check_version(version: u8) -> Result<(), Error> {
    match VersionStanding::of(version, OLDEST_READ_VERSION, FORMAT_VERSION) {
        VersionStanding::Readable => Ok(()),
        VersionStanding::Newer => Err(Error::NewerVersion {
            found: version,
            newest: FORMAT_VERSION,
        }),
        VersionStanding::Older => Err(Error::UnsupportedVersion {
            found: version,
            supported: FORMAT_VERSION,
        }),
    }
}

/// The one place that reads each version into today's types: an arm per version in
/// [`READ_VERSIONS`]. Version 3 is today's types; version 2 had no
/// `ExecutionStarted::map_run_arn`, version 1 neither, nor `StateExited::assigned`.
fn decode_body(version: u8, body: &[u8]) -> Result<EventBatch, Error> {
    match version {
        1 => take_whole::<v1::EventBatch>(body).map(EventBatch::from),
        2 => take_whole::<v2::EventBatch>(body).map(EventBatch::from),
        3 => take_whole(body),
        // `check_version` admits only the versions above.
        found => Err(Error::UnsupportedVersion {
            found,
            supported: FORMAT_VERSION,
        }),
    }
}

/// Decodes `body` as one `T` with nothing after it.
fn take_whole<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, Error> {
    take_whole_with(std::marker::PhantomData::<T>, body)
}

/// Decodes `body` with `seed`, nothing after what it reads.
fn take_whole_with<'de, S: serde::de::DeserializeSeed<'de>>(
    seed: S,
    body: &'de [u8],
) -> Result<S::Value, Error> {
    let mut deserializer = postcard::Deserializer::from_bytes(body);
    let value = seed
        .deserialize(&mut deserializer)
        .map_err(|cause| Error::Decode { cause })?;
    let rest = deserializer
        .finalize()
        .map_err(|cause| Error::Decode { cause })?;
    if !rest.is_empty() {
        return Err(Error::TrailingBytes {
            trailing_bytes: rest.len(),
        });
    }
    Ok(value)
}

/// Payload values for the tests of this crate and of the crates above (the store's record
/// round trip): behind the `test-support` feature, never part of the normal API.
#[cfg(any(test, feature = "test-support"))]
pub mod test_values {
    use serde_json::json;

    /// `value` wrapped `depth` times, alternating objects and arrays.
    pub fn nested(mut value: serde_json::Value, depth: usize) -> serde_json::Value {
        for level in 0..depth {
            value = if level % 2 == 0 {
                json!({ "k": value })
            } else {
                json!([value])
            };
        }
        value
    }

    /// Any JSON scalar, the extremes included.
    pub fn scalar() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            any::<u64>().prop_map(serde_json::Value::from),
            any::<f64>()
                .prop_filter("JSON numbers are finite", |f| f.is_finite())
                .prop_map(serde_json::Value::from),
            prop::sample::select(vec![
                json!(1e308),
                json!(-1e308),
                json!(f64::MIN_POSITIVE),
                json!(5e-324),
                json!(-0.0),
                json!(u64::MAX),
                json!(i64::MIN),
                json!(0.1),
                json!(""),
                json!("\u{1F600}\u{10FFFF}\u{0}\"\\\n\u{7f}\u{2028}"),
            ]),
            any::<String>().prop_map(serde_json::Value::from),
        ]
    }

    /// Any JSON value: scalars, then arrays and objects of them, wide or nested.
    pub fn any_value() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        scalar().prop_recursive(6, 96, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
                prop::collection::vec((any::<String>(), inner), 0..6)
                    .prop_map(|pairs| serde_json::Value::Object(pairs.into_iter().collect())),
            ]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::test_values::{any_value, nested, scalar};
    use super::*;
    use crate::history::*;
    use serde_json::json;

    fn sample() -> EventBatch {
        let events = vec![
            HistoryEvent {
                id: EventId(1),
                previous_event_id: 0,
                timestamp_ms: 1_700_000_000_123,
                details: EventDetails::ExecutionStarted(Box::new(ExecutionStarted {
                    input: json!({"a": [1, 2.5, "x", null, {"b": true}]}).into(),
                    input_truncated: false,
                    role_arn: "arn:aws:iam::000000000000:role/r".into(),
                    state_machine_alias_arn: None,
                    state_machine_version_arn: None,
                    execution_arn: "arn:aws:states:us-east-1:000000000000:execution:sm:e".into(),
                    state_machine_arn: "arn:aws:states:us-east-1:000000000000:stateMachine:sm"
                        .into(),
                    input_text: Some("{\"a\": [1, 2.5, \"x\", null, {\"b\": true}]}".into()),
                    map_run_arn: None,
                })),
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
                details: EventDetails::TaskFailed(Box::new(TaskError {
                    resource_type: "lambda".into(),
                    resource: "invoke".into(),
                    error: Some("E".into()),
                    cause: None,
                })),
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
        bytes[0] = FORMAT_VERSION + 1;
        let newer = decode(&bytes).expect_err("a newer version is refused");
        assert!(
            matches!(newer, Error::NewerVersion { found, newest: FORMAT_VERSION } if found == FORMAT_VERSION + 1),
            "{newer:?}"
        );
        assert!(newer.to_string().contains("newer statelog"), "{newer}");
        bytes[0] = 0;
        assert!(matches!(
            decode(&bytes),
            Err(Error::UnsupportedVersion { found: 0, .. })
        ));
    }

    /// `decode_ends` gives what `decode` gives of a batch's ends, for every length of batch
    /// (none, one, two, more events; payloads of every kind between the ends), and refuses
    /// what `decode` refuses.
    #[test]
    fn the_ends_of_a_batch_read_as_decode_reads_them() {
        let mut batches = vec![sample(), carrying(&json!({"n": [1, {"k": "v"}]}))];
        for count in 0..4 {
            let mut batch = sample();
            batch.events.truncate(count);
            batches.push(batch);
        }
        for batch in batches {
            let bytes = encode(&batch).expect("encodes");
            let (execution_arn, ends) = decode_ends(&bytes).expect("decodes");
            let decoded = decode(&bytes).expect("decodes");
            assert_eq!(execution_arn, decoded.execution_arn);
            let expected = decoded
                .events
                .first()
                .cloned()
                .zip(decoded.events.last().cloned());
            assert_eq!(ends, expected, "{} events", decoded.events.len());
            for len in 0..bytes.len() {
                assert!(decode_ends(&bytes[..len]).is_err(), "prefix of {len} bytes");
            }
            let mut longer = bytes.clone();
            longer.push(0);
            assert!(matches!(
                decode_ends(&longer),
                Err(Error::TrailingBytes { trailing_bytes: 1 })
            ));
            longer.pop();
            longer[0] = FORMAT_VERSION + 1;
            assert!(matches!(
                decode_ends(&longer),
                Err(Error::NewerVersion { .. })
            ));
        }
        // Skimming ends with the read: the payloads of a full decode are parsed again.
        let batch = carrying(&json!({"after": true}));
        let bytes = encode(&batch).expect("encodes");
        decode_ends(&bytes).expect("decodes");
        assert_eq!(decode(&bytes).expect("decodes"), batch);
    }

    #[test]
    fn a_version_stands_against_its_bounds() {
        assert_eq!(VersionStanding::of(2, 2, 4), VersionStanding::Readable);
        assert_eq!(VersionStanding::of(4, 2, 4), VersionStanding::Readable);
        assert_eq!(VersionStanding::of(5, 2, 4), VersionStanding::Newer);
        assert_eq!(VersionStanding::of(1, 2, 4), VersionStanding::Older);
        assert_eq!(VersionStanding::of(0, 1, 1), VersionStanding::Older);
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

    /// A batch carrying `value` in every kind of payload an event holds.
    fn carrying(value: &serde_json::Value) -> EventBatch {
        let payload = || Payload::new(value.clone());
        let details = vec![
            EventDetails::PassStateEntered(StateEntered {
                name: "S".into(),
                input: payload(),
                input_truncated: false,
            }),
            EventDetails::PassStateExited(StateExited {
                name: "S".into(),
                output: payload(),
                output_truncated: false,
                assigned: None,
            }),
            EventDetails::TaskScheduled(Box::new(TaskScheduled {
                resource_type: "lambda".into(),
                resource: "invoke".into(),
                region: "us-east-1".into(),
                parameters: value.clone(),
                timeout_in_seconds: None,
                heartbeat_in_seconds: None,
                task_credentials_role_arn: None,
                resource_arn: "arn:aws:states:::lambda:invoke".into(),
                task_token: None,
            })),
            EventDetails::TaskSucceeded(Box::new(TaskOutput {
                resource_type: "lambda".into(),
                resource: "invoke".into(),
                output: value.clone(),
                output_truncated: false,
            })),
            EventDetails::ExecutionSucceeded(Output {
                output: payload(),
                output_truncated: false,
            }),
        ];
        let events = details
            .into_iter()
            .enumerate()
            .map(|(index, details)| HistoryEvent {
                id: EventId(index as u32 + 1),
                previous_event_id: index as u32,
                timestamp_ms: 1,
                details,
                scope: vec![],
                timer: None,
            })
            .collect();
        EventBatch {
            execution_arn: "exec".into(),
            events,
        }
    }

    #[test]
    fn payloads_nested_past_the_json_reader_default_round_trip() {
        // The issue's record: an input 127 levels deep (the most the reader accepts), wrapped
        // three levels deeper by a Pass state's Parameters. Before, it encoded but never
        // decoded again.
        let input = nested(json!("leaf"), crate::limits::JSON_READER_DEPTH_DEFAULT - 1);
        let output = json!({"a": {"b": {"c": input}}});
        for value in [
            output,
            nested(json!(1), crate::limits::PAYLOAD_JSON_DEPTH_MAX),
        ] {
            let batch = carrying(&value);
            let bytes = encode(&batch).expect("encodes");
            assert_eq!(decode(&bytes).expect("decodes"), batch);
        }
    }

    /// A batch of entered and exited events, each carrying `payloads[i]` (shared or not).
    fn pass_chain_batch(payloads: &[Payload]) -> EventBatch {
        let mut events = Vec::new();
        for (index, payload) in payloads.iter().enumerate() {
            let name = crate::history::StateName::from(format!("S{index}"));
            events.push(EventDetails::PassStateEntered(StateEntered {
                name: name.clone(),
                input: payload.clone(),
                input_truncated: false,
            }));
            events.push(EventDetails::PassStateExited(StateExited {
                name,
                output: payload.clone(),
                output_truncated: false,
                assigned: None,
            }));
        }
        let events = events
            .into_iter()
            .enumerate()
            .map(|(index, details)| HistoryEvent {
                id: EventId(index as u32 + 1),
                previous_event_id: index as u32,
                timestamp_ms: 0,
                details,
                scope: Vec::new(),
                timer: None,
            })
            .collect();
        EventBatch {
            execution_arn: "e".into(),
            events,
        }
    }

    #[test]
    fn a_shared_payload_is_stored_as_the_same_text_as_its_copies() {
        // Payloads rendered once and remembered (`json_text::shared`) must give exactly the
        // bytes that rendering each copy gives.
        let small = Payload::new(serde_json::json!({"n": 1, "s": "x"}));
        let large = Payload::new(serde_json::json!({"big": "y".repeat(10_000)}));
        let shared = [
            small.clone(),
            small.clone(),
            large.clone(),
            small.clone(),
            large,
        ];
        let copies: Vec<Payload> = shared
            .iter()
            .map(|payload| Payload::new(serde_json::Value::clone(payload)))
            .collect();
        let shared_bytes = encode(&pass_chain_batch(&shared)).expect("encodes");
        let copied_bytes = encode(&pass_chain_batch(&copies)).expect("encodes");
        assert_eq!(shared_bytes, copied_bytes);
        assert_eq!(
            decode(&shared_bytes).expect("decodes"),
            pass_chain_batch(&shared)
        );
    }

    #[test]
    fn a_remembered_payload_is_never_taken_for_a_later_one() {
        // Many payloads, each dropped after its batch: a new payload may be allocated where an
        // old one was, and must still be written as itself.
        for round in 0..64u32 {
            let payload = Payload::new(serde_json::json!({ "round": round }));
            let batch = pass_chain_batch(&[payload]);
            let decoded = decode(&encode(&batch).expect("encodes")).expect("decodes");
            assert_eq!(decoded, batch, "round {round}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

        /// Whatever the interpreter can hold in a payload (any value within the depth limit,
        /// any unicode, any number) decodes back to itself.
        #[test]
        fn any_payload_round_trips(
            value in any_value(),
            depth in 0..=crate::limits::PAYLOAD_JSON_DEPTH_MAX,
        ) {
            let depth = depth.saturating_sub(crate::history::depth::depth_up_to(&value, usize::MAX));
            let value = nested(value, depth);
            let batch = carrying(&value);
            let bytes = encode(&batch).expect("encodes");
            proptest::prop_assert_eq!(decode(&bytes).expect("decodes"), batch);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(16))]
        /// A large payload (up to hundreds of KiB of text) round-trips too.
        #[test]
        fn large_payloads_round_trip(item in scalar(), count in 1usize..4096) {
            let value = serde_json::Value::from(vec![item; count]);
            let batch = carrying(&value);
            let bytes = encode(&batch).expect("encodes");
            proptest::prop_assert_eq!(decode(&bytes).expect("decodes"), batch);
        }
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..256)) {
            let _ = decode(&bytes);
        }
    }
}
