//! Unit tests of the paths module: every path form, reference paths, templates, intrinsics and
//! the pipeline, table-driven where the cases are alike.

use serde_json::{json, Value};
use statelog_rng::Rng;

use super::intrinsic::Call;
use super::pipeline::*;
use super::*;

fn store() -> Value {
    json!({
        "store": {
            "book": [
                {"category": "reference", "author": "Nigel Rees", "title": "Sayings", "price": 8.95},
                {"category": "fiction", "author": "Evelyn Waugh", "title": "Sword", "price": 12.99},
                {"category": "fiction", "author": "Herman Melville", "title": "Moby Dick", "isbn": "0-553", "price": 8.99},
                {"category": "fiction", "author": "J. R. R. Tolkien", "title": "LOTR", "isbn": "0-395", "price": 22.99}
            ],
            "bicycle": {"color": "red", "price": 19.95}
        },
        "a b": {"c'd": 1},
        "n": [0, 1, 2, 3, 4, 5],
        "nul": null
    })
}

fn sel(path: &str, doc: &Value) -> Option<Value> {
    Path::parse(path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .select(doc, &json!({"Execution": {"Id": "x"}}))
}

#[test]
fn path_forms_select_what_jayway_selects() {
    let doc = store();
    let cases: Vec<(&str, Option<Value>)> = vec![
        ("$", Some(doc.clone())),
        ("$.store.bicycle.color", Some(json!("red"))),
        ("$['store']['bicycle']['color']", Some(json!("red"))),
        (
            "$[\"store\"].bicycle",
            Some(json!({"color": "red", "price": 19.95})),
        ),
        ("$['a b']['c\\'d']", Some(json!(1))),
        ("$.n[0]", Some(json!(0))),
        ("$.n[-1]", Some(json!(5))),
        ("$.n[-6]", Some(json!(0))),
        ("$.n[6]", None),
        ("$.n[-7]", None),
        ("$.missing", None),
        ("$.missing.deeper", None),
        ("$.nul", Some(Value::Null)),
        ("$.n[*]", Some(json!([0, 1, 2, 3, 4, 5]))),
        ("$.n.*", Some(json!([0, 1, 2, 3, 4, 5]))),
        ("$.n[1:3]", Some(json!([1, 2]))),
        ("$.n[:2]", Some(json!([0, 1]))),
        ("$.n[-2:]", Some(json!([4, 5]))),
        ("$.n[::2]", Some(json!([0, 2, 4]))),
        ("$.n[::-2]", Some(json!([5, 3, 1]))),
        ("$.n[4:100]", Some(json!([4, 5]))),
        ("$.n[0,2,-1]", Some(json!([0, 2, 5]))),
        ("$.n[0, 9]", Some(json!([0]))),
        (
            "$.store.bicycle['color','price']",
            Some(json!(["red", 19.95])),
        ),
        ("$..color", Some(json!(["red"]))),
        ("$..price", Some(json!([8.95, 12.99, 8.99, 22.99, 19.95]))),
        (
            "$.store.book[*].author",
            Some(json!([
                "Nigel Rees",
                "Evelyn Waugh",
                "Herman Melville",
                "J. R. R. Tolkien"
            ])),
        ),
        ("$..book[2].title", Some(json!(["Moby Dick"]))),
        ("$..book[-1:].title", Some(json!(["LOTR"]))),
        (
            "$.store.book[?(@.price < 10)].title",
            Some(json!(["Sayings", "Moby Dick"])),
        ),
        (
            "$.store.book[?(@.isbn)].title",
            Some(json!(["Moby Dick", "LOTR"])),
        ),
        (
            "$.store.book[?(!@.isbn)].title",
            Some(json!(["Sayings", "Sword"])),
        ),
        (
            "$.store.book[?(@.category == 'reference')].author",
            Some(json!(["Nigel Rees"])),
        ),
        (
            "$.store.book[?(@.category == \"fiction\" && @.price > 20)].title",
            Some(json!(["LOTR"])),
        ),
        (
            "$.store.book[?(@.price < 9 || @.price > 20)].title",
            Some(json!(["Sayings", "Moby Dick", "LOTR"])),
        ),
        (
            "$.store.book[?(@.price >= 12.99)].title",
            Some(json!(["Sword", "LOTR"])),
        ),
        (
            "$.store.book[?(@.price <= 8.95)].title",
            Some(json!(["Sayings"])),
        ),
        (
            "$.store.book[?(@.category != 'fiction')].title",
            Some(json!(["Sayings"])),
        ),
        (
            "$.store.book[?((@.price < 10) && (@.category == 'fiction'))].title",
            Some(json!(["Moby Dick"])),
        ),
        (
            "$.store.book[?(@.price > $.store.bicycle.price)].title",
            Some(json!(["LOTR"])),
        ),
        (
            "$.store.book[?(@.title == $$.Execution.Id)]",
            Some(json!([])),
        ),
        ("$.store.book[?(@.nothing > 1)]", Some(json!([]))),
        ("$.n.length()", Some(json!(6))),
        ("$.n.length", Some(json!(6))),
        ("$.store.book.length()", Some(json!(4))),
        (
            "$.store.book[?(@.title.length() > 6)].title",
            Some(json!(["Sayings", "Moby Dick"])),
        ),
        ("$.n[?(@ > 3)]", Some(json!([4, 5]))),
        (
            "$.store.*",
            Some(json!([
                doc["store"]["book"].clone(),
                doc["store"]["bicycle"].clone()
            ])),
        ),
        ("$.store.bicycle[0]", None),
        ("$.n.x", None),
        ("$.missing[*]", Some(json!([]))),
        ("$.missing[1:5].x", Some(json!([]))),
        ("$.missing..x", Some(json!([]))),
    ];
    for (path, expected) in cases {
        assert_eq!(sel(path, &doc), expected, "path {path}");
    }
}

#[test]
fn context_paths_read_the_context_object() {
    let context = json!({"Execution": {"Id": "arn:x", "Input": {"a": 1}}, "Task": {"Token": "t"}});
    let path = Path::parse("$$.Execution.Input.a").expect("valid");
    assert!(path.is_context());
    assert_eq!(path.select(&json!({"a": 2}), &context), Some(json!(1)));
    assert_eq!(
        Path::parse("$$")
            .expect("valid")
            .select(&json!(1), &context),
        Some(context.clone())
    );
    assert!(!Path::parse("$.a").expect("valid").is_context());
}

#[test]
fn select_cow_borrows_simple_paths_and_owns_the_rest() {
    let doc = store();
    let context = json!({});
    let simple = Path::parse("$.store.bicycle").expect("valid");
    let found = simple
        .select_cow(&doc, &context)
        .expect("in budget")
        .expect("found");
    assert!(matches!(found, std::borrow::Cow::Borrowed(_)));
    assert_eq!(*found, doc["store"]["bicycle"]);
    let wildcard = Path::parse("$.n[*]").expect("valid");
    let found = wildcard
        .select_cow(&doc, &context)
        .expect("in budget")
        .expect("found");
    assert!(matches!(found, std::borrow::Cow::Owned(_)));
    assert_eq!(*found, json!([0, 1, 2, 3, 4, 5]));
    assert_eq!(
        Path::parse("$.nope")
            .expect("valid")
            .select_cow(&doc, &context),
        Ok(None)
    );
}

#[test]
fn definiteness_follows_jayway() {
    for (path, definite) in [
        ("$", true),
        ("$.a.b[0]", true),
        ("$['a'][-1]", true),
        ("$.a.length()", true),
        ("$.a[*]", false),
        ("$.a.*", false),
        ("$..a", false),
        ("$.a[0,1]", false),
        ("$.a['x','y']", false),
        ("$.a[1:2]", false),
        ("$.a[?(@.x)]", false),
    ] {
        assert_eq!(
            Path::parse(path).expect("valid").is_definite(),
            definite,
            "{path}"
        );
    }
}

#[test]
fn variable_paths_read_the_variable_and_miss_when_it_is_unassigned() {
    let mut variables = Variables::new();
    variables.insert("order".into(), json!({"id": 7, "items": [1, 2, 3]}));
    let input = json!({"order": "not this"});
    let context = json!({});
    let path = Path::parse("$order.id").expect("a variable path");
    assert_eq!(path.variable(), Some("order"));
    assert_eq!(path.select_in(&input, &context, &variables), Some(json!(7)));
    let all = Path::parse("$order.items[*]").expect("indefinite");
    assert_eq!(
        all.select_in(&input, &context, &variables),
        Some(json!([1, 2, 3]))
    );
    let whole = Path::parse("$order").expect("the whole value");
    assert_eq!(
        whole.select_in(&input, &context, &variables),
        Some(json!({"id": 7, "items": [1, 2, 3]}))
    );
    assert_eq!(path.select(&input, &context), None, "no variables in scope");
    let unknown = Path::parse("$other.id").expect("parses");
    assert_eq!(unknown.select_in(&input, &context, &variables), None);
    assert_eq!(Path::parse("$").expect("root").variable(), None);
    let template = Template::compile(&json!({
        "a.$": "$order.id",
        "b.$": "States.Array($order.id, $other, $.x)",
        "c": {"d.$": "$order"}
    }))
    .expect("compiles");
    assert_eq!(template.variable_references(), vec!["order", "other"]);
    let mut rng = statelog_rng::Rng::new(1);
    let built =
        Template::compile(&json!({"a.$": "$order.id", "n.$": "States.ArrayLength($order.items)"}))
            .expect("compiles")
            .evaluate_in(&input, &context, &variables, &mut rng)
            .expect("evaluates");
    assert_eq!(built, json!({"a": 7, "n": 3}));
}

#[test]
fn filters_parse_variables_and_paths_list_every_variable_they_read() {
    let cases: [(&str, &[&str]); 7] = [
        ("$.items[?(@.price < $limit)]", &["limit"]),
        ("$.items[?(@.kind == $wanted)]", &["wanted"]),
        // The root's first, then the filters' in order; each once.
        (
            "$cfg.items[?(@.kind == $wanted.kind && @.n > $min || @.n == $min)]",
            &["cfg", "wanted", "min"],
        ),
        ("$.a[?(@.b[?(@.c == $inner)])]", &["inner"]),
        ("$..[?(@.p >= $deep)].name", &["deep"]),
        ("$.a[?($flag)]", &["flag"]),
        // `$` alone (and `$.x`) is still the input, `$$` the Context object.
        ("$.a[?(@.b == $.c && @.d == $$.Execution.Name)]", &[]),
    ];
    for (text, expected) in cases {
        let path = Path::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(path.variables(), expected, "{text}");
        assert_eq!(path.reads_variables(), !expected.is_empty(), "{text}");
    }
    let filtered = Path::parse("$.items[?(@.price < $limit)]").expect("parses");
    assert_eq!(filtered.variable(), None, "the root is the input");
    let reserved = Path::parse("$.a[?(@.b == $states.input)]").expect_err("reserved");
    assert!(
        reserved.message.contains("'$states' is reserved"),
        "{}",
        reserved.message
    );
    assert_eq!(reserved.position_index, Some(13), "at its '$'");
    let template = Template::compile(&json!({
        "a.$": "$.items[?(@.kind == $wanted)]",
        "b.$": "States.ArrayLength($.items[?(@.price < $limit)])",
        "c.$": "$wanted"
    }))
    .expect("compiles");
    assert_eq!(template.variable_references(), vec!["wanted", "limit"]);
}

#[test]
fn filters_compare_with_variables_and_an_unassigned_one_is_states_runtime() {
    let input = json!({"items": [
        {"kind": "book", "price": 5},
        {"kind": "pen", "price": 2},
        {"kind": "book", "price": 12}
    ]});
    let context = json!({});
    let mut variables = Variables::new();
    variables.insert("limit".into(), json!(10));
    variables.insert("wanted".into(), json!("book"));
    variables.insert("cfg".into(), json!({"kinds": {"main": "pen"}}));
    let select = |text: &str, variables: &Variables| {
        Path::parse(text)
            .unwrap_or_else(|e| panic!("{text}: {e}"))
            .try_select_in(&input, &context, variables)
    };
    assert_eq!(
        select("$.items[?(@.price < $limit)].price", &variables),
        Ok(Some(json!([5, 2])))
    );
    assert_eq!(
        select(
            "$.items[?(@.kind == $wanted && @.price > $limit)]",
            &variables
        ),
        Ok(Some(json!([{"kind": "book", "price": 12}])))
    );
    assert_eq!(
        select("$.items[?(@.kind == $cfg.kinds.main)].price", &variables),
        Ok(Some(json!([2])))
    );
    // A variable that is assigned but lacks the field is a missing side, as `$.x` would be:
    // only `!=` holds.
    assert_eq!(
        select("$.items[?(@.kind == $cfg.nothing)]", &variables),
        Ok(Some(json!([])))
    );
    assert_eq!(
        select("$.items[?(@.kind != $cfg.nothing)].price", &variables),
        Ok(Some(json!([5, 2, 12])))
    );
    // A filter on an array held by a variable, comparing with another variable.
    variables.insert("prices".into(), json!([{"p": 1}, {"p": 20}]));
    assert_eq!(
        select("$prices[?(@.p > $limit)]", &variables),
        Ok(Some(json!([{"p": 20}])))
    );
    // An unassigned variable stops the path with a cause naming it, even where no item
    // would reach the comparison.
    let unassigned = select("$.items[?(@.price < $ceiling)]", &variables)
        .expect_err("an unassigned variable is an error");
    assert_eq!(unassigned.error, STATES_RUNTIME);
    assert_eq!(
        unassigned.cause,
        "Invalid path '$.items[?(@.price < $ceiling)]' : The variable '$ceiling' used in its \
         filter is not assigned"
    );
    let on_nothing = Path::parse("$.none[?(@.price < $ceiling)]")
        .expect("parses")
        .try_select_in(&input, &context, &variables)
        .expect_err("the same path fails the same way on any input");
    assert!(
        on_nothing.cause.contains("'$ceiling'"),
        "{}",
        on_nothing.cause
    );
    assert_eq!(
        Path::parse("$.items[?(@.price < $limit)]")
            .expect("parses")
            .select(&input, &context),
        None,
        "without variables in scope the filter cannot be evaluated"
    );
    // Through a template and the pipeline, the variables reach the filter.
    let mut rng = Rng::new(1);
    let built = Template::compile(&json!({"cheap.$": "$.items[?(@.price < $limit)].kind"}))
        .expect("compiles")
        .evaluate_in(&input, &context, &variables, &mut rng)
        .expect("evaluates");
    assert_eq!(built, json!({"cheap": ["book", "pen"]}));
    let input_path =
        InputOutputPath::Select(Path::parse("$.items[?(@.kind == $wanted)]").expect("parses"));
    let effective =
        process_input_cow_in(&input, &input_path, &context, &variables).expect("selects");
    assert_eq!(effective.as_array().map(Vec::len), Some(2));
    let failed = process_output_in(input.clone(), &input_path, &context, &NO_VARIABLES)
        .expect_err("nothing assigned");
    assert!(failed.cause.contains("'$wanted'"), "{}", failed.cause);
}

#[test]
fn malformed_paths_are_rejected_with_position() {
    for (path, fragment) in [
        ("", "must start with '$'"),
        ("a.b", "must start with '$'"),
        ("$.", "expected a property name"),
        ("$..", "expected a property name"),
        ("$.a[", "at character 5"),
        ("$.a[0", "expected ']'"),
        ("$.a['x]", "unterminated"),
        ("$.a[?(@.x > )]", "expected '@'"),
        ("$.a[?(@.x =~ /a/)]", "not supported"),
        ("$.a[0:1:0]", "step cannot be 0"),
        ("$.a b", "unexpected character"),
        ("$.a.max()", "not supported"),
        ("$.a[99999999999999999999]", "not an integer"),
        ("$.a[?(1)]", "literal alone"),
        ("$.a[x]", "expected an index"),
        ("$my-var", "unexpected character '-'"),
        ("$states.input", "'$states' is reserved for JSONata states"),
    ] {
        let err = Path::parse(path).expect_err(path);
        assert!(err.message.contains(fragment), "{path}: {}", err.message);
    }
}

#[test]
fn parse_errors_carry_the_text_and_the_position() {
    let err = Path::parse("$.a[0").expect_err("unterminated");
    assert_eq!(err.text, "$.a[0");
    assert_eq!(err.position_index, Some(5));
    let err = Path::parse("$.é b").expect_err("space");
    assert_eq!(err.position_index, Some("$.é".len()));
    assert!(err.message.ends_with("at character 4"), "{}", err.message);
    let err = Call::parse("States.Array(1, $.a[)").expect_err("bad path argument");
    assert_eq!(err.text, "States.Array(1, $.a[)");
    assert_eq!(err.position_index, Some("States.Array(1, $.a[".len()));
    let err = Call::parse("States.Nope(1)").expect_err("unknown");
    assert_eq!(err.position_index, Some(0));
    let err = ReferencePath::parse("$.a[*]").expect_err("indefinite");
    assert_eq!(err.text, "$.a[*]");
}

#[test]
fn deep_filter_nesting_is_a_parse_error_not_a_stack_overflow() {
    let path = format!("$.a[?({}@.x{})]", "(".repeat(1000), ")".repeat(1000));
    assert!(Path::parse(&path).is_err());
    let negations = format!("$.a[?({}@.x)]", "!".repeat(1000));
    assert!(Path::parse(&negations).is_err());
    let long = format!("$.{}", "a".repeat(crate::limits::PATH_TEXT_BYTES_MAX));
    assert!(Path::parse(&long)
        .expect_err("too long")
        .message
        .contains("limit"));
}

#[test]
fn exponential_descent_is_cut_by_the_step_budget() {
    // A document with many nodes and a path with several descents.
    let mut doc = json!(1);
    for _ in 0..12 {
        doc = json!([doc.clone(), doc.clone(), {"a": doc}]);
    }
    let path = Path::parse("$..a..a..a..a..a..a..a..a").expect("valid");
    let result = path.try_select(&doc, &Value::Null);
    let err = result.expect_err("budget exceeded");
    assert_eq!(err.error, STATES_RUNTIME);
    assert!(err.cause.contains("evaluation steps"));
    assert_eq!(path.select(&doc, &Value::Null), None);
}

#[test]
fn reference_paths_get_and_set() {
    let raw = json!({"a": {"b": 1}, "list": [1, 2]});
    let cases: Vec<(&str, Value, Result<Value, &str>)> = vec![
        ("$", json!(5), Ok(json!(5))),
        (
            "$.r",
            json!(5),
            Ok(json!({"a": {"b": 1}, "list": [1, 2], "r": 5})),
        ),
        (
            "$.a.b",
            json!(5),
            Ok(json!({"a": {"b": 5}, "list": [1, 2]})),
        ),
        (
            "$.x.y.z",
            json!(5),
            Ok(json!({"a": {"b": 1}, "list": [1, 2], "x": {"y": {"z": 5}}})),
        ),
        (
            "$['q r']",
            json!(5),
            Ok(json!({"a": {"b": 1}, "list": [1, 2], "q r": 5})),
        ),
        (
            "$.list[1]",
            json!(5),
            Ok(json!({"a": {"b": 1}, "list": [1, 5]})),
        ),
        (
            "$.list[-1]",
            json!(5),
            Ok(json!({"a": {"b": 1}, "list": [1, 5]})),
        ),
        ("$.list[2]", json!(5), Err("States.ResultPathMatchFailure")),
        ("$.a.b.c", json!(5), Err("States.ResultPathMatchFailure")),
        ("$.list.x", json!(5), Err("States.ResultPathMatchFailure")),
    ];
    for (path, value, expected) in cases {
        let reference = ReferencePath::parse(path).expect(path);
        let got = reference.set(raw.clone(), value);
        match expected {
            Ok(v) => assert_eq!(got, Ok(v), "{path}"),
            Err(name) => {
                let err = got.expect_err(path);
                assert_eq!(err.error, name, "{path}");
                assert!(err.cause.contains(path), "{path}: {}", err.cause);
            }
        }
    }
    let reference = ReferencePath::parse("$.a.b").expect("valid");
    assert_eq!(reference.get(&raw), Some(&json!(1)));
    assert_eq!(
        ReferencePath::parse("$.list[-1]").expect("valid").get(&raw),
        Some(&json!(2))
    );
    assert_eq!(
        ReferencePath::parse("$.nope").expect("valid").get(&raw),
        None
    );
    // Setting into a scalar input is a match failure.
    let err = ReferencePath::parse("$.x")
        .expect("valid")
        .set(json!("hello"), json!(1))
        .expect_err("scalar");
    assert_eq!(err.error, STATES_RESULT_PATH_MATCH_FAILURE);
}

#[test]
fn reference_paths_reject_indefinite_forms() {
    for path in [
        "$$.a",
        "$.a[*]",
        "$..a",
        "$.a[0,1]",
        "$.a[1:]",
        "$.a[?(@.x)]",
        "$.a.length()",
        "x",
    ] {
        assert!(ReferencePath::parse(path).is_err(), "{path}");
    }
}

fn eval_template(template: Value, input: Value) -> Result<Value, StatesError> {
    let template = Template::compile(&template).expect("template compiles");
    let context =
        json!({"Execution": {"Name": "exec", "Input": input.clone()}, "State": {"Name": "S"}});
    template.evaluate(&input, &context, &mut Rng::new(0))
}

#[test]
fn templates_resolve_paths_nested_objects_arrays_and_calls() {
    let input = json!({"a": 1, "b": {"c": "x"}, "list": [1, 2, 3]});
    let got = eval_template(
        json!({
            "plain": "text",
            "num.$": "$.a",
            "nested": {"c.$": "$.b.c", "deeper": {"all.$": "$.list[*]"}, "lit": [1, {"k": "v"}]},
            "arr": [{"x.$": "$.a"}, 2],
            "ctx.$": "$$.Execution.Name",
            "call.$": "States.Format('{}-{}', $.a, $.b.c)",
            "dollar": "$.not.a.path"
        }),
        input,
    );
    assert_eq!(
        got,
        Ok(json!({
            "plain": "text",
            "num": 1,
            "nested": {"c": "x", "deeper": {"all": [1, 2, 3]}, "lit": [1, {"k": "v"}]},
            "arr": [{"x": 1}, 2],
            "ctx": "exec",
            "call": "1-x",
            "dollar": "$.not.a.path"
        }))
    );
}

#[test]
fn template_path_that_finds_nothing_is_states_runtime_with_aws_cause() {
    let err = eval_template(json!({"value.$": "$.x"}), json!({"a": 1})).expect_err("missing");
    assert_eq!(err.error, "States.Runtime");
    assert_eq!(
        err.cause,
        "The JSONPath '$.x' specified for the field 'value.$' could not be found in the input '{\"a\":1}'"
    );
}

#[test]
fn template_compile_reports_every_problem_with_a_pointer() {
    let problems = Template::compile(&json!({
        "a.$": 3,
        "b.$": "nope",
        "c": {"d.$": "$.[", "e": [{"f.$": "States.Nope()"}]},
        "g.$": "States.ArrayRange(1, 2)",
        "h~/.$": "$$$",
        "ok.$": "$.fine",
        "dup": 1,
        "dup.$": "$.x"
    }))
    .expect_err("invalid");
    let pointers: Vec<&str> = problems.iter().map(|p| p.pointer.as_str()).collect();
    assert_eq!(
        pointers,
        vec![
            "/a.$",
            "/b.$",
            "/c/d.$",
            "/c/e/0/f.$",
            "/g.$",
            "/h~0~1.$",
            "/dup.$"
        ]
    );
    assert!(
        problems[4].message.contains("takes 3 argument"),
        "{}",
        problems[4].message
    );
    assert!(problems[3].message.contains("not an intrinsic function"));
}

#[test]
fn template_depth_is_limited() {
    let mut t = json!({"x.$": "$"});
    for _ in 0..(crate::limits::TEMPLATE_DEPTH_MAX + 2) {
        t = json!({"n": t});
    }
    let problems = Template::compile(&t).expect_err("too deep");
    assert!(problems[0].message.contains("deeper than"));
}

fn call(text: &str, input: Value) -> Result<Value, StatesError> {
    let call = Call::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    call.evaluate(
        &input,
        &json!({"Execution": {"Name": "a-b-c"}}),
        &mut Rng::new(7),
        "r.$",
    )
}

#[test]
fn intrinsics_compute_what_aws_computes() {
    let input = json!({"s": "a,b,,c", "arr": [1, 2, 2, "x", {"k": 1}, {"k": 1}], "o": {"a": 1}, "n": 2, "f": 1.5});
    let cases: Vec<(&str, Value)> = vec![
        ("States.Format('Hello {}!', 'world')", json!("Hello world!")),
        ("States.Format('{} {} {} {}', $.n, $.f, null, true)", json!("2 1.5 null true")),
        ("States.Format('{}', $.o)", json!("{a=1}")),
        ("States.Format('{}', States.Array(1, 'x', $.o))", json!("[1, x, {a=1}]")),
        ("States.MathAdd(1.5, -2.5)", json!(0)),
        ("States.MathAdd(-1.51, 0.49)", json!(-2)),
        ("States.StringToJson('-0')", json!(0)),
        ("States.Format('\\{\\} {} \\'q\\' \\\\', 1)", json!("{} 1 'q' \\")),
        ("States.Format('plain')", json!("plain")),
        ("States.StringToJson('{\"a\": [1, 2]}')", json!({"a": [1, 2]})),
        ("States.StringToJson('12')", json!(12)),
        ("States.JsonToString($.o)", json!("{\"a\":1}")),
        ("States.JsonToString($.f)", json!("1.5")),
        ("States.Array(1, 'two', $.o, States.Array())", json!([1, "two", {"a": 1}, []])),
        ("States.ArrayPartition(States.ArrayRange(1, 5, 1), 2)", json!([[1, 2], [3, 4], [5]])),
        ("States.ArrayContains($.arr, 'x')", json!(true)),
        ("States.ArrayContains($.arr, $.o)", json!(false)),
        ("States.ArrayContains($.arr, 2.0)", json!(true)),
        ("States.ArrayRange(1, 9, 2)", json!([1, 3, 5, 7, 9])),
        ("States.ArrayRange(5, 1, -2)", json!([5, 3, 1])),
        ("States.ArrayRange(5, 1, 2)", json!([])),
        ("States.ArrayRange(0, 999, 1)", Value::Array((0..1000).map(Value::from).collect())),
        ("States.ArrayGetItem($.arr, 3)", json!("x")),
        ("States.ArrayLength($.arr)", json!(6)),
        ("States.ArrayUnique($.arr)", json!([1, 2, "x", {"k": 1}])),
        ("States.Base64Encode('Data to encode')", json!("RGF0YSB0byBlbmNvZGU=")),
        ("States.Base64Decode('RGF0YSB0byBlbmNvZGU=')", json!("Data to encode")),
        ("States.Hash('input data', 'MD5')", json!("812f45842bc6d66ee14572ce20db8e86")),
        ("States.Hash('input data', 'SHA-1')", json!("aaff4a450a104cd177d28d18d74485e8cae074b7")),
        ("States.Hash('input data', 'SHA-256')", json!("b4a697a057313163aee33cd8d40c66e9f0f177e00cac2de32475ffff6169c3e3")),
        ("States.JsonMerge($.o, States.StringToJson('{\"b\": 2, \"a\": 3}'), false)", json!({"a": 3, "b": 2})),
        ("States.MathAdd($.n, -5)", json!(-3)),
        ("States.MathAdd(111, -1)", json!(110)),
        ("States.StringSplit($.s, ',')", json!(["a", "b", "c"])),
        ("States.StringSplit('a+b,c', ',+')", json!(["a", "b", "c"])),
        ("States.ArrayGetItem(States.StringSplit($$.Execution.Name, '-'), States.MathAdd(States.ArrayLength(States.StringSplit($$.Execution.Name, '-')), -1))", json!("c")),
    ];
    for (text, expected) in cases {
        assert_eq!(call(text, input.clone()), Ok(expected), "{text}");
    }
}

#[test]
fn hash_sha384_and_sha512_have_the_right_lengths() {
    for (algorithm, hex_chars) in [("SHA-384", 96), ("SHA-512", 128)] {
        let got = call(&format!("States.Hash('x', '{algorithm}')"), json!({})).expect("hash");
        let text = got.as_str().expect("string");
        assert_eq!(text.len(), hex_chars, "{algorithm}");
        assert!(text
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    }
}

#[test]
fn random_intrinsics_draw_from_the_callers_entropy() {
    let call_uuid = Call::parse("States.UUID()").expect("valid");
    let a = call_uuid
        .evaluate(&json!({}), &json!({}), &mut Rng::new(1), "u.$")
        .expect("uuid");
    let b = call_uuid
        .evaluate(&json!({}), &json!({}), &mut Rng::new(1), "u.$")
        .expect("uuid");
    let c = call_uuid
        .evaluate(&json!({}), &json!({}), &mut Rng::new(2), "u.$")
        .expect("uuid");
    assert_eq!(a, b, "same entropy, same UUID");
    assert_ne!(a, c);
    let text = a.as_str().expect("string");
    assert_eq!(text.len(), 36);
    assert_eq!(&text[14..15], "4", "version 4: {text}");
    assert!(
        matches!(&text[19..20], "8" | "9" | "a" | "b"),
        "variant: {text}"
    );

    let random = Call::parse("States.MathRandom(10, 20)").expect("valid");
    for seed in 0..50 {
        let v = random
            .evaluate(&json!({}), &json!({}), &mut Rng::new(seed), "r.$")
            .expect("random");
        let n = v.as_i64().expect("integer");
        assert!((10..20).contains(&n), "{n}");
    }
    let seeded = Call::parse("States.MathRandom(0, 1000, 42)").expect("valid");
    let x = seeded
        .evaluate(&json!({}), &json!({}), &mut Rng::new(1), "r.$")
        .expect("random");
    let y = seeded
        .evaluate(&json!({}), &json!({}), &mut Rng::new(99), "r.$")
        .expect("random");
    assert_eq!(x, y, "a seeded draw does not depend on the entropy");
}

#[test]
fn bad_calls_at_run_time_are_intrinsic_failures_naming_the_call() {
    let input = json!({"s": "text", "arr": [1], "o": {"a": 1}, "big": "x".repeat(10_001)});
    for (text, function) in [
        ("States.ArrayGetItem($.arr, 5)", "States.ArrayGetItem"),
        ("States.ArrayGetItem($.arr, -1)", "States.ArrayGetItem"),
        ("States.ArrayLength($.s)", "States.ArrayLength"),
        ("States.ArrayPartition($.arr, 0)", "States.ArrayPartition"),
        ("States.ArrayRange(0, 1000, 1)", "States.ArrayRange"),
        ("States.ArrayRange(0, 10, 0)", "States.ArrayRange"),
        ("States.ArrayRange(0.5, 10, 1)", "States.ArrayRange"),
        ("States.StringToJson('{oops')", "States.StringToJson"),
        ("States.StringToJson($.arr)", "States.StringToJson"),
        ("States.Base64Decode('***')", "States.Base64Decode"),
        ("States.Base64Encode($.big)", "States.Base64Encode"),
        ("States.Hash($.s, $.s)", "States.Hash"),
        ("States.Hash($.big, 'MD5')", "States.Hash"),
        ("States.JsonMerge($.o, $.arr, false)", "States.JsonMerge"),
        ("States.MathAdd($.s, 1)", "States.MathAdd"),
        ("States.MathAdd(9223372036854775807, 1)", "States.MathAdd"),
        ("States.MathRandom(5, 5)", "States.MathRandom"),
        ("States.StringSplit($.arr, ',')", "States.StringSplit"),
        ("States.Format($.s, 1)", "States.Format"),
    ] {
        let err = call(text, input.clone()).expect_err(text);
        assert_eq!(err.error, STATES_INTRINSIC_FAILURE, "{text}");
        assert!(err.cause.contains(function), "{text}: {}", err.cause);
    }
    let err = call("States.ArrayLength($.nope)", input).expect_err("missing path");
    assert_eq!(err.error, STATES_RUNTIME);
    assert!(err.cause.contains("'$.nope'"));
}

#[test]
fn bad_calls_are_rejected_when_parsed() {
    for (text, fragment) in [
        ("States.Nope()", "not an intrinsic function"),
        ("States.UUID(1)", "takes 0 argument"),
        ("States.ArrayRange(1, 2)", "takes 3 argument"),
        ("States.MathRandom(1)", "takes 2 to 3 argument"),
        ("States.Format()", "at least 1"),
        ("States.Format('{} {}', 1)", "2 placeholder"),
        ("States.Format('{', 1)", "unescaped '{'"),
        ("States.Format('}')", "unescaped '}'"),
        ("States.Format(1)", "must be a string"),
        ("States.ArrayLength('abc')", "must be an array"),
        ("States.JsonMerge($.a, $.b, true)", "deep merge"),
        ("States.Hash('a', 'SHA-3')", "algorithm"),
        ("States.Array(1, 2", "missing ')'"),
        ("States.Array(1 2)", "expected ',' or ')'"),
        ("States.Array('unterminated)", "unterminated"),
        ("States.Array(@)", "expected an argument"),
        ("States.Array(1) trailing", "unexpected text"),
        ("States.Array($.a[)", "invalid JSONPath"),
        ("States.Array(1.2.3)", "not a number"),
    ] {
        let err = Call::parse(text).expect_err(text);
        assert!(err.message.contains(fragment), "{text}: {}", err.message);
    }
    let deep = format!("{}1{}", "States.Array(".repeat(40), ")".repeat(40));
    assert!(Call::parse(&deep)
        .expect_err("deep")
        .message
        .contains("nested deeper"));
}

#[test]
fn path_arguments_may_contain_commas_and_parentheses_inside_brackets() {
    let input = json!({"a": [{"x": 1, "y": "p,q"}, {"x": 2}], "k,l": 3});
    assert_eq!(
        call("States.Array($.a[?(@.x > 1)], $['k,l'])", input.clone()),
        Ok(json!([[{"x": 2}], 3]))
    );
    assert_eq!(call("States.ArrayLength($.a[0,1])", input), Ok(json!(2)));
}

#[test]
fn pipeline_runs_input_parameters_result_selector_result_path_output() {
    let raw = json!({"keep": 1, "sub": {"a": 2, "b": 3}});
    let context = json!({});
    let input_path = InputOutputPath::Select(Path::parse("$.sub").expect("valid"));
    let borrowed = process_input_cow(&raw, &input_path, &context).expect("input");
    assert!(
        matches!(borrowed, std::borrow::Cow::Borrowed(_)),
        "a definite InputPath copies nothing"
    );
    let effective = process_input(&raw, &input_path, &context).expect("input");
    assert_eq!(*borrowed, effective);
    assert_eq!(effective, json!({"a": 2, "b": 3}));
    let params = Template::compile(&json!({"sum.$": "States.MathAdd($.a, $.b)"})).expect("valid");
    let parameters =
        process_parameters(&effective, Some(&params), &context, &mut Rng::new(0)).expect("params");
    assert_eq!(parameters, json!({"sum": 5}));
    let selector = Template::compile(&json!({"total.$": "$.sum"})).expect("valid");
    let result_path = ResultPathField::Reference(ReferencePath::parse("$.out").expect("valid"));
    let combined = process_result(
        raw.clone(),
        parameters,
        Some(&selector),
        &result_path,
        &context,
        &mut Rng::new(0),
    )
    .expect("result");
    assert_eq!(
        combined,
        json!({"keep": 1, "sub": {"a": 2, "b": 3}, "out": {"total": 5}})
    );
    let output = process_output(
        combined,
        &InputOutputPath::Select(Path::parse("$.out.total").expect("valid")),
        &context,
    )
    .expect("output");
    assert_eq!(output, json!(5));
}

#[test]
fn pipeline_null_fields_discard() {
    let raw = json!({"a": 1});
    assert_eq!(
        process_input(&raw, &InputOutputPath::Discard, &json!({})),
        Ok(json!({}))
    );
    assert_eq!(
        process_output(json!(5), &InputOutputPath::Discard, &json!({})),
        Ok(json!({}))
    );
    assert_eq!(
        process_result(
            raw.clone(),
            json!(9),
            None,
            &ResultPathField::Discard,
            &json!({}),
            &mut Rng::new(0)
        ),
        Ok(raw.clone())
    );
    let root = ResultPathField::Reference(ReferencePath::parse("$").expect("valid"));
    assert_eq!(
        process_result(
            raw.clone(),
            json!(9),
            None,
            &root,
            &json!({}),
            &mut Rng::new(0)
        ),
        Ok(json!(9))
    );
    assert_eq!(
        process_parameters(&json!(3), None, &json!({}), &mut Rng::new(0)),
        Ok(json!(3))
    );
}

#[test]
fn pipeline_missing_paths_use_jayways_causes() {
    let raw = json!({"a": 1});
    let missing_leaf = InputOutputPath::Select(Path::parse("$.NoSuchInputPath").expect("valid"));
    let err = process_input(&raw, &missing_leaf, &json!({})).expect_err("missing");
    assert_eq!(err.error, "States.Runtime");
    assert_eq!(
        err.cause,
        "Invalid path '$.NoSuchInputPath' : No results for path: $['NoSuchInputPath']"
    );
    let missing_middle =
        InputOutputPath::Select(Path::parse("$.no.such.result.path").expect("valid"));
    let err = process_output(raw.clone(), &missing_middle, &json!({})).expect_err("missing");
    assert_eq!(
        err.cause,
        "Invalid path '$.no.such.result.path' : Missing property in path $['no']"
    );
    let prefixed = in_state(err, "RaiseRuntime", 2);
    assert_eq!(
        prefixed.cause,
        "An error occurred while executing the state 'RaiseRuntime' (entered at the event id #2). \
         Invalid path '$.no.such.result.path' : Missing property in path $['no']"
    );
}

#[test]
fn payload_size_limit_is_exact() {
    let max = crate::limits::PAYLOAD_SIZE_BYTES_MAX;
    // A JSON string of n characters takes n + 2 bytes with its quotes.
    let at_limit = Value::String("x".repeat(max - 2));
    assert_eq!(check_payload_size(&at_limit, "S"), Ok(max));
    let over = Value::String("x".repeat(max - 1));
    let err = check_payload_size(&over, "lambda").expect_err("over");
    assert_eq!(err.error, "States.DataLimitExceeded");
    assert_eq!(
        err.cause,
        "The state/task 'lambda' returned a result with a size exceeding the maximum number of bytes service limit."
    );
    assert_eq!(
        json_size_bytes(&json!({"a": [1, "é"]})),
        "{\"a\":[1,\"é\"]}".len()
    );
}

#[test]
fn json_size_bytes_counts_deep_nesting_past_its_recursion_depth() {
    // Deeper than the counter recurses: the rest is counted with its explicit stack.
    let mut deep = json!({"k\"ey": [1.5, "x\u{1}", null, true]});
    for i in 0..200 {
        deep = if i % 2 == 0 {
            json!([deep, i])
        } else {
            json!({"n": deep, "s": "t"})
        };
    }
    let text = serde_json::to_string(&deep).expect("serializes");
    assert_eq!(json_size_bytes(&deep), text.len());
}

#[test]
fn json_size_bytes_counts_every_integer_digit_and_sign() {
    // Integers are counted, not formatted: each edge of the digit counting against the text.
    let numbers = [
        json!(0),
        json!(9),
        json!(10),
        json!(99),
        json!(100),
        json!(-1),
        json!(-10),
        json!(u64::MAX),
        json!(i64::MAX),
        json!(i64::MIN),
        json!(-9_999_999_999i64),
        json!(0.5),
        json!(-1e300),
    ];
    for number in numbers {
        let text = serde_json::to_string(&number).expect("serializes");
        assert_eq!(json_size_bytes(&number), text.len(), "{text}");
    }
}

#[test]
fn ten_nested_calls_are_accepted_and_eleven_rejected() {
    let nested = |n: usize| format!("{}1{}", "States.Array(".repeat(n), ")".repeat(n));
    assert!(Call::parse(&nested(crate::limits::INTRINSIC_NESTING_DEPTH_MAX)).is_ok());
    assert!(Call::parse(&nested(crate::limits::INTRINSIC_NESTING_DEPTH_MAX + 1)).is_err());
}

mod properties {
    use proptest::prelude::*;
    use serde_json::Value;

    use super::super::jsonpath::{Evaluator, Found};
    use super::super::{Path, ReferencePath};

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-5i64..5).prop_map(Value::from),
            "[ab]{0,2}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 40, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(("[ab]", inner), 0..4)
                    .prop_map(|entries| Value::Object(entries.into_iter().collect())),
            ]
        })
    }

    /// Definite paths of names and indexes, in dot and bracket notation.
    fn simple_path() -> impl Strategy<Value = String> {
        let step = prop_oneof![
            "[ab]".prop_map(|n| format!(".{n}")),
            "[ab]".prop_map(|n| format!("['{n}']")),
            (-3i64..3).prop_map(|i| format!("[{i}]")),
        ];
        prop::collection::vec(step, 0..5).prop_map(|steps| format!("${}", steps.concat()))
    }

    /// Any path form, to check that evaluation is total and shaped as Jayway's.
    fn any_path() -> impl Strategy<Value = String> {
        let step = prop_oneof![
            "[ab]".prop_map(|n| format!(".{n}")),
            (-3i64..3).prop_map(|i| format!("[{i}]")),
            Just(".*".to_string()),
            Just("[*]".to_string()),
            Just("..a".to_string()),
            Just("..*".to_string()),
            Just("[0,1]".to_string()),
            Just("['a','b']".to_string()),
            Just("[1:]".to_string()),
            Just("[::-1]".to_string()),
            Just("[?(@.a)]".to_string()),
            Just("[?(@.a == 1 || @ > 0)]".to_string()),
            Just("[?(@.a < $v || @.b == $w.a)]".to_string()),
            Just(".length()".to_string()),
        ];
        prop::collection::vec(step, 0..5).prop_map(|steps| format!("${}", steps.concat()))
    }

    proptest! {
        #[test]
        fn fast_walk_agrees_with_the_general_evaluator(doc in json_value(), text in simple_path()) {
            let path = Path::parse(&text).expect("generated paths are valid");
            prop_assert!(path.is_definite());
            let fast = path.select_definite_ref(&doc, &Value::Null, &crate::paths::NO_VARIABLES).expect("simple path");
            let mut evaluator = Evaluator::new(&doc, &Value::Null, &crate::paths::NO_VARIABLES);
            let general = evaluator.matches(&doc, &path.parsed.segments).expect("small");
            prop_assert!(general.len() <= 1);
            let general = general.first().map(Found::as_value);
            // `.length` on an array is the one case where the walk defers to the evaluator.
            if !text.contains("length") {
                prop_assert_eq!(fast, general);
            }
            let reference = ReferencePath::parse(&text).expect("a simple path is a reference path");
            prop_assert_eq!(reference.get(&doc), fast);
        }

        #[test]
        fn json_size_bytes_equals_serde_jsons_text(doc in json_value(), text in "\\PC{0,8}", x in any::<f64>()) {
            let with_odd_bits = serde_json::json!({"t": text, "x": x, "d": doc, "ctl": "\u{1}\u{8}\n\"\\"});
            let expected = serde_json::to_string(&with_odd_bits).expect("serializes").len();
            prop_assert_eq!(super::super::pipeline::json_size_bytes(&with_odd_bits), expected);
        }

        #[test]
        fn reference_set_then_get_round_trips(doc in json_value(), text in simple_path(), value in json_value()) {
            let reference = ReferencePath::parse(&text).expect("valid");
            if let Ok(updated) = reference.set(doc.clone(), value.clone()) {
                prop_assert_eq!(reference.get(&updated), Some(&value));
            } else {
                prop_assert!(!reference.is_root(), "setting the root always succeeds");
            }
        }

        #[test]
        fn any_path_evaluates_to_jayway_shapes(doc in json_value(), text in any_path()) {
            let path = Path::parse(&text).expect("generated paths are valid");
            let again = Path::parse(path.as_str());
            prop_assert_eq!(again.as_ref(), Ok(&path));
            // The variables the generated filters read, assigned.
            let mut variables = crate::paths::Variables::new();
            variables.insert("v".into(), serde_json::json!(1));
            variables.insert("w".into(), serde_json::json!({"a": "x"}));
            let found = path
                .try_select_in(&doc, &Value::Null, &variables)
                .expect("small documents stay in budget");
            if !path.is_definite() {
                prop_assert!(matches!(found, Some(Value::Array(_))), "indefinite -> array: {:?}", found);
            }
        }
    }
}

