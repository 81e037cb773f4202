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
    /// Forget executions past retention and reclaim their segments.
    Compact {
        /// The data directory.
        dir: PathBuf,
        /// Keep closed executions this many days (default 90).
        #[arg(long)]
        retention_days: Option<u64>,
    },
}

/// Runs one `wal` subcommand.
pub fn run(command: WalCommand) -> ExitCode {
    match command {
        WalCommand::Verify { dir } => {
            eprintln!("statelog wal verify {}: not implemented yet", dir.display());
            ExitCode::from(2)
        }
        WalCommand::Compact {
            dir,
            retention_days,
        } => super::compact::run(&dir, retention_days),
    }
}
