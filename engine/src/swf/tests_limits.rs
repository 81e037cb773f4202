//! Tests of the SWF quotas the engine enforces (open runs per domain, waiting activity tasks per
//! list), of `startAtPreviousStartedEvent` with paging and order, and of polls given up by
//! their caller (`PollCancel`). Manual clock, memory log; polls wait zero except the one a
//! cancel must wake.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use statelog_store::MemoryLog;

use super::api::{self, Fault};
use super::tests::{fault, input, options, register_domain, T0};
use super::tests_runs::{register_activity_type, register_workflow_type};
use super::PollCancel;
use crate::clock::ManualClock;
use crate::{Engine, EngineOptions};

const D: &str = "d";

fn setup_with(log: &Arc<MemoryLog>, options: EngineOptions) -> Engine {
    let engine = Engine::open_with_log(log.clone(), options).expect("opens");
    if engine
        .swf()
        .describe_domain(&input(json!({"name": D})))
        .is_ok()
    {
        return engine;
    }
    register_domain(&engine, D, "1");
    register_domain(&engine, "other", "1");
    for domain in [D, "other"] {
        register_workflow_type(&engine, domain);
    }
    register_activity_type(&engine, D);
    engine
}

fn start_in(engine: &Engine, domain: &str, workflow_id: &str) -> Result<String, api::SwfError> {
    engine
        .swf()
        .start_workflow_execution(&input(json!({
            "domain": domain, "workflowId": workflow_id,
            "workflowType": {"name": "wf", "version": "1"}
        })))
        .map(|run| run.run_id)
}

fn poll_decision(engine: &Engine, extra: Value) -> api::DecisionTask {
    let mut body = json!({"domain": D, "taskList": {"name": "deciders"}});
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        body.extend(extra.clone());
    }
    engine
        .swf()
        .poll_for_decision_task(&input(body), Duration::ZERO)
        .expect("polls")
}

fn respond(engine: &Engine, token: &str, decisions: Value) {
    engine
        .swf()
        .respond_decision_task_completed(&input(json!({
            "taskToken": token, "decisions": decisions
        })))
        .expect("answers");
}

fn schedule(id: &str) -> Value {
    json!({"decisionType": "ScheduleActivityTask",
           "scheduleActivityTaskDecisionAttributes": {
               "activityType": {"name": "act", "version": "1"}, "activityId": id}})
}

fn pending(engine: &Engine, kind: &str, list: &str) -> u64 {
    let body = input(json!({"domain": D, "taskList": {"name": list}}));
    let swf = engine.swf();
    let count = if kind == "decision" {
        swf.count_pending_decision_tasks(&body)
    } else {
        swf.count_pending_activity_tasks(&body)
    };
    count.expect("counts").count
}

fn ids(events: &[Value]) -> Vec<u64> {
    events
        .iter()
        .map(|e| e["eventId"].as_u64().unwrap_or(0))
        .collect()
}

#[test]
fn a_domain_holds_at_most_its_limit_of_open_runs_and_a_close_makes_room() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let limited = EngineOptions {
        swf_open_runs_per_domain_max: 2,
        ..options(&clock)
    };
    let engine = setup_with(&log, limited.clone());
    start_in(&engine, D, "a").expect("first");
    start_in(&engine, D, "b").expect("second");
    let refused = start_in(&engine, D, "c").expect_err("a third is over the limit");
    assert_eq!(refused.fault, Fault::LimitExceeded);
    assert!(
        refused.message.contains("open workflow executions"),
        "{}",
        refused.message
    );
    assert_eq!(
        engine.swf().open_runs_in(D),
        2,
        "a refused start holds no place"
    );
    // Another domain has its own count.
    start_in(&engine, "other", "c").expect("another domain");
    // A continue-as-new closes one run as it opens the next: allowed at the limit.
    let task = poll_decision(&engine, json!({}));
    respond(
        &engine,
        &task.task_token,
        json!([{"decisionType": "ContinueAsNewWorkflowExecution",
                "continueAsNewWorkflowExecutionDecisionAttributes": {}}]),
    );
    assert_eq!(engine.swf().open_runs_in(D), 2);
    assert_eq!(
        fault(start_in(&engine, D, "c")),
        Fault::LimitExceeded,
        "still full"
    );
    // A run that closes gives its place back.
    engine
        .swf()
        .terminate_workflow_execution(&input(json!({"domain": D, "workflowId": "b"})))
        .expect("terminates");
    assert_eq!(engine.swf().open_runs_in(D), 1);
    start_in(&engine, D, "c").expect("room again");
    assert_eq!(fault(start_in(&engine, D, "d")), Fault::LimitExceeded);
    // A reopened engine counts the recovered runs: still full.
    drop(engine);
    let engine = setup_with(&log, limited);
    assert_eq!(engine.swf().open_runs_in(D), 2);
    assert_eq!(fault(start_in(&engine, D, "d")), Fault::LimitExceeded);
}

