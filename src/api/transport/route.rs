//! One endpoint as the wire sees it: the parsed origin, the request heads with every fixed
//! header already written out, and the loop that sends a request on a pooled or new connection.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http2;
use tokio::sync::Notify;
use tokio_rustls::TlsConnector;

use super::body::{Sent, SentOn};
use super::connect::{tcp_connector, Connected, Connector};
use super::error::HttpError;
use super::http1;
use super::pools::{H2Pool, IdlePool};
use crate::api::client_config::ClientConfig;
use crate::api::proxy::Proxy;
use crate::api::ApiKey;

/// What a route speaks, once known (TLS routes learn it from ALPN on their first connection).
pub(super) const UNKNOWN: u8 = 0;
pub(super) const HTTP1: u8 = 1;
pub(super) const HTTP2: u8 = 2;

/// One request, as the route sends it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum HttpRequest<'a> {
    /// `POST {base}/chat/completions` with this JSON body.
    Chat(&'a [u8]),
    /// `GET {base}/{path}`.
    Get(&'a str),
}

/// One endpoint on the wire.
pub(crate) struct Route {
    /// The key this route's requests carry (the routes of one URL differ by key).
    pub(super) key: Option<ApiKey>,
    /// How new connections are opened (and through which proxy).
    pub(super) connector: Connector,
    /// `http://{authority}` for a plain route through a proxy (absolute-form request targets),
    /// else empty (origin-form).
    pub(super) target_prefix: String,
    /// `proxy-authorization: …\r\n` for a plain route through a proxy that wants credentials.
    /// Sensitive: never printed.
    pub(super) proxy_auth_line: String,
    /// `{scheme}://{authority}` and the base path (no trailing slash), for HTTP/2 URIs.
    pub(super) origin: String,
    /// `host[:port]` as the `host` header gives it.
    pub(super) host_header: String,
    pub(super) base_path: String,
    /// `POST …/chat/completions HTTP/1.1` and the fixed headers, up to `content-length: `.
    /// Holds the key: never printed.
    pub(super) chat_head: Vec<u8>,
    /// The fixed headers of every request (`host` excluded), for GETs and HTTP/2.
    pub(super) fixed: Vec<(&'static str, String)>,
    pub(super) protocol: AtomicU8,
    /// Idle HTTP/1.1 connections (shared with the answers that give theirs back).
    pub(super) idle: Arc<IdlePool>,
    /// The HTTP/2 connections. Never locked across an await.
    pub(super) h2: Mutex<H2Pool>,
    /// Signalled when a connect for `h2` ends (success or not): requests waiting for a stream
    /// look again.
    pub(super) h2_changed: Notify,
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
        self.connector
            .via
            .as_ref()
            .filter(|_| !self.target_prefix.is_empty())
            .map(Proxy::address)
    }

    pub(super) fn new(
        base_url: &str,
        key: Option<&ApiKey>,
        settings: &ClientConfig,
        tls: TlsConnector,
    ) -> Result<Route, HttpError> {
        let bad = |reason: &str| HttpError::Url {
            url: base_url.to_string(),
            reason: reason.to_string(),
        };
        let BaseUrl {
            secure,
            host,
            port,
            host_header,
            base_path,
        } = BaseUrl::parse(base_url).map_err(|reason| bad(&reason))?;
        let scheme = if secure { "https" } else { "http" };
        let target: http::Uri = format!("{scheme}://{host_header}/")
            .parse()
            .map_err(|e: http::uri::InvalidUri| bad(&e.to_string()))?;
        let via = settings.proxies.for_target(&target).map_err(|e| bad(&e))?;
        if let Some(proxy) = &via {
            tracing::debug!("{scheme}://{host_header}: through proxy {proxy}");
        }
        let (target_prefix, proxy_auth_line) =
            forwarding_parts(via.as_ref().filter(|_| !secure), &host_header);
        let tls = if secure {
            let name = rustls::pki_types::ServerName::try_from(host.clone())
                .map_err(|e| bad(&format!("not a TLS server name: {e}")))?;
            Some((tls, name))
        } else {
            None
        };

        let fixed = fixed_headers(settings, key);
        let chat_head = chat_head(
            &format!("{target_prefix}{base_path}"),
            &host_header,
            &proxy_auth_line,
            &fixed,
        );
        let (tcp, addrs) = tcp_connector(settings);
        Ok(Route {
            key: key.cloned(),
            origin: format!("{scheme}://{host_header}"),
            connector: Connector {
                tls,
                host,
                port,
                target,
                via,
                connect_timeout: settings.connect_timeout,
                tcp,
                addrs,
            },
            target_prefix,
            proxy_auth_line,
            host_header,
            base_path,
            chat_head,
            fixed,
            protocol: AtomicU8::new(if secure { UNKNOWN } else { HTTP1 }),
            idle: Arc::new(IdlePool::new(
                settings.pool_max_idle_per_host,
                settings.pool_idle_timeout,
            )),
            h2: Mutex::new(H2Pool::default()),
            h2_changed: Notify::new(),
        })
    }

    /// Connect if needed and write `request`; its answer is read from the returned [`Sent`].
    ///
    /// A request goes out a second time (on another connection) only when nothing of it reached
    /// the socket: a pooled connection found closed before the write, or a write on one that
    /// failed before the kernel took a byte. Every other failure is returned.
    pub async fn send(self: &Arc<Self>, request: HttpRequest<'_>) -> Result<Sent, HttpError> {
        loop {
            let (mut conn, reused) = match self.protocol.load(Ordering::Acquire) {
                // Boxed, like the other rare paths below: an HTTP/1.1 request's future (one per
                // request in flight) should not carry the size of TLS and HTTP/2 setup.
                HTTP2 | UNKNOWN => match Box::pin(self.send_h2(request)).await? {
                    Some(sent) => return Ok(sent),
                    None => continue,
                },
                _ => match self.idle.checkout() {
                    Some(conn) => (conn, true),
                    None => match self.connector.connect().await? {
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
                            idle: self.idle.clone(),
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
    fn h1_bytes(&self, request: HttpRequest<'_>) -> Vec<u8> {
        use std::io::Write;
        match request {
            HttpRequest::Chat(body) => {
                let mut out = Vec::with_capacity(self.chat_head.len() + 24 + body.len());
                out.extend_from_slice(&self.chat_head);
                let _ = write!(out, "{}\r\n\r\n", body.len());
                out.extend_from_slice(body);
                out
            }
            HttpRequest::Get(path) => {
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
}
impl Route {
    /// The request on an HTTP/2 connection with a free stream (a new one if all are busy);
    /// `None` if the server speaks HTTP/1.1 (the route is now an HTTP/1.1 one).
    ///
    /// One request at a time opens a connection, without holding the pool's lock: the others
    /// wait for [`Route::h2_changed`] and look again (a stream may also have come free).
    async fn send_h2(
        self: &Arc<Self>,
        request: HttpRequest<'_>,
    ) -> Result<Option<Sent>, HttpError> {
        let (mut sender, stream) = loop {
            if self.protocol.load(Ordering::Acquire) == HTTP1 {
                return Ok(None);
            }
            let wait = {
                let mut pool = self.h2.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(free) = pool.free_stream() {
                    break free;
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
            match self.connector.connect().await? {
                Connected::H2(sender) => self.adopt_h2(sender),
                Connected::H1(conn) => {
                    self.protocol.store(HTTP1, Ordering::Release);
                    self.idle.checkin(conn);
                    return Ok(None);
                }
            }
        };
        let request = self.h2_request(request)?;
        // hyper hands the request to the connection here; the future only waits for the answer.
        let response = Box::pin(sender.send_request(request));
        Ok(Some(Sent {
            at: Instant::now(),
            inner: SentOn::H2 { response, stream },
        }))
    }

    /// `request` as hyper's HTTP/2 request: an absolute URI and the fixed headers.
    fn h2_request(
        &self,
        request: HttpRequest<'_>,
    ) -> Result<hyper::Request<Full<Bytes>>, HttpError> {
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
        builder
            .body(body)
            .map_err(|e| HttpError::Protocol(format!("cannot build the request: {e}")))
    }

    /// A new connection negotiated HTTP/2: share it from now on.
    fn adopt_h2(&self, sender: http2::SendRequest<Full<Bytes>>) {
        self.h2
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .adopt(sender);
        self.protocol.store(HTTP2, Ordering::Release);
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

/// A base URL's parts, as a route needs them.
struct BaseUrl {
    secure: bool,
    /// The host without IPv6 brackets (what is resolved, and the TLS server name).
    host: String,
    port: u16,
    /// `host[:port]` as the `host` header gives it (user info dropped).
    host_header: String,
    /// The path, no trailing slash.
    base_path: String,
}

impl BaseUrl {
    /// `Err` says what is wrong with `base_url`.
    fn parse(base_url: &str) -> Result<BaseUrl, String> {
        let uri: http::Uri = base_url
            .trim()
            .parse()
            .map_err(|e: http::uri::InvalidUri| e.to_string())?;
        let secure = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return Err("the scheme must be http or https".into()),
        };
        let authority = uri.authority().ok_or("no host")?;
        Ok(BaseUrl {
            secure,
            host: authority
                .host()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            port: authority
                .port_u16()
                .unwrap_or(if secure { 443 } else { 80 }),
            host_header: authority
                .as_str()
                .rsplit_once('@')
                .map_or(authority.as_str(), |(_, h)| h)
                .to_string(),
            base_path: uri.path().trim_end_matches('/').to_string(),
        })
    }
}

/// For a plain route through a forwarding proxy (`forwarding`): the absolute-form target prefix
/// (`http://{host_header}`) and the `proxy-authorization` line when the proxy wants credentials;
/// both empty otherwise.
fn forwarding_parts(forwarding: Option<&Proxy>, host_header: &str) -> (String, String) {
    let target_prefix = forwarding.map_or_else(String::new, |_| format!("http://{host_header}"));
    let proxy_auth_line = forwarding
        .and_then(|p| p.auth.as_ref())
        .and_then(|auth| auth.to_str().ok())
        .map_or_else(String::new, |auth| {
            format!("proxy-authorization: {auth}\r\n")
        });
    (target_prefix, proxy_auth_line)
}

/// The headers every request of a route carries (`host` excluded): user agent, key, attribution.
fn fixed_headers(settings: &ClientConfig, key: Option<&ApiKey>) -> Vec<(&'static str, String)> {
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
    fixed
}

/// `POST {path}/chat/completions HTTP/1.1` and every fixed header, up to `content-length: `.
fn chat_head(
    path: &str,
    host_header: &str,
    proxy_auth_line: &str,
    fixed: &[(&'static str, String)],
) -> Vec<u8> {
    let mut head = format!(
        "POST {path}/chat/completions HTTP/1.1\r\nhost: {host_header}\r\n{proxy_auth_line}"
    );
    for (name, value) in fixed {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("content-type: application/json\r\ncontent-length: ");
    head.into_bytes()
}
