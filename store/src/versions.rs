//! versions: the versions and aliases of state machines. A version is an immutable pointer to
//! one revision of a machine (the LSN of its creation or update record) with a number and a
//! description; an alias is a named routing over one or two versions of the same machine. Each
//! change is one `KIND_CATALOG` record (`VersionPublished`, `VersionDeleted`, `AliasSet`,
//! `AliasDeleted`), folded by `Store::open` in original-LSN order with the machine and event
//! records.
//!
//! Invariants:
//! - Version numbers count from 1 per machine (per incarnation: its creation LSN) and are never
//!   used twice, also after a deletion, a restart or a compaction: every version record is
//!   kept by compaction (as machine records are), so the highest number ever used is always
//!   in the log.
//! - An execution started on a version names it in its batch header (`state_machine_arn` is
//!   the version's ARN, `...:stateMachine:NAME:N`); the index resolves it to the version's
//!   revision, also for a version deleted since (its record is kept), so the execution runs
//!   that revision for its whole life and after every reopen.
//! - A version an alias routes to is not deleted (`VersionInUse`); an alias routes only to live
//!   versions of its own machine. Deleting a machine deletes its versions and aliases.
//! - Changes are serialized by the store's `machine_writes` lock and durable before the index
//!   shows them, as every catalog change.
//!
//! Must not: read a clock (times come in), judge names, descriptions or weights (the engine
//! does), or know the region and account of an ARN.

use std::collections::{BTreeMap, HashMap};

use statelog_wal::Lsn;

use super::record::CatalogRecord;
use super::{machine_name, Error, Index, Store};

/// One published version of a state machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionEntry {
    /// The state machine's name.
    pub machine: String,
    /// Its number (from 1 per machine, never reused).
    pub number: u32,
    /// The revision it runs: the LSN of its machine record (see `Machine::lsn`).
    pub revision_lsn: Lsn,
    /// Its description, if one was given.
    pub description: Option<String>,
    /// When it was published, ms since the epoch.
    pub created_ms: u64,
}

/// One alias of a state machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AliasEntry {
    /// The state machine's name.
    pub machine: String,
    /// The alias's name.
    pub name: String,
    /// Its description, if any.
    pub description: Option<String>,
    /// `(version number, weight)`, in the order given: one or two entries.
    pub routing: Vec<(u32, u32)>,
    /// When it was created, ms since the epoch.
    pub created_ms: u64,
    /// When it was last updated, ms since the epoch (`None`: never).
    pub updated_ms: Option<u64>,
}

impl AliasEntry {
    fn record(&self) -> CatalogRecord {
        CatalogRecord::AliasSet {
            machine: self.machine.clone(),
            name: self.name.clone(),
            description: self.description.clone(),
            routing: self.routing.clone(),
            created_ms: self.created_ms,
            updated_ms: self.updated_ms,
        }
    }
}

/// A version found in the fold, with whether it was deleted since.
#[derive(Debug, Clone)]
struct Published {
    entry: VersionEntry,
    deleted: bool,
}

/// The versions and aliases folded from the log (part of the catalog).
#[derive(Debug, Default, Clone)]
pub(super) struct Versions {
    /// Every version ever published, by (its machine's creation LSN, number), deleted ones
    /// too: executions started on one resolve their revision through it.
    published: BTreeMap<(Lsn, u32), Published>,
    /// The highest version number used per machine (creation LSN).
    last_number: HashMap<Lsn, u32>,
    /// Live aliases by (machine name, alias name).
    aliases: BTreeMap<(String, String), AliasEntry>,
}

impl Versions {
    /// Whether a compaction must keep `record` (one of this module's variants): version records
    /// always; an alias's record while it is the alias's current state.
    pub(super) fn is_live(&self, record: &CatalogRecord) -> bool {
        match record {
            CatalogRecord::VersionPublished { .. } | CatalogRecord::VersionDeleted { .. } => true,
            CatalogRecord::AliasSet { machine, name, .. } => self
                .aliases
                .get(&(machine.clone(), name.clone()))
                .is_some_and(|live| live.record() == *record),
            _ => false,
        }
    }

