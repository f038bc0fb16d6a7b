//! Kimi K2.5's TypeScript-style tool declaration (`tools_ts_str`).
//!
//! Kimi K2.5's tokenizer (`tokenization_kimi.py`) does not show tools to the model as JSON: before
//! the template runs it calls `encode_tools_to_typescript_style(tools)` from the model repo's
//! `tool_declaration_ts.py` and passes the result as `tools_ts_str`; if that raises, it leaves
//! `tools_ts_str` unset and the template falls back to compact JSON. This is a port of that
//! encoder, rule for rule, in the same order (an [`TsError`] here is the Python exception there):
//!
//! - each function becomes `type NAME = (_: {...}) => any;`, preceded by `// ` description lines
//!   (an empty description line stays empty), all inside `namespace functions {…}`;
//! - object fields: required ones first, sorted by name, then optional ones (`name?`), sorted;
//!   joined by `,\n`, indented by two spaces per level; an object without fields is `{}`;
//! - `integer` is written `number`; `type: [..]` unions map through a fixed table;
//! - `enum` values are `"a" | "b"` (non-strings as Python `str()`), checked against `type`;
//! - `anyOf` is `A | B`; arrays are `Array<T>`, or multi-line when the item has a docstring;
//! - field docstrings: the description as `// ` lines, then constraints (`maxLength`,
//!   `minLength`, `pattern` on strings; `maximum`, `minimum` on numbers; `minItems`, `maxItems`
//!   on arrays) as one `// k: v, k: v` line sorted by key, then `// Default: …` (Python `repr`
//!   for numbers and booleans, `json.dumps` otherwise);
//! - `additionalProperties` adds `[k: string]: T` (`true` → `any`, `false` → `never`);
//! - `$defs` become `interface NAME {…}` blocks before the type, `$ref: "#/$defs/NAME"` is
//!   `NAME`, and `$ref: "#"` makes the parameters an `interface parameters` (fields in schema order).

use indexmap::IndexMap;
use serde_json::Value;

use crate::json::python_truthy;
use crate::pyjson::{self, DumpOptions};

const INDENT: &str = "  ";
const FIELD_DELIMITER: &str = ",\n";

/// Why the encoder gave up (the Kimi tokenizer then falls back to JSON tools).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("TypeScript tool declaration: {0}")]
pub struct TsError(pub String);

fn err<T>(message: impl Into<String>) -> Result<T, TsError> {
    Err(TsError(message.into()))
}

/// `encode_tools_to_typescript_style(tools)`: `""` when no tool is a function.
pub fn encode_tools(tools: &[Value]) -> Result<String, TsError> {
    if tools.is_empty() {
        return Ok(String::new());
    }
    let mut functions = Vec::new();
    for tool in tools {
        let Some(tool) = tool.as_object() else {
            return err("a tool is not an object");
        };
        // Other tool types (such as `_plugin`) are skipped, as upstream does.
        if tool.get("type").and_then(Value::as_str) != Some("function") {
            continue;
        }
        match tool.get("function") {
            Some(function) if python_truthy(function) => functions.push(function_to_ts(function)?),
            _ => {}
        }
    }
    if functions.is_empty() {
        return Ok(String::new());
    }
    let functions = functions.join("\n");
    let mut out = String::from("# Tools\n\n");
    if !functions.is_empty() {
        out.push_str("## functions\nnamespace functions {\n");
        out.push_str(&functions);
        out.push_str("\n}\n");
    }
    Ok(out)
}

/// One function: its `$defs` interfaces, description and `type NAME = (_: …) => any;`.
fn function_to_ts(function: &Value) -> Result<String, TsError> {
    let Some(function) = function.as_object() else {
        return err("a tool's function is not an object");
    };
    let mut registry = Registry::default();
    let empty = Value::Object(Default::default());
    let parameters = match function.get("parameters") {
        Some(p) if python_truthy(p) => p,
        _ => &empty,
    };
    let parsed = Object::parse(parameters, &mut registry)?;

    let mut interfaces = Vec::new();
    let mut root_interface = None;
    if registry.has_self_ref {
        root_interface = Some("parameters");
        // Upstream writes the self-referencing root's fields in schema order, unsorted.
        let fields = parsed
            .properties
            .iter()
            .map(|p| p.to_ts(INDENT))
            .collect::<Result<Vec<_>, _>>()?
            .join(FIELD_DELIMITER);
        let fields = if fields.is_empty() {
            fields
        } else {
            format!("\n{fields}\n")
        };
        interfaces.push(format!("interface parameters {{{fields}}}"));
    }
    let definitions = registry.definitions.clone();
    for (name, schema) in &definitions {
        let body = parse_type(schema, &mut registry)?.to_ts("")?;
        let description = match schema.get("description") {
            Some(d) if python_truthy(d) => format!("{}\n", format_description(as_text(d)?, "")),
            _ => String::new(),
        };
        interfaces.push(format!("{description}interface {name} {body}"));
    }

    let name = match function.get("name") {
        Some(name) => py_str(name),
        None => "function".to_string(),
    };
    let type_def = match root_interface {
        Some(root) => format!("type {name} = (_: {root}) => any;"),
        None => format!("type {name} = (_: {}) => any;", parsed.to_ts("")?),
    };
    let description = match function.get("description") {
        Some(d) if python_truthy(d) => format_description(as_text(d)?, ""),
        _ => String::new(),
    };
    let parts = [interfaces.join("\n"), description, type_def];
    Ok(parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("\n"))
}

