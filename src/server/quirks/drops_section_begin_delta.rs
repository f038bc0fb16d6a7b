//! Streamed: the section opener's delta is suppressed (vLLM 0.11.2): with spaces, the joining
//! space before it is not sent as content either.

use crate::server::quirk::Quirk;
use crate::server::ReadBackRules;

#[derive(Debug, Clone, Copy)]
pub struct DropsSectionBeginDelta;

impl Quirk for DropsSectionBeginDelta {
    fn name(&self) -> &'static str {
        "drops_section_begin_delta"
    }

    fn read_back(&self, rules: &mut ReadBackRules) {
        rules.drops_space_before_section = true;
    }
}
