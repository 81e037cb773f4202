//! record: the store's record kinds in the log and the encoding of the ones it owns.
//!
//! Layout of every payload: one format-version byte, then postcard (wire format frozen at 1.0).
//! Event batches use `history::encoding` (its own version byte) behind an envelope
//! ([`BATCH_ENVELOPE_VERSION`]); state machine records use [`MACHINE_FORMAT_VERSION`]; catalog
//! records (activities, tags, redrive client tokens) use [`CATALOG_FORMAT_VERSION`]. [`FORMATS`]
//! lists them with the versions this build reads.
//!
//! Versions. postcard encodes by position, so the types are the format: any change to the bytes
//! a record kind can hold (a field, a variant, even one appended) bumps its version, so that an
//! older build refuses the new records by version instead of misreading them or calling them
//! damaged. Each kind's decoder dispatches on the version in one function (`decode_*_body`), the
//! one place where an older version is upcast to today's types. `docs/wal-format.md` ("Record
//! versions") lists the versions and the steps; `formats.rs` fails CI on a change without one.
//!
//! Invariants: `decode(encode(r)) == r`; a version past the newest is [`ReadError::Newer`]
//! (never a misread); trailing bytes or damage is [`ReadError::Damaged`]. Must not: do I/O.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use statelog_core::history::encoding::VersionStanding;

use super::Error;

/// Record kind of a batch of one execution's events (`history::encoding::EventBatch`).
pub const KIND_EVENTS: u8 = 1;
/// Record kind of a state machine creation ([`MachineRecord::Created`]).
pub const KIND_MACHINE: u8 = 2;

/// Record kind of a change to the catalog: activities, tags, redrive client tokens, state
/// machine versions and aliases ([`CatalogRecord`]).
pub const KIND_CATALOG: u8 = 3;

/// The format version of catalog records this build writes: the newest it reads. Version 2
/// appended the versions and aliases of state machines (`VersionPublished`, `VersionDeleted`,
/// `AliasSet`, `AliasDeleted`); version 1 reads through [`v1::CatalogRecord`].
pub const CATALOG_FORMAT_VERSION: u8 = 2;

/// The format version of state machine records this build writes: the newest it reads.
pub const MACHINE_FORMAT_VERSION: u8 = 2;

/// The format version of the envelope of event batch records this build writes: the newest it
/// reads.
pub const BATCH_ENVELOPE_VERSION: u8 = 1;

/// One record format as this build knows it: the versions it reads and the one it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Format {
    /// Its name in errors and in `docs/wal-format.md`.
    pub name: &'static str,
    /// The record kind that carries it.
    pub kind: u8,
    /// The oldest version this build reads.
    pub oldest: u8,
    /// The version this build writes, the newest it reads.
    pub newest: u8,
}

impl Format {
    /// Whether this build reads `version` of the format: [`ReadError::Newer`] past the newest
    /// (a newer statelog wrote it), [`ReadError::Damaged`] before the oldest. The rule is the
    /// core's [`VersionStanding`], which `history::encoding::check_version` applies too: for
    /// [`HISTORY_FORMAT`] (its bounds are the core's) the two agree, this one naming the format
    /// in the store's error.
    pub fn check(&self, version: u8) -> Result<(), ReadError> {
        match VersionStanding::of(version, self.oldest, self.newest) {
            VersionStanding::Readable => Ok(()),
            VersionStanding::Newer => Err(ReadError::Newer(NewerVersion {
                format: self.name,
                found: version,
                newest: self.newest,
            })),
            VersionStanding::Older => Err(ReadError::Damaged(Damage::OlderVersion {
                format: self.name,
                found: version,
                oldest: self.oldest,
                newest: self.newest,
            })),
        }
    }
}

/// The envelope of an event batch record ([`BatchHeader`]).
pub const BATCH_ENVELOPE_FORMAT: Format = Format {
    name: "event batch envelope",
    kind: KIND_EVENTS,
    oldest: 1,
    newest: BATCH_ENVELOPE_VERSION,
};

/// The events inside an event batch record (`history::encoding`).
pub const HISTORY_FORMAT: Format = Format {
    name: "history",
    kind: KIND_EVENTS,
    oldest: statelog_core::history::encoding::OLDEST_READ_VERSION,
    newest: statelog_core::history::encoding::FORMAT_VERSION,
};

