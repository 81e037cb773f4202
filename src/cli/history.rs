//! `statelog history EXECUTION [--data-dir DIR] [--json]`: prints an execution's events as a
//! table (id, type, state, elapsed, details; failures in red on a terminal) or, with `--json`,
//! in the AWS `GetExecutionHistory` shape. EXECUTION is an execution ARN or its name, or an
//! Amazon SWF run: its run id, or its workflow id (the newest run), shown in SWF's
//! `GetWorkflowExecutionHistory` shape.
//! Must not: change the data directory (the log is opened read-only).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::Value;

use statelog::engine::history::{aws_json, EventDetails, HistoryEvent};
use statelog::engine::{Engine, EngineOptions, HistoryQuery, ListExecutions};

/// Arguments of `statelog history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The execution: its ARN, or its name.
    execution: String,
    /// The engine's data directory.
    #[arg(long, default_value = "./statelog-data")]
    data_dir: PathBuf,
    /// Print the AWS JSON shape instead of a table.
    #[arg(long)]
    json: bool,
}

/// Prints the history.
pub fn run(args: HistoryArgs) -> ExitCode {
    match run_inner(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("statelog history: {message}");
            ExitCode::from(1)
        }
    }
}

/// Opens the engine in `dir` read-only, for inspection. Each record that does not decode (its
/// execution is damaged, the others are served) is reported on stderr as
/// `damaged: lsn L kind K execution ARN: reason`.
pub fn open_read_only(dir: &std::path::Path) -> Result<Engine, String> {
    let options = EngineOptions {
        read_only: true,
        background_timers: false,
        ..EngineOptions::default()
    };
    let engine = Engine::open(dir, options)
        .map_err(|e| format!("cannot open the data directory {}: {e}", dir.display()))?;
    for damaged in engine.damaged_executions() {
        eprintln!(
            "damaged: lsn {} kind {} execution {}: {}",
            damaged.lsn,
            damaged.kind,
            damaged.execution_arn.as_deref().unwrap_or("unknown"),
            damaged.reason
        );
    }
    Ok(engine)
}

fn run_inner(args: &HistoryArgs) -> Result<(), String> {
    let engine = open_read_only(&args.data_dir)?;
    let arn = match resolve(&engine, &args.execution) {
        Ok(arn) => arn,
        Err(not_asl) => {
            let swf = engine
                .swf()
                .history_json_of(&args.execution)
                .map_err(|e| e.to_string())?;
            let Some(events) = swf else {
                return Err(format!(
                    "{not_asl}, and no SWF run or workflow id '{}'",
                    args.execution
                ));
            };
            if args.json {
                println!("{}", serde_json::json!({ "events": events }));
            } else {
                let color = std::io::stdout().is_terminal();
                for line in swf_table(&events, color) {
                    println!("{line}");
                }
            }
            return Ok(());
        }
    };
    let mut events = Vec::new();
    let mut query = HistoryQuery {
        max_results: 1000,
        ..HistoryQuery::default()
    };
    loop {
        let page = engine
            .get_execution_history(&arn, &query)
            .map_err(|e| format!("{}: {e}", e.aws_name()))?;
        events.extend(page.events);
        match page.next_token {
            Some(token) => query.next_token = Some(token),
            None => break,
        }
    }
    if args.json {
        let rendered = aws_json::render_history(&events, true);
        println!("{}", serde_json::json!({ "events": rendered }));
        return Ok(());
    }
    let color = std::io::stdout().is_terminal();
    for line in table(&events, color) {
        println!("{line}");
    }
    Ok(())
}

/// An execution ARN as given, or the ARN of the newest execution with that name.
fn resolve(engine: &Engine, execution: &str) -> Result<String, String> {
    if execution.starts_with("arn:") {
        return Ok(execution.to_string());
    }
    let mut request = ListExecutions {
        max_results: 1000,
        ..ListExecutions::default()
    };
    loop {
        let page = engine
            .list_executions(&request)
            .map_err(|e| format!("{}: {e}", e.aws_name()))?;
        if let Some(found) = page.executions.iter().find(|e| e.name == execution) {
            return Ok(found.execution_arn.clone());
        }
        match page.next_token {
            Some(token) => request.next_token = Some(token),
            None => {
                return Err(format!(
                    "ExecutionDoesNotExist: no execution named '{execution}'"
                ))
            }
        }
    }
}

/// The table lines: a header, then one line per event.
pub fn table(events: &[HistoryEvent], color: bool) -> Vec<String> {
    let start_ms = events.first().map_or(0, |e| e.timestamp_ms);
    let mut lines = vec![format!(
        "{:>5}  {:<28}  {:<24}  {:>10}  DETAILS",
        "ID", "TYPE", "STATE", "ELAPSED"
    )];
    for event in events {
        let state = state_name(&event.details).unwrap_or("");
        let elapsed_ms = event.timestamp_ms.saturating_sub(start_ms);
        let line = format!(
            "{:>5}  {:<28}  {:<24}  {:>8}ms  {}",
            event.id.0,
            event.details.type_name(),
            state,
            elapsed_ms,
            details(event)
        );
        let failure = is_failure(&event.details);
        lines.push(if failure && color {
            format!("\u{1b}[31m{line}\u{1b}[0m")
        } else {
            line
        });
    }
    lines
}

