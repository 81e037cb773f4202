//! Benchmark: one typical Pass state through the whole data-flow pipeline, as the interpreter
//! runs it on every transition: InputPath -> Parameters (five `.$` fields, one of them an
//! intrinsic call) -> ResultPath -> OutputPath -> payload size check, on a ~1 KiB input.
//! Everything is compiled once outside the measured loop. Target: < 5 µs per state.

use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion};
use serde_json::{json, Value};
use statelog::paths::pipeline::{
    check_payload_size, json_size_bytes, process_input_cow, process_output, process_parameters,
    process_result,
};
use statelog::paths::{InputOutputPath, Path, ReferencePath, ResultPathField, Template};
use statelog_rng::Rng;

fn input_1kib() -> Value {
    let items: Vec<Value> = (0..12)
        .map(|i| json!({"sku": format!("SKU-{i:04}"), "quantity": i + 1, "price": 9.99 + f64::from(i)}))
        .collect();
    let input = json!({
        "order": {
            "id": "7f9c2ba4-e88f-4d1c-8c2e-3b1f4c1a9d20",
            "customer": {"id": "c-1029", "name": "Ada Lovelace", "email": "ada@example.com",
                         "address": {"street": "12 Analytical Way", "city": "London", "zip": "N1 9GU"}},
            "items": items,
            "currency": "EUR",
            "notes": "Leave at the door. Ring twice. Fragile: contains glassware and a teapot."
        },
        "meta": {"source": "web", "attempt": 1, "tags": ["priority", "gift", "express"]}
    });
    input
}

fn bench_pass_state(c: &mut Criterion) {
    let input = input_1kib();
    let size_bytes = json_size_bytes(&input);
    assert!(
        (900..=1300).contains(&size_bytes),
        "input is {size_bytes} bytes, wanted about 1 KiB"
    );
    let context = json!({
        "Execution": {"Id": "arn:aws:states:us-east-1:1:execution:sm:e", "Name": "e", "Input": {}},
        "State": {"Name": "Prepare", "EnteredTime": "2026-11-29T20:00:00Z"},
        "StateMachine": {"Id": "arn:aws:states:us-east-1:1:stateMachine:sm", "Name": "sm"}
    });
    let input_path = InputOutputPath::Select(Path::parse("$").expect("valid"));
    let output_path = InputOutputPath::Select(Path::parse("$").expect("valid"));
    let result_path =
        ResultPathField::Reference(ReferencePath::parse("$.prepared").expect("valid"));
    let parameters = Template::compile(&json!({
        "orderId.$": "$.order.id",
        "customer.$": "$.order.customer.name",
        "city.$": "$.order.customer.address.city",
        "firstSku.$": "$.order.items[0].sku",
        "label.$": "States.Format('Order {} for {}', $.order.id, $.order.customer.email)",
        "static": {"carrier": "post", "priority": true}
    }))
    .expect("valid template");
    let mut entropy = Rng::new(1);
    // The interpreter owns the state's raw input (it arrives as the previous state's output),
    // so the pipeline consumes it; the benchmark makes each owned copy outside the timing.
    let mut run_state = |raw: Value| -> Value {
        let params = {
            let effective = process_input_cow(&raw, &input_path, &context).expect("input");
            process_parameters(&effective, Some(&parameters), &context, &mut entropy)
                .expect("parameters")
        };
        let combined = process_result(raw, params, None, &result_path, &context, &mut entropy)
            .expect("result");
        let output = process_output(combined, &output_path, &context).expect("output");
        check_payload_size(&output, "Prepare").expect("size");
        output
    };

    // On a shared, loaded machine wall time overstates the cost; this reports CPU time.
    if let Some(iterations) = std::env::var("PATHS_BENCH_CPU_ITERS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        const BATCH: u64 = 10_000;
        let mut cpu_ticks = 0u64;
        let mut done = 0u64;
        while done < iterations {
            let inputs: Vec<Value> = (0..BATCH).map(|_| input.clone()).collect();
            let mut outputs = Vec::with_capacity(inputs.len());
            let before = thread_cpu_ticks();
            for raw in inputs {
                outputs.push(run_state(black_box(raw)));
            }
            let after = thread_cpu_ticks();
            if let (Some(before), Some(after)) = (before, after) {
                cpu_ticks += after - before;
            }
            drop(black_box(outputs));
            done += BATCH;
        }
        // /proc reports clock ticks of 10 ms (USER_HZ = 100 on Linux).
        let cpu_ns = cpu_ticks as f64 * 10_000_000.0;
        println!(
            "paths/pass_state_pipeline_1kib: {:.3} µs CPU per state over {done} states",
            cpu_ns / done as f64 / 1000.0
        );
    }

    c.bench_function("paths/pass_state_pipeline_1kib", |b| {
        b.iter_batched(|| input.clone(), &mut run_state, BatchSize::SmallInput)
    });

    // The parts, to see where the time goes.
    let mut entropy = Rng::new(2);
    c.bench_function("paths/part_parameters_1kib", |b| {
        b.iter(|| {
            parameters
                .evaluate(black_box(&input), &context, &mut entropy)
                .expect("parameters")
        })
    });
    c.bench_function("paths/part_clone_input_1kib", |b| {
        b.iter(|| black_box(&input).clone())
    });
}

/// User + system CPU time of this thread, in clock ticks, from `/proc/thread-self/stat`.
fn thread_cpu_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// The payload size check alone: counting compact JSON bytes without building the text,
/// against serializing into a byte counter.
fn bench_payload_size(c: &mut Criterion) {
    let input = input_1kib();
    c.bench_function("paths/json_size_bytes_1kib", |b| {
        b.iter(|| json_size_bytes(black_box(&input)))
    });
    c.bench_function("paths/serde_json_to_vec_len_1kib", |b| {
        b.iter(|| serde_json::to_vec(black_box(&input)).map(|v| v.len()))
    });
}

criterion_group!(benches, bench_pass_state, bench_payload_size);
criterion_main!(benches);
