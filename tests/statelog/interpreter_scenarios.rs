//! Scenario tests of the pure interpreter: a definition, an input and scripted task answers go
//! through `decide`/`apply` alone (no engine, no disk, no clock); each test checks the event
//! types, the output and the effects. A replay check runs after every decision: folding the
//! events from scratch must give the same state and the same pending effects (recovery).

use std::collections::BTreeMap;

use serde_json::{json, Value};
use statelog::asl::{parse_definition, StateMachine};
use statelog::history::{EventDetails, EventId, HistoryEvent, TimerPurpose};
use statelog::interpreter::{
    apply, decide, pending_effects, Decision, Effect, ExecutionState, ExecutionStatus, Options,
    StartRequest, TaskInvocation, TimerKind, Trigger,
};
use statelog_rng::Rng;

const T0_MS: u64 = 1_700_000_000_000;

/// How a scripted handler answers a task.
pub(crate) enum Answer {
    Succeed(Value),
    Fail(&'static str, &'static str),
    /// Leave the task unanswered (lets its timeout fire).
    Ignore,
}

/// Parsed as the engine parses (with its JSONata evaluator), so JSONata states run too.
fn definition(json: Value) -> StateMachine {
    parse_definition(&json.to_string(), &statelog::engine::validate::options())
        .unwrap_or_else(|d| panic!("definition rejected: {d:?}"))
}

pub(crate) struct Run {
    def: StateMachine,
    pub(crate) state: ExecutionState,
    pub(crate) events: Vec<HistoryEvent>,
    now_ms: u64,
    options: Options,
    entropy: Rng,
    timers: BTreeMap<EventId, (u64, TimerKind)>,
    tasks: Vec<TaskInvocation>,
    invocations: Vec<TaskInvocation>,
    cancelled: Vec<EventId>,
    closed: Option<ExecutionStatus>,
}

impl Run {
    pub(crate) fn new(def: Value) -> Self {
        Self::with_options(def, Options::default())
    }

    fn with_options(def: Value, options: Options) -> Self {
        Run {
            def: definition(def),
            state: ExecutionState::new(),
            events: Vec::new(),
            now_ms: T0_MS,
            options,
            entropy: Rng::new(0x9e37_79b9_7f4a_7c15),
            timers: BTreeMap::new(),
            tasks: Vec::new(),
            invocations: Vec::new(),
            cancelled: Vec::new(),
            closed: None,
        }
    }

    pub(crate) fn start(&mut self, input: Value) -> Decision {
        self.trigger(Trigger::Start(StartRequest {
            input,
            input_text: None,
            execution_arn: "arn:aws:states:us-east-1:000000000000:execution:sm:ex1".into(),
            state_machine_arn: "arn:aws:states:us-east-1:000000000000:stateMachine:sm".into(),
            role_arn: "arn:aws:iam::000000000000:role/r".into(),
            through: None,
            map_run_arn: None,
        }))
    }

    fn trigger(&mut self, trigger: Trigger) -> Decision {
        let decision = decide(
            &self.def,
            &self.state,
            trigger,
            self.now_ms,
            &self.options,
            &mut self.entropy,
        )
        .expect("decide");
        for event in &decision.events {
            apply(&mut self.state, event).expect("apply");
        }
        assert_eq!(
            decision.next_state, self.state,
            "next_state is the fold of the events"
        );
        self.events.extend(decision.events.iter().cloned());
        for effect in &decision.effects {
            match effect {
                Effect::InvokeTask(task) => {
                    self.tasks.push(task.clone());
                    self.invocations.push(task.clone());
                }
                Effect::CancelTask { task_id } => {
                    self.tasks.retain(|t| t.task_id != *task_id);
                    self.cancelled.push(*task_id);
                }
                Effect::ArmTimer {
                    timer_id,
                    due_ms,
                    kind,
                } => {
                    self.timers.insert(*timer_id, (*due_ms, *kind));
                }
                Effect::Closed { status } => self.closed = Some(*status),
            }
        }
        self.check_replay();
        decision
    }

    /// Replaying the log gives the same state and the same pending effects.
    fn check_replay(&self) {
        let replayed = ExecutionState::replay(&self.events).expect("replay");
        assert_eq!(replayed, self.state, "replay diverged");
        assert_eq!(pending_effects(&replayed), pending_effects(&self.state));
        statelog::history::check_sequence(0, &self.events).expect("dense ids");
    }

    /// Runs to the end: answers tasks with `script`, fires due timers in order.
    pub(crate) fn drive(&mut self, mut script: impl FnMut(&TaskInvocation) -> Answer) {
        for _ in 0..10_000 {
            if self.closed.is_some() {
                return;
            }
            if let Some(task) = self.tasks.first().cloned() {
                self.tasks.remove(0);
                match script(&task) {
                    Answer::Succeed(output) => {
                        self.trigger(Trigger::TaskSucceeded {
                            task_id: task.task_id,
                            output,
                        });
                    }
                    Answer::Fail(error, cause) => {
                        self.trigger(Trigger::TaskFailed {
                            task_id: task.task_id,
                            error: error.into(),
                            cause: cause.into(),
                        });
                    }
                    Answer::Ignore => {}
                }
                continue;
            }
            let Some((&timer_id, &(due_ms, _))) =
                self.timers.iter().min_by_key(|(_, (due, _))| *due)
            else {
                panic!("stuck: no task, no timer, not closed");
            };
            self.timers.remove(&timer_id);
            self.now_ms = self.now_ms.max(due_ms);
            self.trigger(Trigger::TimerFired { timer_id });
        }
        panic!("did not finish");
    }

