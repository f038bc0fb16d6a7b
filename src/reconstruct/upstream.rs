//! What an upstream stack that the answer does not name may have done to it.
//!
//! Behind OpenRouter (and behind a server whose kind was not declared) each answer comes from
//! one of several serving stacks, each with its own conventions (tests/data/provider_conventions,
//! made by tests/data/gen/make_provider_conventions.py). Two of them leave an answer that reads
//! back consistently, count included, as other ids than the model's:
//!
//! - **spaces around added tokens** (vLLM's default `spaces_between_special_tokens` under the
//!   slow Kimi tokenizer): `" The user…"` after `<think>`, `" Oi!"` after `</think>`. `" Oi"` and
//!   `"Oi"` are one token each, so the count cannot tell the space from the model's;
//! - **`<think>` generated, not prompted**: the provider's template ends the prompt before
//!   `<think>` and the model writes it, so the completion has one token more and the prompt one
//!   fewer than the render here; a cut answer then has room for one token the text does not show.
//!
//! Such an answer is not classed exact (it is `ambiguous`, with the reason naming the
//! convention) unless the endpoint was declared, which says what its stack does, or the
//! provider's other answers show its stack does not do it (`reconstruct/infer/negative.rs`).

use crate::api::ServerKind;
use crate::completion::Completion;

use super::fidelity::{Fidelity, FidelityClass, Reason};
use super::Exchange;

/// Lower an exact class where an unnamed upstream's convention would explain the answer as
/// well as the ids rebuilt.
pub(super) fn flag_unnamed_upstream(
    x: &Exchange,
    prompt_count: Option<u64>,
    fidelity: &mut Fidelity,
    warnings: &mut Vec<String>,
) {
    let unnamed = x.shape.kind == ServerKind::OpenRouter || !x.shape.known;
    if !unnamed || !fidelity.class.is_exact() {
        return;
    }
    if x.profile.family.spec().detokenizer_spaces
        && !x.options.spaces_around_special_tokens
        && !x.options.upstream_unspaced
        && spaced_at_a_marker(x.completion)
    {
        fidelity.at_most(FidelityClass::Ambiguous);
        fidelity.because(Reason::UpstreamMaySpaceSpecialTokens);
        warnings.push(format!(
            "ambiguous: a text field begins or ends with a space where an added token sat; {} does not say whether its stack puts spaces around added tokens (vLLM's spaces_between_special_tokens), so the space may be the server's, not the model's",
            x.shape.describe()
        ));
    }
    if !x.options.upstream_prompts_think
        && prompt_count.is_some_and(|n| n + 1 == x.prompt_ids.len() as u64)
        && prompt_opens_reasoning(x)
    {
        fidelity.at_most(FidelityClass::Ambiguous);
        fidelity.because(Reason::UpstreamMayGenerateThink);
        warnings.push(format!(
            "ambiguous: the server counted one prompt token fewer than the render, which ends by opening the reasoning; a stack behind {} whose template lets the model generate that opener answers so, and then the completion starts with it",
            x.shape.describe()
        ));
    }
}

/// A text field begins with a space (an added token precedes every field: the prompt's reasoning
/// opener or `<|im_middle|>`, or `</think>`), or the content ends with one before tool calls.
pub(super) fn spaced_at_a_marker(c: &Completion) -> bool {
    let starts = |t: &Option<String>| t.as_deref().is_some_and(|t| t.starts_with(' '));
    let content_before_calls =
        !c.tool_calls.is_empty() && c.content.as_deref().is_some_and(|t| t.ends_with(' '));
    starts(&c.reasoning) || starts(&c.content) || content_before_calls
}

/// What an answer's text fields show of spaces around added tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Spacing {
    /// No non-empty reasoning or content.
    NoField,
    /// Every non-empty field starts with a space, as a spacing stack always sends it.
    Spaced,
    /// A non-empty field starts without a space: no spacing stack sent this answer.
    Unspaced,
}

/// How the answer's fields start. An added token precedes every field (the prompt's reasoning
/// opener or `<|im_middle|>`, or `</think>`), and a stack that spaces added tokens puts a space
/// after each: a field without one was not spaced. (vLLM strips only the reasoning's trailing
/// whitespace and nulls whitespace-only content: make_provider_conventions.py's `vllm_view`.)
pub(super) fn marker_spacing(c: &Completion) -> Spacing {
    let fields = [c.reasoning.as_deref(), c.content.as_deref()];
    let mut fields = fields
        .into_iter()
        .flatten()
        .filter(|t| !t.is_empty())
        .peekable();
    if fields.peek().is_none() {
        return Spacing::NoField;
    }
    if fields.all(|t| t.starts_with(' ')) {
        Spacing::Spaced
    } else {
        Spacing::Unspaced
    }
}

/// The rendered prompt ends with the family's reasoning opener (the close's tag without the
/// slash: `<think>` for `</think>`, in every known family).
fn prompt_opens_reasoning(x: &Exchange) -> bool {
    let Some(close) = x.profile.reasoning_close() else {
        return false;
    };
    let opener = close.replacen("</", "<", 1);
    let opener_id = x.profile.tokenizer.token_to_id(&opener);
    opener_id.is_some() && x.prompt_ids.last().copied() == opener_id
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(reasoning: Option<&str>, content: Option<&str>) -> Completion {
        Completion {
            reasoning: reasoning.map(str::to_string),
            content: content.map(str::to_string),
            ..Completion::default()
        }
    }

    #[test]
    fn a_field_without_the_space_a_spacing_stack_always_puts_says_unspaced() {
        // Chutes in tests/data/provider_conventions: `" The user…"`, `" Of course!…"`.
        let spaced = answer(Some(" The user wants"), Some(" Of course!"));
        assert_eq!(marker_spacing(&spaced), Spacing::Spaced);
        // Fireworks: neither field starts with a space.
        let unspaced = answer(Some("The user wants"), Some("Of course!"));
        assert_eq!(marker_spacing(&unspaced), Spacing::Unspaced);
        // One field is enough: a spacing stack would have spaced both.
        let mixed = answer(Some(" The user wants"), Some("Of course!"));
        assert_eq!(marker_spacing(&mixed), Spacing::Unspaced);
        // Empty fields say nothing (a call straight after the reasoning opener).
        assert_eq!(marker_spacing(&answer(None, Some(""))), Spacing::NoField);
    }
}
