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
//!
//! What is the ecosystem's and what is ours:
//! - TCP connects are hyper-util's `HttpConnector`: Happy Eyeballs over all of a host's addresses
//!   (the other address family starts [`HAPPY_EYEBALLS_DELAY`] after the first, each address with
//!   its share of the connect timeout), `TCP_NODELAY`, keep-alive. Only its resolver is ours
//!   ([`CachedResolver`]): the addresses of a host are looked up once a minute, not once per
//!   connection (a big local run opens 10,000 at its start).
//! - Proxies: hyper-util's `Matcher` picks one from the environment ([`super::proxy`]), hyper-util's
//!   `Tunnel` opens the CONNECT tunnel for `https://` targets; `http://` targets go to the proxy in
//!   absolute form (`POST http://host/v1/chat/completions`), a property of the request head only.
//! - HTTP/2 is hyper's; TLS is rustls'.
//! - Hand-written: the HTTP/1.1 exchange itself ([`super::http1`], justified by the memory
//!   measurement in BENCHMARKS.md) and the keep-alive pool it needs.
//!
//! A request is never sent twice without the caller knowing: [`Route::send`] resends on another
//! connection only when no byte of it reached the socket (a pooled connection found closed before
//! the write, or a write that failed before the kernel took any byte). Once written, whatever
//! happens is the caller's error to record ([`Sent::answer`]), because the server may have acted
//! on it (for a paid API: a billed generation).
//!
//! No lock is held across a connect or a handshake: an HTTP/2 route lets one request open the
//! next connection while the others wait on a [`Notify`] for it (not on the pool's lock), so
//! requests with a free stream never wait behind a slow handshake.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::io;
use std::mem::MaybeUninit;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http2;
use hyper_util::client::legacy::connect::dns::Name;
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;
use tower_service::Service;

use super::http1;
use super::proxy::{Proxies, Proxy};
use super::ApiKey;

/// How long resolved addresses of a host name are reused before asking the resolver again.
const DNS_TTL: Duration = Duration::from_secs(60);

/// Happy Eyeballs: how long the first address family has before the other one is tried too
/// (RFC 8305 recommends 250 ms).
pub(crate) const HAPPY_EYEBALLS_DELAY: Duration = Duration::from_millis(250);

