//! Two cluster nodes in one process over a real 3-server NATS cluster (JetStream R3 streams,
//! 4 partitions): every call is made through one node's `answer_call` (what the API runs
//! after a signature is checked), and the partitions are split between the nodes, so calls
//! are answered here or forwarded to the other node. The state machines and activities live in
//! partition 0 (the catalog); executions in the partition of their name.
//!
//! The redrive test fails an execution in a partition of one node, redrives it through the
//! other (the call forwarded to the owner), and redrives a second one after its partition
//! moved to the other node (its owner shut down): both run again and succeed.

#![cfg(all(feature = "server", feature = "cluster"))]

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use statelog::clock::SystemClock;
use statelog::cluster::backend::ClusterBackend;
use statelog::cluster::serve::{start_node, NodeConfig};
use statelog::engine::EngineOptions;
use statelog::server::backend::{CallName, Caller};
use statelog::server::protocol::Operation;
use statelog::server::router::answer_call;
use statelog::server::{Backend, ServerState};
use statelog_cluster::config;
use statelog_cluster::partition::{partition_of_execution, PartitionIndex};
use statelog_nats::testing::TestCluster;

const PARTITIONS: u32 = 4;
const LEASE_MS: u64 = 2_000;
const ACCOUNT: &str = "000000000000";
const PASS: &str = r#"{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}"#;

type Node = Arc<ServerState<ClusterBackend>>;

fn caller() -> Caller {
    Caller {
        account_id: ACCOUNT.into(),
        region: "us-east-1".into(),
        access_key_id: "AKID".into(),
    }
}

async fn call(node: &Node, operation: Operation, body: Value) -> Result<Value, String> {
    answer_call(
        node,
        &caller(),
        CallName::StepFunctions(operation),
        body.to_string().into_bytes().into(),
    )
    .await
    .map_err(|error| format!("{}: {error} ({error:?})", error.aws_name()))
}

/// `call`, retried while the partition is moving (503), as an AWS client retries.
async fn call_ok(node: &Node, operation: Operation, body: Value) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match call(node, operation, body.clone()).await {
            Ok(value) => return value,
            Err(error) if error.starts_with("ServiceUnavailable") && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(error) => panic!("{}: {error}", operation.name()),
        }
    }
}

/// A real 3-server cluster initialized with `PARTITIONS`, a directory for the nodes, and the
/// runtime the test runs them on; `None` (the reason printed) where nats-server is absent.
fn initialized_cluster() -> Option<(TestCluster, tempfile::TempDir, tokio::runtime::Runtime)> {
    let cluster = TestCluster::start_or_skip(3)?;
    let dir = tempfile::tempdir().expect("dir");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .expect("runtime");
    runtime
        .block_on(config::init(&cluster.urls(), PARTITIONS))
        .expect("init");
    Some((cluster, dir, runtime))
}

async fn node(cluster: &TestCluster, name: &str, dir: &std::path::Path) -> Node {
    let config = NodeConfig {
        nats: cluster.urls(),
        node: name.into(),
        listen: format!("127.0.0.1:0/{name}"),
        data_dir: dir.join(name),
        lease_ms: LEASE_MS,
        replicas: 3,
        engine_options: EngineOptions::default(),
    };
    start_node(config, Arc::new(SystemClock), None)
        .await
        .expect("the node joins")
}

/// Creates the activity `activity` through `via_activity` and, through `via_machine`, the
/// machine `machine` of one Task on it; answers their ARNs.
async fn activity_machine(
    via_activity: &Node,
    via_machine: &Node,
    activity: &str,
    machine: &str,
) -> (String, String) {
    let created = call_ok(
        via_activity,
        Operation::CreateActivity,
        json!({"name": activity}),
    )
    .await;
    let activity_arn = created["activityArn"].as_str().expect("arn").to_owned();
    let definition = json!({
        "StartAt": "T",
        "States": {"T": {"Type": "Task", "Resource": activity_arn, "End": true}}
    })
    .to_string();
    let created = call_ok(
        via_machine,
        Operation::CreateStateMachine,
        json!({"name": machine, "definition": definition, "roleArn": "arn:aws:iam::000000000000:role/r"}),
    )
    .await;
    let machine_arn = created["stateMachineArn"].as_str().expect("arn").to_owned();
    (activity_arn, machine_arn)
}

