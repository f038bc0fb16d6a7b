//! Any other model: its own chat template and nothing else.
//!
//! - No known reasoning or tool-call markers; the completion text of a turn is the difference
//!   between rendering the conversation with and without it.
//! - End of turn: the tokenizer's `eos_token`.
//! - No built-in template: the model directory (or `--chat-template`) must provide one.

use super::{FamilyRules, FamilySpec};

pub const SPEC: FamilySpec = FamilySpec {
    name: "generic",
    builtin_template: None,
    end_of_turn: None,
    reasoning_close: None,
    tool_section_begin: None,
    thinking_switch: None,
    always_thinks: false,
    syntax: None,
    detokenizer_spaces: false,
    keeps_null_content_with_tool_calls: false,
    template_ignores_tools: false,
};

/// No rules of its own: every [`FamilyRules`] default (detected only when nothing else is).
pub struct Generic;

impl FamilyRules for Generic {
    fn spec(&self) -> &'static FamilySpec {
        &SPEC
    }
}
