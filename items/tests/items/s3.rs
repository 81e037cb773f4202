//! Items and results over S3: the same readers and writer against moto's S3 server (PyPI
//! `moto[server]`), started here on a free loopback port and killed at the end. Buckets are
//! created by a plain `PUT /<bucket>` (moto does not check signatures); everything else goes
//! through `ObjectStores` and so object_store's signed S3 client. Skips, saying why, when
//! moto is not installed (`.ci/run` installs it).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use statelog_items::{
    ChildStatus, ExecutionStatus, ItemReaderSpec, ItemSource, ItemsError, ObjectStoreConfig,
    ObjectStores, ResultWriterSpec, S3_GET_OBJECT, S3_LIST_OBJECTS_V2, S3_PUT_OBJECT,
};

use crate::common::{child, read_all, MAP_RUN_ARN, MAP_RUN_ID};

/// How long moto may take to listen (it imports every AWS service model at start).
const MOTO_START_TIMEOUT_MS: u64 = 60_000;

/// The Python that runs moto: `STATELOG_PYTHON`, else `python3`.
fn python() -> String {
    std::env::var("STATELOG_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// A moto S3 server on loopback, killed when dropped.
struct Moto {
    child: Child,
    address: SocketAddr,
}

impl Moto {
    /// Starts moto, or says why it cannot (not installed).
    fn start() -> Result<Moto, String> {
        let probe = Command::new(python())
            .args(["-c", "import moto.server"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if !probe.is_ok_and(|s| s.success()) {
            return Err(format!(
                "{} cannot import moto.server (pip install 'moto[server]')",
                python()
            ));
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        let child = Command::new(python())
            .args([
                "-m",
                "moto.server",
                "-H",
                "127.0.0.1",
                "-p",
                &port.to_string(),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn moto");
        let moto = Moto {
            child,
            address: SocketAddr::from(([127, 0, 0, 1], port)),
        };
        let started = Instant::now();
        // Waiting for another process to listen: there is no clock to inject here.
        while TcpStream::connect(moto.address).is_err() {
            assert!(
                started.elapsed() < Duration::from_millis(MOTO_START_TIMEOUT_MS),
                "moto did not listen on {} in {MOTO_START_TIMEOUT_MS} ms",
                moto.address
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(moto)
    }

    fn endpoint(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Creates a bucket with a plain S3 `PUT /<bucket>`.
    fn create_bucket(&self, bucket: &str) {
        let mut stream = TcpStream::connect(self.address).expect("connect to moto");
        let request = format!(
            "PUT /{bucket} HTTP/1.1\r\nHost: {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            self.address
        );
        stream.write_all(request.as_bytes()).expect("send");
        let mut response = String::new();
        stream.read_to_string(&mut response).expect("receive");
        assert!(
            response.starts_with("HTTP/1.1 200"),
            "CreateBucket {bucket}: {response}"
        );
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn items_and_results_over_moto_s3() {
    let moto = match Moto::start() {
        Ok(moto) => moto,
        Err(reason) => {
            println!("skipped: {reason}");
            return;
        }
    };
    moto.create_bucket("data");
    moto.create_bucket("results");
    let stores = ObjectStores::open(ObjectStoreConfig::S3 {
        endpoint: moto.endpoint(),
        region: "us-east-1".into(),
        access_key_id: "testing".into(),
        secret_access_key: "testing".into(),
        allow_http: true,
    })
    .expect("open");

    // s3:getObject: a JSON array, a CSV with given headers, a missing key.
    let items: Vec<Value> = (0..2500).map(|n| json!({"n": n})).collect();
    stores
        .put_object(
            "data",
            "in/items.json",
            serde_json::to_vec(&items).expect("json"),
        )
        .await
        .expect("put");
    let spec = ItemReaderSpec::new(
        S3_GET_OBJECT,
        &json!({"Bucket": "data", "Key": "in/items.json"}),
        Some(&json!({"InputType": "JSON"})),
    )
    .expect("valid");
    assert_eq!(
        read_all(&stores, &spec, 0, 1000).await.expect("json"),
        items
    );
    assert_eq!(
        read_all(&stores, &spec, 2400, 1000).await.expect("resumed"),
        items[2400..]
    );
    stores
        .put_object("data", "in/rows.csv", b"1\t2\n3\t4\n".to_vec())
        .await
        .expect("put");
    let csv = ItemReaderSpec::new(
        S3_GET_OBJECT,
        &json!({"Bucket": "data", "Key": "in/rows.csv"}),
        Some(&json!({"InputType": "CSV", "CSVHeaderLocation": "GIVEN",
            "CSVHeaders": ["a", "b"], "CSVDelimiter": "TAB"})),
    )
    .expect("valid");
    assert_eq!(
        read_all(&stores, &csv, 0, 10).await.expect("csv"),
        vec![json!({"a": "1", "b": "2"}), json!({"a": "3", "b": "4"})]
    );
    // Pinned to its ETag, the object reads while unchanged and is refused once replaced.
    let etag = stores
        .open(&csv, 0)
        .await
        .expect("open")
        .object_etag()
        .map(str::to_string);
    let pinned = csv.clone().with_expected_etag(etag);
    assert_eq!(
        read_all(&stores, &pinned, 1, 10).await.expect("same").len(),
        1
    );
    stores
        .put_object("data", "in/rows.csv", b"5\t6\n".to_vec())
        .await
        .expect("put");
    let error = read_all(&stores, &pinned, 1, 10)
        .await
        .expect_err("changed");
    assert!(matches!(error, ItemsError::ObjectChanged { .. }), "{error}");
    stores
        .put_object("data", "in/rows.csv", b"1\t2\n3\t4\n".to_vec())
        .await
        .expect("put");
    let missing = ItemReaderSpec::new(
        S3_GET_OBJECT,
        &json!({"Bucket": "data", "Key": "in/none.json"}),
        Some(&json!({"InputType": "JSON"})),
    )
    .expect("valid");
    let error = read_all(&stores, &missing, 0, 10)
        .await
        .expect_err("missing");
    assert!(matches!(error, ItemsError::NoSuchKey { .. }), "{error}");
    assert_eq!(error.error_name(), "States.ItemReaderFailed");

    // s3:listObjectsV2: a string prefix, in key order, as AWS gives each object.
    stores
        .put_object("data", "in-other.txt", b"x".to_vec())
        .await
        .expect("put");
    let list = ItemReaderSpec::new(
        S3_LIST_OBJECTS_V2,
        &json!({"Bucket": "data", "Prefix": "in"}),
        None,
    )
    .expect("valid");
    let listed = read_all(&stores, &list, 0, 2).await.expect("list");
    let keys: Vec<&str> = listed
        .iter()
        .map(|i| i["Key"].as_str().expect("Key"))
        .collect();
    assert_eq!(keys, ["in-other.txt", "in/items.json", "in/rows.csv"]);
    assert_eq!(listed[2]["Size"], 8);
    let etag = listed[2]["Etag"].as_str().expect("Etag");
    assert!(
        etag.starts_with('"') && etag.len() == 34,
        "an MD5 ETag in quotes: {etag}"
    );
    assert_eq!(listed[2]["StorageClass"], "STANDARD");

    // The result writer: files cut at a small size, then the manifest.
    let spec = ResultWriterSpec::new(
        S3_PUT_OBJECT,
        &json!({"Bucket": "results", "Prefix": "jobs"}),
        None,
    )
    .expect("valid")
    .with_file_size_bytes_max(1500);
    let mut sink = stores
        .result_writer(&spec, MAP_RUN_ARN)
        .await
        .expect("sink");
    let children: Vec<_> = (0..6)
        .map(|n| child(n, ExecutionStatus::Succeeded))
        .collect();
    sink.write(ChildStatus::Succeeded, children)
        .await
        .expect("write");
    sink.write(ChildStatus::Failed, vec![child(6, ExecutionStatus::Failed)])
        .await
        .expect("write");
    let output = sink.finish().await.expect("finish");
    let manifest_key = format!("jobs/{MAP_RUN_ID}/manifest.json");
    assert_eq!(output["ResultWriterDetails"]["Key"], manifest_key);
    let manifest: Value = serde_json::from_slice(
        &stores
            .get_object("results", &manifest_key)
            .await
            .expect("manifest"),
    )
    .expect("json");
    let succeeded = manifest["ResultFiles"]["SUCCEEDED"]
        .as_array()
        .expect("files");
    assert!(succeeded.len() > 1, "cut into several files: {manifest}");
    let mut names = Vec::new();
    for file in succeeded {
        let bytes = stores
            .get_object("results", file["Key"].as_str().expect("key"))
            .await
            .expect("file");
        assert_eq!(file["Size"], bytes.len());
        let results: Value = serde_json::from_slice(&bytes).expect("a JSON array");
        names.extend(
            results
                .as_array()
                .expect("array")
                .iter()
                .map(|r| r["Name"].clone()),
        );
    }
    let expected: Vec<Value> = (0..6).map(|n| json!(n.to_string())).collect();
    assert_eq!(names, expected);
    assert_eq!(
        manifest["ResultFiles"]["FAILED"].as_array().map(Vec::len),
        Some(1)
    );
    assert_eq!(manifest["DestinationBucket"], "results");
}
