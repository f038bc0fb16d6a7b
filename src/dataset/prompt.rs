//! [`Prompt`]: one conversation to send, with a content-hash id so reruns and resumes agree.

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
