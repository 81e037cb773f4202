//! In-process tests of the router over a small in-memory backend: the wire protocol, SigV4
//! accept/reject, the body limit, error shapes, and "any bytes in, an AWS-shaped error out".
//! The backend here is a test double for the protocol only; engine behaviour is tested through
//! the real engine in `tests/serve_*.rs`.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Request, StatusCode};
use parking_lot::Mutex;
use proptest::prelude::*;
use serde_json::{json, Value};
use tower::ServiceExt;

use super::backend::*;
use super::credentials::{Credential, Credentials};
use super::error::Error;
use super::protocol::*;
use super::sigv4::{self, SigningParams};
use super::{router, ServerState};
use crate::clock::ManualClock;

/// 2026-11-29T20:54:39Z, the time of the botocore-made test vector below.
const VECTOR_NOW_MS: u64 = 1_795_985_679_000;

#[derive(Debug, Default)]
struct FakeBackend {
    machines: Mutex<BTreeMap<String, StateMachineInfo>>,
    executions: Mutex<BTreeMap<String, ExecutionInfo>>,
    /// Polls of the activity `held` waiting now; they wait until `release` is set.
    held_polls: std::sync::atomic::AtomicUsize,
    release: std::sync::atomic::AtomicBool,
    released: tokio::sync::Notify,
}

impl FakeBackend {
    /// Lets every poll of the activity `held` answer (empty).
    fn release_held_polls(&self) {
        self.release
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.released.notify_waiters();
    }
}

fn not_found(aws_name: &'static str, arn: &str) -> Error {
    Error::Engine {
        aws_name,
        message: format!("does not exist: {arn}"),
        server_fault: false,
    }
}

/// What the fake answers for an operation it does not model (the engine's are tested in
/// `tests/serve_*.rs`).
fn unsupported(operation: &str) -> Error {
    Error::NotSupported {
        operation: operation.into(),
        reason: "the router's test backend does not model it",
    }
}

impl Backend for FakeBackend {
    fn region(&self) -> &str {
        "us-east-1"
    }

    async fn swf<T, F>(&self, _: &Caller, _: SwfCallKind, _: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&crate::engine::Engine) -> Result<T, crate::engine::swf::api::SwfError>
            + Send
            + 'static,
    {
        // A protocol double: an SWF service with no domains, types, runs or tasks.
        Err(super::swf_service::fault_error(
            crate::engine::swf::api::SwfError::unknown_resource(
                "the router's test backend has no SWF domains or tasks",
            ),
        ))
    }

    async fn swf_domain_registered(&self, _: &Caller, _: String) -> Result<bool, Error> {
        Ok(false)
    }

    async fn create_state_machine(
        &self,
        caller: &Caller,
        input: CreateStateMachineInput,
    ) -> Result<StateMachineCreated, Error> {
        let arn = format!(
            "arn:aws:states:{}:{}:stateMachine:{}",
            caller.region, caller.account_id, input.name
        );
        let machine_type = input.machine_type()?;
        self.machines.lock().insert(
            arn.clone(),
            StateMachineInfo {
                arn: arn.clone(),
                name: input.name,
                definition: input.definition,
                role_arn: input.role_arn,
                created_ms: 1_500,
                updated_ms: None,
                revision_id: None,
                variable_references: Default::default(),
                machine_type,
                description: None,
                map_run_arn: None,
                label: None,
            },
        );
        Ok(StateMachineCreated {
            arn,
            created_ms: 1_500,
            version_arn: None,
        })
    }

    async fn describe_state_machine(
        &self,
        _: &Caller,
        arn: &str,
    ) -> Result<StateMachineInfo, Error> {
        self.machines
            .lock()
            .get(arn)
            .cloned()
            .ok_or_else(|| not_found("StateMachineDoesNotExist", arn))
    }

    async fn list_state_machines(
        &self,
        caller: &Caller,
        _: u32,
        _: Option<String>,
    ) -> Result<Page<StateMachineSummary>, Error> {
        let prefix = format!("arn:aws:states:{}:{}:", caller.region, caller.account_id);
        let items = self
            .machines
            .lock()
            .values()
            .filter(|m| m.arn.starts_with(&prefix))
            .map(|m| StateMachineSummary {
                arn: m.arn.clone(),
                name: m.name.clone(),
                created_ms: m.created_ms,
                machine_type: m.machine_type,
            })
            .collect();
        Ok(Page {
            items,
            next_token: None,
        })
    }

    async fn delete_state_machine(&self, _: &Caller, arn: &str) -> Result<(), Error> {
        self.machines.lock().remove(arn);
        Ok(())
    }

    async fn start_sync_execution(
        &self,
        _: &Caller,
        _: super::protocol::StartSyncExecutionInput,
    ) -> Result<crate::engine::ExpressOutcome, Error> {
        Err(unsupported("StartSyncExecution"))
    }

    async fn start_execution(
        &self,
        _: &Caller,
        input: StartExecutionInput,
    ) -> Result<ExecutionStarted, Error> {
        let machine = self
            .machines
            .lock()
            .get(&input.state_machine_arn)
            .cloned()
            .ok_or_else(|| not_found("StateMachineDoesNotExist", &input.state_machine_arn))?;
        let name = input.name.unwrap_or_else(|| "generated".into());
        let arn = machine.arn.replace(":stateMachine:", ":execution:") + ":" + &name;
        self.executions.lock().insert(
            arn.clone(),
            ExecutionInfo {
                arn: arn.clone(),
                state_machine_arn: machine.arn,
                name,
                status: "RUNNING",
                start_ms: 2_000,
                stop_ms: None,
                input: input.input.or_else(|| Some("{}".into())),
                output: None,
                error: None,
                cause: None,
                redrive_count: 0,
                redrive_ms: None,
                redrive_status: None,
                redrive_status_reason: None,
                version_arn: None,
                alias_arn: None,
                map_run_arn: None,
            },
        );
        Ok(ExecutionStarted {
            arn,
            start_ms: 2_000,
        })
    }

    async fn describe_execution(&self, _: &Caller, arn: &str) -> Result<ExecutionInfo, Error> {
        self.executions
            .lock()
            .get(arn)
            .cloned()
            .ok_or_else(|| not_found("ExecutionDoesNotExist", arn))
    }

    async fn describe_state_machine_for_execution(
        &self,
        caller: &Caller,
        execution_arn: &str,
    ) -> Result<StateMachineInfo, Error> {
        let execution = self.describe_execution(caller, execution_arn).await?;
        self.describe_state_machine(caller, &execution.state_machine_arn)
            .await
    }

