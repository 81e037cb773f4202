//! forward: node-to-node calls over NATS request/reply on `statelog.node.<name>.call`.
//!
//! The receiving node has already authenticated the client's request; it sends the owner a
//! [`ForwardedCall`] (the operation, the JSON body, the caller) and the owner answers a
//! [`ForwardedAnswer`]: the JSON output, the AWS-shaped error, or [`ForwardedAnswer::NotOwner`]
//! when it does not own the partition (any more). [`forward`] then asks the leases again who
//! owns it and sends again, at most [`FORWARD_ATTEMPTS_MAX`] sends in all.
//!
//! The messages are JSON (the body is JSON already; the envelope is a few fields). The
//! subject is internal: only nodes reach NATS, so there is no second client auth path.
//!
//! Invariants: an answer is one of the three shapes or the call fails with a typed
//! [`ForwardError`]; a call over the connected server's `max_payload` is refused before it
//! is sent. Must not: retry an answer other than `NotOwner` (a call may have committed).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use serde::{Deserialize, Serialize};
use statelog_cluster::partition::PartitionIndex;

use crate::server::limits::{
    FORWARD_ATTEMPTS_MAX, FORWARD_MESSAGE_BYTES_MAX, FORWARD_RETRY_WAIT_MS, FORWARD_TIMEOUT_MS,
};

/// The subject node `node` answers forwarded calls on.
pub fn call_subject(node: &str) -> String {
    format!("statelog.node.{node}.call")
}

/// An authenticated call sent to the node that owns its partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForwardedCall {
    /// The partition the sender routed it to (`None`: the catalog's authority or a spanning
    /// call's part, which the receiver checks by the operation).
    pub partition: Option<u32>,
    /// The operation's AWS name (`StartExecution`, `PollForActivityTask`).
    pub operation: String,
    /// The request body, JSON text (carried as JSON, not as an escaped string, so a body's
    /// size crosses NATS unchanged; a body that is not JSON is never forwarded).
    #[serde(with = "raw_json")]
    pub input: String,
    /// The caller's account (the namespace of everything the call touches).
    pub account_id: String,
    /// The region the request was signed for.
    pub region: String,
    /// The access key id the request was signed with.
    pub access_key_id: String,
}

/// What the owner answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case", deny_unknown_fields)]
pub enum ForwardedAnswer {
    /// The call's JSON output.
    Output {
        /// JSON text (carried as JSON, like a call's input; read back through a JSON value,
        /// as serde buffers the members of a tagged enum).
        #[serde(
            serialize_with = "raw_json::serialize",
            deserialize_with = "raw_json::deserialize_buffered"
        )]
        output: String,
    },
    /// The call was refused, as AWS names it.
    Error {
        /// The AWS error name (`ExecutionDoesNotExist`).
        aws_name: String,
        /// The message.
        message: String,
        /// The HTTP status.
        status: u16,
        /// The `resourceName` member AWS adds to `TooManyTags`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resource_name: Option<String>,
    },
    /// The receiver does not own `partition` (it never did, or lost it).
    NotOwner {
        /// The partition.
        partition: u32,
    },
}

/// A JSON text field written into the message as the JSON it is, and read back as text.
mod raw_json {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::value::RawValue;

    pub fn serialize<S: Serializer>(text: &str, serializer: S) -> Result<S::Ok, S::Error> {
        let raw: &RawValue = serde_json::from_str(text).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
        let raw: Box<RawValue> = Deserialize::deserialize(deserializer)?;
        Ok(raw.get().to_owned())
    }

    /// [`deserialize`] where the deserializer buffers (a member of an internally tagged enum
    /// cannot be read as a raw value).
    pub fn deserialize_buffered<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<String, D::Error> {
        let value: serde_json::Value = Deserialize::deserialize(deserializer)?;
        Ok(value.to_string())
    }
}

