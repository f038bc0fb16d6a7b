//! SGLang 0.5.23's `llama3` detector, not streamed, looks for calls only in a text that starts
//! with `{` or holds `<|python_tag|>` (`function_call/llama32_detector.py`, `detect_and_parse`);
//! vLLM's `llama3_json` finds them after text too. The model's `Let me check. {"name": …}` is
//! answered as all content, no call (tests/data/llama3/sglang_shapes.jsonl).

use crate::model::family::llama3::PYTHON_TAG;
use crate::model::family::Syntax;
use crate::server::quirk::Quirk;
use crate::server::{ForwardInput, Parsed, ServerShape};

#[derive(Debug, Clone, Copy)]
pub struct ParsesOnlyALeadingCall;

impl Quirk for ParsesOnlyALeadingCall {
    fn name(&self) -> &'static str {
        "parses_only_a_leading_call"
    }

    fn forward(&self, _shape: &ServerShape, input: &ForwardInput, parsed: &mut Parsed) {
        let text = input.text;
        if input.syntax != Syntax::Llama3Json
            || input.stream
            || parsed.calls.is_empty()
            || text.starts_with('{')
            || text.contains(PYTHON_TAG)
        {
            return;
        }
        parsed.calls.clear();
        parsed.content = Some(text.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::ParsedCall;

    #[test]
    fn text_before_the_call_makes_it_all_content() {
        let text = "Let me check. {\"name\": \"f\", \"parameters\": {}}";
        let input = ForwardInput {
            text,
            cut: false,
            stream: false,
            spaces: false,
            thinking: false,
            tools_declared: true,
            history_calls: 0,
            syntax: Syntax::Llama3Json,
            prompt_closes_reasoning: false,
            first_token: None,
            tools: None,
        };
        let mut parsed = Parsed {
            calls: vec![ParsedCall {
                id: String::new(),
                name: "f".into(),
                arguments: "{}".into(),
            }],
            ..Parsed::default()
        };
        let shape = crate::server::shape(crate::api::ServerKind::Sglang, None);
        ParsesOnlyALeadingCall.forward(shape, &input, &mut parsed);
        assert_eq!(parsed.content.as_deref(), Some(text));
        assert!(parsed.calls.is_empty());
    }
}
