//! fuzz: the entry point the `asl_parse_validate` fuzz target and its corpus-replay test share.
//!
//! Owns the oracle: parsing any bytes never panics; input over the size limit is refused with
//! `LIMIT_EXCEEDED`; every diagnostic has a JSON pointer path; a definition that validates
//! re-parses from its own JSON to an equal model. Must not: do I/O (callers read the bytes).

use super::diagnostic::DiagnosticCode;
use super::parse::{parse_definition, ValidationOptions};
use crate::limits::DEFINITION_SIZE_BYTES_MAX;

/// Runs parse + validate on `data` and checks the oracle; panics (the fuzzer's finding) when an
/// invariant breaks. Non-UTF-8 input is skipped: definitions arrive as text.
pub fn parse_validate_oracle(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let options = ValidationOptions::default();
    match parse_definition(text, &options) {
        Ok(machine) => {
            assert!(
                text.len() <= DEFINITION_SIZE_BYTES_MAX,
                "an oversized definition validated"
            );
            assert!(
                machine.states.contains(&machine.start_at),
                "StartAt names no state"
            );
            let again = parse_definition(&machine.source.to_string(), &options)
                .unwrap_or_else(|d| panic!("a valid definition's own JSON is invalid: {d:?}"));
            assert_eq!(
                again, machine,
                "re-parsing a valid definition changed its model"
            );
        }
        Err(diagnostics) => {
            assert!(!diagnostics.is_empty(), "rejected without a diagnostic");
            for d in &diagnostics {
                assert!(
                    d.path.starts_with('/'),
                    "diagnostic path {:?} is not a pointer",
                    d.path
                );
                assert!(
                    !d.message.is_empty(),
                    "diagnostic without a message at {}",
                    d.path
                );
            }
            if text.len() > DEFINITION_SIZE_BYTES_MAX {
                assert_eq!(diagnostics[0].code, DiagnosticCode::LimitExceeded);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oracle_holds_on_hand_picked_inputs() {
        let inputs: &[&[u8]] = &[
            b"",
            b"\xff\xfe",
            b"null",
            b"{}",
            b"[[[[[[[[[[",
            br#"{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}"#,
            br#"{"StartAt":"A","States":{"A":{"Type":"Parallel","End":true,"Branches":[{"StartAt":"B","States":{"B":{"Type":"Succeed"}}}]}}}"#,
            br#"{"StartAt":"A","States":{"A":{"Type":"Choice","Choices":[{"Not":{"Not":{"Not":{}}}}]}}}"#,
            br#"{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"arn:::::","End":true}}}"#,
            br#"{"StartAt":"A","States":{"A":{"Type":"Wait","Timestamp":"9999-99-99T99:99:99Z","End":true}}}"#,
            br#"{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}},"StartAt":"A"}"#,
        ];
        for input in inputs {
            parse_validate_oracle(input);
        }
        let mut deep = Vec::new();
        for _ in 0..5_000 {
            deep.extend_from_slice(br#"{"Not":"#);
        }
        parse_validate_oracle(&deep);
    }
}
