//! `statelog serve` over the real engine for state machine versions and aliases: the AWS
//! answer shapes of PublishStateMachineVersion (and `publish` on create and update),
//! ListStateMachineVersions, DeleteStateMachineVersion, Create/Describe/Update/Delete/
//! ListStateMachineAliases, StartExecution through a version or alias ARN, and the version and
//! alias an execution shows in DescribeExecution, ListExecutions and its ExecutionStarted
//! event; AWS's error names (`ConflictException`, `ValidationException`, `ResourceNotFound`,
//! `StateMachineDoesNotExist`, `InvalidToken`); and a restart keeping all of it.
#![cfg(feature = "server")]

use serde_json::{json, Value};

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

fn arns(list: &Value, key: &str, member: &str) -> Vec<String> {
    list[key]
        .as_array()
        .expect("a list")
        .iter()
        .map(|item| item[member].as_str().expect("an ARN").to_string())
        .collect()
}

#[tokio::test]
async fn versions_over_http() {
    let s = server(None);
    let created = ok(
        &s,
        "CreateStateMachine",
        json!({"name": "m", "definition": pass(1), "roleArn": ROLE, "publish": true,
               "versionDescription": "first"}),
    )
    .await;
    let machine = created["stateMachineArn"]
        .as_str()
        .expect("arn")
        .to_string();
    assert_eq!(created["stateMachineVersionArn"], format!("{machine}:1"));
    refused(
        &s,
        "CreateStateMachine",
        json!({"name": "n", "definition": pass(1), "roleArn": ROLE, "versionDescription": "d"}),
        "ValidationException",
    )
    .await;
    let updated = ok(
        &s,
        "UpdateStateMachine",
        json!({"stateMachineArn": machine, "definition": pass(2), "publish": true}),
    )
    .await;
    assert_eq!(updated["stateMachineVersionArn"], format!("{machine}:2"));
    let revision = updated["revisionId"]
        .as_str()
        .expect("a revision")
        .to_string();
    let again = ok(
        &s,
        "PublishStateMachineVersion",
        json!({"stateMachineArn": machine, "revisionId": revision}),
    )
    .await;
    assert_eq!(again["stateMachineVersionArn"], format!("{machine}:2"));
    assert!(again["creationDate"].is_f64());
    let conflict = refused(
        &s,
        "PublishStateMachineVersion",
        json!({"stateMachineArn": machine, "revisionId": "INITIAL"}),
        "ConflictException",
    )
    .await;
    assert!(conflict.contains(&revision), "{conflict}");
    let listed = ok(
        &s,
        "ListStateMachineVersions",
        json!({"stateMachineArn": machine}),
    )
    .await;
    assert_eq!(
        arns(&listed, "stateMachineVersions", "stateMachineVersionArn"),
        vec![format!("{machine}:2"), format!("{machine}:1")]
    );
    let page = ok(
        &s,
        "ListStateMachineVersions",
        json!({"stateMachineArn": machine, "maxResults": 1}),
    )
    .await;
    let token = page["nextToken"].as_str().expect("a next page");
    let rest = ok(
        &s,
        "ListStateMachineVersions",
        json!({"stateMachineArn": machine, "maxResults": 1, "nextToken": token}),
    )
    .await;
    assert_eq!(
        arns(&rest, "stateMachineVersions", "stateMachineVersionArn"),
        vec![format!("{machine}:1")]
    );
    refused(
        &s,
        "ListStateMachineVersions",
        json!({"stateMachineArn": machine, "nextToken": "nonsense"}),
        "InvalidToken",
    )
    .await;
    refused(
        &s,
        "ListStateMachineVersions",
        json!({"stateMachineArn": machine, "maxResults": 1001}),
        "ValidationException",
    )
    .await;
    let v1 = ok(
        &s,
        "DescribeStateMachine",
        json!({"stateMachineArn": format!("{machine}:1")}),
    )
    .await;
    assert_eq!(v1["stateMachineArn"], format!("{machine}:1"));
    assert_eq!(v1["definition"], pass(1));
    assert_eq!(v1["description"], "first");
    ok(
        &s,
        "DeleteStateMachineVersion",
        json!({"stateMachineVersionArn": format!("{machine}:2")}),
    )
    .await;
    ok(
        &s,
        "DeleteStateMachineVersion",
        json!({"stateMachineVersionArn": format!("{machine}:2")}),
    )
    .await;
    let missing = refused(
        &s,
        "DescribeStateMachine",
        json!({"stateMachineArn": format!("{machine}:2")}),
        "StateMachineDoesNotExist",
    )
    .await;
    assert!(missing.contains(&format!("{machine}:2")), "{missing}");
    // A restart keeps the versions and the number after the deleted one.
    let s = restart(s).await;
    ok(
        &s,
        "UpdateStateMachine",
        json!({"stateMachineArn": machine, "definition": pass(3)}),
    )
    .await;
    let v3 = ok(
        &s,
        "PublishStateMachineVersion",
        json!({"stateMachineArn": machine, "description": "third"}),
    )
    .await;
    assert_eq!(v3["stateMachineVersionArn"], format!("{machine}:3"));
    refused(
        &s,
        "PublishStateMachineVersion",
        json!({"stateMachineArn": "invalid_arn"}),
        "InvalidArn",
    )
    .await;
}

