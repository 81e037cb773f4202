//! `statelog validate FILE.json`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

/// Arguments of `statelog validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// The definition file.
    file: PathBuf,
}

/// Validates the definition and prints every diagnostic as `path: message`.
pub fn run(args: ValidateArgs) -> ExitCode {
    eprintln!(
        "statelog validate {}: not implemented yet",
        args.file.display()
    );
    ExitCode::from(2)
}
