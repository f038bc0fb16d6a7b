//! vLLM's `llama3_json` tool parser for Llama 3.1/3.3 (read in vLLM 0.33.0's
//! `tool_parsers/llama_tool_parser.py`, `Llama3JsonToolParser`). No reasoning parser. The
//! detokenizer skips special tokens (the parser does not ask otherwise), so `<|python_tag|>`
//! never reaches it: a built-in tool call comes back as content without its tag.
//!
//! Not streamed (`extract_tool_calls`): text without `{` is content. Otherwise every `{` after
//! the previous call's end (a `{` right at that end is skipped too) starts a `json.raw_decode`;
//! each object's `name` and its `arguments`, else `parameters`, make a call, the arguments
//! re-serialized with `json.dumps(…, ensure_ascii=False)`. Any `{` that does not start such an
//! object (bad JSON, a cut, no `name`) makes the whole text content with no calls. With calls,
//! content is `None`: text around and between them is dropped. Ids are random.
//!
//! Streamed (`extract_tool_calls_streaming`): a text that does not begin with `{` is content,
//! sent as it comes; one of whole calls separated by `; ` sends them as unstreamed; anything
//! else that begins with `{` (a cut call) is not modelled yet ([`Parsed::unmodelled`]).

use serde_json::Value;

use super::{Parsed, ParsedCall, ParserTraits};
use crate::model::family::llama3::{CALL_SEPARATOR, PYTHON_TAG};
use crate::pyjson::{dumps_json, DumpOptions};

/// vLLM's `llama3_json`: calls loaded and dumped again, a call that does not load never sent.
pub const TRAITS: ParserTraits = ParserTraits {
    drops_unfinished_call: true,
    rewrites_calls: true,
    ..ParserTraits::NONE
};

pub fn parse(text: &str, tools_declared: bool, stream: bool) -> Parsed {
    // The detokenizer skips special tokens: the tag.
    let skipped;
    let text = if text.contains(PYTHON_TAG) {
        skipped = text.replace(PYTHON_TAG, "");
        skipped.as_str()
    } else {
        text
    };
    let mut parsed = Parsed {
        content: Some(text.to_string()),
        finish_reason: "stop",
        ..Parsed::default()
    };
    if !tools_declared || !text.contains('{') {
        return parsed;
    }
    if stream {
        if text.starts_with('{') {
            match streamed_calls(text) {
                Some(calls) => {
                    parsed.calls = calls;
                    parsed.content = None;
                }
                None => parsed.unmodelled = Some("vLLM's llama3_json streamed tool calls"),
            }
        }
        return parsed;
    }
    if let Some(calls) = extract_calls(text).filter(|calls| !calls.is_empty()) {
        parsed.calls = calls;
        parsed.content = None;
    }
    parsed
}

/// What `extract_tool_calls_streaming` has sent once a text of whole calls went through it: the
/// objects one after the other, `; ` between them (where its parser looks for the next one), the
/// text ending with the last; each call's arguments `json.dumps`ed whole by the last delta.
/// `None`: anything else (a cut call, other text), not modelled.
fn streamed_calls(text: &str) -> Option<Vec<ParsedCall>> {
    let mut calls = Vec::new();
    let mut start = 0;
    loop {
        let mut values = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        let object = values.next()?.ok()?;
        let end = start + values.byte_offset();
        let name = object.get("name")?.as_str()?;
        let arguments = match (object.get("arguments"), object.get("parameters")) {
            (Some(_), Some(_)) => return None,
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => return None,
        };
        calls.push(ParsedCall {
            id: String::new(),
            name: name.to_string(),
            arguments: dumps_json(arguments, &DumpOptions::default()),
        });
        if end == text.len() {
            return Some(calls);
        }
        start = end + CALL_SEPARATOR.len();
        if !text[end..].starts_with(CALL_SEPARATOR) || !text[start..].starts_with('{') {
            return None;
        }
    }
}

/// The calls `extract_tool_calls` finds; `None`: it gave up (the text is content).
fn extract_calls(text: &str) -> Option<Vec<ParsedCall>> {
    let mut calls = Vec::new();
    let mut end: Option<usize> = None;
    for (start, _) in text.match_indices('{') {
        if end.is_some_and(|end| start <= end) {
            continue;
        }
        let mut values = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        let object = values.next()?.ok()?;
        end = Some(start + values.byte_offset());
        let name = object.get("name")?.as_str()?;
        let arguments = object
            .get("arguments")
            .or_else(|| object.get("parameters"))?;
        calls.push(ParsedCall {
            id: String::new(),
            name: name.to_string(),
            arguments: dumps_json(arguments, &DumpOptions::default()),
        });
    }
    Some(calls)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(p: &Parsed) -> Vec<(&str, &str)> {
        p.calls
            .iter()
            .map(|c| (c.name.as_str(), c.arguments.as_str()))
            .collect()
    }

    #[test]
    fn calls_are_loaded_and_dumped_again() {
        let p = parse(
            r#"{"name": "get_weather", "parameters": {"city":"Paris"}}"#,
            true,
            false,
        );
        assert_eq!(calls(&p), [("get_weather", r#"{"city": "Paris"}"#)]);
        assert_eq!(p.content, None);
        // Text around the call is dropped; two calls after `; `.
        let p = parse(
            r#"Sure: {"name": "f", "arguments": {}}; {"name": "g", "parameters": {"a": [1]}} ok"#,
            true,
            false,
        );
        assert_eq!(calls(&p), [("f", "{}"), ("g", r#"{"a": [1]}"#)]);
        assert_eq!(p.content, None);
    }

    #[test]
    fn anything_that_does_not_load_is_content() {
        for text in [
            r#"{"name": "f", "parameters": {"a"#,
            r#"{"parameters": {}}"#,
            "a {b} c",
            r#"{"name": "f", "parameters": {}} and {oops}"#,
            "brave_search.call(query=\"x\")",
        ] {
            let p = parse(text, true, false);
            assert!(p.calls.is_empty(), "{text}");
            assert_eq!(p.content.as_deref(), Some(text));
        }
        // No tools declared: the parser does not run.
        let p = parse(r#"{"name": "f", "parameters": {}}"#, false, false);
        assert!(p.calls.is_empty());
    }

    #[test]
    fn a_brace_right_at_a_calls_end_is_skipped() {
        // The second object's `{` is skipped, its arguments' `{}` is read as a call without a
        // name: the parser gives up.
        let text = r#"{"name": "f", "parameters": {}}{"name": "g", "parameters": {}}"#;
        let p = parse(text, true, false);
        assert!(p.calls.is_empty());
        assert_eq!(p.content.as_deref(), Some(text));
    }

    #[test]
    fn streamed_text_not_opening_with_a_brace_is_content() {
        let text = r#"Sure: {"name": "f", "parameters": {}}"#;
        let p = parse(text, true, true);
        assert_eq!(p.content.as_deref(), Some(text));
        assert!(p.calls.is_empty() && p.unmodelled.is_none());
        assert!(parse(r#"{"name": "f""#, true, true).unmodelled.is_some());
        let two = r#"{"name": "f", "parameters": {"a":1}}; {"name": "g", "arguments": {}}"#;
        let p = parse(two, true, true);
        assert_eq!(calls(&p), [("f", r#"{"a": 1}"#), ("g", "{}")]);
        assert_eq!(p.content, None);
    }
}
