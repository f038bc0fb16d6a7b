//! vLLM serving a model with its reasoning and tool parsers (Kimi: `kimi_k2`; Qwen3: `qwen3` +
//! `hermes`; DeepSeek-V3: `deepseek_v3`); what it does to the text is `crate::server::vllm`'s shape
//! (0.33, or the 0.11–0.2x line): this file dresses it as vLLM's JSON, key for key as vLLM
//! 0.33.0's and 0.11.2's own serving code sends it (tests/data/server_shapes, compared whole by
//! tests/sim_vs_servers.rs):
//! - 0.33: `reasoning`; no `tool_calls` key without calls; `stop_reason` (the end-of-turn id, `null`
//!   for the tokenizer's own eos or a cut), `token_ids`, `routed_experts`, `weight_versions` on
//!   the choice; `prompt_token_ids`, `prompt_text`, `kv_transfer_params`, `ec_transfer_params`,
//!   `metrics` on the body; `usage.completion_tokens_details.reasoning_tokens` (the reasoning
//!   parser's count). Non-streamed Kimi arguments are coerced to the schema ([`crate::server::quirks::CoercesArguments`]).
//! - 0.11: `reasoning` and `reasoning_content` alike, `tool_calls: []` without calls, random
//!   `chatcmpl-tool-…` ids on non-streamed calls, no `completion_tokens_details`; every
//!   non-reasoning delta carries `reasoning_content: null`.
//! - Streams: one token's text per delta; a call's header (id, type, index, name — with 0.33's
//!   Kimi parser also its first argument piece) then argument deltas; the finish rides on the
//!   last token's chunk (`delta: {}` for the end-of-turn token; on a cut, the last text); a usage
//!   chunk without `prompt_tokens_details` if `stream_options.include_usage`; `[DONE]`.
//!
//! `return_token_ids` fills `prompt_token_ids` and `choices[].token_ids`. With spaces around
//! special tokens (the request's `spaces_between_special_tokens`, else the sim's setting) a Kimi
//! text is first detokenized with vLLM's `spaces_between_special_tokens=True` artefact.

use serde_json::{json, Map, Value};

use super::fields::tool_call_id;
use super::wire::message_calls;
use super::{chunk, deltas, parsed, reasoning_key, usage_chunk, Event, Turn};
use crate::server::quirks::MintsCallIds;
use crate::server::{self, Parsed, ReasoningField, ServerShape};

/// `usage` as vLLM sends it: 0.33 adds `completion_tokens_details.reasoning_tokens` (its reasoning
/// parser's `count_reasoning_tokens`); a stream's usage chunk has no `prompt_tokens_details`.
pub fn usage(shape: &ServerShape, turn: &Turn, stream: bool) -> Value {
    let mut usage = json!({
        "prompt_tokens": turn.prompt_tokens,
        "total_tokens": turn.prompt_tokens + turn.completion_tokens,
        "completion_tokens": turn.completion_tokens,
    });
    if !stream {
        usage["prompt_tokens_details"] = Value::Null;
    }
    if !old_line(shape) {
        // Streamed, the parser counts the tokens it was shown: a partial character the cut left
        // inside the reasoning never was.
        let mut reasoning_tokens = turn.reasoning_tokens;
        if stream && reasoning_tokens == turn.completion_tokens {
            reasoning_tokens -= turn.partial_tokens.min(reasoning_tokens);
        }
        usage["completion_tokens_details"] = json!({"reasoning_tokens": reasoning_tokens});
    }
    usage
}

/// vLLM 0.11 sends the reasoning under both names (`reasoning` mirrors `reasoning_content`).
fn old_line(shape: &ServerShape) -> bool {
    shape.reasoning_field == ReasoningField::Both
}

/// `stop_reason`: the end-of-turn id that stopped the answer, `null` on a cut.
fn stop_reason(turn: &Turn) -> Value {
    turn.stop_token.map_or(Value::Null, Value::from)
}

/// `token_ids` of a choice and `prompt_token_ids`: the ids with `return_token_ids`, else `null`.
fn ids(turn: &Turn, ids: &Option<Vec<u32>>) -> Value {
    match ids {
        Some(ids) if turn.return_token_ids => json!(ids),
        _ => Value::Null,
    }
}