    async fn list_executions(
        &self,
        _: &Caller,
        input: ListExecutionsInput,
        _: u32,
    ) -> Result<Page<ExecutionSummary>, Error> {
        let items = self
            .executions
            .lock()
            .values()
            .filter(|e| Some(&e.state_machine_arn) == input.state_machine_arn.as_ref())
            .map(|e| ExecutionSummary {
                arn: e.arn.clone(),
                state_machine_arn: e.state_machine_arn.clone(),
                name: e.name.clone(),
                status: e.status,
                start_ms: e.start_ms,
                stop_ms: e.stop_ms,
                redrive_count: e.redrive_count,
                redrive_ms: e.redrive_ms,
                version_arn: None,
                alias_arn: None,
            })
            .collect();
        Ok(Page {
            items,
            next_token: Some("page-2".into()),
        })
    }

    async fn stop_execution(&self, _: &Caller, input: StopExecutionInput) -> Result<u64, Error> {
        let mut executions = self.executions.lock();
        let execution = executions
            .get_mut(&input.execution_arn)
            .ok_or_else(|| not_found("ExecutionDoesNotExist", &input.execution_arn))?;
        execution.status = "ABORTED";
        execution.stop_ms = Some(3_250);
        execution.error = input.error;
        execution.cause = input.cause;
        Ok(3_250)
    }

    async fn get_execution_history(
        &self,
        caller: &Caller,
        input: GetExecutionHistoryInput,
        _: u32,
    ) -> Result<Page<Value>, Error> {
        self.describe_execution(caller, &input.execution_arn)
            .await?;
        Ok(Page {
            items: vec![
                json!({"id": 1, "previousEventId": 0, "type": "ExecutionStarted", "timestamp": 2.0}),
            ],
            next_token: None,
        })
    }

    /// A poll that finds nothing (the real wait is the engine's; tested there); a poll of the
    /// activity `held` waits until the test releases it.
    async fn get_activity_task(
        &self,
        _: &Caller,
        arn: String,
        _: Option<String>,
    ) -> Result<Option<ActivityTaskInfo>, Error> {
        use std::sync::atomic::Ordering;
        if arn.ends_with(":activity:held") {
            self.held_polls.fetch_add(1, Ordering::SeqCst);
            loop {
                let released = self.released.notified();
                if self.release.load(Ordering::SeqCst) {
                    break;
                }
                released.await;
            }
            self.held_polls.fetch_sub(1, Ordering::SeqCst);
            return Ok(None);
        }
        if arn.ends_with(":activity:busy") {
            Ok(Some(ActivityTaskInfo {
                task_token: "tok".into(),
                input: "{}".into(),
            }))
        } else {
            Ok(None)
        }
    }

    /// SWF: the list `busy` has a task; any other list answers empty.
    async fn poll_task_list(
        &self,
        caller: &Caller,
        list: String,
        identity: Option<String>,
    ) -> Result<Option<TaskListTask>, Error> {
        if list != "busy" {
            return Ok(None);
        }
        Ok(Some(TaskListTask {
            task_token: format!("tok-for-{}", identity.unwrap_or_default()),
            input: r#"{"n": 1}"#.into(),
            execution_arn: format!(
                "arn:aws:states:us-east-1:{}:execution:m:e1",
                caller.account_id
            ),
            activity_arn: format!(
                "arn:aws:states:us-east-1:{}:activity:resize",
                caller.account_id
            ),
            scheduled_event_id: 3,
            started_event_id: 5,
        }))
    }

    async fn count_pending_tasks(&self, _: &Caller, list: String) -> Result<usize, Error> {
        Ok(if list == "busy" { 2 } else { 0 })
    }

    /// Only the tokens `tok` (Step Functions API) and [`SF_SWF_TOKEN`] (over SWF) are known.
    async fn send_task_heartbeat(&self, _: &Caller, task_token: String) -> Result<(), Error> {
        if task_token == "tok" || task_token == SF_SWF_TOKEN {
            Ok(())
        } else {
            Err(Error::Engine {
                aws_name: "InvalidToken",
                message: "Invalid Token: no such task".into(),
                server_fault: false,
            })
        }
    }

    async fn update_state_machine(
        &self,
        _: &Caller,
        _: UpdateStateMachineInput,
    ) -> Result<StateMachineUpdated, Error> {
        Err(unsupported("UpdateStateMachine"))
    }

    async fn catalog_engine<T, F>(&self, _: &Caller, _: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&crate::engine::Engine) -> Result<T, crate::engine::Error> + Send + 'static,
    {
        Err(unsupported("state machine versions and aliases"))
    }

    async fn create_activity(
        &self,
        _: &Caller,
        _: String,
        _: Vec<TagInput>,
    ) -> Result<ActivityInfo, Error> {
        Err(unsupported("CreateActivity"))
    }

    async fn tag_resource(&self, _: &Caller, _: String, _: Vec<TagInput>) -> Result<(), Error> {
        Err(unsupported("TagResource"))
    }

    async fn untag_resource(&self, _: &Caller, _: String, _: Vec<String>) -> Result<(), Error> {
        Err(unsupported("UntagResource"))
    }

    async fn list_tags_for_resource(&self, _: &Caller, _: String) -> Result<Vec<TagInput>, Error> {
        Err(unsupported("ListTagsForResource"))
    }

    async fn describe_activity(&self, _: &Caller, _: String) -> Result<ActivityInfo, Error> {
        Err(unsupported("DescribeActivity"))
    }

    async fn list_activities(
        &self,
        _: &Caller,
        _: u32,
        _: Option<String>,
    ) -> Result<Page<ActivityInfo>, Error> {
        Err(unsupported("ListActivities"))
    }

    async fn delete_activity(&self, _: &Caller, _: String) -> Result<(), Error> {
        Err(unsupported("DeleteActivity"))
    }

    async fn redrive_execution(&self, _: &Caller, _: RedriveExecutionInput) -> Result<u64, Error> {
        Err(unsupported("RedriveExecution"))
    }

    async fn send_task_success(&self, _: &Caller, _: String, _: String) -> Result<(), Error> {
        Err(unsupported("SendTaskSuccess"))
    }

    async fn send_task_failure(
        &self,
        _: &Caller,
        _: String,
        _: String,
        _: String,
    ) -> Result<(), Error> {
        Err(unsupported("SendTaskFailure"))
    }

    fn metrics(&self) -> Vec<MetricSample> {
        vec![MetricSample {
            name: "statelog_fake_total".into(),
            kind: "counter",
            help: "A fake engine counter.".into(),
            labels: Vec::new(),
            value: 7.0,
        }]
    }
}

struct Harness {
    state: Arc<ServerState<FakeBackend>>,
    clock: ManualClock,
}

const KEY_A: &str = "AKIDALPHA";
const SECRET_A: &str = "alpha/secret+key";
const KEY_B: &str = "AKIDBRAVO";
const SECRET_B: &str = "bravo-secret";

fn harness(with_credentials: bool) -> Harness {
    let clock = ManualClock::new(VECTOR_NOW_MS);
    let credentials = with_credentials.then(|| {
        let mut keys = BTreeMap::new();
        keys.insert(
            KEY_A.to_owned(),
            Credential {
                secret_access_key: SECRET_A.into(),
                account_id: "111111111111".into(),
            },
        );
        keys.insert(
            KEY_B.to_owned(),
            Credential {
                secret_access_key: SECRET_B.into(),
                account_id: "222222222222".into(),
            },
        );
        Credentials::from_map(keys, "test").expect("valid test credentials")
    });
    let state = ServerState::new(FakeBackend::default(), credentials, Arc::new(clock.clone()));
    Harness { state, clock }
}

