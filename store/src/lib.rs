//! statelog-store: executions and state machines over the log. Appends each decision's events as one
//! atomic log batch, keeps a small in-memory index (execution -> machine, status, start/stop
//! time, event count, LSNs of its records), and reads a history back from the log on demand.
//! `open` rebuilds the index by scanning the log, decoding only the small header in front of each
//! event batch; the engine then reads back and folds the histories of the open executions.
//! The same scan rebuilds the state machines (with every revision `UpdateStateMachine` made)
//! and the catalog (`catalog`: activities, tags, redrive client tokens).
//!
//! Invariants:
//! - An execution's events are dense from 1; every append is checked against the index before it
//!   is written and every history is checked again after it is read back.
//! - The index holds no payloads: a closed execution costs a few hundred bytes (its ARN, a few
//!   numbers and the LSNs of its records), whatever the size of its history.
//! - Appends for one execution are serialized by the caller (the engine); the store never holds
//!   its index lock across a log append, so executions share group commits.
//! - A record that passes the log's checksum but does not decode (a bug, not the disk) damages
//!   only what it belongs to: `open` and reads list it ([`Store::damaged`]), its execution
//!   answers [`Error::Damaged`] and takes no more appends, every other execution is served.
//!
//! Must not: depend on the interpreter, read a clock (times come in as arguments), or interpret
//! a definition (it stores the text).

mod catalog;
pub mod limits;
mod log;
pub mod map_runs;
mod recent_ends;
mod record;
mod retention;
pub mod swf;
mod versions;

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use statelog_core::history::encoding::{self, EventBatch};
use statelog_core::history::{check_sequence, EventDetails, EventId, HistoryEvent};
use statelog_wal::Lsn;

pub use catalog::{ActivityEntry, RedriveToken, Tags};
#[cfg(feature = "contract")]
pub use log::contract;
pub use log::{
    Compacted, CompactionProgress, Durability, Extent, Keep, Log, LogRecord, LogStats, MemoryLog,
    OnDurable, Visit, VisitOrigin, VisitRecord,
};
pub use record::{
    decode_record, encode_batch_head_into, BatchHeader, BatchHeaderRef, CatalogRecord, Damage,
    DamageReason, Format, MachineRecord, MachineType, NewerVersion, ReadError, RecordCheck,
    StartedHeader, StartedHeaderRef, FORMATS, KIND_CATALOG, KIND_EVENTS, KIND_MACHINE,
};
pub use retention::StoreCompaction;
pub use versions::{AliasEntry, VersionEntry};

/// Errors of the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The log failed (I/O, corruption, poisoned after a failed sync).
    #[error("log: {0}")]
    Log(#[from] statelog_wal::Error),
    /// Another writer owns the log now (see the `log` module's fencing): nothing this writer
    /// appends is acknowledged any more. Terminal.
    #[error("log: this writer was fenced: another writer owns the log")]
    Fenced,
    /// A log on other machines (a replicated log) failed: its transport, its servers, or a
    /// refusal of theirs that is not a fence. Terminal for this writer (fail-stop) unless
    /// `retryable` (a read that may succeed when asked again).
    #[error("replicated log: {cause}")]
    Replicated {
        /// What failed, as the log's own crate describes it.
        cause: Arc<dyn std::error::Error + Send + Sync>,
        /// Whether the same call may succeed when made again.
        retryable: bool,
    },
    /// The log does not implement an operation of the contract (a log written before it).
    #[error("log: {operation} is not supported by this log")]
    Unsupported {
        /// The operation (`wait_for`).
        operation: &'static str,
    },
    /// A record could not be encoded.
    #[error("cannot encode {what}: {reason}")]
    Encode {
        /// What was being encoded.
        what: &'static str,
        /// What the encoder reported.
        reason: postcard::Error,
    },
    /// A record in the log does not decode.
    #[error("record at lsn {lsn} (kind {kind}) does not decode: {reason}")]
    Decode {
        /// The record's LSN.
        lsn: u64,
        /// The record's kind.
        kind: u8,
        /// What is wrong.
        reason: DecodeReason,
    },
    /// A record from a newer statelog: its format version is past the newest this build reads.
    /// The log is refused whole (this build must not write into a newer build's log).
    #[error("record at lsn {lsn} (kind {kind}) has {newer}; run that version or a newer one")]
    NewerFormat {
        /// The record's LSN.
        lsn: u64,
        /// The record's kind.
        kind: u8,
        /// Its format, the version found and the newest this build reads.
        newer: NewerVersion,
    },
    /// A record of a kind this build does not know.
    #[error("record at lsn {lsn} has unknown kind {kind}")]
    UnknownKind {
        /// The record's LSN.
        lsn: u64,
        /// The kind found.
        kind: u8,
    },
    /// Events that do not continue the execution's history densely.
    #[error("events for {execution_arn} do not continue its history: {reason}")]
    BadSequence {
        /// The execution.
        execution_arn: String,
        /// What is wrong.
        reason: SequenceReason,
    },
    /// The first events of an execution do not start with `ExecutionStarted`.
    #[error("the first event of {execution_arn} is {found}, not ExecutionStarted")]
    NotStarted {
        /// The execution.
        execution_arn: String,
        /// The event type found.
        found: &'static str,
    },
    /// No execution with this ARN.
    #[error("no execution {execution_arn}")]
    UnknownExecution {
        /// The ARN asked for.
        execution_arn: String,
    },
    /// No (live) state machine with this name.
    #[error("no state machine named '{name}'")]
    UnknownMachine {
        /// The name asked for.
        name: String,
    },
    /// A live state machine already has this name.
    #[error("a state machine named '{name}' already exists")]
    MachineExists {
        /// The name.
        name: String,
    },
    /// A tag change names a resource (state machine or activity) that does not exist.
    #[error("no resource {resource_arn}")]
    UnknownResource {
        /// The ARN given.
        resource_arn: String,
    },
    /// A tag change would leave a resource with more tags than allowed.
    #[error("{resource_arn} would have {count} tags; the limit is {limit}")]
    TooManyTags {
        /// The resource.
        resource_arn: String,
        /// How many tags it would have.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// A version publish named a revision that is not the machine's current one.
    #[error("state machine '{machine}' is at revision lsn {current}, not {expected}")]
    RevisionChanged {
        /// The machine.
        machine: String,
        /// The revision asked for (its record's LSN).
        expected: Lsn,
        /// The current revision.
        current: Lsn,
    },
    /// A machine already has as many live versions as allowed.
    #[error("state machine '{machine}' has {limit} versions, the most allowed")]
    TooManyVersions {
        /// The machine.
        machine: String,
        /// The limit.
        limit: usize,
    },
    /// No live version with this number.
    #[error("state machine '{machine}' has no version {number}")]
    UnknownVersion {
        /// The machine.
        machine: String,
        /// The number asked for.
        number: u32,
    },
    /// A version an alias routes to cannot be deleted.
    #[error("version {number} of '{machine}' is routed to by the aliases {aliases:?}")]
    VersionInUse {
        /// The machine.
        machine: String,
        /// The version.
        number: u32,
        /// The aliases routing to it.
        aliases: Vec<String>,
    },
    /// An alias of this name exists with another description or routing.
    #[error("state machine '{machine}' already has an alias '{alias}' that differs")]
    AliasExists {
        /// The machine.
        machine: String,
        /// The alias.
        alias: String,
    },
    /// No alias of this name.
    #[error("state machine '{machine}' has no alias '{alias}'")]
    UnknownAlias {
        /// The machine.
        machine: String,
        /// The alias.
        alias: String,
    },
    /// A record read back for an execution belongs to another one.
    #[error("record at lsn {lsn} belongs to {found}, not {execution_arn}")]
    ForeignRecord {
        /// The record's LSN.
        lsn: u64,
        /// The execution whose history was read.
        execution_arn: String,
        /// The execution the record names.
        found: String,
    },
    /// An execution with a record the store cannot read although the log's checksum held (a
    /// software bug, not damage on the disk): calls on it answer this, every other execution
    /// stays available. [`Store::damaged`] lists them.
    #[error(
        "execution {execution_arn} is damaged: its record at lsn {lsn} does not read: {reason}"
    )]
    Damaged {
        /// The execution.
        execution_arn: String,
        /// The LSN of the first of its records that does not read.
        lsn: u64,
        /// What is wrong with it.
        reason: DamageReason,
    },
    /// SWF events that do not continue their run (see `swf`).
    #[error("swf: {0}")]
    SwfSequence(#[from] swf::SwfSequenceError),
    /// An SWF run the store does not know (or forgot).
    #[error("no swf run {run_id}")]
    UnknownRun {
        /// The run id asked for.
        run_id: String,
    },
    /// An LSN the index points at holds no record.
    #[error("lsn {lsn} of {execution_arn} holds no record")]
    MissingRecord {
        /// The LSN.
        lsn: u64,
        /// The execution.
        execution_arn: String,
    },
}

