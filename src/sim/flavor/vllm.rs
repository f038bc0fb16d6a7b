//! vLLM serving Kimi with `--reasoning-parser kimi_k2 --tool-call-parser kimi_k2`; what it does
//! to the text is `crate::server::vllm`'s shape (0.33, or the 0.11–0.2x line with
//! `reasoning_content`): this file dresses it as vLLM's JSON. `return_token_ids` adds
//! `prompt_token_ids` and `choices[].token_ids`. With `spaces_around_special_tokens` the text is
//! first detokenized with vLLM's default `spaces_between_special_tokens=True` artefact.
//! 0.11 (vLLM 0.11.2's own code): both `reasoning` and `reasoning_content`; non-streamed calls get
//! random `chatcmpl-tool-…` ids. Streaming: deltas of `reasoning`, `content`, tool calls by index (id and name first, then
//! argument pieces), a finish chunk, a usage chunk if `stream_options.include_usage`, `[DONE]`.

use serde_json::{json, Value};

use super::{attach_token_ids, chunk, chunks, parsed, reasoning_key, usage_chunk, Event, Turn};
use crate::server::{CallIds, ReasoningField, ServerShape};

pub fn usage(turn: &Turn) -> Value {
    json!({
        "prompt_tokens": turn.prompt_tokens,
        "total_tokens": turn.prompt_tokens + turn.completion_tokens,
        "completion_tokens": turn.completion_tokens,
        "prompt_tokens_details": null,
    })
}

/// vLLM 0.11 sends the reasoning under both names (`reasoning` mirrors `reasoning_content`).
fn old_line(shape: &ServerShape) -> bool {
    shape.reasoning_field == ReasoningField::Both
}

pub fn response(shape: &ServerShape, turn: &Turn) -> Value {
    let mut parsed = parsed(shape, turn, false);
    if old_line(shape) && shape.call_ids == CallIds::Minted {
        // 0.11's non-streamed assembly wraps each parsed call in a new `ToolCall`, whose id is
        // random: the model's id text is not sent.
        for (i, call) in parsed.calls.iter_mut().enumerate() {
            call.id = turn
                .minted_call_ids
                .get(i)
                .map(|id| format!("chatcmpl-tool-{}", id.trim_start_matches("call_")))
                .unwrap_or_else(|| format!("chatcmpl-tool-{i:024}"));
        }
    }
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
    if old_line(shape) {
        choice["message"]["reasoning"] = choice["message"]["reasoning_content"].clone();
    }
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
            let mut d = json!({reasoning_key(shape): piece});
            if old_line(shape) {
                d["reasoning"] = json!(piece);
            }
            out.push(delta(d));
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
    if let Some(leak) = &parsed.content_after_calls {
        // 0.11.2 sends its tool parser's buffer at the section's end (`Streaming`).
        for piece in chunks(leak, size) {
            out.push(delta(json!({"content": piece})));
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
