//! Run configuration for `generate`: a TOML file (`--config run.toml`), overridden by flags and
//! environment, validated once at start with errors that name the offending key.
//!
//! ```toml
//! grace_s = 30                      # Ctrl-C / budget / fatal stop: how long in-flight may finish
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

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::api::{ApiKey, Endpoint, RequestOptions, ServerKind, Timeouts};
use crate::journal::ServerRecord;

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

/// What kind of server an endpoint is; decides the server-specific request fields and whether the
/// OpenRouter credit check runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EndpointKind {
    OpenRouter,
    Vllm,
    Sglang,
    #[serde(alias = "llama_cpp", alias = "llama.cpp")]
    LlamaCpp,
    #[default]
    Generic,
}

impl EndpointKind {
    pub fn server_kind(self) -> ServerKind {
        match self {
            EndpointKind::OpenRouter => ServerKind::OpenRouter,
            EndpointKind::Vllm => ServerKind::Vllm,
            EndpointKind::Sglang => ServerKind::Sglang,
            EndpointKind::LlamaCpp => ServerKind::LlamaCpp,
            EndpointKind::Generic => ServerKind::Generic,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            EndpointKind::OpenRouter => "openrouter",
            EndpointKind::Vllm => "vllm",
            EndpointKind::Sglang => "sglang",
            EndpointKind::LlamaCpp => "llamacpp",
            EndpointKind::Generic => "generic",
        }
    }

    /// Whether this kind of server, left to its defaults, puts a space on each side of every
    /// special token it detokenizes: vLLM does (`spaces_between_special_tokens` defaults to
    /// true); the others are assumed not to.
    pub fn default_spaces_around_special_tokens(self) -> bool {
        self == EndpointKind::Vllm
    }

    /// The kind a bare `--base-url` most likely is.
    pub fn guess(base_url: &str) -> EndpointKind {
        if base_url.contains("openrouter.ai") {
            EndpointKind::OpenRouter
        } else {
            EndpointKind::Generic
        }
    }
}

impl std::str::FromStr for EndpointKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "openrouter" => Ok(EndpointKind::OpenRouter),
            "vllm" => Ok(EndpointKind::Vllm),
            "sglang" => Ok(EndpointKind::Sglang),
            "llamacpp" | "llama_cpp" | "llama.cpp" => Ok(EndpointKind::LlamaCpp),
            "generic" => Ok(EndpointKind::Generic),
            other => Err(format!(
                "unknown endpoint kind {other:?}: expected openrouter, vllm, sglang, llamacpp or generic"
            )),
        }
    }
}

/// One `[[endpoints]]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointConfig {
    pub name: String,
    pub base_url: String,
    #[serde(default)]
    pub kind: EndpointKind,
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
    /// ([`EndpointKind::default_spaces_around_special_tokens`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spaces_around_special_tokens: Option<bool>,
    /// Present only so an inline key can be refused with a clear message; never used.
    #[serde(default, skip_serializing)]
    api_key: Option<toml::Value>,
    /// The demo's in-process simulator: its port changes every run, so the endpoint is
    /// fingerprinted by name and kind, not by URL.
    #[serde(skip)]
    pub builtin_sim: bool,
}

fn default_weight() -> u32 {
    1
}

impl EndpointConfig {
    pub fn new(name: impl Into<String>, base_url: impl Into<String>, kind: EndpointKind) -> Self {
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
            force: false,
        }
    }
}

/// Settings given on the command line (or their environment variables); each replaces the file's.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// Replaces the endpoint list with this one endpoint.
    pub base_url: Option<String>,
    pub kind: Option<EndpointKind>,
    pub model: Option<String>,
    /// Applies to every endpoint.
    pub api_key_file: Option<PathBuf>,
    pub concurrency: Option<usize>,
    pub max_concurrency: Option<usize>,
    pub rpm: Option<u32>,
    pub max_cost_usd: Option<f64>,
    pub max_tokens: Option<u32>,
    pub stream: Option<bool>,
    /// Ask the server for its own token ids (`request.server_token_ids`).
    pub server_token_ids: Option<bool>,
    /// Applies to every endpoint (`server_version`).
    pub server_version: Option<String>,
    /// Applies to every endpoint (`spaces_around_special_tokens`).
    pub spaces_around_special_tokens: Option<bool>,
    pub grace_s: Option<f64>,
    pub force: bool,
}

