//! Whitespace around each call's arguments is stripped in a non-streamed answer (the Kimi
//! parser's regex: vLLM, SGLang 0.5.23, OpenRouter's upstreams; tests/data/server_shapes/). Read by the Kimi
//! parser (`server::kimi::parse`). The count decides the whitespace where it can; where it
//! cannot, the sample is ambiguous for this reason.

use crate::completion::{Arguments, Completion};
use crate::server::quirk::{Evidence, Quirk};

#[derive(Debug, Clone, Copy)]
pub struct StripsArguments;

impl Quirk for StripsArguments {
    fn name(&self) -> &'static str {
        "strips_arguments"
    }

    fn reason(&self) -> Option<&'static str> {
        Some("server_strips_argument_whitespace")
    }

    /// Arguments with whitespace around them in a non-streamed answer were not stripped.
    fn evidence(&self, answer: &Completion, stream: bool) -> Evidence {
        let padded = answer.tool_calls.iter().any(|call| match &call.arguments {
            Arguments::Raw(text) => !text.is_empty() && text.trim() != text,
            Arguments::Object(_) => false,
        });
        if padded && !stream {
            Evidence::Contradicts("arguments keep surrounding whitespace")
        } else {
            Evidence::Silent
        }
    }
}
