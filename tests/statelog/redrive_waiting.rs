//! Redrive of the states that wait on something outside the engine, and of a Wait state, on the
//! manual clock: a `.waitForTaskToken` task that got `SendTaskFailure` is entered again and
//! sends a new token (the old one stays dead); an activity task whose worker let it time out is
//! scheduled again for the next worker; a Wait that failed computing its time from a bad
//! `TimestampPath` recomputes it when rerun (and fails the same way, the input being the same)
//! instead of passing through. Every rerun state gets a fresh `*StateEntered` after
//! `ExecutionRedriven`.

use crate::engine_common;

use engine_common::block_on;

use std::sync::Arc;

use engine_common::{event_types, Harness};
use parking_lot::Mutex;
use serde_json::{json, Value};
use statelog::engine::{Engine, Error, ExecutionStatus};

const ACCOUNT: &str = "000000000000";
const SEND: &str = "arn:aws:states:::sqs:sendMessage.waitForTaskToken";

fn status(engine: &Engine, arn: &str) -> ExecutionStatus {
    engine.describe_execution(arn).expect("describe").status
}

/// The event types from `ExecutionRedriven` on.
fn since_redrive(engine: &Engine, arn: &str) -> Vec<String> {
    let types = event_types(engine, arn);
    let at = types
        .iter()
        .rposition(|t| t == "ExecutionRedriven")
        .expect("ExecutionRedriven in the history");
    types[at..].to_vec()
}

