//! JSONata definitions through the parser with the engine's evaluator
//! (`engine::validate::options()`): each validation message (JSONPath-only fields in a JSONata
//! state and the reverse, unparsable and unsupported expressions at their pointer, `Assign`
//! and its names, `QueryLanguage` inheritance), the compiled `{% %}` template (expressions
//! at any depth, every other value a literal) and what a state's expressions read.

use serde_json::{json, Value};
use statelog::asl::jsonata::JsonataTemplate;
use statelog::asl::{
    parse_definition, Assign, DataFlow, Diagnostic, DiagnosticCode, StateKind, StateMachine,
    ValidationOptions,
};
use statelog::engine::validate;

fn parse(definition: Value) -> Result<StateMachine, Vec<Diagnostic>> {
    parse_definition(&definition.to_string(), &validate::options())
}

fn valid(definition: Value) -> StateMachine {
    parse(definition).unwrap_or_else(|d| panic!("rejected: {d:?}"))
}

fn refused(definition: Value) -> Vec<Diagnostic> {
    parse(definition).expect_err("the definition is refused")
}

/// A one-state JSONata machine whose state is `state`.
fn machine(state: Value) -> Value {
    json!({"QueryLanguage": "JSONata", "StartAt": "S", "States": {"S": state}})
}

/// The diagnostic at `path`, or a panic listing all of them.
fn at<'a>(diagnostics: &'a [Diagnostic], path: &str) -> &'a Diagnostic {
    diagnostics
        .iter()
        .find(|d| d.path == path)
        .unwrap_or_else(|| panic!("no diagnostic at {path}: {diagnostics:?}"))
}

#[test]
fn jsonpath_only_fields_in_a_jsonata_state_are_refused_in_aws_words() {
    let cases = [
        (
            json!({"Type": "Pass", "Parameters": {"a": 1}, "End": true}),
            "Parameters",
        ),
        (
            json!({"Type": "Pass", "ResultPath": "$.r", "End": true}),
            "ResultPath",
        ),
        (
            json!({"Type": "Pass", "InputPath": "$.a", "End": true}),
            "InputPath",
        ),
        (
            json!({"Type": "Pass", "OutputPath": "$.a", "End": true}),
            "OutputPath",
        ),
        (
            json!({"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
                   "ResultSelector": {"a.$": "$.b"}, "End": true}),
            "ResultSelector",
        ),
        (
            json!({"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
                   "TimeoutSecondsPath": "$.t", "End": true}),
            "TimeoutSecondsPath",
        ),
        (
            json!({"Type": "Wait", "SecondsPath": "$.s", "End": true}),
            "SecondsPath",
        ),
        (json!({"Type": "Fail", "ErrorPath": "$.e"}), "ErrorPath"),
        (
            json!({"Type": "Map", "ItemsPath": "$.items", "End": true,
                   "ItemProcessor": {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}}}),
            "ItemsPath",
        ),
    ];
    for (state, field) in cases {
        let diagnostics = refused(machine(state));
        let d = at(&diagnostics, &format!("/States/S/{field}"));
        assert_eq!(d.code, DiagnosticCode::SchemaValidationFailed, "{field}");
        assert_eq!(
            d.message,
            format!(
                "The QueryLanguage is set to 'JSONata', but field '{field}' is only supported \
                 for the 'JSONPath' QueryLanguage"
            )
        );
    }
    // A Catcher's ResultPath and a JSONPath Choice rule too.
    let diagnostics = refused(machine(json!({
        "Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "End": true,
        "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.e", "Next": "S"}],
    })));
    assert!(at(&diagnostics, "/States/S/Catch/0/ResultPath")
        .message
        .contains("field 'ResultPath' is only supported for the 'JSONPath'"));
}

#[test]
fn jsonata_fields_in_a_jsonpath_state_are_refused() {
    let definition = json!({"StartAt": "S", "States": {
        "S": {"Type": "Pass", "Output": {"a": 1}, "Next": "T"},
        "T": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
              "Arguments": {"a": 1}, "End": true},
    }});
    let diagnostics = refused(definition);
    for (path, field) in [
        ("/States/S/Output", "Output"),
        ("/States/T/Arguments", "Arguments"),
    ] {
        let d = at(&diagnostics, path);
        assert_eq!(d.code, DiagnosticCode::SchemaValidationFailed);
        assert_eq!(
            d.message,
            format!(
                "The QueryLanguage is set to 'JSONPath', but field '{field}' is only supported \
                 for the 'JSONata' QueryLanguage"
            )
        );
    }
}

