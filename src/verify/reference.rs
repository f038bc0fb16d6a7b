//! `--reference FILE`: reference completion ids, one `{"id": …, "output_ids": [u32]}` per line
//! (e.g. what an earlier local SGLang or vLLM run produced for the same prompts).
//!
//! Only each id's line offset is held ([`ReferenceFile::open`] scans the file once); the ids of
//! a batch of samples are read when that batch is checked, so memory does not grow with the
//! file.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::VerifyError;

#[derive(Deserialize)]
struct Line {
    id: String,
    output_ids: Vec<u32>,
}

/// An indexed reference file.
pub struct ReferenceFile {
    path: PathBuf,
    /// id → (byte offset, 1-based line number) of its line.
    offsets: HashMap<String, (u64, usize)>,
    /// Lines that are not `{"id", "output_ids"}`: `FILE:LINE: why` (the first 100).
    pub problems: Vec<String>,
    pub bad_lines: u64,
}

#[derive(Deserialize)]
struct IdOnly {
    id: String,
}

impl ReferenceFile {
    pub fn open(path: &Path) -> Result<ReferenceFile, VerifyError> {
        let io = |e| VerifyError::io(path, e);
        let mut reader = BufReader::new(File::open(path).map_err(io)?);
        let mut offsets = HashMap::new();
        let mut problems = Vec::new();
        let mut bad_lines = 0;
        let mut offset = 0u64;
        let mut line = String::new();
        let mut number = 0usize;
        loop {
            line.clear();
            let n = reader.read_line(&mut line).map_err(io)?;
            if n == 0 {
                break;
            }
            number += 1;
            if !line.trim().is_empty() {
                match serde_json::from_str::<Line>(&line) {
                    Ok(parsed) => {
                        offsets.insert(parsed.id, (offset, number));
                    }
                    Err(e) => {
                        bad_lines += 1;
                        if problems.len() < 100 {
                            let id = serde_json::from_str::<IdOnly>(&line)
                                .map(|l| format!(" (id {})", l.id))
                                .unwrap_or_default();
                            problems.push(format!(
                                "{}:{number}{id}: {e} (expected {{\"id\": str, \"output_ids\": [int]}})",
                                path.display()
                            ));
                        }
                    }
                }
            }
            offset += n as u64;
        }
        Ok(ReferenceFile {
            path: path.to_path_buf(),
            offsets,
            problems,
            bad_lines,
        })
    }

    pub fn len(&self) -> usize {
        self.offsets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }

    /// The reference ids of those of `ids` the file has.
    pub fn read(&self, ids: &[&str]) -> Result<HashMap<String, Vec<u32>>, VerifyError> {
        let mut wanted: Vec<(&str, u64)> = ids
            .iter()
            .filter_map(|id| self.offsets.get(*id).map(|(o, _)| (*id, *o)))
            .collect();
        wanted.sort_by_key(|(_, o)| *o);
        let io = |e| VerifyError::io(&self.path, e);
        let mut out = HashMap::with_capacity(wanted.len());
        if wanted.is_empty() {
            return Ok(out);
        }
        let mut reader = BufReader::new(File::open(&self.path).map_err(io)?);
        let mut line = String::new();
        for (id, offset) in wanted {
            reader.seek(SeekFrom::Start(offset)).map_err(io)?;
            line.clear();
            reader.read_line(&mut line).map_err(io)?;
            let parsed: Line = serde_json::from_str(&line).map_err(|e| {
                VerifyError::Input(format!(
                    "{}: the line of id {id} changed while verify ran: {e}",
                    self.path.display()
                ))
            })?;
            out.insert(parsed.id, parsed.output_ids);
        }
        Ok(out)
    }
}
