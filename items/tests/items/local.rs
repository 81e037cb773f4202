//! Items and results over a local root directory (a bucket is a directory): each input type
//! end to end, resuming at `from`, MaxItems, bounded memory over a million items, and the
//! result writer's layout, manifest and file cutting.

use serde_json::{json, Value};
use statelog_items::limits::ITEM_SIZE_BYTES_MAX;
use statelog_items::{
    ChildStatus, ExecutionStatus, ItemReaderSpec, ItemSource, ItemsError, ObjectStoreConfig,
    ObjectStores, ResultWriterSpec, S3_GET_OBJECT, S3_LIST_OBJECTS_V2, S3_PUT_OBJECT,
};

use crate::common::{child, read_all, MAP_RUN_ARN, MAP_RUN_ID};

fn stores_with_bucket(bucket: &str) -> (tempfile::TempDir, ObjectStores) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join(bucket)).expect("bucket directory");
    let stores = ObjectStores::open(ObjectStoreConfig::Local {
        root: dir.path().to_path_buf(),
    })
    .expect("open");
    (dir, stores)
}

fn get_object(key: &str, config: Value) -> ItemReaderSpec {
    ItemReaderSpec::new(
        S3_GET_OBJECT,
        &json!({"Bucket": "data", "Key": key}),
        Some(&config),
    )
    .expect("a valid reader")
}

#[tokio::test]
async fn json_jsonl_and_csv_objects_yield_their_items() {
    let (_dir, stores) = stores_with_bucket("data");
    stores
        .put_object(
            "data",
            "a.json",
            br#"[{"x": 1}, {"x": 2}, {"x": 3}]"#.to_vec(),
        )
        .await
        .expect("put");
    stores
        .put_object(
            "data",
            "a.jsonl",
            b"{\"x\": 1}\n{\"x\": 2}\n{\"x\": 3}\n".to_vec(),
        )
        .await
        .expect("put");
    stores
        .put_object("data", "a.csv", b"x;y\n1;a\n2;b\n3;c\n".to_vec())
        .await
        .expect("put");
    let json_items = read_all(
        &stores,
        &get_object("a.json", json!({"InputType": "JSON"})),
        0,
        2,
    )
    .await
    .expect("json");
    assert_eq!(
        json_items,
        vec![json!({"x": 1}), json!({"x": 2}), json!({"x": 3})]
    );
    let jsonl_items = read_all(
        &stores,
        &get_object("a.jsonl", json!({"InputType": "JSONL"})),
        0,
        2,
    )
    .await
    .expect("jsonl");
    assert_eq!(jsonl_items, json_items);
    let csv = get_object(
        "a.csv",
        json!({"InputType": "CSV", "CSVHeaderLocation": "FIRST_ROW", "CSVDelimiter": "SEMICOLON"}),
    );
    let csv_items = read_all(&stores, &csv, 0, 10).await.expect("csv");
    assert_eq!(
        csv_items,
        vec![
            json!({"x": "1", "y": "a"}),
            json!({"x": "2", "y": "b"}),
            json!({"x": "3", "y": "c"})
        ]
    );
    // A recovering Map Run resumes at item 1; MaxItems counts from item 0.
    let resumed = read_all(&stores, &csv, 1, 10).await.expect("resumed");
    assert_eq!(resumed, csv_items[1..]);
    let limited = read_all(&stores, &csv.clone().with_max_items(Some(2)), 1, 10)
        .await
        .expect("limited");
    assert_eq!(limited, csv_items[1..2]);
    let past_the_end = read_all(&stores, &csv.with_max_items(Some(2)), 5, 10)
        .await
        .expect("past the end");
    assert!(past_the_end.is_empty());
}