#[test]
fn a_token_task_answered_with_send_task_failure_is_rerun_with_a_new_token() {
    let h = Harness::new();
    let tokens: Arc<Mutex<Vec<String>>> = Arc::default();
    {
        let tokens = tokens.clone();
        h.engine
            .register_integration(SEND, move |input: Value, _context: Value| {
                let tokens = tokens.clone();
                async move {
                    let token = input["MessageBody"]["TaskToken"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    tokens.lock().push(token);
                    Ok(json!({"MessageId": "m-1"}))
                }
            });
    }
    let definition = format!(
        r#"{{"StartAt":"Before","States":{{
            "Before":{{"Type":"Pass","Result":"kept","ResultPath":"$.before","Next":"Ask"}},
            "Ask":{{"Type":"Task","Resource":"{SEND}",
                "Parameters":{{"QueueUrl":"q","MessageBody":{{"TaskToken.$":"$$.Task.Token"}}}},
                "ResultPath":"$.answer","End":true}}}}}}"#
    );
    h.engine
        .create_state_machine("ask", &definition, None)
        .expect("machine");
    let arn = h
        .engine
        .start_execution("ask", Some("t1"), r#"{"m":1}"#)
        .expect("starts")
        .execution_arn;
    h.engine.wait_idle();
    let first = tokens.lock().last().cloned().expect("a token");
    h.engine
        .send_task_failure(&first, "Payment.Declined", "card expired")
        .expect("failure sent");
    h.engine.wait_idle();
    let failed = h.engine.describe_execution(&arn).expect("describe");
    assert_eq!(failed.status, ExecutionStatus::Failed);
    assert_eq!(failed.error.as_deref(), Some("Payment.Declined"));

    h.engine.redrive_execution(&arn, None).expect("redrives");
    h.engine.wait_idle();
    assert_eq!(status(&h.engine, &arn), ExecutionStatus::Running);
    assert_eq!(tokens.lock().len(), 2, "the task sent a new token");
    let second = tokens.lock().last().cloned().expect("a token");
    assert_ne!(first, second);
    assert_eq!(
        since_redrive(&h.engine, &arn)[..3],
        ["ExecutionRedriven", "TaskStateEntered", "TaskScheduled"]
    );
    // The token of the failed attempt stays closed.
    let late = h
        .engine
        .send_task_success(&first, r#"{"ok":false}"#)
        .expect_err("the old token is dead");
    assert!(matches!(late, Error::TaskTimedOut { .. }), "{late}");
    h.engine
        .send_task_success(&second, r#"{"ok":true}"#)
        .expect("answered");
    h.engine.wait_idle();
    let done = h.engine.describe_execution(&arn).expect("describe");
    assert_eq!(done.status, ExecutionStatus::Succeeded, "{done:?}");
    let output = done.output.expect("output");
    assert_eq!(output["answer"], json!({"ok": true}));
    assert_eq!(
        output["before"],
        json!("kept"),
        "the Pass before is not rerun"
    );
    assert_eq!(
        event_types(&h.engine, &arn)
            .iter()
            .filter(|t| *t == "PassStateEntered")
            .count(),
        1
    );
}

#[test]
fn an_activity_task_that_timed_out_is_scheduled_again_on_redrive() {
    let h = Harness::new();
    let activity = h.engine.create_activity("work").expect("activity");
    let definition = format!(
        r#"{{"StartAt":"Work","States":{{
            "Work":{{"Type":"Task","Resource":"{}","TimeoutSeconds":30,
                "Parameters":{{"job.$":"$.job"}},"End":true}}}}}}"#,
        activity.activity_arn
    );
    h.engine
        .create_state_machine("m", &definition, None)
        .expect("machine");
    let arn = h
        .engine
        .start_execution("m", Some("a1"), r#"{"job":7}"#)
        .expect("starts")
        .execution_arn;
    let poll = |worker: &str| {
        let lists = vec![activity.activity_arn.clone()];
        block_on(h.engine.poll_task_lists(ACCOUNT, &lists, Some(worker), 0)).expect("poll")
    };
    let lost = poll("silent").expect("a task");
    h.tick(30_000);
    let failed = h.engine.describe_execution(&arn).expect("describe");
    assert_eq!(failed.status, ExecutionStatus::Failed);
    assert_eq!(failed.error.as_deref(), Some("States.Timeout"));

    h.engine.redrive_execution(&arn, None).expect("redrives");
    h.engine.wait_idle();
    assert_eq!(
        since_redrive(&h.engine, &arn)[..3],
        ["ExecutionRedriven", "TaskStateEntered", "ActivityScheduled"]
    );
    let task = poll("steady").expect("the rerun task");
    assert_ne!(task.task_token, lost.task_token);
    assert_eq!(
        serde_json::from_str::<Value>(&task.input).expect("json input"),
        json!({"job": 7})
    );
    let late = h
        .engine
        .send_task_success(&lost.task_token, "1")
        .expect_err("the timed-out task's token is dead");
    assert!(matches!(late, Error::TaskTimedOut { .. }), "{late}");
    h.engine
        .send_task_success(&task.task_token, r#"{"done":7}"#)
        .expect("answered");
    h.engine.wait_idle();
    let done = h.engine.describe_execution(&arn).expect("describe");
    assert_eq!(done.status, ExecutionStatus::Succeeded, "{done:?}");
    assert_eq!(done.output.expect("output"), json!({"done": 7}));
}

#[test]
fn a_wait_that_failed_computing_its_time_recomputes_it_when_rerun() {
    let h = Harness::new();
    let definition = r#"{"StartAt":"First","States":{
        "First":{"Type":"Pass","Result":1,"ResultPath":"$.first","Next":"Hold"},
        "Hold":{"Type":"Wait","TimestampPath":"$.when","Next":"After"},
        "After":{"Type":"Pass","End":true}}}"#;
    h.engine
        .create_state_machine("hold", definition, None)
        .expect("machine");
    let arn = h
        .engine
        .start_execution("hold", Some("w1"), r#"{"when":"not a time"}"#)
        .expect("starts")
        .execution_arn;
    h.engine.wait_idle();
    let failed = h.engine.describe_execution(&arn).expect("describe");
    assert_eq!(failed.status, ExecutionStatus::Failed);
    assert_eq!(failed.error.as_deref(), Some("States.Runtime"));
    let cause = failed.cause.clone().expect("a cause");
    assert!(cause.contains("TimestampPath"), "{cause}");

    h.engine.redrive_execution(&arn, None).expect("redrives");
    h.engine.wait_idle();
    // The same input gives the same bad timestamp: the Wait is entered again and fails again,
    // it does not pass through to the next state.
    let again = h.engine.describe_execution(&arn).expect("describe");
    assert_eq!(again.status, ExecutionStatus::Failed, "{again:?}");
    assert_eq!(again.error.as_deref(), Some("States.Runtime"));
    assert_eq!(
        since_redrive(&h.engine, &arn),
        ["ExecutionRedriven", "WaitStateEntered", "ExecutionFailed"]
    );
    let types = event_types(&h.engine, &arn);
    // The cause names the new WaitStateEntered event (ids count from 1).
    let first_id = types
        .iter()
        .position(|t| t == "WaitStateEntered")
        .expect("w")
        + 1;
    let second_id = types
        .iter()
        .rposition(|t| t == "WaitStateEntered")
        .expect("w")
        + 1;
    assert!(second_id > first_id);
    let expected = cause.replace(
        &format!("event id #{first_id})"),
        &format!("event id #{second_id})"),
    );
    assert_ne!(
        expected, cause,
        "the cause names the entered event: {cause}"
    );
    assert_eq!(again.cause.as_deref(), Some(expected.as_str()));
    assert_eq!(types.iter().filter(|t| *t == "PassStateEntered").count(), 1);
}

