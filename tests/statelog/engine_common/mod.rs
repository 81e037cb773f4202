//! Shared helpers of the engine tests: an engine on a manual clock over a log that outlives it,
//! so a test can "crash" (drop the engine) and reopen on the same log.

#![allow(dead_code)]

use std::sync::Arc;

use statelog::clock::ManualClock;
use statelog::engine::{Engine, EngineOptions, HistoryQuery};
use statelog::store::{Log, MemoryLog};

/// The manual clock's start: 2024-01-01T00:00:00Z.
pub const START_MS: u64 = 1_704_067_200_000;

/// Where the engine's log lives across restarts.
pub enum Backing {
    /// A real WAL in a temporary directory.
    Disk(Arc<tempfile::TempDir>),
    /// The in-memory log.
    Memory(Arc<MemoryLog>),
}

/// An engine, its clock and its log.
pub struct Harness {
    pub engine: Engine,
    pub clock: ManualClock,
    pub start_ms: u64,
    backing: Backing,
    tweak: fn(&mut EngineOptions),
}

fn no_tweak(_: &mut EngineOptions) {}

impl Harness {
    pub fn new() -> Self {
        Self::with_options(no_tweak)
    }

    pub fn with_options(tweak: fn(&mut EngineOptions)) -> Self {
        let backing = if std::env::var_os("STATELOG_TEST_MEMORY_LOG").is_some() {
            Backing::Memory(Arc::new(MemoryLog::new()))
        } else {
            Backing::Disk(Arc::new(tempfile::tempdir().expect("temp dir")))
        };
        let clock = ManualClock::new(START_MS);
        let engine = open(&backing, &clock, tweak);
        Harness {
            engine,
            clock,
            start_ms: START_MS,
            backing,
            tweak,
        }
    }

    /// Moves the clock by `advance_ms`, fires the timers now due and waits until the engine
    /// has recorded everything they started.
    pub fn tick(&self, advance_ms: u64) {
        self.clock.advance_ms(advance_ms);
        self.engine.run_due_timers();
        self.engine.wait_idle();
    }

    /// Drops the engine (as a crash would: nothing is flushed that was not already durable),
    /// moves the clock by `advance_ms` and reopens on the same log.
    pub fn restart(self, advance_ms: u64) -> Self {
        let Harness {
            engine,
            clock,
            start_ms,
            backing,
            tweak,
        } = self;
        engine.wait_idle();
        drop(engine);
        clock.advance_ms(advance_ms);
        let engine = open(&backing, &clock, tweak);
        Harness {
            engine,
            clock,
            start_ms,
            backing,
            tweak,
        }
    }
}

fn open(backing: &Backing, clock: &ManualClock, tweak: fn(&mut EngineOptions)) -> Engine {
    let mut options = EngineOptions {
        clock: Arc::new(clock.clone()),
        background_timers: false,
        entropy_seed: Some(7),
        segment_size_bytes: 1 << 20,
        ..EngineOptions::default()
    };
    tweak(&mut options);
    match backing {
        Backing::Disk(dir) => Engine::open(dir.path(), options).expect("engine opens"),
        Backing::Memory(log) => {
            let log: Arc<dyn Log> = log.clone();
            Engine::open_with_log(log, options).expect("engine opens")
        }
    }
}

/// Runs `future` to its end on a current-thread runtime with timers (the engine's long polls).
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime")
        .block_on(future)
}

/// The event types of an execution's history, in order.
pub fn event_types(engine: &Engine, execution_arn: &str) -> Vec<String> {
    let query = HistoryQuery {
        max_results: 1000,
        ..HistoryQuery::default()
    };
    engine
        .get_execution_history(execution_arn, &query)
        .expect("history reads")
        .events
        .iter()
        .map(|e| e.details.type_name().to_string())
        .collect()
}

/// An engine over a WAL at `dir` on the simulated disk `disk` (segments of
/// `segment_size_bytes`, prepared inline), for the crash sweeps: the clock, seed and other
/// engine options are the caller's. An open the disk refuses is an `Err` with its message.
pub fn open_on_sim(
    disk: &statelog_wal::storage::sim::SimStorage,
    dir: &str,
    durability: statelog_wal::Durability,
    segment_size_bytes: u64,
    options: EngineOptions,
) -> Result<Engine, String> {
    let wal_options = statelog_wal::WalOptions {
        durability,
        segment_size_bytes,
        background_preparation: false,
        ..statelog_wal::WalOptions::default()
    };
    let (wal, _) = statelog_wal::Wal::open_with_storage(Arc::new(disk.clone()), dir, wal_options)
        .map_err(|e| e.to_string())?;
    let log: Arc<dyn Log> = Arc::new(wal);
    Engine::open_with_log(log, options).map_err(|e| e.to_string())
}

/// The retention tests' closing machine: two Pass states, the first adding
/// `{"one": {"pad": <40 x>}}` to the input.
pub const CHAIN: &str = r#"{
  "StartAt": "One",
  "States": {
    "One": {"Type": "Pass", "Result": {"pad": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}, "ResultPath": "$.one", "Next": "Two"},
    "Two": {"Type": "Pass", "End": true}
  }
}"#;

/// The retention tests' open machine: a 300-day Wait (shorter than the 1-year limit), so an
/// execution of it stays open through any run.
pub const LONG_WAIT: &str = r#"{
  "StartAt": "Sleep",
  "States": {"Sleep": {"Type": "Wait", "Seconds": 25920000, "End": true}}
}"#;

/// The history of a one-Task machine whose task was handed over (`TaskSubmitted`), waiting.
pub const ONE_TASK_SUBMITTED: [&str; 5] = [
    "ExecutionStarted",
    "TaskStateEntered",
    "TaskScheduled",
    "TaskStarted",
    "TaskSubmitted",
];

/// The history of a one-Task machine whose handed-over task then succeeded.
pub const ONE_TASK_SUCCEEDED: [&str; 8] = [
    "ExecutionStarted",
    "TaskStateEntered",
    "TaskScheduled",
    "TaskStarted",
    "TaskSubmitted",
    "TaskSucceeded",
    "TaskStateExited",
    "ExecutionSucceeded",
];

/// Creates the activity `work` and the machine `machine` of one Task on it (`Work`, the end);
/// returns the activity's ARN.
pub fn one_activity_machine(engine: &Engine, machine: &str) -> String {
    let activity = engine
        .create_activity("work")
        .expect("activity")
        .activity_arn;
    let definition = format!(
        r#"{{"StartAt":"Work","States":{{"Work":{{"Type":"Task","Resource":"{activity}","End":true}}}}}}"#
    );
    engine
        .create_state_machine(machine, &definition, None)
        .expect("machine");
    activity
}

/// The whole history of `execution_arn` (up to 1000 events), checked contiguous from 1.
pub fn checked_history(
    engine: &Engine,
    execution_arn: &str,
) -> Vec<statelog::history::HistoryEvent> {
    let query = HistoryQuery {
        max_results: 1000,
        ..HistoryQuery::default()
    };
    let events = engine
        .get_execution_history(execution_arn, &query)
        .expect("history reads")
        .events;
    statelog::history::check_sequence(0, &events).expect("contiguous from 1");
    events
}
