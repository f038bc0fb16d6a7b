//! The API client against scripted local servers: bodies, streaming reassembly, every error class,
//! every timeout, and the API key never leaking.
//!
//! The server is raw tokio TCP so each test controls exact bytes, write boundaries and stalls.
//! Expected completions are written out by hand in the shape the servers' API references
//! document, never produced by our own assembler.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use draftgen::api::openrouter::{self, ModelPrice, Pricing};
use draftgen::api::{ApiError, ApiKey, Client, ClientConfig, Endpoint, ErrorClass, Timeouts};
use draftgen::completion::Usage;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const KEY: &str = "sk-or-v1-FAKEKEY-0123456789abcdef";

/// One thing the scripted server does after reading a request.
#[derive(Clone)]
enum Step {
    Write(Vec<u8>),
    Sleep(Duration),
    /// Write `{authorization header value}` wherever `{AUTH}` appears in the bytes.
    WriteEchoingAuth(String),
}

fn write(s: impl Into<Vec<u8>>) -> Step {
    Step::Write(s.into())
}

fn sleep_ms(ms: u64) -> Step {
    Step::Sleep(Duration::from_millis(ms))
}

fn hang() -> Step {
    Step::Sleep(Duration::from_secs(3600))
}

struct Server {
    base_url: String,
    requests: Arc<Mutex<Vec<String>>>,
    connections: Arc<Mutex<usize>>,
    /// Connections the server has shut down (`serve_with`'s).
    closed: Arc<Mutex<usize>>,
}

/// Serve `script` to every connection; the connection closes after the last step.
async fn serve(script: Vec<Step>) -> Server {
    serve_with(script, false).await
}

/// Serve `script` to every request; with `keep_alive` a connection then waits for its next request.
async fn serve_with(script: Vec<Step>, keep_alive: bool) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let requests = Arc::new(Mutex::new(Vec::new()));
    let connections = Arc::new(Mutex::new(0));
    let closed = Arc::new(Mutex::new(0));
    let (seen, accepted, shut) = (requests.clone(), connections.clone(), closed.clone());
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            *accepted.lock().unwrap() += 1;
            let script = script.clone();
            let (seen, shut) = (seen.clone(), shut.clone());
            tokio::spawn(async move {
                while run_script(&mut socket, &script, &seen).await && keep_alive {}
                let _ = socket.shutdown().await;
                *shut.lock().unwrap() += 1;
            });
        }
    });
    Server {
        base_url: format!("http://{addr}/api/v1"),
        requests,
        connections,
        closed,
    }
}

/// Answer one request; false when the client has gone.
async fn run_script(socket: &mut TcpStream, script: &[Step], seen: &Mutex<Vec<String>>) -> bool {
    let request = read_request(socket).await;
    if request.is_empty() {
        return false;
    }
    let auth = request
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .starts_with("authorization:")
                .then(|| l["authorization:".len()..].trim().to_string())
        })
        .unwrap_or_default();
    seen.lock().unwrap().push(request);
    for step in script {
        match step {
            Step::Write(bytes) => {
                if socket.write_all(bytes).await.is_err() {
                    return false;
                }
                let _ = socket.flush().await;
            }
            Step::WriteEchoingAuth(text) => {
                let echoed = text.replace("{AUTH}", &auth);
                let _ = socket.write_all(echoed.as_bytes()).await;
            }
            Step::Sleep(d) => tokio::time::sleep(*d).await,
        }
    }
    true
}

/// Read one HTTP/1.1 request (headers + Content-Length body) as text.
async fn read_request(socket: &mut TcpStream) -> String {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    loop {
        if let Some(end) = find(&buf, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_string();
            let len = head
                .lines()
                .find_map(|l| {
                    let l = l.to_ascii_lowercase();
                    l.strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap())
                })
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                return String::from_utf8_lossy(&buf).to_string();
            }
        }
        match socket.read(&mut tmp).await {
            Ok(0) | Err(_) => return String::from_utf8_lossy(&buf).to_string(),
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A complete HTTP response with a JSON (or any) body.
fn response(status: &str, extra_headers: &str, body: &str) -> Step {
    write(format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{extra_headers}connection: close\r\n\r\n{body}",
        body.len()
    ))
}

/// Headers of a close-delimited SSE response.
fn sse_head() -> Step {
    write("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nx-generation-id: gen-sse-1\r\nconnection: close\r\n\r\n")
}

fn endpoint(server: &Server) -> Endpoint {
    Endpoint {
        name: "test".into(),
        base_url: server.base_url.clone(),
        api_key: Some(ApiKey::new(KEY)),
        weight: 1,
    }
}

fn client() -> Client {
    Client::new(ClientConfig {
        referer: Some("https://example.org/draftgen".into()),
        title: Some("draftgen tests".into()),
        ..ClientConfig::default()
    })
    .unwrap()
}

