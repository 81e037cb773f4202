//! Redrive scenarios through the public API on a manual clock: a failed task, the 14-day edge,
//! the event-budget edge, a Parallel with one failed branch of three, a Map with two failed
//! iterations of ten, redrive after redrive, redrive across a restart, a Fail state, a
//! caught-then-rethrown error, a timeout and a stop. Handlers count their invocations: a step
//! that succeeded before the redrive stays at one call.

use crate::engine_common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{json, Value};
use statelog::engine::{
    Engine, EngineOptions, Error, ExecutionStatus, HistoryQuery, ListExecutions, RedriveStatus,
    TaskError,
};
use statelog::history::EventDetails;
use statelog::limits::REDRIVE_WINDOW_MS;

use engine_common::{event_types, Harness};

/// Counts calls per resource; resources in `broken` fail (error `Boom`) while it is set.
#[derive(Clone, Default)]
struct Handlers {
    calls: Arc<Mutex<HashMap<String, usize>>>,
    broken: Arc<AtomicBool>,
}

impl Handlers {
    fn register(&self, engine: &Engine, resource: &str, fails_when_broken: bool) {
        let calls = self.calls.clone();
        let broken = self.broken.clone();
        let name = resource.to_string();
        engine.register_integration(resource, move |input: Value, _ctx: Value| {
            *calls.lock().entry(name.clone()).or_default() += 1;
            let fail = fails_when_broken && broken.load(Ordering::SeqCst);
            let name = name.clone();
            async move {
                if fail {
                    Err(TaskError::new("Boom", format!("{name} is broken")))
                } else {
                    Ok(json!({"by": name, "input": input}))
                }
            }
        });
    }

    fn calls(&self, resource: &str) -> usize {
        self.calls.lock().get(resource).copied().unwrap_or(0)
    }
}

fn lambda(name: &str) -> String {
    format!("arn:aws:lambda:us-east-1:000000000000:function:{name}")
}

fn chain_definition() -> String {
    format!(
        r#"{{
  "StartAt": "A",
  "States": {{
    "A": {{"Type": "Task", "Resource": "{a}", "ResultPath": "$.a", "Next": "B"}},
    "B": {{"Type": "Task", "Resource": "{b}", "ResultPath": "$.b",
           "Parameters": {{"rc.$": "$$.Execution.RedriveCount"}},
           "Retry": [{{"ErrorEquals": ["Boom"], "IntervalSeconds": 1, "MaxAttempts": 1}}],
           "Next": "Done"}},
    "Done": {{"Type": "Pass", "End": true}}
  }}
}}"#,
        a = lambda("a"),
        b = lambda("b")
    )
}

/// Runs the retry backoffs of a failing execution to its close.
fn settle(h: &Harness) {
    for _ in 0..10 {
        h.engine.wait_idle();
        if let Some(due) = h.engine.next_timer_due_ms() {
            let now = h.engine.clock().now_ms();
            // Only short timers (retry backoffs), never the execution's own 1-year timeout.
            if due > now && due - now < 3_600_000 {
                h.clock.advance_ms(due - now);
            }
        }
        h.engine.run_due_timers();
    }
    h.engine.wait_idle();
}

/// The value a gate counter takes when the test releases the failing handlers.
const RELEASED: usize = 1_000;

/// Spins (no sleep) until the history holds `count` events of type `kind`.
fn wait_for_events(engine: &Engine, arn: &str, kind: &str, count: usize) {
    loop {
        let seen = event_types(engine, arn)
            .iter()
            .filter(|t| *t == kind)
            .count();
        if seen >= count {
            return;
        }
        std::thread::yield_now();
    }
}

