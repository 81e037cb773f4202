//! Conformance of definitions and Choice rules against what real AWS did.
//!
//! Scenario: the recordings in the shared conformance corpus (`STATELOG_CONFORMANCE_DIR`, default
//! `../shared/conformance` next to the repository) came from AWS Step Functions. Every template a
//! recorded execution ran must validate here, or be refused only as "not supported yet"; the
//! templates AWS refused must be refused; the Choice operator cases must pick the recorded
//! branch; and every Choice state in a recorded history must go where AWS went. Nothing is
//! copied from the corpus into the repository: it is read at test time, and when it is absent
//! each test prints why it skipped and passes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path as FsPath, PathBuf};

use serde_json::{json, Value};
use statelog::asl::{
    parse_definition, Branch, DiagnosticCode, MachineType, State, StateKind, StateMachine,
    StateMap, ValidationOptions,
};

fn conformance_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("STATELOG_CONFORMANCE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../shared/conformance"
            ))
        });
    if dir.join("manifest.json").is_file() {
        Some(dir)
    } else {
        println!(
            "SKIP: no conformance corpus at {} (set STATELOG_CONFORMANCE_DIR)",
            dir.display()
        );
        None
    }
}

/// True when the `paths` module parses paths (its stubs refuse everything until it lands, and
/// then no definition with a path can validate: such a run says so and checks nothing).
fn paths_available() -> bool {
    let ok = statelog::paths::Path::parse("$.a").is_ok();
    if !ok {
        println!("SKIP: paths::Path::parse is not implemented on this branch yet");
    }
    ok
}

fn read_json(path: &FsPath) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn read_json5(path: &FsPath) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    json5::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Applies manifest `definition_patches` (`{"op": "set", "path": "/States/X/F", "value": v}`).
fn apply_patches(mut definition: Value, patches: &[Value]) -> Value {
    for patch in patches {
        let (Some("set"), Some(path), Some(value)) = (
            patch["op"].as_str(),
            patch["path"].as_str(),
            patch.get("value"),
        ) else {
            panic!("unknown patch {patch}");
        };
        let (parent, key) = path.rsplit_once('/').expect("patch paths are pointers");
        let target = definition
            .pointer_mut(parent)
            .unwrap_or_else(|| panic!("patch target {parent}"));
        target[key] = value.clone();
    }
    definition
}