/// A request signed like an AWS SDK signs it.
fn signed(target: &str, body: &[u8], key: &str, secret: &str, now_ms: u64) -> Request<Body> {
    signed_for("states", target, body, key, secret, now_ms)
}

/// A request signed for the SigV4 scope service `service` (`states`, `swf`).
fn signed_for(
    service: &str,
    target: &str,
    body: &[u8],
    key: &str,
    secret: &str,
    now_ms: u64,
) -> Request<Body> {
    let params = SigningParams {
        access_key_id: key,
        secret_access_key: secret,
        region: "us-east-1",
        service,
        now_ms,
    };
    sigv4::signed_json_request("127.0.0.1:8080", target, body.to_vec(), &params).expect("signable")
}

async fn send(h: &Harness, request: Request<Body>) -> (StatusCode, Value) {
    let response = router::router(h.state.clone())
        .oneshot(request)
        .await
        .expect("the router is infallible");
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body reads");
    let value = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
    (status, value)
}

/// The one way the tests here make a signed call: `target` with `body`, signed for the SigV4
/// scope service `service` (`states`, `swf`) with `key` and `secret` at the harness clock's now.
async fn signed_call(
    h: &Harness,
    service: &str,
    target: &str,
    body: &[u8],
    key: &str,
    secret: &str,
) -> (StatusCode, Value) {
    let now_ms = h.clock.now_ms_for_tests();
    send(h, signed_for(service, target, body, key, secret, now_ms)).await
}

/// A Step Functions call as account 111111111111 that must succeed; its answer.
async fn answer(h: &Harness, operation: &str, body: Value) -> Value {
    let (status, value) = call(h, operation, body).await;
    assert_eq!(status, StatusCode::OK, "{operation}: {value}");
    value
}

/// A Step Functions call as account 111111111111.
async fn call(h: &Harness, operation: &str, body: Value) -> (StatusCode, Value) {
    let target = format!("AWSStepFunctions.{operation}");
    let body = body.to_string();
    signed_call(h, "states", &target, body.as_bytes(), KEY_A, SECRET_A).await
}

trait NowForTests {
    fn now_ms_for_tests(&self) -> u64;
}

impl NowForTests for ManualClock {
    fn now_ms_for_tests(&self) -> u64 {
        use crate::clock::Clock;
        self.now_ms()
    }
}

fn assert_error(result: &(StatusCode, Value), status: u16, aws_name: &str) {
    assert_eq!(result.0.as_u16(), status, "{:?}", result.1);
    // SWF faults carry SWF's namespace (`com.amazonaws.swf.base.model#`); clients read the name.
    let wire = result.1["__type"].as_str().unwrap_or("");
    assert_eq!(wire.rsplit('#').next(), Some(aws_name), "{:?}", result.1);
    assert!(
        result.1["message"].as_str().is_some_and(|m| !m.is_empty()),
        "error without message: {:?}",
        result.1
    );
}

const PASS_DEFINITION: &str = r#"{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}"#;

#[tokio::test]
async fn botocore_test_vector_is_accepted_and_any_change_rejected() {
    // Made with botocore's SigV4Auth (an independent implementation): secret
    // wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY, region us-east-1, service states.
    let body = br#"{"stateMachineArn":"arn:aws:states:us-east-1:123456789012:stateMachine:Hello","name":"run-1"}"#;
    let build = |signature: &str, body: &[u8]| {
        let mut headers = HeaderMap::new();
        headers.insert("host", HeaderValue::from_static("127.0.0.1:8080"));
        headers.insert("content-type", HeaderValue::from_static(CONTENT_TYPE));
        headers.insert(
            "x-amz-target",
            HeaderValue::from_static("AWSStepFunctions.StartExecution"),
        );
        headers.insert("x-amz-date", HeaderValue::from_static("20261129T205439Z"));
        let header = format!(
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261129/us-east-1/states/aws4_request, \
             SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature={signature}"
        );
        headers.insert(
            "authorization",
            HeaderValue::from_str(&header).expect("ascii"),
        );
        (headers, body.to_vec())
    };
    let good = "dd1dfb0be4b8be2c43a80bda401d432d5a44dc9e024df82ba22c75206aadf22a";
    let check = |headers: &HeaderMap, body: &[u8], now_ms: u64| {
        let parts = sigv4::RequestParts {
            method: "POST",
            path: "/",
            query: "",
            headers,
            body,
        };
        let auth = sigv4::authorization_of(&parts)?;
        sigv4::verify(
            &parts,
            &auth,
            sigv4::Check::Secret {
                secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                now_ms,
            },
        )
    };
    let (headers, bytes) = build(good, body);
    check(&headers, &bytes, VECTOR_NOW_MS).expect("botocore's signature verifies");
    // One hex digit changed.
    let bad = format!("{}0", &good[..63]);
    let (headers, bytes) = build(&bad, body);
    assert!(matches!(
        check(&headers, &bytes, VECTOR_NOW_MS),
        Err(Error::SignatureMismatch)
    ));
    // The body changed after signing.
    let (headers, _) = build(good, body);
    let tampered = br#"{"stateMachineArn":"arn:aws:states:us-east-1:123456789012:stateMachine:Hello","name":"run-2"}"#;
    assert!(matches!(
        check(&headers, tampered, VECTOR_NOW_MS),
        Err(Error::SignatureMismatch)
    ));
    // 15 minutes of skew is accepted; one second more is not, in either direction.
    let skew_ms = 15 * 60 * 1000;
    let (headers, bytes) = build(good, body);
    check(&headers, &bytes, VECTOR_NOW_MS + skew_ms).expect("15 min old is accepted");
    assert!(matches!(
        check(&headers, &bytes, VECTOR_NOW_MS + skew_ms + 1000),
        Err(Error::SignatureExpired { .. })
    ));
    assert!(matches!(
        check(&headers, &bytes, VECTOR_NOW_MS - skew_ms - 1000),
        Err(Error::SignatureNotYetCurrent { .. })
    ));
    // Our signer produces botocore's signature for the same request.
    let mut headers = HeaderMap::new();
    headers.insert("host", HeaderValue::from_static("127.0.0.1:8080"));
    headers.insert("content-type", HeaderValue::from_static(CONTENT_TYPE));
    headers.insert(
        "x-amz-target",
        HeaderValue::from_static("AWSStepFunctions.StartExecution"),
    );
    let header = sigv4::sign(
        "POST",
        "/",
        "",
        &mut headers,
        body,
        &SigningParams {
            access_key_id: "AKIDEXAMPLE",
            secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            region: "us-east-1",
            service: "states",
            now_ms: VECTOR_NOW_MS,
        },
    )
    .expect("signs");
    assert!(header.ends_with(good), "{header}");
}

