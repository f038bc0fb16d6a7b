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
