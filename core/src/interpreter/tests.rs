//! Unit tests of the interpreter's internals: the effect difference between two states and the
//! `previousEventId` rule of the fold. Whole executions are tested in `tests/interpreter_*.rs`.

use serde_json::json;

use super::effects::difference;
use super::*;
use crate::history::{EventDetails, HistoryEvent, MapIteration, StateEntered, StateExited};

fn invoke(task_id: u32) -> Effect {
    Effect::InvokeTask(TaskInvocation {
        task_id: EventId(task_id),
        attempt: 0,
        state_name: "T".into(),
        resource: "arn:aws:states:::sns:publish".into(),
        input: json!({}),
        context: json!({}),
        heartbeat_seconds: None,
    })
}

fn timer(timer_id: u32, due_ms: u64) -> Effect {
    Effect::ArmTimer {
        timer_id: EventId(timer_id),
        due_ms,
        kind: TimerKind::Wait,
    }
}

#[test]
fn difference_reports_new_work_cancellations_and_the_close_once() {
    let before = vec![invoke(3), invoke(5), timer(7, 100)];
    let after = vec![invoke(5), timer(7, 100), timer(9, 200)];
    assert_eq!(
        difference(&before, after.clone(), None),
        vec![
            Effect::CancelTask {
                task_id: EventId(3)
            },
            timer(9, 200)
        ]
    );
    assert_eq!(
        difference(&before, after, Some(EventId(3))),
        vec![timer(9, 200)],
        "answered"
    );
    let closed = vec![Effect::Closed {
        status: ExecutionStatus::Succeeded,
    }];
    assert_eq!(
        difference(&closed, closed.clone(), None),
        vec![],
        "a close is reported once"
    );
}

fn event(id: u32, previous: u32, details: EventDetails) -> HistoryEvent {
    HistoryEvent {
        id: EventId(id),
        previous_event_id: previous,
        timestamp_ms: 0,
        details,
        scope: vec![],
        timer: None,
    }
}

#[test]
fn the_cursor_skips_the_events_aws_does_not_link_to() {
    let mut state = ExecutionState::new();
    let started = crate::history::ExecutionStarted {
        input: json!([1]).into(),
        input_truncated: false,
        role_arn: "r".into(),
        state_machine_alias_arn: None,
        state_machine_version_arn: None,
        execution_arn: "arn:aws:states:us-east-1:0:execution:sm:e".into(),
        state_machine_arn: "arn:aws:states:us-east-1:0:stateMachine:sm".into(),
        input_text: None,
        map_run_arn: None,
    };
    apply(
        &mut state,
        &event(1, 0, EventDetails::ExecutionStarted(Box::new(started))),
    )
    .expect("started");
    let entered = |name: &str| StateEntered {
        name: name.into(),
        input: json!([1]).into(),
        input_truncated: false,
    };
    assert_eq!(
        state.previous_event_id_for(&EventDetails::MapStateEntered(entered("M"))),
        0
    );
    apply(
        &mut state,
        &event(2, 0, EventDetails::MapStateEntered(entered("M"))),
    )
    .expect("entered");
    let started = EventDetails::MapStateStarted(crate::history::MapStateStarted { length: 2 });
    apply(&mut state, &event(3, 2, started)).expect("map started");
    let iteration = |index| MapIteration {
        name: "M".into(),
        index,
    };
    apply(
        &mut state,
        &event(4, 3, EventDetails::MapIterationStarted(iteration(0))),
    )
    .expect("it");
    let mut inner = event(5, 4, EventDetails::PassStateEntered(entered("P")));
    inner.scope = vec![0];
    apply(&mut state, &inner).expect("inner entered");
    let exited = StateExited {
        name: "P".into(),
        output: json!(1).into(),
        output_truncated: false,
        assigned: None,
    };
    let mut inner = event(6, 5, EventDetails::PassStateExited(exited));
    inner.scope = vec![0];
    apply(&mut state, &inner).expect("inner exited");
    apply(
        &mut state,
        &event(7, 6, EventDetails::MapIterationSucceeded(iteration(0))),
    )
    .expect("ok");
    // The next iteration links to the iteration's last event; the Map's end would link to 7.
    assert_eq!(
        state.previous_event_id_for(&EventDetails::MapIterationStarted(iteration(1))),
        6
    );
    assert_eq!(
        state.previous_event_id_for(&EventDetails::MapStateSucceeded),
        7
    );
    assert_eq!(
        state.previous_event_id_for(&EventDetails::ExecutionAborted(Default::default())),
        0,
        "a stop links to nothing"
    );
    // An event that does not follow is refused.
    assert!(apply(&mut state, &event(9, 7, EventDetails::MapStateSucceeded)).is_err());
}

