//! The provider's stack puts a space on each side of every added token (vLLM's default
//! `spaces_between_special_tokens` under Kimi's slow tokenizer: Chutes, Inceptron, ModelRun on
//! real traffic): `" The user…"` after `<think>`, `" Oi!"` after `</think>`. Behind OpenRouter
//! the upstream is vLLM, whose Kimi parsers then also strip the reasoning's trailing whitespace
//! (the space before `</think>`), send whitespace-only content before calls as `null`, and
//! stream each call's arguments with the spaces around them (tests/data/gen/make_provider_conventions.py's
//! `vllm_view`, checked there against vLLM 0.33.0's own answers).

use crate::api::ServerKind;
use crate::server::openrouter;
use crate::server::quirk::Quirks;
use crate::server::quirks::{
    NullsWhitespaceContent, SpacesAroundAddedTokens, StripsReasoningTrailingWhitespace,
    StripsStreamedArguments,
};
use crate::server::ServerShape;

/// OpenRouter in front of a vLLM upstream that spaces added tokens.
static SPACING_UPSTREAM_BEHIND_OPENROUTER: ServerShape = ServerShape {
    quirks: Quirks::on(&openrouter::SHAPE.quirks)
        .minus(&[&StripsStreamedArguments])
        .plus(&[
            &SpacesAroundAddedTokens,
            &StripsReasoningTrailingWhitespace,
            &NullsWhitespaceContent,
        ]),
    ..openrouter::SHAPE
};

/// The shape a provider of flavour shape `shape` answers with when it spaces added tokens: a
/// shape whose detokenizer already may (vLLM's) as it is, OpenRouter's with a spacing upstream.
pub fn shape(shape: &'static ServerShape) -> Result<&'static ServerShape, String> {
    if shape.quirks.has::<SpacesAroundAddedTokens>() {
        Ok(shape)
    } else if shape.kind == ServerKind::OpenRouter {
        Ok(&SPACING_UPSTREAM_BEHIND_OPENROUTER)
    } else {
        Err(format!(
            "spaces_special_tokens: the {} shape's detokenizer never spaces added tokens (use the openrouter or vllm flavour)",
            shape.describe()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openrouter_gets_a_spacing_upstream_and_sglang_cannot() {
        let spaced = shape(&openrouter::SHAPE).unwrap();
        assert!(spaced.quirks.has::<SpacesAroundAddedTokens>());
        assert!(!spaced.quirks.has::<StripsStreamedArguments>());
        assert_eq!(spaced.kind, ServerKind::OpenRouter);
        let vllm = &crate::server::vllm::SHAPE;
        assert_eq!(shape(vllm).unwrap(), vllm);
        assert!(shape(&crate::server::sglang::SHAPE).is_err());
    }
}
