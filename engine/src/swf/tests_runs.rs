//! Tests of SWF workflow runs on a manual clock (no sleeps: polls wait zero): decision and
//! activity round trips, tokens, priorities, timers and every timeout kind, signals, cancel
//! requests, termination, listings with filters and paging, retention, and recovery on
//! reopen.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use statelog_store::MemoryLog;

use super::api::{self, Fault};
use super::tests::{engine_on, fault, input, register_domain, T0};
use crate::clock::ManualClock;
use crate::Engine;

pub(super) const D: &str = "d";

pub(super) fn setup(log: &Arc<MemoryLog>, clock: &ManualClock) -> Engine {
    let engine = engine_on(log, clock);
    register_domain(&engine, D, "1");
    register_workflow_type(&engine, D);
    register_activity_type(&engine, D);
    engine
}

/// Workflow type `wf` 1 in `domain`: decisions on `deciders`, 30 s tasks, 1 h executions.
pub(super) fn register_workflow_type(engine: &Engine, domain: &str) {
    engine
        .swf()
        .register_workflow_type(&input(json!({
            "domain": domain, "name": "wf", "version": "1",
            "defaultTaskStartToCloseTimeout": "30", "defaultExecutionStartToCloseTimeout": "3600",
            "defaultTaskList": {"name": "deciders"}, "defaultChildPolicy": "TERMINATE"
        })))
        .expect("workflow type");
}

/// Activity type `act` 1 in `domain`: on `workers`, 60 s start-to-close, no other timeout.
pub(super) fn register_activity_type(engine: &Engine, domain: &str) {
    engine
        .swf()
        .register_activity_type(&input(json!({
            "domain": domain, "name": "act", "version": "1",
            "defaultTaskStartToCloseTimeout": "60", "defaultTaskHeartbeatTimeout": "NONE",
            "defaultTaskScheduleToStartTimeout": "NONE", "defaultTaskScheduleToCloseTimeout": "NONE",
            "defaultTaskList": {"name": "workers"}
        })))
        .expect("activity type");
}

pub(super) fn start(engine: &Engine, workflow_id: &str, extra: Value) -> String {
    let mut body = json!({
        "domain": D, "workflowId": workflow_id, "workflowType": {"name": "wf", "version": "1"},
        "input": "in"
    });
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        body.extend(extra.clone());
    }
    engine
        .swf()
        .start_workflow_execution(&input(body))
        .expect("starts")
        .run_id
}

pub(super) fn poll_decision(engine: &Engine, list: &str) -> api::DecisionTask {
    engine
        .swf()
        .poll_for_decision_task(
            &input(json!({"domain": D, "taskList": {"name": list}, "identity": "decider"})),
            Duration::ZERO,
        )
        .expect("polls")
}

pub(super) fn poll_activity(engine: &Engine, list: &str) -> api::ActivityTask {
    engine
        .swf()
        .poll_for_activity_task(
            &input(json!({"domain": D, "taskList": {"name": list}, "identity": "worker"})),
            Duration::ZERO,
        )
        .expect("polls")
}

pub(super) fn respond(engine: &Engine, token: &str, decisions: Value) -> Result<(), api::SwfError> {
    engine.swf().respond_decision_task_completed(&input(json!({
        "taskToken": token, "decisions": decisions
    })))
}

pub(super) fn types(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["eventType"].as_str().unwrap_or(""))
        .collect()
}

pub(super) fn schedule(id: &str, extra: Value) -> Value {
    let mut attributes = json!({
        "activityType": {"name": "act", "version": "1"}, "activityId": id, "input": "x"
    });
    if let (Some(a), Some(extra)) = (attributes.as_object_mut(), extra.as_object()) {
        a.extend(extra.clone());
    }
    json!({"decisionType": "ScheduleActivityTask",
           "scheduleActivityTaskDecisionAttributes": attributes})
}

pub(super) fn complete(result: &str) -> Value {
    json!({"decisionType": "CompleteWorkflowExecution",
           "completeWorkflowExecutionDecisionAttributes": {"result": result}})
}

pub(super) fn history(engine: &Engine, workflow_id: &str, run_id: &str) -> Vec<Value> {
    engine
        .swf()
        .get_workflow_execution_history(&input(json!({
            "domain": D, "execution": {"workflowId": workflow_id, "runId": run_id}
        })))
        .expect("history")
        .events
}