/// The table lines of an SWF run (events in SWF's JSON): a header, then one line per event.
pub fn swf_table(events: &[Value], color: bool) -> Vec<String> {
    let ms = |e: &Value| (e["eventTimestamp"].as_f64().unwrap_or(0.0) * 1000.0).round() as u64;
    let start_ms = events.first().map_or(0, ms);
    let mut lines = vec![format!(
        "{:>5}  {:<44}  {:>10}  DETAILS",
        "ID", "TYPE", "ELAPSED"
    )];
    for event in events {
        let event_type = event["eventType"].as_str().unwrap_or("");
        let attributes = event
            .as_object()
            .and_then(|o| o.iter().find(|(k, _)| k.ends_with("EventAttributes")))
            .map(|(_, v)| compact(v))
            .unwrap_or_default();
        const DETAILS_CHARS_MAX: usize = 120;
        let details = if attributes.chars().count() > DETAILS_CHARS_MAX {
            format!(
                "{}...",
                attributes
                    .chars()
                    .take(DETAILS_CHARS_MAX)
                    .collect::<String>()
            )
        } else {
            attributes
        };
        let line = format!(
            "{:>5}  {:<44}  {:>8}ms  {details}",
            event["eventId"].as_u64().unwrap_or(0),
            event_type,
            ms(event).saturating_sub(start_ms),
        );
        let failure = event_type.ends_with("Failed")
            || event_type.ends_with("TimedOut")
            || event_type.ends_with("Terminated");
        lines.push(if failure && color {
            format!("\u{1b}[31m{line}\u{1b}[0m")
        } else {
            line
        });
    }
    lines
}

fn state_name(details: &EventDetails) -> Option<&str> {
    details
        .state_entered()
        .map(|d| d.name.as_str())
        .or_else(|| details.state_exited().map(|d| d.name.as_str()))
}

fn is_failure(details: &EventDetails) -> bool {
    let name = details.type_name();
    name.ends_with("Failed") || name.ends_with("TimedOut") || name.ends_with("Aborted")
}

/// A short rendering of the event's AWS details (error and cause, or the payload).
fn details(event: &HistoryEvent) -> String {
    let rendered = aws_json::render_event(event, true);
    let Some(object) = rendered.as_object() else {
        return String::new();
    };
    let detail = object
        .iter()
        .find(|(key, _)| key.ends_with("EventDetails"))
        .map(|(_, value)| value);
    let text = match detail {
        Some(Value::Object(map)) => {
            let pick = ["error", "cause", "output", "input", "resource"]
                .iter()
                .filter_map(|k| map.get(*k).map(|v| format!("{k}={}", compact(v))))
                .collect::<Vec<_>>();
            if pick.is_empty() {
                compact(&Value::Object(map.clone()))
            } else {
                pick.join(" ")
            }
        }
        Some(other) => compact(other),
        None => String::new(),
    };
    const DETAILS_CHARS_MAX: usize = 120;
    if text.chars().count() > DETAILS_CHARS_MAX {
        let cut: String = text.chars().take(DETAILS_CHARS_MAX).collect();
        format!("{cut}...")
    } else {
        text
    }
}

fn compact(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use statelog::engine::history::{ErrorCause, EventId, StateEntered};

    fn event(id: u32, ms: u64, details: EventDetails) -> HistoryEvent {
        HistoryEvent {
            id: EventId(id),
            previous_event_id: id - 1,
            timestamp_ms: ms,
            details,
            scope: Vec::new(),
            timer: None,
        }
    }

    #[test]
    fn swf_table_shows_types_elapsed_and_highlights_failures() {
        let events = [
            json!({"eventId": 1, "eventTimestamp": 10.0, "eventType": "WorkflowExecutionStarted",
                   "workflowExecutionStartedEventAttributes": {"input": "x"}}),
            json!({"eventId": 2, "eventTimestamp": 10.5, "eventType": "ActivityTaskTimedOut",
                   "activityTaskTimedOutEventAttributes": {"timeoutType": "HEARTBEAT"}}),
        ];
        let plain = swf_table(&events, false);
        assert_eq!(plain.len(), 3);
        assert!(plain[1].contains("WorkflowExecutionStarted") && plain[1].contains("0ms"));
        assert!(plain[2].contains("500ms") && plain[2].contains("HEARTBEAT"));
        assert!(swf_table(&events, true)[2].starts_with("\u{1b}[31m"));
    }

    #[test]
    fn table_shows_state_elapsed_and_highlights_failures() {
        let events = [
            event(
                1,
                1_000,
                EventDetails::PassStateEntered(StateEntered {
                    name: "Init".into(),
                    input: json!({"a": 1}).into(),
                    input_truncated: false,
                }),
            ),
            event(
                2,
                1_250,
                EventDetails::ExecutionFailed(ErrorCause::new("Boom", "it broke")),
            ),
        ];
        let plain = table(&events, false);
        assert_eq!(plain.len(), 3);
        assert!(plain[1].contains("Init") && plain[1].contains("0ms"));
        assert!(plain[2].contains("250ms") && plain[2].contains("error=Boom"));
        assert!(!plain[2].contains('\u{1b}'));
        let colored = table(&events, true);
        assert!(colored[2].starts_with("\u{1b}[31m"));
        assert!(!colored[1].contains('\u{1b}'));
    }
}
