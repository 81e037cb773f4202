//! http_task: the HTTP Task, `arn:aws:states:::http:invoke`, as a task handler ([`HttpTask`]).
//! A Task calls an HTTPS API with no worker in between; the credentials live outside the
//! definition, in [`Connections`] (what `statelog serve --connections FILE` reads), named by the
//! task's `Authentication.ConnectionArn` (`arn:aws:events:REGION:ACCOUNT:connection/NAME/ID`).
//!
//! One call, from the task's effective input (`Parameters` or JSONata `Arguments`):
//! - `ApiEndpoint` is `https://…`; plain `http://` only to a loopback address. `Method` is one of
//!   GET, POST, PUT, DELETE, PATCH, HEAD, OPTIONS. `Headers` and `QueryParameters` are objects;
//!   `RequestBody` any JSON (a string is sent as it is, anything else as JSON), or, with
//!   `Transform.RequestBodyEncoding: URL_ENCODED`, an object sent as a form, its arrays written
//!   as `Transform.RequestEncodingOptions.ArrayFormat` says (INDICES by default, REPEAT, COMMAS,
//!   BRACKETS); query parameters' arrays are written the same way.
//! - The connection's invocation headers, query and body parameters are merged in (the
//!   connection's value wins a conflict), then its authorization: `API_KEY` (a header),
//!   `BASIC` (`Authorization: Basic`) or `OAUTH_CLIENT_CREDENTIALS` (`Authorization: Bearer`,
//!   the token fetched from the token endpoint and cached until it expires).
//! - The header [`IDEMPOTENCY_HEADER`] carries the attempt's `AttemptId` (the same for a
//!   re-dispatch of the attempt after a restart), unless the task sets it itself.
//! - The answer is AWS's shape: `StatusCode`, `StatusText`, `Headers` (lower-case name -> list
//!   of values), `ResponseBody` (parsed when the answer is JSON, else text). A non-2xx answer
//!   fails the task with `States.Http.StatusCode.NNN` (the cause is that same shape); no
//!   connection, a DNS failure, a reset or a timeout with `States.Http.Socket`. A malformed
//!   request (a missing field, a refused header, an unknown connection) fails with
//!   `States.Runtime`, as AWS does for a refused header.
//!
//! Invariants: a secret (an API key, a password, a client secret, an OAuth token, a connection's
//! invocation parameter) is held in a [`Secret`], which never prints its value; no cause this
//! module writes names one (causes name the endpoint by scheme, host, port and path only). The
//! history shows the request as the task's input (which names the connection, never its
//! credentials). Each call is bounded: [`limits::HTTP_TASK_CONNECT_TIMEOUT_MS`],
//! [`limits::HTTP_TASK_TIMEOUT_MS`], [`limits::HTTP_TASK_RESPONSE_BODY_SIZE_BYTES_MAX`].
//! Must not: follow redirects (a 3xx is a non-2xx answer), log anything, or run on the commit
//! path (it is a handler: the engine spawns it on its runtime and records its answer).
//!
//! [`limits::HTTP_TASK_CONNECT_TIMEOUT_MS`]: crate::limits::HTTP_TASK_CONNECT_TIMEOUT_MS
//! [`limits::HTTP_TASK_TIMEOUT_MS`]: crate::limits::HTTP_TASK_TIMEOUT_MS
//! [`limits::HTTP_TASK_RESPONSE_BODY_SIZE_BYTES_MAX`]: crate::limits::HTTP_TASK_RESPONSE_BODY_SIZE_BYTES_MAX

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use base64::Engine as _;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Method, Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use serde_json::{json, Map, Value};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::rustls;

use super::clock::Clock;
use super::limits::{
    HTTP_CONNECTIONS_MAX, HTTP_OAUTH_TOKEN_EXPIRY_MARGIN_MS, HTTP_TASK_CONNECT_TIMEOUT_MS,
    HTTP_TASK_RESPONSE_BODY_SIZE_BYTES_MAX, HTTP_TASK_TIMEOUT_MS,
};
use super::{Engine, TaskError, TaskFuture, TaskHandler};

/// The HTTP Task's resource.
pub const HTTP_INVOKE_RESOURCE: &str = "arn:aws:states:::http:invoke";

/// The request header that carries the attempt's `AttemptId` (`<execution ARN>/<task id>`), so
/// the API can deduplicate a call repeated after a restart. A task that sets it keeps its own.
pub const IDEMPOTENCY_HEADER: &str = "Idempotency-Key";

/// No connection, DNS, reset or timeout (AWS's name).
pub const ERROR_SOCKET: &str = "States.Http.Socket";

/// The prefix of the error of a non-2xx answer, followed by its status code.
pub const ERROR_STATUS_CODE_PREFIX: &str = "States.Http.StatusCode.";

const ERROR_RUNTIME: &str = "States.Runtime";
const ERROR_DATA_LIMIT: &str = "States.DataLimitExceeded";
const ERROR_TASK_FAILED: &str = "States.TaskFailed";

/// Request headers a task may not set (AWS's list, plus `Authorization`, `Content-Length`,
/// `Keep-Alive` and `Proxy-Connection`, which the connection and the client set), compared
/// without case.
const REFUSED_HEADERS: [&str; 35] = [
    "a-im",
    "accept-charset",
    "accept-datetime",
    "accept-encoding",
    "authorization",
    "cache-control",
    "connection",
    "content-encoding",
    "content-length",
    "content-md5",
    "date",
    "expect",
    "forwarded",
    "from",
    "host",
    "http2-settings",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "max-forwards",
    "origin",
    "pragma",
    "proxy-authorization",
    "referer",
    "server",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "via",
    "warning",
    "keep-alive",
    "proxy-connection",
];

/// Prefixes of refused request headers (AWS's), lower case.
const REFUSED_HEADER_PREFIXES: [&str; 3] = ["x-forwarded-", "x-amz-", "x-amzn-"];

/// The methods a task may use.
const METHODS: [&str; 7] = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"];

// ---------------------------------------------------------------------------------------------
// Connections

/// A secret value: its `Debug` prints `<redacted>`, and it has no `Display`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps `value`.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The value, to put on the wire.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// One parameter of a connection: a header, query or body key and its (secret) value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parameter {
    /// The header name, query key or body key.
    pub key: String,
    /// The value.
    pub value: Secret,
}

impl Parameter {
    /// Key and value, for the wire.
    fn pair(&self) -> (String, String) {
        (self.key.clone(), self.value.expose().to_string())
    }
}

/// Extra parameters a connection adds to each request (EventBridge's `HttpParameters`). Every
/// value is treated as secret.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpParameters {
    /// Headers, set over the task's own.
    pub headers: Vec<Parameter>,
    /// Query string parameters, set over the task's own.
    pub query: Vec<Parameter>,
    /// Body parameters, set over the keys of an object `RequestBody`.
    pub body: Vec<Parameter>,
}

