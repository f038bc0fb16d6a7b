//! vLLM's `deepseek_v3` tool parser (FACTS.md §B5) for DeepSeek-V3, which does not reason:
//! `<｜tool▁calls▁begin｜>` opens the section, each call is
//! `<｜tool▁call▁begin｜>TYPE<｜tool▁sep｜>NAME\n```json\nARGS\n```<｜tool▁call▁end｜>` with ARGS
//! kept raw; ids are random, not in the token stream; content is the text before the section.

use std::sync::LazyLock;

use regex::Regex;

use super::{Parsed, ParsedCall};

const SECTION_BEGIN: &str = "<｜tool▁calls▁begin｜>";

static CALL_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?s)<｜tool▁call▁begin｜>(?P<type>.*?)<｜tool▁sep｜>(?P<name>.*?)\n```json\n(?P<args>.*?)\n```<｜tool▁call▁end｜>")
        .unwrap_or_else(|e| panic!("the deepseek_v3 regex is a constant and compiles: {e}"))
});

/// Streamed, the text between two calls (the `\n` the model writes) leaks into `content`
/// (measured on vLLM 0.33's streaming parser).
pub fn parse(text: &str, tools_declared: bool, stream: bool) -> Parsed {
    let mut parsed = Parsed {
        reasoning: None,
        content: Some(text.to_string()),
        calls: Vec::new(),
        finish_reason: "stop",
    };
    let Some(start) = text.find(SECTION_BEGIN).filter(|_| tools_declared) else {
        return parsed;
    };
    let calls: Vec<ParsedCall> = CALL_RE
        .captures_iter(text)
        .filter_map(|caps| {
            Some(ParsedCall {
                id: String::new(),
                name: caps.name("name")?.as_str().to_string(),
                arguments: caps.name("args")?.as_str().to_string(),
            })
        })
        .collect();
    if !calls.is_empty() {
        let mut content = text[..start].to_string();
        if stream {
            let ends: Vec<usize> = CALL_RE.find_iter(text).map(|m| m.end()).collect();
            let begins: Vec<usize> = CALL_RE.find_iter(text).map(|m| m.start()).collect();
            for (end, next) in ends.iter().zip(begins.iter().skip(1)) {
                if end <= next {
                    content.push_str(&text[*end..*next]);
                }
            }
        }
        parsed.content = Some(content);
        parsed.calls = calls;
    }
    parsed
}
