//! The API client against answers written byte for byte in the shapes recorded OpenRouter
//! traffic has: whitespace before a non-streamed body, `: OPENROUTER PROCESSING` comments in a
//! stream, the answer's dated `model`, tool calls ending with `finish_reason` null or `stop`, a
//! trailing `" "` argument piece after complete JSON, and a provider's 429 naming the provider
//! in `error.metadata`. `tests/real_traffic.rs` checks the same shapes through `generate`; these
//! check the client alone (what `chat_raw` gives the engine).
//!
//! The server is raw tokio TCP so each answer is exactly the bytes written here; expected
//! values are written out by hand, never produced by our own assembler.

use std::time::Duration;

use draftgen::api::{
    ApiError, Client, ClientConfig, Endpoint, ErrorClass, ResponseFacts, Timeouts,
};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const MODEL: &str = "moonshotai/kimi-k2.5";
const DATED_MODEL: &str = "moonshotai/kimi-k2.5-0127";

/// What `raw` said in the recorded OpenRouter 429s.
const RATE_LIMITED_RAW: &str = "moonshotai/kimi-k2.5 is temporarily rate-limited upstream. \
    Please retry shortly, or add your own key to accumulate your rate limits: \
    https://openrouter.ai/settings/integrations";

/// Serve `writes` (each written and flushed on its own, a short pause between) to every
/// connection, then close it.
async fn serve(writes: Vec<Vec<u8>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let writes = writes.clone();
            tokio::spawn(async move {
                read_request(&mut socket).await;
                for bytes in &writes {
                    if socket.write_all(bytes).await.is_err() {
                        return;
                    }
                    let _ = socket.flush().await;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                let _ = socket.shutdown().await;
            });
        }
    });
    format!("http://{addr}/api/v1")
}

/// Read one request: headers, then a `content-length` body.
async fn read_request(socket: &mut tokio::net::TcpStream) {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse::<usize>().unwrap());
            if buf.len() >= end + 4 + len {
                return;
            }
        }
        match socket.read(&mut tmp).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    }
}

fn client() -> Client {
    Client::new(ClientConfig::default()).unwrap()
}

fn timeouts() -> Timeouts {
    Timeouts {
        connect: Duration::from_secs(30),
        first_byte: Duration::from_secs(60),
        idle: Duration::from_secs(60),
        total: Duration::from_secs(120),
    }
}

async fn chat(
    writes: Vec<Vec<u8>>,
    stream: bool,
) -> Result<draftgen::api::RawChatOutcome, ApiError> {
    let base_url = serve(writes).await;
    let endpoint = Endpoint {
        name: "openrouter".into(),
        base_url,
        api_key: None,
        weight: 1,
    };
    let body = serde_json::value::to_raw_value(&json!({"model": MODEL, "stream": stream,
        "messages": [{"role": "user", "content": "Add 2 and 3."}]}))
    .unwrap();
    client().chat_raw(&endpoint, &body, &timeouts()).await
}

/// The answer of a success, parsed.
fn answer(outcome: &draftgen::api::RawChatOutcome) -> Value {
    serde_json::from_str(&outcome.response).unwrap()
}

/// Head of a close-delimited response (OpenRouter writes padding before it knows the length).
fn head(status: &str, content_type: &str) -> Vec<u8> {
    format!("HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\nconnection: close\r\n\r\n")
        .into_bytes()
}

