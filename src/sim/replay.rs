//! `sim --replay FILE`: answer chat completions with responses recorded from a real server's own
//! code (`tests/data/server_shapes/*.jsonl`, format in `tests/data/README.md`) instead of
//! writing them, so `generate` → `build` can be run end to end against answers nobody here wrote.
//!
//! A request is matched on what decides the recorded answer's shape and content: `messages`,
//! `tools`, `chat_template_kwargs`, `stream`, `spaces_between_special_tokens` (absent: vLLM's
//! default `true`), `return_token_ids` (absent: `false`) and `max_tokens` (a recorded cut was made
//! by its limit: replayed for another, the answer would lie about where it stopped), compared as
//! canonical JSON. A match
//! is answered with the recorded body (non-streamed) or the recorded chunks as SSE events ending
//! in `[DONE]` (streamed), byte for byte as recorded apart from key order, which the recording's
//! JSON keeps. No match: 404 naming what was compared and how many recordings have the same
//! messages and tools (so a wrong `--stream` or spaces setting is easy to spot); a body that is not
//! a chat request: 400. Several recordings with one request (the corpus samples many answers to
//! one conversation) answer in turn, in file order, starting over after the last, as a sampling
//! server gives a new answer each time; [`Replay::repeated`] counts them (`sim` prints it).
//! `--replay-shape` picks one server shape out of a file that holds several.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::dataset::canonical::canonical_json;

/// Why a replay file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("replay: cannot read {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("replay: {path}:{line}: {message}")]
    Line {
        path: String,
        line: usize,
        message: String,
    },
    #[error("replay: {path} holds no recorded answer{}", shape_note(.shape))]
    Empty { path: String, shape: Option<String> },
}

fn shape_note(shape: &Option<String>) -> String {
    shape
        .as_ref()
        .map(|s| format!(" of shape {s:?} (shapes are named kind-version/stream|nonstream/spaces|nospaces[/token_ids])"))
        .unwrap_or_default()
}

/// One recorded answer.
#[derive(Debug, Clone)]
enum RecordedAnswer {
    Body(Value),
    Chunks(Vec<Value>),
}

#[derive(Debug, Clone)]
struct Recorded {
    name: String,
    answer: RecordedAnswer,
}

/// The recordings of one request, answered in turn.
#[derive(Debug, Default)]
struct Turns {
    recorded: Vec<Recorded>,
    next: AtomicUsize,
}

impl Turns {
    fn take(&self) -> &Recorded {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.recorded.len();
        &self.recorded[i]
    }
}

/// The recorded answers of a replay file, keyed by the request they answer.
#[derive(Debug, Default)]
pub struct Replay {
    by_request: HashMap<String, Turns>,
    /// messages + tools → how many recordings, for the 404's hint.
    by_conversation: HashMap<String, usize>,
    recordings: usize,
    shapes: Vec<String>,
}

/// The fields of a fixture line the replay reads (everything else is ignored).
#[derive(Deserialize)]
struct Line {
    #[serde(default)]
    name: String,
    #[serde(default)]
    server: Option<Server>,
    request: Value,
    #[serde(default)]
    response: Option<Value>,
    #[serde(default)]
    chunks: Option<Vec<Value>>,
}

#[derive(Deserialize)]
struct Server {
    kind: String,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    spaces_between_special_tokens: bool,
    #[serde(default)]
    return_token_ids: bool,
}

impl Server {
    /// `vllm-0.33.0/stream/spaces`, `…/token_ids` when the server returned its ids.
    fn shape_name(&self) -> String {
        format!(
            "{}{}/{}/{}{}",
            self.kind,
            self.version
                .as_deref()
                .map(|v| format!("-{v}"))
                .unwrap_or_default(),
            if self.stream { "stream" } else { "nonstream" },
            if self.spaces_between_special_tokens {
                "spaces"
            } else {
                "nospaces"
            },
            if self.return_token_ids {
                "/token_ids"
            } else {
                ""
            }
        )
    }
}

