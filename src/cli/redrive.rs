//! `statelog redrive EXECUTION [--data-dir DIR] [--client-token T]`: redrives a failed, aborted
//! or timed-out execution (EXECUTION is its ARN) and prints the redrive count and date. Task
//! states that rerun wait for their integration (registered by the process that runs the
//! engine); Pass/Choice/Fail chains run at once. Must not: touch other executions.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use statelog::engine::{Engine, EngineOptions};

/// Arguments of `statelog redrive`.
#[derive(Debug, Args)]
pub struct RedriveArgs {
    /// The execution's ARN.
    execution: String,
    /// The engine's data directory.
    #[arg(long, default_value = "./statelog-data")]
    data_dir: PathBuf,
    /// Makes the call idempotent.
    #[arg(long)]
    client_token: Option<String>,
}

/// Redrives the execution.
pub fn run(args: RedriveArgs) -> ExitCode {
    match run_inner(&args) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("statelog redrive: {message}");
            ExitCode::from(1)
        }
    }
}

fn run_inner(args: &RedriveArgs) -> Result<String, String> {
    let options = EngineOptions {
        background_timers: false,
        ..EngineOptions::default()
    };
    let engine = Engine::open(&args.data_dir, options).map_err(|e| {
        format!(
            "cannot open the data directory {}: {e}",
            args.data_dir.display()
        )
    })?;
    let outcome = engine
        .redrive_execution(&args.execution, args.client_token.as_deref())
        .map_err(|e| format!("{}: {e}", e.aws_name()))?;
    let status = engine
        .describe_execution(&args.execution)
        .map(|d| d.status.aws_name())
        .unwrap_or("UNKNOWN");
    Ok(format!(
        "redriven: {} redriveCount {} redriveDate {} status {status}",
        args.execution, outcome.redrive_count, outcome.redrive_ms
    ))
}
