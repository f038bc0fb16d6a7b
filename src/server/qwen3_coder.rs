//! vLLM's `qwen3_coder` tool parser for Qwen3-Coder (vLLM 0.33.0: `tool_parsers/qwen3_engine_tool_parser.py`,
//! the grammar of `parser/qwen3.py` run by `parser/engine/parser_engine.py`), non-streamed, as
//! measured with the wheel's own code (tests/data/qwen3_coder/parser_shapes.jsonl). No reasoning
//! parser: Qwen3-Coder does not think.
//!
//! - A call opens at `<tool_call>` or at a bare `<function=`; content is the text before the
//!   first, stripped (`None` when nothing is left); text after the calls is dropped.
//! - A call is `<function=NAME>` (NAME stripped), its parameters `<parameter=KEY>VALUE` up to
//!   `</parameter>` or the next `<parameter=`, one leading and one trailing newline trimmed
//!   from each VALUE; an unfinished parameter is dropped; a later KEY replaces an earlier one's
//!   value in its place. The arguments are the strings `json.dumps`ed, then converted by the
//!   request's schema (`_fix_arg_types`, ported in `quirks/coerces_arguments.rs`): a typed
//!   value's spelling is lost (`05`, `5.0`, `True`).
//! - A call cut after its `<function=NAME>` is sent with its finished parameters.
//! - Streamed (the wheel's `extract_tool_calls_streaming` fed token by token): the same calls
//!   when every one is closed; the content is the text before the first call as it is, followed
//!   by the whitespace between and after the calls, or nothing when that text is whitespace.
//! - Anything else (text between calls, a header cut before its `>`, a stream cut inside a call
//!   or with text after its calls) is [`Parsed::unmodelled`]. Ids are random, not in the token
//!   stream.

use serde_json::{Map, Value};

use super::quirks::fix_arg_types;
use super::{Parsed, ParsedCall, ParserTraits};
use crate::model::family::qwen3::{CALL_CLOSE, CALL_OPEN};
use crate::model::family::qwen3_coder::{
    FUNCTION_CLOSE, FUNCTION_OPEN, PARAMETER_CLOSE, PARAMETER_OPEN,
};
use crate::pyjson::{dumps_json, DumpOptions};

/// vLLM's `qwen3_coder` parser: calls read and written anew (values converted by the schema),
/// an unfinished one sent with what it has.
pub const TRAITS: ParserTraits = ParserTraits {
    rewrites_calls: true,
    converts_values_by_schema: true,
    ..ParserTraits::NONE
};

const UNMODELLED: &str = "vLLM's qwen3_coder parser on this text";

pub fn parse(text: &str, tools_declared: bool, stream: bool, tools: Option<&[Value]>) -> Parsed {
    let mut parsed = Parsed {
        content: Some(text.to_string()),
        finish_reason: "stop",
        values_typed_by_schema: true,
        ..Parsed::default()
    };
    let start = [text.find(CALL_OPEN), text.find(FUNCTION_OPEN)]
        .into_iter()
        .flatten()
        .min();
    let Some(start) = start.filter(|_| tools_declared) else {
        return parsed;
    };
    let Some(calls) = calls(&text[start..]) else {
        parsed.unmodelled = Some(UNMODELLED);
        return parsed;
    };
    let prefix = &text[..start];
    parsed.content = if stream {
        let Some(gaps) = streamed_gaps(&text[start..]) else {
            parsed.unmodelled = Some("vLLM's qwen3_coder stream on this text");
            return parsed;
        };
        (!prefix.trim().is_empty()).then(|| format!("{prefix}{gaps}"))
    } else {
        let content = prefix.trim();
        (!content.is_empty()).then(|| content.to_string())
    };
    parsed.calls = calls
        .into_iter()
        .map(|(name, arguments)| ParsedCall {
            id: String::new(),
            arguments: match tools {
                Some(tools) => fix_arg_types(&arguments, &name, tools),
                None => arguments,
            },
            name,
        })
        .collect();
    parsed
}