#[test]
fn a_wait_stopped_while_waiting_keeps_its_timer_and_is_not_entered_again() {
    let h = Harness::new();
    let definition = r#"{"StartAt":"Hold","States":{
        "Hold":{"Type":"Wait","Seconds":60,"End":true}}}"#;
    h.engine
        .create_state_machine("hold", definition, None)
        .expect("machine");
    let arn = h
        .engine
        .start_execution("hold", Some("w2"), r#"{"k":1}"#)
        .expect("starts")
        .execution_arn;
    h.engine.wait_idle();
    h.engine.stop_execution(&arn, None, None).expect("stops");
    assert_eq!(status(&h.engine, &arn), ExecutionStatus::Aborted);
    h.engine.redrive_execution(&arn, None).expect("redrives");
    h.engine.wait_idle();
    assert_eq!(status(&h.engine, &arn), ExecutionStatus::Running);
    assert_eq!(since_redrive(&h.engine, &arn), ["ExecutionRedriven"]);
    h.tick(60_000);
    assert_eq!(status(&h.engine, &arn), ExecutionStatus::Succeeded);
}

/// A parent whose one Task runs `child_arn` through `states:startExecution.sync`; `name` gives
/// the child a fixed name (`None`: a generated one, as AWS does).
fn sync_parent(child_arn: &str, name: Option<&str>) -> String {
    let name = name.map_or(String::new(), |n| format!(r#","Name":"{n}""#));
    format!(
        r#"{{"StartAt":"Prep","States":{{
        "Prep":{{"Type":"Pass","Result":"p","ResultPath":"$.prep","Next":"Run"}},
        "Run":{{"Type":"Task","Resource":"arn:aws:states:::states:startExecution.sync",
          "Parameters":{{"StateMachineArn":"{child_arn}"{name},"Input":{{"n.$":"$.n"}}}},
          "ResultSelector":{{"status.$":"$.Status"}},"ResultPath":"$.run","End":true}}}}}}"#
    )
}

