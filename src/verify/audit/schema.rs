//! Arguments against the declared JSON schema, two ways:
//!
//! - [`Schemas::check`]: draftgen's own verdicts for one call (name declared, arguments JSON, fit
//!   the schema, each checked on its own), with reasons a user can read.
//! - [`k2vv_call_valid`]: K2-Vendor-Verifier's `validate_tool_call` (`tool_calls_eval.py` at
//!   `0bc5061`), quirks included, for its schema accuracy: the tools looked up are the request's
//!   `tools` parameter (or, for the system-prompt row, the prompt's declarations, [`k2vv_tools`]); the first tool whose `function.name` matches wins and a tool entry
//!   without `function.name` before it fails the call (Python `KeyError`); a schema that is
//!   missing or empty (`{}`, falsy in Python) fails; string arguments go through `json.loads`;
//!   `jsonschema.validate` checks the schema against its meta-schema first (an invalid schema
//!   fails) and asserts no `format`.
//!
//! Validation is the `jsonschema` crate, set up as Python `jsonschema.validate` behaves: the draft
//! from `$schema` (2020-12 when absent) and `format` as an annotation only. Both checks are held to
//! Python `jsonschema`'s verdicts on Kimi-Vendor-Verifier's schemas in `tests/audit.rs`.
//! Compiled validators are cached by schema text: a run repeats the same few tools.

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::Value;

use super::declared::{Declared, DeclaredIn};
use crate::completion::Arguments;
use crate::json::python_truthy;

/// One thing wrong with a call.
#[derive(Debug, Clone, PartialEq)]
pub enum CallVerdict {
    UndeclaredName,
    InvalidJson(String),
    SchemaViolation(String),
    /// The declared schema is itself not a valid JSON schema (the call cannot be judged).
    UnusableSchema(String),
}

/// Compiled validators by schema text.
#[derive(Default)]
pub struct Schemas {
    compiled: HashMap<String, Result<jsonschema::Validator, String>>,
}

impl Schemas {
    /// Whether `arguments` (already parsed JSON) fit `schema`; `Err` when the schema is unusable.
    pub fn fits(&mut self, schema: &Value, arguments: &Value) -> Result<bool, String> {
        let key = schema.to_string();
        let validator = self.compiled.entry(key).or_insert_with(|| compile(schema));
        match validator {
            Ok(v) => Ok(v.is_valid(arguments)),
            Err(e) => Err(e.clone()),
        }
    }

    /// The first violation's message (for the report), if any.
    pub fn first_error(&mut self, schema: &Value, arguments: &Value) -> Option<String> {
        let key = schema.to_string();
        match self.compiled.get(&key) {
            Some(Ok(v)) => v.iter_errors(arguments).next().map(|e| {
                let path = e.instance_path().to_string();
                format!("{}{}", if path.is_empty() { "" } else { &path }, e)
            }),
            _ => None,
        }
    }

    /// draftgen's verdicts on one call, each property checked on its own: the name is declared,
    /// the arguments are JSON (checked whatever the name), and they fit the declared schema
    /// (checked when both hold and the declaration has `parameters`; one without accepts any
    /// arguments). Empty when the call is valid; the first entry is the call's first problem.
    pub fn check(
        &mut self,
        declared: &Declared,
        name: &str,
        arguments: &Arguments,
    ) -> Vec<CallVerdict> {
        let mut verdicts = Vec::new();
        let tool = declared.get(name);
        if tool.is_none() {
            verdicts.push(CallVerdict::UndeclaredName);
        }
        let value = match parse_arguments(arguments) {
            Ok(value) => Some(value),
            Err(e) => {
                verdicts.push(CallVerdict::InvalidJson(e));
                None
            }
        };
        let schema = tool.and_then(|t| t.parameters.as_ref());
        if let (Some(schema), Some(value)) = (schema, value) {
            match self.fits(schema, &value) {
                Ok(true) => {}
                Ok(false) => verdicts.push(CallVerdict::SchemaViolation(
                    self.first_error(schema, &value)
                        .unwrap_or_else(|| "does not fit the schema".to_string()),
                )),
                Err(e) => verdicts.push(CallVerdict::UnusableSchema(e)),
            }
        }
        verdicts
    }
}

/// A validator as Python `jsonschema.validate` builds one. Python takes any string `$id` as a
/// relative URI reference (`"anyOf with refs"` in walle's TestAnyOf); the crate refuses one that
/// is not a valid URI reference. Such a schema, if it passes its meta-schema (as Python's
/// `check_schema` requires), is compiled again without its top-level `$id`,
/// which changes nothing for the `#/...` references inside one document.
fn compile(schema: &Value) -> Result<jsonschema::Validator, String> {
    let build = |schema: &Value| {
        jsonschema::options()
            .should_validate_formats(false)
            .build(schema)
            .map_err(|e| e.to_string())
    };
    build(schema).or_else(|first| match schema {
        Value::Object(map)
            if map.get("$id").is_some_and(Value::is_string)
                && jsonschema::meta::is_valid(schema) =>
        {
            let mut without = map.clone();
            without.remove("$id");
            build(&Value::Object(without)).map_err(|_| first)
        }
        _ => Err(first),
    })
}

/// String arguments parsed as JSON; object arguments as sent.
pub fn parse_arguments(arguments: &Arguments) -> Result<Value, String> {
    match arguments {
        Arguments::Raw(text) => serde_json::from_str(text).map_err(|e| e.to_string()),
        Arguments::Object(value) => Ok(value.clone()),
    }
}