#[test]
fn an_unparsable_expression_is_reported_at_its_pointer() {
    let diagnostics = refused(machine(json!({
        "Type": "Pass", "End": true,
        "Output": {"ok": "{% $states.input %}", "list": [1, "{% $states.input.( %}"]},
    })));
    let d = at(&diagnostics, "/States/S/Output/list/1");
    assert_eq!(d.code, DiagnosticCode::InvalidJsonataExpression);
    assert_eq!(d.code.as_str(), "INVALID_JSONATA_EXPRESSION");
    assert!(
        d.message
            .starts_with("The JSONata expression '$states.input.(' is not valid"),
        "{}",
        d.message
    );
    assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
}

#[test]
fn top_level_input_references_and_eval_are_unsupported() {
    for (expression, reason) in [
        ("$.a", "top-level reference"),
        ("a.b", "top-level reference"),
        ("$eval('1 + 1')", "$eval"),
    ] {
        let diagnostics = refused(machine(json!({
            "Type": "Pass", "End": true, "Output": {"x": format!("{{% {expression} %}}")},
        })));
        let d = at(&diagnostics, "/States/S/Output/x");
        assert_eq!(d.code, DiagnosticCode::UnsupportedJsonataExpression);
        assert_eq!(d.code.as_str(), "UNSUPPORTED_JSONATA_EXPRESSION");
        assert!(d.message.contains(reason), "{expression}: {}", d.message);
    }
    // Variables and $states are what a top-level reference may name; inside a path, field
    // names are fine.
    valid(machine(json!({
        "Type": "Pass", "End": true,
        "Output": "{% $states.input.items[price > 5].name & $suffix %}",
    })));
}

#[test]
fn assign_is_read_on_states_choice_rules_and_catchers_with_its_free_variables() {
    let machine = valid(json!({
        "QueryLanguage": "JSONata", "StartAt": "T",
        "States": {
            "T": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Next": "C",
                  "Assign": {"a": "{% $states.result.n + $base %}", "lit": [1, 2]},
                  "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "C",
                             "Assign": {"err": "{% $states.errorOutput.Error & $tag %}"}}]},
            "C": {"Type": "Choice", "Default": "D",
                  "Choices": [{"Condition": "{% $a > 1 %}", "Next": "D",
                               "Assign": {"picked": "{% $other %}"}}]},
            "D": {"Type": "Succeed"}
        }
    }));
    let task = machine.states.get("T").expect("T");
    let Some(Assign::Jsonata(JsonataTemplate::Object(members))) = &task.assign else {
        panic!("a JSONata Assign template: {:?}", task.assign);
    };
    let names: Vec<&str> = members.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["a", "lit"]);
    let StateKind::Task(t) = &task.kind else {
        panic!("a Task")
    };
    assert!(matches!(t.catch[0].assign, Some(Assign::Jsonata(_))));
    let choice = machine.states.get("C").expect("C");
    let StateKind::Choice(c) = &choice.kind else {
        panic!("a Choice")
    };
    assert!(matches!(c.choices[0].assign, Some(Assign::Jsonata(_))));
    // variableReferences: the free variables of every expression, `states` left out.
    let references = machine.variable_references();
    assert_eq!(references["T"], ["base", "tag"]);
    assert_eq!(references["C"], ["a", "other"]);
}

#[test]
fn assign_problems_in_a_jsonata_state_are_reported_at_their_field() {
    let diagnostics = refused(machine(json!({
        "Type": "Pass", "End": true,
        "Assign": {"states": 1, "9lives": 2, "ok": "{% $states.input. %}"},
    })));
    at(&diagnostics, "/States/S/Assign/states");
    at(&diagnostics, "/States/S/Assign/9lives");
    let d = at(&diagnostics, "/States/S/Assign/ok");
    assert_eq!(d.code, DiagnosticCode::InvalidJsonataExpression);
    let diagnostics = refused(machine(json!({"Type": "Pass", "End": true, "Assign": [1]})));
    at(&diagnostics, "/States/S/Assign");
    let diagnostics = refused(machine(json!({"Type": "Succeed", "Assign": {"a": 1}})));
    at(&diagnostics, "/States/S/Assign");
}

#[test]
fn without_an_evaluator_jsonata_is_not_supported() {
    let definition = machine(json!({"Type": "Pass", "End": true}));
    let diagnostics = parse_definition(&definition.to_string(), &ValidationOptions::default())
        .expect_err("no evaluator");
    let d = at(&diagnostics, "/QueryLanguage");
    assert_eq!(d.code, DiagnosticCode::UnsupportedFeature);
    assert_eq!(d.message, "QueryLanguage 'JSONata' is not supported yet");
}

