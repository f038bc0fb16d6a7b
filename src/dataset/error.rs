//! Errors of the dataset stage: [`DatasetError`] stops a run; a [`Malformed`] record is reported
//! with its location, counted and skipped (unless `--strict`).

use std::fmt;
use std::path::PathBuf;

/// Where a record sits in its file: what a user needs to find it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The path as the user gave it.
    pub path: String,
    pub position: Position,
}

/// The position of a record inside its file, in the file's own terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Position {
    /// The whole file (empty file, unreadable header).
    File,
    /// 1-based line of a JSONL file.
    Line(u64),
    /// 0-based element of a JSON array.
    Element(u64),
    /// 0-based row of a Parquet file.
    Row(u64),
}

impl Location {
    pub fn new(path: impl Into<String>, position: Position) -> Self {
        Self {
            path: path.into(),
            position,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.position {
            Position::File => write!(f, "{}", self.path),
            Position::Line(line) => write!(f, "{}:{line}", self.path),
            Position::Element(index) => write!(f, "{}: element {index}", self.path),
            Position::Row(row) => write!(f, "{}: row {row}", self.path),
        }
    }
}

/// One record that could not be read or understood, with the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    pub location: Location,
    pub message: String,
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.message)
    }
}

/// An error that stops reading datasets or writing prompts.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error("{path}: cannot read: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: cannot write prompts: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a readable Parquet file: {message}")]
    Parquet { path: PathBuf, message: String },
    /// `--strict`: the first malformed record fails the run.
    #[error(
        "{0} (--strict stops at the first malformed record; fix it or drop --strict to skip it)"
    )]
    Strict(Malformed),
    /// A bad line in a `prompts.jsonl` file written by `prepare`.
    #[error("{path}:{line}: not a prompt record: {message} (regenerate the file with `draftgen prepare`)")]
    PromptsFile {
        path: PathBuf,
        line: u64,
        message: String,
    },
    /// Options that cannot work together (bad shard, unknown format, ...).
    #[error("{0}")]
    Options(String),
}

impl DatasetError {
    /// Whether the error is the user's input or flags (exit code 2) rather than a failure.
    pub fn is_input_error(&self) -> bool {
        matches!(
            self,
            Self::Strict(_) | Self::PromptsFile { .. } | Self::Options(_)
        )
    }
}
