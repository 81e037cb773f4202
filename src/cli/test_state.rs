//! `statelog test-state DEF.json --input JSON [--state NAME]`: runs one state on its own, as
//! AWS's `TestState` does, and prints the answer with its inspection data as readable JSON
//! (stdout): `status`, `output`, `error`, `cause`, `nextState` and `inspectionData` (`input`,
//! `afterInputPath`, `afterParameters`, `afterArguments`, `result`, `afterResultSelector`,
//! `afterResultPath`, `variables`, `errorDetails`, ...), each value as JSON.
//!
//! The file is one state's definition (AWS's default). A whole machine (a `States` object)
//! is tested at `--state NAME`, or at its `StartAt` state without one. A Task, Parallel or Map
//! needs a mocked answer (`--mock-result` or `--mock-error`): no handler runs here.
//!
//! Exit 0 when the test ran (whatever the state's status), 1 when it was refused (a definition
//! that does not validate, an input that is not JSON, a mock the state does not take), 2 when
//! the file cannot be read. Needs no data directory: it writes nothing.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use serde_json::Value;

use statelog::engine::clock::SystemClock;
use statelog::engine::test_state::{test_state_detached, Detached, TestMock, TestStateRequest};
use statelog::engine::{EngineOptions, OsRandom};

/// Arguments of `statelog test-state`.
#[derive(Debug, Args)]
pub struct TestStateArgs {
    /// The definition file: one state, or a whole machine.
    file: PathBuf,
    /// The state's input, JSON text.
    #[arg(long)]
    input: String,
    /// The state of a whole machine to test (default: its `StartAt`).
    #[arg(long)]
    state: Option<String>,
    /// The variables in scope, a JSON object's text.
    #[arg(long)]
    variables: Option<String>,
    /// A Task's, Parallel's or Map's mocked result, JSON text.
    #[arg(long, conflicts_with = "mock_error")]
    mock_result: Option<String>,
    /// A Task's, Parallel's or Map's mocked error name.
    #[arg(long)]
    mock_error: Option<String>,
    /// The mocked error's cause (with --mock-error).
    #[arg(long, requires = "mock_error")]
    mock_cause: Option<String>,
    /// Retries already made by the Retrier that matches the mocked error.
    #[arg(long)]
    retry_count: Option<u32>,
}

/// The state the file is tested at: `--state`, else a whole machine's `StartAt`, else none
/// (the file is one state).
fn state_name(definition: &Value, asked: Option<String>) -> Option<String> {
    let whole = definition.get("States").is_some_and(Value::is_object);
    match (asked, whole) {
        (Some(name), _) => Some(name),
        (None, true) => definition
            .get("StartAt")
            .and_then(Value::as_str)
            .map(str::to_string),
        (None, false) => None,
    }
}

/// Runs the test and prints its answer.
pub fn run(args: TestStateArgs) -> ExitCode {
    let text = match std::fs::read_to_string(&args.file) {
        Ok(text) => text,
        Err(error) => {
            eprintln!(
                "statelog test-state: cannot read {}: {error}",
                args.file.display()
            );
            return ExitCode::from(2);
        }
    };
    // Text that is not JSON is left to the engine, which says where it breaks.
    let parsed = serde_json::from_str::<Value>(&text).unwrap_or(Value::Null);
    let mock = match (args.mock_result, args.mock_error) {
        (Some(result), _) => Some(TestMock {
            result: Some(result),
            error: None,
            cause: None,
            error_output: false,
        }),
        (None, Some(error)) => Some(TestMock {
            result: None,
            error: Some(error),
            cause: args.mock_cause,
            error_output: true,
        }),
        (None, None) => None,
    };
    let request = TestStateRequest {
        state_name: state_name(&parsed, args.state),
        definition: text,
        input: Some(args.input),
        variables: args.variables,
        mock,
        retrier_retry_count: args.retry_count,
        ..TestStateRequest::default()
    };
    let options = EngineOptions::default();
    let detached = Detached {
        clock: Arc::new(SystemClock),
        random: Arc::new(OsRandom),
        region: options.region,
        account: options.account,
    };
    match test_state_detached(&request, &detached) {
        Ok(answer) => {
            let readable = answer.to_readable_json();
            match serde_json::to_string_pretty(&readable) {
                Ok(text) => println!("{text}"),
                Err(error) => {
                    eprintln!("statelog test-state: cannot print the answer: {error}");
                    return ExitCode::from(1);
                }
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("statelog test-state: {} {error}", error.aws_name());
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_whole_machine_is_tested_at_the_state_asked_or_its_start() {
        let machine = json!({"StartAt": "A", "States": {"A": {"Type": "Pass", "End": true}}});
        assert_eq!(state_name(&machine, None).as_deref(), Some("A"));
        assert_eq!(state_name(&machine, Some("B".into())).as_deref(), Some("B"));
        let state = json!({"Type": "Pass", "End": true});
        assert_eq!(state_name(&state, None), None);
    }
}
