//! Backward compatibility: every data directory under `tests/fixtures/logs/`, written by an
//! older build (`tests/fixtures/make-logs.sh`), opens with this build and shows what the older
//! build saw (its `expected.json`): statuses and event types per execution, machines with their
//! revision and tags, activities with tags, expired executions gone. Then the open executions
//! still work: the waiting task answers its recorded token, the queued activity task is handed
//! to a worker, a repeated redrive client token answers the first redrive, and the log takes new
//! appends and a compaction and reopens. `statelog wal verify`, `wal dump` and `history` read a
//! pristine copy. The checked-in files are never opened for writing: each check runs on a copy.
//!
//! A fixture written by `examples/fixture_writer_full.rs` (its `expected.json` has a `full`
//! section) also leaves executions open in every way the engine waits: after reopening, a
//! claimed activity task takes a heartbeat, an embedder's `.sync` job takes its pushed outcome,
//! and when the manual clock moves the Wait timers, the task timeout, the retry backoff, the
//! heartbeat clock and a `.sync` child fire and every one of them closes as expected. Its
//! deleted machine and activity stay deleted. One written by `examples/fixture_writer_map_run.rs`
//! (a `map_run` section) shows its Distributed Map's children naming their Map Run.
//!
//! `fixtures_cover_every_event_type` and `fixtures_cover_every_record_variant` hold the corpus
//! to its promise: every history event type the engine can produce, and every machine and
//! catalog record variant, is in some fixture (`NOT_PRODUCIBLE` names the event types the
//! engine cannot produce today, and why; `tests/fixtures/README.md` lists the same).

use crate::engine_common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use base64::Engine as _;
use engine_common::block_on;
use serde_json::{json, Value};
use statelog::asl::IntegrationPattern;
use statelog::clock::ManualClock;
use statelog::engine::{
    Engine, EngineOptions, Error, ExecutionStatus, HistoryQuery, Job, JobFuture, JobIntegration,
    JobKey, JobStart, JobStatus, Tag, TaskError,
};
use statelog::history::EventDetails;

const BIN: &str = env!("CARGO_BIN_EXE_statelog");
const DAY_MS: u64 = 24 * 60 * 60 * 1000;

/// The history event types the engine cannot produce today, each with the reason (nothing in
/// `src/` constructs them; they exist for the AWS JSON shape). `tests/fixtures/README.md`
/// lists the same. When the engine learns one, move it out of here and into a fixture.
const NOT_PRODUCIBLE: &[(&str, &str)] = &[
    (
        "ActivityScheduleFailed",
        "a task of an unknown or deleted activity still queues in its task list",
    ),
    (
        "LambdaFunctionFailed",
        "the legacy Lambda events: a Lambda ARN resource runs as a Task (Task* events)",
    ),
    (
        "LambdaFunctionScheduleFailed",
        "the legacy Lambda events: a Lambda ARN resource runs as a Task (Task* events)",
    ),
    (
        "LambdaFunctionScheduled",
        "the legacy Lambda events: a Lambda ARN resource runs as a Task (Task* events)",
    ),
    (
        "LambdaFunctionStartFailed",
        "the legacy Lambda events: a Lambda ARN resource runs as a Task (Task* events)",
    ),
    (
        "LambdaFunctionStarted",
        "the legacy Lambda events: a Lambda ARN resource runs as a Task (Task* events)",
    ),
    (
        "LambdaFunctionSucceeded",
        "the legacy Lambda events: a Lambda ARN resource runs as a Task (Task* events)",
    ),
    (
        "LambdaFunctionTimedOut",
        "the legacy Lambda events: a Lambda ARN resource runs as a Task (Task* events)",
    ),
    (
        "TaskStartFailed",
        "a handler that fails records TaskFailed; a resource with no handler waits for one",
    ),
    (
        "TaskSubmitFailed",
        "a .waitForTaskToken or .sync start that fails records TaskFailed",
    ),
];

/// The machine record variants (`store::MachineRecord`), in wire order: the postcard variant
/// index after the format version byte.
const MACHINE_VARIANTS: &[&str] = &["Created", "Deleted", "Updated"];

/// The catalog record variants (`store::CatalogRecord`), in wire order (format 2 appended the
/// last four: versions and aliases).
const CATALOG_VARIANTS: &[&str] = &[
    "ActivityCreated",
    "ActivityDeleted",
    "TagsSet",
    "Redriven",
    "VersionPublished",
    "VersionDeleted",
    "AliasSet",
    "AliasDeleted",
];

