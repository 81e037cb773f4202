//! Writes the full backward-compatibility fixture: every history event type the engine can
//! produce, every store record variant, and open executions waiting in every way the engine
//! waits (`tests/fixtures/README.md` lists them; `tests/statelog/fixture_logs.rs` checks a newer build
//! sees the same and can finish what was left open).
//!
//! It does what `fixture_writer.rs` does (a compacted log, machines with tags and a revision,
//! failed, caught, stopped and redriven executions, a token task and a queued activity task),
//! then adds timeouts, heartbeats, retries, activities claimed and answered, `.sync` jobs (the
//! built-in child execution and an embedder's `JobIntegration`), aborted Parallel and Map
//! branches, and a deleted state machine and activity. It uses the `statelog::engine` API of
//! commit a9932d6 (`fixture_writer.rs` keeps to the older API of 8fc0c81; this one need not
//! build before a9932d6).
//!
//! Deterministic: a manual clock, a fixed entropy seed, no background timers; the clock moves
//! only between calls, timers fire only through `run_due_timers`, and every execution is left
//! idle (`wait_idle`) before the next call, so the same commit writes the same bytes. A `.sync`
//! job's status poll is set a year out so it never comes due here.
//!
//! `cargo run --example fixture_writer_full -- OUT_DIR` writes `OUT_DIR/data/`,
//! `OUT_DIR/expected.json` and `OUT_DIR/token.txt` (the waiting task's token).

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use statelog::asl::IntegrationPattern;
use statelog::clock::ManualClock;
use statelog::engine::{
    Engine, EngineOptions, ExecutionStatus, HistoryQuery, Job, JobFuture, JobIntegration, JobKey,
    JobStart, JobStatus, Tag, TaskError,
};

/// The manual clock's start: 2024-01-01T00:00:00Z.
const START_MS: u64 = 1_704_067_200_000;
const SECOND_MS: u64 = 1000;
const DAY_MS: u64 = 24 * 60 * 60 * SECOND_MS;
/// Small segments keep the fixture small and let compaction delete whole segments.
const SEGMENT_SIZE_BYTES: u64 = 16 * 1024;
/// Closed executions vanish a day after their close, so compaction has something to reclaim.
const RETENTION_MS: u64 = DAY_MS;
/// Enough expired executions to fill several segments.
const EXPIRED_COUNT: usize = 40;
const ENTROPY_SEED: u64 = 14;
/// The timers the open executions are left with (Wait, TimeoutSeconds, retry backoff) are due
/// this long after the writer's last call; a heartbeat clock is shorter (`OPEN_HEARTBEAT_S`).
const OPEN_TIMER_S: u64 = 600;
const OPEN_HEARTBEAT_S: u64 = 60;
/// The embedder job's status poll interval: never due while the writer runs.
const JOB_POLL_MS: u64 = 365 * DAY_MS;

const SEND: &str = "arn:aws:states:::sqs:sendMessage.waitForTaskToken";
const FLAKY: &str = "arn:aws:lambda:us-east-1:000000000000:function:flaky";
const BROKEN: &str = "arn:aws:lambda:us-east-1:000000000000:function:broken";
/// Fails its first call, succeeds after: a Retry that retries then succeeds.
const RETRIED: &str = "arn:aws:lambda:us-east-1:000000000000:function:retried";
/// Fails every call here: the open execution waits in its retry backoff.
const BACKOFF: &str = "arn:aws:lambda:us-east-1:000000000000:function:backoff";
const SYNC: &str = "arn:aws:states:::states:startExecution.sync";
const SYNC2: &str = "arn:aws:states:::states:startExecution.sync:2";
/// The embedder job integration's base ARN (`register_job_integration`).
const JOB_BASE: &str = "arn:aws:states:::batch:submitJob";

const PADDED: &str = r#"{"StartAt":"One","States":{
  "One":{"Type":"Pass","Result":{"pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"},"ResultPath":"$.one","Next":"Two"},
  "Two":{"Type":"Pass","End":true}}}"#;