/// The calls in `text` (which starts at the first call): (name, arguments as all-string JSON);
/// `None` where the text leaves the shapes measured.
fn calls(mut text: &str) -> Option<Vec<(String, String)>> {
    let mut out = Vec::new();
    loop {
        let rest = text.trim_start();
        if rest.is_empty() || (!rest.starts_with(CALL_OPEN) && !rest.starts_with(FUNCTION_OPEN)) {
            // Text after the calls is dropped; between two calls it is not measured.
            if rest.contains(CALL_OPEN) || rest.contains(FUNCTION_OPEN) {
                return None;
            }
            return Some(out);
        }
        let rest = rest.strip_prefix(CALL_OPEN).unwrap_or(rest).trim_start();
        let header = rest.strip_prefix(FUNCTION_OPEN)?;
        let (name, body) = header.split_once('>')?;
        if name.contains('<') || name.trim().is_empty() {
            return None;
        }
        let (body, after) = match body.split_once(FUNCTION_CLOSE) {
            Some((body, after)) => {
                let after = after.trim_start();
                (body, after.strip_prefix(CALL_CLOSE).unwrap_or(after))
            }
            // Cut inside the call: sent with its finished parameters.
            None => (body, ""),
        };
        if body.contains(CALL_OPEN) || body.contains(CALL_CLOSE) || body.contains(FUNCTION_OPEN) {
            return None;
        }
        let parameters = parameters(body);
        out.push((
            name.trim().to_string(),
            dumps_json(&Value::Object(parameters), &DumpOptions::default()),
        ));
        text = after;
    }
}

/// The whitespace between and after the calls of `text` (which starts at the first call), where
/// every call is closed (`</function>` then `</tool_call>`) and nothing else follows; `None`
/// otherwise.
fn streamed_gaps(mut text: &str) -> Option<String> {
    let mut gaps = String::new();
    loop {
        let rest = text.trim_start();
        gaps.push_str(&text[..text.len() - rest.len()]);
        if rest.is_empty() {
            return Some(gaps);
        }
        let body = rest.strip_prefix(CALL_OPEN)?;
        let (_, after) = body.split_once(FUNCTION_CLOSE)?;
        text = after.trim_start().strip_prefix(CALL_CLOSE)?;
        if after[..after.len() - after.trim_start().len()].contains(|c: char| c != '\n') {
            return None;
        }
    }
}

/// `_qwen3_arg_converter` (not partial): every `<parameter=KEY>` whose value ends, by
/// `</parameter>` or the next `<parameter=`.
fn parameters(body: &str) -> Map<String, Value> {
    let mut parameters = Map::new();
    let mut rest = body;
    while let Some(at) = rest.find(PARAMETER_OPEN) {
        let after = &rest[at + PARAMETER_OPEN.len()..];
        let Some((key, value)) = after.split_once('>') else {
            break;
        };
        let close = value.find(PARAMETER_CLOSE);
        let next = value.find(PARAMETER_OPEN);
        let (end, resume) = match (close, next) {
            (Some(c), Some(n)) if n < c => (n, n),
            (Some(c), _) => (c, c + PARAMETER_CLOSE.len()),
            (None, Some(n)) => (n, n),
            (None, None) => break,
        };
        let raw = &value[..end];
        let raw = raw.strip_prefix('\n').unwrap_or(raw);
        let raw = raw.strip_suffix('\n').unwrap_or(raw);
        parameters.insert(key.trim().to_string(), Value::String(raw.to_string()));
        rest = &value[resume..];
    }
    parameters
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARIS: &str = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>";

    #[test]
    fn content_before_the_calls_is_stripped() {
        let p = parse(&format!("Checking.\n\n{PARIS}"), true, false, None);
        assert_eq!(p.content.as_deref(), Some("Checking."));
        assert_eq!(p.calls.len(), 1);
        assert_eq!(p.calls[0].arguments, "{\"city\": \"Paris\"}");
        assert!(parse(PARIS, false, false, None).calls.is_empty());
        // Streamed: the text before the calls as it is, then the whitespace between them.
        let two = format!("Checking.\n\n{PARIS}\n{PARIS}\n");
        let p = parse(&two, true, true, None);
        assert_eq!(p.content.as_deref(), Some("Checking.\n\n\n\n"));
        assert_eq!(p.calls.len(), 2);
        assert_eq!(
            parse(&format!(" \n{PARIS}"), true, true, None).content,
            None
        );
        let cut = &PARIS[..PARIS.len() - 3];
        assert!(parse(cut, true, true, None).unmodelled.is_some());
    }

    #[test]
    fn values_are_converted_by_the_schema() {
        let tools = serde_json::json!([{"type": "function", "function": {"name": "f",
            "parameters": {"properties": {"n": {"type": "integer"}, "s": {"type": "string"}}}}}]);
        let text = "<tool_call>\n<function=f>\n<parameter=n>\n3\n</parameter>\n<parameter=s>\n3\n</parameter>\n</function>\n</tool_call>";
        let p = parse(text, true, false, tools.as_array().map(Vec::as_slice));
        assert_eq!(p.calls[0].arguments, "{\"n\": 3, \"s\": \"3\"}");
    }
}
