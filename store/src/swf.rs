//! swf: the store's Amazon SWF records and their index. One record kind ([`KIND_SWF`]) holds
//! every SWF change: the registry (domains, workflow and activity types, their status, tag
//! sets) and the event batches of SWF workflow runs. The events of a batch are opaque bytes
//! here (`statelog_swf::encoding`, with their own format version): the store indexes a run by
//! the small [`RunHeader`] in front of them and never decodes them.
//!
//! Record layout: `[SWF_FORMAT_VERSION] ++ postcard(SwfRecord)`, and for
//! [`SwfRecord::Events`] the event bytes follow the postcard body (so `open` reads the header
//! without copying the events). Variant and field order is the wire format.
//!
//! The index ([`SwfIndex`]): live domains and types with their status, tag sets by resource
//! ARN, and every run (domain, workflow id, run id, type, start, tags, close, retention, the
//! LSNs of its records), in start order, with the one open run per `(domain, workflow id)`.
//!
//! Retention rule (applied by `Store::compact`): every record of an open run is kept; a closed
//! run's records are dropped once `now` is past its close plus its domain's retention (the
//! retention recorded in the closing batch); a registry record is kept while it is live
//! ([`SwfIndex::is_live`]); a deletion is always kept (it is what stops an older copy of the
//! registration it ends from reviving, see `is_live`). Nothing else is dropped.
//!
//! Invariants: a run's batches are dense from event 1, the first carries its start and the one
//! that closes it its close; at most one run of a `(domain, workflow id)` is open. Must not:
//! read a clock, decode SWF events, or judge an SWF operation (the engine validates; the store
//! records and indexes).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use statelog_wal::Lsn;

use super::record::{Damage, Format, ReadError};
use super::{Error, Store};

/// Record kind of every SWF record ([`SwfRecord`]).
pub const KIND_SWF: u8 = 4;

/// The format version of SWF records this build writes: the newest it reads.
pub const SWF_FORMAT_VERSION: u8 = 1;

/// SWF records ([`SwfRecord`]).
pub const SWF_FORMAT: Format = Format {
    name: "swf",
    kind: KIND_SWF,
    oldest: 1,
    newest: SWF_FORMAT_VERSION,
};

/// Milliseconds in a day (retention periods are whole days).
pub const DAY_MS: u64 = 86_400_000;

/// Which registry a type belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum TypeKind {
    /// A workflow type.
    Workflow,
    /// An activity type.
    Activity,
}

/// The defaults a type was registered with, as SWF's API gives them (timeouts are strings of
/// seconds or `NONE`). Workflow types use `task_start_to_close`, `execution_start_to_close`,
/// `task_list`, `task_priority`, `child_policy` and `lambda_role`; activity types use
/// `task_start_to_close`, `heartbeat`, `task_list`, `task_priority`, `schedule_to_start` and
/// `schedule_to_close`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TypeDefaults {
    /// `defaultTaskStartToCloseTimeout`.
    pub task_start_to_close: Option<String>,
    /// `defaultExecutionStartToCloseTimeout` (workflow types).
    pub execution_start_to_close: Option<String>,
    /// `defaultTaskList`.
    pub task_list: Option<String>,
    /// `defaultTaskPriority`.
    pub task_priority: Option<String>,
    /// `defaultChildPolicy` (workflow types).
    pub child_policy: Option<String>,
    /// `defaultLambdaRole` (workflow types).
    pub lambda_role: Option<String>,
    /// `defaultTaskHeartbeatTimeout` (activity types).
    pub heartbeat: Option<String>,
    /// `defaultTaskScheduleToStartTimeout` (activity types).
    pub schedule_to_start: Option<String>,
    /// `defaultTaskScheduleToCloseTimeout` (activity types).
    pub schedule_to_close: Option<String>,
}

/// How a run closed (SWF's `closeStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CloseStatus {
    /// `COMPLETED`.
    Completed,
    /// `FAILED`.
    Failed,
    /// `CANCELED`.
    Canceled,
    /// `TERMINATED`.
    Terminated,
    /// `CONTINUED_AS_NEW`.
    ContinuedAsNew,
    /// `TIMED_OUT`.
    TimedOut,
}

impl CloseStatus {
    /// SWF's name of it.
    pub fn aws_name(self) -> &'static str {
        match self {
            CloseStatus::Completed => "COMPLETED",
            CloseStatus::Failed => "FAILED",
            CloseStatus::Canceled => "CANCELED",
            CloseStatus::Terminated => "TERMINATED",
            CloseStatus::ContinuedAsNew => "CONTINUED_AS_NEW",
            CloseStatus::TimedOut => "TIMED_OUT",
        }
    }

    /// Parses SWF's name.
    pub fn from_aws_name(name: &str) -> Option<Self> {
        Some(match name {
            "COMPLETED" => CloseStatus::Completed,
            "FAILED" => CloseStatus::Failed,
            "CANCELED" => CloseStatus::Canceled,
            "TERMINATED" => CloseStatus::Terminated,
            "CONTINUED_AS_NEW" => CloseStatus::ContinuedAsNew,
            "TIMED_OUT" => CloseStatus::TimedOut,
            _ => return None,
        })
    }
}

/// The start of a run, as the index needs it (in the run's first batch).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunStart {
    /// The workflow type's name.
    pub type_name: String,
    /// The workflow type's version.
    pub type_version: String,
    /// When it started, ms since the epoch.
    pub start_ms: u64,
    /// Its `tagList`.
    pub tags: Vec<String>,
    /// The run it continues (`ContinueAsNew`), if any.
    pub continued_from: Option<String>,
}

