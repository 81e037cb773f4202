//! The result writer: a Map Run's child results as AWS lays them out in a bucket.
//!
//! Layout, under `<Prefix>/<map run id>/` (the id is what follows the map run ARN's last
//! `:`): `SUCCEEDED_<n>.json`, `FAILED_<n>.json`, `PENDING_<n>.json` (n from 0; `.jsonl` with
//! `OutputType: JSONL`), each a JSON array of results, cut at `file_size_bytes_max` (AWS's
//! 5 GB); and `manifest.json`, written last, naming every file with its size.
//!
//! Invariants: a results file is streamed as a multipart upload, so a sink holds about
//! `RESULT_PART_SIZE_BYTES` x `RESULT_PARTS_IN_FLIGHT_MAX` per open file (three at most),
//! whatever the result count. A file holds at least one result. `manifest.json` exists only
//! after every results file it names is complete. Writing the same Map Run again writes the
//! same keys, so a Map Run that recovers may write its results anew.
//!
//! Must not: decide which child goes in which file (the caller says, by `ChildStatus`);
//! reorder the results of one status.

use chrono::{DateTime, Utc};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload, WriteMultipart};
use serde_json::{json, Map, Value};
use std::sync::Arc;

use crate::error::{Access, ItemsError};
use crate::limits::{RESULT_PARTS_IN_FLIGHT_MAX, RESULT_PART_SIZE_BYTES};
use crate::spec::{OutputType, ResultWriterSpec, Transformation, WriterConfig};
use crate::stores::{parse_key, store_error, ObjectStores};

/// A results file's class: which file a child's result goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChildStatus {
    /// `SUCCEEDED_<n>.json`: the child succeeded.
    Succeeded,
    /// `FAILED_<n>.json`: the child failed, timed out or was aborted.
    Failed,
    /// `PENDING_<n>.json`: the child never ran to an end.
    Pending,
}

impl ChildStatus {
    /// The class's name, as in file names and the manifest (`SUCCEEDED`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ChildStatus::Succeeded => "SUCCEEDED",
            ChildStatus::Failed => "FAILED",
            ChildStatus::Pending => "PENDING",
        }
    }

    /// The manifest's order: FAILED, PENDING, SUCCEEDED.
    const ALL: [ChildStatus; 3] = [
        ChildStatus::Failed,
        ChildStatus::Pending,
        ChildStatus::Succeeded,
    ];

    fn slot(self) -> usize {
        match self {
            ChildStatus::Failed => 0,
            ChildStatus::Pending => 1,
            ChildStatus::Succeeded => 2,
        }
    }
}

/// A child execution's status, as its result's `Status` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecutionStatus {
    /// `RUNNING`.
    Running,
    /// `SUCCEEDED`.
    Succeeded,
    /// `FAILED`.
    Failed,
    /// `TIMED_OUT`.
    TimedOut,
    /// `ABORTED`.
    Aborted,
    /// `PENDING_REDRIVE`.
    PendingRedrive,
}

impl ExecutionStatus {
    /// AWS's name.
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutionStatus::Running => "RUNNING",
            ExecutionStatus::Succeeded => "SUCCEEDED",
            ExecutionStatus::Failed => "FAILED",
            ExecutionStatus::TimedOut => "TIMED_OUT",
            ExecutionStatus::Aborted => "ABORTED",
            ExecutionStatus::PendingRedrive => "PENDING_REDRIVE",
        }
    }
}

/// A child execution's `RedriveStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedriveStatus {
    /// `REDRIVABLE`.
    Redrivable,
    /// `NOT_REDRIVABLE`.
    NotRedrivable,
    /// `REDRIVABLE_BY_MAP_RUN`.
    RedrivableByMapRun,
}

impl RedriveStatus {
    /// AWS's name.
    pub fn as_str(self) -> &'static str {
        match self {
            RedriveStatus::Redrivable => "REDRIVABLE",
            RedriveStatus::NotRedrivable => "NOT_REDRIVABLE",
            RedriveStatus::RedrivableByMapRun => "REDRIVABLE_BY_MAP_RUN",
        }
    }
}

