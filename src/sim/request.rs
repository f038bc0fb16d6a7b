//! The parts of an incoming chat-completions body the simulator honours. Anything else is
//! accepted and ignored, as lenient servers do; only a missing `messages` array is refused.

use serde_json::Value;

use super::routing::Preferences;

#[derive(Debug, Clone)]
pub struct ChatRequest {
    pub model: Option<String>,
    pub messages: Vec<Value>,
    pub tools: Vec<Value>,
    pub tool_choice: Option<Value>,
    /// `max_tokens`, or the newer `max_completion_tokens`.
    pub max_tokens: Option<usize>,
    pub seed: Option<u64>,
    pub stream: bool,
    /// `stream_options.include_usage` (OpenRouter sends usage regardless).
    pub include_usage: bool,
    /// `chat_template_kwargs` as sent (passed to the model's template).
    pub chat_template_kwargs: Option<serde_json::Map<String, Value>>,
    /// `chat_template_kwargs.thinking` (default true, as K2.5's template).
    pub thinking: bool,
    /// OpenRouter `reasoning.exclude`: reasoning is generated but not returned.
    pub exclude_reasoning: bool,
    /// vLLM/SGLang `return_token_ids`.
    pub return_token_ids: bool,
    /// vLLM's `spaces_between_special_tokens` as sent (`None`: the server's default).
    pub spaces_between_special_tokens: Option<bool>,
    /// llama.cpp `return_tokens` + `verbose` (`__verbose.tokens`).
    pub llama_verbose_tokens: bool,
    /// OpenRouter's `provider` preferences: which named providers may answer, in what order.
    pub routing: Preferences,
}

impl ChatRequest {
    /// The key every seeded choice for this request is drawn with: its messages, tools and
    /// `seed` ([`super::seed::request_key`]), so that a retry gets the same answer.
    pub fn key(&self) -> u64 {
        super::seed::request_key(
            &Value::Array(self.messages.clone()),
            &Value::Array(self.tools.clone()),
            self.seed,
        )
    }

    /// Read a request body; the error says what is wrong with it.
    pub fn from_json(body: &Value) -> Result<Self, String> {
        let obj = body
            .as_object()
            .ok_or("request body must be a JSON object")?;
        let messages = obj
            .get("messages")
            .and_then(Value::as_array)
            .ok_or("`messages` must be an array of messages")?
            .clone();
        if messages.is_empty() {
            return Err("`messages` must not be empty".to_string());
        }
        let tools = match obj.get("tools") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(tools)) => tools.clone(),
            Some(_) => return Err("`tools` must be an array".to_string()),
        };
        let flag = |v: Option<&Value>| v.and_then(Value::as_bool).unwrap_or(false);
        let max_tokens = obj
            .get("max_tokens")
            .or_else(|| obj.get("max_completion_tokens"))
            .and_then(Value::as_u64)
            .map(|n| n as usize);
        Ok(ChatRequest {
            model: obj.get("model").and_then(Value::as_str).map(str::to_string),
            messages,
            tools,
            tool_choice: obj.get("tool_choice").cloned(),
            max_tokens,
            seed: obj.get("seed").and_then(Value::as_u64),
            stream: flag(obj.get("stream")),
            include_usage: flag(
                obj.get("stream_options")
                    .and_then(|o| o.get("include_usage")),
            ),
            chat_template_kwargs: obj
                .get("chat_template_kwargs")
                .and_then(Value::as_object)
                .cloned(),
            thinking: obj
                .get("chat_template_kwargs")
                .and_then(|k| k.get("thinking"))
                .and_then(Value::as_bool)
                .unwrap_or(true),
            exclude_reasoning: flag(obj.get("reasoning").and_then(|r| r.get("exclude"))),
            return_token_ids: flag(obj.get("return_token_ids")),
            spaces_between_special_tokens: obj
                .get("spaces_between_special_tokens")
                .and_then(Value::as_bool),
            llama_verbose_tokens: flag(obj.get("return_tokens")) && flag(obj.get("verbose")),
            routing: Preferences::from_json(obj.get("provider"))?,
        })
    }
}