impl Replay {
    /// Load `path`, keeping only the recordings of `shape` when given.
    pub fn load(path: &Path, shape: Option<&str>) -> Result<Replay, ReplayError> {
        let text = std::fs::read_to_string(path).map_err(|source| ReplayError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Replay::parse(&text, &path.display().to_string(), shape)
    }

    /// Read fixture lines from `text` (`origin` names it in errors).
    pub fn parse(text: &str, origin: &str, shape: Option<&str>) -> Result<Replay, ReplayError> {
        let mut replay = Replay::default();
        for (index, raw) in text.lines().enumerate() {
            if raw.trim().is_empty() {
                continue;
            }
            let bad = |message: String| ReplayError::Line {
                path: origin.to_string(),
                line: index + 1,
                message,
            };
            let line: Line = serde_json::from_str(raw)
                .map_err(|e| bad(format!("not a recorded exchange: {e}")))?;
            let shape_name = line.server.as_ref().map(Server::shape_name);
            if let Some(wanted) = shape {
                if shape_name.as_deref() != Some(wanted) {
                    continue;
                }
            }
            if let Some(name) = shape_name {
                if !replay.shapes.contains(&name) {
                    replay.shapes.push(name);
                }
            }
            let answer = match (line.response, line.chunks) {
                (Some(body), _) => RecordedAnswer::Body(body),
                (None, Some(chunks)) => RecordedAnswer::Chunks(chunks),
                (None, None) => return Err(bad("neither `response` nor `chunks`".to_string())),
            };
            let keys = RequestKey::of(&line.request).map_err(bad)?;
            *replay
                .by_conversation
                .entry(keys.conversation.clone())
                .or_default() += 1;
            replay
                .by_request
                .entry(keys.request)
                .or_default()
                .recorded
                .push(Recorded {
                    name: line.name,
                    answer,
                });
            replay.recordings += 1;
        }
        if replay.by_request.is_empty() {
            return Err(ReplayError::Empty {
                path: origin.to_string(),
                shape: shape.map(str::to_string),
            });
        }
        Ok(replay)
    }

    /// Recorded answers loaded.
    pub fn len(&self) -> usize {
        self.recordings
    }

    pub fn is_empty(&self) -> bool {
        self.recordings == 0
    }

    /// Recordings that share their request with an earlier one (answered in turn).
    pub fn repeated(&self) -> usize {
        self.recordings - self.by_request.len()
    }

    /// The server shapes the loaded recordings come from, in file order.
    pub fn shapes(&self) -> &[String] {
        &self.shapes
    }

    /// The HTTP answer to a chat-completions body.
    pub fn respond(&self, body: &[u8]) -> Response {
        let request: Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(e) => {
                return error(
                    StatusCode::BAD_REQUEST,
                    &format!("request body is not JSON: {e}"),
                )
            }
        };
        let keys = match RequestKey::of(&request) {
            Ok(keys) => keys,
            Err(message) => return error(StatusCode::BAD_REQUEST, &message),
        };
        let Some(turns) = self.by_request.get(&keys.request) else {
            let same_conversation = self
                .by_conversation
                .get(&keys.conversation)
                .copied()
                .unwrap_or(0);
            return error(
                StatusCode::NOT_FOUND,
                &format!(
                    "replay: no recorded answer for this request ({} recorded; matched on messages, tools, \
                     chat_template_kwargs, stream, spaces_between_special_tokens, return_token_ids, max_tokens): \
                     {same_conversation} recording(s) have these messages and tools{}",
                    self.recordings,
                    if same_conversation > 0 {
                        " but another stream / spaces / return_token_ids / chat_template_kwargs / max_tokens setting"
                    } else {
                        ""
                    }
                ),
            );
        };
        let recorded = turns.take();
        tracing::debug!("replay: answering with {}", recorded.name);
        match &recorded.answer {
            RecordedAnswer::Body(body) => (StatusCode::OK, Json(body.clone())).into_response(),
            RecordedAnswer::Chunks(chunks) => {
                let mut sse = String::new();
                for chunk in chunks {
                    sse.push_str("data: ");
                    sse.push_str(&chunk.to_string());
                    sse.push_str("\n\n");
                }
                sse.push_str("data: [DONE]\n\n");
                let mut response = (StatusCode::OK, Body::from(sse)).into_response();
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/event-stream"),
                );
                response
            }
        }
    }
}

fn error(status: StatusCode, message: &str) -> Response {
    let body = json!({"error": {"code": status.as_u16(), "message": message}});
    (status, Json(body)).into_response()
}

/// What a request is matched on.
struct RequestKey {
    request: String,
    conversation: String,
}