#[tokio::test]
async fn json_items_behind_an_items_pointer() {
    let (_dir, stores) = stores_with_bucket("data");
    stores
        .put_object("data", "o.json", br#"{"data": {"rows": [1, 2]}}"#.to_vec())
        .await
        .expect("put");
    let spec = get_object(
        "o.json",
        json!({"InputType": "JSON", "ItemsPointer": "/data/rows"}),
    );
    assert_eq!(
        read_all(&stores, &spec, 0, 5).await.expect("items"),
        vec![json!(1), json!(2)]
    );
    let object = get_object("o.json", json!({"InputType": "JSON"}));
    let error = read_all(&stores, &object, 0, 5)
        .await
        .expect_err("an object");
    assert_eq!(error.error_name(), "States.ItemReaderFailed");
    assert_eq!(error.cause(), "Attempting to map over non-iterable node.");
}

#[tokio::test]
async fn missing_objects_and_buckets_fail_the_reader() {
    let (_dir, stores) = stores_with_bucket("data");
    let missing = read_all(
        &stores,
        &get_object("none.json", json!({"InputType": "JSON"})),
        0,
        5,
    )
    .await
    .expect_err("no such key");
    assert!(matches!(missing, ItemsError::NoSuchKey { .. }), "{missing}");
    assert_eq!(missing.error_name(), "States.ItemReaderFailed");
    let spec = ItemReaderSpec::new(S3_LIST_OBJECTS_V2, &json!({"Bucket": "nobucket"}), None)
        .expect("valid");
    let no_bucket = read_all(&stores, &spec, 0, 5)
        .await
        .expect_err("no such bucket");
    assert!(
        matches!(no_bucket, ItemsError::NoSuchBucket { .. }),
        "{no_bucket}"
    );
    let other =
        ItemReaderSpec::new("arn:aws:states:::dynamodb:scan", &json!({}), None).expect("kept");
    let unsupported = read_all(&stores, &other, 0, 5).await.expect_err("not ours");
    assert!(matches!(
        unsupported,
        ItemsError::UnsupportedResource { .. }
    ));
}

#[tokio::test]
async fn list_objects_v2_gives_each_object_as_aws_does() {
    let (_dir, stores) = stores_with_bucket("data");
    for key in ["in/b.txt", "in/a.txt", "other/c.txt", "in/sub/d.txt"] {
        stores
            .put_object("data", key, b"hello world!".to_vec())
            .await
            .expect("put");
    }
    let spec = ItemReaderSpec::new(
        S3_LIST_OBJECTS_V2,
        &json!({"Bucket": "data", "Prefix": "in/"}),
        None,
    )
    .expect("valid");
    let items = read_all(&stores, &spec, 0, 2).await.expect("items");
    let keys: Vec<&str> = items
        .iter()
        .map(|i| i["Key"].as_str().expect("Key"))
        .collect();
    assert_eq!(keys, ["in/a.txt", "in/b.txt", "in/sub/d.txt"]);
    for item in &items {
        let fields: Vec<&str> = item
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            fields,
            ["Etag", "LastModified", "Key", "Size", "StorageClass"]
        );
        assert_eq!(item["Size"], 12);
        assert_eq!(item["StorageClass"], "STANDARD");
        assert!(item["LastModified"].as_i64().expect("seconds") > 1_600_000_000);
        assert!(item["Etag"].as_str().expect("Etag").starts_with('"'));
    }
    let resumed = read_all(&stores, &spec, 2, 2).await.expect("resumed");
    assert_eq!(resumed, items[2..]);
}

#[tokio::test]
async fn an_s3_inventory_manifest_yields_the_rows_of_its_gzipped_csv_files() {
    use std::io::Write;
    let (_dir, stores) = stores_with_bucket("inventory");
    let gzip = |text: &str| {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(text.as_bytes()).expect("gzip");
        encoder.finish().expect("gzip")
    };
    stores
        .put_object(
            "inventory",
            "data/1.csv.gz",
            gzip("\"src\",\"a.jpg\",\"10\"\n\"src\",\"b.jpg\",\"20\"\n"),
        )
        .await
        .expect("put");
    stores
        .put_object(
            "inventory",
            "data/2.csv.gz",
            gzip("\"src\",\"c.jpg\",\"30\"\n"),
        )
        .await
        .expect("put");
    let manifest = json!({
        "sourceBucket": "src",
        "destinationBucket": "arn:aws:s3:::inventory",
        "fileFormat": "CSV",
        "fileSchema": "Bucket, Key, Size",
        "files": [{"key": "data/1.csv.gz", "size": 1}, {"key": "data/2.csv.gz", "size": 1}],
    });
    stores
        .put_object(
            "inventory",
            "manifest.json",
            serde_json::to_vec(&manifest).expect("json"),
        )
        .await
        .expect("put");
    let spec = ItemReaderSpec::new(
        S3_GET_OBJECT,
        &json!({"Bucket": "inventory", "Key": "manifest.json"}),
        Some(&json!({"InputType": "MANIFEST"})),
    )
    .expect("valid");
    let items = read_all(&stores, &spec, 0, 2).await.expect("items");
    assert_eq!(
        items,
        vec![
            json!({"Bucket": "src", "Key": "a.jpg", "Size": "10"}),
            json!({"Bucket": "src", "Key": "b.jpg", "Size": "20"}),
            json!({"Bucket": "src", "Key": "c.jpg", "Size": "30"}),
        ]
    );
    assert_eq!(
        read_all(&stores, &spec, 2, 2).await.expect("resumed"),
        items[2..]
    );
}

