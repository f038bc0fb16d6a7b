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
}
