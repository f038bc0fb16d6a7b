//! Qwen3 (`<|im_start|>role\n…<|im_end|>\n`, hermes-style tool calls).
//!
//! - `<think>` lives in the completion: the generation prompt is `<|im_start|>assistant\n` (plus
//!   `<think>\n\n</think>\n\n` when `enable_thinking=false`), and the model writes
//!   `<think>\n…\n</think>\n\n` itself.
//! - History reasoning: assistants after the last real user query keep
//!   `<think>\n{reasoning}\n</think>\n\n`; earlier ones are rendered without it.
//! - Tool calls: `<tool_call>\n{"name": …, "arguments": …}\n</tool_call>`; no ids in the
//!   token stream (servers invent `chatcmpl-tool-…`). Arguments are re-serialized by the hermes
//!   parser, so the template's `tojson` is what the model saw only up to JSON equivalence.
//! - End of turn: `<|im_end|>` (the template adds `\n` after it, which the model does not write).
//! - No built-in template: the model's `tokenizer_config.json` carries it; [`render`] is its
//!   native twin (see `model/native.rs`).

use super::AssistantTurn;
use super::{Family, FamilyRules, FamilySpec, K2vvThreshold, Syntax, ToolGrammar};
use crate::completion::Arguments;
use crate::json::Json;
use crate::model::native::{self, Message, NativeTwin, RenderRequest, Role};
use crate::model::ModelError;
use crate::pyjson::{dumps_json, write_json, DumpOptions};

pub const SPEC: FamilySpec = FamilySpec {
    name: "qwen3",
    // After Kimi, whose tokenizer also has `<|im_start|>`.
    detect_order: 20,
    builtin_template: None,
    end_of_turn: Some(END_OF_TURN),
    reasoning_close: Some(THINK_CLOSE),
    tool_section_begin: Some(CALL_OPEN),
    thinking_switch: Some(("enable_thinking", true)),
    always_thinks: false,
    syntax: Some(Syntax::Hermes),
    detokenizer_spaces: false,
    keeps_null_content_with_tool_calls: false,
    template_ignores_tools: false,
    native_twins: &[NativeTwin {
        name: "qwen3",
        sha256: TEMPLATE_SHA256,
        kwargs: &["enable_thinking"],
        render,
    }],
    k2vv: K2vvThreshold::BORROWED_FROM_K2_THINKING,
    tool_grammar: Some(ToolGrammar {
        section_begin: CALL_OPEN,
        first_call: "",
        call_end: CALL_CLOSE,
        arguments_end: "}\n",
        section_end: "",
        // A newline, then the next call's open (`CALL_OPEN`).
        next_call: &["\n", "\n<tool_call>"],
        markers: &[CALL_OPEN, CALL_CLOSE],
        openers: &[CALL_OPEN],
    }),
    distinctive_markers: &[CALL_OPEN, CALL_CLOSE, "<|im_start|>"],
};

impl Family {
    pub const QWEN3: Family = Family::new(&Qwen3);
}

pub const FAMILIES: &[Family] = &[Family::QWEN3];

/// Qwen3's rules: detection and the native completion text.
pub struct Qwen3;

impl FamilyRules for Qwen3 {
    fn spec(&self) -> &'static FamilySpec {
        &SPEC
    }

    /// ChatML with `<think>` in the template or tokenizer.
    fn detect(&self, _model_type: &str, tokenizer_config: &str, template: &str) -> bool {
        let has = |needle: &str| tokenizer_config.contains(needle) || template.contains(needle);
        has("<|im_start|>") && has("<think>")
    }

    fn completion_text(
        &self,
        thinking: bool,
        turn: &AssistantTurn,
    ) -> Option<Result<String, ModelError>> {
        Some(Ok(completion_text(thinking, turn)))
    }
}