/// Waits until the two nodes together serve every partition, each some.
async fn wait_split(a: &Node, b: &Node) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (on_a, on_b) = (a.backend.host().owned(), b.backend.host().owned());
        if on_a.len() + on_b.len() == PARTITIONS as usize && !on_a.is_empty() && !on_b.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "a {on_a:?}, b {on_b:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn wait_status(node: &Node, arn: &str, status: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let described = call_ok(
            node,
            Operation::DescribeExecution,
            json!({"executionArn": arn}),
        )
        .await;
        if described["status"] == status {
            return described;
        }
        assert!(Instant::now() < deadline, "{arn}: {described}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[test]
fn any_node_answers_any_call_across_partitions() {
    let Some((cluster, dir, runtime)) = initialized_cluster() else {
        return;
    };
    runtime.block_on(async {
        let a = node(&cluster, "a", dir.path()).await;
        let b = node(&cluster, "b", dir.path()).await;
        wait_split(&a, &b).await;

        // The catalog through b, read through a.
        let created = call_ok(
            &b,
            Operation::CreateStateMachine,
            json!({"name": "m", "definition": PASS, "roleArn": "arn:aws:iam::000000000000:role/r"}),
        )
        .await;
        let machine = created["stateMachineArn"].as_str().expect("arn").to_owned();
        let listed = call_ok(&a, Operation::ListStateMachines, json!({})).await;
        assert_eq!(listed["stateMachines"][0]["stateMachineArn"], machine.as_str());
        assert_eq!(listed["stateMachines"].as_array().map(Vec::len), Some(1));

        // A request larger than NATS's default max_payload (1 MiB) is forwarded whole: a
        // definition near its 1 MiB limit whose escaping makes the body about 1.8 MB, sent
        // through the node that does not own the catalog.
        let not_catalog = if a.backend.host().owned().contains_key(&PartitionIndex(0)) {
            &b
        } else {
            &a
        };
        let comment = "\"".repeat(450 * 1024);
        let big = json!({
            "Comment": comment,
            "StartAt": "P",
            "States": {"P": {"Type": "Pass", "End": true}}
        })
        .to_string();
        let body = json!({"name": "big", "definition": big, "roleArn": "arn:aws:iam::000000000000:role/r"});
        assert!(body.to_string().len() > 1024 * 1024);
        call_ok(not_catalog, Operation::CreateStateMachine, body).await;
        let described = call_ok(
            &a,
            Operation::DescribeStateMachine,
            json!({"stateMachineArn": "arn:aws:states:us-east-1:000000000000:stateMachine:big"}),
        )
        .await;
        assert_eq!(described["definition"].as_str().map(str::len), Some(big.len()));

        // A refusal forwarded from the catalog's owner keeps its members: TooManyTags names
        // the resource, as AWS's does.
        let tags: Vec<Value> = (0..51)
            .map(|i| json!({"key": format!("k{i}"), "value": "v"}))
            .collect();
        let refused = answer_call(
            not_catalog,
            &caller(),
            CallName::StepFunctions(Operation::TagResource),
            json!({"resourceArn": machine, "tags": tags})
                .to_string()
                .into_bytes()
                .into(),
        )
        .await
        .expect_err("51 tags are too many");
        assert_eq!(refused.aws_name(), "TooManyTags", "{refused:?}");
        assert_eq!(refused.resource_name(), Some(machine.as_str()), "{refused:?}");

        // Executions in every partition, started through both nodes, read through the other.
        let mut started = BTreeSet::new();
        for i in 0..12 {
            let (via, other) = if i % 2 == 0 { (&a, &b) } else { (&b, &a) };
            let answer = call_ok(
                via,
                Operation::StartExecution,
                json!({"stateMachineArn": machine, "name": format!("run-{i}"), "input": "{\"i\": 1}"}),
            )
            .await;
            let arn = answer["executionArn"].as_str().expect("arn").to_owned();
            let described = wait_status(other, &arn, "SUCCEEDED").await;
            let output: Value =
                serde_json::from_str(described["output"].as_str().expect("output")).expect("json");
            assert_eq!(output, json!({"i": 1}));
            started.insert(arn);
        }
        // An unnamed start is named by the node that receives it.
        let unnamed = call_ok(
            &a,
            Operation::StartExecution,
            json!({"stateMachineArn": machine, "input": "{}"}),
        )
        .await;
        let unnamed_arn = unnamed["executionArn"].as_str().expect("arn").to_owned();
        wait_status(&b, &unnamed_arn, "SUCCEEDED").await;
        started.insert(unnamed_arn);
        // The name again, once that execution closed, is refused through either node (the
        // owner's error, forwarded as it answered it).
        let again = call(
            &b,
            Operation::StartExecution,
            json!({"stateMachineArn": machine, "name": "run-0", "input": "{\"i\": 1}"}),
        )
        .await
        .expect_err("a closed execution's name");
        assert!(again.starts_with("ExecutionAlreadyExists"), "{again}");
        // ListExecutions through a, three to a page, lists each exactly once, newest first.
        let mut listed = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut body = json!({"stateMachineArn": machine, "maxResults": 3});
            if let Some(token) = &token {
                body["nextToken"] = json!(token);
            }
            let page = call_ok(&a, Operation::ListExecutions, body).await;
            let items = page["executions"].as_array().expect("executions").clone();
            assert!(items.len() <= 3);
            listed.extend(items);
            match page.get("nextToken").and_then(Value::as_str) {
                Some(next) => token = Some(next.to_owned()),
                None => break,
            }
        }
        let arns: Vec<String> = listed
            .iter()
            .map(|e| e["executionArn"].as_str().expect("arn").to_owned())
            .collect();
        assert_eq!(arns.iter().cloned().collect::<BTreeSet<_>>(), started);
        assert_eq!(arns.len(), started.len(), "no execution twice: {arns:?}");
        let starts: Vec<f64> = listed
            .iter()
            .map(|e| e["startDate"].as_f64().expect("date"))
            .collect();
        assert!(starts.windows(2).all(|w| w[0] >= w[1]), "{starts:?}");
        // A machine the catalog does not know is refused as on one node.
        let missing = call(
            &b,
            Operation::ListExecutions,
            json!({"stateMachineArn": "arn:aws:states:us-east-1:000000000000:stateMachine:none"}),
        )
        .await
        .expect_err("refused");
        assert!(missing.starts_with("StateMachineDoesNotExist"), "{missing}");

        // An activity: created through a; its tasks, in several partitions, polled through b
        // and answered through a.
        let (activity_arn, task_machine_arn) = activity_machine(&a, &a, "pack", "t").await;
        let mut waiting = BTreeSet::new();
        for i in 0..6 {
            let answer = call_ok(
                &b,
                Operation::StartExecution,
                json!({"stateMachineArn": task_machine_arn, "name": format!("task-{i}"), "input": format!("{{\"n\": {i}}}")}),
            )
            .await;
            waiting.insert(answer["executionArn"].as_str().expect("arn").to_owned());
        }
        let mut inputs = BTreeSet::new();
        for _ in 0..6 {
            let task = call_ok(
                &b,
                Operation::GetActivityTask,
                json!({"activityArn": activity_arn, "workerName": "w"}),
            )
            .await;
            let token = task["taskToken"].as_str().expect("a task").to_owned();
            inputs.insert(task["input"].as_str().expect("input").to_owned());
            call_ok(
                &a,
                Operation::SendTaskSuccess,
                json!({"taskToken": token, "output": "{\"done\": true}"}),
            )
            .await;
        }
        assert_eq!(inputs.len(), 6, "each task handed out once: {inputs:?}");
        for arn in &waiting {
            let described = wait_status(&a, arn, "SUCCEEDED").await;
            let output: Value =
                serde_json::from_str(described["output"].as_str().expect("output")).expect("json");
            assert_eq!(output, json!({"done": true}));
        }

        // A poll that finds nothing waits and answers empty; a task queued meanwhile, in a
        // partition of either node, is handed to it.
        let poller = {
            let b = b.clone();
            let activity_arn = activity_arn.clone();
            tokio::spawn(async move {
                call_ok(&b, Operation::GetActivityTask, json!({"activityArn": activity_arn})).await
            })
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        call_ok(
            &a,
            Operation::StartExecution,
            json!({"stateMachineArn": task_machine_arn, "name": "late", "input": "{\"late\": 1}"}),
        )
        .await;
        let task = tokio::time::timeout(Duration::from_secs(30), poller)
            .await
            .expect("the poll is woken")
            .expect("the poll ran");
        let input: Value =
            serde_json::from_str(task["input"].as_str().expect("input")).expect("json");
        assert_eq!(input, json!({"late": 1}));

        for node in [&a, &b] {
            node.backend.shutdown().await;
        }
    });
}

/// The event types of an execution's history, read through `node`, after checking that its
/// ids are 1..=n.
async fn history_types(node: &Node, arn: &str) -> Vec<String> {
    let page = call_ok(
        node,
        Operation::GetExecutionHistory,
        json!({"executionArn": arn, "maxResults": 1000}),
    )
    .await;
    let events = page["events"].as_array().expect("events").clone();
    let ids: Vec<u64> = events
        .iter()
        .map(|e| e["id"].as_u64().expect("id"))
        .collect();
    let contiguous: Vec<u64> = (1..=events.len() as u64).collect();
    assert_eq!(ids, contiguous, "{arn}: event ids");
    events
        .iter()
        .map(|e| e["type"].as_str().expect("type").to_owned())
        .collect()
}

/// Hands out the one task queued on `activity_arn` (polled through `poll`) and answers it
/// through `answer`: a failure, or a success echoing its input. Returns the task's input.
async fn answer_task(poll: &Node, answer: &Node, activity_arn: &str, fail: bool) -> Value {
    let task = call_ok(
        poll,
        Operation::GetActivityTask,
        json!({"activityArn": activity_arn, "workerName": "flaky"}),
    )
    .await;
    let token = task["taskToken"].as_str().expect("a task").to_owned();
    let input: Value = serde_json::from_str(task["input"].as_str().expect("input")).expect("json");
    if fail {
        call_ok(
            answer,
            Operation::SendTaskFailure,
            json!({"taskToken": token, "error": "Flaky.First", "cause": "the first attempt fails"}),
        )
        .await;
    } else {
        call_ok(
            answer,
            Operation::SendTaskSuccess,
            json!({"taskToken": token, "output": json!({"done": input["n"]}).to_string()}),
        )
        .await;
    }
    input
}

#[test]
fn a_failed_execution_is_redriven_through_another_node_and_after_its_partition_moved() {
    let Some((cluster, dir, runtime)) = initialized_cluster() else {
        return;
    };
    runtime.block_on(async {
        let a = node(&cluster, "a", dir.path()).await;
        let b = node(&cluster, "b", dir.path()).await;
        wait_split(&a, &b).await;

        // A Task on an activity whose worker fails the first attempt and answers the next.
        let (activity_arn, machine) = activity_machine(&a, &b, "flaky", "r").await;

        // Two executions in partitions a owns, started through b; each one's task fails.
        let owned_a = a.backend.host().owned();
        let names: Vec<(String, PartitionIndex)> = (0..)
            .map(|i| format!("redrive-{i}"))
            .filter_map(|name| {
                let partition =
                    partition_of_execution(ACCOUNT, "r", &name, PARTITIONS).expect("in range");
                owned_a.contains_key(&partition).then_some((name, partition))
            })
            .take(2)
            .collect();
        let mut failed = Vec::new();
        for (n, (name, partition)) in names.iter().enumerate() {
            let started = call_ok(
                &b,
                Operation::StartExecution,
                json!({"stateMachineArn": machine, "name": name, "input": json!({"n": n}).to_string()}),
            )
            .await;
            let arn = started["executionArn"].as_str().expect("arn").to_owned();
            let input = answer_task(&b, &a, &activity_arn, true).await;
            assert_eq!(input, json!({"n": n}));
            let described = wait_status(&b, &arn, "FAILED").await;
            assert_eq!(described["error"], "Flaky.First");
            assert_eq!(described["redriveStatus"], "REDRIVABLE", "{described}");
            failed.push((arn, *partition));
        }
        let redriven_types = [
            "ExecutionStarted",
            "TaskStateEntered",
            "ActivityScheduled",
            "ActivityStarted",
            "ActivityFailed",
            "ExecutionFailed",
            // The redrive reruns the failed state: entered again, a new activity.
            "ExecutionRedriven",
            "TaskStateEntered",
            "ActivityScheduled",
            "ActivityStarted",
            "ActivitySucceeded",
            "TaskStateExited",
            "ExecutionSucceeded",
        ];

        // The first, redriven through b while a owns its partition: forwarded to a.
        let (arn, partition) = &failed[0];
        assert!(!b.backend.host().owned().contains_key(partition));
        let redriven = call_ok(
            &b,
            Operation::RedriveExecution,
            json!({"executionArn": arn, "clientToken": "again-0"}),
        )
        .await;
        assert!(redriven["redriveDate"].is_number(), "{redriven}");
        let input = answer_task(&a, &b, &activity_arn, false).await;
        assert_eq!(input, json!({"n": 0}), "the same input, once more");
        let described = wait_status(&b, arn, "SUCCEEDED").await;
        assert_eq!(described["redriveCount"], 1, "{described}");
        assert_eq!(described["output"], json!({"done": 0}).to_string());
        assert_eq!(history_types(&a, arn).await, redriven_types);
        // The same client token answers the same redrive; a succeeded execution is not
        // redriven again (the owner's refusal, forwarded as it answered it).
        let repeated = call_ok(
            &b,
            Operation::RedriveExecution,
            json!({"executionArn": arn, "clientToken": "again-0"}),
        )
        .await;
        assert_eq!(repeated["redriveDate"], redriven["redriveDate"]);
        let refused = call(&b, Operation::RedriveExecution, json!({"executionArn": arn}))
            .await
            .expect_err("succeeded: not redrivable");
        assert!(refused.starts_with("ExecutionNotRedrivable"), "{refused}");

        // The second, after its partition moved: a shuts down (its leases released), b
        // takes every partition, replays them from their streams, and redrives it.
        let (arn, partition) = &failed[1];
        a.backend.shutdown().await;
        let deadline = Instant::now() + Duration::from_secs(60);
        while b.backend.host().owned().len() < PARTITIONS as usize {
            assert!(Instant::now() < deadline, "b serves {:?}", b.backend.host().owned());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(b.backend.host().owned().contains_key(partition));
        let described = wait_status(&b, arn, "FAILED").await;
        assert_eq!(described["redriveStatus"], "REDRIVABLE", "{described}");
        let redriven = call_ok(&b, Operation::RedriveExecution, json!({"executionArn": arn})).await;
        assert!(redriven["redriveDate"].is_number(), "{redriven}");
        let input = answer_task(&b, &b, &activity_arn, false).await;
        assert_eq!(input, json!({"n": 1}));
        let described = wait_status(&b, arn, "SUCCEEDED").await;
        assert_eq!(described["redriveCount"], 1, "{described}");
        assert_eq!(history_types(&b, arn).await, redriven_types);

        b.backend.shutdown().await;
    });
}

/// A node that gives partitions up (a second node joins and takes its share) lets go of their
/// engines: the adapters it kept for them are dropped within a few reopen checks, so an old
/// engine's threads and memory do not stay until the partition comes back.
#[test]
fn a_node_lets_go_of_the_engines_of_partitions_it_gave_up() {
    let Some((cluster, dir, runtime)) = initialized_cluster() else {
        return;
    };
    runtime.block_on(async {
        let a = node(&cluster, "a", dir.path()).await;
        let deadline = Instant::now() + Duration::from_secs(60);
        while a.backend.host().owned().len() < PARTITIONS as usize {
            assert!(Instant::now() < deadline, "{:?}", a.backend.host().owned());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        call_ok(
            &a,
            Operation::CreateStateMachine,
            json!({"name": "m", "definition": PASS, "roleArn": "arn:aws:iam::000000000000:role/r"}),
        )
        .await;
        // An execution in every partition: a serves each through an adapter of its engine.
        let mut covered = BTreeSet::new();
        for i in 0.. {
            let name = format!("run-{i}");
            let partition = partition_of_execution(ACCOUNT, "m", &name, PARTITIONS).expect("in range");
            if covered.insert(partition) {
                call_ok(
                    &a,
                    Operation::StartExecution,
                    json!({"stateMachineArn": "arn:aws:states:us-east-1:000000000000:stateMachine:m", "name": name}),
                )
                .await;
            }
            if covered.len() == PARTITIONS as usize {
                break;
            }
        }
        assert_eq!(a.backend.adapters_count(), PARTITIONS as usize);

        let b = node(&cluster, "b", dir.path()).await;
        wait_split(&a, &b).await;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (kept, owned) = (a.backend.adapters_count(), a.backend.host().owned().len());
            if kept <= owned {
                assert!(owned < PARTITIONS as usize);
                break;
            }
            assert!(Instant::now() < deadline, "a keeps {kept} adapters for {owned} partitions");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        b.backend.shutdown().await;
        a.backend.shutdown().await;
    });
}
