//! Crash test of waiting tasks: a child process (this test binary re-run in child mode) starts
//! executions that park on a `.waitForTaskToken` task and then on an activity task, prints every
//! token its integration receives and every activity task it claims, and is SIGKILLed after a
//! seeded random number of those lines (the parent never sleeps). Several children run in turn
//! on the same data directory (idempotent starts). Then the parent opens the directory itself and
//! answers every token it saw, takes the activity tasks still queued, and checks that every
//! execution SUCCEEDED with a dense history: a token printed before a kill (its task durable
//! before it left) is still honoured, a claimed task stays claimed, none is lost or doubled.
//! Tasks whose token a child received but the parent never read (the kill came first) are freed
//! the AWS way: their heartbeat runs out on the parent's manual clock and the retry gets a new
//! token.
//!
//! `STATELOG_WAITING_CRASH_SEED` (default printed) tunes it.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{json, Value};
use statelog::clock::ManualClock;
use statelog::engine::{Engine, EngineOptions, ExecutionStatus, HistoryQuery};
use statelog::history::check_sequence;

const CHILD_ENV: &str = "STATELOG_WAITING_CRASH_DIR";
const EXECUTIONS: u64 = 16;
const CHILDREN: usize = 4;
const SEND: &str = "arn:aws:states:::sqs:sendMessage.waitForTaskToken";

fn definition(activity_arn: &str) -> String {
    format!(
        r#"{{"StartAt":"Ask","States":{{
        "Ask":{{"Type":"Task","Resource":"{SEND}","ResultPath":"$.asked","HeartbeatSeconds":60,
            "Retry":[{{"ErrorEquals":["States.Timeout"],"IntervalSeconds":1,"MaxAttempts":5}}],
            "Parameters":{{"QueueUrl":"q","MessageBody":{{"TaskToken.$":"$$.Task.Token"}}}},"Next":"Work"}},
        "Work":{{"Type":"Task","Resource":"{activity_arn}","ResultPath":"$.worked","HeartbeatSeconds":60,
            "Retry":[{{"ErrorEquals":["States.Timeout"],"IntervalSeconds":1,"MaxAttempts":5}}],"End":true}}}}}}"#
    )
}

/// Opens the engine with the queue integration (prints `token <t>`, and keeps it in `sink`
/// when given), the activity, the machine.
fn engine(
    dir: &str,
    options: EngineOptions,
    sink: Option<Arc<Mutex<Vec<String>>>>,
) -> (Engine, String) {
    let engine = Engine::open(dir, options).expect("engine opens");
    engine.register_integration(SEND, move |input: Value, _context: Value| {
        let sink = sink.clone();
        async move {
            let token = input["MessageBody"]["TaskToken"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            println!("token {token}");
            if let Some(sink) = sink {
                sink.lock().push(token);
            }
            Ok(json!({"MessageId": "m"}))
        }
    });
    let activity = engine.create_activity("crash-work").expect("activity");
    engine
        .create_state_machine("parky", &definition(&activity.activity_arn), None)
        .expect("machine");
    for i in 0..EXECUTIONS {
        match engine.start_execution(
            "parky",
            Some(&format!("e{i}")),
            &json!({"i": i}).to_string(),
        ) {
            Ok(_) => {}
            Err(e) if e.aws_name() == "ExecutionAlreadyExists" => {}
            Err(e) => panic!("start: {e}"),
        }
    }
    (engine, activity.activity_arn)
}

/// Takes every queued activity task (0 ms wait); returns their tokens.
fn claim_all(engine: &Engine, activity_arn: &str, worker: &str) -> Vec<String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    let mut tokens = Vec::new();
    let lists = [activity_arn.to_string()];
    while let Some(task) = runtime
        .block_on(engine.poll_task_lists("000000000000", &lists, Some(worker), 0))
        .expect("poll")
    {
        tokens.push(task.task_token);
    }
    tokens
}

/// Child mode: does nothing unless the parent set the directory.
#[test]
fn waiting_crash_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (engine, activity_arn) = engine(&dir, EngineOptions::default(), None);
    engine.wait_idle();
    for token in claim_all(&engine, &activity_arn, "child") {
        println!("claimed {token}");
    }
    println!("done");
}

#[test]
fn parked_and_claimed_tasks_survive_killed_engines() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    let seed: u64 = std::env::var("STATELOG_WAITING_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_1234_abcd_0001);
    println!("seed {seed}");
    let mut rng = statelog_rng::Rng::new(seed);
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = std::env::current_exe().expect("test binary");
    let child_test = crate::kill_common::test_path(module_path!(), "waiting_crash_child");
    let mut tokens = BTreeSet::new();
    for _ in 0..CHILDREN {
        let kill_after = 1 + rng.below(2 * EXECUTIONS);
        let mut child = Command::new(&exe)
            .args(["--exact", &child_test, "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("child starts");
        let stdout = child.stdout.take().expect("piped");
        let mut seen = 0;
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(token) = line
                .strip_prefix("token ")
                .or_else(|| line.strip_prefix("claimed "))
            {
                tokens.insert(token.to_string());
                seen += 1;
                if seen >= kill_after {
                    let _ = child.kill();
                    break;
                }
            }
        }
        let _ = child.wait();
    }
    // The last life: this process, on a manual clock.
    let clock = ManualClock::new(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64),
    );
    let options = EngineOptions {
        clock: Arc::new(clock.clone()),
        background_timers: false,
        ..EngineOptions::default()
    };
    let sink = Arc::new(Mutex::new(Vec::new()));
    let (engine, activity_arn) = engine(
        dir.path().to_str().expect("utf-8 path"),
        options,
        Some(sink.clone()),
    );
    engine.wait_idle();
    // Every token seen before a kill is honoured (nothing has timed out yet).
    let seen_before = tokens.len();
    let mut answered = BTreeSet::new();
    for token in &tokens {
        engine
            .send_task_success(token, r#"{"late":false}"#)
            .unwrap_or_else(|e| panic!("a token seen before a crash was refused: {e}"));
        answered.insert(token.clone());
    }
    // Then the rest: queued activity tasks, and tasks lost with a killed child freed by their
    // heartbeat, retried with new tokens.
    for _round in 0..8 {
        engine.wait_idle();
        let mut fresh: Vec<String> = std::mem::take(&mut *sink.lock());
        fresh.extend(claim_all(&engine, &activity_arn, "parent"));
        for token in fresh {
            if answered.insert(token.clone()) {
                engine.send_task_success(&token, "{}").expect("fresh token");
            }
        }
        if engine.open_execution_count() == 0 {
            break;
        }
        clock.advance_ms(61_000);
        engine.run_due_timers();
        engine.wait_idle();
        clock.advance_ms(1_000);
        engine.run_due_timers();
    }
    println!(
        "tokens seen before the last kill: {seen_before}, answered in all: {}",
        answered.len()
    );
    assert!(
        answered.len() as u64 >= 2 * EXECUTIONS,
        "two tokens per execution at least"
    );
    for i in 0..EXECUTIONS {
        let arn = engine.execution_arn("parky", &format!("e{i}"));
        let described = engine.describe_execution(&arn).expect("exists");
        assert_eq!(described.status, ExecutionStatus::Succeeded, "{arn}");
        assert_eq!(described.output.as_ref().map(|o| &o["i"]), Some(&json!(i)));
        let query = HistoryQuery {
            max_results: 1000,
            ..HistoryQuery::default()
        };
        let events = engine
            .get_execution_history(&arn, &query)
            .expect("history")
            .events;
        check_sequence(0, &events).expect("dense, well-linked history");
    }
}
