//! The texts a model may have written for tool-call arguments that the server parsed and wrote
//! back with `json.dumps` (vLLM's hermes parser for Qwen3, non-streamed): the JSON value is
//! kept, its spelling is lost. Each separator may have been written with or without its space
//! (`", "`/`","`, `": "`/`":"`), non-ASCII as itself or `\uXXXX` (`ensure_ascii`), or the whole
//! value pretty-printed (`indent=2`). The reconstruction sends every spelling forward and lets
//! `usage.completion_tokens` decide; BPE merges across separators, so each spelling is encoded
//! whole, never summed from per-site deltas.
//!
//! Written here rather than with `pyjson::dumps` because `json.dumps` has one separator for the
//! whole value; a model does not.
//!
//! Beside the arguments, hermes hides two more things of the model's text, which
//! [`count_hidden_spellings`] tries on the stream the synthesis chose: the call's wrapper (the
//! `{"name": …, "arguments": …}` object is parsed, so its spacing is lost, streamed too: the
//! streamed arguments end before the wrapper's `}`), and, unstreamed, whitespace-only content
//! before the first call (sent as `null` whatever it was).

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use crate::pyjson::{dumps_json, write_json_string, DumpOptions};

use super::fidelity::Reason;

/// Separator sites beyond which the spellings are not enumerated (2^10 = 1,024 spellings per value).
const MOST_SITES: usize = 10;

/// Every spelling of `value` (the `json.dumps` default first), or `None` when there are too
/// many to try (the caller must then not claim the spelling is settled).
pub(super) fn spellings(value: &Value) -> Option<Vec<String>> {
    let sites = separator_sites(value);
    if sites > MOST_SITES {
        return None;
    }
    let asciis: &[bool] = if has_non_ascii(value) {
        &[false, true]
    } else {
        &[false]
    };
    let mut out = Vec::new();
    for &ascii in asciis {
        for mask in 0..(1u32 << sites) {
            let mut text = String::new();
            let mut site = 0;
            write(&mut text, value, ascii, mask, &mut site);
            out.push(text);
        }
    }
    for &ascii in asciis {
        let pretty = DumpOptions {
            ensure_ascii: ascii,
            indent: Some("  ".to_string()),
            ..DumpOptions::default()
        };
        out.push(dumps_json(value, &pretty));
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|s| seen.insert(s.clone()));
    Some(out)
}

fn separator_sites(value: &Value) -> usize {
    match value {
        Value::Object(map) => {
            map.len()
                + map.len().saturating_sub(1)
                + map.values().map(separator_sites).sum::<usize>()
        }
        Value::Array(items) => {
            items.len().saturating_sub(1) + items.iter().map(separator_sites).sum::<usize>()
        }
        _ => 0,
    }
}

/// The spellings that keep one style through the whole value: compact (the way a model
/// usually writes), `json.dumps`' spaced default, pretty-printed; each as itself and, with
/// non-ASCII, `ensure_ascii`. Tried alike for every call of an answer whose full set of
/// spellings is too many to try: one style for all calls is the likely case, never a settled one.
pub(super) fn uniform_spellings(value: &Value) -> Vec<String> {
    let asciis: &[bool] = if has_non_ascii(value) {
        &[false, true]
    } else {
        &[false]
    };
    let compact = Some((",".to_string(), ":".to_string()));
    let mut out = Vec::new();
    for (indent, separators) in [
        (None, compact),
        (None, None),
        (Some("  ".to_string()), None),
    ] {
        for &ascii in asciis {
            let options = DumpOptions {
                ensure_ascii: ascii,
                indent: indent.clone(),
                separators: separators.clone(),
                ..DumpOptions::default()
            };
            out.push(dumps_json(value, &options));
        }
    }
    out
}

/// Whether `value` holds a float, whose digits `json.loads` normalizes and [`spellings`] does
/// not enumerate (`2.50`, `2.5` and `25e-1` load alike; `\p{N}{1,3}` pre-tokenizers give `2.5`
/// and `2.500` the same count): a spelling never settled.
pub(super) fn has_float(value: &Value) -> bool {
    match value {
        Value::Number(n) => n.is_f64(),
        Value::Object(map) => map.values().any(has_float),
        Value::Array(items) => items.iter().any(has_float),
        _ => false,
    }
}

fn has_non_ascii(value: &Value) -> bool {
    match value {
        Value::String(s) => !s.is_ascii(),
        Value::Object(map) => map.iter().any(|(k, v)| !k.is_ascii() || has_non_ascii(v)),
        Value::Array(items) => items.iter().any(has_non_ascii),
        _ => false,
    }
}

