//! router: one HTTP request in, one AWS JSON 1.0 answer out. Reads the body within its limit,
//! authenticates it (SigV4), resolves the operation, decodes its input, calls the [`Backend`]
//! and renders the result or the error.
//!
//! Invariants: the body is never buffered past [`REQUEST_BODY_BYTES_MAX`]; nothing is decoded
//! or dispatched before the signature is checked; every error is answered with `__type` and
//! `message`; client input never causes a 5xx. Must not: hold engine logic (validation of
//! definitions, names and inputs beyond the service model's member constraints is the engine's).

use std::sync::Arc;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use axum::Router;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde_json::{json, Map, Value};

use super::backend::{Backend, CallName, Caller, Placement};
use super::connection::BodyTimeout;
use super::credentials::DEV_ACCOUNT_ID;
use super::error::Error;
use super::limits::{REQUEST_BODY_BYTES_MAX, VALIDATE_DIAGNOSTICS_DEFAULT};
use super::protocol::{
    decode, operation_of_target, ActivityArnInput, CreateActivityInput, CreateStateMachineInput,
    ExecutionArnInput, GetActivityTaskInput, GetExecutionHistoryInput, ListExecutionsInput,
    ListStateMachinesInput, Operation, RedriveExecutionInput, SendTaskFailureInput,
    SendTaskSuccessInput, StartExecutionInput, StartSyncExecutionInput, StateMachineArnInput,
    StopExecutionInput, TaskTokenInput, Timestamp, UpdateStateMachineInput,
    ValidateDefinitionInput, CONTENT_TYPE,
};
use super::protocol::{
    ListTagsForResourceInput, TagResourceInput, TestStateInput, UntagResourceInput,
};
use super::sigv4::{self, Check, RequestParts, SignatureReason};
use super::swf;
use super::ServerState;
use crate::clock::Clock;
use crate::engine::test_state::{test_state_detached, Detached};
use crate::engine::validate::{self, Severity};
use crate::engine::{ExpressOutcome, MachineType};

/// The scope service of Step Functions signatures.
const SIGNING_SERVICE: &str = "states";

/// Builds the API router: `POST /` for the API, `GET /health` for a supervisor, `GET /console/`
/// for people; in development mode (no credentials) also `GET /metrics` for Prometheus. With credentials `/metrics` is only
/// on [`metrics_router`]. Every other method or path is answered with an AWS-shaped error.
pub fn router<B: Backend>(state: Arc<ServerState<B>>) -> Router {
    router_with_console(state, true)
}

/// [`router`], with the web console at `/console/` when `console` is on; off, its paths answer
/// 404 naming `--no-console` ([`super::console`]).
pub fn router_with_console<B: Backend>(state: Arc<ServerState<B>>, console: bool) -> Router {
    let console = console.then(|| {
        Arc::new(super::console::Console::new(
            state.backend.region(),
            state.credentials.is_none(),
        ))
    });
    let answer_console = move |request: Request| {
        let console = console.clone();
        async move {
            let path = request.uri().path();
            match &console {
                Some(console) => console.answer(request.method(), path, request.headers()),
                None => super::console::turned_off(path),
            }
        }
    };
    let routes = Router::new()
        .route(
            "/health",
            get(super::health::health::<B>).fallback(api::<B>),
        )
        .route(super::console::MOUNT, any(answer_console.clone()))
        .route("/console/", any(answer_console.clone()))
        .route("/console/{*rest}", any(answer_console));
    let routes = if state.credentials.is_none() {
        routes.route("/metrics", get(metrics::<B>).fallback(api::<B>))
    } else {
        routes
    };
    routes.fallback(api::<B>).with_state(state)
}

/// Builds the metrics listener's router: `GET /metrics` and, for anything else, an AWS-shaped
/// error. It never serves the API.
pub fn metrics_router<B: Backend>(state: Arc<ServerState<B>>) -> Router {
    Router::new()
        .route("/metrics", get(metrics::<B>).fallback(not_metrics::<B>))
        .route(
            "/health",
            get(super::health::health::<B>).fallback(not_metrics::<B>),
        )
        .fallback(not_metrics::<B>)
        .with_state(state)
}

