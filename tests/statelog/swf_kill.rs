//! Crash test of Amazon SWF workflows with SIGKILL, deciders and workers running: each child
//! process (this test binary re-run in child mode) opens the engine on a real data directory,
//! registers the domain and types (once), starts workflows of its own, and runs two decider
//! threads and two worker threads that take every open workflow (its own and those earlier
//! children left) to its end: three activities, then CompleteWorkflowExecution with their
//! results. The parent SIGKILLs each child after a seeded random number of its progress lines
//! and starts the next on the same directory; a last child finishes every workflow.
//!
//! Each child's clock starts an hour after the previous one's (a manual clock, so nothing times
//! out while a child lives): at open, the tasks a killed child had started time out (decision
//! and activity start-to-close) and are scheduled again; the decider reschedules a timed-out
//! activity under a new activity id.
//!
//! Each workflow, its activities done, starts a child workflow (which completes at once) and
//! completes once it hears the child completed, so kills also land between a child's start,
//! its close and its parent's notice, each written with the other run's events in one append.
//!
//! Then every workflow whose start a child acknowledged must be completed with the right
//! result, its history dense from 1, its one child run completed, naming it as parent, and
//! heard by it; every activity answer a child acknowledged must be in its
//! history; no run of a workflow id completed twice. `STATELOG_CRASH_CYCLES` (default 12) and
//! `STATELOG_CRASH_SEED` tune it.

use crate::kill_common;
use kill_common::{kill_points, run_to_end, run_until_killed, seed_and_cycles, spawn_child};

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use statelog::clock::ManualClock;
use statelog::engine::swf::api;
use statelog::engine::{Engine, EngineOptions};

const CHILD_ENV: &str = "STATELOG_SWF_KILL_DIR";
const MODE_ENV: &str = "STATELOG_SWF_KILL_MODE";
const CYCLE_ENV: &str = "STATELOG_SWF_KILL_CYCLE";
const START_MS: u64 = 1_704_067_200_000;
const HOUR_MS: u64 = 3_600_000;
const DOMAIN: &str = "kill";
/// Workflows each child starts.
const PER_CHILD: u64 = 6;
const ACTIVITIES: u64 = 3;

fn input<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("an API input")
}

fn child_engine(dir: &str, cycle: u64) -> Engine {
    let options = EngineOptions {
        clock: Arc::new(ManualClock::new(START_MS + cycle * HOUR_MS)),
        background_timers: false,
        ..EngineOptions::default()
    };
    Engine::open(dir, options).expect("child opens the engine")
}

/// Registers the domain and the types, unless an earlier child did.
fn register(engine: &Engine) {
    let swf = engine.swf();
    let tolerate = |result: Result<(), api::SwfError>| match result {
        Ok(()) => {}
        Err(e)
            if matches!(
                e.fault,
                api::Fault::DomainAlreadyExists | api::Fault::TypeAlreadyExists
            ) => {}
        Err(e) => panic!("registration: {e}"),
    };
    tolerate(swf.register_domain(&input(json!({
        "name": DOMAIN, "workflowExecutionRetentionPeriodInDays": "30"
    }))));
    tolerate(swf.register_workflow_type(&input(json!({
        "domain": DOMAIN, "name": "sum", "version": "1",
        "defaultTaskStartToCloseTimeout": "60", "defaultExecutionStartToCloseTimeout": "31536000",
        "defaultTaskList": {"name": "deciders"}, "defaultChildPolicy": "TERMINATE"
    }))));
    tolerate(swf.register_activity_type(&input(json!({
        "domain": DOMAIN, "name": "double", "version": "1",
        "defaultTaskStartToCloseTimeout": "60", "defaultTaskHeartbeatTimeout": "NONE",
        "defaultTaskScheduleToStartTimeout": "NONE", "defaultTaskScheduleToCloseTimeout": "NONE",
        "defaultTaskList": {"name": "workers"}
    }))));
}

fn expected_result(i: u64) -> String {
    // Activity k of workflow i doubles 10 * i + k.
    (0..ACTIVITIES)
        .map(|k| 2 * (10 * i + k))
        .sum::<u64>()
        .to_string()
}

/// The child workflow id of workflow `workflow_id`.
fn child_of(workflow_id: &str) -> String {
    format!("kid-{workflow_id}")
}

