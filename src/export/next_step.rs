//! What a person does with the exported files next: the trainer's own config lines and command,
//! with absolute paths so they can be pasted from any directory.
//!
//! * SpecForge (`specforge train --config run.yaml`, `specforge/config/schema.py` @a6b6b02):
//!   `data.prompts_path` takes the tokenized rows of `specforge.jsonl`; `model.vocab_mapping_path`
//!   the `torch.save({"d2t", "t2d"})` file (`modeling/draft/base.py::load_vocab_mapping`).
//! * speculators (`scripts/train.py` @c05b95b): `--data-path` is the `prepared/` directory,
//!   `--d2t-path` / `--t2d-path` the `.npy` maps (`_load_mappings`), `--draft-vocab-size` must
//!   match their length.

use std::path::{Path, PathBuf};

/// `path` made absolute against the working directory (unchanged when that fails: the relative
/// path is still right for the directory the command ran in).
pub fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The YAML lines for SpecForge's run config. Either file may be unknown (`None`): its line is
/// then a comment naming the export that writes it.
pub fn specforge_config(prompts: Option<&Path>, vocab_mapping: Option<&Path>) -> Vec<String> {
    let mut lines = vec![
        "next step (SpecForge): put these lines in the config of `specforge train --config run.yaml`"
            .to_string(),
        "  model:".to_string(),
    ];
    match vocab_mapping {
        Some(p) => lines.push(format!("    vocab_mapping_path: {}", yaml_str(p))),
        None => lines.push(
            "    # vocab_mapping_path: from `draftgen export vocab --rule specforge`".to_string(),
        ),
    }
    lines.push("  data:".to_string());
    match prompts {
        Some(p) => lines.push(format!("    prompts_path: {}", yaml_str(p))),
        None => lines.push("    # prompts_path: from `draftgen export specforge`".to_string()),
    }
    lines
}

/// speculators' training command. `maps` is `(d2t.npy, t2d.npy, draft vocab size)` when known.
pub fn speculators_command(
    prepared: Option<&Path>,
    maps: Option<(&Path, &Path, usize)>,
) -> Vec<String> {
    let mut command = vec![
        "python scripts/train.py".to_string(),
        "--verifier-name-or-path TARGET_MODEL".to_string(),
    ];
    match prepared {
        Some(p) => command.push(format!("--data-path {}", shell_word(p))),
        None => command.push("--data-path PREPARED_DIR".to_string()),
    }
    if let Some((d2t, t2d, size)) = maps {
        command.push(format!("--d2t-path {}", shell_word(d2t)));
        command.push(format!("--t2d-path {}", shell_word(t2d)));
        command.push(format!("--draft-vocab-size {size}"));
    }
    let mut lines = vec![
        "next step (speculators): in a speculators checkout, with TARGET_MODEL the target's HF id or path"
            .to_string(),
    ];
    let last = command.len() - 1;
    for (i, part) in command.into_iter().enumerate() {
        let end = if i == last { "" } else { " \\" };
        let indent = if i == 0 { "  " } else { "    " };
        lines.push(format!("{indent}{part}{end}"));
    }
    lines
}

/// A path as a YAML scalar: quoted (JSON string syntax is valid YAML) when plain would misread it.
fn yaml_str(path: &Path) -> String {
    let text = path.display().to_string();
    let plain = text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c));
    if plain {
        text
    } else {
        serde_json::Value::String(text).to_string()
    }
}

/// A path as one POSIX shell word (single-quoted when it holds anything special).
fn shell_word(path: &Path) -> String {
    let text = path.display().to_string();
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@".contains(c));
    if plain {
        text
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_with_spaces_are_quoted() {
        assert_eq!(yaml_str(Path::new("/a b/x.pt")), "\"/a b/x.pt\"");
        assert_eq!(yaml_str(Path::new("/a/x.pt")), "/a/x.pt");
        assert_eq!(shell_word(Path::new("/it's/x")), r"'/it'\''s/x'");
        assert_eq!(shell_word(Path::new("/a/x.npy")), "/a/x.npy");
    }

    #[test]
    fn speculators_command_continues_every_line_but_the_last() {
        let lines = speculators_command(
            Some(Path::new("/o/prepared")),
            Some((Path::new("/v/d2t.npy"), Path::new("/v/t2d.npy"), 32000)),
        );
        assert!(lines[1..lines.len() - 1].iter().all(|l| l.ends_with(" \\")));
        assert_eq!(
            lines.last().map(String::as_str),
            Some("    --draft-vocab-size 32000")
        );
    }
}