/// A child that runs one Lambda task, failing while `broken` is set.
fn flaky_child(h: &Harness, broken: &Arc<std::sync::atomic::AtomicBool>) -> String {
    let lambda = format!("arn:aws:lambda:us-east-1:{ACCOUNT}:function:flaky");
    let broken = broken.clone();
    h.engine
        .register_integration(&lambda, move |input: Value, _c: Value| {
            let fail = broken.load(std::sync::atomic::Ordering::SeqCst);
            async move {
                if fail {
                    Err(statelog::engine::TaskError::new(
                        "Boom",
                        "the child's task is down",
                    ))
                } else {
                    Ok(input)
                }
            }
        });
    h.engine
        .create_state_machine(
            "child",
            &format!(r#"{{"StartAt":"T","States":{{"T":{{"Type":"Task","Resource":"{lambda}","End":true}}}}}}"#),
            None,
        )
        .expect("child")
        .state_machine_arn
}

/// A `.sync` parent (its child named `child_name` when given) run once with a failing child
/// until it closes FAILED: (child machine ARN, the child's failure switch, parent execution
/// ARN, the parent's description).
fn failed_sync_parent(
    h: &Harness,
    child_name: Option<&str>,
) -> (
    String,
    Arc<std::sync::atomic::AtomicBool>,
    String,
    statelog::engine::ExecutionDescription,
) {
    let broken = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let child = flaky_child(h, &broken);
    h.engine
        .create_state_machine("parent", &sync_parent(&child, child_name), None)
        .expect("parent");
    let parent = h
        .engine
        .start_execution("parent", Some("p1"), r#"{"n":4}"#)
        .expect("starts")
        .execution_arn;
    let failed = h.engine.wait_until_closed(&parent).expect("closes");
    assert_eq!(failed.status, ExecutionStatus::Failed);
    (child, broken, parent, failed)
}

#[test]
fn a_parent_whose_sync_child_failed_is_rerun_with_a_new_child() {
    use std::sync::atomic::Ordering;
    let h = Harness::new();
    let (child, broken, parent, failed) = failed_sync_parent(&h, None);
    assert_eq!(failed.error.as_deref(), Some("States.TaskFailed"));
    let children = |status| {
        h.engine
            .list_executions(&statelog::engine::ListExecutions {
                state_machine: Some(child.clone()),
                status_filter: status,
                ..Default::default()
            })
            .expect("lists")
            .executions
    };
    assert_eq!(children(Some(ExecutionStatus::Failed)).len(), 1);

    broken.store(false, Ordering::SeqCst);
    h.clock.advance_ms(60_000);
    let outcome = h.engine.redrive_execution(&parent, None).expect("redrives");
    assert_eq!(outcome.redrive_count, 1);
    let done = h.engine.wait_until_closed(&parent).expect("closes again");
    assert_eq!(done.status, ExecutionStatus::Succeeded, "{done:?}");
    assert_eq!(
        done.output.expect("output"),
        json!({"n": 4, "prep": "p", "run": {"status": "SUCCEEDED"}})
    );
    // The rerun started a second child (a new generated name); the failed one stays failed
    // and is not redriven.
    let all = children(None);
    assert_eq!(all.len(), 2, "{all:?}");
    assert_eq!(children(Some(ExecutionStatus::Failed)).len(), 1);
    assert_eq!(children(Some(ExecutionStatus::Succeeded)).len(), 1);
    assert!(all.iter().all(|c| c.redrive_count == 0));
    // Prep kept its result and was not entered again; Run was.
    let rerun = since_redrive(&h.engine, &parent);
    assert_eq!(
        rerun,
        [
            "ExecutionRedriven",
            "TaskStateEntered",
            "TaskScheduled",
            "TaskStarted",
            "TaskSubmitted",
            "TaskSucceeded",
            "TaskStateExited",
            "ExecutionSucceeded"
        ],
        "{rerun:?}"
    );
    assert!(h.engine.background_errors().is_empty());
}

#[test]
fn a_parent_whose_named_sync_child_failed_fails_again_on_the_taken_name() {
    let h = Harness::new();
    let (_, _, parent, _) = failed_sync_parent(&h, Some("kid"));
    // The child's name is taken by the closed, failed child: StartExecution refuses it (as
    // AWS does), so the rerun task fails with that error and the parent fails again.
    h.clock.advance_ms(60_000);
    h.engine.redrive_execution(&parent, None).expect("redrives");
    let again = h.engine.wait_until_closed(&parent).expect("closes again");
    assert_eq!(again.status, ExecutionStatus::Failed);
    assert_eq!(
        again.error.as_deref(),
        Some("Sfn.ExecutionAlreadyExistsException"),
        "{again:?}"
    );
    let kid = h.engine.execution_arn("child", "kid");
    assert_eq!(status(&h.engine, &kid), ExecutionStatus::Failed);
    assert_eq!(
        h.engine.describe_redrive(&parent).expect("d").redrive_count,
        1
    );
}
