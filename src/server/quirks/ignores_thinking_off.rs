//! `chat_template_kwargs.thinking=false` does not switch the reasoning parser off, so a
//! non-streamed answer without `</think>` is all reasoning (vLLM 0.11; kimi_k25_vllm011.jsonl).
//! Read by the Kimi parser; the reconstruction reads such an answer back as content.

use crate::server::quirk::Quirk;
use crate::server::ReadBackRules;

#[derive(Debug, Clone, Copy)]
pub struct IgnoresThinkingOff;

impl Quirk for IgnoresThinkingOff {
    fn name(&self) -> &'static str {
        "ignores_thinking_off"
    }

    fn read_back(&self, rules: &mut ReadBackRules) {
        rules.reasoning_when_thinking_off = true;
    }
}