#[test]
fn signing_key_matches_the_documented_derivation() {
    // AWS's documented example: secret wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY, 20120215,
    // us-east-1, iam.
    let key = sigv4::signing_key(
        "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        "20120215",
        "us-east-1",
        "iam",
    );
    assert_eq!(
        sigv4::hex(&key),
        "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d"
    );
}

#[test]
fn malformed_authorization_headers_are_incomplete_signatures() {
    let cases = [
        "Basic dXNlcjpwYXNz",
        "AWS4-HMAC-SHA256",
        "AWS4-HMAC-SHA256 Credential=AK/20260101/us-east-1/states/aws4_request, SignedHeaders=host",
        "AWS4-HMAC-SHA256 Credential=AK/2026/us-east-1/states/aws4_request, SignedHeaders=host, Signature=00",
        "AWS4-HMAC-SHA256 Credential=AK/20260101/us-east-1/states/aws4_request, SignedHeaders=host, Signature=zz",
        "AWS4-HMAC-SHA256 Credential=AK/20260101/us-east-1/states, SignedHeaders=host, Signature=00",
        "AWS4-HMAC-SHA256 Credential=AK/20260101/us-east-1/states/aws4_request, SignedHeaders=x-amz-date, Signature=0000000000000000000000000000000000000000000000000000000000000000",
        "AWS4-HMAC-SHA256 Credential=AK/20260101/us-east-1/states/aws4_request, SignedHeaders=Host, Signature=0000000000000000000000000000000000000000000000000000000000000000",
    ];
    for header in cases {
        let error = sigv4::parse_authorization(header).expect_err(header);
        assert_eq!(
            error.aws_name(),
            "IncompleteSignatureException",
            "{header}: {error}"
        );
    }
}

#[tokio::test]
async fn every_served_operation_round_trips_through_the_router() {
    let h = harness(true);
    let role = "arn:aws:iam::111111111111:role/r";
    let create = json!({"name": "hello", "definition": PASS_DEFINITION, "roleArn": role});
    let created = answer(&h, "CreateStateMachine", create).await;
    let machine_arn = created["stateMachineArn"].as_str().expect("arn").to_owned();
    assert_eq!(
        machine_arn,
        "arn:aws:states:us-east-1:111111111111:stateMachine:hello"
    );
    assert_eq!(created["creationDate"], json!(1.5));
    let by_machine = json!({"stateMachineArn": machine_arn});

    let described = answer(&h, "DescribeStateMachine", by_machine.clone()).await;
    assert_eq!(described["definition"], PASS_DEFINITION);
    assert_eq!(described["status"], "ACTIVE");
    assert_eq!(described["type"], "STANDARD");

    let listed = answer(&h, "ListStateMachines", json!({})).await;
    assert_eq!(listed["stateMachines"][0]["name"], "hello");
    assert!(
        listed.get("nextToken").is_none(),
        "no nextToken on the last page"
    );

    let started = answer(
        &h,
        "StartExecution",
        json!({"stateMachineArn": machine_arn, "name": "run-1", "input": "{\"x\":1}"}),
    )
    .await;
    let execution_arn = started["executionArn"].as_str().expect("arn").to_owned();
    let by_execution = json!({"executionArn": execution_arn});
    assert_eq!(started["startDate"], json!(2.0));

    let described = answer(&h, "DescribeExecution", by_execution.clone()).await;
    assert_eq!(described["status"], "RUNNING");
    assert_eq!(described["input"], "{\"x\":1}");
    assert_eq!(described["inputDetails"]["included"], true);
    assert!(described.get("stopDate").is_none());

    let for_execution = answer(&h, "DescribeStateMachineForExecution", by_execution.clone()).await;
    assert_eq!(for_execution["stateMachineArn"], machine_arn.as_str());

    let listed = answer(
        &h,
        "ListExecutions",
        json!({"stateMachineArn": machine_arn, "maxResults": 10}),
    )
    .await;
    assert_eq!(listed["executions"][0]["name"], "run-1");
    assert_eq!(listed["nextToken"], "page-2");

    let stopped = answer(
        &h,
        "StopExecution",
        json!({"executionArn": execution_arn, "error": "Oops", "cause": "test"}),
    )
    .await;
    assert_eq!(stopped["stopDate"], json!(3.25));
    let described = answer(&h, "DescribeExecution", by_execution.clone()).await;
    assert_eq!(described["status"], "ABORTED");
    assert_eq!(described["error"], "Oops");

    let history = answer(&h, "GetExecutionHistory", by_execution.clone()).await;
    assert_eq!(history["events"][0]["type"], "ExecutionStarted");

    let update = call(
        &h,
        "UpdateStateMachine",
        json!({"stateMachineArn": machine_arn, "definition": PASS_DEFINITION}),
    )
    .await;
    assert_error(&update, 400, "UnsupportedOperation");
    assert!(update.1["message"]
        .as_str()
        .is_some_and(|m| m.contains("UpdateStateMachine")));

    let deleted = call(&h, "DeleteStateMachine", by_machine.clone()).await;
    assert_eq!(deleted, (StatusCode::OK, json!({})));
    let gone = call(&h, "DescribeStateMachine", by_machine.clone()).await;
    assert_error(&gone, 400, "StateMachineDoesNotExist");
    assert_eq!(h.state.metrics.requests("StartExecution", "ok"), 1);
    assert_eq!(
        h.state
            .metrics
            .requests("DescribeStateMachine", "StateMachineDoesNotExist"),
        1
    );
}

#[tokio::test]
async fn validate_definition_reports_ok_or_every_diagnostic() {
    let h = harness(true);
    let ok = call(
        &h,
        "ValidateStateMachineDefinition",
        json!({"definition": PASS_DEFINITION}),
    )
    .await;
    assert_eq!(
        ok.1,
        json!({"result": "OK", "diagnostics": [], "truncated": false})
    );
    let bad = r#"{"StartAt":"Nowhere","States":{"A":{"Type":"Pass","Next":"B"}}}"#;
    let failed = call(
        &h,
        "ValidateStateMachineDefinition",
        json!({"definition": bad}),
    )
    .await;
    assert_eq!(failed.1["result"], "FAIL");
    let diagnostics = failed.1["diagnostics"].as_array().expect("array");
    assert!(diagnostics.len() >= 2, "{diagnostics:?}");
    assert!(diagnostics.iter().all(|d| d["severity"] == "ERROR"));
    assert!(
        diagnostics.iter().any(|d| d["location"] == "/StartAt"),
        "{diagnostics:?}"
    );
    assert!(diagnostics
        .iter()
        .any(|d| d["code"] == "MISSING_TRANSITION_TARGET"));
    let truncated = call(
        &h,
        "ValidateStateMachineDefinition",
        json!({"definition": bad, "maxResults": 1}),
    )
    .await;
    assert_eq!(truncated.1["diagnostics"].as_array().map(Vec::len), Some(1));
    assert_eq!(truncated.1["truncated"], true);
    let not_json = call(
        &h,
        "ValidateStateMachineDefinition",
        json!({"definition": "{"}),
    )
    .await;
    assert_eq!(
        not_json.1["diagnostics"][0]["code"],
        "INVALID_JSON_DESCRIPTION"
    );
}