/// Pass, Choice, Parallel, Map and Succeed in one run.
const FLOW_V1: &str = r#"{"StartAt":"Start","States":{
  "Start":{"Type":"Pass","Result":[1,2,3],"ResultPath":"$.items","Next":"Route"},
  "Route":{"Type":"Choice","Choices":[{"Variable":"$.go","BooleanEquals":true,"Next":"Both"}],"Default":"Done"},
  "Both":{"Type":"Parallel","ResultPath":"$.both","Next":"Each","Branches":[
    {"StartAt":"Left","States":{"Left":{"Type":"Pass","Result":"l","End":true}}},
    {"StartAt":"Right","States":{"Right":{"Type":"Pass","Result":"r","End":true}}}]},
  "Each":{"Type":"Map","ItemsPath":"$.items","ResultPath":"$.each","Next":"Done",
    "Iterator":{"StartAt":"Item","States":{"Item":{"Type":"Pass","End":true}}}},
  "Done":{"Type":"Succeed"}}}"#;

/// FLOW_V1 with a new Choice default: the UpdateStateMachine revision.
const FLOW_V2: &str = r#"{"StartAt":"Start","States":{
  "Start":{"Type":"Pass","Result":[1,2,3],"ResultPath":"$.items","Next":"Route"},
  "Route":{"Type":"Choice","Choices":[{"Variable":"$.go","BooleanEquals":true,"Next":"Both"}],"Default":"Each"},
  "Both":{"Type":"Parallel","ResultPath":"$.both","Next":"Each","Branches":[
    {"StartAt":"Left","States":{"Left":{"Type":"Pass","Result":"l","End":true}}},
    {"StartAt":"Right","States":{"Right":{"Type":"Pass","Result":"r","End":true}}}]},
  "Each":{"Type":"Map","ItemsPath":"$.items","ResultPath":"$.each","Next":"Done",
    "Iterator":{"StartAt":"Item","States":{"Item":{"Type":"Pass","End":true}}}},
  "Done":{"Type":"Succeed"}}}"#;

const FAILS: &str = r#"{"StartAt":"No","States":{"No":{"Type":"Fail","Error":"Fixture.Failed","Cause":"on purpose"}}}"#;

const WAITS: &str = r#"{"StartAt":"Nap","States":{"Nap":{"Type":"Wait","Seconds":3600,"Next":"Done"},"Done":{"Type":"Pass","End":true}}}"#;

/// A Wait whose timer fires here: `WaitStateExited`.
const WAKES: &str = r#"{"StartAt":"Nap","States":{"Nap":{"Type":"Wait","Seconds":10,"Next":"Done"},"Done":{"Type":"Succeed"}}}"#;

/// A Wait left open (also the machine deleted while its execution runs).
const SLEEPS: &str = r#"{"StartAt":"Nap","States":{"Nap":{"Type":"Wait","Seconds":600,"Next":"Done"},"Done":{"Type":"Pass","End":true}}}"#;

/// The execution's own `TimeoutSeconds` runs out in a Wait: `ExecutionTimedOut`.
const DEADLINE: &str = r#"{"TimeoutSeconds":10,"StartAt":"Nap","States":{"Nap":{"Type":"Wait","Seconds":3600,"End":true}}}"#;

/// The `.sync` child: waits `$.seconds`, then succeeds with its input.
const SLEEPER: &str = r#"{"StartAt":"Nap","States":{"Nap":{"Type":"Wait","SecondsPath":"$.seconds","Next":"Done"},"Done":{"Type":"Succeed"}}}"#;

/// A Map whose second iteration fails while the first waits: `MapIterationFailed`,
/// `MapIterationAborted`, `WaitStateAborted`, `MapStateFailed`.
const MAP_FAILS: &str = r#"{"StartAt":"Each","States":{"Each":{"Type":"Map","ItemsPath":"$.items","End":true,
  "Iterator":{"StartAt":"Pick","States":{
    "Pick":{"Type":"Choice","Choices":[{"Variable":"$.n","NumericEquals":1,"Next":"Boom"}],"Default":"Nap"},
    "Boom":{"Type":"Fail","Error":"Fixture.Item","Cause":"item 1 fails"},
    "Nap":{"Type":"Wait","Seconds":3600,"End":true}}}}}}"#;

const DOOMED: &str = r#"{"StartAt":"Nap","States":{"Nap":{"Type":"Wait","Seconds":600,"Next":"Done"},"Done":{"Type":"Pass","End":true}}}"#;

