//! [`Completion`]: a server's answer normalized to one shape, whatever API shape it came in.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool call's arguments: a string kept byte-for-byte, or an object as the server sent it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Arguments {
    Raw(String),
    Object(Value),
}

/// One tool call as the API reported it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The id the server returned (`call_…`, `functions.NAME:N`, …), if any.
    pub id: Option<String>,
    pub name: String,
    pub arguments: Arguments,
}

/// Token accounting as the server reported it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub reasoning_tokens: Option<u64>,
    pub cost: Option<f64>,
}

/// The normalized answer of one chat completion.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    pub reasoning: Option<String>,
    pub content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub finish_reason: Option<String>,
    pub usage: Option<Usage>,
    /// The server's own completion ids (`return_token_ids`, llama.cpp `__verbose.tokens`).
    pub completion_token_ids: Option<Vec<u32>>,
    /// The server's own prompt ids (`prompt_token_ids`), if returned.
    pub prompt_token_ids: Option<Vec<u32>>,
    pub provider: Option<String>,
    /// `created`: when the server answered (Unix seconds), the day a template's `strftime_now`
    /// wrote into the prompt (gpt-oss's system message).
    pub created: Option<i64>,
}

/// Why a response body could not be read as a chat completion.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CompletionError {
    #[error("the response carries an error object: {0}")]
    ErrorObject(String),
    #[error("the response has no choices[0].message")]
    NoMessage,
    #[error("{field}: expected {expected}")]
    WrongType {
        field: &'static str,
        expected: &'static str,
    },
}

impl Completion {
    /// Read a chat.completion JSON body in any of the shapes servers send: OpenRouter
    /// (`reasoning`, `reasoning_details`), vLLM (`reasoning`, older `reasoning_content`,
    /// `token_ids`), llama.cpp (`__verbose.tokens`), SGLang; content as a string or parts.
    pub fn from_response(body: &Value) -> Result<Self, CompletionError> {
        if let Some(error) = body.get("error").filter(|e| !e.is_null()) {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| error.to_string());
            return Err(CompletionError::ErrorObject(message));
        }
        let choice = body
            .get("choices")
            .and_then(|c| c.get(0))
            .ok_or(CompletionError::NoMessage)?;
        let message = choice
            .get("message")
            .filter(|m| m.is_object())
            .ok_or(CompletionError::NoMessage)?;

        let reasoning = non_empty_str(message.get("reasoning"))
            .or_else(|| non_empty_str(message.get("reasoning_content")))
            .or_else(|| reasoning_details_text(message.get("reasoning_details")));
        let content = content_text(message.get("content"))?;
        let tool_calls = match message.get("tool_calls") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(calls)) => calls.iter().map(tool_call).collect::<Result<_, _>>()?,
            Some(_) => {
                return Err(CompletionError::WrongType {
                    field: "message.tool_calls",
                    expected: "an array",
                })
            }
        };
        let finish_reason = choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_string);
        let usage = body.get("usage").filter(|u| u.is_object()).map(|u| Usage {
            prompt_tokens: u.get("prompt_tokens").and_then(Value::as_u64),
            completion_tokens: u.get("completion_tokens").and_then(Value::as_u64),
            reasoning_tokens: u
                .pointer("/completion_tokens_details/reasoning_tokens")
                .or_else(|| u.get("reasoning_tokens"))
                .and_then(Value::as_u64),
            cost: u.get("cost").and_then(Value::as_f64),
        });
        let completion_token_ids =
            id_list(choice.get("token_ids")).or_else(|| id_list(body.pointer("/__verbose/tokens")));
        let prompt_token_ids = id_list(body.get("prompt_token_ids"))
            .or_else(|| id_list(choice.get("prompt_token_ids")));
        let provider = body
            .get("provider")
            .and_then(Value::as_str)
            .map(str::to_string);
        Ok(Completion {
            reasoning,
            content,
            tool_calls,
            finish_reason,
            usage,
            completion_token_ids,
            prompt_token_ids,
            provider,
            created: body.get("created").and_then(Value::as_i64),
        })
    }

    /// Nothing at all came back: no reasoning, no content, no tool calls.
    pub fn is_empty(&self) -> bool {
        self.reasoning.as_deref().is_none_or(str::is_empty)
            && self.content.as_deref().is_none_or(str::is_empty)
            && self.tool_calls.is_empty()
    }

    /// The answer as an OpenAI assistant message, in the keys chat templates read: `content`
    /// (empty when absent), the reasoning as `reasoning_content` (when there is any),
    /// `tool_calls`.
    pub fn assistant_message(&self, object_arguments: ObjectArguments) -> Value {
        let mut message = serde_json::Map::new();
        message.insert("role".into(), Value::from("assistant"));
        message.insert(
            "content".into(),
            Value::from(self.content.clone().unwrap_or_default()),
        );
        if let Some(reasoning) = self.reasoning.as_ref().filter(|r| !r.is_empty()) {
            message.insert("reasoning_content".into(), Value::from(reasoning.clone()));
        }
        if !self.tool_calls.is_empty() {
            let calls: Vec<Value> = self
                .tool_calls
                .iter()
                .map(|call| {
                    let arguments = match (&call.arguments, object_arguments) {
                        (Arguments::Raw(text), _) => Value::from(text.clone()),
                        (Arguments::Object(value), ObjectArguments::Kept) => value.clone(),
                        (Arguments::Object(value), ObjectArguments::AsText) => {
                            Value::from(value.to_string())
                        }
                    };
                    serde_json::json!({
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": arguments},
                    })
                })
                .collect();
            message.insert("tool_calls".into(), Value::Array(calls));
        }
        Value::Object(message)
    }
}

