//! versions: the engine API of state machine versions and aliases (`PublishStateMachineVersion`,
//! `ListStateMachineVersions`, `DeleteStateMachineVersion`, `Create/Describe/Update/Delete/
//! ListStateMachineAliases`, `publish` on create and update) and what a start through a version
//! or alias ARN runs ([`Engine::start_target`]). The store keeps them (`store::versions`).
//!
//! Invariants: a version is an immutable pointer to one revision, so an execution started on it
//! runs that revision for its whole life (its redrive too), whatever later happens to the
//! machine, the version or the alias. A start through an alias draws its version from the
//! engine's entropy source once; the chosen version's ARN is recorded in `ExecutionStarted`
//! (`stateMachineVersionArn`, with `stateMachineAliasArn`), so replay never draws again.
//! Version deletions and alias changes hold `machine_changes` exclusively, as updates do, so
//! the version a start resolved is the one the log assigns to it. Every input is checked here
//! before anything is written. Must not: read wall time except through the clock.

use std::sync::Arc;

use statelog_core::paths::Entropy;
use statelog_store as store;
use statelog_store::{AliasEntry, Machine, VersionEntry};

use super::arn::{self, Qualifier};
use super::error::{ConflictReason, MissingParameter, ValidationReason};
use super::{catalog, page_size, Engine, Error, MachineDescription};
use crate::limits::{
    ALIAS_ROUTES_MAX, ALIAS_WEIGHTS_SUM_PERCENT, DESCRIPTION_CHARS_MAX, LIST_PAGE_CATALOG_DEFAULT,
    LIST_PAGE_CATALOG_MAX, RESOURCE_NAME_CHARS_MAX, VERSIONS_PER_MACHINE_MAX,
};

/// The `revisionId` that names a machine's first revision (it has no id of its own).
pub const INITIAL_REVISION_ID: &str = "INITIAL";

/// A published version as `PublishStateMachineVersion` and `ListStateMachineVersions` show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedVersion {
    /// `arn:aws:states:<region>:<account>:stateMachine:<name>:<number>`.
    pub state_machine_version_arn: String,
    /// When it was published, ms since the epoch.
    pub created_ms: u64,
}

/// One page of `ListStateMachineVersions`, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionPage {
    /// The versions of this page.
    pub versions: Vec<PublishedVersion>,
    /// The token of the next page, if there is one.
    pub next_token: Option<String>,
}

/// One entry of an alias's routing configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoutingEntry {
    /// The version's ARN.
    pub state_machine_version_arn: String,
    /// The share of starts it gets, in percent.
    pub weight: u32,
}

/// An alias as `DescribeStateMachineAlias` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AliasDescription {
    /// `arn:aws:states:<region>:<account>:stateMachine:<name>:<alias>`.
    pub state_machine_alias_arn: String,
    /// The alias's name.
    pub name: String,
    /// Its description, if any.
    pub description: Option<String>,
    /// Its routing configuration, in the order given.
    pub routing: Vec<RoutingEntry>,
    /// When it was created, ms since the epoch.
    pub created_ms: u64,
    /// When it was last updated, ms since the epoch (`None`: never).
    pub updated_ms: Option<u64>,
}

/// One page of `ListStateMachineAliases`, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AliasPage {
    /// The aliases of this page.
    pub aliases: Vec<AliasDescription>,
    /// The token of the next page, if there is one.
    pub next_token: Option<String>,
}

/// What a start runs: the revision, and the version and alias it was started through.
#[derive(Debug, Clone)]
pub(crate) struct StartTarget {
    /// The revision the execution runs.
    pub(crate) machine: Arc<Machine>,
    /// The version's ARN, when started through a version or an alias.
    pub(crate) version_arn: Option<String>,
    /// The alias's ARN, when started through an alias.
    pub(crate) alias_arn: Option<String>,
    /// The Map Run starting it, for a Distributed Map's child.
    pub(crate) map_run_arn: Option<String>,
}

/// Which executions of a machine a listing keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Through {
    /// Every one (the unqualified ARN).
    Any,
    /// Those started on this version, directly or through an alias.
    Version(u32),
    /// Those started through this alias (its ARN).
    Alias(String),
}

