//! Tests of the SWF decisions that reach other runs, on a manual clock: child workflows (start,
//! each way a child closes, each child policy, a continued parent), SignalExternal and
//! RequestCancelExternal (delivered and unknown), the one atomic append of every run a
//! decision touches, and the parent/child links after a reopen.

use std::sync::Arc;

use serde_json::{json, Value};
use statelog_store::MemoryLog;

use statelog_store::{Error as StoreError, Log, Visit};
use statelog_wal::Lsn;

use super::api;
use super::tests::{engine_on, input, options, register_domain, T0};
use super::tests_runs::{complete, history, poll_decision, respond, setup, start, types, D};
use crate::clock::ManualClock;
use crate::Engine;

fn start_child(workflow_id: &str, extra: Value) -> Value {
    let mut attributes = json!({
        "workflowType": {"name": "wf", "version": "1"}, "workflowId": workflow_id,
        "input": "kid-in", "control": "ctl", "taskList": {"name": "kids"}
    });
    if let (Some(a), Some(extra)) = (attributes.as_object_mut(), extra.as_object()) {
        a.extend(extra.clone());
    }
    json!({"decisionType": "StartChildWorkflowExecution",
           "startChildWorkflowExecutionDecisionAttributes": attributes})
}

fn describe(engine: &Engine, workflow_id: &str, run_id: &str) -> api::WorkflowExecutionDetail {
    engine
        .swf()
        .describe_workflow_execution(&input(json!({
            "domain": D, "execution": {"workflowId": workflow_id, "runId": run_id}
        })))
        .expect("describes")
}

fn open_run_of(engine: &Engine, workflow_id: &str) -> Option<String> {
    engine
        .inner
        .store
        .swf_open_run(D, workflow_id)
        .map(|r| r.run_id.to_string())
}

fn attributes<'a>(events: &'a [Value], event_type: &str) -> &'a Value {
    let key = format!(
        "{}{}EventAttributes",
        event_type[..1].to_lowercase(),
        &event_type[1..]
    );
    let event = events
        .iter()
        .rev()
        .find(|e| e["eventType"] == event_type)
        .unwrap_or_else(|| panic!("no {event_type} in {:?}", types(events)));
    &event[key.as_str()]
}

/// A parent `p` (child policy `policy`) whose first decision started child `kid` on list
/// `kids`: answers (parent run id, child run id).
fn parent_with_child(engine: &Engine, policy: &str) -> (String, String) {
    let parent = start(engine, "p", json!({"childPolicy": policy}));
    let task = poll_decision(engine, "deciders");
    respond(
        engine,
        &task.task_token,
        json!([start_child("kid", json!({}))]),
    )
    .expect("answers");
    let child = open_run_of(engine, "kid").expect("the child is open");
    (parent, child)
}

#[test]
fn a_child_starts_in_the_parents_domain_and_its_completion_wakes_the_parent() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let engine = setup(&log, &clock);
    let (parent, child) = parent_with_child(&engine, "TERMINATE");
    let events = history(&engine, "p", &parent);
    assert_eq!(
        types(&events)[4..],
        [
            "StartChildWorkflowExecutionInitiated",
            "ChildWorkflowExecutionStarted",
            "DecisionTaskScheduled"
        ]
    );
    let initiated = attributes(&events, "StartChildWorkflowExecutionInitiated");
    assert_eq!(initiated["taskList"], json!({"name": "kids"}));
    assert_eq!(initiated["executionStartToCloseTimeout"], json!("3600"));
    assert_eq!(initiated["childPolicy"], json!("TERMINATE"));
    assert_eq!(
        attributes(&events, "ChildWorkflowExecutionStarted")["workflowExecution"],
        json!({"workflowId": "kid", "runId": child})
    );
    let kid = history(&engine, "kid", &child);
    let started = attributes(&kid, "WorkflowExecutionStarted");
    assert_eq!(
        started["parentWorkflowExecution"],
        json!({"workflowId": "p", "runId": parent})
    );
    assert_eq!(started["parentInitiatedEventId"], json!(5));
    assert_eq!(started["input"], json!("kid-in"));
    assert_eq!(
        describe(&engine, "p", &parent)
            .open_counts
            .open_child_workflow_executions,
        1
    );
    let info = describe(&engine, "kid", &child).execution_info;
    assert_eq!(
        info.parent,
        Some(api::WorkflowExecution {
            workflow_id: "p".into(),
            run_id: parent.clone()
        })
    );
    // The parent's decider sees the start; the child's decider completes it.
    let task = poll_decision(&engine, "deciders");
    respond(&engine, &task.task_token, json!([])).expect("answers");
    let task = poll_decision(&engine, "kids");
    assert_eq!(task.workflow_execution.expect("a task").workflow_id, "kid");
    respond(&engine, &task.task_token, json!([complete("kid-out")])).expect("completes");
    let events = history(&engine, "p", &parent);
    let done = attributes(&events, "ChildWorkflowExecutionCompleted");
    assert_eq!(done["result"], json!("kid-out"));
    assert_eq!(done["initiatedEventId"], json!(5));
    assert_eq!(done["startedEventId"], json!(6));
    assert_eq!(types(&events).last(), Some(&"DecisionTaskScheduled"));
    assert_eq!(
        describe(&engine, "p", &parent)
            .open_counts
            .open_child_workflow_executions,
        0
    );
    let task = poll_decision(&engine, "deciders");
    assert_eq!(task.workflow_execution.expect("a task").workflow_id, "p");
}