/// How [`Completion::assistant_message`] writes arguments a server sent as an object: kept as
/// the object (history sent back to a server, as the model wrote them) or as its JSON text (the
/// OpenAI string form trainers' loaders expect).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectArguments {
    Kept,
    AsText,
}

fn non_empty_str(value: Option<&Value>) -> Option<String> {
    value
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// OpenRouter's `reasoning_details`: the `reasoning.text` entries in order (summaries and
/// encrypted blocks carry no model tokens we could rebuild).
fn reasoning_details_text(details: Option<&Value>) -> Option<String> {
    let details = details?.as_array()?;
    let mut text = String::new();
    for detail in details {
        if detail.get("type").and_then(Value::as_str) == Some("reasoning.text") {
            if let Some(t) = detail.get("text").and_then(Value::as_str) {
                text.push_str(t);
            }
        }
    }
    (!text.is_empty()).then_some(text)
}

fn content_text(content: Option<&Value>) -> Result<Option<String>, CompletionError> {
    match content {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for part in parts {
                if let Some(t) = part.get("text").and_then(Value::as_str) {
                    text.push_str(t);
                }
            }
            Ok(Some(text))
        }
        Some(_) => Err(CompletionError::WrongType {
            field: "message.content",
            expected: "a string, null or an array of parts",
        }),
    }
}

fn tool_call(call: &Value) -> Result<ToolCall, CompletionError> {
    let function = call.get("function").unwrap_or(call);
    let name = function
        .get("name")
        .and_then(Value::as_str)
        .ok_or(CompletionError::WrongType {
            field: "tool_calls[].function.name",
            expected: "a string",
        })?
        .to_string();
    let arguments = match function.get("arguments") {
        Some(Value::String(s)) => Arguments::Raw(s.clone()),
        None | Some(Value::Null) => Arguments::Raw(String::new()),
        Some(other) => Arguments::Object(other.clone()),
    };
    let id = call.get("id").and_then(Value::as_str).map(str::to_string);
    Ok(ToolCall {
        id,
        name,
        arguments,
    })
}

/// A server's id list. An empty list is no list: every answer has at least one token, and
/// llama.cpp's last stream chunk carries `__verbose.tokens: []` whatever it sampled.
fn id_list(value: Option<&Value>) -> Option<Vec<u32>> {
    let ids = value?.as_array()?;
    if ids.is_empty() {
        return None;
    }
    ids.iter()
        .map(|v| v.as_u64().and_then(|n| u32::try_from(n).ok()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_openrouter_shape() {
        let body = json!({
            "provider": "Moonshot AI",
            "choices": [{"finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": "", "reasoning": "think",
                "reasoning_details": [{"type": "reasoning.text", "text": "think"}],
                "tool_calls": [{"id": "call_1", "type": "function",
                    "function": {"name": "f", "arguments": "{\"a\": 1}"}}]}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 7, "cost": 0.001,
                "completion_tokens_details": {"reasoning_tokens": 2}}
        });
        let c = Completion::from_response(&body).unwrap();
        assert_eq!(c.reasoning.as_deref(), Some("think"));
        assert_eq!(c.content.as_deref(), Some(""));
        assert_eq!(
            c.tool_calls[0].arguments,
            Arguments::Raw("{\"a\": 1}".into())
        );
        assert_eq!(c.usage.as_ref().unwrap().completion_tokens, Some(7));
        assert_eq!(c.provider.as_deref(), Some("Moonshot AI"));
    }

    #[test]
    fn reads_reasoning_content_details_and_token_ids() {
        let body = json!({"prompt_token_ids": [1, 2],
            "choices": [{"token_ids": [5, 6], "message": {"reasoning_content": "r", "content": null}}]});
        let c = Completion::from_response(&body).unwrap();
        assert_eq!(c.reasoning.as_deref(), Some("r"));
        assert_eq!(c.content, None);
        assert_eq!(c.completion_token_ids, Some(vec![5, 6]));
        assert_eq!(c.prompt_token_ids, Some(vec![1, 2]));

        let body = json!({"choices": [{"message": {"content": "x",
            "reasoning_details": [{"type": "reasoning.text", "text": "a"},
                {"type": "reasoning.encrypted", "data": "zz"}, {"type": "reasoning.text", "text": "b"}]}}],
            "__verbose": {"tokens": [9]}});
        let c = Completion::from_response(&body).unwrap();
        assert_eq!(c.reasoning.as_deref(), Some("ab"));
        assert_eq!(c.completion_token_ids, Some(vec![9]));

        // llama.cpp streaming: the last chunk's `__verbose.tokens` is empty whatever was sampled.
        let body = json!({"choices": [{"message": {"content": "Hi"}, "finish_reason": "stop"}],
            "__verbose": {"tokens": []}});
        let c = Completion::from_response(&body).unwrap();
        assert_eq!(c.completion_token_ids, None);
    }

    #[test]
    fn error_object_and_missing_message_are_errors() {
        let body = json!({"error": {"code": 502, "message": "upstream"}});
        assert_eq!(
            Completion::from_response(&body),
            Err(CompletionError::ErrorObject("upstream".into()))
        );
        assert_eq!(
            Completion::from_response(&json!({"choices": []})),
            Err(CompletionError::NoMessage)
        );
    }
}