impl RunConfig {
    /// Parse a TOML file. Unknown keys are errors (a typo must not silently fall back to a default).
    pub fn from_file(path: &Path) -> Result<RunConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        RunConfig::from_toml(&text, path)
    }

    /// Parse TOML text; `path` is only for messages.
    pub fn from_toml(text: &str, path: &Path) -> Result<RunConfig, ConfigError> {
        let config: RunConfig = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.to_string().trim_end().to_string(),
        })?;
        if let Some(endpoint) = config.endpoints.iter().find(|e| e.api_key.is_some()) {
            return Err(ConfigError::InlineKey {
                path: path.to_path_buf(),
                endpoint: endpoint.name.clone(),
            });
        }
        Ok(config)
    }

    /// Apply command-line overrides.
    pub fn apply(&mut self, o: Overrides) {
        if let Some(url) = o.base_url {
            let kind = o.kind.unwrap_or_else(|| EndpointKind::guess(&url));
            self.endpoints = vec![EndpointConfig::new(kind.name(), url, kind)];
        } else if let Some(kind) = o.kind {
            self.endpoints.iter_mut().for_each(|e| e.kind = kind);
        }
        if let Some(version) = o.server_version {
            for e in &mut self.endpoints {
                e.server_version = Some(version.clone());
            }
        }
        if let Some(spaces) = o.spaces_around_special_tokens {
            for e in &mut self.endpoints {
                e.spaces_around_special_tokens = Some(spaces);
            }
        }
        if let Some(file) = o.api_key_file {
            for e in &mut self.endpoints {
                e.api_key_file = Some(file.clone());
            }
        }
        if let Some(model) = o.model {
            self.request.model = model;
        }
        if let Some(n) = o.concurrency {
            self.concurrency.initial = n;
            // Asking for N in flight means a ceiling of at least N.
            self.concurrency.max = self.concurrency.max.max(n);
        }
        if let Some(n) = o.max_concurrency {
            self.concurrency.max = n;
            self.concurrency.initial = self.concurrency.initial.min(n);
        }
        if let Some(rpm) = o.rpm {
            self.concurrency.requests_per_minute = Some(rpm);
        }
        if let Some(x) = o.max_cost_usd {
            self.budget.max_cost_usd = Some(x);
        }
        if let Some(n) = o.max_tokens {
            self.request.max_tokens = Some(n);
        }
        if let Some(stream) = o.stream {
            self.request.stream = stream;
        }
        if let Some(ids) = o.server_token_ids {
            self.request.server_token_ids = ids;
        }
        if let Some(g) = o.grace_s {
            self.grace_s = g;
        }
        self.force |= o.force;
    }

    /// Check every setting; the error names the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.endpoints.is_empty() {
            return Err(invalid(
                "endpoints",
                "no endpoint: pass --base-url or add an [[endpoints]] table to the config",
            ));
        }
        let mut names = std::collections::HashSet::new();
        for (i, e) in self.endpoints.iter().enumerate() {
            let key = format!("endpoints[{i}]");
            if e.name.trim().is_empty() {
                return Err(invalid(format!("{key}.name"), "must not be empty"));
            }
            if !names.insert(e.name.as_str()) {
                return Err(invalid(
                    format!("{key}.name"),
                    format!(
                        "{:?} is used by two endpoints; names must be unique",
                        e.name
                    ),
                ));
            }
            if !(e.base_url.starts_with("http://") || e.base_url.starts_with("https://")) {
                return Err(invalid(
                    format!("{key}.base_url"),
                    format!(
                        "{:?} is not an http(s) URL (expected e.g. https://openrouter.ai/api/v1)",
                        e.base_url
                    ),
                ));
            }
            if e.weight == 0 {
                return Err(invalid(format!("{key}.weight"), "must be at least 1"));
            }
            let mut opts = self.request.clone();
            opts.server_kind = e.kind.server_kind();
            opts.validate().map_err(|err| {
                invalid(
                    format!("request (for endpoint {:?})", e.name),
                    err.to_string(),
                )
            })?;
        }
        let c = &self.concurrency;
        if c.min == 0 {
            return Err(invalid("concurrency.min", "must be at least 1"));
        }
        if c.max > MAX_CONCURRENCY_CEILING {
            return Err(invalid(
                "concurrency.max",
                format!(
                    "{} is above the supported ceiling {MAX_CONCURRENCY_CEILING}",
                    c.max
                ),
            ));
        }
        if c.min > c.max {
            return Err(invalid(
                "concurrency.min",
                format!("{} is above concurrency.max {}", c.min, c.max),
            ));
        }
        if c.initial < c.min || c.initial > c.max {
            return Err(invalid(
                "concurrency.initial",
                format!(
                    "{} must be between min {} and max {}",
                    c.initial, c.min, c.max
                ),
            ));
        }
        if c.requests_per_minute == Some(0) {
            return Err(invalid(
                "concurrency.requests_per_minute",
                "must be at least 1 (omit it for no limit)",
            ));
        }
        let t = &self.timeouts;
        for (name, v) in [
            ("timeouts.connect_s", t.connect_s),
            ("timeouts.first_byte_s", t.first_byte_s),
            ("timeouts.idle_s", t.idle_s),
            ("timeouts.total_s", t.total_s),
        ] {
            if !(v.is_finite() && v > 0.0 && v < 1e7) {
                return Err(invalid(
                    name,
                    format!("{v} must be a positive number of seconds"),
                ));
            }
        }
        if self.retry.max_attempts == 0 {
            return Err(invalid("retry.max_attempts", "must be at least 1"));
        }
        if !(self.retry.cap_s.is_finite() && self.retry.cap_s >= 0.0 && self.retry.cap_s < 1e7) {
            return Err(invalid(
                "retry.cap_s",
                "must be a non-negative number of seconds",
            ));
        }
        for (name, v) in [
            ("budget.max_cost_usd", self.budget.max_cost_usd),
            (
                "budget.prompt_usd_per_mtok",
                self.budget.prompt_usd_per_mtok,
            ),
            (
                "budget.completion_usd_per_mtok",
                self.budget.completion_usd_per_mtok,
            ),
        ] {
            if let Some(v) = v {
                if !(v.is_finite() && v >= 0.0) {
                    return Err(invalid(name, format!("{v} must be a non-negative amount")));
                }
            }
        }
        if !(self.grace_s.is_finite() && self.grace_s >= 0.0 && self.grace_s < 1e7) {
            return Err(invalid(
                "grace_s",
                "must be a non-negative number of seconds",
            ));
        }
        Ok(())
    }

    /// Build the endpoints with their keys (from `api_key_file`, `api_key_env`, or
    /// `OPENROUTER_API_KEY` for OpenRouter endpoints). `env` looks a variable up (the process
    /// environment in production, a map in tests).
    pub fn resolve_endpoints(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Vec<ResolvedEndpoint>, ConfigError> {
        self.endpoints
            .iter()
            .map(|e| {
                let key = if let Some(path) = &e.api_key_file {
                    let text =
                        std::fs::read_to_string(path).map_err(|source| ConfigError::KeyFile {
                            path: path.clone(),
                            endpoint: e.name.clone(),
                            source,
                        })?;
                    let first = text.lines().next().unwrap_or("").trim().to_string();
                    if first.is_empty() {
                        return Err(ConfigError::EmptyKeyFile {
                            path: path.clone(),
                            endpoint: e.name.clone(),
                        });
                    }
                    Some(ApiKey::new(first))
                } else {
                    let var = e.api_key_env.clone().or_else(|| {
                        (e.kind == EndpointKind::OpenRouter).then(|| OPENROUTER_KEY_ENV.to_string())
                    });
                    var.and_then(|v| env(&v))
                        .map(|k| k.trim().to_string())
                        .filter(|k| !k.is_empty())
                        .map(ApiKey::new)
                };
                let mut options = self.request.clone();
                options.server_kind = e.kind.server_kind();
                // Only an explicit setting is sent; vLLM's own default is what `None` means.
                options.spaces_between_special_tokens = e.spaces_around_special_tokens;
                Ok(ResolvedEndpoint {
                    endpoint: Endpoint {
                        name: e.name.clone(),
                        base_url: e.base_url.trim_end_matches('/').to_string(),
                        api_key: key,
                        weight: e.weight,
                    },
                    kind: e.kind,
                    options,
                })
            })
            .collect()
    }

    /// The fingerprint-relevant description of each endpoint (name, URL, kind, and the spaces
    /// setting when given explicitly, since vLLM is then sent it; never the key, never the weight,
    /// which may be retuned on resume, never the built-in simulator's ephemeral port).
    pub fn endpoint_labels(&self) -> Vec<String> {
        self.endpoints
            .iter()
            .map(|e| {
                let url = if e.builtin_sim {
                    "built-in-simulator"
                } else {
                    e.base_url.trim_end_matches('/')
                };
                let mut label = format!("{} {url} ({})", e.name, e.kind.name());
                if let Some(spaces) = e.spaces_around_special_tokens {
                    label.push_str(&format!(" spaces_around_special_tokens={spaces}"));
                }
                label
            })
            .collect()
    }

    /// How each endpoint's server shapes text, as the manifest records it.
    pub fn server_records(&self) -> Vec<ServerRecord> {
        self.endpoints
            .iter()
            .map(|e| ServerRecord {
                endpoint: e.name.clone(),
                kind: e.kind.server_kind(),
                version: e.server_version.clone(),
                spaces_around_special_tokens: e.spaces_around_special_tokens(),
            })
            .collect()
    }

    pub fn grace(&self) -> Duration {
        Duration::from_secs_f64(self.grace_s)
    }
}

