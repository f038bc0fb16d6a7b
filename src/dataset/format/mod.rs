//! Format adapters, one file per dataset shape: each turns one record (a JSON object) into a
//! [`Conversation`] in OpenAI chat shape. [`Format::detect`] picks the adapter from the record's
//! keys; `--format` overrides it. Cutting the conversation into a prompt happens in one place,
//! [`Conversation::into_prompt`], so every format follows the same rule.

mod alpaca;
pub mod call;
mod glaive_v2;
mod llamafactory;
mod magicoder;
mod openai;
mod opencodeinstruct;
mod reason_tool_use;
mod sharegpt;
mod ultrachat;

use std::fmt;
use std::str::FromStr;

use serde_json::{Map, Value};

use super::prompt::Prompt;
use super::reader::json_kind;

/// A dataset shape we can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Format {
    /// `messages` of `{role, content, tool_calls?}` (+ `tools`).
    OpenAi,
    /// `conversations`/`items` of `{from, value}`.
    ShareGpt,
    /// Raw glaive-function-calling-v2: `system` + `chat` text.
    GlaiveV2,
    /// LLaMA-Factory's ShareGPT with `function_call`/`observation` turns and a `tools` string.
    LlamaFactory,
    /// nvidia/OpenCodeInstruct: `input`/`output`.
    OpenCodeInstruct,
    /// Magicoder-OSS-Instruct: `problem`/`solution`.
    Magicoder,
    /// Alpaca / Evol-Instruct: `instruction`[/`input`]/`output`|`response`.
    Alpaca,
    /// UltraChat: `prompt`, `messages`.
    UltraChat,
    /// `messages` whose content is typed parts (`text`, `reasoning`, `tool_call`) with `value`.
    ReasonToolUse,
}

impl Format {
    pub const ALL: [Format; 9] = [
        Format::OpenAi,
        Format::ShareGpt,
        Format::GlaiveV2,
        Format::LlamaFactory,
        Format::OpenCodeInstruct,
        Format::Magicoder,
        Format::Alpaca,
        Format::UltraChat,
        Format::ReasonToolUse,
    ];

    /// The name used by `--format` and in summaries.
    pub fn name(self) -> &'static str {
        match self {
            Format::OpenAi => "openai",
            Format::ShareGpt => "sharegpt",
            Format::GlaiveV2 => "glaive-v2",
            Format::LlamaFactory => "llamafactory",
            Format::OpenCodeInstruct => "opencodeinstruct",
            Format::Magicoder => "magicoder",
            Format::Alpaca => "alpaca",
            Format::UltraChat => "ultrachat",
            Format::ReasonToolUse => "reason-tool-use",
        }
    }

    /// The adapter a record's keys call for, if any.
    pub fn detect(record: &Map<String, Value>) -> Option<Format> {
        let has = |k: &str| record.contains_key(k);
        if has("system") && has("chat") {
            return Some(Format::GlaiveV2);
        }
        if let Some(messages) = record.get("messages") {
            if has("prompt") || has("prompt_id") {
                return Some(Format::UltraChat);
            }
            let messages = messages.as_array().map(Vec::as_slice).unwrap_or_default();
            let typed_parts = messages.iter().any(|m| {
                m.get("content")
                    .and_then(Value::as_array)
                    .is_some_and(|parts| parts.iter().any(|p| p.get("value").is_some()))
            });
            return Some(if typed_parts {
                Format::ReasonToolUse
            } else {
                Format::OpenAi
            });
        }
        if let Some(turns) = record.get("conversations").or_else(|| record.get("items")) {
            let function_turns = turns.as_array().is_some_and(|turns| {
                turns.iter().any(|t| {
                    matches!(
                        t.get("from").and_then(Value::as_str),
                        Some("function_call" | "observation")
                    )
                })
            });
            return Some(if has("tools") || function_turns {
                Format::LlamaFactory
            } else {
                Format::ShareGpt
            });
        }
        if has("problem") && has("solution") {
            return Some(Format::Magicoder);
        }
        if has("instruction") {
            return Some(Format::Alpaca);
        }
        if has("input") && has("output") {
            return Some(Format::OpenCodeInstruct);
        }
        if has("prompt") {
            return Some(Format::UltraChat);
        }
        None
    }

    /// Run this format's adapter on one record.
    pub fn convert(self, record: &Map<String, Value>) -> Result<Conversation, RecordError> {
        match self {
            Format::OpenAi => openai::convert(record),
            Format::ShareGpt => sharegpt::convert(record),
            Format::GlaiveV2 => glaive_v2::convert(record),
            Format::LlamaFactory => llamafactory::convert(record),
            Format::OpenCodeInstruct => opencodeinstruct::convert(record),
            Format::Magicoder => magicoder::convert(record),
            Format::Alpaca => alpaca::convert(record),
            Format::UltraChat => ultrachat::convert(record),
            Format::ReasonToolUse => reason_tool_use::convert(record),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let wanted = s.to_ascii_lowercase().replace('_', "-");
        let alias = match wanted.as_str() {
            "evol" | "evol-instruct" => "alpaca",
            "glaive" => "glaive-v2",
            "llama-factory" => "llamafactory",
            "magicoder-oss" => "magicoder",
            other => other,
        };
        Format::ALL
            .into_iter()
            .find(|f| f.name() == alias)
            .ok_or_else(|| {
                let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
                format!("unknown format {s:?}; known formats: {}", names.join(", "))
            })
    }
}