/// How a connection authorizes its requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Authorization {
    /// `API_KEY`: the header `name: value`.
    ApiKey {
        /// The header's name.
        name: String,
        /// The key.
        value: Secret,
    },
    /// `BASIC`: `Authorization: Basic base64(username:password)`.
    Basic {
        /// The user.
        username: String,
        /// The password.
        password: Secret,
    },
    /// `OAUTH_CLIENT_CREDENTIALS`: a bearer token from the token endpoint.
    OAuthClientCredentials {
        /// The token endpoint (`authorizationEndpoint`), https (http only to loopback).
        token_endpoint: String,
        /// The client id, sent with the secret as `Authorization: Basic`.
        client_id: String,
        /// The client secret.
        client_secret: Secret,
        /// Extra parameters of the token request (`oauthHttpParameters`).
        parameters: HttpParameters,
    },
}

/// One connection: its authorization and what it adds to every request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    /// How requests are authorized.
    pub authorization: Authorization,
    /// `invocationHttpParameters`.
    pub invocation: HttpParameters,
}

/// The connections, by name: what a `ConnectionArn`'s name segment looks up.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Connections {
    by_name: BTreeMap<String, Connection>,
}

/// Why a connections file was refused. `at` is the JSON pointer of the bad value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectionsError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The text is not JSON.
    #[error("not JSON at line {line}, column {column}: {message}")]
    NotJson {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The parser's message (it names no value).
        message: String,
    },
    /// A value that must be an object is not.
    #[error("{at}: expected an object")]
    NotAnObject {
        /// Where.
        at: String,
    },
    /// A value that must be a list is not.
    #[error("{at}: expected a list")]
    NotAList {
        /// Where.
        at: String,
    },
    /// A required field is missing.
    #[error("{at}: the field '{field}' is required")]
    MissingField {
        /// The object it is missing from.
        at: String,
        /// The field.
        field: &'static str,
    },
    /// A field that must be a non-empty string is not.
    #[error("{at}: expected a non-empty string")]
    NotAString {
        /// Where.
        at: String,
    },
    /// A field this connection type does not have (a typo, most likely).
    #[error("{at}: unknown field (expected one of: {expected})")]
    UnknownField {
        /// Where.
        at: String,
        /// The fields allowed there.
        expected: String,
    },
    /// `authorizationType` names no type statelog knows.
    #[error("{at}: unknown authorizationType '{found}' (expected API_KEY, BASIC or OAUTH_CLIENT_CREDENTIALS)")]
    UnknownAuthorizationType {
        /// Where.
        at: String,
        /// What it says.
        found: String,
    },
    /// An endpoint that is not https (or http to a loopback address).
    #[error("{at}: {reason}")]
    BadEndpoint {
        /// Where.
        at: String,
        /// What is wrong with it.
        reason: EndpointRefusal,
    },
    /// More connections than [`HTTP_CONNECTIONS_MAX`].
    #[error("{count} connections; at most {HTTP_CONNECTIONS_MAX}")]
    TooMany {
        /// How many the file defines.
        count: usize,
    },
    /// An error in the named file.
    #[error("{path}: {source}")]
    InFile {
        /// The file.
        path: PathBuf,
        /// The error.
        source: Box<ConnectionsError>,
    },
}

/// Why an endpoint URL is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EndpointRefusal {
    /// Not a URL.
    #[error("not a URL: {message}")]
    NotAUrl {
        /// The parser's message.
        message: String,
    },
    /// Neither https nor http.
    #[error("the scheme must be https (or http to a loopback address), found '{scheme}'")]
    Scheme {
        /// The scheme found (empty when none).
        scheme: String,
    },
    /// Plain http to a host that is not loopback.
    #[error("plain http is accepted only to a loopback address, not to '{host}'")]
    HttpNotLoopback {
        /// The host.
        host: String,
    },
    /// No host.
    #[error("the URL has no host")]
    NoHost,
}

/// Field names, for the error that lists what is allowed.
const API_KEY_FIELDS: [&str; 4] = [
    "authorizationType",
    "apiKeyName",
    "apiKeyValue",
    "invocationHttpParameters",
];
const BASIC_FIELDS: [&str; 4] = [
    "authorizationType",
    "username",
    "password",
    "invocationHttpParameters",
];
const OAUTH_FIELDS: [&str; 6] = [
    "authorizationType",
    "authorizationEndpoint",
    "clientId",
    "clientSecret",
    "oauthHttpParameters",
    "invocationHttpParameters",
];
const PARAMETER_LISTS: [&str; 3] = [
    "headerParameters",
    "queryStringParameters",
    "bodyParameters",
];
const PARAMETER_FIELDS: [&str; 3] = ["key", "value", "isValueSecret"];

/// A JSON pointer segment (`~` and `/` escaped).
fn pointer(parent: &str, key: &str) -> String {
    format!("{parent}/{}", key.replace('~', "~0").replace('/', "~1"))
}

fn object<'a>(value: &'a Value, at: &str) -> Result<&'a Map<String, Value>, ConnectionsError> {
    value
        .as_object()
        .ok_or_else(|| ConnectionsError::NotAnObject { at: at.to_string() })
}

fn only_fields(
    map: &Map<String, Value>,
    at: &str,
    allowed: &[&str],
) -> Result<(), ConnectionsError> {
    match map.keys().find(|key| !allowed.contains(&key.as_str())) {
        None => Ok(()),
        Some(key) => Err(ConnectionsError::UnknownField {
            at: pointer(at, key),
            expected: allowed.join(", "),
        }),
    }
}

fn required_text(
    map: &Map<String, Value>,
    at: &str,
    field: &'static str,
) -> Result<String, ConnectionsError> {
    match map.get(field) {
        None => Err(ConnectionsError::MissingField {
            at: at.to_string(),
            field,
        }),
        Some(Value::String(text)) if !text.is_empty() => Ok(text.clone()),
        Some(_) => Err(ConnectionsError::NotAString {
            at: pointer(at, field),
        }),
    }
}

