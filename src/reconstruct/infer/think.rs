//! A template that lets the model generate the reasoning opener.

use crate::model::Profile;
use crate::reconstruct::fidelity::Reason;
use crate::reconstruct::Reconstruction;

use super::{counted, Answer, Convention, Inverted};

/// The provider's template ends the prompt before `<think>` and the model generates it
/// (AtlasCloud K2.5): one token more in the completion count, one fewer in the prompt count,
/// than a render that ends with `<think>`. The inverse rebuilds with the render's prompt and the
/// counts moved back, then moves the opener from the prompt's end to the completion's start.
pub struct GeneratesThink;

impl GeneratesThink {
    fn opener(profile: &Profile) -> Option<u32> {
        let close = profile.reasoning_close()?;
        profile.tokenizer.token_to_id(&close.replacen("</", "<", 1))
    }
}

impl Convention for GeneratesThink {
    fn name(&self) -> &'static str {
        "generates_think"
    }
    fn reason(&self) -> Reason {
        Reason::ProviderGeneratesThink
    }
    fn describe(&self) -> &'static str {
        "completion count = rebuilt + 1 with the prompt's reasoning opener generated"
    }
    fn applies(&self, a: &Answer) -> bool {
        a.completion.completion_token_ids.is_none()
            && a.completion.prompt_token_ids.is_none()
            && counted(a.completion).is_some_and(|n| n > 0)
            && Self::opener(a.profile).is_some()
            && a.profile
                .thinking_enabled(a.request.chat_template_kwargs.as_ref())
    }
    fn count_shift(&self) -> Option<i64> {
        Some(1)
    }
    fn inverse(&self, a: &mut Inverted) {
        if let Some(usage) = a.completion.usage.as_mut() {
            if let Some(n) = usage.completion_tokens.as_mut() {
                *n = n.saturating_sub(1);
            }
            if let Some(n) = usage.prompt_tokens.as_mut() {
                *n += 1;
            }
        }
        // The limit counted the generated opener too.
        if let Some(n) = a.request.max_tokens.as_mut() {
            *n = n.saturating_sub(1);
        }
    }
    fn after(&self, profile: &Profile, r: &mut Reconstruction) -> bool {
        let opener = Self::opener(profile);
        if opener.is_none() || r.prompt_ids.last().copied() != opener {
            return false;
        }
        if let Some(id) = r.prompt_ids.pop() {
            r.completion_ids.insert(0, id);
        }
        true
    }
}
