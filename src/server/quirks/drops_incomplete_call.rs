//! A call without `<|tool_call_end|>` (a `length` cut) is dropped from a non-streamed answer
//! (SGLang 0.5.23, vLLM 0.11.2, OpenRouter). Read by the Kimi parser.

use crate::server::quirk::Quirk;
use crate::server::ReadBackRules;

#[derive(Debug, Clone, Copy)]
pub struct DropsIncompleteCall;

impl Quirk for DropsIncompleteCall {
    fn name(&self) -> &'static str {
        "drops_incomplete_call"
    }

    fn read_back(&self, rules: &mut ReadBackRules) {
        rules.drops_unfinished_call = true;
    }

    fn reason(&self) -> Option<&'static str> {
        Some("cut_inside_tool_section")
    }
}