#[tokio::test]
async fn protocol_errors_have_aws_shapes() {
    let h = harness(true);
    assert_error(
        &call(&h, "Frobnicate", json!({})).await,
        400,
        "UnknownOperationException",
    );
    let later = call(
        &h,
        "SendTaskSuccess",
        json!({"taskToken": "t", "output": "{}"}),
    )
    .await;
    assert_error(&later, 400, "UnsupportedOperation");
    assert!(later.1["message"]
        .as_str()
        .is_some_and(|m| m.contains("SendTaskSuccess")));
    assert_error(
        &call(&h, "DescribeExecution", json!({})).await,
        400,
        "ValidationException",
    );
    assert_error(
        &call(
            &h,
            "ListExecutions",
            json!({"stateMachineArn": "a", "statusFilter": "NOPE"}),
        )
        .await,
        400,
        "ValidationException",
    );
    assert_error(
        &call(
            &h,
            "CreateStateMachine",
            json!({"name": "x", "definition": PASS_DEFINITION, "roleArn": "r", "type": "QUICK"}),
        )
        .await,
        400,
        "ValidationException",
    );
    // EXPRESS is a type: created, and described and listed with it.
    let (status, created) = call(
        &h,
        "CreateStateMachine",
        json!({"name": "x", "definition": PASS_DEFINITION, "roleArn": "r", "type": "EXPRESS"}),
    )
    .await;
    assert_eq!(status.as_u16(), 200, "{created:?}");
    let arn = created["stateMachineArn"].clone();
    let (_, described) = call(&h, "DescribeStateMachine", json!({"stateMachineArn": arn})).await;
    assert_eq!(described["type"], "EXPRESS", "{described:?}");
    let (_, listed) = call(&h, "ListStateMachines", json!({})).await;
    assert_eq!(listed["stateMachines"][0]["type"], "EXPRESS", "{listed:?}");
    assert_error(
        &call(
            &h,
            "StartSyncExecution",
            json!({"stateMachineArn": arn, "includedData": "SOME"}),
        )
        .await,
        400,
        "ValidationException",
    );
    let raw = signed(
        "AWSStepFunctions.DescribeExecution",
        b"{oops",
        KEY_A,
        SECRET_A,
        VECTOR_NOW_MS,
    );
    assert_error(&send(&h, raw).await, 400, "SerializationException");
    let mut wrong_type = signed(
        "AWSStepFunctions.ListStateMachines",
        b"{}",
        KEY_A,
        SECRET_A,
        VECTOR_NOW_MS,
    );
    // Changing a signed header breaks the signature, so re-sign with the other content type.
    wrong_type
        .headers_mut()
        .insert("content-type", HeaderValue::from_static("application/json"));
    assert_error(
        &send(&h, wrong_type).await,
        403,
        "InvalidSignatureException",
    );
    let get = Request::builder()
        .method("GET")
        .uri("/")
        .body(Body::empty())
        .expect("request");
    assert_error(&send(&h, get).await, 400, "UnknownOperationException");
    let response = router::router(h.state.clone())
        .oneshot(signed(
            "AWSStepFunctions.Nope",
            b"{}",
            KEY_A,
            SECRET_A,
            VECTOR_NOW_MS,
        ))
        .await
        .expect("infallible");
    assert_eq!(response.headers()["content-type"], CONTENT_TYPE);
    assert_eq!(
        response.headers()["x-amzn-errortype"],
        "UnknownOperationException"
    );
    assert!(response.headers().contains_key("x-amzn-requestid"));
}

#[tokio::test]
async fn content_type_must_be_aws_json_1_0() {
    let h = harness(false);
    let mut headers = HeaderMap::new();
    headers.insert("host", HeaderValue::from_static("localhost"));
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    headers.insert(
        "x-amz-target",
        HeaderValue::from_static("AWSStepFunctions.ListStateMachines"),
    );
    let params = SigningParams {
        access_key_id: "test",
        secret_access_key: "test",
        region: "us-east-1",
        service: "states",
        now_ms: VECTOR_NOW_MS,
    };
    let authorization = sigv4::sign("POST", "/", "", &mut headers, b"{}", &params).expect("signs");
    let mut request = Request::builder().method("POST").uri("/");
    for (name, value) in &headers {
        request = request.header(name, value);
    }
    let request = request
        .header("authorization", authorization)
        .body(Body::from("{}"))
        .expect("request");
    let result = send(&h, request).await;
    assert_error(&result, 400, "SerializationException");
    assert!(result.1["message"]
        .as_str()
        .is_some_and(|m| m.contains("application/json")));
}

#[tokio::test]
async fn signatures_are_checked_against_the_right_key_and_the_injected_clock() {
    let h = harness(true);
    let body = br#"{}"#;
    const LIST: &str = "AWSStepFunctions.ListStateMachines";
    let ok = signed_call(&h, "states", LIST, body, KEY_A, SECRET_A).await;
    assert_eq!(ok.0, StatusCode::OK);
    let wrong_secret = signed_call(&h, "states", LIST, body, KEY_A, SECRET_B).await;
    assert_error(&wrong_secret, 403, "InvalidSignatureException");
    let unknown = signed_call(&h, "states", LIST, body, "AKIDNOBODY", SECRET_A).await;
    assert_error(&unknown, 403, "UnrecognizedClientException");
    let unsigned = Request::builder()
        .method("POST")
        .uri("/")
        .header("x-amz-target", "AWSStepFunctions.ListStateMachines")
        .header("content-type", CONTENT_TYPE)
        .body(Body::from("{}"))
        .expect("request");
    assert_error(
        &send(&h, unsigned).await,
        403,
        "MissingAuthenticationTokenException",
    );
    // A request signed now is refused once the clock moved 15 minutes and 1 second on.
    let old = signed(
        "AWSStepFunctions.ListStateMachines",
        body,
        KEY_A,
        SECRET_A,
        VECTOR_NOW_MS,
    );
    h.clock.advance_ms(15 * 60 * 1000 + 1000);
    let expired = send(&h, old).await;
    assert_error(&expired, 403, "InvalidSignatureException");
    assert!(expired.1["message"]
        .as_str()
        .is_some_and(|m| m.starts_with("Signature expired")));
}