fn parse_parameters(value: Option<&Value>, at: &str) -> Result<HttpParameters, ConnectionsError> {
    let Some(value) = value else {
        return Ok(HttpParameters::default());
    };
    let map = object(value, at)?;
    only_fields(map, at, &PARAMETER_LISTS)?;
    let list = |name: &str| -> Result<Vec<Parameter>, ConnectionsError> {
        let here = pointer(at, name);
        let Some(items) = map.get(name) else {
            return Ok(Vec::new());
        };
        let items = items
            .as_array()
            .ok_or_else(|| ConnectionsError::NotAList { at: here.clone() })?;
        let mut pairs = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            let item_at = format!("{here}/{index}");
            let fields = object(item, &item_at)?;
            only_fields(fields, &item_at, &PARAMETER_FIELDS)?;
            let key = required_text(fields, &item_at, "key")?;
            // A value may be empty (a header or query parameter without a value).
            let value = match fields.get("value") {
                Some(Value::String(text)) => text.clone(),
                None => {
                    return Err(ConnectionsError::MissingField {
                        at: item_at,
                        field: "value",
                    })
                }
                Some(_) => {
                    return Err(ConnectionsError::NotAString {
                        at: pointer(&item_at, "value"),
                    })
                }
            };
            pairs.push(Parameter {
                key,
                value: Secret::new(value),
            });
        }
        Ok(pairs)
    };
    Ok(HttpParameters {
        headers: list("headerParameters")?,
        query: list("queryStringParameters")?,
        body: list("bodyParameters")?,
    })
}

fn parse_connection(value: &Value, at: &str) -> Result<Connection, ConnectionsError> {
    let map = object(value, at)?;
    let kind = required_text(map, at, "authorizationType")?;
    let authorization = match kind.as_str() {
        "API_KEY" => {
            only_fields(map, at, &API_KEY_FIELDS)?;
            let name = required_text(map, at, "apiKeyName")?;
            if HeaderName::from_bytes(name.as_bytes()).is_err() {
                return Err(ConnectionsError::NotAString {
                    at: pointer(at, "apiKeyName"),
                });
            }
            Authorization::ApiKey {
                name,
                value: Secret::new(required_text(map, at, "apiKeyValue")?),
            }
        }
        "BASIC" => {
            only_fields(map, at, &BASIC_FIELDS)?;
            Authorization::Basic {
                username: required_text(map, at, "username")?,
                password: Secret::new(required_text(map, at, "password")?),
            }
        }
        "OAUTH_CLIENT_CREDENTIALS" => {
            only_fields(map, at, &OAUTH_FIELDS)?;
            let token_endpoint = required_text(map, at, "authorizationEndpoint")?;
            Target::parse(&token_endpoint).map_err(|reason| ConnectionsError::BadEndpoint {
                at: pointer(at, "authorizationEndpoint"),
                reason,
            })?;
            Authorization::OAuthClientCredentials {
                token_endpoint,
                client_id: required_text(map, at, "clientId")?,
                client_secret: Secret::new(required_text(map, at, "clientSecret")?),
                parameters: parse_parameters(
                    map.get("oauthHttpParameters"),
                    &pointer(at, "oauthHttpParameters"),
                )?,
            }
        }
        other => {
            return Err(ConnectionsError::UnknownAuthorizationType {
                at: pointer(at, "authorizationType"),
                found: other.to_string(),
            })
        }
    };
    Ok(Connection {
        authorization,
        invocation: parse_parameters(
            map.get("invocationHttpParameters"),
            &pointer(at, "invocationHttpParameters"),
        )?,
    })
}

impl Connections {
    /// No connections: every HTTP Task fails with `States.Runtime` naming its connection.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) the connection `name`.
    pub fn insert(&mut self, name: impl Into<String>, connection: Connection) {
        self.by_name.insert(name.into(), connection);
    }

    /// The connection `name`.
    pub fn get(&self, name: &str) -> Option<&Connection> {
        self.by_name.get(name)
    }

    /// How many connections there are.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// Parses a connections file's text: an object, connection name -> connection (see
    /// `docs/http-task.md`). The error names the place (a JSON pointer), never a value.
    pub fn from_json(text: &str) -> Result<Self, ConnectionsError> {
        let value: Value = serde_json::from_str(text).map_err(|e| ConnectionsError::NotJson {
            line: e.line(),
            column: e.column(),
            message: syntax_message(&e),
        })?;
        let map = object(&value, "/")?;
        if map.len() > HTTP_CONNECTIONS_MAX {
            return Err(ConnectionsError::TooMany { count: map.len() });
        }
        let mut connections = Connections::new();
        for (name, value) in map {
            let at = pointer("", name);
            if name.is_empty() || name.contains('/') {
                return Err(ConnectionsError::NotAString { at });
            }
            connections.insert(name.clone(), parse_connection(value, &at)?);
        }
        Ok(connections)
    }

    /// Reads and parses the connections file at `path`; the error names the file.
    pub fn load(path: &Path) -> Result<Self, ConnectionsError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConnectionsError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_json(&text).map_err(|source| ConnectionsError::InFile {
            path: path.to_path_buf(),
            source: Box::new(source),
        })
    }
}

/// serde_json's message without its position (reported apart) and without any value it quotes.
fn syntax_message(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let text = match text.rfind(" at line ") {
        Some(at) => &text[..at],
        None => &text,
    };
    match text.find(['"', '`']) {
        // Quoted text may be part of the file: keep only the words before it.
        Some(at) if text[at..].contains(['"']) => text[..at].trim_end().to_string(),
        _ => text.to_string(),
    }
}

/// The name segment of a connection ARN (`arn:aws:events:REGION:ACCOUNT:connection/NAME/ID`).
pub fn connection_name(connection_arn: &str) -> Option<&str> {
    let mut fields = connection_arn.splitn(6, ':');
    let (Some("arn"), Some(_partition), Some("events"), Some(_region), Some(_account), Some(rest)) = (
        fields.next(),
        fields.next(),
        fields.next(),
        fields.next(),
        fields.next(),
        fields.next(),
    ) else {
        return None;
    };
    let mut segments = rest.split('/');
    match (segments.next(), segments.next()) {
        (Some("connection"), Some(name)) if !name.is_empty() => Some(name),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// The request

/// Where a request goes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Target {
    https: bool,
    host: String,
    port: u16,
    /// Path and query as written (`/` when empty).
    path_and_query: String,
}

fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

impl Target {
    fn parse(url: &str) -> Result<Target, EndpointRefusal> {
        let uri: Uri =
            url.parse()
                .map_err(|e: hyper::http::uri::InvalidUri| EndpointRefusal::NotAUrl {
                    message: e.to_string(),
                })?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            other => {
                return Err(EndpointRefusal::Scheme {
                    scheme: other.unwrap_or_default().to_string(),
                })
            }
        };
        let host = uri.host().ok_or(EndpointRefusal::NoHost)?.to_string();
        if host.is_empty() {
            return Err(EndpointRefusal::NoHost);
        }
        if !https && !is_loopback(&host) {
            return Err(EndpointRefusal::HttpNotLoopback { host });
        }
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let path_and_query = match uri.path_and_query().map(|p| p.as_str()) {
            None | Some("") => "/".to_string(),
            // `https://host?query`: the origin form needs the root path before the query.
            Some(query) if query.starts_with('?') => format!("/{query}"),
            Some(path) => path.to_string(),
        };
        debug_assert!(path_and_query.starts_with('/'), "the origin form");
        Ok(Target {
            https,
            host,
            port,
            path_and_query,
        })
    }

    /// The endpoint for causes: scheme, host, port and path, never the query.
    fn origin_and_path(&self) -> String {
        let path = self
            .path_and_query
            .split_once('?')
            .map_or(self.path_and_query.as_str(), |(path, _)| path);
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}:{}{path}", self.host, self.port)
    }

    /// The `Host` header.
    fn authority(&self) -> String {
        let default_port = if self.https { 443 } else { 80 };
        if self.port == default_port {
            self.host.clone()
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// Adds encoded query pairs to the path.
    fn with_query(mut self, pairs: &[(String, String)]) -> Target {
        if pairs.is_empty() {
            return self;
        }
        let encoded = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(pairs)
            .finish();
        let separator = if self.path_and_query.contains('?') {
            '&'
        } else {
            '?'
        };
        self.path_and_query.push(separator);
        self.path_and_query.push_str(&encoded);
        self
    }
}

/// How arrays are written in a URL-encoded form or query (`RequestEncodingOptions.ArrayFormat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArrayFormat {
    /// `a[0]=x&a[1]=y` (the default).
    Indices,
    /// `a=x&a=y`.
    Repeat,
    /// `a=x,y`.
    Commas,
    /// `a[]=x&a[]=y`.
    Brackets,
}

