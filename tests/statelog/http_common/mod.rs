//! A real HTTP/1.1 server on loopback for the HTTP Task tests (hyper, on its own thread and
//! runtime): it records every request it reads and answers as the test's responder says, or
//! holds the request unanswered. Shared by `http_task` (the engine) and `http_task_serve` (the
//! `statelog serve` binary).

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use parking_lot::{Condvar, Mutex};

/// One request as the server read it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    /// Path and query, as sent.
    pub uri: String,
    /// Lower-case names, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Recorded {
    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// What the server does with a request.
pub enum Reply {
    /// Answers `status` with `body` of `content_type`.
    Answer {
        status: u16,
        content_type: &'static str,
        body: String,
    },
    /// Never answers (the connection stays open until the client gives up).
    Hold,
}

impl Reply {
    pub fn json(status: u16, body: serde_json::Value) -> Reply {
        Reply::Answer {
            status,
            content_type: "application/json",
            body: body.to_string(),
        }
    }

    pub fn text(status: u16, body: &str) -> Reply {
        Reply::Answer {
            status,
            content_type: "text/plain",
            body: body.to_string(),
        }
    }
}

type Responder = dyn Fn(&Recorded) -> Reply + Send + Sync;

struct Shared {
    requests: Mutex<Vec<Recorded>>,
    arrived: Condvar,
    respond: Box<Responder>,
}

/// The running server; dropping it stops it.
pub struct TestServer {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TestServer {
    /// Serves on 127.0.0.1, a free port, answering each request with `respond`.
    pub fn start(respond: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> TestServer {
        let shared = Arc::new(Shared {
            requests: Mutex::new(Vec::new()),
            arrived: Condvar::new(),
            respond: Box::new(respond),
        });
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        listener.set_nonblocking(true).expect("non-blocking");
        let addr = listener.local_addr().expect("address");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = shared.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                let accept = async {
                    loop {
                        let Ok((stream, _)) = listener.accept().await else {
                            continue;
                        };
                        let shared = serving.clone();
                        tokio::spawn(async move {
                            let service = hyper::service::service_fn(move |request| {
                                let shared = shared.clone();
                                async move { answer(&shared, request).await }
                            });
                            let _ = hyper::server::conn::http1::Builder::new()
                                .serve_connection(TokioIo::new(stream), service)
                                .await;
                        });
                    }
                };
                tokio::select! {
                    _ = accept => {}
                    _ = stopped => {}
                }
            });
        });
        TestServer {
            addr,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Every request read so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().clone()
    }

    /// Waits (up to 30 s) until at least `count` requests were read; returns them all.
    pub fn wait_for_requests(&self, count: usize) -> Vec<Recorded> {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut requests = self.shared.requests.lock();
        while requests.len() < count {
            let timed_out = self
                .shared
                .arrived
                .wait_until(&mut requests, deadline)
                .timed_out();
            assert!(
                !timed_out,
                "{} requests after 30 s, {count} expected",
                requests.len()
            );
        }
        requests.clone()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn answer(
    shared: &Shared,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes().to_vec())
        .unwrap_or_default();
    let recorded = Recorded {
        method: parts.method.to_string(),
        uri: parts.uri.to_string(),
        headers: parts
            .headers
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body,
    };
    let reply = (shared.respond)(&recorded);
    shared.requests.lock().push(recorded);
    shared.arrived.notify_all();
    match reply {
        Reply::Answer {
            status,
            content_type,
            body,
        } => Ok(Response::builder()
            .status(status)
            .header("content-type", content_type)
            .header("x-served-by", "test")
            .body(Full::new(Bytes::from(body)))
            .expect("a response")),
        Reply::Hold => std::future::pending().await,
    }
}

/// A loopback port nothing listens on (bound, then closed).
pub fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address").port()
}
