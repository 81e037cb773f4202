//! catalog: what the store keeps besides histories and state machines: activities, the tags of
//! state machines and activities, the client tokens of redrives, and (through `versions`) the
//! versions and aliases of state machines. Each change is one
//! `KIND_CATALOG` record ([`CatalogRecord`]); `Store::open` folds them, in original-LSN order
//! with the machine and event records, into the in-memory [`Catalog`] of the index.
//!
//! Invariants:
//! - A change is durable before the index shows it (append, then apply under the index lock);
//!   changes are serialized by the store's `machine_writes` lock, so a check (the activity
//!   exists, the tag count) and the append it guards are one step.
//! - The latest `TagsSet` of a resource is its whole tag set; deleting a machine or an activity
//!   forgets its tags, so a same-named successor starts untagged.
//! - [`Catalog::is_live`] says which records a compaction must keep: the creation of each live
//!   activity, the current tag set of each tagged resource, and the redrive tokens of
//!   executions still in the index. Everything else in the catalog is history nobody reads.
//!   Liveness is judged by content, not by LSN (a record copied forward twice does not keep
//!   its first LSN), and only ever turns from live to dead, so a snapshot taken before a
//!   compaction never drops a record that matters.
//!
//! Must not: read a clock (times come in), judge names or tag text (the engine does), or know
//! the region and account of an ARN beyond the `:stateMachine:` / `:activity:` field.

use std::collections::{BTreeMap, HashMap};

use statelog_wal::Lsn;

use super::record::{self, CatalogRecord, KIND_CATALOG};
use super::{machine_name, Error, Index, PreparedEvents, SequenceReason, Store};
use statelog_core::history::{EventDetails, HistoryEvent};

/// A tag set: `(key, value)` pairs, keys unique, in key order.
pub type Tags = Vec<(String, String)>;

/// An activity as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivityEntry {
    /// Its name.
    pub name: String,
    /// When it was created, ms since the epoch.
    pub created_ms: u64,
}

/// What a redrive with a client token answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RedriveToken {
    /// When the execution was redriven, ms since the epoch.
    pub redrive_ms: u64,
    /// The execution's redrive count after that redrive.
    pub redrive_count: u32,
}

/// The catalog folded from the log (part of the store's index).
#[derive(Debug, Default, Clone)]
pub(super) struct Catalog {
    /// Live activities by name, with the LSN of their creation record.
    activities: BTreeMap<String, (Lsn, ActivityEntry)>,
    /// Tag sets by resource ARN, with the LSN of the record that set them.
    tags: HashMap<String, (Lsn, Tags)>,
    /// Redrive client tokens: `(execution ARN, token) -> (LSN, answer)`.
    redrive_tokens: HashMap<(String, String), (Lsn, RedriveToken)>,
    /// State machine versions and aliases (`versions`).
    pub(super) versions: super::versions::Versions,
}

/// The name after `:activity:` in an activity ARN.
fn activity_name(arn: &str) -> Option<&str> {
    arn.rsplit_once(":activity:").map(|(_, name)| name)
}

impl Catalog {
    /// Forgets the tags of the state machine `name` (it was deleted).
    pub(super) fn forget_machine_tags(&mut self, name: &str) {
        self.tags
            .retain(|arn, _| !(arn.contains(":stateMachine:") && machine_name(arn) == name));
    }

    /// Whether any redrive client token is kept (compaction skips forgetting them otherwise).
    pub(super) fn has_redrive_tokens(&self) -> bool {
        !self.redrive_tokens.is_empty()
    }

    /// Forgets the redrive tokens of executions no longer in the index.
    pub(super) fn forget_redrive_tokens(&mut self, gone: impl Fn(&str) -> bool) {
        self.redrive_tokens.retain(|(arn, _), _| !gone(arn));
    }

    /// The LSNs (as the open scan saw them, or as appended) of every record still needed.
    #[cfg(test)]
    pub(super) fn live_lsns(&self) -> std::collections::HashSet<Lsn> {
        let activities = self.activities.values().map(|(lsn, _)| *lsn);
        let tags = self.tags.values().map(|(lsn, _)| *lsn);
        let tokens = self.redrive_tokens.values().map(|(lsn, _)| *lsn);
        activities.chain(tags).chain(tokens).collect()
    }

