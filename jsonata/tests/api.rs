//! The adapter's own behaviour: `{% %}`, compile errors, what an expression references,
//! evaluation with bindings, the Step Functions functions, and the host answers that a replay
//! records.

use serde_json::{json, Value};
use statelog_jsonata::{is_expression, Bindings, EvalError, Expression, Host};

/// Answers from fixed values, counting the questions.
#[derive(Default)]
struct Fixed {
    now: i64,
    seed: u64,
    asked_now: usize,
    asked_random: usize,
}

impl Fixed {
    fn new(now: i64, seed: u64) -> Fixed {
        Fixed {
            now,
            seed,
            ..Fixed::default()
        }
    }
}

impl Host for Fixed {
    fn now_ms(&mut self) -> i64 {
        self.asked_now += 1;
        self.now
    }
    fn next_u64(&mut self) -> u64 {
        self.asked_random += 1;
        self.seed
    }
}

fn eval_with(expr: &str, states: Value, host: &mut dyn Host) -> Result<Option<Value>, EvalError> {
    let expr = Expression::compile(expr).expect("compiles");
    let bindings = Bindings::new().with("states", &states);
    expr.evaluate(None, &bindings, host)
}

fn eval(expr: &str) -> Result<Option<Value>, EvalError> {
    eval_with(expr, json!({}), &mut Fixed::new(0, 1))
}

fn value(expr: &str) -> Value {
    match eval(expr) {
        Ok(Some(v)) => v,
        other => panic!("{expr}: {other:?}"),
    }
}

fn error(expr: &str) -> EvalError {
    match eval(expr) {
        Err(e) => e,
        other => panic!("{expr}: expected an error, got {other:?}"),
    }
}

#[test]
fn an_expression_is_a_string_wrapped_in_percent_braces() {
    assert_eq!(is_expression("{% $states.input %}"), Some("$states.input"));
    assert_eq!(is_expression("{%$x%}"), Some("$x"));
    assert_eq!(is_expression("{%%}"), Some(""));
    assert_eq!(is_expression(" {% $x %}"), None, "leading space: a literal");
    assert_eq!(
        is_expression("{% $x %} "),
        None,
        "trailing space: a literal"
    );
    assert_eq!(is_expression("{% $x"), None);
    assert_eq!(is_expression("$x %}"), None);
    assert_eq!(is_expression("plain"), None);
}

#[test]
fn a_compiled_expression_can_be_shared_between_threads() {
    fn shared<T: Send + Sync>() {}
    shared::<Expression>();
    let expr = std::sync::Arc::new(Expression::compile("$states.input.n * 2").expect("compiles"));
    let handles: Vec<_> = (0..2)
        .map(|i| {
            let expr = std::sync::Arc::clone(&expr);
            std::thread::spawn(move || {
                let bindings = Bindings::new().with("states", &json!({"input": {"n": i}}));
                expr.evaluate(None, &bindings, &mut Fixed::default())
            })
        })
        .collect();
    for (i, h) in handles.into_iter().enumerate() {
        assert_eq!(h.join().expect("thread"), Ok(Some(json!(i * 2))));
    }
}

#[test]
fn compile_errors_carry_the_jsonata_code() {
    let e = Expression::compile("$states.input.(").expect_err("does not parse");
    assert_eq!(e.code.as_deref(), Some("S0207"), "{e}");
    let e = Expression::compile("Account.Order[0].Product;").expect_err("does not parse");
    assert_eq!(e.code.as_deref(), Some("S0201"), "{e}");
    assert!(e.to_string().starts_with("S0201: "), "{e}");
    let e = Expression::compile("'unterminated").expect_err("does not parse");
    assert_eq!(e.code.as_deref(), Some("S0101"), "{e}");
}

