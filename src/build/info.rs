//! `build.json`: what a build read, with which tokenizer and template, under which policies, and
//! what it wrote — so ids are never separated from the vocabulary they belong to.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::policy::Policies;
use super::providers::ProviderReport;
use super::shards::ShardInfo;
use super::RunSettings;
use crate::model::Profile;

/// The model files a build names (those present in the model directory).
const MODEL_FILES: [&str; 6] = [
    "tokenizer.json",
    "tiktoken.model",
    "tokenizer_config.json",
    "chat_template.jinja",
    "special_tokens_map.json",
    "config.json",
];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileHash {
    pub file: String,
    pub sha256: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// The model directory as resolved.
    pub dir: String,
    /// The `--model` argument (a directory or a known name).
    pub name: String,
    pub profile: String,
    pub tokenizer_files: Vec<FileHash>,
    pub template_sha256: String,
    pub vocab_size: usize,
}

impl ModelInfo {
    pub fn of(profile: &Profile, dir: &Path, name: &str) -> std::io::Result<ModelInfo> {
        let mut tokenizer_files = Vec::new();
        for file in MODEL_FILES {
            let path = dir.join(file);
            if path.is_file() {
                tokenizer_files.push(FileHash {
                    file: file.to_string(),
                    sha256: sha256_file(&path)?,
                });
            }
        }
        Ok(ModelInfo {
            dir: dir.display().to_string(),
            name: name.to_string(),
            profile: profile.name.clone(),
            tokenizer_files,
            template_sha256: profile.template_sha256.clone(),
            vocab_size: profile.tokenizer.vocab_size(),
        })
    }
}

/// What happened to every record, and the tokens written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    /// Successful records read from the journal (turn records count one each).
    pub records: u64,
    /// Samples written.
    pub samples: u64,
    /// Samples not written, by reason (policy drops, records that could not be built).
    pub dropped_by_reason: BTreeMap<String, u64>,
    /// Samples written, per fidelity class.
    pub per_fidelity_class: BTreeMap<String, u64>,
    /// Samples written after cutting them to `--max-len`.
    pub cut: u64,
    /// Samples written whose completion ids are the server's own (or imported).
    pub with_server_ids: u64,
    /// Samples written whose completion ids were rebuilt from the answer's text.
    pub rebuilt_from_text: u64,
    /// Multi-turn samples written.
    pub multi_turn: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

impl Counts {
    pub fn drop(&mut self, reason: &str) {
        *self
            .dropped_by_reason
            .entry(reason.to_string())
            .or_default() += 1;
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildInfo {
    pub draftgen_version: String,
    pub created: String,
    /// The run directory read: absolute when it could be resolved, else as given.
    pub run: String,
    pub run_settings: RunSettings,
    pub model: ModelInfo,
    pub policies: Policies,
    pub counts: Counts,
    /// Per endpoint and provider: the conventions inferred from its answers, with their
    /// evidence, and what became of its rows (`build/providers.rs`).
    #[serde(default)]
    pub providers: Vec<ProviderReport>,
    pub shards: Vec<ShardInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jsonl: Option<FileHash>,
    /// Whether the run was finished when built: prompts without an answer, a writer still
    /// appending (`journal/completeness.rs`); `None` when it could not be told.
    #[serde(default)]
    pub completeness: Option<crate::journal::Completeness>,
}

pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}
