//! Messages as clients write them, made into what the servers hand the chat template.
//!
//! OpenAI clients send an assistant message that carries `tool_calls` with no `content` key,
//! or with `content: null`, and any message's `content` as a list of parts
//! (`[{"type": "text", "text": …}]`). transformers' `apply_chat_template` raises on some of
//! these (a template that concatenates `message['content']` with `+`), but the servers never
//! pass them through: vLLM (`vllm/renderers/chat_utils/chat_message.py`,
//! `parse_chat_message_content`) and SGLang (`sglang/srt/entrypoints/openai/serving_chat.py`
//! with `parser/jinja_template_utils.py`'s `process_content_for_template_format`) turn a missing
//! or `null` content into `""` and, for templates that read content as a string (vLLM's and
//! SGLang's AST check finds no loop over `message.content` in any template draftgen knows),
//! join a list's text parts into one string.
//!
//! A template that loops over the parts itself (Kimi's `render_content`) gets the list: SGLang
//! keeps it for such templates (its check also counts a template that mentions `image`), and so
//! does transformers, whose renders the Kimi parity corpora hold; vLLM's check does not see a
//! loop inside a macro and would join them.
//!
//! Where they differ: vLLM joins the parts with `"\n"`, SGLang with `" "`. One part (or none) is
//! the same text on both; several are rendered as vLLM does, and [`parts_join_differs`] says so
//! for the caller to flag.

use serde_json::{Map, Value};

/// The part types both servers read as text.
const TEXT_PART_TYPES: [&str; 2] = ["text", "input_text"];

/// The message as the servers hand it to the template: a missing or `null` content is `""`
/// (unless `keep_null_beside_tool_calls` and the message has tool calls: then it is `null`, see
/// [`FamilySpec::keeps_null_content_with_tool_calls`]), and a list of text parts is their texts
/// joined by `"\n"` unless `template_renders_parts`. Anything else is left as it is.
///
/// [`FamilySpec::keeps_null_content_with_tool_calls`]: super::family::FamilySpec::keeps_null_content_with_tool_calls
pub fn normalize_content(
    message: &Value,
    keep_null_beside_tool_calls: bool,
    template_renders_parts: bool,
) -> Value {
    let Value::Object(map) = message else {
        return message.clone();
    };
    let mut out: Map<String, Value> = map.clone();
    let has_calls = map.get("tool_calls").is_some_and(|c| !c.is_null());
    match map.get("content") {
        None | Some(Value::Null) if keep_null_beside_tool_calls && has_calls => {
            out.insert("content".into(), Value::Null);
        }
        None | Some(Value::Null) => {
            out.insert("content".into(), Value::from(""));
        }
        Some(Value::Array(parts)) if !template_renders_parts => {
            if let Some(texts) = text_parts(parts) {
                out.insert("content".into(), Value::from(texts.join("\n")));
            }
        }
        Some(_) => {}
    }
    Value::Object(out)
}

/// Whether a template's source loops over a message's content parts itself: a
/// `{% for … in X %}` tag whose `X` is `message['content']` or `message.content`, or whose loop
/// variable is `content` (Kimi's `for content in c`).
pub fn template_renders_parts(source: &str) -> bool {
    source.split("{%").skip(1).any(|tag| {
        let tag = tag.split("%}").next().unwrap_or_default();
        let tag = tag.trim_matches(|c: char| c == '-' || c == '+' || c.is_whitespace());
        let Some(rest) = tag.strip_prefix("for ") else {
            return false;
        };
        let Some((variable, iterated)) = rest.split_once(" in ") else {
            return false;
        };
        variable.trim() == "content"
            || [
                "message['content']",
                "message[\"content\"]",
                "message.content",
            ]
            .contains(&iterated.trim())
    })
}

/// Whether the servers hand this message to the template differently from how it is written
/// (a message that is not an object is left alone).
pub fn needs_normalizing(message: &Value) -> bool {
    match message {
        Value::Object(map) => !matches!(map.get("content"), Some(Value::String(_))),
        _ => false,
    }
}

/// Whether vLLM and SGLang render this message's content differently: a list of two or more
/// text parts (joined by `"\n"` in one, `" "` in the other).
pub fn parts_join_differs(message: &Value) -> bool {
    match message.get("content") {
        Some(Value::Array(parts)) => text_parts(parts).is_some_and(|texts| texts.len() > 1),
        _ => false,
    }
}

/// The texts of a list made only of text parts; `None` if any part is something else (an image,
/// a malformed part), which this module does not render.
fn text_parts(parts: &[Value]) -> Option<Vec<&str>> {
    parts
        .iter()
        .map(|part| {
            let kind = part.get("type")?.as_str()?;
            if !TEXT_PART_TYPES.contains(&kind) {
                return None;
            }
            part.get("text")?.as_str()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn missing_and_null_content_is_empty_text() {
        let call = json!([{"type": "function", "function": {"name": "f", "arguments": "{}"}}]);
        let missing = json!({"role": "assistant", "tool_calls": call});
        let null = json!({"role": "assistant", "content": null, "tool_calls": call});
        for message in [&missing, &null] {
            assert!(needs_normalizing(message));
            assert_eq!(
                normalize_content(message, false, false)["content"],
                json!("")
            );
            assert_eq!(
                normalize_content(message, true, false)["content"],
                Value::Null
            );
        }
        let user = json!({"role": "user"});
        assert_eq!(normalize_content(&user, true, false)["content"], json!(""));
    }

    #[test]
    fn templates_that_loop_over_parts_are_told_apart() {
        assert!(template_renders_parts(
            "{%- for content in c -%}{{ content }}{% endfor %}"
        ));
        assert!(template_renders_parts(
            "{% for p in message['content'] %}{% endfor %}"
        ));
        assert!(!template_renders_parts(
            "{%- if '</think>' in message.content %}{% endif %}"
        ));
        assert!(!template_renders_parts(
            "{% for m in messages %}{{ m.content }}{% endfor %}"
        ));
    }

    #[test]
    fn text_parts_are_joined_and_others_left_alone() {
        let one = json!({"role": "user", "content": [{"type": "text", "text": "a"}]});
        assert_eq!(normalize_content(&one, false, false)["content"], json!("a"));
        assert!(!parts_join_differs(&one));
        let two = json!({"role": "user", "content": [
            {"type": "text", "text": "a"}, {"type": "input_text", "text": "b"}]});
        assert_eq!(
            normalize_content(&two, false, false)["content"],
            json!("a\nb")
        );
        assert!(parts_join_differs(&two));
        assert_eq!(normalize_content(&two, false, true), two);
        let image = json!({"role": "user", "content": [{"type": "image_url", "image_url": {}}]});
        assert_eq!(normalize_content(&image, false, false), image);
        let text = json!({"role": "user", "content": "x"});
        assert!(!needs_normalizing(&text));
        assert_eq!(normalize_content(&text, false, false), text);
    }
}
