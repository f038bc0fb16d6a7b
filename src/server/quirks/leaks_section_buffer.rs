//! Streamed, at `<|tool_calls_section_end|>` vLLM 0.11.2's tool parser sends its buffer as
//! `content`: every text it was given since `</think>` (the content before the section again, each
//! call's raw text with its markers) with the section markers cut out; nothing when that is
//! whitespace only. The buffer is cut to its last 512 characters whenever it passes
//! [`SECTION_LEAK_MAX_CHARS`](crate::server::SECTION_LEAK_MAX_CHARS), at token boundaries the
//! text does not show: `server::forward` leaves a longer leak unmodelled, the stepwise stream
//! ([`super::Vllm011Stepwise`]) follows it. The reconstruction reads calls back from the leak
//! (`reconstruct::leak`).

use crate::server::quirk::Quirk;

#[derive(Debug, Clone, Copy)]
pub struct LeaksSectionBuffer;

impl Quirk for LeaksSectionBuffer {
    fn name(&self) -> &'static str {
        "leaks_section_buffer"
    }
}
