//! The reasoning's trailing whitespace is stripped, streamed or not (vLLM 0.33 holds it back in
//! a stream too), measured on vLLM's Kimi parser (tests/data/server_shapes/kimi_k25.jsonl); the qwen3 and deepseek parsers
//! strip nothing (qwen3.jsonl, deepseek_v3.jsonl).

use crate::completion::Completion;
use crate::server::quirk::{Evidence, Quirk};
use crate::server::{ForwardInput, Parsed, ServerShape, Syntax};

#[derive(Debug, Clone, Copy)]
pub struct StripsReasoningTrailingWhitespace;

impl Quirk for StripsReasoningTrailingWhitespace {
    fn name(&self) -> &'static str {
        "strips_reasoning_trailing_whitespace"
    }

    fn forward(&self, _shape: &ServerShape, input: &ForwardInput, parsed: &mut Parsed) {
        if input.syntax != Syntax::Kimi {
            return;
        }
        if let Some(r) = &mut parsed.reasoning {
            r.truncate(r.trim_end().len());
        }
    }

    /// A reasoning that ends in whitespace was not stripped.
    fn evidence(&self, answer: &Completion, _stream: bool) -> Evidence {
        match answer.reasoning.as_deref() {
            Some(r) if r.trim_end() != r => {
                Evidence::Contradicts("reasoning keeps trailing whitespace")
            }
            _ => Evidence::Silent,
        }
    }

    fn reason(&self) -> Option<&'static str> {
        Some("server_strips_reasoning_trailing_whitespace")
    }
}