async fn metrics<B: Backend>(State(state): State<Arc<ServerState<B>>>) -> Response {
    let text = state.metrics.render(&state.backend.metrics());
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

/// The metrics listener's answer to anything but `GET /metrics`: AWS-shaped like every error.
async fn not_metrics<B: Backend>(
    State(state): State<Arc<ServerState<B>>>,
    request: Request,
) -> Response {
    let error = Error::NotMetrics {
        method: request.method().to_string(),
        path: request.uri().path().to_owned(),
    };
    let body = json!({"__type": error.aws_name(), "message": error.to_string()});
    json_response(
        error.status(),
        &body,
        &new_request_id(state.clock.as_ref()),
        Some(error.aws_name()),
    )
}

async fn api<B: Backend>(State(state): State<Arc<ServerState<B>>>, request: Request) -> Response {
    let started = Instant::now();
    let request_id = new_request_id(state.clock.as_ref());
    let (operation, result) = handle(&state, request).await;
    let operation_name = operation.unwrap_or("unknown");
    let response = match result {
        Ok(value) => {
            tracing::debug!(operation = operation_name, %request_id, "ok");
            json_response(StatusCode::OK, &value, &request_id, None)
        }
        Err(error) => {
            let status = error.status();
            if let Error::Internal { detail } = &error {
                // The detail stays here: the client gets a generic sentence and the request id.
                tracing::error!(operation = operation_name, %request_id, %detail, "internal failure");
            } else if status.is_server_error() {
                tracing::error!(operation = operation_name, %request_id, %error, "server fault");
            } else {
                tracing::info!(operation = operation_name, %request_id, error_type = error.aws_name(), %error, "refused");
            }
            let mut body = json!({"__type": error.wire_type(), "message": error.to_string()});
            if let Some(resource_name) = error.resource_name() {
                body["resourceName"] = json!(resource_name);
            }
            json_response(status, &body, &request_id, Some(error.aws_name()))
        }
    };
    let outcome = if response.status().is_success() {
        "ok"
    } else {
        response
            .headers()
            .get("x-amzn-errortype")
            .and_then(|v| v.to_str().ok())
            .map_or("error", intern_outcome)
    };
    let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    state
        .metrics
        .record_request(operation_name, outcome, micros);
    response
}

/// Maps an error name to a `'static` label (names come from a fixed set; anything else is
/// `error`), keeping the metric label set bounded.
pub(crate) fn intern_outcome(name: &str) -> &'static str {
    const NAMES: &[&str] = &[
        "UnknownOperationException",
        "UnsupportedOperation",
        "SerializationException",
        "ValidationException",
        "RequestEntityTooLargeException",
        "RequestTimeoutException",
        "MissingAuthenticationTokenException",
        "IncompleteSignatureException",
        "UnrecognizedClientException",
        "InvalidSignatureException",
        "ThrottlingException",
        "InternalFailure",
        "ExecutionDoesNotExist",
        "ExecutionAlreadyExists",
        "ExecutionLimitExceeded",
        "StateMachineDoesNotExist",
        "StateMachineAlreadyExists",
        "StateMachineDeleting",
        "InvalidDefinition",
        "InvalidExecutionInput",
        "InvalidArn",
        "InvalidName",
        "InvalidToken",
        "TaskTimedOut",
        "TaskDoesNotExist",
        "ActivityDoesNotExist",
        "ExecutionNotRedrivable",
        "InvalidOutput",
        "ActivityWorkerLimitExceeded",
        "ActivityLimitExceeded",
        "ActivityAlreadyExists",
        "UnknownResourceFault",
        "LimitExceededFault",
        "DomainAlreadyExistsFault",
        "TypeAlreadyExistsFault",
        "DomainDeprecatedFault",
        "TypeDeprecatedFault",
        "TypeNotDeprecatedFault",
        "WorkflowExecutionAlreadyStartedFault",
        "DefaultUndefinedFault",
        "OperationNotPermittedFault",
        "TooManyTagsFault",
        "MissingRequiredParameter",
        "TooManyTags",
        "ResourceNotFound",
        "ServiceUnavailable",
    ];
    NAMES
        .iter()
        .find(|n| **n == name)
        .copied()
        .unwrap_or("error")
}

fn json_response(
    status: StatusCode,
    value: &Value,
    request_id: &str,
    error_type: Option<&'static str>,
) -> Response {
    // Serializing a `Value` cannot fail.
    let body = serde_json::to_vec(value).expect("a serde_json::Value always serializes");
    let mut response = (status, Body::from(body)).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    if let Ok(id) = HeaderValue::from_str(request_id) {
        headers.insert("x-amzn-requestid", id);
    }
    if let Some(error_type) = error_type {
        headers.insert("x-amzn-errortype", HeaderValue::from_static(error_type));
    }
    response
}

