//! Connections to the endpoints: TCP (and TLS) connects, a keep-alive pool per endpoint, and the
//! choice between our lean HTTP/1.1 exchange ([`http1`]) and hyper's HTTP/2.
//!
//! A [`Route`] is one endpoint as the wire sees it, built once per (base URL, key): the parsed
//! origin, the request heads with every fixed header already written out (user agent, key,
//! attribution), the resolved addresses and the idle connections. A request then costs a map
//! lookup, a pool pop and one buffer copy before its `write`.
//!
//! Plain `http://` endpoints (vLLM, SGLang, llama.cpp, the simulator) speak HTTP/1.1 over one
//! connection per request in flight. `https://` endpoints offer HTTP/2 through ALPN (rustls with
//! ring, the webpki roots); when the server takes it (OpenRouter does), requests share hyper
//! HTTP/2 connections, [`pools::STREAMS_PER_H2_CONNECTION`] at a time each, so thousands in
//! flight are spread over enough connections that no request waits for a server's stream limit
//! (set [`super::ClientConfig::http1_only`] to keep to HTTP/1.1 connections instead).
//!
//! What is the ecosystem's and what is ours:
//! - TCP connects are hyper-util's `HttpConnector`: Happy Eyeballs over all of a host's addresses
//!   (the other address family starts [`connect::HAPPY_EYEBALLS_DELAY`] after the first, each
//!   address with its share of the connect timeout), `TCP_NODELAY`, keep-alive. Only its resolver
//!   is ours ([`resolver`]): the addresses of a host are looked up once a minute, not once per
//!   connection (a big local run opens 10,000 at its start).
//! - Proxies: hyper-util's `Matcher` picks one from the environment ([`super::proxy`]),
//!   hyper-util's `Tunnel` opens the CONNECT tunnel for `https://` targets; `http://` targets go to
//!   the proxy in absolute form (`POST http://host/v1/chat/completions`), a property of the
//!   request head only.
//! - HTTP/2 is hyper's; TLS is rustls'.
//! - Hand-written: the HTTP/1.1 exchange itself ([`http1`], justified by the memory
//!   measurement in BENCHMARKS.md) and the keep-alive pool it needs.
//!
//! A request is never sent twice without the caller knowing: [`Route::send`] resends on another
//! connection only when no byte of it reached the socket (a pooled connection found closed before
//! the write, or a write that failed before the kernel took any byte). Once written, whatever
//! happens is the caller's error to record ([`body::Sent::answer`]), because the server may have
//! acted on it (for a paid API: a billed generation).
//!
//! No lock is held across a connect or a handshake: an HTTP/2 route lets one request open the
//! next connection while the others wait on a [`tokio::sync::Notify`] for it (not on the pool's
//! lock), so requests with a free stream never wait behind a slow handshake.
//!
//! The files, one job each, each reading only the ones listed before it: [`error`],
//! [`conn`] (the HTTP/1.1 connection and its byte count), [`resolver`] (the cached DNS lookups),
//! [`http1`] (the HTTP/1.1 exchange), [`pools`] (HTTP/2 connections and idle HTTP/1.1 ones),
//! [`connect`] (TCP, proxy, TLS), [`body`] (response heads and bodies), [`route`] (an endpoint's
//! request heads and the send loop).

mod body;
mod conn;
mod connect;
mod error;
mod http1;
mod pools;
mod resolver;
mod route;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio_rustls::TlsConnector;

pub(crate) use body::HttpAnswer;
pub(crate) use error::{error_chain, HttpError};
pub(crate) use route::{HttpRequest, Route};

use super::client_config::ClientConfig;
use super::ApiKey;

/// The routes of one client and the TLS configuration they share.
pub(crate) struct Transport {
    /// The client's settings, which every route's connections follow.
    settings: ClientConfig,
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
        settings: ClientConfig,
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
        settings: ClientConfig,
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