/// Generous limits: tests that expect success must not fail on a loaded machine.
fn relaxed() -> Timeouts {
    Timeouts {
        connect: Duration::from_secs(30),
        first_byte: Duration::from_secs(60),
        idle: Duration::from_secs(60),
        total: Duration::from_secs(120),
    }
}

/// The body as the engine sends it: serialized once, the same bytes for HTTP and the journal.
fn request_body(stream: bool) -> Box<serde_json::value::RawValue> {
    serde_json::value::to_raw_value(&json!({"model": "moonshotai/kimi-k2-thinking", "messages": [{"role": "user", "content": "Weather in Paris?"}], "stream": stream}))
        .expect("raw body")
}

/// An OpenRouter non-streaming answer with reasoning, reasoning_details, a tool call and usage.
fn openrouter_completion() -> Value {
    json!({
        "id": "gen-1761234567-abc",
        "provider": "Moonshot AI",
        "model": "moonshotai/kimi-k2-thinking",
        "object": "chat.completion",
        "created": 1761234567,
        "choices": [{
            "logprobs": null,
            "finish_reason": "tool_calls",
            "native_finish_reason": "tool_calls",
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Let me check.",
                "refusal": null,
                "reasoning": "The user wants weather. 天気 🌦",
                "reasoning_details": [{"type": "reasoning.text", "text": "The user wants weather. 天気 🌦", "format": "unknown", "index": 0}],
                "tool_calls": [
                    {"id": "functions.get_weather:0", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
                    {"id": "functions.get_time:1", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}
                ]
            }
        }],
        "usage": {"prompt_tokens": 41, "completion_tokens": 37, "total_tokens": 78, "cost": 0.000123,
                  "completion_tokens_details": {"reasoning_tokens": 12}}
    })
}

/// The same answer as OpenRouter streams it: role first, reasoning in pieces (with matching
/// reasoning_details), content, tool calls split across chunks, finish, then usage alone.
fn openrouter_chunks() -> Vec<Value> {
    let head = |choices: Value| {
        json!({"id": "gen-1761234567-abc", "provider": "Moonshot AI", "model": "moonshotai/kimi-k2-thinking",
               "object": "chat.completion.chunk", "created": 1761234567, "choices": choices})
    };
    let delta = |d: Value| json!([{"index": 0, "delta": d, "finish_reason": null, "native_finish_reason": null, "logprobs": null}]);
    vec![
        head(delta(
            json!({"role": "assistant", "content": "", "refusal": null, "reasoning": "The user wants ",
            "reasoning_details": [{"type": "reasoning.text", "text": "The user wants ", "format": "unknown", "index": 0}]}),
        )),
        head(delta(
            json!({"role": "assistant", "content": "", "reasoning": "weather. 天気 🌦",
            "reasoning_details": [{"type": "reasoning.text", "text": "weather. 天気 🌦", "format": "unknown", "index": 0}]}),
        )),
        head(delta(
            json!({"role": "assistant", "content": "Let me ", "reasoning": null}),
        )),
        head(delta(json!({"role": "assistant", "content": "check."}))),
        head(delta(
            json!({"role": "assistant", "content": "", "tool_calls": [
            {"index": 0, "id": "functions.get_weather:0", "type": "function", "function": {"name": "get_weather", "arguments": ""}}]}),
        )),
        head(delta(
            json!({"role": "assistant", "content": "", "tool_calls": [
            {"index": 0, "function": {"arguments": "{\"city\": "}}]}),
        )),
        head(delta(
            json!({"role": "assistant", "content": "", "tool_calls": [
            {"index": 0, "function": {"arguments": "\"Paris\"}"}},
            {"index": 1, "id": "functions.get_time:1", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]}),
        )),
        head(
            json!([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": "tool_calls",
                     "native_finish_reason": "tool_calls", "logprobs": null}]),
        ),
        json!({"id": "gen-1761234567-abc", "provider": "Moonshot AI", "model": "moonshotai/kimi-k2-thinking",
               "object": "chat.completion.chunk", "created": 1761234567, "choices": [],
               "usage": {"prompt_tokens": 41, "completion_tokens": 37, "total_tokens": 78, "cost": 0.000123,
                         "completion_tokens_details": {"reasoning_tokens": 12}}}),
    ]
}

/// SSE bytes for `chunks`, with keep-alive comments, CRLF line endings and a final `[DONE]`.
fn sse_bytes(chunks: &[Value]) -> Vec<u8> {
    let mut out = String::from(": OPENROUTER PROCESSING\r\n\r\n");
    for (i, chunk) in chunks.iter().enumerate() {
        out.push_str(&format!("data: {chunk}\r\n\r\n"));
        if i % 3 == 1 {
            out.push_str(": OPENROUTER PROCESSING\r\n\r\n");
        }
    }
    out.push_str("data: [DONE]\r\n\r\n");
    out.into_bytes()
}