/// State machine records ([`MachineRecord`]).
pub const MACHINE_FORMAT: Format = Format {
    name: "state machine",
    kind: KIND_MACHINE,
    oldest: 1,
    newest: MACHINE_FORMAT_VERSION,
};

/// Catalog records ([`CatalogRecord`]).
pub const CATALOG_FORMAT: Format = Format {
    name: "catalog",
    kind: KIND_CATALOG,
    oldest: 1,
    newest: CATALOG_FORMAT_VERSION,
};

/// Every record format of the store's log.
pub const FORMATS: [Format; 6] = [
    BATCH_ENVELOPE_FORMAT,
    HISTORY_FORMAT,
    MACHINE_FORMAT,
    CATALOG_FORMAT,
    super::swf::SWF_FORMAT,
    super::map_runs::MAP_RUN_FORMAT,
];

const _: () = {
    let mut i = 0;
    while i < FORMATS.len() {
        assert!(FORMATS[i].oldest >= 1 && FORMATS[i].oldest <= FORMATS[i].newest);
        i += 1;
    }
};

/// A record a newer statelog wrote: its format version is past the newest this build reads.
/// The log is not this build's to open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewerVersion {
    /// The format ([`Format::name`]).
    pub format: &'static str,
    /// The version found.
    pub found: u8,
    /// The newest version this build reads.
    pub newest: u8,
}

impl std::fmt::Display for NewerVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} format version {}, written by a newer statelog: this build reads versions up to {}",
            self.format, self.found, self.newest
        )
    }
}

/// Why a record of a known kind does not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// A newer statelog wrote it.
    Newer(NewerVersion),
    /// The bytes do not read as their kind.
    Damaged(Damage),
}

/// What is wrong with the bytes of a record that does not read as its kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Damage {
    /// The body does not decode.
    #[error("{0}")]
    Postcard(postcard::Error),
    /// Bytes follow the decoded body.
    #[error("{count} trailing bytes")]
    TrailingBytes {
        /// How many.
        count: usize,
    },
    /// The record has no bytes at all.
    #[error("empty {format} record (no format version byte)")]
    Empty {
        /// The record's format.
        format: &'static str,
    },
    /// A version older than any this build reads (such a byte was never written).
    #[error("{format} format version {found}, which this build does not read (it reads versions {oldest} to {newest})")]
    OlderVersion {
        /// The record's format.
        format: &'static str,
        /// The version found.
        found: u8,
        /// The oldest version this build reads.
        oldest: u8,
        /// The newest version this build reads.
        newest: u8,
    },
    /// A version the format accepts but no decoder arm handles (a bug this build's tests catch).
    #[error("{format} format version {found} has no decoder in this build")]
    NoDecoder {
        /// The record's format.
        format: &'static str,
        /// The version found.
        found: u8,
    },
    /// An event batch header whose last event id is below its first.
    #[error("header ids run backwards ({first_event_id}..{last_event_id})")]
    IdsBackwards {
        /// The header's first event id.
        first_event_id: u32,
        /// The header's last event id.
        last_event_id: u32,
    },
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Newer(newer) => newer.fmt(f),
            ReadError::Damaged(damage) => damage.fmt(f),
        }
    }
}

/// Decodes `body` as one `T` with nothing after it.
fn take_whole<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ReadError> {
    let (value, rest): (T, &[u8]) =
        postcard::take_from_bytes(body).map_err(|e| ReadError::Damaged(Damage::Postcard(e)))?;
    if !rest.is_empty() {
        return Err(ReadError::Damaged(Damage::TrailingBytes {
            count: rest.len(),
        }));
    }
    Ok(value)
}

/// Splits a record into its version byte, checked against `format`, and the body.
fn split_version<'a>(format: &Format, bytes: &'a [u8]) -> Result<(u8, &'a [u8]), ReadError> {
    let (&version, body) = bytes
        .split_first()
        .ok_or(ReadError::Damaged(Damage::Empty {
            format: format.name,
        }))?;
    format.check(version)?;
    Ok((version, body))
}

/// The error of a dispatch arm that [`Format::check`] keeps out: the format's constants and
/// its decoder's arms disagree (a bug this build's tests catch).
fn unreadable(format: &Format, found: u8) -> ReadError {
    ReadError::Damaged(Damage::NoDecoder {
        format: format.name,
        found,
    })
}

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
    postcard_append(header, out).map_err(|e| Error::Encode {
        what: "event batch header",
        reason: e,
    })
}