#[test]
fn a_workflow_runs_a_decision_and_an_activity_round_trip_to_its_completion() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let engine = setup(&log, &clock);
    let empty = poll_decision(&engine, "deciders");
    assert_eq!(
        serde_json::to_value(&empty).expect("json"),
        json!({"taskToken": "", "startedEventId": 0, "previousStartedEventId": 0}),
        "an empty poll answers an empty token and no events"
    );
    let run_id = start(&engine, "order-1", json!({}));
    assert_eq!(
        engine
            .swf()
            .count_pending_decision_tasks(&input(
                json!({"domain": D, "taskList": {"name": "deciders"}})
            ))
            .expect("counts")
            .count,
        1
    );
    let task = poll_decision(&engine, "deciders");
    assert!(!task.task_token.is_empty());
    assert_eq!(task.started_event_id, 3);
    assert_eq!(task.previous_started_event_id, 0);
    let events = task.events.clone().expect("events");
    assert_eq!(
        types(&events),
        [
            "WorkflowExecutionStarted",
            "DecisionTaskScheduled",
            "DecisionTaskStarted"
        ]
    );
    assert_eq!(
        events[0]["workflowExecutionStartedEventAttributes"]["taskList"]["name"], "deciders",
        "the type's default list"
    );
    assert_eq!(
        task.workflow_execution,
        Some(api::WorkflowExecution {
            workflow_id: "order-1".into(),
            run_id: run_id.clone()
        })
    );
    // At most one decision task started: the list is empty now.
    assert!(poll_decision(&engine, "deciders").task_token.is_empty());
    respond(
        &engine,
        &task.task_token,
        json!([schedule("a1", json!({}))]),
    )
    .expect("answers");
    assert_eq!(
        fault(respond(&engine, &task.task_token, json!([]))),
        Fault::UnknownResource,
        "a token is single use"
    );
    assert_eq!(
        fault(respond(&engine, "not-a-token", json!([]))),
        Fault::UnknownResource
    );
    let activity = poll_activity(&engine, "workers");
    assert_eq!(activity.activity_id.as_deref(), Some("a1"));
    assert_eq!(activity.input.as_deref(), Some("x"));
    assert_eq!(activity.started_event_id, 6);
    engine
        .swf()
        .respond_activity_task_completed(&input(json!({
            "taskToken": activity.task_token, "result": "done"
        })))
        .expect("completes");
    assert_eq!(
        fault(engine.swf().respond_activity_task_completed(&input(json!({
            "taskToken": activity.task_token
        })))),
        Fault::UnknownResource
    );
    let task = poll_decision(&engine, "deciders");
    assert_eq!(task.previous_started_event_id, 3);
    let events = task.events.clone().expect("events");
    assert_eq!(
        types(&events)[4..],
        [
            "ActivityTaskScheduled",
            "ActivityTaskStarted",
            "ActivityTaskCompleted",
            "DecisionTaskScheduled",
            "DecisionTaskStarted"
        ]
    );
    respond(&engine, &task.task_token, json!([complete("42")])).expect("completes");
    let all = history(&engine, "order-1", &run_id);
    assert_eq!(
        types(&all).last().copied(),
        Some("WorkflowExecutionCompleted")
    );
    for (i, event) in all.iter().enumerate() {
        assert_eq!(event["eventId"], json!(i + 1));
    }
    let closed = engine
        .swf()
        .list_closed_workflow_executions(&input(json!({
            "domain": D, "startTimeFilter": {"oldestDate": 0}
        })))
        .expect("lists");
    assert_eq!(closed.execution_infos.len(), 1);
    assert_eq!(
        closed.execution_infos[0].close_status,
        Some(api::CloseStatus::Completed)
    );
    let detail = engine
        .swf()
        .describe_workflow_execution(&input(json!({
            "domain": D, "execution": {"workflowId": "order-1", "runId": run_id}
        })))
        .expect("describes");
    assert_eq!(
        detail.execution_info.execution_status,
        api::ExecutionStatus::Closed
    );
    assert_eq!(detail.execution_configuration.task_list.name, "deciders");
    assert_eq!(detail.open_counts.open_activity_tasks, 0);
    // The same, read back from the log by a reopened engine.
    drop(engine);
    let engine = engine_on(&log, &clock);
    assert_eq!(history(&engine, "order-1", &run_id), all);
}

#[test]
fn starts_refuse_an_open_workflow_id_a_deprecated_type_and_missing_defaults() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let engine = setup(&log, &clock);
    start(&engine, "w", json!({}));
    let again = engine.swf().start_workflow_execution(&input(json!({
        "domain": D, "workflowId": "w", "workflowType": {"name": "wf", "version": "1"}
    })));
    assert_eq!(fault(again), Fault::WorkflowExecutionAlreadyStarted);
    engine
        .swf()
        .register_workflow_type(&input(json!({"domain": D, "name": "bare", "version": "1"})))
        .expect("registers");
    let undefined = engine.swf().start_workflow_execution(&input(json!({
        "domain": D, "workflowId": "x", "workflowType": {"name": "bare", "version": "1"}
    })));
    assert_eq!(fault(undefined), Fault::DefaultUndefined);
    engine
        .swf()
        .deprecate_workflow_type(&input(json!({
            "domain": D, "workflowType": {"name": "wf", "version": "1"}
        })))
        .expect("deprecates");
    let deprecated = engine.swf().start_workflow_execution(&input(json!({
        "domain": D, "workflowId": "y", "workflowType": {"name": "wf", "version": "1"}
    })));
    assert_eq!(fault(deprecated), Fault::TypeDeprecated);
    let unknown = engine.swf().start_workflow_execution(&input(json!({
        "domain": D, "workflowId": "z", "workflowType": {"name": "nope", "version": "1"}
    })));
    assert_eq!(fault(unknown), Fault::UnknownResource);
}