    /// Forgets the machine created at `origin` and named `name` (it was deleted): its versions
    /// are deleted, its aliases gone.
    pub(super) fn forget_machine(&mut self, origin: Lsn, name: &str) {
        for published in self
            .published
            .range_mut((origin, 0)..=(origin, u32::MAX))
            .map(|(_, p)| p)
        {
            published.deleted = true;
        }
        self.aliases.retain(|(machine, _), _| machine != name);
    }
}

/// Splits the name part of a state machine ARN's resource (`NAME` or `NAME:N`) into the name
/// and the version number, if it is a version's.
pub(super) fn split_version(qualified: &str) -> (&str, Option<u32>) {
    match qualified.split_once(':') {
        Some((name, number)) => match number.parse::<u32>() {
            Ok(number) => (name, Some(number)),
            Err(_) => (qualified, None),
        },
        None => (qualified, None),
    }
}

impl Index {
    /// The creation LSN of the live machine `name`.
    fn live_origin(&self, name: &str) -> Option<Lsn> {
        let lsn = self.live_machines.get(name)?;
        self.machines.get(lsn).map(|m| m.origin_lsn)
    }

    /// The revision version `number` of the live machine `name` runs, deleted or not (an
    /// execution started on it before its deletion still names it).
    pub(super) fn version_revision(&self, name: &str, number: u32) -> Option<Lsn> {
        let origin = self.live_origin(name)?;
        let versions = &self.catalog.versions;
        versions
            .published
            .get(&(origin, number))
            .map(|p| p.entry.revision_lsn)
    }

    /// The live version `number` of the live machine `name`.
    fn live_version(&self, name: &str, number: u32) -> Option<&VersionEntry> {
        let origin = self.live_origin(name)?;
        let published = self.catalog.versions.published.get(&(origin, number))?;
        (!published.deleted).then_some(&published.entry)
    }

    /// The live versions of the live machine `name`, newest first.
    fn live_versions(&self, name: &str) -> Vec<VersionEntry> {
        let Some(origin) = self.live_origin(name) else {
            return Vec::new();
        };
        let versions = &self.catalog.versions;
        versions
            .published
            .range((origin, 0)..=(origin, u32::MAX))
            .rev()
            .filter(|(_, p)| !p.deleted)
            .map(|(_, p)| p.entry.clone())
            .collect()
    }

    /// Applies one of this module's catalog records.
    pub(super) fn apply_version_record(&mut self, record: CatalogRecord) {
        match record {
            CatalogRecord::VersionPublished {
                machine,
                number,
                revision_lsn,
                description,
                created_ms,
            } => {
                let revision_lsn = Lsn(revision_lsn);
                // A version of a revision the log does not hold cannot be written; a log
                // holding one changes nothing.
                let Some(origin) = self.machines.get(&revision_lsn).map(|m| m.origin_lsn) else {
                    return;
                };
                let versions = &mut self.catalog.versions;
                let last = versions.last_number.entry(origin).or_default();
                *last = (*last).max(number);
                versions.published.insert(
                    (origin, number),
                    Published {
                        entry: VersionEntry {
                            machine,
                            number,
                            revision_lsn,
                            description,
                            created_ms,
                        },
                        deleted: false,
                    },
                );
            }
            CatalogRecord::VersionDeleted {
                machine, number, ..
            } => {
                let Some(origin) = self.live_origin(&machine) else {
                    return;
                };
                let versions = &mut self.catalog.versions;
                let last = versions.last_number.entry(origin).or_default();
                *last = (*last).max(number);
                if let Some(published) = versions.published.get_mut(&(origin, number)) {
                    published.deleted = true;
                }
            }
            CatalogRecord::AliasSet {
                machine,
                name,
                description,
                routing,
                created_ms,
                updated_ms,
            } => {
                if !self.live_machines.contains_key(&machine) {
                    return;
                }
                let entry = AliasEntry {
                    machine: machine.clone(),
                    name: name.clone(),
                    description,
                    routing,
                    created_ms,
                    updated_ms,
                };
                self.catalog.versions.aliases.insert((machine, name), entry);
            }
            CatalogRecord::AliasDeleted { machine, name, .. } => {
                self.catalog.versions.aliases.remove(&(machine, name));
            }
            CatalogRecord::ActivityCreated { .. }
            | CatalogRecord::ActivityDeleted { .. }
            | CatalogRecord::TagsSet { .. }
            | CatalogRecord::Redriven { .. } => {
                debug_assert!(false, "not a version or alias record");
            }
        }
    }

