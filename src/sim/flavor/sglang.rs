//! SGLang serving Kimi (`--reasoning-parser kimi_k25 --tool-call-parser kimi_k2`); what it does
//! to the text is `crate::server::sglang`'s shape (reasoning verbatim in `reasoning_content`,
//! `content` `""`, re-synthesized `functions.NAME:N` ids, stripped non-streamed arguments, cut
//! calls dropped): this file dresses it as SGLang's JSON — tool calls with `index`,
//! `matched_stop` on a stop, `metadata.weight_version`, a top-level `usage.reasoning_tokens`.
//! `return_token_ids` adds the ids to a non-streamed answer. The JSON follows what SGLang 0.5.23's
//! own serving code sends (tests/data/server_shapes/kimi_k25_sglang.jsonl): `matched_stop` is
//! `null` on a non-streamed `tool_calls` finish but the end token on the streamed one, `usage`
//! repeats `reasoning_tokens` in `completion_tokens_details` (`null` when 0), `metadata` has
//! `weight_versions`, no `tool_calls` key without calls, every delta names `reasoning_content`.

use serde_json::{json, Value};

use super::wire::{completion, message_calls};
use super::{chunk, deltas, parsed, usage_chunk, Event, Turn};
use crate::server::quirks::CountsReasoningThroughClose;

/// `<|im_end|>`, which SGLang reports as the stop it matched.
const IM_END_ID: u32 = 163586;

pub fn usage(turn: &Turn) -> Value {
    let reasoning_tokens = reasoning_tokens(turn);
    json!({
        "prompt_tokens": turn.prompt_tokens,
        "total_tokens": turn.prompt_tokens + turn.completion_tokens,
        "completion_tokens": turn.completion_tokens,
        "prompt_tokens_details": null,
        "reasoning_tokens": reasoning_tokens,
        "completion_tokens_details": if reasoning_tokens > 0 {
            json!({"reasoning_tokens": reasoning_tokens})
        } else {
            Value::Null
        },
    })
}

/// SGLang counts the tokens up to and including the first `</think>`, all of them when the
/// answer has none, while thinking is on (`Req.update_reasoning_tokens`;
/// `server::quirks::CountsReasoningThroughClose`).
fn reasoning_tokens(turn: &Turn) -> usize {
    if !turn.thinking || !turn.shape.quirks.has::<CountsReasoningThroughClose>() {
        return turn.reasoning_tokens;
    }
    if turn.text.contains(crate::server::kimi::THINK_END) {
        (turn.reasoning_tokens + 1).min(turn.completion_tokens)
    } else {
        turn.completion_tokens
    }
}

fn metadata(turn: &Turn) -> Value {
    json!({"weight_version": "default",
           "weight_versions": [{"version": "default", "start": 0, "end": turn.completion_tokens}]})
}

fn matched_stop(turn: &Turn) -> Value {
    if turn.cut {
        Value::Null
    } else {
        json!(IM_END_ID)
    }
}

pub fn response(turn: &Turn) -> Value {
    let parsed = parsed(turn.shape, turn, false);
    let calls = message_calls(turn.shape, &parsed, |_, call| call.id.clone());
    let mut message = json!({
        "role": "assistant",
        "content": parsed.content,
        // An empty reasoning (`</think>` first) is `null` (…/nonstream/empty_reasoning/001).
        "reasoning_content": parsed.reasoning.filter(|r| !r.is_empty()),
    });
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    // A non-streamed tool-call finish reports no matched stop.
    let matched = if parsed.finish_reason == "tool_calls" {
        Value::Null
    } else {
        matched_stop(turn)
    };
    let choice = json!({
        "index": 0,
        "message": message,
        "logprobs": null,
        "finish_reason": parsed.finish_reason,
        "matched_stop": matched,
    });
    let fields = json!({"usage": usage(turn), "metadata": metadata(turn)});
    completion(turn, choice, fields)
}

pub fn events(turn: &Turn) -> Vec<Event> {
    let parsed = parsed(turn.shape, turn, true);
    let delta = |delta: Value| {
        Event::Data(chunk(
            turn,
            json!({"index": 0, "delta": delta, "logprobs": null, "finish_reason": null,
                   "matched_stop": null}),
        ))
    };
    let mut out = vec![delta(
        json!({"reasoning_content": null, "role": "assistant", "content": ""}),
    )];
    if let Some(reasoning) = &parsed.reasoning {
        for piece in deltas(turn, reasoning) {
            out.push(delta(json!({"reasoning_content": piece})));
        }
    }
    // With tools declared, content goes through the tool parser's path, whose chunks carry
    // `role: null` and a top-level `usage: null` (as every tool-call chunk does).
    let tool_path = |delta: Event| match delta {
        Event::Data(mut chunk) => {
            chunk["usage"] = Value::Null;
            Event::Data(chunk)
        }
        other => other,
    };
    if let Some(content) = &parsed.content {
        for piece in deltas(turn, content) {
            out.push(if turn.tools_declared {
                tool_path(delta(
                    json!({"role": null, "content": piece, "reasoning_content": null}),
                ))
            } else {
                delta(json!({"reasoning_content": null, "content": piece}))
            });
        }
    }
    for (i, call) in parsed.calls.iter().enumerate() {
        out.push(tool_path(delta(
            json!({"role": null, "content": null, "reasoning_content": null,
            "tool_calls": [{
                "id": call.id, "index": i, "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }]}),
        )));
        for piece in deltas(turn, &call.arguments) {
            out.push(tool_path(delta(
                json!({"role": null, "content": null, "reasoning_content": null,
                "tool_calls": [{
                    "id": null, "index": i, "type": "function",
                    "function": {"name": null, "arguments": piece},
                }]}),
            )));
        }
    }
    out.push(Event::Data(chunk(
        turn,
        json!({"index": 0, "delta": {"reasoning_content": null}, "logprobs": null,
               "finish_reason": parsed.finish_reason, "matched_stop": matched_stop(turn)}),
    )));
    if turn.include_usage {
        out.push(usage_chunk(turn, usage(turn)));
    }
    out.push(Event::Done);
    out
}
