//! [`JournalError`]: everything that can go wrong with a run directory, each naming the file involved.

use std::io;
use std::path::PathBuf;

/// A run-directory failure. Every variant names the path it is about and, where the user can act, what to do.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "{path}: not a valid manifest ({source}); delete the run directory or pick another one"
    )]
    BadManifest {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error(
        "{path}: the run was started with different settings:\n{}\nresume with the original settings, use another run directory, or pass --force to continue with the new ones",
        changes.iter().map(|c| format!("  - {c}")).collect::<Vec<_>>().join("\n")
    )]
    SettingsChanged { path: PathBuf, changes: Vec<String> },
    #[error("{path} is missing but the journal beside it has records, so the settings cannot be checked; pass --force to adopt the current settings")]
    MissingManifest { path: PathBuf },
    #[error("{path}: could not serialize a record for prompt {id}: {source}")]
    Serialize {
        path: PathBuf,
        id: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("{path}: another process is writing this run ({}); wait for it to finish or stop it, or use another run directory", pid.map_or_else(|| "PID unknown".to_string(), |p| format!("PID {p}")))]
    Locked { path: PathBuf, pid: Option<u32> },
    #[error("the journal writer has stopped (an earlier write failed); see the error it returned on close")]
    WriterGone,
}

impl JournalError {
    /// Attach a path to an I/O error.
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> JournalError {
        let path = path.into();
        move |source| JournalError::Io { path, source }
    }
}
