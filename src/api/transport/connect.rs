//! A new connection for a route: TCP (Happy Eyeballs through hyper-util's `HttpConnector`),
//! directly or through a proxy (a CONNECT tunnel for `https://` targets), then TLS and, when ALPN
//! chooses it, the HTTP/2 handshake.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http2;
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tower_service::Service;

use super::conn::{Conn, Io, Tcp};
use super::error::{error_chain, HttpError};
use super::resolver::{AddrCache, CachedResolver};
use crate::api::client_config::ClientConfig;
use crate::api::proxy::Proxy;

/// Happy Eyeballs: how long the first address family has before the other one is tried too
/// (RFC 8305 recommends 250 ms).
pub(crate) const HAPPY_EYEBALLS_DELAY: Duration = Duration::from_millis(250);

/// A fresh connection: HTTP/1.1, or the sender of a new HTTP/2 connection (ALPN chose).
pub(super) enum Connected {
    H1(Conn),
    H2(http2::SendRequest<Full<Bytes>>),
}

/// How a route opens connections to its host: where to (directly, or through a proxy), TLS or
/// not, and the TCP connector with its cached addresses.
pub(super) struct Connector {
    pub(super) tls: Option<(TlsConnector, rustls::pki_types::ServerName<'static>)>,
    pub(super) host: String,
    pub(super) port: u16,
    /// `{scheme}://{host}:{port}/`: what the connector (or the CONNECT tunnel) is asked for.
    pub(super) target: http::Uri,
    /// The proxy this route goes through, if any.
    pub(super) via: Option<Proxy>,
    pub(super) connect_timeout: Duration,
    /// TCP connects (Happy Eyeballs, keep-alive, no-delay), resolving through `addrs`.
    pub(super) tcp: HttpConnector<CachedResolver>,
    /// The resolved addresses of the host connected to (the proxy's, through one).
    pub(super) addrs: AddrCache,
}

/// The TCP connector of a route (Happy Eyeballs, keep-alive, no-delay) and the address cache
/// its resolver fills.
pub(super) fn tcp_connector(settings: &ClientConfig) -> (HttpConnector<CachedResolver>, AddrCache) {
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
    (connector, addrs)
}

impl Connector {
    /// A new connection (TCP, through the proxy if any, then TLS for https), within the connect
    /// timeout.
    pub(super) async fn connect(&self) -> Result<Connected, HttpError> {
        tokio::time::timeout(self.connect_timeout, Box::pin(self.connect_unbounded()))
            .await
            .unwrap_or(Err(HttpError::ConnectTimeout(self.connect_timeout)))
    }

    async fn connect_unbounded(&self) -> Result<Connected, HttpError> {
        let tcp = match (&self.via, &self.tls) {
            (None, _) => self.tcp_to(&self.target).await?,
            // Plain targets: the proxy takes absolute-form requests on its own connection.
            (Some(proxy), None) => self
                .tcp_to(&proxy.uri)
                .await
                .map_err(|e| HttpError::Proxy {
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
    async fn tcp_to(&self, uri: &http::Uri) -> Result<TokioIo<TcpStream>, HttpError> {
        let mut connector = self.tcp.clone();
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
        let mut tunnel = Tunnel::new(proxy.uri.clone(), self.tcp.clone());
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
