//! SGLang 0.5.23's `qwen3_coder` detector, not streamed, keeps the text before the first
//! `<tool_call>` as it is (`function_call/qwen3_coder_detector.py`, `detect_and_parse`:
//! `normal_text = text[:start_idx]`), where vLLM strips it (or sends none when it is
//! whitespace); without `<tool_call>` (a bare `<function=`) it parses nothing and the whole text
//! is content (tests/data/qwen3_coder/sglang_shapes.jsonl). Streamed answers are left to the
//! family's parser.

use crate::model::family::qwen3::CALL_OPEN;
use crate::model::family::Syntax;
use crate::server::quirk::Quirk;
use crate::server::{ForwardInput, Parsed, ServerShape};

#[derive(Debug, Clone, Copy)]
pub struct KeepsContentBeforeCalls;

impl Quirk for KeepsContentBeforeCalls {
    fn name(&self) -> &'static str {
        "keeps_content_before_calls"
    }

    fn forward(&self, _shape: &ServerShape, input: &ForwardInput, parsed: &mut Parsed) {
        if input.syntax != Syntax::Qwen3Coder || input.stream || parsed.calls.is_empty() {
            return;
        }
        match input.text.find(CALL_OPEN) {
            Some(at) => {
                let before = &input.text[..at];
                parsed.content = (!before.is_empty()).then(|| before.to_string());
            }
            None => {
                parsed.calls.clear();
                parsed.content = Some(input.text.to_string());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::ParsedCall;

    fn forward(text: &str) -> Parsed {
        let input = ForwardInput {
            text,
            cut: false,
            stream: false,
            spaces: false,
            thinking: false,
            tools_declared: true,
            history_calls: 0,
            syntax: Syntax::Qwen3Coder,
            prompt_closes_reasoning: false,
            first_token: None,
            tools: None,
        };
        let mut parsed = Parsed {
            content: Some("Hi.".into()),
            calls: vec![ParsedCall {
                id: String::new(),
                name: "f".into(),
                arguments: "{}".into(),
            }],
            ..Parsed::default()
        };
        KeepsContentBeforeCalls.forward(
            crate::server::shape(crate::api::ServerKind::Sglang, None),
            &input,
            &mut parsed,
        );
        parsed
    }

    #[test]
    fn the_text_before_the_first_call_as_written() {
        // tests/data/qwen3_coder/sglang_shapes.jsonl: `Hi.\n\n<tool_call>…` answered `Hi.\n\n`.
        let p = forward("Hi.\n\n<tool_call>\n<function=f>\n</function>\n</tool_call>");
        assert_eq!(p.content.as_deref(), Some("Hi.\n\n"));
        assert_eq!(p.calls.len(), 1);
        // A bare `<function=`: nothing parsed, all content.
        let bare = "<function=f>\n</function>";
        let p = forward(bare);
        assert_eq!(p.content.as_deref(), Some(bare));
        assert!(p.calls.is_empty());
    }
}