/// A million JSONL items read in slices of 1,000: the cursor never holds more than one item
/// and one chunk between slices, whatever the item count.
#[tokio::test]
async fn a_million_jsonl_items_are_read_in_bounded_slices() {
    let (_dir, stores) = stores_with_bucket("data");
    let count: u64 = 1_000_000;
    let mut text = String::with_capacity(count as usize * 12);
    for n in 0..count {
        text.push_str(&format!("{{\"n\":{n}}}\n"));
    }
    stores
        .put_object("data", "big.jsonl", text.into_bytes())
        .await
        .expect("put");
    let spec = get_object("big.jsonl", json!({"InputType": "JSONL"}));
    let mut cursor = stores.open(&spec, 0).await.expect("open");
    let mut next_n = 0u64;
    let mut held_bytes_max = 0;
    loop {
        let slice = cursor.next_slice(1000).await.expect("slice");
        if slice.is_empty() {
            break;
        }
        assert!(slice.len() <= 1000);
        for item in slice {
            assert_eq!(item["n"], next_n, "items in order, none lost or repeated");
            next_n += 1;
        }
        held_bytes_max = held_bytes_max.max(cursor.held_bytes());
    }
    assert_eq!(next_n, count);
    // One object chunk (8 KiB locally) plus at most one item's partial line.
    assert!(
        held_bytes_max <= ITEM_SIZE_BYTES_MAX + 64 * 1024,
        "the cursor held {held_bytes_max} bytes"
    );
}

fn writer_spec(config: Option<Value>) -> ResultWriterSpec {
    ResultWriterSpec::new(
        S3_PUT_OBJECT,
        &json!({"Bucket": "results", "Prefix": "jobs/"}),
        config.as_ref(),
    )
    .expect("a valid writer")
}

#[tokio::test]
async fn the_result_writer_lays_files_out_as_aws_does() {
    let (dir, stores) = stores_with_bucket("results");
    let mut sink = stores
        .result_writer(&writer_spec(None), MAP_RUN_ARN)
        .await
        .expect("sink");
    sink.write(
        ChildStatus::Succeeded,
        vec![
            child(0, ExecutionStatus::Succeeded),
            child(1, ExecutionStatus::Succeeded),
        ],
    )
    .await
    .expect("write");
    sink.write(ChildStatus::Failed, vec![child(2, ExecutionStatus::Failed)])
        .await
        .expect("write");
    let output = sink.finish().await.expect("finish");
    let manifest_key = format!("jobs/{MAP_RUN_ID}/manifest.json");
    assert_eq!(
        output,
        json!({"MapRunArn": MAP_RUN_ARN, "ResultWriterDetails": {"Bucket": "results", "Key": manifest_key}})
    );
    let manifest: Value = serde_json::from_slice(
        &stores
            .get_object("results", &manifest_key)
            .await
            .expect("manifest"),
    )
    .expect("json");
    let succeeded_key = format!("jobs/{MAP_RUN_ID}/SUCCEEDED_0.json");
    let failed_key = format!("jobs/{MAP_RUN_ID}/FAILED_0.json");
    let succeeded = stores
        .get_object("results", &succeeded_key)
        .await
        .expect("succeeded");
    let failed = stores
        .get_object("results", &failed_key)
        .await
        .expect("failed");
    assert_eq!(
        manifest,
        json!({
            "DestinationBucket": "results",
            "MapRunArn": MAP_RUN_ARN,
            "ResultFiles": {
                "FAILED": [{"Key": failed_key, "Size": failed.len()}],
                "PENDING": [],
                "SUCCEEDED": [{"Key": succeeded_key, "Size": succeeded.len()}],
            },
        })
    );
    let succeeded: Value = serde_json::from_slice(&succeeded).expect("a JSON array");
    assert_eq!(succeeded.as_array().expect("array").len(), 2);
    assert_eq!(succeeded[1]["Name"], "1");
    assert_eq!(succeeded[1]["Output"], "{\"n\":1}");
    assert_eq!(succeeded[1]["OutputDetails"], json!({"Included": true}));
    assert_eq!(succeeded[1]["Status"], "SUCCEEDED");
    assert_eq!(succeeded[0]["StartDate"], "2023-11-14T22:13:20.000Z");
    let failed: Value = serde_json::from_slice(&failed).expect("a JSON array");
    assert_eq!(failed[0]["Error"], "States.TaskFailed");
    assert_eq!(failed[0]["RedriveStatus"], "REDRIVABLE_BY_MAP_RUN");
    assert!(failed[0].get("Output").is_none());
    // The bucket directory holds exactly these files: no staging file is left behind.
    let mut names: Vec<String> =
        std::fs::read_dir(dir.path().join("results/jobs").join(MAP_RUN_ID))
            .expect("directory")
            .map(|e| e.expect("entry").file_name().into_string().expect("utf-8"))
            .collect();
    names.sort();
    assert_eq!(
        names,
        ["FAILED_0.json", "SUCCEEDED_0.json", "manifest.json"]
    );
}

