//! Streamed, at `<|tool_calls_section_end|>` vLLM 0.11.2's tool parser sends its buffer as
//! `content`: every text it was given since `</think>` (the content before the section again, each
//! call's raw text with its markers) with the section markers cut out; nothing when that is
//! whitespace only. The buffer is cut to its last 512 characters whenever it passes
//! [`SECTION_LEAK_MAX_CHARS`](crate::server::SECTION_LEAK_MAX_CHARS), at token boundaries the
//! text does not show: `server::forward` leaves a longer leak unmodelled, the stepwise stream
//! ([`super::Vllm011Stepwise`]) follows it. The reconstruction reads calls back from the leak
//! (`reconstruct::leak`).

use super::strips_arguments::argument_sites;
use super::StripsStreamedArguments;
use crate::server::quirk::Quirk;
use crate::server::{parser_traits, ReadBackRules, ServerShape, Site, SiteInput};

#[derive(Debug, Clone, Copy)]
pub struct LeaksSectionBuffer;

impl Quirk for LeaksSectionBuffer {
    fn name(&self) -> &'static str {
        "leaks_section_buffer"
    }

    fn read_back(&self, rules: &mut ReadBackRules) {
        rules.section_buffer_in_content = true;
    }

    /// Streamed calls with no leak to read them from show their arguments' first lines only
    /// ([`SiteInput::arguments_hidden`]): the whitespace around them is open (a shape that
    /// strips streamed arguments names every site itself).
    fn sites(&self, shape: &ServerShape, input: &SiteInput, text: &str) -> Vec<Site> {
        let Some(hidden) = input.arguments_hidden else {
            return Vec::new();
        };
        let stripped_anyway = shape.quirks.has::<StripsStreamedArguments>();
        if !parser_traits(input.syntax).strippable_arguments
            || !input.stream
            || input.answer.tool_calls.is_empty()
            || stripped_anyway
        {
            return Vec::new();
        }
        argument_sites(text, hidden)
    }
}
