//! DeepSeek-V3 (`<｜begin▁of▁sentence｜>{system}<｜User｜>…<｜Assistant｜>…<｜end▁of▁sentence｜>`).
//!
//! - No reasoning: V3 does not think (R1-style templates are a different family).
//! - The template emits `bos_token` itself; the tokenizer must not add another.
//! - Tool calls: `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\nARGS\n```<｜tool▁call▁end｜>…`,
//!   only for assistant messages whose `content` is null; arguments must be a string. No ids in
//!   the token stream. History therefore keeps `content: null` next to `tool_calls`, as
//!   transformers 4 did (transformers 5 drops null keys, and the calls would not render).
//! - A request's `tools` never reach the prompt: the template does not render them.
//! - End of turn: `<｜end▁of▁sentence｜>`.
//! - No built-in template: the model's `tokenizer_config.json` carries it; [`render`] is its
//!   native twin (see `model/native.rs`). The template keeps state across the whole conversation:
//!   the first tool call ever opens `<｜tool▁calls▁begin｜>` and every later call closes the block
//!   (and the turn) after itself; the first tool output ever opens `<｜tool▁outputs▁begin｜>`.

use serde_json::Value;

use super::AssistantTurn;
use super::{Family, FamilyRules, FamilySpec, K2vvThreshold, Syntax, ToolGrammar};
use crate::completion::Arguments;
use crate::json::Json;
use crate::model::native::{self, NativeTwin, RenderRequest, Role};
use crate::model::ModelError;
use crate::pyjson::{dumps_json, DumpOptions};

// DeepSeek-V3's markers, defined here only (the `deepseek_v3` parser in `server::deepseek` reads
// them from this file).
pub const END_OF_SENTENCE: &str = "<｜end▁of▁sentence｜>";
pub const SECTION_BEGIN: &str = "<｜tool▁calls▁begin｜>";
pub const SECTION_END: &str = "<｜tool▁calls▁end｜>";
pub const CALL_BEGIN: &str = "<｜tool▁call▁begin｜>";
pub const CALL_END: &str = "<｜tool▁call▁end｜>";
pub const CALL_SEP: &str = "<｜tool▁sep｜>";

pub const SPEC: FamilySpec = FamilySpec {
    name: "deepseek-v3",
    detect_order: 30,
    builtin_template: None,
    end_of_turn: Some(END_OF_SENTENCE),
    reasoning_close: None,
    tool_section_begin: Some(SECTION_BEGIN),
    thinking_switch: None,
    always_thinks: false,
    syntax: Some(Syntax::DeepseekV3),
    detokenizer_spaces: false,
    keeps_null_content_with_tool_calls: true,
    template_ignores_tools: true,
    native_twins: &[NativeTwin {
        name: "deepseek-v3",
        sha256: TEMPLATE_SHA256,
        kwargs: &[],
        render,
    }],
    k2vv: K2vvThreshold::BORROWED_FROM_K2_0905,
    tool_grammar: Some(ToolGrammar {
        section_begin: SECTION_BEGIN,
        first_call: CALL_BEGIN,
        call_end: CALL_END,
        arguments_end: "\n```",
        section_end: SECTION_END,
        // A newline, then the next call's begin (`CALL_BEGIN`).
        next_call: &["\n", "\n<｜tool▁call▁begin｜>"],
        markers: &[SECTION_BEGIN, CALL_BEGIN, CALL_SEP, CALL_END, SECTION_END],
        openers: &[SECTION_BEGIN, CALL_BEGIN],
    }),
    distinctive_markers: &[
        SECTION_BEGIN,
        CALL_BEGIN,
        CALL_SEP,
        END_OF_SENTENCE,
        ASSISTANT,
    ],
};

impl Family {
    pub const DEEPSEEK_V3: Family = Family::new(&DeepseekV3);
}

pub const FAMILIES: &[Family] = &[Family::DEEPSEEK_V3];

/// DeepSeek-V3's rules: detection and the native completion text.
pub struct DeepseekV3;

impl FamilyRules for DeepseekV3 {
    fn spec(&self) -> &'static FamilySpec {
        &SPEC
    }

    /// DeepSeek's sentence markers in the template or tokenizer.
    fn detect(&self, _model_type: &str, tokenizer_config: &str, template: &str) -> bool {
        let needle = "<｜begin▁of▁sentence｜>";
        tokenizer_config.contains(needle) || template.contains(needle)
    }

    fn completion_text(
        &self,
        _thinking: bool,
        turn: &AssistantTurn,
    ) -> Option<Result<String, ModelError>> {
        Some(Ok(completion_text(turn)))
    }
}