/// The catalog format version that appended versions and aliases (same layout as version 1).
const CATALOG_FORMAT_VERSION_2: u8 = 2;

/// The SWF record variants (`store::swf::SwfRecord`), in wire order.
const SWF_VARIANTS: &[&str] = &[
    "DomainRegistered",
    "DomainDeprecated",
    "DomainUndeprecated",
    "DomainDeleted",
    "TypeRegistered",
    "TypeDeprecated",
    "TypeUndeprecated",
    "TypeDeleted",
    "TagsSet",
    "Events",
];

/// The machine and catalog format version whose layout is `[version, variant index, fields]`.
const RECORD_FORMAT_VERSION_1: u8 = 1;

/// `statelog_store::map_runs::MapRunRecord`'s variants in order (map run format 1).
const MAP_RUN_VARIANTS: &[&str] = &["Opened", "Updated", "ChildrenEnded"];

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
        if read_expected(fixture)["writer"] == "fixture_writer_swf" {
            check_swf(fixture);
            continue;
        }
        if read_expected(fixture)["writer"] == "fixture_writer_versions" {
            check_versions(fixture);
            continue;
        }
        if read_expected(fixture)["writer"] == "fixture_writer_maprun" {
            check_map_runs(fixture);
            continue;
        }
        check_cli(fixture);
        check_engine(fixture);
    }
}

/// An SWF fixture (`examples/fixture_writer_swf.rs`): the log verifies, the registry and every
/// run read back as the writer saw them (also through `statelog history RUN_ID --json`), and
/// the open run's started activity task still takes its token.
fn check_swf(fixture: &Path) {
    let expected = read_expected(fixture);
    let swf_expected = &expected["swf"];
    let pristine = copy_data(fixture);
    let verify = statelog(&["wal", "verify"], pristine.path());
    assert_eq!(
        verify.status.code(),
        Some(0),
        "{fixture:?}: {}",
        stderr(&verify)
    );
    let domain = text(swf_expected, "domain");
    for run in swf_expected["runs"].as_array().expect("runs") {
        let run_id = text(run, "run_id");
        let output = Command::new(BIN)
            .args(["history", run_id, "--json", "--data-dir"])
            .arg(pristine.path())
            .output()
            .expect("runs statelog history");
        assert!(
            output.status.success(),
            "{fixture:?}: history {run_id}: {}",
            stderr(&output)
        );
        let parsed: Value = serde_json::from_slice(&output.stdout).expect("history --json");
        let types: Vec<Value> = parsed["events"]
            .as_array()
            .expect("events")
            .iter()
            .map(|e| e["eventType"].clone())
            .collect();
        assert_eq!(
            Value::from(types),
            run["event_types"],
            "{fixture:?}: {run_id}"
        );
    }
    let copy = copy_data(fixture);
    let clock = ManualClock::new(number(&expected, "now_ms"));
    let options = EngineOptions {
        clock: Arc::new(clock.clone()),
        background_timers: false,
        segment_size_bytes: number(&expected, "segment_size_bytes"),
        compaction_interval_ms: 0,
        ..EngineOptions::default()
    };
    let engine = Engine::open(copy.path(), options).expect("the SWF fixture opens");
    assert!(engine.damaged_executions().is_empty(), "{fixture:?}");
    let swf = engine.swf();
    fn input<T: serde::de::DeserializeOwned>(value: Value) -> T {
        serde_json::from_value(value).expect("an API input")
    }
    let domains = swf
        .list_domains(&input(
            serde_json::json!({"registrationStatus": "REGISTERED"}),
        ))
        .expect("lists domains");
    let names: Vec<Value> = domains
        .domain_infos
        .iter()
        .map(|d| Value::from(d.name.clone()))
        .collect();
    assert_eq!(Value::from(names), swf_expected["domains"], "{fixture:?}");
    let activities = swf
        .list_activity_types(&input(serde_json::json!({
            "domain": domain, "registrationStatus": "REGISTERED"
        })))
        .expect("lists activity types");
    let versions: Vec<Value> = activities
        .type_infos
        .iter()
        .map(|t| Value::from(t.activity_type.version.clone()))
        .collect();
    assert_eq!(
        Value::from(versions),
        swf_expected["activity_versions"],
        "{fixture:?}"
    );
    let tags = swf
        .list_tags_for_resource(&input(
            serde_json::json!({"resourceArn": swf.domain_arn(domain)}),
        ))
        .expect("lists tags");
    assert_eq!(
        serde_json::to_value(&tags.tags).expect("json"),
        swf_expected["tags"]
    );
    for run in swf_expected["runs"].as_array().expect("runs") {
        let execution =
            serde_json::json!({"workflowId": run["workflow_id"], "runId": run["run_id"]});
        let detail = swf
            .describe_workflow_execution(&input(serde_json::json!({
                "domain": domain, "execution": execution
            })))
            .expect("describes");
        let status = match detail.execution_info.close_status {
            Some(close) => serde_json::to_value(close).expect("json"),
            None => Value::from("OPEN"),
        };
        assert_eq!(status, run["status"], "{fixture:?}: {execution}");
        let history = swf
            .get_workflow_execution_history(&input(serde_json::json!({
                "domain": domain, "execution": execution
            })))
            .expect("history");
        let types: Vec<Value> = history
            .events
            .iter()
            .map(|e| e["eventType"].clone())
            .collect();
        assert_eq!(
            Value::from(types),
            run["event_types"],
            "{fixture:?}: {execution}"
        );
    }
    let token = std::fs::read_to_string(fixture.join("token.txt")).expect("token.txt");
    swf.respond_activity_task_completed(&input(serde_json::json!({
        "taskToken": token.trim(), "result": "shipped"
    })))
    .expect("the open run's started activity takes its token");
}