#[test]
fn a_child_that_fails_times_out_or_is_terminated_tells_its_parent_how() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let engine = setup(&log, &clock);
    // Failed.
    let (parent, _) = parent_with_child(&engine, "ABANDON");
    let task = poll_decision(&engine, "kids");
    respond(
        &engine,
        &task.task_token,
        json!([{"decisionType": "FailWorkflowExecution",
                "failWorkflowExecutionDecisionAttributes": {"reason": "r", "details": "d"}}]),
    )
    .expect("fails");
    let failed = history(&engine, "p", &parent);
    assert_eq!(
        attributes(&failed, "ChildWorkflowExecutionFailed")["reason"],
        json!("r")
    );
    engine
        .swf()
        .terminate_workflow_execution(&input(json!({"domain": D, "workflowId": "p"})))
        .expect("terminates the parent");
    // Timed out.
    let parent = start(&engine, "p2", json!({}));
    let task = poll_decision(&engine, "deciders");
    let task = if task
        .workflow_execution
        .as_ref()
        .map(|w| w.workflow_id.as_str())
        == Some("p2")
    {
        task
    } else {
        poll_decision(&engine, "deciders")
    };
    respond(
        &engine,
        &task.task_token,
        json!([start_child(
            "kid2",
            json!({"executionStartToCloseTimeout": "10"})
        )]),
    )
    .expect("answers");
    clock.advance_ms(11_000);
    engine.run_due_timers();
    let events = history(&engine, "p2", &parent);
    assert_eq!(
        attributes(&events, "ChildWorkflowExecutionTimedOut")["timeoutType"],
        json!("START_TO_CLOSE")
    );
    // Terminated by an operator.
    let task = poll_decision(&engine, "deciders");
    respond(
        &engine,
        &task.task_token,
        json!([start_child("kid3", json!({}))]),
    )
    .expect("answers");
    engine
        .swf()
        .terminate_workflow_execution(&input(json!({"domain": D, "workflowId": "kid3"})))
        .expect("terminates the child");
    let events = history(&engine, "p2", &parent);
    assert_eq!(
        attributes(&events, "ChildWorkflowExecutionTerminated")["workflowExecution"]["workflowId"],
        json!("kid3")
    );
}

