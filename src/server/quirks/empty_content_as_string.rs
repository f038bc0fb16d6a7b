//! Empty content is sent as `""`, never `null` (SGLang, OpenRouter, llama.cpp).

use crate::server::quirk::Quirk;
use crate::server::{ForwardInput, Parsed, ServerShape};

#[derive(Debug, Clone, Copy)]
pub struct EmptyContentAsString;

impl EmptyContentAsString {
    /// `None` content becomes `""`.
    pub fn apply(parsed: &mut Parsed) {
        if parsed.content.is_none() {
            parsed.content = Some(String::new());
        }
    }
}

impl Quirk for EmptyContentAsString {
    fn name(&self) -> &'static str {
        "empty_content_as_string"
    }

    fn forward(&self, _shape: &ServerShape, _input: &ForwardInput, parsed: &mut Parsed) {
        EmptyContentAsString::apply(parsed);
    }
}