/// Appends `value`'s postcard bytes to `out`: the same bytes as `postcard::to_extend`, written
/// with plain pushes (postcard's own `Extend` flavor went through a generic `extend` per piece:
/// a start's batch encoding took 8% more instructions with it).
pub(crate) fn postcard_append<T: serde::Serialize + ?Sized>(
    value: &T,
    out: &mut Vec<u8>,
) -> postcard::Result<()> {
    postcard::serialize_with_flavor(value, Append(out))
}

/// The postcard flavor of [`postcard_append`].
struct Append<'a>(&'a mut Vec<u8>);

impl postcard::ser_flavors::Flavor for Append<'_> {
    type Output = ();

    #[inline]
    fn try_push(&mut self, byte: u8) -> postcard::Result<()> {
        self.0.push(byte);
        Ok(())
    }

    #[inline]
    fn try_extend(&mut self, bytes: &[u8]) -> postcard::Result<()> {
        self.0.extend_from_slice(bytes);
        Ok(())
    }

    fn finalize(self) -> postcard::Result<()> {
        Ok(())
    }
}

/// Splits an event batch record into its header and the history bytes that follow it.
pub fn decode_batch_header(bytes: &[u8]) -> Result<(BatchHeader, &[u8]), ReadError> {
    let (version, body) = split_version(&BATCH_ENVELOPE_FORMAT, bytes)?;
    let (header, rest) = decode_batch_header_body(version, body)?;
    if header.last_event_id < header.first_event_id {
        return Err(ReadError::Damaged(Damage::IdsBackwards {
            first_event_id: header.first_event_id,
            last_event_id: header.last_event_id,
        }));
    }
    Ok((header, rest))
}

/// The one place that reads each envelope version into today's [`BatchHeader`]. Version 1 is
/// today's type.
fn decode_batch_header_body(version: u8, body: &[u8]) -> Result<(BatchHeader, &[u8]), ReadError> {
    match version {
        1 => postcard::take_from_bytes(body).map_err(|e| ReadError::Damaged(Damage::Postcard(e))),
        found => Err(unreadable(&BATCH_ENVELOPE_FORMAT, found)),
    }
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
    /// An SWF record (for an event batch, its header only).
    Swf(Box<super::swf::SwfRecord>),
    /// A Map Run record.
    MapRun(Box<super::map_runs::MapRunRecord>),
}

/// Why a record does not read.
pub(crate) enum Undecodable {
    /// A kind this build does not know (a newer build's log).
    UnknownKind,
    /// A version of its format newer than this build reads (a newer build's log).
    Newer(NewerVersion),
    /// The bytes do not decode as their kind.
    Damaged {
        /// The execution the record names, where that much of it reads.
        execution_arn: Option<String>,
        /// What the decoder reported.
        reason: DamageReason,
    },
}

