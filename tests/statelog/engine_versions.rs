//! State machine versions and aliases through the engine API, on the manual clock: publish
//! (numbers from 1, never reused, idempotent for an unchanged revision, `revisionId` checked),
//! list, delete, aliases with weighted routing drawn from the seeded entropy source, starts
//! through a version or alias ARN that run that version for their whole life (an alias update,
//! a machine update, a restart and a redrive change nothing), executions that show their
//! version and alias, and everything surviving a restart and a compaction.

use std::path::Path;
use std::sync::Arc;

use crate::engine_common::{Harness, START_MS};
use serde_json::json;
use statelog::clock::ManualClock;
use statelog::engine::history::{EventDetails, EventId};
use statelog::engine::{
    Durability, Engine, EngineOptions, Error, ExecutionStatus, HistoryQuery, ListExecutions,
    RoutingEntry,
};

const DAY_MS: u64 = 24 * 3600 * 1000;

/// Waits 60 s, then answers `{"v": 1}`.
const V1: &str = r#"{"StartAt":"Sleep","States":{
    "Sleep":{"Type":"Wait","Seconds":60,"Next":"Answer"},
    "Answer":{"Type":"Pass","Result":{"v":1},"End":true}}}"#;

/// Answers `{"v": 2}` at once.
const V2: &str = r#"{"StartAt":"Answer","States":{
    "Answer":{"Type":"Pass","Result":{"v":2},"End":true}}}"#;

/// Answers `{"v": 3}` at once.
const V3: &str = r#"{"StartAt":"Answer","States":{
    "Answer":{"Type":"Pass","Result":{"v":3},"End":true}}}"#;

const FAIL: &str =
    r#"{"StartAt":"F","States":{"F":{"Type":"Fail","Error":"Boom","Cause":"always"}}}"#;

const MACHINE: &str = "arn:aws:states:us-east-1:000000000000:stateMachine:m";

fn version(number: u32) -> String {
    format!("{MACHINE}:{number}")
}

fn alias(name: &str) -> String {
    format!("{MACHINE}:{name}")
}

fn route(pairs: &[(u32, u32)]) -> Vec<RoutingEntry> {
    pairs
        .iter()
        .map(|&(number, weight)| RoutingEntry {
            state_machine_version_arn: version(number),
            weight,
        })
        .collect()
}

fn listed_versions(engine: &Engine) -> Vec<String> {
    engine
        .list_state_machine_versions(MACHINE, 0, None)
        .expect("lists")
        .versions
        .into_iter()
        .map(|v| v.state_machine_version_arn)
        .collect()
}

/// Runs due timers until the execution closes; returns its output's `v`.
fn finish(engine: &Engine, clock: &ManualClock, arn: &str) -> i64 {
    for _ in 0..10 {
        engine.wait_idle();
        let d = engine.describe_execution(arn).expect("describes");
        if d.status.is_closed() {
            assert_eq!(d.status, ExecutionStatus::Succeeded, "{d:?}");
            return d.output.expect("output")["v"].as_i64().expect("v");
        }
        clock.advance_ms(60_000);
        engine.run_due_timers();
    }
    panic!("{arn} did not close");
}

/// Creates `m` at V1 published as version 1 and V2 published as version 2.
fn two_versions(engine: &Engine) {
    let (_, v1) = engine
        .create_state_machine_published("m", V1, None, &[], true, Some("first"))
        .expect("creates");
    assert_eq!(v1.expect("published").state_machine_version_arn, version(1));
    let (_, v2) = engine
        .update_state_machine_published(MACHINE, Some(V2), None, true, None)
        .expect("updates");
    assert_eq!(v2.expect("published").state_machine_version_arn, version(2));
}