/// A transport failure, before any HTTP status is known (or in the middle of a body).
#[derive(Debug, thiserror::Error)]
pub(crate) enum HttpError {
    #[error("invalid endpoint URL {url:?}: {reason}")]
    Url { url: String, reason: String },
    #[error("cannot connect to {addr}: {reason}")]
    Connect { addr: String, reason: String },
    #[error("proxy {proxy}: {reason}")]
    Proxy { proxy: String, reason: String },
    /// The proxy answered the CONNECT with 407 (its credentials are missing or wrong).
    #[error("proxy {proxy} refused the CONNECT tunnel to {target}: 407 proxy authentication required (the user and password in the proxy URL are missing or wrong)")]
    ProxyAuth { proxy: String, target: String },
    #[error("connect timeout ({0:?}) reached")]
    ConnectTimeout(Duration),
    #[error("TLS handshake with {host} failed: {source}")]
    Tls { host: String, source: io::Error },
    #[error("connection error: {0}")]
    Io(#[from] io::Error),
    #[error("connection closed before the response was complete")]
    Closed,
    /// The request was written and the connection ended before any byte of an answer: the
    /// server may have processed it, so it is not sent again here.
    #[error("the connection {} after the request was sent, before any response byte ({reason}); the server may have processed it", if *.reused { "(a reused keep-alive one) ended" } else { "ended" })]
    NoAnswer { reused: bool, reason: String },
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
    pub proxies: Proxies,
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
    /// `rustls-tls` does, and the `extra_roots` (a private CA, e.g. a TLS-inspecting proxy's).
    pub fn new(
        settings: Settings,
        extra_roots: Vec<rustls::pki_types::CertificateDer<'static>>,
    ) -> Result<Transport, rustls::Error> {
        let mut roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        for root in extra_roots {
            roots.add(root)?;
        }
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
    /// `{scheme}://{host}:{port}/`: what the connector (or the CONNECT tunnel) is asked for.
    target: http::Uri,
    /// The proxy this route goes through, if any.
    via: Option<Proxy>,
    /// `http://{authority}` for a plain route through a proxy (absolute-form request targets),
    /// else empty (origin-form).
    target_prefix: String,
    /// `proxy-authorization: …\r\n` for a plain route through a proxy that wants credentials.
    /// Sensitive: never printed.
    proxy_auth_line: String,
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
    /// TCP connects (Happy Eyeballs, keep-alive, no-delay), resolving through `addrs`.
    connector: HttpConnector<CachedResolver>,
    pool_max_idle: usize,
    pool_idle_timeout: Duration,
    protocol: AtomicU8,
    /// Idle HTTP/1.1 connections, most recently used last.
    idle: Mutex<VecDeque<(Conn, Instant)>>,
    /// The resolved addresses of the host connected to (the proxy's, through one).
    addrs: AddrCache,
    /// The HTTP/2 connections. Never locked across an await.
    h2: Mutex<H2Pool>,
    /// Signalled when a connect for `h2` ends (success or not): requests waiting for a stream
    /// look again.
    h2_changed: Notify,
}

/// A TLS route's HTTP/2 connections, and whether a request is opening the next one.
#[derive(Default)]
struct H2Pool {
    connections: Vec<H2Connection>,
    connecting: bool,
}

/// The addresses last resolved for a host, and when.
type AddrCache = Arc<Mutex<Option<(Arc<[SocketAddr]>, Instant)>>>;

/// The `HttpConnector`'s resolver: the system's (`getaddrinfo`, as tokio's `lookup_host`), asked
/// once per [`DNS_TTL`] per route instead of once per connection.
#[derive(Clone)]
struct CachedResolver {
    cache: AddrCache,
}

/// The addresses of one lookup, in the resolver's order.
struct Addrs(Arc<[SocketAddr]>, usize);

impl Iterator for Addrs {
    type Item = SocketAddr;

    fn next(&mut self) -> Option<SocketAddr> {
        let addr = self.0.get(self.1).copied();
        self.1 += 1;
        addr
    }
}

impl Service<Name> for CachedResolver {
    type Response = Addrs;
    type Error = io::Error;
    type Future = std::pin::Pin<Box<dyn Future<Output = io::Result<Self::Response>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let cache = self.cache.clone();
        Box::pin(async move {
            if let Some((addrs, at)) = cache.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
                if at.elapsed() < DNS_TTL {
                    return Ok(Addrs(addrs.clone(), 0));
                }
            }
            // Port 0: the connector puts the URL's port in.
            let addrs: Arc<[SocketAddr]> =
                tokio::net::lookup_host((name.as_str(), 0)).await?.collect();
            *cache.lock().unwrap_or_else(|p| p.into_inner()) =
                Some((addrs.clone(), Instant::now()));
            Ok(Addrs(addrs, 0))
        })
    }
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
    /// The proxy (its address, never its credentials) that forwards this route's requests in
    /// absolute form, so that an HTTP status may be the proxy's own; `None` when the answer can
    /// only be the server's (direct, or inside a CONNECT tunnel).
    pub(crate) fn forwarding_proxy(&self) -> Option<String> {
        self.via
            .as_ref()
            .filter(|_| !self.target_prefix.is_empty())
            .map(Proxy::address)
    }

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
        let scheme = if secure { "https" } else { "http" };
        let target: http::Uri = format!("{scheme}://{host_header}/")
            .parse()
            .map_err(|e: http::uri::InvalidUri| bad(&e.to_string()))?;
        let via = settings.proxies.for_target(&target).map_err(|e| bad(&e))?;
        if let Some(proxy) = &via {
            tracing::debug!("{scheme}://{host_header}: through proxy {proxy}");
        }
        let plain_via_proxy = via.as_ref().filter(|_| !secure);
        let target_prefix =
            plain_via_proxy.map_or_else(String::new, |_| format!("http://{host_header}"));
        let proxy_auth_line = plain_via_proxy
            .and_then(|p| p.auth.as_ref())
            .and_then(|auth| auth.to_str().ok())
            .map_or_else(String::new, |auth| {
                format!("proxy-authorization: {auth}\r\n")
            });
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
        let mut chat_head = format!(
            "POST {target_prefix}{base_path}/chat/completions HTTP/1.1\r\nhost: {host_header}\r\n{proxy_auth_line}"
        );
        for (name, value) in &fixed {
            chat_head.push_str(&format!("{name}: {value}\r\n"));
        }
        chat_head.push_str("content-type: application/json\r\ncontent-length: ");

