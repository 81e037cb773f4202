//! `statelog serve`'s Amazon SWF workflow operations over the real engine, in process: the
//! registry's answers and faults in SWF's JSON shape, a decision and activity round trip with
//! SWF's event ids, a long poll that a later start wakes, and the account's own domain moving
//! from the Step Functions mapping to SWF once an SWF domain of that name exists. The engine's
//! timers never fire (manual clock); polls are made only where a task waits or will be
//! scheduled, so nothing sits out a 60 s poll.
#![cfg(feature = "server")]

use std::time::Duration;

use serde_json::{json, Value};

use statelog::clock::Clock;
use statelog::server::credentials::DEV_ACCOUNT_ID;

use crate::serve_common;
use serve_common::*;

const DOMAIN: &str = "orders";

async fn register(s: &Server) {
    swf_ok(
        s,
        "RegisterDomain",
        json!({"name": DOMAIN, "workflowExecutionRetentionPeriodInDays": "1"}),
    )
    .await;
    swf_ok(
        s,
        "RegisterWorkflowType",
        json!({"domain": DOMAIN, "name": "order", "version": "1",
               "defaultTaskList": {"name": "deciders"},
               "defaultTaskStartToCloseTimeout": "30",
               "defaultExecutionStartToCloseTimeout": "600",
               "defaultChildPolicy": "TERMINATE"}),
    )
    .await;
    swf_ok(
        s,
        "RegisterActivityType",
        json!({"domain": DOMAIN, "name": "charge", "version": "1",
               "defaultTaskList": {"name": "workers"},
               "defaultTaskScheduleToStartTimeout": "60",
               "defaultTaskScheduleToCloseTimeout": "120",
               "defaultTaskStartToCloseTimeout": "60",
               "defaultTaskHeartbeatTimeout": "NONE"}),
    )
    .await;
}