impl Error {
    /// Whether the same call may succeed if made again as it is: the log refused it for a
    /// passing reason (no segment could be made, a full disk) and wrote nothing of it. Every
    /// other error is terminal for the call: a poisoned or fenced log refuses every later write,
    /// bad input stays bad, damage stays until repaired.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Log(error) => error.is_retryable(),
            Error::Replicated { retryable, .. } => *retryable,
            _ => false,
        }
    }
}

/// Why a record the index points at does not decode (`Error::Decode`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeReason {
    /// The record is of another kind than an event batch.
    #[error("the index points at a record that is not an event batch")]
    NotAnEventBatch,
    /// The event batch's header does not read.
    #[error("{0}")]
    Header(record::ReadError),
    /// The events' ids are not the range the header names.
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
}

/// Why events do not continue an execution's history (`Error::BadSequence`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SequenceReason {
    /// An append with no events.
    #[error("an append of no events")]
    NoEvents,
    /// A batch whose first event does not follow the execution's last one.
    #[error("a batch starting at event {first_event_id} follows event {last_event_id}")]
    Gap {
        /// The batch's first event id.
        first_event_id: u32,
        /// The execution's last event id.
        last_event_id: u32,
    },
    /// The appended events are not a dense continuation.
    #[error("{0}")]
    Events(statelog_core::history::Error),
    /// The events read back from the log are not a dense history.
    #[error("read back from the log: {0}")]
    ReadBack(statelog_core::history::Error),
    /// The record the index names for an event does not hold it.
    #[error("record at lsn {lsn} does not hold event {event_id}")]
    MissingEvent {
        /// The record's LSN.
        lsn: u64,
        /// The event asked for.
        event_id: u32,
    },
    /// A redrive client token on a batch without `ExecutionRedriven`.
    #[error("a redrive client token goes with the batch holding ExecutionRedriven, and this one has none")]
    RedriveTokenWithoutRedrive,
}

/// How an execution stands, as the index knows it from its events.
///
/// Stored in batch headers: the variant order is part of the record format (append only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ExecutionStatus {
    /// Started and not closed.
    Running,
    /// Closed by `ExecutionSucceeded`.
    Succeeded,
    /// Closed by `ExecutionFailed`.
    Failed,
    /// Closed by `ExecutionTimedOut`.
    TimedOut,
    /// Closed by `ExecutionAborted` (StopExecution).
    Aborted,
}

impl ExecutionStatus {
    /// The AWS name (`RUNNING`, `SUCCEEDED`, `FAILED`, `TIMED_OUT`, `ABORTED`).
    pub fn aws_name(self) -> &'static str {
        match self {
            ExecutionStatus::Running => "RUNNING",
            ExecutionStatus::Succeeded => "SUCCEEDED",
            ExecutionStatus::Failed => "FAILED",
            ExecutionStatus::TimedOut => "TIMED_OUT",
            ExecutionStatus::Aborted => "ABORTED",
        }
    }

    /// Parses an AWS status name.
    pub fn from_aws_name(name: &str) -> Option<Self> {
        Some(match name {
            "RUNNING" => ExecutionStatus::Running,
            "SUCCEEDED" => ExecutionStatus::Succeeded,
            "FAILED" => ExecutionStatus::Failed,
            "TIMED_OUT" => ExecutionStatus::TimedOut,
            "ABORTED" => ExecutionStatus::Aborted,
            _ => return None,
        })
    }

    /// True once closed.
    pub fn is_closed(self) -> bool {
        self != ExecutionStatus::Running
    }

    /// The status an event moves an execution to, if it moves it.
    fn after(details: &EventDetails) -> Option<Self> {
        Some(match details {
            EventDetails::ExecutionStarted(_) | EventDetails::ExecutionRedriven(_) => {
                ExecutionStatus::Running
            }
            EventDetails::ExecutionSucceeded(_) => ExecutionStatus::Succeeded,
            EventDetails::ExecutionFailed(_) => ExecutionStatus::Failed,
            EventDetails::ExecutionTimedOut(_) => ExecutionStatus::TimedOut,
            EventDetails::ExecutionAborted(_) => ExecutionStatus::Aborted,
            _ => return None,
        })
    }
}

/// One revision of a state machine as stored: its creation, or an update of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Machine {
    /// Its name.
    pub name: String,
    /// Its definition text (this revision's).
    pub definition: Arc<str>,
    /// The role its executions run as (this revision's).
    pub role_arn: String,
    /// When it was created, ms since the epoch.
    pub created_ms: u64,
    /// The LSN of the record that made this revision (creation or update): an execution names
    /// the revision it runs by it ([`ExecutionSummary::machine_lsn`]).
    pub lsn: Lsn,
    /// The LSN of the machine's creation record: identifies this machine among same-named ones
    /// over time, across its updates (`Store::executions` lists by it).
    pub origin_lsn: Lsn,
    /// When this revision was made by an update, ms since the epoch (`None`: the creation).
    pub updated_ms: Option<u64>,
    /// Whether it has been deleted.
    pub deleted: bool,
    /// Its type, as created (an update keeps it).
    pub machine_type: MachineType,
}

/// What the index knows of one execution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutionSummary {
    /// The execution's ARN.
    pub execution_arn: Arc<str>,
    /// The LSN of the revision of its machine it runs (see [`Machine::lsn`]).
    pub machine_lsn: Lsn,
    /// How it stands.
    pub status: ExecutionStatus,
    /// When it started, ms since the epoch.
    pub start_ms: u64,
    /// When it closed, ms since the epoch.
    pub stop_ms: Option<u64>,
    /// Events in its history.
    pub event_count: u32,
    /// Position in start order over the whole store (0-based).
    pub start_index: u64,
    /// How many times it was redriven (`ExecutionRedriven` batches).
    pub redrive_count: u32,
    /// When it was last redriven, ms since the epoch.
    pub redrive_ms: Option<u64>,
    /// The version of its machine it was started on (through a version or alias ARN).
    pub version: Option<u32>,
}

/// A record that passed the log's checksum but does not read: a software bug (an encoder and
/// decoder that disagree), never damage on the disk, which the log itself reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DamagedRecord {
    /// The record's LSN.
    pub lsn: Lsn,
    /// The record's kind ([`KIND_EVENTS`], [`KIND_MACHINE`], [`KIND_CATALOG`]).
    pub kind: u8,
    /// The execution the record belongs to, where that much of it reads.
    pub execution_arn: Option<Arc<str>>,
    /// What is wrong with it.
    pub reason: DamageReason,
}

impl DamagedRecord {
    /// The error calls on the damaged execution answer.
    fn error(&self, execution_arn: &str) -> Error {
        Error::Damaged {
            execution_arn: execution_arn.to_string(),
            lsn: self.lsn.0,
            reason: self.reason.clone(),
        }
    }
}

/// One execution in the index. Kept small: no payloads.
#[derive(Debug)]
struct Entry {
    machine_lsn: Lsn,
    status: ExecutionStatus,
    start_ms: u64,
    stop_ms: Option<u64>,
    event_count: u32,
    start_index: u64,
    /// Its records in event order: where each is and its first event, so that the one record
    /// holding an event is found without reading the others (`Store::event`).
    records: Vec<RecordRef>,
    redrive_count: u32,
    redrive_ms: Option<u64>,
    /// Versions count from 1: `NonZeroU32` keeps the entry within its size.
    version: Option<std::num::NonZeroU32>,
}

/// One record of an execution's history in the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RecordRef {
    /// Where the record is.
    lsn: Lsn,
    /// The id of its first event.
    first_event_id: u32,
}

/// A map keyed by execution ARN. Hashed with foldhash's quality hasher (seeded per map) rather
/// than SipHash: a compaction of 60,000 expired executions hashed every ARN four times, and
/// SipHash over ~80-byte ARNs was half of the store's share of that compaction.
type ArnMap<V> = FoldMap<Arc<str>, V>;

