//! What statelog persists besides histories, on the manual clock: `UpdateStateMachine` (running
//! executions keep their definition, new ones run the new one, across a restart), tags on state
//! machines and activities (AWS's limits, `ResourceNotFound`, `TooManyTags`), the activity
//! registry, and redrive client tokens, each surviving a restart and a compaction, which keeps
//! the live catalog records and only those.

use crate::engine_common;

use engine_common::block_on;

use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;

use engine_common::{Harness, START_MS};
use serde_json::json;
use statelog::clock::ManualClock;
use statelog::engine::{Engine, EngineOptions, Error, ExecutionStatus, ListExecutions, Tag};
use statelog::store::KIND_CATALOG;
use statelog_wal::{Durability, Lsn, Wal, WalOptions};

const DAY_MS: u64 = 24 * 3600 * 1000;

/// Waits 60 s, then answers `{"v": 1}`.
const V1: &str = r#"{"StartAt":"Sleep","States":{
    "Sleep":{"Type":"Wait","Seconds":60,"Next":"Answer"},
    "Answer":{"Type":"Pass","Result":{"v":1},"End":true}}}"#;

/// Answers `{"v": 2}` at once.
const V2: &str = r#"{"StartAt":"Answer","States":{
    "Answer":{"Type":"Pass","Result":{"v":2},"End":true}}}"#;

const FAIL: &str =
    r#"{"StartAt":"F","States":{"F":{"Type":"Fail","Error":"Boom","Cause":"always"}}}"#;

fn machine_arn(name: &str) -> String {
    format!("arn:aws:states:us-east-1:000000000000:stateMachine:{name}")
}

fn activity_arn(name: &str) -> String {
    format!("arn:aws:states:us-east-1:000000000000:activity:{name}")
}

fn tags(pairs: &[(&str, &str)]) -> Vec<Tag> {
    pairs.iter().map(|(k, v)| Tag::new(*k, *v)).collect()
}

/// Runs due timers until the execution closes (the clock moves a minute at a time).
fn finish(h: &Harness, arn: &str) -> serde_json::Value {
    for _ in 0..10 {
        h.engine.wait_idle();
        let d = h.engine.describe_execution(arn).expect("describes");
        if d.status.is_closed() {
            assert_eq!(d.status, ExecutionStatus::Succeeded, "{d:?}");
            return d.output.expect("output");
        }
        h.clock.advance_ms(60_000);
        h.engine.run_due_timers();
    }
    panic!("{arn} did not close");
}

#[test]
fn an_update_changes_new_executions_only_also_after_a_restart() {
    let h = Harness::new();
    let created = h
        .engine
        .create_state_machine("m", V1, None)
        .expect("creates");
    assert_eq!(created.updated_ms, None);
    let old = h
        .engine
        .start_execution("m", Some("old"), "{}")
        .expect("starts")
        .execution_arn;
    h.clock.advance_ms(5);
    let updated_ms = h
        .engine
        .update_state_machine(&machine_arn("m"), Some(V2), None)
        .expect("updates");
    assert_eq!(updated_ms, START_MS + 5);
    let described = h.engine.describe_state_machine("m").expect("describes");
    assert_eq!(described.definition, V2);
    assert_eq!(described.created_ms, created.created_ms);
    assert_eq!(described.updated_ms, Some(updated_ms));
    assert_eq!(described.role_arn, created.role_arn);
    // The running execution keeps the definition it started with.
    let for_old = h
        .engine
        .describe_state_machine_for_execution(&old)
        .expect("describes");
    assert_eq!(for_old.definition, V1);
    assert_eq!(for_old.state_machine_arn, machine_arn("m"));
    let new = h
        .engine
        .start_execution("m", Some("new"), "{}")
        .expect("starts")
        .execution_arn;
    assert_eq!(finish(&h, &new), json!({"v": 2}));
    assert_eq!(
        h.engine
            .describe_state_machine_for_execution(&new)
            .expect("describes")
            .definition,
        V2
    );
    // Both revisions' executions are the machine's executions.
    let listed = h
        .engine
        .list_executions(&ListExecutions {
            state_machine: Some("m".into()),
            ..ListExecutions::default()
        })
        .expect("lists");
    assert_eq!(listed.executions.len(), 2);

    // After a restart the old execution still runs V1 and the machine shows V2.
    let h = h.restart(0);
    assert_eq!(
        h.engine.describe_state_machine("m").expect("d").definition,
        V2
    );
    assert_eq!(
        h.engine
            .describe_state_machine_for_execution(&old)
            .expect("d")
            .definition,
        V1
    );
    assert_eq!(finish(&h, &old), json!({"v": 1}));
    let newer = h
        .engine
        .start_execution("m", Some("newer"), "{}")
        .expect("starts")
        .execution_arn;
    assert_eq!(finish(&h, &newer), json!({"v": 2}));
}