#[test]
fn task_priority_orders_a_list_and_overrides_route_to_other_lists() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let engine = setup(&log, &clock);
    start(&engine, "low", json!({"taskPriority": "1"}));
    start(&engine, "high", json!({"taskPriority": "5"}));
    start(&engine, "mid", json!({"taskPriority": "3"}));
    start(&engine, "other", json!({"taskList": {"name": "special"}}));
    let order: Vec<String> = (0..3)
        .map(|_| {
            poll_decision(&engine, "deciders")
                .workflow_execution
                .expect("a task")
                .workflow_id
        })
        .collect();
    assert_eq!(order, ["high", "mid", "low"]);
    let special = poll_decision(&engine, "special");
    assert_eq!(
        special.workflow_execution.map(|e| e.workflow_id).as_deref(),
        Some("other")
    );
    // An activity on a second list, with a priority.
    respond(
        &engine,
        &special.task_token,
        json!([
            schedule(
                "a",
                json!({"taskList": {"name": "gpu"}, "taskPriority": "2"})
            ),
            schedule(
                "b",
                json!({"taskList": {"name": "gpu"}, "taskPriority": "9"})
            ),
            schedule("c", json!({}))
        ]),
    )
    .expect("answers");
    assert_eq!(
        engine
            .swf()
            .count_pending_activity_tasks(&input(json!({"domain": D, "taskList": {"name": "gpu"}})))
            .expect("counts")
            .count,
        2
    );
    assert_eq!(
        poll_activity(&engine, "gpu").activity_id.as_deref(),
        Some("b")
    );
    assert_eq!(
        poll_activity(&engine, "gpu").activity_id.as_deref(),
        Some("a")
    );
    assert_eq!(
        poll_activity(&engine, "workers").activity_id.as_deref(),
        Some("c")
    );
}

#[test]
fn timers_fire_on_the_clock_and_timeouts_schedule_what_follows() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let engine = setup(&log, &clock);
    let run_id = start(&engine, "t", json!({}));
    let task = poll_decision(&engine, "deciders");
    respond(
        &engine,
        &task.task_token,
        json!([
            {"decisionType": "StartTimer",
             "startTimerDecisionAttributes": {"timerId": "t1", "startToFireTimeout": "10"}},
            schedule("hb", json!({"heartbeatTimeout": "5"}))
        ]),
    )
    .expect("answers");
    let activity = poll_activity(&engine, "workers");
    clock.advance_ms(4_000);
    let status = engine
        .swf()
        .record_activity_task_heartbeat(&input(json!({
            "taskToken": activity.task_token, "details": "half"
        })))
        .expect("heartbeats");
    assert!(!status.cancel_requested);
    assert_eq!(engine.run_due_timers(), 0, "nothing due yet");
    clock.advance_ms(6_000);
    engine.run_due_timers();
    let events = history(&engine, "t", &run_id);
    let names = types(&events);
    assert!(names.contains(&"TimerFired"), "{names:?}");
    let timed_out = events
        .iter()
        .find(|e| e["eventType"] == "ActivityTaskTimedOut")
        .expect("the heartbeat timed out");
    assert_eq!(
        timed_out["activityTaskTimedOutEventAttributes"],
        json!({"timeoutType": "HEARTBEAT", "scheduledEventId": 6, "startedEventId": 7, "details": "half"})
    );
    // A decision task follows; its decider falls silent past its start-to-close (30 s).
    let task = poll_decision(&engine, "deciders");
    assert!(!task.task_token.is_empty());
    clock.advance_ms(30_000);
    engine.run_due_timers();
    let names: Vec<String> = types(&history(&engine, "t", &run_id))
        .into_iter()
        .map(str::to_string)
        .collect();
    let n = names.len();
    assert_eq!(
        names[n - 2..],
        ["DecisionTaskTimedOut", "DecisionTaskScheduled"]
    );
    assert_eq!(
        fault(respond(&engine, &task.task_token, json!([]))),
        Fault::UnknownResource,
        "a timed-out task's token is dead"
    );
    // The execution's own start-to-close (3600 s) closes it.
    clock.advance_ms(3_600_000);
    engine.run_due_timers();
    let last = history(&engine, "t", &run_id);
    assert_eq!(
        types(&last).last().copied(),
        Some("WorkflowExecutionTimedOut")
    );
}

