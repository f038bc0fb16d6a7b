//! [`Completeness`]: whether a run is finished — every prompt of its input answered (or skipped)
//! and no writer appending to it — so `build` and `verify` can say what they read is partial.
//!
//! The input's size is `summary.json`'s `input_prompts` (written at the end of each `generate`
//! session); what is answered comes from the journal itself, so a run a writer is still appending
//! to is counted as far as it has got. Whether a writer holds the run is asked of its lock.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::index::build_index;
use super::lock::RunLock;
use super::prompt_map::Disposition;
use super::run_dir::RunDir;
use super::JournalError;

/// How complete a run is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Completeness {
    /// Distinct prompts of the run's input; `None` when no summary says (a first session still
    /// running, an imported run, conversations run by turn).
    pub prompts: Option<u64>,
    /// Prompts whose latest record is a success or a skip.
    pub answered: u64,
    /// Prompts whose latest record is a failure.
    pub failed: u64,
    /// Prompts of the input without an answer: failed or never attempted (`None`: unknown).
    pub no_answer: Option<u64>,
    /// Another process holds the run's lock: it is being written to now.
    pub locked_by_writer: bool,
    /// The writer's PID, as its lock file says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer_pid: Option<u32>,
    /// Every prompt answered and no writer: what was read is the whole run.
    pub complete: bool,
}

impl Completeness {
    /// The completeness of the run at `root` now; `None` when `root` holds no journal (or it
    /// cannot be read). Nothing is created in a directory that is not a run.
    pub fn of(root: &Path) -> Option<Completeness> {
        let run = RunDir::new(root);
        if !run.journal_dir().is_dir() {
            return None;
        }
        let writer = match RunLock::acquire(root) {
            Ok(lock) => {
                drop(lock);
                None
            }
            Err(JournalError::Locked { pid, .. }) => Some(pid),
            // A run directory that cannot be locked (read-only) has no writer either.
            Err(_) => None,
        };
        let state = build_index(&run.journal_dir(), false).ok()?;
        let (mut answered, mut failed) = (0u64, 0u64);
        for (_, prompt) in state.prompts() {
            match prompt.disposition() {
                Disposition::Succeeded | Disposition::Skipped => answered += 1,
                _ => failed += 1,
            }
        }
        let prompts = run.read_summary().and_then(|s| s.input_prompts);
        let no_answer = prompts.map(|n| n.saturating_sub(answered));
        Some(Completeness {
            prompts,
            answered,
            failed,
            no_answer,
            locked_by_writer: writer.is_some(),
            writer_pid: writer.flatten(),
            complete: writer.is_none() && no_answer == Some(0),
        })
    }

    /// What is missing, in words (`None` when complete).
    pub fn shortfall(&self) -> Option<String> {
        if self.complete {
            return None;
        }
        let mut parts = Vec::new();
        match (self.prompts, self.no_answer) {
            (Some(total), Some(missing)) if missing > 0 => parts.push(format!(
                "{missing} of {total} prompt(s) have no answer yet ({} failed, {} not attempted)",
                self.failed.min(missing),
                missing.saturating_sub(self.failed)
            )),
            (None, _) => parts.push(format!(
                "the run's input size is unknown (no summary.json with it): {} prompt(s) answered, {} failed",
                self.answered, self.failed
            )),
            _ => {}
        }
        if self.locked_by_writer {
            parts.push(match self.writer_pid {
                Some(pid) => format!("a writer (PID {pid}) is still appending to the run"),
                None => "a writer is still appending to the run".to_string(),
            });
        }
        Some(format!("incomplete run: {}", parts.join("; ")))
    }
}
