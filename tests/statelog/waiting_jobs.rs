//! The general `.sync` integration (`JobIntegration`) on the manual clock: a job completed by a
//! push (`report_job`), by the engine's status poll, by both racing (once), by a poll after a
//! restart mid-job; cancelled on stop and on the task's TimeoutSeconds / HeartbeatSeconds; a
//! definition asking for an undeclared pattern rejected at creation. No test sleeps.

use crate::engine_common;

use std::collections::HashMap;
use std::sync::Arc;

use engine_common::{event_types, Harness, ONE_TASK_SUCCEEDED};
use parking_lot::Mutex;
use serde_json::{json, Value};
use statelog::asl::IntegrationPattern;
use statelog::engine::{
    Engine, Error, ExecutionStatus, Job, JobFuture, JobIntegration, JobKey, JobStart, JobStatus,
};

const BASE: &str = "arn:aws:states:::batch:submitJob";
const POLL_MS: u64 = 5_000;

/// What the fake job service saw and will answer; shared across restarts.
#[derive(Default)]
struct Service {
    started: Vec<JobKey>,
    statuses: HashMap<JobKey, JobStatus>,
    polls: usize,
    cancelled: Vec<Value>,
}

#[derive(Clone, Default)]
struct Batch {
    service: Arc<Mutex<Service>>,
}

impl JobIntegration for Batch {
    fn patterns(&self) -> Vec<IntegrationPattern> {
        vec![IntegrationPattern::Sync, IntegrationPattern::Sync2]
    }

    fn poll_interval_ms(&self) -> u64 {
        POLL_MS
    }

    fn start(&self, start: JobStart) -> JobFuture<Value> {
        let service = self.service.clone();
        Box::pin(async move {
            let handle = json!({"JobId": start.key.to_string(), "Queue": start.input["Queue"]});
            service.lock().started.push(start.key);
            Ok(handle)
        })
    }

    fn status(&self, job: Job) -> JobFuture<JobStatus> {
        let service = self.service.clone();
        Box::pin(async move {
            let mut service = service.lock();
            service.polls += 1;
            Ok(service
                .statuses
                .get(&job.key)
                .cloned()
                .unwrap_or(JobStatus::Running))
        })
    }

    fn cancel(&self, job: Job) -> JobFuture<()> {
        let service = self.service.clone();
        Box::pin(async move {
            service.lock().cancelled.push(job.handle);
            Ok(())
        })
    }
}

fn definition(extra: &str) -> String {
    format!(
        r#"{{"StartAt":"Run","States":{{"Run":{{"Type":"Task","Resource":"{BASE}.sync",
            "Parameters":{{"Queue.$":"$.queue"}}{extra},"End":true}}}}}}"#
    )
}

