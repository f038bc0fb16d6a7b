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
//! - No built-in template: the model's `tokenizer_config.json` carries it.

use super::FamilySpec;
use crate::api::{Arguments, ToolCall};
use crate::model::pyjson::{dumps_json, DumpOptions};

pub const SPEC: FamilySpec = FamilySpec {
    name: "qwen3",
    builtin_template: None,
    end_of_turn: Some("<|im_end|>"),
    reasoning_close: Some("</think>"),
    tool_section_begin: Some("<tool_call>"),
    thinking_switch: Some(("enable_thinking", true)),
};

/// ChatML with `<think>` in the template or tokenizer.
pub fn detect(tokenizer_config: &str, template: &str) -> bool {
    let has = |needle: &str| tokenizer_config.contains(needle) || template.contains(needle);
    has("<|im_start|>") && has("<think>")
}

/// The text a Qwen3 model generated for one turn after the generation prompt: the inverse of
/// vLLM's `qwen3` reasoning parser (`partition("</think>")`, nothing stripped) and `hermes` tool
/// parser (content is the text before the first `<tool_call>`).
///
/// Fields as vLLM returns them are written back verbatim; fields a provider stripped (reasoning
/// not starting with `\n`, content not starting with `\n`) are laid out as the template writes
/// them (`<think>\n…\n</think>\n\n`, `\n` before the first tool call after text).
pub fn completion_text(
    thinking: bool,
    reasoning: Option<&str>,
    reasoning_closed: bool,
    content: &str,
    tool_calls: &[ToolCall],
    end_of_turn: bool,
) -> String {
    let mut out = String::new();
    let mut content_stripped = false;
    if thinking {
        out.push_str(THINK_OPEN);
        match reasoning {
            Some(r) if r.starts_with('\n') => out.push_str(r),
            Some(r) => {
                out.push('\n');
                out.push_str(r.trim_matches('\n'));
                out.push('\n');
            }
            None => out.push_str("\n\n"),
        }
        if !reasoning_closed {
            return out;
        }
        out.push_str(THINK_CLOSE);
        if !content.starts_with('\n') {
            out.push_str("\n\n");
            content_stripped = true;
        }
    }
    out.push_str(content);
    for (i, call) in tool_calls.iter().enumerate() {
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
    if end_of_turn {
        out.push_str(END_OF_TURN);
    }
    out
}

const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";
const END_OF_TURN: &str = "<|im_end|>";