/// Bit `site` of `mask` clear: the separator has its space (the `json.dumps` default).
fn separator(out: &mut String, bare: &str, mask: u32, site: &mut usize) {
    out.push_str(bare);
    if mask & (1 << *site) == 0 {
        out.push(' ');
    }
    *site += 1;
}

fn write(out: &mut String, value: &Value, ascii: bool, mask: u32, site: &mut usize) {
    match value {
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    separator(out, ",", mask, site);
                }
                write_json_string(out, key, ascii);
                separator(out, ":", mask, site);
                write(out, item, ascii, mask, site);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    separator(out, ",", mask, site);
                }
                write(out, item, ascii, mask, site);
            }
            out.push(']');
        }
        Value::String(s) => write_json_string(out, s, ascii),
        scalar => out.push_str(&dumps_json(scalar, &DumpOptions::default())),
    }
}

use crate::model::family::qwen3::{CALL_CLOSE, CALL_OPEN, THINK_CLOSE};

/// Whitespace a model may have written in place of, or after, the content hermes nulls.
const WHITESPACE: [&str; 7] = [" ", "\n", "\n\n", "  ", "\t", " \n", "\n "];

/// The spellings of hermes' call wrapper around the arguments: the header up to the name, from
/// the name to the arguments, and the close (the template's first).
const WRAPPERS: [(&str, &str, &str); 4] = [
    ("{\"name\": \"", "\", \"arguments\": ", "}"),
    ("{\"name\": \"", "\", \"arguments\": ", " }"),
    ("{\"name\":\"", "\",\"arguments\":", "}"),
    ("{\"name\":\"", "\",\"arguments\":", " }"),
];

/// A call's wrapper header as any of [`WRAPPERS`] writes it, right after `<tool_call>\n`.
static HEADER_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"\A\{"name": ?"([^"]+)", ?"arguments": ?"#)
        .unwrap_or_else(|e| panic!("the wrapper regex is a constant and compiles: {e}"))
});

/// One call of a hermes text: where its wrapper starts, the name, the arguments' span, and
/// whether the wrapper's close was written (a cut may fall inside the arguments).
struct Wrapped {
    start: usize,
    name: String,
    arguments: (usize, usize),
    /// End of the wrapper (after its `}`), where the text after it starts.
    end: usize,
    closed: bool,
}

fn wrapped_calls(text: &str) -> Option<Vec<Wrapped>> {
    let mut calls = Vec::new();
    let mut from = 0;
    while let Some(rel) = text[from..].find(CALL_OPEN) {
        let start = from + rel + CALL_OPEN.len();
        let start = start + usize::from(text[start..].starts_with('\n'));
        let header = HEADER_RE.captures(&text[start..])?;
        let name = header.get(1)?.as_str().to_string();
        let args_start = start + header.get(0)?.end();
        let tail_end = text[args_start..]
            .find(CALL_CLOSE)
            .map_or(text.len(), |at| args_start + at);
        let tail = text[args_start..tail_end].trim_end();
        let (arguments, end, closed) = match tail.strip_suffix('}') {
            Some(inner) if !inner.trim().is_empty() => {
                let inner = inner.strip_suffix(' ').unwrap_or(inner);
                (
                    (args_start, args_start + inner.len()),
                    args_start + tail.len(),
                    true,
                )
            }
            _ => (
                (args_start, args_start + tail.len()),
                args_start + tail.len(),
                false,
            ),
        };
        calls.push(Wrapped {
            start,
            name,
            arguments,
            end,
            closed,
        });
        from = end;
    }
    Some(calls)
}

