//! One file per model family: its template quirks, pre-processing and native output syntax.
//!
//! A family is data ([`FamilySpec`]: markers, built-in template, thinking switch) plus the few
//! functions that differ (Kimi's tool pre-processing and native completion text live in
//! `kimi.rs`), plus native twins of the family's known chat templates (`model/native.rs`; Kimi's
//! in `kimi_render.rs`). Adding a family means adding a file here and a line in [`Family::ALL`].

pub mod deepseek_v3;
pub mod generic;
pub mod kimi;
pub mod kimi_render;
pub mod kimi_tools_ts;
pub mod qwen3;

use serde_json::{Map, Value};

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
    /// `None`: the family never thinks, or always does (see [`Family::thinking_enabled`]).
    pub thinking_switch: Option<(&'static str, bool)>,
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

    pub fn spec(self) -> &'static FamilySpec {
        match self {
            Family::KimiK2 => &kimi::K2,
            Family::KimiK2Thinking => &kimi::K2_THINKING,
            Family::KimiK25 => &kimi::K25,
            Family::Qwen3 => &qwen3::SPEC,
            Family::DeepseekV3 => &deepseek_v3::SPEC,
            Family::Generic => &generic::SPEC,
        }
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
    /// and the template text that will be used.
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
        if let Some(family) = kimi::detect(model_type, &tokenizer_text, template) {
            return family;
        }
        if qwen3::detect(&tokenizer_text, template) {
            return Family::Qwen3;
        }
        if deepseek_v3::detect(&tokenizer_text, template) {
            return Family::DeepseekV3;
        }
        Family::Generic
    }

    /// Whether this request has the model think, from `chat_template_kwargs`.
    pub fn thinking_enabled(self, kwargs: Option<&Map<String, Value>>) -> bool {
        match self {
            Family::KimiK2Thinking => true,
            _ => match self.spec().thinking_switch {
                Some((key, default)) => match kwargs.and_then(|k| k.get(key)) {
                    // The templates test `is false`: only a literal `false` switches it off.
                    Some(Value::Bool(false)) => false,
                    Some(Value::Bool(true)) => true,
                    _ => default,
                },
                None => false,
            },
        }
    }
}