#[test]
fn each_child_policy_applies_when_the_parent_closes() {
    for (policy, how) in [
        ("TERMINATE", "terminate"),
        ("REQUEST_CANCEL", "complete"),
        ("ABANDON", "complete"),
        ("TERMINATE", "continue"),
    ] {
        let clock = ManualClock::new(T0);
        let log = Arc::new(MemoryLog::new());
        let engine = setup(&log, &clock);
        let (parent, child) = parent_with_child(&engine, policy);
        let task = poll_decision(&engine, "deciders");
        match how {
            "terminate" => engine
                .swf()
                .terminate_workflow_execution(&input(json!({"domain": D, "workflowId": "p"})))
                .expect("terminates"),
            "complete" => {
                respond(&engine, &task.task_token, json!([complete("x")])).expect("completes")
            }
            _ => respond(
                &engine,
                &task.task_token,
                json!([{"decisionType": "ContinueAsNewWorkflowExecution",
                        "continueAsNewWorkflowExecutionDecisionAttributes": {}}]),
            )
            .expect("continues"),
        }
        let kid = history(&engine, "kid", &child);
        let last = types(&kid);
        match policy {
            "TERMINATE" => {
                assert_eq!(last.last(), Some(&"WorkflowExecutionTerminated"), "{how}");
                assert_eq!(
                    attributes(&kid, "WorkflowExecutionTerminated")["cause"],
                    json!("CHILD_POLICY_APPLIED")
                );
                assert_eq!(open_run_of(&engine, "kid"), None);
            }
            "REQUEST_CANCEL" => {
                assert_eq!(
                    attributes(&kid, "WorkflowExecutionCancelRequested")["cause"],
                    json!("CHILD_POLICY_APPLIED")
                );
                // Its first decision task is still scheduled: it sees the request there.
                assert_eq!(last.last(), Some(&"WorkflowExecutionCancelRequested"));
                assert_eq!(open_run_of(&engine, "kid").as_deref(), Some(child.as_str()));
            }
            _ => {
                assert_eq!(last, ["WorkflowExecutionStarted", "DecisionTaskScheduled"]);
                assert_eq!(
                    describe(&engine, "p", &parent)
                        .open_counts
                        .open_child_workflow_executions,
                    0,
                    "a closed parent has no open children"
                );
                // An abandoned child closes later; its parent is closed and hears nothing.
                let task = poll_decision(&engine, "kids");
                respond(&engine, &task.task_token, json!([complete("late")])).expect("closes");
            }
        }
        // The parent's closing history is not followed by a child event.
        let events = history(&engine, "p", &parent);
        assert!(
            !types(&events)
                .iter()
                .any(|t| t.starts_with("ChildWorkflowExecutionTerminated")),
            "{policy}/{how}: a closed parent hears nothing: {:?}",
            types(&events)
        );
    }
}

#[test]
fn start_child_failures_name_their_cause() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let engine = setup(&log, &clock);
    start(&engine, "taken", json!({}));
    let parent = start(&engine, "p", json!({}));
    let mut task = poll_decision(&engine, "deciders");
    if task
        .workflow_execution
        .as_ref()
        .map(|w| w.workflow_id.as_str())
        != Some("p")
    {
        task = poll_decision(&engine, "deciders");
    }
    respond(
        &engine,
        &task.task_token,
        json!([
            start_child("taken", json!({})),
            start_child(
                "x",
                json!({"workflowType": {"name": "nope", "version": "1"}})
            ),
        ]),
    )
    .expect("answers");
    let events = history(&engine, "p", &parent);
    let causes: Vec<&Value> = events
        .iter()
        .filter(|e| e["eventType"] == "StartChildWorkflowExecutionFailed")
        .map(|e| &e["startChildWorkflowExecutionFailedEventAttributes"]["cause"])
        .collect();
    assert_eq!(
        causes,
        [
            &json!("WORKFLOW_ALREADY_RUNNING"),
            &json!("WORKFLOW_TYPE_DOES_NOT_EXIST")
        ]
    );
    assert_eq!(open_run_of(&engine, "x"), None);
}

