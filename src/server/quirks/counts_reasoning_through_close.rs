//! `usage.reasoning_tokens` counts the answer's tokens up to and including its first reasoning
//! close (all of them when there is none) while thinking is on: SGLang 0.5.23's
//! `Req.update_reasoning_tokens`, sent as `usage.reasoning_tokens` and
//! `usage.completion_tokens_details.reasoning_tokens`. It tells a cut right after
//! `</think><|tool_calls_section_begin|>` from one after an unclosed reasoning's opener.

use crate::server::quirk::Quirk;

#[derive(Debug, Clone, Copy)]
pub struct CountsReasoningThroughClose;

impl Quirk for CountsReasoningThroughClose {
    fn name(&self) -> &'static str {
        "counts_reasoning_through_close"
    }
}
