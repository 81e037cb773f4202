//! Workflow variables (`Assign`, `$name`) through the pure interpreter: what each expression of
//! a state sees (the values as of its entry), when new values become visible (from the next
//! state), a Catcher's `Assign` replacing the state's, Choice rules, Parallel and Map scopes
//! (inner states read outer values; their own vanish when the state ends), the size limits, and
//! the replay check of the harness after every decision (the fold rebuilds the variables);
//! the same for JSONata's `Assign` (`$states.result`, `$states.errorOutput`).

use serde_json::{json, Value};
use statelog::history::EventDetails;
use statelog::interpreter::ExecutionStatus;

use crate::interpreter_scenarios::{no_tasks, Answer, Run};

/// The `assignedVariables` of the exited events of `state`, in order, parsed.
fn assigned(run: &Run, state: &str) -> Vec<Value> {
    run.events
        .iter()
        .filter_map(|event| event.details.state_exited())
        .filter(|exited| exited.name == state)
        .map(|exited| match &exited.assigned {
            None => Value::Null,
            Some(assigned) => {
                assert!(!assigned.truncated);
                Value::Object(
                    assigned
                        .variables
                        .iter()
                        .map(|(name, text)| {
                            let value = serde_json::from_str(text).expect("JSON text");
                            (name.clone(), value)
                        })
                        .collect(),
                )
            }
        })
        .collect()
}

#[test]
fn every_expression_of_a_state_sees_the_values_as_of_its_entry() {
    let mut run = Run::new(json!({
        "StartAt": "A",
        "States": {
            "A": {"Type": "Pass", "Assign": {"x": 1, "y": "one"}, "Next": "B"},
            "B": {
                "Type": "Pass",
                "Parameters": {"x.$": "$x"},
                "OutputPath": "$",
                "Assign": {"x.$": "States.MathAdd($x, 1)", "old.$": "$x", "y.$": "$.x"},
                "Next": "C"
            },
            "C": {"Type": "Pass", "InputPath": "$x", "Assign": {"seen.$": "$", "y.$": "$y"}, "End": true}
        }
    }));
    run.start(json!({}));
    run.drive(no_tasks);
    assert_eq!(assigned(&run, "A"), vec![json!({"x": 1, "y": "one"})]);
    // `$` is B's result (its Parameters); `$x` is 1 in every expression of B.
    assert_eq!(assigned(&run, "B"), vec![json!({"x": 2, "old": 1, "y": 1})]);
    // C sees B's values: x is 2.
    assert_eq!(assigned(&run, "C"), vec![json!({"seen": 2, "y": 1})]);
    assert_eq!(run.output(), json!(2));
}

#[test]
fn a_task_assigns_from_its_selected_result_and_a_catcher_replaces_the_states_assign() {
    let definition = json!({
        "StartAt": "T",
        "States": {
            "T": {
                "Type": "Task", "Resource": "arn:aws:states:::sns:publish",
                "ResultSelector": {"id.$": "$.MessageId"},
                "ResultPath": "$.r",
                "Assign": {"id.$": "$.id", "how": "ok"},
                "Catch": [{"ErrorEquals": ["States.ALL"], "Assign": {"how": "caught", "why.$": "$.Cause"}, "ResultPath": "$.err", "Next": "After"}],
                "Next": "After"
            },
            "After": {"Type": "Pass", "Parameters": {"how.$": "$how", "id.$": "States.ArrayLength(States.Array($how))"}, "End": true}
        }
    });
    let mut ok = Run::new(definition.clone());
    ok.start(json!({"in": 1}));
    ok.drive(|_| Answer::Succeed(json!({"MessageId": "m-1", "Other": 0})));
    assert_eq!(assigned(&ok, "T"), vec![json!({"id": "m-1", "how": "ok"})]);
    assert_eq!(ok.output(), json!({"how": "ok", "id": 1}));

    let mut caught = Run::new(definition);
    caught.start(json!({"in": 1}));
    caught.drive(|_| Answer::Fail("Boom", "it broke"));
    // The state's own Assign is skipped: no `id`; the Catcher's reads the error output.
    assert_eq!(
        assigned(&caught, "T"),
        vec![json!({"how": "caught", "why": "it broke"})]
    );
    assert_eq!(caught.output(), json!({"how": "caught", "id": 1}));
}