/// The close of a run, as the index needs it (in the batch that closes it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunClose {
    /// How it closed.
    pub status: CloseStatus,
    /// When, ms since the epoch.
    pub close_ms: u64,
    /// Its domain's retention period at the close, in days: the run is gone
    /// `retention_days` after `close_ms`.
    pub retention_days: u32,
}

/// What the index takes from an SWF event batch; the events follow it in the record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunHeader {
    /// The run's domain.
    pub domain: String,
    /// The run's workflow id.
    pub workflow_id: String,
    /// The run id (unique in the store).
    pub run_id: String,
    /// The id of the batch's first event.
    pub first_event_id: u64,
    /// The id of the batch's last event.
    pub last_event_id: u64,
    /// Present in the run's first batch.
    pub start: Option<RunStart>,
    /// Present in the batch that closes the run.
    pub close: Option<RunClose>,
}

/// One SWF change. Field and variant order is the wire format (append only, with a version
/// bump).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum SwfRecord {
    /// `RegisterDomain`.
    DomainRegistered {
        /// Its name.
        name: String,
        /// Its description.
        description: Option<String>,
        /// `workflowExecutionRetentionPeriodInDays`.
        retention_days: u32,
        /// When, ms since the epoch.
        registered_ms: u64,
    },
    /// `DeprecateDomain`.
    DomainDeprecated {
        /// Its name.
        name: String,
        /// When, ms since the epoch.
        at_ms: u64,
    },
    /// `UndeprecateDomain`.
    DomainUndeprecated {
        /// Its name.
        name: String,
        /// When, ms since the epoch.
        at_ms: u64,
    },
    /// `DeleteDomain` (its types and tags go with it; its closed runs expire by retention).
    DomainDeleted {
        /// Its name.
        name: String,
        /// When, ms since the epoch.
        at_ms: u64,
    },
    /// `RegisterWorkflowType` / `RegisterActivityType`.
    TypeRegistered {
        /// The domain.
        domain: String,
        /// Workflow or activity type.
        kind: TypeKind,
        /// Its name.
        name: String,
        /// Its version.
        version: String,
        /// Its description.
        description: Option<String>,
        /// Its defaults.
        defaults: TypeDefaults,
        /// When, ms since the epoch.
        registered_ms: u64,
    },
    /// `DeprecateWorkflowType` / `DeprecateActivityType`.
    TypeDeprecated {
        /// The domain.
        domain: String,
        /// Workflow or activity type.
        kind: TypeKind,
        /// Its name.
        name: String,
        /// Its version.
        version: String,
        /// When, ms since the epoch.
        at_ms: u64,
    },
    /// `UndeprecateWorkflowType` / `UndeprecateActivityType`.
    TypeUndeprecated {
        /// The domain.
        domain: String,
        /// Workflow or activity type.
        kind: TypeKind,
        /// Its name.
        name: String,
        /// Its version.
        version: String,
        /// When, ms since the epoch.
        at_ms: u64,
    },
    /// `DeleteWorkflowType` / `DeleteActivityType`.
    TypeDeleted {
        /// The domain.
        domain: String,
        /// Workflow or activity type.
        kind: TypeKind,
        /// Its name.
        name: String,
        /// Its version.
        version: String,
        /// When, ms since the epoch.
        at_ms: u64,
    },
    /// The whole tag set of a domain after `TagResource` / `UntagResource` (empty: none). The
    /// latest record of a resource wins.
    TagsSet {
        /// The domain's ARN.
        resource_arn: String,
        /// `(key, value)` pairs, keys unique, in key order.
        tags: Vec<(String, String)>,
    },
    /// A batch of one run's events; the encoded events follow this header in the record.
    Events(RunHeader),
}

/// Encodes a registry record (any variant but `Events`).
pub fn encode_swf(record: &SwfRecord) -> Result<Vec<u8>, Error> {
    let mut bytes = vec![SWF_FORMAT_VERSION];
    bytes = postcard::to_extend(record, bytes).map_err(|e| Error::Encode {
        what: "swf record",
        reason: e,
    })?;
    Ok(bytes)
}

/// Encodes an event batch record: the header, then `events` (`statelog_swf::encoding` bytes).
pub fn encode_swf_events(header: &RunHeader, events: &[u8]) -> Result<Vec<u8>, Error> {
    let mut bytes = encode_swf(&SwfRecord::Events(header.clone()))?;
    bytes.extend_from_slice(events);
    Ok(bytes)
}

/// Decodes an SWF record of this build or an older one; for `Events`, also returns the event
/// bytes that follow the header (empty for the other variants, which have nothing after them).
pub fn decode_swf(bytes: &[u8]) -> Result<(SwfRecord, &[u8]), ReadError> {
    let (&version, body) = bytes
        .split_first()
        .ok_or(ReadError::Damaged(Damage::Empty {
            format: SWF_FORMAT.name,
        }))?;
    SWF_FORMAT.check(version)?;
    decode_swf_body(version, body)
}

/// The one place that reads each SWF version into today's [`SwfRecord`]. Version 1 is
/// today's type.
fn decode_swf_body(version: u8, body: &[u8]) -> Result<(SwfRecord, &[u8]), ReadError> {
    match version {
        1 => {
            let (record, rest): (SwfRecord, &[u8]) = postcard::take_from_bytes(body)
                .map_err(|e| ReadError::Damaged(Damage::Postcard(e)))?;
            match &record {
                SwfRecord::Events(header) => {
                    if header.last_event_id < header.first_event_id || rest.is_empty() {
                        return Err(ReadError::Damaged(Damage::IdsBackwards {
                            first_event_id: u32::try_from(header.first_event_id)
                                .unwrap_or(u32::MAX),
                            last_event_id: u32::try_from(header.last_event_id).unwrap_or(0),
                        }));
                    }
                    Ok((record, rest))
                }
                _ if !rest.is_empty() => Err(ReadError::Damaged(Damage::TrailingBytes {
                    count: rest.len(),
                })),
                _ => Ok((record, rest)),
            }
        }
        found => Err(ReadError::Damaged(Damage::NoDecoder {
            format: SWF_FORMAT.name,
            found,
        })),
    }
}

