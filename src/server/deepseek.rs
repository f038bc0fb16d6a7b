//! vLLM's `deepseek_v3` tool parser (tests/data/server_shapes/deepseek_v3.jsonl) for DeepSeek-V3, which does not reason:
//! `<｜tool▁calls▁begin｜>` opens the section, each call is
//! `<｜tool▁call▁begin｜>TYPE<｜tool▁sep｜>NAME\n```json\nARGS\n```<｜tool▁call▁end｜>` with ARGS
//! kept raw; ids are random, not in the token stream.
//!
//! Not streamed (`extract_tool_calls`): calls are the regex matches; content is the text before
//! the section plus the text after its last `<｜tool▁calls▁end｜>`; whatever else the section
//! holds (the `\n` between calls, an unfinished call) is not shown.
//!
//! Streamed (`extract_tool_calls_streaming`, read in vLLM 0.33.0's
//! `tool_parsers/deepseekv3_tool_parser.py`): once the section has opened, a delta outside a
//! call (as many call openers as closers so far) is sent as content with the section markers
//! removed — so the `\n` between two calls, and after the last one, lands in `content`. An
//! unfinished call is sent as far as it got: its name once `NAME\n` is complete, its arguments
//! once the portion regex `TYPE<sep>NAME\n```json\nARGS` matches with ARGS ending on anything
//! but `\n` or a backtick (so a trailing fence piece is held back).

use std::sync::LazyLock;

use regex::Regex;

use super::{Parsed, ParsedCall, ParserTraits};

use crate::model::family::deepseek_v3::{CALL_BEGIN, CALL_END, SECTION_BEGIN, SECTION_END};

/// vLLM's `deepseek_v3` tool parser: arguments raw, calls matched whole, a stream's newlines
/// between calls sent as content.
pub const TRAITS: ParserTraits = ParserTraits {
    drops_unfinished_call: true,
    streams_call_separators: true,
    ..ParserTraits::NONE
};

/// vLLM's `tool_call_regex` (no DOTALL: `.` stops at a newline, as in Python).
static CALL_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"<｜tool▁call▁begin｜>(?P<type>.*)<｜tool▁sep｜>(?P<name>.*)\n```json\n(?P<args>[\s\S]*?)\n```<｜tool▁call▁end｜>")
        .unwrap_or_else(|e| panic!("the deepseek_v3 regex is a constant and compiles: {e}"))
});

/// vLLM's `stream_tool_call_portion_regex` (anchored: Python's `match`).
static PORTION_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?P<type>.*)<｜tool▁sep｜>(?P<name>.*)\n```json\n(?P<args>[\s\S]*[^\n`])")
        .unwrap_or_else(|e| panic!("the deepseek_v3 portion regex is a constant and compiles: {e}"))
});

/// vLLM's `stream_tool_call_name_regex` (anchored).
static NAME_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?P<type>.*)<｜tool▁sep｜>(?P<name>.*)\n")
        .unwrap_or_else(|e| panic!("the deepseek_v3 name regex is a constant and compiles: {e}"))
});

pub fn parse(text: &str, tools_declared: bool, stream: bool) -> Parsed {
    let mut parsed = Parsed {
        reasoning: None,
        content: Some(text.to_string()),
        calls: Vec::new(),
        finish_reason: "stop",
        ..Parsed::default()
    };
    let Some(start) = text.find(SECTION_BEGIN).filter(|_| tools_declared) else {
        return parsed;
    };
    if stream {
        return parse_streamed(text, start);
    }
    parsed.calls = CALL_RE
        .captures_iter(text)
        .filter_map(|caps| {
            Some(ParsedCall {
                id: String::new(),
                name: caps.name("name")?.as_str().to_string(),
                arguments: caps.name("args")?.as_str().to_string(),
            })
        })
        .collect();
    let mut content = text[..start].to_string();
    if let Some(end) = text.rfind(SECTION_END) {
        content.push_str(&text[end + SECTION_END.len()..]);
    }
    parsed.content = Some(content);
    parsed
}

/// What the streaming parser sends for the whole text, delta by delta (a delta is one token:
/// the markers are single tokens, so the text outside and inside calls splits at them).
fn parse_streamed(text: &str, start: usize) -> Parsed {
    let mut content = text[..start].to_string();
    let mut calls = Vec::new();
    let mut rest = &text[start..];
    loop {
        // Outside a call: content, the section markers removed.
        let (outside, call) = match rest.find(CALL_BEGIN) {
            Some(at) => (&rest[..at], Some(&rest[at + CALL_BEGIN.len()..])),
            None => (rest, None),
        };
        content.push_str(&outside.replace(SECTION_BEGIN, "").replace(SECTION_END, ""));
        let Some(call) = call else { break };
        let (portion, after) = match call.find(CALL_END) {
            Some(end) => (&call[..end], Some(&call[end + CALL_END.len()..])),
            None => (call, None),
        };
        if let Some(caps) = PORTION_RE.captures(portion) {
            calls.push(ParsedCall {
                id: String::new(),
                name: caps["name"].to_string(),
                arguments: caps["args"].to_string(),
            });
        } else if let Some(caps) = NAME_RE.captures(portion) {
            calls.push(ParsedCall {
                id: String::new(),
                name: caps["name"].to_string(),
                arguments: String::new(),
            });
        }
        match after {
            Some(after) => rest = after,
            None => break,
        }
    }
    Parsed {
        reasoning: None,
        content: Some(content),
        calls,
        finish_reason: "stop",
        ..Parsed::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The texts and answers of fixtures made by vLLM 0.33.0's own parser
    // (tests/data/server_shapes/deepseek_v3.jsonl).
    const CALL1: &str = "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Tokyo\"}\n```<｜tool▁call▁end｜>";

    /// The answer to `Let me check.` and a tool section holding `section`, tools declared.
    fn answer(section: &str, stream: bool) -> Parsed {
        parse(
            &format!("Let me check.{SECTION_BEGIN}{section}"),
            true,
            stream,
        )
    }

    #[test]
    fn streamed_the_newline_after_a_call_is_content() {
        // deepseek_v3/vllm-0.33.0/stream/spaces/cut_between_calls/001: content "Let me check.\n".
        let p = answer(&format!("{CALL1}\n"), true);
        assert_eq!(p.content.as_deref(), Some("Let me check.\n"));
        assert_eq!(p.calls.len(), 1);
        assert_eq!(p.calls[0].arguments, "{\"city\": \"Tokyo\"}");
        // … and not streamed, nothing after the call is shown (…/nonstream/…/001).
        let p = answer(&format!("{CALL1}\n"), false);
        assert_eq!(p.content.as_deref(), Some("Let me check."));
    }

    #[test]
    fn streamed_an_unfinished_call_shows_what_was_sent() {
        // deepseek_v3/vllm-0.33.0/stream/spaces/cut_arguments/002: the second call's arguments
        // arrive as `{"` and `query`, content gets the `\n` between the calls.
        let p = answer(
            &format!(
                "{CALL1}\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>search\n```json\n{{\"query"
            ),
            true,
        );
        assert_eq!(p.content.as_deref(), Some("Let me check.\n"));
        assert_eq!(p.calls.len(), 2);
        assert_eq!(p.calls[1].name, "search");
        assert_eq!(p.calls[1].arguments, "{\"query");
        // Right after the call opener nothing of it is sent
        // (…/stream/spaces/cut_tool_section_opener/002).
        let p = answer(&format!("{CALL1}\n<｜tool▁call▁begin｜>"), true);
        assert_eq!(p.content.as_deref(), Some("Let me check.\n"));
        assert_eq!(p.calls.len(), 1);
    }
}
