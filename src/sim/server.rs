//! The HTTP side: axum routes, the request pipeline (auth → parse → attempt number → fault draw
//! → answer → flavour → pacing), graceful shutdown, and [`spawn`] for in-process use.
//!
//! Every request does a little work on its own task (write an answer, tokenize a few hundred
//! tokens) and shares only immutable state, atomics and a sharded attempt map, so the server
//! keeps up with 10,000 concurrent connections. Hang faults wait on the shutdown signal as well
//! as their timer, so shutting down never waits for them.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use axum::{Json, Router};
use futures_util::{stream, StreamExt};
use rand::Rng;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::answer::{self, Prompted, END_OF_TURN};
use super::attempts::Attempts;
use super::capacity::{Capacity, CapacitySnapshot};
use super::config::SimConfig;
use super::counters::{CounterSnapshot, Counters};
use super::faults::FaultKind;
use super::flavor::Flavor;
use super::flavor::{self, Event, Turn};
use super::request::ChatRequest;
use super::seed::{self, Purpose};
use super::tokens::TokenCounter;
use super::SimError;
use crate::server::quirks::StreamsTokenDeltas;
use crate::server::Syntax;

/// Before dropping a connection on purpose, long enough for what was written to be flushed.
const FLUSH_PAUSE: Duration = Duration::from_millis(20);

struct Shared {
    config: SimConfig,
    tokens: TokenCounter,
    counters: Arc<Counters>,
    capacity: Option<Arc<Capacity>>,
    attempts: Attempts,
    shutdown: watch::Receiver<bool>,
}

/// A configured simulator, not yet listening.
pub struct Simulator {
    shared: Arc<Shared>,
    shutdown_tx: watch::Sender<bool>,
}

impl Simulator {
    /// Load the tokenizer (if `model_dir` is set) and prepare the state.
    pub fn new(config: SimConfig) -> Result<Self, SimError> {
        let tokens = TokenCounter::load(
            config.model_dir.as_deref(),
            config.profile.as_deref(),
            config.chat_template.as_deref(),
        )
        .map_err(|source| SimError::Model {
            dir: config
                .model_dir
                .as_ref()
                .map(|d| d.display().to_string())
                .unwrap_or_default(),
            source,
        })?;
        let (shutdown_tx, shutdown) = watch::channel(false);
        let capacity = config.capacity.map(|c| Arc::new(Capacity::new(c)));
        Ok(Simulator {
            shared: Arc::new(Shared {
                config,
                tokens,
                counters: Arc::new(Counters::default()),
                capacity,
                attempts: Attempts::default(),
                shutdown,
            }),
            shutdown_tx,
        })
    }

    /// The live counters (shared with the running server).
    pub fn counters(&self) -> Arc<Counters> {
        self.shared.counters.clone()
    }

    /// The capacity model's state, if the simulator has one.
    pub fn capacity(&self) -> Option<Arc<Capacity>> {
        self.shared.capacity.clone()
    }

    /// Serve on `listener` until `shutdown` completes; in-flight answers finish, hangs are cut.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), SimError> {
        let router = router(self.shared.clone());
        let shutdown_tx = self.shutdown_tx;
        // Small SSE frames must not wait on Nagle's algorithm.
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                shutdown.await;
                // Wake every hanging request so the graceful shutdown does not wait for them.
                let _ = shutdown_tx.send(true);
            })
            .await
            .map_err(SimError::Serve)
    }
}

/// Serve `config` on `listener` until `shutdown` completes.
pub async fn serve(
    config: SimConfig,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), SimError> {
    Simulator::new(config)?.serve(listener, shutdown).await
}

/// A simulator running on its own task; shut down on [`SimHandle::shutdown`] or drop.
pub struct SimHandle {
    addr: SocketAddr,
    counters: Arc<Counters>,
    capacity: Option<Arc<Capacity>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<Result<(), SimError>>>,
}

impl SimHandle {
    /// `http://127.0.0.1:PORT/v1`: the OpenAI-compatible base URL.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn counters(&self) -> CounterSnapshot {
        self.counters.snapshot()
    }

    /// What the capacity model saw (admitted, turned away, peak in flight), if there is one.
    pub fn capacity(&self) -> Option<CapacitySnapshot> {
        self.capacity.as_ref().map(|c| c.snapshot())
    }

    /// Stop accepting, let in-flight answers finish, cut hangs, and wait for the server task.
    pub async fn shutdown(mut self) -> Result<(), SimError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.task.take() {
            Some(task) => task.await.map_err(|e| SimError::Task(e.to_string()))?,
            None => Ok(()),
        }
    }
}

