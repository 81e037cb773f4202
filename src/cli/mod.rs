//! cli: argument parsing and dispatch. Each subcommand family lives in its own file.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[cfg(feature = "cluster")]
mod cluster;
mod compact;
mod executions;
mod history;
mod redrive;
mod run;
#[cfg(feature = "server")]
mod serve;
mod test_state;
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
    /// Run one state on its own (AWS's TestState) and print its inspection data.
    TestState(test_state::TestStateArgs),
    /// Run one execution of a definition to its end and print its output.
    Run(run::RunArgs),
    /// Print an execution's history (a table, or AWS JSON with --json).
    History(history::HistoryArgs),
    /// List the executions in a data directory, newest first.
    Executions(executions::ExecutionsArgs),
    /// Serve the AWS Step Functions API over HTTP (AWS JSON 1.0, SigV4).
    #[cfg(feature = "server")]
    Serve(serve::ServeArgs),
    /// Redrive a failed, aborted or timed-out execution.
    Redrive(redrive::RedriveArgs),
    /// Set up a cluster of statelog nodes over NATS JetStream.
    #[cfg(feature = "cluster")]
    #[command(subcommand)]
    Cluster(cluster::ClusterCommand),
}

/// Runs the parsed command line and returns the process exit code.
pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Wal(command) => wal::run(command),
        Command::Validate(args) => validate::run(args),
        Command::TestState(args) => test_state::run(args),
        Command::Run(args) => run::run(args),
        Command::History(args) => history::run(args),
        Command::Executions(args) => executions::run(args),
        #[cfg(feature = "server")]
        Command::Serve(args) => serve::run(args),
        Command::Redrive(args) => redrive::run(args),
        #[cfg(feature = "cluster")]
        Command::Cluster(command) => cluster::run(command),
    }
}