#[test]
fn a_choice_assigns_by_the_rule_taken_or_by_its_own_assign_on_default() {
    let definition = json!({
        "StartAt": "C",
        "States": {
            "C": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.n", "NumericGreaterThan": 10, "Assign": {"size": "big", "n.$": "$.n"}, "Next": "Done"}],
                "Assign": {"size": "small"},
                "Default": "Done"
            },
            "Done": {"Type": "Pass", "Parameters": {"size.$": "$size"}, "End": true}
        }
    });
    let mut big = Run::new(definition.clone());
    big.start(json!({"n": 11}));
    big.drive(no_tasks);
    assert_eq!(assigned(&big, "C"), vec![json!({"size": "big", "n": 11})]);
    assert_eq!(big.output(), json!({"size": "big"}));
    let mut small = Run::new(definition);
    small.start(json!({"n": 1}));
    small.drive(no_tasks);
    assert_eq!(assigned(&small, "C"), vec![json!({"size": "small"})]);
    assert_eq!(small.output(), json!({"size": "small"}));
}

#[test]
fn a_choice_rule_and_a_wait_read_variables() {
    let mut run = Run::new(json!({
        "StartAt": "Set",
        "States": {
            "Set": {"Type": "Pass", "Assign": {"limit": 5, "pause": 2}, "Next": "C"},
            "C": {"Type": "Choice", "Choices": [{"Variable": "$.n", "NumericGreaterThanPath": "$limit", "Next": "W"}], "Default": "No"},
            "W": {"Type": "Wait", "SecondsPath": "$pause", "Assign": {"waited": true}, "Next": "Yes"},
            "Yes": {"Type": "Pass", "Parameters": {"waited.$": "$waited"}, "End": true},
            "No": {"Type": "Fail", "ErrorPath": "$limit", "Cause": "too small"}
        }
    }));
    run.start(json!({"n": 6}));
    run.drive(no_tasks);
    assert_eq!(run.output(), json!({"waited": true}));
    let mut no = Run::new(json!({
        "StartAt": "Set",
        "States": {
            "Set": {"Type": "Pass", "Assign": {"code": "Too.Small"}, "Next": "No"},
            "No": {"Type": "Fail", "ErrorPath": "$code", "CausePath": "States.Format('code {}', $code)"}
        }
    }));
    no.start(json!({}));
    no.drive(no_tasks);
    let failure = no.state.failure().expect("failed");
    assert_eq!(failure.error.as_deref(), Some("Too.Small"));
    assert_eq!(failure.cause.as_deref(), Some("code Too.Small"));
}

#[test]
fn map_iterations_read_outer_values_and_their_own_vanish_with_the_map() {
    let mut run = Run::new(json!({
        "StartAt": "Set",
        "States": {
            "Set": {"Type": "Pass", "Assign": {"items": [1, 2], "base": 10}, "Next": "M"},
            "M": {
                "Type": "Map", "ItemsPath": "$items",
                "ItemSelector": {"v.$": "$$.Map.Item.Value", "base.$": "$base"},
                "ItemProcessor": {"StartAt": "Own", "States": {
                    "Own": {"Type": "Pass", "Assign": {"mine.$": "$.v"}, "Next": "Read"},
                    "Read": {"Type": "Pass", "Parameters": {"mine.$": "$mine", "base.$": "$base"}, "End": true}
                }},
                "Next": "After"
            },
            "After": {"Type": "Pass", "Parameters": {"out.$": "$", "still.$": "$base"}, "End": true}
        }
    }));
    run.start(json!({}));
    run.drive(no_tasks);
    assert_eq!(
        run.output(),
        json!({"out": [{"mine": 1, "base": 10}, {"mine": 2, "base": 10}], "still": 10})
    );
    // A later state that reads an iteration's variable finds nothing.
    let mut leak = Run::new(json!({
        "StartAt": "M",
        "States": {
            "M": {"Type": "Map", "ItemProcessor": {"StartAt": "Own", "States": {
                "Own": {"Type": "Pass", "Assign": {"mine": 1}, "End": true}}}, "Next": "After"},
            "After": {"Type": "Pass", "Parameters": {"mine.$": "$mine"}, "End": true}
        }
    }));
    leak.start(json!([1]));
    leak.drive(no_tasks);
    assert_eq!(leak.state.status(), ExecutionStatus::Failed);
    let cause = leak
        .state
        .failure()
        .and_then(|f| f.cause.clone())
        .unwrap_or_default();
    assert!(cause.contains("'$mine'"), "{cause}");
}

