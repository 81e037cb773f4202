//! What the tests share: reading every item of a spec, a child result, a sink's files.

use serde_json::Value;
use statelog_items::{
    ChildResult, ExecutionStatus, ItemReaderSpec, ItemSource, ItemsError, ObjectStores,
    RedriveStatus,
};

/// Every item of `spec` from `from`, read in slices of `slice`.
pub async fn read_all(
    stores: &ObjectStores,
    spec: &ItemReaderSpec,
    from: u64,
    slice: usize,
) -> Result<Vec<Value>, ItemsError> {
    let mut cursor = stores.open(spec, from).await?;
    let mut items = Vec::new();
    loop {
        let next = cursor.next_slice(slice).await?;
        assert!(next.len() <= slice, "a slice has at most what was asked");
        if next.is_empty() {
            return Ok(items);
        }
        items.extend(next);
    }
}

/// A child result numbered `n`, succeeded with output `{"n": n}` or failed.
pub fn child(n: u32, status: ExecutionStatus) -> ChildResult {
    let succeeded = status == ExecutionStatus::Succeeded;
    ChildResult {
        execution_arn: format!("arn:aws:states:us-east-1:123456789012:execution:m/label:{n}"),
        name: format!("{n}"),
        state_machine_arn: "arn:aws:states:us-east-1:123456789012:stateMachine:m/label".into(),
        status,
        input: format!("{{\"n\":{n}}}"),
        output: succeeded.then(|| format!("{{\"n\":{n}}}")),
        error: (!succeeded).then(|| "States.TaskFailed".into()),
        cause: (!succeeded).then(|| format!("child {n} failed")),
        start_date_ms: 1_700_000_000_000 + u64::from(n),
        stop_date_ms: Some(1_700_000_001_000 + u64::from(n)),
        redrive_count: 0,
        redrive_status: if succeeded {
            RedriveStatus::NotRedrivable
        } else {
            RedriveStatus::RedrivableByMapRun
        },
        redrive_status_reason: None,
    }
}

pub const MAP_RUN_ARN: &str =
    "arn:aws:states:us-east-1:123456789012:mapRun:m/label:0b4d1e35-4d2c-3c58-b8b1-3a4b2c1d0e9f";
pub const MAP_RUN_ID: &str = "0b4d1e35-4d2c-3c58-b8b1-3a4b2c1d0e9f";
