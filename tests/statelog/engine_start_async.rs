//! `Engine::start_execution_async`: starts awaited on a tokio runtime, none blocking a thread
//! on the log's sync, each is durable when its future completes: on the
//! WAL's simulated disk, a crash right after the futures complete (unsynced writes torn
//! halfway) keeps every start that completed, closed as it ran. A task its commit claimed for
//! a waiting poller reaches that poller once the start is durable. Off a runtime and for a
//! same-name start it answers as `start_execution` does.

use crate::engine_common;
use engine_common::{checked_history, open_on_sim, Harness};

use std::sync::Arc;

use statelog::clock::ManualClock;
use statelog::engine::{Engine, EngineOptions, Error, ExecutionStatus};
use statelog_wal::storage::sim::{CrashMode, SimStorage};
use statelog_wal::Durability;

const START_MS: u64 = 1_704_067_200_000;
const DIR: &str = "/data";
const CHAIN: &str = r#"{"StartAt":"One","States":{
    "One":{"Type":"Pass","Result":{"step":1},"ResultPath":"$.one","Next":"Two"},
    "Two":{"Type":"Pass","End":true}}}"#;
/// Open until stopped: the manual clock never reaches the Wait's end.
const SLEEPER: &str =
    r#"{"StartAt":"Sleep","States":{"Sleep":{"Type":"Wait","Seconds":86400,"End":true}}}"#;
const STARTS: usize = 48;

fn open(disk: &SimStorage, clock: &ManualClock) -> Engine {
    let options = EngineOptions {
        clock: Arc::new(clock.clone()),
        background_timers: false,
        entropy_seed: Some(11),
        ..EngineOptions::default()
    };
    open_on_sim(disk, DIR, Durability::GroupCommit, 64 * 1024, options).expect("opens")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("runtime")
}

#[test]
fn async_starts_are_durable_when_they_complete_and_survive_a_crash() {
    let disk = SimStorage::new();
    let clock = ManualClock::new(START_MS);
    let engine = open(&disk, &clock);
    engine
        .create_state_machine("chain", CHAIN, None)
        .expect("machine");
    let runtime = runtime();
    // Each start's own crash, taken the moment its future completes: only what was synced
    // by then survives (the unsynced stream torn halfway).
    let crashes: Vec<(String, SimStorage)> = runtime.block_on(async {
        let tasks: Vec<_> = (0..STARTS)
            .map(|index| {
                let engine = engine.clone();
                let disk = disk.clone();
                tokio::spawn(async move {
                    let name = format!("e{index}");
                    let input = format!(r#"{{"n": {index}}}"#);
                    let started = engine
                        .start_execution_async("chain", Some(&name), &input)
                        .await
                        .expect("starts");
                    let cut_bytes = disk.pending_bytes() / 2;
                    let crashed = disk.crash(CrashMode::TornTail { cut_bytes });
                    (started.execution_arn, crashed)
                })
            })
            .collect();
        let mut crashes = Vec::new();
        for task in tasks {
            crashes.push(task.await.expect("task"));
        }
        crashes
    });
    drop(runtime);
    for (index, (arn, crashed)) in crashes.iter().enumerate() {
        let engine = open(crashed, &clock);
        let described = engine.describe_execution(arn).expect("kept");
        assert_eq!(described.status, ExecutionStatus::Succeeded, "{arn}");
        assert_eq!(described.output.expect("output")["n"], index);
        let history = checked_history(&engine, arn);
        assert_eq!(
            history.last().map(|e| e.details.type_name()),
            Some("ExecutionSucceeded")
        );
    }
    // And the engine that ran them describes them closed, without waiting.
    for (arn, _) in &crashes {
        let described = engine.describe_execution(arn).expect("describes");
        assert_eq!(described.status, ExecutionStatus::Succeeded);
    }
}

#[test]
fn an_async_start_answers_as_the_blocking_one_off_a_runtime_and_for_a_same_name_start() {
    let h = Harness::new();
    h.engine
        .create_state_machine("sleeper", SLEEPER, None)
        .expect("machine");
    // Off a runtime: the blocking start, inside a plain executor.
    let first = engine_common::block_on(async {
        h.engine
            .start_execution_async("sleeper", Some("same"), "{}")
            .await
    })
    .expect("starts");
    let runtime = runtime();
    runtime.block_on(async {
        // The same name and input: the start made already (AWS answers it again).
        let again = h
            .engine
            .start_execution_async("sleeper", Some("same"), "{}")
            .await
            .expect("the same start");
        assert_eq!(again.execution_arn, first.execution_arn);
        assert_eq!(again.start_ms, first.start_ms);
        // Another input under the same name: refused, as `start_execution` refuses it.
        let refused = h
            .engine
            .start_execution_async("sleeper", Some("same"), r#"{"other": 1}"#)
            .await;
        assert!(
            matches!(refused, Err(Error::ExecutionAlreadyExists { .. })),
            "{refused:?}"
        );
        // An unknown machine: the same typed error as the blocking call.
        let unknown = h.engine.start_execution_async("nobody", None, "{}").await;
        assert!(
            matches!(unknown, Err(Error::StateMachineDoesNotExist { .. })),
            "{unknown:?}"
        );
    });
    let described = h
        .engine
        .describe_execution(&first.execution_arn)
        .expect("describes");
    assert_eq!(described.status, ExecutionStatus::Running);
}

#[test]
fn an_async_start_hands_its_first_task_to_a_waiting_poller() {
    let h = Harness::new();
    let activity = engine_common::one_activity_machine(&h.engine, "worker");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    let task = runtime.block_on(async {
        let engine = h.engine.clone();
        let arn = activity.clone();
        let poll = tokio::spawn(async move { engine.get_activity_task(&arn, Some("w")).await });
        // The one thread runs the poll until it waits: it is registered before the start.
        for _ in 0..8 {
            tokio::task::yield_now().await;
        }
        let started = h
            .engine
            .start_execution_async("worker", Some("w1"), r#"{"job": 1}"#)
            .await
            .expect("starts");
        // The start's commit claimed the task for the waiting poll; the poll gets it once the
        // start is durable. The guard turns a lost hand-over into a failure, not a 60 s wait.
        let task = tokio::time::timeout(std::time::Duration::from_secs(20), poll)
            .await
            .expect("the poll returns")
            .expect("poll task")
            .expect("polls")
            .expect("a task");
        assert_eq!(task.execution_arn, started.execution_arn);
        task
    });
    assert_eq!(task.input, r#"{"job":1}"#);
    h.engine
        .send_task_success(&task.task_token, "{}")
        .expect("answers");
    let described = h
        .engine
        .wait_until_closed(&task.execution_arn)
        .expect("closes");
    assert_eq!(described.status, ExecutionStatus::Succeeded);
}
