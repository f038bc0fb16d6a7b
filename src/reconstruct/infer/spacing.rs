//! Spaces around added tokens.

use crate::api::ServerKind;
use crate::reconstruct::fidelity::Reason;
use crate::reconstruct::{upstream, Reconstruction};
use crate::server::openrouter;
use crate::server::quirk::Quirks;
use crate::server::quirks::{
    NullsWhitespaceContent, SpacesAroundAddedTokens, StripsReasoningTrailingWhitespace,
    StripsStreamedArguments,
};
use crate::server::ServerShape;

use super::{doubt, Answer, Convention, Evidence, Inverted};

/// The stack puts a space on each side of every added token (vLLM's default
/// `spaces_between_special_tokens` under Kimi's slow tokenizer: Chutes, Inceptron, ModelRun).
/// Such a stack starts every text field that follows an added token with a space, so an answer
/// with one that does not contradicts it.
pub struct SpacesSpecialTokens;

impl Convention for SpacesSpecialTokens {
    fn name(&self) -> &'static str {
        "spaces_special_tokens"
    }
    fn reason(&self) -> Reason {
        Reason::ProviderSpacesSpecialTokens
    }
    fn describe(&self) -> &'static str {
        "every text field after an added token starts with a space"
    }
    fn applies(&self, a: &Answer) -> bool {
        a.completion.completion_token_ids.is_none()
            && a.profile.family.spec().detokenizer_spaces
            && !a.options.spaces_around_special_tokens
            && upstream::marker_spacing(a.completion) != upstream::Spacing::NoField
    }
    /// An answer with a field a spacing stack would have spaced, unspaced, contradicts it.
    fn shown(&self, a: &Answer) -> Option<Evidence> {
        let unspaced = upstream::marker_spacing(a.completion) == upstream::Spacing::Unspaced;
        (self.applies(a) && unspaced).then_some(Evidence::Contradicts)
    }
    fn inverse(&self, a: &mut Inverted) {
        a.options.spaces_around_special_tokens = true;
        if a.shape.kind == ServerKind::OpenRouter {
            a.shape = &SPACING_UPSTREAM_BEHIND_OPENROUTER;
        }
    }
    /// A spaced answer is explained unless the spaced reading leaves more doubt than the
    /// default; an unspaced one contradicts it ([`evidence_of`]).
    fn evidence(
        &self,
        _answer: &Answer,
        default: &Reconstruction,
        conventional: &Reconstruction,
    ) -> Evidence {
        if doubt(conventional) <= doubt(default) {
            Evidence::Explains
        } else {
            Evidence::Contradicts
        }
    }
}

/// OpenRouter in front of a stack that spaces added tokens. The spaces are vLLM's detokenizer's
/// (`spaces_between_special_tokens`), and vLLM's Kimi reasoning parser strips the reasoning's
/// trailing whitespace, which then includes the space before `</think>`, turns
/// whitespace-only content into `null`, and streams each call's arguments with the spaces
/// around them (make_provider_conventions.py's `vllm_view`, checked against vLLM 0.33.0's own
/// answers): OpenRouter's shape with those.
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