/// Why a record gave no prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordError {
    /// The record is not what its format says (missing field, wrong type, ...).
    Malformed(String),
    /// The record is fine but holds nothing to ask; the reason is a short fixed phrase so that
    /// summaries can count by it.
    Skipped(&'static str),
}

/// An adapter's output: the whole conversation in OpenAI chat shape.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Conversation {
    pub messages: Vec<Value>,
    pub tools: Option<Vec<Value>>,
    /// Record fields worth keeping (the dataset's own id, language, ...).
    pub meta: Map<String, Value>,
    /// Problems that did not stop the record (a truncated call that was cut off, ...).
    pub warnings: Vec<String>,
    /// The system text as the dataset wrote it, tool definitions included, when `tools` was
    /// parsed out of it (glaive): see `Prompt::system_with_tools`.
    pub system_with_tools: Option<String>,
}

impl Conversation {
    /// The prompt: messages up to and including the last user turn. What follows (the dataset's
    /// own answer) goes to `meta.reference_answer` and is never sent.
    pub fn into_prompt(mut self, source: &str) -> Result<Prompt, RecordError> {
        let last_user = self
            .messages
            .iter()
            .rposition(|m| m.get("role").and_then(Value::as_str) == Some("user"))
            .ok_or(RecordError::Skipped("no user turn"))?;
        if content_is_empty(self.messages[last_user].get("content")) {
            return Err(RecordError::Skipped("last user turn is empty"));
        }
        let answer = self.messages.split_off(last_user + 1);
        if !answer.is_empty() {
            self.meta
                .insert("reference_answer".into(), Value::Array(answer));
        }
        if !self.warnings.is_empty() {
            let warnings = self.warnings.into_iter().map(Value::from).collect();
            self.meta.insert("warnings".into(), Value::Array(warnings));
        }
        let mut prompt = Prompt::new(source, self.messages, self.tools, Value::Object(self.meta));
        prompt.system_with_tools = self.system_with_tools;
        Ok(prompt)
    }
}

/// Whether a message content holds no text at all (null, blank, or only blank text parts).
fn content_is_empty(content: Option<&Value>) -> bool {
    match content {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.trim().is_empty(),
        Some(Value::Array(parts)) => parts.iter().all(|p| {
            p.get("type").and_then(Value::as_str) == Some("text")
                && p.get("text")
                    .and_then(Value::as_str)
                    .is_none_or(|t| t.trim().is_empty())
        }),
        Some(_) => false,
    }
}

