//! The fixed scenarios `probe` sends to every target: each one asks the server a question whose
//! answer shows one part of its shape (where the reasoning goes, how tool calls come back, what
//! `usage.prompt_tokens` counts). Fixed so that two probes, of two providers or of one provider
//! on two days, are comparable.

use serde::Serialize;
use serde_json::{json, Value};

use crate::dataset::Prompt;

/// One question asked of every target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scenario {
    /// A tool declared as the `tools` parameter, a question it answers.
    ToolsParameter,
    /// The same tool described only in the system prompt (glaive style), no `tools` field.
    ToolsInSystem,
    /// The first prompt of the user's own dataset (`--prompts`), as it would be sent.
    RealPrompt,
    /// A prompt built to force a call, with `tool_choice: "required"`.
    ForcedToolCall,
    /// A plain question; also asks for the server's own token ids (self-hosted targets).
    Plain,
}

impl Scenario {
    pub const ALL: [Scenario; 5] = [
        Scenario::ToolsParameter,
        Scenario::ToolsInSystem,
        Scenario::RealPrompt,
        Scenario::ForcedToolCall,
        Scenario::Plain,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Scenario::ToolsParameter => "tools_parameter",
            Scenario::ToolsInSystem => "tools_in_system",
            Scenario::RealPrompt => "real_prompt",
            Scenario::ForcedToolCall => "forced_tool_call",
            Scenario::Plain => "plain",
        }
    }
}

/// The tool every tool scenario declares.
pub fn weather_tool() -> Value {
    json!({
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name, e.g. Paris"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
                },
                "required": ["city"]
            }
        }
    })
}

/// What one scenario sends: the prompt (messages, tools as a parameter or not) and the extra
/// body fields (`tool_choice`, token-id flags).
#[derive(Debug, Clone)]
pub struct Ask {
    pub scenario: Scenario,
    pub prompt: Prompt,
    pub extra: serde_json::Map<String, Value>,
}

fn prompt(id: &str, messages: Vec<Value>, tools: Option<Vec<Value>>) -> Prompt {
    Prompt {
        id: format!("probe-{id}"),
        source: "probe".into(),
        messages,
        tools,
        meta: Value::Null,
        ..Prompt::default()
    }
}

/// The request for `scenario`; `None` for [`Scenario::RealPrompt`] without a user prompt.
/// `self_hosted`: the target is a server of the user's own (not OpenRouter), so the plain
/// question also asks for the server's own ids in every dialect (vLLM/SGLang
/// `return_token_ids`, llama.cpp `return_tokens` + `verbose`); servers ignore fields they do
/// not know.
pub fn ask(scenario: Scenario, real: Option<&Prompt>, self_hosted: bool) -> Option<Ask> {
    let mut extra = serde_json::Map::new();
    let prompt = match scenario {
        Scenario::ToolsParameter => prompt(
            "tools-parameter",
            vec![
                json!({"role": "user", "content": "What is the weather like in Paris right now?"}),
            ],
            Some(vec![weather_tool()]),
        ),
        Scenario::ToolsInSystem => {
            let function = &weather_tool()["function"];
            let system = format!(
                "You are a helpful assistant with access to the following functions. Use them if required -\n{}",
                serde_json::to_string_pretty(function).unwrap_or_default()
            );
            prompt(
                "tools-in-system",
                vec![
                    json!({"role": "system", "content": system}),
                    json!({"role": "user", "content": "What is the weather like in Paris right now?"}),
                ],
                None,
            )
        }
        Scenario::RealPrompt => {
            let real = real?;
            // As the run would send it: its own request options and glaive system text too.
            Prompt {
                meta: Value::Null,
                ..real.clone()
            }
        }
        Scenario::ForcedToolCall => {
            extra.insert("tool_choice".into(), json!("required"));
            prompt(
                "forced-tool-call",
                vec![
                    json!({"role": "user", "content": "Call get_weather for Paris in celsius. Do not answer in text; call the function."}),
                ],
                Some(vec![weather_tool()]),
            )
        }
        Scenario::Plain => {
            if self_hosted {
                extra.insert("return_token_ids".into(), json!(true));
                extra.insert("return_tokens".into(), json!(true));
                extra.insert("verbose".into(), json!(true));
            }
            prompt(
                "plain",
                vec![
                    json!({"role": "user", "content": "What is 17 times 23? Answer in one sentence."}),
                ],
                None,
            )
        }
    };
    Some(Ask {
        scenario,
        prompt,
        extra,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glaive_scenario_declares_tools_only_in_the_system_prompt() {
        let ask = ask(Scenario::ToolsInSystem, None, false).unwrap();
        assert!(ask.prompt.tools.is_none());
        let system = ask.prompt.messages[0]["content"].as_str().unwrap();
        assert!(system.contains("\"name\": \"get_weather\""));
    }

    #[test]
    fn real_prompt_needs_one_and_token_ids_only_for_self_hosted() {
        assert!(ask(Scenario::RealPrompt, None, true).is_none());
        assert!(ask(Scenario::Plain, None, false).unwrap().extra.is_empty());
        let plain = ask(Scenario::Plain, None, true).unwrap();
        assert_eq!(plain.extra["return_tokens"], json!(true));
        let forced = ask(Scenario::ForcedToolCall, None, false).unwrap();
        assert_eq!(forced.extra["tool_choice"], json!("required"));
    }
}
