//! What a shape's quirks tell the reconstruction about reading an answer back: the places in a
//! candidate text where a quirk destroyed whitespace ([`Site`]), a count in `usage` a quirk
//! defines ([`UsageInput`]), and the rules a read-back follows ([`ReadBackRules`]). Each quirk
//! fills in its own part ([`Quirk::sites`](super::Quirk::sites),
//! [`Quirk::usage_agrees`](super::Quirk::usage_agrees),
//! [`Quirk::read_back`](super::Quirk::read_back)); the reconstruction owns the machinery that
//! uses them (the count over sites, the leak's reading, the fidelity flags).

use crate::completion::{Completion, Usage};
use crate::model::family::Syntax;

/// How the answer whose candidates are searched for sites was asked for and received.
#[derive(Debug, Clone, Copy)]
pub struct SiteInput<'a> {
    pub syntax: Syntax,
    pub stream: bool,
    pub thinking: bool,
    pub tools_declared: bool,
    /// The answer was cut by `max_tokens`.
    pub cut: bool,
    /// The answer received.
    pub answer: &'a Completion,
    /// The whitespace around each call's arguments is not in a streamed answer, whatever the
    /// shape says of its arguments: `Some(None)` for every call, `Some(Some(n))` before the
    /// first `n` calls' arguments only ([`ReadBackRules::section_buffer_in_content`]).
    pub arguments_hidden: Option<Option<usize>>,
}

/// A place in a candidate text where a quirk destroyed whitespace the answer cannot show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Site {
    /// Byte offset in the text: the whitespace was right before it.
    pub at: usize,
    /// The fidelity reason's stable name a sample carries when the site stays open.
    pub reason: &'static str,
}

/// What a candidate's `usage` counts are checked with.
pub struct UsageInput<'a> {
    pub syntax: Syntax,
    pub thinking: bool,
    pub usage: Option<&'a Usage>,
    /// The family's reasoning close (a special token), if it has one.
    pub reasoning_close: Option<&'a str>,
    /// The number of tokens of a text.
    pub count: &'a dyn Fn(&str) -> usize,
}

/// How a shape's answers are read back: each flag is set by the quirks whose effect it undoes
/// or doubts ([`Quirk::read_back`](super::Quirk::read_back)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadBackRules {
    /// A non-thinking answer may be all under reasoning: read an answer with nothing else back
    /// as content.
    pub reasoning_when_thinking_off: bool,
    /// A stream's content ends with the tool-section buffer: read the calls back from it.
    pub section_buffer_in_content: bool,
    /// With the reasoning close in the prompt, a stream's first token is the reasoning and the
    /// rest is content: one text again.
    pub first_token_as_reasoning: bool,
    /// A stream drops the joining space before `</think>` with its delta.
    pub drops_space_before_think_end: bool,
    /// A stream drops the joining space before the tool-section opener with its delta.
    pub drops_space_before_section: bool,
    /// The stream is modelled token by token: candidates are sent forward with their tokens.
    pub stream_by_token: bool,
    /// `finish_reason` `tool_calls` also for a `length` cut: a cut may hide behind it.
    pub cut_hidden_by_tool_calls: bool,
    /// An unfinished call is dropped from the answer (not streamed).
    pub drops_unfinished_call: bool,
    /// The model's call ids are replaced whatever they were.
    pub rewrites_call_ids: bool,
    /// Arguments may be re-serialized (coerced to the request's schema).
    pub reserializes_arguments: bool,
    /// `usage.prompt_tokens` is the length of the prompt rendered from the request.
    pub prompt_count_is_render: bool,
}
