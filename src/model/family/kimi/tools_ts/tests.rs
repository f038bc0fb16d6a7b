//! Each rule of the TypeScript tool declaration, checked against the reference encoder.
//!
//! Expected strings were produced by the upstream Python `encode_tools_to_typescript_style`
//! (Kimi K2.5's `tool_declaration_ts.py`, copy in MoonshotAI/Kimi-Vendor-Verifier) and pasted
//! here; they are not computed by our code.

use super::*;
use serde_json::json;

/// the golden K2.5 declaration
#[test]
fn golden_get_weather() {
    let tools = json!([{"type": "function", "function": {"name": "get_weather", "description": "Return the weather for a city.", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]);
    assert_eq!(
        encode_tools(tools.as_array().unwrap()).unwrap(),
        "# Tools\n\n## functions\nnamespace functions {\n// Return the weather for a city.\ntype get_weather = (_: {\n  city: string\n}) => any;\n}\n"
    );
}

/// required fields first, sorted; then optional with ?, sorted
#[test]
fn required_first_then_optional_each_sorted() {
    let tools = json!([{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"zeta": {"type": "string"}, "alpha": {"type": "string"}, "mid": {"type": "boolean"}, "beta": {"type": "number"}}, "required": ["zeta", "mid"]}}}]);
    assert_eq!(
        encode_tools(tools.as_array().unwrap()).unwrap(),
        "# Tools\n\n## functions\nnamespace functions {\ntype f = (_: {\n  mid: boolean,\n  zeta: string,\n  alpha?: string,\n  beta?: number\n}) => any;\n}\n"
    );
}

/// integer becomes number
#[test]
fn integer_is_number() {
    let tools = json!([{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}}]);
    assert_eq!(
        encode_tools(tools.as_array().unwrap()).unwrap(),
        "# Tools\n\n## functions\nnamespace functions {\ntype f = (_: {\n  n: number\n}) => any;\n}\n"
    );
}

/// enums as a | union, non-strings via str()
#[test]
fn enum_values() {
    let tools = json!([{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}, "level": {"enum": [1, 2.5, true, null]}}, "required": ["unit"]}}}]);
    assert_eq!(
        encode_tools(tools.as_array().unwrap()).unwrap(),
        "# Tools\n\n## functions\nnamespace functions {\ntype f = (_: {\n  unit: \"celsius\" | \"fahrenheit\",\n  level?: 1 | 2.5 | True | None\n}) => any;\n}\n"
    );
}

/// descriptions become // lines; blank lines stay blank
#[test]
fn descriptions_as_comment_lines() {
    let tools = json!([{"type": "function", "function": {"name": "search", "description": "Search things.\nTwice.", "parameters": {"type": "object", "properties": {"q": {"type": "string", "description": "First line.\n\nThird line."}}}}}]);
    assert_eq!(
        encode_tools(tools.as_array().unwrap()).unwrap(),
        "# Tools\n\n## functions\nnamespace functions {\n// Search things.\n// Twice.\ntype search = (_: {\n  // First line.\n\n  // Third line.\n  q?: string\n}) => any;\n}\n"
    );
}

/// constraint comments sorted by key; only the allowed keys per type
#[test]
fn constraints_comment_sorted() {
    let tools = json!([{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"s": {"type": "string", "maxLength": 10, "minLength": 1, "pattern": "^[a-z]+$", "format": "email"}, "n": {"type": "number", "minimum": 0, "maximum": 1.5, "multipleOf": 0.5}, "a": {"type": "array", "items": {"type": "string"}, "maxItems": 3, "minItems": 1}}, "required": ["s", "n", "a"]}}}]);
    assert_eq!(
        encode_tools(tools.as_array().unwrap()).unwrap(),
        "# Tools\n\n## functions\nnamespace functions {\ntype f = (_: {\n  // maxItems: 3, minItems: 1\n  a: Array<string>,\n  // maximum: 1.5, minimum: 0\n  n: number,\n  // maxLength: 10, minLength: 1, pattern: ^[a-z]+$\n  s: string\n}) => any;\n}\n"
    );
}

