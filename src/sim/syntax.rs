//! What the simulator needs to know of a family's output syntax (`server::Syntax`), in one place:
//! which syntax its own writer speaks, how many calls a text opens, and how vLLM's tool parser
//! for a syntax streams calls.
//! Everything else about a syntax (its markers, its parsers) is read from `server` and `model`.

use crate::model::family::{deepseek_v3, kimi, qwen3};
use crate::server::Syntax;

/// The simulator's own writer ([`super::answer`]) speaks this syntax natively (Kimi's); a family
/// with another writes its answers through its profile.
pub fn written_natively(syntax: Option<Syntax>) -> bool {
    syntax == Some(Syntax::Kimi)
}

/// How many tool calls `text` opens, in any family's syntax (the ids a server mints for them).
pub fn calls_opened(text: &str) -> usize {
    [kimi::CALL_BEGIN, qwen3::CALL_OPEN, deepseek_v3::CALL_BEGIN]
        .iter()
        .map(|marker| text.matches(marker).count())
        .sum()
}

/// How vLLM's tool parser for one syntax streams a call (measured on vLLM 0.33.0's own code:
/// tests/data/server_shapes/).
#[derive(Debug, Clone, Copy)]
pub struct VllmToolParser {
    /// A call's header delta also carries its first argument piece (0.33's `kimi_k2` parser engine).
    pub header_carries_arguments: bool,
    /// Every tool-call delta carries `content: null` (`hermes`).
    pub tool_deltas_null_content: bool,
}

impl VllmToolParser {
    pub fn of(syntax: Syntax) -> VllmToolParser {
        VllmToolParser {
            header_carries_arguments: syntax == Syntax::Kimi,
            tool_deltas_null_content: syntax == Syntax::Hermes,
        }
    }
}