/// A map the index looks up on every start (by machine LSN or name): foldhash too.
type FoldMap<K, V> = HashMap<K, V, foldhash::quality::RandomState>;

#[derive(Debug, Default)]
struct Index {
    executions: ArnMap<Entry>,
    /// Execution ARNs in start order.
    started: Vec<Arc<str>>,
    /// Per machine (creation LSN): start indexes of its executions, in start order.
    by_machine: FoldMap<Lsn, Vec<u64>>,
    /// Every machine revision ever made, by the LSN of its record.
    machines: FoldMap<Lsn, Arc<Machine>>,
    /// Live machines by name: the LSN of their current revision.
    live_machines: FoldMap<String, Lsn>,
    /// Activities, tags and redrive client tokens.
    catalog: catalog::Catalog,
    /// Executions with a record that does not read, each with its first such record. Later
    /// batches of a damaged execution are not indexed.
    damaged: ArnMap<DamagedRecord>,
    /// Records that do not read and name no execution (state machines, catalog records, a
    /// batch whose header does not read), in log order.
    damaged_records: Vec<DamagedRecord>,
    /// SWF domains, types, tags and runs (see `swf`).
    swf: swf::SwfIndex,
    /// Map Runs: parent, settings, the LSNs of their children's ends (see `map_runs`).
    map_runs: map_runs::MapRunIndex,
}

impl Index {
    fn summary(&self, arn: &Arc<str>, entry: &Entry) -> ExecutionSummary {
        ExecutionSummary {
            execution_arn: arn.clone(),
            machine_lsn: entry.machine_lsn,
            status: entry.status,
            start_ms: entry.start_ms,
            stop_ms: entry.stop_ms,
            event_count: entry.event_count,
            start_index: entry.start_index,
            redrive_count: entry.redrive_count,
            redrive_ms: entry.redrive_ms,
            version: entry.version.map(std::num::NonZeroU32::get),
        }
    }

    fn apply_machine(&mut self, lsn: Lsn, record: MachineRecord) {
        match record {
            MachineRecord::Created {
                name,
                definition,
                role_arn,
                created_ms,
                machine_type,
            } => {
                self.live_machines.insert(name.clone(), lsn);
                self.machines.insert(
                    lsn,
                    Arc::new(Machine {
                        name,
                        definition: definition.into(),
                        role_arn,
                        created_ms,
                        lsn,
                        origin_lsn: lsn,
                        updated_ms: None,
                        deleted: false,
                        machine_type,
                    }),
                );
            }
            MachineRecord::Deleted { name, .. } => {
                if let Some(lsn) = self.live_machines.remove(&name) {
                    let origin = self.machines.get(&lsn).map(|m| m.origin_lsn);
                    for machine in self.machines.values_mut() {
                        if Some(machine.origin_lsn) == origin {
                            Arc::make_mut(machine).deleted = true;
                        }
                    }
                    self.catalog.forget_machine_tags(&name);
                    if let Some(origin) = origin {
                        self.catalog.versions.forget_machine(origin, &name);
                    }
                }
            }
            MachineRecord::Updated {
                name,
                definition,
                role_arn,
                updated_ms,
            } => {
                // An update of a machine that is not live cannot be written (the writer checks
                // under `machine_writes`); a log holding one changes nothing.
                let Some(current) = self
                    .live_machines
                    .get(&name)
                    .and_then(|live| self.machines.get(live))
                else {
                    return;
                };
                let revision = Machine {
                    name: name.clone(),
                    definition: definition.into(),
                    role_arn,
                    created_ms: current.created_ms,
                    lsn,
                    origin_lsn: current.origin_lsn,
                    updated_ms: Some(updated_ms),
                    deleted: false,
                    machine_type: current.machine_type,
                };
                debug_assert!(revision.origin_lsn < lsn, "a revision follows its creation");
                self.live_machines.insert(name, lsn);
                self.machines.insert(lsn, Arc::new(revision));
            }
        }
    }

    /// Records that `record` does not read; the first damage of an execution is kept.
    fn mark_damaged(&mut self, record: DamagedRecord) {
        match &record.execution_arn {
            Some(arn) => {
                self.damaged.entry(arn.clone()).or_insert(record);
            }
            None => self.damaged_records.push(record),
        }
    }

    /// Checks that a batch with `header` may follow the index; returns the machine revision
    /// of a new execution and the version it was started on.
    fn check_header(&self, header: &BatchHeaderRef<'_>) -> Result<Option<NewMachine>, Error> {
        let arn = header.execution_arn;
        let (last_id, new_machine) = match self.executions.get(arn) {
            Some(entry) => (entry.event_count, None),
            None => {
                let Some(started) = &header.started else {
                    return Err(Error::NotStarted {
                        execution_arn: arn.to_string(),
                        found: "a batch without ExecutionStarted",
                    });
                };
                let (name, version) = versions::started_machine(started.state_machine_arn);
                let lsn = match version {
                    None => self.live_machines.get(name).copied(),
                    Some(number) => self.version_revision(name, number),
                };
                let lsn = lsn.ok_or_else(|| Error::UnknownMachine {
                    name: machine_name(started.state_machine_arn).to_string(),
                })?;
                (0, Some(NewMachine { lsn, version }))
            }
        };
        if u64::from(header.first_event_id) != u64::from(last_id) + 1 {
            return Err(Error::BadSequence {
                execution_arn: arn.to_string(),
                reason: SequenceReason::Gap {
                    first_event_id: header.first_event_id,
                    last_event_id: last_id,
                },
            });
        }
        Ok(new_machine)
    }

    /// Applies a checked batch of `arn` (its record is at `lsn`).
    fn apply_header(&mut self, arn: &str, batch: Indexed, lsn: Lsn, machine: Option<NewMachine>) {
        let entry = match self.executions.get_mut(arn) {
            Some(entry) => entry,
            None => {
                let NewMachine {
                    lsn: machine_lsn,
                    version,
                } = machine.expect("check_header names the machine of a new execution");
                let origin_lsn = self
                    .machines
                    .get(&machine_lsn)
                    .map_or(machine_lsn, |m| m.origin_lsn);
                let start_ms = batch.start_ms.unwrap_or(0);
                let key: Arc<str> = Arc::from(arn);
                let start_index = self.started.len() as u64;
                self.started.push(key.clone());
                self.by_machine
                    .entry(origin_lsn)
                    .or_default()
                    .push(start_index);
                self.executions.entry(key).or_insert(Entry {
                    machine_lsn,
                    status: ExecutionStatus::Running,
                    start_ms,
                    stop_ms: None,
                    event_count: 0,
                    start_index,
                    records: Vec::with_capacity(1),
                    redrive_count: 0,
                    redrive_ms: None,
                    version: version.and_then(std::num::NonZeroU32::new),
                })
            }
        };
        debug_assert_eq!(batch.first_event_id, entry.event_count + 1);
        entry.records.push(RecordRef {
            lsn,
            first_event_id: batch.first_event_id,
        });
        entry.event_count = batch.last_event_id;
        if let Some((status, at_ms)) = batch.status {
            // Only `ExecutionRedriven` moves an execution that has events back to running.
            if status == ExecutionStatus::Running && batch.start_ms.is_none() {
                entry.redrive_count += 1;
                entry.redrive_ms = Some(at_ms);
            }
            entry.status = status;
            entry.stop_ms = status.is_closed().then_some(at_ms);
        }
        if entry.status.is_closed() {
            entry.records.shrink_to_fit();
        }
    }
}

/// The machine revision a new execution runs, and the version it was started on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct NewMachine {
    lsn: Lsn,
    version: Option<u32>,
}

/// What the index takes from a batch header besides the ARN (all plain numbers, so encoded
/// batches can carry it without borrowing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Indexed {
    first_event_id: u32,
    last_event_id: u32,
    /// `Some` when the batch starts the execution: when it started.
    start_ms: Option<u64>,
    status: Option<(ExecutionStatus, u64)>,
}

impl Indexed {
    fn of(header: &BatchHeaderRef<'_>) -> Self {
        Self {
            first_event_id: header.first_event_id,
            last_event_id: header.last_event_id,
            start_ms: header.started.map(|s| s.start_ms),
            status: header.status,
        }
    }
}

