//! Finding model directories: `DRAFTGEN_ASSETS`, then `../shared/assets`, then (for the Kimi
//! names) the Kimi K2.5 tokenizer built into the binary, then the Hugging Face hub cache, then a
//! download from the hub.
//!
//! The Kimi K2.5 files (`assets/kimi-k2.5/`, Moonshot's Modified MIT licence) are embedded with
//! `include_bytes!` so that `draftgen demo` and `--model kimi-k2.5` work offline on any machine;
//! they are written once to `<cache>/draftgen/kimi-k2.5-<sha>/` because the loaders read
//! directories.
//!
//! `--model` accepts a directory or a name, so users can write `--model kimi-k2.5` or
//! `--model Qwen/Qwen3-8B` without knowing where the files live. Downloads go into the standard
//! hub cache layout (`models--ORG--NAME/snapshots/<sha>/`, `refs/<rev>`), so Python tools and
//! later runs find the same files.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::ModelError;

/// The directory holding the tests' reference tokenizer files, if one is present:
/// `$DRAFTGEN_ASSETS`, else the cache `scripts/test` fills from the package registries
/// ([`test_assets_cache`]`/assets`, once complete).
pub fn assets_root() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("DRAFTGEN_ASSETS").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir)).filter(|d| d.is_dir());
    }
    let cached = test_assets_cache()?.join("assets");
    cached.join(COMPLETE_STAMP).is_file().then_some(cached)
}