/// Writes `value` under `key` as form pairs (objects as `key[field]`, arrays as `format` says).
fn form_pairs(key: &str, value: &Value, format: ArrayFormat, out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            for (field, value) in map {
                let nested = if key.is_empty() {
                    field.clone()
                } else {
                    format!("{key}[{field}]")
                };
                form_pairs(&nested, value, format, out);
            }
        }
        Value::Array(items) => match format {
            ArrayFormat::Indices => {
                for (index, item) in items.iter().enumerate() {
                    form_pairs(&format!("{key}[{index}]"), item, format, out);
                }
            }
            ArrayFormat::Brackets => {
                for item in items {
                    form_pairs(&format!("{key}[]"), item, format, out);
                }
            }
            ArrayFormat::Repeat => {
                for item in items {
                    form_pairs(key, item, format, out);
                }
            }
            ArrayFormat::Commas => {
                let joined: Vec<String> = items.iter().map(scalar_text).collect();
                out.push((key.to_string(), joined.join(",")));
            }
        },
        other => out.push((key.to_string(), scalar_text(other))),
    }
}

/// A value as form text: a string as it is, null as empty, anything else as JSON.
fn scalar_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The URL-encoded form of an object.
pub fn url_encode(object: &Map<String, Value>, format: ArrayFormat) -> String {
    let mut pairs = Vec::new();
    for (key, value) in object {
        form_pairs(key, value, format, &mut pairs);
    }
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(&pairs)
        .finish()
}

/// A malformed task input: `States.Runtime` with the field named.
fn invalid(message: impl Into<String>) -> TaskError {
    TaskError::new(ERROR_RUNTIME, message.into())
}

/// What the task's input asks for.
#[derive(Debug)]
struct TaskRequest {
    target: Target,
    method: Method,
    connection: String,
    headers: Vec<(String, String)>,
    query: Vec<(String, String)>,
    body: Option<TaskBody>,
    array_format: ArrayFormat,
}

#[derive(Debug)]
enum TaskBody {
    /// Sent as JSON (an object may take the connection's body parameters).
    Json(Value),
    /// A string, sent as it is.
    Text(String),
    /// An object sent URL-encoded.
    Form(Map<String, Value>),
}

fn header_text(name: &str, value: &Value) -> Result<String, TaskError> {
    match value {
        Value::String(text) => Ok(text.clone()),
        Value::Number(_) | Value::Bool(_) => Ok(value.to_string()),
        _ => Err(invalid(format!(
            "the HTTP Task's header '{name}' must be a string, a number or a boolean"
        ))),
    }
}

fn refused_header(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    REFUSED_HEADERS.contains(&lower.as_str())
        || REFUSED_HEADER_PREFIXES
            .iter()
            .any(|prefix| lower.starts_with(prefix))
}

impl TaskRequest {
    fn parse(input: &Value) -> Result<TaskRequest, TaskError> {
        let fields = input
            .as_object()
            .ok_or_else(|| invalid("the HTTP Task's input must be an object"))?;
        let endpoint = fields
            .get("ApiEndpoint")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("the HTTP Task needs 'ApiEndpoint', a string"))?;
        let target = Target::parse(endpoint)
            .map_err(|reason| invalid(format!("the HTTP Task's 'ApiEndpoint': {reason}")))?;
        let method = fields
            .get("Method")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("the HTTP Task needs 'Method', a string"))?;
        let upper = method.to_ascii_uppercase();
        if !METHODS.contains(&upper.as_str()) {
            return Err(invalid(format!(
                "the HTTP Task's 'Method' must be one of {}; found '{method}'",
                METHODS.join(", ")
            )));
        }
        let method = Method::from_bytes(upper.as_bytes())
            .map_err(|_| invalid(format!("the HTTP Task's 'Method' '{method}' is not valid")))?;
        let connection = fields
            .get("Authentication")
            .and_then(|a| a.get("ConnectionArn"))
            .and_then(Value::as_str)
            .ok_or_else(|| {
                invalid("the HTTP Task needs 'Authentication.ConnectionArn', a string")
            })?;
        let connection = connection_name(connection)
            .ok_or_else(|| {
                invalid(format!(
                    "the HTTP Task's 'Authentication.ConnectionArn' is not a connection ARN \
                     (arn:aws:events:REGION:ACCOUNT:connection/NAME/ID): '{connection}'"
                ))
            })?
            .to_string();
        let mut headers = Vec::new();
        match fields.get("Headers") {
            None | Some(Value::Null) => {}
            Some(Value::Object(map)) => {
                for (name, value) in map {
                    if refused_header(name) {
                        return Err(invalid(format!(
                            "the HTTP Task may not set the header '{name}'"
                        )));
                    }
                    let text = header_text(name, value)?;
                    if HeaderName::from_bytes(name.as_bytes()).is_err()
                        || HeaderValue::from_str(&text).is_err()
                    {
                        return Err(invalid(format!(
                            "the HTTP Task's header '{name}' is not a valid HTTP header"
                        )));
                    }
                    headers.push((name.clone(), text));
                }
            }
            Some(_) => return Err(invalid("the HTTP Task's 'Headers' must be an object")),
        }
        let BodyEncoding {
            url_encoded: encoded,
            array_format,
        } = transform(fields.get("Transform"))?;
        let query = match fields.get("QueryParameters") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Object(map)) => {
                let mut pairs = Vec::new();
                for (key, value) in map {
                    form_pairs(key, value, array_format, &mut pairs);
                }
                pairs
            }
            Some(_) => {
                return Err(invalid(
                    "the HTTP Task's 'QueryParameters' must be an object",
                ))
            }
        };
        let body = match (fields.get("RequestBody"), encoded) {
            (None, _) => None,
            (Some(Value::Object(map)), true) => Some(TaskBody::Form(map.clone())),
            (Some(_), true) => {
                return Err(invalid(
                    "the HTTP Task's 'RequestBody' must be an object to be URL_ENCODED",
                ))
            }
            (Some(Value::String(text)), false) => Some(TaskBody::Text(text.clone())),
            (Some(value), false) => Some(TaskBody::Json(value.clone())),
        };
        Ok(TaskRequest {
            target,
            method,
            connection,
            headers,
            query,
            body,
            array_format,
        })
    }
}

