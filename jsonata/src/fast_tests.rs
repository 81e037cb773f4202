//! The fast shapes ([`crate::fast`]) against the engine: the same result or the same error
//! for every expression on every input, with `$states` bound whole and pruned to the paths
//! the expression reads.

use serde_json::{json, Value};

use crate::{convert, Bindings, EvalError, Expression, Host};

struct NoHost;

impl Host for NoHost {
    fn now_ms(&mut self) -> i64 {
        0
    }
    fn next_u64(&mut self) -> u64 {
        0
    }
}

const EXPRESSIONS: &[&str] = &[
    "'text'",
    "12",
    "1.5",
    "true",
    "null",
    "$states",
    "$states.input",
    "$states.input.a",
    "$states.input.a.b",
    "$states.input.items[0]",
    "$states.input.items[1].sku",
    "$states.input.items[5].sku",
    "$states.input.a[0]",
    "$states.input.a[1]",
    "$states.input.a.b[0].c",
    "$v",
    "$v.a",
    "$missing.a",
    "$states.input.a & 'x'",
    "'Order ' & $states.input.a & ' for ' & $states.input.items[0].sku",
    "$states.input.a & $states.input.n",
    "$states.input.n & ''",
    "$v & $states.input.a.b",
    "$states.input.n > 1000",
    "$states.input.n >= 2",
    "$states.input.n < 2",
    "$states.input.n <= 2",
    "$states.input.n = 2",
    "$states.input.n != 2",
    "$states.input.a = 'x'",
    "$states.input.a != 'x'",
    "$states.input.a > 'x'",
    "$states.input.t = true",
    "$states.input.t != $v",
    "$states.input.missing > 3",
    "$states.input.missing = $states.input.other",
    "$states.input.missing != 3",
    "$states.input.a = $states.input.n",
    "$states.input.items[0] = $states.input.items[0]",
];

fn inputs() -> Vec<Value> {
    vec![
        json!({}),
        json!({"a": "x", "n": 2, "t": true,
               "items": [{"sku": "S-0", "q": 1}, {"sku": "S-1"}, {"sku": 7}]}),
        json!({"a": {"b": "deep"}, "n": 1001.5, "t": false, "items": ["s", 3, null]}),
        json!({"a": {"b": [{"c": 1}, {"c": 2}]}, "n": "2", "items": {"sku": "one"}}),
        json!({"a": [1, [2, 3]], "n": -0.0, "t": null, "items": [[{"sku": "nested"}]]}),
        json!({"a": ["x", "y"], "n": 2, "items": [], "other": 3}),
        json!({"a": {"b": {"c": "o"}}, "n": 1e300, "t": "true",
               "items": [{"sku": ["a", "b"]}, {"sku": {"k": 1}}]}),
        json!({"a": null, "n": null, "items": [null, {"sku": "S-1"}]}),
        json!({"a": "", "n": 0, "items": "not an array"}),
    ]
}

fn variables() -> Vec<Value> {
    vec![
        json!("v"),
        json!(true),
        json!({"a": "va"}),
        json!([1, 2]),
        json!(5),
    ]
}

fn run(expression: &Expression, bindings: &Bindings) -> Result<Option<Value>, EvalError> {
    expression.evaluate(None, bindings, &mut NoHost)
}

#[test]
fn fast_shapes_give_what_the_engine_gives() {
    let mut fast_taken = 0;
    let mut direct_taken = 0;
    for source in EXPRESSIONS {
        let fast = Expression::compile(source).expect(source);
        assert!(fast.fast.is_some(), "{source} has a fast form");
        let mut slow = fast.clone();
        slow.fast = None;
        for input in inputs() {
            for variable in variables() {
                let members = [("input", &input)];
                let whole = convert::object_of(&members);
                let pruned = match fast.states_paths() {
                    Some(paths) => {
                        let paths: Vec<&[String]> = paths.iter().map(Vec::as_slice).collect();
                        convert::pruned_object(&members, &paths)
                    }
                    None => whole.clone(),
                };
                let mut with_whole = Bindings::new();
                with_whole
                    .set_converted("states", whole)
                    .set("v", &variable);
                let mut with_pruned = Bindings::new();
                with_pruned
                    .set_converted("states", pruned)
                    .set("v", &variable);
                let expected = run(&slow, &with_whole);
                let case = format!("{source} on {input} with $v = {variable}");
                assert_eq!(run(&slow, &with_pruned), expected, "engine, pruned: {case}");
                assert_eq!(run(&fast, &with_pruned), expected, "fast, pruned: {case}");
                assert_eq!(run(&fast, &with_whole), expected, "fast, whole: {case}");
                // Straight over the JSON (nothing bound): the same, where it answers.
                let direct = fast.evaluate_json(&members, &[("v", &variable)]);
                if let Some(direct) = &direct {
                    direct_taken += 1;
                    assert_eq!(direct, &expected, "direct: {case}");
                }
                if fast
                    .fast
                    .as_ref()
                    .and_then(|f| f.evaluate(&with_pruned))
                    .is_some()
                {
                    fast_taken += 1;
                }
            }
        }
    }
    // Most cases are answered without the engine (the rest fall back to it).
    let cases = EXPRESSIONS.len() * inputs().len() * variables().len();
    assert!(fast_taken * 2 > cases, "{fast_taken} of {cases} taken fast");
    // Most of those straight over the JSON too (not where an object is found).
    assert!(
        direct_taken * 3 > cases,
        "{direct_taken} of {cases} taken directly"
    );
}

#[test]
fn a_constant_index_is_a_step_of_the_states_path() {
    let e = Expression::compile("$states.input.order.items[0].sku & $states.input.x[2]")
        .expect("compiles");
    let paths: Vec<Vec<&str>> = e
        .states_paths()
        .expect("paths")
        .iter()
        .map(|p| p.iter().map(String::as_str).collect())
        .collect();
    assert_eq!(
        paths,
        vec![
            vec!["input", "order", "items", "[0]", "sku"],
            vec!["input", "x", "[2]"]
        ]
    );
    // A field named like an index step ends the path (read whole before it).
    let e = Expression::compile("$states.input.a.`[0]`").expect("compiles");
    assert_eq!(
        e.states_paths().expect("paths"),
        &[vec!["input".to_string(), "a".to_string()]]
    );
}
