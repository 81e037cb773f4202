//! connection: accepting TCP connections and serving HTTP/1.1 on each, within time limits.
//!
//! Owns the accept loop of one listener and the task of each connection. A connection is
//! closed when:
//! - it sends no byte of a request, and takes no byte of an answer, for
//!   [`ServeOptions::keep_alive_idle_timeout_ms`];
//! - a head takes longer than [`ServeOptions::header_read_timeout_ms`] from its first byte;
//! - a body takes longer than [`ServeOptions::request_body_timeout_ms`] from the end of its
//!   head (it is answered `RequestTimeoutException` first).
//!
//! Admission and eviction are [`ConnectionTable`]'s.
//!
//! Invariants: every connection task holds its table slot until it ends; a timeout or an
//! eviction drops the connection (its socket closes) without waiting for the client. Must not:
//! parse requests (hyper does) or answer them (the router does).

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::Router;
use hyper::body::{Bytes, Frame, Incoming, SizeHint};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::{Instant, Sleep};
use tower::ServiceExt;

use super::limits;
use super::listener::{Admission, Connection, ConnectionTable, Phase, Slot};
use super::metrics::{CloseReason, Metrics};
use super::{Backend, ServerState};

/// How long to back off after an accept error (e.g. out of file descriptors) before trying again.
const ACCEPT_ERROR_BACKOFF_MS: u64 = 100;

/// How long past its body deadline a request may still be answering before its connection is
/// dropped: the time to write the `RequestTimeoutException`.
const BODY_TIMEOUT_ANSWER_GRACE_MS: u64 = 1_000;

/// How one listener admits connections and how long it waits for each part of a request.
/// Every value is above zero, and `connections_per_peer_max <= connections_max`.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The most connections open at once ([`limits::CONNECTIONS_MAX`]).
    pub connections_max: usize,
    /// The most connections of one peer address ([`limits::CONNECTIONS_PER_PEER_MAX`]).
    pub connections_per_peer_max: usize,
    /// The wait for the first byte of a request ([`limits::KEEP_ALIVE_IDLE_TIMEOUT_MS`]).
    pub keep_alive_idle_timeout_ms: u64,
    /// The time a head may take from its first byte ([`limits::HEADER_READ_TIMEOUT_MS`]).
    pub header_read_timeout_ms: u64,
    /// The time a body may take after its head ([`limits::REQUEST_BODY_TIMEOUT_MS`]).
    pub request_body_timeout_ms: u64,
    /// How long a shutdown waits for requests in progress ([`limits::SHUTDOWN_GRACE_MS`]).
    pub shutdown_grace_ms: u64,
    /// Whether the web console is served at `/console/` (`serve --no-console` turns it off).
    pub console: bool,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            connections_max: limits::CONNECTIONS_MAX,
            connections_per_peer_max: limits::CONNECTIONS_PER_PEER_MAX,
            keep_alive_idle_timeout_ms: limits::KEEP_ALIVE_IDLE_TIMEOUT_MS,
            header_read_timeout_ms: limits::HEADER_READ_TIMEOUT_MS,
            request_body_timeout_ms: limits::REQUEST_BODY_TIMEOUT_MS,
            shutdown_grace_ms: limits::SHUTDOWN_GRACE_MS,
            console: true,
        }
    }
}

impl ServeOptions {
    /// These options with room for `connections_max` connections (a peer's cap shrinks to fit).
    pub fn with_connections_max(self, connections_max: usize) -> Self {
        Self {
            connections_max,
            connections_per_peer_max: self.connections_per_peer_max.min(connections_max),
            ..self
        }
    }

    /// When a connection in `phase` since `since` is overdue, and why.
    fn deadline(&self, phase: Phase, since: Instant) -> Option<(Instant, CloseReason)> {
        let after = |ms: u64| since + Duration::from_millis(ms);
        match phase {
            Phase::Idle => Some((
                after(self.keep_alive_idle_timeout_ms),
                CloseReason::IdleTimeout,
            )),
            Phase::Head => Some((
                after(self.header_read_timeout_ms),
                CloseReason::HeaderTimeout,
            )),
            Phase::Body => Some((
                after(self.request_body_timeout_ms + BODY_TIMEOUT_ANSWER_GRACE_MS),
                CloseReason::BodyTimeout,
            )),
            Phase::Handling => None,
        }
    }
}

/// The error a request body reports when it did not arrive within its time.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within {timeout_ms} ms")]
pub struct BodyTimeout {
    /// The limit that passed.
    pub timeout_ms: u64,
}

/// Serves `router` on `listener` until `shutdown` turns true; then stops accepting, lets the
/// connections finish their requests for up to [`ServeOptions::shutdown_grace_ms`], and drops
/// the rest.
pub(crate) async fn serve_listener<B: Backend>(
    listener: TcpListener,
    router: Router,
    options: ServeOptions,
    state: Arc<ServerState<B>>,
    mut shutdown: watch::Receiver<bool>,
) {
    let table = ConnectionTable::new(options.connections_max, options.connections_per_peer_max);
    let options = Arc::new(options);
    let mut tasks = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
            _ = shutdown.wait_for(|stop| *stop) => break,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                tracing::warn!(%error, "accept failed; backing off");
                tokio::time::sleep(Duration::from_millis(ACCEPT_ERROR_BACKOFF_MS)).await;
                continue;
            }
        };
        let Some(slot) = admit(&table, peer, &state.metrics, &mut shutdown).await else {
            // Refused, or shutting down: dropping the stream closes it.
            continue;
        };
        // Small JSON answers should not wait for Nagle's algorithm.
        let _ = stream.set_nodelay(true);
        tasks.spawn(drive(
            stream,
            slot,
            router.clone(),
            options.clone(),
            state.clone(),
            shutdown.clone(),
        ));
    }
    drop(listener);
    let grace = Duration::from_millis(options.shutdown_grace_ms);
    let finished =
        tokio::time::timeout(grace, async { while tasks.join_next().await.is_some() {} }).await;
    if finished.is_err() {
        tracing::warn!(
            open = tasks.len(),
            grace_ms = options.shutdown_grace_ms,
            "shutdown grace passed; closing the connections still open"
        );
        tasks.shutdown().await;
    }
}

