//! The endpoints beside chat completions: health, the model list (with OpenRouter's prices when
//! the simulator answers as OpenRouter), OpenRouter's endpoint listing, key and credits.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::errors::error_response;
use super::Shared;
use crate::api::ServerKind;

pub(super) async fn health() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

pub(super) async fn models(State(shared): State<Arc<Shared>>) -> Json<Value> {
    let mut model = json!({
        "id": shared.config.model_name,
        "object": "model",
        "created": 0,
        "owned_by": "draftgen-sim",
    });
    if shared.config.server_shape().kind == ServerKind::OpenRouter {
        // OpenRouter publishes dollars per token as decimal strings.
        let prices = shared.config.prices;
        model["pricing"] = json!({
            "prompt": prices.prompt.to_string(),
            "completion": prices.completion.to_string(),
        });
    }
    Json(json!({"object": "list", "data": [model]}))
}

/// OpenRouter's list of the providers serving a model ([`crate::sim::endpoints`]).
pub(super) async fn model_endpoints(
    State(shared): State<Arc<Shared>>,
    Path((author, slug)): Path<(String, String)>,
) -> Json<Value> {
    Json(crate::sim::endpoints::listing(
        &shared.config,
        &author,
        &slug,
    ))
}

pub(super) async fn key_info(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    if !shared.authorized(&headers) {
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

pub(super) async fn credits(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    if !shared.authorized(&headers) {
        return error_response(StatusCode::UNAUTHORIZED, "No auth credentials found");
    }
    Json(json!({"data": {
        "total_credits": shared.config.credit_limit,
        "total_usage": shared.counters.spent_usd(),
    }}))
    .into_response()
}
