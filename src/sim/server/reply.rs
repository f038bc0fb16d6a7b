//! A [`Turn`] as an HTTP response: the flavour's JSON body or its SSE events, paced by the
//! simulated latency, and broken the way the attempt's fault says (an error in a 200, a
//! mid-stream error chunk, invalid JSON, a dropped connection, a hang).

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::{stream, StreamExt};
use serde_json::json;

use super::Shared;
use crate::sim::faults::FaultKind;
use crate::sim::flavor::{self, Event, Turn};

/// Before dropping a connection on purpose, long enough for what was written to be flushed.
const FLUSH_PAUSE: Duration = Duration::from_millis(20);

fn json_bytes_response(status: StatusCode, body: Body, generation_id: &str) -> Response {
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Ok(id) = HeaderValue::from_str(generation_id) {
        headers.insert("x-generation-id", id);
    }
    response
}

/// The non-streamed answer, or what `fault` makes of it.
pub(super) fn plain_response(turn: &Turn, fault: Option<FaultKind>) -> Response {
    match fault {
        Some(FaultKind::ErrorIn200) => {
            let body = json!({"error": {
                "code": 502,
                "message": "Upstream error from provider: simulated failure",
                "metadata": {"provider_name": turn.provider, "raw": "upstream connection reset"},
            }});
            json_bytes_response(StatusCode::OK, Body::from(body.to_string()), &turn.id)
        }
        Some(FaultKind::MidStream) => {
            // Non-streaming view of a generation that failed after its first tokens.
            let mut body = flavor::response(turn);
            body["error"] =
                json!({"code": "server_error", "message": "Provider disconnected unexpectedly"});
            body["choices"][0]["finish_reason"] = json!("error");
            json_bytes_response(StatusCode::OK, Body::from(body.to_string()), &turn.id)
        }
        Some(FaultKind::Malformed) => {
            let text = flavor::response(turn).to_string();
            let cut = &text.as_bytes()[..text.len() / 2];
            let mut broken = cut.to_vec();
            broken.extend_from_slice(b"<!-- upstream -->");
            json_bytes_response(StatusCode::OK, Body::from(broken), &turn.id)
        }
        Some(FaultKind::Truncated) => {
            let text = flavor::response(turn).to_string();
            let half = Bytes::copy_from_slice(&text.as_bytes()[..text.len() / 2]);
            // A body stream that errors makes hyper drop the connection mid-body; the pause
            // lets the status line and the first half reach the client first.
            let parts = stream::iter([Some(half), None]).then(|part| async move {
                match part {
                    Some(bytes) => Ok(bytes),
                    None => {
                        tokio::time::sleep(FLUSH_PAUSE).await;
                        Err(std::io::Error::other("simulated truncation"))
                    }
                }
            });
            json_bytes_response(StatusCode::OK, Body::from_stream(parts), &turn.id)
        }
        _ => {
            let body = flavor::response(turn).to_string();
            json_bytes_response(StatusCode::OK, Body::from(body), &turn.id)
        }
    }
}

/// How a stream ends early, if it does.
#[derive(Clone, Copy, PartialEq)]
enum StreamEnd {
    Complete,
    ErrorChunk,
    Malformed,
    Drop,
    HangThenDrop,
}

impl StreamEnd {
    fn of(fault: Option<FaultKind>) -> StreamEnd {
        match fault {
            Some(FaultKind::MidStream) => StreamEnd::ErrorChunk,
            Some(FaultKind::Malformed) => StreamEnd::Malformed,
            Some(FaultKind::Truncated) => StreamEnd::Drop,
            Some(FaultKind::Hang) => StreamEnd::HangThenDrop,
            _ => StreamEnd::Complete,
        }
    }
}

/// The streamed answer, or what `fault` makes of it, `latency` before its first frame.
pub(super) fn stream_response(
    shared: Arc<Shared>,
    turn: &Turn,
    fault: Option<FaultKind>,
    latency: Duration,
) -> Response {
    let end = StreamEnd::of(fault);
    let events = faulted_events(turn, fault, end);
    let body = paced_body(shared, &events, end, turn.completion_tokens, latency);
    let mut response = (StatusCode::OK, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(id) = HeaderValue::from_str(&turn.id) {
        headers.insert("x-generation-id", id);
    }
    response
}

/// The flavour's events, cut after half of their data where the stream ends early, then what
/// the fault sends in place of the rest.
fn faulted_events(turn: &Turn, fault: Option<FaultKind>, end: StreamEnd) -> Vec<Event> {
    if fault == Some(FaultKind::ErrorIn200) {
        return vec![Event::Data(json!({"error": {
            "code": 502,
            "message": "Upstream error from provider: simulated failure",
            "metadata": {"provider_name": turn.provider},
        }}))];
    }
    let mut events = flavor::events(turn);
    if end != StreamEnd::Complete {
        let data_events = events
            .iter()
            .filter(|e| matches!(e, Event::Data(_)))
            .count();
        let keep_data = (data_events / 2).max(1);
        let mut seen = 0;
        events.retain(|e| {
            if matches!(e, Event::Data(_)) {
                seen += 1;
                seen <= keep_data
            } else {
                !matches!(e, Event::Done) && seen < keep_data
            }
        });
    }
    match end {
        StreamEnd::ErrorChunk => events.push(Event::Data(flavor::midstream_error(turn))),
        StreamEnd::Malformed => {
            events.push(Event::Comment(
                "next event is deliberately not JSON (simulated fault)",
            ));
        }
        _ => {}
    }
    events
}

/// The events as SSE frames, the per-token time spread evenly between them and the rest of
/// `latency` before the first, then the stream's end: a frame that is not JSON, a dropped
/// connection, or a hang (cut at shutdown) before the drop.
fn paced_body(
    shared: Arc<Shared>,
    events: &[Event],
    end: StreamEnd,
    completion_tokens: usize,
    latency: Duration,
) -> Body {
    let pause = if events.is_empty() {
        Duration::ZERO
    } else {
        shared.config.latency.per_token * completion_tokens as u32 / events.len() as u32
    };
    let first = latency.saturating_sub(pause * events.len() as u32);
    let frames: Vec<Bytes> = events
        .iter()
        .map(|e| Bytes::from(e.to_sse()))
        .chain((end == StreamEnd::Malformed).then(|| {
            Bytes::from_static(b"data: {\"id\":\"gen-broken\",\"choices\":[{\"delta\":{\"content\":\"unterminated\n\n")
        }))
        .collect();
    let body = stream::unfold(
        (frames.into_iter(), true, shared, end),
        move |(mut frames, is_first, shared, end)| async move {
            let wait = if is_first { first } else { pause };
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            match frames.next() {
                Some(frame) => Some((Ok(frame), (frames, false, shared, end))),
                None => match end {
                    StreamEnd::Drop => {
                        tokio::time::sleep(FLUSH_PAUSE).await;
                        Some((
                            Err(std::io::Error::other("simulated truncation")),
                            (frames, false, shared, StreamEnd::Complete),
                        ))
                    }
                    StreamEnd::HangThenDrop => {
                        shared.hang().await;
                        Some((
                            Err(std::io::Error::other("simulated hang")),
                            (frames, false, shared, StreamEnd::Complete),
                        ))
                    }
                    _ => None,
                },
            }
        },
    );
    Body::from_stream(body)
}
