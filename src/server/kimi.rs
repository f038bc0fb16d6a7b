//! The Kimi parsers every parsing server shape runs (FACTS.md §B1–§B3), plus vLLM's detokenizer
//! artefact (§B4):
//!
//! - reasoning (`kimi_k25`): a leading `<think>` is consumed; reasoning ends at the earliest of
//!   `</think>` (dropped), `<|tool_calls_section_begin|>` or `<|tool_call_begin|>` (both kept in
//!   content); no end marker means everything is reasoning; nothing is trimmed here (the shape
//!   decides); with `thinking: false` the parser is the identity.
//! - tools (`kimi_k2`): only when the content holds `<|tool_calls_section_begin|>`; each call
//!   matched by vLLM's regex, `id` = the raw id text, `name` = `id.split(":")[0].split(".")[-1]`,
//!   `arguments` = the raw text, stripped where the shape strips; content = the text before the
//!   section. Streamed, a call cut after its `<|tool_call_argument_begin|>` is sent with the
//!   argument text so far (the deltas went out before the cut).

use std::sync::LazyLock;

use fancy_regex::Regex;

use super::{ForwardInput, Parsed, ParsedCall, ServerShape};

pub const THINK_END: &str = "</think>";
pub const SECTION_BEGIN: &str = "<|tool_calls_section_begin|>";
pub const SECTION_END: &str = "<|tool_calls_section_end|>";
pub const CALL_BEGIN: &str = "<|tool_call_begin|>";
pub const ARGUMENT_BEGIN: &str = "<|tool_call_argument_begin|>";
pub const CALL_END: &str = "<|tool_call_end|>";

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

/// Run the reasoning parser, then (with tools declared) the tool parser, as `shape` runs them.
pub fn parse(shape: &ServerShape, text: &str, input: &ForwardInput) -> Parsed {
    let strip = if input.stream {
        shape.strips_streamed_arguments
    } else {
        shape.strips_arguments
    };
    let partial = input.stream && input.cut;
    // A cut that leaves the section without one complete call: the servers that drop an
    // unfinished call drop the section's text with it (SGLang 0.5.23 and vLLM 0.33, streamed or
    // not: `content` is the text before the opener; tests/data/server_shapes).
    let dangling = input.cut && shape.drops_incomplete_call;
    let thinking = input.thinking || !shape.honours_thinking_off;
    if !shape.reasoning_ends_at_tool_section && thinking {
        // DeepSeek-R1's parser: reasoning ends at `</think>` only; without it, all is
        // reasoning and the tool parser sees no content.
        let text = text.strip_prefix(THINK_BEGIN).unwrap_or(text);
        return match text.split_once(THINK_END) {
            Some((reasoning, content)) => {
                let mut parsed = parse_with(
                    content,
                    false,
                    input.tools_declared,
                    strip,
                    partial,
                    dangling,
                );
                parsed.reasoning = Some(reasoning.to_string());
                parsed.content = parsed.content.filter(|c| !c.is_empty());
                parsed
            }
            None => Parsed {
                reasoning: Some(text.to_string()),
                content: None,
                calls: Vec::new(),
                finish_reason: "stop",
            },
        };
    }
    parse_with(
        text,
        thinking,
        input.tools_declared,
        strip,
        partial,
        dangling,
    )
}

