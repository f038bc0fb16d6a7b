//! What the simulated model writes: in the loaded family's syntax through [`family_text`];
//! without a model, a native Kimi K2.5 token stream (Kimi K2.5's chat template,
//! assets/kimi-k2.5/):
//!
//! ```text
//! reasoning</think>content<|im_end|>
//! reasoning</think>[content]<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:N<|tool_call_argument_begin|>{ARGS}<|tool_call_end|>…<|tool_calls_section_end|><|im_end|>
//! reasoning<|tool_calls_section_begin|>…<|tool_calls_section_end|><|im_end|>   (section opened inside reasoning; rare)
//! ```
//!
//! `<think>` belongs to the prompt (K2.5's generation prompt ends with it), so the stream starts
//! with the reasoning text. With `thinking: false` there is no reasoning and no `</think>`.
//! N counts tool calls over the whole conversation: those of earlier assistant turns plus the
//! local index, as Kimi numbers them.

use rand::rngs::StdRng;
use rand::Rng;
use serde_json::Value;

use super::arguments;
use super::config::Behaviour;
use super::words;
use crate::completion::{Arguments, ToolCall};

pub use crate::model::family::kimi::{
    ARGUMENT_BEGIN, CALL_BEGIN, CALL_END, END_OF_TURN, SECTION_BEGIN, SECTION_END, THINK_END,
};

/// One tool call as the model writes it.
#[derive(Debug, Clone, PartialEq)]
pub struct NativeCall {
    pub name: String,
    /// The conversation-global index N of `functions.NAME:N`.
    pub index: usize,
    /// The JSON arguments exactly as written.
    pub arguments: String,
}

impl NativeCall {
    pub fn native_id(&self) -> String {
        format!("functions.{}:{}", self.name, self.index)
    }
}

/// The model's whole answer before any server parsing.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelAnswer {
    /// `None` when thinking is off (no `</think>` either).
    pub reasoning: Option<String>,
    pub content: String,
    pub tool_calls: Vec<NativeCall>,
    /// The tool section opens inside the reasoning, with no `</think>`.
    pub section_in_reasoning: bool,
}

impl ModelAnswer {
    /// The native completion text, ending with `<|im_end|>`.
    pub fn native_text(&self) -> String {
        let mut out = String::new();
        if let Some(reasoning) = &self.reasoning {
            out.push_str(reasoning);
            if !self.section_in_reasoning {
                out.push_str(THINK_END);
            }
        }
        out.push_str(&self.content);
        if !self.tool_calls.is_empty() {
            out.push_str(SECTION_BEGIN);
            for call in &self.tool_calls {
                out.push_str(CALL_BEGIN);
                out.push_str(&call.native_id());
                out.push_str(ARGUMENT_BEGIN);
                out.push_str(&call.arguments);
                out.push_str(CALL_END);
            }
            out.push_str(SECTION_END);
        }
        out.push_str(END_OF_TURN);
        out
    }
}

/// The answer in the loaded family's native syntax, as its profile writes a turn (Kimi: its
/// `functions.NAME:N` ids, K2-Thinking's own `<think>`; Qwen3: `<think>\n…\n</think>\n\n`,
/// hermes `<tool_call>` JSON; DeepSeek-V3: no reasoning, its tool-call block; …), ending with
/// the family's end-of-turn token. Falls back to the Kimi K2.5 text if the profile cannot
/// write the turn.
pub fn family_text(
    answer: &ModelAnswer,
    profile: &crate::model::Profile,
    request: &super::request::ChatRequest,
) -> String {
    use crate::model::profile::AssistantTurn;
    let kwargs = request.chat_template_kwargs.as_ref();
    let thinking = profile.thinking_enabled(kwargs) && profile.reasoning_close().is_some();
    // Only a syntax whose reasoning parser ends at a tool section reads a section opened inside
    // the reasoning; elsewhere the model closes its reasoning first.
    let unclosed = answer.section_in_reasoning
        && super::syntax::reasoning_ends_at_tool_section(profile.family.syntax());
    let turn = AssistantTurn {
        reasoning: answer.reasoning.clone().filter(|_| thinking),
        reasoning_closed: !unclosed,
        content: answer.content.clone(),
        tool_calls: answer
            .tool_calls
            .iter()
            .map(|c| family_call(c, profile.family))
            .collect(),
        end_of_turn: true,
    };
    let tools = (!request.tools.is_empty()).then_some(request.tools.as_slice());
    let input = crate::model::RenderInput {
        messages: &request.messages,
        tools,
        add_generation_prompt: true,
        chat_template_kwargs: kwargs,
    };
    profile
        .completion_text(&input, &turn)
        .unwrap_or_else(|_| answer.native_text())
}