#[test]
fn signals_cancel_requests_and_termination_reach_the_run() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let engine = setup(&log, &clock);
    let run_id = start(&engine, "s", json!({"tagList": ["blue"]}));
    let swf = engine.swf();
    swf.signal_workflow_execution(&input(json!({
        "domain": D, "workflowId": "s", "signalName": "go", "input": "now"
    })))
    .expect("signals");
    swf.request_cancel_workflow_execution(&input(json!({"domain": D, "workflowId": "s"})))
        .expect("requests a cancel");
    let open = swf
        .list_open_workflow_executions(&input(json!({
            "domain": D, "startTimeFilter": {"oldestDate": 0}, "tagFilter": {"tag": "blue"}
        })))
        .expect("lists");
    assert_eq!(open.execution_infos.len(), 1);
    assert_eq!(open.execution_infos[0].cancel_requested, Some(true));
    swf.terminate_workflow_execution(&input(json!({
        "domain": D, "workflowId": "s", "runId": run_id, "reason": "enough"
    })))
    .expect("terminates");
    let names: Vec<String> = types(&history(&engine, "s", &run_id))
        .into_iter()
        .map(str::to_string)
        .collect();
    assert!(names.contains(&"WorkflowExecutionSignaled".to_string()));
    assert!(names.contains(&"WorkflowExecutionCancelRequested".to_string()));
    assert_eq!(
        names.last().map(String::as_str),
        Some("WorkflowExecutionTerminated")
    );
    assert_eq!(
        fault(swf.signal_workflow_execution(&input(json!({
            "domain": D, "workflowId": "s", "signalName": "late"
        })))),
        Fault::UnknownResource,
        "a closed run takes no signal"
    );
    assert!(
        poll_decision(&engine, "deciders").task_token.is_empty(),
        "a closed run's decision task left its list"
    );
}

#[test]
fn listings_filter_page_and_count_and_closed_runs_expire_by_their_domains_retention() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let engine = setup(&log, &clock);
    let mut runs = Vec::new();
    for i in 0..5 {
        clock.advance_ms(1_000);
        runs.push(start(
            &engine,
            &format!("w{i}"),
            json!({"tagList": [format!("t{}", i % 2)]}),
        ));
    }
    let swf = engine.swf();
    swf.terminate_workflow_execution(&input(json!({"domain": D, "workflowId": "w1"})))
        .expect("terminates");
    let count_open = |filter: Value| {
        let mut body = json!({"domain": D, "startTimeFilter": {"oldestDate": 0}});
        body.as_object_mut()
            .expect("object")
            .extend(filter.as_object().cloned().unwrap_or_default());
        swf.count_open_workflow_executions(&input(body))
            .expect("counts")
            .count
    };
    assert_eq!(count_open(json!({})), 4);
    assert_eq!(count_open(json!({"tagFilter": {"tag": "t0"}})), 3);
    assert_eq!(
        count_open(json!({"executionFilter": {"workflowId": "w3"}})),
        1
    );
    assert_eq!(
        count_open(json!({"typeFilter": {"name": "wf", "version": "2"}})),
        0
    );
    assert_eq!(
        fault(swf.count_open_workflow_executions(&input(json!({
            "domain": D, "startTimeFilter": {"oldestDate": 0},
            "tagFilter": {"tag": "t0"}, "executionFilter": {"workflowId": "w3"}
        })))),
        Fault::Validation,
        "filters are exclusive"
    );
    let mut seen = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let page = swf
            .list_open_workflow_executions(&input(json!({
                "domain": D, "startTimeFilter": {"oldestDate": 0}, "maximumPageSize": 3,
                "nextPageToken": token, "reverseOrder": true
            })))
            .expect("a page");
        seen.extend(
            page.execution_infos
                .into_iter()
                .map(|i| i.execution.workflow_id),
        );
        token = page.next_page_token;
        if token.is_none() {
            break;
        }
    }
    assert_eq!(seen, ["w0", "w2", "w3", "w4"], "oldest first when reversed");
    let closed_count = |status: &str| {
        swf.count_closed_workflow_executions(&input(json!({
            "domain": D, "closeTimeFilter": {"oldestDate": 0},
            "closeStatusFilter": {"status": status}
        })))
        .expect("counts")
        .count
    };
    assert_eq!(closed_count("TERMINATED"), 1);
    assert_eq!(closed_count("COMPLETED"), 0);
    // The domain keeps closed runs one day from their close.
    clock.advance_ms(86_400_000 - 1);
    assert_eq!(closed_count("TERMINATED"), 1);
    clock.advance_ms(1);
    assert_eq!(closed_count("TERMINATED"), 0, "past retention it is gone");
    assert_eq!(
        fault(swf.describe_workflow_execution(&input(json!({
            "domain": D, "execution": {"workflowId": "w1", "runId": runs[1]}
        })))),
        Fault::UnknownResource
    );
    let compacted = engine.compact().expect("compacts");
    assert_eq!(compacted.executions_expired_count, 1, "the store forgot it");
    assert_eq!(count_open(json!({})), 4, "open runs are never dropped");
}