        let addrs = AddrCache::default();
        let mut connector = HttpConnector::new_with_resolver(CachedResolver {
            cache: addrs.clone(),
        });
        connector.enforce_http(false);
        connector.set_nodelay(true);
        connector.set_keepalive(settings.tcp_keepalive);
        connector.set_happy_eyeballs_timeout(Some(HAPPY_EYEBALLS_DELAY));
        // Each address's share; the whole connect is bounded by `connect_timeout` too.
        connector.set_connect_timeout(Some(settings.connect_timeout));

        Ok(Route {
            key: key.cloned(),
            origin: format!("{scheme}://{host_header}"),
            target,
            via,
            target_prefix,
            proxy_auth_line,
            host_header,
            tls,
            host,
            port,
            base_path,
            chat_head: chat_head.into_bytes(),
            fixed,
            connect_timeout: settings.connect_timeout,
            connector,
            pool_max_idle: settings.pool_max_idle,
            pool_idle_timeout: settings.pool_idle_timeout,
            protocol: AtomicU8::new(if secure { UNKNOWN } else { HTTP1 }),
            idle: Mutex::new(VecDeque::new()),
            addrs,
            h2: Mutex::new(H2Pool::default()),
            h2_changed: Notify::new(),
        })
    }

    /// Connect if needed and write `request`; its answer is read from the returned [`Sent`].
    ///
    /// A request goes out a second time (on another connection) only when nothing of it reached
    /// the socket: a pooled connection found closed before the write, or a write on one that
    /// failed before the kernel took a byte. Every other failure is returned.
    pub async fn send(self: &Arc<Self>, request: Request<'_>) -> Result<Sent, HttpError> {
        loop {
            let (mut conn, reused) = match self.protocol.load(Ordering::Acquire) {
                // Boxed, like the other rare paths below: an HTTP/1.1 request's future (one per
                // request in flight) should not carry the size of TLS and HTTP/2 setup.
                HTTP2 | UNKNOWN => match Box::pin(self.send_h2(request)).await? {
                    Some(sent) => return Ok(sent),
                    None => continue,
                },
                _ => match self.checkout() {
                    Some(conn) => (conn, true),
                    None => match self.connect().await? {
                        Connected::H1(conn) => (conn, false),
                        Connected::H2(sender) => {
                            self.adopt_h2(sender);
                            continue;
                        }
                    },
                },
            };
            let bytes = self.h1_bytes(request);
            conn.reset_written();
            match http1::write_request(&mut conn, &bytes).await {
                Ok(()) => {
                    return Ok(Sent {
                        at: Instant::now(),
                        inner: SentOn::H1 {
                            conn,
                            reused,
                            route: self.clone(),
                        },
                    })
                }
                // The server closed the idle connection and the kernel refused the first byte:
                // nothing of this request left, so it may go out on another connection.
                Err(e) if reused && conn.written() == 0 => {
                    tracing::debug!("{}: pooled connection unusable ({e}); another", self.origin);
                }
                Err(e) if conn.written() == 0 => return Err(HttpError::Io(e)),
                Err(e) => {
                    return Err(HttpError::NoAnswer {
                        reused,
                        reason: format!("write failed after {} bytes: {e}", conn.written()),
                    })
                }
            }
        }
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
                    "GET {}{}/{} HTTP/1.1\r\nhost: {}\r\n{}",
                    self.target_prefix,
                    self.base_path,
                    path.trim_start_matches('/'),
                    self.host_header,
                    self.proxy_auth_line
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
    /// `None` if the server speaks HTTP/1.1 (the route is now an HTTP/1.1 one).
    ///
    /// One request at a time opens a connection, without holding the pool's lock: the others
    /// wait for [`Route::h2_changed`] and look again (a stream may also have come free).
    async fn send_h2(self: &Arc<Self>, request: Request<'_>) -> Result<Option<Sent>, HttpError> {
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
        // hyper hands the request to the connection here; the future only waits for the answer.
        let response = Box::pin(sender.send_request(request));
        Ok(Some(Sent {
            at: Instant::now(),
            inner: SentOn::H2 { response, stream },
        }))
    }

    /// A new connection negotiated HTTP/2: share it from now on.
    fn adopt_h2(&self, sender: http2::SendRequest<Full<Bytes>>) {
        self.h2
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .connections
            .push(H2Connection::new(sender));
        self.protocol.store(HTTP2, Ordering::Release);
    }

    /// An idle connection that is still open.
    fn checkout(&self) -> Option<Conn> {
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

    /// A new connection (TCP, through the proxy if any, then TLS for https), within the connect
    /// timeout.
    async fn connect(&self) -> Result<Connected, HttpError> {
        tokio::time::timeout(self.connect_timeout, Box::pin(self.connect_unbounded()))
            .await
            .unwrap_or(Err(HttpError::ConnectTimeout(self.connect_timeout)))
    }

    async fn connect_unbounded(&self) -> Result<Connected, HttpError> {
        let tcp = match (&self.via, &self.tls) {
            (None, _) => self.tcp(&self.target).await?,
            // Plain targets: the proxy takes absolute-form requests on its own connection.
            (Some(proxy), None) => self.tcp(&proxy.uri).await.map_err(|e| HttpError::Proxy {
                proxy: proxy.address(),
                reason: error_chain(&e),
            })?,
            (Some(proxy), Some(_)) => Box::pin(self.tunnel(proxy)).await?,
        };
        let tcp = tcp.into_inner();
        match &self.tls {
            None => Ok(Connected::H1(Conn::new(Io::Plain(Tcp::new(tcp))))),
            // Boxed: the TLS and HTTP/2 handshakes are large futures that plain connects
            // (10,000 at once at the start of a big local run) should not be sized for.
            Some((connector, name)) => Box::pin(self.secure(connector, name, tcp)).await,
        }
    }

    /// A TCP connection to `uri`'s host (Happy Eyeballs over its addresses).
    async fn tcp(&self, uri: &http::Uri) -> Result<TokioIo<TcpStream>, HttpError> {
        let mut connector = self.connector.clone();
        let connected = connector.call(uri.clone()).await;
        connected.map_err(|e| {
            // The addresses may have changed: ask the resolver again next time.
            *self.addrs.lock().unwrap_or_else(|p| p.into_inner()) = None;
            let host = uri.host().unwrap_or_default();
            let port = uri.port_u16().unwrap_or(80);
            HttpError::Connect {
                addr: format!("{host}:{port}"),
                reason: error_chain(&e),
            }
        })
    }

    /// A CONNECT tunnel through `proxy` to this route's host (hyper-util's `Tunnel`).
    async fn tunnel(&self, proxy: &Proxy) -> Result<TokioIo<TcpStream>, HttpError> {
        let mut tunnel = Tunnel::new(proxy.uri.clone(), self.connector.clone());
        if let Some(auth) = &proxy.auth {
            tunnel = tunnel.with_auth(auth.clone());
        }
        tunnel.call(self.target.clone()).await.map_err(|e| {
            // hyper-util does not export its `TunnelError`; its text is the only way to tell a
            // 407 from every other refusal (which a proxy may also give for a target that
            // refused: those stay connect failures, retried by the policy).
            if e.to_string().contains("proxy authorization required") {
                return HttpError::ProxyAuth {
                    proxy: proxy.address(),
                    target: format!("{}:{}", self.host, self.port),
                };
            }
            HttpError::Proxy {
                proxy: proxy.address(),
                reason: format!(
                    "CONNECT {}:{} failed: {}",
                    self.host,
                    self.port,
                    error_chain(&e)
                ),
            }
        })
    }

    /// TLS over `tcp`, then HTTP/2 if ALPN chose it.
    async fn secure(
        &self,
        connector: &TlsConnector,
        name: &rustls::pki_types::ServerName<'static>,
        tcp: TcpStream,
    ) -> Result<Connected, HttpError> {
        let tls = connector
            .connect(name.clone(), Tcp::new(tcp))
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
}

/// Held by the request opening a route's next HTTP/2 connection: when it is done (or dropped
/// by a timeout), the others are told to look again.
struct H2Connecting<'a>(&'a Route);

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

/// A request that has been handed to a connection; [`Sent::answer`] reads the response head.
pub(crate) struct Sent {
    /// When the request was written: the first-byte timeout runs from here.
    pub at: Instant,
    inner: SentOn,
}

impl std::fmt::Debug for Sent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let on = match self.inner {
            SentOn::H1 { .. } => "HTTP/1.1",
            SentOn::H2 { .. } => "HTTP/2",
        };
        f.debug_struct("Sent").field("on", &on).finish()
    }
}