/// A request id: it only correlates logs, so it is unique rather than secret. The base is the
/// server's clock at its first request (in ms; distinct across restarts) and a counter follows
/// it, so no request pays a system call and nothing depends on the OS random generator.
fn new_request_id(clock: &dyn Clock) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::OnceLock;
    static BASE: OnceLock<[u8; 8]> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let base = BASE.get_or_init(|| clock.now_ms().to_be_bytes());
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(base);
    bytes[8..].copy_from_slice(&COUNTER.fetch_add(1, Ordering::Relaxed).to_be_bytes());
    hyphenated(&bytes)
}

/// 16 bytes in the 8-4-4-4-12 hex form of a UUID.
pub(crate) fn hyphenated(bytes: &[u8; 16]) -> String {
    let hex = sigv4::hex(bytes);
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

async fn read_body(body: Body, content_length: Option<u64>) -> Result<Bytes, Error> {
    if content_length.is_some_and(|n| n > REQUEST_BODY_BYTES_MAX as u64) {
        return Err(Error::BodyTooLarge {
            limit_bytes: REQUEST_BODY_BYTES_MAX,
        });
    }
    match Limited::new(body, REQUEST_BODY_BYTES_MAX).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.is::<LengthLimitError>() => Err(Error::BodyTooLarge {
            limit_bytes: REQUEST_BODY_BYTES_MAX,
        }),
        Err(error) => match body_timeout_of(&*error) {
            Some(timeout) => Err(Error::RequestTimeout {
                timeout_ms: timeout.timeout_ms,
            }),
            None => Err(Error::BodyRead { source: error }),
        },
    }
}

/// The [`BodyTimeout`] behind `error`, if the body failed by passing its deadline.
fn body_timeout_of<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a BodyTimeout> {
    let mut cause = Some(error);
    while let Some(error) = cause {
        if let Some(timeout) = error.downcast_ref::<BodyTimeout>() {
            return Some(timeout);
        }
        cause = error.source();
    }
    None
}

async fn handle<B: Backend>(
    state: &ServerState<B>,
    request: Request,
) -> (Option<&'static str>, Result<Value, Error>) {
    let (parts, body) = request.into_parts();
    if state.credentials.is_some() && parts.uri.path() == "/metrics" {
        return (None, Err(Error::MetricsNotOnApi));
    }
    if parts.method != Method::POST || parts.uri.path() != "/" {
        return (
            None,
            Err(Error::WrongRoute {
                method: parts.method.to_string(),
                path: parts.uri.path().to_owned(),
            }),
        );
    }
    let content_length = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let body = match read_body(body, content_length).await {
        Ok(body) => body,
        Err(error) => return (None, Err(error)),
    };
    let request_parts = RequestParts {
        method: parts.method.as_str(),
        path: parts.uri.path(),
        query: parts.uri.query().unwrap_or(""),
        headers: &parts.headers,
        body: &body,
    };
    let target = parts
        .headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok());
    // SWF workers sign for the `swf` service; everything else is Step Functions (`states`).
    let swf_name = target.and_then(|t| t.strip_prefix(swf::TARGET_PREFIX));
    let signing_service = if swf_name.is_some() {
        swf::SIGNING_SERVICE
    } else {
        SIGNING_SERVICE
    };
    let caller = match authenticate(state, &request_parts, signing_service) {
        Ok(caller) => caller,
        Err(error) => return (None, Err(error)),
    };
    if let Some(name) = swf_name {
        let operation = match swf::SwfOperation::from_name(name) {
            Ok(operation) => operation,
            Err(error) => return (None, Err(error)),
        };
        if let Err(error) = check_content_type(&parts.headers) {
            return (Some(operation.name()), Err(error));
        }
        let result = answer_call(state, &caller, CallName::Swf(operation), body).await;
        return (Some(operation.name()), result);
    }
    let operation = match operation_of_target(target) {
        Ok(operation) => operation,
        Err(error) => {
            // Count a known-but-unserved operation under its own name.
            let known = target
                .and_then(|t| t.strip_prefix(super::protocol::TARGET_PREFIX))
                .and_then(Operation::from_name);
            return (known.map(Operation::name), Err(error));
        }
    };
    if let Err(error) = check_content_type(&parts.headers) {
        return (Some(operation.name()), Err(error));
    }
    let result = answer_call(state, &caller, CallName::StepFunctions(operation), body).await;
    (Some(operation.name()), result)
}