    pub(crate) fn types(&self) -> Vec<&'static str> {
        self.events.iter().map(|e| e.details.type_name()).collect()
    }

    pub(crate) fn output(&self) -> Value {
        self.state.output().cloned().unwrap_or(Value::Null)
    }
}

pub(crate) fn no_tasks(_: &TaskInvocation) -> Answer {
    panic!("no task expected")
}

#[test]
fn pass_chain_runs_in_one_decision_with_aws_ids() {
    let mut run = Run::new(json!({
        "StartAt": "A",
        "States": {
            "A": {"Type": "Pass", "Result": {"x": 1}, "ResultPath": "$.a", "Next": "B"},
            "B": {"Type": "Pass", "Parameters": {"sum.$": "States.MathAdd($.a.x, 41)"}, "End": true}
        }
    }));
    let decision = run.start(json!({"in": true}));
    assert_eq!(
        run.types(),
        [
            "ExecutionStarted",
            "PassStateEntered",
            "PassStateExited",
            "PassStateEntered",
            "PassStateExited",
            "ExecutionSucceeded"
        ]
    );
    assert_eq!(decision.events.len(), 6, "the whole chain commits once");
    let previous: Vec<u32> = run.events.iter().map(|e| e.previous_event_id).collect();
    assert_eq!(
        previous,
        [0, 0, 2, 3, 4, 5],
        "first state-entered points at 0 as on AWS"
    );
    assert_eq!(run.output(), json!({"sum": 42}));
    assert_eq!(run.closed, Some(ExecutionStatus::Succeeded));
}

#[test]
fn choice_picks_a_branch_and_fail_records_error_and_cause() {
    let def = json!({
        "StartAt": "C",
        "States": {
            "C": {"Type": "Choice", "Choices": [
                {"Variable": "$.n", "NumericGreaterThan": 10, "Next": "Big"}
            ], "Default": "Small"},
            "Big": {"Type": "Succeed"},
            "Small": {"Type": "Fail", "Error": "TooSmall", "Cause": "n <= 10"}
        }
    });
    let mut big = Run::new(def.clone());
    big.start(json!({"n": 11}));
    assert_eq!(big.state.status(), ExecutionStatus::Succeeded);
    assert_eq!(big.types()[3], "SucceedStateEntered");
    let mut small = Run::new(def);
    small.start(json!({"n": 3}));
    assert_eq!(small.state.status(), ExecutionStatus::Failed);
    let failure = small.state.failure().expect("failure");
    assert_eq!(failure.error.as_deref(), Some("TooSmall"));
    assert_eq!(failure.cause.as_deref(), Some("n <= 10"));
    assert_eq!(small.types().last(), Some(&"ExecutionFailed"));
}

#[test]
fn wait_arms_a_timer_and_exits_when_it_fires() {
    let mut run = Run::new(json!({
        "StartAt": "W",
        "States": {
            "W": {"Type": "Wait", "SecondsPath": "$.s", "Next": "Done"},
            "Done": {"Type": "Pass", "End": true}
        }
    }));
    let decision = run.start(json!({"s": 30}));
    let armed: Vec<_> = decision
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::ArmTimer {
                due_ms,
                kind: TimerKind::Wait,
                ..
            } => Some(*due_ms),
            _ => None,
        })
        .collect();
    assert_eq!(armed, [T0_MS + 30_000]);
    assert_eq!(run.state.status(), ExecutionStatus::Running);
    // A stale timer changes nothing.
    let stale = run.trigger(Trigger::TimerFired {
        timer_id: EventId(999),
    });
    assert!(stale.events.is_empty() && stale.effects.is_empty());
    run.drive(no_tasks);
    assert_eq!(run.now_ms, T0_MS + 30_000);
    assert_eq!(&run.types()[2..4], ["WaitStateExited", "PassStateEntered"]);
    assert_eq!(run.output(), json!({"s": 30}));
}

#[test]
fn wait_with_a_bad_seconds_path_fails_like_aws() {
    let mut run = Run::new(json!({
        "StartAt": "WaitState",
        "States": {"WaitState": {"Type": "Wait", "SecondsPath": "$.s", "End": true}}
    }));
    run.start(json!({"s": -1}));
    assert_eq!(
        run.types(),
        ["ExecutionStarted", "WaitStateEntered", "ExecutionFailed"]
    );
    let failure = run.state.failure().expect("failure");
    assert_eq!(failure.error.as_deref(), Some("States.Runtime"));
    assert_eq!(
        failure.cause.as_deref(),
        Some("An error occurred while executing the state 'WaitState' (entered at the event id #2). The SecondsPath parameter references a negative value: $.s == -1")
    );
}

