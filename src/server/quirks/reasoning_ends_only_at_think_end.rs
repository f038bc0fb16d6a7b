//! The reasoning ends at `</think>` only, not at the tool-section opener: vLLM 0.11 runs
//! `DeepSeekR1ReasoningParser` for `--reasoning-parser kimi_k2`, so a section without `</think>`
//! stays in the reasoning and no call is parsed (kimi_k25_vllm011.jsonl). Read by the Kimi parser.

use crate::server::quirk::Quirk;

#[derive(Debug, Clone, Copy)]
pub struct ReasoningEndsOnlyAtThinkEnd;

impl Quirk for ReasoningEndsOnlyAtThinkEnd {
    fn name(&self) -> &'static str {
        "reasoning_ends_only_at_think_end"
    }
}
