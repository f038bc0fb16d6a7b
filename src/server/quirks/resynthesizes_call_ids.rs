//! Tool-call ids are re-synthesized as `functions.NAME:(calls in history + i)`, whatever the
//! model wrote (SGLang 0.5.23's `KimiK2Detector`, tests/data/server_shapes/kimi_k25_sglang.jsonl): the model's own id text is lost.

use crate::server::quirk::Quirk;
use crate::server::ReadBackRules;
use crate::server::{ForwardInput, Parsed, ServerShape};

#[derive(Debug, Clone, Copy)]
pub struct ResynthesizesCallIds;

impl Quirk for ResynthesizesCallIds {
    fn name(&self) -> &'static str {
        "resynthesizes_call_ids"
    }

    fn read_back(&self, rules: &mut ReadBackRules) {
        rules.rewrites_call_ids = true;
    }

    fn forward(&self, _shape: &ServerShape, input: &ForwardInput, parsed: &mut Parsed) {
        if !input.syntax.ids_in_stream() {
            return;
        }
        for (i, call) in parsed.calls.iter_mut().enumerate() {
            call.id = format!("functions.{}:{}", call.name, input.history_calls + i);
        }
    }

    fn reason(&self) -> Option<&'static str> {
        Some("server_rewrites_tool_call_ids")
    }
}
