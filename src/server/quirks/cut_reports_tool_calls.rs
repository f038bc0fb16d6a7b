//! `finish_reason` is `tool_calls` whenever calls were parsed, also when `max_tokens` cut the
//! answer (vLLM 0.11: a cut after a complete call looks like a finished answer), and the tool
//! path nulls whitespace-only content whenever the section opener was seen
//! ([`NullsWhitespaceContent`](super::NullsWhitespaceContent)); kimi_k25_vllm011.jsonl.

use super::FinishToolCalls;
use crate::server::quirk::Quirk;
use crate::server::ReadBackRules;
use crate::server::{ForwardInput, Parsed, ServerShape};

#[derive(Debug, Clone, Copy)]
pub struct CutReportsToolCalls;

impl Quirk for CutReportsToolCalls {
    fn name(&self) -> &'static str {
        "cut_reports_tool_calls"
    }

    fn read_back(&self, rules: &mut ReadBackRules) {
        rules.cut_hidden_by_tool_calls = true;
    }

    fn forward(&self, shape: &ServerShape, input: &ForwardInput, parsed: &mut Parsed) {
        if input.cut && !parsed.calls.is_empty() {
            parsed.finish_reason = if shape.quirks.has::<FinishToolCalls>() {
                "tool_calls"
            } else {
                "stop"
            };
        }
    }

    fn reason(&self) -> Option<&'static str> {
        Some("cut_inside_tool_section")
    }
}
