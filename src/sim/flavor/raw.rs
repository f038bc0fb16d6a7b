//! A server without reasoning or tool parsers (vLLM/SGLang without `--*-parser`, llama.cpp
//! without `--jinja` tool support): the whole sampled text in `content`, native markers
//! (`</think>`, the tool section) included, the stop token `<|im_end|>` not. `return_token_ids`
//! and llama.cpp's `return_tokens` + `verbose` (`__verbose.tokens`) are honoured.

use serde_json::{json, Value};

use super::{chunk, chunks, usage_chunk, wire::completion, Event, Turn};

fn finish_reason(turn: &Turn) -> &'static str {
    if turn.cut {
        "length"
    } else {
        "stop"
    }
}

fn usage(turn: &Turn) -> Value {
    json!({
        "prompt_tokens": turn.prompt_tokens,
        "completion_tokens": turn.completion_tokens,
        "total_tokens": turn.prompt_tokens + turn.completion_tokens,
    })
}

pub fn response(turn: &Turn) -> Value {
    let choice = json!({
        "index": 0,
        "message": {"role": "assistant", "content": turn.text},
        "logprobs": null,
        "finish_reason": finish_reason(turn),
    });
    completion(turn, choice, json!({"usage": usage(turn)}))
}

pub fn events(turn: &Turn) -> Vec<Event> {
    let mut out = vec![Event::Data(chunk(
        turn,
        json!({"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}),
    ))];
    for piece in chunks(&turn.text, turn.stream_chunk_chars) {
        out.push(Event::Data(chunk(
            turn,
            json!({"index": 0, "delta": {"content": piece}, "finish_reason": null}),
        )));
    }
    out.push(Event::Data(chunk(
        turn,
        json!({"index": 0, "delta": {}, "finish_reason": finish_reason(turn)}),
    )));
    if turn.include_usage {
        out.push(usage_chunk(turn, usage(turn)));
    }
    out.push(Event::Done);
    out
}