/// Answers an authenticated call where the backend places it ([`Backend::place`]): what the
/// API answers a client after its signature is checked (tests drive a backend with it).
pub async fn answer_call<B: Backend>(
    state: &ServerState<B>,
    caller: &Caller,
    call: CallName,
    body: Bytes,
) -> Result<Value, Error> {
    match state.backend.place(caller, call, &body).await {
        Placement::Here => dispatch_here(state, caller, call, &body).await,
        Placement::HereWith(body) => dispatch_here(state, caller, call, &body).await,
        Placement::Answered(answer) => answer,
    }
}

/// Decodes and runs an authenticated call on this node's backend, whatever
/// [`Backend::place`] would say: a cluster node answers a call forwarded to it with this.
pub async fn dispatch_here<B: Backend>(
    state: &ServerState<B>,
    caller: &Caller,
    call: CallName,
    body: &[u8],
) -> Result<Value, Error> {
    match call {
        CallName::StepFunctions(operation) => dispatch(state, caller, operation, body).await,
        CallName::Swf(operation) => swf::dispatch(state, caller, operation, body).await,
    }
}

/// The request must be AWS JSON 1.0.
fn check_content_type(headers: &axum::http::HeaderMap) -> Result<(), Error> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let media_type = content_type.split(';').next().unwrap_or("").trim();
    if media_type.eq_ignore_ascii_case(CONTENT_TYPE) {
        Ok(())
    } else {
        Err(Error::UnsupportedContentType {
            found: content_type.to_owned(),
        })
    }
}

fn authenticate<B: Backend>(
    state: &ServerState<B>,
    parts: &RequestParts<'_>,
    signing_service: &str,
) -> Result<Caller, Error> {
    let auth = sigv4::authorization_of(parts)?;
    if auth.service != signing_service {
        return Err(Error::IncompleteSignature {
            reason: SignatureReason::WrongService {
                expected: signing_service.to_owned(),
                found: auth.service.clone(),
            },
        });
    }
    // A signature is only good for the region it was scoped to; so in development mode too,
    // where ARNs of another region would name nothing here anyway.
    if auth.region != state.backend.region() {
        return Err(Error::WrongRegion {
            region: auth.region,
        });
    }
    let account_id = match &state.credentials {
        None => {
            sigv4::verify(parts, &auth, Check::FormOnly)?;
            DEV_ACCOUNT_ID.to_owned()
        }
        Some(credentials) => {
            let credential =
                credentials
                    .get(&auth.access_key_id)
                    .ok_or_else(|| Error::UnrecognizedClient {
                        access_key_id: auth.access_key_id.clone(),
                    })?;
            sigv4::verify_with(
                parts,
                &auth,
                Check::Secret {
                    secret_access_key: &credential.secret_access_key,
                    now_ms: state.clock.now_ms(),
                },
                Some(&state.signing_keys),
            )?;
            credential.account_id.clone()
        }
    };
    Ok(Caller {
        account_id,
        region: auth.region,
        access_key_id: auth.access_key_id,
    })
}

fn state_machine_json(info: &super::backend::StateMachineInfo) -> Value {
    let mut out = json!({
        "stateMachineArn": info.arn,
        "name": info.name,
        "status": "ACTIVE",
        "definition": info.definition,
        "roleArn": info.role_arn,
        "type": info.machine_type.aws_name(),
        "creationDate": Timestamp(info.created_ms),
        "loggingConfiguration": {"level": "OFF", "includeExecutionData": false},
        "tracingConfiguration": {"enabled": false},
    });
    insert_revision_id(&mut out, info.revision_id.as_deref());
    insert_variable_references(&mut out, info);
    if let (Value::Object(object), Some(description)) = (&mut out, &info.description) {
        object.insert("description".into(), json!(description));
    }
    out
}

/// Adds `variableReferences` when some state reads a variable (AWS leaves it out otherwise).
fn insert_variable_references(out: &mut Value, info: &super::backend::StateMachineInfo) {
    if let (Value::Object(object), false) = (out, info.variable_references.is_empty()) {
        object.insert("variableReferences".into(), json!(info.variable_references));
    }
}

