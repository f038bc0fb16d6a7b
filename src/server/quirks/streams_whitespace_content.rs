//! Streamed, whitespace-only content before the tool section is sent delta by delta, not nulled
//! (vLLM 0.11.2).

use crate::server::quirk::Quirk;

#[derive(Debug, Clone, Copy)]
pub struct StreamsWhitespaceContent;

impl Quirk for StreamsWhitespaceContent {
    fn name(&self) -> &'static str {
        "streams_whitespace_content"
    }
}
