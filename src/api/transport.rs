//! Connections to the endpoints: TCP (and TLS) connects, a keep-alive pool per endpoint, and the
//! choice between our lean HTTP/1.1 exchange ([`super::http1`]) and hyper's HTTP/2.
//!
//! A [`Route`] is one endpoint as the wire sees it, built once per (base URL, key): the parsed
//! origin, the request heads with every fixed header already written out (user agent, key,
//! attribution), the resolved addresses and the idle connections. A request then costs a map
//! lookup, a pool pop and one buffer copy before its `write`.
//!
//! Plain `http://` endpoints (vLLM, SGLang, llama.cpp, the simulator) speak HTTP/1.1 over one
//! connection per request in flight. `https://` endpoints offer HTTP/2 through ALPN (rustls with
//! ring, the webpki roots); when the server takes it (OpenRouter does), requests share hyper
//! HTTP/2 connections, [`STREAMS_PER_H2_CONNECTION`] at a time each, so thousands in flight are
//! spread over enough connections that no request waits for a server's stream limit (set
//! [`super::ClientConfig::http1_only`] to keep to HTTP/1.1 connections instead).

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http2;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use super::http1;
use super::ApiKey;

/// How long resolved addresses of a host name are reused before asking the resolver again.
const DNS_TTL: Duration = Duration::from_secs(60);

/// A transport failure, before any HTTP status is known (or in the middle of a body).
#[derive(Debug, thiserror::Error)]
pub(crate) enum HttpError {
    #[error("invalid endpoint URL {url:?}: {reason}")]
    Url { url: String, reason: String },
    #[error("cannot resolve {host}: {source}")]
    Resolve { host: String, source: io::Error },
    #[error("cannot connect to {addr}: {source}")]
    Connect { addr: String, source: io::Error },
    #[error("connect timeout ({0:?}) reached")]
    ConnectTimeout(Duration),
    #[error("TLS handshake with {host} failed: {source}")]
    Tls { host: String, source: io::Error },
    #[error("connection error: {0}")]
    Io(#[from] io::Error),
    #[error("connection closed before the response was complete")]
    Closed,
    #[error("invalid HTTP response: {0}")]
    Protocol(String),
    #[error("HTTP/2 error: {0}")]
    H2(String),
}

impl HttpError {
    fn h2(err: &hyper::Error) -> HttpError {
        HttpError::H2(error_chain(err))
    }
}

/// An error and its sources, joined with `: `. A source whose text the message already ends
/// with (`cannot connect to …: {source}`) is not repeated.
pub(crate) fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.ends_with(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text
}

/// The connection settings every route shares.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub user_agent: String,
    pub connect_timeout: Duration,
    pub pool_max_idle: usize,
    pub pool_idle_timeout: Duration,
    pub tcp_keepalive: Option<Duration>,
    pub http1_only: bool,
    pub referer: Option<String>,
    pub title: Option<String>,
}

/// The routes of one client and the TLS configuration they share.
pub(crate) struct Transport {
    settings: Settings,
    tls: TlsConnector,
    /// By base URL, then by key (looked up without allocating: this runs for every request).
    routes: Mutex<HashMap<String, Vec<Arc<Route>>>>,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the routes themselves: their request heads hold the keys.
        let routes = self.routes.lock().map(|r| r.len()).unwrap_or(0);
        f.debug_struct("Transport")
            .field("settings", &self.settings)
            .field("routes", &routes)
            .finish()
    }
}

impl Transport {
    /// Servers are authenticated against the webpki roots (Mozilla's), as reqwest's
    /// `rustls-tls` does.
    pub fn new(settings: Settings) -> Result<Transport, rustls::Error> {
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        Self::with_roots(settings, roots)
    }

