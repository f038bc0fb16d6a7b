//! Qwen3-2507: Qwen3's July 2025 update, split into two models that no longer switch thinking.
//!
//! - Instruct (`qwen3-2507`): never thinks; the generation prompt is `<|im_start|>assistant\n`
//!   and no `enable_thinking` is read.
//! - Thinking (`qwen3-2507-thinking`): always thinks; the generation prompt already ends with
//!   `<think>\n`, so the model writes `REASONING\n</think>\n\nCONTENT` without the opener.
//! - Otherwise Qwen3's format (`qwen3.rs`): ChatML, hermes-style `<tool_call>` JSON calls, no ids
//!   in the token stream, `<|im_end|>` ending a turn. The templates also take a non-string
//!   `content` as `""`, and write history arguments that are objects with `tojson`: a request's
//!   JSON-string arguments are parsed first, as vLLM does.
//! - Built-in templates: `templates/qwen3-2507-{instruct,thinking}.jinja`, the `chat_template`
//!   of the `Qwen3-Instruct` / `Qwen3-Thinking` entries in PyPI `xinference` 4.1.0
//!   (`xinference/model/llm/models/*.json`, Apache-2.0; source and hashes in
//!   `tests/assets/README.md`). Tokenizer: Qwen3's.

use super::qwen3::{self, CALL_OPEN, END_OF_TURN, THINK_CLOSE};
use super::AssistantTurn;
use super::{Family, FamilyRules, FamilySpec, K2vvThreshold, Syntax};
use crate::model::ModelError;

pub const INSTRUCT: FamilySpec = FamilySpec {
    name: "qwen3-2507",
    // Before Qwen3, whose detection (ChatML and `<think>`) matches these templates too.
    detect_order: 18,
    builtin_template: Some(include_str!("templates/qwen3-2507-instruct.jinja")),
    end_of_turn: Some(END_OF_TURN),
    reasoning_close: None,
    tool_section_begin: Some(CALL_OPEN),
    thinking_switch: None,
    always_thinks: false,
    syntax: Some(Syntax::Hermes),
    detokenizer_spaces: false,
    keeps_null_content_with_tool_calls: false,
    template_ignores_tools: false,
    native_twins: &[],
    k2vv: K2vvThreshold::BORROWED_FROM_K2_0905,
    tool_grammar: qwen3::SPEC.tool_grammar,
    distinctive_markers: qwen3::SPEC.distinctive_markers,
};

pub const THINKING: FamilySpec = FamilySpec {
    name: "qwen3-2507-thinking",
    builtin_template: Some(include_str!("templates/qwen3-2507-thinking.jinja")),
    reasoning_close: Some(THINK_CLOSE),
    always_thinks: true,
    k2vv: K2vvThreshold::BORROWED_FROM_K2_THINKING,
    ..INSTRUCT
};

impl Family {
    pub const QWEN3_2507: Family = Family::new(&Qwen3Instruct2507);
    pub const QWEN3_2507_THINKING: Family = Family::new(&Qwen3Thinking2507);
}

// Thinking first: its ids also match the instruct model's rule without `thinking`.
pub const FAMILIES: &[Family] = &[Family::QWEN3_2507_THINKING, Family::QWEN3_2507];

/// The generation prompt of the thinking template, as its source spells it.
const THINKING_PROMPT: &str = r"'<|im_start|>assistant\n<think>\n'";

/// What both templates have and Qwen3's has not: a non-string content read as `""`, and no
/// thinking switch.
fn is_2507_template(template: &str) -> bool {
    template.contains("<|im_start|>")
        && template.contains("{%- if message.content is string %}")
        && template.contains("reasoning_content")
        && !template.contains("enable_thinking")
}

/// The model name of an OpenRouter or Hugging Face id (`qwen/qwen3-235b-a22b-2507`,
/// `Qwen/Qwen3-30B-A3B-Thinking-2507-FP8`), lowercased, when it is a Qwen3-2507 model's.
fn name_2507(model_id: &str) -> Option<String> {
    let id = model_id.to_ascii_lowercase();
    let name = id.rsplit('/').next().unwrap_or_default().to_string();
    (name.starts_with("qwen3-") && name.contains("2507") && !name.contains("coder")).then_some(name)
}

/// Qwen3-2507 Instruct's rules.
pub struct Qwen3Instruct2507;

impl FamilyRules for Qwen3Instruct2507 {
    fn template_reads_argument_objects(&self) -> bool {
        true
    }

    fn spec(&self) -> &'static FamilySpec {
        &INSTRUCT
    }

    fn detect(&self, _model_type: &str, _tokenizer_config: &str, template: &str) -> bool {
        is_2507_template(template) && !template.contains(THINKING_PROMPT)
    }

    fn detect_model_id(&self, model_id: &str) -> bool {
        name_2507(model_id).is_some_and(|name| !name.contains("thinking"))
    }

    fn completion_text(
        &self,
        _thinking: bool,
        turn: &AssistantTurn,
    ) -> Option<Result<String, ModelError>> {
        Some(Ok(qwen3::completion_text(false, turn)))
    }
}

