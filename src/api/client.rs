//! The HTTP client: one pooled client for every in-flight request, timeouts at every stage,
//! streaming (SSE) and non-streaming calls, error classification.
//!
//! One [`Client`] serves every in-flight request of a run. Plain `http://` endpoints get one
//! keep-alive HTTP/1.1 connection per request in flight (10,000 in flight means 10,000
//! connections, so raise `ulimit -n`), driven by the request's own task ([`super::http1`]);
//! `https://` endpoints negotiate HTTP/2 through ALPN when the server offers it (then requests
//! share connections, 100 streams each, below any server's stream limit; set
//! [`ClientConfig::http1_only`] for HTTP/1.1 connections). See [`super::transport`].
//!
//! Timeouts: [`ClientConfig::connect_timeout`] bounds each TCP+TLS connect (proxy and tunnel
//! included); per attempt, response headers must arrive within `first_byte` of the request being
//! written, a stream's first data event within the same deadline (keep-alive comments do not
//! count), then no read may wait longer than `idle`, and the whole attempt ends at `total`. The
//! response type decides the decoding: `text/event-stream` is assembled from chunks, anything else
//! is JSON. Redirects are not followed (a POST would be replayed somewhere the user did not name):
//! a 3xx is an error naming the `Location` to use as the base URL. Proxies follow the environment
//! (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`; [`ClientConfig::proxies`]).

use std::sync::Arc;
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::Value;
use tokio::time::Instant;

use super::assemble::ChunkAssembler;
use super::classify;
use super::client_config::ClientConfig;
use super::facts::{self, ResponseFacts};
use super::json_limits::{self, Refused};
use super::sse::SseDecoder;
use super::transport::{HttpAnswer, HttpRequest, Route, Transport};
use super::{ApiError, ApiKey};
use crate::api::ErrorClass;

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

/// [`ChatOutcome`] with the answer kept as its JSON text (what the engine journals), plus the
/// facts the engine books, read without building a tree.
#[derive(Debug)]
pub struct RawChatOutcome {
    /// The chat.completion as valid, compact JSON text (no whitespace outside strings, so one
    /// line), key scrubbed.
    pub response: String,
    pub facts: ResponseFacts,
    pub http_status: u16,
    pub first_byte_ms: Option<u64>,
    pub latency_ms: u64,
    /// OpenRouter `X-Generation-Id`, if sent.
    pub generation_id: Option<String>,
    /// A streamed answer's SSE `data` payloads as received (key scrubbed), when the client keeps
    /// them ([`ClientConfig::keep_stream_chunks`]); `[DONE]` is not among them.
    pub chunks: Option<Vec<String>>,
}