type H2Response = std::pin::Pin<
    Box<dyn Future<Output = hyper::Result<hyper::Response<hyper::body::Incoming>>> + Send>,
>;

enum SentOn {
    H1 {
        conn: Conn,
        reused: bool,
        route: Arc<Route>,
    },
    H2 {
        response: H2Response,
        stream: OpenStream,
    },
}

impl Sent {
    /// Wait for the response head; the body is read from the returned [`Answer`]. A connection
    /// that ends before any response byte is [`HttpError::NoAnswer`]: never resent here.
    pub async fn answer(self) -> Result<Answer, HttpError> {
        match self.inner {
            SentOn::H1 {
                conn,
                reused,
                route,
            } => match http1::Response::read_head(conn, false).await {
                Ok(response) => Ok(Answer {
                    status: response.head.status,
                    content_type: response.head.content_type.clone(),
                    retry_after: response.head.retry_after.clone(),
                    generation_id: response.head.generation_id.clone(),
                    location: response.head.location.clone(),
                    body: Body::H1 {
                        response: Some(response),
                        route,
                    },
                }),
                Err((e @ (HttpError::Closed | HttpError::Io(_)), false)) => {
                    Err(HttpError::NoAnswer {
                        reused,
                        reason: e.to_string(),
                    })
                }
                Err((e, _)) => Err(e),
            },
            SentOn::H2 { response, stream } => {
                let response = response.await.map_err(|e| HttpError::h2(&e))?;
                let header = |name: &str| {
                    response
                        .headers()
                        .get(name)
                        .and_then(|v| v.to_str().ok())
                        .map(|v| v.trim().to_string())
                };
                Ok(Answer {
                    status: response.status().as_u16(),
                    content_type: header("content-type"),
                    retry_after: header("retry-after"),
                    generation_id: header("x-generation-id"),
                    location: header("location"),
                    body: Body::H2 {
                        body: response.into_body(),
                        _open: stream,
                    },
                })
            }
        }
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
    Plain(Tcp),
    Tls(Box<TlsStream<Tcp>>),
}

/// A TCP stream that counts the bytes the kernel took, so a failed write can tell whether any
/// byte of the request left (below TLS: what the socket took, not what rustls buffered).
#[derive(Debug)]
struct Tcp {
    stream: TcpStream,
    written: u64,
}

impl Tcp {
    fn new(stream: TcpStream) -> Tcp {
        Tcp { stream, written: 0 }
    }
}

impl AsyncRead for Tcp {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Tcp {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.stream).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = written {
            this.written += n as u64;
        }
        written
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

impl Conn {
    fn new(io: Io) -> Conn {
        Conn { io, reused: false }
    }