    /// Whether a compaction must keep `record`: replaying the kept records in order gives this
    /// catalog again. A record equal in content to the live state is kept (an older twin of the
    /// current tag set replays to the same set).
    pub(super) fn is_live(&self, record: &CatalogRecord) -> bool {
        match record {
            CatalogRecord::ActivityCreated { name, created_ms } => self
                .activities
                .get(name)
                .is_some_and(|(_, live)| live.created_ms == *created_ms),
            // A deletion only matters to the creation before it, which is dead too.
            CatalogRecord::ActivityDeleted { .. } => false,
            CatalogRecord::TagsSet { resource_arn, tags } => self
                .tags
                .get(resource_arn)
                .is_some_and(|(_, live)| live == tags),
            CatalogRecord::Redriven {
                execution_arn,
                client_token,
                ..
            } => self
                .redrive_tokens
                .contains_key(&(execution_arn.clone(), client_token.clone())),
            CatalogRecord::VersionPublished { .. }
            | CatalogRecord::VersionDeleted { .. }
            | CatalogRecord::AliasSet { .. }
            | CatalogRecord::AliasDeleted { .. } => self.versions.is_live(record),
        }
    }
}

impl Index {
    /// Applies one catalog record made at (original) LSN `lsn`.
    pub(super) fn apply_catalog(&mut self, lsn: Lsn, record: CatalogRecord) {
        let catalog = &mut self.catalog;
        match record {
            CatalogRecord::ActivityCreated { name, created_ms } => {
                catalog
                    .activities
                    .entry(name.clone())
                    .or_insert((lsn, ActivityEntry { name, created_ms }));
            }
            CatalogRecord::ActivityDeleted { name, .. } => {
                catalog.activities.remove(&name);
                catalog
                    .tags
                    .retain(|arn, _| activity_name(arn) != Some(name.as_str()));
            }
            CatalogRecord::TagsSet { resource_arn, tags } => {
                if tags.is_empty() {
                    catalog.tags.remove(&resource_arn);
                } else {
                    catalog.tags.insert(resource_arn, (lsn, tags));
                }
            }
            CatalogRecord::Redriven {
                execution_arn,
                client_token,
                redrive_ms,
                redrive_count,
            } => {
                // A token of an execution compaction forgot is forgotten with it.
                if self.executions.contains_key(execution_arn.as_str()) {
                    catalog.redrive_tokens.insert(
                        (execution_arn, client_token),
                        (
                            lsn,
                            RedriveToken {
                                redrive_ms,
                                redrive_count,
                            },
                        ),
                    );
                }
            }
            CatalogRecord::VersionPublished { .. }
            | CatalogRecord::VersionDeleted { .. }
            | CatalogRecord::AliasSet { .. }
            | CatalogRecord::AliasDeleted { .. } => self.apply_version_record(record),
        }
    }

    /// Whether `resource_arn` names a live state machine or activity.
    fn resource_exists(&self, resource_arn: &str) -> bool {
        if resource_arn.contains(":stateMachine:") {
            return self.live_machines.contains_key(machine_name(resource_arn));
        }
        activity_name(resource_arn).is_some_and(|name| self.catalog.activities.contains_key(name))
    }
}

impl Store {
    /// Appends one catalog record durably and applies it. The caller holds `machine_writes`.
    pub(super) fn append_catalog(&self, record: CatalogRecord) -> Result<(), Error> {
        let bytes = record::encode_catalog(&record)?;
        let lsn = self.log.append_batch(&[(KIND_CATALOG, &bytes)])?;
        self.index.write().apply_catalog(lsn, record);
        Ok(())
    }

