//! `.waitForTaskToken` end to end on the engine, on the manual clock: the token reaches the
//! integration through `$$.Task.Token`, `send_task_success`/`failure`/`heartbeat` answer it,
//! heartbeats and timeouts fail the task with `States.HeartbeatTimeout`/`States.Timeout`, a
//! retried attempt gets a new token while the old one answers `TaskTimedOut`, forged, damaged
//! and foreign tokens are `InvalidToken`, and a parked task survives a restart.

use crate::engine_common;

use std::sync::Arc;

use engine_common::{event_types, Harness};
use parking_lot::Mutex;
use serde_json::{json, Value};
use statelog::engine::{
    Engine, EngineOptions, Error, ExecutionStatus, HistoryQuery, OsRandom, RandomSource,
};
use statelog::history::EventDetails;
use statelog::store::{Error as StoreError, Log, MemoryLog, Visit};
use statelog_wal::Lsn;

const SEND: &str = "arn:aws:states:::sqs:sendMessage.waitForTaskToken";

/// Tokens the fake queue received, in order, and how many calls it had.
#[derive(Clone, Default)]
struct Queue {
    tokens: Arc<Mutex<Vec<String>>>,
}

impl Queue {
    fn register(&self, engine: &Engine) {
        let tokens = self.tokens.clone();
        engine.register_integration(SEND, move |input: Value, _context: Value| {
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

    fn calls(&self) -> usize {
        self.tokens.lock().len()
    }

    fn last(&self) -> String {
        self.tokens
            .lock()
            .last()
            .cloned()
            .expect("a token was sent")
    }
}

fn machine(extra: &str) -> String {
    format!(
        r#"{{"StartAt":"Ask","States":{{
            "Ask":{{"Type":"Task","Resource":"{SEND}",
                "Parameters":{{"QueueUrl":"q","MessageBody":{{"Message.$":"$.m","TaskToken.$":"$$.Task.Token"}}}}
                {extra},
                "Next":"Done"}},
            "Done":{{"Type":"Pass","End":true}}}}}}"#
    )
}

/// An engine over `log` with the fake queue registered and the machine `waiter` created.
fn open_waiter(log: Arc<dyn Log>, options: EngineOptions) -> (Engine, Queue) {
    let engine = Engine::open_with_log(log, options).expect("opens");
    let queue = Queue::default();
    queue.register(&engine);
    engine
        .create_state_machine("waiter", &machine(""), None)
        .expect("machine");
    (engine, queue)
}

fn start(h: &Harness, definition: &str) -> String {
    h.engine
        .create_state_machine("waiter", definition, None)
        .expect("machine");
    let arn = h
        .engine
        .start_execution("waiter", Some("e1"), r#"{"m":"hello"}"#)
        .expect("start")
        .execution_arn;
    h.engine.wait_idle();
    arn
}

fn status(h: &Harness, arn: &str) -> ExecutionStatus {
    h.engine.describe_execution(arn).expect("describe").status
}

#[test]
fn a_token_round_trip_completes_the_task_once() {
    let h = Harness::new();
    let queue = Queue::default();
    queue.register(&h.engine);
    let arn = start(&h, &machine(""));
    assert_eq!(queue.calls(), 1);
    let token = queue.last();
    assert!(token.len() <= 2048 && token.len() >= 22, "{token}");
    assert!(token
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)));
    assert_eq!(
        event_types(&h.engine, &arn),
        [
            "ExecutionStarted",
            "TaskStateEntered",
            "TaskScheduled",
            "TaskStarted",
            "TaskSubmitted"
        ]
    );
    assert_eq!(status(&h, &arn), ExecutionStatus::Running);
    // The parked task needs nothing but the execution's own deadline.
    let open_deadline = h.engine.next_timer_due_ms();
    assert!(open_deadline.is_some_and(|due| due >= h.start_ms + 364 * 24 * 3600 * 1000));

    h.engine
        .send_task_success(&token, r#"{"answer":42}"#)
        .expect("first answer");
    let done = h.engine.describe_execution(&arn).expect("describe");
    assert_eq!(done.status, ExecutionStatus::Succeeded);
    assert_eq!(done.output.as_ref(), Some(&json!({"answer": 42})));
    let types = event_types(&h.engine, &arn);
    assert_eq!(
        types[5..],
        [
            "TaskSucceeded",
            "TaskStateExited",
            "PassStateEntered",
            "PassStateExited",
            "ExecutionSucceeded"
        ]
    );
    // The token was in the recorded parameters, as AWS shows it.
    let history = h
        .engine
        .get_execution_history(&arn, &HistoryQuery::default())
        .expect("history");
    let EventDetails::TaskScheduled(scheduled) = &history.events[2].details else {
        panic!("event 3 is TaskScheduled");
    };
    assert_eq!(
        scheduled.parameters["MessageBody"]["TaskToken"],
        json!(token)
    );
    assert_eq!(scheduled.resource, "sendMessage.waitForTaskToken");
    let rendered = history.to_aws_json().to_string();
    assert!(
        !rendered.contains("task_token"),
        "bookkeeping is not rendered"
    );

    // Answered twice: the second is TaskTimedOut and changes nothing.
    for second in [
        h.engine.send_task_success(&token, "1"),
        h.engine.send_task_failure(&token, "E", "c"),
        h.engine.send_task_heartbeat(&token),
    ] {
        let error = second.expect_err("a closed task's token is refused");
        assert!(matches!(error, Error::TaskTimedOut { .. }), "{error}");
        assert_eq!(error.aws_name(), "TaskTimedOut");
    }
    assert_eq!(event_types(&h.engine, &arn).len(), types.len());
}

