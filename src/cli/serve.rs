//! `statelog serve --data-dir DIR --listen ADDR [--credentials FILE] [--metrics-listen ADDR]
//! [--swf-open-executions-max N] [--swf-task-list-pending-max N] [--mock-config FILE]
//! [--connections FILE] [--objects-dir DIR | --s3-endpoint URL] [--no-console]`:
//! the AWS Step Functions API over HTTP (see `statelog::server`). With `--nats URLS --node
//! NAME` (feature `cluster`) the server is one node of a cluster over NATS JetStream
//! (`statelog::cluster::serve`): its partitions' logs are JetStream streams, and any call is
//! answered or forwarded to the node that owns what it touches. Prints `listening on
//! http://ADDR` on stdout once bound (so scripts may pass port 0 and read the port), then
//! `metrics on http://ADDR/metrics` when a metrics listener is bound; logs with `tracing` on
//! stderr (`RUST_LOG` filters, default `info`), and shuts down gracefully on SIGTERM or Ctrl-C.
//! The HTTP Task (`arn:aws:states:::http:invoke`) is always served; its connections come from
//! `--connections FILE` (none without it: every HTTP Task then fails naming its connection).
//! Exit 0 after a clean shutdown, 2 when it cannot start (a malformed connections file too).
//! Must not: hold server logic (that is `statelog::server`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;

use statelog::clock::{Clock, SystemClock};
use statelog::engine::http_task::{Connections, HttpTask};
use statelog::engine::items::{ItemSources, ObjectStoreConfig, ObjectStores};
use statelog::engine::{EngineOptions, MockConfig};
use statelog::server::credentials::{Credentials, DEV_ACCOUNT_ID};
use statelog::server::engine_backend::{AccountLayout, EngineBackend};
use statelog::server::health::check_room_for_segment;
use statelog::server::limits::{METRICS_LISTEN_DEFAULT, RUNTIME_SHUTDOWN_MS};
use statelog::server::{resolve_listen, serve_with, shutdown_signal, ServeOptions, ServerState};

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
    /// Where to serve `GET /metrics` (`IP:PORT`, or `off`). With --credentials metrics are
    /// served only here, never on --listen; the default is 127.0.0.1:9464. Without
    /// credentials /metrics is also on --listen, and this listener opens only when named.
    #[arg(long)]
    metrics_listen: Option<String>,
    /// The most Amazon SWF workflow executions open at once in one domain (SWF's quota:
    /// 100,000); a start past it answers `LimitExceededFault`. Each open execution is held in
    /// memory.
    #[arg(long, default_value_t = statelog::engine::limits::SWF_OPEN_RUNS_PER_DOMAIN_MAX,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    swf_open_executions_max: usize,
    /// The most Amazon SWF activity tasks waiting in one task list; a ScheduleActivityTask into
    /// a full list fails with `ACTIVITY_CREATION_RATE_EXCEEDED` (the decider sees a
    /// `ScheduleActivityTaskFailed` event and may schedule it again later).
    #[arg(long, default_value_t = statelog::engine::limits::SWF_TASK_LIST_PENDING_MAX,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    swf_task_list_pending_max: usize,
    /// A Step Functions Local mock configuration (`MockConfigFile.json`): StartExecution with
    /// `stateMachineArn#TestCase` runs that test case, its mocked Task states answered from
    /// the file. Read and checked at startup; a malformed file stops the server, naming the
    /// place of the fault.
    #[arg(long, value_name = "FILE")]
    mock_config: Option<PathBuf>,
    /// The HTTP Task's connections (JSON: connection name -> authorization, see
    /// docs/http-task.md). A Task's `Authentication.ConnectionArn` names one by its name
    /// segment. Read once at startup; a malformed file stops the server.
    #[arg(long)]
    connections: Option<PathBuf>,
    /// Do not serve the web console at /console/ (its paths then answer 404).
    #[arg(long)]
    no_console: bool,
    /// Where a Distributed Map's `ItemReader` reads and its `ResultWriter` writes: a bucket is
    /// a directory under DIR (default `DATA_DIR/objects`, created when missing).
    #[arg(long, value_name = "DIR", conflicts_with = "s3_endpoint")]
    objects_dir: Option<PathBuf>,
    /// Read and write a Distributed Map's items and results at this S3-compatible endpoint
    /// instead (path-style; signed for --region with AWS_ACCESS_KEY_ID and
    /// AWS_SECRET_ACCESS_KEY; `http://` allowed).
    #[arg(long, value_name = "URL")]
    s3_endpoint: Option<String>,
    /// Run as one node of a cluster over these NATS servers (comma-separated
    /// nats://HOST:PORT; `statelog cluster init` first). A cluster serves one account: the
    /// development account, or the one account of --credentials.
    #[cfg(feature = "cluster")]
    #[arg(long, value_delimiter = ',', requires = "node")]
    nats: Vec<String>,
    /// This node's name in the cluster (1-64 of A-Z a-z 0-9 - _), unique among its nodes.
    #[cfg(feature = "cluster")]
    #[arg(long)]
    node: Option<String>,
    /// The cluster lease's length in ms: a dead node's partitions move after about this long.
    #[cfg(feature = "cluster")]
    #[arg(long, default_value_t = statelog_cluster::limits::LEASE_MS,
          value_parser = clap::builder::RangedU64ValueParser::<u64>::new()
              .range(statelog_cluster::limits::LEASE_MS_MIN..=statelog_cluster::limits::LEASE_MS_MAX))]
    lease_ms: u64,
    /// Replicas of each partition's JetStream stream (3 needs 3 NATS servers).
    #[cfg(feature = "cluster")]
    #[arg(long, default_value_t = 3,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=5))]
    replicas: usize,
}

