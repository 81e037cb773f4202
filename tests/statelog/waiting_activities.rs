//! Activities and task lists end to end on the manual clock: create/describe/list/delete, a
//! worker's long poll (served by a task scheduled while it waits, or empty), ActivityScheduled /
//! ActivityStarted (worker name) / ActivitySucceeded / ActivityTimedOut in the history, the
//! `TaskList`/`TaskListPath` extensions with priority polling and namespaces, and scheduled and
//! claimed tasks across a restart. No test sleeps: long polls end by a hand-off or a 0 ms wait.

use crate::engine_common;

use engine_common::block_on;

use engine_common::{event_types, Harness};
use serde_json::json;
use statelog::engine::{Engine, Error, ExecutionStatus, HistoryQuery};
use statelog::history::EventDetails;

const ACCOUNT: &str = "000000000000";

fn machine(activity_arn: &str, extra: &str) -> String {
    format!(
        r#"{{"StartAt":"Work","States":{{
            "Work":{{"Type":"Task","Resource":"{activity_arn}",
                "Parameters":{{"job.$":"$.job"}}{extra},"End":true}}}}}}"#
    )
}

fn setup(h: &Harness, extra: &str) -> String {
    let activity = h.engine.create_activity("work").expect("activity");
    h.engine
        .create_state_machine("m", &machine(&activity.activity_arn, extra), None)
        .expect("machine");
    activity.activity_arn
}

fn start(engine: &Engine, name: &str, input: serde_json::Value) -> String {
    engine
        .start_execution("m", Some(name), &input.to_string())
        .expect("start")
        .execution_arn
}

fn poll_now(
    engine: &Engine,
    lists: &[&str],
    worker: &str,
) -> Option<statelog::engine::ActivityTask> {
    let lists: Vec<String> = lists.iter().map(|s| s.to_string()).collect();
    block_on(engine.poll_task_lists(ACCOUNT, &lists, Some(worker), 0)).expect("poll")
}

fn status(engine: &Engine, arn: &str) -> ExecutionStatus {
    engine.describe_execution(arn).expect("describe").status
}

#[test]
fn activities_are_created_described_listed_and_deleted() {
    let h = Harness::new();
    let a = h.engine.create_activity("work").expect("create");
    assert_eq!(
        a.activity_arn,
        format!("arn:aws:states:us-east-1:{ACCOUNT}:activity:work")
    );
    assert_eq!(h.engine.create_activity("work").expect("again"), a);
    h.engine.create_activity("other").expect("create");
    let names: Vec<String> = h
        .engine
        .list_activities()
        .into_iter()
        .map(|a| a.name)
        .collect();
    assert_eq!(names, ["other", "work"]);
    assert_eq!(
        h.engine
            .describe_activity(&a.activity_arn)
            .expect("describe"),
        a
    );
    h.engine.delete_activity(&a.activity_arn).expect("delete");
    let gone = h
        .engine
        .describe_activity(&a.activity_arn)
        .expect_err("gone");
    assert_eq!(gone.aws_name(), "ActivityDoesNotExist");
    let poll = block_on(h.engine.get_activity_task(&a.activity_arn, Some("w")));
    assert!(matches!(poll, Err(Error::ActivityDoesNotExist { .. })));
    assert!(h.engine.create_activity("bad name?").is_err());
}

