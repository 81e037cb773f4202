//! cli: argument parsing and dispatch. Each subcommand family lives in its own file.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod validate;
mod wal;

/// statelog: durable Amazon States Language workflows over a checksummed write-ahead log.
#[derive(Debug, Parser)]
#[command(name = "statelog", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Inspect, check and exercise a write-ahead log directory.
    #[command(subcommand)]
    Wal(wal::WalCommand),
    /// Validate a state machine definition; prints every problem as `path: message`.
    Validate(validate::ValidateArgs),
}

/// Runs the parsed command line and returns the process exit code.
pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Wal(command) => wal::run(command),
        Command::Validate(args) => validate::run(args),
    }
}