fn start_failing_chain(h: &Harness, handlers: &Handlers, name: &str) -> String {
    h.engine
        .create_state_machine("chain", &chain_definition(), None)
        .expect("creates");
    handlers.register(&h.engine, &lambda("a"), false);
    handlers.register(&h.engine, &lambda("b"), true);
    handlers.broken.store(true, Ordering::SeqCst);
    let arn = h
        .engine
        .start_execution("chain", Some(name), r#"{"x": 1}"#)
        .expect("starts")
        .execution_arn;
    settle(h);
    let d = h.engine.describe_execution(&arn).expect("describes");
    assert_eq!(d.status, ExecutionStatus::Failed, "{d:?}");
    arn
}

#[test]
fn failed_task_is_rerun_and_successful_steps_are_not() {
    let h = Harness::new();
    let handlers = Handlers::default();
    let arn = start_failing_chain(&h, &handlers, "e1");
    assert_eq!(handlers.calls(&lambda("a")), 1);
    assert_eq!(handlers.calls(&lambda("b")), 2, "one try and one retry");
    let info = h.engine.describe_redrive(&arn).expect("describes");
    assert_eq!(info.redrive_status, RedriveStatus::Redrivable);
    assert_eq!(info.redrive_count, 0);

    handlers.broken.store(false, Ordering::SeqCst);
    h.clock.advance_ms(60_000);
    let outcome = h.engine.redrive_execution(&arn, None).expect("redrives");
    assert_eq!(outcome.redrive_count, 1);
    assert_eq!(outcome.redrive_ms, h.engine.clock().now_ms());
    settle(&h);
    let d = h.engine.describe_execution(&arn).expect("describes");
    assert_eq!(d.status, ExecutionStatus::Succeeded, "{d:?}");
    let output = d.output.expect("output");
    assert_eq!(output["a"]["by"], json!(lambda("a")));
    assert_eq!(output["b"]["by"], json!(lambda("b")));
    assert_eq!(
        output["b"]["input"]["rc"],
        json!(1),
        "$$.Execution.RedriveCount"
    );
    assert_eq!(d.redrive.redrive_count, 1);
    assert_eq!(d.redrive.redrive_status, RedriveStatus::NotRedrivable);
    let listed = h
        .engine
        .list_executions(&ListExecutions::default())
        .expect("lists");
    assert_eq!(listed.executions[0].redrive_count, 1);
    assert_eq!(listed.executions[0].redrive_ms, Some(outcome.redrive_ms));
    assert_eq!(
        handlers.calls(&lambda("a")),
        1,
        "A succeeded before: not rerun"
    );
    assert_eq!(
        handlers.calls(&lambda("b")),
        3,
        "B rerun once (retry counter restarted)"
    );
    let types = event_types(&h.engine, &arn);
    let redriven = types
        .iter()
        .position(|t| t == "ExecutionRedriven")
        .expect("ExecutionRedriven in the history");
    assert_eq!(types[redriven - 1], "ExecutionFailed");
    assert_eq!(types.last().map(String::as_str), Some("ExecutionSucceeded"));
    // The redriven event says which redrive it is.
    let history = h
        .engine
        .get_execution_history(
            &arn,
            &HistoryQuery {
                max_results: 1000,
                ..HistoryQuery::default()
            },
        )
        .expect("history");
    let count = history.events.iter().find_map(|e| match &e.details {
        EventDetails::ExecutionRedriven(r) => Some(r.redrive_count),
        _ => None,
    });
    assert_eq!(count, Some(1));
    // The rerun state is entered again, with the same name and input as the first time.
    let entered: Vec<(String, serde_json::Value)> = history
        .events
        .iter()
        .filter_map(|e| match &e.details {
            EventDetails::TaskStateEntered(d) => {
                Some((d.name.to_string(), serde_json::Value::clone(&d.input)))
            }
            _ => None,
        })
        .collect();
    assert_eq!(types[redriven + 1], "TaskStateEntered");
    assert_eq!(entered.len(), 3, "A, B, then B again: {entered:?}");
    assert_eq!(entered[2], entered[1]);
    let info = h.engine.describe_redrive(&arn).expect("describes");
    assert_eq!(info.redrive_count, 1);
    assert_eq!(info.redrive_ms, Some(outcome.redrive_ms));
    assert_eq!(info.redrive_status, RedriveStatus::NotRedrivable);
    assert!(info
        .redrive_status_reason
        .as_ref()
        .is_some_and(|r| r.to_string().contains("SUCCEEDED")));
    // Redriving a succeeded execution is refused with the reason.
    let err = h.engine.redrive_execution(&arn, None).expect_err("refused");
    assert_eq!(err.aws_name(), "ExecutionNotRedrivable");
}

#[test]
fn the_14_day_window_is_counted_from_the_close() {
    let h = Harness::new();
    let handlers = Handlers::default();
    let arn = start_failing_chain(&h, &handlers, "edge-in");
    let closed = h
        .engine
        .describe_execution(&arn)
        .expect("d")
        .stop_ms
        .expect("closed");
    handlers.broken.store(false, Ordering::SeqCst);
    h.clock
        .advance_ms(closed + REDRIVE_WINDOW_MS - 1 - h.engine.clock().now_ms());
    h.engine
        .redrive_execution(&arn, None)
        .expect("1 ms inside the window");

    // Broken before the start: its handler may run before the next line would.
    handlers.broken.store(true, Ordering::SeqCst);
    let late = h
        .engine
        .start_execution("chain", Some("edge-out"), r#"{"x": 2}"#)
        .expect("starts")
        .execution_arn;
    settle(&h);
    let closed = h
        .engine
        .describe_execution(&late)
        .expect("d")
        .stop_ms
        .expect("closed");
    h.clock
        .advance_ms(closed + REDRIVE_WINDOW_MS + 1 - h.engine.clock().now_ms());
    let info = h.engine.describe_redrive(&late).expect("describes");
    assert_eq!(info.redrive_status, RedriveStatus::NotRedrivable);
    match h.engine.redrive_execution(&late, None) {
        Err(Error::ExecutionNotRedrivable { reason, .. }) => {
            assert!(reason.to_string().contains("redrive window"), "{reason}")
        }
        other => panic!("expected ExecutionNotRedrivable, got {other:?}"),
    }
}

static CAP: AtomicU32 = AtomicU32::new(25_000);

fn capped(options: &mut EngineOptions) {
    options.history_events_max = CAP.load(Ordering::SeqCst);
}

const FAIL_AFTER_MAP: &str = r#"{
  "StartAt": "Spin",
  "States": {
    "Spin": {"Type": "Map", "ItemProcessor": {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}}, "Next": "Stop"},
    "Stop": {"Type": "Fail", "Error": "Done", "Cause": "by design"}
  }
}"#;

