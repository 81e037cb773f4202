//! `statelog serve` against slow clients, on real loopback sockets.
//!
//! - A thousand connections that send nothing, half a head, or a body slower than promised do
//!   not keep a real client out: it is answered within a second while they hang on.
//! - Each time limit (keep-alive idle, header read, request body) closes its kind of slow
//!   connection, with short limits set through [`ServeOptions`].
//! - The per-peer cap closes one address's extra connections and leaves other peers alone.
//! - The body limit admits a definition whose escaped body is over 1 MiB, and still refuses a
//!   definition over its own limit and a body over the body limit.
#![cfg(feature = "server")]

use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use statelog::clock::Clock;
use statelog::server::limits::{CONNECTIONS_MAX, REQUEST_BODY_BYTES_MAX};
use statelog::server::ServeOptions;

use crate::serve_common;
use serve_common::socket::*;
use serve_common::*;

/// Slow connections opened against a server of [`CONNECTIONS_MAX`] slots.
const SLOW_COUNT: usize = 1030;

/// Time limits long enough that no slow connection of a test times out while it runs: what
/// lets the real client in is the caps and the eviction of slow connections.
fn without_timeouts() -> ServeOptions {
    ServeOptions {
        keep_alive_idle_timeout_ms: 60_000,
        header_read_timeout_ms: 120_000,
        request_body_timeout_ms: 180_000,
        shutdown_grace_ms: 100,
        ..ServeOptions::default()
    }
}

/// What slow connection `index` sends: nothing, half a head, or a head and a tenth of its body.
fn slow_bytes(index: usize) -> &'static [u8] {
    match index % 3 {
        0 => b"",
        1 => b"POST / HTTP/1.1\r\nhost: localhost\r\nx-amz-target: AWSStep",
        _ => b"POST / HTTP/1.1\r\nhost: localhost\r\ncontent-length: 100\r\n\r\n{\"name\":",
    }
}

/// How many connections the server has admitted so far.
fn opened(s: &Server) -> f64 {
    let text = s.state.metrics.render(&[]);
    sample(&text, "statelog_http_connections_open")
        + [
            "closed",
            "idle_timeout",
            "header_timeout",
            "body_timeout",
            "evicted",
        ]
        .iter()
        .map(|r| {
            sample(
                &text,
                &format!("statelog_http_connections_closed_total{{reason=\"{r}\"}}"),
            )
        })
        .sum::<f64>()
}

