//! The core's JSONata seam as `statelog-jsonata` implements it: compile through
//! `StepFunctionsJsonata`, bind `$states` and variables once, evaluate with the caller's time
//! and entropy; a runaway recursion stops with an error instead of overflowing the stack.

use serde_json::{json, Value};
use statelog_core::asl::jsonata::{EvalError, Host, Jsonata, States};
use statelog_jsonata::asl::StepFunctionsJsonata;

struct FixedHost;

impl Host for FixedHost {
    fn now_ms(&mut self) -> i64 {
        86_400_000
    }

    fn next_u64(&mut self) -> u64 {
        7
    }
}

fn evaluate(
    source: &str,
    input: &Value,
    variables: &[(&str, &Value)],
) -> Result<Option<Value>, EvalError> {
    let jsonata = StepFunctionsJsonata;
    let compiled = jsonata.compile(source).expect("compiles");
    // Bound with only the paths the expression reads: what a state step does.
    let states = States {
        input,
        result: None,
        error_output: None,
        context: None,
        paths: compiled.states_paths(),
    };
    let bound = jsonata.bind(&states, variables);
    compiled.evaluate(&*bound, &mut FixedHost)
}

#[test]
fn states_and_variables_are_bound_and_time_comes_from_the_host() {
    let input = json!({"a": [1, 2, 3]});
    let offset = json!(10);
    let value = evaluate(
        "$sum($states.input.a) + $offset",
        &input,
        &[("offset", &offset)],
    );
    assert_eq!(value, Ok(Some(json!(16))));
    assert_eq!(
        evaluate("$millis()", &input, &[]),
        Ok(Some(json!(86_400_000)))
    );
    assert_eq!(
        evaluate("$now()", &input, &[]),
        Ok(Some(json!("1970-01-02T00:00:00.000Z")))
    );
    // Nothing is undefined; the context is bound only when given.
    assert_eq!(evaluate("$states.input.missing", &input, &[]), Ok(None));
    assert_eq!(evaluate("$states.context", &input, &[]), Ok(None));
}

#[test]
fn only_the_paths_read_below_states_are_bound_and_that_changes_no_result() {
    let jsonata = StepFunctionsJsonata;
    let paths = |source: &str| {
        jsonata
            .compile(source)
            .expect("compiles")
            .states_paths()
            .map(<[Vec<String>]>::to_vec)
    };
    let names = |list: &[&[&str]]| -> Option<Vec<Vec<String>>> {
        Some(
            list.iter()
                .map(|p| p.iter().map(|s| s.to_string()).collect())
                .collect(),
        )
    };
    assert_eq!(
        paths("$states.input.order.id & $states.context.State.Name"),
        names(&[&["input", "order", "id"], &["context", "State", "Name"]])
    );
    assert_eq!(
        paths("$states.input.items[price > 5].sku"),
        names(&[&["input", "items"]])
    );
    assert_eq!(paths("$keys($states.input)"), names(&[&["input"]]));
    assert_eq!(paths("1 + 2"), names(&[]));
    // `$states` as a value, or a parent step, needs all of it.
    assert_eq!(paths("($s := $states; $s.input.a)"), None);
    assert_eq!(paths("$states.input.a.%"), None);
    let input =
        json!({"order": {"id": "o-1", "lines": [{"n": 1}, {"n": 2}]}, "other": {"big": [1, 2, 3]}});
    for (source, expected) in [
        ("$states.input.order.id", json!("o-1")),
        ("$sum($states.input.order.lines.n)", json!(3)),
        ("$keys($states.input.order)", json!(["id", "lines"])),
        ("$count($keys($states.input))", json!(2)),
    ] {
        assert_eq!(
            evaluate(source, &input, &[]),
            Ok(Some(expected)),
            "{source}"
        );
    }
}

#[test]
fn a_compiled_expression_reports_what_it_reads() {
    let jsonata = StepFunctionsJsonata;
    let compiled = jsonata
        .compile("$x + $states.input.a + $count($ys)")
        .expect("compiles");
    assert_eq!(compiled.free_variables(), ["x", "states", "ys"]);
    assert!(!compiled.reads_context());
    assert!(jsonata.compile("$.a").expect("compiles").reads_context());
    assert!(jsonata
        .compile("$eval('1')")
        .expect("compiles")
        .calls("eval"));
    let error = jsonata.compile("(").err().expect("does not compile");
    assert!(error.code.is_some(), "{error}");
}

#[test]
fn runaway_recursion_fails_instead_of_overflowing_and_functions_are_not_json() {
    let input = json!({});
    let deep = evaluate("($f := function($x){ 1 + $f($x) }; $f(1))", &input, &[]);
    match deep {
        Err(EvalError::Threw(text)) => assert!(text.starts_with("D1011"), "{text}"),
        other => panic!("a depth error, not {other:?}"),
    }
    let function = evaluate("function($x){ $x }", &input, &[]);
    assert_eq!(function, Err(EvalError::NotJson));
    let thrown = evaluate("$error('no')", &input, &[]);
    assert_eq!(thrown, Err(EvalError::Threw("D3137: no".to_string())));
}

#[test]
fn a_plain_path_gives_what_the_evaluator_gives() {
    // `(...)` makes a block, which always goes through the evaluator.
    let inputs = [
        json!({"a": {"b": {"c": 1.0, "d": [1, [2, 3]]}}}),
        json!({"a": [{"b": 1}, {"b": [2, 3]}]}),
        json!({"a": "text"}),
        json!({"a": {"b": null}}),
        json!({"a": {"b": [[1], [2]]}}),
        json!({}),
        json!([1, 2]),
    ];
    for input in &inputs {
        for path in [
            "$states.input.a.b",
            "$states.input.a",
            "$states.input",
            "$states.input.a.b.c",
        ] {
            let plain = evaluate(path, input, &[]);
            let evaluated = evaluate(&format!("({path})"), input, &[]);
            assert_eq!(plain, evaluated, "{path} on {input}");
        }
    }
    let x = json!({"k": 2.5});
    assert_eq!(
        evaluate("$x.k", &json!({}), &[("x", &x)]),
        Ok(Some(json!(2.5)))
    );
    assert_eq!(evaluate("$unbound.k", &json!({}), &[]), Ok(None));
}