#[test]
fn the_event_budget_edge_needs_room_for_two_more_events() {
    // The rule is relative to the cap (AWS: 25,000 events, redrive under 24,999); a small cap
    // exercises the same comparison quickly.
    let h = Harness::new();
    h.engine
        .create_state_machine("spin", FAIL_AFTER_MAP, None)
        .expect("creates");
    let arn = h
        .engine
        .start_execution("spin", Some("measure"), "[1,2,3,4,5]")
        .expect("starts")
        .execution_arn;
    let events = h.engine.describe_execution(&arn).expect("d").event_count;
    drop(h);
    // cap - 2 events: redrivable; cap - 1: not.
    for (cap, redrivable) in [(events + 2, true), (events + 1, false)] {
        CAP.store(cap, Ordering::SeqCst);
        let h = Harness::with_options(capped);
        h.engine
            .create_state_machine("spin", FAIL_AFTER_MAP, None)
            .expect("creates");
        let arn = h
            .engine
            .start_execution("spin", Some("edge"), "[1,2,3,4,5]")
            .expect("starts")
            .execution_arn;
        let d = h.engine.describe_execution(&arn).expect("d");
        assert_eq!(d.event_count, events);
        assert_eq!(d.error.as_deref(), Some("Done"));
        let result = h.engine.redrive_execution(&arn, None);
        assert_eq!(result.is_ok(), redrivable, "cap {cap}: {result:?}");
    }
    CAP.store(25_000, Ordering::SeqCst);
}

