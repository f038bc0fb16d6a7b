//! OpenRouter account endpoints and pricing: the key/credit check a run does before it starts
//! (`GET /key`, older `/auth/key`; `GET /credits`), and a price table to cost a request when the
//! response carries no `usage.cost` (self-hosted servers, or providers that omit it).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{ApiError, Client, Endpoint};
use crate::api::ErrorClass;
use crate::completion::Usage;

/// `GET /key` → `data`: the key's spending limit and usage, in USD.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KeyInfo {
    /// A masked form of the key (OpenRouter never returns the key itself).
    #[serde(default)]
    pub label: Option<String>,
    /// Spending limit; `None` is unlimited.
    #[serde(default)]
    pub limit: Option<f64>,
    #[serde(default)]
    pub limit_remaining: Option<f64>,
    #[serde(default)]
    pub limit_reset: Option<String>,
    #[serde(default)]
    pub include_byok_in_limit: Option<bool>,
    /// All-time usage.
    #[serde(default)]
    pub usage: Option<f64>,
    #[serde(default)]
    pub usage_daily: Option<f64>,
    #[serde(default)]
    pub usage_weekly: Option<f64>,
    #[serde(default)]
    pub usage_monthly: Option<f64>,
    #[serde(default)]
    pub is_free_tier: Option<bool>,
    /// `{limit, remaining, used}` for `:free` models, when reported.
    #[serde(default)]
    pub free_model_daily_requests: Option<Value>,
    /// Every other field, kept as sent.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `GET /credits` → `data`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Credits {
    pub total_credits: f64,
    pub total_usage: f64,
}

impl Credits {
    /// Credits left, USD (negative when the account is overdrawn).
    pub fn remaining(&self) -> f64 {
        self.total_credits - self.total_usage
    }
}

/// The key's limits and usage. Tries `{base}/key`, then the older `{base}/auth/key` on 404.
pub async fn key_info(
    client: &Client,
    endpoint: &Endpoint,
    timeout: Duration,
) -> Result<KeyInfo, ApiError> {
    let body = match client.get_json(endpoint, "key", timeout).await {
        Err(e) if e.http_status == Some(404) => {
            client.get_json(endpoint, "auth/key", timeout).await?
        }
        other => other?,
    };
    parse_data(body, "key")
}

/// The account's credits and usage (`{base}/credits`).
pub async fn credits(
    client: &Client,
    endpoint: &Endpoint,
    timeout: Duration,
) -> Result<Credits, ApiError> {
    let body = client.get_json(endpoint, "credits", timeout).await?;
    parse_data(body, "credits")
}

fn parse_data<T: serde::de::DeserializeOwned>(body: Value, path: &str) -> Result<T, ApiError> {
    let data = match body {
        Value::Object(mut map) if map.contains_key("data") => {
            map.remove("data").unwrap_or_default()
        }
        other => other,
    };
    serde_json::from_value(data.clone()).map_err(|e| {
        ApiError::new(
            ErrorClass::Malformed,
            format!("GET {path}: unexpected response shape ({e})"),
        )
        .with_body(Some(data))
    })
}

/// USD per million tokens for one model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    pub prompt: f64,
    pub completion: f64,
}

/// Prices per model id, as a run config writes them:
/// `[pricing] "moonshotai/kimi-k2" = { prompt = 0.6, completion = 2.5 }`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Pricing {
    pub models: BTreeMap<String, ModelPrice>,
}

impl Pricing {
    /// The price of `model`, or of the model without its routing suffix (`:exacto`, `:nitro`,
    /// `:floor`) when only the base id is listed.
    pub fn price_for(&self, model: &str) -> Option<&ModelPrice> {
        self.models.get(model).or_else(|| {
            let (base, suffix) = model.rsplit_once(':')?;
            (!suffix.contains('/'))
                .then(|| self.models.get(base))
                .flatten()
        })
    }

    /// The cost of one request: the server's `usage.cost` when given, else the table's price.
    pub fn cost(&self, model: &str, usage: &Usage) -> Option<f64> {
        usage
            .cost
            .or_else(|| cost_of(usage, self.price_for(model)?))
    }
}

/// USD for `usage` at `price`; `None` without token counts. `completion_tokens` already includes
/// reasoning tokens (OpenRouter and vLLM count them there).
pub fn cost_of(usage: &Usage, price: &ModelPrice) -> Option<f64> {
    let prompt = usage.prompt_tokens? as f64;
    let completion = usage.completion_tokens? as f64;
    Some((prompt * price.prompt + completion * price.completion) / 1_000_000.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_info_keeps_unknown_fields_and_accepts_nulls() {
        let info: KeyInfo = parse_data(
            json!({"data": {"label": "x", "limit": null, "usage": 3.5, "rate_limit": {"requests": 10}}}),
            "key",
        )
        .unwrap();
        assert_eq!(info.limit, None);
        assert_eq!(info.usage, Some(3.5));
        assert_eq!(info.other["rate_limit"], json!({"requests": 10}));
    }

    #[test]
    fn unexpected_shapes_are_malformed() {
        let err = parse_data::<Credits>(json!({"data": {"total_credits": "lots"}}), "credits")
            .unwrap_err();
        assert_eq!(err.class, ErrorClass::Malformed);
    }

    #[test]
    fn suffix_falls_back_to_the_base_model_only() {
        let mut pricing = Pricing::default();
        pricing.models.insert(
            "a/b".into(),
            ModelPrice {
                prompt: 1.0,
                completion: 2.0,
            },
        );
        assert!(pricing.price_for("a/b:nitro").is_some());
        assert!(pricing.price_for("a/b").is_some());
        assert!(pricing.price_for("a/c:nitro").is_none());
        let usage = Usage {
            prompt_tokens: Some(10),
            completion_tokens: None,
            ..Usage::default()
        };
        assert_eq!(pricing.cost("a/b", &usage), None);
    }
}
