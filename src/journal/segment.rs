//! Journal segment files: `journal/000001.jsonl`, `000002.jsonl`, … in append order.

use std::fs;
use std::path::{Path, PathBuf};

use super::JournalError;

/// Name of the journal directory inside a run directory.
pub const JOURNAL_DIR: &str = "journal";

/// One segment file and its sequence number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub number: u32,
    pub path: PathBuf,
}

/// The file name of segment `number`.
pub fn segment_file_name(number: u32) -> String {
    format!("{number:06}.jsonl")
}

/// All segments in `journal_dir`, in order. Other files (temporary files, notes) are ignored.
pub fn list_segments(journal_dir: &Path) -> Result<Vec<Segment>, JournalError> {
    let mut segments = Vec::new();
    let entries = match fs::read_dir(journal_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(segments),
        Err(e) => return Err(JournalError::io(journal_dir)(e)),
    };
    for entry in entries {
        let entry = entry.map_err(JournalError::io(journal_dir))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(stem) = name.strip_suffix(".jsonl") else {
            continue;
        };
        if stem.is_empty() || !stem.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(number) = stem.parse::<u32>() {
            segments.push(Segment {
                number,
                path: entry.path(),
            });
        }
    }
    segments.sort_by_key(|s| s.number);
    Ok(segments)
}
