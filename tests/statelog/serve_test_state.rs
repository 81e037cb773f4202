//! `TestState` over HTTP (`statelog serve`'s router, SigV4 and all): the answer's fields as AWS
//! renders them (JSON values as text, `inspectionData` only from DEBUG on), the refusals with
//! AWS's names and messages, and the answers AWS recorded (`../shared/conformance`, localstack's
//! `test_state` snapshots) for the states that need no mock: each recorded DEBUG or TRACE
//! answer names its input (an INFO answer takes its DEBUG twin's), so the template and that
//! input are sent again and every field of the answer compared.
#![cfg(feature = "server")]

use std::path::Path;

use axum::http::StatusCode;
use serde_json::{json, Map, Value};

use crate::conformance_common::conformance_dir;
use crate::serve_common;
use serve_common::*;

fn pass() -> String {
    json!({
        "Type": "Pass",
        "InputPath": "$.a",
        "Parameters": {"b.$": "$.b"},
        "ResultPath": "$.r",
        "Next": "After"
    })
    .to_string()
}

#[tokio::test]
async fn a_debug_answer_carries_each_step_as_json_text() {
    let s = server(None);
    let answer = ok(
        &s,
        "TestState",
        json!({"definition": pass(), "input": "{\"a\":{\"b\":1}}", "inspectionLevel": "DEBUG"}),
    )
    .await;
    assert_eq!(answer["status"], json!("SUCCEEDED"));
    assert_eq!(answer["nextState"], json!("After"));
    assert_eq!(answer["output"], json!("{\"a\":{\"b\":1},\"r\":{\"b\":1}}"));
    let data = &answer["inspectionData"];
    assert_eq!(data["input"], json!("{\"a\":{\"b\":1}}"));
    assert_eq!(data["afterInputPath"], json!("{\"b\":1}"));
    assert_eq!(data["afterParameters"], json!("{\"b\":1}"));
    assert_eq!(
        data["afterResultPath"],
        json!("{\"a\":{\"b\":1},\"r\":{\"b\":1}}")
    );
    assert!(answer.get("error").is_none());
}

#[tokio::test]
async fn info_leaves_the_inspection_data_out_and_a_mocked_error_is_caught() {
    let s = server(None);
    let task = json!({
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke",
        "Catch": [{"ErrorEquals": ["Mock.Error"], "Next": "Handle"}],
        "End": true
    })
    .to_string();
    let answer = ok(
        &s,
        "TestState",
        json!({
            "definition": task,
            "roleArn": "arn:aws:iam::000000000000:role/r",
            "mock": {"errorOutput": {"error": "Mock.Error", "cause": "mocked"}}
        }),
    )
    .await;
    assert_eq!(
        answer,
        json!({
            "status": "CAUGHT_ERROR",
            "error": "Mock.Error",
            "cause": "mocked",
            "nextState": "Handle",
            "output": "{\"Error\":\"Mock.Error\",\"Cause\":\"mocked\"}"
        })
    );
}

#[tokio::test]
async fn refusals_carry_aws_names_and_words() {
    let s = server(None);
    let mocked_pass = refused(
        &s,
        "TestState",
        json!({"definition": pass(), "mock": {"result": "{}"}}),
        "ValidationException",
    )
    .await;
    assert_eq!(
        mocked_pass,
        "State type 'Pass' is not supported when a mock is specified"
    );
    let parallel = json!({"Type": "Parallel", "End": true, "Branches": [
        {"StartAt": "A", "States": {"A": {"Type": "Pass", "End": true}}}
    ]})
    .to_string();
    refused_each(
        &s,
        [
            (
                "TestState",
                json!({"definition": parallel}),
                "InvalidDefinition",
            ),
            (
                "TestState",
                json!({"definition": "{\"Type\": \"Nope\"}"}),
                "InvalidDefinition",
            ),
            (
                "TestState",
                json!({"definition": pass(), "input": "{"}),
                "InvalidExecutionInput",
            ),
            (
                "TestState",
                json!({"definition": pass(), "inspectionLevel": "LOUD"}),
                "ValidationException",
            ),
            (
                "TestState",
                json!({"definition": pass(), "stateName": "Nowhere"}),
                "InvalidDefinition",
            ),
            (
                "TestState",
                json!({"definition": pass(), "mock": {"result": "1", "errorOutput": {"error": "E"}}}),
                "ValidationException",
            ),
            ("TestState", json!({}), "ValidationException"),
        ],
    )
    .await;
    let (status, _) = call(&s, "TestState", json!({"definition": pass()})).await;
    assert_eq!(status, StatusCode::OK);
}

