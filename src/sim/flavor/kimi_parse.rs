//! The server-side Kimi parsers every parsing flavour runs, as vLLM implements them
//! (FACTS.md §B1, §B2), plus vLLM's detokenizer artefact (§B4):
//!
//! - reasoning (`kimi_k25`): a leading `<think>` is consumed; reasoning ends at the earliest of
//!   `</think>` (dropped), `<|tool_calls_section_begin|>` or `<|tool_call_begin|>` (both kept in
//!   content); no end marker means everything is reasoning; nothing is trimmed; with
//!   `thinking: false` the parser is the identity.
//! - tools (`kimi_k2`): only when the content holds `<|tool_calls_section_begin|>`; each call
//!   matched by vLLM's regex, `id` = the raw id text, `name` = `id.split(":")[0].split(".")[-1]`,
//!   `arguments` = the raw text stripped; content = the text before the section, `None` if empty.

use std::sync::LazyLock;

use fancy_regex::Regex;

use crate::sim::answer::{
    ARGUMENT_BEGIN, CALL_BEGIN, CALL_END, SECTION_BEGIN, SECTION_END, THINK_END,
};

const THINK_BEGIN: &str = "<think>";
/// The singular misspelling parsers accept as a text fallback.
const SECTION_BEGIN_SINGULAR: &str = "<|tool_call_section_begin|>";

/// vLLM's `kimi_k2` tool-call regex (DOTALL).
static CALL_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?s)<\|tool_call_begin\|>\s*(?P<tool_call_id>[^<]+:\d+)\s*<\|tool_call_argument_begin\|>\s*(?P<function_arguments>(?:(?!<\|tool_call_begin\|>).)*?)\s*<\|tool_call_end\|>",
    )
    .unwrap_or_else(|e| panic!("the tool-call regex is a constant and compiles: {e}"))
});

/// Kimi's added tokens that vLLM's slow detokenizer surrounds with spaces.
const ADDED_TOKENS: [&str; 7] = [
    THINK_BEGIN,
    THINK_END,
    SECTION_BEGIN,
    SECTION_END,
    CALL_BEGIN,
    ARGUMENT_BEGIN,
    CALL_END,
];

/// One parsed tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// The fields a parsing server returns.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Parsed {
    pub reasoning: Option<String>,
    pub content: Option<String>,
    pub calls: Vec<ParsedCall>,
}

/// The OpenAI `finish_reason` of a parsed answer (what vLLM and OpenRouter both report).
pub fn finish_reason(turn: &super::Turn, parsed: &Parsed) -> &'static str {
    if turn.cut {
        "length"
    } else if !parsed.calls.is_empty() {
        "tool_calls"
    } else {
        "stop"
    }
}

/// Run the reasoning parser, then (with tools declared) the tool parser.
pub fn parse(text: &str, thinking: bool, tools_declared: bool) -> Parsed {
    let (reasoning, content) = if thinking {
        split_reasoning(text)
    } else {
        (None, Some(text.to_string()))
    };
    let mut parsed = Parsed {
        reasoning,
        content,
        calls: Vec::new(),
    };
    if tools_declared {
        if let Some(content) = parsed.content.take() {
            let (before, calls) = extract_tool_calls(&content);
            parsed.content = before;
            parsed.calls = calls;
        }
    }
    parsed
}

fn split_reasoning(text: &str) -> (Option<String>, Option<String>) {
    let text = text.strip_prefix(THINK_BEGIN).unwrap_or(text);
    let ends = [
        (text.find(THINK_END), THINK_END.len()),
        (text.find(SECTION_BEGIN), 0),
        (text.find(CALL_BEGIN), 0),
    ];
    let earliest = ends
        .iter()
        .filter_map(|(at, skip)| at.map(|at| (at, *skip)))
        .min_by_key(|(at, _)| *at);
    match earliest {
        Some((at, skip)) => {
            let content = &text[at + skip..];
            (
                Some(text[..at].to_string()),
                (!content.is_empty()).then(|| content.to_string()),
            )
        }
        None => (Some(text.to_string()), None),
    }
}

