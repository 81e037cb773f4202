//! `statelog test-state DEF.json --input JSON [--state NAME]` as a user runs it: the answer
//! with its inspection data as readable JSON and exit 0 for a state that ran (whatever its
//! status); a whole machine tested at `--state` or its `StartAt`; a mocked Task; exit 1 with
//! the AWS error name for a refused request, 2 for a file that cannot be read. No data
//! directory is given or made.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{json, Value};

fn write_temp(name: &str, definition: &Value) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("statelog-test-state-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, definition.to_string()).expect("write definition");
    path
}

/// Runs `statelog test-state` with `args`: exit code, stdout, stderr.
fn test_state(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_statelog"))
        .arg("test-state")
        .args(args)
        .output()
        .expect("run statelog");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn answer(stdout: &str) -> Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

#[test]
fn a_state_prints_its_inspection_data_as_json() {
    let path = write_temp(
        "pass.json",
        &json!({"Type": "Pass", "InputPath": "$.a", "ResultPath": "$.r", "Next": "N"}),
    );
    let file = path.to_string_lossy();
    let (code, stdout, stderr) = test_state(&[&file, "--input", r#"{"a": {"b": 1}}"#]);
    assert_eq!(code, 0, "{stderr}");
    let answer = answer(&stdout);
    assert_eq!(answer["status"], json!("SUCCEEDED"));
    assert_eq!(answer["nextState"], json!("N"));
    assert_eq!(answer["output"], json!({"a": {"b": 1}, "r": {"b": 1}}));
    assert_eq!(answer["inspectionData"]["input"], json!({"a": {"b": 1}}));
    assert_eq!(answer["inspectionData"]["afterInputPath"], json!({"b": 1}));
    assert!(stdout.contains("\n  \""), "readable (indented): {stdout}");
}

#[test]
fn a_whole_machine_is_tested_at_its_start_or_the_state_named() {
    let path = write_temp(
        "machine.json",
        &json!({"StartAt": "One", "States": {
            "One": {"Type": "Pass", "Result": 1, "Next": "Two"},
            "Two": {"Type": "Fail", "Error": "Two.Failed", "Cause": "the second"}
        }}),
    );
    let file = path.to_string_lossy();
    let (code, stdout, stderr) = test_state(&[&file, "--input", "{}"]);
    assert_eq!(code, 0, "{stderr}");
    let start = answer(&stdout);
    assert_eq!(start["output"], json!(1));
    assert_eq!(start["nextState"], json!("Two"));
    let (code, stdout, stderr) = test_state(&[&file, "--input", "{}", "--state", "Two"]);
    assert_eq!(code, 0, "a failed state is an answer: {stderr}");
    let second = answer(&stdout);
    assert_eq!(second["status"], json!("FAILED"));
    assert_eq!(second["error"], json!("Two.Failed"));
    assert_eq!(second["cause"], json!("the second"));
}

#[test]
fn a_task_runs_on_its_mock_and_is_refused_without_one() {
    let path = write_temp(
        "task.json",
        &json!({"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
                "ResultSelector": {"v.$": "$.Payload"}, "End": true}),
    );
    let file = path.to_string_lossy();
    let (code, stdout, stderr) =
        test_state(&[&file, "--input", "{}", "--mock-result", r#"{"Payload": 5}"#]);
    assert_eq!(code, 0, "{stderr}");
    let mocked = answer(&stdout);
    assert_eq!(mocked["output"], json!({"v": 5}));
    assert_eq!(mocked["inspectionData"]["result"], json!({"Payload": 5}));
    let (code, stdout, stderr) = test_state(&[&file, "--input", "{}"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stderr.contains("ValidationException"), "{stderr}");
    assert!(stderr.contains("mock"), "{stderr}");
}

#[test]
fn bad_input_exits_one_and_an_unreadable_file_two() {
    let path = write_temp("ok.json", &json!({"Type": "Succeed"}));
    let file = path.to_string_lossy();
    let (code, _, stderr) = test_state(&[&file, "--input", "{nope"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("InvalidExecutionInput"), "{stderr}");
    let (code, _, stderr) = test_state(&["/nonexistent/statelog/def.json", "--input", "{}"]);
    assert_eq!(code, 2, "{stderr}");
}