/// `bytes` as writes of awkward sizes (splitting CRLFs, UTF-8 characters and JSON).
fn split_writes(bytes: &[u8]) -> Vec<Step> {
    let sizes = [1usize, 2, 3, 5, 7, 11, 13, 64, 17];
    let mut steps = Vec::new();
    let mut pos = 0;
    let mut i = 0;
    while pos < bytes.len() {
        let end = (pos + sizes[i % sizes.len()]).min(bytes.len());
        steps.push(write(bytes[pos..end].to_vec()));
        // Give the client a chance to see each piece as its own read.
        if i % 4 == 0 {
            steps.push(sleep_ms(1));
        }
        pos = end;
        i += 1;
    }
    steps
}

fn assert_no_key(err: &ApiError) {
    let debug = format!("{err:?}");
    let display = err.to_string();
    assert!(!debug.contains(KEY), "key in Debug: {debug}");
    assert!(!display.contains(KEY), "key in Display: {display}");
    assert!(!debug.contains("FAKEKEY"), "key fragment in Debug: {debug}");
}

async fn chat_err(script: Vec<Step>, timeouts: Timeouts) -> ApiError {
    let server = serve(script).await;
    let err = client()
        .chat(&endpoint(&server), &request_body(false), &timeouts)
        .await
        .unwrap_err();
    assert_no_key(&err);
    err
}

#[tokio::test]
async fn non_streaming_ok_sends_auth_and_attribution_headers() {
    let body = openrouter_completion().to_string();
    let server = serve(vec![response(
        "200 OK",
        "x-generation-id: gen-1761234567-abc\r\n",
        &body,
    )])
    .await;
    let sent = request_body(false);
    let outcome = client()
        .chat(&endpoint(&server), &sent, &relaxed())
        .await
        .unwrap();
    assert_eq!(outcome.response, openrouter_completion());
    assert_eq!(outcome.http_status, 200);
    assert_eq!(outcome.generation_id.as_deref(), Some("gen-1761234567-abc"));
    assert!(outcome.first_byte_ms.is_some());

    let requests = server.requests.lock().unwrap();
    let request = &requests[0];
    let lower = request.to_ascii_lowercase();
    assert!(
        request.starts_with("POST /api/v1/chat/completions HTTP/1.1\r\n"),
        "{request}"
    );
    assert!(
        request.contains(&format!("authorization: Bearer {KEY}\r\n")),
        "{request}"
    );
    assert!(lower.contains("http-referer: https://example.org/draftgen\r\n"));
    assert!(lower.contains("x-title: draftgen tests\r\n"));
    assert!(lower.contains("user-agent: draftgen/"));
    let (_, sent_body) = request.split_once("\r\n\r\n").unwrap();
    assert_eq!(
        sent_body,
        sent.get(),
        "the body goes out byte for byte as serialized"
    );
}

/// OpenRouter writes whitespace while the generation runs, then the JSON (its recorded
/// non-streamed bodies start `"\n         \n\n{"id":…`): the answer is the JSON that follows.
#[tokio::test]
async fn whitespace_written_before_a_non_streamed_body_is_not_the_answer() {
    let body = openrouter_completion().to_string();
    let padded = format!("\n         \n\n{body}");
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        padded.len()
    );
    let (waiting, answer) = padded.split_at(11);
    let server = serve(vec![
        write(head),
        write(waiting),
        sleep_ms(50),
        write(answer),
    ])
    .await;
    let outcome = client()
        .chat_raw(&endpoint(&server), &request_body(false), &relaxed())
        .await
        .unwrap();
    assert_eq!(outcome.response, body);
    assert_eq!(outcome.facts.provider.as_deref(), Some("Moonshot AI"));
    assert_eq!(outcome.facts.usage.completion_tokens, Some(37));
}

/// The non-streaming body as a stream assembles it: each call keeps the `index` its chunks
/// carried (the audit reads a call's index), which a non-streamed body has not.
fn streamed_completion() -> Value {
    let mut body = openrouter_completion();
    if let Some(calls) = body["choices"][0]["message"]["tool_calls"].as_array_mut() {
        for (i, call) in calls.iter_mut().enumerate() {
            let mut with_index = serde_json::Map::new();
            with_index.insert("index".into(), i.into());
            with_index.extend(call.as_object().cloned().unwrap_or_default());
            *call = Value::Object(with_index);
        }
    }
    body
}

#[tokio::test]
async fn streaming_reassembly_equals_the_non_streaming_body() {
    let mut script = vec![sse_head()];
    script.extend(split_writes(&sse_bytes(&openrouter_chunks())));
    let server = serve(script).await;
    let outcome = client()
        .chat(&endpoint(&server), &request_body(true), &relaxed())
        .await
        .unwrap();
    assert_eq!(outcome.response, streamed_completion());
    assert_eq!(outcome.generation_id.as_deref(), Some("gen-sse-1"));
}

