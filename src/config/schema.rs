//! The configuration's tables, their defaults, and parsing a file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::ConfigError;
use crate::api::did_you_mean;
use crate::api::{RequestOptions, ServerKind, Timeouts};

/// One `[[endpoints]]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointConfig {
    pub name: String,
    pub base_url: String,
    #[serde(default, with = "kind_spelling")]
    pub kind: ServerKind,
    #[serde(default = "default_weight")]
    pub weight: u32,
    /// A file holding the key (first line, trimmed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_file: Option<PathBuf>,
    /// An environment variable holding the key (default for `openrouter`: `OPENROUTER_API_KEY`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// The server software's version (e.g. vLLM `0.11.0`), when known: recorded in the manifest,
    /// because servers of one kind shape answers differently across versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
    /// Whether the server puts a space on each side of every special token it detokenizes
    /// (vLLM's `spaces_between_special_tokens`). `None`: the kind's default
    /// ([`ServerKind::default_spaces_around_special_tokens`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spaces_around_special_tokens: Option<bool>,
    /// Present only so an inline key can be refused with a clear message; never used.
    #[serde(default, skip_serializing)]
    api_key: Option<toml::Value>,
    /// The demo's in-process simulator (`builtin_sim = true` in the file `demo` writes): its port
    /// changes every run, so the endpoint is fingerprinted by name and kind, not by URL.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub builtin_sim: bool,
}

fn default_weight() -> u32 {
    1
}

impl EndpointConfig {
    pub fn new(name: impl Into<String>, base_url: impl Into<String>, kind: ServerKind) -> Self {
        EndpointConfig {
            name: name.into(),
            base_url: base_url.into(),
            kind,
            weight: 1,
            api_key_file: None,
            api_key_env: None,
            server_version: None,
            spaces_around_special_tokens: None,
            api_key: None,
            builtin_sim: false,
        }
    }

    /// Whether this endpoint's server puts spaces around special tokens (explicit or the kind's default).
    pub fn spaces_around_special_tokens(&self) -> bool {
        self.spaces_around_special_tokens
            .unwrap_or_else(|| self.kind.default_spaces_around_special_tokens())
    }
}

/// `kind = "…"`: the configuration's spellings of a [`ServerKind`] ([`ServerKind::name`] and its
/// `FromStr`: `openrouter`, `vllm`, `sglang`, `llamacpp`, `generic`).
mod kind_spelling {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::api::ServerKind;

    pub fn serialize<S: Serializer>(kind: &ServerKind, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(kind.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<ServerKind, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// `[concurrency]`: requests in flight adapt between `min` and `max` (AIMD), starting at `initial`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConcurrencyConfig {
    #[serde(default = "default_initial")]
    pub initial: usize,
    #[serde(default = "default_min")]
    pub min: usize,
    #[serde(default = "default_max")]
    pub max: usize,
    /// Optional cap on request starts per minute (all endpoints together).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_per_minute: Option<u32>,
}

fn default_initial() -> usize {
    64
}
fn default_min() -> usize {
    1
}
fn default_max() -> usize {
    1024
}

impl Default for ConcurrencyConfig {
    fn default() -> Self {
        ConcurrencyConfig {
            initial: default_initial(),
            min: default_min(),
            max: default_max(),
            requests_per_minute: None,
        }
    }
}

/// `[timeouts]`, in seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeoutsConfig {
    #[serde(default = "default_connect")]
    pub connect_s: f64,
    #[serde(default = "default_first_byte")]
    pub first_byte_s: f64,
    #[serde(default = "default_idle")]
    pub idle_s: f64,
    #[serde(default = "default_total")]
    pub total_s: f64,
}

fn default_connect() -> f64 {
    10.0
}
fn default_first_byte() -> f64 {
    300.0
}
fn default_idle() -> f64 {
    120.0
}
fn default_total() -> f64 {
    1800.0
}

impl Default for TimeoutsConfig {
    fn default() -> Self {
        TimeoutsConfig {
            connect_s: default_connect(),
            first_byte_s: default_first_byte(),
            idle_s: default_idle(),
            total_s: default_total(),
        }
    }
}

impl TimeoutsConfig {
    pub fn to_timeouts(&self) -> Timeouts {
        Timeouts {
            connect: Duration::from_secs_f64(self.connect_s),
            first_byte: Duration::from_secs_f64(self.first_byte_s),
            idle: Duration::from_secs_f64(self.idle_s),
            total: Duration::from_secs_f64(self.total_s),
        }
    }
}

/// `[retry]`: transient failures are retried with exponential backoff and full jitter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryConfig {
    /// Attempts per prompt within one session (a resume starts a fresh count).
    #[serde(default = "default_attempts")]
    pub max_attempts: u32,
    #[serde(default = "default_base_ms")]
    pub base_ms: u64,
    #[serde(default = "default_cap_s")]
    pub cap_s: f64,
}