#[test]
fn free_variables_are_the_names_read_but_not_bound() {
    let free = |e: &str| {
        Expression::compile(e)
            .expect("compiles")
            .free_variables()
            .to_vec()
    };
    assert_eq!(free("$states.input.a & $x"), ["states", "x"]);
    assert_eq!(
        free("$sum($states.input.xs)"),
        ["states"],
        "a function call"
    );
    assert_eq!(free("$map($xs, $string)"), ["xs"], "a function as a value");
    assert_eq!(free("($a := 1; $a + $b)"), ["b"], "bound by :=");
    assert_eq!(free("function($p){ $p + $q }"), ["q"], "a parameter");
    assert_eq!(
        free("$randomSeeded(1)"),
        Vec::<String>::new(),
        "a call of an unknown name"
    );
    assert_eq!(
        free("$states.input.items#$k[$k > 0]"),
        ["states"],
        "an index binding"
    );
    assert_eq!(
        free("$states.input.items@$i.($i.x)"),
        ["states"],
        "a focus binding"
    );
    assert_eq!(
        free("( $even := function($n){ $n = 0 ? true : $odd($n - 1) }; $odd := function($n){ $n = 0 ? false : $even($n - 1) }; $odd($v) )"),
        ["v"],
        "functions defined later in the same block"
    );
    assert_eq!(free("($x := $y; ($z := 1; $x + $z + $w))"), ["y", "w"]);
    assert_eq!(free("$x.$x"), ["x"], "named once");
}

#[test]
fn reading_the_input_at_the_top_level_is_told() {
    let reads = |e: &str| Expression::compile(e).expect("compiles").reads_context();
    assert!(reads("$"));
    assert!(reads("$$"));
    assert!(reads("a.b"));
    assert!(reads("$sum(a)"));
    assert!(reads("*"));
    assert!(!reads("$states.input.a"));
    assert!(!reads("$states.input[x > 1].y"));
    assert!(!reads("$states.input.items.{ 'n': name }"));
    assert!(!reads("$map($states.input.xs, function($v){ $v.x })"));
    assert!(!reads("$states.input.xs^(>price)"));
}

#[test]
fn calls_tells_the_functions_named() {
    let expr = Expression::compile("$uuid() & $string($random())").expect("compiles");
    assert!(expr.calls("uuid") && expr.calls("random") && expr.calls("string"));
    assert!(!expr.calls("eval"));
}

#[test]
fn bindings_reach_the_expression_and_undefined_is_none() {
    let states = json!({"input": {"a": 1, "b": [1, 2, 3]}});
    let mut host = Fixed::default();
    assert_eq!(
        eval_with(
            "$states.input.a + $sum($states.input.b)",
            states.clone(),
            &mut host
        ),
        Ok(Some(json!(7)))
    );
    assert_eq!(
        eval_with("$states.input.missing", states.clone(), &mut host),
        Ok(None)
    );
    assert_eq!(eval_with("$doesNotExist", states, &mut host), Ok(None));
    let expr = Expression::compile("$x & '/' & $y").expect("compiles");
    let mut bindings = Bindings::new();
    bindings.set("x", &json!("one")).set("y", &json!("two"));
    bindings.set("x", &json!("uno"));
    assert!(bindings.contains("x") && !bindings.contains("z"));
    assert_eq!(
        expr.evaluate(None, &bindings, &mut host),
        Ok(Some(json!("uno/two")))
    );
    assert_eq!(
        host.asked_now + host.asked_random,
        0,
        "the host is not asked"
    );
}

#[test]
fn the_input_is_the_context_when_given() {
    let expr = Expression::compile("a * 2").expect("compiles");
    let mut host = Fixed::default();
    assert_eq!(
        expr.evaluate(Some(&json!({"a": 21})), &Bindings::new(), &mut host),
        Ok(Some(json!(42)))
    );
    assert_eq!(expr.evaluate(None, &Bindings::new(), &mut host), Ok(None));
}

#[test]
fn results_come_out_as_json() {
    assert_eq!(value("1.5 * 2"), json!(3));
    assert_eq!(value("0.1 + 0.2"), json!(0.30000000000000004));
    assert_eq!(value("-0"), json!(0));
    assert_eq!(value("{'a': $states.missing, 'b': 1}"), json!({"b": 1}));
    assert_eq!(value("[1, $states.missing, 2]"), json!([1, 2]));
    assert!(matches!(
        error("function($x){ $x }"),
        EvalError::NotJson { kind: "function" }
    ));
    assert_eq!(error("1 / 0").code(), Some("D1001"));
}

