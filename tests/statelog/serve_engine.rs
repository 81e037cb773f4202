//! `statelog serve` over the real engine, in process: every served operation through the router
//! with SigV4-signed requests, the AWS error names the engine's refusals map to, account
//! isolation (one engine per account), and a real socket with graceful shutdown. Time comes from
//! a manual clock; nothing sleeps.
#![cfg(feature = "server")]

use std::sync::Arc;

use axum::body::Body;
use axum::http::StatusCode;
use serde_json::json;

use crate::serve_common;
use serve_common::*;

fn five_pass() -> String {
    json!({
        "StartAt": "P1",
        "States": {
            "P1": {"Type": "Pass", "Next": "P2"},
            "P2": {"Type": "Pass", "Result": {"step": 2}, "ResultPath": "$.two", "Next": "P3"},
            "P3": {"Type": "Pass", "Next": "P4"},
            "P4": {"Type": "Pass", "Next": "P5"},
            "P5": {"Type": "Pass", "End": true}
        }
    })
    .to_string()
}

fn waiting() -> String {
    json!({
        "StartAt": "Sleep",
        "States": {"Sleep": {"Type": "Wait", "Seconds": 3600, "End": true}}
    })
    .to_string()
}

#[tokio::test]
async fn every_served_operation_over_the_engine() {
    let s = server(None);
    let created = ok(
        &s,
        "CreateStateMachine",
        json!({"name": "five", "definition": five_pass(), "roleArn": ROLE}),
    )
    .await;
    let machine = created["stateMachineArn"].as_str().expect("arn").to_owned();
    assert_eq!(
        machine,
        "arn:aws:states:us-east-1:000000000000:stateMachine:five"
    );
    assert_eq!(created["creationDate"], json!(NOW_MS as f64 / 1000.0));
    ok(
        &s,
        "CreateStateMachine",
        json!({"name": "wait", "definition": waiting(), "roleArn": ROLE}),
    )
    .await;

    let described = ok(
        &s,
        "DescribeStateMachine",
        json!({"stateMachineArn": machine}),
    )
    .await;
    assert_eq!(described["definition"], five_pass());
    assert_eq!(described["roleArn"], ROLE);

    // Two machines, pages of one.
    let first = ok(&s, "ListStateMachines", json!({"maxResults": 1})).await;
    assert_eq!(first["stateMachines"][0]["name"], "five");
    let token = first["nextToken"]
        .as_str()
        .expect("a second page")
        .to_owned();
    let second = ok(
        &s,
        "ListStateMachines",
        json!({"maxResults": 1, "nextToken": token}),
    )
    .await;
    assert_eq!(second["stateMachines"][0]["name"], "wait");
    assert!(second.get("nextToken").is_none());

    let started = ok(
        &s,
        "StartExecution",
        json!({"stateMachineArn": machine, "name": "e1", "input": "{\"order\":7}"}),
    )
    .await;
    let execution = started["executionArn"].as_str().expect("arn").to_owned();
    assert_eq!(
        execution,
        "arn:aws:states:us-east-1:000000000000:execution:five:e1"
    );
    // Same name and input once closed: ExecutionAlreadyExists (idempotent only while running).
    refused(
        &s,
        "StartExecution",
        json!({"stateMachineArn": machine, "name": "e1", "input": "{\"order\":7}"}),
        "ExecutionAlreadyExists",
    )
    .await;

    let described = ok(&s, "DescribeExecution", json!({"executionArn": execution})).await;
    assert_eq!(described["status"], "SUCCEEDED", "{described}");
    assert_eq!(described["input"], "{\"order\":7}");
    assert_eq!(described["output"], "{\"order\":7,\"two\":{\"step\":2}}");
    assert!(described["stopDate"].is_number());

    let for_execution = ok(
        &s,
        "DescribeStateMachineForExecution",
        json!({"executionArn": execution}),
    )
    .await;
    assert_eq!(for_execution["stateMachineArn"], machine.as_str());
    assert_eq!(for_execution["definition"], five_pass());

    let history = ok(
        &s,
        "GetExecutionHistory",
        json!({"executionArn": execution}),
    )
    .await;
    let types: Vec<&str> = history["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["type"].as_str().expect("type"))
        .collect();
    assert_eq!(types.first(), Some(&"ExecutionStarted"));
    assert_eq!(types.last(), Some(&"ExecutionSucceeded"));
    assert_eq!(
        types.iter().filter(|t| **t == "PassStateEntered").count(),
        5
    );
    assert!(history["events"][0]["timestamp"].is_number());
    let reversed = ok(
        &s,
        "GetExecutionHistory",
        json!({"executionArn": execution, "reverseOrder": true, "maxResults": 2}),
    )
    .await;
    assert_eq!(reversed["events"][0]["type"], "ExecutionSucceeded");
    assert!(reversed["nextToken"].is_string());
    let no_data = ok(
        &s,
        "GetExecutionHistory",
        json!({"executionArn": execution, "includeExecutionData": false}),
    )
    .await;
    assert!(
        no_data["events"][0]["executionStartedEventDetails"]
            .get("input")
            .is_none(),
        "{}",
        no_data["events"][0]
    );

    // A waiting execution, stopped.
    let wait_machine = "arn:aws:states:us-east-1:000000000000:stateMachine:wait";
    let sleeper = ok(
        &s,
        "StartExecution",
        json!({"stateMachineArn": wait_machine, "name": "sleeper"}),
    )
    .await;
    let sleeper = sleeper["executionArn"].as_str().expect("arn").to_owned();
    // Same name, same input, still running: the same execution (AWS idempotency).
    let again = ok(
        &s,
        "StartExecution",
        json!({"stateMachineArn": wait_machine, "name": "sleeper"}),
    )
    .await;
    assert_eq!(again["executionArn"], sleeper.as_str());
    let running = ok(
        &s,
        "ListExecutions",
        json!({"stateMachineArn": wait_machine, "statusFilter": "RUNNING"}),
    )
    .await;
    assert_eq!(running["executions"].as_array().map(Vec::len), Some(1));
    s.clock.advance_ms(1_000);
    let stopped = ok(
        &s,
        "StopExecution",
        json!({"executionArn": sleeper, "error": "Manual", "cause": "test stop"}),
    )
    .await;
    assert_eq!(stopped["stopDate"], json!((NOW_MS + 1_000) as f64 / 1000.0));
    let described = ok(&s, "DescribeExecution", json!({"executionArn": sleeper})).await;
    assert_eq!(described["status"], "ABORTED");
    assert_eq!(described["error"], "Manual");
    assert_eq!(described["cause"], "test stop");
    let aborted = ok(
        &s,
        "ListExecutions",
        json!({"stateMachineArn": wait_machine, "statusFilter": "ABORTED"}),
    )
    .await;
    assert_eq!(aborted["executions"][0]["name"], "sleeper");
    assert!(aborted["executions"][0]["stopDate"].is_number());

    ok(
        &s,
        "DeleteStateMachine",
        json!({"stateMachineArn": machine}),
    )
    .await;
    refused(
        &s,
        "DescribeStateMachine",
        json!({"stateMachineArn": machine}),
        "StateMachineDoesNotExist",
    )
    .await;
    // Deleting what is gone succeeds, as on AWS.
    ok(
        &s,
        "DeleteStateMachine",
        json!({"stateMachineArn": machine}),
    )
    .await;
    assert_eq!(s.state.metrics.requests("StartExecution", "ok"), 3);
    assert_eq!(
        s.state
            .metrics
            .requests("StartExecution", "ExecutionAlreadyExists"),
        1
    );
}

#[tokio::test]
async fn engine_refusals_keep_their_aws_names() {
    let s = server(None);
    let message = refused(
        &s,
        "CreateStateMachine",
        json!({"name": "bad", "definition": "{\"StartAt\":\"Nowhere\",\"States\":{\"A\":{\"Type\":\"Pass\",\"End\":true}}}", "roleArn": ROLE}),
        "InvalidDefinition",
    )
    .await;
    assert!(
        message.contains("/StartAt"),
        "the message names the path: {message}"
    );
    refused(
        &s,
        "CreateStateMachine",
        json!({"name": "has space", "definition": five_pass(), "roleArn": ROLE}),
        "InvalidName",
    )
    .await;
    let machine = create_machine(&s, "m", &five_pass()).await;
    refused_each(
        &s,
        [
            (
                "CreateStateMachine",
                json!({"name": "m", "definition": waiting(), "roleArn": ROLE}),
                "StateMachineAlreadyExists",
            ),
            (
                "StartExecution",
                json!({"stateMachineArn": machine, "input": "{not json"}),
                "InvalidExecutionInput",
            ),
        ],
    )
    .await;
    let oversized = format!("\"{}\"", "x".repeat(256 * 1024));
    refused(
        &s,
        "StartExecution",
        json!({"stateMachineArn": machine, "input": oversized}),
        "InvalidExecutionInput",
    )
    .await;
    ok(
        &s,
        "StartExecution",
        json!({"stateMachineArn": machine, "name": "once", "input": "{}"}),
    )
    .await;
    refused_each(
        &s,
        [
            (
                "StartExecution",
                json!({"stateMachineArn": machine, "name": "once", "input": "{\"other\":1}"}),
                "ExecutionAlreadyExists",
            ),
            (
                "StartExecution",
                json!({"stateMachineArn": "not-an-arn"}),
                "InvalidArn",
            ),
            (
                "DescribeExecution",
                json!({"executionArn": machine}),
                "InvalidArn",
            ),
            (
                "StartExecution",
                json!({"stateMachineArn": "arn:aws:states:us-east-1:000000000000:stateMachine:ghost"}),
                "StateMachineDoesNotExist",
            ),
            (
                "DescribeExecution",
                json!({"executionArn": "arn:aws:states:us-east-1:000000000000:execution:m:ghost"}),
                "ExecutionDoesNotExist",
            ),
            (
                "GetExecutionHistory",
                json!({"executionArn": "arn:aws:states:us-east-1:000000000000:execution:m:once", "nextToken": "garbage"}),
                "InvalidToken",
            ),
            (
                "UpdateStateMachine",
                json!({"stateMachineArn": machine}),
                "MissingRequiredParameter",
            ),
        ],
    )
    .await;
}

#[tokio::test]
async fn accounts_are_separate_engines() {
    let s = server(Some(two_accounts()));
    let body = json!({"name": "shared-name", "definition": five_pass(), "roleArn": ROLE});
    let one = ok_as(&s, ONE, "CreateStateMachine", body.clone()).await;
    let two = ok_as(&s, TWO, "CreateStateMachine", body).await;
    assert_eq!(
        one["stateMachineArn"],
        "arn:aws:states:us-east-1:111111111111:stateMachine:shared-name"
    );
    assert_eq!(
        two["stateMachineArn"],
        "arn:aws:states:us-east-1:222222222222:stateMachine:shared-name"
    );
    let started = ok_as(
        &s,
        ONE,
        "StartExecution",
        json!({"stateMachineArn": one["stateMachineArn"], "name": "mine"}),
    )
    .await;
    // Account two cannot see account one's execution, even with its exact ARN.
    let seen = json!({"executionArn": started["executionArn"]});
    refused_as(&s, TWO, "DescribeExecution", seen, "ExecutionDoesNotExist").await;
    let theirs = json!({"stateMachineArn": two["stateMachineArn"]});
    let listed = ok_as(&s, TWO, "ListExecutions", theirs).await;
    assert_eq!(listed["executions"], json!([]));
    // The wrong secret for a known key is a signature failure, not an account switch.
    let mixed = Key {
        id: ONE.id,
        secret: TWO.secret,
    };
    let (status, wrong) = call_as(&s, mixed, "ListStateMachines", json!({})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(wrong["__type"], "InvalidSignatureException");
}

// Multi-threaded, as `statelog serve` runs: engine calls go through `block_in_place`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_socket_serves_and_shuts_down_gracefully() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let s = server(None);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(statelog::server::serve(
        s.state.clone(),
        listener,
        8,
        async move {
            let _ = stopped.await;
        },
    ));
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = signed_request("ListStateMachines", &json!({}), "test", "test", NOW_MS);
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX).await.expect("body");
    let mut text = format!(
        "POST / HTTP/1.1\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (name, value) in &parts.headers {
        text.push_str(&format!("{name}: {}\r\n", value.to_str().expect("ascii")));
    }
    text.push_str("\r\n");
    stream.write_all(text.as_bytes()).await.expect("write");
    stream.write_all(&body).await.expect("write body");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.expect("read");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("{\"stateMachines\":[]}"), "{answer}");
    stop.send(()).expect("server waiting");
    task.await.expect("joins").expect("clean shutdown");
    // After shutdown nothing listens.
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