/// The decisions for a history: a child (`kid-…`) completes at once with "kid"; a workflow
/// with every activity `a<k>` completed starts its child once, and completes with their sum
/// once its child completed; otherwise schedule each `a<k>` that has no completion and no open
/// attempt.
fn decide(events: &[Value], workflow_id: &str) -> Vec<Value> {
    if workflow_id.starts_with("kid-") {
        return vec![json!({
            "decisionType": "CompleteWorkflowExecution",
            "completeWorkflowExecutionDecisionAttributes": {"result": "kid"}
        })];
    }
    let i = number_of(workflow_id);
    let mut scheduled: BTreeMap<u64, String> = BTreeMap::new(); // event id -> activity id
    let mut open: BTreeSet<String> = BTreeSet::new();
    let mut results: BTreeMap<u64, u64> = BTreeMap::new();
    for event in events {
        let id = event["eventId"].as_u64().unwrap_or(0);
        match event["eventType"].as_str().unwrap_or("") {
            "ActivityTaskScheduled" => {
                let activity = event["activityTaskScheduledEventAttributes"]["activityId"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
                scheduled.insert(id, activity.clone());
                open.insert(activity);
            }
            kind @ ("ActivityTaskCompleted" | "ActivityTaskTimedOut" | "ActivityTaskFailed") => {
                let key = format!("{}EventAttributes", lower_first(kind));
                let scheduled_id = event[&key]["scheduledEventId"].as_u64().unwrap_or(0);
                let Some(activity) = scheduled.get(&scheduled_id) else {
                    continue;
                };
                open.remove(activity);
                if kind == "ActivityTaskCompleted" {
                    let k: u64 = activity[1..2].parse().unwrap_or(0);
                    let result = event[&key]["result"].as_str().unwrap_or("0");
                    results.insert(k, result.parse().unwrap_or(0));
                }
            }
            _ => {}
        }
    }
    if results.len() as u64 == ACTIVITIES {
        let has = |kind: &str| events.iter().any(|e| e["eventType"] == kind);
        if !has("StartChildWorkflowExecutionInitiated") {
            return vec![json!({
                "decisionType": "StartChildWorkflowExecution",
                "startChildWorkflowExecutionDecisionAttributes": {
                    "workflowType": {"name": "sum", "version": "1"},
                    "workflowId": child_of(workflow_id)
                }
            })];
        }
        if !has("ChildWorkflowExecutionCompleted") {
            return Vec::new(); // The child is running.
        }
        let sum: u64 = results.values().sum();
        return vec![json!({
            "decisionType": "CompleteWorkflowExecution",
            "completeWorkflowExecutionDecisionAttributes": {"result": sum.to_string()}
        })];
    }
    let mut decisions = Vec::new();
    for k in 0..ACTIVITIES {
        if results.contains_key(&k) || open.iter().any(|a| a.starts_with(&format!("a{k}-"))) {
            continue;
        }
        let attempt = scheduled
            .values()
            .filter(|a| a.starts_with(&format!("a{k}-")))
            .count();
        decisions.push(json!({
            "decisionType": "ScheduleActivityTask",
            "scheduleActivityTaskDecisionAttributes": {
                "activityType": {"name": "double", "version": "1"},
                "activityId": format!("a{k}-{attempt}"),
                "input": (10 * i + k).to_string()
            }
        }));
    }
    decisions
}

fn lower_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_ascii_lowercase().to_string() + chars.as_str(),
        None => String::new(),
    }
}

/// The workflow number in a workflow id `c<cycle>-w<i>`.
fn number_of(workflow_id: &str) -> u64 {
    workflow_id
        .rsplit_once("-w")
        .and_then(|(_, i)| i.parse().ok())
        .unwrap_or(0)
}

fn decider(engine: Engine, stop: Arc<AtomicBool>) {
    let swf = engine.swf();
    while !stop.load(Ordering::SeqCst) {
        let task = swf
            .poll_for_decision_task(
                &input(
                    json!({"domain": DOMAIN, "taskList": {"name": "deciders"}, "identity": "d"}),
                ),
                Duration::from_millis(50),
            )
            .expect("polls");
        if task.task_token.is_empty() {
            continue;
        }
        let execution = task.workflow_execution.expect("a task names its execution");
        let events = task.events.unwrap_or_default();
        assert!(
            task.next_page_token.is_none(),
            "short histories fit one page"
        );
        let decisions = decide(&events, &execution.workflow_id);
        let completes = decisions
            .iter()
            .any(|d| d["decisionType"] == "CompleteWorkflowExecution");
        swf.respond_decision_task_completed(&input(json!({
            "taskToken": task.task_token, "decisions": decisions
        })))
        .expect("answers its decision task");
        if completes {
            println!("ack complete {}", execution.workflow_id);
        }
    }
}

