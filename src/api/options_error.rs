//! What is wrong with a run's request settings, in words that say what to change.

use super::ServerKind;

/// A run setting that cannot work; the message names the setting and what to do.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OptionsError {
    #[error("`model` is empty: set the model id (e.g. `moonshotai/kimi-k2-0905:exacto`)")]
    EmptyModel,
    #[error(
        "`reasoning` sets both `effort` and `max_tokens`; OpenRouter accepts only one of them"
    )]
    ReasoningEffortAndMaxTokens,
    #[error("`reasoning` is invalid: {0}")]
    Reasoning(String),
    #[error("`provider` routing is invalid: {0}")]
    Provider(String),
    #[error("`{field}` = {value} is out of range: {expected}")]
    OutOfRange {
        field: &'static str,
        value: String,
        expected: &'static str,
    },
    #[error(
        "`server_token_ids` needs a server that returns its own ids: set `server_kind` to vllm, sglang or llama_cpp (it is {0:?})"
    )]
    TokenIdsUnsupported(ServerKind),
    /// SGLang sends no ids in stream chunks; llama.cpp's final chunk carries `__verbose.tokens: []`;
    /// vLLM's streamed chunks are not known to carry them (its `return_token_ids` is documented
    /// for whole answers only), and draftgen collects no ids from a stream — refused rather than
    /// silently storing none.
    #[error(
        "{0:?} token ids (`server_token_ids` / --server-token-ids) are only collected from non-streamed answers: turn `stream` (--stream) off or `server_token_ids` off"
    )]
    NoTokenIdsWhenStreaming(ServerKind),
}