/// Where `scripts/test` keeps the reference files it fetches: `$DRAFTGEN_TEST_ASSETS_CACHE`,
/// else `~/.cache/draftgen-test-assets` (`$XDG_CACHE_HOME` honoured). Holds `packages/` (the
/// registry downloads), `assets/` and `datasets/` (the files the tests read).
pub fn test_assets_cache() -> Option<PathBuf> {
    let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    env("DRAFTGEN_TEST_ASSETS_CACHE")
        .map(PathBuf::from)
        .or_else(|| {
            env("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| dirs::home_dir().map(|home| home.join(".cache")))
                .map(|cache| cache.join("draftgen-test-assets"))
        })
}

/// Written last by `scripts/fetch_test_assets.py`, after every file's sha256 was checked.
pub const COMPLETE_STAMP: &str = ".complete";

/// The Kimi K2.5 tokenizer files built into the binary (`assets/kimi-k2.5/`, see its
/// `SOURCE.md`): Moonshot's `tiktoken.model`, `tokenizer_config.json`, `config.json` and licence.
const EMBEDDED_KIMI: &[(&str, &[u8])] = &[
    (
        "tiktoken.model",
        include_bytes!("../../assets/kimi-k2.5/tiktoken.model"),
    ),
    (
        "tokenizer_config.json",
        include_bytes!("../../assets/kimi-k2.5/tokenizer_config.json"),
    ),
    (
        "config.json",
        include_bytes!("../../assets/kimi-k2.5/config.json"),
    ),
    ("LICENSE", include_bytes!("../../assets/kimi-k2.5/LICENSE")),
];

/// The embedded Kimi files as a directory under `cache` (`kimi-k2.5-<sha256 prefix>/`), written
/// on first use; files already there with the right bytes are kept, others are replaced
/// atomically, so concurrent first runs do not see half-written files.
pub fn embedded_kimi_dir(cache: &Path) -> Result<PathBuf, String> {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for (name, bytes) in EMBEDDED_KIMI {
        hasher.update(name.as_bytes());
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    let digest = hex::encode(hasher.finalize());
    let dir = cache.join(format!("kimi-k2.5-{}", &digest[..16]));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    for (name, bytes) in EMBEDDED_KIMI {
        let path = dir.join(name);
        if std::fs::read(&path).is_ok_and(|on_disk| on_disk == *bytes) {
            continue;
        }
        let partial = dir.join(format!(".{name}.{}.partial", std::process::id()));
        std::fs::write(&partial, bytes)
            .and_then(|()| std::fs::rename(&partial, &path))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(dir)
}

/// A model name this project knows: its short names, its folder under the assets root and its
/// Hugging Face repository.
struct KnownModel {
    names: &'static [&'static str],
    asset_dir: &'static str,
    repo: &'static str,
}

/// Kimi K2, K2-Thinking and K2.5 share one vocabulary, so they share the `kimi-k2.5` files.
const KNOWN_MODELS: &[KnownModel] = &[
    KnownModel {
        names: &["kimi-k2.5", "kimi-k25"],
        asset_dir: "kimi-k2.5",
        repo: "moonshotai/Kimi-K2.5",
    },
    KnownModel {
        names: &["kimi-k2", "kimi-k2-instruct"],
        asset_dir: "kimi-k2.5",
        repo: "moonshotai/Kimi-K2-Instruct",
    },
    KnownModel {
        names: &["kimi-k2-thinking"],
        asset_dir: "kimi-k2.5",
        repo: "moonshotai/Kimi-K2-Thinking",
    },
    KnownModel {
        names: &["qwen3", "qwen3-8b"],
        asset_dir: "qwen3",
        repo: "Qwen/Qwen3-8B",
    },
    KnownModel {
        names: &["deepseek-v3"],
        asset_dir: "deepseek-v3",
        repo: "deepseek-ai/DeepSeek-V3",
    },
    // V3.1's own tokenizer: `<think>` / `</think>` are added tokens (DeepSeek-V3's has place holders).
    KnownModel {
        names: &["deepseek-v3.1"],
        asset_dir: "deepseek-v3.1",
        repo: "deepseek-ai/DeepSeek-V3.1",
    },
    // gpt-oss-120b and -20b share the o200k_harmony vocabulary (the family has its template).
    KnownModel {
        names: &["gpt-oss", "gpt-oss-120b"],
        asset_dir: "gpt-oss",
        repo: "openai/gpt-oss-120b",
    },
    KnownModel {
        names: &["gpt-oss-20b"],
        asset_dir: "gpt-oss",
        repo: "openai/gpt-oss-20b",
    },
    KnownModel {
        names: &["smollm2", "smollm2-135m-instruct"],
        asset_dir: "smollm2-135m-instruct",
        repo: "HuggingFaceTB/SmolLM2-135M-Instruct",
    },
];

/// The Hugging Face repository of a model name this project knows (a short name such as
/// `kimi-k2-thinking`, or the repository id itself, any case); `None` for any other name.
pub fn known_repo(name: &str) -> Option<&'static str> {
    KNOWN_MODELS
        .iter()
        .find(|m| {
            m.names.iter().any(|n| n.eq_ignore_ascii_case(name))
                || m.repo.eq_ignore_ascii_case(name)
        })
        .map(|m| m.repo)
}

/// The asset folder the embedded Kimi files stand in for.
const EMBEDDED_KIMI_DIR: &str = "kimi-k2.5";

/// Files a model directory needs (those the repository has are downloaded).
const MODEL_FILES: &[&str] = &[
    "tokenizer_config.json",
    "config.json",
    "tokenizer.json",
    "tiktoken.model",
    "chat_template.jinja",
];

/// Where [`resolve_model_in`] looks, and where it downloads from.
#[derive(Debug, Clone)]
pub struct Locations {
    /// Asset roots searched in order for `<root>/<name>`.
    pub asset_roots: Vec<PathBuf>,
    /// The hub cache (`models--ORG--NAME/…`).
    pub hub_cache: Option<PathBuf>,
    /// The hub endpoint, `https://huggingface.co` unless `HF_ENDPOINT` says otherwise.
    pub endpoint: String,
    /// `HF_TOKEN`, sent as a bearer token for gated repositories; never printed.
    pub token: Option<String>,
    /// Where the embedded Kimi files are written out (`None`: the Kimi names are not served from
    /// the binary).
    pub embedded_cache: Option<PathBuf>,
}

impl Locations {
    /// From the environment: `DRAFTGEN_ASSETS`, `../shared/assets`, `HF_HUB_CACHE` /
    /// `HF_HOME/hub` / `~/.cache/huggingface/hub`, `HF_ENDPOINT`, `HF_TOKEN`.
    pub fn from_env() -> Self {
        let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let mut asset_roots: Vec<PathBuf> = env("DRAFTGEN_ASSETS")
            .map(PathBuf::from)
            .into_iter()
            .collect();
        if let Ok(cwd) = std::env::current_dir() {
            asset_roots.push(cwd.join("../shared/assets"));
        }
        asset_roots.push(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/assets"));
        // The working directory is often the crate itself, and DRAFTGEN_ASSETS may name the same
        // folder: each folder once (so "looked in" lists it once).
        let mut seen = std::collections::HashSet::new();
        asset_roots
            .retain(|root| seen.insert(root.canonicalize().unwrap_or_else(|_| root.clone())));
        let hub_cache = env("HF_HUB_CACHE")
            .map(PathBuf::from)
            .or_else(|| env("HF_HOME").map(|home| PathBuf::from(home).join("hub")))
            .or_else(|| dirs::home_dir().map(|home| home.join(".cache/huggingface/hub")));
        let endpoint = std::env::var("HF_ENDPOINT")
            .ok()
            .filter(|e| !e.is_empty())
            .unwrap_or_else(|| "https://huggingface.co".to_string());
        let token = std::env::var("HF_TOKEN").ok().filter(|t| !t.is_empty());
        let embedded_cache = Some(
            dirs::cache_dir()
                .unwrap_or_else(std::env::temp_dir)
                .join("draftgen"),
        );
        Self {
            asset_roots,
            hub_cache,
            endpoint: endpoint.trim_end_matches('/').to_string(),
            token,
            embedded_cache,
        }
    }
}

/// Resolve `--model`: an existing path is itself; a known short name (`kimi-k2.5`, `qwen3`, …)
/// or a Hugging Face repo id (`Qwen/Qwen3-8B`, optionally `@REVISION`) is looked up in the
/// asset roots, then (Kimi names) the embedded Kimi K2.5 files, then the hub cache, then
/// downloaded into the hub cache.
pub fn resolve_model(spec: &str) -> Result<PathBuf, ModelError> {
    resolve_model_in(spec, &Locations::from_env())
}

/// [`resolve_model`] with explicit locations.
pub fn resolve_model_in(spec: &str, locations: &Locations) -> Result<PathBuf, ModelError> {
    let as_path = Path::new(spec);
    if as_path.exists() {
        return Ok(as_path.to_path_buf());
    }
    let (name, revision) = match spec.rsplit_once('@') {
        Some((name, rev)) if !rev.is_empty() && !name.is_empty() => (name, rev),
        _ => (spec, "main"),
    };
    let known = KNOWN_MODELS.iter().find(|m| {
        m.names.iter().any(|n| n.eq_ignore_ascii_case(name)) || m.repo.eq_ignore_ascii_case(name)
    });
    let asset_dir = known.map_or(name, |m| m.asset_dir);
    let mut looked_in = Vec::new();
    for root in &locations.asset_roots {
        let candidate = root.join(asset_dir);
        if has_tokenizer(&candidate) {
            return Ok(candidate);
        }
        let shown = candidate.display().to_string();
        if !looked_in.contains(&shown) {
            looked_in.push(shown);
        }
    }
    // Kimi K2, K2-Thinking and K2.5 share one vocabulary: the embedded files serve all three
    // offline (only the full-precision hub repos would add a chat template, which draftgen's
    // Kimi profiles do not need).
    if let (Some(cache), Some(true)) = (
        &locations.embedded_cache,
        known.map(|m| m.asset_dir == EMBEDDED_KIMI_DIR),
    ) {
        match embedded_kimi_dir(cache) {
            Ok(dir) => return Ok(dir),
            Err(why) => looked_in.push(format!("the built-in Kimi files ({why})")),
        }
    }
    let repo = match known {
        Some(m) => m.repo,
        None if is_repo_id(name) => name,
        None => {
            let names: Vec<&str> = KNOWN_MODELS
                .iter()
                .flat_map(|m| m.names.iter().copied())
                .collect();
            return Err(ModelError::Other(format!(
                "--model {spec}: no such directory, and not a known model name ({}) or a Hugging \
                 Face repo id like ORG/NAME; looked in {}",
                names.join(", "),
                looked_in.join(", ")
            )));
        }
    };
    let Some(hub_cache) = &locations.hub_cache else {
        return Err(ModelError::Other(format!(
            "--model {spec}: not found in {} and no Hugging Face cache directory is known; set \
             DRAFTGEN_ASSETS to a directory holding {asset_dir}/, pass --model DIR, or set HF_HOME",
            looked_in.join(", ")
        )));
    };
    let repo_cache = hub_cache.join(format!("models--{}", repo.replace('/', "--")));
    if let Some(snapshot) = cached_snapshot(&repo_cache, revision) {
        return Ok(snapshot);
    }
    download(repo, revision, &repo_cache, locations).map_err(|why| {
        ModelError::Other(format!(
            "--model {spec}: not found locally (looked in {}, {}) and downloading {repo} from {} \
             failed: {why}. Set DRAFTGEN_ASSETS to a directory holding {asset_dir}/, or pass \
             --model DIR, or check the network and HF_TOKEN (gated repositories need one)",
            looked_in.join(", "),
            repo_cache.display(),
            locations.endpoint
        ))
    })
}

fn is_repo_id(name: &str) -> bool {
    let mut parts = name.split('/');
    let valid = |p: &str| {
        !p.is_empty()
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    };
    matches!((parts.next(), parts.next(), parts.next()), (Some(org), Some(repo), None) if valid(org) && valid(repo))
}

fn has_tokenizer(dir: &Path) -> bool {
    dir.join("tokenizer.json").is_file() || dir.join("tiktoken.model").is_file()
}

/// `models--ORG--NAME/snapshots/<sha>` for a revision: `refs/<rev>` names the sha, or the
/// revision is itself a sha.
fn cached_snapshot(repo_cache: &Path, revision: &str) -> Option<PathBuf> {
    let sha = std::fs::read_to_string(repo_cache.join("refs").join(revision))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| revision.to_string());
    let snapshot = repo_cache.join("snapshots").join(sha);
    has_tokenizer(&snapshot).then_some(snapshot)
}

/// Download the model files of `repo@revision` into the hub cache layout; returns the snapshot
/// directory. Runs its own small runtime on a separate thread, so it works from sync code and
/// from inside an async runtime alike.
fn download(
    repo: &str,
    revision: &str,
    repo_cache: &Path,
    locations: &Locations,
) -> Result<PathBuf, String> {
    let (repo, revision, repo_cache, locations) = (
        repo.to_string(),
        revision.to_string(),
        repo_cache.to_path_buf(),
        locations.clone(),
    );
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the download runtime: {e}"))?;
        runtime.block_on(download_async(&repo, &revision, &repo_cache, &locations))
    })
    .join()
    .map_err(|_| "the download thread panicked".to_string())?
}