/// The client could not be built (bad header value, TLS setup).
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("`{field}` is not a valid HTTP header value: {value:?}")]
    Header { field: &'static str, value: String },
    #[error("cannot set up TLS: {0}")]
    Tls(#[from] rustls::Error),
    #[error("extra CA certificates: {0}")]
    Ca(String),
}

/// A pooled client shared by all in-flight requests.
#[derive(Clone, Debug)]
pub struct Client {
    transport: Arc<Transport>,
    keep_stream_chunks: bool,
    max_answer_bytes: usize,
}

impl Client {
    pub fn new(config: ClientConfig) -> Result<Self, BuildError> {
        for (field, value) in [
            ("user_agent", Some(&config.user_agent)),
            ("referer", config.referer.as_ref()),
            ("title", config.title.as_ref()),
        ] {
            if let Some(value) = value {
                // Header values are written into the request head as they are: no line breaks
                // or other control characters (which would end the header early).
                if value.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f) {
                    return Err(BuildError::Header {
                        field,
                        value: value.clone(),
                    });
                }
            }
        }
        let extra_roots = match &config.extra_ca_pem {
            None => Vec::new(),
            Some(pem) => {
                use rustls::pki_types::pem::PemObject;
                rustls::pki_types::CertificateDer::pem_slice_iter(pem)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| BuildError::Ca(e.to_string()))?
            }
        };
        let keep_stream_chunks = config.keep_stream_chunks;
        let max_answer_bytes = config.max_answer_bytes;
        let transport = Transport::new(config, extra_roots)?;
        Ok(Client {
            transport: Arc::new(transport),
            keep_stream_chunks,
            max_answer_bytes,
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
        let outcome = self.chat_raw(endpoint, body, timeouts).await?;
        let response = serde_json::from_str(&outcome.response).map_err(|e| {
            ApiError::new(
                ErrorClass::Malformed,
                format!("response body is not JSON ({e})"),
            )
            .with_status(outcome.http_status)
        })?;
        Ok(ChatOutcome {
            response,
            http_status: outcome.http_status,
            first_byte_ms: outcome.first_byte_ms,
            latency_ms: outcome.latency_ms,
            generation_id: outcome.generation_id,
        })
    }

    /// [`Client::chat`] with the answer kept as JSON text: what the engine journals.
    pub async fn chat_raw(
        &self,
        endpoint: &Endpoint,
        body: &RawValue,
        timeouts: &Timeouts,
    ) -> Result<RawChatOutcome, ApiError> {
        self.chat_raw_limits(endpoint, body, timeouts).await.0
    }

    /// [`Client::chat_raw`] and the rate limits the answer advertised (`X-RateLimit-*`), read
    /// from its head whatever came of it: the engine's pace is capped by them.
    pub async fn chat_raw_limits(
        &self,
        endpoint: &Endpoint,
        body: &RawValue,
        timeouts: &Timeouts,
    ) -> (Result<RawChatOutcome, ApiError>, Option<super::Advertised>) {
        let key = endpoint.api_key.as_ref();
        let mut limits = None;
        let result = self
            .chat_unscrubbed(endpoint, body, timeouts, &mut limits)
            .await
            .map_err(|err| err.scrubbed(key));
        (result, limits.map(|limits| *limits))
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
            let route = self.route(endpoint)?;
            let exchange = async {
                let sent = route
                    .send(HttpRequest::Get(path))
                    .await
                    .map_err(|e| classify::transport_error(&e))?;
                let mut answer = sent
                    .answer()
                    .await
                    .map_err(|e| classify::transport_error(&e))?;
                let status = answer.status;
                let mut bytes = Vec::new();
                while answer
                    .next(&mut bytes)
                    .await
                    .map_err(|e| classify::transport_error(&e).with_status(status))?
                {
                    if bytes.len() > self.max_answer_bytes {
                        let what = "response body";
                        return Err(
                            json_limits::too_large(what, self.max_answer_bytes).with_status(status)
                        );
                    }
                }
                Ok((status, answer.retry_after.take(), bytes))
            };
            let (status, retry_after, bytes) = tokio::time::timeout(timeout, exchange)
                .await
                .map_err(|_| {
                    ApiError::new(
                        ErrorClass::Timeout,
                        format!("GET {path}: no complete answer within {timeout:?}"),
                    )
                })??;
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

    fn route(&self, endpoint: &Endpoint) -> Result<Arc<Route>, ApiError> {
        self.transport
            .route(&endpoint.base_url, endpoint.api_key.as_ref())
            .map_err(|e| ApiError::new(ErrorClass::ClientError, e.to_string()))
    }

    async fn chat_unscrubbed(
        &self,
        endpoint: &Endpoint,
        body: &RawValue,
        timeouts: &Timeouts,
        limits: &mut Option<Box<super::Advertised>>,
    ) -> Result<RawChatOutcome, ApiError> {
        let start = Instant::now();
        let mut deadlines = Deadlines {
            start,
            // Until the request is written, only the connect timeout (inside `send`) and the
            // total one apply.
            first_byte: start + timeouts.total,
            total: start + timeouts.total,
            timeouts: *timeouts,
        };
        let route = self.route(endpoint)?;
        let mut answer = send_for_headers(&route, body, &mut deadlines).await?;
        let headers_at = Instant::now();
        let status = answer.status;
        let retry_after = answer.retry_after.take();
        let generation_id = answer.generation_id.take();
        *limits = answer.rate_limit.take();
        let is_stream = answer
            .content_type
            .as_deref()
            .is_some_and(|t| t.trim_start().starts_with("text/event-stream"));

        if (300..400).contains(&status) {
            return Err(redirect_error(status, answer.location.as_deref()));
        }
        let max = self.max_answer_bytes;
        if !(200..300).contains(&status) {
            let bytes = read_all(&mut answer, &deadlines, max)
                .await
                .unwrap_or_default();
            let err = classify::http_error(status, retry_after.as_deref(), &bytes);
            return Err(match route.forwarding_proxy() {
                Some(proxy) => classify::proxy_refusal(err, status, &bytes, &proxy),
                None => err,
            });
        }

        let key = endpoint.api_key.as_ref();
        let (body, first_byte_at) = if is_stream {
            // Boxed: the decoder and assembler should not size every request's future.
            Box::pin(self.streamed_answer(answer, &deadlines, key)).await
        } else {
            unstreamed_answer(answer, &deadlines, key, max)
                .await
                .map(|body| (body, headers_at))
        }
        .map_err(|e| e.with_status(status))?;
        Ok(RawChatOutcome {
            response: body.text,
            facts: body.facts,
            http_status: status,
            first_byte_ms: Some(millis(first_byte_at - start)),
            latency_ms: millis(start.elapsed()),
            generation_id,
            chunks: body.chunks,
        })
    }

    /// A streamed answer assembled, key scrubbed, and when its first data event came.
    async fn streamed_answer(
        &self,
        mut answer: HttpAnswer,
        deadlines: &Deadlines,
        key: Option<&ApiKey>,
    ) -> Result<(AnswerBody, Instant), ApiError> {
        let mut kept = self.keep_stream_chunks.then(Vec::new);
        let max = self.max_answer_bytes;
        let (mut value, first) = read_stream(&mut answer, deadlines, kept.as_mut(), max).await?;
        drop(answer);
        if let Some(key) = key {
            scrub_stream(key, &mut value, kept.as_mut());
        }
        let (text, facts) = assembled_text(value, max)?;
        Ok((
            AnswerBody {
                text,
                facts,
                chunks: kept,
            },
            first,
        ))
    }
}

/// An answer's JSON text, its facts and (streamed, when kept) its raw chunks.
struct AnswerBody {
    text: String,
    facts: ResponseFacts,
    chunks: Option<Vec<String>>,
}

/// Send `body` and wait for the answer's head, under the deadlines (the first-byte one starts
/// when the request is written).
async fn send_for_headers(
    route: &Arc<Route>,
    body: &RawValue,
    deadlines: &mut Deadlines,
) -> Result<HttpAnswer, ApiError> {
    let send = tokio::time::timeout_at(
        deadlines.total,
        route.send(HttpRequest::Chat(body.get().as_bytes())),
    );
    let sent = match send.await {
        Err(_) => return Err(deadlines.expired(Stage::Send, None)),
        Ok(Err(e)) => return Err(classify::transport_error(&e)),
        Ok(Ok(sent)) => sent,
    };
    deadlines.first_byte = Instant::from_std(sent.at) + deadlines.timeouts.first_byte;
    match tokio::time::timeout_at(deadlines.first_wait(), sent.answer()).await {
        Err(_) => Err(deadlines.expired(Stage::Headers, None)),
        Ok(Err(e)) => Err(classify::transport_error(&e)),
        Ok(Ok(answer)) => Ok(answer),
    }
}

/// A non-streamed answer read whole and checked; the connection goes back to the pool before
/// the answer is checked.
async fn unstreamed_answer(
    mut answer: HttpAnswer,
    deadlines: &Deadlines,
    key: Option<&ApiKey>,
    max: usize,
) -> Result<AnswerBody, ApiError> {
    let bytes = read_all(&mut answer, deadlines, max).await?;
    drop(answer);
    let (text, facts) = answer_text(bytes, key, max).map_err(|e| e.with_retry_after(None))?;
    Ok(AnswerBody {
        text,
        facts,
        chunks: None,
    })
}

/// A non-streamed answer: its bytes as compact JSON text with the key scrubbed, checked like
/// [`classify::check_completion`] and against the journal readers' limits, and its facts.
/// `Malformed` if the bytes are not JSON, `OverLimit` if beyond the limits.
fn answer_text(
    bytes: Vec<u8>,
    key: Option<&ApiKey>,
    max: usize,
) -> Result<(String, ResponseFacts), ApiError> {
    let mut compact = facts::compact_json(bytes);
    if let Some(scrubbed) = key.and_then(|k| k.scrub_json_bytes(&compact)) {
        compact = scrubbed;
    }
    // The description names the compacted text: what would have been journaled.
    let not_json = |bytes: &[u8]| {
        // Parse again for serde_json's own description of what is wrong.
        let reason = serde_json::from_slice::<Value>(bytes)
            .err()
            .map_or_else(|| "invalid JSON".to_string(), |e| e.to_string());
        ApiError::new(
            ErrorClass::Malformed,
            format!(
                "response body is not JSON ({reason}): {}",
                classify::quote(&String::from_utf8_lossy(bytes))
            ),
        )
    };
    if simdutf8::basic::from_utf8(&compact).is_err() {
        return Err(not_json(&compact));
    }
    // SAFETY: `compact` was just validated as UTF-8. simdutf8 does that about ten times faster
    // than `String::from_utf8` on answers in mixed scripts, and this runs for every answer.
    let text = unsafe { String::from_utf8_unchecked(compact) };
    let limits = json_limits::check(&text, max);
    if let Err(refused @ (Refused::TooLarge(..) | Refused::TooDeep)) = limits {
        return Err(json_limits::refusal(refused));
    }
    let tree_too_large = match &limits {
        Ok(checked) if !checked.tree_fits(max) => Some(json_limits::tree_too_large(
            "the answer",
            checked.tree_bytes,
            max,
        )),
        _ => None,
    };
    let facts = facts::check_answer_within(&text, tree_too_large).map_err(|e| match e.class {
        ErrorClass::Malformed if e.body.is_none() => not_json(text.as_bytes()),
        _ => e,
    })?;
    // A part the borrowed view skipped unread that the readers' parse refuses.
    limits.map_err(json_limits::refusal)?;
    Ok((text, facts))
}

/// A 3xx: not followed (the POST would go where the user did not send it), but named, with the
/// base URL it implies.
fn redirect_error(status: u16, location: Option<&str>) -> ApiError {
    let message = match location.map(str::trim).filter(|l| !l.is_empty()) {
        Some(location) => {
            let base = location
                .split(['?', '#'])
                .next()
                .unwrap_or(location)
                .trim_end_matches('/');
            let base = base.strip_suffix("/chat/completions").unwrap_or(base);
            format!(
                "HTTP {status}: the endpoint redirects to {location}; redirects are not followed \
                 — use --base-url {base}"
            )
        }
        None => format!(
            "HTTP {status}: the endpoint answers with a redirect (no Location header); \
             redirects are not followed — check --base-url"
        ),
    };
    ApiError::new(ErrorClass::ClientError, message).with_status(status)
}

/// Where an attempt was when a deadline passed.
#[derive(Debug, Clone, Copy)]
enum Stage {
    /// Connecting and writing the request.
    Send,
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
                // `send` ends at the connect timeout; only the total one can stop it here.
                Stage::Send => format!("total timeout ({:?}) reached", self.timeouts.total),
                Stage::Headers => format!(
                    "no response headers within the first-byte timeout ({:?} after the request was sent)",
                    self.timeouts.first_byte
                ),
                Stage::FirstEvent => format!(
                    "no stream data within the first-byte timeout ({:?} after the request was sent)",
                    self.timeouts.first_byte
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

/// Read a whole (non-streamed) body of at most `max` bytes under the idle and total deadlines.
/// Each piece is read into its own buffer and copied into the body only when it fits, so the
/// body never holds more than `max` bytes (and, grown in steps, never reserves more than `max`).
async fn read_all(
    answer: &mut HttpAnswer,
    deadlines: &Deadlines,
    max: usize,
) -> Result<Vec<u8>, ApiError> {
    let mut body = Vec::new();
    let mut piece = Vec::new();
    loop {
        piece.clear();
        match tokio::time::timeout_at(deadlines.idle_wait(), answer.next(&mut piece)).await {
            Err(_) => return Err(deadlines.expired(Stage::Body, None)),
            Ok(Err(e)) => return Err(classify::transport_error(&e)),
            Ok(Ok(false)) => return Ok(body),
            Ok(Ok(true)) => {
                let len = body.len() + piece.len();
                if len > max {
                    return Err(json_limits::too_large("response body", max));
                }
                if len > body.capacity() {
                    body.reserve_exact(len.max(body.capacity() * 2).min(max) - body.len());
                }
                body.extend_from_slice(&piece);
            }
        }
    }
}

/// A streamed answer and its kept chunks with `key` scrubbed out.
fn scrub_stream(key: &ApiKey, value: &mut Value, kept: Option<&mut Vec<String>>) {
    key.scrub_json(value);
    for chunk in kept.into_iter().flatten() {
        if let Some(scrubbed) = key.scrub_json_bytes(chunk.as_bytes()) {
            *chunk = String::from_utf8_lossy(&scrubbed).into_owned();
        }
    }
}

/// The text and facts of an answer assembled from a stream, once it is checked to be a
/// completion (an error that arrived as the stream's content is returned with it as its body)
/// within the journal readers' limits.
fn assembled_text(value: Value, max: usize) -> Result<(String, ResponseFacts), ApiError> {
    classify::check_completion(&value)
        .map_err(|e| e.with_retry_after(None).with_body(Some(value.clone())))?;
    let text = serde_json::to_string(&value).map_err(|e| {
        ApiError::new(
            ErrorClass::Malformed,
            format!("cannot serialize the assembled answer: {e}"),
        )
    })?;
    json_limits::admit(&text, max)?;
    Ok((text, ResponseFacts::of_value(&value)))
}

/// Decode an SSE body into one assembled completion; also returns when the first data event came.
/// With `kept`, every chunk's `data` payload is also kept there as received. No line, event or
/// assembled answer may pass `max` bytes (the whole stream may: its chunks are not kept).
async fn read_stream(
    answer: &mut HttpAnswer,
    deadlines: &Deadlines,
    mut kept: Option<&mut Vec<String>>,
    max: usize,
) -> Result<(Value, Instant), ApiError> {
    let mut decoder = SseDecoder::bounded(max);
    let mut assembler = ChunkAssembler::new();
    let mut first_event_at: Option<Instant> = None;
    let mut size = StreamSize::new(max, kept.is_some());
    let mut bytes = Vec::new();
    let done = loop {
        let (wait, stage) = match first_event_at {
            Some(_) => (deadlines.idle_wait(), Stage::Body),
            None => (deadlines.first_wait(), Stage::FirstEvent),
        };
        bytes.clear();
        let ended = match tokio::time::timeout_at(wait, answer.next(&mut bytes)).await {
            Err(_) => return Err(deadlines.expired(stage, partial(&assembler))),
            Ok(Err(e)) => {
                return Err(classify::transport_error(&e).with_body(partial(&assembler)));
            }
            Ok(Ok(more)) => !more,
        };
        size.read(bytes.len())?;
        decoder.push(&bytes);
        if ended {
            decoder.finish();
        }
        if decoder.overflowed() {
            return Err(json_limits::too_large("an SSE line or event", max));
        }
        let at_done = take_events(
            &mut decoder,
            &mut assembler,
            kept.as_deref_mut(),
            &mut first_event_at,
            &mut size,
        )?;
        if at_done {
            break true;
        }
        if ended {
            break false;
        }
    };
    if done {
        drain(answer, deadlines).await;
    }
    let completion = stream_end(&assembler, done)?;
    Ok((completion, first_event_at.unwrap_or_else(Instant::now)))
}

/// How much of a stream is held. The answer assembled so far is measured (a walk of its tree)
/// after every quarter of the limit pushed into it, so its tree never takes more than
/// [`json_limits::TREE_FACTOR`] times the limit plus a quarter; the walks cost at most four per
/// limit's worth of chunks. Kept chunks (`--keep-stream`) may total four times the limit.
struct StreamSize {
    max: usize,
    keeping: bool,
    read: usize,
    pushed_since_measured: usize,
}

impl StreamSize {
    fn new(max: usize, keeping: bool) -> StreamSize {
        StreamSize {
            max,
            keeping,
            read: 0,
            pushed_since_measured: 0,
        }
    }

    /// `n` more bytes of the stream were read.
    fn read(&mut self, n: usize) -> Result<(), ApiError> {
        self.read = self.read.saturating_add(n);
        if self.keeping && self.read / 4 > self.max {
            return Err(json_limits::too_large(
                "a stream kept whole (--keep-stream, four times the answer size)",
                self.max,
            ));
        }
        Ok(())
    }

    /// A chunk whose tree takes `tree_bytes` was pushed into `assembler`.
    fn pushed(&mut self, tree_bytes: usize, assembler: &ChunkAssembler) -> Result<(), ApiError> {
        self.pushed_since_measured = self.pushed_since_measured.saturating_add(tree_bytes);
        if self.pushed_since_measured > self.max / 4 {
            self.pushed_since_measured = 0;
            let held = assembler.tree_size();
            if held > self.max.saturating_mul(json_limits::TREE_FACTOR) {
                return Err(json_limits::tree_too_large(
                    "the answer assembled from the stream",
                    held,
                    self.max,
                ));
            }
        }
        Ok(())
    }
}

/// One event's chunk, parsed; a large one is measured first, so its tree is built only if it
/// fits the limit.
fn parse_chunk(data: &str, max: usize, assembler: &ChunkAssembler) -> Result<Value, ApiError> {
    const MEASURED_FROM: usize = 64 << 10;
    let over = |e: ApiError| e.with_body(partial(assembler));
    if data.len() > MEASURED_FROM {
        match json_limits::check(data, usize::MAX) {
            Err(Refused::TooDeep) => return Err(over(json_limits::refusal(Refused::TooDeep))),
            Ok(checked) if !checked.tree_fits(max) => {
                let tree = checked.tree_bytes;
                return Err(over(json_limits::tree_too_large(
                    "a stream chunk",
                    tree,
                    max,
                )));
            }
            _ => {}
        }
    }
    serde_json::from_str(data).map_err(|e| {
        // Nested past the readers' recursion limit: over the limits, not malformed.
        let class = match e.to_string().starts_with("recursion limit exceeded") {
            true => ErrorClass::OverLimit,
            false => ErrorClass::Malformed,
        };
        over(ApiError::new(
            class,
            format!("stream chunk is not JSON ({e}): {}", classify::quote(data)),
        ))
    })
}

/// The answer assembled so far, if any chunk came.
fn partial(assembler: &ChunkAssembler) -> Option<Value> {
    (assembler.chunks() > 0).then(|| assembler.finish())
}

/// Push every decoded event's chunk into `assembler` (and `kept`), noting when the first event
/// came; `Ok(true)` at `[DONE]`, `Err` for a chunk that is not JSON or carries an `error`.
fn take_events(
    decoder: &mut SseDecoder,
    assembler: &mut ChunkAssembler,
    mut kept: Option<&mut Vec<String>>,
    first_event_at: &mut Option<Instant>,
    size: &mut StreamSize,
) -> Result<bool, ApiError> {
    while let Some(event) = decoder.next_event() {
        first_event_at.get_or_insert_with(Instant::now);
        let data = event.data.trim();
        if data == "[DONE]" {
            return Ok(true);
        }
        let chunk = parse_chunk(data, size.max, assembler)?;
        assembler.push(&chunk);
        size.pushed(json_limits::tree_size(&chunk), assembler)?;
        if let Some(kept) = kept.as_deref_mut() {
            kept.push(data.to_string());
        }
        if chunk.get("error").is_some_and(|e| !e.is_null()) {
            let so_far = partial(assembler);
            return Err(classify::mid_stream_error(&chunk, so_far.as_ref()).with_body(so_far));
        }
    }
    Ok(false)
}

/// The completion a stream that ended (at `[DONE]` when `done`) gives: an error if it had no
/// chunk, or neither `[DONE]` nor a finish reason (cut short).
fn stream_end(assembler: &ChunkAssembler, done: bool) -> Result<Value, ApiError> {
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
        .with_body(partial(assembler)));
    }
    Ok(assembler.finish())
}

/// Read what follows `[DONE]` (normally just the end of the chunked body) so the connection goes
/// back to the keep-alive pool instead of being closed; a server that keeps the stream open past
/// `[DONE]` gets a short grace and then loses the connection.
async fn drain(answer: &mut HttpAnswer, deadlines: &Deadlines) {
    let until = (Instant::now() + DRAIN_GRACE).min(deadlines.total);
    let mut sink = Vec::new();
    while let Ok(Ok(true)) = tokio::time::timeout_at(until, answer.next(&mut sink)).await {
        sink.clear();
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
