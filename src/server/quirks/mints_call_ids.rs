//! The server names tool calls itself: `call_<24 hex>` (OpenRouter), another random id (vLLM
//! 0.11.2 unstreamed, the hermes and deepseek parsers, llama.cpp's generic handler). The ids are
//! left as the model's text here and replaced by the caller (the simulator mints them); an
//! answer's ids are then not checked against the model's.

use crate::server::quirk::{CallIdForm, Evidence, Quirk, Seen};
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

    /// The family's own ids were passed on; ids of another form were minted.
    fn evidence(&self, seen: &Seen) -> Evidence {
        match seen.call_ids {
            Some(CallIdForm::Native) => Evidence::Contradicts("call ids native (functions.NAME:N)"),
            Some(CallIdForm::Minted) => Evidence::Shows("call ids minted by the server"),
            None => Evidence::Silent,
        }
    }

    fn reason(&self) -> Option<&'static str> {
        Some("server_rewrites_tool_call_ids")
    }
}
