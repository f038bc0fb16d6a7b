//! The OpenRouter credit check at start: how much the key may still spend, compared with what the
//! run is projected to cost.
//!
//! Decision (documented in the CLI help): if the expected projection (`budget.rs`: observed costs
//! or answer lengths, before any answer a stated share of `max_tokens`) exceeds the credit left,
//! the run is refused unless a `--max-cost-usd` at or below the credit is set (the budget then
//! stops the run before the credit runs out) or `--force` is given; the worst case exceeding it
//! only warns. A key endpoint that cannot be reached only
//! warns — the check protects, it must not block a run on an API hiccup — but a 401/402 from it is
//! fatal, exactly as from a chat request.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::api::{ApiError, Client, Endpoint};

/// What `GET /key` said about the key (never its label: OpenRouter labels often embed part of it).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CreditInfo {
    pub endpoint: String,
    /// Dollars the key may still spend; `None` when the key has no limit.
    pub limit_remaining: Option<f64>,
    /// Dollars spent by the key so far.
    pub usage: Option<f64>,
    pub is_free_tier: Option<bool>,
}

/// Ask an OpenRouter endpoint about its key.
pub async fn key_info(client: &Client, endpoint: &Endpoint) -> Result<CreditInfo, ApiError> {
    let body = client
        .get_json(endpoint, "key", Duration::from_secs(15))
        .await?;
    Ok(parse_key_info(&endpoint.name, &body))
}

/// Read the `data` object of a `/key` answer.
pub fn parse_key_info(endpoint: &str, body: &Value) -> CreditInfo {
    let data = body.get("data").unwrap_or(body);
    CreditInfo {
        endpoint: endpoint.to_string(),
        limit_remaining: data.get("limit_remaining").and_then(Value::as_f64),
        usage: data.get("usage").and_then(Value::as_f64),
        is_free_tier: data.get("is_free_tier").and_then(Value::as_bool),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_openrouter_key_answer() {
        let body = json!({"data": {"label": "sk-or-v1-abc...", "limit": 10.0, "limit_remaining": 7.5,
                                    "usage": 2.5, "is_free_tier": false}});
        let info = parse_key_info("or", &body);
        assert_eq!(info.limit_remaining, Some(7.5));
        assert_eq!(info.usage, Some(2.5));
        assert!(!serde_json::to_string(&info).unwrap().contains("sk-or"));
        let unlimited = parse_key_info(
            "or",
            &json!({"data": {"limit": null, "limit_remaining": null}}),
        );
        assert_eq!(unlimited.limit_remaining, None);
    }
}
