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
