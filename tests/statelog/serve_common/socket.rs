//! Real sockets for the `statelog serve` transport tests: a server on a loopback port, clients
//! bound to a chosen loopback source address (all of 127.0.0.0/8 is loopback on Linux, so
//! 127.0.0.2, 127.0.0.3, ... are distinct peers), raw HTTP/1.1 requests and answers, and the
//! file-descriptor limit those tests need.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};

use statelog::server::engine_backend::EngineBackend;
use statelog::server::{serve_with, ServeOptions, ServerState};

/// A server serving on loopback sockets until [`Running::stop`].
pub struct Running {
    pub addr: SocketAddr,
    pub metrics_addr: Option<SocketAddr>,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<(), statelog::server::Error>>,
}

/// Serves `state` on 127.0.0.1 (and a metrics listener when `with_metrics`) with `options`.
pub async fn start_serving(
    state: Arc<ServerState<EngineBackend>>,
    options: ServeOptions,
    with_metrics: bool,
) -> Running {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let metrics_listener = if with_metrics {
        Some(
            TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind metrics"),
        )
    } else {
        None
    };
    let metrics_addr = metrics_listener
        .as_ref()
        .map(|l| l.local_addr().expect("metrics addr"));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(serve_with(
        state,
        listener,
        metrics_listener,
        options,
        async move {
            let _ = stopped.await;
        },
    ));
    Running {
        addr,
        metrics_addr,
        stop,
        task,
    }
}

impl Running {
    /// Shuts the server down and waits for it.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        self.task.await.expect("joins").expect("clean shutdown");
    }
}

/// The loopback address 127.0.0.`last`.
pub fn loopback(last: u8) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 0, last)
}

/// A connection to `addr` from the source address `from`.
pub async fn connect_from(from: Ipv4Addr, addr: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().expect("socket");
    socket
        .bind(SocketAddr::from((from, 0)))
        .expect("bind a loopback source address");
    socket.connect(addr).await.expect("connect")
}

/// The bytes of `request` as HTTP/1.1, with `Connection: close` so the answer ends at EOF.
pub async fn raw(request: Request<Body>) -> Vec<u8> {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX).await.expect("body");
    let mut text = format!(
        "{} {} HTTP/1.1\r\ncontent-length: {}\r\nconnection: close\r\n",
        parts.method,
        parts.uri,
        body.len()
    );
    for (name, value) in &parts.headers {
        text.push_str(&format!("{name}: {}\r\n", value.to_str().expect("ascii")));
    }
    text.push_str("\r\n");
    let mut bytes = text.into_bytes();
    bytes.extend_from_slice(&body);
    bytes
}

/// An HTTP answer as read off the socket.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    /// The status line and header lines.
    pub head: String,
    pub body: Vec<u8>,
}

impl Answer {
    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }

    /// The value of header `name` (any case), if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim().eq_ignore_ascii_case(name).then(|| value.trim())
        })
    }
}

/// Parses everything a server wrote before closing.
pub fn parse_answer(bytes: &[u8]) -> Answer {
    let split = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP head in {:?}", String::from_utf8_lossy(bytes)));
    let head = String::from_utf8_lossy(&bytes[..split]).into_owned();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {head}"));
    Answer {
        status,
        head,
        body: bytes[split + 4..].to_vec(),
    }
}

/// Sends `request` (ending with `Connection: close`) on `stream` and reads the answer to EOF.
pub async fn exchange(stream: &mut TcpStream, request: &[u8]) -> Answer {
    stream.write_all(request).await.expect("write the request");
    let mut bytes = Vec::new();
    stream
        .read_to_end(&mut bytes)
        .await
        .expect("read the answer");
    parse_answer(&bytes)
}

/// Reads `stream` until the server closes it; the bytes read, or `None` if it is still open
/// after `within`.
pub async fn closed_within(stream: &mut TcpStream, within: Duration) -> Option<Vec<u8>> {
    let mut bytes = Vec::new();
    let read = tokio::time::timeout(within, async {
        let mut buffer = [0u8; 4096];
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(n) => bytes.extend_from_slice(&buffer[..n]),
            }
        }
    })
    .await;
    read.ok().map(|()| bytes)
}

/// Raises this process's soft limit of open files to at least `wanted` (up to the hard limit);
/// false when it cannot reach `wanted`, so the caller prints a skip.
pub fn raise_open_files_limit(wanted: u64) -> bool {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit through a valid pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return false;
    }
    if limit.rlim_cur >= wanted {
        return true;
    }
    if limit.rlim_max < wanted {
        return false;
    }
    limit.rlim_cur = wanted;
    // SAFETY: setrlimit reads one rlimit through a valid pointer.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) == 0 }
}

/// The value of the Prometheus sample whose name-and-labels text is exactly `series`; 0 when
/// absent.
pub fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .map_or(0.0, |v| v.parse().expect("a number"))
}
