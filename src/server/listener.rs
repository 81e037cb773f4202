//! listener: a TCP listener that serves at most [`CONNECTIONS_MAX`] connections at once.
//!
//! Owns the connection permits. Invariant: a connection holds its permit for as long as its
//! stream lives, so the count of open connections never exceeds the limit; while the limit is
//! reached the listener stops accepting and new connections wait in the kernel's backlog. Must
//! not: read or write request bytes.
//!
//! [`CONNECTIONS_MAX`]: super::limits::CONNECTIONS_MAX

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How long to back off after an accept error (e.g. out of file descriptors) before trying again.
const ACCEPT_ERROR_BACKOFF_MS: u64 = 100;

/// A listener bounded to a number of open connections.
#[derive(Debug)]
pub struct LimitedListener {
    inner: TcpListener,
    permits: Arc<Semaphore>,
}

impl LimitedListener {
    /// Wraps `inner`, allowing `connections_max` open connections.
    pub fn new(inner: TcpListener, connections_max: usize) -> Self {
        assert!(
            connections_max > 0,
            "a server must accept at least one connection"
        );
        Self {
            inner,
            permits: Arc::new(Semaphore::new(connections_max)),
        }
    }

    /// How many more connections may open now.
    pub fn available(&self) -> usize {
        self.permits.available_permits()
    }
}

/// A TCP stream that gives its connection permit back when dropped.
#[derive(Debug)]
pub struct LimitedStream {
    inner: TcpStream,
    _permit: OwnedSemaphorePermit,
}

impl AsyncRead for LimitedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for LimitedStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
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
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

impl axum::serve::Listener for LimitedListener {
    type Io = LimitedStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            // The semaphore is never closed, so acquiring only waits.
            let permit = match self.permits.clone().acquire_owned().await {
                Ok(permit) => permit,
                Err(_) => unreachable!("the connection semaphore is never closed"),
            };
            match self.inner.accept().await {
                Ok((stream, addr)) => {
                    // Small JSON answers should not wait for Nagle's algorithm.
                    let _ = stream.set_nodelay(true);
                    return (
                        LimitedStream {
                            inner: stream,
                            _permit: permit,
                        },
                        addr,
                    );
                }
                Err(error) => {
                    tracing::warn!(%error, "accept failed; backing off");
                    drop(permit);
                    tokio::time::sleep(Duration::from_millis(ACCEPT_ERROR_BACKOFF_MS)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}
