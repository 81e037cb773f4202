//! Criterion benches of the definition layer: parsing + validating a typical definition (done
//! once per CreateStateMachine), and evaluating a Choice state (done on every Choice transition,
//! on the compiled model: no re-parsing).

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};
use statelog::asl::{parse_definition, StateKind, ValidationOptions};

/// A definition with the usual mix: Task with Retry/Catch and templates, Choice, Wait, Parallel,
/// Map, Pass, Fail, Succeed (16 states).
fn typical_definition() -> Value {
    json!({
        "Comment": "order workflow",
        "StartAt": "Validate",
        "States": {
            "Validate": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"FunctionName": "validate", "Payload": {"order.$": "$.order", "id.$": "States.Format('order-{}', $.order.id)"}},
                "ResultSelector": {"ok.$": "$.Payload.ok"}, "ResultPath": "$.validation",
                "Retry": [{"ErrorEquals": ["States.Timeout"], "IntervalSeconds": 2, "MaxAttempts": 3, "BackoffRate": 2.0}],
                "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Rejected", "ResultPath": "$.error"}],
                "Next": "Route"},
            "Route": {"Type": "Choice", "Choices": [
                {"And": [{"Variable": "$.validation.ok", "BooleanEquals": true},
                         {"Variable": "$.order.total", "NumericGreaterThan": 1000}], "Next": "Review"},
                {"Variable": "$.order.kind", "StringMatches": "digital-*", "Next": "Fulfil"},
                {"Variable": "$.order.total", "NumericLessThanEqualsPath": "$.limits.auto", "Next": "Charge"}
            ], "Default": "Rejected"},
            "Review": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
                "Parameters": {"QueueUrl": "review", "MessageBody": {"token.$": "$$.Task.Token", "order.$": "$.order"}},
                "TimeoutSeconds": 86400, "HeartbeatSeconds": 3600, "ResultPath": "$.review", "Next": "Charge"},
            "Charge": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"FunctionName": "charge", "Payload.$": "$.order"}, "ResultPath": "$.charge",
                "Retry": [{"ErrorEquals": ["Throttled"], "MaxAttempts": 5, "JitterStrategy": "FULL", "MaxDelaySeconds": 60}],
                "Next": "Wait"},
            "Wait": {"Type": "Wait", "SecondsPath": "$.order.delay", "Next": "Fulfil"},
            "Fulfil": {"Type": "Parallel", "ResultPath": "$.fulfilment", "Next": "Items", "Branches": [
                {"StartAt": "Ship", "States": {"Ship": {"Type": "Task", "Resource": "arn:aws:states:::sns:publish",
                    "Parameters": {"TopicArn": "ship", "Message.$": "States.JsonToString($.order)"}, "End": true}}},
                {"StartAt": "Invoice", "States": {"Invoice": {"Type": "Pass", "Result": {"sent": true}, "End": true}}}
            ]},
            "Items": {"Type": "Map", "ItemsPath": "$.order.items", "MaxConcurrency": 4, "ResultPath": "$.items",
                "ItemSelector": {"sku.$": "$$.Map.Item.Value.sku", "index.$": "$$.Map.Item.Index"},
                "ItemProcessor": {"StartAt": "Reserve", "States": {
                    "Reserve": {"Type": "Task", "Resource": "arn:aws:states:::dynamodb:updateItem",
                        "Parameters": {"TableName": "stock", "Key": {"sku": {"S.$": "$.sku"}}}, "End": true}}},
                "Next": "Done"},
            "Done": {"Type": "Pass", "OutputPath": "$.order", "Next": "Finished"},
            "Finished": {"Type": "Succeed"},
            "Rejected": {"Type": "Fail", "Error": "OrderRejected", "CausePath": "States.Format('rejected: {}', $.order.id)"}
        }
    })
}

fn bench_parse(c: &mut Criterion) {
    let text = typical_definition().to_string();
    let options = ValidationOptions::default();
    if let Err(d) = parse_definition(&text, &options) {
        panic!("the bench definition must be valid: {d:?}");
    }
    c.bench_function("asl_parse_validate_typical_16_states", |b| {
        b.iter(|| parse_definition(black_box(&text), &options))
    });
}

fn bench_choice(c: &mut Criterion) {
    let machine = parse_definition(
        &typical_definition().to_string(),
        &ValidationOptions::default(),
    )
    .unwrap_or_else(|d| panic!("invalid bench definition: {d:?}"));
    let Some(StateKind::Choice(choice)) = machine.states.get("Route").map(|s| &s.kind) else {
        panic!("Route is a Choice state");
    };
    let input = json!({
        "validation": {"ok": true},
        "order": {"id": 7, "total": 250, "kind": "physical", "items": [{"sku": "a"}]},
        "limits": {"auto": 500}
    });
    let context = json!({});
    assert_eq!(choice.pick(&input, &context), Ok("Charge"));
    c.bench_function("asl_choice_pick_three_rules", |b| {
        b.iter(|| choice.pick(black_box(&input), &context).map(str::len))
    });
}

criterion_group!(benches, bench_parse, bench_choice);
criterion_main!(benches);
