//! DeepSeek-V3.1 (`<｜begin▁of▁sentence｜>{system}<｜User｜>…<｜Assistant｜><think></think>…<｜end▁of▁sentence｜>`).
//!
//! - Thinking mode: the `thinking` template kwarg (default off; the llama.cpp template also reads
//!   `enable_thinking` when `thinking` is absent). The generation prompt ends with `<think>` when
//!   thinking, `<think></think>` when not (llama.cpp's template; DeepSeek's own writes `</think>`
//!   alone); the model then writes `REASONING</think>CONTENT`.
//! - Tool calls, a new syntax (no `function` type word, no ```` ```json ```` fence, no newline
//!   between calls): `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>`.
//!   No ids in the token stream.
//! - A request's `tools` never reach the prompt: the template does not render them.
//! - End of turn: `<｜end▁of▁sentence｜>`.
//! - Built-in template: `templates/deepseek-v3.1.jinja`, llama.cpp's
//!   `models/templates/deepseek-ai-DeepSeek-V3.1.jinja` (MIT, `tests/assets/templates/LICENSE-llama.cpp`),
//!   which writes call arguments with `tojson` (servers hand the template arguments as objects).
//! - Tokenizer: V3.1's own (`assets/deepseek-v3.1/`, `tests/assets/README.md`): DeepSeek-V3's
//!   vocabulary plus `<｜search▁begin｜>` 128796, `<｜search▁end｜>` 128797, `<think>` 128798,
//!   `</think>` 128799 as added tokens, so every think marker is one token. DeepSeek-V3's files
//!   (place holders there) would split each into several and miscount every V3.1 prompt.

use super::deepseek_v3::{
    CALL_BEGIN, CALL_END, CALL_SEP, END_OF_SENTENCE, SECTION_BEGIN, SECTION_END,
};
use serde_json::{Map, Value};

use super::AssistantTurn;
use super::{Family, FamilyRules, FamilySpec, K2vvThreshold, Syntax, ToolGrammar};
use crate::completion::{Arguments, ToolCall};
use crate::json::python_truthy;
use crate::model::ModelError;
use crate::pyjson::{dumps_json, DumpOptions};

pub const THINK_OPEN: &str = "<think>";
pub const THINK_CLOSE: &str = "</think>";

/// What V3.1's templates write after `<｜Assistant｜>` without thinking: llama.cpp's, DeepSeek's.
const ASSISTANT_THINK_OPENINGS: &[&str] =
    &["<｜Assistant｜><think></think>", "<｜Assistant｜></think>"];

pub const SPEC: FamilySpec = FamilySpec {
    name: "deepseek-v3.1",
    // Before DeepSeek-V3, whose detection also matches V3.1's sentence markers.
    detect_order: 29,
    builtin_template: Some(include_str!("templates/deepseek-v3.1.jinja")),
    end_of_turn: Some(END_OF_SENTENCE),
    reasoning_close: Some(THINK_CLOSE),
    tool_section_begin: Some(SECTION_BEGIN),
    thinking_switch: Some(("thinking", false)),
    always_thinks: false,
    syntax: Some(Syntax::DeepseekV31),
    detokenizer_spaces: false,
    keeps_null_content_with_tool_calls: false,
    template_ignores_tools: true,
    native_twins: &[],
    k2vv: K2vvThreshold::BORROWED_FROM_K2_THINKING,
    tool_grammar: Some(ToolGrammar {
        section_begin: SECTION_BEGIN,
        first_call: CALL_BEGIN,
        call_end: CALL_END,
        arguments_end: "",
        section_end: SECTION_END,
        // The next call's begin, right after the close.
        next_call: &[CALL_BEGIN],
        markers: &[SECTION_BEGIN, CALL_BEGIN, CALL_SEP, CALL_END, SECTION_END],
        openers: &[SECTION_BEGIN, CALL_BEGIN],
    }),
    distinctive_markers: &[SECTION_BEGIN, CALL_BEGIN, CALL_SEP, END_OF_SENTENCE],
};

