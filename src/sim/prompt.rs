//! `usage.prompt_tokens` and vLLM's `prompt_token_ids` from an **approximate** render of the
//! request in the Kimi K2.5 layout (tool declaration as compact JSON, role headers, `<|im_end|>`
//! after each message, generation prompt ending in `<think>`). It is close to, but not, the
//! official template (which renders tools TypeScript-style): good for plausible counts and
//! budget tests, not a reference for prompt-id exactness.

use serde_json::Value;

use crate::model::family::kimi::{
    ARGUMENT_BEGIN, CALL_BEGIN, CALL_END, SECTION_BEGIN, SECTION_END,
};

/// The approximate prompt text for `messages` and `tools`.
pub fn approximate_render(messages: &[Value], tools: &[Value], thinking: bool) -> String {
    let mut out = String::new();
    if !tools.is_empty() {
        out.push_str("<|im_system|>tool_declare<|im_middle|>");
        out.push_str(&Value::Array(tools.to_vec()).to_string());
        out.push_str("<|im_end|>");
    }
    if messages.first().and_then(role) != Some("system") {
        out.push_str(
            "<|im_system|>system<|im_middle|>You are Kimi, an AI assistant created by Moonshot AI.<|im_end|>",
        );
    }
    for message in messages {
        let role = role(message).unwrap_or("user");
        let header = match role {
            "user" => "<|im_user|>",
            "assistant" => "<|im_assistant|>",
            _ => "<|im_system|>",
        };
        out.push_str(header);
        out.push_str(message.get("name").and_then(Value::as_str).unwrap_or(role));
        out.push_str("<|im_middle|>");
        if role == "tool" {
            if let Some(id) = message.get("tool_call_id").and_then(Value::as_str) {
                out.push_str("## Return of ");
                out.push_str(id);
                out.push('\n');
            }
        }
        if role == "assistant" {
            out.push_str("<think></think>");
        }
        push_content(&mut out, message.get("content"));
        if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
            out.push_str(SECTION_BEGIN);
            for call in calls {
                out.push_str(CALL_BEGIN);
                out.push_str(call.get("id").and_then(Value::as_str).unwrap_or(""));
                out.push_str(ARGUMENT_BEGIN);
                match call.get("function").and_then(|f| f.get("arguments")) {
                    Some(Value::String(s)) => out.push_str(s),
                    Some(other) => out.push_str(&other.to_string()),
                    None => {}
                }
                out.push_str(CALL_END);
            }
            out.push_str(SECTION_END);
        }
        out.push_str("<|im_end|>");
    }
    out.push_str("<|im_assistant|>assistant<|im_middle|>");
    out.push_str(if thinking {
        "<think>"
    } else {
        "<think></think>"
    });
    out
}

fn role(message: &Value) -> Option<&str> {
    message.get("role").and_then(Value::as_str)
}

/// String content as is; a list of parts contributes its text parts.
fn push_content(out: &mut String, content: Option<&Value>) {
    match content {
        Some(Value::String(s)) => out.push_str(s),
        Some(Value::Array(parts)) => {
            for part in parts {
                if let Some(text) = part.get("text").and_then(Value::as_str) {
                    out.push_str(text);
                }
            }
        }
        _ => {}
    }
}