/// The text a Qwen3 model generated for one turn after the generation prompt: the inverse of
/// vLLM's `qwen3` reasoning parser (`partition("</think>")`, nothing stripped) and `hermes` tool
/// parser (content is the text before the first `<tool_call>`).
///
/// Fields as vLLM returns them are written back verbatim; fields a provider stripped (reasoning
/// not starting with `\n`, content not starting with `\n`) are laid out as the template writes
/// them (`<think>\n…\n</think>\n\n`, `\n` before the first tool call after text).
pub fn completion_text(thinking: bool, turn: &AssistantTurn) -> String {
    let content = turn.content.as_str();
    let mut out = String::new();
    let mut content_stripped = false;
    if thinking {
        out.push_str(THINK_OPEN);
        match turn.reasoning.as_deref() {
            Some(r) if r.starts_with('\n') => out.push_str(r),
            Some(r) => {
                out.push('\n');
                out.push_str(r.trim_matches('\n'));
                out.push('\n');
            }
            None => out.push_str("\n\n"),
        }
        if !turn.reasoning_closed {
            return out;
        }
        out.push_str(THINK_CLOSE);
        if !content.starts_with('\n') {
            out.push_str("\n\n");
            content_stripped = true;
        }
    }
    out.push_str(content);
    for (i, call) in turn.tool_calls.iter().enumerate() {
        if i > 0 || (content_stripped && !content.is_empty()) {
            out.push('\n');
        }
        out.push_str("<tool_call>\n{\"name\": \"");
        out.push_str(&call.name);
        out.push_str("\", \"arguments\": ");
        match &call.arguments {
            Arguments::Raw(text) => out.push_str(text),
            Arguments::Object(value) => out.push_str(&dumps_json(value, &DumpOptions::default())),
        }
        out.push_str("}\n</tool_call>");
    }
    if turn.end_of_turn {
        out.push_str(END_OF_TURN);
    }
    out
}

// Qwen3's markers, defined here only (the `hermes` parser in `server::hermes` and the
// reconstruction's spellings read them from this file).
pub const THINK_OPEN: &str = "<think>";
pub const THINK_CLOSE: &str = "</think>";
pub const END_OF_TURN: &str = "<|im_end|>";
pub const CALL_OPEN: &str = "<tool_call>";
pub const CALL_CLOSE: &str = "</tool_call>";

/// SHA-256 of the `chat_template` in Qwen3's `tokenizer_config.json`, the template [`render`]
/// reproduces.
pub const TEMPLATE_SHA256: &str =
    "87a2728cb8dc9fe424d624542f6060ec05a1d285ebbec578bb078900e33396b5";

const TOOLS_HEADER: &str = "# Tools\n\nYou may call one or more functions to assist with the user \
    query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>";
const TOOLS_FOOTER: &str = "\n</tools>\n\nFor each function call, return a json object with \
    function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n\
    {\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n";