// Field access with errors that say which field and what was wrong.

fn malformed(message: impl Into<String>) -> RecordError {
    RecordError::Malformed(message.into())
}

/// A required string field.
fn string_field<'r>(record: &'r Map<String, Value>, key: &str) -> Result<&'r str, RecordError> {
    match record.get(key) {
        Some(Value::String(s)) => Ok(s),
        None => Err(malformed(format!("missing field {key:?}"))),
        Some(other) => Err(malformed(format!(
            "field {key:?} is {}, expected a string",
            json_kind(other)
        ))),
    }
}

/// An optional string field (absent and null are both `None`).
fn optional_string<'r>(
    record: &'r Map<String, Value>,
    key: &str,
) -> Result<Option<&'r str>, RecordError> {
    match record.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(malformed(format!(
            "field {key:?} is {}, expected a string",
            json_kind(other)
        ))),
    }
}

/// A required array field.
fn array_field<'r>(
    record: &'r Map<String, Value>,
    key: &str,
) -> Result<&'r Vec<Value>, RecordError> {
    match record.get(key) {
        Some(Value::Array(items)) => Ok(items),
        None => Err(malformed(format!("missing field {key:?}"))),
        Some(other) => Err(malformed(format!(
            "field {key:?} is {}, expected an array",
            json_kind(other)
        ))),
    }
}

/// Copy the listed fields, when present and not null, into the metadata.
fn keep_fields(record: &Map<String, Value>, keys: &[&str], meta: &mut Map<String, Value>) {
    for key in keys {
        if let Some(value) = record.get(*key).filter(|v| !v.is_null()) {
            meta.insert((*key).to_string(), value.clone());
        }
    }
}

/// A user or system message with plain text content.
fn text_message(role: &str, content: &str) -> Value {
    serde_json::json!({"role": role, "content": content})
}

/// A conversation of one user turn and, when the dataset has one, its answer.
fn single_turn(user: &str, answer: Option<&str>) -> Vec<Value> {
    let mut messages = vec![text_message("user", user)];
    if let Some(answer) = answer {
        messages.push(text_message("assistant", answer));
    }
    messages
}

/// `tools` as an array or a JSON string of one (as LLaMA-Factory writes it), in OpenAI shape:
/// bare `{name, description, parameters}` functions are wrapped as
/// `{"type": "function", "function": {...}}`; already wrapped ones are kept.
fn parse_tools(value: Option<&Value>) -> Result<Option<Vec<Value>>, RecordError> {
    let items = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(text)) if text.trim().is_empty() => return Ok(None),
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Array(items)) => items,
            Ok(Value::Object(one)) => vec![Value::Object(one)],
            Ok(other) => {
                return Err(malformed(format!(
                    "field \"tools\" holds {}, expected a JSON array of functions",
                    json_kind(&other)
                )))
            }
            Err(e) => return Err(malformed(format!("field \"tools\" is not valid JSON: {e}"))),
        },
        Some(Value::Array(items)) => items.clone(),
        Some(other) => {
            return Err(malformed(format!(
                "field \"tools\" is {}, expected an array or a JSON string",
                json_kind(other)
            )))
        }
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, tool)| openai_tool(tool).map_err(|why| malformed(format!("tools[{i}]: {why}"))))
        .collect::<Result<Vec<_>, _>>()
        .map(|tools| Some(tools).filter(|t| !t.is_empty()))
}

/// One tool definition in OpenAI shape.
fn openai_tool(tool: Value) -> Result<Value, String> {
    let Value::Object(map) = tool else {
        return Err(format!("is {}, expected an object", json_kind(&tool)));
    };
    if map.get("function").is_some_and(Value::is_object) {
        return Ok(Value::Object(map));
    }
    if map.get("name").and_then(Value::as_str).is_some() {
        return Ok(serde_json::json!({"type": "function", "function": map}));
    }
    Err("has neither \"function\" nor \"name\"".into())
}