/// The metrics listener's address: as named, the default with credentials, none without, or
/// none when named `off`.
fn metrics_listen_of(named: Option<&str>, development_mode: bool) -> Option<&str> {
    match named {
        Some("off") => None,
        Some(addr) => Some(addr),
        None if development_mode => None,
        None => Some(METRICS_LISTEN_DEFAULT),
    }
}

/// The API listener and, when one is asked for, the metrics listener, bound.
struct Bound {
    listener: tokio::net::TcpListener,
    metrics_listener: Option<tokio::net::TcpListener>,
    local: std::net::SocketAddr,
}

impl Bound {
    async fn bind(
        addr: std::net::SocketAddr,
        metrics_addr: Option<std::net::SocketAddr>,
    ) -> Result<Self, String> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        let local = listener
            .local_addr()
            .map_err(|e| format!("cannot read the bound address: {e}"))?;
        let metrics_listener = match metrics_addr {
            Some(metrics_addr) => Some(tokio::net::TcpListener::bind(metrics_addr).await.map_err(
                |e| format!("cannot listen for metrics on {metrics_addr} (--metrics-listen): {e}"),
            )?),
            None => None,
        };
        Ok(Self {
            listener,
            metrics_listener,
            local,
        })
    }

    /// Announces the server, then serves `state` until SIGTERM or Ctrl-C.
    async fn serve<B: statelog::server::Backend>(
        self,
        state: Arc<ServerState<B>>,
        development_mode: bool,
        console: bool,
    ) -> Result<(), String> {
        self.announce()?;
        if development_mode {
            tracing::warn!("development mode: no --credentials, any well-formed signature is accepted (account {DEV_ACCOUNT_ID})");
        }
        serve_with(
            state,
            self.listener,
            self.metrics_listener,
            ServeOptions {
                console,
                ..ServeOptions::default()
            },
            shutdown_signal(),
        )
        .await
        .map_err(|e| e.to_string())
    }

    /// Prints `listening on http://ADDR` (and the metrics line) once the server is ready.
    fn announce(&self) -> Result<(), String> {
        println!("listening on http://{}", self.local);
        if let Some(metrics_listener) = &self.metrics_listener {
            let metrics_local = metrics_listener
                .local_addr()
                .map_err(|e| format!("cannot read the bound metrics address: {e}"))?;
            println!("metrics on http://{metrics_local}/metrics");
        }
        Ok(())
    }
}