/// Whether a domain or type may be used for new work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegistrationStatus {
    /// `REGISTERED`.
    Registered,
    /// `DEPRECATED`.
    Deprecated,
}

impl RegistrationStatus {
    /// SWF's name of it.
    pub fn aws_name(self) -> &'static str {
        match self {
            RegistrationStatus::Registered => "REGISTERED",
            RegistrationStatus::Deprecated => "DEPRECATED",
        }
    }
}

/// A domain as the index holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainEntry {
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: Option<String>,
    /// Its retention period, in days.
    pub retention_days: u32,
    /// When it was registered, ms since the epoch.
    pub registered_ms: u64,
    /// Its status.
    pub status: RegistrationStatus,
    /// When the status last changed (`None`: as registered).
    pub status_ms: Option<u64>,
}

/// A type as the index holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeEntry {
    /// The domain.
    pub domain: String,
    /// Workflow or activity type.
    pub kind: TypeKind,
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Its description.
    pub description: Option<String>,
    /// Its defaults.
    pub defaults: TypeDefaults,
    /// When it was registered, ms since the epoch.
    pub registered_ms: u64,
    /// Its status.
    pub status: RegistrationStatus,
    /// When it was deprecated (`None` while registered).
    pub deprecated_ms: Option<u64>,
}

/// The key of a type in the index: domain, kind, name, version.
pub type TypeKey = (String, TypeKind, String, String);

/// A run as the index holds it (no events).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSummary {
    /// Its domain.
    pub domain: String,
    /// Its workflow id.
    pub workflow_id: String,
    /// Its run id.
    pub run_id: Arc<str>,
    /// How it started.
    pub start: RunStart,
    /// How it closed, once closed.
    pub close: Option<RunClose>,
    /// Events in its history.
    pub event_count: u64,
    /// Position in start order over the store's runs (0-based).
    pub start_index: u64,
}

impl RunSummary {
    /// When the run is gone (closed, plus its retention), if closed.
    pub fn expires_ms(&self) -> Option<u64> {
        self.close.as_ref().map(|c| {
            c.close_ms
                .saturating_add(u64::from(c.retention_days).saturating_mul(DAY_MS))
        })
    }

    /// Whether the run is past its retention at `now_ms`.
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expires_ms().is_some_and(|at| now_ms >= at)
    }
}

#[derive(Debug, Clone)]
pub(crate) struct RunEntry {
    pub(crate) summary: RunSummary,
    /// Its records in event order.
    pub(crate) records: Vec<Lsn>,
}

/// Every SWF thing the store knows, rebuilt from the log by `open`.
#[derive(Debug, Default, Clone)]
pub(crate) struct SwfIndex {
    pub(crate) domains: BTreeMap<String, DomainEntry>,
    pub(crate) types: BTreeMap<TypeKey, TypeEntry>,
    pub(crate) tags: BTreeMap<String, Vec<(String, String)>>,
    pub(crate) runs: HashMap<Arc<str>, RunEntry>,
    /// Run ids in start order (a forgotten run leaves its place: the entry is gone).
    pub(crate) started: Vec<Arc<str>>,
    /// The open run of each `(domain, workflow id)`.
    pub(crate) open_by_workflow: HashMap<(String, String), Arc<str>>,
    /// Workflow ids whose start is being appended (reserved before the append, so two racing
    /// starts of one id cannot both reach the log).
    pub(crate) starting: std::collections::HashSet<(String, String)>,
}

/// Why an SWF event batch does not follow the index.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SwfSequenceError {
    /// A new run's first batch without its start, or not from event 1.
    #[error("run {run_id}: a first batch must start at event 1 and carry the start")]
    NotStarted {
        /// The run.
        run_id: String,
    },
    /// A start of a run id that exists.
    #[error("run {run_id} exists already")]
    RunExists {
        /// The run.
        run_id: String,
    },
    /// A start while another run of the workflow id is open.
    #[error("workflow {workflow_id} of domain {domain} has an open run {open_run_id}")]
    WorkflowOpen {
        /// The domain.
        domain: String,
        /// The workflow id.
        workflow_id: String,
        /// The open run.
        open_run_id: String,
    },
    /// A batch that does not follow the run's last event, or names another workflow.
    #[error("run {run_id}: a batch of events {first}..={last} does not follow event {after}")]
    Gap {
        /// The run.
        run_id: String,
        /// The batch's first event.
        first: u64,
        /// The batch's last event.
        last: u64,
        /// The run's last event.
        after: u64,
    },
    /// A batch for a run that is closed.
    #[error("run {run_id} is closed")]
    Closed {
        /// The run.
        run_id: String,
    },
}

impl SwfIndex {
    /// Checks that a batch with `header` may follow the index.
    pub(crate) fn check(&self, header: &RunHeader) -> Result<(), SwfSequenceError> {
        self.check_after(header, &[])
    }

