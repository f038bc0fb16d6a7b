//! OpenRouter's endpoint listing, `GET /api/v1/models/{author}/{slug}/endpoints`: which
//! providers serve a model. `probe` reads it to probe each provider on its own
//! (`provider.only`), so the simulator lists its named providers ([`super::providers`]) there;
//! without named providers, its one provider (`provider_name`).
//!
//! The shape is OpenRouter's own, as its generated TypeScript SDK declares and parses it
//! (OpenRouterTeam/typescript-sdk: `src/funcs/endpointsList.ts` calls
//! `/models/{author}/{slug}/endpoints`; `src/models/operations/listendpoints.ts` is the response
//! `{"data": {"id", "name", "created", "description", "architecture", "endpoints": [...]}}`;
//! `src/models/publicendpoint.ts` is one endpoint: `name`, `model_id`, `model_name`,
//! `context_length`, `pricing` (`prompt`, `completion`, … as decimal strings of dollars per
//! token), `provider_name`, `tag` (the provider slug `provider.only` takes), `quantization`,
//! `max_completion_tokens`, `max_prompt_tokens`, `supported_parameters`, `status`,
//! `uptime_last_30m`, `supports_implicit_caching`, `latency_last_30m`, `throughput_last_30m`).

use serde_json::{json, Value};

use super::config::SimConfig;

/// The slug `provider.only` takes for a provider name (OpenRouter's tags are lower case; the
/// simulator's routing matches names case-insensitively, so the tag routes to the provider).
pub fn tag_of(name: &str) -> String {
    name.to_ascii_lowercase()
}

/// The listing for `author/slug` (the simulator serves any model it is asked for).
pub fn listing(config: &SimConfig, author: &str, slug: &str) -> Value {
    let model = format!("{author}/{slug}");
    // Each provider's name and price (a multiple of the simulator's).
    let named: Vec<(&str, f64)> = if config.providers.is_empty() {
        vec![(config.provider_name.as_str(), 1.0)]
    } else {
        config
            .providers
            .iter()
            .map(|p| (p.name.as_str(), p.price))
            .collect()
    };
    let endpoints: Vec<Value> = named
        .iter()
        .map(|&(name, price)| {
            json!({
                "name": format!("{name} | {model}"),
                "model_id": model,
                "model_name": model,
                "context_length": 262144,
                "pricing": {
                    "prompt": (config.prices.prompt * price).to_string(),
                    "completion": (config.prices.completion * price).to_string(),
                },
                "provider_name": name,
                "tag": tag_of(name),
                "quantization": "fp8",
                "max_completion_tokens": null,
                "max_prompt_tokens": null,
                "supported_parameters": [
                    "max_tokens", "temperature", "tools", "tool_choice", "reasoning",
                    "include_reasoning", "seed", "stop"
                ],
                "status": 0,
                "uptime_last_30m": 100.0,
                "supports_implicit_caching": false,
                "latency_last_30m": null,
                "throughput_last_30m": null,
            })
        })
        .collect();
    json!({
        "data": {
            "id": model,
            "name": model,
            "created": 0,
            "description": "draftgen simulator",
            "architecture": {
                "tokenizer": "Other",
                "instruct_type": null,
                "modality": "text->text",
                "input_modalities": ["text"],
                "output_modalities": ["text"],
            },
            "endpoints": endpoints,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_every_named_provider_with_a_routable_tag() {
        let config = SimConfig {
            providers: vec![
                "Alpha:vllm".parse().unwrap(),
                "Beta:sglang:price=2".parse().unwrap(),
            ],
            ..SimConfig::default()
        };
        let list = listing(&config, "moonshotai", "kimi-k2.5");
        let endpoints = list["data"]["endpoints"].as_array().unwrap();
        let names: Vec<&str> = endpoints
            .iter()
            .map(|e| e["provider_name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["Alpha", "Beta"]);
        assert_eq!(endpoints[1]["tag"], "beta");
        // A provider's price is its multiple of the simulator's.
        let completion = config.prices.completion;
        assert_eq!(
            endpoints[0]["pricing"]["completion"],
            completion.to_string()
        );
        assert_eq!(
            endpoints[1]["pricing"]["completion"],
            (completion * 2.0).to_string()
        );
        assert_eq!(list["data"]["id"], "moonshotai/kimi-k2.5");
        let single = listing(&SimConfig::default(), "a", "b");
        assert_eq!(single["data"]["endpoints"].as_array().unwrap().len(), 1);
    }
}
