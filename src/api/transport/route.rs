//! One endpoint as the wire sees it: the parsed origin, the request heads with every fixed
//! header already written out, and the loop that sends a request on a pooled or new connection.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hyper_util::client::legacy::connect::HttpConnector;
use tokio::sync::Notify;
use tokio_rustls::TlsConnector;

use super::body::{Sent, SentOn};
use super::conn::Conn;
use super::connect::{Connected, HAPPY_EYEBALLS_DELAY};
use super::error::HttpError;
use super::http1;
use super::pools::H2Pool;
use super::resolver::{AddrCache, CachedResolver};
use super::Settings;
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
    pub(super) tls: Option<(TlsConnector, rustls::pki_types::ServerName<'static>)>,
    pub(super) host: String,
    pub(super) port: u16,
    /// `{scheme}://{host}:{port}/`: what the connector (or the CONNECT tunnel) is asked for.
    pub(super) target: http::Uri,
    /// The proxy this route goes through, if any.
    pub(super) via: Option<Proxy>,
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
    pub(super) connect_timeout: Duration,
    /// TCP connects (Happy Eyeballs, keep-alive, no-delay), resolving through `addrs`.
    pub(super) connector: HttpConnector<CachedResolver>,
    pub(super) pool_max_idle: usize,
    pub(super) pool_idle_timeout: Duration,
    pub(super) protocol: AtomicU8,
    /// Idle HTTP/1.1 connections, most recently used last.
    pub(super) idle: Mutex<VecDeque<(Conn, Instant)>>,
    /// The resolved addresses of the host connected to (the proxy's, through one).
    pub(super) addrs: AddrCache,
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
        self.via
            .as_ref()
            .filter(|_| !self.target_prefix.is_empty())
            .map(Proxy::address)
    }

    pub(super) fn new(
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
    pub async fn send(self: &Arc<Self>, request: HttpRequest<'_>) -> Result<Sent, HttpError> {
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
