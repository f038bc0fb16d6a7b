//! [`Manifest`]: the settings a run was started with, and the fingerprint that guards resume.
//!
//! Resuming a run with different settings would mix two datasets in one journal, so the settings that
//! shape a request (model, endpoints, sampling, request options, dataset) are hashed into a
//! fingerprint. Timestamps and the draftgen version are recorded but not fingerprinted: a bug-fix
//! upgrade must not make a days-long run unresumable (a version change is reported, not refused).
//!
//! The manifest also records how each endpoint's server shapes text ([`ServerRecord`]: kind,
//! version, spaces around special tokens), which everything downstream reads back
//! (src/reconstruct/from_run.rs) instead of asking the user again. Those records are not
//! fingerprinted as such (the kind is part of each endpoint's label already, an explicit spaces
//! setting too), so a manifest written before they existed resumes without `--force`.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::api::ServerKind;
use crate::dataset::canonical::canonical_json;

/// What the run recorded of one endpoint's server: how it turns the model's text into a
/// chat.completion, as far as the run knows (the behaviour itself is `crate::server`'s).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerRecord {
    /// The endpoint's name (as in `endpoints`).
    pub endpoint: String,
    /// The server software actually configured for it (`--kind` / `kind`).
    pub kind: ServerKind,
    /// The server's version, when the user gave it (`--server-version` / `server_version`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Whether it puts a space on each side of every special token it detokenizes (vLLM's
    /// `spaces_between_special_tokens`; the kind's default unless set).
    #[serde(default)]
    pub spaces_around_special_tokens: bool,
}

/// `request_options` keys that are not settings of the run: `server_kind` was always the
/// placeholder `generic` (the real kind is per endpoint, see [`ServerRecord`]); manifests written
/// before it was dropped still carry it, and it must not change their fingerprint.
const NOT_SETTINGS: &[&str] = &["server_kind"];

/// `request_options` without the keys in [`NOT_SETTINGS`].
fn settings_only(request_options: &Value) -> Value {
    let mut value = request_options.clone();
    if let Value::Object(map) = &mut value {
        for key in NOT_SETTINGS {
            map.remove(*key);
        }
    }
    value
}

/// `manifest.json` of a run directory. Never contains an API key: endpoints are names or base URLs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The model as requested (e.g. `moonshotai/kimi-k2.5`).
    pub model: String,
    /// Endpoint names or base URLs, without keys.
    pub endpoints: Vec<String>,
    /// Sampling parameters (temperature, top_p, max_tokens, seed, …).
    #[serde(default)]
    pub sampling: Value,
    /// Everything else that shapes a request: reasoning, provider routing, tools mode, streaming,
    /// `chat_template_kwargs`, …
    #[serde(default)]
    pub request_options: Value,
    /// Hash of the prompts file (or of the dataset files and preparation settings).
    pub dataset_hash: String,
    /// The draftgen version that wrote this manifest.
    #[serde(default)]
    pub draftgen_version: String,
    /// RFC 3339 creation time of this manifest.
    #[serde(default)]
    pub created_at: String,
    /// Hex SHA-256 over the fingerprinted settings; filled in by [`Manifest::new`] / [`Manifest::seal`].
    #[serde(default)]
    pub fingerprint: String,
    /// Fingerprints this run had before settings were changed with `--force`, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub previous_fingerprints: Vec<String>,
    /// How each endpoint's server shapes text, in endpoint order. Empty in manifests written
    /// before draftgen recorded it (readers then fall back to the default reconstruction options).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<ServerRecord>,
    /// The prompts file `generate` read, so `verify` can find each prompt's dataset from the run
    /// directory alone. Not fingerprinted (`dataset_hash` is the dataset's identity; the same
    /// prompts may be read from another path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<PromptsFile>,
}

/// A prompts file: where it was and what it held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptsFile {
    /// Absolute path when it could be resolved, else as given.
    pub path: String,
    /// Hex SHA-256 of the file's bytes.
    pub sha256: String,
}

impl PromptsFile {
    /// Whether the file at `path` still has the recorded hash (`Ok(false)`: it changed).
    pub fn unchanged(&self) -> std::io::Result<bool> {
        let mut file = std::fs::File::open(&self.path)?;
        let mut hasher = Sha256::new();
        std::io::copy(&mut file, &mut hasher)?;
        Ok(hex::encode(hasher.finalize()) == self.sha256)
    }
}