fn list_templates(dir: &FsPath) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.join("localstack/templates")];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "json5")
                && p.components().any(|c| c.as_os_str() == "statemachines")
            {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Templates AWS refused at creation or validation (from the recorded `InvalidDefinition` and
/// `ValidateStateMachineDefinition` responses).
const REFUSED_BY_AWS: &[&str] = &[
    "localstack/templates/validation/statemachines/invalid_base_no_startat.json5",
    "localstack/templates/validation/statemachines/invalid_downgrade_query_language.json5",
    "localstack/templates/base/statemachines/invalid_der.json5",
    "localstack/templates/test_state/statemachines/base_invalid_state_definition.json5",
    "localstack/templates/credentials/statemachines/invalid_credentials_field.json5",
];

/// Needs that mean the template text is not what AWS ran (a test filled placeholders in).
const PLACEHOLDER_NEEDS: &[&str] = &["patched-definition", "resource-placeholder"];

#[derive(Default)]
struct Tally {
    valid: usize,
    unsupported_only: usize,
    rejected: Vec<(String, Vec<String>)>,
}

/// Templates AWS ran that must validate here (with the engine's JSONata evaluator); raise it
/// when more do, never lower it.
const VALID_FLOOR: usize = 264;

/// Parses `definition` as the engine does (with its JSONata evaluator) and counts the verdict.
fn classify(definition: &Value, tally: &mut Tally, label: &str) {
    match parse_definition(
        &definition.to_string(),
        &statelog::engine::validate::options(),
    ) {
        Ok(_) => tally.valid += 1,
        Err(d)
            if d.iter()
                .all(|d| d.code == DiagnosticCode::UnsupportedFeature) =>
        {
            tally.unsupported_only += 1
        }
        Err(d) => tally.rejected.push((
            label.to_string(),
            d.iter()
                .filter(|d| !d.is_unsupported())
                .map(|d| d.to_string())
                .collect(),
        )),
    }
}

#[test]
fn accepted_templates_validate_and_refused_ones_are_refused() {
    let Some(dir) = conformance_dir() else { return };
    if !paths_available() {
        return;
    }
    let manifest = read_json(&dir.join("manifest.json"));
    let cases = manifest["cases"].as_array().expect("manifest cases");

    // Every distinct (template, patches) pair a recorded execution ran, whose text is exact.
    let mut ran: BTreeMap<String, Value> = BTreeMap::new();
    let mut placeholder_templates = BTreeSet::new();
    for case in cases {
        let template = case["template"].as_str().expect("template").to_string();
        let needs: Vec<&str> = case["needs"]
            .as_array()
            .expect("needs")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        if needs.iter().any(|n| PLACEHOLDER_NEEDS.contains(n)) {
            placeholder_templates.insert(template);
            continue;
        }
        let patches = case["definition_patches"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let key = format!("{template} {}", Value::Array(patches.clone()));
        ran.entry(key)
            .or_insert_with(|| apply_patches(read_json5(&dir.join(&template)), &patches));
    }
    let mut accepted = Tally::default();
    for (label, definition) in &ran {
        classify(definition, &mut accepted, label);
    }
    println!(
        "templates run by AWS (exact text): {} -> {} valid, {} refused only as not supported, {} rejected",
        ran.len(),
        accepted.valid,
        accepted.unsupported_only,
        accepted.rejected.len()
    );
    for (label, problems) in &accepted.rejected {
        println!("  REJECTED {label}");
        for p in problems.iter().take(8) {
            println!("    {p}");
        }
    }

    // Every template file, for the record (some hold placeholders a test fills in).
    let all = list_templates(&dir);
    let mut everything = Tally::default();
    for path in &all {
        let rel = path
            .strip_prefix(&dir)
            .unwrap_or(path)
            .display()
            .to_string();
        match json5::from_str::<Value>(&std::fs::read_to_string(path).expect("read")) {
            Ok(def) => classify(&def, &mut everything, &rel),
            Err(e) => everything.rejected.push((rel, vec![format!("json5: {e}")])),
        }
    }
    println!(
        "all template files: {} -> {} valid, {} not supported only, {} rejected ({} of the templates carry test placeholders)",
        all.len(),
        everything.valid,
        everything.unsupported_only,
        everything.rejected.len(),
        placeholder_templates.len()
    );

    // What AWS refused must be refused.
    let mut refused_ok = 0;
    for rel in REFUSED_BY_AWS {
        let def = read_json5(&dir.join(rel));
        let outcome = parse_definition(&def.to_string(), &ValidationOptions::default());
        assert!(
            outcome.is_err(),
            "{rel} was refused by AWS but validates here"
        );
        refused_ok += 1;
    }
    println!(
        "templates AWS refused: {refused_ok}/{} refused here too",
        REFUSED_BY_AWS.len()
    );

    assert!(
        accepted.valid >= VALID_FLOOR,
        "{} templates AWS ran validate, below the floor of {VALID_FLOOR}",
        accepted.valid
    );
    assert!(
        accepted.rejected.is_empty(),
        "{} templates AWS ran are rejected here (first 10): {:?}",
        accepted.rejected.len(),
        accepted
            .rejected
            .iter()
            .take(10)
            .map(|(l, _)| l)
            .collect::<Vec<_>>()
    );
}

/// The operator name a choice-operator test exercises (`test_numeric_less_than_path` ->
/// `NumericLessThanPath`).
fn operator_of(test_name: &str) -> String {
    test_name
        .trim_start_matches("test_")
        .split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

fn choice_machine(operator: &str, value: &Value) -> Value {
    let operand = if operator.ends_with("Path") {
        json!("$.Value")
    } else {
        value.clone()
    };
    json!({
        "StartAt": "CheckValues",
        "States": {
            "CheckValues": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.Variable", operator: operand, "Next": "ConditionTrue"}],
                "Default": "ConditionFalse"
            },
            "ConditionTrue": {"Type": "Succeed"},
            "ConditionFalse": {"Type": "Succeed"}
        }
    })
}

fn contains_date_placeholder(v: &Value) -> bool {
    match v {
        Value::String(s) => s == "date",
        Value::Array(a) => a.iter().any(contains_date_placeholder),
        Value::Object(o) => o.values().any(contains_date_placeholder),
        _ => false,
    }
}

/// The most choice-operator cases known to pass; the test fails if fewer do.
const CHOICE_OPERATOR_PASS_FLOOR: usize = 455;

#[test]
fn choice_operator_cases_pick_the_recorded_branch() {
    let Some(dir) = conformance_dir() else { return };
    if !paths_available() {
        return;
    }
    let folder = dir.join("localstack/v2/choice_operators");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
        .expect("choice_operators")
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    let (mut passed, mut failed, mut skipped) = (0usize, Vec::new(), 0usize);
    for file in files {
        let snapshot = read_json(&file);
        for (test_id, test) in snapshot.as_object().expect("snapshot object") {
            let name = test_id.rsplit("::").next().expect("test name");
            let operator = operator_of(name);
            for case in test["recorded-content"]["cases"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let input = &case["input"];
                // The recorder replaced ISO timestamps by "date": such cases cannot be replayed.
                if operator.starts_with("Timestamp") && contains_date_placeholder(input) {
                    skipped += 1;
                    continue;
                }
                let expected = case["output"]["TestResult.$"]
                    .as_str()
                    .expect("recorded result");
                let definition = choice_machine(&operator, &input["Value"]);
                let outcome =
                    parse_definition(&definition.to_string(), &ValidationOptions::default())
                        .map_err(|d| {
                            d.iter()
                                .map(|d| d.to_string())
                                .collect::<Vec<_>>()
                                .join("; ")
                        })
                        .and_then(|machine| pick(&machine, "CheckValues", input));
                match outcome {
                    Ok(next) if next == expected => passed += 1,
                    other => {
                        failed.push(format!("{operator} {input} -> {other:?}, AWS: {expected}"))
                    }
                }
            }
        }
    }
    println!(
        "choice operator cases: {passed} passed, {} failed, {skipped} skipped (timestamp placeholders)",
        failed.len()
    );
    for f in failed.iter().take(20) {
        println!("  FAIL {f}");
    }
    assert!(
        passed >= CHOICE_OPERATOR_PASS_FLOOR,
        "only {passed} choice operator cases pass"
    );
}

/// Finds a state by name in the machine or any nested branch.
fn find_state<'a>(states: &'a StateMap, name: &str) -> Option<&'a State> {
    if let Some(s) = states.get(name) {
        return Some(s);
    }
    states.iter().find_map(|s| {
        let branches: Vec<&Branch> = match &s.kind {
            StateKind::Parallel(p) => p.branches.iter().collect(),
            StateKind::Map(m) => vec![&m.item_processor],
            _ => Vec::new(),
        };
        branches
            .into_iter()
            .find_map(|b| find_state(&b.states, name))
    })
}

/// Evaluates the Choice state `name` on its raw input (applies `InputPath` first).
fn pick(machine: &StateMachine, name: &str, raw_input: &Value) -> Result<String, String> {
    let state = find_state(&machine.states, name).ok_or_else(|| format!("no state {name}"))?;
    let StateKind::Choice(choice) = &state.kind else {
        return Err(format!("{name} is not a Choice"));
    };
    let context = json!({});
    let effective = state
        .data_flow
        .effective_input(raw_input, &context, &statelog::paths::NO_VARIABLES)
        .map_err(|e| format!("{}: {}", e.error, e.cause))?;
    choice
        .pick(&effective, &context)
        .map(str::to_string)
        .map_err(|e| format!("{}: {}", e.error, e.cause))
}

/// A recorded payload: objects were stored parsed, anything else as its JSON text.
fn recorded_payload(v: &Value) -> Option<Value> {
    match v {
        Value::String(text) => serde_json::from_str(text).ok(),
        other => Some(other.clone()),
    }
}

/// The most recorded Choice transitions known to be reproduced; the test fails if fewer are.
const CHOICE_HISTORY_PASS_FLOOR: usize = 17;

#[test]
fn choice_states_in_recorded_histories_go_where_aws_went() {
    let Some(dir) = conformance_dir() else { return };
    if !paths_available() {
        return;
    }
    let manifest = read_json(&dir.join("manifest.json"));
    let mut snapshots: BTreeMap<String, Value> = BTreeMap::new();
    let (mut passed, mut failed, mut skipped) = (0usize, Vec::new(), 0usize);
    for case in manifest["cases"].as_array().expect("cases") {
        let needs: Vec<&str> = case["needs"]
            .as_array()
            .expect("needs")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        if case["parallel_multiset"] == json!(true)
            || needs
                .iter()
                .any(|n| PLACEHOLDER_NEEDS.contains(n) || *n == "input-placeholders")
        {
            continue;
        }
        let file = case["expected_history"]["file"].as_str().expect("file");
        let pointer = case["expected_history"]["pointer"]
            .as_str()
            .expect("pointer");
        let snapshot = snapshots
            .entry(file.to_string())
            .or_insert_with(|| read_json(&dir.join(file)));
        let Some(events) = snapshot.pointer(pointer).and_then(Value::as_array) else {
            continue;
        };
        if !events.iter().any(|e| e["type"] == "ChoiceStateEntered") {
            continue;
        }
        let template = case["template"].as_str().expect("template");
        let patches = case["definition_patches"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let definition = apply_patches(read_json5(&dir.join(template)), &patches);
        let machine = match parse_definition(&definition.to_string(), &ValidationOptions::default())
        {
            Ok(m) => m,
            Err(_) => {
                skipped += 1;
                continue;
            }
        };
        for (i, event) in events.iter().enumerate() {
            if event["type"] != "ChoiceStateEntered" {
                continue;
            }
            let details = &event["stateEnteredEventDetails"];
            let name = details["name"].as_str().unwrap_or_default();
            let next_entered = events[i + 1..].iter().find(|e| {
                e["type"]
                    .as_str()
                    .is_some_and(|t| t.ends_with("StateEntered"))
            });
            let failed_after = events[i + 1..]
                .iter()
                .take_while(|e| e["type"] != "ChoiceStateExited")
                .any(|e| e["type"] == "ExecutionFailed");
            let expected = match (next_entered, failed_after) {
                (_, true) => "<failed>".to_string(),
                (Some(e), false) => e["stateEnteredEventDetails"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                (None, false) => {
                    skipped += 1;
                    continue;
                }
            };
            let Some(input) = recorded_payload(&details["input"]) else {
                skipped += 1;
                continue;
            };
            let got = pick(&machine, name, &input).unwrap_or_else(|_| "<failed>".to_string());
            if got == expected {
                passed += 1;
            } else {
                failed.push(format!(
                    "{} :: {name} on {input}: picked {got}, AWS went to {expected}",
                    case["id"]
                ));
            }
        }
    }
    println!(
        "recorded Choice transitions: {passed} reproduced, {} differ, {skipped} skipped (template refused as not supported, or no recorded successor)",
        failed.len()
    );
    for f in failed.iter().take(20) {
        println!("  DIFF {f}");
    }
    assert!(
        passed >= CHOICE_HISTORY_PASS_FLOOR,
        "only {passed} recorded Choice transitions reproduced"
    );
}

/// The definition text each `test_sfn_api_validation` parameter id stands for.
fn validation_input(dir: &FsPath, id: &str) -> Option<String> {
    let template = |name: &str| {
        read_json5(&dir.join(format!(
            "localstack/templates/validation/statemachines/{name}.json5"
        )))
        .to_string()
    };
    Some(match id {
        "EMPTY_STRING" => String::new(),
        "NOT_A_DEF" => "not a definition".to_string(),
        "EMPTY_DICT" => "{}".to_string(),
        "VALID_BASE_PASS" => template("valid_base_pass"),
        "INVALID_BASE_NO_STARTAT" => template("invalid_base_no_startat"),
        "VALID_QUERY_LANGUAGE_PASS" => template("valid_query_language_pass"),
        "INVALID_DOWNGRADE_QUERY_LANGUAGE" => template("invalid_downgrade_query_language"),
        "ILLEGAL_WFTT" => read_json5(
            &dir.join("localstack/templates/callbacks/statemachines/sqs_wait_for_task_token.json5"),
        )
        .to_string(),
        _ => return None,
    })
}

#[test]
fn validate_api_recordings_give_the_same_verdict_and_diagnostic() {
    let Some(dir) = conformance_dir() else { return };
    let snapshot = read_json(&dir.join("localstack/v2/test_sfn_api_validation.snapshot.json"));
    let (mut matched, mut skipped) = (0usize, Vec::new());
    for (test_id, test) in snapshot.as_object().expect("snapshot") {
        let Some(param) = test_id
            .rsplit_once('[')
            .and_then(|(_, p)| p.strip_suffix(']'))
        else {
            continue;
        };
        let Some(text) = validation_input(&dir, param) else {
            skipped.push(param.to_string());
            continue;
        };
        let response = &test["recorded-content"]["validation_response"];
        let options = ValidationOptions {
            machine_type: if test_id.contains("type_express") {
                MachineType::Express
            } else {
                MachineType::Standard
            },
            ..ValidationOptions::default()
        };
        let outcome = parse_definition(&text, &options);
        match (response["result"].as_str(), outcome) {
            (Some("OK"), Ok(_)) => matched += 1,
            (Some("OK"), Err(d)) => {
                assert!(
                    d.iter().all(|d| d.is_unsupported()),
                    "{param}: AWS accepts, we reject: {d:?}"
                );
                matched += 1;
            }
            (Some("FAIL"), Ok(_)) => panic!("{param}: AWS rejects, we accept"),
            (Some("FAIL"), Err(ours)) => {
                let theirs = &response["diagnostics"][0];
                let code = theirs["code"].as_str().expect("code");
                let location = theirs["location"].as_str();
                let message = theirs["message"].as_str().expect("message");
                let found = ours.iter().any(|d| {
                    d.code.as_str() == code
                        && (code == "INVALID_JSON_DESCRIPTION"
                            || (location.map_or(true, |l| l == d.path) && d.message == message))
                });
                assert!(found, "{param}: AWS says {theirs}, we say {ours:?}");
                matched += 1;
            }
            (other, _) => panic!("{param}: unexpected recorded result {other:?}"),
        }
    }
    println!("ValidateStateMachineDefinition recordings: {matched} matched, skipped {skipped:?}");
    assert!(
        matched >= 11,
        "only {matched} validation recordings matched"
    );
}
