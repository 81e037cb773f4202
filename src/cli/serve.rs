//! `statelog serve --data-dir DIR --listen ADDR [--credentials FILE]`: the AWS Step Functions
//! API over HTTP (see `statelog::server`). Prints `listening on http://ADDR` on stdout once bound
//! (so scripts may pass port 0 and read the port), logs with `tracing` on stderr (`RUST_LOG`
//! filters, default `info`), and shuts down gracefully on SIGTERM or Ctrl-C. Exit 0 after a
//! clean shutdown, 2 when it cannot start.
//! Must not: hold server logic (that is `statelog::server`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;

use statelog::clock::{Clock, SystemClock};
use statelog::engine::EngineOptions;
use statelog::server::credentials::{Credentials, DEV_ACCOUNT_ID};
use statelog::server::engine_backend::{AccountLayout, EngineBackend};
use statelog::server::health::check_room_for_segment;
use statelog::server::limits::CONNECTIONS_MAX;
use statelog::server::{resolve_listen, serve, shutdown_signal, ServerState};

/// Arguments of `statelog serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The data directory (development mode: the engine's log; with credentials: one
    /// subdirectory per account under `accounts/`).
    #[arg(long, default_value = "./statelog-data")]
    data_dir: PathBuf,
    /// The address to listen on, `IP:PORT` (port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:8083")]
    listen: String,
    /// Access keys (JSON or TOML: key id -> secret_access_key + account_id). Without it the
    /// server runs in development mode: any well-formed signature, one account, loopback only.
    #[arg(long)]
    credentials: Option<PathBuf>,
    /// The region in the ARNs the server issues.
    #[arg(long, default_value = "us-east-1")]
    region: String,
}

/// Runs the server until SIGTERM or Ctrl-C.
pub fn run(args: ServeArgs) -> ExitCode {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
    match run_inner(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("statelog serve: {message}");
            ExitCode::from(2)
        }
    }
}

fn run_inner(args: ServeArgs) -> Result<(), String> {
    let credentials = match &args.credentials {
        Some(path) => Some(Credentials::load(path).map_err(|e| e.to_string())?),
        None => None,
    };
    let development_mode = credentials.is_none();
    let addr = resolve_listen(&args.listen, development_mode).map_err(|e| e.to_string())?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let options = EngineOptions {
        clock: clock.clone(),
        region: args.region.clone(),
        ..EngineOptions::default()
    };
    let layout = if development_mode {
        AccountLayout::Single {
            account_id: DEV_ACCOUNT_ID.to_owned(),
        }
    } else {
        AccountLayout::PerAccount
    };
    // A disk too small for the first log segment stops the server here, not at the first write.
    check_room_for_segment(&args.data_dir, options.segment_size_bytes)?;
    let backend = EngineBackend::new(&args.data_dir, layout, options);
    backend.open_eagerly().map_err(|e| {
        format!(
            "cannot open the data directory {}: {e}",
            args.data_dir.display()
        )
    })?;
    let state = ServerState::new(backend, credentials, clock);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("statelog-serve")
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        let local = listener
            .local_addr()
            .map_err(|e| format!("cannot read the bound address: {e}"))?;
        println!("listening on http://{local}");
        if development_mode {
            tracing::warn!("development mode: no --credentials, any well-formed signature is accepted (account {DEV_ACCOUNT_ID})");
        }
        serve(state, listener, CONNECTIONS_MAX, shutdown_signal())
            .await
            .map_err(|e| e.to_string())
    })
}