impl Through {
    /// What the index alone can tell: the version, and that an alias start has one.
    pub(crate) fn keeps_indexed(&self, summary: &store::ExecutionSummary) -> bool {
        match self {
            Through::Any => true,
            Through::Version(number) => summary.version == Some(*number),
            Through::Alias(_) => summary.version.is_some(),
        }
    }
}

/// A checked routing configuration: the machine and its `(version number, weight)` entries.
type Routes<'a> = (&'a str, Vec<(u32, u32)>);

/// Maps the store's refusals of version and alias changes to the engine's errors.
fn version_error(engine: &Engine, error: store::Error) -> Error {
    match error {
        store::Error::UnknownMachine { name } => Error::StateMachineDoesNotExist {
            state_machine: engine.state_machine_arn(&name),
        },
        store::Error::UnknownVersion { machine, number } => Error::ResourceNotFound {
            resource_arn: engine.version_arn(&machine, number),
        },
        store::Error::UnknownAlias { machine, alias } => Error::ResourceNotFound {
            resource_arn: engine.alias_arn(&machine, &alias),
        },
        store::Error::AliasExists { machine, alias } => Error::Conflict {
            reason: ConflictReason::AliasDiffers {
                alias_arn: engine.alias_arn(&machine, &alias),
            },
        },
        store::Error::VersionInUse {
            machine,
            number,
            aliases,
        } => Error::Conflict {
            reason: ConflictReason::VersionInUse {
                version_arn: engine.version_arn(&machine, number),
                aliases,
            },
        },
        store::Error::TooManyVersions { machine, limit } => Error::VersionQuotaExceeded {
            state_machine_arn: engine.state_machine_arn(&machine),
            limit,
        },
        other => Error::from(other),
    }
}

/// `Validation` unless `description` fits.
fn check_description(member: &'static str, description: Option<&str>) -> Result<(), Error> {
    match description {
        Some(text) if text.chars().count() > DESCRIPTION_CHARS_MAX => Err(Error::Validation {
            reason: ValidationReason::DescriptionLength {
                member,
                chars_max: DESCRIPTION_CHARS_MAX,
            },
        }),
        _ => Ok(()),
    }
}

/// `Validation` unless `name` is an alias name AWS accepts: 1 to 80 of letters, digits, `_`,
/// `-`, `.`, not digits only (a version number).
fn check_alias_name(name: &str) -> Result<(), Error> {
    let chars = name.chars().count();
    if chars == 0 || chars > RESOURCE_NAME_CHARS_MAX {
        return Err(Error::Validation {
            reason: ValidationReason::AliasNameLength {
                name: name.to_string(),
                chars_max: RESOURCE_NAME_CHARS_MAX,
            },
        });
    }
    let allowed = name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
    let not_a_number = name.bytes().any(|b| !b.is_ascii_digit());
    if !allowed || !not_a_number {
        return Err(Error::Validation {
            reason: ValidationReason::AliasNamePattern {
                name: name.to_string(),
            },
        });
    }
    Ok(())
}

/// Reads a page token `prefix<position>` this module issued.
fn page_position<T: std::str::FromStr>(
    token: Option<&str>,
    prefix: char,
) -> Result<Option<T>, Error> {
    match token {
        None => Ok(None),
        Some(text) => text
            .strip_prefix(prefix)
            .and_then(|rest| rest.parse::<T>().ok())
            .map(Some)
            .ok_or_else(|| Error::InvalidToken {
                token: text.to_string(),
            }),
    }
}

impl Engine {
    /// `arn:aws:states:<region>:<account>:stateMachine:<name>:<number>`.
    pub fn version_arn(&self, machine: &str, number: u32) -> String {
        format!("{}:{number}", self.state_machine_arn(machine))
    }

    /// `arn:aws:states:<region>:<account>:stateMachine:<name>:<alias>`.
    pub fn alias_arn(&self, machine: &str, alias: &str) -> String {
        format!("{}:{alias}", self.state_machine_arn(machine))
    }