/// The non-streamed message: 0.11 always sends `tool_calls` (`[]` without calls) and the
/// reasoning under both names; 0.33 leaves an empty list out and sends an empty reasoning
/// (`</think>` first) as `null` (…/empty_reasoning/001).
fn message(turn: &Turn, mut parsed: Parsed) -> Value {
    let shape = turn.shape;
    let old = old_line(shape);
    if old && shape.quirks.has::<MintsCallIds>() {
        // 0.11's non-streamed assembly wraps each parsed call in a new `ToolCall`, whose id is
        // random: the model's id text is not sent.
        for (i, call) in parsed.calls.iter_mut().enumerate() {
            call.id = tool_call_id(turn, i);
        }
    }
    let calls = message_calls(shape, &parsed, |_, call| call.id.clone());
    let mut message = json!({
        "role": "assistant",
        "content": parsed.content,
        "refusal": null,
        "annotations": null,
        "audio": null,
        "function_call": null,
    });
    if old || !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    if old {
        message["reasoning"] = json!(parsed.reasoning);
    } else {
        parsed.reasoning = parsed.reasoning.filter(|r| !r.is_empty());
    }
    message[reasoning_key(shape)] = json!(parsed.reasoning);
    message
}

pub fn response(turn: &Turn) -> Value {
    let shape = turn.shape;
    let parsed = parsed(shape, turn, false);
    let old = old_line(shape);
    let finish_reason = parsed.finish_reason;
    let mut choice = json!({
        "index": 0,
        "message": message(turn, parsed),
        "logprobs": null,
        "finish_reason": finish_reason,
        "stop_reason": stop_reason(turn),
        "token_ids": ids(turn, &turn.token_ids),
    });
    if !old {
        choice["routed_experts"] = Value::Null;
        choice["weight_versions"] = Value::Null;
    }
    let mut body = json!({
        "id": turn.id,
        "object": "chat.completion",
        "created": turn.created,
        "model": turn.model,
        "choices": [choice],
        "service_tier": null,
        "system_fingerprint": null,
        "usage": usage(shape, turn, false),
        "prompt_logprobs": null,
        "prompt_token_ids": ids(turn, &turn.prompt_token_ids),
    });
    if !old {
        body["prompt_text"] = Value::Null;
    }
    body["kv_transfer_params"] = Value::Null;
    if !old {
        body["ec_transfer_params"] = Value::Null;
        body["metrics"] = Value::Null;
    }
    body
}

/// Some text of `delta` ends with `text` (the delta shows that token).
fn ends_with(delta: &Value, text: &str) -> bool {
    match delta {
        Value::String(s) => s.ends_with(text),
        Value::Array(items) => items.iter().any(|v| ends_with(v, text)),
        Value::Object(map) => map.values().any(|v| ends_with(v, text)),
        _ => false,
    }
}

/// One delta chunk: `token_ids` on the choice; 0.33 adds a top-level `kv_transfer_params`; 0.11
/// sends `reasoning_content: null` beside anything that is not reasoning.
fn delta_event(turn: &Turn, mut delta: Value) -> Event {
    let old = old_line(turn.shape);
    if old && delta.get("reasoning_content").is_none() {
        // Before the tool calls, after the content (the fields' order in 0.11's deltas).
        let calls = delta.as_object_mut().and_then(|d| d.remove("tool_calls"));
        delta["reasoning_content"] = Value::Null;
        if let Some(calls) = calls {
            let mut ordered = Map::new();
            ordered.insert("reasoning_content".into(), Value::Null);
            ordered.insert("tool_calls".into(), calls);
            delta = Value::Object(ordered);
        }
    }
    let mut chunk = chunk(
        turn,
        json!({"index": 0, "delta": delta, "logprobs": null, "finish_reason": null,
               "token_ids": null}),
    );
    if !old {
        chunk["kv_transfer_params"] = Value::Null;
    }
    Event::Data(chunk)
}

/// The first chunk: the role, and the prompt's ids where asked.
fn first_event(turn: &Turn) -> Event {
    let old = old_line(turn.shape);
    let mut first = chunk(
        turn,
        json!({"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": null,
               "finish_reason": null}),
    );
    if old {
        first["choices"][0]["delta"]["reasoning_content"] = Value::Null;
    }
    first["prompt_token_ids"] = ids(turn, &turn.prompt_token_ids);
    if !old {
        first["prompt_text"] = Value::Null;
    }
    Event::Data(first)
}

