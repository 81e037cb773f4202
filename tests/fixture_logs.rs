//! Backward compatibility: every data directory under `tests/fixtures/logs/`, written by an
//! older build (`tests/fixtures/make-logs.sh`), opens with this build and shows what the older
//! build saw (its `expected.json`): statuses and event types per execution, machines with their
//! revision and tags, activities with tags, expired executions gone. Then the open executions
//! still work: the waiting task answers its recorded token, the queued activity task is handed
//! to a worker, a repeated redrive client token answers the first redrive, and the log takes new
//! appends and a compaction and reopens. `statelog wal verify`, `wal dump` and `history` read a
//! pristine copy. The checked-in files are never opened for writing: each check runs on a copy.

mod engine_common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use engine_common::block_on;
use serde_json::Value;
use statelog::clock::ManualClock;
use statelog::engine::{Engine, EngineOptions, Error, ExecutionStatus, HistoryQuery, Tag};

const BIN: &str = env!("CARGO_BIN_EXE_statelog");
const DAY_MS: u64 = 24 * 60 * 60 * 1000;

fn fixtures_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/logs")
}

/// The fixture directories, sorted by name.
fn fixtures() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(fixtures_root())
        .expect("lists the fixtures")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// Copies the fixture's `data/` into a new temporary directory.
fn copy_data(fixture: &Path) -> tempfile::TempDir {
    let copy = tempfile::tempdir().expect("temp dir");
    for entry in std::fs::read_dir(fixture.join("data")).expect("lists data") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), copy.path().join(entry.file_name())).expect("copies");
    }
    copy
}

fn open(dir: &Path, clock: &ManualClock, expected: &Value) -> Engine {
    let options = EngineOptions {
        clock: Arc::new(clock.clone()),
        background_timers: false,
        entropy_seed: Some(number(expected, "entropy_seed")),
        segment_size_bytes: number(expected, "segment_size_bytes"),
        retention_ms: number(expected, "retention_ms"),
        compaction_interval_ms: 0,
        ..EngineOptions::default()
    };
    Engine::open(dir, options).expect("the fixture opens")
}

fn number(value: &Value, key: &str) -> u64 {
    value[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} in expected.json"))
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} in expected.json"))
}

