//! The HTTP client: one pooled reqwest client (rustls with ring), timeouts at every stage,
//! streaming (SSE) and non-streaming calls, error classification.
//!
//! One [`Client`] serves every in-flight request of a run: reqwest keeps an unbounded HTTP/1.1
//! keep-alive pool per host (10,000 in flight means 10,000 connections, so raise `ulimit -n`) and
//! negotiates HTTP/2 through ALPN when a TLS server offers it (then requests share connections,
//! within the server's stream limit; set [`ClientConfig::http1_only`] to avoid that ceiling).
//!
//! Timeouts: [`ClientConfig::connect_timeout`] bounds each TCP+TLS connect (reqwest sets it per
//! client); per attempt, response headers must arrive within `connect + first_byte`, a stream's
//! first data event within the same deadline (keep-alive comments do not count), then no read may
//! wait longer than `idle`, and the whole attempt ends at `total`. The response type decides the
//! decoding: `text/event-stream` is assembled from chunks, anything else is parsed as JSON.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use serde_json::value::RawValue;
use serde_json::Value;
use tokio::time::Instant;

use super::assemble::ChunkAssembler;
use super::classify;
use super::sse::SseDecoder;
use super::{ApiError, ApiKey};
use crate::journal::ErrorClass;

/// Largest response body read before giving up (a runaway server must not exhaust memory).
const MAX_BODY_BYTES: usize = 64 << 20;

/// How long to wait for the end of a stream's body after `[DONE]`.
const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// One OpenAI-compatible endpoint.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// Short name used in logs and the journal.
    pub name: String,
    /// Base URL up to `/v1` (e.g. `https://openrouter.ai/api/v1`).
    pub base_url: String,
    pub api_key: Option<ApiKey>,
    /// Relative share of requests.
    pub weight: u32,
}

impl Endpoint {
    /// `{base_url}/{path}` with exactly one slash between.
    pub fn url(&self, path: &str) -> String {
        format!(
            "{}/{}",
            self.base_url.trim_end_matches('/'),
            path.trim_start_matches('/')
        )
    }
}

/// Timeouts for one attempt.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    pub connect: Duration,
    pub first_byte: Duration,
    /// Longest silence between stream chunks.
    pub idle: Duration,
    pub total: Duration,
}

/// A successful HTTP exchange: the chat.completion JSON (assembled from the stream when streaming).
#[derive(Debug, Clone)]
pub struct ChatOutcome {
    pub response: Value,
    pub http_status: u16,
    pub first_byte_ms: Option<u64>,
    pub latency_ms: u64,
    /// OpenRouter `X-Generation-Id`, if sent.
    pub generation_id: Option<String>,
}

/// How the shared client is built.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub user_agent: String,
    /// TCP + TLS connect limit for every new connection.
    pub connect_timeout: Duration,
    /// Idle keep-alive connections kept per host (reqwest's default is unbounded).
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
        }
    }
}

