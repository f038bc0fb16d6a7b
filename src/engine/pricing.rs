//! The endpoint's model list (OpenRouter `GET /models`), fetched at start: whether it knows the
//! run's model (an unknown id stops the run before anything is spent, naming the closest ids), and
//! the model's published price, which prices answers that report no `usage.cost` (marked
//! estimated) and bounds the first requests of a capped run when no price table is configured.
//!
//! OpenRouter lists each model with `pricing.prompt` and `pricing.completion` in dollars per token,
//! as decimal strings. A model id with a routing suffix (`:exacto`, `:nitro`, `:floor`) is priced as
//! its base model unless the list has the suffixed id itself (`:free` variants are listed).

use std::time::Duration;

use serde_json::Value;

use super::budget::PriceTable;
use crate::api::did_you_mean::edit_distance;
use crate::api::{Client, Endpoint};

/// Ids listed by [`closest_ids`].
const CLOSEST: usize = 3;

/// The published price of `model` at `endpoint`, if it lists one.
pub async fn published_price(
    client: &Client,
    endpoint: &Endpoint,
    model: &str,
) -> Option<PriceTable> {
    price_in_list(&model_list(client, endpoint).await?, model)
}

/// The endpoint's `/models` answer, if it gives one.
pub async fn model_list(client: &Client, endpoint: &Endpoint) -> Option<Value> {
    client
        .get_json(endpoint, "models", Duration::from_secs(15))
        .await
        .ok()
}

/// Whether a `/models` answer lists `model` (or its base model, without a routing suffix);
/// `None` when the answer is not a list of models at all (nothing can be concluded from it).
pub fn lists_model(list: &Value, model: &str) -> Option<bool> {
    let ids = listed_ids(list)?;
    let base = model.split_once(':').map_or(model, |(base, _)| base);
    Some(ids.iter().any(|id| *id == model || *id == base))
}

/// The `n` listed ids nearest to `model` by edit distance (ties in list order).
pub fn closest_ids(list: &Value, model: &str) -> Vec<String> {
    let base = model.split_once(':').map_or(model, |(base, _)| base);
    let mut ids: Vec<(usize, &str)> = listed_ids(list)
        .unwrap_or_default()
        .into_iter()
        .map(|id| (edit_distance(base, id), id))
        .collect();
    ids.sort_by_key(|(distance, _)| *distance);
    ids.into_iter()
        .take(CLOSEST)
        .map(|(_, id)| id.to_string())
        .collect()
}

/// The `id` of every entry of a `/models` answer's `data`.
fn listed_ids(list: &Value) -> Option<Vec<&str>> {
    let models = list.get("data")?.as_array()?;
    Some(
        models
            .iter()
            .filter_map(|m| m.get("id").and_then(Value::as_str))
            .collect(),
    )
}

/// Find `model` in a `/models` answer and read its price.
pub fn price_in_list(list: &Value, model: &str) -> Option<PriceTable> {
    let models = list.get("data")?.as_array()?;
    let find = |id: &str| {
        models
            .iter()
            .find(|m| m.get("id").and_then(Value::as_str) == Some(id))
    };
    let base = model.split_once(':').map_or(model, |(base, _)| base);
    let entry = find(model).or_else(|| find(base))?;
    let pricing = entry.get("pricing")?;
    let per_token = |key: &str| -> Option<f64> {
        let v = pricing.get(key)?;
        let x = match v {
            Value::String(s) => s.trim().parse::<f64>().ok()?,
            other => other.as_f64()?,
        };
        (x.is_finite() && x >= 0.0).then_some(x)
    };
    Some(PriceTable {
        prompt: per_token("prompt")?,
        completion: per_token("completion")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_openrouter_pricing_and_falls_back_to_the_base_model() {
        let list = json!({"data": [
            {"id": "moonshotai/kimi-k2.5", "pricing": {"prompt": "0.0000006", "completion": "0.0000025", "request": "0"}},
            {"id": "moonshotai/kimi-k2.5:free", "pricing": {"prompt": "0", "completion": "0"}},
            {"id": "other/model"}
        ]});
        let p = price_in_list(&list, "moonshotai/kimi-k2.5:exacto").unwrap();
        assert_eq!((p.prompt, p.completion), (0.6e-6, 2.5e-6));
        let free = price_in_list(&list, "moonshotai/kimi-k2.5:free").unwrap();
        assert_eq!(free.completion, 0.0);
        assert_eq!(price_in_list(&list, "other/model"), None);
        assert_eq!(price_in_list(&list, "missing/model"), None);
        assert_eq!(price_in_list(&json!({"object": "list"}), "x"), None);
    }

    #[test]
    fn an_unlisted_model_is_known_as_unknown_with_the_closest_ids() {
        let list = json!({"data": [
            {"id": "moonshotai/kimi-k2.5"}, {"id": "moonshotai/kimi-k2"},
            {"id": "openai/gpt-4o"}, {"id": "qwen/qwen3-32b"}
        ]});
        assert_eq!(
            lists_model(&list, "moonshotai/kimi-k2.5:exacto"),
            Some(true)
        );
        assert_eq!(lists_model(&list, "moonshot/kimi-k2.5"), Some(false));
        assert_eq!(lists_model(&json!({"error": "x"}), "m"), None);
        let closest = closest_ids(&list, "moonshot/kimi-k2.5");
        assert_eq!(closest.len(), 3);
        assert_eq!(closest[..2], ["moonshotai/kimi-k2.5", "moonshotai/kimi-k2"]);
        // Levenshtein distances as given by any textbook example.
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("flaw", "lawn"), 2);
    }
}