/// Adds `revisionId` when the revision has one (AWS leaves it out for the creation's).
fn insert_revision_id(out: &mut Value, revision_id: Option<&str>) {
    if let (Value::Object(object), Some(id)) = (out, revision_id) {
        object.insert("revisionId".into(), Value::String(id.to_owned()));
    }
}

/// `StartSyncExecution`'s answer. `inputDetails`/`outputDetails` say whether the data is
/// included (`includedData`); a failed execution has no `output` but its details, as AWS
/// answers.
fn sync_execution_json(outcome: &ExpressOutcome, with_data: bool) -> Value {
    let mut out = Map::new();
    out.insert("executionArn".into(), json!(outcome.execution_arn));
    out.insert("stateMachineArn".into(), json!(outcome.state_machine_arn));
    out.insert("name".into(), json!(outcome.name));
    out.insert("startDate".into(), json!(Timestamp(outcome.start_ms)));
    out.insert("stopDate".into(), json!(Timestamp(outcome.stop_ms)));
    out.insert("status".into(), json!(outcome.status.aws_name()));
    insert_some(&mut out, "error", outcome.error.clone().map(Value::String));
    insert_some(&mut out, "cause", outcome.cause.clone().map(Value::String));
    if with_data {
        out.insert("input".into(), json!(outcome.input_text));
        insert_some(
            &mut out,
            "output",
            outcome.output_text.clone().map(Value::String),
        );
    }
    out.insert("inputDetails".into(), json!({"included": with_data}));
    out.insert("outputDetails".into(), json!({"included": with_data}));
    out.insert(
        "billingDetails".into(),
        json!({
            "billedMemoryUsedInMB": outcome.billed_memory_mb,
            "billedDurationInMilliseconds": outcome.billed_duration_ms,
        }),
    );
    Value::Object(out)
}

fn activity_json(info: &super::backend::ActivityInfo) -> Value {
    json!({
        "activityArn": info.arn,
        "name": info.name,
        "creationDate": Timestamp(info.created_ms),
    })
}

fn insert_some(object: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(value) = value {
        object.insert(key.to_owned(), value);
    }
}