    /// Checks that a batch with `header` may follow the index once the runs `closed_before`
    /// are closed (earlier batches of the same atomic append close them).
    pub(crate) fn check_after(
        &self,
        header: &RunHeader,
        closed_before: &[&str],
    ) -> Result<(), SwfSequenceError> {
        match self.runs.get(header.run_id.as_str()) {
            None => {
                if header.start.is_none() || header.first_event_id != 1 {
                    return Err(SwfSequenceError::NotStarted {
                        run_id: header.run_id.clone(),
                    });
                }
                let key = (header.domain.clone(), header.workflow_id.clone());
                let open = self
                    .open_by_workflow
                    .get(&key)
                    .filter(|open| !closed_before.contains(&open.as_ref()));
                if let Some(open) = open {
                    return Err(SwfSequenceError::WorkflowOpen {
                        domain: header.domain.clone(),
                        workflow_id: header.workflow_id.clone(),
                        open_run_id: open.to_string(),
                    });
                }
                if self.starting.contains(&key) {
                    return Err(SwfSequenceError::WorkflowOpen {
                        domain: header.domain.clone(),
                        workflow_id: header.workflow_id.clone(),
                        open_run_id: "(a run being started)".to_string(),
                    });
                }
            }
            Some(entry) => {
                let s = &entry.summary;
                if header.start.is_some() {
                    return Err(SwfSequenceError::RunExists {
                        run_id: header.run_id.clone(),
                    });
                }
                if s.close.is_some() {
                    return Err(SwfSequenceError::Closed {
                        run_id: header.run_id.clone(),
                    });
                }
                if header.first_event_id != s.event_count + 1
                    || s.domain != header.domain
                    || s.workflow_id != header.workflow_id
                {
                    return Err(SwfSequenceError::Gap {
                        run_id: header.run_id.clone(),
                        first: header.first_event_id,
                        last: header.last_event_id,
                        after: s.event_count,
                    });
                }
            }
        }
        if header.last_event_id < header.first_event_id {
            return Err(SwfSequenceError::Gap {
                run_id: header.run_id.clone(),
                first: header.first_event_id,
                last: header.last_event_id,
                after: header.first_event_id.saturating_sub(1),
            });
        }
        Ok(())
    }

    /// Applies a checked batch whose record is at `lsn`.
    pub(crate) fn apply_events(&mut self, lsn: Lsn, header: RunHeader) {
        let run_id: Arc<str> = Arc::from(header.run_id.as_str());
        let key = (header.domain.clone(), header.workflow_id.clone());
        let entry = match self.runs.get_mut(&run_id) {
            Some(entry) => entry,
            None => {
                let Some(start) = header.start.clone() else {
                    return;
                };
                let start_index = self.started.len() as u64;
                self.started.push(run_id.clone());
                self.open_by_workflow.insert(key.clone(), run_id.clone());
                self.runs.entry(run_id.clone()).or_insert(RunEntry {
                    summary: RunSummary {
                        domain: header.domain.clone(),
                        workflow_id: header.workflow_id.clone(),
                        run_id: run_id.clone(),
                        start,
                        close: None,
                        event_count: 0,
                        start_index,
                    },
                    records: Vec::with_capacity(2),
                })
            }
        };
        entry.records.push(lsn);
        entry.summary.event_count = header.last_event_id;
        if let Some(close) = header.close {
            entry.summary.close = Some(close);
            entry.records.shrink_to_fit();
            if self.open_by_workflow.get(&key) == Some(&run_id) {
                self.open_by_workflow.remove(&key);
            }
        }
    }

    /// Applies a registry record (any variant but `Events`).
    pub(crate) fn apply_registry(&mut self, record: SwfRecord) {
        match record {
            SwfRecord::DomainRegistered {
                name,
                description,
                retention_days,
                registered_ms,
            } => {
                self.domains.insert(
                    name.clone(),
                    DomainEntry {
                        name,
                        description,
                        retention_days,
                        registered_ms,
                        status: RegistrationStatus::Registered,
                        status_ms: None,
                    },
                );
            }
            SwfRecord::DomainDeprecated { name, at_ms } => {
                if let Some(domain) = self.domains.get_mut(&name) {
                    domain.status = RegistrationStatus::Deprecated;
                    domain.status_ms = Some(at_ms);
                }
            }
            SwfRecord::DomainUndeprecated { name, at_ms } => {
                if let Some(domain) = self.domains.get_mut(&name) {
                    domain.status = RegistrationStatus::Registered;
                    domain.status_ms = Some(at_ms);
                }
            }
            SwfRecord::DomainDeleted { name, .. } => {
                self.domains.remove(&name);
                self.types.retain(|(domain, ..), _| *domain != name);
                self.tags
                    .retain(|arn, _| domain_of_arn(arn) != Some(name.as_str()));
            }
            SwfRecord::TypeRegistered {
                domain,
                kind,
                name,
                version,
                description,
                defaults,
                registered_ms,
            } => {
                let key = (domain.clone(), kind, name.clone(), version.clone());
                self.types.insert(
                    key,
                    TypeEntry {
                        domain,
                        kind,
                        name,
                        version,
                        description,
                        defaults,
                        registered_ms,
                        status: RegistrationStatus::Registered,
                        deprecated_ms: None,
                    },
                );
            }
            SwfRecord::TypeDeprecated {
                domain,
                kind,
                name,
                version,
                at_ms,
            } => {
                if let Some(entry) = self.types.get_mut(&(domain, kind, name, version)) {
                    entry.status = RegistrationStatus::Deprecated;
                    entry.deprecated_ms = Some(at_ms);
                }
            }
            SwfRecord::TypeUndeprecated {
                domain,
                kind,
                name,
                version,
                ..
            } => {
                if let Some(entry) = self.types.get_mut(&(domain, kind, name, version)) {
                    entry.status = RegistrationStatus::Registered;
                    entry.deprecated_ms = None;
                }
            }
            SwfRecord::TypeDeleted {
                domain,
                kind,
                name,
                version,
                ..
            } => {
                self.types.remove(&(domain, kind, name, version));
            }
            SwfRecord::TagsSet { resource_arn, tags } => {
                if tags.is_empty() {
                    self.tags.remove(&resource_arn);
                } else {
                    self.tags.insert(resource_arn, tags);
                }
            }
            SwfRecord::Events(_) => {}
        }
    }

