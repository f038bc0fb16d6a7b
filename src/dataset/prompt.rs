//! [`Prompt`]: one conversation to send, with a content-hash id so reruns and resumes agree.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use super::canonical::canonical_json;

/// One prompt: the conversation up to its last user turn, plus tools and metadata.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Prompt {
    /// Hex content hash of the canonical messages + tools.
    pub id: String,
    /// Where it came from (file name or source label).
    pub source: String,
    pub messages: Vec<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Value>>,
    /// The dataset's own answer and anything else worth keeping; never sent.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub meta: Value,
    /// The dataset's system text as it was, tool definitions included (glaive: function JSON in
    /// the system prompt, which `tools` holds parsed and `messages` holds without). Sent as the
    /// system message when tools are not sent as a parameter (`tools_as_parameter = false`), so
    /// the model still sees the tools, as the dataset meant. Not part of the id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_with_tools: Option<String>,
    /// Request options of this prompt's own, sent in its request over the run's (`tool_choice`,
    /// `parallel_tool_calls`, `max_tokens`, OpenRouter `provider` routing). Not part of the id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_options: Option<Box<PromptOptions>>,
}

/// The request options a prompt may carry (anything else in the prompts file is an error naming
/// the line, not silently dropped).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptOptions {
    /// `"auto"`, `"none"`, `"required"` or `{"type": "function", "function": {"name": …}}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// OpenRouter `provider` routing for this prompt (replaces the run's), e.g. `{"only": ["X"]}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<Value>,
    /// This prompt's completion limit; never above the run's `max_tokens` (the engine lowers it
    /// to the run's, so the budget's per-request bound holds). `build` reads the limit each
    /// request was sent with from the journal, so a cut is told from a finished answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
}

impl PromptOptions {
    /// The options as body fields (in a fixed order), for merging into a request body.
    pub fn fields(&self) -> Map<String, Value> {
        let mut fields = Map::new();
        if let Some(v) = &self.tool_choice {
            fields.insert("tool_choice".into(), v.clone());
        }
        if let Some(v) = self.parallel_tool_calls {
            fields.insert("parallel_tool_calls".into(), v.into());
        }
        if let Some(v) = &self.provider {
            fields.insert("provider".into(), v.clone());
        }
        if let Some(v) = self.max_tokens {
            fields.insert("max_tokens".into(), v.into());
        }
        fields
    }
}

impl Prompt {
    /// A prompt with its id computed by [`Prompt::content_id`]. An empty tool list is the same
    /// as no tools.
    pub fn new(
        source: impl Into<String>,
        messages: Vec<Value>,
        tools: Option<Vec<Value>>,
        meta: Value,
    ) -> Self {
        let tools = tools.filter(|t| !t.is_empty());
        let id = Self::content_id(&messages, tools.as_deref());
        Self {
            id,
            source: source.into(),
            messages,
            tools,
            meta,
            ..Self::default()
        }
    }

    /// The messages a request sends: with tools not sent as a parameter and the dataset's system
    /// text known ([`Prompt::system_with_tools`]), that text is the system message (replacing the
    /// first one, or first if there was none); otherwise `messages` as they are.
    pub fn messages_to_send(&self, tools_as_parameter: bool) -> Cow<'_, [Value]> {
        match (&self.system_with_tools, tools_as_parameter) {
            (Some(system), false) => Cow::Owned(with_system_text(&self.messages, system)),
            _ => Cow::Borrowed(&self.messages),
        }
    }

    /// The first 32 hex characters of the sha256 of the canonical JSON of
    /// `{"messages": messages, "tools": tools or null}`.
    ///
    /// The canonical form is exactly Python's
    /// `json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)` encoded as
    /// UTF-8, so the id can be recomputed with `hashlib.sha256(...).hexdigest()[:32]`.
    /// Source and metadata are not part of it: the same conversation is the same prompt.
    pub fn content_id(messages: &[Value], tools: Option<&[Value]>) -> String {
        let body = json!({ "messages": messages, "tools": tools });
        let digest = Sha256::digest(canonical_json(&body).as_bytes());
        hex::encode(&digest[..16])
    }

    /// Which of `count` shards this prompt belongs to: the id's first 64 bits modulo `count`.
    /// Depends only on the content, so shards are disjoint and stable across runs and machines.
    pub fn shard(&self, count: u64) -> u64 {
        let head = self.id.get(..16).unwrap_or("0");
        u64::from_str_radix(head, 16).unwrap_or(0) % count.max(1)
    }
}

/// `messages` with `system` as the first system message's content (or a system message first).
fn with_system_text(messages: &[Value], system: &str) -> Vec<Value> {
    let mut out = messages.to_vec();
    let first_system = out
        .iter_mut()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("system"));
    match first_system {
        Some(Value::Object(message)) => {
            message.insert("content".into(), Value::from(system));
        }
        _ => out.insert(0, json!({"role": "system", "content": system})),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expected id computed independently in Python:
    /// ```python
    /// obj = {"messages": [{"role": "system", "content": "Be brief."},
    ///                     {"role": "user", "content": "Wie spät ist es? 😀"}],
    ///        "tools": [{"type": "function", "function": {"name": "now",
    ///                   "description": "Current time", "parameters": {"type": "object",
    ///                   "properties": {"tz": {"type": "string"}}, "required": []}}}]}
    /// hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":"),
    ///                ensure_ascii=False).encode()).hexdigest()[:32]
    /// ```
    /// and again with `obj["tools"] = None` for the second id.
    #[test]
    fn id_matches_python_hashlib() {
        let messages = vec![
            json!({"role": "system", "content": "Be brief."}),
            json!({"role": "user", "content": "Wie spät ist es? 😀"}),
        ];
        let tools = vec![json!({"type": "function", "function": {"name": "now",
            "description": "Current time", "parameters": {"type": "object",
            "properties": {"tz": {"type": "string"}}, "required": []}}})];
        let prompt = Prompt::new("x.jsonl", messages.clone(), Some(tools), Value::Null);
        assert_eq!(prompt.id, "9c8d37dee47519df2ac491c8df2d36c3");
        let plain = Prompt::new("y.jsonl", messages, Some(vec![]), json!({"a": 1}));
        assert_eq!(plain.id, "55a9717a0fb1969b49d669d599da8e3c");
        assert_eq!(plain.tools, None);
    }
}