#[test]
fn a_full_activity_list_refuses_a_schedule_with_activity_creation_rate_exceeded() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let limited = EngineOptions {
        swf_task_list_pending_max: 2,
        ..options(&clock)
    };
    let engine = setup_with(&log, limited);
    let run_id = start_in(&engine, D, "w").expect("starts");
    let task = poll_decision(&engine, json!({}));
    respond(
        &engine,
        &task.task_token,
        json!([schedule("a1"), schedule("a2")]),
    );
    assert_eq!(pending(&engine, "activity", "workers"), 2);
    // The list is full: the next schedule fails with SWF's cause; the decider is woken.
    engine
        .swf()
        .signal_workflow_execution(&input(
            json!({"domain": D, "workflowId": "w", "signalName": "go"}),
        ))
        .expect("signals");
    let task = poll_decision(&engine, json!({}));
    respond(&engine, &task.task_token, json!([schedule("a3")]));
    let history = engine
        .swf()
        .get_workflow_execution_history(&input(json!({
            "domain": D, "execution": {"workflowId": "w", "runId": run_id}
        })))
        .expect("history")
        .events;
    let failed = history
        .iter()
        .find(|e| e["eventType"] == "ScheduleActivityTaskFailed")
        .expect("a failed schedule");
    assert_eq!(
        failed["scheduleActivityTaskFailedEventAttributes"]["cause"],
        "ACTIVITY_CREATION_RATE_EXCEEDED"
    );
    assert_eq!(
        failed["scheduleActivityTaskFailedEventAttributes"]["activityId"],
        "a3"
    );
    assert_eq!(
        history.last().expect("events")["eventType"],
        "DecisionTaskScheduled"
    );
    assert_eq!(pending(&engine, "activity", "workers"), 2, "nothing lost");
    // Another list has room; once a worker takes a task, so does this one.
    let task = poll_decision(&engine, json!({}));
    let mut elsewhere = schedule("b1");
    elsewhere["scheduleActivityTaskDecisionAttributes"]["taskList"] = json!({"name": "gpu"});
    respond(&engine, &task.task_token, json!([elsewhere]));
    assert_eq!(pending(&engine, "activity", "gpu"), 1);
    let taken = engine
        .swf()
        .poll_for_activity_task(
            &input(json!({"domain": D, "taskList": {"name": "workers"}})),
            Duration::ZERO,
        )
        .expect("polls");
    assert!(!taken.task_token.is_empty());
    engine
        .swf()
        .signal_workflow_execution(&input(
            json!({"domain": D, "workflowId": "w", "signalName": "again"}),
        ))
        .expect("signals");
    let task = poll_decision(&engine, json!({}));
    respond(&engine, &task.task_token, json!([schedule("a3")]));
    assert_eq!(pending(&engine, "activity", "workers"), 2);
}

/// A run with two decision tasks answered, each step 1 ms after the last: 1 Started and
/// 2 DTScheduled, 3 DTStarted, 4 DTCompleted and 5 MarkerRecorded, 6 Signaled and
/// 7 DTScheduled, 8 DTStarted, 9 DTCompleted, 10 Signaled and 11 DTScheduled: the next poll
/// starts 12 with 8 as its previous started event.
fn two_decisions_in(engine: &Engine, clock: &ManualClock) {
    start_in(engine, D, "w").expect("starts");
    clock.advance_ms(1);
    let task = poll_decision(engine, json!({}));
    clock.advance_ms(1);
    respond(
        engine,
        &task.task_token,
        json!([{"decisionType": "RecordMarker",
                "recordMarkerDecisionAttributes": {"markerName": "m"}}]),
    );
    clock.advance_ms(1);
    let signal = |name: &str| {
        engine
            .swf()
            .signal_workflow_execution(&input(
                json!({"domain": D, "workflowId": "w", "signalName": name}),
            ))
            .expect("signals");
    };
    signal("one");
    clock.advance_ms(1);
    let task = poll_decision(engine, json!({}));
    assert_eq!(task.started_event_id, 8);
    clock.advance_ms(1);
    respond(engine, &task.task_token, json!([]));
    clock.advance_ms(1);
    signal("two");
    clock.advance_ms(1);
}