impl Drop for SimHandle {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// The accept queue every sim listens with. A client ramping to thousands in flight opens them
/// in one burst, and tokio's default backlog (1024) dropped the SYNs beyond it (retransmitted
/// 1 s, 3 s, 7 s later: a stall that measured the kernel, not the client; capacity_bench at 5,000).
/// The kernel caps it at `net.core.somaxconn`.
pub const LISTEN_BACKLOG: u32 = 16_384;

/// A listener on `host:port` with the sim's deep accept queue ([`LISTEN_BACKLOG`]): the first of
/// the host's addresses that binds, as `TcpListener::bind` tries them (address reuse included).
pub async fn listen(host: &str, port: u16) -> std::io::Result<TcpListener> {
    let mut last_error = None;
    for addr in tokio::net::lookup_host((host, port)).await? {
        let socket = if addr.is_ipv4() {
            tokio::net::TcpSocket::new_v4()?
        } else {
            tokio::net::TcpSocket::new_v6()?
        };
        #[cfg(unix)]
        socket.set_reuseaddr(true)?;
        match socket
            .bind(addr)
            .and_then(|()| socket.listen(LISTEN_BACKLOG))
        {
            Ok(listener) => return Ok(listener),
            Err(e) => last_error = Some(e),
        }
    }
    Err(last_error.unwrap_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{host} resolves to no address"),
        )
    }))
}

/// Bind `127.0.0.1:0`, start serving on a new task, and return its address and counters.
pub async fn spawn(config: SimConfig) -> Result<SimHandle, SimError> {
    let listener = listen("127.0.0.1", 0).await.map_err(SimError::Bind)?;
    let addr = listener.local_addr().map_err(SimError::Bind)?;
    let simulator = Simulator::new(config)?;
    let counters = simulator.counters();
    let capacity = simulator.capacity();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(simulator.serve(listener, async move {
        let _ = stopped.await;
    }));
    Ok(SimHandle {
        addr,
        counters,
        capacity,
        stop: Some(stop),
        task: Some(task),
    })
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat_completions))
        .route("/api/v1/chat/completions", post(chat_completions))
        .route("/v1/models", get(models))
        .route("/api/v1/models", get(models))
        .route(
            "/api/v1/models/{author}/{slug}/endpoints",
            get(model_endpoints),
        )
        .route("/v1/models/{author}/{slug}/endpoints", get(model_endpoints))
        .route("/api/v1/key", get(key_info))
        .route("/api/v1/auth/key", get(key_info))
        .route("/v1/auth/key", get(key_info))
        .route("/v1/key", get(key_info))
        .route("/api/v1/credits", get(credits))
        .route("/v1/credits", get(credits))
        .route("/health", get(health))
        .with_state(shared)
}

/// An OpenRouter-shaped error response (`{"error": {"code", "message"}}`).
fn error_response(status: StatusCode, message: &str) -> Response {
    let body = json!({"error": {"code": status.as_u16(), "message": message}});
    (status, Json(body)).into_response()
}

/// `require_key`: any `Authorization: Bearer <something>` passes; the key itself is never read
/// further, logged or echoed.
fn authorized(shared: &Shared, headers: &HeaderMap) -> bool {
    if !shared.config.require_key {
        return true;
    }
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|key| !key.trim().is_empty())
}

async fn health() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

async fn models(State(shared): State<Arc<Shared>>) -> Json<Value> {
    let mut model = json!({
        "id": shared.config.model_name,
        "object": "model",
        "created": 0,
        "owned_by": "draftgen-sim",
    });
    if shared.config.flavor == Flavor::OpenRouter {
        // OpenRouter publishes dollars per token as decimal strings.
        let prices = shared.config.prices;
        model["pricing"] = json!({
            "prompt": prices.prompt.to_string(),
            "completion": prices.completion.to_string(),
        });
    }
    Json(json!({"object": "list", "data": [model]}))
}

/// OpenRouter's list of the providers serving a model ([`super::endpoints`]).
async fn model_endpoints(
    State(shared): State<Arc<Shared>>,
    Path((author, slug)): Path<(String, String)>,
) -> Json<Value> {
    Json(super::endpoints::listing(&shared.config, &author, &slug))
}