#[test]
fn parallel_reruns_only_its_failed_branch() {
    let h = Harness::new();
    let handlers = Handlers::default();
    let definition = format!(
        r#"{{
  "StartAt": "Fan",
  "States": {{
    "Fan": {{"Type": "Parallel", "End": true, "Branches": [
      {{"StartAt": "A", "States": {{"A": {{"Type": "Task", "Resource": "{a}", "End": true}}}}}},
      {{"StartAt": "B", "States": {{"B": {{"Type": "Task", "Resource": "{b}", "End": true}}}}}},
      {{"StartAt": "C", "States": {{"C": {{"Type": "Task", "Resource": "{c}", "End": true}}}}}}
    ]}}
  }}
}}"#,
        a = lambda("a"),
        b = lambda("b"),
        c = lambda("c")
    );
    h.engine
        .create_state_machine("fan", &definition, None)
        .expect("creates");
    // B fails only after A and C answered, so the failure aborts nothing that could succeed.
    let done = Arc::new(AtomicUsize::new(0));
    for name in ["a", "c"] {
        let done = done.clone();
        let calls = handlers.calls.clone();
        let resource = lambda(name);
        h.engine
            .register_integration(&lambda(name), move |input: Value, _c: Value| {
                *calls.lock().entry(resource.clone()).or_default() += 1;
                let done = done.clone();
                let resource = resource.clone();
                let _ = &done;
                async move { Ok(json!({"by": resource, "input": input})) }
            });
    }
    {
        let done = done.clone();
        let calls = handlers.calls.clone();
        let broken = handlers.broken.clone();
        let resource = lambda("b");
        h.engine
            .register_integration(&lambda("b"), move |input: Value, _c: Value| {
                *calls.lock().entry(resource.clone()).or_default() += 1;
                let done = done.clone();
                let fail = broken.load(Ordering::SeqCst);
                let resource = resource.clone();
                async move {
                    while done.load(Ordering::SeqCst) < RELEASED {
                        tokio::task::yield_now().await;
                    }
                    if fail {
                        Err(TaskError::new("Boom", "b is broken"))
                    } else {
                        Ok(json!({"by": resource, "input": input}))
                    }
                }
            });
    }
    handlers.broken.store(true, Ordering::SeqCst);
    let arn = h
        .engine
        .start_execution("fan", Some("p1"), r#"{"k": 1}"#)
        .expect("starts")
        .execution_arn;
    wait_for_events(&h.engine, &arn, "TaskSucceeded", 2);
    done.store(RELEASED, Ordering::SeqCst);
    settle(&h);
    assert_eq!(
        h.engine.describe_execution(&arn).expect("d").status,
        ExecutionStatus::Failed
    );
    handlers.broken.store(false, Ordering::SeqCst);
    h.engine.redrive_execution(&arn, None).expect("redrives");
    settle(&h);
    let d = h.engine.describe_execution(&arn).expect("d");
    assert_eq!(d.status, ExecutionStatus::Succeeded, "{d:?}");
    let output = d.output.expect("output");
    let by: Vec<Value> = output
        .as_array()
        .expect("array")
        .iter()
        .map(|r| r["by"].clone())
        .collect();
    assert_eq!(
        by,
        vec![json!(lambda("a")), json!(lambda("b")), json!(lambda("c"))]
    );
    assert_eq!(handlers.calls(&lambda("a")), 1);
    assert_eq!(handlers.calls(&lambda("b")), 2);
    assert_eq!(handlers.calls(&lambda("c")), 1);
    // Only the failed branch's state is entered again; the Parallel keeps its other branches.
    let types = event_types(&h.engine, &arn);
    let redriven = types
        .iter()
        .position(|t| t == "ExecutionRedriven")
        .expect("redriven");
    let after = &types[redriven..];
    assert_eq!(after[1], "TaskStateEntered", "{after:?}");
    assert_eq!(
        after.iter().filter(|t| *t == "TaskStateEntered").count(),
        1,
        "{after:?}"
    );
    assert!(
        !after.iter().any(|t| t == "ParallelStateEntered"),
        "{after:?}"
    );
}

#[test]
fn map_reruns_only_its_two_failed_iterations_of_ten() {
    let h = Harness::new();
    let definition = format!(
        r#"{{
  "StartAt": "Each",
  "States": {{
    "Each": {{"Type": "Map", "End": true,
      "ItemProcessor": {{"StartAt": "Work", "States": {{"Work": {{"Type": "Task", "Resource": "{w}", "End": true}}}}}}}}
  }}
}}"#,
        w = lambda("work")
    );
    h.engine
        .create_state_machine("each", &definition, None)
        .expect("creates");
    let calls: Arc<Mutex<HashMap<i64, usize>>> = Arc::default();
    let ok = Arc::new(AtomicUsize::new(0));
    let broken = Arc::new(AtomicBool::new(true));
    {
        let calls = calls.clone();
        let ok = ok.clone();
        let broken = broken.clone();
        h.engine
            .register_integration(&lambda("work"), move |input: Value, _c: Value| {
                let item = input.as_i64().unwrap_or(-1);
                *calls.lock().entry(item).or_default() += 1;
                let bad = (item == 3 || item == 7) && broken.load(Ordering::SeqCst);
                let ok = ok.clone();
                async move {
                    if bad {
                        // Fail only once the test saw the eight good answers recorded.
                        while ok.load(Ordering::SeqCst) < RELEASED {
                            tokio::task::yield_now().await;
                        }
                        Err(TaskError::new("Boom", format!("item {item}")))
                    } else {
                        Ok(json!(item * 10))
                    }
                }
            });
    }
    let arn = h
        .engine
        .start_execution("each", Some("m1"), "[0,1,2,3,4,5,6,7,8,9]")
        .expect("starts")
        .execution_arn;
    wait_for_events(&h.engine, &arn, "MapIterationSucceeded", 8);
    ok.store(RELEASED, Ordering::SeqCst);
    settle(&h);
    assert_eq!(
        h.engine.describe_execution(&arn).expect("d").status,
        ExecutionStatus::Failed
    );
    broken.store(false, Ordering::SeqCst);
    h.engine.redrive_execution(&arn, None).expect("redrives");
    settle(&h);
    let d = h.engine.describe_execution(&arn).expect("d");
    assert_eq!(d.status, ExecutionStatus::Succeeded, "{d:?}");
    assert_eq!(
        d.output,
        Some(json!([0, 10, 20, 30, 40, 50, 60, 70, 80, 90]))
    );
    let calls = calls.lock();
    for item in 0..10 {
        let expected = if item == 3 || item == 7 { 2 } else { 1 };
        assert_eq!(calls.get(&item).copied(), Some(expected), "item {item}");
    }
}

