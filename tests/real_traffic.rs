//! `draftgen generate` against answers built to the shapes real provider traffic has
//! (measured on recorded OpenRouter, Groq, Hugging Face router and Avian answers): whitespace before a non-streamed body, `: OPENROUTER
//! PROCESSING` comments in a stream, the dated `model` of the answer, tool calls ending with
//! `finish_reason` null or `stop`, a trailing `" "` argument chunk after complete JSON, a
//! provider's 429 naming the provider in `metadata`, and a mid-stream `error` chunk.
//!
//! The server here is not the simulator: each answer is written out by hand, byte for byte, in
//! the shape the recorded traffic and OpenRouter's API reference (errors, streaming) show. What
//! is checked is the journal: each answer kept as it came (never rewritten by the client; the
//! reconstruction decides what the text means), each failure classed, its provider named, and
//! retried.

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use common::run::{output, text, RunDir};
use common::servers::serve;
use serde_json::{json, Value};

/// The model asked for; answers name its dated variant, as OpenRouter's did.
const MODEL: &str = "moonshotai/kimi-k2.5";
const DATED_MODEL: &str = "moonshotai/kimi-k2.5-0127";

/// What `raw` said in the recorded OpenRouter 429s (with the model asked for).
const RATE_LIMITED_RAW: &str = "moonshotai/kimi-k2.5 is temporarily rate-limited upstream. \
    Please retry shortly, or add your own key to accumulate your rate limits: \
    https://openrouter.ai/settings/integrations";

/// Each case: its name (the prompt's user message, how the server knows what to answer) and
/// its prompt id.
const CASES: &[(&str, &str)] = &[
    ("padding", "00000000000000a1"),
    ("dated_model", "00000000000000a2"),
    ("tools_finish_null", "00000000000000a3"),
    ("tools_finish_stop", "00000000000000a4"),
    ("rate_limited", "00000000000000a5"),
    ("trailing_space_argument", "00000000000000a6"),
    ("mid_stream_error", "00000000000000a7"),
    ("keep_alive_comments", "00000000000000a8"),
];

fn id_of(case: &str) -> &'static str {
    CASES
        .iter()
        .find(|(name, _)| *name == case)
        .map(|(_, id)| *id)
        .unwrap_or_else(|| panic!("no case {case}"))
}

/// Requests seen per case, so a case can fail its first attempt and answer the next.
type Seen = Arc<Mutex<HashMap<String, usize>>>;

async fn chat(State(seen): State<Seen>, body: Bytes) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let case = request["messages"][0]["content"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let stream = request["stream"] == true;
    let attempt = {
        let mut seen = seen.lock().unwrap();
        let n = seen.entry(case.clone()).or_default();
        *n += 1;
        *n
    };
    if stream {
        streamed(&case, attempt)
    } else {
        unstreamed(&case, attempt)
    }
}

fn bytes(status: u16, content_type: &str, body: String) -> Response {
    (
        StatusCode::from_u16(status).unwrap(),
        [("content-type", content_type.to_string())],
        body,
    )
        .into_response()
}

/// OpenRouter's 429 when the provider it routed to is rate-limited (recorded shape).
fn provider_rate_limited() -> Response {
    let body = json!({"error": {"message": "Provider returned error", "code": 429,
        "metadata": {"raw": RATE_LIMITED_RAW, "provider_name": "WandB"}},
        "user_id": "user_2zLtpQz8xample"});
    bytes(429, "application/json", body.to_string())
}

fn usage(completion_tokens: u64) -> Value {
    json!({"prompt_tokens": 12, "completion_tokens": completion_tokens,
           "total_tokens": 12 + completion_tokens, "cost": 0.0001})
}

/// A tool call as the recorded answers carry it: the provider's id, Kimi's argument spacing.
fn add_call() -> Value {
    json!({"id": "functions.add:0", "type": "function", "index": 0,
           "function": {"name": "add", "arguments": "{\"a\": 2, \"b\": 3}"}})
}

fn completion(message: Value, finish: Value, model: &str) -> Value {
    json!({"id": "gen-1764670000-AbCdEf", "provider": "Chutes", "model": model,
           "object": "chat.completion", "created": 1764670000,
           "choices": [{"logprobs": null, "finish_reason": finish,
                        "native_finish_reason": finish, "index": 0, "message": message}],
           "usage": usage(9)})
}

