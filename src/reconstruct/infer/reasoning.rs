//! Which field carries a provider's reasoning.
//!
//! Stacks differ (`server/mod.rs`'s `ReasoningField`): `reasoning_content` (SGLang, llama.cpp,
//! Moonshot's API), `reasoning` (vLLM ≥ 0.11, OpenRouter), both at once (vLLM 0.10),
//! only OpenRouter's `reasoning_details`, or none, the reasoning left inline in `content` up to
//! the family's close marker (a stack with no reasoning parser). Read from the answer as it
//! came (the journaled body; a stream is journaled assembled with its field names,
//! `api/assemble.rs`), since [`crate::completion::Completion`] forgets the name.

use serde_json::Value;

/// The field that carries the answer's reasoning: `reasoning_content`, `reasoning`,
/// `reasoning_content+reasoning` (the same text under both), `reasoning_details` (only there),
/// `content` (inline, before `close`, the family's reasoning close marker); `None` when the
/// answer shows no reasoning.
pub fn reasoning_field(close: Option<&str>, response: &Value) -> Option<&'static str> {
    let message = response.pointer("/choices/0/message")?;
    let text = |field: &str| {
        message
            .get(field)
            .and_then(Value::as_str)
            .is_some_and(|t| !t.is_empty())
    };
    match (text("reasoning_content"), text("reasoning")) {
        (true, true) => return Some("reasoning_content+reasoning"),
        (true, false) => return Some("reasoning_content"),
        (false, true) => return Some("reasoning"),
        (false, false) => {}
    }
    let details = message
        .get("reasoning_details")
        .and_then(Value::as_array)
        .is_some_and(|items| {
            items.iter().any(|d| {
                ["text", "summary"].iter().any(|f| {
                    d.get(*f)
                        .and_then(Value::as_str)
                        .is_some_and(|t| !t.is_empty())
                })
            })
        });
    if details {
        return Some("reasoning_details");
    }
    let close = close?;
    message
        .get("content")
        .and_then(Value::as_str)
        .is_some_and(|c| c.contains(close))
        .then_some("content")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn field(message: Value) -> Option<&'static str> {
        reasoning_field(
            Some("</think>"),
            &json!({"choices": [{"message": message}]}),
        )
    }

    #[test]
    fn each_field_is_named_as_sent() {
        // Shapes as tests/data/server_shapes and tests/data/provider_conventions send them.
        assert_eq!(
            field(
                json!({"reasoning": "r", "reasoning_details": [{"type": "reasoning.text", "text": "r"}], "content": "c"})
            ),
            Some("reasoning")
        );
        assert_eq!(
            field(json!({"reasoning_content": "r", "content": "c"})),
            Some("reasoning_content")
        );
        assert_eq!(
            field(json!({"reasoning_content": "r", "reasoning": "r"})),
            Some("reasoning_content+reasoning")
        );
        assert_eq!(
            field(
                json!({"reasoning": null, "reasoning_details": [{"type": "reasoning.text", "text": "r"}]})
            ),
            Some("reasoning_details")
        );
        assert_eq!(field(json!({"content": "r</think>c"})), Some("content"));
        assert_eq!(field(json!({"reasoning": "", "content": "c"})), None);
    }
}
