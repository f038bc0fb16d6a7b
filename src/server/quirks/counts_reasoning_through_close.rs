//! `usage.reasoning_tokens` counts the answer's tokens up to and including its first reasoning
//! close (all of them when there is none) while thinking is on: SGLang 0.5.23's
//! `Req.update_reasoning_tokens`, sent as `usage.reasoning_tokens` and
//! `usage.completion_tokens_details.reasoning_tokens`. It tells a cut right after
//! `</think><|tool_calls_section_begin|>` from one after an unclosed reasoning's opener.

use crate::server::quirk::Quirk;
use crate::server::UsageInput;

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
        let close = input.reasoning_close.unwrap_or_default();
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
