//! `statelog wal ...`: operator commands over a WAL directory.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

/// The `wal` subcommands.
#[derive(Debug, Subcommand)]
pub enum WalCommand {
    /// Check every record of the log; exit 0 when clean.
    Verify {
        /// The log directory.
        dir: PathBuf,
    },
}

/// Runs one `wal` subcommand.
pub fn run(command: WalCommand) -> ExitCode {
    match command {
        WalCommand::Verify { dir } => {
            eprintln!("statelog wal verify {}: not implemented yet", dir.display());
            ExitCode::from(2)
        }
    }
}
