//! OpenAI-compatible wire types, OpenRouter extensions, SSE and error classification.

pub mod assemble;
pub mod classify;
pub mod client;
pub mod error;
mod error_class;
pub mod facts;
pub mod openrouter;
pub mod proxy;
pub mod request;
pub mod secret;
pub mod sse;
mod transport;

pub use client::{
    BuildError, ChatOutcome, Client, ClientConfig, Endpoint, RawChatOutcome, Timeouts,
};
pub use error::ApiError;
pub use error_class::ErrorClass;
pub use facts::{ResponseFacts, UsageNumbers};
pub use proxy::Proxies;
pub use request::{
    build_body, serialize_body, BodyFields, OptionsError, ProviderRouting, Reasoning,
    RequestOptions, ServerKind,
};
pub use secret::ApiKey;
