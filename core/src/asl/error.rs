//! error: the asl layer's Rust error, for callers that want one value instead of the list.
//!
//! Validation itself returns every [`Diagnostic`]; [`Error`] wraps that list (e.g. for the API's
//! `InvalidDefinition`). Must not: drop diagnostics (the list is kept whole).

use super::diagnostic::Diagnostic;

/// An error of the asl layer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The definition was rejected; every problem found is listed.
    #[error("invalid state machine definition: {} problem(s); first: {}", diagnostics.len(), first(diagnostics))]
    InvalidDefinition {
        /// Every problem, in the order found.
        diagnostics: Vec<Diagnostic>,
    },
}

fn first(diagnostics: &[Diagnostic]) -> String {
    diagnostics
        .first()
        .map_or_else(|| "(none)".to_string(), ToString::to_string)
}

impl From<Vec<Diagnostic>> for Error {
    fn from(diagnostics: Vec<Diagnostic>) -> Self {
        Error::InvalidDefinition { diagnostics }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asl::{parse_definition, ValidationOptions};

    #[test]
    fn wraps_every_diagnostic_and_names_the_first() {
        let d = parse_definition("{}", &ValidationOptions::default()).expect_err("empty object");
        let count = d.len();
        let error = Error::from(d);
        let text = error.to_string();
        assert!(text.contains("These fields are required"), "{text}");
        let Error::InvalidDefinition { diagnostics } = error;
        assert_eq!(diagnostics.len(), count);
    }
}
