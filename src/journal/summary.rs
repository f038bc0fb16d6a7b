//! [`Summary`]: `summary.json`, the end-of-run account — every prompt succeeded, failed with a
//! class, or skipped; what the attempts cost; how fast they went.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::atomic::atomic_write;
use super::index::{Disposition, ResumeState};
use super::{ErrorClass, JournalError};

/// Counts by status.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusCounts {
    pub success: u64,
    pub failed: u64,
    pub skipped: u64,
}

/// The account of a run. `succeeded + failed + skipped == total` (prompts with at least one record).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Prompts with at least one record.
    pub total: u64,
    pub succeeded: u64,
    /// Prompts whose latest record failed (permanently or transiently, retries exhausted).
    pub failed: u64,
    pub skipped: u64,
    /// Of `failed`: prompts whose latest failure is transient, so a resume would retry them.
    pub retryable: u64,
    /// Failed prompts by the class of their latest failure.
    pub failed_by_error_class: BTreeMap<ErrorClass, u64>,
    /// Every record (attempt), by status and by error class.
    pub attempts: u64,
    pub attempts_by_status: StatusCounts,
    pub attempts_by_error_class: BTreeMap<ErrorClass, u64>,
    /// From `response.usage` of every record.
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Sum of `cost_usd` over every record (failed attempts can cost too).
    pub cost_usd: f64,
    /// Wall time of this session.
    pub wall_time_s: f64,
    /// Records appended in this session.
    pub session_requests: u64,
    /// `session_requests / wall_time_s`.
    pub requests_per_s: f64,
    /// Journal health found on open.
    pub corrupt_lines: u64,
    pub duplicate_successes: u64,
    /// RFC 3339 time the summary was written.
    pub written_at: String,
    /// Lines of this session's prompts file that are not prompts: skipped, each with its reason
    /// (they have no id, so no record).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_lines: Vec<SkippedLine>,
}

/// A line of the prompts file that could not be read as a prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedLine {
    pub file: String,
    pub line: u64,
    pub reason: String,
}

impl std::fmt::Display for SkippedLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: not a prompt record, skipped: {}",
            self.file, self.line, self.reason
        )
    }
}

impl Summary {
    /// The summary of `state` after a session of `wall_time`.
    pub fn from_state(state: &ResumeState, wall_time: Duration) -> Summary {
        let mut summary = Summary {
            total: state.prompt_count() as u64,
            succeeded: 0,
            failed: 0,
            skipped: 0,
            retryable: 0,
            failed_by_error_class: BTreeMap::new(),
            attempts: state.totals.records,
            attempts_by_status: StatusCounts {
                success: state.totals.success,
                failed: state.totals.failed,
                skipped: state.totals.skipped,
            },
            attempts_by_error_class: state.totals.by_error_class.clone(),
            prompt_tokens: state.totals.prompt_tokens,
            completion_tokens: state.totals.completion_tokens,
            cost_usd: state.totals.cost_usd,
            wall_time_s: wall_time.as_secs_f64(),
            session_requests: state.session_records(),
            requests_per_s: 0.0,
            corrupt_lines: state.report.corrupt_lines.len() as u64,
            duplicate_successes: state.report.duplicate_successes.len() as u64,
            written_at: chrono::Utc::now().to_rfc3339(),
            skipped_lines: Vec::new(),
        };
        if summary.wall_time_s > 0.0 {
            summary.requests_per_s = summary.session_requests as f64 / summary.wall_time_s;
        }
        for (_, prompt) in state.prompts() {
            match prompt.disposition() {
                Disposition::Succeeded => summary.succeeded += 1,
                Disposition::Skipped => summary.skipped += 1,
                Disposition::FailedPermanently(class) => {
                    summary.failed += 1;
                    if let Some(class) = class {
                        *summary.failed_by_error_class.entry(class).or_default() += 1;
                    }
                }
                Disposition::Retry(class) => {
                    summary.failed += 1;
                    summary.retryable += 1;
                    *summary.failed_by_error_class.entry(class).or_default() += 1;
                }
            }
        }
        summary
    }

    /// Write as pretty JSON, atomically.
    pub fn write_to(&self, path: &Path) -> Result<(), JournalError> {
        let mut bytes =
            serde_json::to_vec_pretty(self).map_err(|source| JournalError::Serialize {
                path: path.to_path_buf(),
                id: "summary".to_string(),
                source,
            })?;
        bytes.push(b'\n');
        atomic_write(path, &bytes)
    }
}
