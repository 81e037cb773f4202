//! samples: one value of every type an event batch record holds, for the format tests
//! (`statelog-store`'s `formats`). Test-only: behind the `test-support` feature.
//!
//! Each sample fills every field, options with `Some`, so a change to any field's type or
//! position changes the sample's bytes. A new field makes the struct literal here fail to
//! compile; a new [`EventDetails`] variant gets its sample from [`EventDetails::samples`],
//! which the variant list generates. Either way the bytes no longer match the golden file of the
//! current version, and the test says to bump it.

use serde_json::json;

use super::*;

/// A type with one fixed, fully filled value.
pub trait Sample {
    /// The value.
    fn sample() -> Self;
}

impl<T: Sample> Sample for Box<T> {
    fn sample() -> Self {
        Box::new(T::sample())
    }
}

fn payload() -> Payload {
    Payload::new(json!({"k": [1, 2.5, "s", null, true, {"n": -3}]}))
}

fn text(what: &str) -> String {
    format!("sample-{what}")
}

impl Sample for ErrorCause {
    fn sample() -> Self {
        ErrorCause {
            error: Some(text("error")),
            cause: Some(text("cause")),
        }
    }
}

impl Sample for StateEntered {
    fn sample() -> Self {
        StateEntered {
            name: text("state").into(),
            input: payload(),
            input_truncated: true,
        }
    }
}

impl Sample for StateExited {
    fn sample() -> Self {
        StateExited {
            name: text("state").into(),
            output: payload(),
            output_truncated: true,
            assigned: Some(AssignedVariables {
                variables: [
                    (text("a"), text("{\"k\":[1,\"\u{1F600}\"]}")),
                    (text("b"), text("42")),
                ]
                .into_iter()
                .collect(),
                truncated: false,
            }),
        }
    }
}

impl Sample for ExecutionStarted {
    fn sample() -> Self {
        ExecutionStarted {
            input: payload(),
            input_truncated: true,
            role_arn: text("role"),
            state_machine_alias_arn: Some(text("alias")),
            state_machine_version_arn: Some(text("version")),
            execution_arn: text("execution"),
            state_machine_arn: text("machine"),
            input_text: Some(text("input-text")),
            map_run_arn: Some(text("map-run")),
        }
    }
}

impl Sample for Output {
    fn sample() -> Self {
        Output {
            output: payload(),
            output_truncated: true,
        }
    }
}

impl Sample for ExecutionRedriven {
    fn sample() -> Self {
        ExecutionRedriven { redrive_count: 3 }
    }
}

impl Sample for ActivityScheduled {
    fn sample() -> Self {
        ActivityScheduled {
            resource: text("activity"),
            input: json!({"in": 1}),
            input_truncated: true,
            timeout_in_seconds: Some(60),
            heartbeat_in_seconds: Some(10),
            task_token: Some(text("token")),
            task_list: Some(text("list")),
        }
    }
}

impl Sample for ActivityStarted {
    fn sample() -> Self {
        ActivityStarted {
            worker_name: Some(text("worker")),
        }
    }
}

impl Sample for EvaluationFailed {
    fn sample() -> Self {
        EvaluationFailed {
            error: Some(text("error")),
            cause: Some(text("cause")),
            location: Some(text("location")),
            state: text("state"),
        }
    }
}

impl Sample for LambdaFunctionScheduled {
    fn sample() -> Self {
        LambdaFunctionScheduled {
            resource: text("function"),
            input: json!({"in": 2}),
            input_truncated: true,
            timeout_in_seconds: Some(30),
            task_credentials_role_arn: Some(text("role")),
        }
    }
}

impl Sample for MapIteration {
    fn sample() -> Self {
        MapIteration {
            name: text("map"),
            index: 7,
        }
    }
}

impl Sample for MapRunStarted {
    fn sample() -> Self {
        MapRunStarted {
            map_run_arn: text("map-run"),
        }
    }
}

impl Sample for MapRunRedriven {
    fn sample() -> Self {
        MapRunRedriven {
            map_run_arn: text("map-run"),
            redrive_count: 2,
        }
    }
}

impl Sample for MapStateStarted {
    fn sample() -> Self {
        MapStateStarted { length: 5 }
    }
}

impl Sample for TaskScheduled {
    fn sample() -> Self {
        TaskScheduled {
            resource_type: text("type"),
            resource: text("resource"),
            region: text("region"),
            parameters: json!({"p": [true]}),
            timeout_in_seconds: Some(300),
            heartbeat_in_seconds: Some(20),
            task_credentials_role_arn: Some(text("role")),
            resource_arn: text("resource-arn"),
            task_token: Some(text("token")),
        }
    }
}

impl Sample for TaskResource {
    fn sample() -> Self {
        TaskResource {
            resource_type: text("type"),
            resource: text("resource"),
        }
    }
}

impl Sample for TaskError {
    fn sample() -> Self {
        TaskError {
            resource_type: text("type"),
            resource: text("resource"),
            error: Some(text("error")),
            cause: Some(text("cause")),
        }
    }
}

impl Sample for TaskOutput {
    fn sample() -> Self {
        TaskOutput {
            resource_type: text("type"),
            resource: text("resource"),
            output: json!({"o": "x"}),
            output_truncated: true,
        }
    }
}

/// Every [`TimerPurpose`], each variant once (`store::formats` checks that by name).
pub fn timer_purposes() -> Vec<TimerPurpose> {
    vec![
        TimerPurpose::Wait,
        TimerPurpose::RetryBackoff {
            error: text("retried"),
        },
        TimerPurpose::TaskTimeout,
        TimerPurpose::ExecutionTimeout,
    ]
}

/// One event of each [`EventDetails`] variant, in variant order, each arming a timer of the next
/// purpose in turn (so every purpose is written) except the last, which arms none.
pub fn events() -> Vec<HistoryEvent> {
    let purposes = timer_purposes();
    let details = EventDetails::samples();
    let last = details.len() - 1;
    details
        .into_iter()
        .enumerate()
        .map(|(index, details)| HistoryEvent {
            id: EventId(index as u32 + 1),
            previous_event_id: index as u32,
            timestamp_ms: 1_704_067_200_000 + index as u64,
            details,
            scope: vec![index as u32, 2],
            timer: (index != last).then(|| TimerArm {
                due_ms: 1_704_067_300_000 + index as u64,
                owner: vec![1, index as u32],
                purpose: purposes[index % purposes.len()].clone(),
            }),
        })
        .collect()
}