/// Waits (bounded) until the server has admitted `count` connections.
async fn wait_admitted(s: &Server, count: usize) {
    let until = Instant::now() + Duration::from_secs(10);
    while opened(s) < count as f64 && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A signed ListStateMachines, ending with `Connection: close`.
async fn list_request(s: &Server) -> Vec<u8> {
    let request = signed_request(
        "ListStateMachines",
        &json!({}),
        DEV.id,
        DEV.secret,
        s.clock.now_ms(),
    );
    raw(request).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_slow_connections_do_not_keep_a_real_client_out() {
    // Each connection takes a descriptor on each side.
    if !raise_open_files_limit(2 * SLOW_COUNT as u64 + 512) {
        println!(
            "skip: cannot raise the open-files limit to {}",
            2 * SLOW_COUNT + 512
        );
        return;
    }
    let s = server(None);
    let running = start_serving(s.state.clone(), without_timeouts(), false).await;
    let mut slow: Vec<TcpStream> = Vec::with_capacity(SLOW_COUNT);
    for index in 0..SLOW_COUNT {
        // Three peers, 127.0.0.2 to 127.0.0.4, each under its own cap.
        let from = loopback(2 + (index % 3) as u8);
        let mut stream = connect_from(from, running.addr).await;
        stream.write_all(slow_bytes(index)).await.expect("write");
        slow.push(stream);
    }
    wait_admitted(&s, SLOW_COUNT).await;

    // A new peer, then one of the slow peers itself: both answered within a second.
    let request = list_request(&s).await;
    for from in [loopback(1), loopback(2)] {
        let started = Instant::now();
        let answer = tokio::time::timeout(Duration::from_secs(1), async {
            let mut stream = connect_from(from, running.addr).await;
            exchange(&mut stream, &request).await
        })
        .await
        .unwrap_or_else(|_| {
            panic!("a client from {from} waited over 1 s beside {SLOW_COUNT} slow connections")
        });
        assert_eq!(answer.status, 200, "{answer:?}");
        assert_eq!(answer.json(), json!({"stateMachines": []}));
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    // The slow ones hang on: only the stalest few gave way, one per connection past the cap.
    let text = s.state.metrics.render(&[]);
    let evicted = sample(
        &text,
        "statelog_http_connections_closed_total{reason=\"evicted\"}",
    );
    let past_cap = (SLOW_COUNT - CONNECTIONS_MAX) as f64;
    assert!(
        (past_cap + 1.0..=past_cap + 2.0).contains(&evicted),
        "{evicted} evicted\n{text}"
    );
    let open = sample(&text, "statelog_http_connections_open");
    assert!(open >= (CONNECTIONS_MAX - 2) as f64, "{open} open\n{text}");
    // The first slow connection was the stalest: the server closed it.
    assert!(closed_within(&mut slow[0], Duration::from_secs(1))
        .await
        .is_some());
    drop(slow);
    running.stop().await;
}

/// Reads one answer of a kept-alive connection (head, then `content-length` bytes).
async fn read_one_answer(stream: &mut TcpStream) -> Answer {
    let mut bytes = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let n = stream.read(&mut buffer).await.expect("read");
        assert!(n > 0, "closed before a whole answer");
        bytes.extend_from_slice(&buffer[..n]);
        if let Some(split) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            let answer = parse_answer(&bytes);
            let length: usize = answer
                .header("content-length")
                .and_then(|v| v.parse().ok())
                .expect("a content-length");
            if bytes.len() >= split + 4 + length {
                return answer;
            }
        }
    }
}

/// How long `stream` stayed open from `since`; panics if it is still open after `within`.
async fn open_for(stream: &mut TcpStream, since: Instant, within: Duration) -> (Duration, Vec<u8>) {
    let bytes = closed_within(stream, within)
        .await
        .unwrap_or_else(|| panic!("still open after {within:?}"));
    (since.elapsed(), bytes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_time_limit_closes_its_kind_of_slow_connection() {
    const IDLE_MS: u64 = 300;
    const HEADER_MS: u64 = 600;
    const BODY_MS: u64 = 900;
    // How late past its limit a connection may still close (a loaded machine).
    let late = Duration::from_millis(1500);
    let s = server(None);
    let options = ServeOptions {
        keep_alive_idle_timeout_ms: IDLE_MS,
        header_read_timeout_ms: HEADER_MS,
        request_body_timeout_ms: BODY_MS,
        shutdown_grace_ms: 100,
        ..ServeOptions::default()
    };
    let running = start_serving(s.state.clone(), options, false).await;
    let addr = running.addr;
    let ms = Duration::from_millis;

    // Sends nothing at all.
    let idle = tokio::spawn(async move {
        let since = Instant::now();
        let mut stream = connect_from(loopback(1), addr).await;
        open_for(&mut stream, since, ms(IDLE_MS) + late).await
    });
    // Half a head, then nothing.
    let half = tokio::spawn(async move {
        let mut stream = connect_from(loopback(1), addr).await;
        let since = Instant::now();
        stream.write_all(slow_bytes(1)).await.expect("write");
        open_for(&mut stream, since, ms(HEADER_MS) + late).await
    });
    // A head trickled a byte every 50 ms: bytes keep coming, the head never ends.
    let trickle = tokio::spawn(async move {
        let stream = connect_from(loopback(1), addr).await;
        let since = Instant::now();
        let (mut reader, mut writer) = stream.into_split();
        let writing = tokio::spawn(async move {
            writer.write_all(b"POST / HTTP/1.1\r\nx-slow: ").await?;
            loop {
                tokio::time::sleep(ms(50)).await;
                writer.write_all(b"a").await?;
            }
            #[allow(unreachable_code)]
            Ok::<(), std::io::Error>(())
        });
        let mut bytes = Vec::new();
        let read = tokio::time::timeout(ms(HEADER_MS) + late, reader.read_to_end(&mut bytes)).await;
        writing.abort();
        assert!(read.is_ok(), "a trickled head was still open");
        (since.elapsed(), bytes)
    });
    // A head promising 100 bytes of body, then 8 of them.
    let slow_body = tokio::spawn(async move {
        let mut stream = connect_from(loopback(1), addr).await;
        stream.write_all(slow_bytes(2)).await.expect("write");
        let since = Instant::now();
        open_for(&mut stream, since, ms(BODY_MS) + late).await
    });
    // One whole request answered, then kept alive with nothing more.
    let request = list_request(&s).await;
    let kept_alive_request = String::from_utf8(request)
        .expect("ASCII")
        .replace("connection: close\r\n", "");
    let kept_alive = tokio::spawn(async move {
        let mut stream = connect_from(loopback(1), addr).await;
        // The server's idle clock starts when its answer is written, which the client cannot
        // see: the request's write comes before it, reading the answer after it.
        let since = Instant::now();
        stream
            .write_all(kept_alive_request.as_bytes())
            .await
            .expect("write");
        let answer = read_one_answer(&mut stream).await;
        assert_eq!(answer.status, 200, "{answer:?}");
        open_for(&mut stream, since, ms(IDLE_MS) + late).await
    });

    let (idle_for, idle_bytes) = idle.await.expect("joins");
    assert!(idle_for >= ms(IDLE_MS), "idle closed after {idle_for:?}");
    assert!(idle_bytes.is_empty());
    let (half_for, half_bytes) = half.await.expect("joins");
    assert!(
        half_for >= ms(HEADER_MS),
        "half head closed after {half_for:?}"
    );
    assert!(half_bytes.is_empty());
    let (trickle_for, _) = trickle.await.expect("joins");
    assert!(
        trickle_for >= ms(HEADER_MS),
        "trickled head closed after {trickle_for:?}"
    );
    let (body_for, body_bytes) = slow_body.await.expect("joins");
    assert!(
        body_for >= ms(BODY_MS),
        "slow body closed after {body_for:?}"
    );
    // A late body is answered before its connection closes, AWS-shaped.
    let answer = parse_answer(&body_bytes);
    assert_eq!(answer.status, 408, "{answer:?}");
    assert_eq!(answer.json()["__type"], "RequestTimeoutException");
    assert_eq!(
        answer.header("x-amzn-errortype"),
        Some("RequestTimeoutException")
    );
    let (kept_for, _) = kept_alive.await.expect("joins");
    assert!(
        kept_for >= ms(IDLE_MS),
        "kept-alive closed after {kept_for:?}"
    );

    let text = s.state.metrics.render(&[]);
    let closed = |reason: &str| {
        sample(
            &text,
            &format!("statelog_http_connections_closed_total{{reason=\"{reason}\"}}"),
        )
    };
    assert!(closed("idle_timeout") >= 2.0, "{text}");
    assert_eq!(closed("header_timeout"), 2.0, "{text}");
    assert_eq!(closed("evicted"), 0.0, "{text}");
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_per_peer_cap_closes_one_address_s_extra_connections() {
    const PER_PEER: usize = 4;
    let s = server(None);
    let options = ServeOptions {
        connections_max: 16,
        connections_per_peer_max: PER_PEER,
        ..without_timeouts()
    };
    let running = start_serving(s.state.clone(), options, false).await;
    // Another peer's connections, opened first, so they are the stalest of the server.
    let mut other = Vec::new();
    for _ in 0..2 {
        other.push(connect_from(loopback(3), running.addr).await);
    }
    wait_admitted(&s, 2).await;
    // One address opens two connections more than its cap, one at a time.
    let mut crowd = Vec::new();
    for index in 0..PER_PEER + 2 {
        crowd.push(connect_from(loopback(2), running.addr).await);
        wait_admitted(&s, 2 + index + 1).await;
    }
    // Its two oldest were closed; its newest four and the other peer's stay open.
    for stream in &mut crowd[..2] {
        assert!(closed_within(stream, Duration::from_secs(2))
            .await
            .is_some());
    }
    for stream in crowd[2..].iter_mut().chain(other.iter_mut()) {
        assert!(closed_within(stream, Duration::from_millis(200))
            .await
            .is_none());
    }
    // A real request from the capped address is still served: it takes its stalest slot.
    let mut stream = connect_from(loopback(2), running.addr).await;
    let answer = exchange(&mut stream, &list_request(&s).await).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(closed_within(&mut crowd[2], Duration::from_secs(2))
        .await
        .is_some());
    let text = s.state.metrics.render(&[]);
    assert_eq!(
        sample(
            &text,
            "statelog_http_connections_closed_total{reason=\"evicted\"}"
        ),
        3.0,
        "{text}"
    );
    running.stop().await;
}

/// A Pass machine whose `Comment` holds `pairs` quote-and-newline pairs: 4 bytes each in the
/// definition, 7 once the definition is escaped again inside the request body.
fn commented_definition(pairs: usize) -> String {
    json!({
        "Comment": "\"\n".repeat(pairs),
        "StartAt": "A",
        "States": {"A": {"Type": "Pass", "End": true}}
    })
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_definition_escaped_past_one_mib_is_accepted_over_http() {
    let s = server(None);
    let running = start_serving(s.state.clone(), ServeOptions::default(), false).await;
    let post = |operation: &'static str, body: serde_json::Value| {
        let request = signed_request(operation, &body, DEV.id, DEV.secret, s.clock.now_ms());
        let addr = running.addr;
        async move {
            let bytes = raw(request).await;
            let mut stream = connect_from(loopback(1), addr).await;
            (bytes.len(), exchange(&mut stream, &bytes).await)
        }
    };
    let definition = commented_definition(225_000);
    assert!(definition.len() < statelog::limits::DEFINITION_SIZE_BYTES_MAX);
    let create = json!({"name": "escaped", "definition": definition, "roleArn": ROLE});
    let (sent_bytes, answer) = post("CreateStateMachine", create).await;
    assert!(sent_bytes > 1024 * 1024, "{sent_bytes}");
    assert_eq!(
        answer.status,
        200,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    let arn = answer.json()["stateMachineArn"]
        .as_str()
        .expect("arn")
        .to_owned();
    let (_, described) = post("DescribeStateMachine", json!({"stateMachineArn": arn})).await;
    assert_eq!(described.json()["definition"], definition);

    // A definition one byte over its own limit is refused by that limit.
    let mut over = commented_definition(0);
    let pad = statelog::limits::DEFINITION_SIZE_BYTES_MAX + 1 - over.len();
    over.insert_str(1, &" ".repeat(pad));
    assert_eq!(over.len(), statelog::limits::DEFINITION_SIZE_BYTES_MAX + 1);
    let create = json!({"name": "over", "definition": over, "roleArn": ROLE});
    let (_, answer) = post("CreateStateMachine", create).await;
    assert_eq!(answer.status, 400);
    assert_eq!(
        answer.json()["__type"],
        "InvalidDefinition",
        "{:?}",
        answer.json()
    );

    // A body over the body limit is refused from its declared length.
    let mut stream = connect_from(loopback(1), running.addr).await;
    let head = format!(
        "POST / HTTP/1.1\r\nhost: localhost\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        REQUEST_BODY_BYTES_MAX + 1
    );
    let answer = exchange(&mut stream, head.as_bytes()).await;
    assert_eq!(answer.status, 413, "{answer:?}");
    assert_eq!(answer.json()["__type"], "RequestEntityTooLargeException");
    running.stop().await;
}
