//! LLaMA-Factory's function-calling ShareGPT (its `glaive_toolcall_*` files): `conversations`
//! with `human`/`gpt`/`function_call`/`observation` turns and `tools` as a JSON string of bare
//! functions. A `function_call` value is `{"name", "arguments": {...}}` (or a list of them);
//! each becomes an assistant `tool_calls` entry with a `call_N` id, and each `observation` a
//! `tool` message answering the oldest open call.

use serde_json::{Map, Value};

use super::{keep_fields, parse_tools, sharegpt, Conversation, RecordError};

pub(super) fn convert(record: &Map<String, Value>) -> Result<Conversation, RecordError> {
    let mut conversation = sharegpt::convert_turns(record)?;
    conversation.tools = parse_tools(record.get("tools"))?;
    keep_fields(record, &["id"], &mut conversation.meta);
    Ok(conversation)
}