/// Reads a record of `kind` as `Store::open` does: an event batch's header only, and the version
/// byte of its events, so that a log a newer build wrote is refused when it opens.
pub(crate) fn decode(kind: u8, payload: &[u8]) -> Result<Decoded, Undecodable> {
    let undecodable = |error: ReadError, execution_arn: Option<String>| match error {
        ReadError::Newer(newer) => Undecodable::Newer(newer),
        ReadError::Damaged(damage) => Undecodable::Damaged {
            execution_arn,
            reason: DamageReason::Record(damage),
        },
    };
    match kind {
        KIND_MACHINE => decode_machine(payload)
            .map(Decoded::Machine)
            .map_err(|e| undecodable(e, None)),
        KIND_CATALOG => decode_catalog(payload)
            .map(Decoded::Catalog)
            .map_err(|e| undecodable(e, None)),
        super::swf::KIND_SWF => super::swf::decode_swf(payload)
            .map(|(record, _)| Decoded::Swf(Box::new(record)))
            .map_err(|e| undecodable(e, None)),
        super::map_runs::KIND_MAP_RUN => super::map_runs::decode_map_run(payload)
            .map(|record| Decoded::MapRun(Box::new(record)))
            .map_err(|e| undecodable(e, None)),
        KIND_EVENTS => match decode_batch_header(payload) {
            Ok((header, history_bytes)) => {
                // An empty remainder is left to the full decode, which reports it as damage.
                match history_bytes.first().map(|&v| HISTORY_FORMAT.check(v)) {
                    Some(Err(error)) => Err(undecodable(error, Some(header.execution_arn))),
                    _ => Ok(Decoded::Batch(header)),
                }
            }
            Err(error) => Err(undecodable(error, batch_execution_arn(payload))),
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
    /// A version of its format newer than this build reads: a newer statelog wrote it.
    Newer(NewerVersion),
    /// The record does not read as its kind (its checksum held: a software bug).
    Damaged {
        /// The execution it belongs to, where that much of it reads.
        execution_arn: Option<String>,
        /// What the decoder reported.
        reason: DamageReason,
    },
}

/// Reads one record of the store's log whole, as a history read would (`statelog wal verify`
/// checks every record with it): the same decoders the store uses, nothing copied.
pub fn decode_record(kind: u8, payload: &[u8]) -> RecordCheck {
    match decode(kind, payload) {
        Err(Undecodable::UnknownKind) => RecordCheck::UnknownKind,
        Err(Undecodable::Newer(newer)) => RecordCheck::Newer(newer),
        Err(Undecodable::Damaged {
            execution_arn,
            reason,
        }) => RecordCheck::Damaged {
            execution_arn,
            reason,
        },
        Ok(Decoded::Machine(_) | Decoded::Catalog(_) | Decoded::Swf(_) | Decoded::MapRun(_)) => {
            RecordCheck::Readable {
                execution_arn: None,
            }
        }
        Ok(Decoded::Batch(header)) => {
            let check = check_batch_events(&header, payload);
            let execution_arn = Some(header.execution_arn);
            match check {
                Ok(()) => RecordCheck::Readable { execution_arn },
                Err(damage) => RecordCheck::Damaged {
                    execution_arn,
                    reason: damage,
                },
            }
        }
    }
}

/// Why a record of an execution does not read although the log's checksum held: the reason
/// [`crate::DamagedRecord`], [`crate::Error::Damaged`] and [`RecordCheck::Damaged`] carry.
///
/// Errors of other layers are held in an `Arc`: they are neither `Clone` nor comparable, and a
/// damage record is both. Two reasons holding such an error compare by its text.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum DamageReason {
    /// The bytes do not read as their kind.
    #[error("{0}")]
    Record(Damage),
    /// A newer statelog wrote part of the record (its events' format version).
    #[error("{0}")]
    Newer(NewerVersion),
    /// The events do not decode.
    #[error("{0}")]
    Events(Arc<statelog_core::history::Error>),
    /// The events name another execution than the header.
    #[error("the events belong to {events_arn}, the header names {header_arn}")]
    ForeignEvents {
        /// The execution the events name.
        events_arn: String,
        /// The execution the header names.
        header_arn: String,
    },
    /// The events name another execution than the one being folded.
    #[error("the events belong to {events_arn}")]
    FoldForeignEvents {
        /// The execution the events name.
        events_arn: String,
    },
    /// The events' ids are not the header's range.
    #[error("header says events {first_event_id}..={last_event_id} but the batch holds {found_first:?}..={found_last:?}")]
    EventIds {
        /// The header's first event id.
        first_event_id: u32,
        /// The header's last event id.
        last_event_id: u32,
        /// The batch's first event id (`None`: no events).
        found_first: Option<u32>,
        /// The batch's last event id.
        found_last: Option<u32>,
    },
    /// A batch that does not continue its execution's history as the index holds it.
    #[error("{0}")]
    Sequence(Arc<crate::Error>),
    /// The batch headers leave the execution open but its events close it.
    #[error("the batch headers leave it open but its events close it")]
    HeadersOpenEventsClosed,
    /// A caller's fold refused the events; the text is its error's (the type is the caller's).
    #[error("{0}")]
    Fold(Arc<str>),
}

impl PartialEq for DamageReason {
    fn eq(&self, other: &Self) -> bool {
        use DamageReason::*;
        match (self, other) {
            (Record(a), Record(b)) => a == b,
            (Newer(a), Newer(b)) => a == b,
            (Events(a), Events(b)) => a.to_string() == b.to_string(),
            (Sequence(a), Sequence(b)) => a.to_string() == b.to_string(),
            (Fold(a), Fold(b)) => a == b,
            (
                ForeignEvents {
                    events_arn: a,
                    header_arn: b,
                },
                ForeignEvents {
                    events_arn: c,
                    header_arn: d,
                },
            ) => a == c && b == d,
            (FoldForeignEvents { events_arn: a }, FoldForeignEvents { events_arn: b }) => a == b,
            (
                EventIds {
                    first_event_id: a,
                    last_event_id: b,
                    found_first: c,
                    found_last: d,
                },
                EventIds {
                    first_event_id: e,
                    last_event_id: f,
                    found_first: g,
                    found_last: h,
                },
            ) => (a, b, c, d) == (e, f, g, h),
            (HeadersOpenEventsClosed, HeadersOpenEventsClosed) => true,
            _ => false,
        }
    }
}

impl Eq for DamageReason {}

impl From<ReadError> for DamageReason {
    fn from(error: ReadError) -> Self {
        match error {
            ReadError::Newer(newer) => DamageReason::Newer(newer),
            ReadError::Damaged(damage) => DamageReason::Record(damage),
        }
    }
}

impl From<String> for DamageReason {
    /// A reason a caller gives as text (`Store::mark_damaged` took a `String` before).
    fn from(text: String) -> Self {
        DamageReason::Fold(Arc::from(text))
    }
}

/// Decodes the events behind an event batch's header and checks they agree with it.
fn check_batch_events(header: &BatchHeader, payload: &[u8]) -> Result<(), DamageReason> {
    let (_, history_bytes) = decode_batch_header(payload).map_err(DamageReason::from)?;
    let batch = statelog_core::history::encoding::decode(history_bytes)
        .map_err(|e| DamageReason::Events(Arc::new(e)))?;
    if batch.execution_arn != header.execution_arn {
        return Err(DamageReason::ForeignEvents {
            events_arn: batch.execution_arn,
            header_arn: header.execution_arn.clone(),
        });
    }
    let found_first = batch.events.first().map(|e| e.id.0);
    let found_last = batch.events.last().map(|e| e.id.0);
    if found_first != Some(header.first_event_id) || found_last != Some(header.last_event_id) {
        return Err(DamageReason::EventIds {
            first_event_id: header.first_event_id,
            last_event_id: header.last_event_id,
            found_first,
            found_last,
        });
    }
    Ok(())
}

/// The kind of a state machine (AWS's `type`), fixed at its creation: an update never changes
/// it.
///
/// Variant order is the wire format (append only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum MachineType {
    /// Durable executions: every event is in the log (`STANDARD`).
    #[default]
    Standard,
    /// Executions run in memory and write nothing to the log (`EXPRESS`).
    Express,
}

