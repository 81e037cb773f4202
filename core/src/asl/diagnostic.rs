//! diagnostic: one problem found in a definition, with where it is and what kind it is.
//!
//! Owns [`Diagnostic`], [`DiagnosticCode`] and [`Severity`]. Invariant: `path` is a JSON pointer
//! into the definition (`/` for the root, `/States/Charge/Retry/0/BackoffRate` for a field), with
//! `~` and `/` in keys escaped as `~0` and `~1`. Must not: decide validity (that is `parse`).

use std::fmt;

/// What kind of problem a [`Diagnostic`] reports. The names follow AWS's
/// `ValidateStateMachineDefinition` codes where AWS has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum DiagnosticCode {
    /// The text is not JSON (or has duplicate keys, or nests too deep for the parser).
    InvalidJsonDescription,
    /// The definition is empty.
    MissingDescription,
    /// A field is missing, unknown, of the wrong type or out of range.
    SchemaValidationFailed,
    /// A Task `Resource` is malformed, unknown to the registry, or uses an unsupported pattern.
    InvalidResource,
    /// A branch has no state that ends it (no `End: true`, Succeed or Fail).
    MissingEndState,
    /// Two states of one machine share a name.
    DuplicateStateName,
    /// A state name is empty or too long.
    InvalidStateName,
    /// A `Next`, `Default`, Catcher `Next` or `StartAt` names a state that does not exist.
    MissingTransitionTarget,
    /// A state cannot be reached from `StartAt`.
    UnreachableState,
    /// A path, intrinsic function call or payload template does not parse.
    InvalidPath,
    /// A Choice rule is malformed.
    InvalidChoiceRule,
    /// The definition exceeds its size limit.
    LimitExceeded,
    /// Parallel/Map states (or Choice rules) nest deeper than the limit.
    TooDeeplyNested,
    /// A valid ASL feature statelog does not run yet (JSONata, Distributed Map, variables, ...).
    UnsupportedFeature,
    /// A JSONata expression (`{% %}`) does not parse.
    InvalidJsonataExpression,
    /// A JSONata expression parses but Step Functions does not run it (a top-level reference
    /// that is not `$states` or a variable, `$eval`).
    UnsupportedJsonataExpression,
}

impl DiagnosticCode {
    /// The code as AWS spells it (`SCHEMA_VALIDATION_FAILED`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            DiagnosticCode::InvalidJsonDescription => "INVALID_JSON_DESCRIPTION",
            DiagnosticCode::MissingDescription => "MISSING_DESCRIPTION",
            DiagnosticCode::SchemaValidationFailed => "SCHEMA_VALIDATION_FAILED",
            DiagnosticCode::InvalidResource => "INVALID_RESOURCE",
            DiagnosticCode::MissingEndState => "MISSING_END_STATE",
            DiagnosticCode::DuplicateStateName => "DUPLICATE_STATE_NAME",
            DiagnosticCode::InvalidStateName => "INVALID_STATE_NAME",
            DiagnosticCode::MissingTransitionTarget => "MISSING_TRANSITION_TARGET",
            DiagnosticCode::UnreachableState => "UNREACHABLE_STATE",
            DiagnosticCode::InvalidPath => "INVALID_PATH",
            DiagnosticCode::InvalidChoiceRule => "INVALID_CHOICE_RULE",
            DiagnosticCode::LimitExceeded => "LIMIT_EXCEEDED",
            DiagnosticCode::TooDeeplyNested => "TOO_DEEPLY_NESTED",
            DiagnosticCode::UnsupportedFeature => "UNSUPPORTED_FEATURE",
            DiagnosticCode::InvalidJsonataExpression => "INVALID_JSONATA_EXPRESSION",
            DiagnosticCode::UnsupportedJsonataExpression => "UNSUPPORTED_JSONATA_EXPRESSION",
        }
    }
}

impl fmt::Display for DiagnosticCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How bad a [`Diagnostic`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    /// The definition is rejected.
    Error,
    /// The definition is accepted; the author probably made a mistake.
    Warning,
}

impl Severity {
    /// `ERROR` or `WARNING`, as AWS spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "ERROR",
            Severity::Warning => "WARNING",
        }
    }
}

/// One problem in a definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// JSON pointer to the offending field (`/` for the whole definition).
    pub path: String,
    /// The kind of problem.
    pub code: DiagnosticCode,
    /// A sentence a person understands, naming what is wrong.
    pub message: String,
    /// Error (rejects the definition) or warning.
    pub severity: Severity,
}

impl Diagnostic {
    /// An error diagnostic.
    pub fn error(
        path: impl Into<String>,
        code: DiagnosticCode,
        message: impl Into<String>,
    ) -> Self {
        Self {
            path: path.into(),
            code,
            message: message.into(),
            severity: Severity::Error,
        }
    }

    /// The diagnostic in the shape of AWS's `ValidateStateMachineDefinition` response
    /// (`code`, `location`, `message`, `severity`).
    pub fn to_aws_json(&self) -> serde_json::Value {
        serde_json::json!({
            "code": self.code.as_str(),
            "location": self.path,
            "message": self.message,
            "severity": self.severity.as_str(),
        })
    }

    /// True when this diagnostic only says a feature is not supported yet.
    pub fn is_unsupported(&self) -> bool {
        self.code == DiagnosticCode::UnsupportedFeature
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} [{}]", self.path, self.message, self.code)
    }
}

/// Appends `key` to the JSON pointer `base`, escaping `~` and `/`.
pub fn pointer_child(base: &str, key: &str) -> String {
    let mut out = String::with_capacity(base.len() + key.len() + 1);
    if base != "/" {
        out.push_str(base);
    }
    out.push('/');
    for c in key.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            other => out.push(other),
        }
    }
    out
}

/// Appends an array index to the JSON pointer `base`.
pub fn pointer_index(base: &str, index: usize) -> String {
    if base == "/" {
        format!("/{index}")
    } else {
        format!("{base}/{index}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_escape_and_join() {
        assert_eq!(pointer_child("/", "States"), "/States");
        assert_eq!(pointer_child("/States", "a/b~c"), "/States/a~1b~0c");
        assert_eq!(pointer_index("/States/X/Retry", 2), "/States/X/Retry/2");
        assert_eq!(pointer_index("/", 0), "/0");
    }

    #[test]
    fn display_names_path_message_and_code() {
        let d = Diagnostic::error("/StartAt", DiagnosticCode::MissingTransitionTarget, "nope");
        assert_eq!(d.to_string(), "/StartAt: nope [MISSING_TRANSITION_TARGET]");
        assert!(!d.is_unsupported());
        assert_eq!(
            d.to_aws_json(),
            serde_json::json!({"code": "MISSING_TRANSITION_TARGET", "location": "/StartAt",
                               "message": "nope", "severity": "ERROR"})
        );
    }
}