#[test]
fn signal_and_cancel_external_reach_the_target_or_fail_as_unknown() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let engine = setup(&log, &clock);
    let target = start(&engine, "target", json!({"taskList": {"name": "t"}}));
    let sender = start(&engine, "sender", json!({}));
    let task = poll_decision(&engine, "deciders");
    respond(
        &engine,
        &task.task_token,
        json!([
            {"decisionType": "SignalExternalWorkflowExecution",
             "signalExternalWorkflowExecutionDecisionAttributes": {
                 "workflowId": "target", "runId": target, "signalName": "go", "input": "gi"}},
            {"decisionType": "RequestCancelExternalWorkflowExecution",
             "requestCancelExternalWorkflowExecutionDecisionAttributes": {"workflowId": "target"}},
            {"decisionType": "SignalExternalWorkflowExecution",
             "signalExternalWorkflowExecutionDecisionAttributes": {
                 "workflowId": "nobody", "signalName": "go"}},
            {"decisionType": "RequestCancelExternalWorkflowExecution",
             "requestCancelExternalWorkflowExecutionDecisionAttributes": {
                 "workflowId": "target", "runId": "not-a-run"}},
        ]),
    )
    .expect("answers");
    let events = history(&engine, "sender", &sender);
    assert_eq!(
        types(&events)[4..],
        [
            "SignalExternalWorkflowExecutionInitiated",
            "ExternalWorkflowExecutionSignaled",
            "RequestCancelExternalWorkflowExecutionInitiated",
            "ExternalWorkflowExecutionCancelRequested",
            "SignalExternalWorkflowExecutionInitiated",
            "SignalExternalWorkflowExecutionFailed",
            "RequestCancelExternalWorkflowExecutionInitiated",
            "RequestCancelExternalWorkflowExecutionFailed",
            "DecisionTaskScheduled"
        ]
    );
    assert_eq!(
        attributes(&events, "SignalExternalWorkflowExecutionFailed")["cause"],
        json!("UNKNOWN_EXTERNAL_WORKFLOW_EXECUTION")
    );
    assert_eq!(
        attributes(&events, "RequestCancelExternalWorkflowExecutionFailed")["cause"],
        json!("UNKNOWN_EXTERNAL_WORKFLOW_EXECUTION")
    );
    let got = history(&engine, "target", &target);
    let signaled = attributes(&got, "WorkflowExecutionSignaled");
    assert_eq!(signaled["signalName"], json!("go"));
    assert_eq!(signaled["input"], json!("gi"));
    assert_eq!(
        signaled["externalWorkflowExecution"],
        json!({"workflowId": "sender", "runId": sender})
    );
    assert_eq!(signaled["externalInitiatedEventId"], json!(5));
    assert_eq!(
        attributes(&got, "WorkflowExecutionCancelRequested")["externalInitiatedEventId"],
        json!(7)
    );
    assert!(describe(&engine, "target", &target)
        .execution_info
        .cancel_requested
        .unwrap_or(false));
    // A closed target is unknown too.
    engine
        .swf()
        .terminate_workflow_execution(&input(json!({"domain": D, "workflowId": "target"})))
        .expect("terminates");
    let task = poll_decision(&engine, "deciders");
    respond(
        &engine,
        &task.task_token,
        json!([{"decisionType": "SignalExternalWorkflowExecution",
                "signalExternalWorkflowExecutionDecisionAttributes": {
                    "workflowId": "target", "signalName": "late"}}]),
    )
    .expect("answers");
    let events = history(&engine, "sender", &sender);
    assert_eq!(
        attributes(&events, "SignalExternalWorkflowExecutionFailed")["initiatedEventId"],
        json!(events.len() as u64 - 2)
    );
}

/// A log that remembers how many records each atomic batch held.
#[derive(Debug, Default)]
struct BatchLog {
    log: MemoryLog,
    batches: parking_lot::Mutex<Vec<usize>>,
}

impl Log for BatchLog {
    fn append_batch(&self, records: &[(u8, &[u8])]) -> Result<Lsn, StoreError> {
        let lsn = self.log.append_batch(records)?;
        self.batches.lock().push(records.len());
        Ok(lsn)
    }

    fn read(&self, lsn: Lsn) -> Result<Option<(u8, Vec<u8>)>, StoreError> {
        self.log.read(lsn)
    }

    fn scan(&self, visit: &mut Visit<'_>) -> Result<(), StoreError> {
        self.log.scan(visit)
    }
}

#[test]
fn a_decision_reaching_other_runs_is_one_atomic_append() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(BatchLog::default());
    let engine = Engine::open_with_log(log.clone(), options(&clock)).expect("opens");
    register_domain(&engine, D, "1");
    engine
        .swf()
        .register_workflow_type(&input(json!({
            "domain": D, "name": "wf", "version": "1",
            "defaultTaskStartToCloseTimeout": "30", "defaultExecutionStartToCloseTimeout": "3600",
            "defaultTaskList": {"name": "deciders"}, "defaultChildPolicy": "TERMINATE"
        })))
        .expect("workflow type");
    let target = start(&engine, "target", json!({"taskList": {"name": "t"}}));
    start(&engine, "p", json!({}));
    let task = poll_decision(&engine, "deciders");
    let before = log.batches.lock().len();
    respond(
        &engine,
        &task.task_token,
        json!([
            start_child("kid", json!({})),
            {"decisionType": "SignalExternalWorkflowExecution",
             "signalExternalWorkflowExecutionDecisionAttributes": {
                 "workflowId": "target", "signalName": "go"}},
        ]),
    )
    .expect("answers");
    assert_eq!(
        log.batches.lock()[before..],
        [3],
        "the parent's, the child's and the target's events are one log batch of three records"
    );
    assert_eq!(
        types(&history(&engine, "target", &target))[2..],
        ["WorkflowExecutionSignaled"],
        "the target's decision task was scheduled already"
    );
    // The child policy of a terminated parent: the parent's close and the child's
    // termination are one batch too.
    let before = log.batches.lock().len();
    engine
        .swf()
        .terminate_workflow_execution(&input(json!({"domain": D, "workflowId": "p"})))
        .expect("terminates");
    assert_eq!(log.batches.lock()[before..], [2]);
}