#[test]
fn errors_keep_the_jsonata_code_and_message_as_aws_quotes_them() {
    // The cause AWS recorded for this expression ends with
    // "threw an error during evaluation. T1006: Attempted to invoke a non-function".
    let e = eval_with(
        "$randomSeeded($states.input.FunctionInput.fst)",
        json!({"input": {"FunctionInput": {"fst": 1}}}),
        &mut Fixed::default(),
    )
    .expect_err("not a function");
    assert_eq!(e.code(), Some("T1006"));
    assert_eq!(e.to_string(), "T1006: Attempted to invoke a non-function");
    assert_eq!(error("$error('boom')").to_string(), "D3137: boom");
    assert_eq!(error("'a' + 1").code(), Some("T2001"));
}

#[test]
fn partition_cuts_an_array_into_chunks() {
    // The results AWS recorded (localstack's array_partition_jsonata template).
    assert_eq!(value("$partition([0, 1, 2], 2)"), json!([[0, 1], [2]]));
    assert_eq!(
        value("$partition([0, 1, 2, 3], 2)"),
        json!([[0, 1], [2, 3]])
    );
    assert_eq!(value("$partition([0, 1, 2], 5)"), json!([[0, 1, 2]]));
    assert_eq!(value("$partition([0], 1)"), json!([[0]]));
    assert_eq!(value("$partition([0, 1, 2], 1)"), json!([[0], [1], [2]]));
    assert_eq!(value("$partition([], 3)"), json!([]));
    assert_eq!(
        value("$partition('x', 3)"),
        json!([["x"]]),
        "a value is a one-item array"
    );
    assert_eq!(eval("$partition($states.none, 3)"), Ok(None));
    for bad in [
        "$partition([1], 0)",
        "$partition([1], -1)",
        "$partition([1], 1.5)",
    ] {
        assert_eq!(
            error(bad).code(),
            None,
            "{bad}: Step Functions' own refusal"
        );
    }
    assert_eq!(error("$partition([1], 'x')").code(), Some("T0410"));
    assert_eq!(error("$partition([1], 1, 2)").code(), Some("T0410"));
}

#[test]
fn range_includes_its_end_and_steps_down_with_a_negative_step() {
    // The results AWS recorded (localstack's array_range_jsonata template).
    assert_eq!(value("$range(0, 9, 3)"), json!([0, 3, 6, 9]));
    assert_eq!(value("$range(0, 10, 3)"), json!([0, 3, 6, 9]));
    assert_eq!(value("$range(1, 9, 2)"), json!([1, 3, 5, 7, 9]));
    assert_eq!(
        value("$range(1, 9, 9)"),
        json!(1),
        "a single item comes out as itself"
    );
    assert_eq!(value("$range(10, 0, -5)"), json!([10, 5, 0]));
    assert_eq!(value("$range(-3, -1, 1)"), json!([-3, -2, -1]));
    assert_eq!(value("$count($range(1, 5, 1))"), json!(5));
    assert_eq!(
        eval("$range(5, 1, 1)"),
        Ok(None),
        "nothing between: no items"
    );
    assert_eq!(error("$range(1, 5, 0)").code(), None);
    assert_eq!(error("$range(1.5, 5, 1)").code(), None);
    assert_eq!(error("$range('1', 5, 1)").code(), Some("T0410"));
    assert_eq!(
        error("$range(1, 5)").code(),
        Some("T0410"),
        "too few arguments"
    );
    assert_eq!(eval("$range($states.none, 5, 1)"), Ok(None));
    assert_eq!(error("$range(0, 1e8, 1)").code(), Some("D2014"));
}

