//! Workflow variables are part of the folded execution state: a restart folds them back from
//! the log (a state after the restart reads what a state before it assigned), and a redrive
//! reruns the failed state with the values it saw the first time (top level, and inside a Map
//! iteration, whose own values survive its failure).

use crate::engine_common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use statelog::engine::{Engine, ExecutionStatus, TaskError};

use engine_common::Harness;

const ECHO: &str = "arn:aws:lambda:us-east-1:000000000000:function:echo";

/// Registers `ECHO`: answers its input, or fails with `Boom` while `broken` is set.
fn register_echo(engine: &Engine, broken: &Arc<AtomicBool>) {
    let broken = broken.clone();
    engine.register_integration(ECHO, move |input: Value, _ctx: Value| {
        let fail = broken.load(Ordering::SeqCst);
        async move {
            if fail {
                Err(TaskError::new("Boom", "echo is broken"))
            } else {
                Ok(input)
            }
        }
    });
}

fn output(h: &Harness, arn: &str) -> Value {
    let d = h.engine.describe_execution(arn).expect("describes");
    assert_eq!(d.status, ExecutionStatus::Succeeded, "{d:?}");
    d.output.expect("output")
}

#[test]
fn variables_assigned_before_a_restart_are_read_after_it() {
    let h = Harness::new();
    let definition = r#"{"StartAt": "Set", "States": {
        "Set": {"Type": "Pass", "Assign": {"x": {"deep": [1, "two"]}, "n": 7}, "Next": "Nap"},
        "Nap": {"Type": "Wait", "Seconds": 3600, "Assign": {"n.$": "States.MathAdd($n, 1)"}, "Next": "Read"},
        "Read": {"Type": "Pass", "Parameters": {"x.$": "$x", "n.$": "$n"}, "End": true}}}"#;
    h.engine
        .create_state_machine("vars", definition, None)
        .expect("creates");
    let arn = h
        .engine
        .start_execution("vars", Some("e1"), "{}")
        .expect("starts")
        .execution_arn;
    h.engine.wait_idle();
    // A crash while the Wait waits: the log alone has the variables.
    let h = h.restart(0);
    h.tick(3_600_000);
    assert_eq!(output(&h, &arn), json!({"x": {"deep": [1, "two"]}, "n": 8}));
}

#[test]
fn a_redriven_state_sees_the_values_it_saw_the_first_time() {
    let h = Harness::new();
    let broken = Arc::new(AtomicBool::new(true));
    register_echo(&h.engine, &broken);
    let definition = format!(
        r#"{{"StartAt": "Set", "States": {{
        "Set": {{"Type": "Pass", "Assign": {{"x": 1}}, "Next": "Call"}},
        "Call": {{"Type": "Task", "Resource": "{ECHO}", "Parameters": {{"x.$": "$x"}},
                  "Assign": {{"x": 2, "seen.$": "$.x"}}, "Next": "Read"}},
        "Read": {{"Type": "Pass", "Parameters": {{"x.$": "$x", "seen.$": "$seen"}}, "End": true}}}}}}"#
    );
    h.engine
        .create_state_machine("vars", &definition, None)
        .expect("creates");
    let arn = h
        .engine
        .start_execution("vars", Some("e1"), "{}")
        .expect("starts")
        .execution_arn;
    h.engine.wait_idle();
    let d = h.engine.describe_execution(&arn).expect("describes");
    assert_eq!(d.status, ExecutionStatus::Failed, "{d:?}");
    // Across a restart too: the redrive folds the variables back from the log.
    let h = h.restart(1_000);
    register_echo(&h.engine, &broken);
    broken.store(false, Ordering::SeqCst);
    h.engine.redrive_execution(&arn, None).expect("redrives");
    h.engine.wait_idle();
    assert_eq!(output(&h, &arn), json!({"x": 2, "seen": 1}));
}

#[test]
fn a_redriven_map_iteration_keeps_its_own_values() {
    let h = Harness::new();
    let broken = Arc::new(AtomicBool::new(true));
    register_echo(&h.engine, &broken);
    let definition = format!(
        r#"{{"StartAt": "Set", "States": {{
        "Set": {{"Type": "Pass", "Assign": {{"base": 10}}, "Next": "M"}},
        "M": {{"Type": "Map", "ItemProcessor": {{"StartAt": "Own", "States": {{
            "Own": {{"Type": "Pass", "Assign": {{"mine.$": "$"}}, "Next": "Call"}},
            "Call": {{"Type": "Task", "Resource": "{ECHO}",
                      "Parameters": {{"mine.$": "$mine", "base.$": "$base"}}, "End": true}}}}}},
            "End": true}}}}}}"#
    );
    h.engine
        .create_state_machine("vars", &definition, None)
        .expect("creates");
    let arn = h
        .engine
        .start_execution("vars", Some("e1"), "[1, 2]")
        .expect("starts")
        .execution_arn;
    h.engine.wait_idle();
    let d = h.engine.describe_execution(&arn).expect("describes");
    assert_eq!(d.status, ExecutionStatus::Failed, "{d:?}");
    broken.store(false, Ordering::SeqCst);
    h.engine.redrive_execution(&arn, None).expect("redrives");
    h.engine.wait_idle();
    assert_eq!(
        output(&h, &arn),
        json!([{"mine": 1, "base": 10}, {"mine": 2, "base": 10}])
    );
    // The iterations reran from their failed Task: `Own`, which assigned `mine`, ran once
    // per iteration (with `Set`: three Pass entries), so the rerun read the kept value.
    let passes = engine_common::event_types(&h.engine, &arn)
        .iter()
        .filter(|t| *t == "PassStateEntered")
        .count();
    assert_eq!(passes, 3);
}
