//! One keep-alive HTTP/1.1 connection to an in-process `statelog serve`, signing each request
//! with SigV4 before the bench's timer starts; an answer is read by its Content-Length. Shared by
//! the benches that go over HTTP (`serve.rs`, `swf.rs`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};

use axum::http::{HeaderMap, HeaderValue};
use statelog::clock::{Clock, SystemClock};
use statelog::server::protocol::CONTENT_TYPE;
use statelog::server::sigv4::{sign, SigningParams};

/// Who signs the requests, and for which SigV4 service (`states`, `swf`).
#[derive(Debug, Clone, Copy)]
pub struct Identity {
    pub access_key_id: &'static str,
    pub secret_access_key: &'static str,
    pub service: &'static str,
}

/// One keep-alive connection.
pub struct HttpClient {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    host: String,
    identity: Identity,
}

impl HttpClient {
    pub fn connect(addr: SocketAddr, identity: Identity) -> Self {
        Self::try_connect(addr, identity, None).expect("connects")
    }

    /// A connection whose answers may take up to `read_timeout` (`None`: no limit); `None`
    /// when it cannot connect.
    pub fn try_connect(
        addr: SocketAddr,
        identity: Identity,
        read_timeout: Option<std::time::Duration>,
    ) -> Option<Self> {
        let stream = TcpStream::connect(addr).ok()?;
        stream.set_nodelay(true).ok()?;
        stream.set_read_timeout(read_timeout).ok()?;
        Some(Self {
            reader: BufReader::new(stream.try_clone().ok()?),
            writer: stream,
            host: addr.to_string(),
            identity,
        })
    }

    /// The bytes of a signed `POST /` with `x-amz-target: target` and `body`.
    pub fn prepare(&self, target: &str, body: &[u8]) -> Vec<u8> {
        let mut headers = HeaderMap::new();
        headers.insert("host", HeaderValue::from_str(&self.host).expect("ascii"));
        headers.insert("content-type", HeaderValue::from_static(CONTENT_TYPE));
        headers.insert(
            "x-amz-target",
            HeaderValue::from_str(target).expect("ascii"),
        );
        let authorization = sign(
            "POST",
            "/",
            "",
            &mut headers,
            body,
            &SigningParams {
                access_key_id: self.identity.access_key_id,
                secret_access_key: self.identity.secret_access_key,
                region: "us-east-1",
                service: self.identity.service,
                now_ms: SystemClock.now_ms(),
            },
        )
        .expect("signs");
        let mut text = format!(
            "POST / HTTP/1.1\r\ncontent-length: {}\r\nauthorization: {authorization}\r\n",
            body.len()
        );
        for (name, value) in &headers {
            text.push_str(&format!("{name}: {}\r\n", value.to_str().expect("ascii")));
        }
        text.push_str("\r\n");
        let mut bytes = text.into_bytes();
        bytes.extend_from_slice(body);
        bytes
    }

    /// Sends `request` and reads its answer (status, body): `None` once the server has gone.
    pub fn send(&mut self, request: &[u8]) -> Option<(u16, Vec<u8>)> {
        self.writer.write_all(request).ok()?;
        let mut status_line = String::new();
        if self.reader.read_line(&mut status_line).ok()? == 0 {
            return None;
        }
        let status: u16 = status_line.split_whitespace().nth(1)?.parse().ok()?;
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).ok()?;
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().ok()?;
                }
            }
        }
        let mut body = vec![0u8; length];
        self.reader.read_exact(&mut body).ok()?;
        Some((status, body))
    }
}
