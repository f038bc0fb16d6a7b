//! llama.cpp's `llama-server` without a parser for the family: a parser-less answer ([`super::raw`])
//! plus what the real server adds to a non-streamed one (as recorded from it,
//! tests/data/real_server/): its build as `system_fingerprint` (`b0-unknown` when built without
//! git metadata) and a `timings` object — what tells it from a parser-less server. Its stream is
//! the parser-less one.

use serde_json::{json, Value};

use super::{raw, Turn};

pub fn response(turn: &Turn) -> Value {
    let mut body = raw::response(turn);
    body["system_fingerprint"] = json!("b0-unknown");
    body["timings"] = json!({
        "cache_n": 0,
        "prompt_n": turn.prompt_tokens,
        "predicted_n": turn.completion_tokens,
    });
    body
}