    /// Whether a compaction must keep registry `record`: replaying the kept records in order
    /// gives this registry again. Records only ever turn from live to dead.
    pub(crate) fn is_live(&self, record: &SwfRecord) -> bool {
        match record {
            SwfRecord::DomainRegistered {
                name,
                registered_ms,
                ..
            } => self
                .domains
                .get(name)
                .is_some_and(|d| d.registered_ms == *registered_ms),
            // The record of the domain's current status (a twin of it replays the same).
            SwfRecord::DomainDeprecated { name, at_ms } => {
                self.domains.get(name).is_some_and(|d| {
                    d.status == RegistrationStatus::Deprecated && d.status_ms == Some(*at_ms)
                })
            }
            SwfRecord::DomainUndeprecated { name, at_ms } => {
                self.domains.get(name).is_some_and(|d| {
                    d.status == RegistrationStatus::Registered && d.status_ms == Some(*at_ms)
                })
            }
            // Kept: a copy of the registration it ended may sit after it in the log (copied
            // forward while still live); replayed in original order, the deletion still ends it.
            SwfRecord::DomainDeleted { .. } | SwfRecord::TypeDeleted { .. } => true,
            SwfRecord::TypeRegistered {
                domain,
                kind,
                name,
                version,
                registered_ms,
                ..
            } => self
                .types
                .get(&(domain.clone(), *kind, name.clone(), version.clone()))
                .is_some_and(|t| t.registered_ms == *registered_ms),
            SwfRecord::TypeDeprecated {
                domain,
                kind,
                name,
                version,
                at_ms,
            } => self
                .types
                .get(&(domain.clone(), *kind, name.clone(), version.clone()))
                .is_some_and(|t| t.deprecated_ms == Some(*at_ms)),
            // An undeprecation leaves the type as registered: the registration alone replays it.
            SwfRecord::TypeUndeprecated { .. } => false,
            SwfRecord::TagsSet { resource_arn, tags } => match self.tags.get(resource_arn) {
                Some(live) => live == tags,
                None => tags.is_empty(),
            },
            // Judged by the compaction's set of expired runs, not here.
            SwfRecord::Events(_) => true,
        }
    }

    /// The runs of `domain` (all domains when `None`) in start order, newest first unless
    /// `oldest_first`, that `keep` accepts, from start position `after` (exclusive, in the
    /// direction of the walk), at most `limit`.
    pub(crate) fn runs(
        &self,
        domain: Option<&str>,
        oldest_first: bool,
        after: Option<u64>,
        limit: usize,
        keep: &mut dyn FnMut(&RunSummary) -> bool,
    ) -> Vec<RunSummary> {
        let mut out = Vec::new();
        let len = self.started.len() as u64;
        let positions: Box<dyn Iterator<Item = u64>> = if oldest_first {
            Box::new(after.map_or(0, |a| a + 1)..len)
        } else {
            Box::new((0..after.unwrap_or(len).min(len)).rev())
        };
        for position in positions {
            if out.len() >= limit {
                break;
            }
            let run_id = &self.started[position as usize];
            let Some(entry) = self.runs.get(run_id) else {
                continue;
            };
            if entry.summary.start_index != position {
                continue;
            }
            if domain.is_some_and(|d| d != entry.summary.domain) {
                continue;
            }
            if keep(&entry.summary) {
                out.push(entry.summary.clone());
            }
        }
        out
    }
}

/// The domain name of an SWF domain ARN (`arn:aws:swf:<region>:<account>:/domain/<name>`).
pub fn domain_of_arn(arn: &str) -> Option<&str> {
    arn.split_once(":/domain/").map(|(_, name)| name)
}

impl super::Index {
    /// Applies an SWF record read by `open` (at current LSN `lsn`). A batch that does not follow
    /// its run damages that run (its later batches are not indexed); the others are served.
    pub(crate) fn apply_swf(&mut self, lsn: Lsn, record: SwfRecord) {
        match record {
            SwfRecord::Events(header) => {
                if self.damaged.contains_key(header.run_id.as_str()) {
                    return;
                }
                match self.swf.check(&header) {
                    Ok(()) => self.swf.apply_events(lsn, header),
                    Err(error) => self.mark_damaged(super::DamagedRecord {
                        lsn,
                        kind: KIND_SWF,
                        execution_arn: Some(Arc::from(header.run_id.as_str())),
                        reason: super::DamageReason::Sequence(Arc::new(Error::SwfSequence(error))),
                    }),
                }
            }
            registry => self.swf.apply_registry(registry),
        }
    }
}

/// A page of SWF runs (`Store::swf_runs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunPage {
    /// The runs.
    pub runs: Vec<RunSummary>,
    /// Whether runs past the page's last matched (pass its `start_index` back as `after`).
    pub more: bool,
}

