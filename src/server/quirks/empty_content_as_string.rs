//! Empty content is sent as `""`, never `null` (SGLang, OpenRouter, llama.cpp).

use serde_json::Value;

use crate::server::quirk::{Evidence, Quirk, Seen};
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

    /// An empty content beside reasoning or calls, sent as `""` or as `null`.
    fn evidence(&self, seen: &Seen) -> Evidence {
        let message = &seen.body["choices"][0]["message"];
        let text = |field: &str| {
            message
                .get(field)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        let reasoning = !text("reasoning").is_empty() || !text("reasoning_content").is_empty();
        let calls = message
            .get("tool_calls")
            .and_then(Value::as_array)
            .is_some_and(|c| !c.is_empty());
        if !text("content").is_empty() || !(reasoning || calls) {
            return Evidence::Silent;
        }
        if message.get("content").is_none_or(Value::is_null) {
            Evidence::Contradicts("empty content is null")
        } else {
            Evidence::Shows("empty content is \"\"")
        }
    }
}