/// What AWS writes per child in a results file.
#[derive(Debug, Clone, PartialEq)]
pub struct ChildResult {
    /// `ExecutionArn`.
    pub execution_arn: String,
    /// `Name`: the child execution's name.
    pub name: String,
    /// `StateMachineArn`: the child's state machine (the Map Run's).
    pub state_machine_arn: String,
    /// `Status`.
    pub status: ExecutionStatus,
    /// `Input`: the child's input, as JSON text.
    pub input: String,
    /// `Output`: its output, as JSON text, when it succeeded.
    pub output: Option<String>,
    /// `Error`, when it failed.
    pub error: Option<String>,
    /// `Cause`, when it failed.
    pub cause: Option<String>,
    /// `StartDate`, in milliseconds since the Unix epoch.
    pub start_date_ms: u64,
    /// `StopDate`, in milliseconds since the Unix epoch, when it stopped.
    pub stop_date_ms: Option<u64>,
    /// `RedriveCount`.
    pub redrive_count: u32,
    /// `RedriveStatus`.
    pub redrive_status: RedriveStatus,
    /// `RedriveStatusReason`, when AWS gives one (text shown to the user).
    pub redrive_status_reason: Option<String>,
}

impl ChildResult {
    /// The result as AWS writes it with `Transformation: NONE` (keys in AWS's order).
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        if let Some(cause) = &self.cause {
            out.insert("Cause".into(), Value::String(cause.clone()));
        }
        if let Some(error) = &self.error {
            out.insert("Error".into(), Value::String(error.clone()));
        }
        out.insert(
            "ExecutionArn".into(),
            Value::String(self.execution_arn.clone()),
        );
        out.insert("Input".into(), Value::String(self.input.clone()));
        out.insert("InputDetails".into(), json!({"Included": true}));
        out.insert("Name".into(), Value::String(self.name.clone()));
        if let Some(output) = &self.output {
            out.insert("Output".into(), Value::String(output.clone()));
            out.insert("OutputDetails".into(), json!({"Included": true}));
        }
        out.insert("RedriveCount".into(), Value::from(self.redrive_count));
        out.insert(
            "RedriveStatus".into(),
            Value::String(self.redrive_status.as_str().into()),
        );
        if let Some(reason) = &self.redrive_status_reason {
            out.insert("RedriveStatusReason".into(), Value::String(reason.clone()));
        }
        out.insert("StartDate".into(), Value::String(date(self.start_date_ms)));
        out.insert(
            "StateMachineArn".into(),
            Value::String(self.state_machine_arn.clone()),
        );
        out.insert("Status".into(), Value::String(self.status.as_str().into()));
        if let Some(stop) = self.stop_date_ms {
            out.insert("StopDate".into(), Value::String(date(stop)));
        }
        Value::Object(out)
    }
}

/// `2024-05-01T12:00:00.123Z`.
fn date(ms: u64) -> String {
    let ms = i64::try_from(ms).unwrap_or(i64::MAX);
    DateTime::<Utc>::from_timestamp_millis(ms)
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

impl WriterConfig {
    /// What one child's result becomes under this configuration: its record
    /// (`Transformation: NONE`), its output (`COMPACT`), or its output's elements when that is
    /// an array (`FLATTEN`). A failed or pending child's result is its whole record whatever
    /// the transformation, as AWS writes it.
    pub fn records(&self, status: ChildStatus, result: &ChildResult) -> Vec<Value> {
        let transformation = self.transformation();
        if status != ChildStatus::Succeeded || transformation == Transformation::None {
            return vec![result.to_json()];
        }
        let output = match &result.output {
            None => Value::Null,
            Some(text) => {
                serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone()))
            }
        };
        match (transformation, output) {
            (Transformation::Flatten, Value::Array(items)) => items,
            (_, output) => vec![output],
        }
    }
}

/// One results file written so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultFile {
    /// Its key.
    pub key: String,
    /// Its size.
    pub size_bytes: u64,
}

struct OpenFile {
    key: String,
    upload: WriteMultipart,
    size_bytes: u64,
    record_count: u64,
}

#[derive(Default)]
struct Class {
    open: Option<OpenFile>,
    done: Vec<ResultFile>,
}

/// A Map Run's results being written: `write` appends, `finish` writes the manifest.
pub struct ResultSink {
    store: Arc<dyn ObjectStore>,
    spec: ResultWriterSpec,
    map_run_arn: String,
    /// `<Prefix>/<map run id>` (no trailing `/`).
    directory: String,
    classes: [Class; 3],
}

impl std::fmt::Debug for ResultSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResultSink")
            .field("bucket", &self.spec.bucket())
            .field("directory", &self.directory)
            .finish_non_exhaustive()
    }
}