async fn key_info(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    if !authorized(&shared, &headers) {
        return error_response(StatusCode::UNAUTHORIZED, "No auth credentials found");
    }
    let usage = shared.counters.spent_usd();
    let limit = shared.config.credit_limit;
    Json(json!({
        "data": {
            "label": "sim-key",
            "limit": limit,
            "limit_reset": null,
            "limit_remaining": limit.map(|l| (l - usage).max(0.0)),
            "include_byok_in_limit": false,
            "usage": usage,
            "usage_daily": usage,
            "usage_weekly": usage,
            "usage_monthly": usage,
            "byok_usage": 0.0,
            "byok_usage_daily": 0.0,
            "byok_usage_weekly": 0.0,
            "byok_usage_monthly": 0.0,
            "is_free_tier": false,
        }
    }))
    .into_response()
}

async fn credits(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    if !authorized(&shared, &headers) {
        return error_response(StatusCode::UNAUTHORIZED, "No auth credentials found");
    }
    Json(json!({"data": {
        "total_credits": shared.config.credit_limit,
        "total_usage": shared.counters.spent_usd(),
    }}))
    .into_response()
}

async fn chat_completions(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    shared.counters.request();
    if !authorized(&shared, &headers) {
        shared.counters.rejected();
        return error_response(StatusCode::UNAUTHORIZED, "No auth credentials found");
    }
    if let Some(replay) = &shared.config.replay {
        return replay.respond(&body);
    }
    // Beyond the provider's capacity: turned away at once. The slot is held until the answer is
    // written (for a stream: until its head is).
    let _slot = match shared
        .capacity
        .as_ref()
        .map(|c| (c.admit(), c.retry_after_secs()))
    {
        Some((None, retry_after)) => return rate_limited(retry_after),
        Some((slot, _)) => slot,
        None => None,
    };
    let request = match serde_json::from_slice::<Value>(&body)
        .map_err(|e| format!("request body is not JSON: {e}"))
        .and_then(|v| ChatRequest::from_json(&v))
    {
        Ok(request) => request,
        Err(message) => {
            shared.counters.rejected();
            return error_response(StatusCode::BAD_REQUEST, &message);
        }
    };
    if let Some(limit) = shared.config.credit_limit {
        if shared.counters.spent_usd() >= limit {
            shared.counters.rejected();
            return error_response(
                StatusCode::PAYMENT_REQUIRED,
                "Insufficient credits. Add more using https://openrouter.ai/credits",
            );
        }
    }
    let config = &shared.config;
    let key = seed::request_key(
        &Value::Array(request.messages.clone()),
        &Value::Array(request.tools.clone()),
        request.seed,
    );
    let provider = match super::providers::route(&config.providers, &request.provider_only, key) {
        Ok(provider) => provider,
        Err(super::providers::NoProvider(message)) => {
            shared.counters.rejected();
            return error_response(StatusCode::NOT_FOUND, &message);
        }
    };
    if let Some(down) = provider.filter(|p| p.down) {
        shared.counters.rejected();
        let body = json!({"error": {"code": 502, "message": "Provider returned error",
            "metadata": {"provider_name": down.name, "raw": "upstream unavailable (simulated)"}}});
        return (StatusCode::BAD_GATEWAY, Json(body)).into_response();
    }
    let attempt = shared.attempts.next(key);
    let fault = config.faults.decide(config.seed, key, attempt);
    if let Some(kind) = fault {
        shared.counters.fault(kind);
    }
    match fault {
        Some(FaultKind::RateLimited) => return rate_limited(config.retry_after_secs),
        Some(FaultKind::ServerError) => {
            let mut rng = seed::rng(config.seed, key, Purpose::Fault, attempt);
            return server_error(rng.random_range(0..3), config.retry_after_secs);
        }
        Some(FaultKind::Hang) if !request.stream => {
            hang(&shared).await;
            return error_response(StatusCode::GATEWAY_TIMEOUT, "simulated hang ended");
        }
        _ => {}
    }

    let written = if fault == Some(FaultKind::Empty) {
        Written::Empty
    } else {
        Written::Own
    };
    let turn = make_turn(&shared, &request, key, attempt, written, provider);
    let latency = config.latency.base + config.latency.per_token * turn.completion_tokens as u32;
    if fault.is_none() || fault == Some(FaultKind::Empty) {
        shared.counters.answered(turn.cost);
    }
    if request.stream {
        stream_response(shared.clone(), &turn, fault, latency)
    } else {
        tokio::time::sleep(latency).await;
        plain_response(&turn, fault)
    }
}