#[test]
fn task_request_response_processes_its_result() {
    let mut run = Run::new(json!({
        "StartAt": "T",
        "States": {"T": {
            "Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {"FunctionName": "f", "Payload.$": "$.p"},
            "ResultSelector": {"v.$": "$.Payload"},
            "ResultPath": "$.r",
            "End": true
        }}
    }));
    run.start(json!({"p": 7}));
    assert_eq!(
        run.types(),
        [
            "ExecutionStarted",
            "TaskStateEntered",
            "TaskScheduled",
            "TaskStarted"
        ]
    );
    let task = run.tasks[0].clone();
    assert_eq!(task.input, json!({"FunctionName": "f", "Payload": 7}));
    assert_eq!(task.resource, "arn:aws:states:::lambda:invoke");
    assert_eq!(task.attempt, 0);
    assert_eq!(task.context["State"]["Name"], json!("T"));
    assert_eq!(task.context["Execution"]["Name"], json!("ex1"));
    let EventDetails::TaskScheduled(scheduled) = &run.events[2].details else {
        panic!()
    };
    assert_eq!(
        (
            scheduled.resource_type.as_str(),
            scheduled.resource.as_str()
        ),
        ("lambda", "invoke")
    );
    assert_eq!(
        scheduled.region, "us-east-1",
        "an empty ARN region means the execution's"
    );
    run.drive(|t| {
        Answer::Succeed(json!({"Payload": t.input["Payload"].as_i64().unwrap_or(0) * 2}))
    });
    assert_eq!(run.output(), json!({"p": 7, "r": {"v": 14}}));
    assert_eq!(
        &run.types()[4..],
        ["TaskSucceeded", "TaskStateExited", "ExecutionSucceeded"]
    );
    // A late duplicate answer is stale.
    let late = decide(
        &run.def,
        &run.state,
        Trigger::TaskSucceeded {
            task_id: task.task_id,
            output: json!(1),
        },
        run.now_ms,
        &run.options,
        &mut run.entropy,
    );
    assert!(late.is_err(), "the execution is closed");
}

#[test]
fn retry_backs_off_exponentially_and_counts_attempts() {
    let mut run = Run::new(json!({
        "StartAt": "T",
        "States": {"T": {
            "Type": "Task", "Resource": "arn:aws:states:::sns:publish",
            "Parameters": {"n.$": "$$.State.RetryCount"},
            "Retry": [{"ErrorEquals": ["Flaky"], "IntervalSeconds": 2, "BackoffRate": 3.0, "MaxAttempts": 3}],
            "End": true
        }}
    }));
    run.start(json!({}));
    let mut dues = Vec::new();
    let mut answers = 0;
    run.drive(|task| {
        answers += 1;
        assert_eq!(
            task.input,
            json!({"n": task.attempt}),
            "RetryCount reaches Parameters"
        );
        if task.attempt < 2 {
            Answer::Fail("Flaky", "try again")
        } else {
            Answer::Succeed(json!("ok"))
        }
    });
    for event in &run.events {
        if let (EventDetails::TaskFailed(_), Some(timer)) = (&event.details, &event.timer) {
            assert!(matches!(timer.purpose, TimerPurpose::RetryBackoff { .. }));
            dues.push(timer.due_ms - event.timestamp_ms);
        }
    }
    assert_eq!(dues, [2_000, 6_000]);
    assert_eq!(answers, 3);
    assert_eq!(run.output(), json!("ok"));
    assert_eq!(run.now_ms, T0_MS + 8_000, "the backoffs were waited for");
}

#[test]
fn retries_exhausted_then_catch_puts_the_error_at_result_path() {
    let mut run = Run::new(json!({
        "StartAt": "T",
        "States": {
            "T": {
                "Type": "Task", "Resource": "arn:aws:states:::sns:publish",
                "Retry": [{"ErrorEquals": ["States.ALL"], "MaxAttempts": 1, "IntervalSeconds": 1}],
                "Catch": [{"ErrorEquals": ["Boom"], "ResultPath": "$.err", "Next": "Handled"}],
                "End": true
            },
            "Handled": {"Type": "Pass", "End": true}
        }
    }));
    run.start(json!({"keep": 1}));
    run.drive(|_| Answer::Fail("Boom", "bad"));
    assert_eq!(run.invocations.len(), 2, "one retry");
    assert_eq!(
        run.output(),
        json!({"keep": 1, "err": {"Error": "Boom", "Cause": "bad"}})
    );
    assert!(run.types().contains(&"TaskStateExited"));
}

