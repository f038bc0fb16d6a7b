//! [`Summary`]: `summary.json`, the end-of-run account — every prompt succeeded, failed with a
//! class, or skipped; what the attempts cost; how fast they went.
//!
//! Counts over prompts and attempts are for the whole run (all sessions). Speed is given per
//! session (`sessions`, oldest first, the last one is this session; `wall_time_s`,
//! `session_requests` and `requests_per_s` repeat this session's) and for all sessions together
//! (`all_sessions`), each labelled: a resume must not make the run look as if it took one session.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::atomic::atomic_write;
use super::prompt_map::Disposition;
use super::resume::{RecordTotals, ResumeState};
use super::JournalError;
use crate::api::ErrorClass;

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
    /// Of `retryable`: prompts whose latest failure came from a provider the run is pinned to
    /// (`provider.only` without fallbacks) that has never answered in this run — a resume sends
    /// them back to it, so they are not counted as retryable in what is said to the user.
    #[serde(default)]
    pub retry_blocked: u64,
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
    /// Of `cost_usd`: what was priced from the price table or the model's published price because
    /// the answer reported no `usage.cost` (sessions that kept this figure).
    #[serde(default)]
    pub estimated_cost_usd: f64,
    /// Attempts, failures and cost per endpoint and provider (sessions that kept these figures;
    /// `by_provider_complete` says whether they cover every attempt of the run).
    #[serde(default)]
    pub by_provider: Vec<ProviderFigures>,
    #[serde(default)]
    pub by_provider_complete: bool,
    /// Distinct prompts in the last session's input (absent for runs of conversations by turn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_prompts: Option<u64>,
    /// Wall time of this session.
    pub wall_time_s: f64,
    /// Records appended in this session.
    pub session_requests: u64,
    /// `session_requests / wall_time_s` (this session).
    pub requests_per_s: f64,
    /// Every session of the run, oldest first; the last is this one.
    #[serde(default)]
    pub sessions: Vec<SessionFigures>,
    /// All sessions together.
    #[serde(default)]
    pub all_sessions: AllSessions,
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

/// One endpoint and provider's attempts, failures and cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProviderFigures {
    pub endpoint: String,
    /// The provider that answered (OpenRouter's `provider`); `None` when the answer named none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    pub attempts: u64,
    pub succeeded_attempts: u64,
    pub failed_attempts: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failed_by_error_class: BTreeMap<ErrorClass, u64>,
    pub cost_usd: f64,
    /// Of `cost_usd`: priced by draftgen (no `usage.cost` in the answer).
    pub estimated_cost_usd: f64,
    /// Successful answers with no `usage.cost` and no price to price them by: not in `cost_usd`.
    #[serde(default)]
    pub unpriced_answers: u64,
}

impl ProviderFigures {
    /// `who` in words: `provider P (endpoint E)` or `endpoint E`.
    pub fn who(&self) -> String {
        match &self.provider {
            Some(p) => format!("provider {p} ({})", self.endpoint),
            None => format!("endpoint {}", self.endpoint),
        }
    }

    fn add(&mut self, other: &ProviderFigures) {
        self.attempts += other.attempts;
        self.succeeded_attempts += other.succeeded_attempts;
        self.failed_attempts += other.failed_attempts;
        for (class, n) in &other.failed_by_error_class {
            *self.failed_by_error_class.entry(*class).or_default() += n;
        }
        self.cost_usd += other.cost_usd;
        self.estimated_cost_usd += other.estimated_cost_usd;
        self.unpriced_answers += other.unpriced_answers;
    }
}

/// `a` and `b` summed per endpoint and provider, in (endpoint, provider) order.
pub fn merge_provider_figures(
    a: &[ProviderFigures],
    b: &[ProviderFigures],
) -> Vec<ProviderFigures> {
    let mut merged: BTreeMap<(String, Option<String>), ProviderFigures> = BTreeMap::new();
    for f in a.iter().chain(b) {
        merged
            .entry((f.endpoint.clone(), f.provider.clone()))
            .or_insert_with(|| ProviderFigures {
                endpoint: f.endpoint.clone(),
                provider: f.provider.clone(),
                ..ProviderFigures::default()
            })
            .add(f);
    }
    merged.into_values().collect()
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

/// What one `generate` session did. Counts are attempts (records) appended in that session.
/// Sessions recorded by a draftgen that kept no per-session counts have only time and rate.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionFigures {
    /// RFC 3339 time the session ended (its summary was written).
    pub ended_at: String,
    pub wall_time_s: f64,
    /// Records (attempts) appended.
    pub requests: u64,
    /// `requests / wall_time_s`.
    pub requests_per_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub succeeded_attempts: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_attempts: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped_attempts: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// The sessions of a run together.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AllSessions {
    pub sessions: u64,
    /// Sum of the sessions' wall times (time between sessions not counted).
    pub wall_time_s: f64,
    pub requests: u64,
    /// `requests / wall_time_s`.
    pub requests_per_s: f64,
}

fn rate(count: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        count as f64 / seconds
    } else {
        0.0
    }
}