/// A Map Run fixture (`examples/fixture_writer_maprun.rs`, map run format 1): the log
/// verifies (`statelog wal verify` reads every kind 5 record), the ended run is described
/// through its recorded parent and settings, and the open run resumes with its updated
/// MaxConcurrency, running only the items whose end was not recorded.
fn check_map_runs(fixture: &Path) {
    let expected = read_expected(fixture);
    let pristine = copy_data(fixture);
    let verify = statelog(&["wal", "verify"], pristine.path());
    assert_eq!(
        verify.status.code(),
        Some(0),
        "{fixture:?}: {}",
        stderr(&verify)
    );
    let copy = copy_data(fixture);
    let clock = ManualClock::new(number(&expected, "now_ms"));
    let engine = open(copy.path(), &clock, &expected);
    assert!(engine.damaged_executions().is_empty(), "{fixture:?}");
    let calls = Arc::new(std::sync::Mutex::new(Vec::new()));
    {
        let calls = calls.clone();
        engine.register_integration(
            text(&expected, "item_resource"),
            move |input: Value, _context: Value| {
                let n = input.as_u64().unwrap_or_default();
                calls.lock().expect("calls").push(n);
                async move { Ok::<Value, statelog::engine::TaskError>(json!(n * 10)) }
            },
        );
    }
    let fan = &expected["fan"];
    let described = engine
        .describe_map_run(text(fan, "map_run_arn"))
        .expect("the ended run is described");
    assert_eq!(described.execution_arn, text(fan, "execution_arn"));
    assert_eq!(described.status.aws_name(), text(fan, "status"));
    assert_eq!(described.max_concurrency, number(fan, "max_concurrency"));
    let held = &expected["held"];
    let described = engine
        .describe_map_run(text(held, "map_run_arn"))
        .expect("the open run is described");
    assert_eq!(described.execution_arn, text(held, "execution_arn"));
    assert_eq!(
        described.max_concurrency,
        number(held, "max_concurrency"),
        "the UpdateMapRun record"
    );
    let closed = engine
        .wait_until_closed(text(held, "execution_arn"))
        .expect("the open run resumes and ends");
    assert_eq!(closed.status.aws_name(), "SUCCEEDED", "{closed:?}");
    assert_eq!(closed.output.as_ref(), Some(&held["output"]));
    let recorded: Vec<u64> = held["recorded_items"]
        .as_array()
        .expect("recorded items")
        .iter()
        .map(|n| n.as_u64().expect("an index"))
        .collect();
    let mut rerun = calls.lock().expect("calls").clone();
    rerun.sort_unstable();
    assert!(
        rerun.iter().all(|n| !recorded.contains(n)),
        "a recorded item ran again: {rerun:?}"
    );
    assert_eq!(rerun, vec![2, 3], "{fixture:?}");
}

