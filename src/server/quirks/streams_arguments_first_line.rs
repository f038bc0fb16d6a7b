//! Streamed arguments are what vLLM 0.11.2's `…<|tool_call_argument_begin|>\s*(?P<args>.*)` (no
//! DOTALL) matched before `<|tool_call_end|>` arrived: leading whitespace skipped, up to the first
//! newline; the end token's delta (with its joining space) is never sent.

use crate::server::quirk::Quirk;

#[derive(Debug, Clone, Copy)]
pub struct StreamsArgumentsFirstLine;

impl Quirk for StreamsArgumentsFirstLine {
    fn name(&self) -> &'static str {
        "streams_arguments_first_line"
    }
}
