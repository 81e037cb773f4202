//! `statelog run DEF.json --input JSON [--data-dir DIR]`: runs one execution to its end on the
//! embedded engine (real clock, group commit) and prints its output as compact JSON. Exit 0 on
//! success; 1 when the execution fails, times out or is aborted (error and cause on stderr);
//! 2 when it cannot run (bad file, invalid definition or input, unusable data directory).
//! Must not: register task integrations (the command has none: Task states are refused up front).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use serde_json::Value;

use statelog::engine::{Engine, EngineOptions, ExecutionStatus};

/// Arguments of `statelog run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The state machine definition (ASL JSON).
    definition: PathBuf,
    /// The execution input (JSON text).
    #[arg(long, default_value = "{}")]
    input: String,
    /// The engine's data directory.
    #[arg(long, default_value = "./statelog-data")]
    data_dir: PathBuf,
    /// The execution's name (a random UUID when absent).
    #[arg(long)]
    name: Option<String>,
}

/// Runs the definition once and prints the outcome.
pub fn run(args: RunArgs) -> ExitCode {
    match run_inner(&args) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("statelog run: {message}");
            ExitCode::from(2)
        }
    }
}

fn run_inner(args: &RunArgs) -> Result<ExitCode, String> {
    let text = std::fs::read_to_string(&args.definition)
        .map_err(|e| format!("cannot read {}: {e}", args.definition.display()))?;
    if let Some(resource) = first_task_resource(&text) {
        return Err(format!(
            "the definition has a Task state (Resource {resource}); `statelog run` has no task \
             integrations: embed the engine and register one"
        ));
    }
    let engine = Engine::open(&args.data_dir, EngineOptions::default()).map_err(|e| {
        format!(
            "cannot open the data directory {}: {e}",
            args.data_dir.display()
        )
    })?;
    let machine = machine_name(&args.definition);
    if let Ok(existing) = engine.describe_state_machine(&machine) {
        if existing.definition != text {
            engine
                .delete_state_machine(&machine)
                .map_err(|e| format!("{}: {e}", e.aws_name()))?;
        }
    }
    engine
        .create_state_machine(&machine, &text, None)
        .map_err(|e| format!("{}: {e}", e.aws_name()))?;
    let started = engine
        .start_execution(&machine, args.name.as_deref(), &args.input)
        .map_err(|e| format!("{}: {e}", e.aws_name()))?;
    let done = engine
        .wait_until_closed(&started.execution_arn)
        .map_err(|e| format!("{}: {e}", e.aws_name()))?;
    if done.status == ExecutionStatus::Succeeded {
        let output = done.output.unwrap_or(Value::Null);
        println!("{output}");
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "statelog run: execution {} {}: error: {}, cause: {}",
        done.execution_arn,
        done.status.aws_name(),
        done.error.as_deref().unwrap_or("(none)"),
        done.cause.as_deref().unwrap_or("(none)")
    );
    Ok(ExitCode::from(1))
}

/// The machine's name: the file stem, with characters AWS forbids in names replaced by `-`.
fn machine_name(path: &Path) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let cleaned: String = stem
        .chars()
        .take(80)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    if cleaned.is_empty() {
        "statelog-run".to_string()
    } else {
        cleaned
    }
}

/// The `Resource` of the first Task state found anywhere in the definition, if any.
fn first_task_resource(text: &str) -> Option<String> {
    fn walk(value: &Value) -> Option<String> {
        match value {
            Value::Object(map) => {
                if map.get("Type").and_then(Value::as_str) == Some("Task") {
                    let resource = map.get("Resource").and_then(Value::as_str).unwrap_or("?");
                    return Some(resource.to_string());
                }
                map.values().find_map(walk)
            }
            Value::Array(items) => items.iter().find_map(walk),
            _ => None,
        }
    }
    walk(&serde_json::from_str(text).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_names_come_from_the_file_stem() {
        assert_eq!(machine_name(Path::new("examples/order.json")), "order");
        assert_eq!(machine_name(Path::new("a b:c.json")), "a-b-c");
    }

    #[test]
    fn task_states_are_found_at_any_depth() {
        let nested = r#"{"States":{"P":{"Type":"Parallel","Branches":[{"States":{"T":{"Type":"Task","Resource":"arn:x"}}}]}}}"#;
        assert_eq!(first_task_resource(nested).as_deref(), Some("arn:x"));
        assert_eq!(
            first_task_resource(r#"{"States":{"A":{"Type":"Pass"}}}"#),
            None
        );
    }
}
