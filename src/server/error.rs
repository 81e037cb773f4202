//! error: the server's one error type and how each variant is answered on the wire.
//!
//! Owns [`Error`] and its mapping to an HTTP status and an AWS error name (`__type`). Invariant:
//! every answer to client input is a 4xx with an AWS-shaped body; only a fault of the server
//! itself (the engine failing to write its log, a bug) is a 5xx, and the engine's faults reach the
//! client as [`Error::Internal`]: `InternalFailure` with AWS's generic sentence, the detail left
//! for the server's log. Must not: log secrets or signatures in messages (only access key ids,
//! which AWS also echoes); show a client a server path.

use axum::http::StatusCode;

pub use super::credentials::CredentialsReason;
pub use super::protocol::SerializationReason;
pub use super::sigv4::SignatureReason;

/// The whole message of an `InternalFailure` answer: AWS's own sentence, no server detail.
pub const INTERNAL_FAILURE_MESSAGE: &str =
    "The request processing has failed because of an unknown error, exception or failure.";

/// Everything the server can answer with instead of a result, or fail to start with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The request names no operation (`X-Amz-Target` missing) or one this protocol lacks.
    #[error("{target}: no such operation (expected X-Amz-Target: AWSStepFunctions.<Operation>)")]
    UnknownOperation {
        /// The `X-Amz-Target` value, or `(none)`.
        target: String,
    },
    /// `X-Amz-Target: SimpleWorkflowService.<Op>` names no Amazon SWF operation.
    #[error("{target}: no such Amazon SWF operation")]
    UnknownSwfOperation {
        /// The `X-Amz-Target` value.
        target: String,
    },
    /// A real Step Functions operation statelog does not serve yet.
    #[error("statelog does not support the operation {operation} yet ({reason})")]
    NotSupported {
        /// The operation's AWS name.
        operation: String,
        /// Why, or what it waits on.
        reason: &'static str,
    },
    /// The request is not `POST /`, `GET /health` or (without credentials) `GET /metrics`.
    #[error(
        "{method} {path}: the API answers only POST /, GET /health and, without --credentials, \
         GET /metrics"
    )]
    WrongRoute {
        /// The HTTP method.
        method: String,
        /// The request path.
        path: String,
    },
    /// `/metrics` on the API listener of a server with credentials: metrics are served only on
    /// the metrics listener (`--metrics-listen`).
    #[error("/metrics is not served on the API listener of a server with --credentials")]
    MetricsNotOnApi,
    /// A request to the metrics listener other than `GET /metrics` or `GET /health`.
    #[error("{method} {path}: this listener answers only GET /metrics and GET /health")]
    NotMetrics {
        /// The HTTP method.
        method: String,
        /// The request path.
        path: String,
    },
    /// The body is not JSON of the operation's input shape.
    #[error("cannot read the {operation} request: {reason}")]
    Serialization {
        /// The operation whose input was being read.
        operation: String,
        /// What the decoder found.
        reason: SerializationReason,
    },
    /// The `Content-Type` is not the AWS JSON 1.0 one.
    #[error("Content-Type {found:?} is not supported; send application/x-amz-json-1.0")]
    UnsupportedContentType {
        /// The header as sent (or empty).
        found: String,
    },
    /// A member of the input breaks a constraint of the service model.
    #[error("1 validation error detected: value at '{member}' failed to satisfy constraint: {constraint}")]
    Validation {
        /// The member's name as on the wire.
        member: &'static str,
        /// The constraint, in words.
        constraint: String,
    },
    /// The body is larger than [`crate::server::limits::REQUEST_BODY_BYTES_MAX`].
    #[error("the request body is larger than {limit_bytes} bytes")]
    BodyTooLarge {
        /// The limit that was passed.
        limit_bytes: usize,
    },
    /// The body could not be read from the connection.
    #[error("cannot read the request body: {source}")]
    BodyRead {
        /// What the connection reported.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The body did not arrive within [`crate::server::ServeOptions::request_body_timeout_ms`].
    #[error("the request body did not arrive within {timeout_ms} ms")]
    RequestTimeout {
        /// The limit that passed.
        timeout_ms: u64,
    },
    /// The request carries no `Authorization` header.
    #[error(
        "Missing Authentication Token: the request must be signed with AWS Signature Version 4"
    )]
    MissingAuthentication,
    /// The `Authorization` header (or the date it relies on) is not a well-formed SigV4 header.
    #[error("{reason}")]
    IncompleteSignature {
        /// What is malformed.
        reason: SignatureReason,
    },
    /// The access key id is not in the credentials file.
    #[error("The security token included in the request is invalid (unknown access key id {access_key_id})")]
    UnrecognizedClient {
        /// The access key id the request was signed with.
        access_key_id: String,
    },
    /// The signature's credential scope names another region than the server's.
    #[error("Credential should be scoped to a valid region, not '{region}'")]
    WrongRegion {
        /// The region of the scope.
        region: String,
    },
    /// The signature does not match the one computed with the key's secret.
    #[error("The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.")]
    SignatureMismatch,
    /// The request was signed more than 15 minutes before (or after) the server's clock.
    #[error("Signature expired: {request_time} is now earlier than {earliest_time} ({now_time} - 15 min.)")]
    SignatureExpired {
        /// The request's `X-Amz-Date`.
        request_time: String,
        /// The oldest accepted time.
        earliest_time: String,
        /// The server's time.
        now_time: String,
    },
    /// The request was signed more than 15 minutes after the server's clock.
    #[error("Signature not yet current: {request_time} is still later than {latest_time} ({now_time} + 15 min.)")]
    SignatureNotYetCurrent {
        /// The request's `X-Amz-Date`.
        request_time: String,
        /// The newest accepted time.
        latest_time: String,
        /// The server's time.
        now_time: String,
    },
    /// Too many long polls are already waiting.
    #[error("too many concurrent long polls (limit {limit}); retry later")]
    TooManyLongPolls {
        /// The limit.
        limit: usize,
    },
    /// The log refuses writes (poisoned after a failed write or sync, or a full disk with no
    /// new segment): `message` says which and what the operator does (no paths).
    #[error("{message}")]
    LogUnavailable {
        /// What is wrong and how to recover.
        message: String,
    },
    /// A cluster node cannot answer for a partition now (its owner is moving, opening it or
    /// unreachable): retry, as for any 503.
    #[error("partition p{partition} cannot answer now: {reason}; retry")]
    PartitionUnavailable {
        /// The partition.
        partition: u32,
        /// Why (no path or secret).
        reason: String,
    },
    /// A cluster node asked for its part of a call that spans partitions (an activity task
    /// claim, a count, a listing part) cannot answer now: retry, as for any 503.
    #[error("node {node} cannot answer now: {reason}; retry")]
    NodeUnavailable {
        /// The node's name.
        node: String,
        /// Why (no path or secret).
        reason: String,
    },
    /// The answer of the cluster node that owns what the call touched: its error as it
    /// answered it.
    #[error("{message}")]
    Forwarded {
        /// Its AWS error name, as this server names errors (`InternalFailure` for one it
        /// does not know).
        aws_name: &'static str,
        /// Its `__type` as the owner wrote it.
        wire_type: String,
        /// Its message.
        message: String,
        /// Its HTTP status.
        status: u16,
        /// The `resourceName` member of a `TooManyTags` answer.
        resource_name: Option<String>,
    },
    /// The caller's account already has its share of long polls waiting.
    #[error("this account already has {limit} long polls waiting (its limit); retry later")]
    AccountLongPollsExceeded {
        /// The per-account limit.
        limit: usize,
    },
    /// An SWF call refused with an SWF fault (`UnknownResourceFault`, `LimitExceededFault`).
    #[error("{message}")]
    SwfFault {
        /// The SWF fault name.
        fault: &'static str,
        /// What is wrong, naming it.
        message: String,
    },
    /// The engine refused the call; `aws_name` is its AWS error name.
    #[error("{message}")]
    Engine {
        /// The AWS error name (`ExecutionDoesNotExist`, `InvalidDefinition`, ...).
        aws_name: &'static str,
        /// The engine's message.
        message: String,
        /// True when the refusal is the server's (its capacity), not the request's. The engine's
        /// own faults are [`Error::Internal`].
        server_fault: bool,
    },
    /// A fault of the server itself (the engine's store, interpreter or runtime, a lost
    /// blocking task). The client sees [`INTERNAL_FAILURE_MESSAGE`] only; `detail` (file paths,
    /// LSNs) is for the server's log.
    #[error("{INTERNAL_FAILURE_MESSAGE}")]
    Internal {
        /// What failed, for the operator.
        detail: String,
    },
    /// A tag change would leave a resource with too many tags (`TooManyTags`, with the
    /// `resourceName` member AWS adds).
    #[error("{message}")]
    TooManyTags {
        /// The resource (its ARN).
        resource_name: String,
        /// The engine's message.
        message: String,
    },
    /// The credentials file cannot be used.
    #[error("credentials file {path}: {reason}")]
    Credentials {
        /// The file.
        path: String,
        /// What is wrong with it.
        reason: CredentialsReason,
    },
    /// Development mode (no credentials file) was asked to listen beyond loopback.
    #[error("without --credentials the server runs in development mode and listens only on loopback; {addr} is not a loopback address")]
    DevModeNotLoopback {
        /// The address asked for.
        addr: String,
    },
    /// The listen address does not parse or resolve.
    #[error("listen address {addr:?}: {reason}")]
    ListenAddress {
        /// The address as given.
        addr: String,
        /// Why it cannot be used.
        reason: ListenAddressReason,
    },
    /// An I/O error of the server itself (bind, accept, signal setup).
    #[error("{context}: {source}")]
    Io {
        /// What the server was doing.
        context: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// Why a listen address cannot be used ([`Error::ListenAddress`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ListenAddressReason {
    /// It does not parse or resolve.
    #[error("{0}")]
    Resolve(#[source] std::io::Error),
    /// It resolves, but to no address.
    #[error("resolves to no address")]
    NoAddress,
}

impl Error {
    /// The AWS error name sent as `__type`.
    pub fn aws_name(&self) -> &'static str {
        match self {
            Error::UnknownOperation { .. }
            | Error::UnknownSwfOperation { .. }
            | Error::WrongRoute { .. }
            | Error::MetricsNotOnApi
            | Error::NotMetrics { .. } => "UnknownOperationException",
            Error::RequestTimeout { .. } => "RequestTimeoutException",
            Error::NotSupported { .. } => "UnsupportedOperation",
            Error::Serialization { .. } | Error::UnsupportedContentType { .. } => {
                "SerializationException"
            }
            Error::Validation { .. } => "ValidationException",
            Error::BodyTooLarge { .. } => "RequestEntityTooLargeException",
            Error::BodyRead { .. } => "SerializationException",
            Error::MissingAuthentication => "MissingAuthenticationTokenException",
            Error::IncompleteSignature { .. } => "IncompleteSignatureException",
            Error::UnrecognizedClient { .. } => "UnrecognizedClientException",
            Error::SignatureMismatch
            | Error::WrongRegion { .. }
            | Error::SignatureExpired { .. }
            | Error::SignatureNotYetCurrent { .. } => "InvalidSignatureException",
            Error::TooManyLongPolls { .. } => "ThrottlingException",
            Error::AccountLongPollsExceeded { .. } => "ActivityWorkerLimitExceeded",
            Error::LogUnavailable { .. }
            | Error::PartitionUnavailable { .. }
            | Error::NodeUnavailable { .. } => "ServiceUnavailable",
            Error::Forwarded { aws_name, .. } => aws_name,
            Error::Engine { aws_name, .. } => aws_name,
            Error::SwfFault { fault, .. } => fault,
            Error::TooManyTags { .. } => "TooManyTags",
            Error::Internal { .. }
            | Error::Credentials { .. }
            | Error::DevModeNotLoopback { .. }
            | Error::ListenAddress { .. }
            | Error::Io { .. } => "InternalFailure",
        }
    }

    /// The `resourceName` member of the answer's body: a `TooManyTags` answered here or
    /// forwarded from the owner.
    pub fn resource_name(&self) -> Option<&str> {
        match self {
            Error::TooManyTags { resource_name, .. } => Some(resource_name),
            Error::Forwarded { resource_name, .. } => resource_name.as_deref(),
            _ => None,
        }
    }

    /// The `__type` of the answer's body: the SWF faults in SWF's own form
    /// (`com.amazonaws.swf.base.model#UnknownResourceFault`; clients read the name after `#`),
    /// everything else by its bare AWS name.
    pub fn wire_type(&self) -> String {
        match self {
            Error::SwfFault { fault, .. } if fault.ends_with("Fault") => {
                format!("com.amazonaws.swf.base.model#{fault}")
            }
            Error::Forwarded { wire_type, .. } => wire_type.clone(),
            other => other.aws_name().to_owned(),
        }
    }

    /// The HTTP status: 400 for client errors (AWS JSON 1.0), 403 for authentication failures
    /// (as AWS answers them), 413 for an oversized body, 5xx only for the server's own faults.
    pub fn status(&self) -> StatusCode {
        match self {
            Error::MissingAuthentication
            | Error::UnrecognizedClient { .. }
            | Error::SignatureMismatch
            | Error::WrongRegion { .. }
            | Error::SignatureExpired { .. }
            | Error::SignatureNotYetCurrent { .. } => StatusCode::FORBIDDEN,
            Error::IncompleteSignature { .. } => StatusCode::BAD_REQUEST,
            Error::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Error::LogUnavailable { .. }
            | Error::PartitionUnavailable { .. }
            | Error::NodeUnavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            Error::Forwarded { status, .. } => {
                StatusCode::from_u16(*status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
            }
            Error::RequestTimeout { .. } => StatusCode::REQUEST_TIMEOUT,
            Error::Engine {
                server_fault: true, ..
            } => StatusCode::INTERNAL_SERVER_ERROR,
            Error::Internal { .. }
            | Error::Credentials { .. }
            | Error::DevModeNotLoopback { .. }
            | Error::ListenAddress { .. }
            | Error::Io { .. } => StatusCode::INTERNAL_SERVER_ERROR,
            _ => StatusCode::BAD_REQUEST,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_errors_are_4xx_and_named_as_aws_does() {
        let cases: Vec<(Error, &str, u16)> = vec![
            (
                Error::UnknownOperation {
                    target: "AWSStepFunctions.Frobnicate".into(),
                },
                "UnknownOperationException",
                400,
            ),
            (Error::SignatureMismatch, "InvalidSignatureException", 403),
            (
                Error::UnrecognizedClient {
                    access_key_id: "AKID".into(),
                },
                "UnrecognizedClientException",
                403,
            ),
            (
                Error::BodyTooLarge { limit_bytes: 1 },
                "RequestEntityTooLargeException",
                413,
            ),
            (
                Error::Engine {
                    aws_name: "ExecutionDoesNotExist",
                    message: "no".into(),
                    server_fault: false,
                },
                "ExecutionDoesNotExist",
                400,
            ),
        ];
        for (error, name, status) in cases {
            assert_eq!(error.aws_name(), name, "{error}");
            assert_eq!(error.status().as_u16(), status, "{error}");
        }
    }

    #[test]
    fn a_cluster_part_that_cannot_answer_is_a_503_naming_it() {
        let node = Error::NodeUnavailable {
            node: "b".into(),
            reason: "no responders".into(),
        };
        assert_eq!(node.aws_name(), "ServiceUnavailable");
        assert_eq!(node.status().as_u16(), 503);
        assert_eq!(
            node.to_string(),
            "node b cannot answer now: no responders; retry"
        );
        let partition = Error::PartitionUnavailable {
            partition: 3,
            reason: "its log is being replayed here".into(),
        };
        assert_eq!(partition.aws_name(), "ServiceUnavailable");
        assert!(partition
            .to_string()
            .starts_with("partition p3 cannot answer now"));
    }

    #[test]
    fn an_internal_failure_shows_the_client_no_detail() {
        let error = Error::Internal {
            detail: "cannot open /srv/statelog/00000000000000000000.wal".into(),
        };
        assert_eq!(error.aws_name(), "InternalFailure");
        assert_eq!(error.status().as_u16(), 500);
        assert_eq!(error.to_string(), INTERNAL_FAILURE_MESSAGE);
        let error = Error::WrongRegion {
            region: "xx-fake-9".into(),
        };
        assert_eq!(error.aws_name(), "InvalidSignatureException");
        assert_eq!(error.status().as_u16(), 403);
        assert!(error
            .to_string()
            .starts_with("Credential should be scoped to a valid region"));
    }

    #[test]
    fn messages_name_what_is_wrong() {
        let error = Error::UnknownOperation {
            target: "AWSStepFunctions.Frobnicate".into(),
        };
        assert!(error.to_string().contains("AWSStepFunctions.Frobnicate"));
        let error = Error::NotSupported {
            operation: "SendTaskSuccess".into(),
            reason: "task tokens come with the activities issue",
        };
        assert!(error.to_string().contains("SendTaskSuccess"));
    }

    /// The typed reasons print what the `reason: String` fields held before, byte for byte
    /// (clients and scripts match these messages).
    #[test]
    fn typed_reasons_print_the_messages_they_replaced() {
        let json_error = || serde_json::from_str::<serde_json::Value>("{").expect_err("not JSON");
        let cases: Vec<(Error, String)> = vec![
            (
                Error::Serialization {
                    operation: "StartExecution".into(),
                    reason: SerializationReason::NotAnObject,
                },
                "cannot read the StartExecution request: the body must be a JSON object".into(),
            ),
            (
                Error::Serialization {
                    operation: "StartExecution".into(),
                    reason: SerializationReason::NotJson(json_error()),
                },
                format!(
                    "cannot read the StartExecution request: the body is not JSON: {}",
                    json_error()
                ),
            ),
            (
                Error::Credentials {
                    path: "creds.json".into(),
                    reason: CredentialsReason::BadAccountId {
                        account_id: "12".into(),
                        access_key_id: "AKID".into(),
                    },
                },
                "credentials file creds.json: account_id \"12\" of AKID must be 12 digits".into(),
            ),
            (
                Error::Credentials {
                    path: "creds.json".into(),
                    reason: CredentialsReason::TooLarge {
                        size_bytes: 70000,
                        limit_bytes: 65536,
                    },
                },
                "credentials file creds.json: 70000 bytes; the limit is 65536".into(),
            ),
            (
                Error::ListenAddress {
                    addr: "nowhere".into(),
                    reason: ListenAddressReason::NoAddress,
                },
                "listen address \"nowhere\": resolves to no address".into(),
            ),
            (
                Error::BodyRead {
                    source: "connection reset".into(),
                },
                "cannot read the request body: connection reset".into(),
            ),
        ];
        for (error, message) in cases {
            assert_eq!(error.to_string(), message);
        }
    }
}