#[test]
fn a_state_may_be_jsonata_in_a_jsonpath_machine_but_not_the_reverse() {
    let mixed = valid(json!({"StartAt": "A", "States": {
        "A": {"Type": "Pass", "QueryLanguage": "JSONata", "Output": "{% 1 %}", "Next": "B"},
        "B": {"Type": "Pass", "Parameters": {"a.$": "$"}, "End": true},
    }}));
    assert!(mixed
        .states
        .get("A")
        .expect("A")
        .data_flow
        .as_jsonata()
        .is_some());
    assert!(mixed
        .states
        .get("B")
        .expect("B")
        .data_flow
        .as_json_path()
        .is_some());
    let diagnostics = refused(
        json!({"QueryLanguage": "JSONata", "StartAt": "A", "States": {
            "A": {"Type": "Pass", "QueryLanguage": "JSONPath", "End": true},
        }}),
    );
    assert_eq!(
        at(&diagnostics, "/States/A").message,
        "'QueryLanguage' can not be 'JSONPath' if set to 'JSONata' for whole state machine"
    );
}

#[test]
fn a_map_or_parallel_query_language_does_not_reach_its_states() {
    let processor = json!({"StartAt": "P", "States": {
        "P": {"Type": "Pass", "Parameters": {"v.$": "$"}, "End": true},
    }});
    let machine = valid(json!({"StartAt": "M", "States": {
        "M": {"Type": "Map", "QueryLanguage": "JSONata", "Items": "{% [1, 2] %}",
              "ItemProcessor": processor, "Next": "Q"},
        "Q": {"Type": "Parallel", "QueryLanguage": "JSONata", "Branches": [processor],
              "End": true},
    }}));
    let StateKind::Map(map) = &machine.states.get("M").expect("M").kind else {
        panic!("a Map");
    };
    let inner = map.item_processor.states.get("P").expect("P");
    assert!(
        inner.data_flow.as_json_path().is_some(),
        "the machine's JSONPath"
    );
    let StateKind::Parallel(parallel) = &machine.states.get("Q").expect("Q").kind else {
        panic!("a Parallel");
    };
    let inner = parallel.branches[0].states.get("P").expect("P");
    assert!(
        inner.data_flow.as_json_path().is_some(),
        "the machine's JSONPath"
    );
}

#[test]
fn expressions_sit_at_any_depth_and_every_other_string_is_a_literal() {
    let machine = valid(machine(json!({
        "Type": "Pass", "End": true,
        "Output": {
            "e": "{% $states.input.a %}",
            "plain": "not {% an %} expression",
            "unclosed": "{% 1",
            "n": [1, {"deep": "{%$x%}"}],
            "fixed": {"k": [true, null]},
        },
    })));
    let flow = machine
        .states
        .get("S")
        .expect("S")
        .data_flow
        .as_jsonata()
        .expect("JSONata");
    let Some(JsonataTemplate::Object(members)) = &flow.output else {
        panic!("an object template: {:?}", flow.output);
    };
    let member = |name: &str| &members.iter().find(|(k, _)| k == name).expect(name).1;
    let Some(expression) = member("e").as_expression() else {
        panic!("an expression");
    };
    assert_eq!(expression.source(), "$states.input.a");
    assert_eq!(
        member("plain"),
        &JsonataTemplate::Literal(json!("not {% an %} expression"))
    );
    assert_eq!(member("unclosed"), &JsonataTemplate::Literal(json!("{% 1")));
    assert_eq!(
        member("fixed"),
        &JsonataTemplate::Literal(json!({"k": [true, null]}))
    );
    let JsonataTemplate::Array(items) = member("n") else {
        panic!("an array with an expression inside");
    };
    assert_eq!(items[0], JsonataTemplate::Literal(json!(1)));
    assert_eq!(member("n").expressions()[0].source(), "$x");
    // What the state reads: the variable `x` (not `states`), no context.
    assert_eq!(flow.variables, vec!["x".to_string()]);
    assert!(!flow.reads_context);
}