/// The template (and, for a whole machine, the state name) of a localstack test id whose
/// recorded answer `replays_recorded_answers` sends again, and its inspection level: the
/// single-state scenarios of every state type that takes no mock, and a whole machine's two
/// states.
fn replayed_template(test: &str) -> Option<(String, Option<String>, &'static str)> {
    let id = test.split('[').nth(1)?.trim_end_matches(']');
    for (prefix, level) in [
        ("test_base_inspection_level_info[", "INFO"),
        ("test_base_inspection_level_debug[", "DEBUG"),
        ("test_base_inspection_level_trace[", "TRACE"),
    ] {
        // BASE_MAP_STATE's INFO case has no answer recorded (a Map needs a mock).
        if test.contains(prefix) && !id.contains("MAP") {
            return Some((format!("{}.json5", id.to_lowercase()), None, level));
        }
    }
    if test.contains("test_base_state_name_multi_state[") {
        let (level, state) = id.split_once('-')?;
        let level = ["INFO", "DEBUG", "TRACE"]
            .into_iter()
            .find(|l| *l == level)?;
        return Some((
            "base_multi_state_machine.json5".to_string(),
            Some(state.to_string()),
            level,
        ));
    }
    None
}

/// The recorded answer's fields as statelog renders them: JSON values as text. The recorder
/// parsed each into JSON; the comparison is of values, so both are parsed.
fn parsed(answer: &Value) -> Value {
    let mut out = Map::new();
    for (key, value) in answer.as_object().into_iter().flatten() {
        match (key.as_str(), value) {
            ("ResponseMetadata", _) => {}
            ("inspectionData", Value::Object(data)) => {
                let data = data
                    .iter()
                    .map(|(k, v)| (k.clone(), reparse(v)))
                    .collect::<Map<_, _>>();
                out.insert(key.clone(), Value::Object(data));
            }
            ("output", v) => {
                out.insert(key.clone(), reparse(v));
            }
            (_, v) => {
                out.insert(key.clone(), v.clone());
            }
        }
    }
    Value::Object(out)
}

fn reparse(value: &Value) -> Value {
    match value {
        Value::String(text) => serde_json::from_str(text).unwrap_or_else(|_| value.clone()),
        other => other.clone(),
    }
}

#[tokio::test]
async fn replays_recorded_answers() {
    let root = conformance_dir().join("localstack");
    let recordings = root.join("v2/test_state");
    let templates = root.join("templates/test_state/statemachines");
    if !recordings.is_dir() {
        println!(
            "SKIP: no TestState recordings at {} (set STATELOG_CONFORMANCE_DIR)",
            recordings.display()
        );
        return;
    }
    let s = server(None);
    // (test, template, state name, level, recorded answer)
    let mut cases = Vec::new();
    for file in [
        "test_test_state_scenarios.snapshot.json",
        "test_test_state_machine_scenarios.snapshot.json",
    ] {
        let text = std::fs::read_to_string(recordings.join(file)).expect("read recordings");
        let recorded: Map<String, Value> = serde_json::from_str(&text).expect("recordings");
        for (test, content) in recorded {
            let Some((template, state_name, level)) = replayed_template(&test) else {
                continue;
            };
            let Some(expected) = content["recorded-content"].get("test_case_response") else {
                continue;
            };
            cases.push((test, template, state_name, level, expected.clone()));
        }
    }
    // An INFO answer does not show its input: the same template and state were tested with
    // the same input at DEBUG, which does.
    let mut inputs = std::collections::HashMap::new();
    for (_, template, state_name, _, expected) in &cases {
        if let Some(input) = expected["inspectionData"].get("input") {
            inputs.insert((template.clone(), state_name.clone()), input.clone());
        }
    }
    let mut checked = Vec::new();
    let mut failures = Vec::new();
    for (test, template, state_name, level, expected) in cases {
        let Some(input) = inputs.get(&(template.clone(), state_name.clone())) else {
            failures.push(format!("{test}: no recorded input"));
            continue;
        };
        let definition = read_json5(&templates.join(&template));
        let mut body = json!({
            "definition": definition.to_string(),
            "input": input.to_string(),
            "inspectionLevel": level,
        });
        if let Some(name) = &state_name {
            body["stateName"] = json!(name);
        }
        let answer = ok(&s, "TestState", body).await;
        let (ours, theirs) = (parsed(&answer), parsed(&expected));
        if ours != theirs {
            failures.push(format!("{test}:\n  ours   {ours}\n  theirs {theirs}"));
        }
        checked.push(test);
    }
    println!(
        "TestState recordings replayed: {} passed, {} failed",
        checked.len() - failures.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // 7 state types and a whole machine's two states, each at INFO, DEBUG and TRACE.
    assert_eq!(checked.len(), 27, "{checked:?}");
}

fn read_json5(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    json5::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