impl MachineType {
    /// The name AWS gives the type (`STANDARD`, `EXPRESS`).
    pub fn aws_name(self) -> &'static str {
        match self {
            MachineType::Standard => "STANDARD",
            MachineType::Express => "EXPRESS",
        }
    }

    /// The type AWS calls `name` (`STANDARD`, `EXPRESS`), if any.
    pub fn from_aws_name(name: &str) -> Option<Self> {
        match name {
            "STANDARD" => Some(MachineType::Standard),
            "EXPRESS" => Some(MachineType::Express),
            _ => None,
        }
    }
}

/// A change to the set of state machines.
///
/// Field and variant order is the wire format: a change bumps [`MACHINE_FORMAT_VERSION`].
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
        /// Its type (version 2 on; a version 1 record is [`MachineType::Standard`]).
        machine_type: MachineType,
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
    /// A version of a state machine was published: an immutable pointer to one revision.
    VersionPublished {
        /// The state machine's name.
        machine: String,
        /// Its number, from 1 per machine, never reused.
        number: u32,
        /// The original LSN of the revision's record (creation or update, see `Machine::lsn`).
        revision_lsn: u64,
        /// The version's description, if one was given.
        description: Option<String>,
        /// When, in ms since the epoch.
        created_ms: u64,
    },
    /// A version of a live state machine was deleted (its number is never used again).
    VersionDeleted {
        /// The state machine's name.
        machine: String,
        /// The version's number.
        number: u32,
        /// When, in ms since the epoch.
        deleted_ms: u64,
    },
    /// The whole state of an alias after its creation or an update. The latest record of an
    /// alias wins.
    AliasSet {
        /// The state machine's name.
        machine: String,
        /// The alias's name.
        name: String,
        /// Its description, if any.
        description: Option<String>,
        /// `(version number, weight)`: one or two entries, weights summing to 100.
        routing: Vec<(u32, u32)>,
        /// When it was created, ms since the epoch.
        created_ms: u64,
        /// When it was last updated, ms since the epoch (`None`: never).
        updated_ms: Option<u64>,
    },
    /// An alias was deleted.
    AliasDeleted {
        /// The state machine's name.
        machine: String,
        /// The alias's name.
        name: String,
        /// When, in ms since the epoch.
        deleted_ms: u64,
    },
}

