//! nvidia/OpenCodeInstruct rows: `input` is the question, `output` the answer.

use serde_json::{Map, Value};

use super::{keep_fields, optional_string, single_turn, string_field, Conversation, RecordError};

pub(super) fn convert(record: &Map<String, Value>) -> Result<Conversation, RecordError> {
    let input = string_field(record, "input")?;
    let output = optional_string(record, "output")?;
    let mut meta = Map::new();
    keep_fields(record, &["id", "domain", "generation_algorithm"], &mut meta);
    Ok(Conversation {
        messages: single_turn(input, output),
        meta,
        ..Default::default()
    })
}