fn worker(engine: Engine, stop: Arc<AtomicBool>) {
    let swf = engine.swf();
    while !stop.load(Ordering::SeqCst) {
        let task = swf
            .poll_for_activity_task(
                &input(json!({"domain": DOMAIN, "taskList": {"name": "workers"}, "identity": "w"})),
                Duration::from_millis(50),
            )
            .expect("polls");
        if task.task_token.is_empty() {
            continue;
        }
        let value: u64 = task
            .input
            .as_deref()
            .unwrap_or("0")
            .parse()
            .expect("a number");
        swf.respond_activity_task_completed(&input(json!({
            "taskToken": task.task_token, "result": (2 * value).to_string()
        })))
        .expect("answers its activity task");
        let execution = task.workflow_execution.expect("names its execution");
        println!(
            "ack activity {} {}",
            execution.workflow_id,
            task.activity_id.expect("an activity id")
        );
    }
}

fn open_count(engine: &Engine) -> u64 {
    engine
        .swf()
        .count_open_workflow_executions(&input(json!({
            "domain": DOMAIN, "startTimeFilter": {"oldestDate": 0}
        })))
        .expect("counts")
        .count
}

/// Child mode: does nothing unless the parent set `STATELOG_SWF_KILL_DIR`.
#[test]
fn swf_kill_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let cycle: u64 = std::env::var(CYCLE_ENV).expect("cycle").parse().expect("n");
    let finish = std::env::var(MODE_ENV).is_ok_and(|m| m == "finish");
    let engine = child_engine(&dir, cycle);
    // Tasks a killed child had started time out now: the clock is an hour on.
    engine.run_due_timers();
    register(&engine);
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    for _ in 0..2 {
        let (e, s) = (engine.clone(), stop.clone());
        threads.push(std::thread::spawn(move || decider(e, s)));
        let (e, s) = (engine.clone(), stop.clone());
        threads.push(std::thread::spawn(move || worker(e, s)));
    }
    if !finish {
        for i in 0..PER_CHILD {
            let workflow_id = format!("c{cycle}-w{i}");
            engine
                .swf()
                .start_workflow_execution(&input(json!({
                    "domain": DOMAIN, "workflowId": workflow_id,
                    "workflowType": {"name": "sum", "version": "1"}, "input": i.to_string()
                })))
                .expect("starts");
            println!("ack start {workflow_id}");
        }
    }
    while open_count(&engine) > 0 {
        std::thread::sleep(Duration::from_millis(5));
    }
    stop.store(true, Ordering::SeqCst);
    for thread in threads {
        thread.join().expect("a decider or worker ends");
    }
    assert!(
        engine.background_errors().is_empty(),
        "{:?}",
        engine.background_errors()
    );
    println!("done");
}

fn spawn(dir: &str, cycle: u64, finish: bool) -> std::process::Child {
    let mode = if finish { "finish" } else { "crash" };
    spawn_child(
        module_path!(),
        "swf_kill_child",
        &[
            (CHILD_ENV, dir.to_string()),
            (MODE_ENV, mode.to_string()),
            (CYCLE_ENV, cycle.to_string()),
        ],
    )
}

