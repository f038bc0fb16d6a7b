//! What the simulator needs to know of a family's output syntax (`server::Syntax`), in one place:
//! which syntax its own writer speaks and how many calls a text opens. How a server's parser
//! streams calls is read from `server::parser_traits`, the markers from the families' grammars.

use crate::model::family::Family;
use crate::server::Syntax;

/// The simulator's own writer ([`super::answer`]) speaks this syntax natively (Kimi's); a family
/// with another writes its answers through its profile.
pub fn written_natively(syntax: Option<Syntax>) -> bool {
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
