//! The reasoning's trailing whitespace is stripped, streamed or not (vLLM 0.33 holds it back in
//! a stream too), measured on vLLM's Kimi parser (tests/data/server_shapes/kimi_k25.jsonl); the qwen3 and deepseek parsers
//! strip nothing (qwen3.jsonl, deepseek_v3.jsonl).

use crate::model::family::kimi::{reasoning_end, END_OF_TURN};
use crate::server::quirk::{Evidence, Quirk, Seen};
use crate::server::{parser_traits, ForwardInput, Parsed, ServerShape, Site, SiteInput};

#[derive(Debug, Clone, Copy)]
pub struct StripsReasoningTrailingWhitespace;

impl Quirk for StripsReasoningTrailingWhitespace {
    fn name(&self) -> &'static str {
        "strips_reasoning_trailing_whitespace"
    }

    fn forward(&self, _shape: &ServerShape, input: &ForwardInput, parsed: &mut Parsed) {
        if !parser_traits(input.syntax).strips_reasoning_trailing_whitespace {
            return;
        }
        if let Some(r) = &mut parsed.reasoning {
            r.truncate(r.trim_end().len());
        }
    }

    /// The reasoning ends at the first `</think>`, section opener or call opener: its trailing
    /// whitespace was right before it. With none of them the whole stream is reasoning (a
    /// `length` cut inside it, or an answer that never closed it): its end is the site, before
    /// the end-of-turn token if there is one (`.\n\n` and `.` are one token each, so only the
    /// count can tell, and often it cannot).
    fn sites(&self, _shape: &ServerShape, input: &SiteInput, text: &str) -> Vec<Site> {
        if !parser_traits(input.syntax).strips_reasoning_trailing_whitespace || !input.thinking {
            return Vec::new();
        }
        let marker = reasoning_end(text).map(|(at, _)| at);
        let end = || text.strip_suffix(END_OF_TURN).unwrap_or(text).len();
        let at = marker.unwrap_or_else(end);
        vec![Site {
            at,
            reason: "server_strips_reasoning_trailing_whitespace",
        }]
    }

    /// A reasoning that ends in whitespace was not stripped (by the Kimi parser: with the
    /// family known, the forward check judges it).
    fn evidence(&self, seen: &Seen) -> Evidence {
        let Some(answer) = seen.answer.filter(|_| !seen.forward_checked) else {
            return Evidence::Silent;
        };
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