/// What `Transform` says.
struct BodyEncoding {
    /// `RequestBodyEncoding: URL_ENCODED`.
    url_encoded: bool,
    /// `RequestEncodingOptions.ArrayFormat` (INDICES when absent).
    array_format: ArrayFormat,
}

/// `Transform`: whether the body is URL-encoded, and the array format.
fn transform(value: Option<&Value>) -> Result<BodyEncoding, TaskError> {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(BodyEncoding {
            url_encoded: false,
            array_format: ArrayFormat::Indices,
        });
    };
    let map = value
        .as_object()
        .ok_or_else(|| invalid("the HTTP Task's 'Transform' must be an object"))?;
    let encoded = match map.get("RequestBodyEncoding").and_then(Value::as_str) {
        None | Some("NONE") => false,
        Some("URL_ENCODED") => true,
        Some(other) => {
            return Err(invalid(format!(
                "the HTTP Task's 'Transform.RequestBodyEncoding' must be NONE or URL_ENCODED; \
                 found '{other}'"
            )))
        }
    };
    let format = match map
        .get("RequestEncodingOptions")
        .and_then(|o| o.get("ArrayFormat"))
        .and_then(Value::as_str)
    {
        None | Some("INDICES") => ArrayFormat::Indices,
        Some("REPEAT") => ArrayFormat::Repeat,
        Some("COMMAS") => ArrayFormat::Commas,
        Some("BRACKETS") => ArrayFormat::Brackets,
        Some(other) => {
            return Err(invalid(format!(
                "the HTTP Task's 'Transform.RequestEncodingOptions.ArrayFormat' must be \
                 INDICES, REPEAT, COMMAS or BRACKETS; found '{other}'"
            )))
        }
    };
    Ok(BodyEncoding {
        url_encoded: encoded,
        array_format: format,
    })
}

/// A request ready for the wire.
struct Outgoing {
    target: Target,
    method: Method,
    /// In order; a later header of the same name replaces an earlier one.
    headers: Vec<(String, String)>,
    body: Bytes,
}

impl Outgoing {
    /// Sets `name` (replacing any of the same name, without case).
    fn set_header(&mut self, name: &str, value: String) {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self.headers.push((name.to_string(), value));
    }

    fn has_header(&self, name: &str) -> bool {
        self.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    }
}

/// An answer off the wire.
struct Answer {
    status: StatusCode,
    headers: hyper::HeaderMap,
    body: Bytes,
}

impl Answer {
    fn is_json(&self) -> bool {
        self.headers
            .get(hyper::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| {
                let media = v.split(';').next().unwrap_or_default().trim();
                media.eq_ignore_ascii_case("application/json") || media.ends_with("+json")
            })
            .unwrap_or(false)
    }

    /// The task's result, AWS's shape.
    fn result(&self) -> Value {
        let mut headers = Map::new();
        for name in self.headers.keys() {
            let values: Vec<Value> = self
                .headers
                .get_all(name)
                .iter()
                .map(|v| Value::String(String::from_utf8_lossy(v.as_bytes()).into_owned()))
                .collect();
            headers.insert(name.as_str().to_string(), Value::Array(values));
        }
        let text = || Value::String(String::from_utf8_lossy(&self.body).into_owned());
        let body = if self.is_json() && !self.body.is_empty() {
            serde_json::from_slice(&self.body).unwrap_or_else(|_| text())
        } else {
            text()
        };
        json!({
            "Headers": headers,
            "ResponseBody": body,
            "StatusCode": self.status.as_u16(),
            "StatusText": self.status.canonical_reason().unwrap_or_default(),
        })
    }
}

// ---------------------------------------------------------------------------------------------
// The handler

/// The timeouts of each call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpTimeouts {
    /// For the TCP connection, and again for the TLS handshake, in ms.
    pub connect_timeout_ms: u64,
    /// For the whole call (token request included), in ms.
    pub timeout_ms: u64,
}

impl Default for HttpTimeouts {
    fn default() -> Self {
        HttpTimeouts {
            connect_timeout_ms: HTTP_TASK_CONNECT_TIMEOUT_MS,
            timeout_ms: HTTP_TASK_TIMEOUT_MS,
        }
    }
}

/// An OAuth access token and when it is fetched again (ms of the clock).
struct CachedToken {
    token: Secret,
    refresh_at_ms: Option<u64>,
}

struct Shared {
    connections: Connections,
    clock: Arc<dyn Clock>,
    tokens: Mutex<HashMap<String, CachedToken>>,
    tls: OnceLock<Result<Arc<rustls::ClientConfig>, String>>,
}

/// The HTTP Task integration: register it with [`Engine::register_http_task`] (or pass it as
/// [`EngineOptions::http_task`](crate::EngineOptions::http_task)). Clones share the connections
/// and the OAuth token cache.
#[derive(Clone)]
pub struct HttpTask {
    shared: Arc<Shared>,
    timeouts: HttpTimeouts,
}

impl fmt::Debug for HttpTask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpTask")
            .field(
                "connections",
                &self.shared.connections.by_name.keys().collect::<Vec<_>>(),
            )
            .field("timeouts", &self.timeouts)
            .finish()
    }
}

/// A socket failure.
fn socket(message: impl Into<String>) -> TaskError {
    TaskError::new(ERROR_SOCKET, message.into())
}

