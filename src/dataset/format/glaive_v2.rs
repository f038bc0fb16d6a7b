//! Raw glaive-function-calling-v2 rows: `system` is text then the function definitions as
//! concatenated JSON objects (`SYSTEM: You are ... Use them if required -\n{...}\n\n{...}`),
//! and `chat` is one string of `USER:` / `ASSISTANT:` / `FUNCTION RESPONSE:` turns, each
//! assistant turn ending in `<|endoftext|>`, a call written `<functioncall> {"name": ...,
//! "arguments": '{...}'}`.
//!
//! The functions become OpenAI `tools` (duplicates by name dropped, first kept), the text before
//! them stays the system message, and calls are read leniently by [`super::call`]. The system
//! text as the dataset wrote it (function JSON included, `SYSTEM:` label removed) is kept too, for
//! runs that leave tools in the system prompt (`tools_as_parameter = false`): the glaive scenario. A call that
//! cannot be read (the real data has truncated ones) cuts the conversation before it, with a
//! warning: what came earlier is still a good prompt.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{json, Map, Value};

use super::call::{parse_call, CallIds};
use super::{malformed, openai_tool, string_field, text_message, Conversation, RecordError};

static TURN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^[ \t]*(USER|ASSISTANT|FUNCTION RESPONSE):[ \t]?")
        .unwrap_or_else(|e| unreachable!("constant regex: {e}"))
});

const END_OF_TEXT: &str = "<|endoftext|>";
const CALL_MARKER: &str = "<functioncall>";

pub(super) fn convert(record: &Map<String, Value>) -> Result<Conversation, RecordError> {
    let mut conversation = Conversation::default();
    read_system(string_field(record, "system")?, &mut conversation);
    let chat = string_field(record, "chat")?;
    let markers: Vec<_> = TURN.captures_iter(chat).collect();
    if let Some(first) = markers.first() {
        if let Some(m) = first
            .get(0)
            .filter(|m| !chat[..m.start()].trim().is_empty())
        {
            conversation.warnings.push(format!(
                "chat: {} bytes before the first turn marker ignored",
                m.start()
            ));
        }
    }
    let mut ids = CallIds::default();
    for (k, caps) in markers.iter().enumerate() {
        let (Some(whole), Some(speaker)) = (caps.get(0), caps.get(1)) else {
            continue;
        };
        let end = markers
            .get(k + 1)
            .and_then(|next| next.get(0))
            .map_or(chat.len(), |m| m.start());
        let text = chat[whole.end()..end].replace(END_OF_TEXT, "");
        let text = text.trim();
        match speaker.as_str() {
            "USER" => conversation.messages.push(text_message("user", text)),
            "ASSISTANT" => {
                ids.new_turn();
                let Some((before, call)) = text.split_once(CALL_MARKER) else {
                    conversation.messages.push(text_message("assistant", text));
                    continue;
                };
                match parse_call(call) {
                    Ok(call) => conversation.messages.push(json!({
                        "role": "assistant",
                        "content": before.trim(),
                        "tool_calls": [ids.call(&call)],
                    })),
                    Err(e) => {
                        conversation.warnings.push(format!(
                            "chat turn {k}: {e}; the conversation is cut before it"
                        ));
                        break;
                    }
                }
            }
            _ => {
                let id = ids.answer().ok_or_else(|| {
                    malformed(format!(
                        "chat turn {k}: a FUNCTION RESPONSE with no <functioncall> before it"
                    ))
                })?;
                conversation
                    .messages
                    .push(json!({"role": "tool", "tool_call_id": id, "content": text}));
            }
        }
    }
    Ok(conversation)
}

/// Split `system` into the system message and the function definitions after it.
fn read_system(system: &str, conversation: &mut Conversation) {
    let body = system.trim();
    let body = body.strip_prefix("SYSTEM:").unwrap_or(body).trim_start();
    let (preamble, functions) = match body.find('{') {
        Some(i) => (&body[..i], &body[i..]),
        None => (body, ""),
    };
    let preamble = preamble.trim_end();
    let preamble = preamble.strip_suffix('-').unwrap_or(preamble).trim_end();
    if !preamble.is_empty() {
        conversation.messages.push(text_message("system", preamble));
    }
    let mut tools: Vec<Value> = Vec::new();
    let stream = serde_json::Deserializer::from_str(functions).into_iter::<Value>();
    for (n, function) in stream.enumerate() {
        let function = match function {
            Ok(function) => function,
            Err(e) => {
                conversation.warnings.push(format!(
                    "system: function definition {n} cannot be read ({e}); it and the rest are dropped"
                ));
                break;
            }
        };
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_owned);
        match openai_tool(function) {
            Ok(tool) => {
                let duplicate = tools.iter().any(|t| {
                    t.pointer("/function/name").and_then(Value::as_str) == name.as_deref()
                });
                if duplicate {
                    conversation.warnings.push(format!(
                        "system: duplicate function {:?} dropped",
                        name.unwrap_or_default()
                    ));
                } else {
                    tools.push(tool);
                }
            }
            Err(why) => conversation
                .warnings
                .push(format!("system: function definition {n} {why}; dropped")),
        }
    }
    conversation.tools = Some(tools).filter(|t| !t.is_empty());
    if conversation.tools.is_some() {
        conversation.system_with_tools = Some(body.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(system: &str, chat: &str) -> Map<String, Value> {
        let Value::Object(map) = json!({"system": system, "chat": chat}) else {
            unreachable!()
        };
        map
    }

    #[test]
    fn calls_results_and_tools() {
        let system = "SYSTEM: You help - {\"name\": \"f\", \"parameters\": {}}\n\n{\"name\": \"g\"} {\"name\": \"f\"}";
        let chat = "USER: hi\n\n\nASSISTANT: <functioncall> {\"name\": \"f\", \"arguments\": '{\"a\": Infinity}'} <|endoftext|>\n\n\nFUNCTION RESPONSE: {\"ok\": 1}\n\n\nASSISTANT: done <|endoftext|>\n\n\nUSER: again\n";
        let c = convert(&record(system, chat)).unwrap();
        assert_eq!(
            c.tools,
            Some(vec![
                json!({"type": "function", "function": {"name": "f", "parameters": {}}}),
                json!({"type": "function", "function": {"name": "g"}}),
            ])
        );
        assert_eq!(c.warnings, ["system: duplicate function \"f\" dropped"]);
        assert_eq!(
            c.system_with_tools.as_deref(),
            Some(&system["SYSTEM: ".len()..]),
            "the dataset's system text, function JSON included"
        );
        assert_eq!(
            c.messages,
            [
                json!({"role": "system", "content": "You help"}),
                json!({"role": "user", "content": "hi"}),
                json!({"role": "assistant", "content": "", "tool_calls": [{"id": "call_0", "type": "function", "function": {"name": "f", "arguments": "{\"a\": Infinity}"}}]}),
                json!({"role": "tool", "tool_call_id": "call_0", "content": "{\"ok\": 1}"}),
                json!({"role": "assistant", "content": "done"}),
                json!({"role": "user", "content": "again"}),
            ]
        );
    }

    #[test]
    fn truncated_call_cuts_the_conversation() {
        let chat = "USER: hi\nASSISTANT: ok\nUSER: book it\nASSISTANT: <functioncall> {\"name\": \"f\", \"arguments\": '{\"a\": ";
        let c = convert(&record("SYSTEM: plain", chat)).unwrap();
        assert_eq!(c.messages.len(), 4);
        assert_eq!(c.warnings.len(), 1);
        assert!(c.warnings[0].contains("truncated"), "{:?}", c.warnings);
    }
}
