//! JSONata beside JSONPath, in one run: one Pass state's data flow and its one `Assign` (a
//! 5-field `Output` against a 5-field `Parameters`, on a ~1 KiB input), and the 10-state Pass/Choice machine of
//! `benches/engine.rs` written in each language, run by `decide` alone (transitions per second
//! of the pure interpreter) and through the engine with group commit at 100 concurrent
//! executions. Targets: the JSONata Pass under 10 µs; the JSONata machine at >= 0.7x the
//! JSONPath one's transitions per second.
//!
//! Run: `cargo bench --bench jsonata -- --warm-up-time 1 --measurement-time 3`; figures are
//! also printed as `FIGURE name: value` lines.

use std::borrow::Cow;
use std::time::{Duration, Instant};

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use serde_json::{json, Value};
use statelog::asl::{parse_definition, Env, StateMachine};
use statelog::engine::{validate, Engine, EngineOptions};
use statelog::interpreter::{decide, ExecutionState, Options, StartRequest, Trigger};
use statelog::paths::NO_VARIABLES;
use statelog_rng::Rng;
use statelog_wal::Durability;

fn input_1kib() -> Value {
    let items: Vec<Value> = (0..12)
        .map(|i| json!({"sku": format!("SKU-{i:04}"), "quantity": i + 1, "price": 9.99 + f64::from(i)}))
        .collect();
    json!({
        "order": {
            "id": "7f9c2ba4-e88f-4d1c-8c2e-3b1f4c1a9d20",
            "customer": {"id": "c-1029", "name": "Ada Lovelace", "email": "ada@example.com",
                         "address": {"street": "12 Analytical Way", "city": "London", "zip": "N1 9GU"}},
            "items": items,
            "currency": "EUR",
            "notes": "Leave at the door. Ring twice. Fragile: contains glassware and a teapot."
        },
        "meta": {"source": "web", "attempt": 1, "tags": ["priority", "gift", "express"]}
    })
}

fn compile(definition: &Value) -> StateMachine {
    parse_definition(&definition.to_string(), &validate::options()).expect("valid definition")
}

/// A one-Pass machine with five computed fields and one assigned variable, in JSONPath or
/// JSONata.
fn pass_machine(jsonata: bool) -> StateMachine {
    let state = if jsonata {
        json!({"Type": "Pass", "QueryLanguage": "JSONata", "End": true,
            "Assign": {"who": "{% $states.input.order.customer.name & ' in ' & $states.input.order.customer.address.city %}"},
            "Output": {
            "orderId": "{% $states.input.order.id %}",
            "customer": "{% $states.input.order.customer.name %}",
            "city": "{% $states.input.order.customer.address.city %}",
            "firstSku": "{% $states.input.order.items[0].sku %}",
            "label": "{% 'Order ' & $states.input.order.id & ' for ' & $states.input.order.customer.email %}",
        }})
    } else {
        json!({"Type": "Pass", "End": true,
            // A JSONPath Pass assigns from its result (its Parameters).
            "Assign": {"who.$": "States.Format('{} in {}', $.customer, $.city)"},
            "Parameters": {
            "orderId.$": "$.order.id",
            "customer.$": "$.order.customer.name",
            "city.$": "$.order.customer.address.city",
            "firstSku.$": "$.order.items[0].sku",
            "label.$": "States.Format('Order {} for {}', $.order.id, $.order.customer.email)",
        }})
    };
    compile(&json!({"StartAt": "P", "States": {"P": state}}))
}

fn bench_pass(c: &mut Criterion) {
    let input = input_1kib();
    let context = Value::Null;
    let mut group = c.benchmark_group("jsonata_pass_5_fields_1kib");
    for (name, jsonata) in [("jsonpath", false), ("jsonata", true)] {
        let machine = pass_machine(jsonata);
        let state = machine.states.get("P").expect("P");
        let flow = &state.data_flow;
        let assign = state.assign.as_ref().expect("an Assign");
        let mut rng = Rng::new(1);
        let mut step = |raw: &Value| -> (Value, Value) {
            let mut env = Env {
                now_ms: 0,
                entropy: &mut rng,
                variables: &NO_VARIABLES,
                jsonata: machine.jsonata.as_ref(),
            };
            let effective = flow
                .effective_input(raw, &context, &NO_VARIABLES)
                .expect("input");
            let result = flow
                .pass_result(Cow::Borrowed(&*effective), &context, &mut env)
                .expect("result");
            let on = flow.assign_input(&result, raw, None, &context);
            let assigned = assign.evaluate(&on, &context, &mut env).expect("assigned");
            let output = flow
                .result_output(raw, result, &context, &mut env)
                .expect("output");
            (output, Value::Object(assigned))
        };
        let (output, assigned) = step(&input);
        assert_eq!(output["city"], json!("London"), "{name}: {output}");
        assert_eq!(assigned, json!({"who": "Ada Lovelace in London"}), "{name}");
        // The same on a small input: what the step costs beyond converting its input.
        let small = json!({"order": {"id": "o-1", "items": [{"sku": "SKU-0000"}],
            "customer": {"name": "Ada", "email": "ada@example.com", "address": {"city": "London"}}}});
        let started = Instant::now();
        for _ in 0..20_000 {
            black_box(step(black_box(&small)));
        }
        let per_step = started.elapsed() / 20_000;
        println!(
            "FIGURE pass_5_fields_small_input_{name}_us: {:.2}",
            per_step.as_secs_f64() * 1e6
        );
        let started = Instant::now();
        const STEPS: u32 = 20_000;
        for _ in 0..STEPS {
            black_box(step(black_box(&input)));
        }
        let per_step = started.elapsed() / STEPS;
        println!(
            "FIGURE pass_5_fields_{name}_us: {:.2}",
            per_step.as_secs_f64() * 1e6
        );
        group.bench_function(name, |b| b.iter(|| step(black_box(&input))));
    }
    group.finish();
}

