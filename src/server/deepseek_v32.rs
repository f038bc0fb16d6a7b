//! vLLM's `deepseek_v32` tool parser and `deepseek_v3` reasoning parser for DeepSeek-V3.2 (vLLM
//! 0.33.0: `tool_parsers/deepseekv32_engine_tool_parser.py`, the grammar of `parser/deepseek_v32.py`
//! run by `parser/engine/parser_engine.py`, values read by `parser/deepseek_v4.py`'s
//! `_dsml_arg_converter`), as measured with the wheel's own code
//! (tests/data/deepseek_v32/parser_shapes.jsonl).
//!
//! - Reasoning: as for DeepSeek-V3.1 ([`deepseek_v31`](super::deepseek_v31)); the tool parser reads
//!   the content.
//! - A call opens at `<｜DSML｜invoke name="` (inside `<｜DSML｜function_calls>` or bare); content is
//!   the text before the first `<｜DSML｜function_calls>` or call as it is (`None` when only
//!   whitespace); everything between and after the calls is dropped.
//! - A call is `NAME">` then its parameters up to `</｜DSML｜invoke>` (or the section's close, or the
//!   end of a cut text). A parameter is `<｜DSML｜parameter name="KEY" string="S">VALUE` up to
//!   `</｜DSML｜parameter>` or the next parameter's head; an unfinished one is dropped. VALUE is
//!   the string itself when `S` is `true`, else its JSON (the text itself when it is not JSON);
//!   the arguments are `json.dumps`ed, then converted by the request's schema (`_fix_arg_types`,
//!   ported in `quirks/coerces_arguments.rs`). So `string="true">3` and `string="false">3` read
//!   alike under an integer schema, and a typed value's spelling is lost (`05`, `5.0`, ` 3`).
//! - Streamed (the wheel's `extract_tool_calls_streaming` fed token by token): the same answer,
//!   except where the cut falls inside a `string="true"` value (the stream sends a piece of it):
//!   that one is [`Parsed::unmodelled`], as is a cut inside a call's name. Ids are random, not
//!   in the token stream.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

use super::quirks::fix_arg_types;
use super::{deepseek_v31, ForwardInput, Parsed, ParsedCall, ParserTraits};
use crate::api::ServerKind;
use crate::model::family::deepseek_v32::{
    FUNCTION_CALLS_CLOSE, FUNCTION_CALLS_OPEN, INVOKE_CLOSE, INVOKE_OPEN, PARAMETER_CLOSE,
    PARAMETER_OPEN,
};
use crate::pyjson::{dumps_json, DumpOptions};

/// vLLM's `deepseek_v32` parser: calls read and written anew (values converted by their
/// `string` attribute and the schema), an unfinished one sent with what it has.
pub const TRAITS: ParserTraits = ParserTraits {
    rewrites_calls: true,
    converts_values_by_schema: true,
    ..ParserTraits::NONE
};

/// `_PARAM_RE`'s head, anchored: `<｜DSML｜parameter name="KEY" string="S">`.
static HEAD_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"^<｜DSML｜parameter\s+name="([^"]+)"(?:\s+string="([^"]*)")?\s*>"#)
        .unwrap_or_else(|e| panic!("the DSML head regex is a constant and compiles: {e}"))
});

/// `_PARAM_RE`'s lookahead: the next parameter's head ends a value without a close.
static NEXT_HEAD_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"<｜DSML｜parameter\s+name=")
        .unwrap_or_else(|e| panic!("the DSML lookahead regex is a constant and compiles: {e}"))
});

/// [`parse`] where `kind` serves V3.2 with vLLM's parsers; SGLang's `deepseekv32` detector
/// (it strips string values and the blank line before the calls) and llama.cpp's parser are
/// not modelled: their answers agree with no text rather than with a wrong one.
pub fn parse_by(kind: ServerKind, text: &str, input: &ForwardInput) -> Parsed {
    let mut parsed = parse(
        text,
        input.thinking,
        input.tools_declared,
        input.stream,
        input.tools,
    );
    if matches!(kind, ServerKind::Sglang | ServerKind::LlamaCpp) {
        parsed.unmodelled = Some("this server's DeepSeek-V3.2 parsers (only vLLM's are modelled)");
    }
    parsed
}