/// Why a forwarded call has no answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ForwardError {
    /// The leases name no owner of the partition now.
    #[error("partition p{partition} has no owner now")]
    NoOwner {
        /// The partition.
        partition: u32,
    },
    /// Every send was answered `NotOwner`.
    #[error("partition p{partition}: {attempts} nodes answered that they do not own it")]
    OwnerMoved {
        /// The partition.
        partition: u32,
        /// Sends made ([`FORWARD_ATTEMPTS_MAX`]).
        attempts: u32,
    },
    /// The call is larger than the connected NATS server accepts.
    #[error("a forwarded {operation} of {size_bytes} bytes is over the limit of {limit_bytes} bytes (FORWARD_MESSAGE_BYTES_MAX or the NATS server's max_payload)")]
    TooLarge {
        /// The operation.
        operation: String,
        /// Its size.
        size_bytes: usize,
        /// The smaller of the two limits.
        limit_bytes: usize,
    },
    /// The request failed (no node listens on the subject, the connection is down).
    #[error("node {node}: the forwarded call failed: {source}")]
    Request {
        /// The node asked.
        node: String,
        /// The client's error.
        #[source]
        source: async_nats::RequestError,
    },
    /// The node did not answer in time.
    #[error("node {node}: no answer within {timeout_ms} ms")]
    TimedOut {
        /// The node asked.
        node: String,
        /// The bound.
        timeout_ms: u64,
    },
    /// The node's answer is not a [`ForwardedAnswer`].
    #[error("node {node}: the answer does not read: {source}")]
    Corrupt {
        /// The node asked.
        node: String,
        /// The decoder's error.
        #[source]
        source: serde_json::Error,
    },
}

/// Who owns a partition now, as this node's view of the leases says (`None`: no one).
pub type Resolve = dyn Fn(PartitionIndex) -> Option<String> + Send + Sync;

/// Sends `call` to the owner of `partition` as `resolve` names it, re-resolving after each
/// `NotOwner`, at most [`FORWARD_ATTEMPTS_MAX`] sends. Answers the owner's output or error.
pub async fn forward(
    client: &async_nats::Client,
    resolve: &Resolve,
    partition: PartitionIndex,
    call: &ForwardedCall,
) -> Result<ForwardedAnswer, ForwardError> {
    forward_within(client, resolve, partition, call, FORWARD_TIMEOUT_MS).await
}

/// [`forward`] with its own bound on each send.
pub async fn forward_within(
    client: &async_nats::Client,
    resolve: &Resolve,
    partition: PartitionIndex,
    call: &ForwardedCall,
    timeout_ms: u64,
) -> Result<ForwardedAnswer, ForwardError> {
    let bytes = serde_json::to_vec(call).map_err(|source| ForwardError::Corrupt {
        node: "(this node)".into(),
        source,
    })?;
    let limit_bytes = FORWARD_MESSAGE_BYTES_MAX.min(client.server_info().max_payload);
    if bytes.len() > limit_bytes {
        return Err(ForwardError::TooLarge {
            operation: call.operation.clone(),
            size_bytes: bytes.len(),
            limit_bytes,
        });
    }
    let payload = bytes;
    for attempt in 1..=FORWARD_ATTEMPTS_MAX {
        let node = resolve(partition).ok_or(ForwardError::NoOwner {
            partition: partition.0,
        })?;
        let request = client.request(call_subject(&node), payload.clone().into());
        let message = match tokio::time::timeout(Duration::from_millis(timeout_ms), request).await {
            Ok(Ok(message)) => message,
            Ok(Err(source)) => return Err(ForwardError::Request { node, source }),
            Err(_) => return Err(ForwardError::TimedOut { node, timeout_ms }),
        };
        let answer: ForwardedAnswer =
            serde_json::from_slice(&message.payload).map_err(|source| ForwardError::Corrupt {
                node: node.clone(),
                source,
            })?;
        match answer {
            ForwardedAnswer::NotOwner { .. } if attempt < FORWARD_ATTEMPTS_MAX => {
                tokio::time::sleep(Duration::from_millis(FORWARD_RETRY_WAIT_MS)).await;
            }
            ForwardedAnswer::NotOwner { .. } => {}
            answered => return Ok(answered),
        }
    }
    Err(ForwardError::OwnerMoved {
        partition: partition.0,
        attempts: FORWARD_ATTEMPTS_MAX,
    })
}

