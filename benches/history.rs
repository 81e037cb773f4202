//! GetExecutionHistory at 25,000 events (plain timing, printed as `FIGURE name: value` lines):
//! what the web console's Events table costs the server for one page of 25.
//!
//! One execution whose history is written in many records: a loop whose Wait timer fires once
//! per round, so each round is a commit of its own (about 4,200 records), until the history
//! limit stops it at 25,000 events. Pages of 25: the first oldest first, the first newest first
//! (what the console shows on "Newest first"), and one in the middle. Then the same for a
//! machine whose definition also holds a Map state (never reached): with an input written
//! otherwise than compactly (kept as written), its pages read the history from the first event,
//! since a Map's exit changes how the input renders in the events after it.
//!
//! The log is written without fdatasync (reads are measured, not writes). Each figure is the
//! median and the slowest of `READS` reads.
//!
//! Run: `cargo bench --bench history`.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use statelog::clock::ManualClock;
use statelog::engine::{Engine, EngineOptions, HistoryQuery};
use statelog_wal::Durability;

const START_MS: u64 = 1_704_067_200_000;
const READS: usize = 21;
const PAGE_EVENTS: usize = 25;
const HISTORY_EVENTS: usize = 25_000;
/// Written with a space, as Python's `json.dumps` writes it: the history keeps this text, and
/// with a Map state in the definition a page then needs the first `MapStateExited` before it.
const INPUT: &str = r#"{"n": 1}"#;

fn engine(dir: &Path, clock: &ManualClock) -> Engine {
    let options = EngineOptions {
        clock: Arc::new(clock.clone()),
        background_timers: false,
        durability: Durability::NoSync,
        ..EngineOptions::default()
    };
    Engine::open(dir, options).expect("engine opens")
}

/// Rounds of Inc (Pass), Nap (a one-second Wait) and More (Choice), 6 events each, until the
/// history limit; `with_map` adds a Map state the Choice never takes.
fn definition(with_map: bool) -> String {
    let never = if with_map {
        r#", "Never": {"Type": "Map", "ItemProcessor": {"StartAt": "I",
              "States": {"I": {"Type": "Pass", "End": true}}}, "End": true}"#
    } else {
        ""
    };
    let never_choice = if with_map {
        r#"{"Variable": "$.i", "NumericLessThan": 0, "Next": "Never"},"#
    } else {
        ""
    };
    format!(
        r#"{{"StartAt": "Init", "States": {{
          "Init": {{"Type": "Pass", "Result": 0, "ResultPath": "$.i", "Next": "Inc"}},
          "Inc": {{"Type": "Pass", "Parameters": {{"i.$": "States.MathAdd($.i, 1)"}}, "Next": "Nap"}},
          "Nap": {{"Type": "Wait", "Seconds": 1, "Next": "More"}},
          "More": {{"Type": "Choice", "Choices": [{never_choice}
              {{"Variable": "$.i", "NumericLessThan": 1000000, "Next": "Inc"}}], "Default": "Done"}},
          "Done": {{"Type": "Succeed"}}{never}
        }}}}"#
    )
}

/// Runs one execution of `definition` to the history limit; its ARN.
fn long_execution(engine: &Engine, clock: &ManualClock, name: &str, with_map: bool) -> String {
    engine
        .create_state_machine(name, &definition(with_map), None)
        .expect("creates");
    let arn = engine
        .start_execution(name, Some("long"), INPUT)
        .expect("starts")
        .execution_arn;
    loop {
        let described = engine.describe_execution(&arn).expect("describes");
        if described.status.is_closed() {
            break;
        }
        clock.advance_ms(1_000);
        engine.run_due_timers();
    }
    let all = engine
        .get_execution_history(
            &arn,
            &HistoryQuery {
                max_results: 1,
                reverse_order: true,
                ..HistoryQuery::default()
            },
        )
        .expect("reads");
    assert_eq!(
        all.events[0].id.0 as usize, HISTORY_EVENTS,
        "the history limit"
    );
    arn
}

/// The oldest-first token of the page starting after `events` events, paged to as a client does.
fn token_at(engine: &Engine, arn: &str, events: usize) -> String {
    let mut token = None;
    let mut read = 0;
    while read < events {
        let query = HistoryQuery {
            max_results: (events - read).min(1000),
            next_token: token,
            ..HistoryQuery::default()
        };
        let page = engine.get_execution_history(arn, &query).expect("reads");
        read += page.events.len();
        token = page.next_token;
    }
    token.expect("a page after the middle")
}

/// Median and slowest of `READS` reads of one page, in ms.
fn time_page(
    engine: &Engine,
    arn: &str,
    reverse_order: bool,
    next_token: Option<String>,
) -> (f64, f64) {
    let query = HistoryQuery {
        max_results: PAGE_EVENTS,
        reverse_order,
        next_token,
        include_execution_data: true,
    };
    let mut times: Vec<f64> = (0..READS)
        .map(|_| {
            let started = Instant::now();
            let page = engine.get_execution_history(arn, &query).expect("reads");
            let elapsed = started.elapsed().as_secs_f64() * 1000.0;
            assert_eq!(page.events.len(), PAGE_EVENTS);
            std::hint::black_box(page.to_aws_json());
            elapsed
        })
        .collect();
    times.sort_by(f64::total_cmp);
    (times[READS / 2], times[READS - 1])
}

fn main() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let clock = ManualClock::new(START_MS);
    let engine = engine(dir.path(), &clock);
    for (label, with_map) in [("no_map", false), ("with_map", true)] {
        let built = Instant::now();
        let arn = long_execution(&engine, &clock, &format!("loop_{label}"), with_map);
        println!(
            "built a {HISTORY_EVENTS}-event history ({label}) in {:.1} s",
            built.elapsed().as_secs_f64()
        );
        let middle = Some(token_at(&engine, &arn, HISTORY_EVENTS / 2));
        for (page, reverse, token) in [
            ("first_oldest_first", false, None),
            ("first_newest_first", true, None),
            ("middle_oldest_first", false, middle),
        ] {
            let (median, slowest) = time_page(&engine, &arn, reverse, token);
            println!(
                "FIGURE history_page_{label}_{page}: median {median:.2} ms, slowest {slowest:.2} ms"
            );
        }
    }
}
