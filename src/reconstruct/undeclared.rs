//! What a known server shape could have hidden from an answer whose server was not declared.
//!
//! The `generic` shape assumes nothing and lets the count decide, so an answer that vLLM,
//! SGLang, llama.cpp or OpenRouter sent reads back as the text it shows: trailing reasoning
//! whitespace vLLM stripped, a call id SGLang re-synthesized, spaces vLLM put around added tokens
//! are then taken for the model's (tests/generic_shape.rs: 146 of the server-shape corpus'
//! answers rebuilt wrong and classed exact). So a `generic` rebuild stays exact only where every
//! known shape is ruled out by the answer itself: rebuilt under that shape the answer is
//! inconsistent (the shape cannot have sent it), or it gives the same ids, exact. Otherwise the
//! sample is `ambiguous`, its reasons `generic_could_hide` and what that shape left open.

use crate::server::{self, ServerShape};

use super::fidelity::{Fidelity, FidelityClass, Reason};
use super::{reconstruct_parsed, Exchange, ReconstructOptions};

/// A known shape, and whether its detokenizer spaced added tokens, that an undeclared server
/// could be.
struct Suspect {
    shape: &'static ServerShape,
    spaces: bool,
}

/// Every known shape of the server module's list, in each of its spacings
/// ([`ServerShape::spacings`]: vLLM's with and without `spaces_between_special_tokens`), the
/// spaced ones only where the family's detokenizer puts spaces (`spaced`).
fn suspects(spaced: bool) -> Vec<Suspect> {
    let mut all = Vec::new();
    for shape in server::SHAPES.iter().copied().filter(|s| s.known) {
        for &spaces in shape.spacings().iter().filter(|&&s| spaced || !s) {
            all.push(Suspect { shape, spaces });
        }
    }
    all
}

impl Suspect {
    fn describe(&self) -> String {
        if self.spaces {
            format!(
                "{} with spaces around special tokens",
                self.shape.describe()
            )
        } else {
            self.shape.describe()
        }
    }
}

/// Lower an exact `generic` rebuild (`ids`, `fidelity`) to `ambiguous` where a known shape,
/// not ruled out by the answer, reads it otherwise or leaves it open.
pub(super) fn flag_hidden_by_known_shapes(
    x: &Exchange,
    ids: &[u32],
    fidelity: &mut Fidelity,
    warnings: &mut Vec<String>,
) {
    let (profile, request, completion, options) = (x.profile, x.request, x.completion, x.options);
    if x.shape.known || !fidelity.class.is_exact() || completion.completion_token_ids.is_some() {
        return;
    }
    let mut open = Vec::new();
    let mut reasons = Vec::new();
    for suspect in suspects(profile.family.spec().detokenizer_spaces) {
        let as_known = ReconstructOptions {
            spaces_around_special_tokens: suspect.spaces,
            kind: suspect.shape.kind,
            ..options.clone()
        };
        let Ok(got) = reconstruct_parsed(profile, request, completion, &as_known, suspect.shape)
        else {
            continue;
        };
        let class = got.fidelity.class;
        let ruled_out =
            class == FidelityClass::Inconsistent || (class.is_exact() && got.completion_ids == ids);
        if ruled_out {
            continue;
        }
        open.push(suspect.describe());
        reasons.extend(got.fidelity.reasons.iter().copied().filter(|r| hides(*r)));
    }
    if open.is_empty() {
        return;
    }
    fidelity.at_most(FidelityClass::Ambiguous);
    fidelity.because(Reason::GenericCouldHide);
    for reason in reasons {
        fidelity.because(reason);
    }
    warnings.push(format!(
        "ambiguous: the server's kind was not declared and nothing in the answer rules out {}, which would have sent the same answer for other ids (declare the server's kind, or let its other answers show it)",
        open.join(", ")
    ));
}

/// A reason that names something a shape hides (not one about the prompt or the count alone).
fn hides(reason: Reason) -> bool {
    !matches!(
        reason,
        Reason::PromptTokensDisagree | Reason::UsageDisagrees | Reason::NoUsage
    )
}
