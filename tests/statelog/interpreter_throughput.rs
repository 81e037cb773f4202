//! Throughput probe of the pure interpreter (no WAL): 10,000 executions of a 10-state Pass chain
//! through `decide_owned`, adopting `next_state` as the engine does. Ignored by default (a
//! measurement, not a check; it asserts no timing). Run it with
//! `cargo test --release --test statelog interpreter_throughput:: -- --ignored --nocapture`.

use serde_json::json;
use statelog::asl::{parse_definition, ValidationOptions};
use statelog::interpreter::{
    decide_owned, ExecutionState, ExecutionStatus, Options, StartRequest, Trigger,
};
use statelog_rng::Rng;

#[test]
#[ignore = "a measurement; run with --ignored --nocapture"]
fn pass_chain_transitions_per_second() {
    let mut states = serde_json::Map::new();
    for i in 0..10 {
        let mut state = json!({"Type": "Pass"});
        if i < 9 {
            state["Next"] = json!(format!("S{}", i + 1));
        } else {
            state["End"] = json!(true);
        }
        states.insert(format!("S{i}"), state);
    }
    let text = json!({"StartAt": "S0", "States": states}).to_string();
    let def = parse_definition(&text, &ValidationOptions::default()).expect("valid definition");
    let executions = 10_000;
    let started = std::time::Instant::now();
    let mut events = 0;
    for i in 0..executions {
        let request = StartRequest {
            input: json!({"i": i, "payload": "some text here"}),
            input_text: None,
            execution_arn: format!("arn:aws:states:us-east-1:000000000000:execution:sm:{i}"),
            state_machine_arn: "arn:aws:states:us-east-1:000000000000:stateMachine:sm".into(),
            role_arn: "arn:aws:iam::000000000000:role/r".into(),
            through: None,
            map_run_arn: None,
        };
        let decision = decide_owned(
            &def,
            ExecutionState::new(),
            Trigger::Start(request),
            1_700_000_000_000,
            &Options::default(),
            &mut Rng::new(1),
        )
        .expect("decide");
        assert_eq!(decision.next_state.status(), ExecutionStatus::Succeeded);
        events += decision.events.len();
    }
    let elapsed = started.elapsed();
    println!(
        "{executions} executions x 10 states, {events} events in {elapsed:?}: {:.0} transitions/s",
        (executions * 10) as f64 / elapsed.as_secs_f64()
    );
}
