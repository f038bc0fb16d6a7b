//! The configured endpoints made ready to call (their keys read), and what the run's manifest
//! records of them.

use super::{ConfigError, RunConfig, OPENROUTER_KEY_ENV};
use crate::api::{ApiKey, Endpoint, RequestOptions, ServerKind};
use crate::journal::ServerRecord;

impl RunConfig {
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
                        (e.kind == ServerKind::OpenRouter).then(|| OPENROUTER_KEY_ENV.to_string())
                    });
                    var.and_then(|v| env(&v))
                        .map(|k| k.trim().to_string())
                        .filter(|k| !k.is_empty())
                        .map(ApiKey::new)
                };
                let mut options = self.request.clone();
                options.server_kind = e.kind;
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

    /// Why the run cannot authenticate, before anything is written: the first endpoint whose key
    /// variable is unset where a key is required — the variable was named explicitly
    /// (`api_key_env`), or the endpoint is OpenRouter's own API, which answers every request
    /// without a key with 401. One line, naming the variable and the alternative.
    pub fn missing_key(&self, env: impl Fn(&str) -> Option<String>) -> Option<String> {
        self.endpoints.iter().find_map(|e| {
            if e.api_key_file.is_some() {
                return None;
            }
            let named = e.api_key_env.is_some();
            let required = named || is_openrouter_api(&e.base_url);
            let var = e
                .api_key_env
                .clone()
                .unwrap_or_else(|| OPENROUTER_KEY_ENV.to_string());
            let set = env(&var).is_some_and(|k| !k.trim().is_empty());
            (required && !set).then(|| no_key_message(&var, &e.name))
        })
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
                kind: e.kind,
                version: e.server_version.clone(),
                spaces_around_special_tokens: e.spaces_around_special_tokens(),
            })
            .collect()
    }
}

/// An endpoint ready to call: its key resolved and its request options specialised to its kind.
#[derive(Debug, Clone)]
pub struct ResolvedEndpoint {
    pub endpoint: Endpoint,
    pub kind: ServerKind,
    pub options: RequestOptions,
}

/// Whether `base_url` is OpenRouter's own API (not a proxy or simulator speaking its protocol).
pub fn is_openrouter_api(base_url: &str) -> bool {
    let rest = base_url
        .split_once("://")
        .map_or(base_url, |(_, rest)| rest);
    let host = rest.split(['/', ':']).next().unwrap_or("");
    host.eq_ignore_ascii_case("openrouter.ai")
        || host.to_ascii_lowercase().ends_with(".openrouter.ai")
}

/// The one line said when no key is set.
pub fn no_key_message(var: &str, endpoint: &str) -> String {
    format!(
        "no API key for endpoint {endpoint:?}: {var} is not set (export {var}=..., or pass --api-key-file FILE)"
    )
}