/// One call as `family` writes it: with its native id and the arguments as sampled where its
/// token stream holds ids (Kimi's), else as its template writes arguments (`tojson`), which is
/// what the model was trained on.
fn family_call(call: &NativeCall, family: crate::model::family::Family) -> ToolCall {
    let id = family.rules().native_tool_call_id(&call.name, call.index);
    let arguments = match (&id, serde_json::from_str::<Value>(&call.arguments)) {
        (None, Ok(object)) if object.is_object() => Arguments::Object(object),
        // A tool whose schema is no object: these templates write arguments as named
        // parameters (`arguments | items`) or a JSON object, so the model calls it without any.
        (None, _) => Arguments::Object(Value::Object(serde_json::Map::new())),
        (Some(_), _) => Arguments::Raw(call.arguments.clone()),
    };
    ToolCall {
        id,
        name: call.name.clone(),
        arguments,
    }
}

/// What the answer depends on from the request.
pub struct Prompted<'a> {
    pub messages: &'a [Value],
    pub tools: &'a [Value],
    /// `tool_choice` as sent (`"auto"`, `"none"`, `"required"`, `{"type":"function",…}`).
    pub tool_choice: Option<&'a Value>,
    pub thinking: bool,
}

/// Write the answer for a request with a generator seeded by (seed, request key).
pub fn write(prompted: &Prompted, behaviour: &Behaviour, rng: &mut StdRng) -> ModelAnswer {
    let reasoning = prompted.thinking.then(|| {
        let n = rng.random_range(12..90);
        words::sentences(rng, n)
    });
    let callable = callable_tools(prompted);
    let forced = matches!(prompted.tool_choice, Some(Value::String(s)) if s == "required")
        || matches!(prompted.tool_choice, Some(Value::Object(_)));
    let calls_tools =
        !callable.is_empty() && (forced || rng.random_bool(clamp(behaviour.tool_call_rate)));
    if !calls_tools {
        let n = rng.random_range(8..140);
        return ModelAnswer {
            reasoning,
            content: words::sentences(rng, n),
            tool_calls: Vec::new(),
            section_in_reasoning: false,
        };
    }
    let count = if rng.random_bool(clamp(behaviour.parallel_rate)) {
        rng.random_range(2..=3)
    } else {
        1
    };
    let first_index = prior_tool_calls(prompted.messages);
    let tool_calls = (0..count)
        .map(|local| {
            let tool = callable[rng.random_range(0..callable.len())];
            NativeCall {
                name: tool_name(tool).unwrap_or("tool").to_string(),
                index: first_index + local,
                arguments: arguments_for(tool, rng),
            }
        })
        .collect();
    let section_in_reasoning =
        reasoning.is_some() && rng.random_bool(clamp(behaviour.section_in_reasoning_rate));
    let content =
        if !section_in_reasoning && rng.random_bool(clamp(behaviour.content_with_tools_rate)) {
            let n = rng.random_range(4..20);
            words::sentences(rng, n)
        } else {
            String::new()
        };
    ModelAnswer {
        reasoning,
        content,
        tool_calls,
        section_in_reasoning,
    }
}

/// The declared tools the model may call under `tool_choice`.
fn callable_tools<'a>(prompted: &Prompted<'a>) -> Vec<&'a Value> {
    match prompted.tool_choice {
        Some(Value::String(s)) if s == "none" => Vec::new(),
        Some(Value::Object(choice)) => {
            let wanted = choice
                .get("function")
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str);
            prompted
                .tools
                .iter()
                .filter(|t| tool_name(t).is_some() && tool_name(t) == wanted)
                .collect()
        }
        _ => prompted
            .tools
            .iter()
            .filter(|t| tool_name(t).is_some())
            .collect(),
    }
}

fn tool_name(tool: &Value) -> Option<&str> {
    tool.get("function")
        .and_then(|f| f.get("name"))
        .or_else(|| tool.get("name"))
        .and_then(Value::as_str)
}

fn arguments_for(tool: &Value, rng: &mut StdRng) -> String {
    let function = tool.get("function").unwrap_or(tool);
    let empty = serde_json::json!({"type": "object", "properties": {}});
    let schema = function.get("parameters").unwrap_or(&empty);
    let value = arguments::value_for(schema, schema, rng);
    // Kimi writes compact JSON most of the time; sometimes with spaces, as `json.dumps` does.
    if rng.random_bool(0.3) {
        python_style_json(&value)
    } else {
        value.to_string()
    }
}

/// JSON with `", "` and `": "` separators (Python `json.dumps` defaults), non-ASCII kept.
fn python_style_json(value: &Value) -> String {
    match value {
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(python_style_json).collect();
            format!("[{}]", inner.join(", "))
        }
        Value::Object(map) => {
            let inner: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), python_style_json(v)))
                .collect();
            format!("{{{}}}", inner.join(", "))
        }
        scalar => scalar.to_string(),
    }
}

/// Tool calls made by assistant turns earlier in the conversation.
pub fn prior_tool_calls(messages: &[Value]) -> usize {
    messages
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
        .filter_map(|m| m.get("tool_calls").and_then(Value::as_array))
        .map(Vec::len)
        .sum()
}

fn clamp(p: f64) -> f64 {
    if p.is_nan() {
        0.0
    } else {
        p.clamp(0.0, 1.0)
    }
}
