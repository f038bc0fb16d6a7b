//! The bundled prompt samples (`samples/` in the repository), compiled into the binary so that
//! `draftgen demo` runs on a fresh machine with nothing but the executable.

use std::path::{Path, PathBuf};

use super::error::DatasetError;

macro_rules! bundle {
    ($name:literal) => {
        (
            $name,
            include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/samples/", $name)),
        )
    };
}

/// `(file name, contents)` of every bundled sample, in their original dataset formats.
pub const BUNDLED: &[(&str, &[u8])] = &[
    bundle!("evol_instruct_shape_sample.jsonl"),
    bundle!("glaive_toolcall_en_demo_15.json"),
    bundle!("glaive_v2_shape_sample.jsonl"),
    bundle!("magicoder_oss_shape_sample.jsonl"),
    bundle!("opencodeinstruct_shape_sample.jsonl"),
    bundle!("reason_tool_use_demo_15.jsonl"),
    bundle!("sharegpt_v3_sample_15.jsonl"),
    bundle!("ultrachat_shape_sample.jsonl"),
];

/// How many prompts `prepare` makes of the bundled samples (counted independently in Python).
pub const BUNDLED_PROMPTS: u64 = 54;

/// Write the bundled samples into `dir` (created if needed); returns their paths, ready for
/// [`super::prepare`].
pub fn write_bundled(dir: &Path) -> Result<Vec<PathBuf>, DatasetError> {
    let write_err = |path: &Path, source| DatasetError::Write {
        path: path.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(|e| write_err(dir, e))?;
    BUNDLED
        .iter()
        .map(|(name, bytes)| {
            let path = dir.join(name);
            // Left alone when unchanged, so steps stamped with its time stay current.
            if std::fs::read(&path).ok().as_deref() != Some(*bytes) {
                std::fs::write(&path, bytes).map_err(|e| write_err(&path, e))?;
            }
            Ok(path)
        })
        .collect()
}