#[test]
fn hash_gives_the_hex_digest() {
    let cases = [
        ("MD5", "900150983cd24fb0d6963f7d28e17f72"),
        ("SHA-1", "a9993e364706816aba3e25717850c26c9cd0d89d"),
        (
            "SHA-256",
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        ),
        (
            "SHA-384",
            "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7",
        ),
        (
            "SHA-512",
            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
        ),
    ];
    for (algorithm, digest) in cases {
        assert_eq!(
            value(&format!("$hash('abc', '{algorithm}')")),
            json!(digest)
        );
    }
    let e = error("$hash('abc', 'SHA-3')");
    assert!(e.to_string().contains("SHA-3"), "{e}");
    assert_eq!(error("$hash(1, 'MD5')").code(), Some("T0410"));
    assert_eq!(eval("$hash($states.none, 'MD5')"), Ok(None));
}

#[test]
fn parse_reads_json_text() {
    // The results AWS recorded (localstack's parse_jsonata template).
    assert_eq!(value("$parse('-0')"), json!(0));
    assert_eq!(value("$parse('1.1')"), json!(1.1));
    assert_eq!(value("$parse('true')"), json!(true));
    assert_eq!(value("$parse('\"HelloWorld\"')"), json!("HelloWorld"));
    assert_eq!(
        value("$parse('[1, 2, \"HelloWorld\"]')"),
        json!([1, 2, "HelloWorld"])
    );
    assert_eq!(
        value("$parse('{\"Arg1\": 1, \"Arg2\": []}')"),
        json!({"Arg1": 1, "Arg2": []})
    );
    assert_eq!(value("$parse('{\"a\": {\"b\": 2}}').a.b"), json!(2));
    assert!(error("$parse('{')").to_string().contains("not JSON"));
    assert!(error("$parse('1 2')").to_string().contains("not JSON"));
    assert_eq!(error("$parse(1)").code(), Some("T0410"));
}

#[test]
fn eval_is_not_available() {
    let e = error("$eval('1 + 1')");
    assert_eq!(e.code(), Some("T1006"));
}

#[test]
fn random_and_uuid_draw_from_the_host_seed() {
    let run = |expr: &str, seed: u64| {
        let mut host = Fixed::new(0, seed);
        let v = eval_with(expr, json!({}), &mut host).expect("evaluates");
        (v, host.asked_random)
    };
    let (a, asked) = run("[$random(), $random(), $uuid(), $uuid()]", 7);
    assert_eq!(asked, 1, "one seed per evaluation");
    let (b, _) = run("[$random(), $random(), $uuid(), $uuid()]", 7);
    assert_eq!(a, b, "the same host answer, the same values");
    let (c, _) = run("[$random(), $random(), $uuid(), $uuid()]", 8);
    assert_ne!(a, c, "another seed, other values");
    let a = a.expect("a value");
    let items = a.as_array().expect("an array");
    for r in &items[..2] {
        let r = r.as_f64().expect("a number");
        assert!((0.0..1.0).contains(&r), "{r}");
    }
    assert_ne!(items[0], items[1], "two draws differ");
    assert_ne!(items[2], items[3], "two uuids differ");
    for u in &items[2..] {
        let u = u.as_str().expect("a string");
        let parts: Vec<&str> = u.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12],
            "{u}"
        );
        assert!(u
            .chars()
            .all(|c| c == '-' || c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_eq!(&parts[2][..1], "4", "version 4: {u}");
        assert!("89ab".contains(&parts[3][..1]), "RFC 4122 variant: {u}");
    }
    let (shuffled, _) = run("$shuffle([1, 2, 3, 4, 5, 6, 7, 8])", 7);
    assert_eq!(shuffled, run("$shuffle([1, 2, 3, 4, 5, 6, 7, 8])", 7).0);
    let mut sorted: Vec<i64> = shuffled
        .expect("a value")
        .as_array()
        .expect("an array")
        .iter()
        .map(|v| v.as_i64().expect("an integer"))
        .collect();
    sorted.sort();
    assert_eq!(sorted, [1, 2, 3, 4, 5, 6, 7, 8]);
}

#[test]
fn a_seeded_random_depends_only_on_the_seed() {
    let (x, y) = (
        eval_with("$random(42)", json!({}), &mut Fixed::new(0, 1)),
        eval_with("$random(42)", json!({}), &mut Fixed::new(0, 2)),
    );
    assert_eq!(x, y);
    let x = x
        .expect("evaluates")
        .expect("a value")
        .as_f64()
        .expect("a number");
    assert!((0.0..1.0).contains(&x));
    assert_ne!(value("$random(42)"), value("$random(43)"));
    assert!(error("$random(1.5)").to_string().contains("integer"));
    assert!(error("$random('a')").to_string().contains("integer"));
}

