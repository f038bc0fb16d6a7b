//! SGLang 0.5.23's `deepseekv31` and `qwen25` detectors, not streamed, keep the content before
//! the tool-call marker as `text[:idx].strip()` (`function_call/deepseekv31_detector.py`,
//! `function_call/qwen25_detector.py`, `detect_and_parse`): the whitespace at both ends of a
//! content the model followed with tool calls is gone, the model's `Checking.\n<tool_call>`
//! answered as `Checking.` (tests/data/{deepseek_v31,qwen3_2507}/sglang_shapes.jsonl). Streamed,
//! the detectors send the text as it comes. The count decides the whitespace where it can;
//! where it cannot, the sample is ambiguous for this reason.

use crate::model::family::{deepseek_v3, deepseek_v31, qwen3, Syntax};
use crate::server::quirk::Quirk;
use crate::server::{ForwardInput, Parsed, ServerShape, Site, SiteInput};

const REASON: &str = "server_strips_content_before_calls";

/// The syntaxes whose SGLang detector strips so: their tool-call marker and reasoning close.
fn markers(syntax: Syntax) -> Option<(&'static str, &'static str)> {
    match syntax {
        Syntax::DeepseekV31 => Some((deepseek_v3::SECTION_BEGIN, deepseek_v31::THINK_CLOSE)),
        Syntax::Hermes => Some((qwen3::CALL_OPEN, qwen3::THINK_CLOSE)),
        _ => None,
    }
}

#[derive(Debug, Clone, Copy)]
pub struct StripsContentBeforeCalls;

impl Quirk for StripsContentBeforeCalls {
    fn name(&self) -> &'static str {
        "strips_content_before_calls"
    }

    fn reason(&self) -> Option<&'static str> {
        Some(REASON)
    }

    fn forward(&self, _shape: &ServerShape, input: &ForwardInput, parsed: &mut Parsed) {
        let Some((marker, _)) = markers(input.syntax) else {
            return;
        };
        if input.stream || parsed.calls.is_empty() || !input.text.contains(marker) {
            return;
        }
        if let Some(content) = parsed.content.as_mut() {
            let kept = content.trim();
            if kept.len() != content.len() {
                *content = kept.to_string();
            }
        }
    }

    /// The content's start (after the reasoning's close when thinking) and its end at the
    /// marker, once where they meet.
    fn sites(&self, _shape: &ServerShape, input: &SiteInput, text: &str) -> Vec<Site> {
        let Some((marker, close)) = markers(input.syntax) else {
            return Vec::new();
        };
        if input.stream || input.answer.tool_calls.is_empty() {
            return Vec::new();
        }
        let Some(end) = text.find(marker) else {
            return Vec::new();
        };
        let start = match text[..end].find(close) {
            Some(at) if input.thinking => at + close.len(),
            _ => 0,
        };
        let mut sites = vec![Site {
            at: start,
            reason: REASON,
        }];
        if end > start {
            sites.push(Site {
                at: end,
                reason: REASON,
            });
        }
        sites
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(text: &str, stream: bool) -> ForwardInput<'_> {
        ForwardInput {
            text,
            cut: false,
            stream,
            spaces: false,
            thinking: false,
            tools_declared: true,
            history_calls: 0,
            syntax: Syntax::Hermes,
            prompt_closes_reasoning: false,
            first_token: None,
            tools: None,
        }
    }

    #[test]
    fn strips_both_ends_beside_calls_not_streamed() {
        // tests/data/qwen3_2507/sglang_shapes.jsonl: `Checking.\n<tool_call>…` answered
        // `Checking.` not streamed, `Checking.\n` streamed.
        let text = "Checking.\n<tool_call>\n{}\n</tool_call>";
        let call = crate::server::ParsedCall {
            id: String::new(),
            name: "f".into(),
            arguments: "{}".into(),
        };
        for (stream, want) in [(false, "Checking."), (true, "Checking.\n")] {
            let mut parsed = Parsed {
                content: Some("Checking.\n".into()),
                calls: vec![call.clone()],
                ..Parsed::default()
            };
            let shape = crate::server::shape(crate::api::ServerKind::Sglang, None);
            StripsContentBeforeCalls.forward(shape, &input(text, stream), &mut parsed);
            assert_eq!(parsed.content.as_deref(), Some(want));
        }
    }
}
