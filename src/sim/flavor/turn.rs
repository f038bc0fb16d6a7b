//! [`Turn`]: one answer as the simulator sampled and counted it, before a server shapes it.

use serde_json::Value;

use crate::server::{ServerShape, Syntax};
use crate::sim::conventions::Conventions;
use crate::sim::faults::ToolDefect;
use crate::sim::tokens::TokenCounter;

/// One answer, ready to be shaped: what the model sampled and what the server counted.
#[derive(Debug, Clone)]
pub struct Turn {
    /// The response id (`gen-…`, `chatcmpl-…`).
    pub id: String,
    pub created: u64,
    pub model: String,
    /// The detokenized output without the stop token: what a server's parsers see.
    pub text: String,
    /// `text` without the partial character a cut may end on ([`Turn::partial_tokens`]).
    pub complete_text: String,
    /// The last sampled ids that end inside a character (a cut), whose text an incremental
    /// detokenizer waiting for whole characters never sends.
    pub partial_tokens: usize,
    /// Sampled ids (`<|im_end|>` included unless cut), when a tokenizer is loaded.
    pub token_ids: Option<Vec<u32>>,
    pub prompt_token_ids: Option<Vec<u32>>,
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
    pub reasoning_tokens: usize,
    /// `max_tokens` cut the answer.
    pub cut: bool,
    pub thinking: bool,
    pub tools_declared: bool,
    /// The request's `tools` (vLLM 0.33 coerces arguments to their schemas).
    pub tools: Vec<Value>,
    pub cost: f64,
    /// Ids for structured tool calls where the flavour mints its own (`call_<24 hex>`).
    pub minted_call_ids: Vec<String>,
    pub provider: String,
    pub spaces_around_special_tokens: bool,
    pub stream_chunk_chars: usize,
    pub exclude_reasoning: bool,
    pub return_token_ids: bool,
    pub llama_verbose_tokens: bool,
    pub include_usage: bool,
    /// Tool calls made by earlier assistant turns of the request.
    pub history_calls: usize,
    /// The prompt's ids hold the family's reasoning close (`server::ForwardInput`).
    pub prompt_closes_reasoning: bool,
    /// The first sampled token's text as the detokenizer sends it (`None`: no tokenizer).
    pub first_token: Option<String>,
    /// The last sampled token's text (`None`: no tokenizer, or nothing sampled).
    pub last_token: Option<String>,
    /// The end-of-turn id that ended the answer (`None`: cut, or no tokenizer).
    pub stop_token: Option<u32>,
    /// Stream one token's text per delta, split with this tokenizer (vLLM and SGLang do); `None`:
    /// pieces of `stream_chunk_chars` characters.
    pub token_deltas: Option<TokenCounter>,
    /// The family syntax of `text` (which parsers the server runs).
    pub syntax: Syntax,
    /// The server shape answering (the named provider's, or [`SimConfig::server_shape`](crate::sim::SimConfig::server_shape)): what
    /// it does to the text, and which server's JSON dresses the answer (its kind).
    pub shape: &'static ServerShape,
    /// Tool-call defects injected into this answer ([`ToolDefect`]).
    pub defects: Vec<ToolDefect>,
    /// A named provider answers: every flavour names it in a top-level `provider`.
    pub provider_in_body: bool,
    /// The answering provider's conventions (none for the simulator's own shape).
    pub conventions: Conventions,
}