pub fn parse(
    text: &str,
    thinking: bool,
    tools_declared: bool,
    stream: bool,
    tools: Option<&[Value]>,
) -> Parsed {
    let mut parsed = deepseek_v31::parse(text, thinking, false, stream);
    parsed.values_typed_by_schema = true;
    let Some(content) = parsed.content.clone().filter(|_| tools_declared) else {
        return parsed;
    };
    let start = [content.find(FUNCTION_CALLS_OPEN), content.find(INVOKE_OPEN)]
        .into_iter()
        .flatten()
        .min();
    let Some(start) = start else {
        return parsed;
    };
    let Some(calls) = calls(&content[start..], stream) else {
        parsed.unmodelled = Some("vLLM's deepseek_v32 parser on this text");
        return parsed;
    };
    let prefix = &content[..start];
    parsed.content = (!prefix.trim().is_empty()).then(|| prefix.to_string());
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

/// The calls in `text` (which starts at the section or the first call): (name, arguments as
/// JSON); `None` where the text leaves the shapes measured.
fn calls(mut text: &str, stream: bool) -> Option<Vec<(String, String)>> {
    let mut out = Vec::new();
    while let Some(at) = text.find(INVOKE_OPEN) {
        let header = &text[at + INVOKE_OPEN.len()..];
        // Cut inside the name: the wheel sends what it had, a reading not measured further.
        let (name, after) = header.split_once("\">")?;
        let end = [after.find(INVOKE_CLOSE), after.find(FUNCTION_CALLS_CLOSE)]
            .into_iter()
            .flatten()
            .min();
        let body = &after[..end.unwrap_or(after.len())];
        let (parameters, partial_string) = parameters(body);
        if stream && end.is_none() && partial_string {
            return None;
        }
        out.push((
            name.to_string(),
            dumps_json(&Value::Object(parameters), &DumpOptions::default()),
        ));
        text = &after[end.unwrap_or(after.len())..];
    }
    Some(out)
}

/// `_dsml_arg_converter` (not partial): every parameter whose value ends, by its close or the
/// next parameter's head; and whether an unfinished `string="true"` value with text follows.
fn parameters(body: &str) -> (Map<String, Value>, bool) {
    let mut parameters = Map::new();
    let mut from = 0;
    let mut partial_string = false;
    while let Some(at) = body[from..].find(PARAMETER_OPEN).map(|i| i + from) {
        let Some(head) = HEAD_RE.captures(&body[at..]) else {
            from = at + PARAMETER_OPEN.len();
            continue;
        };
        let value_start = at + head[0].len();
        let rest = &body[value_start..];
        let close = rest.find(PARAMETER_CLOSE);
        let next = NEXT_HEAD_RE.find(rest).map(|m| m.start());
        let (end, resume) = match (close, next) {
            (Some(c), Some(n)) if n < c => (n, n),
            (Some(c), _) => (c, c + PARAMETER_CLOSE.len()),
            (None, Some(n)) => (n, n),
            (None, None) => {
                let is_string = head.get(2).is_some_and(|s| s.as_str() == "true");
                partial_string = is_string && !rest.is_empty();
                break;
            }
        };
        let raw = &rest[..end];
        let value = match head.get(2).map(|s| s.as_str()) {
            Some("true") => Value::String(raw.to_string()),
            _ => serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string())),
        };
        parameters.insert(head[1].to_string(), value);
        from = value_start + resume;
    }
    (parameters, partial_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARIS: &str = "\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_weather\">\n<｜DSML｜parameter name=\"city\" string=\"true\">Paris</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>";

    #[test]
    fn content_keeps_the_whitespace_before_the_calls() {
        let p = parse(&format!("Checking.{PARIS}"), false, true, false, None);
        assert_eq!(p.content.as_deref(), Some("Checking.\n\n"));
        assert_eq!(p.calls.len(), 1);
        assert_eq!(p.calls[0].arguments, "{\"city\": \"Paris\"}");
        assert_eq!(parse(PARIS, false, true, false, None).content, None);
        assert!(parse(PARIS, false, false, false, None).calls.is_empty());
        let p = parse(&format!("Hmm.</think>{PARIS}"), true, true, true, None);
        assert_eq!(p.reasoning.as_deref(), Some("Hmm."));
        assert_eq!(p.calls.len(), 1);
    }

    #[test]
    fn values_are_read_by_their_attribute_then_the_schema() {
        let tools = serde_json::json!([{"type": "function", "function": {"name": "f",
            "parameters": {"properties": {"n": {"type": "integer"}, "s": {"type": "string"}}}}}]);
        let text = "<｜DSML｜invoke name=\"f\">\n<｜DSML｜parameter name=\"n\" string=\"true\">3</｜DSML｜parameter>\n<｜DSML｜parameter name=\"s\" string=\"false\">x</｜DSML｜parameter>\n</｜DSML｜invoke>";
        let p = parse(
            text,
            false,
            true,
            false,
            tools.as_array().map(Vec::as_slice),
        );
        assert_eq!(p.calls[0].arguments, "{\"n\": 3, \"s\": \"x\"}");
    }
}