#[tokio::test]
async fn accounts_are_namespaces() {
    let h = harness(true);
    let body = json!({"name": "same-name", "definition": PASS_DEFINITION, "roleArn": "arn:aws:iam::1:role/r"})
        .to_string();
    const CREATE: &str = "AWSStepFunctions.CreateStateMachine";
    let a = signed_call(&h, "states", CREATE, body.as_bytes(), KEY_A, SECRET_A).await;
    let b = signed_call(&h, "states", CREATE, body.as_bytes(), KEY_B, SECRET_B).await;
    assert_eq!(
        a.1["stateMachineArn"],
        "arn:aws:states:us-east-1:111111111111:stateMachine:same-name"
    );
    assert_eq!(
        b.1["stateMachineArn"],
        "arn:aws:states:us-east-1:222222222222:stateMachine:same-name"
    );
    let list_b = signed_call(
        &h,
        "states",
        "AWSStepFunctions.ListStateMachines",
        b"{}",
        KEY_B,
        SECRET_B,
    )
    .await;
    let machines = list_b.1["stateMachines"].as_array().expect("array");
    assert_eq!(machines.len(), 1);
    assert_eq!(machines[0]["stateMachineArn"], b.1["stateMachineArn"]);
}

#[tokio::test]
async fn development_mode_accepts_any_well_formed_signature_under_one_account() {
    let h = harness(false);
    let request = signed(
        "AWSStepFunctions.CreateStateMachine",
        json!({"name": "dev", "definition": PASS_DEFINITION, "roleArn": "arn:aws:iam::1:role/r"})
            .to_string()
            .as_bytes(),
        "anything",
        "whatever",
        // Any time: development mode checks the form only.
        1_000,
    );
    let created = send(&h, request).await;
    assert_eq!(
        created.1["stateMachineArn"],
        "arn:aws:states:us-east-1:000000000000:stateMachine:dev"
    );
    let mut broken = signed(
        "AWSStepFunctions.ListStateMachines",
        b"{}",
        "k",
        "s",
        VECTOR_NOW_MS,
    );
    broken.headers_mut().insert(
        "authorization",
        HeaderValue::from_static("AWS4-HMAC-SHA256 nonsense"),
    );
    assert_error(&send(&h, broken).await, 400, "IncompleteSignatureException");
}

#[test]
fn development_mode_listens_on_loopback_only() {
    assert!(super::resolve_listen("127.0.0.1:0", true).is_ok());
    assert!(super::resolve_listen("[::1]:0", true).is_ok());
    let error = super::resolve_listen("0.0.0.0:8080", true).expect_err("not loopback");
    assert!(matches!(error, Error::DevModeNotLoopback { .. }), "{error}");
    assert!(error.to_string().contains("0.0.0.0:8080"));
    assert!(
        super::resolve_listen("0.0.0.0:8080", false).is_ok(),
        "with credentials any address"
    );
    assert!(matches!(
        super::resolve_listen("no port here", true),
        Err(Error::ListenAddress { .. })
    ));
}

#[tokio::test]
async fn serve_refuses_a_non_loopback_socket_in_development_mode() {
    let listener = match tokio::net::TcpListener::bind("0.0.0.0:0").await {
        Ok(listener) => listener,
        Err(error) => {
            println!("skip: cannot bind 0.0.0.0 here: {error}");
            return;
        }
    };
    let h = harness(false);
    let result = super::serve(h.state.clone(), listener, 4, async {}).await;
    assert!(
        matches!(result, Err(Error::DevModeNotLoopback { .. })),
        "{result:?}"
    );
}

#[tokio::test]
async fn oversized_bodies_are_refused_without_buffering() {
    use axum::body::Bytes;
    use http_body_util::channel::Channel;
    let h = harness(true);
    let limit = super::limits::REQUEST_BODY_BYTES_MAX;
    // Declared too large: refused from the header alone. The body channel never yields, so
    // reading it would hang the test.
    let (_never_sends, silent) = Channel::<Bytes, std::io::Error>::new(1);
    let declared = Request::builder()
        .method("POST")
        .uri("/")
        .header("content-length", (limit + 1).to_string())
        .body(Body::new(silent))
        .expect("request");
    assert_error(
        &send(&h, declared).await,
        413,
        "RequestEntityTooLargeException",
    );
    // Streamed without a length: cut off once it passes the limit; the sender sees the body
    // dropped long before it could send everything it wanted to.
    let (mut sender, streamed_body) = Channel::<Bytes, std::io::Error>::new(1);
    let chunk = Bytes::from(vec![b' '; 64 * 1024]);
    let chunks_wanted = 1000;
    let producer = tokio::spawn(async move {
        let mut sent = 0usize;
        for _ in 0..chunks_wanted {
            if sender.send_data(chunk.clone()).await.is_err() {
                break;
            }
            sent += 1;
        }
        sent
    });
    let streamed = Request::builder()
        .method("POST")
        .uri("/")
        .body(Body::new(streamed_body))
        .expect("request");
    assert_error(
        &send(&h, streamed).await,
        413,
        "RequestEntityTooLargeException",
    );
    let sent = producer.await.expect("producer ends");
    assert!(
        sent <= limit / (64 * 1024) + 2,
        "read {sent} chunks past a {limit}-byte limit"
    );
    // Exactly at the limit: read, then judged on its signature.
    let at_limit = vec![b' '; limit];
    let request = signed(
        "AWSStepFunctions.ListStateMachines",
        &at_limit,
        KEY_A,
        SECRET_A,
        VECTOR_NOW_MS,
    );
    assert_eq!(send(&h, request).await.0, StatusCode::OK);
}

// With credentials, metrics are served by the metrics listener's router only.
#[tokio::test]
async fn metrics_expose_server_and_engine_counters() {
    let h = harness(true);
    let _ = call(&h, "ListStateMachines", json!({})).await;
    let request = Request::builder()
        .method("GET")
        .uri("/metrics")
        .body(Body::empty())
        .expect("request");
    let response = router::metrics_router(h.state.clone())
        .oneshot(request)
        .await
        .expect("infallible");
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body");
    let body = Value::String(String::from_utf8(bytes.to_vec()).expect("UTF-8"));
    assert_eq!(status, StatusCode::OK);
    let text = body.as_str().expect("text");
    assert!(
        text.contains(
            "statelog_http_requests_total{operation=\"ListStateMachines\",outcome=\"ok\"} 1"
        ),
        "{text}"
    );
    assert!(text.contains("statelog_fake_total 7"), "{text}");
}