#[test]
fn redrive_after_redrive_and_across_a_restart() {
    let h = Harness::new();
    let handlers = Handlers::default();
    let arn = start_failing_chain(&h, &handlers, "twice");
    h.engine
        .redrive_execution(&arn, None)
        .expect("first redrive");
    settle(&h);
    assert_eq!(
        h.engine.describe_execution(&arn).expect("d").status,
        ExecutionStatus::Failed
    );
    let h = h.restart(1_000);
    handlers.register(&h.engine, &lambda("a"), false);
    handlers.register(&h.engine, &lambda("b"), true);
    let info = h.engine.describe_redrive(&arn).expect("describes");
    assert_eq!(info.redrive_count, 1, "the count survives a restart");
    assert_eq!(info.redrive_status, RedriveStatus::Redrivable);
    handlers.broken.store(false, Ordering::SeqCst);
    let outcome = h
        .engine
        .redrive_execution(&arn, Some("tok"))
        .expect("second");
    assert_eq!(outcome.redrive_count, 2);
    // The same client token answers the same redrive.
    let again = h
        .engine
        .redrive_execution(&arn, Some("tok"))
        .expect("idempotent");
    assert_eq!(again, outcome);
    settle(&h);
    let d = h.engine.describe_execution(&arn).expect("d");
    assert_eq!(d.status, ExecutionStatus::Succeeded, "{d:?}");
    assert_eq!(handlers.calls(&lambda("a")), 1);
    let h = h.restart(1_000);
    let info = h.engine.describe_redrive(&arn).expect("describes");
    assert_eq!(info.redrive_count, 2);
    // List filters by redriven / not redriven.
    let redriven = h
        .engine
        .list_executions_by_redrive(&ListExecutions::default(), true)
        .expect("lists");
    assert_eq!(redriven.executions.len(), 1);
    let not = h
        .engine
        .list_executions_by_redrive(&ListExecutions::default(), false)
        .expect("lists");
    assert!(not.executions.is_empty());
}

#[test]
fn redrive_of_a_running_execution_mid_redrive_survives_a_restart() {
    // Redrive, then "crash" while the rerun task waits for a handler: recovery folds
    // ExecutionRedriven and re-dispatches the rerun task.
    let h = Harness::new();
    let handlers = Handlers::default();
    let arn = start_failing_chain(&h, &handlers, "crashy");
    let h = h.restart(0);
    // No handler registered yet: the rerun task parks.
    h.engine.redrive_execution(&arn, None).expect("redrives");
    assert_eq!(
        h.engine.describe_execution(&arn).expect("d").status,
        ExecutionStatus::Running
    );
    let h = h.restart(1_000);
    handlers.broken.store(false, Ordering::SeqCst);
    handlers.register(&h.engine, &lambda("a"), false);
    handlers.register(&h.engine, &lambda("b"), true);
    settle(&h);
    let d = h.engine.describe_execution(&arn).expect("d");
    assert_eq!(d.status, ExecutionStatus::Succeeded, "{d:?}");
    assert_eq!(handlers.calls(&lambda("a")), 1);
}

