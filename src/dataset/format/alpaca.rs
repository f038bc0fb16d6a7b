//! Alpaca and Evol-Instruct rows: `instruction`, optional `input` (appended after a blank line,
//! as the Alpaca prompt does), the answer in `output` or `response`; LLaMA-Factory's optional
//! `system` and `history` (`[[question, answer], ...]`) become earlier turns.

use serde_json::{Map, Value};

use super::{
    keep_fields, malformed, optional_string, string_field, text_message, Conversation, RecordError,
};

pub(super) fn convert(record: &Map<String, Value>) -> Result<Conversation, RecordError> {
    let instruction = string_field(record, "instruction")?;
    let input = optional_string(record, "input")?.filter(|s| !s.trim().is_empty());
    let answer = match optional_string(record, "output")? {
        Some(output) => Some(output),
        None => optional_string(record, "response")?,
    };
    let mut messages = Vec::new();
    if let Some(system) = optional_string(record, "system")?.filter(|s| !s.trim().is_empty()) {
        messages.push(text_message("system", system));
    }
    if let Some(history) = record.get("history").filter(|h| !h.is_null()) {
        let pairs = history
            .as_array()
            .ok_or_else(|| malformed("field \"history\" is not an array of [question, answer]"))?;
        for (i, pair) in pairs.iter().enumerate() {
            match pair.as_array().map(Vec::as_slice) {
                Some([Value::String(q), Value::String(a)]) => {
                    messages.push(text_message("user", q));
                    messages.push(text_message("assistant", a));
                }
                _ => return Err(malformed(format!("history[{i}] is not [question, answer]"))),
            }
        }
    }
    let user = match input {
        Some(input) => format!("{instruction}\n\n{input}"),
        None => instruction.to_string(),
    };
    messages.push(text_message("user", &user));
    if let Some(answer) = answer {
        messages.push(text_message("assistant", answer));
    }
    let mut meta = Map::new();
    keep_fields(record, &["id", "idx"], &mut meta);
    Ok(Conversation {
        messages,
        meta,
        ..Default::default()
    })
}