/// Default: repr for numbers and booleans, json.dumps otherwise
#[test]
fn defaults() {
    let tools = json!([{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"i": {"type": "integer", "default": 3}, "f": {"type": "number", "default": 0.5}, "b": {"type": "boolean", "default": false}, "s": {"type": "string", "default": "é \"x\""}, "l": {"type": "array", "default": ["a", 1]}, "o": {"type": "object", "default": {"k": null}}}}}}]);
    assert_eq!(
        encode_tools(tools.as_array().unwrap()).unwrap(),
        "# Tools\n\n## functions\nnamespace functions {\ntype f = (_: {\n  // Default: False\n  b?: boolean,\n  // Default: 0.5\n  f?: number,\n  // Default: 3\n  i?: number,\n  // Default: [\"a\", 1]\n  l?: Array<any>,\n  // Default: {\"k\": null}\n  o?: {},\n  // Default: \"é \\\"x\\\"\"\n  s?: string\n}) => any;\n}\n"
    );
}

/// additionalProperties: true → any, false → never, schema → its type
#[test]
fn additional_properties() {
    let tools = json!([{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {"type": "integer"}}, "t": {"type": "object", "additionalProperties": true}, "x": {"type": "object", "properties": {"k": {"type": "string"}}, "additionalProperties": false}}, "required": ["m"]}}}]);
    assert_eq!(
        encode_tools(tools.as_array().unwrap()).unwrap(),
        "# Tools\n\n## functions\nnamespace functions {\ntype f = (_: {\n  m: {\n    [k: string]: number\n  },\n  t?: {\n    [k: string]: any\n  },\n  x?: {\n    k?: string,\n    [k: string]: never\n  }\n}) => any;\n}\n"
    );
}

/// nested objects indent two spaces per level
#[test]
fn nested_objects_indent() {
    let tools = json!([{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"outer": {"type": "object", "description": "The outer.", "properties": {"inner": {"type": "object", "properties": {"leaf": {"type": "string"}}, "required": ["leaf"]}}, "required": ["inner"]}}, "required": ["outer"]}}}]);
    assert_eq!(
        encode_tools(tools.as_array().unwrap()).unwrap(),
        "# Tools\n\n## functions\nnamespace functions {\ntype f = (_: {\n  // The outer.\n  outer: {\n    inner: {\n      leaf: string\n    }\n  }\n}) => any;\n}\n"
    );
}

/// Array<T>, multi-line when the item has a docstring
#[test]
fn arrays_plain_and_documented_items() {
    let tools = json!([{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}, "pts": {"type": "array", "items": {"type": "object", "description": "A point.", "properties": {"x": {"type": "number"}}, "required": ["x"]}}, "any": {"type": "array"}}, "required": ["tags"]}}}]);
    assert_eq!(
        encode_tools(tools.as_array().unwrap()).unwrap(),
        "# Tools\n\n## functions\nnamespace functions {\ntype f = (_: {\n  tags: Array<string>,\n  any?: Array<any>,\n  pts?: Array<\n    // A point.\n    {\n      x: number\n    }\n  >\n}) => any;\n}\n"
    );
}

/// anyOf as A | B; type lists through the fixed table
#[test]
fn any_of_and_type_unions() {
    let tools = json!([{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"v": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]}, "u": {"type": ["string", "integer", "null", "object", "array", "boolean"]}}, "required": ["v", "u"]}}}]);
    assert_eq!(
        encode_tools(tools.as_array().unwrap()).unwrap(),
        "# Tools\n\n## functions\nnamespace functions {\ntype f = (_: {\n  u: string | number | null | {} | Array<any> | boolean,\n  v: string | number | null\n}) => any;\n}\n"
    );
}

