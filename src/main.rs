//! The `statelog` command line: a thin adapter over the library.

use std::process::ExitCode;

use clap::Parser;

mod cli;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    cli::run(args)
}