/// Many clients at once, valid and invalid requests mixed (bad JSON, unknown operations, wrong
/// signatures, unknown ARNs, oversized inputs): never a 5xx, and every acknowledged start exists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_mixed_clients_never_see_a_5xx() {
    let s = Arc::new(server(None));
    let machine = create_machine(&s, "five", &five_pass()).await;
    let clients: usize = 16;
    let requests_each: usize = 25;
    let mut tasks = Vec::new();
    for client in 0..clients {
        let s = s.clone();
        let machine = machine.clone();
        tasks.push(tokio::spawn(async move {
            let mut started = Vec::new();
            for i in 0..requests_each {
                let (status, value) = match i % 5 {
                    0 => call(&s, "StartExecution", json!({"stateMachineArn": machine, "name": format!("c{client}-{i}")})).await,
                    1 => {
                        let mut request = signed_request("DescribeExecution", &json!({}), "test", "test", NOW_MS);
                        *request.body_mut() = Body::from("{not json");
                        send(&s, request).await
                    }
                    2 => call(&s, "NoSuchOperation", json!({})).await,
                    3 => call(&s, "DescribeExecution", json!({"executionArn": format!("{machine}:nope").replace(":stateMachine:", ":execution:")})).await,
                    _ => call(&s, "StartExecution", json!({"stateMachineArn": machine, "input": format!("\"{}\"", "x".repeat(300 * 1024))})).await,
                };
                assert!(!status.is_server_error(), "5xx: {status} {value}");
                assert!(status == StatusCode::OK || value["__type"].is_string(), "{value}");
                if i % 5 == 0 {
                    assert_eq!(status, StatusCode::OK, "{value}");
                    started.push(value["executionArn"].as_str().expect("arn").to_owned());
                }
            }
            started
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("client task"));
    }
    assert_eq!(all.len(), clients * requests_each.div_ceil(5));
    for arn in &all {
        let described = ok(&s, "DescribeExecution", json!({"executionArn": arn})).await;
        assert_eq!(described["status"], "SUCCEEDED");
    }
}

#[tokio::test]
async fn describe_execution_returns_the_input_as_sent_and_the_output_as_produced() {
    let s = server(None);
    // A pass-through machine and one that builds its output.
    let through = json!({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}});
    let built = json!({"StartAt": "P", "States": {"P": {"Type": "Pass",
        "Parameters": {"zeta.$": "$.z", "alpha": 1, "whole.$": "$"}, "End": true}}});
    let sent = "{ \"z\" : [1,  2],\n  \"a\":\t{\"y\": true, \"b\": null} }";
    for (name, definition, expected_output) in [
        ("through", through, sent.to_owned()),
        (
            "built",
            built,
            // Built output is compact, in the order the state made it; the input inside it
            // keeps the caller's text, as the history shows it.
            format!("{{\"zeta\":[1,2],\"alpha\":1,\"whole\":{sent}}}"),
        ),
    ] {
        let machine = create_machine(&s, name, &definition.to_string()).await;
        let described = describe(&s, &start_with_input(&s, &machine, sent).await).await;
        assert_eq!(described["status"], "SUCCEEDED", "{described}");
        assert_eq!(described["input"], sent, "{name}: {described}");
        assert_eq!(
            described["output"],
            expected_output.as_str(),
            "{name}: {described}"
        );
    }
    // A compact input stays as it was sent too.
    let machine = "arn:aws:states:us-east-1:000000000000:stateMachine:through";
    let described = describe(
        &s,
        &start_with_input(&s, machine, "{\"b\":1,\"a\":2}").await,
    )
    .await;
    assert_eq!(described["input"], "{\"b\":1,\"a\":2}");
    assert_eq!(described["output"], "{\"b\":1,\"a\":2}");
}