impl Summary {
    /// This summary continuing the run `previous` summed up (the `summary.json` found on disk, if
    /// any): its sessions come first, then this one. A summary from before sessions were kept
    /// contributes one session with its time and rate.
    pub fn after(mut self, previous: Option<Summary>) -> Summary {
        let this = self.sessions.pop();
        if let Some(p) = &previous {
            self.estimated_cost_usd += p.estimated_cost_usd;
            self.by_provider = merge_provider_figures(&p.by_provider, &self.by_provider);
        }
        self.by_provider_complete =
            self.by_provider.iter().map(|f| f.attempts).sum::<u64>() == self.attempts;
        let mut sessions = match previous {
            Some(p) if p.sessions.is_empty() => {
                vec![SessionFigures {
                    ended_at: p.written_at.clone(),
                    wall_time_s: p.wall_time_s,
                    requests: p.session_requests,
                    requests_per_s: p.requests_per_s,
                    ..SessionFigures::default()
                }]
            }
            Some(p) => p.sessions,
            None => Vec::new(),
        };
        sessions.extend(this);
        self.all_sessions = AllSessions::of(&sessions);
        self.sessions = sessions;
        self
    }

    /// The summary of `state` after a session of `wall_time`.
    pub fn from_state(state: &ResumeState, wall_time: Duration) -> Summary {
        let mut summary = Summary {
            total: state.prompt_count() as u64,
            succeeded: 0,
            failed: 0,
            skipped: 0,
            retryable: 0,
            retry_blocked: 0,
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
            estimated_cost_usd: 0.0,
            by_provider: Vec::new(),
            by_provider_complete: false,
            input_prompts: None,
            wall_time_s: wall_time.as_secs_f64(),
            session_requests: state.session_records(),
            requests_per_s: 0.0,
            sessions: Vec::new(),
            all_sessions: AllSessions::default(),
            corrupt_lines: state.report.corrupt_lines.len() as u64,
            duplicate_successes: state.report.duplicate_successes.len() as u64,
            written_at: chrono::Utc::now().to_rfc3339(),
            skipped_lines: Vec::new(),
        };
        summary.requests_per_s = rate(summary.session_requests, summary.wall_time_s);
        summary.sessions = vec![SessionFigures::of(
            &state.totals,
            &state.loaded_totals,
            summary.wall_time_s,
            &summary.written_at,
        )];
        summary.all_sessions = AllSessions::of(&summary.sessions);
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

impl SessionFigures {
    /// The session that took the totals from `before` to `after` in `wall_time_s`.
    fn of(after: &RecordTotals, before: &RecordTotals, wall_time_s: f64, ended_at: &str) -> Self {
        let requests = after.records.saturating_sub(before.records);
        SessionFigures {
            ended_at: ended_at.to_string(),
            wall_time_s,
            requests,
            requests_per_s: rate(requests, wall_time_s),
            succeeded_attempts: Some(after.success.saturating_sub(before.success)),
            failed_attempts: Some(after.failed.saturating_sub(before.failed)),
            skipped_attempts: Some(after.skipped.saturating_sub(before.skipped)),
            completion_tokens: Some(
                after
                    .completion_tokens
                    .saturating_sub(before.completion_tokens),
            ),
            cost_usd: Some((after.cost_usd - before.cost_usd).max(0.0)),
        }
    }
}

impl AllSessions {
    fn of(sessions: &[SessionFigures]) -> Self {
        let wall_time_s: f64 = sessions.iter().map(|s| s.wall_time_s).sum();
        let requests = sessions.iter().map(|s| s.requests).sum();
        AllSessions {
            sessions: sessions.len() as u64,
            wall_time_s,
            requests,
            requests_per_s: rate(requests, wall_time_s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(requests: u64, wall_time_s: f64) -> Summary {
        let mut state = ResumeState::default();
        state.totals.records = requests;
        state.totals.success = requests;
        Summary::from_state(&state, Duration::from_secs_f64(wall_time_s))
    }

    #[test]
    fn a_resumed_run_keeps_every_session_and_labelled_totals() {
        let first = session(10, 5.0).after(None);
        assert_eq!(first.sessions.len(), 1);
        assert_eq!(first.all_sessions.requests_per_s, 2.0);
        let second = session(30, 2.0).after(Some(first.clone()));
        assert_eq!(second.sessions.len(), 2);
        assert_eq!(second.sessions[0], first.sessions[0]);
        assert_eq!(second.sessions[1].requests, 30);
        assert_eq!(second.sessions[1].requests_per_s, 15.0);
        assert_eq!(second.requests_per_s, 15.0);
        assert_eq!(second.all_sessions.sessions, 2);
        assert_eq!(second.all_sessions.wall_time_s, 7.0);
        assert_eq!(second.all_sessions.requests, 40);
        // Survives a round trip through summary.json.
        let text = serde_json::to_string(&second).unwrap();
        let back: Summary = serde_json::from_str(&text).unwrap();
        assert_eq!(back, second);
    }

    #[test]
    fn a_summary_from_before_sessions_counts_as_one_session() {
        let mut old = serde_json::to_value(session(8, 4.0)).unwrap();
        let map = old.as_object_mut().unwrap();
        map.remove("sessions");
        map.remove("all_sessions");
        let old: Summary = serde_json::from_value(old).unwrap();
        assert!(old.sessions.is_empty());
        let next = session(2, 1.0).after(Some(old));
        assert_eq!(next.sessions.len(), 2);
        assert_eq!(next.sessions[0].requests, 8);
        assert_eq!(next.sessions[0].succeeded_attempts, None);
        assert_eq!(next.all_sessions.requests, 10);
    }
}