/// What the simulated model writes for one request.
#[derive(Clone, Copy)]
enum Written<'a> {
    /// Its own answer, a pure function of (seed, request).
    Own,
    /// Nothing (the `empty` fault).
    Empty,
    /// These ids, its end-of-turn token included unless `max_tokens` cut them
    /// ([`Simulator::answer_with`]).
    Given(&'a [u32]),
}

/// What the simulator sends for one chat request: the body, or the stream's events.
#[derive(Debug, Clone, PartialEq)]
pub enum Answered {
    Body(Value),
    Events(Vec<Event>),
}

impl Simulator {
    /// What `POST /v1/chat/completions` answers to the request `body` when the model wrote
    /// `completion_ids` (the end-of-turn id last unless `max_tokens` cut it) instead of its own
    /// answer: the same request reading, sampling, counting and flavour as a served answer,
    /// without faults, pacing or named providers. It lets a test send a known token stream
    /// through a flavour and compare with what a real server's code sent for it
    /// (`tests/sim_vs_servers.rs`). Needs a tokenizer (`model_dir`).
    pub fn answer_with(&self, body: &Value, completion_ids: &[u32]) -> Result<Answered, String> {
        let shared = &self.shared;
        if !shared.tokens.has_tokenizer() {
            return Err("sim: answering given ids needs a tokenizer (model_dir)".to_string());
        }
        let request = ChatRequest::from_json(body)?;
        let key = seed::request_key(
            &Value::Array(request.messages.clone()),
            &Value::Array(request.tools.clone()),
            request.seed,
        );
        let turn = make_turn(
            shared,
            &request,
            key,
            0,
            Written::Given(completion_ids),
            None,
        );
        Ok(if request.stream {
            Answered::Events(flavor::events(turn.flavor, &turn))
        } else {
            Answered::Body(flavor::response(turn.flavor, &turn))
        })
    }
}

