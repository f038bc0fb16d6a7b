//! Whitespace-only content before tool calls becomes `null`, streamed or not (vLLM; measured
//! for Kimi streamed or not, for hermes (Qwen3) when not streamed). With
//! [`CutReportsToolCalls`](super::CutReportsToolCalls) the tool path, and so the nulling, is
//! taken whenever a cut answer's text holds the section opener; a shape that
//! [`StreamsWhitespaceContent`](super::StreamsWhitespaceContent) keeps it in a stream.

use super::{CutReportsToolCalls, StreamsWhitespaceContent};
use crate::model::family::kimi::{self, SECTION_BEGIN, THINK_END};
use crate::model::family::Syntax;
use crate::server::quirk::Quirk;
use crate::server::{parser_traits, ForwardInput, Parsed, ServerShape, Site, SiteInput};

const REASON: &str = "server_nulls_whitespace_content";

/// Whether the parser for `syntax` takes the path that nulls whitespace-only content.
fn nulls_with(syntax: Syntax, stream: bool) -> bool {
    let traits = parser_traits(syntax);
    if stream {
        traits.nulls_streamed_whitespace_content
    } else {
        traits.nulls_whitespace_content
    }
}

#[derive(Debug, Clone, Copy)]
pub struct NullsWhitespaceContent;

impl Quirk for NullsWhitespaceContent {
    fn name(&self) -> &'static str {
        "nulls_whitespace_content"
    }

    fn forward(&self, shape: &ServerShape, input: &ForwardInput, parsed: &mut Parsed) {
        let whitespace_only = parsed
            .content
            .as_deref()
            .is_some_and(|c| c.trim().is_empty() && !c.is_empty());
        let nulls_here = nulls_with(input.syntax, input.stream);
        let section_seen = input.cut
            && shape.quirks.has::<CutReportsToolCalls>()
            && input.tools_declared
            && input.text.contains(kimi::SECTION_BEGIN);
        let tool_path = !parsed.calls.is_empty() || section_seen;
        let streamed_as_is = input.stream && shape.quirks.has::<StreamsWhitespaceContent>();
        if nulls_here && whitespace_only && tool_path && !streamed_as_is {
            parsed.content = None;
        }
    }

    /// Empty content right before the tool section, where the answer took the tool path: it
    /// may have been whitespace (once the opener was seen, also when a cut left no call, with
    /// [`CutReportsToolCalls`]). Found at Kimi's section opener: another family's text holds
    /// none (an answer that does is flagged as another family's, `reconstruct::classify`).
    fn sites(&self, shape: &ServerShape, input: &SiteInput, text: &str) -> Vec<Site> {
        let streamed_as_is = input.stream && shape.quirks.has::<StreamsWhitespaceContent>();
        if !nulls_with(input.syntax, input.stream) || !input.tools_declared || streamed_as_is {
            return Vec::new();
        }
        let Some(at) = text.find(SECTION_BEGIN) else {
            return Vec::new();
        };
        let before = &text[..at];
        let empty = before.is_empty() || before.ends_with(THINK_END);
        let tool_path = !input.answer.tool_calls.is_empty()
            || (input.cut && shape.quirks.has::<CutReportsToolCalls>());
        if empty && tool_path {
            vec![Site { at, reason: REASON }]
        } else {
            Vec::new()
        }
    }

    fn reason(&self) -> Option<&'static str> {
        Some(REASON)
    }
}
