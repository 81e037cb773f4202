//! `statelog executions [--data-dir DIR]`: lists every execution, newest first: name, status,
//! start and stop times (RFC 3339, UTC) and ARN. Must not: change the data directory.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use statelog::engine::{ExecutionListItem, ListExecutions};

/// Arguments of `statelog executions`.
#[derive(Debug, Args)]
pub struct ExecutionsArgs {
    /// The engine's data directory.
    #[arg(long, default_value = "./statelog-data")]
    data_dir: PathBuf,
}

/// Prints the executions.
pub fn run(args: ExecutionsArgs) -> ExitCode {
    let engine = match super::history::open_read_only(&args.data_dir) {
        Ok(engine) => engine,
        Err(message) => {
            eprintln!("statelog executions: {message}");
            return ExitCode::from(1);
        }
    };
    let mut request = ListExecutions {
        max_results: 1000,
        ..ListExecutions::default()
    };
    println!("{}", header());
    loop {
        let page = match engine.list_executions(&request) {
            Ok(page) => page,
            Err(e) => {
                eprintln!("statelog executions: {}: {e}", e.aws_name());
                return ExitCode::from(1);
            }
        };
        for item in &page.executions {
            println!("{}", line(item));
        }
        match page.next_token {
            Some(token) => request.next_token = Some(token),
            None => return ExitCode::SUCCESS,
        }
    }
}

fn header() -> String {
    format!(
        "{:<36}  {:<9}  {:<24}  {:<24}  ARN",
        "NAME", "STATUS", "START", "STOP"
    )
}

fn line(item: &ExecutionListItem) -> String {
    format!(
        "{:<36}  {:<9}  {:<24}  {:<24}  {}",
        item.name,
        item.status.aws_name(),
        rfc3339(item.start_ms),
        item.stop_ms.map(rfc3339).unwrap_or_else(|| "-".to_string()),
        item.execution_arn
    )
}

/// Milliseconds since the epoch as `2024-01-01T00:00:00.000Z`.
fn rfc3339(ms: u64) -> String {
    let nanos = i128::from(ms) * 1_000_000;
    let format = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    time::OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|t| t.format(&format).ok())
        .unwrap_or_else(|| format!("{ms}ms"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use statelog::engine::ExecutionStatus;

    #[test]
    fn lines_show_name_status_and_times() {
        assert_eq!(rfc3339(1_704_067_200_123), "2024-01-01T00:00:00.123Z");
        let item = ExecutionListItem {
            execution_arn: "arn:aws:states:us-east-1:000000000000:execution:m:n".into(),
            state_machine_arn: "arn:aws:states:us-east-1:000000000000:stateMachine:m".into(),
            name: "n".into(),
            status: ExecutionStatus::Running,
            start_ms: 1_704_067_200_000,
            stop_ms: None,
            redrive_count: 0,
            redrive_ms: None,
            state_machine_version_arn: None,
            state_machine_alias_arn: None,
        };
        let text = line(&item);
        assert!(text.starts_with("n "));
        assert!(text.contains("RUNNING") && text.contains("2024-01-01T00:00:00.000Z"));
        assert!(text.contains("  -  ") || text.contains(" - "));
    }
}
