//! `statelog serve` over the real engine for what is persisted besides histories:
//! UpdateStateMachine (the AWS answer shape, `MissingRequiredParameter`, `InvalidDefinition`,
//! `StateMachineDoesNotExist`, running executions keeping their definition), and
//! TagResource / UntagResource / ListTagsForResource plus tags at creation (`TooManyTags` with
//! `resourceName`, `ResourceNotFound`, validation of keys and values, account isolation).
#![cfg(feature = "server")]

use axum::http::StatusCode;
use serde_json::{json, Value};

use statelog::server::credentials::DEV_ACCOUNT_ID;

use crate::serve_common;
use serve_common::*;

fn pass(result: u32) -> String {
    json!({"StartAt": "P", "States": {"P": {"Type": "Pass", "Result": {"v": result}, "End": true}}})
        .to_string()
}

fn waiting() -> String {
    json!({"StartAt": "Sleep", "States": {"Sleep": {"Type": "Wait", "Seconds": 3600, "End": true}}})
        .to_string()
}

fn tag_list(pairs: &[(&str, &str)]) -> Value {
    Value::Array(
        pairs
            .iter()
            .map(|(k, v)| json!({"key": k, "value": v}))
            .collect(),
    )
}

#[tokio::test]
async fn update_state_machine_over_http() {
    let s = server(None);
    let machine = create_machine(&s, "m", &waiting()).await;
    let old = start(&s, &machine, "old").await;
    s.clock.advance_ms(2_000);
    let updated = ok(
        &s,
        "UpdateStateMachine",
        json!({"stateMachineArn": machine, "definition": pass(2)}),
    )
    .await;
    assert_eq!(
        updated["updateDate"],
        json!((NOW_MS + 2_000) as f64 / 1000.0)
    );
    let described = ok(
        &s,
        "DescribeStateMachine",
        json!({"stateMachineArn": machine}),
    )
    .await;
    assert_eq!(described["definition"], pass(2));
    assert_eq!(described["creationDate"], json!(NOW_MS as f64 / 1000.0));
    assert_eq!(described["roleArn"], ROLE);
    let for_old = ok(
        &s,
        "DescribeStateMachineForExecution",
        json!({"executionArn": old}),
    )
    .await;
    assert_eq!(for_old["definition"], waiting());
    assert_eq!(for_old["updateDate"], json!(NOW_MS as f64 / 1000.0));
    let new = start(&s, &machine, "new").await;
    let for_new = ok(
        &s,
        "DescribeStateMachineForExecution",
        json!({"executionArn": new}),
    )
    .await;
    assert_eq!(for_new["definition"], pass(2));
    assert_eq!(
        for_new["updateDate"],
        json!((NOW_MS + 2_000) as f64 / 1000.0)
    );
    let old_status = ok(&s, "DescribeExecution", json!({"executionArn": old})).await;
    assert_eq!(old_status["status"], "RUNNING");

    // A role-only update keeps the definition.
    let role = "arn:aws:iam::000000000000:role/other";
    ok(
        &s,
        "UpdateStateMachine",
        json!({"stateMachineArn": machine, "roleArn": role}),
    )
    .await;
    let described = ok(
        &s,
        "DescribeStateMachine",
        json!({"stateMachineArn": machine}),
    )
    .await;
    assert_eq!(
        (
            described["definition"].clone(),
            described["roleArn"].clone()
        ),
        (json!(pass(2)), json!(role))
    );

    let message = refused(
        &s,
        "UpdateStateMachine",
        json!({"stateMachineArn": machine, "definition": "{\"StartAt\": \"X\", \"States\": {}}"}),
        "InvalidDefinition",
    )
    .await;
    assert!(message.contains("StartAt"), "{message}");
    let nope = "arn:aws:states:us-east-1:000000000000:stateMachine:nope";
    refused_each(
        &s,
        [
            (
                "UpdateStateMachine",
                json!({"stateMachineArn": machine}),
                "MissingRequiredParameter",
            ),
            (
                "UpdateStateMachine",
                json!({"stateMachineArn": nope, "definition": pass(1)}),
                "StateMachineDoesNotExist",
            ),
            (
                "UpdateStateMachine",
                json!({"stateMachineArn": old, "definition": pass(1)}),
                "InvalidArn",
            ),
            (
                "UpdateStateMachine",
                json!({"definition": pass(1)}),
                "ValidationException",
            ),
        ],
    )
    .await;
}