fn caught() -> String {
    format!(
        r#"{{"StartAt":"Call","States":{{
  "Call":{{"Type":"Task","Resource":"{BROKEN}","Catch":[{{"ErrorEquals":["States.ALL"],"ResultPath":"$.error","Next":"Handled"}}],"Next":"Handled"}},
  "Handled":{{"Type":"Pass","End":true}}}}}}"#
    )
}

fn flaky() -> String {
    format!(
        r#"{{"StartAt":"First","States":{{
  "First":{{"Type":"Pass","Next":"Call"}},
  "Call":{{"Type":"Task","Resource":"{FLAKY}","End":true}}}}}}"#
    )
}

/// A `.waitForTaskToken` task; `extra` adds fields to the Task state.
fn ask_with(extra: &str) -> String {
    format!(
        r#"{{"StartAt":"Ask","States":{{
  "Ask":{{"Type":"Task","Resource":"{SEND}","Parameters":{{"QueueUrl":"q","MessageBody":{{"TaskToken.$":"$$.Task.Token"}}}}{extra},"Next":"Done"}},
  "Done":{{"Type":"Pass","End":true}}}}}}"#
    )
}

/// A token task whose `TimeoutSeconds` runs out, caught: `TaskTimedOut`.
fn task_timeout() -> String {
    ask_with(
        r#","TimeoutSeconds":10,"Catch":[{"ErrorEquals":["States.Timeout"],"ResultPath":"$.error","Next":"Done"}]"#,
    )
}

fn activity_task(activity_arn: &str, extra: &str) -> String {
    format!(
        r#"{{"StartAt":"Work","States":{{"Work":{{"Type":"Task","Resource":"{activity_arn}"{extra},"End":true}}}}}}"#
    )
}

/// A Task with a Retry on `Fixture.Flaky` after `interval_s`.
fn retried(resource: &str, interval_s: u64) -> String {
    format!(
        r#"{{"StartAt":"Call","States":{{"Call":{{"Type":"Task","Resource":"{resource}","Retry":[{{"ErrorEquals":["Fixture.Flaky"],"IntervalSeconds":{interval_s},"MaxAttempts":2,"BackoffRate":2.0}}],"End":true}}}}}}"#
    )
}

/// A Parallel whose fourth branch fails after 10 s while the others wait: a nested Parallel
/// (`ParallelStateAborted`), a Map (`MapStateAborted`, `MapIterationAborted`), an activity task
/// (`TaskStateAborted`), Waits (`WaitStateAborted`); then `ParallelStateFailed`.
fn parallel_fails(activity_arn: &str) -> String {
    format!(
        r#"{{"StartAt":"All","States":{{"All":{{"Type":"Parallel","End":true,"Branches":[
  {{"StartAt":"Inner","States":{{"Inner":{{"Type":"Parallel","End":true,"Branches":[
    {{"StartAt":"Nap","States":{{"Nap":{{"Type":"Wait","Seconds":3600,"End":true}}}}}}]}}}}}},
  {{"StartAt":"Each","States":{{"Each":{{"Type":"Map","ItemsPath":"$.items","End":true,
    "Iterator":{{"StartAt":"Nap","States":{{"Nap":{{"Type":"Wait","Seconds":3600,"End":true}}}}}}}}}}}},
  {{"StartAt":"Work","States":{{"Work":{{"Type":"Task","Resource":"{activity_arn}","End":true}}}}}},
  {{"StartAt":"Pause","States":{{"Pause":{{"Type":"Wait","Seconds":10,"Next":"Boom"}},
    "Boom":{{"Type":"Fail","Error":"Fixture.Boom","Cause":"a branch fails"}}}}}}]}}}}}}"#
    )
}

/// A `.sync` (or `.sync:2`) child execution of `sleeper` named `$.child`, waiting `$.seconds`.
fn parent(resource: &str, sleeper_arn: &str) -> String {
    format!(
        r#"{{"StartAt":"Child","States":{{"Child":{{"Type":"Task","Resource":"{resource}","Parameters":{{"StateMachineArn":"{sleeper_arn}","Name.$":"$.child","Input":{{"seconds.$":"$.seconds"}}}},"End":true}}}}}}"#
    )
}

