//! The simulator over HTTP: each flavour's response shape (plain and streamed, reassembled),
//! determinism by seed, schema-valid tool calls numbered across history, `max_tokens`, token ids,
//! faults at their rates, and the account endpoints.

use std::path::PathBuf;

use draftgen::model::Tokenizer;
use draftgen::sim::{spawn, FaultKind, FaultRates, Flavor, SimConfig, SimHandle};
use serde_json::{json, Value};

fn kimi_dir() -> PathBuf {
    draftgen::model::assets::assets_root()
        .expect("shared assets (set DRAFTGEN_ASSETS or place ../shared/assets)")
        .join("kimi-k2.5")
}

fn weather_tools() -> Value {
    json!([
        {"type": "function", "function": {
            "name": "get_weather",
            "description": "Return the weather for a city.",
            "parameters": {"type": "object", "properties": {
                "city": {"type": "string", "minLength": 1},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 10}
            }, "required": ["city"]}
        }},
        {"type": "function", "function": {
            "name": "search",
            "parameters": {"type": "object", "properties": {
                "query": {"type": "string"},
                "limit": {"type": "number", "minimum": 0, "maximum": 5},
                "filters": {"type": "array", "items": {"type": "object", "properties": {
                    "field": {"type": "string"}, "exact": {"type": "boolean"}
                }, "required": ["field", "exact"]}}
            }, "required": ["query", "filters"]}
        }}
    ])
}

fn request(i: usize) -> Value {
    json!({
        "model": "moonshotai/kimi-k2.5",
        "messages": [{"role": "user", "content": format!("Question number {i}: what now?")}],
    })
}

fn tool_request(i: usize) -> Value {
    let mut body = request(i);
    body["tools"] = weather_tools();
    body
}

async fn start(flavor: Flavor, model: bool) -> SimHandle {
    spawn(SimConfig {
        flavor,
        seed: 11,
        model_dir: model.then(kimi_dir),
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

/// The raw SSE text of a streamed request.
async fn post_stream(sim: &SimHandle, body: &Value) -> String {
    let mut body = body.clone();
    body["stream"] = json!(true);
    body["stream_options"] = json!({"include_usage": true});
    reqwest::Client::new()
        .post(format!("{}/chat/completions", sim.base_url()))
        .json(&body)
        .send()
        .await
        .expect("request is sent")
        .text()
        .await
        .expect("stream is read")
}

/// Reassemble a stream into a non-streaming message (as K2-Vendor-Verifier does).
fn reassemble(sse: &str) -> (Value, Option<String>, Option<Value>, bool) {
    let mut reasoning = String::new();
    let mut content = String::new();
    let mut calls: Vec<Value> = Vec::new();
    let mut finish = None;
    let mut usage = None;
    let mut done = false;
    for line in sse.lines() {
        if line.is_empty() || line.starts_with(':') {
            continue;
        }
        let data = line
            .strip_prefix("data: ")
            .expect("every line is data or a comment");
        if data == "[DONE]" {
            done = true;
            continue;
        }
        let chunk: Value = serde_json::from_str(data).expect("every event is JSON");
        if let Some(u) = chunk.get("usage") {
            usage = Some(u.clone());
        }
        let Some(choice) = chunk["choices"].get(0) else {
            continue;
        };
        if let Some(f) = choice["finish_reason"].as_str() {
            finish = Some(f.to_string());
        }
        let delta = &choice["delta"];
        reasoning.push_str(delta["reasoning"].as_str().unwrap_or(""));
        content.push_str(delta["content"].as_str().unwrap_or(""));
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            let i = call["index"].as_u64().unwrap() as usize;
            if calls.len() <= i {
                calls.resize(i + 1, json!({"id": null, "name": "", "arguments": ""}));
            }
            if let Some(id) = call.get("id") {
                calls[i]["id"] = id.clone();
            }
            if let Some(name) = call["function"]["name"].as_str() {
                calls[i]["name"] = json!(name);
            }
            if let Some(args) = call["function"]["arguments"].as_str() {
                let joined = format!("{}{args}", calls[i]["arguments"].as_str().unwrap());
                calls[i]["arguments"] = json!(joined);
            }
        }
    }
    let message = json!({"reasoning": reasoning, "content": content, "tool_calls": calls});
    (message, finish, usage, done)
}

#[tokio::test]
async fn openrouter_plain_answer_has_openrouter_shape() {
    let sim = start(Flavor::OpenRouter, false).await;
    let (status, body) = post(&sim, &request(1)).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["id"].as_str().unwrap().starts_with("gen-"));
    assert_eq!(body["provider"], "DraftgenSim");
    assert_eq!(body["object"], "chat.completion");
    let choice = &body["choices"][0];
    assert_eq!(choice["finish_reason"], "stop");
    assert_eq!(choice["native_finish_reason"], "stop");
    let message = &choice["message"];
    let reasoning = message["reasoning"].as_str().unwrap();
    assert!(!reasoning.is_empty());
    assert_eq!(message["reasoning_details"][0]["type"], "reasoning.text");
    assert_eq!(message["reasoning_details"][0]["text"], reasoning);
    let content = message["content"].as_str().unwrap();
    assert!(!content.is_empty());
    assert!(!content.contains("</think>") && !reasoning.contains("</think>"));
    let usage = &body["usage"];
    assert!(usage["cost"].as_f64().unwrap() > 0.0);
    assert!(usage["completion_tokens"].as_u64().unwrap() > 0);
    assert!(
        usage["completion_tokens_details"]["reasoning_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );
    sim.shutdown().await.unwrap();
}

#[tokio::test]
async fn answers_are_a_function_of_seed_and_request() {
    let a = start(Flavor::OpenRouter, false).await;
    let b = start(Flavor::OpenRouter, false).await;
    let other = spawn(SimConfig {
        seed: 12,
        ..SimConfig::default()
    })
    .await
    .unwrap();
    for i in 0..5 {
        let (_, first) = post(&a, &tool_request(i)).await;
        let (_, retry) = post(&a, &tool_request(i)).await;
        let (_, fresh) = post(&b, &tool_request(i)).await;
        let (_, reseeded) = post(&other, &tool_request(i)).await;
        let message = |v: &Value| v["choices"][0]["message"].clone();
        assert_eq!(message(&first), message(&retry));
        assert_eq!(message(&first), message(&fresh));
        assert_ne!(message(&first), message(&reseeded));
    }
}
