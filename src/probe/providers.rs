//! Which providers serve a model on OpenRouter: `GET /models/{author}/{slug}/endpoints`, the
//! listing OpenRouter's own SDK calls (OpenRouterTeam/typescript-sdk `src/funcs/endpointsList.ts`;
//! response `{"data": {..., "endpoints": [PublicEndpoint]}}` per
//! `src/models/operations/listendpoints.ts`, each endpoint with `provider_name` (display name),
//! `tag` (the provider slug `provider.only` takes; a provider serving the model in two
//! quantizations has two tags), `quantization`, `pricing`, … per `src/models/publicendpoint.ts`).
//! Each listed endpoint becomes one probe target pinned to it with `provider.only: [tag]`.

use std::time::Duration;

use serde_json::Value;

use crate::api::{Client, Endpoint};

/// One endpoint OpenRouter lists for the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    /// `provider_name`: shown in the table.
    pub name: String,
    /// `tag`, sent as `provider.only` (`provider_name` when the listing has no tag).
    pub slug: String,
    pub quantization: Option<String>,
}

/// The listing's path for `model` (below the API base, `.../api/v1`). The listing knows the
/// model, not its routing suffixes (`:exacto`, `:nitro`); a model id must be `author/slug`.
pub fn listing_path(model: &str) -> Result<String, String> {
    let id = model.split(':').next().unwrap_or(model);
    match id.split_once('/') {
        Some((author, slug)) if !author.is_empty() && !slug.is_empty() && !slug.contains('/') => {
            Ok(format!("models/{author}/{slug}/endpoints"))
        }
        _ => Err(format!(
            "model {model:?} is not AUTHOR/SLUG, so OpenRouter cannot list its providers"
        )),
    }
}

/// The endpoints of a listing response, in its order; names shared by several endpoints (one
/// provider, several quantizations) are shown by their tag instead.
pub fn parse_listing(body: &Value) -> Result<Vec<Listed>, String> {
    let endpoints = body
        .pointer("/data/endpoints")
        .and_then(Value::as_array)
        .ok_or("the listing has no data.endpoints array")?;
    let mut listed: Vec<Listed> = endpoints
        .iter()
        .filter_map(|e| {
            let name = e["provider_name"].as_str()?.to_string();
            let slug = e["tag"]
                .as_str()
                .filter(|t| !t.is_empty())
                .map_or_else(|| name.clone(), str::to_string);
            Some(Listed {
                name,
                slug,
                quantization: e["quantization"].as_str().map(str::to_string),
            })
        })
        .collect();
    let names: Vec<String> = listed.iter().map(|l| l.name.clone()).collect();
    for l in &mut listed {
        if names.iter().filter(|n| **n == l.name).count() > 1 {
            l.name = l.slug.clone();
        }
    }
    Ok(listed)
}

/// Ask OpenRouter (at `endpoint`) which providers serve `model`.
pub async fn list(
    client: &Client,
    endpoint: &Endpoint,
    model: &str,
) -> Result<Vec<Listed>, String> {
    let path = listing_path(model)?;
    let body = client
        .get_json(endpoint, &path, Duration::from_secs(15))
        .await
        .map_err(|e| e.to_string())?;
    parse_listing(&body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_path_needs_author_and_slug() {
        assert_eq!(
            listing_path("moonshotai/kimi-k2.5:exacto").unwrap(),
            "models/moonshotai/kimi-k2.5/endpoints"
        );
        assert!(listing_path("kimi").is_err());
    }

    #[test]
    fn endpoints_become_targets_by_tag() {
        let body = json!({"data": {"endpoints": [
            {"provider_name": "DeepInfra", "tag": "deepinfra/fp4", "quantization": "fp4"},
            {"provider_name": "DeepInfra", "tag": "deepinfra/fp8", "quantization": "fp8"},
            {"provider_name": "Groq", "tag": "groq", "quantization": null},
            {"provider_name": "NoTag"},
        ]}});
        let listed = parse_listing(&body).unwrap();
        let names: Vec<&str> = listed.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["deepinfra/fp4", "deepinfra/fp8", "Groq", "NoTag"]);
        assert_eq!(listed[2].slug, "groq");
        assert_eq!(listed[3].slug, "NoTag");
        assert_eq!(listed[0].quantization.as_deref(), Some("fp4"));
        assert!(parse_listing(&json!({"data": []})).is_err());
    }
}
