//! `draftgen.toml`: the whole job in one file (`draftgen init` writes it, `draftgen run` reads
//! it) — the run configuration `generate --config` reads, plus a `[job]` table for the steps
//! around it (datasets, tokenizer, output directory, exports).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{ConfigError, RunConfig};
use crate::api::did_you_mean;

/// The `[job]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobConfig {
    /// Dataset files or directories (every file in them), relative to the config file.
    pub datasets: Vec<PathBuf>,
    /// The target model's tokenizer and chat template for build and verify (a directory with
    /// tokenizer files, or a known name such as `kimi-k2.5`).
    pub tokenizer: String,
    /// Where every step writes (relative to the config file).
    #[serde(default = "default_out")]
    pub out: PathBuf,
    /// At most this many prompts in all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    /// At most this many prompts from each dataset file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_per_source: Option<u64>,
    /// Whether build also writes `build/samples.jsonl` (the same samples, one JSON object a line).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub samples_jsonl: bool,
    /// Draft vocabulary size of the exported `d2t`/`t2d` maps.
    #[serde(default = "default_draft_vocab_size")]
    pub draft_vocab_size: usize,
    /// Which trainers' files to export.
    #[serde(default = "default_trainers")]
    pub trainers: Vec<Trainer>,
}

/// A trainer whose files `run` exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Trainer {
    Specforge,
    Speculators,
}

fn default_out() -> PathBuf {
    PathBuf::from("draftgen-out")
}

fn default_draft_vocab_size() -> usize {
    32_000
}

fn default_trainers() -> Vec<Trainer> {
    vec![Trainer::Specforge, Trainer::Speculators]
}

/// A job file read: its `[job]` table, the run configuration around it, and that configuration
/// as TOML text for `generate --config` (the `[job]` lines commented out, so line numbers hold).
#[derive(Debug, Clone)]
pub struct JobFile {
    pub job: JobConfig,
    pub run: RunConfig,
    pub run_toml: String,
}

impl JobFile {
    pub fn from_file(path: &Path) -> Result<JobFile, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        JobFile::from_toml(&text, path)
    }

    /// Parse job-file text; `path` is only for messages.
    pub fn from_toml(text: &str, path: &Path) -> Result<JobFile, ConfigError> {
        let parse_error = |message: String| ConfigError::Parse {
            path: path.to_path_buf(),
            message,
        };
        let mut table: toml::Table = toml::from_str(text)
            .map_err(|e| parse_error(did_you_mean::explain(e.to_string().trim_end())))?;
        let job = table.remove("job").ok_or_else(|| {
            parse_error(
                "no [job] table (datasets, tokenizer, out): `draftgen init` writes a complete file"
                    .into(),
            )
        })?;
        let job: JobConfig = job.try_into().map_err(|e: toml::de::Error| {
            parse_error(format!("[job]: {}", did_you_mean::explain(e.message())))
        })?;
        if job.datasets.is_empty() {
            return Err(super::invalid("job.datasets", "lists no dataset file"));
        }
        let run_toml = without_job_table(text);
        let run = RunConfig::from_toml(&run_toml, path)?;
        Ok(JobFile { job, run, run_toml })
    }
}

/// `text` with the `[job]` table's lines commented out. A table ends at the next header: an
/// unindented line starting with `[`.
pub(super) fn without_job_table(text: &str) -> String {
    let mut in_job = false;
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        if line.starts_with('[') {
            let name = line.trim_start_matches('[').split(']').next().unwrap_or("");
            in_job = name.trim() == "job";
        }
        if in_job {
            out.push_str("# ");
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
[job]
datasets = [
  "data/tools.jsonl",
]
tokenizer = "kimi-k2.5"

[[endpoints]]
name = "openrouter"
base_url = "https://openrouter.ai/api/v1"
kind = "openrouter"

[request]
model = "moonshotai/kimi-k2.5"
provider = { only = ["moonshotai"], allow_fallbacks = false }

[budget]
max_cost_usd = 5.0
"#;

    #[test]
    fn the_job_table_and_the_run_configuration_are_read_apart() {
        let file = JobFile::from_toml(FILE, Path::new("draftgen.toml")).unwrap();
        assert_eq!(file.job.tokenizer, "kimi-k2.5");
        assert_eq!(file.job.out, PathBuf::from("draftgen-out"));
        assert_eq!(file.job.trainers.len(), 2);
        assert_eq!(file.run.budget.max_cost_usd, Some(5.0));
        file.run.validate().unwrap();
        assert_eq!(file.run_toml.lines().count(), FILE.lines().count());
        assert!(file.run_toml.contains("# tokenizer = "));
        RunConfig::from_toml(&file.run_toml, Path::new("x")).unwrap();
    }

    #[test]
    fn generate_reads_a_job_file_as_its_run_configuration() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("draftgen.toml");
        std::fs::write(&path, FILE).unwrap();
        let run = RunConfig::from_file(&path).unwrap();
        assert_eq!(run, JobFile::from_toml(FILE, &path).unwrap().run);
    }

    #[test]
    fn a_misspelt_job_key_names_the_nearest_one() {
        let text = FILE.replace("tokenizer =", "tokeniser =");
        let err = JobFile::from_toml(&text, Path::new("draftgen.toml"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("did you mean `tokenizer`?"), "{err}");
    }
}