    fn with_roots(
        settings: Settings,
        roots: rustls::RootCertStore,
    ) -> Result<Transport, rustls::Error> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        tls.alpn_protocols = if settings.http1_only {
            vec![b"http/1.1".to_vec()]
        } else {
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        };
        Ok(Transport {
            settings,
            tls: TlsConnector::from(Arc::new(tls)),
            routes: Mutex::new(HashMap::new()),
        })
    }

    /// The route for `base_url` with `key`, built on first use.
    pub fn route(&self, base_url: &str, key: Option<&ApiKey>) -> Result<Arc<Route>, HttpError> {
        let mut routes = self.routes.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(route) = routes
            .get(base_url)
            .and_then(|same_url| same_url.iter().find(|r| r.key.as_ref() == key))
        {
            return Ok(route.clone());
        }
        let route = Arc::new(Route::new(base_url, key, &self.settings, self.tls.clone())?);
        routes
            .entry(base_url.to_string())
            .or_default()
            .push(route.clone());
        Ok(route)
    }
}

/// What a route speaks, once known (TLS routes learn it from ALPN on their first connection).
const UNKNOWN: u8 = 0;
const HTTP1: u8 = 1;
const HTTP2: u8 = 2;

/// One request, as the route sends it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Request<'a> {
    /// `POST {base}/chat/completions` with this JSON body.
    Chat(&'a [u8]),
    /// `GET {base}/{path}`.
    Get(&'a str),
}

/// One endpoint on the wire.
pub(crate) struct Route {
    /// The key this route's requests carry (the routes of one URL differ by key).
    key: Option<ApiKey>,
    tls: Option<(TlsConnector, rustls::pki_types::ServerName<'static>)>,
    host: String,
    port: u16,
    /// `{scheme}://{authority}` and the base path (no trailing slash), for HTTP/2 URIs.
    origin: String,
    /// `host[:port]` as the `host` header gives it.
    host_header: String,
    base_path: String,
    /// `POST …/chat/completions HTTP/1.1` and the fixed headers, up to `content-length: `.
    /// Holds the key: never printed.
    chat_head: Vec<u8>,
    /// The fixed headers of every request (`host` excluded), for GETs and HTTP/2.
    fixed: Vec<(&'static str, String)>,
    connect_timeout: Duration,
    tcp_keepalive: Option<Duration>,
    pool_max_idle: usize,
    pool_idle_timeout: Duration,
    protocol: AtomicU8,
    /// Idle HTTP/1.1 connections, most recently used last.
    idle: Mutex<VecDeque<(Conn, Instant)>>,
    addrs: Mutex<Option<(Arc<[SocketAddr]>, Instant)>>,
    /// The HTTP/2 connections; the lock also serializes a TLS route's first connect.
    h2: tokio::sync::Mutex<Vec<H2Connection>>,
}

/// Streams one HTTP/2 connection carries before the next request opens another connection.
/// Servers announce their limit (`SETTINGS_MAX_CONCURRENT_STREAMS`, commonly 100–256; RFC 9113
/// recommends at least 100) and hyper queues requests beyond it, where they would wait while
/// their timeouts run: staying at 100 keeps every request on the wire.
pub(crate) const STREAMS_PER_H2_CONNECTION: usize = 100;

/// One HTTP/2 connection and how many of its streams are open.
#[derive(Clone)]
struct H2Connection {
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
struct OpenStream(Arc<AtomicUsize>);

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

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Route")
            .field("origin", &self.origin)
            .finish()
    }
}

impl Route {
    fn new(
        base_url: &str,
        key: Option<&ApiKey>,
        settings: &Settings,
        tls: TlsConnector,
    ) -> Result<Route, HttpError> {
        let bad = |reason: &str| HttpError::Url {
            url: base_url.to_string(),
            reason: reason.to_string(),
        };
        let uri: http::Uri = base_url
            .trim()
            .parse()
            .map_err(|e: http::uri::InvalidUri| bad(&e.to_string()))?;
        let secure = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return Err(bad("the scheme must be http or https")),
        };
        let authority = uri.authority().ok_or_else(|| bad("no host"))?;
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = authority
            .port_u16()
            .unwrap_or(if secure { 443 } else { 80 });
        let host_header = authority
            .as_str()
            .rsplit_once('@')
            .map_or(authority.as_str(), |(_, h)| h)
            .to_string();
        let base_path = uri.path().trim_end_matches('/').to_string();
        let tls = if secure {
            let name = rustls::pki_types::ServerName::try_from(host.clone())
                .map_err(|e| bad(&format!("not a TLS server name: {e}")))?;
            Some((tls, name))
        } else {
            None
        };

        let mut fixed: Vec<(&'static str, String)> = vec![
            ("user-agent", settings.user_agent.clone()),
            ("accept", "*/*".to_string()),
        ];
        if let Some(key) = key {
            fixed.push(("authorization", format!("Bearer {}", key.expose())));
        }
        if let Some(referer) = &settings.referer {
            fixed.push(("http-referer", referer.clone()));
        }
        if let Some(title) = &settings.title {
            fixed.push(("x-title", title.clone()));
        }
        let mut chat_head =
            format!("POST {base_path}/chat/completions HTTP/1.1\r\nhost: {host_header}\r\n");
        for (name, value) in &fixed {
            chat_head.push_str(&format!("{name}: {value}\r\n"));
        }
        chat_head.push_str("content-type: application/json\r\ncontent-length: ");

        Ok(Route {
            key: key.cloned(),
            origin: format!("{}://{host_header}", if secure { "https" } else { "http" }),
            host_header,
            tls,
            host,
            port,
            base_path,
            chat_head: chat_head.into_bytes(),
            fixed,
            connect_timeout: settings.connect_timeout,
            tcp_keepalive: settings.tcp_keepalive,
            pool_max_idle: settings.pool_max_idle,
            pool_idle_timeout: settings.pool_idle_timeout,
            protocol: AtomicU8::new(if secure { UNKNOWN } else { HTTP1 }),
            idle: Mutex::new(VecDeque::new()),
            addrs: Mutex::new(None),
            h2: tokio::sync::Mutex::new(Vec::new()),
        })
    }

    /// Send `request` and read the response head; the body is read from the returned [`Answer`].
    pub async fn send(self: &Arc<Self>, request: Request<'_>) -> Result<Answer, HttpError> {
        let mut fresh_only = false;
        loop {
            let conn = match self.protocol.load(Ordering::Acquire) {
                // Boxed, like the other rare paths below: an HTTP/1.1 request's future (one per
                // request in flight) should not carry the size of TLS and HTTP/2 setup.
                HTTP2 => match Box::pin(self.send_h2(request)).await? {
                    Some(answer) => return Ok(answer),
                    None => continue,
                },
                UNKNOWN => {
                    Box::pin(self.learn_protocol()).await?;
                    continue;
                }
                _ => match (!fresh_only).then(|| self.checkout()).flatten() {
                    Some(conn) => conn,
                    None => match self.connect().await? {
                        Connected::H1(conn) => conn,
                        Connected::H2(sender) => {
                            Box::pin(self.adopt_h2(sender)).await;
                            continue;
                        }
                    },
                },
            };
            let reused = conn.reused;
            match self.send_h1(conn, request).await {
                Ok(answer) => return Ok(answer),
                // A kept-alive connection the server had already closed: nothing of this request
                // was processed, so it goes out once more on a new connection.
                Err((_, false)) if reused && !fresh_only => fresh_only = true,
                Err((e, _)) => return Err(e),
            }
        }
    }

    /// The request on an HTTP/1.1 connection; the error says whether any response byte came.
    async fn send_h1(
        self: &Arc<Self>,
        mut conn: Conn,
        request: Request<'_>,
    ) -> Result<Answer, (HttpError, bool)> {
        let bytes = self.h1_bytes(request);
        if let Err(e) = http1::write_request(&mut conn, &bytes).await {
            return Err((HttpError::Io(e), false));
        }
        drop(bytes);
        let response = http1::Response::read_head(conn, false).await?;
        Ok(Answer {
            status: response.head.status,
            content_type: response.head.content_type.clone(),
            retry_after: response.head.retry_after.clone(),
            generation_id: response.head.generation_id.clone(),
            body: Body::H1 {
                response: Some(response),
                route: self.clone(),
            },
        })
    }

    fn h1_bytes(&self, request: Request<'_>) -> Vec<u8> {
        use std::io::Write;
        match request {
            Request::Chat(body) => {
                let mut out = Vec::with_capacity(self.chat_head.len() + 24 + body.len());
                out.extend_from_slice(&self.chat_head);
                let _ = write!(out, "{}\r\n\r\n", body.len());
                out.extend_from_slice(body);
                out
            }
            Request::Get(path) => {
                let mut out = Vec::with_capacity(256);
                let _ = write!(
                    out,
                    "GET {}/{} HTTP/1.1\r\nhost: {}\r\n",
                    self.base_path,
                    path.trim_start_matches('/'),
                    self.host_header
                );
                for (name, value) in &self.fixed {
                    let _ = write!(out, "{name}: {value}\r\n");
                }
                out.extend_from_slice(b"\r\n");
                out
            }
        }
    }

    /// The request on an HTTP/2 connection with a free stream (a new one if all are busy);
    /// `None` if the server no longer offers HTTP/2 and the route went back to HTTP/1.1.
    async fn send_h2(self: &Arc<Self>, request: Request<'_>) -> Result<Option<Answer>, HttpError> {
        let (mut sender, stream) = {
            let mut connections = self.h2.lock().await;
            connections.retain(|c| !c.sender.is_closed());
            let connection = match connections.iter().find(|c| c.has_room()) {
                Some(connection) => connection.clone(),
                None => match self.connect().await? {
                    Connected::H2(sender) => {
                        let connection = H2Connection::new(sender);
                        connections.push(connection.clone());
                        connection
                    }
                    Connected::H1(conn) => {
                        connections.clear();
                        self.protocol.store(HTTP1, Ordering::Release);
                        self.checkin(conn);
                        return Ok(None);
                    }
                },
            };
            let stream = OpenStream::open(&connection.open_streams);
            (connection.sender, stream)
        };
        let post = matches!(request, Request::Chat(_));
        let (uri, body) = match request {
            Request::Chat(body) => (
                format!("{}{}/chat/completions", self.origin, self.base_path),
                Full::new(Bytes::copy_from_slice(body)),
            ),
            Request::Get(path) => (
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
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| HttpError::h2(&e))?;
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(|v| v.trim().to_string())
        };
        Ok(Some(Answer {
            status: response.status().as_u16(),
            content_type: header("content-type"),
            retry_after: header("retry-after"),
            generation_id: header("x-generation-id"),
            body: Body::H2 {
                body: response.into_body(),
                _open: stream,
            },
        }))
    }

    /// A TLS route's first connection, one at a time, tells what the server speaks (ALPN); the
    /// connection is kept for the requests that follow.
    async fn learn_protocol(&self) -> Result<(), HttpError> {
        let mut connections = self.h2.lock().await;
        if self.protocol.load(Ordering::Acquire) != UNKNOWN {
            return Ok(());
        }
        match self.connect().await? {
            Connected::H2(sender) => {
                connections.push(H2Connection::new(sender));
                self.protocol.store(HTTP2, Ordering::Release);
            }
            Connected::H1(conn) => {
                self.checkin(conn);
                self.protocol.store(HTTP1, Ordering::Release);
            }
        }
        Ok(())
    }

    /// A new connection negotiated HTTP/2 on a route that used HTTP/1.1: share it from now on.
    async fn adopt_h2(&self, sender: http2::SendRequest<Full<Bytes>>) {
        self.h2.lock().await.push(H2Connection::new(sender));
        self.protocol.store(HTTP2, Ordering::Release);
    }

    /// An idle connection that still looks open.
    fn checkout(&self) -> Option<Conn> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        while let Some((conn, since)) = idle.pop_back() {
            if since.elapsed() > self.pool_idle_timeout {
                // Most recently used last: everything below is older still.
                idle.clear();
                return None;
            }
            if conn.looks_open() {
                return Some(conn);
            }
        }
        None
    }

    fn checkin(&self, conn: Conn) {
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

    /// A new connection (TCP, then TLS for https), within the connect timeout.
    async fn connect(&self) -> Result<Connected, HttpError> {
        tokio::time::timeout(self.connect_timeout, Box::pin(self.connect_unbounded()))
            .await
            .unwrap_or(Err(HttpError::ConnectTimeout(self.connect_timeout)))
    }

    async fn connect_unbounded(&self) -> Result<Connected, HttpError> {
        let addrs = self.resolve().await?;
        let mut last = None;
        let mut tcp = None;
        for addr in addrs.iter() {
            match TcpStream::connect(addr).await {
                Ok(stream) => {
                    tcp = Some(stream);
                    break;
                }
                Err(e) => last = Some((addr, e)),
            }
        }
        let tcp = match (tcp, last) {
            (Some(tcp), failed) => {
                if failed.is_some() {
                    // `localhost` often resolves to ::1 first while the server listens on IPv4
                    // only: try the address that answered first from now on.
                    self.prefer(&addrs, tcp.peer_addr().ok());
                }
                tcp
            }
            (None, Some((addr, source))) => {
                // The addresses may have changed: ask the resolver again next time.
                *self.addrs.lock().unwrap_or_else(|p| p.into_inner()) = None;
                return Err(HttpError::Connect {
                    addr: addr.to_string(),
                    source,
                });
            }
            (None, None) => {
                return Err(HttpError::Resolve {
                    host: self.host.clone(),
                    source: io::Error::other("no address"),
                })
            }
        };
        tcp.set_nodelay(true)?;
        if let Some(time) = self.tcp_keepalive {
            let keepalive = socket2::TcpKeepalive::new().with_time(time);
            socket2::SockRef::from(&tcp).set_tcp_keepalive(&keepalive)?;
        }
        match &self.tls {
            None => Ok(Connected::H1(Conn::new(Io::Plain(tcp)))),
            // Boxed: the TLS and HTTP/2 handshakes are large futures that plain connects
            // (10,000 at once at the start of a big local run) should not be sized for.
            Some((connector, name)) => Box::pin(self.secure(connector, name, tcp)).await,
        }
    }

    /// TLS over `tcp`, then HTTP/2 if ALPN chose it.
    async fn secure(
        &self,
        connector: &TlsConnector,
        name: &rustls::pki_types::ServerName<'static>,
        tcp: TcpStream,
    ) -> Result<Connected, HttpError> {
        let tls = connector
            .connect(name.clone(), tcp)
            .await
            .map_err(|source| HttpError::Tls {
                host: self.host.clone(),
                source,
            })?;
        if tls.get_ref().1.alpn_protocol() != Some(b"h2") {
            return Ok(Connected::H1(Conn::new(Io::Tls(Box::new(tls)))));
        }
        let (sender, connection) = http2::Builder::new(TokioExecutor::new())
            .timer(TokioTimer::new())
            .adaptive_window(true)
            .handshake(TokioIo::new(tls))
            .await
            .map_err(|e| HttpError::h2(&e))?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!("HTTP/2 connection ended: {}", error_chain(&e));
            }
        });
        Ok(Connected::H2(sender))
    }

    /// Move `good` to the front of the cached addresses (if they are still `tried`).
    fn prefer(&self, tried: &Arc<[SocketAddr]>, good: Option<SocketAddr>) {
        let Some(good) = good else { return };
        let mut cache = self.addrs.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((addrs, _)) = cache.as_mut().filter(|(a, _)| Arc::ptr_eq(a, tried)) {
            let reordered: Vec<SocketAddr> = std::iter::once(good)
                .chain(addrs.iter().copied().filter(|a| *a != good))
                .collect();
            *addrs = Arc::from(reordered);
        }
    }

    async fn resolve(&self) -> Result<Arc<[SocketAddr]>, HttpError> {
        if let Ok(ip) = self.host.parse::<std::net::IpAddr>() {
            return Ok(Arc::from([SocketAddr::new(ip, self.port)]));
        }
        if let Some((addrs, at)) = self
            .addrs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            if at.elapsed() < DNS_TTL {
                return Ok(addrs.clone());
            }
        }
        let addrs: Arc<[SocketAddr]> = tokio::net::lookup_host((self.host.as_str(), self.port))
            .await
            .map_err(|source| HttpError::Resolve {
                host: self.host.clone(),
                source,
            })?
            .collect();
        *self.addrs.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((addrs.clone(), Instant::now()));
        Ok(addrs)
    }
}

