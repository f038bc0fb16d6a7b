//! Input and output plumbing shared by the JSONL commands: numbered input lines with
//! `file:line` errors, and output to stdout or an atomically written file.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use super::UsageError;

/// Read a JSONL file into `(line number, parsed value or error)` pairs, skipping blank lines.
/// Errors read `FILE:LINE: what is wrong`.
pub fn read_jsonl<T: DeserializeOwned>(
    path: &Path,
) -> anyhow::Result<Vec<(usize, Result<T, String>)>> {
    let file = File::open(path)
        .map_err(|e| UsageError(format!("{}: cannot open: {e}", path.display())))?;
    let mut items = Vec::new();
    for (index, line) in BufReader::new(file).lines().enumerate() {
        let number = index + 1;
        let line = match line {
            Ok(line) => line,
            Err(e) => {
                items.push((number, Err(format!("{}:{number}: {e}", path.display()))));
                continue;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        let parsed = serde_json::from_str::<T>(&line)
            .map_err(|e| format!("{}:{number}: {e}", path.display()));
        items.push((number, parsed));
    }
    Ok(items)
}

/// Read a JSONL file whole, failing on the first bad line (exit 2, `FILE:LINE` and what the line
/// should look like) before any output is written.
pub fn read_jsonl_strict<T: DeserializeOwned>(
    path: &Path,
    expected: &str,
) -> anyhow::Result<Vec<(usize, T)>> {
    read_jsonl(path)?
        .into_iter()
        .map(|(number, parsed)| match parsed {
            Ok(item) => Ok((number, item)),
            Err(e) => Err(UsageError(format!("{e} (expected {expected})")).into()),
        })
        .collect()
}

/// Where results go: stdout, or a file written to a temporary name and renamed into place when
/// complete (a crash never leaves a half-written output that looks finished).
pub struct Output {
    writer: BufWriter<Box<dyn Write>>,
    finish: Option<(PathBuf, PathBuf)>,
}

impl Output {
    pub fn open(path: Option<&Path>) -> anyhow::Result<Self> {
        match path {
            None => Ok(Output {
                writer: BufWriter::new(Box::new(io::stdout().lock())),
                finish: None,
            }),
            Some(path) => {
                let tmp = path.with_extension("partial");
                let file = File::create(&tmp)
                    .map_err(|e| UsageError(format!("{}: cannot create: {e}", tmp.display())))?;
                Ok(Output {
                    writer: BufWriter::new(Box::new(file)),
                    finish: Some((tmp, path.to_path_buf())),
                })
            }
        }
    }

    /// Write one JSON line.
    pub fn line<T: serde::Serialize>(&mut self, value: &T) -> anyhow::Result<()> {
        serde_json::to_writer(&mut self.writer, value)?;
        self.writer.write_all(b"\n")?;
        Ok(())
    }

    pub fn finish(mut self) -> anyhow::Result<()> {
        self.writer.flush()?;
        if let Some((tmp, path)) = self.finish.take() {
            std::fs::rename(&tmp, &path)?;
        }
        Ok(())
    }
}