impl RequestKey {
    fn of(request: &Value) -> Result<RequestKey, String> {
        let obj = request
            .as_object()
            .ok_or("request body must be a JSON object")?;
        let messages = obj
            .get("messages")
            .filter(|m| m.as_array().is_some_and(|a| !a.is_empty()))
            .ok_or("`messages` must be a non-empty array of messages")?;
        // No tools and an empty list are the same request, as for a prompt's id.
        let tools = obj
            .get("tools")
            .filter(|t| t.as_array().is_some_and(|a| !a.is_empty()))
            .cloned()
            .unwrap_or(Value::Null);
        let flag =
            |name: &str, default: bool| obj.get(name).and_then(Value::as_bool).unwrap_or(default);
        let conversation = json!({"messages": messages, "tools": tools});
        let request = json!({
            "messages": messages,
            "tools": tools,
            "chat_template_kwargs": obj.get("chat_template_kwargs").cloned().unwrap_or(Value::Null),
            "stream": flag("stream", false),
            "spaces_between_special_tokens": flag("spaces_between_special_tokens", true),
            "return_token_ids": flag("return_token_ids", false),
            "max_tokens": obj.get("max_tokens").cloned().unwrap_or(Value::Null),
        });
        Ok(RequestKey {
            request: canonical_json(&request),
            conversation: canonical_json(&conversation),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(name: &str, stream: bool, spaces: bool, content: &str) -> String {
        let mut request = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
                                 "max_tokens": 9, "stream": stream});
        if !spaces {
            request["spaces_between_special_tokens"] = json!(false);
        }
        let mut fixture = json!({"name": name, "server": {"kind": "vllm", "version": "0.33.0",
            "stream": stream, "spaces_between_special_tokens": spaces, "return_token_ids": false},
            "request": request});
        if stream {
            fixture["chunks"] = json!([{"choices": [{"index": 0, "delta": {"content": content}}]}]);
        } else {
            fixture["response"] = json!({"choices": [{"index": 0,
                "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]});
        }
        fixture.to_string()
    }

    async fn text(response: Response) -> (StatusCode, String) {
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        (status, String::from_utf8(bytes.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn answers_by_request_shape_and_says_why_not() {
        let file = [
            line("a", false, true, "plain"),
            line("b", true, true, "streamed"),
            line("c", true, false, "no spaces"),
            line("d", true, false, "second turn"),
        ]
        .join("\n");
        let replay = Replay::parse(&file, "f.jsonl", None).unwrap();
        assert_eq!((replay.len(), replay.repeated()), (4, 1));
        let body = |extra: Value| {
            let mut b = json!({"model": "x", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 9});
            b.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            b.to_string()
        };
        let (status, got) = text(replay.respond(body(json!({})).as_bytes())).await;
        assert_eq!(status, StatusCode::OK);
        assert!(got.contains("\"plain\""), "{got}");
        let (_, got) = text(replay.respond(body(json!({"stream": true})).as_bytes())).await;
        assert!(
            got.starts_with("data: {") && got.ends_with("data: [DONE]\n\n"),
            "{got}"
        );
        assert!(got.contains("streamed"), "{got}");
        let (_, got) = text(replay.respond(
            body(json!({"stream": true, "spaces_between_special_tokens": false})).as_bytes(),
        ))
        .await;
        assert!(got.contains("no spaces"), "{got}");
        let again = || {
            replay.respond(
                body(json!({"stream": true, "spaces_between_special_tokens": false})).as_bytes(),
            )
        };
        assert!(text(again()).await.1.contains("second turn"));
        assert!(text(again()).await.1.contains("no spaces"), "starts over");
        let (status, got) =
            text(replay.respond(body(json!({"return_token_ids": true})).as_bytes())).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert!(
            got.contains("4 recording(s) have these messages and tools"),
            "{got}"
        );
        // Another limit would have cut elsewhere: not this recording.
        let (status, got) = text(replay.respond(body(json!({"max_tokens": 100})).as_bytes())).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert!(got.contains("max_tokens setting"), "{got}");
        let (status, _) = text(replay.respond(b"{\"messages\": 3}")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
    }

    #[test]
    fn a_shape_filters_and_bad_lines_name_file_and_line() {
        let file = [line("a", false, true, "x"), line("b", true, false, "y")].join("\n");
        let replay = Replay::parse(&file, "f.jsonl", Some("vllm-0.33.0/stream/nospaces")).unwrap();
        assert_eq!(replay.len(), 1);
        assert_eq!(replay.shapes(), ["vllm-0.33.0/stream/nospaces"]);
        let err = Replay::parse(&file, "f.jsonl", Some("sglang/stream/nospaces")).unwrap_err();
        assert!(
            err.to_string().contains("no recorded answer of shape"),
            "{err}"
        );
        let err = Replay::parse(&format!("{file}\n{{}}\n"), "f.jsonl", None).unwrap_err();
        assert!(err.to_string().starts_with("replay: f.jsonl:3:"), "{err}");
    }
}
