//! OpenRouter's request objects (`reasoning`, `provider`), typed so that a run's settings are
//! checked field by field: unknown fields are refused, so a typo cannot silently fall back to
//! defaults.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::did_you_mean;
use super::options_error::OptionsError;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reasoning {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<Effort>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

/// `reasoning.effort` levels OpenRouter documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effort {
    Xhigh,
    High,
    Medium,
    Low,
    Minimal,
    None,
}

impl Reasoning {
    /// Parse and check an options `reasoning` value.
    pub fn from_value(value: &Value) -> Result<Self, OptionsError> {
        let reasoning: Reasoning = serde_json::from_value(value.clone()).map_err(|e| {
            OptionsError::Reasoning(format!(
                "{}; `effort` and `max_tokens` exclude each other; other fields go in `extra_body`",
                did_you_mean::explain(&e.to_string())
            ))
        })?;
        reasoning.validate()?;
        Ok(reasoning)
    }

    pub fn validate(&self) -> Result<(), OptionsError> {
        if self.effort.is_some() && self.max_tokens.is_some() {
            return Err(OptionsError::ReasoningEffortAndMaxTokens);
        }
        Ok(())
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// OpenRouter's `provider` routing object. Model suffixes (`:exacto`, `:nitro`, `:floor`) are not
/// here: they are part of `model`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderRouting {
    /// Providers to try first, in this order (disables load balancing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<Vec<String>>,
    /// Only these providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub only: Option<Vec<String>>,
    /// Never these providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort: Option<ProviderSort>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantizations: Option<Vec<Quantization>>,
    /// Default true on OpenRouter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_fallbacks: Option<bool>,
    /// Route only to providers that support every request parameter (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require_parameters: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_collection: Option<DataCollection>,
    /// USD per million tokens (or per request/image) the run will not exceed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_price: Option<MaxPrice>,
    /// Zero-data-retention endpoints only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zdr: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enforce_distillable_text: Option<bool>,
    /// A number or a percentile object, passed through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preferred_min_throughput: Option<Value>,
    /// A number or a percentile object, passed through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preferred_max_latency: Option<Value>,
}

/// `provider.sort`: a key, or `{by, partition}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ProviderSort {
    By(SortBy),
    Detailed {
        by: SortBy,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        partition: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SortBy {
    Price,
    Throughput,
    Latency,
}

/// Weight formats OpenRouter can filter providers by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Quantization {
    Int4,
    Int8,
    Fp4,
    Fp6,
    Fp8,
    Fp16,
    Bf16,
    Fp32,
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DataCollection {
    Allow,
    Deny,
}

/// `provider.max_price`, USD.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MaxPrice {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<f64>,
}

impl ProviderRouting {
    /// Parse and check an options `provider` value.
    pub fn from_value(value: &Value) -> Result<Self, OptionsError> {
        let routing: ProviderRouting = serde_json::from_value(value.clone()).map_err(|e| {
            OptionsError::Provider(format!(
                "{}; other fields go in `extra_body`",
                did_you_mean::explain(&e.to_string())
            ))
        })?;
        routing.validate()?;
        Ok(routing)
    }

    pub fn validate(&self) -> Result<(), OptionsError> {
        for (field, list) in [
            ("order", &self.order),
            ("only", &self.only),
            ("ignore", &self.ignore),
        ] {
            if list.iter().flatten().any(|p| p.trim().is_empty()) {
                return Err(OptionsError::Provider(format!(
                    "`{field}` contains an empty provider name"
                )));
            }
        }
        if let (Some(only), Some(ignore)) = (&self.only, &self.ignore) {
            let both: Vec<&str> = only
                .iter()
                .filter(|p| ignore.iter().any(|i| i.eq_ignore_ascii_case(p)))
                .map(String::as_str)
                .collect();
            if !both.is_empty() {
                return Err(OptionsError::Provider(format!(
                    "{both:?} are in both `only` and `ignore`; remove them from one list"
                )));
            }
        }
        if let Some(price) = &self.max_price {
            for (field, v) in [
                ("prompt", price.prompt),
                ("completion", price.completion),
                ("request", price.request),
                ("image", price.image),
            ] {
                if let Some(v) = v {
                    if !(v.is_finite() && v >= 0.0) {
                        return Err(OptionsError::Provider(format!(
                            "`max_price.{field}` = {v} must be a non-negative number of USD"
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}