/// An endpoint ready to call: its key resolved and its request options specialised to its kind.
#[derive(Debug, Clone)]
pub struct ResolvedEndpoint {
    pub endpoint: Endpoint,
    pub kind: EndpointKind,
    pub options: RequestOptions,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<RunConfig, ConfigError> {
        RunConfig::from_toml(text, Path::new("run.toml"))
    }

    const GOOD: &str = r#"
        grace_s = 5
        [[endpoints]]
        name = "or"
        base_url = "https://openrouter.ai/api/v1/"
        kind = "openrouter"
        [[endpoints]]
        name = "local"
        base_url = "http://127.0.0.1:8000/v1"
        kind = "vllm"
        weight = 3
        [request]
        model = "moonshotai/kimi-k2.5"
        max_tokens = 512
        [concurrency]
        initial = 10
        max = 10000
        requests_per_minute = 600
        [budget]
        max_cost_usd = 2.5
    "#;

    #[test]
    fn parses_a_full_config() {
        let config = parse(GOOD).unwrap();
        config.validate().unwrap();
        assert_eq!(config.endpoints.len(), 2);
        assert_eq!(config.endpoints[1].kind, EndpointKind::Vllm);
        assert_eq!(config.endpoints[1].weight, 3);
        assert_eq!(config.concurrency.max, 10_000);
        assert_eq!(config.request.max_tokens, Some(512));
        assert!(config.request.tools_as_parameter);
        assert_eq!(config.grace(), Duration::from_secs(5));
    }