/// A fresh connection: HTTP/1.1, or the sender of a new HTTP/2 connection (ALPN chose).
enum Connected {
    H1(Conn),
    H2(http2::SendRequest<Full<Bytes>>),
}

/// An HTTP/1.1 connection.
#[derive(Debug)]
pub(crate) struct Conn {
    io: Io,
    /// It has carried a request before (so the server may have closed it meanwhile).
    reused: bool,
}

#[derive(Debug)]
enum Io {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl Conn {
    fn new(io: Io) -> Conn {
        Conn { io, reused: false }
    }

    fn tcp(&self) -> &TcpStream {
        match &self.io {
            Io::Plain(tcp) => tcp,
            Io::Tls(tls) => tls.get_ref().0,
        }
    }

    /// Whether an idle connection can take a request: the server has not closed it (and, on a
    /// plain one, sent nothing unasked). Looks only at readiness the runtime already has, so an
    /// idle socket costs no system call.
    fn looks_open(&self) -> bool {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut byte = [0u8; 1];
        let mut buf = ReadBuf::new(&mut byte);
        match self.tcp().poll_peek(&mut cx, &mut buf) {
            Poll::Pending => true,
            // TLS servers may send a session ticket after the handshake.
            Poll::Ready(Ok(n)) => n > 0 && matches!(self.io, Io::Tls(_)),
            Poll::Ready(Err(_)) => false,
        }
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.get_mut().io {
            Io::Plain(tcp) => Pin::new(tcp).poll_read(cx, buf),
            Io::Tls(tls) => Pin::new(tls.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().io {
            Io::Plain(tcp) => Pin::new(tcp).poll_write(cx, buf),
            Io::Tls(tls) => Pin::new(tls.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().io {
            Io::Plain(tcp) => Pin::new(tcp).poll_flush(cx),
            Io::Tls(tls) => Pin::new(tls.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().io {
            Io::Plain(tcp) => Pin::new(tcp).poll_shutdown(cx),
            Io::Tls(tls) => Pin::new(tls.as_mut()).poll_shutdown(cx),
        }
    }
}

/// A response whose head has arrived.
#[derive(Debug)]
pub(crate) struct Answer {
    pub status: u16,
    pub content_type: Option<String>,
    pub retry_after: Option<String>,
    pub generation_id: Option<String>,
    body: Body,
}

#[derive(Debug)]
enum Body {
    /// Goes back to the route's pool when dropped after a complete, reusable exchange.
    H1 {
        response: Option<http1::Response>,
        route: Arc<Route>,
    },
    /// The stream counts as open on its connection until the body is dropped.
    H2 {
        body: hyper::body::Incoming,
        _open: OpenStream,
    },
}

impl Answer {
    /// Append the next piece of the body to `out`; `Ok(false)` once the body is complete.
    pub async fn next(&mut self, out: &mut Vec<u8>) -> Result<bool, HttpError> {
        match &mut self.body {
            Body::H1 { response, .. } => match response {
                Some(response) => response.next(out).await,
                None => Ok(false),
            },
            Body::H2 { body, .. } => loop {
                match body.frame().await {
                    None => return Ok(false),
                    Some(Err(e)) => return Err(HttpError::h2(&e)),
                    Some(Ok(frame)) => {
                        if let Ok(data) = frame.into_data() {
                            out.extend_from_slice(&data);
                            return Ok(true);
                        }
                    }
                }
            },
        }
    }
}

impl Drop for Body {
    fn drop(&mut self) {
        if let Body::H1 { response, route } = self {
            if let Some(mut conn) = response.take().and_then(http1::Response::into_reusable) {
                conn.reused = true;
                route.checkin(conn);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use tokio::net::TcpListener;

    const CA: &[u8] = include_bytes!("../../tests/data/tls/ca.pem");
    const CERT: &[u8] = include_bytes!("../../tests/data/tls/server.pem");
    const KEY: &[u8] = include_bytes!("../../tests/data/tls/server.key");

    /// A TLS server offering `alpn` that answers every request with JSON describing it.
    async fn tls_server(alpn: Vec<Vec<u8>>) -> u16 {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![CertificateDer::from_pem_slice(CERT).unwrap()],
                PrivateKeyDer::from_pem_slice(KEY).unwrap(),
            )
            .unwrap();
        config.alpn_protocols = alpn;
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
                    let service = hyper::service::service_fn(
                        |request: hyper::Request<hyper::body::Incoming>| async move {
                            let (head, body) = request.into_parts();
                            let body = body
                                .collect()
                                .await
                                .map(|b| b.to_bytes())
                                .unwrap_or_default();
                            let auth = head.headers.get("authorization").cloned();
                            let answer = serde_json::json!({
                                "version": format!("{:?}", head.version),
                                "method": head.method.as_str(),
                                "path": head.uri.path(),
                                "authorization": auth.and_then(|v| v.to_str().ok().map(str::to_string)),
                                "body": String::from_utf8_lossy(&body),
                            });
                            Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(
                                Bytes::from(answer.to_string()),
                            )))
                        },
                    );
                    let io = TokioIo::new(tls);
                    if h2 {
                        let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                            .serve_connection(io, service)
                            .await;
                    } else {
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(io, service)
                            .await;
                    }
                });
            }
        });
        port
    }

    fn transport(http1_only: bool) -> Transport {
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(CA).unwrap())
            .unwrap();
        let settings = Settings {
            user_agent: "draftgen-test".into(),
            connect_timeout: Duration::from_secs(30),
            pool_max_idle: usize::MAX,
            pool_idle_timeout: Duration::from_secs(90),
            tcp_keepalive: None,
            http1_only,
            referer: None,
            title: None,
        };
        Transport::with_roots(settings, roots).unwrap()
    }

