//! Heartbeat clocks across a reopen, on the manual clock: a heartbeat writes no event, so the
//! reopened engine gives every handed-over task a full `HeartbeatSeconds` from the open (see
//! `docs/waiting.md`): a task whose last heartbeat is older than its interval by the time of the
//! reopen is not timed out at once, and a vanished worker's task is freed one interval after it.

use crate::engine_common;

use engine_common::block_on;

use engine_common::Harness;
use serde_json::{json, Value};
use statelog::engine::{Engine, ExecutionStatus};

const SEND: &str = "arn:aws:states:::sqs:sendMessage.waitForTaskToken";

fn status(engine: &Engine, arn: &str) -> ExecutionStatus {
    engine.describe_execution(arn).expect("describe").status
}

/// Starts one execution of an activity Task with a 60 s heartbeat (and `extra` fields) and
/// claims its task as `worker`: (activity ARN, execution ARN, the claimed task).
fn claimed_activity_task(
    h: &Harness,
    extra: &str,
    worker: &str,
) -> (String, String, statelog::engine::ActivityTask) {
    let activity = h.engine.create_activity("work").expect("activity");
    let definition = format!(
        r#"{{"StartAt":"Work","States":{{"Work":{{"Type":"Task","Resource":"{}","HeartbeatSeconds":60{extra},"End":true}}}}}}"#,
        activity.activity_arn
    );
    h.engine
        .create_state_machine("m", &definition, None)
        .expect("machine");
    let arn = h
        .engine
        .start_execution("m", Some("e"), "{}")
        .expect("start")
        .execution_arn;
    h.engine.wait_idle();
    let task = block_on(
        h.engine
            .get_activity_task(&activity.activity_arn, Some(worker)),
    )
    .expect("poll")
    .expect("a task");
    (activity.activity_arn, arn, task)
}

/// Runs the checks after a reopen 80 s after the last heartbeat of a 60 s clock.
fn freed_one_interval_after_the_reopen(h: Harness, arn: &str) {
    let h = h.restart(30_000);
    assert_eq!(h.engine.heartbeat_clock_count(), 1, "re-armed at open");
    h.tick(0);
    assert_eq!(
        status(&h.engine, arn),
        ExecutionStatus::Running,
        "not at once"
    );
    h.tick(59_999);
    assert_eq!(status(&h.engine, arn), ExecutionStatus::Running);
    h.tick(1);
    let done = h.engine.wait_until_closed(arn).expect("closes");
    assert_eq!(done.error.as_deref(), Some("States.HeartbeatTimeout"));
}

#[test]
fn a_claimed_activity_tasks_clock_restarts_at_reopen() {
    let h = Harness::new();
    let (_, arn, task) = claimed_activity_task(&h, "", "w");
    h.tick(40_000);
    h.engine
        .send_task_heartbeat(&task.task_token)
        .expect("beat");
    h.tick(50_000);
    assert_eq!(status(&h.engine, &arn), ExecutionStatus::Running);
    // Crash 50 s after the beat, reopen 30 s later: 80 s since the last beat.
    freed_one_interval_after_the_reopen(h, &arn);
}

#[test]
fn a_submitted_token_tasks_clock_restarts_at_reopen_and_a_live_worker_keeps_it() {
    let h = Harness::new();
    h.engine
        .register_integration(SEND, |_input: Value, _context: Value| async {
            Ok(json!({}))
        });
    let definition = format!(
        r#"{{"StartAt":"Ask","States":{{"Ask":{{"Type":"Task","Resource":"{SEND}","HeartbeatSeconds":60,
            "Parameters":{{"T.$":"$$.Task.Token"}},"End":true}}}}}}"#
    );
    h.engine
        .create_state_machine("m", &definition, None)
        .expect("machine");
    let arn = h
        .engine
        .start_execution("m", Some("e"), "{}")
        .expect("start")
        .execution_arn;
    h.engine.wait_idle();
    h.tick(50_000);
    let h = h.restart(30_000);
    h.engine
        .register_integration(SEND, |_input: Value, _context: Value| async {
            Ok(json!({}))
        });
    h.tick(0);
    assert_eq!(
        status(&h.engine, &arn),
        ExecutionStatus::Running,
        "80 s after the schedule, but the clock restarted at the reopen"
    );
    h.tick(60_000);
    let done = h.engine.wait_until_closed(&arn).expect("closes");
    assert_eq!(done.error.as_deref(), Some("States.HeartbeatTimeout"));
}

#[test]
fn a_claimed_activity_task_whose_worker_vanished_is_freed_after_the_reopen() {
    let h = Harness::new();
    let (activity_arn, arn, first) = claimed_activity_task(
        &h,
        r#","Retry":[{"ErrorEquals":["States.HeartbeatTimeout"],"IntervalSeconds":1,"MaxAttempts":1}]"#,
        "gone",
    );
    let h = h.restart(10_000);
    h.engine.create_activity("work").expect("activity again");
    h.tick(60_000);
    h.tick(1_000);
    // The retry is scheduled again for a live worker; the vanished one's token is dead.
    let second = block_on(h.engine.get_activity_task(&activity_arn, Some("live")))
        .expect("poll")
        .expect("the retried task");
    assert_ne!(second.task_token, first.task_token);
    h.engine
        .send_task_success(&second.task_token, r#"{"ok":true}"#)
        .expect("answer");
    let done = h.engine.wait_until_closed(&arn).expect("closes");
    assert_eq!(done.status, ExecutionStatus::Succeeded);
}