#[tokio::test]
async fn aliases_over_http() {
    let s = server(None);
    let machine = create_machine(&s, "m", &waiting()).await;
    ok(
        &s,
        "PublishStateMachineVersion",
        json!({"stateMachineArn": machine}),
    )
    .await;
    ok(
        &s,
        "UpdateStateMachine",
        json!({"stateMachineArn": machine, "definition": pass(2), "publish": true}),
    )
    .await;
    let v = |n: u32| format!("{machine}:{n}");
    let routing = |pairs: &[(u32, i64)]| {
        Value::Array(
            pairs
                .iter()
                .map(|&(n, w)| json!({"stateMachineVersionArn": v(n), "weight": w}))
                .collect(),
        )
    };
    let created = ok(
        &s,
        "CreateStateMachineAlias",
        json!({"name": "prod", "description": "production",
               "routingConfiguration": routing(&[(1, 100)])}),
    )
    .await;
    let prod = created["stateMachineAliasArn"]
        .as_str()
        .expect("arn")
        .to_string();
    assert_eq!(prod, format!("{machine}:prod"));
    // The same request again answers the same alias; another routing conflicts.
    let again = ok(
        &s,
        "CreateStateMachineAlias",
        json!({"name": "prod", "description": "production",
               "routingConfiguration": routing(&[(1, 100)])}),
    )
    .await;
    assert_eq!(again["creationDate"], created["creationDate"]);
    refused_each(
        &s,
        [
            (
                "CreateStateMachineAlias",
                json!({"name": "prod", "routingConfiguration": routing(&[(2, 100)])}),
                "ConflictException",
            ),
            (
                "CreateStateMachineAlias",
                json!({"name": "123", "routingConfiguration": routing(&[(1, 100)])}),
                "ValidationException",
            ),
            (
                "CreateStateMachineAlias",
                json!({"name": "a", "routingConfiguration": routing(&[(1, 70), (2, 29)])}),
                "ValidationException",
            ),
            (
                "CreateStateMachineAlias",
                json!({"name": "a", "routingConfiguration": routing(&[(1, -1)])}),
                "ValidationException",
            ),
            (
                "CreateStateMachineAlias",
                json!({"name": "a", "routingConfiguration": [
                    {"stateMachineVersionArn": machine, "weight": 100}]}),
                "ValidationException",
            ),
            (
                "CreateStateMachineAlias",
                json!({"name": "a"}),
                "ValidationException",
            ),
            (
                "UpdateStateMachineAlias",
                json!({"stateMachineAliasArn": format!("{machine}:none"), "description": "d"}),
                "ResourceNotFound",
            ),
            (
                "DescribeStateMachineAlias",
                json!({"stateMachineAliasArn": format!("{machine}:none")}),
                "ResourceNotFound",
            ),
        ],
    )
    .await;
    let sum = refused(
        &s,
        "CreateStateMachineAlias",
        json!({"name": "a", "routingConfiguration": routing(&[(1, 70), (2, 31)])}),
        "ValidationException",
    )
    .await;
    assert_eq!(
        sum,
        "Sum of routing configuration weights must equal 100. Received: [70, 31]"
    );
    // A start through the alias runs version 1 (a 1 h Wait); the alias then moves to version 2.
    let through_alias = ok(
        &s,
        "StartExecution",
        json!({"stateMachineArn": prod, "name": "a"}),
    )
    .await["executionArn"]
        .as_str()
        .expect("arn")
        .to_string();
    let in_use = refused(
        &s,
        "DeleteStateMachineVersion",
        json!({"stateMachineVersionArn": v(1)}),
        "ConflictException",
    )
    .await;
    assert_eq!(
        in_use,
        "Version to be deleted must not be referenced by an alias. Current list of aliases \
         referencing this version: [prod]"
    );
    let updated = ok(
        &s,
        "UpdateStateMachineAlias",
        json!({"stateMachineAliasArn": prod, "routingConfiguration": routing(&[(2, 100)])}),
    )
    .await;
    assert!(updated["updateDate"].is_f64());
    let described = ok(
        &s,
        "DescribeStateMachineAlias",
        json!({"stateMachineAliasArn": prod}),
    )
    .await;
    assert_eq!(described["name"], "prod");
    assert_eq!(described["description"], "production");
    assert_eq!(described["routingConfiguration"], routing(&[(2, 100)]));
    let s = restart(s).await;
    let d = describe(&s, &through_alias).await;
    assert_eq!(
        d["status"], "RUNNING",
        "the alias update changes nothing running"
    );
    assert_eq!(d["stateMachineArn"], machine);
    assert_eq!(d["stateMachineVersionArn"], v(1));
    assert_eq!(d["stateMachineAliasArn"], prod);
    let ran = ok(
        &s,
        "DescribeStateMachineForExecution",
        json!({"executionArn": through_alias}),
    )
    .await;
    assert_eq!(ran["definition"], waiting());
    let later = ok(
        &s,
        "StartExecution",
        json!({"stateMachineArn": prod, "name": "b"}),
    )
    .await["executionArn"]
        .as_str()
        .expect("arn")
        .to_string();
    idle(&s, "000000000000");
    let d = describe(&s, &later).await;
    assert_eq!(d["status"], "SUCCEEDED");
    assert_eq!(d["output"], json!({"v": 2}).to_string());
    let history = ok(&s, "GetExecutionHistory", json!({"executionArn": later})).await;
    let started = &history["events"][0]["executionStartedEventDetails"];
    assert_eq!(started["stateMachineVersionArn"], v(2));
    assert_eq!(started["stateMachineAliasArn"], prod);
    let by_alias = ok(&s, "ListExecutions", json!({"stateMachineArn": prod})).await;
    assert_eq!(
        arns(&by_alias, "executions", "executionArn"),
        vec![later.clone(), through_alias.clone()]
    );
    assert_eq!(by_alias["executions"][0]["stateMachineVersionArn"], v(2));
    assert_eq!(by_alias["executions"][0]["stateMachineAliasArn"], prod);
    let by_version = ok(&s, "ListExecutions", json!({"stateMachineArn": v(1)})).await;
    assert_eq!(
        arns(&by_version, "executions", "executionArn"),
        vec![through_alias.clone()]
    );
    let aliases = ok(
        &s,
        "ListStateMachineAliases",
        json!({"stateMachineArn": machine}),
    )
    .await;
    assert_eq!(
        arns(&aliases, "stateMachineAliases", "stateMachineAliasArn"),
        vec![prod.clone()]
    );
    ok(
        &s,
        "DeleteStateMachineAlias",
        json!({"stateMachineAliasArn": prod}),
    )
    .await;
    ok(
        &s,
        "DeleteStateMachineAlias",
        json!({"stateMachineAliasArn": prod}),
    )
    .await;
    ok(
        &s,
        "DeleteStateMachineVersion",
        json!({"stateMachineVersionArn": v(1)}),
    )
    .await;
    refused(
        &s,
        "StartExecution",
        json!({"stateMachineArn": prod}),
        "StateMachineDoesNotExist",
    )
    .await;
    // The execution of the deleted version runs on.
    assert_eq!(describe(&s, &through_alias).await["status"], "RUNNING");
}
