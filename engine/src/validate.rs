//! validate: checking a definition without creating a state machine, as `statelog validate` and
//! the `ValidateStateMachineDefinition` action do.
//!
//! The diagnostic types are the core's, re-exported here on purpose: they are what
//! [`Error::InvalidDefinition`](crate::Error::InvalidDefinition) carries, so they are part of the
//! engine's API already. Callers above the engine (the server, the CLI) name them through this
//! module and never through `statelog-core`.
//!
//! Must not: keep anything, or run anything.

pub use statelog_core::asl::{Diagnostic, DiagnosticCode, Severity, ValidationOptions};

/// The options the engine validates and compiles every definition with: any resource, a
/// Standard machine, and JSONata through `statelog-jsonata`.
pub fn options() -> ValidationOptions {
    ValidationOptions {
        jsonata: Some(statelog_jsonata::asl::StepFunctionsJsonata::runtime()),
        ..ValidationOptions::default()
    }
}

/// Checks the definition `json` the way `create_state_machine` does: `Ok` when it would be
/// accepted, otherwise every diagnostic found (not just the first), errors and warnings alike.
pub fn validate_definition(json: &str, options: &ValidationOptions) -> Result<(), Vec<Diagnostic>> {
    statelog_core::asl::parse_definition(json, options).map(|_| ())
}

/// [`validate_definition`] for a machine of `machine_type`: an EXPRESS one is also refused
/// `.sync`, `.waitForTaskToken` and activity resources, as `create_state_machine_of_type` does.
pub fn validate_definition_of_type(
    json: &str,
    options: &ValidationOptions,
    machine_type: crate::MachineType,
) -> Result<(), Vec<Diagnostic>> {
    let compiled = statelog_core::asl::parse_definition(json, options)?;
    let diagnostics = match machine_type {
        crate::MachineType::Standard => Vec::new(),
        crate::MachineType::Express => crate::express::diagnostics(&compiled),
    };
    if diagnostics.is_empty() {
        Ok(())
    } else {
        Err(diagnostics)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_express_definition_is_held_to_the_express_rules() {
        let json = r#"{"StartAt":"A","States":{"A":{"Type":"Task",
            "Resource":"arn:aws:states:::states:startExecution.sync","End":true}}}"#;
        let options = ValidationOptions::default();
        assert_eq!(
            validate_definition_of_type(json, &options, crate::MachineType::Standard),
            Ok(())
        );
        let refused = validate_definition_of_type(json, &options, crate::MachineType::Express)
            .expect_err("refused");
        assert_eq!(refused.len(), 1);
        assert_eq!(refused[0].path, "/States/A/Resource");
        assert_eq!(refused[0].code, DiagnosticCode::SchemaValidationFailed);
    }

    #[test]
    fn accepts_a_valid_definition() {
        let json = r#"{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}"#;
        assert_eq!(
            validate_definition(json, &ValidationOptions::default()),
            Ok(())
        );
    }

    #[test]
    fn reports_every_diagnostic_with_its_path() {
        let json = r#"{"StartAt":"Missing","States":{"A":{"Type":"Pass","Next":"Gone"}}}"#;
        let diagnostics = validate_definition(json, &ValidationOptions::default())
            .expect_err("two dangling transitions are invalid");
        let dangling: Vec<&str> = diagnostics
            .iter()
            .filter(|d| d.code == DiagnosticCode::MissingTransitionTarget)
            .map(|d| d.path.as_str())
            .collect();
        assert!(dangling.contains(&"/StartAt"), "{diagnostics:?}");
        assert!(dangling.contains(&"/States/A/Next"), "{diagnostics:?}");
        assert!(
            diagnostics.iter().all(|d| d.severity == Severity::Error),
            "{diagnostics:?}"
        );
    }
}
