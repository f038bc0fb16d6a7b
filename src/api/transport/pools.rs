//! The connections a route keeps: its HTTP/2 connections (a request takes a free stream, or opens
//! the next connection while the others wait) and its idle HTTP/1.1 keep-alive connections.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http2;

use super::body::{Sent, SentOn};
use super::conn::Conn;
use super::connect::Connected;
use super::error::HttpError;
use super::route::{HttpRequest, Route, HTTP1, HTTP2};

/// A TLS route's HTTP/2 connections, and whether a request is opening the next one.
#[derive(Default)]
pub(super) struct H2Pool {
    pub(super) connections: Vec<H2Connection>,
    pub(super) connecting: bool,
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

impl Route {
    /// The request on an HTTP/2 connection with a free stream (a new one if all are busy);
    /// `None` if the server speaks HTTP/1.1 (the route is now an HTTP/1.1 one).
    ///
    /// One request at a time opens a connection, without holding the pool's lock: the others
    /// wait for [`Route::h2_changed`] and look again (a stream may also have come free).
    pub(super) async fn send_h2(
        self: &Arc<Self>,
        request: HttpRequest<'_>,
    ) -> Result<Option<Sent>, HttpError> {
        let (mut sender, stream) = loop {
            if self.protocol.load(Ordering::Acquire) == HTTP1 {
                return Ok(None);
            }
            let wait = {
                let mut pool = self.h2.lock().unwrap_or_else(|p| p.into_inner());
                pool.connections.retain(|c| !c.sender.is_closed());
                if let Some(connection) = pool.connections.iter().find(|c| c.has_room()) {
                    let stream = OpenStream::open(&connection.open_streams);
                    break (connection.sender.clone(), stream);
                }
                if pool.connecting {
                    // Registered before the lock is released: the wake-up cannot be missed.
                    let mut notified = Box::pin(self.h2_changed.notified());
                    notified.as_mut().enable();
                    Some(notified)
                } else {
                    pool.connecting = true;
                    None
                }
            };
            if let Some(notified) = wait {
                notified.await;
                continue;
            }
            let _connecting = H2Connecting(self);
            match self.connect().await? {
                Connected::H2(sender) => self.adopt_h2(sender),
                Connected::H1(conn) => {
                    self.protocol.store(HTTP1, Ordering::Release);
                    self.checkin(conn);
                    return Ok(None);
                }
            }
        };
        let post = matches!(request, HttpRequest::Chat(_));
        let (uri, body) = match request {
            HttpRequest::Chat(body) => (
                format!("{}{}/chat/completions", self.origin, self.base_path),
                Full::new(Bytes::copy_from_slice(body)),
            ),
            HttpRequest::Get(path) => (
                format!(
                    "{}{}/{}",
                    self.origin,
                    self.base_path,
                    path.trim_start_matches('/')
                ),
                Full::new(Bytes::new()),
            ),
        };
        let mut builder = hyper::Request::builder()
            .method(if post { "POST" } else { "GET" })
            .uri(uri);
        for (name, value) in &self.fixed {
            builder = builder.header(*name, value.as_str());
        }
        if post {
            builder = builder.header("content-type", "application/json");
        }
        let request = builder
            .body(body)
            .map_err(|e| HttpError::Protocol(format!("cannot build the request: {e}")))?;
        // hyper hands the request to the connection here; the future only waits for the answer.
        let response = Box::pin(sender.send_request(request));
        Ok(Some(Sent {
            at: Instant::now(),
            inner: SentOn::H2 { response, stream },
        }))
    }

    /// A new connection negotiated HTTP/2: share it from now on.
    pub(super) fn adopt_h2(&self, sender: http2::SendRequest<Full<Bytes>>) {
        self.h2
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .connections
            .push(H2Connection::new(sender));
        self.protocol.store(HTTP2, Ordering::Release);
    }

    /// An idle connection that is still open.
    pub(super) fn checkout(&self) -> Option<Conn> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        while let Some((mut conn, since)) = idle.pop_back() {
            if since.elapsed() > self.pool_idle_timeout {
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
            .is_some_and(|(_, since)| since.elapsed() > self.pool_idle_timeout)
        {
            idle.pop_front();
        }
        if idle.len() < self.pool_max_idle {
            idle.push_back((conn, Instant::now()));
        }
    }
}

/// Held by the request opening a route's next HTTP/2 connection: when it is done (or dropped
/// by a timeout), the others are told to look again.
pub(super) struct H2Connecting<'a>(&'a Route);

impl Drop for H2Connecting<'_> {
    fn drop(&mut self) {
        self.0
            .h2
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .connecting = false;
        self.0.h2_changed.notify_waiters();
    }
}