#[test]
fn a_reopened_engine_offers_scheduled_tasks_again_and_honours_started_tokens() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let engine = setup(&log, &clock);
    let run_a = start(&engine, "a", json!({}));
    start(&engine, "b", json!({}));
    let task = poll_decision(&engine, "deciders");
    let claimed = task.workflow_execution.clone().expect("a task").workflow_id;
    respond(&engine, &task.task_token, json!([schedule("x", json!({}))])).expect("answers");
    let activity = poll_activity(&engine, "workers");
    assert!(!activity.task_token.is_empty());
    drop(engine);
    // A crash here: the other run's decision task is scheduled, the activity task started.
    let engine = engine_on(&log, &clock);
    let other = poll_decision(&engine, "deciders");
    assert_ne!(
        other
            .workflow_execution
            .expect("the scheduled task came back")
            .workflow_id,
        claimed
    );
    engine
        .swf()
        .respond_activity_task_completed(&input(json!({
            "taskToken": activity.task_token, "result": "r"
        })))
        .expect("a started task's token survives the reopen");
    let next = poll_decision(&engine, "deciders");
    assert_eq!(
        next.workflow_execution.expect("a task").workflow_id,
        claimed,
        "the completion scheduled a decision task"
    );
    let _ = run_a;
}

#[test]
fn continue_as_new_starts_the_next_run_of_the_workflow_id() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let engine = setup(&log, &clock);
    let first = start(&engine, "loop", json!({"tagList": ["x"]}));
    let task = poll_decision(&engine, "deciders");
    respond(
        &engine,
        &task.task_token,
        json!([{"decisionType": "ContinueAsNewWorkflowExecution",
                "continueAsNewWorkflowExecutionDecisionAttributes": {"input": "again"}}]),
    )
    .expect("continues");
    let old = history(&engine, "loop", &first);
    let continued = old.last().expect("events");
    assert_eq!(continued["eventType"], "WorkflowExecutionContinuedAsNew");
    let next_run = continued["workflowExecutionContinuedAsNewEventAttributes"]["newExecutionRunId"]
        .as_str()
        .expect("a new run id")
        .to_string();
    assert_ne!(next_run, first);
    let task = poll_decision(&engine, "deciders");
    let execution = task.workflow_execution.clone().expect("a task");
    assert_eq!(
        execution.run_id, next_run,
        "the new run's first decision task"
    );
    let events = task.events.expect("events");
    assert_eq!(
        events[0]["workflowExecutionStartedEventAttributes"]["continuedExecutionRunId"],
        json!(first)
    );
    assert_eq!(
        events[0]["workflowExecutionStartedEventAttributes"]["input"],
        "again"
    );
    let closed = engine
        .swf()
        .list_closed_workflow_executions(&input(json!({
            "domain": D, "startTimeFilter": {"oldestDate": 0},
            "closeStatusFilter": {"status": "CONTINUED_AS_NEW"}
        })))
        .expect("lists");
    assert_eq!(closed.execution_infos.len(), 1);
    // After a reopen the new run is open and its decision task claimable.
    drop(engine);
    let engine = engine_on(&log, &clock);
    let open = engine
        .swf()
        .list_open_workflow_executions(&input(json!({
            "domain": D, "startTimeFilter": {"oldestDate": 0}
        })))
        .expect("lists");
    assert_eq!(open.execution_infos[0].execution.run_id, next_run);
}

#[test]
fn histories_page_in_both_orders_in_decision_tasks_and_on_request() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let engine = setup(&log, &clock);
    let run_id = start(&engine, "p", json!({}));
    for i in 0..4 {
        engine
            .swf()
            .signal_workflow_execution(&input(json!({
                "domain": D, "workflowId": "p", "signalName": format!("s{i}")
            })))
            .expect("signals");
    }
    let swf = engine.swf();
    let first = swf
        .poll_for_decision_task(
            &input(json!({"domain": D, "taskList": {"name": "deciders"}, "maximumPageSize": 4})),
            Duration::ZERO,
        )
        .expect("polls");
    let mut events = first.events.clone().expect("events");
    assert_eq!(events.len(), 4);
    let mut page_token = first.next_page_token.clone();
    while let Some(token) = page_token {
        let next = swf
            .poll_for_decision_task(
                &input(json!({"domain": D, "taskList": {"name": "deciders"},
                              "maximumPageSize": 4, "nextPageToken": token})),
                Duration::ZERO,
            )
            .expect("the next page");
        assert_eq!(next.task_token, first.task_token, "the same task");
        events.extend(next.events.expect("events"));
        page_token = next.next_page_token;
    }
    assert_eq!(
        events.len() as u64,
        first.started_event_id,
        "every event up to the start"
    );
    let reversed = swf
        .get_workflow_execution_history(&input(json!({
            "domain": D, "execution": {"workflowId": "p", "runId": run_id},
            "reverseOrder": true, "maximumPageSize": 2
        })))
        .expect("history");
    assert_eq!(reversed.events[0]["eventId"], json!(events.len()));
    let token = reversed.next_page_token.expect("more");
    assert_eq!(
        fault(swf.get_workflow_execution_history(&input(json!({
            "domain": D, "execution": {"workflowId": "p", "runId": run_id},
            "maximumPageSize": 2, "nextPageToken": token
        })))),
        Fault::Validation,
        "a reverse token read forwards is refused"
    );
}