/// Qwen3's chat template, written out; `None` for inputs it does not reproduce exactly.
///
/// Every message must have string content: the template concatenates it with `+` (a list or a
/// missing content raises), and reads `.startswith` on user contents.
pub fn render(request: &RenderRequest) -> Option<String> {
    let messages = native::parse_messages(request.messages)?;
    let texts = messages
        .iter()
        .map(Message::text)
        .collect::<Option<Vec<_>>>()?;
    let first_is_system = messages.first()?.role == Role::System;
    let mut out = native::output_buffer(&messages);
    let tools = request.tool_declaration(|tools| {
        let mut lines = String::new();
        for tool in tools {
            lines.push('\n');
            write_json(&mut lines, tool, &DumpOptions::default());
        }
        lines
    });
    if let Some(tools) = tools {
        out.push_str("<|im_start|>system\n");
        if first_is_system {
            out.push_str(texts[0]);
            out.push_str("\n\n");
        }
        out.push_str(TOOLS_HEADER);
        out.push_str(&tools);
        out.push_str(TOOLS_FOOTER);
    } else if first_is_system {
        out.push_str("<|im_start|>system\n");
        out.push_str(texts[0]);
        out.push_str("<|im_end|>\n");
    }

    // The last user turn that is not a wrapped tool response: assistants after it keep their
    // reasoning.
    let last_query = messages
        .iter()
        .zip(&texts)
        .rposition(|(m, text)| {
            m.role == Role::User
                && !(text.starts_with("<tool_response>") && text.ends_with("</tool_response>"))
        })
        .unwrap_or(messages.len() - 1);
    let last = messages.len() - 1;
    for (i, (message, &text)) in messages.iter().zip(&texts).enumerate() {
        match message.role {
            Role::System if i == 0 => {}
            Role::User | Role::System => {
                out.push_str("<|im_start|>");
                out.push_str(message.role.as_str());
                out.push('\n');
                out.push_str(text);
                out.push_str("<|im_end|>\n");
            }
            Role::Assistant => assistant(&mut out, message, text, i > last_query, i == last)?,
            Role::Tool => {
                if i == 0 || messages[i - 1].role != Role::Tool {
                    out.push_str("<|im_start|>user");
                }
                out.push_str("\n<tool_response>\n");
                out.push_str(text);
                out.push_str("\n</tool_response>");
                if i == last || messages[i + 1].role != Role::Tool {
                    out.push_str("<|im_end|>\n");
                }
            }
        }
    }
    if request.add_generation_prompt {
        out.push_str("<|im_start|>assistant\n");
        if request.kwarg_is_false("enable_thinking") {
            out.push_str("<think>\n\n</think>\n\n");
        }
    }
    Some(out)
}

/// One assistant message: reasoning from `reasoning_content`, else split out of the content at
/// `</think>`; written as `<think>` only after the last user query.
fn assistant(
    out: &mut String,
    message: &Message,
    text: &str,
    after_last_query: bool,
    is_last: bool,
) -> Option<()> {
    let (content, reasoning) = match message.reasoning_content {
        Some(reasoning) => (text, reasoning.as_str()?),
        None if text.contains(THINK_CLOSE) => {
            let after = text.rsplit(THINK_CLOSE).next().unwrap_or_default();
            let before = text.split(THINK_CLOSE).next().unwrap_or_default();
            let reasoning = before.trim_end_matches('\n');
            let reasoning = reasoning.rsplit(THINK_OPEN).next().unwrap_or_default();
            (
                after.trim_start_matches('\n'),
                reasoning.trim_start_matches('\n'),
            )
        }
        None => (text, ""),
    };
    out.push_str("<|im_start|>assistant\n");
    if after_last_query && (is_last || !reasoning.is_empty()) {
        out.push_str("<think>\n");
        out.push_str(reasoning.trim_matches('\n'));
        out.push_str("\n</think>\n\n");
        out.push_str(content.trim_start_matches('\n'));
    } else {
        out.push_str(content);
    }
    match message.tool_calls {
        Some(Json::Array(calls)) => {
            for (j, call) in calls.iter().enumerate() {
                if j > 0 || !content.is_empty() {
                    out.push('\n');
                }
                tool_call(out, call)?;
            }
        }
        Some(other) if other.truthy() => return None,
        _ => {}
    }
    out.push_str("<|im_end|>\n");
    Some(())
}

/// `<tool_call>\n{"name": …, "arguments": …}\n</tool_call>`; the call's `function` when it has
/// one (a truthy object), else the call itself.
fn tool_call(out: &mut String, call: &Json) -> Option<()> {
    let call = call.as_object()?;
    let function = match call.get("function") {
        Some(Json::Object(function)) if !function.is_empty() => function,
        Some(other) if other.truthy() => return None,
        _ => call,
    };
    let name = function.get("name")?.as_str()?;
    let arguments = function.get("arguments")?;
    out.push_str("<tool_call>\n{\"name\": \"");
    out.push_str(name);
    out.push_str("\", \"arguments\": ");
    match arguments {
        Json::String(text) => out.push_str(text),
        other => write_json(out, other, &DumpOptions::default()),
    }
    out.push_str("}\n</tool_call>");
    Some(())
}