impl Family {
    pub const DEEPSEEK_V31: Family = Family::new(&DeepseekV31);
}

pub const FAMILIES: &[Family] = &[Family::DEEPSEEK_V31];

/// DeepSeek-V3.1's rules: detection and the native completion text.
pub struct DeepseekV31;

impl FamilyRules for DeepseekV31 {
    fn spec(&self) -> &'static FamilySpec {
        &SPEC
    }

    /// DeepSeek's sentence markers, and a template that writes `<think></think>` (llama.cpp's)
    /// or `</think>` (DeepSeek's own, the V3.1 `tokenizer_config.json` of `tests/assets/README.md`)
    /// right after `<｜Assistant｜>`.
    fn detect(&self, _model_type: &str, tokenizer_config: &str, template: &str) -> bool {
        let writes_think = |text: &str| {
            ASSISTANT_THINK_OPENINGS
                .iter()
                .any(|opening| text.contains(opening))
        };
        has_sentence_markers(tokenizer_config, template)
            && (writes_think(template) || writes_think(tokenizer_config))
    }

    /// `deepseek-ai/DeepSeek-V3.1`, `deepseek/deepseek-chat-v3.1`, `…-v3.1-terminus`, `…:free`,
    /// and `deepseek-ai/DeepSeek-V3.2-Exp`, which writes V3.1's syntax (V3.2 does not).
    fn detect_model_id(&self, model_id: &str) -> bool {
        let name = model_name(model_id);
        let v32_exp = names_version(&name, "3.2") && name.contains("exp");
        name.starts_with("deepseek") && (names_version(&name, "3.1") || v32_exp)
    }

    /// The template's rule: `thinking` when given (truthy, as Jinja tests it), else
    /// `enable_thinking`, else off. (vLLM's `deepseek_v3` reasoning parser thinks when either is
    /// truthy: the two differ only for `thinking` falsy with `enable_thinking` truthy.)
    fn thinking(&self, kwargs: Option<&Map<String, Value>>) -> Option<bool> {
        let kwargs = kwargs?;
        let value = kwargs
            .get("thinking")
            .or_else(|| kwargs.get("enable_thinking"))?;
        Some(python_truthy(value))
    }

    fn completion_text(
        &self,
        thinking: bool,
        turn: &AssistantTurn,
    ) -> Option<Result<String, ModelError>> {
        Some(Ok(completion_text(thinking, turn)))
    }
}

/// The text a DeepSeek-V3.1 model generated for one turn after the generation prompt (which
/// already holds `<think>` or `<think></think>`): reasoning and `</think>` when thinking, content,
/// then the tool calls as vLLM's `deepseek_v31` parser reads them, one after the other.
pub fn completion_text(thinking: bool, turn: &AssistantTurn) -> String {
    completion_text_with(thinking, turn, |out, turn| {
        write_calls(out, &turn.tool_calls)
    })
}

/// A turn as DeepSeek-V3.1 and V3.2 write it after the generation prompt: reasoning and
/// `</think>` when thinking (only the reasoning when the model never closed it), the content,
/// the calls as `write_calls` writes them (only when there are any), then
/// `<｜end▁of▁sentence｜>` when the turn ended. The two differ only in their call syntax.
pub fn completion_text_with(
    thinking: bool,
    turn: &AssistantTurn,
    write_calls: impl FnOnce(&mut String, &AssistantTurn),
) -> String {
    let mut out = String::new();
    if thinking {
        out.push_str(turn.reasoning.as_deref().unwrap_or_default());
        if !turn.reasoning_closed {
            return out;
        }
        out.push_str(THINK_CLOSE);
    }
    out.push_str(&turn.content);
    if !turn.tool_calls.is_empty() {
        write_calls(&mut out, turn);
    }
    if turn.end_of_turn {
        out.push_str(END_OF_SENTENCE);
    }
    out
}