#[test]
fn a_cancel_request_reaches_the_worker_through_its_heartbeat() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let engine = setup(&log, &clock);
    let run_id = start(&engine, "c", json!({}));
    let task = poll_decision(&engine, "deciders");
    respond(
        &engine,
        &task.task_token,
        json!([schedule("long", json!({}))]),
    )
    .expect("answers");
    let activity = poll_activity(&engine, "workers");
    let beat = |details: &str| {
        engine
            .swf()
            .record_activity_task_heartbeat(&input(json!({
                "taskToken": activity.task_token, "details": details
            })))
            .expect("heartbeats")
            .cancel_requested
    };
    assert!(!beat("1"));
    let task = poll_decision(&engine, "deciders");
    assert!(task.task_token.is_empty(), "a heartbeat wakes no decider");
    engine
        .swf()
        .request_cancel_workflow_execution(&input(json!({"domain": D, "workflowId": "c"})))
        .expect("requests");
    let task = poll_decision(&engine, "deciders");
    respond(
        &engine,
        &task.task_token,
        json!([{"decisionType": "RequestCancelActivityTask",
                "requestCancelActivityTaskDecisionAttributes": {"activityId": "long"}}]),
    )
    .expect("answers");
    assert!(beat("2"), "the worker learns of the cancel request");
    engine
        .swf()
        .respond_activity_task_canceled(&input(json!({
            "taskToken": activity.task_token, "details": "stopped"
        })))
        .expect("cancels");
    let task = poll_decision(&engine, "deciders");
    respond(
        &engine,
        &task.task_token,
        json!([{"decisionType": "CancelWorkflowExecution",
                "cancelWorkflowExecutionDecisionAttributes": {"details": "bye"}}]),
    )
    .expect("cancels the run");
    let names: Vec<String> = types(&history(&engine, "c", &run_id))
        .into_iter()
        .map(str::to_string)
        .collect();
    assert!(
        names.contains(&"ActivityTaskCancelRequested".to_string()),
        "{names:?}"
    );
    assert!(
        names.contains(&"ActivityTaskCanceled".to_string()),
        "{names:?}"
    );
    assert_eq!(
        names.last().map(String::as_str),
        Some("WorkflowExecutionCanceled")
    );
}

#[test]
fn on_a_real_log_compaction_reclaims_expired_runs_and_keeps_open_runs_and_the_registry() {
    let clock = ManualClock::new(T0);
    let dir = tempfile::tempdir().expect("temp dir");
    let options = || crate::EngineOptions {
        segment_size_bytes: 16 * 1024,
        ..super::tests::options(&clock)
    };
    let engine = Engine::open(dir.path(), options()).expect("opens");
    register_domain(&engine, D, "1");
    let swf = engine.swf();
    swf.register_workflow_type(&input(json!({
        "domain": D, "name": "wf", "version": "1", "defaultTaskStartToCloseTimeout": "30",
        "defaultExecutionStartToCloseTimeout": "3600", "defaultTaskList": {"name": "deciders"},
        "defaultChildPolicy": "TERMINATE"
    })))
    .expect("type");
    let keep = start(&engine, "keep", json!({}));
    let pad = "p".repeat(2_000);
    for i in 0..40 {
        start(&engine, &format!("old{i}"), json!({"input": pad}));
        swf.terminate_workflow_execution(&input(
            json!({"domain": D, "workflowId": format!("old{i}")}),
        ))
        .expect("terminates");
    }
    clock.advance_ms(2 * 86_400_000);
    let compacted = engine.compact().expect("compacts");
    // Those in sealed segments are forgotten (the active segment is never compacted).
    assert!(
        (30..=40).contains(&compacted.executions_expired_count),
        "{compacted:?}"
    );
    assert!(compacted.segments_deleted_count > 0, "{compacted:?}");
    assert!(compacted.bytes_reclaimed() > 0, "{compacted:?}");
    drop(engine);
    let engine = Engine::open(dir.path(), options()).expect("reopens");
    assert!(engine.damaged_executions().is_empty());
    let swf = engine.swf();
    swf.describe_domain(&input(json!({"name": D})))
        .expect("the domain survives compaction");
    let open = swf
        .list_open_workflow_executions(&input(json!({
            "domain": D, "startTimeFilter": {"oldestDate": 0}
        })))
        .expect("lists");
    assert_eq!(open.execution_infos.len(), 1);
    assert_eq!(open.execution_infos[0].execution.run_id, keep);
    let task = poll_decision(&engine, "deciders");
    assert_eq!(
        task.workflow_execution
            .expect("its decision task survived")
            .run_id,
        keep
    );
}

