//! Streamed, at the finish the last call's arguments are completed toward the detector's `{}`
//! when they are a prefix of it (`""` → `{}`, `{` → `}` more): SGLang 0.5.23's
//! `_check_for_unstreamed_tool_args` sends `json.dumps(prev_tool_call_arr[-1]["arguments"])`
//! past what was streamed, and `KimiK2Detector` never fills those arguments in (`{}`).

use crate::server::quirk::Quirk;
use crate::server::{parser_traits, ForwardInput, Parsed, ServerShape};

#[derive(Debug, Clone, Copy)]
pub struct CompletesEmptyLastArguments;

impl Quirk for CompletesEmptyLastArguments {
    fn name(&self) -> &'static str {
        "completes_empty_last_arguments"
    }

    fn forward(&self, _shape: &ServerShape, input: &ForwardInput, parsed: &mut Parsed) {
        if !(input.stream && parser_traits(input.syntax).detector_leaves_arguments_empty) {
            return;
        }
        if let Some(last) = parsed.calls.last_mut() {
            if "{}".starts_with(last.arguments.as_str()) {
                last.arguments = "{}".to_string();
            }
        }
    }
}