    /// Creates the activity `name`; an existing one is returned unchanged. The flag says
    /// whether this call created it.
    pub fn create_activity(&self, name: &str, now_ms: u64) -> Result<(ActivityEntry, bool), Error> {
        let _serial = self.machine_writes.lock();
        if let Some(existing) = self.activity(name) {
            return Ok((existing, false));
        }
        self.append_catalog(CatalogRecord::ActivityCreated {
            name: name.to_string(),
            created_ms: now_ms,
        })?;
        let created = self
            .activity(name)
            .expect("the activity was applied after its record was durable");
        debug_assert_eq!(created.created_ms, now_ms);
        Ok((created, true))
    }

    /// Deletes the activity `name` and its tags; `false` when there was none.
    pub fn delete_activity(&self, name: &str, now_ms: u64) -> Result<bool, Error> {
        let _serial = self.machine_writes.lock();
        if self.activity(name).is_none() {
            return Ok(false);
        }
        self.append_catalog(CatalogRecord::ActivityDeleted {
            name: name.to_string(),
            deleted_ms: now_ms,
        })?;
        debug_assert!(self.activity(name).is_none());
        Ok(true)
    }

    /// The live activity `name`.
    pub fn activity(&self, name: &str) -> Option<ActivityEntry> {
        let index = self.index.read();
        index
            .catalog
            .activities
            .get(name)
            .map(|(_, entry)| entry.clone())
    }

    /// Every live activity, by name.
    pub fn activities(&self) -> Vec<ActivityEntry> {
        let index = self.index.read();
        index
            .catalog
            .activities
            .values()
            .map(|(_, entry)| entry.clone())
            .collect()
    }

    /// The tags of `resource_arn` (empty when it has none or does not exist).
    pub fn tags(&self, resource_arn: &str) -> Tags {
        let index = self.index.read();
        index
            .catalog
            .tags
            .get(resource_arn)
            .map(|(_, tags)| tags.clone())
            .unwrap_or_default()
    }

    /// Sets the tags `add` (a key already there gets the new value) and removes the keys
    /// `remove` on the live state machine or activity `resource_arn`, as one durable record.
    /// `UnknownResource` when it does not exist; `TooManyTags` when it would end with more than
    /// `tags_max` tags (nothing is written then). Returns the resulting set.
    pub fn change_tags(
        &self,
        resource_arn: &str,
        add: &[(String, String)],
        remove: &[String],
        tags_max: usize,
    ) -> Result<Tags, Error> {
        let _serial = self.machine_writes.lock();
        let current = {
            let index = self.index.read();
            if !index.resource_exists(resource_arn) {
                return Err(Error::UnknownResource {
                    resource_arn: resource_arn.to_string(),
                });
            }
            index.catalog.tags.get(resource_arn).map(|(_, t)| t.clone())
        };
        let before: Tags = current.unwrap_or_default();
        let mut tags: BTreeMap<String, String> = before.iter().cloned().collect();
        for (key, value) in add {
            tags.insert(key.clone(), value.clone());
        }
        for key in remove {
            tags.remove(key);
        }
        if tags.len() > tags_max {
            return Err(Error::TooManyTags {
                resource_arn: resource_arn.to_string(),
                count: tags.len(),
                limit: tags_max,
            });
        }
        let tags: Tags = tags.into_iter().collect();
        if tags == before {
            // Nothing changes: nothing to write.
            return Ok(tags);
        }
        self.append_catalog(CatalogRecord::TagsSet {
            resource_arn: resource_arn.to_string(),
            tags: tags.clone(),
        })?;
        Ok(tags)
    }

    /// Records what a redrive with `client_token` answered, so a repeat finds it after a
    /// restart too.
    pub fn record_redrive_token(
        &self,
        execution_arn: &str,
        client_token: &str,
        answer: RedriveToken,
    ) -> Result<(), Error> {
        let _serial = self.machine_writes.lock();
        if !self.index.read().executions.contains_key(execution_arn) {
            return Err(Error::UnknownExecution {
                execution_arn: execution_arn.to_string(),
            });
        }
        self.append_catalog(CatalogRecord::Redriven {
            execution_arn: execution_arn.to_string(),
            client_token: client_token.to_string(),
            redrive_ms: answer.redrive_ms,
            redrive_count: answer.redrive_count,
        })
    }