    /// The aliases of machine `name` that route to version `number`.
    fn aliases_routing_to(&self, name: &str, number: u32) -> Vec<String> {
        self.catalog
            .versions
            .aliases
            .values()
            .filter(|a| a.machine == name && a.routing.iter().any(|(n, _)| *n == number))
            .map(|a| a.name.clone())
            .collect()
    }

    /// `UnknownVersion` unless every version of `routing` is a live version of `machine`.
    fn check_routing(&self, machine: &str, routing: &[(u32, u32)]) -> Result<(), Error> {
        for (number, _) in routing {
            if self.live_version(machine, *number).is_none() {
                return Err(Error::UnknownVersion {
                    machine: machine.to_string(),
                    number: *number,
                });
            }
        }
        Ok(())
    }
}

impl Store {
    /// Publishes the current revision of the live machine `name` as a new version, or returns
    /// the live version that already points at it (the flag says whether this call published).
    /// With `only_if_revision`, the current revision must be that one (`RevisionChanged`
    /// otherwise). `TooManyVersions` when the machine has `versions_max` live versions.
    pub fn publish_version(
        &self,
        name: &str,
        only_if_revision: Option<Lsn>,
        description: Option<&str>,
        versions_max: usize,
        now_ms: u64,
    ) -> Result<(VersionEntry, bool), Error> {
        let _serial = self.machine_writes.lock();
        let (revision_lsn, number) = {
            let index = self.index.read();
            let (Some(&revision_lsn), Some(origin)) =
                (index.live_machines.get(name), index.live_origin(name))
            else {
                return Err(Error::UnknownMachine {
                    name: name.to_string(),
                });
            };
            if let Some(expected) = only_if_revision {
                if expected != revision_lsn {
                    return Err(Error::RevisionChanged {
                        machine: name.to_string(),
                        expected,
                        current: revision_lsn,
                    });
                }
            }
            let live = index.live_versions(name);
            if let Some(existing) = live.iter().find(|v| v.revision_lsn == revision_lsn) {
                return Ok((existing.clone(), false));
            }
            if live.len() >= versions_max {
                return Err(Error::TooManyVersions {
                    machine: name.to_string(),
                    limit: versions_max,
                });
            }
            let last = index
                .catalog
                .versions
                .last_number
                .get(&origin)
                .copied()
                .unwrap_or(0);
            (revision_lsn, last + 1)
        };
        self.append_catalog(CatalogRecord::VersionPublished {
            machine: name.to_string(),
            number,
            revision_lsn: revision_lsn.0,
            description: description.map(str::to_string),
            created_ms: now_ms,
        })?;
        let index = self.index.read();
        let published = index
            .live_version(name, number)
            .cloned()
            .expect("a version is applied once its record is durable");
        Ok((published, true))
    }

    /// The live version `number` of the live machine `name`.
    pub fn version(&self, name: &str, number: u32) -> Option<VersionEntry> {
        self.index.read().live_version(name, number).cloned()
    }

    /// The live versions of the live machine `name`, newest first.
    pub fn versions(&self, name: &str) -> Vec<VersionEntry> {
        self.index.read().live_versions(name)
    }

    /// Deletes version `number` of the live machine `name`; `false` when there is no such live
    /// version. `VersionInUse` when an alias routes to it (nothing is written then).
    pub fn delete_version(&self, name: &str, number: u32, now_ms: u64) -> Result<bool, Error> {
        let _serial = self.machine_writes.lock();
        {
            let index = self.index.read();
            if index.live_version(name, number).is_none() {
                return Ok(false);
            }
            let aliases = index.aliases_routing_to(name, number);
            if !aliases.is_empty() {
                return Err(Error::VersionInUse {
                    machine: name.to_string(),
                    number,
                    aliases,
                });
            }
        }
        self.append_catalog(CatalogRecord::VersionDeleted {
            machine: name.to_string(),
            number,
            deleted_ms: now_ms,
        })?;
        Ok(true)
    }

