//! A decider that hangs up in the middle of its `PollForDecisionTask` over a real loopback
//! socket: the server drops the request, the engine's poll is given up (its blocking thread and
//! long-poll permit come back at once, not after the 60 s poll) and the decision task scheduled
//! afterwards is not claimed for the client that left: it stays pending, and the next decider
//! gets it as the run's first started task.
#![cfg(feature = "server")]

use std::time::Duration;

use serde_json::json;

use statelog::clock::Clock;
use statelog::server::credentials::DEV_ACCOUNT_ID;
use tokio::io::AsyncWriteExt;

use crate::serve_common;
use serve_common::socket;
use serve_common::*;

const DOMAIN: &str = "orders";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decider_that_hangs_up_mid_poll_leaves_the_task_to_the_next_decider() {
    let s = server(None);
    swf_ok(
        &s,
        "RegisterDomain",
        json!({"name": DOMAIN, "workflowExecutionRetentionPeriodInDays": "1"}),
    )
    .await;
    swf_ok(
        &s,
        "RegisterWorkflowType",
        json!({"domain": DOMAIN, "name": "order", "version": "1",
               "defaultTaskList": {"name": "deciders"},
               "defaultTaskStartToCloseTimeout": "30",
               "defaultExecutionStartToCloseTimeout": "600",
               "defaultChildPolicy": "TERMINATE"}),
    )
    .await;
    let running = socket::start_serving(
        s.state.clone(),
        statelog::server::ServeOptions::default(),
        false,
    )
    .await;
    let mut stream = socket::connect_from(socket::loopback(1), running.addr).await;
    let poll = signed_target(
        "swf",
        "SimpleWorkflowService.PollForDecisionTask",
        &json!({"domain": DOMAIN, "taskList": {"name": "deciders"}}),
        DEV.id,
        DEV.secret,
        s.clock.now_ms(),
    );
    stream
        .write_all(&socket::raw(poll).await)
        .await
        .expect("write the poll");
    // The poll reaches the engine and waits there, holding a long-poll permit.
    tokio::time::timeout(Duration::from_secs(10), async {
        while s.state.long_polls.held_by(DEV_ACCOUNT_ID) == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the poll waits");
    // The decider hangs up.
    drop(stream);
    tokio::time::timeout(Duration::from_secs(10), async {
        while s.state.long_polls.held_by(DEV_ACCOUNT_ID) != 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the abandoned poll ends and gives its permit back well before its 60 s");
    let run = swf_ok(
        &s,
        "StartWorkflowExecution",
        json!({"domain": DOMAIN, "workflowId": "o-1",
               "workflowType": {"name": "order", "version": "1"}}),
    )
    .await;
    let pending = swf_ok(
        &s,
        "CountPendingDecisionTasks",
        json!({"domain": DOMAIN, "taskList": {"name": "deciders"}}),
    )
    .await;
    assert_eq!(pending["count"], 1, "nobody claimed the task: {pending}");
    let task = swf_ok(
        &s,
        "PollForDecisionTask",
        json!({"domain": DOMAIN, "taskList": {"name": "deciders"}}),
    )
    .await;
    assert_eq!(task["workflowExecution"]["runId"], run["runId"], "{task}");
    assert_eq!(
        task["startedEventId"], 3,
        "the first start of the task: {task}"
    );
    running.stop().await;
}