impl Store {
    /// Appends registry records as one atomic batch (durable when it returns) and applies them
    /// in order. The caller (the engine) checks them against the registry and serializes
    /// registry changes.
    pub fn swf_append_registry(&self, records: Vec<SwfRecord>) -> Result<(), Error> {
        if records.is_empty() {
            return Ok(());
        }
        let _serial = self.machine_writes.lock();
        let encoded = records
            .iter()
            .map(encode_swf)
            .collect::<Result<Vec<_>, _>>()?;
        let framed: Vec<(u8, &[u8])> = encoded.iter().map(|b| (KIND_SWF, b.as_slice())).collect();
        self.log.append_batch(&framed)?;
        let mut index = self.index.write();
        for record in records {
            index.swf.apply_registry(record);
        }
        Ok(())
    }

    /// Appends one batch of a run's events (`events`: `statelog_swf::encoding` bytes), durable
    /// when it returns, and indexes it. The caller serializes appends per run.
    pub fn swf_append_events(&self, header: RunHeader, events: &[u8]) -> Result<(), Error> {
        self.swf_append_batches(vec![(header, events.to_vec())])
    }

    /// Appends batches of several runs as one atomic log batch (a run's close and the start of
    /// the run that continues it), durable when it returns, and indexes them in order. A start
    /// reserves its workflow id before the append, so two racing starts of one id cannot both
    /// reach the log; a later batch may start a workflow id an earlier one closes.
    pub fn swf_append_batches(&self, batches: Vec<(RunHeader, Vec<u8>)>) -> Result<(), Error> {
        if batches.is_empty() {
            return Ok(());
        }
        for (header, _) in &batches {
            if let Some(damage) = self.damage_of(&header.run_id) {
                return Err(damage.error(&header.run_id));
            }
        }
        let reserved: Vec<(String, String)> = {
            let mut index = self.index.write();
            let mut closed: Vec<&str> = Vec::new();
            for (header, _) in &batches {
                index.swf.check_after(header, &closed)?;
                if header.close.is_some() {
                    closed.push(&header.run_id);
                }
            }
            let reserved: Vec<(String, String)> = batches
                .iter()
                .filter(|(h, _)| h.start.is_some())
                .map(|(h, _)| (h.domain.clone(), h.workflow_id.clone()))
                .collect();
            index.swf.starting.extend(reserved.iter().cloned());
            reserved
        };
        let release = |index: &mut super::Index| {
            for key in &reserved {
                index.swf.starting.remove(key);
            }
        };
        let encoded: Result<Vec<Vec<u8>>, Error> = batches
            .iter()
            .map(|(header, events)| encode_swf_events(header, events))
            .collect();
        let appended = encoded.and_then(|encoded| {
            let framed: Vec<(u8, &[u8])> =
                encoded.iter().map(|b| (KIND_SWF, b.as_slice())).collect();
            self.log.append_batch(&framed)
        });
        let mut index = self.index.write();
        release(&mut index);
        let first = appended?;
        for (i, (header, _)) in batches.into_iter().enumerate() {
            index.swf.apply_events(Lsn(first.0 + i as u64), header);
        }
        Ok(())
    }

    /// A domain, live (registered or deprecated).
    pub fn swf_domain(&self, name: &str) -> Option<DomainEntry> {
        self.index.read().swf.domains.get(name).cloned()
    }

    /// Every live domain, by name.
    pub fn swf_domains(&self) -> Vec<DomainEntry> {
        self.index.read().swf.domains.values().cloned().collect()
    }

    /// A live type.
    pub fn swf_type(
        &self,
        domain: &str,
        kind: TypeKind,
        name: &str,
        version: &str,
    ) -> Option<TypeEntry> {
        let key = (
            domain.to_string(),
            kind,
            name.to_string(),
            version.to_string(),
        );
        self.index.read().swf.types.get(&key).cloned()
    }

    /// Every live type of `kind` in `domain`, by name then version.
    pub fn swf_types(&self, domain: &str, kind: TypeKind) -> Vec<TypeEntry> {
        self.index
            .read()
            .swf
            .types
            .values()
            .filter(|t| t.domain == domain && t.kind == kind)
            .cloned()
            .collect()
    }

    /// The tags of an SWF resource (empty: none).
    pub fn swf_tags(&self, resource_arn: &str) -> Vec<(String, String)> {
        self.index
            .read()
            .swf
            .tags
            .get(resource_arn)
            .cloned()
            .unwrap_or_default()
    }

    /// A run by id.
    pub fn swf_run(&self, run_id: &str) -> Option<RunSummary> {
        let index = self.index.read();
        index.swf.runs.get(run_id).map(|r| r.summary.clone())
    }

    /// The open run of a workflow id.
    pub fn swf_open_run(&self, domain: &str, workflow_id: &str) -> Option<RunSummary> {
        let index = self.index.read();
        let key = (domain.to_string(), workflow_id.to_string());
        let run_id = index.swf.open_by_workflow.get(&key)?;
        index.swf.runs.get(run_id).map(|r| r.summary.clone())
    }

    /// The runs of a workflow id, newest first.
    pub fn swf_runs_of_workflow(&self, domain: &str, workflow_id: &str) -> Vec<RunSummary> {
        let index = self.index.read();
        index
            .swf
            .runs(Some(domain), false, None, usize::MAX, &mut |r| {
                r.workflow_id == workflow_id
            })
    }

    /// A page of the runs of `domain` (every domain when `None`) in start order (newest first
    /// unless `oldest_first`), after start position `after` (exclusive), that `keep` accepts.
    pub fn swf_runs(
        &self,
        domain: Option<&str>,
        oldest_first: bool,
        after: Option<u64>,
        limit: usize,
        keep: &mut dyn FnMut(&RunSummary) -> bool,
    ) -> RunPage {
        let index = self.index.read();
        let mut runs = index
            .swf
            .runs(domain, oldest_first, after, limit.saturating_add(1), keep);
        let more = runs.len() > limit;
        runs.truncate(limit);
        RunPage { runs, more }
    }