/// Write (or take), sample and count the answer to `request`.
fn make_turn(
    shared: &Shared,
    request: &ChatRequest,
    key: u64,
    attempt: u32,
    written: Written,
    provider: Option<&super::providers::NamedProvider>,
) -> Turn {
    let empty = matches!(written, Written::Empty);
    let given = match written {
        Written::Given(ids) => Some(ids),
        Written::Own | Written::Empty => None,
    };
    let config = &shared.config;
    let flavor = provider.map_or(config.flavor, |p| p.flavor);
    let defects = provider.map_or_else(Vec::new, |p| p.defects.decide(config.seed, key));
    let never_calls = defects.contains(&super::faults::ToolDefect::NeverCalls);
    let tokens = &shared.tokens;
    // The simulator's own writer speaks Kimi's syntax; other families write as their profile
    // does and think by their own switch (Qwen3 `enable_thinking`; DeepSeek-V3 never).
    let family = tokens
        .profile()
        .filter(|p| p.family.syntax() != Some(Syntax::Kimi));
    let thinking = match family {
        Some(p) => {
            p.thinking_enabled(request.chat_template_kwargs.as_ref())
                && p.reasoning_close().is_some()
        }
        None => request.thinking,
    };
    let written = if empty || given.is_some() {
        None
    } else {
        // A model that never calls: as if every request said `tool_choice: "none"`.
        let none = Value::from("none");
        let prompted = Prompted {
            messages: &request.messages,
            tools: &request.tools,
            tool_choice: if never_calls {
                Some(&none)
            } else {
                request.tool_choice.as_ref()
            },
            thinking,
        };
        let mut rng = seed::rng(config.seed, key, Purpose::Answer, 0);
        Some(answer::write(&prompted, &config.behaviour, &mut rng))
    };
    let end_of_turn = family.map_or(END_OF_TURN, |p| p.end_of_turn());
    // The model writes its own family's syntax: Kimi's natively, others as their profile does.
    let given = given.and_then(|ids| tokens.given(ids, end_of_turn));
    let sampled = match (given, &written, family) {
        (Some(given), _, _) => given,
        (None, Some(answer), Some(profile)) => {
            let native = answer::family_text(answer, profile, request);
            tokens.sample(&native, profile.end_of_turn(), request.max_tokens)
        }
        (None, Some(answer), None) => {
            tokens.sample(&answer.native_text(), END_OF_TURN, request.max_tokens)
        }
        (None, None, _) => tokens.sample("", "", None),
    };
    let syntax = family.and_then(|p| p.family.syntax()).unwrap_or_default();
    let (completion_tokens, token_ids) = if empty {
        (0, tokens.has_tokenizer().then(Vec::new))
    } else {
        (sampled.count, sampled.ids.clone())
    };
    let close = family.map_or(Some(answer::THINK_END), |p| p.reasoning_close());
    // What the reasoning parser counts: up to the reasoning's end (Kimi's also ends at the tool
    // section), from the model's own opener if it writes one (Qwen3's `<think>`).
    let reasoning_ends: Vec<&str> = match (family, close) {
        (_, None) => Vec::new(),
        (None, Some(close)) => vec![close, answer::SECTION_BEGIN, answer::CALL_BEGIN],
        (Some(_), Some(close)) => vec![close],
    };
    let counted = match (&sampled.ids, close) {
        (Some(ids), Some(_)) if thinking => {
            tokens.reasoning_tokens(ids, "<think>", &reasoning_ends)
        }
        (Some(_), _) => Some(0),
        (None, _) => None,
    };
    let reasoning_tokens = counted.unwrap_or_else(|| {
        written
            .as_ref()
            .and_then(|a| a.reasoning.as_deref())
            .map(|r| tokens.count(r).min(completion_tokens))
            .unwrap_or(0)
    });
    let prompt = tokens.prompt(
        &request.messages,
        &request.tools,
        request.chat_template_kwargs.as_ref(),
        request.thinking,
    );
    let prompt_closes_reasoning = match (&prompt.ids, close) {
        (Some(ids), Some(close)) => tokens.before(ids, close).is_some_and(|n| n < ids.len()),
        _ => false,
    };
    let first_token = match &sampled.ids {
        Some(ids) => tokens.first_token_text(ids),
        // Without a tokenizer a token is a whitespace-separated piece.
        None => Some(first_piece(&sampled.text)),
    };
    let last_token = sampled
        .ids
        .as_deref()
        .and_then(|ids| ids.last())
        .and_then(|&id| tokens.decode(&[id]));
    // The end-of-turn id that stopped the answer (vLLM's `stop_reason`).
    let stop_token = match (&sampled.ids, sampled.cut) {
        (Some(ids), false) => ids.last().copied().filter(|&id| !tokens.is_eos(id)),
        _ => None,
    };
    let (prompt_token_ids, prompt_tokens) = (prompt.ids, prompt.count);
    let cost = prompt_tokens as f64 * config.prices.prompt
        + completion_tokens as f64 * config.prices.completion;
    let shape = match provider {
        Some(_) => flavor.shape(),
        None => config.shape.unwrap_or_else(|| flavor.shape()),
    };
    let mut ids_rng = seed::rng(config.seed, key, Purpose::Ids, attempt);
    let id = match flavor {
        Flavor::OpenRouter => format!(
            "gen-{}-{}",
            1_700_000_000 + u64::from(attempt),
            seed::hex(&mut ids_rng, 20)
        ),
        Flavor::Vllm | Flavor::Vllm011 | Flavor::Sglang | Flavor::LlamaCpp | Flavor::Raw => {
            format!("chatcmpl-{}", seed::hex(&mut ids_rng, 32))
        }
    };
    // Call ids depend on the request only, so a retry reports the same ids.
    let mut call_rng = seed::rng(config.seed, key, Purpose::Ids, u32::MAX);
    let calls = written
        .as_ref()
        .map_or_else(|| calls_written(&sampled.text), |a| a.tool_calls.len());
    let minted_call_ids = (0..calls)
        .map(|_| format!("call_{}", seed::hex(&mut call_rng, 24)))
        .collect();
    Turn {
        id,
        created: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        model: request
            .model
            .clone()
            .unwrap_or_else(|| config.model_name.clone()),
        complete_text: sampled.complete_text,
        partial_tokens: sampled.partial_tokens,
        text: sampled.text,
        token_ids,
        prompt_token_ids,
        prompt_tokens,
        completion_tokens,
        reasoning_tokens,
        cut: sampled.cut,
        thinking,
        tools_declared: !request.tools.is_empty(),
        tools: request.tools.clone(),
        cost,
        minted_call_ids,
        provider: provider.map_or_else(|| config.provider_name.clone(), |p| p.name.clone()),
        flavor,
        shape,
        defects,
        provider_in_body: provider.is_some(),
        // Only a slow detokenizer (Kimi's tiktoken one) puts spaces around added tokens.
        spaces_around_special_tokens: request
            .spaces_between_special_tokens
            .unwrap_or(config.spaces_around_special_tokens)
            && tokens
                .profile()
                .is_none_or(|p| p.family.spec().detokenizer_spaces),
        stream_chunk_chars: config.stream_chunk_chars,
        exclude_reasoning: request.exclude_reasoning,
        return_token_ids: request.return_token_ids,
        llama_verbose_tokens: request.llama_verbose_tokens,
        include_usage: request.include_usage || flavor == Flavor::OpenRouter,
        history_calls: answer::prior_tool_calls(&request.messages),
        prompt_closes_reasoning,
        first_token,
        last_token,
        stop_token,
        token_deltas: shape
            .quirks
            .has::<StreamsTokenDeltas>()
            .then(|| tokens.clone())
            .filter(|t| t.has_tokenizer()),
        syntax,
    }
}

