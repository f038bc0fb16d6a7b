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

use serde_json::Value;

use crate::pyjson::{dumps_json, write_json_string, DumpOptions};

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
    fn too_many_sites_are_not_enumerated() {
        let wide: serde_json::Map<String, Value> =
            (0..7).map(|i| (format!("k{i}"), json!(i))).collect();
        assert!(spellings(&Value::Object(wide)).is_none());
    }
}