#[test]
fn full_jitter_is_drawn_by_the_caller_and_recorded() {
    let def = json!({
        "StartAt": "T",
        "States": {"T": {
            "Type": "Task", "Resource": "arn:aws:states:::sns:publish",
            "Retry": [{"ErrorEquals": ["E"], "IntervalSeconds": 10, "MaxAttempts": 1, "JitterStrategy": "FULL"}],
            "End": true
        }}
    });
    let mut delays = Vec::new();
    for seed in [1u64, 2, 3, 4] {
        let mut run = Run::new(def.clone());
        run.entropy = Rng::new(seed);
        run.start(json!({}));
        run.drive(|t| {
            if t.attempt == 0 {
                Answer::Fail("E", "")
            } else {
                Answer::Succeed(json!(1))
            }
        });
        let timer = run.events.iter().find_map(|e| {
            e.timer
                .clone()
                .filter(|t| matches!(t.purpose, TimerPurpose::RetryBackoff { .. }))
        });
        let delay = timer.expect("backoff").due_ms - T0_MS;
        assert!(delay <= 10_000);
        delays.push(delay);
    }
    delays.dedup();
    assert!(
        delays.len() > 1,
        "different draws give different delays: {delays:?}"
    );
}

#[test]
fn task_timeout_fails_with_states_timeout_and_cancels_the_task() {
    let mut run = Run::new(json!({
        "StartAt": "T",
        "States": {"T": {"Type": "Task", "Resource": "arn:aws:states:::sns:publish", "TimeoutSeconds": 5, "End": true}}
    }));
    run.start(json!({}));
    assert!(run
        .timers
        .values()
        .any(|(due, kind)| *kind == TimerKind::TaskTimeout && *due == T0_MS + 5_000));
    run.drive(|_| Answer::Ignore);
    assert_eq!(&run.types()[4..], ["TaskTimedOut", "ExecutionFailed"]);
    assert_eq!(
        run.state.failure().and_then(|f| f.error.as_deref()),
        Some("States.Timeout")
    );
    assert_eq!(
        run.cancelled.len(),
        1,
        "the runtime stops waiting for the timed-out task"
    );
}

#[test]
fn execution_timeout_closes_as_timed_out() {
    let mut run = Run::new(json!({
        "TimeoutSeconds": 60,
        "StartAt": "W",
        "States": {"W": {"Type": "Wait", "Seconds": 3600, "End": true}}
    }));
    run.start(json!({}));
    run.drive(no_tasks);
    assert_eq!(run.state.status(), ExecutionStatus::TimedOut);
    assert_eq!(run.now_ms, T0_MS + 60_000);
    assert_eq!(run.types().last(), Some(&"ExecutionTimedOut"));
}

