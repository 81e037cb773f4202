//! Aborted waiting tasks, on the manual clock: a failing Parallel branch or Map iteration (and
//! StopExecution) aborts its siblings' waiting tasks as AWS does (`TaskStateAborted`,
//! `MapIterationAborted`); afterwards the aborted task's token answers `TaskTimedOut`, its
//! activity task has left its list (and its heartbeat clock is gone), and a `.sync` job is asked
//! to cancel. No test sleeps.

use crate::engine_common;

use engine_common::block_on;

use std::sync::Arc;

use engine_common::{event_types, Harness};
use parking_lot::Mutex;
use serde_json::{json, Value};
use statelog::engine::{Engine, Error, ExecutionStatus};

const ACCOUNT: &str = "000000000000";
const SEND: &str = "arn:aws:states:::sqs:sendMessage.waitForTaskToken";

/// Registers a fake queue that keeps the tokens it is sent.
fn queue(engine: &Engine) -> Arc<Mutex<Vec<String>>> {
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let kept = tokens.clone();
    engine.register_integration(SEND, move |input: Value, _context: Value| {
        let kept = kept.clone();
        async move {
            kept.lock()
                .push(input["TaskToken"].as_str().unwrap_or_default().to_string());
            Ok(json!({"MessageId": "m"}))
        }
    });
    tokens
}

/// A Parallel state: branch 0 runs `waiting` (a Task state body), branch 1 fails after 10 s.
fn parallel(waiting: &str) -> String {
    format!(
        r#"{{"StartAt":"P","States":{{"P":{{"Type":"Parallel","End":true,"Branches":[
            {{"StartAt":"Ask","States":{{"Ask":{{"Type":"Task",{waiting},"End":true}}}}}},
            {{"StartAt":"Later","States":{{
                "Later":{{"Type":"Wait","Seconds":10,"Next":"Boom"}},
                "Boom":{{"Type":"Fail","Error":"Boom","Cause":"branch 1"}}}}}}]}}}}}}"#
    )
}

fn start(h: &Harness, definition: &str) -> String {
    h.engine
        .create_state_machine("m", definition, None)
        .expect("machine");
    let arn = h
        .engine
        .start_execution("m", Some("e"), "{}")
        .expect("start")
        .execution_arn;
    h.engine.wait_idle();
    arn
}

/// Lets the failing sibling fail; the execution must close failed.
fn fail_sibling(h: &Harness, arn: &str) {
    h.tick(10_000);
    let done = h.engine.wait_until_closed(arn).expect("closes");
    assert_eq!(done.status, ExecutionStatus::Failed);
    assert_eq!(done.error.as_deref(), Some("Boom"));
}

#[test]
fn a_failed_branch_aborts_a_token_task_whose_token_then_answers_task_timed_out() {
    let h = Harness::new();
    let tokens = queue(&h.engine);
    let arn = start(
        &h,
        &parallel(&format!(
            r#""Resource":"{SEND}","Parameters":{{"TaskToken.$":"$$.Task.Token"}},"HeartbeatSeconds":600"#
        )),
    );
    let token = tokens
        .lock()
        .first()
        .cloned()
        .expect("the queue got the token");
    assert_eq!(h.engine.heartbeat_clock_count(), 1);
    fail_sibling(&h, &arn);
    let types = event_types(&h.engine, &arn);
    assert!(types.contains(&"TaskStateAborted".to_string()), "{types:?}");
    assert!(matches!(
        h.engine.send_task_success(&token, "{}"),
        Err(Error::TaskTimedOut { .. })
    ));
    assert!(matches!(
        h.engine.send_task_heartbeat(&token),
        Err(Error::TaskTimedOut { .. })
    ));
    assert_eq!(
        h.engine.heartbeat_clock_count(),
        0,
        "the aborted task's heartbeat clock is stopped"
    );
    assert!(h.engine.background_errors().is_empty());
}

