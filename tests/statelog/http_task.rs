//! The HTTP Task (`arn:aws:states:::http:invoke`) in the engine, against real HTTP servers on
//! loopback (`http_common`): the result's shape for JSON and text answers, what goes on the
//! wire (query, body, form encoding, the idempotency key), each authorization type (OAuth
//! against a real token endpoint), 4xx/5xx matched by Retry and Catch, a server that never
//! answers and a closed port (`States.Http.Socket`), an unknown connection, and the patterns
//! refused at creation.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use base64::Engine as _;
use serde_json::{json, Value};

use crate::engine_common::Harness;
use crate::http_common::{closed_port, Recorded, Reply, TestServer};
use statelog::engine::http_task::{Connections, HttpTask, HttpTimeouts, IDEMPOTENCY_HEADER};
use statelog::engine::{Engine, ExecutionDescription, ExecutionStatus};

const CONNECTIONS: &str = r#"{
    "shop": {"authorizationType": "API_KEY", "apiKeyName": "x-api-key", "apiKeyValue": "shop-key-1",
             "invocationHttpParameters": {
                 "headerParameters": [{"key": "x-tenant", "value": "t-42"}],
                 "queryStringParameters": [{"key": "region", "value": "eu"}]}},
    "partner": {"authorizationType": "BASIC", "username": "ann", "password": "partner-pw-2"}
}"#;

fn arn(name: &str) -> String {
    format!("arn:aws:events:us-east-1:123456789012:connection/{name}/0f1e2d3c")
}

/// A one-Task machine calling `parameters`, with `extra` fields on the Task (Retry, Catch).
fn machine(parameters: Value, extra: Value) -> String {
    let mut task = json!({
        "Type": "Task",
        "Resource": "arn:aws:states:::http:invoke",
        "Parameters": parameters,
        "End": true,
    });
    for (key, value) in extra.as_object().expect("an object") {
        task[key] = value.clone();
    }
    let mut states = json!({"Call": task});
    if extra.get("Catch").is_some() {
        states["Caught"] = json!({"Type": "Pass", "End": true});
    }
    json!({"StartAt": "Call", "States": states}).to_string()
}

fn harness(connections: &str, timeouts: HttpTimeouts) -> Harness {
    let h = Harness::new();
    let connections = Connections::from_json(connections).expect("valid connections");
    let task = HttpTask::new(connections, Arc::new(h.clock.clone())).with_timeouts(timeouts);
    h.engine.register_http_task(task);
    h
}

/// Creates the machine, runs one execution to its end (firing retry timers), describes it.
fn run(h: &Harness, name: &str, definition: &str) -> ExecutionDescription {
    h.engine
        .create_state_machine(name, definition, None)
        .expect("machine created");
    let arn = h
        .engine
        .start_execution(name, Some("run"), "{}")
        .expect("started")
        .execution_arn;
    loop {
        h.engine.wait_idle();
        let described = h.engine.describe_execution(&arn).expect("described");
        if described.status != ExecutionStatus::Running {
            return described;
        }
        if h.engine.next_timer_due_ms().is_some() {
            h.tick(60_000);
        } else {
            return h.engine.wait_until_closed(&arn).expect("closes");
        }
    }
}

fn output(described: &ExecutionDescription) -> &Value {
    assert_eq!(
        described.status,
        ExecutionStatus::Succeeded,
        "{:?}: {:?}",
        described.error,
        described.cause
    );
    described.output.as_ref().expect("an output")
}

fn task_id_of(engine: &Engine, execution_arn: &str) -> String {
    let history = crate::engine_common::event_types(engine, execution_arn);
    let index = history
        .iter()
        .position(|t| t == "TaskScheduled")
        .expect("a TaskScheduled event");
    // Event ids are 1-based.
    format!("{execution_arn}/{}", index + 1)
}

