//! catalog: the engine API for what is persisted besides histories: `UpdateStateMachine`
//! (a new revision of a machine), `DescribeStateMachineForExecution` (the revision an
//! execution runs), and the tags of state machines and activities (`TagResource`,
//! `UntagResource`, `ListTagsForResource`, tags at creation). Activities themselves are in
//! `activities`; redrive client tokens in `redrive`. All of them are kept by `store::catalog`.
//!
//! Invariants: an update never changes the definition of an execution already started (it runs
//! the revision it started on, named by its `machine_lsn`); an update and a start of the same
//! engine never interleave (`machine_changes`), so the revision the log assigns to a start is
//! the one it ran. A revision's `revisionId` is derived from the LSNs of the machine's creation
//! and of the revision's own record, so it is stable across reopen and compaction (which keep
//! LSNs) and never names two revisions. Tag text is checked here before anything is written; the store checks the
//! resource and the count under its write lock. Must not: read wall time except through the
//! clock; touch an execution's history.

use super::arn::{Arn, Resource, ResourceType};
use super::error::{ArgumentReason, MissingParameter};
use super::{Engine, Error, MachineDescription, MachineType};
use crate::limits::{TAGS_PER_RESOURCE_MAX, TAG_KEY_CHARS_MAX, TAG_VALUE_CHARS_MAX};
use statelog_core::asl::{parse_definition, Severity};
use statelog_store as store;
use statelog_store::Machine;

/// One tag: a key (1 to 128 characters) and a value (0 to 256).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Tag {
    /// The key, unique per resource.
    pub key: String,
    /// The value (may be empty).
    pub value: String,
}

impl Tag {
    /// A tag of `key` and `value`.
    pub fn new(key: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            value: value.into(),
        }
    }
}

/// Whether `c` may appear in a tag: Unicode letters, digits, white space, `_ . : / = + - @`.
fn tag_char_allowed(c: char) -> bool {
    c.is_alphanumeric() || c.is_whitespace() || "_.:/=+-@".contains(c)
}

fn check_tag_text(
    what: &'static str,
    text: &str,
    chars_min: usize,
    chars_max: usize,
) -> Result<(), Error> {
    let chars = text.chars().count();
    if chars < chars_min || chars > chars_max {
        return Err(Error::InvalidArgument {
            field: what,
            reason: ArgumentReason::TagLength {
                part: what,
                text: text.to_string(),
                chars,
                chars_min,
                chars_max,
            },
        });
    }
    if let Some(c) = text.chars().find(|c| !tag_char_allowed(*c)) {
        return Err(Error::InvalidArgument {
            field: what,
            reason: ArgumentReason::TagCharacter {
                text: text.to_string(),
                character: c,
            },
        });
    }
    Ok(())
}

/// Checks every tag's key and value; returns them as store pairs.
pub(crate) fn check_tags(tags: &[Tag]) -> Result<Vec<(String, String)>, Error> {
    let mut pairs = Vec::with_capacity(tags.len());
    for tag in tags {
        check_tag_text("tag key", &tag.key, 1, TAG_KEY_CHARS_MAX)?;
        check_tag_text("tag value", &tag.value, 0, TAG_VALUE_CHARS_MAX)?;
        pairs.push((tag.key.clone(), tag.value.clone()));
    }
    Ok(pairs)
}

fn tag_error(error: store::Error) -> Error {
    match error {
        store::Error::UnknownResource { resource_arn } => Error::ResourceNotFound { resource_arn },
        store::Error::TooManyTags {
            resource_arn,
            count,
            limit,
        } => Error::TooManyTags {
            resource_arn,
            count,
            limit,
        },
        other => Error::from(other),
    }
}

/// The `revisionId` AWS shows for `machine`'s revision: `None` for the revision made at
/// creation (AWS: "the first revision ID when you create the state machine is null"), else the
/// creation LSN and the revision's LSN, in hex, laid out as a UUID
/// (`oooooooo-oooo-oooo-rrrr-rrrrrrrrrrrr`, 64 bits of each).
pub(crate) fn revision_id(machine: &Machine) -> Option<String> {
    machine.updated_ms?;
    let origin = machine.origin_lsn.0;
    let revision = machine.lsn.0;
    Some(format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        origin >> 32,
        (origin >> 16) & 0xffff,
        origin & 0xffff,
        revision >> 48,
        revision & 0xffff_ffff_ffff
    ))
}

