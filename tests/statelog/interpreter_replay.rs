//! Determinism of the interpreter, by property: random walks through executions of a few rich
//! definitions (Parallel, Map with MaxConcurrency, retries with jitter, catches, waits, task
//! timeouts), with task answers, timer firings and stops in random order. After every decision,
//! folding the log from scratch must give the same state and the same pending effects; and
//! replaying the same triggers at the same times with the same entropy must give the very same
//! events.

use proptest::prelude::*;
use serde_json::{json, Value};
use statelog::asl::{parse_definition, StateMachine, ValidationOptions};
use statelog::history::{EventId, HistoryEvent};
use statelog::interpreter::{
    apply, decide, pending_effects, Effect, ExecutionState, Options, StartRequest, Trigger,
};
use statelog_rng::Rng;

fn task(extra: Value) -> Value {
    let mut state = json!({"Type": "Task", "Resource": "arn:aws:states:::sns:publish"});
    if let (Some(target), Some(extra)) = (state.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            target.insert(k.clone(), v.clone());
        }
    }
    state
}

fn definitions() -> Vec<StateMachine> {
    let retry = json!([{"ErrorEquals": ["Flaky"], "IntervalSeconds": 3, "MaxAttempts": 2, "JitterStrategy": "FULL"}]);
    let catch = json!([{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Caught"}]);
    let sources = [
        json!({"StartAt": "M", "States": {
            "M": {"Type": "Map", "MaxConcurrency": 2, "ItemsPath": "$.items", "ToleratedFailureCount": 1,
                  "ItemProcessor": {"StartAt": "T", "States": {
                      "T": task(json!({"Retry": retry, "TimeoutSeconds": 50, "End": true}))}},
                  "Retry": [{"ErrorEquals": ["States.ALL"], "MaxAttempts": 1}],
                  "Catch": catch, "Next": "Done"},
            "Caught": {"Type": "Pass", "End": true},
            "Done": {"Type": "Succeed"}}}),
        json!({"StartAt": "P", "States": {
            "P": {"Type": "Parallel", "Catch": catch, "Next": "W", "Branches": [
                {"StartAt": "A", "States": {"A": task(json!({"Retry": retry, "End": true}))}},
                {"StartAt": "B", "States": {
                    "B": {"Type": "Wait", "Seconds": 7, "Next": "B2"},
                    "B2": task(json!({"End": true}))}},
                {"StartAt": "C", "States": {"C": {"Type": "Pass", "Result": 3, "End": true}}}
            ]},
            "W": {"Type": "Wait", "Seconds": 2, "End": true},
            "Caught": {"Type": "Fail", "Error": "Caught"}}}),
        json!({"TimeoutSeconds": 100, "StartAt": "T1", "States": {
            "T1": task(json!({"Retry": retry, "Catch": catch, "TimeoutSeconds": 20,
                              "ResultPath": "$.t1", "Next": "Choose"})),
            "Choose": {"Type": "Choice", "Choices": [
                {"Variable": "$.error", "IsPresent": true, "Next": "Caught"}], "Default": "Nested"},
            "Nested": {"Type": "Map", "ItemsPath": "$.items", "End": true,
                "ItemProcessor": {"StartAt": "Inner", "States": {
                    "Inner": {"Type": "Parallel", "End": true, "Branches": [
                        {"StartAt": "X", "States": {"X": task(json!({"End": true}))}},
                        {"StartAt": "Y", "States": {"Y": {"Type": "Wait", "Seconds": 1, "End": true}}}
                    ]}}}},
            "Caught": {"Type": "Pass", "End": true}}}),
    ];
    sources
        .iter()
        .map(|s| {
            parse_definition(&s.to_string(), &ValidationOptions::default())
                .unwrap_or_else(|d| panic!("definition rejected: {d:?}"))
        })
        .collect()
}

/// One step of the outside world, chosen by the random walk.
#[derive(Debug, Clone)]
enum Action {
    Answer {
        pick: usize,
        fail: Option<&'static str>,
    },
    FireTimer {
        pick: usize,
    },
    Stop,
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        6 => (any::<usize>(), prop_oneof![Just(None), Just(Some("Flaky")), Just(Some("Fatal"))])
            .prop_map(|(pick, fail)| Action::Answer { pick, fail }),
        4 => any::<usize>().prop_map(|pick| Action::FireTimer { pick }),
        1 => Just(Action::Stop),
    ]
}

struct Walk {
    state: ExecutionState,
    events: Vec<HistoryEvent>,
    log: Vec<(Trigger, u64)>,
}

fn run_walk(def: &StateMachine, items: usize, seed: u64, actions: &[Action]) -> Walk {
    let options = Options::default();
    let mut entropy = Rng::new(seed | 1);
    let mut walk = Walk {
        state: ExecutionState::new(),
        events: Vec::new(),
        log: Vec::new(),
    };
    let mut now_ms = 1_000_000;
    let mut tasks: Vec<EventId> = Vec::new();
    let mut timers: Vec<(u64, EventId)> = Vec::new();
    let start = Trigger::Start(StartRequest {
        input: json!({"items": (0..items).collect::<Vec<_>>()}),
        input_text: None,
        execution_arn: "arn:aws:states:us-east-1:000000000000:execution:sm:e".into(),
        state_machine_arn: "arn:aws:states:us-east-1:000000000000:stateMachine:sm".into(),
        role_arn: "arn:aws:iam::000000000000:role/r".into(),
        through: None,
        map_run_arn: None,
    });
    let mut next = Some(start);
    let mut actions = actions.iter();
    while let Some(trigger) = next.take() {
        walk.log.push((trigger.clone(), now_ms));
        let decision =
            decide(def, &walk.state, trigger, now_ms, &options, &mut entropy).expect("decide");
        for event in &decision.events {
            apply(&mut walk.state, event).expect("apply");
        }
        walk.events.extend(decision.events);
        for effect in decision.effects {
            match effect {
                Effect::InvokeTask(t) => tasks.push(t.task_id),
                Effect::CancelTask { task_id } => tasks.retain(|t| *t != task_id),
                Effect::ArmTimer {
                    timer_id, due_ms, ..
                } => timers.push((due_ms, timer_id)),
                Effect::Closed { .. } => {}
            }
        }
        let replayed = ExecutionState::replay(&walk.events).expect("replay");
        assert_eq!(
            replayed,
            walk.state,
            "replay diverged after {} events",
            walk.events.len()
        );
        assert_eq!(pending_effects(&replayed), pending_effects(&walk.state));
        if walk.state.status().is_closed() {
            break;
        }
        // Choose the next trigger: the scripted action when it applies, else any progress.
        let action = actions.next().cloned().unwrap_or(Action::Answer {
            pick: 0,
            fail: None,
        });
        next = match action {
            Action::Stop => Some(Trigger::Stop {
                error: Some("Stopped".into()),
                cause: None,
            }),
            Action::Answer { pick, fail } if !tasks.is_empty() => {
                let task_id = tasks.remove(pick % tasks.len());
                Some(match fail {
                    None => Trigger::TaskSucceeded {
                        task_id,
                        output: json!({"ok": task_id.0}),
                    },
                    Some(error) => Trigger::TaskFailed {
                        task_id,
                        error: error.into(),
                        cause: "c".into(),
                    },
                })
            }
            _ if !timers.is_empty() => {
                // One of the two earliest timers: out of order, yet mostly not the far-off
                // execution timeout.
                timers.sort();
                let pick = match action {
                    Action::FireTimer { pick } => pick % timers.len().min(2),
                    _ => 0,
                };
                let (due_ms, timer_id) = timers.remove(pick);
                now_ms = now_ms.max(due_ms);
                Some(Trigger::TimerFired { timer_id })
            }
            _ => {
                let task_id = tasks
                    .pop()
                    .expect("an open execution waits on a task or a timer");
                Some(Trigger::TaskSucceeded {
                    task_id,
                    output: json!(null),
                })
            }
        };
    }
    walk
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn replay_reproduces_state_and_decisions_are_deterministic(
        which in 0usize..3,
        items in 0usize..5,
        seed in any::<u64>(),
        actions in proptest::collection::vec(action(), 0..60),
    ) {
        let defs = definitions();
        let def = &defs[which];
        let first = run_walk(def, items, seed, &actions);
        // The same triggers at the same times with the same entropy give the same events.
        let options = Options::default();
        let mut entropy = Rng::new(seed | 1);
        let mut state = ExecutionState::new();
        let mut events = Vec::new();
        for (trigger, now_ms) in &first.log {
            let decision = decide(def, &state, trigger.clone(), *now_ms, &options, &mut entropy)
                .expect("decide");
            for event in &decision.events {
                apply(&mut state, event).expect("apply");
            }
            events.extend(decision.events);
        }
        prop_assert_eq!(&events, &first.events);
        prop_assert_eq!(&state, &first.state);
        statelog::history::check_sequence(0, &events).expect("dense ids");
    }
}

/// How a recorded history gets damaged before it is folded again.
#[derive(Debug, Clone)]
enum Damage {
    Drop(usize),
    Duplicate(usize),
    Swap(usize, usize),
    Rescope(usize, Vec<u32>),
    Renumber(usize, u32),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        any::<usize>().prop_map(Damage::Drop),
        any::<usize>().prop_map(Damage::Duplicate),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Damage::Swap(a, b)),
        (any::<usize>(), proptest::collection::vec(0u32..4, 0..3))
            .prop_map(|(i, scope)| Damage::Rescope(i, scope)),
        (any::<usize>(), any::<u32>()).prop_map(|(i, id)| Damage::Renumber(i, id)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// A damaged or foreign history is a typed error (or folds to some state), never a panic;
    /// and deciding on whatever state it folds to does not panic either.
    #[test]
    fn damaged_histories_never_panic(
        which in 0usize..3,
        items in 0usize..4,
        seed in any::<u64>(),
        actions in proptest::collection::vec(action(), 0..30),
        damages in proptest::collection::vec(damage(), 1..4),
    ) {
        let defs = definitions();
        let def = &defs[which];
        let mut events = run_walk(def, items, seed, &actions).events;
        for damage in damages {
            let n = events.len();
            if n == 0 {
                break;
            }
            match damage {
                Damage::Drop(i) => {
                    events.remove(i % n);
                }
                Damage::Duplicate(i) => {
                    let copy = events[i % n].clone();
                    events.insert(i % n, copy);
                }
                Damage::Swap(a, b) => events.swap(a % n, b % n),
                Damage::Rescope(i, scope) => events[i % n].scope = scope,
                Damage::Renumber(i, id) => events[i % n].id = EventId(id),
            }
        }
        let mut state = ExecutionState::new();
        for event in &events {
            if apply(&mut state, event).is_err() {
                return Ok(());
            }
        }
        let _ = pending_effects(&state);
        let mut entropy = Rng::new(seed | 1);
        let _ = decide(def, &state, Trigger::TimerFired { timer_id: EventId(3) }, 2_000_000,
            &Options::default(), &mut entropy);
    }
}
