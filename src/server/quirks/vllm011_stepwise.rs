//! vLLM 0.11.2's stream, modelled token by token from the server's own code
//! ([`vllm011_stream`](crate::server::vllm011_stream)): every streaming quirk of that line
//! exactly, and the section buffer's cuts at delta boundaries that the text alone does not show
//! ([`LeaksSectionBuffer`](super::LeaksSectionBuffer)). Its forward effect is
//! [`server::forward_tokens`](crate::server::forward_tokens)'s answer for a streamed Kimi text
//! whose tokens are known.

use super::EmptyContentAsString;
use crate::server::quirk::Quirk;
use crate::server::vllm011_stream::{self, Token};
use crate::server::ReadBackRules;
use crate::server::{parser_traits, ForwardInput, Parsed, ServerShape};

#[derive(Debug, Clone, Copy)]
pub struct Vllm011Stepwise;

impl Quirk for Vllm011Stepwise {
    fn name(&self) -> &'static str {
        "vllm011_stepwise"
    }

    fn read_back(&self, rules: &mut ReadBackRules) {
        rules.stream_by_token = true;
    }

    fn forward_tokens(
        &self,
        shape: &ServerShape,
        input: &ForwardInput,
        tokens: &[Token],
    ) -> Option<Parsed> {
        if !(shape.parses && input.stream && parser_traits(input.syntax).stream_ported) {
            return None;
        }
        let mut parsed = vllm011_stream::stream(
            tokens,
            &vllm011_stream::StreamRequest {
                spaces: input.spaces,
                tools: input.tools_declared,
                prompt_closes_reasoning: input.prompt_closes_reasoning,
                stopped: !input.cut,
            },
        );
        if parsed.content.as_deref() == Some("") {
            parsed.content = None;
        }
        if parsed.content_after_calls.as_deref() == Some("") {
            parsed.content_after_calls = None;
        }
        if shape.quirks.has::<EmptyContentAsString>() {
            EmptyContentAsString::apply(&mut parsed);
        }
        Some(parsed)
    }
}
