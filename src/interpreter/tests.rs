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
        input: json!([1]),
        input_truncated: false,
        role_arn: "r".into(),
        state_machine_alias_arn: None,
        state_machine_version_arn: None,
        execution_arn: "arn:aws:states:us-east-1:0:execution:sm:e".into(),
        state_machine_arn: "arn:aws:states:us-east-1:0:stateMachine:sm".into(),
        input_text: None,
    };
    apply(
        &mut state,
        &event(1, 0, EventDetails::ExecutionStarted(started)),
    )
    .expect("started");
    let entered = |name: &str| StateEntered {
        name: name.into(),
        input: json!([1]),
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
        output: json!(1),
        output_truncated: false,
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
