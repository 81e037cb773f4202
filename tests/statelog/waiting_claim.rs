//! A long poll that finds an activity task queued, and a worker's answer, commit without
//! blocking their thread. The poll's claim (`ActivityStarted`) is appended, and the poll
//! awaits the log's word that it is durable. Guarded here, on a single-threaded runtime over a disk whose syncs the test holds:
//! while the claim's sync is held, the runtime's one thread keeps running other tasks and the
//! poll has not returned (no token before the claim is durable); once the sync is let through
//! the poll returns the task, and a power loss right then keeps the claim. Without the
//! mechanism the poll's claim would wait out the held sync on the runtime's thread (the test
//! then fails at the hold's guard instead of hanging). The answer (`send_task_success_awaiting`)
//! likewise returns only once durable, the next task waits for that, and a request dropped
//! while it waits does not stop the execution. An async start (`start_execution_async`) on a
//! busy log answers, and hands the task its commit claimed to a waiting poller, only once
//! durable; so does a blocking start (`start_execution`) on a busy log, whose commit the log's
//! own thread makes while the start's thread waits for its word.

use crate::engine_common;

use std::io;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use engine_common::checked_history;
use statelog::clock::ManualClock;
use statelog::engine::{ActivityTask, Engine, EngineOptions};
use statelog::history::EventDetails;
use statelog::store::Log;
use statelog_wal::storage::sim::{CrashMode, SimStorage};
use statelog_wal::{Durability, Storage, StorageFile, Wal, WalOptions};

const DIR: &str = "/data";

/// How long a held sync waits for the test to let it through before it goes anyway: a guard
/// against a hang, never a timing assertion.
const HOLD_GUARD: Duration = Duration::from_secs(30);

/// Syncs wait while `held` is set. Each sync's thread is named in `syncers`, in order.
#[derive(Debug, Default)]
struct Hold {
    held: Mutex<bool>,
    released: Condvar,
    syncers: Mutex<Vec<String>>,
}

impl Hold {
    fn set(&self, held: bool) {
        *self.held.lock().expect("hold") = held;
        self.released.notify_all();
    }
    fn pass(&self) {
        let thread = std::thread::current();
        self.syncers
            .lock()
            .expect("syncers")
            .push(thread.name().unwrap_or("unnamed").to_string());
        let held = self.held.lock().expect("hold");
        let _ = self
            .released
            .wait_timeout_while(held, HOLD_GUARD, |held| *held)
            .expect("hold");
    }
}

#[derive(Debug)]
struct HeldFile {
    inner: Arc<dyn StorageFile>,
    hold: Arc<Hold>,
}

