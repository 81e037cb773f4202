//! `statelog cluster init --nats URLS --partitions N`: creates a cluster's config in NATS KV
//! (bucket `statelog_cluster`, key `config`, create-only) and its node and lease buckets.
//! Prints `initialized cluster: N partitions`, or `already initialized: N partitions` when it
//! already has N; exits 1 with the error otherwise (another count, no server, a bad count).
//! Must not: change an existing cluster's config.

use std::process::ExitCode;

use clap::{Args, Subcommand};

use statelog_cluster::config::{self, InitOutcome};

/// `statelog cluster ...`.
#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// Create the cluster: fix its partition count, once.
    Init(InitArgs),
}

/// Arguments of `statelog cluster init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// NATS server URLs, comma-separated (nats://HOST:PORT,...).
    #[arg(long, value_delimiter = ',', required = true)]
    nats: Vec<String>,
    /// The partition count, 1..=1024; fixed once the cluster exists.
    #[arg(long)]
    partitions: u32,
}

/// Runs a `statelog cluster` command.
pub fn run(command: ClusterCommand) -> ExitCode {
    match command {
        ClusterCommand::Init(args) => init(args),
    }
}

/// The line `init` prints for its outcome.
pub fn report(outcome: &InitOutcome) -> String {
    match outcome {
        InitOutcome::Created(config) => {
            format!("initialized cluster: {} partitions", config.partitions)
        }
        InitOutcome::AlreadyInitialized(config) => {
            format!("already initialized: {} partitions", config.partitions)
        }
        // InitOutcome is non_exhaustive; a new outcome is a success this build does not name.
        _ => format!("initialized: {} partitions", outcome.config().partitions),
    }
}

fn init(args: InitArgs) -> ExitCode {
    let urls: Vec<String> = args
        .nats
        .iter()
        .map(|url| url.trim().to_owned())
        .filter(|url| !url.is_empty())
        .collect();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("statelog cluster init: cannot start a runtime: {error}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(config::init(&urls, args.partitions)) {
        Ok(outcome) => {
            println!("{}", report(&outcome));
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("statelog cluster init: {error}");
            ExitCode::from(1)
        }
    }
}