fn unstreamed(case: &str, attempt: usize) -> Response {
    let text = json!({"role": "assistant", "content": "Oi!", "refusal": null,
                      "reasoning": "The user greets."});
    let calls = |finish: &str| {
        let message = json!({"role": "assistant", "content": "", "refusal": null,
                             "reasoning": "Add them.", "tool_calls": [add_call()]});
        completion(message, json!(finish), DATED_MODEL)
    };
    let body = match case {
        // The recorded bodies start with this padding (OpenRouter writes it while it waits).
        "padding" => format!(
            "\n         \n\n{}",
            completion(text, json!("stop"), DATED_MODEL)
        ),
        "dated_model" => completion(text, json!("stop"), DATED_MODEL).to_string(),
        "tools_finish_null" => {
            let mut answer = calls("stop");
            answer["choices"][0]["finish_reason"] = Value::Null;
            answer["choices"][0]["native_finish_reason"] = Value::Null;
            answer.to_string()
        }
        "tools_finish_stop" => calls("stop").to_string(),
        "rate_limited" if attempt == 1 => return provider_rate_limited(),
        "rate_limited" => completion(text, json!("stop"), DATED_MODEL).to_string(),
        other => {
            return bytes(
                400,
                "application/json",
                format!("{{\"error\":\"{other}\"}}"),
            )
        }
    };
    bytes(200, "application/json", body)
}

/// One `chat.completion.chunk` of the stream.
fn chunk(delta: Value, finish: Value) -> Value {
    json!({"id": "gen-1764670000-AbCdEf", "provider": "Chutes", "model": DATED_MODEL,
           "object": "chat.completion.chunk", "created": 1764670000,
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish,
                        "native_finish_reason": finish, "logprobs": null}]})
}

/// The last chunk: no choice, the usage.
fn usage_chunk() -> Value {
    json!({"id": "gen-1764670000-AbCdEf", "provider": "Chutes", "model": DATED_MODEL,
           "object": "chat.completion.chunk", "created": 1764670000, "choices": [],
           "usage": usage(9)})
}

/// SSE as OpenRouter writes it: keep-alive comments before the first chunk and between
/// chunks, each chunk one `data:` event, `[DONE]` last.
fn sse(chunks: &[Value]) -> String {
    let mut out = String::from(": OPENROUTER PROCESSING\n\n: OPENROUTER PROCESSING\n\n");
    for (n, chunk) in chunks.iter().enumerate() {
        out.push_str(&format!("data: {chunk}\n\n"));
        if n == 0 {
            out.push_str(": OPENROUTER PROCESSING\n\n");
        }
    }
    out.push_str("data: [DONE]\n\n");
    out
}

fn text_chunks() -> Vec<Value> {
    vec![
        chunk(
            json!({"role": "assistant", "content": "", "reasoning": "The user"}),
            Value::Null,
        ),
        chunk(json!({"content": "", "reasoning": " greets."}), Value::Null),
        chunk(json!({"content": "Oi!"}), Value::Null),
        chunk(json!({"content": ""}), json!("stop")),
        usage_chunk(),
    ]
}

/// A call streamed in pieces, the last piece `tail` (K2.6 sends `" "` after complete JSON),
/// ending with `finish` (null, `stop` or `tool_calls`).
fn call_chunks(tail: Option<&str>, finish: Value) -> Vec<Value> {
    let piece = |arguments: &str| json!({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]});
    let mut chunks = vec![
        chunk(
            json!({"role": "assistant", "content": "", "reasoning": "Add them."}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "functions.add:0", "type": "function",
                                   "function": {"name": "add", "arguments": ""}}]}),
            Value::Null,
        ),
        chunk(piece("{\"a\": 2,"), Value::Null),
        chunk(piece(" \"b\": 3}"), Value::Null),
    ];
    if let Some(tail) = tail {
        chunks.push(chunk(piece(tail), Value::Null));
    }
    chunks.push(chunk(json!({"content": ""}), finish));
    chunks.push(usage_chunk());
    chunks
}

