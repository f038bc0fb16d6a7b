//! A stream sends one delta per sampled token (vLLM, SGLang); without it the pieces are the
//! provider's own (OpenRouter's vary). The simulator streams by token where this is listed and a
//! tokenizer is loaded.

use crate::server::quirk::Quirk;

#[derive(Debug, Clone, Copy)]
pub struct StreamsTokenDeltas;

impl Quirk for StreamsTokenDeltas {
    fn name(&self) -> &'static str {
        "streams_token_deltas"
    }
}
