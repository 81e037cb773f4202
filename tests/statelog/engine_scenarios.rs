//! Engine scenarios through the public API on a manual clock: Pass/Choice chains, Task handlers
//! succeeding and failing, Retry with a durable backoff across a restart, Catch, Wait, Parallel,
//! Map, the execution's TimeoutSeconds, stop, name idempotency, pagination, the history cap and
//! the typed errors. Nothing sleeps: tests move the clock and call `run_due_timers`, and
//! `wait_idle` waits for handler answers to be recorded; the Wait, backoff and timeout tests
//! run on `testing::TestEngine`, whose `advance` and `skip_ahead` do both.

use crate::engine_common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use std::time::Duration;

use serde_json::{json, Value};
use statelog::engine::testing::{SkipStop, TestEngine, TEST_CLOCK_START_MS};
use statelog::engine::{Engine, Error, ExecutionStatus, HistoryQuery, ListExecutions, TaskError};

use engine_common::{event_types, Harness};

const CHAIN: &str = r#"{
  "StartAt": "Init",
  "States": {
    "Init": {"Type": "Pass", "Parameters": {"n.$": "$.n", "tag.$": "States.Format('n={}', $.n)"}, "Next": "Big?"},
    "Big?": {"Type": "Choice", "Choices": [{"Variable": "$.n", "NumericGreaterThan": 10, "Next": "Big"}], "Default": "Small"},
    "Big": {"Type": "Pass", "Result": "big", "ResultPath": "$.size", "End": true},
    "Small": {"Type": "Pass", "Result": "small", "ResultPath": "$.size", "End": true}
  }
}"#;

#[test]
fn pass_and_choice_chain_runs_to_the_end_in_one_call() {
    let h = Harness::new();
    h.engine
        .create_state_machine("chain", CHAIN, None)
        .expect("creates");
    let started = h
        .engine
        .start_execution("chain", Some("e1"), r#"{"n": 42}"#)
        .expect("starts");
    assert_eq!(
        started.execution_arn,
        "arn:aws:states:us-east-1:000000000000:execution:chain:e1"
    );
    let d = h
        .engine
        .describe_execution(&started.execution_arn)
        .expect("describes");
    assert_eq!(d.status, ExecutionStatus::Succeeded);
    assert_eq!(
        d.output,
        Some(json!({"n": 42, "tag": "n=42", "size": "big"}))
    );
    assert_eq!(d.input, json!({"n": 42}));
    assert_eq!(d.start_ms, h.start_ms);
    assert_eq!(d.stop_ms, Some(h.start_ms));
    let types = event_types(&h.engine, &started.execution_arn);
    assert_eq!(types.first().map(String::as_str), Some("ExecutionStarted"));
    assert_eq!(types.last().map(String::as_str), Some("ExecutionSucceeded"));
    assert_eq!(d.event_count as usize, types.len());
    assert!(types.contains(&"ChoiceStateEntered".to_string()));
    let small = h
        .engine
        .start_execution("chain", None, r#"{"n": 1}"#)
        .expect("starts");
    let d = h
        .engine
        .describe_execution(&small.execution_arn)
        .expect("describes");
    assert_eq!(d.output.expect("output")["size"], "small");
}

const TASK_WITH_RETRY: &str = r#"{
  "StartAt": "Charge",
  "States": {
    "Charge": {
      "Type": "Task", "Resource": "arn:aws:lambda:us-east-1:000000000000:function:charge",
      "Retry": [{"ErrorEquals": ["Flaky"], "IntervalSeconds": 600, "MaxAttempts": 2, "BackoffRate": 1.0}],
      "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Refund"}],
      "End": true
    },
    "Refund": {"Type": "Pass", "End": true}
  }
}"#;
const CHARGE: &str = "arn:aws:lambda:us-east-1:000000000000:function:charge";