    /// Creates alias `alias` of the live machine `machine` routing to live versions of it; an
    /// existing alias with the same description and routing is returned unchanged (the flag
    /// says whether this call created it), one that differs is `AliasExists`.
    pub fn create_alias(
        &self,
        machine: &str,
        alias: &str,
        description: Option<&str>,
        routing: &[(u32, u32)],
        now_ms: u64,
    ) -> Result<(AliasEntry, bool), Error> {
        let _serial = self.machine_writes.lock();
        {
            let index = self.index.read();
            self.require_live_machine_in(&index, machine)?;
            if let Some(existing) = index
                .catalog
                .versions
                .aliases
                .get(&(machine.to_string(), alias.to_string()))
            {
                if existing.description.as_deref() == description && existing.routing == routing {
                    return Ok((existing.clone(), false));
                }
                return Err(Error::AliasExists {
                    machine: machine.to_string(),
                    alias: alias.to_string(),
                });
            }
            index.check_routing(machine, routing)?;
        }
        let entry = AliasEntry {
            machine: machine.to_string(),
            name: alias.to_string(),
            description: description.map(str::to_string),
            routing: routing.to_vec(),
            created_ms: now_ms,
            updated_ms: None,
        };
        self.append_catalog(entry.record())?;
        Ok((entry, true))
    }

    /// Changes the description (when `description` is given) and the routing (when `routing`
    /// is) of an existing alias. `UnknownAlias` when there is none.
    pub fn update_alias(
        &self,
        machine: &str,
        alias: &str,
        description: Option<&str>,
        routing: Option<&[(u32, u32)]>,
        now_ms: u64,
    ) -> Result<AliasEntry, Error> {
        let _serial = self.machine_writes.lock();
        let mut entry = {
            let index = self.index.read();
            let Some(existing) = index
                .catalog
                .versions
                .aliases
                .get(&(machine.to_string(), alias.to_string()))
            else {
                return Err(Error::UnknownAlias {
                    machine: machine.to_string(),
                    alias: alias.to_string(),
                });
            };
            if let Some(routing) = routing {
                index.check_routing(machine, routing)?;
            }
            existing.clone()
        };
        if let Some(description) = description {
            entry.description = Some(description.to_string());
        }
        if let Some(routing) = routing {
            entry.routing = routing.to_vec();
        }
        entry.updated_ms = Some(now_ms);
        self.append_catalog(entry.record())?;
        Ok(entry)
    }

    /// Deletes an alias; `false` when there is none.
    pub fn delete_alias(&self, machine: &str, alias: &str, now_ms: u64) -> Result<bool, Error> {
        let _serial = self.machine_writes.lock();
        if self.alias(machine, alias).is_none() {
            return Ok(false);
        }
        self.append_catalog(CatalogRecord::AliasDeleted {
            machine: machine.to_string(),
            name: alias.to_string(),
            deleted_ms: now_ms,
        })?;
        Ok(true)
    }

    /// The alias `alias` of machine `machine`.
    pub fn alias(&self, machine: &str, alias: &str) -> Option<AliasEntry> {
        let index = self.index.read();
        index
            .catalog
            .versions
            .aliases
            .get(&(machine.to_string(), alias.to_string()))
            .cloned()
    }

    /// The aliases of machine `machine`, by name.
    pub fn aliases(&self, machine: &str) -> Vec<AliasEntry> {
        let index = self.index.read();
        index
            .catalog
            .versions
            .aliases
            .values()
            .filter(|a| a.machine == machine)
            .cloned()
            .collect()
    }

    fn require_live_machine_in(&self, index: &Index, name: &str) -> Result<(), Error> {
        if index.live_machines.contains_key(name) {
            return Ok(());
        }
        Err(Error::UnknownMachine {
            name: name.to_string(),
        })
    }
}

