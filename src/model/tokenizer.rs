//! One tokenizer type over tiktoken rank files and Hugging Face `tokenizer.json`.

/// A model's tokenizer. Encoding recognizes special-token literals, as the serving stack does.
pub struct Tokenizer {}

impl Tokenizer {
    /// Load from a model directory (`tiktoken.model` or `tokenizer.json`, plus `tokenizer_config.json`).
    pub fn from_dir(_dir: &std::path::Path) -> Result<Self, super::ModelError> {
        todo!()
    }
    /// Encode text; special-token literals become their special ids.
    pub fn encode(&self, _text: &str) -> Vec<u32> {
        todo!()
    }
    /// Encode text with special-token literals treated as plain text.
    pub fn encode_ordinary(&self, _text: &str) -> Vec<u32> {
        todo!()
    }
    /// Decode ids to text (lossy on invalid UTF-8).
    pub fn decode(&self, _ids: &[u32]) -> String {
        todo!()
    }
    pub fn token_to_id(&self, _token: &str) -> Option<u32> {
        todo!()
    }
    pub fn id_to_token(&self, _id: u32) -> Option<String> {
        todo!()
    }
}
