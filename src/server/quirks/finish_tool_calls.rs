//! `finish_reason` is `tool_calls` when a finished answer has calls (every parsing server
//! measured; without it, `stop`).

use crate::server::quirk::Quirk;
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
}