fn streamed(case: &str, attempt: usize) -> Response {
    let body = match case {
        "keep_alive_comments" | "dated_model" => sse(&text_chunks()),
        "tools_finish_null" => sse(&call_chunks(None, Value::Null)),
        "tools_finish_stop" => sse(&call_chunks(None, json!("stop"))),
        "trailing_space_argument" => sse(&call_chunks(Some(" "), json!("tool_calls"))),
        "rate_limited" if attempt == 1 => return provider_rate_limited(),
        "rate_limited" => sse(&text_chunks()),
        // OpenRouter's mid-stream error (API reference, streaming): the status stays 200 and
        // the stream ends with a chunk carrying `error` and `finish_reason: "error"`.
        "mid_stream_error" if attempt == 1 => {
            let mut error = chunk(json!({"content": ""}), json!("error"));
            error["error"] =
                json!({"code": "server_error", "message": "Provider disconnected unexpectedly"});
            let mut out = String::new();
            for c in &text_chunks()[..2] {
                out.push_str(&format!("data: {c}\n\n"));
            }
            out.push_str(&format!("data: {error}\n\n"));
            out
        }
        "mid_stream_error" => sse(&text_chunks()),
        other => {
            return bytes(
                400,
                "application/json",
                format!("{{\"error\":\"{other}\"}}"),
            )
        }
    };
    bytes(200, "text/event-stream", body)
}

/// Quick retries, short timeouts.
const CONFIG: &str = r#"[request]
max_tokens = 64
[timeouts]
connect_s = 5
first_byte_s = 10
idle_s = 10
total_s = 30
[retry]
max_attempts = 3
base_ms = 10
cap_s = 0.05
"#;

/// `generate` of `cases` (streamed or not) against a fresh scripted server; every record of
/// the run, by prompt id, in attempt order.
fn run(cases: &[&str], stream: bool) -> HashMap<String, Vec<Value>> {
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .with_state(Seen::default());
    let base_url = serve(app);
    let dir = RunDir::new();
    let tools = json!([{"type": "function", "function": {"name": "add",
        "description": "Add two integers.",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"},
                       "b": {"type": "integer"}}, "required": ["a", "b"]}}}]);
    dir.write_prompts(cases.iter().map(|case| {
        json!({"id": id_of(case), "source": "real_traffic",
               "messages": [{"role": "user", "content": case}], "tools": tools})
    }));
    let config = dir.join("run.toml");
    std::fs::write(&config, CONFIG).unwrap();
    let mut cmd = dir.generate(&base_url);
    cmd.args(["--model", MODEL, "--kind", "generic", "--config"])
        .arg(&config);
    if stream {
        cmd.arg("--stream");
    }
    let out = output(&mut cmd);
    assert!(out.status.success(), "{}", text(&out));
    let mut records: HashMap<String, Vec<Value>> = HashMap::new();
    for record in dir.journal() {
        let id = record["id"].as_str().unwrap().to_string();
        records.entry(id).or_default().push(record);
    }
    for attempts in records.values_mut() {
        attempts.sort_by_key(|r| r["attempt"].as_u64());
    }
    records
}

/// The single success of `case`, its only record.
fn only_success<'a>(records: &'a HashMap<String, Vec<Value>>, case: &str) -> &'a Value {
    let attempts = &records[id_of(case)];
    assert_eq!(attempts.len(), 1, "{case}: {attempts:#?}");
    assert_eq!(
        attempts[0]["status"], "success",
        "{case}: {:#}",
        attempts[0]
    );
    &attempts[0]
}

/// The recorded rate limit: classed rate-limited with the provider named (in the record's
/// `provider` and its message), then retried to a success.
fn check_rate_limited_then_retried(records: &HashMap<String, Vec<Value>>) {
    let attempts = &records[id_of("rate_limited")];
    assert_eq!(attempts.len(), 2, "{attempts:#?}");
    let failed = &attempts[0];
    assert_eq!(failed["status"], "failed", "{failed:#}");
    assert_eq!(failed["error_class"], "rate_limited", "{failed:#}");
    assert_eq!(failed["http_status"], 429, "{failed:#}");
    assert_eq!(failed["provider"], "WandB", "{failed:#}");
    let message = failed["error"].as_str().unwrap();
    assert!(message.contains("[provider WandB]"), "{message}");
    assert!(
        message.contains("is temporarily rate-limited upstream"),
        "{message}"
    );
    assert_eq!(
        failed["response"]["error"]["metadata"]["provider_name"],
        "WandB"
    );
    assert_eq!(attempts[1]["status"], "success", "{:#}", attempts[1]);
}

