//! Peak memory of requests in flight whose answers are hostile (BENCHMARKS.md, "Bounded answers").
//!
//! `cargo run --release --example answer_memory -- SHAPE IN_FLIGHT [MAX_ANSWER_MB]`: a loopback
//! server in this process answers every request with SHAPE, its body generated piece by piece
//! (the server holds none of it); IN_FLIGHT requests go out at once through one client whose
//! answer limit is MAX_ANSWER_MB (default 32); the peak resident memory (`VmHWM`) above what the
//! process held before the requests is printed, in total and per request. Shapes:
//! `body256` (a 256 MB JSON body), `line64` (an SSE stream whose one line is 64 MB), `numbers`
//! (a JSON array of zeros just under the limit: the largest tree a body within the limit makes;
//! `error_numbers` the same as an HTTP 500's body),
//! `chunks` (an SSE stream of 64 KB content chunks, 256 MB in all).

use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::header::CONTENT_TYPE;
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use draftgen::api::{Client, ClientConfig, Endpoint, Timeouts};
use futures_util::stream;

const PIECE: usize = 64 << 10;

fn kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// A body of `head`, `total` bytes of `fill`, then `tail`, produced in 64 KB pieces.
fn generated(head: &'static str, fill: u8, total: usize, tail: &'static str) -> Body {
    let piece = Bytes::from(vec![fill; PIECE]);
    let pieces = total / PIECE;
    let parts = std::iter::once(Bytes::from_static(head.as_bytes()))
        .chain(std::iter::repeat_n(piece, pieces))
        .chain(std::iter::once(Bytes::from_static(tail.as_bytes())))
        .map(Ok::<_, std::io::Error>);
    Body::from_stream(stream::iter(parts))
}

async fn chat(shape: &'static str, limit: usize) -> Response {
    let json = |body| {
        Response::builder()
            .header(CONTENT_TYPE, "application/json")
            .body(body)
            .unwrap()
    };
    let sse = |body| {
        Response::builder()
            .header(CONTENT_TYPE, "text/event-stream")
            .body(body)
            .unwrap()
    };
    match shape {
        "body256" => json(generated(
            r#"{"choices":[{"message":{"content":""#,
            b'x',
            256 << 20,
            r#""},"finish_reason":"stop"}]}"#,
        )),
        "line64" => sse(generated(
            r#"data: {"choices":[{"delta":{"content":""#,
            b'x',
            64 << 20,
            "\"}}]}\n\ndata: [DONE]\n\n",
        )),
        // "0," repeated: a tree of one `Value` per two bytes.
        "numbers" => json(numbers(limit)),
        "error_numbers" => {
            let mut response = json(numbers(limit));
            *response.status_mut() = axum::http::StatusCode::INTERNAL_SERVER_ERROR;
            response
        }
        "chunks" => {
            let event = Bytes::from(format!(
                "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{}\"}}}}]}}\n\n",
                "x".repeat(PIECE)
            ));
            let parts = std::iter::repeat_n(event, 4096)
                .chain(std::iter::once(Bytes::from_static(b"data: [DONE]\n\n")))
                .map(Ok::<_, std::io::Error>);
            sse(Body::from_stream(stream::iter(parts)))
        }
        other => panic!("unknown shape {other}"),
    }
}

/// `[0,0,…,0]` just under `limit` bytes.
fn numbers(limit: usize) -> Body {
    let piece = Bytes::from("0,".repeat(PIECE / 2));
    let pieces = limit.saturating_sub(PIECE) / PIECE;
    let parts = std::iter::once(Bytes::from_static(b"["))
        .chain(std::iter::repeat_n(piece, pieces))
        .chain(std::iter::once(Bytes::from_static(b"0]")))
        .map(Ok::<_, std::io::Error>);
    Body::from_stream(stream::iter(parts))
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let shape: &'static str = args.get(1).cloned().unwrap_or("body256".into()).leak();
    let in_flight: usize = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(1);
    let limit_mb: usize = args.get(3).and_then(|n| n.parse().ok()).unwrap_or(32);
    let limit = limit_mb << 20;
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move || async move { chat(shape, limit).await }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let client = Client::new(ClientConfig {
        max_answer_bytes: limit,
        ..ClientConfig::default()
    })
    .unwrap();
    let endpoint = Endpoint {
        name: "hostile".into(),
        base_url: format!("http://{addr}/v1"),
        api_key: None,
        weight: 1,
    };
    let timeouts = Timeouts {
        connect: Duration::from_secs(10),
        first_byte: Duration::from_secs(60),
        idle: Duration::from_secs(60),
        total: Duration::from_secs(600),
    };
    let body = serde_json::value::to_raw_value(&serde_json::json!({"model": "m",
        "messages": [{"role": "user", "content": "hi"}]}))
    .unwrap();
    let before = kib("VmRSS:");
    let start = Instant::now();
    let requests = (0..in_flight).map(|_| client.chat_raw(&endpoint, &body, &timeouts));
    let results = futures_util::future::join_all(requests).await;
    let peak = kib("VmHWM:");
    let outcome = match &results[0] {
        Ok(_) => "success".to_string(),
        Err(e) => format!("{:?}: {}", e.class, e.message),
    };
    let above = peak.saturating_sub(before);
    println!(
        "{shape} x{in_flight} limit {limit_mb} MB: {outcome}; peak {:.1} MB above start \
         ({:.1} MB per request), {:.1} s",
        above as f64 / 1024.0,
        above as f64 / 1024.0 / in_flight as f64,
        start.elapsed().as_secs_f64()
    );
}
