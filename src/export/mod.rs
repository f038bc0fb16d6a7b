//! Export: a `build` directory → files the trainers load as they are, and the draft vocabulary.
//!
//! One file per trainer format (`specforge`, `speculators`) and for the vocabulary map (`vocab`),
//! plus the writers those formats need and no crate provides without Python or libtorch
//! (`npy`, `torch_pickle`, `hf_arrow`), and the trainer's next step (`next_step`). Every export reads the build output through
//! [`BuildDir`](crate::build::BuildDir), which streams shards batch by batch, so memory is bounded
//! by a row group, not by the run.
//! The exact format each file follows (and the source lines it was read from) is in each
//! file's header; docs/FORMATS.md has the summary.

pub mod cpython_set;
pub mod hf_arrow;
pub mod next_step;
pub mod npy;
pub mod specforge;
pub mod speculators;
pub mod torch_pickle;
pub mod vocab;

use std::path::PathBuf;

use crate::build::FileError;

/// Why an export stopped.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// A file that could not be read or written (the build's or one the export writes).
    #[error(transparent)]
    File(#[from] FileError),
    #[error("{0}")]
    Invalid(String),
}

impl ExportError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        ExportError::File(FileError::io(path, source))
    }
    pub(crate) fn format(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        ExportError::File(FileError::format(path, message))
    }
}