/// The machine name inside `arn:aws:states:<region>:<account>:stateMachine:<name>`, without
/// the `#Case` a test case's start records (`history::split_test_case`).
pub fn machine_name(state_machine_arn: &str) -> &str {
    let state_machine_arn = statelog_core::history::split_test_case(state_machine_arn).machine_arn;
    // A name holds no ':', so the usual ARN's name follows its last one; the substring search
    // (about 850 instructions a start) is left for any other form.
    if let Some((head, name)) = state_machine_arn.rsplit_once(':') {
        if head.ends_with(":stateMachine") {
            return name;
        }
    }
    state_machine_arn
        .rsplit_once(":stateMachine:")
        .map_or(state_machine_arn, |(_, name)| name)
}

/// Executions and state machines over a [`Log`]. `Send + Sync`.
#[derive(Debug)]
pub struct Store {
    log: Arc<dyn Log>,
    index: RwLock<Index>,
    /// Serializes changes of machines and of the catalog (rare; the only lock held across an
    /// append).
    machine_writes: Mutex<()>,
    /// Held (shared) by every read of records by LSN, and exclusively by a compaction, which
    /// moves records: appends never take it.
    reads: RwLock<()>,
    /// The last LSN appended by [`Store::append_prepared_unsynced`] that may not be durable yet
    /// (0: none); a read at or below it syncs the log first.
    unsynced_lsn: std::sync::atomic::AtomicU64,
    /// The first and last events of recently appended executions, so that a describe after a
    /// close reads no record (`first_and_last_events`).
    recent_ends: Mutex<recent_ends::RecentEnds>,
}

impl Store {
    /// Rebuilds the index from `log` by one scan. Only the batch headers are decoded, never the
    /// events: read the histories of [`Store::open_executions`] to fold them.
    pub fn open(log: Arc<dyn Log>) -> Result<Store, Error> {
        let mut index = Index::default();
        // Records copied forward by compaction sit at the tail under new LSNs: apply in order of
        // their original LSN (machines keep it as identity; reads use the current LSN).
        let mut found = Vec::new();
        // A record that does not read (its checksum held: a bug, not the disk) damages only
        // what it belongs to; the rest of the log opens.
        log.scan_with_origin(&mut |origin, lsn, kind, payload| {
            let item = match record::decode(kind, payload) {
                Ok(record::Decoded::Machine(record)) => retention::Found::Machine(record),
                Ok(record::Decoded::Batch(header)) => retention::Found::Batch(header),
                Ok(record::Decoded::Catalog(record)) => retention::Found::Catalog(record),
                Ok(record::Decoded::Swf(record)) => retention::Found::Swf(record),
                Ok(record::Decoded::MapRun(record)) => retention::Found::MapRun(record),
                Err(record::Undecodable::UnknownKind) => {
                    return Err(Error::UnknownKind { lsn: lsn.0, kind })
                }
                Err(record::Undecodable::Newer(newer)) => {
                    return Err(Error::NewerFormat {
                        lsn: lsn.0,
                        kind,
                        newer,
                    })
                }
                Err(record::Undecodable::Damaged {
                    execution_arn,
                    reason,
                }) => {
                    // Marked in log order below: the execution's earlier batches still index.
                    found.push((
                        origin,
                        lsn,
                        Err(DamagedRecord {
                            lsn,
                            kind,
                            execution_arn: execution_arn.map(Arc::from),
                            reason,
                        }),
                    ));
                    return Ok(());
                }
            };
            found.push((origin, lsn, Ok(item)));
            Ok(())
        })?;
        if found.windows(2).any(|pair| pair[0].0 > pair[1].0) {
            found.sort_by_key(|(origin, _, _)| *origin);
        }
        for (origin, lsn, item) in found {
            match item {
                Err(damaged) => index.mark_damaged(damaged),
                Ok(retention::Found::Machine(record)) => index.apply_machine(origin, record),
                Ok(retention::Found::Batch(header)) => {
                    let header = header.borrowed();
                    if index.damaged.contains_key(header.execution_arn) {
                        continue;
                    }
                    match index.check_header(&header) {
                        Ok(machine) => index.apply_header(
                            header.execution_arn,
                            Indexed::of(&header),
                            lsn,
                            machine,
                        ),
                        // A batch that does not follow its execution's history (one before it
                        // did not read, or names a machine that did not): that execution is
                        // damaged, the others are not.
                        Err(error) => index.mark_damaged(DamagedRecord {
                            lsn,
                            kind: KIND_EVENTS,
                            execution_arn: Some(Arc::from(header.execution_arn)),
                            reason: DamageReason::Sequence(Arc::new(error)),
                        }),
                    }
                }
                Ok(retention::Found::Catalog(record)) => index.apply_catalog(origin, record),
                Ok(retention::Found::Swf(record)) => index.apply_swf(lsn, *record),
                Ok(retention::Found::MapRun(record)) => index.map_runs.apply(lsn, *record),
            }
        }
        Ok(Store {
            log,
            index: RwLock::new(index),
            machine_writes: Mutex::new(()),
            reads: RwLock::new(()),
            unsynced_lsn: std::sync::atomic::AtomicU64::new(0),
            recent_ends: Mutex::new(recent_ends::RecentEnds::default()),
        })
    }

    /// Creates a state machine of `machine_type`; `MachineExists` when a live one has the name.
    pub fn create_machine(
        &self,
        name: &str,
        definition: &str,
        role_arn: &str,
        machine_type: MachineType,
        now_ms: u64,
    ) -> Result<Arc<Machine>, Error> {
        let _serial = self.machine_writes.lock();
        if self.index.read().live_machines.contains_key(name) {
            return Err(Error::MachineExists {
                name: name.to_string(),
            });
        }
        let record = MachineRecord::Created {
            name: name.to_string(),
            definition: definition.to_string(),
            role_arn: role_arn.to_string(),
            created_ms: now_ms,
            machine_type,
        };
        let (_, revision) = self.append_machine(record)?;
        Ok(revision.expect("apply_machine inserts a created machine under its lsn"))
    }

    /// Deletes the live state machine `name`.
    pub fn delete_machine(&self, name: &str, now_ms: u64) -> Result<(), Error> {
        let _serial = self.machine_writes.lock();
        self.require_live_machine(name)?;
        let record = MachineRecord::Deleted {
            name: name.to_string(),
            deleted_ms: now_ms,
        };
        self.append_machine(record)?;
        Ok(())
    }

    /// Gives the live state machine `name` a new revision (definition and role, stored whole)
    /// and returns it; executions started from now on run it.
    pub fn update_machine(
        &self,
        name: &str,
        definition: &str,
        role_arn: &str,
        now_ms: u64,
    ) -> Result<Arc<Machine>, Error> {
        let _serial = self.machine_writes.lock();
        self.require_live_machine(name)?;
        let record = MachineRecord::Updated {
            name: name.to_string(),
            definition: definition.to_string(),
            role_arn: role_arn.to_string(),
            updated_ms: now_ms,
        };
        let (lsn, revision) = self.append_machine(record)?;
        debug_assert_eq!(self.index.read().live_machines.get(name), Some(&lsn));
        Ok(revision.expect("apply_machine inserts an updated machine under its lsn"))
    }

    /// `UnknownMachine` unless a live state machine is named `name`.
    fn require_live_machine(&self, name: &str) -> Result<(), Error> {
        if self.index.read().live_machines.contains_key(name) {
            return Ok(());
        }
        Err(Error::UnknownMachine {
            name: name.to_string(),
        })
    }

    /// Appends a state machine record, applies it to the index and returns its LSN with the
    /// revision it made (a creation or an update; none for a deletion). The caller holds
    /// `machine_writes`.
    fn append_machine(&self, record: MachineRecord) -> Result<(Lsn, Option<Arc<Machine>>), Error> {
        let bytes = record::encode_machine(&record)?;
        let lsn = self.log.append_batch(&[(KIND_MACHINE, &bytes)])?;
        let mut index = self.index.write();
        index.apply_machine(lsn, record);
        Ok((lsn, index.machines.get(&lsn).cloned()))
    }

    /// The live state machine named `name` (its current revision).
    pub fn machine(&self, name: &str) -> Option<Arc<Machine>> {
        let index = self.index.read();
        let lsn = index.live_machines.get(name)?;
        index.machines.get(lsn).cloned()
    }

    /// The state machine revision made at `lsn` (creation or update), live or deleted.
    pub fn machine_at(&self, lsn: Lsn) -> Option<Arc<Machine>> {
        self.index.read().machines.get(&lsn).cloned()
    }

