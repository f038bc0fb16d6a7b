//! `POST /v1/chat/completions`: auth → replay → capacity → parse → model → credit → provider
//! (OpenRouter's routing, falling back past providers that are down) → attempt number → fault
//! draw → answer → flavour → pacing.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use rand::Rng;
use serde_json::{json, Value};

use super::errors::{error_response, rate_limited, server_error, Refusal};
use super::reply::{plain_response, stream_response};
use super::turn::{make_turn, Written};
use super::Shared;
use crate::api::ServerKind;
use crate::sim::config::SimConfig;
use crate::sim::faults::FaultKind;
use crate::sim::providers::NamedProvider;
use crate::sim::request::ChatRequest;
use crate::sim::routing::{self, NoProvider};
use crate::sim::seed::{self, Purpose};

pub(super) async fn chat_completions(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    shared.counters.request();
    if !shared.authorized(&headers) {
        shared.counters.rejected();
        return error_response(StatusCode::UNAUTHORIZED, "No auth credentials found");
    }
    if let Some(replay) = &shared.config.replay {
        return replay.respond(&body);
    }
    // Beyond the provider's capacity: turned away at once. The slot is held until the answer is
    // written (for a stream: until its head is).
    let (_slot, limits) = match shared.capacity.as_ref() {
        Some(capacity) => {
            let slot = capacity.admit();
            let limits = capacity.advertised();
            if slot.is_none() {
                return advertise(rate_limited(capacity.retry_after_secs()), limits);
            }
            (slot, limits)
        }
        None => (None, None),
    };
    advertise(admitted(&shared, &body).await, limits)
}

/// `response` with the capacity model's `X-RateLimit-*` headers, if it sends them.
fn advertise(mut response: Response, limits: Option<[(&'static str, String); 3]>) -> Response {
    for (name, value) in limits.into_iter().flatten() {
        if let Ok(value) = value.parse() {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

/// A request the capacity admitted: read, routed and answered (or refused).
async fn admitted(shared: &Arc<Shared>, body: &[u8]) -> Response {
    let request = match read_request(shared, body) {
        Ok(request) => request,
        Err(refused) => {
            shared.counters.rejected();
            return refused.into_response();
        }
    };
    let key = request.key();
    let provider = match provider_for(&shared.config, &request, key) {
        Ok(provider) => provider,
        Err(refused) => {
            shared.counters.rejected();
            return refused.into_response();
        }
    };
    let attempt = shared.attempts.next(key);
    let config = &shared.config;
    let fault = config.faults.decide(config.seed, key, attempt);
    if let Some(kind) = fault {
        shared.counters.fault(kind);
    }
    if let Some(failed) = failure(shared, fault, request.stream, key, attempt).await {
        return failed;
    }
    answer(shared, &request, key, attempt, fault, provider).await
}

/// The request, unless it is not one, names a model the simulator does not serve or the
/// credits are spent.
fn read_request(shared: &Shared, body: &[u8]) -> Result<ChatRequest, Refusal> {
    let request = serde_json::from_slice::<Value>(body)
        .map_err(|e| format!("request body is not JSON: {e}"))
        .and_then(|v| ChatRequest::from_json(&v))
        .map_err(|message| Refusal::new(StatusCode::BAD_REQUEST, &message))?;
    if let Some(model) = unknown_model(&shared.config, &request) {
        return Err(Refusal::new(
            StatusCode::BAD_REQUEST,
            &format!("{model} is not a valid model ID"),
        ));
    }
    if let Some(limit) = shared.config.credit_limit {
        if shared.counters.spent_usd() >= limit {
            return Err(Refusal::new(
                StatusCode::PAYMENT_REQUIRED,
                "Insufficient credits. Add more using https://openrouter.ai/credits",
            ));
        }
    }
    Ok(request)
}

/// Answering as OpenRouter (its shape, or named providers behind it) with
/// `refuses_unknown_models`, a model id other than the one the simulator serves (and lists at
/// `/models`) is refused, as OpenRouter refuses an id it does not know (`400 "X is not a valid
/// model ID"`); a variant suffix (`:free`, `:nitro`) names the same model.
fn unknown_model<'a>(config: &SimConfig, request: &'a ChatRequest) -> Option<&'a str> {
    let openrouter = config.refuses_unknown_models
        && (config.server_shape().kind == ServerKind::OpenRouter || !config.providers.is_empty());
    let model = request.model.as_deref()?;
    let base = model.split_once(':').map_or(model, |(base, _)| base);
    (openrouter && base != config.model_name).then_some(model)
}

/// The named provider answering (`None`: the simulator itself): the first one routing tries
/// that is not down. The refusal when none may answer (404), or when every one tried is down
/// (502 naming the last, as OpenRouter answers when the upstream fails and no fallback is left).
fn provider_for<'a>(
    config: &'a SimConfig,
    request: &ChatRequest,
    key: u64,
) -> Result<Option<&'a NamedProvider>, Refusal> {
    let tried = routing::candidates(&config.providers, &request.routing, key)
        .map_err(|NoProvider(message)| Refusal::new(StatusCode::NOT_FOUND, &message))?;
    let Some(last) = tried.last() else {
        return Ok(None);
    };
    if let Some(up) = tried.iter().find(|p| !p.down) {
        return Ok(Some(up));
    }
    let body = json!({"error": {"code": 502, "message": "Provider returned error",
        "metadata": {"provider_name": last.name, "raw": "upstream unavailable (simulated)"}}});
    Err(Refusal(StatusCode::BAD_GATEWAY, body))
}

/// What a fault answers in place of any answer: 429, a 5xx, or (not streamed) a hang, then 504.
/// `None`: the answer is written (the other faults break it on its way out).
async fn failure(
    shared: &Shared,
    fault: Option<FaultKind>,
    stream: bool,
    key: u64,
    attempt: u32,
) -> Option<Response> {
    let config = &shared.config;
    match fault {
        Some(FaultKind::RateLimited) => Some(rate_limited(config.retry_after_secs)),
        Some(FaultKind::ServerError) => {
            let which = seed::rng(config.seed, key, Purpose::Fault, attempt).random_range(0..3);
            Some(server_error(which, config.retry_after_secs))
        }
        Some(FaultKind::Hang) if !stream => {
            shared.hang().await;
            Some(error_response(
                StatusCode::GATEWAY_TIMEOUT,
                "simulated hang ended",
            ))
        }
        _ => None,
    }
}

/// The answer, written, counted and sent after the simulated latency (a stream paces itself).
async fn answer(
    shared: &Arc<Shared>,
    request: &ChatRequest,
    key: u64,
    attempt: u32,
    fault: Option<FaultKind>,
    provider: Option<&NamedProvider>,
) -> Response {
    let written = if fault == Some(FaultKind::Empty) {
        Written::Empty
    } else {
        Written::Own
    };
    let turn = make_turn(shared, request, key, attempt, written, provider);
    let latency = shared.config.latency.base
        + shared.config.latency.per_token * turn.completion_tokens as u32;
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