fn usage() -> Value {
    json!({"prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 21, "cost": 0.0001})
}

/// A tool call as the recorded answers carry it: the provider's id, Kimi's argument spacing.
fn add_call(arguments: &str) -> Value {
    json!({"id": "functions.add:0", "type": "function", "index": 0,
           "function": {"name": "add", "arguments": arguments}})
}

fn completion(message: Value, finish: Value) -> Value {
    json!({"id": "gen-1764670000-AbCdEf", "provider": "Chutes", "model": DATED_MODEL,
           "object": "chat.completion", "created": 1764670000,
           "choices": [{"logprobs": null, "finish_reason": finish,
                        "native_finish_reason": finish, "index": 0, "message": message}],
           "usage": usage()})
}

fn text_message() -> Value {
    json!({"role": "assistant", "content": "Oi!", "refusal": null, "reasoning": "The user greets."})
}

fn calls_message() -> Value {
    json!({"role": "assistant", "content": "", "refusal": null, "reasoning": "Add them.",
           "tool_calls": [add_call("{\"a\": 2, \"b\": 3}")]})
}

/// One `chat.completion.chunk`.
fn chunk(delta: Value, finish: Value) -> Value {
    json!({"id": "gen-1764670000-AbCdEf", "provider": "Chutes", "model": DATED_MODEL,
           "object": "chat.completion.chunk", "created": 1764670000,
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish,
                        "native_finish_reason": finish, "logprobs": null}]})
}

fn usage_chunk() -> Value {
    json!({"id": "gen-1764670000-AbCdEf", "provider": "Chutes", "model": DATED_MODEL,
           "object": "chat.completion.chunk", "created": 1764670000, "choices": [],
           "usage": usage()})
}

const PROCESSING: &str = ": OPENROUTER PROCESSING\n\n";