#[test]
fn a_json_and_a_text_answer_become_the_tasks_result_in_aws_shape() {
    let server = TestServer::start(|request: &Recorded| {
        if request.uri.starts_with("/orders") {
            Reply::json(201, json!({"id": 7, "items": ["a", "b"]}))
        } else {
            Reply::text(200, "plain words")
        }
    });
    let h = harness(CONNECTIONS, HttpTimeouts::default());
    let described = run(
        &h,
        "orders",
        &machine(
            json!({
                "ApiEndpoint": server.url("/orders?existing=1"),
                "Method": "POST",
                "Headers": {"x-trace": "abc", "x-count": 3},
                "QueryParameters": {"q": "a b", "region": "us"},
                "RequestBody": {"sku": "x-1", "qty": 2},
                "Authentication": {"ConnectionArn": arn("shop")},
            }),
            json!({}),
        ),
    );
    let out = output(&described);
    assert_eq!(out["StatusCode"], json!(201));
    assert_eq!(out["StatusText"], json!("Created"));
    assert_eq!(out["ResponseBody"], json!({"id": 7, "items": ["a", "b"]}));
    assert_eq!(out["Headers"]["content-type"], json!(["application/json"]));
    assert_eq!(out["Headers"]["x-served-by"], json!(["test"]));

    let sent = &server.requests()[0];
    assert_eq!(sent.method, "POST");
    // The connection's query parameter wins over the task's of the same name.
    assert_eq!(sent.uri, "/orders?existing=1&q=a+b&region=eu");
    assert_eq!(sent.header("x-api-key"), Some("shop-key-1"));
    assert_eq!(sent.header("x-tenant"), Some("t-42"));
    assert_eq!(sent.header("x-trace"), Some("abc"));
    assert_eq!(sent.header("x-count"), Some("3"));
    assert_eq!(sent.header("content-type"), Some("application/json"));
    let body: Value = serde_json::from_slice(&sent.body).expect("a JSON body");
    assert_eq!(body, json!({"sku": "x-1", "qty": 2}));
    let execution_arn = described.execution_arn.clone();
    assert_eq!(
        sent.header(IDEMPOTENCY_HEADER),
        Some(task_id_of(&h.engine, &execution_arn).as_str())
    );

    let described = run(
        &h,
        "text",
        &machine(
            json!({"ApiEndpoint": server.url("/text"), "Method": "GET",
                   "Authentication": {"ConnectionArn": arn("shop")}}),
            json!({}),
        ),
    );
    let out = output(&described);
    assert_eq!(out["StatusCode"], json!(200));
    assert_eq!(out["ResponseBody"], json!("plain words"));
    assert_eq!(server.requests()[1].method, "GET");
    assert!(server.requests()[1].body.is_empty());
}

#[test]
fn a_url_encoded_body_writes_its_arrays_as_the_array_format_says() {
    let server = TestServer::start(|_: &Recorded| Reply::json(200, json!({})));
    let h = harness(CONNECTIONS, HttpTimeouts::default());
    for (index, (format, expected)) in [
        ("INDICES", "tags%5B0%5D=a&tags%5B1%5D=b&name=n+1"),
        ("REPEAT", "tags=a&tags=b&name=n+1"),
        ("COMMAS", "tags=a%2Cb&name=n+1"),
        ("BRACKETS", "tags%5B%5D=a&tags%5B%5D=b&name=n+1"),
    ]
    .into_iter()
    .enumerate()
    {
        let described = run(
            &h,
            &format!("form-{index}"),
            &machine(
                json!({
                    "ApiEndpoint": server.url("/form"),
                    "Method": "PUT",
                    "RequestBody": {"tags": ["a", "b"], "name": "n 1"},
                    "Transform": {"RequestBodyEncoding": "URL_ENCODED",
                                  "RequestEncodingOptions": {"ArrayFormat": format}},
                    "Authentication": {"ConnectionArn": arn("partner")},
                }),
                json!({}),
            ),
        );
        output(&described);
        let sent = &server.requests()[index];
        assert_eq!(sent.body_text(), expected, "{format}");
        assert_eq!(
            sent.header("content-type"),
            Some("application/x-www-form-urlencoded")
        );
    }
}

