//! `Engine::wait_until_closed` under concurrency: many threads wait on different executions,
//! and each returns with its own execution once that one closes (the others still wait); a
//! close racing a waiter's registration still wakes it; an already closed execution returns at
//! once; an unknown one is the same error as before.

use std::sync::atomic::{AtomicBool, Ordering};

use statelog::engine::{Error, ExecutionStatus};

use crate::engine_common::Harness;

/// Open until stopped: the manual clock never reaches the Wait's end.
const SLEEPER: &str =
    r#"{"StartAt":"Sleep","States":{"Sleep":{"Type":"Wait","Seconds":86400,"End":true}}}"#;

/// A harness with the `sleeper` machine.
fn sleeper_harness() -> Harness {
    let h = Harness::new();
    h.engine
        .create_state_machine("sleeper", SLEEPER, None)
        .expect("machine");
    h
}

fn start(h: &Harness, name: &str) -> String {
    h.engine
        .start_execution("sleeper", Some(name), "{}")
        .expect("starts")
        .execution_arn
}

#[test]
fn each_waiter_returns_with_its_own_execution_at_its_close() {
    let h = sleeper_harness();
    let arns: Vec<String> = (0..8)
        .map(|index| start(&h, &format!("e{index}")))
        .collect();
    let returned: Vec<AtomicBool> = arns.iter().map(|_| AtomicBool::new(false)).collect();
    std::thread::scope(|scope| {
        let waiters: Vec<_> = arns
            .iter()
            .zip(&returned)
            .map(|(arn, returned)| {
                let engine = &h.engine;
                scope.spawn(move || {
                    let described = engine.wait_until_closed(arn).expect("closes");
                    returned.store(true, Ordering::SeqCst);
                    described
                })
            })
            .collect();
        for (index, waiter) in waiters.into_iter().enumerate() {
            h.engine
                .stop_execution(&arns[index], None, None)
                .expect("stops");
            let described = waiter.join().expect("waiter");
            assert_eq!(described.execution_arn, arns[index]);
            assert_eq!(described.status, ExecutionStatus::Aborted);
            for later in &returned[index + 1..] {
                assert!(
                    !later.load(Ordering::SeqCst),
                    "only its own close ends a wait"
                );
            }
        }
    });
}

#[test]
fn a_close_racing_the_wait_is_not_lost() {
    let h = sleeper_harness();
    for round_index in 0..300 {
        let arn = start(&h, &format!("race{round_index}"));
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| h.engine.wait_until_closed(&arn).expect("closes"));
            h.engine.stop_execution(&arn, None, None).expect("stops");
            let described = waiter.join().expect("waiter");
            assert_eq!(
                described.status,
                ExecutionStatus::Aborted,
                "round {round_index}"
            );
        });
    }
}

#[test]
fn a_closed_execution_returns_at_once_and_an_unknown_one_is_an_error() {
    let h = sleeper_harness();
    let arn = start(&h, "done");
    h.engine.stop_execution(&arn, None, None).expect("stops");
    let described = h.engine.wait_until_closed(&arn).expect("closed already");
    assert_eq!(described.status, ExecutionStatus::Aborted);
    let unknown = arn.replace(":done", ":nobody");
    match h.engine.wait_until_closed(&unknown) {
        Err(Error::ExecutionDoesNotExist { execution_arn }) => assert_eq!(execution_arn, unknown),
        other => panic!("expected ExecutionDoesNotExist, got {other:?}"),
    }
}

/// The close is in the log (a describe says ABORTED) before the closing thread has cleaned up
/// the run; a redrive in that gap waits for the cleanup instead of refusing as RUNNING, and
/// `wait_until_closed` returns only after it. (A CI run once saw the refusal: issue 16.)
#[test]
fn a_redrive_racing_the_close_waits_for_it_instead_of_refusing() {
    let h = sleeper_harness();
    for round_index in 0..300 {
        let arn = start(&h, &format!("redrive{round_index}"));
        let use_wait = round_index % 2 == 0;
        std::thread::scope(|scope| {
            let redriver = scope.spawn(|| {
                if use_wait {
                    h.engine.wait_until_closed(&arn).expect("closes");
                } else {
                    while !h
                        .engine
                        .describe_execution(&arn)
                        .expect("describes")
                        .status
                        .is_closed()
                    {
                        std::hint::spin_loop();
                    }
                }
                h.engine.redrive_execution(&arn, None)
            });
            h.engine.stop_execution(&arn, None, None).expect("stops");
            let outcome = redriver.join().expect("redriver");
            let outcome = outcome.unwrap_or_else(|e| panic!("round {round_index}: {e}"));
            assert_eq!(outcome.redrive_count, 1, "round {round_index}");
        });
        let described = h.engine.describe_execution(&arn).expect("describes");
        assert_eq!(described.status, ExecutionStatus::Running, "redriven");
    }
}
