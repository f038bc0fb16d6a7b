//! vLLM serving Kimi with `--reasoning-parser kimi_k2 --tool-call-parser kimi_k2`; what it does
//! to the text is `crate::server::vllm`'s shape (0.33, or the 0.11–0.2x line with
//! `reasoning_content`): this file dresses it as vLLM's JSON. `return_token_ids` adds
//! `prompt_token_ids` and `choices[].token_ids`. With `spaces_around_special_tokens` the text is
//! first detokenized with vLLM's default `spaces_between_special_tokens=True` artefact.
//! Streaming: deltas of `reasoning`, `content`, tool calls by index (id and name first, then
//! argument pieces), a finish chunk, a usage chunk if `stream_options.include_usage`, `[DONE]`.

use serde_json::{json, Value};

use super::{attach_token_ids, chunk, chunks, parsed, reasoning_key, usage_chunk, Event, Turn};
use crate::server::ServerShape;

pub fn usage(turn: &Turn) -> Value {
    json!({
        "prompt_tokens": turn.prompt_tokens,
        "total_tokens": turn.prompt_tokens + turn.completion_tokens,
        "completion_tokens": turn.completion_tokens,
        "prompt_tokens_details": null,
    })
}

pub fn response(shape: &ServerShape, turn: &Turn) -> Value {
    let parsed = parsed(shape, turn, false);
    let calls: Vec<Value> = parsed
        .calls
        .iter()
        .map(|call| {
            json!({
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            })
        })
        .collect();
    let mut choice = json!({
        "index": 0,
        "message": {
            "role": "assistant",
            "content": parsed.content,
            "refusal": null,
            "annotations": null,
            "audio": null,
            "function_call": null,
            "tool_calls": calls,
            reasoning_key(shape): parsed.reasoning,
        },
        "logprobs": null,
        "finish_reason": parsed.finish_reason,
        "stop_reason": null,
    });
    let mut body = json!({
        "id": turn.id,
        "object": "chat.completion",
        "created": turn.created,
        "model": turn.model,
        "choices": [],
        "service_tier": null,
        "system_fingerprint": null,
        "usage": usage(turn),
        "prompt_logprobs": null,
        "kv_transfer_params": null,
    });
    attach_token_ids(turn, &mut choice, &mut body);
    body["choices"] = Value::Array(vec![choice]);
    body
}

pub fn events(shape: &ServerShape, turn: &Turn) -> Vec<Event> {
    let parsed = parsed(shape, turn, true);
    let size = turn.stream_chunk_chars;
    let delta = |delta: Value| {
        Event::Data(chunk(
            turn,
            json!({"index": 0, "delta": delta, "logprobs": null, "finish_reason": null}),
        ))
    };
    let mut out = vec![delta(json!({"role": "assistant", "content": ""}))];
    if let Some(reasoning) = &parsed.reasoning {
        for piece in chunks(reasoning, size) {
            out.push(delta(json!({reasoning_key(shape): piece})));
        }
    }
    if let Some(content) = &parsed.content {
        for piece in chunks(content, size) {
            out.push(delta(json!({"content": piece})));
        }
    }
    for (i, call) in parsed.calls.iter().enumerate() {
        out.push(delta(json!({"tool_calls": [{
            "index": i, "id": call.id, "type": "function",
            "function": {"name": call.name},
        }]})));
        for piece in chunks(&call.arguments, size) {
            out.push(delta(json!({"tool_calls": [{
                "index": i, "function": {"arguments": piece},
            }]})));
        }
    }
    out.push(Event::Data(chunk(
        turn,
        json!({"index": 0, "delta": {"content": ""}, "logprobs": null,
               "finish_reason": parsed.finish_reason, "stop_reason": null}),
    )));
    if turn.include_usage {
        out.push(usage_chunk(turn, usage(turn)));
    }
    out.push(Event::Done);
    out
}
