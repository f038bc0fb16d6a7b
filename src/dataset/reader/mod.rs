//! Readers: turn a dataset file into a stream of raw JSON records, each with its [`Location`].
//!
//! Records are pushed into a sink (`FnMut(RawRecord) -> ControlFlow<()>`), so JSONL and JSON
//! arrays stream without holding the file in memory, and a caller that has enough (`--limit`)
//! stops the read early. A record that cannot be read becomes a [`Malformed`] and reading goes on.

mod json;
mod jsonl;
mod parquet;

use std::fs::File;
use std::io::{BufReader, Read};
use std::ops::ControlFlow;
use std::path::Path;

use serde_json::Value;

use super::error::{DatasetError, Location, Malformed, Position};

/// Default largest JSONL line read (64 MiB); longer lines are reported and skipped unread.
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 << 20;

/// One record as read from a file, or why it could not be.
#[derive(Debug)]
pub struct RawRecord {
    pub location: Location,
    pub value: Result<Value, Malformed>,
}

impl RawRecord {
    fn ok(location: Location, value: Value) -> Self {
        Self {
            location,
            value: Ok(value),
        }
    }

    fn bad(location: Location, message: impl Into<String>) -> Self {
        Self {
            value: Err(Malformed {
                location: location.clone(),
                message: message.into(),
            }),
            location,
        }
    }
}

/// The file container formats we read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Container {
    /// One JSON value per line.
    JsonLines,
    /// A JSON array of records, an object wrapping one, or a single object.
    Json,
    Parquet,
}

/// Guess the container from the extension, then from the first bytes.
pub fn detect_container(path: &Path) -> Result<Container, DatasetError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("jsonl" | "ndjson") => return Ok(Container::JsonLines),
        Some("parquet" | "pq") => return Ok(Container::Parquet),
        _ => {}
    }
    let read_err = |source| DatasetError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut head = [0u8; 4096];
    let mut file = File::open(path).map_err(read_err)?;
    let n = file.read(&mut head).map_err(read_err)?;
    let head = &head[..n];
    if head.starts_with(b"PAR1") {
        return Ok(Container::Parquet);
    }
    // A `.json` file is often JSON Lines in disguise (Hugging Face `to_json` writes them).
    match head.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'[') => Ok(Container::Json),
        Some(b'{') if ext.as_deref() == Some("json") => Ok(json::object_or_lines(path)?),
        _ => Ok(Container::JsonLines),
    }
}

/// Read every record of `path` into `sink`, which may stop the read by returning `Break`.
pub fn read_records(
    path: &Path,
    container: Container,
    max_line_bytes: usize,
    sink: &mut dyn FnMut(RawRecord) -> ControlFlow<()>,
) -> Result<(), DatasetError> {
    let shown = path.display().to_string();
    let read_err = |source| DatasetError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(read_err)?;
    if file.metadata().map_err(read_err)?.len() == 0 {
        let _ = sink(RawRecord::bad(
            Location::new(&shown, Position::File),
            "empty file, no records",
        ));
        return Ok(());
    }
    match container {
        Container::JsonLines => {
            jsonl::read(BufReader::new(file), &shown, max_line_bytes, sink).map_err(read_err)
        }
        Container::Json => json::read(BufReader::new(file), &shown, sink).map_err(read_err),
        Container::Parquet => {
            parquet::read(file, &shown, sink).map_err(|e| DatasetError::Parquet {
                path: path.to_path_buf(),
                message: e.to_string(),
            })
        }
    }
}

pub(crate) use json::kind as json_kind;