/// The 10-state Pass/Choice machine of `benches/engine.rs`, in JSONPath or JSONata.
fn pass_choice_machine(jsonata: bool) -> Value {
    let mut states = serde_json::Map::new();
    for i in 0..10 {
        let state = if i % 2 == 1 && i < 9 {
            let rule = if jsonata {
                json!({"Condition": "{% $states.input.n > 1000 %}", "Next": "S9"})
            } else {
                json!({"Variable": "$.n", "NumericGreaterThan": 1000, "Next": "S9"})
            };
            json!({"Type": "Choice", "Choices": [rule], "Default": format!("S{}", i + 1)})
        } else if i == 9 {
            json!({"Type": "Pass", "End": true})
        } else {
            json!({"Type": "Pass", "Next": format!("S{}", i + 1)})
        };
        states.insert(format!("S{i}"), state);
    }
    let mut machine = json!({"StartAt": "S0", "States": states});
    if jsonata {
        machine["QueryLanguage"] = json!("JSONata");
    }
    machine
}

fn start_request() -> Trigger {
    Trigger::Start(StartRequest {
        input: json!({"n": 1}),
        input_text: None,
        execution_arn: "arn:aws:states:us-east-1:000000000000:execution:sm:e".into(),
        state_machine_arn: "arn:aws:states:us-east-1:000000000000:stateMachine:sm".into(),
        role_arn: "arn:aws:iam::000000000000:role/r".into(),
        through: None,
        map_run_arn: None,
    })
}

fn bench_machine_decide(c: &mut Criterion) {
    let options = Options::default();
    let mut group = c.benchmark_group("jsonata_machine_decide");
    group.throughput(Throughput::Elements(10));
    let mut rates = Vec::new();
    for (name, jsonata) in [("jsonpath", false), ("jsonata", true)] {
        let machine = compile(&pass_choice_machine(jsonata));
        let fresh = ExecutionState::new();
        let mut rng = Rng::new(2);
        let mut run = || {
            let decision =
                decide(&machine, &fresh, start_request(), 0, &options, &mut rng).expect("decides");
            assert!(decision.next_state.status().is_closed());
            decision
        };
        let started = Instant::now();
        const RUNS: u32 = 20_000;
        for _ in 0..RUNS {
            black_box(run());
        }
        let rate = 10.0 * f64::from(RUNS) / started.elapsed().as_secs_f64();
        println!("FIGURE machine_decide_{name}_transitions_per_s: {rate:.0}");
        rates.push(rate);
        group.bench_function(name, |b| b.iter(&mut run));
    }
    println!(
        "FIGURE machine_decide_jsonata_over_jsonpath: {:.2}",
        rates[1] / rates[0]
    );
    group.finish();
}

fn bench_machine_engine(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let options = EngineOptions {
        durability: Durability::GroupCommit,
        background_timers: false,
        ..EngineOptions::default()
    };
    let engine = Engine::open(dir.path(), options).expect("engine opens");
    const CONCURRENCY: usize = 100;
    let run = |machine: &str| -> Duration {
        let started = Instant::now();
        std::thread::scope(|scope| {
            for _ in 0..CONCURRENCY {
                scope.spawn(|| {
                    engine
                        .start_execution(machine, None, r#"{"n": 1}"#)
                        .expect("starts");
                });
            }
        });
        started.elapsed()
    };
    let mut group = c.benchmark_group("jsonata_machine_engine_100");
    group.sample_size(10);
    group.throughput(Throughput::Elements(10 * CONCURRENCY as u64));
    let mut rates = Vec::new();
    for (name, jsonata) in [("jsonpath", false), ("jsonata", true)] {
        engine
            .create_state_machine(name, &pass_choice_machine(jsonata).to_string(), None)
            .expect("creates");
        let rounds = 20;
        let elapsed: Duration = (0..rounds).map(|_| run(name)).sum();
        let rate = 10.0 * (rounds * CONCURRENCY) as f64 / elapsed.as_secs_f64();
        println!("FIGURE machine_engine_{name}_transitions_per_s: {rate:.0}");
        rates.push(rate);
        group.bench_function(name, |b| {
            b.iter_custom(|iters| (0..iters).map(|_| run(name)).sum())
        });
    }
    println!(
        "FIGURE machine_engine_jsonata_over_jsonpath: {:.2}",
        rates[1] / rates[0]
    );
    group.finish();
}

criterion_group!(
    benches,
    bench_pass,
    bench_machine_decide,
    bench_machine_engine
);
criterion_main!(benches);
