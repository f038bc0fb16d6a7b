//! The run directory: manifest, append-only crash-safe journal of [`Record`]s, resume index, summary.
//!
//! ```text
//! run/
//!   manifest.json   settings + fingerprint; a resume with other settings is refused unless --force
//!   journal/        000001.jsonl, 000002.jsonl, …: one Record per line, append-only
//!   summary.json    counts by status and error class, tokens, cost, timings
//!   lock            flock'ed by the one process appending (its PID inside)
//! ```
//!
//! The journal is the run's only source of truth: a prompt is finished when its record's line,
//! newline included, is in a segment. [`RunDir::create_or_open`] returns a [`Journal`] to append to
//! and the [`ResumeState`] built from what is already there; the engine appends through one writer
//! ([`Journal::append`] directly, or [`JournalWriter`] from async code) and keeps the state current
//! with [`ResumeState::record`] for budget and progress.

mod atomic;
mod channel;
mod completeness;
mod error;
mod index;
mod lock;
mod manifest;
#[cfg(test)]
pub(crate) use manifest::sample as sample_manifest;
mod prompt_map;
mod reader;
pub mod record;
mod resume;
mod run_dir;
mod scan;
mod segment;
pub mod streams;
mod summary;
mod writer;

pub use atomic::atomic_write;
pub use channel::{JournalWriter, RecordSender};
pub use completeness::Completeness;
pub use error::JournalError;
pub use lock::{RunLock, LOCK_FILE};
pub use manifest::{Manifest, PromptsFile, ServerRecord};
pub use prompt_map::{Disposition, PromptState};
pub use reader::RecordReader;
pub use record::{EncodedRecord, Record, RecordMeta, RecordRef, Status};
pub use resume::{
    CorruptLine, DuplicateSuccess, LineLocation, OpenReport, RecordTotals, ResumeState, TornTail,
};
pub use run_dir::{RunDir, MANIFEST_FILE, SUMMARY_FILE};
pub use segment::{segment_file_name, JOURNAL_DIR};
pub use summary::{
    merge_provider_figures, AllSessions, ProviderFigures, SessionFigures, SkippedLine,
    StatusCounts, Summary,
};
pub use writer::{Journal, JournalOptions, JournalStats, REDACTED};