#[test]
fn an_update_needs_something_valid_for_a_live_machine() {
    let h = Harness::new();
    h.engine
        .create_state_machine("m", V2, None)
        .expect("creates");
    let none = h
        .engine
        .update_state_machine("m", None, None)
        .expect_err("refused");
    assert_eq!(none.aws_name(), "MissingRequiredParameter");
    let invalid = h
        .engine
        .update_state_machine("m", Some(r#"{"StartAt":"Nowhere","States":{}}"#), None)
        .expect_err("refused");
    assert_eq!(invalid.aws_name(), "InvalidDefinition");
    let unknown = h
        .engine
        .update_state_machine(&machine_arn("other"), Some(V2), None)
        .expect_err("refused");
    assert_eq!(unknown.aws_name(), "StateMachineDoesNotExist");
    assert_eq!(
        h.engine.describe_state_machine("m").expect("d").definition,
        V2
    );

    // A role-only update keeps the definition.
    let role = "arn:aws:iam::000000000000:role/updated";
    h.engine
        .update_state_machine("m", None, Some(role))
        .expect("updates");
    let h = h.restart(0);
    let d = h.engine.describe_state_machine("m").expect("d");
    assert_eq!((d.definition.as_str(), d.role_arn.as_str()), (V2, role));
    // Deleted, the machine cannot be updated.
    h.engine.delete_state_machine("m").expect("deletes");
    assert!(matches!(
        h.engine.update_state_machine("m", Some(V2), None),
        Err(Error::StateMachineDoesNotExist { .. })
    ));
}

#[test]
fn tags_follow_aws_rules_and_survive_a_restart() {
    let h = Harness::new();
    h.engine
        .create_state_machine_with_tags("m", V2, None, &tags(&[("team", "a"), ("cost", "")]))
        .expect("creates");
    let activity = h
        .engine
        .create_activity_with_tags("work", &tags(&[("kind", "gpu")]))
        .expect("creates");
    assert_eq!(activity.activity_arn, activity_arn("work"));
    assert_eq!(
        h.engine
            .list_tags_for_resource(&machine_arn("m"))
            .expect("lists"),
        tags(&[("cost", ""), ("team", "a")])
    );
    h.engine
        .tag_resource(&machine_arn("m"), &tags(&[("team", "b"), ("env", "prod")]))
        .expect("tags");
    h.engine
        .untag_resource(
            &machine_arn("m"),
            &["cost".to_string(), "absent".to_string()],
        )
        .expect("untags");
    let expected = tags(&[("env", "prod"), ("team", "b")]);
    assert_eq!(
        h.engine
            .list_tags_for_resource(&machine_arn("m"))
            .expect("lists"),
        expected
    );

    // Limits: key 1..=128, value 0..=256 characters, 50 tags.
    for bad in [
        Tag::new("", "v"),
        Tag::new("k".repeat(129), "v"),
        Tag::new("k", "v".repeat(257)),
        Tag::new("k{", "v"),
    ] {
        let error = h
            .engine
            .tag_resource(&machine_arn("m"), std::slice::from_ref(&bad))
            .expect_err("refused");
        assert_eq!(error.aws_name(), "ValidationException", "{bad:?}");
    }
    h.engine
        .tag_resource(
            &machine_arn("m"),
            &[Tag::new("k".repeat(128), "v".repeat(256))],
        )
        .expect("the longest key and value fit");
    let many: Vec<Tag> = (0..47).map(|i| Tag::new(format!("t{i}"), "x")).collect();
    h.engine
        .tag_resource(&machine_arn("m"), &many)
        .expect("exactly 50 tags fit");
    let error = h
        .engine
        .tag_resource(&machine_arn("m"), &[Tag::new("one-more", "x")])
        .expect_err("refused");
    assert!(
        matches!(&error, Error::TooManyTags { count: 51, limit: 50, resource_arn } if *resource_arn == machine_arn("m")),
        "{error:?}"
    );
    assert_eq!(error.aws_name(), "TooManyTags");
    let too_many: Vec<Tag> = (0..51).map(|i| Tag::new(format!("t{i}"), "x")).collect();
    assert_eq!(
        h.engine
            .create_activity_with_tags("crowded", &too_many)
            .expect_err("refused")
            .aws_name(),
        "TooManyTags"
    );
    assert!(h
        .engine
        .describe_activity(&activity_arn("crowded"))
        .is_err());

    // Unknown resources and foreign ARNs.
    for (arn, name) in [
        (machine_arn("nope"), "ResourceNotFound"),
        (activity_arn("nope"), "ResourceNotFound"),
        (
            "arn:aws:states:us-east-1:000000000000:execution:m:e".to_string(),
            "InvalidArn",
        ),
        // Another account's machine is well formed, but not this engine's (issue 13, item 7).
        (
            "arn:aws:states:us-east-1:111111111111:stateMachine:m".to_string(),
            "ResourceNotFound",
        ),
    ] {
        assert_eq!(
            h.engine
                .tag_resource(&arn, &tags(&[("a", "b")]))
                .expect_err("refused")
                .aws_name(),
            name,
            "{arn}"
        );
        assert_eq!(
            h.engine
                .list_tags_for_resource(&arn)
                .expect_err("refused")
                .aws_name(),
            name,
            "{arn}"
        );
    }

    let h = h.restart(0);
    let after = h
        .engine
        .list_tags_for_resource(&machine_arn("m"))
        .expect("lists");
    assert_eq!(after.len(), 50);
    assert!(after.contains(&Tag::new("team", "b")));
    assert_eq!(
        h.engine
            .list_tags_for_resource(&activity_arn("work"))
            .expect("lists"),
        tags(&[("kind", "gpu")])
    );
    // A deleted resource's tags go with it: a successor of the same name starts untagged.
    h.engine.delete_state_machine("m").expect("deletes");
    h.engine
        .delete_activity(&activity_arn("work"))
        .expect("deletes");
    h.engine
        .create_state_machine("m", V2, None)
        .expect("recreates");
    h.engine.create_activity("work").expect("recreates");
    let h = h.restart(0);
    assert!(h
        .engine
        .list_tags_for_resource(&machine_arn("m"))
        .expect("l")
        .is_empty());
    assert!(h
        .engine
        .list_tags_for_resource(&activity_arn("work"))
        .expect("l")
        .is_empty());
}

#[test]
fn activities_are_there_after_a_restart_until_deleted() {
    let h = Harness::new();
    let created = h.engine.create_activity("work").expect("creates");
    h.engine.create_activity("idle").expect("creates");
    let definition = format!(
        r#"{{"StartAt":"W","States":{{"W":{{"Type":"Task","Resource":"{}","End":true}}}}}}"#,
        created.activity_arn
    );
    h.engine
        .create_state_machine("m", &definition, None)
        .expect("creates");
    let arn = h
        .engine
        .start_execution("m", Some("e"), r#"{"job":1}"#)
        .expect("starts")
        .execution_arn;
    h.clock.advance_ms(1_000);
    let h = h.restart(0);
    // Not created again: the registry came back from the log, creation time and all.
    assert_eq!(
        h.engine
            .describe_activity(&created.activity_arn)
            .expect("describes"),
        created
    );
    let names: Vec<String> = h
        .engine
        .list_activities()
        .into_iter()
        .map(|a| a.name)
        .collect();
    assert_eq!(names, ["idle", "work"]);
    // Creating it again is idempotent: same creation time.
    assert_eq!(h.engine.create_activity("work").expect("again"), created);
    let task = block_on(h.engine.get_activity_task(&created.activity_arn, Some("w")))
        .expect("polls")
        .expect("the scheduled task");
    assert_eq!(task.input, r#"{"job":1}"#);
    h.engine
        .send_task_success(&task.task_token, r#"{"ok":true}"#)
        .expect("answers");
    h.engine.wait_idle();
    assert_eq!(
        h.engine.describe_execution(&arn).expect("d").status,
        ExecutionStatus::Succeeded
    );

    h.engine
        .delete_activity(&activity_arn("idle"))
        .expect("deletes");
    let h = h.restart(0);
    assert!(matches!(
        h.engine.describe_activity(&activity_arn("idle")),
        Err(Error::ActivityDoesNotExist { .. })
    ));
    assert!(matches!(
        h.engine.delete_activity(&activity_arn("idle")),
        Err(Error::ActivityDoesNotExist { .. })
    ));
    assert_eq!(h.engine.list_activities().len(), 1);
    assert!(matches!(
        block_on(h.engine.get_activity_task(&activity_arn("idle"), None)),
        Err(Error::ActivityDoesNotExist { .. })
    ));
}

#[test]
fn a_redrive_client_token_answers_the_same_after_a_restart() {
    let h = Harness::new();
    h.engine
        .create_state_machine("f", FAIL, None)
        .expect("creates");
    let arn = h
        .engine
        .start_execution("f", Some("e"), "{}")
        .expect("starts")
        .execution_arn;
    h.engine.wait_idle();
    h.clock.advance_ms(1_000);
    let first = h
        .engine
        .redrive_execution(&arn, Some("token-1"))
        .expect("redrives");
    assert_eq!(first.redrive_count, 1);
    h.engine.wait_idle();
    let h = h.restart(60_000);
    // The execution failed again and is redrivable: only the token stops a second redrive.
    let again = h
        .engine
        .redrive_execution(&arn, Some("token-1"))
        .expect("answers");
    assert_eq!(again, first);
    assert_eq!(h.engine.describe_redrive(&arn).expect("d").redrive_count, 1);
    let second = h
        .engine
        .redrive_execution(&arn, Some("token-2"))
        .expect("redrives");
    assert_eq!(second.redrive_count, 2);
    assert!(second.redrive_ms > first.redrive_ms);
    let h = h.restart(0);
    assert_eq!(
        h.engine
            .redrive_execution(&arn, Some("token-2"))
            .expect("a"),
        second
    );
    assert_eq!(
        h.engine
            .redrive_execution(&arn, Some("token-1"))
            .expect("a"),
        first
    );
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

/// Catalog records in the log, by kind, read with the WAL alone.
fn catalog_record_count(dir: &Path) -> usize {
    let options = WalOptions {
        read_only: true,
        ..WalOptions::default()
    };
    let (wal, _) = Wal::open(dir, options).expect("wal opens");
    let mut count = 0;
    wal.scan_from(Lsn(1), |record| {
        if record.kind.get() == KIND_CATALOG {
            count += 1;
        }
        ControlFlow::Continue(())
    })
    .expect("scans");
    count
}

#[test]
fn compaction_keeps_live_catalog_records_and_only_those() {
    let dir = tempfile::tempdir().expect("dir");
    let clock = ManualClock::new(START_MS);
    let engine = open_small(dir.path(), &clock);
    engine.create_state_machine("m", V2, None).expect("creates");
    engine
        .create_state_machine("f", FAIL, None)
        .expect("creates");
    // Live after all this: activity `keep` (1 record), the machine's last tag set (1), the
    // activity's tag set (1), the token of the redrive of `young-f` (1, written later).
    engine.create_activity("keep").expect("creates");
    engine.create_activity("gone").expect("creates");
    engine
        .delete_activity(&activity_arn("gone"))
        .expect("deletes");
    engine
        .tag_resource(&machine_arn("m"), &tags(&[("v", "1")]))
        .expect("tags");
    engine
        .tag_resource(&machine_arn("m"), &tags(&[("v", "2")]))
        .expect("tags");
    engine
        .tag_resource(&activity_arn("keep"), &tags(&[("k", "v")]))
        .expect("tags");
    engine
        .update_state_machine("m", Some(r#"{"StartAt":"Answer","States":{"Answer":{"Type":"Pass","Result":{"v":3},"End":true}}}"#), None)
        .expect("updates");
    let old_f = engine
        .start_execution("f", Some("old-f"), "{}")
        .expect("starts")
        .execution_arn;
    engine.wait_idle();
    engine
        .redrive_execution(&old_f, Some("old-token"))
        .expect("redrives");
    engine.wait_idle();
    for i in 0..200 {
        engine
            .start_execution(
                "m",
                Some(&format!("old-{i}")),
                &format!("{{\"pad\":\"{}\"}}", "x".repeat(100)),
            )
            .expect("starts");
    }
    engine.wait_idle();
    // Every catalog record written so far is in the log (a read-only WAL needs no lock).
    assert_eq!(catalog_record_count(dir.path()), 7);
    clock.advance_ms(20 * DAY_MS);
    let young_f = engine
        .start_execution("f", Some("young-f"), "{}")
        .expect("starts")
        .execution_arn;
    engine.wait_idle();
    let young_answer = engine
        .redrive_execution(&young_f, Some("young-token"))
        .expect("redrives");
    engine.wait_idle();
    clock.advance_ms(11 * DAY_MS);
    let report = engine.compact().expect("compacts");
    assert!(report.executions_expired_count >= 100, "{report:?}");
    assert!(report.segments_deleted_count > 0, "{report:?}");
    drop(engine);
    // Dead: `gone` created and deleted (2), the first tag set of `m` (1), the token of the
    // expired `old-f` (1). Live: the other four.
    assert_eq!(catalog_record_count(dir.path()), 4);

    let engine = open_small(dir.path(), &clock);
    let names: Vec<String> = engine
        .list_activities()
        .into_iter()
        .map(|a| a.name)
        .collect();
    assert_eq!(names, ["keep"]);
    assert_eq!(
        engine.list_tags_for_resource(&machine_arn("m")).expect("l"),
        tags(&[("v", "2")])
    );
    assert_eq!(
        engine
            .list_tags_for_resource(&activity_arn("keep"))
            .expect("l"),
        tags(&[("k", "v")])
    );
    assert!(engine
        .describe_state_machine("m")
        .expect("d")
        .definition
        .contains(r#""v":3"#));
    assert_eq!(
        engine
            .redrive_execution(&young_f, Some("young-token"))
            .expect("answers"),
        young_answer
    );
    assert!(matches!(
        engine.redrive_execution(&old_f, Some("old-token")),
        Err(Error::ExecutionDoesNotExist { .. })
    ));
    let new = engine
        .start_execution("m", Some("after"), "{}")
        .expect("starts")
        .execution_arn;
    engine.wait_idle();
    assert_eq!(
        engine.describe_execution(&new).expect("d").output,
        Some(json!({"v": 3}))
    );
}

/// This test found two WAL bugs (fixed with it): segments recycled while another was being
/// prepared were used out of id order (the next open reported a zeroed record header), and a
/// copy of a copy recorded the intermediate LSN as its origin (the next open folded an
/// execution's batches out of order).
#[test]
fn catalog_records_survive_repeated_compactions_without_a_restart() {
    // Each compaction copies the live catalog records forward again: a copy of a copy must still
    // be judged live.
    let dir = tempfile::tempdir().expect("dir");
    let clock = ManualClock::new(START_MS);
    let engine = open_small(dir.path(), &clock);
    engine.create_state_machine("m", V2, None).expect("creates");
    engine.create_activity("keep").expect("creates");
    engine
        .tag_resource(&activity_arn("keep"), &tags(&[("k", "v")]))
        .expect("tags");
    engine
        .update_state_machine("m", Some(V1), None)
        .expect("updates");
    let mut copied = 0;
    for round in 0..4 {
        for i in 0..150 {
            engine
                .start_execution(
                    "m",
                    Some(&format!("r{round}-{i}")),
                    &format!("{{\"pad\":\"{}\"}}", "x".repeat(100)),
                )
                .expect("starts");
        }
        // V1 waits a minute: let every execution finish.
        clock.advance_ms(60_000);
        engine.run_due_timers();
        engine.wait_idle();
        clock.advance_ms(31 * DAY_MS);
        let report = engine.compact().expect("compacts");
        copied += report.records_copied_count;
        assert!(
            report.segments_deleted_count > 0,
            "round {round}: {report:?}"
        );
        assert_eq!(engine.list_activities().len(), 1, "round {round}");
    }
    assert!(
        copied >= 4 * 4,
        "the live records were copied every round ({copied})"
    );
    drop(engine);
    assert_eq!(catalog_record_count(dir.path()), 2);
    let engine = open_small(dir.path(), &clock);
    assert_eq!(
        engine
            .describe_activity(&activity_arn("keep"))
            .expect("kept")
            .created_ms,
        START_MS
    );
    assert_eq!(
        engine
            .list_tags_for_resource(&activity_arn("keep"))
            .expect("l"),
        tags(&[("k", "v")])
    );
    assert_eq!(
        engine.describe_state_machine("m").expect("d").definition,
        V1
    );
}
