//! Property: for random definitions (chains of Pass, Task, Parallel-of-Tasks and Map-of-Task
//! states) and a random failure point (one task fails on its first call), failing then
//! redriving gives the same final output as an execution that never failed.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use parking_lot::Mutex;
use proptest::prelude::*;
use serde_json::{json, Value};
use statelog::clock::ManualClock;
use statelog::engine::{Engine, EngineOptions, ExecutionStatus, TaskError};
use statelog::store::{Log, MemoryLog};

#[derive(Debug, Clone)]
enum Step {
    Pass,
    Task,
    Parallel(usize),
    Map(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        Just(Step::Pass),
        Just(Step::Task),
        (2usize..=3).prop_map(Step::Parallel),
        (2usize..=4).prop_map(Step::Map),
    ]
}

fn resource(name: &str) -> String {
    format!("arn:aws:lambda:us-east-1:000000000000:function:{name}")
}

/// The definition, and the task keys (resource name, or `name#item`) it calls.
fn definition(steps: &[Step]) -> (String, Vec<String>) {
    let mut states = serde_json::Map::new();
    let mut keys = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let name = format!("S{i}");
        let mut state = match step {
            Step::Pass => {
                json!({"Type": "Pass", "Result": {"pass": i}, "ResultPath": format!("$.p{i}")})
            }
            Step::Task => {
                keys.push(format!("t{i}"));
                json!({"Type": "Task", "Resource": resource(&format!("t{i}")), "ResultPath": format!("$.t{i}")})
            }
            Step::Parallel(n) => {
                let branches: Vec<Value> = (0..*n)
                    .map(|b| {
                        keys.push(format!("t{i}b{b}"));
                        json!({"StartAt": "B", "States": {"B": {"Type": "Task",
                            "Resource": resource(&format!("t{i}b{b}")), "End": true}}})
                    })
                    .collect();
                json!({"Type": "Parallel", "Branches": branches, "ResultPath": format!("$.par{i}")})
            }
            Step::Map(n) => {
                for item in 0..*n {
                    keys.push(format!("m{i}#{item}"));
                }
                json!({"Type": "Map", "ItemsPath": format!("$.items{i}"),
                       "ItemProcessor": {"StartAt": "W", "States": {"W": {"Type": "Task",
                           "Resource": resource(&format!("m{i}")), "End": true}}},
                       "ResultPath": format!("$.map{i}")})
            }
        };
        let object = state.as_object_mut().expect("object");
        if i + 1 == steps.len() {
            object.insert("End".into(), json!(true));
        } else {
            object.insert("Next".into(), json!(format!("S{}", i + 1)));
        }
        states.insert(name, state);
    }
    let definition = json!({"StartAt": "S0", "States": states}).to_string();
    (definition, keys)
}

fn input(steps: &[Step]) -> Value {
    let mut input = serde_json::Map::new();
    for (i, step) in steps.iter().enumerate() {
        if let Step::Map(n) = step {
            input.insert(format!("items{i}"), json!((0..*n).collect::<Vec<_>>()));
        }
    }
    Value::Object(input)
}

/// Runs the definition; tasks whose key is in `fail_once` fail on their first call. Redrives
/// until success (at most 3 times); returns the output and the redrive count.
fn run(steps: &[Step], fail_once: HashSet<String>) -> (Value, u32) {
    let log: Arc<dyn Log> = Arc::new(MemoryLog::new());
    let options = EngineOptions {
        clock: Arc::new(ManualClock::new(1_704_067_200_000)),
        background_timers: false,
        entropy_seed: Some(11),
        worker_threads: 1,
        ..EngineOptions::default()
    };
    let engine = Engine::open_with_log(log, options).expect("opens");
    let (definition, keys) = definition(steps);
    engine
        .create_state_machine("m", &definition, None)
        .expect("creates");
    let calls: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
    let fail_once = Arc::new(fail_once);
    let mut resources: Vec<String> = keys
        .iter()
        .map(|k| k.split('#').next().unwrap_or(k).to_string())
        .collect();
    resources.dedup();
    for name in resources {
        let calls = calls.clone();
        let fail_once = fail_once.clone();
        let is_map = name.starts_with('m');
        engine.register_integration(&resource(&name), move |input: Value, _c: Value| {
            let key = if is_map {
                format!("{name}#{input}")
            } else {
                name.clone()
            };
            let count = {
                let mut calls = calls.lock();
                let count = calls.entry(key.clone()).or_default();
                *count += 1;
                *count
            };
            let fail = count == 1 && fail_once.contains(&key);
            let value = json!({"key": key, "input": input});
            async move {
                if fail {
                    Err(TaskError::new("Boom", "first call fails"))
                } else {
                    Ok(value)
                }
            }
        });
    }
    let arn = engine
        .start_execution("m", Some("e"), &input(steps).to_string())
        .expect("starts")
        .execution_arn;
    let mut redrives = 0;
    loop {
        engine.wait_idle();
        let d = engine.describe_execution(&arn).expect("describes");
        match d.status {
            ExecutionStatus::Succeeded => return (d.output.expect("output"), redrives),
            ExecutionStatus::Failed if redrives < 3 => {
                engine.redrive_execution(&arn, None).expect("redrives");
                redrives += 1;
            }
            other => panic!("unexpected {other:?}: {d:?}"),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn redrive_then_success_equals_never_failing(
        steps in proptest::collection::vec(step(), 1..6),
        pick in any::<prop::sample::Index>(),
    ) {
        let (_, keys) = definition(&steps);
        let (clean, clean_redrives) = run(&steps, HashSet::new());
        prop_assert_eq!(clean_redrives, 0);
        if keys.is_empty() {
            return Ok(());
        }
        let failing = keys[pick.index(keys.len())].clone();
        let (redriven, redrives) = run(&steps, HashSet::from([failing.clone()]));
        prop_assert_eq!(redrives, 1, "{} fails once", failing);
        prop_assert_eq!(redriven, clean);
    }
}
