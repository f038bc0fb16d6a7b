//! ShareGPT rows: `conversations` (or `items`) of `{from, value}` turns with messy role names
//! (human/user; gpt/chatgpt/bing/bard/assistant/model; system), plus an optional `system`
//! field. The function-calling roles of LLaMA-Factory's variant are read here too (see
//! `llamafactory.rs`), so both formats share one turn loop.

use serde_json::{json, Map, Value};

use super::call::{parse_calls, CallError, CallIds};
use super::{
    array_field, keep_fields, malformed, optional_string, text_message, Conversation, RecordError,
};
use crate::dataset::reader::json_kind;

pub(super) fn convert(record: &Map<String, Value>) -> Result<Conversation, RecordError> {
    let mut conversation = convert_turns(record)?;
    keep_fields(record, &["id"], &mut conversation.meta);
    Ok(conversation)
}

enum Role {
    System,
    User,
    Assistant,
    FunctionCall,
    Observation,
}

fn role(from: &str) -> Option<Role> {
    Some(match from.to_ascii_lowercase().as_str() {
        "system" => Role::System,
        "human" | "user" => Role::User,
        "gpt" | "chatgpt" | "bing" | "bard" | "assistant" | "model" => Role::Assistant,
        "function_call" => Role::FunctionCall,
        "observation" | "tool" | "function" => Role::Observation,
        _ => return None,
    })
}

/// The turns of `conversations`/`items` as OpenAI messages.
pub(super) fn convert_turns(record: &Map<String, Value>) -> Result<Conversation, RecordError> {
    let key = if record.contains_key("conversations") {
        "conversations"
    } else {
        "items"
    };
    let turns = array_field(record, key)?;
    let mut conversation = Conversation::default();
    let messages = &mut conversation.messages;
    if let Some(system) = optional_string(record, "system")?.filter(|s| !s.trim().is_empty()) {
        messages.push(text_message("system", system));
    }
    let mut ids = CallIds::default();
    for (i, turn) in turns.iter().enumerate() {
        let Value::Object(turn) = turn else {
            return Err(malformed(format!(
                "{key}[{i}] is {}, expected an object",
                json_kind(turn)
            )));
        };
        let from = turn_text(turn, &["from", "role"], key, i)?;
        let value = turn_text(turn, &["value", "content"], key, i)?;
        match role(from) {
            Some(Role::System) => messages.push(text_message("system", value)),
            Some(Role::User) => messages.push(text_message("user", value)),
            Some(Role::Assistant) => {
                ids.new_turn();
                messages.push(text_message("assistant", value));
            }
            Some(Role::FunctionCall) => {
                let calls = match parse_calls(value) {
                    Ok(calls) => calls,
                    Err(CallError::Truncated) => {
                        conversation.warnings.push(format!(
                            "{key}[{i}]: function call is truncated; the conversation is cut before it"
                        ));
                        break;
                    }
                    Err(e) => return Err(malformed(format!("{key}[{i}]: {e}"))),
                };
                ids.new_turn();
                let tool_calls: Vec<Value> = calls.iter().map(|c| ids.call(c)).collect();
                messages
                    .push(json!({"role": "assistant", "content": "", "tool_calls": tool_calls}));
            }
            Some(Role::Observation) => {
                let id = ids.answer().ok_or_else(|| {
                    malformed(format!(
                        "{key}[{i}]: a tool result with no function call before it"
                    ))
                })?;
                messages.push(json!({"role": "tool", "tool_call_id": id, "content": value}));
            }
            None => {
                return Err(malformed(format!(
                    "{key}[{i}].from is {from:?}, not a known role \
                     (human, user, gpt, chatgpt, bing, bard, assistant, model, system, \
                     function_call, observation)"
                )))
            }
        }
    }
    Ok(conversation)
}

/// The first of `keys` present in a turn, which must be a string.
fn turn_text<'t>(
    turn: &'t Map<String, Value>,
    keys: &[&str],
    list: &str,
    i: usize,
) -> Result<&'t str, RecordError> {
    let Some((key, value)) = keys.iter().find_map(|k| turn.get(*k).map(|v| (*k, v))) else {
        return Err(malformed(format!("{list}[{i}] has no {:?}", keys[0])));
    };
    value.as_str().ok_or_else(|| {
        malformed(format!(
            "{list}[{i}].{key} is {}, expected a string",
            json_kind(value)
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!(),
        }
    }

    #[test]
    fn role_aliases_map_to_openai_roles() {
        let c = convert(&record(json!({"items": [
            {"from": "system", "value": "s"}, {"from": "human", "value": "a"},
            {"from": "chatgpt", "value": "b"}, {"from": "user", "value": "c"},
            {"from": "bing", "value": "d"}, {"from": "Bard", "value": "e"},
            {"from": "model", "value": "f"}, {"role": "assistant", "content": "g"},
        ]})))
        .unwrap();
        let roles: Vec<&str> = c
            .messages
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(
            roles,
            [
                "system",
                "user",
                "assistant",
                "user",
                "assistant",
                "assistant",
                "assistant",
                "assistant"
            ]
        );
    }

    #[test]
    fn parallel_function_calls_pair_with_observations_in_order() {
        let c = convert_turns(&record(json!({"conversations": [
            {"from": "human", "value": "weather in A and B?"},
            {"from": "function_call", "value": "[{\"name\": \"w\", \"arguments\": {\"city\": \"A\"}}, {\"name\": \"w\", \"arguments\": {\"city\": \"B\"}}]"},
            {"from": "observation", "value": "sunny"},
            {"from": "observation", "value": "rain"},
        ]})))
        .unwrap();
        let calls = &c.messages[1]["tool_calls"];
        assert_eq!(calls[0]["id"], "call_0");
        assert_eq!(calls[1]["function"]["arguments"], "{\"city\": \"B\"}");
        assert_eq!(c.messages[2]["tool_call_id"], "call_0");
        assert_eq!(c.messages[3]["tool_call_id"], "call_1");
    }

    #[test]
    fn an_observation_without_a_call_is_malformed() {
        let err = convert_turns(&record(json!({"conversations": [
            {"from": "human", "value": "x"}, {"from": "observation", "value": "y"},
        ]})))
        .unwrap_err();
        assert_eq!(
            err,
            RecordError::Malformed(
                "conversations[1]: a tool result with no function call before it".into()
            )
        );
    }
}