#[test]
fn parallel_branches_read_outer_values_and_do_not_see_each_other() {
    let mut run = Run::new(json!({
        "StartAt": "Set",
        "States": {
            "Set": {"Type": "Pass", "Assign": {"x": 42}, "Next": "P"},
            "P": {"Type": "Parallel", "Branches": [
                {"StartAt": "A", "States": {
                    "A": {"Type": "Pass", "Assign": {"a": 1}, "Next": "A2"},
                    "A2": {"Type": "Pass", "Parameters": {"x.$": "$x", "a.$": "$a"}, "End": true}}},
                {"StartAt": "B", "States": {
                    "B": {"Type": "Pass", "Assign": {"b": 2}, "Next": "B2"},
                    "B2": {"Type": "Pass", "Parameters": {"x.$": "$x", "b.$": "$b"}, "End": true}}}
            ], "Assign": {"after.$": "$[0].a"}, "End": true}
        }
    }));
    run.start(json!({}));
    run.drive(no_tasks);
    assert_eq!(run.output(), json!([{"x": 42, "a": 1}, {"x": 42, "b": 2}]));
    // The Parallel's own Assign reads its result.
    assert_eq!(assigned(&run, "P"), vec![json!({"after": 1})]);
}

#[test]
fn filters_compare_with_variables_and_an_unassigned_one_fails_the_state() {
    let definition = json!({
        "StartAt": "Set",
        "States": {
            "Set": {"Type": "Pass", "Assign": {"limit.$": "$.limit", "wanted": "book"}, "Next": "Pick"},
            "Pick": {
                "Type": "Pass",
                "InputPath": "$.items[?(@.price < $limit)]",
                "Parameters": {
                    "cheap.$": "$[*].sku",
                    "books.$": "$[?(@.kind == $wanted)].sku",
                    "count.$": "States.ArrayLength($[?(@.kind != $wanted)])"
                },
                "Assign": {"books.$": "$.books"},
                "Next": "Read"
            },
            "Read": {"Type": "Pass", "Parameters": {"all.$": "$", "books.$": "$books"}, "End": true}
        }
    });
    let items = json!([
        {"sku": "a", "kind": "book", "price": 5},
        {"sku": "b", "kind": "pen", "price": 2},
        {"sku": "c", "kind": "book", "price": 12}
    ]);
    let mut run = Run::new(definition.clone());
    run.start(json!({"limit": 10, "items": items}));
    run.drive(no_tasks);
    assert_eq!(run.state.status(), ExecutionStatus::Succeeded);
    assert_eq!(
        run.output(),
        json!({"all": {"cheap": ["a", "b"], "books": ["a"], "count": 1}, "books": ["a"]})
    );
    assert_eq!(assigned(&run, "Pick"), vec![json!({"books": ["a"]})]);

    // The machine lists what each state reads, filters included.
    let machine = statelog::asl::parse_definition(
        &definition.to_string(),
        &statelog::asl::ValidationOptions::default(),
    )
    .expect("valid");
    let references = machine.variable_references();
    assert_eq!(
        references.get("Pick").map(Vec::as_slice),
        Some(&["limit".to_string(), "wanted".to_string()][..])
    );

    // A filter comparing with a variable nobody assigned fails the state, naming it.
    let mut unassigned = Run::new(json!({
        "StartAt": "Pick",
        "States": {"Pick": {"Type": "Pass", "InputPath": "$.items[?(@.price < $ceiling)]", "End": true}}
    }));
    unassigned.start(json!({"items": []}));
    unassigned.drive(no_tasks);
    assert_eq!(unassigned.state.status(), ExecutionStatus::Failed);
    let failure = unassigned.state.failure().expect("failed");
    assert_eq!(failure.error.as_deref(), Some("States.Runtime"));
    assert_eq!(
        failure.cause.as_deref(),
        Some(
            "An error occurred while executing the state 'Pick' (entered at the event id #2). \
             Invalid path '$.items[?(@.price < $ceiling)]' : The variable '$ceiling' used in its \
             filter is not assigned"
        )
    );
}