    /// Appends a redrive's events (one decision, holding `ExecutionRedriven`) and the record of
    /// its client token as one atomic batch: after a crash either both are in the log or
    /// neither is, so a retried redrive with the same token never redrives twice. The answer
    /// kept is the `ExecutionRedriven` event's time and redrive count.
    pub fn append_events_with_redrive_token(
        &self,
        execution_arn: &str,
        events: &[HistoryEvent],
        client_token: &str,
    ) -> Result<(), Error> {
        let prepared =
            self.prepare_events_with_redrive_token(execution_arn, events, client_token)?;
        self.append_prepared(prepared)
    }

    /// [`Store::prepare_events`] for a redrive's events (holding `ExecutionRedriven`), with the
    /// record of its client token carried as the batch's last record: written by
    /// [`Store::append_prepared`] in the same atomic batch.
    pub fn prepare_events_with_redrive_token<'a>(
        &self,
        execution_arn: &'a str,
        events: &[HistoryEvent],
        client_token: &str,
    ) -> Result<PreparedEvents<'a>, Error> {
        let Some((redrive_ms, redrive_count)) =
            events.iter().find_map(|event| match &event.details {
                EventDetails::ExecutionRedriven(details) => {
                    Some((event.timestamp_ms, details.redrive_count))
                }
                _ => None,
            })
        else {
            return Err(Error::BadSequence {
                execution_arn: execution_arn.to_string(),
                reason: SequenceReason::RedriveTokenWithoutRedrive,
            });
        };
        let record = CatalogRecord::Redriven {
            execution_arn: execution_arn.to_string(),
            client_token: client_token.to_string(),
            redrive_ms,
            redrive_count,
        };
        let mut prepared = self.prepare_events(execution_arn, events)?;
        prepared.catalog = Some(record);
        Ok(prepared)
    }

    /// What the redrive of `execution_arn` with `client_token` answered, if there was one.
    pub fn redrive_token(&self, execution_arn: &str, client_token: &str) -> Option<RedriveToken> {
        let index = self.index.read();
        index
            .catalog
            .redrive_tokens
            .get(&(execution_arn.to_string(), client_token.to_string()))
            .map(|(_, answer)| *answer)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::super::{Log, MemoryLog, Store};
    use super::*;
    use statelog_core::history::{EventDetails, EventId, ExecutionStarted, HistoryEvent};

    const MACHINE_ARN: &str = "arn:aws:states:us-east-1:000000000000:stateMachine:orders";
    const ACTIVITY_ARN: &str = "arn:aws:states:us-east-1:000000000000:activity:work";

    fn start(store: &Store, name: &str) {
        let arn = format!("arn:aws:states:us-east-1:000000000000:execution:orders:{name}");
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
                state_machine_arn: MACHINE_ARN.into(),
            })),
            scope: Vec::new(),
            timer: None,
        };
        store.append_events(&arn, &[event]).expect("appends");
    }

    fn record_count(log: &Arc<dyn Log>) -> usize {
        let mut count = 0;
        log.scan(&mut |_, _, _| {
            count += 1;
            Ok(())
        })
        .expect("scans");
        count
    }

    #[test]
    fn revisions_keep_each_execution_on_its_own_and_list_under_the_machine() {
        let log: Arc<dyn Log> = Arc::new(MemoryLog::new());
        let store = Store::open(log.clone()).expect("opens");
        let created = store
            .create_machine("orders", "v1", "r1", crate::MachineType::Standard, 5)
            .expect("creates");
        start(&store, "a");
        let revision = store
            .update_machine("orders", "v2", "r2", 6)
            .expect("updates");
        assert_eq!(revision.origin_lsn, created.lsn);
        assert_ne!(revision.lsn, created.lsn);
        assert_eq!(revision.created_ms, 5);
        assert_eq!(revision.updated_ms, Some(6));
        start(&store, "b");
        assert!(matches!(
            store.update_machine("other", "v", "r", 7),
            Err(Error::UnknownMachine { .. })
        ));
        for store in [store, Store::open(log.clone()).expect("reopens")] {
            let arn =
                |n: &str| format!("arn:aws:states:us-east-1:000000000000:execution:orders:{n}");
            let a = store.execution(&arn("a")).expect("a");
            let b = store.execution(&arn("b")).expect("b");
            assert_eq!(
                &*store.machine_at(a.machine_lsn).expect("a's").definition,
                "v1"
            );
            assert_eq!(
                &*store.machine_at(b.machine_lsn).expect("b's").definition,
                "v2"
            );
            let live = store.machine("orders").expect("live");
            assert_eq!((&*live.definition, live.role_arn.as_str()), ("v2", "r2"));
            assert_eq!(store.executions(Some(created.lsn), None, None, 10).len(), 2);
        }
    }

    #[test]
    fn tags_need_a_live_resource_and_stay_within_the_limit() {
        let log: Arc<dyn Log> = Arc::new(MemoryLog::new());
        let store = Store::open(log.clone()).expect("opens");
        let pair = |k: &str| (k.to_string(), "v".to_string());
        assert!(matches!(
            store.change_tags(MACHINE_ARN, &[pair("a")], &[], 2),
            Err(Error::UnknownResource { .. })
        ));
        store
            .create_machine("orders", "v1", "r", crate::MachineType::Standard, 1)
            .expect("creates");
        store
            .change_tags(MACHINE_ARN, &[pair("b"), pair("a")], &[], 2)
            .expect("tags");
        let written = record_count(&log);
        assert!(matches!(
            store.change_tags(MACHINE_ARN, &[pair("c")], &[], 2),
            Err(Error::TooManyTags {
                count: 3,
                limit: 2,
                ..
            })
        ));
        // Refused or unchanged: nothing written.
        store
            .change_tags(MACHINE_ARN, &[pair("a")], &["zzz".to_string()], 2)
            .expect("no change");
        assert_eq!(record_count(&log), written);
        // Replacing a key within the limit works.
        store
            .change_tags(MACHINE_ARN, &[pair("c")], &["a".to_string()], 2)
            .expect("tags");
        assert_eq!(store.tags(MACHINE_ARN), vec![pair("b"), pair("c")]);
        let reopened = Store::open(log.clone()).expect("reopens");
        assert_eq!(reopened.tags(MACHINE_ARN), vec![pair("b"), pair("c")]);
        // The machine's deletion forgets its tags, also on reopen.
        store.delete_machine("orders", 2).expect("deletes");
        assert!(store.tags(MACHINE_ARN).is_empty());
        assert!(Store::open(log)
            .expect("reopens")
            .tags(MACHINE_ARN)
            .is_empty());
    }

    #[test]
    fn activities_and_their_live_records() {
        let log: Arc<dyn Log> = Arc::new(MemoryLog::new());
        let store = Store::open(log.clone()).expect("opens");
        let (work, created) = store.create_activity("work", 3).expect("creates");
        assert!(created);
        let (again, created) = store.create_activity("work", 9).expect("finds");
        assert!(!created);
        assert_eq!(again, work);
        store.create_activity("gone", 4).expect("creates");
        store
            .change_tags(ACTIVITY_ARN, &[("k".into(), "v".into())], &[], 50)
            .expect("tags");
        assert!(store.delete_activity("gone", 5).expect("deletes"));
        assert!(!store.delete_activity("gone", 6).expect("already gone"));
        let reopened = Store::open(log.clone()).expect("reopens");
        assert_eq!(reopened.activities(), vec![work.clone()]);
        assert_eq!(reopened.tags(ACTIVITY_ARN).len(), 1);
        // Live: `work`'s creation (lsn 1) and its tags (lsn 3); `gone` (2, 4) is history.
        let live = reopened.index.read().catalog.live_lsns();
        assert_eq!(live, [Lsn(1), Lsn(3)].into_iter().collect());
        // Liveness is judged by content, whatever LSN a copy carries.
        let catalog = reopened.index.read().catalog.clone();
        let created = |name: &str, created_ms| CatalogRecord::ActivityCreated {
            name: name.into(),
            created_ms,
        };
        assert!(catalog.is_live(&created("work", 3)));
        assert!(
            !catalog.is_live(&created("work", 4)),
            "an earlier incarnation"
        );
        assert!(!catalog.is_live(&created("gone", 4)));
        assert!(!catalog.is_live(&CatalogRecord::ActivityDeleted {
            name: "gone".into(),
            deleted_ms: 5
        }));
        let tag_set = |value: &str| CatalogRecord::TagsSet {
            resource_arn: ACTIVITY_ARN.into(),
            tags: vec![("k".into(), value.into())],
        };
        assert!(catalog.is_live(&tag_set("v")));
        assert!(!catalog.is_live(&tag_set("older")));
        // An activity's deletion forgets its tags.
        store.delete_activity("work", 7).expect("deletes");
        assert!(store.tags(ACTIVITY_ARN).is_empty());
        assert!(store.index.read().catalog.live_lsns().is_empty());
    }

    #[test]
    fn redrive_tokens_belong_to_known_executions() {
        let log: Arc<dyn Log> = Arc::new(MemoryLog::new());
        let store = Store::open(log.clone()).expect("opens");
        store
            .create_machine("orders", "v1", "r", crate::MachineType::Standard, 1)
            .expect("creates");
        let arn = "arn:aws:states:us-east-1:000000000000:execution:orders:a";
        let answer = RedriveToken {
            redrive_ms: 9,
            redrive_count: 1,
        };
        assert!(matches!(
            store.record_redrive_token(arn, "t", answer),
            Err(Error::UnknownExecution { .. })
        ));
        start(&store, "a");
        store
            .record_redrive_token(arn, "t", answer)
            .expect("records");
        assert_eq!(store.redrive_token(arn, "t"), Some(answer));
        assert_eq!(store.redrive_token(arn, "other"), None);
        let reopened = Store::open(log).expect("reopens");
        assert_eq!(reopened.redrive_token(arn, "t"), Some(answer));
    }

    #[test]
    fn a_redrive_token_is_written_in_the_batch_of_its_redrive() {
        let log: Arc<dyn Log> = Arc::new(MemoryLog::new());
        let store = Store::open(log.clone()).expect("opens");
        store
            .create_machine("orders", "v1", "r", crate::MachineType::Standard, 1)
            .expect("creates");
        let arn = "arn:aws:states:us-east-1:000000000000:execution:orders:a";
        start(&store, "a");
        let event = |details| HistoryEvent {
            id: EventId(2),
            previous_event_id: 0,
            timestamp_ms: 7,
            details,
            scope: Vec::new(),
            timer: None,
        };
        // Without ExecutionRedriven in the batch: refused, nothing appended.
        let not_a_redrive = event(EventDetails::ExecutionSucceeded(
            statelog_core::history::Output {
                output: json!({}).into(),
                output_truncated: false,
            },
        ));
        assert!(matches!(
            store.append_events_with_redrive_token(arn, &[not_a_redrive], "t"),
            Err(Error::BadSequence { .. })
        ));
        assert_eq!(store.execution(arn).map(|s| s.event_count), Some(1));
        assert_eq!(store.redrive_token(arn, "t"), None);
        let redriven = event(EventDetails::ExecutionRedriven(
            statelog_core::history::ExecutionRedriven { redrive_count: 1 },
        ));
        store
            .append_events_with_redrive_token(arn, &[redriven], "t")
            .expect("appends");
        let answer = RedriveToken {
            redrive_ms: 7,
            redrive_count: 1,
        };
        assert_eq!(store.redrive_token(arn, "t"), Some(answer));
        assert_eq!(store.execution(arn).map(|s| s.redrive_count), Some(1));
        let reopened = Store::open(log).expect("reopens");
        assert_eq!(reopened.redrive_token(arn, "t"), Some(answer));
        assert_eq!(reopened.execution(arn).map(|s| s.event_count), Some(2));
    }
}