/// Something a stream can be (plain TCP or TLS over it).
trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// Aborts the connection's driver task when the call is done or dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl HttpTask {
    /// The integration over `connections`; `clock` times the OAuth tokens' expiry.
    pub fn new(connections: Connections, clock: Arc<dyn Clock>) -> Self {
        HttpTask {
            shared: Arc::new(Shared {
                connections,
                clock,
                tokens: Mutex::new(HashMap::new()),
                tls: OnceLock::new(),
            }),
            timeouts: HttpTimeouts::default(),
        }
    }

    /// The same integration with other timeouts (tests, slow APIs within the limits).
    pub fn with_timeouts(mut self, timeouts: HttpTimeouts) -> Self {
        self.timeouts = timeouts;
        self
    }

    /// One call: the task's answer or its failure.
    async fn invoke(&self, input: Value, context: Value) -> Result<Value, TaskError> {
        let request = TaskRequest::parse(&input)?;
        let total = Duration::from_millis(self.timeouts.timeout_ms);
        let endpoint = request.target.origin_and_path();
        let attempt_id = context["AttemptId"].as_str().map(str::to_string);
        match tokio::time::timeout(total, self.call(request, attempt_id)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(socket(format!(
                "no answer from {endpoint} within {} ms",
                self.timeouts.timeout_ms
            ))),
        }
    }

    async fn call(
        &self,
        request: TaskRequest,
        attempt_id: Option<String>,
    ) -> Result<Value, TaskError> {
        let name = request.connection.clone();
        let connection = self.shared.connections.get(&name).ok_or_else(|| {
            invalid(format!(
                "the connection '{name}' is not defined (statelog serve --connections FILE \
                 names the connections)"
            ))
        })?;
        let outgoing = self
            .authorized(request, connection, &name, attempt_id)
            .await?;
        let answer = self.exchange(outgoing).await?;
        let result = answer.result();
        if answer.status.is_success() {
            return Ok(result);
        }
        if answer.status == StatusCode::UNAUTHORIZED {
            // A token revoked before its expiry: the next attempt fetches a new one.
            self.shared.tokens.lock().remove(&name);
        }
        Err(TaskError::new(
            format!("{ERROR_STATUS_CODE_PREFIX}{}", answer.status.as_u16()),
            result.to_string(),
        ))
    }

    /// The request with the connection's parameters and authorization merged in.
    async fn authorized(
        &self,
        request: TaskRequest,
        connection: &Connection,
        name: &str,
        attempt_id: Option<String>,
    ) -> Result<Outgoing, TaskError> {
        let invocation = &connection.invocation;
        let mut query = request.query;
        query.retain(|(key, _)| !invocation.query.iter().any(|p| &p.key == key));
        query.extend(invocation.query.iter().map(Parameter::pair));
        let target = request.target.with_query(&query);
        let mut outgoing = Outgoing {
            target,
            method: request.method,
            headers: request.headers,
            body: Bytes::new(),
        };
        if let Some(body) = request.body {
            let (content_type, bytes) = match body {
                TaskBody::Text(text) => ("text/plain; charset=utf-8", Bytes::from(text)),
                TaskBody::Json(mut value) => {
                    if let Value::Object(map) = &mut value {
                        for parameter in &invocation.body {
                            let (key, value) = parameter.pair();
                            map.insert(key, Value::String(value));
                        }
                    }
                    ("application/json", Bytes::from(value.to_string()))
                }
                TaskBody::Form(mut map) => {
                    for parameter in &invocation.body {
                        let (key, value) = parameter.pair();
                        map.insert(key, Value::String(value));
                    }
                    let text = url_encode(&map, request.array_format);
                    // The form's type is set whatever the task says (AWS does the same).
                    outgoing.set_header("Content-Type", "application/x-www-form-urlencoded".into());
                    ("application/x-www-form-urlencoded", Bytes::from(text))
                }
            };
            if !outgoing.has_header("Content-Type") {
                outgoing.set_header("Content-Type", content_type.to_string());
            }
            outgoing.body = bytes;
        }
        for parameter in &invocation.headers {
            outgoing.set_header(&parameter.key, parameter.value.expose().to_string());
        }
        match &connection.authorization {
            Authorization::ApiKey { name, value } => {
                outgoing.set_header(name, value.expose().to_string());
            }
            Authorization::Basic { username, password } => {
                outgoing.set_header("Authorization", basic(username, password));
            }
            Authorization::OAuthClientCredentials { .. } => {
                let token = self.token(name, &connection.authorization).await?;
                outgoing.set_header("Authorization", format!("Bearer {}", token.expose()));
            }
        }
        if let Some(attempt_id) = attempt_id {
            if !outgoing.has_header(IDEMPOTENCY_HEADER) {
                outgoing.set_header(IDEMPOTENCY_HEADER, attempt_id);
            }
        }
        Ok(outgoing)
    }

    /// The connection's OAuth access token: the cached one, or a new one from its endpoint.
    async fn token(&self, name: &str, authorization: &Authorization) -> Result<Secret, TaskError> {
        let Authorization::OAuthClientCredentials {
            token_endpoint,
            client_id,
            client_secret,
            parameters,
        } = authorization
        else {
            unreachable!("token is asked only of an OAuth connection");
        };
        let now_ms = self.shared.clock.now_ms();
        if let Some(cached) = self.shared.tokens.lock().get(name) {
            if cached.refresh_at_ms.map_or(true, |at| now_ms < at) {
                return Ok(cached.token.clone());
            }
        }
        let target = Target::parse(token_endpoint).map_err(|reason| {
            invalid(format!(
                "the OAuth token endpoint of connection '{name}': {reason}"
            ))
        })?;
        let query: Vec<(String, String)> = parameters.query.iter().map(Parameter::pair).collect();
        let mut form = vec![("grant_type".to_string(), "client_credentials".to_string())];
        form.extend(parameters.body.iter().map(Parameter::pair));
        let body = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(&form)
            .finish();
        let mut outgoing = Outgoing {
            target: target.with_query(&query),
            method: Method::POST,
            headers: Vec::new(),
            body: Bytes::from(body),
        };
        for parameter in &parameters.headers {
            outgoing.set_header(&parameter.key, parameter.value.expose().to_string());
        }
        outgoing.set_header(
            "Content-Type",
            "application/x-www-form-urlencoded".to_string(),
        );
        outgoing.set_header("Accept", "application/json".to_string());
        outgoing.set_header("Authorization", basic(client_id, client_secret));
        let answer = self.exchange(outgoing).await?;
        if !answer.status.is_success() {
            return Err(TaskError::new(
                ERROR_TASK_FAILED,
                format!(
                    "the OAuth token endpoint of connection '{name}' answered {}",
                    answer.status
                ),
            ));
        }
        let parsed: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
        let token = parsed
            .get("access_token")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                TaskError::new(
                    ERROR_TASK_FAILED,
                    format!(
                        "the OAuth token endpoint of connection '{name}' answered no \
                         'access_token'"
                    ),
                )
            })?;
        let token = Secret::new(token);
        let refresh_at_ms = parsed
            .get("expires_in")
            .and_then(Value::as_u64)
            .map(|seconds| {
                now_ms
                    .saturating_add(seconds.saturating_mul(1000))
                    .saturating_sub(HTTP_OAUTH_TOKEN_EXPIRY_MARGIN_MS)
            });
        self.shared.tokens.lock().insert(
            name.to_string(),
            CachedToken {
                token: token.clone(),
                refresh_at_ms,
            },
        );
        Ok(token)
    }

    fn tls_config(&self) -> Result<Arc<rustls::ClientConfig>, TaskError> {
        self.shared
            .tls
            .get_or_init(|| {
                let mut roots = rustls::RootCertStore::empty();
                let loaded = rustls_native_certs::load_native_certs();
                for certificate in loaded.certs {
                    // A certificate the store refuses is left out; the others still verify.
                    let _ = roots.add(certificate);
                }
                if roots.is_empty() {
                    return Err(format!(
                        "no root certificates found on this system ({} errors loading them)",
                        loaded.errors.len()
                    ));
                }
                // ring's provider offers classical key exchange only (X25519, P-256, P-384).
                // rustls 0.23.48 deprecates it for that; the lock holds 0.23.46, and the allow
                // keeps a later `cargo update` from failing the build on the warning.
                #[allow(deprecated)]
                let provider = Arc::new(rustls::crypto::ring::default_provider());
                let mut config = rustls::ClientConfig::builder_with_provider(provider)
                    .with_safe_default_protocol_versions()
                    .map_err(|e| format!("TLS setup: {e}"))?
                    .with_root_certificates(roots)
                    .with_no_client_auth();
                config.alpn_protocols = vec![b"http/1.1".to_vec()];
                Ok(Arc::new(config))
            })
            .clone()
            .map_err(socket)
    }

    /// Sends one request on a new connection and reads the whole answer (bounded).
    async fn exchange(&self, outgoing: Outgoing) -> Result<Answer, TaskError> {
        let target = &outgoing.target;
        let endpoint = target.origin_and_path();
        let connect_ms = self.timeouts.connect_timeout_ms;
        let connect = Duration::from_millis(connect_ms);
        let host = target.host.trim_start_matches('[').trim_end_matches(']');
        let stream = match tokio::time::timeout(connect, TcpStream::connect((host, target.port)))
            .await
        {
            Err(_) => {
                return Err(socket(format!(
                    "connecting to {endpoint} took more than {connect_ms} ms"
                )))
            }
            Ok(Err(error)) => return Err(socket(format!("cannot connect to {endpoint}: {error}"))),
            Ok(Ok(stream)) => stream,
        };
        // Small requests: send them now rather than wait for more bytes.
        let _ = stream.set_nodelay(true);
        let io: Box<dyn Io> = if target.https {
            let connector = tokio_rustls::TlsConnector::from(self.tls_config()?);
            let server_name = rustls::pki_types::ServerName::try_from(host.to_string())
                .map_err(|e| socket(format!("{endpoint}: not a TLS server name: {e}")))?;
            match tokio::time::timeout(connect, connector.connect(server_name, stream)).await {
                Err(_) => {
                    return Err(socket(format!(
                        "the TLS handshake with {endpoint} took more than {connect_ms} ms"
                    )))
                }
                Ok(Err(error)) => {
                    return Err(socket(format!(
                        "the TLS handshake with {endpoint} failed: {error}"
                    )))
                }
                Ok(Ok(tls)) => Box::new(tls),
            }
        } else {
            Box::new(stream)
        };
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(io))
            .await
            .map_err(|e| socket(format!("{endpoint}: {e}")))?;
        let _driver = AbortOnDrop(tokio::spawn(async move {
            // The connection's own failure shows as the request's.
            let _ = connection.await;
        }));
        let mut builder = Request::builder()
            .method(outgoing.method.clone())
            .uri(target.path_and_query.as_str())
            .header(hyper::header::HOST, target.authority())
            .header(
                hyper::header::USER_AGENT,
                concat!("statelog/", env!("CARGO_PKG_VERSION"), " (HttpInvoke)"),
            );
        for (name, value) in &outgoing.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        let request = builder
            .body(Full::new(outgoing.body.clone()))
            .map_err(|e| invalid(format!("the HTTP Task's request to {endpoint}: {e}")))?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| socket(format!("{endpoint}: {e}")))?;
        let (parts, body) = response.into_parts();
        let body = match Limited::new(body, HTTP_TASK_RESPONSE_BODY_SIZE_BYTES_MAX)
            .collect()
            .await
        {
            Ok(collected) => {
                let bytes = collected.to_bytes();
                debug_assert!(bytes.len() <= HTTP_TASK_RESPONSE_BODY_SIZE_BYTES_MAX);
                bytes
            }
            Err(error) if error.is::<http_body_util::LengthLimitError>() => {
                return Err(TaskError::new(
                    ERROR_DATA_LIMIT,
                    format!(
                        "the answer of {endpoint} is larger than \
                         {HTTP_TASK_RESPONSE_BODY_SIZE_BYTES_MAX} bytes"
                    ),
                ))
            }
            Err(error) => return Err(socket(format!("{endpoint}: {error}"))),
        };
        Ok(Answer {
            status: parts.status,
            headers: parts.headers,
            body,
        })
    }
}