async fn dispatch<B: Backend>(
    state: &ServerState<B>,
    caller: &Caller,
    operation: Operation,
    body: &[u8],
) -> Result<Value, Error> {
    let backend = &state.backend;
    match operation {
        Operation::CreateStateMachine => {
            let input: CreateStateMachineInput = decode(operation, body)?;
            input.validate()?;
            let created = backend.create_state_machine(caller, input).await?;
            let mut out = Map::new();
            out.insert("stateMachineArn".into(), json!(created.arn));
            out.insert("creationDate".into(), json!(Timestamp(created.created_ms)));
            insert_some(
                &mut out,
                "stateMachineVersionArn",
                created.version_arn.map(Value::String),
            );
            Ok(Value::Object(out))
        }
        Operation::DescribeStateMachine => {
            let input: StateMachineArnInput = decode(operation, body)?;
            input.validate()?;
            let info = backend
                .describe_state_machine(caller, &input.state_machine_arn)
                .await?;
            Ok(state_machine_json(&info))
        }
        Operation::ListStateMachines => {
            let input: ListStateMachinesInput = decode(operation, body)?;
            let max_results = input.validate()?;
            let page = backend
                .list_state_machines(caller, max_results, input.next_token)
                .await?;
            let items: Vec<Value> = page
                .items
                .iter()
                .map(|m| {
                    json!({
                        "stateMachineArn": m.arn,
                        "name": m.name,
                        "type": m.machine_type.aws_name(),
                        "creationDate": Timestamp(m.created_ms),
                    })
                })
                .collect();
            let mut out = Map::new();
            out.insert("stateMachines".into(), Value::Array(items));
            insert_some(&mut out, "nextToken", page.next_token.map(Value::String));
            Ok(Value::Object(out))
        }
        Operation::UpdateStateMachine => {
            let input: UpdateStateMachineInput = decode(operation, body)?;
            input.validate()?;
            let updated = backend.update_state_machine(caller, input).await?;
            let mut out = json!({"updateDate": Timestamp(updated.updated_ms)});
            insert_revision_id(&mut out, updated.revision_id.as_deref());
            if let (Value::Object(object), Some(version)) = (&mut out, updated.version_arn) {
                object.insert("stateMachineVersionArn".into(), Value::String(version));
            }
            Ok(out)
        }
        Operation::DeleteStateMachine => {
            let input: StateMachineArnInput = decode(operation, body)?;
            input.validate()?;
            backend
                .delete_state_machine(caller, &input.state_machine_arn)
                .await?;
            Ok(json!({}))
        }
        Operation::ValidateStateMachineDefinition => {
            let input: ValidateDefinitionInput = decode(operation, body)?;
            let max_results = input.validate()?;
            let machine_type = input.machine_type()?;
            Ok(validate_definition(&input, machine_type, max_results))
        }
        // Answered here on any node, with no engine: a test writes nothing and reads nothing
        // the account holds, and `serve` registers no handler a Task could call.
        Operation::TestState => {
            let input: TestStateInput = decode(operation, body)?;
            let level = input.validate()?;
            let detached = Detached {
                clock: state.clock.clone(),
                random: Arc::new(crate::engine::OsRandom),
                region: caller.region.clone(),
                account: caller.account_id.clone(),
            };
            let answer = test_state_detached(&input.into_request(), &detached)
                .map_err(super::engine_backend::engine_error)?;
            Ok(answer.to_aws_json(level))
        }
        Operation::StartExecution => {
            let input: StartExecutionInput = decode(operation, body)?;
            input.validate()?;
            let started = backend.start_execution(caller, input).await?;
            state.metrics.record_execution_started();
            Ok(json!({
                "executionArn": started.arn,
                "startDate": Timestamp(started.start_ms),
            }))
        }
        Operation::StartSyncExecution => {
            let input: StartSyncExecutionInput = decode(operation, body)?;
            let with_data = input.validate()?;
            let outcome = backend.start_sync_execution(caller, input).await?;
            Ok(sync_execution_json(&outcome, with_data))
        }
        Operation::DescribeExecution => {
            let input: ExecutionArnInput = decode(operation, body)?;
            input.validate()?;
            let info = backend
                .describe_execution(caller, &input.execution_arn)
                .await?;
            let mut out = Map::new();
            out.insert("executionArn".into(), json!(info.arn));
            out.insert("stateMachineArn".into(), json!(info.state_machine_arn));
            insert_some(
                &mut out,
                "stateMachineVersionArn",
                info.version_arn.map(Value::String),
            );
            insert_some(
                &mut out,
                "stateMachineAliasArn",
                info.alias_arn.map(Value::String),
            );
            insert_some(&mut out, "mapRunArn", info.map_run_arn.map(Value::String));
            out.insert("name".into(), json!(info.name));
            out.insert("status".into(), json!(info.status));
            out.insert("startDate".into(), json!(Timestamp(info.start_ms)));
            insert_some(
                &mut out,
                "stopDate",
                info.stop_ms.map(|ms| json!(Timestamp(ms))),
            );
            if let Some(input_text) = &info.input {
                out.insert("input".into(), json!(input_text));
                out.insert("inputDetails".into(), json!({"included": true}));
            }
            if let Some(output) = &info.output {
                out.insert("output".into(), json!(output));
                out.insert("outputDetails".into(), json!({"included": true}));
            }
            insert_some(&mut out, "error", info.error.map(Value::String));
            insert_some(&mut out, "cause", info.cause.map(Value::String));
            out.insert("redriveCount".into(), json!(info.redrive_count));
            insert_some(
                &mut out,
                "redriveDate",
                info.redrive_ms.map(|ms| json!(Timestamp(ms))),
            );
            insert_some(
                &mut out,
                "redriveStatus",
                info.redrive_status.map(|s| json!(s)),
            );
            insert_some(
                &mut out,
                "redriveStatusReason",
                info.redrive_status_reason.map(Value::String),
            );
            Ok(Value::Object(out))
        }
        Operation::DescribeStateMachineForExecution => {
            let input: ExecutionArnInput = decode(operation, body)?;
            input.validate()?;
            let info = backend
                .describe_state_machine_for_execution(caller, &input.execution_arn)
                .await?;
            let mut out = json!({
                "stateMachineArn": info.arn,
                "name": info.name,
                "definition": info.definition,
                "roleArn": info.role_arn,
                "updateDate": Timestamp(info.updated_ms.unwrap_or(info.created_ms)),
                "loggingConfiguration": {"level": "OFF", "includeExecutionData": false},
                "tracingConfiguration": {"enabled": false},
            });
            insert_revision_id(&mut out, info.revision_id.as_deref());
            insert_variable_references(&mut out, &info);
            if let Some(map_run_arn) = &info.map_run_arn {
                out["mapRunArn"] = json!(map_run_arn);
            }
            if let Some(label) = &info.label {
                out["label"] = json!(label);
            }
            Ok(out)
        }
        Operation::ListExecutions => {
            let input: ListExecutionsInput = decode(operation, body)?;
            let max_results = input.validate()?;
            // AWS names the Map Run in each item only when the listing is of one.
            let map_run_arn = input.map_run_arn.clone();
            let page = backend.list_executions(caller, input, max_results).await?;
            let items: Vec<Value> = page
                .items
                .iter()
                .map(|e| {
                    let mut item = Map::new();
                    item.insert("executionArn".into(), json!(e.arn));
                    item.insert("stateMachineArn".into(), json!(e.state_machine_arn));
                    insert_some(
                        &mut item,
                        "stateMachineVersionArn",
                        e.version_arn.clone().map(Value::String),
                    );
                    insert_some(
                        &mut item,
                        "stateMachineAliasArn",
                        e.alias_arn.clone().map(Value::String),
                    );
                    insert_some(
                        &mut item,
                        "mapRunArn",
                        map_run_arn.clone().map(Value::String),
                    );
                    item.insert("name".into(), json!(e.name));
                    item.insert("status".into(), json!(e.status));
                    item.insert("startDate".into(), json!(Timestamp(e.start_ms)));
                    insert_some(
                        &mut item,
                        "stopDate",
                        e.stop_ms.map(|ms| json!(Timestamp(ms))),
                    );
                    item.insert("redriveCount".into(), json!(e.redrive_count));
                    insert_some(
                        &mut item,
                        "redriveDate",
                        e.redrive_ms.map(|ms| json!(Timestamp(ms))),
                    );
                    Value::Object(item)
                })
                .collect();
            let mut out = Map::new();
            out.insert("executions".into(), Value::Array(items));
            insert_some(&mut out, "nextToken", page.next_token.map(Value::String));
            Ok(Value::Object(out))
        }
        Operation::StopExecution => {
            let input: StopExecutionInput = decode(operation, body)?;
            input.validate()?;
            let stop_ms = backend.stop_execution(caller, input).await?;
            Ok(json!({"stopDate": Timestamp(stop_ms)}))
        }
        Operation::GetExecutionHistory => {
            let input: GetExecutionHistoryInput = decode(operation, body)?;
            let max_results = input.validate()?;
            let page = backend
                .get_execution_history(caller, input, max_results)
                .await?;
            let mut out = Map::new();
            out.insert("events".into(), Value::Array(page.items));
            insert_some(&mut out, "nextToken", page.next_token.map(Value::String));
            Ok(Value::Object(out))
        }
        Operation::CreateActivity => {
            let input: CreateActivityInput = decode(operation, body)?;
            input.validate()?;
            let created = backend
                .create_activity(caller, input.name, input.tags.unwrap_or_default())
                .await?;
            Ok(json!({
                "activityArn": created.arn,
                "creationDate": Timestamp(created.created_ms),
            }))
        }
        Operation::DescribeActivity => {
            let input: ActivityArnInput = decode(operation, body)?;
            input.validate()?;
            let info = backend
                .describe_activity(caller, input.activity_arn)
                .await?;
            Ok(activity_json(&info))
        }
        Operation::ListActivities => {
            let input: ListStateMachinesInput = decode(operation, body)?;
            let max_results = input.validate()?;
            let page = backend
                .list_activities(caller, max_results, input.next_token)
                .await?;
            let mut out = Map::new();
            out.insert(
                "activities".into(),
                Value::Array(page.items.iter().map(activity_json).collect()),
            );
            insert_some(&mut out, "nextToken", page.next_token.map(Value::String));
            Ok(Value::Object(out))
        }
        Operation::DeleteActivity => {
            let input: ActivityArnInput = decode(operation, body)?;
            input.validate()?;
            backend.delete_activity(caller, input.activity_arn).await?;
            Ok(json!({}))
        }
        Operation::GetActivityTask => {
            let input: GetActivityTaskInput = decode(operation, body)?;
            input.validate()?;
            let _permit = state.long_polls.admit(&caller.account_id)?;
            let task = backend
                .get_activity_task(caller, input.activity_arn, input.worker_name)
                .await?;
            // AWS answers a poll that found nothing with no token and no input.
            Ok(match task {
                Some(task) => json!({"taskToken": task.task_token, "input": task.input}),
                None => json!({}),
            })
        }
        Operation::RedriveExecution => {
            let input: RedriveExecutionInput = decode(operation, body)?;
            input.validate()?;
            let redrive_ms = backend.redrive_execution(caller, input).await?;
            Ok(json!({"redriveDate": Timestamp(redrive_ms)}))
        }
        Operation::SendTaskSuccess => {
            let input: SendTaskSuccessInput = decode(operation, body)?;
            input.validate()?;
            backend
                .send_task_success(caller, input.task_token, input.output)
                .await?;
            Ok(json!({}))
        }
        Operation::SendTaskFailure => {
            let input: SendTaskFailureInput = decode(operation, body)?;
            input.validate()?;
            backend
                .send_task_failure(
                    caller,
                    input.task_token,
                    input.error.unwrap_or_default(),
                    input.cause.unwrap_or_default(),
                )
                .await?;
            Ok(json!({}))
        }
        Operation::SendTaskHeartbeat => {
            let input: TaskTokenInput = decode(operation, body)?;
            input.validate()?;
            backend
                .send_task_heartbeat(caller, input.task_token)
                .await?;
            Ok(json!({}))
        }
        Operation::TagResource => {
            let input: TagResourceInput = decode(operation, body)?;
            input.validate()?;
            backend
                .tag_resource(caller, input.resource_arn, input.tags)
                .await?;
            Ok(json!({}))
        }
        Operation::UntagResource => {
            let input: UntagResourceInput = decode(operation, body)?;
            input.validate()?;
            backend
                .untag_resource(caller, input.resource_arn, input.tag_keys)
                .await?;
            Ok(json!({}))
        }
        Operation::ListTagsForResource => {
            let input: ListTagsForResourceInput = decode(operation, body)?;
            input.validate()?;
            let tags = backend
                .list_tags_for_resource(caller, input.resource_arn)
                .await?;
            Ok(json!({ "tags": tags }))
        }
        Operation::PublishStateMachineVersion
        | Operation::ListStateMachineVersions
        | Operation::DeleteStateMachineVersion
        | Operation::CreateStateMachineAlias
        | Operation::DescribeStateMachineAlias
        | Operation::UpdateStateMachineAlias
        | Operation::DeleteStateMachineAlias
        | Operation::ListStateMachineAliases => {
            super::versions::dispatch(backend, caller, operation, body).await
        }
        Operation::DescribeMapRun | Operation::ListMapRuns | Operation::UpdateMapRun => {
            super::map_runs::dispatch(backend, caller, operation, body).await
        }
        // Every operation is served today; an operation named but not served yet lands here.
        #[allow(unreachable_patterns)]
        other => Err(Error::NotSupported {
            operation: other.name().to_owned(),
            reason: other
                .not_served_reason()
                .unwrap_or("the server has no handler for it"),
        }),
    }
}

/// `ValidateStateMachineDefinition`: parses with `asl` directly (no engine, no account state).
fn validate_definition(
    input: &ValidateDefinitionInput,
    machine_type: MachineType,
    max_results: u32,
) -> Value {
    let limit = if max_results == 0 {
        VALIDATE_DIAGNOSTICS_DEFAULT
    } else {
        max_results
    } as usize;
    let with_warnings = input.severity.as_deref() == Some("WARNING");
    let diagnostics = validate::validate_definition_of_type(
        &input.definition,
        &validate::options(),
        machine_type,
    )
    .err()
    .unwrap_or_default();
    let failed = diagnostics.iter().any(|d| d.severity == Severity::Error);
    let shown: Vec<_> = diagnostics
        .iter()
        .filter(|d| with_warnings || d.severity == Severity::Error)
        .collect();
    let truncated = shown.len() > limit;
    let items: Vec<Value> = shown
        .iter()
        .take(limit)
        .map(|d| {
            json!({
                "severity": d.severity.as_str(),
                "code": d.code.as_str(),
                "message": d.message,
                "location": d.path,
            })
        })
        .collect();
    json!({
        "result": if failed { "FAIL" } else { "OK" },
        "diagnostics": items,
        "truncated": truncated,
    })
}
