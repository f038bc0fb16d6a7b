//! Any other model: its own chat template and nothing else.
//!
//! - No known reasoning or tool-call markers; the completion text of a turn is the difference
//!   between rendering the conversation with and without it.
//! - End of turn: the tokenizer's `eos_token`.
//! - No built-in template: the model directory (or `--chat-template`) must provide one.

use super::{Family, FamilyRules, FamilySpec, K2vvThreshold};

pub const SPEC: FamilySpec = FamilySpec {
    name: "generic",
    // Last: it recognizes nothing, and is what detection falls back to.
    detect_order: u8::MAX,
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
    native_twins: &[],
    k2vv: K2vvThreshold::BORROWED_FROM_K2_0905,
    tool_grammar: None,
    distinctive_markers: &[],
};

impl Family {
    pub const GENERIC: Family = Family::new(&Generic);
}

pub const FAMILIES: &[Family] = &[Family::GENERIC];

/// No rules of its own: every [`FamilyRules`] default (detected only when nothing else is).
pub struct Generic;

impl FamilyRules for Generic {
    fn spec(&self) -> &'static FamilySpec {
        &SPEC
    }
}
