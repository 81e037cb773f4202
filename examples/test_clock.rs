//! Testing a workflow with time under control: a 10-minute Wait and a 1-hour heartbeat timeout,
//! run in milliseconds of real time on `TestEngine`'s manual clock, and the same workflow's
//! Lambda call answered by a Step Functions Local mock configuration.
//!
//! `cargo run --example test_clock` (it checks what it prints, and exits non-zero when a check
//! fails, so it doubles as a test).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use statelog::engine::testing::{SkipStop, TestEngine};
use statelog::engine::{EngineOptions, ExecutionStatus, MockConfig, TaskError};

/// Wait 10 minutes, then call a Lambda function and wait for its callback, which must
/// heartbeat at least once an hour.
const DEFINITION: &str = r#"{
  "StartAt": "Cool down",
  "States": {
    "Cool down": {"Type": "Wait", "Seconds": 600, "Next": "Approve"},
    "Approve": {
      "Type": "Task",
      "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
      "Parameters": {"FunctionName": "approver", "Payload": {"token.$": "$$.Task.Token"}},
      "HeartbeatSeconds": 3600,
      "End": true
    }
  }
}"#;

/// The approver answers in the test case `Approved`.
const MOCKS: &str = r#"{
  "StateMachines": {"approval": {"TestCases": {"Approved": {"Approve": "Yes"}}}},
  "MockedResponses": {"Yes": {"0": {"Return": {"approved": true}}}}
}"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let real = Instant::now();
    let config = MockConfig::from_json(MOCKS)?;
    let test = TestEngine::with_options(EngineOptions {
        mock_config: Some(Arc::new(config)),
        ..EngineOptions::default()
    })?;
    test.create_state_machine("approval", DEFINITION, None)?;
    // The Lambda call itself: it takes the token and returns (the callback comes later, or not).
    test.register_integration(
        "arn:aws:states:::lambda:invoke.waitForTaskToken",
        |_input: Value, _context: Value| async { Ok::<_, TaskError>(json!({"StatusCode": 202})) },
    );

    // 1. Nobody answers the callback: the heartbeat times the task out an hour later.
    let arn = test
        .start_execution("approval", Some("silent"), "{}")?
        .execution_arn;
    let skipped = test.skip_ahead(); // the 10-minute Wait ends at once
    assert_eq!(skipped.stop, SkipStop::WaitingOnTasks(vec![arn.clone()]));
    test.advance(Duration::from_secs(3599));
    assert_eq!(
        test.describe_execution(&arn)?.status,
        ExecutionStatus::Running
    );
    test.advance(Duration::from_secs(1));
    let timed_out = test.describe_execution(&arn)?;
    assert_eq!(timed_out.status, ExecutionStatus::Failed);
    assert_eq!(timed_out.error.as_deref(), Some("States.HeartbeatTimeout"));
    println!(
        "silent: {} after {} s of workflow time",
        timed_out.error.unwrap_or_default(),
        (test.now_ms() - statelog::engine::testing::TEST_CLOCK_START_MS) / 1000
    );

    // 2. The test case `Approved` answers the callback from the mock file.
    let arn = test
        .start_execution("approval#Approved", Some("approved"), "{}")?
        .execution_arn;
    assert_eq!(test.skip_ahead().stop, SkipStop::NoneOpen);
    let approved = test.describe_execution(&arn)?;
    assert_eq!(approved.status, ExecutionStatus::Succeeded);
    assert_eq!(approved.output, Some(json!({"approved": true})));
    println!("approved: {}", approved.output.unwrap_or_default());

    println!("real time: {} ms", real.elapsed().as_millis());
    Ok(())
}