/// A boxed answer.
pub type Answering = Pin<Box<dyn Future<Output = ForwardedAnswer> + Send>>;

/// What a node runs forwarded calls with: it answers [`ForwardedAnswer::NotOwner`] for a
/// partition it does not own, and otherwise runs the call through the same dispatch as a
/// client's.
pub trait CallHandler: Send + Sync + 'static {
    /// Runs one call.
    fn handle(&self, call: ForwardedCall) -> Answering;
}

impl<F> CallHandler for F
where
    F: Fn(ForwardedCall) -> Answering + Send + Sync + 'static,
{
    fn handle(&self, call: ForwardedCall) -> Answering {
        self(call)
    }
}

/// A node answering forwarded calls on its subject, until dropped or stopped.
#[derive(Debug)]
pub struct Responder {
    task: tokio::task::JoinHandle<()>,
}

impl Responder {
    /// Subscribes `statelog.node.<node>.call` on `client` and answers each call with
    /// `handler`, each on a task of its own (a long poll does not hold up the others). Runs
    /// on the current tokio runtime.
    pub async fn start(
        client: async_nats::Client,
        node: &str,
        handler: Arc<dyn CallHandler>,
    ) -> Result<Self, async_nats::SubscribeError> {
        let mut calls = client.subscribe(call_subject(node)).await?;
        // The subscription is registered at the server once the flush returns, so a call sent
        // after `start` returns is heard.
        let _ = client.flush().await;
        let task = tokio::spawn(async move {
            while let Some(message) = calls.next().await {
                let Some(reply) = message.reply.clone() else {
                    continue;
                };
                let client = client.clone();
                let handler = handler.clone();
                tokio::spawn(async move {
                    let answer = match serde_json::from_slice::<ForwardedCall>(&message.payload) {
                        Ok(call) => handler.handle(call).await,
                        Err(error) => ForwardedAnswer::Error {
                            aws_name: "InternalFailure".into(),
                            message: format!("the forwarded call does not read: {error}"),
                            status: 500,
                            resource_name: None,
                        },
                    };
                    let bytes = match serde_json::to_vec(&answer) {
                        Ok(bytes) if bytes.len() <= FORWARD_MESSAGE_BYTES_MAX => bytes,
                        Ok(bytes) => too_large_answer(bytes.len()),
                        Err(error) => {
                            internal_answer(&format!("cannot encode the answer: {error}"))
                        }
                    };
                    // A sender that gave up has no one to read the answer; nothing to do.
                    let _ = client.publish(reply, bytes.into()).await;
                });
            }
        });
        Ok(Self { task })
    }

