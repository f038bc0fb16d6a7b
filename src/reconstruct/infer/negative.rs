//! What a provider's stack does not do: negative evidence that lifts an upstream doubt.
//!
//! Behind OpenRouter every answer whose text begins with a space, or whose prompt count is one
//! fewer than a render ending with `<think>`, is held `ambiguous` (`reconstruct/upstream.rs`):
//! some stack might have spaced added tokens or let the model generate the opener. A provider
//! whose own answers show its stack does neither is rebuilt without that doubt.

use crate::reconstruct::fidelity::Reason;
use crate::reconstruct::{upstream, Reconstruction};

use super::{Answer, Convention, Evidence, GeneratesThink, Inverted};

/// The stack puts no spaces around added tokens: every field after one starts as the model
/// wrote it, so a space there is the model's. Shown by answers whose fields start without a
/// space (a spacing stack always puts one there); a spaced answer is unexplained (the model
/// may have written the space).
pub struct NoSpacesSpecialTokens;

impl NoSpacesSpecialTokens {
    fn readable(a: &Answer) -> bool {
        a.completion.completion_token_ids.is_none()
            && a.profile.family.spec().detokenizer_spaces
            && !a.options.spaces_around_special_tokens
    }
}

impl Convention for NoSpacesSpecialTokens {
    fn name(&self) -> &'static str {
        "no_spaces_special_tokens"
    }
    fn reason(&self) -> Reason {
        Reason::ProviderNoSpacesSpecialTokens
    }
    fn describe(&self) -> &'static str {
        "every text field after an added token starts without a space"
    }
    /// Where the doubt it lifts would be raised.
    fn applies(&self, a: &Answer) -> bool {
        Self::readable(a) && upstream::spaced_at_a_marker(a.completion)
    }
    fn shown(&self, a: &Answer) -> Option<Evidence> {
        if !Self::readable(a) {
            return Some(Evidence::Silent);
        }
        Some(match upstream::marker_spacing(a.completion) {
            upstream::Spacing::NoField => Evidence::Silent,
            upstream::Spacing::Unspaced => Evidence::Explains,
            upstream::Spacing::Spaced => Evidence::Unexplained,
        })
    }
    fn inverse(&self, a: &mut Inverted) {
        a.options.upstream_unspaced = true;
    }
}

/// The provider's template ends the prompt with the reasoning opener, as the render here does:
/// its prompt counts are the render's length (not one fewer, which a template that lets the
/// model generate the opener gives).
pub struct PromptsThink;

impl Convention for PromptsThink {
    fn name(&self) -> &'static str {
        "prompts_think"
    }
    fn reason(&self) -> Reason {
        Reason::ProviderPromptsThink
    }
    fn describe(&self) -> &'static str {
        "prompt count = the render's, which ends with the reasoning opener"
    }
    fn applies(&self, a: &Answer) -> bool {
        a.completion.prompt_token_ids.is_none()
            && prompt_count(a).is_some()
            && GeneratesThink.applies(a)
    }
    fn inverse(&self, a: &mut Inverted) {
        a.options.upstream_prompts_think = true;
    }
    /// Named where the count is one fewer than the render (the doubt it lifts).
    fn names(&self, a: &Answer, rebuilt: &Reconstruction) -> bool {
        prompt_count(a).is_some_and(|n| n + 1 == rebuilt.prompt_ids.len() as u64)
    }
    /// The count against the render's length (the default rebuild's prompt).
    fn evidence(
        &self,
        answer: &Answer,
        default: &Reconstruction,
        _conventional: &Reconstruction,
    ) -> Evidence {
        let rendered = default.prompt_ids.len() as u64;
        match prompt_count(answer) {
            Some(n) if n == rendered => Evidence::Explains,
            Some(n) if n + 1 == rendered => Evidence::Contradicts,
            _ => Evidence::Unexplained,
        }
    }
}

fn prompt_count(a: &Answer) -> Option<u64> {
    a.completion.usage.as_ref().and_then(|u| u.prompt_tokens)
}