impl ObjectStores {
    /// Starts writing a Map Run's results under `<Prefix>/<map run id>/` of the spec's bucket
    /// (the id: what follows the ARN's last `:`). Nothing is written until results come.
    pub async fn result_writer(
        &self,
        spec: &ResultWriterSpec,
        map_run_arn: &str,
    ) -> Result<ResultSink, ItemsError> {
        let id = match map_run_arn.rsplit_once(':') {
            Some((_, id)) if !id.is_empty() && !id.contains('/') => id,
            _ => {
                return Err(ItemsError::InvalidMapRunArn {
                    map_run_arn: map_run_arn.to_string(),
                })
            }
        };
        let prefix = spec.prefix().trim_end_matches('/');
        let directory = if prefix.is_empty() {
            id.to_string()
        } else {
            format!("{prefix}/{id}")
        };
        let store = self.bucket(spec.bucket(), Access::Write)?;
        parse_key(spec.bucket(), &format!("{directory}/manifest.json"))?;
        Ok(ResultSink {
            store,
            spec: spec.clone(),
            map_run_arn: map_run_arn.to_string(),
            directory,
            classes: Default::default(),
        })
    }
}

impl ResultSink {
    /// Appends results of one class; files are cut at the spec's size (AWS's 5 GB), so
    /// memory stays bounded.
    pub async fn write(
        &mut self,
        status: ChildStatus,
        results: Vec<ChildResult>,
    ) -> Result<(), ItemsError> {
        for result in results {
            for record in self.spec.writer_config().records(status, &result) {
                let bytes = serde_json::to_vec(&record).expect("a JSON value serializes");
                self.append(status, &bytes).await?;
            }
        }
        Ok(())
    }

    /// Closes the results files, writes `manifest.json` (DestinationBucket, MapRunArn,
    /// ResultFiles {FAILED, PENDING, SUCCEEDED: [{Key, Size}]}) and answers what the Map
    /// state outputs: `{"MapRunArn", "ResultWriterDetails": {"Bucket", "Key"}}`.
    pub async fn finish(mut self) -> Result<Value, ItemsError> {
        for status in ChildStatus::ALL {
            self.close(status).await?;
        }
        let mut files = Map::new();
        for status in ChildStatus::ALL {
            let list: Vec<Value> = self.classes[status.slot()]
                .done
                .iter()
                .map(|file| json!({"Key": file.key, "Size": file.size_bytes}))
                .collect();
            files.insert(status.as_str().into(), Value::Array(list));
        }
        let manifest = json!({
            "DestinationBucket": self.spec.bucket(),
            "MapRunArn": self.map_run_arn,
            "ResultFiles": files,
        });
        let key = format!("{}/manifest.json", self.directory);
        let bytes = serde_json::to_vec(&manifest).expect("a JSON value serializes");
        let path = parse_key(self.spec.bucket(), &key)?;
        self.store
            .put(&path, PutPayload::from(bytes))
            .await
            .map_err(|e| store_error(e, self.spec.bucket(), &key, "put", Access::Write))?;
        Ok(json!({
            "MapRunArn": self.map_run_arn,
            "ResultWriterDetails": {"Bucket": self.spec.bucket(), "Key": key},
        }))
    }

    /// Gives up: aborts the open uploads and writes no manifest.
    pub async fn abort(mut self) -> Result<(), ItemsError> {
        for status in ChildStatus::ALL {
            if let Some(open) = self.classes[status.slot()].open.take() {
                let key = open.key;
                open.upload.abort().await.map_err(|e| {
                    store_error(e, self.spec.bucket(), &key, "abort", Access::Write)
                })?;
            }
        }
        Ok(())
    }

    /// The files completed so far of a class.
    pub fn files(&self, status: ChildStatus) -> &[ResultFile] {
        &self.classes[status.slot()].done
    }

    async fn append(&mut self, status: ChildStatus, record: &[u8]) -> Result<(), ItemsError> {
        let limit = self.spec.file_size_bytes_max();
        let json = self.spec.output_type() == OutputType::Json;
        // A record costs its bytes plus its separator (`[` or `,`; JSONL: its newline); the
        // closing `]` is counted once the file closes.
        let cost = record.len() as u64 + 1;
        let closing = u64::from(json);
        let full = match &self.classes[status.slot()].open {
            Some(open) => open.record_count > 0 && open.size_bytes + cost + closing > limit,
            None => false,
        };
        if full {
            self.close(status).await?;
        }
        if self.classes[status.slot()].open.is_none() {
            self.open(status).await?;
        }
        let bucket = self.spec.bucket().to_string();
        let open = self.classes[status.slot()]
            .open
            .as_mut()
            .expect("a file was opened above");
        if json {
            open.upload
                .write(if open.record_count == 0 { b"[" } else { b"," });
            open.upload.write(record);
        } else {
            open.upload.write(record);
            open.upload.write(b"\n");
        }
        open.size_bytes += cost;
        open.record_count += 1;
        open.upload
            .wait_for_capacity(RESULT_PARTS_IN_FLIGHT_MAX)
            .await
            .map_err(|e| store_error(e, &bucket, &open.key, "multipart upload", Access::Write))?;
        Ok(())
    }

