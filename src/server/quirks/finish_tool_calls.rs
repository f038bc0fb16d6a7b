//! `finish_reason` is `tool_calls` when a finished answer has calls (every parsing server
//! measured; without it, `stop`).

use serde_json::Value;

use crate::server::quirk::{Evidence, Quirk, Seen};
use crate::server::{ForwardInput, Parsed, ServerShape};

#[derive(Debug, Clone, Copy)]
pub struct FinishToolCalls;

impl Quirk for FinishToolCalls {
    fn name(&self) -> &'static str {
        "finish_tool_calls"
    }

    fn forward(&self, _shape: &ServerShape, input: &ForwardInput, parsed: &mut Parsed) {
        if !input.cut && !parsed.calls.is_empty() {
            parsed.finish_reason = "tool_calls";
        }
    }

    /// The finish reason of an answer with calls that was not cut.
    fn evidence(&self, seen: &Seen) -> Evidence {
        let choice = &seen.body["choices"][0];
        let calls = choice["message"]
            .get("tool_calls")
            .and_then(Value::as_array)
            .is_some_and(|c| !c.is_empty());
        match choice["finish_reason"].as_str() {
            Some(finish) if calls && finish != "length" => {
                if finish == "tool_calls" {
                    Evidence::Shows("finish_reason tool_calls with calls")
                } else {
                    Evidence::Contradicts("finish_reason stop despite calls")
                }
            }
            _ => Evidence::Silent,
        }
    }
}