#[test]
fn start_at_previous_started_event_shows_the_events_since_the_previous_task() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let engine = setup_with(&log, options(&clock));
    two_decisions_in(&engine, &clock);
    let task = poll_decision(&engine, json!({"startAtPreviousStartedEvent": true}));
    assert_eq!(task.previous_started_event_id, 8);
    assert_eq!(task.started_event_id, 12);
    let events = task.events.clone().expect("events");
    assert_eq!(ids(&events), [8, 9, 10, 11, 12]);
    assert_eq!(events[0]["eventType"], "DecisionTaskStarted");
    assert_eq!(task.next_page_token, None);
    // With it false, the whole history.
    respond(&engine, &task.task_token, json!([]));
    clock.advance_ms(1);
    engine
        .swf()
        .signal_workflow_execution(&input(
            json!({"domain": D, "workflowId": "w", "signalName": "three"}),
        ))
        .expect("signals");
    let task = poll_decision(&engine, json!({"startAtPreviousStartedEvent": false}));
    assert_eq!(task.started_event_id, 16);
    assert_eq!(
        ids(&task.events.expect("events")),
        (1..=16).collect::<Vec<_>>()
    );
}

#[test]
fn start_at_previous_started_event_pages_in_both_orders_and_its_pages_keep_it() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let engine = setup_with(&log, options(&clock));
    two_decisions_in(&engine, &clock);
    let first = poll_decision(
        &engine,
        json!({"startAtPreviousStartedEvent": true, "maximumPageSize": 3, "reverseOrder": true}),
    );
    assert_eq!(ids(first.events.as_deref().expect("events")), [12, 11, 10]);
    let token = first.next_page_token.clone().expect("a second page");
    // The next page keeps the first poll's choice even when the flag is left out.
    let second = poll_decision(
        &engine,
        json!({"maximumPageSize": 3, "reverseOrder": true, "nextPageToken": token}),
    );
    assert_eq!(ids(second.events.as_deref().expect("events")), [9, 8]);
    assert_eq!(second.next_page_token, None);
    assert_eq!(second.task_token, first.task_token);
    assert_eq!(second.previous_started_event_id, 8);
    // The token is bound to its page size and order, as any page token.
    assert_eq!(
        fault(engine.swf().poll_for_decision_task(
            &input(json!({"domain": D, "taskList": {"name": "deciders"},
                          "maximumPageSize": 3, "reverseOrder": false, "nextPageToken": token})),
            Duration::ZERO,
        )),
        Fault::Validation
    );
}

#[test]
fn the_first_decision_task_with_start_at_previous_started_event_shows_everything() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let engine = setup_with(&log, options(&clock));
    start_in(&engine, D, "w").expect("starts");
    let task = poll_decision(&engine, json!({"startAtPreviousStartedEvent": true}));
    assert_eq!(task.previous_started_event_id, 0);
    assert_eq!(ids(&task.events.expect("events")), [1, 2, 3]);
}

#[test]
fn a_cancelled_poll_answers_empty_and_leaves_its_task_for_the_next_poller() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let engine = setup_with(&log, options(&clock));
    // A poll waiting on an empty list wakes when cancelled (its wait is a minute).
    let cancel = PollCancel::new();
    let waiting = {
        let (engine, cancel) = (engine.clone(), cancel.clone());
        std::thread::spawn(move || {
            engine.swf().poll_for_decision_task_cancellable(
                &input(json!({"domain": D, "taskList": {"name": "deciders"}})),
                Duration::from_secs(60),
                &cancel,
            )
        })
    };
    cancel.cancel();
    let answer = waiting.join().expect("joins").expect("answers");
    assert!(answer.task_token.is_empty(), "an empty answer");
    // A cancelled poll claims nothing, even with a task waiting.
    start_in(&engine, D, "w").expect("starts");
    let answer = engine
        .swf()
        .poll_for_decision_task_cancellable(
            &input(json!({"domain": D, "taskList": {"name": "deciders"}})),
            Duration::ZERO,
            &cancel,
        )
        .expect("answers");
    assert!(answer.task_token.is_empty());
    assert_eq!(pending(&engine, "decision", "deciders"), 1);
    let task = poll_decision(&engine, json!({}));
    assert_eq!(
        task.started_event_id, 3,
        "no start was written for the cancelled poll"
    );
    // The same for activity tasks.
    respond(&engine, &task.task_token, json!([schedule("a")]));
    let answer = engine
        .swf()
        .poll_for_activity_task_cancellable(
            &input(json!({"domain": D, "taskList": {"name": "workers"}})),
            Duration::ZERO,
            &cancel,
        )
        .expect("answers");
    assert!(answer.task_token.is_empty());
    assert_eq!(pending(&engine, "activity", "workers"), 1);
}
