//! The simulator routes like OpenRouter (`draftgen::sim::routing`), over HTTP: `provider.only`
//! load-balances over the listed providers, `order`, `ignore`, `sort` and `allow_fallbacks` are
//! honoured, a provider that is down falls back to the next one (or, with fallbacks off, the
//! request fails with OpenRouter's 502 naming it), and an unknown model id gets OpenRouter's
//! `400 "X is not a valid model ID"` (as openrouter.ai's "Provider Routing" documentation and
//! its error responses describe them).

use std::collections::BTreeMap;

use draftgen::sim::{spawn, SimConfig, SimHandle};
use serde_json::{json, Value};

async fn start(specs: &[&str]) -> SimHandle {
    spawn(SimConfig {
        seed: 3,
        providers: specs.iter().map(|s| s.parse().expect("a spec")).collect(),
        refuses_unknown_models: true,
        ..SimConfig::default()
    })
    .await
    .expect("sim starts")
}

async fn post(sim: &SimHandle, body: &Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("{}/chat/completions", sim.base_url()))
        .json(body)
        .send()
        .await
        .expect("request is sent");
    let status = response.status().as_u16();
    let text = response.text().await.expect("body is read");
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn request(i: usize, provider: Value) -> Value {
    json!({
        "model": "moonshotai/kimi-k2.5",
        "messages": [{"role": "user", "content": format!("Question number {i}?")}],
        "provider": provider,
    })
}

/// Who answered each of `n` prompts (the answer's `provider`, or the error status).
async fn answered_by(sim: &SimHandle, n: usize, provider: Value) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for i in 0..n {
        let (status, body) = post(sim, &request(i, provider.clone())).await;
        let who = if status == 200 {
            body["provider"].as_str().unwrap_or("?").to_string()
        } else {
            format!("HTTP {status}")
        };
        *out.entry(who).or_insert(0) += 1;
    }
    out
}

#[tokio::test]
async fn only_balances_over_the_listed_providers_and_ignore_skips() {
    let sim = start(&["A:openrouter", "B:openrouter", "C:openrouter"]).await;
    let only = answered_by(&sim, 40, json!({"only": ["a", "c"]})).await;
    assert_eq!(only.keys().collect::<Vec<_>>(), ["A", "C"], "{only:?}");
    assert!(only.values().all(|&n| n >= 8), "spread over both: {only:?}");
    let ignore = answered_by(&sim, 40, json!({"ignore": ["B"]})).await;
    assert!(!ignore.contains_key("B") && ignore.len() == 2, "{ignore:?}");
    let (status, body) = post(&sim, &request(0, json!({"only": ["Nowhere"]}))).await;
    assert_eq!(status, 404, "{body}");
}

#[tokio::test]
async fn order_and_sort_pick_the_first_choice() {
    let sim = start(&[
        "Cheap:openrouter:price=0.5,throughput=20,latency=900",
        "Fast:openrouter:price=3,throughput=300,latency=400",
        "Near:openrouter:price=2,throughput=60,latency=80",
    ])
    .await;
    let order = answered_by(&sim, 10, json!({"order": ["Near", "Fast"]})).await;
    assert_eq!(order, BTreeMap::from([("Near".to_string(), 10)]));
    for (sort, first) in [
        ("price", "Cheap"),
        ("throughput", "Fast"),
        ("latency", "Near"),
    ] {
        let by = answered_by(&sim, 6, json!({"sort": sort})).await;
        assert_eq!(by, BTreeMap::from([(first.to_string(), 6)]), "sort {sort}");
    }
    // By default the balance leans to the cheapest (weights 1/price²: 4, 1/9, 1/4).
    let balanced = answered_by(&sim, 60, json!({})).await;
    assert!(
        balanced.get("Cheap") > balanced.get("Near").max(balanced.get("Fast")),
        "{balanced:?}"
    );
    let (status, _) = post(&sim, &request(0, json!({"sort": "speed"}))).await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn a_down_provider_falls_back_or_fails_as_openrouter_does() {
    let sim = start(&["Dead:openrouter:down", "Alive:openrouter"]).await;
    // With fallbacks (the default) the next provider answers.
    let fallback = answered_by(&sim, 8, json!({"order": ["Dead"]})).await;
    assert_eq!(fallback, BTreeMap::from([("Alive".to_string(), 8)]));
    let only_both = answered_by(&sim, 8, json!({"only": ["Dead", "Alive"]})).await;
    assert_eq!(only_both, BTreeMap::from([("Alive".to_string(), 8)]));
    // Without them, the request fails as the provider did: 502 naming it.
    for provider in [
        json!({"order": ["Dead"], "allow_fallbacks": false}),
        json!({"only": ["Dead"]}),
    ] {
        let (status, body) = post(&sim, &request(1, provider.clone())).await;
        assert_eq!(status, 502, "{provider}: {body}");
        assert_eq!(body["error"]["message"], "Provider returned error");
        assert_eq!(body["error"]["metadata"]["provider_name"], "Dead");
    }
}

#[tokio::test]
async fn an_unknown_model_id_gets_openrouter_s_400() {
    let sim = start(&["A:openrouter"]).await;
    let mut body = request(0, json!({}));
    body["model"] = json!("moonshot/kimi-k2.5");
    let (status, answer) = post(&sim, &body).await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(
        answer["error"]["message"],
        "moonshot/kimi-k2.5 is not a valid model ID"
    );
    assert_eq!(answer["error"]["code"], 400);
    // A variant of the served model is the same model.
    body["model"] = json!("moonshotai/kimi-k2.5:nitro");
    assert_eq!(post(&sim, &body).await.0, 200);
}
