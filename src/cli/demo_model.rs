//! Which model `draftgen demo --model NAME` simulates: a directory or a known model name as
//! every command reads `--model` (the default, Kimi K2.5, is built in), or any family by its
//! profile name or a model id of it (`qwen3-coder`, `openai/gpt-oss-120b`), whose tokenizer files
//! are then looked for (`sim/family_model.rs`) — or taken from `--tokenizer DIR` — and made into a
//! model directory of that family inside the demo's own.

use std::path::{Path, PathBuf};

use super::model_args::ModelArgs;
use super::UsageError;
use crate::model::family::Family;
use crate::model::{assets, LoadOptions, Profile};
use crate::sim::family_model;

/// The demo's model: where its files are, the profile they load as, and what the job file names
/// as its tokenizer.
pub struct DemoModel {
    pub dir: PathBuf,
    pub profile: Profile,
    /// The job file's `tokenizer`: the name as given, or the made directory.
    pub tokenizer: String,
}

/// `model` (and `tokenizer`, a directory of the family's tokenizer files) as the demo's model;
/// `out` is the demo's directory, where a family's model directory is made when one is needed.
pub fn resolve(model: &str, tokenizer: Option<&Path>, out: &Path) -> anyhow::Result<DemoModel> {
    let named_family = Family::from_name(model).or_else(|| Family::from_model_id(model));
    let as_every_command_reads_it = tokenizer.is_none()
        && (Path::new(model).exists()
            || assets::known_repo(model).is_some()
            || named_family.is_none());
    if as_every_command_reads_it {
        let dir = assets::resolve_model(model).map_err(|e| UsageError(e.to_string()))?;
        let profile = ModelArgs {
            model: model.to_string(),
            profile: None,
            chat_template: None,
        }
        .load_from(&dir)?;
        return Ok(DemoModel {
            dir,
            profile,
            tokenizer: model.to_string(),
        });
    }
    let Some(family) = named_family else {
        return Err(UsageError(format!(
            "--model {model}: with --tokenizer, --model names a family ({}) or a model id of one",
            Family::names()
        ))
        .into());
    };
    let found = match tokenizer {
        Some(dir) => family_model::fits(family, dir).ok_or_else(|| {
            UsageError(format!(
                "--tokenizer {}: not the {} family's tokenizer files (tokenizer.json or \
                 tiktoken.model, tokenizer_config.json)",
                dir.display(),
                family.name()
            ))
        })?,
        None => family_model::find(family, model)
            .map_err(|e| UsageError(format!("--model {model}: {e}")))?,
    };
    family_directory(&found, out)
}

/// The found files as a directory that loads as the family by itself (so `build` and `verify`
/// read it from the job file alone).
fn family_directory(found: &family_model::FamilyModel, out: &Path) -> anyhow::Result<DemoModel> {
    let family = found.family;
    let dir = found
        .directory(&out.join("model"))
        .map_err(|e| anyhow::anyhow!("{}: {e}", out.join("model").display()))?;
    let dir = dir.canonicalize().unwrap_or(dir);
    let profile = Profile::load(&dir, &LoadOptions::default())
        .map_err(|e| UsageError(format!("{}: {e}", dir.display())))?;
    if profile.family != family {
        return Err(UsageError(format!(
            "{} loads as {}, not {}: pass a directory of {} files with --model DIR",
            dir.display(),
            profile.family.name(),
            family.name(),
            family.name()
        ))
        .into());
    }
    Ok(DemoModel {
        tokenizer: dir.display().to_string(),
        dir,
        profile,
    })
}