/// A slot for a connection from `peer`: at once, after evicting a slow connection, or once a
/// busy one finishes. `None` when the peer is at its cap with every connection busy, or when
/// the server shuts down while waiting.
async fn admit(
    table: &ConnectionTable,
    peer: SocketAddr,
    metrics: &Metrics,
    shutdown: &mut watch::Receiver<bool>,
) -> Option<Slot> {
    loop {
        match table.try_admit(peer.ip()) {
            Admission::Admitted(slot) => return Some(slot),
            Admission::PeerFull => {
                tracing::info!(%peer, "peer at its connection cap with every connection busy; closing the new one");
                metrics.record_connection_closed(CloseReason::PeerCap);
                return None;
            }
            Admission::Full => {
                // Every connection is inside a request: wait, as the kernel's backlog does.
                tokio::select! {
                    () = table.changed() => {}
                    _ = shutdown.wait_for(|stop| *stop) => return None,
                }
            }
        }
    }
}

/// Serves one connection until the client closes it, a timeout passes, the table evicts it, or
/// the shutdown grace ends.
async fn drive<B: Backend>(
    stream: TcpStream,
    slot: Slot,
    router: Router,
    options: Arc<ServeOptions>,
    state: Arc<ServerState<B>>,
    mut shutdown: watch::Receiver<bool>,
) {
    let metrics = &state.metrics;
    let connection = slot.connection().clone();
    let io = TokioIo::new(TrackedStream {
        inner: stream,
        connection: connection.clone(),
    });
    let body_timeout_ms = options.request_body_timeout_ms;
    let service_connection = connection.clone();
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let connection = service_connection.clone();
        connection.on_head();
        let request = request
            .map(|body| Body::new(DeadlineBody::new(body, connection.clone(), body_timeout_ms)));
        let answer = router.clone().oneshot(request);
        async move {
            let response = answer.await;
            connection.on_answered();
            response
        }
    });
    let mut served = pin!(hyper::server::conn::http1::Builder::new().serve_connection(io, service));
    metrics.record_connection_opened();
    let mut shutting_down = *shutdown.borrow();
    if shutting_down {
        served.as_mut().graceful_shutdown();
    }
    let reason = loop {
        let deadline = options.deadline(connection.phase(), connection.phase_since());
        tokio::select! {
            result = served.as_mut() => {
                if let Err(error) = result {
                    tracing::debug!(peer = %connection.peer(), %error, "connection ended with an error");
                }
                break CloseReason::Closed;
            }
            () = connection.evicted() => break CloseReason::Evicted,
            // An answer starts a new idle period: compute its deadline.
            () = connection.answered() => {}
            () = sleep_until(deadline.map(|(at, _)| at)) => {
                let now = Instant::now();
                if let Some((at, reason)) = options.deadline(connection.phase(), connection.phase_since()) {
                    if at <= now {
                        break reason;
                    }
                }
            }
            _ = shutdown.wait_for(|stop| *stop), if !shutting_down => {
                shutting_down = true;
                served.as_mut().graceful_shutdown();
            }
        }
    };
    if reason != CloseReason::Closed {
        tracing::debug!(peer = %connection.peer(), reason = reason.as_str(), "closing a connection");
    }
    metrics.record_connection_closed(reason);
    // Locals drop in reverse order: the connection (and its socket) closes before the slot
    // is given back.
}

/// Sleeps until `at`, or for ever when there is no deadline.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// A TCP stream that tells its connection when request bytes arrive and answer bytes leave.
struct TrackedStream {
    inner: TcpStream,
    connection: Arc<Connection>,
}

impl AsyncRead for TrackedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let filled_before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > filled_before {
            self.connection.on_bytes_read();
        }
        polled
    }
}

impl AsyncWrite for TrackedStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.connection.on_bytes_written();
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.connection.on_bytes_written();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// A request body that fails with [`BodyTimeout`] when it has not ended by its deadline, and
/// tells its connection when it ends.
struct DeadlineBody {
    inner: Incoming,
    deadline: Pin<Box<Sleep>>,
    timeout_ms: u64,
    connection: Arc<Connection>,
}

impl DeadlineBody {
    fn new(inner: Incoming, connection: Arc<Connection>, timeout_ms: u64) -> Self {
        Self {
            inner,
            deadline: Box::pin(tokio::time::sleep(Duration::from_millis(timeout_ms))),
            timeout_ms,
            connection,
        }
    }
}

impl hyper::body::Body for DeadlineBody {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(None) => {
                self.connection.on_body_end();
                Poll::Ready(None)
            }
            Poll::Ready(Some(frame)) => Poll::Ready(Some(frame.map_err(Into::into))),
            Poll::Pending => match self.deadline.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyTimeout {
                    timeout_ms: self.timeout_ms,
                })))),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