/// A text answer (reasoning and content) recorded whole, with the provider and its count.
fn check_text_answer(records: &HashMap<String, Vec<Value>>, case: &str) {
    let record = only_success(records, case);
    assert_eq!(record["response"]["id"], "gen-1764670000-AbCdEf");
    let message = &record["response"]["choices"][0]["message"];
    assert_eq!(message["content"], "Oi!", "{case}");
    assert_eq!(message["reasoning"], "The user greets.", "{case}");
    assert_eq!(record["provider"], "Chutes", "{case}");
    assert_eq!(record["completion_tokens"], 9, "{case}");
}

/// The dated model answering for the one asked: accepted, and kept as the answer named it.
fn check_dated_model(records: &HashMap<String, Vec<Value>>) {
    let dated = only_success(records, "dated_model");
    assert_eq!(dated["request"]["model"], MODEL);
    assert_eq!(dated["response"]["model"], DATED_MODEL);
}

/// Tool calls whatever the finish reason: the calls kept (a streamed call's pieces put together
/// as sent), the finish reason as sent — none is made up; `build` reads both.
fn check_calls_with_their_finish(records: &HashMap<String, Vec<Value>>) {
    for (case, finish) in [
        ("tools_finish_null", Value::Null),
        ("tools_finish_stop", json!("stop")),
    ] {
        let record = only_success(records, case);
        let choice = &record["response"]["choices"][0];
        assert_eq!(choice["finish_reason"], finish, "{case}");
        assert_eq!(
            choice["message"]["tool_calls"],
            json!([add_call()]),
            "{case}"
        );
    }
}

#[test]
fn unstreamed_answers_as_real_providers_send_them() {
    let cases = [
        "padding",
        "dated_model",
        "tools_finish_null",
        "tools_finish_stop",
        "rate_limited",
    ];
    let records = run(&cases, false);
    assert_eq!(records.len(), cases.len(), "{records:#?}");
    // Whitespace before the JSON: the answer is the JSON that follows it.
    check_text_answer(&records, "padding");
    check_dated_model(&records);
    check_calls_with_their_finish(&records);
    check_rate_limited_then_retried(&records);
}

#[test]
fn streamed_answers_as_real_providers_send_them() {
    let cases = [
        "keep_alive_comments",
        "dated_model",
        "tools_finish_null",
        "tools_finish_stop",
        "trailing_space_argument",
        "rate_limited",
        "mid_stream_error",
    ];
    let records = run(&cases, true);
    assert_eq!(records.len(), cases.len(), "{records:#?}");
    // Keep-alive comments before and between chunks: skipped, the chunks assembled.
    check_text_answer(&records, "keep_alive_comments");
    check_dated_model(&records);
    check_calls_with_their_finish(&records);

    // The `" "` after complete JSON stays in the arguments: what the model's text was is the
    // reconstruction's question, not the client's.
    let trailing = only_success(&records, "trailing_space_argument");
    let choice = &trailing["response"]["choices"][0];
    let mut call = add_call();
    call["function"]["arguments"] = json!("{\"a\": 2, \"b\": 3} ");
    assert_eq!(choice["message"]["tool_calls"], json!([call]));
    assert_eq!(choice["finish_reason"], "tool_calls");

    check_rate_limited_then_retried(&records);

    // The `error` chunk after some output: a mid-stream failure with the partial answer and
    // the provider that broke, then retried.
    let attempts = &records[id_of("mid_stream_error")];
    assert_eq!(attempts.len(), 2, "{attempts:#?}");
    let failed = &attempts[0];
    assert_eq!(failed["status"], "failed", "{failed:#}");
    assert_eq!(failed["error_class"], "mid_stream", "{failed:#}");
    assert_eq!(failed["provider"], "Chutes", "{failed:#}");
    let message = failed["error"].as_str().unwrap();
    assert!(
        message.contains("Provider disconnected unexpectedly"),
        "{message}"
    );
    let partial = &failed["response"]["choices"][0];
    assert_eq!(partial["message"]["reasoning"], "The user greets.");
    assert_eq!(partial["finish_reason"], "error");
    assert_eq!(attempts[1]["status"], "success", "{:#}", attempts[1]);
}