#[test]
fn now_and_millis_come_from_the_host_once_per_evaluation() {
    let mut host = Fixed::new(1_700_000_000_123, 0);
    let v = eval_with(
        "[$now(), $millis(), $now(), $millis()]",
        json!({}),
        &mut host,
    );
    assert_eq!(
        v,
        Ok(Some(json!([
            "2023-11-14T22:13:20.123Z",
            1_700_000_000_123_i64,
            "2023-11-14T22:13:20.123Z",
            1_700_000_000_123_i64
        ])))
    );
    assert_eq!(host.asked_now, 1);
    assert_eq!(host.asked_random, 0);
    let mut host = Fixed::new(0, 0);
    assert_eq!(
        eval_with("$now('[Y0001]-[M01]-[D01]')", json!({}), &mut host),
        Ok(Some(json!("1970-01-01")))
    );
    assert_eq!(
        eval_with("$now('[H01]:[m01]', '+0130')", json!({}), &mut host),
        Ok(Some(json!("01:30")))
    );
    let mut host = Fixed::new(0, 0);
    let _ = eval_with("$string(1)", json!({}), &mut host);
    assert_eq!(
        host.asked_now + host.asked_random,
        0,
        "not named, not asked"
    );
}

/// A host that records what a first run drew, and one that replays it.
#[test]
fn recorded_host_answers_replay_to_the_same_results() {
    struct Recording {
        source: Fixed,
        log: Vec<u64>,
    }
    impl Host for Recording {
        fn now_ms(&mut self) -> i64 {
            let n = self.source.now_ms();
            self.log.push(n as u64);
            n
        }
        fn next_u64(&mut self) -> u64 {
            let n = self.source.next_u64();
            self.log.push(n);
            n
        }
    }
    struct Replay(std::vec::IntoIter<u64>);
    impl Host for Replay {
        fn now_ms(&mut self) -> i64 {
            self.0.next().expect("recorded") as i64
        }
        fn next_u64(&mut self) -> u64 {
            self.0.next().expect("recorded")
        }
    }
    let exprs = [
        "{'at': $now(), 'id': $uuid(), 'r': $random()}",
        "$millis() + $random()",
        "$shuffle($range(1, 20, 1))",
    ];
    let mut first = Recording {
        source: Fixed::new(1_234_567, 0xdead_beef),
        log: Vec::new(),
    };
    let first_results: Vec<_> = exprs
        .iter()
        .map(|e| eval_with(e, json!({}), &mut first))
        .collect();
    // now and a seed, now and a seed, a seed.
    assert_eq!(first.log.len(), 5, "{:?}", first.log);
    let mut replay = Replay(first.log.into_iter());
    let replayed: Vec<_> = exprs
        .iter()
        .map(|e| eval_with(e, json!({}), &mut replay))
        .collect();
    assert_eq!(first_results, replayed);
}

#[test]
fn deep_input_does_not_overflow_the_stack() {
    const DEPTH: usize = 5_000;
    let mut deep = json!(1);
    for _ in 0..DEPTH {
        deep = Value::Array(vec![deep]);
    }
    let expr = Expression::compile("$states").expect("compiles");
    let bindings = Bindings::new().with("states", &deep);
    let out = expr
        .evaluate(None, &bindings, &mut Fixed::default())
        .expect("evaluates")
        .expect("a value");
    // serde_json compares and drops a value recursively: walk and unwind both by hand.
    let mut levels = [0, 0];
    for (i, mut v) in [deep, out].into_iter().enumerate() {
        while let Value::Array(mut items) = v {
            assert_eq!(items.len(), 1);
            levels[i] += 1;
            v = items.pop().unwrap_or(Value::Null);
        }
        assert_eq!(v, json!(1));
    }
    assert_eq!(levels, [DEPTH, DEPTH]);
}