/// Catalog format version 1, frozen: the types as they were, read into today's.
pub(crate) mod v1 {
    use serde::Deserialize;

    /// [`super::CatalogRecord`] as catalog format 1 wrote it (variant and field order are the
    /// format; never change them).
    #[derive(Debug, Deserialize)]
    pub(crate) enum CatalogRecord {
        ActivityCreated {
            name: String,
            created_ms: u64,
        },
        ActivityDeleted {
            name: String,
            deleted_ms: u64,
        },
        TagsSet {
            resource_arn: String,
            tags: Vec<(String, String)>,
        },
        Redriven {
            execution_arn: String,
            client_token: String,
            redrive_ms: u64,
            redrive_count: u32,
        },
    }

    impl From<CatalogRecord> for super::CatalogRecord {
        fn from(old: CatalogRecord) -> Self {
            match old {
                CatalogRecord::ActivityCreated { name, created_ms } => {
                    Self::ActivityCreated { name, created_ms }
                }
                CatalogRecord::ActivityDeleted { name, deleted_ms } => {
                    Self::ActivityDeleted { name, deleted_ms }
                }
                CatalogRecord::TagsSet { resource_arn, tags } => {
                    Self::TagsSet { resource_arn, tags }
                }
                CatalogRecord::Redriven {
                    execution_arn,
                    client_token,
                    redrive_ms,
                    redrive_count,
                } => Self::Redriven {
                    execution_arn,
                    client_token,
                    redrive_ms,
                    redrive_count,
                },
            }
        }
    }
}

/// Encodes a catalog record as `[CATALOG_FORMAT_VERSION] ++ postcard(record)`.
pub fn encode_catalog(record: &CatalogRecord) -> Result<Vec<u8>, Error> {
    let mut bytes = vec![CATALOG_FORMAT_VERSION];
    let body = postcard::to_allocvec(record).map_err(|e| Error::Encode {
        what: "catalog record",
        reason: e,
    })?;
    bytes.extend_from_slice(&body);
    Ok(bytes)
}

/// Decodes a record written by [`encode_catalog`] of this build or of an older one.
pub fn decode_catalog(bytes: &[u8]) -> Result<CatalogRecord, ReadError> {
    let (version, body) = split_version(&CATALOG_FORMAT, bytes)?;
    decode_catalog_body(version, body)
}

/// The one place that reads each catalog version into today's [`CatalogRecord`]. Version 2 is
/// today's type; version 1 (no versions or aliases) is upcast from its frozen copy.
fn decode_catalog_body(version: u8, body: &[u8]) -> Result<CatalogRecord, ReadError> {
    match version {
        1 => take_whole::<v1::CatalogRecord>(body).map(CatalogRecord::from),
        2 => take_whole(body),
        found => Err(unreadable(&CATALOG_FORMAT, found)),
    }
}

/// Encodes a machine record as `[MACHINE_FORMAT_VERSION] ++ postcard(record)`.
pub fn encode_machine(record: &MachineRecord) -> Result<Vec<u8>, Error> {
    let mut bytes = vec![MACHINE_FORMAT_VERSION];
    let body = postcard::to_allocvec(record).map_err(|e| Error::Encode {
        what: "state machine record",
        reason: e,
    })?;
    bytes.extend_from_slice(&body);
    Ok(bytes)
}

/// Decodes a record written by [`encode_machine`] of this build or of an older one.
pub fn decode_machine(bytes: &[u8]) -> Result<MachineRecord, ReadError> {
    let (version, body) = split_version(&MACHINE_FORMAT, bytes)?;
    decode_machine_body(version, body)
}