/// Qwen3-2507 Thinking's rules.
pub struct Qwen3Thinking2507;

impl FamilyRules for Qwen3Thinking2507 {
    fn template_reads_argument_objects(&self) -> bool {
        true
    }

    fn spec(&self) -> &'static FamilySpec {
        &THINKING
    }

    fn detect(&self, _model_type: &str, _tokenizer_config: &str, template: &str) -> bool {
        is_2507_template(template) && template.contains(THINKING_PROMPT)
    }

    fn detect_model_id(&self, model_id: &str) -> bool {
        name_2507(model_id).is_some_and(|name| name.contains("thinking"))
    }

    fn completion_text(
        &self,
        _thinking: bool,
        turn: &AssistantTurn,
    ) -> Option<Result<String, ModelError>> {
        Some(Ok(thinking_completion_text(turn)))
    }
}

/// The text a Qwen3-2507 Thinking model generated after the generation prompt (which holds
/// `<think>\n`): the reasoning (all of it when cut there), `\n</think>` (the reasoning's trailing
/// newline written where a provider stripped it, as the template lays it out), then what Qwen3 writes after `</think>`
/// ([`qwen3::completion_text`]: content, `\n\n` before it where stripped, the calls).
pub fn thinking_completion_text(turn: &AssistantTurn) -> String {
    let reasoning = turn.reasoning.as_deref().unwrap_or_default();
    let mut out = String::from(reasoning);
    // Cut inside the reasoning: all of it was sent.
    if !turn.reasoning_closed {
        return out;
    }
    if !reasoning.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(THINK_CLOSE);
    // Qwen3 writes `<think>…</think>` then the rest; the reasoning holds no `</think>` (the
    // parser ends it at the first).
    let qwen3 = qwen3::completion_text(true, turn);
    if let Some((_, rest)) = qwen3.split_once(THINK_CLOSE) {
        out.push_str(rest);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_ids_as_openrouter_and_hugging_face_write_them() {
        for (id, family) in [
            ("qwen/qwen3-235b-a22b-2507", Family::QWEN3_2507),
            ("qwen/qwen3-30b-a3b-instruct-2507", Family::QWEN3_2507),
            ("Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", Family::QWEN3_2507),
            (
                "qwen/qwen3-235b-a22b-thinking-2507",
                Family::QWEN3_2507_THINKING,
            ),
            ("Qwen/Qwen3-4B-Thinking-2507", Family::QWEN3_2507_THINKING),
        ] {
            assert_eq!(Family::from_model_id(id), Some(family), "{id}");
        }
        for id in ["qwen/qwen3-235b-a22b", "qwen/qwen3-coder", "Qwen/Qwen3-8B"] {
            let family = Family::from_model_id(id);
            assert!(
                family != Some(Family::QWEN3_2507) && family != Some(Family::QWEN3_2507_THINKING),
                "{id}"
            );
        }
    }

    #[test]
    fn detected_from_their_templates_before_qwen3() {
        let detect = |template: &str| {
            Family::detect(
                Some(&serde_json::json!({"model_type": "qwen3_moe"})),
                Some(&serde_json::json!({"added": "<|im_start|><think>"})),
                Some(template),
            )
        };
        assert_eq!(
            detect(INSTRUCT.builtin_template.unwrap()),
            Family::QWEN3_2507
        );
        assert_eq!(
            detect(THINKING.builtin_template.unwrap()),
            Family::QWEN3_2507_THINKING
        );
        assert_eq!(detect("<|im_start|>{{ enable_thinking }}"), Family::QWEN3);
    }

    #[test]
    fn thinking_text_starts_after_the_prompts_think() {
        let turn = AssistantTurn {
            reasoning: Some("Sunny?".into()),
            reasoning_closed: true,
            content: "Sunny.".into(),
            end_of_turn: true,
            ..AssistantTurn::default()
        };
        assert_eq!(
            thinking_completion_text(&turn),
            "Sunny?\n</think>\n\nSunny.<|im_end|>"
        );
        let open = AssistantTurn {
            reasoning: Some("Still\n".into()),
            ..AssistantTurn::default()
        };
        assert_eq!(thinking_completion_text(&open), "Still\n");
        let cut = AssistantTurn {
            reasoning: Some("Still".into()),
            ..AssistantTurn::default()
        };
        assert_eq!(thinking_completion_text(&cut), "Still");
        assert!(Family::QWEN3_2507_THINKING.thinking_enabled(None));
        assert!(!Family::QWEN3_2507.thinking_enabled(None));
    }
}
