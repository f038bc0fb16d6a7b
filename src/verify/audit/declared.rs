//! Which tools a request declared, and where: as the `tools` parameter, or only as function
//! JSON written into the system prompt (glaive style: `SYSTEM: You are ... -\n{"name": ...}`).
//!
//! The system-prompt reading is deliberately simple: every `{` of a system message starts an
//! attempt to read one JSON value there; objects with a string `name` (plain, or OpenAI-shaped
//! `{"type": "function", "function": {...}}`) are functions. No crate reads "JSON objects
//! embedded in prose", and a hand-written scan over serde_json's own parser is a few lines.

use serde_json::Value;

/// Where a request's tools were declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeclaredIn {
    /// The `tools` request parameter.
    Parameter,
    /// Only in the system prompt, as function JSON (glaive style).
    SystemPrompt,
}

/// One declared function.
#[derive(Debug, Clone, PartialEq)]
pub struct DeclaredTool {
    pub name: String,
    /// The JSON schema of the arguments (`parameters`), if the declaration has one.
    pub parameters: Option<Value>,
}

/// The tools of one request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Declared {
    pub place: Option<DeclaredIn>,
    pub tools: Vec<DeclaredTool>,
}

impl Declared {
    /// The tools `request` (a chat-completions body) declares: its `tools` parameter when that
    /// is a non-empty array, else the function JSON in its system messages.
    pub fn of(request: &Value) -> Declared {
        if let Some(tools) = request
            .get("tools")
            .and_then(Value::as_array)
            .filter(|t| !t.is_empty())
        {
            return Declared {
                place: Some(DeclaredIn::Parameter),
                tools: tools.iter().filter_map(tool).collect(),
            };
        }
        let tools: Vec<DeclaredTool> = request
            .get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("system"))
            .filter_map(|m| text_of(m.get("content")))
            .flat_map(|text| functions_in_text(&text))
            .collect();
        Declared {
            place: (!tools.is_empty()).then_some(DeclaredIn::SystemPrompt),
            tools,
        }
    }

    pub fn get(&self, name: &str) -> Option<&DeclaredTool> {
        self.tools.iter().find(|t| t.name == name)
    }
}

/// A declaration in either shape: `{"type": "function", "function": {"name", "parameters"}}` or
/// a bare `{"name", "parameters"}`.
fn tool(value: &Value) -> Option<DeclaredTool> {
    let function = value.get("function").unwrap_or(value);
    let name = function.get("name").and_then(Value::as_str)?;
    Some(DeclaredTool {
        name: name.to_string(),
        parameters: function.get("parameters").cloned(),
    })
}

fn text_of(content: Option<&Value>) -> Option<String> {
    match content? {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(""),
        ),
        _ => None,
    }
}

/// Function declarations written as JSON objects inside prose.
pub fn functions_in_text(text: &str) -> Vec<DeclaredTool> {
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(offset) = text[at..].find('{') {
        let start = at + offset;
        let mut values = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        match values.next() {
            Some(Ok(value)) => {
                if let Some(t) = tool(&value).filter(|_| value.is_object()) {
                    if !found.iter().any(|f: &DeclaredTool| f.name == t.name) {
                        found.push(t);
                    }
                }
                at = start + values.byte_offset().max(1);
            }
            _ => at = start + 1,
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_parameter_wins_over_the_system_prompt() {
        let request = json!({
            "messages": [{"role": "system", "content": "{\"name\": \"g\"}"}, {"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
        });
        let declared = Declared::of(&request);
        assert_eq!(declared.place, Some(DeclaredIn::Parameter));
        assert_eq!(declared.tools.len(), 1);
        assert_eq!(declared.tools[0].name, "f");
        assert_eq!(
            declared.tools[0].parameters,
            Some(json!({"type": "object"}))
        );
    }

    /// The system text of a real glaive-function-calling-v2 row (shortened).
    #[test]
    fn glaive_functions_in_the_system_prompt() {
        let system = "SYSTEM: You are a helpful assistant with access to the following functions. Use them if required -\n{\n    \"name\": \"get_exchange_rate\",\n    \"description\": \"Get the exchange rate\",\n    \"parameters\": {\n        \"type\": \"object\",\n        \"properties\": {\"base_currency\": {\"type\": \"string\"}},\n        \"required\": [\"base_currency\"]\n    }\n}\n\n{\"name\": \"calculate_tip\", \"parameters\": {}}";
        let request = json!({"messages": [{"role": "system", "content": system}, {"role": "user", "content": "hi"}]});
        let declared = Declared::of(&request);
        assert_eq!(declared.place, Some(DeclaredIn::SystemPrompt));
        let names: Vec<_> = declared.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["get_exchange_rate", "calculate_tip"]);
        assert!(declared.tools[0].parameters.is_some());
    }

    #[test]
    fn prose_with_braces_declares_nothing() {
        let request =
            json!({"messages": [{"role": "system", "content": "Use {braces} and {\"a\": 1}."}]});
        assert_eq!(Declared::of(&request), Declared::default());
    }
}