    fn tcp(&self) -> &Tcp {
        match &self.io {
            Io::Plain(tcp) => tcp,
            Io::Tls(tls) => tls.get_ref().0,
        }
    }

    fn tcp_mut(&mut self) -> &mut Tcp {
        match &mut self.io {
            Io::Plain(tcp) => tcp,
            Io::Tls(tls) => tls.get_mut().0,
        }
    }

    /// Bytes the kernel has taken since the last [`Conn::reset_written`].
    fn written(&self) -> u64 {
        self.tcp().written
    }

    fn reset_written(&mut self) {
        self.tcp_mut().written = 0;
    }

    /// Whether an idle connection can take a request: the server has not closed it (and, on a
    /// plain one, sent nothing unasked). One non-blocking `recv(MSG_PEEK)` per request taken
    /// from the pool — not the runtime's cached readiness, which may not have seen a FIN that
    /// arrived a moment ago: a request written into a closed connection may not be resent.
    fn still_open(&mut self) -> bool {
        let mut byte = [MaybeUninit::<u8>::uninit(); 1];
        match socket2::SockRef::from(&self.tcp().stream).peek(&mut byte) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => true,
            Err(_) | Ok(0) => false,
            Ok(_) => match &mut self.io {
                Io::Plain(_) => false,
                // TLS servers may send a session ticket after the handshake (fine), or a
                // close_notify before closing (not): let rustls read what is there.
                Io::Tls(tls) => {
                    let mut cx = Context::from_waker(std::task::Waker::noop());
                    let mut byte = [0u8; 1];
                    let mut buf = ReadBuf::new(&mut byte);
                    matches!(
                        Pin::new(tls.as_mut()).poll_read(&mut cx, &mut buf),
                        Poll::Pending
                    )
                }
            },
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
    /// `Location` (of a 3xx).
    pub location: Option<String>,
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
        tls_server_serving(alpn, usize::MAX).await
    }

