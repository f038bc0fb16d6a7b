//! The model's published price (OpenRouter `GET /models`): what bounds the first requests of a
//! capped run when no price table is configured, before any answer has told what a request costs.
//!
//! OpenRouter lists each model with `pricing.prompt` and `pricing.completion` in dollars per token,
//! as decimal strings. A model id with a routing suffix (`:exacto`, `:nitro`, `:floor`) is priced as
//! its base model unless the list has the suffixed id itself (`:free` variants are listed).

use std::time::Duration;

use serde_json::Value;

use super::budget::PriceTable;
use crate::api::{Client, Endpoint};

/// The published price of `model` at `endpoint`, if it lists one.
pub async fn published_price(
    client: &Client,
    endpoint: &Endpoint,
    model: &str,
) -> Option<PriceTable> {
    let list = client
        .get_json(endpoint, "models", Duration::from_secs(15))
        .await
        .ok()?;
    price_in_list(&list, model)
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
}