fn start(h: &Harness, batch: &Batch, extra: &str) -> (String, JobKey) {
    h.engine.register_job_integration(BASE, batch.clone());
    h.engine
        .create_state_machine("m", &definition(extra), None)
        .expect("machine");
    let arn = h
        .engine
        .start_execution("m", Some("e"), r#"{"queue":"q1"}"#)
        .expect("start")
        .execution_arn;
    h.engine.wait_idle();
    let key = batch
        .service
        .lock()
        .started
        .first()
        .cloned()
        .expect("the job started");
    assert_eq!(key.execution_arn, arn);
    (arn, key)
}

fn status(engine: &Engine, arn: &str) -> ExecutionStatus {
    engine.describe_execution(arn).expect("describe").status
}

fn count(types: &[String], name: &str) -> usize {
    types.iter().filter(|t| t.as_str() == name).count()
}

#[test]
fn a_pushed_completion_completes_the_task() {
    let h = Harness::new();
    let batch = Batch::default();
    let (arn, key) = start(&h, &batch, "");
    assert_eq!(status(&h.engine, &arn), ExecutionStatus::Running);
    assert_eq!(h.engine.running_job_count(), 1);
    let types = event_types(&h.engine, &arn);
    assert_eq!(count(&types, "TaskSubmitted"), 1, "{types:?}");
    h.engine
        .report_job(&key, JobStatus::Succeeded(json!({"rows": 3})))
        .expect("push");
    let done = h.engine.wait_until_closed(&arn).expect("closes");
    assert_eq!(done.status, ExecutionStatus::Succeeded);
    assert_eq!(done.output, Some(json!({"rows": 3})));
    assert_eq!(h.engine.running_job_count(), 0);
    assert!(matches!(
        h.engine.report_job(&key, JobStatus::Succeeded(json!({}))),
        Err(Error::TaskTimedOut { .. })
    ));
}

#[test]
fn a_pushed_failure_fails_the_task_with_its_error() {
    let h = Harness::new();
    let batch = Batch::default();
    let (arn, key) = start(&h, &batch, "");
    h.engine
        .report_job(
            &key,
            JobStatus::Failed {
                error: "Batch.JobFailed".into(),
                cause: "exit 3".into(),
            },
        )
        .expect("push");
    let done = h.engine.wait_until_closed(&arn).expect("closes");
    assert_eq!(done.status, ExecutionStatus::Failed);
    assert_eq!(done.error.as_deref(), Some("Batch.JobFailed"));
}

#[test]
fn the_status_poll_completes_the_task_at_the_declared_interval() {
    let h = Harness::new();
    let batch = Batch::default();
    let (arn, key) = start(&h, &batch, "");
    assert_eq!(h.engine.next_timer_due_ms(), Some(h.start_ms + POLL_MS));
    h.tick(POLL_MS);
    assert_eq!(batch.service.lock().polls, 1);
    assert_eq!(
        status(&h.engine, &arn),
        ExecutionStatus::Running,
        "still running"
    );
    assert_eq!(h.engine.next_timer_due_ms(), Some(h.start_ms + 2 * POLL_MS));
    batch
        .service
        .lock()
        .statuses
        .insert(key, JobStatus::Succeeded(json!({"via": "poll"})));
    h.tick(POLL_MS);
    let done = h.engine.wait_until_closed(&arn).expect("closes");
    assert_eq!(done.output, Some(json!({"via": "poll"})));
    assert_eq!(batch.service.lock().polls, 2);
    assert!(h.engine.background_errors().is_empty());
}

#[test]
fn a_push_racing_a_poll_completes_the_task_once() {
    for round in 0..20 {
        let h = Harness::new();
        let batch = Batch::default();
        let (arn, key) = start(&h, &batch, "");
        batch
            .service
            .lock()
            .statuses
            .insert(key.clone(), JobStatus::Succeeded(json!({"via": "poll"})));
        h.clock.advance_ms(POLL_MS);
        h.engine.run_due_timers();
        let pushed = h
            .engine
            .report_job(&key, JobStatus::Succeeded(json!({"via": "push"})));
        h.engine.wait_idle();
        let done = h.engine.wait_until_closed(&arn).expect("closes");
        assert_eq!(done.status, ExecutionStatus::Succeeded);
        let via = done.output.expect("output")["via"].clone();
        match pushed {
            Ok(()) => assert_eq!(via, json!("push"), "round {round}"),
            Err(Error::TaskTimedOut { .. }) => assert_eq!(via, json!("poll"), "round {round}"),
            Err(other) => panic!("round {round}: {other}"),
        }
        let types = event_types(&h.engine, &arn);
        assert_eq!(count(&types, "TaskSucceeded"), 1, "{types:?}");
        assert!(h.engine.background_errors().is_empty(), "round {round}");
    }
}

#[test]
fn after_a_restart_mid_job_the_poll_completes_the_task() {
    let h = Harness::new();
    let batch = Batch::default();
    let (arn, key) = start(&h, &batch, "");
    let h = h.restart(60_000);
    // The job finished while the engine was down; nobody pushes.
    batch.service.lock().statuses.insert(
        key.clone(),
        JobStatus::Succeeded(json!({"after": "restart"})),
    );
    assert_eq!(h.engine.running_job_count(), 0, "known once registered");
    h.engine.register_job_integration(BASE, batch.clone());
    assert_eq!(h.engine.running_job_count(), 1);
    h.engine.run_due_timers();
    h.engine.wait_idle();
    let done = h.engine.wait_until_closed(&arn).expect("closes");
    assert_eq!(done.output, Some(json!({"after": "restart"})));
    assert_eq!(
        batch.service.lock().started.len(),
        1,
        "the recorded handle is polled, the job is not started again"
    );
}

#[test]
fn stopping_the_execution_cancels_the_job() {
    let h = Harness::new();
    let batch = Batch::default();
    let (arn, key) = start(&h, &batch, "");
    h.engine
        .stop_execution(&arn, Some("Stop"), None)
        .expect("stop");
    h.engine.wait_idle();
    let cancelled = batch.service.lock().cancelled.clone();
    assert_eq!(
        cancelled,
        vec![json!({"JobId": key.to_string(), "Queue": "q1"})]
    );
    // Recorded: the handle is in TaskSubmitted, followed by the abort.
    let types = event_types(&h.engine, &arn);
    let submitted = types.iter().position(|t| t == "TaskSubmitted");
    let aborted = types.iter().position(|t| t == "ExecutionAborted");
    assert!(submitted < aborted && submitted.is_some(), "{types:?}");
    assert_eq!(h.engine.running_job_count(), 0);
    // A late poll finds nothing to ask.
    h.tick(POLL_MS);
    assert_eq!(batch.service.lock().polls, 0);
    assert!(h.engine.background_errors().is_empty());
}

#[test]
fn the_tasks_timeout_cancels_the_job() {
    let h = Harness::new();
    let batch = Batch::default();
    let (arn, _) = start(&h, &batch, r#","TimeoutSeconds":3"#);
    h.tick(3_000);
    let done = h.engine.wait_until_closed(&arn).expect("closes");
    assert_eq!(done.error.as_deref(), Some("States.Timeout"));
    assert_eq!(batch.service.lock().cancelled.len(), 1);
}

#[test]
fn the_tasks_heartbeat_timeout_cancels_the_job_and_a_running_push_beats() {
    let h = Harness::new();
    let batch = Batch::default();
    let (arn, key) = start(&h, &batch, r#","HeartbeatSeconds":8"#);
    h.tick(6_000);
    h.engine
        .report_job(&key, JobStatus::Running)
        .expect("a running push is a heartbeat");
    h.tick(6_000);
    assert_eq!(status(&h.engine, &arn), ExecutionStatus::Running, "beaten");
    h.tick(3_000);
    let done = h.engine.wait_until_closed(&arn).expect("closes");
    assert_eq!(done.error.as_deref(), Some("States.HeartbeatTimeout"));
    assert_eq!(batch.service.lock().cancelled.len(), 1);
}

#[test]
fn an_undeclared_pattern_is_rejected_at_creation() {
    let h = Harness::new();
    h.engine.register_job_integration(BASE, Batch::default());
    let definition = format!(
        r#"{{"StartAt":"P","States":{{"P":{{"Type":"Parallel","End":true,"Branches":[
            {{"StartAt":"Run","States":{{"Run":{{"Type":"Task","Resource":"{BASE}.waitForTaskToken","End":true}}}}}}]}}}}}}"#
    );
    match h.engine.create_state_machine("m", &definition, None) {
        Err(Error::InvalidDefinition { diagnostics }) => {
            assert_eq!(diagnostics.len(), 1);
            assert_eq!(
                diagnostics[0].path,
                "/States/P/Branches/0/States/Run/Resource"
            );
            assert!(
                diagnostics[0].message.contains(".waitForTaskToken"),
                "{}",
                diagnostics[0].message
            );
        }
        other => panic!("accepted: {other:?}"),
    }
}

