//! The JSON and SSE pieces every dressing builds with: events, the chunk and completion
//! envelopes, tool calls as a message carries them, the server's own ids, and how a text is
//! cut into deltas.

use serde_json::{json, Value};

use super::turn::Turn;
use crate::server::quirks::IndexesCalls;
use crate::server::{self, Parsed, ServerShape};

/// The reasoning field's name in `shape`'s answers.
pub fn reasoning_key(shape: &ServerShape) -> &'static str {
    match shape.reasoning_field {
        server::ReasoningField::Reasoning => "reasoning",
        server::ReasoningField::ReasoningContent | server::ReasoningField::Both => {
            "reasoning_content"
        }
    }
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A `: …` comment line (keep-alive).
    Comment(&'static str),
    Data(Value),
    /// `data: [DONE]`.
    Done,
}

impl Event {
    pub fn to_sse(&self) -> String {
        match self {
            Event::Comment(text) => format!(": {text}\n\n"),
            Event::Data(value) => format!("data: {value}\n\n"),
            Event::Done => "data: [DONE]\n\n".to_string(),
        }
    }
}

/// An OpenRouter-shaped mid-stream error chunk (OpenRouter's documented error shape), used by every flavour.
pub fn midstream_error(turn: &Turn) -> Value {
    json!({
        "id": turn.id,
        "object": "chat.completion.chunk",
        "created": turn.created,
        "model": turn.model,
        "provider": turn.provider,
        "error": {"code": "server_error", "message": "Provider disconnected unexpectedly"},
        "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}],
    })
}

/// The server's own ids, as vLLM/SGLang (`return_token_ids`) and llama.cpp (`__verbose.tokens`)
/// put them in a non-streamed answer.
pub fn attach_token_ids(turn: &Turn, choice: &mut Value, body: &mut Value) {
    if turn.return_token_ids {
        choice["token_ids"] = json!(turn.token_ids);
        body["prompt_token_ids"] = json!(turn.prompt_token_ids);
    }
    if turn.llama_verbose_tokens {
        body["__verbose"] = json!({"tokens": turn.token_ids});
    }
}

/// The last streamed chunk that carries only `usage` (`stream_options.include_usage`).
pub fn usage_chunk(turn: &Turn, usage: Value) -> Event {
    Event::Data(json!({
        "id": turn.id,
        "object": "chat.completion.chunk",
        "created": turn.created,
        "model": turn.model,
        "choices": [],
        "usage": usage,
    }))
}

/// A non-streamed `chat.completion` body: the turn's id, `created` and model, `choices: [choice]`,
/// then `fields` in their order (`usage`, …), then the server's own ids where the request asked
/// for them ([`attach_token_ids`]).
pub fn completion(turn: &Turn, mut choice: Value, fields: Value) -> Value {
    let mut body = json!({
        "id": turn.id,
        "object": "chat.completion",
        "created": turn.created,
        "model": turn.model,
        "choices": [],
    });
    if let (Value::Object(body), Value::Object(fields)) = (&mut body, fields) {
        body.extend(fields);
    }
    attach_token_ids(turn, &mut choice, &mut body);
    body["choices"] = Value::Array(vec![choice]);
    body
}

/// A non-streamed message's `tool_calls`: each call's `id` (as `id` gives it), its `index` where
/// the shape numbers calls ([`IndexesCalls`]), `type` and `function`.
pub fn message_calls(
    shape: &ServerShape,
    parsed: &Parsed,
    id: impl Fn(usize, &server::ParsedCall) -> String,
) -> Vec<Value> {
    let indexed = shape.quirks.has::<IndexesCalls>();
    parsed
        .calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            let mut value = json!({"id": id(i, call)});
            if indexed {
                value["index"] = json!(i);
            }
            value["type"] = json!("function");
            value["function"] = json!({"name": call.name, "arguments": call.arguments});
            value
        })
        .collect()
}

/// `text` in pieces of at most `size` characters (never splitting a character).
pub fn chunks(text: &str, size: usize) -> Vec<&str> {
    let size = size.max(1);
    let mut out = Vec::new();
    let mut start = 0;
    let mut count = 0;
    for (at, _) in text.char_indices() {
        if count == size {
            out.push(&text[start..at]);
            start = at;
            count = 0;
        }
        count += 1;
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// The pieces a stream sends `text` in: one token's text each where the turn streams by token
/// ([`Turn::token_deltas`]), else [`chunks`] of `stream_chunk_chars`.
pub fn deltas<'a>(turn: &Turn, text: &'a str) -> Vec<&'a str> {
    let ends = turn.token_deltas.as_ref().and_then(|t| t.token_ends(text));
    match ends {
        Some(ends) => {
            let mut start = 0;
            ends.into_iter()
                .map(|end| {
                    let piece = &text[start..end];
                    start = end;
                    piece
                })
                .filter(|piece| !piece.is_empty())
                .collect()
        }
        None => chunks(text, turn.stream_chunk_chars),
    }
}

/// A chunk object around one `choices[0]` entry.
pub fn chunk(turn: &Turn, choice: Value) -> Value {
    json!({
        "id": turn.id,
        "object": "chat.completion.chunk",
        "created": turn.created,
        "model": turn.model,
        "choices": [choice],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_respect_characters() {
        assert_eq!(chunks("añbc", 2), vec!["añ", "bc"]);
        assert_eq!(chunks("", 3), Vec::<&str>::new());
        assert_eq!(chunks("abc", 5), vec!["abc"]);
    }

    #[test]
    fn message_calls_carry_an_index_where_the_shape_numbers_them() {
        let parsed = Parsed {
            calls: vec![server::ParsedCall {
                id: "functions.get_weather:0".into(),
                name: "get_weather".into(),
                arguments: "{\"city\": \"Tokyo\"}".into(),
            }],
            ..Parsed::default()
        };
        let own_id = |_: usize, call: &server::ParsedCall| call.id.clone();
        // SGLang 0.5.23's own answer (tests/data/server_shapes/kimi_k25_sglang.jsonl), key order
        // included.
        let sglang = message_calls(&server::sglang::SHAPE, &parsed, own_id);
        assert_eq!(
            serde_json::to_string(&sglang).unwrap(),
            r#"[{"id":"functions.get_weather:0","index":0,"type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Tokyo\"}"}}]"#
        );
        let vllm = message_calls(&server::vllm::SHAPE, &parsed, own_id);
        assert_eq!(vllm[0].get("index"), None);
    }
}