/// The texts `text` could have been instead that a hermes answer does not tell apart by their
/// fields: every call's wrapper spelled another way (all alike), and the whitespace-only
/// content before the first call longer or shorter. Each with what hides it.
pub(super) fn hermes_alternatives(text: &str) -> Vec<(String, Reason)> {
    let mut out = Vec::new();
    if let Some(calls) = wrapped_calls(text).filter(|c| !c.is_empty()) {
        for (head, middle, close) in WRAPPERS {
            let mut alt = String::with_capacity(text.len() + 8);
            let mut last = 0;
            for call in &calls {
                alt.push_str(&text[last..call.start]);
                alt.push_str(head);
                alt.push_str(&call.name);
                alt.push_str(middle);
                alt.push_str(&text[call.arguments.0..call.arguments.1]);
                if call.closed {
                    alt.push_str(close);
                    last = call.end;
                } else {
                    last = call.arguments.1;
                }
            }
            alt.push_str(&text[last..]);
            out.push((alt, Reason::ArgumentsReserialized));
        }
    }
    if let Some(first_call) = text.find(CALL_OPEN) {
        let content_start = text[..first_call]
            .find(THINK_CLOSE)
            .map_or(0, |at| at + THINK_CLOSE.len());
        let content = &text[content_start..first_call];
        if content.trim().is_empty() {
            let (before, after) = (&text[..content_start], &text[first_call..]);
            let longer = WHITESPACE.iter().map(|w| format!("{content}{w}"));
            let shorter = (0..content.len())
                .filter(|&k| content.is_char_boundary(k))
                .map(|k| content[..k].to_string());
            for run in longer.chain(shorter) {
                out.push((
                    format!("{before}{run}{after}"),
                    Reason::ServerNullsWhitespaceContent,
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_spellings_of_the_corpus_truths_are_among_them() {
        // The models' own texts in tests/data/server_shapes/qwen3.jsonl, which vLLM answered
        // as `json.dumps` of the value: single_call/002 (compact), single_call/003 (ascii),
        // nested_args/004 (indent=2), nested_args/002 (compact, nested).
        let tokyo = spellings(&json!({"city": "東京"})).unwrap();
        assert_eq!(tokyo[0], "{\"city\": \"東京\"}");
        assert!(tokyo.contains(&"{\"city\":\"東京\"}".to_string()));
        let zurich = spellings(&json!({"city": "Zürich"})).unwrap();
        assert!(zurich.contains(&"{\"city\": \"Z\\u00fcrich\"}".to_string()));
        let nested = json!({"query": "rain gear", "filters": {"tags": ["umbrella", "☔"], "range": {"min": 1, "max": 20}}});
        let all = spellings(&nested).unwrap();
        assert!(all.contains(
            &"{\"query\":\"rain gear\",\"filters\":{\"tags\":[\"umbrella\",\"☔\"],\"range\":{\"min\":1,\"max\":20}}}"
                .to_string()
        ));
        assert!(all.contains(&"{\n  \"query\": \"rain gear\",\n  \"filters\": {\n    \"tags\": [\n      \"umbrella\",\n      \"☔\"\n    ],\n    \"range\": {\n      \"min\": 1,\n      \"max\": 20\n    }\n  }\n}".to_string()));
        // 10 sites, two ways to write the non-ASCII, two pretty forms.
        assert_eq!(all.len(), 2 * 1024 + 2);
    }

    #[test]
    fn hermes_hides_the_wrapper_and_the_nulled_content() {
        // Twins vLLM 0.33.0's own hermes code answers like the truth (make_server_corpus.py
        // qwen3 with DRAFTGEN_SHOW_TWINS=1): qwen3/…/nonstream/spaces/single_call/001 (4 and 5
        // newlines after `</think>`), …/stream/spaces/nested_args/002 (`} }` closing the wrapper).
        let call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Tokyo\"}}\n</tool_call><|im_end|>";
        let truth = format!("<think>\nR.\n</think>\n\n{call}");
        let alternatives: Vec<String> = hermes_alternatives(&truth)
            .into_iter()
            .map(|(t, _)| t)
            .collect();
        assert!(alternatives.contains(&format!("<think>\nR.\n</think>\n\n\n\n{call}")));
        assert!(alternatives.contains(&format!("<think>\nR.\n</think>\n{call}")));
        let nested = "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"range\":{\"max\":20}}}\n</tool_call>";
        let spaced_close = "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"range\":{\"max\":20}} }\n</tool_call>";
        let compact = "<tool_call>\n{\"name\":\"search\",\"arguments\":{\"range\":{\"max\":20}}}\n</tool_call>";
        let found: Vec<String> = hermes_alternatives(nested)
            .into_iter()
            .map(|(t, _)| t)
            .collect();
        assert!(found.contains(&spaced_close.to_string()));
        assert!(found.contains(&compact.to_string()));
        // Content that is not whitespace is shown by the answer: nothing to vary there.
        let shown = format!("Sure.\n{call}");
        assert!(hermes_alternatives(&shown)
            .iter()
            .all(|(_, r)| *r != Reason::ServerNullsWhitespaceContent));
        // A call cut inside its arguments keeps its tail; only the header is respelled.
        let cut = "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"um";
        assert!(hermes_alternatives(cut)
            .iter()
            .any(|(t, _)| t == "<tool_call>\n{\"name\":\"search\",\"arguments\":{\"q\": \"um"));
    }

    #[test]
    fn too_many_sites_are_not_enumerated() {
        let wide: serde_json::Map<String, Value> =
            (0..7).map(|i| (format!("k{i}"), json!(i))).collect();
        assert!(spellings(&Value::Object(wide)).is_none());
    }
}