/// The server's multi-threaded runtime.
fn serve_runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("statelog-serve")
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
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
    let metrics_addr = metrics_listen_of(args.metrics_listen.as_deref(), development_mode)
        .map(|listen| resolve_listen(listen, development_mode))
        .transpose()
        .map_err(|e| format!("--metrics-listen: {e}"))?;
    let mock_config = match &args.mock_config {
        Some(path) => {
            let config = MockConfig::from_file(path).map_err(|e| format!("--mock-config: {e}"))?;
            tracing::info!(
                file = %path.display(),
                test_cases = config.test_case_count(),
                "mock configuration loaded"
            );
            Some(Arc::new(config))
        }
        None => None,
    };
    let connections = match &args.connections {
        Some(path) => Connections::load(path).map_err(|e| format!("--connections: {e}"))?,
        None => Connections::new(),
    };
    let item_sources = object_stores(&args)?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let options = EngineOptions {
        item_sources: Some(item_sources),
        mock_config,
        clock: clock.clone(),
        region: args.region.clone(),
        swf_open_runs_per_domain_max: args.swf_open_executions_max,
        swf_task_list_pending_max: args.swf_task_list_pending_max,
        http_task: Some(HttpTask::new(connections, clock.clone())),
        ..EngineOptions::default()
    };
    let layout = if development_mode {
        AccountLayout::Single {
            account_id: DEV_ACCOUNT_ID.to_owned(),
        }
    } else {
        AccountLayout::PerAccount
    };
    #[cfg(feature = "cluster")]
    if !args.nats.is_empty() {
        // A `#TestCase` start would be routed by a machine name with the suffix in it.
        if args.mock_config.is_some() {
            return Err("--mock-config is not supported with --nats (one node only)".into());
        }
        return run_node(args, addr, metrics_addr, options, clock, credentials);
    }
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
    let console = !args.no_console;
    let runtime = serve_runtime()?;
    let served = runtime.block_on(async move {
        let bound = Bound::bind(addr, metrics_addr).await?;
        bound.serve(state, development_mode, console).await
    });
    // Requests are answered or closed and the engines closed by now; the SWF polls were stopped
    // before (`Swf::stop_polls`: they answer empty and claim nothing), so what may still run on
    // the blocking pool is a poll thread on its way out, and the process does not wait long.
    runtime.shutdown_timeout(std::time::Duration::from_millis(RUNTIME_SHUTDOWN_MS));
    served
}

/// Runs one cluster node until SIGTERM or Ctrl-C: binds the API, joins the cluster (its
/// partitions' logs on JetStream), serves, then releases its leases. A cluster serves one
/// account: the development account, or the one account of the credentials file.
#[cfg(feature = "cluster")]
fn run_node(
    args: ServeArgs,
    addr: std::net::SocketAddr,
    metrics_addr: Option<std::net::SocketAddr>,
    mut options: EngineOptions,
    clock: Arc<dyn Clock>,
    credentials: Option<Credentials>,
) -> Result<(), String> {
    use statelog::cluster::serve::{start_node, NodeConfig};
    let Some(node) = args.node.clone() else {
        return Err("--nats needs --node NAME".into());
    };
    options.account = match &credentials {
        None => DEV_ACCOUNT_ID.to_owned(),
        Some(credentials) => {
            let accounts = credentials.account_ids();
            match accounts.iter().next() {
                Some(account) if accounts.len() == 1 => (*account).to_owned(),
                _ => {
                    return Err(format!(
                        "--nats serves one account for now; the credentials file names {} accounts",
                        accounts.len()
                    ))
                }
            }
        }
    };
    let development_mode = credentials.is_none();
    let console = !args.no_console;
    let runtime = serve_runtime()?;
    let served = runtime.block_on(async move {
        let bound = Bound::bind(addr, metrics_addr).await?;
        let local = bound.local;
        let config = NodeConfig {
            nats: args.nats.clone(),
            node: node.clone(),
            listen: local.to_string(),
            data_dir: args.data_dir.clone(),
            lease_ms: args.lease_ms,
            replicas: args.replicas,
            engine_options: options,
        };
        let state = start_node(config, clock, credentials)
            .await
            .map_err(|e| format!("cannot join the cluster: {e}"))?;
        tracing::info!(node = %node, "joined the cluster");
        bound.serve(state, development_mode, console).await
    });
    runtime.shutdown_timeout(std::time::Duration::from_millis(RUNTIME_SHUTDOWN_MS));
    served
}

/// The object stores a Distributed Map's `ItemReader` and `ResultWriter` use: `--s3-endpoint`,
/// else `--objects-dir` (default `DATA_DIR/objects`, created when missing).
fn object_stores(args: &ServeArgs) -> Result<ItemSources, String> {
    let config = match &args.s3_endpoint {
        Some(endpoint) => {
            let key = |name: &str| std::env::var(name).unwrap_or_default();
            ObjectStoreConfig::S3 {
                endpoint: endpoint.clone(),
                region: args.region.clone(),
                access_key_id: key("AWS_ACCESS_KEY_ID"),
                secret_access_key: key("AWS_SECRET_ACCESS_KEY"),
                allow_http: endpoint.starts_with("http://"),
            }
        }
        None => {
            let root = args
                .objects_dir
                .clone()
                .unwrap_or_else(|| args.data_dir.join("objects"));
            std::fs::create_dir_all(&root)
                .map_err(|e| format!("--objects-dir {}: {e}", root.display()))?;
            ObjectStoreConfig::Local { root }
        }
    };
    let stores = ObjectStores::open(config).map_err(|e| format!("object store: {e}"))?;
    Ok(ItemSources::new(stores))
}
