//! OpenAI-compatible wire types, OpenRouter extensions, SSE and error classification.

pub mod assemble;
pub mod classify;
pub mod client;
pub mod completion;
pub mod error;
pub mod openrouter;
pub mod request;
pub mod secret;
pub mod sse;

pub use client::{BuildError, ChatOutcome, Client, ClientConfig, Endpoint, Timeouts};
pub use completion::{Arguments, Completion, CompletionError, ToolCall, Usage};
pub use error::ApiError;
pub use request::{
    build_body, serialize_body, OptionsError, ProviderRouting, Reasoning, RequestOptions,
    ServerKind,
};
pub use secret::ApiKey;
