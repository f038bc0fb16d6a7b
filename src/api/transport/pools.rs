//! The connections a route keeps: its HTTP/2 connections (a request takes a free stream, or opens
//! the next connection while the others wait) and its idle HTTP/1.1 keep-alive connections.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http2;

use super::conn::Conn;

/// A TLS route's HTTP/2 connections, and whether a request is opening the next one.
#[derive(Default)]
pub(super) struct H2Pool {
    pub(super) connections: Vec<H2Connection>,
    pub(super) connecting: bool,
}

impl H2Pool {
    /// A stream on an open connection with room for one, counted open until its body is dropped.
    pub(super) fn free_stream(&mut self) -> Option<(http2::SendRequest<Full<Bytes>>, OpenStream)> {
        self.connections.retain(|c| !c.sender.is_closed());
        let connection = self.connections.iter().find(|c| c.has_room())?;
        let stream = OpenStream::open(&connection.open_streams);
        Some((connection.sender.clone(), stream))
    }

    /// A new connection to share.
    pub(super) fn adopt(&mut self, sender: http2::SendRequest<Full<Bytes>>) {
        self.connections.push(H2Connection::new(sender));
    }
}

/// Streams one HTTP/2 connection carries before the next request opens another connection.
/// Servers announce their limit (`SETTINGS_MAX_CONCURRENT_STREAMS`, commonly 100–256; RFC 9113
/// recommends at least 100) and hyper queues requests beyond it, where they would wait while
/// their timeouts run: staying at 100 keeps every request on the wire.
pub(crate) const STREAMS_PER_H2_CONNECTION: usize = 100;

/// One HTTP/2 connection and how many of its streams are open.
#[derive(Clone)]
pub(super) struct H2Connection {
    sender: http2::SendRequest<Full<Bytes>>,
    open_streams: Arc<AtomicUsize>,
}

impl H2Connection {
    fn new(sender: http2::SendRequest<Full<Bytes>>) -> Self {
        Self {
            sender,
            open_streams: Arc::new(AtomicUsize::new(0)),
        }
    }

    fn has_room(&self) -> bool {
        !self.sender.is_closed()
            && self.open_streams.load(Ordering::Relaxed) < STREAMS_PER_H2_CONNECTION
    }
}

/// Counts a stream as open until its answer's body is dropped.
#[derive(Debug)]
pub(super) struct OpenStream(Arc<AtomicUsize>);

impl OpenStream {
    fn open(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Self(count.clone())
    }
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A route's idle HTTP/1.1 connections, most recently used last.
#[derive(Debug)]
pub(super) struct IdlePool {
    pub(super) idle: Mutex<VecDeque<(Conn, Instant)>>,
    max_idle: usize,
    idle_timeout: Duration,
}

impl IdlePool {
    pub(super) fn new(max_idle: usize, idle_timeout: Duration) -> IdlePool {
        IdlePool {
            idle: Mutex::new(VecDeque::new()),
            max_idle,
            idle_timeout,
        }
    }

    /// An idle connection that is still open.
    pub(super) fn checkout(&self) -> Option<Conn> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        while let Some((mut conn, since)) = idle.pop_back() {
            if since.elapsed() > self.idle_timeout {
                // Most recently used last: everything below is older still.
                idle.clear();
                return None;
            }
            if conn.still_open() {
                return Some(conn);
            }
        }
        None
    }

    pub(super) fn checkin(&self, conn: Conn) {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        while idle
            .front()
            .is_some_and(|(_, since)| since.elapsed() > self.idle_timeout)
        {
            idle.pop_front();
        }
        if idle.len() < self.max_idle {
            idle.push_back((conn, Instant::now()));
        }
    }
}
