//! Run configuration for `generate`: a TOML file (`--config run.toml`), overridden by flags and
//! environment, validated once at start with errors that name the offending key.
//!
//! ```toml
//! grace_s = 30                      # Ctrl-C / budget / fatal stop: how long in-flight may finish
//! # max_answer_mb = 32              # largest answer (body, SSE line, assembled stream) read
//!
//! [[endpoints]]
//! name = "openrouter"
//! base_url = "https://openrouter.ai/api/v1"
//! kind = "openrouter"               # openrouter | vllm | sglang | llamacpp | generic
//! weight = 1
//! # server_version = "0.11.0"       # recorded in the manifest: shapes differ between versions
//! # spaces_around_special_tokens = false   # default: true for vllm (its default), false otherwise;
//! #                                 # set for vllm, it is also sent as `spaces_between_special_tokens`
//! # api_key_file = "~/.openrouter-key"   # or api_key_env = "NAME"; openrouter defaults to OPENROUTER_API_KEY
//!
//! [request]                         # api::RequestOptions: model, sampling, reasoning, provider, …
//! model = "moonshotai/kimi-k2.5"
//! max_tokens = 4096
//!
//! [concurrency]
//! initial = 64
//! min = 1
//! max = 1024
//! requests_per_minute = 600         # optional
//!
//! [timeouts]                        # seconds
//! connect_s = 10
//! first_byte_s = 300
//! idle_s = 120
//! total_s = 1800
//!
//! [retry]
//! max_attempts = 6                  # per prompt per session
//! base_ms = 500
//! cap_s = 60
//!
//! [budget]
//! max_cost_usd = 25.0
//! prompt_usd_per_mtok = 0.60        # price table: used when the server reports no usage.cost
//! completion_usd_per_mtok = 2.50
//! ```
//!
//! An API key is never accepted inline in the file (it would end up in shell history, backups and
//! repositories): only from the environment or a key file.
//!
//! `draftgen.toml` ([`job`]) is this configuration plus a `[job]` table for `draftgen run`.
//!
//! The files: [`schema`] (the tables and their defaults, parsing), [`overrides`] (flags over the
//! file), [`validate`] (every setting checked once), [`resolve`] (endpoints with their keys, the
//! manifest's labels and server records).

mod job;
mod overrides;
mod resolve;
mod schema;
#[cfg(test)]
mod tests;
mod validate;

pub use job::{JobConfig, JobFile, Trainer};
pub use overrides::Overrides;
pub use resolve::{is_openrouter_api, no_key_message, ResolvedEndpoint};
pub use schema::{
    BudgetConfig, ConcurrencyConfig, EndpointConfig, RetryConfig, RunConfig, TimeoutsConfig,
};

use std::path::PathBuf;

/// The environment variable an OpenRouter endpoint takes its key from by default.
pub const OPENROUTER_KEY_ENV: &str = "OPENROUTER_API_KEY";

/// Hard upper bound for `concurrency.max` (file descriptors and memory stay sane below it).
pub const MAX_CONCURRENCY_CEILING: usize = 100_000;

/// A configuration problem. Every variant names the file or key and what to do.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: cannot read the config file: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{key}: {message}")]
    Invalid { key: String, message: String },
    #[error(
        "{path}: endpoint {endpoint:?} has an inline `api_key`; keys are never read from the config file — put it in a file and set `api_key_file`, or export {OPENROUTER_KEY_ENV}"
    )]
    InlineKey { path: PathBuf, endpoint: String },
    #[error("{path}: cannot read the API key file (endpoint {endpoint:?}): {source}")]
    KeyFile {
        path: PathBuf,
        endpoint: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: the API key file (endpoint {endpoint:?}) is empty")]
    EmptyKeyFile { path: PathBuf, endpoint: String },
}

fn invalid(key: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key: key.into(),
        message: message.into(),
    }
}
