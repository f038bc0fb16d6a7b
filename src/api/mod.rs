//! OpenAI-compatible wire types, OpenRouter extensions, SSE and error classification.

pub mod client;
pub mod completion;
pub mod error;
pub mod request;
pub mod secret;

pub use client::{ChatOutcome, Client, Endpoint, Timeouts};
pub use completion::{Arguments, Completion, CompletionError, ToolCall, Usage};
pub use error::ApiError;
pub use request::RequestOptions;
pub use secret::ApiKey;