#[test]
fn an_oversized_variable_fails_the_state_with_data_limit_exceeded() {
    // Two copies of a 200,000-byte string: 400,007 bytes of JSON text in one variable.
    let text = "x".repeat(200_000);
    let mut run = Run::new(json!({
        "StartAt": "A",
        "States": {"A": {"Type": "Pass", "Assign": {"big.$": "States.Array($.s, $.s)"}, "End": true}}
    }));
    run.start(json!({"s": text}));
    run.drive(no_tasks);
    assert_eq!(run.state.status(), ExecutionStatus::Failed);
    let failure = run.state.failure().expect("failed");
    assert_eq!(failure.error.as_deref(), Some("States.DataLimitExceeded"));
    assert!(
        failure.cause.as_deref().is_some_and(|c| c.contains(
            "The variable 'big' is 400007 bytes; a variable may hold at most 262144 bytes"
        )),
        "{failure:?}"
    );
    // Two variables just under the limit each break the limit of one Assign together.
    let half = "y".repeat(statelog::limits::ASSIGN_SIZE_BYTES_MAX / 2 + 1);
    let mut both = Run::new(json!({
        "StartAt": "A",
        "States": {"A": {"Type": "Pass", "Assign": {"a.$": "$.h", "b.$": "$.h"}, "End": true}}
    }));
    both.start(json!({"h": half}));
    both.drive(no_tasks);
    let failure = both.state.failure().expect("failed");
    assert_eq!(failure.error.as_deref(), Some("States.DataLimitExceeded"));
    assert!(
        failure
            .cause
            .as_deref()
            .is_some_and(|c| c.contains("one Assign may set at most 262144 bytes")),
        "{failure:?}"
    );
}

#[test]
fn states_without_assign_record_no_assigned_variables() {
    let mut run = Run::new(json!({
        "StartAt": "A",
        "States": {
            "A": {"Type": "Pass", "Next": "B"},
            "B": {"Type": "Pass", "Assign": {}, "End": true}
        }
    }));
    run.start(json!({"k": 1}));
    run.drive(no_tasks);
    assert_eq!(assigned(&run, "A"), vec![Value::Null]);
    assert_eq!(
        assigned(&run, "B"),
        vec![Value::Null],
        "AWS shows nothing for {{}}"
    );
}

/// A JSONata machine of `states`, starting at `start`.
fn jsonata(start: &str, states: Value) -> Value {
    json!({"QueryLanguage": "JSONata", "StartAt": start, "States": states})
}

#[test]
fn a_jsonata_assign_and_output_see_the_values_as_of_entry() {
    let mut run = Run::new(jsonata(
        "A",
        json!({
            "A": {"Type": "Pass", "Assign": {"x": 1, "list": "{% [$states.input.k, 2] %}"}, "Next": "B"},
            "B": {"Type": "Pass",
                  "Assign": {"x": "{% $x + 1 %}", "old": "{% $x %}", "nested": {"deep": "{% $list[1] %}"}},
                  "Output": {"x": "{% $x %}"}, "Next": "C"},
            "C": {"Type": "Pass", "Output": {"x": "{% $x %}", "old": "{% $old %}", "deep": "{% $nested.deep %}"}, "End": true}
        }),
    ));
    run.start(json!({"k": 7}));
    run.drive(no_tasks);
    assert_eq!(assigned(&run, "A"), vec![json!({"x": 1, "list": [7, 2]})]);
    // Every expression of B reads x as it was when B was entered.
    assert_eq!(
        assigned(&run, "B"),
        vec![json!({"x": 2, "old": 1, "nested": {"deep": 2}})]
    );
    assert_eq!(run.output(), json!({"x": 2, "old": 1, "deep": 2}));
}

