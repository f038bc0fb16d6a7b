//! The settings that shape every request of a run (sampling, OpenRouter extras, self-hosted
//! extras), and their check.
//!
//! [`RequestOptions::validate`] runs once when a run starts and turns every bad setting into an
//! [`OptionsError`] that says what to change; `super::build_body` then runs per request and cannot
//! fail. OpenRouter's `reasoning` and `provider` objects are kept as JSON in the options (so the
//! manifest fingerprints exactly what is sent) and checked through the typed [`Reasoning`] and
//! [`ProviderRouting`] (src/api/openrouter_options.rs), which reject unknown fields so a typo
//! cannot silently fall back to defaults.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::openrouter_options::{ProviderRouting, Reasoning};
use super::options_error::OptionsError;
use super::ServerKind;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestOptions {
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// OpenRouter `reasoning` object (`{effort}` or `{max_tokens}`, `exclude`, `enabled`); see [`Reasoning`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Value>,
    /// OpenRouter `provider` routing object; see [`ProviderRouting`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<Value>,
    /// Self-hosted: `chat_template_kwargs` (e.g. `{"thinking": false}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_template_kwargs: Option<Map<String, Value>>,
    /// Ask the server for its own token ids (vLLM/SGLang `return_token_ids`, llama.cpp `return_tokens`+`verbose`).
    #[serde(default)]
    pub server_token_ids: bool,
    /// Send the prompt's tools as the `tools` parameter (true) or leave them in the system prompt as the dataset has them.
    #[serde(default = "default_true")]
    pub tools_as_parameter: bool,
    #[serde(default)]
    pub stream: bool,
    /// Anything else to merge into the body verbatim.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra_body: Map<String, Value>,
    /// Which server answers: picks the token-id flags and OpenRouter's `usage` flag.
    #[serde(default)]
    pub server_kind: ServerKind,
    /// vLLM's `spaces_between_special_tokens`, sent only when the endpoint sets it explicitly
    /// (`spaces_around_special_tokens` in `[[endpoints]]` or the flag). Set per endpoint when
    /// endpoints are resolved, so it is never read from `[request]` nor written to the manifest's
    /// `request_options` (the manifest records it per endpoint).
    #[serde(skip)]
    pub spaces_between_special_tokens: Option<bool>,
}

fn default_true() -> bool {
    true
}

/// OpenRouter's `reasoning` request object.
impl RequestOptions {
    /// Check every setting once, before a run sends anything.
    pub fn validate(&self) -> Result<(), OptionsError> {
        if self.model.trim().is_empty() {
            return Err(OptionsError::EmptyModel);
        }
        if let Some(t) = self.temperature {
            if !(t.is_finite() && (0.0..=2.0).contains(&t)) {
                return Err(OptionsError::OutOfRange {
                    field: "temperature",
                    value: t.to_string(),
                    expected: "between 0 and 2",
                });
            }
        }
        if let Some(p) = self.top_p {
            if !(p.is_finite() && p > 0.0 && p <= 1.0) {
                return Err(OptionsError::OutOfRange {
                    field: "top_p",
                    value: p.to_string(),
                    expected: "greater than 0 and at most 1",
                });
            }
        }
        if self.max_tokens == Some(0) {
            return Err(OptionsError::OutOfRange {
                field: "max_tokens",
                value: "0".into(),
                expected: "at least 1",
            });
        }
        if let Some(r) = &self.reasoning {
            Reasoning::from_value(r)?;
        }
        if let Some(p) = &self.provider {
            ProviderRouting::from_value(p)?;
        }
        if self.server_token_ids {
            match self.server_kind {
                kind @ (ServerKind::Vllm | ServerKind::Sglang | ServerKind::LlamaCpp)
                    if self.stream =>
                {
                    return Err(OptionsError::NoTokenIdsWhenStreaming(kind))
                }
                ServerKind::Vllm | ServerKind::Sglang | ServerKind::LlamaCpp => {}
                kind @ (ServerKind::OpenRouter | ServerKind::Generic) => {
                    return Err(OptionsError::TokenIdsUnsupported(kind))
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::api::openrouter_options::DataCollection;

    #[test]
    fn reasoning_takes_effort_or_max_tokens_not_both() {
        assert!(Reasoning::from_value(&json!({"effort": "low", "exclude": true})).is_ok());
        assert!(Reasoning::from_value(&json!({"max_tokens": 2000})).is_ok());
        assert_eq!(
            Reasoning::from_value(&json!({"effort": "high", "max_tokens": 10})),
            Err(OptionsError::ReasoningEffortAndMaxTokens)
        );
        let err = Reasoning::from_value(&json!({"effort": "extreme"})).unwrap_err();
        assert!(matches!(err, OptionsError::Reasoning(_)), "{err}");
        let err = Reasoning::from_value(&json!({"efort": "high"})).unwrap_err();
        assert!(err.to_string().contains("efort"), "{err}");
    }

    #[test]
    fn provider_routing_is_typed_and_checked() {
        let value = json!({
            "order": ["DeepInfra", "Fireworks"], "only": ["DeepInfra", "Fireworks"], "ignore": ["Chutes"],
            "sort": {"by": "throughput", "partition": "none"}, "quantizations": ["int4", "fp8"],
            "allow_fallbacks": false, "require_parameters": true, "data_collection": "deny",
            "max_price": {"prompt": 1.0, "completion": 3.0}, "zdr": true
        });
        let routing = ProviderRouting::from_value(&value).unwrap();
        assert_eq!(routing.data_collection, Some(DataCollection::Deny));
        assert_eq!(
            routing.to_value(),
            value,
            "round trip keeps the request as written"
        );
        assert!(ProviderRouting::from_value(&json!({"sort": "price"})).is_ok());

        let bad = [
            json!({"alow_fallbacks": true}),
            json!({"quantizations": ["int3"]}),
            json!({"only": ["A"], "ignore": ["a"]}),
            json!({"order": [""]}),
            json!({"max_price": {"prompt": -1.0}}),
            json!({"data_collection": "maybe"}),
        ];
        for v in bad {
            assert!(
                matches!(
                    ProviderRouting::from_value(&v),
                    Err(OptionsError::Provider(_))
                ),
                "{v}"
            );
        }
        let opts = RequestOptions {
            model: "m".into(),
            provider: Some(json!({"only": ["A"], "ignore": ["A"]})),
            ..Default::default()
        };
        assert!(opts.validate().is_err());
    }

    #[test]
    fn sampling_ranges_are_checked() {
        let ok = RequestOptions {
            model: "m".into(),
            ..Default::default()
        };
        assert!(ok.validate().is_ok());
        for bad in [
            RequestOptions {
                temperature: Some(-0.1),
                ..ok.clone()
            },
            RequestOptions {
                temperature: Some(f64::NAN),
                ..ok.clone()
            },
            RequestOptions {
                top_p: Some(0.0),
                ..ok.clone()
            },
            RequestOptions {
                max_tokens: Some(0),
                ..ok.clone()
            },
            RequestOptions {
                model: " ".into(),
                ..ok.clone()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn options_deserialize_with_defaults() {
        let opts: RequestOptions =
            serde_json::from_value(json!({"model": "m", "server_kind": "llama_cpp"})).unwrap();
        assert!(opts.tools_as_parameter);
        assert_eq!(opts.server_kind, ServerKind::LlamaCpp);
        let opts: RequestOptions = serde_json::from_value(json!({"model": "m"})).unwrap();
        assert_eq!(opts.server_kind, ServerKind::Generic);
    }
}