/// The one place that reads each state machine version into today's [`MachineRecord`].
/// Version 2 is today's type; version 1 (no machine type) upcasts to a STANDARD machine.
fn decode_machine_body(version: u8, body: &[u8]) -> Result<MachineRecord, ReadError> {
    match version {
        1 => take_whole::<machine_v1::MachineRecord>(body).map(machine_v1::upcast),
        2 => take_whole(body),
        found => Err(unreadable(&MACHINE_FORMAT, found)),
    }
}

/// State machine records as format version 1 wrote them: frozen, read only.
mod machine_v1 {
    use serde::Deserialize;

    use super::MachineType;

    /// Version 1's record: `Created` without the machine type.
    #[derive(Deserialize)]
    pub(super) enum MachineRecord {
        Created {
            name: String,
            definition: String,
            role_arn: String,
            created_ms: u64,
        },
        Deleted {
            name: String,
            deleted_ms: u64,
        },
        Updated {
            name: String,
            definition: String,
            role_arn: String,
            updated_ms: u64,
        },
    }

    /// Every version 1 machine was a STANDARD one (no other type could be created).
    pub(super) fn upcast(record: MachineRecord) -> super::MachineRecord {
        match record {
            MachineRecord::Created {
                name,
                definition,
                role_arn,
                created_ms,
            } => super::MachineRecord::Created {
                name,
                definition,
                role_arn,
                created_ms,
                machine_type: MachineType::Standard,
            },
            MachineRecord::Deleted { name, deleted_ms } => {
                super::MachineRecord::Deleted { name, deleted_ms }
            }
            MachineRecord::Updated {
                name,
                definition,
                role_arn,
                updated_ms,
            } => super::MachineRecord::Updated {
                name,
                definition,
                role_arn,
                updated_ms,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The store's check of the events' version byte (at open) and the core's (at decode)
    /// are one rule: they accept and refuse the same bytes, a newer one as newer.
    #[test]
    fn the_history_format_check_agrees_with_the_core_for_every_version() {
        use statelog_core::history::encoding::check_version;
        use statelog_core::history::Error as HistoryError;
        for version in u8::MIN..=u8::MAX {
            let store = HISTORY_FORMAT.check(version);
            let core = check_version(version);
            match (&store, &core) {
                (Ok(()), Ok(()))
                | (Err(ReadError::Newer(_)), Err(HistoryError::NewerVersion { .. }))
                | (
                    Err(ReadError::Damaged(Damage::OlderVersion { .. })),
                    Err(HistoryError::UnsupportedVersion { .. }),
                ) => {}
                _ => panic!("version {version}: store {store:?}, core {core:?}"),
            }
        }
    }

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
            status: Some((crate::ExecutionStatus::Succeeded, 10)),
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
            machine_type: MachineType::Express,
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
                .to_string()
                .contains("trailing"));
            let mut other_version = bytes.clone();
            other_version[0] = 9;
            assert_eq!(
                decode_machine(&other_version).expect_err("refused"),
                ReadError::Newer(NewerVersion {
                    format: "state machine",
                    found: 9,
                    newest: MACHINE_FORMAT_VERSION
                })
            );
            other_version[0] = 0;
            assert!(matches!(
                decode_machine(&other_version),
                Err(ReadError::Damaged(reason)) if reason.to_string().contains("version 0")
            ));
        }
        assert!(decode_machine(&[]).is_err());
        assert!(decode_machine(&[MACHINE_FORMAT_VERSION, 7]).is_err());
    }

    #[test]
    fn machine_records_written_before_updates_existed_still_decode() {
        // Variant 0 (`Created`) and 1 (`Deleted`) keep their tags: appending `Updated` moved
        // nothing. These bytes are what the format wrote before `Updated` was added.
        let deleted = [1, 1, 1, b'a', 18];
        assert_eq!(
            decode_machine(&deleted).expect("decodes"),
            MachineRecord::Deleted {
                name: "a".into(),
                deleted_ms: 18
            }
        );
    }