fn request_body_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..512),
        // JSON-ish text with the members operations read.
        proptest::collection::vec(
            prop_oneof![
                Just(b"{".to_vec()),
                Just(b"}".to_vec()),
                Just(b"[".to_vec()),
                Just(b"]".to_vec()),
                Just(b",".to_vec()),
                Just(b":".to_vec()),
                Just(b"\"stateMachineArn\"".to_vec()),
                Just(b"\"executionArn\"".to_vec()),
                Just(b"\"name\"".to_vec()),
                Just(b"\"definition\"".to_vec()),
                Just(b"\"maxResults\"".to_vec()),
                Just(b"\"input\"".to_vec()),
                Just(b"\"roleArn\"".to_vec()),
                Just(b"\"arn:aws:states:us-east-1:111111111111:stateMachine:x\"".to_vec()),
                Just(b"-1".to_vec()),
                Just(b"1e400".to_vec()),
                Just(b"null".to_vec()),
                Just(b"true".to_vec()),
                Just(b"\"\\ud800\"".to_vec()),
                Just(vec![0xff, 0xfe]),
            ],
            0..24,
        )
        .prop_map(|parts| parts.concat()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Any bytes, for any operation, signed or not: an AWS-shaped answer, never a 5xx.
    #[test]
    fn any_bytes_in_an_aws_shaped_answer_out(
        body in request_body_strategy(),
        operation_index in 0usize..Operation::ALL.len() + 1,
        sign_it in any::<bool>(),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        runtime.block_on(async {
            let h = harness(true);
            let target = Operation::ALL
                .get(operation_index)
                .map_or("AWSStepFunctions.NoSuchThing".to_owned(), |op| format!("AWSStepFunctions.{}", op.name()));
            let request = if sign_it {
                signed(&target, &body, KEY_A, SECRET_A, VECTOR_NOW_MS)
            } else {
                Request::builder()
                    .method("POST")
                    .uri("/")
                    .header("x-amz-target", target.as_str())
                    .body(Body::from(body.clone()))
                    .expect("request")
            };
            let (status, value) = send(&h, request).await;
            prop_assert!(!status.is_server_error(), "5xx for client input: {status} {value:?}");
            if !status.is_success() {
                prop_assert!(value["__type"].as_str().is_some_and(|t| !t.is_empty()), "{value:?}");
                prop_assert!(value["message"].is_string(), "{value:?}");
            }
            Ok(())
        })?;
    }
}

#[tokio::test]
async fn get_activity_task_answers_empty_when_nothing_came_and_bounds_long_polls() {
    let h = harness(true);
    let empty = call(
        &h,
        "GetActivityTask",
        json!({"activityArn": "arn:aws:states:us-east-1:111111111111:activity:idle"}),
    )
    .await;
    assert_eq!(empty.0, StatusCode::OK, "{:?}", empty.1);
    assert_eq!(empty.1, json!({}));
    let busy_arn = "arn:aws:states:us-east-1:111111111111:activity:busy";
    let task = call(&h, "GetActivityTask", json!({"activityArn": busy_arn})).await;
    assert_eq!(task.1, json!({"taskToken": "tok", "input": "{}"}));

    // With every long-poll permit taken, one more poll is throttled, and only polls are.
    let held = h
        .state
        .long_polls
        .server
        .clone()
        .try_acquire_many_owned(
            u32::try_from(super::limits::LONG_POLLS_CONCURRENT_MAX).expect("fits"),
        )
        .expect("all permits free");
    assert_error(
        &call(&h, "GetActivityTask", json!({"activityArn": busy_arn})).await,
        400,
        "ThrottlingException",
    );
    assert_error(
        &call(
            &h,
            "DescribeExecution",
            json!({"executionArn": "arn:aws:states:us-east-1:111111111111:execution:m:none"}),
        )
        .await,
        400,
        "ExecutionDoesNotExist",
    );
    drop(held);
    let task = call(&h, "GetActivityTask", json!({"activityArn": busy_arn})).await;
    assert_eq!(task.0, StatusCode::OK, "{:?}", task.1);
    // Each poll gave its permit back.
    assert_eq!(
        h.state.long_polls.server.available_permits(),
        super::limits::LONG_POLLS_CONCURRENT_MAX
    );

    assert_error(
        &call(&h, "GetActivityTask", json!({"workerName": "w"})).await,
        400,
        "ValidationException",
    );
}

/// A Step Functions task token as an SWF worker sends it: `.`-separated fields, as the
/// engine's tokens are (an SWF task token has no `.`).
const SF_SWF_TOKEN: &str = "secret.execution.5";

/// An SWF call signed for the `swf` service as account 111111111111.
async fn swf_call(h: &Harness, operation: &str, body: Value) -> (StatusCode, Value) {
    let target = format!("SimpleWorkflowService.{operation}");
    let body = body.to_string();
    signed_call(h, "swf", &target, body.as_bytes(), KEY_A, SECRET_A).await
}

#[tokio::test]
async fn swf_poll_answers_an_activity_task_or_an_empty_token() {
    let h = harness(true);
    let task = swf_call(
        &h,
        "PollForActivityTask",
        json!({"domain": "111111111111", "taskList": {"name": "busy"}, "identity": "w1"}),
    )
    .await;
    assert_eq!(task.0, StatusCode::OK, "{:?}", task.1);
    assert_eq!(
        task.1,
        json!({
            "taskToken": "tok-for-w1",
            "activityId": "3",
            "startedEventId": 5,
            "workflowExecution": {
                "workflowId": "e1",
                "runId": "arn:aws:states:us-east-1:111111111111:execution:m:e1",
            },
            "activityType": {"name": "resize", "version": "1"},
            "input": "{\"n\": 1}",
        })
    );
    let empty = swf_call(
        &h,
        "PollForActivityTask",
        json!({"domain": "111111111111", "taskList": {"name": "idle"}}),
    )
    .await;
    assert_eq!(empty.0, StatusCode::OK, "{:?}", empty.1);
    assert_eq!(empty.1["taskToken"], "");
    let count = swf_call(
        &h,
        "CountPendingActivityTasks",
        json!({"domain": "111111111111", "taskList": {"name": "busy"}}),
    )
    .await;
    assert_eq!(count.1, json!({"count": 2, "truncated": false}));
    assert_eq!(h.state.metrics.requests("PollForActivityTask", "ok"), 2);
}

#[tokio::test]
async fn swf_errors_are_swf_shaped_and_name_what_is_wrong() {
    let h = harness(true);
    // The domain is the caller's account; another account's id is unknown.
    let foreign = swf_call(
        &h,
        "PollForActivityTask",
        json!({"domain": "222222222222", "taskList": {"name": "busy"}}),
    )
    .await;
    // Another domain than the account's is the SWF service's (here: no such domain).
    assert_error(&foreign, 400, "UnknownResourceFault");
    assert_error(
        &swf_call(&h, "PollForActivityTask", json!({"domain": "111111111111"})).await,
        400,
        "ValidationException",
    );
    assert_error(
        &swf_call(
            &h,
            "PollForActivityTask",
            json!({"domain": "111111111111", "taskList": {"name": ""}}),
        )
        .await,
        400,
        "ValidationException",
    );
    // A bad token is SWF's UnknownResourceFault, not Step Functions' InvalidToken, whether
    // it is shaped like a Step Functions token or not.
    assert_error(
        &swf_call(
            &h,
            "RecordActivityTaskHeartbeat",
            json!({"taskToken": "forged.execution.1"}),
        )
        .await,
        400,
        "UnknownResourceFault",
    );
    assert_error(
        &swf_call(
            &h,
            "RecordActivityTaskHeartbeat",
            json!({"taskToken": "forged"}),
        )
        .await,
        400,
        "UnknownResourceFault",
    );
    let beat = swf_call(
        &h,
        "RecordActivityTaskHeartbeat",
        json!({"taskToken": SF_SWF_TOKEN}),
    )
    .await;
    assert_eq!(beat.1, json!({"cancelRequested": false}));
    // An SWF fault is answered in SWF's namespace.
    assert_eq!(
        foreign.1["__type"],
        "com.amazonaws.swf.base.model#UnknownResourceFault"
    );
    // A name that is no SWF operation is named as unknown.
    let other = swf_call(&h, "Frobnicate", json!({})).await;
    assert_error(&other, 400, "UnknownOperationException");
    assert!(other.1["message"]
        .as_str()
        .is_some_and(|m| m.contains("SimpleWorkflowService.Frobnicate")));
    // SWF requests are signed for `swf`, Step Functions requests for `states`.
    let count = json!({"domain": "111111111111", "taskList": {"name": "busy"}}).to_string();
    const COUNT: &str = "SimpleWorkflowService.CountPendingActivityTasks";
    let wrong_scope = signed_call(&h, "states", COUNT, count.as_bytes(), KEY_A, SECRET_A).await;
    assert_error(&wrong_scope, 400, "IncompleteSignatureException");
    let wrong_scope = signed_call(
        &h,
        "swf",
        "AWSStepFunctions.ListStateMachines",
        b"{}",
        KEY_A,
        SECRET_A,
    )
    .await;
    assert_error(&wrong_scope, 400, "IncompleteSignatureException");
    // A wrong secret is still a signature mismatch.
    let forged = signed_call(&h, "swf", COUNT, b"{}", KEY_A, "not-the-secret").await;
    assert_error(&forged, 403, "InvalidSignatureException");
}