/// A stream as OpenRouter writes it: comments before the first chunk and between chunks, each
/// its own write, `[DONE]` last.
fn sse(chunks: &[Value]) -> Vec<Vec<u8>> {
    let mut writes = vec![head("200 OK", "text/event-stream")];
    writes.push(PROCESSING.into());
    writes.push(PROCESSING.into());
    for chunk in chunks {
        writes.push(format!("data: {chunk}\n\n").into_bytes());
        writes.push(PROCESSING.into());
    }
    writes.push(b"data: [DONE]\n\n".to_vec());
    writes
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

/// A call streamed in pieces, then `tail` if any, ending with `finish`.
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

#[tokio::test]
async fn whitespace_padding_before_an_unstreamed_body_is_skipped() {
    let body = completion(text_message(), json!("stop"));
    let writes = vec![
        head("200 OK", "application/json"),
        b"\n         ".to_vec(),
        b"\n\n".to_vec(),
        body.to_string().into_bytes(),
    ];
    let outcome = chat(writes, false).await.unwrap();
    assert_eq!(answer(&outcome), body);
    assert_eq!(outcome.facts.provider.as_deref(), Some("Chutes"));
    assert_eq!(outcome.facts.usage.completion_tokens, Some(9));
}

#[tokio::test]
async fn processing_comments_in_a_stream_are_skipped() {
    let outcome = chat(sse(&text_chunks()), true).await.unwrap();
    let answer = answer(&outcome);
    let message = &answer["choices"][0]["message"];
    assert_eq!(message["content"], "Oi!");
    assert_eq!(message["reasoning"], "The user greets.");
    assert_eq!(answer["choices"][0]["finish_reason"], "stop");
    assert_eq!(outcome.facts.provider.as_deref(), Some("Chutes"));
    assert_eq!(outcome.facts.usage.completion_tokens, Some(9));
}

#[tokio::test]
async fn the_dated_model_of_the_answer_is_accepted_and_kept() {
    let body = completion(text_message(), json!("stop"));
    let writes = vec![
        head("200 OK", "application/json"),
        body.to_string().into_bytes(),
    ];
    let outcome = chat(writes, false).await.unwrap();
    assert_eq!(answer(&outcome)["model"], DATED_MODEL);

    let outcome = chat(sse(&text_chunks()), true).await.unwrap();
    assert_eq!(answer(&outcome)["model"], DATED_MODEL);
}

#[tokio::test]
async fn tool_calls_are_kept_whatever_the_finish_reason() {
    for finish in [Value::Null, json!("stop")] {
        let body = completion(calls_message(), finish.clone());
        let writes = vec![
            head("200 OK", "application/json"),
            body.to_string().into_bytes(),
        ];
        let outcome = chat(writes, false).await.unwrap();
        assert_eq!(answer(&outcome), body, "unstreamed, finish {finish}");

        let outcome = chat(sse(&call_chunks(None, finish.clone())), true)
            .await
            .unwrap();
        let choice = &answer(&outcome)["choices"][0];
        assert_eq!(choice["finish_reason"], finish, "streamed");
        assert_eq!(
            choice["message"]["tool_calls"],
            json!([add_call("{\"a\": 2, \"b\": 3}")]),
            "streamed, finish {finish}"
        );
    }
}

#[tokio::test]
async fn a_trailing_space_argument_piece_is_kept_as_sent() {
    let chunks = call_chunks(Some(" "), json!("tool_calls"));
    let outcome = chat(sse(&chunks), true).await.unwrap();
    let choice = &answer(&outcome)["choices"][0];
    assert_eq!(
        choice["message"]["tool_calls"],
        json!([add_call("{\"a\": 2, \"b\": 3} ")])
    );
    assert_eq!(choice["finish_reason"], "tool_calls");
}

#[tokio::test]
async fn a_providers_429_is_rate_limited_with_the_provider_named() {
    let body = json!({"error": {"message": "Provider returned error", "code": 429,
        "metadata": {"raw": RATE_LIMITED_RAW, "provider_name": "WandB"}},
        "user_id": "user_2zLtpQz8xample"});
    for stream in [false, true] {
        let writes = vec![
            head("429 Too Many Requests", "application/json"),
            body.to_string().into_bytes(),
        ];
        let err = chat(writes, stream).await.unwrap_err();
        assert_eq!(err.class, ErrorClass::RateLimited, "stream {stream}");
        assert_eq!(err.http_status, Some(429));
        assert!(err.message.contains("[provider WandB]"), "{}", err.message);
        assert!(
            err.message.contains("is temporarily rate-limited upstream"),
            "{}",
            err.message
        );
        let kept = err.body.as_ref().unwrap();
        assert_eq!(kept, &body);
        assert_eq!(
            ResponseFacts::of_value(kept).provider.as_deref(),
            Some("WandB")
        );
    }
}

/// OpenRouter writes the 200 and its padding before the provider answers; a provider's 429 then
/// comes as the same error object in that 200. It is the same rate limit: classed so, the
/// provider named (the pacing slows down on it as on a 429 status).
#[tokio::test]
async fn a_providers_429_after_padding_in_a_200_is_rate_limited() {
    let body = json!({"error": {"message": "Provider returned error", "code": 429,
        "metadata": {"raw": RATE_LIMITED_RAW, "provider_name": "WandB"}},
        "user_id": "user_2zLtpQz8xample"});
    let writes = vec![
        head("200 OK", "application/json"),
        b"\n         \n\n".to_vec(),
        body.to_string().into_bytes(),
    ];
    let err = chat(writes, false).await.unwrap_err();
    assert_eq!(err.class, ErrorClass::RateLimited, "{}", err.message);
    assert_eq!(err.http_status, Some(200));
    assert!(err.message.contains("[provider WandB]"), "{}", err.message);
    let kept = err.body.as_ref().unwrap();
    assert_eq!(kept, &body);
    assert_eq!(
        ResponseFacts::of_value(kept).provider.as_deref(),
        Some("WandB")
    );

    // Streamed, the same object comes as the first event after the comments.
    let mut writes = vec![head("200 OK", "text/event-stream"), PROCESSING.into()];
    writes.push(format!("data: {body}\n\n").into_bytes());
    let err = chat(writes, true).await.unwrap_err();
    assert_eq!(err.class, ErrorClass::RateLimited, "{}", err.message);
    assert!(err.message.contains("[provider WandB]"), "{}", err.message);
}