#[test]
fn basic_and_oauth_connections_authorize_the_call_and_the_token_is_reused() {
    let tokens_issued = Arc::new(AtomicUsize::new(0));
    let issued = tokens_issued.clone();
    let server = TestServer::start(move |request: &Recorded| {
        if request.uri == "/token" {
            let expected = format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode("client-9:client-secret-3")
            );
            if request.header("authorization") != Some(expected.as_str())
                || request.body_text() != "grant_type=client_credentials&audience=api"
            {
                return Reply::json(401, json!({"error": "invalid_client"}));
            }
            let n = issued.fetch_add(1, Ordering::SeqCst);
            return Reply::json(
                200,
                json!({"access_token": format!("bearer-token-{n}"), "expires_in": 3600,
                       "token_type": "Bearer"}),
            );
        }
        match request.header("authorization") {
            Some(bearer) if bearer.starts_with("Bearer bearer-token-") => {
                Reply::json(200, json!({"who": "oauth", "token": &bearer[7..]}))
            }
            Some(basic) if basic.starts_with("Basic ") => Reply::json(200, json!({"who": "basic"})),
            _ => Reply::json(401, json!({"message": "no"})),
        }
    });
    let connections = format!(
        r#"{{"partner": {{"authorizationType": "BASIC", "username": "ann", "password": "partner-pw-2"}},
            "idp": {{"authorizationType": "OAUTH_CLIENT_CREDENTIALS",
                     "authorizationEndpoint": "{}",
                     "clientId": "client-9", "clientSecret": "client-secret-3",
                     "oauthHttpParameters": {{"bodyParameters": [{{"key": "audience", "value": "api"}}]}}}}}}"#,
        server.url("/token")
    );
    let h = harness(&connections, HttpTimeouts::default());
    let call = |connection: &str| {
        machine(
            json!({"ApiEndpoint": server.url("/api"), "Method": "GET",
                   "Authentication": {"ConnectionArn": arn(connection)}}),
            json!({}),
        )
    };
    let basic = run(&h, "basic", &call("partner"));
    assert_eq!(output(&basic)["ResponseBody"], json!({"who": "basic"}));
    let sent = &server.requests()[0];
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("ann:partner-pw-2")
    );
    assert_eq!(sent.header("authorization"), Some(expected.as_str()));

    for name in ["oauth-1", "oauth-2"] {
        let described = run(&h, name, &call("idp"));
        assert_eq!(
            output(&described)["ResponseBody"],
            json!({"who": "oauth", "token": "bearer-token-0"})
        );
    }
    assert_eq!(
        tokens_issued.load(Ordering::SeqCst),
        1,
        "the second call reuses the cached token"
    );
    // Past its expiry (3600 s, less the margin) by the engine's clock, the token is fetched again.
    h.clock.advance_ms(3_600_000);
    let described = run(&h, "oauth-3", &call("idp"));
    assert_eq!(
        output(&described)["ResponseBody"],
        json!({"who": "oauth", "token": "bearer-token-1"})
    );
    assert_eq!(tokens_issued.load(Ordering::SeqCst), 2);
}

#[test]
fn a_5xx_is_retried_and_a_4xx_caught_by_their_status_code_errors() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let server = TestServer::start(move |request: &Recorded| {
        if request.uri.starts_with("/flaky") && counted.fetch_add(1, Ordering::SeqCst) == 0 {
            return Reply::json(503, json!({"retry": true}));
        }
        if request.uri.starts_with("/missing") {
            return Reply::text(404, "no such order");
        }
        Reply::json(200, json!({"ok": true}))
    });
    let h = harness(CONNECTIONS, HttpTimeouts::default());
    let retried = run(
        &h,
        "flaky",
        &machine(
            json!({"ApiEndpoint": server.url("/flaky"), "Method": "GET",
                   "Authentication": {"ConnectionArn": arn("shop")}}),
            json!({"Retry": [{"ErrorEquals": ["States.Http.StatusCode.503"],
                              "IntervalSeconds": 1, "MaxAttempts": 2}]}),
        ),
    );
    assert_eq!(output(&retried)["ResponseBody"], json!({"ok": true}));
    assert_eq!(calls.load(Ordering::SeqCst), 2);

    let caught = run(
        &h,
        "missing",
        &machine(
            json!({"ApiEndpoint": server.url("/missing"), "Method": "DELETE",
                   "Authentication": {"ConnectionArn": arn("shop")}}),
            json!({"Catch": [{"ErrorEquals": ["States.Http.StatusCode.404"], "Next": "Caught"}]}),
        ),
    );
    let out = output(&caught);
    assert_eq!(out["Error"], json!("States.Http.StatusCode.404"));
    let cause: Value = serde_json::from_str(out["Cause"].as_str().expect("a cause")).expect("JSON");
    assert_eq!(cause["StatusCode"], json!(404));
    assert_eq!(cause["ResponseBody"], json!("no such order"));

    // Uncaught, a 500 fails the execution with its status code's error.
    let failed = run(
        &h,
        "uncaught",
        &machine(
            json!({"ApiEndpoint": server.url("/missing"), "Method": "GET",
                   "Authentication": {"ConnectionArn": arn("shop")}}),
            json!({}),
        ),
    );
    assert_eq!(failed.status, ExecutionStatus::Failed);
    assert_eq!(failed.error.as_deref(), Some("States.Http.StatusCode.404"));
}

