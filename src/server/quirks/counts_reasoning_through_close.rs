//! `usage.reasoning_tokens` counts the answer's tokens up to and including its first reasoning
//! close (all of them when there is none) while thinking is on: SGLang 0.5.23's
//! `Req.update_reasoning_tokens`, sent as `usage.reasoning_tokens` and
//! `usage.completion_tokens_details.reasoning_tokens`. It tells a cut right after
//! `</think><|tool_calls_section_begin|>` from one after an unclosed reasoning's opener.
//!
//! The close is what SGLang's reasoning parser for the syntax ends on (`parser/reasoning_parser.py`):
//! the family's, or harmony's `<|end|>` (`GptOssDetector`), which ends any message, not only the
//! analysis (tests/data/gpt_oss/sglang_shapes.jsonl). SGLang matches the close's own ids in the
//! token stream: a close that is no single token (DeepSeek-V3's tokenizer spells `</think>` in
//! pieces that merge with the text before it, tests/data/deepseek_v31/sglang_shapes.jsonl) may
//! or may not be matched, so its count is not checked.

use crate::model::family::Syntax;
use crate::server::quirk::Quirk;
use crate::server::UsageInput;

/// Harmony's message end, where SGLang's `gpt-oss` reasoning parser ends the reasoning.
const HARMONY_END: &str = "<|end|>";

#[derive(Debug, Clone, Copy)]
pub struct CountsReasoningThroughClose;

impl Quirk for CountsReasoningThroughClose {
    fn name(&self) -> &'static str {
        "counts_reasoning_through_close"
    }

    /// `usage.reasoning_tokens` while thinking is on: the tokens through the first reasoning
    /// close, or every token when there is none.
    fn usage_agrees(&self, text: &str, input: &UsageInput) -> Result<(), String> {
        let reported = input.usage.and_then(|u| u.reasoning_tokens);
        let (true, Some(reported)) = (input.thinking, reported) else {
            return Ok(());
        };
        let close = match input.syntax {
            Syntax::Harmony => HARMONY_END,
            _ => input.reasoning_close.unwrap_or_default(),
        };
        if !close.is_empty() && (input.count)(close) != 1 {
            return Ok(());
        }
        let counted = match text.find(close).filter(|_| !close.is_empty()) {
            // A special token: the ids before it are the prefix's own.
            Some(at) => (input.count)(&text[..at + close.len()]) as u64,
            None => match input.usage.and_then(|u| u.completion_tokens) {
                Some(all) => all,
                None => return Ok(()),
            },
        };
        if counted == reported {
            Ok(())
        } else {
            Err(format!(
                "usage.reasoning_tokens ({reported}, this stream {counted})"
            ))
        }
    }
}
