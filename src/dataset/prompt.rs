//! [`Prompt`]: one conversation to send, with a content-hash id so reruns and resumes agree.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::canonical::canonical_json;

/// One prompt: the conversation up to its last user turn, plus tools and metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