/// V3.1's call syntax: the section, each call's name and arguments, no separator between calls.
fn write_calls(out: &mut String, calls: &[ToolCall]) {
    out.push_str(SECTION_BEGIN);
    for call in calls {
        out.push_str(CALL_BEGIN);
        out.push_str(&call.name);
        out.push_str(CALL_SEP);
        match &call.arguments {
            Arguments::Raw(text) => out.push_str(text),
            Arguments::Object(value) => out.push_str(&dumps_json(value, &DumpOptions::default())),
        }
        out.push_str(CALL_END);
    }
    out.push_str(SECTION_END);
}

/// DeepSeek's `<｜begin▁of▁sentence｜>` in the tokenizer's configuration or the template.
pub fn has_sentence_markers(tokenizer_config: &str, template: &str) -> bool {
    let needle = "<｜begin▁of▁sentence｜>";
    tokenizer_config.contains(needle) || template.contains(needle)
}

/// The model's own name in an id, lower-cased (`deepseek-ai/DeepSeek-V3.1` → `deepseek-v3.1`).
pub fn model_name(model_id: &str) -> String {
    let id = model_id.to_ascii_lowercase();
    id.rsplit('/').next().unwrap_or_default().to_string()
}

/// Whether a model name says DeepSeek version `dotted` (`3.1`) as ids write it: `v3.1` or `v3-1`.
pub fn names_version(name: &str, dotted: &str) -> bool {
    let dashed = dotted.replace('.', "-");
    name.contains(&format!("v{dotted}")) || name.contains(&format!("v{dashed}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::completion::ToolCall;

    #[test]
    fn model_ids_as_openrouter_and_hugging_face_write_them() {
        let ids = [
            "deepseek/deepseek-chat-v3.1",
            "deepseek/deepseek-chat-v3.1:free",
            "deepseek-ai/DeepSeek-V3.1",
            "deepseek-ai/DeepSeek-V3.1-Terminus",
            // V3.2-Exp writes V3.1's syntax.
            "deepseek/deepseek-v3.2-exp",
            "deepseek-ai/DeepSeek-V3.2-Exp",
        ];
        let others = [
            "deepseek-ai/DeepSeek-V3",
            "deepseek/deepseek-chat",
            "deepseek-ai/DeepSeek-V3.2",
            "qwen/qwen3-8b",
        ];
        crate::model::family::assert_model_ids(Family::DEEPSEEK_V31, &ids, &others);
    }

    #[test]
    fn thinking_as_the_template_reads_it() {
        let on =
            |kwargs: serde_json::Value| Family::DEEPSEEK_V31.thinking_enabled(kwargs.as_object());
        assert!(!Family::DEEPSEEK_V31.thinking_enabled(None));
        assert!(on(serde_json::json!({"thinking": true})));
        assert!(on(serde_json::json!({"enable_thinking": true})));
        assert!(!on(
            serde_json::json!({"thinking": false, "enable_thinking": true})
        ));
        assert!(!on(serde_json::json!({})));
    }

    #[test]
    fn completion_text_writes_the_new_tool_syntax() {
        let call = |name: &str, args: &str| ToolCall {
            id: None,
            name: name.into(),
            arguments: Arguments::Raw(args.into()),
        };
        let turn = AssistantTurn {
            reasoning: Some("Two cities.".into()),
            reasoning_closed: true,
            content: "Checking.".into(),
            tool_calls: vec![call("get_weather", r#"{"city": "Paris"}"#), call("f", "{}")],
            end_of_turn: true,
        };
        assert_eq!(
            completion_text(true, &turn),
            "Two cities.</think>Checking.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather\
             <｜tool▁sep｜>{\"city\": \"Paris\"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{}\
             <｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>"
        );
        let plain = AssistantTurn {
            content: "Hi".into(),
            end_of_turn: true,
            ..AssistantTurn::default()
        };
        assert_eq!(completion_text(false, &plain), "Hi<｜end▁of▁sentence｜>");
    }
}