#[test]
fn a_worker_takes_the_task_and_answers_it() {
    let h = Harness::new();
    let activity = setup(&h, r#","HeartbeatSeconds":30"#);
    let arn = start(&h.engine, "e1", json!({"job": 7}));
    assert_eq!(
        event_types(&h.engine, &arn),
        ["ExecutionStarted", "TaskStateEntered", "ActivityScheduled"]
    );
    assert_eq!(h.engine.task_list_pending_count(ACCOUNT, &activity), 1);
    let task = block_on(h.engine.get_activity_task(&activity, Some("worker-1")))
        .expect("poll")
        .expect("a task");
    assert_eq!(task.input, r#"{"job":7}"#);
    assert_eq!(h.engine.task_list_pending_count(ACCOUNT, &activity), 0);
    // Handed to one poller only.
    assert!(poll_now(&h.engine, &[&activity], "worker-2").is_none());
    let history = h
        .engine
        .get_execution_history(&arn, &HistoryQuery::default())
        .expect("history");
    let EventDetails::ActivityStarted(started) = &history.events[3].details else {
        panic!("ActivityStarted");
    };
    assert_eq!(started.worker_name.as_deref(), Some("worker-1"));
    let rendered = history.to_aws_json().to_string();
    assert!(rendered.contains(r#""activityScheduledEventDetails""#));
    assert!(
        !rendered.contains(&task.task_token),
        "the token is not rendered"
    );

    h.engine
        .send_task_heartbeat(&task.task_token)
        .expect("heartbeat");
    h.engine
        .send_task_success(&task.task_token, r#"{"done":true}"#)
        .expect("success");
    let done = h.engine.describe_execution(&arn).expect("describe");
    assert_eq!(done.status, ExecutionStatus::Succeeded);
    assert_eq!(done.output, Some(json!({"done": true})));
    assert_eq!(
        event_types(&h.engine, &arn)[4..],
        ["ActivitySucceeded", "TaskStateExited", "ExecutionSucceeded"]
    );
    let again = h
        .engine
        .send_task_success(&task.task_token, "{}")
        .expect_err("closed");
    assert!(matches!(again, Error::TaskTimedOut { .. }));
}

#[test]
fn a_waiting_poller_is_served_by_a_task_scheduled_later() {
    let h = Harness::new();
    let activity = setup(&h, "");
    let engine = h.engine.clone();
    let task = block_on(async move {
        let poller = engine.clone();
        let arn = activity.clone();
        let poll = tokio::spawn(async move { poller.get_activity_task(&arn, Some("early")).await });
        // Let the poll register before the task exists.
        tokio::task::yield_now().await;
        start(&engine, "e1", json!({"job": 1}));
        poll.await.expect("joined")
    })
    .expect("poll")
    .expect("a task");
    assert_eq!(task.input, r#"{"job":1}"#);
    let arn = h.engine.execution_arn("m", "e1");
    assert!(event_types(&h.engine, &arn).contains(&"ActivityStarted".to_string()));
    h.engine
        .send_task_failure(&task.task_token, "Job.Failed", "no luck")
        .expect("failure");
    let done = h.engine.describe_execution(&arn).expect("describe");
    assert_eq!(done.status, ExecutionStatus::Failed);
    assert_eq!(done.error.as_deref(), Some("Job.Failed"));
    assert!(event_types(&h.engine, &arn).contains(&"ActivityFailed".to_string()));
}

#[test]
fn task_lists_route_by_name_priority_and_namespace() {
    let h = Harness::new();
    let activity = setup(&h, r#","TaskListPath":"$.list""#);
    let low = start(&h.engine, "low", json!({"job": "l", "list": "low"}));
    let high = start(&h.engine, "high", json!({"job": "h", "list": "high"}));
    let gpu = start(&h.engine, "gpu", json!({"job": "g", "list": "gpu"}));
    // The default list and another namespace see none of them.
    assert!(poll_now(&h.engine, &[&activity], "w").is_none());
    let foreign = block_on(h.engine.poll_task_lists(
        "111111111111",
        &["high".to_string(), "low".to_string(), "gpu".to_string()],
        Some("w"),
        0,
    ))
    .expect("poll");
    assert!(foreign.is_none());
    // Priority order: high before low, whatever the scheduling order.
    let first = poll_now(&h.engine, &["high", "low"], "cpu").expect("a task");
    assert_eq!(first.input, r#"{"job":"h"}"#);
    let second = poll_now(&h.engine, &["high", "low"], "cpu").expect("a task");
    assert_eq!(second.input, r#"{"job":"l"}"#);
    assert!(poll_now(&h.engine, &["high", "low"], "cpu").is_none());
    let third = poll_now(&h.engine, &["gpu"], "gpu-host").expect("gpu task");
    for (token, arn) in [(first, &high), (second, &low), (third, &gpu)] {
        h.engine
            .send_task_success(&token.task_token, "1")
            .expect("answer");
        assert_eq!(status(&h.engine, arn), ExecutionStatus::Succeeded);
    }
    // A literal TaskList is accepted on activities only.
    let rejected = h.engine.create_state_machine(
        "bad",
        r#"{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","TaskList":"gpu","End":true}}}"#,
        None,
    );
    assert!(matches!(rejected, Err(Error::InvalidDefinition { .. })));
}

#[test]
fn scheduled_and_claimed_tasks_survive_a_restart() {
    let h = Harness::new();
    let activity = setup(&h, r#","HeartbeatSeconds":60"#);
    let claimed_arn = start(&h.engine, "claimed", json!({"job": 1}));
    let claimed = poll_now(&h.engine, &[&activity], "w1").expect("a task");
    let queued_arn = start(&h.engine, "queued", json!({"job": 2}));

    let h = h.restart(1_000);
    h.engine.create_activity("work").expect("re-created");
    assert_eq!(
        h.engine.task_list_pending_count(ACCOUNT, &activity),
        1,
        "only the unclaimed task is offered again"
    );
    let queued = poll_now(&h.engine, &[&activity], "w2").expect("the queued task");
    assert_eq!(queued.input, r#"{"job":2}"#);
    h.engine
        .send_task_success(&claimed.task_token, "1")
        .expect("claimed token folded back");
    h.engine
        .send_task_success(&queued.task_token, "2")
        .expect("queued token");
    assert_eq!(status(&h.engine, &claimed_arn), ExecutionStatus::Succeeded);
    assert_eq!(status(&h.engine, &queued_arn), ExecutionStatus::Succeeded);
}

#[test]
fn a_silent_worker_loses_the_task_to_a_retry() {
    let h = Harness::new();
    let activity = setup(
        &h,
        r#","HeartbeatSeconds":10,"Retry":[{"ErrorEquals":["States.Timeout"],"IntervalSeconds":1,"MaxAttempts":1}]"#,
    );
    let arn = start(&h.engine, "e1", json!({"job": 1}));
    let first = poll_now(&h.engine, &[&activity], "vanishing").expect("a task");
    h.clock.advance_ms(10_000);
    h.engine.run_due_timers();
    let types = event_types(&h.engine, &arn);
    assert_eq!(types.last().map(String::as_str), Some("ActivityTimedOut"));
    h.clock.advance_ms(1_000);
    h.engine.run_due_timers();
    let second = poll_now(&h.engine, &[&activity], "steady").expect("the retry");
    assert_ne!(first.task_token, second.task_token);
    let late = h
        .engine
        .send_task_success(&first.task_token, "1")
        .expect_err("dead token");
    assert!(matches!(late, Error::TaskTimedOut { .. }));
    h.engine
        .send_task_success(&second.task_token, "2")
        .expect("answer");
    assert_eq!(status(&h.engine, &arn), ExecutionStatus::Succeeded);
}

/// A memory log whose appends can be held: while `held`, an append waits (counted in
/// `waiting`) until released, as a slow fdatasync would keep a commit.
#[derive(Debug, Default)]
struct GateLog {
    log: statelog::store::MemoryLog,
    gate: parking_lot::Mutex<Gate>,
    changed: parking_lot::Condvar,
}

#[derive(Debug, Default)]
struct Gate {
    held: bool,
    waiting: usize,
}

impl GateLog {
    fn hold(&self, held: bool) {
        self.gate.lock().held = held;
        self.changed.notify_all();
    }

    fn wait_for_a_held_append(&self) {
        let mut gate = self.gate.lock();
        while gate.waiting == 0 {
            self.changed.wait(&mut gate);
        }
    }
}

impl statelog::store::Log for GateLog {
    fn append_batch(
        &self,
        records: &[(u8, &[u8])],
    ) -> Result<statelog_wal::Lsn, statelog::store::Error> {
        let mut gate = self.gate.lock();
        if gate.held {
            gate.waiting += 1;
            self.changed.notify_all();
            while gate.held {
                self.changed.wait(&mut gate);
            }
            gate.waiting -= 1;
        }
        drop(gate);
        self.log.append_batch(records)
    }

    fn read(
        &self,
        lsn: statelog_wal::Lsn,
    ) -> Result<Option<(u8, Vec<u8>)>, statelog::store::Error> {
        self.log.read(lsn)
    }

    fn scan(&self, visit: &mut statelog::store::Visit<'_>) -> Result<(), statelog::store::Error> {
        self.log.scan(visit)
    }
}

/// A long poll that finds a task queued claims it with a commit that waits for the log. On a
/// multi-threaded runtime that wait must not hold the worker thread: with one worker, another
/// task (a server's other connections) still runs while the claim's append is held, and the
/// poll gets its task once the log lets the append through.
#[test]
fn a_claim_waiting_for_the_log_does_not_hold_the_runtime_s_worker() {
    let log = std::sync::Arc::new(GateLog::default());
    let options = statelog::engine::EngineOptions {
        clock: std::sync::Arc::new(statelog::clock::ManualClock::new(engine_common::START_MS)),
        background_timers: false,
        ..statelog::engine::EngineOptions::default()
    };
    let engine = Engine::open_with_log(log.clone(), options).expect("opens");
    let activity = engine.create_activity("work").expect("activity");
    engine
        .create_state_machine("m", &machine(&activity.activity_arn, ""), None)
        .expect("machine");
    let arn = start(&engine, "e", json!({"job": 1}));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    log.hold(true);
    let poll = {
        let engine = engine.clone();
        let activity_arn = activity.activity_arn.clone();
        runtime.spawn(async move { engine.get_activity_task(&activity_arn, Some("w")).await })
    };
    log.wait_for_a_held_append();
    // The other task reports on a std channel, waited for with a std timeout: the runtime's
    // own timers need a free worker too.
    let (sender, receiver) = std::sync::mpsc::channel();
    runtime.spawn(async move { sender.send(42).expect("the test waits") });
    let other = receiver.recv_timeout(std::time::Duration::from_secs(30));
    // Let the claim through before judging, so that a failure does not leave it held.
    log.hold(false);
    assert_eq!(other, Ok(42), "another task ran while the claim waited");
    let task = runtime
        .block_on(poll)
        .expect("joins")
        .expect("polls")
        .expect("the queued task");
    assert!(!task.task_token.is_empty());
    assert!(event_types(&engine, &arn).contains(&"ActivityStarted".to_string()));
}