/// The text up to the end of its first whitespace-separated piece.
fn first_piece(text: &str) -> String {
    let start = text.len() - text.trim_start().len();
    let end = text[start..]
        .find(char::is_whitespace)
        .map_or(text.len(), |at| start + at);
    text[..end].to_string()
}

/// How many tool calls a given text opens, in any family's syntax (ids to mint for them).
fn calls_written(text: &str) -> usize {
    [
        crate::server::kimi::CALL_BEGIN,
        "<tool_call>",
        "<｜tool▁call▁begin｜>",
    ]
    .iter()
    .map(|marker| text.matches(marker).count())
    .sum()
}

fn rate_limited(retry_after: u64) -> Response {
    let mut response = error_response(
        StatusCode::TOO_MANY_REQUESTS,
        "Rate limit exceeded: simulated. Please retry after the indicated delay.",
    );
    let headers = response.headers_mut();
    headers.insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
    headers.insert("x-ratelimit-limit", HeaderValue::from(20u64));
    headers.insert("x-ratelimit-remaining", HeaderValue::from(0u64));
    headers.insert("x-ratelimit-reset", HeaderValue::from(retry_after * 1000));
    response
}

fn server_error(which: u32, retry_after: u64) -> Response {
    match which {
        0 => error_response(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error"),
        1 => error_response(StatusCode::BAD_GATEWAY, "Provider returned error"),
        _ => {
            let mut response = error_response(
                StatusCode::SERVICE_UNAVAILABLE,
                "No endpoints found that can handle the request",
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
            response
        }
    }
}

/// Wait for the configured hang time, or until shutdown.
async fn hang(shared: &Shared) {
    let mut shutdown = shared.shutdown.clone();
    tokio::select! {
        _ = tokio::time::sleep(shared.config.hang) => {}
        _ = shutdown.wait_for(|stop| *stop) => {}
    }
}

fn json_bytes_response(status: StatusCode, body: Body, generation_id: &str) -> Response {
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Ok(id) = HeaderValue::from_str(generation_id) {
        headers.insert("x-generation-id", id);
    }
    response
}

fn plain_response(turn: &Turn, fault: Option<FaultKind>) -> Response {
    let flavor = turn.flavor;
    match fault {
        Some(FaultKind::ErrorIn200) => {
            let body = json!({"error": {
                "code": 502,
                "message": "Upstream error from provider: simulated failure",
                "metadata": {"provider_name": turn.provider, "raw": "upstream connection reset"},
            }});
            json_bytes_response(StatusCode::OK, Body::from(body.to_string()), &turn.id)
        }
        Some(FaultKind::MidStream) => {
            // Non-streaming view of a generation that failed after its first tokens.
            let mut body = flavor::response(flavor, turn);
            body["error"] =
                json!({"code": "server_error", "message": "Provider disconnected unexpectedly"});
            body["choices"][0]["finish_reason"] = json!("error");
            json_bytes_response(StatusCode::OK, Body::from(body.to_string()), &turn.id)
        }
        Some(FaultKind::Malformed) => {
            let text = flavor::response(flavor, turn).to_string();
            let cut = &text.as_bytes()[..text.len() / 2];
            let mut broken = cut.to_vec();
            broken.extend_from_slice(b"<!-- upstream -->");
            json_bytes_response(StatusCode::OK, Body::from(broken), &turn.id)
        }
        Some(FaultKind::Truncated) => {
            let text = flavor::response(flavor, turn).to_string();
            let half = Bytes::copy_from_slice(&text.as_bytes()[..text.len() / 2]);
            // A body stream that errors makes hyper drop the connection mid-body; the pause
            // lets the status line and the first half reach the client first.
            let parts = stream::iter([Some(half), None]).then(|part| async move {
                match part {
                    Some(bytes) => Ok(bytes),
                    None => {
                        tokio::time::sleep(FLUSH_PAUSE).await;
                        Err(std::io::Error::other("simulated truncation"))
                    }
                }
            });
            json_bytes_response(StatusCode::OK, Body::from_stream(parts), &turn.id)
        }
        _ => {
            let body = flavor::response(flavor, turn).to_string();
            json_bytes_response(StatusCode::OK, Body::from(body), &turn.id)
        }
    }
}

/// How a stream ends early, if it does.
#[derive(Clone, Copy, PartialEq)]
enum StreamEnd {
    Complete,
    ErrorChunk,
    Malformed,
    Drop,
    HangThenDrop,
}

fn stream_response(
    shared: Arc<Shared>,
    turn: &Turn,
    fault: Option<FaultKind>,
    latency: Duration,
) -> Response {
    let mut events = flavor::events(turn.flavor, turn);
    let end = match fault {
        Some(FaultKind::MidStream) => StreamEnd::ErrorChunk,
        Some(FaultKind::Malformed) => StreamEnd::Malformed,
        Some(FaultKind::Truncated) => StreamEnd::Drop,
        Some(FaultKind::Hang) => StreamEnd::HangThenDrop,
        _ => StreamEnd::Complete,
    };
    if end != StreamEnd::Complete {
        let data_events = events
            .iter()
            .filter(|e| matches!(e, Event::Data(_)))
            .count();
        let keep_data = (data_events / 2).max(1);
        let mut seen = 0;
        events.retain(|e| {
            if matches!(e, Event::Data(_)) {
                seen += 1;
                seen <= keep_data
            } else {
                !matches!(e, Event::Done) && seen < keep_data
            }
        });
    }
    match end {
        StreamEnd::ErrorChunk => events.push(Event::Data(flavor::midstream_error(turn))),
        StreamEnd::Malformed => {
            events.push(Event::Comment(
                "next event is deliberately not JSON (simulated fault)",
            ));
        }
        _ => {}
    }
    if fault == Some(FaultKind::ErrorIn200) {
        events = vec![Event::Data(json!({"error": {
            "code": 502,
            "message": "Upstream error from provider: simulated failure",
            "metadata": {"provider_name": turn.provider},
        }}))];
    }
    let pause = if events.is_empty() {
        Duration::ZERO
    } else {
        shared.config.latency.per_token * turn.completion_tokens as u32 / events.len() as u32
    };
    let first = latency.saturating_sub(pause * events.len() as u32);
    let frames: Vec<Bytes> = events
        .iter()
        .map(|e| Bytes::from(e.to_sse()))
        .chain((end == StreamEnd::Malformed).then(|| {
            Bytes::from_static(b"data: {\"id\":\"gen-broken\",\"choices\":[{\"delta\":{\"content\":\"unterminated\n\n")
        }))
        .collect();
    let body = stream::unfold(
        (frames.into_iter(), true, shared, end),
        move |(mut frames, is_first, shared, end)| async move {
            let wait = if is_first { first } else { pause };
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            match frames.next() {
                Some(frame) => Some((Ok(frame), (frames, false, shared, end))),
                None => match end {
                    StreamEnd::Drop => {
                        tokio::time::sleep(FLUSH_PAUSE).await;
                        Some((
                            Err(std::io::Error::other("simulated truncation")),
                            (frames, false, shared, StreamEnd::Complete),
                        ))
                    }
                    StreamEnd::HangThenDrop => {
                        hang(&shared).await;
                        Some((
                            Err(std::io::Error::other("simulated hang")),
                            (frames, false, shared, StreamEnd::Complete),
                        ))
                    }
                    _ => None,
                },
            }
        },
    );
    let mut response = (StatusCode::OK, Body::from_stream(body)).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(id) = HeaderValue::from_str(&turn.id) {
        headers.insert("x-generation-id", id);
    }
    response
}