#[test]
fn fail_state_and_caught_then_rethrown_error() {
    let h = Harness::new();
    let handlers = Handlers::default();
    let definition = format!(
        r#"{{
  "StartAt": "Try",
  "States": {{
    "Try": {{"Type": "Task", "Resource": "{t}",
      "Catch": [{{"ErrorEquals": ["States.ALL"], "ResultPath": "$.err", "Next": "Note"}}], "Next": "Ok"}},
    "Note": {{"Type": "Pass", "Result": "noted", "ResultPath": "$.note", "Next": "Rethrow"}},
    "Rethrow": {{"Type": "Fail", "Error": "Rethrown", "Cause": "caught then failed"}},
    "Ok": {{"Type": "Succeed"}}
  }}
}}"#,
        t = lambda("t")
    );
    h.engine
        .create_state_machine("rethrow", &definition, None)
        .expect("creates");
    handlers.register(&h.engine, &lambda("t"), true);
    handlers.broken.store(true, Ordering::SeqCst);
    let arn = h
        .engine
        .start_execution("rethrow", Some("r1"), "{}")
        .expect("starts")
        .execution_arn;
    settle(&h);
    let d = h.engine.describe_execution(&arn).expect("d");
    assert_eq!(d.error.as_deref(), Some("Rethrown"));
    let before = d.event_count;
    handlers.broken.store(false, Ordering::SeqCst);
    h.engine.redrive_execution(&arn, None).expect("redrives");
    settle(&h);
    let d = h.engine.describe_execution(&arn).expect("d");
    // The unsuccessful step is the Fail state: it fails again; the task is not rerun.
    assert_eq!(d.status, ExecutionStatus::Failed);
    assert_eq!(d.error.as_deref(), Some("Rethrown"));
    assert_eq!(handlers.calls(&lambda("t")), 1);
    let types = event_types(&h.engine, &arn);
    assert_eq!(
        &types[before as usize..],
        ["ExecutionRedriven", "FailStateEntered", "ExecutionFailed"],
        "the rerun Fail state is entered again"
    );
    assert_eq!(h.engine.describe_redrive(&arn).expect("r").redrive_count, 1);
}