/// A versions fixture (`examples/fixture_writer_versions.rs`): the log verifies, the versions
/// and the alias read back as the writer saw them, each execution shows its version and alias,
/// the open one runs version 1's revision to its end although the machine moved on, and the
/// next version published takes the number after the deleted one.
fn check_versions(fixture: &Path) {
    let expected = read_expected(fixture);
    let versions = &expected["versions"];
    let pristine = copy_data(fixture);
    let verify = statelog(&["wal", "verify"], pristine.path());
    assert_eq!(
        verify.status.code(),
        Some(0),
        "{fixture:?}: {}",
        stderr(&verify)
    );
    let copy = copy_data(fixture);
    let clock = ManualClock::new(number(&expected, "now_ms"));
    let engine = open(copy.path(), &clock, &expected);
    assert!(engine.damaged_executions().is_empty(), "{fixture:?}");
    let machine = text(versions, "machine");
    let listed: Vec<Value> = engine
        .list_state_machine_versions(machine, 0, None)
        .expect("lists versions")
        .versions
        .iter()
        .map(
            |v| serde_json::json!({"arn": v.state_machine_version_arn, "created_ms": v.created_ms}),
        )
        .collect();
    assert_eq!(Value::from(listed), versions["listed"], "{fixture:?}");
    let alias = engine
        .describe_state_machine_alias(text(&versions["alias"], "arn"))
        .expect("the alias reads back");
    let routing: Vec<Value> = alias
        .routing
        .iter()
        .map(
            |r| serde_json::json!({"version_arn": r.state_machine_version_arn, "weight": r.weight}),
        )
        .collect();
    assert_eq!(
        Value::from(routing),
        versions["alias"]["routing"],
        "{fixture:?}"
    );
    assert_eq!(
        (
            alias.description.as_deref(),
            alias.created_ms,
            alias.updated_ms
        ),
        (
            versions["alias"]["description"].as_str(),
            number(&versions["alias"], "created_ms"),
            versions["alias"]["updated_ms"].as_u64()
        )
    );
    assert_eq!(
        engine
            .describe_state_machine_alias(text(versions, "gone_alias"))
            .expect_err("deleted")
            .aws_name(),
        "ResourceNotFound"
    );
    assert_eq!(
        engine
            .describe_state_machine(machine)
            .expect("machine")
            .definition,
        text(versions, "current_definition")
    );
    let mut open_arns = Vec::new();
    for execution in expected["executions"].as_array().expect("executions") {
        let arn = text(execution, "arn");
        let d = engine.describe_execution(arn).expect("describes");
        assert_eq!(d.status.aws_name(), text(execution, "status"), "{arn}");
        assert_eq!(
            d.state_machine_version_arn.as_deref(),
            execution["version_arn"].as_str(),
            "{arn}"
        );
        assert_eq!(
            d.state_machine_alias_arn.as_deref(),
            execution["alias_arn"].as_str(),
            "{arn}"
        );
        assert_eq!(
            Value::from(event_types(&engine, arn)),
            execution["event_types"],
            "{arn}"
        );
        if !d.status.is_closed() {
            open_arns.push((arn.to_string(), d.state_machine_version_arn));
        }
    }
    assert!(!open_arns.is_empty(), "{fixture:?}: an execution waits");
    clock.advance_ms(60_000);
    engine.run_due_timers();
    engine.wait_idle();
    for (arn, version) in open_arns {
        let d = engine.describe_execution(&arn).expect("describes");
        assert_eq!(d.status, ExecutionStatus::Succeeded, "{arn}");
        // Version 1's revision ran, not the machine's current one.
        assert_eq!(version.as_deref(), Some(format!("{machine}:1").as_str()));
        assert_eq!(d.output, Some(serde_json::json!({"v": 1})), "{arn}");
    }
    engine
        .update_state_machine(
            machine,
            Some(r#"{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}"#),
            None,
        )
        .expect("updates");
    let next = engine
        .publish_state_machine_version(machine, None, None)
        .expect("publishes");
    assert_eq!(
        next.state_machine_version_arn,
        format!("{machine}:4"),
        "the deleted {} keeps its number",
        text(versions, "deleted")
    );
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
    // (never expired) is stable across the years: every open one (the waiting one among them).
    let waiting_arn = text(&expected["waiting"], "execution_arn");
    let open: Vec<&Value> = expected["executions"]
        .as_array()
        .expect("executions")
        .iter()
        .filter(|e| e["status"] == "RUNNING")
        .collect();
    assert!(
        open.iter().any(|e| e["arn"] == waiting_arn),
        "{fixture:?}: the waiting execution is listed as open"
    );
    for recorded in open {
        let arn = text(recorded, "arn");
        let history = Command::new(BIN)
            .args(["history", arn, "--json", "--data-dir"])
            .arg(pristine.path())
            .output()
            .expect("runs statelog history");
        assert!(
            history.status.success(),
            "{fixture:?}: history {arn}: {}",
            stderr(&history)
        );
        assert!(
            stderr(&history).is_empty(),
            "{fixture:?}: history {arn} reports damage: {}",
            stderr(&history)
        );
        let parsed: Value = serde_json::from_slice(&history.stdout).expect("history --json");
        let types: Vec<Value> = parsed["events"]
            .as_array()
            .expect("events")
            .iter()
            .map(|event| event["type"].clone())
            .collect();
        assert_eq!(
            Value::from(types),
            recorded["event_types"],
            "{fixture:?}: {arn}"
        );
    }
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

    if !expected["full"].is_null() {
        check_open_waits(fixture, &engine, &clock, &expected);
    }

    // The EXPRESS machine of `fixture_writer_express` still runs Express executions, which
    // answer what they answered then and write nothing.
    let express = &expected["express"];
    if !express.is_null() {
        let machine_arn = text(express, "machine_arn");
        let outcome = engine
            .start_sync_execution(machine_arn, None, text(express, "input"))
            .expect("the Express machine runs");
        assert_eq!(outcome.status, ExecutionStatus::Succeeded, "{fixture:?}");
        assert_eq!(
            Value::from(outcome.output_text),
            express["output"],
            "{fixture:?}"
        );
    }

    // The Distributed Map of `fixture_writer_map_run`: each child still names its Map Run
    // (history format 3), shows the output it had, and the run is found from its ARN.
    let map_run = &expected["map_run"];
    if !map_run.is_null() {
        let map_run_arn = text(map_run, "map_run_arn");
        for child in map_run["children"].as_array().expect("children") {
            let described = engine
                .describe_execution(text(child, "arn"))
                .expect("describes a child");
            assert_eq!(
                described.map_run_arn.as_deref(),
                Some(map_run_arn),
                "{fixture:?}"
            );
            assert_eq!(
                Value::from(described.output_text),
                child["output"],
                "{fixture:?}"
            );
        }
        let run = engine
            .describe_map_run(map_run_arn)
            .expect("describes the Map Run");
        assert_eq!(run.execution_arn, text(map_run, "parent"), "{fixture:?}");
        assert_eq!(run.status.aws_name(), "SUCCEEDED", "{fixture:?}");
    }

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
    let typed = expected["machines"]
        .as_array()
        .is_some_and(|machines| machines.iter().any(|m| m.get("type").is_some()));
    let machines: Vec<Value> = engine
        .list_state_machines()
        .iter()
        .map(|m| {
            let tags = engine
                .list_tags_for_resource(&m.state_machine_arn)
                .expect("machine tags");
            let mut machine = serde_json::json!({
                "arn": m.state_machine_arn,
                "name": m.name,
                "definition": m.definition,
                "revision_id": m.revision_id,
                "tags": tags_json(&tags),
            });
            // Builds with Express workflows record each machine's type (older ones had only
            // STANDARD machines).
            if typed {
                machine["type"] = Value::from(m.machine_type.aws_name());
            }
            machine
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

/// An embedder's job service after the upgrade: the recorded job is never started again (its
/// handle is in the history); its outcome is pushed with `report_job`.
#[derive(Clone, Default)]
struct Batch {
    started: Arc<parking_lot::Mutex<Vec<JobKey>>>,
}

impl JobIntegration for Batch {
    fn patterns(&self) -> Vec<IntegrationPattern> {
        vec![IntegrationPattern::Sync]
    }

    fn poll_interval_ms(&self) -> u64 {
        DAY_MS
    }

    fn start(&self, start: JobStart) -> JobFuture<Value> {
        let started = self.started.clone();
        Box::pin(async move {
            started.lock().push(start.key);
            Ok(json!({}))
        })
    }

    fn status(&self, _job: Job) -> JobFuture<JobStatus> {
        Box::pin(async { Ok(JobStatus::Running) })
    }

    fn cancel(&self, _job: Job) -> JobFuture<()> {
        Box::pin(async { Ok(()) })
    }
}

/// The recorded execution `arn` of `expected.json`.
fn recorded<'a>(expected: &'a Value, arn: &str) -> &'a Value {
    expected["executions"]
        .as_array()
        .expect("executions")
        .iter()
        .find(|e| e["arn"] == arn)
        .unwrap_or_else(|| panic!("{arn} is recorded"))
}

/// Asserts `arn` closed with `status` and its history is the recorded one followed by
/// `appended`.
fn expect_closed(
    fixture: &Path,
    engine: &Engine,
    expected: &Value,
    arn: &str,
    status: ExecutionStatus,
    appended: &[&str],
) -> statelog::engine::ExecutionDescription {
    let description = engine.describe_execution(arn).expect("describes");
    assert_eq!(
        description.status, status,
        "{fixture:?}: {arn}: {:?} {:?}",
        description.error, description.cause
    );
    let mut types = recorded(expected, arn)["event_types"]
        .as_array()
        .expect("event types")
        .clone();
    types.extend(appended.iter().map(|t| Value::from(*t)));
    assert_eq!(
        Value::from(event_types(engine, arn)),
        Value::from(types),
        "{fixture:?}: {arn}"
    );
    description
}

/// The `full` fixture's open executions, each waiting in its own way, finish on this build.
fn check_open_waits(fixture: &Path, engine: &Engine, clock: &ManualClock, expected: &Value) {
    let full = &expected["full"];

    // Deleted stays deleted; the deleted machine's open execution still runs (below).
    let deleted = &full["deleted_machine"];
    assert!(
        matches!(
            engine.describe_state_machine(text(deleted, "arn")),
            Err(Error::StateMachineDoesNotExist { .. })
        ),
        "{fixture:?}: the deleted machine is back"
    );
    assert!(
        matches!(
            engine.describe_activity(text(&full["deleted_activity"], "arn")),
            Err(Error::ActivityDoesNotExist { .. })
        ),
        "{fixture:?}: the deleted activity is back"
    );

    // The claimed activity task stays claimed (not offered again) and takes a heartbeat.
    let claimed = &full["claimed_activity"];
    let activity_arn = text(claimed, "activity_arn");
    let namespace = activity_arn.split(':').nth(4).expect("an account");
    assert_eq!(engine.task_list_pending_count(namespace, activity_arn), 0);
    engine
        .send_task_heartbeat(text(claimed, "token"))
        .expect("the claimed task takes a heartbeat");

    // The embedder's `.sync` job is recovered from its recorded handle (not started again)
    // and takes its pushed outcome once its integration is registered.
    let job = &full["job"];
    let batch = Batch::default();
    engine.register_job_integration(text(job, "base_arn"), batch.clone());
    let key = JobKey {
        execution_arn: text(job, "execution_arn").to_string(),
        task_id: u32::try_from(number(job, "task_id")).expect("a task id"),
    };
    engine
        .report_job(&key, JobStatus::Succeeded(json!({"rows": 4})))
        .expect("the recovered job takes its outcome");
    engine.wait_idle();
    let done = expect_closed(
        fixture,
        engine,
        expected,
        &key.execution_arn,
        ExecutionStatus::Succeeded,
        &["TaskSucceeded", "TaskStateExited", "ExecutionSucceeded"],
    );
    assert_eq!(done.output, Some(json!({"rows": 4})));
    assert!(
        batch.started.lock().is_empty(),
        "{fixture:?}: job restarted"
    );

    // The retry waits for its backoff timer; its handler now succeeds.
    let retry = &full["retry_backoff"];
    engine.register_integration(
        text(retry, "resource"),
        |input: Value, _context: Value| async move {
            Ok::<Value, TaskError>(json!({"retried": input}))
        },
    );
    engine.wait_idle();
    let timed = [
        text(&full["wait_timer"], "execution_arn"),
        text(deleted, "execution_arn"),
        text(&full["task_timeout"], "execution_arn"),
        text(claimed, "execution_arn"),
        text(retry, "execution_arn"),
        text(&full["sync_child"], "execution_arn"),
        text(&full["sync_child"], "child_arn"),
    ];
    for arn in timed {
        assert_eq!(
            engine.describe_execution(arn).expect("describes").status,
            ExecutionStatus::Running,
            "{fixture:?}: {arn} closed before its timer"
        );
    }

    // The clock passes every timer and the heartbeat clock; each execution closes.
    clock.advance_ms((number(full, "open_timer_s") + 1) * 1000);
    assert!(number(full, "open_heartbeat_s") < number(full, "open_timer_s"));
    engine.run_due_timers();
    engine.wait_idle();
    let slept = [
        "WaitStateExited",
        "PassStateEntered",
        "PassStateExited",
        "ExecutionSucceeded",
    ];
    expect_closed(
        fixture,
        engine,
        expected,
        text(&full["wait_timer"], "execution_arn"),
        ExecutionStatus::Succeeded,
        &slept,
    );
    expect_closed(
        fixture,
        engine,
        expected,
        text(deleted, "execution_arn"),
        ExecutionStatus::Succeeded,
        &slept,
    );
    let timeout = &full["task_timeout"];
    let late = expect_closed(
        fixture,
        engine,
        expected,
        text(timeout, "execution_arn"),
        ExecutionStatus::Failed,
        &["TaskTimedOut", "ExecutionFailed"],
    );
    assert_eq!(late.error.as_deref(), Some("States.Timeout"));
    assert!(matches!(
        engine.send_task_success(text(timeout, "token"), "{}"),
        Err(Error::TaskTimedOut { .. })
    ));
    let lapsed = expect_closed(
        fixture,
        engine,
        expected,
        text(claimed, "execution_arn"),
        ExecutionStatus::Failed,
        &["ActivityTimedOut", "ExecutionFailed"],
    );
    assert_eq!(lapsed.error.as_deref(), Some("States.HeartbeatTimeout"));
    assert!(matches!(
        engine.send_task_success(text(claimed, "token"), "{}"),
        Err(Error::TaskTimedOut { .. })
    ));
    let retried = expect_closed(
        fixture,
        engine,
        expected,
        text(retry, "execution_arn"),
        ExecutionStatus::Succeeded,
        &[
            "TaskScheduled",
            "TaskStarted",
            "TaskSucceeded",
            "TaskStateExited",
            "ExecutionSucceeded",
        ],
    );
    assert_eq!(retried.output, Some(json!({"retried": {"n": 3}})));
    let sync = &full["sync_child"];
    let child_arn = text(sync, "child_arn");
    expect_closed(
        fixture,
        engine,
        expected,
        child_arn,
        ExecutionStatus::Succeeded,
        &[
            "WaitStateExited",
            "SucceedStateEntered",
            "SucceedStateExited",
            "ExecutionSucceeded",
        ],
    );
    let parent = expect_closed(
        fixture,
        engine,
        expected,
        text(sync, "execution_arn"),
        ExecutionStatus::Succeeded,
        &["TaskSucceeded", "TaskStateExited", "ExecutionSucceeded"],
    );
    // `.sync:2`: the child's description, its output as JSON.
    let output = parent.output.expect("the parent's output");
    assert_eq!(output["ExecutionArn"], child_arn);
    assert_eq!(output["Status"], "SUCCEEDED");
    assert_eq!(
        output["Output"],
        json!({"seconds": number(full, "open_timer_s")})
    );
    assert!(
        engine.background_errors().is_empty(),
        "{fixture:?}: {:?}",
        engine.background_errors()
    );
}

/// Every fixture's `expected.json`, skipping when the corpus is missing.
fn all_expected() -> Vec<(PathBuf, Value)> {
    if !fixtures_root().is_dir() {
        return Vec::new();
    }
    fixtures()
        .into_iter()
        .map(|fixture| {
            let expected = read_expected(&fixture);
            (fixture, expected)
        })
        .collect()
}

#[test]
fn fixtures_cover_every_event_type() {
    let all = all_expected();
    if all.is_empty() {
        println!("skip: no fixture under {}", fixtures_root().display());
        return;
    }
    let mut seen = BTreeSet::new();
    for (_, expected) in &all {
        // An SWF fixture holds no Step Functions execution (its events are SWF's).
        for execution in expected["executions"].as_array().into_iter().flatten() {
            for event_type in execution["event_types"].as_array().expect("event types") {
                seen.insert(event_type.as_str().expect("a type name").to_string());
            }
        }
    }
    let readme = std::fs::read_to_string(fixtures_root().join("../README.md")).expect("README");
    let not_producible: BTreeSet<&str> = NOT_PRODUCIBLE.iter().map(|(name, _)| *name).collect();
    assert_eq!(
        not_producible.len(),
        NOT_PRODUCIBLE.len(),
        "NOT_PRODUCIBLE repeats a name"
    );
    for (name, reason) in NOT_PRODUCIBLE {
        assert!(
            EventDetails::TYPE_NAMES.contains(name),
            "{name} is not an event type (any more): remove it from NOT_PRODUCIBLE"
        );
        assert!(
            !seen.contains(*name),
            "{name} is in a fixture, so it is producible ({reason} no longer holds): remove it \
             from NOT_PRODUCIBLE and the README"
        );
        assert!(
            readme.contains(&format!("`{name}`")),
            "tests/fixtures/README.md does not list {name} as not producible"
        );
    }
    let missing: Vec<&str> = EventDetails::TYPE_NAMES
        .iter()
        .copied()
        .filter(|name| !not_producible.contains(name) && !seen.contains(*name))
        .collect();
    assert!(
        missing.is_empty(),
        "no fixture holds these event types: {missing:?} (write a fixture that does, or list \
         them in NOT_PRODUCIBLE with the reason)"
    );
    for name in &seen {
        assert!(
            EventDetails::TYPE_NAMES.contains(&name.as_str()),
            "a fixture holds {name}, which this build does not know"
        );
    }
}

#[test]
fn fixtures_cover_every_record_variant() {
    let all = all_expected();
    if all.is_empty() {
        println!("skip: no fixture under {}", fixtures_root().display());
        return;
    }
    let mut seen: BTreeSet<String> = BTreeSet::new();
    for (fixture, _) in &all {
        let pristine = copy_data(fixture);
        let dump = statelog(&["wal", "dump", "--json"], pristine.path());
        assert!(dump.status.success(), "{fixture:?}: {}", stderr(&dump));
        for line in String::from_utf8_lossy(&dump.stdout).lines() {
            let record: Value = serde_json::from_str(line).expect("a JSON line");
            let kind = record["kind"].as_u64().expect("kind");
            let payload = base64::engine::general_purpose::STANDARD
                .decode(record["payload"].as_str().expect("payload"))
                .expect("base64 payload");
            let variants = match u8::try_from(kind).expect("a kind byte") {
                statelog::store::KIND_EVENTS => {
                    seen.insert("Batch".to_string());
                    continue;
                }
                statelog::store::KIND_MACHINE => ("MachineRecord", MACHINE_VARIANTS),
                statelog::store::KIND_CATALOG => ("CatalogRecord", CATALOG_VARIANTS),
                statelog::store::swf::KIND_SWF => ("SwfRecord", SWF_VARIANTS),
                statelog::store::map_runs::KIND_MAP_RUN => ("MapRunRecord", MAP_RUN_VARIANTS),
                other => panic!("{fixture:?}: record kind {other}"),
            };
            // Only the layouts this test knows: a later format version may move the variant.
            let known = match payload.first() {
                Some(&RECORD_FORMAT_VERSION_1) => true,
                Some(&CATALOG_FORMAT_VERSION_2) => variants.0 == "CatalogRecord",
                _ => false,
            };
            if !known {
                continue;
            }
            let index = usize::from(*payload.get(1).expect("a variant index"));
            let name = variants
                .1
                .get(index)
                .unwrap_or_else(|| panic!("{fixture:?}: {} variant {index}", variants.0));
            seen.insert(format!("{}::{name}", variants.0));
        }
    }
    let mut wanted = vec!["Batch".to_string()];
    wanted.extend(
        MACHINE_VARIANTS
            .iter()
            .map(|v| format!("MachineRecord::{v}")),
    );
    wanted.extend(
        CATALOG_VARIANTS
            .iter()
            .map(|v| format!("CatalogRecord::{v}")),
    );
    wanted.extend(SWF_VARIANTS.iter().map(|v| format!("SwfRecord::{v}")));
    wanted.extend(
        MAP_RUN_VARIANTS
            .iter()
            .map(|v| format!("MapRunRecord::{v}")),
    );
    let missing: Vec<&String> = wanted.iter().filter(|v| !seen.contains(*v)).collect();
    assert!(
        missing.is_empty(),
        "no fixture holds {missing:?} (seen {seen:?})"
    );
}

/// Some fixture was written by a build that assigned workflow variables, and today's build
/// reads them back from its exited events as that build wrote them (`fixture_writer_variables`:
/// `flow`'s `Start` assigns `items` and `count`).
#[test]
fn a_fixture_holds_assigned_variables_and_they_read_back() {
    let mut found = false;
    for (fixture, expected) in all_expected() {
        if expected["writer"] == "fixture_writer_swf" {
            continue;
        }
        let copy = copy_data(&fixture);
        let clock = ManualClock::new(number(&expected, "now_ms"));
        let engine = open(copy.path(), &clock, &expected);
        let arn = "arn:aws:states:us-east-1:000000000000:execution:flow:before-update";
        let query = HistoryQuery {
            max_results: 1000,
            ..HistoryQuery::default()
        };
        let Ok(history) = engine.get_execution_history(arn, &query) else {
            continue;
        };
        let history = history.to_aws_json();
        for event in history["events"].as_array().expect("events") {
            let details = &event["stateExitedEventDetails"];
            if details["assignedVariables"].is_object() {
                assert_eq!(
                    details["assignedVariables"],
                    json!({"count": "3", "items": "[1,2,3]"}),
                    "{fixture:?}"
                );
                assert_eq!(
                    details["assignedVariablesDetails"],
                    json!({"truncated": false})
                );
                found = true;
            }
        }
    }
    if fixtures_root().is_dir() {
        assert!(
            found,
            "no fixture holds an exited event with assignedVariables"
        );
    }
}