    /// Every open run.
    pub fn swf_open_runs(&self) -> Vec<RunSummary> {
        let index = self.index.read();
        let mut runs: Vec<RunSummary> = index
            .swf
            .runs
            .values()
            .filter(|r| r.summary.close.is_none())
            .map(|r| r.summary.clone())
            .collect();
        runs.sort_by_key(|r| r.start_index);
        runs
    }

    /// The event bytes of each of a run's records, in event order (decode each with
    /// `statelog_swf::encoding`), read back from the log and checked against the index.
    pub fn swf_history(&self, run_id: &str) -> Result<Vec<Vec<u8>>, Error> {
        let _reading = self.reads.read();
        if let Some(damage) = self.damage_of(run_id) {
            return Err(damage.error(run_id));
        }
        let lsns = {
            let index = self.index.read();
            let entry = index
                .swf
                .runs
                .get(run_id)
                .ok_or_else(|| Error::UnknownRun {
                    run_id: run_id.to_string(),
                })?;
            entry.records.clone()
        };
        let mut out = Vec::with_capacity(lsns.len());
        let mut next = 1u64;
        for lsn in lsns {
            let (kind, payload) = self.log.read(lsn)?.ok_or_else(|| Error::MissingRecord {
                lsn: lsn.0,
                execution_arn: run_id.to_string(),
            })?;
            let decode_error = |reason: super::DecodeReason| Error::Decode {
                lsn: lsn.0,
                kind,
                reason,
            };
            if kind != KIND_SWF {
                return Err(decode_error(super::DecodeReason::NotAnEventBatch));
            }
            let (record, events) =
                decode_swf(&payload).map_err(|e| decode_error(super::DecodeReason::Header(e)))?;
            let SwfRecord::Events(header) = record else {
                return Err(decode_error(super::DecodeReason::NotAnEventBatch));
            };
            if header.run_id != run_id {
                return Err(Error::ForeignRecord {
                    lsn: lsn.0,
                    execution_arn: run_id.to_string(),
                    found: header.run_id,
                });
            }
            // Paired check: the index's records are dense from event 1.
            if header.first_event_id != next {
                return Err(Error::SwfSequence(SwfSequenceError::Gap {
                    run_id: run_id.to_string(),
                    first: header.first_event_id,
                    last: header.last_event_id,
                    after: next - 1,
                }));
            }
            next = header.last_event_id + 1;
            out.push(events.to_vec());
        }
        Ok(out)
    }

    /// Marks a run damaged (its events do not decode or fold): calls on it then answer
    /// [`Error::Damaged`].
    pub fn swf_mark_damaged(&self, run_id: &str, reason: impl Into<super::DamageReason>) {
        let lsn = {
            let index = self.index.read();
            index
                .swf
                .runs
                .get(run_id)
                .and_then(|r| r.records.last().copied())
                .unwrap_or(Lsn(0))
        };
        self.index.write().mark_damaged(super::DamagedRecord {
            lsn,
            kind: KIND_SWF,
            execution_arn: Some(Arc::from(run_id)),
            reason: reason.into(),
        });
    }
}