#[tokio::test]
async fn swf_polls_share_the_long_poll_bound() {
    let h = harness(true);
    let held = h
        .state
        .long_polls
        .server
        .clone()
        .try_acquire_many_owned(
            u32::try_from(super::limits::LONG_POLLS_CONCURRENT_MAX).expect("fits"),
        )
        .expect("all permits free");
    let poll = json!({"domain": "111111111111", "taskList": {"name": "busy"}});
    assert_error(
        &swf_call(&h, "PollForActivityTask", poll.clone()).await,
        400,
        "ThrottlingException",
    );
    drop(held);
    let task = swf_call(&h, "PollForActivityTask", poll).await;
    assert_eq!(task.0, StatusCode::OK, "{:?}", task.1);
    assert_eq!(
        h.state.long_polls.server.available_permits(),
        super::limits::LONG_POLLS_CONCURRENT_MAX
    );
}

/// Account 111111111111 fills its share of long polls with polls that really wait; its next
/// poll (Step Functions and SWF) is refused as AWS refuses it, while account 222222222222 is
/// still served. Bounded by a timeout: before per-account shares, the next poll just waited.
#[tokio::test]
async fn one_account_holding_its_share_of_long_polls_does_not_starve_another() {
    use super::limits::LONG_POLLS_PER_ACCOUNT_MAX;
    use std::sync::atomic::Ordering;
    use std::time::Duration;
    let h = harness(true);
    let held_arn = "arn:aws:states:us-east-1:111111111111:activity:held";
    let body = json!({"activityArn": held_arn}).to_string();
    let now_ms = h.clock.now_ms_for_tests();
    let mut polls = Vec::new();
    for _ in 0..LONG_POLLS_PER_ACCOUNT_MAX {
        let request = signed(
            "AWSStepFunctions.GetActivityTask",
            body.as_bytes(),
            KEY_A,
            SECRET_A,
            now_ms,
        );
        let app = router::router(h.state.clone());
        polls.push(tokio::spawn(async move { app.oneshot(request).await }));
    }
    let bound = Duration::from_secs(5);
    tokio::time::timeout(bound, async {
        while h.state.backend.held_polls.load(Ordering::SeqCst) < LONG_POLLS_PER_ACCOUNT_MAX {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("account A's polls are all waiting");

    let refused = tokio::time::timeout(
        bound,
        call(&h, "GetActivityTask", json!({"activityArn": held_arn})),
    )
    .await
    .expect("a poll over the account's share is answered at once");
    assert_error(&refused, 400, "ActivityWorkerLimitExceeded");
    let poll = json!({"domain": "111111111111", "taskList": {"name": "busy"}});
    let refused = tokio::time::timeout(bound, swf_call(&h, "PollForActivityTask", poll))
        .await
        .expect("an SWF poll over the account's share is answered at once");
    assert_error(&refused, 400, "LimitExceededFault");

    // Account B polls and is served.
    let busy_b = json!({"activityArn": "arn:aws:states:us-east-1:222222222222:activity:busy"});
    let body_b = busy_b.to_string();
    let served = tokio::time::timeout(
        bound,
        signed_call(
            &h,
            "states",
            "AWSStepFunctions.GetActivityTask",
            body_b.as_bytes(),
            KEY_B,
            SECRET_B,
        ),
    )
    .await
    .expect("account B's poll is answered");
    assert_eq!(served.0, StatusCode::OK, "{:?}", served.1);
    assert_eq!(served.1, json!({"taskToken": "tok", "input": "{}"}));
    let swf_b = json!({"domain": "222222222222", "taskList": {"name": "busy"}}).to_string();
    let served = signed_call(
        &h,
        "swf",
        "SimpleWorkflowService.PollForActivityTask",
        swf_b.as_bytes(),
        KEY_B,
        SECRET_B,
    )
    .await;
    assert_eq!(served.0, StatusCode::OK, "{:?}", served.1);

    h.state.backend.release_held_polls();
    for poll in polls {
        let response = tokio::time::timeout(bound, poll)
            .await
            .expect("released")
            .expect("joins")
            .expect("infallible");
        assert_eq!(response.status(), StatusCode::OK);
    }
    assert_eq!(h.state.long_polls.held_by("111111111111"), 0);
    assert_eq!(
        h.state.long_polls.server.available_permits(),
        super::limits::LONG_POLLS_CONCURRENT_MAX
    );
}

#[test]
fn cached_signing_keys_equal_derived_ones_and_stay_bounded() {
    use super::limits::SIGNING_KEYS_CACHED_MAX;
    let cache = sigv4::SigningKeyCache::default();
    assert!(cache.is_empty());
    let derived = sigv4::signing_key("secret", "20261129", "us-east-1", "states");
    assert_eq!(
        cache.get("secret", "20261129", "us-east-1", "states"),
        derived
    );
    assert_eq!(
        cache.get("secret", "20261129", "us-east-1", "states"),
        derived
    );
    assert_eq!(cache.len(), 1);
    // Another service or secret is another key.
    assert_ne!(cache.get("secret", "20261129", "us-east-1", "swf"), derived);
    assert_ne!(
        cache.get("other", "20261129", "us-east-1", "states"),
        derived
    );
    assert_eq!(cache.len(), 3);
    for n in 0..SIGNING_KEYS_CACHED_MAX {
        cache.get(&n.to_string(), "20261129", "us-east-1", "states");
    }
    assert!(cache.len() <= SIGNING_KEYS_CACHED_MAX);
}