#[test]
fn versions_count_up_are_idempotent_and_survive_a_restart() {
    let h = Harness::new();
    two_versions(&h.engine);
    // The current revision is published already: the same version answers.
    let again = h
        .engine
        .publish_state_machine_version(MACHINE, None, Some("other words"))
        .expect("publishes");
    assert_eq!(again.state_machine_version_arn, version(2));
    // An update that changes nothing makes no revision, and a publish finds version 2.
    let (_, same) = h
        .engine
        .update_state_machine_published(MACHINE, Some(V2), None, true, None)
        .expect("updates");
    assert_eq!(
        same.expect("published").state_machine_version_arn,
        version(2)
    );
    assert_eq!(listed_versions(&h.engine), vec![version(2), version(1)]);
    // A version describes as its revision, with its own ARN and description.
    let v1 = h.engine.describe_state_machine(&version(1)).expect("v1");
    assert_eq!(
        (v1.state_machine_arn.as_str(), v1.definition.as_str()),
        (version(1).as_str(), V1)
    );
    assert_eq!(v1.description.as_deref(), Some("first"));
    assert_eq!(
        h.engine
            .describe_state_machine(MACHINE)
            .expect("m")
            .definition,
        V2
    );
    // `revisionId` must name the current revision; `INITIAL` names the creation's.
    let current = h.engine.describe_state_machine(MACHINE).expect("m");
    let stale = h
        .engine
        .publish_state_machine_version(MACHINE, Some("INITIAL"), None)
        .expect_err("stale");
    assert_eq!(stale.aws_name(), "ConflictException");
    assert!(stale.to_string().contains(
        current
            .revision_id
            .as_deref()
            .expect("an update has a revision id")
    ));
    // A deleted number is never used again, also after a restart.
    h.engine
        .delete_state_machine_version(&version(2))
        .expect("deletes");
    h.engine
        .delete_state_machine_version(&version(2))
        .expect("deleting what is gone is no error");
    let h = h.restart(0);
    assert_eq!(listed_versions(&h.engine), vec![version(1)]);
    h.engine
        .update_state_machine(MACHINE, Some(V3), None)
        .expect("updates");
    let v3 = h.engine.publish_state_machine_version(
        MACHINE,
        Some(current.revision_id.as_deref().unwrap_or("")),
        None,
    );
    assert_eq!(
        v3.expect_err("V3 is the current revision now").aws_name(),
        "ConflictException"
    );
    let v3 = h
        .engine
        .publish_state_machine_version(MACHINE, None, None)
        .expect("publishes");
    assert_eq!(v3.state_machine_version_arn, version(3));
    let page = h
        .engine
        .list_state_machine_versions(MACHINE, 1, None)
        .expect("lists");
    assert_eq!(page.versions.len(), 1);
    let rest = h
        .engine
        .list_state_machine_versions(MACHINE, 1, page.next_token.as_deref())
        .expect("lists");
    assert_eq!(rest.versions[0].state_machine_version_arn, version(1));
    assert_eq!(rest.next_token, None);
    // The description needs `publish`.
    let refused = h
        .engine
        .update_state_machine_published(MACHINE, Some(V1), None, false, Some("d"))
        .expect_err("refused");
    assert_eq!(refused.aws_name(), "ValidationException");
}

