//! OpenRouter in front of a Kimi provider: the upstream's Kimi parsers split the text
//! (`</think>` gone, tool markers become structured calls), then OpenRouter reshapes it:
//! `message.reasoning` + `reasoning_details: [{type: "reasoning.text", …}]`, the upstream's
//! tool-call ids passed through (measured: OpenRouter mints none), `content` `""` when empty,
//! `finish_reason` normalized (`stop`/`tool_calls`/`length`) with the raw value in
//! `native_finish_reason`, a top-level
//! `provider`, and `usage` with `cost` and `completion_tokens_details.reasoning_tokens`.
//! Streaming: `: OPENROUTER PROCESSING` comments, `delta.reasoning`, tool-call deltas by index,
//! a finish chunk, a final usage chunk, `data: [DONE]`.

use serde_json::{json, Value};

use super::wire::message_calls;
use super::{chunks, Event, Turn};
use crate::server::Parsed;

fn parsed(turn: &Turn, stream: bool) -> Parsed {
    let mut parsed = super::parsed(turn.shape, turn, stream);
    if turn.exclude_reasoning {
        parsed.reasoning = None;
    }
    parsed
}

fn reasoning_details(text: &str) -> Value {
    json!([{"type": "reasoning.text", "text": text, "format": "unknown", "index": 0}])
}

pub fn usage(turn: &Turn) -> Value {
    json!({
        "prompt_tokens": turn.prompt_tokens,
        "completion_tokens": turn.completion_tokens,
        "total_tokens": turn.prompt_tokens + turn.completion_tokens,
        "cost": turn.cost,
        "is_byok": false,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "cost_details": {"upstream_inference_cost": null},
        "completion_tokens_details": {"reasoning_tokens": turn.reasoning_tokens, "image_tokens": 0},
    })
}

pub fn response(turn: &Turn) -> Value {
    let parsed = parsed(turn, false);
    let finish = parsed.finish_reason;
    let mut message = json!({
        "role": "assistant",
        "content": parsed.content.clone().unwrap_or_default(),
        "refusal": null,
        "reasoning": parsed.reasoning,
    });
    if let Some(reasoning) = &parsed.reasoning {
        message["reasoning_details"] = reasoning_details(reasoning);
    }
    if !parsed.calls.is_empty() {
        let calls = message_calls(turn.shape, &parsed, |_, call| call.id.clone());
        message["tool_calls"] = Value::Array(calls);
    }
    json!({
        "id": turn.id,
        "provider": turn.provider,
        "model": turn.model,
        "object": "chat.completion",
        "created": turn.created,
        "choices": [{
            "logprobs": null,
            "finish_reason": finish,
            "native_finish_reason": super::native_finish_reason(turn, finish),
            "index": 0,
            "message": message,
        }],
        "usage": usage(turn),
    })
}

fn chunk(turn: &Turn, delta: Value, finish: Option<&str>) -> Event {
    Event::Data(json!({
        "id": turn.id,
        "provider": turn.provider,
        "model": turn.model,
        "object": "chat.completion.chunk",
        "created": turn.created,
        "choices": [{
            "index": 0,
            "delta": delta,
            "finish_reason": finish,
            "native_finish_reason": finish.map(|f| super::native_finish_reason(turn, f)),
            "logprobs": null,
        }],
    }))
}

pub fn events(turn: &Turn) -> Vec<Event> {
    let parsed = parsed(turn, true);
    let size = turn.stream_chunk_chars;
    let mut out = vec![
        Event::Comment("OPENROUTER PROCESSING"),
        Event::Comment("OPENROUTER PROCESSING"),
    ];
    if let Some(reasoning) = &parsed.reasoning {
        for piece in chunks(reasoning, size) {
            out.push(chunk(
                turn,
                json!({"role": "assistant", "content": "", "reasoning": piece,
                       "reasoning_details": reasoning_details(piece)}),
                None,
            ));
        }
    }
    if let Some(content) = &parsed.content {
        for piece in chunks(content, size) {
            out.push(chunk(
                turn,
                json!({"role": "assistant", "content": piece}),
                None,
            ));
        }
    }
    for (i, call) in parsed.calls.iter().enumerate() {
        out.push(chunk(
            turn,
            json!({"role": "assistant", "content": null, "tool_calls": [{
                "index": i, "id": call.id, "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }]}),
            None,
        ));
        for piece in chunks(&call.arguments, size) {
            out.push(chunk(
                turn,
                json!({"role": "assistant", "content": null, "tool_calls": [{
                    "index": i, "function": {"arguments": piece},
                }]}),
                None,
            ));
        }
    }
    out.push(chunk(
        turn,
        json!({"role": "assistant", "content": ""}),
        Some(parsed.finish_reason),
    ));
    out.push(Event::Data(json!({
        "id": turn.id,
        "provider": turn.provider,
        "model": turn.model,
        "object": "chat.completion.chunk",
        "created": turn.created,
        "choices": [],
        "usage": usage(turn),
    })));
    out.push(Event::Done);
    out
}