#[test]
fn a_failed_branch_withdraws_an_unclaimed_activity_task_from_its_list() {
    let h = Harness::new();
    let activity = h.engine.create_activity("work").expect("activity");
    let arn = start(
        &h,
        &parallel(&format!(r#""Resource":"{}""#, activity.activity_arn)),
    );
    let list = activity.activity_arn.clone();
    assert_eq!(h.engine.task_list_pending_count(ACCOUNT, &list), 1);
    fail_sibling(&h, &arn);
    assert_eq!(
        h.engine.task_list_pending_count(ACCOUNT, &list),
        0,
        "the aborted task left its list"
    );
    let polled =
        block_on(
            h.engine
                .poll_task_lists(ACCOUNT, std::slice::from_ref(&list), Some("w"), 0),
        )
        .expect("poll");
    assert!(polled.is_none(), "nothing to hand out");
}

#[test]
fn a_failed_branch_aborts_a_claimed_activity_task_and_its_heartbeat_clock() {
    let h = Harness::new();
    let activity = h.engine.create_activity("work").expect("activity");
    let arn = start(
        &h,
        &parallel(&format!(
            r#""Resource":"{}","HeartbeatSeconds":60"#,
            activity.activity_arn
        )),
    );
    let task = block_on(
        h.engine
            .get_activity_task(&activity.activity_arn, Some("w")),
    )
    .expect("poll")
    .expect("a task");
    assert_eq!(h.engine.heartbeat_clock_count(), 1);
    fail_sibling(&h, &arn);
    assert_eq!(h.engine.heartbeat_clock_count(), 0);
    assert!(matches!(
        h.engine.send_task_heartbeat(&task.task_token),
        Err(Error::TaskTimedOut { .. })
    ));
    assert!(matches!(
        h.engine.send_task_failure(&task.task_token, "E", "c"),
        Err(Error::TaskTimedOut { .. })
    ));
}

#[test]
fn a_failed_map_iteration_aborts_its_siblings_token_task() {
    let h = Harness::new();
    let tokens = queue(&h.engine);
    let definition = format!(
        r#"{{"StartAt":"M","States":{{"M":{{"Type":"Map","ItemsPath":"$.items","End":true,
            "ItemProcessor":{{"StartAt":"Pick","States":{{
                "Pick":{{"Type":"Choice","Choices":[{{"Variable":"$","NumericEquals":0,"Next":"Ask"}}],"Default":"Later"}},
                "Ask":{{"Type":"Task","Resource":"{SEND}","Parameters":{{"TaskToken.$":"$$.Task.Token"}},"End":true}},
                "Later":{{"Type":"Wait","Seconds":10,"Next":"Boom"}},
                "Boom":{{"Type":"Fail","Error":"Boom","Cause":"iteration 1"}}}}}}}}}}}}"#
    );
    h.engine
        .create_state_machine("m", &definition, None)
        .expect("machine");
    let arn = h
        .engine
        .start_execution("m", Some("e"), r#"{"items":[0,1]}"#)
        .expect("start")
        .execution_arn;
    h.engine.wait_idle();
    let token = tokens.lock().first().cloned().expect("a token");
    fail_sibling(&h, &arn);
    let types = event_types(&h.engine, &arn);
    assert!(
        types.contains(&"MapIterationAborted".to_string()),
        "{types:?}"
    );
    assert!(types.contains(&"TaskStateAborted".to_string()), "{types:?}");
    assert!(matches!(
        h.engine.send_task_success(&token, "{}"),
        Err(Error::TaskTimedOut { .. })
    ));
}

#[test]
fn stopping_the_execution_withdraws_its_unclaimed_activity_task() {
    let h = Harness::new();
    let activity = h.engine.create_activity("work").expect("activity");
    let definition = format!(
        r#"{{"StartAt":"Work","States":{{"Work":{{"Type":"Task","Resource":"{}","End":true}}}}}}"#,
        activity.activity_arn
    );
    let arn = start(&h, &definition);
    assert_eq!(
        h.engine
            .task_list_pending_count(ACCOUNT, &activity.activity_arn),
        1
    );
    h.engine
        .stop_execution(&arn, Some("Stop"), None)
        .expect("stop");
    assert_eq!(
        h.engine
            .task_list_pending_count(ACCOUNT, &activity.activity_arn),
        0
    );
}

#[test]
fn the_failed_task_of_a_failed_branch_is_closed_with_task_state_aborted_as_aws_records() {
    let h = Harness::new();
    let tokens = queue(&h.engine);
    let definition = format!(
        r#"{{"StartAt":"P","States":{{"P":{{"Type":"Parallel","End":true,"Branches":[
            {{"StartAt":"Ask","States":{{"Ask":{{"Type":"Task","Resource":"{SEND}",
                "Parameters":{{"TaskToken.$":"$$.Task.Token"}},"End":true}}}}}}]}}}}}}"#
    );
    let arn = start(&h, &definition);
    let token = tokens.lock().first().cloned().expect("a token");
    h.engine
        .send_task_failure(&token, "Nope", "no")
        .expect("answer");
    let done = h.engine.wait_until_closed(&arn).expect("closes");
    assert_eq!(done.status, ExecutionStatus::Failed);
    let history = h
        .engine
        .get_execution_history(&arn, &statelog::engine::HistoryQuery::default())
        .expect("history");
    let tail: Vec<(&str, u32, u32)> = history
        .events
        .iter()
        .rev()
        .take(4)
        .rev()
        .map(|e| (e.details.type_name(), e.id.0, e.previous_event_id))
        .collect();
    // TaskFailed (8), TaskStateAborted (9 -> 8), ParallelStateFailed (10 -> 8, skipping 9).
    assert_eq!(
        tail,
        [
            ("TaskFailed", 8, 7),
            ("TaskStateAborted", 9, 8),
            ("ParallelStateFailed", 10, 8),
            ("ExecutionFailed", 11, 10)
        ]
    );
}
