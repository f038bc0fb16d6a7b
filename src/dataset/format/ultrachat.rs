//! UltraChat rows: `messages` of `{role, content}` (the first user turn repeats `prompt`);
//! a row with only `prompt` is a single question.

use serde_json::{Map, Value};

use super::{keep_fields, openai, single_turn, string_field, Conversation, RecordError};

pub(super) fn convert(record: &Map<String, Value>) -> Result<Conversation, RecordError> {
    let mut conversation = match record.get("messages") {
        Some(_) => openai::convert_messages(record)?,
        None => Conversation {
            messages: single_turn(string_field(record, "prompt")?, None),
            ..Default::default()
        },
    };
    keep_fields(record, &["prompt_id"], &mut conversation.meta);
    Ok(conversation)
}
