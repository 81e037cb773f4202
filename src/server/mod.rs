//! server: `statelog serve`, the AWS Step Functions API (AWS JSON 1.0) over HTTP, as a thin
//! adapter over the engine.
//!
//! - [`protocol`]: operation names, input shapes, timestamps.
//! - [`sigv4`]: AWS Signature Version 4 verification (and signing, for clients and tests).
//! - [`credentials`]: the operator's access keys -> (secret, account).
//! - [`backend`]: the [`Backend`] seam the router calls; [`engine_backend`] implements it over
//!   the engine.
//! - [`router`]: request -> authenticated, decoded call -> AWS-shaped answer.
//! - [`swf`]: the Amazon SWF operations: routing, and the activity-worker operations over Step
//!   Functions task lists; [`swf_service`]: every SWF operation on the engine's SWF service.
//! - [`console`]: the web console's compiled-in assets at `/console/`.
//! - [`health`]: `GET /health` (poisoned log) and the start-up disk-room check.
//! - [`connection`]: the accept loop and each connection's time limits; [`listener`]: which
//!   connections are admitted (server-wide and per-peer caps, eviction of slow ones).
//! - [`long_polls`]: the server's and each account's long-poll permits; [`metrics`]:
//!   `/metrics`; [`limits`]: every bound.
//!
//! Invariants: every request is authenticated before it is decoded; the account of the
//! signature is the namespace of everything the call touches; without a credentials file
//! (development mode) the server listens on loopback only; with one, `/metrics` is served only
//! on the metrics listener, never on the API's. Must not: hold engine logic, read the
//! wall clock for signature checks (time comes from the engine's [`Clock`]).

use std::future::Future;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use crate::clock::Clock;

pub mod backend;
pub mod connection;
pub mod console;
pub mod credentials;
pub mod engine_backend;
pub mod error;
pub mod health;
pub mod limits;
pub mod listener;
pub mod long_polls;
mod map_runs;
pub mod metrics;
pub mod protocol;
pub mod router;
pub mod sigv4;
pub mod swf;
pub mod swf_service;
mod versions;

#[cfg(test)]
mod tests;

pub use backend::Backend;
pub use connection::ServeOptions;
pub use credentials::Credentials;
pub use error::Error;
use error::ListenAddressReason;

/// Everything a request handler shares: the backend, the credentials, the clock and counters.
#[derive(Debug)]
pub struct ServerState<B> {
    /// The engine behind the API.
    pub backend: B,
    /// The access keys; `None` is development mode (any well-formed signature, one account).
    pub credentials: Option<Credentials>,
    /// The clock signature times are checked against (the engine's).
    pub clock: Arc<dyn Clock>,
    /// Request and execution counters.
    pub metrics: metrics::Metrics,
    /// Permits for long polls (`GetActivityTask`, SWF `PollForActivityTask`): at most
    /// [`limits::LONG_POLLS_CONCURRENT_MAX`] waiting at once, and
    /// [`limits::LONG_POLLS_PER_ACCOUNT_MAX`] per account.
    pub long_polls: long_polls::LongPolls,
    /// SigV4 signing keys already derived.
    pub signing_keys: sigv4::SigningKeyCache,
}

impl<B: Backend> ServerState<B> {
    /// Shared state for a router over `backend`.
    pub fn new(backend: B, credentials: Option<Credentials>, clock: Arc<dyn Clock>) -> Arc<Self> {
        Arc::new(Self {
            backend,
            credentials,
            clock,
            metrics: metrics::Metrics::default(),
            long_polls: long_polls::LongPolls::default(),
            signing_keys: sigv4::SigningKeyCache::default(),
        })
    }
}

/// Resolves `listen` (`IP:PORT` or `host:port`) and applies the development-mode rule: without
/// credentials every resolved address must be loopback.
pub fn resolve_listen(listen: &str, development_mode: bool) -> Result<SocketAddr, Error> {
    let addrs: Vec<SocketAddr> = listen
        .to_socket_addrs()
        .map_err(|e| Error::ListenAddress {
            addr: listen.to_owned(),
            reason: ListenAddressReason::Resolve(e),
        })?
        .collect();
    let Some(first) = addrs.first().copied() else {
        return Err(Error::ListenAddress {
            addr: listen.to_owned(),
            reason: ListenAddressReason::NoAddress,
        });
    };
    if development_mode {
        if let Some(outside) = addrs.iter().find(|a| !a.ip().is_loopback()) {
            return Err(Error::DevModeNotLoopback {
                addr: outside.to_string(),
            });
        }
    }
    Ok(first)
}

/// Serves `state` on `listener` until `shutdown` resolves, then stops accepting, lets in-flight
/// requests finish, and calls [`Backend::shutdown`]. The default time limits and per-peer cap
/// apply ([`ServeOptions`]); no metrics listener.
pub async fn serve<B: Backend>(
    state: Arc<ServerState<B>>,
    listener: tokio::net::TcpListener,
    connections_max: usize,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    let options = ServeOptions::default().with_connections_max(connections_max);
    serve_with(state, listener, None, options, shutdown).await
}

/// [`serve`] with explicit connection options, and `/metrics` on `metrics_listener` when given.
/// With credentials the API listener never answers `/metrics`; without, it does, and the
/// metrics listener must be on loopback too.
pub async fn serve_with<B: Backend>(
    state: Arc<ServerState<B>>,
    listener: tokio::net::TcpListener,
    metrics_listener: Option<tokio::net::TcpListener>,
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    let development_mode = state.credentials.is_none();
    let local_addr = local_addr_of(&listener, development_mode)?;
    let metrics_addr = match &metrics_listener {
        Some(metrics_listener) => Some(local_addr_of(metrics_listener, development_mode)?),
        None => None,
    };
    let (stop, stopping) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop.send(true);
    });
    tracing::info!(%local_addr, ?metrics_addr, development_mode, "statelog serve listening");
    let api = connection::serve_listener(
        listener,
        router::router_with_console(state.clone(), options.console),
        options.clone(),
        state.clone(),
        stopping.clone(),
    );
    let metrics = async {
        if let Some(metrics_listener) = metrics_listener {
            let metrics_options = options
                .clone()
                .with_connections_max(limits::METRICS_CONNECTIONS_MAX);
            connection::serve_listener(
                metrics_listener,
                router::metrics_router(state.clone()),
                metrics_options,
                state.clone(),
                stopping.clone(),
            )
            .await;
        }
    };
    tokio::join!(api, metrics);
    tracing::info!("stopped accepting; closing the engine");
    state.backend.shutdown().await;
    Ok(())
}

/// The address `listener` is bound to; in development mode it must be loopback.
fn local_addr_of(
    listener: &tokio::net::TcpListener,
    development_mode: bool,
) -> Result<SocketAddr, Error> {
    let local_addr = listener.local_addr().map_err(|source| Error::Io {
        context: "reading the listening address".into(),
        source,
    })?;
    if development_mode && !local_addr.ip().is_loopback() {
        return Err(Error::DevModeNotLoopback {
            addr: local_addr.to_string(),
        });
    }
    Ok(local_addr)
}

/// Resolves on Ctrl-C (SIGINT) or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::error!(%error, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::error!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!("Ctrl-C: shutting down"),
        () = terminate => tracing::info!("SIGTERM: shutting down"),
    }
}