#[test]
fn forged_damaged_and_foreign_tokens_are_invalid() {
    let h = Harness::new();
    let queue = Queue::default();
    queue.register(&h.engine);
    let arn = start(&h, &machine(""));
    let token = queue.last();
    let mut altered = token.clone().into_bytes();
    altered[3] = if altered[3] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).expect("ascii");
    let (secret, rest) = token.split_once('.').expect("three parts");
    let other_task = format!("{secret}.{}", rest.replace(".3", ".4"));
    let cases = [
        "".to_string(),
        "not-a-token".to_string(),
        altered,
        token[..token.len() - 1].to_string(),
        format!("{token}0"),
        other_task,
        "x".repeat(3000),
    ];
    for case in &cases {
        let error = h.engine.send_task_success(case, "{}").expect_err("refused");
        assert!(
            matches!(error, Error::InvalidTaskToken { .. }),
            "{case}: {error}"
        );
        assert_eq!(error.aws_name(), "InvalidToken");
        assert!(
            !error.to_string().contains(secret),
            "the secret is not echoed"
        );
    }
    // The right token from another namespace is as unknown as a forged one.
    let foreign = h
        .engine
        .send_task_success_in("111111111111", &token, "{}")
        .expect_err("foreign namespace");
    assert!(matches!(foreign, Error::InvalidTaskToken { .. }));
    let foreign = h
        .engine
        .send_task_heartbeat_in("111111111111", &token)
        .expect_err("foreign namespace");
    assert!(matches!(foreign, Error::InvalidTaskToken { .. }));
    // Bad output is InvalidOutput and leaves the task waiting.
    let bad = h
        .engine
        .send_task_success(&token, "{not json")
        .expect_err("bad output");
    assert_eq!(bad.aws_name(), "InvalidOutput");
    assert_eq!(status(&h, &arn), ExecutionStatus::Running);
    h.engine
        .send_task_success(&token, "{}")
        .expect("the genuine token still works");
    assert_eq!(status(&h, &arn), ExecutionStatus::Succeeded);
}