/// The machine name and version number a started batch's `state_machine_arn` names.
pub(super) fn started_machine(state_machine_arn: &str) -> (&str, Option<u32>) {
    split_version(machine_name(state_machine_arn))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::super::{Log, MemoryLog, Store};
    use super::*;
    use statelog_core::history::{EventDetails, EventId, ExecutionStarted, HistoryEvent};

    const BASE: &str = "arn:aws:states:us-east-1:000000000000";

    fn start(store: &Store, name: &str, state_machine_arn: &str) -> Result<(), Error> {
        let arn = format!("{BASE}:execution:orders:{name}");
        let event = HistoryEvent {
            id: EventId(1),
            previous_event_id: 0,
            timestamp_ms: 1,
            details: EventDetails::ExecutionStarted(Box::new(ExecutionStarted {
                input: json!({}).into(),
                input_text: None,
                map_run_arn: None,
                input_truncated: false,
                role_arn: "role".into(),
                state_machine_alias_arn: None,
                state_machine_version_arn: None,
                execution_arn: arn.clone(),
                state_machine_arn: state_machine_arn.to_string(),
            })),
            scope: Vec::new(),
            timer: None,
        };
        store.append_events(&arn, &[event])
    }

    #[test]
    fn versions_count_up_never_reuse_a_number_and_survive_reopen() {
        let log: Arc<dyn Log> = Arc::new(MemoryLog::new());
        let store = Store::open(log.clone()).expect("opens");
        assert!(matches!(
            store.publish_version("orders", None, None, 10, 1),
            Err(Error::UnknownMachine { .. })
        ));
        let first = store
            .create_machine("orders", "d1", "r", crate::MachineType::Standard, 1)
            .expect("creates");
        let (v1, created) = store
            .publish_version("orders", None, Some("one"), 10, 2)
            .expect("publishes");
        assert!(created);
        assert_eq!((v1.number, v1.revision_lsn), (1, first.lsn));
        // The same revision again: the existing version.
        let (again, created) = store
            .publish_version("orders", None, None, 10, 3)
            .expect("publishes");
        assert!(!created);
        assert_eq!(again, v1);
        let second = store
            .update_machine("orders", "d2", "r", 4)
            .expect("updates");
        assert!(matches!(
            store.publish_version("orders", Some(first.lsn), None, 10, 5),
            Err(Error::RevisionChanged { .. })
        ));
        let (v2, _) = store
            .publish_version("orders", Some(second.lsn), None, 10, 5)
            .expect("publishes");
        assert_eq!((v2.number, v2.revision_lsn), (2, second.lsn));
        assert!(matches!(
            store.publish_version("orders", None, None, 2, 6),
            Ok((VersionEntry { number: 2, .. }, false))
        ));
        store
            .update_machine("orders", "d3", "r", 6)
            .expect("updates");
        assert!(matches!(
            store.publish_version("orders", None, None, 2, 6),
            Err(Error::TooManyVersions { limit: 2, .. })
        ));
        assert!(store.delete_version("orders", 2, 7).expect("deletes"));
        assert!(!store.delete_version("orders", 2, 7).expect("already gone"));
        let (v3, _) = store
            .publish_version("orders", None, None, 2, 8)
            .expect("publishes");
        assert_eq!(v3.number, 3, "a deleted number is never used again");
        let numbers = |s: &Store| {
            s.versions("orders")
                .iter()
                .map(|v| v.number)
                .collect::<Vec<_>>()
        };
        assert_eq!(numbers(&store), vec![3, 1]);
        let reopened = Store::open(log.clone()).expect("reopens");
        assert_eq!(numbers(&reopened), vec![3, 1]);
        assert_eq!(reopened.version("orders", 1), Some(v1));
        // The number after the deleted one survives a reopen whose last version was deleted.
        assert!(reopened.delete_version("orders", 3, 9).expect("deletes"));
        let reopened = Store::open(log).expect("reopens");
        reopened
            .update_machine("orders", "d4", "r", 10)
            .expect("updates");
        let (v4, _) = reopened
            .publish_version("orders", None, None, 10, 11)
            .expect("publishes");
        assert_eq!(v4.number, 4);
    }

    #[test]
    fn an_execution_of_a_version_runs_its_revision_even_after_the_version_is_deleted() {
        let log: Arc<dyn Log> = Arc::new(MemoryLog::new());
        let store = Store::open(log.clone()).expect("opens");
        let first = store
            .create_machine("orders", "d1", "r", crate::MachineType::Standard, 1)
            .expect("creates");
        store
            .publish_version("orders", None, None, 10, 2)
            .expect("publishes");
        let second = store
            .update_machine("orders", "d2", "r", 3)
            .expect("updates");
        start(&store, "on-v1", &format!("{BASE}:stateMachine:orders:1")).expect("starts");
        start(&store, "latest", &format!("{BASE}:stateMachine:orders")).expect("starts");
        assert!(matches!(
            start(&store, "on-v9", &format!("{BASE}:stateMachine:orders:9")),
            Err(Error::UnknownMachine { .. })
        ));
        let summary = |s: &Store, name: &str| {
            s.execution(&format!("{BASE}:execution:orders:{name}"))
                .expect("indexed")
        };
        assert_eq!(summary(&store, "on-v1").machine_lsn, first.lsn);
        assert_eq!(summary(&store, "on-v1").version, Some(1));
        assert_eq!(summary(&store, "latest").machine_lsn, second.lsn);
        assert_eq!(summary(&store, "latest").version, None);
        assert!(store.delete_version("orders", 1, 4).expect("deletes"));
        let reopened = Store::open(log).expect("reopens");
        assert_eq!(summary(&reopened, "on-v1").machine_lsn, first.lsn);
        assert_eq!(summary(&reopened, "on-v1").version, Some(1));
        assert!(reopened.damaged().is_empty());
        let listed =
            reopened.executions_where(Some(first.lsn), None, None, 10, &|s| s.version == Some(1));
        assert_eq!(listed.len(), 1);
    }

    #[test]
    fn aliases_route_to_live_versions_and_hold_them() {
        let log: Arc<dyn Log> = Arc::new(MemoryLog::new());
        let store = Store::open(log.clone()).expect("opens");
        store
            .create_machine("orders", "d1", "r", crate::MachineType::Standard, 1)
            .expect("creates");
        store
            .publish_version("orders", None, None, 10, 2)
            .expect("publishes");
        store
            .update_machine("orders", "d2", "r", 3)
            .expect("updates");
        store
            .publish_version("orders", None, None, 10, 4)
            .expect("publishes");
        assert!(matches!(
            store.create_alias("orders", "prod", None, &[(1, 50), (7, 50)], 5),
            Err(Error::UnknownVersion { number: 7, .. })
        ));
        let (prod, created) = store
            .create_alias("orders", "prod", Some("p"), &[(1, 70), (2, 30)], 5)
            .expect("creates");
        assert!(created);
        let (same, created) = store
            .create_alias("orders", "prod", Some("p"), &[(1, 70), (2, 30)], 6)
            .expect("finds");
        assert!(!created);
        assert_eq!(same, prod);
        assert!(matches!(
            store.create_alias("orders", "prod", None, &[(1, 70), (2, 30)], 6),
            Err(Error::AliasExists { .. })
        ));
        assert!(matches!(
            store.delete_version("orders", 2, 7),
            Err(Error::VersionInUse { ref aliases, .. }) if aliases == &["prod".to_string()]
        ));
        let updated = store
            .update_alias("orders", "prod", None, Some(&[(1, 100)]), 8)
            .expect("updates");
        assert_eq!(updated.description.as_deref(), Some("p"));
        assert_eq!(updated.updated_ms, Some(8));
        assert!(store.delete_version("orders", 2, 9).expect("deletes"));
        assert!(matches!(
            store.update_alias("orders", "none", None, None, 9),
            Err(Error::UnknownAlias { .. })
        ));
        let reopened = Store::open(log.clone()).expect("reopens");
        assert_eq!(reopened.alias("orders", "prod"), Some(updated.clone()));
        // Liveness: the current state of the alias only.
        {
            let index = reopened.index.read();
            let versions = &index.catalog.versions;
            assert!(versions.is_live(&updated.record()));
            assert!(!versions.is_live(&prod.record()));
        }
        assert!(reopened
            .delete_alias("orders", "prod", 10)
            .expect("deletes"));
        assert!(!reopened.delete_alias("orders", "prod", 10).expect("gone"));
        assert!(reopened.aliases("orders").is_empty());
        // A machine's deletion takes its versions and aliases with it.
        reopened
            .create_alias("orders", "canary", None, &[(1, 100)], 11)
            .expect("creates");
        reopened.delete_machine("orders", 12).expect("deletes");
        let reopened = Store::open(log).expect("reopens");
        reopened
            .create_machine("orders", "d9", "r", crate::MachineType::Standard, 13)
            .expect("creates");
        assert!(reopened.versions("orders").is_empty());
        assert!(reopened.aliases("orders").is_empty());
        let (fresh, _) = reopened
            .publish_version("orders", None, None, 10, 14)
            .expect("publishes");
        assert_eq!(
            fresh.number, 1,
            "a new machine of the same name counts from 1"
        );
    }

    #[test]
    fn qualified_names_split_into_name_and_version() {
        assert_eq!(split_version("orders"), ("orders", None));
        assert_eq!(split_version("orders:12"), ("orders", Some(12)));
        assert_eq!(split_version("orders:prod"), ("orders:prod", None));
    }
}
