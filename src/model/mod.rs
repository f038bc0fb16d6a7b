//! The token-exact core: tokenizers, chat templates and per-family profiles.
//!
//! A [`Profile`] bundles what one model family needs to turn messages into the exact token ids
//! the serving stack produces: its [`Tokenizer`], its [`ChatTemplate`] and the family's own
//! pre-processing and native output syntax (one file per family under `family/`). The known
//! templates also have native twins (`native.rs`) that render them without the template engine.

pub mod assets;
mod bpe;
pub mod client_messages;
pub mod family;
mod kimi_ascii;
pub mod native;
pub mod profile;
mod recent;
mod split;
pub mod template;
pub mod tiktoken;
pub mod tokenizer;
mod word_cache;

pub use native::{JsonRenderInput, RenderPath, Tools};
pub use profile::{AssistantTurn, LoadOptions, Profile, RenderInput};
pub use template::ChatTemplate;
pub use tokenizer::Tokenizer;

/// Errors from loading or using a model directory.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("{path}: {message}")]
    File { path: String, message: String },
    #[error("chat template: {0}")]
    Template(String),
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    #[error("{0}")]
    Other(String),
}