#[test]
fn a_decision_that_cannot_be_carried_out_becomes_its_failed_event_and_wakes_the_decider() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let engine = setup(&log, &clock);
    let run_id = start(&engine, "f", json!({}));
    let task = poll_decision(&engine, "deciders");
    respond(
        &engine,
        &task.task_token,
        json!([{"decisionType": "ScheduleActivityTask", "scheduleActivityTaskDecisionAttributes": {
            "activityType": {"name": "missing", "version": "1"}, "activityId": "m"}}]),
    )
    .expect("answers");
    let events = history(&engine, "f", &run_id);
    let failed = events
        .iter()
        .find(|e| e["eventType"] == "ScheduleActivityTaskFailed")
        .expect("the decision failed");
    assert_eq!(
        failed["scheduleActivityTaskFailedEventAttributes"]["cause"],
        "ACTIVITY_TYPE_DOES_NOT_EXIST"
    );
    let next = poll_decision(&engine, "deciders");
    assert!(!next.task_token.is_empty(), "the failure wakes the decider");
    assert_eq!(
        fault(respond(
            &engine,
            &next.task_token,
            json!([{"decisionType": "Nonsense"}])
        )),
        Fault::Validation,
        "an unknown decision type is refused whole"
    );
    respond(&engine, &next.task_token, json!([complete("ok")]))
        .expect("the token still holds after a refused answer");
}

#[test]
fn accounts_are_isolated_a_token_of_another_engine_names_nothing() {
    let clock = ManualClock::new(T0);
    let (log_a, log_b) = (Arc::new(MemoryLog::new()), Arc::new(MemoryLog::new()));
    let a = setup(&log_a, &clock);
    let b = setup(&log_b, &clock);
    start(&a, "same", json!({}));
    start(&b, "same", json!({}));
    let task_a = poll_decision(&a, "deciders");
    assert_eq!(
        fault(respond(&b, &task_a.task_token, json!([complete("x")]))),
        Fault::UnknownResource
    );
    let task_b = poll_decision(&b, "deciders");
    assert_ne!(
        task_a.workflow_execution.expect("a").run_id,
        task_b.workflow_execution.expect("b").run_id
    );
}

#[test]
fn an_account_has_at_most_its_limit_of_domains() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let engine = engine_on(&log, &clock);
    for i in 0..crate::limits::SWF_DOMAINS_MAX {
        register_domain(&engine, &format!("d{i}"), "1");
    }
    assert_eq!(
        fault(engine.swf().register_domain(&input(json!({
            "name": "one-more", "workflowExecutionRetentionPeriodInDays": "1"
        })))),
        Fault::LimitExceeded
    );
}

#[test]
fn racing_starts_of_one_workflow_id_open_exactly_one_run_and_the_log_holds_no_other() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let engine = setup(&log, &clock);
    for round in 0..20 {
        let workflow_id = format!("race{round}");
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (engine, workflow_id) = (engine.clone(), workflow_id.clone());
                std::thread::spawn(move || {
                    engine.swf().start_workflow_execution(&input(json!({
                        "domain": D, "workflowId": workflow_id,
                        "workflowType": {"name": "wf", "version": "1"}
                    })))
                })
            })
            .collect();
        let results: Vec<_> = threads
            .into_iter()
            .map(|t| t.join().expect("joins"))
            .collect();
        assert_eq!(
            results.iter().filter(|r| r.is_ok()).count(),
            1,
            "{results:?}"
        );
        for refused in results.iter().filter_map(|r| r.as_ref().err()) {
            assert_eq!(refused.fault, Fault::WorkflowExecutionAlreadyStarted);
        }
    }
    drop(engine);
    let engine = engine_on(&log, &clock);
    assert!(
        engine.damaged_executions().is_empty(),
        "no refused start reached the log"
    );
    let count = engine
        .swf()
        .count_open_workflow_executions(&input(json!({
            "domain": D, "startTimeFilter": {"oldestDate": 0}
        })))
        .expect("counts")
        .count;
    assert_eq!(count, 20);
}

