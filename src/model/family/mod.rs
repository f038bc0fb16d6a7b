//! One file per model family: its template quirks, pre-processing and native output syntax.
//!
//! A family is data ([`FamilySpec`]: markers, built-in template, thinking switch, the syntax
//! servers parse, what history keeps) plus the few functions that differ ([`FamilyRules`]:
//! detection, the tokenizer's pre-processing of the template context, the native completion text
//! of a turn, native tool-call ids), both in the family's file, plus native twins of the family's
//! known chat templates (`model/native.rs`; Kimi's in `kimi_render.rs`). [`Profile`] and the
//! rest of the crate ask the family through these and never branch on which family it is.
//! Adding a family is its file (spec + `FamilyRules` impl + tests) and one line each in
//! [`Family`], [`Family::ALL`] and [`Family::rules`].
//!
//! [`Profile`]: crate::model::Profile

pub mod deepseek_v3;
pub mod generic;
pub mod kimi;
pub mod kimi_render;
pub mod kimi_tools_ts;
pub mod qwen3;

use serde_json::{Map, Value};

use super::profile::AssistantTurn;
use super::ModelError;

/// What a family's token stream looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FamilySpec {
    /// The profile name (`--profile`).
    pub name: &'static str,
    /// The template used when the model directory has none.
    pub builtin_template: Option<&'static str>,
    /// The token that ends an assistant turn; `None`: the tokenizer's `eos_token`.
    pub end_of_turn: Option<&'static str>,
    /// The marker that closes reasoning, for thinking families.
    pub reasoning_close: Option<&'static str>,
    /// The marker that opens the native tool-call syntax.
    pub tool_section_begin: Option<&'static str>,
    /// The `chat_template_kwargs` switch that turns thinking on or off, and its default;
    /// `None`: the family never thinks, or always does ([`FamilySpec::always_thinks`]).
    pub thinking_switch: Option<(&'static str, bool)>,
    /// The model thinks whatever the request says (K2-Thinking).
    pub always_thinks: bool,
    /// The output syntax a server's reasoning and tool parsers read; `None`: none known (the
    /// server returns the text as `content`).
    pub syntax: Option<Syntax>,
    /// The serving detokenizer can put a space around every added token (the slow,
    /// tiktoken-based Kimi tokenizer under vLLM's `spaces_between_special_tokens`); fast
    /// tokenizers never do.
    pub detokenizer_spaces: bool,
    /// History keeps `content: null` on an assistant message with tool calls, as transformers 4
    /// did (DeepSeek-V3's template renders the calls only then; transformers 5 drops the key).
    pub keeps_null_content_with_tool_calls: bool,
    /// The template never renders a request's `tools` (DeepSeek-V3's has none).
    pub template_ignores_tools: bool,
}

/// The model family's output syntax, which decides which parsers a server runs on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Syntax {
    /// Kimi K2/K2.5: `kimi_k2` reasoning and tool parsers; call ids are in the token stream.
    #[default]
    Kimi,
    /// Qwen3: `qwen3` reasoning + `hermes` tool parser; arguments re-serialized, ids random.
    Hermes,
    /// DeepSeek-V3: `deepseek_v3` tool parser, no reasoning; ids random.
    DeepseekV3,
}

impl Syntax {
    /// The syntax `family` writes, if servers know one ([`FamilySpec::syntax`]).
    pub fn of(family: Family) -> Option<Syntax> {
        family.spec().syntax
    }

    /// Whether the model writes call ids into its token stream.
    pub fn ids_in_stream(self) -> bool {
        self == Syntax::Kimi
    }
}

/// What one family does differently, as functions (the data is its [`FamilySpec`]). Each
/// family's file implements it; the defaults are what a family without native rules does.
pub trait FamilyRules: Sync {
    fn spec(&self) -> &'static FamilySpec;

    /// Whether the model directory is this family's, from `config.json`'s `model_type`, the
    /// text of `tokenizer_config.json` and the template source (each may be empty).
    fn detect(&self, _model_type: &str, _tokenizer_config: &str, _template: &str) -> bool {
        false
    }

    /// The family tokenizer's own pre-processing before the template runs: puts `tools` (and
    /// whatever else the family's `apply_chat_template` adds) into the template's context.
    fn prepare_context(&self, tools: Option<&[Value]>, context: &mut Map<String, Value>) {
        context.insert(
            "tools".into(),
            tools.map_or(Value::Null, |t| Value::Array(t.to_vec())),
        );
    }

    /// The exact text the model generated for `turn` after the generation prompt, written in the
    /// family's native syntax; `None`: isolate it from the template's render instead (see
    /// [`Profile::completion_text`](crate::model::Profile::completion_text)).
    fn completion_text(
        &self,
        _thinking: bool,
        _turn: &AssistantTurn,
    ) -> Option<Result<String, ModelError>> {
        None
    }

    /// The native id of the conversation's n-th tool call; `None`: the token stream has no ids.
    fn native_tool_call_id(&self, _name: &str, _n: usize) -> Option<String> {
        None
    }

