//! Whitespace around each call's arguments is stripped in a non-streamed answer (the Kimi
//! parser's regex: vLLM, SGLang 0.5.23, OpenRouter's upstreams; tests/data/server_shapes/). Read by the Kimi
//! parser (`server::kimi::parse`). The count decides the whitespace where it can; where it
//! cannot, the sample is ambiguous for this reason.

use crate::completion::Arguments;
use crate::model::family::kimi::{ARGUMENT_BEGIN, CALL_END};
use crate::server::quirk::{Evidence, Quirk, Seen};
use crate::server::{parser_traits, ServerShape, Site, SiteInput};

const REASON: &str = "server_strips_argument_whitespace";

/// The whitespace sites around each call's arguments in a Kimi `text`: before and after each,
/// or before the first `starts_only` calls' only (and none after them).
pub(super) fn argument_sites(text: &str, starts_only: Option<usize>) -> Vec<Site> {
    let mut sites = Vec::new();
    let mut from = 0;
    let mut call = 0;
    while let Some(rel) = text[from..].find(ARGUMENT_BEGIN) {
        let start = from + rel + ARGUMENT_BEGIN.len();
        let Some(end_rel) = text[start..].find(CALL_END) else {
            break;
        };
        let end = start + end_rel;
        let at: &[usize] = match starts_only {
            Some(n) if call >= n => &[],
            Some(_) => &[start],
            None => &[start, end],
        };
        sites.extend(at.iter().map(|&at| Site { at, reason: REASON }));
        from = end;
        call += 1;
    }
    sites
}

#[derive(Debug, Clone, Copy)]
pub struct StripsArguments;

impl Quirk for StripsArguments {
    fn name(&self) -> &'static str {
        "strips_arguments"
    }

    fn reason(&self) -> Option<&'static str> {
        Some(REASON)
    }

    fn sites(&self, _shape: &ServerShape, input: &SiteInput, text: &str) -> Vec<Site> {
        if !parser_traits(input.syntax).strippable_arguments
            || input.stream
            || input.answer.tool_calls.is_empty()
        {
            return Vec::new();
        }
        argument_sites(text, None)
    }

    /// Arguments with whitespace around them in a non-streamed answer were not stripped (the
    /// Kimi parser's: with the family known, the forward check judges it).
    fn evidence(&self, seen: &Seen) -> Evidence {
        let Some(answer) = seen.answer.filter(|_| !seen.forward_checked) else {
            return Evidence::Silent;
        };
        let padded = answer.tool_calls.iter().any(|call| match &call.arguments {
            Arguments::Raw(text) => !text.is_empty() && text.trim() != text,
            Arguments::Object(_) => false,
        });
        if padded && !seen.stream {
            Evidence::Contradicts("arguments keep surrounding whitespace")
        } else {
            Evidence::Silent
        }
    }
}