fn default_attempts() -> u32 {
    6
}
fn default_base_ms() -> u64 {
    500
}
fn default_cap_s() -> f64 {
    60.0
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            max_attempts: default_attempts(),
            base_ms: default_base_ms(),
            cap_s: default_cap_s(),
        }
    }
}

/// `[budget]`: a spending cap over the whole run (all sessions) and the price table used when the
/// server reports no `usage.cost`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// Dollars per million prompt tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_usd_per_mtok: Option<f64>,
    /// Dollars per million completion tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_usd_per_mtok: Option<f64>,
}

/// The whole run configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    #[serde(default)]
    pub endpoints: Vec<EndpointConfig>,
    #[serde(
        default = "default_request",
        deserialize_with = "request_with_optional_model"
    )]
    pub request: RequestOptions,
    #[serde(default)]
    pub concurrency: ConcurrencyConfig,
    #[serde(default)]
    pub timeouts: TimeoutsConfig,
    #[serde(default)]
    pub retry: RetryConfig,
    #[serde(default)]
    pub budget: BudgetConfig,
    /// Seconds in-flight requests get to finish after a stop (Ctrl-C, budget, fatal error).
    #[serde(default = "default_grace")]
    pub grace_s: f64,
    /// Largest answer read, in MB (a body, one SSE line or event, an answer assembled from a
    /// stream); default 32 (`api::json_limits::DEFAULT_MAX_ANSWER_BYTES`). Bounds memory per
    /// request in flight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_answer_mb: Option<u64>,
    /// Start even when the projected cost exceeds the OpenRouter credit left, and resume a run
    /// whose settings changed.
    #[serde(default)]
    pub force: bool,
}

fn default_grace() -> f64 {
    30.0
}

fn default_request() -> RequestOptions {
    RequestOptions {
        tools_as_parameter: true,
        ..RequestOptions::default()
    }
}

/// `[request]` may leave `model` to `--model`; an empty model is reported by validation.
fn request_with_optional_model<'de, D>(deserializer: D) -> Result<RequestOptions, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let mut table = serde_json::Map::<String, serde_json::Value>::deserialize(deserializer)?;
    // RequestOptions takes what it knows and ignores the rest: a misspelt key would silently
    // fall back to a default.
    let known = did_you_mean::field_names::<RequestOptions>();
    if let Some(unknown) = table.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(serde::de::Error::custom(format!(
            "in [request]: {}",
            did_you_mean::unknown_field(unknown, known)
        )));
    }
    table
        .entry("model")
        .or_insert_with(|| serde_json::Value::from(""));
    serde_json::from_value(serde_json::Value::Object(table))
        .map_err(|e| serde::de::Error::custom(format!("in [request]: {e}")))
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            endpoints: Vec::new(),
            request: default_request(),
            concurrency: ConcurrencyConfig::default(),
            timeouts: TimeoutsConfig::default(),
            retry: RetryConfig::default(),
            budget: BudgetConfig::default(),
            grace_s: default_grace(),
            max_answer_mb: None,
            force: false,
        }
    }
}

impl RunConfig {
    /// Parse a TOML file. Unknown keys are errors (a typo must not silently fall back to a default).
    /// A `draftgen.toml`'s `[job]` table is `draftgen run`'s, not the run's: it is left out.
    pub fn from_file(path: &Path) -> Result<RunConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        RunConfig::from_toml(&super::job::without_job_table(&text), path)
    }

    /// Parse TOML text; `path` is only for messages.
    pub fn from_toml(text: &str, path: &Path) -> Result<RunConfig, ConfigError> {
        let config: RunConfig = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: did_you_mean::explain(e.to_string().trim_end()),
        })?;
        if let Some(endpoint) = config.endpoints.iter().find(|e| e.api_key.is_some()) {
            return Err(ConfigError::InlineKey {
                path: path.to_path_buf(),
                endpoint: endpoint.name.clone(),
            });
        }
        Ok(config)
    }

    pub fn grace(&self) -> Duration {
        Duration::from_secs_f64(self.grace_s)
    }

    /// The largest answer read, in bytes.
    pub fn max_answer_bytes(&self) -> usize {
        self.max_answer_mb
            .map_or(crate::api::json_limits::DEFAULT_MAX_ANSWER_BYTES, |mb| {
                usize::try_from(mb.saturating_mul(1 << 20)).unwrap_or(usize::MAX)
            })
    }
}