    /// The machine name and qualifier a state machine ARN of this engine names; a bare name
    /// (the embedded API) is unqualified. Another region's or account's ARN names nothing
    /// (`StateMachineDoesNotExist`).
    pub(crate) fn machine_and_qualifier<'a>(
        &self,
        state_machine: &'a str,
    ) -> Result<(&'a str, Option<Qualifier<'a>>), Error> {
        if !state_machine.starts_with("arn:") {
            return Ok((state_machine, None));
        }
        let (parsed, qualifier) = arn::parse_machine(state_machine)?;
        if !self.is_own(&parsed) {
            return Err(Error::StateMachineDoesNotExist {
                state_machine: state_machine.to_string(),
            });
        }
        Ok((parsed.resource.name(), qualifier))
    }

    /// The version a version ARN names: (machine, number). `Validation` for an alias ARN or an
    /// unqualified one.
    fn version_of<'a>(&self, version_arn: &'a str) -> Result<(&'a str, u32), Error> {
        match self.machine_and_qualifier(version_arn)? {
            (machine, Some(Qualifier::Version(number))) => Ok((machine, number)),
            _ => Err(Error::Validation {
                reason: ValidationReason::NotQualifiedAs {
                    arn: version_arn.to_string(),
                    expected: "version",
                },
            }),
        }
    }

    /// The alias an alias ARN names: (machine, alias). `Validation` otherwise.
    fn alias_of<'a>(&self, alias_arn: &'a str) -> Result<(&'a str, &'a str), Error> {
        match self.machine_and_qualifier(alias_arn)? {
            (machine, Some(Qualifier::Alias(alias))) => Ok((machine, alias)),
            _ => Err(Error::Validation {
                reason: ValidationReason::NotQualifiedAs {
                    arn: alias_arn.to_string(),
                    expected: "alias",
                },
            }),
        }
    }

    /// What a start of `state_machine` runs: a bare name or unqualified ARN, the live machine's
    /// current revision; a version ARN, that version's revision; an alias ARN, the revision of
    /// the version its routing draws. The caller holds `machine_changes` shared.
    pub(crate) fn start_target(&self, state_machine: &str) -> Result<StartTarget, Error> {
        let missing = || Error::StateMachineDoesNotExist {
            state_machine: state_machine.to_string(),
        };
        let (name, qualifier) = self.machine_and_qualifier(state_machine)?;
        let store = &self.inner.store;
        let (number, alias_arn) = match qualifier {
            None => {
                let machine = store.machine(name).ok_or_else(missing)?;
                return Ok(StartTarget {
                    machine,
                    version_arn: None,
                    alias_arn: None,
                    map_run_arn: None,
                });
            }
            Some(Qualifier::Version(number)) => (number, None),
            Some(Qualifier::Alias(alias)) => {
                let entry = store.alias(name, alias).ok_or_else(missing)?;
                let number = self.draw_route(&entry.routing)?;
                (number, Some(self.alias_arn(name, alias)))
            }
        };
        let version = store.version(name, number).ok_or_else(missing)?;
        let machine = store.machine_at(version.revision_lsn).ok_or_else(missing)?;
        Ok(StartTarget {
            machine,
            version_arn: Some(self.version_arn(name, number)),
            alias_arn,
            map_run_arn: None,
        })
    }

    /// The machine (its creation LSN) and the executions of it a `ListExecutions` of
    /// `state_machine` (a name, a machine, version or alias ARN) lists.
    pub(crate) fn listing_filter(
        &self,
        state_machine: &str,
    ) -> Result<(statelog_wal::Lsn, Through), Error> {
        let (name, qualifier) = self.machine_and_qualifier(state_machine)?;
        let machine =
            self.inner
                .store
                .machine(name)
                .ok_or_else(|| Error::StateMachineDoesNotExist {
                    state_machine: state_machine.to_string(),
                })?;
        // Express executions are not kept: AWS refuses to list them.
        if machine.machine_type == store::MachineType::Express {
            return Err(Error::StateMachineTypeNotSupported {
                state_machine: state_machine.to_string(),
                machine_type: machine.machine_type,
            });
        }
        let through = match qualifier {
            None => Through::Any,
            Some(Qualifier::Version(number)) => Through::Version(number),
            Some(Qualifier::Alias(alias)) => Through::Alias(self.alias_arn(name, alias)),
        };
        Ok((machine.origin_lsn, through))
    }

    /// The version and alias ARNs an execution was started through (read from its
    /// `ExecutionStarted` when the index says it was started on a version).
    pub(crate) fn started_through(
        &self,
        summary: &store::ExecutionSummary,
    ) -> Result<(Option<String>, Option<String>), Error> {
        if summary.version.is_none() {
            return Ok((None, None));
        }
        let first = self
            .inner
            .store
            .event(&summary.execution_arn, statelog_core::history::EventId(1))?;
        match first.map(|event| event.details) {
            Some(statelog_core::history::EventDetails::ExecutionStarted(started)) => Ok((
                started.state_machine_version_arn,
                started.state_machine_alias_arn,
            )),
            _ => Ok((None, None)),
        }
    }

    /// Picks a version of `routing` by weight, from one draw of the engine's entropy source.
    fn draw_route(&self, routing: &[(u32, u32)]) -> Result<u32, Error> {
        let mut draws = self.inner.entropy.draws();
        let draw = draws.next_u64();
        draws.finish()?;
        let mut point = (draw % u64::from(ALIAS_WEIGHTS_SUM_PERCENT)) as u32;
        for &(number, weight) in routing {
            if point < weight {
                return Ok(number);
            }
            point -= weight;
        }
        // Weights sum to 100 (checked before the alias was written); a log that says
        // otherwise routes to its last entry.
        routing
            .last()
            .map(|&(number, _)| number)
            .ok_or(Error::StateMachineDoesNotExist {
                state_machine: "an alias with no routing".to_string(),
            })
    }

    /// `PublishStateMachineVersion`: publishes the live machine's current revision as a new
    /// version, or answers the live version that already points at it. With `revision_id`
    /// (`INITIAL` for the revision made at creation), the current revision must be that one
    /// (`ConflictException`).
    pub fn publish_state_machine_version(
        &self,
        state_machine: &str,
        revision_id: Option<&str>,
        description: Option<&str>,
    ) -> Result<PublishedVersion, Error> {
        check_description("description", description)?;
        let (name, qualifier) = self.machine_and_qualifier(state_machine)?;
        if qualifier.is_some() {
            return Err(Error::StateMachineDoesNotExist {
                state_machine: state_machine.to_string(),
            });
        }
        let _changing = self.inner.machine_changes.write();
        let current =
            self.inner
                .store
                .machine(name)
                .ok_or_else(|| Error::StateMachineDoesNotExist {
                    state_machine: state_machine.to_string(),
                })?;
        if let Some(requested) = revision_id {
            let current_id =
                catalog::revision_id(&current).unwrap_or_else(|| INITIAL_REVISION_ID.to_string());
            if requested != current_id {
                return Err(Error::Conflict {
                    reason: ConflictReason::RevisionChanged {
                        requested: requested.to_string(),
                        current: current_id,
                    },
                });
            }
        }
        let now_ms = self.inner.options.clock.now_ms();
        let (version, _) = self
            .inner
            .store
            .publish_version(
                name,
                Some(current.lsn),
                description,
                VERSIONS_PER_MACHINE_MAX,
                now_ms,
            )
            .map_err(|e| version_error(self, e))?;
        Ok(self.published(&version))
    }

    fn published(&self, version: &VersionEntry) -> PublishedVersion {
        PublishedVersion {
            state_machine_version_arn: self.version_arn(&version.machine, version.number),
            created_ms: version.created_ms,
        }
    }

    /// `versionDescription` is allowed only with `publish: true` (`ValidationException`).
    pub fn check_publish_request(
        publish: bool,
        version_description: Option<&str>,
    ) -> Result<(), Error> {
        if version_description.is_some() && !publish {
            return Err(Error::Validation {
                reason: ValidationReason::DescriptionWithoutPublish,
            });
        }
        check_description("versionDescription", version_description)
    }

    /// `CreateStateMachine` with `publish` and `versionDescription`: creates (or finds the
    /// identical) STANDARD machine with its tags, then publishes its revision when `publish`
    /// is set.
    pub fn create_state_machine_published(
        &self,
        name: &str,
        definition: &str,
        role_arn: Option<&str>,
        tags: &[catalog::Tag],
        publish: bool,
        version_description: Option<&str>,
    ) -> Result<(MachineDescription, Option<PublishedVersion>), Error> {
        self.create_typed_machine_published(
            name,
            definition,
            role_arn,
            store::MachineType::Standard,
            tags,
            publish,
            version_description,
        )
    }

    /// [`Engine::create_state_machine_published`] of either type (`CreateStateMachine`'s
    /// `type`).
    #[allow(clippy::too_many_arguments)]
    pub fn create_typed_machine_published(
        &self,
        name: &str,
        definition: &str,
        role_arn: Option<&str>,
        machine_type: store::MachineType,
        tags: &[catalog::Tag],
        publish: bool,
        version_description: Option<&str>,
    ) -> Result<(MachineDescription, Option<PublishedVersion>), Error> {
        Self::check_publish_request(publish, version_description)?;
        let created =
            self.create_state_machine_of_type(name, definition, role_arn, machine_type, tags)?;
        let version = match publish {
            true => Some(self.publish_state_machine_version(name, None, version_description)?),
            false => None,
        };
        Ok((created, version))
    }

    /// `UpdateStateMachine` with `publish` and `versionDescription`: the update, then a publish
    /// of the revision it leaves current when `publish` is set.
    pub fn update_state_machine_published(
        &self,
        state_machine: &str,
        definition: Option<&str>,
        role_arn: Option<&str>,
        publish: bool,
        version_description: Option<&str>,
    ) -> Result<(MachineDescription, Option<PublishedVersion>), Error> {
        Self::check_publish_request(publish, version_description)?;
        let updated = self.update_state_machine_revision(state_machine, definition, role_arn)?;
        let version = match publish {
            true => Some(self.publish_state_machine_version(
                &updated.name,
                None,
                version_description,
            )?),
            false => None,
        };
        Ok((updated, version))
    }

    /// `ListStateMachineVersions`: the live versions of a live machine, newest first.
    pub fn list_state_machine_versions(
        &self,
        state_machine: &str,
        max_results: usize,
        next_token: Option<&str>,
    ) -> Result<VersionPage, Error> {
        let limit = page_size(
            max_results,
            LIST_PAGE_CATALOG_DEFAULT,
            LIST_PAGE_CATALOG_MAX,
        )?;
        let below: Option<u32> = page_position(next_token, 'v')?;
        let machine = self.live_machine(state_machine)?;
        let mut versions: Vec<VersionEntry> = self
            .inner
            .store
            .versions(&machine.name)
            .into_iter()
            .filter(|v| below.map_or(true, |below| v.number < below))
            .collect();
        let next_token =
            (versions.len() > limit).then(|| format!("v{}", versions[limit - 1].number));
        versions.truncate(limit);
        Ok(VersionPage {
            versions: versions.iter().map(|v| self.published(v)).collect(),
            next_token,
        })
    }

    /// `DeleteStateMachineVersion`: deletes a version (one that does not exist is not an
    /// error, as AWS answers). `ConflictException` while an alias routes to it. Executions
    /// started on it run on to their end.
    pub fn delete_state_machine_version(&self, version_arn: &str) -> Result<(), Error> {
        let (machine, number) = self.version_of(version_arn)?;
        let _changing = self.inner.machine_changes.write();
        let now_ms = self.inner.options.clock.now_ms();
        self.inner
            .store
            .delete_version(machine, number, now_ms)
            .map_err(|e| version_error(self, e))?;
        Ok(())
    }

    /// The description of version `number` of machine `name` (`DescribeStateMachine` of a
    /// version ARN): the revision's definition and role, the version's ARN and description.
    pub(crate) fn describe_version(
        &self,
        state_machine: &str,
    ) -> Result<Option<MachineDescription>, Error> {
        let (name, qualifier) = self.machine_and_qualifier(state_machine)?;
        let missing = || Error::StateMachineDoesNotExist {
            state_machine: state_machine.to_string(),
        };
        let number = match qualifier {
            None => return Ok(None),
            Some(Qualifier::Version(number)) => number,
            Some(Qualifier::Alias(_)) => return Err(missing()),
        };
        let version = self.inner.store.version(name, number).ok_or_else(missing)?;
        let revision = self
            .inner
            .store
            .machine_at(version.revision_lsn)
            .ok_or_else(missing)?;
        let mut description = self.machine_description(&revision);
        description.state_machine_arn = self.version_arn(name, number);
        description.description = version.description;
        // A version is made when it is published.
        description.created_ms = version.created_ms;
        Ok(Some(description))
    }

    /// Checks a routing configuration and reads it as (machine, [(number, weight)]).
    fn routing_of<'a>(&self, routing: &'a [RoutingEntry]) -> Result<Routes<'a>, Error> {
        let received = || {
            routing
                .iter()
                .map(|r| r.state_machine_version_arn.clone())
                .collect::<Vec<_>>()
        };
        if routing.is_empty() || routing.len() > ALIAS_ROUTES_MAX {
            return Err(Error::Validation {
                reason: ValidationReason::RoutingLength {
                    count: routing.len(),
                    entries_max: ALIAS_ROUTES_MAX,
                },
            });
        }
        for (position, entry) in routing.iter().enumerate() {
            if entry.weight > ALIAS_WEIGHTS_SUM_PERCENT {
                return Err(Error::Validation {
                    reason: ValidationReason::WeightTooLarge {
                        position: position + 1,
                        weight: entry.weight,
                    },
                });
            }
        }
        let mut machine: Option<&str> = None;
        let mut routes = Vec::with_capacity(routing.len());
        for entry in routing {
            let arn = entry.state_machine_version_arn.as_str();
            let not_versions = || Error::Validation {
                reason: ValidationReason::RoutingNotVersions {
                    received: received(),
                },
            };
            let (name, number) = match self.machine_and_qualifier(arn) {
                Ok((name, Some(Qualifier::Version(number)))) => (name, number),
                Ok(_) => return Err(not_versions()),
                Err(Error::InvalidArn { .. }) => return Err(not_versions()),
                Err(other) => return Err(other),
            };
            if machine.is_some_and(|m| m != name) {
                return Err(not_versions());
            }
            machine = Some(name);
            if routes.iter().any(|&(n, _)| n == number) {
                return Err(Error::Validation {
                    reason: ValidationReason::RoutingNotDistinct {
                        received: received(),
                    },
                });
            }
            routes.push((number, entry.weight));
        }
        let sum: u32 = routes.iter().map(|&(_, weight)| weight).sum();
        if sum != ALIAS_WEIGHTS_SUM_PERCENT {
            return Err(Error::Validation {
                reason: ValidationReason::WeightsSum {
                    weights: routes.iter().map(|&(_, weight)| weight).collect(),
                },
            });
        }
        let machine = machine.expect("a routing configuration has an entry");
        Ok((machine, routes))
    }

    fn alias_description(&self, alias: &AliasEntry) -> AliasDescription {
        AliasDescription {
            state_machine_alias_arn: self.alias_arn(&alias.machine, &alias.name),
            name: alias.name.clone(),
            description: alias.description.clone(),
            routing: alias
                .routing
                .iter()
                .map(|&(number, weight)| RoutingEntry {
                    state_machine_version_arn: self.version_arn(&alias.machine, number),
                    weight,
                })
                .collect(),
            created_ms: alias.created_ms,
            updated_ms: alias.updated_ms,
        }
    }

    /// `CreateStateMachineAlias`: an alias of the machine whose versions `routing` names (one
    /// or two, weights summing to 100). The same name with the same description and routing
    /// answers the existing alias; with another, `ConflictException`.
    pub fn create_state_machine_alias(
        &self,
        name: &str,
        description: Option<&str>,
        routing: &[RoutingEntry],
    ) -> Result<AliasDescription, Error> {
        check_alias_name(name)?;
        check_description("description", description)?;
        let (machine, routes) = self.routing_of(routing)?;
        let _changing = self.inner.machine_changes.write();
        let now_ms = self.inner.options.clock.now_ms();
        let (alias, _) = self
            .inner
            .store
            .create_alias(machine, name, description, &routes, now_ms)
            .map_err(|e| version_error(self, e))?;
        Ok(self.alias_description(&alias))
    }

    /// `DescribeStateMachineAlias`. `ResourceNotFound` for an alias that does not exist.
    pub fn describe_state_machine_alias(&self, alias_arn: &str) -> Result<AliasDescription, Error> {
        let (machine, alias) = self.alias_of(alias_arn)?;
        let entry =
            self.inner
                .store
                .alias(machine, alias)
                .ok_or_else(|| Error::ResourceNotFound {
                    resource_arn: alias_arn.to_string(),
                })?;
        Ok(self.alias_description(&entry))
    }

    /// `UpdateStateMachineAlias`: a new description, a new routing, or both; returns the update
    /// time. Executions already started keep the version they run. `ResourceNotFound` for an
    /// alias that does not exist.
    pub fn update_state_machine_alias(
        &self,
        alias_arn: &str,
        description: Option<&str>,
        routing: Option<&[RoutingEntry]>,
    ) -> Result<u64, Error> {
        let (machine, alias) = self.alias_of(alias_arn)?;
        if description.is_none() && routing.is_none() {
            return Err(Error::MissingRequiredParameter {
                reason: MissingParameter::DescriptionOrRouting,
            });
        }
        check_description("description", description)?;
        let routes = match routing {
            Some(routing) => {
                let (routed, routes) = self.routing_of(routing)?;
                if routed != machine {
                    return Err(Error::Validation {
                        reason: ValidationReason::RoutingNotVersions {
                            received: routing
                                .iter()
                                .map(|r| r.state_machine_version_arn.clone())
                                .collect(),
                        },
                    });
                }
                Some(routes)
            }
            None => None,
        };
        let _changing = self.inner.machine_changes.write();
        let now_ms = self.inner.options.clock.now_ms();
        let updated = self
            .inner
            .store
            .update_alias(machine, alias, description, routes.as_deref(), now_ms)
            .map_err(|e| version_error(self, e))?;
        Ok(updated.updated_ms.unwrap_or(now_ms))
    }

    /// `DeleteStateMachineAlias` (one that does not exist is not an error, as AWS answers).
    pub fn delete_state_machine_alias(&self, alias_arn: &str) -> Result<(), Error> {
        let (machine, alias) = self.alias_of(alias_arn)?;
        let _changing = self.inner.machine_changes.write();
        let now_ms = self.inner.options.clock.now_ms();
        self.inner
            .store
            .delete_alias(machine, alias, now_ms)
            .map_err(|e| version_error(self, e))?;
        Ok(())
    }

    /// `ListStateMachineAliases`: the aliases of a live machine, by name.
    pub fn list_state_machine_aliases(
        &self,
        state_machine: &str,
        max_results: usize,
        next_token: Option<&str>,
    ) -> Result<AliasPage, Error> {
        let limit = page_size(
            max_results,
            LIST_PAGE_CATALOG_DEFAULT,
            LIST_PAGE_CATALOG_MAX,
        )?;
        let skip: usize = page_position(next_token, 'a')?.unwrap_or(0);
        let machine = self.live_machine(state_machine)?;
        let aliases = self.inner.store.aliases(&machine.name);
        if skip > aliases.len() {
            return Err(Error::InvalidToken {
                token: next_token.unwrap_or_default().to_string(),
            });
        }
        let end = skip.saturating_add(limit).min(aliases.len());
        Ok(AliasPage {
            aliases: aliases[skip..end]
                .iter()
                .map(|a| self.alias_description(a))
                .collect(),
            next_token: (end < aliases.len()).then(|| format!("a{end}")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alias_names_follow_aws_rules() {
        for good in ["prod", "PROD-1", "a.b_c", "1a"] {
            check_alias_name(good).expect(good);
        }
        for bad in [
            "",
            "123",
            "INVALID ALIAS",
            "!INVALID",
            "ALIAS@",
            &"A".repeat(81),
        ] {
            let error = check_alias_name(bad).expect_err(bad);
            assert_eq!(error.aws_name(), "ValidationException", "{bad}");
        }
        assert!(check_alias_name("123")
            .expect_err("digits only")
            .to_string()
            .contains("Member must satisfy regular expression pattern: ^(?=.*[a-zA-Z_\\-\\.])"));
    }

    #[test]
    fn a_version_description_needs_publish() {
        Engine::check_publish_request(true, Some("d")).expect("ok");
        Engine::check_publish_request(false, None).expect("ok");
        let refused = Engine::check_publish_request(false, Some("d")).expect_err("refused");
        assert_eq!(
            refused.to_string(),
            "Version description can only be set when publish is true"
        );
    }
}
