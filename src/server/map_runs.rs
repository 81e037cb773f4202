//! map_runs: the wire side of Distributed Map: `DescribeMapRun`, `ListMapRuns` and
//! `UpdateMapRun`. Each reads its input ([`super::protocol`]), runs one engine call on the
//! account's engine ([`Backend::versions`], the one-call hook) and writes AWS's output shape.
//! `ListExecutions(mapRunArn)` is `ListExecutions`'s (`engine_backend`).
//!
//! Invariants: members are checked before the engine is called; the engine judges ARNs and
//! existence. Must not: name anything below the engine's API.

use serde_json::{json, Map, Value};

use super::backend::{Backend, Caller};
use super::error::Error;
use super::protocol::{
    decode, ListMapRunsInput, MapRunArnInput, Operation, Timestamp, UpdateMapRunInput,
};
use crate::engine::{MapRunCounts, MapRunDescription};

fn counts_json(counts: &MapRunCounts) -> Value {
    json!({
        "pending": counts.pending,
        "running": counts.running,
        "succeeded": counts.succeeded,
        "failed": counts.failed,
        "timedOut": counts.timed_out,
        "aborted": counts.aborted,
        "total": counts.total,
        "resultsWritten": counts.results_written,
        "failuresNotRedrivable": 0,
        "pendingRedrive": 0,
    })
}

fn describe_json(run: &MapRunDescription) -> Value {
    let mut out = Map::new();
    out.insert("mapRunArn".into(), json!(run.map_run_arn));
    out.insert("executionArn".into(), json!(run.execution_arn));
    out.insert("status".into(), json!(run.status.aws_name()));
    out.insert("startDate".into(), json!(Timestamp(run.start_ms)));
    if let Some(stop_ms) = run.stop_ms {
        out.insert("stopDate".into(), json!(Timestamp(stop_ms)));
    }
    out.insert("maxConcurrency".into(), json!(run.max_concurrency));
    out.insert(
        "toleratedFailurePercentage".into(),
        json!(run.tolerated_failure_percentage),
    );
    out.insert(
        "toleratedFailureCount".into(),
        json!(run.tolerated_failure_count),
    );
    out.insert("itemCounts".into(), counts_json(&run.item_counts));
    out.insert("executionCounts".into(), counts_json(&run.execution_counts));
    out.insert("redriveCount".into(), json!(run.redrive_count));
    Value::Object(out)
}

/// Answers one Map Run operation.
pub(super) async fn dispatch<B: Backend>(
    backend: &B,
    caller: &Caller,
    operation: Operation,
    body: &[u8],
) -> Result<Value, Error> {
    match operation {
        Operation::DescribeMapRun => {
            let input: MapRunArnInput = decode(operation, body)?;
            input.validate()?;
            let run = backend
                .catalog_engine(caller, move |engine| {
                    engine.describe_map_run(&input.map_run_arn)
                })
                .await?;
            Ok(describe_json(&run))
        }
        Operation::ListMapRuns => {
            let input: ListMapRunsInput = decode(operation, body)?;
            let max_results = input.validate()?;
            let execution_arn = input.execution_arn.clone();
            let runs = backend
                .catalog_engine(caller, move |engine| engine.list_map_runs(&execution_arn))
                .await?;
            let limit = match max_results {
                0 => 100,
                n => n as usize,
            };
            let from = match input.next_token.as_deref() {
                None => 0,
                Some(token) => token.parse::<usize>().map_err(|_| Error::Validation {
                    member: "nextToken",
                    constraint: "Member must be a token of an earlier ListMapRuns page".into(),
                })?,
            };
            let items: Vec<Value> = runs
                .iter()
                .skip(from)
                .take(limit)
                .map(|run| {
                    let mut item = Map::new();
                    item.insert("executionArn".into(), json!(run.execution_arn));
                    item.insert("mapRunArn".into(), json!(run.map_run_arn));
                    item.insert("stateMachineArn".into(), json!(run.state_machine_arn));
                    item.insert("startDate".into(), json!(Timestamp(run.start_ms)));
                    if let Some(stop_ms) = run.stop_ms {
                        item.insert("stopDate".into(), json!(Timestamp(stop_ms)));
                    }
                    Value::Object(item)
                })
                .collect();
            let mut out = Map::new();
            out.insert("mapRuns".into(), Value::Array(items));
            if from + limit < runs.len() {
                out.insert("nextToken".into(), json!((from + limit).to_string()));
            }
            Ok(Value::Object(out))
        }
        Operation::UpdateMapRun => {
            let input: UpdateMapRunInput = decode(operation, body)?;
            input.validate()?;
            backend
                .catalog_engine(caller, move |engine| {
                    engine.update_map_run(
                        &input.map_run_arn,
                        input.max_concurrency.map(|n| n as u64),
                        input.tolerated_failure_percentage,
                        input.tolerated_failure_count.map(|n| n as u64),
                    )
                })
                .await?;
            Ok(json!({}))
        }
        other => Err(Error::NotSupported {
            operation: other.name().to_owned(),
            reason: "not a Map Run operation",
        }),
    }
}