/// `$defs` seen so far and whether `$ref: "#"` occurred.
#[derive(Default)]
struct Registry {
    definitions: IndexMap<String, Value>,
    has_self_ref: bool,
}

impl Registry {
    fn register(&mut self, defs: &Value) -> Result<(), TsError> {
        if !python_truthy(defs) {
            return Ok(());
        }
        let Some(defs) = defs.as_object() else {
            return err("$defs is not an object");
        };
        for (name, schema) in defs {
            self.definitions.insert(name.clone(), schema.clone());
        }
        Ok(())
    }

    /// The referenced name, after checking the reference resolves.
    fn resolve(&mut self, reference: &str) -> Result<String, TsError> {
        if reference == "#" {
            self.has_self_ref = true;
            return Ok("parameters".to_string());
        }
        if let Some(rest) = reference.strip_prefix("#/$defs/") {
            let name = rest.rsplit('/').next().unwrap_or(rest);
            return match self.definitions.get(name) {
                Some(schema) if schema.is_object() => Ok(name.to_string()),
                Some(_) => err(format!("definition {name} is not an object")),
                None => err(format!("Reference not found: {reference}")),
            };
        }
        err(format!("Unsupported reference format: {reference}"))
    }
}

/// What every type carries: its description and the constraints its kind allows.
#[derive(Debug, Default)]
struct Doc {
    description: Option<Value>,
    constraints: Vec<(String, Value)>,
}