    /// A version 1 creation (no type) reads as a STANDARD machine; the same fields at version
    /// 2 carry the type after `created_ms`.
    #[test]
    fn a_version_1_machine_creation_upcasts_to_standard() {
        // Created { name: "a", definition: "d", role_arn: "r", created_ms: 5 }.
        let v1 = [1, 0, 1, b'a', 1, b'd', 1, b'r', 5];
        let standard = MachineRecord::Created {
            name: "a".into(),
            definition: "d".into(),
            role_arn: "r".into(),
            created_ms: 5,
            machine_type: MachineType::Standard,
        };
        assert_eq!(decode_machine(&v1).expect("decodes"), standard);
        let mut v2 = v1.to_vec();
        v2[0] = 2;
        v2.push(1);
        let express = MachineRecord::Created {
            name: "a".into(),
            definition: "d".into(),
            role_arn: "r".into(),
            created_ms: 5,
            machine_type: MachineType::Express,
        };
        assert_eq!(decode_machine(&v2).expect("decodes"), express);
        assert_eq!(encode_machine(&express).expect("encodes"), v2);
        // The version 1 bytes with a type byte are not a version 1 record.
        let mut longer = v1.to_vec();
        longer.push(1);
        assert!(decode_machine(&longer).is_err());
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
            CatalogRecord::VersionPublished {
                machine: "m".into(),
                number: 3,
                revision_lsn: 17,
                description: Some("d".into()),
                created_ms: 4,
            },
            CatalogRecord::VersionDeleted {
                machine: "m".into(),
                number: 3,
                deleted_ms: 5,
            },
            CatalogRecord::AliasSet {
                machine: "m".into(),
                name: "prod".into(),
                description: None,
                routing: vec![(1, 80), (3, 20)],
                created_ms: 6,
                updated_ms: Some(7),
            },
            CatalogRecord::AliasDeleted {
                machine: "m".into(),
                name: "prod".into(),
                deleted_ms: 8,
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
                .to_string()
                .contains("trailing"));
            let mut other_version = bytes.clone();
            other_version[0] = 9;
            let newer = decode_catalog(&other_version).expect_err("refused");
            assert!(
                matches!(newer, ReadError::Newer(NewerVersion { found: 9, .. })),
                "{newer:?}"
            );
            assert!(newer
                .to_string()
                .contains("version 9, written by a newer statelog"));
            assert!(decode_catalog(&bytes[..bytes.len() - 1]).is_err());
        }
        assert!(decode_catalog(&[]).is_err());
        assert!(decode_catalog(&[CATALOG_FORMAT_VERSION, 9]).is_err());
    }

    #[test]
    fn catalog_version_1_reads_its_variants_and_refuses_the_later_ones() {
        // Version 1 bytes of `ActivityDeleted { name: "a", deleted_ms: 18 }`.
        assert_eq!(
            decode_catalog(&[1, 1, 1, b'a', 18]).expect("decodes"),
            CatalogRecord::ActivityDeleted {
                name: "a".into(),
                deleted_ms: 18
            }
        );
        // Variant 5 (`VersionDeleted`) did not exist in version 1: damage, never a misread.
        let today = encode_catalog(&CatalogRecord::VersionDeleted {
            machine: "m".into(),
            number: 1,
            deleted_ms: 2,
        })
        .expect("encodes");
        let mut as_v1 = today.clone();
        as_v1[0] = 1;
        assert!(matches!(
            decode_catalog(&as_v1),
            Err(ReadError::Damaged(Damage::Postcard(_)))
        ));
        assert!(decode_catalog(&today).is_ok());
    }

    #[test]
    fn typed_damage_keeps_its_text() {
        assert_eq!(
            decode_machine(&[]).map(|_| ()),
            Err(ReadError::Damaged(Damage::Empty {
                format: MACHINE_FORMAT.name
            }))
        );
        assert_eq!(
            ReadError::Damaged(Damage::TrailingBytes { count: 3 }).to_string(),
            "3 trailing bytes"
        );
        assert_eq!(
            Damage::IdsBackwards {
                first_event_id: 5,
                last_event_id: 2
            }
            .to_string(),
            "header ids run backwards (5..2)"
        );
        let reason = DamageReason::from(ReadError::Damaged(Damage::NoDecoder {
            format: "catalog",
            found: 4,
        }));
        assert_eq!(
            reason.to_string(),
            "catalog format version 4 has no decoder in this build"
        );
        assert_eq!(
            DamageReason::EventIds {
                first_event_id: 1,
                last_event_id: 2,
                found_first: Some(1),
                found_last: None,
            }
            .to_string(),
            "header says events 1..=2 but the batch holds Some(1)..=None"
        );
        let text = DamageReason::from("refused".to_string());
        assert_eq!(text, DamageReason::Fold(Arc::from("refused")));
        assert_ne!(text, DamageReason::HeadersOpenEventsClosed);
    }
}