impl Engine {
    /// `UpdateStateMachine`: gives the live machine (name or ARN) a new definition, a new role,
    /// or both; returns the update time. Executions already running keep the definition they
    /// started with; executions started afterwards run the new one. `MissingRequiredParameter`
    /// when neither is given; `InvalidDefinition` (nothing written) when the definition does not
    /// validate.
    pub fn update_state_machine(
        &self,
        state_machine: &str,
        definition: Option<&str>,
        role_arn: Option<&str>,
    ) -> Result<u64, Error> {
        let revision = self.update_state_machine_revision(state_machine, definition, role_arn)?;
        Ok(revision.updated_ms.unwrap_or(revision.created_ms))
    }

    /// [`Engine::update_state_machine`], answering the new revision as `DescribeStateMachine`
    /// shows it (its `updated_ms` and `revision_id` are set).
    pub fn update_state_machine_revision(
        &self,
        state_machine: &str,
        definition: Option<&str>,
        role_arn: Option<&str>,
    ) -> Result<MachineDescription, Error> {
        if definition.is_none() && role_arn.is_none() {
            return Err(Error::MissingRequiredParameter {
                reason: MissingParameter::DefinitionOrRole,
            });
        }
        let compiled = match definition {
            Some(text) => Some(parse_definition(text, &crate::validate::options()).map_err(
                |diagnostics| {
                    Error::InvalidDefinition {
                        diagnostics: diagnostics
                            .into_iter()
                            .filter(|d| d.severity == Severity::Error)
                            .collect(),
                    }
                },
            )?),
            None => None,
        };
        // No start runs while the revision changes (see the module invariants).
        let _changing = self.inner.machine_changes.write();
        let current = self.live_machine(state_machine)?;
        // The type does not change: a new EXPRESS definition obeys the Express rules too.
        if let (Some(compiled), MachineType::Express) = (&compiled, current.machine_type) {
            crate::express::check_definition(compiled)?;
        }
        if let Some(compiled) = &compiled {
            crate::express::check_express_children(compiled)?;
        }
        let definition = definition.unwrap_or(&current.definition);
        let role_arn = role_arn.unwrap_or(&current.role_arn);
        if definition == &*current.definition && role_arn == current.role_arn {
            // Nothing changes: no new revision (AWS keeps the revision id, and a publish after
            // it answers the version already published for it).
            return Ok(self.machine_description(&current));
        }
        let now_ms = self.inner.options.clock.now_ms();
        let revision = self
            .inner
            .store
            .update_machine(&current.name, definition, role_arn, now_ms)
            .map_err(|e| match e {
                store::Error::UnknownMachine { name } => Error::StateMachineDoesNotExist {
                    state_machine: name,
                },
                other => Error::from(other),
            })?;
        if let Some(compiled) = compiled {
            self.inner
                .definitions
                .lock()
                .insert(revision.lsn, std::sync::Arc::new(compiled));
        }
        Ok(self.machine_description(&revision))
    }

    /// `DescribeStateMachineForExecution`: the machine revision the execution runs (the
    /// definition and role it started with, even after an update or a deletion).
    pub fn describe_state_machine_for_execution(
        &self,
        execution_arn: &str,
    ) -> Result<MachineDescription, Error> {
        let summary = self.requested_summary(execution_arn)?;
        let machine = self
            .inner
            .store
            .machine_at(summary.machine_lsn)
            .ok_or_else(|| Error::StateMachineDoesNotExist {
                state_machine: format!("revision at lsn {}", summary.machine_lsn),
            })?;
        Ok(self.machine_description(&machine))
    }

    /// `CreateStateMachine` with tags: checks the tags first, creates (or finds the identical)
    /// machine, then sets the tags on it.
    pub fn create_state_machine_with_tags(
        &self,
        name: &str,
        definition: &str,
        role_arn: Option<&str>,
        tags: &[Tag],
    ) -> Result<MachineDescription, Error> {
        self.create_state_machine_of_type(name, definition, role_arn, MachineType::Standard, tags)
    }