fn parse_with(
    text: &str,
    thinking: bool,
    tools_declared: bool,
    strip: bool,
    partial_last_call: bool,
    drop_dangling_section: bool,
) -> Parsed {
    let (reasoning, content) = if thinking {
        split_reasoning(text)
    } else {
        (None, Some(text.to_string()))
    };
    let mut parsed = Parsed {
        reasoning,
        content,
        calls: Vec::new(),
        finish_reason: "stop",
    };
    if tools_declared {
        if let Some(content) = parsed.content.take() {
            let (before, calls) =
                extract_tool_calls(&content, strip, partial_last_call, drop_dangling_section);
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
fn extract_tool_calls(
    content: &str,
    strip: bool,
    partial_last_call: bool,
    drop_dangling_section: bool,
) -> (Option<String>, Vec<ParsedCall>) {
    let start = content
        .find(SECTION_BEGIN)
        .or_else(|| content.find(SECTION_BEGIN_SINGULAR));
    let Some(start) = start else {
        return (Some(content.to_string()), Vec::new());
    };
    let mut calls: Vec<ParsedCall> = CALL_RE
        .captures_iter(content)
        .filter_map(Result::ok)
        .filter_map(|caps| {
            let id = caps.name("tool_call_id")?.as_str().trim().to_string();
            let raw = caps.get(0)?.as_str();
            let arguments = raw_arguments(raw)?;
            let arguments = if strip { arguments.trim() } else { arguments };
            Some(call(id, arguments.to_string()))
        })
        .collect();
    if partial_last_call {
        // The text after the last complete call: a call that got its id and some arguments out.
        let tail_from = content
            .rfind(CALL_END)
            .map_or(start, |at| at + CALL_END.len());
        let tail = &content[tail_from..];
        if let Some(begin) = tail.find(CALL_BEGIN) {
            let rest = &tail[begin + CALL_BEGIN.len()..];
            if let Some((id, args)) = rest.split_once(ARGUMENT_BEGIN) {
                let id = id.trim();
                if is_id(id) {
                    calls.push(call(id.to_string(), args.to_string()));
                }
            }
        }
    }
    if calls.is_empty() && !drop_dangling_section {
        return (Some(content.to_string()), calls);
    }
    let before = &content[..start];
    ((!before.is_empty()).then(|| before.to_string()), calls)
}

/// The arguments between `<|tool_call_argument_begin|>` and `<|tool_call_end|>` of one matched
/// call, unstripped (the streamed text; non-streamed parsers strip it).
fn raw_arguments(matched: &str) -> Option<&str> {
    let (_, after) = matched.split_once(ARGUMENT_BEGIN)?;
    after.strip_suffix(CALL_END)
}

fn is_id(id: &str) -> bool {
    crate::model::family::kimi::is_native_tool_call_id(id)
}

fn call(id: String, arguments: String) -> ParsedCall {
    let before_colon = id.split(':').next().unwrap_or("");
    let name = before_colon.rsplit('.').next().unwrap_or("").to_string();
    ParsedCall {
        id,
        name,
        arguments,
    }
}

/// The detokenized text as the server sees it with spaces around added tokens: the prompt ends
/// with an added token, so a non-empty answer also starts with the joining space.
pub fn spaced_after_prompt(text: &str) -> String {
    if text.is_empty() {
        return String::new();
    }
    format!(" {}", space_added_tokens(text))
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
        let p = parse_with("hmm</think>Four.", true, false, true, false, false);
        assert_eq!(p.reasoning.as_deref(), Some("hmm"));
        assert_eq!(p.content.as_deref(), Some("Four."));
    }

    #[test]
    fn no_end_marker_means_all_reasoning() {
        let p = parse_with("still thinking", true, false, true, false, false);
        assert_eq!(p.reasoning.as_deref(), Some("still thinking"));
        assert_eq!(p.content, None);
    }

    #[test]
    fn tool_calls_are_extracted_raw() {
        let p = parse_with(
            &format!("why</think>Let me look.{CALL}"),
            true,
            true,
            true,
            false,
            false,
        );
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
        let p = parse_with(&format!("why{CALL}"), true, true, true, false, false);
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
        let p = parse_with(
            &space_added_tokens(&format!("why</think>{CALL}")),
            true,
            true,
            true,
            false,
            false,
        );
        assert_eq!(p.reasoning.as_deref(), Some("why "));
        assert_eq!(p.content.as_deref(), Some(" "));
        assert_eq!(p.calls[0].id, "functions.get_weather:3");
        assert_eq!(p.calls[0].arguments, "{\"city\": \"Paris\"}");
    }

    #[test]
    fn a_cut_dangling_section_is_dropped_by_shapes_that_drop_unfinished_calls() {
        let text =
            "why</think>Let me check.<|tool_calls_section_begin|><|tool_call_begin|>functions.get";
        let p = parse_with(text, true, true, true, false, true);
        assert_eq!(p.content.as_deref(), Some("Let me check."));
        assert!(p.calls.is_empty());
        let kept = parse_with(text, true, true, true, false, false);
        assert!(kept
            .content
            .as_deref()
            .is_some_and(|c| c.ends_with("functions.get")));
    }
}
