//! Empty reasoning is left out (`null`) rather than sent as `""` (OpenRouter).

use crate::server::quirk::Quirk;
use crate::server::{ForwardInput, Parsed, ServerShape};

#[derive(Debug, Clone, Copy)]
pub struct DropsEmptyReasoning;

impl Quirk for DropsEmptyReasoning {
    fn name(&self) -> &'static str {
        "drops_empty_reasoning"
    }

    fn forward(&self, _shape: &ServerShape, _input: &ForwardInput, parsed: &mut Parsed) {
        parsed.reasoning = parsed.reasoning.take().filter(|r| !r.is_empty());
    }
}
