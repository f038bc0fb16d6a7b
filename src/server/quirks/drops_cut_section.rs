//! A `length` cut that leaves the Kimi tool section with no call to send drops the section's
//! text too: `content` is the text before the opener (SGLang 0.5.23, vLLM 0.33.0 and 0.11.2,
//! streamed or not; tests/data/server_shapes). Read by the Kimi parser.

use crate::server::quirk::Quirk;

#[derive(Debug, Clone, Copy)]
pub struct DropsCutSection;

impl Quirk for DropsCutSection {
    fn name(&self) -> &'static str {
        "drops_cut_section"
    }

    fn reason(&self) -> Option<&'static str> {
        Some("cut_inside_tool_section")
    }
}
