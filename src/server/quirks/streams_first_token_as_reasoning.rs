//! Streamed with tools declared and the reasoning close anywhere in the prompt's ids
//! (`is_reasoning_end(prompt_token_ids)`): the first token is sent as reasoning and every later one
//! goes to the tool parser as content, the model's own `</think>` too (vLLM 0.11.2;
//! kimi_k25_vllm011.jsonl, history_offset).

use crate::server::quirk::Quirk;
use crate::server::ReadBackRules;

#[derive(Debug, Clone, Copy)]
pub struct StreamsFirstTokenAsReasoning;

impl Quirk for StreamsFirstTokenAsReasoning {
    fn name(&self) -> &'static str {
        "streams_first_token_as_reasoning"
    }

    fn read_back(&self, rules: &mut ReadBackRules) {
        rules.first_token_as_reasoning = true;
    }
}
