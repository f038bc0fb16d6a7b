//! [`ClientConfig`]: how the shared HTTP client is built. The client reads it once; the
//! transport's routes keep it for the connections they open (timeouts, pool, proxies, headers).

use std::time::Duration;

use super::Proxies;

/// How the shared client is built.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub user_agent: String,
    /// TCP + TLS connect limit for every new connection.
    pub connect_timeout: Duration,
    /// Idle keep-alive connections kept per endpoint (unbounded by default).
    pub pool_max_idle_per_host: usize,
    /// How long an idle pooled connection is kept.
    pub pool_idle_timeout: Duration,
    pub tcp_keepalive: Option<Duration>,
    /// Never negotiate HTTP/2 (avoids a server's per-connection stream limit at high concurrency).
    pub http1_only: bool,
    /// OpenRouter app attribution: `HTTP-Referer` header.
    pub referer: Option<String>,
    /// OpenRouter app attribution: `X-Title` header.
    pub title: Option<String>,
    /// Which proxy each endpoint goes through (by default the environment's rules).
    pub proxies: Proxies,
    /// PEM certificates trusted as roots besides the webpki ones (a private CA).
    pub extra_ca_pem: Option<Vec<u8>>,
    /// Keep each streamed answer's raw chunks in [`RawChatOutcome::chunks`] (`--keep-stream`).
    pub keep_stream_chunks: bool,
    /// Largest answer read, in bytes: a non-streamed body, one SSE line or event, an answer
    /// assembled from a stream (see `json_limits.rs`). Bounds memory per request in flight.
    pub max_answer_bytes: usize,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            user_agent: concat!("draftgen/", env!("CARGO_PKG_VERSION")).to_string(),
            connect_timeout: Duration::from_secs(10),
            pool_max_idle_per_host: usize::MAX,
            pool_idle_timeout: Duration::from_secs(90),
            tcp_keepalive: Some(Duration::from_secs(60)),
            http1_only: false,
            referer: None,
            title: None,
            proxies: Proxies::from_env(),
            extra_ca_pem: None,
            keep_stream_chunks: false,
            max_answer_bytes: super::json_limits::DEFAULT_MAX_ANSWER_BYTES,
        }
    }
}