#[test]
fn an_undeclared_pattern_registered_after_creation_fails_the_task_at_dispatch() {
    let h = Harness::new();
    let definition = format!(
        r#"{{"StartAt":"Run","States":{{"Run":{{"Type":"Task","Resource":"{BASE}","End":true}}}}}}"#
    );
    h.engine
        .create_state_machine("m", &definition, None)
        .expect("no integration yet: accepted");
    h.engine.register_job_integration(BASE, Batch::default());
    let arn = h
        .engine
        .start_execution("m", Some("e"), "{}")
        .expect("start")
        .execution_arn;
    h.engine.wait_idle();
    let done = h.engine.wait_until_closed(&arn).expect("closes");
    assert_eq!(done.error.as_deref(), Some("States.Runtime"));
    assert!(done.cause.unwrap_or_default().contains("(no suffix)"));
}

#[test]
fn a_report_for_a_token_task_is_refused() {
    let h = Harness::new();
    h.engine.register_integration(
        "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
        |_input: Value, _context: Value| async { Ok(json!({})) },
    );
    h.engine
        .create_state_machine(
            "m",
            r#"{"StartAt":"Ask","States":{"Ask":{"Type":"Task","Resource":"arn:aws:states:::sqs:sendMessage.waitForTaskToken","End":true}}}"#,
            None,
        )
        .expect("machine");
    let arn = h
        .engine
        .start_execution("m", Some("e"), "{}")
        .expect("start")
        .execution_arn;
    h.engine.wait_idle();
    let key = JobKey {
        execution_arn: arn.clone(),
        task_id: 3,
    };
    let types = event_types(&h.engine, &arn);
    assert_eq!(types[2], "TaskScheduled", "{types:?}");
    assert!(matches!(
        h.engine.report_job(&key, JobStatus::Succeeded(json!({}))),
        Err(Error::InvalidArgument { .. })
    ));
    assert_eq!(status(&h.engine, &arn), ExecutionStatus::Running);
}