#[test]
fn killed_deciders_and_workers_lose_no_acknowledged_task_and_every_workflow_completes() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let (seed, cycles) = seed_and_cycles("swf kill test", 0x5f0d_ec1d, 12);
    let mut rng = kill_points(seed);
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().to_str().expect("utf-8 path").to_string();
    let mut started = BTreeSet::new();
    let mut answered: BTreeSet<(String, String)> = BTreeSet::new();
    let mut completed = BTreeSet::new();
    let mut kills = 0u64;
    let mut record = |line: &str| {
        if let Some(id) = line.strip_prefix("ack start ") {
            started.insert(id.to_string());
        }
        if let Some(id) = line.strip_prefix("ack complete ") {
            completed.insert(id.to_string());
        }
        if let Some(rest) = line.strip_prefix("ack activity ") {
            if let Some((workflow, activity)) = rest.split_once(' ') {
                answered.insert((workflow.to_string(), activity.to_string()));
            }
        }
        line.starts_with("ack ")
    };
    for cycle in 0..cycles {
        // About five lines per workflow: kills land anywhere in a child's life.
        let lines_before_kill = 1 + rng.below(5 * PER_CHILD);
        kills += u64::from(run_until_killed(
            spawn(&dir, cycle, false),
            lines_before_kill,
            &mut record,
        ));
    }
    let mut done = false;
    run_to_end(spawn(&dir, cycles, true), |line| {
        record(line);
        done |= line == "done";
    });
    assert!(done, "the last child took every workflow to its end");
    println!(
        "swf kill test: {kills} kills, {} starts, {} activity answers, {} completions acknowledged",
        started.len(),
        answered.len(),
        completed.len()
    );
    assert!(kills > 0, "some child was killed");

    let options = EngineOptions {
        clock: Arc::new(ManualClock::new(START_MS + (cycles + 1) * HOUR_MS)),
        read_only: true,
        background_timers: false,
        ..EngineOptions::default()
    };
    let engine = Engine::open(&dir, options).expect("parent opens");
    let swf = engine.swf();
    assert_eq!(open_count(&engine), 0, "nothing is left open");
    let mut checked = 0;
    let mut timed_out = 0usize;
    for cycle in 0..cycles {
        for i in 0..PER_CHILD {
            let workflow_id = format!("c{cycle}-w{i}");
            let closed = swf
                .list_closed_workflow_executions(&input(json!({
                    "domain": DOMAIN, "startTimeFilter": {"oldestDate": 0},
                    "executionFilter": {"workflowId": workflow_id}
                })))
                .expect("lists");
            if closed.execution_infos.is_empty() {
                assert!(
                    !started.contains(&workflow_id),
                    "acknowledged start of {workflow_id} lost"
                );
                continue;
            }
            assert_eq!(closed.execution_infos.len(), 1, "{workflow_id}: one run");
            let info = &closed.execution_infos[0];
            assert_eq!(
                info.close_status,
                Some(api::CloseStatus::Completed),
                "{workflow_id}"
            );
            let history = swf
                .get_workflow_execution_history(&input(json!({
                    "domain": DOMAIN, "execution": info.execution
                })))
                .expect("history");
            assert!(history.next_page_token.is_none());
            for (n, event) in history.events.iter().enumerate() {
                assert_eq!(event["eventId"], json!(n + 1), "{workflow_id}: dense ids");
            }
            timed_out += history
                .events
                .iter()
                .filter(|e| {
                    e["eventType"] == "DecisionTaskTimedOut"
                        || e["eventType"] == "ActivityTaskTimedOut"
                })
                .count();
            let last = history.events.last().expect("events");
            assert_eq!(
                last["eventType"], "WorkflowExecutionCompleted",
                "{workflow_id}"
            );
            assert_eq!(
                last["workflowExecutionCompletedEventAttributes"]["result"],
                json!(expected_result(i)),
                "{workflow_id}"
            );
            let completed_activities: BTreeSet<String> = history
                .events
                .iter()
                .filter(|e| e["eventType"] == "ActivityTaskCompleted")
                .filter_map(|e| {
                    let scheduled =
                        e["activityTaskCompletedEventAttributes"]["scheduledEventId"].as_u64()?;
                    let s = &history.events[scheduled as usize - 1];
                    s["activityTaskScheduledEventAttributes"]["activityId"]
                        .as_str()
                        .map(str::to_string)
                })
                .collect();
            // Its child: started by its decision, completed, and heard by it.
            let initiated = history
                .events
                .iter()
                .find(|e| e["eventType"] == "StartChildWorkflowExecutionInitiated")
                .expect("the workflow started its child");
            let heard = history
                .events
                .iter()
                .find(|e| e["eventType"] == "ChildWorkflowExecutionCompleted")
                .expect("the workflow heard its child complete");
            let heard = &heard["childWorkflowExecutionCompletedEventAttributes"];
            assert_eq!(heard["result"], json!("kid"), "{workflow_id}");
            assert_eq!(heard["initiatedEventId"], initiated["eventId"]);
            let kid = swf
                .list_closed_workflow_executions(&input(json!({
                    "domain": DOMAIN, "startTimeFilter": {"oldestDate": 0},
                    "executionFilter": {"workflowId": child_of(&workflow_id)}
                })))
                .expect("lists");
            assert_eq!(kid.execution_infos.len(), 1, "{workflow_id}: one child run");
            let kid = &kid.execution_infos[0];
            assert_eq!(
                serde_json::to_value(&kid.execution).expect("json"),
                heard["workflowExecution"]
            );
            let kid_history = swf
                .get_workflow_execution_history(&input(json!({
                    "domain": DOMAIN, "execution": kid.execution
                })))
                .expect("history");
            let kid_started = &kid_history.events[0]["workflowExecutionStartedEventAttributes"];
            assert_eq!(
                kid_started["parentWorkflowExecution"],
                serde_json::to_value(&info.execution).expect("json")
            );
            assert_eq!(kid_started["parentInitiatedEventId"], initiated["eventId"]);
            for (workflow, activity) in &answered {
                if *workflow == workflow_id {
                    assert!(
                        completed_activities.contains(activity),
                        "{workflow_id}: acknowledged answer of {activity} lost"
                    );
                }
            }
            checked += 1;
        }
    }
    assert!(
        checked as usize >= started.len(),
        "every acknowledged start was checked"
    );
    // Tasks a killed child had started were freed by their timeouts in the next child.
    println!(
        "swf kill test: {checked} workflows checked, {timed_out} tasks timed out after a kill"
    );
}
