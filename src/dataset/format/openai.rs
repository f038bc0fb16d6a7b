//! OpenAI chat rows: `messages` of `{role, content, tool_calls?, tool_call_id?, ...}` and an
//! optional `tools` list (or JSON string). Messages are kept as the dataset wrote them, after
//! checking that each has a role and a content of a type the API accepts.

use serde_json::{Map, Value};

use super::{array_field, keep_fields, malformed, parse_tools, Conversation, RecordError};
use crate::dataset::reader::json_kind;

pub(super) fn convert(record: &Map<String, Value>) -> Result<Conversation, RecordError> {
    let mut conversation = convert_messages(record)?;
    conversation.tools = parse_tools(record.get("tools"))?;
    keep_fields(record, &["id"], &mut conversation.meta);
    Ok(conversation)
}

/// Check and copy `messages`.
pub(super) fn convert_messages(record: &Map<String, Value>) -> Result<Conversation, RecordError> {
    let messages = array_field(record, "messages")?;
    for (i, message) in messages.iter().enumerate() {
        let Value::Object(message) = message else {
            return Err(malformed(format!(
                "messages[{i}] is {}, expected an object",
                json_kind(message)
            )));
        };
        match message.get("role") {
            Some(Value::String(_)) => {}
            None => return Err(malformed(format!("messages[{i}] has no \"role\""))),
            Some(other) => {
                return Err(malformed(format!(
                    "messages[{i}].role is {}, expected a string",
                    json_kind(other)
                )))
            }
        }
        match message.get("content") {
            None | Some(Value::Null | Value::String(_) | Value::Array(_)) => {}
            Some(other) => {
                return Err(malformed(format!(
                    "messages[{i}].content is {}, expected a string, an array of parts or null",
                    json_kind(other)
                )))
            }
        }
    }
    Ok(Conversation {
        messages: messages.clone(),
        ..Default::default()
    })
}