impl StorageFile for HeldFile {
    fn write_at(&self, offset_bytes: u64, buf: &[u8]) -> io::Result<()> {
        self.inner.write_at(offset_bytes, buf)
    }
    fn read_at(&self, offset_bytes: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read_at(offset_bytes, buf)
    }
    fn set_len(&self, len_bytes: u64) -> io::Result<()> {
        self.inner.set_len(len_bytes)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.hold.pass();
        self.inner.sync_data()
    }
    fn sync_all(&self) -> io::Result<()> {
        self.hold.pass();
        self.inner.sync_all()
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn map(&self) -> io::Result<statelog_wal::Mapping> {
        self.inner.map()
    }
}

/// The simulated disk with syncs the test can hold.
#[derive(Debug)]
struct HeldStorage {
    inner: SimStorage,
    hold: Arc<Hold>,
}

impl HeldStorage {
    fn wrap(&self, file: Arc<dyn StorageFile>) -> Arc<dyn StorageFile> {
        Arc::new(HeldFile {
            inner: file,
            hold: self.hold.clone(),
        })
    }
}

impl Storage for HeldStorage {
    fn create(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>> {
        Ok(self.wrap(self.inner.create(path)?))
    }
    fn open(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>> {
        Ok(self.wrap(self.inner.open(path)?))
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.inner.remove(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.sync_dir(dir)
    }
}

fn options() -> EngineOptions {
    EngineOptions {
        clock: Arc::new(ManualClock::new(engine_common::START_MS)),
        background_timers: false,
        entropy_seed: Some(16),
        worker_threads: 1,
        ..EngineOptions::default()
    }
}

fn open(storage: Arc<dyn Storage>) -> Engine {
    open_with_log(storage).0
}

/// The engine and its log (whose `commit_in_flight` the tests watch).
fn open_with_log(storage: Arc<dyn Storage>) -> (Engine, Arc<dyn Log>) {
    let wal_options = WalOptions {
        durability: Durability::GroupCommit,
        segment_size_bytes: 64 * 1024,
        background_preparation: false,
        ..WalOptions::default()
    };
    let (wal, _) = Wal::open_with_storage(storage, DIR, wal_options).expect("opens");
    let log: Arc<dyn Log> = Arc::new(wal);
    let engine = Engine::open_with_log(log.clone(), options()).expect("engine opens");
    (engine, log)
}

/// A one-Pass machine: its start is one commit.
const IDLE: &str = r#"{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}"#;

/// Holds the syncs, and starts an execution of `idle` on another thread, whose commit is then
/// in flight (held in its sync): what a busy log looks like, where a claim or an answer rides
/// on the commit in flight instead of committing in place (`Engine::notify_pays`).
fn hold_with_a_commit_in_flight(
    engine: &Engine,
    log: &Arc<dyn Log>,
    hold: &Hold,
) -> std::thread::JoinHandle<()> {
    hold.set(true);
    let starting = engine.clone();
    let other = std::thread::spawn(move || {
        starting
            .start_execution("idle", Some("other"), "{}")
            .expect("the other start");
    });
    while !log.commit_in_flight() {
        std::thread::yield_now();
    }
    other
}

/// An engine over the simulated disk with syncs the test can hold, with the [`IDLE`] machine
/// that [`hold_with_a_commit_in_flight`] starts: the disk, the hold, the engine and its log.
fn open_held() -> (SimStorage, Arc<Hold>, Engine, Arc<dyn Log>) {
    let disk = SimStorage::new();
    let hold = Arc::new(Hold::default());
    let (engine, log) = open_with_log(Arc::new(HeldStorage {
        inner: disk.clone(),
        hold: hold.clone(),
    }));
    engine
        .create_state_machine("idle", IDLE, None)
        .expect("machine");
    (disk, hold, engine, log)
}

/// A runtime on the test's own thread (with time, for the polls' timeouts).
fn one_thread_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime")
}

/// With the start's sync held: neither the start nor the poll waiting for its first task is done.
fn nothing_answered_before_durable(start_finished: bool, poll_finished: bool) {
    assert!(!start_finished, "no start answered before it is durable");
    assert!(
        !poll_finished,
        "no task before the start's claim is durable"
    );
}

/// `task` is the first task of the start of `execution_arn` (input `{"job": 1}`).
fn the_starts_first_task(task: &ActivityTask, execution_arn: &str) {
    assert_eq!(task.execution_arn, execution_arn);
    assert_eq!(task.input, r#"{"job":1}"#);
}

/// Drops `engine`, loses power (unsynced writes dropped), reopens, and checks that
/// `execution_arn`'s history holds exactly one claim, by worker `w`; returns that history.
fn claimed_by_w_after_a_power_loss(
    engine: Engine,
    disk: &SimStorage,
    execution_arn: &str,
) -> Vec<statelog::history::HistoryEvent> {
    drop(engine);
    let image = disk.crash(CrashMode::DropUnsynced);
    let reopened = open(Arc::new(image));
    let history = checked_history(&reopened, execution_arn);
    let claimed: Vec<_> = history
        .iter()
        .filter_map(|e| match &e.details {
            EventDetails::ActivityStarted(started) => Some(started.worker_name.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(claimed, vec![Some("w".to_string())]);
    history
}

#[test]
fn a_queued_task_is_claimed_without_blocking_the_poll_and_handed_out_once_durable() {
    let (disk, hold, engine, log) = open_held();
    let activity = engine.create_activity("work").expect("activity");
    let definition = format!(
        r#"{{"StartAt":"Work","States":{{"Work":{{"Type":"Task","Resource":"{}","HeartbeatSeconds":30,"End":true}}}}}}"#,
        activity.activity_arn
    );
    engine
        .create_state_machine("m", &definition, None)
        .expect("machine");
    let started = engine.start_execution("m", Some("e"), "{}").expect("start");
    let account = activity.activity_arn.split(':').nth(4).expect("account");
    assert_eq!(
        engine.task_list_pending_count(account, &activity.activity_arn),
        1,
        "no poller waited: the task is queued"
    );
    let other = hold_with_a_commit_in_flight(&engine, &log, &hold);
    let runtime = one_thread_runtime();
    let task = runtime.block_on(async {
        let poller = engine.clone();
        let arn = activity.activity_arn.clone();
        let poll = tokio::spawn(async move { poller.get_activity_task(&arn, Some("w")).await });
        // The poll runs on this one thread until it awaits the claim's durability.
        let mut turns = 0;
        while engine.task_list_pending_count(account, &activity.activity_arn) > 0 && turns < 100 {
            tokio::task::yield_now().await;
            turns += 1;
        }
        assert_eq!(
            engine.task_list_pending_count(account, &activity.activity_arn),
            0,
            "the poll took the task"
        );
        // Still this thread's turn, with the claim's sync held: the poll did not block it, and
        // no token left before the claim is durable.
        assert!(!poll.is_finished(), "no task before the claim is durable");
        hold.set(false);
        poll.await.expect("joined")
    });
    other.join().expect("the other start returns");
    let task = task.expect("polled").expect("a task");
    assert_eq!(task.execution_arn, started.execution_arn);
    // A power loss right after the hand-out keeps the claim.
    let history = claimed_by_w_after_a_power_loss(engine, &disk, &started.execution_arn);
    assert_eq!(
        history
            .iter()
            .position(|e| matches!(e.details, EventDetails::ActivityStarted(_)))
            .map(|i| i as u32 + 1),
        Some(task.started_event_id)
    );
}

/// A worker's answer over the async API (`send_task_success_awaiting`, what the server calls)
/// does not block its thread either: while its sync is held the answer has not returned and
/// the next task is not handed out (nothing acts on the answer before it is durable); a
/// request dropped meanwhile does not stop the execution: once the sync is let through, the
/// next task is offered and a poll gets it, and the answer survives a power loss.
#[test]
fn an_answer_awaits_durability_without_blocking_and_a_dropped_request_does_not_stop_the_run() {
    let (disk, hold, engine, log) = open_held();
    let activity = engine.create_activity("work").expect("activity");
    let arn = activity.activity_arn.clone();
    let definition = format!(
        r#"{{"StartAt":"One","States":{{"One":{{"Type":"Task","Resource":"{arn}","Next":"Two"}},"Two":{{"Type":"Task","Resource":"{arn}","End":true}}}}}}"#
    );
    engine
        .create_state_machine("m", &definition, None)
        .expect("machine");
    let started = engine.start_execution("m", Some("e"), "{}").expect("start");
    let account = arn.split(':').nth(4).expect("account").to_string();
    let runtime = one_thread_runtime();
    let second = runtime.block_on(async {
        let first = engine
            .get_activity_task(&arn, Some("w"))
            .await
            .expect("polled")
            .expect("the first task");
        let other = hold_with_a_commit_in_flight(&engine, &log, &hold);
        let answering = engine.clone();
        let namespace = account.clone();
        let answer = tokio::spawn(async move {
            answering
                .send_task_success_awaiting(&namespace, &first.task_token, r#"{"one":1}"#)
                .await
        });
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(!answer.is_finished(), "no answer before it is durable");
        assert_eq!(
            engine.task_list_pending_count(&account, &arn),
            0,
            "the next task waits for the answer's durability"
        );
        // The worker's request goes away; the execution must not.
        answer.abort();
        hold.set(false);
        let second = engine
            .get_activity_task(&arn, Some("w"))
            .await
            .expect("polled")
            .expect("the second task");
        other.join().expect("the other start returns");
        second
    });
    assert_eq!(second.execution_arn, started.execution_arn);
    drop(engine);
    let reopened = open(Arc::new(disk.crash(CrashMode::DropUnsynced)));
    let succeeded = checked_history(&reopened, &started.execution_arn)
        .iter()
        .filter(|e| matches!(e.details, EventDetails::ActivitySucceeded(_)))
        .count();
    assert_eq!(succeeded, 1, "the first answer is durable");
}

/// A Rust handler's answer on a busy log is appended on the engine's runtime and waits there
/// for its durability: the next step's handler is not called before the answer is durable,
/// and once the sync is let through the execution runs to its end.
#[test]
fn a_handler_answer_on_a_busy_log_acts_only_once_durable() {
    const STEP: &str = "arn:aws:lambda:us-east-1:123456789012:function:step";
    let (_, hold, engine, log) = open_held();
    let definition = format!(
        r#"{{"StartAt":"One","States":{{"One":{{"Type":"Task","Resource":"{STEP}","Next":"Two"}},"Two":{{"Type":"Task","Resource":"{STEP}","End":true}}}}}}"#
    );
    engine
        .create_state_machine("h", &definition, None)
        .expect("machine");
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (release, latch) = tokio::sync::oneshot::channel::<()>();
    let latch = Arc::new(Mutex::new(Some(latch)));
    let seen = calls.clone();
    engine.register_integration(STEP, move |_input: serde_json::Value, _context| {
        seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let first = latch.lock().expect("latch").take();
        async move {
            if let Some(first) = first {
                let _ = first.await;
            }
            Ok(serde_json::json!({}))
        }
    });
    let started = engine.start_execution("h", Some("e"), "{}").expect("start");
    while calls.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        std::thread::yield_now();
    }
    let other = hold_with_a_commit_in_flight(&engine, &log, &hold);
    let appended = log.stats().next_lsn;
    release.send(()).expect("the first call waits");
    // The answer is appended (on the engine's runtime), not yet durable.
    while log.stats().next_lsn == appended {
        std::thread::yield_now();
    }
    assert_eq!(
        calls.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "the next step is not started before the answer is durable"
    );
    hold.set(false);
    let closed = engine
        .wait_until_closed(&started.execution_arn)
        .expect("closes");
    assert_eq!(closed.status, statelog::engine::ExecutionStatus::Succeeded);
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 2);
    other.join().expect("the other start returns");
}

/// An async start (`start_execution_async`, what the server's StartExecution calls) with a
/// commit in flight rides on it: while its sync is held the start has not returned and the
/// poller waiting for its first task (claimed in the start's commit) has nothing; once the
/// sync is let through both complete, and a power loss right then keeps the start and the claim.
#[test]
fn an_async_start_with_a_commit_in_flight_hands_its_task_once_durable() {
    let (disk, hold, engine, log) = open_held();
    let activity_arn = engine_common::one_activity_machine(&engine, "m");
    let runtime = one_thread_runtime();
    let (started, task, other) = runtime.block_on(async {
        let poller = engine.clone();
        let arn = activity_arn.clone();
        let poll = tokio::spawn(async move { poller.get_activity_task(&arn, Some("w")).await });
        // The one thread runs the poll until it waits: it is registered before the start.
        for _ in 0..8 {
            tokio::task::yield_now().await;
        }
        let other = hold_with_a_commit_in_flight(&engine, &log, &hold);
        let appended = log.stats().next_lsn;
        let starter = engine.clone();
        let start = tokio::spawn(async move {
            starter
                .start_execution_async("m", Some("e"), r#"{"job": 1}"#)
                .await
        });
        let mut turns = 0;
        while log.stats().next_lsn == appended && turns < 100 {
            tokio::task::yield_now().await;
            turns += 1;
        }
        assert!(log.stats().next_lsn > appended, "the start is appended");
        // Still this thread's turn, with the syncs held: the start did not block it, and
        // neither it nor the poll completed before the start is durable.
        nothing_answered_before_durable(start.is_finished(), poll.is_finished());
        hold.set(false);
        let started = start.await.expect("joined").expect("starts");
        let task = tokio::time::timeout(Duration::from_secs(20), poll)
            .await
            .expect("the poll returns")
            .expect("joined")
            .expect("polls")
            .expect("a task");
        (started, task, other)
    });
    other.join().expect("the other start returns");
    the_starts_first_task(&task, &started.execution_arn);
    // A power loss right after both completed keeps the start and the claim.
    claimed_by_w_after_a_power_loss(engine, &disk, &started.execution_arn);
}

/// A blocking start (`start_execution`) with a commit in flight is appended for the log's own
/// thread to make durable, and its thread waits for the log's word: while the sync is held the
/// start has not returned and the poller waiting for its first task has nothing; once the sync
/// is let through both complete, the start's sync was made by the log's thread, and a power
/// loss right then keeps the start and the claim.
#[test]
fn a_blocking_start_with_a_commit_in_flight_waits_for_the_logs_word() {
    let (disk, hold, engine, log) = open_held();
    let activity_arn = engine_common::one_activity_machine(&engine, "m");
    let runtime = one_thread_runtime();
    let poller = engine.clone();
    let poll =
        runtime.spawn(async move { poller.get_activity_task(&activity_arn, Some("w")).await });
    runtime.block_on(async {
        // The one thread runs the poll until it waits: it is registered before the start.
        for _ in 0..8 {
            tokio::task::yield_now().await;
        }
    });
    let other = hold_with_a_commit_in_flight(&engine, &log, &hold);
    let syncs_before = hold.syncers.lock().expect("syncers").len();
    let appended = log.stats().next_lsn;
    let starter = engine.clone();
    let start = std::thread::Builder::new()
        .name("blocking-start".to_string())
        .spawn(move || starter.start_execution("m", Some("e"), r#"{"job": 1}"#))
        .expect("spawns");
    while log.stats().next_lsn == appended {
        std::thread::yield_now();
    }
    // Appended, and its sync held: neither the start nor the poll completed.
    for _ in 0..100 {
        std::thread::yield_now();
    }
    nothing_answered_before_durable(start.is_finished(), poll.is_finished());
    hold.set(false);
    let started = start.join().expect("joined").expect("starts");
    let task = runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(20), poll).await })
        .expect("the poll returns")
        .expect("joined")
        .expect("polls")
        .expect("a task");
    other.join().expect("the other start returns");
    the_starts_first_task(&task, &started.execution_arn);
    let syncers = hold.syncers.lock().expect("syncers")[syncs_before..].to_vec();
    assert!(
        syncers.iter().any(|name| name == "statelog-wal-sync"),
        "the log's thread made the start durable: {syncers:?}"
    );
    assert!(
        !syncers.iter().any(|name| name == "blocking-start"),
        "the start's thread synced nothing: {syncers:?}"
    );
    claimed_by_w_after_a_power_loss(engine, &disk, &started.execution_arn);
}