#[tokio::test]
async fn variables_show_in_history_and_in_both_machine_descriptions_as_aws_shows_them() {
    let s = server(None);
    let definition = json!({"StartAt": "Set", "States": {
        "Set": {"Type": "Pass", "Assign": {"n": 1, "who.$": "$.who"}, "Next": "Read"},
        "Read": {"Type": "Pass", "Parameters": {"n.$": "$n", "who.$": "$who"}, "End": true}}});
    let machine = create_machine(&s, "vars", &definition.to_string()).await;
    let references = json!({"Read": ["n", "who"]});
    let described = ok(
        &s,
        "DescribeStateMachine",
        json!({"stateMachineArn": machine}),
    )
    .await;
    assert_eq!(described["variableReferences"], references, "{described}");
    let execution = start_with_input(&s, &machine, r#"{"who": "me"}"#).await;
    idle(&s, "000000000000");
    let for_execution = ok(
        &s,
        "DescribeStateMachineForExecution",
        json!({"executionArn": execution}),
    )
    .await;
    assert_eq!(for_execution["variableReferences"], references);
    let history = ok(
        &s,
        "GetExecutionHistory",
        json!({"executionArn": execution}),
    )
    .await;
    let exited = &history["events"][2];
    assert_eq!(exited["type"], "PassStateExited", "{history}");
    assert_eq!(
        exited["stateExitedEventDetails"]["assignedVariables"],
        json!({"n": "1", "who": "\"me\""})
    );
    assert_eq!(
        exited["stateExitedEventDetails"]["assignedVariablesDetails"],
        json!({"truncated": false})
    );
    // A state without Assign shows neither field.
    let last = &history["events"][4];
    assert_eq!(last["type"], "PassStateExited", "{history}");
    assert!(last["stateExitedEventDetails"]
        .get("assignedVariables")
        .is_none());
    assert!(last["stateExitedEventDetails"]
        .get("assignedVariablesDetails")
        .is_none());
    assert_eq!(
        describe(&s, &execution).await["output"],
        r#"{"n":1,"who":"me"}"#
    );
    // Without execution data the values are left out, like the payloads.
    let bare = ok(
        &s,
        "GetExecutionHistory",
        json!({"executionArn": execution, "includeExecutionData": false}),
    )
    .await;
    assert!(bare["events"][2]["stateExitedEventDetails"]
        .get("assignedVariables")
        .is_none());
    // A machine without variables has no `variableReferences`.
    let plain = create_machine(&s, "plain", &five_pass()).await;
    let described = ok(
        &s,
        "DescribeStateMachine",
        json!({"stateMachineArn": plain}),
    )
    .await;
    assert!(described.get("variableReferences").is_none(), "{described}");
}

/// GetExecutionHistory read a page at a time, oldest first and newest first, gives exactly the
/// events of one whole read, rendered the same: with a Map state (whose exit changes how later
/// events render, so pages read from the first event) and without one (pages read only their
/// own records and the first event's, whose input text the states' inputs are written in).
#[tokio::test]
async fn history_pages_in_either_order_are_the_whole_history() {
    let s = server(None);
    let with_map = json!({
        "StartAt": "Before",
        "States": {
            "Before": {"Type": "Pass", "Next": "Each"},
            "Each": {
                "Type": "Map",
                "ItemsPath": "$.items",
                "ItemProcessor": {"StartAt": "Item", "States": {"Item": {"Type": "Pass", "End": true}}},
                "ResultPath": "$.done",
                "Next": "After1"
            },
            "After1": {"Type": "Pass", "Next": "After2"},
            "After2": {"Type": "Pass", "Next": "After3"},
            "After3": {"Type": "Pass", "End": true}
        }
    });
    let states: serde_json::Map<String, serde_json::Value> = (1..=12)
        .map(|i| {
            let next = if i == 12 {
                json!({"Type": "Pass", "End": true})
            } else {
                json!({"Type": "Pass", "Next": format!("P{}", i + 1)})
            };
            (format!("P{i}"), next)
        })
        .collect();
    let without_map = json!({"StartAt": "P1", "States": states});
    for (name, definition) in [("paged-map", with_map), ("paged-chain", without_map)] {
        let machine = create_machine(&s, name, &definition.to_string()).await;
        let execution = start_with_input(&s, &machine, r#"{ "items" : [1,  2, 3] }"#).await;
        let whole = ok(
            &s,
            "GetExecutionHistory",
            json!({"executionArn": execution, "maxResults": 1000}),
        )
        .await["events"]
            .as_array()
            .expect("events")
            .clone();
        assert_eq!(whole.last().expect("events")["type"], "ExecutionSucceeded");
        assert!(whole.len() > 20, "{name}: {} events", whole.len());
        // The first state's input is the execution's, shown as its caller wrote it.
        assert_eq!(
            whole[1]["stateEnteredEventDetails"]["input"], r#"{ "items" : [1,  2, 3] }"#,
            "{name}"
        );
        for reverse in [false, true] {
            for page_size in [1, 4, 7] {
                let mut paged = Vec::new();
                let mut token: Option<String> = None;
                loop {
                    let mut input = json!({"executionArn": execution, "maxResults": page_size, "reverseOrder": reverse});
                    if let Some(token) = &token {
                        input["nextToken"] = json!(token);
                    }
                    let page = ok(&s, "GetExecutionHistory", input).await;
                    let events = page["events"].as_array().expect("events");
                    assert!(events.len() <= page_size);
                    paged.extend(events.iter().cloned());
                    match page["nextToken"].as_str() {
                        Some(next) => token = Some(next.to_owned()),
                        None => break,
                    }
                }
                let mut expected = whole.clone();
                if reverse {
                    expected.reverse();
                }
                assert_eq!(
                    paged, expected,
                    "{name}: reverse {reverse}, pages of {page_size}"
                );
            }
        }
    }
}