#[tokio::test]
async fn chunked_transfer_encoding_stream_is_decoded_too() {
    let payload = sse_bytes(&openrouter_chunks());
    let mut raw = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ntransfer-encoding: chunked\r\n\r\n".to_vec();
    for piece in payload.chunks(97) {
        raw.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        raw.extend_from_slice(piece);
        raw.extend_from_slice(b"\r\n");
    }
    raw.extend_from_slice(b"0\r\n\r\n");
    let server = serve(vec![write(raw)]).await;
    let outcome = client()
        .chat(&endpoint(&server), &request_body(true), &relaxed())
        .await
        .unwrap();
    assert_eq!(outcome.response, streamed_completion());
}

/// A finished exchange leaves its connection in the keep-alive pool, streamed or not.
#[tokio::test]
async fn connections_are_reused_after_complete_answers() {
    let payload = sse_bytes(&openrouter_chunks());
    let mut raw =
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            .to_vec();
    raw.extend_from_slice(format!("{:x}\r\n", payload.len()).as_bytes());
    raw.extend_from_slice(&payload);
    raw.extend_from_slice(b"\r\n0\r\n\r\n");
    let server = serve_with(vec![write(raw)], true).await;
    let client = client();
    for _ in 0..3 {
        let outcome = client
            .chat(&endpoint(&server), &request_body(true), &relaxed())
            .await
            .unwrap();
        assert_eq!(outcome.response, streamed_completion());
    }
    assert_eq!(*server.connections.lock().unwrap(), 1);

    let body = openrouter_completion().to_string();
    let keep = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let server = serve_with(vec![write(keep)], true).await;
    for _ in 0..3 {
        client
            .chat(&endpoint(&server), &request_body(false), &relaxed())
            .await
            .unwrap();
    }
    assert_eq!(*server.connections.lock().unwrap(), 1);
}