/// (content before the tool section or `None` if empty, calls); no section: content unchanged.
fn extract_tool_calls(content: &str) -> (Option<String>, Vec<ParsedCall>) {
    let start = content
        .find(SECTION_BEGIN)
        .or_else(|| content.find(SECTION_BEGIN_SINGULAR));
    let Some(start) = start else {
        return (Some(content.to_string()), Vec::new());
    };
    let calls: Vec<ParsedCall> = CALL_RE
        .captures_iter(content)
        .filter_map(Result::ok)
        .filter_map(|caps| {
            let id = caps.name("tool_call_id")?.as_str().trim().to_string();
            let arguments = caps.name("function_arguments")?.as_str().trim().to_string();
            let before_colon = id.split(':').next().unwrap_or("");
            let name = before_colon.rsplit('.').next().unwrap_or("").to_string();
            Some(ParsedCall {
                id,
                name,
                arguments,
            })
        })
        .collect();
    if calls.is_empty() {
        return (Some(content.to_string()), calls);
    }
    let before = &content[..start];
    ((!before.is_empty()).then(|| before.to_string()), calls)
}

/// vLLM's `spaces_between_special_tokens` artefact (vLLM #33457): the text is cut into runs of
/// ordinary text and added tokens, and the non-empty pieces are joined with one space.
pub fn space_added_tokens(text: &str) -> String {
    let mut pieces: Vec<&str> = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let next = ADDED_TOKENS
            .iter()
            .filter_map(|t| rest.find(t).map(|at| (at, t.len())))
            .min_by_key(|(at, _)| *at);
        match next {
            Some((at, len)) => {
                if at > 0 {
                    pieces.push(&rest[..at]);
                }
                pieces.push(&rest[at..at + len]);
                rest = &rest[at + len..];
            }
            None => {
                pieces.push(rest);
                rest = "";
            }
        }
    }
    pieces.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const CALL: &str = "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:3<|tool_call_argument_begin|>{\"city\": \"Paris\"} <|tool_call_end|><|tool_calls_section_end|>";

    #[test]
    fn reasoning_ends_at_think_end() {
        let p = parse("hmm</think>Four.", true, false);
        assert_eq!(p.reasoning.as_deref(), Some("hmm"));
        assert_eq!(p.content.as_deref(), Some("Four."));
    }

    #[test]
    fn no_end_marker_means_all_reasoning() {
        let p = parse("still thinking", true, false);
        assert_eq!(p.reasoning.as_deref(), Some("still thinking"));
        assert_eq!(p.content, None);
    }

    #[test]
    fn tool_calls_are_extracted_raw() {
        let p = parse(&format!("why</think>Let me look.{CALL}"), true, true);
        assert_eq!(p.reasoning.as_deref(), Some("why"));
        assert_eq!(p.content.as_deref(), Some("Let me look."));
        assert_eq!(
            p.calls,
            vec![ParsedCall {
                id: "functions.get_weather:3".into(),
                name: "get_weather".into(),
                arguments: "{\"city\": \"Paris\"}".into(),
            }]
        );
    }

    #[test]
    fn a_section_inside_reasoning_ends_it() {
        let p = parse(&format!("why{CALL}"), true, true);
        assert_eq!(p.reasoning.as_deref(), Some("why"));
        assert_eq!(p.content, None);
        assert_eq!(p.calls.len(), 1);
    }

    #[test]
    fn spaces_join_every_added_token() {
        assert_eq!(
            space_added_tokens("<think>ok</think>1"),
            "<think> ok </think> 1"
        );
        assert_eq!(
            space_added_tokens("a</think><|tool_calls_section_begin|>"),
            "a </think> <|tool_calls_section_begin|>"
        );
    }

    #[test]
    fn spaced_calls_still_parse() {
        let p = parse(
            &space_added_tokens(&format!("why</think>{CALL}")),
            true,
            true,
        );
        assert_eq!(p.reasoning.as_deref(), Some("why "));
        assert_eq!(p.content.as_deref(), Some(" "));
        assert_eq!(p.calls[0].id, "functions.get_weather:3");
        assert_eq!(p.calls[0].arguments, "{\"city\": \"Paris\"}");
    }
}