    #[test]
    fn inline_key_is_refused() {
        let text = GOOD.replace(
            "kind = \"openrouter\"",
            "kind = \"openrouter\"\napi_key = \"sk-or-v1-x\"",
        );
        let err = parse(&text).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, ConfigError::InlineKey { .. }), "{msg}");
        assert!(!msg.contains("sk-or-v1-x"), "{msg}");
        assert!(msg.contains("api_key_file"), "{msg}");
    }

    #[test]
    fn unknown_key_is_an_error_naming_it() {
        let err = parse("[concurrency]\nmaxx = 3\n").unwrap_err().to_string();
        assert!(err.contains("maxx"), "{err}");
        assert!(err.contains("run.toml"), "{err}");
    }

    #[test]
    fn validation_names_the_key() {
        let mut config = parse(GOOD).unwrap();
        config.concurrency.min = 20;
        let err = config.validate().unwrap_err().to_string();
        assert!(err.starts_with("concurrency."), "{err}");
        let mut config = parse(GOOD).unwrap();
        config.endpoints[0].base_url = "openrouter.ai".into();
        let err = config.validate().unwrap_err().to_string();
        assert!(err.starts_with("endpoints[0].base_url"), "{err}");
        let config = RunConfig::default();
        let err = config.validate().unwrap_err().to_string();
        assert!(err.contains("--base-url"), "{err}");
    }

    #[test]
    fn overrides_replace_file_settings() {
        let mut config = parse(GOOD).unwrap();
        config.apply(Overrides {
            base_url: Some("http://127.0.0.1:9/v1".into()),
            model: Some("m".into()),
            concurrency: Some(20_000),
            max_cost_usd: Some(1.0),
            server_token_ids: Some(true),
            ..Overrides::default()
        });
        assert_eq!(config.endpoints.len(), 1);
        assert_eq!(config.endpoints[0].kind, EndpointKind::Generic);
        assert_eq!(config.request.model, "m");
        assert_eq!(config.concurrency.initial, 20_000);
        assert_eq!(config.concurrency.max, 20_000);
        assert_eq!(config.budget.max_cost_usd, Some(1.0));
        assert!(config.request.server_token_ids);
        // A generic endpoint cannot return its ids: the override is checked like the file.
        assert!(config.validate().is_err());
        config.endpoints[0].kind = EndpointKind::Vllm;
        config.validate().unwrap();
    }

    #[test]
    fn keys_come_from_env_or_file_only_where_configured() {
        let config = parse(GOOD).unwrap();
        let env = |name: &str| (name == OPENROUTER_KEY_ENV).then(|| "sk-or-v1-env\n".to_string());
        let resolved = config.resolve_endpoints(env).unwrap();
        assert_eq!(
            resolved[0].endpoint.api_key.as_ref().unwrap().expose(),
            "sk-or-v1-env"
        );
        assert_eq!(
            resolved[0].endpoint.base_url,
            "https://openrouter.ai/api/v1"
        );
        // A self-hosted endpoint never gets the OpenRouter key by default.
        assert!(resolved[1].endpoint.api_key.is_none());
        assert_eq!(resolved[1].options.server_kind, ServerKind::Vllm);

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("key");
        std::fs::write(&file, "sk-or-v1-file\n").unwrap();
        let mut config = config;
        config.apply(Overrides {
            api_key_file: Some(file),
            ..Overrides::default()
        });
        let resolved = config.resolve_endpoints(|_| None).unwrap();
        assert!(resolved
            .iter()
            .all(|r| r.endpoint.api_key.as_ref().unwrap().expose() == "sk-or-v1-file"));
    }
}