/// An endpoint label (`NAME URL (KIND)…`, src/config/resolve.rs) without its URL: where a server
/// is reached does not change what it answers (its kind, in the label, does), so a resume after
/// correcting `--base-url` goes on. A label that is only a URL (older manifests) is kept whole.
fn without_url(label: &str) -> String {
    let words: Vec<&str> = label.split(' ').collect();
    let has_kind = words
        .last()
        .is_some_and(|w| w.starts_with('(') || w.contains('='));
    if words.len() < 3 || !has_kind {
        return label.to_string();
    }
    words
        .iter()
        .filter(|w| !(w.contains("://") || **w == "built-in-simulator"))
        .copied()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The fingerprinted part of a manifest, in a fixed order.
#[derive(Serialize)]
struct FingerprintedSettings<'a> {
    model: &'a str,
    endpoints: &'a [String],
    sampling: &'a Value,
    request_options: &'a Value,
    dataset_hash: &'a str,
}

impl Manifest {
    /// A manifest for these settings, stamped with the current draftgen version and time.
    pub fn new(
        model: impl Into<String>,
        endpoints: Vec<String>,
        sampling: Value,
        request_options: Value,
        dataset_hash: impl Into<String>,
    ) -> Manifest {
        let mut manifest = Manifest {
            model: model.into(),
            endpoints,
            sampling,
            request_options,
            dataset_hash: dataset_hash.into(),
            draftgen_version: env!("CARGO_PKG_VERSION").to_string(),
            created_at: chrono::Utc::now().to_rfc3339(),
            fingerprint: String::new(),
            previous_fingerprints: Vec::new(),
            servers: Vec::new(),
            prompts: None,
        };
        manifest.seal();
        manifest
    }

    /// This manifest with the prompts file it reads recorded.
    pub fn with_prompts(mut self, prompts: Option<PromptsFile>) -> Manifest {
        self.prompts = prompts;
        self
    }

    /// This manifest with its endpoints' server shapes recorded.
    pub fn with_servers(mut self, servers: Vec<ServerRecord>) -> Manifest {
        self.servers = servers;
        self
    }

    /// Recompute [`Manifest::fingerprint`] from the settings.
    pub fn seal(&mut self) {
        self.fingerprint = self.compute_fingerprint();
    }

    /// Hex SHA-256 of the canonical JSON of the fingerprinted settings. Object keys are sorted, so
    /// the order in which a config lists options does not matter.
    pub fn compute_fingerprint(&self) -> String {
        let request_options = settings_only(&self.request_options);
        let endpoints: Vec<String> = self.endpoints.iter().map(|e| without_url(e)).collect();
        let settings = FingerprintedSettings {
            model: &self.model,
            endpoints: &endpoints,
            sampling: &self.sampling,
            request_options: &request_options,
            dataset_hash: &self.dataset_hash,
        };
        let value = serde_json::to_value(&settings).unwrap_or(Value::Null);
        hex::encode(Sha256::digest(canonical_json(&value).as_bytes()))
    }

    /// Human-readable differences in fingerprinted settings from `old` to `self`, one per changed
    /// leaf (`sampling.temperature: 0.6 → 1.0`). Empty when the fingerprints agree.
    pub fn changes_from(&self, old: &Manifest) -> Vec<String> {
        let mut changes = Vec::new();
        if self.model != old.model {
            changes.push(format!("model: {:?} → {:?}", old.model, self.model));
        }
        if self.endpoints != old.endpoints {
            changes.push(format!(
                "endpoints: {:?} → {:?}",
                old.endpoints, self.endpoints
            ));
        }
        diff_values("sampling", &old.sampling, &self.sampling, &mut changes);
        diff_values(
            "request_options",
            &settings_only(&old.request_options),
            &settings_only(&self.request_options),
            &mut changes,
        );
        if self.dataset_hash != old.dataset_hash {
            changes.push(format!(
                "dataset_hash: {} → {}",
                old.dataset_hash, self.dataset_hash
            ));
        }
        changes
    }
}