    /// Every live state machine, by name.
    pub fn machines(&self) -> Vec<Arc<Machine>> {
        let index = self.index.read();
        let mut machines: Vec<_> = index
            .live_machines
            .values()
            .filter_map(|lsn| index.machines.get(lsn).cloned())
            .collect();
        machines.sort_by(|a, b| a.name.cmp(&b.name));
        machines
    }

    /// Appends one decision's events for `execution_arn` as one atomic log batch; returns once
    /// durable. The first events of a new execution must begin with `ExecutionStarted` naming a
    /// live machine. The caller serializes appends per execution. The same as
    /// [`Store::prepare_events`] then [`Store::append_prepared`].
    pub fn append_events(&self, execution_arn: &str, events: &[HistoryEvent]) -> Result<(), Error> {
        if events.is_empty() {
            return Ok(());
        }
        let mut prepared = self.prepare_events(execution_arn, events)?;
        // The two ends are all `keep_ends` takes.
        let mut ends: Vec<HistoryEvent> = match events {
            [only] => vec![only.clone()],
            [first, .., last] => vec![first.clone(), last.clone()],
            [] => Vec::new(),
        };
        self.keep_ends(&mut prepared, &mut ends);
        self.append_prepared(prepared)
    }

    /// Checks `events` (not empty) against the index and encodes them as the records of one
    /// batch, ready for [`Store::append_prepared`]. The encoded batch does not borrow the
    /// events: the caller may drop them before the append waits for durability (they are hot
    /// in its cache now, cold after the wait). Nothing is written yet.
    pub fn prepare_events<'a>(
        &self,
        execution_arn: &'a str,
        events: &[HistoryEvent],
    ) -> Result<PreparedEvents<'a>, Error> {
        let Some(first) = events.first() else {
            return Err(Error::BadSequence {
                execution_arn: execution_arn.to_string(),
                reason: SequenceReason::NoEvents,
            });
        };
        let header = header_for(execution_arn, events);
        let machine = {
            let index = self.index.read();
            if let Some(damage) = index.damaged.get(execution_arn) {
                return Err(damage.error(execution_arn));
            }
            let last_id = match index.executions.get(execution_arn) {
                Some(entry) => entry.event_count,
                None => {
                    if !matches!(first.details, EventDetails::ExecutionStarted(_)) {
                        return Err(Error::NotStarted {
                            execution_arn: execution_arn.to_string(),
                            found: first.details.type_name(),
                        });
                    }
                    0
                }
            };
            check_sequence(last_id, events).map_err(|e| Error::BadSequence {
                execution_arn: execution_arn.to_string(),
                reason: SequenceReason::Events(e),
            })?;
            index.check_header(&header)?
        };
        let mut prepared = PreparedEvents {
            execution_arn,
            machine,
            catalog: None,
            scratch: EncodeScratch::take(),
            ends: None,
        };
        encode_chunks(execution_arn, events, &mut prepared.scratch)?;
        Ok(prepared)
    }

    /// Keeps the first and last events of `prepared`'s batch, taken out of `events` (the batch
    /// given to [`Store::prepare_events`], whose caller is done with it: what is left of it, in
    /// no order, is the caller's to drop), so that [`Store::first_and_last_events`] reads
    /// nothing back once it is appended. Without this call the batch is appended all the same,
    /// and a later describe reads the log.
    pub fn keep_ends(&self, prepared: &mut PreparedEvents<'_>, events: &mut Vec<HistoryEvent>) {
        let bytes = prepared.scratch.bytes.len();
        let Some(ends) = recent_ends::Ends::take(prepared.execution_arn, events, bytes) else {
            return;
        };
        // Dropped here, before the append waits for its sync, not after it.
        let evicted = self.recent_ends.lock().make_room(&ends);
        drop(evicted);
        prepared.ends = Some(ends);
    }

    /// Appends a batch made by [`Store::prepare_events`] as one atomic log batch and indexes it;
    /// returns once durable. The caller serializes appends per execution (nothing for the same
    /// execution may be appended between the prepare and this call).
    /// A catalog record the batch carries (a redrive's client token, see
    /// [`Store::prepare_events_with_redrive_token`]) is its last record, applied to the index
    /// right after the events.
    pub fn append_prepared(&self, prepared: PreparedEvents<'_>) -> Result<(), Error> {
        self.append_prepared_as(prepared, Wait::Synced)
    }

    /// Like [`Store::append_prepared`], but returns once the batch is written to the log, not
    /// synced ([`Durability::Unsynced`]): the next synced append makes it durable, and a crash before that loses it with everything
    /// after it. Only for a batch whose loss equals a crash just before it was appended. A read
    /// of it (`history`) syncs the log first, so nothing not durable is ever read back.
    pub fn append_prepared_unsynced(&self, prepared: PreparedEvents<'_>) -> Result<(), Error> {
        self.append_prepared_as(prepared, Wait::Unsynced)
    }

    /// Like [`Store::append_prepared`], but returns without waiting for the sync, and the log
    /// calls `on_durable` once the batch is durable ([`Log::append_notify`]). The index holds
    /// the batch at once (the caller's next append to the execution follows it); a read of it
    /// syncs the log first, as after [`Store::append_prepared_unsynced`], so nothing is read
    /// back before it is durable. An error means nothing was appended (`on_durable` is dropped
    /// uncalled).
    pub fn append_prepared_notify(
        &self,
        prepared: PreparedEvents<'_>,
        on_durable: OnDurable,
    ) -> Result<(), Error> {
        self.append_prepared_as(prepared, Wait::Notify(on_durable))
    }

    fn append_prepared_as(
        &self,
        mut prepared: PreparedEvents<'_>,
        wait: Wait,
    ) -> Result<(), Error> {
        use std::sync::atomic::Ordering;
        let catalog = prepared.catalog.take();
        let scratch = &prepared.scratch;
        let Some(&(_, head)) = scratch.records.first() else {
            return Ok(());
        };
        let catalog_bytes = catalog.as_ref().map(record::encode_catalog).transpose()?;
        let sync = matches!(wait, Wait::Synced);
        let first = match (scratch.records.as_slice(), &catalog_bytes, wait) {
            ([(end, _)], None, Wait::Unsynced) => {
                let first = self.log.append(
                    &[(KIND_EVENTS, &scratch.bytes[..*end])],
                    Durability::Unsynced,
                )?;
                // One record: its LSN is the batch's last.
                self.unsynced_lsn.fetch_max(first.0, Ordering::AcqRel);
                first
            }
            ([(end, _)], None, Wait::Notify(on_durable)) => {
                let first = self
                    .log
                    .append_notify(&[(KIND_EVENTS, &scratch.bytes[..*end])], on_durable)?;
                // Not durable until `on_durable` says so: a read of it syncs first.
                self.unsynced_lsn.fetch_max(first.0, Ordering::AcqRel);
                first
            }
            ([(end, _)], None, Wait::Synced) => self
                .log
                .append_batch(&[(KIND_EVENTS, &scratch.bytes[..*end])])?,
            (records, _, wait) => {
                let mut framed = Vec::with_capacity(records.len() + 1);
                let mut start = 0;
                for &(end, _) in records {
                    framed.push((KIND_EVENTS, &scratch.bytes[start..end]));
                    start = end;
                }
                if let Some(bytes) = &catalog_bytes {
                    framed.push((KIND_CATALOG, bytes.as_slice()));
                }
                // Several records are rare (a decision past one record's size): synced, and a
                // notifying caller is told at once.
                let first = self.log.append_batch(&framed)?;
                if let Wait::Notify(on_durable) = wait {
                    on_durable(Ok(()));
                }
                first
            }
        };
        if sync {
            // A synced batch after the unsynced ones made them durable too (the log is ordered).
            let unsynced = self.unsynced_lsn.load(Ordering::Acquire);
            if unsynced != 0 && unsynced < first.0 {
                let _ = self.unsynced_lsn.compare_exchange(
                    unsynced,
                    0,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                );
            }
        }
        let execution_arn = prepared.execution_arn;
        let mut index = self.index.write();
        // Re-check under the write lock: a racing append to the same execution is a caller bug.
        let entry_count = index.executions.get(execution_arn).map(|e| e.event_count);
        assert_eq!(
            entry_count.unwrap_or(0) + 1,
            head.first_event_id,
            "appends to one execution must be serialized by the caller"
        );
        for (i, &(_, batch)) in scratch.records.iter().enumerate() {
            let machine = if i == 0 { prepared.machine } else { None };
            index.apply_header(execution_arn, batch, Lsn(first.0 + i as u64), machine);
        }
        if let Some(catalog) = catalog {
            index.apply_catalog(Lsn(first.0 + scratch.records.len() as u64), catalog);
        }
        drop(index);
        if let Some(ends) = prepared.ends.take() {
            let last_lsn = Lsn(first.0 + scratch.records.len() as u64 - 1);
            self.recent_ends
                .lock()
                .record(execution_arn, ends, last_lsn);
        }
        Ok(())
    }

    /// Every record that does not read although the log's checksum held, in LSN order: the
    /// first of each damaged execution's, then those that name no execution.
    pub fn damaged(&self) -> Vec<DamagedRecord> {
        let index = self.index.read();
        let mut damaged: Vec<DamagedRecord> = index.damaged.values().cloned().collect();
        damaged.extend(index.damaged_records.iter().cloned());
        damaged.sort_by_key(|record| record.lsn);
        damaged
    }

    /// The first record of `execution_arn` that does not read, if it is damaged.
    pub fn damage_of(&self, execution_arn: &str) -> Option<DamagedRecord> {
        self.index.read().damaged.get(execution_arn).cloned()
    }

    /// Marks `execution_arn` damaged by its record at `lsn` (a caller that found its events do
    /// not fold, as recovery does): from now on every call on it answers [`Error::Damaged`].
    pub fn mark_damaged(&self, execution_arn: &str, lsn: Lsn, reason: impl Into<DamageReason>) {
        self.index.write().mark_damaged(DamagedRecord {
            lsn,
            kind: KIND_EVENTS,
            execution_arn: Some(Arc::from(execution_arn)),
            reason: reason.into(),
        });
    }

    /// What the index knows of one execution.
    pub fn execution(&self, execution_arn: &str) -> Option<ExecutionSummary> {
        let index = self.index.read();
        let (arn, entry) = index.executions.get_key_value(execution_arn)?;
        Some(index.summary(arn, entry))
    }

    /// Executions newest first, of the machine created at `machine_lsn` (all its revisions; all
    /// machines when `None`),
    /// starting at start index `before_start_index` (exclusive) when given, at most `limit`.
    pub fn executions(
        &self,
        machine_lsn: Option<Lsn>,
        status: Option<ExecutionStatus>,
        before_start_index: Option<u64>,
        limit: usize,
    ) -> Vec<ExecutionSummary> {
        self.executions_where(machine_lsn, status, before_start_index, limit, &|_| true)
    }

    /// [`Store::executions`] of those `keep` accepts (called under the index's read lock: it
    /// must not call the store).
    pub fn executions_where(
        &self,
        machine_lsn: Option<Lsn>,
        status: Option<ExecutionStatus>,
        before_start_index: Option<u64>,
        limit: usize,
        keep: &dyn Fn(&ExecutionSummary) -> bool,
    ) -> Vec<ExecutionSummary> {
        let index = self.index.read();
        let bound = before_start_index.unwrap_or(u64::MAX);
        let mut out = Vec::new();
        let mut consider = |start_index: u64| -> bool {
            if start_index >= bound {
                return true;
            }
            let arn = &index.started[start_index as usize];
            // Executions removed by compaction leave their place in start order.
            let Some(entry) = index.executions.get(arn) else {
                return true;
            };
            if status.map_or(true, |s| s == entry.status) {
                let summary = index.summary(arn, entry);
                if keep(&summary) {
                    out.push(summary);
                }
            }
            out.len() < limit
        };
        match machine_lsn {
            Some(lsn) => {
                for &start_index in index.by_machine.get(&lsn).into_iter().flatten().rev() {
                    if !consider(start_index) {
                        break;
                    }
                }
            }
            None => {
                for start_index in (0..index.started.len() as u64).rev() {
                    if !consider(start_index) {
                        break;
                    }
                }
            }
        }
        out
    }

    /// Every execution that is not closed.
    pub fn open_executions(&self) -> Vec<ExecutionSummary> {
        let index = self.index.read();
        index
            .executions
            .iter()
            .filter(|(_, e)| !e.status.is_closed())
            .map(|(arn, e)| index.summary(arn, e))
            .collect()
    }

    /// Folds every event batch of the executions open now, in log order per execution: one
    /// sequential scan of the log picks their records (batches of closed executions are skipped
    /// without decoding their events), then `partitions` threads decode and fold them, each
    /// execution always in the same partition. Returns each partition's state.
    ///
    /// A batch that does not decode, or that `fold` refuses (its error, kept as the damage's
    /// reason text), marks its execution damaged ([`Store::damage_of`]) and none of its later
    /// batches are folded: the caller drops what it folded of a damaged execution. The other
    /// executions fold on. `fold`'s error is the caller's own type (the core's typed fold
    /// error, or text).
    pub fn fold_open_batches<S: Send, E: std::fmt::Display>(
        &self,
        partitions: usize,
        init: impl Fn() -> S + Sync,
        fold: impl Fn(&mut S, EventBatch) -> Result<(), E> + Sync,
    ) -> Result<Vec<S>, Error> {
        let partitions = partitions.max(1);
        let open: std::collections::HashSet<Arc<str>> = {
            let index = self.index.read();
            index
                .executions
                .iter()
                .filter(|(_, e)| !e.status.is_closed())
                .map(|(arn, _)| arn.clone())
                .collect()
        };
        if open.is_empty() {
            return Ok(Vec::new());
        }
        // (lsn, execution, history bytes) per partition, in log order.
        let mut buckets: Vec<Vec<PendingBatch>> = vec![Vec::new(); partitions];
        // Copies made by compaction sit at the tail under new LSNs: bucket by original LSN and
        // sort, so each execution folds in event order.
        let mut copied = false;
        self.log
            .scan_with_origin(&mut |lsn, current, kind, payload| {
                copied |= lsn != current;
                if kind != KIND_EVENTS {
                    return Ok(());
                }
                // A header that does not read was marked damaged by `open`.
                let Ok((header, history_bytes)) = record::decode_batch_header(payload) else {
                    return Ok(());
                };
                let Some(arn) = open.get(header.execution_arn.as_str()) else {
                    return Ok(());
                };
                let partition = partition_of(arn, partitions);
                buckets[partition].push((lsn, arn.clone(), history_bytes.to_vec()));
                Ok(())
            })?;
        if copied {
            for bucket in &mut buckets {
                bucket.sort_by_key(|(lsn, _, _)| *lsn);
            }
        }
        let results: Vec<Result<S, Error>> = std::thread::scope(|scope| {
            let workers: Vec<_> = buckets
                .into_iter()
                .map(|bucket| {
                    let (init, fold) = (&init, &fold);
                    scope.spawn(move || {
                        let mut state = init();
                        let mut damaged: std::collections::HashSet<Arc<str>> = Default::default();
                        for (lsn, arn, bytes) in bucket {
                            if damaged.contains(&arn) {
                                continue;
                            }
                            let folded = match encoding::decode(&bytes) {
                                Ok(batch) if *batch.execution_arn != *arn => {
                                    Err(DamageReason::FoldForeignEvents {
                                        events_arn: batch.execution_arn,
                                    })
                                }
                                Ok(batch) => fold(&mut state, batch)
                                    .map_err(|error| DamageReason::Fold(error.to_string().into())),
                                Err(error) => Err(DamageReason::Events(Arc::new(error))),
                            };
                            if let Err(reason) = folded {
                                self.mark_damaged(&arn, lsn, reason);
                                damaged.insert(arn);
                            }
                        }
                        Ok(state)
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|worker| worker.join().expect("a recovery worker does not panic"))
                .collect()
        });
        results.into_iter().collect()
    }

    /// The whole history of one execution, read back from the log and checked.
    pub fn history(&self, execution_arn: &str) -> Result<Vec<HistoryEvent>, Error> {
        let _reading = self.reads.read();
        let lsns = self.record_lsns(execution_arn)?;
        let mut events = Vec::new();
        for lsn in lsns {
            events.extend(self.read_batch(execution_arn, lsn)?.events);
        }
        check_sequence(0, &events).map_err(|e| Error::BadSequence {
            execution_arn: execution_arn.to_string(),
            reason: SequenceReason::ReadBack(e),
        })?;
        Ok(events)
    }

    /// The events of one execution with ids in `ids` (as many of them as it has), read from the
    /// log and checked: only the records holding them are read, so a page of a long history
    /// costs the page, not the history.
    pub fn history_range(
        &self,
        execution_arn: &str,
        ids: std::ops::RangeInclusive<u32>,
    ) -> Result<Vec<HistoryEvent>, Error> {
        let first = (*ids.start()).max(1);
        let last = *ids.end();
        let _reading = self.reads.read();
        let lsns = self.record_lsns_holding(execution_arn, first..=last)?;
        let mut events = Vec::new();
        for lsn in lsns {
            events.extend(
                self.read_batch(execution_arn, lsn)?
                    .events
                    .into_iter()
                    .filter(|e| (first..=last).contains(&e.id.0)),
            );
        }
        check_sequence(first - 1, &events).map_err(|e| Error::BadSequence {
            execution_arn: execution_arn.to_string(),
            reason: SequenceReason::ReadBack(e),
        })?;
        Ok(events)
    }

    /// One event of one execution, read from the log: only the record holding it is read
    /// (found in the index), whatever the length of the history. `None` when the execution has
    /// no event with this id.
    pub fn event(
        &self,
        execution_arn: &str,
        event_id: EventId,
    ) -> Result<Option<HistoryEvent>, Error> {
        let _reading = self.reads.read();
        let lsn = {
            let index = self.index.read();
            let entry =
                index
                    .executions
                    .get(execution_arn)
                    .ok_or_else(|| Error::UnknownExecution {
                        execution_arn: execution_arn.to_string(),
                    })?;
            if event_id.0 == 0 || event_id.0 > entry.event_count {
                return Ok(None);
            }
            // Records hold dense, ascending ids: the last record starting at or before the
            // event holds it.
            let after = entry
                .records
                .partition_point(|record| record.first_event_id <= event_id.0);
            let Some(position) = after.checked_sub(1) else {
                unreachable!("the first record starts at event 1");
            };
            entry.records[position].lsn
        };
        let batch = self.read_batch(execution_arn, lsn)?;
        let event = batch.events.into_iter().find(|e| e.id == event_id);
        // Paired check: the index said this record holds the event.
        if event.is_none() {
            return Err(Error::BadSequence {
                execution_arn: execution_arn.to_string(),
                reason: SequenceReason::MissingEvent {
                    lsn: lsn.0,
                    event_id: event_id.0,
                },
            });
        }
        Ok(event)
    }

    /// The first and the last event of one execution, read from the log (two records at most).
    pub fn first_and_last_events(
        &self,
        execution_arn: &str,
    ) -> Result<(HistoryEvent, HistoryEvent), Error> {
        let _reading = self.reads.read();
        let lsns = self.record_lsns(execution_arn)?;
        let missing = || Error::UnknownExecution {
            execution_arn: execution_arn.to_string(),
        };
        let first_lsn = *lsns.first().ok_or_else(missing)?;
        let last_lsn = *lsns.last().ok_or_else(missing)?;
        // Kept at the append when that append made the record the index names last: nothing to
        // read back (but nothing not durable is answered, as from the log).
        let kept = self.recent_ends.lock().get(execution_arn, last_lsn);
        if let Some(ends) = kept {
            self.sync_unsynced_upto(last_lsn)?;
            return Ok(ends);
        }
        let (first, last) = self.read_ends(execution_arn, first_lsn)?;
        if last_lsn == first_lsn {
            return Ok((first, last));
        }
        let (_, last) = self.read_ends(execution_arn, last_lsn)?;
        Ok((first, last))
    }

    /// The log under the store.
    pub fn log(&self) -> &Arc<dyn Log> {
        &self.log
    }

    /// Makes every record appended unsynced or notifying so far durable. For a read of the index
    /// (a listing of executions' statuses) that must not show what is not durable yet: the index
    /// holds a batch as soon as it is appended.
    pub fn sync_unsynced(&self) -> Result<(), Error> {
        let unsynced = self.unsynced_lsn.load(std::sync::atomic::Ordering::Acquire);
        if unsynced == 0 {
            return Ok(());
        }
        self.sync_unsynced_upto(Lsn(unsynced))
    }

    /// Makes the records of [`Store::append_prepared_unsynced`] durable before one of them
    /// (at or below `lsn`) is read: nothing is read back before it is durable.
    fn sync_unsynced_upto(&self, lsn: Lsn) -> Result<(), Error> {
        use std::sync::atomic::Ordering;
        let unsynced = self.unsynced_lsn.load(Ordering::Acquire);
        if unsynced == 0 || lsn.0 > unsynced {
            return Ok(());
        }
        // Durable already (an older record than the newest unsynced one): nothing to wait for.
        // Notified appends keep an unsynced record in flight nearly always under load.
        if self.log.stats().durable_lsn >= lsn {
            return Ok(());
        }
        let durable = self.log.sync(Lsn(unsynced))?;
        if durable.0 >= unsynced {
            let _ = self.unsynced_lsn.compare_exchange(
                unsynced,
                0,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
        }
        Ok(())
    }

    /// The LSN of the last record the index holds for `execution_arn`.
    pub fn last_record_lsn(&self, execution_arn: &str) -> Option<Lsn> {
        let index = self.index.read();
        index
            .executions
            .get(execution_arn)?
            .records
            .last()
            .map(|record| record.lsn)
    }

    fn record_lsns(&self, execution_arn: &str) -> Result<Vec<Lsn>, Error> {
        self.record_lsns_holding(execution_arn, 1..=u32::MAX)
    }

    /// The LSNs of the execution's records that hold events with ids in `ids`, in order.
    fn record_lsns_holding(
        &self,
        execution_arn: &str,
        ids: std::ops::RangeInclusive<u32>,
    ) -> Result<Vec<Lsn>, Error> {
        let index = self.index.read();
        if let Some(damage) = index.damaged.get(execution_arn) {
            return Err(damage.error(execution_arn));
        }
        let entry = index
            .executions
            .get(execution_arn)
            .ok_or_else(|| Error::UnknownExecution {
                execution_arn: execution_arn.to_string(),
            })?;
        // Records hold dense, ascending ids: from the last one starting at or before the first
        // id asked for to the last one starting at or before the last.
        let from = entry
            .records
            .partition_point(|record| record.first_event_id <= *ids.start())
            .saturating_sub(1);
        Ok(entry.records[from..]
            .iter()
            .take_while(|record| record.first_event_id <= *ids.end())
            .map(|record| record.lsn)
            .collect())
    }

    fn read_batch(&self, execution_arn: &str, lsn: Lsn) -> Result<EventBatch, Error> {
        self.read_events(
            execution_arn,
            lsn,
            encoding::decode,
            |batch: &EventBatch| {
                (
                    batch.execution_arn.as_str(),
                    batch.events.first().map(|e| e.id.0),
                    batch.events.last().map(|e| e.id.0),
                )
            },
        )
    }

    /// The first and the last event of the record at `lsn` (the same event when it holds
    /// one), with the checks of `read_batch`; the events between them are not built
    /// (`encoding::decode_ends`).
    fn read_ends(
        &self,
        execution_arn: &str,
        lsn: Lsn,
    ) -> Result<(HistoryEvent, HistoryEvent), Error> {
        type Ends = (String, Option<(HistoryEvent, HistoryEvent)>);
        let (_, ends) =
            self.read_events(execution_arn, lsn, encoding::decode_ends, |ends: &Ends| {
                let (arn, events) = ends;
                (
                    arn.as_str(),
                    events.as_ref().map(|(first, _)| first.id.0),
                    events.as_ref().map(|(_, last)| last.id.0),
                )
            })?;
        ends.ok_or_else(|| Error::UnknownExecution {
            execution_arn: execution_arn.to_string(),
        })
    }

    /// Reads the record at `lsn` of `execution_arn` and decodes its events with `decode`;
    /// `ids` names what was decoded (its execution, first and last event ids) for the checks
    /// against the record's header.
    fn read_events<T>(
        &self,
        execution_arn: &str,
        lsn: Lsn,
        decode: impl FnOnce(&[u8]) -> Result<T, statelog_core::history::Error>,
        ids: impl Fn(&T) -> (&str, Option<u32>, Option<u32>),
    ) -> Result<T, Error> {
        self.sync_unsynced_upto(lsn)?;
        let (kind, payload) = self.log.read(lsn)?.ok_or_else(|| Error::MissingRecord {
            lsn: lsn.0,
            execution_arn: execution_arn.to_string(),
        })?;
        let decode_error = |reason: DecodeReason| Error::Decode {
            lsn: lsn.0,
            kind,
            reason,
        };
        if kind != KIND_EVENTS {
            return Err(decode_error(DecodeReason::NotAnEventBatch));
        }
        let (header, history_bytes) = record::decode_batch_header(&payload)
            .map_err(|e| decode_error(DecodeReason::Header(e)))?;
        let decoded = match decode(history_bytes) {
            Ok(decoded) => decoded,
            Err(error) => {
                // Its checksum held: a record this build cannot read damages its execution.
                let reason = DamageReason::Events(Arc::new(error));
                self.mark_damaged(execution_arn, lsn, reason.clone());
                return Err(Error::Damaged {
                    execution_arn: execution_arn.to_string(),
                    lsn: lsn.0,
                    reason,
                });
            }
        };
        let (found_arn, first, last) = ids(&decoded);
        if found_arn != execution_arn || header.execution_arn != execution_arn {
            return Err(Error::ForeignRecord {
                lsn: lsn.0,
                execution_arn: execution_arn.to_string(),
                found: found_arn.to_string(),
            });
        }
        // Paired check: the header written with the batch agrees with the events read back.
        if first != Some(header.first_event_id) || last != Some(header.last_event_id) {
            return Err(decode_error(DecodeReason::EventIds {
                first_event_id: header.first_event_id,
                last_event_id: header.last_event_id,
                found_first: first,
                found_last: last,
            }));
        }
        Ok(decoded)
    }
}

/// A batch picked for folding: its LSN, execution and history bytes.
type PendingBatch = (Lsn, Arc<str>, Vec<u8>);

/// The partition an execution's batches are folded in.
fn partition_of(arn: &str, partitions: usize) -> usize {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    arn.hash(&mut hasher);
    (hasher.finish() % partitions as u64) as usize
}

/// The index header of a batch of `events` (not empty) of `arn`.
fn header_for<'a>(arn: &'a str, events: &'a [HistoryEvent]) -> BatchHeaderRef<'a> {
    let first = events.first().expect("a batch has events");
    let last = events.last().expect("a batch has events");
    let started = match &first.details {
        // An execution started on a version names the version, whose revision it runs
        // (`versions`); through an alias, the version the alias chose.
        EventDetails::ExecutionStarted(details) if first.id.0 == 1 => Some(StartedHeaderRef {
            state_machine_arn: details
                .state_machine_version_arn
                .as_deref()
                .unwrap_or(&details.state_machine_arn),
            start_ms: first.timestamp_ms,
        }),
        _ => None,
    };
    let status = events
        .iter()
        .rev()
        .find_map(|e| ExecutionStatus::after(&e.details).map(|s| (s, e.timestamp_ms)));
    BatchHeaderRef {
        execution_arn: arn,
        first_event_id: first.id.0,
        last_event_id: last.id.0,
        started,
        status,
    }
}

/// The borrowed twin of [`EventBatch`]: postcard encodes `&str` as `String` and a slice as a
/// `Vec`, so this writes the same bytes without cloning the events (checked in debug builds
/// and by the store tests, which decode every record with `history::encoding::decode`).
#[derive(serde::Serialize)]
struct EventBatchRef<'a> {
    execution_arn: &'a str,
    events: &'a [HistoryEvent],
}

/// How [`Store::append_prepared_as`] waits for its batch.
enum Wait {
    /// Until it is durable.
    Synced,
    /// Until it is ordered (see [`Store::append_prepared_unsynced`]).
    Unsynced,
    /// Not at all: the callback is told once it is durable.
    Notify(OnDurable),
}

/// The encoded records of one decision: checked against the index, not written yet. Made by
/// [`Store::prepare_events`], written by [`Store::append_prepared`]; holds no borrow of the
/// events. Its buffers go back to the thread that drops it, for the next decision.
#[derive(Debug)]
pub struct PreparedEvents<'a> {
    execution_arn: &'a str,
    /// The machine revision of a new execution (from its `ExecutionStarted`).
    machine: Option<NewMachine>,
    /// A catalog record written as the batch's last record (a redrive's client token).
    catalog: Option<CatalogRecord>,
    scratch: EncodeScratch,
    /// The batch's ends, for `Store::recent_ends` once appended.
    ends: Option<recent_ends::Ends>,
}

impl Drop for PreparedEvents<'_> {
    fn drop(&mut self) {
        std::mem::take(&mut self.scratch).give_back();
    }
}

