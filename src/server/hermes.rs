//! vLLM's `qwen3` reasoning parser and `hermes` tool parser (tests/data/server_shapes/qwen3.jsonl), as every parsing
//! server shape runs them for Qwen3 (read in vLLM 0.33.0's `tool_parsers/hermes_tool_parser.py`):
//!
//! - reasoning: a leading `<think>` is consumed, then `partition("</think>")` with nothing
//!   stripped (content keeps its leading `\n\n`); no `</think>` means everything is reasoning.
//! - tools, not streamed: `findall(<tool_call>(.*?)</tool_call>|<tool_call>(.*))` — an unclosed
//!   call counts too —, each body `json.loads`ed and its `arguments` re-serialized with
//!   `json.dumps(…, ensure_ascii=False)` (the model's own spacing and escapes are lost); if any
//!   body fails to load (a cut call, a missing key) the whole text is `content`, with no calls.
//!   Content is the text before the first `<tool_call>`.
//! - tools, streamed: content is the text before the first `<tool_call>` (a suffix that could
//!   begin one is held back); each call is sent once its `"name"` is complete, and its arguments
//!   *raw*: the text after `"arguments":`, minus the `}` that closes the call's object once the
//!   body is complete JSON. Ids are random (`chatcmpl-tool-…`), not in the token stream.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::{Parsed, ParsedCall, ParserTraits};
use crate::pyjson::{dumps_json, DumpOptions};

use crate::model::family::qwen3::{CALL_CLOSE, CALL_OPEN, THINK_CLOSE, THINK_OPEN};

/// vLLM's `qwen3` reasoning parser and `hermes` tool parser: the reasoning kept whole, an
/// unstreamed answer's calls loaded and dumped again, its whitespace-only content nulled.
pub const TRAITS: ParserTraits = ParserTraits {
    nulls_whitespace_content: true,
    drops_unfinished_call: true,
    rewrites_calls: true,
    null_content_in_call_deltas: true,
    ..ParserTraits::NONE
};

/// vLLM's `tool_call_regex` (DOTALL): a closed call, or an unclosed one to the end.
static CALL_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?s)<tool_call>(.*?)</tool_call>|<tool_call>(.*)")
        .unwrap_or_else(|e| panic!("the hermes regex is a constant and compiles: {e}"))
});

static NAME_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#""name"\s*:\s*"([^"]+)""#)
        .unwrap_or_else(|e| panic!("the hermes name regex is a constant and compiles: {e}"))
});

static ARGUMENTS_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#""arguments"\s*:\s*"#)
        .unwrap_or_else(|e| panic!("the hermes arguments regex is a constant and compiles: {e}"))
});

pub fn parse(text: &str, thinking: bool, tools_declared: bool, stream: bool) -> Parsed {
    let (reasoning, content) = if thinking {
        let text = text.strip_prefix(THINK_OPEN).unwrap_or(text);
        match text.split_once(THINK_CLOSE) {
            Some((r, c)) => (Some(r.to_string()), c.to_string()),
            None => (Some(text.to_string()), String::new()),
        }
    } else {
        (None, text.to_string())
    };
    let mut parsed = Parsed {
        reasoning,
        content: Some(content.clone()),
        calls: Vec::new(),
        finish_reason: "stop",
        ..Parsed::default()
    };
    if !tools_declared {
        return parsed;
    }
    if stream {
        let (content, calls) = streamed_calls(&content);
        parsed.content = Some(content);
        parsed.calls = calls;
        return parsed;
    }
    if !content.contains(CALL_OPEN) {
        return parsed;
    }
    // Any body that does not load makes the parser give up on all of them.
    let calls: Option<Vec<ParsedCall>> = CALL_RE
        .captures_iter(&content)
        .map(|caps| {
            let body = caps.get(1).or_else(|| caps.get(2))?.as_str();
            let body: Value = serde_json::from_str(body).ok()?;
            Some(ParsedCall {
                id: String::new(),
                name: body.get("name")?.as_str()?.to_string(),
                arguments: dumps_json(body.get("arguments")?, &DumpOptions::default()),
            })
        })
        .collect();
    if let Some(calls) = calls {
        let before = content.split(CALL_OPEN).next().unwrap_or_default();
        parsed.content = Some(before.to_string());
        parsed.calls = calls;
    }
    parsed
}

