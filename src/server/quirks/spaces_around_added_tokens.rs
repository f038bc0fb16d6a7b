//! The detokenizer's default puts one space around every added token (vLLM's
//! `spaces_between_special_tokens=True` with Kimi's slow tokenizer, vLLM #33457).

use crate::server::quirk::Quirk;

#[derive(Debug, Clone, Copy)]
pub struct SpacesAroundAddedTokens;

impl Quirk for SpacesAroundAddedTokens {
    fn name(&self) -> &'static str {
        "spaces_around_added_tokens"
    }

    fn reason(&self) -> Option<&'static str> {
        Some("spaces_around_special_tokens")
    }
}