/// The reasoning's and the content's deltas, one token's text each.
fn text_events(turn: &Turn, parsed: &Parsed, out: &mut Vec<Event>) {
    if let Some(reasoning) = &parsed.reasoning {
        for piece in deltas(turn, reasoning) {
            let delta = if old_line(turn.shape) {
                json!({"reasoning": piece, "reasoning_content": piece})
            } else {
                json!({reasoning_key(turn.shape): piece})
            };
            out.push(delta_event(turn, delta));
        }
    }
    if let Some(content) = &parsed.content {
        for piece in deltas(turn, content) {
            out.push(delta_event(turn, json!({"content": piece})));
        }
    }
}

/// Each call's header (id, type, index, name — with 0.33's Kimi parser engine also its first
/// argument piece, `""` when none came yet; 0.11's and the other families' parsers send the name
/// alone), then its argument deltas.
fn call_events(turn: &Turn, parsed: &Parsed, out: &mut Vec<Event>) {
    let parser = server::parser_traits(turn.syntax);
    let header_with_arguments = parser.streams_call_header_with_arguments && !old_line(turn.shape);
    let tool_delta = |calls: Value| {
        if parser.null_content_in_call_deltas {
            json!({"content": null, "tool_calls": calls})
        } else {
            json!({"tool_calls": calls})
        }
    };
    for (i, call) in parsed.calls.iter().enumerate() {
        let pieces = deltas(turn, &call.arguments);
        let (head, rest) = match pieces.split_first() {
            _ if !header_with_arguments => (None, &pieces[..]),
            Some((head, rest)) => (Some(*head), rest),
            None => (Some(""), &pieces[..]),
        };
        let mut function = Map::new();
        function.insert("name".into(), json!(call.name));
        if let Some(head) = head {
            function.insert("arguments".into(), json!(head));
        }
        out.push(delta_event(
            turn,
            tool_delta(json!([{
                "id": call.id, "type": "function", "index": i, "function": function,
            }])),
        ));
        for piece in rest {
            out.push(delta_event(
                turn,
                tool_delta(json!([{"index": i, "function": {"arguments": piece}}])),
            ));
        }
    }
}

/// The finish rides on the last token's chunk: the end-of-turn token's, which shows nothing
/// (`{}`; 0.11: `content: ""`), or on a cut the last sampled token's — its text when it showed
/// some (the last delta, moved here: taken off `out`), nothing when it was a marker or a partial
/// character.
fn finish_event(turn: &Turn, parsed: &Parsed, out: &mut Vec<Event>) -> Event {
    let old = old_line(turn.shape);
    let last_token = turn.last_token.as_deref().filter(|t| !t.is_empty());
    let shown_by_last = |delta: &Value| {
        turn.cut && turn.partial_tokens == 0 && last_token.is_some_and(|t| ends_with(delta, t))
    };
    let last_delta = match out.last() {
        Some(Event::Data(last)) if out.len() > 1 && shown_by_last(&last["choices"][0]["delta"]) => {
            let delta = last["choices"][0]["delta"].clone();
            out.pop();
            Some(delta)
        }
        _ => None,
    };
    let finish_delta = match (last_delta, turn.cut, old) {
        (Some(delta), _, _) => delta,
        (None, false, true) => json!({"content": "", "reasoning_content": null}),
        (None, true, true) => json!({"reasoning_content": null}),
        (None, _, false) => json!({}),
    };
    let mut finish = json!({"index": 0, "delta": finish_delta, "logprobs": null,
        "finish_reason": parsed.finish_reason, "stop_reason": stop_reason(turn),
        "token_ids": null});
    if !old {
        finish["weight_versions"] = Value::Null;
    }
    let mut finish = chunk(turn, finish);
    if turn.return_token_ids {
        // The ids go out with the deltas they produced; the whole list once, at the end, is what
        // a client assembles from them.
        finish["choices"][0]["token_ids"] = json!(turn.token_ids);
    }
    if !old {
        finish["kv_transfer_params"] = Value::Null;
    }
    Event::Data(finish)
}