/// The buffers a decision's records are encoded into: the records' bytes back to back, and for
/// each record the end of its bytes and what the index takes from its header.
#[derive(Debug, Default)]
struct EncodeScratch {
    bytes: Vec<u8>,
    records: Vec<(usize, Indexed)>,
}

/// The largest encoding buffer a thread keeps between decisions: the common batch is 1 to
/// 3 KiB, and a thread that once encoded a 256 KiB payload must not hold that much for ever.
const ENCODE_SCRATCH_KEPT_BYTES_MAX: usize = 16 * 1024;

std::thread_local! {
    /// This thread's spare encoding buffers: an append then allocates nothing to encode (a
    /// fresh buffer per decision was a large allocation that made glibc's malloc consolidate
    /// its fast bins every time).
    static ENCODE_SCRATCH: std::cell::Cell<EncodeScratch> = const {
        std::cell::Cell::new(EncodeScratch { bytes: Vec::new(), records: Vec::new() })
    };
}

impl EncodeScratch {
    /// This thread's spare buffers (empty), or new ones.
    fn take() -> Self {
        let mut scratch = ENCODE_SCRATCH
            .try_with(std::cell::Cell::take)
            .unwrap_or_default();
        scratch.bytes.clear();
        scratch.records.clear();
        scratch
    }