/// $defs become interfaces, $ref names them
#[test]
fn defs_and_refs() {
    let tools = json!([{"type": "function", "function": {"name": "draw", "description": "Draw.", "parameters": {"type": "object", "$defs": {"Point": {"type": "object", "description": "A 2D point.", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"]}, "Color": {"type": "string", "enum": ["red", "green"]}}, "properties": {"p": {"$ref": "#/$defs/Point"}, "c": {"$ref": "#/$defs/Color"}}, "required": ["p"]}}}]);
    assert_eq!(
        encode_tools(tools.as_array().unwrap()).unwrap(),
        "# Tools\n\n## functions\nnamespace functions {\n// A 2D point.\ninterface Point {\n  x: number,\n  y: number\n}\ninterface Color \"red\" | \"green\"\n// Draw.\ntype draw = (_: {\n  p: Point,\n  c?: Color\n}) => any;\n}\n"
    );
}

/// $ref '#' makes the root an interface named parameters (fields unsorted)
#[test]
fn self_reference() {
    let tools = json!([{"type": "function", "function": {"name": "tree", "parameters": {"type": "object", "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#"}}}, "required": ["name"]}}}]);
    assert_eq!(
        encode_tools(tools.as_array().unwrap()).unwrap(),
        "# Tools\n\n## functions\nnamespace functions {\ninterface parameters {\n  name: string,\n  children?: Array<parameters>\n}\ntype tree = (_: parameters) => any;\n}\n"
    );
}

/// no parameters → {}
#[test]
fn empty_and_missing_parameters() {
    let tools = json!([{"type": "function", "function": {"name": "ping"}}, {"type": "function", "function": {"name": "pong", "parameters": {"type": "object", "properties": {}}}}]);
    assert_eq!(
        encode_tools(tools.as_array().unwrap()).unwrap(),
        "# Tools\n\n## functions\nnamespace functions {\ntype ping = (_: {}) => any;\ntype pong = (_: {}) => any;\n}\n"
    );
}

/// tools that are not functions are skipped
#[test]
fn non_function_tools_skipped() {
    let tools = json!([{"type": "_plugin", "_plugin": {"name": "x"}}, {"type": "function", "function": {"name": "g", "parameters": {"type": "object", "properties": {"a": {"type": "boolean"}}}}}]);
    assert_eq!(
        encode_tools(tools.as_array().unwrap()).unwrap(),
        "# Tools\n\n## functions\nnamespace functions {\ntype g = (_: {\n  a?: boolean\n}) => any;\n}\n"
    );
}

/// true/{} → any, false → null
#[test]
fn boolean_and_empty_schemas() {
    let tools = json!([{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"t": true, "f": false, "e": {}}, "required": ["t", "f", "e"]}}}]);
    assert_eq!(
        encode_tools(tools.as_array().unwrap()).unwrap(),
        "# Tools\n\n## functions\nnamespace functions {\ntype f = (_: {\n  e: any,\n  f: null,\n  t: any\n}) => any;\n}\n"
    );
}

/// The reference raises here, so the tokenizer falls back to JSON tools.
#[test]
fn enum_type_mismatch_is_an_error() {
    let tools = json!([{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"e": {"type": "string", "enum": ["a", 1]}}}}}]);
    assert!(encode_tools(tools.as_array().unwrap()).is_err());
}

/// The reference raises here, so the tokenizer falls back to JSON tools.
#[test]
fn unknown_ref_is_an_error() {
    let tools = json!([{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"e": {"$ref": "#/$defs/Nope"}}}}}]);
    assert!(encode_tools(tools.as_array().unwrap()).is_err());
}

/// The reference raises here, so the tokenizer falls back to JSON tools.
#[test]
fn unknown_union_type_is_an_error() {
    let tools = json!([{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"e": {"type": ["string", "date"]}}}}}]);
    assert!(encode_tools(tools.as_array().unwrap()).is_err());
}

#[test]
fn no_function_tools_is_empty() {
    assert_eq!(encode_tools(&[]).unwrap(), "");
    let tools = json!([{"type": "_plugin"}]);
    assert_eq!(encode_tools(tools.as_array().unwrap()).unwrap(), "");
}