/// `revisionId`: absent for the revision made at creation (AWS: "the first revision ID when
/// you create the state machine is null"), a new id on each update, the same id on
/// UpdateStateMachine's answer, DescribeStateMachine and DescribeStateMachineForExecution of an
/// execution started on that revision, and the same ids after a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revision_ids_name_each_update_and_survive_a_restart() {
    let s = server(None);
    let machine = create_machine(&s, "m", &waiting()).await;
    let first = start(&s, &machine, "first").await;
    let describe = json!({"stateMachineArn": machine});
    let created = ok(&s, "DescribeStateMachine", describe.clone()).await;
    assert!(created.get("revisionId").is_none(), "{created}");

    let update = |definition: String| json!({"stateMachineArn": machine, "definition": definition});
    let one = ok(&s, "UpdateStateMachine", update(pass(1))).await["revisionId"].clone();
    let second = start(&s, &machine, "second").await;
    let two = ok(&s, "UpdateStateMachine", update(pass(2))).await["revisionId"].clone();
    let id = |v: &Value| v.as_str().map(str::to_owned).expect("a revisionId string");
    let (one, two) = (id(&one), id(&two));
    assert_ne!(one, two);
    // UUID-shaped: 8-4-4-4-12 lower-case hex digits.
    let groups: Vec<usize> = one.split('-').map(str::len).collect();
    assert_eq!(groups, [8, 4, 4, 4, 12], "{one}");
    assert!(
        one.chars().all(|c| c == '-' || c.is_ascii_hexdigit()),
        "{one}"
    );

    let s = restart(s).await;
    for _ in 0..2 {
        let described = ok(&s, "DescribeStateMachine", describe.clone()).await;
        assert_eq!(described["revisionId"], two.as_str(), "{described}");
        let for_first = json!({"executionArn": first});
        let for_first = ok(&s, "DescribeStateMachineForExecution", for_first).await;
        assert!(for_first.get("revisionId").is_none(), "{for_first}");
        let for_second = json!({"executionArn": second});
        let for_second = ok(&s, "DescribeStateMachineForExecution", for_second).await;
        assert_eq!(for_second["revisionId"], one.as_str(), "{for_second}");
        assert_eq!(for_second["definition"], pass(1));
    }
    // A machine deleted and created again under the same name starts over: no revisionId,
    // and its first update's id is not one of the old machine's.
    ok(&s, "DeleteStateMachine", describe.clone()).await;
    let again = create_machine(&s, "m", &pass(3)).await;
    assert_eq!(again, machine);
    let described = ok(&s, "DescribeStateMachine", describe.clone()).await;
    assert!(described.get("revisionId").is_none(), "{described}");
    let three = ok(&s, "UpdateStateMachine", update(pass(4))).await;
    let three = id(&three["revisionId"]);
    assert!(three != one && three != two, "{three}");
}

/// Compaction copies live records forward under new LSNs; a revision keeps its `revisionId`
/// (made from original LSNs) through it and the restart after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revision_ids_survive_a_compaction_that_copies_their_records() {
    const DAY_MS: u64 = 24 * 60 * 60 * 1000;
    let s = server_with(None, |options| {
        options.segment_size_bytes = 16 * 1024;
        options.retention_ms = 30 * DAY_MS;
    });
    let machine = create_machine(&s, "m", &pass(1)).await;
    let update = json!({"stateMachineArn": machine, "definition": pass(2)});
    let revision = ok(&s, "UpdateStateMachine", update).await["revisionId"].clone();
    assert!(revision.is_string(), "{revision}");
    // Fill segments with executions that expire, so the machine's records are copied forward.
    let padded = format!("{{\"pad\":\"{}\"}}", "x".repeat(100));
    for _ in 0..200 {
        start_with_input(&s, &machine, &padded).await;
    }
    idle(&s, DEV_ACCOUNT_ID);
    s.clock.advance_ms(31 * DAY_MS);
    let young = start(&s, &machine, "young").await;
    idle(&s, DEV_ACCOUNT_ID);
    let report = engine(&s, DEV_ACCOUNT_ID).compact().expect("compacts");
    assert!(report.segments_deleted_count > 0, "{report:?}");
    let s = restart(s).await;
    let described = ok(
        &s,
        "DescribeStateMachine",
        json!({"stateMachineArn": machine}),
    )
    .await;
    assert_eq!(described["revisionId"], revision, "{described}");
    let for_young = json!({"executionArn": young});
    let for_young = ok(&s, "DescribeStateMachineForExecution", for_young).await;
    assert_eq!(for_young["revisionId"], revision, "{for_young}");
}