#[test]
fn number_fields_take_a_literal_or_an_expression_and_strings_are_not_numbers() {
    valid(machine(json!({
        "Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "End": true,
        "TimeoutSeconds": "{% $states.input.t %}", "HeartbeatSeconds": 5,
    })));
    valid(machine(
        json!({"Type": "Wait", "Seconds": "{% 1 %}", "End": true}),
    ));
    let diagnostics = refused(machine(
        json!({"Type": "Wait", "Seconds": "ten", "End": true}),
    ));
    assert_eq!(
        at(&diagnostics, "/States/S/Seconds").code,
        DiagnosticCode::SchemaValidationFailed
    );
    let diagnostics = refused(machine(json!({
        "Type": "Choice", "Default": "D",
        "Choices": [{"Condition": "yes", "Next": "D"}],
    })));
    assert_eq!(
        at(&diagnostics, "/States/S/Choices/0/Condition").code,
        DiagnosticCode::InvalidChoiceRule
    );
}

#[test]
fn a_jsonata_choice_rule_is_a_condition_and_refuses_jsonpath_operators() {
    let diagnostics = refused(machine(json!({
        "Type": "Choice", "Default": "S",
        "Choices": [{"Variable": "$.a", "StringEquals": "x", "Next": "S"}],
    })));
    assert!(at(&diagnostics, "/States/S/Choices/0/Variable")
        .message
        .contains("field 'Variable' is only supported for the 'JSONPath'"));
    assert!(at(&diagnostics, "/States/S/Choices/0/StringEquals")
        .message
        .contains("field 'StringEquals' is only supported for the 'JSONPath'"));
    let machine = valid(
        json!({"QueryLanguage": "JSONata", "StartAt": "C", "States": {
            "C": {"Type": "Choice", "Default": "D",
                  "Choices": [{"Condition": "{% $states.input.a > 1 %}", "Next": "D",
                               "Output": {"big": true}}]},
            "D": {"Type": "Succeed"},
        }}),
    );
    assert!(matches!(
        machine.states.get("C").expect("C").data_flow,
        DataFlow::Jsonata(_)
    ));
}

/// `state` with the members of `extra` added.
fn with(mut state: Value, extra: Value) -> Value {
    if let (Some(state), Value::Object(extra)) = (state.as_object_mut(), extra) {
        state.extend(extra);
    }
    state
}

#[test]
fn literal_or_expression_fields_read_both_and_refuse_the_same_in_either_language() {
    let task = |extra: Value| {
        with(
            json!({"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "End": true}),
            extra,
        )
    };
    // A literal heartbeat not below the literal timeout: the same message in both languages.
    let jsonata = refused(machine(task(
        json!({"TimeoutSeconds": 5, "HeartbeatSeconds": 5}),
    )));
    let jsonpath = refused(
        json!({"StartAt": "S", "States": {"S": task(json!({"TimeoutSeconds": 5, "HeartbeatSeconds": 5}))}}),
    );
    for found in [&jsonata, &jsonpath] {
        assert_eq!(
            at(found, "/States/S/HeartbeatSeconds").message,
            "'HeartbeatSeconds' (5) must be smaller than 'TimeoutSeconds' (5)"
        );
    }
    // An expression is not compared; a literal out of range is refused at its field.
    valid(machine(task(
        json!({"TimeoutSeconds": "{% 5 %}", "HeartbeatSeconds": 5}),
    )));
    let zero = refused(machine(task(json!({"TimeoutSeconds": 0}))));
    at(&zero, "/States/S/TimeoutSeconds");
    // Credentials are refused as not supported in either language.
    let credentials = refused(machine(task(json!({"Credentials": {"RoleArn": "r"}}))));
    assert_eq!(
        at(&credentials, "/States/S/Credentials").code,
        DiagnosticCode::UnsupportedFeature
    );
    // A Map's counts and percentage, and a Fail's Error: literal or expression.
    let map = |extra: Value| {
        machine(with(
            json!({"Type": "Map", "End": true,
                "ItemProcessor": {"StartAt": "I", "States": {"I": {"Type": "Pass", "End": true}}}}),
            extra,
        ))
    };
    valid(map(
        json!({"MaxConcurrency": 2, "ToleratedFailurePercentage": 50}),
    ));
    valid(map(
        json!({"MaxConcurrency": "{% 2 %}", "ToleratedFailurePercentage": "{% 50 %}"}),
    ));
    let percentage = refused(map(json!({"ToleratedFailurePercentage": 101})));
    assert_eq!(
        at(&percentage, "/States/S/ToleratedFailurePercentage").message,
        "'ToleratedFailurePercentage' must be a number from 0 to 100, not 101"
    );
    valid(machine(
        json!({"Type": "Fail", "Error": "E", "Cause": "{% 'c' %}"}),
    ));
}