#[test]
fn a_server_that_never_answers_and_a_closed_port_fail_with_socket() {
    let server = TestServer::start(|_: &Recorded| Reply::Hold);
    let h = harness(
        CONNECTIONS,
        HttpTimeouts {
            connect_timeout_ms: 2_000,
            timeout_ms: 300,
        },
    );
    let catch = json!({"Catch": [{"ErrorEquals": ["States.Http.Socket"], "Next": "Caught"}]});
    let held = run(
        &h,
        "held",
        &machine(
            json!({"ApiEndpoint": server.url("/slow"), "Method": "GET",
                   "Authentication": {"ConnectionArn": arn("shop")}}),
            catch.clone(),
        ),
    );
    let out = output(&held);
    assert_eq!(out["Error"], json!("States.Http.Socket"));
    let cause = out["Cause"].as_str().expect("a cause");
    assert!(cause.contains("within 300 ms"), "{cause}");
    assert_eq!(
        server.requests().len(),
        1,
        "the request did reach the server"
    );

    let closed = run(
        &h,
        "closed",
        &machine(
            json!({"ApiEndpoint": format!("http://127.0.0.1:{}/x", closed_port()),
                   "Method": "GET", "Authentication": {"ConnectionArn": arn("shop")}}),
            catch,
        ),
    );
    let out = output(&closed);
    assert_eq!(out["Error"], json!("States.Http.Socket"));
    assert!(
        out["Cause"]
            .as_str()
            .is_some_and(|c| c.starts_with("cannot connect to http://127.0.0.1:")),
        "{out}"
    );

    // https to a server that speaks plain HTTP: the TLS handshake fails.
    let plain = TestServer::start(|_: &Recorded| Reply::json(200, json!({})));
    let tls = run(
        &h,
        "tls",
        &machine(
            json!({"ApiEndpoint": format!("https://{}/x", plain.addr),
                   "Method": "GET", "Authentication": {"ConnectionArn": arn("shop")}}),
            json!({"Catch": [{"ErrorEquals": ["States.Http.Socket"], "Next": "Caught"}]}),
        ),
    );
    let out = output(&tls);
    assert_eq!(out["Error"], json!("States.Http.Socket"));
    let cause = out["Cause"].as_str().expect("a cause");
    // Without system roots the call stops before the handshake, with its own cause.
    assert!(
        cause.contains("TLS handshake") || cause.contains("no root certificates"),
        "{cause}"
    );
}

#[test]
fn an_unknown_connection_or_a_refused_header_fails_with_runtime_before_any_call() {
    let server = TestServer::start(|_: &Recorded| Reply::json(200, json!({})));
    let h = harness(CONNECTIONS, HttpTimeouts::default());
    let unknown = run(
        &h,
        "unknown",
        &machine(
            json!({"ApiEndpoint": server.url("/x"), "Method": "GET",
                   "Authentication": {"ConnectionArn": arn("nobody")}}),
            json!({}),
        ),
    );
    assert_eq!(unknown.status, ExecutionStatus::Failed);
    assert_eq!(unknown.error.as_deref(), Some("States.Runtime"));
    let cause = unknown.cause.expect("a cause");
    assert!(
        cause.contains("the connection 'nobody' is not defined"),
        "{cause}"
    );
    let refused = run(
        &h,
        "refused",
        &machine(
            json!({"ApiEndpoint": server.url("/x"), "Method": "GET",
                   "Headers": {"Host": "elsewhere"},
                   "Authentication": {"ConnectionArn": arn("shop")}}),
            json!({}),
        ),
    );
    assert_eq!(refused.error.as_deref(), Some("States.Runtime"));
    assert!(server.requests().is_empty(), "nothing was sent");
}

#[test]
fn the_http_task_is_request_response_only() {
    let h = Harness::new();
    for suffix in [".sync", ".waitForTaskToken"] {
        let definition = json!({"StartAt": "Call", "States": {"Call": {
            "Type": "Task", "Resource": format!("arn:aws:states:::http:invoke{suffix}"),
            "Parameters": {"ApiEndpoint": "https://api.example.com", "Method": "GET",
                           "Authentication": {"ConnectionArn": arn("shop")}},
            "End": true}}})
        .to_string();
        let error = h
            .engine
            .create_state_machine("refused", &definition, None)
            .expect_err("refused");
        let text = error.to_string();
        assert!(text.contains("supports only request/response"), "{text}");
    }
}

#[test]
fn jsonata_arguments_build_the_same_request() {
    let server = TestServer::start(|_: &Recorded| Reply::json(200, json!({"seen": true})));
    let h = harness(CONNECTIONS, HttpTimeouts::default());
    let definition = json!({"QueryLanguage": "JSONata", "StartAt": "Call", "States": {"Call": {
        "Type": "Task", "Resource": "arn:aws:states:::http:invoke",
        "Arguments": {
            "ApiEndpoint": server.url("/jsonata"),
            "Method": "PATCH",
            "RequestBody": {"total": "{% 2 * 21 %}"},
            "Authentication": {"ConnectionArn": arn("partner")}},
        "Output": "{% $states.result.ResponseBody %}",
        "End": true}}})
    .to_string();
    let described = run(&h, "jsonata", &definition);
    assert_eq!(output(&described), &json!({"seen": true}));
    let sent = &server.requests()[0];
    assert_eq!(sent.method, "PATCH");
    let body: Value = serde_json::from_slice(&sent.body).expect("JSON");
    assert_eq!(body, json!({"total": 42}));
}