#[test]
fn deadlines_of_closed_runs_do_not_stay_in_memory() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let engine = setup(&log, &clock);
    let runs = crate::limits::TIMER_HEAP_COMPACT_LEN_MIN + 500;
    for i in 0..runs {
        let workflow_id = format!("w{i}");
        start(&engine, &workflow_id, json!({}));
        engine
            .swf()
            .terminate_workflow_execution(&input(json!({"domain": D, "workflowId": workflow_id})))
            .expect("terminates");
    }
    let armed = engine.swf().runs().deadlines.lock().len();
    assert!(
        armed < crate::limits::TIMER_HEAP_COMPACT_LEN_MIN,
        "{armed} deadlines armed for no open run"
    );
    assert_eq!(engine.swf().runs().open.lock().len(), 0);
}

#[test]
fn timers_and_timeouts_re_arm_on_reopen() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let engine = setup(&log, &clock);
    let run_id = start(&engine, "r", json!({}));
    let task = poll_decision(&engine, "deciders");
    respond(
        &engine,
        &task.task_token,
        json!([{"decisionType": "StartTimer",
                "startTimerDecisionAttributes": {"timerId": "t", "startToFireTimeout": "10"}}]),
    )
    .expect("answers");
    drop(engine);
    let engine = engine_on(&log, &clock);
    assert_eq!(
        engine.next_timer_due_ms(),
        Some(T0 + 10_000),
        "the timer is armed again"
    );
    clock.advance_ms(10_000);
    engine.run_due_timers();
    let names: Vec<String> = types(&history(&engine, "r", &run_id))
        .into_iter()
        .map(str::to_string)
        .collect();
    assert_eq!(
        names[names.len() - 2..],
        ["TimerFired", "DecisionTaskScheduled"],
        "{names:?}"
    );
    // A decision task claimed before a crash times out after the reopen.
    let task = poll_decision(&engine, "deciders");
    assert!(!task.task_token.is_empty());
    drop(engine);
    let engine = engine_on(&log, &clock);
    clock.advance_ms(30_000);
    engine.run_due_timers();
    let names: Vec<String> = types(&history(&engine, "r", &run_id))
        .into_iter()
        .map(str::to_string)
        .collect();
    assert_eq!(
        names[names.len() - 2..],
        ["DecisionTaskTimedOut", "DecisionTaskScheduled"]
    );
    assert!(!poll_decision(&engine, "deciders").task_token.is_empty());
}

/// `token` with the last byte of its nonce changed: the right run and started event, a wrong
/// nonce.
fn with_wrong_nonce(token: &str) -> String {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine as _;
    let mut bytes = URL_SAFE_NO_PAD.decode(token).expect("a token is base64url");
    if let Some(last) = bytes.last_mut() {
        *last ^= 0x01;
    }
    URL_SAFE_NO_PAD.encode(bytes)
}

#[test]
fn a_token_or_page_token_naming_the_right_task_with_a_wrong_nonce_is_refused() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let engine = setup(&log, &clock);
    let run_id = start(&engine, "n", json!({}));
    for i in 0..3 {
        engine
            .swf()
            .signal_workflow_execution(&input(json!({
                "domain": D, "workflowId": "n", "signalName": format!("s{i}")
            })))
            .expect("signals");
    }
    let swf = engine.swf();
    let task = swf
        .poll_for_decision_task(
            &input(json!({"domain": D, "taskList": {"name": "deciders"}, "maximumPageSize": 2})),
            Duration::ZERO,
        )
        .expect("polls");
    assert!(task.next_page_token.is_some(), "more than one page");
    // A page token built from what any reader of the history knows (run id, started event),
    // without the task's nonce, names no task.
    let events = swf
        .open_slot(&run_id)
        .expect("open run")
        .state
        .lock()
        .events
        .clone();
    let (_, forged) = super::model::history_page(
        &events[..task.started_event_id as usize],
        &super::model::decision_scope(
            &super::token::encode(&run_id, task.started_event_id, &[0u8; 16]),
            false,
        ),
        None,
        Some(2),
        false,
    )
    .expect("a page");
    let forged = forged.expect("a next page");
    assert_eq!(
        fault(swf.poll_for_decision_task(
            &input(json!({"domain": D, "taskList": {"name": "deciders"},
                          "maximumPageSize": 2, "nextPageToken": forged})),
            Duration::ZERO,
        )),
        Fault::Validation
    );
    // A task token with one nonce bit changed is refused, and the real one still answers.
    assert_eq!(
        fault(respond(
            &engine,
            &with_wrong_nonce(&task.task_token),
            json!([schedule("a", json!({}))])
        )),
        Fault::UnknownResource
    );
    respond(&engine, &task.task_token, json!([schedule("a", json!({}))])).expect("answers");
    let activity = poll_activity(&engine, "workers");
    assert_eq!(
        fault(swf.respond_activity_task_completed(&input(json!({
            "taskToken": with_wrong_nonce(&activity.task_token), "result": "r"
        })))),
        Fault::UnknownResource
    );
    swf.respond_activity_task_completed(&input(json!({
        "taskToken": activity.task_token, "result": "r"
    })))
    .expect("the real token answers");
}
