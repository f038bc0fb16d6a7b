//! Chat templates rendered with minijinja in an environment that matches transformers.

/// A compiled chat template.
pub struct ChatTemplate {}

impl ChatTemplate {
    pub fn new(_source: &str) -> Result<Self, super::ModelError> {
        todo!()
    }
    /// Render with a context object (`messages`, `tools`, `add_generation_prompt`, kwargs, special tokens).
    pub fn render(&self, _context: &serde_json::Value) -> Result<String, super::ModelError> {
        todo!()
    }
}