    /// [`tls_server`] that serves its first `served` connections; later ones are accepted and
    /// never answered (a TLS handshake that hangs).
    async fn tls_server_serving(alpn: Vec<Vec<u8>>, mut served: usize) -> u16 {
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
            let mut stalled = Vec::new();
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                if served == 0 {
                    stalled.push(tcp);
                    continue;
                }
                served -= 1;
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
            proxies: Proxies::none(),
        };
        Transport::with_roots(settings, roots).unwrap()
    }

    async fn exchange(route: &Arc<Route>, request: Request<'_>) -> serde_json::Value {
        let mut answer = route.send(request).await.unwrap().answer().await.unwrap();
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
            let sent = route.send(Request::Get("models")).await.unwrap();
            let answer = sent.answer().await.unwrap();
            assert_eq!(answer.status, 200);
            open.push(answer);
        }
        assert_eq!(route.h2.lock().unwrap().connections.len(), 3);
        drop(open);
        for _ in 0..STREAMS_PER_H2_CONNECTION {
            exchange(&route, Request::Get("models")).await;
        }
        assert_eq!(route.h2.lock().unwrap().connections.len(), 3);
    }

    /// No lock is held across a handshake: while one request waits on a new HTTP/2 connection
    /// whose TLS handshake never ends, a request that finds a free stream on the existing
    /// connection goes ahead.
    #[tokio::test]
    async fn a_hanging_handshake_does_not_hold_up_requests_with_a_free_stream() {
        let port = tls_server_serving(vec![b"h2".to_vec()], 1).await;
        let mut transport = transport(false);
        // Long enough that waiting for it would hang the test.
        transport.settings.connect_timeout = Duration::from_secs(3600);
        let route = transport
            .route(&format!("https://localhost:{port}/v1"), None)
            .unwrap();
        let mut open = Vec::new();
        for _ in 0..STREAMS_PER_H2_CONNECTION {
            let sent = route.send(Request::Get("models")).await.unwrap();
            open.push(sent.answer().await.unwrap());
        }
        // Every stream is busy: this one opens a second connection, which hangs.
        let stuck = tokio::spawn({
            let route = route.clone();
            async move { route.send(Request::Get("models")).await.map(|_| ()) }
        });
        while !route.h2.lock().unwrap().connecting {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        drop(open.pop());
        let answer = tokio::time::timeout(
            Duration::from_secs(60),
            exchange(&route, Request::Get("models")),
        )
        .await
        .expect("the request waited behind the hanging handshake");
        assert_eq!(answer["version"], "HTTP/2.0");
        assert!(route.h2.lock().unwrap().connecting, "still connecting");
        stuck.abort();
    }

    /// Happy Eyeballs: a host whose first address is black-holed (a loopback listener whose
    /// backlog is full drops further SYNs: the connect hangs, as to an unreachable IPv6 route)
    /// is reached through its other address instead of waiting out the connect timeout — and
    /// one whose first address refuses (`localhost` as ::1 with a server on IPv4 only) too.
    #[tokio::test]
    async fn a_black_holed_first_address_does_not_fail_the_endpoint() {
        if std::net::TcpListener::bind("[::1]:0").is_err() {
            eprintln!(
                "skipped: no IPv6 loopback here, so no second address family to fall back to"
            );
            return;
        }
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { while listener.accept().await.is_ok() {} });
        let v4 = SocketAddr::from(([127, 0, 0, 1], port));

        // The black hole, on [::1] and the server's port: listen with a backlog of zero, never
        // accept, fill the queue.
        let hole_addr = SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, port));
        let hole =
            socket2::Socket::new(socket2::Domain::IPV6, socket2::Type::STREAM, None).unwrap();
        hole.bind(&hole_addr.into()).unwrap();
        hole.listen(0).unwrap();
        let mut fillers = Vec::new();
        let black_holed = loop {
            // Once the queue is full a connect no longer completes.
            let attempt =
                tokio::time::timeout(Duration::from_millis(300), TcpStream::connect(hole_addr))
                    .await;
            match attempt {
                Ok(Ok(stream)) => fillers.push(stream),
                Ok(Err(_)) => break false,
                Err(_) => break true,
            }
            if fillers.len() > 16 {
                break false;
            }
        };
        if !black_holed {
            eprintln!("skipped: this kernel answers SYNs to a full backlog; no black hole to test");
            return;
        }

        let mut transport = transport(false);
        // Far longer than the test may take: success means the other address was tried.
        transport.settings.connect_timeout = Duration::from_secs(3600);
        let route = transport
            .route(&format!("http://localhost:{port}/v1"), None)
            .unwrap();
        let refusing = SocketAddr::from(([127, 0, 0, 3], port));
        for addrs in [[hole_addr, v4], [refusing, v4]] {
            *route.addrs.lock().unwrap() = Some((Arc::from(addrs), Instant::now()));
            let connected = tokio::time::timeout(Duration::from_secs(120), route.connect())
                .await
                .unwrap_or_else(|_| panic!("{addrs:?}: stuck on the first address"));
            assert!(matches!(connected, Ok(Connected::H1(_))), "{addrs:?}");
        }
        drop(fillers);
    }

    /// A certificate no trusted root signed is refused.
    #[tokio::test]
    async fn https_refuses_an_untrusted_certificate() {
        let port = tls_server(vec![b"http/1.1".to_vec()]).await;
        let transport = Transport::new(transport(false).settings.clone(), Vec::new()).unwrap();
        let route = transport
            .route(&format!("https://localhost:{port}/v1"), None)
            .unwrap();
        let err = route.send(Request::Get("models")).await.unwrap_err();
        assert!(matches!(err, HttpError::Tls { .. }), "{err}");
    }
}