fn event_types(events: &Value) -> Vec<&str> {
    events
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["eventType"].as_str().expect("eventType"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_registry_answers_in_swf_shapes_with_swf_faults() {
    let s = server(None);
    register(&s).await;
    let detail = swf_ok(&s, "DescribeDomain", json!({"name": DOMAIN})).await;
    assert_eq!(detail["domainInfo"]["name"], DOMAIN);
    assert_eq!(detail["domainInfo"]["status"], "REGISTERED");
    assert_eq!(
        detail["configuration"],
        json!({"workflowExecutionRetentionPeriodInDays": "1"})
    );
    let (status, again) = swf_call(
        &s,
        "RegisterDomain",
        json!({"name": DOMAIN, "workflowExecutionRetentionPeriodInDays": "1"}),
    )
    .await;
    assert_eq!(status.as_u16(), 400, "{again}");
    assert_eq!(
        again["__type"],
        "com.amazonaws.swf.base.model#DomainAlreadyExistsFault"
    );
    assert!(again["message"]
        .as_str()
        .is_some_and(|m| m.contains(DOMAIN)));
    let message = swf_refused(
        &s,
        "RegisterDomain",
        json!({"name": "x"}),
        "ValidationException",
    )
    .await;
    assert!(
        message.contains("workflowExecutionRetentionPeriodInDays"),
        "{message}"
    );
    swf_refused(
        &s,
        "DescribeWorkflowType",
        json!({"domain": DOMAIN, "workflowType": {"name": "none", "version": "1"}}),
        "UnknownResourceFault",
    )
    .await;
    let listed = swf_ok(
        &s,
        "ListActivityTypes",
        json!({"domain": DOMAIN, "registrationStatus": "REGISTERED"}),
    )
    .await;
    assert_eq!(
        listed["typeInfos"][0]["activityType"],
        json!({"name": "charge", "version": "1"})
    );
    // Operations SWF answers with nothing answer `{}`.
    let deprecated = swf_ok(&s, "DeprecateDomain", json!({"name": DOMAIN})).await;
    assert_eq!(deprecated, json!({}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_and_an_activity_round_trip_over_http() {
    let s = server(None);
    register(&s).await;
    let run = swf_ok(
        &s,
        "StartWorkflowExecution",
        json!({"domain": DOMAIN, "workflowId": "o-1",
               "workflowType": {"name": "order", "version": "1"}, "input": "in"}),
    )
    .await;
    let run_id = run["runId"].as_str().expect("runId").to_owned();
    let deciders = json!({"domain": DOMAIN, "taskList": {"name": "deciders"}, "identity": "d1"});
    let task = swf_ok(&s, "PollForDecisionTask", deciders.clone()).await;
    assert_eq!(task["startedEventId"], 3, "{task}");
    assert_eq!(task["previousStartedEventId"], 0, "{task}");
    assert_eq!(
        task["workflowExecution"],
        json!({"workflowId": "o-1", "runId": run_id})
    );
    assert_eq!(
        event_types(&task["events"]),
        [
            "WorkflowExecutionStarted",
            "DecisionTaskScheduled",
            "DecisionTaskStarted"
        ]
    );
    let schedule = json!({"decisionType": "ScheduleActivityTask",
        "scheduleActivityTaskDecisionAttributes": {
            "activityType": {"name": "charge", "version": "1"}, "activityId": "c1", "input": "5"}});
    let answered = swf_ok(
        &s,
        "RespondDecisionTaskCompleted",
        json!({"taskToken": task["taskToken"], "decisions": [schedule]}),
    )
    .await;
    assert_eq!(answered, json!({}));
    let workers = json!({"domain": DOMAIN, "taskList": {"name": "workers"}, "identity": "w1"});
    let work = swf_ok(&s, "PollForActivityTask", workers).await;
    assert_eq!(work["activityId"], "c1", "{work}");
    assert_eq!(work["input"], "5");
    assert_eq!(work["startedEventId"], 6);
    let token = work["taskToken"].as_str().expect("token").to_owned();
    assert!(
        !token.contains('.'),
        "an SWF token is not shaped as a Step Functions one"
    );
    swf_ok(
        &s,
        "RespondActivityTaskCompleted",
        json!({"taskToken": token, "result": "charged"}),
    )
    .await;
    // A spent token is SWF's UnknownResourceFault (not the Step Functions mapping's answer).
    swf_refused(
        &s,
        "RespondActivityTaskCompleted",
        json!({"taskToken": token, "result": "again"}),
        "UnknownResourceFault",
    )
    .await;
    let task = swf_ok(&s, "PollForDecisionTask", deciders).await;
    assert_eq!(task["startedEventId"], 9, "{task}");
    assert_eq!(task["previousStartedEventId"], 3, "{task}");
    let complete = json!({"decisionType": "CompleteWorkflowExecution",
        "completeWorkflowExecutionDecisionAttributes": {"result": "done"}});
    swf_ok(
        &s,
        "RespondDecisionTaskCompleted",
        json!({"taskToken": task["taskToken"], "decisions": [complete]}),
    )
    .await;
    let execution = json!({"workflowId": "o-1", "runId": run_id});
    let detail = swf_ok(
        &s,
        "DescribeWorkflowExecution",
        json!({"domain": DOMAIN, "execution": execution}),
    )
    .await;
    assert_eq!(
        detail["executionInfo"]["executionStatus"], "CLOSED",
        "{detail}"
    );
    assert_eq!(detail["executionInfo"]["closeStatus"], "COMPLETED");
    let history = swf_ok(
        &s,
        "GetWorkflowExecutionHistory",
        json!({"domain": DOMAIN, "execution": execution, "reverseOrder": true,
               "maximumPageSize": 2}),
    )
    .await;
    assert_eq!(
        event_types(&history["events"]),
        ["WorkflowExecutionCompleted", "DecisionTaskCompleted"]
    );
    assert!(history["nextPageToken"].is_string(), "{history}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_decision_poll_is_handed_the_task_a_later_start_schedules() {
    let s = server(None);
    register(&s).await;
    let poll = {
        let state = s.state.clone();
        let body = json!({"domain": DOMAIN, "taskList": {"name": "deciders"}});
        let target = "SimpleWorkflowService.PollForDecisionTask";
        let request = signed_target("swf", target, &body, DEV.id, DEV.secret, s.clock.now_ms());
        tokio::spawn(async move { send_to(&state, request).await })
    };
    // Let the poll reach the engine and wait there (it holds a long-poll permit while it does).
    tokio::time::timeout(Duration::from_secs(10), async {
        while s.state.long_polls.held_by(DEV_ACCOUNT_ID) == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the poll waits");
    swf_ok(
        &s,
        "StartWorkflowExecution",
        json!({"domain": DOMAIN, "workflowId": "o-2",
               "workflowType": {"name": "order", "version": "1"}}),
    )
    .await;
    let (status, task) = tokio::time::timeout(Duration::from_secs(10), poll)
        .await
        .expect("the start wakes the poll")
        .expect("poll task");
    assert_eq!(status.as_u16(), 200, "{task}");
    assert_eq!(task["workflowExecution"]["workflowId"], "o-2", "{task}");
    assert_eq!(
        s.state.long_polls.held_by(DEV_ACCOUNT_ID),
        0,
        "the permit is back"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_accounts_own_domain_moves_from_the_step_functions_mapping_to_swf() {
    let s = server(None);
    // A Step Functions task waits in list `gpu`; the account's domain counts it.
    let activity = ok(&s, "CreateActivity", json!({"name": "resize"})).await;
    let definition = json!({
        "StartAt": "Work",
        "States": {"Work": {"Type": "Task", "Resource": activity["activityArn"],
                            "TaskList": "gpu", "End": true}}
    })
    .to_string();
    let machine = create_machine(&s, "m", &definition).await;
    let first = start(&s, &machine, "e1").await;
    idle(&s, DEV_ACCOUNT_ID);
    let count = json!({"domain": DEV_ACCOUNT_ID, "taskList": {"name": "gpu"}});
    let mapped = swf_ok(&s, "CountPendingActivityTasks", count.clone()).await;
    assert_eq!(mapped["count"], 1, "{mapped}");
    let poll = json!({"domain": DEV_ACCOUNT_ID, "taskList": {"name": "gpu"}});
    let task = swf_ok(&s, "PollForActivityTask", poll).await;
    let token = task["taskToken"].as_str().expect("token").to_owned();
    assert!(!token.is_empty(), "{task}");
    // An SWF domain of the account's name: its SWF task lists serve from now on.
    swf_ok(
        &s,
        "RegisterDomain",
        json!({"name": DEV_ACCOUNT_ID, "workflowExecutionRetentionPeriodInDays": "1"}),
    )
    .await;
    swf_refused(
        &s,
        "CountPendingActivityTasks",
        json!({"domain": "someone-else", "taskList": {"name": "gpu"}}),
        "UnknownResourceFault",
    )
    .await;
    start(&s, &machine, "e2").await;
    idle(&s, DEV_ACCOUNT_ID);
    let swf = swf_ok(&s, "CountPendingActivityTasks", count).await;
    assert_eq!(
        swf["count"], 0,
        "the SWF list, not the Step Functions one: {swf}"
    );
    // The Step Functions token a worker holds still answers its task over SWF.
    swf_ok(
        &s,
        "RespondActivityTaskCompleted",
        json!({"taskToken": token, "result": "{\"ok\": true}"}),
    )
    .await;
    idle(&s, DEV_ACCOUNT_ID);
    let done = ok(&s, "DescribeExecution", json!({"executionArn": first})).await;
    assert_eq!(done["status"], "SUCCEEDED", "{done}");
}