#[test]
fn a_failed_parallel_branch_cancels_its_siblings_job() {
    let h = Harness::new();
    let batch = Batch::default();
    h.engine.register_job_integration(BASE, batch.clone());
    let definition = format!(
        r#"{{"StartAt":"P","States":{{"P":{{"Type":"Parallel","End":true,"Branches":[
            {{"StartAt":"Run","States":{{"Run":{{"Type":"Task","Resource":"{BASE}.sync:2","End":true}}}}}},
            {{"StartAt":"Later","States":{{
                "Later":{{"Type":"Wait","Seconds":10,"Next":"Boom"}},
                "Boom":{{"Type":"Fail","Error":"Boom"}}}}}}]}}}}}}"#
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
    assert_eq!(h.engine.running_job_count(), 1);
    h.tick(10_000);
    let done = h.engine.wait_until_closed(&arn).expect("closes");
    assert_eq!(done.error.as_deref(), Some("Boom"));
    let types = event_types(&h.engine, &arn);
    assert!(types.contains(&"TaskStateAborted".to_string()), "{types:?}");
    assert_eq!(batch.service.lock().cancelled.len(), 1);
    assert_eq!(h.engine.running_job_count(), 0);
}

/// Finishes every job inside `start`, pushing the outcome before `start` returns its handle.
struct EarlyFinisher {
    engine: Arc<Mutex<Option<Engine>>>,
    batch: Batch,
}

impl JobIntegration for EarlyFinisher {
    fn patterns(&self) -> Vec<IntegrationPattern> {
        vec![IntegrationPattern::Sync]
    }

    fn poll_interval_ms(&self) -> u64 {
        POLL_MS
    }

    fn start(&self, start: JobStart) -> JobFuture<Value> {
        let engine = self.engine.lock().clone();
        Box::pin(async move {
            let engine = engine.expect("engine set");
            let key = start.key.clone();
            tokio::task::spawn_blocking(move || {
                engine.report_job(&key, JobStatus::Succeeded(json!({"early": true})))
            })
            .await
            .expect("joined")
            .expect("the push is accepted before the handle is returned");
            Ok(json!({"JobId": start.key.to_string()}))
        })
    }

    fn status(&self, job: Job) -> JobFuture<JobStatus> {
        self.batch.status(job)
    }

    fn cancel(&self, job: Job) -> JobFuture<()> {
        self.batch.cancel(job)
    }
}

