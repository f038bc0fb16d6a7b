//! Whitespace around each call's arguments is stripped in a streamed answer too (OpenRouter's
//! reassembled calls). Read by the Kimi parser.

use super::strips_arguments::argument_sites;
use crate::server::quirk::Quirk;
use crate::server::{parser_traits, ServerShape, Site, SiteInput};

#[derive(Debug, Clone, Copy)]
pub struct StripsStreamedArguments;

impl Quirk for StripsStreamedArguments {
    fn name(&self) -> &'static str {
        "strips_streamed_arguments"
    }

    fn reason(&self) -> Option<&'static str> {
        Some("server_strips_argument_whitespace")
    }

    fn sites(&self, _shape: &ServerShape, input: &SiteInput, text: &str) -> Vec<Site> {
        if !parser_traits(input.syntax).strippable_arguments
            || !input.stream
            || input.answer.tool_calls.is_empty()
        {
            return Vec::new();
        }
        argument_sites(text, None)
    }
}