    /// `CreateStateMachine` with its `type` and tags (see
    /// [`Engine::create_state_machine_with_tags`]). The type is fixed at creation: an update
    /// keeps it.
    pub fn create_state_machine_of_type(
        &self,
        name: &str,
        definition: &str,
        role_arn: Option<&str>,
        machine_type: MachineType,
        tags: &[Tag],
    ) -> Result<MachineDescription, Error> {
        let pairs = check_tags(tags)?;
        check_tag_count(&self.state_machine_arn(name), &pairs)?;
        let created = self.create_typed_machine(name, definition, role_arn, machine_type)?;
        if !pairs.is_empty() {
            self.inner
                .store
                .change_tags(
                    &created.state_machine_arn,
                    &pairs,
                    &[],
                    TAGS_PER_RESOURCE_MAX,
                )
                .map_err(tag_error)?;
        }
        Ok(created)
    }

    /// `TagResource`: adds `tags` to a state machine or activity (a key already there gets the
    /// new value). `ResourceNotFound`, `InvalidArn`, `TooManyTags` (past 50 tags).
    pub fn tag_resource(&self, resource_arn: &str, tags: &[Tag]) -> Result<(), Error> {
        self.check_taggable_arn(resource_arn)?;
        let pairs = check_tags(tags)?;
        self.inner
            .store
            .change_tags(resource_arn, &pairs, &[], TAGS_PER_RESOURCE_MAX)
            .map_err(tag_error)?;
        Ok(())
    }

    /// `UntagResource`: removes the tags with `tag_keys` (absent keys are ignored).
    pub fn untag_resource(&self, resource_arn: &str, tag_keys: &[String]) -> Result<(), Error> {
        self.check_taggable_arn(resource_arn)?;
        for key in tag_keys {
            check_tag_text("tag key", key, 1, TAG_KEY_CHARS_MAX)?;
        }
        self.inner
            .store
            .change_tags(resource_arn, &[], tag_keys, TAGS_PER_RESOURCE_MAX)
            .map_err(tag_error)?;
        Ok(())
    }

    /// `ListTagsForResource`: the tags of a live state machine or activity, by key.
    pub fn list_tags_for_resource(&self, resource_arn: &str) -> Result<Vec<Tag>, Error> {
        let resource = self.check_taggable_arn(resource_arn)?;
        let exists = match resource {
            Resource::StateMachine { name } => self.inner.store.machine(name).is_some(),
            Resource::Activity { name } => self.inner.store.activity(name).is_some(),
            Resource::Execution { .. } | Resource::Express { .. } => {
                unreachable!("check_taggable_arn refuses executions")
            }
        };
        if !exists {
            return Err(Error::ResourceNotFound {
                resource_arn: resource_arn.to_string(),
            });
        }
        Ok(self
            .inner
            .store
            .tags(resource_arn)
            .into_iter()
            .map(|(key, value)| Tag { key, value })
            .collect())
    }

    /// Checks that `arn` is a state machine or activity ARN (`InvalidArn`) of this engine's
    /// region and account (`ResourceNotFound`); returns what it names.
    fn check_taggable_arn<'a>(&self, arn: &'a str) -> Result<Resource<'a>, Error> {
        let parsed = Arn::parse_as(arn, &[ResourceType::StateMachine, ResourceType::Activity])?;
        if !self.is_own(&parsed) {
            return Err(Error::ResourceNotFound {
                resource_arn: arn.to_string(),
            });
        }
        Ok(parsed.resource)
    }
}

/// `TooManyTags` for a resource that would start with the tags `pairs` (keys counted once).
pub(crate) fn check_tag_count(resource_arn: &str, pairs: &[(String, String)]) -> Result<(), Error> {
    let count = pairs
        .iter()
        .map(|(key, _)| key.as_str())
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    if count > TAGS_PER_RESOURCE_MAX {
        return Err(Error::TooManyTags {
            resource_arn: resource_arn.to_string(),
            count,
            limit: TAGS_PER_RESOURCE_MAX,
        });
    }
    Ok(())
}