    async fn exchange(route: &Arc<Route>, request: Request<'_>) -> serde_json::Value {
        let mut answer = route.send(request).await.unwrap();
        assert_eq!(answer.status, 200);
        let mut body = Vec::new();
        while answer.next(&mut body).await.unwrap() {}
        serde_json::from_slice(&body).unwrap()
    }

    /// HTTPS with the server's certificate checked; HTTP/2 when ALPN offers it (requests then
    /// share its connection), HTTP/1.1 over TLS when it does not or when asked to.
    #[tokio::test]
    async fn https_speaks_http2_when_offered_and_http1_otherwise() {
        let key = ApiKey::new("sk-test-key");
        for (alpn, http1_only, version) in [
            (
                vec![b"h2".to_vec(), b"http/1.1".to_vec()],
                false,
                "HTTP/2.0",
            ),
            (vec![b"http/1.1".to_vec()], false, "HTTP/1.1"),
            (vec![b"h2".to_vec(), b"http/1.1".to_vec()], true, "HTTP/1.1"),
        ] {
            let port = tls_server(alpn).await;
            let transport = transport(http1_only);
            let route = transport
                .route(&format!("https://localhost:{port}/api/v1/"), Some(&key))
                .unwrap();
            for _ in 0..3 {
                let answer = exchange(&route, Request::Chat(br#"{"model":"m"}"#)).await;
                assert_eq!(answer["version"], version);
                assert_eq!(answer["method"], "POST");
                assert_eq!(answer["path"], "/api/v1/chat/completions");
                assert_eq!(answer["authorization"], "Bearer sk-test-key");
                assert_eq!(answer["body"], r#"{"model":"m"}"#);
            }
            let answer = exchange(&route, Request::Get("key")).await;
            assert_eq!(
                (answer["method"].as_str(), answer["path"].as_str()),
                (Some("GET"), Some("/api/v1/key"))
            );
            let idle = route.idle.lock().unwrap().len();
            assert_eq!(idle, usize::from(version == "HTTP/1.1"), "{version}");
        }
    }

    /// Past [`STREAMS_PER_H2_CONNECTION`] open streams a request opens another HTTP/2
    /// connection instead of queueing behind the server's stream limit; finished streams free
    /// their places.
    #[tokio::test]
    async fn http2_streams_spread_over_connections() {
        let port = tls_server(vec![b"h2".to_vec()]).await;
        let transport = transport(false);
        let route = transport
            .route(&format!("https://localhost:{port}/v1"), None)
            .unwrap();
        let mut open = Vec::new();
        for _ in 0..2 * STREAMS_PER_H2_CONNECTION + 1 {
            let answer = route.send(Request::Get("models")).await.unwrap();
            assert_eq!(answer.status, 200);
            open.push(answer);
        }
        assert_eq!(route.h2.lock().await.len(), 3);
        drop(open);
        for _ in 0..STREAMS_PER_H2_CONNECTION {
            exchange(&route, Request::Get("models")).await;
        }
        assert_eq!(route.h2.lock().await.len(), 3);
    }

    /// A host name whose first address does not answer (`localhost` as ::1 before 127.0.0.1,
    /// with a server on IPv4 only) is reached through the one that does, first from then on.
    #[tokio::test]
    async fn the_address_that_answered_is_tried_first() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { while listener.accept().await.is_ok() {} });
        let transport = transport(false);
        let route = transport
            .route(&format!("http://localhost:{port}/v1"), None)
            .unwrap();
        // As a resolver that lists ::1 first would give them (nothing listens there).
        let v6 = SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, port));
        let v4 = SocketAddr::from(([127, 0, 0, 1], port));
        *route.addrs.lock().unwrap() = Some((Arc::from([v6, v4]), Instant::now()));
        for _ in 0..2 {
            assert!(matches!(route.connect().await, Ok(Connected::H1(_))));
            let cached = route
                .addrs
                .lock()
                .unwrap()
                .as_ref()
                .map(|(a, _)| a.to_vec());
            assert_eq!(cached, Some(vec![v4, v6]));
        }
    }

    /// A certificate no trusted root signed is refused.
    #[tokio::test]
    async fn https_refuses_an_untrusted_certificate() {
        let port = tls_server(vec![b"http/1.1".to_vec()]).await;
        let transport = Transport::new(transport(false).settings.clone()).unwrap();
        let route = transport
            .route(&format!("https://localhost:{port}/v1"), None)
            .unwrap();
        let err = route.send(Request::Get("models")).await.unwrap_err();
        assert!(matches!(err, HttpError::Tls { .. }), "{err}");
    }
}