fn job_machine() -> String {
    format!(
        r#"{{"StartAt":"Run","States":{{"Run":{{"Type":"Task","Resource":"{JOB_BASE}.sync","Parameters":{{"Queue.$":"$.queue"}},"End":true}}}}}}"#
    )
}

/// An embedder's job service: starts record the job, status says running (the outcome is
/// pushed with `report_job`), cancel does nothing.
#[derive(Clone, Default)]
struct Batch {
    started: Arc<Mutex<Vec<JobKey>>>,
}

impl JobIntegration for Batch {
    fn patterns(&self) -> Vec<IntegrationPattern> {
        vec![IntegrationPattern::Sync]
    }

    fn poll_interval_ms(&self) -> u64 {
        JOB_POLL_MS
    }

    fn start(&self, start: JobStart) -> JobFuture<Value> {
        let started = self.started.clone();
        Box::pin(async move {
            let handle = json!({"JobId": start.key.to_string(), "Queue": start.input["Queue"]});
            started.lock().expect("not poisoned").push(start.key);
            Ok(handle)
        })
    }

    fn status(&self, _job: Job) -> JobFuture<JobStatus> {
        Box::pin(async { Ok(JobStatus::Running) })
    }

    fn cancel(&self, _job: Job) -> JobFuture<()> {
        Box::pin(async { Ok(()) })
    }
}

/// The writer's engine and clock, and the executions to record, in order.
struct Writer {
    engine: Engine,
    clock: ManualClock,
    arns: Vec<String>,
    /// The `.waitForTaskToken` tokens the SEND handler was given, by execution ARN.
    tokens: Arc<Mutex<HashMap<String, String>>>,
}

impl Writer {
    fn machine(&self, name: &str, definition: &str) {
        self.engine
            .create_state_machine(name, definition, None)
            .unwrap_or_else(|e| panic!("creates {name}: {e}"));
    }

    /// Starts `machine/name` and waits until it is idle; records it.
    fn start(&mut self, machine: &str, name: &str, input: &str) -> String {
        let arn = self
            .engine
            .start_execution(machine, Some(name), input)
            .unwrap_or_else(|e| panic!("starts {machine}/{name}: {e}"))
            .execution_arn;
        self.engine.wait_idle();
        self.arns.push(arn.clone());
        arn
    }

    /// Moves the clock and fires what came due, until idle.
    fn advance_s(&self, seconds: u64) {
        self.clock.advance_ms(seconds * SECOND_MS);
        self.engine.run_due_timers();
        self.engine.wait_idle();
    }

    fn token(&self, arn: &str) -> String {
        self.tokens
            .lock()
            .expect("not poisoned")
            .get(arn)
            .cloned()
            .unwrap_or_else(|| panic!("{arn} sent its token"))
    }

    fn status(&self, arn: &str) -> ExecutionStatus {
        self.engine
            .describe_execution(arn)
            .expect("describes")
            .status
    }

    fn expect_status(&self, arn: &str, status: ExecutionStatus) {
        let description = self.engine.describe_execution(arn).expect("describes");
        assert_eq!(
            description.status, status,
            "{arn}: {:?} {:?} {:?}",
            description.error, description.cause, description.output_text
        );
    }

    /// Claims the next task of `activity_arn` for `worker`; it must be queued already.
    fn poll(&self, activity_arn: &str, worker: &str) -> statelog::engine::ActivityTask {
        let namespace = activity_arn
            .split(':')
            .nth(4)
            .expect("an account")
            .to_string();
        let lists = [activity_arn.to_string()];
        let task = block_on(
            self.engine
                .poll_task_lists(&namespace, &lists, Some(worker), 0),
        )
        .expect("polls")
        .expect("a task is queued");
        self.engine.wait_idle();
        task
    }
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime")
        .block_on(future)
}