async fn download_async(
    repo: &str,
    revision: &str,
    repo_cache: &Path,
    locations: &Locations,
) -> Result<PathBuf, String> {
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(15))
        .timeout(Duration::from_secs(600))
        .user_agent(concat!("draftgen/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let get = |url: String| {
        let request = client.get(url);
        match &locations.token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    };
    // The revision's commit sha and file list.
    let info_url = format!(
        "{}/api/models/{repo}/revision/{revision}",
        locations.endpoint
    );
    let info: Value = fetch(get(info_url.clone()), &info_url)
        .await
        .and_then(|bytes| {
            serde_json::from_slice(&bytes).map_err(|e| format!("{info_url}: not JSON ({e})"))
        })?;
    let sha = info
        .get("sha")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{info_url}: the answer has no commit sha"))?
        .to_string();
    let listed: Vec<&str> = info
        .get("siblings")
        .and_then(Value::as_array)
        .map(|files| {
            files
                .iter()
                .filter_map(|f| f.get("rfilename")?.as_str())
                .collect()
        })
        .unwrap_or_default();
    let snapshot = repo_cache.join("snapshots").join(&sha);
    std::fs::create_dir_all(&snapshot)
        .map_err(|e| format!("cannot create {}: {e}", snapshot.display()))?;
    for file in MODEL_FILES.iter().filter(|f| listed.contains(f)) {
        let url = format!("{}/{repo}/resolve/{sha}/{file}", locations.endpoint);
        let bytes = fetch(get(url.clone()), &url).await?;
        write_atomically(&snapshot.join(file), &bytes)?;
    }
    if !has_tokenizer(&snapshot) {
        return Err(format!(
            "{repo}@{revision} has neither tokenizer.json nor tiktoken.model"
        ));
    }
    if sha != revision {
        let refs = repo_cache.join("refs");
        std::fs::create_dir_all(&refs)
            .map_err(|e| format!("cannot create {}: {e}", refs.display()))?;
        write_atomically(&refs.join(revision), sha.as_bytes())?;
    }
    Ok(snapshot)
}