#[tokio::test]
async fn tags_over_http() {
    let s = server(None);
    let machine = ok(
        &s,
        "CreateStateMachine",
        json!({"name": "m", "definition": pass(1), "roleArn": ROLE,
               "tags": tag_list(&[("team", "a"), ("cost", "")])}),
    )
    .await["stateMachineArn"]
        .as_str()
        .expect("arn")
        .to_owned();
    let listed = ok(&s, "ListTagsForResource", json!({"resourceArn": machine})).await;
    assert_eq!(
        listed,
        json!({"tags": tag_list(&[("cost", ""), ("team", "a")])})
    );
    let answer = ok(
        &s,
        "TagResource",
        json!({"resourceArn": machine, "tags": tag_list(&[("team", "b"), ("env", "prod")])}),
    )
    .await;
    assert_eq!(answer, json!({}));
    let answer = ok(
        &s,
        "UntagResource",
        json!({"resourceArn": machine, "tagKeys": ["cost"]}),
    )
    .await;
    assert_eq!(answer, json!({}));
    let listed = ok(&s, "ListTagsForResource", json!({"resourceArn": machine})).await;
    assert_eq!(listed["tags"], tag_list(&[("env", "prod"), ("team", "b")]));

    let activity = ok(
        &s,
        "CreateActivity",
        json!({"name": "work", "tags": tag_list(&[("kind", "gpu")])}),
    )
    .await["activityArn"]
        .as_str()
        .expect("arn")
        .to_owned();
    let listed = ok(&s, "ListTagsForResource", json!({"resourceArn": activity})).await;
    assert_eq!(listed["tags"], tag_list(&[("kind", "gpu")]));

    // 50 tags at most: the 51st is refused with the resource's name.
    let many: Vec<(String, String)> = (0..48).map(|i| (format!("t{i}"), "x".into())).collect();
    let many: Vec<(&str, &str)> = many.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    ok(
        &s,
        "TagResource",
        json!({"resourceArn": machine, "tags": tag_list(&many)}),
    )
    .await;
    let (status, body) = call(
        &s,
        "TagResource",
        json!({"resourceArn": machine, "tags": tag_list(&[("one-more", "x")])}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["__type"], "TooManyTags", "{body}");
    assert_eq!(body["resourceName"], machine.as_str(), "{body}");
    let listed = ok(&s, "ListTagsForResource", json!({"resourceArn": machine})).await;
    assert_eq!(listed["tags"].as_array().map(Vec::len), Some(50));

    let long_key = "k".repeat(129);
    refused_each(
        &s,
        [
            (
                "TagResource",
                json!({"resourceArn": activity, "tags": tag_list(&[(long_key.as_str(), "v")])}),
                "ValidationException",
            ),
            (
                "TagResource",
                json!({"resourceArn": activity, "tags": "not a list"}),
                "SerializationException",
            ),
            (
                "TagResource",
                json!({"resourceArn": activity}),
                "ValidationException",
            ),
            (
                "ListTagsForResource",
                json!({"resourceArn": "arn:aws:states:us-east-1:000000000000:activity:nope"}),
                "ResourceNotFound",
            ),
            (
                "UntagResource",
                json!({"resourceArn": "arn:aws:states:us-east-1:000000000000:stateMachine:nope", "tagKeys": ["a"]}),
                "ResourceNotFound",
            ),
            (
                "ListTagsForResource",
                json!({"resourceArn": "not-an-arn"}),
                "InvalidArn",
            ),
        ],
    )
    .await;
    // Deleting the machine takes its tags with it.
    ok(
        &s,
        "DeleteStateMachine",
        json!({"stateMachineArn": machine}),
    )
    .await;
    refused(
        &s,
        "ListTagsForResource",
        json!({"resourceArn": machine}),
        "ResourceNotFound",
    )
    .await;
}

#[tokio::test]
async fn tags_are_scoped_to_the_account() {
    let s = server(Some(two_accounts()));
    let created = ok_as(
        &s,
        ONE,
        "CreateStateMachine",
        json!({"name": "m", "definition": pass(1), "roleArn": ROLE,
               "tags": tag_list(&[("owner", "one")])}),
    )
    .await;
    let arn = created["stateMachineArn"].as_str().expect("arn").to_owned();
    assert!(arn.contains(":111111111111:"));
    let tags_of = json!({"resourceArn": arn});
    let mine = ok_as(&s, ONE, "ListTagsForResource", tags_of.clone()).await;
    assert_eq!(mine["tags"], tag_list(&[("owner", "one")]));
    // A well-formed ARN of another account names nothing of the caller's (issue 13, item 7).
    refused_as(&s, TWO, "ListTagsForResource", tags_of, "ResourceNotFound").await;
}