/// One sample of every variant (and every close status) of an SWF record, labelled, for the
/// golden-sample test of `formats.rs`.
#[cfg(test)]
pub(crate) fn samples() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let kinds = [TypeKind::Workflow, TypeKind::Activity];
    let records = vec![
        SwfRecord::DomainRegistered {
            name: "d".into(),
            description: Some("a domain".into()),
            retention_days: 3,
            registered_ms: 1,
        },
        SwfRecord::DomainDeprecated {
            name: "d".into(),
            at_ms: 2,
        },
        SwfRecord::DomainUndeprecated {
            name: "d".into(),
            at_ms: 3,
        },
        SwfRecord::DomainDeleted {
            name: "d".into(),
            at_ms: 4,
        },
        SwfRecord::TagsSet {
            resource_arn: "arn:aws:swf:us-east-1:000000000000:/domain/d".into(),
            tags: vec![("k".into(), "v".into())],
        },
    ];
    for record in records {
        let label = format!("{record:?}")
            .split([' ', '('])
            .next()
            .unwrap_or_default()
            .to_string();
        out.push((label, encode_swf(&record).expect("encodes")));
    }
    for kind in kinds {
        let defaults = TypeDefaults {
            task_start_to_close: Some("10".into()),
            execution_start_to_close: Some("3600".into()),
            task_list: Some("tl".into()),
            task_priority: Some("1".into()),
            child_policy: Some("TERMINATE".into()),
            lambda_role: Some("role".into()),
            heartbeat: Some("NONE".into()),
            schedule_to_start: Some("5".into()),
            schedule_to_close: Some("20".into()),
        };
        let (domain, name, version) = ("d".to_string(), "t".to_string(), "1".to_string());
        let typed = [
            SwfRecord::TypeRegistered {
                domain: domain.clone(),
                kind,
                name: name.clone(),
                version: version.clone(),
                description: None,
                defaults,
                registered_ms: 5,
            },
            SwfRecord::TypeDeprecated {
                domain: domain.clone(),
                kind,
                name: name.clone(),
                version: version.clone(),
                at_ms: 6,
            },
            SwfRecord::TypeUndeprecated {
                domain: domain.clone(),
                kind,
                name: name.clone(),
                version: version.clone(),
                at_ms: 7,
            },
            SwfRecord::TypeDeleted {
                domain,
                kind,
                name,
                version,
                at_ms: 8,
            },
        ];
        for record in typed {
            let label = format!("{record:?}")
                .split([' ', '('])
                .next()
                .unwrap_or_default()
                .to_string();
            out.push((
                format!("{label}-{kind:?}"),
                encode_swf(&record).expect("encodes"),
            ));
        }
    }
    let statuses = [
        CloseStatus::Completed,
        CloseStatus::Failed,
        CloseStatus::Canceled,
        CloseStatus::Terminated,
        CloseStatus::ContinuedAsNew,
        CloseStatus::TimedOut,
    ];
    let header = |start: bool, close: Option<CloseStatus>| RunHeader {
        domain: "d".into(),
        workflow_id: "w".into(),
        run_id: "r".into(),
        first_event_id: 1,
        last_event_id: 4,
        start: start.then(|| RunStart {
            type_name: "t".into(),
            type_version: "1".into(),
            start_ms: 9,
            tags: vec!["tag".into()],
            continued_from: Some("r0".into()),
        }),
        close: close.map(|status| RunClose {
            status,
            close_ms: 10,
            retention_days: 1,
        }),
    };
    out.push((
        "Events-continued".into(),
        encode_swf_events(&header(false, None), b"ev").expect("encodes"),
    ));
    for status in statuses {
        out.push((
            format!("Events-started-{status:?}"),
            encode_swf_events(&header(true, Some(status)), b"ev").expect("encodes"),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sample_round_trips_and_damage_is_refused() {
        for (label, bytes) in samples() {
            let (record, rest) = decode_swf(&bytes).expect(&label);
            let again = match &record {
                SwfRecord::Events(header) => encode_swf_events(header, rest).expect("encodes"),
                other => encode_swf(other).expect("encodes"),
            };
            assert_eq!(again, bytes, "{label}");
            let mut newer = bytes.clone();
            newer[0] = 2;
            assert!(matches!(decode_swf(&newer), Err(ReadError::Newer(_))));
            assert!(decode_swf(&bytes[..bytes.len() / 2]).is_err(), "{label}");
        }
        assert!(decode_swf(&[]).is_err());
        let mut trailing = encode_swf(&SwfRecord::DomainDeleted {
            name: "d".into(),
            at_ms: 1,
        })
        .expect("encodes");
        trailing.push(0);
        assert!(matches!(
            decode_swf(&trailing),
            Err(ReadError::Damaged(Damage::TrailingBytes { count: 1 }))
        ));
    }

    fn run_header(run: &str, first: u64, last: u64, start: bool, close: bool) -> RunHeader {
        RunHeader {
            domain: "d".into(),
            workflow_id: "w".into(),
            run_id: run.into(),
            first_event_id: first,
            last_event_id: last,
            start: start.then(|| RunStart {
                type_name: "t".into(),
                type_version: "1".into(),
                start_ms: 100,
                tags: Vec::new(),
                continued_from: None,
            }),
            close: close.then_some(RunClose {
                status: CloseStatus::Completed,
                close_ms: 200,
                retention_days: 1,
            }),
        }
    }

    #[test]
    fn the_index_checks_runs_and_keeps_one_open_run_per_workflow() {
        let mut index = SwfIndex::default();
        assert!(index.check(&run_header("r1", 2, 3, true, false)).is_err());
        assert!(index.check(&run_header("r1", 1, 3, false, false)).is_err());
        let first = run_header("r1", 1, 3, true, false);
        index.check(&first).expect("a start");
        index.apply_events(Lsn(1), first);
        assert!(matches!(
            index.check(&run_header("r2", 1, 1, true, false)),
            Err(SwfSequenceError::WorkflowOpen { .. })
        ));
        assert!(index.check(&run_header("r1", 5, 6, false, false)).is_err());
        let close = run_header("r1", 4, 5, false, true);
        index.check(&close).expect("follows");
        index.apply_events(Lsn(2), close);
        assert!(index.check(&run_header("r1", 6, 6, false, false)).is_err());
        index
            .check(&run_header("r2", 1, 1, true, false))
            .expect("the workflow id is free again");
        let run = &index.runs["r1"].summary;
        assert_eq!(run.event_count, 5);
        assert_eq!(run.expires_ms(), Some(200 + DAY_MS));
        assert!(!run.is_expired(200 + DAY_MS - 1));
        assert!(run.is_expired(200 + DAY_MS));
    }

    #[test]
    fn registry_liveness_follows_the_registry() {
        let mut index = SwfIndex::default();
        let registered = SwfRecord::DomainRegistered {
            name: "d".into(),
            description: None,
            retention_days: 1,
            registered_ms: 1,
        };
        let deprecated = SwfRecord::DomainDeprecated {
            name: "d".into(),
            at_ms: 2,
        };
        let undeprecated = SwfRecord::DomainUndeprecated {
            name: "d".into(),
            at_ms: 3,
        };
        index.apply_registry(registered.clone());
        assert!(index.is_live(&registered));
        index.apply_registry(deprecated.clone());
        assert!(index.is_live(&deprecated));
        index.apply_registry(undeprecated.clone());
        assert!(!index.is_live(&deprecated));
        assert!(index.is_live(&undeprecated));
        let deleted = SwfRecord::DomainDeleted {
            name: "d".into(),
            at_ms: 4,
        };
        index.apply_registry(deleted.clone());
        assert!(!index.is_live(&registered));
        assert!(!index.is_live(&undeprecated));
        assert!(index.is_live(&deleted));
    }
}