#[test]
fn heartbeat_timeout_then_retry_then_success_with_the_second_token() {
    let h = Harness::new();
    let queue = Queue::default();
    queue.register(&h.engine);
    let extra = r#","HeartbeatSeconds":10,
        "Retry":[{"ErrorEquals":["States.HeartbeatTimeout"],"IntervalSeconds":2,"MaxAttempts":1}]"#;
    let arn = start(&h, &machine(extra));
    let first = queue.last();

    // Heartbeats keep it alive past its interval and write nothing.
    h.tick(8_000);
    h.engine.send_task_heartbeat(&first).expect("heartbeat");
    let before = event_types(&h.engine, &arn).len();
    h.tick(8_000);
    assert_eq!(event_types(&h.engine, &arn).len(), before, "no event");
    assert_eq!(status(&h, &arn), ExecutionStatus::Running);

    // Then silence: the heartbeat clock runs out.
    h.tick(2_000);
    let types = event_types(&h.engine, &arn);
    assert_eq!(types.last().map(String::as_str), Some("TaskTimedOut"));
    let history = h
        .engine
        .get_execution_history(&arn, &HistoryQuery::default())
        .expect("history");
    let EventDetails::TaskTimedOut(timed_out) = &history.events.last().expect("event").details
    else {
        panic!("TaskTimedOut");
    };
    assert_eq!(timed_out.error.as_deref(), Some("States.HeartbeatTimeout"));

    // The backoff, then the second attempt with a new token.
    h.tick(2_000);
    assert_eq!(queue.calls(), 2);
    let second = queue.last();
    assert_ne!(first, second);
    let late = h
        .engine
        .send_task_success(&first, r#""late""#)
        .expect_err("the first token is dead");
    assert!(matches!(late, Error::TaskTimedOut { .. }), "{late}");
    h.engine
        .send_task_success(&second, r#""on time""#)
        .expect("second token");
    let done = h.engine.describe_execution(&arn).expect("describe");
    assert_eq!(done.status, ExecutionStatus::Succeeded);
    assert_eq!(done.output, Some(json!("on time")));
}

#[test]
fn a_failure_sent_with_the_token_is_caught() {
    let h = Harness::new();
    let queue = Queue::default();
    queue.register(&h.engine);
    let extra =
        r#","Catch":[{"ErrorEquals":["Payment.Declined"],"ResultPath":"$.err","Next":"Done"}]"#;
    let arn = start(&h, &machine(extra));
    h.engine
        .send_task_failure(&queue.last(), "Payment.Declined", "card expired")
        .expect("failure sent");
    let done = h.engine.describe_execution(&arn).expect("describe");
    assert_eq!(done.status, ExecutionStatus::Succeeded);
    assert_eq!(
        done.output.expect("output")["err"],
        json!({"Error": "Payment.Declined", "Cause": "card expired"})
    );
    assert!(event_types(&h.engine, &arn).contains(&"TaskFailed".to_string()));
}

#[test]
fn timeout_seconds_bounds_the_task_whatever_the_heartbeats() {
    let h = Harness::new();
    let queue = Queue::default();
    queue.register(&h.engine);
    let arn = start(
        &h,
        &machine(r#","TimeoutSeconds":30,"HeartbeatSeconds":10"#),
    );
    let token = queue.last();
    for _ in 0..3 {
        h.tick(9_000);
        h.engine.send_task_heartbeat(&token).expect("heartbeat");
    }
    h.tick(3_000);
    let done = h.engine.describe_execution(&arn).expect("describe");
    assert_eq!(done.status, ExecutionStatus::Failed);
    assert_eq!(done.error.as_deref(), Some("States.Timeout"));
    let late = h
        .engine
        .send_task_success(&token, "{}")
        .expect_err("closed");
    assert!(matches!(late, Error::TaskTimedOut { .. }));
}

#[test]
fn a_parked_task_survives_a_restart_and_is_not_submitted_again() {
    let h = Harness::new();
    let queue = Queue::default();
    queue.register(&h.engine);
    let arn = start(&h, &machine(r#","HeartbeatSeconds":60"#));
    let token = queue.last();

    let h = h.restart(1_000);
    queue.register(&h.engine);
    h.engine.wait_idle();
    assert_eq!(queue.calls(), 1, "a submitted task is not sent again");
    assert_eq!(status(&h, &arn), ExecutionStatus::Running);
    h.engine
        .send_task_heartbeat(&token)
        .expect("token folded back");

    let h = h.restart(1_000);
    queue.register(&h.engine);
    // The heartbeat clock restarted with the engine: 60 s of silence time it out.
    h.tick(60_000);
    let types = event_types(&h.engine, &arn);
    assert_eq!(types.last().map(String::as_str), Some("ExecutionFailed"));
    let late = h
        .engine
        .send_task_success(&token, "{}")
        .expect_err("closed");
    assert!(matches!(late, Error::TaskTimedOut { .. }));
}

#[test]
fn parked_tasks_answered_after_a_restart_complete() {
    let h = Harness::new();
    let queue = Queue::default();
    queue.register(&h.engine);
    h.engine
        .create_state_machine("waiter", &machine(""), None)
        .expect("machine");
    let arns: Vec<String> = (0..20)
        .map(|i| {
            h.engine
                .start_execution("waiter", Some(&format!("e{i}")), r#"{"m":"x"}"#)
                .expect("start")
                .execution_arn
        })
        .collect();
    h.engine.wait_idle();
    let tokens = queue.tokens.lock().clone();
    assert_eq!(tokens.len(), 20);
    let h = h.restart(5_000);
    for token in &tokens {
        h.engine.send_task_success(token, "true").expect("answer");
    }
    for arn in &arns {
        assert_eq!(status(&h, arn), ExecutionStatus::Succeeded);
    }
    assert_eq!(h.engine.open_execution_count(), 0);
}

/// A random source the test breaks and repairs; it draws from the OS while it works.
#[derive(Debug, Default)]
struct Breakable {
    broken: std::sync::atomic::AtomicBool,
}

impl Breakable {
    fn set_broken(&self, broken: bool) {
        self.broken
            .store(broken, std::sync::atomic::Ordering::SeqCst);
    }
}

impl RandomSource for Breakable {
    fn fill(&self, bytes: &mut [u8]) -> Result<(), std::io::Error> {
        if self.broken.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(std::io::Error::other("the test broke the generator"));
        }
        OsRandom.fill(bytes)
    }
}

/// How many records `log` holds.
fn record_count(log: &MemoryLog) -> usize {
    let mut count = 0;
    log.scan(&mut |_, _, _| {
        count += 1;
        Ok(())
    })
    .expect("the memory log scans");
    count
}

/// With the random source failing, a start that needs a token (its first state waits for
/// one) or a generated name fails with `RandomSourceFailed` and writes nothing; no fixed
/// fallback token or name is ever issued. Once the source works again, the same start works.
#[test]
fn a_failing_random_source_fails_token_and_name_generation_and_writes_nothing() {
    let log = Arc::new(MemoryLog::new());
    let source = Arc::new(Breakable::default());
    let clock = statelog::clock::ManualClock::new(engine_common::START_MS);
    let options = EngineOptions {
        clock: Arc::new(clock),
        background_timers: false,
        random_source: source.clone(),
        ..EngineOptions::default()
    };
    let (engine, queue) = open_waiter(log.clone(), options);
    engine
        .create_state_machine(
            "plain",
            r#"{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}"#,
            None,
        )
        .expect("machine");
    let before = record_count(&log);

    source.set_broken(true);
    let refused = engine
        .start_execution("waiter", Some("e1"), r#"{"m":"hello"}"#)
        .expect_err("no token can be made");
    assert!(
        matches!(refused, Error::RandomSourceFailed { .. }),
        "{refused}"
    );
    assert_eq!(refused.aws_name(), "InternalFailure");
    let unnamed = engine
        .start_execution("plain", None, "{}")
        .expect_err("no name can be made");
    assert!(
        matches!(unnamed, Error::RandomSourceFailed { .. }),
        "{unnamed}"
    );
    engine.wait_idle();
    assert_eq!(record_count(&log), before, "a refused start writes nothing");
    assert_eq!(queue.calls(), 0, "no token went out");
    let arn = engine.execution_arn("waiter", "e1");
    assert!(
        engine.describe_execution(&arn).is_err(),
        "no execution exists"
    );
    // What draws nothing still works.
    engine
        .start_execution("plain", Some("named"), "{}")
        .expect("a named Pass execution draws nothing");

    source.set_broken(false);
    engine
        .start_execution("waiter", Some("e1"), r#"{"m":"hello"}"#)
        .expect("the source works again");
    engine.wait_idle();
    assert_eq!(queue.calls(), 1);
    let token = queue.last();
    engine
        .send_task_success(&token, "{}")
        .expect("a real token");
    assert_eq!(
        engine.describe_execution(&arn).expect("describe").status,
        ExecutionStatus::Succeeded
    );
}

/// A memory log that counts the records read back by LSN (history reads).
#[derive(Debug, Default)]
struct CountingLog {
    log: MemoryLog,
    reads: std::sync::atomic::AtomicUsize,
}

impl CountingLog {
    fn reads(&self) -> usize {
        self.reads.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Log for CountingLog {
    fn append_batch(&self, records: &[(u8, &[u8])]) -> Result<Lsn, StoreError> {
        self.log.append_batch(records)
    }

    fn read(&self, lsn: Lsn) -> Result<Option<(u8, Vec<u8>)>, StoreError> {
        self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.log.read(lsn)
    }

    fn scan(&self, visit: &mut Visit<'_>) -> Result<(), StoreError> {
        self.log.scan(visit)
    }
}

/// A forged token that names a real, closed execution of 24,000 events (3,000 answered task
/// attempts, one log record per decision) is refused as before, and checking it reads at most
/// one record: the one the named task's event is in, never the whole history. The genuine
/// token of a closed task is still `TaskTimedOut`, at the same cost.
#[test]
fn checking_a_token_reads_one_record_whatever_the_history_it_names() {
    const ROUNDS: usize = 3_000;
    let log = Arc::new(CountingLog::default());
    let options = EngineOptions {
        clock: Arc::new(statelog::clock::ManualClock::new(engine_common::START_MS)),
        background_timers: false,
        entropy_seed: Some(7),
        ..EngineOptions::default()
    };
    let engine = Engine::open_with_log(log.clone(), options).expect("opens");
    let queue = Queue::default();
    queue.register(&engine);
    let definition = format!(
        r#"{{"StartAt":"Ask","States":{{
            "Ask":{{"Type":"Task","Resource":"{SEND}",
                "Parameters":{{"QueueUrl":"q","MessageBody":{{"TaskToken.$":"$$.Task.Token"}}}},
                "Next":"Again"}},
            "Again":{{"Type":"Choice","Choices":[{{"Variable":"$.more","BooleanEquals":true,"Next":"Ask"}}],
                "Default":"Done"}},
            "Done":{{"Type":"Succeed"}}}}}}"#
    );
    engine
        .create_state_machine("long", &definition, None)
        .expect("machine");
    let arn = engine
        .start_execution("long", Some("e"), "{}")
        .expect("start")
        .execution_arn;
    engine.wait_idle();
    for round in 1..=ROUNDS {
        let more = if round < ROUNDS { "true" } else { "false" };
        engine
            .send_task_success(&queue.last(), &format!(r#"{{"more":{more}}}"#))
            .expect("answer");
        engine.wait_idle();
    }
    let closed = engine.describe_execution(&arn).expect("describe");
    assert_eq!(closed.status, ExecutionStatus::Succeeded);
    let page = engine
        .get_execution_history(
            &arn,
            &HistoryQuery {
                max_results: 1,
                reverse_order: true,
                ..HistoryQuery::default()
            },
        )
        .expect("history");
    let events = page.events[0].id.0;
    assert!(events >= 24_000, "{events} events");

    let token = queue.last();
    let (secret, rest) = token.split_once('.').expect("three parts");
    let mut forged_secret = secret.to_string().into_bytes();
    forged_secret[0] = if forged_secret[0] == b'A' { b'B' } else { b'A' };
    let forged_secret = String::from_utf8(forged_secret).expect("ascii");
    let (execution_part, task_part) = rest.split_once('.').expect("three parts");
    let forged = [
        // The last task's id with another secret.
        format!("{forged_secret}.{rest}"),
        // The first task's id.
        format!("{forged_secret}.{execution_part}.3"),
        // An event that is no task.
        format!("{secret}.{execution_part}.1"),
        // Past the end of the history: no read at all.
        format!("{secret}.{execution_part}.{}", u32::MAX),
    ];
    assert_ne!(task_part, "3");
    for case in &forged {
        let before = log.reads();
        let refused = engine
            .send_task_success(case, "{}")
            .expect_err("a forged token is refused");
        assert!(
            matches!(refused, Error::InvalidTaskToken { .. }),
            "{refused}"
        );
        assert!(
            log.reads() - before <= 1,
            "a forged token read {} records",
            log.reads() - before
        );
    }
    let before = log.reads();
    let late = engine
        .send_task_heartbeat(&token)
        .expect_err("the task closed");
    assert!(matches!(late, Error::TaskTimedOut { .. }), "{late}");
    assert_eq!(
        log.reads() - before,
        1,
        "one record read for a genuine late token"
    );
}

/// A memory log whose notified appends, once [`StoppingLog::hold`] is called, stay in flight
/// until [`StoppingLog::stop`] (a replicated log whose acknowledgement never comes): then each
/// is told the error, and every later append and sync fails, as a stopped JetStream log does.
#[derive(Default)]
struct StoppingLog {
    log: MemoryLog,
    holding: std::sync::atomic::AtomicBool,
    held: Mutex<Vec<statelog::store::OnDurable>>,
    stopped: std::sync::atomic::AtomicBool,
    /// Told at each notified append.
    appended: Mutex<Option<std::sync::mpsc::Sender<()>>>,
}

impl std::fmt::Debug for StoppingLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoppingLog")
            .field("log", &self.log)
            .field("held", &self.held.lock().len())
            .field("stopped", &self.stopped)
            .finish()
    }
}

impl StoppingLog {
    fn stopped_error() -> StoreError {
        StoreError::Replicated {
            cause: Arc::new(std::io::Error::other("the acknowledgement never came")),
            retryable: false,
        }
    }

    fn check(&self) -> Result<(), StoreError> {
        if self.stopped.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(Self::stopped_error());
        }
        Ok(())
    }

    fn hold(&self) {
        self.holding
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    fn stop(&self) {
        self.stopped
            .store(true, std::sync::atomic::Ordering::SeqCst);
        for on_durable in self.held.lock().drain(..) {
            on_durable(Err(Self::stopped_error()));
        }
    }
}

impl Log for StoppingLog {
    fn append_batch(&self, records: &[(u8, &[u8])]) -> Result<Lsn, StoreError> {
        self.check()?;
        self.log.append_batch(records)
    }

    fn read(&self, lsn: Lsn) -> Result<Option<(u8, Vec<u8>)>, StoreError> {
        self.log.read(lsn)
    }

    fn scan(&self, visit: &mut Visit<'_>) -> Result<(), StoreError> {
        self.log.scan(visit)
    }

    fn append(
        &self,
        records: &[(u8, &[u8])],
        durability: statelog::store::Durability,
    ) -> Result<Lsn, StoreError> {
        self.check()?;
        self.log.append(records, durability)
    }

    fn append_notify(
        &self,
        records: &[(u8, &[u8])],
        on_durable: statelog::store::OnDurable,
    ) -> Result<Lsn, StoreError> {
        self.check()?;
        if !self.holding.load(std::sync::atomic::Ordering::SeqCst) {
            return self.log.append_notify(records, on_durable);
        }
        let first = self
            .log
            .append(records, statelog::store::Durability::Unsynced)?;
        self.held.lock().push(on_durable);
        if let Some(appended) = self.appended.lock().as_ref() {
            let _ = appended.send(());
        }
        Ok(first)
    }

    fn notifies(&self) -> bool {
        true
    }

    fn commit_in_flight(&self) -> bool {
        true
    }

    fn sync(&self, upto: Lsn) -> Result<Lsn, StoreError> {
        self.check()?;
        self.log.sync(upto)
    }

    fn stats(&self) -> statelog::store::LogStats {
        self.log.stats()
    }

    fn refusal(&self) -> Option<StoreError> {
        self.check().err()
    }
}

/// An answer's notified append is in flight when the log stops (its acknowledgement lost):
/// the answer fails with the log's error, and its re-send must not be told `TaskTimedOut` on
/// the strength of the closing the log never kept: it gets the log's refusal too (the server's
/// `ServiceUnavailable`), so the client tries again where the partition is opened anew.
#[test]
fn a_resent_answer_is_not_late_on_the_strength_of_an_answer_the_log_lost() {
    let log = Arc::new(StoppingLog::default());
    let (appended, appends) = std::sync::mpsc::channel();
    *log.appended.lock() = Some(appended);
    let options = EngineOptions {
        clock: Arc::new(statelog::clock::ManualClock::new(engine_common::START_MS)),
        background_timers: false,
        ..EngineOptions::default()
    };
    let (engine, queue) = open_waiter(log.clone(), options);
    let arn = engine
        .start_execution("waiter", Some("e1"), r#"{"m":"hello"}"#)
        .expect("start")
        .execution_arn;
    engine.wait_idle();
    let token = queue.last();
    let account = arn.split(':').nth(4).expect("an account").to_string();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");

    log.hold();
    let first = {
        let (engine, account, token) = (engine.clone(), account.clone(), token.clone());
        runtime.spawn(async move {
            engine
                .send_task_success_awaiting(&account, &token, r#"{"n":1}"#)
                .await
        })
    };
    appends
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("the answer's notified append");
    log.stop();
    let first = runtime.block_on(first).expect("the first answer ran");
    match &first {
        Err(error) => assert!(error.log_refusal().is_some(), "{error:?}"),
        Ok(()) => panic!("an answer the log lost was acknowledged"),
    }

    let again = runtime.block_on(engine.send_task_success_awaiting(&account, &token, r#"{"n":1}"#));
    match again {
        Err(Error::TaskTimedOut { .. }) => {
            panic!("the re-send was told the task closed, on the strength of a lost answer")
        }
        Err(error) => assert!(error.log_refusal().is_some(), "{error:?}"),
        Ok(()) => panic!("a stopped log acknowledged the re-send"),
    }
}