    /// Keeps the buffers for this thread's next decision, unless they grew too big.
    fn give_back(self) {
        if self.bytes.capacity() <= ENCODE_SCRATCH_KEPT_BYTES_MAX {
            let _ = ENCODE_SCRATCH.try_with(|spare| spare.set(self));
        }
    }
}

/// A guess at one encoded event's size (a state event with a small payload), to size a fresh
/// buffer once.
const ENCODED_EVENT_BYTES_TYPICAL: usize = 64;

/// Encodes `events` (not empty) of `arn` as one or more event batch records appended to
/// `out`, each under the log's record limit.
fn encode_chunks(arn: &str, events: &[HistoryEvent], out: &mut EncodeScratch) -> Result<(), Error> {
    // `ExecutionRedriven` gets a record of its own (in the same atomic batch), so its header
    // alone says "running again" and the index counts redrives without decoding events.
    if events.len() > 1 && matches!(events[0].details, EventDetails::ExecutionRedriven(_)) {
        encode_chunks(arn, &events[..1], out)?;
        return encode_chunks(arn, &events[1..], out);
    }
    let header = header_for(arn, events);
    let encode_error = |e: postcard::Error| Error::Encode {
        what: "event batch",
        reason: e,
    };
    let start = out.bytes.len();
    // Room for typical small events up front: growing the buffer event by event reallocated
    // it several times per batch (a measurable share of a start).
    out.bytes
        .reserve(events.len() * ENCODED_EVENT_BYTES_TYPICAL);
    record::encode_batch_head_into(&header, &mut out.bytes)?;
    out.bytes.push(encoding::FORMAT_VERSION);
    let batch = EventBatchRef {
        execution_arn: arn,
        events,
    };
    record::postcard_append(&batch, &mut out.bytes).map_err(encode_error)?;
    let bytes = &out.bytes[start..];
    #[cfg(debug_assertions)]
    {
        let (_, history_bytes) =
            record::decode_batch_header(bytes).expect("a record just encoded decodes");
        let decoded = encoding::decode(history_bytes).expect("the borrowed batch decodes");
        debug_assert_eq!(decoded.events.len(), events.len());
        debug_assert_eq!(decoded.execution_arn, arn);
    }
    if bytes.len() <= statelog_wal::limits::RECORD_SIZE_BYTES_MAX || events.len() == 1 {
        out.records.push((out.bytes.len(), Indexed::of(&header)));
        return Ok(());
    }
    out.bytes.truncate(start);
    let (left, right) = events.split_at(events.len() / 2);
    encode_chunks(arn, left, out)?;
    encode_chunks(arn, right, out)
}

#[cfg(test)]
mod formats;
#[cfg(test)]
mod tests;
