//! Non-streamed arguments whose value types do not match the declared schema are coerced and
//! re-serialized (vLLM 0.33's parser engine; kimi_k25/vllm-0.33.0/nonstream/*/schema_mismatch in
//! tests/data/server_shapes); streamed deltas were measured unchanged (tests/sim_vs_servers.rs).
//! Forward, it needs the request's schemas ([`ForwardInput::tools`]); the consistency check,
//! which has none, accepts a coerced spelling of the model's arguments instead
//! (`Parsed::agrees_with`).
//!
//! The coercion is a port of `ParserEngine._fix_arg_types` / `_coerce_dict` / `_coerce_value`
//! (`vllm/parser/engine/parser_engine.py`) and `coerce_to_schema_type` /
//! `extract_types_from_schema` (`vllm/tool_parsers/utils.py`), vLLM 0.33.0. When any value
//! changes, the arguments are re-serialized with `json.dumps(args, ensure_ascii=False)`
//! ([`crate::pyjson`]); otherwise the model's text is sent as it was. Hand-written because it is
//! vLLM's own heuristic (no crate does it): checked against vLLM's answers in
//! `tests/sim_vs_servers.rs` (the `schema_mismatch` fixtures).

use serde_json::{Map, Number, Value};

use crate::pyjson::{self, DumpOptions};
use crate::server::quirk::Quirk;
use crate::server::ReadBackRules;
use crate::server::{parser_traits, ForwardInput, Parsed, ServerShape};

#[derive(Debug, Clone, Copy)]
pub struct CoercesArguments;

impl Quirk for CoercesArguments {
    fn name(&self) -> &'static str {
        "coerces_arguments"
    }

    fn read_back(&self, rules: &mut ReadBackRules) {
        rules.reserializes_arguments = true;
    }

    fn forward(&self, _shape: &ServerShape, input: &ForwardInput, parsed: &mut Parsed) {
        let Some(tools) = input.tools else {
            return;
        };
        if input.stream || !parser_traits(input.syntax).coerces_arguments {
            return;
        }
        for call in &mut parsed.calls {
            call.arguments = fix_arg_types(&call.arguments, &call.name, tools);
        }
    }

    fn reason(&self) -> Option<&'static str> {
        Some("arguments_reserialized")
    }
}

/// The arguments vLLM sends for a call of `name` whose arguments the model wrote as `arguments`,
/// with the request's `tools`.
pub(crate) fn fix_arg_types(arguments: &str, name: &str, tools: &[Value]) -> String {
    let Some(properties) = tool_properties(tools, name) else {
        return arguments.to_string();
    };
    if properties.is_empty() {
        return arguments.to_string();
    }
    let Ok(Value::Object(mut args)) = serde_json::from_str::<Value>(arguments) else {
        return arguments.to_string();
    };
    if !coerce_dict(&mut args, properties) {
        return arguments.to_string();
    }
    let options = DumpOptions {
        ensure_ascii: false,
        ..DumpOptions::default()
    };
    pyjson::dumps_json(&Value::Object(args), &options)
}

/// `find_tool_properties`: the first function tool named `name`, its `parameters.properties`.
fn tool_properties<'a>(tools: &'a [Value], name: &str) -> Option<&'a Map<String, Value>> {
    let function = tools
        .iter()
        .filter_map(|tool| tool.get("function"))
        .find(|f| f.get("name").and_then(Value::as_str) == Some(name))?;
    function.get("parameters")?.get("properties")?.as_object()
}

fn coerce_dict(args: &mut Map<String, Value>, properties: &Map<String, Value>) -> bool {
    let mut changed = false;
    for (key, value) in args.iter_mut() {
        let Some(schema) = properties.get(key).filter(|s| s.is_object()) else {
            continue;
        };
        if let Some(coerced) = coerce_value(value, schema) {
            *value = coerced;
            changed = true;
        }
    }
    changed
}

/// `_coerce_value`: the new value, `None` when unchanged (nested changes are made in place and
/// reported as `Some` of the value itself).
fn coerce_value(value: &mut Value, schema: &Value) -> Option<Value> {
    match value {
        Value::String(s) => {
            let types = extract_types(schema);
            coerce_to_type(s, &types)
        }
        Value::Object(map) => {
            let nested = schema.get("properties").and_then(Value::as_object)?;
            coerce_dict(map, nested).then(|| Value::Object(map.clone()))
        }
        Value::Array(items) => {
            let items_schema = schema.get("items").filter(|s| s.is_object())?;
            let mut changed = false;
            for item in items.iter_mut() {
                if let Some(coerced) = coerce_value(item, items_schema) {
                    *item = coerced;
                    changed = true;
                }
            }
            changed.then(|| Value::Array(items.clone()))
        }
        scalar => {
            let types = extract_types(schema);
            let options = DumpOptions {
                ensure_ascii: false,
                ..DumpOptions::default()
            };
            let as_str = pyjson::dumps_json(scalar, &options);
            let coerced = coerce_to_type(&as_str, &types).unwrap_or(Value::String(as_str));
            (!same_python_value(&coerced, scalar)).then_some(coerced)
        }
    }
}

/// `type(a) is type(b) and a == b` over JSON values as Python's `json.loads` makes them (`int`,
/// `float`, `bool`, `str`, `None`).
fn same_python_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x.is_f64() == y.is_f64() && x.as_f64() == y.as_f64()
        }
        _ => a == b,
    }
}

