//! Parked `.waitForTaskToken` executions cost memory only: N executions wait on their tokens
//! with no handler call in flight and no timer but their own deadlines, then all are answered and
//! all complete. The default run parks 2,000; the ignored run parks 100,000 and prints the heap
//! (anonymous resident) bytes per parked execution:
//! `cargo test --release --test statelog waiting_parked:: -- --ignored --nocapture`.

use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{json, Value};
use statelog::clock::{Clock, ManualClock};
use statelog::engine::{Engine, EngineOptions, ExecutionStatus, ListExecutions};
use statelog_wal::Durability;

const SEND: &str = "arn:aws:states:::sqs:sendMessage.waitForTaskToken";
const MACHINE: &str = r#"{"StartAt":"Ask","States":{"Ask":{"Type":"Task",
    "Resource":"arn:aws:states:::sqs:sendMessage.waitForTaskToken","HeartbeatSeconds":3600,
    "Parameters":{"QueueUrl":"q","MessageBody":{"TaskToken.$":"$$.Task.Token"}},"End":true}}}"#;

/// Anonymous resident bytes of this process (Linux `/proc/self/status`, `RssAnon`): the heap,
/// not the mapped log.
fn rss_anon_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("RssAnon:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn park_and_answer(count: usize) {
    let dir = tempfile::tempdir().expect("temp dir");
    let clock = ManualClock::new(1_704_067_200_000);
    let options = EngineOptions {
        clock: Arc::new(clock.clone()),
        durability: Durability::NoSync,
        background_timers: false,
        entropy_seed: None,
        ..EngineOptions::default()
    };
    let engine = Engine::open(dir.path(), options).expect("engine opens");
    let tokens: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(Vec::with_capacity(count)));
    let sink = tokens.clone();
    engine.register_integration(SEND, move |input: Value, _context: Value| {
        let sink = sink.clone();
        async move {
            let token = input["MessageBody"]["TaskToken"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            sink.lock().push(token);
            Ok(json!({"MessageId": "m"}))
        }
    });
    engine
        .create_state_machine("parked", MACHINE, None)
        .expect("machine");
    // Warm the allocator and the runtime up so the delta counts executions only.
    for i in 0..200 {
        engine
            .start_execution("parked", Some(&format!("warm{i}")), "{}")
            .expect("start");
    }
    engine.wait_idle();
    let before = rss_anon_bytes();
    for i in 0..count {
        engine
            .start_execution("parked", Some(&format!("p{i}")), "{}")
            .expect("start");
    }
    engine.wait_idle();
    let after = rss_anon_bytes();
    let tokens: Vec<String> = std::mem::take(&mut *tokens.lock());
    assert_eq!(tokens.len(), count + 200, "every task was submitted once");
    assert_eq!(engine.open_execution_count(), count + 200);
    // Nothing is due before the earliest heartbeat deadline (1 h): no loop, no poll.
    let now_ms = clock.now_ms();
    assert!(engine
        .next_timer_due_ms()
        .is_some_and(|due| due >= now_ms + 3_600_000));
    assert_eq!(engine.run_due_timers(), 0);
    if let (Some(before), Some(after)) = (before, after) {
        println!(
            "FIGURE parked_executions: {count}  heap_bytes_per_parked_execution: {}",
            after.saturating_sub(before) / count as u64
        );
    }
    for token in &tokens {
        engine
            .send_task_success(token, r#"{"ok":true}"#)
            .expect("answer");
    }
    assert_eq!(engine.open_execution_count(), 0);
    let page = engine
        .list_executions(&ListExecutions {
            status_filter: Some(ExecutionStatus::Running),
            ..ListExecutions::default()
        })
        .expect("list");
    assert!(page.executions.is_empty(), "all completed");
}

#[test]
fn two_thousand_parked_executions_wait_then_all_complete() {
    park_and_answer(2_000);
}

#[test]
#[ignore = "parks 100,000 executions; run with --release --ignored --nocapture for the figure"]
fn a_hundred_thousand_parked_executions_wait_then_all_complete() {
    park_and_answer(100_000);
}
