//! Whitespace around each call's arguments is stripped in a streamed answer too (OpenRouter's
//! reassembled calls). Read by the Kimi parser.

use crate::server::quirk::Quirk;

#[derive(Debug, Clone, Copy)]
pub struct StripsStreamedArguments;

impl Quirk for StripsStreamedArguments {
    fn name(&self) -> &'static str {
        "strips_streamed_arguments"
    }

    fn reason(&self) -> Option<&'static str> {
        Some("server_strips_argument_whitespace")
    }
}