#[test]
fn a_start_through_an_alias_runs_its_version_for_its_whole_life() {
    let h = Harness::new();
    two_versions(&h.engine);
    let prod = h
        .engine
        .create_state_machine_alias("prod", Some("production"), &route(&[(1, 100)]))
        .expect("creates");
    assert_eq!(prod.state_machine_alias_arn, alias("prod"));
    let through_alias = h
        .engine
        .start_execution(&alias("prod"), Some("a"), "{}")
        .expect("starts")
        .execution_arn;
    let through_version = h
        .engine
        .start_execution(&version(1), Some("b"), "{}")
        .expect("starts")
        .execution_arn;
    let unqualified = h
        .engine
        .start_execution(MACHINE, Some("c"), "{}")
        .expect("starts")
        .execution_arn;
    // The alias moves to version 2 and the machine gets a third revision while `a` and `b`
    // wait in version 1's Wait, across a restart.
    h.engine
        .update_state_machine_alias(&alias("prod"), None, Some(&route(&[(2, 100)])))
        .expect("updates");
    h.engine
        .update_state_machine(MACHINE, Some(V3), None)
        .expect("updates");
    let h = h.restart(0);
    assert_eq!(finish(&h.engine, &h.clock, &through_alias), 1);
    assert_eq!(finish(&h.engine, &h.clock, &through_version), 1);
    assert_eq!(finish(&h.engine, &h.clock, &unqualified), 2);
    let d = h.engine.describe_execution(&through_alias).expect("d");
    assert_eq!(d.state_machine_arn, MACHINE);
    assert_eq!(d.state_machine_version_arn, Some(version(1)));
    assert_eq!(d.state_machine_alias_arn, Some(alias("prod")));
    let d = h.engine.describe_execution(&through_version).expect("d");
    assert_eq!(d.state_machine_version_arn, Some(version(1)));
    assert_eq!(d.state_machine_alias_arn, None);
    let d = h.engine.describe_execution(&unqualified).expect("d");
    assert_eq!(
        (d.state_machine_version_arn, d.state_machine_alias_arn),
        (None, None)
    );
    // The history's ExecutionStarted carries them, as AWS's details do.
    let page = h
        .engine
        .get_execution_history(&through_alias, &HistoryQuery::default())
        .expect("history");
    let EventDetails::ExecutionStarted(started) = &page.events[0].details else {
        panic!("{:?}", page.events[0]);
    };
    assert_eq!(started.state_machine_version_arn, Some(version(1)));
    assert_eq!(started.state_machine_alias_arn, Some(alias("prod")));
    // The machine the execution ran is version 1's revision.
    let ran = h
        .engine
        .describe_state_machine_for_execution(&through_alias)
        .expect("d");
    assert_eq!(ran.definition, V1);
    // A new start through the alias runs version 2 now.
    let later = h
        .engine
        .start_execution(&alias("prod"), Some("d"), "{}")
        .expect("starts")
        .execution_arn;
    assert_eq!(finish(&h.engine, &h.clock, &later), 2);
    // Listings by version and by alias.
    let list = |state_machine: &str| {
        let request = ListExecutions {
            state_machine: Some(state_machine.to_string()),
            ..ListExecutions::default()
        };
        let page = h.engine.list_executions(&request).expect("lists");
        page.executions
            .into_iter()
            .map(|e| {
                (
                    e.name,
                    e.state_machine_version_arn,
                    e.state_machine_alias_arn,
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        list(&version(1)),
        vec![
            ("b".to_string(), Some(version(1)), None),
            ("a".to_string(), Some(version(1)), Some(alias("prod"))),
        ]
    );
    assert_eq!(
        list(&alias("prod")),
        vec![
            ("d".to_string(), Some(version(2)), Some(alias("prod"))),
            ("a".to_string(), Some(version(1)), Some(alias("prod"))),
        ]
    );
    assert_eq!(list(MACHINE).len(), 4);
}

#[test]
fn weighted_routing_is_drawn_once_and_recorded() {
    let h = Harness::new();
    two_versions(&h.engine);
    h.engine
        .create_state_machine_alias("canary", None, &route(&[(1, 50), (2, 50)]))
        .expect("creates");
    let mut started = Vec::new();
    for i in 0..40 {
        let arn = h
            .engine
            .start_execution(&alias("canary"), Some(&format!("e{i}")), "{}")
            .expect("starts")
            .execution_arn;
        let chosen = h
            .engine
            .describe_execution(&arn)
            .expect("d")
            .state_machine_version_arn
            .expect("a version");
        started.push((arn, chosen));
    }
    let on = |v: u32| started.iter().filter(|(_, c)| *c == version(v)).count();
    assert!(on(1) > 5 && on(2) > 5, "{} on 1, {} on 2", on(1), on(2));
    // A restart replays what was drawn; each execution runs the version it names.
    let h = h.restart(0);
    for (arn, chosen) in &started {
        let d = h.engine.describe_execution(arn).expect("d");
        assert_eq!(d.state_machine_version_arn.as_ref(), Some(chosen));
        let v = finish(&h.engine, &h.clock, arn);
        assert_eq!(version(v as u32), *chosen);
    }
}

#[test]
fn a_redrive_runs_the_version_the_execution_started_on() {
    let h = Harness::new();
    let (_, v1) = h
        .engine
        .create_state_machine_published("m", FAIL, None, &[], true, None)
        .expect("creates");
    assert_eq!(v1.expect("published").state_machine_version_arn, version(1));
    let failed = h
        .engine
        .start_execution(&version(1), Some("f"), "{}")
        .expect("starts")
        .execution_arn;
    h.engine.wait_idle();
    assert_eq!(
        h.engine.describe_execution(&failed).expect("d").status,
        ExecutionStatus::Failed
    );
    // The machine is fixed; the execution still runs version 1, which fails again.
    h.engine
        .update_state_machine(MACHINE, Some(V2), None)
        .expect("updates");
    h.engine.redrive_execution(&failed, None).expect("redrives");
    h.engine.wait_idle();
    let d = h.engine.describe_execution(&failed).expect("d");
    assert_eq!(d.status, ExecutionStatus::Failed);
    assert_eq!(d.redrive.redrive_count, 1);
    assert_eq!(d.state_machine_version_arn, Some(version(1)));
}

#[test]
fn refusals_carry_aws_error_names() {
    let h = Harness::new();
    two_versions(&h.engine);
    let create = |name: &str, pairs: &[(u32, u32)]| {
        h.engine
            .create_state_machine_alias(name, None, &route(pairs))
    };
    assert_eq!(refused(create("123", &[(1, 100)])), "ValidationException");
    assert_eq!(
        refused(create("bad name", &[(1, 100)])),
        "ValidationException"
    );
    assert_eq!(refused(create("a", &[])), "ValidationException");
    assert_eq!(
        refused(create("a", &[(1, 70), (2, 29)])),
        "ValidationException"
    );
    assert_eq!(refused(create("a", &[(1, 101)])), "ValidationException");
    assert_eq!(
        refused(create("a", &[(1, 50), (1, 50)])),
        "ValidationException"
    );
    assert_eq!(
        refused(create("a", &[(1, 40), (2, 30), (1, 30)])),
        "ValidationException"
    );
    assert_eq!(refused(create("a", &[(9, 100)])), "ResourceNotFound");
    let not_a_version = h.engine.create_state_machine_alias(
        "a",
        None,
        &[RoutingEntry {
            state_machine_version_arn: MACHINE.to_string(),
            weight: 100,
        }],
    );
    assert!(not_a_version
        .map(drop)
        .expect_err("refused")
        .to_string()
        .starts_with("Routing configuration must contain state machine version ARNs"));
    create("a", &[(1, 60), (2, 40)]).expect("creates");
    create("a", &[(1, 60), (2, 40)]).expect("the same again is the same alias");
    assert_eq!(refused(create("a", &[(1, 100)])), "ConflictException");
    let in_use = h
        .engine
        .delete_state_machine_version(&version(2))
        .expect_err("in use");
    assert_eq!(in_use.aws_name(), "ConflictException");
    assert!(in_use.to_string().ends_with("[a]"), "{in_use}");
    assert_eq!(
        refused(h.engine.describe_state_machine_alias(&alias("none"))),
        "ResourceNotFound"
    );
    assert_eq!(
        refused(
            h.engine
                .update_state_machine_alias(&alias("none"), Some("d"), None)
        ),
        "ResourceNotFound"
    );
    h.engine
        .delete_state_machine_alias(&alias("none"))
        .expect("deleting what is not there is no error");
    assert_eq!(
        refused(h.engine.start_execution(&version(7), None, "{}")),
        "StateMachineDoesNotExist"
    );
    assert_eq!(
        refused(h.engine.start_execution(&alias("none"), None, "{}")),
        "StateMachineDoesNotExist"
    );
    assert_eq!(
        refused(
            h.engine
                .start_execution(&format!("{MACHINE}:0"), None, "{}")
        ),
        "InvalidArn"
    );
    assert_eq!(
        refused(h.engine.delete_state_machine_version(&alias("a"))),
        "ValidationException"
    );
    // Once the alias routes elsewhere, version 2 goes.
    h.engine
        .update_state_machine_alias(&alias("a"), None, Some(&route(&[(1, 100)])))
        .expect("updates");
    h.engine
        .delete_state_machine_version(&version(2))
        .expect("deletes");
    let described = h
        .engine
        .describe_state_machine_alias(&alias("a"))
        .expect("describes");
    assert_eq!(described.routing, route(&[(1, 100)]));
    assert!(described.updated_ms.is_some());
    // Deleting the machine takes its versions and aliases.
    h.engine.delete_state_machine(MACHINE).expect("deletes");
    assert_eq!(
        refused(h.engine.describe_state_machine_alias(&alias("a"))),
        "ResourceNotFound"
    );
    assert_eq!(
        refused(h.engine.describe_state_machine(&version(1))),
        "StateMachineDoesNotExist"
    );
}

/// The AWS error name of a refused call.
fn refused<T: std::fmt::Debug>(result: Result<T, Error>) -> &'static str {
    result.expect_err("refused").aws_name()
}

fn open_small(dir: &Path, clock: &ManualClock) -> Engine {
    let options = EngineOptions {
        clock: Arc::new(clock.clone()),
        background_timers: false,
        entropy_seed: Some(5),
        segment_size_bytes: 16 * 1024,
        durability: Durability::NoSync,
        retention_ms: 30 * DAY_MS,
        ..EngineOptions::default()
    };
    Engine::open(dir, options).expect("engine opens")
}

#[test]
fn versions_and_aliases_survive_compaction() {
    let dir = tempfile::tempdir().expect("dir");
    let clock = ManualClock::new(START_MS);
    let engine = open_small(dir.path(), &clock);
    two_versions(&engine);
    engine
        .create_state_machine_alias("prod", None, &route(&[(1, 30), (2, 70)]))
        .expect("creates");
    engine
        .update_state_machine_alias(&alias("prod"), Some("moved"), Some(&route(&[(2, 100)])))
        .expect("updates");
    engine
        .update_state_machine(MACHINE, Some(V3), None)
        .expect("updates");
    let v3 = engine
        .publish_state_machine_version(MACHINE, None, None)
        .expect("publishes");
    engine
        .delete_state_machine_version(&v3.state_machine_version_arn)
        .expect("deletes");
    // An execution of version 1 that stays open, and enough closed ones to fill segments.
    let open = engine
        .start_execution(&version(1), Some("open"), "{}")
        .expect("starts")
        .execution_arn;
    for i in 0..150 {
        engine
            .start_execution(
                &alias("prod"),
                Some(&format!("p{i}")),
                &json!({"pad": "x".repeat(100)}).to_string(),
            )
            .expect("starts");
    }
    clock.advance_ms(31 * DAY_MS);
    let report = engine.compact().expect("compacts");
    assert!(report.segments_deleted_count > 0, "{report:?}");
    drop(engine);
    let engine = open_small(dir.path(), &clock);
    assert_eq!(listed_versions(&engine), vec![version(2), version(1)]);
    let prod = engine
        .describe_state_machine_alias(&alias("prod"))
        .expect("kept");
    assert_eq!(
        (prod.description.as_deref(), prod.routing),
        (Some("moved"), route(&[(2, 100)]))
    );
    assert!(engine.damaged_executions().is_empty());
    assert_eq!(
        engine
            .describe_execution(&open)
            .expect("kept")
            .state_machine_version_arn,
        Some(version(1))
    );
    assert_eq!(finish(&engine, &clock, &open), 1);
    // Version 3 was deleted, and its number stays used.
    engine
        .update_state_machine(MACHINE, Some(V1), None)
        .expect("updates");
    let next = engine
        .publish_state_machine_version(MACHINE, None, None)
        .expect("publishes");
    assert_eq!(next.state_machine_version_arn, version(4));
    // What the open execution read back: its first event, from the log.
    let first = engine
        .get_execution_history(&open, &HistoryQuery::default())
        .expect("history")
        .events[0]
        .id;
    assert_eq!(first, EventId(1));
}