/// Push one line per differing leaf between `old` and `new`, named by dotted path.
fn diff_values(path: &str, old: &Value, new: &Value, changes: &mut Vec<String>) {
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let child = format!("{path}.{key}");
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => diff_values(&child, x, y, changes),
                    (Some(x), None) => changes.push(format!("{child}: {x} → (removed)")),
                    (None, Some(y)) => changes.push(format!("{child}: (unset) → {y}")),
                    (None, None) => {}
                }
            }
        }
        (a, b) if a != b => changes.push(format!("{path}: {a} → {b}")),
        _ => {}
    }
}

/// A manifest for tests: one OpenRouter endpoint, `temperature` the one setting that varies.
#[cfg(test)]
pub(crate) fn sample(temperature: f64) -> Manifest {
    Manifest::new(
        "moonshotai/kimi-k2.5",
        vec!["https://openrouter.ai/api/v1".into()],
        serde_json::json!({"temperature": temperature, "max_tokens": 4096}),
        serde_json::json!({"reasoning": {"effort": "high"}, "stream": true}),
        "abc123",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use super::sample as manifest;

    #[test]
    fn fingerprint_ignores_where_an_endpoint_is_reached_but_not_its_kind() {
        let with = |labels: &[&str]| {
            let mut m = manifest(1.0);
            m.endpoints = labels.iter().map(|l| l.to_string()).collect();
            m.compute_fingerprint()
        };
        let vllm = with(&["vllm http://127.0.0.1:8000/v1 (vllm)"]);
        assert_eq!(vllm, with(&["vllm http://10.0.0.2:8001/v1 (vllm)"]));
        assert_ne!(vllm, with(&["vllm http://127.0.0.1:8000/v1 (sglang)"]));
        assert_ne!(
            with(&["https://openrouter.ai/api/v1"]),
            with(&["http://localhost:8000/v1"]),
            "a bare URL label is kept"
        );
    }

    #[test]
    fn fingerprint_ignores_key_order_and_timestamps() {
        let a = manifest(0.6);
        let mut b = a.clone();
        b.sampling = json!({"max_tokens": 4096, "temperature": 0.6});
        b.created_at = "1999-01-01T00:00:00Z".into();
        b.draftgen_version = "9.9.9".into();
        b.seal();
        assert_eq!(a.fingerprint, b.fingerprint);
        assert_eq!(a.fingerprint.len(), 64);
    }

    #[test]
    fn recording_servers_is_not_a_change_of_settings() {
        let old = manifest(0.6);
        let one = manifest(0.6).with_servers(vec![ServerRecord {
            endpoint: "a".into(),
            kind: ServerKind::Vllm,
            version: Some("0.11.0".into()),
            spaces_around_special_tokens: true,
        }]);
        assert_eq!(one.compute_fingerprint(), old.fingerprint);
    }

    #[test]
    fn old_manifests_open_and_their_placeholder_server_kind_is_no_setting() {
        // As draftgen wrote it before server shapes were recorded.
        let text = r#"{"model": "m", "endpoints": ["vllm http://127.0.0.1:8000/v1 (vllm)"],
            "sampling": {"max_tokens": 16}, "request_options": {"model": "m", "stream": false,
            "server_kind": "generic"}, "dataset_hash": "abc", "fingerprint": "f"}"#;
        let old: Manifest = serde_json::from_str(text).unwrap();
        assert!(old.servers.is_empty());
        let new = Manifest::new(
            "m",
            vec!["vllm http://127.0.0.1:8000/v1 (vllm)".into()],
            json!({"max_tokens": 16}),
            json!({"model": "m", "stream": false}),
            "abc",
        );
        assert_eq!(old.compute_fingerprint(), new.fingerprint);
        assert!(new.changes_from(&old).is_empty());
    }

    #[test]
    fn changes_name_the_changed_leaves() {
        let old = manifest(0.6);
        let mut new = manifest(1.0);
        new.request_options = json!({"reasoning": {"effort": "low"}, "stream": true, "seed": 1});
        new.seal();
        assert_ne!(old.fingerprint, new.fingerprint);
        let changes = new.changes_from(&old);
        assert_eq!(
            changes,
            vec![
                "sampling.temperature: 0.6 → 1.0".to_string(),
                "request_options.reasoning.effort: \"high\" → \"low\"".to_string(),
                "request_options.seed: (unset) → 1".to_string(),
            ]
        );
    }
}