/// `extract_types_from_schema`: `type` (string or list), types inferred from `enum`, and the
/// same for `anyOf`/`oneOf`/`allOf`; `["string"]` when nothing says.
fn extract_types(schema: &Value) -> Vec<String> {
    let mut types: Vec<String> = Vec::new();
    let mut add = |t: &str| {
        if !types.iter().any(|x| x == t) {
            types.push(t.to_string());
        }
    };
    let Some(schema) = schema.as_object() else {
        return vec!["string".into()];
    };
    match schema.get("type") {
        Some(Value::String(t)) => add(t),
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).for_each(&mut add),
        _ => {}
    }
    if let Some(Value::Array(values)) = schema.get("enum") {
        for value in values {
            add(match value {
                Value::Null => "null",
                Value::Bool(_) => "boolean",
                Value::Number(n) if n.is_f64() => "number",
                Value::Number(_) => "integer",
                Value::String(_) => "string",
                Value::Array(_) => "array",
                Value::Object(_) => "object",
            });
        }
    }
    for field in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(choices)) = schema.get(field) {
            for choice in choices {
                for t in extract_types(choice) {
                    add(&t);
                }
            }
        }
    }
    if types.is_empty() {
        types.push("string".into());
    }
    types
}

/// `_TYPE_ALIASES`.
fn alias(t: &str) -> String {
    let t = t.trim().to_lowercase();
    let canonical = match t.as_str() {
        "str" | "text" | "varchar" | "char" | "enum" => "string",
        "int" | "int32" | "int64" | "uint" | "uint32" | "uint64" | "long" | "short"
        | "unsigned" => "integer",
        "float" | "float32" | "float64" | "double" => "number",
        "bool" => "boolean",
        "dict" => "object",
        "arr" | "list" | "sequence" => "array",
        _ => return t,
    };
    canonical.to_string()
}

/// `coerce_to_schema_type` for a string value: `Some(new value)`, or `None` when the value stays
/// the string it was (Python returns the same object).
fn coerce_to_type(value: &str, types: &[String]) -> Option<Value> {
    let normalized: Vec<String> = types.iter().map(|t| alias(t)).collect();
    let has = |t: &str| normalized.iter().any(|n| n == t);
    for candidate in [
        "null", "integer", "number", "boolean", "object", "array", "string",
    ] {
        if !has(candidate) {
            continue;
        }
        match candidate {
            "null" if value.to_lowercase() == "null" => return Some(Value::Null),
            "string" => return None,
            "integer" => {
                if let Some(n) = python_int(value) {
                    return Some(n);
                }
            }
            "number" => {
                if let Some(n) = python_int(value) {
                    return Some(n);
                }
                if let Some(x) = python_float(value).filter(|x| x.is_finite()) {
                    // `val if val != int(val) else int(val)`
                    if x.fract() == 0.0 && x.abs() < 9.0e18 {
                        return Some(Value::from(x as i64));
                    }
                    return Number::from_f64(x).map(Value::Number);
                }
            }
            "boolean" => match value.trim().to_lowercase().as_str() {
                "true" | "1" => return Some(Value::Bool(true)),
                "false" | "0" => return Some(Value::Bool(false)),
                _ => {}
            },
            "object" | "array" => {
                // Any JSON (serde_json has no non-finite numbers, so every parse is finite).
                if let Ok(parsed) = serde_json::from_str::<Value>(value) {
                    return Some(parsed);
                }
            }
            _ => {}
        }
    }
    serde_json::from_str::<Value>(value).ok()
}

/// Python's `int(s)`: surrounding whitespace allowed, an optional sign, decimal digits.
fn python_int(s: &str) -> Option<Value> {
    let t = s.trim();
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse::<i64>()
        .ok()
        .map(Value::from)
        .or_else(|| t.parse::<u64>().ok().map(Value::from))
}

/// Python's `float(s)` (finite or not; `inf`, `nan` spelled any case).
fn python_float(s: &str) -> Option<f64> {
    s.trim().parse::<f64>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools() -> Vec<Value> {
        vec![
            json!({"type": "function", "function": {"name": "f", "parameters": {
                "type": "object",
                "properties": {
                    "count": {"type": "integer"},
                    "ratio": {"type": "number"},
                    "enabled": {"type": "boolean"},
                    "name": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "integer"}},
                }
            }}}),
        ]
    }

    #[test]
    fn strings_of_the_wrong_type_are_coerced_and_re_serialized() {
        // kimi_k25/vllm-0.33.0/nonstream/nospaces/schema_mismatch/00{1,2,3}: vLLM's answers.
        let t = tools();
        for (model, sent) in [
            ("{\"count\": \"3\"}", "{\"count\": 3}"),
            (
                "{\"count\": 3, \"enabled\": \"true\"}",
                "{\"count\": 3, \"enabled\": true}",
            ),
            (
                "{\"count\":\"7\",\"ratio\":\"0.5\"}",
                "{\"count\": 7, \"ratio\": 0.5}",
            ),
            ("{\"tags\": [\"1\", 2]}", "{\"tags\": [1, 2]}"),
        ] {
            assert_eq!(fix_arg_types(model, "f", &t), sent);
        }
    }

    #[test]
    fn nothing_changed_sends_the_model_s_text() {
        let t = tools();
        for text in ["{\"count\":3}", "{\"name\": \"x\"}", "not json", "[1]"] {
            assert_eq!(fix_arg_types(text, "f", &t), text);
        }
        assert_eq!(
            fix_arg_types("{\"count\":\"3\"}", "g", &t),
            "{\"count\":\"3\"}"
        );
        // A number where a string is declared becomes its JSON text.
        assert_eq!(fix_arg_types("{\"name\": 5}", "f", &t), "{\"name\": \"5\"}");
    }
}