/// The text a DeepSeek-V3 model generated for one turn after the generation prompt
/// (`<｜Assistant｜>`): content, then the tool-call block vLLM's `deepseek_v3` parser reads,
/// calls separated by `\n`. Written natively because the published template renders tool calls
/// only for `content: null` messages (which transformers 5 drops) and closes the block only after
/// a second call.
pub fn completion_text(turn: &AssistantTurn) -> String {
    let mut out = turn.content.clone();
    if !turn.tool_calls.is_empty() {
        out.push_str(SECTION_BEGIN);
        for (i, call) in turn.tool_calls.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            out.push_str(CALL_BEGIN);
            out.push_str("function");
            out.push_str(CALL_SEP);
            out.push_str(&call.name);
            out.push_str("\n```json\n");
            match &call.arguments {
                Arguments::Raw(text) => out.push_str(text),
                Arguments::Object(value) => {
                    out.push_str(&dumps_json(value, &DumpOptions::default()))
                }
            }
            out.push_str("\n```");
            out.push_str(CALL_END);
        }
        out.push_str(SECTION_END);
    }
    if turn.end_of_turn {
        out.push_str(END_OF_SENTENCE);
    }
    out
}

/// SHA-256 of the `chat_template` in DeepSeek-V3's `tokenizer_config.json`, the template
/// [`render`] reproduces.
pub const TEMPLATE_SHA256: &str =
    "3b8267e54b67df6500f231ffa969955cc9d26b3444a291ced4eb96ca7d3ca1ea";

const USER: &str = "<｜User｜>";
const ASSISTANT: &str = "<｜Assistant｜>";

/// DeepSeek-V3's chat template, written out; `None` for inputs it does not reproduce exactly.
///
/// Contents are concatenated with `+`, so each one the template reads must be a string, except
/// that an assistant with tool calls and `content: null` renders its calls (whose `type`, `name`
/// and `arguments` must then be strings).
pub fn render(request: &RenderRequest) -> Option<String> {
    let messages = native::parse_messages(request.messages)?;
    let mut out = native::output_buffer(&messages);
    match request.special_tokens.get("bos_token") {
        Some(Value::String(bos)) => out.push_str(bos),
        None => {}
        Some(_) => return None,
    }
    // All system messages, joined by a blank line, before the first turn.
    let mut first_system = true;
    for message in messages.iter().filter(|m| m.role == Role::System) {
        if !first_system {
            out.push_str("\n\n");
        }
        out.push_str(message.text()?);
        first_system = false;
    }

    let mut calls_opened = false;
    let mut in_tool_outputs = false;
    let mut outputs_opened = false;
    for message in &messages {
        match message.role {
            Role::System => {}
            Role::User => {
                in_tool_outputs = false;
                out.push_str(USER);
                out.push_str(message.text()?);
            }
            // `content: null` is kept only beside tool calls (see `Profile::normalize_message`).
            Role::Assistant if message.content_null && message.tool_calls.is_some() => {
                in_tool_outputs = false;
                for call in message.tool_calls?.as_array()? {
                    history_call(&mut out, call, calls_opened)?;
                    calls_opened = true;
                }
            }
            Role::Assistant => {
                let text = message.text()?;
                out.push_str(if in_tool_outputs {
                    "<｜tool▁outputs▁end｜>"
                } else {
                    ASSISTANT
                });
                out.push_str(text);
                out.push_str(END_OF_SENTENCE);
                in_tool_outputs = false;
            }
            Role::Tool => {
                in_tool_outputs = true;
                let text = message.text()?;
                if outputs_opened {
                    out.push_str("\n<｜tool▁output▁begin｜>");
                } else {
                    out.push_str("<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>");
                    outputs_opened = true;
                }
                out.push_str(text);
                out.push_str("<｜tool▁output▁end｜>");
            }
        }
    }
    if in_tool_outputs {
        out.push_str("<｜tool▁outputs▁end｜>");
    } else if request.add_generation_prompt {
        out.push_str(ASSISTANT);
    }
    Some(out)
}

/// One tool call of the history as the template writes it: the conversation's first call opens
/// the assistant turn and the block, every later one closes the block and the turn after itself.
fn history_call(out: &mut String, call: &Json, calls_opened: bool) -> Option<()> {
    let call = call.as_object()?;
    let kind = call.get("type")?.as_str()?;
    let function = call.get("function")?.as_object()?;
    let name = function.get("name")?.as_str()?;
    let arguments = function.get("arguments")?.as_str()?;
    if calls_opened {
        out.push_str("\n<｜tool▁call▁begin｜>");
    } else {
        out.push_str("<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>");
    }
    out.push_str(kind);
    out.push_str("<｜tool▁sep｜>");
    out.push_str(name);
    out.push_str("\n```json\n");
    out.push_str(arguments);
    out.push_str("\n```<｜tool▁call▁end｜>");
    if calls_opened {
        out.push_str("<｜tool▁calls▁end｜>");
        out.push_str(END_OF_SENTENCE);
    }
    Some(())
}
