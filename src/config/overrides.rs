//! Settings given on the command line, each replacing the file's.

use std::path::PathBuf;

use super::{EndpointConfig, RunConfig};
use crate::api::ServerKind;

/// Settings given on the command line (or their environment variables); each replaces the file's.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// Replaces the endpoint list with this one endpoint.
    pub base_url: Option<String>,
    pub kind: Option<ServerKind>,
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
    pub max_answer_mb: Option<u64>,
    pub force: bool,
}

impl RunConfig {
    /// Apply command-line overrides.
    pub fn apply(&mut self, o: Overrides) {
        if let Some(url) = o.base_url {
            let kind = o.kind.unwrap_or_else(|| ServerKind::guess(&url));
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
        if let Some(mb) = o.max_answer_mb {
            self.max_answer_mb = Some(mb);
        }
        self.force |= o.force;
    }
}
