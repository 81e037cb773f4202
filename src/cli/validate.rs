//! `statelog validate FILE.json`: reads a definition, prints every diagnostic as
//! `path: message` (stdout), or `FILE: valid`. Exit 0 when valid, 1 when invalid, 2 when the
//! file cannot be read. Must not: run anything.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use statelog::engine::validate::{validate_definition, Diagnostic};

/// Arguments of `statelog validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// The definition file.
    file: PathBuf,
}

/// The lines `validate` prints for a definition's outcome, and whether it is valid.
pub fn report(file_label: &str, outcome: &Result<(), Vec<Diagnostic>>) -> (Vec<String>, bool) {
    match outcome {
        Ok(()) => (vec![format!("{file_label}: valid")], true),
        Err(diagnostics) => (
            diagnostics
                .iter()
                .map(|d| format!("{}: {}", d.path, d.message))
                .collect(),
            false,
        ),
    }
}

/// Validates the definition and prints every diagnostic as `path: message`.
pub fn run(args: ValidateArgs) -> ExitCode {
    let text = match std::fs::read_to_string(&args.file) {
        Ok(text) => text,
        Err(error) => {
            eprintln!(
                "statelog validate: cannot read {}: {error}",
                args.file.display()
            );
            return ExitCode::from(2);
        }
    };
    let outcome = validate_definition(&text, &statelog::engine::validate::options());
    let (lines, valid) = report(&args.file.display().to_string(), &outcome);
    for line in lines {
        println!("{line}");
    }
    if valid {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use statelog::engine::validate::DiagnosticCode;

    #[test]
    fn prints_one_line_per_diagnostic_or_valid() {
        let (lines, valid) = report("f.json", &Ok(()));
        assert!(valid);
        assert_eq!(lines, ["f.json: valid"]);
        let bad = Err(vec![
            Diagnostic::error("/StartAt", DiagnosticCode::MissingTransitionTarget, "gone"),
            Diagnostic::error(
                "/States/A/Bogus",
                DiagnosticCode::SchemaValidationFailed,
                "unknown",
            ),
        ]);
        let (lines, valid) = report("f.json", &bad);
        assert!(!valid);
        assert_eq!(lines, ["/StartAt: gone", "/States/A/Bogus: unknown"]);
    }
}
