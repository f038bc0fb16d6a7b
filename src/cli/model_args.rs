//! The `--model`, `--profile` and `--chat-template` flags shared by the token commands.

use std::path::PathBuf;

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
        let options = LoadOptions {
            profile: self.profile.clone(),
            chat_template: self.chat_template.clone(),
        };
        Profile::load(&dir, &options).map_err(|e| UsageError(e.to_string()).into())
    }
}