/// What the streaming parser has sent once the whole text went through it.
fn streamed_calls(text: &str) -> (String, Vec<ParsedCall>) {
    let sendable = match text.find(CALL_OPEN) {
        Some(at) => at,
        None => text.len() - partial_tag_overlap(text, CALL_OPEN),
    };
    let content = text[..sendable].to_string();
    let mut calls = Vec::new();
    let mut from = 0;
    while let Some(rel) = text[from..].find(CALL_OPEN) {
        let body_start = from + rel + CALL_OPEN.len();
        let (body, complete, next) = match text[body_start..].find(CALL_CLOSE) {
            Some(rel_end) => {
                let end = body_start + rel_end;
                (
                    text[body_start..end].trim(),
                    true,
                    Some(end + CALL_CLOSE.len()),
                )
            }
            None => {
                let raw = &text[body_start..];
                let raw = &raw[..raw.len() - partial_tag_overlap(raw, CALL_CLOSE)];
                let body = raw.trim();
                let complete = !body.is_empty() && serde_json::from_str::<Value>(body).is_ok();
                (body, complete, None)
            }
        };
        let Some(name) = NAME_RE.captures(body).map(|c| c[1].to_string()) else {
            break;
        };
        let arguments = ARGUMENTS_RE
            .find(body)
            .map(|m| {
                let raw = &body[m.end()..];
                if complete {
                    let raw = raw.trim_end();
                    raw.strip_suffix('}').unwrap_or(raw).trim_end()
                } else {
                    raw
                }
            })
            .unwrap_or_default()
            .to_string();
        calls.push(ParsedCall {
            id: String::new(),
            name,
            arguments,
        });
        match next {
            Some(next) => from = next,
            None => break,
        }
    }
    (content, calls)
}

/// vLLM's `partial_tag_overlap`: the longest proper prefix of `tag` that ends `text`.
fn partial_tag_overlap(text: &str, tag: &str) -> usize {
    (1..tag.len())
        .rev()
        .find(|&k| text.ends_with(&tag[..k]))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_qwen3_sample_and_a_reserialized_call() {
        let p = parse(
            "<think>\nTwo plus two equals four.\n</think>\n\nFour.",
            true,
            false,
            false,
        );
        assert_eq!(
            p.reasoning.as_deref(),
            Some("\nTwo plus two equals four.\n")
        );
        assert_eq!(p.content.as_deref(), Some("\n\nFour."));
        let p = parse(
            "<think>\nx\n</think>\n\nok\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\":1}}\n</tool_call>",
            true,
            true,
            false,
        );
        assert_eq!(p.content.as_deref(), Some("\n\nok\n"));
        assert_eq!(p.calls[0].name, "f");
        assert_eq!(p.calls[0].arguments, "{\"a\": 1}");
    }

    const CALL: &str =
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Tokyo\"}}\n</tool_call>";

    #[test]
    fn an_unclosed_call_not_streamed_leaves_everything_in_content() {
        // qwen3/vllm-0.33.0/nonstream/spaces/cut_tool_section_opener/002: vLLM's regex also
        // matches the unclosed call, its body does not load, the whole text is content.
        let text = format!("\n\nLet me check.\n{CALL}\n<tool_call>");
        let p = parse(&text, false, true, false);
        assert_eq!(p.content.as_deref(), Some(text.as_str()));
        assert!(p.calls.is_empty());
    }

    #[test]
    fn streamed_arguments_are_raw_and_an_unnamed_call_is_not_sent() {
        // qwen3/vllm-0.33.0/stream/spaces/random_mix/001: the arguments arrive as written.
        let p = parse(
            "\n\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\":\"x y\"}}\n</tool_call>",
            false,
            true,
            true,
        );
        assert_eq!(p.calls.len(), 1);
        assert_eq!(p.calls[0].arguments, "{\"query\":\"x y\"}");
        // …/stream/spaces/cut_tool_section_opener/001: cut right after `<tool_call>`.
        let p = parse("\n\nLet me check.\n<tool_call>", false, true, true);
        assert_eq!(p.content.as_deref(), Some("\n\nLet me check.\n"));
        assert!(p.calls.is_empty());
    }
}