    async fn open(&mut self, status: ChildStatus) -> Result<(), ItemsError> {
        let class = &self.classes[status.slot()];
        debug_assert!(class.open.is_none());
        let extension = match self.spec.output_type() {
            OutputType::Json => "json",
            OutputType::Jsonl => "jsonl",
        };
        let key = format!(
            "{}/{}_{}.{extension}",
            self.directory,
            status.as_str(),
            class.done.len()
        );
        let path: Path = parse_key(self.spec.bucket(), &key)?;
        let upload = self.store.put_multipart(&path).await.map_err(|e| {
            store_error(
                e,
                self.spec.bucket(),
                &key,
                "multipart upload",
                Access::Write,
            )
        })?;
        self.classes[status.slot()].open = Some(OpenFile {
            key,
            upload: WriteMultipart::new_with_chunk_size(upload, RESULT_PART_SIZE_BYTES),
            size_bytes: 0,
            record_count: 0,
        });
        Ok(())
    }

    async fn close(&mut self, status: ChildStatus) -> Result<(), ItemsError> {
        let Some(mut open) = self.classes[status.slot()].open.take() else {
            return Ok(());
        };
        assert!(
            open.record_count > 0,
            "a results file is opened for a record"
        );
        if self.spec.output_type() == OutputType::Json {
            open.upload.write(b"]");
            open.size_bytes += 1;
        }
        open.upload.finish().await.map_err(|e| {
            store_error(
                e,
                self.spec.bucket(),
                &open.key,
                "multipart upload",
                Access::Write,
            )
        })?;
        self.classes[status.slot()].done.push(ResultFile {
            key: open.key,
            size_bytes: open.size_bytes,
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn succeeded(output: &str) -> ChildResult {
        ChildResult {
            execution_arn: "arn:aws:states:us-east-1:1:execution:m/l:a".into(),
            name: "a".into(),
            state_machine_arn: "arn:aws:states:us-east-1:1:stateMachine:m/l".into(),
            status: ExecutionStatus::Succeeded,
            input: "{}".into(),
            output: Some(output.into()),
            error: None,
            cause: None,
            start_date_ms: 0,
            stop_date_ms: Some(1_500),
            redrive_count: 0,
            redrive_status: RedriveStatus::NotRedrivable,
            redrive_status_reason: Some("Execution is SUCCEEDED and cannot be redriven".into()),
        }
    }

    #[test]
    fn a_record_has_aws_fields_in_order_and_dates_in_milliseconds() {
        let record = succeeded("[1]").to_json();
        let fields: Vec<&str> = record
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            fields,
            [
                "ExecutionArn",
                "Input",
                "InputDetails",
                "Name",
                "Output",
                "OutputDetails",
                "RedriveCount",
                "RedriveStatus",
                "RedriveStatusReason",
                "StartDate",
                "StateMachineArn",
                "Status",
                "StopDate"
            ]
        );
        assert_eq!(record["StartDate"], "1970-01-01T00:00:00.000Z");
        assert_eq!(record["StopDate"], "1970-01-01T00:00:01.500Z");
    }

    #[test]
    fn transformations_shape_succeeded_results_only() {
        let config =
            |t: &str| WriterConfig::new(Some(&json!({"Transformation": t}))).expect("valid");
        let result = succeeded("[1, [2]]");
        assert_eq!(
            config("NONE").records(ChildStatus::Succeeded, &result),
            vec![result.to_json()]
        );
        assert_eq!(
            config("COMPACT").records(ChildStatus::Succeeded, &result),
            vec![json!([1, [2]])]
        );
        assert_eq!(
            config("FLATTEN").records(ChildStatus::Succeeded, &result),
            vec![json!(1), json!([2])]
        );
        assert_eq!(
            config("FLATTEN").records(ChildStatus::Failed, &result),
            vec![result.to_json()]
        );
        let bad = WriterConfig::new(Some(&json!({"OutputType": "CSV"}))).expect_err("bad");
        assert_eq!(bad.error_name(), "States.ResultWriterFailed");
    }
}