#[tokio::test]
async fn results_files_are_cut_at_the_size_limit() {
    let (_dir, stores) = stores_with_bucket("results");
    let one = serde_json::to_vec(&child(0, ExecutionStatus::Succeeded).to_json()).expect("json");
    // Room for two results per file (brackets and a comma included), not three.
    let limit = (2 * one.len() + 3) as u64 + 4;
    let spec = writer_spec(None).with_file_size_bytes_max(limit);
    let mut sink = stores
        .result_writer(&spec, MAP_RUN_ARN)
        .await
        .expect("sink");
    let children: Vec<_> = (0..5)
        .map(|n| child(n, ExecutionStatus::Succeeded))
        .collect();
    sink.write(ChildStatus::Succeeded, children)
        .await
        .expect("write");
    let output = sink.finish().await.expect("finish");
    let manifest_key = output["ResultWriterDetails"]["Key"].as_str().expect("key");
    let manifest: Value = serde_json::from_slice(
        &stores
            .get_object("results", manifest_key)
            .await
            .expect("manifest"),
    )
    .expect("json");
    let files = manifest["ResultFiles"]["SUCCEEDED"]
        .as_array()
        .expect("files");
    assert_eq!(files.len(), 3, "{manifest}");
    let mut names = Vec::new();
    for (index, file) in files.iter().enumerate() {
        let key = file["Key"].as_str().expect("key");
        assert_eq!(key, format!("jobs/{MAP_RUN_ID}/SUCCEEDED_{index}.json"));
        let bytes = stores.get_object("results", key).await.expect("file");
        assert_eq!(file["Size"], bytes.len());
        assert!(bytes.len() as u64 <= limit, "{} > {limit}", bytes.len());
        let results: Value = serde_json::from_slice(&bytes).expect("each file is a JSON array");
        names.extend(
            results
                .as_array()
                .expect("array")
                .iter()
                .map(|r| r["Name"].clone()),
        );
    }
    assert_eq!(
        names,
        vec![json!("0"), json!("1"), json!("2"), json!("3"), json!("4")]
    );
}

#[tokio::test]
async fn compact_and_flatten_jsonl_results() {
    let (_dir, stores) = stores_with_bucket("results");
    let spec = writer_spec(Some(
        json!({"Transformation": "FLATTEN", "OutputType": "JSONL"}),
    ));
    let mut sink = stores
        .result_writer(&spec, MAP_RUN_ARN)
        .await
        .expect("sink");
    let mut listed = child(0, ExecutionStatus::Succeeded);
    listed.output = Some("[1, 2]".into());
    sink.write(
        ChildStatus::Succeeded,
        vec![listed, child(1, ExecutionStatus::Succeeded)],
    )
    .await
    .expect("write");
    sink.write(ChildStatus::Failed, vec![child(2, ExecutionStatus::Failed)])
        .await
        .expect("write");
    sink.finish().await.expect("finish");
    let succeeded = stores
        .get_object("results", &format!("jobs/{MAP_RUN_ID}/SUCCEEDED_0.jsonl"))
        .await
        .expect("succeeded");
    assert_eq!(
        String::from_utf8(succeeded).expect("utf-8"),
        "1\n2\n{\"n\":1}\n"
    );
    let failed = stores
        .get_object("results", &format!("jobs/{MAP_RUN_ID}/FAILED_0.jsonl"))
        .await
        .expect("failed");
    let failed: Value = serde_json::from_slice(failed.trim_ascii_end()).expect("one line");
    assert_eq!(
        failed["Status"], "FAILED",
        "a failed child is written whole"
    );
}