    /// Stops answering.
    pub fn stop(self) {
        self.task.abort();
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn internal_answer(message: &str) -> Vec<u8> {
    let answer = ForwardedAnswer::Error {
        aws_name: "InternalFailure".into(),
        message: message.to_owned(),
        status: 500,
        resource_name: None,
    };
    // A three-field value of strings and a number always encodes.
    serde_json::to_vec(&answer).unwrap_or_default()
}

fn too_large_answer(size_bytes: usize) -> Vec<u8> {
    internal_answer(&format!(
        "the answer of {size_bytes} bytes is over FORWARD_MESSAGE_BYTES_MAX ({FORWARD_MESSAGE_BYTES_MAX})"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;
    use statelog_nats::testing::TestCluster;

    #[test]
    fn bodies_and_answers_cross_as_json_not_as_escaped_strings() {
        let body = r#"{"definition":"{\"StartAt\":\"P\"}","name":"m"}"#;
        let call = ForwardedCall {
            partition: Some(0),
            operation: "CreateStateMachine".into(),
            input: body.into(),
            account_id: "000000000000".into(),
            region: "us-east-1".into(),
            access_key_id: "AKID".into(),
        };
        let wire = serde_json::to_string(&call).expect("encodes");
        assert!(wire.contains(&format!(r#""input":{body}"#)), "{wire}");
        let back: ForwardedCall = serde_json::from_str(&wire).expect("reads");
        assert_eq!(back, call);
        let answer = ForwardedAnswer::Output {
            output: r#"{"executionArn":"arn:x","startDate":1.5}"#.into(),
        };
        let wire = serde_json::to_string(&answer).expect("encodes");
        assert!(wire.contains(r#""output":{"executionArn""#), "{wire}");
        assert_eq!(
            serde_json::from_str::<ForwardedAnswer>(&wire).expect("reads"),
            answer
        );
        // A body that is not JSON is never sent (the receiving node answers it itself).
        let mut bad = call;
        bad.input = "not json".into();
        assert!(serde_json::to_string(&bad).is_err());
    }
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// Who owns what, as the nodes themselves know it (their hosts' tables).
    type Owners = Arc<Mutex<BTreeMap<u32, String>>>;

    fn call(operation: &str, partition: u32) -> ForwardedCall {
        ForwardedCall {
            partition: Some(partition),
            operation: operation.into(),
            input: r#"{"executionArn":"arn:aws:states:us-east-1:123456789012:execution:m:e"}"#
                .into(),
            account_id: "123456789012".into(),
            region: "us-east-1".into(),
            access_key_id: "AKIDALPHA".into(),
        }
    }

    /// A node's handler: `NotOwner` unless the table names it; `Fail` answers an AWS error;
    /// anything else answers who ran what for whom.
    fn handler(node: &'static str, owners: Owners) -> Arc<dyn CallHandler> {
        Arc::new(move |call: ForwardedCall| -> Answering {
            let owners = owners.clone();
            Box::pin(async move {
                let partition = call.partition.unwrap_or(0);
                if owners.lock().get(&partition).map(String::as_str) != Some(node) {
                    return ForwardedAnswer::NotOwner { partition };
                }
                if call.operation == "Fail" {
                    return ForwardedAnswer::Error {
                        aws_name: "ExecutionDoesNotExist".into(),
                        message: "execution does not exist".into(),
                        status: 400,
                        resource_name: None,
                    };
                }
                ForwardedAnswer::Output {
                    output: serde_json::json!({
                        "node": node,
                        "operation": call.operation,
                        "account": call.account_id,
                        "input": call.input,
                    })
                    .to_string(),
                }
            })
        })
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime")
    }

    #[test]
    fn calls_reach_the_owner_and_follow_a_moved_partition() {
        let Some(cluster) = TestCluster::start_or_skip(3) else {
            return;
        };
        runtime().block_on(async {
            let owners: Owners = Arc::new(Mutex::new(BTreeMap::from([
                (1, "a".to_string()),
                (2, "b".to_string()),
            ])));
            // Each node on its own server of the cluster; the sender on the third.
            let client_a = async_nats::connect(cluster.url(0)).await.expect("connect a");
            let client_b = async_nats::connect(cluster.url(1)).await.expect("connect b");
            let sender = async_nats::connect(cluster.url(2)).await.expect("connect sender");
            let _a = Responder::start(client_a, "a", handler("a", owners.clone()))
                .await
                .expect("a answers");
            let _b = Responder::start(client_b, "b", handler("b", owners.clone()))
                .await
                .expect("b answers");
            // Interest crosses the routes to the sender's server before the first call.
            wait_for_responders(&sender, &["a", "b"]).await;

            // The owner runs it, with the call as sent.
            let truth = owners.clone();
            let resolve = move |p: PartitionIndex| truth.lock().get(&p.0).cloned();
            let answer = forward(&sender, &resolve, PartitionIndex(1), &call("DescribeExecution", 1))
                .await
                .expect("answered");
            let ForwardedAnswer::Output { output } = answer else {
                panic!("{answer:?}");
            };
            let output: serde_json::Value = serde_json::from_str(&output).expect("json");
            assert_eq!(output["node"], "a");
            assert_eq!(output["operation"], "DescribeExecution");
            assert_eq!(output["account"], "123456789012");
            assert_eq!(output["input"], call("DescribeExecution", 1).input);

            // An AWS error comes back as it was answered, not retried.
            let answer = forward(&sender, &resolve, PartitionIndex(2), &call("Fail", 2))
                .await
                .expect("answered");
            assert_eq!(
                answer,
                ForwardedAnswer::Error {
                    aws_name: "ExecutionDoesNotExist".into(),
                    message: "execution does not exist".into(),
                    status: 400,
                    resource_name: None,
                }
            );

            // The sender's view is stale once: it asks a, a says NotOwner, the sender
            // re-resolves and b answers.
            let asked = Arc::new(AtomicU32::new(0));
            let stale = {
                let asked = asked.clone();
                move |_: PartitionIndex| {
                    let first = asked.fetch_add(1, Ordering::SeqCst) == 0;
                    Some(if first { "a" } else { "b" }.to_string())
                }
            };
            let answer = forward(&sender, &stale, PartitionIndex(2), &call("StopExecution", 2))
                .await
                .expect("answered");
            assert!(
                matches!(&answer, ForwardedAnswer::Output { output } if output.contains("\"node\":\"b\"")),
                "{answer:?}"
            );
            assert_eq!(asked.load(Ordering::SeqCst), 2);

            // No node owns it (the view keeps naming a): bounded, then a typed error.
            owners.lock().remove(&1);
            let always_a = |_: PartitionIndex| Some("a".to_string());
            match forward(&sender, &always_a, PartitionIndex(1), &call("DescribeExecution", 1))
                .await
            {
                Err(ForwardError::OwnerMoved {
                    partition,
                    attempts,
                }) => {
                    assert_eq!(partition, 1);
                    assert_eq!(attempts, FORWARD_ATTEMPTS_MAX);
                }
                other => panic!("{other:?}"),
            }

            // The leases name no one.
            let nobody = |_: PartitionIndex| None;
            assert!(matches!(
                forward(&sender, &nobody, PartitionIndex(1), &call("DescribeExecution", 1)).await,
                Err(ForwardError::NoOwner { partition: 1 })
            ));

            // A node that does not listen: the request fails, typed, naming it.
            let ghost = |_: PartitionIndex| Some("ghost".to_string());
            match forward(&sender, &ghost, PartitionIndex(1), &call("DescribeExecution", 1)).await
            {
                Err(ForwardError::Request { node, .. }) => assert_eq!(node, "ghost"),
                other => panic!("{other:?}"),
            }

            // A call over the server's max_payload (or the forwarding limit) is refused
            // before it is sent.
            let mut huge = call("StartExecution", 2);
            let limit = FORWARD_MESSAGE_BYTES_MAX.min(sender.server_info().max_payload);
            huge.input = format!("\"{}\"", "x".repeat(limit + 1));
            assert!(matches!(
                forward(&sender, &resolve, PartitionIndex(2), &huge).await,
                Err(ForwardError::TooLarge { .. })
            ));
        });
    }

    /// Waits until both nodes' subscriptions are known at the sender's server: a call to each
    /// is answered (with anything: `NotOwner` for partition 99 is fine).
    async fn wait_for_responders(sender: &async_nats::Client, nodes: &[&str]) {
        let probe = serde_json::to_vec(&call("Probe", 99)).expect("encodes");
        for node in nodes {
            let mut attempts = 0;
            loop {
                match sender
                    .request(call_subject(node), probe.clone().into())
                    .await
                {
                    Ok(_) => break,
                    Err(error) => {
                        attempts += 1;
                        assert!(attempts < 200, "{node} never answered: {error}");
                        tokio::task::yield_now().await;
                        let _ = sender.flush().await;
                    }
                }
            }
        }
    }
}
