//! SGLang serving Kimi (`--reasoning-parser kimi_k25 --tool-call-parser kimi_k2`); what it does
//! to the text is `crate::server::sglang`'s shape (reasoning verbatim in `reasoning_content`,
//! `content` `""`, re-synthesized `functions.NAME:N` ids, stripped non-streamed arguments, cut
//! calls dropped): this file dresses it as SGLang's JSON — tool calls with `index`,
//! `matched_stop` on a stop, `metadata.weight_version`, a top-level `usage.reasoning_tokens`.
//! `return_token_ids` adds the ids to a non-streamed answer.

use serde_json::{json, Value};

use super::{attach_token_ids, chunk, chunks, parsed, usage_chunk, Event, Turn};
use crate::server::sglang::SHAPE;

/// `<|im_end|>`, which SGLang reports as the stop it matched.
const IM_END_ID: u32 = 163586;

pub fn usage(turn: &Turn) -> Value {
    json!({
        "prompt_tokens": turn.prompt_tokens,
        "total_tokens": turn.prompt_tokens + turn.completion_tokens,
        "completion_tokens": turn.completion_tokens,
        "prompt_tokens_details": null,
        "reasoning_tokens": turn.reasoning_tokens,
    })
}

fn matched_stop(turn: &Turn) -> Value {
    if turn.cut {
        Value::Null
    } else {
        json!(IM_END_ID)
    }
}

pub fn response(turn: &Turn) -> Value {
    let parsed = parsed(&SHAPE, turn, false);
    let calls: Vec<Value> = parsed
        .calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            json!({
                "id": call.id,
                "index": i,
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
            "reasoning_content": parsed.reasoning,
            "tool_calls": if calls.is_empty() { Value::Null } else { Value::Array(calls) },
        },
        "logprobs": null,
        "finish_reason": parsed.finish_reason,
        "matched_stop": matched_stop(turn),
    });
    let mut body = json!({
        "id": turn.id,
        "object": "chat.completion",
        "created": turn.created,
        "model": turn.model,
        "choices": [],
        "usage": usage(turn),
        "metadata": {"weight_version": "default"},
    });
    attach_token_ids(turn, &mut choice, &mut body);
    body["choices"] = Value::Array(vec![choice]);
    body
}

pub fn events(turn: &Turn) -> Vec<Event> {
    let parsed = parsed(&SHAPE, turn, true);
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
            out.push(delta(json!({"reasoning_content": piece})));
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
            "function": {"name": call.name, "arguments": ""},
        }]})));
        for piece in chunks(&call.arguments, size) {
            out.push(delta(json!({"tool_calls": [{
                "index": i, "function": {"arguments": piece},
            }]})));
        }
    }
    out.push(Event::Data(chunk(
        turn,
        json!({"index": 0, "delta": {}, "logprobs": null,
               "finish_reason": parsed.finish_reason, "matched_stop": matched_stop(turn)}),
    )));
    if turn.include_usage {
        out.push(usage_chunk(turn, usage(turn)));
    }
    out.push(Event::Done);
    out
}
