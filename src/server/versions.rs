//! versions: the wire side of state machine versions and aliases: `PublishStateMachineVersion`,
//! `ListStateMachineVersions`, `DeleteStateMachineVersion`, `CreateStateMachineAlias`,
//! `DescribeStateMachineAlias`, `UpdateStateMachineAlias`, `DeleteStateMachineAlias` and
//! `ListStateMachineAliases`. Each reads its input ([`super::protocol`]), runs one engine call
//! on the account's catalog engine ([`Backend::versions`]) and writes AWS's output shape.
//!
//! Invariants: members are checked before the engine is called; the engine judges names,
//! routing and existence. Must not: name anything below the engine's API.

use serde_json::{json, Map, Value};

use super::backend::{Backend, Caller};
use super::engine_backend::engine_error;
use super::error::Error;
use super::protocol::{
    decode, CreateStateMachineAliasInput, ListMachineCatalogInput, Operation,
    PublishStateMachineVersionInput, RoutingInput, StateMachineAliasArnInput,
    StateMachineVersionArnInput, Timestamp, UpdateStateMachineAliasInput,
};
use crate::engine::{AliasDescription, RoutingEntry};

/// `InvalidArn` unless `arn` is a state machine ARN (unqualified, of a version or of an
/// alias): the API takes ARNs, never the bare names the embedded engine also takes.
fn require_machine_arn(arn: &str) -> Result<(), Error> {
    crate::engine::arn::parse_machine(arn)
        .map(drop)
        .map_err(engine_error)
}

fn routing_entries(routing: &[RoutingInput]) -> Vec<RoutingEntry> {
    routing
        .iter()
        .map(|entry| RoutingEntry {
            state_machine_version_arn: entry.state_machine_version_arn.clone(),
            weight: entry.weight_percent(),
        })
        .collect()
}

fn page_json(key: &str, items: Vec<Value>, next_token: Option<String>) -> Value {
    let mut out = Map::new();
    out.insert(key.to_owned(), Value::Array(items));
    if let Some(token) = next_token {
        out.insert("nextToken".into(), Value::String(token));
    }
    Value::Object(out)
}

fn alias_json(alias: &AliasDescription) -> Value {
    let mut out = json!({
        "stateMachineAliasArn": alias.state_machine_alias_arn,
        "name": alias.name,
        "routingConfiguration": alias.routing.iter().map(|r| json!({
            "stateMachineVersionArn": r.state_machine_version_arn,
            "weight": r.weight,
        })).collect::<Vec<_>>(),
        "creationDate": Timestamp(alias.created_ms),
        "updateDate": Timestamp(alias.updated_ms.unwrap_or(alias.created_ms)),
    });
    if let (Value::Object(object), Some(description)) = (&mut out, &alias.description) {
        object.insert("description".into(), json!(description));
    }
    out
}

/// Answers one of the version and alias operations.
pub(super) async fn dispatch<B: Backend>(
    backend: &B,
    caller: &Caller,
    operation: Operation,
    body: &[u8],
) -> Result<Value, Error> {
    match operation {
        Operation::PublishStateMachineVersion => {
            let input: PublishStateMachineVersionInput = decode(operation, body)?;
            input.validate()?;
            require_machine_arn(&input.state_machine_arn)?;
            let version = backend
                .catalog_engine(caller, move |engine| {
                    engine.publish_state_machine_version(
                        &input.state_machine_arn,
                        input.revision_id.as_deref(),
                        input.description.as_deref(),
                    )
                })
                .await?;
            Ok(json!({
                "stateMachineVersionArn": version.state_machine_version_arn,
                "creationDate": Timestamp(version.created_ms),
            }))
        }
        Operation::ListStateMachineVersions => {
            let input: ListMachineCatalogInput = decode(operation, body)?;
            let max_results = input.validate()?;
            require_machine_arn(&input.state_machine_arn)?;
            let page = backend
                .catalog_engine(caller, move |engine| {
                    engine.list_state_machine_versions(
                        &input.state_machine_arn,
                        max_results as usize,
                        input.next_token.as_deref(),
                    )
                })
                .await?;
            let items = page
                .versions
                .iter()
                .map(|v| {
                    json!({
                        "stateMachineVersionArn": v.state_machine_version_arn,
                        "creationDate": Timestamp(v.created_ms),
                    })
                })
                .collect();
            Ok(page_json("stateMachineVersions", items, page.next_token))
        }
        Operation::DeleteStateMachineVersion => {
            let input: StateMachineVersionArnInput = decode(operation, body)?;
            input.validate()?;
            require_machine_arn(&input.state_machine_version_arn)?;
            backend
                .catalog_engine(caller, move |engine| {
                    engine.delete_state_machine_version(&input.state_machine_version_arn)
                })
                .await?;
            Ok(json!({}))
        }
        Operation::CreateStateMachineAlias => {
            let input: CreateStateMachineAliasInput = decode(operation, body)?;
            input.validate()?;
            let routing = routing_entries(&input.routing_configuration);
            let alias = backend
                .catalog_engine(caller, move |engine| {
                    engine.create_state_machine_alias(
                        &input.name,
                        input.description.as_deref(),
                        &routing,
                    )
                })
                .await?;
            Ok(json!({
                "stateMachineAliasArn": alias.state_machine_alias_arn,
                "creationDate": Timestamp(alias.created_ms),
            }))
        }
        Operation::DescribeStateMachineAlias => {
            let input: StateMachineAliasArnInput = decode(operation, body)?;
            input.validate()?;
            require_machine_arn(&input.state_machine_alias_arn)?;
            let alias = backend
                .catalog_engine(caller, move |engine| {
                    engine.describe_state_machine_alias(&input.state_machine_alias_arn)
                })
                .await?;
            Ok(alias_json(&alias))
        }
        Operation::UpdateStateMachineAlias => {
            let input: UpdateStateMachineAliasInput = decode(operation, body)?;
            input.validate()?;
            require_machine_arn(&input.state_machine_alias_arn)?;
            let routing = input.routing_configuration.as_deref().map(routing_entries);
            let updated_ms = backend
                .catalog_engine(caller, move |engine| {
                    engine.update_state_machine_alias(
                        &input.state_machine_alias_arn,
                        input.description.as_deref(),
                        routing.as_deref(),
                    )
                })
                .await?;
            Ok(json!({"updateDate": Timestamp(updated_ms)}))
        }
        Operation::DeleteStateMachineAlias => {
            let input: StateMachineAliasArnInput = decode(operation, body)?;
            input.validate()?;
            require_machine_arn(&input.state_machine_alias_arn)?;
            backend
                .catalog_engine(caller, move |engine| {
                    engine.delete_state_machine_alias(&input.state_machine_alias_arn)
                })
                .await?;
            Ok(json!({}))
        }
        Operation::ListStateMachineAliases => {
            let input: ListMachineCatalogInput = decode(operation, body)?;
            let max_results = input.validate()?;
            require_machine_arn(&input.state_machine_arn)?;
            let page = backend
                .catalog_engine(caller, move |engine| {
                    engine.list_state_machine_aliases(
                        &input.state_machine_arn,
                        max_results as usize,
                        input.next_token.as_deref(),
                    )
                })
                .await?;
            let items = page
                .aliases
                .iter()
                .map(|a| {
                    json!({
                        "stateMachineAliasArn": a.state_machine_alias_arn,
                        "creationDate": Timestamp(a.created_ms),
                    })
                })
                .collect();
            Ok(page_json("stateMachineAliases", items, page.next_token))
        }
        other => Err(Error::Internal {
            detail: format!("{} is not a version or alias operation", other.name()),
        }),
    }
}