#[test]
fn a_reopened_engine_keeps_the_links_between_parents_and_children() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let engine = setup(&log, &clock);
    let (parent, child) = parent_with_child(&engine, "TERMINATE");
    let task = poll_decision(&engine, "deciders");
    respond(
        &engine,
        &task.task_token,
        json!([start_child("kid-b", json!({}))]),
    )
    .expect("answers");
    let second = open_run_of(&engine, "kid-b").expect("open");
    drop(engine);
    let engine = engine_on(&log, &clock);
    // The child's close reaches its parent.
    let task = poll_decision(&engine, "kids");
    let kid = task.workflow_execution.clone().expect("a task").workflow_id;
    respond(&engine, &task.task_token, json!([complete("k")])).expect("completes");
    let events = history(&engine, "p", &parent);
    assert_eq!(
        attributes(&events, "ChildWorkflowExecutionCompleted")["workflowExecution"]["workflowId"],
        json!(kid)
    );
    // The parent's close reaches the other child.
    engine
        .swf()
        .terminate_workflow_execution(&input(json!({"domain": D, "workflowId": "p"})))
        .expect("terminates");
    let other = if kid == "kid" {
        ("kid-b", second)
    } else {
        ("kid", child)
    };
    let events = history(&engine, other.0, &other.1);
    assert_eq!(
        attributes(&events, "WorkflowExecutionTerminated")["cause"],
        json!("CHILD_POLICY_APPLIED")
    );
}

/// Changes that reach each other's runs from two threads at once (a child closing while its
/// parent is terminated; two runs signalling each other) all finish, each run's history stays
/// whole, and exactly one of the two outcomes of the race is recorded.
#[test]
fn changes_reaching_each_others_runs_at_once_neither_deadlock_nor_lose_events() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let engine = setup(&log, &clock);
    for round in 0..40 {
        let parent_id = format!("p{round}");
        let kid_id = format!("kid{round}");
        let parent = start(&engine, &parent_id, json!({}));
        let task = poll_decision(&engine, "deciders");
        respond(
            &engine,
            &task.task_token,
            json!([start_child(&kid_id, json!({}))]),
        )
        .expect("answers");
        let kid = open_run_of(&engine, &kid_id).expect("open");
        let kid_task = poll_decision(&engine, "kids");
        std::thread::scope(|s| {
            s.spawn(|| {
                // Refused only when the parent's close terminated the child first.
                if let Err(e) = respond(&engine, &kid_task.task_token, json!([complete("k")])) {
                    assert_eq!(e.fault, api::Fault::UnknownResource);
                }
            });
            s.spawn(|| {
                engine
                    .swf()
                    .terminate_workflow_execution(&input(
                        json!({"domain": D, "workflowId": parent_id}),
                    ))
                    .expect("the parent is terminated");
            });
        });
        let parent_events = history(&engine, &parent_id, &parent);
        let kid_events = history(&engine, &kid_id, &kid);
        let kid_close = *types(&kid_events).last().expect("events");
        let heard = types(&parent_events).contains(&"ChildWorkflowExecutionCompleted");
        match kid_close {
            // The child closed first, and its open parent heard it in the same append.
            "WorkflowExecutionCompleted" => assert!(heard, "round {round}"),
            "WorkflowExecutionTerminated" => assert!(!heard, "round {round}"),
            other => panic!("round {round}: the child ended with {other}"),
        }
        // Drain the parent's wake-up task if the child's notice scheduled one (none: closed).
        let _ = poll_decision(&engine, "deciders");
    }
    // Two runs signalling each other in the same instant.
    for round in 0..40 {
        let (a_id, b_id) = (format!("a{round}"), format!("b{round}"));
        let a = start(&engine, &a_id, json!({}));
        let b = start(&engine, &b_id, json!({}));
        let first = poll_decision(&engine, "deciders");
        let second = poll_decision(&engine, "deciders");
        let signal = |to: &str| {
            json!([{"decisionType": "SignalExternalWorkflowExecution",
                    "signalExternalWorkflowExecutionDecisionAttributes": {
                        "workflowId": to, "signalName": "hi"}}])
        };
        let target_of = |task: &api::DecisionTask| {
            if task
                .workflow_execution
                .as_ref()
                .map(|w| w.workflow_id.clone())
                == Some(a_id.clone())
            {
                b_id.clone()
            } else {
                a_id.clone()
            }
        };
        std::thread::scope(|s| {
            s.spawn(|| respond(&engine, &first.task_token, signal(&target_of(&first))));
            s.spawn(|| respond(&engine, &second.task_token, signal(&target_of(&second))));
        });
        for (id, run) in [(&a_id, &a), (&b_id, &b)] {
            let events = history(&engine, id, run);
            assert!(types(&events).contains(&"ExternalWorkflowExecutionSignaled"));
            assert!(types(&events).contains(&"WorkflowExecutionSignaled"));
            for (i, e) in events.iter().enumerate() {
                assert_eq!(e["eventId"], json!(i as u64 + 1));
            }
            engine
                .swf()
                .terminate_workflow_execution(&input(json!({"domain": D, "workflowId": id})))
                .expect("terminates");
        }
    }
}

