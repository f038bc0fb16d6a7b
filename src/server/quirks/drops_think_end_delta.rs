//! Streamed: the lone `</think>` token's delta is dropped whole (vLLM 0.11.2's reasoning parser
//! returns nothing for a delta that is only the end token): with spaces around added tokens, the
//! joining space before `</think>` goes with it, so the reasoning loses one trailing space.

use crate::server::quirk::Quirk;

#[derive(Debug, Clone, Copy)]
pub struct DropsThinkEndDelta;

impl Quirk for DropsThinkEndDelta {
    fn name(&self) -> &'static str {
        "drops_think_end_delta"
    }
}