/// The client could not be built (bad header value, TLS setup).
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("`{field}` is not a valid HTTP header value: {value:?}")]
    Header { field: &'static str, value: String },
    #[error("cannot build the HTTP client: {0}")]
    Http(#[from] reqwest::Error),
}

/// A pooled client shared by all in-flight requests.
#[derive(Clone, Debug)]
pub struct Client {
    http: reqwest::Client,
}

impl Client {
    pub fn new(config: ClientConfig) -> Result<Self, BuildError> {
        let mut headers = HeaderMap::new();
        for (name, field, value) in [
            ("http-referer", "referer", &config.referer),
            ("x-title", "title", &config.title),
        ] {
            if let Some(value) = value {
                let header = HeaderValue::from_str(value).map_err(|_| BuildError::Header {
                    field,
                    value: value.clone(),
                })?;
                headers.insert(HeaderName::from_static(name), header);
            }
        }
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .user_agent(config.user_agent)
            .default_headers(headers)
            .connect_timeout(config.connect_timeout)
            .pool_max_idle_per_host(config.pool_max_idle_per_host)
            .pool_idle_timeout(config.pool_idle_timeout)
            .tcp_keepalive(config.tcp_keepalive)
            .tcp_nodelay(true);
        if config.http1_only {
            builder = builder.http1_only();
        } else {
            builder = builder.http2_adaptive_window(true);
        }
        Ok(Client {
            http: builder.build()?,
        })
    }

    /// POST `{base_url}/chat/completions` with `body` (serialized once by the caller, who also
    /// journals those bytes); classify any failure. The key is scrubbed from every error and from
    /// the response before either leaves this function.
    pub async fn chat(
        &self,
        endpoint: &Endpoint,
        body: &RawValue,
        timeouts: &Timeouts,
    ) -> Result<ChatOutcome, ApiError> {
        let key = endpoint.api_key.as_ref();
        match self.chat_unscrubbed(endpoint, body, timeouts).await {
            Ok(mut outcome) => {
                if let Some(key) = key {
                    key.scrub_json(&mut outcome.response);
                }
                Ok(outcome)
            }
            Err(err) => Err(err.scrubbed(key)),
        }
    }

    /// GET `{base_url}/{path}` and parse the JSON body (account endpoints); errors classified and
    /// scrubbed like [`Client::chat`]'s.
    pub async fn get_json(
        &self,
        endpoint: &Endpoint,
        path: &str,
        timeout: Duration,
    ) -> Result<Value, ApiError> {
        let key = endpoint.api_key.as_ref();
        let result = async {
            let mut request = self.http.get(endpoint.url(path)).timeout(timeout);
            if let Some(key) = key {
                request = request.bearer_auth(key.expose());
            }
            let response = request
                .send()
                .await
                .map_err(|e| classify::transport_error(&e))?;
            let status = response.status().as_u16();
            let retry_after = header_str(response.headers(), RETRY_AFTER.as_str());
            let bytes = response
                .bytes()
                .await
                .map_err(|e| classify::transport_error(&e).with_status(status))?;
            if !(200..300).contains(&status) {
                return Err(classify::http_error(status, retry_after.as_deref(), &bytes));
            }
            serde_json::from_slice(&bytes).map_err(|e| {
                ApiError::new(
                    ErrorClass::Malformed,
                    format!(
                        "GET {path}: body is not JSON ({e}): {}",
                        classify::quote(&String::from_utf8_lossy(&bytes))
                    ),
                )
                .with_status(status)
            })
        }
        .await;
        result.map_err(|e| e.scrubbed(key))
    }

    async fn chat_unscrubbed(
        &self,
        endpoint: &Endpoint,
        body: &RawValue,
        timeouts: &Timeouts,
    ) -> Result<ChatOutcome, ApiError> {
        let start = Instant::now();
        let deadlines = Deadlines {
            start,
            first_byte: start + timeouts.connect + timeouts.first_byte,
            total: start + timeouts.total,
            timeouts: *timeouts,
        };
        // reqwest needs an owned body; copying the serialized bytes is a memcpy, where `.json()`
        // would serialize a tree again.
        let mut request = self
            .http
            .post(endpoint.url("chat/completions"))
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(bytes::Bytes::copy_from_slice(body.get().as_bytes()));
        if let Some(key) = &endpoint.api_key {
            request = request.bearer_auth(key.expose());
        }
        let send = tokio::time::timeout_at(deadlines.first_wait(), request.send());
        let response = match send.await {
            Err(_) => return Err(deadlines.expired(Stage::Headers, None)),
            Ok(Err(e)) => return Err(classify::transport_error(&e)),
            Ok(Ok(response)) => response,
        };
        let headers_at = Instant::now();
        let status = response.status().as_u16();
        let retry_after = header_str(response.headers(), RETRY_AFTER.as_str());
        let generation_id = header_str(response.headers(), "x-generation-id");
        let is_stream = header_str(response.headers(), CONTENT_TYPE.as_str())
            .is_some_and(|t| t.trim_start().starts_with("text/event-stream"));

        if !response.status().is_success() {
            let bytes = read_all(response, &deadlines).await.unwrap_or_default();
            return Err(classify::http_error(status, retry_after.as_deref(), &bytes));
        }

        let (response, first_byte_at) = if is_stream {
            read_stream(response, &deadlines)
                .await
                .map_err(|e| e.with_status(status))?
        } else {
            let bytes = read_all(response, &deadlines)
                .await
                .map_err(|e| e.with_status(status))?;
            let json: Value = serde_json::from_slice(&bytes).map_err(|e| {
                ApiError::new(
                    ErrorClass::Malformed,
                    format!(
                        "response body is not JSON ({e}): {}",
                        classify::quote(&String::from_utf8_lossy(&bytes))
                    ),
                )
                .with_status(status)
            })?;
            (json, headers_at)
        };
        classify::check_completion(&response).map_err(|e| {
            e.with_status(status)
                .with_retry_after(None)
                .with_body(Some(response.clone()))
        })?;
        Ok(ChatOutcome {
            response,
            http_status: status,
            first_byte_ms: Some(millis(first_byte_at - start)),
            latency_ms: millis(start.elapsed()),
            generation_id,
        })
    }
}

/// Where an attempt was when a deadline passed.
#[derive(Debug, Clone, Copy)]
enum Stage {
    Headers,
    FirstEvent,
    Body,
}

/// The absolute deadlines of one attempt.
struct Deadlines {
    start: Instant,
    first_byte: Instant,
    total: Instant,
    timeouts: Timeouts,
}

impl Deadlines {
    /// Until the first byte of the answer (headers, or a stream's first data event).
    fn first_wait(&self) -> Instant {
        self.first_byte.min(self.total)
    }

    /// For the next read once data flows.
    fn idle_wait(&self) -> Instant {
        (Instant::now() + self.timeouts.idle).min(self.total)
    }

    fn expired(&self, stage: Stage, partial: Option<Value>) -> ApiError {
        let elapsed = self.start.elapsed();
        let reason = if Instant::now() >= self.total {
            format!("total timeout ({:?}) reached", self.timeouts.total)
        } else {
            match stage {
                Stage::Headers => format!(
                    "no response headers within the first-byte timeout ({:?} connect + {:?})",
                    self.timeouts.connect, self.timeouts.first_byte
                ),
                Stage::FirstEvent => format!(
                    "no stream data within the first-byte timeout ({:?} connect + {:?})",
                    self.timeouts.connect, self.timeouts.first_byte
                ),
                Stage::Body => format!("idle timeout: no bytes for {:?}", self.timeouts.idle),
            }
        };
        ApiError::new(
            ErrorClass::Timeout,
            format!("{reason} after {} ms", millis(elapsed)),
        )
        .with_body(partial)
    }
}

/// Read a whole (non-streamed) body under the idle and total deadlines.
async fn read_all(
    mut response: reqwest::Response,
    deadlines: &Deadlines,
) -> Result<Vec<u8>, ApiError> {
    let mut body = Vec::new();
    loop {
        let chunk = tokio::time::timeout_at(deadlines.idle_wait(), response.chunk()).await;
        match chunk {
            Err(_) => return Err(deadlines.expired(Stage::Body, None)),
            Ok(Err(e)) => return Err(classify::transport_error(&e)),
            Ok(Ok(None)) => return Ok(body),
            Ok(Ok(Some(bytes))) => {
                body.extend_from_slice(&bytes);
                if body.len() > MAX_BODY_BYTES {
                    return Err(ApiError::new(
                        ErrorClass::Malformed,
                        format!("response body exceeds {MAX_BODY_BYTES} bytes"),
                    ));
                }
            }
        }
    }
}

/// Decode an SSE body into one assembled completion; also returns when the first data event came.
async fn read_stream(
    mut response: reqwest::Response,
    deadlines: &Deadlines,
) -> Result<(Value, Instant), ApiError> {
    let mut decoder = SseDecoder::new();
    let mut assembler = ChunkAssembler::new();
    let mut first_event_at: Option<Instant> = None;
    let mut read_bytes = 0usize;
    let mut done = false;
    let partial = |a: &ChunkAssembler| (a.chunks() > 0).then(|| a.finish());
    'read: loop {
        let wait = if first_event_at.is_some() {
            deadlines.idle_wait()
        } else {
            deadlines.first_wait()
        };
        let stage = if first_event_at.is_some() {
            Stage::Body
        } else {
            Stage::FirstEvent
        };
        let ended = match tokio::time::timeout_at(wait, response.chunk()).await {
            Err(_) => return Err(deadlines.expired(stage, partial(&assembler))),
            Ok(Err(e)) => {
                return Err(classify::transport_error(&e).with_body(partial(&assembler)));
            }
            Ok(Ok(None)) => {
                decoder.finish();
                true
            }
            Ok(Ok(Some(bytes))) => {
                read_bytes += bytes.len();
                if read_bytes > MAX_BODY_BYTES {
                    return Err(ApiError::new(
                        ErrorClass::Malformed,
                        format!("stream exceeds {MAX_BODY_BYTES} bytes"),
                    )
                    .with_body(partial(&assembler)));
                }
                decoder.push(&bytes);
                false
            }
        };
        while let Some(event) = decoder.next_event() {
            first_event_at.get_or_insert_with(Instant::now);
            let data = event.data.trim();
            if data == "[DONE]" {
                done = true;
                break 'read;
            }
            let chunk: Value = serde_json::from_str(data).map_err(|e| {
                ApiError::new(
                    ErrorClass::Malformed,
                    format!("stream chunk is not JSON ({e}): {}", classify::quote(data)),
                )
                .with_body(partial(&assembler))
            })?;
            assembler.push(&chunk);
            if chunk.get("error").is_some_and(|e| !e.is_null()) {
                return Err(classify::mid_stream_error(&chunk).with_body(partial(&assembler)));
            }
        }
        if ended {
            break;
        }
    }
    if done {
        drain(&mut response, deadlines).await;
    }
    if assembler.chunks() == 0 {
        return Err(ApiError::new(
            ErrorClass::Malformed,
            "stream ended without any chunk",
        ));
    }
    if !done && !assembler.has_finish_reason() {
        return Err(ApiError::new(
            ErrorClass::Malformed,
            "stream ended without [DONE] and without a finish_reason (truncated)",
        )
        .with_body(partial(&assembler)));
    }
    let first = first_event_at.unwrap_or_else(Instant::now);
    Ok((assembler.finish(), first))
}

/// Read what follows `[DONE]` (normally just the end of the chunked body) so the connection goes
/// back to the keep-alive pool instead of being closed; a server that keeps the stream open past
/// `[DONE]` gets a short grace and then loses the connection.
async fn drain(response: &mut reqwest::Response, deadlines: &Deadlines) {
    let until = (Instant::now() + DRAIN_GRACE).min(deadlines.total);
    while let Ok(Ok(Some(_))) = tokio::time::timeout_at(until, response.chunk()).await {}
}

fn header_str(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