#[test]
fn task_handler_success_becomes_the_output() {
    let h = Harness::new();
    h.engine
        .create_state_machine("pay", TASK_WITH_RETRY, None)
        .expect("creates");
    h.engine
        .register_integration(CHARGE, |input: Value, context: Value| async move {
            assert!(context["AttemptId"]
                .as_str()
                .is_some_and(|a| a.ends_with("/3")));
            Ok::<_, TaskError>(json!({"charged": input["amount"]}))
        });
    let arn = h
        .engine
        .start_execution("pay", Some("p1"), r#"{"amount": 5}"#)
        .expect("starts")
        .execution_arn;
    h.engine.wait_idle();
    let d = h.engine.describe_execution(&arn).expect("describes");
    assert_eq!(
        d.status,
        ExecutionStatus::Succeeded,
        "{:?}",
        h.engine.background_errors()
    );
    assert_eq!(d.output, Some(json!({"charged": 5})));
    let types = event_types(&h.engine, &arn);
    for t in [
        "TaskScheduled",
        "TaskStarted",
        "TaskSucceeded",
        "TaskStateExited",
    ] {
        assert!(types.iter().any(|x| x == t), "{t} missing from {types:?}");
    }
}

#[test]
fn task_failure_not_retried_is_caught() {
    let h = Harness::new();
    h.engine
        .create_state_machine("pay", TASK_WITH_RETRY, None)
        .expect("creates");
    h.engine
        .register_integration(CHARGE, |_input: Value, _context: Value| async move {
            Err::<Value, _>(TaskError::new("Declined", "card refused"))
        });
    let arn = h
        .engine
        .start_execution("pay", None, r#"{"amount": 5}"#)
        .expect("starts")
        .execution_arn;
    h.engine.wait_idle();
    let d = h.engine.describe_execution(&arn).expect("describes");
    assert_eq!(d.status, ExecutionStatus::Succeeded);
    assert_eq!(
        d.output,
        Some(json!({"amount": 5, "error": {"Error": "Declined", "Cause": "card refused"}}))
    );
    assert!(event_types(&h.engine, &arn).contains(&"TaskFailed".to_string()));
}

#[test]
fn retry_backoff_is_a_durable_timer_that_survives_a_restart() {
    let test = TestEngine::new().expect("opens");
    test.create_state_machine("pay", TASK_WITH_RETRY, None)
        .expect("creates");
    let calls = Arc::new(AtomicUsize::new(0));
    let handler = {
        let calls = calls.clone();
        move |_input: Value, _context: Value| {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            async move {
                if n == 0 {
                    Err(TaskError::new("Flaky", "try later"))
                } else {
                    Ok(json!("paid"))
                }
            }
        }
    };
    test.register_integration(CHARGE, handler.clone());
    let arn = test
        .start_execution("pay", Some("r1"), "{}")
        .expect("starts")
        .execution_arn;
    test.settle();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let due = test.next_timer_due_ms().expect("backoff armed");
    assert_eq!(due, TEST_CLOCK_START_MS + 600_000);

    // Crash during the 10-minute backoff: reopen on the same log five minutes later.
    assert_eq!(test.advance(Duration::from_secs(300)), 0);
    let test = test.restart().expect("reopens");
    test.register_integration(CHARGE, handler);
    assert_eq!(
        test.describe_execution(&arn).expect("describes").status,
        ExecutionStatus::Running
    );
    assert_eq!(
        test.next_timer_due_ms(),
        Some(due),
        "the wait resumes, not restarts"
    );
    assert_eq!(test.run_due_timers(), 0);
    assert_eq!(calls.load(Ordering::SeqCst), 1, "not retried early");
    assert_eq!(test.advance(Duration::from_secs(300)), 1);
    let d = test.describe_execution(&arn).expect("describes");
    assert_eq!(
        d.status,
        ExecutionStatus::Succeeded,
        "{:?}",
        test.background_errors()
    );
    assert_eq!(d.output, Some(json!("paid")));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[test]
fn a_task_unanswered_at_a_crash_is_dispatched_again_with_the_same_attempt_id() {
    let h = Harness::new();
    h.engine
        .create_state_machine("pay", TASK_WITH_RETRY, None)
        .expect("creates");
    // No handler yet: the task is scheduled and waits.
    let arn = h
        .engine
        .start_execution("pay", Some("q"), "{}")
        .expect("starts")
        .execution_arn;
    let h = h.restart(1_000);
    let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let log = seen.clone();
    h.engine
        .register_integration(CHARGE, move |_input: Value, context: Value| {
            log.lock().push(context["AttemptId"].clone());
            async move { Ok::<_, TaskError>(json!(1)) }
        });
    h.engine.wait_idle();
    assert_eq!(
        h.engine.describe_execution(&arn).expect("describes").status,
        ExecutionStatus::Succeeded
    );
    assert_eq!(*seen.lock(), vec![json!(format!("{arn}/3"))]);
}

#[test]
fn wait_state_is_armed_then_fired_by_the_clock() {
    let test = TestEngine::new().expect("opens");
    let def = r#"{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":10,"Next":"Done"},"Done":{"Type":"Succeed"}}}"#;
    test.create_state_machine("wait", def, None)
        .expect("creates");
    let arn = test
        .start_execution("wait", None, r#"{"a":1}"#)
        .expect("starts")
        .execution_arn;
    assert_eq!(
        test.describe_execution(&arn).expect("d").status,
        ExecutionStatus::Running
    );
    assert_eq!(test.advance(Duration::from_millis(9_999)), 0);
    assert_eq!(test.advance(Duration::from_millis(1)), 1);
    let d = test.describe_execution(&arn).expect("d");
    assert_eq!(d.status, ExecutionStatus::Succeeded);
    assert_eq!(d.output, Some(json!({"a": 1})));
    assert_eq!(d.stop_ms, Some(TEST_CLOCK_START_MS + 10_000));
}

#[test]
fn parallel_and_map_collect_results_in_order() {
    let h = Harness::new();
    let def = r#"{
      "StartAt": "Both",
      "States": {
        "Both": {"Type": "Parallel", "Next": "Each", "ResultPath": "$.both", "Branches": [
          {"StartAt": "A", "States": {"A": {"Type": "Pass", "Result": 1, "End": true}}},
          {"StartAt": "B", "States": {"B": {"Type": "Pass", "Result": 2, "End": true}}}
        ]},
        "Each": {"Type": "Map", "ItemsPath": "$.items", "ResultPath": "$.doubled", "End": true,
          "ItemProcessor": {"StartAt": "D", "States": {"D": {"Type": "Pass", "Parameters": {"v.$": "States.MathAdd($, $)"}, "End": true}}}}
      }
    }"#;
    h.engine
        .create_state_machine("pm", def, None)
        .expect("creates");
    let arn = h
        .engine
        .start_execution("pm", None, r#"{"items": [1, 2, 3]}"#)
        .expect("starts")
        .execution_arn;
    let d = h.engine.describe_execution(&arn).expect("d");
    assert_eq!(d.status, ExecutionStatus::Succeeded, "{d:?}");
    assert_eq!(
        d.output,
        Some(
            json!({"items": [1, 2, 3], "both": [1, 2], "doubled": [{"v": 2}, {"v": 4}, {"v": 6}]})
        )
    );
}

#[test]
fn execution_timeout_and_stop_close_a_waiting_execution() {
    let test = TestEngine::new().expect("opens");
    let def = r#"{"TimeoutSeconds": 5, "StartAt":"W","States":{"W":{"Type":"Wait","Seconds":100,"End":true}}}"#;
    test.create_state_machine("slow", def, None)
        .expect("creates");
    let timed = test
        .start_execution("slow", Some("t"), "{}")
        .expect("starts")
        .execution_arn;
    let stopped = test
        .start_execution("slow", Some("s"), "{}")
        .expect("starts")
        .execution_arn;
    let stop_ms = test
        .stop_execution(&stopped, Some("Halt"), Some("by test"))
        .expect("stops");
    assert_eq!(stop_ms, TEST_CLOCK_START_MS);
    let d = test.describe_execution(&stopped).expect("d");
    assert_eq!(d.status, ExecutionStatus::Aborted);
    assert_eq!(
        (d.error.as_deref(), d.cause.as_deref()),
        (Some("Halt"), Some("by test"))
    );
    assert_eq!(
        test.stop_execution(&stopped, None, None)
            .expect("idempotent"),
        stop_ms
    );

    // The execution's timeout fires at 5 s; the Wait's 100 s never comes.
    assert_eq!(test.skip_ahead().stop, SkipStop::NoneOpen);
    assert_eq!(test.now_ms(), TEST_CLOCK_START_MS + 5_000);
    let d = test.describe_execution(&timed).expect("d");
    assert_eq!(d.status, ExecutionStatus::TimedOut);
    assert_eq!(d.error.as_deref(), Some("States.Timeout"));
    assert_eq!(
        event_types(&test, &timed).last().map(String::as_str),
        Some("ExecutionTimedOut")
    );
    assert_eq!(test.open_execution_count(), 0);
}

#[test]
fn names_are_idempotent_while_running_as_aws() {
    let h = Harness::new();
    let def = r#"{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":1,"End":true}}}"#;
    h.engine
        .create_state_machine("m", def, None)
        .expect("creates");
    let first = h
        .engine
        .start_execution("m", Some("n"), r#"{"x":1}"#)
        .expect("starts");
    let again = h
        .engine
        .start_execution("m", Some("n"), r#"{ "x" : 1 }"#)
        .expect("same input");
    assert_eq!(first, again);
    let other = h.engine.start_execution("m", Some("n"), r#"{"x":2}"#);
    assert!(matches!(other, Err(Error::ExecutionAlreadyExists { .. })));
    h.clock.advance_ms(1_000);
    h.engine.run_due_timers();
    let closed = h.engine.start_execution("m", Some("n"), r#"{"x":1}"#);
    let error = closed.expect_err("closed executions keep their name");
    assert_eq!(error.aws_name(), "ExecutionAlreadyExists");
    assert_eq!(
        h.engine
            .start_execution("m", Some("bad name"), "{}")
            .expect_err("refused")
            .aws_name(),
        "InvalidName"
    );
    assert_eq!(
        h.engine
            .start_execution("m", None, "{nope")
            .expect_err("refused")
            .aws_name(),
        "InvalidExecutionInput"
    );
    assert_eq!(
        h.engine
            .start_execution("zz", None, "{}")
            .expect_err("refused")
            .aws_name(),
        "StateMachineDoesNotExist"
    );
}

#[test]
fn executions_and_histories_paginate_both_ways() {
    let h = Harness::new();
    h.engine
        .create_state_machine("chain", CHAIN, None)
        .expect("creates");
    let mut arns = Vec::new();
    for i in 0..25 {
        arns.push(
            h.engine
                .start_execution("chain", Some(&format!("e{i:02}")), r#"{"n":1}"#)
                .expect("starts")
                .execution_arn,
        );
    }
    let mut listed = Vec::new();
    let mut request = ListExecutions {
        state_machine: Some("chain".into()),
        max_results: 10,
        ..Default::default()
    };
    loop {
        let page = h.engine.list_executions(&request).expect("lists");
        assert!(page.executions.len() <= 10);
        listed.extend(page.executions.into_iter().map(|e| e.execution_arn));
        match page.next_token {
            Some(token) => request.next_token = Some(token),
            None => break,
        }
    }
    arns.reverse();
    assert_eq!(listed, arns, "newest first, each once");
    let running = ListExecutions {
        status_filter: Some(ExecutionStatus::Running),
        ..Default::default()
    };
    assert!(h
        .engine
        .list_executions(&running)
        .expect("lists")
        .executions
        .is_empty());
    let bad = ListExecutions {
        next_token: Some("garbage".into()),
        ..Default::default()
    };
    assert_eq!(
        h.engine
            .list_executions(&bad)
            .expect_err("bad token")
            .aws_name(),
        "InvalidToken"
    );

    let arn = &arns[0];
    let all = h
        .engine
        .get_execution_history(arn, &HistoryQuery::default())
        .expect("reads")
        .events;
    for reverse in [false, true] {
        let mut query = HistoryQuery {
            max_results: 3,
            reverse_order: reverse,
            ..Default::default()
        };
        let mut ids = Vec::new();
        loop {
            let page = h.engine.get_execution_history(arn, &query).expect("reads");
            ids.extend(page.events.iter().map(|e| e.id.0));
            match page.next_token {
                Some(token) => query.next_token = Some(token),
                None => break,
            }
        }
        let mut expected: Vec<u32> = all.iter().map(|e| e.id.0).collect();
        if reverse {
            expected.reverse();
        }
        assert_eq!(ids, expected);
    }
    let too_many = HistoryQuery {
        max_results: 1001,
        ..Default::default()
    };
    assert!(matches!(
        h.engine.get_execution_history(arn, &too_many),
        Err(Error::InvalidArgument { .. })
    ));
    let json = h
        .engine
        .get_execution_history(arn, &HistoryQuery::default())
        .expect("reads")
        .to_aws_json();
    assert_eq!(json["events"][0]["type"], "ExecutionStarted");
    assert_eq!(json["events"][0]["id"], 1);
}

#[test]
fn the_history_cap_fails_the_execution_as_aws_does() {
    let h = Harness::with_options(|o| o.history_events_max = 10);
    let def = r#"{"StartAt":"A","States":{
      "A":{"Type":"Pass","Next":"B"},
      "B":{"Type":"Choice","Choices":[{"Variable":"$.stop","IsPresent":true,"Next":"End"}],"Default":"A"},
      "End":{"Type":"Succeed"}}}"#;
    h.engine
        .create_state_machine("loop", def, None)
        .expect("creates");
    let arn = h
        .engine
        .start_execution("loop", None, "{}")
        .expect("starts")
        .execution_arn;
    let d = h.engine.describe_execution(&arn).expect("d");
    assert_eq!(d.status, ExecutionStatus::Failed);
    assert_eq!(d.event_count, 10);
    assert_eq!(d.error.as_deref(), Some("States.Runtime"));
    assert_eq!(
        d.cause.as_deref(),
        Some("The execution reached the maximum number of history events (10).")
    );
}

#[test]
fn bad_definitions_and_unknown_things_are_typed_errors() {
    let h = Harness::new();
    let error = h
        .engine
        .create_state_machine(
            "bad",
            r#"{"StartAt":"Nope","States":{"A":{"Type":"Pass","End":true}}}"#,
            None,
        )
        .expect_err("invalid");
    assert_eq!(error.aws_name(), "InvalidDefinition");
    let Error::InvalidDefinition { diagnostics } = error else {
        unreachable!()
    };
    assert!(!diagnostics.is_empty());
    assert!(
        h.engine.list_state_machines().is_empty(),
        "nothing persisted"
    );
    assert_eq!(
        h.engine
            .describe_execution("arn:aws:states:us-east-1:000000000000:execution:x:y")
            .expect_err("none")
            .aws_name(),
        "ExecutionDoesNotExist"
    );
    h.engine
        .create_state_machine("chain", CHAIN, None)
        .expect("creates");
    h.engine
        .create_state_machine("chain", CHAIN, None)
        .expect("idempotent");
    assert_eq!(
        h.engine
            .create_state_machine(
                "chain",
                r#"{"StartAt":"A","States":{"A":{"Type":"Succeed"}}}"#,
                None
            )
            .expect_err("exists")
            .aws_name(),
        "StateMachineAlreadyExists"
    );
    let described = h
        .engine
        .describe_state_machine(&h.engine.state_machine_arn("chain"))
        .expect("by arn");
    assert_eq!(described.name, "chain");
    h.engine.delete_state_machine("chain").expect("deletes");
    assert_eq!(
        h.engine
            .describe_state_machine("chain")
            .expect_err("gone")
            .aws_name(),
        "StateMachineDoesNotExist"
    );
}

#[test]
fn a_reopened_engine_sees_every_machine_and_execution() {
    let h = Harness::new();
    h.engine
        .create_state_machine("chain", CHAIN, None)
        .expect("creates");
    let arn = h
        .engine
        .start_execution("chain", Some("kept"), r#"{"n":3}"#)
        .expect("starts")
        .execution_arn;
    let before = h.engine.describe_execution(&arn).expect("d");
    let history = h
        .engine
        .get_execution_history(&arn, &HistoryQuery::default())
        .expect("h");
    let h = h.restart(0);
    assert_eq!(h.engine.describe_execution(&arn).expect("d"), before);
    assert_eq!(
        h.engine
            .get_execution_history(&arn, &HistoryQuery::default())
            .expect("h"),
        history
    );
    assert_eq!(h.engine.list_state_machines().len(), 1);
    let _: &Engine = &h.engine;
}

#[test]
fn a_task_timeout_fires_on_the_clock_and_cancels_the_handler() {
    let h = Harness::new();
    let def = r#"{"StartAt":"Slow","States":{"Slow":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:000000000000:function:slow","TimeoutSeconds":5,"End":true}}}"#;
    h.engine
        .create_state_machine("slow", def, None)
        .expect("creates");
    let (release, wait) = tokio::sync::oneshot::channel::<()>();
    let wait = Arc::new(parking_lot::Mutex::new(Some(wait)));
    h.engine.register_integration(
        "arn:aws:lambda:us-east-1:000000000000:function:slow",
        move |_input: Value, _context: Value| {
            let wait = wait.lock().take();
            async move {
                if let Some(wait) = wait {
                    let _ = wait.await;
                }
                Ok::<_, TaskError>(json!("too late"))
            }
        },
    );
    let arn = h
        .engine
        .start_execution("slow", None, "{}")
        .expect("starts")
        .execution_arn;
    h.clock.advance_ms(4_999);
    assert_eq!(h.engine.run_due_timers(), 0);
    h.clock.advance_ms(1);
    assert_eq!(h.engine.run_due_timers(), 1);
    let d = h.engine.describe_execution(&arn).expect("d");
    assert_eq!(d.status, ExecutionStatus::Failed);
    assert_eq!(d.error.as_deref(), Some("States.Timeout"));
    let count = d.event_count;
    // The timed-out task's handler was cancelled: its future (and the receiver it held) is gone.
    h.engine.wait_idle();
    assert!(release.send(()).is_err(), "the handler was cancelled");
    let d = h.engine.describe_execution(&arn).expect("d");
    assert_eq!(d.event_count, count, "nothing more is recorded");
    assert!(
        h.engine.background_errors().is_empty(),
        "{:?}",
        h.engine.background_errors()
    );
}

#[test]
fn many_threads_run_many_executions_with_handlers_concurrently() {
    let h = Harness::new();
    h.engine
        .create_state_machine("pay", TASK_WITH_RETRY, None)
        .expect("creates");
    h.engine
        .register_integration(CHARGE, |input: Value, _context: Value| async move {
            Ok::<_, TaskError>(json!({"paid": input["i"]}))
        });
    let threads = 8;
    let per_thread = 25;
    let arns: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let engine = h.engine.clone();
                scope.spawn(move || {
                    (0..per_thread)
                        .map(|k| {
                            let i = t * per_thread + k;
                            engine
                                .start_execution(
                                    "pay",
                                    Some(&format!("c{i}")),
                                    &json!({"i": i}).to_string(),
                                )
                                .expect("starts")
                                .execution_arn
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|t| t.join().expect("thread"))
            .collect()
    });
    assert_eq!(arns.len(), threads * per_thread);
    for arn in &arns {
        let d = h.engine.wait_until_closed(arn).expect("closes");
        assert_eq!(d.status, ExecutionStatus::Succeeded);
        assert_eq!(d.output.as_ref().expect("output")["paid"], d.input["i"]);
        let events = h
            .engine
            .get_execution_history(
                arn,
                &HistoryQuery {
                    max_results: 1000,
                    ..Default::default()
                },
            )
            .expect("history")
            .events;
        statelog::history::check_sequence(0, &events).expect("contiguous");
    }
    fn send_sync<T: Send + Sync + Clone>() {}
    send_sync::<Engine>();
}

#[test]
fn timers_of_closed_executions_do_not_pile_up() {
    let h = Harness::with_options(|o| o.durability = statelog_wal::Durability::NoSync);
    let def = r#"{"TimeoutSeconds": 100000, "StartAt":"W","States":{"W":{"Type":"Wait","Seconds":3600,"End":true}}}"#;
    h.engine
        .create_state_machine("w", def, None)
        .expect("creates");
    let arns: Vec<String> = (0..3000)
        .map(|_| {
            h.engine
                .start_execution("w", None, "{}")
                .expect("starts")
                .execution_arn
        })
        .collect();
    assert_eq!(
        h.engine.armed_timer_count(),
        6000,
        "a wait and a timeout each"
    );
    for arn in &arns {
        h.engine.stop_execution(arn, None, None).expect("stops");
    }
    assert_eq!(h.engine.open_execution_count(), 0);
    assert!(
        h.engine.armed_timer_count() <= statelog::limits::TIMER_HEAP_COMPACT_LEN_MIN,
        "{} timers left for 0 open executions",
        h.engine.armed_timer_count()
    );
}

#[test]
fn recovery_on_several_threads_rebuilds_every_open_execution() {
    let h = Harness::with_options(|o| o.recovery_threads = 3);
    let def = r#"{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"W"},"W":{"Type":"Wait","Seconds":60,"Next":"B"},"B":{"Type":"Pass","End":true}}}"#;
    h.engine
        .create_state_machine("w", def, None)
        .expect("creates");
    let arns: Vec<String> = (0..40)
        .map(|i| {
            h.engine
                .start_execution("w", Some(&format!("r{i}")), &json!({"i": i}).to_string())
                .expect("starts")
                .execution_arn
        })
        .collect();
    let h = h.restart(0);
    assert_eq!(h.engine.open_execution_count(), 40);
    assert_eq!(
        h.engine.armed_timer_count(),
        80,
        "a wait and the one-year limit each"
    );
    h.clock.advance_ms(60_000);
    assert_eq!(h.engine.run_due_timers(), 40);
    for (i, arn) in arns.iter().enumerate() {
        let d = h.engine.describe_execution(arn).expect("d");
        assert_eq!(d.status, ExecutionStatus::Succeeded);
        assert_eq!(d.output, Some(json!({"i": i})));
    }
}

#[test]
fn stopping_an_execution_cancels_its_running_handler() {
    struct Dropped(Arc<AtomicUsize>);
    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let h = Harness::new();
    h.engine
        .create_state_machine("pay", TASK_WITH_RETRY, None)
        .expect("creates");
    let dropped = Arc::new(AtomicUsize::new(0));
    let counter = dropped.clone();
    h.engine
        .register_integration(CHARGE, move |_input: Value, _context: Value| {
            let guard = Dropped(counter.clone());
            async move {
                let _guard = guard;
                std::future::pending::<()>().await;
                Ok::<_, TaskError>(json!("never"))
            }
        });
    let arn = h
        .engine
        .start_execution("pay", None, "{}")
        .expect("starts")
        .execution_arn;
    h.engine
        .stop_execution(&arn, Some("Halt"), None)
        .expect("stops");
    h.engine.wait_idle();
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        1,
        "the handler's future was dropped"
    );
    let d = h.engine.describe_execution(&arn).expect("d");
    assert_eq!(d.status, ExecutionStatus::Aborted);
    assert_eq!(h.engine.answers_recorded(), 0);
}
