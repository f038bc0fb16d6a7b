//! A model family's profile: tokenizer + template + the family's own rules; auto-detected from
//! the model directory, overridable with `--profile`.

use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

use super::{ChatTemplate, ModelError, Tokenizer};

/// How to load a profile.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// `--profile NAME`; `None` auto-detects.
    pub profile: Option<String>,
    /// `--chat-template FILE`: overrides the model directory's template.
    pub chat_template: Option<PathBuf>,
}

/// What a render needs.
#[derive(Debug, Clone, Default)]
pub struct RenderInput<'a> {
    pub messages: &'a [Value],
    pub tools: Option<&'a [Value]>,
    pub add_generation_prompt: bool,
    pub chat_template_kwargs: Option<&'a Map<String, Value>>,
}

/// A loaded model family profile.
pub struct Profile {
    pub name: String,
    pub tokenizer: Tokenizer,
    pub template: ChatTemplate,
}

impl Profile {
    pub fn load(_dir: &Path, _options: &LoadOptions) -> Result<Self, ModelError> {
        todo!()
    }
    /// Render the conversation to text, exactly as the family's serving stack does.
    pub fn render(&self, _input: &RenderInput) -> Result<String, ModelError> {
        todo!()
    }
    /// Render and tokenize.
    pub fn render_ids(&self, input: &RenderInput) -> Result<Vec<u32>, ModelError> {
        Ok(self.tokenizer.encode(&self.render(input)?))
    }
}
