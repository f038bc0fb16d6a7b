//! Streamed calls carry the model's id text (after the joining space, with spaces around added
//! tokens), whatever the non-streamed answer does with ids (vLLM 0.11.2; kimi_k25_vllm011.jsonl).
//! Comes after [`MintsCallIds`](super::MintsCallIds) in a list: a stream's ids are checked again.

use crate::server::quirk::Quirk;
use crate::server::{ForwardInput, Parsed, ServerShape};

#[derive(Debug, Clone, Copy)]
pub struct StreamsVerbatimCallIds;

impl Quirk for StreamsVerbatimCallIds {
    fn name(&self) -> &'static str {
        "streams_verbatim_call_ids"
    }

    fn forward(&self, _shape: &ServerShape, input: &ForwardInput, parsed: &mut Parsed) {
        if !input.stream {
            return;
        }
        if input.syntax.ids_in_stream() {
            parsed.call_ids_checked = true;
        }
        if input.spaces && input.syntax.ids_in_stream() {
            // The id is what follows the call opener's delta (an added token): the joining
            // space first.
            for call in &mut parsed.calls {
                call.id.insert(0, ' ');
            }
        }
    }
}
