//! The round trip: the family's native rendering of an answer's calls (what the model would have
//! written: `profile.completion_text`, the same writer `build` uses) parsed back by the family's
//! server parser (`crate::server`, vLLM's parsers as measured) must give the same calls — names,
//! arguments (byte for byte where the family keeps them raw, as JSON values where its parser
//! re-serializes) and, for families with ids in the stream, ids. A call that does not come back
//! is one whose training tokens would not say what the API said.

use serde_json::Value;

use super::schema::parse_arguments;
use crate::completion::{Arguments, ToolCall};
use crate::model::profile::AssistantTurn;
use crate::model::{Profile, RenderInput};
use crate::server::{self, ForwardInput, ServerShape, Syntax};

/// vLLM 0.33's parsers without the server's own edits (no stripping, no coercion, no spaces):
/// exactly what the model's text says.
const PARSER: ServerShape = server::vllm::PARSER_ONLY;

/// `Err` says what did not come back.
pub fn check(
    request: &Value,
    calls: &[ToolCall],
    history: usize,
    profile: &Profile,
) -> Result<(), String> {
    let Some(syntax) = Syntax::of(profile.family) else {
        return Ok(());
    };
    // Where the calls start: the tool section's opener, or (a family without one: harmony,
    // Llama's JSON) what the family writes before a call's name.
    let Some(section) = profile
        .tool_section_begin()
        .map(str::to_string)
        .or_else(|| profile.family.call_opener())
    else {
        return Ok(());
    };
    let written = as_written(calls, history, profile);
    let text = native_tool_section(request, &written, &section, profile)?;
    // A parser that converts values by the schema (qwen3_coder's) reads the request's tools.
    let tools = request
        .get("tools")
        .and_then(Value::as_array)
        .map(Vec::as_slice);
    let parsed = server::forward(
        &PARSER,
        &ForwardInput {
            text: &text,
            cut: false,
            stream: false,
            spaces: false,
            thinking: false,
            tools_declared: true,
            history_calls: history,
            syntax,
            prompt_closes_reasoning: false,
            first_token: None,
            tools,
        },
    );
    if parsed.calls.len() != written.len() {
        return Err(format!(
            "{} calls rendered, {} parsed back",
            written.len(),
            parsed.calls.len()
        ));
    }
    for (i, (call, back)) in written.iter().zip(&parsed.calls).enumerate() {
        came_back(i, call, back, syntax.ids_in_stream())?;
    }
    Ok(())
}

/// The calls with the ids the model writes: its own when the server kept them, else the native
/// rule's.
fn as_written(calls: &[ToolCall], history: usize, profile: &Profile) -> Vec<ToolCall> {
    calls
        .iter()
        .enumerate()
        .map(|(i, call)| ToolCall {
            id: match &call.id {
                Some(id) if profile.is_native_tool_call_id(id) => Some(id.clone()),
                _ => profile.native_tool_call_id(&call.name, history + i),
            },
            name: call.name.clone(),
            arguments: call.arguments.clone(),
        })
        .collect()
}

/// The family's native rendering of `written` after `request`, from the tool section's opener
/// `section` to the end of the turn (the marker that ended it left out).
fn native_tool_section(
    request: &Value,
    written: &[ToolCall],
    section: &str,
    profile: &Profile,
) -> Result<String, String> {
    let messages: Vec<Value> = request
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let tools: Option<Vec<Value>> = request.get("tools").and_then(Value::as_array).cloned();
    let kwargs = request
        .get("chat_template_kwargs")
        .and_then(Value::as_object);
    let input = RenderInput {
        messages: &messages,
        tools: tools.as_deref(),
        add_generation_prompt: true,
        chat_template_kwargs: kwargs,
    };
    let turn = AssistantTurn {
        reasoning: None,
        reasoning_closed: true,
        content: String::new(),
        tool_calls: written.to_vec(),
        end_of_turn: true,
    };
    let text = profile
        .completion_text(&input, &turn)
        .map_err(|e| format!("the calls cannot be rendered: {e}"))?;
    let Some(at) = text.find(section) else {
        return Err("the native rendering has no tool section".into());
    };
    let mut text = &text[at..];
    // Servers never show the token that ended the turn (gpt-oss ends a call with `<|call|>`).
    let ends = [profile.end_of_turn()]
        .into_iter()
        .chain(profile.family.rules().other_end_of_turn());
    for end in ends.filter(|e| !e.is_empty()) {
        if let Some(cut) = text.rfind(end).filter(|at| at + end.len() == text.len()) {
            text = &text[..cut];
        }
    }
    Ok(text.to_string())
}

/// Whether the `i`-th call came back from the parser as written: its name, its arguments and,
/// where the family writes ids into the stream, its id.
fn came_back(
    i: usize,
    call: &ToolCall,
    back: &server::ParsedCall,
    ids_in_stream: bool,
) -> Result<(), String> {
    if back.name != call.name {
        return Err(format!(
            "call {i}: name {:?} came back as {:?}",
            call.name, back.name
        ));
    }
    let same_arguments = match (&call.arguments, ids_in_stream) {
        // Kimi keeps the model's argument text: byte for byte.
        (Arguments::Raw(raw), true) => *raw == back.arguments,
        // Re-serialized (or sent as an object): the same JSON value.
        (arguments, _) => {
            let ours = parse_arguments(arguments).ok();
            let theirs = serde_json::from_str::<Value>(&back.arguments).ok();
            ours.is_some() && ours == theirs
        }
    };
    if !same_arguments {
        return Err(format!(
            "call {i} ({}): arguments came back as {:?}",
            call.name, back.arguments
        ));
    }
    if ids_in_stream && call.id.as_deref() != Some(back.id.as_str()) {
        return Err(format!(
            "call {i} ({}): id {:?} came back as {:?}",
            call.name,
            call.id.as_deref().unwrap_or(""),
            back.id
        ));
    }
    Ok(())
}
