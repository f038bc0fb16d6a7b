//! OpenAI-compatible wire types, OpenRouter extensions, SSE and error classification.

pub mod assemble;
pub mod body;
pub mod classify;
pub mod client;
mod client_config;
pub mod did_you_mean;
pub mod error;
mod error_class;
pub mod facts;
pub mod json_limits;
pub mod openrouter;
pub mod openrouter_options;
pub mod options;
mod options_error;
pub mod proxy;
pub mod rate_limits;
pub mod secret;
mod server_kind;
pub mod sse;
mod transport;
pub mod usage_check;

pub use body::{build_body, serialize_body, BodyFields};
pub use client::{BuildError, ChatOutcome, Client, Endpoint, RawChatOutcome, Timeouts};
pub use client_config::ClientConfig;
pub use error::ApiError;
pub use error_class::ErrorClass;
pub use facts::{ResponseFacts, UsageNumbers};
pub use openrouter_options::{ProviderRouting, Reasoning};
pub use options::RequestOptions;
pub use options_error::OptionsError;
pub use proxy::Proxies;
pub use rate_limits::Advertised;
pub use secret::ApiKey;
pub use server_kind::ServerKind;