    /// Whether `id` has the family's native form (families without ids accept any).
    fn is_native_tool_call_id(&self, _id: &str) -> bool {
        true
    }
}

/// The model families draftgen knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    KimiK2,
    KimiK2Thinking,
    KimiK25,
    Qwen3,
    DeepseekV3,
    Generic,
}

impl Family {
    pub const ALL: [Family; 6] = [
        Family::KimiK2,
        Family::KimiK2Thinking,
        Family::KimiK25,
        Family::Qwen3,
        Family::DeepseekV3,
        Family::Generic,
    ];

    /// The family's rules: the one place that maps a family to its file.
    pub fn rules(self) -> &'static dyn FamilyRules {
        match self {
            Family::KimiK2 => &kimi::K2_RULES,
            Family::KimiK2Thinking => &kimi::K2_THINKING_RULES,
            Family::KimiK25 => &kimi::K25_RULES,
            Family::Qwen3 => &qwen3::Qwen3,
            Family::DeepseekV3 => &deepseek_v3::DeepseekV3,
            Family::Generic => &generic::Generic,
        }
    }

    pub fn spec(self) -> &'static FamilySpec {
        self.rules().spec()
    }

    /// The syntax servers parse in this family's output ([`FamilySpec::syntax`]).
    pub fn syntax(self) -> Option<Syntax> {
        self.spec().syntax
    }

    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// The family named `name` (`kimi-k2.5`, `qwen3`, …).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The names `--profile` accepts, for error messages.
    pub fn names() -> String {
        Self::ALL.map(Family::name).join(", ")
    }

    pub fn is_kimi(self) -> bool {
        matches!(
            self,
            Family::KimiK2 | Family::KimiK2Thinking | Family::KimiK25
        )
    }

    /// Guess the family from `config.json` and `tokenizer_config.json` (either may be absent)
    /// and the template text that will be used: the first family in [`Family::ALL`] whose
    /// rules recognize them, else `generic`.
    pub fn detect(
        config: Option<&Value>,
        tokenizer_config: Option<&Value>,
        template: Option<&str>,
    ) -> Self {
        let model_type = config
            .and_then(|c| c.get("model_type"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let tokenizer_text = tokenizer_config.map(Value::to_string).unwrap_or_default();
        let template = template.unwrap_or_default();
        Self::ALL
            .into_iter()
            .find(|f| f.rules().detect(model_type, &tokenizer_text, template))
            .unwrap_or(Family::Generic)
    }

    /// Whether this request has the model think, from `chat_template_kwargs`.
    pub fn thinking_enabled(self, kwargs: Option<&Map<String, Value>>) -> bool {
        let spec = self.spec();
        if spec.always_thinks {
            return true;
        }
        match spec.thinking_switch {
            Some((key, default)) => match kwargs.and_then(|k| k.get(key)) {
                // The templates test `is false`: only a literal `false` switches it off.
                Some(Value::Bool(false)) => false,
                Some(Value::Bool(true)) => true,
                _ => default,
            },
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_family_is_found_by_its_name_and_owns_its_spec() {
        for family in Family::ALL {
            assert_eq!(Family::from_name(family.name()), Some(family));
            assert!(std::ptr::eq(family.spec(), family.rules().spec()));
            assert_eq!(Syntax::of(family), family.spec().syntax);
        }
    }

    #[test]
    fn detection_goes_through_the_families_in_order() {
        let detect = |model_type: &str, tokenizer: &str, template: &str| {
            Family::detect(
                Some(&json!({ "model_type": model_type })),
                Some(&json!({ "added": tokenizer })),
                Some(template),
            )
        };
        assert_eq!(detect("kimi_k25", "", ""), Family::KimiK25);
        assert_eq!(detect("kimi_k2", "", "<think>"), Family::KimiK2Thinking);
        assert_eq!(detect("", "<|im_middle|>", ""), Family::KimiK2);
        // Kimi before Qwen3: a Kimi tokenizer with ChatML-looking text is still Kimi.
        assert_eq!(
            detect("", "<|im_middle|><|im_start|>", "<think>"),
            Family::KimiK2Thinking
        );
        assert_eq!(detect("qwen3", "<|im_start|>", "<think>"), Family::Qwen3);
        assert_eq!(
            detect("deepseek_v3", "<｜begin▁of▁sentence｜>", ""),
            Family::DeepseekV3
        );
        assert_eq!(detect("llama", "", "{{ messages }}"), Family::Generic);
    }

    #[test]
    fn thinking_follows_each_familys_switch() {
        let off = json!({"thinking": false, "enable_thinking": false});
        let off = off.as_object();
        for (family, default, switched_off) in [
            (Family::KimiK2, false, false),
            (Family::KimiK2Thinking, true, true),
            (Family::KimiK25, true, false),
            (Family::Qwen3, true, false),
            (Family::DeepseekV3, false, false),
            (Family::Generic, false, false),
        ] {
            assert_eq!(family.thinking_enabled(None), default, "{family:?}");
            assert_eq!(family.thinking_enabled(off), switched_off, "{family:?}");
        }
    }
}