pub fn events(turn: &Turn) -> Vec<Event> {
    let parsed = parsed(turn.shape, turn, true);
    let mut out = vec![first_event(turn)];
    text_events(turn, &parsed, &mut out);
    call_events(turn, &parsed, &mut out);
    if let Some(leak) = &parsed.content_after_calls {
        // 0.11.2 sends its tool parser's buffer at the section's end (`server::quirks::LeaksSectionBuffer`).
        for piece in deltas(turn, leak) {
            out.push(delta_event(turn, json!({"content": piece})));
        }
    }
    let finish = finish_event(turn, &parsed, &mut out);
    out.push(finish);
    if turn.include_usage {
        out.push(usage_chunk(turn, usage(turn.shape, turn, true)));
    }
    out.push(Event::Done);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::assemble::ChunkAssembler;

    /// A fixture of tests/data/server_shapes/kimi_k25_vllm011.jsonl: vLLM 0.11.2's own stream.
    fn fixture(name: &str) -> Value {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/server_shapes/kimi_k25_vllm011.jsonl"
        );
        let text = std::fs::read_to_string(path).expect("the vLLM 0.11.2 fixtures");
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|f| f["name"] == name)
            .unwrap_or_else(|| panic!("fixture {name}"))
    }

    fn assembled(chunks: impl IntoIterator<Item = Value>) -> Value {
        let mut assembler = ChunkAssembler::new();
        for chunk in chunks {
            assembler.push(&chunk);
        }
        assembler.finish()
    }

    fn turn(text: &str, spaces: bool) -> Turn {
        Turn {
            id: "chatcmpl-1".into(),
            created: 0,
            model: "kimi".into(),
            text: text.into(),
            complete_text: text.into(),
            partial_tokens: 0,
            token_ids: None,
            prompt_token_ids: None,
            prompt_tokens: 24,
            completion_tokens: 62,
            reasoning_tokens: 0,
            cut: false,
            thinking: true,
            tools_declared: true,
            tools: Vec::new(),
            cost: 0.0,
            minted_call_ids: Vec::new(),
            conventions: Default::default(),
            provider: String::new(),
            spaces_around_special_tokens: spaces,
            stream_chunk_chars: 7,
            exclude_reasoning: false,
            return_token_ids: false,
            llama_verbose_tokens: false,
            include_usage: false,
            history_calls: 0,
            prompt_closes_reasoning: false,
            first_token: None,
            last_token: None,
            stop_token: None,
            token_deltas: None,
            // Kimi's.
            syntax: crate::server::Syntax::default(),
            shape: &crate::server::vllm::SHAPE_0_11,
            defects: Vec::new(),
            provider_in_body: false,
        }
    }

    #[test]
    fn the_011_stream_leaks_what_vllm_0_11_2_leaks() {
        // The simulator's `--flavor vllm-0.11 --stream` against vLLM 0.11.2's own chunks of the
        // same token stream: the content before the section twice (once streamed, once in the
        // buffer sent at the section's end), every call's raw text, the joining spaces.
        for (name, spaces) in [
            (
                "kimi_k25/vllm-0.11.2/stream/nospaces/parallel_2_calls/001",
                false,
            ),
            (
                "kimi_k25/vllm-0.11.2/stream/spaces/parallel_2_calls/001",
                true,
            ),
            (
                "kimi_k25/vllm-0.11.2/stream/nospaces/nested_args/004",
                false,
            ),
        ] {
            let case = fixture(name);
            let truth = case["truth"]["completion_text"].as_str().unwrap();
            let text = truth.strip_suffix("<|im_end|>").unwrap();
            let real = assembled(case["chunks"].as_array().unwrap().iter().cloned());
            let events = events(&turn(text, spaces));
            let ours = assembled(events.into_iter().filter_map(|e| match e {
                Event::Data(v) => Some(v),
                _ => None,
            }));
            let (real, ours) = (&real["choices"][0], &ours["choices"][0]);
            let leaked = real["message"]["content"].as_str().unwrap_or_default();
            assert!(leaked.contains("<|tool_call_begin|>"), "{name}: {leaked:?}");
            for field in ["content", "reasoning_content", "reasoning"] {
                assert_eq!(
                    ours["message"][field], real["message"][field],
                    "{name}: {field}"
                );
            }
            assert_eq!(ours["finish_reason"], real["finish_reason"], "{name}");
            let calls = |c: &Value| -> Vec<(Value, Value)> {
                c["message"]["tool_calls"]
                    .as_array()
                    .map(|calls| {
                        calls
                            .iter()
                            .map(|t| {
                                (
                                    t["function"]["name"].clone(),
                                    t["function"]["arguments"].clone(),
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default()
            };
            assert_eq!(calls(ours), calls(real), "{name}");
        }
    }
}