#[test]
fn field_expressions_name_their_field_in_failures() {
    let input = json!({"ErrorX": "Boom", "n": [1, 2]});
    let error_path = FieldExpression::parse("ErrorPath", "$.ErrorX").expect("valid");
    assert_eq!(error_path.field(), "ErrorPath");
    assert_eq!(
        error_path.evaluate(&input, &json!({}), &mut Rng::new(0)),
        Ok(json!("Boom"))
    );
    let missing = FieldExpression::parse("CausePath", "$.NoSuchCausePath").expect("valid");
    let err = missing
        .evaluate(&input, &json!({}), &mut Rng::new(0))
        .expect_err("missing");
    assert_eq!(err.error, "States.Runtime");
    assert_eq!(
        err.cause,
        "The JSONPath '$.NoSuchCausePath' specified for the field 'CausePath' could not be found \
         in the input '{\"ErrorX\":\"Boom\",\"n\":[1,2]}'"
    );
    let call = FieldExpression::parse(
        "CausePath",
        "States.Format('{} items', States.ArrayLength($.n))",
    )
    .expect("valid");
    assert_eq!(
        call.evaluate(&input, &json!({}), &mut Rng::new(0)),
        Ok(json!("2 items"))
    );
    assert!(FieldExpression::parse("CausePath", "States.Nope()").is_err());
    assert!(FieldExpression::parse("CausePath", "nope").is_err());
}
