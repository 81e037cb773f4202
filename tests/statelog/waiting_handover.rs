//! An activity task scheduled while a worker long-polls its list is claimed for that worker in
//! the commit that schedules it: `ActivityScheduled` and `ActivityStarted` (with the worker's
//! name) are durable before the token leaves, in one commit; the claim survives a restart and
//! the heartbeat clock is armed. No test sleeps: the poll is served by the hand-off.
//!
//! Token tasks, both orders of the handler's answer and the token's answer, made deterministic
//! by a handler that returns only when the test releases it: recorded first, the answer takes
//! one commit after `TaskSubmitted`; while the call is still pending, the answer completes the
//! task without `TaskSubmitted` and the call's later answer is stale. (The third order, the call
//! returned but its answer not yet recorded, is a unit test in `engine/src/tokens.rs`: it needs
//! the engine's kept answers.)

use crate::engine_common;

use engine_common::block_on;

use engine_common::{event_types, Harness, ONE_TASK_SUBMITTED, ONE_TASK_SUCCEEDED};
use statelog::engine::{ActivityTask, Engine, ExecutionStatus, HistoryQuery};
use statelog::history::EventDetails;

/// Registers a long poll for `worker`, then starts execution `name`; returns the polled task.
fn poll_then_start(engine: &Engine, activity: &str, name: &str, worker: &str) -> ActivityTask {
    let engine = engine.clone();
    let activity = activity.to_string();
    let name = name.to_string();
    let worker = worker.to_string();
    block_on(async move {
        let poller = engine.clone();
        let poll =
            tokio::spawn(async move { poller.get_activity_task(&activity, Some(&worker)).await });
        tokio::task::yield_now().await;
        engine
            .start_execution("m", Some(&name), "{}")
            .expect("start");
        poll.await.expect("joined")
    })
    .expect("poll")
    .expect("a task")
}

#[test]
fn a_waiting_worker_gets_the_task_claimed_in_the_scheduling_commit() {
    let h = Harness::new();
    let activity = h.engine.create_activity("work").expect("activity");
    let definition = format!(
        r#"{{"StartAt":"Work","States":{{"Work":{{"Type":"Task","Resource":"{}","HeartbeatSeconds":30,"End":true}}}}}}"#,
        activity.activity_arn
    );
    h.engine
        .create_state_machine("m", &definition, None)
        .expect("machine");
    let task = poll_then_start(&h.engine, &activity.activity_arn, "e1", "early");
    let arn = h.engine.execution_arn("m", "e1");
    assert_eq!(
        event_types(&h.engine, &arn),
        [
            "ExecutionStarted",
            "TaskStateEntered",
            "ActivityScheduled",
            "ActivityStarted"
        ]
    );
    let history = h
        .engine
        .get_execution_history(&arn, &HistoryQuery::default())
        .expect("history");
    let EventDetails::ActivityStarted(started) = &history.events[3].details else {
        panic!("ActivityStarted");
    };
    assert_eq!(started.worker_name.as_deref(), Some("early"));
    assert_eq!(h.engine.heartbeat_clock_count(), 1);
    assert_eq!(
        h.engine
            .task_list_pending_count("000000000000", &activity.activity_arn),
        0
    );
    // The claim is durable: after a restart the task is not offered again, the token answers.
    let h = h.restart(1_000);
    h.engine.create_activity("work").expect("activity again");
    assert_eq!(
        h.engine
            .task_list_pending_count("000000000000", &activity.activity_arn),
        0
    );
    h.engine
        .send_task_success(&task.task_token, r#"{"ok":1}"#)
        .expect("answer");
    let done = h.engine.wait_until_closed(&arn).expect("closes");
    assert_eq!(done.status, ExecutionStatus::Succeeded);
}

/// A log that counts its commits (one `append_batch` = one fdatasync on the WAL).
#[derive(Debug, Default)]
struct CountingLog {
    inner: statelog::store::MemoryLog,
    commits: std::sync::atomic::AtomicUsize,
}

impl statelog::store::Log for CountingLog {
    fn append_batch(
        &self,
        records: &[(u8, &[u8])],
    ) -> Result<statelog_wal::Lsn, statelog::store::Error> {
        self.commits
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.append_batch(records)
    }

    fn read(
        &self,
        lsn: statelog_wal::Lsn,
    ) -> Result<Option<(u8, Vec<u8>)>, statelog::store::Error> {
        self.inner.read(lsn)
    }

    fn scan(
        &self,
        visit: &mut (dyn FnMut(statelog_wal::Lsn, u8, &[u8]) -> Result<(), statelog::store::Error>
                  + '_),
    ) -> Result<(), statelog::store::Error> {
        self.inner.scan(visit)
    }
}

#[test]
fn the_round_trip_to_a_waiting_worker_takes_two_commits() {
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    let log = Arc::new(CountingLog::default());
    let clock = statelog::clock::ManualClock::new(engine_common::START_MS);
    let options = statelog::engine::EngineOptions {
        clock: Arc::new(clock),
        background_timers: false,
        ..Default::default()
    };
    let engine = Engine::open_with_log(log.clone(), options).expect("opens");
    let activity_arn = engine_common::one_activity_machine(&engine, "m");
    let before = log.commits.load(Ordering::SeqCst);
    let task = poll_then_start(&engine, &activity_arn, "e1", "w");
    assert_eq!(
        log.commits.load(Ordering::SeqCst) - before,
        1,
        "scheduled and claimed in one commit"
    );
    engine
        .send_task_success(&task.task_token, "{}")
        .expect("answer");
    assert_eq!(log.commits.load(Ordering::SeqCst) - before, 2);
    let arn = engine.execution_arn("m", "e1");
    assert_eq!(
        engine.describe_execution(&arn).expect("describe").status,
        ExecutionStatus::Succeeded
    );
}

/// Opens an engine over a commit-counting log, with a `.waitForTaskToken` queue integration
/// that hands every token to the returned receiver and then answers when the test releases it
/// (each call takes one release from the returned sender).
fn token_engine() -> (
    Engine,
    std::sync::Arc<CountingLog>,
    std::sync::mpsc::Receiver<String>,
    tokio::sync::mpsc::UnboundedSender<()>,
) {
    use std::sync::Arc;
    let log = Arc::new(CountingLog::default());
    let clock = statelog::clock::ManualClock::new(engine_common::START_MS);
    let options = statelog::engine::EngineOptions {
        clock: Arc::new(clock),
        background_timers: false,
        ..Default::default()
    };
    let engine = Engine::open_with_log(log.clone(), options).expect("opens");
    let (sender, tokens) = std::sync::mpsc::channel();
    let sender = parking_lot::Mutex::new(sender);
    let (release, released) = tokio::sync::mpsc::unbounded_channel::<()>();
    let released = Arc::new(tokio::sync::Mutex::new(released));
    engine.register_integration(
        "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
        move |input: serde_json::Value, _context: serde_json::Value| {
            let token = input["TaskToken"].as_str().unwrap_or_default().to_string();
            let _ = sender.lock().send(token);
            let released = released.clone();
            async move {
                released.lock().await.recv().await;
                Ok(serde_json::json!({"MessageId": "m"}))
            }
        },
    );
    engine
        .create_state_machine(
            "ask",
            r#"{"StartAt":"Ask","States":{"Ask":{"Type":"Task",
                "Resource":"arn:aws:states:::sqs:sendMessage.waitForTaskToken",
                "Parameters":{"TaskToken.$":"$$.Task.Token"},"End":true}}}"#,
            None,
        )
        .expect("machine");
    (engine, log, tokens, release)
}

