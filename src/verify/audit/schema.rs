//! Arguments against the declared JSON schema, two ways:
//!
//! - [`Schemas::check`]: draftgen's own verdict for one call (name declared, arguments JSON, fit
//!   the schema), with a reason a user can read.
//! - [`k2vv_call_valid`]: K2-Vendor-Verifier's `validate_tool_call` (`tool_calls_eval.py` at
//!   `0bc5061`), quirks included, for its schema accuracy: the tools looked up are the request's
//!   `tools` parameter only; the first tool whose `function.name` matches wins and a tool entry
//!   without `function.name` before it fails the call (Python `KeyError`); a schema that is
//!   missing or empty (`{}`, falsy in Python) fails; string arguments go through `json.loads`;
//!   `jsonschema.validate` checks the schema against its meta-schema first (an invalid schema
//!   fails) and asserts no `format`.
//!
//! Validation is the `jsonschema` crate, set up as Python `jsonschema.validate` behaves: the draft
//! from `$schema` (2020-12 when absent) and `format` as an annotation only. Both checks are held to
//! Python `jsonschema`'s verdicts on Kimi-Vendor-Verifier's schemas in `tests/audit.rs`.
//! Compiled validators are cached by schema text: a run repeats the same few tools.

use std::collections::HashMap;

use serde_json::Value;

use super::declared::Declared;
use crate::completion::Arguments;
use crate::json::python_truthy;

/// Why a call's arguments do not fit.
#[derive(Debug, Clone, PartialEq)]
pub enum CallVerdict {
    Valid,
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

    /// draftgen's verdict on one call. A declaration without `parameters` accepts any arguments.
    pub fn check(&mut self, declared: &Declared, name: &str, arguments: &Arguments) -> CallVerdict {
        let Some(tool) = declared.get(name) else {
            return CallVerdict::UndeclaredName;
        };
        let value = match parse_arguments(arguments) {
            Ok(value) => value,
            Err(e) => return CallVerdict::InvalidJson(e),
        };
        let Some(schema) = &tool.parameters else {
            return CallVerdict::Valid;
        };
        match self.fits(schema, &value) {
            Ok(true) => CallVerdict::Valid,
            Ok(false) => CallVerdict::SchemaViolation(
                self.first_error(schema, &value)
                    .unwrap_or_else(|| "does not fit the schema".to_string()),
            ),
            Err(e) => CallVerdict::UnusableSchema(e),
        }
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

/// K2-Vendor-Verifier's `validate_tool_call(tool_call, tools)` for one call of an answer to
/// `request` (see the module header for its rules).
pub fn k2vv_call_valid(
    schemas: &mut Schemas,
    request: &Value,
    name: &str,
    arguments: &Arguments,
) -> bool {
    let tools = request
        .get("tools")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
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
        let r = request();
        let raw = |t: &str| Arguments::Raw(t.to_string());
        assert!(k2vv_call_valid(&mut s, &r, "f", &raw(r#"{"a": 1}"#)));
        assert!(!k2vv_call_valid(&mut s, &r, "f", &raw(r#"{"a": "1"}"#)));
        assert!(!k2vv_call_valid(&mut s, &r, "f", &raw(r#"{"a": 1"#)));
        assert!(!k2vv_call_valid(&mut s, &r, "g", &raw("{}")));
        // An empty schema is falsy in Python: "No schema found".
        assert!(!k2vv_call_valid(&mut s, &r, "empty", &raw("{}")));
        assert!(k2vv_call_valid(
            &mut s,
            &r,
            "f",
            &Arguments::Object(json!({"a": 2}))
        ));
        // A tool entry without `function` before the match: KeyError.
        let broken = json!({"tools": [{"type": "function"}, request()["tools"][1]]});
        assert!(!k2vv_call_valid(&mut s, &broken, "f", &raw(r#"{"a": 1}"#)));
    }

    #[test]
    fn own_verdicts() {
        let mut s = Schemas::default();
        let declared = Declared::of(&request());
        let raw = |t: &str| Arguments::Raw(t.to_string());
        assert_eq!(
            s.check(&declared, "f", &raw(r#"{"a": 1}"#)),
            CallVerdict::Valid
        );
        assert_eq!(
            s.check(&declared, "empty", &raw(r#"{"x": 1}"#)),
            CallVerdict::Valid
        );
        assert_eq!(
            s.check(&declared, "g", &raw("{}")),
            CallVerdict::UndeclaredName
        );
        assert!(matches!(
            s.check(&declared, "f", &raw("{")),
            CallVerdict::InvalidJson(_)
        ));
        assert!(matches!(
            s.check(&declared, "f", &raw("{}")),
            CallVerdict::SchemaViolation(_)
        ));
    }
}