fn event_types(engine: &Engine, arn: &str) -> Vec<Value> {
    let query = HistoryQuery {
        max_results: 1000,
        ..HistoryQuery::default()
    };
    let history = engine
        .get_execution_history(arn, &query)
        .expect("history")
        .to_aws_json();
    history["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|event| event["type"].clone())
        .collect()
}

fn tags_json(tags: &[Tag]) -> Value {
    let mut tags = tags.to_vec();
    tags.sort();
    tags.iter()
        .map(|t| serde_json::json!({"key": t.key, "value": t.value}))
        .collect()
}

fn statelog(args: &[&str], dir: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .arg(dir)
        .output()
        .expect("runs statelog")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn every_fixture_opens_and_shows_what_its_build_wrote() {
    if !fixtures_root().is_dir() {
        println!(
            "skip: {} is missing (run tests/fixtures/make-logs.sh)",
            fixtures_root().display()
        );
        return;
    }
    let fixtures = fixtures();
    assert!(
        !fixtures.is_empty(),
        "no fixture under {:?}",
        fixtures_root()
    );
    for fixture in &fixtures {
        println!("fixture {}", fixture.display());
        check_cli(fixture);
        check_engine(fixture);
    }
}

fn read_expected(fixture: &Path) -> Value {
    let text = std::fs::read_to_string(fixture.join("expected.json")).expect("expected.json");
    serde_json::from_str(&text).expect("expected.json parses")
}

/// `wal verify`, `wal dump` and `history` on a pristine copy.
fn check_cli(fixture: &Path) {
    let expected = read_expected(fixture);
    let pristine = copy_data(fixture);
    let verify = statelog(&["wal", "verify"], pristine.path());
    assert_eq!(
        verify.status.code(),
        Some(0),
        "{fixture:?}: wal verify: {}{}",
        String::from_utf8_lossy(&verify.stdout),
        stderr(&verify)
    );
    let dump = statelog(&["wal", "dump"], pristine.path());
    assert!(
        dump.status.success(),
        "{fixture:?}: wal dump: {}",
        stderr(&dump)
    );
    assert!(
        !dump.stdout.is_empty(),
        "{fixture:?}: wal dump printed nothing"
    );
    let dump_json = statelog(&["wal", "dump", "--json"], pristine.path());
    assert!(
        dump_json.status.success(),
        "{fixture:?}: wal dump --json: {}",
        stderr(&dump_json)
    );
    for line in String::from_utf8_lossy(&dump_json.stdout).lines() {
        serde_json::from_str::<Value>(line)
            .unwrap_or_else(|e| panic!("{fixture:?}: wal dump --json line {line:?}: {e}"));
    }
    // `history` runs on the wall clock with the default retention, so only an open execution
    // (never expired) is stable across the years: the waiting one.
    let waiting_arn = text(&expected["waiting"], "execution_arn");
    let history = Command::new(BIN)
        .args(["history", waiting_arn, "--json", "--data-dir"])
        .arg(pristine.path())
        .output()
        .expect("runs statelog history");
    assert!(
        history.status.success(),
        "{fixture:?}: history: {}",
        stderr(&history)
    );
    assert!(
        stderr(&history).is_empty(),
        "{fixture:?}: history reports damage: {}",
        stderr(&history)
    );
    let parsed: Value = serde_json::from_slice(&history.stdout).expect("history --json");
    let types: Vec<Value> = parsed["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|event| event["type"].clone())
        .collect();
    let recorded = expected["executions"]
        .as_array()
        .expect("executions")
        .iter()
        .find(|e| e["arn"] == waiting_arn)
        .expect("the waiting execution is listed");
    assert_eq!(Value::from(types), recorded["event_types"], "{fixture:?}");
    // Reading changed nothing: the copy verifies the same way again.
    let again = statelog(&["wal", "verify"], pristine.path());
    assert_eq!(
        again.status.code(),
        Some(0),
        "{fixture:?}: {}",
        stderr(&again)
    );
}

fn check_engine(fixture: &Path) {
    let expected = read_expected(fixture);
    let copy = copy_data(fixture);
    let clock = ManualClock::new(number(&expected, "now_ms"));
    let engine = open(copy.path(), &clock, &expected);
    assert!(
        engine.damaged_executions().is_empty(),
        "{fixture:?}: {:?}",
        engine.damaged_executions()
    );

    for recorded in expected["executions"].as_array().expect("executions") {
        let arn = text(recorded, "arn");
        let description = engine
            .describe_execution(arn)
            .unwrap_or_else(|e| panic!("{fixture:?}: {arn}: {e}"));
        assert_eq!(
            description.status.aws_name(),
            text(recorded, "status"),
            "{arn}"
        );
        assert_eq!(
            u64::from(description.event_count),
            number(recorded, "event_count"),
            "{arn}"
        );
        assert_eq!(
            Value::from(description.output_text),
            recorded["output"],
            "{arn}"
        );
        assert_eq!(Value::from(description.error), recorded["error"], "{arn}");
        assert_eq!(Value::from(description.cause), recorded["cause"], "{arn}");
        assert_eq!(
            u64::from(description.redrive.redrive_count),
            number(recorded, "redrive_count"),
            "{arn}"
        );
        assert_eq!(
            Value::from(event_types(&engine, arn)),
            recorded["event_types"],
            "{fixture:?}: {arn}"
        );
    }
    for arn in expected["expired_executions"].as_array().expect("expired") {
        let arn = arn.as_str().expect("arn");
        assert!(
            matches!(
                engine.describe_execution(arn),
                Err(Error::ExecutionDoesNotExist { .. })
            ),
            "{fixture:?}: {arn} expired before the fixture was written"
        );
    }
    check_catalog(fixture, &engine, &expected);

    // The same redrive client token answers the first redrive, also under this build.
    let redrive = &expected["redrive"];
    let outcome = engine
        .redrive_execution(
            text(redrive, "execution_arn"),
            Some(text(redrive, "client_token")),
        )
        .expect("a repeated client token answers");
    assert_eq!(outcome.redrive_ms, number(redrive, "redrive_ms"));
    assert_eq!(
        u64::from(outcome.redrive_count),
        number(redrive, "redrive_count")
    );

    // The waiting task answers the token the older build handed out.
    let waiting = &expected["waiting"];
    let waiting_arn = text(waiting, "execution_arn");
    let token_file = std::fs::read_to_string(fixture.join("token.txt")).expect("token.txt");
    assert_eq!(token_file.trim(), text(waiting, "token"));
    engine
        .send_task_success(text(waiting, "token"), r#"{"answered":true}"#)
        .expect("the recorded token answers");
    engine.wait_idle();
    let answered = engine.describe_execution(waiting_arn).expect("describes");
    assert_eq!(answered.status, ExecutionStatus::Succeeded, "{fixture:?}");

    // The queued activity task goes to a worker, whose answer closes the execution.
    let queued = &expected["queued_activity"];
    let task = block_on(engine.get_activity_task(text(queued, "activity_arn"), Some("fixture")))
        .expect("polls")
        .expect("the queued task is handed out");
    assert_eq!(task.execution_arn, text(queued, "execution_arn"));
    let input: Value = serde_json::from_str(&task.input).expect("task input");
    assert_eq!(input, serde_json::json!({"job": 7}));
    engine
        .send_task_success(&task.task_token, r#"{"done":true}"#)
        .expect("the activity token answers");
    engine.wait_idle();
    let worked = engine
        .describe_execution(&task.execution_arn)
        .expect("describes");
    assert_eq!(worked.status, ExecutionStatus::Succeeded, "{fixture:?}");

    // New work appends to the old log; a restart shows it; compaction runs over old segments.
    let fresh = engine
        .start_execution("flow", Some("after-upgrade"), r#"{"go":true}"#)
        .expect("starts on the old log")
        .execution_arn;
    engine.wait_idle();
    let waiting_types = event_types(&engine, waiting_arn);
    drop(engine);
    let engine = open(copy.path(), &clock, &expected);
    assert_eq!(event_types(&engine, waiting_arn), waiting_types);
    assert_eq!(
        engine.describe_execution(&fresh).expect("describes").status,
        ExecutionStatus::Succeeded
    );
    clock.advance_ms(number(&expected, "retention_ms") + DAY_MS);
    engine.compact().expect("compacts the old log");
    drop(engine);
    let engine = open(copy.path(), &clock, &expected);
    assert!(matches!(
        engine.describe_execution(waiting_arn),
        Err(Error::ExecutionDoesNotExist { .. })
    ));
    check_catalog(fixture, &engine, &expected);
    drop(engine);
    let verify = statelog(&["wal", "verify"], copy.path());
    assert_eq!(
        verify.status.code(),
        Some(0),
        "{fixture:?}: wal verify after upgrade work: {}",
        stderr(&verify)
    );
}

/// Machines (definition, revision, tags) and activities (tags) as the older build listed them.
fn check_catalog(fixture: &Path, engine: &Engine, expected: &Value) {
    let machines: Vec<Value> = engine
        .list_state_machines()
        .iter()
        .map(|m| {
            let tags = engine
                .list_tags_for_resource(&m.state_machine_arn)
                .expect("machine tags");
            serde_json::json!({
                "arn": m.state_machine_arn,
                "name": m.name,
                "definition": m.definition,
                "revision_id": m.revision_id,
                "tags": tags_json(&tags),
            })
        })
        .collect();
    assert_eq!(Value::from(machines), expected["machines"], "{fixture:?}");
    for machine in expected["machines"].as_array().expect("machines") {
        let described = engine
            .describe_state_machine(text(machine, "arn"))
            .expect("describes the machine");
        assert_eq!(described.definition, text(machine, "definition"));
    }
    let activities: Vec<Value> = engine
        .list_activities()
        .iter()
        .map(|a| {
            let tags = engine
                .list_tags_for_resource(&a.activity_arn)
                .expect("activity tags");
            serde_json::json!({"arn": a.activity_arn, "name": a.name, "tags": tags_json(&tags)})
        })
        .collect();
    assert_eq!(
        Value::from(activities),
        expected["activities"],
        "{fixture:?}"
    );
}