impl Doc {
    fn new(schema: &Value, allowed: &[&str]) -> Self {
        let description = schema
            .get("description")
            .filter(|d| python_truthy(d))
            .cloned();
        let mut constraints: Vec<(String, Value)> = schema
            .as_object()
            .map(|o| {
                o.iter()
                    .filter(|(k, _)| allowed.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default();
        constraints.sort_by(|a, b| a.0.cmp(&b.0));
        Self {
            description,
            constraints,
        }
    }

    /// `format_docstring`: description lines, then one constraints line, each ending in `\n`.
    fn docstring(&self, indent: &str) -> Result<String, TsError> {
        let mut out = String::new();
        if let Some(description) = &self.description {
            out.push_str(&format_description(as_text(description)?, indent));
            out.push('\n');
        }
        if !self.constraints.is_empty() {
            let constraints = self
                .constraints
                .iter()
                .map(|(k, v)| format!("{k}: {}", py_str(v)))
                .collect::<Vec<_>>()
                .join(", ");
            out.push_str(&format!("{indent}// {constraints}\n"));
        }
        Ok(out)
    }
}

#[derive(Debug)]
enum Type {
    Scalar(String, Doc),
    Object(Object),
    Array(Box<Type>, Doc),
    Enum(Vec<Value>, Doc),
    AnyOf(Vec<Type>, Doc),
    Union(Vec<&'static str>, Doc),
    Ref(String, Doc),
}

impl Type {
    fn any() -> Self {
        Type::Scalar("any".into(), Doc::default())
    }

    fn doc(&self) -> &Doc {
        match self {
            Type::Scalar(_, doc)
            | Type::Array(_, doc)
            | Type::Enum(_, doc)
            | Type::AnyOf(_, doc)
            | Type::Union(_, doc)
            | Type::Ref(_, doc) => doc,
            Type::Object(object) => &object.doc,
        }
    }

    fn to_ts(&self, indent: &str) -> Result<String, TsError> {
        Ok(match self {
            Type::Scalar(ty, _) if ty == "integer" => "number".to_string(),
            Type::Scalar(ty, _) => ty.clone(),
            Type::Object(object) => object.to_ts(indent)?,
            Type::Array(item, _) => {
                let inner = format!("{indent}{INDENT}");
                let docstring = item.doc().docstring(&inner)?;
                if docstring.is_empty() {
                    format!("Array<{}>", item.to_ts(indent)?)
                } else {
                    format!(
                        "Array<\n{docstring}{inner}{}\n{indent}>",
                        item.to_ts(&inner)?
                    )
                }
            }
            Type::Enum(values, _) => values
                .iter()
                .map(|v| match v {
                    Value::String(s) => format!("\"{s}\""),
                    other => py_str(other),
                })
                .collect::<Vec<_>>()
                .join(" | "),
            Type::AnyOf(types, _) => types
                .iter()
                .map(|t| t.to_ts(indent))
                .collect::<Result<Vec<_>, _>>()?
                .join(" | "),
            Type::Union(types, _) => types.join(" | "),
            Type::Ref(name, _) => name.clone(),
        })
    }
}

/// `_parse_parameter_type`.
fn parse_type(schema: &Value, registry: &mut Registry) -> Result<Type, TsError> {
    let object = match schema {
        // `true` accepts anything; `false` is written `null` (upstream logs a warning).
        Value::Bool(true) => return Ok(Type::any()),
        Value::Bool(false) => return Ok(Type::Scalar("null".into(), Doc::default())),
        Value::Object(object) => object,
        other => return err(format!("Invalid JSON Schema object: {other}")),
    };
    if let Some(reference) = object.get("$ref") {
        let Some(reference) = reference.as_str() else {
            return err("$ref is not a string");
        };
        let name = registry.resolve(reference)?;
        return Ok(Type::Ref(name, Doc::new(schema, &[])));
    }
    if let Some(any_of) = object.get("anyOf") {
        let Some(any_of) = any_of.as_array() else {
            return err("anyOf is not a list");
        };
        let types = any_of
            .iter()
            .map(|t| parse_type(t, registry))
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(Type::AnyOf(types, Doc::new(schema, &[])));
    }
    if object.contains_key("enum") {
        return parse_enum(schema);
    }
    if let Some(ty) = object.get("type") {
        return match ty {
            Value::Array(types) => {
                let mapped = types
                    .iter()
                    .map(|t| match t.as_str() {
                        Some("string") => Ok("string"),
                        Some("number") | Some("integer") => Ok("number"),
                        Some("boolean") => Ok("boolean"),
                        Some("null") => Ok("null"),
                        Some("object") => Ok("{}"),
                        Some("array") => Ok("Array<any>"),
                        _ => err(format!("unsupported type in union: {t}")),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Type::Union(mapped, Doc::new(schema, &[])))
            }
            Value::String(ty) if ty == "object" => {
                Ok(Type::Object(Object::parse(schema, registry)?))
            }
            Value::String(ty) if ty == "array" => {
                let item = match object.get("items") {
                    Some(items) if python_truthy(items) => parse_type(items, registry)?,
                    _ => Type::any(),
                };
                Ok(Type::Array(
                    Box::new(item),
                    Doc::new(schema, &["minItems", "maxItems"]),
                ))
            }
            Value::String(ty) => {
                let allowed: &[&str] = match ty.as_str() {
                    "string" => &["maxLength", "minLength", "pattern"],
                    "number" | "integer" => &["maximum", "minimum"],
                    _ => &[],
                };
                Ok(Type::Scalar(ty.clone(), Doc::new(schema, allowed)))
            }
            other => err(format!("unsupported type: {other}")),
        };
    }
    if object.is_empty() {
        return Ok(Type::any());
    }
    err(format!("Invalid JSON Schema object: {schema}"))
}

/// `_ParameterTypeEnum`, with its check of the values against a declared `type`.
fn parse_enum(schema: &Value) -> Result<Type, TsError> {
    let Some(values) = schema.get("enum").and_then(Value::as_array) else {
        return err("enum is not a list");
    };
    if let Some(ty) = schema.get("type") {
        let ty = match ty {
            Value::Array(types) if types.len() == 1 => &types[0],
            Value::Array(types) if types.len() == 2 => {
                if !types.iter().any(|t| t == "null") {
                    return err(format!("Enum type {ty} is not supported"));
                }
                if types[0] != "null" {
                    &types[0]
                } else {
                    &types[1]
                }
            }
            Value::Array(_) => return err(format!("Enum type {ty} is not supported")),
            other => other,
        };
        for value in values {
            // Python's bool is an int, so booleans pass the number checks.
            let ok = match ty.as_str() {
                _ if value.is_null() => true,
                Some("string") => value.is_string(),
                Some("number") => value.is_number() || value.is_boolean(),
                Some("integer") => value.is_i64() || value.is_u64() || value.is_boolean(),
                Some("boolean") => value.is_boolean(),
                _ => true,
            };
            if !ok {
                return err(format!(
                    "Enum value {} does not match type {ty}",
                    py_str(value)
                ));
            }
        }
    }
    Ok(Type::Enum(values.clone(), Doc::new(schema, &[])))
}

/// `_ParameterTypeObject`.
#[derive(Debug)]
struct Object {
    doc: Doc,
    properties: Vec<Field>,
    /// `None`: not written; `Some(None)`: `true`; otherwise the declared type.
    additional: Option<Additional>,
}

#[derive(Debug)]
enum Additional {
    Any,
    Never,
    Type(Box<Type>),
}

impl Object {
    fn parse(schema: &Value, registry: &mut Registry) -> Result<Self, TsError> {
        let mut object = Object {
            doc: Doc::new(schema, &[]),
            properties: Vec::new(),
            additional: None,
        };
        let map = match schema {
            Value::Object(map) => map,
            other if !python_truthy(other) => return Ok(object),
            other => return err(format!("parameters is not an object: {other}")),
        };
        if map.is_empty() {
            return Ok(object);
        }
        if let Some(defs) = map.get("$defs") {
            registry.register(defs)?;
        }
        object.additional = match map.get("additionalProperties") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(true)) => Some(Additional::Any),
            Some(Value::Bool(false)) => Some(Additional::Never),
            Some(schema @ Value::Object(_)) => {
                Some(Additional::Type(Box::new(parse_type(schema, registry)?)))
            }
            Some(other) => return err(format!("Unknown additionalProperties: {other}")),
        };
        let Some(properties) = map.get("properties") else {
            return Ok(object);
        };
        let Some(properties) = properties.as_object() else {
            return err("properties is not an object");
        };
        let required: Vec<&Value> = match map.get("required") {
            None => Vec::new(),
            Some(Value::Array(required)) => required.iter().collect(),
            Some(other) => return err(format!("required is not a list: {other}")),
        };
        for (name, property) in properties {
            object.properties.push(Field {
                name: name.clone(),
                ty: parse_type(property, registry)?,
                optional: !required.iter().any(|r| r.as_str() == Some(name)),
                default: property.get("default").filter(|d| !d.is_null()).cloned(),
            });
        }
        Ok(object)
    }

    fn to_ts(&self, indent: &str) -> Result<String, TsError> {
        let inner = format!("{indent}{INDENT}");
        let mut ordered: Vec<&Field> = self.properties.iter().filter(|p| !p.optional).collect();
        ordered.sort_by(|a, b| a.name.cmp(&b.name));
        let mut optional: Vec<&Field> = self.properties.iter().filter(|p| p.optional).collect();
        optional.sort_by(|a, b| a.name.cmp(&b.name));
        ordered.extend(optional);
        let mut fields = ordered
            .iter()
            .map(|p| p.to_ts(&inner))
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(additional) = &self.additional {
            let ty = match additional {
                Additional::Any => "any".to_string(),
                Additional::Never => "never".to_string(),
                Additional::Type(ty) => ty.to_ts(&inner)?,
            };
            fields.push(format!("{inner}[k: string]: {ty}"));
        }
        if fields.is_empty() {
            return Ok("{}".to_string());
        }
        Ok(format!("{{\n{}\n{indent}}}", fields.join(FIELD_DELIMITER)))
    }
}

/// `_Parameter`: one field of an object.
#[derive(Debug)]
struct Field {
    name: String,
    ty: Type,
    optional: bool,
    default: Option<Value>,
}

impl Field {
    fn to_ts(&self, indent: &str) -> Result<String, TsError> {
        let mut out = self.ty.doc().docstring(indent)?;
        if let Some(default) = &self.default {
            let shown = match default {
                // `repr()` for int/float/bool, `json.dumps(…, ensure_ascii=False)` otherwise.
                Value::Number(_) | Value::Bool(_) => py_str(default),
                other => pyjson::dumps_json(other, &DumpOptions::default()),
            };
            out.push_str(&format!("{indent}// Default: {shown}\n"));
        }
        let mark = if self.optional { "?" } else { "" };
        out.push_str(&format!(
            "{indent}{}{mark}: {}",
            self.name,
            self.ty.to_ts(indent)?
        ));
        Ok(out)
    }
}

/// `_format_description`: every line as `INDENT// line`, empty lines kept empty.
fn format_description(description: &str, indent: &str) -> String {
    description
        .split('\n')
        .map(|line| {
            if line.is_empty() {
                String::new()
            } else {
                format!("{indent}// {line}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn as_text(value: &Value) -> Result<&str, TsError> {
    value
        .as_str()
        .ok_or_else(|| TsError(format!("description is not a string: {value}")))
}

/// Python `str()` of a JSON value.
fn py_str(value: &Value) -> String {
    pyjson::py_str(&minijinja::Value::from(minijinja::value::Serde(value)))
}

// The registry loads `kimi.rs` by its path, so its submodules (and theirs) are named by path.
#[cfg(test)]
#[path = "tools_ts/tests.rs"]
mod tests;
