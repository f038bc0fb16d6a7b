//! Magicoder-OSS-Instruct rows: `problem` is the question, `solution` the answer.

use serde_json::{Map, Value};

use super::{keep_fields, optional_string, single_turn, string_field, Conversation, RecordError};

pub(super) fn convert(record: &Map<String, Value>) -> Result<Conversation, RecordError> {
    let problem = string_field(record, "problem")?;
    let solution = optional_string(record, "solution")?;
    let mut meta = Map::new();
    keep_fields(record, &["lang", "index"], &mut meta);
    Ok(Conversation {
        messages: single_turn(problem, solution),
        meta,
        ..Default::default()
    })
}
