//! The `run`, `history` and `executions` commands, driven as a user would: the real binary on a
//! temporary data directory. The definitions here have no Wait, so nothing waits on the clock.

use std::process::Command;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_statelog");

fn statelog(args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("statelog runs")
}

#[test]
fn run_prints_the_output_then_history_and_executions_show_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let data = data.to_str().expect("utf-8 path");
    let def = dir.path().join("greet.json");
    std::fs::write(
        &def,
        r#"{"StartAt":"Hi","States":{
            "Hi":{"Type":"Pass","Parameters":{"msg.$":"States.Format('hi {}', $.who)"},"Next":"Ok?"},
            "Ok?":{"Type":"Choice","Choices":[{"Variable":"$.msg","StringEquals":"hi bob","Next":"No"}],"Default":"Yes"},
            "Yes":{"Type":"Succeed"},
            "No":{"Type":"Fail","Error":"Bob","Cause":"not bob"}}}"#,
    )
    .expect("writes");
    let def = def.to_str().expect("utf-8 path");

    let ok = statelog(&[
        "run",
        def,
        "--input",
        r#"{"who":"ann"}"#,
        "--data-dir",
        data,
        "--name",
        "ann",
    ]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&ok.stdout).trim(),
        r#"{"msg":"hi ann"}"#
    );

    let failed = statelog(&[
        "run",
        def,
        "--input",
        r#"{"who":"bob"}"#,
        "--data-dir",
        data,
    ]);
    assert_eq!(failed.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(
        stderr.contains("FAILED") && stderr.contains("Bob") && stderr.contains("not bob"),
        "{stderr}"
    );

    let bad_input = statelog(&["run", def, "--input", "{", "--data-dir", data]);
    assert_eq!(bad_input.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad_input.stderr).contains("InvalidExecutionInput"));

    let listed = statelog(&["executions", "--data-dir", data]);
    assert!(listed.status.success());
    let text = String::from_utf8_lossy(&listed.stdout);
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(text.contains("SUCCEEDED") && text.contains("FAILED"));

    let table = statelog(&["history", "ann", "--data-dir", data]);
    assert!(
        table.status.success(),
        "{}",
        String::from_utf8_lossy(&table.stderr)
    );
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains("PassStateEntered") && text.contains("ExecutionSucceeded"),
        "{text}"
    );
    assert!(
        !text.contains('\u{1b}'),
        "no colors when stdout is not a terminal"
    );

    let json = statelog(&["history", "ann", "--data-dir", data, "--json"]);
    let parsed: Value = serde_json::from_slice(&json.stdout).expect("json");
    let events = parsed["events"].as_array().expect("events");
    assert_eq!(events[0]["type"], "ExecutionStarted");
    assert_eq!(events.last().expect("last")["type"], "ExecutionSucceeded");
    assert_eq!(events.last().expect("last")["id"], events.len());

    let missing = statelog(&["history", "nobody", "--data-dir", data]);
    assert_eq!(missing.status.code(), Some(1));
}

#[test]
fn run_refuses_task_states_it_cannot_call() {
    let dir = tempfile::tempdir().expect("temp dir");
    let def = dir.path().join("t.json");
    std::fs::write(&def, r#"{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:1:function:f","End":true}}}"#).expect("writes");
    let data = dir.path().join("d");
    let out = statelog(&[
        "run",
        def.to_str().expect("utf-8"),
        "--data-dir",
        data.to_str().expect("utf-8"),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no task integrations"));
}

/// The README's main-job command on the shipped example (its Wait lasts one real second inside
/// the child process; the test itself does not sleep).
#[test]
fn the_order_example_runs_to_its_output() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/order.json");
    let out = statelog(&[
        "run",
        example,
        "--input",
        r#"{"order_id":"o-1","amount":42}"#,
        "--data-dir",
        data.to_str().expect("utf-8"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let output: Value = serde_json::from_slice(&out.stdout).expect("compact JSON");
    assert_eq!(output["status"], "shipped");
    assert_eq!(
        output["invoice"],
        serde_json::json!({"invoice": "INV-o-1", "due": 47})
    );
    assert_eq!(output["boxes"].as_array().map(Vec::len), Some(3));
    let rejected = statelog(&[
        "run",
        example,
        "--input",
        r#"{"order_id":"o-2","amount":0}"#,
        "--data-dir",
        data.to_str().expect("utf-8"),
    ]);
    assert_eq!(rejected.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&rejected.stderr).contains("Order.Rejected"));
}
