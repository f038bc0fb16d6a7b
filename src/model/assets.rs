//! Finding model directories: `DRAFTGEN_ASSETS`, then `../shared/assets`, then the Hugging Face
//! hub cache, then a download from the hub.

use std::path::PathBuf;

/// The directory holding the project's reference tokenizer files, if one is present:
/// `$DRAFTGEN_ASSETS`, else `../shared/assets` beside the working directory or the crate.
pub fn assets_root() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("DRAFTGEN_ASSETS") {
        let dir = PathBuf::from(dir);
        if dir.is_dir() {
            return Some(dir);
        }
    }
    let candidates = [
        std::env::current_dir()
            .ok()
            .map(|d| d.join("../shared/assets")),
        Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/assets")),
    ];
    candidates.into_iter().flatten().find(|d| d.is_dir())
}