/// Deterministic entropy for decisions in these tests.
struct Zero;

impl crate::paths::Entropy for Zero {
    fn next_u64(&mut self) -> u64 {
        0
    }
}

#[test]
fn values_taken_over_keep_their_key_order_and_replay_to_the_same_state() {
    // `Reorder` outputs what serde_json calls equal to its input, with the keys in another
    // order: `apply` must copy it (not take the input over), and the order must show.
    let definition = crate::asl::parse_definition(
        &json!({
            "StartAt": "Reorder",
            "States": {
                "Reorder": {"Type": "Pass", "Parameters": {"b.$": "$.b", "a.$": "$.a"}, "Next": "Keep"},
                "Keep": {"Type": "Pass", "Next": "Pick"},
                "Pick": {"Type": "Choice", "Choices": [
                    {"Variable": "$.a", "NumericEquals": 1, "Next": "Discard"}
                ]},
                "Discard": {"Type": "Pass", "Result": {"x": 1}, "ResultPath": null, "End": true}
            }
        })
        .to_string(),
        &crate::asl::ValidationOptions::default(),
    )
    .expect("valid definition");
    let request = StartRequest {
        input: json!({"a": 1, "b": 2}),
        input_text: None,
        execution_arn: "arn:aws:states:us-east-1:0:execution:sm:e".into(),
        state_machine_arn: "arn:aws:states:us-east-1:0:stateMachine:sm".into(),
        role_arn: "r".into(),
        through: None,
        map_run_arn: None,
    };
    let decision = decide(
        &definition,
        &ExecutionState::new(),
        Trigger::Start(request),
        0,
        &Options::default(),
        &mut Zero,
    )
    .expect("decides");
    let texts: Vec<(String, String)> = decision
        .events
        .iter()
        .filter_map(|e| {
            let (name, value) = match &e.details {
                EventDetails::PassStateEntered(d) | EventDetails::ChoiceStateEntered(d) => {
                    (format!("{} entered", d.name), &d.input)
                }
                EventDetails::PassStateExited(d) | EventDetails::ChoiceStateExited(d) => {
                    (format!("{} exited", d.name), &d.output)
                }
                EventDetails::ExecutionSucceeded(d) => ("succeeded".to_string(), &d.output),
                _ => return None,
            };
            Some((name, serde_json::to_string(&**value).expect("serializes")))
        })
        .collect();
    let expected = [
        ("Reorder entered", r#"{"a":1,"b":2}"#),
        ("Reorder exited", r#"{"b":2,"a":1}"#),
        ("Keep entered", r#"{"b":2,"a":1}"#),
        ("Keep exited", r#"{"b":2,"a":1}"#),
        ("Pick entered", r#"{"b":2,"a":1}"#),
        ("Pick exited", r#"{"b":2,"a":1}"#),
        ("Discard entered", r#"{"b":2,"a":1}"#),
        ("Discard exited", r#"{"b":2,"a":1}"#),
        ("succeeded", r#"{"b":2,"a":1}"#),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect();
    assert_eq!(texts, expected);
    let replayed = ExecutionState::replay(&decision.events).expect("replays");
    assert_eq!(replayed, decision.next_state);
    assert_eq!(
        serde_json::to_string(replayed.output().expect("succeeded")).expect("serializes"),
        r#"{"b":2,"a":1}"#
    );
}

#[test]
fn passing_states_share_one_payload_and_a_thread_reuses_its_events_vector() {
    let definition = crate::asl::parse_definition(
        &json!({
            "StartAt": "A",
            "States": {
                "A": {"Type": "Pass", "Next": "B"},
                "B": {"Type": "Choice", "Choices": [
                    {"Variable": "$.n", "NumericGreaterThan": 5, "Next": "A"}
                ], "Default": "C"},
                "C": {"Type": "Pass", "ResultPath": null, "Result": 7, "End": true}
            }
        })
        .to_string(),
        &crate::asl::ValidationOptions::default(),
    )
    .expect("valid definition");
    let start = || {
        let request = StartRequest {
            input: json!({"n": 1}),
            input_text: None,
            execution_arn: "arn:aws:states:us-east-1:0:execution:sm:e".into(),
            state_machine_arn: "arn:aws:states:us-east-1:0:stateMachine:sm".into(),
            role_arn: "r".into(),
            through: None,
            map_run_arn: None,
        };
        decide(
            &definition,
            &ExecutionState::new(),
            Trigger::Start(request),
            0,
            &Options::default(),
            &mut Zero,
        )
        .expect("decides")
    };
    let decision = start();
    let EventDetails::ExecutionStarted(started) = &decision.events[0].details else {
        panic!("the first event starts the execution");
    };
    let input = crate::history::Payload::clone(&started.input);
    let mut shared = 0;
    for event in &decision.events[1..] {
        let payload = match &event.details {
            EventDetails::PassStateEntered(d) | EventDetails::ChoiceStateEntered(d) => &d.input,
            EventDetails::PassStateExited(d) | EventDetails::ChoiceStateExited(d) => &d.output,
            EventDetails::ExecutionSucceeded(d) => &d.output,
            other => panic!("unexpected {}", other.type_name()),
        };
        assert!(
            std::sync::Arc::ptr_eq(payload, &input),
            "{} copied its payload",
            event.details.type_name()
        );
        shared += 1;
    }
    assert_eq!(shared, 7, "3 states entered and exited, then the success");
    assert_eq!(
        ExecutionState::replay(&decision.events).expect("replays"),
        decision.next_state
    );
    // The next decision on this thread reuses the vector handed back; one too big is not kept.
    let reused = decision.events.as_ptr();
    recycle_events(decision.events);
    let again = start();
    assert_eq!(again.events.as_ptr(), reused);
    recycle_events(again.events);
    recycle_events(Vec::with_capacity(100_000));
    assert_eq!(start().events.as_ptr(), reused);
}

/// A Distributed Map's decisions: its entry records `MapStateStarted` and `MapRunStarted` and
/// asks for the run (the reserved resource, its plan readable from the state); the run's
/// answer records `MapRunSucceeded` then the Map's result (its exit linked to its
/// `MapRunStarted` when it is not the first state), a failure `MapRunFailed` then the Catch, a
/// stop `MapRunAborted`; every decision replays to its state.
#[test]
fn a_distributed_map_records_its_map_run_and_takes_its_answer() {
    let definition = crate::asl::parse_definition(
        &json!({
            "StartAt": "Prepare",
            "States": {
                "Prepare": {"Type": "Pass", "Next": "M"},
                "M": {"Type": "Map", "ItemsPath": "$.items", "Label": "L",
                      "ItemSelector": {"v.$": "$$.Map.Item.Value"},
                      "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Caught"}],
                      "ItemProcessor": {
                          "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "EXPRESS"},
                          "StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}},
                      "End": true},
                "Caught": {"Type": "Pass", "End": true}
            }
        })
        .to_string(),
        &crate::asl::ValidationOptions::default(),
    )
    .expect("valid definition");
    let request = StartRequest {
        input: json!({"items": [1, 2]}),
        input_text: None,
        execution_arn: "arn:aws:states:us-east-1:000000000000:execution:sm:e".into(),
        state_machine_arn: "arn:aws:states:us-east-1:000000000000:stateMachine:sm".into(),
        role_arn: "r".into(),
        through: None,
        map_run_arn: None,
    };
    let started = decide(
        &definition,
        &ExecutionState::new(),
        Trigger::Start(request),
        0,
        &Options::default(),
        &mut Zero,
    )
    .expect("decides");
    let types: Vec<&str> = started
        .events
        .iter()
        .map(|e| e.details.type_name())
        .collect();
    assert_eq!(
        types,
        [
            "ExecutionStarted",
            "PassStateEntered",
            "PassStateExited",
            "MapStateEntered",
            "MapStateStarted",
            "MapRunStarted"
        ]
    );
    let map_run_started = started.events.last().expect("an event");
    let EventDetails::MapRunStarted(run) = &map_run_started.details else {
        panic!("MapRunStarted")
    };
    assert_eq!(
        run.map_run_arn,
        "arn:aws:states:us-east-1:000000000000:mapRun:sm/L:00000000-0000-4000-8000-000000000000"
    );
    let task_id = map_run_started.id;
    let invocation = started
        .effects
        .iter()
        .find_map(|e| match e {
            Effect::InvokeTask(invocation) => Some(invocation.clone()),
            _ => None,
        })
        .expect("the run is asked for");
    assert_eq!(invocation.resource, MAP_RUN_RESOURCE);
    assert_eq!(invocation.task_id, task_id);
    assert_eq!(
        ExecutionState::replay(&started.events).expect("replays"),
        started.next_state
    );
    let plan = map_run_plan(&definition, &started.next_state, task_id).expect("a plan");
    assert_eq!(plan.items, vec![json!(1), json!(2)]);
    assert_eq!(plan.label, "L");
    assert_eq!(plan.item_input(1).expect("selected"), json!({"v": 2}));

    // The run's answer.
    let succeeded = decide(
        &definition,
        &started.next_state,
        Trigger::TaskSucceeded {
            task_id,
            output: json!([{"v": 1}, {"v": 2}]),
        },
        0,
        &Options::default(),
        &mut Zero,
    )
    .expect("decides");
    let links: Vec<(&str, u32)> = succeeded
        .events
        .iter()
        .map(|e| (e.details.type_name(), e.previous_event_id))
        .collect();
    let map_run_succeeded = task_id.0 + 1;
    assert_eq!(
        links,
        [
            ("MapRunSucceeded", task_id.0),
            ("MapStateSucceeded", map_run_succeeded),
            ("MapStateExited", task_id.0),
            ("ExecutionSucceeded", map_run_succeeded + 2)
        ]
    );
    assert_eq!(
        succeeded.next_state.output(),
        Some(&json!([{"v": 1}, {"v": 2}]))
    );

    // A failed run: MapRunFailed, MapStateFailed, then the Catch.
    let failed = decide(
        &definition,
        &started.next_state,
        Trigger::TaskFailed {
            task_id,
            error: "States.ExceedToleratedFailureThreshold".into(),
            cause: "over".into(),
        },
        0,
        &Options::default(),
        &mut Zero,
    )
    .expect("decides");
    let types: Vec<&str> = failed
        .events
        .iter()
        .map(|e| e.details.type_name())
        .collect();
    assert_eq!(
        types,
        [
            "MapRunFailed",
            "MapStateFailed",
            "MapStateExited",
            "PassStateEntered",
            "PassStateExited",
            "ExecutionSucceeded"
        ]
    );

    // A stop aborts the run first.
    let stopped = decide(
        &definition,
        &started.next_state,
        Trigger::Stop {
            error: None,
            cause: None,
        },
        0,
        &Options::default(),
        &mut Zero,
    )
    .expect("decides");
    let types: Vec<&str> = stopped
        .events
        .iter()
        .map(|e| e.details.type_name())
        .collect();
    assert_eq!(types, ["MapRunAborted", "ExecutionAborted"]);
    assert!(stopped.effects.contains(&Effect::CancelTask { task_id }));
    for decision in [&succeeded, &failed, &stopped] {
        let mut events = started.events.clone();
        events.extend(decision.events.iter().cloned());
        assert_eq!(
            ExecutionState::replay(&events).expect("replays"),
            decision.next_state
        );
    }
}
