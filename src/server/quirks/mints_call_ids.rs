//! The server names tool calls itself: `call_<24 hex>` (OpenRouter), another random id (vLLM
//! 0.11.2 unstreamed, the hermes and deepseek parsers, llama.cpp's generic handler). The ids are
//! left as the model's text here and replaced by the caller (the simulator mints them); an
//! answer's ids are then not checked against the model's.

use crate::server::quirk::Quirk;
use crate::server::{ForwardInput, Parsed, ServerShape};

#[derive(Debug, Clone, Copy)]
pub struct MintsCallIds;

impl Quirk for MintsCallIds {
    fn name(&self) -> &'static str {
        "mints_call_ids"
    }

    fn forward(&self, _shape: &ServerShape, _input: &ForwardInput, parsed: &mut Parsed) {
        parsed.call_ids_checked = false;
    }

    fn reason(&self) -> Option<&'static str> {
        Some("server_rewrites_tool_call_ids")
    }
}
