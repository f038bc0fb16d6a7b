//! The simulator's error answers, shaped as OpenRouter's (`{"error": {"code", "message"}}`):
//! the ones a fault draws (429 with its rate-limit headers, 500/502/503) and the ones a request
//! earns (401, 400, 402, 404).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

/// An OpenRouter-shaped error response (`{"error": {"code", "message"}}`).
pub(super) fn error_response(status: StatusCode, message: &str) -> Response {
    Refusal::new(status, message).into_response()
}

/// A request refused before it is answered: the status and its error body.
pub(super) struct Refusal(pub StatusCode, pub Value);

impl Refusal {
    /// With the OpenRouter-shaped body `{"error": {"code", "message"}}`.
    pub(super) fn new(status: StatusCode, message: &str) -> Refusal {
        Refusal(
            status,
            json!({"error": {"code": status.as_u16(), "message": message}}),
        )
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        (self.0, Json(self.1)).into_response()
    }
}

/// 429 with `Retry-After`. No `X-RateLimit-*` headers: a fault's 429 has no limit to
/// advertise (made-up ones would be read as one by a client that paces by them); the capacity
/// model adds its bucket's when asked (`src/sim/capacity.rs`, `--capacity-headers`).
pub(super) fn rate_limited(retry_after: u64) -> Response {
    let mut response = error_response(
        StatusCode::TOO_MANY_REQUESTS,
        "Rate limit exceeded: simulated. Please retry after the indicated delay.",
    );
    let headers = response.headers_mut();
    headers.insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
    response
}

/// One of the 5xx answers a fault draws (`which`: 0 → 500, 1 → 502, else 503 with `Retry-After`).
pub(super) fn server_error(which: u32, retry_after: u64) -> Response {
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
