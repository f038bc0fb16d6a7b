//! What the simulator needs to know of a family's output syntax (`server::Syntax`), in one place:
//! which syntax its own writer speaks and how many calls a text opens. How a server's parser
//! streams calls is read from `server::parser_traits`, the markers from the families' grammars.

use crate::model::family::Family;
use crate::server::Syntax;

/// The syntax's reasoning parser also ends the reasoning where a tool section opens (vLLM's
/// `kimi_k2` reasoning parser: a section may open inside the reasoning).
pub fn reasoning_ends_at_tool_section(syntax: Option<Syntax>) -> bool {
    syntax == Some(Syntax::Kimi)
}

/// How many tool calls `text` opens, in any family's syntax (the ids a server mints for them).
pub fn calls_opened(text: &str) -> usize {
    let mut openers: Vec<&str> = Family::all()
        .iter()
        .filter_map(|f| f.spec().tool_grammar)
        .map(|g| g.call_begin())
        .collect();
    openers.sort_unstable();
    openers.dedup();
    openers
        .iter()
        .map(|marker| text.matches(marker).count())
        .sum()
}
