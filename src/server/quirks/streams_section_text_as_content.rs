//! Streamed, the text of the tool section outside its calls (whitespace after the opener,
//! between calls, after the last call) is sent as `content`, the section's markers cut out:
//! SGLang 0.5.23's `KimiK2Detector.parse_streaming_increment` drains the buffer before each
//! `<|tool_call_begin|>` as normal text; unstreamed, only the text before the section is.

use crate::server::quirk::Quirk;

#[derive(Debug, Clone, Copy)]
pub struct StreamsSectionTextAsContent;

impl Quirk for StreamsSectionTextAsContent {
    fn name(&self) -> &'static str {
        "streams_section_text_as_content"
    }
}