#[test]
fn open_time_limit_applies_without_timeout_seconds() {
    let options = Options {
        execution_open_ms_max: 1_000,
        ..Options::default()
    };
    let mut run = Run::with_options(
        json!({"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 10, "End": true}}}),
        options,
    );
    run.start(json!({}));
    run.drive(no_tasks);
    assert_eq!(run.state.status(), ExecutionStatus::TimedOut);
}

#[test]
fn parallel_branch_failure_aborts_the_others() {
    let mut run = Run::new(json!({
        "StartAt": "P",
        "States": {"P": {"Type": "Parallel", "End": true, "Branches": [
            {"StartAt": "Slow", "States": {"Slow": {"Type": "Task", "Resource": "arn:aws:states:::sns:publish", "End": true}}},
            {"StartAt": "Bad", "States": {"Bad": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage", "End": true}}}
        ]}}
    }));
    run.start(json!({"v": 1}));
    assert_eq!(run.tasks.len(), 2, "branches run concurrently");
    let bad = run.tasks[1].task_id;
    run.tasks.clear();
    run.trigger(Trigger::TaskFailed {
        task_id: bad,
        error: "Nope".into(),
        cause: "c".into(),
    });
    let types = run.types();
    assert!(types.contains(&"TaskStateAborted"), "{types:?}");
    assert_eq!(
        &types[types.len() - 2..],
        ["ParallelStateFailed", "ExecutionFailed"]
    );
    assert_eq!(
        run.cancelled.len(),
        1,
        "the slow branch's task is cancelled"
    );
    assert_eq!(
        run.state.failure().and_then(|f| f.error.as_deref()),
        Some("Nope")
    );
}

#[test]
fn parallel_results_are_in_branch_order() {
    let mut run = Run::new(json!({
        "StartAt": "P",
        "States": {"P": {"Type": "Parallel", "End": true, "Branches": [
            {"StartAt": "A", "States": {"A": {"Type": "Task", "Resource": "arn:aws:states:::sns:publish", "End": true}}},
            {"StartAt": "B", "States": {"B": {"Type": "Pass", "Result": "b", "End": true}}}
        ]}}
    }));
    run.start(json!({}));
    run.drive(|_| Answer::Succeed(json!("a")));
    assert_eq!(run.output(), json!(["a", "b"]));
}

#[test]
fn map_honours_max_concurrency_and_keeps_order() {
    let mut run = Run::new(json!({
        "StartAt": "M",
        "States": {"M": {
            "Type": "Map", "ItemsPath": "$.items", "MaxConcurrency": 2,
            "ItemProcessor": {"StartAt": "T", "States": {"T": {
                "Type": "Task", "Resource": "arn:aws:states:::sns:publish", "End": true}}},
            "End": true
        }}
    }));
    run.start(json!({"items": [1, 2, 3, 4, 5]}));
    let mut max_outstanding = 0;
    // Answer the most recent task first to shuffle completion order.
    for _ in 0..100 {
        max_outstanding = max_outstanding.max(run.tasks.len());
        let Some(task) = run.tasks.pop() else { break };
        let value = task.input.as_i64().unwrap_or(0);
        run.trigger(Trigger::TaskSucceeded {
            task_id: task.task_id,
            output: json!(value * 10),
        });
    }
    assert_eq!(max_outstanding, 2);
    assert_eq!(run.output(), json!([10, 20, 30, 40, 50]));
    let started = run
        .types()
        .iter()
        .filter(|t| **t == "MapIterationStarted")
        .count();
    assert_eq!(started, 5);
}

#[test]
fn map_tolerates_failures_up_to_the_threshold() {
    let def = |tolerated: u64| {
        json!({
            "StartAt": "M",
            "States": {"M": {
                "Type": "Map", "ToleratedFailureCount": tolerated,
                "ItemProcessor": {"StartAt": "C", "States": {
                    "C": {"Type": "Choice", "Choices": [{"Variable": "$", "NumericEquals": 0, "Next": "F"}], "Default": "S"},
                    "F": {"Type": "Fail", "Error": "Zero"},
                    "S": {"Type": "Succeed"}
                }},
                "End": true
            }}
        })
    };
    let mut tolerant = Run::new(def(2));
    tolerant.start(json!([1, 0, 2, 0]));
    assert_eq!(tolerant.state.status(), ExecutionStatus::Succeeded);
    assert_eq!(tolerant.output(), json!([1, null, 2, null]));
    let mut strict = Run::new(def(1));
    strict.start(json!([1, 0, 2, 0]));
    assert_eq!(strict.state.status(), ExecutionStatus::Failed);
    assert_eq!(
        strict.state.failure().and_then(|f| f.error.as_deref()),
        Some("States.ExceedToleratedFailureThreshold")
    );
}

#[test]
fn map_iteration_ids_follow_the_aws_quirk() {
    let mut run = Run::new(json!({
        "StartAt": "M",
        "States": {"M": {"Type": "Map", "MaxConcurrency": 1,
            "ItemProcessor": {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}},
            "End": true}}
    }));
    run.start(json!([1, 2]));
    let rows: Vec<(u32, u32, &str)> = run
        .events
        .iter()
        .map(|e| (e.id.0, e.previous_event_id, e.details.type_name()))
        .collect();
    assert_eq!(
        rows,
        [
            (1, 0, "ExecutionStarted"),
            (2, 0, "MapStateEntered"),
            (3, 2, "MapStateStarted"),
            (4, 3, "MapIterationStarted"),
            (5, 4, "PassStateEntered"),
            (6, 5, "PassStateExited"),
            (7, 6, "MapIterationSucceeded"),
            (8, 6, "MapIterationStarted"),
            (9, 8, "PassStateEntered"),
            (10, 9, "PassStateExited"),
            (11, 10, "MapIterationSucceeded"),
            (12, 11, "MapStateSucceeded"),
            (13, 11, "MapStateExited"),
            (14, 13, "ExecutionSucceeded"),
        ]
    );
}

#[test]
fn history_cap_fails_the_execution_at_the_capped_event() {
    let options = Options {
        history_events_max: 40,
        ..Options::default()
    };
    let mut run = Run::with_options(
        json!({"StartAt": "Loop", "States": {
            "Loop": {"Type": "Pass", "Next": "Again"},
            "Again": {"Type": "Choice", "Choices": [
                {"Variable": "$.stop", "IsPresent": true, "Next": "Done"}
            ], "Default": "Loop"},
            "Done": {"Type": "Succeed"}
        }}),
        options,
    );
    run.start(json!({}));
    assert_eq!(run.events.len(), 40);
    let last = run.events.last().expect("events");
    let EventDetails::ExecutionFailed(failure) = &last.details else {
        panic!("{last:?}")
    };
    assert_eq!(failure.error.as_deref(), Some("States.Runtime"));
    assert_eq!(
        failure.cause.as_deref(),
        Some("The execution reached the maximum number of history events (40).")
    );
    assert_eq!(run.closed, Some(ExecutionStatus::Failed));
}

#[test]
fn stop_aborts_and_later_triggers_are_refused() {
    let mut run = Run::new(
        json!({"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 100, "End": true}}}),
    );
    run.start(json!({}));
    run.trigger(Trigger::Stop {
        error: Some("Manual".into()),
        cause: None,
    });
    assert_eq!(run.state.status(), ExecutionStatus::Aborted);
    assert_eq!(run.closed, Some(ExecutionStatus::Aborted));
    let again = decide(
        &run.def,
        &run.state,
        Trigger::TimerFired {
            timer_id: EventId(2),
        },
        run.now_ms,
        &run.options,
        &mut run.entropy,
    );
    assert!(again.is_err());
    let twice = decide(
        &run.def,
        &ExecutionState::new(),
        Trigger::Stop {
            error: None,
            cause: None,
        },
        run.now_ms,
        &run.options,
        &mut run.entropy,
    );
    assert!(twice.is_err(), "a trigger before Start is refused");
}

#[test]
fn recovery_rederives_timers_and_tasks_from_the_log() {
    let mut run = Run::new(json!({
        "StartAt": "P",
        "States": {"P": {"Type": "Parallel", "End": true, "Branches": [
            {"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 5, "End": true}}},
            {"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "arn:aws:states:::sns:publish", "End": true}}}
        ]}}
    }));
    run.start(json!({}));
    let recovered = ExecutionState::replay(&run.events).expect("replay");
    let effects = pending_effects(&recovered);
    assert!(effects.iter().any(|e| matches!(
        e,
        Effect::ArmTimer {
            kind: TimerKind::Wait,
            ..
        }
    )));
    assert!(effects
        .iter()
        .any(|e| matches!(e, Effect::InvokeTask(t) if t.state_name == "T")));
    assert!(effects.iter().any(|e| matches!(
        e,
        Effect::ArmTimer {
            kind: TimerKind::ExecutionTimeout,
            ..
        }
    )));
}

#[test]
fn default_cap_is_25000_events_with_the_aws_cause() {
    let mut run = Run::new(json!({"StartAt": "Loop", "States": {
        "Loop": {"Type": "Pass", "Next": "Again"},
        "Again": {"Type": "Choice", "Choices": [
            {"Variable": "$.stop", "IsPresent": true, "Next": "Done"}
        ], "Default": "Loop"},
        "Done": {"Type": "Succeed"}
    }}));
    let decision = decide(
        &run.def,
        &run.state,
        Trigger::Start(StartRequest {
            input: json!({}),
            input_text: None,
            execution_arn: "arn:aws:states:us-east-1:000000000000:execution:sm:ex1".into(),
            state_machine_arn: "arn:aws:states:us-east-1:000000000000:stateMachine:sm".into(),
            role_arn: "arn:aws:iam::000000000000:role/r".into(),
            through: None,
            map_run_arn: None,
        }),
        run.now_ms,
        &run.options,
        &mut run.entropy,
    )
    .expect("decide");
    assert_eq!(decision.events.len(), 25_000);
    let last = decision.events.last().expect("events");
    assert_eq!(last.id, EventId(25_000));
    let EventDetails::ExecutionFailed(failure) = &last.details else {
        panic!("{last:?}")
    };
    assert_eq!(failure.error.as_deref(), Some("States.Runtime"));
    assert_eq!(
        failure.cause.as_deref(),
        Some("The execution reached the maximum number of history events (25000).")
    );
    assert!(decision.effects.contains(&Effect::Closed {
        status: ExecutionStatus::Failed
    }));
}

#[test]
fn inline_map_runs_at_most_40_iterations_at_once() {
    let mut run = Run::new(json!({
        "StartAt": "M",
        "States": {"M": {
            "Type": "Map",
            "ItemProcessor": {"StartAt": "T", "States": {"T": {
                "Type": "Task", "Resource": "arn:aws:states:::sns:publish", "End": true}}},
            "End": true
        }}
    }));
    run.start(json!((0..100).collect::<Vec<_>>()));
    assert_eq!(
        run.tasks.len(),
        40,
        "no MaxConcurrency still means 40 at most"
    );
    run.drive(|t| Answer::Succeed(t.input.clone()));
    assert_eq!(run.output(), json!((0..100).collect::<Vec<_>>()));
}

#[test]
fn an_oversized_execution_input_is_refused() {
    let mut run = Run::new(json!({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}}));
    let big = "x".repeat(statelog::limits::PAYLOAD_SIZE_BYTES_MAX);
    let refused = decide(
        &run.def,
        &run.state,
        Trigger::Start(StartRequest {
            input: json!(big),
            input_text: None,
            execution_arn: "arn:aws:states:us-east-1:000000000000:execution:sm:ex1".into(),
            state_machine_arn: "arn:aws:states:us-east-1:000000000000:stateMachine:sm".into(),
            role_arn: "arn:aws:iam::000000000000:role/r".into(),
            through: None,
            map_run_arn: None,
        }),
        run.now_ms,
        &run.options,
        &mut run.entropy,
    );
    assert!(matches!(
        refused,
        Err(statelog::interpreter::Error::PayloadTooLarge {
            what: "execution input",
            ..
        })
    ));
}

#[test]
fn heartbeat_timeout_from_the_runtime_is_caught_as_states_timeout() {
    let mut run = Run::new(json!({
        "StartAt": "T",
        "States": {
            "T": {"Type": "Task", "Resource": "arn:aws:states:::sns:publish", "HeartbeatSeconds": 10,
                  "Catch": [{"ErrorEquals": ["States.Timeout"], "Next": "Late"}], "End": true},
            "Late": {"Type": "Pass", "End": true}
        }
    }));
    run.start(json!({}));
    let task = run.tasks.remove(0);
    assert_eq!(task.heartbeat_seconds, Some(10));
    run.trigger(Trigger::TaskTimedOut {
        task_id: task.task_id,
        error: "States.HeartbeatTimeout".into(),
    });
    assert_eq!(run.state.status(), ExecutionStatus::Succeeded);
    assert_eq!(run.output(), json!({"Error": "States.HeartbeatTimeout"}));
    assert!(run.types().contains(&"TaskTimedOut"));
}

/// One row of the scenario table: a definition, an input, the answers tasks get in order, and
/// the expected event types, status and output.
struct Row {
    name: &'static str,
    definition: Value,
    input: Value,
    answers: Vec<Answer>,
    types: &'static [&'static str],
    status: ExecutionStatus,
    output: Value,
}

fn sns(extra: Value) -> Value {
    let mut state = json!({"Type": "Task", "Resource": "arn:aws:states:::sns:publish"});
    for (k, v) in extra.as_object().cloned().unwrap_or_default() {
        state[k] = v;
    }
    state
}

#[test]
fn scenario_table() {
    let rows = vec![
        Row {
            name: "pass result at a path",
            definition: json!({"StartAt": "P", "States": {
                "P": {"Type": "Pass", "Result": [1, 2], "ResultPath": "$.r", "OutputPath": "$.r", "End": true}}}),
            input: json!({"a": 1}),
            answers: vec![],
            types: &[
                "ExecutionStarted",
                "PassStateEntered",
                "PassStateExited",
                "ExecutionSucceeded",
            ],
            status: ExecutionStatus::Succeeded,
            output: json!([1, 2]),
        },
        Row {
            name: "choice default then succeed",
            definition: json!({"StartAt": "C", "States": {
                "C": {"Type": "Choice", "Choices": [{"Variable": "$.x", "StringEquals": "go", "Next": "F"}], "Default": "S"},
                "F": {"Type": "Fail"},
                "S": {"Type": "Succeed", "InputPath": "$.y"}}}),
            input: json!({"x": "stay", "y": {"z": true}}),
            answers: vec![],
            types: &[
                "ExecutionStarted",
                "ChoiceStateEntered",
                "ChoiceStateExited",
                "SucceedStateEntered",
                "SucceedStateExited",
                "ExecutionSucceeded",
            ],
            status: ExecutionStatus::Succeeded,
            output: json!({"z": true}),
        },
        Row {
            name: "task with result selector",
            definition: json!({"StartAt": "T", "States": {"T": sns(json!({
                "ResultSelector": {"id.$": "$.MessageId"}, "ResultPath": "$.sent", "End": true}))}}),
            input: json!({"msg": "hi"}),
            answers: vec![Answer::Succeed(json!({"MessageId": "m-1", "Other": 0}))],
            types: &[
                "ExecutionStarted",
                "TaskStateEntered",
                "TaskScheduled",
                "TaskStarted",
                "TaskSucceeded",
                "TaskStateExited",
                "ExecutionSucceeded",
            ],
            status: ExecutionStatus::Succeeded,
            output: json!({"msg": "hi", "sent": {"id": "m-1"}}),
        },
        Row {
            name: "task retried once then succeeds",
            definition: json!({"StartAt": "T", "States": {"T": sns(json!({
                "Retry": [{"ErrorEquals": ["States.TaskFailed"]}], "End": true}))}}),
            input: json!({}),
            answers: vec![
                Answer::Fail("States.TaskFailed", "flake"),
                Answer::Succeed(json!("done")),
            ],
            types: &[
                "ExecutionStarted",
                "TaskStateEntered",
                "TaskScheduled",
                "TaskStarted",
                "TaskFailed",
                "TaskScheduled",
                "TaskStarted",
                "TaskSucceeded",
                "TaskStateExited",
                "ExecutionSucceeded",
            ],
            status: ExecutionStatus::Succeeded,
            output: json!("done"),
        },
        Row {
            name: "uncaught task failure fails the execution",
            definition: json!({"StartAt": "T", "States": {"T": sns(json!({"End": true}))}}),
            input: json!({}),
            answers: vec![Answer::Fail("Boom", "it broke")],
            types: &[
                "ExecutionStarted",
                "TaskStateEntered",
                "TaskScheduled",
                "TaskStarted",
                "TaskFailed",
                "ExecutionFailed",
            ],
            status: ExecutionStatus::Failed,
            output: Value::Null,
        },
        Row {
            name: "catch with result path null keeps the input",
            definition: json!({"StartAt": "T", "States": {
                "T": sns(json!({"Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": null, "Next": "After"}], "End": true})),
                "After": {"Type": "Pass", "End": true}}}),
            input: json!({"keep": "me"}),
            answers: vec![Answer::Fail("Any", "x")],
            types: &[
                "ExecutionStarted",
                "TaskStateEntered",
                "TaskScheduled",
                "TaskStarted",
                "TaskFailed",
                "TaskStateExited",
                "PassStateEntered",
                "PassStateExited",
                "ExecutionSucceeded",
            ],
            status: ExecutionStatus::Succeeded,
            output: json!({"keep": "me"}),
        },
        Row {
            name: "wait then pass",
            definition: json!({"StartAt": "W", "States": {
                "W": {"Type": "Wait", "Seconds": 5, "Next": "P"},
                "P": {"Type": "Pass", "End": true}}}),
            input: json!([1]),
            answers: vec![],
            types: &[
                "ExecutionStarted",
                "WaitStateEntered",
                "WaitStateExited",
                "PassStateEntered",
                "PassStateExited",
                "ExecutionSucceeded",
            ],
            status: ExecutionStatus::Succeeded,
            output: json!([1]),
        },
        Row {
            name: "map of tasks with an item selector",
            definition: json!({"StartAt": "M", "States": {"M": {
                "Type": "Map", "ItemsPath": "$.xs", "MaxConcurrency": 1,
                "ItemSelector": {"v.$": "$$.Map.Item.Value", "i.$": "$$.Map.Item.Index"},
                "ItemProcessor": {"StartAt": "T", "States": {"T": sns(json!({"End": true}))}},
                "End": true}}}),
            input: json!({"xs": ["a", "b"]}),
            answers: vec![Answer::Succeed(json!("A")), Answer::Succeed(json!("B"))],
            types: &[
                "ExecutionStarted",
                "MapStateEntered",
                "MapStateStarted",
                "MapIterationStarted",
                "TaskStateEntered",
                "TaskScheduled",
                "TaskStarted",
                "TaskSucceeded",
                "TaskStateExited",
                "MapIterationSucceeded",
                "MapIterationStarted",
                "TaskStateEntered",
                "TaskScheduled",
                "TaskStarted",
                "TaskSucceeded",
                "TaskStateExited",
                "MapIterationSucceeded",
                "MapStateSucceeded",
                "MapStateExited",
                "ExecutionSucceeded",
            ],
            status: ExecutionStatus::Succeeded,
            output: json!(["A", "B"]),
        },
        Row {
            name: "parallel caught failure",
            definition: json!({"StartAt": "P", "States": {
                "P": {"Type": "Parallel", "Branches": [
                    {"StartAt": "F", "States": {"F": {"Type": "Fail", "Error": "E", "Cause": "C"}}}],
                    "Catch": [{"ErrorEquals": ["E"], "Next": "H"}], "End": true},
                "H": {"Type": "Pass", "End": true}}}),
            input: json!({}),
            answers: vec![],
            types: &[
                "ExecutionStarted",
                "ParallelStateEntered",
                "ParallelStateStarted",
                "FailStateEntered",
                "ParallelStateFailed",
                "ParallelStateExited",
                "PassStateEntered",
                "PassStateExited",
                "ExecutionSucceeded",
            ],
            status: ExecutionStatus::Succeeded,
            output: json!({"Error": "E", "Cause": "C"}),
        },
    ];
    for row in rows {
        let mut run = Run::new(row.definition);
        run.start(row.input);
        let mut answers = row.answers.into_iter();
        run.drive(|task| {
            answers
                .next()
                .unwrap_or_else(|| panic!("{}: unexpected task {task:?}", row.name))
        });
        assert_eq!(run.types(), row.types, "{}", row.name);
        assert_eq!(run.state.status(), row.status, "{}", row.name);
        assert_eq!(run.output(), row.output, "{}", row.name);
        assert!(answers.next().is_none(), "{}: answers left over", row.name);
    }
}

#[test]
fn states_task_failed_takes_integration_errors_but_not_timeouts() {
    let def = json!({"StartAt": "T", "States": {
        "T": sns(json!({"TimeoutSeconds": 5,
            "Catch": [{"ErrorEquals": ["States.TaskFailed"], "Next": "Caught"}], "End": true})),
        "Caught": {"Type": "Pass", "End": true}}});
    let mut failed = Run::new(def.clone());
    failed.start(json!({}));
    failed.drive(|_| Answer::Fail("S3.NoSuchBucketException", "gone"));
    assert_eq!(failed.state.status(), ExecutionStatus::Succeeded);
    let mut timed_out = Run::new(def);
    timed_out.start(json!({}));
    timed_out.drive(|_| Answer::Ignore);
    assert_eq!(timed_out.state.status(), ExecutionStatus::Failed);
    assert_eq!(
        timed_out.state.failure().and_then(|f| f.error.as_deref()),
        Some("States.Timeout")
    );
}

#[test]
fn max_delay_seconds_caps_the_backoff() {
    let mut run = Run::new(json!({"StartAt": "T", "States": {"T": sns(json!({
        "Retry": [{"ErrorEquals": ["E"], "IntervalSeconds": 10, "BackoffRate": 10.0,
                   "MaxDelaySeconds": 15, "MaxAttempts": 3}],
        "End": true}))}}));
    run.start(json!({}));
    run.drive(|t| {
        if t.attempt < 3 {
            Answer::Fail("E", "")
        } else {
            Answer::Succeed(json!(t.attempt))
        }
    });
    let delays: Vec<u64> = run
        .events
        .iter()
        .filter_map(|e| {
            e.timer
                .as_ref()
                .filter(|t| matches!(t.purpose, TimerPurpose::RetryBackoff { .. }))
                .map(|t| t.due_ms - e.timestamp_ms)
        })
        .collect();
    assert_eq!(delays, [10_000, 15_000, 15_000]);
    assert_eq!(run.output(), json!(3));
}