#[test]
fn a_terminated_parent_terminates_its_grandchildren_through_its_children() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(MemoryLog::new());
    let engine = setup(&log, &clock);
    let (parent, child) = parent_with_child(&engine, "TERMINATE");
    let task = poll_decision(&engine, "kids");
    respond(
        &engine,
        &task.task_token,
        json!([start_child("grandkid", json!({}))]),
    )
    .expect("the child starts its own child");
    let grandchild = open_run_of(&engine, "grandkid").expect("open");
    engine
        .swf()
        .terminate_workflow_execution(&input(json!({"domain": D, "workflowId": "p"})))
        .expect("terminates");
    for (id, run) in [("kid", &child), ("grandkid", &grandchild)] {
        let events = history(&engine, id, run);
        assert_eq!(
            attributes(&events, "WorkflowExecutionTerminated")["cause"],
            json!("CHILD_POLICY_APPLIED"),
            "{id}"
        );
    }
    // The child heard nothing of its grandchild: it was closed first.
    let kid = history(&engine, "kid", &child);
    assert_eq!(types(&kid).last(), Some(&"WorkflowExecutionTerminated"));
    let events = history(&engine, "p", &parent);
    assert_eq!(types(&events).last(), Some(&"WorkflowExecutionTerminated"));
}

#[test]
fn a_child_past_the_domains_open_runs_quota_fails_and_a_closed_child_makes_room() {
    let clock = ManualClock::new(T0);
    let log = Arc::new(BatchLog::default());
    let limited = crate::EngineOptions {
        swf_open_runs_per_domain_max: 2,
        ..options(&clock)
    };
    let engine = Engine::open_with_log(log.clone(), limited).expect("opens");
    register_domain(&engine, D, "1");
    engine
        .swf()
        .register_workflow_type(&input(json!({
            "domain": D, "name": "wf", "version": "1",
            "defaultTaskStartToCloseTimeout": "30", "defaultExecutionStartToCloseTimeout": "3600",
            "defaultTaskList": {"name": "deciders"}, "defaultChildPolicy": "TERMINATE"
        })))
        .expect("workflow type");
    let parent = start(&engine, "p", json!({}));
    let task = poll_decision(&engine, "deciders");
    respond(
        &engine,
        &task.task_token,
        json!([start_child("one", json!({})), start_child("two", json!({}))]),
    )
    .expect("answers");
    let events = history(&engine, "p", &parent);
    assert_eq!(
        attributes(&events, "StartChildWorkflowExecutionFailed")["cause"],
        json!("OPEN_WORKFLOWS_LIMIT_EXCEEDED")
    );
    assert_eq!(engine.swf().open_runs_in(D), 2);
    let kid = poll_decision(&engine, "kids");
    respond(&engine, &kid.task_token, json!([complete("done")])).expect("completes");
    assert_eq!(
        engine.swf().open_runs_in(D),
        1,
        "the child's close made room"
    );
    let task = poll_decision(&engine, "deciders");
    respond(
        &engine,
        &task.task_token,
        json!([start_child("two", json!({}))]),
    )
    .expect("answers");
    assert!(open_run_of(&engine, "two").is_some());
    assert_eq!(engine.swf().open_runs_in(D), 2);
}
