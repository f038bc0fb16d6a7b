//! vLLM's `qwen3` reasoning parser and `hermes` tool parser (FACTS.md §B5), as every parsing
//! server shape runs them for Qwen3:
//!
//! - reasoning: a leading `<think>` is consumed, then `partition("</think>")` with nothing
//!   stripped (content keeps its leading `\n\n`); no `</think>` means everything is reasoning.
//! - tools: `<tool_call>(.*?)</tool_call>`; each body is parsed as `{"name", "arguments"}` and
//!   the arguments re-serialized with `json.dumps(…, ensure_ascii=False)` — the model's own
//!   spacing and escapes are lost; ids are random (`chatcmpl-tool-…`), not in the token stream;
//!   content is the text before the first `<tool_call>`.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::{Parsed, ParsedCall};
use crate::pyjson::{dumps_json, DumpOptions};

const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";
const CALL_OPEN: &str = "<tool_call>";

static CALL_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?s)<tool_call>(.*?)</tool_call>")
        .unwrap_or_else(|e| panic!("the hermes regex is a constant and compiles: {e}"))
});

pub fn parse(text: &str, thinking: bool, tools_declared: bool) -> Parsed {
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
    };
    if !tools_declared || !content.contains(CALL_OPEN) {
        return parsed;
    }
    let calls: Vec<ParsedCall> = CALL_RE
        .captures_iter(&content)
        .filter_map(|caps| {
            let body: Value = serde_json::from_str(caps.get(1)?.as_str().trim()).ok()?;
            let name = body.get("name")?.as_str()?.to_string();
            let arguments = body
                .get("arguments")
                .map(|a| dumps_json(a, &DumpOptions::default()))
                .unwrap_or_else(|| "{}".to_string());
            Some(ParsedCall {
                id: String::new(),
                name,
                arguments,
            })
        })
        .collect();
    if calls.is_empty() {
        return parsed;
    }
    let before = content.split(CALL_OPEN).next().unwrap_or_default();
    parsed.content = Some(before.to_string());
    parsed.calls = calls;
    parsed
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
        );
        assert_eq!(p.content.as_deref(), Some("\n\nok\n"));
        assert_eq!(p.calls[0].name, "f");
        assert_eq!(p.calls[0].arguments, "{\"a\": 1}");
    }
}