/// A body cut inside an HTTP chunk is a broken connection (Network), partial answer kept.
#[tokio::test]
async fn stream_cut_mid_chunk_is_a_network_error() {
    let first = format!("data: {}\n\n", openrouter_chunks()[0]);
    let raw = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{first}\r\n400\r\ndata: {{\"id\"",
        first.len()
    );
    let err = chat_err(vec![write(raw)], relaxed()).await;
    assert_eq!(err.class, ErrorClass::Network, "{err}");
    assert_eq!(
        err.body.unwrap()["choices"][0]["message"]["reasoning"],
        "The user wants "
    );
}

/// vLLM with `return_token_ids`: ids arrive per chunk, the prompt ids once; `reasoning_content`
/// (older vLLM) keeps its name.
#[tokio::test]
async fn vllm_stream_keeps_token_ids_and_reasoning_content() {
    let chunk = |extra: Value| {
        let mut c = json!({"id": "chatcmpl-9", "object": "chat.completion.chunk", "created": 5, "model": "kimi"});
        for (k, v) in extra.as_object().unwrap() {
            c[k] = v.clone();
        }
        c
    };
    let chunks = vec![
        chunk(
            json!({"prompt_token_ids": [163587, 1008, 163601], "choices": [{"index": 0,
            "delta": {"role": "assistant", "content": ""}, "logprobs": null, "finish_reason": null}]}),
        ),
        chunk(
            json!({"choices": [{"index": 0, "delta": {"reasoning_content": "hm"}, "token_ids": [71, 72],
            "logprobs": null, "finish_reason": null}]}),
        ),
        chunk(
            json!({"choices": [{"index": 0, "delta": {"content": "Four."}, "token_ids": [42629, 13],
            "logprobs": null, "finish_reason": null}]}),
        ),
        chunk(
            json!({"choices": [{"index": 0, "delta": {"content": ""}, "token_ids": [163586],
            "logprobs": null, "finish_reason": "stop", "stop_reason": null}]}),
        ),
        chunk(
            json!({"choices": [], "usage": {"prompt_tokens": 3, "total_tokens": 8, "completion_tokens": 5}}),
        ),
    ];
    // The non-streaming answer vLLM documents for the same request.
    let expected = json!({
        "id": "chatcmpl-9", "object": "chat.completion", "created": 5, "model": "kimi",
        "choices": [{"index": 0,
            "message": {"role": "assistant", "content": "Four.", "reasoning_content": "hm"},
            "logprobs": null, "finish_reason": "stop", "stop_reason": null,
            "token_ids": [71, 72, 42629, 13, 163586]}],
        "usage": {"prompt_tokens": 3, "total_tokens": 8, "completion_tokens": 5},
        "prompt_token_ids": [163587, 1008, 163601]
    });
    let mut bytes = Vec::new();
    for c in &chunks {
        bytes.extend_from_slice(format!("data: {c}\n\n").as_bytes());
    }
    bytes.extend_from_slice(b"data: [DONE]\n\n");
    let server = serve(vec![sse_head(), write(bytes)]).await;
    let outcome = client()
        .chat(&endpoint(&server), &request_body(true), &relaxed())
        .await
        .unwrap();
    assert_eq!(outcome.response, expected);
}

#[tokio::test]
async fn http_statuses_are_classified_with_the_servers_message() {
    for (status, class) in [
        ("400 Bad Request", ErrorClass::BadRequest),
        ("401 Unauthorized", ErrorClass::Unauthorized),
        ("402 Payment Required", ErrorClass::PaymentRequired),
        ("403 Forbidden", ErrorClass::Forbidden),
        ("404 Not Found", ErrorClass::ClientError),
        ("408 Request Timeout", ErrorClass::Timeout),
        ("500 Internal Server Error", ErrorClass::ServerError),
        ("502 Bad Gateway", ErrorClass::ServerError),
        ("503 Service Unavailable", ErrorClass::ServerError),
    ] {
        let code: u16 = status[..3].parse().unwrap();
        let body = json!({"error": {"code": code, "message": format!("server says {code}"),
            "metadata": {"provider_name": "Chutes", "raw": "upstream detail"}}});
        let err = chat_err(vec![response(status, "", &body.to_string())], relaxed()).await;
        assert_eq!(err.class, class, "{status}");
        assert_eq!(err.http_status, Some(code));
        assert!(
            err.message.contains(&format!("server says {code}")),
            "{}",
            err.message
        );
        assert!(err.message.contains("Chutes") && err.message.contains("upstream detail"));
        assert_eq!(err.body, Some(body));
    }
}

#[tokio::test]
async fn rate_limits_carry_retry_after_seconds_or_date() {
    let body = r#"{"error":{"code":429,"message":"Rate limit exceeded"}}"#;
    let err = chat_err(
        vec![response(
            "429 Too Many Requests",
            "retry-after: 17\r\n",
            body,
        )],
        relaxed(),
    )
    .await;
    assert_eq!(err.class, ErrorClass::RateLimited);
    assert_eq!(err.retry_after, Some(Duration::from_secs(17)));

    let at = std::time::SystemTime::now() + Duration::from_secs(3600);
    let header = format!("retry-after: {}\r\n", httpdate::fmt_http_date(at));
    let err = chat_err(
        vec![response("429 Too Many Requests", &header, body)],
        relaxed(),
    )
    .await;
    assert_eq!(err.class, ErrorClass::RateLimited);
    let wait = err.retry_after.unwrap();
    assert!(
        wait > Duration::from_secs(3000) && wait <= Duration::from_secs(3600),
        "{wait:?}"
    );

    let err = chat_err(
        vec![response(
            "503 Service Unavailable",
            "retry-after: 2\r\n",
            "no provider",
        )],
        relaxed(),
    )
    .await;
    assert_eq!(err.class, ErrorClass::ServerError);
    assert_eq!(err.retry_after, Some(Duration::from_secs(2)));
    assert_eq!(err.message, "HTTP 503: no provider");
}

#[tokio::test]
async fn failures_inside_a_200_are_classified() {
    let in200 = json!({"error": {"code": 502, "message": "Provider returned error"}});
    let err = chat_err(vec![response("200 OK", "", &in200.to_string())], relaxed()).await;
    assert_eq!(err.class, ErrorClass::ErrorIn200);
    assert!(err.message.contains("Provider returned error"));

    let empty = json!({"id": "g", "choices": [{"index": 0, "message": {"role": "assistant", "content": "", "reasoning": null}, "finish_reason": "stop"}]});
    let err = chat_err(vec![response("200 OK", "", &empty.to_string())], relaxed()).await;
    assert_eq!(err.class, ErrorClass::EmptyAnswer);
    assert_eq!(err.body, Some(empty));

    let err = chat_err(
        vec![response("200 OK", "", "{\"id\": \"g\", \"choi")],
        relaxed(),
    )
    .await;
    assert_eq!(err.class, ErrorClass::Malformed);
    assert!(err.message.contains("not JSON"));
}

#[tokio::test]
async fn mid_stream_error_chunk_keeps_the_partial_answer() {
    let chunks = [
        json!({"id": "g", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Half an ans"}, "finish_reason": null}]}),
        json!({"id": "g", "object": "chat.completion.chunk", "provider": "openai",
               "error": {"code": "server_error", "message": "Provider disconnected unexpectedly"},
               "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]}),
    ];
    let mut bytes = String::new();
    for c in &chunks {
        bytes.push_str(&format!("data: {c}\n\n"));
    }
    let server = serve(vec![sse_head(), write(bytes)]).await;
    let err = client()
        .chat(&endpoint(&server), &request_body(true), &relaxed())
        .await
        .unwrap_err();
    assert_eq!(err.class, ErrorClass::MidStream);
    assert_eq!(err.http_status, Some(200));
    assert!(
        err.message.contains("Provider disconnected unexpectedly"),
        "{}",
        err.message
    );
    assert_eq!(
        err.body.unwrap()["choices"][0]["message"]["content"],
        "Half an ans"
    );

    // finish_reason "error" without an error object.
    let chunk = json!({"id": "g", "choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": "error"}]});
    let server = serve(vec![
        sse_head(),
        write(format!("data: {chunk}\n\ndata: [DONE]\n\n")),
    ])
    .await;
    let err = client()
        .chat(&endpoint(&server), &request_body(true), &relaxed())
        .await
        .unwrap_err();
    assert_eq!(err.class, ErrorClass::MidStream);
}

#[tokio::test]
async fn truncated_or_garbled_streams_are_malformed() {
    // Closed after two chunks: no [DONE], no finish_reason.
    let chunks = &openrouter_chunks()[..2];
    let mut bytes = String::new();
    for c in chunks {
        bytes.push_str(&format!("data: {c}\n\n"));
    }
    let server = serve(vec![sse_head(), write(bytes)]).await;
    let err = client()
        .chat(&endpoint(&server), &request_body(true), &relaxed())
        .await
        .unwrap_err();
    assert_eq!(err.class, ErrorClass::Malformed);
    assert!(err.message.contains("truncated"), "{}", err.message);
    assert_eq!(
        err.body.unwrap()["choices"][0]["message"]["reasoning"],
        "The user wants weather. 天気 🌦"
    );

    let server = serve(vec![sse_head(), write("data: {\"id\": nope}\n\n")]).await;
    let err = client()
        .chat(&endpoint(&server), &request_body(true), &relaxed())
        .await
        .unwrap_err();
    assert_eq!(err.class, ErrorClass::Malformed);

    let server = serve(vec![sse_head(), write(": only a comment\n\n")]).await;
    let err = client()
        .chat(&endpoint(&server), &request_body(true), &relaxed())
        .await
        .unwrap_err();
    assert_eq!(err.class, ErrorClass::Malformed);
}

#[tokio::test]
async fn connect_refused_is_a_network_error() {
    // A port held closed for the test.
    let refused = common::servers::refused_port();
    let port = refused.port;
    let endpoint = Endpoint {
        name: "closed".into(),
        base_url: format!("http://127.0.0.1:{port}/v1"),
        api_key: Some(ApiKey::new(KEY)),
        weight: 1,
    };
    let err = client()
        .chat(&endpoint, &request_body(false), &relaxed())
        .await
        .unwrap_err();
    assert_eq!(err.class, ErrorClass::Network, "{err}");
    assert_no_key(&err);
}

fn tight(first_byte_ms: u64, idle_ms: u64, total_ms: u64) -> Timeouts {
    Timeouts {
        connect: Duration::from_millis(0),
        first_byte: Duration::from_millis(first_byte_ms),
        idle: Duration::from_millis(idle_ms),
        total: Duration::from_millis(total_ms),
    }
}

#[tokio::test]
async fn server_that_never_sends_headers_times_out_at_first_byte() {
    let err = chat_err(vec![hang()], tight(300, 60_000, 120_000)).await;
    assert_eq!(err.class, ErrorClass::Timeout);
    assert!(
        err.message.contains("no response headers"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn stream_of_only_keep_alives_times_out_at_first_byte() {
    let mut script = vec![sse_head()];
    for _ in 0..100 {
        script.push(write(": OPENROUTER PROCESSING\n\n"));
        script.push(sleep_ms(50));
    }
    script.push(hang());
    // Long enough that the headers (written at once) arrive within it on a loaded machine:
    // the timeout under test is the one for stream data, which keep-alives do not satisfy.
    let err = chat_err(script, tight(2_000, 60_000, 120_000)).await;
    assert_eq!(err.class, ErrorClass::Timeout);
    assert!(err.message.contains("no stream data"), "{}", err.message);
}

#[tokio::test]
async fn stalled_stream_times_out_idle_with_the_partial_answer() {
    let first = &openrouter_chunks()[0];
    let script = vec![sse_head(), write(format!("data: {first}\n\n")), hang()];
    let err = chat_err(script, tight(60_000, 300, 120_000)).await;
    assert_eq!(err.class, ErrorClass::Timeout);
    assert!(err.message.contains("idle timeout"), "{}", err.message);
    assert_eq!(
        err.body.unwrap()["choices"][0]["message"]["reasoning"],
        "The user wants "
    );
}

#[tokio::test]
async fn endless_stream_hits_the_total_timeout() {
    let chunk = json!({"id": "g", "choices": [{"index": 0, "delta": {"content": "."}, "finish_reason": null}]});
    let mut script = vec![sse_head()];
    for _ in 0..2000 {
        script.push(write(format!("data: {chunk}\n\n")));
        script.push(sleep_ms(20));
    }
    let err = chat_err(script, tight(60_000, 60_000, 500)).await;
    assert_eq!(err.class, ErrorClass::Timeout);
    assert!(err.message.contains("total timeout"), "{}", err.message);
}

#[tokio::test]
async fn non_streamed_body_that_stalls_times_out_idle() {
    let script = vec![
        write("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{\"id\":"),
        hang(),
    ];
    let err = chat_err(script, tight(60_000, 300, 120_000)).await;
    assert_eq!(err.class, ErrorClass::Timeout);
    assert!(err.message.contains("idle timeout"), "{}", err.message);
}

/// Servers that echo the key back (in JSON, in plain text, in a 200 error, mid-stream) must not
/// get it into any error message, body or Debug output.
#[tokio::test]
async fn the_api_key_never_appears_in_errors_even_when_echoed() {
    let json_401 =
        r#"{"error":{"code":401,"message":"Invalid key: {AUTH}","metadata":{"raw":"{AUTH}"}}}"#;
    let scripts: Vec<Vec<Step>> = vec![
        vec![
            write("HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n"),
            Step::WriteEchoingAuth(json_401.into()),
        ],
        vec![
            write("HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n"),
            Step::WriteEchoingAuth("you sent {AUTH}".into()),
        ],
        vec![
            write("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n"),
            Step::WriteEchoingAuth(r#"{"error":{"message":"bad {AUTH}"}}"#.into()),
        ],
        vec![
            write("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n"),
            Step::WriteEchoingAuth("not json {AUTH}".into()),
        ],
        vec![
            sse_head(),
            Step::WriteEchoingAuth("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"{AUTH}\"}}]}\n\ndata: {\"error\":{\"message\":\"{AUTH}\"}}\n\n".into()),
        ],
        vec![sse_head(), Step::WriteEchoingAuth("data: {AUTH}\n\n".into())],
    ];
    for script in scripts {
        let server = serve(script).await;
        for body in [request_body(false), request_body(true)] {
            let err = client()
                .chat(&endpoint(&server), &body, &relaxed())
                .await
                .unwrap_err();
            assert_no_key(&err);
            assert!(
                format!("{err:?}").contains("[REDACTED]"),
                "the echo was there and was scrubbed: {err:?}"
            );
        }
    }
    // Endpoint and client Debug output hide it too.
    let server = serve(vec![]).await;
    let debug = format!("{:?} {:?}", endpoint(&server), client());
    assert!(!debug.contains(KEY), "{debug}");
}

#[tokio::test]
async fn openrouter_key_info_and_credits() {
    let key_body = json!({"data": {"label": "sk-or-v1-abc...def", "limit": 100.0, "limit_remaining": 74.5,
        "limit_reset": "monthly", "include_byok_in_limit": false, "usage": 25.5, "usage_daily": 1.5,
        "usage_weekly": 5.0, "usage_monthly": 25.5, "is_free_tier": false}});
    let server = serve(vec![response("200 OK", "", &key_body.to_string())]).await;
    let info = openrouter::key_info(&client(), &endpoint(&server), Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(info.limit, Some(100.0));
    assert_eq!(info.limit_remaining, Some(74.5));
    assert_eq!(info.usage, Some(25.5));
    assert_eq!(info.is_free_tier, Some(false));
    assert_eq!(info.label.as_deref(), Some("sk-or-v1-abc...def"));
    assert!(server.requests.lock().unwrap()[0].starts_with("GET /api/v1/key HTTP/1.1"));

    let credits = json!({"data": {"total_credits": 50.0, "total_usage": 12.25}});
    let server = serve(vec![response("200 OK", "", &credits.to_string())]).await;
    let credits = openrouter::credits(&client(), &endpoint(&server), Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(credits.total_credits, 50.0);
    assert_eq!(credits.remaining(), 37.75);

    let server = serve(vec![response(
        "401 Unauthorized",
        "",
        r#"{"error":{"code":401,"message":"No auth credentials found"}}"#,
    )])
    .await;
    let err = openrouter::key_info(&client(), &endpoint(&server), Duration::from_secs(30))
        .await
        .unwrap_err();
    assert_eq!(err.class, ErrorClass::Unauthorized);
    assert_no_key(&err);
}

#[test]
fn price_table_costs_usage_when_the_server_gives_no_cost() {
    let pricing: Pricing = toml::from_str(
        r#"
        "moonshotai/kimi-k2-thinking" = { prompt = 0.6, completion = 2.5 }
        "#,
    )
    .unwrap();
    let usage = Usage {
        prompt_tokens: Some(1_000_000),
        completion_tokens: Some(200_000),
        reasoning_tokens: None,
        cost: None,
    };
    let price = pricing
        .price_for("moonshotai/kimi-k2-thinking:exacto")
        .unwrap();
    assert_eq!(
        *price,
        ModelPrice {
            prompt: 0.6,
            completion: 2.5
        }
    );
    let cost = openrouter::cost_of(&usage, price).unwrap();
    assert!((cost - 1.1).abs() < 1e-12, "{cost}");
    // A reported cost wins over the table.
    let billed = Usage {
        cost: Some(0.5),
        ..usage.clone()
    };
    assert_eq!(
        pricing.cost("moonshotai/kimi-k2-thinking", &billed),
        Some(0.5)
    );
    assert_eq!(pricing.cost("unknown/model", &usage), None);
}

/// Serve each connection: answer its first request (kept alive), then read its second request
/// and close without a byte — a server that dropped a reused connection while the request was
/// already on its way (it may have processed it: for a paid API, a billed generation).
async fn serve_then_drop_the_reused_request() -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let requests = Arc::new(Mutex::new(Vec::new()));
    let connections = Arc::new(Mutex::new(0));
    let (seen, accepted) = (requests.clone(), connections.clone());
    let body = openrouter_completion().to_string();
    let answer = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            *accepted.lock().unwrap() += 1;
            let (seen, answer) = (seen.clone(), answer.clone());
            tokio::spawn(async move {
                if !run_script(&mut socket, &[write(answer)], &seen).await {
                    return;
                }
                let second = read_request(&mut socket).await;
                if !second.is_empty() {
                    seen.lock().unwrap().push(second);
                }
                drop(socket);
            });
        }
    });
    Server {
        base_url: format!("http://{addr}/api/v1"),
        requests,
        connections,
        closed: Arc::new(Mutex::new(0)),
    }
}

/// A request written to a reused connection that then closes without an answer is an error of a
/// transient class (the engine journals the attempt and its retry policy decides), never sent
/// again behind the caller's back: the server saw exactly one request per call.
#[tokio::test]
async fn a_request_the_server_may_have_read_is_never_resent_silently() {
    let server = serve_then_drop_the_reused_request().await;
    let client = client();
    client
        .chat(&endpoint(&server), &request_body(false), &relaxed())
        .await
        .unwrap();
    let err = client
        .chat(&endpoint(&server), &request_body(false), &relaxed())
        .await
        .unwrap_err();
    assert_eq!(err.class, ErrorClass::Network, "{err}");
    assert!(err.class.is_transient());
    assert!(
        err.message.contains("may have processed"),
        "{}",
        err.message
    );
    assert_no_key(&err);
    assert_eq!(server.requests.lock().unwrap().len(), 2, "no silent resend");
    // The next call opens a new connection.
    client
        .chat(&endpoint(&server), &request_body(false), &relaxed())
        .await
        .unwrap();
    assert_eq!(server.requests.lock().unwrap().len(), 3);
    assert_eq!(*server.connections.lock().unwrap(), 2);
}

/// A pooled connection the server closed while it sat idle is seen closed before anything is
/// written: the request goes out on a new connection, once.
#[tokio::test]
async fn a_pooled_connection_closed_while_idle_is_replaced_before_writing() {
    let body = openrouter_completion().to_string();
    // Kept alive by its headers, closed by the server right after the answer.
    let answer = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let server = serve_with(vec![write(answer)], false).await;
    let client = client();
    for calls in 1..=3 {
        client
            .chat(&endpoint(&server), &request_body(false), &relaxed())
            .await
            .unwrap();
        // The server has closed the connection before the next call takes it (an event, not a
        // pause: a loaded machine may run the server's close late).
        let closed = async {
            while *server.closed.lock().unwrap() < calls {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(60), closed)
            .await
            .expect("the server closes the connection after its answer");
        assert_eq!(server.requests.lock().unwrap().len(), calls);
    }
    assert_eq!(*server.connections.lock().unwrap(), 3);
}

/// A 3xx is not followed; its error names the `Location` to use as the base URL.
#[tokio::test]
async fn a_redirect_is_an_error_naming_the_base_url_to_use() {
    let err = chat_err(
        vec![response(
            "301 Moved Permanently",
            "location: https://new.example/api/v1/chat/completions\r\n",
            "",
        )],
        relaxed(),
    )
    .await;
    assert_eq!(err.class, ErrorClass::ClientError, "{err}");
    assert!(!err.class.is_transient());
    assert_eq!(err.http_status, Some(301));
    assert!(
        err.message
            .contains("use --base-url https://new.example/api/v1"),
        "{}",
        err.message
    );
}

/// The first-byte timeout runs from the request being written, not from the start of the
/// attempt plus the connect timeout: with an hour of connect timeout, a server that never
/// answers still times out at the first-byte limit.
#[tokio::test]
async fn the_first_byte_timeout_does_not_add_the_connect_timeout() {
    let timeouts = Timeouts {
        connect: Duration::from_secs(3600),
        ..tight(300, 60_000, 7_200_000)
    };
    let err = tokio::time::timeout(Duration::from_secs(60), chat_err(vec![hang()], timeouts))
        .await
        .expect("waited for connect + first byte");
    assert_eq!(err.class, ErrorClass::Timeout);
    assert!(
        err.message.contains("after the request was sent"),
        "{}",
        err.message
    );
}