/// GET `url`; a non-2xx status is an error naming the status (never the token).
async fn fetch(request: reqwest::RequestBuilder, url: &str) -> Result<bytes::Bytes, String> {
    let response = request
        .send()
        .await
        .map_err(|e| format!("{url}: {}", e.without_url()))?;
    let status = response.status();
    if !status.is_success() {
        let hint = match status.as_u16() {
            401 | 403 => " (a gated or private repository: set HF_TOKEN)",
            404 => " (no such repository, revision or file)",
            _ => "",
        };
        return Err(format!("{url}: HTTP {status}{hint}"));
    }
    response
        .bytes()
        .await
        .map_err(|e| format!("{url}: {}", e.without_url()))
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let partial = path.with_extension("partial");
    std::fs::write(&partial, bytes)
        .and_then(|()| std::fs::rename(&partial, path))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offline(dir: &Path) -> Locations {
        // A port nothing listens on: bind, read the port, drop the listener.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        Locations {
            asset_roots: vec![dir.join("assets")],
            hub_cache: Some(dir.join("hub")),
            endpoint: format!("http://127.0.0.1:{port}"),
            token: Some("hf_secret_test_token".into()),
            embedded_cache: None,
        }
    }

    #[test]
    fn existing_path_is_itself() {
        let dir = tempfile::tempdir().unwrap();
        let got = resolve_model_in(dir.path().to_str().unwrap(), &offline(dir.path())).unwrap();
        assert_eq!(got, dir.path());
    }

    #[test]
    fn short_name_finds_the_asset_dir() {
        let dir = tempfile::tempdir().unwrap();
        let kimi = dir.path().join("assets/kimi-k2.5");
        std::fs::create_dir_all(&kimi).unwrap();
        std::fs::write(kimi.join("tiktoken.model"), "IQ== 0\n").unwrap();
        for name in [
            "kimi-k2.5",
            "kimi-k2",
            "kimi-k2-thinking",
            "moonshotai/Kimi-K2.5",
        ] {
            assert_eq!(
                resolve_model_in(name, &offline(dir.path())).unwrap(),
                kimi,
                "{name}"
            );
        }
    }

    #[test]
    fn hub_cache_snapshot_is_found_through_refs() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("hub/models--Qwen--Qwen3-8B");
        let snapshot = repo.join("snapshots/abc123");
        std::fs::create_dir_all(&snapshot).unwrap();
        std::fs::create_dir_all(repo.join("refs")).unwrap();
        std::fs::write(repo.join("refs/main"), "abc123\n").unwrap();
        std::fs::write(snapshot.join("tokenizer.json"), "{}").unwrap();
        assert_eq!(
            resolve_model_in("qwen3", &offline(dir.path())).unwrap(),
            snapshot
        );
        assert_eq!(
            resolve_model_in("Qwen/Qwen3-8B@abc123", &offline(dir.path())).unwrap(),
            snapshot
        );
    }

    #[test]
    fn failed_download_says_what_to_do_and_hides_the_token() {
        let dir = tempfile::tempdir().unwrap();
        let err = resolve_model_in("acme/NoSuchModel", &offline(dir.path()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("DRAFTGEN_ASSETS"), "{err}");
        assert!(err.contains("--model DIR"), "{err}");
        assert!(err.contains("HF_TOKEN"), "{err}");
        assert!(err.contains("acme/NoSuchModel"), "{err}");
        assert!(!err.contains("hf_secret_test_token"), "{err}");
    }

    /// With nothing on disk and no hub, the Kimi names come from the binary: the very files in
    /// `assets/kimi-k2.5/`, written once and reused.
    #[test]
    fn kimi_names_resolve_to_the_embedded_files_offline() {
        let dir = tempfile::tempdir().unwrap();
        let locations = Locations {
            embedded_cache: Some(dir.path().join("embedded")),
            ..offline(dir.path())
        };
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/kimi-k2.5");
        let mut first = None;
        for name in [
            "kimi-k2.5",
            "kimi-k2",
            "kimi-k2-thinking",
            "moonshotai/Kimi-K2.5",
        ] {
            let got = resolve_model_in(name, &locations).unwrap();
            assert!(
                got.starts_with(dir.path().join("embedded")),
                "{name}: {got:?}"
            );
            for file in [
                "tiktoken.model",
                "tokenizer_config.json",
                "config.json",
                "LICENSE",
            ] {
                assert_eq!(
                    std::fs::read(got.join(file)).unwrap(),
                    std::fs::read(repo.join(file)).unwrap(),
                    "{name}: {file}"
                );
            }
            assert_eq!(first.get_or_insert_with(|| got.clone()), &got);
        }
        // Not the other families: they still need their files.
        assert!(resolve_model_in("qwen3", &locations).is_err());
    }

    #[test]
    fn unknown_plain_name_lists_the_known_ones() {
        let dir = tempfile::tempdir().unwrap();
        let err = resolve_model_in("no-such-model", &offline(dir.path()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("kimi-k2.5") && err.contains("qwen3"), "{err}");
    }
}