fn main() {
    let Some(out) = std::env::args().nth(1) else {
        eprintln!("usage: fixture_writer_full OUT_DIR");
        std::process::exit(2);
    };
    let out = Path::new(&out);
    let data = out.join("data");
    if data.exists() {
        eprintln!("{} exists: refusing to write over it", data.display());
        std::process::exit(2);
    }
    std::fs::create_dir_all(&data).expect("creates the data directory");
    let clock = ManualClock::new(START_MS);
    let options = EngineOptions {
        clock: Arc::new(clock.clone()),
        background_timers: false,
        entropy_seed: Some(ENTROPY_SEED),
        segment_size_bytes: SEGMENT_SIZE_BYTES,
        retention_ms: RETENTION_MS,
        compaction_interval_ms: 0,
        ..EngineOptions::default()
    };
    let engine = Engine::open(&data, options).expect("opens");
    let mut w = Writer {
        engine,
        clock,
        arns: Vec::new(),
        tokens: Arc::new(Mutex::new(HashMap::new())),
    };

    // 1. A compacted log: executions that close, expire and are compacted away.
    w.machine("padded", PADDED);
    let mut expired = Vec::new();
    for i in 0..EXPIRED_COUNT {
        let started = w
            .engine
            .start_execution(
                "padded",
                Some(&format!("old-{i}")),
                &format!(r#"{{"i":{i}}}"#),
            )
            .expect("starts old");
        expired.push(started.execution_arn);
        w.engine.wait_idle();
    }
    w.clock.advance_ms(2 * RETENTION_MS);
    let compaction = w.engine.compact().expect("compacts");
    assert!(compaction.segments_deleted_count > 0, "{compaction:?}");

    // 2. Machines with tags and a revision; activities with tags.
    let owner = [Tag::new("owner", "fixtures"), Tag::new("tier", "gold")];
    let flow = w
        .engine
        .create_state_machine_with_tags("flow", FLOW_V1, None, &owner)
        .expect("creates flow")
        .state_machine_arn;
    w.start("flow", "before-update", r#"{"go":true}"#);
    w.clock.advance_ms(SECOND_MS);
    w.engine
        .update_state_machine("flow", Some(FLOW_V2), None)
        .expect("updates flow");
    w.engine
        .tag_resource(&flow, &[Tag::new("stage", "two")])
        .expect("tags flow");
    w.start("flow", "after-update", r#"{"go":false}"#);
    let activity = w
        .engine
        .create_activity_with_tags("worker", &[Tag::new("team", "ops")])
        .expect("creates activity")
        .activity_arn;

    // 3. Closed executions: failed, caught, aborted, redriven.
    w.machine("fails", FAILS);
    w.start("fails", "failed", "{}");
    w.engine
        .register_integration(BROKEN, |_input: Value, _context: Value| async move {
            Err::<Value, _>(TaskError::new("Fixture.Broken", "always"))
        });
    w.machine("caught", &caught());
    w.start("caught", "caught", "{}");
    w.machine("waits", WAITS);
    let stopped = w.start("waits", "stopped", "{}");
    w.engine
        .stop_execution(&stopped, Some("Fixture.Stopped"), Some("by hand"))
        .expect("stops");
    w.engine.register_integration(FLAKY, first_call_fails());
    w.machine("flaky", &flaky());
    let redriven = w.start("flaky", "redriven", r#"{"n":1}"#);
    w.clock.advance_ms(SECOND_MS);
    let redrive = w
        .engine
        .redrive_execution(&redriven, Some("fixture-redrive-1"))
        .expect("redrives");
    w.engine.wait_idle();
    // The same client token answers the first redrive and appends nothing.
    let again = w
        .engine
        .redrive_execution(&redriven, Some("fixture-redrive-1"))
        .expect("redrives again");
    assert_eq!(again, redrive);

    // 4. Timeouts, heartbeats, retries, Waits that end.
    let sent = w.tokens.clone();
    w.engine
        .register_integration(SEND, move |input: Value, context: Value| {
            let token = input["MessageBody"]["TaskToken"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let execution = context["Execution"]["Id"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            sent.lock().expect("not poisoned").insert(execution, token);
            async move { Ok(json!({"MessageId": "m-1"})) }
        });
    // A task's TimeoutSeconds, caught: TaskTimedOut.
    w.machine("timeouts", &task_timeout());
    let timed_out = w.start("timeouts", "task-timeout", "{}");
    w.advance_s(10);
    w.expect_status(&timed_out, ExecutionStatus::Succeeded);
    // The execution's TimeoutSeconds: ExecutionTimedOut.
    w.machine("deadline", DEADLINE);
    let deadline = w.start("deadline", "execution-timeout", "{}");
    w.advance_s(10);
    w.expect_status(&deadline, ExecutionStatus::TimedOut);
    // A token task's HeartbeatSeconds: one heartbeat is accepted, then the clock runs out.
    w.machine("beats", &ask_with(r#","HeartbeatSeconds":10"#));
    let beats = w.start("beats", "heartbeat-timeout", "{}");
    w.advance_s(5);
    w.engine
        .send_task_heartbeat(&w.token(&beats))
        .expect("the heartbeat is accepted");
    w.advance_s(6);
    w.expect_status(&beats, ExecutionStatus::Running);
    w.advance_s(5);
    w.expect_status(&beats, ExecutionStatus::Failed);
    // A Retry that retries once, then succeeds (a RetryBackoff timer).
    w.engine.register_integration(RETRIED, first_call_fails());
    w.machine("retry", &retried(RETRIED, 1));
    let retry = w.start("retry", "retried", r#"{"n":2}"#);
    w.advance_s(1);
    w.expect_status(&retry, ExecutionStatus::Succeeded);
    // A Wait that ends: WaitStateExited.
    w.machine("wakes", WAKES);
    let wakes = w.start("wakes", "exited", "{}");
    w.advance_s(10);
    w.expect_status(&wakes, ExecutionStatus::Succeeded);

    // 5. Activities claimed by a worker: succeeded, failed, timed out on heartbeat.
    let work = w
        .engine
        .create_activity("work")
        .expect("creates work")
        .activity_arn;
    w.machine("work", &activity_task(&work, r#","HeartbeatSeconds":10"#));
    let succeeded = w.start("work", "succeeded", r#"{"job":1}"#);
    let task = w.poll(&work, "fixture-worker");
    w.engine
        .send_task_success(&task.task_token, r#"{"done":1}"#)
        .expect("answers");
    w.expect_status(&succeeded, ExecutionStatus::Succeeded);
    let failed = w.start("work", "failed", r#"{"job":2}"#);
    let task = w.poll(&work, "fixture-worker");
    w.engine
        .send_task_failure(&task.task_token, "Fixture.WorkerFailed", "gave up")
        .expect("answers");
    w.expect_status(&failed, ExecutionStatus::Failed);
    let lapsed = w.start("work", "timed-out", r#"{"job":3}"#);
    let task = w.poll(&work, "fixture-worker");
    w.advance_s(5);
    w.engine
        .send_task_heartbeat(&task.task_token)
        .expect("the heartbeat is accepted");
    w.advance_s(6);
    w.expect_status(&lapsed, ExecutionStatus::Running);
    w.advance_s(5);
    w.expect_status(&lapsed, ExecutionStatus::Failed);

    // 6. Failures around waiting branches: a Parallel and a Map abort what still waits.
    let sidelined = w
        .engine
        .create_activity("sidelined")
        .expect("creates sidelined")
        .activity_arn;
    w.machine("aborts", &parallel_fails(&sidelined));
    let aborts = w.start("aborts", "parallel-failed", r#"{"items":[1,2]}"#);
    w.advance_s(10);
    w.expect_status(&aborts, ExecutionStatus::Failed);
    w.machine("mapfail", MAP_FAILS);
    let map_failed = w.start("mapfail", "map-failed", r#"{"items":[{"n":0},{"n":1}]}"#);
    w.expect_status(&map_failed, ExecutionStatus::Failed);

    // 7. `.sync` jobs that finish: a child execution (built in) and an embedder's job.
    w.machine("sleeper", SLEEPER);
    let sleeper = w.engine.state_machine_arn("sleeper");
    w.machine("parent", &parent(SYNC, &sleeper));
    let sync_done = w.start(
        "parent",
        "sync-done",
        r#"{"child":"child-done","seconds":10}"#,
    );
    let child_done = w.engine.execution_arn("sleeper", "child-done");
    w.arns.push(child_done.clone());
    w.expect_status(&sync_done, ExecutionStatus::Running);
    w.advance_s(10);
    w.expect_status(&child_done, ExecutionStatus::Succeeded);
    w.expect_status(&sync_done, ExecutionStatus::Succeeded);
    let batch = Batch::default();
    w.engine.register_job_integration(JOB_BASE, batch.clone());
    w.machine("batch", &job_machine());
    let job_done = w.start("batch", "job-done", r#"{"queue":"q1"}"#);
    let key = batch
        .started
        .lock()
        .expect("not poisoned")
        .first()
        .cloned()
        .expect("the job started");
    w.engine
        .report_job(&key, JobStatus::Succeeded(json!({"rows": 3})))
        .expect("the job's outcome is taken");
    w.engine.wait_idle();
    w.expect_status(&job_done, ExecutionStatus::Succeeded);

    // 8. A deleted state machine (its open execution goes on) and a deleted activity.
    w.machine("doomed", DOOMED);
    let orphan = w.start("doomed", "orphan", r#"{"orphan":true}"#);
    w.engine
        .delete_state_machine("doomed")
        .expect("deletes doomed");
    let retired = w
        .engine
        .create_activity_with_tags("retired", &[Tag::new("gone", "yes")])
        .expect("creates retired")
        .activity_arn;
    w.engine.delete_activity(&retired).expect("deletes retired");

    // 9. Open executions, waiting in every way: a token (`ask/waiting`), a queued activity
    // task (`act/queued`), a claimed activity task with a heartbeat clock, a Wait timer, a
    // task TimeoutSeconds, a retry backoff, a `.sync` child still running, an embedder's
    // `.sync` job still running (and `doomed/orphan` above, a Wait of a deleted machine).
    w.machine("ask", &ask_with(""));
    let waiting = w.start("ask", "waiting", r#"{"q":1}"#);
    w.machine("act", &activity_task(&activity, ""));
    let queued = w.start("act", "queued", r#"{"job":7}"#);
    let watched = w
        .engine
        .create_activity("watched")
        .expect("creates watched")
        .activity_arn;
    w.machine(
        "watch",
        &activity_task(
            &watched,
            &format!(r#","HeartbeatSeconds":{OPEN_HEARTBEAT_S}"#),
        ),
    );
    let claimed = w.start("watch", "claimed", r#"{"job":8}"#);
    let claimed_task = w.poll(&watched, "fixture-worker");
    w.engine
        .send_task_heartbeat(&claimed_task.task_token)
        .expect("the heartbeat is accepted");
    w.machine("nap", SLEEPS);
    let sleeping = w.start("nap", "sleeping", "{}");
    w.machine(
        "slow",
        &ask_with(&format!(r#","TimeoutSeconds":{OPEN_TIMER_S}"#)),
    );
    let timing_out = w.start("slow", "timing-out", "{}");
    w.engine
        .register_integration(BACKOFF, |_input: Value, _context: Value| async move {
            Err::<Value, _>(TaskError::new("Fixture.Flaky", "fails until the upgrade"))
        });
    w.machine("backoff", &retried(BACKOFF, OPEN_TIMER_S));
    let retrying = w.start("backoff", "retrying", r#"{"n":3}"#);
    w.machine("parent2", &parent(SYNC2, &sleeper));
    let sync_open = w.start(
        "parent2",
        "sync-open",
        &format!(r#"{{"child":"child-open","seconds":{OPEN_TIMER_S}}}"#),
    );
    let child_open = w.engine.execution_arn("sleeper", "child-open");
    w.arns.push(child_open.clone());
    let job_open = w.start("batch", "job-open", r#"{"queue":"q2"}"#);
    let open_key = batch
        .started
        .lock()
        .expect("not poisoned")
        .get(1)
        .cloned()
        .expect("the second job started");
    assert_eq!(open_key.execution_arn, job_open);
    for arn in [
        &orphan,
        &waiting,
        &queued,
        &claimed,
        &sleeping,
        &timing_out,
        &retrying,
        &sync_open,
        &child_open,
        &job_open,
    ] {
        assert_eq!(w.status(arn), ExecutionStatus::Running, "{arn}");
    }
    let token = w.token(&waiting);
    let timing_out_token = w.token(&timing_out);

    // What this build sees, for the newer build to compare with.
    let engine = &w.engine;
    let executions: Vec<Value> = w.arns.iter().map(|arn| execution(engine, arn)).collect();
    let machines: Vec<Value> = engine
        .list_state_machines()
        .iter()
        .map(|m| {
            let tags = engine
                .list_tags_for_resource(&m.state_machine_arn)
                .expect("machine tags");
            json!({
                "arn": m.state_machine_arn,
                "name": m.name,
                "definition": m.definition,
                "revision_id": m.revision_id,
                "tags": tags_json(&tags),
            })
        })
        .collect();
    let activities: Vec<Value> = engine
        .list_activities()
        .iter()
        .map(|a| {
            let tags = engine
                .list_tags_for_resource(&a.activity_arn)
                .expect("activity tags");
            json!({"arn": a.activity_arn, "name": a.name, "tags": tags_json(&tags)})
        })
        .collect();
    let expected = json!({
        "writer": "fixture_writer_full",
        "start_ms": START_MS,
        "now_ms": engine.clock().now_ms(),
        "retention_ms": RETENTION_MS,
        "segment_size_bytes": SEGMENT_SIZE_BYTES,
        "entropy_seed": ENTROPY_SEED,
        "compaction": {
            "executions_expired_count": compaction.executions_expired_count,
            "segments_deleted_count": compaction.segments_deleted_count,
        },
        "expired_executions": expired,
        "executions": executions,
        "machines": machines,
        "activities": activities,
        "waiting": {"execution_arn": waiting, "token": token},
        "queued_activity": {"execution_arn": queued, "activity_arn": activity},
        "redrive": {
            "execution_arn": redriven,
            "client_token": "fixture-redrive-1",
            "redrive_ms": redrive.redrive_ms,
            "redrive_count": redrive.redrive_count,
        },
        "full": {
            "open_timer_s": OPEN_TIMER_S,
            "open_heartbeat_s": OPEN_HEARTBEAT_S,
            "claimed_activity": {
                "execution_arn": claimed,
                "activity_arn": watched,
                "token": claimed_task.task_token,
            },
            "wait_timer": {"execution_arn": sleeping},
            "task_timeout": {"execution_arn": timing_out, "token": timing_out_token},
            "retry_backoff": {"execution_arn": retrying, "resource": BACKOFF},
            "sync_child": {"execution_arn": sync_open, "child_arn": child_open},
            "job": {
                "execution_arn": job_open,
                "task_id": open_key.task_id,
                "base_arn": JOB_BASE,
            },
            "deleted_machine": {
                "arn": w.engine.state_machine_arn("doomed"),
                "execution_arn": orphan,
            },
            "deleted_activity": {"arn": retired},
        },
    });
    drop(w);
    let text = serde_json::to_string_pretty(&expected).expect("serializes");
    std::fs::write(out.join("expected.json"), text + "\n").expect("writes expected.json");
    std::fs::write(
        out.join("token.txt"),
        format!(
            "{}\n",
            expected["waiting"]["token"].as_str().unwrap_or_default()
        ),
    )
    .expect("writes token.txt");
}

/// A handler that fails its first call with `Fixture.Flaky` and succeeds after.
fn first_call_fails(
) -> impl Fn(Value, Value) -> std::future::Ready<Result<Value, TaskError>> + Send + Sync + 'static {
    let calls = Arc::new(AtomicUsize::new(0));
    move |input: Value, _context: Value| {
        let call = calls.fetch_add(1, Ordering::SeqCst);
        std::future::ready(if call == 0 {
            Err(TaskError::new("Fixture.Flaky", "first call fails"))
        } else {
            Ok(json!({"call": call, "input": input}))
        })
    }
}

fn tags_json(tags: &[Tag]) -> Value {
    let mut pairs: Vec<(String, String)> = tags
        .iter()
        .map(|t| (t.key.clone(), t.value.clone()))
        .collect();
    pairs.sort();
    Value::from(
        pairs
            .into_iter()
            .map(|(key, value)| json!({"key": key, "value": value}))
            .collect::<Vec<_>>(),
    )
}

/// An execution as `DescribeExecution` and `GetExecutionHistory` show it.
fn execution(engine: &Engine, arn: &str) -> Value {
    let description = engine.describe_execution(arn).expect("describes");
    let query = HistoryQuery {
        max_results: 1000,
        ..HistoryQuery::default()
    };
    let history = engine
        .get_execution_history(arn, &query)
        .expect("history")
        .to_aws_json();
    let types: Vec<Value> = history["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["type"].clone())
        .collect();
    json!({
        "arn": arn,
        "status": description.status.aws_name(),
        "event_count": description.event_count,
        "event_types": types,
        "output": description.output_text,
        "error": description.error,
        "cause": description.cause,
        "redrive_count": description.redrive.redrive_count,
    })
}