/// K2-Vendor-Verifier's `validate_tool_call(tool_call, tools)` for one call, `tools` as its
/// request declares them (see the module header for its rules).
pub fn k2vv_call_valid(
    schemas: &mut Schemas,
    tools: &[Value],
    name: &str,
    arguments: &Arguments,
) -> bool {
    // `next(t["function"]["parameters"] for t in tools if t["function"]["name"] == tool_name)`
    let mut schema = None;
    for tool in tools {
        let Some(function_name) = tool.pointer("/function/name") else {
            return false; // KeyError
        };
        if function_name.as_str() == Some(name) {
            match tool.pointer("/function/parameters") {
                Some(parameters) => schema = Some(parameters),
                None => return false, // KeyError
            }
            break;
        }
    }
    let Some(schema) = schema.filter(|s| python_truthy(s)) else {
        return false; // "No schema found"
    };
    let Ok(value) = parse_arguments(arguments) else {
        return false;
    };
    schemas.fits(schema, &value).unwrap_or(false)
}

/// The `tools` list K2-Vendor-Verifier's check reads: the request's `tools` parameter, or for
/// tools declared only in the system prompt, those declarations in the parameter's shape (a
/// declaration without `parameters` stays without, so the check fails it as a `KeyError`).
pub fn k2vv_tools<'a>(request: &'a Value, declared: &Declared) -> Cow<'a, [Value]> {
    match declared.place {
        Some(DeclaredIn::SystemPrompt) => Cow::Owned(
            declared
                .tools
                .iter()
                .map(|t| {
                    let mut function = serde_json::Map::new();
                    function.insert("name".into(), Value::String(t.name.clone()));
                    if let Some(p) = &t.parameters {
                        function.insert("parameters".into(), p.clone());
                    }
                    serde_json::json!({"type": "function", "function": function})
                })
                .collect(),
        ),
        _ => Cow::Borrowed(
            request
                .get("tools")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[]),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request() -> Value {
        json!({"tools": [
            {"type": "function", "function": {"name": "empty", "parameters": {}}},
            {"type": "function", "function": {"name": "f", "parameters": {
                "type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}},
        ]})
    }

    #[test]
    fn k2vv_rules() {
        let mut s = Schemas::default();
        let request = request();
        let r = k2vv_tools(&request, &Declared::of(&request));
        let r = &r[..];
        let raw = |t: &str| Arguments::Raw(t.to_string());
        assert!(k2vv_call_valid(&mut s, r, "f", &raw(r#"{"a": 1}"#)));
        assert!(!k2vv_call_valid(&mut s, r, "f", &raw(r#"{"a": "1"}"#)));
        assert!(!k2vv_call_valid(&mut s, r, "f", &raw(r#"{"a": 1"#)));
        assert!(!k2vv_call_valid(&mut s, r, "g", &raw("{}")));
        // An empty schema is falsy in Python: "No schema found".
        assert!(!k2vv_call_valid(&mut s, r, "empty", &raw("{}")));
        assert!(k2vv_call_valid(
            &mut s,
            r,
            "f",
            &Arguments::Object(json!({"a": 2}))
        ));
        // A tool entry without `function` before the match: KeyError.
        let broken = json!([{"type": "function"}, request["tools"][1]]);
        let broken = broken.as_array().unwrap();
        assert!(!k2vv_call_valid(&mut s, broken, "f", &raw(r#"{"a": 1}"#)));
    }

    #[test]
    fn own_verdicts_check_each_property_on_its_own() {
        let mut s = Schemas::default();
        let declared = Declared::of(&request());
        let raw = |t: &str| Arguments::Raw(t.to_string());
        assert_eq!(s.check(&declared, "f", &raw(r#"{"a": 1}"#)), vec![]);
        assert_eq!(s.check(&declared, "empty", &raw(r#"{"x": 1}"#)), vec![]);
        assert_eq!(
            s.check(&declared, "g", &raw("{}")),
            vec![CallVerdict::UndeclaredName]
        );
        let both = s.check(&declared, "g", &raw("{"));
        assert_eq!(both.len(), 2, "{both:?}");
        assert_eq!(both[0], CallVerdict::UndeclaredName);
        assert!(matches!(both[1], CallVerdict::InvalidJson(_)));
        assert!(matches!(
            s.check(&declared, "f", &raw("{")).as_slice(),
            [CallVerdict::InvalidJson(_)]
        ));
        assert!(matches!(
            s.check(&declared, "f", &raw("{}")).as_slice(),
            [CallVerdict::SchemaViolation(_)]
        ));
    }

    /// Tools from the system prompt in the parameter's shape: one without `parameters` fails.
    #[test]
    fn system_prompt_tools_for_k2vv() {
        let system = r#"Functions: {"name": "f", "parameters": {"type": "object", "required": ["a"]}} {"name": "bare"}"#;
        let request = json!({"messages": [{"role": "system", "content": system}]});
        let declared = Declared::of(&request);
        let tools = k2vv_tools(&request, &declared);
        let mut s = Schemas::default();
        let raw = |t: &str| Arguments::Raw(t.to_string());
        assert!(k2vv_call_valid(&mut s, &tools, "f", &raw(r#"{"a": 1}"#)));
        assert!(!k2vv_call_valid(&mut s, &tools, "f", &raw("{}")));
        assert!(!k2vv_call_valid(&mut s, &tools, "bare", &raw("{}")));
    }
}
