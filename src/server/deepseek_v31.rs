//! vLLM's `deepseek_v31` tool parser and `deepseek_v3` reasoning parser for DeepSeek-V3.1 (read
//! in vLLM 0.33.0's `tool_parsers/deepseekv31_tool_parser.py`, `reasoning/deepseek_v3_reasoning_parser.py`
//! and `reasoning/basic_parsers.py`).
//!
//! Reasoning (thinking requests only; otherwise the identity parser): the text after a leading
//! `<think>` if any, up to the first `</think>`; without `</think>` all of it is reasoning.
//! Content is what follows (`None` when empty).
//!
//! Tools, not streamed (`extract_tool_calls`): without `<｜tool▁calls▁begin｜>` everything is
//! content; with it, content is the text before it and the calls are the matches of
//! `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>` (NAME without a newline,
//! ARGS raw); nothing after the section is shown. Ids are random, not in the token stream.
//!
//! Streamed (`extract_tool_calls_streaming`, one token a delta): once the section has opened, a
//! delta outside a call (as many call openers as closers) is content with the section markers
//! removed, so text between and after calls lands in `content`. A call is sent once
//! `NAME<｜tool▁sep｜>` is complete: its name, then its arguments as they grow (raw, newlines
//! included); the closer sends nothing more. A call whose name is empty or spans a line never gets its name sent and
//! leaves the parser's per-call state out of step: [`Parsed::unmodelled`].

use std::sync::LazyLock;

use regex::Regex;

use super::{Parsed, ParsedCall, ParserTraits};

use crate::model::family::deepseek_v3::{CALL_BEGIN, CALL_END, SECTION_BEGIN, SECTION_END};
use crate::model::family::deepseek_v31::{THINK_CLOSE, THINK_OPEN};

/// vLLM's `deepseek_v31` tool parser: arguments raw, calls matched whole, a stream's text
/// between and after calls sent as content.
pub const TRAITS: ParserTraits = ParserTraits {
    drops_unfinished_call: true,
    streams_text_after_calls: true,
    ..ParserTraits::NONE
};

/// vLLM's `stream_tool_call_portion_regex` (anchored: Python's `match`; the name's `.` stops at
/// a newline, the arguments do not).
static PORTION_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?P<name>.*)<｜tool▁sep｜>(?P<args>[\s\S]*)").unwrap_or_else(|e| {
        panic!("the deepseek_v31 portion regex is a constant and compiles: {e}")
    })
});

/// vLLM's `tool_call_regex` (no DOTALL: the name's `.` stops at a newline, as in Python).
static CALL_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"<｜tool▁call▁begin｜>(?P<name>.*?)<｜tool▁sep｜>(?P<args>[\s\S]*?)<｜tool▁call▁end｜>",
    )
    .unwrap_or_else(|e| panic!("the deepseek_v31 regex is a constant and compiles: {e}"))
});

pub fn parse(text: &str, thinking: bool, tools_declared: bool, stream: bool) -> Parsed {
    let (reasoning, content) = if thinking {
        split_reasoning(text)
    } else {
        (None, Some(text))
    };
    let mut parsed = Parsed {
        reasoning: reasoning.map(str::to_string),
        content: content.map(str::to_string),
        calls: Vec::new(),
        finish_reason: "stop",
        ..Parsed::default()
    };
    let Some((content, start)) = content
        .filter(|_| tools_declared)
        .and_then(|c| Some((c, c.find(SECTION_BEGIN)?)))
    else {
        return parsed;
    };
    if stream {
        return parse_streamed(parsed, content, start);
    }
    parsed.calls = CALL_RE
        .captures_iter(content)
        .filter_map(|caps| {
            Some(ParsedCall {
                id: String::new(),
                name: caps.name("name")?.as_str().to_string(),
                arguments: caps.name("args")?.as_str().to_string(),
            })
        })
        .collect();
    parsed.content = Some(content[..start].to_string());
    parsed
}

/// What the streaming parser sends for `content` (the text after the reasoning), delta by delta
/// (a delta is one token; the markers are single tokens, so the text splits at them).
fn parse_streamed(mut parsed: Parsed, content: &str, start: usize) -> Parsed {
    let mut shown = content[..start].to_string();
    let mut rest = &content[start..];
    loop {
        let (outside, call) = match rest.find(CALL_BEGIN) {
            Some(at) => (&rest[..at], Some(&rest[at + CALL_BEGIN.len()..])),
            None => (rest, None),
        };
        shown.push_str(&outside.replace(SECTION_BEGIN, "").replace(SECTION_END, ""));
        let Some(call) = call else { break };
        let (portion, after) = match call.find(CALL_END) {
            Some(end) => (&call[..end], Some(&call[end + CALL_END.len()..])),
            None => (call, None),
        };
        let named = PORTION_RE
            .captures(portion)
            .filter(|caps| !caps["name"].is_empty());
        match (named, after) {
            (Some(caps), _) => parsed.calls.push(ParsedCall {
                id: String::new(),
                name: caps["name"].to_string(),
                arguments: caps["args"].to_string(),
            }),
            // Cut before its name was sent: nothing of the call was.
            (None, None) => {}
            (None, Some(_)) => {
                parsed.unmodelled =
                    Some("vLLM's deepseek_v31 stream on a call without a one-line name");
                return parsed;
            }
        }
        match after {
            Some(after) => rest = after,
            None => break,
        }
    }
    parsed.content = Some(shown);
    parsed
}

/// `BaseThinkingReasoningParser.extract_reasoning`: (reasoning, content).
fn split_reasoning(text: &str) -> (Option<&str>, Option<&str>) {
    let text = match text.split_once(THINK_OPEN) {
        Some((_, after)) => after,
        None => text,
    };
    match text.split_once(THINK_CLOSE) {
        None => (Some(text), None),
        Some((reasoning, content)) => (Some(reasoning), Some(content).filter(|c| !c.is_empty())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CALLS: &str = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>";

    #[test]
    fn calls_and_content_as_extract_tool_calls_returns_them() {
        let p = parse(&format!("Checking.{CALLS}"), false, true, false);
        assert_eq!(p.content.as_deref(), Some("Checking."));
        assert_eq!(p.calls.len(), 2);
        assert_eq!(p.calls[0].name, "get_weather");
        assert_eq!(p.calls[0].arguments, "{\"city\": \"Paris\"}");
        assert_eq!(p.calls[1].arguments, "{}");
        // Tools not declared: the parser does not run.
        let p = parse(&format!("Checking.{CALLS}"), false, false, false);
        assert!(p.calls.is_empty());
        // Streamed: the same calls, nothing after them shown.
        let p = parse(&format!("Checking.{CALLS}"), false, true, true);
        assert_eq!(p.content.as_deref(), Some("Checking."));
        assert_eq!(p.calls.len(), 2);
        assert_eq!(p.calls[0].arguments, "{\"city\": \"Paris\"}");
    }

    #[test]
    fn reasoning_ends_at_the_first_think_close() {
        let p = parse(&format!("Hmm.</think>Sure.{CALLS}"), true, true, false);
        assert_eq!(p.reasoning.as_deref(), Some("Hmm."));
        assert_eq!(p.content.as_deref(), Some("Sure."));
        assert_eq!(p.calls.len(), 2);
        let p = parse("still thinking", true, true, false);
        assert_eq!(p.reasoning.as_deref(), Some("still thinking"));
        assert_eq!(p.content, None);
        let p = parse("<think>a</think>", true, false, false);
        assert_eq!((p.reasoning.as_deref(), p.content), (Some("a"), None));
    }
}