#[tokio::test]
async fn a_missing_results_bucket_fails_the_writer() {
    let (_dir, stores) = stores_with_bucket("data");
    let error = stores
        .result_writer(&writer_spec(None), MAP_RUN_ARN)
        .await
        .expect_err("no bucket");
    assert_eq!(error.error_name(), "States.ResultWriterFailed");
    let (_dir, stores) = stores_with_bucket("results");
    let error = stores
        .result_writer(&writer_spec(None), "not-an-arn")
        .await
        .expect_err("bad arn");
    assert!(matches!(error, ItemsError::InvalidMapRunArn { .. }));
}

/// A sink given up midway (as a crash would leave it) and a second one for the same Map Run:
/// the second writes the whole layout under the same keys, and what the first may have left
/// behind (an unfinished upload's staging file) is not listed as an object.
#[tokio::test]
async fn results_written_again_after_an_unfinished_sink_replace_it() {
    let (dir, stores) = stores_with_bucket("results");
    let mut first = stores
        .result_writer(&writer_spec(None), MAP_RUN_ARN)
        .await
        .expect("sink");
    first
        .write(
            ChildStatus::Succeeded,
            vec![child(0, ExecutionStatus::Succeeded)],
        )
        .await
        .expect("write");
    drop(first);
    let staging: Vec<String> = std::fs::read_dir(dir.path().join("results/jobs").join(MAP_RUN_ID))
        .expect("directory")
        .map(|e| e.expect("entry").file_name().into_string().expect("utf-8"))
        .collect();
    // object_store removes an abandoned upload's staging file from a task of its own when the
    // upload is dropped, so whether it is still there depends on timing (it was gone in a CI
    // run): what may be left is only a staging file, never a results file.
    assert!(
        staging.iter().all(|name| name.contains('#')),
        "the unfinished upload left at most its staging file: {staging:?}"
    );
    let mut second = stores
        .result_writer(&writer_spec(None), MAP_RUN_ARN)
        .await
        .expect("sink");
    let children: Vec<_> = (0..3)
        .map(|n| child(n, ExecutionStatus::Succeeded))
        .collect();
    second
        .write(ChildStatus::Succeeded, children)
        .await
        .expect("write");
    second.finish().await.expect("finish");
    let list = ItemReaderSpec::new(S3_LIST_OBJECTS_V2, &json!({"Bucket": "results"}), None)
        .expect("valid");
    let listed = read_all(&stores, &list, 0, 10).await.expect("list");
    let keys: Vec<&str> = listed
        .iter()
        .map(|i| i["Key"].as_str().expect("Key"))
        .collect();
    assert_eq!(
        keys,
        [
            format!("jobs/{MAP_RUN_ID}/SUCCEEDED_0.json"),
            format!("jobs/{MAP_RUN_ID}/manifest.json")
        ]
    );
    let results: Value = serde_json::from_slice(
        &stores
            .get_object("results", &format!("jobs/{MAP_RUN_ID}/SUCCEEDED_0.json"))
            .await
            .expect("file"),
    )
    .expect("json");
    assert_eq!(results.as_array().map(Vec::len), Some(3));
}

/// A Map Run pins the object it began reading to its ETag: resuming over the same object
/// works, resuming over a changed one fails instead of reading other items under the same
/// indexes.
#[tokio::test]
async fn a_resumed_reader_pinned_to_an_etag_refuses_a_changed_object() {
    let (_dir, stores) = stores_with_bucket("data");
    stores
        .put_object("data", "a.jsonl", b"1\n2\n3\n".to_vec())
        .await
        .expect("put");
    let spec = get_object("a.jsonl", json!({"InputType": "JSONL"}));
    let cursor = stores.open(&spec, 0).await.expect("open");
    let etag = cursor.object_etag().map(str::to_string);
    assert!(etag.is_some(), "a local object has an ETag");
    let pinned = spec.with_expected_etag(etag);
    assert_eq!(
        read_all(&stores, &pinned, 1, 10)
            .await
            .expect("same object"),
        vec![json!(2), json!(3)]
    );
    // A different size, so the local ETag (inode, mtime, size) differs whatever the clock.
    stores
        .put_object("data", "a.jsonl", b"10\n20\n30\n40\n".to_vec())
        .await
        .expect("put");
    let error = read_all(&stores, &pinned, 1, 10)
        .await
        .expect_err("changed");
    assert!(matches!(error, ItemsError::ObjectChanged { .. }), "{error}");
    assert_eq!(error.error_name(), "States.ItemReaderFailed");
}