#[test]
fn a_push_that_overtakes_the_start_waits_for_it_completes_once_and_the_job_is_forgotten() {
    let h = Harness::new();
    let batch = Batch::default();
    let engine = Arc::new(Mutex::new(Some(h.engine.clone())));
    h.engine.register_job_integration(
        BASE,
        EarlyFinisher {
            engine: engine.clone(),
            batch: batch.clone(),
        },
    );
    h.engine
        .create_state_machine("m", &definition(""), None)
        .expect("machine");
    let arn = h
        .engine
        .start_execution("m", Some("e"), r#"{"queue":"q"}"#)
        .expect("start")
        .execution_arn;
    h.engine.wait_idle();
    let done = h.engine.wait_until_closed(&arn).expect("closes");
    assert_eq!(done.output, Some(json!({"early": true})));
    // The push came while `start` was still pending: it waited for the start's answer and was
    // decided right after it, in the commit that records it, as AWS orders them.
    assert_eq!(event_types(&h.engine, &arn), ONE_TASK_SUCCEEDED);
    // The handle arrived after the job ended: its first poll forgets it (and cancels, idempotent).
    h.tick(POLL_MS);
    assert_eq!(h.engine.running_job_count(), 0);
    assert_eq!(batch.service.lock().polls, 0, "no status asked");
    assert!(h.engine.background_errors().is_empty());
    engine.lock().take();
}

#[test]
fn after_a_restart_a_stop_cancels_the_recorded_job() {
    let h = Harness::new();
    let batch = Batch::default();
    let (arn, key) = start(&h, &batch, "");
    let h = h.restart(1_000);
    h.engine.register_job_integration(BASE, batch.clone());
    h.engine
        .stop_execution(&arn, Some("Stop"), None)
        .expect("stop");
    h.engine.wait_idle();
    assert_eq!(
        batch.service.lock().cancelled,
        vec![json!({"JobId": key.to_string(), "Queue": "q1"})],
        "the handle recorded before the restart is cancelled"
    );
}

#[test]
fn after_a_restart_a_stop_before_the_registration_cancels_the_job_once_registered() {
    let h = Harness::new();
    let batch = Batch::default();
    let (arn, key) = start(&h, &batch, "");
    let h = h.restart(1_000);
    // The stop comes first: nothing can cancel the job yet, but the engine remembers it.
    h.engine
        .stop_execution(&arn, Some("Stop"), None)
        .expect("stop");
    h.engine.wait_idle();
    assert_eq!(status(&h.engine, &arn), ExecutionStatus::Aborted);
    assert!(batch.service.lock().cancelled.is_empty());
    h.engine.register_job_integration(BASE, batch.clone());
    h.engine.wait_idle();
    assert_eq!(
        batch.service.lock().cancelled,
        vec![json!({"JobId": key.to_string(), "Queue": "q1"})],
        "the queued cancel is called by the registration"
    );
    assert_eq!(h.engine.running_job_count(), 0);
    // Registering again cancels nothing more, and nothing is polled.
    h.engine.register_job_integration(BASE, batch.clone());
    h.tick(POLL_MS);
    assert_eq!(batch.service.lock().cancelled.len(), 1);
    assert_eq!(batch.service.lock().polls, 0);
    assert!(h.engine.background_errors().is_empty());
}

#[test]
fn after_a_restart_a_job_completed_before_the_registration_is_not_cancelled() {
    let h = Harness::new();
    let batch = Batch::default();
    let (arn, key) = start(&h, &batch, "");
    let h = h.restart(1_000);
    h.engine
        .report_job(&key, JobStatus::Succeeded(json!({"done": true})))
        .expect("push");
    let done = h.engine.wait_until_closed(&arn).expect("closes");
    assert_eq!(done.status, ExecutionStatus::Succeeded);
    h.engine.register_job_integration(BASE, batch.clone());
    h.engine.wait_idle();
    assert!(batch.service.lock().cancelled.is_empty());
    assert_eq!(h.engine.running_job_count(), 0);
}