#[test]
fn a_handler_answer_recorded_first_leaves_the_token_answer_one_commit() {
    use std::sync::atomic::Ordering;
    let (engine, log, tokens, release) = token_engine();
    let before = log.commits.load(Ordering::SeqCst);
    engine
        .start_execution("ask", Some("e"), "{}")
        .expect("start");
    let token = tokens.recv().expect("the token went out");
    release.send(()).expect("released");
    engine.wait_idle();
    let arn = engine.execution_arn("ask", "e");
    assert_eq!(event_types(&engine, &arn), ONE_TASK_SUBMITTED);
    assert_eq!(log.commits.load(Ordering::SeqCst) - before, 2);
    engine.send_task_success(&token, "{}").expect("answer");
    assert_eq!(log.commits.load(Ordering::SeqCst) - before, 3);
    assert_eq!(event_types(&engine, &arn), ONE_TASK_SUCCEEDED);
    assert!(matches!(
        engine.send_task_success(&token, "{}"),
        Err(statelog::engine::Error::TaskTimedOut { .. })
    ));
    assert!(engine.background_errors().is_empty());
}

/// The answer comes while the integration's call has not returned: `TaskSubmitted` records the
/// call's return (our reading of AWS; no recording shows this order), so the task completes
/// without it, and the call's answer, when it comes, is stale (recorded nowhere, the task
/// completes once).
#[test]
fn a_token_answer_while_the_handlers_call_is_pending_completes_the_task_once() {
    use std::sync::atomic::Ordering;
    let (engine, log, tokens, release) = token_engine();
    let before = log.commits.load(Ordering::SeqCst);
    engine
        .start_execution("ask", Some("e"), "{}")
        .expect("start");
    let token = tokens.recv().expect("the token went out");
    engine
        .send_task_success(&token, r#"{"x":1}"#)
        .expect("answer");
    let arn = engine.execution_arn("ask", "e");
    let expected = [
        "ExecutionStarted",
        "TaskStateEntered",
        "TaskScheduled",
        "TaskStarted",
        "TaskSucceeded",
        "TaskStateExited",
        "ExecutionSucceeded",
    ];
    assert_eq!(event_types(&engine, &arn), expected);
    assert_eq!(log.commits.load(Ordering::SeqCst) - before, 2);
    let recorded = engine.answers_recorded();
    release.send(()).expect("released");
    engine.wait_idle();
    assert_eq!(
        engine.answers_recorded(),
        recorded + 1,
        "the call's answer came"
    );
    assert_eq!(event_types(&engine, &arn), expected, "and changed nothing");
    assert_eq!(log.commits.load(Ordering::SeqCst) - before, 2);
    assert_eq!(
        engine.describe_execution(&arn).expect("describe").status,
        ExecutionStatus::Succeeded
    );
    assert!(engine.background_errors().is_empty());
}
