//! The `--model`, `--profile` and `--chat-template` flags shared by the token commands, and what a
//! `--model` value means (the same for every command, the simulator and the demo included).

use std::path::{Path, PathBuf};

use crate::model::{assets, LoadOptions, Profile};

use super::UsageError;

#[derive(clap::Args, Clone)]
pub struct ModelArgs {
    /// Model directory (tokenizer files, tokenizer_config.json, config.json) or a known name
    /// such as `kimi-k2.5`, looked up in DRAFTGEN_ASSETS, ../shared/assets, then the Hugging Face cache.
    #[arg(long)]
    pub model: String,
    /// Model family profile; auto-detected from the model directory when absent.
    #[arg(long)]
    pub profile: Option<String>,
    /// Chat template file overriding the model directory's.
    #[arg(long)]
    pub chat_template: Option<PathBuf>,
}

impl ModelArgs {
    pub fn load(&self) -> anyhow::Result<Profile> {
        let dir = assets::resolve_model(&self.model).map_err(|e| UsageError(e.to_string()))?;
        self.load_from(&dir)
    }

    /// Load the profile from an already resolved model directory.
    pub fn load_from(&self, dir: &Path) -> anyhow::Result<Profile> {
        let options = LoadOptions {
            profile: self
                .profile
                .clone()
                .or_else(|| implied_profile(&self.model).map(str::to_string)),
            chat_template: self.chat_template.clone(),
        };
        Profile::load(dir, &options).map_err(|e| UsageError(e.to_string()).into())
    }
}

/// The family profile a known model name implies. Kimi K2, K2-Thinking and K2.5 share one set of
/// tokenizer files (one folder), whose detection says K2.5: the name the user gave is what tells
/// them apart. `None`: detect from the directory.
pub fn implied_profile(model: &str) -> Option<&'static str> {
    match assets::known_repo(model)?.to_ascii_lowercase().as_str() {
        "moonshotai/kimi-k2-instruct" => Some("kimi-k2"),
        "moonshotai/kimi-k2-thinking" => Some("kimi-k2-thinking"),
        "moonshotai/kimi-k2.5" => Some("kimi-k2.5"),
        _ => None,
    }
}

/// The model id to put in requests for `--model`: a known name's repository id in lower case
/// (`moonshotai/kimi-k2.5`, the form OpenRouter uses), a directory's name, or the value as given.
pub fn request_model_name(model: &str) -> String {
    if let Some(repo) = assets::known_repo(model) {
        return repo.to_ascii_lowercase();
    }
    let path = Path::new(model);
    if path.is_dir() {
        if let Some(name) = path.file_name() {
            return name.to_string_lossy().into_owned();
        }
    }
    model.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_names_mean_one_model() {
        assert_eq!(
            implied_profile("kimi-k2-thinking"),
            Some("kimi-k2-thinking")
        );
        assert_eq!(
            implied_profile("moonshotai/Kimi-K2-Thinking"),
            Some("kimi-k2-thinking")
        );
        assert_eq!(implied_profile("kimi-k2-instruct"), Some("kimi-k2"));
        assert_eq!(implied_profile("kimi-k2.5"), Some("kimi-k2.5"));
        assert_eq!(implied_profile("qwen3"), None);
        assert_eq!(implied_profile("/some/dir"), None);
        assert_eq!(request_model_name("kimi-k2.5"), "moonshotai/kimi-k2.5");
        assert_eq!(
            request_model_name("kimi-k2-thinking"),
            "moonshotai/kimi-k2-thinking"
        );
        assert_eq!(request_model_name("qwen3"), "qwen/qwen3-8b");
        assert_eq!(request_model_name("org/other"), "org/other");
    }
}