/// An embedder's item source for a resource of its own, registered beside the S3 ones.
struct Numbers;

#[async_trait::async_trait]
impl statelog_items::ItemSource for Numbers {
    async fn open(
        &self,
        spec: &ItemReaderSpec,
        from: u64,
    ) -> Result<Box<dyn statelog_items::ItemCursor>, ItemsError> {
        let count = spec.arguments()["Count"].as_u64().unwrap_or(0);
        Ok(Box::new(NumberCursor { next: from, count }))
    }
}

struct NumberCursor {
    next: u64,
    count: u64,
}

#[async_trait::async_trait]
impl statelog_items::ItemCursor for NumberCursor {
    async fn next_slice(&mut self, max: usize) -> Result<Vec<Value>, ItemsError> {
        let end = self.count.min(self.next + max as u64);
        let slice = (self.next..end).map(Value::from).collect();
        self.next = end;
        Ok(slice)
    }
}

#[tokio::test]
async fn an_embedders_source_serves_its_resource_beside_the_s3_ones() {
    let (_dir, stores) = stores_with_bucket("data");
    stores
        .put_object("data", "a.json", b"[\"s3\"]".to_vec())
        .await
        .expect("put");
    let mut sources = statelog_items::ItemSources::new(stores.clone());
    sources.register("arn:aws:states:::my:numbers", std::sync::Arc::new(Numbers));
    let numbers = ItemReaderSpec::new("arn:aws:states:::my:numbers", &json!({"Count": 5}), None)
        .expect("kept for the embedder");
    let mut cursor = sources.open(&numbers, 2).await.expect("open");
    assert_eq!(
        cursor.next_slice(10).await.expect("slice"),
        vec![json!(2), json!(3), json!(4)]
    );
    let s3 = get_object("a.json", json!({"InputType": "JSON"}));
    let mut cursor = sources.open(&s3, 0).await.expect("open");
    assert_eq!(
        cursor.next_slice(10).await.expect("slice"),
        vec![json!("s3")]
    );
    let unknown = ItemReaderSpec::new("arn:aws:states:::other:x", &json!({}), None).expect("kept");
    let error = sources.open(&unknown, 0).await.err().expect("no source");
    assert!(
        matches!(error, ItemsError::UnsupportedResource { .. }),
        "{error}"
    );
}

/// A highly compressed inventory file (deflate's ratio reaches about 1000:1) is inflated one
/// small step at a time: the cursor holds at most what one step inflates to, not a whole
/// chunk's worth, and every row comes out.
#[tokio::test]
async fn a_highly_compressed_inventory_file_inflates_in_bounded_steps() {
    use std::io::Write;
    let (_dir, stores) = stores_with_bucket("inventory");
    let rows: u64 = 1_000_000;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    for _ in 0..rows {
        encoder.write_all(b"src,k,1\n").expect("gzip");
    }
    let compressed = encoder.finish().expect("gzip");
    assert!(compressed.len() < 64 * 1024, "{} bytes", compressed.len());
    stores
        .put_object("inventory", "data/1.csv.gz", compressed)
        .await
        .expect("put");
    let manifest = json!({
        "fileFormat": "CSV",
        "fileSchema": "Bucket, Key, Size",
        "files": [{"key": "data/1.csv.gz"}],
    });
    stores
        .put_object(
            "inventory",
            "manifest.json",
            serde_json::to_vec(&manifest).expect("json"),
        )
        .await
        .expect("put");
    let spec = ItemReaderSpec::new(
        S3_GET_OBJECT,
        &json!({"Bucket": "inventory", "Key": "manifest.json"}),
        Some(&json!({"InputType": "MANIFEST"})),
    )
    .expect("valid");
    let mut cursor = stores.open(&spec, 0).await.expect("open");
    let mut count = 0u64;
    let mut held_bytes_max = 0;
    loop {
        let slice = cursor.next_slice(1000).await.expect("slice");
        if slice.is_empty() {
            break;
        }
        count += slice.len() as u64;
        held_bytes_max = held_bytes_max.max(cursor.held_bytes());
    }
    assert_eq!(count, rows);
    // One inflated step: GZIP_STEP_SIZE_BYTES_MAX (4 KiB) at deflate's ratio, about 4 MiB.
    assert!(
        held_bytes_max <= 4 * 1024 * 1024 + ITEM_SIZE_BYTES_MAX,
        "the cursor held {held_bytes_max} bytes"
    );
}