#[test]
fn a_jsonata_task_assigns_from_its_result_and_a_catcher_from_the_error_output() {
    let definition = jsonata(
        "T",
        json!({
            "T": {"Type": "Task", "Resource": "arn:aws:states:::sns:publish",
                  "Assign": {"id": "{% $states.result.MessageId %}", "in": "{% $states.input.n %}"},
                  "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "After",
                             "Assign": {"why": "{% $states.errorOutput.Cause %}", "in": "{% $states.input.n %}"}}],
                  "Next": "After"},
            "After": {"Type": "Pass", "Output": {"id": "{% $exists($id) ? $id : null %}", "why": "{% $exists($why) ? $why : null %}", "in": "{% $in %}"}, "End": true}
        }),
    );
    let mut ok = Run::new(definition.clone());
    ok.start(json!({"n": 3}));
    ok.drive(|_| Answer::Succeed(json!({"MessageId": "m-1"})));
    assert_eq!(assigned(&ok, "T"), vec![json!({"id": "m-1", "in": 3})]);
    assert_eq!(ok.output(), json!({"id": "m-1", "why": null, "in": 3}));

    let mut caught = Run::new(definition);
    caught.start(json!({"n": 4}));
    caught.drive(|_| Answer::Fail("Boom", "it broke"));
    // The Catcher's Assign replaces the state's: no `id`.
    assert_eq!(
        assigned(&caught, "T"),
        vec![json!({"why": "it broke", "in": 4})]
    );
    assert_eq!(
        caught.output(),
        json!({"id": null, "why": "it broke", "in": 4})
    );
}

#[test]
fn a_jsonata_choice_assigns_by_the_rule_taken_or_its_own_on_default() {
    let definition = jsonata(
        "C",
        json!({
            "C": {"Type": "Choice",
                  "Choices": [{"Condition": "{% $states.input.n > 10 %}", "Next": "Done",
                               "Assign": {"size": "big", "n": "{% $states.input.n %}"}}],
                  "Assign": {"size": "small"},
                  "Default": "Done"},
            "Done": {"Type": "Pass", "Output": "{% $size %}", "End": true}
        }),
    );
    let mut big = Run::new(definition.clone());
    big.start(json!({"n": 11}));
    big.drive(no_tasks);
    assert_eq!(assigned(&big, "C"), vec![json!({"size": "big", "n": 11})]);
    assert_eq!(big.output(), json!("big"));
    let mut small = Run::new(definition);
    small.start(json!({"n": 1}));
    small.drive(no_tasks);
    assert_eq!(assigned(&small, "C"), vec![json!({"size": "small"})]);
    assert_eq!(small.output(), json!("small"));
}

#[test]
fn a_jsonata_assign_that_fails_is_a_query_evaluation_error_and_the_limits_hold() {
    let mut run = Run::new(jsonata(
        "A",
        json!({"A": {"Type": "Pass", "Assign": {"a": "{% $states.input.missing %}"}, "End": true}}),
    ));
    run.start(json!({}));
    run.drive(no_tasks);
    let failure = run.state.failure().expect("failed");
    assert_eq!(
        failure.error.as_deref(),
        Some("States.QueryEvaluationError")
    );
    // Recorded as AWS records an evaluation failure: an EvaluationFailed at the Assign's member.
    let evaluation = run
        .events
        .iter()
        .find_map(|event| match &event.details {
            EventDetails::EvaluationFailed(details) => Some(details),
            _ => None,
        })
        .expect("an EvaluationFailed event");
    assert_eq!(evaluation.state, "A");
    assert_eq!(evaluation.location.as_deref(), Some("Assign/a"));
    let text = "x".repeat(200_000);
    let mut big = Run::new(jsonata(
        "A",
        json!({"A": {"Type": "Pass", "Assign": {"big": "{% [$states.input.s, $states.input.s] %}"}, "End": true}}),
    ));
    big.start(json!({"s": text}));
    big.drive(no_tasks);
    let failure = big.state.failure().expect("failed");
    assert_eq!(failure.error.as_deref(), Some("States.DataLimitExceeded"));
}

#[test]
fn jsonata_map_iterations_read_outer_values_and_assign_their_own() {
    let mut run = Run::new(jsonata(
        "Set",
        json!({
            "Set": {"Type": "Pass", "Assign": {"base": 10}, "Next": "M"},
            "M": {"Type": "Map", "Items": "{% $states.input.xs %}",
                  "ItemProcessor": {"StartAt": "Own", "States": {
                      "Own": {"Type": "Pass", "Assign": {"mine": "{% $states.input + $base %}"}, "Next": "Use"},
                      "Use": {"Type": "Pass", "Output": "{% $mine %}", "End": true}}},
                  "Output": {"r": "{% $states.result %}", "mine": "{% $exists($mine) %}"},
                  "End": true}
        }),
    ));
    run.start(json!({"xs": [1, 2]}));
    run.drive(no_tasks);
    assert_eq!(run.output(), json!({"r": [11, 12], "mine": false}));
}
