//! Tool-use conversations with reasoning (LLaMA-Factory's `reason_tool_use_demo`): `messages`
//! whose content is a list of typed parts `{"type": "text"|"reasoning"|"tool_call", "value"}`
//! and `tools` as a JSON string.
//!
//! Text parts become `content` (one part: a string; several: OpenAI text parts), reasoning
//! parts become `reasoning_content` (what thinking templates and APIs read on history turns),
//! tool_call parts become `tool_calls` with `call_N` ids. A tool message answering several
//! parallel calls holds a JSON list of `{name|tool_call_id, content}` results; it is split into
//! one `tool` message per call when the counts agree, else kept whole for the oldest open call.

use serde_json::{json, Map, Value};

use super::call::{parse_call, CallError, CallIds};
use super::{array_field, keep_fields, malformed, parse_tools, Conversation, RecordError};
use crate::dataset::reader::json_kind;

pub(super) fn convert(record: &Map<String, Value>) -> Result<Conversation, RecordError> {
    let mut conversation = Conversation {
        tools: parse_tools(record.get("tools"))?,
        ..Default::default()
    };
    keep_fields(record, &["id"], &mut conversation.meta);
    let mut ids = CallIds::default();
    'messages: for (i, message) in array_field(record, "messages")?.iter().enumerate() {
        let role = message
            .get("role")
            .and_then(Value::as_str)
            .ok_or_else(|| malformed(format!("messages[{i}] has no string \"role\"")))?;
        let parts = Parts::read(message.get("content"), i)?;
        match role {
            "assistant" => {
                ids.new_turn();
                let mut out = Map::new();
                out.insert("role".into(), "assistant".into());
                out.insert("content".into(), parts.content());
                if !parts.reasoning.is_empty() {
                    out.insert(
                        "reasoning_content".into(),
                        parts.reasoning.join("\n").into(),
                    );
                }
                let mut tool_calls = Vec::new();
                for call in &parts.calls {
                    match parse_call(call) {
                        Ok(call) => tool_calls.push(ids.call(&call)),
                        Err(CallError::Truncated) => {
                            conversation.warnings.push(format!(
                                "messages[{i}]: tool call is truncated; the conversation is cut before it"
                            ));
                            break 'messages;
                        }
                        Err(e) => return Err(malformed(format!("messages[{i}]: {e}"))),
                    }
                }
                if !tool_calls.is_empty() {
                    out.insert("tool_calls".into(), Value::Array(tool_calls));
                }
                conversation.messages.push(Value::Object(out));
            }
            "tool" => {
                let text = parts.text.join("\n");
                for result in split_results(&text, ids.pending()) {
                    let id = ids.answer().ok_or_else(|| {
                        malformed(format!(
                            "messages[{i}]: a tool result with no tool call before it"
                        ))
                    })?;
                    conversation
                        .messages
                        .push(json!({"role": "tool", "tool_call_id": id, "content": result}));
                }
            }
            other => conversation
                .messages
                .push(json!({"role": other, "content": parts.content()})),
        }
    }
    Ok(conversation)
}

/// The parts of one message, by type, in order.
#[derive(Default)]
struct Parts {
    text: Vec<String>,
    reasoning: Vec<String>,
    calls: Vec<String>,
}

impl Parts {
    fn read(content: Option<&Value>, i: usize) -> Result<Self, RecordError> {
        let mut parts = Parts::default();
        match content {
            None | Some(Value::Null) => {}
            Some(Value::String(text)) => parts.text.push(text.clone()),
            Some(Value::Array(items)) => {
                for (j, item) in items.iter().enumerate() {
                    let kind = item.get("type").and_then(Value::as_str);
                    let value = item.get("value").or_else(|| item.get("text"));
                    let Some(Value::String(value)) = value else {
                        return Err(malformed(format!(
                            "messages[{i}].content[{j}] has no string \"value\""
                        )));
                    };
                    match kind {
                        Some("text") => parts.text.push(value.clone()),
                        Some("reasoning") => parts.reasoning.push(value.clone()),
                        Some("tool_call") => parts.calls.push(value.clone()),
                        other => {
                            return Err(malformed(format!(
                                "messages[{i}].content[{j}].type is {other:?}; expected text, reasoning or tool_call"
                            )))
                        }
                    }
                }
            }
            Some(other) => {
                return Err(malformed(format!(
                    "messages[{i}].content is {}, expected a list of parts",
                    json_kind(other)
                )))
            }
        }
        Ok(parts)
    }

    /// Text parts as OpenAI content: one string, or a list of text parts when there are several.
    fn content(&self) -> Value {
        match self.text.as_slice() {
            [] => Value::from(""),
            [one] => Value::from(one.as_str()),
            many => Value::Array(
                many.iter()
                    .map(|t| json!({"type": "text", "text": t}))
                    .collect(),
            ),
        }
    }
}

/// One tool message's results: split per call when it lists exactly `pending` results.
fn split_results(text: &str, pending: usize) -> Vec<String> {
    if pending >= 2 {
        if let Ok(Value::Array(items)) = serde_json::from_str::<Value>(text) {
            let contents: Option<Vec<String>> = items
                .iter()
                .map(|item| {
                    item.get("content").map(|c| match c {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                })
                .collect();
            if let Some(contents) = contents.filter(|c| c.len() == pending) {
                return contents;
            }
        }
    }
    vec![text.to_string()]
}