/// `listObjectsV2` with `LOAD_AND_FLATTEN`: the items of every listed object, in key order,
/// resuming across an object boundary.
#[tokio::test]
async fn load_and_flatten_reads_each_listed_objects_items() {
    let (_dir, stores) = stores_with_bucket("data");
    stores
        .put_object("data", "in/b.jsonl", b"3\n4\n".to_vec())
        .await
        .expect("put");
    stores
        .put_object("data", "in/a.jsonl", b"1\n2\n".to_vec())
        .await
        .expect("put");
    stores
        .put_object("data", "out/c.jsonl", b"5\n".to_vec())
        .await
        .expect("put");
    let spec = ItemReaderSpec::new(
        S3_LIST_OBJECTS_V2,
        &json!({"Bucket": "data", "Prefix": "in/"}),
        Some(&json!({"Transformation": "LOAD_AND_FLATTEN", "InputType": "JSONL"})),
    )
    .expect("valid");
    let items = read_all(&stores, &spec, 0, 3).await.expect("items");
    assert_eq!(items, vec![json!(1), json!(2), json!(3), json!(4)]);
    assert_eq!(
        read_all(&stores, &spec, 1, 3).await.expect("resumed"),
        items[1..]
    );
}

/// `ManifestType: ATHENA_DATA`: the items of the objects an Athena manifest lists (one
/// `s3://` URI a line), gzipped or not, in the manifest's order.
#[tokio::test]
async fn an_athena_manifest_yields_its_objects_items() {
    use std::io::Write;
    let (dir, stores) = stores_with_bucket("athena");
    std::fs::create_dir(dir.path().join("results")).expect("second bucket");
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(b"3,c\n").expect("gzip");
    stores
        .put_object(
            "results",
            "q/part-2.csv.gz",
            encoder.finish().expect("gzip"),
        )
        .await
        .expect("put");
    stores
        .put_object("results", "q/part-1.csv", b"1,a\n2,b\n".to_vec())
        .await
        .expect("put");
    stores
        .put_object(
            "athena",
            "q-manifest.csv",
            b"s3://results/q/part-1.csv\n\ns3://results/q/part-2.csv.gz\n".to_vec(),
        )
        .await
        .expect("put");
    let spec = ItemReaderSpec::new(
        S3_GET_OBJECT,
        &json!({"Bucket": "athena", "Key": "q-manifest.csv"}),
        Some(&json!({"ManifestType": "ATHENA_DATA", "InputType": "CSV",
            "CSVHeaderLocation": "GIVEN", "CSVHeaders": ["n", "letter"]})),
    )
    .expect("valid");
    let items = read_all(&stores, &spec, 0, 2).await.expect("items");
    assert_eq!(
        items,
        vec![
            json!({"n": "1", "letter": "a"}),
            json!({"n": "2", "letter": "b"}),
            json!({"n": "3", "letter": "c"}),
        ]
    );
    stores
        .put_object(
            "athena",
            "bad-manifest.csv",
            b"results/q/part-1.csv\n".to_vec(),
        )
        .await
        .expect("put");
    let bad = ItemReaderSpec::new(
        S3_GET_OBJECT,
        &json!({"Bucket": "athena", "Key": "bad-manifest.csv"}),
        Some(&json!({"ManifestType": "ATHENA_DATA", "InputType": "JSONL"})),
    )
    .expect("valid");
    let error = read_all(&stores, &bad, 0, 2)
        .await
        .expect_err("no s3:// URI");
    assert!(matches!(error, ItemsError::BadManifest { .. }), "{error}");
}
