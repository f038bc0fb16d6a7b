//! Building the chat-completions request body from a [`Prompt`](crate::dataset::Prompt) and the
//! run's settings (sampling, OpenRouter extras, self-hosted extras).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Settings that shape every request of a run. Part of the run manifest's fingerprint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestOptions {
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// OpenRouter `reasoning` object (`{effort}` or `{max_tokens}`, `exclude`, `enabled`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Value>,
    /// OpenRouter `provider` routing object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<Value>,
    /// Self-hosted: `chat_template_kwargs` (e.g. `{"thinking": false}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_template_kwargs: Option<Map<String, Value>>,
    /// Ask the server for its own token ids (vLLM/SGLang `return_token_ids`, llama.cpp `return_tokens`+`verbose`).
    #[serde(default)]
    pub server_token_ids: bool,
    /// Send the prompt's tools as the `tools` parameter (true) or leave them in the system prompt as the dataset has them.
    #[serde(default = "default_true")]
    pub tools_as_parameter: bool,
    #[serde(default)]
    pub stream: bool,
    /// Anything else to merge into the body verbatim.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra_body: Map<String, Value>,
}

fn default_true() -> bool {
    true
}
