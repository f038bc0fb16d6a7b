//! Streamed: the lone `</think>` token's delta is dropped whole (vLLM 0.11.2's reasoning parser
//! returns nothing for a delta that is only the end token): with spaces around added tokens, the
//! joining space before `</think>` goes with it, so the reasoning loses one trailing space.

use crate::server::quirk::Quirk;
use crate::server::ReadBackRules;

#[derive(Debug, Clone, Copy)]
pub struct DropsThinkEndDelta;

impl Quirk for DropsThinkEndDelta {
    fn name(&self) -> &'static str {
        "drops_think_end_delta"
    }

    fn read_back(&self, rules: &mut ReadBackRules) {
        rules.drops_space_before_think_end = true;
    }
}
