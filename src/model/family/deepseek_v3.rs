//! DeepSeek-V3 (`<｜begin▁of▁sentence｜>{system}<｜User｜>…<｜Assistant｜>…<｜end▁of▁sentence｜>`).
//!
//! - No reasoning: V3 does not think (R1-style templates are a different family).
//! - The template emits `bos_token` itself; the tokenizer must not add another.
//! - Tool calls: `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\nARGS\n```<｜tool▁call▁end｜>…`,
//!   only for assistant messages whose `content` is null; arguments must be a string. No ids in
//!   the token stream.
//! - End of turn: `<｜end▁of▁sentence｜>`.
//! - No built-in template: the model's `tokenizer_config.json` carries it.

use super::FamilySpec;
use crate::api::{Arguments, ToolCall};
use crate::model::pyjson::{dumps_json, DumpOptions};

pub const SPEC: FamilySpec = FamilySpec {
    name: "deepseek-v3",
    builtin_template: None,
    end_of_turn: Some("<｜end▁of▁sentence｜>"),
    reasoning_close: None,
    tool_section_begin: Some("<｜tool▁calls▁begin｜>"),
    thinking_switch: None,
};

/// DeepSeek's sentence markers in the template or tokenizer.
pub fn detect(tokenizer_config: &str, template: &str) -> bool {
    let needle = "<｜begin▁of▁sentence｜>";
    tokenizer_config.contains(needle) || template.contains(needle)
}

/// The text a DeepSeek-V3 model generated for one turn after the generation prompt
/// (`<｜Assistant｜>`): content, then the tool-call block vLLM's `deepseek_v3` parser reads,
/// calls separated by `\n`. Written natively because the published template renders tool calls
/// only for `content: null` messages (which transformers 5 drops) and closes the block only after
/// a second call.
pub fn completion_text(content: &str, tool_calls: &[ToolCall], end_of_turn: bool) -> String {
    let mut out = String::from(content);
    if !tool_calls.is_empty() {
        out.push_str("<｜tool▁calls▁begin｜>");
        for (i, call) in tool_calls.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            out.push_str("<｜tool▁call▁begin｜>function<｜tool▁sep｜>");
            out.push_str(&call.name);
            out.push_str("\n```json\n");
            match &call.arguments {
                Arguments::Raw(text) => out.push_str(text),
                Arguments::Object(value) => {
                    out.push_str(&dumps_json(value, &DumpOptions::default()))
                }
            }
            out.push_str("\n```<｜tool▁call▁end｜>");
        }
        out.push_str("<｜tool▁calls▁end｜>");
    }
    if end_of_turn {
        out.push_str("<｜end▁of▁sentence｜>");
    }
    out
}