fn basic(user: &str, password: &Secret) -> String {
    let pair = format!("{user}:{}", password.expose());
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
}

impl TaskHandler for HttpTask {
    fn call(&self, input: Value, context: Value) -> TaskFuture {
        let task = self.clone();
        Box::pin(async move { task.invoke(input, context).await })
    }
}

impl Engine {
    /// Registers the HTTP Task (`arn:aws:states:::http:invoke`), replacing any handler of it,
    /// and dispatches the HTTP Tasks that were waiting for it (recovered ones included).
    pub fn register_http_task(&self, task: HttpTask) {
        self.register_integration(HTTP_INVOKE_RESOURCE, task);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(value: Value, format: ArrayFormat) -> String {
        let decoded = url_encode(value.as_object().expect("an object"), format);
        // Brackets are percent-encoded on the wire; compare them readable.
        decoded
            .replace("%5B", "[")
            .replace("%5D", "]")
            .replace("%2C", ",")
    }

    #[test]
    fn arrays_are_written_as_the_array_format_says() {
        let body = json!({"array": ["a", "b", "c"], "n": 1});
        assert_eq!(
            form(body.clone(), ArrayFormat::Indices),
            "array[0]=a&array[1]=b&array[2]=c&n=1"
        );
        assert_eq!(
            form(body.clone(), ArrayFormat::Repeat),
            "array=a&array=b&array=c&n=1"
        );
        assert_eq!(form(body.clone(), ArrayFormat::Commas), "array=a,b,c&n=1");
        assert_eq!(
            form(body, ArrayFormat::Brackets),
            "array[]=a&array[]=b&array[]=c&n=1"
        );
        assert_eq!(
            form(json!({"o": {"k": "v w", "e": null}}), ArrayFormat::Indices),
            "o[k]=v+w&o[e]="
        );
    }

    #[test]
    fn a_connection_arn_names_its_connection_by_its_name_segment() {
        assert_eq!(
            connection_name("arn:aws:events:us-east-2:123456789012:connection/Stripe/81210c42"),
            Some("Stripe")
        );
        assert_eq!(
            connection_name("arn:aws:events:us-east-1:1:connection/shop"),
            Some("shop")
        );
        assert_eq!(
            connection_name("arn:aws:events:us-east-1:1:rule/shop"),
            None
        );
        assert_eq!(
            connection_name("arn:aws:lambda:us-east-1:1:connection/x/y"),
            None
        );
        assert_eq!(connection_name("shop"), None);
    }

    #[test]
    fn http_is_accepted_only_to_loopback() {
        assert!(Target::parse("https://api.example.com/v1?x=1").is_ok());
        assert!(Target::parse("http://127.0.0.1:8080/").is_ok());
        assert!(Target::parse("http://[::1]:8080/").is_ok());
        assert!(Target::parse("http://localhost/").is_ok());
        let bare = Target::parse("https://h.example?x=1").expect("parses");
        assert_eq!(bare.path_and_query, "/?x=1");
        assert_eq!(
            Target::parse("https://h.example")
                .expect("parses")
                .path_and_query,
            "/"
        );
        assert_eq!(
            Target::parse("http://api.example.com/"),
            Err(EndpointRefusal::HttpNotLoopback {
                host: "api.example.com".into()
            })
        );
        assert!(matches!(
            Target::parse("ftp://127.0.0.1/"),
            Err(EndpointRefusal::Scheme { .. })
        ));
        let target = Target::parse("https://h.example/p?key=secret").expect("parses");
        assert_eq!(target.origin_and_path(), "https://h.example:443/p");
    }

    #[test]
    fn a_secret_never_prints() {
        let connections = Connections::from_json(
            r#"{"shop": {"authorizationType": "API_KEY", "apiKeyName": "x-api-key",
                         "apiKeyValue": "key-7f3a"},
                "partner": {"authorizationType": "BASIC", "username": "u", "password": "pw-9c1d",
                            "invocationHttpParameters": {"headerParameters":
                                [{"key": "x-extra", "value": "hdr-5e2b"}]}}}"#,
        )
        .expect("parses");
        let printed = format!("{connections:?}");
        for secret in ["key-7f3a", "pw-9c1d", "hdr-5e2b"] {
            assert!(!printed.contains(secret), "{printed}");
        }
        assert!(printed.contains("<redacted>"), "{printed}");
        let task = HttpTask::new(connections, Arc::new(crate::clock::SystemClock));
        assert!(!format!("{task:?}").contains("key-7f3a"));
    }

    #[test]
    fn a_bad_connections_file_is_refused_at_the_place_and_without_its_values() {
        let refused = |text: &str| {
            Connections::from_json(text)
                .expect_err("refused")
                .to_string()
        };
        assert_eq!(
            refused(r#"{"shop": {"authorizationType": "API_KEY", "apiKeyName": "k"}}"#),
            "/shop: the field 'apiKeyValue' is required"
        );
        assert_eq!(
            refused(r#"{"shop": {"authorizationType": "TOKEN"}}"#),
            "/shop/authorizationType: unknown authorizationType 'TOKEN' (expected API_KEY, \
             BASIC or OAUTH_CLIENT_CREDENTIALS)"
        );
        let unknown = refused(
            r#"{"p": {"authorizationType": "BASIC", "username": "u", "password": "p", "pasword": "x"}}"#,
        );
        assert!(
            unknown.starts_with("/p/pasword: unknown field"),
            "{unknown}"
        );
        assert_eq!(
            refused(r#"{"p": {"authorizationType": "BASIC", "username": "u", "password": 7}}"#),
            "/p/password: expected a non-empty string"
        );
        let endpoint = refused(
            r#"{"o": {"authorizationType": "OAUTH_CLIENT_CREDENTIALS", "clientId": "c",
                      "clientSecret": "s", "authorizationEndpoint": "http://auth.example/t"}}"#,
        );
        assert!(
            endpoint.starts_with("/o/authorizationEndpoint: plain http"),
            "{endpoint}"
        );
        let syntax = refused("{\"shop\": {\"apiKeyValue\": \"hunter2\" \"x\": 1}}");
        assert!(syntax.starts_with("not JSON at line 1"), "{syntax}");
        assert!(!syntax.contains("hunter2"), "{syntax}");
        assert_eq!(refused("[]"), "/: expected an object");
    }

    #[test]
    fn the_task_input_is_checked_field_by_field() {
        let base = json!({
            "ApiEndpoint": "https://api.example.com/orders",
            "Method": "POST",
            "Authentication": {"ConnectionArn": "arn:aws:events:us-east-1:1:connection/shop/1"},
        });
        let with = |field: &str, value: Value| {
            let mut input = base.clone();
            input[field] = value;
            TaskRequest::parse(&input)
        };
        let parsed = TaskRequest::parse(&base).expect("valid");
        assert_eq!(parsed.connection, "shop");
        assert_eq!(parsed.method, Method::POST);
        for (field, value, says) in [
            ("Method", json!("TRACE"), "'Method' must be one of"),
            (
                "ApiEndpoint",
                json!("http://api.example.com/"),
                "plain http",
            ),
            (
                "Headers",
                json!({"Host": "x"}),
                "may not set the header 'Host'",
            ),
            (
                "Headers",
                json!({"X-Amz-Date": "x"}),
                "may not set the header",
            ),
            (
                "Headers",
                json!({"Authorization": "x"}),
                "may not set the header",
            ),
            ("Headers", json!({"x-list": [1]}), "must be a string"),
            (
                "Transform",
                json!({"RequestBodyEncoding": "GZIP"}),
                "NONE or URL_ENCODED",
            ),
            (
                "Authentication",
                json!({"ConnectionArn": "arn:aws:events:us-east-1:1:rule/x"}),
                "not a connection ARN",
            ),
        ] {
            let error = with(field, value).expect_err(field);
            assert_eq!(error.error, "States.Runtime");
            assert!(error.cause.contains(says), "{field}: {}", error.cause);
        }
        let mut form = base.clone();
        form["Transform"] = json!({"RequestBodyEncoding": "URL_ENCODED"});
        form["RequestBody"] = json!("text");
        let error = TaskRequest::parse(&form).expect_err("a form needs an object");
        assert!(error.cause.contains("must be an object"), "{}", error.cause);
    }
}