#[test]
fn timed_out_and_stopped_executions_are_redriven() {
    let h = Harness::new();
    let handlers = Handlers::default();
    let definition = format!(
        r#"{{"TimeoutSeconds": 5, "StartAt": "Slow",
  "States": {{"Slow": {{"Type": "Task", "Resource": "{s}", "End": true}}}}}}"#,
        s = lambda("slow")
    );
    h.engine
        .create_state_machine("slow", &definition, None)
        .expect("creates");
    // No handler yet: the task waits, the execution times out.
    let timed = h
        .engine
        .start_execution("slow", Some("t1"), r#"{"v": 1}"#)
        .expect("starts")
        .execution_arn;
    h.clock.advance_ms(5_000);
    h.engine.run_due_timers();
    assert_eq!(
        h.engine.describe_execution(&timed).expect("d").status,
        ExecutionStatus::TimedOut
    );
    let stopped = h
        .engine
        .start_execution("slow", Some("s1"), r#"{"v": 2}"#)
        .expect("starts")
        .execution_arn;
    h.engine
        .stop_execution(&stopped, Some("Halt"), Some("by hand"))
        .expect("stops");
    assert_eq!(
        h.engine.describe_execution(&stopped).expect("d").status,
        ExecutionStatus::Aborted
    );
    handlers.register(&h.engine, &lambda("slow"), false);
    h.engine.wait_idle();
    for arn in [&timed, &stopped] {
        h.engine.redrive_execution(arn, None).expect("redrives");
        h.engine.wait_idle();
        let d = h.engine.describe_execution(arn).expect("d");
        assert_eq!(d.status, ExecutionStatus::Succeeded, "{d:?}");
        assert_eq!(d.output.expect("output")["input"], d.input);
    }
}

#[test]
fn after_data_limit_exceeded_a_parallel_reruns_whole() {
    let h = Harness::new();
    let handlers = Handlers::default();
    let definition = format!(
        r#"{{
  "StartAt": "Fan",
  "States": {{
    "Fan": {{"Type": "Parallel", "End": true, "Branches": [
      {{"StartAt": "A", "States": {{"A": {{"Type": "Task", "Resource": "{a}", "End": true}}}}}},
      {{"StartAt": "B", "States": {{"B": {{"Type": "Task", "Resource": "{b}", "End": true}}}}}}
    ]}}
  }}
}}"#,
        a = lambda("a"),
        b = lambda("big")
    );
    h.engine
        .create_state_machine("limit", &definition, None)
        .expect("creates");
    handlers.register(&h.engine, &lambda("a"), false);
    let gate = Arc::new(AtomicUsize::new(0));
    {
        let calls = handlers.calls.clone();
        let broken = handlers.broken.clone();
        let gate = gate.clone();
        h.engine
            .register_integration(&lambda("big"), move |_input: Value, _c: Value| {
                *calls.lock().entry(lambda("big")).or_default() += 1;
                let huge = broken.load(Ordering::SeqCst);
                let gate = gate.clone();
                async move {
                    while huge && gate.load(Ordering::SeqCst) < RELEASED {
                        tokio::task::yield_now().await;
                    }
                    if huge {
                        Ok(json!("x".repeat(300 * 1024)))
                    } else {
                        Ok(json!("small"))
                    }
                }
            });
    }
    handlers.broken.store(true, Ordering::SeqCst);
    let arn = h
        .engine
        .start_execution("limit", Some("l1"), "{}")
        .expect("starts")
        .execution_arn;
    // Let A answer first so only the rule (not an abort) can make it rerun.
    wait_for_events(&h.engine, &arn, "TaskSucceeded", 1);
    gate.store(RELEASED, Ordering::SeqCst);
    settle(&h);
    let d = h.engine.describe_execution(&arn).expect("d");
    assert_eq!(
        d.error.as_deref(),
        Some("States.DataLimitExceeded"),
        "{d:?}"
    );
    handlers.broken.store(false, Ordering::SeqCst);
    h.engine.redrive_execution(&arn, None).expect("redrives");
    settle(&h);
    let d = h.engine.describe_execution(&arn).expect("d");
    assert_eq!(d.status, ExecutionStatus::Succeeded, "{d:?}");
    assert_eq!(handlers.calls(&lambda("a")), 2, "the whole Parallel reran");
    assert_eq!(handlers.calls(&lambda("big")), 2);
}

/// A Distributed Map whose `ItemReader` is combined with an `ItemsPath` (not built yet) is
/// refused when created or updated, with `InvalidDefinition` naming the field; one over its
/// input's items is accepted.
#[test]
fn a_distributed_map_with_an_item_reader_is_refused() {
    use statelog::asl::DiagnosticCode;
    let h = Harness::new();
    let processor = r#"{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}"#;
    let distributed = r#"{"StartAt":"M","States":{"M":{"Type":"Map","End":true,
        "ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"STANDARD"},
          "StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}}}}"#;
    let reader = r#"{"StartAt":"M","States":{"M":{"Type":"Map","End":true,"ItemsPath":"$.items",
        "ItemReader":{"Resource":"arn:aws:states:::s3:getObject","Parameters":{"Bucket":"b","Key":"k"}},
        "ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"STANDARD"},
          "StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}}}}"#;
    let path = "/States/M/ItemReader";
    h.engine
        .create_state_machine("dm-items", distributed, None)
        .expect("a Distributed Map over its input's items is accepted");
    let refused = |result: Result<(), Error>| match result {
        Err(Error::InvalidDefinition { diagnostics }) => {
            assert!(
                diagnostics.iter().any(|d| d.path == path
                    && d.code == DiagnosticCode::UnsupportedFeature
                    && d.message.contains("Distributed Map")),
                "{diagnostics:?}"
            );
        }
        other => panic!("{path}: {other:?}"),
    };
    refused(
        h.engine
            .create_state_machine("dm", reader, None)
            .map(|_| ()),
    );
    // Nor can an existing machine become one.
    h.engine
        .create_state_machine(
            "inline",
            &format!(
                r#"{{"StartAt":"M","States":{{"M":{{"Type":"Map","End":true,"ItemProcessor":{processor}}}}}}}"#
            ),
            None,
        )
        .expect("an inline Map is fine");
    refused(
        h.engine
            .update_state_machine("inline", Some(reader), None)
            .map(|_| ()),
    );
    assert!(h
        .engine
        .list_state_machines()
        .iter()
        .all(|m| m.name != "dm"));
}
